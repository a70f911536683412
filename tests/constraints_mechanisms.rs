//! Constrained mechanisms against closed forms (DESIGN.md "Validation
//! references") and conservation laws.

use glam::DVec2;
use mx2d::body::{Body, BodyHandle};
use mx2d::constraint::{Constraint, ConstraintKind};
use mx2d::integrator::Method;
use mx2d::math::elliptic_k;
use mx2d::shape::Shape;
use mx2d::world::World;

fn pin(
    name: &str,
    a: BodyHandle,
    b: Option<BodyHandle>,
    anchor_a: DVec2,
    anchor_b: DVec2,
) -> Constraint {
    Constraint {
        name: name.into(),
        body_a: a,
        body_b: b,
        kind: ConstraintKind::Revolute { anchor_a, anchor_b },
    }
}

/// A uniform bar of length L pivoted at one end, released from θ₀ at rest.
/// Measures the period from successive upward zero crossings of ω
/// (linear interpolation between steps).
fn bar_pendulum_period(length: f64, theta0: f64, method: Method, dt: f64) -> f64 {
    let mut w = World::new(DVec2::new(0.0, -9.81));
    w.dt = dt;
    w.set_integrator(method);
    // The bar hangs along −y at θ = 0; its centre is L/2 from the pivot.
    let dir = DVec2::new(theta0.sin(), -theta0.cos());
    let bar = w
        .add_body(
            Body::builder("bar", Shape::Bar { length, width: 0.0 })
                .mass(2.0)
                .position(dir * (length / 2.0))
                .angle(theta0 - std::f64::consts::FRAC_PI_2)
                .build()
                .expect("bar"),
        )
        .expect("add");
    w.add_constraint(pin(
        "pivot",
        bar,
        None,
        DVec2::new(-length / 2.0, 0.0),
        DVec2::ZERO,
    ))
    .expect("pin");
    let mut crossings = Vec::new();
    let mut prev = w.body(bar).angular_velocity;
    while crossings.len() < 3 {
        w.step().expect("step");
        let now = w.body(bar).angular_velocity;
        if prev < 0.0 && now >= 0.0 {
            crossings.push(w.time() - dt * now / (now - prev));
        }
        prev = now;
    }
    crossings[2] - crossings[1]
}

#[test]
fn bar_pendulum_small_angle_period() {
    let (l, g): (f64, f64) = (1.2, 9.81);
    let expected = std::f64::consts::TAU * (2.0 * l / (3.0 * g)).sqrt();
    // θ₀ = 1e-3 rad: the amplitude correction θ₀²/16 ≈ 6e-8 is below the tolerance.
    let t = bar_pendulum_period(l, 1e-3, Method::Rk4, 1e-4);
    assert!((t - expected).abs() / expected < 1e-6, "{t} vs {expected}");
}

#[test]
fn bar_pendulum_large_amplitude_period_elliptic_integral() {
    let (l, g, m): (f64, f64, f64) = (1.2, 9.81, 2.0);
    let theta0: f64 = 2.0;
    // T = 4 √(I_O/(m g d)) K(sin(θ₀/2)), I_O = m L²/3, d = L/2.
    let expected =
        4.0 * ((m * l * l / 3.0) / (m * g * l / 2.0)).sqrt() * elliptic_k((theta0 / 2.0).sin());
    let t = bar_pendulum_period(l, theta0, Method::Rk4, 1e-4);
    assert!((t - expected).abs() / expected < 1e-6, "{t} vs {expected}");
}
