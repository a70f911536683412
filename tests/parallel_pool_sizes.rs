//! Every parallel CPU path gives the one-thread result at 1, 2, 3, 7, 16 and 64
//! threads, on every input size from 0 to 130 and some up to 10⁴ (issue 13).
//! Pair sets are integers and sorted, so the comparison is exact.

mod common;

use common::threads::assert_same_at_every_pool_size;
use common::{Layout, Radii, discs, scene_suite};
use glam::Vec2;
use mx2d::broadphase::{GridBroadphase, brute_force_pairs};

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
