//! Running a scene: the options of `mx2d run`, why a run stops, and the
//! headless loop; the loop's body — outputs, stop checks, summary — is a
//! [`Session`], shared with the window.

pub mod backends;
pub mod output_size;
pub mod session;

pub use session::Session;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::integrator::Method;
use crate::output::Summary;
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
    /// The most bytes the run's files may take by the estimate of
    /// [`output_size`], checked before anything is written; `None`: no
    /// limit (the library's default; the command line's is
    /// [`output_size::DEFAULT_MAX_OUTPUT`]).
    pub max_output: Option<u64>,
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
    /// The constraints are violated past what the run's drift control
    /// allows (`rule` says which bound).
    #[error(
        "simulation diverged at step {step} (t = {time}): constraint error {error:e} passed the bound {bound:e} ({rule})"
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
        /// What the bound is.
        rule: &'static str,
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
    /// What to try, where the stop is a divergence under an explicit
    /// fixed-step method ([`Method::is_explicit_fixed_step`]): past its
    /// stability limit for the stiffest mode (light bodies under large
    /// forces, stiff springs) such a method blows up within a few steps,
    /// and the issue-10 regressions (`heavy_load_chain`, the stiff-spring
    /// pendulum) stop this way under `rk4`. None for the other stops and
    /// methods: the implicit and adaptive ones name their own failures.
    pub fn hint(&self, method: Method) -> Option<String> {
        let diverged = matches!(
            self,
            RunStop::Simulation(SimulationError::Diverged { .. })
                | RunStop::NonFiniteEnergy { .. }
                | RunStop::ConstraintError { .. }
        );
        (diverged && method.is_explicit_fixed_step()).then(|| {
            format!(
                "{method} is explicit: past its stability limit for the system's stiffest mode (light bodies under large forces, stiff springs) it blows up within a few steps; try a smaller --dt, or --integrator sdirk3 (implicit, L-stable, chooses its own step)"
            )
        })
    }

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
/// otherwise saturate and never end). Also refuses the other numeric flags'
/// bad values (`--dt`, `--duration`, `--tolerance` outside (0, 1),
/// `--every 0`).
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
    // Checked here, with the other flags, so that a bad value is bad input
    // (exit 2) found before anything is written.
    if let Some(tol) = options.tolerance
        && !(tol.is_finite() && tol > 0.0 && tol < 1.0)
    {
        return Err(format!("--tolerance must be in (0, 1), got {tol}"));
    }
    if options.every == Some(0) {
        return Err("--every must be at least 1 (record every K-th step), got 0".into());
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
            "the run would take {exact:e} steps (dt = {} s), more than the limit of {MAX_STEPS:e}; ask for fewer steps, a shorter duration or a larger dt",
            crate::scene::readable(dt)
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
        ("--contacts", &options.contacts),
        ("--energy-plot", &options.energy_plot),
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

/// Refuses `--snapshot` for a scene without a `population` section: there
/// is nothing to record, and saying so before the run (bad input, exit 2)
/// beats an empty file or a failure after the other outputs are created.
pub fn check_snapshot_has_population(scene: &Scene, options: &RunOptions) -> Result<(), String> {
    match (&options.snapshot, &scene.file.population) {
        (Some(p), None) => Err(format!(
            "--snapshot {}: the scene has no population to record (snapshots hold the balls of its `population` section)",
            p.display()
        )),
        _ => Ok(()),
    }
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
    planned_steps(scene, options).map_err(anyhow::Error::msg)?;
    check_distinct_outputs(options).map_err(anyhow::Error::msg)?;
    let adapter = match options.backend {
        Backend::Cpu => "none (--backend cpu)".to_string(),
        Backend::Gpu => backends::attach_gpu(&mut world, None, true, |_| ())?,
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
    let mut session = Session::open(scene, options, &world)?;
    session.begin(&mut world)?;
    let steps = session.planned_steps();
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
    let stop_requested = || options.stop.as_ref().map_or(0, |s| s.load(Ordering::Relaxed));
    while !session.is_over(&world) {
        let signal = stop_requested();
        if signal != 0 {
            session.interrupt(&mut world, signal)?;
            break;
        }
        session.advance(&mut world)?;
        if let Some(notice) = session.take_notice() {
            match &bar {
                Some(bar) => bar.suspend(|| crate::output::report(&notice)),
                None => crate::output::report(&notice),
            }
        }
        if let Some(bar) = &bar
            && world.step_count() % 256 == 0
        {
            bar.set_position(world.step_count());
        }
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let (summary, error) = session.finish(scene, options, &mut world, adapter)?;
    Ok(RunOutcome { summary, world, error })
}
