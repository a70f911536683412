//! A submission that runs past the wait timeout is an error naming the
//! kernel and the timeout, not a wait for ever (on the lent H200 the GPU
//! broadphase's first run never returned and its tests hung until killed;
//! with the timeout such a fault names itself). Lavapipe needs tens of
//! milliseconds or more for the job below, far past the 1 µs timeout, so the
//! timeout must fire; the same job under the default timeout must complete
//! and give the CPU twin's forces.

mod common;

use common::gpu;
use glam::{DVec2, Vec2};
use mx2d::field::{Falloff, Field, FieldKind, Region};
use mx2d::gpu::{
    DEFAULT_WAIT_TIMEOUT, GpuBody, GpuError, GpuFieldEvaluator, GpuOptions, cpu_field_forces, parse_wait_timeout,
};
use std::time::Duration;

fn job() -> (Vec<Field>, Vec<GpuBody>) {
    let fields: Vec<Field> = (0..24)
        .map(|k| Field {
            kind: FieldKind::Radial {
                center: DVec2::new(0.1 * k as f64, -0.2),
                strength: -1.0,
                falloff: Falloff::InverseSquare,
                softening: 0.1,
                per_mass: true,
            },
            region: Region::Everywhere,
        })
        .collect();
    let bodies = (0..1_000_000)
        .map(|i| GpuBody {
            position: Vec2::new((i % 1000) as f32 * 0.01, (i / 1000) as f32 * 0.01),
            velocity: Vec2::ZERO,
            mass: 1.0,
            radius: 0.01,
        })
        .collect();
    (fields, bodies)
}

#[test]
fn a_submission_past_the_wait_timeout_is_an_error_naming_the_kernel() {
    let options = GpuOptions { wait_timeout: Some(Duration::from_micros(1)), ..Default::default() };
    let Some(ctx) = gpu(options) else {
        return;
    };
    assert_eq!(ctx.wait_timeout(), Some(Duration::from_micros(1)));
    let (fields, bodies) = job();
    let mut eval = GpuFieldEvaluator::new(&ctx).map_err(|e| e.to_string()).unwrap();
    let mut forces = Vec::new();
    // The job (an 8 MB upload, 24 fields on 10⁶ bodies, an 8 MB readback)
    // takes far more than 1 µs on any adapter; should a fast GPU and a
    // descheduled host still let one run finish before the first wait, the
    // job grows (the fields repeated) and runs again.
    let mut fields = fields;
    for _ in 0..4 {
        match eval.compute(&ctx, &fields, &bodies, &mut forces) {
            Err(GpuError::Timeout { kernel, seconds, .. }) => {
                assert!(!kernel.is_empty());
                assert!((seconds - 1e-6).abs() < 1e-12, "{seconds}");
                let message = GpuError::Timeout { kernel, seconds, adapter: ctx.adapter_name().into() }.to_string();
                assert!(message.contains("MX2D_GPU_TIMEOUT_S") && message.contains(kernel), "{message}");
                return;
            }
            Ok(_) => fields.extend_from_within(..),
            Err(e) => panic!("expected a timeout, got {e}"),
        }
    }
    panic!("four ever larger jobs finished within the 1 µs wait timeout");
}

#[test]
fn the_same_job_under_the_default_timeout_completes() {
    let options = GpuOptions { wait_timeout: Some(DEFAULT_WAIT_TIMEOUT), ..Default::default() };
    let Some(ctx) = gpu(options) else {
        return;
    };
    let (fields, bodies) = job();
    let mut eval = GpuFieldEvaluator::new(&ctx).map_err(|e| e.to_string()).unwrap();
    let mut forces = Vec::new();
    eval.compute(&ctx, &fields, &bodies, &mut forces).map_err(|e| e.to_string()).unwrap();
    // The fields' own tolerance (tests/gpu_fields.rs): 1e-5 of the sum of
    // the contributions' magnitudes, on the first 1,000 bodies.
    let probe = &bodies[..1000];
    let (mut expected, mut one) = (Vec::new(), Vec::new());
    cpu_field_forces(&fields, probe, &mut expected);
    let mut scale = vec![0.0f32; probe.len()];
    for field in fields.chunks(1) {
        cpu_field_forces(field, probe, &mut one);
        scale.iter_mut().zip(&one).for_each(|(s, f)| *s += f.length());
    }
    for (i, ((g, c), s)) in forces.iter().zip(&expected).zip(&scale).enumerate() {
        assert!((*g - *c).length() <= 1e-5 * s, "body {i}: {g} vs {c} (scale {s})");
    }
}

#[test]
fn the_timeout_setting_is_read_strictly() {
    assert_eq!(parse_wait_timeout("0"), Ok(None));
    assert_eq!(parse_wait_timeout(" 2.5 "), Ok(Some(Duration::from_millis(2500))));
    assert_eq!(parse_wait_timeout("0.001"), Ok(Some(Duration::from_millis(1))));
    for bad in ["", "-1", "-0", "1e-10", "ten", "inf", "NaN", "1e12"] {
        let error = parse_wait_timeout(bad).expect_err(bad);
        assert!(error.contains("MX2D_GPU_TIMEOUT_S"), "{error}");
    }
}
