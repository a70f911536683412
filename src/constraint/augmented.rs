//! Constraint forces of small systems with bodies whose rotation is nearly
//! massless (issue 10, inertia ratios I ≪ m·ℓ²): the multipliers λ and those
//! bodies' angular accelerations α solved together, densely, from
//!
//! ```text
//! [ B    J_r ] [λ]   [ b ]
//! [ J_rᵀ −I  ] [α] = [ −τ ]
//! ```
//!
//! with B = J M⁻¹ Jᵀ over every degree of freedom except those rotations,
//! J_r the rows' columns of those rotations, I their inertias, τ the external
//! torques on them and b = −γ − J (M⁻¹f without those rotations) (− the
//! Baumgarte terms). This is M a = f + Jᵀλ, J a = −γ with α kept as an unknown
//! instead of being eliminated through 1/I: the normal equations A = J M⁻¹ Jᵀ
//! carry 1/I · (anchor arm)² in every row of such a body, which swamps its
//! 1/m terms (κ(A) ≈ 1e3 · m ℓ²/I on a four-bar), and α = (τ + (Jᵀλ)_θ)/I
//! divides the rounding of λ by I. Neither happens here: I appears only on
//! the diagonal, where it tends to the point-mass limit I = 0.
//!
//! *Scaling.* A constraint row is scaled by d_i = 1/√B_ii (by 1/√Â_ii, Â
//! the diagonal of J Ŵ Jᵀ with 1/(m ℓ²) in place of 1/I, for a row that
//! only turns augmented bodies, e.g. a weld's angle row; ℓ the bounding
//! radius), and an augmented rotation's column by the reciprocal of its
//! largest scaled entry, d_b = 1/max_i |J_ib| d_i ≈ 1/(arm·√m). The scaled
//! system D K D then has entries O(1) and the α diagonal −I d_b² ≈
//! −I/(m·arm²) → 0: it is the (well-conditioned) point-mass KKT system plus
//! a small perturbation, and its condition does not grow as I → 0. It is
//! solved by Gaussian elimination with complete pivoting (backward stable; B
//! alone may be singular, e.g. four bars with 10 pin rows on 8 translational
//! degrees of freedom, so no fixed order of elimination works), followed by
//! one step of iterative refinement on the scaled system.
//!
//! Only the light bodies some constraint touches are augmented (a free one's
//! α = τ/I involves no λ). Dense O(N³) with N = rows + augmented rotations:
//! taken for N ≤ [`MAX_UNKNOWNS`] only (a linkage of a few dozen joints); a larger system
//! takes the sparse factor with those inertias raised and an iteration that
//! restores them ([`super::raised`]).

use super::{ConstraintSet, RowBlock};

/// Rotations whose m·ℓ²/I exceeds this are augmented (ℓ the bounding
/// radius; a uniform bar or box has 3, a disc 2, so an inertia ≲ 1/30 of the
/// shape's own). Below it the normal equations' κ(A) stays ≲ 1e5 on a
/// linkage and they are accurate to ~1e-11 (`tests/robust_scaling.rs`:
/// ≤ 4e-14 at a tenth of the shapes' inertia; at a hundredth, which is
/// augmented, they gave 3e-12).
pub const RATIO: f64 = 1e2;

/// Largest N = rows + augmented rotations solved densely (the elimination is
/// N³/3 multiply-adds: ≈ 0.3 M at this size, ~0.2 ms).
pub const MAX_UNKNOWNS: usize = 96;

/// Buffers of the dense augmented solve, reused from step to step (no
/// allocation once the sizes are reached).
#[derive(Clone, Debug, Default)]
pub struct AugmentedSolve {
    /// Body → whether its rotation is nearly massless ([`RATIO`]).
    light: Vec<bool>,
    /// Whether any is.
    any_light: bool,
    /// Body → index of its augmented rotation (u32::MAX: none): the light
    /// bodies some constraint touches (a free body's α = τ/I needs nothing).
    slot: Vec<u32>,
    /// The augmented bodies, in the order of their first constraint.
    bodies: Vec<u32>,
    /// Scaled matrix (row-major N×N), its working copy, right-hand side,
    /// solution, residual.
    k: Vec<f64>,
    lu: Vec<f64>,
    rhs: Vec<f64>,
    x: Vec<f64>,
    res: Vec<f64>,
    dx: Vec<f64>,
    w: Vec<f64>,
    /// Row and column permutations of the complete pivoting.
    prow: Vec<usize>,
    pcol: Vec<usize>,
    /// Symmetric scaling D.
    d: Vec<f64>,
    dhat: Vec<f64>,
    /// (body, row, J's row for that body) of every row's non-zero body block,
    /// sorted by body.
    entries: Vec<(u32, u32, [f64; 3])>,
    /// Largest N taken here in place of [`MAX_UNKNOWNS`] (tests: the dense
    /// solve as the reference of a large system's raised iteration).
    limit: Option<usize>,
}

impl AugmentedSolve {
    /// Chooses the augmented rotations from the inverse masses and rank
    /// weights (1, 1, 1/ℓ²): a movable, rotating body with
    /// m ℓ²/I = (1/I)/((1/m)(1/ℓ²)) > [`RATIO`]. Returns whether there is any.
    pub fn select(&mut self, inv_mass: &[[f64; 3]], rank_weights: &[[f64; 3]]) -> bool {
        self.light.clear();
        self.light.extend(
            inv_mass
                .iter()
                .zip(rank_weights)
                .map(|(im, rw)| im[0] > 0.0 && im[2] > 0.0 && rw[2] > 0.0 && im[2] > RATIO * im[0] * rw[2]),
        );
        self.any_light = self.light.iter().any(|&l| l);
        self.any_light
    }

    /// Whether the system of `constraints` (`rows` rows) is solved here: some
    /// constraint touches a light body, and rows + such bodies ≤
    /// [`MAX_UNKNOWNS`]. Chooses the augmented bodies.
    pub fn prepare(&mut self, constraints: &ConstraintSet, rows: usize) -> bool {
        self.bodies.clear();
        if !self.any_light {
            return false;
        }
        self.slot.clear();
        self.slot.resize(self.light.len(), u32::MAX);
        for c in constraints.iter() {
            for b in std::iter::once(c.body_a).chain(c.body_b) {
                let b = b.0;
                if self.light.get(b).copied().unwrap_or(false) && self.slot[b] == u32::MAX {
                    self.slot[b] = self.bodies.len() as u32;
                    self.bodies.push(b as u32);
                }
            }
        }
        !self.bodies.is_empty() && rows + self.bodies.len() <= self.limit.unwrap_or(MAX_UNKNOWNS)
    }

    /// Takes systems up to `limit` unknowns (tests only).
    #[cfg(test)]
    pub(crate) fn set_limit(&mut self, limit: usize) {
        self.limit = Some(limit);
    }

    /// Whether any body's rotation is nearly massless (as of the last
    /// [`select`](Self::select)).
    pub fn any_light(&self) -> bool {
        self.any_light
    }

    /// Body → whether its rotation is nearly massless.
    pub fn light(&self) -> &[bool] {
        &self.light
    }

    /// The augmented bodies.
    pub fn bodies(&self) -> &[u32] {
        &self.bodies
    }

    /// Solves for λ (`lambda`, by row) and the augmented bodies' α (`alpha`,
    /// by augmented body), after a [`prepare`](Self::prepare) that returned
    /// true for the same constraints. `b` is the constraint rows' right-hand side (see the
    /// module doc), `f` the external forces (3 per body). Returns false when
    /// the eliminated matrix has a zero pivot (λ, α then unusable).
    #[allow(clippy::too_many_arguments)]
    pub fn solve(
        &mut self,
        constraints: &ConstraintSet,
        blocks: &[RowBlock],
        inv_mass: &[[f64; 3]],
        rank_weights: &[[f64; 3]],
        b: &[f64],
        f: &[f64],
        lambda: &mut [f64],
        alpha: &mut Vec<f64>,
    ) -> bool {
        let n = b.len();
        let nt = self.bodies.len();
        let size = n + nt;
        // the non-zero body blocks of J by body
        self.entries.clear();
        let mut row = 0u32;
        for (c, block) in constraints.iter().zip(blocks) {
            for r in 0..block.rows {
                self.entries.push((c.body_a.0 as u32, row + r as u32, block.jac[0][r]));
                if let Some(bb) = c.body_b {
                    self.entries.push((bb.0 as u32, row + r as u32, block.jac[1][r]));
                }
            }
            row += block.rows as u32;
        }
        self.entries.sort_unstable_by_key(|e| (e.0, e.1));
        // K unscaled; `d` collects B's diagonal, and for the rows with no
        // entry in B (only augmented rotations) Â's, in `dhat`
        self.k.clear();
        self.k.resize(size * size, 0.0);
        self.d.clear();
        self.d.resize(size, 0.0);
        self.dhat.clear();
        self.dhat.resize(n, 0.0);
        let mut start = 0;
        while start < self.entries.len() {
            let body = self.entries[start].0 as usize;
            let mut end = start;
            while end < self.entries.len() && self.entries[end].0 as usize == body {
                end += 1;
            }
            let im = inv_mass[body];
            let t = self.slot[body];
            // B's weights: the augmented rotation left out
            let w = if t == u32::MAX { im } else { [im[0], im[1], 0.0] };
            for p in start..end {
                let (_, i, ji) = self.entries[p];
                let i = i as usize;
                for q in start..end {
                    let (_, j, jj) = self.entries[q];
                    self.k[i * size + j as usize] += ji[0] * w[0] * jj[0] + ji[1] * w[1] * jj[1] + ji[2] * w[2] * jj[2];
                }
                if t != u32::MAX {
                    let col = n + t as usize;
                    self.k[i * size + col] += ji[2];
                    self.k[col * size + i] += ji[2];
                    self.dhat[i] += ji[2] * ji[2] * im[0] * rank_weights[body][2];
                }
            }
            start = end;
        }
        for i in 0..n {
            let bii = self.k[i * size + i];
            let dii = if bii > 0.0 { bii } else { self.dhat[i] };
            // a row with no movable degree of freedom keeps scale 1
            self.d[i] = if dii > 0.0 { 1.0 / dii.sqrt() } else { 1.0 };
        }
        // an augmented rotation's column scaled to a largest entry of 1 (its
        // rows' largest arm), or to a diagonal of −1 when no row turns it
        for (t, &body) in self.bodies.iter().enumerate() {
            let col = n + t;
            let im = inv_mass[body as usize];
            self.k[col * size + col] = -1.0 / im[2];
            let big = (0..n).map(|i| (self.k[i * size + col] * self.d[i]).abs()).fold(0.0, f64::max);
            self.d[col] = if big > 0.0 { 1.0 / big } else { im[2].sqrt() };
        }
        for i in 0..size {
            for j in 0..size {
                self.k[i * size + j] *= self.d[i] * self.d[j];
            }
        }
        self.rhs.clear();
        self.rhs.extend(b.iter().zip(&self.d).map(|(bi, di)| bi * di));
        for (t, &body) in self.bodies.iter().enumerate() {
            self.rhs.push(-f[3 * body as usize + 2] * self.d[n + t]);
        }
        if !self.factor(size) {
            return false;
        }
        let mut x = std::mem::take(&mut self.x);
        x.clear();
        x.resize(size, 0.0);
        substitute(&self.lu, &self.prow, &self.pcol, &self.rhs, &mut self.w, &mut x);
        // one step of refinement on the scaled system: r = rhs − K x, x += K⁻¹ r
        self.res.clear();
        for i in 0..size {
            let mut s = self.rhs[i];
            for j in 0..size {
                s -= self.k[i * size + j] * x[j];
            }
            self.res.push(s);
        }
        self.dx.clear();
        self.dx.resize(size, 0.0);
        substitute(&self.lu, &self.prow, &self.pcol, &self.res, &mut self.w, &mut self.dx);
        for (xi, di) in x.iter_mut().zip(&self.dx) {
            *xi += di;
        }
        for i in 0..n {
            lambda[i] = x[i] * self.d[i];
        }
        alpha.clear();
        alpha.extend((0..nt).map(|t| x[n + t] * self.d[n + t]));
        self.x = x;
        alpha.iter().all(|a| a.is_finite()) && lambda.iter().all(|l| l.is_finite())
    }

    /// LU factors with complete pivoting of the scaled K (`size`²) into `lu`,
    /// `prow`, `pcol`: K[prow[i]][pcol[j]] = (L U)[i][j]. False on a zero pivot.
    fn factor(&mut self, size: usize) -> bool {
        self.lu.clear();
        self.lu.extend_from_slice(&self.k);
        self.prow.clear();
        self.prow.extend(0..size);
        self.pcol.clear();
        self.pcol.extend(0..size);
        let lu = &mut self.lu;
        for s in 0..size {
            let (mut pi, mut pj, mut big) = (s, s, 0.0f64);
            for i in s..size {
                for j in s..size {
                    let v = lu[i * size + j].abs();
                    if v > big {
                        (pi, pj, big) = (i, j, v);
                    }
                }
            }
            if big == 0.0 || !big.is_finite() {
                return false;
            }
            if pi != s {
                for j in 0..size {
                    lu.swap(s * size + j, pi * size + j);
                }
                self.prow.swap(s, pi);
            }
            if pj != s {
                for i in 0..size {
                    lu.swap(i * size + s, i * size + pj);
                }
                self.pcol.swap(s, pj);
            }
            let pivot = lu[s * size + s];
            for i in s + 1..size {
                let l = lu[i * size + s] / pivot;
                lu[i * size + s] = l;
                if l != 0.0 {
                    for j in s + 1..size {
                        lu[i * size + j] -= l * lu[s * size + j];
                    }
                }
            }
        }
        true
    }
}

/// x = K⁻¹ r with LU factors of complete pivoting (K[prow[i]][pcol[j]] =
/// (L U)[i][j]); `w` is scratch.
fn substitute(lu: &[f64], prow: &[usize], pcol: &[usize], r: &[f64], w: &mut Vec<f64>, x: &mut [f64]) {
    let size = prow.len();
    // y = P r, then L z = y (unit lower), U v = z, x = Q v
    w.clear();
    for i in 0..size {
        let mut s = r[prow[i]];
        for j in 0..i {
            s -= lu[i * size + j] * w[j];
        }
        w.push(s);
    }
    for i in (0..size).rev() {
        let mut s = w[i];
        for j in i + 1..size {
            s -= lu[i * size + j] * w[j];
        }
        w[i] = s / lu[i * size + i];
    }
    for j in 0..size {
        x[pcol[j]] = w[j];
    }
}
