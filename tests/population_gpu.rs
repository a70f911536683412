//! The population's GPU backend (`shaders/population.wgsl`) against its CPU
//! twin. Needs an adapter (lavapipe is enough); skips with the reason
//! printed unless `MX2D_REQUIRE_GPU=1`.
//!
//! Tolerance of the twin comparison: both sides run the same f32 formulas,
//! but the GPU's atomic scatter orders balls within a cell differently, so
//! the neighbour sums are added in another order (a few ulps per step), and
//! GPU compilers may fuse multiply-adds. 1e-4 relative, ball for ball.

mod common;

use std::sync::Arc;

use mx2d::gpu::GpuOptions;
use mx2d::population::gpu::GpuPopulation;
use mx2d::population::{Population, PopulationError, cpu};
use mx2d::scene::Scene;

fn balls_box(count: u64) -> Population {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/balls_box.ron")).unwrap();
    let scene = Scene::parse_with_overrides(&text, "balls_box.ron", &[format!("population.count={count}")]).unwrap();
    scene.build_world().unwrap().population.unwrap()
}

#[test]
fn one_step_on_the_gpu_matches_the_cpu_twin_ball_for_ball() {
    let Some(ctx) = common::gpu(GpuOptions::default()) else { return };
    let ctx = Arc::new(ctx);
    // A pile in motion: 1.5 s of fall, contacts with walls, floor and balls.
    let mut start = balls_box(1000);
    for _ in 0..90 {
        cpu::step(&mut start, 1.0 / 60.0).unwrap();
    }
    let touching = start.stats().max_overlap_ratio;
    let mut on_cpu = start.clone();
    cpu::step(&mut on_cpu, 1.0 / 60.0).unwrap();
    let mut on_gpu = start.clone();
    let mut gpu = GpuPopulation::new(ctx, &on_gpu).unwrap();
    gpu.step(&mut on_gpu, 1.0 / 60.0).unwrap();
    gpu.read_back(&mut on_gpu).unwrap();
    assert!(touching > -0.01, "the state has no contacts: the test would prove little");
    let (mut worst_x, mut worst_v) = (0.0f32, 0.0f32);
    for i in 0..on_cpu.len() {
        assert_eq!(on_gpu.state[i], on_cpu.state[i], "ball {i} state");
        let (xc, xg) = (on_cpu.position[i], on_gpu.position[i]);
        let (vc, vg) = (on_cpu.velocity[i], on_gpu.velocity[i]);
        // Relative to the value, with the radius and √(g r) as the scales
        // of positions and velocities near zero.
        let ex = (xg - xc).length() / xc.length().max(0.5);
        let ev = (vg - vc).length() / vc.length().max((9.81f32 * 0.5).sqrt());
        worst_x = worst_x.max(ex);
        worst_v = worst_v.max(ev);
        assert!(ex < 1e-4, "ball {i}: position {xg} on the GPU, {xc} on the CPU");
        assert!(ev < 1e-4, "ball {i}: velocity {vg} on the GPU, {vc} on the CPU");
        let ew = (on_gpu.omega[i] - on_cpu.omega[i]).abs() / on_cpu.omega[i].abs().max(1.0);
        assert!(ew < 1e-4, "ball {i}: spin {} on the GPU, {} on the CPU", on_gpu.omega[i], on_cpu.omega[i]);
    }
    eprintln!("largest relative differences: position {worst_x:e}, velocity {worst_v:e}");
}

/// The bounce test of `population_cpu.rs` on the GPU: e from apex heights
/// within 1 % (same reasoning; the GPU runs the same formulas).
#[test]
fn dropped_ball_bounces_with_restitution_e_on_the_gpu() {
    let Some(ctx) = common::gpu(GpuOptions::default()) else { return };
    let ctx = Arc::new(ctx);
    let e = 0.5;
    let text = format!(
        "Scene(name: \"drop\", gravity: (0.0, -9.81), dt: 0.016666666666666666,
           surfaces: [Surface(geometry: Line(point: (0.0, 0.0), normal: (0.0, 1.0)), restitution: {e})],
           population: Population(radius: 0.1, restitution: {e}, friction: 0.0,
             spawn: [Grid(origin: (0.0, 2.1), count: 1, spacing: 1.0)],
             bounds: Rect(min: (-5.0, -1.0), max: (5.0, 10.0))))"
    );
    let mut pop = Scene::parse(&text, "drop").unwrap().build_world().unwrap().population.unwrap();
    let mut gpu = GpuPopulation::new(ctx, &pop).unwrap();
    let mut heights = vec![2.0f64];
    let mut previous_vy = 0.0f32;
    for _ in 0..400 {
        gpu.step(&mut pop, 1.0 / 60.0).unwrap();
        gpu.read_back(&mut pop).unwrap();
        let vy = pop.velocity[0].y;
        if previous_vy > 0.0 && vy <= 0.0 {
            heights.push(f64::from(pop.position[0].y) - 0.1 + f64::from(vy * vy) / (2.0 * 9.81));
            if heights.len() > 2 {
                break;
            }
        }
        previous_vy = vy;
    }
    assert!(heights.len() > 2, "too few bounces: {heights:?}");
    for k in 1..heights.len() {
        let measured = (heights[k] / heights[k - 1]).sqrt();
        assert!((measured - e).abs() < 0.01 * e, "bounce {k}: e = {measured} (apexes {heights:?})");
    }
}

/// An input over the adapter's limits is refused before anything is
/// allocated or dispatched, with the limit named.
#[test]
fn a_population_over_the_binding_limit_is_refused_with_the_limit_named() {
    let options = GpuOptions { max_binding_bytes: Some(1 << 16), ..Default::default() };
    let Some(ctx) = common::gpu(options) else { return };
    let pop = balls_box(2000);
    match GpuPopulation::new(Arc::new(ctx), &pop) {
        Err(e @ PopulationError::TooLarge { .. }) => {
            let text = e.to_string();
            assert!(text.contains("max_storage_buffer_binding_size"), "{text}");
            assert!(text.contains("bytes per ball"), "{text}");
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// No adapter (here: a backend that is not compiled in) → the CPU twin runs
/// and says why once; under `MX2D_REQUIRE_GPU=1` it is an error.
#[test]
fn without_an_adapter_the_cpu_twin_runs_with_one_message() {
    let scene = concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/balls_box.ron");
    let run = |require: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_mx2d"))
            .args(["run", scene, "--headless", "--backend", "gpu", "--steps", "2", "--set", "population.count=50"])
            .env("WGPU_BACKEND", "dx12")
            .env("MX2D_REQUIRE_GPU", require)
            .output()
            .unwrap()
    };
    let out = run("0");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stderr.matches("cannot run the population").count(), 1, "{stderr}");
    let out = run("1");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("MX2D_REQUIRE_GPU=1"));
}
