//! Results must not depend on units or on the scale of masses (the standard
//! of `docs/requirements.md`, section "Units and mass scale"): every path
//! runs the same scene in SI and in other units, and the results must map as
//! physics says.
//!
//! A scene is written once, as a function of [`Units`]: every length × `s`,
//! every time × `τ`, every mass × `μ`; then speeds × s/τ, accelerations
//! (g) × s/τ², angular speeds and frequencies × 1/τ, inertias × μ s². The
//! results map the same way: positions × s, velocities × s/τ, angles alike,
//! angular velocities × 1/τ, contact impulses × μ s/τ (rolling: × μ s²/τ).
//!
//! Two kinds of check:
//! - **powers of two** (s, τ, μ = 2^±10): multiplying by a power of two is
//!   exact in binary floating point, and so is every sum, product, quotient
//!   and square root of scaled values; a path whose every constant is derived
//!   from the scene then computes *the same bits, scaled*, and the check is
//!   equality. Any constant with a unit that is not derived from the scene
//!   (a tolerance in metres, a speed in m/s) breaks it.
//! - **powers of ten** (millimetres: s = 1000; τ = 1000; μ = 10^±3): not
//!   exact, so each operation rounds differently (2^-53 ≈ 1.1e-16 relative);
//!   over a run of a few hundred steps the difference grows by the number of
//!   operations and by the sensitivity of the motion. The tolerance of each
//!   scene is stated with it.

use mx2d::scene::Scene;
use mx2d::world::World;

/// The units a scene is written in, relative to SI.
#[derive(Clone, Copy, Debug)]
struct Units {
    /// Length unit: a metre is `length` units.
    length: f64,
    /// Time unit: a second is `time` units.
    time: f64,
    /// Mass unit: a kilogram is `mass` units.
    mass: f64,
}

const SI: Units = Units { length: 1.0, time: 1.0, mass: 1.0 };

impl Units {
    fn l(&self, x: f64) -> f64 {
        x * self.length
    }
    fn t(&self, x: f64) -> f64 {
        x * self.time
    }
    fn m(&self, x: f64) -> f64 {
        x * self.mass
    }
    fn speed(&self, x: f64) -> f64 {
        x * self.length / self.time
    }
    fn acceleration(&self, x: f64) -> f64 {
        x * self.length / (self.time * self.time)
    }
    fn rate(&self, x: f64) -> f64 {
        x / self.time
    }
}

/// The powers-of-two variants (exact) and the powers-of-ten ones (rounded).
fn binary_units() -> [(Units, &'static str); 5] {
    let k = 1024.0;
    [
        (Units { length: k, ..SI }, "lengths x 1024"),
        (Units { length: 1.0 / k, ..SI }, "lengths / 1024"),
        (Units { time: k, ..SI }, "times x 1024"),
        (Units { mass: k, ..SI }, "masses x 1024"),
        (Units { mass: 1.0 / k, ..SI }, "masses / 1024"),
    ]
}

fn decimal_units() -> [(Units, &'static str); 4] {
    [
        (Units { length: 1e3, ..SI }, "millimetres"),
        (Units { time: 1e3, ..SI }, "milliseconds"),
        (Units { mass: 1e3, ..SI }, "masses x 1e3"),
        (Units { mass: 1e-3, ..SI }, "masses x 1e-3"),
    ]
}

fn world(text: &str) -> World {
    let scene = Scene::parse(text, "units").unwrap_or_else(|e| panic!("{e}\n{text}"));
    scene.build_world().unwrap_or_else(|e| panic!("{e}"))
}

fn run(scene: &dyn Fn(&Units) -> String, u: &Units, steps: usize) -> World {
    let mut w = world(&scene(u));
    for _ in 0..steps {
        w.step().unwrap_or_else(|e| panic!("{u:?}: {e}"));
    }
    w
}

/// Largest difference between `scaled`, mapped back to SI, and `base`,
/// relative to the scene's scale: positions over `size`, velocities over
/// `speed`, angles in rad, angular velocities over `speed / size`.
fn mapped_difference(base: &World, scaled: &World, u: &Units, size: f64, speed: f64) -> f64 {
    let mut worst = 0.0f64;
    for (a, b) in base.bodies.iter().zip(scaled.bodies.iter()) {
        let p = (b.position / u.length - a.position).length() / size;
        let v = (b.velocity * u.time / u.length - a.velocity).length() / speed;
        let angle = (b.angle - a.angle).abs();
        let w = (b.angular_velocity * u.time - a.angular_velocity).abs() * size / speed;
        worst = worst.max(p).max(v).max(angle).max(w);
    }
    worst
}

/// Checks one scene at every variant of the units: bitwise at powers of
/// two, within `decimal_tolerance` (relative to `size` and `speed`) at
/// powers of ten. Returns the SI run and the largest decimal difference.
fn check_scene(
    name: &str,
    scene: &dyn Fn(&Units) -> String,
    steps: usize,
    size: f64,
    speed: f64,
    decimal_tolerance: f64,
) -> (World, f64) {
    let base = run(scene, &SI, steps);
    assert!(base.bodies.iter().all(|b| b.position.is_finite()), "{name}: the SI run failed");
    for (u, label) in binary_units() {
        let scaled = run(scene, &u, steps);
        assert_eq!(scaled.time(), base.time() * u.time, "{name}, {label}: time");
        for (a, b) in base.bodies.iter().zip(scaled.bodies.iter()) {
            let what = format!("{name}, {label}, body {}", a.name);
            assert_eq!(b.position, a.position * u.length, "{what}: position");
            assert_eq!(b.velocity, a.velocity * (u.length / u.time), "{what}: velocity");
            assert_eq!(b.angle, a.angle, "{what}: angle");
            assert_eq!(b.angular_velocity, a.angular_velocity / u.time, "{what}: angular velocity");
        }
        // Contact impulses: μ s / τ.
        let (ca, cb) = (base.contacts.contacts(), scaled.contacts.contacts());
        assert_eq!(ca.len(), cb.len(), "{name}, {label}: contact count");
        for (x, y) in ca.iter().zip(cb) {
            // Normal and tangent impulses (N·s), rolling impulse (N·m·s).
            let linear = u.mass * u.length / u.time;
            for (k, unit) in [linear, linear, linear * u.length].into_iter().enumerate() {
                assert_eq!(y.impulse[k], x.impulse[k] * unit, "{name}, {label}: impulse {k}");
            }
        }
    }
    let mut worst = 0.0f64;
    for (u, label) in decimal_units() {
        let scaled = run(scene, &u, steps);
        let d = mapped_difference(&base, &scaled, &u, size, speed);
        println!("{name}, {label}: {d:e} of the scale");
        assert!(
            d <= decimal_tolerance,
            "{name}, {label}: results differ by {d:e} of the scale (tolerance {decimal_tolerance:e})"
        );
        worst = worst.max(d);
    }
    (base, worst)
}

/// The exact contact path (time of impact, exact impacts, block PGS of the
/// resting contacts, position projection): a ball bouncing (restitution
/// 0.6) on a box resting on the floor, a disc sliding into rolling, and a
/// box sliding to rest on the floor (Coulomb friction), 0.6 s at dt = 1 ms.
/// Every contact setting is the default (resting speed 2|g|dt, slop 0.5 %
/// of the smallest body's bounding radius, PGS tolerance relative).
///
/// Powers of ten: 1e-9 of the scene's size (1 m) and speed (5 m/s). The
/// rounding (1e-16 per operation) reaches the impact times through the
/// time-of-impact root (1e-13 of the step) and the PGS's relative stop;
/// measured at most ~1e-13, so the tolerance leaves four decades for a
/// sensitivity that the physics does not have here (no grazing contact).
fn exact_contacts(u: &Units) -> String {
    format!(
        "Scene(name: \"exact\", gravity: (0.0, {g}), dt: {dt},
           contacts: Contacts(),
           materials: [ Material(name: \"bouncy\", friction: 0.4, restitution: 0.6),
                        Material(name: \"rough\", friction: 0.5, kinetic_friction: 0.3) ],
           bodies: [
             Body(name: \"base\", shape: Box(half_extents: ({h}, {h})), mass: {m2}, position: (0.0, {h}), material: \"rough\"),
             Body(name: \"ball\", shape: Circle(radius: {r}), mass: {m1}, position: ({bx}, {by}), velocity: ({bv}, 0.0), material: \"bouncy\"),
             Body(name: \"disc\", shape: Circle(radius: {r}), mass: {m1}, position: ({dx}, {r}), velocity: ({dv}, 0.0),
                  angular_velocity: {dw}, material: \"rough\"),
             Body(name: \"slider\", shape: Box(half_extents: ({sh}, {sq})), mass: {m1}, position: ({sx}, {sq}), velocity: ({sv}, 0.0), material: \"rough\"),
           ],
           surfaces: [ Surface(geometry: Line(point: (0.0, 0.0), normal: (0.0, 1.0)), material: \"rough\") ])",
        g = u.acceleration(-9.81),
        dt = u.t(1e-3),
        h = u.l(0.5),
        m2 = u.m(2.0),
        m1 = u.m(0.5),
        r = u.l(0.25),
        bx = u.l(0.1),
        by = u.l(1.6),
        bv = u.speed(0.3),
        dx = u.l(3.0),
        dv = u.speed(2.0),
        dw = u.rate(1.0),
        sh = u.l(0.3),
        sq = u.l(0.1),
        sx = u.l(-3.0),
        sv = u.speed(-2.5),
    )
}

#[test]
fn exact_contact_path_does_not_depend_on_units_or_mass_scale() {
    let (w, _) = check_scene("exact contacts", &exact_contacts, 600, 1.0, 5.0, 1e-9);
    assert!(!w.contacts.impacts().is_empty() || w.bodies.as_slice()[1].velocity.y > 0.0, "the ball never bounced");
    assert!(w.contacts.contacts().len() >= 3, "the bodies do not rest on the floor");
}

/// The soft step at its defaults (hertz, push speed, speculative margin,
/// resting speed all derived): a 4-row pyramid, a column of 4 boxes, a box
/// sliding to rest, and a box starting 0.3 m deep in the floor (the push
/// speed caps its push-out: the check that the cap scales), 1 s at 1/60 s.
///
/// Powers of ten: 1e-9 of the size (1 m) and speed (3 m/s): the soft step
/// is a fixed number of sweeps (no stopping test) whose only decisions are
/// the contact points' features and the speculative/penetrating split; the
/// rounding then stays at the 1e-14 level (measured ≤ 1e-12).
fn soft_piles(u: &Units) -> String {
    format!(
        "Scene(name: \"soft\", gravity: (0.0, {g}), dt: {dt},
           contacts: Contacts(solver: SoftStep()),
           materials: [ Material(name: \"wood\", friction: 0.6) ],
           piles: [ Pile(prefix: \"pyramid\", rows: 4, half_extent: {h}, mass: {m}, material: \"wood\"),
                    Pile(prefix: \"column\", rows: 4, pyramid: false, half_extent: {h}, base: ({cx}, 0.0), mass: {m}, material: \"wood\") ],
           bodies: [
             Body(name: \"slider\", shape: Box(half_extents: ({h}, {h})), mass: {m}, position: ({sx}, {h}), velocity: ({sv}, 0.0), material: \"wood\"),
             Body(name: \"sunk\", shape: Box(half_extents: ({h}, {h})), mass: {m}, position: ({kx}, {ky}), material: \"wood\"),
           ],
           surfaces: [ Surface(geometry: Line(point: (0.0, 0.0), normal: (0.0, 1.0)), material: \"wood\") ])",
        g = u.acceleration(-10.0),
        dt = u.t(1.0 / 60.0),
        h = u.l(0.5),
        m = u.m(1.0),
        cx = u.l(8.0),
        sx = u.l(-8.0),
        sv = u.speed(3.0),
        kx = u.l(14.0),
        ky = u.l(0.2),
    )
}

#[test]
fn soft_step_does_not_depend_on_units_or_mass_scale() {
    let (w, _) = check_scene("soft step", &soft_piles, 60, 1.0, 3.0, 1e-9);
    let sunk = w.bodies.iter().find(|b| b.name == "sunk").expect("sunk box");
    assert!(sunk.position.y > 0.4, "the sunk box was not pushed out: y = {}", sunk.position.y);
}

/// The soft step at the shipped scenes' explicit settings (8 sub-steps, 60
/// Hz, given as frequencies: × 1/τ; push speed given: × s/τ).
fn soft_explicit(u: &Units) -> String {
    soft_piles(u)
        .replace("SoftStep()", &format!("SoftStep(substeps: 8, hertz: {}, push_speed: {})", u.rate(60.0), u.speed(2.0)))
}

#[test]
fn soft_step_with_explicit_settings_does_not_depend_on_units_or_mass_scale() {
    check_scene("soft step, explicit settings", &soft_explicit, 60, 1.0, 3.0, 1e-5);
}

/// The mechanism tier: a double pendulum of two bars (`pendulum`: revolute
/// rows only, in m) or a motor-driven slider-crank (revolute, prismatic and
/// motor rows: lengths and angles; the motor is a rheonomic constraint whose
/// speed is × 1/τ), with position and velocity projection after each step.
fn mechanism(pendulum: bool, method: &str, tolerance: Option<f64>, dt: f64) -> impl Fn(&Units) -> String {
    let method = method.to_string();
    move |u: &Units| {
        let tol = tolerance.map(|t| format!("tolerance: {t},")).unwrap_or_default();
        let p = |x: f64, y: f64| format!("({}, {})", u.l(x), u.l(y));
        let parts = if pendulum {
            format!(
                "chains: [ Chain(prefix: \"arm\", links: 2, anchor: {anchor}, direction: (1.0, -0.2),
                                 link_length: {len}, link_mass: {m}, width: {wid}) ]",
                anchor = p(-5.0, 0.0),
                len = u.l(1.0),
                m = u.m(1.0),
                wid = u.l(0.05),
            )
        } else {
            format!(
                "bodies: [
                   Body(name: \"crank\", shape: Bar(length: {lc}, width: {wb}), mass: {mc}, position: {pc}, angle: 0.785398),
                   Body(name: \"rod\", shape: Bar(length: {lr}, width: {wb}), mass: {m}, position: {pr}, angle: -0.237941),
                   Body(name: \"piston\", shape: Box(half_extents: {hp}), mass: {mp}, position: {pp}),
                 ],
                 constraints: [
                   Revolute(name: \"main_bearing\", a: \"crank\", at: {o}),
                   Revolute(name: \"crank_pin\", a: \"rod\", b: \"crank\", at: {pin}),
                   Revolute(name: \"wrist_pin\", a: \"piston\", b: \"rod\", at: {pp}),
                   Prismatic(name: \"cylinder\", a: \"piston\", axis: (1.0, 0.0)),
                   Motor(name: \"motor\", a: \"crank\", drive: Speed(speed: {w})),
                 ]",
                lc = u.l(0.5),
                wb = u.l(0.04),
                mc = u.m(0.5),
                m = u.m(1.0),
                pc = p(0.176777, 0.176777),
                lr = u.l(1.5),
                pr = p(1.082422, 0.176777),
                hp = p(0.15, 0.08),
                mp = u.m(0.8),
                pp = p(1.811291, 0.0),
                o = p(0.0, 0.0),
                pin = p(0.353553, 0.353553),
                w = u.rate(std::f64::consts::TAU),
            )
        };
        format!(
            "Scene(name: \"mech\", gravity: (0.0, {g}), dt: {dt}, integrator: {method}, {tol} {parts})",
            g = u.acceleration(-9.81),
            dt = u.t(dt),
        )
    }
}

/// Fixed steps (symplectic Euler, RK4, the implicit midpoint rule) at dt =
/// 2 ms, 0.5 s, and the adaptive ones (dopri5, sdirk3) at dt = 20 ms and
/// tolerance 1e-8, 0.5 s, where the step control cuts the double pendulum's
/// steps (checked: more sub-steps than steps).
///
/// Every method, bit for bit at powers of two: dopri5, sdirk3 and the
/// midpoint rule weigh each error component by max(|y|, the size of its
/// kind) (`src/integrator/weights.rs`), and every floor and fallback of
/// those sizes is made of the state and of the scene's own length and step
/// — until 7 Dec 2026 a speed of 1 m/s (from rest) and an angular speed of
/// 1 rad/s were floors, and the accepted steps, the Newton tolerance and
/// the finite-difference steps moved with the units (dopri5 1.7e-9 of the
/// scale with times × 1024: checked within 1e-8 only).
///
/// Powers of ten: 1e-9 of the size (1 m) and speed (6 m/s) for the fixed
/// steps (measured ≤ 1.1e-14). The motion is smooth and the projection stops
/// at a unit-free |C| ≤ 1e-12 (lengths over the smallest body's bounding
/// radius), which the rounding moves by ~1e-15 relative. The adaptive
/// methods within 1e-8, their tolerance: a rounding can turn a step
/// control's accept into a reject (measured: dopri5 5.1e-11 in
/// milliseconds, the rest ≤ 2.3e-14).
#[test]
fn mechanism_tier_does_not_depend_on_units_or_mass_scale() {
    for (method, tolerance, dt, steps) in [
        ("Symplectic", None, 2e-3, 250),
        ("Rk4", None, 2e-3, 250),
        ("Midpoint", None, 2e-3, 250),
        ("Dopri5", Some(1e-8), 2e-2, 25),
        ("Sdirk3", Some(1e-8), 2e-2, 25),
    ] {
        for (pendulum, name) in [(true, "double pendulum"), (false, "slider-crank")] {
            let scene = mechanism(pendulum, method, tolerance, dt);
            let decimal = if tolerance.is_some() { 1e-8 } else { 1e-9 };
            let name = format!("{name}, {method}");
            let (w, _) = check_scene(&name, &scene, steps, 1.0, 6.0, decimal);
            if tolerance.is_some() && pendulum {
                let stats = w.integrator_stats();
                assert!(
                    stats.steps > steps as u64,
                    "{name}: the step control never cut a step ({} sub-steps)",
                    stats.steps
                );
            }
        }
    }
}

/// The shipped chain (100 links of 10 g, 5 m) laid out along y = 0 and
/// released from rest — no initial kinetic or potential energy — RK4 at dt =
/// 0.5 ms for 1 s: its free end whips. The divergence bound on a body's
/// kinetic energy, when the scene sets none, was 1e12 × (1 J + the initial
/// energies): 1e12 J here whatever the units, which the links pass with
/// masses × 1e12 (the run "diverged" at step 1,785) or lengths and gravity ×
/// 1e9. It now counts the weight Σ m |g| L of the moving bodies over the
/// scene's extent L (`World::prepare`). Each run completes, and agrees with
/// SI to 1e-9 of the chain's length (5 m) and speed scale (10 m/s) at these
/// powers of ten (the rounding differs per operation and the whip amplifies
/// it: measured 7.7e-11 … 1.0e-10).
#[test]
fn a_chain_released_from_rest_runs_in_extreme_units() {
    let chain = |u: &Units| {
        format!(
            "Scene(name: \"chain\", gravity: (0.0, {g}), dt: {dt}, integrator: Rk4,
               chains: [ Chain(prefix: \"link\", links: 100, anchor: (0.0, 0.0), direction: (1.0, 0.0),
                               link_length: {len}, link_mass: {m}, width: {wid}) ])",
            g = u.acceleration(-9.81),
            dt = u.t(5e-4),
            len = u.l(0.05),
            m = u.m(0.01),
            wid = u.l(0.01),
        )
    };
    // In SI a link's kinetic energy passes 1 J: × 1e12 it passes the old bound.
    let mut base = world(&chain(&SI));
    let mut most = 0.0f64;
    for _ in 0..2000 {
        base.step().expect("SI step");
        most = most.max(base.bodies.iter().map(|b| 0.5 * b.mass * b.velocity.length_squared()).fold(0.0, f64::max));
    }
    assert!(most > 1.0, "a link's kinetic energy reached only {most} J");
    for (u, label) in [
        (Units { mass: 1e12, ..SI }, "masses x 1e12"),
        (Units { mass: 1e-12, ..SI }, "masses x 1e-12"),
        (Units { length: 1e9, ..SI }, "lengths x 1e9"),
        (Units { length: 1e-9, ..SI }, "lengths x 1e-9"),
    ] {
        let scaled = run(&chain, &u, 2000);
        let d = mapped_difference(&base, &scaled, &u, 5.0, 10.0);
        println!("chain from rest, {label}: {d:e} of the scale");
        assert!(d <= 1e-9, "chain from rest, {label}: results differ by {d:e} of the scale");
    }
}

/// Inverse kinematics (the double pendulum's tip reaches a point) and
/// inverse dynamics (the slider-crank's motor torque over 50 steps). The
/// IK settings are lengths (`max_step`, and `tolerance` on max |C| in m)
/// with no scene field to derive them from, so the caller scales them (the
/// defaults are for SI: `docs/requirements.md`); the IK step is mass-weighted,
/// so masses × k change nothing. Torques scale as μ s²/τ². Powers of two:
/// bitwise; powers of ten: 1e-9 (IK converges quadratically to round-off;
/// the torques come from the same smooth run as the mechanism test).
#[test]
fn inverse_problems_do_not_depend_on_units_or_mass_scale() {
    use mx2d::body::BodyHandle;
    use mx2d::constraint::ConstraintHandle;
    use mx2d::inverse::{IkSettings, inverse_kinematics, joint_torques};
    let ik = |u: &Units| {
        let mut w = world(&mechanism(true, "Rk4", None, 1e-3)(u));
        let settings = IkSettings { max_step: u.l(0.1), tolerance: u.l(1e-12), max_iterations: 200 };
        let report = inverse_kinematics(
            &mut w,
            BodyHandle(1),
            glam::DVec2::new(u.l(0.5), 0.0),
            glam::DVec2::new(u.l(-4.2), u.l(-1.5)),
            &settings,
        )
        .unwrap_or_else(|e| panic!("{u:?}: {e}"));
        assert!(report.converged, "{u:?}: IK did not converge: {:?}", report.residuals);
        w.bodies.iter().map(|b| (b.position, b.angle)).collect::<Vec<_>>()
    };
    let id = |u: &Units| {
        let mut w = world(&mechanism(false, "Rk4", None, 2e-3)(u));
        let torques = joint_torques(&mut w, &[ConstraintHandle(4)], 50).unwrap_or_else(|e| panic!("{u:?}: {e}"));
        torques.into_iter().map(|t| t[0]).collect::<Vec<_>>()
    };
    let (ik_si, id_si) = (ik(&SI), id(&SI));
    assert!(id_si.iter().any(|t| t.abs() > 0.1), "the motor does no work: {id_si:?}");
    let torque_unit = |u: &Units| u.mass * u.length * u.length / (u.time * u.time);
    for (u, label) in binary_units() {
        if u.time == 1.0 {
            for ((p, a), (q, b)) in ik_si.iter().zip(ik(&u)) {
                assert_eq!(q, *p * u.length, "IK, {label}: position");
                assert_eq!(b, *a, "IK, {label}: angle");
            }
        }
        for (t, s) in id_si.iter().zip(id(&u)) {
            assert_eq!(s, t * torque_unit(&u), "ID, {label}: torque");
        }
    }
    for (u, label) in decimal_units() {
        if u.time == 1.0 {
            for ((p, a), (q, b)) in ik_si.iter().zip(ik(&u)) {
                let d = (q / u.length - *p).length().max((b - a).abs());
                assert!(d <= 1e-9, "IK, {label}: differs by {d:e} m");
            }
        }
        let largest = id_si.iter().fold(0.0f64, |m, t| m.max(t.abs()));
        for (t, s) in id_si.iter().zip(id(&u)) {
            let d = (s / torque_unit(&u) - t).abs();
            assert!(d <= 1e-9 * largest, "ID, {label}: torque differs by {d:e} N·m");
        }
    }
}

/// The population tier (CPU twin, f32) in time units × 1024: dt × 1024, g
/// / 2^20, spawn speeds / 1024 (lengths and masses are covered by
/// `t/population_cpu.rs` `results_do_not_depend_on_units_or_mass_scale`).
/// The resting speed (2|g|dt) and every length follow the scene, and the
/// population has no time constant of its own, so the f32 results are the
/// same bits: positions equal, velocities and spins / 1024.
#[test]
fn population_does_not_depend_on_the_time_unit() {
    let scene = |u: &Units| {
        format!(
            "Scene(name: \"u\", gravity: (0.0, {g}), dt: {dt},
               population: Population(radius: 0.5, density: 1.0, restitution: 0.5, friction: 0.3, rolling_resistance: 0.01,
                 spawn: [Grid(origin: (1.0, 1.0), count: 12, columns: 6, spacing: 1.25, velocity_jitter: {j}, seed: 3)],
                 container: GridBox(floor: 0.0, left: -1.0, right_margin: 1.0)))",
            g = u.acceleration(-9.81),
            dt = u.t(1.0 / 60.0),
            j = u.speed(2.0),
        )
    };
    let run = |u: &Units| {
        let mut w = world(&scene(u));
        for _ in 0..60 {
            w.step().unwrap_or_else(|e| panic!("{e}"));
        }
        w.population.expect("a population")
    };
    let (base, slow) = (run(&SI), run(&Units { time: 1024.0, ..SI }));
    assert!(base.omega.iter().any(|w| *w != 0.0), "no contact with friction happened");
    for i in 0..base.len() {
        assert_eq!(slow.position[i], base.position[i], "ball {i}: position");
        assert_eq!(slow.velocity[i], base.velocity[i] / 1024.0, "ball {i}: velocity");
        assert_eq!(slow.omega[i], base.omega[i] / 1024.0, "ball {i}: spin");
    }
}
