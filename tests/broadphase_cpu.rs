//! CPU grid vs sweep-and-prune vs brute force: identical sorted pair sets.

mod common;

use common::{Layout, Radii, discs, scene_suite};
use glam::Vec2;
use mx2d::broadphase::{Aabb, GridBroadphase, SweepAndPrune, brute_force_pairs};

#[test]
fn grid_sap_and_brute_force_agree_on_small_scenes() {
    let mut grid = GridBroadphase::new();
    let mut sap = SweepAndPrune::new();
    let (mut g, mut s) = (Vec::new(), Vec::new());
    for (name, boxes) in scene_suite(&[10, 100, 1500]) {
        let brute = brute_force_pairs(&boxes);
        grid.find_pairs(&boxes, &mut g);
        sap.find_pairs(&boxes, &mut s);
        assert_eq!(g, brute, "grid vs brute force: {name}");
        assert_eq!(s, brute, "sweep-and-prune vs brute force: {name}");
    }
}

#[test]
fn grid_and_sap_agree_on_large_scenes() {
    let mut grid = GridBroadphase::new();
    let mut sap = SweepAndPrune::new();
    let (mut g, mut s) = (Vec::new(), Vec::new());
    for (name, boxes) in scene_suite(&[10_000, 100_000]) {
        grid.find_pairs(&boxes, &mut g);
        sap.find_pairs(&boxes, &mut s);
        assert!(boxes.len() < 10_000 || !g.is_empty(), "{name} should have pairs");
        assert_eq!(g.len(), s.len(), "pair count: {name}");
        assert_eq!(g, s, "grid vs sweep-and-prune: {name}");
    }
}

#[test]
fn touching_counts_and_invalid_boxes_never_pair() {
    let boxes = vec![
        Aabb::new(Vec2::new(0.0, 0.0), Vec2::new(1.0, 1.0)),
        Aabb::new(Vec2::new(1.0, 1.0), Vec2::new(2.0, 2.0)), // touches box 0 at a corner
        Aabb::new(Vec2::new(2.0 + f32::EPSILON * 2.0, 0.0), Vec2::new(3.0, 1.0)),
        Aabb::new(Vec2::new(0.5, 0.5), Vec2::new(0.2, 0.7)), // min.x > max.x: invalid
        Aabb::new(Vec2::new(f32::NAN, 0.0), Vec2::new(1.0, 1.0)),
        Aabb::new(Vec2::new(-1.0, -1.0), Vec2::new(-0.0, 0.0)), // touches box 0 at the origin
    ];
    let mut out = Vec::new();
    GridBroadphase::new().find_pairs(&boxes, &mut out);
    assert_eq!(out, vec![[0, 1], [0, 5]]);
    assert_eq!(brute_force_pairs(&boxes), out);
    SweepAndPrune::new().find_pairs(&boxes, &mut out);
    assert_eq!(out, vec![[0, 1], [0, 5]]);
}

#[test]
fn grid_reuse_across_calls_of_different_sizes() {
    let mut grid = GridBroadphase::new();
    let mut out = Vec::new();
    for (n, seed) in [(5000, 1), (50, 2), (20_000, 3), (0, 4), (700, 5)] {
        let boxes =
            discs(n, Layout::Spread { origin: Vec2::new(-3.0, 4.0), density: 1.0 }, Radii::Varying(0.1, 1.0), seed);
        grid.find_pairs(&boxes, &mut out);
        let mut expected = Vec::new();
        SweepAndPrune::new().find_pairs(&boxes, &mut expected);
        assert_eq!(out, expected, "n = {n}");
    }
}

#[test]
fn hashed_grid_handles_a_sparse_unbounded_world() {
    // Two far-apart clusters force hashed keys (the occupied rectangle is huge).
    let mut boxes =
        discs(2000, Layout::OneCell { origin: Vec2::new(-1.0e6, -1.0e6), extent: 30.0 }, Radii::Uniform(0.5), 7);
    boxes.extend(discs(
        2000,
        Layout::OneCell { origin: Vec2::new(1.0e6, 3.0e5), extent: 30.0 },
        Radii::Uniform(0.5),
        8,
    ));
    let mut grid = GridBroadphase::new();
    let mut out = Vec::new();
    grid.find_pairs(&boxes, &mut out);
    assert_eq!(grid.params().dense, 0);
    assert_eq!(out, brute_force_pairs(&boxes));
}

#[test]
fn grid_handles_widely_mixed_sizes_and_huge_boxes() {
    // A few boxes far larger than the rest force a large cell span S (or the
    // sweep-and-prune fallback); the pair set must not change.
    let mut boxes =
        discs(3000, Layout::Spread { origin: Vec2::new(-20.0, 5.0), density: 0.8 }, Radii::Uniform(0.3), 11);
    boxes.push(Aabb::new(Vec2::new(-1.0e4, -3.0), Vec2::new(1.0e4, 2.0))); // a long floor
    boxes.push(Aabb::from_disc(Vec2::new(10.0, 30.0), 25.0));
    boxes.push(Aabb::new(Vec2::new(f32::NEG_INFINITY, 40.0), Vec2::new(f32::INFINITY, 41.0)));
    boxes.extend(discs(
        500,
        Layout::Spread { origin: Vec2::new(0.0, 0.0), density: 0.2 },
        Radii::Varying(0.05, 4.0),
        12,
    ));
    let mut grid = GridBroadphase::new();
    let mut out = Vec::new();
    grid.find_pairs(&boxes, &mut out);
    assert_eq!(out, brute_force_pairs(&boxes));
    // Without the outliers (moderate spread of sizes), the grid proper runs.
    let moderate = &boxes[..3000];
    grid.find_pairs(moderate, &mut out);
    assert_eq!(out, brute_force_pairs(moderate));
}
