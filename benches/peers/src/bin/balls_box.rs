//! balls_box (DESIGN.md "Peers") run with Box2D v3 (boxdd) and/or rapier2d: prints ms/step
//! (mean of the engine's step calls only; quality sampling is not timed) and the quality
//! figures mx2d reports for the same scene.

use clap::Parser;
use mx2d_peers::balls_box::{self as scene, Layout, Quality};
use mx2d_peers::engines::{self, Material, Settings, Shape, State};
use mx2d_peers::{StepTimer, default_workers, write_json};
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Parser)]
#[command(about = "balls_box with Box2D v3 and rapier2d (peer benchmark of mx2d)")]
struct Args {
    /// box2d, rapier or both.
    #[arg(long, default_value = "both")]
    engine: String,
    /// Number of balls.
    #[arg(long, default_value_t = 1000)]
    n: usize,
    /// Steps of 1/60 s.
    #[arg(long, default_value_t = 300)]
    steps: u64,
    /// Worker threads (default: available cores).
    #[arg(long)]
    workers: Option<usize>,
    /// Sub-steps per step.
    #[arg(long, default_value_t = 4)]
    substeps: usize,
    /// Box2D's contact stiffness in Hz (default: Box2D's 30; capped by Box2D at an
    /// eighth of the sub-step rate). Raising it with the sub-steps is how Box2D reaches
    /// a smaller resting overlap. Ignored by rapier.
    #[arg(long)]
    contact_hertz: Option<f64>,
    /// Disc density (kg/m²); only scales the kinetic energies.
    #[arg(long, default_value_t = 1.0)]
    density: f64,
    /// Sample the max overlap every K steps (the last step is always sampled).
    #[arg(long, default_value_t = 1)]
    quality_every: u64,
    /// Write the results as JSON here (an object keyed by engine).
    #[arg(long)]
    json: Option<PathBuf>,
}

struct Run {
    engine: &'static str,
    setup_ms: f64,
    timer: StepTimer,
    quality: Quality,
}

fn run(name: &str, args: &Args, workers: usize, layout: &Layout) -> anyhow::Result<Run> {
    let setup = Instant::now();
    let settings = Settings {
        gravity: [0.0, scene::GRAVITY],
        dt: scene::DT,
        substeps: args.substeps,
        workers,
        contact_hertz: args.contact_hertz,
    };
    let mut engine = engines::create(name, settings)?;
    let material = Material { friction: scene::FRICTION, restitution: scene::RESTITUTION };
    // The box: floor, left and right walls as static slabs 1 m thick lying outside the
    // box's interior (thick, so that no fast ball can tunnel through a wall).
    let t = 0.5;
    let (l, r, top) = (layout.left, layout.right, layout.top);
    engine.add_static_rect([(l + r) / 2.0, layout.floor - t], [(r - l) / 2.0 + 2.0 * t, t], material)?;
    engine.add_static_rect([l - t, top / 2.0], [t, top / 2.0], material)?;
    engine.add_static_rect([r + t, top / 2.0], [t, top / 2.0], material)?;
    for (p, v) in layout.positions.iter().zip(&layout.velocities) {
        engine.add_dynamic(Shape::Disc(scene::RADIUS), *p, *v, args.density, material, true)?;
    }
    let setup_ms = setup.elapsed().as_secs_f64() * 1e3;

    let mut state = State::default();
    let mut quality = Quality {
        kinetic_energy_initial: scene::kinetic_energy_per_ball(&layout.velocities, &[], args.density),
        ..Quality::default()
    };
    let mut timer = StepTimer::default();
    for step in 1..=args.steps {
        timer.time(|| engine.step())?;
        if step % args.quality_every.max(1) == 0 || step == args.steps {
            engine.read(&mut state)?;
            let overlap = layout.max_overlap_ratio(&state.position);
            if overlap > quality.max_overlap_ratio_run {
                quality.max_overlap_ratio_run = overlap;
                quality.max_overlap_step = step;
            }
            if step == args.steps {
                quality.max_overlap_ratio_final = overlap;
            }
        }
    }
    if args.steps == 0 {
        engine.read(&mut state)?;
        quality.max_overlap_ratio_final = layout.max_overlap_ratio(&state.position);
    }
    quality.kinetic_energy_final = scene::kinetic_energy_per_ball(&state.velocity, &state.spin, args.density);
    quality.escaped = layout.count_escaped(&state.position);
    Ok(Run { engine: engine.name(), setup_ms, timer, quality })
}

fn main() -> std::process::ExitCode {
    // Print the error chain on one line, without anyhow's backtrace, and exit non-zero.
    match try_main(Args::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("balls_box: error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn try_main(args: Args) -> anyhow::Result<()> {
    let names: Vec<&str> = match args.engine.as_str() {
        "both" => vec!["box2d", "rapier"],
        "box2d" => vec!["box2d"],
        "rapier" => vec!["rapier"],
        other => anyhow::bail!("--engine {other}: expected box2d, rapier or both"),
    };
    anyhow::ensure!(args.n >= 1, "--n must be at least 1");
    anyhow::ensure!(args.n <= 10_000_000, "--n {} is past 10^7 (memory)", args.n);
    anyhow::ensure!(args.substeps >= 1, "--substeps must be at least 1");
    if let Some(hertz) = args.contact_hertz {
        anyhow::ensure!(hertz.is_finite() && hertz > 0.0, "--contact-hertz must be a positive number, got {hertz}");
    }
    let workers = args.workers.unwrap_or_else(default_workers);
    anyhow::ensure!(workers >= 1, "--workers must be at least 1");
    let layout = Layout::new(args.n);
    println!(
        "balls_box  N = {}  steps = {}  dt = 1/60 s  sub-steps = {}  workers = {}  contact hertz = {}  (box x ∈ [{}, {}], floor y = 0)",
        args.n,
        args.steps,
        args.substeps,
        workers,
        args.contact_hertz.map_or("Box2D's default".to_string(), |h| format!("{h}")),
        layout.left,
        layout.right
    );
    println!(
        "{:<7} {:>9} {:>10} {:>9} {:>12} {:>12} {:>12} {:>18} {:>8}",
        "engine",
        "ms/step",
        "CPU ms/st",
        "setup ms",
        "KE/ball t=0",
        "KE/ball end",
        "overlap/r end",
        "overlap/r max@step",
        "escaped"
    );
    let mut out = serde_json::Map::new();
    for name in names {
        let r = run(name, &args, workers, &layout)?;
        let q = &r.quality;
        println!(
            "{:<7} {:>9.3} {:>10.3} {:>9.1} {:>12.4e} {:>12.4e} {:>12.4} {:>11.4}@{:<6} {:>8}",
            r.engine,
            r.timer.ms_per_step(),
            r.timer.cpu_ms_per_step().unwrap_or(f64::NAN),
            r.setup_ms,
            q.kinetic_energy_initial,
            q.kinetic_energy_final,
            q.max_overlap_ratio_final,
            q.max_overlap_ratio_run,
            q.max_overlap_step,
            q.escaped
        );
        out.insert(
            r.engine.to_string(),
            json!({
                "scene": "balls_box",
                "engine": r.engine,
                "n": args.n,
                "steps": args.steps,
                "dt": scene::DT,
                "substeps": args.substeps,
                "workers": workers,
                "contact_hertz": args.contact_hertz,
                "density": args.density,
                "setup_ms": r.setup_ms,
                "wall_ms": r.timer.total_ms(),
                "ms_per_step": r.timer.ms_per_step(),
                "cpu_ms_per_step": r.timer.cpu_ms_per_step(),
                "kinetic_energy_per_ball_initial": q.kinetic_energy_initial,
                "kinetic_energy_per_ball": q.kinetic_energy_final,
                "max_overlap_ratio_end": q.max_overlap_ratio_final,
                "max_overlap_ratio_run": q.max_overlap_ratio_run,
                "max_overlap_step": q.max_overlap_step,
                "quality_every": args.quality_every,
                "escaped": q.escaped,
            }),
        );
    }
    if let Some(path) = &args.json {
        write_json(path, &serde_json::Value::Object(out))?;
    }
    Ok(())
}
