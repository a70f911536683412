//! Persistent candidate pairs from fat boxes (Box2D v3's enlarged boxes),
//! filtered each call down to exactly the pairs of the current boxes.
//!
//! Each body keeps a *fat box*: its box grown by a margin ([`FAT_MARGIN`]
//! of its larger side) when it was last placed. The *candidates* are a
//! sorted list holding every pair whose fat boxes overlap (and possibly
//! some that no longer do). A call checks each box against its fat box; a
//! body whose box has left it is placed again (a new fat box around its
//! current box, moved to its new cell of a grid of the fat boxes), and its
//! pairs are found again through the grid: those not yet candidates are
//! merged into the sorted list, which drops the pairs whose fat boxes no
//! longer overlap on the way. The first call, a change in the number of
//! boxes, more than a quarter of the bodies placed at once, or a scene no
//! grid fits (the boxes spread over too many cells, or a placed fat box
//! larger than the grid's cells allow) find the candidates from scratch
//! with the caller's broadphase on the fat boxes instead.
//!
//! **Exact.** The output is the candidates whose *current* boxes overlap
//! ([`Aabb::overlaps`]), in the candidates' (sorted) order: exactly the
//! pairs and order of a broadphase run from scratch on the current boxes.
//! Why: after the placing, every valid box lies inside its body's fat box
//! (an unmoved box was checked to; a placed one is grown outward in f32,
//! and `x − m` rounds to at most `x` for `m ≥ 0`), so two overlapping boxes
//! have overlapping fat boxes, and every such pair is a candidate: a pair
//! of two unmoved bodies kept its fat boxes and so its place in the list;
//! every pair of a placed body is tested against every fat box whose
//! min-corner cell lies within the query's range (a fat box overlapping the
//! query has its min-corner cell there: the argument of `grid.rs`, on the
//! computed cell coordinates, which clamping to the grid's rectangle keeps
//! monotone). Extra candidates only cost their test. An invalid box (NaN,
//! `min > max`) pairs with nothing whatever its fat box, so it is not
//! placed again.
//!
//! Cost: a pile at rest places no body, and a call is one containment test
//! per body and one overlap test per candidate; a placed body adds a query
//! of about nine cells, and a new pair a merge of the list, instead of a
//! grid and a sort of all pairs every call.
//!
//! Measured (100-row pyramid at Box2D's settings, 5,050 boxes, 120 steps):
//! 3 rebuilds, 99 updates placing 9,048 bodies, 28 merges; 24,600
//! candidates for 14,850 pairs; the contact stage's broadphase 0.99 → 0.31
//! ms/step at 2 threads (medians of 8 pairs alternated with main's, load
//! 3.4–4.4; docs/benchmarks.md, round `broad12`).

use super::Aabb;
use super::grid::cell_coord;
use glam::Vec2;

/// The margin a fat box adds on each side, as a fraction of the box's
/// larger side: large enough that a resting or slowly moving body stays in
/// its fat box for many steps, small enough that the candidates are not many
/// more than the pairs (each candidate costs one overlap test per call).
pub const FAT_MARGIN: f32 = 0.125;

/// Above one in this many bodies placed at once, the candidates are found
/// from scratch (the caller's broadphase sorts the pairs in linear time;
/// the fresh pairs of an update are sorted by comparison).
const REBUILD_SHARE: usize = 4;

/// Largest number of cells one query may scan, `(2·Sx + 1)(2·Sy + 1)`;
/// beyond it no grid is built (every move then rebuilds).
const MAX_QUERY_CELLS: i64 = 64;

/// A broadphase from scratch: replaces its output with every overlapping
/// pair of the boxes it is given, sorted (any broadphase of this module).
pub type Rebuild<'a> = dyn FnMut(&[Aabb], &mut Vec<[u32; 2]>) + 'a;

/// What the persistent pairs did, call by call (for tests and profiles).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FatPairStats {
    /// Calls.
    pub calls: u64,
    /// Calls that placed every body again and found the candidates from scratch.
    pub rebuilds: u64,
    /// Calls that placed some bodies again and found only their pairs.
    pub updates: u64,
    /// Bodies placed again by those updates.
    pub placed: u64,
    /// Updates that found new pairs and merged them into the candidates.
    pub merges: u64,
    /// The candidates after the last call.
    pub candidates: u64,
}

/// Candidate pairs kept between calls (see the module documentation).
#[derive(Default)]
pub struct FatBoxPairs {
    /// Each body's fat box.
    fat: Vec<Aabb>,
    /// Every pair `[i, j]`, `i < j`, whose fat boxes overlap, and some
    /// that no longer do (dropped at the next merge), sorted.
    candidates: Vec<[u32; 2]>,
    /// The buffer the candidates are merged into (the two swap).
    merged: Vec<[u32; 2]>,
    /// Where each body's run of candidates `[i, _]` starts, and the total.
    row_start: Vec<u32>,
    /// The fat boxes by min-corner cell (`None`: no grid fits them).
    index: Option<FatGrid>,
    /// Per body: placed by the current call.
    moved_flag: Vec<bool>,
    /// The bodies placed by the current call (ascending).
    moved: Vec<u32>,
    /// The placed bodies' pairs, then sorted.
    fresh: Vec<[u32; 2]>,
    stats: FatPairStats,
}

impl FatBoxPairs {
    /// No candidates yet: the first call finds them from scratch.
    pub fn new() -> Self {
        Self::default()
    }

    /// What the calls so far did.
    pub fn stats(&self) -> FatPairStats {
        FatPairStats { candidates: self.candidates.len() as u64, ..self.stats }
    }

    /// Replaces `out` with every overlapping pair `[i, j]`, `i < j`, of
    /// `aabbs`, sorted (pair semantics: see [`crate::broadphase`]), exactly
    /// what `rebuild` gives for the same boxes. `rebuild` must replace its
    /// output with every overlapping pair of the boxes it is given, sorted
    /// (any broadphase of this module); it is called on the fat boxes when
    /// the candidates are found from scratch.
    pub fn find_pairs(&mut self, aabbs: &[Aabb], rebuild: &mut Rebuild<'_>, out: &mut Vec<[u32; 2]>) {
        out.clear();
        self.update(aabbs, rebuild);
        self.filter_into(aabbs, out, |pair| pair);
    }

    /// Brings the candidates up to date for `aabbs` (see
    /// [`find_pairs`](Self::find_pairs) for `rebuild`): afterwards every
    /// overlapping pair of `aabbs` is a candidate.
    pub fn update(&mut self, aabbs: &[Aabb], rebuild: &mut Rebuild<'_>) {
        let n = aabbs.len();
        self.stats.calls += 1;
        if self.fat.len() != n {
            return self.rebuild(aabbs, rebuild);
        }
        self.moved.clear();
        for (i, (a, f)) in aabbs.iter().zip(&self.fat).enumerate() {
            let inside = (f.min.x <= a.min.x) & (f.min.y <= a.min.y) & (a.max.x <= f.max.x) & (a.max.y <= f.max.y);
            if !inside && a.is_valid() {
                self.moved.push(i as u32);
            }
        }
        if self.moved.is_empty() {
            return;
        }
        if self.index.is_none() || self.moved.len() > n / REBUILD_SHARE {
            return self.rebuild(aabbs, rebuild);
        }
        let Some(mut index) = self.index.take() else {
            return self.rebuild(aabbs, rebuild);
        };
        for &i in &self.moved {
            self.fat[i as usize] = fat_box(&aabbs[i as usize]);
            if !index.place(i, &self.fat[i as usize]) {
                return self.rebuild(aabbs, rebuild);
            }
        }
        self.place_moved(&index);
        self.index = Some(index);
    }

    /// Appends `map(pair)` for every candidate whose boxes in `aabbs`
    /// overlap, in order, to `out`: after [`update`](Self::update) with the
    /// same boxes, every overlapping pair, sorted.
    pub fn filter_into<T: Copy>(&self, aabbs: &[Aabb], out: &mut Vec<T>, map: impl Fn([u32; 2]) -> T) {
        // Branch-free: every candidate's entry is written, and the length
        // advances only on a hit (the predicate of `Aabb::overlaps`, its
        // terms evaluated without short-circuit).
        out.reserve(self.candidates.len());
        let base = out.len();
        let spare = out.spare_capacity_mut();
        let mut len = 0;
        for &[i, j] in &self.candidates {
            let (a, b) = (&aabbs[i as usize], &aabbs[j as usize]);
            let hit = (a.min.x <= a.max.x)
                & (a.min.y <= a.max.y)
                & (b.min.x <= b.max.x)
                & (b.min.y <= b.max.y)
                & (a.min.x <= b.max.x)
                & (b.min.x <= a.max.x)
                & (a.min.y <= b.max.y)
                & (b.min.y <= a.max.y);
            // A slot written over by the next candidate is a `Copy` value:
            // nothing to drop.
            spare[len].write(map([i, j]));
            len += usize::from(hit);
        }
        // SAFETY: the first `len` spare slots were written above.
        unsafe { out.set_len(base + len) };
    }

    /// Places every body again and finds the candidates from scratch.
    fn rebuild(&mut self, aabbs: &[Aabb], rebuild: &mut Rebuild<'_>) {
        self.stats.rebuilds += 1;
        self.fat.clear();
        self.fat.extend(aabbs.iter().map(fat_box));
        rebuild(&self.fat, &mut self.candidates);
        self.index = FatGrid::of(&self.fat, self.index.take().map(|g| g.cells).unwrap_or_default());
        self.moved_flag.clear();
        self.moved_flag.resize(aabbs.len(), false);
        self.index_rows();
    }

    /// `row_start` for the current candidates.
    fn index_rows(&mut self) {
        let n = self.fat.len();
        self.row_start.clear();
        self.row_start.resize(n + 1, 0);
        for &[i, _] in &self.candidates {
            self.row_start[i as usize + 1] += 1;
        }
        for i in 0..n {
            self.row_start[i + 1] += self.row_start[i];
        }
    }

    /// The moved bodies' new pairs (their fat boxes already placed, in
    /// `index` too): each pair of a moved body whose fat boxes overlap and
    /// that is not a candidate yet is merged into the candidates. Pairs that
    /// no longer overlap are left (harmless: the filter tests the current
    /// boxes) until a merge, which drops them.
    fn place_moved(&mut self, index: &FatGrid) {
        self.stats.updates += 1;
        self.stats.placed += self.moved.len() as u64;
        for &i in &self.moved {
            self.moved_flag[i as usize] = true;
        }
        let (fat, moved_flag, candidates, row_start) = (&self.fat, &self.moved_flag, &self.candidates, &self.row_start);
        self.fresh.clear();
        for &i in &self.moved {
            let q = &fat[i as usize];
            // A pair of two moved bodies is found from its lower body only.
            index.query(q, |j| {
                if (!moved_flag[j as usize] || i < j) && j != i && q.overlaps(&fat[j as usize]) {
                    let (a, b) = if i < j { (i, j) } else { (j, i) };
                    let row = &candidates[row_start[a as usize] as usize..row_start[a as usize + 1] as usize];
                    if !row.iter().any(|p| p[1] == b) {
                        self.fresh.push([a, b]);
                    }
                }
            });
        }
        for &i in &self.moved {
            self.moved_flag[i as usize] = false;
        }
        if self.fresh.is_empty() {
            return;
        }
        self.stats.merges += 1;
        self.fresh.sort_unstable();
        // Merge the fresh pairs into the candidates that still overlap
        // (both sorted, disjoint), branch-free on the kept ones: each
        // candidate is written, and the length advances only when it is
        // kept (the rare fresh pair before it is a predictable branch).
        let total = self.candidates.len() + self.fresh.len();
        self.merged.clear();
        self.merged.reserve(total);
        let spare = self.merged.spare_capacity_mut();
        let (fresh, fat) = (&self.fresh[..], &self.fat);
        let (mut len, mut f) = (0, 0);
        for &pair in &self.candidates {
            while f < fresh.len() && fresh[f] < pair {
                spare[len].write(fresh[f]);
                (len, f) = (len + 1, f + 1);
            }
            // Never past the end: `len` counts the pairs kept and the
            // fresh ones written before this candidate, at most total − 1.
            spare[len].write(pair);
            len += usize::from(fat[pair[0] as usize].overlaps(&fat[pair[1] as usize]));
        }
        for &pair in &fresh[f..] {
            spare[len].write(pair);
            len += 1;
        }
        // SAFETY: the first `len` spare slots were written above.
        unsafe { self.merged.set_len(len) };
        std::mem::swap(&mut self.candidates, &mut self.merged);
        self.index_rows();
    }
}

/// The fat box of a box: grown by [`FAT_MARGIN`] of its larger side on
/// each side (rounded outward: `x − m ≤ x` and `x + m ≥ x` in f32 for
/// `m ≥ 0`). An invalid box gives an invalid one (it pairs with nothing).
fn fat_box(a: &Aabb) -> Aabb {
    let margin = Vec2::splat(FAT_MARGIN * (a.max - a.min).max_element());
    Aabb::new(a.min - margin, a.max + margin)
}

/// The fat boxes by the cell of their min corner: cells as large as the
/// largest fat box of the last rebuild, over the rectangle of its min
/// corners; a cell coordinate outside the rectangle is clamped to its edge
/// (clamping keeps the coordinates monotone and spans no larger, so the
/// query's argument holds). A placed body moves from cell to cell.
struct FatGrid {
    inv_cell: f32,
    origin: (i32, i32),
    width: i32,
    height: i32,
    /// Largest cell span of a fat box on x and y allowed (that of the
    /// rebuild); a body placed with a larger one asks for a rebuild.
    span: (i64, i64),
    /// The bodies of each cell (row-major), in no particular order.
    cells: Vec<Vec<u32>>,
    /// Each body's cell ([`NOT_INDEXED`]: an invalid fat box).
    cell_of: Vec<u32>,
}

/// The cell of a body whose fat box is invalid (it pairs with nothing).
const NOT_INDEXED: u32 = u32::MAX;

impl FatGrid {
    /// The grid of the valid boxes among `fat` (`cells`: buffers to reuse);
    /// `None` when no grid fits (no valid box, infinite or zero sizes, a
    /// rectangle of more than 4N + 1024 cells, or a span that makes a
    /// query scan more than [`MAX_QUERY_CELLS`] cells).
    fn of(fat: &[Aabb], mut cells: Vec<Vec<u32>>) -> Option<Self> {
        let valid = || fat.iter().filter(|a| a.is_valid());
        let cell = valid().map(|a| (a.max - a.min).max_element()).fold(0.0f32, f32::max);
        let inv_cell = 1.0 / cell;
        if !(cell > 0.0 && cell.is_finite() && inv_cell.is_finite() && inv_cell > 0.0) {
            return None;
        }
        let (mut lo, mut hi, mut span) = ((i32::MAX, i32::MAX), (i32::MIN, i32::MIN), (0i64, 0i64));
        for a in valid() {
            let (x0, y0) = (cell_coord(a.min.x, inv_cell), cell_coord(a.min.y, inv_cell));
            let (x1, y1) = (cell_coord(a.max.x, inv_cell), cell_coord(a.max.y, inv_cell));
            lo = (lo.0.min(x0), lo.1.min(y0));
            hi = (hi.0.max(x0), hi.1.max(y0));
            span = (span.0.max(i64::from(x1) - i64::from(x0)), span.1.max(i64::from(y1) - i64::from(y0)));
        }
        let (width, height) = (i64::from(hi.0) - i64::from(lo.0) + 1, i64::from(hi.1) - i64::from(lo.1) + 1);
        if width * height > 4 * fat.len() as i64 + 1024 || (2 * span.0 + 1) * (2 * span.1 + 1) > MAX_QUERY_CELLS {
            return None;
        }
        let count = (width * height) as usize;
        cells.truncate(count);
        cells.iter_mut().for_each(Vec::clear);
        cells.resize_with(count, Vec::new);
        let mut grid = Self {
            inv_cell,
            origin: lo,
            width: width as i32,
            height: height as i32,
            span,
            cells,
            cell_of: vec![NOT_INDEXED; fat.len()],
        };
        for (i, a) in fat.iter().enumerate().filter(|(_, a)| a.is_valid()) {
            let key = grid.key(grid.cell(a.min.x, a.min.y));
            grid.cells[key].push(i as u32);
            grid.cell_of[i] = key as u32;
        }
        Some(grid)
    }

    /// The clamped cell coordinates of the point (`x`, `y`).
    #[inline]
    fn cell(&self, x: f32, y: f32) -> (i64, i64) {
        let clamp = |c: i32, origin: i32, size: i32| i64::from(c.clamp(origin, origin + size - 1));
        (
            clamp(cell_coord(x, self.inv_cell), self.origin.0, self.width),
            clamp(cell_coord(y, self.inv_cell), self.origin.1, self.height),
        )
    }

    /// The index of the cell at clamped coordinates `c`.
    #[inline]
    fn key(&self, c: (i64, i64)) -> usize {
        (c.1 - i64::from(self.origin.1)) as usize * self.width as usize + (c.0 - i64::from(self.origin.0)) as usize
    }

    /// Moves `body` to the cell of its new fat box `f`; `false` when `f`
    /// spans more cells than the grid allows (the caller rebuilds).
    fn place(&mut self, body: u32, f: &Aabb) -> bool {
        let old = self.cell_of[body as usize];
        if old != NOT_INDEXED {
            let cell = &mut self.cells[old as usize];
            if let Some(k) = cell.iter().position(|&b| b == body) {
                cell.swap_remove(k);
            }
            self.cell_of[body as usize] = NOT_INDEXED;
        }
        if !f.is_valid() {
            return true;
        }
        let (lo, hi) = (self.cell(f.min.x, f.min.y), self.cell(f.max.x, f.max.y));
        if hi.0 - lo.0 > self.span.0 || hi.1 - lo.1 > self.span.1 {
            return false;
        }
        let key = self.key(lo);
        self.cells[key].push(body);
        self.cell_of[body as usize] = key as u32;
        true
    }

    /// Calls `visit` with every indexed body whose fat box may overlap the
    /// valid box `q` (a superset: the caller tests the overlap): those of
    /// the cells `cell(q.min) − S ..= cell(q.max)` on each axis.
    fn query(&self, q: &Aabb, mut visit: impl FnMut(u32)) {
        let (lo, hi) = (self.cell(q.min.x, q.min.y), self.cell(q.max.x, q.max.y));
        let x0 = (lo.0 - self.span.0).max(i64::from(self.origin.0));
        let y0 = (lo.1 - self.span.1).max(i64::from(self.origin.1));
        for y in y0..=hi.1 {
            for x in x0..=hi.0 {
                for &j in &self.cells[self.key((x, y))] {
                    visit(j);
                }
            }
        }
    }
}
