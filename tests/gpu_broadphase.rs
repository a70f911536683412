//! GPU grid broadphase against its CPU twin and sweep-and-prune: identical
//! sorted pair sets.

mod common;

use common::{Layout, Radii, discs, gpu, scene_suite};
use glam::Vec2;
use mx2d::broadphase::{GridBroadphase, SweepAndPrune, brute_force_pairs};
use mx2d::gpu::{GpuError, GpuGridBroadphase, GpuOptions};

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

#[test]
fn arrays_split_over_several_bindings_give_the_same_pairs() {
    // Storage bindings of at most 128 KiB: 9000 boxes (144 kB) take two
    // pages of 8192; the ~2·10⁴ cell entries of 24 bytes (uniform discs of
    // radius 0.5 in cells of 2 m cover 2.25 cells on average) take four
    // pages of 5461, the ~2·10⁴ pairs of the dense scene two pages of 16384,
    // and the clustered scene's hashed table (2^16 buckets, 256 KiB) is
    // shrunk to 2^15. Boxes on two pages and entries within four leave a
    // narrow window, 8192 < n ≤ 9709 boxes of 2.25 entries: hence 9000.
    let limit = 128 * 1024;
    let Some(ctx) = gpu(GpuOptions { max_workgroups_per_dimension: None, max_binding_bytes: Some(limit) }) else {
        return;
    };
    let mut gpu_grid = GpuGridBroadphase::new(&ctx).map_err(|e| e.to_string()).unwrap();
    let scenes = [
        ("spread", Layout::Spread { origin: Vec2::new(-50.0, -80.0), density: 1.2 }),
        ("clustered", Layout::Clustered { clusters: 7, sigma: 12.0, origin: Vec2::new(30.0, -5.0) }),
    ];
    let (mut g, mut c, mut s) = (Vec::new(), Vec::new(), Vec::new());
    let (mut most_entries, mut most_pairs, mut shrunk) = (0, 0, false);
    for (name, layout) in scenes {
        let boxes = discs(9000, layout, Radii::Uniform(0.5), 17);
        let report = gpu_grid.find_pairs(&ctx, &boxes, &mut g).map_err(|e| format!("{name}: {e}")).unwrap();
        let (table, gpu_table) = (gpu_grid.params().table_size, gpu_grid.gpu_params().table_size);
        eprintln!("{name}: {} pairs, {report:?}, table {table} → {gpu_table}", g.len());
        GridBroadphase::new().find_pairs(&boxes, &mut c);
        SweepAndPrune::new().find_pairs(&boxes, &mut s);
        assert_eq!(c, s, "cpu grid vs sweep-and-prune: {name}");
        assert_eq!(g.len(), c.len(), "pair count gpu vs cpu: {name}");
        assert_eq!(g, c, "gpu vs cpu grid: {name}");
        assert!(u64::from(gpu_table) * 4 <= limit, "{name}");
        most_entries = most_entries.max(report.entries as u64);
        most_pairs = most_pairs.max(report.pairs as u64);
        shrunk |= gpu_table < table;
        // Steady state: the same input again needs no rerun.
        let report = gpu_grid.find_pairs(&ctx, &boxes, &mut g).map_err(|e| format!("{name}: {e}")).unwrap();
        assert_eq!(report.reruns, 0, "{name}");
        assert_eq!(g, c, "gpu vs cpu grid, second call: {name}");
    }
    // The split paths really ran: boxes (9000 > 8192 per page), entries and
    // pairs on more than one page, and a shrunk bucket table.
    assert!(most_entries > limit / 24, "{most_entries} entries");
    assert!(most_pairs > limit / 8, "{most_pairs} pairs");
    assert!(shrunk, "no scene needed a smaller bucket table");
}

#[test]
fn input_beyond_every_page_is_a_precise_error() {
    // 16 KiB bindings × 4 pages hold 4096 boxes; 10^4 boxes do not fit.
    let Some(ctx) = gpu(GpuOptions { max_workgroups_per_dimension: None, max_binding_bytes: Some(16 * 1024) }) else {
        return;
    };
    let mut gpu_grid = GpuGridBroadphase::new(&ctx).map_err(|e| e.to_string()).unwrap();
    let boxes = discs(10_000, Layout::Spread { origin: Vec2::ZERO, density: 0.5 }, Radii::Uniform(0.5), 3);
    let mut pairs = Vec::new();
    match gpu_grid.find_pairs(&ctx, &boxes, &mut pairs) {
        Err(GpuError::TooLargeSplit { what, bytes, bindings, binding_bytes }) => {
            assert_eq!((what, bytes, bindings, binding_bytes), ("aabbs", 160_000, 4, 16 * 1024));
        }
        other => panic!("expected TooLargeSplit, got {other:?}"),
    }
}
