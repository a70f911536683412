//! How far the population's CPU twin carries a change of one ulp in the
//! input: balls_box with 1,000 balls, stepped `BEFORE` steps (default 90: a
//! pile in motion), then `STEPS` steps (default 1) as it is and with one ulp
//! more on the x of every ball, of one ball in ten, of ball 500 only. The
//! envelope the GPU twin tests use on devices that do not compute the twin's
//! bits (`tests/common/twin.rs`).
//!
//! `cargo run --release --example twin_sensitivity -- [STEPS] [BEFORE]`
use mx2d::population::{Population, cpu};
use mx2d::scene::Scene;

fn balls_box(count: u64) -> Population {
    let text = std::fs::read_to_string("scenes/balls_box.ron").unwrap();
    let scene = Scene::parse_with_overrides(&text, "balls_box.ron", &[format!("population.count={count}")]).unwrap();
    scene.build_world().unwrap().population.unwrap()
}

fn main() {
    let mut start = balls_box(1000);
    let steps: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1);
    let before: usize = std::env::args().nth(2).and_then(|s| s.parse().ok()).unwrap_or(90);
    for _ in 0..before {
        cpu::step(&mut start, 1.0 / 60.0).unwrap();
    }
    start.params.resort_every = 0;
    for (label, which) in [("every ball", 1usize), ("one ball in 10", 10), ("ball 500 only", 0)] {
        let mut a = start.clone();
        let mut b = start.clone();
        for i in 0..b.len() {
            let hit = if which == 0 { i == 500 } else { i % which == 0 };
            if hit {
                b.position[i].x = f32::from_bits(b.position[i].x.to_bits() + 1);
            }
        }
        for _ in 0..steps {
            cpu::step(&mut a, 1.0 / 60.0).unwrap();
            cpu::step(&mut b, 1.0 / 60.0).unwrap();
        }
        let (mut over, mut wx, mut wv) = (0, 0.0f32, 0.0f32);
        for i in 0..a.len() {
            let ex = (b.position[i] - a.position[i]).length() / a.position[i].length().max(0.5);
            let ev = (b.velocity[i] - a.velocity[i]).length() / a.velocity[i].length().max((9.81f32 * 0.5).sqrt());
            wx = wx.max(ex);
            wv = wv.max(ev);
            over += usize::from(ex >= 1e-4 || ev >= 1e-4);
        }
        let (ka, kb) = (a.stats().kinetic_energy, b.stats().kinetic_energy);
        println!("{label}: kinetic energy {ka} J and {kb} J: {:.3} %", 100.0 * (kb - ka).abs() / ka);
        let (a, b) = (a.in_original_order(), b.in_original_order());
        let worst_m = (0..a.len()).map(|i| (b.position[i] - a.position[i]).length()).fold(0.0f32, f32::max);
        println!("{label}: largest position difference {worst_m} m");
        println!(
            "{label}: x + 1 ulp -> {over} of {} balls differ by >= 1e-4 after {steps} step(s); largest position {wx:e}, velocity {wv:e}",
            a.len()
        );
    }
}
