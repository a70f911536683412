//! Uniform-grid broadphase on the CPU: the twin of `shaders/broadphase.wgsl`.
//!
//! The algorithm (identical on the GPU, stage for stage):
//! 1. [`GridParams::for_aabbs`] picks a cell size and a key function: a dense
//!    row-major index over the occupied cell rectangle when that rectangle is
//!    small, otherwise a hash of the cell coordinates into a power-of-two table
//!    (the world is unbounded; collisions only cost time, never correctness).
//! 2. Count: every valid box adds 1 to the bucket of every cell it covers.
//! 3. Exclusive prefix sum of the bucket counts → bucket starts.
//! 4. Scatter: every (box, cell) entry takes a slot with an atomic increment of
//!    its bucket's cursor; afterwards the cursor of bucket k is its end, and
//!    the start of bucket k is the end of bucket k − 1 (one table, no copy).
//! 5. Pairs: box `a` looks at the buckets of its cells; entry `(b, cell)` makes
//!    the pair `[a, b]` iff `b > a`, the entry's cell is the cell being looked
//!    at (hash collisions), the boxes overlap, and that cell is the *reference
//!    cell* of the pair: the cell containing `max(a.min, b.min)`, the lower-left
//!    corner of the intersection. That corner lies in exactly one cell and in
//!    both boxes, so each pair is found exactly once without any dedupe pass.
//!
//! Cell coordinates are `floor(x · inv_cell_size)` in f32 with a correctly
//! rounded product, clamped to ±2³⁰; the product is monotone in `x`, so the
//! reference cell is always inside both boxes' cell ranges, on the CPU and on
//! the GPU alike.

use super::Aabb;
use bytemuck::{Pod, Zeroable};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};

/// Largest cell coordinate magnitude; keeps `ix − origin` and the row-major
/// index inside i32/u32 arithmetic for any finite input.
const CELL_COORD_LIMIT: f32 = (1u32 << 30) as f32;

/// Grid geometry and key function, shared with the GPU as a uniform
/// (`GridParams` in `shaders/broadphase.wgsl`, 32 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GridParams {
    /// Edge length of a square cell (m).
    pub cell_size: f32,
    /// `1 / cell_size`, the factor used for every cell coordinate.
    pub inv_cell_size: f32,
    /// Cell x of the lower-left occupied cell (dense keys).
    pub origin_x: i32,
    /// Cell y of the lower-left occupied cell (dense keys).
    pub origin_y: i32,
    /// Cells per row of the occupied rectangle (dense keys).
    pub width: u32,
    /// Number of buckets (a power of two for hashed keys).
    pub table_size: u32,
    /// 1: dense row-major keys; 0: hashed keys.
    pub dense: u32,
    /// Number of boxes (filled in by the GPU path; unused on the CPU).
    pub box_count: u32,
}

/// Cell coordinate of `x`: `floor(x · inv)`, clamped. Mirrors `cell_coord`
/// in the shader.
#[inline]
pub(crate) fn cell_coord(x: f32, inv: f32) -> i32 {
    (x * inv).floor().clamp(-CELL_COORD_LIMIT, CELL_COORD_LIMIT) as i32
}

/// Mixes two cell coordinates into 32 bits (multiply–xorshift); the same
/// arithmetic as `hash_cell` in the shader.
#[inline]
fn hash_cell(ix: i32, iy: i32) -> u32 {
    let mut h = (ix as u32).wrapping_mul(0x8da6_b343) ^ (iy as u32).wrapping_mul(0xd816_3841);
    h ^= h >> 16;
    h = h.wrapping_mul(0x7feb_352d);
    h ^ (h >> 15)
}

impl GridParams {
    /// Chooses the grid for these boxes: cell size `max(2 · mean extent,
    /// max extent / 4)` — about 1–4 cells per typical box, and at most 5×5
    /// cells for the largest box however widely sizes vary — and dense keys
    /// when the occupied cell rectangle has at most `max(8N, 4096)` cells.
    pub fn for_aabbs(aabbs: &[Aabb]) -> Self {
        let stats = aabbs
            .par_iter()
            .with_min_len(4096)
            .filter(|a| a.is_valid())
            .fold(BoxStats::default, |s, a| s.add(a))
            .reduce(BoxStats::default, BoxStats::merge);
        let n = stats.count.max(1) as f64;
        let mean_extent = (stats.extent_sum / n) as f32;
        let mut cell = (2.0 * mean_extent).max(stats.extent_max / 4.0);
        if !(cell.is_finite() && cell > 0.0) {
            // Points only (or infinite boxes): spread the bounds over ~√N cells
            // per axis; for infinite bounds every box lands in one cell.
            let span = (stats.max - stats.min).max_element();
            cell = span / (n as f32).sqrt();
            if !(cell.is_finite() && cell > 0.0) {
                cell = 1.0;
            }
        }
        let inv = 1.0 / cell;
        let (ox, oy) = (cell_coord(stats.min.x, inv), cell_coord(stats.min.y, inv));
        let width = i64::from(cell_coord(stats.max.x, inv)) - i64::from(ox) + 1;
        let height = i64::from(cell_coord(stats.max.y, inv)) - i64::from(oy) + 1;
        let dense_limit = (8 * aabbs.len() as i64).max(4096);
        if stats.count > 0 && width > 0 && height > 0 && width * height <= dense_limit {
            Self {
                cell_size: cell,
                inv_cell_size: inv,
                origin_x: ox,
                origin_y: oy,
                width: width as u32,
                table_size: (width * height) as u32,
                dense: 1,
                box_count: aabbs.len() as u32,
            }
        } else {
            Self {
                cell_size: cell,
                inv_cell_size: inv,
                origin_x: 0,
                origin_y: 0,
                width: 0,
                table_size: (4 * aabbs.len()).max(1024).next_power_of_two() as u32,
                dense: 0,
                box_count: aabbs.len() as u32,
            }
        }
    }

    /// Bucket of cell (`ix`, `iy`).
    #[inline]
    pub fn key(&self, ix: i32, iy: i32) -> u32 {
        if self.dense != 0 {
            let k = (iy.wrapping_sub(self.origin_y) as u32)
                .wrapping_mul(self.width)
                .wrapping_add(ix.wrapping_sub(self.origin_x) as u32);
            k.min(self.table_size - 1)
        } else {
            hash_cell(ix, iy) & (self.table_size - 1)
        }
    }

    /// Inclusive cell range `(ix0, iy0, ix1, iy1)` covered by a valid box.
    #[inline]
    pub fn cell_range(&self, a: &Aabb) -> (i32, i32, i32, i32) {
        let inv = self.inv_cell_size;
        (cell_coord(a.min.x, inv), cell_coord(a.min.y, inv), cell_coord(a.max.x, inv), cell_coord(a.max.y, inv))
    }
}

/// Running statistics of valid boxes for choosing the grid.
#[derive(Clone, Copy)]
struct BoxStats {
    count: u64,
    extent_sum: f64,
    extent_max: f32,
    min: glam::Vec2,
    max: glam::Vec2,
}

impl Default for BoxStats {
    fn default() -> Self {
        Self {
            count: 0,
            extent_sum: 0.0,
            extent_max: 0.0,
            min: glam::Vec2::splat(f32::INFINITY),
            max: glam::Vec2::splat(f32::NEG_INFINITY),
        }
    }
}

impl BoxStats {
    fn add(mut self, a: &Aabb) -> Self {
        let extent = (a.max - a.min).max_element();
        self.count += 1;
        self.extent_sum += f64::from(extent);
        self.extent_max = self.extent_max.max(extent);
        self.min = self.min.min(a.min);
        self.max = self.max.max(a.max);
        self
    }

    fn merge(a: Self, b: Self) -> Self {
        Self {
            count: a.count + b.count,
            extent_sum: a.extent_sum + b.extent_sum,
            extent_max: a.extent_max.max(b.extent_max),
            min: a.min.min(b.min),
            max: a.max.max(b.max),
        }
    }
}

/// One (box, cell) entry of the sorted table (12 bytes, as in the shader).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(crate) struct CellEntry {
    /// Index of the box.
    pub body: u32,
    /// Cell x of this entry.
    pub ix: i32,
    /// Cell y of this entry.
    pub iy: i32,
}

/// A raw pointer that may be shared across rayon tasks because every task
/// writes disjoint slots (handed out by atomic increments).
#[derive(Clone, Copy)]
struct SharedSlots(*mut CellEntry);
// SAFETY: used only to write distinct indices, each claimed once by fetch_add.
unsafe impl Send for SharedSlots {}
// SAFETY: see above.
unsafe impl Sync for SharedSlots {}

/// Boxes handed to one rayon task in the count/scatter/pair passes: large
/// enough to amortise scheduling, small enough to balance clustered scenes.
const BOXES_PER_TASK: usize = 8192;

/// Reusable CPU grid broadphase: keeps its tables and pair buffers between
/// calls, so a steady-state step allocates nothing.
#[derive(Default)]
pub struct GridBroadphase {
    params: GridParams,
    /// Bucket counts → exclusive starts → ends (after the scatter).
    buckets: Vec<AtomicU32>,
    /// Entries sorted by bucket.
    sorted: Vec<CellEntry>,
    /// Pairs found by each task, concatenated in task order.
    task_pairs: Vec<Vec<[u32; 2]>>,
}

impl GridBroadphase {
    /// An empty broadphase; tables grow on first use.
    pub fn new() -> Self {
        Self::default()
    }

    /// The grid chosen by the last [`find_pairs`](Self::find_pairs).
    pub fn params(&self) -> &GridParams {
        &self.params
    }

    /// Replaces `out` with every overlapping pair `[i, j]`, `i < j`, sorted
    /// (pair semantics: see [`crate::broadphase`]).
    pub fn find_pairs(&mut self, aabbs: &[Aabb], out: &mut Vec<[u32; 2]>) {
        out.clear();
        if aabbs.len() < 2 {
            return;
        }
        let params = GridParams::for_aabbs(aabbs);
        self.params = params;
        let table = params.table_size as usize;

        // Count entries per bucket.
        if self.buckets.len() < table {
            self.buckets.resize_with(table, || AtomicU32::new(0));
        }
        let buckets = &mut self.buckets[..table];
        buckets.par_iter_mut().with_min_len(1 << 16).for_each(|b| *b.get_mut() = 0);
        let buckets = &*buckets;
        aabbs.par_chunks(BOXES_PER_TASK).for_each(|chunk| {
            for a in chunk.iter().filter(|a| a.is_valid()) {
                let (x0, y0, x1, y1) = params.cell_range(a);
                for iy in y0..=y1 {
                    for ix in x0..=x1 {
                        buckets[params.key(ix, iy) as usize].fetch_add(1, Relaxed);
                    }
                }
            }
        });

        // Exclusive prefix sum in place: per-block totals, block offsets, block scans.
        let buckets = &mut self.buckets[..table];
        let block = table.div_ceil(rayon::current_num_threads() * 4).max(1 << 12);
        let mut block_sums: Vec<u32> = buckets
            .par_chunks_mut(block)
            .map(|c| c.iter_mut().map(|b| *b.get_mut()).sum())
            .collect();
        let mut running = 0u32;
        for s in &mut block_sums {
            let total = *s;
            *s = running;
            running += total;
        }
        let entry_count = running as usize;
        buckets.par_chunks_mut(block).zip(&block_sums).for_each(|(c, &offset)| {
            let mut acc = offset;
            for b in c {
                let count = *b.get_mut();
                *b.get_mut() = acc;
                acc += count;
            }
        });

        // Scatter entries into their buckets.
        self.sorted.clear();
        self.sorted.resize(entry_count, CellEntry::default());
        let slots = SharedSlots(self.sorted.as_mut_ptr());
        let buckets = &self.buckets[..table];
        aabbs.par_chunks(BOXES_PER_TASK).enumerate().for_each(|(c, chunk)| {
            let slots = slots;
            for (k, a) in chunk.iter().enumerate() {
                if !a.is_valid() {
                    continue;
                }
                let body = (c * BOXES_PER_TASK + k) as u32;
                let (x0, y0, x1, y1) = params.cell_range(a);
                for iy in y0..=y1 {
                    for ix in x0..=x1 {
                        let slot = buckets[params.key(ix, iy) as usize].fetch_add(1, Relaxed) as usize;
                        debug_assert!(slot < entry_count);
                        // SAFETY: `slot` < entry_count (the counts summed to it) and
                        // fetch_add hands every slot out exactly once.
                        unsafe { slots.0.add(slot).write(CellEntry { body, ix, iy }) };
                    }
                }
            }
        });

        // Pairs, one task per chunk of boxes, each task's pairs sorted by (a, b).
        let tasks = aabbs.len().div_ceil(BOXES_PER_TASK);
        if self.task_pairs.len() < tasks {
            self.task_pairs.resize_with(tasks, Vec::new);
        }
        let sorted = &self.sorted[..];
        let bucket_end = |k: u32| buckets[k as usize].load(Relaxed) as usize;
        let bucket_start = |k: u32| if k == 0 { 0 } else { bucket_end(k - 1) };
        self.task_pairs[..tasks].par_iter_mut().enumerate().for_each(|(t, pairs)| {
            pairs.clear();
            let first = t * BOXES_PER_TASK;
            let last = (first + BOXES_PER_TASK).min(aabbs.len());
            for ai in first..last {
                let a = &aabbs[ai];
                if !a.is_valid() {
                    continue;
                }
                let begin = pairs.len();
                let (x0, y0, x1, y1) = params.cell_range(a);
                for iy in y0..=y1 {
                    for ix in x0..=x1 {
                        let key = params.key(ix, iy);
                        for e in &sorted[bucket_start(key)..bucket_end(key)] {
                            if e.body as usize <= ai || e.ix != ix || e.iy != iy {
                                continue;
                            }
                            let b = &aabbs[e.body as usize];
                            if a.overlaps(b)
                                && cell_coord(a.min.x.max(b.min.x), params.inv_cell_size) == ix
                                && cell_coord(a.min.y.max(b.min.y), params.inv_cell_size) == iy
                            {
                                pairs.push([ai as u32, e.body]);
                            }
                        }
                    }
                }
                pairs[begin..].sort_unstable();
            }
        });
        let total: usize = self.task_pairs[..tasks].iter().map(Vec::len).sum();
        out.reserve(total);
        for p in &self.task_pairs[..tasks] {
            out.extend_from_slice(p);
        }
    }
}
