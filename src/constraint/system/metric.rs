//! The metric A is built with (module [`crate::constraint::raised`]): the bodies'
//! inverse masses and rank weights, the light rotations raised by their
//! arms, the raised iteration of the accelerations, and the fall-back to the
//! true inertias when it crawls.

use super::{BodyKey, ConstraintSystem, Scene, write_rhs};
use crate::body::Body;
use crate::constraint::{ConstraintKind, ConstraintSet};
use crate::solver::SolverError;

impl ConstraintSystem {
    /// The inverse masses and the rank-metric weights of the bodies (solver::gauss,
    /// "Scale-invariant rank decisions": rank is decided in a mass-independent
    /// metric), recomputed only for the bodies whose mass, inertia, shape or
    /// fixedness changed since the last assembly (their divisions and the
    /// bounding radius's square root were ~4 % of a small linkage's step).
    pub(super) fn update_body_weights(&mut self, scene: Scene) {
        let bodies = scene.bodies;
        let stale = |(b, k): (&Body, &BodyKey)| {
            b.mass.to_bits() != k.mass || b.inertia.to_bits() != k.inertia || b.fixed != k.fixed || b.shape != k.shape
        };
        if self.body_keys.len() != bodies.len() || bodies.iter().zip(&self.body_keys).any(stale) {
            self.body_keys.clear();
            self.body_keys.extend(bodies.iter().map(|b| BodyKey {
                mass: b.mass.to_bits(),
                inertia: b.inertia.to_bits(),
                fixed: b.fixed,
                shape: b.shape.clone(),
            }));
            self.inv_mass.clear();
            self.inv_mass.extend(bodies.iter().map(Body::inverse_mass));
            self.rank_weights.clear();
            self.rank_weights.extend(bodies.iter().map(Body::rank_weights));
            self.solver.set_rank_metric(&self.rank_weights);
            self.augmented.select(&self.inv_mass, &self.rank_weights);
            self.weights_version += 1;
            self.raise_failed = false;
        }
        self.choose_metric(scene.constraints);
    }

    /// The inverse masses A is built with (module `raised`): the light
    /// rotations that some constraint turns raised by their arms (unless the
    /// raised iteration has failed on this system), the true ones otherwise.
    /// Chosen again only when the constraint set or the bodies' weights
    /// change; any factor held until then is dropped.
    fn choose_metric(&mut self, constraints: &ConstraintSet) {
        let key = (constraints.generation(), constraints.len(), self.weights_version);
        if self.metric_for == Some(key) {
            return;
        }
        self.metric_for = Some(key);
        let rows: usize = self.blocks.iter().map(|b| b.rows).sum();
        // (prepare lists the light bodies some constraint touches, at any size)
        let light_constrained = self.augmented.any_light()
            && !self.raise_failed
            && !self.raise_disabled
            && (self.augmented.prepare(constraints, rows) || !self.augmented.bodies().is_empty());
        // each light body's largest arm: a pin's or a distance bar's anchor
        // (from the constraint, not from J's values, which vanish when an arm
        // happens to lie along a row's direction), the bounding radius ℓ for
        // every other kind; 0: no constraint turns it (a disc pinned at its
        // centre: 1/I never enters A, and its α = τ/I needs no iteration)
        let mut arms = std::mem::take(&mut self.raised_arms);
        arms.clear();
        arms.resize(self.inv_mass.len(), 0.0);
        if light_constrained {
            for c in constraints.iter() {
                for (end, body) in std::iter::once(c.body_a).chain(c.body_b).enumerate() {
                    if !self.augmented.light().get(body.0).copied().unwrap_or(false) {
                        continue;
                    }
                    let arm = match &c.kind {
                        ConstraintKind::Revolute { anchor_a, anchor_b }
                        | ConstraintKind::Distance { anchor_a, anchor_b, .. } => {
                            if end == 0 {
                                anchor_a.length()
                            } else {
                                anchor_b.length()
                            }
                        }
                        // (a light body's rank weight is 1/ℓ² > 0)
                        _ => 1.0 / self.rank_weights[body.0][2].sqrt(),
                    };
                    arms[body.0] = arms[body.0].max(arm);
                }
            }
        }
        crate::constraint::raised::raise(&self.inv_mass, &arms, &mut self.metric_inv_mass);
        let raised = self.metric_inv_mass != self.inv_mass;
        self.raised_arms = arms;
        // a factor held from another metric is not this A
        self.held_factor = None;
        self.metric_raised = raised;
        self.solver.set_inverse_masses(&self.metric_inv_mass);
    }

    /// [`apply_forces`](Self::apply_forces) with the light rotations raised
    /// (module `raised`): M a = f + Jᵀλ, J a = c iterated on the raised
    /// factor. None when the iteration did not converge (nothing written).
    pub(super) fn apply_forces_raised(
        &mut self,
        scene: Scene,
        v: &[f64],
        f: &mut [f64],
        baumgarte: Option<f64>,
    ) -> Result<Option<f64>, SolverError> {
        let n = self.jac.n_rows();
        // c = −γ (− 2αĊ − α²C): the right-hand side with J M⁻¹f = 0
        let mut jv = std::mem::take(&mut self.scratch_rows);
        jv.resize(if baumgarte.is_some() { n } else { 0 }, 0.0);
        if baumgarte.is_some() {
            self.jac.mul(v, &mut jv)?;
        }
        self.raised_c.clear();
        self.raised_c.resize(n, 0.0);
        write_rhs(&self.blocks, &jv, baumgarte, &mut self.raised_c);
        self.scratch_rows = jv;
        self.lambda.resize(n, 0.0);
        self.held_factor = None;
        self.solver.factor_held(&self.jac)?;
        self.held_factor = Some(self.pattern());
        let outcome = self.raised.solve(
            &mut self.solver,
            &self.jac,
            &self.inv_mass,
            &self.metric_inv_mass,
            f,
            &self.raised_c,
            &mut self.lambda,
            &mut self.raised_x,
        )?;
        if !outcome.converged {
            return Ok(None);
        }
        self.record_warnings(scene, outcome.report.rank_deficient, Some(outcome.report.badly_scaled));
        self.scratch.resize(f.len(), 0.0);
        self.jac.mul_transpose(&self.lambda, &mut self.scratch)?;
        let mut power = 0.0;
        for ((((fi, s), inv), raised), (xi, vi)) in f
            .chunks_exact_mut(3)
            .zip(self.scratch.chunks_exact(3))
            .zip(&self.inv_mass)
            .zip(&self.metric_inv_mass)
            .zip(self.raised_x.chunks_exact(3).zip(v.chunks_exact(3)))
        {
            if *inv != [0.0; 3] {
                for k in 0..3 {
                    fi[k] += s[k];
                    power += s[k] * vi[k];
                }
                if raised[2] != inv[2] {
                    // the torque that gives the iterated α exactly (as after
                    // the augmented solve): I α, not τ + (Jᵀλ)_θ
                    fi[2] = xi[2] / inv[2];
                }
            }
        }
        Ok(Some(power))
    }

    /// The raised iteration did not converge on this system (module
    /// `raised`: a motion of nearly no inertia): A with the true inertias
    /// from now on, for the whole system, until the bodies' weights change,
    /// and a warning naming the body whose rotation crawled most.
    pub(super) fn lower_metric(&mut self, scene: Scene) {
        self.raise_failed = true;
        // chosen again: with the raise failed, the true inertias
        self.metric_for = None;
        self.choose_metric(scene.constraints);
        let body = self.raised.slowest_body().and_then(|b| scene.bodies.get(b));
        let name = body.map_or_else(String::new, |b| format!(" {}", b.name));
        self.warnings.insert(format!(
            "the constraints let body{name} turn while almost no mass moves (a motion of nearly no inertia, I ≪ m·ℓ²): the motion is stiff, and the solver falls back to the normal equations with the true inertias for this mechanism; give such bodies their inertia, model them as shape: Point, or use an implicit integrator"
        ));
    }
}
