//! Newton's cradle (issue 7, priority 4): simultaneous elastic impacts.

use glam::DVec2;
use mx2d::body::BodyHandle;
use mx2d::scene::Scene;
use mx2d::world::World;

fn cradle() -> World {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/newtons_cradle.ron");
    Scene::load(&path, &[]).unwrap_or_else(|e| panic!("{e}")).build_world().unwrap_or_else(|e| panic!("{e}"))
}

/// Runs until the first impact step and returns the speeds after it and the
/// total energies before and after.
fn first_collision(w: &mut World) -> (Vec<f64>, f64, f64) {
    w.prepare().unwrap();
    let e0 = w.energy().total;
    while w.contacts.impacts().is_empty() {
        w.step().unwrap();
        assert!(w.time() < 2.0, "no impact");
    }
    let speeds = w.bodies.iter().map(|b| b.velocity.length()).collect();
    (speeds, e0, w.energy().total)
}

/// One ball in, one ball out: after the impact step balls 0–3 are at rest
/// (1e-9 m/s: the propagation hands the whole momentum on, e = 1, equal
/// masses), ball 4 leaves, and the energy is kept to 1e-9 relative (RK4 on
/// the pendulums, exact elastic impulses).
#[test]
fn one_ball_out_four_at_rest() {
    let mut w = cradle();
    let (speeds, e0, e1) = first_collision(&mut w);
    for (i, s) in speeds.iter().enumerate().take(4) {
        assert!(*s < 1e-9, "ball {i} moves at {s}");
    }
    assert!(speeds[4] > 1.9, "ball 4 leaves at {}", speeds[4]);
    assert!((e1 - e0).abs() < 1e-9 * e0.abs(), "energy {e0} -> {e1}");
    for e in w.contacts.impacts() {
        assert!((e.normal_velocity_after + e.normal_velocity_before).abs() < 1e-9, "{e:?}");
    }
}

/// Two in, two out: balls 0 and 1 raised together (touching, same angle)
/// leave balls 0–2 at rest and send 3 and 4 out at the same speed.
#[test]
fn two_balls_out_two_at_the_other_end() {
    let mut w = cradle();
    // Raise ball 1 to 30° beside ball 0: anchor (0.5, 2), string 1.5.
    let a = 30f64.to_radians();
    w.bodies.get_mut(BodyHandle(1)).unwrap().position = DVec2::new(0.5 - 1.5 * a.sin(), 2.0 - 1.5 * a.cos());
    let (speeds, e0, e1) = first_collision(&mut w);
    for (i, s) in speeds.iter().enumerate().take(3) {
        assert!(*s < 1e-9, "ball {i} moves at {s}");
    }
    assert!(speeds[3] > 1.9 && (speeds[3] - speeds[4]).abs() < 1e-9, "balls 3, 4: {} {}", speeds[3], speeds[4]);
    assert!((e1 - e0).abs() < 1e-9 * e0.abs(), "energy {e0} -> {e1}");
}
