//! Resting and sliding contact (issue 7, priority 2): Coulomb friction with
//! static and kinetic coefficients, rolling without slipping, slipping,
//! rolling resistance — each against its closed form (DESIGN.md, seed 000).

use glam::DVec2;
use mx2d::body::Body;
use mx2d::contact::{ContactSettings, Material};
use mx2d::integrator::Method;
use mx2d::shape::Shape;
use mx2d::surface::{Surface, SurfaceGeometry};
use mx2d::world::World;

const G: f64 = 9.81;

/// A world with one body resting on a line inclined by `theta` (rising to
/// the left, so gravity pulls the body down-slope towards +x), the body
/// material `body`, the surface material `surface` (mix: minimum).
fn incline(theta: f64, shape: Shape, body: Material, surface: Material, method: Method) -> World {
    let mut w = World::new(DVec2::new(0.0, -G));
    w.dt = 1e-3;
    w.set_integrator(method);
    let n = DVec2::new(theta.sin(), theta.cos());
    let mut s = Surface::new(SurfaceGeometry::Line { point: DVec2::ZERO, normal: n });
    s.friction = surface.friction;
    s.kinetic_friction = surface.kinetic_friction;
    s.restitution = surface.restitution;
    s.rolling_resistance = surface.rolling_resistance;
    w.surfaces.push(s);
    let lift = match &shape {
        Shape::Box { half_extents } => half_extents.y,
        Shape::Circle { radius } => *radius,
        _ => unreachable!(),
    };
    let b = Body::builder("body", shape).mass(2.0).position(n * lift).angle(-theta).build().unwrap();
    w.add_body(b).unwrap();
    w.contacts.settings = ContactSettings { enabled: true, body_materials: vec![body], ..Default::default() };
    w
}

fn down_slope(theta: f64) -> DVec2 {
    DVec2::new(theta.cos(), -theta.sin())
}

fn material(mu_s: f64, mu_k: f64) -> Material {
    Material { friction: mu_s, kinetic_friction: Some(mu_k), restitution: 0.0, rolling_resistance: 0.0 }
}

/// Acceleration along `dir` from velocity differences over steps 100..=400
/// (the first steps settle the static/kinetic switch), after checking it is
/// the same at every step to `tol`.
fn measured_acceleration(w: &mut World, dir: DVec2, tol: f64) -> f64 {
    for _ in 0..100 {
        w.step().unwrap();
    }
    let mut last = w.bodies.as_slice()[0].velocity.dot(dir);
    let mut first_a = None;
    for _ in 0..300 {
        w.step().unwrap();
        let v = w.bodies.as_slice()[0].velocity.dot(dir);
        let a = (v - last) / w.dt;
        last = v;
        let a0 = *first_a.get_or_insert(a);
        assert!((a - a0).abs() < tol, "acceleration not constant: {a} vs {a0}");
    }
    first_a.unwrap_or(0.0)
}

/// A block sticks for tan θ ≤ μ_s and slides with a = g(sin θ − μ_k cos θ)
/// otherwise. 1e-9 m/s²: the block PGS meets the closed form to round-off
/// (velocity differences of ~1e-15 m/s over a 1 ms step give ~1e-12).
#[test]
fn block_on_an_incline_sticks_or_slides_by_coulomb() {
    let theta: f64 = 0.4; // tan θ = 0.4228
    let block = Shape::Box { half_extents: DVec2::new(0.2, 0.1) };
    for method in [Method::Symplectic, Method::Rk4] {
        // Sticks: μ_s = 0.45 ≥ tan θ (μ_k = 0.2 would let it slide: the static one must decide).
        let mut w = incline(theta, block.clone(), material(0.45, 0.2), material(1.0, 1.0), method);
        for _ in 0..1000 {
            w.step().unwrap();
        }
        let b = &w.bodies.as_slice()[0];
        assert!(b.velocity.length() < 1e-9, "{method}: stuck block moves at {}", b.velocity);
        assert!(b.position.dot(down_slope(theta)).abs() < 1e-9, "{method}: crept {}", b.position);
        // Slides: μ_s = 0.4 < tan θ, μ_k = 0.3.
        let mut w = incline(theta, block.clone(), material(0.4, 0.3), material(1.0, 1.0), method);
        let a = measured_acceleration(&mut w, down_slope(theta), 1e-9);
        let expected = G * (theta.sin() - 0.3 * theta.cos());
        assert!((a - expected).abs() < 1e-9, "{method}: sliding block a = {a}, closed form {expected}");
        let b = &w.bodies.as_slice()[0];
        assert!((b.angle + theta).abs() < 1e-9, "{method}: the block tipped: {}", b.angle);
    }
}

/// A disc rolls with a = g sin θ/(1 + J/(m r²)) (⅔ g sin θ) when μ ≥ tan θ/3,
/// and slips otherwise: centre a = g(sin θ − μ_k cos θ), spin-up
/// α = μ_k m g cos θ · r/J. 1e-9 as above.
#[test]
fn disc_on_an_incline_rolls_or_slips() {
    let theta: f64 = 0.5;
    let disc = Shape::Circle { radius: 0.3 };
    let (m, r) = (2.0, 0.3);
    let j = 0.5 * m * r * r;
    for method in [Method::Symplectic, Method::Rk4] {
        let mut w = incline(theta, disc.clone(), material(0.5, 0.5), material(1.0, 1.0), method);
        let a = measured_acceleration(&mut w, down_slope(theta), 1e-9);
        let expected = G * theta.sin() / (1.0 + j / (m * r * r));
        assert!((a - expected).abs() < 1e-9, "{method}: rolling a = {a}, closed form {expected}");
        let b = &w.bodies.as_slice()[0];
        assert!((b.velocity.dot(down_slope(theta)) + b.angular_velocity * r).abs() < 1e-9, "{method}: slips");

        let mu = 0.1; // < tan θ / 3 = 0.182
        let mut w = incline(theta, disc.clone(), material(mu, mu), material(1.0, 1.0), method);
        let a = measured_acceleration(&mut w, down_slope(theta), 1e-9);
        let expected = G * (theta.sin() - mu * theta.cos());
        assert!((a - expected).abs() < 1e-9, "{method}: slipping a = {a}, closed form {expected}");
        let omega0 = w.bodies.as_slice()[0].angular_velocity;
        w.step().unwrap();
        let alpha = (w.bodies.as_slice()[0].angular_velocity - omega0) / w.dt;
        let expected_alpha = -mu * m * G * theta.cos() * r / j;
        assert!((alpha - expected_alpha).abs() < 1e-9, "{method}: α = {alpha}, closed form {expected_alpha}");
    }
}

/// Rolling resistance: a disc rolling on a level floor decelerates at
/// μ_r g/(r(1 + J/(m r²))) (seed 000's torque μ_r N; 1e-9) and then stops
/// and stays stopped (static rolling resistance holds it).
#[test]
fn rolling_resistance_decelerates_then_stops() {
    let (m, r, mu_r) = (2.0, 0.3, 0.01);
    let j = 0.5 * m * r * r;
    let rolling = Material { friction: 1.0, kinetic_friction: None, restitution: 0.0, rolling_resistance: mu_r };
    let mut w = incline(0.0, Shape::Circle { radius: r }, rolling, rolling, Method::Symplectic);
    let v0 = 0.5;
    {
        let b = w.bodies.get_mut(mx2d::body::BodyHandle(0)).unwrap();
        b.velocity = DVec2::new(v0, 0.0);
        b.angular_velocity = -v0 / r;
    }
    let a = measured_acceleration(&mut w, DVec2::X, 1e-9);
    let expected = -mu_r * G / (r * (1.0 + j / (m * r * r)));
    assert!((a - expected).abs() < 1e-9, "rolling-resistance deceleration {a}, closed form {expected}");
    let stop_time = v0 / -expected;
    while w.time() < stop_time + 0.5 {
        w.step().unwrap();
    }
    let b = &w.bodies.as_slice()[0];
    assert!(
        b.velocity.length() < 1e-12 && b.angular_velocity.abs() < 1e-12,
        "still rolling: {} {}",
        b.velocity,
        b.angular_velocity
    );
}
