//! Running a scene headless: the loop behind `mx2d run`, with its outputs.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use crate::integrator::Method;
use crate::output::{CsvWriter, ENERGY_HEADER, PopulationSummary, REACTIONS_HEADER, Stopped, Summary, TRACE_HEADER};
use crate::population::gpu::GpuPopulation;
use crate::scene::{MAX_STEPS, Scene};
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
    /// Tolerance override of the adaptive integrators.
    pub tolerance: Option<f64>,
    /// Trace CSV path.
    pub trace: Option<PathBuf>,
    /// Energy CSV path.
    pub energy: Option<PathBuf>,
    /// Binary population snapshot path (`--snapshot`, see
    /// [`crate::population::snapshot`]).
    pub snapshot: Option<PathBuf>,
    /// Record every K-th step (and the last); default 1.
    pub every: Option<u64>,
    /// Summary JSON path.
    pub summary: Option<PathBuf>,
    /// Reactions CSV path.
    pub reactions: Option<PathBuf>,
    /// Contacts CSV path.
    pub contacts: Option<PathBuf>,
    /// Show a progress bar (only drawn on a terminal).
    pub progress: bool,
    /// Where the fields run.
    pub backend: Backend,
    /// Set (to a signal number, e.g. 2 for SIGINT) to ask the run to stop
    /// after the current step: the outputs get the last complete step and
    /// the summary says `stopped`. `mx2d run` wires SIGINT and SIGTERM here.
    pub stop: Option<Arc<AtomicUsize>>,
    /// Write a PNG per recorded step into this folder (`--frames DIR`).
    pub frames: Option<PathBuf>,
    /// Picture size of the frames; default [`crate::render::headless::DEFAULT_SIZE`].
    pub frame_size: Option<(u32, u32)>,
    /// Energy plot PNG (`--energy-plot FILE.png`), drawn at the end from the recorded steps.
    pub energy_plot: Option<PathBuf>,
}

/// Why a run ended before the steps it was asked for.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum RunStop {
    /// A step (or the initial projection, at step 0) failed.
    #[error(transparent)]
    Simulation(#[from] SimulationError),
    /// The energy or the non-conservative work stopped being a finite number.
    #[error("simulation diverged at step {step} (t = {time}): the {what} is not finite ({value})")]
    NonFiniteEnergy {
        /// Step after which it was seen.
        step: u64,
        /// Time at the end of that step.
        time: f64,
        /// `energy` or `non-conservative work`.
        what: &'static str,
        /// The value.
        value: f64,
    },
    /// The constraints are violated by more than the size of the scene.
    #[error(
        "simulation diverged at step {step} (t = {time}): constraint error {error:e} passed the bound {bound:e} (1000 × the scene's extent)"
    )]
    ConstraintError {
        /// Step after which it was seen.
        step: u64,
        /// Time at the end of that step.
        time: f64,
        /// The largest constraint error.
        error: f64,
        /// The bound.
        bound: f64,
    },
    /// A signal asked the run to stop.
    #[error("stopped by signal {signal} ({}) after step {step} (t = {time})", signal_name(*signal))]
    Signal {
        /// Last complete step.
        step: u64,
        /// Its time.
        time: f64,
        /// The signal number.
        signal: usize,
    },
}

impl RunStop {
    /// The process exit code: 3 for a simulation that stopped, 128 + the
    /// signal number for a signal (the shell's convention: 130 for SIGINT).
    pub fn exit_code(&self) -> u8 {
        match self {
            RunStop::Signal { signal, .. } => u8::try_from(128 + signal).unwrap_or(u8::MAX),
            _ => 3,
        }
    }

    fn step(&self) -> u64 {
        match self {
            RunStop::Simulation(e) => match e {
                SimulationError::Diverged { step, .. }
                | SimulationError::Constraints { step, .. }
                | SimulationError::Gpu { step, .. }
                | SimulationError::Contact { step, .. }
                | SimulationError::Population { step, .. }
                | SimulationError::Integrator { step, .. } => *step,
            },
            RunStop::NonFiniteEnergy { step, .. }
            | RunStop::ConstraintError { step, .. }
            | RunStop::Signal { step, .. } => *step,
        }
    }
}

fn signal_name(signal: usize) -> &'static str {
    match signal {
        2 => "SIGINT",
        15 => "SIGTERM",
        1 => "SIGHUP",
        _ => "signal",
    }
}

/// The number of steps a run takes: `steps`, else `duration / dt`, else the
/// scene's; refused past [`MAX_STEPS`] (a count no run can mean, which would
/// otherwise saturate and never end).
pub fn planned_steps(scene: &Scene, options: &RunOptions) -> Result<u64, String> {
    if let Some(dt) = options.dt
        && !(dt.is_finite() && dt > 0.0 && dt.is_normal())
    {
        return Err(format!("--dt must be a positive, finite, normal number of seconds, got {dt}"));
    }
    if let Some(t) = options.duration
        && !(t.is_finite() && t >= 0.0)
    {
        return Err(format!("--duration must be a finite number of seconds >= 0, got {t}"));
    }
    let dt = options.dt.unwrap_or(scene.file.dt);
    let exact = match (options.steps, options.duration) {
        (Some(n), _) => n as f64,
        (None, Some(t)) => (t / dt).round(),
        (None, None) if options.dt.is_some() => {
            (scene.file.duration.unwrap_or(scene.default_steps() as f64 * scene.file.dt) / dt).round()
        }
        (None, None) => scene.default_steps() as f64,
    };
    // NaN included: only a count known to be within the limit passes.
    if exact.is_nan() || exact > MAX_STEPS as f64 {
        return Err(format!(
            "the run would take {exact:e} steps (dt = {dt} s), more than the limit of {MAX_STEPS:e}; ask for fewer steps, a shorter duration or a larger dt"
        ));
    }
    Ok(options.steps.unwrap_or(exact as u64))
}

/// Refuses two outputs that are the same file: one would overwrite the other.
pub fn check_distinct_outputs(options: &RunOptions) -> Result<(), String> {
    let outputs = [
        ("--trace", &options.trace),
        ("--energy", &options.energy),
        ("--reactions", &options.reactions),
        ("--summary", &options.summary),
        ("--snapshot", &options.snapshot),
    ];
    let mut seen: Vec<(&str, PathBuf)> = Vec::new();
    for (flag, path) in outputs {
        let Some(path) = path else { continue };
        let id = file_identity(path);
        if let Some((other, _)) = seen.iter().find(|(_, p)| *p == id) {
            return Err(format!(
                "{other} and {flag} name the same file {}: give each output its own file",
                path.display()
            ));
        }
        seen.push((flag, id));
    }
    Ok(())
}

/// The path with its directory resolved (symbolic links, `..`), so that
/// `out.csv` and `./out.csv` compare equal.
fn file_identity(path: &Path) -> PathBuf {
    if let Ok(p) = std::fs::canonicalize(path) {
        return p;
    }
    match (path.parent(), path.file_name()) {
        (Some(dir), Some(name)) => {
            let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
            std::fs::canonicalize(dir).map_or_else(|_| path.to_path_buf(), |d| d.join(name))
        }
        _ => path.to_path_buf(),
    }
}

/// What a run produced.
#[derive(Debug)]
pub struct RunOutcome {
    /// The summary (also written to `--summary` if asked).
    pub summary: Summary,
    /// The world at the end.
    pub world: World,
    /// Set when the run stopped early.
    pub error: Option<RunStop>,
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
                crate::output::report(&format!("mx2d: --backend gpu cannot run ({e}); the fields run on the CPU"));
                format!("none ({e})")
            }
        },
    };
    let steps = planned_steps(scene, options).map_err(anyhow::Error::msg)?;
    check_distinct_outputs(options).map_err(anyhow::Error::msg)?;
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
            crate::output::report(&format!(
                "mx2d: --backend gpu cannot run the population ({e}); it runs on the CPU twin"
            ));
            format!("none ({e})")
        }
        None => adapter,
    };
    if let Some(dt) = options.dt {
        world.dt = dt;
    }
    if let Some(m) = options.integrator {
        world.set_integrator(m);
    }
    if let Some(tol) = options.tolerance {
        anyhow::ensure!(tol.is_finite() && tol > 0.0 && tol < 1.0, "--tolerance must be in (0, 1), got {tol}");
        world.set_tolerance(tol);
    }
    let every = options.every.unwrap_or(1).max(1);
    let open = |p: &Option<PathBuf>, header: &str| -> anyhow::Result<Option<CsvWriter>> {
        Ok(p.as_ref().map(|p| CsvWriter::create(p, header)).transpose()?)
    };
    let mut recorder = Recorder {
        trace: open(&options.trace, TRACE_HEADER)?,
        energy: open(&options.energy, ENERGY_HEADER)?,
        reactions: open(&options.reactions, REACTIONS_HEADER)?,
        contacts: open(&options.contacts, crate::output::CONTACTS_HEADER)?,
        snapshot: match (&options.snapshot, &world.population) {
            (Some(p), Some(pop)) => Some(crate::population::snapshot::SnapshotWriter::create(p, pop.len())?),
            (Some(p), None) => anyhow::bail!("--snapshot {}: the scene has no population to record", p.display()),
            (None, _) => None,
        },
        pictures: crate::render::headless::RunPictures::open(
            &world,
            &scene.file.name,
            options.frames.as_deref(),
            options.frame_size,
            options.energy_plot.as_deref(),
        )?,
    };
    // An initial state the constraints cannot be projected onto stops the
    // run like a failed step (exit 3) at step 0, with the outputs of step 0
    // kept — with or without --reactions.
    let prepared = world.prepare();
    let energy_initial = world.energy();
    let population_initial = world.population.as_ref().map(|p| p.stats());
    let initial_constraint_error = world.constraint_error();
    let mut error: Option<RunStop> = prepared.err().map(RunStop::from);
    let recorded = recorder.record(&mut world)?;
    if error.is_none() {
        error = recorded.err();
    }
    if error.is_none() {
        error = energy_check(&world, energy_initial);
    }
    // The constraint error bound: violated by more than 1000 × the scene's
    // extent, a joint no longer means anything (it is ~1e-12 with the
    // projection, and drifts to a fraction of the extent without it).
    let extent = world.bodies.iter().map(|b| b.position.length() + b.radius()).fold(0.0, f64::max);
    let constraint_bound = 1e3 * extent;
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
    let steps = if error.is_some() { 0 } else { steps };
    let stop_requested = || options.stop.as_ref().map_or(0, |s| s.load(Ordering::Relaxed));
    let mut overlap_seen = population_initial.map_or(0.0, |s| s.max_overlap_ratio);
    for k in 1..=steps {
        let signal = stop_requested();
        if signal != 0 {
            // The rows of the last complete step, unless just written.
            if (k - 1) % every != 0 {
                recorder.record(&mut world)?.ok();
            }
            error = Some(RunStop::Signal { step: world.step_count(), time: world.time(), signal });
            break;
        }
        let stepped = world.step().map_err(RunStop::from).and_then(|()| {
            let e = world.max_constraint_error();
            match energy_check(&world, energy_initial) {
                Some(stop) => Err(stop),
                None if e.is_nan() || e > constraint_bound => Err(RunStop::ConstraintError {
                    step: world.step_count(),
                    time: world.time(),
                    error: e,
                    bound: constraint_bound,
                }),
                None => Ok(()),
            }
        });
        if let Err(e) = stepped {
            error = Some(e);
            // Keep the state that diverged in the trace: it shows what went
            // wrong (reactions may no longer be computable: keep the rest).
            let _ = world.sync_population();
            recorder.record(&mut world)?.ok();
            break;
        }
        if k % every == 0 || k == steps {
            if world.population.is_some()
                && (recorder.trace.is_some() || recorder.energy.is_some() || recorder.snapshot.is_some())
            {
                if let Err(e) = world.sync_population() {
                    error = Some(e.into());
                    break;
                }
                if let Some(pop) = &world.population {
                    overlap_seen = overlap_seen.max(pop.stats().max_overlap_ratio);
                }
            }
            if let Err(e) = recorder.record(&mut world)? {
                error = Some(e);
                break;
            }
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
        error.get_or_insert(e.into());
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
                // The step's own reduction over every substep, and the
                // recorded samples (the initial state, the end).
                max_overlap_ratio_seen: overlap_seen.max(last.max_overlap_ratio).max(f64::from(pop.max_overlap_seen)),
            })
        }
        _ => None,
    };
    recorder.pictures.finish()?;
    let energy_final = world.energy();
    let taken = world.step_count();
    let stats = world.integrator_stats();
    let summary = Summary {
        scene: scene.file.name.clone(),
        integrator: world.integrator().name().to_string(),
        bodies: world.bodies.len(),
        steps: taken,
        substeps: stats.steps,
        rejected_steps: stats.rejected,
        newton_iterations: stats.newton_iterations,
        jacobians: stats.jacobians,
        tolerance: world.tolerance(),
        dt: world.dt,
        t_final: world.time(),
        wall_ms,
        ms_per_step: if taken > 0 { wall_ms / taken as f64 } else { 0.0 },
        energy_initial: energy_initial.total,
        energy_final: energy_final.total,
        work_nonconservative: energy_final.work,
        energy_balance_error: (energy_final.balance() - energy_initial.balance()).abs(),
        max_constraint_error: world.max_constraint_error().max(initial_constraint_error),
        max_penetration: world.contacts.max_penetration(),
        backend: if world.population.is_some() { world.population_backend() } else { world.field_backend() }.into(),
        adapter,
        stage_ms: world.stage_times().as_list().iter().map(|(n, d)| (n.to_string(), d.as_secs_f64() * 1e3)).collect(),
        stopped: error.as_ref().map(|e| Stopped {
            step: e.step(),
            body: match e {
                RunStop::Simulation(SimulationError::Diverged { body, .. }) => Some(body.clone()),
                _ => None,
            },
            message: e.to_string(),
        }),
        warnings: world.warnings().cloned().collect(),
        population,
    };
    if let Some(p) = &options.summary {
        summary.write(p)?;
    }
    Ok(RunOutcome { summary, world, error })
}

/// A stop when the energy or the work is no longer finite (a body at 1e308
/// under gravity, a force applied at an absurd point): the numbers reported
/// would be meaningless.
fn energy_check(world: &World, initial: crate::world::Energy) -> Option<RunStop> {
    let e = world.energy();
    let (step, time) = (world.step_count(), world.time());
    if !initial.total.is_finite() || !e.total.is_finite() {
        let value = if initial.total.is_finite() { e.total } else { initial.total };
        return Some(RunStop::NonFiniteEnergy { step, time, what: "energy", value });
    }
    (!e.work.is_finite()).then_some(RunStop::NonFiniteEnergy {
        step,
        time,
        what: "non-conservative work",
        value: e.work,
    })
}

/// The CSV outputs of a run, each optional.
struct Recorder {
    trace: Option<CsvWriter>,
    energy: Option<CsvWriter>,
    reactions: Option<CsvWriter>,
    contacts: Option<CsvWriter>,
    /// `--snapshot`: binary population frames.
    snapshot: Option<crate::population::snapshot::SnapshotWriter>,
    /// `--frames` and `--energy-plot` (src/render/headless.rs).
    pictures: crate::render::headless::RunPictures,
}

impl Recorder {
    /// Writes the rows of the world's current step to every open file. The
    /// outer error is an output error (naming the file); the inner one a
    /// reaction that cannot be computed, which stops the run like a step.
    fn record(&mut self, world: &mut World) -> anyhow::Result<Result<(), RunStop>> {
        if let Some(t) = &mut self.trace {
            t.trace_rows(world)?;
        }
        if let Some(e) = &mut self.energy {
            let error = world.constraint_error();
            e.energy_row(world, error)?;
        }
        if let Some(r) = &mut self.reactions {
            match world.reactions() {
                Ok(reactions) => r.reaction_rows(world, &reactions)?,
                Err(source) => {
                    let (step, time) = (world.step_count(), world.time());
                    return Ok(Err(SimulationError::Constraints { step, time, source }.into()));
                }
            }
        }
        if let Some(c) = &mut self.contacts {
            c.contact_rows(world)?;
        }
        if let (Some(s), Some(pop)) = (&mut self.snapshot, &world.population) {
            s.frame(world.step_count(), world.time(), pop)?;
        }
        self.pictures.record(world)?;
        Ok(Ok(()))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        for w in [&mut self.trace, &mut self.energy, &mut self.reactions, &mut self.contacts].into_iter().flatten() {
            w.flush()?;
        }
        if let Some(s) = &mut self.snapshot {
            s.flush()?;
        }
        Ok(())
    }
}
