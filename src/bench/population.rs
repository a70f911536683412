//! `mx2d bench --scene balls_box`: the whole population step (every stage,
//! every substep) on the CPU twin and on the GPU, for each N.
//!
//! For each N the scene is built with `population.count = N`, stepped
//! `--repeats` times after one warm-up step on each backend from the same
//! state; the CPU time is the median step, the GPU time the wall time from
//! the first submission to the completion of the last step, per step (the
//! step has no readback: this is what a run pays). `agree` compares the two
//! backends' positions after those steps (1e-4 relative, the twin test's
//! tolerance). Bytes per ball are the constants the limits use.

use std::sync::Arc;
use std::time::Instant;

use anyhow::Context as _;

use crate::gpu::GpuContext;
use crate::population::gpu::{GPU_BYTES_PER_BALL, GpuPopulation};
use crate::population::{CPU_BYTES_PER_BALL, Population, cpu};
use crate::scene::Scene;

/// One population-step measurement.
#[derive(Clone, Debug, serde::Serialize)]
pub struct PopulationRow {
    /// Scene.
    pub scene: String,
    /// Balls.
    pub n: usize,
    /// Substeps per step.
    pub substeps: u32,
    /// CPU twin, median ms per step.
    pub cpu_ms: f64,
    /// Rayon threads.
    pub cpu_threads: usize,
    /// GPU ms per step (wall, submission to completion), if measured.
    pub gpu_ms: Option<f64>,
    /// Largest relative position difference GPU against CPU.
    pub max_rel_diff: Option<f64>,
    /// Whether the backends agree within 1e-4.
    pub agree: Option<bool>,
    /// Bytes per ball, CPU twin.
    pub cpu_bytes_per_ball: u64,
    /// Bytes per ball, GPU.
    pub gpu_bytes_per_ball: u64,
    /// A GPU failure in this row.
    pub gpu_error: Option<String>,
}

fn build(path: &str, n: usize) -> anyhow::Result<Population> {
    let scene = Scene::load(std::path::Path::new(path), &[format!("population.count={n}")])?;
    let world = scene.build_world()?;
    world.population.with_context(|| format!("{path} has no population section"))
}

/// Runs the population bench for `--scene NAME` (a name under `scenes/` or a path).
pub fn run(args: &super::BenchArgs, scene: &str) -> anyhow::Result<()> {
    let path = if scene.ends_with(".ron") { scene.to_string() } else { format!("scenes/{scene}.ron") };
    let repeats = args.repeats.max(1);
    let ctx = if args.no_gpu {
        None
    } else {
        match GpuContext::new() {
            Ok(ctx) => Some(Arc::new(ctx)),
            Err(e) => {
                eprintln!("GPU unavailable, benchmarking the CPU twin only: {e}");
                None
            }
        }
    };
    let adapter = ctx.as_ref().map_or_else(|| "none".to_string(), |c| c.summary());
    let threads = rayon::current_num_threads();
    let mut rows = Vec::new();
    println!("{:>10} {:>12} {:>12} {:>12} {:>8}", "N", "cpu ms/step", "gpu ms/step", "max rel diff", "agree");
    for &n in &args.sizes {
        let start = build(&path, n)?;
        let dt = 1.0 / 60.0;
        let mut on_cpu = start.clone();
        cpu::step(&mut on_cpu, dt)?;
        let mut samples = Vec::new();
        for _ in 0..repeats {
            let t = Instant::now();
            cpu::step(&mut on_cpu, dt)?;
            samples.push(t.elapsed().as_secs_f64() * 1e3);
        }
        samples.sort_by(f64::total_cmp);
        let cpu_ms = samples[samples.len() / 2];
        let mut row = PopulationRow {
            scene: scene.to_string(),
            n,
            substeps: start.params.substeps,
            cpu_ms,
            cpu_threads: threads,
            gpu_ms: None,
            max_rel_diff: None,
            agree: None,
            cpu_bytes_per_ball: CPU_BYTES_PER_BALL,
            gpu_bytes_per_ball: GPU_BYTES_PER_BALL,
            gpu_error: None,
        };
        if let Some(ctx) = &ctx {
            let measured = (|| -> anyhow::Result<(f64, f64)> {
                let mut on_gpu = start.clone();
                let mut gpu = GpuPopulation::new(ctx.clone(), &on_gpu)?;
                gpu.step(&mut on_gpu, dt)?;
                ctx.wait("population bench")?;
                let t = Instant::now();
                for _ in 0..repeats {
                    gpu.step(&mut on_gpu, dt)?;
                }
                ctx.wait("population bench")?;
                let ms = t.elapsed().as_secs_f64() * 1e3 / repeats as f64;
                gpu.read_back(&mut on_gpu)?;
                let diff = (0..n)
                    .map(|i| {
                        let (a, b) = (on_cpu.position[i], on_gpu.position[i]);
                        f64::from((a - b).length() / a.length().max(on_cpu.radius[i]))
                    })
                    .fold(0.0, f64::max);
                Ok((ms, diff))
            })();
            match measured {
                Ok((ms, diff)) => {
                    row.gpu_ms = Some(ms);
                    row.max_rel_diff = Some(diff);
                    row.agree = Some(diff <= 1e-4);
                }
                Err(e) => {
                    eprintln!("gpu: error at N = {n}: {e:#}");
                    row.gpu_error = Some(format!("{e:#}"));
                }
            }
        }
        println!(
            "{:>10} {:>12.3} {:>12} {:>12} {:>8}",
            n,
            row.cpu_ms,
            row.gpu_ms.map_or("-".into(), |v| format!("{v:.3}")),
            row.max_rel_diff.map_or("-".into(), |v| format!("{v:.1e}")),
            row.agree.map_or("-".into(), |a| a.to_string())
        );
        rows.push(row);
    }
    println!("scene {path}; cpu: {threads} rayon threads; adapter: {adapter}");
    println!("bytes per ball: cpu {CPU_BYTES_PER_BALL}, gpu {GPU_BYTES_PER_BALL} (+4 per grid cell)");
    if let Some(p) = &args.json {
        let doc = serde_json::json!({ "adapter": adapter, "cpu_threads": threads, "rows": rows });
        std::fs::write(p, serde_json::to_string_pretty(&doc)?).with_context(|| format!("writing {}", p.display()))?;
    }
    if rows.iter().any(|r| r.agree == Some(false)) {
        anyhow::bail!("the CPU and GPU population steps disagree (see the `agree` column)");
    }
    Ok(())
}
