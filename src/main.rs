//! The `mx2d` command line (DESIGN.md, "Command line").

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use mx2d::integrator::Method;
use mx2d::run::{Backend, RunOptions, run_scene};
use mx2d::scene::Scene;

#[derive(Parser)]
#[command(name = "mx2d", version, about = "Planar mechanical systems and large ball populations")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
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
        #[arg(long, default_value_t = 0.0)]
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
    #[arg(long, conflicts_with = "duration")]
    steps: Option<u64>,
    /// Simulated duration (s).
    #[arg(long)]
    duration: Option<f64>,
    /// Step size (s).
    #[arg(long)]
    dt: Option<f64>,
    /// Integrator: euler, symplectic, midpoint, rk2, rk4, ab4.
    #[arg(long)]
    integrator: Option<Method>,
    /// cpu or gpu: where the force fields are evaluated (gpu: the WGSL kernel, f32).
    #[arg(long, default_value = "cpu")]
    backend: String,
    /// Trace CSV (step,t,body,x,y,angle,vx,vy,omega).
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Energy CSV (step,t,kinetic,potential,total,constraint_error).
    #[arg(long)]
    energy: Option<PathBuf>,
    /// Record every K-th step.
    #[arg(long)]
    every: Option<u64>,
    /// Summary JSON.
    #[arg(long)]
    summary: Option<PathBuf>,
    /// Reaction forces CSV (step,t,constraint,fx,fy,torque).
    #[arg(long)]
    reactions: Option<PathBuf>,
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
}

fn main() -> ExitCode {
    quiet_device_select();
    let cli = Cli::parse();
    match cli.command {
        None => {
            if !mx2d::render::window::display_available() {
                eprintln!("{}", mx2d::render::window::NO_DISPLAY);
                return ExitCode::from(2);
            }
            match mx2d::render::window::run_demo() {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("error: {e:#}");
                    ExitCode::from(1)
                }
            }
        }
        Some(Command::Check { scene, set }) => match Scene::load(&scene, &set).and_then(|s| s.build_world()) {
            Ok(w) => {
                println!(
                    "{}: ok ({} bodies, {} constraints, {} surfaces, {} loads, {} fields)",
                    scene.display(),
                    w.bodies.len(),
                    w.constraints.len(),
                    w.surfaces.len(),
                    w.loads.len(),
                    w.fields.len()
                );
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::from(2)
            }
        },
        Some(Command::Render { scene, out, time, size, trails, forces, set }) => {
            if !(time.is_finite() && time >= 0.0) {
                eprintln!("error: --time must be a finite number of seconds >= 0, got {time}");
                return ExitCode::from(2);
            }
            let loaded = match Scene::load(&scene, &set) {
                Ok(s) => s,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::from(2);
                }
            };
            let options = mx2d::render::headless::RenderOptions { time, size, trails, forces };
            match mx2d::render::headless::render_scene(&loaded, &options, &out) {
                Ok(step) => {
                    println!("{}: step {step} written to {}", scene.display(), out.display());
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("error: {e:#}");
                    ExitCode::from(1)
                }
            }
        }
        Some(Command::Run(args)) => run(args),
        Some(Command::Bench(args)) => match mx2d::bench::run(&args) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::from(1)
            }
        },
    }
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
    let outputs = args.trace.is_some()
        || args.energy.is_some()
        || args.summary.is_some()
        || args.reactions.is_some()
        || args.frames.is_some()
        || args.energy_plot.is_some();
    let windowed = !args.headless && !outputs && mx2d::render::window::display_available();
    if !args.headless && !windowed {
        eprintln!(
            "mx2d: {}: running headless",
            if outputs { "output files requested (the window writes none)" } else { "no display" }
        );
    }
    let backend = match args.backend.as_str() {
        "cpu" => Backend::Cpu,
        "gpu" => Backend::Gpu,
        other => {
            eprintln!("error: --backend {other}: expected cpu or gpu");
            return ExitCode::from(2);
        }
    };
    for (flag, value) in [("--dt", args.dt), ("--duration", args.duration)] {
        if let Some(v) = value
            && !(v.is_finite() && v >= 0.0 && (flag != "--dt" || v > 0.0))
        {
            eprintln!("error: {flag} must be a positive finite number of seconds, got {v}");
            return ExitCode::from(2);
        }
    }
    let scene = match Scene::load(&args.scene, &args.set) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    if windowed {
        return match mx2d::render::window::run(scene, args.size.unwrap_or((1024, 768)), false) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e:#}");
                ExitCode::from(1)
            }
        };
    }
    let options = RunOptions {
        steps: args.steps,
        duration: args.duration,
        dt: args.dt,
        integrator: args.integrator,
        trace: args.trace,
        energy: args.energy,
        every: args.every,
        summary: args.summary,
        reactions: args.reactions,
        progress: true,
        backend,
        frames: args.frames,
        frame_size: args.size,
        energy_plot: args.energy_plot,
    };
    match run_scene(&scene, &options) {
        Ok(outcome) => {
            let s = &outcome.summary;
            for w in &s.warnings {
                eprintln!("warning: {w}");
            }
            println!(
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
            match outcome.error {
                None => ExitCode::SUCCESS,
                Some(e) => {
                    eprintln!("error: {e} (output written so far is kept)");
                    ExitCode::from(3)
                }
            }
        }
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}
