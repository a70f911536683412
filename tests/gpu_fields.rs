//! GPU field forces against the CPU twin (`src/field.rs` on the same f32
//! inputs and f32-rounded fields).
//!
//! Error measure: for every body, |F_gpu − F_cpu| ≤ 1e-5 · Σ_k |F_k|, where
//! F_k are the individual field contributions (CPU, f64). Using the sum of
//! magnitudes instead of |ΣF_k| keeps the test meaningful where contributions
//! cancel; it equals max(|F|, scale) for a single field.

mod common;

use common::{Rng, gpu};
use glam::{DVec2, Vec2};
use mx2d::field::{Falloff, Field, FieldKind, Region};
use mx2d::gpu::{GpuBody, GpuField, GpuFieldEvaluator, GpuOptions, cpu_field_forces};

fn regions() -> Vec<Region> {
    vec![
        Region::Everywhere,
        Region::Rect { min: DVec2::new(-3.0, -2.0), max: DVec2::new(4.0, 5.0) },
        Region::Circle { center: DVec2::new(1.0, -2.0), radius: 5.0 },
        Region::HalfPlane { point: DVec2::new(0.5, -1.0), normal: DVec2::new(1.0, 2.0) },
    ]
}

fn kinds() -> Vec<FieldKind> {
    let mut kinds = vec![
        FieldKind::Uniform { force: DVec2::new(0.3, -9.81), per_mass: true },
        FieldKind::Uniform { force: DVec2::new(-2.0, 0.7), per_mass: false },
        FieldKind::Drag { coefficient: 0.4, stokes: false },
        FieldKind::Drag { coefficient: 1.7, stokes: true },
    ];
    for (k, falloff) in
        [Falloff::Constant, Falloff::Linear, Falloff::InverseLinear, Falloff::InverseSquare].into_iter().enumerate()
    {
        let softening = if k % 2 == 0 { 0.0 } else { 0.3 };
        kinds.push(FieldKind::Radial {
            center: DVec2::new(0.7, 1.3),
            strength: -2.5,
            falloff,
            softening,
            per_mass: k < 2,
        });
        kinds.push(FieldKind::Vortex {
            center: DVec2::new(-1.1, 0.4),
            strength: 1.5,
            falloff,
            softening: 0.3 - softening,
            per_mass: k >= 2,
        });
    }
    kinds
}

/// Random bodies plus bodies exactly on every region edge (coordinates chosen
/// so that f32 arithmetic on them is exact).
fn bodies(n: usize) -> Vec<GpuBody> {
    let mut rng = Rng::new(42);
    let mut out: Vec<GpuBody> = (0..n)
        .map(|_| GpuBody {
            position: Vec2::new(rng.range(-10.0, 10.0), rng.range(-10.0, 10.0)),
            velocity: Vec2::new(rng.range(-3.0, 3.0), rng.range(-3.0, 3.0)),
            mass: rng.range(0.1, 5.0),
            radius: rng.range(0.01, 0.5),
        })
        .collect();
    let edges = [
        // rectangle edges and corners
        (-3.0, -2.0),
        (4.0, 5.0),
        (-3.0, 1.25),
        (4.0, -0.5),
        (0.75, -2.0),
        (2.5, 5.0),
        (-3.0, 5.0),
        // circle |p − (1, −2)| = 5
        (4.0, 2.0),
        (6.0, -2.0),
        (1.0, 3.0),
        (-2.0, -6.0),
        // half-plane boundary point + t·(2, −1)
        (0.5, -1.0),
        (2.5, -2.0),
        (-3.5, 1.0),
        (8.5, -5.0),
    ];
    for (x, y) in edges {
        out.push(GpuBody { position: Vec2::new(x, y), velocity: Vec2::new(1.0, -0.5), mass: 2.0, radius: 0.25 });
    }
    out
}

fn check_against_cpu(fields: &[Field], bodies: &[GpuBody], gpu_forces: &[Vec2]) {
    let mut cpu = Vec::new();
    cpu_field_forces(fields, bodies, &mut cpu);
    assert_eq!(gpu_forces.len(), bodies.len());
    let rounded: Vec<Field> = fields.iter().map(|f| GpuField::from(f).to_field()).collect();
    let mut worst = 0.0f64;
    for (i, b) in bodies.iter().enumerate() {
        let scale: f64 = rounded
            .iter()
            .map(|f| {
                f.force(b.position.as_dvec2(), b.velocity.as_dvec2(), f64::from(b.mass), f64::from(b.radius)).length()
            })
            .sum();
        let err = (gpu_forces[i].as_dvec2() - cpu[i].as_dvec2()).length();
        let rel = err / scale.max(1e-30);
        worst = worst.max(if err == 0.0 { 0.0 } else { rel });
        assert!(
            err <= 1e-5 * scale,
            "body {i} at {:?}: gpu {:?} cpu {:?} (|Δ| = {err:e}, scale {scale:e})",
            b.position,
            gpu_forces[i],
            cpu[i]
        );
    }
    eprintln!("worst relative error {worst:e} over {} bodies, {} fields", bodies.len(), fields.len());
}

#[test]
fn every_field_and_region_kind_matches_the_cpu_twin() {
    let Some(ctx) = gpu(GpuOptions::default()) else {
        return;
    };
    let mut eval = match GpuFieldEvaluator::new(&ctx) {
        Ok(e) => e,
        Err(e) => panic!("{e}"),
    };
    let bodies = bodies(100_000);
    let mut forces = Vec::new();
    // Each kind in each region on its own (edge decisions per region)...
    for region in regions() {
        for kind in kinds() {
            let fields = [Field { kind, region }];
            eval.compute(&ctx, &fields, &bodies[..10_000], &mut forces).map_err(|e| e.to_string()).unwrap();
            check_against_cpu(&fields, &bodies[..10_000], &forces);
        }
    }
    // ...and all of them at once on the full population, edge bodies included.
    let all: Vec<Field> =
        regions().into_iter().flat_map(|region| kinds().into_iter().map(move |kind| Field { kind, region })).collect();
    let timing = eval.compute(&ctx, &all, &bodies, &mut forces).map_err(|e| e.to_string()).unwrap();
    eprintln!("{} fields on {} bodies: {:?}", all.len(), bodies.len(), timing);
    check_against_cpu(&all, &bodies, &forces);
    // Edge bodies really are on the edges and feel the field (closed regions).
    let n = bodies.len();
    for (k, region) in regions().into_iter().enumerate().skip(1) {
        let field = Field { kind: FieldKind::Uniform { force: DVec2::X, per_mass: false }, region };
        let range = match k {
            1 => n - 15..n - 8,
            2 => n - 8..n - 4,
            _ => n - 4..n,
        };
        eval.compute(&ctx, &[field], &bodies[range.clone()], &mut forces).map_err(|e| e.to_string()).unwrap();
        assert!(forces.iter().all(|f| *f == Vec2::X), "edge bodies of region {k}: {forces:?}");
    }
}

#[test]
fn no_fields_give_zero_force_and_split_buffers_with_2d_dispatch_agree() {
    // 24 · 768-byte bindings → chunks of 768 bodies (3 workgroups each, a
    // 2 × 2 grid at 2 per dimension); then one chunk of 20,000 bodies
    // (79 workgroups) on a 16 × 5 grid.
    let options = [
        GpuOptions { max_workgroups_per_dimension: Some(2), max_binding_bytes: Some(24 * 768), ..Default::default() },
        GpuOptions { max_workgroups_per_dimension: Some(16), ..Default::default() },
    ];
    for opts in options {
        let Some(ctx) = gpu(opts) else { return };
        let mut eval = GpuFieldEvaluator::new(&ctx).map_err(|e| e.to_string()).unwrap();
        let bodies = bodies(20_000);
        let mut forces = Vec::new();
        eval.compute(&ctx, &[], &bodies, &mut forces).map_err(|e| e.to_string()).unwrap();
        assert!(forces.len() == bodies.len() && forces.iter().all(|f| *f == Vec2::ZERO));
        let all: Vec<Field> = regions()
            .into_iter()
            .flat_map(|region| kinds().into_iter().map(move |kind| Field { kind, region }))
            .collect();
        eval.compute(&ctx, &all, &bodies, &mut forces).map_err(|e| e.to_string()).unwrap();
        check_against_cpu(&all, &bodies, &forces);
        eprintln!("bodies per chunk: {}", eval.bodies_per_chunk());
    }
}
