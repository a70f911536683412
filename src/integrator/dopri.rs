//! Dormand–Prince 5(4) with step-size control and dense output (issue 10).
//!
//! The explicit embedded pair of Dormand & Prince (1980), as in Hairer,
//! Nørsett & Wanner, *Solving ODEs I*, §II.5 (code DOPRI5): seven stages, the
//! last evaluated at the new point and reused as the next step's first (FSAL,
//! six evaluations per accepted step), order 5 propagated, order 4 embedded
//! for the error estimate, step control h ← h · clamp(0.9 err^(−1/5), 0.2, 5)
//! with h ≤ `dt`. The error is measured in the same unit-free norm as the
//! implicit method (`weights::error_scales`).
//!
//! **Dense output** ([`DenseOutput`]): the order-4 continuous extension of
//! DOPRI5 (Hairer's `CONTD5`) gives the state anywhere inside the last step at
//! the cost of one vector operation; this is what a time-of-impact search
//! needs: `integrator.dense_output().eval(θ, &mut q, &mut v)` for
//! t = t₀ + θh, θ ∈ [0, 1].
//!
//! # Singular passages
//!
//! Between its substeps the method projects the state back onto the
//! constraints ([`Dynamics::project`]: positions, then velocities, as the
//! World does after each of its steps; not after the last substep, which the
//! World projects itself). The index-1 equations keep C̈ = 0, not C = 0, so
//! without it a step of 0.1 s carries the drift of all its substeps, and where
//! a mechanism passes a singular configuration that drift is amplified: the
//! exact multipliers grow as 1/ρ (ρ the smallest relative pivot, ∝ θ² at an
//! angle θ from the flat configuration) on the part of the right-hand side
//! that drift puts outside the limit's range, and the regularised ones near the
//! rank threshold do not hold that direction at all. On
//! `scenes/linkage_loops.ron` (issue 10), `--dt 0.1 --tolerance 1e-8`, the
//! constraint forces' power λ·(J v + bias) reached ~470 W in substeps of
//! 2–3 µs at t ≈ 0.8898 s, where a cell passes its flat configuration
//! (`top13`, 0.8896 s in the reference): −1.5e-2 J of work in all, and the
//! ladder left the parallelogram branch for the antiparallelogram one (rungs
//! tilted by up to 0.4 rad by 1.7 s), a motion the ideal mechanism cannot take
//! (at the crossing its velocity is tangent to the parallelogram branch only).
//! With the projection the same run stays on the branch (tilt 1e-15 rad,
//! energy within 1e-7 J) in 786 substeps to 1.3 s (18 rejected) instead of
//! 1,104 (163). The cost where nothing is
//! singular: one projection per substep and, when it moved the state, one
//! evaluation more (the FSAL slope was at the unprojected state).

use super::implicit::IntegratorStats;
use super::weights::{KindUnits, error_norm, error_scales};
use super::{Dynamics, IntegratorError, State, count_substep};

const C: [f64; 7] = [0.0, 1.0 / 5.0, 3.0 / 10.0, 4.0 / 5.0, 8.0 / 9.0, 1.0, 1.0];
const A: [[f64; 6]; 7] = [
    [0.0; 6],
    [1.0 / 5.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    [3.0 / 40.0, 9.0 / 40.0, 0.0, 0.0, 0.0, 0.0],
    [44.0 / 45.0, -56.0 / 15.0, 32.0 / 9.0, 0.0, 0.0, 0.0],
    [19372.0 / 6561.0, -25360.0 / 2187.0, 64448.0 / 6561.0, -212.0 / 729.0, 0.0, 0.0],
    [9017.0 / 3168.0, -355.0 / 33.0, 46732.0 / 5247.0, 49.0 / 176.0, -5103.0 / 18656.0, 0.0],
    [35.0 / 384.0, 0.0, 500.0 / 1113.0, 125.0 / 192.0, -2187.0 / 6784.0, 11.0 / 84.0],
];
/// b − b̂ (order 5 minus order 4).
const E: [f64; 7] =
    [71.0 / 57600.0, 0.0, -71.0 / 16695.0, 71.0 / 1920.0, -17253.0 / 339200.0, 22.0 / 525.0, -1.0 / 40.0];
/// Dense output coefficients (Hairer's CONTD5).
const D: [f64; 7] = [
    -12715105075.0 / 11282082432.0,
    0.0,
    87487479700.0 / 32700410799.0,
    -10690763975.0 / 1880347072.0,
    701980252875.0 / 199316789632.0,
    -1453857185.0 / 822651844.0,
    69997945.0 / 29380423.0,
];

/// The continuous extension of the last accepted DOPRI5 step: the state at
/// t₀ + θh for θ ∈ [0, 1], order 4 (its error is O(h⁵) per step).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DenseOutput {
    t0: f64,
    h: f64,
    /// The five coefficient vectors over y = (q, v), each of length 2n.
    r: [Vec<f64>; 5],
}

impl DenseOutput {
    /// Start of the step (s).
    pub fn t0(&self) -> f64 {
        self.t0
    }

    /// Length of the step (s).
    pub fn h(&self) -> f64 {
        self.h
    }

    /// Positions and velocities at t₀ + θh (θ in [0, 1]; outside, an
    /// extrapolation). `q` and `v` must have the state's length.
    pub fn eval(&self, theta: f64, q: &mut [f64], v: &mut [f64]) {
        let t1 = 1.0 - theta;
        for (i, out) in q.iter_mut().chain(v.iter_mut()).enumerate() {
            let r = |m: usize| self.r[m].get(i).copied().unwrap_or(0.0);
            *out = r(0) + theta * (r(1) + t1 * (r(2) + theta * (r(3) + t1 * r(4))));
        }
    }
}

/// Scratch of DOPRI5: stage slopes over y = (q, v) and the FSAL slope.
#[derive(Clone, Debug, Default)]
pub(crate) struct Dopri {
    /// Step to try next; 0: none yet.
    pub(crate) h_next: f64,
    /// Slopes kᵢ = f(stage i) over (q, v): kq = v-part, kv = a-part.
    kq: [Vec<f64>; 7],
    kv: [Vec<f64>; 7],
    power: [f64; 7],
    /// k₁ of the next step is valid (FSAL) for this state.
    fsal: bool,
    yq: Vec<f64>,
    yv: Vec<f64>,
    eq: Vec<f64>,
    ev: Vec<f64>,
    scq: Vec<f64>,
    scv: Vec<f64>,
    pub(crate) dense: DenseOutput,
}

impl Dopri {
    /// Forgets the FSAL slope (the state was changed from outside).
    pub(crate) fn reset(&mut self) {
        self.fsal = false;
    }

    /// Advances from t to t + `dt` with adaptive steps ≤ `dt`.
    pub(crate) fn advance(
        &mut self,
        dynamics: &mut impl Dynamics,
        t: f64,
        dt: f64,
        s: &mut State,
        tolerance: f64,
        stats: &mut IntegratorStats,
    ) -> Result<(), IntegratorError> {
        let n = s.q.len();
        for b in self.kq.iter_mut().chain(self.kv.iter_mut()) {
            b.resize(n, 0.0);
        }
        for b in [&mut self.yq, &mut self.yv, &mut self.eq, &mut self.ev] {
            b.resize(n, 0.0);
        }
        // The projection after each World step moves the state: the FSAL
        // slope of the previous call is not the slope at this state.
        self.fsal = false;
        let t_end = t + dt;
        let (t_start, mut t) = (t, t);
        let mut substeps = 0u64;
        let mut h_ctrl = if self.h_next > 0.0 { self.h_next.min(dt) } else { dt };
        let h_min = dt * 1e-10;
        let result = loop {
            let remaining = t_end - t;
            if remaining <= 1e-12 * dt {
                break Ok(());
            }
            let h = if h_ctrl >= remaining * (1.0 - 1e-12) { remaining } else { h_ctrl };
            if let Err(e) = count_substep(&mut substeps, "dopri5", dt, t - t_start, h) {
                break Err(e);
            }
            if !self.fsal {
                self.kq[0].copy_from_slice(&s.v);
                self.power[0] = dynamics.acceleration(t, &s.q, &s.v, &mut self.kv[0]);
                stats.evaluations += 1;
                self.fsal = true;
            }
            for i in 1..7 {
                for k in 0..n {
                    let (mut q, mut v) = (s.q[k], s.v[k]);
                    for j in 0..i {
                        q += h * A[i][j] * self.kq[j][k];
                        v += h * A[i][j] * self.kv[j][k];
                    }
                    self.yq[k] = q;
                    self.yv[k] = v;
                }
                let (kq, kv) = (&mut self.kq, &mut self.kv);
                kq[i].copy_from_slice(&self.yv);
                self.power[i] = dynamics.acceleration(t + C[i] * h, &self.yq, &self.yv, &mut kv[i]);
                stats.evaluations += 1;
            }
            // y₁ is the last stage's argument (A[6] = b); e = h Σ Eᵢ kᵢ
            for k in 0..n {
                let (mut eq, mut ev) = (0.0, 0.0);
                for i in 0..7 {
                    eq += h * E[i] * self.kq[i][k];
                    ev += h * E[i] * self.kv[i][k];
                }
                self.eq[k] = eq;
                self.ev[k] = ev;
            }
            let units = KindUnits::new(dynamics.length_scale(), h);
            error_scales([&s.q, &self.yq], [&s.v, &self.yv], units, tolerance, &mut self.scq, &mut self.scv);
            let err = error_norm(&self.eq, &self.ev, &self.scq, &self.scv);
            if !err.is_finite() {
                stats.rejected += 1;
                h_ctrl = 0.2 * h;
                self.fsal = false;
                if h_ctrl <= h_min {
                    break Err(IntegratorError::StepTooSmall { method: "dopri5", step: h_ctrl, error: err });
                }
                continue;
            }
            let factor = if err > 0.0 { (0.9 * err.powf(-0.2)).clamp(0.2, 5.0) } else { 5.0 };
            if err <= 1.0 {
                self.store_dense(t, h, s);
                s.work += h * (0..6).map(|i| A[6][i] * self.power[i]).sum::<f64>();
                s.q.copy_from_slice(&self.yq);
                s.v.copy_from_slice(&self.yv);
                // FSAL: k₇ is k₁ of the next step
                self.kq.swap(0, 6);
                self.kv.swap(0, 6);
                self.power[0] = self.power[6];
                t += h;
                stats.steps += 1;
                // between substeps, back onto the constraints (the World
                // projects after the last one itself); the FSAL slope was
                // at the unprojected state
                if t_end - t > 1e-12 * dt && dynamics.project(t, &mut s.q, &mut s.v) {
                    self.fsal = false;
                }
                if h >= h_ctrl {
                    h_ctrl = (h * factor).min(dt);
                }
            } else {
                stats.rejected += 1;
                h_ctrl = h * factor.min(0.9);
                if h_ctrl <= h_min {
                    break Err(IntegratorError::StepTooSmall { method: "dopri5", step: h_ctrl, error: err });
                }
            }
        };
        self.h_next = h_ctrl;
        result
    }

    /// CONTD5 coefficients of the step from (t, s) to (yq, yv).
    fn store_dense(&mut self, t: f64, h: f64, s: &State) {
        let n = s.q.len();
        let d = &mut self.dense;
        d.t0 = t;
        d.h = h;
        for r in d.r.iter_mut() {
            r.resize(2 * n, 0.0);
        }
        for i in 0..2 * n {
            let slope = |m: usize| -> f64 { if i < n { self.kq[m][i] } else { self.kv[m][i - n] } };
            let (y0, y1) = if i < n { (s.q[i], self.yq[i]) } else { (s.v[i - n], self.yv[i - n]) };
            let diff = y1 - y0;
            let bspl = h * slope(0) - diff;
            d.r[0][i] = y0;
            d.r[1][i] = diff;
            d.r[2][i] = bspl;
            d.r[3][i] = diff - h * slope(6) - bspl;
            d.r[4][i] = h * (0..7).map(|m| D[m] * slope(m)).sum::<f64>();
        }
    }
}
