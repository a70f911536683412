//! Locates a GPU broadphase pass that does not finish on an adapter.
//!
//! On the lent NVIDIA H200 (27 Nov 2026) every test of `tests/gpu_broadphase.rs` that
//! dispatches the grid kernels ran for over 60 s without returning, while the same tests
//! take 0.1–9 s on lavapipe. This probe runs the broadphase on the tests' box sets, first as
//! one submission, then each pass submitted and waited for on its own, under a short wait
//! timeout, so that a pass that never ends is named by the timeout's error instead of
//! hanging the process. Its verdict on the second lent H200 (evening of 27 Nov): every pass
//! ends in 0.005–2 ms, and the test binary passes in 2.9 s one test at a time. The tests
//! hung only with nine GPU contexts at once in one process (libtest at 16 threads; 4 were
//! fine), so the tests now take a process-wide GPU turn (`tests/common::gpu`).
//!
//! `MX2D_GPU_TIMEOUT_S=10 cargo run --release --example gpu_broadphase_probe [CASE]`
//!
//! CASE picks one box set (`list` names them; default: all, in order), the same sets as
//! the tests' (`tests/common`), so that each can run in a process of its own. Each line
//! says what ran and how it ended; the exit status is 1 if any run failed.

#[path = "../tests/common/mod.rs"]
mod common;

use common::{Layout, Radii, discs, scene_suite};
use glam::Vec2;
use mx2d::broadphase::{Aabb, GridBroadphase};
use mx2d::gpu::timing::PassProfiler;
use mx2d::gpu::{GpuContext, GpuGridBroadphase, GpuOptions};
use std::time::{Duration, Instant};

/// `n` discs of radius `r` on a square lattice of pitch `pitch` (overlapping
/// neighbours when pitch < 2r), offset by `origin`.
fn lattice(n: usize, r: f32, pitch: f32, origin: Vec2) -> Vec<Aabb> {
    let side = (n as f32).sqrt().ceil() as usize;
    (0..n).map(|i| Aabb::from_disc(origin + pitch * Vec2::new((i % side) as f32, (i / side) as f32), r)).collect()
}

fn main() {
    let mut sets = vec![
        ("1 box".to_string(), lattice(1, 0.5, 2.0, Vec2::ZERO)),
        ("2 boxes apart".to_string(), lattice(2, 0.5, 2.0, Vec2::ZERO)),
        ("100 boxes, lattice".to_string(), lattice(100, 0.5, 0.9, Vec2::new(-3.0, 2.0))),
        ("5000 boxes, lattice".to_string(), lattice(5000, 0.4, 0.7, Vec2::new(10.0, -40.0))),
        (
            "2000 boxes in one cell (pair buffer overflow)".to_string(),
            discs(2000, Layout::OneCell { origin: Vec2::new(-3.0, 9.0), extent: 0.5 }, Radii::Uniform(1.0), 5),
        ),
    ];
    let spread =
        discs(5000, Layout::Spread { origin: Vec2::new(-20.0, 4.0), density: 0.8 }, Radii::Varying(0.1, 0.8), 41);
    for scale in [1024.0f32, 1.0 / 1024.0] {
        let scaled = spread.iter().map(|b| Aabb::new(b.min * scale, b.max * scale)).collect();
        sets.push((format!("5000 spread × {scale}"), scaled));
    }
    sets.extend(scene_suite(&[100, 10_000, 100_000]));
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("list") {
        sets.iter().for_each(|(name, boxes)| println!("{name}\t{}", boxes.len()));
        return;
    }
    if let Some(pick) = args.first() {
        sets.retain(|(name, _)| name == pick);
        if sets.is_empty() {
            eprintln!("no case named {pick:?} (`list` names them)");
            std::process::exit(2);
        }
    }
    let options = GpuOptions { wait_timeout: None, ..Default::default() };
    let ctx = match GpuContext::with_options(options) {
        Ok(ctx) => ctx,
        Err(e) => {
            eprintln!("no GPU: {e}");
            std::process::exit(2);
        }
    };
    println!("adapter: {}; wait timeout {:?}", ctx.summary(), ctx.wait_timeout().unwrap_or(Duration::MAX));
    let mut failed = false;
    for (name, boxes) in &sets {
        let mut expected = Vec::new();
        GridBroadphase::new().find_pairs(boxes, &mut expected);
        for per_pass in [false, true] {
            let mut grid = match GpuGridBroadphase::new(&ctx) {
                Ok(grid) => grid,
                Err(e) => {
                    println!("{name}: kernels failed to build: {e}");
                    std::process::exit(1);
                }
            };
            let started = Instant::now();
            let how = if per_pass { "pass by pass" } else { "one submission" };
            let mut read_ms = 0.0;
            let outcome = (|| {
                grid.upload(&ctx, boxes)?;
                let (report, passes) = if per_pass {
                    grid.set_profiler(PassProfiler::wall_clock());
                    grid.run_profiled(&ctx)?
                } else {
                    grid.run_profiled(&ctx)?
                };
                // The readback and host sort apart: a slow host side shows here.
                let read = Instant::now();
                let mut pairs = Vec::new();
                grid.read_pairs(&ctx, report.pairs, &mut pairs)?;
                read_ms = read.elapsed().as_secs_f64() * 1e3;
                Ok::<_, mx2d::gpu::GpuError>((report, passes, pairs))
            })();
            let ms = started.elapsed().as_secs_f64() * 1e3;
            match outcome {
                Ok((report, passes, pairs)) => {
                    let agree = if pairs == expected { "agree" } else { "DIFFER" };
                    failed |= pairs != expected;
                    let stages: Vec<String> = passes.passes.iter().map(|p| format!("{} {:.3}", p.name, p.ms)).collect();
                    println!(
                        "{name}, {how}: {} pairs ({} on the CPU: {agree}), {} reruns, {ms:.1} ms ({read_ms:.1} of it \
                         reading back and sorting); {}",
                        pairs.len(),
                        expected.len(),
                        report.reruns,
                        stages.join(", ")
                    );
                }
                Err(e) => {
                    println!("{name}, {how}: FAILED after {ms:.1} ms: {e}");
                    // A timed-out device cannot be trusted for the next run.
                    std::process::exit(1);
                }
            }
        }
    }
    std::process::exit(i32::from(failed));
}
