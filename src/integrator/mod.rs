//! Time integrators for the second-order system q̇ = v, v̇ = a(t, q, v)
//! (seed 000's midpoint scheme, seed 003's RK4, Adams–Bashforth 4), and the
//! issue-10 methods: the stiffly accurate implicit SDIRK3 with step-size
//! control ([`implicit`]) and the adaptive Dormand–Prince 5(4) with dense
//! output ([`dopri`]).
//!
//! The integrators see only flat state vectors and a [`Dynamics`] that returns
//! accelerations, so constraint forces (solved inside `acceleration`) are
//! recomputed at every stage of the multi-stage methods. The work of
//! non-conservative forces is integrated alongside, as a third state component
//! `Ẇ = P(t, q, v)`, with the same weights, so energy balances hold to the
//! method's accuracy.

pub mod dopri;
pub mod implicit;
pub mod sparse_newton;
pub mod weights;

pub use dopri::DenseOutput;
pub use implicit::IntegratorStats;
pub use sparse_newton::LinearModel;

use serde::{Deserialize, Serialize};

/// Substeps (accepted and rejected) an adaptive method may try inside one
/// step before the run stops ([`IntegratorError::TooManySubsteps`]). The
/// shipped scenes take at most a few hundred (`heavy_load_chain` under
/// dopri5: 50 a step on average); a heavy-load chain whose gravity a fuzzed
/// scene set to 9.2e18 m/s² (a pendulum period of 2e-9 s at dt = 1e-3 s)
/// had sdirk3 grind through millions of substeps a step with nothing said.
pub const MAX_SUBSTEPS: u64 = 100_000;

/// Counts one substep (`h` long, `reached` into the step of `dt`) of an
/// adaptive method; past [`MAX_SUBSTEPS`] in one step, the error that stops
/// the run.
pub(crate) fn count_substep(
    substeps: &mut u64,
    method: &'static str,
    dt: f64,
    reached: f64,
    h: f64,
) -> Result<(), IntegratorError> {
    *substeps += 1;
    if *substeps > MAX_SUBSTEPS {
        return Err(IntegratorError::TooManySubsteps { method, substeps: MAX_SUBSTEPS, step: dt, reached, last: h });
    }
    Ok(())
}

/// Default relative tolerance of the adaptive methods.
pub const DEFAULT_TOLERANCE: f64 = 1e-6;

/// Accelerations of the system.
pub trait Dynamics {
    /// Writes `a = M⁻¹ (F(t, q, v) + Jᵀλ)` into `a` and returns the power of
    /// the non-conservative forces at that state.
    fn acceleration(&mut self, t: f64, q: &[f64], v: &[f64], a: &mut [f64]) -> f64;

    /// Fills `model` with the per-body linearisation at (t, q, v) that lets
    /// the implicit integrators' Newton iteration run on the sparse constraint
    /// factorisation ([`sparse_newton`]). Returns false (the default) where
    /// the system has none: the Newton iteration then uses a dense
    /// finite-difference Jacobian of [`acceleration`](Self::acceleration).
    fn linear_model(&mut self, _t: f64, _q: &[f64], _v: &[f64], _model: &mut LinearModel) -> bool {
        false
    }

    /// Brings (q, v) back onto the constraints (positions, then velocities)
    /// between the substeps of the adaptive methods, as the world does after
    /// each of its steps; returns whether it did (the state may then have
    /// moved). The default has no constraints to project onto: false.
    ///
    /// Why the adaptive methods need it: the index-1 equations keep C̈ = 0, not
    /// C = 0, so the drift of a 0.1 s step of many substeps is left in the
    /// stages, and where a mechanism passes a singular configuration the
    /// multipliers are ∝ 1/ρ (ρ the smallest relative pivot) of that drift:
    /// their power λ·(J v) did spurious work and deflected `linkage_loops`
    /// onto another branch (module doc of [`dopri`], "Singular passages").
    fn project(&mut self, _t: f64, _q: &mut [f64], _v: &mut [f64]) -> bool {
        false
    }

    /// A length of the system, in its own unit: what the implicit and
    /// adaptive methods' weights fall back to where the state gives no size
    /// (every body at the origin; with the step, the speed of a start from
    /// rest: [`weights`]). A world built from a scene gives the smallest
    /// dynamic body's bounding radius; the default is 1.
    fn length_scale(&self) -> f64 {
        1.0
    }
}

/// Positions, velocities and the accumulated non-conservative work.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct State {
    /// Generalised positions (x, y, φ per body).
    pub q: Vec<f64>,
    /// Generalised velocities (vx, vy, ω per body).
    pub v: Vec<f64>,
    /// Work done so far by non-conservative forces (J).
    pub work: f64,
}

/// The available integration methods.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Method {
    /// Explicit (forward) Euler: q₁ = q₀ + h v₀, v₁ = v₀ + h a₀. Order 1; gains
    /// energy on oscillators.
    Euler,
    /// Symplectic (semi-implicit) Euler: v₁ = v₀ + h a₀, q₁ = q₀ + h v₁.
    /// Order 1; bounded energy error on conservative systems.
    #[default]
    Symplectic,
    /// Implicit midpoint (seed 000): y₁ = y₀ + h f(t + h/2, (y₀ + y₁)/2),
    /// solved by Newton's method (issue 10; see [`implicit`]). Order 2,
    /// symplectic, A-stable but not L-stable (stiff modes are not damped).
    /// Fixed steps of `dt`, but a step whose Newton iteration fails is taken
    /// in halves (a singular passage), and halving at many steps stops the
    /// run (a stiff system: [`IntegratorError::TooStiff`]).
    Midpoint,
    /// Heun's method (explicit trapezoid). Order 2.
    Rk2,
    /// Classical Runge–Kutta (seed 003). Order 4.
    Rk4,
    /// Adams–Bashforth 4, started by three RK4 steps. Order 4, one
    /// acceleration evaluation per step.
    Ab4,
    /// Dormand–Prince 5(4), adaptive steps ≤ `dt` to the tolerance, dense
    /// output ([`dopri`]). Order 5.
    Dopri5,
    /// SDIRK3: 3-stage, L-stable, stiffly accurate implicit Runge–Kutta with
    /// Newton and adaptive steps ≤ `dt` ([`implicit`]). Order 3. For stiff
    /// mechanisms (light links under heavy loads, stiff springs).
    Sdirk3,
}

impl Method {
    /// All methods: the fixed-step ones in order of increasing accuracy, then
    /// the adaptive ones.
    pub const ALL: [Method; 8] = [
        Method::Euler,
        Method::Symplectic,
        Method::Midpoint,
        Method::Rk2,
        Method::Rk4,
        Method::Ab4,
        Method::Dopri5,
        Method::Sdirk3,
    ];

    /// Command-line name (`euler`, `symplectic`, `midpoint`, `rk2`, `rk4`,
    /// `ab4`, `dopri5`, `sdirk3`).
    pub fn name(self) -> &'static str {
        match self {
            Method::Euler => "euler",
            Method::Symplectic => "symplectic",
            Method::Midpoint => "midpoint",
            Method::Rk2 => "rk2",
            Method::Rk4 => "rk4",
            Method::Ab4 => "ab4",
            Method::Dopri5 => "dopri5",
            Method::Sdirk3 => "sdirk3",
        }
    }

    /// Order of accuracy p (global error ∝ hᵖ).
    pub fn order(self) -> u32 {
        match self {
            Method::Euler | Method::Symplectic => 1,
            Method::Midpoint | Method::Rk2 => 2,
            Method::Rk4 | Method::Ab4 => 4,
            Method::Dopri5 => 5,
            Method::Sdirk3 => 3,
        }
    }

    /// Whether the method chooses its own steps (≤ `dt`) to a tolerance.
    pub fn is_adaptive(self) -> bool {
        matches!(self, Method::Dopri5 | Method::Sdirk3)
    }

    /// Explicit with fixed steps: nothing bounds its step by the system's
    /// stiffness, so past its stability limit it blows up (the implicit and
    /// adaptive methods name their own failures instead).
    pub fn is_explicit_fixed_step(self) -> bool {
        !self.is_adaptive() && self != Method::Midpoint
    }
}

impl std::str::FromStr for Method {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Method::ALL.into_iter().find(|m| m.name().eq_ignore_ascii_case(s)).ok_or_else(|| {
            format!(
                "unknown integrator '{s}' (expected one of: euler, symplectic, midpoint, rk2, rk4, ab4, dopri5, sdirk3)"
            )
        })
    }
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a step could not be taken.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum IntegratorError {
    /// A Newton iteration of an implicit method did not converge.
    #[error(
        "{method}: Newton iteration did not converge in {iterations} iterations (last update {residual:e} × its tolerance) at step size {step:e} s; the step is too large for this system's stiffness or the motion is singular there{}",
        if *method == "implicit midpoint" { " (the step was halved down to that size; sdirk3 chooses its own step)" } else { "" }
    )]
    NewtonNotConverged {
        /// The method.
        method: &'static str,
        /// Iterations made.
        iterations: usize,
        /// Size of the last Newton update relative to its tolerance.
        residual: f64,
        /// The step size tried (s).
        step: f64,
    },
    /// A fixed-step implicit method had to halve too many of its recent
    /// steps for its Newton iteration to converge: the system is stiff at
    /// this step, not passing a singular configuration.
    #[error(
        "{method}: {halved} of the last {window} steps of {step:e} s were halved for the Newton iteration to converge: the step is too large for this system's stiffness (a singular passage halves a few; sdirk3 chooses its own step)"
    )]
    TooStiff {
        /// The method.
        method: &'static str,
        /// Steps halved among the last `window`.
        halved: u32,
        /// Steps counted.
        window: u32,
        /// The step size (s).
        step: f64,
    },
    /// The step-size control shrank the step below 1e-10 × dt.
    #[error(
        "{method}: step size fell to {step:e} s with the error still {error:e} × the tolerance; the motion is singular here or the tolerance is out of reach"
    )]
    StepTooSmall {
        /// The method.
        method: &'static str,
        /// The step size the control asked for (s).
        step: f64,
        /// The error estimate relative to the tolerance.
        error: f64,
    },
    /// An adaptive method tried more than [`MAX_SUBSTEPS`] substeps inside
    /// one step and had not finished it.
    #[error(
        "{method}: {substeps} substeps inside one step of {step:e} s reached only {reached:e} s of it (the last substep {last:e} s): the motion is that much faster than the step{}",
        if *method == "dopri5" { "; sdirk3 if the system is stiff, or a smaller dt" } else { "; a smaller dt, or a scene whose forces give motions on the step's time scale" }
    )]
    TooManySubsteps {
        /// The method.
        method: &'static str,
        /// Substeps tried (accepted and rejected).
        substeps: u64,
        /// The step (s).
        step: f64,
        /// How far into the step they reached (s).
        reached: f64,
        /// The last substep tried (s).
        last: f64,
    },
    /// The dense Newton of the implicit methods is limited in size.
    #[error("the implicit integrators' dense Newton handles at most {max} degrees of freedom ({} bodies); this world has {dofs}: use rk4 or dopri5", max / 3)]
    TooLarge {
        /// Degrees of freedom of the world (3 per body).
        dofs: usize,
        /// The limit.
        max: usize,
    },
}

/// One derivative sample f = (q̇, v̇, Ẇ) = (v, a, P), kept by Adams–Bashforth.
#[derive(Clone, Debug, Default)]
struct Derivative {
    v: Vec<f64>,
    a: Vec<f64>,
    power: f64,
}

/// An integrator with its scratch buffers (allocated once, reused every step)
/// and, for AB4, its derivative history.
#[derive(Clone, Debug)]
pub struct Integrator {
    method: Method,
    /// Relative error tolerance of the adaptive methods (per step, in the
    /// unit-free norm of [`weights`]); infinite: fixed steps of
    /// `dt`. Also the Newton tolerance of the implicit midpoint rule (× 1e-4, within 1e-11 … 1e-8).
    pub tolerance: f64,
    stats: IntegratorStats,
    implicit: implicit::Implicit,
    dopri: dopri::Dopri,
    stage: [Vec<f64>; 4],
    stage_v: [Vec<f64>; 4],
    q_tmp: Vec<f64>,
    v_tmp: Vec<f64>,
    /// AB4 history, newest first; valid for step size `history_h`.
    history: std::collections::VecDeque<Derivative>,
    history_h: f64,
}

impl Integrator {
    /// An integrator using `method`.
    pub fn new(method: Method) -> Self {
        Self {
            method,
            tolerance: DEFAULT_TOLERANCE,
            stats: IntegratorStats::default(),
            implicit: Default::default(),
            dopri: Default::default(),
            stage: Default::default(),
            stage_v: Default::default(),
            q_tmp: Vec::new(),
            v_tmp: Vec::new(),
            history: Default::default(),
            history_h: 0.0,
        }
    }

    /// The method in use.
    pub fn method(&self) -> Method {
        self.method
    }

    /// Forgets the multistep history (after an impulse or a change of state
    /// from outside, the past derivatives no longer describe the motion), the
    /// FSAL slope and the Newton Jacobian.
    pub fn reset(&mut self) {
        self.history.clear();
        self.dopri.reset();
        self.implicit.newton.jacobian_valid = false;
        self.implicit.have_slope = false;
    }

    /// Makes the implicit methods' Newton iteration use the dense
    /// finite-difference Jacobian even where the dynamics offers the sparse
    /// model (the reference the sparse iteration is tested against).
    pub fn set_dense_newton(&mut self, dense: bool) {
        self.implicit.newton.set_dense(dense);
    }

    /// A notice the integrator has for the run's warnings since the last call
    /// (the implicit methods' fall-back to the dense Newton), once.
    pub fn take_notice(&mut self) -> Option<String> {
        self.implicit.newton.notice.take()
    }

    /// Steps, rejections, Newton iterations and evaluations so far (the
    /// adaptive and implicit methods; the others count steps only).
    pub fn stats(&self) -> IntegratorStats {
        self.stats
    }

    /// The continuous extension of the last DOPRI5 step (None for the other
    /// methods or before the first step).
    pub fn dense_output(&self) -> Option<&DenseOutput> {
        (self.method == Method::Dopri5 && self.stats.steps > 0).then_some(&self.dopri.dense)
    }

    /// Advances `state` from `t` to `t + h`.
    pub fn step(
        &mut self,
        dynamics: &mut impl Dynamics,
        t: f64,
        h: f64,
        state: &mut State,
    ) -> Result<(), IntegratorError> {
        let n = state.q.len();
        for buf in self.stage.iter_mut().chain(self.stage_v.iter_mut()) {
            buf.resize(n, 0.0);
        }
        self.q_tmp.resize(n, 0.0);
        self.v_tmp.resize(n, 0.0);
        match self.method {
            Method::Euler => {
                let power = dynamics.acceleration(t, &state.q, &state.v, &mut self.stage[0]);
                for i in 0..n {
                    state.q[i] += h * state.v[i];
                    state.v[i] += h * self.stage[0][i];
                }
                state.work += h * power;
            }
            Method::Symplectic => {
                let power = dynamics.acceleration(t, &state.q, &state.v, &mut self.stage[0]);
                for i in 0..n {
                    state.v[i] += h * self.stage[0][i];
                    state.q[i] += h * state.v[i];
                }
                state.work += h * power;
            }
            Method::Midpoint => {
                let tol = (self.tolerance * 1e-4).clamp(1e-11, 1e-8);
                return self.implicit.midpoint_step(dynamics, t, h, state, tol, &mut self.stats);
            }
            Method::Rk2 => self.rk2(dynamics, t, h, state),
            Method::Rk4 => self.rk4(dynamics, t, h, state),
            Method::Ab4 => self.ab4(dynamics, t, h, state),
            Method::Dopri5 => return self.dopri.advance(dynamics, t, h, state, self.tolerance, &mut self.stats),
            Method::Sdirk3 => return self.implicit.sdirk(dynamics, t, h, state, self.tolerance, &mut self.stats),
        }
        self.stats.steps += 1;
        Ok(())
    }

    /// Heun: k₁ = f(t, y₀), k₂ = f(t + h, y₀ + h k₁), y₁ = y₀ + h/2 (k₁ + k₂).
    fn rk2(&mut self, dynamics: &mut impl Dynamics, t: f64, h: f64, s: &mut State) {
        let n = s.q.len();
        let p1 = dynamics.acceleration(t, &s.q, &s.v, &mut self.stage[0]);
        for i in 0..n {
            self.q_tmp[i] = s.q[i] + h * s.v[i];
            self.v_tmp[i] = s.v[i] + h * self.stage[0][i];
        }
        let p2 = dynamics.acceleration(t + h, &self.q_tmp, &self.v_tmp, &mut self.stage[1]);
        for i in 0..n {
            s.q[i] += 0.5 * h * (s.v[i] + self.v_tmp[i]);
            s.v[i] += 0.5 * h * (self.stage[0][i] + self.stage[1][i]);
        }
        s.work += 0.5 * h * (p1 + p2);
    }

    /// Classical RK4 on (q, v, W).
    fn rk4(&mut self, dynamics: &mut impl Dynamics, t: f64, h: f64, s: &mut State) {
        let n = s.q.len();
        let mut power = [0.0; 4];
        self.stage_v[0].copy_from_slice(&s.v);
        power[0] = dynamics.acceleration(t, &s.q, &s.v, &mut self.stage[0]);
        for k in 1..4 {
            let c = if k == 3 { h } else { 0.5 * h };
            for i in 0..n {
                self.q_tmp[i] = s.q[i] + c * self.stage_v[k - 1][i];
                self.v_tmp[i] = s.v[i] + c * self.stage[k - 1][i];
            }
            self.stage_v[k].copy_from_slice(&self.v_tmp);
            power[k] = dynamics.acceleration(t + c, &self.q_tmp, &self.v_tmp, &mut self.stage[k]);
        }
        let w = h / 6.0;
        for i in 0..n {
            s.q[i] +=
                w * (self.stage_v[0][i] + 2.0 * self.stage_v[1][i] + 2.0 * self.stage_v[2][i] + self.stage_v[3][i]);
            s.v[i] += w * (self.stage[0][i] + 2.0 * self.stage[1][i] + 2.0 * self.stage[2][i] + self.stage[3][i]);
        }
        s.work += w * (power[0] + 2.0 * power[1] + 2.0 * power[2] + power[3]);
    }

    /// Adams–Bashforth 4: y₁ = y₀ + h/24 (55 f₀ − 59 f₋₁ + 37 f₋₂ − 9 f₋₃).
    /// The first three steps (or after `reset` or a change of h) are RK4.
    fn ab4(&mut self, dynamics: &mut impl Dynamics, t: f64, h: f64, s: &mut State) {
        if self.history_h != h {
            self.history.clear();
            self.history_h = h;
        }
        let mut f0 =
            if self.history.len() == 4 { self.history.pop_back().unwrap_or_default() } else { Derivative::default() };
        f0.v.clear();
        f0.v.extend_from_slice(&s.v);
        f0.a.resize(s.v.len(), 0.0);
        f0.power = dynamics.acceleration(t, &s.q, &s.v, &mut f0.a);
        self.history.push_front(f0);
        if self.history.len() < 4 {
            self.rk4(dynamics, t, h, s);
            return;
        }
        let [c0, c1, c2, c3] = [55.0, -59.0, 37.0, -9.0].map(|c| c * h / 24.0);
        let (f0, f1, f2, f3) = (&self.history[0], &self.history[1], &self.history[2], &self.history[3]);
        for i in 0..s.q.len() {
            s.q[i] += c0 * f0.v[i] + c1 * f1.v[i] + c2 * f2.v[i] + c3 * f3.v[i];
            s.v[i] += c0 * f0.a[i] + c1 * f1.a[i] + c2 * f2.a[i] + c3 * f3.a[i];
        }
        s.work += c0 * f0.power + c1 * f1.power + c2 * f2.power + c3 * f3.power;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Harmonic oscillator ẍ = −x with exact solution cos t: each method's
    /// global error at t = 1 shrinks by 2ᵖ when h halves (ratio within 15 %).
    struct Oscillator;
    impl Dynamics for Oscillator {
        fn acceleration(&mut self, _t: f64, q: &[f64], _v: &[f64], a: &mut [f64]) -> f64 {
            a[0] = -q[0];
            0.0
        }
    }

    fn error(method: Method, steps: usize) -> f64 {
        let mut s = State { q: vec![1.0], v: vec![0.0], work: 0.0 };
        let mut integ = Integrator::new(method);
        integ.tolerance = f64::INFINITY; // fixed steps: the order is measured in h
        let h = 1.0 / steps as f64;
        for k in 0..steps {
            integ.step(&mut Oscillator, k as f64 * h, h, &mut s).unwrap();
        }
        (s.q[0] - 1f64.cos()).abs()
    }

    #[test]
    fn orders_on_the_harmonic_oscillator() {
        for m in Method::ALL {
            let steps = match m.order() {
                5 => 16,
                4 => 64,
                _ => 512,
            };
            let p = (error(m, steps) / error(m, 2 * steps)).log2();
            assert!((p - m.order() as f64).abs() < 0.15, "{m}: measured order {p}");
        }
    }
}
