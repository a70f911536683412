//! Speed and stack quality of `scenes/pyramid.ron` in one run (issue 7):
//! ms per step (wall, and CPU time of the whole process, which a loaded
//! machine inflates less), the largest drift of a box from its start, the
//! largest penetration against the slop, and the largest kinetic energy of a
//! box at the end.
//!
//! ```text
//! cargo run --release --example pyramid_quality -- ROWS SECONDS [PATH=VALUE ...]
//! ```
//!
//! Extra arguments are `--set` overrides, e.g. `contacts.iterations=20`.

#[path = "common/cpu_time.rs"]
mod cpu_time;

use std::time::Instant;

use mx2d::scene::Scene;

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rows: usize = args.first().and_then(|a| a.parse().ok()).unwrap_or(20);
    let seconds: f64 = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(10.0);
    let mut sets = vec![format!("piles[0].rows={rows}")];
    sets.extend(args.iter().skip(2).cloned());
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/pyramid.ron");
    let scene = Scene::load(&path, &sets).map_err(|e| e.to_string())?;
    let mut w = scene.build_world().map_err(|e| e.to_string())?;
    let start: Vec<_> = w.bodies.iter().map(|b| b.position).collect();
    let (wall, cpu) = (Instant::now(), cpu_time::cpu_seconds());
    let mut steps = 0u64;
    while w.time() < seconds - 1e-9 {
        w.step().map_err(|e| e.to_string())?;
        steps += 1;
    }
    let wall_ms = wall.elapsed().as_secs_f64() * 1e3 / steps as f64;
    let cpu_ms = (cpu_time::cpu_seconds() - cpu) * 1e3 / steps as f64;
    let drift = w.bodies.iter().zip(&start).map(|(b, p)| (b.position - *p).length()).fold(0.0, f64::max);
    let (worst, _) = w
        .bodies
        .iter()
        .zip(&start)
        .enumerate()
        .map(|(i, (b, p))| (i, (b.position - *p).length()))
        .fold((0, 0.0), |a, b| if b.1 > a.1 { b } else { a });
    let worst_d = w.bodies.as_slice()[worst].position - start[worst];
    let top = w.bodies.len() - 1;
    let top_d = w.bodies.as_slice()[top].position - start[top];
    let kinetic = w.bodies.iter().map(|b| b.kinetic_energy()).fold(0.0, f64::max);
    let slop = w.contacts.slop(w.bodies.as_slice());
    println!(
        "rows {rows} bodies {} steps {steps} t {:.3} s | wall {wall_ms:.3} ms/step cpu {cpu_ms:.3} ms/step | \
         max drift {drift:.3e} m | max penetration {:.3e} m (slop {slop:.3e}) | max KE {kinetic:.3e} J",
        w.bodies.len(),
        w.time(),
        w.contacts.max_penetration(),
    );
    println!(
        "largest drift: {} ({:+.3e}, {:+.3e}) m | top box {} ({:+.3e}, {:+.3e}) m",
        w.bodies.as_slice()[worst].name,
        worst_d.x,
        worst_d.y,
        w.bodies.as_slice()[top].name,
        top_d.x,
        top_d.y
    );
    let stages: Vec<String> = w
        .stage_times()
        .as_list()
        .into_iter()
        .filter(|(_, d)| d.as_secs_f64() * 1e3 / steps as f64 > 0.01)
        .map(|(n, d)| format!("{n} {:.3}", d.as_secs_f64() * 1e3 / steps as f64))
        .collect();
    println!("stage ms/step: {}", stages.join(", "));
    Ok(())
}
