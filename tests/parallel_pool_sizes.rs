//! Every parallel CPU path gives the one-thread result at 1, 2, 3, 7, 16 and 64
//! threads, on every input size from 0 to 130 and some up to 10⁴ (issue 13).
//! Pair sets are integers and sorted, so the comparison is exact; floating
//! results are compared bitwise where the algorithm promises it (per-body
//! work, order-keeping collects) and within a stated bound where it does not
//! (a parallel f64 sum).

mod common;

use common::threads::{POOL_SIZES, assert_same_at_every_pool_size, in_pool};
use common::{Layout, Radii, Rng, discs, scene_suite};
use glam::{DVec2, Vec2};
use mx2d::body::Body;
use mx2d::broadphase::{GridBroadphase, SweepAndPrune, brute_force_pairs};
use mx2d::constraint::{Constraint, ConstraintKind};
use mx2d::field::{Falloff, Field, FieldKind, Region};
use mx2d::gpu::{GpuBody, cpu_field_forces};
use mx2d::integrator::Method;
use mx2d::shape::Shape;
use mx2d::world::World;

fn grid_pairs(boxes: &[mx2d::broadphase::Aabb]) -> Vec<[u32; 2]> {
    let mut out = Vec::new();
    GridBroadphase::new().find_pairs(boxes, &mut out);
    out
}

/// Regression, issue 13 part 1: with more threads than runs of boxes (n = 2 on
/// 4 threads), `prefix_sum` indexed per-part tables that the count pass never
/// filled and panicked ("range end index 9 out of range for slice of length 0").
#[test]
fn issue_13_grid_prefix_sum_with_more_threads_than_boxes() {
    for (name, boxes) in scene_suite(&[5, 9, 17]) {
        let pairs = assert_same_at_every_pool_size(&name, || grid_pairs(&boxes));
        assert_eq!(pairs, brute_force_pairs(&boxes), "{name}");
    }
}

#[test]
fn grid_pairs_same_at_every_pool_size_for_sizes_0_to_130() {
    for n in 0..=130usize {
        for (layout, radii) in [
            (Layout::Spread { origin: Vec2::ZERO, density: 0.6 }, Radii::Uniform(0.5)),
            (Layout::OneCell { origin: Vec2::new(3.0, -2.0), extent: 0.4 }, Radii::Varying(0.05, 0.3)),
        ] {
            let boxes = discs(n, layout, radii, n as u64);
            let pairs = assert_same_at_every_pool_size(&format!("n = {n}"), || grid_pairs(&boxes));
            assert_eq!(pairs, brute_force_pairs(&boxes), "n = {n}");
        }
    }
}

#[test]
fn grid_pairs_same_at_every_pool_size_up_to_10_000() {
    for n in [257, 1000, 4099, 10_000] {
        let boxes = discs(n, Layout::Spread { origin: Vec2::ZERO, density: 0.6 }, Radii::Varying(0.1, 0.6), 7);
        assert_same_at_every_pool_size(&format!("n = {n}"), || grid_pairs(&boxes));
    }
}

// ---------------------------------------------------------------------------
// Sweep-and-prune: a parallel sort, fixed 4096-position sweep tasks, a
// parallel sort of the pairs. Integer output, sorted: exact at every size.

fn sap_pairs(boxes: &[mx2d::broadphase::Aabb]) -> Vec<[u32; 2]> {
    let mut out = Vec::new();
    SweepAndPrune::new().find_pairs(boxes, &mut out);
    out
}

#[test]
fn sweep_and_prune_same_at_every_pool_size_for_sizes_0_to_130() {
    for n in 0..=130usize {
        let boxes =
            discs(n, Layout::Spread { origin: Vec2::new(-2.0, 5.0), density: 0.8 }, Radii::Varying(0.1, 0.9), n as u64);
        let pairs = assert_same_at_every_pool_size(&format!("sap n = {n}"), || sap_pairs(&boxes));
        assert_eq!(pairs, brute_force_pairs(&boxes), "sap n = {n}");
    }
}

#[test]
fn sweep_and_prune_same_at_every_pool_size_up_to_10_000() {
    // 4095/4096/4097 straddle one sweep task; 10⁴ makes three.
    for n in [4095, 4096, 4097, 10_000] {
        let boxes =
            discs(n, Layout::Clustered { clusters: 5, sigma: 9.0, origin: Vec2::ZERO }, Radii::Varying(0.05, 0.8), 3);
        let pairs = assert_same_at_every_pool_size(&format!("sap n = {n}"), || sap_pairs(&boxes));
        assert_eq!(pairs, grid_pairs(&boxes), "sap vs grid, n = {n}");
    }
}

// ---------------------------------------------------------------------------
// The field twin (`cpu_field_forces`): one independent f64 evaluation per
// body, rounded to f32, in parallel above 1024 bodies. Nothing is reduced
// across bodies, so the forces are promised bitwise equal.

fn field_bodies(n: usize, seed: u64) -> Vec<GpuBody> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|_| GpuBody {
            position: Vec2::new(rng.range(-40.0, 40.0), rng.range(-40.0, 40.0)),
            velocity: Vec2::new(rng.range(-3.0, 3.0), rng.range(-3.0, 3.0)),
            mass: rng.range(0.1, 5.0),
            radius: rng.range(0.05, 0.6),
        })
        .collect()
}

fn field_force_bits(fields: &[Field], bodies: &[GpuBody]) -> Vec<[u32; 2]> {
    let mut forces = Vec::new();
    cpu_field_forces(fields, bodies, &mut forces);
    forces.iter().map(|f| [f.x.to_bits(), f.y.to_bits()]).collect()
}

#[test]
fn field_twin_bitwise_same_at_every_pool_size() {
    let fields = mx2d::bench::bench_fields(10_000);
    let sizes = (0..=130usize).chain([1023, 1024, 1025, 2049, 4097, 10_000]);
    for n in sizes {
        let bodies = field_bodies(n, 17 + n as u64);
        let bits = assert_same_at_every_pool_size(&format!("fields n = {n}"), || field_force_bits(&fields, &bodies));
        assert_eq!(bits.len(), n);
        // The comparison means something: the fields push every body.
        assert!(bits.iter().all(|b| *b != [0, 0]), "fields n = {n}: a zero force");
    }
}

// ---------------------------------------------------------------------------
// `World`'s `apply_fields` runs per body in parallel from 4096 bodies on. The
// forces, hence positions and velocities, are per-body computations: bitwise.
// The field work is a parallel f64 sum of per-body powers whose association
// depends on rayon's splits; reassociating N terms moves the sum by at most
// (N − 1)·ε·Σ|pᵢ| per evaluation. With every power of one sign (drag only:
// p = −c|v|² ≤ 0, so Σ|pᵢ| = |Σpᵢ|) that bounds the relative change of the
// accumulated work by N·ε ≈ 10⁴ · 1.1·10⁻¹⁶ ≈ 1.1·10⁻¹²; we allow 1e-11.

fn field_world(n: usize, with_attractor: bool) -> World {
    let mut w = World::new(DVec2::new(0.0, -9.81));
    w.dt = 1e-3;
    w.set_integrator(Method::Rk4);
    w.fields.push(Field { kind: FieldKind::Drag { coefficient: 0.4, stokes: true }, region: Region::Everywhere });
    if with_attractor {
        w.fields.push(Field {
            kind: FieldKind::Radial {
                center: DVec2::new(3.0, -1.0),
                strength: -20.0,
                falloff: Falloff::InverseSquare,
                softening: 0.5,
                per_mass: true,
            },
            region: Region::Circle { center: DVec2::ZERO, radius: 30.0 },
        });
    }
    let mut rng = Rng::new(n as u64);
    for i in 0..n {
        let body = Body::builder(format!("b{i}"), Shape::Circle { radius: 0.1 })
            .mass(f64::from(rng.range(0.2, 3.0)))
            .position(DVec2::new(f64::from(rng.range(-50.0, 50.0)), f64::from(rng.range(-50.0, 50.0))))
            .velocity(DVec2::new(f64::from(rng.range(-2.0, 2.0)), f64::from(rng.range(-2.0, 2.0))))
            .build()
            .expect("valid body");
        w.add_body(body).expect("unique name");
    }
    w
}

/// (state bits, field work) after a few RK4 steps.
fn field_world_after_steps(n: usize, with_attractor: bool) -> (Vec<u64>, f64) {
    let mut w = field_world(n, with_attractor);
    for _ in 0..3 {
        w.step().expect("no divergence");
    }
    let work = w.energy().work;
    let (q, v) = w.state_vectors();
    (q.iter().chain(v).map(|x| x.to_bits()).collect(), work)
}

#[test]
fn world_parallel_apply_fields_same_at_every_pool_size() {
    // Either side of the 4096-body threshold, and well past it.
    for n in [4095, 4096, 4097, 10_000] {
        let (reference_state, reference_work) = in_pool(1, || field_world_after_steps(n, false));
        assert!(reference_work < 0.0, "drag does negative work: {reference_work}");
        for &threads in &POOL_SIZES[1..] {
            let (state, work) = in_pool(threads, || field_world_after_steps(n, false));
            assert!(state == reference_state, "n = {n}: state with {threads} threads differs from 1 thread");
            let rel = (work - reference_work).abs() / reference_work.abs();
            assert!(rel <= 1e-11, "n = {n}, {threads} threads: work {work} vs {reference_work} ({rel:.1e})");
        }
    }
    // Mixed-sign powers (an attractor too): the state stays bitwise.
    let n = 5000;
    assert_same_at_every_pool_size("world with attractor", || field_world_after_steps(n, true).0);
}

// ---------------------------------------------------------------------------
// Constraint assembly evaluates the constraints in parallel from 2048 on
// (`collect_into_vec` keeps their order): the whole step is bitwise.

fn pendulums_after_steps(n: usize) -> Vec<u64> {
    let mut w = World::new(DVec2::new(0.0, -9.81));
    w.dt = 1e-3;
    for i in 0..n {
        let x = i as f64 * 3.0;
        let theta = 0.1 + 1e-4 * i as f64;
        let bob = w
            .add_body(
                Body::builder(format!("bob{i}"), Shape::Circle { radius: 0.1 })
                    .mass(1.0 + (i % 7) as f64)
                    .position(DVec2::new(x + theta.sin(), -theta.cos()))
                    .build()
                    .expect("valid body"),
            )
            .expect("unique name");
        w.add_constraint(Constraint {
            name: format!("pin{i}"),
            body_a: bob,
            body_b: None,
            kind: ConstraintKind::Revolute {
                anchor_a: DVec2::new(-theta.sin(), theta.cos()),
                anchor_b: DVec2::new(x, 0.0),
            },
        })
        .expect("valid pin");
    }
    for _ in 0..2 {
        w.step().expect("no divergence");
    }
    let (q, v) = w.state_vectors();
    q.iter().chain(v).map(|x| x.to_bits()).collect()
}

#[test]
fn constraint_assembly_same_at_every_pool_size() {
    for n in [2047, 2048, 2100] {
        assert_same_at_every_pool_size(&format!("pendulums n = {n}"), || pendulums_after_steps(n));
    }
}

// ---------------------------------------------------------------------------
// The bench's CPU paths (field twin, grid, sweep-and-prune, the parallel
// max-error reduction) through `bench::measure`: the same pair counts and
// agreement at every pool size, for the sizes the issue found panicking.

#[test]
fn bench_cpu_paths_same_at_every_pool_size() {
    let args = mx2d::bench::BenchArgs {
        sizes: vec![0, 1, 2, 3, 5, 9, 16, 17, 32, 100, 500, 1000],
        repeats: 1,
        sap_max: 1000,
        no_gpu: true,
        json: None,
        plot: None,
        passes: false,
        order: mx2d::bench::BodyOrder::Random,
        scene: None,
    };
    let rows = assert_same_at_every_pool_size("bench", || {
        let rows = mx2d::bench::measure(&args, None).expect("bench runs");
        rows.iter().map(|r| (r.kernel, r.n, r.pairs, r.agree)).collect::<Vec<_>>()
    });
    assert!(rows.iter().all(|r| r.3 != Some(false)), "{rows:?}");
    assert!(rows.iter().any(|r| r.2.is_some_and(|p| p > 0)), "no row found a pair: {rows:?}");
}
