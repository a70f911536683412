//! The `mx2d` command line (DESIGN.md, "Command line").

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize};

use clap::{Parser, Subcommand};
use mx2d::integrator::Method;
use mx2d::output::report;
use mx2d::run::{Backend, RunOptions, check_distinct_outputs, check_snapshot_has_population, planned_steps, run_scene};
use mx2d::scene::Scene;

#[derive(Parser)]
#[command(name = "mx2d", version, about = "Planar mechanical systems and large ball populations")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
// Parsed once per process: the size of the largest variant does not matter.
#[allow(clippy::large_enum_variant)]
enum Command {
    /// Run a scene.
    Run(RunArgs),
    /// CPU against GPU: force fields, broadphase, both (table, --json, --plot).
    Bench(mx2d::bench::BenchArgs),
    /// Render a scene to a PNG at a given time (no display needed; draws with wgpu).
    Render {
        /// Scene file (RON).
        scene: PathBuf,
        /// Output PNG.
        #[arg(long)]
        out: PathBuf,
        /// Simulated time to show (s); the scene is stepped to the nearest step.
        #[arg(long, default_value_t = 0.0, allow_hyphen_values = true)]
        time: f64,
        /// Picture size in pixels, WIDTHxHEIGHT.
        #[arg(long, default_value = "800x600", value_parser = mx2d::render::headless::parse_size)]
        size: (u32, u32),
        /// Draw the bodies' trails from t = 0.
        #[arg(long)]
        trails: bool,
        /// Draw the reaction forces of the constraints (green arrows).
        #[arg(long)]
        forces: bool,
        /// Override a scene field: PATH=VALUE (repeatable).
        #[arg(long = "set", value_name = "PATH=VALUE")]
        set: Vec<String>,
    },
    /// Validate a scene file and exit.
    Check {
        /// Scene file (RON).
        scene: PathBuf,
        /// Override a scene field: PATH=VALUE (repeatable).
        #[arg(long = "set", value_name = "PATH=VALUE")]
        set: Vec<String>,
    },
}

#[derive(clap::Args)]
struct RunArgs {
    /// Scene file (RON).
    scene: PathBuf,
    /// Run without a window.
    #[arg(long)]
    headless: bool,
    /// Number of steps.
    #[arg(long, conflicts_with = "duration", allow_hyphen_values = true)]
    steps: Option<u64>,
    /// Simulated duration (s).
    #[arg(long, allow_hyphen_values = true)]
    duration: Option<f64>,
    /// Step size (s).
    #[arg(long, allow_hyphen_values = true)]
    dt: Option<f64>,
    /// Integrator: euler, symplectic, midpoint, rk2, rk4, ab4, dopri5 (adaptive), sdirk3 (adaptive, implicit: stiff mechanisms).
    #[arg(long)]
    integrator: Option<Method>,
    /// Relative error tolerance of dopri5 and sdirk3 (their steps are at most --dt); default 1e-6.
    #[arg(long, allow_hyphen_values = true)]
    tolerance: Option<f64>,
    /// cpu or gpu: where the population is stepped (gpu: shaders/population.wgsl on resident
    /// buffers) and the force fields on the bodies are evaluated (gpu: WGSL, f32). Without a
    /// usable adapter it says why once and runs on the CPU (MX2D_REQUIRE_GPU=1: an error).
    #[arg(long, default_value = "cpu")]
    backend: String,
    /// Trace CSV (step,t,body,x,y,angle,vx,vy,omega).
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Energy CSV (step,t,kinetic,potential,total,constraint_error).
    #[arg(long)]
    energy: Option<PathBuf>,
    /// Binary population snapshot (little-endian f32 arrays per recorded step; README).
    #[arg(long)]
    snapshot: Option<PathBuf>,
    /// Record every K-th step (K ≥ 1).
    #[arg(long, allow_hyphen_values = true)]
    every: Option<u64>,
    /// Summary JSON.
    #[arg(long)]
    summary: Option<PathBuf>,
    /// Reaction forces CSV (step,t,constraint,fx,fy,torque,normal_force,tangent_force): constraints, then contacts.
    #[arg(long)]
    reactions: Option<PathBuf>,
    /// Contacts CSV (step,t,body_a,body_b,x,y,nx,ny,gap,normal_impulse,tangent_impulse).
    #[arg(long)]
    contacts: Option<PathBuf>,
    /// Write a PNG per recorded step (see --every) into DIR: frame_000000.png, ...
    #[arg(long, value_name = "DIR")]
    frames: Option<PathBuf>,
    /// Picture size of --frames (and of the window), WIDTHxHEIGHT.
    #[arg(long, value_parser = mx2d::render::headless::parse_size)]
    size: Option<(u32, u32)>,
    /// Energy plot PNG: kinetic, potential, total, constraint error (log axis).
    #[arg(long, value_name = "FILE.png")]
    energy_plot: Option<PathBuf>,
    /// Override a scene field: PATH=VALUE (repeatable).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    set: Vec<String>,
    /// Refuse a run whose --trace, --snapshot and --energy files would take more than SIZE by the estimate (500M, 4G, 1.5T, bytes, or none).
    #[arg(long, value_name = "SIZE", default_value = "4G")]
    max_output: String,
}

/// Exit status of a run that could not start: 2 (bad input) for outputs
/// over `--max-output`, found before anything is written; 1 otherwise.
fn start_failure(e: &anyhow::Error) -> ExitCode {
    if e.downcast_ref::<mx2d::run::output_size::OutputTooLarge>().is_some() {
        ExitCode::from(2)
    } else {
        ExitCode::from(1)
    }
}

/// What the process prints on stdout, written so that a closed pipe
/// (`mx2d … | head -c1`) ends the output quietly and any other failure
/// (`> /dev/full`) is reported, never a panic as with `println!`.
fn say(line: &str) -> Result<(), ExitCode> {
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{line}").and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => {
            report(&format!("error: cannot write to stdout: {e}"));
            Err(ExitCode::from(1))
        }
    }
}

fn main() -> ExitCode {
    quiet_device_select();
    let cli = Cli::parse();
    match cli.command {
        None => {
            if !mx2d::render::window::display_available() {
                report(mx2d::render::window::NO_DISPLAY);
                return ExitCode::from(2);
            }
            match mx2d::render::window::run_demo() {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    report(&format!("error: {e:#}"));
                    ExitCode::from(1)
                }
            }
        }
        Some(Command::Check { scene, set }) => match Scene::load(&scene, &set).and_then(|s| s.build_world()) {
            Ok(w) => {
                let mut line = format!(
                    "{}: ok ({} bodies, {} constraints, {} surfaces, {} loads, {} fields)",
                    scene.display(),
                    w.bodies.len(),
                    w.constraints.len(),
                    w.surfaces.len(),
                    w.loads.len(),
                    w.fields.len()
                );
                if let Some(pop) = &w.population {
                    let start = pop.stats();
                    let balls = start.alive + start.pending;
                    let mib = |per_ball: u64| (balls * per_ball) as f64 / (1u64 << 20) as f64;
                    line.push_str(&format!(
                        "\npopulation: {} balls at the start, {} more from emitters; overlap at the start {:.2} % of r; memory about {:.1} MiB on the CPU twin, {:.1} MiB on the GPU ({} and {} bytes a ball, grid cells aside)",
                        start.alive,
                        start.pending,
                        100.0 * start.max_overlap_ratio,
                        mib(mx2d::population::CPU_BYTES_PER_BALL),
                        mib(mx2d::population::gpu::GPU_BYTES_PER_BALL),
                        mx2d::population::CPU_BYTES_PER_BALL,
                        mx2d::population::gpu::GPU_BYTES_PER_BALL,
                    ));
                    let warnings = mx2d::run::session::start_overlap_warning(&start)
                        .into_iter()
                        .chain(mx2d::run::session::resolution_warning(pop.position_resolution));
                    for w in warnings {
                        report(&format!("warning: population: {w}"));
                    }
                }
                if let Some(warning) = mx2d::run::session::body_overlap_warning(&w) {
                    report(&format!("warning: {warning}"));
                }
                say(&line).map_or_else(|code| code, |()| ExitCode::SUCCESS)
            }
            Err(e) => {
                report(&format!("error: {e}"));
                ExitCode::from(2)
            }
        },
        Some(Command::Render { scene, out, time, size, trails, forces, set }) => {
            let loaded = match Scene::load(&scene, &set) {
                Ok(s) => s,
                Err(e) => {
                    report(&format!("error: {e}"));
                    return ExitCode::from(2);
                }
            };
            // A time that is not a number of seconds, or past the step limit,
            // is bad input (exit 2), refused before the adapter is opened or
            // anything is written.
            if let Err(e) = mx2d::render::headless::render_steps(time, loaded.file.dt) {
                report(&format!("error: {e}"));
                return ExitCode::from(2);
            }
            let options = mx2d::render::headless::RenderOptions { time, size, trails, forces };
            match mx2d::render::headless::render_scene(&loaded, &options, &out) {
                Ok(step) => {
                    let line = format!("{}: step {step} written to {}", scene.display(), out.display());
                    say(&line).map_or_else(|code| code, |()| ExitCode::SUCCESS)
                }
                Err(e) => {
                    report(&format!("error: {e:#}"));
                    ExitCode::from(1)
                }
            }
        }
        Some(Command::Run(args)) => run(args),
        Some(Command::Bench(args)) => bench(&args),
    }
}

/// `mx2d bench`, with its sizes and repetitions checked first: a size whose
/// buffers cannot fit in memory is refused with the limit named, instead of
/// an abort on allocation.
fn bench(args: &mx2d::bench::BenchArgs) -> ExitCode {
    if let Err(e) = check_bench_args(args) {
        report(&format!("error: {e}"));
        return ExitCode::from(2);
    }
    match mx2d::bench::run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e)
            if e.chain().any(|c| {
                c.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
            }) =>
        {
            ExitCode::SUCCESS
        }
        Err(e) => {
            report(&format!("error: {e:#}"));
            ExitCode::from(1)
        }
    }
}

/// Upper bound of the memory `bench` needs per disc (bytes): CPU copies
/// (bodies, AABBs, forces, grid keys, pairs of three finders) and, on a
/// software adapter, the GPU buffers in host memory. Measured peak RSS is
/// about 0.5 KiB per disc at N = 10⁶ (README, "Limits"); 1 KiB leaves room.
const BENCH_BYTES_PER_DISC: u64 = 1024;
/// The most timed repetitions per measurement.
const BENCH_MAX_REPEATS: usize = 1000;

fn check_bench_args(args: &mx2d::bench::BenchArgs) -> Result<(), String> {
    if args.repeats == 0 {
        // It used to be taken as 1 without a word.
        return Err("--repeats must be at least 1 (timed repetitions after the warm-up), got 0".into());
    }
    if args.repeats > BENCH_MAX_REPEATS {
        return Err(format!("--repeats {} is more than the limit of {BENCH_MAX_REPEATS}", args.repeats));
    }
    // The scene is bad input too: a name found nowhere, a file that does not
    // load, or one without balls to step.
    if let Some(name) = &args.scene {
        let path = mx2d::bench::population::resolve_scene(name)?;
        let scene = Scene::load(&path, &[]).map_err(|e| format!("--scene {name}: {e}"))?;
        if scene.file.population.is_none() {
            return Err(format!("--scene {name}: {} has no population section to step", path.display()));
        }
    }
    let available = available_memory();
    for &n in &args.sizes {
        let need = (n as u64).saturating_mul(BENCH_BYTES_PER_DISC);
        if n > u32::MAX as usize || need > available {
            let most = (available / BENCH_BYTES_PER_DISC).min(u32::MAX as u64);
            return Err(format!(
                "--sizes {n}: needs about {} MiB ({BENCH_BYTES_PER_DISC} bytes per disc), more than the {} MiB available; the largest size here is {most}",
                need >> 20,
                available >> 20
            ));
        }
    }
    Ok(())
}

/// Memory available to this process (bytes): `MemAvailable` of
/// `/proc/meminfo`, else a conservative 4 GiB where that file does not exist.
fn available_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("MemAvailable:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(4 << 30, |kib| kib.saturating_mul(1024))
}

/// SIGINT and SIGTERM set the returned flag to their number, and the run
/// stops after the current step with its outputs complete; a second signal
/// ends the process at once (exit 128 + signal).
fn stop_on_signals() -> Option<Arc<AtomicUsize>> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let flag = Arc::new(AtomicUsize::new(0));
    let asked = Arc::new(AtomicBool::new(false));
    for sig in [SIGINT, SIGTERM] {
        let registered = signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, asked.clone())
            .and_then(|_| signal_hook::flag::register(sig, asked.clone()))
            .and_then(|_| signal_hook::flag::register_usize(sig, flag.clone(), sig as usize));
        if let Err(e) = registered {
            report(&format!("mx2d: cannot handle signal {sig} ({e}); an interrupted run loses its last rows"));
            return None;
        }
    }
    Some(flag)
}

/// Without `XDG_RUNTIME_DIR`, Mesa's Vulkan device-select layer probes for a
/// Wayland compositor while listing adapters and libwayland prints
/// "error: XDG_RUNTIME_DIR is invalid or not set" on a run that then
/// succeeds (issue 11, item 10). Nothing windowed can work without that
/// variable, and wgpu picks the adapter itself, so the layer is turned off
/// (`NODEVICE_SELECT=1`, honoured by the Vulkan loader) unless the user set it.
fn quiet_device_select() {
    if std::env::var_os("XDG_RUNTIME_DIR").is_none() && std::env::var_os("NODEVICE_SELECT").is_none() {
        // SAFETY: first statement of main, before any thread is started, so
        // nothing reads the environment concurrently.
        unsafe { std::env::set_var("NODEVICE_SELECT", "1") };
    }
}

fn run(args: RunArgs) -> ExitCode {
    let backend = match args.backend.as_str() {
        "cpu" => Backend::Cpu,
        "gpu" => Backend::Gpu,
        other => {
            report(&format!("error: --backend {other}: expected cpu or gpu"));
            return ExitCode::from(2);
        }
    };
    let scene = match Scene::load(&args.scene, &args.set) {
        Ok(s) => s,
        Err(e) => {
            report(&format!("error: {e}"));
            return ExitCode::from(2);
        }
    };
    let max_output = match mx2d::run::output_size::parse_max_output(&args.max_output) {
        Ok(limit) => limit,
        Err(e) => {
            report(&format!("error: {e}"));
            return ExitCode::from(2);
        }
    };
    let mut options = RunOptions {
        steps: args.steps,
        duration: args.duration,
        dt: args.dt,
        integrator: args.integrator,
        tolerance: args.tolerance,
        trace: args.trace,
        energy: args.energy,
        snapshot: args.snapshot,
        every: args.every,
        summary: args.summary,
        reactions: args.reactions,
        contacts: args.contacts,
        progress: true,
        backend,
        stop: None,
        frames: args.frames,
        frame_size: args.size,
        energy_plot: args.energy_plot,
        max_output,
    };
    // Bad flags are bad input (exit 2), found before anything is written.
    if let Err(e) = planned_steps(&scene, &options)
        .and_then(|_| check_distinct_outputs(&options))
        .and_then(|()| check_snapshot_has_population(&scene, &options))
    {
        report(&format!("error: {e}"));
        return ExitCode::from(2);
    }
    // The window writes every output a headless run writes, the same rows
    // (one `Session` steps both); without a display the run is headless.
    let display = mx2d::render::window::display_available();
    let windowed = !args.headless && display;
    if !args.headless && !windowed {
        report("mx2d: no display: running headless");
    }
    // The method the run steps with (`run_scene` sets the override on the
    // scene's world), for the hint after a divergence.
    let method = options.integrator.unwrap_or(scene.file.integrator);
    if windowed {
        return match mx2d::render::window::run(scene, args.size.unwrap_or((1024, 768)), false, &options) {
            Ok(None) => ExitCode::SUCCESS,
            Ok(Some(stop)) => {
                report(&format!("error: {stop} (output written so far is kept)"));
                if let Some(hint) = stop.hint(method) {
                    report(&format!("hint: {hint}"));
                }
                ExitCode::from(stop.exit_code())
            }
            Err(e) => {
                report(&format!("error: {e:#}"));
                start_failure(&e)
            }
        };
    }
    options.stop = stop_on_signals();
    match run_scene(&scene, &options) {
        Ok(outcome) => {
            let s = &outcome.summary;
            for w in &s.warnings {
                report(&format!("warning: {w}"));
            }
            let line = format!(
                "{}: {} steps of {} s with {} in {:.1} ms ({:.4} ms/step); energy {:.9e} -> {:.9e} J, non-conservative work {:.6e} J",
                s.scene,
                s.steps,
                s.dt,
                s.integrator,
                s.wall_ms,
                s.ms_per_step,
                s.energy_initial,
                s.energy_final,
                s.work_nonconservative
            );
            if let Err(code) = say(&line) {
                return code;
            }
            if let Some(p) = &s.population {
                let stages: Vec<String> = p.stage_ms_per_step.iter().map(|(n, ms)| format!("{n} {ms:.4}")).collect();
                let line = format!(
                    "  population: {} balls on the {} in {:.4} ms/step; stages, ms/step over {} timed steps ({}): {}",
                    p.balls,
                    p.backend,
                    p.ms_per_step,
                    p.stage_timed_steps,
                    p.stage_timing,
                    if stages.is_empty() { "-".to_string() } else { stages.join(", ") }
                );
                if let Err(code) = say(&line) {
                    return code;
                }
                let end = &p.last;
                let line = format!(
                    "  population at the end: {} in the world, {} asleep, {} pending, {} escaped, {} killed; kinetic energy {:.4e} J per ball; overlap {:.2} % of r (worst seen {:.2} %)",
                    end.alive,
                    end.asleep,
                    end.pending,
                    end.escaped,
                    end.killed,
                    end.kinetic_per_ball,
                    100.0 * end.max_overlap_ratio,
                    100.0 * p.max_overlap_ratio_seen
                );
                if let Err(code) = say(&line) {
                    return code;
                }
            }
            if s.substeps != s.steps || s.newton_iterations > 0 {
                let line = format!(
                    "  {} integrator steps ({} rejected), {} Newton iterations, {} Jacobians (tolerance {:e})",
                    s.substeps, s.rejected_steps, s.newton_iterations, s.jacobians, s.tolerance
                );
                if let Err(code) = say(&line) {
                    return code;
                }
            }
            match outcome.error {
                None => ExitCode::SUCCESS,
                Some(e) => {
                    report(&format!("error: {e} (output written so far is kept)"));
                    if let Some(hint) = e.hint(method) {
                        report(&format!("hint: {hint}"));
                    }
                    ExitCode::from(e.exit_code())
                }
            }
        }
        Err(e) => {
            report(&format!("error: {e:#}"));
            start_failure(&e)
        }
    }
}
