//! Issue 10, priority 6: the mechanism tier's per-step overhead. Once the sizes
//! of a system are reached, a step allocates nothing (the symbolic analysis, the
//! factor's slots and every scratch vector are kept), and a factorisation of the
//! very system factored last is skipped with bitwise the same result.
//!
//! Allocations are counted by a global allocator, per thread (the test harness
//! runs tests on several threads at once; the code under test here is serial:
//! these systems are far below the parallel-rows threshold).

#[path = "common/solver_gen.rs"]
mod solver_gen;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use mx2d::scene::Scene;
use mx2d::solver::{ConstraintSolver, SparseJacobian};
use solver_gen::*;

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards to the system allocator; the thread-local counter is a const
// `Cell` (no allocation, no destructor), read with `try_with` in case of use
// during thread teardown.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as the caller's
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: same contract as the caller's
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(|c| c.get())
}

/// Two Jacobians of the same pattern with different values: a 12 × 12 grid of
/// bodies (loops, fill) built from two seeds.
fn grid_pair(all_revolute: bool) -> (SparseJacobian, SparseJacobian, Vec<[f64; 3]>, Vec<f64>) {
    let (mut j1, mut j2) = (SparseJacobian::new(), SparseJacobian::new());
    grid(&mut Rng(1), 12, 12, &mut j1, all_revolute);
    grid(&mut Rng(2), 12, 12, &mut j2, all_revolute);
    assert_eq!(j1.n_rows(), j2.n_rows());
    let mut rng = Rng(3);
    let inv_mass = inv_masses(&mut rng, 144);
    let rhs = (0..j1.n_rows()).map(|_| rng.range(-1.0, 1.0)).collect();
    (j1, j2, inv_mass, rhs)
}

/// Factor + solve on a loop system, values changing every call, pattern fixed:
/// no allocation after the first two calls, on the regular path and on the
/// regularised one (the all-revolute grid is redundant: refinement scratch).
#[test]
fn sparse_solve_allocates_nothing_once_sizes_are_reached() {
    for all_revolute in [false, true] {
        let (j1, j2, inv_mass, rhs) = grid_pair(all_revolute);
        let mut solver = ConstraintSolver::new();
        let mut lambda = vec![0.0; j1.n_rows()];
        for jac in [&j1, &j2] {
            solver.solve(jac, &inv_mass, None, &rhs, &mut lambda).expect("solve");
        }
        let before = allocations();
        for k in 0..10 {
            let jac = if k % 2 == 0 { &j1 } else { &j2 };
            let rep = solver.solve(jac, &inv_mass, None, &rhs, &mut lambda).expect("solve");
            assert_eq!(rep.regularized, all_revolute, "the all-revolute grid must take the regularised path");
        }
        assert_eq!(allocations() - before, 0, "allocations in 10 solves (all_revolute = {all_revolute})");
        // a 12 × 12 grid has long columns: the supernodal kernel is the one checked here
        assert!(solver.factors().is_supernodal());
        assert_eq!(solver.reused_factorizations(), 0, "values changed every call: nothing to reuse");
    }
}

/// A second factorisation of the same system is skipped, and the multipliers
/// are bitwise those of a fresh solver; any change of J (one entry, one ulp)
/// is factored anew, again bitwise as a fresh solver.
#[test]
fn the_same_system_is_factored_once_with_bitwise_the_same_result() {
    let (j1, _, inv_mass, rhs) = grid_pair(false);
    let fresh = |jac: &SparseJacobian| {
        let mut s = ConstraintSolver::new();
        let mut l = vec![0.0; jac.n_rows()];
        s.solve(jac, &inv_mass, None, &rhs, &mut l).expect("solve");
        l
    };
    let mut solver = ConstraintSolver::new();
    let mut lambda = vec![0.0; j1.n_rows()];
    solver.solve(&j1, &inv_mass, None, &rhs, &mut lambda).expect("solve");
    solver.solve(&j1, &inv_mass, None, &rhs, &mut lambda).expect("solve");
    assert_eq!(solver.reused_factorizations(), 1);
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&lambda), bits(&fresh(&j1)));

    // the same pattern, one entry moved by one ulp: a new factorisation
    let (t1, t2) = (triangle(0), triangle(1));
    assert!(!t1.bitwise_eq(&t2));
    let tri_mass = [[1.0, 1.0, 3.0], [0.5, 0.5, 2.0], [2.0, 2.0, 5.0]];
    let tri_rhs = [0.3, -0.2, 0.1, 0.7, -0.4, 0.25, 0.05, -0.6];
    let mut tri = ConstraintSolver::new();
    let mut l = vec![0.0; 8];
    for jac in [&t1, &t2] {
        tri.solve(jac, &tri_mass, None, &tri_rhs, &mut l).expect("solve");
        let mut s = ConstraintSolver::new();
        let mut lf = vec![0.0; 8];
        s.solve(jac, &tri_mass, None, &tri_rhs, &mut lf).expect("solve");
        assert_eq!(bits(&l), bits(&lf));
    }
    assert_eq!(tri.reused_factorizations(), 0, "a J changed by one ulp must be factored");
    // and a changed mass too
    let mut heavier = tri_mass;
    heavier[1][2] *= 0.5;
    tri.solve(&t2, &heavier, None, &tri_rhs, &mut l).expect("solve");
    assert_eq!(tri.reused_factorizations(), 0, "a changed mass must be factored");
    tri.solve(&t2, &heavier, None, &tri_rhs, &mut l).expect("solve");
    assert_eq!(tri.reused_factorizations(), 1);
}

/// The same-system test goes by J's values identity (no copy of J is kept):
/// a rewrite of a block through `set_values` — even with the bits already
/// there — is a new identity and a new factorisation; no rewrite keeps it and
/// the factor. A clone or a `copy_from` has no identity until it changes,
/// so two Jacobians never share one (their solves are factored and bitwise a
/// fresh solver's), while a J without identity still finds its own copy.
#[test]
fn values_identity_decides_the_reuse() {
    let tri_mass = [[1.0, 1.0, 3.0], [0.5, 0.5, 2.0], [2.0, 2.0, 5.0]];
    let tri_rhs = [0.3, -0.2, 0.1, 0.7, -0.4, 0.25, 0.05, -0.6];
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let fresh = |jac: &SparseJacobian| {
        let mut s = ConstraintSolver::new();
        let mut l = vec![0.0; 8];
        s.solve(jac, &tri_mass, None, &tri_rhs, &mut l).expect("solve");
        bits(&l)
    };
    let mut t = triangle(0);
    let id0 = t.values_identity().expect("a built J has an identity");
    let mut solver = ConstraintSolver::new();
    let mut l = vec![0.0; 8];
    solver.solve(&t, &tri_mass, None, &tri_rhs, &mut l).expect("solve");
    solver.solve(&t, &tri_mass, None, &tri_rhs, &mut l).expect("solve");
    assert_eq!(solver.reused_factorizations(), 1, "unchanged J: factor kept");

    // the hinge's blocks rewritten with the same bits: a new identity, refactored
    let same = [point_block([0.3, 0.1], 1.0), point_block([-0.2, 0.05], -1.0)];
    t.set_values(mx2d::solver::ConstraintId(1), &same);
    let id1 = t.values_identity().expect("identity");
    assert_ne!(id0, id1);
    solver.solve(&t, &tri_mass, None, &tri_rhs, &mut l).expect("solve");
    assert_eq!(solver.reused_factorizations(), 1, "a rewritten J is factored");
    assert_eq!(bits(&l), fresh(&t));

    // a changed value: factored, bitwise a fresh solver's λ
    let moved = [point_block([0.31, 0.1], 1.0), point_block([-0.2, 0.05], -1.0)];
    t.set_values(mx2d::solver::ConstraintId(1), &moved);
    solver.solve(&t, &tri_mass, None, &tri_rhs, &mut l).expect("solve");
    assert_eq!(solver.reused_factorizations(), 1);
    assert_eq!(bits(&l), fresh(&t));

    // clones and copies have no identity; changed apart, they never share one
    let mut a = t.clone();
    let mut b = SparseJacobian::new();
    b.copy_from(&t);
    assert!(a.values_identity().is_none() && b.values_identity().is_none());
    solver.solve(&a, &tri_mass, None, &tri_rhs, &mut l).expect("solve");
    assert_eq!(solver.reused_factorizations(), 1, "a J without identity is not taken for t");
    assert_eq!(bits(&l), fresh(&a));
    solver.solve(&a, &tri_mass, None, &tri_rhs, &mut l).expect("solve");
    assert_eq!(solver.reused_factorizations(), 2, "a J without identity finds its own copy");
    a.set_values(mx2d::solver::ConstraintId(1), &same);
    b.set_values(mx2d::solver::ConstraintId(1), &moved);
    let (ia, ib) = (a.values_identity().expect("a"), b.values_identity().expect("b"));
    assert!(ia != ib && ia != t.values_identity().expect("t") && ib != t.values_identity().expect("t"));
    for jac in [&a, &b, &a] {
        solver.solve(jac, &tri_mass, None, &tri_rhs, &mut l).expect("solve");
        assert_eq!(bits(&l), fresh(jac));
    }
    assert_eq!(solver.reused_factorizations(), 2);
}

/// The held inverse masses (`set_inverse_masses`, `solve_held`) are
/// recognised by their version, not by a copy: the same masses set again (bit
/// for bit) keep the factor, a changed mass or rank metric is factored anew,
/// and every λ is bitwise a fresh solver's with the masses given. Factors of
/// given masses are not taken for held ones (and the other way round), and a
/// step of held solves allocates nothing.
#[test]
fn held_masses_decide_the_reuse_by_version() {
    let tri_mass = [[1.0, 1.0, 3.0], [0.5, 0.5, 2.0], [2.0, 2.0, 5.0]];
    let tri_rhs = [0.3, -0.2, 0.1, 0.7, -0.4, 0.25, 0.05, -0.6];
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    let fresh = |mass: &[[f64; 3]]| {
        let mut s = ConstraintSolver::new();
        let mut l = vec![0.0; 8];
        s.solve(&triangle(0), mass, None, &tri_rhs, &mut l).expect("solve");
        bits(&l)
    };
    let t = triangle(0);
    let mut solver = ConstraintSolver::new();
    let mut l = vec![0.0; 8];
    solver.set_inverse_masses(&tri_mass);
    solver.solve_held(&t, &tri_rhs, &mut l).expect("solve");
    assert_eq!(bits(&l), fresh(&tri_mass));
    solver.set_inverse_masses(&tri_mass);
    solver.solve_held(&t, &tri_rhs, &mut l).expect("solve");
    assert_eq!(solver.reused_factorizations(), 1, "the same masses set again: factor kept");
    assert_eq!(bits(&l), fresh(&tri_mass));
    // the same masses given: not recorded as held ones, factored
    solver.solve(&t, &tri_mass, None, &tri_rhs, &mut l).expect("solve");
    assert_eq!(solver.reused_factorizations(), 1);
    // held after given: compared with the given copy bit for bit, kept
    solver.solve_held(&t, &tri_rhs, &mut l).expect("solve");
    assert_eq!(solver.reused_factorizations(), 2);
    // a changed mass: factored, bitwise a fresh solver's λ
    let mut heavier = tri_mass;
    heavier[1][2] *= 0.5;
    solver.set_inverse_masses(&heavier);
    solver.solve_held(&t, &tri_rhs, &mut l).expect("solve");
    assert_eq!(solver.reused_factorizations(), 2, "a changed held mass must be factored");
    assert_eq!(bits(&l), fresh(&heavier));
    // a changed rank metric: factored; the same one set again: kept
    let metric = [[1.0, 1.0, 4.0]; 3];
    solver.set_rank_metric(&metric);
    solver.solve_held(&t, &tri_rhs, &mut l).expect("solve");
    assert_eq!(solver.reused_factorizations(), 2, "a changed rank metric must be factored");
    solver.set_rank_metric(&metric);
    solver.set_inverse_masses(&heavier);
    let before = allocations();
    solver.solve_held(&t, &tri_rhs, &mut l).expect("solve");
    solver.factor_held(&t).expect("factor");
    assert_eq!(allocations(), before, "held solves allocate nothing");
    assert_eq!(solver.reused_factorizations(), 4);
    // new held masses are checked again (A's assembly skips the check only
    // for the version it last assembled with), and a body made static
    // changes A's pattern: bitwise a fresh solver's λ
    let mut broken = heavier;
    broken[2][0] = f64::NAN;
    solver.set_inverse_masses(&broken);
    assert!(solver.solve_held(&t, &tri_rhs, &mut l).is_err(), "a NaN held mass is refused");
    let mut pinned = heavier;
    pinned[2] = [0.0; 3];
    solver.set_inverse_masses(&pinned);
    solver.set_rank_metric(&[]);
    solver.solve_held(&t, &tri_rhs, &mut l).expect("solve");
    assert_eq!(bits(&l), fresh(&pinned));
    solver.set_inverse_masses(&heavier);
    solver.solve_held(&t, &tri_rhs, &mut l).expect("solve");
    assert_eq!(bits(&l), fresh(&heavier));
}

/// Three bodies in a closed loop (body 0 pinned, hinges 0–1, 1–2, 2–0); the
/// first anchor's x moved by `ulps` units in the last place.
fn triangle(ulps: u64) -> SparseJacobian {
    let mut j = SparseJacobian::new();
    j.clear(3);
    let x = f64::from_bits(0.3f64.to_bits() + ulps);
    j.push(2, &[(0, point_block([0.0, 0.0], 1.0))]).expect("pin");
    j.push(2, &[(0, point_block([x, 0.1], 1.0)), (1, point_block([-0.2, 0.05], -1.0))]).expect("hinge");
    j.push(2, &[(1, point_block([0.25, -0.1], 1.0)), (2, point_block([-0.3, 0.2], -1.0))]).expect("hinge");
    j.push(2, &[(2, point_block([0.1, 0.3], 1.0)), (0, point_block([-0.15, -0.2], -1.0))]).expect("hinge");
    j
}

/// The many-loop linkage of issue 10 (99 bars, 132 pins) stepped with RK4 and
/// the projection: after a few warm-up steps, a step allocates nothing.
#[test]
fn linkage_steps_allocate_nothing() {
    let scene = Scene::load(std::path::Path::new("scenes/linkage_loops.ron"), &[]).expect("scene");
    let mut world = scene.build_world().expect("world");
    for _ in 0..5 {
        world.step().expect("step");
    }
    let before = allocations();
    for _ in 0..20 {
        world.step().expect("step");
    }
    assert_eq!(allocations() - before, 0, "allocations in 20 RK4 steps of the linkage");
}

/// The soft-step contact path in steady state: the 10-box stack
/// (`scenes/box_stack.ron`, soft step) resting on the floor. Once the contact
/// buffers (broadphase sweep, manifolds, warm-start arrays) have grown, a step
/// allocates nothing on the stepping thread. The warm-up (2 s) lets the stack
/// settle so that the set of contacts — and so every buffer size — is steady.
#[test]
fn resting_stack_soft_steps_allocate_nothing() {
    let scene = Scene::load(std::path::Path::new("scenes/box_stack.ron"), &[]).expect("scene");
    let mut world = scene.build_world().expect("world");
    for _ in 0..120 {
        world.step().expect("step");
    }
    let before = allocations();
    for _ in 0..20 {
        world.step().expect("step");
    }
    assert_eq!(allocations() - before, 0, "allocations in 20 soft steps of the resting stack");
}

/// The implicit SDIRK3 on the sparse Newton model: once its arrays (stages,
/// the per-body model and its finite-difference scratch, the factors of the
/// Newton matrix and of the rank metric) have grown, steps of the linkage —
/// fresh Newton Jacobians included — allocate nothing. The warm-up runs 1.2 s
/// at a large step (through the cells' singular passage near 1 s, where
/// Newton Jacobians are frequent), then the state goes back to t = 0 and the
/// same stretch is measured.
#[test]
fn linkage_sdirk3_steps_allocate_nothing() {
    let scene = Scene::load(std::path::Path::new("scenes/linkage_loops.ron"), &[]).expect("scene");
    let mut world = scene.build_world().expect("world");
    world.set_integrator(mx2d::integrator::Method::Sdirk3);
    world.set_tolerance(1e-6);
    world.dt = 0.02;
    let (q0, v0) = {
        let (q, v) = world.state_vectors();
        (q.to_vec(), v.to_vec())
    };
    for _ in 0..60 {
        world.step().expect("step");
    }
    world.set_state_vectors(&q0, &v0);
    let jacobians = world.integrator_stats().jacobians;
    let before = allocations();
    for _ in 0..10 {
        world.step().expect("step");
    }
    let allocated = allocations() - before;
    assert!(world.integrator_stats().jacobians > jacobians, "no Newton Jacobian in the measured steps");
    assert_eq!(allocated, 0, "allocations in 10 SDIRK3 steps of the linkage");
}

/// The four-bar (`scenes/four_bar.ron`) with every body's inertia × `scale`,
/// stepped `warm_up` steps; returns it with the allocations of `steps` more.
fn four_bar_allocations(scale: f64, warm_up: usize, steps: usize) -> (mx2d::world::World, u64) {
    let scene = Scene::load(std::path::Path::new("scenes/four_bar.ron"), &[]).expect("scene");
    let mut world = scene.build_world().expect("world");
    for body in world.bodies.as_mut_slice() {
        body.inertia *= scale;
    }
    for _ in 0..warm_up {
        world.step().expect("step");
    }
    let before = allocations();
    for _ in 0..steps {
        world.step().expect("step");
    }
    let allocated = allocations() - before;
    (world, allocated)
}

/// The augmented solve of nearly massless rotations (`constraint::augmented`):
/// the four-bar (`scenes/four_bar.ron`) with every bar's inertia × 1e-6
/// (m·ℓ²/I = 3e6) takes it at every stage, and after a few warm-up steps a
/// step allocates nothing. (At × 1e-9 A is singular in f64 at some stages and
/// not at others, and the solver's list of such constraints, an `Arc` handed
/// out in its reports, takes sets not seen before for a while: see
/// `nearly_massless_rotations_steps_allocate_nothing`.)
#[test]
fn near_point_four_bar_steps_allocate_nothing() {
    let (world, allocated) = four_bar_allocations(1e-6, 5, 20);
    assert_eq!(allocated, 0, "allocations in 20 RK4 steps of the near-point four-bar");
    assert_eq!(world.warnings().count(), 0, "{:?}", world.warnings().collect::<Vec<_>>());
}

/// The four-bar with every body's inertia scaled by 1e-9 (J ≪ m·ℓ²: the
/// nearly massless rotations of issue 10, solved by the augmented path; the
/// factor's list of badly scaled constraints changes with roundoff from stage
/// to stage): once the lists seen have their buffers (200 steps), 200 more
/// steps allocate nothing. Before, a list not among the last four was
/// allocated anew: 79 allocations in those 200 steps.
#[test]
fn nearly_massless_rotations_steps_allocate_nothing() {
    let (_, allocated) = four_bar_allocations(1e-9, 200, 200);
    assert_eq!(allocated, 0, "allocations in 200 RK4 steps of the four-bar at inertias × 1e-9");
}
