//! Sweep-and-prune along x: the classic reference broadphase.

use super::Aabb;
use rayon::prelude::*;

/// Reusable sweep-and-prune: sorts valid boxes by `min.x`, then each box
/// sweeps forward over the boxes starting before its `max.x` and tests y.
/// Cost grows with the number of x-overlaps (≈ N^1.5 for a uniform square
/// scene), which is why the grid is the production path.
#[derive(Default)]
pub struct SweepAndPrune {
    /// (min.x, box index) of valid boxes, sorted.
    order: Vec<(f32, u32)>,
    /// Pairs found by each task.
    task_pairs: Vec<Vec<[u32; 2]>>,
}

/// Sorted positions handed to one rayon task during the sweep.
const POSITIONS_PER_TASK: usize = 4096;

impl SweepAndPrune {
    /// An empty sweep-and-prune; buffers grow on first use.
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces `out` with every overlapping pair `[i, j]`, `i < j`, sorted
    /// (pair semantics: see [`crate::broadphase`]).
    pub fn find_pairs(&mut self, aabbs: &[Aabb], out: &mut Vec<[u32; 2]>) {
        out.clear();
        self.order.clear();
        self.order.extend(aabbs.iter().enumerate().filter(|(_, a)| a.is_valid()).map(|(i, a)| (a.min.x, i as u32)));
        self.order.par_sort_unstable_by(|p, q| p.0.total_cmp(&q.0).then(p.1.cmp(&q.1)));
        let tasks = self.order.len().div_ceil(POSITIONS_PER_TASK);
        if self.task_pairs.len() < tasks {
            self.task_pairs.resize_with(tasks, Vec::new);
        }
        let order = &self.order[..];
        self.task_pairs[..tasks].par_iter_mut().enumerate().for_each(|(t, pairs)| {
            pairs.clear();
            let first = t * POSITIONS_PER_TASK;
            let last = (first + POSITIONS_PER_TASK).min(order.len());
            for p in first..last {
                let (_, i) = order[p];
                let a = &aabbs[i as usize];
                for &(min_x, j) in &order[p + 1..] {
                    // Sorted by min.x, so b.min.x ≥ a.min.x ≥ ... and once a later
                    // box starts past a.max.x no further one can overlap in x.
                    if min_x > a.max.x {
                        break;
                    }
                    let b = &aabbs[j as usize];
                    if a.overlaps(b) {
                        pairs.push(if i < j { [i, j] } else { [j, i] });
                    }
                }
            }
        });
        for p in &self.task_pairs[..tasks] {
            out.extend_from_slice(p);
        }
        out.par_sort_unstable();
    }
}
