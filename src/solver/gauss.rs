//! Block-sparse Gaussian elimination (LDLᵀ with 3×3 pivot blocks) of
//! A = J M⁻¹ Jᵀ, after seed 003 §V-D/§V-E ("pivot de Gauss creux").
//!
//! * **Symbolic analysis** ([`BlockLdl::analyze`]): the elimination order is chosen
//!   on the constraint graph, leaves first ("il faut donc substituer les inconnues
//!   en partant des extrémités des branches", §V-D). Phase 1 peels constraints that
//!   are *simplicial* (their neighbours already form a clique), detected from body
//!   incidence in O(1) amortised: a constraint whose other body carries only
//!   constraints that also touch the first body. Eliminating a simplicial node adds
//!   no fill, so every tree of bodies (any graph whose constraint graph is chordal)
//!   factors with zero fill, in linear time. Phase 2 orders what is left (the loops
//!   and the paths between them) by approximate minimum degree (SuiteSparse's AMD,
//!   see the private module `ordering`): bounded fill on loops ("les équations ont
//!   seulement un terme en plus").
//!   The result (structure of L and a precomputed list of update targets) is reused
//!   as long as the pattern version of A does not change.
//! * **Numeric factorisation** ([`BlockLdl::factor`]): right-looking elimination
//!   over flat arrays of 3×3 blocks; every update goes to a precomputed slot, so
//!   there is no search and no allocation. Cost: Σ over pivots of (column length)²
//!   block products, i.e. linear on chains and trees. When the analysis finds long
//!   columns (more than 4 block updates per block of
//!   L: meshes of loops), the numeric factorisation and the solves run on
//!   supernodes instead (the private module `supernodal`: dense panels, dense
//!   products), with the same pivot rule ([`NumericKernel`] forces either).
//! * **Redundant / singular constraints**: a first pass drops any pivot below
//!   `pivot_tolerance × A_rr` and records the constraint (rank-revealing). If any
//!   were found, A is refactored as A + ε·diag(A) (Tikhonov, scaled by the diagonal
//!   so that it does not depend on units) and the solve is refined with
//!   λ ← λ + (A + εD)⁻¹(b − Aλ). For a consistent b this converges to the solution of
//!   A λ = b with the least Σ A_rr λ_r² — the mass-weighted minimal norm of
//!   DESIGN.md "Physics conventions" — so Jᵀλ (the forces) is the unique one.
//!   When no row is dependent but the smallest relative pivot lies in the band
//!   (τ, K·τ) above the threshold, both factors are computed and λ blends the
//!   exact and the regularised solutions (module doc of `solver`, "Continuity at
//!   the rank threshold"), so that λ is a continuous function of the system.
//! * **Scale-invariant rank decisions** ([`BlockLdl::factor_with_metric`], issue 10).
//!   The pivot test `d_r <= tol × A_rr` is invariant to the units of each constraint
//!   row (A → S A S for a diagonal S leaves d_r / A_rr unchanged) but not to the mass
//!   matrix: a body with J ≪ m·ℓ² (a near-point bob on an offset pin) puts 1/J ≫ 1/m
//!   in both rows of its joint, the rows are nearly parallel *in the M⁻¹ metric* and
//!   the test calls a perfectly good joint singular. Rank, however, is a property of J
//!   alone: for any positive definite W on the moving degrees of freedom,
//!   rank(J M⁻¹ Jᵀ) = rank(J W Jᵀ) = rank(J). So when A shows a small pivot, the
//!   decision is taken again on G = J W Jᵀ with the per-body weights
//!   W_b = diag(1, 1, 1/ℓ_b²), ℓ_b the body's bounding radius. G does not contain the
//!   masses or inertias at all, so the decision is exactly invariant to scaling any
//!   body's mass or inertia by any factor; under a change of length unit (positions,
//!   anchors and ℓ_b all × s) each row of J is multiplied by a constant (1 for
//!   translations, s for the rotation column, and 1/ℓ_b² × s² cancels it), i.e. G → S G S,
//!   and the relative pivot test is invariant to that too. ℓ_b is the body's own size,
//!   so a rotation is weighted like the motion of its rim: the metric asks "is this row
//!   dependent on the others for motions of ordinary size", which is the engineering
//!   meaning of a redundant joint. If G is regular, A is factored as is (its small
//!   pivots are only small relative to a huge 1/J term, they are accurate to
//!   u × A_rr); only if G is rank-deficient is A regularised, and the constraints
//!   G named are reported. The common case (no small pivot in A) costs nothing extra.
//!   (In a small system the constraint system does not use A's λ at such ratios:
//!   the bodies' angular accelerations are solved with λ instead, module doc of
//!   [`super`], "Nearly massless rotations".)
//! * **Several right-hand sides**: [`BlockLdl::solve`] reuses the factors.

use std::sync::Arc;

use super::block::{self, Block, Pivot, SmallPivot, ZERO};
use super::sparse::{BlockSparseSymmetric, ConstraintId, NO_BODY};
use super::supernodal::{Supernodal, SupernodalValues};
use super::{SolveReport, SolverError, SolverSettings};

/// A pivot block of a two-row system before its leading 2×2 is loaded: the
/// padding row and column of a decoupled unit pivot.
const PADDED_PIVOT: Block = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0];

/// Body incidence at or below which the simpliciality test scans a body's
/// constraint list (keeps phase 1 linear even around hub bodies).
const SMALL_INCIDENCE: u32 = 8;

/// Pivot growth max D⁻¹_rr·A_rr above which a regular solve is refined
/// iteratively (`max_refine_steps`): the block inverses then lose ~growth × u.
const REFINE_GROWTH: f64 = 1e4;

/// Lists of rank-deficient and of badly scaled constraints kept besides the
/// one handed out (see `publish_lists`): roundoff with nearly massless
/// rotations moves constraints in and out of the badly scaled list from
/// step to step, among a handful of lists.
const KEPT_LISTS: usize = 8;

/// Symbolic and numeric block LDLᵀ factors of a [`BlockSparseSymmetric`].
#[derive(Clone, Debug, Default)]
pub struct BlockLdl {
    // ---- symbolic
    analyzed_version: Option<u64>,
    analysis_count: u64,
    n: usize,
    /// Elimination order: position → constraint.
    perm: Vec<u32>,
    /// Constraint → position.
    iperm: Vec<u32>,
    /// Block columns of L (strictly below the diagonal), by position; row indices
    /// are positions, ascending.
    col_ptr: Vec<u32>,
    row_idx: Vec<u32>,
    /// For each column p, for each pair k2 < k1 of its entries, the index in
    /// `row_idx` of block (row_idx[k1], row_idx[k2]).
    tgt_ptr: Vec<u32>,
    targets: Vec<u32>,
    /// Off-diagonal block k of A goes to L slot `a_map[k]`, transposed if `a_tr[k]`.
    a_map: Vec<u32>,
    a_tr: Vec<bool>,
    /// The L slots no block of A goes to (pure fill): the only ones a numeric
    /// pass zeroes before copying A in.
    fill_slots: Vec<u32>,
    fill: usize,
    /// Largest row count of a constraint (selects the 2×2 or 3×3 kernels).
    max_rows: u32,
    // ---- numeric
    /// Inverse diagonal pivot blocks, by position.
    dinv: Vec<Block>,
    /// L blocks (L_qp = A_qp D_p⁻¹ after elimination).
    lval: Vec<Block>,
    /// Working diagonal blocks.
    diag: Vec<Block>,
    /// `diag` holds the pivot blocks of an exact pass over the matrix at this
    /// address (the row scales loaded them, [`compute_positive_scales`](
    /// Self::compute_positive_scales)); taken by the next pass.
    pivots_loaded: Option<usize>,
    /// Per padded row (by position): the scale of the row (original A_rr, or a
    /// fallback for empty rows).
    scale: Vec<[f64; 3]>,
    regularized: bool,
    rank_deficient: Vec<ConstraintId>,
    badly_scaled: Vec<ConstraintId>,
    /// The lists as handed out in reports: rebuilt only when they change, so a
    /// report costs no allocation step after step (issue 10).
    rank_deficient_shared: Arc<[ConstraintId]>,
    badly_scaled_shared: Arc<[ConstraintId]>,
    /// The last lists published before the current ones, most recent first:
    /// which of several redundant rows is dropped depends on the values when
    /// two pivots are near the tolerance, and which rows' pivots fall to
    /// roundoff with a nearly massless rotation (`badly_scaled`) changes from
    /// stage to stage, so a step may cycle through a few lists (the four-bar
    /// with inertias × 1e-9: none, one, two constraints); up to
    /// `KEPT_LISTS` + 1 distinct lists are kept and handed out again without
    /// allocation, and a new list is written over a kept one of its length
    /// that no report holds (`publish_lists`).
    rank_deficient_prev: [Arc<[ConstraintId]>; KEPT_LISTS],
    badly_scaled_prev: [Arc<[ConstraintId]>; KEPT_LISTS],
    /// Relative pivots at or above this need not be known exactly: every
    /// weight computed from the smallest one (the blend's and the metric
    /// gate's) is 0 there ([`ratio_cap`]). Set by each factorisation.
    ratio_cap: f64,
    /// Largest D⁻¹_rr · A_rr of the last pass (1 for a diagonal A; large when a
    /// pivot block is ill-conditioned, e.g. a body with J ≪ m·ℓ²).
    pivot_growth: f64,
    /// Weight of the regularised solution (module doc of `solver`, "Continuity at
    /// the rank threshold"): 0 exact, 1 regularised, between: a blend of the two,
    /// the exact factor then kept in `exact_*`.
    blend_weight: f64,
    /// The exact factor of a system in the band (values only; the structure is
    /// the current one) and its pivot growth.
    exact_dinv: Vec<Block>,
    exact_lval: Vec<Block>,
    exact_sn: SupernodalValues,
    exact_growth: f64,
    /// λ of the exact factor in a blended solve.
    lambda_exact: Vec<f64>,
    factored: bool,
    // ---- scratch
    w: Vec<Block>,
    x: Vec<[f64; 3]>,
    r: Vec<[f64; 3]>,
    d: Vec<[f64; 3]>,
    b: Vec<[f64; 3]>,
    w3: Vec<[f64; 3]>,
    w4: Vec<[f64; 3]>,
    /// Row scales by constraint (padded rows 0), for the regularised refinement.
    scale_c: Vec<[f64; 3]>,
    /// A right-hand side (compact, every constraint of two rows) staged by
    /// [`stage_rhs`](Self::stage_rhs): the two-row numeric pass substitutes it
    /// forward while it eliminates (`staged_forward`, by position), and a solve
    /// of the same right-hand side on that factor does only the diagonal and
    /// backward steps. Empty: none staged.
    staged_rhs: Vec<f64>,
    staged_forward: Vec<[f64; 3]>,
    /// `staged_forward` is L⁻¹ (the staged right-hand side) for the current factor.
    staged_forward_ready: bool,
    /// The solve in progress is [`solve_staged`](Self::solve_staged)'s, of the
    /// staged right-hand side itself: no comparison with it needed.
    solving_staged: bool,
    // ---- supernodal path
    kernel: NumericKernel,
    use_supernodal: bool,
    sn: Supernodal,
}

/// Which numeric factorisation [`BlockLdl`] runs (module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NumericKernel {
    /// Chosen by the analysis from the structure of L: the supernodal one when
    /// the block columns are long (loops), the block one otherwise.
    #[default]
    Auto,
    /// Block elimination over 3×3 blocks with a precomputed update schedule.
    Block,
    /// Supernodal: dense panels, dense products (the private module `supernodal`).
    Supernodal,
}

/// Auto selects the supernodal kernel when the block updates Σ m(m−1)/2 over
/// the columns of L (m blocks each) exceed this many per block of L: columns
/// averaging more than ~4 blocks, where dense panels beat block-by-block updates.
const SUPERNODAL_UPDATES_PER_BLOCK: usize = 4;

/// Outcome of a numeric factorisation.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FactorReport {
    /// The symbolic analysis was (re)done for this factorisation.
    pub analyzed: bool,
    /// Constraints with at least one row found (numerically) dependent on the
    /// others: redundant constraints, or singular configurations. Sorted.
    pub rank_deficient: Arc<[ConstraintId]>,
    /// Whether the factor is of A + ε·diag(A) (true when `rank_deficient` or
    /// `badly_scaled` is not empty, or when `regularization_weight` > 0).
    pub regularized: bool,
    /// Weight w of the regularised solution in λ = (1 − w)·λ_exact + w·λ_regularised
    /// (module doc of `solver`, "Continuity at the rank threshold"): 0 for a
    /// well-conditioned system, 1 when a row was found dependent, in between
    /// when the smallest relative pivot lies in the band above the threshold.
    pub regularization_weight: f64,
    /// Constraints whose rows are independent (the rank metric G is regular) but
    /// where A = J M⁻¹ Jᵀ is singular to working precision: inertia ratios too
    /// extreme for f64 normal equations (J/(m·ℓ²) ≲ 1e-12 on several bodies of a
    /// loop). A is then regularised as for a dependent row. Sorted.
    pub badly_scaled: Arc<[ConstraintId]>,
}

impl BlockLdl {
    /// Empty factors.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many symbolic analyses were run (a counter to check reuse).
    pub fn analysis_count(&self) -> u64 {
        self.analysis_count
    }

    /// Number of fill blocks: blocks of L (below the diagonal) that are zero in A.
    /// Zero for trees.
    pub fn fill_blocks(&self) -> usize {
        self.fill
    }

    /// Number of blocks of L below the diagonal.
    pub fn factor_blocks(&self) -> usize {
        self.row_idx.len()
    }

    /// Elimination order: `order()[p]` is the constraint eliminated at step p.
    pub fn order(&self) -> impl Iterator<Item = ConstraintId> + '_ {
        self.perm.iter().map(|&c| ConstraintId(c))
    }

    /// Selects the numeric kernel (the next factorisation analyses anew).
    pub fn set_kernel(&mut self, kernel: NumericKernel) {
        if kernel != self.kernel {
            self.kernel = kernel;
            self.analyzed_version = None;
            self.factored = false;
        }
    }

    /// Whether the last analysis chose the supernodal kernel.
    pub fn is_supernodal(&self) -> bool {
        self.use_supernodal
    }

    /// The supernodes of the last analysis as ranges of elimination positions
    /// (see [`order`](Self::order)); empty on the block kernel.
    pub fn supernodes(&self) -> Vec<std::ops::Range<usize>> {
        if self.use_supernodal { self.sn.supernode_positions().collect() } else { Vec::new() }
    }

    /// Scalar entries stored by the supernodal factor (diagonal, L and the
    /// explicit zeros of amalgamation); 0 on the block kernel.
    pub fn supernodal_entries(&self) -> usize {
        if self.use_supernodal { self.sn.stored_entries() } else { 0 }
    }

    /// True when `a`'s pattern is not the one analysed last.
    pub fn needs_analysis(&self, a: &BlockSparseSymmetric) -> bool {
        self.analyzed_version != Some(a.pattern_version()) || self.n != a.n_blocks()
    }

    /// Symbolic analysis: elimination order, structure of L, update schedule.
    // parallel arrays indexed by the same constraint / row: index loops are clearer
    #[allow(clippy::needless_range_loop)]
    pub fn analyze(&mut self, a: &BlockSparseSymmetric) {
        let n = a.n_blocks();
        self.n = n;
        self.analysis_count += 1;
        self.analyzed_version = Some(a.pattern_version());
        self.factored = false;
        // adjacency of the constraint graph (CSR, both directions)
        let mut adj_ptr = vec![0u32; n + 1];
        for (&i, &j) in a.off_i.iter().zip(a.off_j.iter()) {
            adj_ptr[i as usize + 1] += 1;
            adj_ptr[j as usize + 1] += 1;
        }
        for c in 0..n {
            adj_ptr[c + 1] += adj_ptr[c];
        }
        let mut adj = vec![0u32; adj_ptr[n] as usize];
        let mut cur: Vec<u32> = adj_ptr[..n].to_vec();
        for (&i, &j) in a.off_i.iter().zip(a.off_j.iter()) {
            adj[cur[i as usize] as usize] = j;
            cur[i as usize] += 1;
            adj[cur[j as usize] as usize] = i;
            cur[j as usize] += 1;
        }

        let mut order: Vec<u32> = Vec::with_capacity(n);
        // column structures as constraint ids, in elimination order
        let mut col_c_ptr: Vec<u32> = Vec::with_capacity(n + 1);
        col_c_ptr.push(0);
        let mut col_c: Vec<u32> = Vec::with_capacity(a.off_i.len());
        let mut eliminated = vec![false; n];
        let mut mark = vec![u32::MAX; n];

        // ---- phase 1: peel simplicial constraints using body incidence
        let nb = a.body_ptr.len().saturating_sub(1);
        let mut count: Vec<u32> = (0..nb).map(|b| a.body_ptr[b + 1] - a.body_ptr[b]).collect();
        let body_list = |b: u32| {
            let b = b as usize;
            &a.body_cons[a.body_ptr[b] as usize..a.body_ptr[b + 1] as usize]
        };
        let is_simplicial = |c: usize, count: &[u32], eliminated: &[bool]| -> bool {
            let [b0, b1] = a.dyn_bodies[c];
            if b0 == NO_BODY || b1 == NO_BODY {
                // touches at most one dynamic body: all neighbours share it
                return true;
            }
            // all remaining constraints at `side` also touch `other`
            let covered = |side: u32, other: u32| {
                let k = count[side as usize];
                k == 1
                    || (k <= SMALL_INCIDENCE
                        && body_list(side)
                            .iter()
                            .all(|&d| eliminated[d as usize] || a.dyn_bodies[d as usize].contains(&other)))
            };
            covered(b1, b0) || covered(b0, b1)
        };
        let mut queue: std::collections::VecDeque<u32> = std::collections::VecDeque::new();
        let mut queued = vec![false; n];
        for c in 0..n {
            if is_simplicial(c, &count, &eliminated) {
                queue.push_back(c as u32);
                queued[c] = true;
            }
        }
        while let Some(c) = queue.pop_back() {
            let c = c as usize;
            // simpliciality is preserved by eliminating other simplicial nodes
            // (neighbourhoods only shrink), so no re-check is needed here
            mark[c] = c as u32;
            for &b in &a.dyn_bodies[c] {
                if b == NO_BODY {
                    continue;
                }
                for &d in body_list(b) {
                    let du = d as usize;
                    if !eliminated[du] && mark[du] != c as u32 {
                        mark[du] = c as u32;
                        col_c.push(d);
                    }
                }
            }
            col_c_ptr.push(col_c.len() as u32);
            order.push(c as u32);
            eliminated[c] = true;
            for &b in &a.dyn_bodies[c] {
                if b == NO_BODY {
                    continue;
                }
                count[b as usize] -= 1;
                if count[b as usize] <= SMALL_INCIDENCE {
                    for &d in body_list(b) {
                        let du = d as usize;
                        if !eliminated[du] && !queued[du] && is_simplicial(du, &count, &eliminated) {
                            queued[du] = true;
                            queue.push_back(d);
                        }
                    }
                }
            }
        }

        // ---- phase 2: approximate minimum degree on the quotient graph of the rest
        if order.len() < n {
            super::ordering::order_rest(&adj_ptr, &adj, &mut eliminated, &mut order, &mut col_c_ptr, &mut col_c);
        }

        // ---- structure of L by positions
        self.perm = order;
        self.iperm.clear();
        self.iperm.resize(n, 0);
        for (p, &c) in self.perm.iter().enumerate() {
            self.iperm[c as usize] = p as u32;
        }
        self.col_ptr = col_c_ptr;
        self.row_idx.clear();
        self.row_idx.reserve(col_c.len());
        for p in 0..n {
            let (s, e) = (self.col_ptr[p] as usize, self.col_ptr[p + 1] as usize);
            let start = self.row_idx.len();
            self.row_idx.extend(col_c[s..e].iter().map(|&c| self.iperm[c as usize]));
            self.row_idx[start..].sort_unstable();
        }
        self.fill = self.row_idx.len() - a.off_i.len();
        self.max_rows = a.rows.iter().copied().max().unwrap_or(0);
        // update schedule: block (q1, q2), q1 > q2 both in column p, lives in column q2.
        // It has Σ (column length)² entries, which dominate the analysis on loop-heavy
        // graphs, so it is built target column by target column: column q2 is scattered
        // once into `slot` (row → index in row_idx) and every column p holding row q2
        // then finds its later rows by direct lookup instead of a binary search.
        let updates: usize = (0..n)
            .map(|p| {
                let m = (self.col_ptr[p + 1] - self.col_ptr[p]) as usize;
                m * m.saturating_sub(1) / 2
            })
            .sum();
        self.use_supernodal = match self.kernel {
            NumericKernel::Auto => updates > SUPERNODAL_UPDATES_PER_BLOCK * self.row_idx.len(),
            NumericKernel::Block => false,
            NumericKernel::Supernodal => true,
        };
        self.w.resize(1, ZERO);
        self.dinv.resize(n, ZERO);
        self.diag.resize(n, ZERO);
        self.scale.resize(n, [0.0; 3]);
        if self.use_supernodal {
            self.sn.analyze(a, &self.perm, &self.col_ptr, &self.row_idx);
            // the block schedule is not needed
            self.tgt_ptr = Vec::new();
            self.targets = Vec::new();
            self.a_map = Vec::new();
            self.a_tr = Vec::new();
            self.fill_slots = Vec::new();
            self.lval = Vec::new();
            return;
        }
        self.sn = Supernodal::default();
        self.tgt_ptr.clear();
        self.tgt_ptr.push(0);
        let mut total = 0u32;
        for p in 0..n {
            let m = self.col_ptr[p + 1] - self.col_ptr[p];
            total += m * m.saturating_sub(1) / 2;
            self.tgt_ptr.push(total);
        }
        self.targets.clear();
        self.targets.resize(total as usize, 0);
        if (total as usize) <= 4 * self.row_idx.len() {
            // short columns (chains, trees): a search per pair is cheaper than the
            // row lists below
            let mut t = 0;
            for p in 0..n {
                let (s, e) = (self.col_ptr[p] as usize, self.col_ptr[p + 1] as usize);
                for k2 in s..e {
                    let q2 = self.row_idx[k2] as usize;
                    let (s2, e2) = (self.col_ptr[q2] as usize, self.col_ptr[q2 + 1] as usize);
                    for k1 in k2 + 1..e {
                        let idx = match self.row_idx[s2..e2].binary_search(&self.row_idx[k1]) {
                            Ok(i) => s2 + i,
                            Err(_) => unreachable!("fill closure violated"),
                        };
                        self.targets[t] = idx as u32;
                        t += 1;
                    }
                }
            }
        } else {
            // rows of L: for each position q, the entries k (and their column) with row q
            let mut row_ptr = vec![0u32; n + 1];
            for &q in &self.row_idx {
                row_ptr[q as usize + 1] += 1;
            }
            for q in 0..n {
                row_ptr[q + 1] += row_ptr[q];
            }
            let mut row_ent = vec![(0u32, 0u32); self.row_idx.len()];
            let mut cur: Vec<u32> = row_ptr[..n].to_vec();
            for p in 0..n {
                for k in self.col_ptr[p]..self.col_ptr[p + 1] {
                    let q = self.row_idx[k as usize] as usize;
                    row_ent[cur[q] as usize] = (p as u32, k);
                    cur[q] += 1;
                }
            }
            let mut slot = vec![0u32; n];
            for q2 in 0..n {
                for k in self.col_ptr[q2]..self.col_ptr[q2 + 1] {
                    slot[self.row_idx[k as usize] as usize] = k;
                }
                for &(p, k2) in &row_ent[row_ptr[q2] as usize..row_ptr[q2 + 1] as usize] {
                    let (s, e) = (self.col_ptr[p as usize], self.col_ptr[p as usize + 1]);
                    let (j2, m) = (k2 - s, e - s);
                    // entries of the pairs (j, ·) for j < j2 come first: Σ_{j<j2} (m − 1 − j)
                    let base = (self.tgt_ptr[p as usize] + j2 * (m - 1) - j2 * j2.saturating_sub(1) / 2) as usize;
                    for (t, k1) in (k2 + 1..e).enumerate() {
                        let q1 = self.row_idx[k1 as usize];
                        let idx = slot[q1 as usize];
                        // present by construction of the elimination graph (fill closure)
                        debug_assert!(
                            (self.col_ptr[q2]..self.col_ptr[q2 + 1]).contains(&idx) && self.row_idx[idx as usize] == q1,
                            "fill closure violated"
                        );
                        self.targets[base + t] = idx;
                    }
                }
            }
        }
        // where each block of A goes in L
        self.a_map.clear();
        self.a_tr.clear();
        for (&i, &j) in a.off_i.iter().zip(a.off_j.iter()) {
            let (pi, pj) = (self.iperm[i as usize], self.iperm[j as usize]);
            let (row, col, tr) = if pi > pj { (pi, pj, false) } else { (pj, pi, true) };
            let (s, e) = (self.col_ptr[col as usize] as usize, self.col_ptr[col as usize + 1] as usize);
            let idx = match self.row_idx[s..e].binary_search(&row) {
                Ok(k) => s + k,
                Err(_) => unreachable!("A block missing from L"),
            };
            self.a_map.push(idx as u32);
            self.a_tr.push(tr);
        }
        let mut from_a = vec![false; self.row_idx.len()];
        for &k in &self.a_map {
            from_a[k as usize] = true;
        }
        self.fill_slots.clear();
        self.fill_slots.extend((0..self.row_idx.len() as u32).filter(|&k| !from_a[k as usize]));
        let max_col = (0..n).map(|p| (self.col_ptr[p + 1] - self.col_ptr[p]) as usize).max().unwrap_or(0);
        self.w.resize(max_col, ZERO);
        // all zero: a numeric pass with two-row constraints writes only the
        // leading 2×2 of each block
        self.lval.clear();
        self.lval.resize(self.row_idx.len(), ZERO);
        self.dinv.resize(n, ZERO);
        // the third row and column of every pivot block are the padding
        // (decoupled unit pivot): a numeric pass with two-row constraints
        // writes only the leading 2×2 (`load_pivot_blocks`)
        self.diag.clear();
        self.diag.resize(n, PADDED_PIVOT);
        self.scale.resize(n, [0.0; 3]);
        self.pivots_loaded = None;
    }

    /// Numeric factorisation of `a` (analysing first if its pattern changed).
    pub fn factor(&mut self, a: &BlockSparseSymmetric, settings: &SolverSettings) -> Result<FactorReport, SolverError> {
        let analyzed = self.needs_analysis(a);
        if analyzed {
            self.analyze(a);
        }
        self.rank_deficient.clear();
        self.badly_scaled.clear();
        self.regularized = false;
        self.blend_weight = 0.0;
        self.ratio_cap = ratio_cap(settings);
        self.compute_scales(a);
        // pass 1: exact elimination, dependent rows dropped and recorded
        let tol = settings.pivot_tolerance;
        let (found, min_rel_pivot) = self.numeric(a, 0.0, tol, 0.0, SmallPivot::Drop, true);
        if found {
            self.regularize(a, settings);
        } else {
            // no row dependent, but maybe one close to it: blend (module doc of `solver`)
            self.blend_with_regularised(a, settings, super::regularization_weight(min_rel_pivot, settings));
        }
        self.rank_deficient.sort_unstable();
        self.rank_deficient.dedup();
        self.publish_lists();
        self.factored = true;
        Ok(FactorReport {
            analyzed,
            rank_deficient: self.rank_deficient_shared.clone(),
            regularized: self.regularized,
            badly_scaled: self.badly_scaled_shared.clone(),
            regularization_weight: self.blend_weight,
        })
    }

    /// Copies the working lists to the shared ones handed out in reports, only
    /// if they changed.
    fn publish_lists(&mut self) {
        fn publish(
            list: &[ConstraintId],
            shared: &mut Arc<[ConstraintId]>,
            prev: &mut [Arc<[ConstraintId]>; KEPT_LISTS],
        ) {
            if **shared == *list {
                return;
            }
            if let Some(i) = prev.iter().position(|p| **p == *list) {
                std::mem::swap(shared, &mut prev[i]);
                return;
            }
            // A list not seen lately: written over the oldest kept list of
            // its length that no report holds any more (roundoff can move a
            // constraint in and out of the lists step after step, and a new
            // `Arc` each time was an allocation per step), else a new one.
            match prev.iter_mut().rposition(|p| p.len() == list.len() && Arc::get_mut(p).is_some()) {
                Some(i) => {
                    if let Some(slot) = Arc::get_mut(&mut prev[i]) {
                        slot.copy_from_slice(list);
                    }
                    std::mem::swap(shared, &mut prev[i]);
                    // the list handed out until now becomes the most recent kept one
                    prev[..=i].rotate_right(1);
                }
                None => {
                    prev.rotate_right(1);
                    prev[0] = std::mem::replace(shared, Arc::from(list));
                }
            }
        }
        publish(&self.rank_deficient, &mut self.rank_deficient_shared, &mut self.rank_deficient_prev);
        publish(&self.badly_scaled, &mut self.badly_scaled_shared, &mut self.badly_scaled_prev);
    }

    /// Row scales: the diagonal of `a`; empty rows get the mean positive diagonal.
    fn compute_scales(&mut self, a: &BlockSparseSymmetric) {
        self.pivots_loaded = None;
        // the usual case, every diagonal entry positive: the fallback is not
        // needed, so neither is the sum below (a chain of dependent additions
        // over all rows, most of this pass's time on a small linkage)
        if self.compute_positive_scales(a) {
            return;
        }
        // row scales: original diagonal; empty rows get the mean positive diagonal
        let mut sum = 0.0;
        let mut cnt = 0usize;
        for p in 0..self.n {
            let c = self.perm[p] as usize;
            for r in 0..a.rows[c] as usize {
                let v = a.diag[c][4 * r];
                if v > 0.0 {
                    sum += v;
                    cnt += 1;
                }
            }
        }
        let fallback = if cnt > 0 { sum / cnt as f64 } else { 1.0 };
        // by position (padded rows 1) and by constraint (padded rows 0), in one pass
        self.scale_c.resize(self.n, [0.0; 3]);
        for p in 0..self.n {
            let c = self.perm[p] as usize;
            let rows = a.rows[c] as usize;
            let mut s = [1.0; 3];
            let mut sc = [0.0; 3];
            for r in 0..rows.min(3) {
                let v = a.diag[c][4 * r];
                s[r] = if v > 0.0 { v } else { fallback };
                sc[r] = s[r];
            }
            self.scale[p] = s;
            self.scale_c[c] = sc;
        }
    }

    /// [`compute_scales`](Self::compute_scales) when every row's diagonal entry
    /// is positive (no fallback used: the same values); returns `false`, with
    /// the scales partly written, when one is not.
    fn compute_positive_scales(&mut self, a: &BlockSparseSymmetric) -> bool {
        self.scale_c.resize(self.n, [0.0; 3]);
        let mut positive = true;
        if a.n_rows() == 2 * self.n && self.max_rows == 2 && !self.use_supernodal {
            // every constraint of two rows: the loop below with its row count
            // fixed (no inner loop, no per-row branch), the same values; and,
            // while A's diagonal blocks are at hand, the pivot blocks of an
            // exact pass (ε = 0) as `load_pivot_blocks` loads them: there
            // d_r + 0·scale_r = d_r bit for bit when d_r > 0 (so only when
            // every row is positive are they taken as loaded)
            for ((s, &c), dp) in self.scale.iter_mut().zip(&self.perm).zip(&mut self.diag) {
                let d = &a.diag[c as usize];
                let (v0, v1) = (d[0], d[4]);
                positive &= v0 > 0.0;
                positive &= v1 > 0.0;
                *s = [v0, v1, 1.0];
                self.scale_c[c as usize] = [v0, v1, 0.0];
                (dp[0], dp[1], dp[3], dp[4]) = (v0, d[1], d[3], v1);
            }
            if positive {
                self.pivots_loaded = Some(std::ptr::from_ref(a) as usize);
            }
            return positive;
        }
        for p in 0..self.n {
            let c = self.perm[p] as usize;
            let rows = (a.rows[c] as usize).min(3);
            let mut s = [1.0; 3];
            let mut sc = [0.0; 3];
            for r in 0..rows {
                let v = a.diag[c][4 * r];
                positive &= v > 0.0;
                s[r] = v;
                sc[r] = v;
            }
            self.scale[p] = s;
            self.scale_c[c] = sc;
        }
        positive
    }

    /// Pass 2 of [`factor`](Self::factor): A + ε diag(A), static pivot floor ε·scale.
    fn regularize(&mut self, a: &BlockSparseSymmetric, settings: &SolverSettings) {
        self.regularized = true;
        self.blend_weight = 1.0;
        let eps = settings.regularization;
        self.numeric(a, eps, 0.1 * eps, eps, SmallPivot::Floor, false);
    }

    /// After an exact factorisation of `a` with no dependent row: if the weight
    /// `w` of the regularised solution is not 0 (smallest relative pivot in the
    /// band (τ, K·τ)), keeps the exact factor aside, computes the regularised one
    /// too and sets the blend weight (module doc of `solver`, "Continuity at the
    /// rank threshold"). Otherwise leaves the exact factor alone.
    fn blend_with_regularised(&mut self, a: &BlockSparseSymmetric, settings: &SolverSettings, w: f64) {
        if w == 0.0 {
            return;
        }
        // keep the exact values (copies into kept buffers: allocation only the
        // first time a system of this size enters the band)
        self.exact_growth = self.pivot_growth;
        if self.use_supernodal {
            self.sn.save_values(&mut self.exact_sn);
        } else {
            self.exact_dinv.clear();
            self.exact_dinv.extend_from_slice(&self.dinv);
            self.exact_lval.clear();
            self.exact_lval.extend_from_slice(&self.lval);
        }
        self.regularize(a, settings);
        self.blend_weight = w;
    }

    /// Exchanges the current (regularised) factor values with the kept exact ones.
    fn swap_exact(&mut self) {
        if self.use_supernodal {
            self.sn.swap_values(&mut self.exact_sn);
        } else {
            std::mem::swap(&mut self.dinv, &mut self.exact_dinv);
            std::mem::swap(&mut self.lval, &mut self.exact_lval);
        }
        std::mem::swap(&mut self.pivot_growth, &mut self.exact_growth);
    }

    /// [`factor`](Self::factor) with the rank decided in a second metric when the
    /// mass-weighted one finds a small pivot (see the module doc, "Scale-invariant
    /// rank decisions"). `metric` is called at most once and returns a matrix of
    /// the same pattern as `a`: G = J W Jᵀ with W a per-body weight that does not
    /// depend on the masses.
    ///
    /// * No small pivot in A: the factor of A, as [`factor`](Self::factor).
    /// * Small pivots in A but none in G: the rows are independent and A is only
    ///   badly scaled (a body with J ≪ m·ℓ²). A is refactored exactly; a pivot that
    ///   roundoff pushed to or below zero is floored at 4u × its row scale. Nothing
    ///   is reported.
    /// * Small pivots in G: the constraints found there are reported and A is
    ///   regularised as in [`factor`](Self::factor).
    pub fn factor_with_metric<'m>(
        &mut self,
        a: &BlockSparseSymmetric,
        settings: &SolverSettings,
        metric: impl FnOnce() -> Result<&'m BlockSparseSymmetric, SolverError>,
    ) -> Result<FactorReport, SolverError> {
        let analyzed = self.needs_analysis(a);
        if analyzed {
            self.analyze(a);
        }
        self.rank_deficient.clear();
        self.badly_scaled.clear();
        self.regularized = false;
        self.blend_weight = 0.0;
        self.ratio_cap = ratio_cap(settings);
        self.compute_scales(a);
        let tol = settings.pivot_tolerance;
        let (small, rho_a) = self.numeric(a, 0.0, tol, 0.0, SmallPivot::Drop, false);
        // G is consulted when A's smallest relative pivot is below K²·τ; the
        // blend weight is G's times a gate that falls continuously from 1 at
        // K·τ to 0 at K²·τ, so λ stays continuous where G starts or stops
        // being consulted (the two metrics' relative pivots differ by the ratio
        // of their weights, a few units on ordinary bodies)
        let band = settings.regularization_band;
        let gate = super::band_weight(rho_a, tol * band.max(1.0), band);
        if small || gate > 0.0 {
            let g = metric()?;
            if g.n_blocks() != self.n || g.off.len() != a.off.len() || g.rows != a.rows {
                return Err(SolverError::NotFactored);
            }
            // rank decision in the metric G (scales from G's own diagonal)
            self.compute_scales(g);
            let (dependent, rho_g) = self.numeric(g, 0.0, tol, 0.0, SmallPivot::Drop, true);
            self.compute_scales(a);
            if dependent {
                self.regularize(a, settings);
            } else {
                // exact factor of A; a pivot at roundoff level means A is singular
                // in f64 although J is not: regularise, and say so
                let u4 = 4.0 * f64::EPSILON;
                if self.numeric(a, 0.0, u4, u4, SmallPivot::Drop, true).0 {
                    std::mem::swap(&mut self.rank_deficient, &mut self.badly_scaled);
                    self.badly_scaled.sort_unstable();
                    self.badly_scaled.dedup();
                    self.regularize(a, settings);
                } else {
                    // G's rows independent but maybe close to dependent: blend
                    // by G's smallest relative pivot (the scale-invariant one)
                    let w = super::regularization_weight(rho_g, settings) * gate;
                    self.blend_with_regularised(a, settings, w);
                }
            }
        }
        self.rank_deficient.sort_unstable();
        self.rank_deficient.dedup();
        self.publish_lists();
        self.factored = true;
        Ok(FactorReport {
            analyzed,
            rank_deficient: self.rank_deficient_shared.clone(),
            regularized: self.regularized,
            badly_scaled: self.badly_scaled_shared.clone(),
            regularization_weight: self.blend_weight,
        })
    }

    /// One numeric pass. `eps`: diagonal regularisation relative to the row scale;
    /// pivots `<= thresh_rel × scale` are small (and, with [`SmallPivot::Floor`],
    /// replaced by `floor_rel × scale`). Returns whether any was small, and the
    /// smallest relative pivot d_r / scale_r of those that were not.
    fn numeric(
        &mut self,
        a: &BlockSparseSymmetric,
        eps: f64,
        thresh_rel: f64,
        floor_rel: f64,
        mode: SmallPivot,
        record: bool,
    ) -> (bool, f64) {
        // a pass of another kernel replaces the factor the staged forward
        // substitution belongs to (the two-row pass redoes it)
        self.staged_forward_ready = false;
        if self.use_supernodal {
            let (rd, perm) = (&mut self.rank_deficient, &self.perm);
            let (any_small, growth, rho) =
                self.sn.numeric(a, perm, &self.scale, eps, thresh_rel, floor_rel, mode, |p| {
                    if record {
                        rd.push(ConstraintId(perm[p]));
                    }
                });
            self.pivot_growth = growth;
            return (any_small, rho);
        }
        // constraints of at most 2 rows (revolute joints, contacts): 2×2 kernels
        let rule = PivotRule { thresh_rel, floor_rel, mode, record, ratio_cap2: 2.0 * self.ratio_cap };
        if self.max_rows <= 2 { self.numeric_two_rows(a, eps, rule) } else { self.numeric_three_rows(a, eps, rule) }
    }

    /// The pivot blocks of a numeric pass: A's diagonal blocks in the
    /// elimination order, each row shifted by ε times its scale, padded rows
    /// decoupled unit pivots.
    fn load_pivot_blocks(&mut self, a: &BlockSparseSymmetric, eps: f64) {
        // loaded by the row scales of this very matrix, for ε = 0 (±0: the
        // same bits), and no pass since
        let loaded = self.pivots_loaded.take() == Some(std::ptr::from_ref(a) as usize);
        if a.n_rows() == 2 * self.n && self.max_rows == 2 {
            if loaded && eps == 0.0 {
                return;
            }
            // every constraint of two rows: the loop below with its row count
            // fixed, the same values; the padding row and column are in
            // place (`analyze`), only the leading 2×2 is written
            for ((d, &c), s) in self.diag.iter_mut().zip(&self.perm).zip(&self.scale) {
                let v = &a.diag[c as usize];
                (d[0], d[1], d[3], d[4]) = (v[0] + eps * s[0], v[1], v[3], v[4] + eps * s[1]);
            }
            return;
        }
        for p in 0..self.n {
            let c = self.perm[p] as usize;
            let mut d = a.diag[c];
            let rows = a.rows[c] as usize;
            for r in 0..3 {
                if r < rows {
                    d[4 * r] += eps * self.scale[p][r];
                } else {
                    // padded row: decoupled unit pivot
                    d[4 * r] = 1.0;
                }
            }
            self.diag[p] = d;
        }
    }

    /// The numeric pass of the block kernel on padded 3×3 blocks (systems
    /// with a constraint of three rows; two-row systems take
    /// [`numeric_two_rows`](Self::numeric_two_rows)).
    fn numeric_three_rows(&mut self, a: &BlockSparseSymmetric, eps: f64, rule: PivotRule) -> (bool, f64) {
        const R: usize = 3;
        let n = self.n;
        self.load_pivot_blocks(a, eps);
        // every slot is either pure fill (zeroed) or a block of A (copied)
        for &k in &self.fill_slots {
            block::copy_leading::<R>(&mut self.lval[k as usize], &ZERO);
        }
        for (k, blk) in a.off.iter().enumerate() {
            let value = if self.a_tr[k] { block::transpose(blk) } else { *blk };
            block::copy_leading::<R>(&mut self.lval[self.a_map[k] as usize], &value);
        }
        let mut tally = PivotTally::default();
        for p in 0..n {
            let dinv =
                rule.pivot::<R>(&self.diag[p], self.scale[p], self.perm[p], &mut self.rank_deficient, &mut tally);
            self.dinv[p] = dinv;
            let (s, e) = (self.col_ptr[p] as usize, self.col_ptr[p + 1] as usize);
            if s == e {
                continue;
            }
            // W = current A_qp; L_qp = W D_p⁻¹; diagonal update A_qq -= L_qp W_qpᵀ
            for k in s..e {
                let wk = self.lval[k];
                block::copy_leading::<R>(&mut self.w[k - s], &wk);
                let l = block::mul_ab_r::<R>(&wk, &dinv);
                block::copy_leading::<R>(&mut self.lval[k], &l);
                let q = self.row_idx[k] as usize;
                block::sub_abt_sym_r::<R>(&mut self.diag[q], &l, &wk);
            }
            // off-diagonal updates A_{q1 q2} -= L_{q1 p} W_{q2 p}ᵀ at precomputed slots
            let mut t = self.tgt_ptr[p] as usize;
            for k2 in s..e {
                let w2 = self.w[k2 - s];
                for k1 in k2 + 1..e {
                    let l1 = self.lval[k1];
                    let tg = self.targets[t] as usize;
                    block::sub_abt_r::<R>(&mut self.lval[tg], &l1, &w2);
                    t += 1;
                }
            }
        }
        self.pivot_growth = tally.growth;
        (tally.any_small, tally.min_rel_pivot)
    }

    /// [`numeric_three_rows`](Self::numeric_three_rows) for two-row systems, with L and the column scratch W
    /// kept as compact 2×2 blocks ([`block::Block2`], packed in the padded
    /// blocks' buffers): every entry is computed by the padded kernel's
    /// expression less its leading `+0 +` (the sign of a zero may differ, no
    /// other bit: [`block::mul_ab2`]); the padding entries, zeros, are simply
    /// not stored, at 32 bytes a block instead of 72.
    fn numeric_two_rows(&mut self, a: &BlockSparseSymmetric, eps: f64, rule: PivotRule) -> (bool, f64) {
        let n = self.n;
        self.load_pivot_blocks(a, eps);
        // the staged right-hand side, permuted and padded as a solve's (the
        // third entries +0), when every constraint has two rows
        let forward = self.staged_rhs.len() == 2 * n && a.n_rows() == 2 * n;
        let y = &mut self.staged_forward;
        y.clear();
        if forward {
            let rhs = &self.staged_rhs;
            y.extend(self.perm.iter().map(|&c| [rhs[2 * c as usize], rhs[2 * c as usize + 1], 0.0]));
        }
        let lval = block::packed_two_row_blocks_mut(&mut self.lval);
        let w = block::packed_two_row_blocks_mut(&mut self.w);
        // every slot is either pure fill (zeroed) or a block of A (copied)
        for &k in &self.fill_slots {
            lval[k as usize] = [0.0; 4];
        }
        // the transposition as an offset of the loads, not a branch: which
        // blocks are transposed follows no pattern a predictor learns (the
        // branch was ≈ 7 % of this pass on a small linkage); the same values
        // as `leading2` / `leading2_transposed`
        for ((&slot, &tr), blk) in self.a_map.iter().zip(&self.a_tr).zip(&a.off) {
            let o = 2 * usize::from(tr);
            lval[slot as usize] = [blk[0], blk[1 + o], blk[3 - o], blk[4]];
        }
        let mut tally = PivotTally::default();
        // pivot block p as column p − 1 left it, when that column's first
        // block is row p (the elimination tree of a small linkage is nearly a
        // path): taken from the registers the update computed it in instead
        // of reloaded from the store just made — a store-to-load forwarding
        // on the elimination's chain (diagonal update, two divisions, L) per
        // pivot. The same values: bitwise the same.
        let mut carried_pivot: Option<Block> = None;
        for p in 0..n {
            let diag_p = match carried_pivot.take() {
                Some(d) => d,
                None => self.diag[p],
            };
            let dinv = rule.pivot::<2>(&diag_p, self.scale[p], self.perm[p], &mut self.rank_deficient, &mut tally);
            self.dinv[p] = dinv;
            let (s, e) = (self.col_ptr[p] as usize, self.col_ptr[p + 1] as usize);
            // short columns (the usual ones: a pin's column of L has one to four
            // blocks) by a kernel of their length, straight-line code: the
            // loops below exit after a number of trips that changes from
            // column to column, a branch mispredicted at nearly every exit
            let t0 = self.tgt_ptr[p] as usize;
            let yf = if forward { Some(&mut *y) } else { None };
            let (ri, tg, dg) = (&self.row_idx, &self.targets, &mut self.diag);
            match e - s {
                0 => continue,
                1 => {
                    let first = eliminate_column2::<1>(&dinv, (s, t0, p), (ri, tg), lval, dg, yf);
                    carried_pivot = (ri[s] as usize == p + 1).then_some(first);
                    continue;
                }
                2 => {
                    let first = eliminate_column2::<2>(&dinv, (s, t0, p), (ri, tg), lval, dg, yf);
                    carried_pivot = (ri[s] as usize == p + 1).then_some(first);
                    continue;
                }
                3 => {
                    let first = eliminate_column2::<3>(&dinv, (s, t0, p), (ri, tg), lval, dg, yf);
                    carried_pivot = (ri[s] as usize == p + 1).then_some(first);
                    continue;
                }
                4 => {
                    let first = eliminate_column2::<4>(&dinv, (s, t0, p), (ri, tg), lval, dg, yf);
                    carried_pivot = (ri[s] as usize == p + 1).then_some(first);
                    continue;
                }
                _ => {}
            }
            // W = current A_qp; L_qp = W D_p⁻¹; diagonal update A_qq -= L_qp W_qpᵀ
            for k in s..e {
                let wk = lval[k];
                w[k - s] = wk;
                let l = block::mul_ab2(&wk, &dinv);
                lval[k] = l;
                let q = self.row_idx[k] as usize;
                block::sub_abt_sym2(&mut self.diag[q], &l, &wk);
            }
            // column p of L is final and y_p has had the updates of every
            // earlier column: the forward sweep's step p, the same operations
            // in the same order per entry as in `sweep_two_rows` (bitwise the
            // same), here on a chain independent of the elimination's, so
            // the two overlap
            if forward {
                Self::forward_column(&self.col_ptr, &self.row_idx, lval, y, p);
            }
            // off-diagonal updates A_{q1 q2} -= L_{q1 p} W_{q2 p}ᵀ at precomputed slots
            let mut t = self.tgt_ptr[p] as usize;
            for k2 in s..e {
                let w2 = w[k2 - s];
                for k1 in k2 + 1..e {
                    let l1 = lval[k1];
                    let tg = self.targets[t] as usize;
                    block::sub_abt2(&mut lval[tg], &l1, &w2);
                    t += 1;
                }
            }
        }
        self.pivot_growth = tally.growth;
        self.staged_forward_ready = forward;
        (tally.any_small, tally.min_rel_pivot)
    }

    /// Stages the right-hand side of the solve that will follow the next
    /// factorisation ([`ConstraintSolver::solve`](super::ConstraintSolver::solve)):
    /// with constraints of two rows each, the block kernel substitutes it
    /// forward during the elimination. An empty `rhs` unstages.
    pub(crate) fn stage_rhs(&mut self, rhs: &[f64]) {
        self.staged_rhs.clear();
        self.staged_rhs.extend_from_slice(rhs);
        self.staged_forward_ready = false;
    }

    /// [`solve`](Self::solve) of the staged right-hand side (the one-call
    /// solve's: [`ConstraintSolver::solve`](super::ConstraintSolver::solve)),
    /// without comparing it with itself bit for bit as a solve of a given
    /// right-hand side must (≈ 1 % of a small linkage's step).
    pub(crate) fn solve_staged(
        &mut self,
        a: &BlockSparseSymmetric,
        settings: &SolverSettings,
        lambda: &mut [f64],
    ) -> Result<SolveReport, SolverError> {
        let rhs = std::mem::take(&mut self.staged_rhs);
        self.solving_staged = true;
        let result = self.solve(a, settings, &rhs, lambda);
        self.solving_staged = false;
        self.staged_rhs = rhs;
        result
    }

    /// Whether the staged forward substitution belongs to the current factor
    /// and to this right-hand side (bit for bit).
    fn staged_forward_for(&self, rhs: &[f64]) -> bool {
        // a regularised or blended solve runs on another factor than the
        // last pass's (or swaps the exact one in): only a plain exact factor
        self.staged_forward_ready
            && !self.use_supernodal
            && !self.regularized
            && self.blend_weight == 0.0
            && (self.solving_staged
                || bytemuck::cast_slice::<f64, u64>(&self.staged_rhs) == bytemuck::cast_slice::<f64, u64>(rhs))
    }

    /// Step `p` of the forward sweep on the compact L: y_q -= L_qp y_p.
    #[inline(always)]
    fn forward_column(col_ptr: &[u32], row_idx: &[u32], lval: &[block::Block2], y: &mut [[f64; 3]], p: usize) {
        let yp = y[p];
        for k in col_ptr[p] as usize..col_ptr[p + 1] as usize {
            let q = row_idx[k] as usize;
            block::sub_mul_vec2(&mut y[q], &lval[k], &yp);
        }
    }

    /// The diagonal and backward steps on the compact L:
    /// x_p = D_p⁻¹ z_p − Σ_q L_qpᵀ x_q.
    ///
    /// The sweep is one dependency chain (a small linkage's elimination tree
    /// is nearly a path: x_p needs x_{p+1}, computed just before). When the
    /// column's first block is row p + 1, that x is taken from the register
    /// it was computed in, not reloaded from the store just made (a
    /// store-to-load forwarding, ≈ 7 cycles on the chain per pivot); the same
    /// values in the same order, so bitwise the same.
    fn backward_two_rows(col_ptr: &[u32], row_idx: &[u32], lval: &[block::Block2], dinv: &[Block], y: &mut [[f64; 3]]) {
        let n = dinv.len().min(y.len());
        let mut x_next = [0.0; 3];
        for p in (0..n).rev() {
            let mut zp = block::mul_vec_r::<2>(&dinv[p], &y[p]);
            let (mut s, e) = (col_ptr[p] as usize, col_ptr[p + 1] as usize);
            if s < e && row_idx[s] as usize == p + 1 {
                block::sub_mul_t_vec2(&mut zp, &lval[s], &x_next);
                s += 1;
            }
            for k in s..e {
                let q = row_idx[k] as usize;
                block::sub_mul_t_vec2(&mut zp, &lval[k], &y[q]);
            }
            y[p] = zp;
            x_next = zp;
        }
    }

    /// [`solve_padded`](Self::solve_padded) of the staged right-hand side, its
    /// forward substitution done by the factorisation
    /// ([`staged_forward_for`](Self::staged_forward_for)).
    fn solve_padded_staged(&mut self, b: &mut [[f64; 3]]) {
        let y = &mut self.staged_forward;
        let lval = block::packed_two_row_blocks(&self.lval);
        Self::backward_two_rows(&self.col_ptr, &self.row_idx, lval, &self.dinv, y);
        for (p, yp) in y.iter().enumerate() {
            b[self.perm[p] as usize] = *yp;
        }
        // consumed: the vector now holds the solution
        self.staged_forward_ready = false;
    }

    /// [`sweep::<2>`](Self::sweep) on the compact L of
    /// [`numeric_two_rows`](Self::numeric_two_rows) (the same expressions).
    ///
    /// The forward sweep carries y_{p+1} as column p's update leaves it (when
    /// that column's first block is row p + 1) into step p + 1 in a register
    /// instead of reloading it from the store just made, as
    /// [`backward_two_rows`](Self::backward_two_rows) does: the same values.
    fn sweep_two_rows(col_ptr: &[u32], row_idx: &[u32], lval: &[block::Block2], dinv: &[Block], y: &mut [[f64; 3]]) {
        let n = dinv.len().min(y.len());
        // y_p as the last column updating it left it, when that was column p − 1
        let mut carried: Option<[f64; 3]> = None;
        for p in 0..n {
            let yp = match carried.take() {
                Some(v) => v,
                None => y[p],
            };
            let (mut s, e) = (col_ptr[p] as usize, col_ptr[p + 1] as usize);
            if s < e && row_idx[s] as usize == p + 1 {
                let mut next = y[p + 1];
                block::sub_mul_vec2(&mut next, &lval[s], &yp);
                y[p + 1] = next;
                carried = Some(next);
                s += 1;
            }
            for k in s..e {
                let q = row_idx[k] as usize;
                block::sub_mul_vec2(&mut y[q], &lval[k], &yp);
            }
        }
        Self::backward_two_rows(col_ptr, row_idx, lval, dinv, y);
    }

    fn scale_by_constraint<'s>(&'s self, _a: &BlockSparseSymmetric) -> std::slice::Iter<'s, [f64; 3]> {
        self.scale_c.iter()
    }

    /// Forward substitution, diagonal, backward substitution on a permuted vector.
    fn sweep<const R: usize>(col_ptr: &[u32], row_idx: &[u32], lval: &[Block], dinv: &[Block], y: &mut [[f64; 3]]) {
        let n = dinv.len().min(y.len());
        // forward: z = L⁻¹ y, column-oriented
        for p in 0..n {
            let yp = y[p];
            for k in col_ptr[p] as usize..col_ptr[p + 1] as usize {
                let q = row_idx[k] as usize;
                block::sub_mul_vec_r::<R>(&mut y[q], &lval[k], &yp);
            }
        }
        // diagonal and backward: x_p = D_p⁻¹ z_p − Σ_q L_qpᵀ x_q
        for p in (0..n).rev() {
            let mut zp = block::mul_vec_r::<R>(&dinv[p], &y[p]);
            for k in col_ptr[p] as usize..col_ptr[p + 1] as usize {
                let q = row_idx[k] as usize;
                block::sub_mul_t_vec_r::<R>(&mut zp, &lval[k], &y[q]);
            }
            y[p] = zp;
        }
    }

    /// Solves (L D Lᵀ) x = b in place on a padded vector indexed by constraint.
    fn solve_padded(&mut self, b: &mut [[f64; 3]]) {
        if self.use_supernodal {
            self.sn.solve_padded(&self.perm, b);
            return;
        }
        let n = self.n;
        let y = &mut self.x;
        y.resize(n, [0.0; 3]);
        for p in 0..n {
            y[p] = b[self.perm[p] as usize];
        }
        if self.max_rows <= 2 {
            let lval = block::packed_two_row_blocks(&self.lval);
            Self::sweep_two_rows(&self.col_ptr, &self.row_idx, lval, &self.dinv, y);
        } else {
            Self::sweep::<3>(&self.col_ptr, &self.row_idx, &self.lval, &self.dinv, y);
        }
        for p in 0..n {
            b[self.perm[p] as usize] = y[p];
        }
    }

    /// Solves A λ = `rhs` with the current factors (compact vectors of length
    /// `a.n_rows()`), refining iteratively when the factor is regularised (or when
    /// `settings.refine_steps > 0`). `a` must be the matrix that was factored.
    pub fn solve(
        &mut self,
        a: &BlockSparseSymmetric,
        settings: &SolverSettings,
        rhs: &[f64],
        lambda: &mut [f64],
    ) -> Result<SolveReport, SolverError> {
        super::sparse::check_len("rhs", a.n_rows(), rhs.len())?;
        super::sparse::check_len("lambda", a.n_rows(), lambda.len())?;
        if !self.factored || self.needs_analysis(a) {
            return Err(SolverError::NotFactored);
        }
        if rhs.iter().any(|v| !v.is_finite()) {
            return Err(SolverError::NonFinite("right-hand side"));
        }
        let w = self.blend_weight;
        if !(w > 0.0 && w < 1.0) {
            return Ok(self.solve_with(a, settings, rhs, lambda, self.regularized));
        }
        // in the band: λ = (1 − w)·λ_exact + w·λ_regularised (module doc of `solver`)
        let regularised = self.solve_with(a, settings, rhs, lambda, true);
        let mut lambda_exact = std::mem::take(&mut self.lambda_exact);
        lambda_exact.clear();
        lambda_exact.resize(lambda.len(), 0.0);
        self.swap_exact();
        let exact = self.solve_with(a, settings, rhs, &mut lambda_exact, false);
        self.swap_exact();
        for (l, e) in lambda.iter_mut().zip(&lambda_exact) {
            *l = w * *l + (1.0 - w) * e;
        }
        self.lambda_exact = lambda_exact;
        Ok(SolveReport {
            refine_steps: regularised.refine_steps + exact.refine_steps,
            // both are below it: so is their convex combination
            relative_residual: regularised.relative_residual.max(exact.relative_residual),
            ..regularised
        })
    }

    /// [`solve`](Self::solve) with the current factor values, as a regularised
    /// factor (refinement to the minimal-norm λ) or as an exact one.
    // parallel arrays indexed by the same constraint / row: index loops are clearer
    #[allow(clippy::needless_range_loop)]
    fn solve_with(
        &mut self,
        a: &BlockSparseSymmetric,
        settings: &SolverSettings,
        rhs: &[f64],
        lambda: &mut [f64],
        regularized: bool,
    ) -> SolveReport {
        let n = self.n;
        let mut b = std::mem::take(&mut self.b);
        let mut x = std::mem::take(&mut self.r);
        let mut dx = std::mem::take(&mut self.d);
        b.clear();
        // every constraint of two rows (pins): the compact vector is the
        // padded one without its zero third entries (the same values, with no
        // per-constraint offsets or row counts to read)
        let two_rows = a.n_rows() == 2 * n && self.max_rows == 2;
        if two_rows {
            b.extend(rhs.chunks_exact(2).map(|r| [r[0], r[1], 0.0]));
        } else {
            b.resize(n, [0.0; 3]);
            for c in 0..n {
                let o = a.row_offset[c] as usize;
                let k = a.rows[c] as usize;
                block::copy_rows(&mut b[c], &rhs[o..], k);
            }
        }
        let mut xn = std::mem::take(&mut self.w3);
        let mut t = std::mem::take(&mut self.w4);
        let mut steps = 0;
        let mut res;
        // An ill-conditioned pivot block (inverse-based block LDLᵀ, a body with
        // J ≪ m·ℓ²) costs accuracy of order growth × u: refine then.
        let refine_steps =
            if self.pivot_growth > REFINE_GROWTH { settings.max_refine_steps } else { settings.refine_steps };
        // |b| only where it is used: the refinement's stopping test (a plain
        // solve reports a NaN residual whatever |b| is)
        let bnorm = if regularized || refine_steps > 0 { norm(&b) } else { f64::NAN };
        x.clear();
        dx.clear();
        if !regularized {
            // regular factor: one solve, optional classical refinement (whose
            // residual overwrites dx before it is read)
            x.extend_from_slice(&b);
            if self.staged_forward_for(rhs) {
                self.solve_padded_staged(&mut x);
            } else {
                self.solve_padded(&mut x);
            }
            res = f64::NAN;
            if refine_steps > 0 {
                dx.resize(n, [0.0; 3]);
                res = residual(a, &b, &x, &mut dx);
            }
            while steps < refine_steps && res > settings.refine_tolerance * bnorm {
                self.solve_padded(&mut dx);
                xn.clear();
                xn.extend(x.iter().zip(dx.iter()).map(|(u, v)| add3(u, v)));
                let rn = residual(a, &b, &xn, &mut dx);
                steps += 1;
                if rn < res {
                    std::mem::swap(&mut x, &mut xn);
                    res = rn;
                } else {
                    break;
                }
            }
        } else {
            // Regularised factor F = A + E, E = ε·diag(A). Refinement
            // λ ← λ + P F⁻¹(b − Aλ) with P = I − T², T = F⁻¹E. T is exactly the identity
            // on null(A) (A n = 0 ⇒ F n = E n) and ≈ ε/μ on the other generalised
            // eigenvectors (A v = μ E v), so P removes the null-space component of every
            // correction — roundoff amplified by 1/ε, and the part of b outside the
            // range of A when b is inconsistent — while leaving the rest within
            // (ε/μ)². The iterates converge to the E-weighted minimal-norm
            // (least-squares if b is inconsistent) solution: DESIGN.md's
            // mass-weighted minimal-norm λ.
            x.resize(n, [0.0; 3]);
            dx.extend_from_slice(&b);
            let eps = settings.regularization;
            res = bnorm;
            while steps < settings.max_refine_steps && res > settings.refine_tolerance * bnorm {
                // dx holds the residual b − Aλ
                self.solve_padded(&mut dx);
                for _ in 0..2 {
                    t.clear();
                    t.extend(
                        dx.iter()
                            .zip(self.scale_by_constraint(a))
                            .map(|(d, s)| [eps * s[0] * d[0], eps * s[1] * d[1], eps * s[2] * d[2]]),
                    );
                    self.solve_padded(&mut t);
                    for (d, tt) in dx.iter_mut().zip(t.iter()) {
                        *d = sub3(d, tt);
                    }
                }
                xn.clear();
                xn.extend(x.iter().zip(dx.iter()).map(|(u, v)| add3(u, v)));
                let rn = residual(a, &b, &xn, &mut dx);
                steps += 1;
                if rn < res {
                    std::mem::swap(&mut x, &mut xn);
                    let stalled = rn > 0.5 * res;
                    res = rn;
                    if stalled {
                        // least-squares residual reached (inconsistent b)
                        break;
                    }
                } else {
                    break;
                }
            }
        }
        self.w3 = xn;
        self.w4 = t;
        if two_rows {
            for (l, xc) in lambda.chunks_exact_mut(2).zip(&x) {
                l[0] = xc[0];
                l[1] = xc[1];
            }
        } else {
            for c in 0..n {
                let o = a.row_offset[c] as usize;
                let k = a.rows[c] as usize;
                block::copy_rows(&mut lambda[o..], &x[c], k);
            }
        }
        self.b = b;
        self.r = x;
        self.d = dx;
        SolveReport {
            rank_deficient: self.rank_deficient_shared.clone(),
            badly_scaled: self.badly_scaled_shared.clone(),
            regularized: self.regularized,
            regularization_weight: self.blend_weight,
            refine_steps: steps,
            relative_residual: if bnorm > 0.0 { res / bnorm } else { res },
            analyzed: false,
        }
    }
}

/// One column p of [`BlockLdl::numeric_two_rows`] with exactly `M` blocks of L
/// (at `s..s + M`; their update targets from `t0`), after its pivot block's
/// inverse `dinv`: the loops of the general column with their trip counts
/// fixed, so compiled to straight-line code, and the same operations in the
/// same order on every entry (bitwise the same). With `y`, the staged forward
/// substitution's step p. Returns the diagonal block of the column's first
/// row as updated (the next pivot block when that row is p + 1).
#[inline(always)]
fn eliminate_column2<const M: usize>(
    dinv: &Block,
    (s, t0, p): (usize, usize, usize),
    (row_idx, targets): (&[u32], &[u32]),
    lval: &mut [block::Block2],
    diag: &mut [Block],
    y: Option<&mut Vec<[f64; 3]>>,
) -> Block {
    let rows: &[u32; M] = row_idx[s..s + M].try_into().expect("M blocks in the column");
    // W = current A_qp; L_qp = W D_p⁻¹; diagonal update A_qq -= L_qp W_qpᵀ
    let mut w = [[0.0; 4]; M];
    let mut l = [[0.0; 4]; M];
    let mut first = [0.0; 9];
    for i in 0..M {
        w[i] = lval[s + i];
        l[i] = block::mul_ab2(&w[i], dinv);
        lval[s + i] = l[i];
        let d = &mut diag[rows[i] as usize];
        block::sub_abt_sym2(d, &l[i], &w[i]);
        if i == 0 {
            // read back before any other store (the rows of a column are
            // distinct: no later update of this column touches it)
            first = *d;
        }
    }
    // the forward sweep's step p (as `BlockLdl::forward_column`)
    if let Some(y) = y {
        let yp = y[p];
        for i in 0..M {
            block::sub_mul_vec2(&mut y[rows[i] as usize], &l[i], &yp);
        }
    }
    // off-diagonal updates A_{q1 q2} -= L_{q1 p} W_{q2 p}ᵀ, in the general
    // loop's order
    let mut t = t0;
    for k2 in 0..M {
        for k1 in k2 + 1..M {
            block::sub_abt2(&mut lval[targets[t] as usize], &l[k1], &w[k2]);
            t += 1;
        }
    }
    first
}

/// The relative pivot at and above which every weight the solver computes from
/// a pass's smallest relative pivot ρ is 0: the blend weight
/// [`regularization_weight`](super::regularization_weight) is 0 at ρ ≥ K·τ
/// (any ρ > τ when K ≤ 1 or NaN), the rank metric's gate at ρ ≥ K·(τ·K).
/// So a pass reports ρ exactly when it is below this cap and some value at or
/// above it otherwise, which gives the same weights bit for bit (with the
/// padding's ratio 1 it reports at most 1 in any case). NaN settings give NaN:
/// every pivot is then divided.
fn ratio_cap(settings: &SolverSettings) -> f64 {
    let (tau, band) = (settings.pivot_tolerance, settings.regularization_band);
    if band > 1.0 { (band * (tau * band)).max(band * tau) } else { tau }
}

/// The pivot rule of one numeric pass (thresholds relative to each row's
/// scale, the small-pivot mode, whether rank decisions are recorded).
struct PivotRule {
    thresh_rel: f64,
    floor_rel: f64,
    mode: SmallPivot,
    record: bool,
    /// Twice the pass's [`ratio_cap`]: a pivot `d_r >= ratio_cap2 × scale_r`
    /// (that product a normal number) has a relative pivot above the cap, so
    /// its division d_r / scale_r is not needed for the tally.
    ratio_cap2: f64,
}

/// What a numeric pass learns from its pivots: whether one was small, the
/// largest growth |D⁻¹|·scale, the smallest relative pivot (ρ_min, module
/// doc of [`super`], "Continuity at the rank threshold").
struct PivotTally {
    any_small: bool,
    growth: f64,
    min_rel_pivot: f64,
}

impl Default for PivotTally {
    fn default() -> Self {
        PivotTally { any_small: false, growth: 0.0, min_rel_pivot: f64::INFINITY }
    }
}

impl PivotRule {
    /// A pivot block (`diag`, its rows' `scale`, its constraint `perm_p`) of an
    /// R-row kernel: D⁻¹ under the rule, tallied; a small pivot's constraint
    /// is recorded as rank deficient when the rule says so. With R = 2 the
    /// third row is padding: unit pivot, unit scale, its ratio 1 taken
    /// without a division (the same value). Shared by the 3×3 and the
    /// compact two-row kernels, so both decide alike.
    #[inline(always)]
    fn pivot<const R: usize>(
        &self,
        diag: &Block,
        scale: [f64; 3],
        perm_p: u32,
        rank_deficient: &mut Vec<ConstraintId>,
        tally: &mut PivotTally,
    ) -> Block {
        let (t, f) = (self.thresh_rel, self.floor_rel);
        let thresh = [t * scale[0], t * scale[1], t * scale[2]];
        let floor = [f * scale[0], f * scale[1], f * scale[2]];
        let (dinv, piv, d) = block::ldl_inverse_pivots_r::<R>(diag, &thresh, &floor, self.mode);
        for r in 0..3 {
            if piv[r] == Pivot::Ok {
                // a pivot far above the cap (d_r ≥ 2·cap·scale_r, the product
                // normal: then d_r / scale_r ≥ 2·cap·(1 − u)² > cap) cannot be
                // the one whose value a weight needs, so the division, two per
                // pivot off the elimination's chain, is skipped ([`ratio_cap`]);
                // NaN comparisons are false: such a pivot is divided as before
                let bound = self.ratio_cap2 * scale[r];
                let above_cap = d[r] >= bound && bound >= f64::MIN_POSITIVE;
                if !above_cap {
                    let ratio = if R == 2 && r == 2 { 1.0 } else { d[r] / scale[r] };
                    tally.min_rel_pivot = tally.min_rel_pivot.min(ratio);
                }
            }
        }
        for r in 0..R {
            tally.growth = tally.growth.max(dinv[4 * r] * scale[r]);
        }
        if piv != [Pivot::Ok; 3] {
            tally.any_small = true;
            if self.record {
                rank_deficient.push(ConstraintId(perm_p));
            }
        }
        dinv
    }
}

#[inline]
fn add3(u: &[f64; 3], v: &[f64; 3]) -> [f64; 3] {
    [u[0] + v[0], u[1] + v[1], u[2] + v[2]]
}

#[inline]
fn sub3(u: &[f64; 3], v: &[f64; 3]) -> [f64; 3] {
    [u[0] - v[0], u[1] - v[1], u[2] - v[2]]
}

fn norm(v: &[[f64; 3]]) -> f64 {
    v.iter().map(|x| x[0] * x[0] + x[1] * x[1] + x[2] * x[2]).sum::<f64>().sqrt()
}

/// `r = b − A x`; returns |r|.
fn residual(a: &BlockSparseSymmetric, b: &[[f64; 3]], x: &[[f64; 3]], r: &mut [[f64; 3]]) -> f64 {
    a.mul_padded(x, r);
    for (ri, bi) in r.iter_mut().zip(b.iter()) {
        ri[0] = bi[0] - ri[0];
        ri[1] = bi[1] - ri[1];
        ri[2] = bi[2] - ri[2];
    }
    norm(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The general column loop of [`BlockLdl::numeric_two_rows`] (W, L, the
    /// diagonal updates, the forward step, the off-diagonal updates): the
    /// reference for the straight-line kernels.
    fn column_by_loops(
        dinv: &Block,
        (s, e, t0, p): (usize, usize, usize, usize),
        (row_idx, targets): (&[u32], &[u32]),
        lval: &mut [block::Block2],
        diag: &mut [Block],
        y: &mut [[f64; 3]],
    ) {
        let mut w = vec![[0.0; 4]; e - s];
        for k in s..e {
            let wk = lval[k];
            w[k - s] = wk;
            let l = block::mul_ab2(&wk, dinv);
            lval[k] = l;
            block::sub_abt_sym2(&mut diag[row_idx[k] as usize], &l, &wk);
        }
        let yp = y[p];
        for k in s..e {
            block::sub_mul_vec2(&mut y[row_idx[k] as usize], &lval[k], &yp);
        }
        let mut t = t0;
        for k2 in s..e {
            for k1 in k2 + 1..e {
                let l1 = lval[k1];
                block::sub_abt2(&mut lval[targets[t] as usize], &l1, &w[k2 - s]);
                t += 1;
            }
        }
    }

    /// `eliminate_column2::<M>` gives the general loop's bits (L, the updated
    /// diagonal and off-diagonal blocks, the forward-substituted vector) for
    /// columns of one to four blocks, on values of mixed signs and magnitudes.
    #[test]
    fn straight_line_columns_are_the_loops_bit_for_bit() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let u = (seed >> 11) as f64 / (1u64 << 53) as f64;
            (u - 0.5) * 10f64.powi((seed % 7) as i32 - 3)
        };
        for m in 1..=4usize {
            for _round in 0..20 {
                // column p = 0 with rows 1..=m at slots 1..=m (slot 0 unused),
                // its m(m-1)/2 update targets at the slots after them
                let n_targets = m * (m - 1) / 2;
                let row_idx: Vec<u32> = (0..=m as u32).collect();
                let targets: Vec<u32> = (0..n_targets as u32).map(|t| m as u32 + 1 + t).collect();
                let lval: Vec<block::Block2> = (0..=m + n_targets).map(|_| [next(), next(), next(), next()]).collect();
                let diag: Vec<Block> = (0..=m)
                    .map(|_| {
                        let (a, b, c) = (next(), next(), next());
                        [a, b, 0.0, b, c, 0.0, 0.0, 0.0, 1.0]
                    })
                    .collect();
                let y: Vec<[f64; 3]> = (0..=m).map(|_| [next(), next(), 0.0]).collect();
                let (d0, d1) = (next(), next());
                let dinv: Block = [d0, d1, 0.0, d1, next(), -0.0, 0.0, -0.0, 1.0];
                let (mut l_ref, mut d_ref, mut y_ref) = (lval.clone(), diag.clone(), y.clone());
                column_by_loops(&dinv, (1, m + 1, 0, 0), (&row_idx, &targets), &mut l_ref, &mut d_ref, &mut y_ref);
                let (mut l_fast, mut d_fast, mut y_fast) = (lval.clone(), diag.clone(), y.clone());
                let args = (1, 0, 0);
                let (ix, l, d, yv) = ((&row_idx[..], &targets[..]), &mut l_fast, &mut d_fast, Some(&mut y_fast));
                let first = match m {
                    1 => eliminate_column2::<1>(&dinv, args, ix, l, d, yv),
                    2 => eliminate_column2::<2>(&dinv, args, ix, l, d, yv),
                    3 => eliminate_column2::<3>(&dinv, args, ix, l, d, yv),
                    _ => eliminate_column2::<4>(&dinv, args, ix, l, d, yv),
                };
                let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                // the next pivot block handed on is the first row's diagonal as updated
                assert_eq!(bits(&first), bits(&d_ref[1]), "first row's diagonal, column of {m}");
                assert_eq!(bits(l_fast.as_flattened()), bits(l_ref.as_flattened()), "L, column of {m}");
                assert_eq!(bits(d_fast.as_flattened()), bits(d_ref.as_flattened()), "diagonal, column of {m}");
                assert_eq!(bits(y_fast.as_flattened()), bits(y_ref.as_flattened()), "forward step, column of {m}");
                // the reference did change them: the comparison can fail
                assert_ne!(bits(l_ref.as_flattened()), bits(lval.as_flattened()));
            }
        }
    }

    /// A ring of `n` bodies joined by `n` pins (a loop of two-row
    /// constraints: fill in L), the anchors from `seed`; with `redundant`,
    /// one more pin on the first pair repeated (dependent rows).
    fn pin_ring(n: usize, seed: u64, redundant: bool) -> (super::super::SparseJacobian, Vec<[f64; 3]>) {
        let mut x = seed;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        };
        let mut jac = super::super::SparseJacobian::new();
        jac.clear(n);
        let mut pins: Vec<[(usize, [[f64; 3]; 3]); 2]> = (0..n)
            .map(|i| {
                let (ra, rb) = ([next(), next()], [next(), next()]);
                [
                    (i, [[1.0, 0.0, -ra[1]], [0.0, 1.0, ra[0]], [0.0; 3]]),
                    ((i + 1) % n, [[-1.0, 0.0, rb[1]], [0.0, -1.0, -rb[0]], [0.0; 3]]),
                ]
            })
            .collect();
        if redundant {
            pins.push(pins[0]);
        }
        for blocks in &pins {
            jac.push(2, blocks).expect("pin");
        }
        let inv_mass = (0..n).map(|_| [2.0 + next(), 2.0 + next(), 5.0 + next()]).collect();
        (jac, inv_mass)
    }

    /// The pivot blocks the row scales load for the exact pass of a two-row
    /// system (`pivots_loaded`) give bitwise the factor of a full
    /// `load_pivot_blocks`: on a ring of pins, a second matrix factored by the
    /// same factor object (the load is of that matrix, not the first), and a
    /// ring with dependent rows (the regularised pass after it loads its own).
    #[test]
    fn pivot_blocks_loaded_with_the_scales_are_a_full_load() {
        let settings = SolverSettings::default();
        let bits = |v: &[Block]| v.as_flattened().iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        let mut kept = BlockLdl::new();
        for (seed, redundant) in [(1, false), (2, false), (3, true)] {
            let (jac, inv_mass) = pin_ring(9, seed, redundant);
            let mut a = BlockSparseSymmetric::new();
            a.assemble(&jac, &inv_mass, None).expect("assembly");
            kept.factor(&a, &settings).expect("factor");
            // the reference: factor's passes with the loaded blocks discarded
            let mut full = BlockLdl::new();
            full.analyze(&a);
            full.ratio_cap = ratio_cap(&settings);
            full.compute_scales(&a);
            assert!(full.pivots_loaded.is_some(), "positive two-row diagonal: loaded");
            full.pivots_loaded = None;
            let (found, _) = full.numeric(&a, 0.0, settings.pivot_tolerance, 0.0, SmallPivot::Drop, true);
            assert_eq!(found, redundant, "dependent rows found, seed {seed}");
            if found {
                full.regularize(&a, &settings);
            }
            assert_eq!(bits(&kept.dinv), bits(&full.dinv), "D⁻¹, seed {seed}");
            assert_eq!(bits(&kept.lval), bits(&full.lval), "L, seed {seed}");
            assert_eq!(kept.pivot_growth.to_bits(), full.pivot_growth.to_bits());
            assert!(kept.pivots_loaded.is_none() && full.pivots_loaded.is_none(), "taken by the pass");
        }
    }
}
