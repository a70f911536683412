//! Tries population solver settings on balls_box and prints the figures the
//! settle test (`tests/population_cpu.rs`, `settles`) judges them by: the mean
//! kinetic energy per ball over the last second relative to the initial, the
//! largest overlap / r at the end, the worst overlap seen on the way, and the
//! wall time of the steps (run it with `RAYON_NUM_THREADS=1` for a CPU time);
//! then how the remaining kinetic energy is spread over the balls (jitter
//! spreads it over all, a collapse holds it in a few) and how deep below
//! the top ball the fastest 1 % are (on the surface: balls rolling on top;
//! deep: a void closing).
//!
//! ```text
//! RAYON_NUM_THREADS=1 cargo run --release --example population_settings -- 10000 \
//!     population.substeps=8 population.iterations=3 population.relaxation=1.3
//! ```
//!
//! The first argument is the ball count; every further argument is a scene
//! override (`PATH=VALUE`, as `mx2d run --set`). The CPU backend is used.
//! `MX2D_SECONDS=20` runs longer (the "last second" is then the twentieth).

use mx2d::population::cpu;
use mx2d::scene::Scene;
use std::time::Instant;

fn main() {
    if let Err(e) = run() {
        eprintln!("population_settings: {e}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let count_text = args.next().unwrap_or_else(|| "10000".into());
    let count: u64 = count_text.parse().map_err(|e| format!("ball count {count_text:?}: {e}"))?;
    let mut overrides = vec![format!("population.count={count}")];
    overrides.extend(args);
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/balls_box.ron");
    let text = std::fs::read_to_string(path)?;
    let scene = Scene::parse_with_overrides(&text, "balls_box.ron", &overrides)?;
    let mut pop = scene.build_world()?.population.ok_or("balls_box.ron has no population")?;
    let dt = 1.0 / 60.0;
    let seconds_simulated: u32 = match std::env::var("MX2D_SECONDS") {
        Ok(text) => text.parse().map_err(|e| format!("MX2D_SECONDS={text:?}: {e} (a whole number of seconds)"))?,
        Err(_) => 10,
    };
    if !(1..=3600).contains(&seconds_simulated) {
        return Err(format!("MX2D_SECONDS={seconds_simulated}: between 1 and 3600 s").into());
    }
    let steps = 60 * seconds_simulated;
    let initial = pop.stats().kinetic_per_ball;
    let (mut tenth_second, mut worst_second) = (0.0, 0.0f64);
    let mut every_second = Vec::new();
    let started = Instant::now();
    for step in 0..steps {
        cpu::step(&mut pop, dt)?;
        let ke = pop.stats().kinetic_per_ball;
        if step >= steps - 60 {
            tenth_second += ke / 60.0;
        }
        // A sample at every whole second after 5 s: a late collapse shows here.
        if step >= 300 && step % 60 == 59 {
            worst_second = worst_second.max(ke);
        }
        if step % 60 == 59 {
            every_second.push(format!("{:.0e}", ke / initial));
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let last = pop.stats();
    // Jitter or a collapse? Jitter spreads the energy over every ball; a
    // collapse (a void closing) holds it in a few fast ones.
    let mut speed_squared: Vec<f32> = pop.velocity.iter().map(|v| v.length_squared()).collect();
    speed_squared.sort_by(f32::total_cmp);
    let total: f64 = speed_squared.iter().map(|&s| f64::from(s)).sum();
    let top: f64 =
        speed_squared[speed_squared.len() - speed_squared.len().div_ceil(100)..].iter().map(|&s| f64::from(s)).sum();
    println!(
        "at the end: median speed {:.2e} m/s, largest {:.2e} m/s, the fastest 1 % of balls hold {:.0} % of the kinetic energy",
        speed_squared[speed_squared.len() / 2].sqrt(),
        speed_squared.last().copied().unwrap_or(0.0).sqrt(),
        100.0 * top / total.max(f64::MIN_POSITIVE)
    );
    // Where are the fastest 1 %: at the pile's surface (balls rolling on
    // top) or inside it (a void closing)? Depth below the highest ball.
    let top = pop.position.iter().map(|p| p.y).fold(f32::MIN, f32::max);
    let mut by_speed: Vec<usize> = (0..pop.len()).collect();
    by_speed.sort_by(|&a, &b| pop.velocity[b].length_squared().total_cmp(&pop.velocity[a].length_squared()));
    let mut depths = [0usize; 4];
    for &i in &by_speed[..pop.len().div_ceil(100)] {
        let depth = top - pop.position[i].y;
        depths[[2.0f32, 10.0, 40.0].iter().filter(|&&d| depth >= d).count()] += 1;
    }
    println!("KE / initial at the end of each second: {}", every_second.join(" "));
    println!(
        "the fastest 1 % by depth below the top ball: < 2 m {}, 2–10 m {}, 10–40 m {}, ≥ 40 m {}",
        depths[0], depths[1], depths[2], depths[3]
    );
    println!(
        "{count} balls {:?}: KE last second / initial {:.2e} (test, 10 s: < 1e-3), KE at whole seconds after 5 s, largest / initial {:.2e}, overlap at the end {:.2} % of r (test < 2 %), worst seen {:.1} %, escaped {}, asleep {}, {:.1} s for {steps} steps",
        &overrides[1..],
        tenth_second / initial,
        worst_second / initial,
        100.0 * last.max_overlap_ratio,
        100.0 * f64::from(pop.max_overlap_seen),
        last.escaped,
        last.asleep,
        seconds
    );
    Ok(())
}
