//! Uniform-grid broadphase on the CPU, the twin of `shaders/broadphase.wgsl`.
//!
//! Both sides report the same pair set (see [`crate::broadphase`]), but they
//! use different algorithms, each suited to its hardware. The GPU kernel
//! spends extra work to get many threads with no coordination. The CPU has two
//! threads, so it avoids redundant work and random memory traffic instead.
//!
//! **GPU kernel (`shaders/broadphase.wgsl`): multi-cell insertion plus a
//! reference cell.**
//! 1. [`GridParams::for_aabbs`] picks a cell size of `max(2 · mean extent,
//!    max extent / 4)` and a key function. Keys are a dense row-major index
//!    over the occupied cell rectangle when that rectangle is small. Otherwise
//!    they are a hash of the cell coordinates into a power-of-two table (the
//!    world is unbounded; collisions only cost time, never correctness).
//! 2. Count: every valid box adds 1 to the bucket of every cell it covers.
//! 3. Exclusive prefix sum of the bucket counts → bucket starts.
//! 4. Scatter: every (box, cell) entry takes the next slot of its bucket.
//! 5. Pairs: two entries of one bucket make the pair iff they are in the same
//!    cell (hash collisions share buckets), the boxes overlap, and that cell is
//!    the *reference cell* of the pair: the cell containing `max(a.min, b.min)`,
//!    the lower-left corner of the intersection. That corner lies in exactly
//!    one cell and in both boxes, so each pair is found exactly once without
//!    any dedupe pass. One thread per sorted entry tests the later entries of
//!    its bucket (each unordered pair of entries once); entries carry their
//!    box, so the pass streams. The host sorts the pairs after readback, or a
//!    GPU consumer takes them unsorted (`GpuGridBroadphase::encode`).
//!
//! **CPU ([`GridBroadphase`]): single insertion at the min corner, then a
//! half-stencil sweep.**
//! 1. [`GridParams::for_cpu`] uses the same key functions, with a cell of about
//!    one box: `1.001 · max extent` for nearly uniform sizes, otherwise
//!    `max(mean extent, max extent / 4)`.
//! 2. Count: every valid box adds 1 to the bucket of its *min-corner* cell
//!    only. The pass also records `S`, the largest cell span `cell(max) −
//!    cell(min)` of any box on each axis.
//! 3. Prefix sum and scatter as on the GPU, with one entry per box.
//! 4. Pairs with dense keys: the cells are swept in row-major order. An entry
//!    of cell (x, y) is tested against the later entries of its own row up to
//!    cell x + Sx, and against cells x − Sx ..= x + Sx of rows y + 1 ..= y + Sy.
//!    Both are contiguous runs of the sorted table. The unsorted
//!    `(i << 32) | j` keys are then put in order by an LSD radix sort on `i`,
//!    plus an insertion sort of the few `j`s of each `i`.
//! 5. Pairs with hashed keys: the cells of a row are not contiguous, so box
//!    `i` instead queries the distinct buckets of the cells
//!    `[cell(min) − S, cell(max)]` on each axis. It keeps the boxes `j > i`
//!    that overlap it, with its `j` list sorted. Boxes are taken in index
//!    order, so the output needs no global sort.
//!
//! Why this is exact: if `b` overlaps `a` on x, then
//! `b.min.x ≤ a.max.x`, and `b.max.x ≥ a.min.x`. Also `cell(·)` is monotone.
//! Together these give `cell(b.min.x) ≤ cell(a.max.x) ≤ cell(a.min.x) + S`
//! and `cell(b.min.x) ≥ cell(b.max.x) − S ≥ cell(a.min.x) − S`. The same
//! holds on y. So the two min-corner cells are within ±S on each axis. Step 5
//! scans exactly that range. Step 4's half stencil visits every such pair of
//! cells once (the lower row, or on one row the left cell, does the test),
//! and each pair of entries of one cell once. The argument uses only the
//! computed cell coordinates, so float rounding cannot break it.
//!
//! If sizes vary so widely that `S` makes the scanned range large (more than
//! [`MAX_QUERY_CELLS`] cells, e.g. a few huge or infinite boxes), the CPU falls
//! back to [`SweepAndPrune`], which follows the same pair definition.
//!
//! Cell coordinates are `floor(x · inv_cell_size)` in f32, with a correctly
//! rounded product, clamped to ±2³⁰. The product is monotone in `x` on the
//! CPU and on the GPU alike. For the GPU, this keeps the reference cell inside
//! both boxes' cell ranges. For the CPU, it is the monotonicity used above.

use super::{Aabb, SweepAndPrune};
use bytemuck::{Pod, Zeroable};
use rayon::prelude::*;

/// Largest cell coordinate magnitude; keeps `ix − origin` and the row-major
/// index inside i32/u32 arithmetic for any finite input.
pub(crate) const CELL_COORD_LIMIT: f32 = (1u32 << 30) as f32;

/// Largest number of cells one box may scan on the CPU, `(2·Sx + 1)(2·Sy + 1)`
/// at worst. Beyond this the grid is a poor fit for the scene, and the CPU
/// uses sweep-and-prune instead.
const MAX_QUERY_CELLS: i64 = 128;

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
    // `floor` without a libm call (baseline x86-64 has no SSE4.1 `roundss`).
    // After the clamp, truncation is exact and `t as f32` is exact, so
    // subtracting 1 below zero gives exactly `floor(v)`. NaN maps to 0, as
    // with `floor(NaN) as i32`.
    let v = (x * inv).clamp(-CELL_COORD_LIMIT, CELL_COORD_LIMIT);
    let t = v as i32;
    t - i32::from((t as f32) > v)
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
    /// Chooses the GPU kernel's grid for these boxes. The cell size is
    /// `max(2 · mean extent, max extent / 4)`: about 1–4 cells per typical box,
    /// and at most 5×5 cells for the largest box however widely sizes vary.
    /// Keys are dense when the occupied cell rectangle has at most
    /// `max(8N, 4096)` cells.
    pub fn for_aabbs(aabbs: &[Aabb]) -> Self {
        let stats = BoxStats::of(aabbs);
        Self::from_stats(&stats, (2.0 * stats.mean_extent()).max(stats.extent_max / 4.0), aabbs.len())
    }

    /// Chooses the CPU's grid for these boxes. The CPU inserts each box once and
    /// scans about 3×3 cells per box, so cells as small as the boxes keep that
    /// scan short. The cell size is `1.001 · max extent` when sizes are
    /// nearly uniform (max ≤ 2 · mean); otherwise it is
    /// `max(mean extent, max extent / 4)`. Keys are chosen as in
    /// [`for_aabbs`](Self::for_aabbs).
    pub fn for_cpu(aabbs: &[Aabb]) -> Self {
        let stats = BoxStats::of(aabbs);
        let mean_extent = stats.mean_extent();
        let cell = if stats.extent_max <= 2.0 * mean_extent {
            // Nearly uniform sizes: a cell just above the largest extent keeps
            // every span at 1 cell (S = 1), so the scan is at most 3×3 cells.
            // Without the margin, rounding of `max − min` could push a few
            // spans, and with them S for every box, to 2.
            stats.extent_max * (1.0 + 1.0 / 1024.0)
        } else {
            mean_extent.max(stats.extent_max / 4.0)
        };
        Self::from_stats(&stats, cell, aabbs.len())
    }

    /// The grid for these statistics with cells of size `cell`; a zero,
    /// infinite or NaN `cell` falls back to spreading the bounds over ~√N
    /// cells per axis.
    fn from_stats(stats: &BoxStats, mut cell: f32, box_count: usize) -> Self {
        let n = stats.count.max(1) as f64;
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
        let dense_limit = (8 * box_count as i64).max(4096);
        if stats.count > 0 && width > 0 && height > 0 && width * height <= dense_limit {
            Self {
                cell_size: cell,
                inv_cell_size: inv,
                origin_x: ox,
                origin_y: oy,
                width: width as u32,
                table_size: (width * height) as u32,
                dense: 1,
                box_count: box_count as u32,
            }
        } else {
            Self {
                cell_size: cell,
                inv_cell_size: inv,
                origin_x: 0,
                origin_y: 0,
                width: 0,
                table_size: (4 * box_count).max(1024).next_power_of_two() as u32,
                dense: 0,
                box_count: box_count as u32,
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
    /// Statistics of the valid boxes among `aabbs` (a parallel reduction).
    fn of(aabbs: &[Aabb]) -> Self {
        aabbs
            .par_iter()
            .with_min_len(4096)
            .filter(|a| a.is_valid())
            .fold(BoxStats::default, |s, a| s.add(a))
            .reduce(BoxStats::default, BoxStats::merge)
    }

    /// Mean of the boxes' larger side (0 without boxes).
    fn mean_extent(&self) -> f32 {
        (self.extent_sum / self.count.max(1) as f64) as f32
    }

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

/// One box in the CPU's table sorted by bucket. The box is stored inline, so
/// the query reads one contiguous run per row of cells and never follows an
/// index back into the input.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct CellEntry {
    aabb: Aabb,
    body: u32,
}

/// Bucket of a box that takes no part (invalid: `min > max` or NaN).
const NO_BUCKET: u32 = u32::MAX;

/// A raw pointer that may be shared across rayon tasks because every task
/// writes disjoint slots (its own cursor range of every bucket, or its own
/// range of the output).
struct SharedSlots<T>(*mut T);

impl<T> Clone for SharedSlots<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for SharedSlots<T> {}
// SAFETY: used only to write slots that were given to one task alone.
unsafe impl<T: Send> Send for SharedSlots<T> {}
// SAFETY: see above.
unsafe impl<T: Send> Sync for SharedSlots<T> {}

impl<T> SharedSlots<T> {
    /// The base pointer (a method, so closures capture the whole wrapper).
    fn base(&self) -> *mut T {
        self.0
    }
}

/// Smallest number of boxes one rayon task queries: enough work to amortise
/// scheduling. Tasks are made smaller than N / threads so that clustered
/// scenes still balance.
const MIN_BOXES_PER_TASK: usize = 1024;

/// Reusable CPU grid broadphase. It keeps its tables and pair buffers between
/// calls, so a steady-state call allocates almost nothing.
///
/// Algorithm: single insertion at the min-corner cell, a half-stencil sweep
/// over the cells, and a radix sort of the pairs. This differs from the GPU
/// kernel, but the pair set is identical; see the module documentation
/// (`src/broadphase/grid.rs`) for both algorithms and the proof. Its cost is
/// two linear sorts (N entries, then the pairs), plus a sequential sweep
/// that tests each box against about five cells. The GPU arrangement costs
/// several times as much on the CPU: it sorts about 2.25 entries per box,
/// with random access, then does a comparison sort of the pairs.
#[derive(Default)]
pub struct GridBroadphase {
    params: GridParams,
    /// Per part: bucket counts, then that part's write cursors.
    part_cursors: Vec<Vec<u32>>,
    /// Start of every bucket, plus the total at the end.
    bucket_start: Vec<u32>,
    /// Bucket of every box's min-corner cell ([`NO_BUCKET`] if invalid).
    box_bucket: Vec<u32>,
    /// One entry per valid box, sorted by bucket.
    sorted: Vec<CellEntry>,
    /// Per query task: its pairs, in order.
    task_pairs: Vec<Vec<[u32; 2]>>,
    /// Fallback for scenes whose box sizes vary too widely for one grid.
    sap: SweepAndPrune,
    /// Dense sweep: per task, its pairs as unsorted `(i << 32) | j` keys.
    task_keys: Vec<Vec<u64>>,
    /// How many of `task_keys` the last sweep filled.
    key_tasks: usize,
    /// Radix sort ping-pong buffers.
    keys_a: Vec<u64>,
    keys_b: Vec<u64>,
    /// Radix sort: per part, digit counts, then cursors.
    radix_hist: Vec<Vec<u32>>,
}

impl GridBroadphase {
    /// An empty broadphase; tables grow on first use.
    pub fn new() -> Self {
        Self::default()
    }

    /// The grid chosen by the last [`find_pairs`](Self::find_pairs)
    /// ([`GridParams::for_cpu`]; the GPU's cell size differs).
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
        let params = GridParams::for_cpu(aabbs);
        self.params = params;
        let n = aabbs.len();
        let table = params.table_size as usize;
        // The boxes are cut into `parts` runs of `per_part`; `parts` is the
        // number of runs that cut really makes (ceil(n / per_part)), which is
        // fewer than the pool's threads when n is small (n = 5 on 4 threads:
        // runs of 2, 2, 1). Every per-part table below is indexed 0..parts,
        // so a part must never be counted that has no run of boxes.
        let per_part = n.div_ceil(rayon::current_num_threads().max(1));
        let parts = n.div_ceil(per_part);

        // Count boxes per min-corner bucket, one private table per part, and
        // the largest cell span of any box on each axis.
        if self.part_cursors.len() < parts {
            self.part_cursors.resize_with(parts, Vec::new);
        }
        if self.box_bucket.len() < n {
            self.box_bucket.resize(n, NO_BUCKET);
        }
        let (span_x, span_y) = self.part_cursors[..parts]
            .par_iter_mut()
            .zip(self.box_bucket[..n].par_chunks_mut(per_part))
            .enumerate()
            .map(|(p, (counts, buckets))| {
                counts.clear();
                counts.resize(table, 0);
                let first = p * per_part;
                let (mut sx, mut sy) = (0i64, 0i64);
                for (a, bucket) in aabbs[first..first + buckets.len()].iter().zip(buckets.iter_mut()) {
                    if !a.is_valid() {
                        *bucket = NO_BUCKET;
                        continue;
                    }
                    let (x0, y0, x1, y1) = params.cell_range(a);
                    sx = sx.max(i64::from(x1) - i64::from(x0));
                    sy = sy.max(i64::from(y1) - i64::from(y0));
                    let k = params.key(x0, y0);
                    *bucket = k;
                    counts[k as usize] += 1;
                }
                (sx, sy)
            })
            .reduce(|| (0, 0), |a, b| (a.0.max(b.0), a.1.max(b.1)));
        if (2 * span_x + 1) * (2 * span_y + 1) > MAX_QUERY_CELLS {
            self.sap.find_pairs(aabbs, out);
            return;
        }

        let entry_count = self.prefix_sum(parts, table);

        // Scatter: each part writes through its own cursors (disjoint slots).
        // No zero fill: every slot below entry_count is written exactly once
        // by the scatter (the counts summed to entry_count).
        self.sorted.clear();
        self.sorted.reserve(entry_count);
        let slots = SharedSlots(self.sorted.as_mut_ptr());
        self.part_cursors[..parts].par_iter_mut().zip(self.box_bucket[..n].par_chunks(per_part)).enumerate().for_each(
            |(p, (cursors, buckets))| {
                let first = p * per_part;
                for (body, (a, &k)) in (first..).zip(aabbs[first..first + buckets.len()].iter().zip(buckets)) {
                    if k == NO_BUCKET {
                        continue;
                    }
                    let cursor = &mut cursors[k as usize];
                    let slot = *cursor as usize;
                    *cursor += 1;
                    debug_assert!(slot < entry_count);
                    // SAFETY: the prefix sum gave this part the slots
                    // [cursor, cursor + its count) of this bucket, all
                    // < entry_count and owned by no other part.
                    unsafe { slots.base().add(slot).write(CellEntry { aabb: *a, body: body as u32 }) };
                }
            },
        );
        // SAFETY: the scatter initialised all entry_count slots (see above).
        unsafe { self.sorted.set_len(entry_count) };

        if params.dense != 0 {
            self.sweep_dense(span_x as usize, span_y as usize, parts);
            self.sort_pairs(n, parts, out);
            return;
        }

        // Hashed keys: query every box in index order, in parallel ranges of boxes.
        let per_task = n.div_ceil(parts * 16).max(MIN_BOXES_PER_TASK);
        let tasks = n.div_ceil(per_task);
        if self.task_pairs.len() < tasks {
            self.task_pairs.resize_with(tasks, Vec::new);
        }
        let query = Query {
            params,
            span_x: span_x as i32,
            span_y: span_y as i32,
            sorted: &self.sorted,
            starts: &self.bucket_start,
            aabbs,
        };
        self.task_pairs[..tasks].par_iter_mut().enumerate().for_each(|(t, pairs)| {
            pairs.clear();
            let first = t * per_task;
            query.run(first..(first + per_task).min(n), pairs);
        });

        // Concatenate the task outputs (already in order) in parallel.
        let task_pairs = &self.task_pairs[..tasks];
        let total: usize = task_pairs.iter().map(Vec::len).sum();
        out.reserve(total);
        let pair_slots = SharedSlots(out.as_mut_ptr());
        let mut offset = 0;
        let offsets: Vec<usize> = task_pairs
            .iter()
            .map(|p| {
                offset += p.len();
                offset - p.len()
            })
            .collect();
        task_pairs.par_iter().zip(offsets).for_each(|(src, at)| {
            // SAFETY: [at, at + src.len()) lies within the reserved capacity
            // (the lengths sum to total) and belongs to this task alone.
            unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), pair_slots.base().add(at), src.len()) };
        });
        // SAFETY: all `total` slots were written above.
        unsafe { out.set_len(total) };
    }

    /// Dense keys: finds every pair by sweeping the cells in row-major order
    /// with a half stencil. An entry of cell (x, y) is tested against the
    /// later entries of its own row up to cell x + Sx, and against cells
    /// x − Sx ..= x + Sx of rows y + 1 ..= y + Sy. Each of these is one
    /// contiguous run of `sorted`. Every pair of cells within ±S (the only ones
    /// that can hold an overlapping pair, see the module docs) is visited once.
    /// The pairs go to `task_keys` as unsorted `(i << 32) | j` keys.
    fn sweep_dense(&mut self, span_x: usize, span_y: usize, parts: usize) {
        let width = self.params.width as usize;
        let height = self.params.table_size as usize / width;
        let rows_per_task = height.div_ceil(parts * 16).max(1);
        let tasks = height.div_ceil(rows_per_task);
        if self.task_keys.len() < tasks {
            self.task_keys.resize_with(tasks, Vec::new);
        }
        let sorted = &self.sorted[..];
        let starts = &self.bucket_start[..];
        self.task_keys[..tasks].par_iter_mut().enumerate().for_each(|(t, keys)| {
            keys.clear();
            // Branch-free push: about 40% of the tests hit, at random, so a
            // branch would mispredict often. Always write the key, and advance
            // only on a hit. Inserted boxes are valid, so the plain interval
            // test is the full predicate.
            let mut test_run = |e: &CellEntry, run: &[CellEntry]| {
                keys.reserve(run.len());
                let mut len = keys.len();
                let spare = keys.spare_capacity_mut().as_mut_ptr();
                let base = len;
                let (a, i) = (&e.aabb, e.body);
                for f in run {
                    let b = &f.aabb;
                    let hit = (a.min.x <= b.max.x) & (b.min.x <= a.max.x) & (a.min.y <= b.max.y) & (b.min.y <= a.max.y);
                    let (lo, hi) = if i < f.body { (i, f.body) } else { (f.body, i) };
                    // SAFETY: at most run.len() keys are written after `base`,
                    // within the capacity reserved above.
                    unsafe {
                        spare.add(len - base).write(std::mem::MaybeUninit::new((u64::from(lo) << 32) | u64::from(hi)))
                    };
                    len += usize::from(hit);
                }
                // SAFETY: slots below `len` were written above (or before).
                unsafe { keys.set_len(len) };
            };
            for y in t * rows_per_task..((t + 1) * rows_per_task).min(height) {
                let row = y * width;
                for x in 0..width {
                    let (c0, c1) = (starts[row + x] as usize, starts[row + x + 1] as usize);
                    if c0 == c1 {
                        continue;
                    }
                    let (left, right) = (x.saturating_sub(span_x), (x + span_x).min(width - 1));
                    let own_end = starts[row + right + 1] as usize;
                    let last_row = (y + span_y).min(height - 1);
                    for u in c0..c1 {
                        let e = &sorted[u];
                        test_run(e, &sorted[u + 1..own_end]);
                        for above in (y + 1..=last_row).map(|yy| yy * width) {
                            test_run(e, &sorted[starts[above + left] as usize..starts[above + right + 1] as usize]);
                        }
                    }
                }
            }
        });
        self.key_tasks = tasks;
    }

    /// Sorts the keys in `task_keys` and writes them to `out` as pairs. It uses
    /// a parallel LSD radix sort on i alone (digits of ≤ 11 bits over its used
    /// bits), then an insertion sort of j within each run of equal i. Each
    /// box has only a few pairs, so that last pass is linear. The whole sort
    /// is linear and streams through memory. A comparison sort of the same
    /// keys cost about 3× more.
    fn sort_pairs(&mut self, n: usize, parts: usize, out: &mut Vec<[u32; 2]>) {
        const MAX_DIGIT_BITS: u32 = 11;
        let tasks = self.key_tasks;
        let total: usize = self.task_keys[..tasks].iter().map(Vec::len).sum();
        if total == 0 {
            return;
        }
        let index_bits = (usize::BITS - (n - 1).leading_zeros()).max(1);
        let digit_bits = index_bits.div_ceil(index_bits.div_ceil(MAX_DIGIT_BITS));
        let digits: Vec<(u32, u32)> = (0..index_bits)
            .step_by(digit_bits as usize)
            .map(|offset| (32 + offset, digit_bits.min(index_bits - offset)))
            .collect();
        let mut src = std::mem::take(&mut self.keys_a);
        let mut dst = std::mem::take(&mut self.keys_b);
        for (pass, &(shift, bits)) in digits.iter().enumerate() {
            dst.clear();
            dst.reserve(total);
            let chunk = total.div_ceil(parts);
            let sources: Vec<&[u64]> = if pass == 0 {
                self.task_keys[..tasks].iter().map(Vec::as_slice).collect()
            } else {
                src.chunks(chunk).collect()
            };
            radix_pass(&sources, dst.spare_capacity_mut(), shift, bits, &mut self.radix_hist);
            // SAFETY: radix_pass wrote every one of the `total` slots.
            unsafe { dst.set_len(total) };
            std::mem::swap(&mut src, &mut dst);
        }
        if digits.is_empty() {
            // Not reached (n ≥ 2 gives index_bits ≥ 1); keeps `src` filled.
            src.clear();
            src.extend(self.task_keys[..tasks].iter().flatten());
        }
        // Sorted by i; the few pairs sharing an i (about 1.2 per box in a
        // typical scene) are put in order of j by insertion sort, in
        // parallel chunks that start at a new i.
        let chunk = total.div_ceil(parts * 8).max(1);
        let mut bounds = vec![0usize];
        let mut at = chunk;
        while at < total {
            while at < total && src[at] >> 32 == src[at - 1] >> 32 {
                at += 1;
            }
            bounds.push(at);
            at += chunk;
        }
        bounds.push(total);
        bounds.dedup();
        // Each piece is sorted in place and written out as pairs at the same
        // offset (one pass, no separate conversion).
        out.reserve(total);
        let pair_slots = SharedSlots(out.as_mut_ptr());
        let mut rest = &mut src[..];
        let mut pieces = Vec::with_capacity(bounds.len());
        for w in bounds.windows(2) {
            let (piece, tail) = rest.split_at_mut(w[1] - w[0]);
            pieces.push((w[0], piece));
            rest = tail;
        }
        pieces.into_par_iter().for_each(|(at, piece)| {
            for u in 1..piece.len() {
                let k = piece[u];
                let mut v = u;
                while v > 0 && piece[v - 1] > k {
                    piece[v] = piece[v - 1];
                    v -= 1;
                }
                piece[v] = k;
            }
            for (o, &k) in piece.iter().enumerate() {
                // SAFETY: [at, at + piece.len()) is within the reserved
                // capacity (the pieces tile 0..total) and is this piece's alone.
                unsafe { pair_slots.base().add(at + o).write([(k >> 32) as u32, k as u32]) };
            }
        });
        // SAFETY: the pieces wrote all `total` slots.
        unsafe { out.set_len(total) };
        self.keys_a = src;
        self.keys_b = dst;
    }

    /// Turns the parts' counts into the parts' write cursors and fills
    /// `bucket_start`; returns the number of entries. It computes an exclusive
    /// prefix sum over (bucket, part), in parallel blocks of buckets: block
    /// totals, block offsets, then per-block cursors.
    fn prefix_sum(&mut self, parts: usize, table: usize) -> usize {
        self.bucket_start.clear();
        self.bucket_start.resize(table + 1, 0);
        let block = table.div_ceil(parts * 4).max(1 << 12);
        let counts = &self.part_cursors[..parts];
        let block_totals: Vec<u32> = (0..table.div_ceil(block))
            .into_par_iter()
            .map(|b| {
                let range = b * block..((b + 1) * block).min(table);
                counts.iter().map(|c| c[range.clone()].iter().sum::<u32>()).sum()
            })
            .collect();
        let mut block_offsets = Vec::with_capacity(block_totals.len());
        let mut running = 0u32;
        for total in block_totals {
            block_offsets.push(running);
            running += total;
        }
        self.bucket_start[table] = running;
        // Each block rewrites its range of every part's table, so hand the
        // blocks disjoint mutable slices of all of them.
        let mut part_slices: Vec<std::slice::ChunksMut<'_, u32>> =
            self.part_cursors[..parts].iter_mut().map(|c| c.chunks_mut(block)).collect();
        let mut jobs = Vec::with_capacity(block_offsets.len());
        for (start_chunk, &offset) in self.bucket_start[..table].chunks_mut(block).zip(&block_offsets) {
            let cursors: Vec<&mut [u32]> = part_slices.iter_mut().filter_map(Iterator::next).collect();
            jobs.push((start_chunk, cursors, offset));
        }
        jobs.into_par_iter().for_each(|(starts, mut cursors, offset)| {
            let mut acc = offset;
            for (k, start) in starts.iter_mut().enumerate() {
                *start = acc;
                for part in cursors.iter_mut() {
                    let count = part[k];
                    part[k] = acc;
                    acc += count;
                }
            }
        });
        running as usize
    }
}

/// One stable counting-sort pass of an LSD radix sort: the concatenation of
/// `sources`, ordered by the digit `(key >> shift) & (2^bits − 1)`, is written
/// to `dst` (whose length must equal the total). Each source is one part with
/// its own histogram, and the parts are scattered in parallel.
fn radix_pass(
    sources: &[&[u64]],
    dst: &mut [std::mem::MaybeUninit<u64>],
    shift: u32,
    bits: u32,
    hist: &mut Vec<Vec<u32>>,
) {
    let radix = 1usize << bits;
    let mask = (radix - 1) as u64;
    if hist.len() < sources.len() {
        hist.resize_with(sources.len(), Vec::new);
    }
    let hist = &mut hist[..sources.len()];
    hist.par_iter_mut().zip(sources).for_each(|(h, src)| {
        h.clear();
        h.resize(radix, 0);
        for &k in *src {
            h[((k >> shift) & mask) as usize] += 1;
        }
    });
    // Exclusive prefix over (digit, part): part p's run of digit d follows
    // the runs of all smaller digits and of digit d in parts before p.
    let mut acc = 0u32;
    for d in 0..radix {
        for h in hist.iter_mut() {
            let c = h[d];
            h[d] = acc;
            acc += c;
        }
    }
    debug_assert_eq!(acc as usize, dst.len());
    let out = SharedSlots(dst.as_mut_ptr());
    hist.par_iter_mut().zip(sources).for_each(|(cursors, src)| {
        for &k in *src {
            let cursor = &mut cursors[((k >> shift) & mask) as usize];
            // SAFETY: the prefix gave this part the slots [cursor, cursor +
            // its count) of this digit, all < dst.len() and owned by no other.
            unsafe { out.base().add(*cursor as usize).write(std::mem::MaybeUninit::new(k)) };
            *cursor += 1;
        }
    });
}

/// The read-only state of the query pass.
struct Query<'a> {
    params: GridParams,
    /// Largest cell span of any box on x and on y (`S` in the module docs).
    span_x: i32,
    span_y: i32,
    sorted: &'a [CellEntry],
    starts: &'a [u32],
    aabbs: &'a [Aabb],
}

impl Query<'_> {
    /// Appends the pairs `[i, j]`, `j > i`, of every box `i` in `range`, in
    /// order of `i` then `j`.
    fn run(&self, range: std::ops::Range<usize>, pairs: &mut Vec<[u32; 2]>) {
        let p = &self.params;
        let mut found: Vec<u32> = Vec::new();
        let mut buckets: Vec<u32> = Vec::new();
        for (i, a) in range.clone().zip(&self.aabbs[range]) {
            if !a.is_valid() {
                continue;
            }
            let i = i as u32;
            let (x0, y0, x1, y1) = p.cell_range(a);
            // Cells that can hold the min corner of a box overlapping `a`.
            let (qx0, qy0) = (x0.saturating_sub(self.span_x), y0.saturating_sub(self.span_y));
            found.clear();
            let mut scan = |bucket_range: std::ops::Range<usize>| {
                let run =
                    &self.sorted[self.starts[bucket_range.start] as usize..self.starts[bucket_range.end] as usize];
                for e in run {
                    if e.body > i && a.overlaps(&e.aabb) {
                        found.push(e.body);
                    }
                }
            };
            if p.dense != 0 {
                // Rows of the occupied rectangle are contiguous bucket runs.
                let right = i64::from(p.origin_x) + i64::from(p.width) - 1;
                let top = i64::from(p.origin_y) + (i64::from(p.table_size) / i64::from(p.width)) - 1;
                let cx0 = i64::from(qx0).max(i64::from(p.origin_x));
                let cx1 = i64::from(x1).min(right);
                let cy0 = i64::from(qy0).max(i64::from(p.origin_y));
                let cy1 = i64::from(y1).min(top);
                if cx0 > cx1 {
                    continue;
                }
                for iy in cy0..=cy1 {
                    let k0 = p.key(cx0 as i32, iy as i32) as usize;
                    let k1 = p.key(cx1 as i32, iy as i32) as usize;
                    scan(k0..k1 + 1);
                }
            } else {
                // Hashed cells: scan each distinct bucket once.
                buckets.clear();
                for iy in qy0..=y1 {
                    for ix in qx0..=x1 {
                        buckets.push(p.key(ix, iy));
                    }
                }
                buckets.sort_unstable();
                buckets.dedup();
                for &k in &buckets {
                    scan(k as usize..k as usize + 1);
                }
            }
            found.sort_unstable();
            pairs.extend(found.iter().map(|&j| [i, j]));
        }
    }
}
