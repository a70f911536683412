//! Issue 10: the stiffly accurate implicit integrator (SDIRK3), the Newton
//! solve of the implicit midpoint rule, and adaptive Dormand–Prince 5(4).

use glam::DVec2;
use mx2d::body::Body;
use mx2d::constraint::{Constraint, ConstraintKind};
use mx2d::integrator::{Dynamics, Integrator, IntegratorError, Method, State};
use mx2d::load::{Anchor, Load};
use mx2d::scene::Scene;
use mx2d::shape::Shape;
use mx2d::world::{SimulationError, World};

fn heavy_load_chain(method: Method) -> World {
    let scene = Scene::load(std::path::Path::new("scenes/heavy_load_chain.ron"), &[]).expect("scene");
    let mut w = scene.build_world().expect("world");
    w.set_integrator(method);
    w
}

/// Energy scale of the heavy-load chain: m g L of the load (1000 kg, 1 m).
const LOAD_MGL: f64 = 1000.0 * 9.81 * 1.0;

/// The regression of issue 10: RK4 at dt = 1e-3 diverges on the light chain
/// under a heavy load (transverse modes ~1e4 rad/s), and says so with the
/// step and the body.
#[test]
fn rk4_diverges_on_the_heavy_load_chain_and_names_it() {
    let mut w = heavy_load_chain(Method::Rk4);
    let err = (0..3000).find_map(|_| w.step().err()).expect("RK4 must diverge at dt = 1e-3");
    assert!(matches!(err, SimulationError::Diverged { .. }), "{err}");
    assert!(w.step_count() < 100, "diverged only at step {}", w.step_count());
}

/// The implicit midpoint rule on the same scene names the failure of its own
/// Newton iteration (before issue 10: "constraint solver: non-finite or
/// invalid value in right-hand side"). It halves a step whose Newton
/// iteration fails (the singular passage of `robust_singular_passage.rs`);
/// here the light links' modes make it halve more and more steps, and it
/// stops once more than 24 of the last 64 were halved (measured: at step
/// 86; 32 of 64 by step 100 and 48–56 from step 200 when let run, with
/// 1.7 % of m g L of spurious constraint work over 3 s), saying the step is
/// too large for the system's stiffness and naming sdirk3.
#[test]
fn implicit_midpoint_names_its_newton_failure() {
    let mut w = heavy_load_chain(Method::Midpoint);
    let err = (0..3000).find_map(|_| w.step().err()).expect("midpoint is not L-stable: it must fail at dt = 1e-3");
    let text = err.to_string();
    assert!(matches!(err, SimulationError::Integrator { .. }), "{text}");
    assert!(
        text.contains("implicit midpoint") && text.contains("were halved for the Newton iteration to converge"),
        "{text}"
    );
    assert!(text.contains("stiffness") && text.contains("sdirk3"), "{text}");
    assert!(!text.contains("right-hand side"), "{text}");
    assert!(w.step_count() < 200, "stopped only after step {}", w.step_count());
    assert!(w.integrator_stats().rejected > 24, "{} rejected steps", w.integrator_stats().rejected);
}

/// SDIRK3 runs the heavy-load chain 3 s at dt = 1e-3 (its steps ≤ dt).
/// Constraint error ≤ 1e-9 (the projection's tolerance is 1e-12); energy
/// error ≤ 1e-3 × m g L of the load. The method's numerical damping at the
/// swing's frequency (ω ≈ 3 rad/s) is ~0.05 (ωh)⁴ ≈ 4e-12 per step: the
/// energy error measured (~5e-7 relative) is the error control's, not damping.
#[test]
fn sdirk3_runs_the_heavy_load_chain_at_the_motions_step() {
    let mut w = heavy_load_chain(Method::Sdirk3);
    let e0 = w.energy().total;
    let mut worst = 0.0f64;
    for _ in 0..3000 {
        w.step().expect("sdirk3 step");
        worst = worst.max((w.energy().total - e0).abs() / LOAD_MGL);
    }
    assert!(w.max_constraint_error() <= 1e-9, "constraint error {:e}", w.max_constraint_error());
    assert!(worst <= 1e-3, "relative energy error {worst:e}");
    let stats = w.integrator_stats();
    assert!(stats.newton_iterations > 0 && stats.steps >= 3000, "{stats:?}");
}

/// A pendulum whose arm is a stiff spring, k/m = 1e8 (ω = 1e4 rad/s), at
/// dt = 1e-3: SDIRK3 keeps the energy bounded over 2 s; RK4 (stable only for
/// ωh < 2.8) diverges and names the body.
fn stiff_spring_pendulum(method: Method) -> World {
    let mut w = World::new(DVec2::new(0.0, -9.81));
    w.dt = 1e-3;
    w.set_integrator(method);
    let bob = w
        .add_body(
            Body::builder("bob", Shape::Circle { radius: 0.05 }).mass(1.0).position(DVec2::X).build().expect("bob"),
        )
        .expect("add");
    w.loads.push(Load::Spring {
        body: bob,
        point: DVec2::ZERO,
        anchor: Anchor::World(DVec2::ZERO),
        stiffness: 1e8,
        rest_length: 1.0,
        damping: 0.0,
    });
    w
}

#[test]
fn stiff_spring_bounded_with_sdirk3_diverges_with_rk4() {
    let mut w = stiff_spring_pendulum(Method::Sdirk3);
    let e0 = w.energy().total;
    let (mut worst, mut gain) = (0.0f64, 0.0f64);
    for _ in 0..2000 {
        w.step().expect("sdirk3 step");
        let de = (w.energy().total - e0) / 9.81;
        worst = worst.max(de.abs());
        gain = gain.max(de);
    }
    // Bounded: never above the start by more than 1e-6 × m g L (an L-stable,
    // non-symplectic method only dissipates), and the loss stays below 1 % at
    // the default tolerance 1e-6 (measured 2.8e-3; 9e-5 at tolerance 1e-8:
    // the loss is the error control's, it shrinks with the tolerance).
    assert!(gain <= 1e-6, "energy gained {gain:e} × m g L");
    assert!(worst <= 1e-2, "relative energy error {worst:e}");
    let mut w = stiff_spring_pendulum(Method::Rk4);
    let err = (0..2000).find_map(|_| w.step().err()).expect("RK4 must diverge at ωh = 10");
    match err {
        SimulationError::Diverged { body, .. } => assert_eq!(body, "bob"),
        other => panic!("expected a divergence, got {other}"),
    }
}

/// A constrained pendulum (bar on a pin, 60°) at T = 1 s, fixed steps
/// (tolerance ∞), against RK4 at h = 1/8192.
fn bar_pendulum(method: Method, h: f64, tolerance: f64) -> DVec2 {
    let (mut w, bar) = bar_pendulum_world(method, h, tolerance);
    let steps = (1.0 / h).round() as usize;
    for _ in 0..steps {
        w.step().expect("step");
    }
    w.body(bar).position
}

/// The world of [`bar_pendulum`] at t = 0, and the bar.
fn bar_pendulum_world(method: Method, h: f64, tolerance: f64) -> (World, mx2d::body::BodyHandle) {
    let mut w = World::new(DVec2::new(0.0, -9.81));
    w.dt = h;
    w.set_integrator(method);
    w.set_tolerance(tolerance);
    let th: f64 = 1.0;
    let dir = DVec2::new(th.sin(), -th.cos());
    let bar = w
        .add_body(
            Body::builder("bar", Shape::Bar { length: 1.2, width: 0.0 })
                .mass(2.0)
                .position(dir * 0.6)
                .angle(th - std::f64::consts::FRAC_PI_2)
                .build()
                .expect("bar"),
        )
        .expect("add");
    let kind = ConstraintKind::Revolute { anchor_a: DVec2::new(-0.6, 0.0), anchor_b: DVec2::ZERO };
    w.add_constraint(Constraint { name: "pin".into(), body_a: bar, body_b: None, kind }).expect("pin");
    (w, bar)
}

/// An adaptive method whose motion is far faster than the step stops with
/// the substeps it took and how far into the step they got, instead of
/// grinding on: the bar pendulum with gravity × 1e18 (a period of ~2e-9 s)
/// at dt = 1e-3 s. Before, a fuzzed heavy-load chain with g = 9.2e18 m/s²
/// had sdirk3 spend minutes on its first step with nothing said. At g =
/// 9.81 the same pendulum takes one substep a step (dt = 1e-3 against its
/// 2 s period).
#[test]
fn adaptive_methods_stop_when_a_step_takes_too_many_substeps() {
    for (method, name) in [(Method::Dopri5, "dopri5"), (Method::Sdirk3, "sdirk3")] {
        let (mut w, _) = bar_pendulum_world(method, 1e-3, 1e-6);
        w.gravity *= 1e18;
        let err = w.step().expect_err("too many substeps");
        let text = err.to_string();
        assert!(
            matches!(err, SimulationError::Integrator { source: IntegratorError::TooManySubsteps { substeps, .. }, .. } if substeps == mx2d::integrator::MAX_SUBSTEPS),
            "{text}"
        );
        assert!(text.contains(name) && text.contains("substeps inside one step of 1e-3 s reached only"), "{text}");
        assert_eq!(w.step_count(), 0, "{name}");
        let (mut calm, _) = bar_pendulum_world(method, 1e-3, 1e-6);
        for _ in 0..10 {
            calm.step().expect("a calm pendulum steps");
        }
        assert!(calm.integrator_stats().steps <= 20, "{name}: {:?}", calm.integrator_stats());
    }
}

/// The implicit midpoint rule starts each step's Newton iteration from the
/// last step's stage slope, Z = y₀ + (h/2) f(Y_prev), O(h²) from the stage
/// solution where Z = y₀ is O(h) from it: on the bar pendulum at h = 1e-3
/// (1,000 steps) it takes 2.233 Newton iterations a step where starting
/// from y₀ took 2.998 (26 % fewer evaluations and solves); bound 2.5. The
/// order test above checks that the converged steps are the method's.
#[test]
fn implicit_midpoint_predicts_its_stage_from_the_last_step() {
    let (mut w, _) = bar_pendulum_world(Method::Midpoint, 1e-3, 1e-6);
    for _ in 0..1000 {
        w.step().expect("step");
    }
    let per_step = w.integrator_stats().newton_iterations as f64 / 1000.0;
    eprintln!("{per_step:.3} Newton iterations a step over 1,000");
    assert!(per_step <= 2.5, "{per_step} Newton iterations a step");
}

/// Halving h divides the error by 2ᵖ (measured order within 0.2 of p; 0.25
/// for order 5).
#[test]
fn orders_of_the_new_integrators_on_a_constrained_pendulum() {
    let reference = bar_pendulum(Method::Rk4, 1.0 / 8192.0, f64::INFINITY);
    for (method, h) in [(Method::Sdirk3, 1.0 / 64.0), (Method::Dopri5, 1.0 / 16.0), (Method::Midpoint, 1.0 / 128.0)] {
        let e1 = (bar_pendulum(method, h, f64::INFINITY) - reference).length();
        let e2 = (bar_pendulum(method, h / 2.0, f64::INFINITY) - reference).length();
        let p = (e1 / e2).log2();
        // order 5 at h = 1/32 is 7e-9: still approaching its asymptote
        // (measured 4.77), hence 0.25 there
        let slack = if method.order() >= 5 { 0.25 } else { 0.2 };
        assert!((p - method.order() as f64).abs() <= slack, "{method}: order {p:.3} (errors {e1:e}, {e2:e})");
    }
}

/// Adaptive runs: the error is proportional to the tolerance, within a
/// factor 10 over four decades (tolerance 1e-6 … 1e-10, dt = 1 s the largest
/// step; measured spread 1.5×: sdirk3 0.87–1.28, dopri5 0.18–0.23), and at
/// tolerance 1e-5 not above that proportion. The error is |Δposition| / L at
/// T = 1 s against the reference, whose own error (against h/2) is checked
/// to be below 1 % of the smallest error measured. At 1e-5 it may fall
/// below it: since the adaptive methods project onto the pin between their
/// substeps (issue 10, `tests/robust_singular_passage.rs`) the pin's drift is
/// no part of the error, and `dopri5`'s error at 1e-5 equals its error at
/// 1e-6 (2.1e-7 m; error/tolerance 0.018 against 0.18–0.23 below).
#[test]
fn adaptive_error_is_proportional_to_the_tolerance() {
    let reference = bar_pendulum(Method::Rk4, 1.0 / 8192.0, f64::INFINITY);
    let reference_error = (bar_pendulum(Method::Rk4, 1.0 / 16384.0, f64::INFINITY) - reference).length() / 1.2;
    let tolerances = [1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10];
    for method in [Method::Sdirk3, Method::Dopri5] {
        let errors: Vec<f64> =
            tolerances.iter().map(|&tol| (bar_pendulum(method, 1.0, tol) - reference).length() / 1.2).collect();
        let ratios: Vec<f64> = errors.iter().zip(&tolerances).map(|(e, tol)| e / tol).collect();
        eprintln!("{method}: error/tolerance {ratios:?}; the reference's error {reference_error:e}");
        let smallest = errors.iter().copied().fold(f64::INFINITY, f64::min);
        assert!(reference_error <= 0.01 * smallest, "{method}: reference error {reference_error:e}, errors {errors:?}");
        let (lo, hi) = ratios[1..].iter().fold((f64::INFINITY, 0.0f64), |(l, h), &r| (l.min(r), h.max(r)));
        assert!(hi / lo <= 10.0, "{method}: error/tolerance {ratios:?}");
        assert!(ratios[0] <= 10.0 * hi, "{method}: error/tolerance {ratios:?}");
    }
}

/// ẍ = −x, x = cos t.
struct Oscillator;
impl Dynamics for Oscillator {
    fn acceleration(&mut self, _t: f64, q: &[f64], _v: &[f64], a: &mut [f64]) -> f64 {
        a[0] = -q[0];
        a[1] = 0.0;
        a[2] = -4.0 * q[2];
        0.0
    }
}

/// DOPRI5's dense output inside a step: its error at θ = 1/2 against the
/// exact solution falls like h⁵ (order-4 interpolant: local error O(h⁵);
/// measured ratio for a halved h ≥ 2⁴·⁵ ≈ 22), and at θ = 0, 1 it reproduces
/// the step's end points exactly.
#[test]
fn dopri5_dense_output_is_order_four() {
    let err_at_half = |h: f64| {
        let mut integ = Integrator::new(Method::Dopri5);
        integ.tolerance = f64::INFINITY;
        let mut s = State { q: vec![1.0, 0.0, 1.0], v: vec![0.0; 3], work: 0.0 };
        let q0 = s.q.clone();
        integ.step(&mut Oscillator, 0.0, h, &mut s).expect("step");
        let dense = integ.dense_output().expect("dense output");
        let (mut q, mut v) = (vec![0.0; 3], vec![0.0; 3]);
        dense.eval(0.0, &mut q, &mut v);
        assert_eq!(q, q0);
        dense.eval(1.0, &mut q, &mut v);
        assert!(q.iter().zip(&s.q).all(|(a, b)| (a - b).abs() <= 1e-15), "{q:?} vs {:?}", s.q);
        dense.eval(0.5, &mut q, &mut v);
        let t = 0.5 * h;
        ((q[0] - t.cos()).abs()).max((q[2] - (2.0 * t).cos()).abs()).max((v[0] + t.sin()).abs())
    };
    let (e1, e2) = (err_at_half(0.2), err_at_half(0.1));
    assert!(e1 / e2 >= 22.0, "dense output errors {e1:e}, {e2:e}: ratio {}", e1 / e2);
}

/// Same run twice: bitwise-identical states (no hidden state, no threads in
/// the dense Newton).
#[test]
fn sdirk3_is_deterministic() {
    let run = || {
        let mut w = heavy_load_chain(Method::Sdirk3);
        for _ in 0..100 {
            w.step().expect("step");
        }
        w.state_vectors().0.to_vec()
    };
    let (a, b) = (run(), run());
    assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()));
}

/// A ball released on the upper edge of a wind band (a uniform per-mass
/// force of 3 m/s² in a rectangle), moving up out of it, then falling back
/// through it: a force that jumps where the ball crosses the edge.
fn ball_on_a_wind_band_edge(method: Method, dense: bool) -> World {
    let text = r#"Scene(
        name: "edge", gravity: (0.0, -9.81), dt: 0.0005, duration: 1.0,
        bodies: [Body(name: "ball", shape: Circle(radius: 0.1), mass: 1.0, position: (0.0, 4.0), velocity: (0.0, 1.0))],
        fields: [Field(kind: Uniform(force: (3.0, 0.0), per_mass: true), region: Rect(min: (-10.0, 2.0), max: (10.0, 4.0)))],
    )"#;
    let mut w = Scene::parse(text, "edge").expect("scene").build_world().expect("world");
    w.set_integrator(method);
    w.set_dense_newton(dense);
    w
}

/// The Newton Jacobians (the sparse per-body model and the dense reference)
/// take both one-sided differences and the smaller slope: a forward
/// difference across the band's edge was 3 m/s² / δ ≈ 10⁸ s⁻², and the
/// implicit midpoint rule stopped at its first step ("Newton iteration did
/// not converge … 1e14 × its tolerance": `fields.ron`, whose plate starts on
/// the edge). Now it runs 1 s and agrees with RK4 at the same step: each
/// method may take the jump up to one step late at each of the ball's two
/// crossings, a velocity error ≤ 3 m/s² × h each, carried for ≤ 1 s: ≤ 2 × 3
/// × 5e-4 m = 3e-3 m per method (the smooth part's error is ~h² g ≈ 2.5e-6).
#[test]
fn implicit_midpoint_runs_through_a_force_that_jumps_at_a_region_edge() {
    let mut reference = ball_on_a_wind_band_edge(Method::Rk4, false);
    for _ in 0..2000 {
        reference.step().expect("rk4 step");
    }
    let ball = mx2d::body::BodyHandle(0); // the scene's only body
    let expected = reference.body(ball).position;
    // the ball came back through the band: its x was pushed both times
    assert!(expected.y < 2.0 && expected.x > 0.1, "{expected}");
    for dense in [false, true] {
        let mut w = ball_on_a_wind_band_edge(Method::Midpoint, dense);
        for step in 0..2000 {
            w.step().unwrap_or_else(|e| panic!("midpoint (dense Jacobian: {dense}) step {step}: {e}"));
        }
        let error = (w.body(ball).position - expected).length();
        let per_step = w.integrator_stats().newton_iterations as f64 / 2000.0;
        eprintln!("dense {dense}: |x − x_rk4| = {error:.3e} m, {per_step:.3} Newton iterations a step");
        assert!(error <= 6e-3, "dense {dense}: midpoint off RK4 by {error:e} m");
    }
}

/// [`Oscillator`] whose accelerations cannot be evaluated (NaN) at times in
/// `broken`: a stage there fails its Newton iteration, as at a singular
/// configuration, whatever the Jacobian.
struct OscillatorBrokenAt {
    broken: std::ops::Range<f64>,
}
impl Dynamics for OscillatorBrokenAt {
    fn acceleration(&mut self, t: f64, q: &[f64], v: &[f64], a: &mut [f64]) -> f64 {
        let power = Oscillator.acceleration(t, q, v, a);
        if self.broken.contains(&t) {
            a.fill(f64::NAN);
        }
        power
    }
}

/// The implicit midpoint rule halves a step whose stage cannot be solved:
/// from t = 0.25 with h = 0.1, the stage time t + h/2 = 0.3 is broken, the
/// halves' stage times 0.275 and 0.325 are not. The step is then exactly
/// two midpoint steps of h/2 (one rejected try counted), and the next step,
/// whose stage time 0.4 is fine, is whole again. A window that every piece's
/// stage time down to h/4096 meets, after the first half has passed, stops
/// the step with the Newton failure at that size and puts the state back
/// at the step's start; a failure at each step stops
/// the run after 25 halved steps of the last 64, before the next step, with
/// the stiffness named.
#[test]
fn implicit_midpoint_halves_a_step_it_cannot_solve_and_stops_when_it_halves_too_often() {
    let start = || State { q: vec![1.0, 0.5, -0.25], v: vec![0.0, 0.1, 0.2], work: 0.0 };
    // one step over a broken stage time, against two half steps
    let mut halved = start();
    let mut integ = Integrator::new(Method::Midpoint);
    integ.step(&mut OscillatorBrokenAt { broken: 0.2999..0.3001 }, 0.25, 0.1, &mut halved).expect("halved step");
    let stats = integ.stats();
    assert_eq!((stats.steps, stats.rejected), (2, 1), "{stats:?}");
    let mut two_halves = start();
    let mut plain = Integrator::new(Method::Midpoint);
    plain.step(&mut Oscillator, 0.25, 0.05, &mut two_halves).expect("first half");
    plain.step(&mut Oscillator, 0.3, 0.05, &mut two_halves).expect("second half");
    assert_eq!(halved, two_halves, "the halved step is not two midpoint steps of h/2");
    integ.step(&mut OscillatorBrokenAt { broken: 0.2999..0.3001 }, 0.35, 0.1, &mut halved).expect("next step");
    assert_eq!((integ.stats().steps, integ.stats().rejected), (3, 1), "the next step was not whole");

    // the first half passes (stage time 0.275), then no piece of the second
    // half avoids the window: the failure at h/4096, the state back at the
    // step's start
    let mut stuck = start();
    let mut integ = Integrator::new(Method::Midpoint);
    let err = integ.step(&mut OscillatorBrokenAt { broken: 0.29..1.0 }, 0.25, 0.1, &mut stuck).expect_err("must fail");
    assert_eq!(integ.stats().steps, 1, "the first half was not taken: {:?}", integ.stats());
    assert!(matches!(err, IntegratorError::NewtonNotConverged { step, .. } if step == 0.1 / 4096.0), "{err}");
    assert!(err.to_string().contains("halved down to that size"), "{err}");
    assert_eq!(stuck, start(), "a failed step moved the state");
    assert_eq!(integ.stats().rejected, 13, "{:?}", integ.stats());

    // a broken stage time at every step: 25 halved steps, then the stop
    let mut s = start();
    let mut integ = Integrator::new(Method::Midpoint);
    let (h, mut t) = (0.1, 0.0);
    let mut taken = 0;
    let err = loop {
        // each step's own stage time t + h/2 is broken
        let mut dynamics = OscillatorBrokenAt { broken: (t + 0.4999 * h)..(t + 0.5001 * h) };
        match integ.step(&mut dynamics, t, h, &mut s) {
            Ok(()) => {
                taken += 1;
                t += h;
            }
            Err(e) => break e,
        }
        assert!(taken <= 64, "never stopped");
    };
    assert_eq!(taken, 25, "{err}");
    assert!(matches!(err, IntegratorError::TooStiff { halved: 25, window: 64, .. }), "{err}");
    assert!(err.to_string().contains("stiffness") && err.to_string().contains("sdirk3"), "{err}");
}
