//! Drift correction of the constraint system (seed 003 §IV-C/D/E): the
//! chord-Newton projection of the positions, the mass-weighted projection of
//! the velocities and impulses, and the bounded Newton step of inverse
//! kinematics.

use super::{ConstraintSystem, Scene, Stabilization, larger};
use crate::solver::{SolverError, SparseJacobian};

/// Halvings of a projection step tried before giving up on it.
const MAX_BACKTRACKS: usize = 4;

/// A chord iteration of the position projection that runs on a held factor
/// (not one of this J) must shrink max |C| at least this much, or the
/// projection factors A at the current positions and goes on with that.
/// The held factor is normally the last RK stage's, at positions O(h²) from
/// the end of the step: its iterations contract by ~1e-5, far below this.
const HELD_FACTOR_CONTRACTION: f64 = 1e-2;

impl ConstraintSystem {
    /// Largest |C| over the position rows of the last assembly.
    pub fn max_error(&self) -> f64 {
        let (in_angle, in_length) = self.max_errors_by_unit();
        larger(in_angle, in_length)
    }

    /// max |C| made unit-free: rows in length (their Jacobian moves a body's
    /// centre) over `length`, rows in angle (it only turns bodies) as they
    /// are. Equal to [`max_error`](Self::max_error) at `length` = 1.
    pub(super) fn max_unit_free_error(&self, length: f64) -> f64 {
        if length > 0.0 {
            // rounding is monotonic, so for length > 0 the largest of the
            // quotients |C|/length is the quotient of the largest |C|: one
            // division instead of one per row, the same value bit for bit
            // (issue 10: the per-row divisions and the chain of `f64::max`
            // through memory were ≈ 2 % of a small linkage's step)
            let (in_angle, in_length) = self.max_errors_by_unit();
            return larger(in_angle, in_length / length);
        }
        self.blocks
            .iter()
            .flat_map(|b| {
                (0..b.rows).filter(|&r| b.holonomic[r]).map(move |r| {
                    let angle_row = b.jac.iter().all(|slot| slot[r][0] == 0.0 && slot[r][1] == 0.0);
                    if angle_row { b.value[r].abs() } else { b.value[r].abs() / length }
                })
            })
            .fold(0.0, f64::max)
    }

    /// (max |C| over the position rows in angle, max |C| over those in
    /// length), each 0 when there are none; rows whose C is NaN are passed
    /// over, as `f64::max` passes them over.
    fn max_errors_by_unit(&self) -> (f64, f64) {
        // one running maximum per row index and unit: independent chains (the
        // maximum does not depend on the order in which it is taken)
        let mut in_angle = [0.0; 3];
        let mut in_length = [0.0; 3];
        for b in &self.blocks {
            for r in 0..b.rows.min(3) {
                if !b.holonomic[r] {
                    continue;
                }
                let c = b.value[r].abs();
                if b.jac.iter().all(|slot| slot[r][0] == 0.0 && slot[r][1] == 0.0) {
                    in_angle[r] = larger(in_angle[r], c);
                } else {
                    in_length[r] = larger(in_length[r], c);
                }
            }
        }
        let fold = |m: [f64; 3]| larger(larger(m[0], m[1]), m[2]);
        (fold(in_angle), fold(in_length))
    }

    /// Newton–Raphson projection of `q` onto C(q, t) = 0 (seed 003 §IV-C):
    /// q ← q + M⁻¹J₀ᵀμ with A μ = −C, J₀ the Jacobian at the start of the
    /// projection and one factorisation of A for all iterations (a chord
    /// Newton: linear convergence with a tiny rate). Velocity rows take a zero
    /// right-hand side: the correction does not slip. Stops at the unit-free
    /// error of [`Stabilization::tolerance`]; returns the final max |C|.
    ///
    /// The factorisation is the one the solver already holds when it is of a
    /// J with the same pattern (after an integrator step: the last stage's, at
    /// positions O(h²) from q, so A differs by O(h²) relative and each
    /// iteration still contracts |C| by that much; issue 10: this saves one
    /// of the five factorisations of an RK4 step). Should an iteration on the
    /// held factor not shrink |C| by `HELD_FACTOR_CONTRACTION` (1e-2), A is factored
    /// at the current positions and the projection goes on with that one. The
    /// direction of the correction is always J₀ᵀ at the current positions, so
    /// the step stays the mass-weighted minimal-norm correction to first order
    /// (weighted by the raised masses of module `raised` where they are used:
    /// any positive metric projects onto C = 0).
    ///
    /// On return (Ok) the system is assembled at the final `q` (and `t`, `v`),
    /// so [`velocity_correction`](Self::velocity_correction) can follow
    /// without another assembly.
    pub fn project_positions(
        &mut self,
        scene: Scene,
        t: f64,
        q: &mut [f64],
        v: &[f64],
        settings: &Stabilization,
    ) -> Result<f64, SolverError> {
        self.assemble(scene, t, q, v)?;
        let length = settings.length_scale;
        let mut err = self.max_unit_free_error(length);
        if err <= settings.tolerance {
            return Ok(self.max_error());
        }
        let mut on_held_factor = self.held_factor == Some(self.pattern());
        if !on_held_factor {
            self.factor_assembled()?;
        }
        // J at the start of the projection (chord Newton), in a kept buffer
        let mut jac0 = std::mem::take(&mut self.scratch_jac);
        jac0.copy_from(&self.jac);
        let mut dq = std::mem::take(&mut self.scratch_dq);
        let mut q0 = std::mem::take(&mut self.scratch_q);
        let result = (|| {
            let mut iterations = 0;
            while iterations < settings.max_iterations {
                iterations += 1;
                let before = err;
                self.fill_rhs_from_values();
                self.lambda.resize(self.rhs.len(), 0.0);
                if let Err(e) = self.solver.solve_factored(&self.rhs, &mut self.lambda) {
                    if !on_held_factor {
                        return Err(e);
                    }
                    // the held factor does not fit this J after all
                    self.factor_assembled()?;
                    jac0.copy_from(&self.jac);
                    on_held_factor = false;
                    continue;
                }
                dq.clear();
                dq.resize(q.len(), 0.0);
                self.correct(&jac0, &mut dq)?;
                q0.clear();
                q0.extend_from_slice(q);
                // The error must never grow (issue 10): a regularised or
                // far-from-solution step is halved until it decreases |C|, and
                // if none does, q is left where it was.
                let mut step = 1.0;
                let mut improved = false;
                for _ in 0..MAX_BACKTRACKS {
                    for ((qi, q0i), d) in q.iter_mut().zip(&q0).zip(&dq) {
                        *qi = q0i + step * d;
                    }
                    self.assemble(scene, t, q, v)?;
                    let new_err = self.max_unit_free_error(length);
                    if new_err < err {
                        err = new_err;
                        improved = true;
                        break;
                    }
                    step *= 0.5;
                }
                if !improved {
                    q.copy_from_slice(&q0);
                    self.assemble(scene, t, q, v)?;
                }
                if err <= settings.tolerance {
                    break;
                }
                if on_held_factor && err > HELD_FACTOR_CONTRACTION * before {
                    // too slow on the held factor: factor A at these positions
                    self.factor_assembled()?;
                    jac0.copy_from(&self.jac);
                    on_held_factor = false;
                    continue;
                }
                if !improved {
                    break;
                }
            }
            Ok(err)
        })();
        self.scratch_dq = dq;
        self.scratch_q = q0;
        self.scratch_jac = jac0;
        // Reported in the rows' own units (m or rad); the stop above is unit-free.
        result.map(|err| if length == 1.0 { err } else { self.max_error() })
    }

    /// The drift projection of a state: `q` onto the position constraints
    /// ([`project_positions`](Self::project_positions)), then `v` onto the
    /// velocity constraints at the projected `q`, with the J that projection
    /// left assembled (J and the velocity bias depend on q and t only, so no
    /// assembly of its own). Returns the largest position error before the
    /// projection. What the world does after each step and the adaptive
    /// integrators between their substeps.
    pub fn project_state(
        &mut self,
        scene: Scene,
        t: f64,
        q: &mut [f64],
        v: &mut [f64],
        settings: &Stabilization,
    ) -> Result<f64, SolverError> {
        let err = self.project_positions(scene, t, q, v, settings)?;
        self.velocity_correction(scene, v, 1.0)?;
        Ok(err)
    }

    /// Projects `v` onto J v + bias = 0 at the current positions (seed 003
    /// §IV-D with factor 1): v ← v + M⁻¹Jᵀμ, A μ = −(J v + bias). This is the
    /// M-orthogonal projection: it removes the least kinetic energy.
    pub fn project_velocities(&mut self, scene: Scene, t: f64, q: &[f64], v: &mut [f64]) -> Result<(), SolverError> {
        self.assemble(scene, t, q, v)?;
        self.velocity_correction(scene, v, 1.0)
    }

    /// Applies the impulsive velocity correction v ← v − factor·M⁻¹Jᵀ A⁻¹ (J v +
    /// bias) at the assembled state: factor 1 stops the motion along the
    /// constrained directions (plastic), 2 reverses it (elastic).
    pub fn velocity_correction(&mut self, scene: Scene, v: &mut [f64], factor: f64) -> Result<(), SolverError> {
        let n = self.jac.n_rows();
        self.rhs.resize(n, 0.0);
        self.jac.mul(v, &mut self.rhs)?;
        let mut row = 0;
        for block in &self.blocks {
            for r in 0..block.rows {
                self.rhs[row] = -factor * (self.rhs[row] + block.velocity_bias[r]);
                row += 1;
            }
        }
        self.lambda.resize(n, 0.0);
        if self.metric_raised {
            // M Δv = Jᵀμ, J Δv = rhs with the true inertias (module `raised`)
            self.held_factor = None;
            self.solver.factor_held(&self.jac)?;
            self.held_factor = Some(self.pattern());
            self.scratch.clear();
            self.scratch.resize(v.len(), 0.0);
            let outcome = self.raised.solve(
                &mut self.solver,
                &self.jac,
                &self.inv_mass,
                &self.metric_inv_mass,
                &self.scratch,
                &self.rhs,
                &mut self.lambda,
                &mut self.raised_x,
            )?;
            if outcome.converged {
                for (vi, dv) in v.iter_mut().zip(&self.raised_x) {
                    *vi += dv;
                }
                return Ok(());
            }
            self.lower_metric(scene);
        }
        self.held_factor = None;
        self.solver.solve_held(&self.jac, &self.rhs, &mut self.lambda)?;
        self.held_factor = Some(self.pattern());
        let jac = std::mem::take(&mut self.jac);
        let result = self.correct(&jac, v);
        self.jac = jac;
        result
    }

    /// One full Newton step on the position rows at `q` (seed 003 §IV-E):
    /// assemble, factor, solve A μ = −C and move q by Δq = M⁻¹Jᵀμ, the
    /// mass-weighted minimal-norm correction (M the raised masses of module
    /// `raised` where they are used). The rows of constraint `target`
    /// ask for at most `max_step` (their −C is shortened to that length): far
    /// from the goal the walk is bounded, near it the step is Newton's own,
    /// while every other constraint is corrected in full at each step.
    /// Returns (max |C| before the step, |C| of the target rows).
    pub fn newton_step(
        &mut self,
        scene: Scene,
        t: f64,
        q: &mut [f64],
        v: &[f64],
        target: usize,
        max_step: f64,
    ) -> Result<(f64, f64), SolverError> {
        self.assemble(scene, t, q, v)?;
        let err = self.max_error();
        self.factor_assembled()?;
        self.fill_rhs_from_values();
        let offset: usize = self.blocks[..target].iter().map(|b| b.rows).sum();
        let rows = self.blocks[target].rows;
        let goal = &mut self.rhs[offset..offset + rows];
        let distance = goal.iter().map(|c| c * c).sum::<f64>().sqrt();
        if distance > max_step {
            goal.iter_mut().for_each(|c| *c *= max_step / distance);
        }
        self.lambda.resize(self.rhs.len(), 0.0);
        self.solver.solve_factored(&self.rhs, &mut self.lambda)?;
        // Near a singular configuration (a limb stretched straight) the
        // minimal-norm step can turn bodies wildly: no body point may move
        // more than twice the target's step (|Δx| + |Δφ|·r per body).
        let mut dq = std::mem::take(&mut self.scratch_dq);
        dq.clear();
        dq.resize(q.len(), 0.0);
        let jac = std::mem::take(&mut self.jac);
        let result = self.correct(&jac, &mut dq);
        self.jac = jac;
        result?;
        let largest = scene
            .bodies
            .iter()
            .enumerate()
            .map(|(i, b)| (dq[3 * i].powi(2) + dq[3 * i + 1].powi(2)).sqrt() + dq[3 * i + 2].abs() * b.radius())
            .fold(0.0, f64::max);
        let scale = if largest > 2.0 * max_step { 2.0 * max_step / largest } else { 1.0 };
        for (qi, d) in q.iter_mut().zip(&dq) {
            *qi += scale * d;
        }
        self.scratch_dq = dq;
        Ok((err, distance))
    }

    fn fill_rhs_from_values(&mut self) {
        self.rhs.clear();
        for block in &self.blocks {
            for r in 0..block.rows {
                self.rhs.push(if block.holonomic[r] { -block.value[r] } else { 0.0 });
            }
        }
    }

    /// x ← x + M⁻¹ Jᵀ λ (M the metric A is built with: the raised one of
    /// module `raised` where it is used).
    fn correct(&mut self, jac: &SparseJacobian, x: &mut [f64]) -> Result<(), SolverError> {
        self.scratch.resize(x.len(), 0.0);
        self.scratch.iter_mut().for_each(|s| *s = 0.0);
        jac.mul_transpose(&self.lambda, &mut self.scratch)?;
        for (i, inv) in self.metric_inv_mass.iter().enumerate() {
            for k in 0..3 {
                x[3 * i + k] += inv[k] * self.scratch[3 * i + k];
            }
        }
        Ok(())
    }
}
