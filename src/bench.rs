//! `mx2d bench`: every GPU kernel against its multithreaded CPU twin.
//!
//! For each N: force fields, the grid broadphase, and the two together on a
//! random population (discs r = 0.5 at ~0.6 per m², so about one candidate
//! pair per disc), timed on the CPU twin (rayon, threads reported) and on the
//! GPU (adapter reported; timestamp queries when available, else wall clock
//! from submission to completion — the `gpu_timing` column says which). The
//! GPU kernel time excludes upload and readback; `gpu_e2e_ms` includes
//! upload, kernels, readback and the final pair sort. Each row also checks
//! that the two paths agree. Output: a table on stdout, optionally JSON and a
//! log-log PNG plot.
//!
//! A GPU failure in one row (a buffer over the adapter's limits, a lost
//! device) does not abort the run: that row keeps its CPU figures, prints
//! `gpu: error: …` once, carries the message in the JSON (`gpu_error`), and
//! the bench goes on with the next kernel and N.

use crate::broadphase::{Aabb, GridBroadphase, SweepAndPrune};
use crate::field::{Falloff, Field, FieldKind, Region};
use crate::gpu::timing::PassTime;
use crate::gpu::{GpuBody, GpuContext, GpuFieldEvaluator, GpuGridBroadphase, cpu_field_forces};
use anyhow::Context as _;
use glam::{DVec2, Vec2};
use std::path::PathBuf;
use std::time::Instant;

mod plot;
pub mod population;

/// Command-line arguments of `mx2d bench`.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// Population sizes (comma-separated), e.g. `--sizes 1000,1000000,10000000`.
    #[arg(long, value_delimiter = ',', default_values_t = vec![1_000usize, 10_000, 100_000, 1_000_000])]
    pub sizes: Vec<usize>,
    /// Timed repetitions per measurement (the median is reported), after one warm-up.
    #[arg(long, default_value_t = 5)]
    pub repeats: usize,
    /// Also time the sweep-and-prune reference up to this N (it grows ≈ N^1.5).
    #[arg(long, default_value_t = 100_000)]
    pub sap_max: usize,
    /// CPU only, even when an adapter exists.
    #[arg(long)]
    pub no_gpu: bool,
    /// Write the rows as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Draw time against N (log-log) into this PNG.
    #[arg(long)]
    pub plot: Option<PathBuf>,
    /// Time the whole population step of this scene instead (e.g. `balls_box`).
    #[arg(long)]
    pub scene: Option<String>,
    /// Also time each GPU pass (count, scan, scatter, pair emission; the
    /// field kernel's one pass) and print its share: GPU timestamps when the
    /// adapter has them, else the wall clock around each pass submitted alone.
    #[arg(long)]
    pub passes: bool,
    /// Order of the bodies: `random` (as generated) or `cell` (sorted by grid
    /// cell, row-major, as a population kept in cell order would be).
    #[arg(long, value_enum, default_value_t = BodyOrder::Random)]
    pub order: BodyOrder,
}

/// The order in which the benchmark population is fed to the kernels.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum BodyOrder {
    /// Generation order: neighbours in space are far apart in memory.
    #[default]
    Random,
    /// Sorted by the GPU grid's cell (row-major), ties by generation order.
    Cell,
}

/// One measurement: a kernel at one N on both paths.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BenchRow {
    /// "fields", "broadphase" or "fields+broadphase".
    pub kernel: &'static str,
    /// Bodies / discs.
    pub n: usize,
    /// CPU-twin time (ms, median).
    pub cpu_ms: f64,
    /// Rayon threads of the CPU twin.
    pub cpu_threads: usize,
    /// Sweep-and-prune time (ms), broadphase rows up to `--sap-max`.
    pub sap_ms: Option<f64>,
    /// GPU kernel time (ms, median).
    pub gpu_ms: Option<f64>,
    /// "timestamps" or "wall".
    pub gpu_timing: Option<&'static str>,
    /// GPU upload + kernels + readback (+ pair sort) (ms, median).
    pub gpu_e2e_ms: Option<f64>,
    /// cpu_ms / gpu_ms.
    pub speedup: Option<f64>,
    /// Candidate pairs found (broadphase rows).
    pub pairs: Option<usize>,
    /// Largest force error |ΔF| / Σ|F_k| between the paths (field rows).
    pub max_force_rel_error: Option<f64>,
    /// Whether the paths agree (pair sets equal; force error ≤ 1e-5).
    pub agree: Option<bool>,
    /// Why the GPU side of this row failed (its GPU columns are then empty).
    pub gpu_error: Option<String>,
    /// Host readback of the pairs plus their sort (ms, median), broadphase
    /// rows: the part of `gpu_e2e_ms` that a GPU consumer of the pairs
    /// (`GpuGridBroadphase::encode`) does not pay.
    pub gpu_readback_sort_ms: Option<f64>,
    /// Time of each GPU pass (ms, median per pass), with `--passes`.
    pub gpu_passes: Option<Vec<PassTime>>,
}

/// `gpu_error` of the combined row when a part failed (the part's own row
/// holds the reason).
const PART_FAILED: &str = "see the failed row above";

/// The benchmark population: positions uniform in a square at 0.6 discs per
/// m², r = 0.5, random velocities and masses; deterministic.
pub fn bench_population(n: usize) -> Vec<GpuBody> {
    let mut state = 0x5eed_u64 ^ n as u64;
    let mut next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 40) as f32 / (1u64 << 24) as f32
    };
    let side = (n as f32 / 0.6).sqrt();
    (0..n)
        .map(|_| GpuBody {
            position: Vec2::new(next() * side - side / 2.0, next() * side - side / 2.0),
            velocity: Vec2::new(next() * 4.0 - 2.0, next() * 4.0 - 2.0),
            mass: 0.5 + next(),
            radius: 0.5,
        })
        .collect()
}

/// Reorders `bodies` as `order` says (stable: ties keep generation order).
pub fn order_population(bodies: &mut [GpuBody], order: BodyOrder) {
    if order == BodyOrder::Cell {
        let aabbs: Vec<Aabb> = bodies.iter().map(|b| Aabb::from_disc(b.position, b.radius)).collect();
        let inv = crate::broadphase::GridParams::for_aabbs(&aabbs).inv_cell_size;
        let cell = |b: &GpuBody| {
            let c = Aabb::from_disc(b.position, b.radius).min * inv;
            (c.y.floor() as i64, c.x.floor() as i64)
        };
        bodies.sort_by_key(cell);
    }
}

/// The benchmark fields: gravity, a softened attractor in a disc, a vortex in
/// a rectangle, Stokes drag in a half-plane.
pub fn bench_fields(n: usize) -> Vec<Field> {
    let half = f64::from((n as f32 / 0.6).sqrt()) / 2.0;
    vec![
        Field {
            kind: FieldKind::Uniform { force: DVec2::new(0.0, -9.81), per_mass: true },
            region: Region::Everywhere,
        },
        Field {
            kind: FieldKind::Radial {
                center: DVec2::ZERO,
                strength: -50.0,
                falloff: Falloff::InverseSquare,
                softening: 0.5,
                per_mass: true,
            },
            region: Region::Circle { center: DVec2::ZERO, radius: half / 2.0 },
        },
        Field {
            kind: FieldKind::Vortex {
                center: DVec2::new(half / 3.0, 0.0),
                strength: 2.0,
                falloff: Falloff::Linear,
                softening: 0.0,
                per_mass: false,
            },
            region: Region::Rect { min: DVec2::new(0.0, -half), max: DVec2::new(half, half) },
        },
        Field {
            kind: FieldKind::Drag { coefficient: 0.3, stokes: true },
            region: Region::HalfPlane { point: DVec2::ZERO, normal: DVec2::new(-1.0, 1.0) },
        },
    ]
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// Runs `f` once to warm up, then `repeats` times; median of what it returns (ms).
fn time_median(repeats: usize, mut f: impl FnMut() -> anyhow::Result<f64>) -> anyhow::Result<f64> {
    f()?;
    let samples = (0..repeats.max(1)).map(|_| f()).collect::<anyhow::Result<Vec<f64>>>()?;
    Ok(median(samples))
}

fn wall_ms(f: impl FnOnce()) -> f64 {
    let t = Instant::now();
    f();
    t.elapsed().as_secs_f64() * 1e3
}

/// Largest |ΔF| / Σ_k|F_k| over bodies (the test's error measure).
fn max_force_error(fields: &[Field], bodies: &[GpuBody], a: &[Vec2], b: &[Vec2]) -> f64 {
    use rayon::prelude::*;
    let rounded: Vec<Field> = fields.iter().map(|f| crate::gpu::GpuField::from(f).to_field()).collect();
    bodies
        .par_iter()
        .zip(a.par_iter().zip(b))
        .map(|(body, (fa, fb))| {
            let scale: f64 = rounded
                .iter()
                .map(|f| {
                    f.force(
                        body.position.as_dvec2(),
                        body.velocity.as_dvec2(),
                        f64::from(body.mass),
                        f64::from(body.radius),
                    )
                    .length()
                })
                .sum();
            let err = (fa.as_dvec2() - fb.as_dvec2()).length();
            if err == 0.0 { 0.0 } else { err / scale.max(1e-30) }
        })
        .reduce(|| 0.0, f64::max)
}

/// GPU state for the benchmark.
struct GpuSide {
    ctx: GpuContext,
    fields: GpuFieldEvaluator,
    grid: GpuGridBroadphase,
}

/// Runs the measurements and returns the rows (`gpu` None: CPU only).
pub fn measure(args: &BenchArgs, mut gpu: Option<&mut GpuSideHandle>) -> anyhow::Result<Vec<BenchRow>> {
    let threads = rayon::current_num_threads();
    let mut rows = Vec::new();
    let mut cpu_grid = GridBroadphase::new();
    let mut sap = SweepAndPrune::new();
    for &n in &args.sizes {
        let mut bodies = bench_population(n);
        order_population(&mut bodies, args.order);
        let fields = bench_fields(n);
        let aabbs: Vec<Aabb> = bodies.iter().map(|b| Aabb::from_disc(b.position, b.radius)).collect();
        let (mut cpu_forces, mut gpu_forces) = (Vec::new(), Vec::new());
        let (mut cpu_pairs, mut gpu_pairs, mut sap_pairs) = (Vec::new(), Vec::new(), Vec::new());

        let cpu_fields_ms =
            time_median(args.repeats, || Ok(wall_ms(|| cpu_field_forces(&fields, &bodies, &mut cpu_forces))))?;
        let cpu_grid_ms = time_median(args.repeats, || Ok(wall_ms(|| cpu_grid.find_pairs(&aabbs, &mut cpu_pairs))))?;
        let sap_ms = if n <= args.sap_max {
            Some(time_median(args.repeats, || Ok(wall_ms(|| sap.find_pairs(&aabbs, &mut sap_pairs))))?)
        } else {
            None
        };
        let mut field_row = BenchRow {
            kernel: "fields",
            n,
            cpu_ms: cpu_fields_ms,
            cpu_threads: threads,
            sap_ms: None,
            gpu_ms: None,
            gpu_timing: None,
            gpu_e2e_ms: None,
            speedup: None,
            pairs: None,
            max_force_rel_error: None,
            agree: None,
            gpu_error: None,
            gpu_readback_sort_ms: None,
            gpu_passes: None,
        };
        let mut grid_row = BenchRow {
            kernel: "broadphase",
            cpu_ms: cpu_grid_ms,
            sap_ms,
            pairs: Some(cpu_pairs.len()),
            agree: sap_ms.map(|_| sap_pairs == cpu_pairs),
            ..field_row.clone()
        };
        let mut both_row =
            BenchRow { kernel: "fields+broadphase", cpu_ms: cpu_fields_ms + cpu_grid_ms, ..field_row.clone() };

        if let Some(handle) = gpu.as_deref_mut() {
            let GpuSide { ctx, fields: eval, grid } = &mut handle.0;
            let e = |e: crate::gpu::GpuError| anyhow::anyhow!(e);
            // Each kernel in its own fallible block, so that one failing
            // leaves the other's figures (and the next N) standing.
            let field_result = (|| -> anyhow::Result<(f64, f64, &'static str)> {
                let field_e2e = time_median(args.repeats, || {
                    let t = Instant::now();
                    eval.compute(ctx, &fields, &bodies, &mut gpu_forces).map_err(e)?;
                    Ok(t.elapsed().as_secs_f64() * 1e3)
                })?;
                let mut source = "wall";
                let field_gpu = time_median(args.repeats, || {
                    let timing = eval.run(ctx).map_err(e)?;
                    source = timing_name(timing.source);
                    Ok(timing.ms)
                })?;
                Ok((field_e2e, field_gpu, source))
            })();
            let grid_result = (|| -> anyhow::Result<(f64, f64, &'static str, f64)> {
                let grid_e2e = time_median(args.repeats, || {
                    let t = Instant::now();
                    grid.find_pairs(ctx, &aabbs, &mut gpu_pairs).map_err(e)?;
                    Ok(t.elapsed().as_secs_f64() * 1e3)
                })?;
                let mut source = "wall";
                let grid_gpu = time_median(args.repeats, || {
                    let timing = grid.run(ctx).map_err(e)?.timing;
                    source = timing_name(timing.source);
                    Ok(timing.ms)
                })?;
                // The readback and host sort alone, on the pairs of the last run.
                let count = gpu_pairs.len();
                let mut scratch = Vec::with_capacity(count);
                let readback = time_median(args.repeats, || {
                    let t = Instant::now();
                    grid.read_pairs(ctx, count, &mut scratch).map_err(e)?;
                    Ok(t.elapsed().as_secs_f64() * 1e3)
                })?;
                Ok((grid_e2e, grid_gpu, source, readback))
            })();
            if args.passes {
                field_row.gpu_passes = pass_medians(args.repeats, || {
                    let timing = eval.run(ctx).map_err(e)?;
                    Ok(vec![PassTime { name: "field_forces", ms: timing.ms }])
                })
                .map_err(|err| field_row.gpu_error.get_or_insert(format!("{err:#}")).clone())
                .ok();
                grid_row.gpu_passes = pass_medians(args.repeats, || Ok(grid.run_profiled(ctx).map_err(e)?.1.passes))
                    .map_err(|err| grid_row.gpu_error.get_or_insert(format!("{err:#}")).clone())
                    .ok();
            }
            let mut error = None;
            match &field_result {
                Ok((e2e, gpu_ms, source)) => {
                    let rel = max_force_error(&fields, &bodies, &cpu_forces, &gpu_forces);
                    error = Some(rel);
                    field_row.gpu_ms = Some(*gpu_ms);
                    field_row.gpu_e2e_ms = Some(*e2e);
                    field_row.gpu_timing = Some(source);
                    field_row.max_force_rel_error = Some(rel);
                    field_row.agree = Some(rel <= 1e-5);
                }
                Err(err) => field_row.gpu_error = Some(format!("{err:#}")),
            }
            let mut pairs_agree = None;
            match &grid_result {
                Ok((e2e, gpu_ms, source, readback)) => {
                    grid_row.gpu_readback_sort_ms = Some(*readback);
                    let agree = gpu_pairs == cpu_pairs && sap_ms.is_none_or(|_| sap_pairs == cpu_pairs);
                    pairs_agree = Some(agree);
                    grid_row.gpu_ms = Some(*gpu_ms);
                    grid_row.gpu_e2e_ms = Some(*e2e);
                    grid_row.gpu_timing = Some(source);
                    grid_row.agree = Some(agree);
                }
                Err(err) => grid_row.gpu_error = Some(format!("{err:#}")),
            }
            both_row.pairs = Some(cpu_pairs.len());
            both_row.max_force_rel_error = error;
            match (&field_result, &grid_result, error, pairs_agree) {
                (Ok((fe, fg, source)), Ok((ge, gg, _, _)), Some(rel), Some(agree)) => {
                    both_row.gpu_ms = Some(fg + gg);
                    both_row.gpu_e2e_ms = Some(fe + ge);
                    both_row.gpu_timing = Some(source);
                    both_row.agree = Some(agree && rel <= 1e-5);
                }
                _ => both_row.gpu_error = Some(PART_FAILED.into()),
            }
            for row in [&mut field_row, &mut grid_row, &mut both_row] {
                row.speedup = row.gpu_ms.map(|g| row.cpu_ms / g);
            }
        }
        crate::output::report(&format!("bench: N = {n} done"));
        rows.extend([field_row, grid_row, both_row]);
    }
    Ok(rows)
}

/// Runs `f` once to warm up, then `repeats` times; the median of each pass.
fn pass_medians(repeats: usize, mut f: impl FnMut() -> anyhow::Result<Vec<PassTime>>) -> anyhow::Result<Vec<PassTime>> {
    f()?;
    let runs = (0..repeats.max(1)).map(|_| f()).collect::<anyhow::Result<Vec<_>>>()?;
    let first = runs.first().cloned().unwrap_or_default();
    Ok(first
        .iter()
        .enumerate()
        .map(|(k, pass)| PassTime {
            name: pass.name,
            ms: median(runs.iter().filter_map(|run| run.get(k).map(|p| p.ms)).collect()),
        })
        .collect())
}

/// Each row's passes with their share of the row's pass total, one line per
/// kernel and N.
pub fn pass_table(rows: &[BenchRow]) -> String {
    let mut s = String::new();
    for r in rows {
        let Some(passes) = &r.gpu_passes else { continue };
        let total: f64 = passes.iter().map(|p| p.ms).sum();
        s += &format!("{:<12} {:>9}  total {:>10.3} ms:", r.kernel, r.n, total);
        for p in passes {
            let share = if total > 0.0 { 100.0 * p.ms / total } else { 0.0 };
            s += &format!("  {} {:.3} ({share:.0}%)", p.name, p.ms);
        }
        s.push('\n');
    }
    s
}

fn timing_name(source: crate::gpu::TimingSource) -> &'static str {
    match source {
        crate::gpu::TimingSource::Timestamps => "timestamps",
        crate::gpu::TimingSource::Wall => "wall",
    }
}

/// The GPU side of the benchmark, opened once (opaque).
pub struct GpuSideHandle(GpuSide);

impl GpuSideHandle {
    /// Opens the GPU and builds the pipelines.
    pub fn open() -> Result<Self, crate::gpu::GpuError> {
        let ctx = GpuContext::new()?;
        let fields = GpuFieldEvaluator::new(&ctx)?;
        let grid = GpuGridBroadphase::new(&ctx)?;
        Ok(Self(GpuSide { ctx, fields, grid }))
    }

    /// The adapter line for reports.
    pub fn summary(&self) -> String {
        self.0.ctx.summary()
    }
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.digits$}"))
}

/// The rows as a text table.
pub fn table(rows: &[BenchRow]) -> String {
    let mut s = format!(
        "{:<18} {:>9} {:>10} {:>10} {:>10} {:>11} {:>8} {:>10} {:>9} {:>10} {:>6}\n",
        "kernel", "N", "cpu_ms", "sap_ms", "gpu_ms", "gpu_e2e_ms", "speedup", "timing", "pairs", "max_rel", "agree"
    );
    for r in rows {
        s += &format!(
            "{:<18} {:>9} {:>10.3} {:>10} {:>10} {:>11} {:>8} {:>10} {:>9} {:>10} {:>6}\n",
            r.kernel,
            r.n,
            r.cpu_ms,
            opt(r.sap_ms, 3),
            opt(r.gpu_ms, 3),
            opt(r.gpu_e2e_ms, 3),
            opt(r.speedup, 2),
            r.gpu_timing.unwrap_or("-"),
            r.pairs.map_or("-".into(), |p| p.to_string()),
            r.max_force_rel_error.map_or("-".into(), |e| format!("{e:.1e}")),
            r.agree.map_or("-", |a| if a { "yes" } else { "NO" }),
        );
        if let Some(error) = &r.gpu_error {
            // Replace the newline with the error, once per failed row.
            s.pop();
            s += &format!("   gpu: error: {error}\n");
        }
    }
    s
}

/// `mx2d bench`: measures, prints the table, writes JSON and the plot.
pub fn run(args: &BenchArgs) -> anyhow::Result<()> {
    if let Some(scene) = &args.scene {
        return population::run(args, scene);
    }
    let mut gpu = None;
    let adapter = if args.no_gpu {
        "none (--no-gpu)".to_string()
    } else {
        match GpuSideHandle::open() {
            Ok(handle) => {
                let summary = handle.summary();
                gpu = Some(handle);
                summary
            }
            Err(e) => {
                crate::output::report(&format!("GPU unavailable, benchmarking the CPU path only: {e}"));
                format!("none ({e})")
            }
        }
    };
    let threads = rayon::current_num_threads();
    let rows = measure(args, gpu.as_mut())?;
    {
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        let mut text = format!("adapter: {adapter}\ncpu: {threads} rayon threads\n{}", table(&rows));
        if args.passes {
            text += &format!(
                "per-pass GPU times (median; share of the passes' total), order: {:?}\n{}",
                args.order,
                pass_table(&rows)
            );
        }
        write!(out, "{text}").and_then(|()| out.flush()).context("writing the table to stdout")?;
    }
    if let Some(path) = &args.json {
        let doc = serde_json::json!({ "adapter": adapter, "cpu_threads": threads, "order": args.order, "rows": rows });
        std::fs::write(path, serde_json::to_string_pretty(&doc)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.plot {
        plot::write_plot(path, &rows, &adapter).with_context(|| format!("writing {}", path.display()))?;
    }
    if rows.iter().any(|r| r.agree == Some(false)) {
        anyhow::bail!("the CPU and GPU paths disagree (see the `agree` column)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_gpu_row_keeps_its_cpu_figures_and_names_the_error_once() {
        let ok = BenchRow {
            kernel: "fields",
            n: 10,
            cpu_ms: 1.5,
            cpu_threads: 4,
            sap_ms: None,
            gpu_ms: Some(0.5),
            gpu_timing: Some("wall"),
            gpu_e2e_ms: Some(0.7),
            speedup: Some(3.0),
            pairs: None,
            max_force_rel_error: Some(0.0),
            agree: Some(true),
            gpu_error: None,
            gpu_readback_sort_ms: None,
            gpu_passes: None,
        };
        let failed = BenchRow {
            kernel: "broadphase",
            cpu_ms: 2.25,
            gpu_ms: None,
            gpu_timing: None,
            gpu_e2e_ms: None,
            speedup: None,
            agree: None,
            gpu_error: Some("aabbs needs 160000000 bytes".into()),
            ..ok.clone()
        };
        let text = table(&[ok, failed.clone()]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert!(!lines[1].contains("error"), "{text}");
        assert!(lines[2].starts_with("broadphase") && lines[2].contains("2.250"), "{text}");
        assert_eq!(text.matches("gpu: error: aabbs needs 160000000 bytes").count(), 1, "{text}");
        let json = serde_json::to_value(&failed).map_err(|e| e.to_string()).unwrap();
        assert_eq!(json["gpu_error"], "aabbs needs 160000000 bytes");
    }
}
