//! Running a scene headless: the loop behind `mx2d run`, with its outputs.

use std::path::PathBuf;
use std::time::Instant;

use crate::integrator::Method;
use crate::output::{CsvWriter, ENERGY_HEADER, PopulationSummary, REACTIONS_HEADER, Stopped, Summary, TRACE_HEADER};
use crate::population::gpu::GpuPopulation;
use crate::scene::Scene;
use crate::world::{SimulationError, World};

/// Where the force fields are evaluated.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Backend {
    /// `field.rs` on the CPU (f64).
    #[default]
    Cpu,
    /// `shaders/fields.wgsl` on the GPU (f32); gravity, loads, constraints and
    /// the integrator stay on the CPU.
    Gpu,
}

/// Options of one run (the command line's, or a test's).
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// Number of steps; default from the scene.
    pub steps: Option<u64>,
    /// Duration (s), used when `steps` is absent.
    pub duration: Option<f64>,
    /// Step size override.
    pub dt: Option<f64>,
    /// Integrator override.
    pub integrator: Option<Method>,
    /// Trace CSV path.
    pub trace: Option<PathBuf>,
    /// Energy CSV path.
    pub energy: Option<PathBuf>,
    /// Record every K-th step (and the last); default 1.
    pub every: Option<u64>,
    /// Summary JSON path.
    pub summary: Option<PathBuf>,
    /// Reactions CSV path.
    pub reactions: Option<PathBuf>,
    /// Show a progress bar (only drawn on a terminal).
    pub progress: bool,
    /// Where the fields run.
    pub backend: Backend,
}

/// What a run produced.
#[derive(Debug)]
pub struct RunOutcome {
    /// The summary (also written to `--summary` if asked).
    pub summary: Summary,
    /// The world at the end.
    pub world: World,
    /// Set when the simulation stopped early.
    pub error: Option<SimulationError>,
}

/// Runs `scene` with `options`, writing the requested files. Files are written
/// as the run goes and kept if it stops early.
pub fn run_scene(scene: &Scene, options: &RunOptions) -> anyhow::Result<RunOutcome> {
    let mut world = scene.build_world()?;
    let adapter = match options.backend {
        Backend::Cpu => "none (--backend cpu)".to_string(),
        // A population-only scene: one device, opened for the population below.
        Backend::Gpu if world.bodies.is_empty() && world.population.is_some() => String::new(),
        Backend::Gpu => match crate::gpu::GpuFieldBackend::new() {
            Ok(gpu) => {
                let name = gpu.adapter();
                world.set_gpu_fields(Some(gpu));
                name
            }
            // No silent fallback: say once why the CPU runs instead, unless
            // the GPU is required.
            Err(e) if std::env::var("MX2D_REQUIRE_GPU").as_deref() == Ok("1") => {
                anyhow::bail!("--backend gpu: {e} (MX2D_REQUIRE_GPU=1)")
            }
            Err(e) => {
                eprintln!("mx2d: --backend gpu cannot run ({e}); the fields run on the CPU");
                format!("none ({e})")
            }
        },
    };
    let population_gpu = match (options.backend, &world.population) {
        (Backend::Gpu, Some(pop)) => Some(
            crate::gpu::GpuContext::new()
                .map_err(|e| e.to_string())
                .and_then(|ctx| GpuPopulation::new(std::sync::Arc::new(ctx), pop).map_err(|e| e.to_string())),
        ),
        _ => None,
    };
    let adapter = match population_gpu {
        Some(Ok(gpu)) => {
            let name = gpu.adapter();
            world.set_population_gpu(Some(gpu))?;
            name
        }
        // No silent fallback (as for the fields above).
        Some(Err(e)) if std::env::var("MX2D_REQUIRE_GPU").as_deref() == Ok("1") => {
            anyhow::bail!("--backend gpu: population: {e} (MX2D_REQUIRE_GPU=1)")
        }
        Some(Err(e)) => {
            eprintln!("mx2d: --backend gpu cannot run the population ({e}); it runs on the CPU twin");
            format!("none ({e})")
        }
        None => adapter,
    };
    if let Some(dt) = options.dt {
        anyhow::ensure!(dt.is_finite() && dt > 0.0, "--dt must be positive, got {dt}");
        world.dt = dt;
    }
    if let Some(m) = options.integrator {
        world.set_integrator(m);
    }
    let steps = match (options.steps, options.duration) {
        (Some(n), _) => n,
        (None, Some(t)) => {
            anyhow::ensure!(t.is_finite() && t >= 0.0, "--duration must be >= 0, got {t}");
            (t / world.dt).round() as u64
        }
        (None, None) if options.dt.is_some() => {
            (scene.file.duration.unwrap_or(scene.default_steps() as f64 * scene.file.dt) / world.dt).round() as u64
        }
        (None, None) => scene.default_steps(),
    };
    let every = options.every.unwrap_or(1).max(1);
    let open = |p: &Option<PathBuf>, header: &str| -> anyhow::Result<Option<CsvWriter>> {
        p.as_ref()
            .map(|p| CsvWriter::create(p, header).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display())))
            .transpose()
    };
    let mut recorder = Recorder {
        trace: open(&options.trace, TRACE_HEADER)?,
        energy: open(&options.energy, ENERGY_HEADER)?,
        reactions: open(&options.reactions, REACTIONS_HEADER)?,
    };
    // An initial state the constraints cannot be projected onto stops the
    // run like a failed step (exit 3), with the outputs of step 0 kept.
    let prepared = world.prepare();
    let energy_initial = world.energy();
    let population_initial = world.population.as_ref().map(|p| p.stats());
    let initial_constraint_error = world.constraint_error();
    recorder.record(&mut world)?;
    let bar = if options.progress && steps >= 1000 {
        let bar = indicatif::ProgressBar::new(steps);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} steps  {per_sec}  eta {eta}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        Some(bar)
    } else {
        None
    };
    let started = Instant::now();
    let mut error = prepared.err();
    let steps = if error.is_some() { 0 } else { steps };
    let mut overlap_seen = population_initial.map_or(0.0, |s| s.max_overlap_ratio);
    for k in 1..=steps {
        if let Err(e) = world.step() {
            error = Some(e);
            // Keep the state that diverged in the trace: it shows what went
            // wrong (reactions may no longer be computable: keep the rest).
            let _ = world.sync_population();
            let _ = recorder.record(&mut world);
            break;
        }
        if k % every == 0 || k == steps {
            if world.population.is_some() && (recorder.trace.is_some() || recorder.energy.is_some()) {
                if let Err(e) = world.sync_population() {
                    error = Some(e);
                    break;
                }
                if let Some(pop) = &world.population {
                    overlap_seen = overlap_seen.max(pop.stats().max_overlap_ratio);
                }
            }
            recorder.record(&mut world)?;
        }
        if let Some(bar) = &bar
            && k % 256 == 0
        {
            bar.set_position(k);
        }
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let wall_ms = started.elapsed().as_secs_f64() * 1e3;
    recorder.flush()?;
    if let Err(e) = world.sync_population() {
        error.get_or_insert(e);
    }
    let taken_steps = world.step_count();
    let population = match (&world.population, population_initial) {
        (Some(pop), Some(initial)) => {
            let last = pop.stats();
            let stage = world.stage_times().get(crate::world::Stage::StepPopulation).as_secs_f64() * 1e3;
            Some(PopulationSummary {
                balls: pop.len(),
                backend: world.population_backend().into(),
                ms_per_step: if taken_steps > 0 { stage / taken_steps as f64 } else { 0.0 },
                substeps: pop.params.substeps,
                iterations: pop.params.iterations,
                initial,
                last,
                escaped: last.escaped,
                kinetic_per_ball: last.kinetic_per_ball,
                max_overlap_ratio: last.max_overlap_ratio,
                max_overlap_ratio_seen: overlap_seen.max(last.max_overlap_ratio),
            })
        }
        _ => None,
    };
    let energy_final = world.energy();
    let taken = world.step_count();
    let summary = Summary {
        scene: scene.file.name.clone(),
        integrator: world.integrator().name().to_string(),
        bodies: world.bodies.len(),
        steps: taken,
        dt: world.dt,
        t_final: world.time(),
        wall_ms,
        ms_per_step: if taken > 0 { wall_ms / taken as f64 } else { 0.0 },
        energy_initial: energy_initial.total,
        energy_final: energy_final.total,
        work_nonconservative: energy_final.work,
        energy_balance_error: (energy_final.balance() - energy_initial.balance()).abs(),
        max_constraint_error: world.max_constraint_error().max(initial_constraint_error),
        max_penetration: population.as_ref().map_or(0.0, |p| p.max_overlap_ratio),
        backend: if world.population.is_some() { world.population_backend() } else { world.field_backend() }.into(),
        adapter,
        stage_ms: world.stage_times().as_list().iter().map(|(n, d)| (n.to_string(), d.as_secs_f64() * 1e3)).collect(),
        stopped: error.as_ref().map(|e| Stopped {
            step: world.step_count(),
            body: match e {
                SimulationError::Diverged { body, .. } => Some(body.clone()),
                _ => None,
            },
            message: e.to_string(),
        }),
        warnings: world.warnings().cloned().collect(),
        population,
    };
    if let Some(p) = &options.summary {
        summary.write(p).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", p.display()))?;
    }
    Ok(RunOutcome { summary, world, error })
}

/// The CSV outputs of a run, each optional.
struct Recorder {
    trace: Option<CsvWriter>,
    energy: Option<CsvWriter>,
    reactions: Option<CsvWriter>,
}

impl Recorder {
    /// Writes the rows of the world's current step to every open file.
    fn record(&mut self, world: &mut World) -> std::io::Result<()> {
        if let Some(t) = &mut self.trace {
            t.trace_rows(world)?;
        }
        if let Some(e) = &mut self.energy {
            let error = world.constraint_error();
            e.energy_row(world, error)?;
        }
        if let Some(r) = &mut self.reactions {
            r.reaction_rows(world)?;
        }
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        for w in [&mut self.trace, &mut self.energy, &mut self.reactions].into_iter().flatten() {
            w.flush()?;
        }
        Ok(())
    }
}
