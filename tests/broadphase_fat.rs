//! The persistent fat-box pairs against a broadphase from scratch: the same
//! sorted pairs at every call, for moving scenes, on several pool sizes.

mod common;

use common::Rng;
use glam::Vec2;
use mx2d::broadphase::{Aabb, FatBoxPairs, GridBroadphase, SweepAndPrune, brute_force_pairs};

/// How the bodies of a scene move from call to call.
#[derive(Clone, Copy, Debug)]
enum Motion {
    /// A small random walk (most bodies stay in their fat boxes).
    Jitter,
    /// Everything falls together (a pile sagging: many leave at once).
    Fall,
    /// A few bodies jump far each call, the rest keep still.
    Teleport,
    /// Sizes change too (boxes grow and shrink), and some become invalid
    /// (NaN, min > max) or infinite for a while.
    Wild,
}

/// `n` boxes of sides 0.5–1.5 on a square of side ~1.1·√n (about 1 to 3
/// overlaps per box), moved `calls` times; after each call `check` gets the
/// boxes.
fn run_scene(n: usize, motion: Motion, calls: usize, seed: u64, mut check: impl FnMut(usize, &[Aabb])) {
    let mut rng = Rng::new(seed);
    let side = 1.1 * (n as f32).sqrt();
    let mut centre: Vec<Vec2> = (0..n).map(|_| Vec2::new(rng.range(0.0, side), rng.range(0.0, side))).collect();
    let mut half: Vec<Vec2> = (0..n).map(|_| Vec2::new(rng.range(0.25, 0.75), rng.range(0.25, 0.75))).collect();
    let mut boxes = vec![Aabb::default(); n];
    for call in 0..calls {
        for i in 0..n {
            match motion {
                Motion::Jitter => centre[i] += Vec2::new(rng.range(-0.02, 0.02), rng.range(-0.02, 0.02)),
                Motion::Fall => centre[i].y -= 0.01 * (1.0 + centre[i].y / side),
                Motion::Teleport => {
                    if rng.range(0.0, 1.0) < 0.01 {
                        centre[i] = Vec2::new(rng.range(0.0, side), rng.range(0.0, side));
                    }
                }
                Motion::Wild => {
                    centre[i] += Vec2::new(rng.range(-0.2, 0.2), rng.range(-0.2, 0.2));
                    half[i] = (half[i] * rng.range(0.8, 1.25)).clamp(Vec2::splat(0.05), Vec2::splat(2.0));
                }
            }
            boxes[i] = Aabb::new(centre[i] - half[i], centre[i] + half[i]);
            if let Motion::Wild = motion {
                let r = rng.range(0.0, 1.0);
                if r < 0.01 {
                    boxes[i].min.x = f32::NAN;
                } else if r < 0.02 {
                    boxes[i] = Aabb::new(boxes[i].max, boxes[i].min);
                } else if r < 0.022 {
                    boxes[i].max.y = f32::INFINITY;
                }
            }
        }
        check(call, &boxes);
    }
}

/// The fat pairs (rebuilt by `rebuild_with`) against sweep-and-prune from
/// scratch at every call of every motion.
fn fat_pairs_match_scratch(n: usize, calls: usize, grid_rebuild: bool) -> mx2d::broadphase::FatPairStats {
    let mut total = mx2d::broadphase::FatPairStats::default();
    for (k, motion) in [Motion::Jitter, Motion::Fall, Motion::Teleport, Motion::Wild].into_iter().enumerate() {
        let mut fat = FatBoxPairs::new();
        let (mut grid, mut sap_rebuild) = (GridBroadphase::new(), SweepAndPrune::new());
        let mut sap = SweepAndPrune::new();
        let (mut got, mut want) = (Vec::new(), Vec::new());
        run_scene(n, motion, calls, 7 + k as u64, |call, boxes| {
            let mut rebuild = |b: &[Aabb], out: &mut Vec<[u32; 2]>| {
                if grid_rebuild { grid.find_pairs(b, out) } else { sap_rebuild.find_pairs(b, out) }
            };
            fat.find_pairs(boxes, &mut rebuild, &mut got);
            sap.find_pairs(boxes, &mut want);
            if n <= 300 {
                assert_eq!(want, brute_force_pairs(boxes), "sweep-and-prune vs brute force, {motion:?} call {call}");
            }
            assert!(
                got == want,
                "{motion:?}, {n} boxes, call {call}: {} pairs, {} from scratch",
                got.len(),
                want.len()
            );
        });
        let s = fat.stats();
        total.calls += s.calls;
        total.rebuilds += s.rebuilds;
        total.updates += s.updates;
        total.placed += s.placed;
        total.merges += s.merges;
    }
    total
}

#[test]
fn fat_pairs_equal_the_pairs_from_scratch_while_bodies_move() {
    for (n, calls) in [(2, 50), (17, 200), (300, 200), (3000, 60)] {
        for grid_rebuild in [false, true] {
            let stats = fat_pairs_match_scratch(n, calls, grid_rebuild);
            if n >= 300 {
                // Every path taken: updates of a few bodies, new pairs
                // merged, and rebuilds.
                assert!(stats.updates > 10 && stats.merges > 5 && stats.rebuilds > 4, "{n} boxes: {stats:?}");
            }
        }
    }
}

#[test]
fn fat_pairs_equal_the_pairs_from_scratch_on_every_pool_size() {
    for threads in [1, 2, 3, 16] {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
        let stats = pool.install(|| fat_pairs_match_scratch(5000, 30, true));
        assert!(stats.updates > 0, "{threads} threads: {stats:?}");
    }
}

#[test]
fn fat_pairs_follow_a_change_in_the_number_of_boxes() {
    let mut fat = FatBoxPairs::new();
    let mut sap = SweepAndPrune::new();
    let (mut got, mut want) = (Vec::new(), Vec::new());
    let mut rebuild = |b: &[Aabb], out: &mut Vec<[u32; 2]>| SweepAndPrune::new().find_pairs(b, out);
    for n in [0, 1, 5, 40, 39, 2, 100] {
        let boxes: Vec<Aabb> = (0..n)
            .map(|i| {
                let c = Vec2::new((i % 7) as f32 * 0.9, (i / 7) as f32 * 0.9);
                Aabb::new(c, c + Vec2::ONE)
            })
            .collect();
        fat.find_pairs(&boxes, &mut rebuild, &mut got);
        sap.find_pairs(&boxes, &mut want);
        assert_eq!(got, want, "{n} boxes");
    }
}

/// A box that only just leaves its fat box (by one f32 step) is placed
/// again and its new pair found: the containment test is exact.
#[test]
fn a_box_one_ulp_outside_its_fat_box_is_placed_again() {
    let mut fat = FatBoxPairs::new();
    let mut rebuild = |b: &[Aabb], out: &mut Vec<[u32; 2]>| SweepAndPrune::new().find_pairs(b, out);
    let mut out = Vec::new();
    // Unit boxes 2 apart (a grid of 64 boxes on few cells keeps the update path).
    let mut boxes: Vec<Aabb> = (0..64)
        .map(|i| {
            let c = Vec2::new((i % 8) as f32 * 2.0, (i / 8) as f32 * 2.0);
            Aabb::new(c, c + Vec2::ONE)
        })
        .collect();
    fat.find_pairs(&boxes, &mut rebuild, &mut out);
    assert!(out.is_empty());
    // Box 0's fat box reaches x = 1 + 0.125 = 1.125; box 1 moves to touch
    // x = 1.125 exactly, then box 0 moves right until its right side is one
    // f32 step past its fat box.
    boxes[1] = Aabb::new(Vec2::new(1.125f32.next_up(), 0.0), Vec2::new(2.0, 1.0));
    fat.find_pairs(&boxes, &mut rebuild, &mut out);
    assert!(out.is_empty());
    let right = 1.125f32.next_up();
    boxes[0] = Aabb::new(Vec2::new(right - 1.0, 0.0), Vec2::new(right, 1.0));
    fat.find_pairs(&boxes, &mut rebuild, &mut out);
    assert_eq!(out, vec![[0, 1]], "touching boxes pair");
    assert!(fat.stats().updates >= 2, "{:?}", fat.stats());
}
