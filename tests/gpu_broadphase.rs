//! GPU grid broadphase against its CPU twin and sweep-and-prune: identical
//! sorted pair sets.

mod common;

use common::{Layout, Radii, discs, gpu, scene_suite};
use glam::Vec2;
use mx2d::broadphase::{GridBroadphase, SweepAndPrune, brute_force_pairs};
use mx2d::gpu::{GpuGridBroadphase, GpuOptions};

#[test]
fn gpu_pairs_equal_cpu_grid_and_sweep_and_prune() {
    let Some(ctx) = gpu(GpuOptions::default()) else {
        return;
    };
    let mut gpu_grid = GpuGridBroadphase::new(&ctx).map_err(|e| e.to_string()).unwrap();
    let mut cpu_grid = GridBroadphase::new();
    let mut sap = SweepAndPrune::new();
    let (mut g, mut c, mut s) = (Vec::new(), Vec::new(), Vec::new());
    for (name, boxes) in scene_suite(&[100, 10_000, 100_000]) {
        let report = gpu_grid.find_pairs(&ctx, &boxes, &mut g).map_err(|e| format!("{name}: {e}")).unwrap();
        cpu_grid.find_pairs(&boxes, &mut c);
        sap.find_pairs(&boxes, &mut s);
        eprintln!("{name}: {} pairs, {:?}", g.len(), report);
        assert_eq!(c, s, "cpu grid vs sweep-and-prune: {name}");
        assert_eq!(g.len(), c.len(), "pair count gpu vs cpu: {name}");
        assert_eq!(g, c, "gpu vs cpu grid: {name}");
    }
}

#[test]
fn overflowing_pair_buffer_is_grown_and_every_pair_found() {
    let Some(ctx) = gpu(GpuOptions::default()) else {
        return;
    };
    let mut gpu_grid = GpuGridBroadphase::new(&ctx).map_err(|e| e.to_string()).unwrap();
    // 2000 discs of radius 1 within 0.5 of each other: all 1,999,000 pairs,
    // far over the first guess of 8,000.
    let boxes = discs(2000, Layout::OneCell { origin: Vec2::new(-3.0, 9.0), extent: 0.5 }, Radii::Uniform(1.0), 5);
    let mut pairs = Vec::new();
    let report = gpu_grid.find_pairs(&ctx, &boxes, &mut pairs).map_err(|e| e.to_string()).unwrap();
    assert!(report.reruns >= 1, "{report:?}");
    assert_eq!(pairs.len(), 2000 * 1999 / 2);
    assert_eq!(pairs, brute_force_pairs(&boxes));
    // The grown buffers are kept: the same scene again needs no rerun.
    let report = gpu_grid.find_pairs(&ctx, &boxes, &mut pairs).map_err(|e| e.to_string()).unwrap();
    assert_eq!(report.reruns, 0);
}

#[test]
fn two_dimensional_dispatch_gives_the_same_pairs() {
    // At most 20 workgroups per dimension: 10^4 boxes need 40 → a 20 × 2 grid,
    // and the prefix sum's first level (≥ 10^4 buckets) a 2D grid too.
    let Some(ctx) = gpu(GpuOptions { max_workgroups_per_dimension: Some(20), max_binding_bytes: None }) else {
        return;
    };
    let mut gpu_grid = GpuGridBroadphase::new(&ctx).map_err(|e| e.to_string()).unwrap();
    let boxes =
        discs(10_000, Layout::Spread { origin: Vec2::new(-50.0, -80.0), density: 0.5 }, Radii::Varying(0.1, 1.5), 11);
    let (mut g, mut c) = (Vec::new(), Vec::new());
    gpu_grid.find_pairs(&ctx, &boxes, &mut g).map_err(|e| e.to_string()).unwrap();
    GridBroadphase::new().find_pairs(&boxes, &mut c);
    assert!(!c.is_empty());
    assert_eq!(g, c);
}
