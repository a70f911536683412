//! Supernodal numeric LDLᵀ for the loop part of A = J M⁻¹ Jᵀ (issue 10).
//!
//! The block elimination of [`gauss`](super::gauss) updates one 3×3 block at a
//! time through a precomputed slot list: ideal for chains and trees (columns of one
//! or two blocks), but on a mesh of loops the columns of L grow to hundreds of
//! blocks and the Σ (column length)² block updates become scattered memory traffic.
//! Here the factor is stored by **supernodes**: runs of consecutive block columns
//! whose structures are nested (struct(p) = {p+1} ∪ struct(p+1)), amalgamated with
//! their parent when that adds few explicit zeros. Each supernode is a dense
//! column-major panel (its own scalar columns, then the rows below) and
//!
//! * the updates from a descendant are one dense product C = L_d · (L_d D_d)ᵀ
//!   (`faer`'s matrix multiply for the large ones) scattered into the panel
//!   through relative row indices (left-looking, as CHOLMOD: each panel is
//!   complete before it is factored);
//! * the panel is then factored by a dense scalar LDLᵀ without pivoting.
//!
//! The unknowns are the scalar rows of the constraints (no padding: a 1-row
//! constraint costs one column). **Rank decisions are those of the block path**:
//! block LDLᵀ with the block pivots factored by scalar LDLᵀ (`block::ldl_inverse`)
//! is the scalar LDLᵀ in the same order, so every scalar pivot d_r is the same
//! number (up to roundoff) and gets the same test `d_r > thresh_rel × scale_r`,
//! the same "drop" (infinite pivot: the column of L is zero, the row takes no part
//! in later eliminations) or "floor" (static pivot `floor_rel × scale_r`). The
//! scale-invariance argument of the module doc of `gauss` carries
//! over unchanged, and the multipliers agree with the block path and the dense
//! reference to roundoff (`tests/solver_supernodal.rs`).
//!
//! Where a rank-revealing pass drops pivots, their columns of L are zero: the
//! dense products of the descendant updates and of the panel's blocks run over the
//! kept columns only (gathered), a dropped column's rank-1 updates are skipped, and
//! a descendant whose pivots were all dropped is not applied. On the all-revolute
//! 100 × 100 grid the dropped rows sit mostly in the large separators and carried
//! ≈ 80 % of that pass's product work. A pass without a dropped pivot (every
//! regular or regularised factor) runs exactly as before. The scatter of an update
//! goes by runs of consecutive target rows, and a triangular solve gathers each
//! supernode's rows once into a contiguous vector: both apply the same operations
//! to each entry in the same order as entry-by-entry code, so the results are the
//! same bit for bit (docs/benchmarks.md, round of 27 Nov).
//!
//! Everything is sequential with a fixed operation order, so results are bitwise
//! the same from run to run; all buffers are sized by the symbolic analysis, so a
//! factorisation allocates nothing (faer's product keeps its own workspace per
//! thread, allocated by the first factorisation).

use faer::linalg::matmul::matmul;
use faer::{Accum, MatMut, MatRef, Par};

use super::block::{Block, SmallPivot};
use super::sparse::BlockSparseSymmetric;

const NIL: u32 = u32::MAX;

/// Relaxed amalgamation: a child joins its parent's supernode when the explicit
/// zeros this stores stay below this fraction of the merged supernode's entries…
const RELAX_ZEROS: f64 = 0.2;
/// …or when the merged supernode has at most this many scalar columns (small
/// panels cost more in loop overhead than in the few zeros they store).
const RELAX_SMALL_COLS: usize = 8;
/// Products with fewer multiply-adds than this use the plain loop, not faer's
/// kernel (whose set-up costs more than such a product).
const SMALL_PRODUCT: usize = 4096;
/// Columns of a panel factored by rank-1 updates before the rest of the panel is
/// updated by one product (blocked right-looking LDLᵀ: the rank-1 loops are
/// memory-bound, the product runs at faer's kernel speed).
const PANEL_BLOCK: usize = 32;

/// Symbolic structure and numeric values of a supernodal factor.
#[derive(Clone, Debug, Default)]
pub(crate) struct Supernodal {
    // ---- symbolic
    /// Scalar columns (total rows of the constraints).
    n_cols: usize,
    /// Block position → first scalar column (length n + 1).
    pos_col: Vec<u32>,
    /// Scalar column → block position.
    col_pos: Vec<u32>,
    /// Supernode → first scalar column (length n_super + 1).
    sup_ptr: Vec<u32>,
    /// Scalar column → supernode.
    sup_of: Vec<u32>,
    /// Supernode → its rows in `rows` (own columns first, then the rows below, ascending).
    rows_ptr: Vec<u32>,
    rows: Vec<u32>,
    /// Supernode → start of its panel in `lx` (column-major, `m × n_s`).
    lx_ptr: Vec<usize>,
    /// Diagonal block of A at position p → panel slot of its (0, 0) entry.
    diag_slot: Vec<usize>,
    /// Off-diagonal block k of A → panel slot of its first entry, and whether it
    /// is stored transposed (its row constraint comes first in the order).
    off_slot: Vec<usize>,
    off_tr: Vec<bool>,
    /// Column stride (panel height) at each off-diagonal block's slot.
    off_stride: Vec<u32>,
    /// Block structure entries (for the partition invariants).
    n_blocks: usize,
    // ---- numeric
    lx: Vec<f64>,
    /// Effective pivot of each scalar column (0 for a dropped row).
    dval: Vec<f64>,
    /// Its inverse (0 for a dropped row).
    dinv: Vec<f64>,
    // ---- scratch
    head: Vec<u32>,
    next: Vec<u32>,
    lpos: Vec<u32>,
    map: Vec<u32>,
    rel: Vec<u32>,
    /// Ends of the runs of consecutive target rows in `rel` (an update's scatter).
    run_end: Vec<u32>,
    c: Vec<f64>,
    /// The kept (not dropped) columns of a descendant, gathered for its product.
    lk: Vec<f64>,
    wt: Vec<f64>,
    wcol: Vec<f64>,
    y: Vec<f64>,
    /// A supernode's rows of the solution vector, gathered (triangular solves).
    yloc: Vec<f64>,
}

/// The numeric values of a supernodal factor (panels and pivots), kept aside
/// while a second factor of the same structure is in use (the exact factor of a
/// system in the regularisation band, module doc of `solver`).
#[derive(Clone, Debug, Default)]
pub(crate) struct SupernodalValues {
    lx: Vec<f64>,
    dval: Vec<f64>,
    dinv: Vec<f64>,
}

impl Supernodal {
    /// Copies the current numeric values into `v` (no allocation once `v` has
    /// held values of this size).
    pub(crate) fn save_values(&self, v: &mut SupernodalValues) {
        for (dst, src) in [(&mut v.lx, &self.lx), (&mut v.dval, &self.dval), (&mut v.dinv, &self.dinv)] {
            dst.clear();
            dst.extend_from_slice(src);
        }
    }

    /// Exchanges the current numeric values with `v` (pointer swaps).
    pub(crate) fn swap_values(&mut self, v: &mut SupernodalValues) {
        std::mem::swap(&mut self.lx, &mut v.lx);
        std::mem::swap(&mut self.dval, &mut v.dval);
        std::mem::swap(&mut self.dinv, &mut v.dinv);
    }

    /// Number of supernodes.
    pub(crate) fn n_supernodes(&self) -> usize {
        self.sup_ptr.len().saturating_sub(1)
    }

    /// The supernode partition as ranges of block positions.
    pub(crate) fn supernode_positions(&self) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
        (0..self.n_supernodes()).map(|s| {
            let (f, l) = (self.sup_ptr[s] as usize, self.sup_ptr[s + 1] as usize);
            let pf = if f < self.n_cols { self.col_pos[f] as usize } else { self.n_blocks };
            let pl = if l < self.n_cols { self.col_pos[l] as usize } else { self.n_blocks };
            pf..pl
        })
    }

    /// Stored scalar entries of L (panels, including the explicit zeros of
    /// amalgamation and the diagonal).
    pub(crate) fn stored_entries(&self) -> usize {
        self.lx.len()
    }

    /// Symbolic analysis from the block structure of L (`col_ptr` / `row_idx` by
    /// positions, rows ascending) and the elimination order `perm`.
    pub(crate) fn analyze(&mut self, a: &BlockSparseSymmetric, perm: &[u32], col_ptr: &[u32], row_idx: &[u32]) {
        let n = perm.len();
        self.n_blocks = n;
        // scalar columns by position
        self.pos_col.clear();
        self.pos_col.push(0);
        self.col_pos.clear();
        for (p, &c) in perm.iter().enumerate() {
            let k = a.rows[c as usize];
            for _ in 0..k {
                self.col_pos.push(p as u32);
            }
            self.pos_col.push(self.pos_col[p] + k);
        }
        let nc = self.pos_col[n] as usize;
        self.n_cols = nc;
        // block supernodes: fundamental, then relaxed with the parent p + 1
        let cc = |p: usize| (col_ptr[p + 1] - col_ptr[p]) as usize;
        let parent = |p: usize| if cc(p) > 0 { row_idx[col_ptr[p] as usize] as usize } else { usize::MAX };
        // scalar row count of a block column's structure
        let srows = |p: usize| -> usize {
            row_idx[col_ptr[p] as usize..col_ptr[p + 1] as usize]
                .iter()
                .map(|&q| (self.pos_col[q as usize + 1] - self.pos_col[q as usize]) as usize)
                .sum()
        };
        let mut sup_first: Vec<usize> = Vec::new(); // first block position of each supernode
        let mut p = 0;
        while p < n {
            let first = p;
            sup_first.push(first);
            // entries stored / true (scalar, strictly below the diagonal) of the
            // supernode [first..=p] if it ends at p
            let mut true_entries = {
                let w = (self.pos_col[p + 1] - self.pos_col[p]) as usize;
                w * srows(p) + w * (w - 1) / 2
            };
            while p + 1 < n && parent(p) == p + 1 {
                let q = p + 1;
                let fundamental = cc(p) == cc(q) + 1;
                // the merged supernode [first..=q]: its columns, then struct(q)
                let width = (self.pos_col[q + 1] - self.pos_col[first]) as usize;
                let below = srows(q);
                let stored = width * below + width * (width - 1) / 2;
                let wq = (self.pos_col[q + 1] - self.pos_col[q]) as usize;
                let t = true_entries + wq * below + wq * (wq - 1) / 2;
                let zeros = stored - t.min(stored);
                if fundamental || width <= RELAX_SMALL_COLS || (zeros as f64) <= RELAX_ZEROS * stored as f64 {
                    true_entries = t;
                    p = q;
                } else {
                    break;
                }
            }
            p += 1;
        }
        let ns = sup_first.len();
        sup_first.push(n);
        self.sup_ptr.clear();
        self.sup_ptr.extend(sup_first.iter().map(|&p| self.pos_col[p]));
        self.sup_of.clear();
        self.sup_of.resize(nc, 0);
        for s in 0..ns {
            for g in self.sup_ptr[s]..self.sup_ptr[s + 1] {
                self.sup_of[g as usize] = s as u32;
            }
        }
        // row lists and panels
        self.rows_ptr.clear();
        self.rows_ptr.push(0);
        self.rows.clear();
        self.lx_ptr.clear();
        self.lx_ptr.push(0);
        let mut max_below = 0usize;
        let mut max_m = 0usize;
        let mut max_w = 0usize;
        for s in 0..ns {
            let last = sup_first[s + 1] - 1;
            self.rows.extend(self.sup_ptr[s]..self.sup_ptr[s + 1]);
            for &q in &row_idx[col_ptr[last] as usize..col_ptr[last + 1] as usize] {
                self.rows.extend(self.pos_col[q as usize]..self.pos_col[q as usize + 1]);
            }
            self.rows_ptr.push(self.rows.len() as u32);
            let m = (self.rows_ptr[s + 1] - self.rows_ptr[s]) as usize;
            let w = (self.sup_ptr[s + 1] - self.sup_ptr[s]) as usize;
            max_below = max_below.max(m - w);
            max_m = max_m.max(m);
            max_w = max_w.max(w);
            self.lx_ptr.push(self.lx_ptr[s] + m * w);
        }
        // where the blocks of A go
        let slot = |this: &Self, row: u32, col: u32| -> usize {
            let s = this.sup_of[col as usize] as usize;
            let rs = &this.rows[this.rows_ptr[s] as usize..this.rows_ptr[s + 1] as usize];
            let m = rs.len();
            let local = match rs.binary_search(&row) {
                Ok(i) => i,
                Err(_) => unreachable!("block of A missing from the supernodal structure"),
            };
            this.lx_ptr[s] + (col - this.sup_ptr[s]) as usize * m + local
        };
        self.diag_slot.clear();
        for p in 0..n {
            let g = self.pos_col[p];
            self.diag_slot.push(slot(self, g, g));
        }
        let mut iperm = vec![0u32; n];
        for (p, &c) in perm.iter().enumerate() {
            iperm[c as usize] = p as u32;
        }
        self.off_slot.clear();
        self.off_tr.clear();
        self.off_stride.clear();
        for (&i, &j) in a.off_i.iter().zip(a.off_j.iter()) {
            let (pi, pj) = (iperm[i as usize], iperm[j as usize]);
            let (row, col, tr) = if pi > pj { (pi, pj, false) } else { (pj, pi, true) };
            let gc = self.pos_col[col as usize];
            self.off_slot.push(slot(self, self.pos_col[row as usize], gc));
            self.off_tr.push(tr);
            let sc = self.sup_of[gc as usize] as usize;
            self.off_stride.push(self.rows_ptr[sc + 1] - self.rows_ptr[sc]);
        }
        let total = self.lx_ptr[ns];
        self.lx.clear();
        self.lx.resize(total, 0.0);
        self.dval.clear();
        self.dval.resize(nc, 0.0);
        self.dinv.clear();
        self.dinv.resize(nc, 0.0);
        self.head.clear();
        self.head.resize(ns, NIL);
        self.next.clear();
        self.next.resize(ns, NIL);
        self.lpos.clear();
        self.lpos.resize(ns, 0);
        self.map.clear();
        self.map.resize(nc, 0);
        self.rel.clear();
        self.rel.resize(max_m, 0);
        self.run_end.clear();
        self.run_end.reserve(max_m + 1);
        // an update C is at most (rows below a descendant) × (its rows in the target)
        self.c.clear();
        self.c.resize(max_below * max_below, 0.0);
        self.lk.clear();
        self.lk.resize((max_below * max_w).max(max_m * PANEL_BLOCK), 0.0);
        self.wt.clear();
        self.wt.resize((max_w * max_below).max(PANEL_BLOCK * max_w), 0.0);
        self.wcol.clear();
        self.wcol.resize(max_m, 0.0);
        self.y.clear();
        self.y.resize(nc, 0.0);
        self.yloc.clear();
        self.yloc.resize(max_m, 0.0);
    }

    /// Numeric factorisation (see `BlockLdl::numeric` for the
    /// arguments). `scale[p]` are the row scales by position. Calls `small(p)` for
    /// each small pivot at position p. Returns (any small pivot, pivot growth,
    /// smallest relative pivot d_r / scale_r of the pivots that were not small).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn numeric(
        &mut self,
        a: &BlockSparseSymmetric,
        perm: &[u32],
        scale: &[[f64; 3]],
        eps: f64,
        thresh_rel: f64,
        floor_rel: f64,
        mode: SmallPivot,
        mut small: impl FnMut(usize),
    ) -> (bool, f64, f64) {
        // ---- assemble A (+ eps·scale on the diagonal) into the panels
        self.lx.fill(0.0);
        for (p, &c) in perm.iter().enumerate() {
            let s = self.sup_of[self.pos_col[p] as usize] as usize;
            let m = (self.rows_ptr[s + 1] - self.rows_ptr[s]) as usize;
            let base = self.diag_slot[p];
            let k = a.rows[c as usize] as usize;
            let d: &Block = &a.diag[c as usize];
            for r2 in 0..k {
                for r1 in r2..k {
                    self.lx[base + r2 * m + r1] = d[3 * r1 + r2];
                }
                self.lx[base + r2 * m + r2] += eps * scale[p][r2];
            }
        }
        for (kk, blk) in a.off.iter().enumerate() {
            let (i, j) = (a.off_i[kk] as usize, a.off_j[kk] as usize);
            let (ki, kj) = (a.rows[i] as usize, a.rows[j] as usize);
            let base = self.off_slot[kk];
            let m = self.off_stride[kk] as usize;
            if self.off_tr[kk] {
                for r in 0..ki {
                    for t in 0..kj {
                        self.lx[base + r * m + t] = blk[3 * r + t];
                    }
                }
            } else {
                for t in 0..kj {
                    for r in 0..ki {
                        self.lx[base + t * m + r] = blk[3 * r + t];
                    }
                }
            }
        }
        // ---- left-looking supernodal LDLᵀ
        let ns = self.n_supernodes();
        self.head.fill(NIL);
        let mut any_small = false;
        let mut growth = 0.0f64;
        let mut min_rel_pivot = f64::INFINITY;
        for s in 0..ns {
            let (f, l) = (self.sup_ptr[s] as usize, self.sup_ptr[s + 1] as usize);
            let (r0, r1) = (self.rows_ptr[s] as usize, self.rows_ptr[s + 1] as usize);
            let m = r1 - r0;
            let w = l - f;
            for (i, &g) in self.rows[r0..r1].iter().enumerate() {
                self.map[g as usize] = i as u32;
            }
            // updates from every descendant with rows in this supernode's columns
            let mut d = self.head[s];
            while d != NIL {
                let du = d as usize;
                let next_d = self.next[du];
                self.update_from(du, s, f, l, m);
                d = next_d;
            }
            // dense LDLᵀ of the panel, by blocks of PANEL_BLOCK columns: rank-1
            // updates inside a block, one product for the columns after it
            let base = self.lx_ptr[s];
            let mut j0 = 0;
            while j0 < w {
                let j1 = (j0 + PANEL_BLOCK).min(w);
                for j in j0..j1 {
                    let g = f + j;
                    let p = self.col_pos[g] as usize;
                    let r = g - self.pos_col[p] as usize;
                    let sc = scale[p][r];
                    let col = base + j * m;
                    let dj = self.lx[col + j];
                    let (dv, di) = if dj > thresh_rel * sc {
                        min_rel_pivot = min_rel_pivot.min(dj / sc);
                        (dj, 1.0 / dj)
                    } else {
                        any_small = true;
                        small(p);
                        match mode {
                            SmallPivot::Drop => (0.0, 0.0),
                            SmallPivot::Floor => (floor_rel * sc, 1.0 / (floor_rel * sc)),
                        }
                    };
                    self.dval[g] = dv;
                    self.dinv[g] = di;
                    growth = growth.max(di * sc);
                    // W = the column below the pivot (unscaled); L = W · d⁻¹
                    let below = m - j - 1;
                    self.wcol[..below].copy_from_slice(&self.lx[col + j + 1..col + m]);
                    for v in &mut self.lx[col + j + 1..col + m] {
                        *v *= di;
                    }
                    // the later columns of this block: A_ik -= L_ij W_kj (none
                    // from a dropped pivot: its column of L is zero)
                    if di == 0.0 {
                        continue;
                    }
                    for k in j + 1..j1 {
                        let wk = self.wcol[k - j - 1];
                        if wk == 0.0 {
                            continue;
                        }
                        let (lo, hi) = self.lx.split_at_mut(base + k * m);
                        let lcol = &lo[col + k..col + m];
                        for (t, &lv) in hi[k..m].iter_mut().zip(lcol) {
                            *t -= lv * wk;
                        }
                    }
                }
                if j1 < w {
                    // A[j1.., j1..w] -= L[j1.., j0..j1] · (L[j1..w, j0..j1] D)ᵀ; the
                    // upper triangle of the diagonal part is written but never read
                    let jb = j1 - j0;
                    let wr = w - j1;
                    // only the block's columns with a pivot kept (as in `update_from`)
                    let kept = self.dval[f + j0..f + j1].iter().filter(|&&v| v != 0.0).count();
                    let (lo, hi) = self.lx.split_at_mut(base + j1 * m);
                    let dst = MatMut::from_column_major_slice_with_stride_mut(&mut hi[j1..], m - j1, wr, m);
                    if kept == jb {
                        for k in 0..jb {
                            let dk = self.dval[f + j0 + k];
                            let colk = base + (j0 + k) * m + j1;
                            for t in 0..wr {
                                self.wt[k + t * jb] = dk * lo[colk + t];
                            }
                        }
                        let lhs = MatRef::from_column_major_slice_with_stride(&lo[base + j0 * m + j1..], m - j1, jb, m);
                        let rhs = MatRef::from_column_major_slice(&self.wt[..jb * wr], jb, wr);
                        matmul(dst, Accum::Add, lhs, rhs, -1.0, Par::Seq);
                    } else if kept > 0 {
                        let h = m - j1;
                        let mut kk = 0;
                        for k in 0..jb {
                            let dk = self.dval[f + j0 + k];
                            if dk == 0.0 {
                                continue;
                            }
                            let colk = base + (j0 + k) * m + j1;
                            self.lk[kk * h..(kk + 1) * h].copy_from_slice(&lo[colk..colk + h]);
                            for t in 0..wr {
                                self.wt[kk + t * kept] = dk * lo[colk + t];
                            }
                            kk += 1;
                        }
                        let lhs = MatRef::from_column_major_slice(&self.lk[..h * kept], h, kept);
                        let rhs = MatRef::from_column_major_slice(&self.wt[..kept * wr], kept, wr);
                        matmul(dst, Accum::Add, lhs, rhs, -1.0, Par::Seq);
                    }
                }
                j0 = j1;
            }
            // hand this supernode to the one holding its first row below
            if m > w {
                self.lpos[s] = w as u32;
                let t = self.sup_of[self.rows[r0 + w] as usize] as usize;
                self.next[s] = self.head[t];
                self.head[t] = s as u32;
            }
        }
        (any_small, growth, min_rel_pivot)
    }

    /// Left-looking update of supernode `s` (columns `f..l`, `m` rows, `map`
    /// holding its local rows) from descendant `d`; relinks `d` to the next
    /// supernode it updates.
    fn update_from(&mut self, d: usize, s: usize, f: usize, l: usize, m: usize) {
        let (d0, d1) = (self.rows_ptr[d] as usize, self.rows_ptr[d + 1] as usize);
        let md = d1 - d0;
        let wd = (self.sup_ptr[d + 1] - self.sup_ptr[d]) as usize;
        let fd = self.sup_ptr[d] as usize;
        let p1 = self.lpos[d] as usize;
        // rows of d in s's columns: p1..p2 (ascending rows)
        let mut p2 = p1;
        while p2 < md && (self.rows[d0 + p2] as usize) < l {
            p2 += 1;
        }
        let n1 = p2 - p1;
        let n2 = md - p1;
        debug_assert!(n1 > 0 && (self.rows[d0 + p1] as usize) >= f);
        // Columns of d with a dropped pivot (rank-revealing pass: d_k = 0 and
        // the column of L zero) contribute nothing: the product runs over the
        // others only. On the all-revolute grid they carry ≈ 80 % of the
        // update products of that pass (the loop-closing rows sit in the large
        // separators). Without a dropped pivot nothing changes.
        let ld = self.lx_ptr[d];
        let kept = self.dval[fd..fd + wd].iter().filter(|&&v| v != 0.0).count();
        if kept == 0 {
            // C = 0: nothing to subtract
            self.relink(d, d0, md, p2);
            return;
        }
        if kept < wd && n2 * n1 * wd >= SMALL_PRODUCT {
            // gather the kept columns: Lk (n2 × kept) and Wkᵀ (kept × n1)
            let mut kk = 0;
            for k in 0..wd {
                let dk = self.dval[fd + k];
                if dk == 0.0 {
                    continue;
                }
                let colk = ld + k * md + p1;
                self.lk[kk * n2..(kk + 1) * n2].copy_from_slice(&self.lx[colk..colk + n2]);
                for j in 0..n1 {
                    self.wt[kk + j * kept] = dk * self.lx[colk + j];
                }
                kk += 1;
            }
            let lhs = MatRef::from_column_major_slice(&self.lk[..n2 * kept], n2, kept);
            let rhs = MatRef::from_column_major_slice(&self.wt[..kept * n1], kept, n1);
            let dst = MatMut::from_column_major_slice_mut(&mut self.c[..n2 * n1], n2, n1);
            matmul(dst, Accum::Replace, lhs, rhs, 1.0, Par::Seq);
        } else {
            // Wᵀ (wd × n1): Wt[k, j] = d_k · L_d[p1 + j, k]
            for k in 0..wd {
                let dk = self.dval[fd + k];
                let colk = ld + k * md;
                for j in 0..n1 {
                    self.wt[k + j * wd] = dk * self.lx[colk + p1 + j];
                }
            }
            // C (n2 × n1) = L_d[p1.., :] · Wᵀ
            if n2 * n1 * wd < SMALL_PRODUCT {
                for j in 0..n1 {
                    let cj = &mut self.c[j * n2..(j + 1) * n2];
                    cj.fill(0.0);
                    for k in 0..wd {
                        let wv = self.wt[k + j * wd];
                        if wv == 0.0 {
                            continue;
                        }
                        let colk = ld + k * md + p1;
                        for (cv, &lv) in cj[j..].iter_mut().zip(&self.lx[colk + j..colk + n2]) {
                            *cv += lv * wv;
                        }
                    }
                }
            } else {
                let lhs = MatRef::from_column_major_slice_with_stride(&self.lx[ld + p1..], n2, wd, md);
                let rhs = MatRef::from_column_major_slice(&self.wt[..wd * n1], wd, n1);
                let dst = MatMut::from_column_major_slice_mut(&mut self.c[..n2 * n1], n2, n1);
                matmul(dst, Accum::Replace, lhs, rhs, 1.0, Par::Seq);
            }
        }
        // scatter-subtract the lower part into s's panel, by runs of rows of d
        // that are consecutive rows of s (slices: no index per entry); each
        // entry gets the one subtraction it got entry by entry, so the result
        // is the same bit for bit
        self.run_end.clear();
        for i in 0..n2 {
            let r = self.map[self.rows[d0 + p1 + i] as usize];
            if i > 0 && r != self.rel[i - 1] + 1 {
                self.run_end.push(i as u32);
            }
            self.rel[i] = r;
        }
        self.run_end.push(n2 as u32);
        let base = self.lx_ptr[s];
        let mut first_run = 0;
        for j in 0..n1 {
            let col = base + self.rel[j] as usize * m;
            let cj = &self.c[j * n2..(j + 1) * n2];
            while self.run_end[first_run] as usize <= j {
                first_run += 1;
            }
            let mut i0 = j;
            for &end in &self.run_end[first_run..] {
                let i1 = end as usize;
                let dst0 = col + self.rel[i0] as usize;
                for (t, &cv) in self.lx[dst0..dst0 + (i1 - i0)].iter_mut().zip(&cj[i0..i1]) {
                    *t -= cv;
                }
                i0 = i1;
            }
        }
        self.relink(d, d0, md, p2);
    }

    /// Links descendant `d` (rows from `d0`, `md` of them) to the supernode
    /// holding its local row `p2`, the next one it updates (none past its end).
    fn relink(&mut self, d: usize, d0: usize, md: usize, p2: usize) {
        self.lpos[d] = p2 as u32;
        if p2 < md {
            let t = self.sup_of[self.rows[d0 + p2] as usize] as usize;
            self.next[d] = self.head[t];
            self.head[t] = d as u32;
        }
    }

    /// Solves (L D Lᵀ) x = b in place on a padded vector indexed by constraint
    /// (`perm`: position → constraint; the padded entries are left as they are).
    pub(crate) fn solve_padded(&mut self, perm: &[u32], b: &mut [[f64; 3]]) {
        let y = &mut self.y;
        for (p, &c) in perm.iter().enumerate() {
            let g = self.pos_col[p] as usize;
            let k = self.pos_col[p + 1] as usize - g;
            y[g..g + k].copy_from_slice(&b[c as usize][..k]);
        }
        let ns = self.sup_ptr.len() - 1;
        // Each supernode's rows are gathered into the contiguous `t` once, its
        // columns applied there (contiguous, vectorisable), and scattered back
        // once: the same operations on each entry in the same order as a
        // column-by-column scatter, so the same results bit for bit, with
        // 2·m instead of w·m indexed accesses per supernode.
        let t = &mut self.yloc;
        // forward: z = L⁻¹ y
        for s in 0..ns {
            let (f, l) = (self.sup_ptr[s] as usize, self.sup_ptr[s + 1] as usize);
            let (r0, r1) = (self.rows_ptr[s] as usize, self.rows_ptr[s + 1] as usize);
            let m = r1 - r0;
            let rows = &self.rows[r0..r1];
            let t = &mut t[..m];
            for (tv, &r) in t.iter_mut().zip(rows) {
                *tv = y[r as usize];
            }
            let panel = &self.lx[self.lx_ptr[s]..self.lx_ptr[s] + m * (l - f)];
            for (j, col) in panel.chunks_exact(m).enumerate() {
                let yj = t[j];
                if yj == 0.0 {
                    continue;
                }
                for (tv, &lv) in t[j + 1..].iter_mut().zip(&col[j + 1..]) {
                    *tv -= lv * yj;
                }
            }
            for (tv, &r) in t.iter().zip(rows) {
                y[r as usize] = *tv;
            }
        }
        for (v, &di) in y.iter_mut().zip(&self.dinv) {
            *v *= di;
        }
        // backward: x_j = z_j / d_j − Σ_i L_ij x_i
        for s in (0..ns).rev() {
            let (f, l) = (self.sup_ptr[s] as usize, self.sup_ptr[s + 1] as usize);
            let (r0, r1) = (self.rows_ptr[s] as usize, self.rows_ptr[s + 1] as usize);
            let m = r1 - r0;
            let w = l - f;
            let rows = &self.rows[r0..r1];
            let t = &mut t[..m];
            for (tv, &r) in t.iter_mut().zip(rows) {
                *tv = y[r as usize];
            }
            let panel = &self.lx[self.lx_ptr[s]..self.lx_ptr[s] + m * w];
            for j in (0..w).rev() {
                let col = &panel[j * m..(j + 1) * m];
                let mut acc = t[j];
                for (&lv, &tv) in col[j + 1..].iter().zip(&t[j + 1..]) {
                    acc -= lv * tv;
                }
                t[j] = acc;
            }
            y[f..l].copy_from_slice(&t[..w]);
        }
        for (p, &c) in perm.iter().enumerate() {
            let g = self.pos_col[p] as usize;
            let k = self.pos_col[p + 1] as usize - g;
            b[c as usize][..k].copy_from_slice(&y[g..g + k]);
        }
    }
}
