//! A spinning ellipse bouncing on a floor (issue 7, priority 4): the time
//! of impact against a brute-force sampling of the outline, and Newton's law
//! with the rotational effective mass.

use glam::DVec2;
use mx2d::scene::Scene;
use mx2d::shape::Shape;

/// Lowest point of the ellipse's outline, sampled at 20,000 points, at time
/// t of the free fall (y = 3 − g t²/2, φ = 0.3 + 2t: exact before the first
/// impact). Sampling error ≤ a(1 − cos(π/20,000)) ≈ 1.2e-8 m.
fn sampled_gap(t: f64) -> f64 {
    let shape = Shape::Ellipse { a: 1.0, b: 0.5 };
    let (y, phi) = (3.0 - 0.5 * 9.81 * t * t, 0.3 + 2.0 * t);
    shape.outline(20_000).iter().map(|p| y + DVec2::from_angle(phi).rotate(*p).y).fold(f64::INFINITY, f64::min)
}

#[test]
fn spinning_ellipse_hits_when_sampling_says_and_bounces_by_newtons_law() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/ellipse_bounce.ron");
    let mut w = Scene::load(&path, &[]).unwrap().build_world().unwrap();
    while w.contacts.impacts().is_empty() {
        w.step().unwrap();
        assert!(w.time() < 2.0, "no impact");
    }
    let hit = w.contacts.impacts()[0];
    // Brute force: first sign change of the sampled gap on a 1 ms grid, then bisection.
    let mut t0 = 0.0;
    while sampled_gap(t0 + 1e-3) > 0.0 {
        t0 += 1e-3;
    }
    let (mut lo, mut hi) = (t0, t0 + 1e-3);
    for _ in 0..60 {
        let mid = 0.5 * (lo + hi);
        if sampled_gap(mid) > 0.0 { lo = mid } else { hi = mid }
    }
    // 1.2e-8 m of sampling error at an approach speed of ≈ 7 m/s: 2e-9 s; 1e-8 s allowed.
    assert!((hit.time - lo).abs() < 1e-8, "impact at {} vs sampled {lo}", hit.time);
    // Newton's law at the contact point.
    assert!((hit.normal_velocity_after + 0.8 * hit.normal_velocity_before).abs() < 1e-9, "{hit:?}");
    // The impulse P along n = +y changes v_y by P/m and ω by (r×n)P/J.
    let b = &w.bodies.as_slice()[0];
    let rest = w.time() - hit.time; // free flight after the impact within the step
    let vy_after = b.velocity.y + 9.81 * rest;
    let vy_before = -9.81 * hit.time;
    assert!(
        (vy_after - vy_before - hit.impulse / b.mass).abs() < 1e-9,
        "Δv_y {} vs P/m {}",
        vy_after - vy_before,
        hit.impulse / b.mass
    );
    let centre = DVec2::new(0.0, 3.0 - 0.5 * 9.81 * hit.time * hit.time);
    let r = hit.point - centre;
    let dw = b.angular_velocity - 2.0;
    assert!((dw - r.x * hit.impulse / b.inertia).abs() < 1e-9, "Δω {dw} vs (r×n)P/J {}", r.x * hit.impulse / b.inertia);
}
