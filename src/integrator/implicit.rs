//! Stiffly accurate implicit integration of the constrained equations
//! (issue 10): a 3-stage, order-3, L-stable SDIRK method with an embedded
//! order-2 error estimate and step-size control, and the Newton solve of the
//! implicit midpoint rule.
//!
//! # Which method, and why
//!
//! The mechanism tier integrates the index-1 form of the equations of motion:
//! q̇ = v, v̇ = a(t, q, v), where `a` solves M a = F + Jᵀλ with J a = −γ (seed
//! 003 §III), and the drift of C(q) is removed by the Newton projection after
//! each step (seed 003 §IV). The stiffness of a mechanism lives in `a`: a
//! light link under a heavy load's tension has transverse modes of 10⁴ rad/s,
//! a stiff spring k/m = 10⁸ one of 10⁴ rad/s. So the stiff solver must see the
//! full Jacobian ∂a/∂(q, v), constraint forces included — which is what an
//! implicit Runge–Kutta method on the index-1 system gives (the "Radau IIA /
//! BDF on the index-reduced system" option of the issue).
//!
//! The method is Alexander's SDIRK3 (Alexander 1977; Hairer & Wanner, *Solving
//! ODEs II*, §IV.6, Table 6.5 family):
//!
//! ```text
//!  γ  | γ
//! c₂  | (1−γ)/2   γ
//!  1  | b₁        b₂    γ          γ = 0.43586652150845899942 (root of
//! ----+---------------------         x³ − 3x² + 3x/2 − 1/6 in (1/6, 1/2))
//!     | b₁        b₂    γ          c₂ = (1+γ)/2, b₁ = −3γ²/2 + 4γ − 1/4,
//!                                  b₂ = 3γ²/2 − 5γ + 5/4
//! ```
//!
//! * **Order 3** (global error ∝ h³), checked by the order tests.
//! * **L-stable and stiffly accurate**: the last stage is the solution, so the
//!   stability function R(z) → 0 as z → −∞: a mode far above 1/h is damped
//!   out in one step instead of ringing (an A-stable but not L-stable method,
//!   like the implicit midpoint rule or the trapezoid, keeps |R| = 1 there).
//!   For an oscillation of frequency ω the numerical damping per step is
//!   1 − |R(iωh)| ≈ 0.05 (ωh)⁴ for ωh ≪ 1: at the motion's own frequencies
//!   (a 1 m pendulum, ω ≈ 3 rad/s, h = 1e-3) ~4e-12 per step — invisible —
//!   while the 10⁴ rad/s transverse modes of a chain under load are removed.
//! * **Singly diagonal**: every stage solves with the same matrix
//!   I − hγ ∂f/∂y, so one factorisation serves the three stages (and the
//!   following steps while h and the Jacobian are unchanged).
//! * **Error estimate**: the embedded order-2 solution ŷ = y₀ + h Σ b̂ᵢ kᵢ with
//!   b̂₃ = 0 (b̂ fixed by Σ b̂ = 1, Σ b̂ c = 1/2), filtered as in Hairer's RADAU5,
//!   err = (I − hγJ)⁻¹ (y₁ − ŷ), so that stiff components do not reject every
//!   step. Positions are controlled, and a velocity error e_v counts as the
//!   position error h·e_v it makes over the step (RADAU5 weights its
//!   higher-index components by h the same way): modes the method damps away
//!   carry large velocities and no position error, and must not set the
//!   step. Step control h ← h · clamp(0.9 err^(−1/3), 0.2, 4), h ≤ `dt`.
//!
//! # Newton
//!
//! With y = (q, v), f = (v, a) and Jacobian blocks A_q = ∂a/∂q, A_v = ∂a/∂v
//! (finite differences of the constrained accelerations, so springs, fields
//! and the constraint forces' geometric stiffness are all in it), the Newton
//! system (I − hγ ∂f/∂y)(Δq, Δv) = (r_q, r_v) reduces to the n × n system
//! (I − hγ A_v − h²γ² A_q) Δv = r_v + hγ A_q r_q, Δq = r_q + hγ Δv.
//!
//! A mechanism (the world's [`Dynamics`]) solves it on the **sparse** constraint
//! factorisation instead: the saddle-point form with per-body stiffness blocks,
//! whose Schur complement J (M − K̃)⁻¹ Jᵀ has the pattern of J M⁻¹ Jᵀ
//! ([`sparse_newton`](super::sparse_newton): the derivation, what is
//! approximated and why the iteration still converges to the exact stage
//! solution). Systems without that model, and a mechanism with loads coupling
//! two bodies (a spring between them: stiffness the model leaves out) whose
//! sparse iteration fails with a fresh model (from then on, reported once in
//! the run's warnings), use the dense Jacobian above: finite differences
//! of the constrained accelerations on both sides, limited (`limited_slope`:
//! 4n + 1 evaluations) and a dense LU with
//! partial pivoting (n = 3 × bodies, at most [`MAX_DENSE_DOFS`], checked before
//! allocation). Either Jacobian is kept across steps and recomputed
//! after a rejected step or a slow Newton iteration (simplified Newton, Hairer
//! & Wanner §IV.8).
//!
//! Between substeps the state is projected onto the constraints
//! ([`Dynamics::project`]; module doc of [`dopri`](super::dopri), "Singular
//! passages"). On `scenes/linkage_loops.ron` with 0.01 s as the largest step
//! the drift of the substeps met the near-singular multipliers at the ladder's
//! flat passage (t ≈ 0.81–0.90 s): the Newton iteration failed there with fresh
//! Jacobians, the step collapsed to ~1e-7 s, the constraint forces did −0.14 J
//! of work and the ladder took the antiparallelogram branch (0.2–0.9 m off RK4
//! at 1–2 s). With the projection it follows RK4 (1.4e-5 m over 0.75–1.05 s,
//! `tests/robust_singular_passage.rs`).
//!
//! # The implicit midpoint rule's halving
//!
//! The midpoint rule is a fixed-step method, and it stopped at the same
//! passage (t = 0.81 s at its dt, 5e-4 s): the Newton updates stalled at
//! 10²–10³ × its tolerance (1e-10 relative), the rounding of accelerations
//! whose multipliers grow as 1/μ near the singular configuration. That part
//! of an update is ∝ h, so a smaller step gets through where the step is
//! small enough, and SDIRK3's step control had done just that.
//! `Implicit::midpoint_step` takes a failed step as two halves, recursively
//! (down to h/4096), joins the pieces by the projection and grows the piece
//! back where the step's halves align: `linkage_loops` halves 34 of its 4,000
//! steps (pieces down to h/512) and follows RK4 within 1.8e-4 m, the rule's
//! own second-order error. A stiff system makes it halve step after step, and
//! its tiny pieces are then no answer (the midpoint rule is not L-stable:
//! `heavy_load_chain` at dt = 1e-3 ran 3 s at 3 ms a step, 29 halvings a step,
//! with 1.7 % of m g L of spurious constraint work), so the run stops when
//! more than `MIDPOINT_HALVED_LIMIT` (24) of the last `MIDPOINT_WINDOW` (64) steps
//! were halved, naming the stiffness and SDIRK3.

use super::sparse_newton::SparseNewton;
use super::weights::{KindUnits, error_scales, position_kinds, velocity_kinds};
use super::{Dynamics, IntegratorError, State};

/// γ of SDIRK3: root of x³ − 3x² + 3x/2 − 1/6 in (1/6, 1/2).
pub const GAMMA: f64 = 0.435_866_521_508_459;

/// Largest state (3 × bodies) the dense Newton accepts: 3 × 2000 bodies
/// (three n × n matrices of f64: 864 MB).
pub const MAX_DENSE_DOFS: usize = 6000;

/// A Newton update that stops shrinking within this many tolerances is taken
/// as converged to the roundoff floor.
const STAGNATION_FLOOR: f64 = 100.0;

/// Newton iterations per stage before the step is retried smaller.
const MAX_NEWTON: usize = 10;

/// Halvings of an implicit midpoint step whose Newton iteration failed
/// before the run stops: pieces down to h/4096 (`scenes/linkage_loops.ron`'s
/// flat passage took pieces of h/512 at h = 5e-4).
pub(crate) const MIDPOINT_HALVINGS: u32 = 12;

/// Steps of the implicit midpoint rule over which the halvings are counted.
pub(crate) const MIDPOINT_WINDOW: u32 = 64;

/// More halved steps than this in the last [`MIDPOINT_WINDOW`] stop the run:
/// a singular passage is brief (`linkage_loops`: at most 11 of 64, over
/// t = 0.81 … 0.92 s), a stiff mode is there at every step
/// (`heavy_load_chain` at dt = 1e-3: 32 of 64 by step 100, 48–56 from step
/// 200 on, at 1.7 % of m g L of spurious constraint work over 3 s).
pub(crate) const MIDPOINT_HALVED_LIMIT: u32 = 24;

/// Counters of the implicit and adaptive integrators.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IntegratorStats {
    /// Accepted (sub)steps.
    pub steps: u64,
    /// Rejected steps (error too large or Newton not converging).
    pub rejected: u64,
    /// Newton iterations, all stages and steps.
    pub newton_iterations: u64,
    /// Jacobian evaluations (dense: each 4n + 1 acceleration evaluations;
    /// sparse: the per-body model, module [`super::sparse_newton`]).
    pub jacobians: u64,
    /// Acceleration evaluations.
    pub evaluations: u64,
}

/// The dense Newton machinery: Jacobian blocks, the LU of the iteration
/// matrix, scratch.
#[derive(Clone, Debug, Default)]
pub(crate) struct Newton {
    n: usize,
    aq: Vec<f64>,
    av: Vec<f64>,
    lu: Vec<f64>,
    piv: Vec<usize>,
    /// hγ of the current LU (NaN: none).
    lu_hg: f64,
    pub(crate) jacobian_valid: bool,
    a0: Vec<f64>,
    a1: Vec<f64>,
    a2: Vec<f64>,
    x: Vec<f64>,
    rhs: Vec<f64>,
    /// The sparse Newton (module doc).
    sparse: SparseNewton,
    /// Always the dense Jacobian (the reference).
    dense: bool,
    /// The current Jacobian is the sparse model.
    use_sparse: bool,
    /// The sparse iteration failed with a fresh model where loads couple
    /// bodies: the dense Jacobian from then on.
    dense_fallback: bool,
    /// A notice for the run's warnings (the first fall-back), taken once.
    pub(crate) notice: Option<String>,
    /// The units of the finite-difference steps' sizes (module
    /// [`weights`](super::weights)), set for the step before each Jacobian.
    pub(crate) units: KindUnits,
}

impl Newton {
    fn resize(&mut self, n: usize) {
        if self.n != n {
            self.n = n;
            self.aq = vec![0.0; n * n];
            self.av = vec![0.0; n * n];
            self.lu = vec![0.0; n * n];
            self.piv = vec![0; n];
            self.jacobian_valid = false;
            self.lu_hg = f64::NAN;
        }
        self.a0.resize(n, 0.0);
        self.a1.resize(n, 0.0);
        self.a2.resize(n, 0.0);
        self.x.resize(n, 0.0);
        self.rhs.resize(n, 0.0);
    }

    /// The sparse model at (t, q, v) where the dynamics has one and the sparse
    /// iteration has not failed, else the dense Jacobian (size checked first).
    fn jacobian(
        &mut self,
        dynamics: &mut impl Dynamics,
        t: f64,
        q: &[f64],
        v: &[f64],
        stats: &mut IntegratorStats,
    ) -> Result<(), IntegratorError> {
        self.sparse.model.units = self.units;
        if !self.dense && !self.dense_fallback && dynamics.linear_model(t, q, v, &mut self.sparse.model) {
            self.use_sparse = true;
            self.sparse.invalidate();
            stats.jacobians += 1;
            stats.evaluations += 1;
            self.jacobian_valid = true;
            return Ok(());
        }
        check_size(q.len())?;
        self.use_sparse = false;
        self.dense_jacobian(dynamics, t, q, v, stats);
        Ok(())
    }

    /// After a failure with a fresh sparse model: if loads couple two bodies
    /// (the stiffness the sparse model leaves out) and the size allows, the
    /// dense Jacobian from then on (true), with a notice for the run's
    /// warnings. Otherwise (e.g. near a singular configuration, where the dense
    /// iteration fails as well) the step is only retried smaller.
    fn fall_back_to_dense(&mut self, n: usize, method: &str, t: f64) -> bool {
        if !self.use_sparse || !self.sparse.model.coupling_loads || self.dense_fallback || n > MAX_DENSE_DOFS {
            return false;
        }
        self.dense_fallback = true;
        self.jacobian_valid = false;
        self.notice = Some(format!(
            "{method}: the Newton iteration on the sparse factorisation (per-body stiffness) did not converge at t = {t} s with loads coupling bodies; using the dense finite-difference Jacobian from then on"
        ));
        true
    }

    /// Always the dense Jacobian (true), or the sparse model where there is one.
    pub(crate) fn set_dense(&mut self, dense: bool) {
        self.dense = dense;
        self.jacobian_valid = false;
    }

    /// A_q, A_v at (t, q, v) by one-sided differences on both sides, limited
    /// ([`limited_slope`]); δ_j = √u · max(|x_j|, the size of its kind of
    /// component, 1 for angles and when all are 0).
    fn dense_jacobian(
        &mut self,
        dynamics: &mut impl Dynamics,
        t: f64,
        q: &[f64],
        v: &[f64],
        stats: &mut IntegratorStats,
    ) {
        let n = q.len();
        self.resize(n);
        let sqrt_u = f64::EPSILON.sqrt();
        dynamics.acceleration(t, q, v, &mut self.a0);
        let mut x = q.to_vec();
        let kind = position_kinds(q, self.units);
        let translation = kind[0];
        for j in 0..n {
            let d = sqrt_u * x[j].abs().max(kind[j % 3]);
            let saved = x[j];
            x[j] = saved + d;
            let forward = x[j] - saved; // the step actually taken
            dynamics.acceleration(t, &x, v, &mut self.a1);
            x[j] = saved - d;
            let backward = saved - x[j];
            dynamics.acceleration(t, &x, v, &mut self.a2);
            x[j] = saved;
            for i in 0..n {
                self.aq[i * n + j] =
                    limited_slope((self.a1[i] - self.a0[i]) / forward, (self.a0[i] - self.a2[i]) / backward);
            }
        }
        let mut y = v.to_vec();
        let kind = velocity_kinds(v, translation, self.units);
        for j in 0..n {
            let d = sqrt_u * y[j].abs().max(kind[j % 3]);
            let saved = y[j];
            y[j] = saved + d;
            let forward = y[j] - saved;
            dynamics.acceleration(t, q, &y, &mut self.a1);
            y[j] = saved - d;
            let backward = saved - y[j];
            dynamics.acceleration(t, q, &y, &mut self.a2);
            y[j] = saved;
            for i in 0..n {
                self.av[i * n + j] =
                    limited_slope((self.a1[i] - self.a0[i]) / forward, (self.a0[i] - self.a2[i]) / backward);
            }
        }
        stats.jacobians += 1;
        stats.evaluations += 1 + 4 * n as u64;
        self.jacobian_valid = true;
        self.lu_hg = f64::NAN;
    }

    /// Factors the Newton matrix for hγ (sparse: J W Jᵀ; dense: the LU of
    /// I − hγ A_v − (hγ)² A_q, partial pivoting). False if singular.
    fn factor(&mut self, hg: f64) -> bool {
        if self.use_sparse {
            return self.sparse.factor(hg);
        }
        if self.lu_hg == hg {
            return true;
        }
        let n = self.n;
        for i in 0..n {
            for j in 0..n {
                let id = if i == j { 1.0 } else { 0.0 };
                self.lu[i * n + j] = id - hg * self.av[i * n + j] - hg * hg * self.aq[i * n + j];
            }
        }
        for k in 0..n {
            let (mut p, mut best) = (k, self.lu[k * n + k].abs());
            for i in k + 1..n {
                let v = self.lu[i * n + k].abs();
                if v > best {
                    best = v;
                    p = i;
                }
            }
            if !(best > 0.0 && best.is_finite()) {
                self.lu_hg = f64::NAN;
                return false;
            }
            self.piv[k] = p;
            if p != k {
                for j in 0..n {
                    self.lu.swap(k * n + j, p * n + j);
                }
            }
            let pivot = self.lu[k * n + k];
            for i in k + 1..n {
                let l = self.lu[i * n + k] / pivot;
                self.lu[i * n + k] = l;
                if l != 0.0 {
                    for j in k + 1..n {
                        self.lu[i * n + j] -= l * self.lu[k * n + j];
                    }
                }
            }
        }
        self.lu_hg = hg;
        true
    }

    /// Solves (I − hγ ∂f/∂y)(Δq, Δv) = (r_q, r_v) in place (r_q → Δq, r_v → Δv).
    fn solve(&mut self, hg: f64, rq: &mut [f64], rv: &mut [f64]) {
        if self.use_sparse {
            self.sparse.solve(hg, rq, rv);
            return;
        }
        let n = self.n;
        // rhs = r_v + hγ A_q r_q
        for i in 0..n {
            let row = &self.aq[i * n..(i + 1) * n];
            self.rhs[i] = rv[i] + hg * row.iter().zip(rq.iter()).map(|(a, b)| a * b).sum::<f64>();
        }
        for k in 0..n {
            self.rhs.swap(k, self.piv[k]);
        }
        for i in 0..n {
            let s: f64 = (0..i).map(|j| self.lu[i * n + j] * self.rhs[j]).sum();
            self.rhs[i] -= s;
        }
        for i in (0..n).rev() {
            let s: f64 = (i + 1..n).map(|j| self.lu[i * n + j] * self.rhs[j]).sum();
            self.rhs[i] = (self.rhs[i] - s) / self.lu[i * n + i];
        }
        rv[..n].copy_from_slice(&self.rhs[..n]);
        for (q, v) in rq.iter_mut().zip(rv.iter()) {
            *q += hg * v;
        }
    }
}

/// The slope a finite-difference Jacobian takes from the one-sided
/// differences `forward` (f(x + δ) − f(x))/δ and `backward` (f(x) − f(x − δ))/δ:
/// the smaller in magnitude where they agree in sign, else 0 (the minmod
/// limiter).
///
/// Why both sides: a force that jumps where a body crosses a field region's
/// boundary (a wind band, a drag pool) makes the one-sided difference taken
/// across the boundary J/δ ≈ 7e7 × J/|x| — the Newton matrix is then that of
/// a spring no body has, and the iteration diverges (`fields.ron` under the
/// implicit midpoint rule stopped at its first step: the plate starts on the
/// wind band's edge). The jump is on one side only, so the other side's
/// difference is the force's slope there, and the smaller of the two is it.
/// On a smooth force both are the derivative to O(δ), as the forward
/// difference alone was; where they disagree in sign the derivative is
/// within O(δ f'') of 0. A Jacobian only shapes the Newton iteration, never
/// the stage it converges to (simplified Newton), so this changes no
/// solution — only whether and how fast the iteration gets there.
pub(crate) fn limited_slope(forward: f64, backward: f64) -> f64 {
    if forward.is_nan() || backward.is_nan() {
        // an evaluation failed: let the factorisation's finiteness test see it
        f64::NAN
    } else if forward.is_sign_positive() != backward.is_sign_positive() || forward == 0.0 || backward == 0.0 {
        0.0
    } else if forward.abs() <= backward.abs() {
        forward
    } else {
        backward
    }
}

/// RMS of already-scaled errors.
fn error_norm_unit(eq: &[f64], ev: &[f64]) -> f64 {
    let n = eq.len() + ev.len();
    let s: f64 = eq.iter().chain(ev).map(|e| e * e).sum();
    (s / n.max(1) as f64).sqrt()
}

/// SDIRK3 coefficients: (c, A lower triangle, b = last row, b̂).
fn tableau() -> ([f64; 3], [[f64; 3]; 3], [f64; 3]) {
    let g = GAMMA;
    let c2 = (1.0 + g) / 2.0;
    let b1 = -1.5 * g * g + 4.0 * g - 0.25;
    let b2 = 1.5 * g * g - 5.0 * g + 1.25;
    let a = [[g, 0.0, 0.0], [(1.0 - g) / 2.0, g, 0.0], [b1, b2, g]];
    // embedded order 2, b̂₃ = 0: b̂₁ + b̂₂ = 1, b̂₁ γ + b̂₂ c₂ = 1/2
    let bh2 = (0.5 - g) / (c2 - g);
    ([g, c2, 1.0], a, [1.0 - bh2, bh2, 0.0])
}

/// Scratch and state of the implicit integrators.
#[derive(Clone, Debug, Default)]
pub(crate) struct Implicit {
    pub(crate) newton: Newton,
    /// Step to try next (adaptive SDIRK); 0: none yet.
    pub(crate) h_next: f64,
    /// Largest step the Newton iteration is trusted with after it failed
    /// (half the failing step, raised ×1.5 after each fast step); 0: none.
    newton_cap: f64,
    /// The last stage slope of the previous accepted step is valid.
    pub(crate) have_slope: bool,
    /// Which of the last [`MIDPOINT_WINDOW`] implicit midpoint steps were
    /// halved (bit 0: the latest).
    midpoint_halved: u64,
    /// The state at the start of a halved midpoint step, restored if a
    /// piece fails at the smallest size (copied only once a step fails
    /// whole: no copy on a step that does not halve).
    midpoint_start: State,
    kq: [Vec<f64>; 3],
    kv: [Vec<f64>; 3],
    zq: Vec<f64>,
    zv: Vec<f64>,
    bq: Vec<f64>,
    bv: Vec<f64>,
    rq: Vec<f64>,
    rv: Vec<f64>,
    acc: Vec<f64>,
    scq: Vec<f64>,
    scv: Vec<f64>,
}

/// Why a stage solve stopped.
enum StageOutcome {
    Converged { power: f64 },
    Failed { iterations: usize, residual: f64 },
}

impl Implicit {
    fn resize(&mut self, n: usize) {
        for b in self.kq.iter_mut().chain(self.kv.iter_mut()) {
            b.resize(n, 0.0);
        }
        for b in [&mut self.zq, &mut self.zv, &mut self.bq, &mut self.bv, &mut self.rq, &mut self.rv, &mut self.acc] {
            b.resize(n, 0.0);
        }
    }

    /// Solves Z = base + hγ f(t, Z) for Z = (zq, zv) by simplified Newton
    /// starting from the current zq, zv. `tol_abs_q/v`: convergence when every
    /// |Δ| is below them.
    #[allow(clippy::too_many_arguments)]
    fn stage(
        &mut self,
        dynamics: &mut impl Dynamics,
        t: f64,
        hg: f64,
        tol_q: &[f64],
        tol_v: &[f64],
        stats: &mut IntegratorStats,
    ) -> StageOutcome {
        let n = self.zq.len();
        // the estimated distance of the iterate from the stage solution, and
        // the last update's size (both in units of the tolerances)
        let mut last = f64::INFINITY;
        let mut last_size = f64::INFINITY;
        // MAX_NEWTON updates, and one more evaluation at the last iterate
        for it in 0..=MAX_NEWTON {
            let power = dynamics.acceleration(t, &self.zq, &self.zv, &mut self.acc);
            stats.evaluations += 1;
            let mut finite = true;
            for i in 0..n {
                self.rq[i] = self.bq[i] + hg * self.zv[i] - self.zq[i];
                self.rv[i] = self.bv[i] + hg * self.acc[i] - self.zv[i];
                finite &= self.rq[i].is_finite() && self.rv[i].is_finite();
            }
            if !finite {
                return StageOutcome::Failed { iterations: it, residual: f64::INFINITY };
            }
            // converged when the iterate is estimated within tolerance: this
            // evaluation is then at the final Z (its power is the stage's)
            if it > 0 && last <= 1.0 {
                return StageOutcome::Converged { power };
            }
            if it == MAX_NEWTON {
                break;
            }
            self.newton.solve(hg, &mut self.rq, &mut self.rv);
            stats.newton_iterations += 1;
            let size = self
                .rq
                .iter()
                .zip(tol_q)
                .chain(self.rv.iter().zip(tol_v))
                .map(|(d, s)| (d / s).abs())
                .fold(0.0f64, f64::max);
            if !size.is_finite() {
                return StageOutcome::Failed { iterations: it + 1, residual: size };
            }
            let stalled = it > 1 && size > 0.9 * last_size && size > 1.0;
            if stalled {
                // Stagnation: within 100 × the tolerance it is the roundoff
                // floor of the accelerations (a stiff mechanism's are large):
                // take the iterate; farther out the iteration is diverging.
                if size > STAGNATION_FLOOR {
                    return StageOutcome::Failed { iterations: it + 1, residual: size };
                }
            }
            for i in 0..n {
                self.zq[i] += self.rq[i];
                self.zv[i] += self.rv[i];
            }
            // A linearly converging iteration with contraction θ is within
            // θ/(1 − θ)·|Δ| of its limit after the update Δ (Hairer & Wanner
            // §IV.8, eq. 8.10): from the second update on (θ measured in this
            // stage) stop on that estimate rather than on |Δ| itself, which
            // costs one more iteration and evaluation per stage when θ is
            // small. The first update must itself be within tolerance: a
            // contraction carried over from another stage is no measure of
            // this one (tried: the order test lost an order).
            let theta = size / last_size;
            let estimate = if it > 0 && theta < 0.5 { theta / (1.0 - theta) * size } else { size };
            last = if stalled { 0.0 } else { estimate };
            last_size = size;
        }
        StageOutcome::Failed { iterations: MAX_NEWTON, residual: last }
    }

    /// Implicit midpoint y₁ = y₀ + h f(t + h/2, Y), Y = (y₀ + y₁)/2, i.e.
    /// Y = y₀ + (h/2) f(Y) solved by Newton (the same machinery with hγ = h/2),
    /// from Y = y₀ + (h/2) f(Y_prev), the previous step's stage slope, when
    /// there is one (no reset since: `have_slope`): 2.2 Newton iterations a
    /// step instead of 3.0 on a pendulum at h = 1e-3.
    pub(crate) fn midpoint(
        &mut self,
        dynamics: &mut impl Dynamics,
        t: f64,
        h: f64,
        s: &mut State,
        tolerance: f64,
        stats: &mut IntegratorStats,
    ) -> Result<(), IntegratorError> {
        let n = s.q.len();
        self.resize(n);
        let hg = 0.5 * h;
        let mut tol_q = std::mem::take(&mut self.scq);
        let mut tol_v = std::mem::take(&mut self.scv);
        let units = KindUnits::new(dynamics.length_scale(), h);
        self.newton.units = units;
        error_scales([&s.q, &s.q], [&s.v, &s.v], units, tolerance, &mut tol_q, &mut tol_v);
        let mut outcome = StageOutcome::Failed { iterations: 0, residual: f64::INFINITY };
        for attempt in 0..3 {
            // a third attempt only on the dense Jacobian, after the sparse one failed fresh
            if attempt == 2 && !self.newton.fall_back_to_dense(n, "implicit midpoint", t) {
                break;
            }
            if attempt >= 1 || !self.newton.jacobian_valid {
                self.newton.jacobian(dynamics, t, &s.q, &s.v, stats)?;
            }
            if !self.newton.factor(hg) {
                continue;
            }
            self.bq.copy_from_slice(&s.q);
            self.bv.copy_from_slice(&s.v);
            if self.have_slope && attempt == 0 {
                // The previous step's stage slope f(Y) predicts this one's:
                // Z = y₀ + (h/2) f(Y_prev) is O(h²) from the stage solution
                // where Z = y₀ is O(h) from it, which saves the Newton
                // iteration's first one or two updates.
                for k in 0..n {
                    self.zq[k] = s.q[k] + hg * self.kq[2][k];
                    self.zv[k] = s.v[k] + hg * self.kv[2][k];
                }
            } else {
                self.zq.copy_from_slice(&s.q);
                self.zv.copy_from_slice(&s.v);
            }
            outcome = self.stage(dynamics, t + hg, hg, &tol_q, &tol_v, stats);
            if let StageOutcome::Converged { .. } = outcome {
                break;
            }
        }
        self.scq = tol_q;
        self.scv = tol_v;
        match outcome {
            StageOutcome::Converged { power } => {
                for i in 0..n {
                    // the stage slope f(Y) = (Z − y₀)/(h/2), the next step's predictor
                    self.kq[2][i] = (self.zq[i] - s.q[i]) / hg;
                    self.kv[2][i] = (self.zv[i] - s.v[i]) / hg;
                    s.q[i] = 2.0 * self.zq[i] - s.q[i];
                    s.v[i] = 2.0 * self.zv[i] - s.v[i];
                }
                self.have_slope = true;
                s.work += h * power;
                stats.steps += 1;
                Ok(())
            }
            StageOutcome::Failed { iterations, residual } => {
                self.newton.jacobian_valid = false;
                self.have_slope = false;
                Err(IntegratorError::NewtonNotConverged { method: "implicit midpoint", iterations, residual, step: h })
            }
        }
    }

    /// The implicit midpoint step from t to t + h, a fixed-step method that
    /// halves where its Newton iteration fails: the failed piece is taken
    /// as two halves (down to h / 2^[`MIDPOINT_HALVINGS`]), the pieces
    /// joined by the projection onto the constraints as the adaptive
    /// methods' substeps are, and the piece doubles again where the step's
    /// halves align. Each failure counts as a rejected step. Near a singular
    /// configuration the accelerations' rounding grows (multipliers ∝ 1/μ)
    /// faster than the Newton tolerance allows at h, and the update's part
    /// of it is ∝ h: `linkage_loops` at its flat passage (t ≈ 0.81–0.92 s)
    /// stopped here before; halved, it follows RK4's branch (module doc).
    /// A system that needs halving at many steps is stiff, not passing a
    /// singularity, and the run stops before the step
    /// ([`MIDPOINT_HALVED_LIMIT`]): the midpoint rule is not L-stable, and
    /// its tiny pieces there cost more than SDIRK3's steps and leave more
    /// spurious work.
    pub(crate) fn midpoint_step(
        &mut self,
        dynamics: &mut impl Dynamics,
        t: f64,
        h: f64,
        s: &mut State,
        tolerance: f64,
        stats: &mut IntegratorStats,
    ) -> Result<(), IntegratorError> {
        let halved = self.midpoint_halved.count_ones();
        if halved > MIDPOINT_HALVED_LIMIT {
            return Err(IntegratorError::TooStiff {
                method: "implicit midpoint",
                halved,
                window: MIDPOINT_WINDOW,
                step: h,
            });
        }
        // Positions along the step in units of its smallest piece, so that
        // the pieces' times are exact binary fractions of h.
        let whole = 1u64 << MIDPOINT_HALVINGS;
        let (mut done, mut piece) = (0u64, whole);
        let mut was_halved = false;
        while done < whole {
            let t0 = t + h * (done as f64 / whole as f64);
            let h_piece = h * (piece as f64 / whole as f64);
            match self.midpoint(dynamics, t0, h_piece, s, tolerance, stats) {
                Ok(()) => {
                    done += piece;
                    if done < whole {
                        // between pieces, back onto the constraints (the
                        // World projects after the step itself); the
                        // predictor's slope was at the unprojected state
                        if dynamics.project(t0 + h_piece, &mut s.q, &mut s.v) {
                            self.have_slope = false;
                        }
                        if done % (2 * piece) == 0 {
                            piece *= 2;
                        }
                    }
                }
                // `midpoint` leaves the state as it was when it fails
                Err(e @ IntegratorError::NewtonNotConverged { .. }) => {
                    stats.rejected += 1;
                    if !was_halved {
                        // the first failure is the whole step's: s is the start
                        self.midpoint_start.clone_from(s);
                        was_halved = true;
                    }
                    if piece == 1 {
                        // the step fails whole: back to its start, as an
                        // unhalved failure leaves it
                        s.clone_from(&self.midpoint_start);
                        return Err(e);
                    }
                    piece /= 2;
                }
                Err(e) => return Err(e),
            }
        }
        let window_mask = u64::MAX >> (64 - MIDPOINT_WINDOW);
        self.midpoint_halved = ((self.midpoint_halved << 1) | u64::from(was_halved)) & window_mask;
        Ok(())
    }

    /// Advances from t to t + `dt` with SDIRK3 steps of adaptive size ≤ `dt`.
    pub(crate) fn sdirk(
        &mut self,
        dynamics: &mut impl Dynamics,
        t: f64,
        dt: f64,
        s: &mut State,
        tolerance: f64,
        stats: &mut IntegratorStats,
    ) -> Result<(), IntegratorError> {
        let n = s.q.len();
        self.resize(n);
        let (c, a, bh) = tableau();
        let t_end = t + dt;
        let mut t = t;
        // the controller's step; the step taken is shorter only to land on t_end
        let mut h_ctrl = if self.h_next > 0.0 { self.h_next.min(dt) } else { dt };
        let h_min = dt * 1e-10;
        let mut tol_q = std::mem::take(&mut self.scq);
        let mut tol_v = std::mem::take(&mut self.scv);
        // Newton converges when |Δ| ≤ 1e-2 × the error tolerance (capped so a
        // loose tolerance still gives an accurate stage), as in RADAU5.
        let newton_tol = (1e-2 * tolerance).min(1e-6);
        let length = dynamics.length_scale();
        let (t_start, mut substeps) = (t, 0u64);
        let result = loop {
            let remaining = t_end - t;
            if remaining <= 1e-12 * dt {
                break Ok(());
            }
            let h = if h_ctrl >= remaining * (1.0 - 1e-12) { remaining } else { h_ctrl };
            if let Err(e) = super::count_substep(&mut substeps, "sdirk3", dt, t - t_start, h) {
                break Err(e);
            }
            let hg = GAMMA * h;
            let fresh = !self.newton.jacobian_valid;
            let units = KindUnits::new(length, h);
            self.newton.units = units;
            if fresh && let Err(e) = self.newton.jacobian(dynamics, t, &s.q, &s.v, stats) {
                break Err(e);
            }
            error_scales([&s.q, &s.q], [&s.v, &s.v], units, newton_tol, &mut tol_q, &mut tol_v);
            let mut failure = None;
            let mut powers = [0.0; 3];
            let iterations_before = stats.newton_iterations;
            if self.newton.factor(hg) {
                for i in 0..3 {
                    for k in 0..n {
                        let (mut bq, mut bv) = (s.q[k], s.v[k]);
                        for j in 0..i {
                            bq += h * a[i][j] * self.kq[j][k];
                            bv += h * a[i][j] * self.kv[j][k];
                        }
                        self.bq[k] = bq;
                        self.bv[k] = bv;
                        // predictor: the previous stage's slope
                        // (stage 1: the last stage of the previous step, the
                        // slope at its end point; stiffly accurate)
                        let (pq, pv) = match i {
                            0 if self.have_slope => (self.kq[2][k], self.kv[2][k]),
                            0 => (s.v[k], 0.0),
                            _ => (self.kq[i - 1][k], self.kv[i - 1][k]),
                        };
                        self.zq[k] = bq + hg * pq;
                        self.zv[k] = bv + hg * pv;
                    }
                    match self.stage(dynamics, t + c[i] * h, hg, &tol_q, &tol_v, stats) {
                        StageOutcome::Converged { power } => {
                            powers[i] = power;
                            for k in 0..n {
                                self.kq[i][k] = (self.zq[k] - self.bq[k]) / hg;
                                self.kv[i][k] = (self.zv[k] - self.bv[k]) / hg;
                            }
                        }
                        StageOutcome::Failed { iterations, residual } => {
                            failure = Some((iterations, residual));
                            break;
                        }
                    }
                }
            } else {
                failure = Some((0, f64::INFINITY));
            }
            if let Some((iterations, residual)) = failure {
                stats.rejected += 1;
                if fresh && self.newton.fall_back_to_dense(n, "sdirk3", t) {
                    continue; // the same step on the dense Jacobian
                }
                if !self.newton.jacobian_valid || h <= h_min {
                    break Err(IntegratorError::NewtonNotConverged { method: "sdirk3", iterations, residual, step: h });
                }
                self.newton.jacobian_valid = false;
                h_ctrl = 0.25 * h;
                self.newton_cap = 0.5 * h;
                continue;
            }
            // y₁ = Z₃ (stiffly accurate); e = y₁ − ŷ = h Σ (bᵢ − b̂ᵢ) kᵢ, filtered
            for k in 0..n {
                let mut eq = 0.0;
                let mut ev = 0.0;
                for i in 0..3 {
                    let w = a[2][i] - bh[i];
                    eq += h * w * self.kq[i][k];
                    ev += h * w * self.kv[i][k];
                }
                self.rq[k] = eq;
                self.rv[k] = ev;
            }
            self.newton.solve(hg, &mut self.rq, &mut self.rv);
            // Positions are controlled; a velocity error counts by the position
            // change it makes over the step, h·e_v (as RADAU5 weights its
            // higher-index components by h): the fast transverse modes that the
            // method damps away carry large velocities but no position error.
            error_scales([&s.q, &self.zq], [&s.v, &self.zv], units, tolerance, &mut tol_q, &mut tol_v);
            for (e, sc) in self.rv.iter_mut().zip(&tol_q) {
                *e *= h / sc;
            }
            for (e, sc) in self.rq.iter_mut().zip(&tol_q) {
                *e /= sc;
            }
            let err = error_norm_unit(&self.rq, &self.rv);
            let factor = if err > 0.0 { (0.9 * err.powf(-1.0 / 3.0)).clamp(0.2, 4.0) } else { 4.0 };
            if err <= 1.0 {
                s.q.copy_from_slice(&self.zq);
                s.v.copy_from_slice(&self.zv);
                s.work += h * (a[2][0] * powers[0] + a[2][1] * powers[1] + a[2][2] * powers[2]);
                t += h;
                stats.steps += 1;
                self.have_slope = true;
                // between substeps, back onto the constraints (module doc of
                // `dopri`, "Singular passages"); the last stage's slope stays
                // a predictor
                if t_end - t > 1e-12 * dt {
                    dynamics.project(t, &mut s.q, &mut s.v);
                }
                // simplified Newton: keep J while it converges fast
                let iterations = stats.newton_iterations - iterations_before;
                if iterations > 12 {
                    self.newton.jacobian_valid = false;
                }
                // After a Newton failure the step grows back only gradually
                // (×1.5 per step converging in ≤ 3 iterations a stage): growing
                // by the error estimate alone went straight back to the
                // failing step, and every other step was rejected.
                if self.newton_cap > 0.0 && iterations <= 9 {
                    self.newton_cap *= 1.5;
                    if self.newton_cap >= dt {
                        self.newton_cap = 0.0;
                    }
                }
                if h >= h_ctrl {
                    h_ctrl = (h * factor).min(dt);
                    if self.newton_cap > 0.0 {
                        h_ctrl = h_ctrl.min(self.newton_cap.max(h));
                    }
                }
            } else {
                stats.rejected += 1;
                self.newton.jacobian_valid = false;
                h_ctrl = h * factor.min(0.9);
                if h_ctrl <= h_min {
                    break Err(IntegratorError::StepTooSmall { method: "sdirk3", step: h_ctrl, error: err });
                }
            }
        };
        self.h_next = h_ctrl;
        self.scq = tol_q;
        self.scv = tol_v;
        result
    }
}

/// The dense Newton's size limit, checked before allocating.
fn check_size(n: usize) -> Result<(), IntegratorError> {
    if n > MAX_DENSE_DOFS {
        return Err(IntegratorError::TooLarge { dofs: n, max: MAX_DENSE_DOFS });
    }
    Ok(())
}
