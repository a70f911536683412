//! Block-sparse storage of the constraint Jacobian J and of A = J M⁻¹ Jᵀ
//! (seed 003 §V-A: "cela ne fait pas beaucoup de termes par équation, c'est pour
//! cela que nous pouvons parler de matrice creuse").
//!
//! A constraint has 1 to 3 rows and touches one or two bodies; its Jacobian is one
//! 3×3 block (rows padded with zeros) per touched body. Block (c, d) of A is
//! non-zero only when c and d share a *dynamic* body (a body whose inverse mass is
//! not all zero): a static body transmits no coupling, so constraints attached to
//! the ground do not couple through it.
//!
//! J is built by [`SparseJacobian::push`] and then, while its structure holds,
//! refilled in place by [`SparseJacobian::set_values`] (fixed slots: no push, no
//! validation of the structure per step). A's sparsity pattern is kept as long as
//! J's [`SparseJacobian::structure_id`] and the set of static bodies are those it
//! was built for; a J rebuilt with another id is compared with the pattern's key
//! constraint by constraint (the same joints rebuilt keep the pattern).

use super::SolverError;
use super::block::{self, Block, ZERO};

/// Index of a constraint in the order it was pushed into a [`SparseJacobian`]
/// (also its block row in [`BlockSparseSymmetric`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConstraintId(pub u32);

impl ConstraintId {
    /// The index as `usize`.
    #[inline]
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Marks an absent second body.
pub(crate) const NO_BODY: u32 = u32::MAX;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ConstraintInfo {
    pub rows: u32,
    pub bodies: [u32; 2],
    pub row_offset: u32,
}

/// Source of [`SparseJacobian::structure_id`]s: every (re)built structure gets
/// a number no other structure had, in any Jacobian of the process.
static NEXT_STRUCTURE_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

fn fresh_structure_id() -> u64 {
    NEXT_STRUCTURE_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// The constraint Jacobian J, block-sparse: per constraint, one 3×3 block per
/// touched body. Built with [`clear`](Self::clear) and [`push`](Self::push)
/// (the vectors are reused, so after the first step building it does not
/// allocate); once built, a step that evaluates the same constraints again
/// overwrites the values in their fixed slots with
/// [`set_values`](Self::set_values) (no validation of the structure, no push).
#[derive(Debug, Default)]
pub struct SparseJacobian {
    n_bodies: usize,
    n_rows: usize,
    /// Identifies the structure (bodies, rows and body pairs of every
    /// constraint): fresh at every `clear` and `push`, kept by `set_values`,
    /// copied by `copy_from`. 0: never built.
    structure_id: u64,
    /// With `values_version`, identifies the values ([`values_identity`](Self::values_identity)):
    /// a process-unique number taken at the first change of the values after
    /// construction, a clone or a [`copy_from`](Self::copy_from) (0 until
    /// then: no identity), so no two Jacobians ever share it.
    values_owner: u64,
    /// Incremented by every change of the values (`clear`, `push`,
    /// `set_values`).
    values_version: u64,
    pub(crate) cons: Vec<ConstraintInfo>,
    /// Two blocks per constraint (the second is zero for a one-body constraint).
    /// Crate code that writes a block directly, not through `set_values`, must
    /// do it on a Jacobian without a values identity (a fresh
    /// [`copy_from`](Self::copy_from)), or the identity would go stale.
    pub(crate) blocks: Vec<Block>,
}

impl Clone for SparseJacobian {
    /// A copy with no values identity: the two may change apart, and each
    /// takes its own identity at its first change.
    fn clone(&self) -> Self {
        Self {
            n_bodies: self.n_bodies,
            n_rows: self.n_rows,
            structure_id: self.structure_id,
            values_owner: 0,
            values_version: 0,
            cons: self.cons.clone(),
            blocks: self.blocks.clone(),
        }
    }
}

impl SparseJacobian {
    /// An empty Jacobian over zero bodies.
    pub fn new() -> Self {
        Self::default()
    }

    /// Removes every constraint and sets the number of bodies (columns / 3).
    /// Keeps the allocations.
    pub fn clear(&mut self, n_bodies: usize) {
        self.n_bodies = n_bodies;
        self.n_rows = 0;
        self.structure_id = fresh_structure_id();
        self.values_changed();
        self.cons.clear();
        self.blocks.clear();
    }

    /// A number that identifies the structure of J — the body count and the
    /// rows and bodies of every constraint — among every structure built in this
    /// process: two Jacobians with the same id have the same structure (one is a
    /// [`copy_from`](Self::copy_from) of the other, or only their values were
    /// overwritten). Lets A's pattern and the factor's analysis be recognised
    /// without comparing the structure constraint by constraint.
    pub fn structure_id(&self) -> u64 {
        self.structure_id
    }

    /// Identifies this Jacobian's values: two Jacobians (or one at two times)
    /// with the same `Some` identity hold the same structure and the same
    /// values bit for bit — the same object, with no [`push`](Self::push),
    /// [`set_values`](Self::set_values) or [`clear`](Self::clear) in between
    /// (a caller that knows its values would not change skips the writes and
    /// keeps the identity). `None` for a Jacobian whose values were not
    /// changed since its construction, clone or [`copy_from`](Self::copy_from).
    /// Lets the solver recognise the system it factored last without keeping a
    /// copy of J and comparing it (issue 10: that copy and compare were ≈ 5 %
    /// of a small linkage's step).
    pub fn values_identity(&self) -> Option<(u64, u64)> {
        (self.values_owner != 0).then_some((self.values_owner, self.values_version))
    }

    /// Records a change of the values (a new identity).
    #[inline]
    fn values_changed(&mut self) {
        if self.values_owner == 0 {
            self.values_owner = fresh_structure_id();
            self.values_version = 0;
        } else {
            self.values_version += 1;
        }
    }

    /// Overwrites the values of constraint `c`'s blocks in place (the fixed-slot
    /// fill of a step that evaluates the same constraints as the last build):
    /// `jac[k]` is the block of the constraint's `k`-th body, only the first
    /// [`rows`](Self::rows) rows are read, and the second block of a one-body
    /// constraint is ignored. The structure (and its id) is unchanged.
    ///
    /// Returns whether every value read is finite; the caller checks once for
    /// the whole Jacobian instead of per block (a non-finite value must be
    /// reported as [`SolverError::NonFinite`], as [`push`](Self::push) does).
    #[inline]
    pub fn set_values(&mut self, c: ConstraintId, jac: &[[[f64; 3]; 3]; 2]) -> bool {
        let info = self.cons[c.index()];
        let two = info.bodies[1] != NO_BODY;
        let pair = &mut self.blocks[2 * c.index()..2 * c.index() + 2];
        // a constant row count per kernel: the copies and the zeroed rows are
        // unrolled stores from registers (a fill of a variable tail through a
        // stack temporary stalled on store forwarding)
        let finite = match info.rows {
            1 => fill_pair::<1>(pair, jac, two),
            2 => fill_pair::<2>(pair, jac, two),
            _ => fill_pair::<3>(pair, jac, two),
        };
        self.values_changed();
        finite
    }

    /// J's blocks (two per constraint, in constraint order, the second zero
    /// for a one-body constraint), for a caller that overwrites some values
    /// in place and knows the others are already right — the pins-only
    /// assembly writes only the angular column of each pin's blocks (issue
    /// 10). The structure is unchanged; the values take a new identity
    /// ([`values_identity`](Self::values_identity)) whether or not a value
    /// is then written. Non-finite values are the caller's to refuse.
    pub(crate) fn values_mut(&mut self) -> &mut [Block] {
        self.values_changed();
        &mut self.blocks
    }

    /// Appends a constraint of `rows` rows (1 to 3) touching one or two distinct
    /// bodies. `blocks[k] = (body, jac)` where `jac[r]` is row `r` of the constraint's
    /// Jacobian with respect to `(vx, vy, ω)` of `body`; only the first `rows` rows
    /// are read. Rows are numbered consecutively in push order: the constraint's
    /// rows in λ and in the right-hand side start at
    /// [`row_offset`](Self::row_offset).
    pub fn push(&mut self, rows: usize, blocks: &[(usize, [[f64; 3]; 3])]) -> Result<ConstraintId, SolverError> {
        if !(1..=3).contains(&rows) {
            return Err(SolverError::InvalidRows(rows));
        }
        if blocks.is_empty() || blocks.len() > 2 {
            return Err(SolverError::InvalidBodyCount(blocks.len()));
        }
        for &(b, ref m) in blocks {
            if b >= self.n_bodies {
                return Err(SolverError::BodyOutOfRange { body: b, n_bodies: self.n_bodies });
            }
            if m[..rows].iter().flatten().any(|v| !v.is_finite()) {
                return Err(SolverError::NonFinite("Jacobian block"));
            }
        }
        if blocks.len() == 2 && blocks[0].0 == blocks[1].0 {
            return Err(SolverError::SameBody(blocks[0].0));
        }
        if self.cons.len() >= u32::MAX as usize - 1 {
            return Err(SolverError::TooLarge);
        }
        let id = ConstraintId(self.cons.len() as u32);
        self.structure_id = fresh_structure_id();
        self.values_changed();
        let mut bodies = [NO_BODY; 2];
        for (k, &(b, ref m)) in blocks.iter().enumerate() {
            bodies[k] = b as u32;
            // `[[f64; 3]; 3]` and the row-major `Block` have the same layout: one
            // 72-byte copy, then the rows past `rows` are zeroed (a row-by-row
            // copy into a zero block stalls on store forwarding; it was 14 % of
            // a small linkage's step)
            let mut blk: Block = bytemuck::cast(*m);
            blk[3 * rows..].fill(0.0);
            self.blocks.push(blk);
        }
        if blocks.len() == 1 {
            self.blocks.push(ZERO);
        }
        self.cons.push(ConstraintInfo { rows: rows as u32, bodies, row_offset: self.n_rows as u32 });
        self.n_rows += rows;
        Ok(id)
    }

    /// Number of bodies (J has `3 * n_bodies` columns).
    pub fn n_bodies(&self) -> usize {
        self.n_bodies
    }

    /// Number of constraints pushed.
    pub fn n_constraints(&self) -> usize {
        self.cons.len()
    }

    /// Total number of scalar rows (length of λ and of the right-hand side).
    pub fn n_rows(&self) -> usize {
        self.n_rows
    }

    /// First row of constraint `c` in λ.
    pub fn row_offset(&self, c: ConstraintId) -> usize {
        self.cons[c.index()].row_offset as usize
    }

    /// Number of rows of constraint `c`.
    pub fn rows(&self, c: ConstraintId) -> usize {
        self.cons[c.index()].rows as usize
    }

    /// The bodies touched by constraint `c` (one or two).
    pub fn bodies(&self, c: ConstraintId) -> impl Iterator<Item = usize> + '_ {
        self.cons[c.index()].bodies.iter().filter(|&&b| b != NO_BODY).map(|&b| b as usize)
    }

    /// Makes `self` a copy of `other`, reusing `self`'s allocations (a derived
    /// `clone_from` would allocate anew). The copy has no values identity
    /// ([`values_identity`](Self::values_identity)) until its values change.
    pub fn copy_from(&mut self, other: &SparseJacobian) {
        // no values identity (see `clone`)
        self.values_owner = 0;
        self.values_version = 0;
        // the same structure id: the structure is already the same (a step
        // copies the same J's values again and again), only the values move
        if self.structure_id == other.structure_id && self.structure_id != 0 && self.blocks.len() == other.blocks.len()
        {
            self.blocks.copy_from_slice(&other.blocks);
            return;
        }
        self.n_bodies = other.n_bodies;
        self.n_rows = other.n_rows;
        self.structure_id = other.structure_id;
        self.cons.clear();
        self.cons.extend_from_slice(&other.cons);
        self.blocks.clear();
        self.blocks.extend_from_slice(&other.blocks);
    }

    /// Whether `self` and `other` are the same Jacobian bit for bit (bodies,
    /// rows and every block entry's bits: `-0.0` differs from `0.0`).
    pub fn bitwise_eq(&self, other: &SparseJacobian) -> bool {
        // the same structure id means the same structure: no need to compare it
        let same_structure = (self.structure_id == other.structure_id && self.structure_id != 0)
            || (self.n_bodies == other.n_bodies && self.n_rows == other.n_rows && self.cons == other.cons);
        same_structure
            && bytemuck::cast_slice::<Block, u64>(&self.blocks) == bytemuck::cast_slice::<Block, u64>(&other.blocks)
    }

    /// `out = J v`; `v` has length `3 * n_bodies`, `out` length [`n_rows`](Self::n_rows).
    pub fn mul(&self, v: &[f64], out: &mut [f64]) -> Result<(), SolverError> {
        check_len("v", 3 * self.n_bodies, v.len())?;
        check_len("out", self.n_rows, out.len())?;
        for (c, info) in self.cons.iter().enumerate() {
            // only the constraint's own rows (padding rows are neither
            // computed nor written; each row is the 3×3 kernel's expression)
            match info.rows {
                1 => self.mul_constraint::<1>(c, info, v, out),
                2 => self.mul_constraint::<2>(c, info, v, out),
                _ => self.mul_constraint::<3>(c, info, v, out),
            }
        }
        Ok(())
    }

    /// Rows of `J v` of constraint `c`, which has `R` rows.
    #[inline(always)]
    fn mul_constraint<const R: usize>(&self, c: usize, info: &ConstraintInfo, v: &[f64], out: &mut [f64]) {
        let mut acc = [0.0; R];
        for k in 0..2 {
            let b = info.bodies[k];
            if b == NO_BODY {
                continue;
            }
            let b = b as usize;
            let body = &v[3 * b..3 * b + 3];
            let x = [body[0], body[1], body[2]];
            let a = &self.blocks[2 * c + k];
            for (r, acc_r) in acc.iter_mut().enumerate() {
                *acc_r += a[3 * r] * x[0] + a[3 * r + 1] * x[1] + a[3 * r + 2] * x[2];
            }
        }
        let o = info.row_offset as usize;
        out[o..o + R].copy_from_slice(&acc);
    }

    /// `out = Jᵀ λ` (the constraint forces, seed 003 / DESIGN "Physics
    /// conventions"); `lambda` has length [`n_rows`](Self::n_rows), `out` length
    /// `3 * n_bodies`. `out` is overwritten.
    pub fn mul_transpose(&self, lambda: &[f64], out: &mut [f64]) -> Result<(), SolverError> {
        check_len("lambda", self.n_rows, lambda.len())?;
        check_len("out", 3 * self.n_bodies, out.len())?;
        out.fill(0.0);
        for (c, info) in self.cons.iter().enumerate() {
            // only the constraint's own rows: the padding's terms are +0·0,
            // and adding them to `out` (which starts at +0, so is never −0)
            // changes no bit
            match info.rows {
                1 => self.mul_t_constraint::<1>(c, info, lambda, out),
                2 => self.mul_t_constraint::<2>(c, info, lambda, out),
                _ => self.mul_t_constraint::<3>(c, info, lambda, out),
            }
        }
        Ok(())
    }

    /// Adds constraint `c`'s part of `Jᵀ λ` (it has `R` rows) to `out`.
    #[inline(always)]
    fn mul_t_constraint<const R: usize>(&self, c: usize, info: &ConstraintInfo, lambda: &[f64], out: &mut [f64]) {
        let o = info.row_offset as usize;
        let mut l = [0.0; R];
        l.copy_from_slice(&lambda[o..o + R]);
        for k in 0..2 {
            let b = info.bodies[k];
            if b == NO_BODY {
                continue;
            }
            let b = b as usize;
            let a = &self.blocks[2 * c + k];
            // one bounds check for the body's three entries
            let dst = &mut out[3 * b..3 * b + 3];
            for col in 0..3 {
                let mut y = a[col] * l[0];
                for (r, lr) in l.iter().enumerate().skip(1) {
                    y += a[3 * r + col] * lr;
                }
                dst[col] += y;
            }
        }
    }
}

/// Writes the leading `R` rows of `jac[0]` (and of `jac[1]` when `two`) into
/// `pair`, the other rows zero; returns whether the values read are finite.
#[inline(always)]
fn fill_pair<const R: usize>(pair: &mut [Block], jac: &[[[f64; 3]; 3]; 2], two: bool) -> bool {
    // x·0 is 0 for finite x and NaN otherwise: an accumulated test per
    // column (independent lanes), no branch per value
    let mut probe = [0.0; 3];
    for (k, (dst, m)) in pair.iter_mut().zip(jac).enumerate() {
        if k == 1 && !two {
            break;
        }
        for r in 0..3 {
            for col in 0..3 {
                dst[3 * r + col] = if r < R { m[r][col] } else { 0.0 };
            }
        }
        for row in &m[..R] {
            for col in 0..3 {
                probe[col] += row[col] * 0.0;
            }
        }
    }
    probe[0] + probe[1] + probe[2] == 0.0
}

pub(crate) fn check_len(what: &'static str, expected: usize, got: usize) -> Result<(), SolverError> {
    if expected == got { Ok(()) } else { Err(SolverError::LengthMismatch { what, expected, got }) }
}

/// One product J_ci M_b⁻¹ J_djᵀ contributing to an off-diagonal block of A.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Contribution {
    /// Off-diagonal block it adds to.
    pub target: u32,
    /// Block index in `SparseJacobian::blocks` of the row constraint (the larger id).
    pub jac_i: u32,
    /// Block index of the column constraint (the smaller id).
    pub jac_j: u32,
    /// The shared body.
    pub body: u32,
}

/// The symmetric block-sparse matrix A = J M⁻¹ Jᵀ + C (C: optional per-row
/// compliance on the diagonal), one block row per constraint.
///
/// Only the diagonal blocks and the off-diagonal blocks (i, j), i > j, of
/// constraints sharing a dynamic body are stored (seed 003 §V-E: "les termes nuls
/// ne font pas partie de la liste"). The sparsity pattern is rebuilt only when the
/// constraint graph changes (bodies, rows, which bodies are static); see
/// [`pattern_version`](Self::pattern_version).
#[derive(Clone, Debug, Default)]
pub struct BlockSparseSymmetric {
    n: usize,
    n_rows: usize,
    n_bodies: usize,
    pub(crate) rows: Vec<u32>,
    pub(crate) row_offset: Vec<u32>,
    /// Dynamic bodies of each constraint (`NO_BODY` for none / static).
    pub(crate) dyn_bodies: Vec<[u32; 2]>,
    /// Body → constraints touching it as a dynamic body (CSR).
    pub(crate) body_ptr: Vec<u32>,
    pub(crate) body_cons: Vec<u32>,
    /// Off-diagonal blocks: `off_i[k] > off_j[k]`, grouped by `off_i` ascending.
    pub(crate) off_i: Vec<u32>,
    pub(crate) off_j: Vec<u32>,
    /// The first contribution to each off-diagonal block (one per block,
    /// in block order), then the others in the order of discovery (each
    /// block's in the order of its shared bodies): an assembly stores the
    /// first and adds the others, as a sum from +0 would.
    pub(crate) contrib: Vec<Contribution>,
    pub(crate) contrib_more: Vec<Contribution>,
    /// Values.
    pub(crate) diag: Vec<Block>,
    pub(crate) off: Vec<Block>,
    /// Pattern key: `(rows, dyn body 0, dyn body 1)` per constraint, plus the body count.
    key: Vec<u32>,
    /// [`SparseJacobian::structure_id`] of the J the pattern was last checked
    /// against, and which of its bodies were dynamic: the same id and the same
    /// flags mean the same pattern, without comparing the key.
    structure_id: u64,
    dynamic: Vec<bool>,
    pattern_version: u64,
    // scratch for pattern building
    mark: Vec<u32>,
    slot: Vec<u32>,
}

impl BlockSparseSymmetric {
    /// An empty matrix.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of block rows (constraints).
    pub fn n_blocks(&self) -> usize {
        self.n
    }

    /// Number of scalar rows.
    pub fn n_rows(&self) -> usize {
        self.n_rows
    }

    /// Number of stored off-diagonal blocks (lower triangle only).
    pub fn n_off_diagonal_blocks(&self) -> usize {
        self.off_i.len()
    }

    /// Incremented each time [`assemble`](Self::assemble) finds a new sparsity
    /// pattern; a factorisation analysed for one version can be reused for the next
    /// matrices with the same version.
    pub fn pattern_version(&self) -> u64 {
        self.pattern_version
    }

    /// Fills A = J M⁻¹ Jᵀ (+ diag(`compliance`), one value per row, if given) from
    /// the Jacobian and the per-body diagonal inverse mass `(1/m, 1/m, 1/J)` (all
    /// zeros for a static body). Only the non-zero blocks are computed (seed 003
    /// §V). Returns `true` when the sparsity pattern changed (and was rebuilt).
    pub fn assemble(
        &mut self,
        jac: &SparseJacobian,
        inv_mass: &[[f64; 3]],
        compliance: Option<&[f64]>,
    ) -> Result<bool, SolverError> {
        self.assemble_masses(jac, inv_mass, compliance, false)
    }

    /// [`assemble`](Self::assemble); with `masses_checked`, `inv_mass` are
    /// bit for bit the masses of this matrix's last successful assembly, so
    /// their check (finite, ≥ 0) and the comparison of which bodies are
    /// static are not made again (the held masses of
    /// [`ConstraintSolver`](super::ConstraintSolver) at the same version).
    pub(crate) fn assemble_masses(
        &mut self,
        jac: &SparseJacobian,
        inv_mass: &[[f64; 3]],
        compliance: Option<&[f64]>,
        masses_checked: bool,
    ) -> Result<bool, SolverError> {
        check_len("inv_mass", jac.n_bodies, inv_mass.len())?;
        if let Some(c) = compliance {
            check_len("compliance", jac.n_rows, c.len())?;
            if c.iter().any(|v| !(v.is_finite() && *v >= 0.0)) {
                return Err(SolverError::NonFinite("compliance (must be finite and >= 0)"));
            }
        }
        // one accumulated test (no branch per value: ~8 % of this assembly as
        // a short-circuiting `any` on a small linkage)
        // (on the flat slice, finite and ≥ 0 as 0 ≤ v ≤ MAX, NaN failing both:
        // a reduction the compiler vectorises, where the nested iterator's
        // was a scalar loop, ≈ 1 % of a small linkage's step)
        let flat: &[f64] = bytemuck::cast_slice(inv_mass);
        // `&`, not the short-circuiting `contains`: no branch per value
        #[allow(clippy::manual_range_contains)]
        let valid = masses_checked || flat.iter().fold(true, |ok, &v| ok & (v >= 0.0) & (v <= f64::MAX));
        if !valid {
            return Err(SolverError::NonFinite("inverse mass (must be finite and >= 0)"));
        }
        let changed = self.update_pattern(jac, inv_mass, masses_checked);
        // constraints of at most 2 rows (revolute joints, contacts): only the
        // leading 2×2 of each block is non-zero, the same expressions as the 3×3
        // kernel (so bitwise the same values) at less than half the cost
        if jac.cons.iter().all(|c| c.rows <= 2) {
            self.fill_values::<2>(jac, inv_mass, compliance);
        } else {
            self.fill_values::<3>(jac, inv_mass, compliance);
        }
        Ok(changed)
    }

    /// The values of A on the current pattern (leading `R` rows of every block).
    fn fill_values<const R: usize>(&mut self, jac: &SparseJacobian, inv_mass: &[[f64; 3]], compliance: Option<&[f64]>) {
        // diagonal blocks: Σ over touched dynamic bodies of J_cb M_b⁻¹ J_cbᵀ
        for c in 0..self.n {
            let mut d = ZERO;
            let info = &jac.cons[c];
            for k in 0..2 {
                let b = info.bodies[k];
                if b != NO_BODY {
                    let jb = &jac.blocks[2 * c + k];
                    block::add_adbt_r::<R>(&mut d, jb, &inv_mass[b as usize], jb);
                }
            }
            if let Some(comp) = compliance {
                let o = info.row_offset as usize;
                for r in 0..info.rows as usize {
                    d[4 * r] += comp[o + r];
                }
            }
            self.diag[c] = d;
        }
        // off-diagonal blocks: contributions of each shared body (only the
        // leading R × R entries are ever written: the rest stays the zero the
        // pattern build put there, R being fixed by the pattern's row counts).
        // Each block's first contribution is stored as +0 + product (the bits
        // of an addition to a zeroed block, without the zeroing pass), the
        // others are added after it in their order: the same sums bit for bit.
        for ct in &self.contrib {
            block::set_adbt_r::<R>(
                &mut self.off[ct.target as usize],
                &jac.blocks[ct.jac_i as usize],
                &inv_mass[ct.body as usize],
                &jac.blocks[ct.jac_j as usize],
            );
        }
        for ct in &self.contrib_more {
            block::add_adbt_r::<R>(
                &mut self.off[ct.target as usize],
                &jac.blocks[ct.jac_i as usize],
                &inv_mass[ct.body as usize],
                &jac.blocks[ct.jac_j as usize],
            );
        }
    }

    /// Rebuilds the pattern if the constraint graph changed; returns whether it did.
    /// `same_masses`: the masses of the last call (so the same bodies static).
    fn update_pattern(&mut self, jac: &SparseJacobian, inv_mass: &[[f64; 3]], same_masses: bool) -> bool {
        let n = jac.cons.len();
        let is_dyn = |b: u32| b != NO_BODY && inv_mass[b as usize] != [0.0; 3];
        // the J whose pattern this is, with the same bodies static: nothing to compare
        if jac.structure_id != 0
            && jac.structure_id == self.structure_id
            && self.dynamic.len() == inv_mass.len()
            && (same_masses || self.dynamic.iter().zip(inv_mass).all(|(&d, m)| d == (*m != [0.0; 3])))
        {
            return false;
        }
        self.structure_id = jac.structure_id;
        self.dynamic.clear();
        self.dynamic.extend(inv_mass.iter().map(|m| *m != [0.0; 3]));
        // another J (or other static bodies): compare the key in place (no
        // allocation, no hashing: exact)
        let same = self.key.len() == 3 * n + 1
            && self.key[3 * n] == jac.n_bodies as u32
            && jac.cons.iter().enumerate().all(|(c, info)| {
                let k = &self.key[3 * c..3 * c + 3];
                let b0 = if is_dyn(info.bodies[0]) { info.bodies[0] } else { NO_BODY };
                let b1 = if is_dyn(info.bodies[1]) { info.bodies[1] } else { NO_BODY };
                k[0] == info.rows && k[1] == b0 && k[2] == b1
            });
        if same {
            return false;
        }
        self.n = n;
        self.n_rows = jac.n_rows;
        self.n_bodies = jac.n_bodies;
        self.key.clear();
        self.rows.clear();
        self.row_offset.clear();
        self.dyn_bodies.clear();
        for info in &jac.cons {
            let b0 = if is_dyn(info.bodies[0]) { info.bodies[0] } else { NO_BODY };
            let b1 = if is_dyn(info.bodies[1]) { info.bodies[1] } else { NO_BODY };
            self.key.extend_from_slice(&[info.rows, b0, b1]);
            self.rows.push(info.rows);
            self.row_offset.push(info.row_offset);
            self.dyn_bodies.push([b0, b1]);
        }
        self.key.push(jac.n_bodies as u32);
        // body → constraint incidence (counting sort), in constraint order
        let nb = jac.n_bodies;
        self.body_ptr.clear();
        self.body_ptr.resize(nb + 1, 0);
        for bs in &self.dyn_bodies {
            for &b in bs {
                if b != NO_BODY {
                    self.body_ptr[b as usize + 1] += 1;
                }
            }
        }
        for b in 0..nb {
            self.body_ptr[b + 1] += self.body_ptr[b];
        }
        self.body_cons.clear();
        self.body_cons.resize(self.body_ptr[nb] as usize, 0);
        // fill with a moving cursor kept in `slot`
        self.slot.clear();
        self.slot.extend_from_slice(&self.body_ptr[..nb]);
        for (c, bs) in self.dyn_bodies.iter().enumerate() {
            for &b in bs {
                if b != NO_BODY {
                    let s = &mut self.slot[b as usize];
                    self.body_cons[*s as usize] = c as u32;
                    *s += 1;
                }
            }
        }
        // off-diagonal blocks: for each constraint i, the constraints j < i sharing a
        // dynamic body; `mark[j] == i` dedups pairs sharing two bodies.
        self.off_i.clear();
        self.off_j.clear();
        self.contrib.clear();
        self.contrib_more.clear();
        self.mark.clear();
        self.mark.resize(n, NO_BODY);
        self.slot.clear();
        self.slot.resize(n, 0);
        for i in 0..n {
            for ki in 0..2 {
                let b = self.dyn_bodies[i][ki];
                if b == NO_BODY {
                    continue;
                }
                let (s, e) = (self.body_ptr[b as usize] as usize, self.body_ptr[b as usize + 1] as usize);
                for t in s..e {
                    let j = self.body_cons[t] as usize;
                    if j >= i {
                        // lists are sorted by constraint id
                        break;
                    }
                    let first = self.mark[j] != i as u32;
                    if first {
                        self.mark[j] = i as u32;
                        self.slot[j] = self.off_i.len() as u32;
                        self.off_i.push(i as u32);
                        self.off_j.push(j as u32);
                    }
                    let kj = if self.dyn_bodies[j][0] == b { 0 } else { 1 };
                    let ct = Contribution {
                        target: self.slot[j],
                        jac_i: (2 * i + ki) as u32,
                        jac_j: (2 * j + kj) as u32,
                        body: b,
                    };
                    if first { self.contrib.push(ct) } else { self.contrib_more.push(ct) }
                }
            }
        }
        self.diag.clear();
        self.diag.resize(n, ZERO);
        self.off.clear();
        self.off.resize(self.off_i.len(), ZERO);
        self.pattern_version += 1;
        true
    }

    /// Diagonal block of constraint `c` (padded rows are zero).
    pub fn diagonal_block(&self, c: ConstraintId) -> &[f64; 9] {
        &self.diag[c.index()]
    }

    /// The stored off-diagonal blocks as `(i, j, block)` with `i > j`, block `A_ij`
    /// (rows of constraint i, columns of constraint j).
    pub fn off_diagonal_blocks(&self) -> impl Iterator<Item = (ConstraintId, ConstraintId, &[f64; 9])> {
        self.off_i
            .iter()
            .zip(self.off_j.iter())
            .zip(self.off.iter())
            .map(|((&i, &j), b)| (ConstraintId(i), ConstraintId(j), b))
    }

    /// Scalar row of constraint `c`'s first row.
    pub fn row_offset(&self, c: ConstraintId) -> usize {
        self.row_offset[c.index()] as usize
    }

    /// Rows of constraint `c`.
    pub fn rows(&self, c: ConstraintId) -> usize {
        self.rows[c.index()] as usize
    }

    /// `y = A x` on compact vectors (length [`n_rows`](Self::n_rows)).
    pub fn mul(&self, x: &[f64], y: &mut [f64]) -> Result<(), SolverError> {
        check_len("x", self.n_rows, x.len())?;
        check_len("y", self.n_rows, y.len())?;
        let get = |c: usize| {
            let o = self.row_offset[c] as usize;
            let mut v = [0.0; 3];
            v[..self.rows[c] as usize].copy_from_slice(&x[o..o + self.rows[c] as usize]);
            v
        };
        y.fill(0.0);
        let add = |c: usize, v: [f64; 3], y: &mut [f64]| {
            let o = self.row_offset[c] as usize;
            for r in 0..self.rows[c] as usize {
                y[o + r] += v[r];
            }
        };
        for c in 0..self.n {
            add(c, block::mul_vec(&self.diag[c], &get(c)), y);
        }
        for k in 0..self.off_i.len() {
            let (i, j) = (self.off_i[k] as usize, self.off_j[k] as usize);
            add(i, block::mul_vec(&self.off[k], &get(j)), y);
            add(j, block::mul_t_vec(&self.off[k], &get(i)), y);
        }
        Ok(())
    }

    /// `y = A x` on padded vectors (3 entries per constraint).
    pub(crate) fn mul_padded(&self, x: &[[f64; 3]], y: &mut [[f64; 3]]) {
        for c in 0..self.n {
            y[c] = block::mul_vec(&self.diag[c], &x[c]);
        }
        for k in 0..self.off_i.len() {
            let (i, j) = (self.off_i[k] as usize, self.off_j[k] as usize);
            let a = block::mul_vec(&self.off[k], &x[j]);
            let b = block::mul_t_vec(&self.off[k], &x[i]);
            for r in 0..3 {
                y[i][r] += a[r];
                y[j][r] += b[r];
            }
        }
    }
}
