//! Box2D v3's `large_pyramid` (rows·(rows+1)/2 boxes of half-size 0.5) run with Box2D v3
//! (boxdd) and/or rapier2d: ms/step (engine step calls only) and the stack's quality: max
//! drift of any box from its start, max penetration (box–box by SAT, box–ground).

use clap::Parser;
use mx2d_peers::engines::{self, Material, Settings, Shape, State};
use mx2d_peers::pyramid::{self as scene, Pose};
use mx2d_peers::{StepTimer, default_workers, write_json};
use serde_json::json;
use std::path::PathBuf;
use std::time::Instant;

#[derive(Parser)]
#[command(about = "Box2D v3's large_pyramid with Box2D v3 and rapier2d (peer benchmark of mx2d)")]
struct Args {
    /// box2d, rapier or both.
    #[arg(long, default_value = "both")]
    engine: String,
    /// Rows of the pyramid (20 → 210 boxes, 100 → 5,050).
    #[arg(long, default_value_t = 20)]
    rows: usize,
    /// Steps of 1/60 s (600 = 10 s).
    #[arg(long, default_value_t = 600)]
    steps: u64,
    /// Worker threads (default: available cores).
    #[arg(long)]
    workers: Option<usize>,
    /// Sub-steps per step.
    #[arg(long, default_value_t = 4)]
    substeps: usize,
    /// Box2D's contact stiffness (Hz; its default 30, capped by Box2D at a quarter of the
    /// sub-step rate): with more sub-steps, the stack's sag at equal quality.
    #[arg(long)]
    contact_hertz: Option<f64>,
    /// Sample the penetration every K steps (the last step is always sampled).
    #[arg(long, default_value_t = 10)]
    quality_every: u64,
    /// Write the results as JSON here (an object keyed by engine).
    #[arg(long)]
    json: Option<PathBuf>,
}

fn poses(state: &State) -> Vec<Pose> {
    state.position.iter().zip(&state.angle).map(|(&center, &angle)| Pose { center, angle }).collect()
}

fn main() -> std::process::ExitCode {
    // Print the error chain on one line, without anyhow's backtrace, and exit non-zero.
    match try_main(Args::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pyramid: error: {e:#}");
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
    anyhow::ensure!((1..=2000).contains(&args.rows), "--rows {} outside 1..=2000", args.rows);
    anyhow::ensure!(args.substeps >= 1, "--substeps must be at least 1");
    let workers = args.workers.unwrap_or_else(default_workers);
    anyhow::ensure!(workers >= 1, "--workers must be at least 1");
    let initial = scene::initial_positions(args.rows);
    let box_size = 2.0 * scene::HALF;
    println!(
        "pyramid  rows = {} ({} boxes)  steps = {}  dt = 1/60 s  sub-steps = {}  workers = {}",
        args.rows,
        initial.len(),
        args.steps,
        args.substeps,
        workers
    );
    println!(
        "{:<7} {:>9} {:>10} {:>9} {:>10} {:>11} {:>10} {:>10} {:>12} {:>12} {:>13}",
        "engine",
        "ms/step",
        "CPU ms/st",
        "setup ms",
        "drift m",
        "drift/size",
        "|dx| max",
        "|dy| max",
        "pen. end m",
        "pen. max m",
        "KE/box end J"
    );
    let mut out = serde_json::Map::new();
    for name in names {
        let setup = Instant::now();
        let settings =
            Settings { gravity: [0.0, -10.0], dt: scene::DT, substeps: args.substeps, workers, contact_hertz: args.contact_hertz };
        let mut engine = engines::create(name, settings)?;
        let material = Material { friction: scene::FRICTION, restitution: 0.0 };
        engine.add_static_rect(scene::GROUND_CENTER, scene::GROUND_HALF, material)?;
        for &p in &initial {
            let shape = Shape::Rect([scene::HALF, scene::HALF]);
            engine.add_dynamic(shape, p, [0.0, 0.0], scene::DENSITY, material, false)?;
        }
        let setup_ms = setup.elapsed().as_secs_f64() * 1e3;
        let mut state = State::default();
        let mut timer = StepTimer::default();
        let mut pen_max: f64 = 0.0;
        let mut pen_end = 0.0;
        for step in 1..=args.steps {
            timer.time(|| engine.step())?;
            if step % args.quality_every.max(1) == 0 || step == args.steps {
                engine.read(&mut state)?;
                let pen = scene::max_penetration(&poses(&state), args.rows);
                pen_max = pen_max.max(pen);
                pen_end = pen;
            }
        }
        engine.read(&mut state)?;
        let drift = scene::max_drift(&initial, &poses(&state));
        let drift_xy = scene::max_drift_xy(&initial, &poses(&state));
        // Kinetic energy per box: ½ m v² + ½ I ω², m = ρ (2h)², I = m (2h)²/6.
        let m = scene::DENSITY * box_size * box_size;
        let inertia = m * box_size * box_size / 6.0;
        let ke: f64 = state
            .velocity
            .iter()
            .zip(&state.spin)
            .map(|(v, w)| 0.5 * m * (v[0] * v[0] + v[1] * v[1]) + 0.5 * inertia * w * w)
            .sum::<f64>()
            / initial.len() as f64;
        println!(
            "{:<7} {:>9.3} {:>10.3} {:>9.1} {:>10.3e} {:>11.3e} {:>10.3e} {:>10.3e} {:>12.3e} {:>12.3e} {:>13.3e}",
            engine.name(),
            timer.ms_per_step(),
            timer.cpu_ms_per_step().unwrap_or(f64::NAN),
            setup_ms,
            drift,
            drift / box_size,
            drift_xy[0],
            drift_xy[1],
            pen_end,
            pen_max,
            ke
        );
        out.insert(
            engine.name().to_string(),
            json!({
                "scene": "pyramid",
                "engine": engine.name(),
                "rows": args.rows,
                "boxes": initial.len(),
                "steps": args.steps,
                "dt": scene::DT,
                "substeps": args.substeps,
                "contact_hertz": args.contact_hertz,
                "workers": workers,
                "setup_ms": setup_ms,
                "wall_ms": timer.total_ms(),
                "ms_per_step": timer.ms_per_step(),
                "cpu_ms_per_step": timer.cpu_ms_per_step(),
                "max_drift": drift,
                "max_drift_ratio": drift / box_size,
                "max_drift_x": drift_xy[0],
                "max_drift_y": drift_xy[1],
                "max_penetration_end": pen_end,
                "max_penetration_run": pen_max,
                "quality_every": args.quality_every,
                "kinetic_energy_per_box": ke,
            }),
        );
    }
    if let Some(path) = &args.json {
        write_json(path, &serde_json::Value::Object(out))?;
    }
    Ok(())
}
