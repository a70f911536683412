//! Constrained mechanisms against closed forms (DESIGN.md "Validation
//! references") and conservation laws.

use glam::DVec2;
use mx2d::body::{Body, BodyHandle};
use mx2d::constraint::{Constraint, ConstraintKind};
use mx2d::integrator::Method;
use mx2d::math::elliptic_k;
use mx2d::shape::Shape;
use mx2d::world::World;

fn pin(name: &str, a: BodyHandle, b: Option<BodyHandle>, anchor_a: DVec2, anchor_b: DVec2) -> Constraint {
    Constraint { name: name.into(), body_a: a, body_b: b, kind: ConstraintKind::Revolute { anchor_a, anchor_b } }
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
    w.add_constraint(pin("pivot", bar, None, DVec2::new(-length / 2.0, 0.0), DVec2::ZERO)).expect("pin");
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
    let expected = 4.0 * ((m * l * l / 3.0) / (m * g * l / 2.0)).sqrt() * elliptic_k((theta0 / 2.0).sin());
    let t = bar_pendulum_period(l, theta0, Method::Rk4, 1e-4);
    assert!((t - expected).abs() / expected < 1e-6, "{t} vs {expected}");
}

use mx2d::scene::Scene;
use mx2d::surface::{Surface, SurfaceGeometry};

fn scene_world(name: &str, overrides: &[&str]) -> World {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes").join(name);
    let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    let scene = Scene::load(&path, &overrides).unwrap_or_else(|e| panic!("{e}"));
    let mut w = scene.build_world().unwrap_or_else(|e| panic!("{e}"));
    w.prepare().expect("consistent initial state");
    w
}

/// A disc of radius r rolling without slipping on a line, pushed by a
/// horizontal force F at its centre and a counter-clockwise torque M:
/// ẍ = (F r² − M r)/(m r² + J) (seed 000's formula with φ clockwise; DESIGN.md).
fn wheel_acceleration(scale: f64, f: f64, m_torque: f64, inertia: f64) -> f64 {
    let (mass, r) = (2.0, 0.5 * scale);
    let mut w = World::new(DVec2::new(0.0, -9.81 * scale));
    w.set_integrator(Method::Rk4);
    w.dt = 1e-3;
    w.surfaces.push(Surface::new(SurfaceGeometry::Line { point: DVec2::ZERO, normal: DVec2::Y }));
    let wheel = w
        .add_body(
            Body::builder("wheel", Shape::Circle { radius: r })
                .mass(mass)
                .inertia(inertia * scale * scale)
                .position(DVec2::new(0.0, r))
                .build()
                .expect("wheel"),
        )
        .expect("add");
    w.add_constraint(Constraint {
        name: "rolling".into(),
        body_a: wheel,
        body_b: None,
        kind: ConstraintKind::Rolling { surface: 0, sliding: false },
    })
    .expect("rolling");
    w.loads.push(mx2d::load::Load::Force {
        body: wheel,
        force: DVec2::new(f * scale, 0.0),
        point: DVec2::ZERO,
        body_frame: false,
        profile: mx2d::load::Profile::Constant,
    });
    w.loads.push(mx2d::load::Load::Torque {
        body: wheel,
        torque: m_torque * scale * scale,
        profile: mx2d::load::Profile::Constant,
    });
    // Simulate 1 s: x(1) = ẍ/2 exactly (constant acceleration), so the
    // trajectory checks the closed form too, not only the first solve.
    for _ in 0..1000 {
        w.step().expect("step");
    }
    2.0 * w.body(wheel).position.x / scale
}

#[test]
fn seed_000_wheel_closed_form_and_unit_invariance() {
    let (m, r) = (2.0, 0.5);
    for (f, torque, j) in [(2.0, 0.0, 0.25), (0.0, -1.0, 0.25), (2.0, -1.0, 0.1), (-3.0, 0.7, 0.6)] {
        let expected = (f * r * r - torque * r) / (m * r * r + j);
        let got = wheel_acceleration(1.0, f, torque, j);
        assert!((got - expected).abs() <= 1e-9 * expected.abs(), "F={f} M={torque} J={j}: {got} vs {expected}");
        let mm = wheel_acceleration(1000.0, f, torque, j);
        assert!((mm - got).abs() <= 1e-9 * got.abs(), "millimetres: {mm} vs metres {got}");
    }
}

/// Disc (J = ½ m r²) and hoop (J = m r²) rolling down a 30° incline:
/// a = g sin θ/(1 + J/(m r²)) = ⅔ g sin θ and ½ g sin θ.
#[test]
fn rolling_disc_and_hoop_on_an_incline() {
    let theta: f64 = 30f64.to_radians();
    let normal = DVec2::new(-theta.sin(), theta.cos());
    for (k, expected_factor) in [(0.5, 2.0 / 3.0), (1.0, 0.5)] {
        let (m, r) = (1.5, 0.3);
        let mut w = World::new(DVec2::new(0.0, -9.81));
        w.set_integrator(Method::Rk4);
        w.surfaces.push(Surface::new(SurfaceGeometry::Line { point: DVec2::ZERO, normal }));
        let b = w
            .add_body(
                Body::builder("roller", Shape::Circle { radius: r })
                    .mass(m)
                    .inertia(k * m * r * r)
                    .position(normal * r)
                    .build()
                    .expect("body"),
            )
            .expect("add");
        w.add_constraint(Constraint {
            name: "roll".into(),
            body_a: b,
            body_b: None,
            kind: ConstraintKind::Rolling { surface: 0, sliding: false },
        })
        .expect("constraint");
        let a = w.accelerations().expect("solve");
        // Down the slope (which rises to the right) is perp(n) = (−cos θ, −sin θ).
        let along = DVec2::new(a[0], a[1]).dot(normal.perp());
        let expected = expected_factor * 9.81 * theta.sin();
        assert!((along - expected).abs() < 1e-12 * expected, "J = {k} m r²: {along} vs {expected}");
        // No slip: |α| r equals the acceleration along the slope.
        assert!((a[2].abs() * r - expected).abs() < 1e-12 * expected);
    }
}

/// An ellipse (a horizontal > b vertical) rocking on a floor without
/// slipping: small-oscillation ω² = 4 g (a² − b²)/(b (a² + 5 b²)). Amplitude
/// 1e-3 rad keeps the nonlinear period shift (~θ₀²) below the 1e-5 tolerance.
#[test]
fn ellipse_rocking_small_oscillation_frequency() {
    let (a, b, g): (f64, f64, f64) = (0.5, 0.3, 9.81);
    let omega = (4.0 * g * (a * a - b * b) / (b * (a * a + 5.0 * b * b))).sqrt();
    let phi0: f64 = 1e-3;
    let mut w = World::new(DVec2::new(0.0, -g));
    w.set_integrator(Method::Rk4);
    w.dt = 2e-4;
    w.surfaces.push(Surface::new(SurfaceGeometry::Line { point: DVec2::ZERO, normal: DVec2::Y }));
    let height = (a * a * phi0.sin().powi(2) + b * b * phi0.cos().powi(2)).sqrt();
    let e = w
        .add_body(
            Body::builder("ellipse", Shape::Ellipse { a, b })
                .mass(1.0)
                .angle(phi0)
                .position(DVec2::new(0.0, height))
                .build()
                .expect("ellipse"),
        )
        .expect("add");
    w.add_constraint(Constraint {
        name: "roll".into(),
        body_a: e,
        body_b: None,
        kind: ConstraintKind::Rolling { surface: 0, sliding: false },
    })
    .expect("constraint");
    w.prepare().expect("prepare");
    let mut crossings = Vec::new();
    let mut prev = w.body(e).angular_velocity;
    while crossings.len() < 3 {
        w.step().expect("step");
        let now = w.body(e).angular_velocity;
        if prev < 0.0 && now >= 0.0 {
            crossings.push(w.time() - w.dt * now / (now - prev));
        }
        prev = now;
    }
    let period = crossings[2] - crossings[1];
    let expected = std::f64::consts::TAU / omega;
    assert!((period - expected).abs() / expected < 1e-5, "{period} vs {expected}");
}

/// Internal constraint forces do no work: the total energy of the
/// conservative seed scenes stays within 1e-8 relative over 10 s (RK4 +
/// projection; the scale is max(|E₀|, the kinetic energy reached), since E₀
/// can be near zero for potential referenced at the pivot).
#[test]
fn conservative_mechanisms_keep_their_energy() {
    for name in ["coupled_ellipses.ron", "ellipses_on_ellipse.ron", "four_bar.ron", "double_pendulum.ron"] {
        let mut w = scene_world(name, &["duration=10.0"]);
        assert_eq!(w.integrator(), Method::Rk4, "{name}");
        let e0 = w.energy().total;
        let (mut worst, mut scale) = (0.0f64, e0.abs());
        let steps = (10.0 / w.dt).round() as usize;
        for _ in 0..steps {
            w.step().unwrap_or_else(|e| panic!("{name}: {e}"));
            let e = w.energy();
            worst = worst.max((e.total - e0).abs());
            scale = scale.max(e.kinetic);
        }
        assert!(worst <= 1e-8 * scale, "{name}: energy error {worst:e} vs scale {scale:e}");
    }
}

/// Drift: with projection max |C| ≤ 1e-10 over 10⁵ steps of a 20-link chain
/// and of the four-bar; without it, the same runs drift well past that.
#[test]
fn projection_holds_the_constraints_without_it_they_drift() {
    for (name, extra) in [("chain.ron", "chains[0].links=20"), ("four_bar.ron", "dt=0.001")] {
        let mut worst = [0.0f64; 2];
        for (k, projection) in [true, false].into_iter().enumerate() {
            let mut w = scene_world(name, &[extra, &format!("stabilization=(projection: {projection})")]);
            for _ in 0..100_000 {
                w.step().unwrap_or_else(|e| panic!("{name}: {e}"));
                if w.step_count().is_multiple_of(100) {
                    worst[k] = worst[k].max(w.constraint_error());
                }
            }
        }
        assert!(worst[0] <= 1e-10, "{name}: with projection max |C| = {:e}", worst[0]);
        assert!(worst[1] > 1e3 * worst[0].max(1e-12), "{name}: without projection only {:e}", worst[1]);
    }
}

/// A four-bar with one pin listed twice moves exactly like the one without:
/// the duplicate makes A singular; the regularised minimal-norm λ gives the
/// same accelerations, and the duplicate is named in a warning.
#[test]
fn a_duplicated_constraint_changes_nothing_and_is_named() {
    let mut plain = scene_world("four_bar.ron", &[]);
    let text = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/four_bar.ron"))
        .expect("scene");
    let doubled = text.replace(
        "Revolute(name: \"rocker_ground\"",
        "Revolute(name: \"rocker_ground_again\", a: \"rocker\", at: (2.000000, 0.000000)),\n        Revolute(name: \"rocker_ground\"",
    );
    let scene = Scene::parse(&doubled, "doubled").expect("parses");
    let mut twice = scene.build_world().expect("builds");
    twice.prepare().expect("prepare");
    for _ in 0..2000 {
        plain.step().expect("plain");
        twice.step().expect("doubled");
    }
    for (p, q) in plain.bodies.iter().zip(twice.bodies.iter()) {
        assert!((p.position - q.position).length() < 1e-9, "{}: {} vs {}", p.name, p.position, q.position);
        assert!((p.angle - q.angle).abs() < 1e-9);
    }
    let warnings: Vec<_> = twice.warnings().cloned().collect();
    assert!(warnings.iter().any(|w| w.contains("rocker_ground")), "{warnings:?}");
}

/// A linkage at a singular position: two bars in a straight line between two
/// world pins exactly their total length apart. The six pin rows have rank
/// five (the middle pin may move sideways to first order) and gravity asks
/// for what they cannot give: no crash, no NaN, and a warning names the
/// constraints involved.
#[test]
fn singular_linkage_runs_without_nan_and_warns() {
    let mut w = World::new(DVec2::new(0.0, -9.81));
    w.set_integrator(Method::Rk4);
    let bar = |name: &str, x: f64| {
        Body::builder(name, Shape::Bar { length: 1.0, width: 0.02 }).mass(1.0).position(DVec2::new(x, 0.0)).build()
    };
    let left = w.add_body(bar("left", 0.5).expect("bar")).expect("add");
    let right = w.add_body(bar("right", 1.5).expect("bar")).expect("add");
    let half = DVec2::new(0.5, 0.0);
    w.add_constraint(pin("wall_left", left, None, -half, DVec2::ZERO)).expect("pin");
    w.add_constraint(pin("middle", right, Some(left), -half, half)).expect("pin");
    w.add_constraint(pin("wall_right", right, None, half, DVec2::new(2.0, 0.0))).expect("pin");
    for _ in 0..200 {
        w.step().expect("no failure at the singular position");
    }
    for b in w.bodies.iter() {
        assert!(b.position.is_finite() && b.velocity.is_finite() && b.angle.is_finite(), "{}", b.name);
    }
    let warnings: Vec<_> = w.warnings().cloned().collect();
    assert!(
        warnings.iter().any(|m| m.contains("wall_left") || m.contains("middle") || m.contains("wall_right")),
        "{warnings:?}"
    );
}

/// `World::constraints` is public: a constraint inserted there directly,
/// past `World::add_constraint`'s check, that names a body or a surface the
/// world does not have must stop the step (and the queries) with the
/// constraint's name — it indexed the body list out of range and panicked
/// before. A valid set inserted the same way steps as usual, and removing
/// the bad constraint lets the world go on.
#[test]
fn a_constraint_inserted_past_add_constraint_is_checked_before_it_is_used() {
    let mut w = World::new(DVec2::new(0.0, -9.81));
    let bob = w
        .add_body(
            Body::builder("bob", Shape::Circle { radius: 0.1 })
                .mass(1.0)
                .position(DVec2::new(1.0, 0.0))
                .build()
                .expect("bob"),
        )
        .expect("add");
    // valid, inserted directly: steps
    w.constraints.insert(pin("rod", bob, None, DVec2::new(-1.0, 0.0), DVec2::ZERO));
    w.step().expect("a valid directly inserted pin steps");
    // a pin to body 7 of a world of one body
    let bad = w.constraints.insert(pin("to_nowhere", bob, Some(BodyHandle(7)), DVec2::ZERO, DVec2::ZERO));
    let err = w.step().expect_err("a pin to a missing body must be refused").to_string();
    assert!(err.contains("to_nowhere") && err.contains("does not exist"), "{err}");
    assert_eq!(w.step_count(), 1, "the refused step did not run");
    let err = w.accelerations().expect_err("the query is refused too").to_string();
    assert!(err.contains("to_nowhere"), "{err}");
    assert!(w.constraint_error().is_nan());
    // rolling on a surface that does not exist
    w.constraints.remove(bad).expect("the last one");
    let rolling = w.constraints.insert(Constraint {
        name: "on_air".into(),
        body_a: bob,
        body_b: None,
        kind: ConstraintKind::Rolling { surface: 3, sliding: false },
    });
    let err = w.step().expect_err("rolling on a missing surface must be refused").to_string();
    assert!(err.contains("on_air") && err.contains("surface index 3"), "{err}");
    // without it the world goes on
    w.constraints.remove(rolling).expect("the last one");
    w.step().expect("steps again");
    assert_eq!(w.step_count(), 2);
}

/// A body inserted into `World::bodies` directly, past `World::add_body`
/// (which restarts the integrator), between steps of a multistep method:
/// AB4's history was of one body fewer and indexed past its end (a panic).
/// The world restarts the history; the new body then falls freely, to the
/// closed form y = −g t²/2 within the start-up steps' error (AB4 restarts
/// with RK4, exact for a constant acceleration: 1e-12 m).
#[test]
fn a_body_inserted_past_add_body_restarts_the_multistep_history() {
    for method in [Method::Ab4, Method::Rk4, Method::Dopri5, Method::Sdirk3] {
        let mut w = World::new(DVec2::new(0.0, -9.81));
        w.dt = 1e-3;
        w.set_integrator(method);
        w.add_body(Body::builder("a", Shape::Circle { radius: 0.1 }).mass(1.0).build().expect("a")).expect("add");
        for _ in 0..5 {
            w.step().expect("step");
        }
        let b = Body::builder("b", Shape::Circle { radius: 0.1 }).mass(1.0).position(DVec2::new(3.0, 0.0)).build();
        w.bodies.insert(b.expect("b")).expect("insert");
        for _ in 0..20 {
            w.step().unwrap_or_else(|e| panic!("{method:?}: {e}"));
        }
        let t = 20.0 * w.dt;
        let y = w.bodies.as_slice()[1].position.y;
        assert!((y + 0.5 * 9.81 * t * t).abs() < 1e-12, "{method:?}: y = {y}, closed form {}", -0.5 * 9.81 * t * t);
    }
}
