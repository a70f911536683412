//! Inverse kinematics, inverse dynamics, impulsive constraints, user
//! constraints and the remaining joint kinds against closed forms.

use std::sync::Arc;

use glam::DVec2;
use mx2d::body::Body;
use mx2d::constraint::{Constraint, ConstraintKind, Drive, UserConstraint};
use mx2d::integrator::Method;
use mx2d::inverse::{IkSettings, inverse_kinematics, joint_torques};
use mx2d::load::{Load, Profile};
use mx2d::scene::Scene;
use mx2d::shape::Shape;
use mx2d::world::World;

fn scene_world(name: &str, overrides: &[&str]) -> World {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes").join(name);
    let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    let mut w = Scene::load(&path, &overrides).and_then(|s| s.build_world()).unwrap_or_else(|e| panic!("{e}"));
    w.prepare().expect("prepare");
    w
}

/// The ragdoll's right hand reaches a target 1.5 m away (the arm straightens
/// and the whole floating figure must be dragged along). Far from it the
/// steps are capped (the walk is gradient-like); near it Newton converges
/// quadratically: once the residual is below 1e-3, each residual is at most
/// 10× the square of the previous one (until rounding, 1e-13).
#[test]
fn ragdoll_hand_reaches_a_far_target() {
    let mut w = scene_world("ragdoll.ron", &[]);
    let hand = w.bodies.find("hand_r").expect("hand");
    let target = w.body(hand).position + DVec2::new(0.6, 1.4);
    let settings = IkSettings { max_step: 0.05, max_iterations: 2000, ..Default::default() };
    let report = inverse_kinematics(&mut w, hand, DVec2::ZERO, target, &settings).expect("ik");
    assert!(report.converged, "{:?}", &report.residuals);
    assert!((w.body(hand).position - target).length() < 1e-12);
    assert!(w.constraint_error() < 1e-12, "joints broken: {}", w.constraint_error());
    // Bounded phase: while far away, the target point closes in by at most
    // max_step per iteration (plus second-order terms), and always closes in.
    let far: Vec<_> = report.distances.windows(2).filter(|d| d[0] > 0.2).collect();
    assert!(far.len() >= 10, "expected a bounded phase: {:?}", report.distances);
    for d in far {
        let closed = d[0] - d[1];
        assert!(closed > 0.0 && closed < 0.055, "bounded step: {:?}", report.distances);
    }
    let r = &report.residuals;
    let quadratic: Vec<_> = r.windows(2).filter(|p| p[0] < 3e-4 && p[0] > 1e-13).collect();
    assert!(!quadratic.is_empty(), "{r:?}");
    for p in quadratic {
        // r_{k+1} ≤ C r_k² with C = 100 /m (the curvature of the joint
        // constraints over the figure's size), plus rounding.
        assert!(p[1] <= 100.0 * p[0] * p[0] + 1e-13, "not quadratic: {r:?}");
    }
}

/// Inverse dynamics of a 3-link hanging chain: motors prescribe each joint's
/// angle θᵢ(t) = θᵢ₀ + 0.3 sin(2π fᵢ t); their torques are recorded, then
/// replayed as time-tabulated torques on the chain without motors. The
/// replayed joint angles follow the prescription to 1e-4 rad (3e-4 of the
/// 0.3 rad amplitude) over 1 s: the torque table is linearly interpolated
/// between 1 ms samples inside the RK4 stages, a force error ~h²τ″/8 that the
/// open-loop replay integrates twice.
#[test]
fn replayed_joint_torques_reproduce_the_prescribed_motion() {
    let base = scene_world(
        "chain.ron",
        &["chains[0].links=3", "chains[0].link_length=0.4", "chains[0].link_mass=1.0", "dt=0.001"],
    );
    let links: Vec<_> = (0..3).map(|k| base.bodies.find(&format!("link{k}")).expect("link")).collect();
    let mut driven = base.clone();
    let mut motors = Vec::new();
    for (k, &link) in links.iter().enumerate() {
        let parent = if k == 0 { None } else { Some(links[k - 1]) };
        let initial = driven.body(link).angle - parent.map_or(0.0, |p| driven.body(p).angle);
        motors.push(
            driven
                .add_constraint(Constraint {
                    name: format!("motor{k}"),
                    body_a: link,
                    body_b: parent,
                    kind: ConstraintKind::Motor {
                        drive: Drive::Oscillate { amplitude: 0.3, frequency: 0.5 + 0.2 * k as f64, phase: 0.0 },
                        initial,
                    },
                })
                .expect("motor"),
        );
    }
    let steps = 1000;
    // The motors set the initial joint velocities too (prepare() projects the
    // state onto them): the replay starts from that state, without motors.
    driven.prepare().expect("prepare");
    let mut replay = driven.clone();
    for &m in motors.iter().rev() {
        replay.constraints.remove(m).expect("motor removed");
    }
    let torques = joint_torques(&mut driven, &motors, steps).expect("torques");
    for (k, &link) in links.iter().enumerate() {
        let table: Vec<(f64, f64)> = torques.iter().enumerate().map(|(i, t)| (i as f64 * 1e-3, t[k])).collect();
        replay.loads.push(Load::Torque { body: link, torque: 1.0, profile: Profile::Table { points: table.clone() } });
        if k > 0 {
            let reaction = table.iter().map(|&(t, v)| (t, -v)).collect();
            replay.loads.push(Load::Torque {
                body: links[k - 1],
                torque: 1.0,
                profile: Profile::Table { points: reaction },
            });
        }
    }
    let initial: Vec<f64> = links.iter().map(|&l| replay.body(l).angle).collect();
    for i in 1..=steps {
        replay.step().expect("replay");
        let t = i as f64 * 1e-3;
        for (k, &link) in links.iter().enumerate() {
            let rel =
                |w: &World, k: usize| w.body(links[k]).angle - if k == 0 { 0.0 } else { w.body(links[k - 1]).angle };
            let rel0 = initial[k] - if k == 0 { 0.0 } else { initial[k - 1] };
            let prescribed = rel0 + 0.3 * (std::f64::consts::TAU * (0.5 + 0.2 * k as f64) * t).sin();
            let _ = link;
            assert!(
                (rel(&replay, k) - prescribed).abs() < 1e-4,
                "joint {k} at t = {t}: {} vs {prescribed}",
                rel(&replay, k)
            );
        }
    }
}

fn falling_bar() -> (World, mx2d::body::BodyHandle) {
    let mut w = World::new(DVec2::ZERO);
    let bar = w
        .add_body(
            Body::builder("bar", Shape::Bar { length: 2.0, width: 0.0 })
                .mass(3.0)
                .velocity(DVec2::new(0.0, -4.0))
                .build()
                .expect("bar"),
        )
        .expect("add");
    (w, bar)
}

/// A bar falling flat at speed v is caught by a pin at its end. Absorbing
/// (factor 1): angular momentum about the pin is kept, ω = 3v/(2L), and
/// ¾ of the kinetic energy remains. Elastic (factor 2): the pin's velocity
/// reverses and the kinetic energy is unchanged.
#[test]
fn impulsive_pin_absorbing_and_elastic() {
    for (factor, ratio) in [(1.0, 0.75), (2.0, 1.0)] {
        let (mut w, bar) = falling_bar();
        let pin = Constraint {
            name: "catch".into(),
            body_a: bar,
            body_b: None,
            kind: ConstraintKind::Revolute { anchor_a: DVec2::new(-1.0, 0.0), anchor_b: DVec2::new(-1.0, 0.0) },
        };
        let (before, after) = w.impulsive_constraint(pin, factor, false).expect("impulse");
        assert!((after / before - ratio).abs() < 1e-12, "factor {factor}: {after}/{before}");
        let end_velocity = w.body(bar).point_velocity(DVec2::new(-1.0, 0.0));
        let expected = DVec2::new(0.0, -4.0) * (1.0 - factor);
        assert!((end_velocity - expected).length() < 1e-12, "factor {factor}: {end_velocity}");
    }
    let (mut w, bar) = falling_bar();
    let pin = Constraint {
        name: "catch".into(),
        body_a: bar,
        body_b: None,
        kind: ConstraintKind::Revolute { anchor_a: DVec2::new(-1.0, 0.0), anchor_b: DVec2::new(-1.0, 0.0) },
    };
    w.impulsive_constraint(pin, 1.0, false).expect("impulse");
    // Clockwise (negative): the free end keeps falling about the pin.
    assert!((w.body(bar).angular_velocity + 3.0 * 4.0 / (2.0 * 2.0)).abs() < 1e-12);
}

/// A bead on the curve x = cos(y) (seed 003's "exotic constraint"), given as
/// closures with the gradient: it stays on the curve (projection, 1e-10) and
/// its energy is conserved up to the integrator's error, which falls with the
/// fourth power of the step (RK4; ratio > 10 for a halved step, 16 in theory)
/// and is below 1e-6 relative at h = 0.5 ms.
#[test]
fn user_constraint_x_equals_cos_y() {
    let drift = |dt: f64| {
        let mut w = World::new(DVec2::new(0.0, -9.81));
        w.set_integrator(Method::Rk4);
        w.dt = dt;
        let bead = w
            .add_body(
                Body::builder("bead", Shape::Circle { radius: 0.05 })
                    .mass(0.2)
                    .position(DVec2::new(1.0f64.cos(), 1.0))
                    .build()
                    .expect("bead"),
            )
            .expect("add");
        let curve = UserConstraint {
            value: Arc::new(|q: &[f64; 6], _t: f64| q[0] - q[1].cos()),
            gradient: Arc::new(|q: &[f64; 6], _t: f64| [1.0, q[1].sin(), 0.0, 0.0, 0.0, 0.0, 0.0]),
        };
        w.add_constraint(Constraint {
            name: "x=cos(y)".into(),
            body_a: bead,
            body_b: None,
            kind: ConstraintKind::User(curve),
        })
        .expect("user");
        let e0 = w.energy().total;
        for _ in 0..(5.0 / dt).round() as usize {
            w.step().expect("step");
            let p = w.body(bead).position;
            assert!((p.x - p.y.cos()).abs() < 1e-10);
        }
        assert!(w.body(bead).position.y < 0.0, "the bead slid down");
        (w.energy().total - e0).abs() / e0.abs()
    };
    let (coarse, fine) = (drift(1e-3), drift(5e-4));
    assert!(coarse / fine > 10.0, "energy error should fall as h⁴: {coarse:e} -> {fine:e}");
    assert!(fine < 1e-6, "{fine:e}");
}

/// Two discs pinned at their centres and geared with ratio k: a torque M on
/// the first gives α_a = M/(J_a + J_b/k²) and α_b = −α_a/k.
#[test]
fn gear_ratio_closed_form() {
    let mut w = World::new(DVec2::ZERO);
    let disc = |name: &str, r: f64, x: f64| {
        Body::builder(name, Shape::Circle { radius: r }).mass(2.0).position(DVec2::new(x, 0.0)).build().expect("disc")
    };
    let a = w.add_body(disc("a", 0.2, 0.0)).expect("a");
    let b = w.add_body(disc("b", 0.5, 1.0)).expect("b");
    for (h, x) in [(a, 0.0), (b, 1.0)] {
        w.add_constraint(Constraint {
            name: "axle".into(),
            body_a: h,
            body_b: None,
            kind: ConstraintKind::Revolute { anchor_a: DVec2::ZERO, anchor_b: DVec2::new(x, 0.0) },
        })
        .expect("axle");
    }
    let k = 2.5;
    w.add_constraint(Constraint {
        name: "mesh".into(),
        body_a: a,
        body_b: Some(b),
        kind: ConstraintKind::Gear { ratio: k, offset: 0.0 },
    })
    .expect("gear");
    w.loads.push(Load::Torque { body: a, torque: 0.7, profile: Profile::Constant });
    let acc = w.accelerations().expect("solve");
    let (ja, jb) = (w.body(a).inertia, w.body(b).inertia);
    let alpha_a = 0.7 / (ja + jb / (k * k));
    assert!((acc[2] - alpha_a).abs() < 1e-12 * alpha_a);
    assert!((acc[5] + alpha_a / k).abs() < 1e-12 * alpha_a);
}

/// A block on a frictionless 25° slider (prismatic joint to the world)
/// accelerates at g sin θ along it; a welded pair pushed by F accelerates at
/// F/(m₁ + m₂) without turning.
#[test]
fn prismatic_slide_and_weld() {
    let theta: f64 = 25f64.to_radians();
    let mut w = World::new(DVec2::new(0.0, -9.81));
    let block = w
        .add_body(
            Body::builder("block", Shape::Box { half_extents: DVec2::new(0.2, 0.1) }).mass(1.3).build().expect("block"),
        )
        .expect("add");
    let axis = DVec2::new(theta.cos(), theta.sin());
    w.add_constraint(Constraint {
        name: "rail".into(),
        body_a: block,
        body_b: None,
        kind: ConstraintKind::Prismatic { anchor_a: DVec2::ZERO, anchor_b: DVec2::ZERO, axis, angle: 0.0 },
    })
    .expect("rail");
    let a = w.accelerations().expect("solve");
    assert!((DVec2::new(a[0], a[1]).dot(axis) + 9.81 * theta.sin()).abs() < 1e-12);
    assert!(DVec2::new(a[0], a[1]).perp_dot(axis).abs() < 1e-12 && a[2].abs() < 1e-12);

    let mut w = World::new(DVec2::ZERO);
    let one =
        w.add_body(Body::builder("one", Shape::Circle { radius: 0.1 }).mass(1.0).build().expect("one")).expect("add");
    let two = w
        .add_body(
            Body::builder("two", Shape::Circle { radius: 0.1 })
                .mass(3.0)
                .position(DVec2::new(0.4, 0.0))
                .build()
                .expect("two"),
        )
        .expect("add");
    w.add_constraint(Constraint {
        name: "weld".into(),
        body_a: two,
        body_b: Some(one),
        kind: ConstraintKind::Weld { anchor_a: DVec2::new(-0.2, 0.0), anchor_b: DVec2::new(0.2, 0.0), angle: 0.0 },
    })
    .expect("weld");
    // The push acts through the pair's centre of mass (x = 0.3), so no turning.
    w.loads.push(Load::Force {
        body: two,
        force: DVec2::new(0.0, 8.0),
        point: DVec2::new(-0.1, 0.0),
        body_frame: false,
        profile: Profile::Constant,
    });
    let a = w.accelerations().expect("solve");
    for i in [0, 1] {
        assert!((a[3 * i + 1] - 2.0).abs() < 1e-12 && a[3 * i + 2].abs() < 1e-12, "{a:?}");
    }
}

/// The motor of the slider-crank does work; the energy balance (total energy
/// minus the work of motors and loads) still holds to 1e-9 relative.
#[test]
fn motor_work_closes_the_energy_balance() {
    let mut w = scene_world("slider_crank.ron", &[]);
    let e0 = w.energy();
    let mut most_work = 0.0f64;
    for _ in 0..4000 {
        w.step().expect("step");
        let e = w.energy();
        most_work = most_work.max(e.work.abs());
        assert!((e.balance() - e0.balance()).abs() < 1e-9 * e0.total.abs().max(e.total.abs()));
    }
    assert!(most_work > 1e-2, "the motor must do work against gravity: {most_work}");
}
