//! Impacts (issue 7, priority 1): seed 004's bouncing ball, its plastic impact
//! on an incline, its two balls; time of impact on the integrator's own
//! trajectory; the resting threshold.

use glam::DVec2;
use mx2d::contact::impact::two_disc_impact;
use mx2d::scene::Scene;
use mx2d::world::World;

fn load(name: &str) -> World {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes").join(name);
    let scene = Scene::load(&path, &[]).unwrap_or_else(|e| panic!("{e}"));
    scene.build_world().unwrap_or_else(|e| panic!("{e}"))
}

const G: f64 = 9.807;

/// Height of the apex above the floor for the ball's bottom: y − r + v_y²/(2g),
/// constant in free flight (and exactly so under RK4, exact on parabolas).
fn apex(w: &World) -> f64 {
    let b = &w.bodies.as_slice()[0];
    b.position.y - 1.0 + b.velocity.y * b.velocity.y / (2.0 * G)
}

/// Runs until `n` impacts happened (or `t_max`); returns the apex height of
/// every flight (one per impact, plus the first).
fn flights(w: &mut World, n: usize, t_max: f64) -> (Vec<f64>, Vec<mx2d::contact::ImpactEvent>) {
    let mut heights = vec![apex(w)];
    let mut events = Vec::new();
    while events.len() < n && w.time() < t_max {
        w.step().unwrap();
        let new = w.contacts.take_impacts();
        if !new.is_empty() {
            events.extend(new);
            heights.push(apex(w));
        }
    }
    (heights, events)
}

/// Seed 004, e = 0.7: the first impact comes at the root of
/// 5 + t − g t²/2 = 1, and the restitution measured both ways equals e.
/// Tolerances: RK4 is exact on the parabola and the root is refined to
/// 1e-15 h, so 1e-9 on the time and the velocity ratio leaves six orders of
/// margin; the apex ratio uses 1e-6 as the issue asks (it is met to ~1e-12).
#[test]
fn bounce_restitution_and_impact_time_are_exact() {
    let mut w = load("bounce.ron");
    let (heights, events) = flights(&mut w, 4, 10.0);
    assert_eq!(events.len(), 4);
    let t_hit = (1.0 + (1.0f64 + 8.0 * G).sqrt()) / G;
    assert!((events[0].time - t_hit).abs() < 1e-9, "impact at {} vs closed form {t_hit}", events[0].time);
    for e in &events {
        let measured = -e.normal_velocity_after / e.normal_velocity_before;
        assert!((measured - 0.7).abs() < 1e-9, "velocity ratio {measured} (seed 004: 0.708)");
    }
    for k in 1..heights.len() - 1 {
        let ratio = (heights[k + 1] / heights[k]).sqrt();
        assert!((ratio - 0.7).abs() < 1e-6, "apex ratio {ratio} (seed 004: 0.696)");
    }
}

/// e = 1: the apex height is kept over 20 bounces (1e-6 as the issue asks;
/// the impact is exact, so only round-off accumulates).
#[test]
fn elastic_bounce_keeps_its_apex_over_20_bounces() {
    let mut w = load("bounce.ron");
    w.contacts.settings.body_materials[0].restitution = 1.0;
    let (heights, events) = flights(&mut w, 20, 100.0);
    assert_eq!(events.len(), 20);
    for h in &heights {
        assert!((h - heights[0]).abs() < 1e-6, "apex {h} vs {}", heights[0]);
    }
}

/// The resting threshold: e = 0.7 bounces die out, then the ball rests on
/// the floor with no micro-bounces (no impact in the last 5 s), no sinking
/// (|gap| ≤ 1e-12 m: the position update makes the resting contact exact)
/// and no vertical speed.
#[test]
fn bounces_die_out_into_rest_without_micro_bounces() {
    let mut w = load("bounce.ron");
    w.bodies.get_mut(mx2d::body::BodyHandle(0)).unwrap().velocity = DVec2::ZERO;
    while w.time() < 10.0 {
        w.step().unwrap();
    }
    w.contacts.take_impacts();
    while w.time() < 15.0 {
        w.step().unwrap();
        let b = &w.bodies.as_slice()[0];
        assert!((b.position.y - 1.0).abs() < 1e-12, "gap {}", b.position.y - 1.0);
        assert!(b.velocity.y.abs() < 1e-12, "vy {}", b.velocity.y);
    }
    assert!(w.contacts.impacts().is_empty(), "micro-bounces: {:?}", w.contacts.impacts());
}

/// Seed 004's last example: e = 0 on the plane with normal (−2, 10). After
/// the impact the normal velocity is 0 (1e-9), the ball slides without
/// sinking (|gap| ≤ 1e-9 m) and its tangential velocity changes by exactly
/// g·t̂·dt per step (frictionless; 1e-9 m/s² on the acceleration, RK4 and
/// the ½-weighted position update are exact for a constant force).
#[test]
fn plastic_impact_on_an_incline_slides_without_sinking() {
    let mut w = load("bounce_incline.ron");
    let n = DVec2::new(-2.0, 10.0).normalize();
    let t = n.perp();
    let g = DVec2::new(0.0, -G);
    let mut hit = None;
    let mut last_vt: Option<f64> = None;
    while w.time() < 4.0 {
        w.step().unwrap();
        let events = w.contacts.take_impacts();
        if let Some(e) = events.first() {
            assert!(e.normal_velocity_after.abs() < 1e-9, "e = 0 leaves {}", e.normal_velocity_after);
            hit = Some(e.time);
            last_vt = None;
            continue;
        }
        if hit.is_none() {
            continue;
        }
        let b = &w.bodies.as_slice()[0];
        let gap = b.position.dot(n) - 1.0;
        assert!(gap.abs() < 1e-9, "gap {gap} at t = {}", w.time());
        assert!(b.velocity.dot(n).abs() < 1e-9, "normal velocity {}", b.velocity.dot(n));
        let vt = b.velocity.dot(t);
        if let Some(prev) = last_vt {
            let a = (vt - prev) / w.dt;
            assert!((a - g.dot(t)).abs() < 1e-9, "tangential acceleration {a} vs {}", g.dot(t));
        }
        last_vt = Some(vt);
    }
    assert!(hit.is_some(), "the ball never hit the incline");
}

fn two_balls(e: f64, v2: DVec2) -> (World, f64) {
    let mut w = load("two_balls.ron");
    for m in &mut w.contacts.settings.body_materials {
        m.restitution = e;
    }
    w.bodies.get_mut(mx2d::body::BodyHandle(1)).unwrap().velocity = v2;
    // Contact time: |c1 − c2| = 3 with c1 = (0, −5 + 20t), c2 = (15 + v2x t, 5).
    let f = |t: f64| {
        let d = DVec2::new(0.0, -5.0 + 20.0 * t) - DVec2::new(15.0 + v2.x * t, 5.0 + v2.y * t);
        d.length() - 3.0
    };
    let (mut lo, mut hi) = (0.0, 0.5);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if f(mid) > 0.0 { lo = mid } else { hi = mid }
    }
    (w, lo)
}

/// Seed 004 eq. 6: the velocities after the impact equal the closed form
/// (1e-9: no forces, exact linear motion, exact contact time), momentum is
/// conserved to 1e-12 relative, and with e = 0 both balls leave at (−24, 4).
#[test]
fn two_balls_follow_seed_004_equation_6() {
    for e in [1.0, 0.0] {
        let (mut w, t_hit) = two_balls(e, DVec2::new(-30.0, 0.0));
        let p0: DVec2 = w.bodies.iter().map(|b| b.velocity * b.mass).sum();
        while w.time() < 1.0 {
            w.step().unwrap();
        }
        let events = w.contacts.take_impacts();
        assert_eq!(events.len(), 1, "e = {e}: {events:?}");
        assert!((events[0].time - t_hit).abs() < 1e-9, "impact at {} vs {t_hit}", events[0].time);
        let c1 = DVec2::new(0.0, -5.0 + 20.0 * t_hit);
        let c2 = DVec2::new(15.0 - 30.0 * t_hit, 5.0);
        let n = (c1 - c2).normalize();
        let (u1, u2) = two_disc_impact(1.0, DVec2::new(0.0, 20.0), 4.0, DVec2::new(-30.0, 0.0), n, e);
        let b = w.bodies.as_slice();
        assert!((b[0].velocity - u1).length() < 1e-9, "e = {e}: {} vs {u1}", b[0].velocity);
        assert!((b[1].velocity - u2).length() < 1e-9, "e = {e}: {} vs {u2}", b[1].velocity);
        let p1: DVec2 = w.bodies.iter().map(|b| b.velocity * b.mass).sum();
        assert!((p1 - p0).length() < 1e-12 * p0.length(), "momentum {p0} -> {p1}");
        if e == 0.0 {
            for body in b {
                assert!((body.velocity - DVec2::new(-24.0, 4.0)).length() < 1e-9, "{}", body.velocity);
            }
        }
    }
}

/// Seed 004's special case: with v₂ = (−32, 0) the relative velocity at
/// contact is not along the normal, so even with e = 0 the balls separate
/// (never glued): equal normal velocities, different tangential ones.
#[test]
fn plastic_balls_separate_when_their_tangential_velocities_differ() {
    let (mut w, _) = two_balls(0.0, DVec2::new(-32.0, 0.0));
    while w.time() < 1.0 {
        w.step().unwrap();
    }
    let b = w.bodies.as_slice();
    let d = b[0].position - b[1].position;
    assert!(d.length() > 3.0 + 1.0, "still together: distance {}", d.length());
    let events = w.contacts.impacts();
    assert_eq!(events.len(), 1);
    assert!(events[0].normal_velocity_after.abs() < 1e-9, "e = 0: equal normal velocities after");
    assert!((b[0].velocity - b[1].velocity).length() > 1.0);
}

/// Units and mass scale: lengths, speeds and g × 1000 (metres → millimetres)
/// give the same impact time and restitution; masses × 1000 give the same
/// velocities after the two-ball impact (1e-9 relative: the same arithmetic,
/// scaled).
#[test]
fn impacts_do_not_depend_on_units_or_mass_scale() {
    let mut w = load("bounce.ron");
    let k = 1000.0;
    w.gravity *= k;
    let h0 = w.bodies.get_mut(mx2d::body::BodyHandle(0)).unwrap();
    let t_hit = (1.0 + (1.0f64 + 8.0 * G).sqrt()) / G;
    *h0 = mx2d::body::Body::builder("ball", mx2d::shape::Shape::Circle { radius: k })
        .mass(1.0)
        .position(DVec2::new(0.0, 5.0 * k))
        .velocity(DVec2::new(4.0 * k, k))
        .build()
        .unwrap();
    while w.contacts.impacts().is_empty() {
        w.step().unwrap();
    }
    let e = w.contacts.impacts()[0];
    assert!((e.time - t_hit).abs() < 1e-9, "mm: impact at {} vs {t_hit}", e.time);
    assert!((-e.normal_velocity_after / e.normal_velocity_before - 0.7).abs() < 1e-9);

    let (mut light, _) = two_balls(1.0, DVec2::new(-30.0, 0.0));
    let (mut heavy, _) = two_balls(1.0, DVec2::new(-30.0, 0.0));
    for i in 0..2 {
        let b = heavy.bodies.get_mut(mx2d::body::BodyHandle(i)).unwrap();
        b.mass *= k;
        b.inertia *= k;
    }
    while light.time() < 1.0 {
        light.step().unwrap();
        heavy.step().unwrap();
    }
    for (a, b) in light.bodies.iter().zip(heavy.bodies.iter()) {
        assert!((a.velocity - b.velocity).length() < 1e-9 * a.velocity.length(), "{} vs {}", a.velocity, b.velocity);
    }
}
