//! The population scenes: the mixer's paddle (a mechanism body stepped by
//! the World, a moving obstacle for the balls) and the scene files load.

use glam::DVec2;
use mx2d::population::state;
use mx2d::scene::Scene;

fn scene(name: &str, sets: &[&str]) -> Scene {
    let path = format!("{}/scenes/{name}.ron", env!("CARGO_MANIFEST_DIR"));
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    Scene::load(std::path::Path::new(&path), &sets).unwrap_or_else(|e| panic!("{e}"))
}

/// The paddle turns (motor, 2 rad/s, tip at 6 m/s) and the balls never end
/// inside it: after every step no ball overlaps the bar by more than 2 % of
/// its radius (obstacles are projected last and in full every iteration, so
/// the pile cannot push a ball into the paddle; their lists reach as far as
/// ball and paddle can close in a step). None escapes the bowl.
#[test]
fn mixer_balls_never_end_inside_the_paddle() {
    let mut world = scene("mixer", &[]).build_world().unwrap();
    let r = 0.08;
    let angle0 = world.bodies.as_slice()[0].angle;
    let mut closest = f64::INFINITY;
    for step in 0..240 {
        world.step().unwrap();
        let paddle = &world.bodies.as_slice()[0];
        let pop = world.population.as_ref().unwrap();
        for i in 0..pop.len() {
            assert_eq!(pop.state[i], state::ALIVE, "ball {i} left the bowl at step {step}");
            let p = pop.position[i].as_dvec2();
            let local = DVec2::from_angle(-paddle.angle).rotate(p - paddle.position);
            let d = paddle.shape.signed_distance(local);
            closest = closest.min(d);
            assert!(d > 0.98 * r, "step {step}: ball {i} at {p} is {d} m from the paddle (r = {r})");
        }
    }
    eprintln!("closest ball centre to the paddle: {closest} m (r = {r})");
    let turned = world.bodies.as_slice()[0].angle - angle0;
    assert!(turned > 7.0, "the paddle turned only {turned} rad in 4 s");
}

#[test]
fn every_population_scene_loads() {
    for name in ["balls_box", "mixer", "hourglass"] {
        let world = scene(name, &[]).build_world().unwrap();
        assert!(world.population.as_ref().is_some_and(|p| !p.is_empty()), "{name}");
    }
    // vortex has 10⁶ balls: check it at a smaller count.
    let world = scene("vortex", &["population.count=1000"]).build_world().unwrap();
    assert_eq!(world.population.unwrap().len(), 1000);
}
