//! `mx2d bench --scene balls_box`: the whole population step (every stage,
//! every substep) on the CPU twin and on the GPU, for each N.
//!
//! For each N the scene is built with `population.count = N` and both
//! backends step it 1 + `--repeats` times from the same state; `agree`
//! compares their positions after those steps (1e-4 relative, the twin
//! test's tolerance). The CPU time is the median of the `--repeats` steps
//! after the first. The GPU then steps on for at least 0.3 s (its clocks rise
//! under load) and is timed over `--repeats` more steps: the wall time from
//! the first submission to the completion of the last, per step (the step
//! has no readback: this is what a run pays). Bytes per ball are the constants the limits use.
//!
//! With `--passes`, `--repeats` more GPU steps run with each stage in a pass
//! of its own ([`GpuPopulation::step_profiled`]); each stage's mean time per
//! step is printed beside its cost per million balls and that cost over
//! DESIGN.md's bandwidth floor of a whole step (≈ 110 bytes per ball, about
//! 35 µs per million balls on an H100). Profiled steps have more pass
//! boundaries than the production step, so their sum is the upper figure.

use std::sync::Arc;
use std::time::Instant;

use anyhow::Context as _;

use crate::gpu::GpuContext;
use crate::gpu::timing::{PassProfiler, PassTime, add_by_name};
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
    /// With `--passes`: each stage's mean GPU time per step (ms).
    pub gpu_stages: Option<Vec<PassTime>>,
    /// How the stages were timed (`timestamps` or `wall`).
    pub stage_timing: Option<String>,
}

/// Least time the GPU steps before it is timed (see `run`).
const WARM_UP: std::time::Duration = std::time::Duration::from_millis(300);

/// The whole step's bandwidth floor on an H100, µs per million balls
/// (DESIGN.md, "Peers": about 110 bytes per ball moved once).
pub const FLOOR_US_PER_MILLION: f64 = 35.0;

/// Each stage's mean time per step, and how the stages were timed.
type StageMeans = (Vec<PassTime>, String);

/// Mean time per step of each stage over `steps` profiled steps, in the
/// order the stages first ran.
fn stage_means(
    ctx: &GpuContext,
    gpu: &mut GpuPopulation,
    pop: &mut Population,
    dt: f32,
    steps: usize,
) -> anyhow::Result<StageMeans> {
    let mut profiler = PassProfiler::new(ctx, "population stages");
    let mut sums: Vec<PassTime> = Vec::new();
    let mut source = None;
    for _ in 0..steps {
        let timings = gpu.step_profiled(pop, dt, &mut profiler)?;
        source = timings.source;
        add_by_name(&mut sums, timings.passes);
    }
    for p in &mut sums {
        p.ms /= steps as f64;
    }
    let source = match source {
        Some(crate::gpu::TimingSource::Timestamps) => "timestamps",
        Some(crate::gpu::TimingSource::Wall) => "wall clock (each stage submitted and waited for)",
        None => "none",
    };
    Ok((sums, source.to_string()))
}

/// The stage table of the rows measured with `--passes`.
pub fn stage_table(rows: &[PopulationRow]) -> String {
    let mut s = String::new();
    for r in rows {
        let (Some(stages), Some(timing)) = (&r.gpu_stages, &r.stage_timing) else { continue };
        let total: f64 = stages.iter().map(|p| p.ms).sum();
        let millions = r.n as f64 / 1e6;
        s += &format!(
            "N = {}: GPU stages, mean ms per step ({timing}); profiled total {total:.3} ms, unprofiled {}\n",
            r.n,
            r.gpu_ms.map_or("-".into(), |v| format!("{v:.3} ms"))
        );
        s += &format!("  {:<12} {:>10} {:>7} {:>14} {:>10}\n", "stage", "ms", "share", "µs per 10⁶", "× floor");
        for p in stages {
            let per_million = p.ms * 1e3 / millions;
            s += &format!(
                "  {:<12} {:>10.4} {:>6.1}% {:>14.1} {:>10.1}\n",
                p.name,
                p.ms,
                if total > 0.0 { 100.0 * p.ms / total } else { 0.0 },
                per_million,
                per_million / FLOOR_US_PER_MILLION
            );
        }
    }
    s
}

fn build(path: &str, n: usize) -> anyhow::Result<Population> {
    let scene = Scene::load(std::path::Path::new(path), &[format!("population.count={n}")])?;
    let world = scene.build_world()?;
    world.population.with_context(|| format!("{path} has no population section"))
}

/// The scene file of `--scene NAME`: a path to a `.ron` file (or any
/// existing file) as given, else `scenes/NAME.ron` under the working
/// directory, else under the source tree mx2d was built from. When none
/// exists the error names `--scene`, the name and every place looked in.
pub fn resolve_scene(name: &str) -> Result<std::path::PathBuf, String> {
    let given = std::path::Path::new(name);
    if name.ends_with(".ron") || given.is_file() {
        return if given.is_file() {
            Ok(given.to_path_buf())
        } else {
            Err(format!("--scene {name}: no such scene file {}", absolute(given).display()))
        };
    }
    let file = format!("{name}.ron");
    let places = [
        std::path::Path::new("scenes").join(&file),
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes").join(&file),
    ];
    if let Some(found) = places.iter().find(|p| p.is_file()) {
        return Ok(found.clone());
    }
    let mut looked: Vec<String> = places.iter().map(|p| absolute(p).display().to_string()).collect();
    // Run from the source tree, both places are one.
    looked.dedup();
    Err(format!(
        "--scene {name}: no scene named {name:?}; looked for {} (give a scene name under scenes/ or a path to a .ron file)",
        looked.join(" and ")
    ))
}

/// `path` made absolute against the working directory (for messages).
fn absolute(path: &std::path::Path) -> std::path::PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Runs the population bench for `--scene NAME` (a name under `scenes/` or a
/// path, see [`resolve_scene`]); with `--plot FILE.png`, draws both
/// backends' ms per step against N.
pub fn run(args: &super::BenchArgs, scene: &str) -> anyhow::Result<()> {
    let path = resolve_scene(scene).map_err(anyhow::Error::msg)?.display().to_string();
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
            gpu_stages: None,
            stage_timing: None,
        };
        if let Some(ctx) = &ctx {
            let measured = (|| -> anyhow::Result<(f64, f64, Option<StageMeans>)> {
                let mut on_gpu = start.clone();
                let mut gpu = GpuPopulation::new(ctx.clone(), &on_gpu)?;
                // First the agreement: the CPU's 1 + repeats steps, read back.
                for _ in 0..=repeats {
                    gpu.step(&mut on_gpu, dt)?;
                }
                gpu.read_back(&mut on_gpu)?;
                let diff = (0..n)
                    .map(|i| {
                        let (a, b) = (on_cpu.position[i], on_gpu.position[i]);
                        f64::from((a - b).length() / a.length().max(on_cpu.radius[i]))
                    })
                    .fold(0.0, f64::max);
                // Then the time, on from there: a GPU left idle while the CPU
                // twin ran has lowered its clocks, so steps run for at least
                // WARM_UP first (a real card's clock takes that long to rise).
                let warm = Instant::now();
                while warm.elapsed() < WARM_UP {
                    gpu.step(&mut on_gpu, dt)?;
                    ctx.wait("population bench warm-up")?;
                }
                let t = Instant::now();
                for _ in 0..repeats {
                    gpu.step(&mut on_gpu, dt)?;
                }
                ctx.wait("population bench")?;
                let ms = t.elapsed().as_secs_f64() * 1e3 / repeats as f64;
                let stages =
                    if args.passes { Some(stage_means(ctx, &mut gpu, &mut on_gpu, dt, repeats)?) } else { None };
                Ok((ms, diff, stages))
            })();
            match measured {
                Ok((ms, diff, stages)) => {
                    if let Some((stages, timing)) = stages {
                        row.gpu_stages = Some(stages);
                        row.stage_timing = Some(timing);
                    }
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
    print!("{}", stage_table(&rows));
    if let Some(p) = &args.plot {
        super::plot::write_population_plot(p, &rows, scene, &adapter)
            .with_context(|| format!("writing {}", p.display()))?;
    }
    if let Some(p) = &args.json {
        let doc = serde_json::json!({ "adapter": adapter, "cpu_threads": threads, "rows": rows });
        std::fs::write(p, serde_json::to_string_pretty(&doc)?).with_context(|| format!("writing {}", p.display()))?;
    }
    if rows.iter().any(|r| r.agree == Some(false)) {
        anyhow::bail!("the CPU and GPU population steps disagree (see the `agree` column)");
    }
    Ok(())
}
