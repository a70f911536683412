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
    /// Contacts CSV (step,t,body_a,body_b,x,y,nx,ny,gap,normal_impulse,tangent_impulse).
    #[arg(long)]
    contacts: Option<PathBuf>,
    /// Override a scene field: PATH=VALUE (repeatable).
    #[arg(long = "set", value_name = "PATH=VALUE")]
    set: Vec<String>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        None => {
            eprintln!(
                "mx2d: the windowed demo is not available in this build; run a scene headless, e.g.\n  mx2d run scenes/projectile.ron --headless --summary out.json\n(see `mx2d --help`)"
            );
            ExitCode::from(2)
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

fn run(args: RunArgs) -> ExitCode {
    if !args.headless {
        eprintln!("mx2d: no window in this build: running headless");
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
        contacts: args.contacts,
        progress: true,
        backend,
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
