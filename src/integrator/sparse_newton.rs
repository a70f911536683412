//! The Newton iteration of the implicit integrators on the sparse constraint
//! factorisation (issue 10: "Newton on the full system using the existing
//! sparse factorisation").
//!
//! # The linear system
//!
//! A stage of SDIRK3 (or the implicit midpoint rule) solves
//! Z_q = b_q + hγ Z_v, Z_v = b_v + hγ a(Z_q, Z_v), where the constrained
//! acceleration a solves M a = F + Jᵀλ, J a = c (module doc of
//! [`implicit`](super::implicit)). With residuals r_q, r_v a Newton update
//! (Δq, Δv) satisfies Δq = r_q + hγ Δv, Δv = r_v + hγ δa, and δa, the change of
//! the constrained acceleration, solves the linearised equations of motion
//!
//! ```text
//! M δa = K_q Δq + K_v Δv + Jᵀ δλ,     J δa = 0,
//! ```
//!
//! K_q = ∂(F + Jᵀλ)/∂q at fixed λ (the forces' stiffness and the constraint
//! forces' geometric stiffness), K_v = ∂F/∂v. Writing u = hγ δa, μ = hγ δλ and
//! K̃ = hγ K_v + (hγ)² K_q:
//!
//! ```text
//! (M − K̃) u − Jᵀ μ = g := hγ K_q (r_q + hγ r_v) + hγ K_v r_v,     J u = 0,
//! ```
//!
//! a saddle-point system whose Schur complement is the constraint solver's own
//! matrix with the masses replaced: with W = (M − K̃)⁻¹,
//!
//! ```text
//! (J W Jᵀ) μ = −J W g,     u = W (g + Jᵀ μ),     Δv = r_v + u,  Δq = r_q + hγ Δv.
//! ```
//!
//! # What is approximated, and why it is safe
//!
//! K̃ is kept **per body** (a 3×3 block for each body: its forces against its own
//! coordinates), so W is block diagonal and J W Jᵀ has exactly the pattern of
//! J M⁻¹ Jᵀ: the solver's analysis, ordering and supernodes apply unchanged.
//! The block is symmetrised and factored W⁻¹ = L D Lᵀ per body, and the solver is
//! handed J' = J L⁻ᵀ and the "inverse masses" D⁻¹ (J W Jᵀ = J' D⁻¹ J'ᵀ), so a
//! general 3×3 block needs nothing new from the solver. A pivot of D below a
//! tenth of the body's own mass (or inertia) — a destabilising stiffness, a
//! link under compression — is raised to it. Left out: stiffness coupling two
//! bodies through a force (a spring between them; a joint's geometric
//! stiffness is per body: the torque r(φ) × f of a pin on a body depends on
//! that body's angle only), the antisymmetric part of a block, and the
//! velocity-product terms of the constraint's acceleration (δJ a − δc).
//!
//! These only change the iteration matrix, never the residual, so the iteration
//! still converges to the exact stage solution (simplified Newton, Hairer &
//! Wanner §IV.8), at a linear rate set by the neglected terms times (hγ)². The
//! stiffness that makes a mechanism stiff — light links under a heavy load's
//! tension (their rotation against the pin forces), a stiff spring to the
//! ground — is within the blocks. Where the iteration still does not converge
//! with a fresh model and loads couple two bodies (a stiff spring between
//! them), the integrator uses the dense finite-difference Jacobian from then on,
//! up to [`MAX_DENSE_DOFS`](super::implicit::MAX_DENSE_DOFS), and says so once in
//! the run's warnings. Where no load couples bodies (the failure is then the
//! equations' own, e.g. near a singular configuration, and the dense iteration
//! fails there too) the step is only retried smaller.
//!
//! # Cost
//!
//! The blocks are finite differences of the forces over a colouring of the
//! bodies (bodies sharing a constraint or a load get different colours, so
//! perturbing one colour at a time leaves each body's response its own):
//! 12 × colours evaluations of the forces and of Jᵀλ (three coordinates, of
//! positions and of velocities, each perturbed forward and backward:
//! `implicit::limited_slope`), plus one constrained
//! solve for λ, where the dense Jacobian takes 12 × bodies + 1 constrained
//! solves and an (3 × bodies)³ LU. A Newton iteration is one solve with the factor of
//! J W Jᵀ, refactored when hγ changes.

use crate::solver::sparse::NO_BODY;
use crate::solver::{ConstraintSolver, SparseJacobian};

/// A per-body linearisation of a constrained mechanism about one state: what
/// the implicit integrators' Newton iteration needs to work on the sparse
/// factorisation (module doc). Filled by [`Dynamics::linear_model`](super::Dynamics::linear_model).
#[derive(Clone, Debug, Default)]
pub struct LinearModel {
    /// (1/m, 1/m, 1/J) of each body; a zero marks a component that is not a
    /// degree of freedom (a fixed body, a point mass's rotation).
    pub inverse_mass: Vec<[f64; 3]>,
    /// ∂(F + Jᵀλ)/∂q of each body against its own coordinates, λ held fixed:
    /// `force_gradient_q[b][i][j]` = ∂f_i/∂q_j (i, j over x, y, φ).
    pub force_gradient_q: Vec<[[f64; 3]; 3]>,
    /// ∂F/∂v of each body against its own velocities.
    pub force_gradient_v: Vec<[[f64; 3]; 3]>,
    /// The constraint Jacobian at the state (no rows: no constraints).
    pub jacobian: SparseJacobian,
    /// Some load (a spring, a damper) acts between two movable bodies: its
    /// stiffness across them is left out of the blocks (module doc).
    pub coupling_loads: bool,
    /// Per-body weights of the solver's rank metric
    /// ([`ConstraintSolver::set_rank_metric`]); empty: none.
    pub rank_weights: Vec<[f64; 3]>,
    /// The finite-difference pass's working arrays, kept between
    /// linearisations so that a Newton Jacobian allocates nothing once the
    /// sizes are reached (`src/world/linear_model.rs`).
    pub(crate) scratch: crate::world::LinearisationScratch,
    /// The units of the finite-difference steps' sizes
    /// ([`weights`](super::weights)), set by the Newton iteration for its step.
    pub units: super::weights::KindUnits,
}

impl LinearModel {
    /// Empties the model for `bodies` bodies (zero gradients), keeping allocations.
    pub fn reset(&mut self, bodies: usize) {
        self.inverse_mass.clear();
        self.inverse_mass.resize(bodies, [0.0; 3]);
        self.force_gradient_q.clear();
        self.force_gradient_q.resize(bodies, [[0.0; 3]; 3]);
        self.force_gradient_v.clear();
        self.force_gradient_v.resize(bodies, [[0.0; 3]; 3]);
        self.jacobian.clear(bodies);
        self.rank_weights.clear();
        self.coupling_loads = false;
    }
}

/// Below this fraction of a body's own mass (inertia) a pivot of M − K̃ is
/// raised to it (module doc).
const PIVOT_FLOOR: f64 = 0.1;

/// The sparse Newton machinery: the model, W per body, the transformed J and
/// the factor of J W Jᵀ for the current hγ.
#[derive(Clone, Debug, Default)]
pub(crate) struct SparseNewton {
    pub(crate) model: LinearModel,
    /// W = (M − K̃)⁻¹ per body.
    w: Vec<[[f64; 3]; 3]>,
    /// L⁻ᵀ per body.
    l_inv_t: Vec<[[f64; 3]; 3]>,
    /// D⁻¹ per body: the "inverse masses" handed to the solver.
    d_inv: Vec<[f64; 3]>,
    transformed: SparseJacobian,
    solver: ConstraintSolver,
    /// hγ of the current factor (NaN: none).
    hg: f64,
    g: Vec<f64>,
    y: Vec<f64>,
    rows: Vec<f64>,
    mu: Vec<f64>,
}

impl SparseNewton {
    /// Forgets the factor (the model changed).
    pub(crate) fn invalidate(&mut self) {
        self.hg = f64::NAN;
    }

    /// W per body and the factor of J W Jᵀ for `hg`. False if the solver
    /// refused the system.
    pub(crate) fn factor(&mut self, hg: f64) -> bool {
        if self.hg == hg {
            return true;
        }
        let n = self.model.inverse_mass.len();
        self.w.resize(n, [[0.0; 3]; 3]);
        self.l_inv_t.resize(n, [[0.0; 3]; 3]);
        self.d_inv.resize(n, [0.0; 3]);
        for b in 0..n {
            let (w, l_inv_t, d_inv) = body_blocks(
                self.model.inverse_mass[b],
                &self.model.force_gradient_q[b],
                &self.model.force_gradient_v[b],
                hg,
            );
            self.w[b] = w;
            self.l_inv_t[b] = l_inv_t;
            self.d_inv[b] = d_inv;
        }
        if self.model.jacobian.n_rows() > 0 {
            self.transformed.copy_from(&self.model.jacobian);
            let t = &mut self.transformed;
            for (c, info) in t.cons.iter().enumerate() {
                for k in 0..2 {
                    let body = info.bodies[k];
                    if body == NO_BODY {
                        continue;
                    }
                    let block = &mut t.blocks[2 * c + k];
                    let m = &self.l_inv_t[body as usize];
                    let src = *block;
                    for r in 0..3 {
                        for j in 0..3 {
                            block[3 * r + j] = (0..3).map(|i| src[3 * r + i] * m[i][j]).sum();
                        }
                    }
                }
            }
            self.solver.set_rank_metric(&self.model.rank_weights);
            if self.solver.factor(&self.transformed, &self.d_inv, None).is_err() {
                self.hg = f64::NAN;
                return false;
            }
        }
        self.hg = hg;
        true
    }

    /// Solves the Newton system for residuals (r_q, r_v) in place (r_q → Δq,
    /// r_v → Δv) with the factor of [`factor`](Self::factor)`(hg)`. On a solver
    /// failure the update is NaN, which the iteration reports as not converging.
    pub(crate) fn solve(&mut self, hg: f64, rq: &mut [f64], rv: &mut [f64]) {
        let n3 = rq.len();
        if self.hg != hg || !self.factor(hg) {
            rq.fill(f64::NAN);
            rv.fill(f64::NAN);
            return;
        }
        self.g.resize(n3, 0.0);
        self.y.resize(n3, 0.0);
        // g = hγ K_q (r_q + hγ r_v) + hγ K_v r_v, then y = W g
        for b in 0..n3 / 3 {
            let (kq, kv) = (&self.model.force_gradient_q[b], &self.model.force_gradient_v[b]);
            for i in 0..3 {
                self.g[3 * b + i] = (0..3)
                    .map(|j| {
                        let x = rq[3 * b + j] + hg * rv[3 * b + j];
                        hg * (kq[i][j] * x + kv[i][j] * rv[3 * b + j])
                    })
                    .sum();
            }
            mul_block(&self.w[b], &self.g[3 * b..3 * b + 3], &mut self.y[3 * b..3 * b + 3]);
        }
        let jac = &self.model.jacobian;
        let m = jac.n_rows();
        if m > 0 {
            self.rows.resize(m, 0.0);
            self.mu.resize(m, 0.0);
            let ok = jac.mul(&self.y, &mut self.rows).is_ok()
                && {
                    self.rows.iter_mut().for_each(|r| *r = -*r);
                    self.solver.solve_factored(&self.rows, &mut self.mu).is_ok()
                }
                && jac.mul_transpose(&self.mu, &mut self.y).is_ok();
            if !ok {
                rq.fill(f64::NAN);
                rv.fill(f64::NAN);
                return;
            }
            // y = Jᵀμ: g ← g + Jᵀμ
            for (g, f) in self.g.iter_mut().zip(&self.y) {
                *g += f;
            }
            for b in 0..n3 / 3 {
                mul_block(&self.w[b], &self.g[3 * b..3 * b + 3], &mut self.y[3 * b..3 * b + 3]);
            }
        }
        // u = y; Δv = r_v + u, Δq = r_q + hγ Δv
        for i in 0..n3 {
            rv[i] += self.y[i];
            rq[i] += hg * rv[i];
        }
    }
}

fn mul_block(m: &[[f64; 3]; 3], x: &[f64], out: &mut [f64]) {
    for i in 0..3 {
        out[i] = m[i][0] * x[0] + m[i][1] * x[1] + m[i][2] * x[2];
    }
}

/// For one body: W = (M − K̃)⁻¹ on its degrees of freedom (zero elsewhere),
/// with the symmetrised block factored L D Lᵀ (pivots floored at
/// [`PIVOT_FLOOR`] × the component's mass), L⁻ᵀ and D⁻¹.
fn body_blocks(
    inverse_mass: [f64; 3],
    kq: &[[f64; 3]; 3],
    kv: &[[f64; 3]; 3],
    hg: f64,
) -> ([[f64; 3]; 3], [[f64; 3]; 3], [f64; 3]) {
    let mut free = [0usize; 3];
    let mut m = 0;
    for k in 0..3 {
        if inverse_mass[k] > 0.0 {
            free[m] = k;
            m += 1;
        }
    }
    let mut w = [[0.0; 3]; 3];
    let mut l_inv_t = [[0.0; 3]; 3];
    let mut d_inv = [0.0; 3];
    if m == 0 {
        return (w, l_inv_t, d_inv);
    }
    // S = sym(M − K̃) on the free components
    let entry = |i: usize, j: usize| {
        let k = |a: usize, b: usize| hg * kv[a][b] + hg * hg * kq[a][b];
        let mass = if i == j { 1.0 / inverse_mass[i] } else { 0.0 };
        mass - 0.5 * (k(i, j) + k(j, i))
    };
    let mut l = [[0.0; 3]; 3];
    let mut d = [0.0; 3];
    for a in 0..m {
        let ia = free[a];
        let mut pivot = entry(ia, ia) - (0..a).map(|c| l[a][c] * l[a][c] * d[c]).sum::<f64>();
        let floor = PIVOT_FLOOR / inverse_mass[ia];
        // NaN (a non-finite gradient) is floored too
        if pivot.is_nan() || pivot < floor {
            pivot = floor;
        }
        d[a] = pivot;
        l[a][a] = 1.0;
        for b in a + 1..m {
            l[b][a] = (entry(free[b], ia) - (0..a).map(|c| l[b][c] * l[a][c] * d[c]).sum::<f64>()) / pivot;
        }
    }
    // L⁻¹ (unit lower triangular) by forward substitution
    let mut li = [[0.0; 3]; 3];
    for a in 0..m {
        li[a][a] = 1.0;
        for b in a + 1..m {
            li[b][a] = -(a..b).map(|c| l[b][c] * li[c][a]).sum::<f64>();
        }
    }
    // W = L⁻ᵀ D⁻¹ L⁻¹, L⁻ᵀ embedded at the free components
    for a in 0..m {
        d_inv[free[a]] = 1.0 / d[a];
        for b in 0..m {
            l_inv_t[free[a]][free[b]] = li[b][a];
            w[free[a]][free[b]] = (0..m).map(|c| li[c][a] * li[c][b] / d[c]).sum();
        }
    }
    (w, l_inv_t, d_inv)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// W is the inverse of the symmetrised M − K̃ when no pivot is floored.
    #[test]
    fn body_block_inverts_the_symmetrised_matrix() {
        let inv = [0.5, 0.5, 4.0];
        let kq = [[-30.0, 4.0, 1.0], [2.0, -20.0, 0.5], [1.0, 0.5, -3.0]];
        let kv = [[-1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, -0.1]];
        let hg = 0.1;
        let (w, _, _) = body_blocks(inv, &kq, &kv, hg);
        for i in 0..3 {
            for j in 0..3 {
                let s = |a: usize, b: usize| {
                    let k = |x: usize, y: usize| hg * kv[x][y] + hg * hg * kq[x][y];
                    (if a == b { 1.0 / inv[a] } else { 0.0 }) - 0.5 * (k(a, b) + k(b, a))
                };
                let p: f64 = (0..3).map(|k| s(i, k) * w[k][j]).sum();
                let expected = if i == j { 1.0 } else { 0.0 };
                // a 3×3 product of O(1) entries: 1e-14 is a few ulps
                assert!((p - expected).abs() < 1e-14, "(S W)[{i}][{j}] = {p}");
            }
        }
    }

    /// A point mass (no rotational inverse mass) keeps W zero on its angle.
    #[test]
    fn body_block_leaves_non_degrees_of_freedom_out() {
        let (w, lt, d) = body_blocks([1.0, 1.0, 0.0], &[[1.0; 3]; 3], &[[0.0; 3]; 3], 0.1);
        for k in 0..3 {
            assert_eq!(w[2][k], 0.0);
            assert_eq!(w[k][2], 0.0);
            assert_eq!(lt[2][k], 0.0);
        }
        assert_eq!(d[2], 0.0);
    }
}
