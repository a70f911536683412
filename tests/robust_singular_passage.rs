//! Issue 10: the adaptive integrators through the singular passage of
//! `scenes/linkage_loops.ron`. Its 33 parallelogram cells pass their flat,
//! singular configuration (a rail bar parallel to the rungs) one after the
//! other between t ≈ 0.81 and 0.90 s. The motion stays on the parallelogram
//! branch (every rung vertical): its velocity there is tangent to that branch
//! only, and the antiparallelogram branch through the same point would need a
//! jump of velocity. Before the adaptive methods projected onto the
//! constraints between their substeps, the drift of a 0.1 s (or 0.01 s) step
//! met the near-singular multipliers (∝ 1/ρ): the constraint forces did work
//! (−1.5e-2 J with `dopri5`, −0.14 J with `sdirk3`) and deflected the ladder
//! onto the other branch (rungs tilted by 0.3–1.3 rad at 1–2 s).

use mx2d::integrator::Method;
use mx2d::scene::Scene;
use mx2d::world::World;

/// Where the adaptive runs start: the scene's own RK4 (dt 5e-4) up to
/// t = 0.75 s, before the first cell's passage.
const START_STEPS: u64 = 1500;
/// Length of the compared span (s): across every cell's first passage.
const SPAN: f64 = 0.3;

fn linkage_at_passage() -> World {
    let scene = Scene::load(std::path::Path::new("scenes/linkage_loops.ron"), &[]).expect("scene");
    let mut w = scene.build_world().expect("world");
    w.set_integrator(Method::Rk4);
    for _ in 0..START_STEPS {
        w.step().expect("rk4 step");
    }
    w
}

/// Largest tilt of a rung from the vertical (rad): 0 on the parallelogram branch.
fn rung_tilt(w: &World) -> f64 {
    w.bodies
        .iter()
        .filter(|b| b.name.starts_with("rung"))
        .map(|b| (b.angle + std::f64::consts::FRAC_PI_2).abs())
        .fold(0.0, f64::max)
}

/// The body centres every `sample` s over the span, from the start state,
/// with the largest rung tilt and the energy change (J) at the end.
struct Path {
    centres: Vec<Vec<glam::DVec2>>,
    tilt: f64,
    energy_change: f64,
    substeps: u64,
    rejected: u64,
}

fn run(method: Method, dt: f64, tolerance: f64, sample: f64) -> Path {
    let mut w = linkage_at_passage();
    let e0 = w.energy().total;
    w.set_integrator(method);
    w.set_tolerance(tolerance);
    w.dt = dt;
    let per_sample = (sample / dt).round() as u64;
    let samples = (SPAN / sample).round() as u64;
    let mut path = Path { centres: Vec::new(), tilt: 0.0, energy_change: 0.0, substeps: 0, rejected: 0 };
    for _ in 0..samples {
        for _ in 0..per_sample {
            w.step().unwrap_or_else(|e| panic!("{method} at t = {}: {e}", w.time()));
            path.tilt = path.tilt.max(rung_tilt(&w));
        }
        path.centres.push(w.bodies.iter().map(|b| b.position).collect());
    }
    path.energy_change = w.energy().total - e0;
    path.substeps = w.integrator_stats().steps;
    path.rejected = w.integrator_stats().rejected;
    path
}

/// Largest distance of a body centre between two paths at the samples (m).
fn distance(a: &Path, b: &Path) -> f64 {
    a.centres
        .iter()
        .zip(&b.centres)
        .flat_map(|(x, y)| x.iter().zip(y).map(|(p, q)| (*p - *q).length()))
        .fold(0.0, f64::max)
}

/// Prints what a run did (for the log of a failing run) and returns its
/// distance from the reference.
/// RK4 at dt 5e-4 over the passage, the reference of both tests: computed
/// once per test binary (the tests run in parallel and would each run it).
fn reference() -> &'static Path {
    static REFERENCE: std::sync::OnceLock<Path> = std::sync::OnceLock::new();
    REFERENCE.get_or_init(|| run(Method::Rk4, 5e-4, 1e-6, 0.1))
}

fn report(method: &str, path: &Path, reference: &Path) -> f64 {
    let d = distance(path, reference);
    eprintln!(
        "{method}: tilt {:.3e} rad, energy change {:.3e} J, {} substeps ({} rejected), {d:.3e} m from RK4",
        path.tilt, path.energy_change, path.substeps, path.rejected
    );
    d
}

/// `dopri5` with 0.1 s as its largest step at tolerance 1e-8 crosses the
/// passage on the parallelogram branch, conserving energy, in a bounded
/// number of substeps. Before: rungs tilted (2.7e-3 rad at 0.9 s, 0.4 rad
/// later), −1.5e-2 J of work by the constraint forces, and twice the
/// substeps (1,135 to t = 1.3 s, 217 rejected; after 786, 18).
#[test]
fn dopri5_crosses_the_singular_passage_on_its_branch() {
    let path = run(Method::Dopri5, 0.1, 1e-8, 0.1);
    let reference = reference();
    let d = report("dopri5", &path, reference);
    assert!(path.tilt < 1e-6, "dopri5 left the parallelogram branch: rung tilt {:.3e} rad", path.tilt);
    assert!(path.energy_change.abs() < 1e-5, "dopri5: energy changed by {:.3e} J", path.energy_change);
    assert!(path.substeps < 400, "dopri5 took {} substeps over {SPAN} s", path.substeps);
    assert!(d < 1e-4, "dopri5 is {d:.3e} m from RK4 (dt 5e-4)");
}

/// `sdirk3` with 0.01 s as its largest step stays within 1e-3 of the
/// mechanism's extent (3.3 m) of RK4 across the passage. Before: its Newton
/// iteration failed near 0.8146 s, the step collapsed to ~1e-7 s, 0.14 J
/// were lost to the constraint forces and the ladder took the other branch
/// (0.2–0.9 m off at 1–2 s).
#[test]
fn sdirk3_crosses_the_singular_passage_with_the_reference() {
    let path = run(Method::Sdirk3, 0.01, 1e-6, 0.1);
    let reference = reference();
    let d = report("sdirk3", &path, reference);
    assert!(path.tilt < 1e-6, "sdirk3 left the parallelogram branch: rung tilt {:.3e} rad", path.tilt);
    assert!(d < 3.3e-3, "sdirk3 is {d:.3e} m from RK4 (dt 5e-4)");
    // L-stable: it damps a little (measured −1.6e-3 J over 1.3 s from rest)
    assert!(path.energy_change.abs() < 2e-3, "sdirk3: energy changed by {:.3e} J", path.energy_change);
}

/// The implicit midpoint rule at the scene's dt (5e-4 s) crosses the passage
/// by halving the steps where its Newton iteration fails (down to h/512
/// here; `Implicit::midpoint_step`). Before, it stopped at t = 0.81 s with
/// "Newton iteration did not converge" (the last update 383 × its
/// tolerance: the accelerations' rounding near the singular configuration,
/// ∝ h in the update, above the tolerance at h and at h/4 alike). The bound
/// on the distance from RK4 is the midpoint's own second-order error:
/// measured 7e-5 m at 0.75 s over the scene's run from rest, before any
/// halving, and 1.8e-4 m at most over 2 s; here it starts from RK4's state.
/// Energy: measured +4.8e-4 J over the span (sdirk3 −9.4e-4 J), the work of
/// the constraint forces on the pieces' drift before each projection.
#[test]
fn implicit_midpoint_halves_its_steps_through_the_singular_passage() {
    let path = run(Method::Midpoint, 5e-4, 1e-6, 0.1);
    let reference = reference();
    let d = report("midpoint", &path, reference);
    assert!(path.rejected > 0, "the midpoint never halved a step: the passage is not tested");
    assert!(path.tilt < 1e-6, "midpoint left the parallelogram branch: rung tilt {:.3e} rad", path.tilt);
    assert!(d < 3.3e-4, "midpoint is {d:.3e} m from RK4 (dt 5e-4)");
    assert!(path.energy_change.abs() < 1e-3, "midpoint: energy changed by {:.3e} J", path.energy_change);
}
