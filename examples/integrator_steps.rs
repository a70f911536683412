//! The largest step each integrator can take on a mechanism while staying
//! within 1e-3 of the exact motion, and what a simulated second costs there
//! (issue 10's benchmark: "wall time per simulated second … with each
//! integrator at the largest step that keeps 1e-3 accuracy").
//!
//! ```text
//! cargo run --release --example integrator_steps -- [--method NAME ...] [SCENE.ron ...]
//! ```
//!
//! `--method` (repeatable) limits the run to those integrators; every setting
//! tried is printed on stderr with its error and CPU time.
//!
//! Default scenes: `scenes/linkage_loops.ron` (99 bars, 132 pins, 33 loops)
//! and `scenes/heavy_load_chain.ron` (ten 1 g links under a 1000 kg load).
//!
//! Accuracy: the mass-weighted RMS distance of the bodies' centres from the
//! reference motion, √(Σ mᵢ |Δxᵢ|² / Σ mᵢ), largest over the sample times
//! (every 0.1 s), divided by the mechanism's extent (the largest distance of
//! a body point from the origin at t = 0). Mass-weighted because the motion
//! is what carries the mass: the heavy-load chain's 1 g links keep undamped
//! transverse vibrations of ~1e4 rad/s (amplitude ~1e-4 m) that no two step
//! sizes resolve alike and that an L-stable method damps away, while the
//! load's path converges.
//! The reference is RK4 at the first dt = 0.1/n (n = 1000, 2000, 5000, …)
//! that agrees with RK4 at 2 dt to 1e-5 of the extent (printed): 100×
//! below the accuracy asked for.
//!
//! Fixed-step methods try dt = 0.1/n for n = 1, 2, 5, 10, 20, … (the
//! samples fall on steps); the adaptive ones (`dopri5`, `sdirk3`) take
//! dt = 0.1 s as the largest step and try tolerances 1e-2, 1e-3, … 1e-7, and if
//! none is within 1e-3 (or the budget ends the tries), the same with the
//! largest step 0.01, 1e-3, then 1e-4 s: the first setting within 1e-3 is
//! reported (a largest step below 0.1 s says the error control alone did not
//! keep the motion, e.g. `sdirk3` through a singular configuration). A setting whose run diverges
//! (the step reports an error) counts as failed. A run is abandoned past
//! `BUDGET_S` of CPU time, and so are the finer settings after it.
//!
//! Times are CPU seconds of the process per simulated second (the machine
//! is shared: wall time would measure the other jobs), one run each.

#[path = "common/cpu_time.rs"]
mod cpu_time;

use std::path::Path;

use glam::DVec2;
use mx2d::integrator::Method;
use mx2d::scene::Scene;

/// CPU seconds one setting may take before finer settings are skipped.
const BUDGET_S: f64 = 40.0;
/// Sample interval (s).
const SAMPLE: f64 = 0.1;
/// Largest steps (s) the adaptive methods are tried with, in turn.
const MAX_STEPS: [f64; 4] = [0.1, 0.01, 1e-3, 1e-4];
/// The accuracy asked for, relative to the extent.
const ACCURACY: f64 = 1e-3;

struct Run {
    samples: Vec<Vec<DVec2>>,
    cpu_s: f64,
    steps: u64,
    newton: u64,
    substeps: u64,
}

fn run(scene: &Scene, method: Method, dt: f64, tolerance: Option<f64>) -> Result<Run, String> {
    let mut w = scene.build_world().map_err(|e| e.to_string())?;
    w.set_integrator(method);
    w.dt = dt;
    if let Some(t) = tolerance {
        w.set_tolerance(t);
    }
    let duration = scene.file.duration.unwrap_or(1.0);
    let per_sample = (SAMPLE / dt).round() as u64;
    let n_samples = (duration / SAMPLE).round() as u64;
    let cpu0 = cpu_time::cpu_seconds();
    w.prepare().map_err(|e| e.to_string())?;
    let mut samples = vec![w.bodies.iter().map(|b| b.position).collect::<Vec<_>>()];
    for _ in 0..n_samples {
        for _ in 0..per_sample {
            w.step().map_err(|e| e.to_string())?;
        }
        samples.push(w.bodies.iter().map(|b| b.position).collect());
        if cpu_time::cpu_seconds() - cpu0 > BUDGET_S {
            return Err(format!("over {BUDGET_S} CPU s at t = {:.2} s", w.time()));
        }
    }
    let stats = w.integrator_stats();
    Ok(Run {
        samples,
        cpu_s: cpu_time::cpu_seconds() - cpu0,
        steps: w.step_count(),
        newton: stats.newton_iterations,
        substeps: stats.steps,
    })
}

/// The largest, over the samples, mass-weighted RMS distance between the
/// bodies' centres of two runs: √(Σ mᵢ |Δxᵢ|² / Σ mᵢ).
fn error(a: &Run, b: &Run, masses: &[f64]) -> f64 {
    let total: f64 = masses.iter().sum();
    a.samples
        .iter()
        .zip(&b.samples)
        .map(|(x, y)| {
            let sum: f64 = x.iter().zip(y).zip(masses).map(|((p, q), m)| m * (*p - *q).length_squared()).sum();
            (sum / total).sqrt()
        })
        .fold(0.0, f64::max)
}

fn main() -> Result<(), String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths = Vec::new();
    let mut methods = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--method" {
            let name = args.next().ok_or("--method needs a name")?;
            let m = Method::ALL.into_iter().find(|m| m.name() == name).ok_or(format!("unknown method {name}"))?;
            methods.push(m);
        } else {
            paths.push(a);
        }
    }
    if methods.is_empty() {
        methods = Method::ALL.to_vec();
    }
    if paths.is_empty() {
        paths = vec!["scenes/heavy_load_chain.ron".into(), "scenes/linkage_loops.ron".into()];
    }
    println!(
        "| scene | integrator | setting | error / extent | steps (substeps) | Newton iterations | CPU s per simulated s |"
    );
    println!("|---|---|---|---|---|---|---|");
    for p in &paths {
        let scene = Scene::load(&root.join(p), &[]).map_err(|e| e.to_string())?;
        let world = scene.build_world().map_err(|e| e.to_string())?;
        let extent = world.bodies.iter().map(|b| b.position.length() + b.radius()).fold(0.0, f64::max);
        let masses: Vec<f64> = world.bodies.iter().map(|b| b.mass).collect();
        let duration = scene.file.duration.unwrap_or(1.0);
        let mut reference = None;
        let mut previous: Option<Run> = None;
        for n in [1000u32, 2000, 5000, 10_000, 20_000, 50_000] {
            let r = run(&scene, Method::Rk4, SAMPLE / f64::from(n), None).ok();
            if let (Some(a), Some(b)) = (&previous, &r) {
                let check = error(a, b, &masses) / extent;
                if check <= 1e-5 {
                    eprintln!(
                        "{p}: reference RK4 dt {:.1e}, agrees with 2 dt to {check:.1e} of the extent ({extent:.2} m)",
                        SAMPLE / f64::from(n)
                    );
                    reference = r;
                    break;
                }
            }
            previous = r;
        }
        let reference = reference.ok_or_else(|| format!("{p}: no converged RK4 reference"))?;
        for &method in &methods {
            let adaptive = matches!(method, Method::Dopri5 | Method::Sdirk3);
            // groups of settings, each tried from the coarsest until one is
            // accurate; a group is abandoned (and the next one tried) when its
            // next run would pass the budget
            let groups: Vec<Vec<(f64, Option<f64>, String)>> = if adaptive {
                MAX_STEPS
                    .iter()
                    .map(|&h| (2..=7).map(|k| (h, Some(10f64.powi(-k)), format!("dt {h:.0e}, tol 1e-{k}"))).collect())
                    .collect()
            } else {
                vec![
                    [1u32, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 20_000, 50_000]
                        .iter()
                        .map(|&n| (SAMPLE / f64::from(n), None, format!("dt {:.1e}", SAMPLE / f64::from(n))))
                        .collect(),
                ]
            };
            let mut found = None;
            let mut why = String::from("not reached");
            'groups: for settings in &groups {
                let mut last_cpu = 0.0;
                let mut last_ratio = 1.0;
                for (k, (dt, tol, label)) in settings.iter().enumerate() {
                    // the next setting costs about (cost ratio of the last two) × the last run
                    if last_cpu * last_ratio > BUDGET_S {
                        break;
                    }
                    let r = run(&scene, method, *dt, *tol);
                    let (cpu, ok) = match &r {
                        Ok(r) => {
                            let e = error(r, &reference, &masses) / extent;
                            eprintln!(
                                "  {} {}: {label}: error {e:.1e}, {:.2} CPU s",
                                scene.file.name,
                                method.name(),
                                r.cpu_s
                            );
                            why = format!("{label}: error {e:.1e} of the extent");
                            (r.cpu_s, e <= ACCURACY)
                        }
                        Err(e) => {
                            why = format!("{label}: {e}");
                            (if e.starts_with("over ") { f64::INFINITY } else { last_cpu }, false)
                        }
                    };
                    if k > 0 {
                        last_ratio = if adaptive { 2.0 } else { settings[k - 1].0 / dt };
                    }
                    last_cpu = cpu;
                    if let (Ok(r), true) = (r, ok) {
                        found = Some((label.clone(), r));
                        break 'groups;
                    }
                }
            }
            match found {
                Some((label, r)) => println!(
                    "| {} | {} | {label} | {:.1e} | {} ({}) | {} | {:.3} |",
                    scene.file.name,
                    method.name(),
                    error(&r, &reference, &masses) / extent,
                    r.steps,
                    r.substeps,
                    r.newton,
                    r.cpu_s / duration
                ),
                None => println!(
                    "| {} | {} | none within {BUDGET_S} CPU s per run (last failure: {why}) | – | – | – | – |",
                    scene.file.name,
                    method.name()
                ),
            }
        }
    }
    Ok(())
}
