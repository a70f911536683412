use mx2d::population::{Population, cpu};
use mx2d::scene::Scene;
#[test]
fn probe() {
    let extra: Vec<String> = std::env::var("PROBE").unwrap_or_default().split(';').filter(|s| !s.is_empty()).map(String::from).collect();
    let text = std::fs::read_to_string("scenes/balls_box.ron").unwrap();
    let mut sets = vec!["population.count=2000".to_string()];
    sets.extend(extra);
    let scene = Scene::parse_with_overrides(&text.replace("seed: 1)", "seed: 1, columns: 20)"), "b", &sets).unwrap();
    let mut pop: Population = scene.build_world().unwrap().population.unwrap();
    for k in 0..900 {
        cpu::step(&mut pop, 1.0 / 60.0).unwrap();
        if k % 60 == 59 {
            let s = pop.stats();
            let vmax = pop.velocity.iter().map(|v| v.length()).fold(0.0f32, f32::max);
            println!("{k} ke {:.3e} overlap {:.4} vmax {vmax:.3}", s.kinetic_per_ball, s.max_overlap_ratio);
        }
    }
}
