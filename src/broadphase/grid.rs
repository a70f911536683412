//! Uniform-grid broadphase on the CPU: the twin of `shaders/broadphase.wgsl`.
//!
//! The algorithm (identical on the GPU, stage for stage):
//! 1. [`GridParams::for_aabbs`] picks a cell size and a key function: a dense
//!    row-major index over the occupied cell rectangle when that rectangle is
//!    small, otherwise a hash of the cell coordinates into a power-of-two table
//!    (the world is unbounded; collisions only cost time, never correctness).
//! 2. Count: every valid box adds 1 to the bucket of every cell it covers.
//! 3. Exclusive prefix sum of the bucket counts → bucket starts.
//! 4. Scatter: every (box, cell) entry takes the next slot of its bucket.
//! 5. Pairs: two entries of one bucket make the pair iff they are in the same
//!    cell (hash collisions share buckets), the boxes overlap, and that cell is
//!    the *reference cell* of the pair: the cell containing `max(a.min, b.min)`,
//!    the lower-left corner of the intersection. That corner lies in exactly
//!    one cell and in both boxes, so each pair is found exactly once without
//!    any dedupe pass.
//!
//! The loops are arranged differently on the two sides, the results are not:
//! the GPU counts and scatters with atomics (one thread per box, the cursor
//! of bucket k ends as its end, so one table serves as starts and ends) and
//! finds pairs per box; the CPU uses one private count table per thread (no
//! atomics) and sweeps bucket by bucket.
//!
//! Cell coordinates are `floor(x · inv_cell_size)` in f32 with a correctly
//! rounded product, clamped to ±2³⁰; the product is monotone in `x`, so the
//! reference cell is always inside both boxes' cell ranges, on the CPU and on
//! the GPU alike.

use super::Aabb;
use bytemuck::{Pod, Zeroable};
use rayon::prelude::*;

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

/// One (box, cell) entry of the CPU's sorted table. The box is stored inline
/// so that the pair pass streams through memory instead of chasing indices.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct CellEntry {
    aabb: Aabb,
    body: u32,
    ix: i32,
    iy: i32,
}

/// A raw pointer that may be shared across rayon tasks because every task
/// writes disjoint slots (its own cursor range of every bucket).
#[derive(Clone, Copy)]
struct SharedSlots(*mut CellEntry);
// SAFETY: used only to write slots that the prefix sum gave to one part alone.
unsafe impl Send for SharedSlots {}
// SAFETY: see above.
unsafe impl Sync for SharedSlots {}

impl SharedSlots {
    /// The base pointer (a method, so closures capture the whole wrapper).
    fn base(&self) -> *mut CellEntry {
        self.0
    }
}

/// Buckets handed to one rayon task in the pair pass: enough work to
/// amortise scheduling, small enough to balance clustered scenes.
const BUCKETS_PER_TASK: usize = 4096;

/// Reusable CPU grid broadphase: keeps its tables and pair buffers between
/// calls, so a steady-state call allocates nothing.
///
/// The CPU runs the same stages as the GPU but arranged for caches rather
/// than for thousands of threads: the counting sort splits the boxes into one
/// part per thread with private counts and cursors (no atomics, so cache
/// misses overlap), entries carry their box, and pairs are found bucket by
/// bucket (a sequential sweep), then sorted.
#[derive(Default)]
pub struct GridBroadphase {
    params: GridParams,
    /// Per part: bucket counts, then that part's write cursors.
    part_cursors: Vec<Vec<u32>>,
    /// Start of every bucket, plus the total at the end.
    bucket_start: Vec<u32>,
    /// Entries sorted by bucket.
    sorted: Vec<CellEntry>,
    /// Pairs found by each task.
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
        let parts = rayon::current_num_threads().max(1);
        let per_part = aabbs.len().div_ceil(parts);

        // Count entries per bucket, one private table per part.
        if self.part_cursors.len() < parts {
            self.part_cursors.resize_with(parts, Vec::new);
        }
        self.part_cursors[..parts].par_iter_mut().enumerate().for_each(|(p, counts)| {
            counts.clear();
            counts.resize(table, 0);
            let first = (p * per_part).min(aabbs.len());
            let last = (first + per_part).min(aabbs.len());
            for a in aabbs[first..last].iter().filter(|a| a.is_valid()) {
                let (x0, y0, x1, y1) = params.cell_range(a);
                for iy in y0..=y1 {
                    for ix in x0..=x1 {
                        counts[params.key(ix, iy) as usize] += 1;
                    }
                }
            }
        });

        // Exclusive prefix sum over (bucket, part), in parallel blocks of
        // buckets: block totals, block offsets, then per-block cursors.
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
        let entry_count = running as usize;
        self.bucket_start[table] = running;
        {
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
        }

        // Scatter: each part writes through its own cursors (disjoint slots).
        // No zero fill: every slot below entry_count is written exactly once
        // by the scatter (the counts summed to entry_count).
        self.sorted.clear();
        self.sorted.reserve(entry_count);
        let slots = SharedSlots(self.sorted.as_mut_ptr());
        self.part_cursors[..parts].par_iter_mut().enumerate().for_each(|(p, cursors)| {
            let first = (p * per_part).min(aabbs.len());
            let last = (first + per_part).min(aabbs.len());
            for (body, a) in aabbs.iter().enumerate().take(last).skip(first) {
                if !a.is_valid() {
                    continue;
                }
                let (x0, y0, x1, y1) = params.cell_range(a);
                for iy in y0..=y1 {
                    for ix in x0..=x1 {
                        let cursor = &mut cursors[params.key(ix, iy) as usize];
                        let slot = *cursor as usize;
                        *cursor += 1;
                        debug_assert!(slot < entry_count);
                        // SAFETY: the prefix sum gave this part the slots
                        // [cursor, cursor + its count) of this bucket, all
                        // < entry_count and owned by no other part.
                        unsafe { slots.base().add(slot).write(CellEntry { aabb: *a, body: body as u32, ix, iy }) };
                    }
                }
            }
        });

        // SAFETY: the scatter initialised all entry_count slots (see above).
        unsafe { self.sorted.set_len(entry_count) };

        // Pairs, bucket by bucket: each pair from its reference cell only.
        let tasks = table.div_ceil(BUCKETS_PER_TASK);
        if self.task_pairs.len() < tasks {
            self.task_pairs.resize_with(tasks, Vec::new);
        }
        let sorted = &self.sorted[..];
        let starts = &self.bucket_start[..];
        let inv = params.inv_cell_size;
        self.task_pairs[..tasks].par_iter_mut().enumerate().for_each(|(t, pairs)| {
            pairs.clear();
            let first = t * BUCKETS_PER_TASK;
            let last = (first + BUCKETS_PER_TASK).min(table);
            let entries = &sorted[starts[first] as usize..starts[last] as usize];
            let base = starts[first] as usize;
            for k in first..last {
                let bucket = &entries[starts[k] as usize - base..starts[k + 1] as usize - base];
                for (u, e) in bucket.iter().enumerate() {
                    for f in &bucket[u + 1..] {
                        if e.ix == f.ix
                            && e.iy == f.iy
                            && e.aabb.overlaps(&f.aabb)
                            && cell_coord(e.aabb.min.x.max(f.aabb.min.x), inv) == e.ix
                            && cell_coord(e.aabb.min.y.max(f.aabb.min.y), inv) == e.iy
                        {
                            pairs.push(if e.body < f.body { [e.body, f.body] } else { [f.body, e.body] });
                        }
                    }
                }
            }
        });
        let total: usize = self.task_pairs[..tasks].iter().map(Vec::len).sum();
        out.reserve(total);
        for p in &self.task_pairs[..tasks] {
            out.extend_from_slice(p);
        }
        out.par_sort_unstable_by_key(|&[i, j]| (u64::from(i) << 32) | u64::from(j));
    }
}
