//! The forces of a world at one integrator stage ([`ForceModel`], the
//! integrator's [`Dynamics`]): gravity, fields (on the CPU in f64, or from
//! the GPU kernel), loads, and the constraint forces Jᵀλ, each charged to
//! its [`Stage`].

use std::time::Instant;

use glam::DVec2;
use rayon::prelude::*;

use super::{Shared, Stage, StageTimes, World};
use crate::body::{Body, BodyHandle};
use crate::constraint::ConstraintSet;
use crate::constraint::system::{ConstraintSystem, Scene, Stabilization};
use crate::field::{Field, FieldEvaluator, total_force};
use crate::integrator::{Dynamics, Integrator, LinearModel, State};
use crate::load::{Kinematics, Load};
use crate::solver::SolverError;
use crate::surface::Surface;

/// Below this many bodies the per-body loop runs on one thread (rayon's
/// fork-join costs more than it saves).
const PARALLEL_THRESHOLD: usize = 4096;
/// Bodies per block of the field-power sum (a fixed reduction order, so the
/// sum does not depend on the thread count).
const POWER_BLOCK: usize = 1024;

impl World {
    pub(super) fn force_model(&mut self) -> (ForceModel<'_>, &mut Integrator, &mut State) {
        (
            ForceModel {
                bodies: self.bodies.as_slice(),
                loads: &self.loads,
                fields: &self.fields,
                gravity: self.gravity,
                constraints: &self.constraints,
                surfaces: &self.surfaces,
                system: &mut self.system,
                baumgarte: self.stabilization.baumgarte,
                projection: self.stabilization.projection.then_some(self.stabilization),
                length_scale: self.stabilization.length_scale,
                solver_error: None,
                field_evaluator: self.field_evaluator.as_ref(),
                evaluator_error: None,
                field_forces: Vec::new(),
                times: &mut self.times,
            },
            &mut self.integrator,
            &mut self.state,
        )
    }
}

/// The forces of a world at one integrator stage: gravity, fields, loads and
/// the constraint forces that keep the constraints.
pub(super) struct ForceModel<'w> {
    pub(super) bodies: &'w [Body],
    pub(super) loads: &'w [Load],
    pub(super) fields: &'w [Field],
    pub(super) gravity: DVec2,
    pub(super) constraints: &'w ConstraintSet,
    pub(super) surfaces: &'w [Surface],
    pub(super) system: &'w mut ConstraintSystem,
    pub(super) baumgarte: Option<f64>,
    /// The projection's settings when it is on: the adaptive integrators
    /// project between their substeps too ([`Dynamics::project`]).
    pub(super) projection: Option<Stabilization>,
    /// The scene's length ([`Stabilization::length_scale`]): the
    /// integrators' weights fall back to it ([`Dynamics::length_scale`]).
    pub(super) length_scale: f64,
    /// The first solver failure of this step (an evaluation cannot return it).
    pub(super) solver_error: Option<SolverError>,
    /// The field evaluator (the GPU kernel), when the fields run there.
    pub(super) field_evaluator: Option<&'w Shared<dyn FieldEvaluator>>,
    /// The evaluator's first failure in this step.
    pub(super) evaluator_error: Option<String>,
    /// Field forces from the evaluator, one per body.
    pub(super) field_forces: Vec<DVec2>,
    pub(super) times: &'w mut StageTimes,
}

impl ForceModel<'_> {
    /// Gravity and fields: writes the force on every body into `f` (3 per
    /// body) and returns the power of the field forces (gravity has a
    /// potential and is not counted as work).
    pub(super) fn apply_fields(&mut self, q: &[f64], v: &[f64], f: &mut [f64]) -> f64 {
        if let Some(evaluator) = self.field_evaluator
            && !self.fields.is_empty()
        {
            return self.apply_evaluated_fields(evaluator, q, v, f);
        }
        if self.fields.is_empty() {
            return self.apply_gravity(f);
        }
        let per_body = |(i, out): (usize, &mut [f64])| -> f64 {
            let b = &self.bodies[i];
            if b.fixed {
                out.copy_from_slice(&[0.0; 3]);
                return 0.0;
            }
            let p = DVec2::new(q[3 * i], q[3 * i + 1]);
            let vel = DVec2::new(v[3 * i], v[3 * i + 1]);
            let field = total_force(self.fields, p, vel, b.mass, b.radius());
            let total = field + self.gravity * b.mass;
            out.copy_from_slice(&[total.x, total.y, 0.0]);
            field.dot(vel)
        };
        // The power is summed per fixed block of bodies, then the block sums
        // in order: the same additions in the same order whatever the number
        // of threads (a rayon `sum` splits where its scheduler likes, and the
        // last digits of the work then depended on RAYON_NUM_THREADS).
        let per_block = |(k, block): (usize, &mut [f64])| -> f64 {
            block.chunks_mut(3).enumerate().map(|(j, out)| per_body((k * POWER_BLOCK + j, out))).sum()
        };
        if self.bodies.len() >= PARALLEL_THRESHOLD {
            let blocks: Vec<f64> = f.par_chunks_mut(3 * POWER_BLOCK).enumerate().map(per_block).collect();
            blocks.iter().sum()
        } else {
            f.chunks_mut(3 * POWER_BLOCK).enumerate().map(per_block).sum()
        }
    }

    /// Gravity alone (no field in the scene): a constant acceleration, so
    /// the force is m·g per body — one serial pass with no field dispatch, no
    /// bounding radius, no rayon task and no allocation (a pass over 5,050
    /// bodies is a few µs: a rayon spawn cost more than the work). Bit for bit
    /// what the field loop writes: its field sum is exactly `DVec2::ZERO`
    /// (an empty sum), kept here as the same addition `ZERO + m·g` (which
    /// turns a −0 component into +0 as the loop did). Gravity has a
    /// potential: the power returned is zero.
    fn apply_gravity(&self, f: &mut [f64]) -> f64 {
        for (b, out) in self.bodies.iter().zip(f.chunks_mut(3)) {
            let total = if b.fixed { DVec2::ZERO } else { DVec2::ZERO + self.gravity * b.mass };
            // element by element: a 3-element `copy_from_slice` is a libc call
            out[0] = total.x;
            out[1] = total.y;
            out[2] = 0.0;
        }
        0.0
    }

    /// Gravity on the CPU, fields from the evaluator (the GPU kernel, the
    /// twin of the CPU loop above); its failure is kept for the step to
    /// report.
    fn apply_evaluated_fields(
        &mut self,
        evaluator: &Shared<dyn FieldEvaluator>,
        q: &[f64],
        v: &[f64],
        f: &mut [f64],
    ) -> f64 {
        let mut forces = std::mem::take(&mut self.field_forces);
        let result = match evaluator.lock() {
            Ok(mut e) => e.field_forces(self.fields, self.bodies, q, v, &mut forces),
            Err(()) => Err("the field evaluator was poisoned by an earlier panic".to_string()),
        };
        if let Err(e) = result {
            self.evaluator_error.get_or_insert(e);
            forces.clear();
        }
        forces.resize(self.bodies.len(), DVec2::ZERO);
        let mut power = 0.0;
        for (i, (b, out)) in self.bodies.iter().zip(f.chunks_mut(3)).enumerate() {
            if b.fixed {
                out.copy_from_slice(&[0.0; 3]);
                continue;
            }
            let total = forces[i] + self.gravity * b.mass;
            out.copy_from_slice(&[total.x, total.y, 0.0]);
            power += forces[i].dot(DVec2::new(v[3 * i], v[3 * i + 1]));
        }
        self.field_forces = forces;
        power
    }

    /// Adds the loads' wrenches to `f`; returns their non-conservative power.
    pub(super) fn apply_loads(&self, t: f64, q: &[f64], v: &[f64], f: &mut [f64]) -> f64 {
        let kin = |h: BodyHandle| {
            let i = 3 * h.0;
            Kinematics {
                position: DVec2::new(q[i], q[i + 1]),
                angle: q[i + 2],
                velocity: DVec2::new(v[i], v[i + 1]),
                angular_velocity: v[i + 2],
            }
        };
        let mut power = 0.0;
        for load in self.loads {
            let effect = load.evaluate(t, kin, self.bodies);
            for (h, (force, torque)) in effect.wrenches.into_iter().flatten() {
                if !self.bodies[h.0].fixed {
                    f[3 * h.0] += force.x;
                    f[3 * h.0 + 1] += force.y;
                    f[3 * h.0 + 2] += torque;
                }
            }
            power += effect.power;
        }
        power
    }
}

impl ForceModel<'_> {
    /// Adds the constraint forces Jᵀλ to `f`; returns their power.
    pub(super) fn solve_constraints(&mut self, t: f64, q: &[f64], v: &[f64], f: &mut [f64]) -> f64 {
        if self.constraints.is_empty() {
            return 0.0;
        }
        let scene = Scene { bodies: self.bodies, constraints: self.constraints, surfaces: self.surfaces };
        let result =
            self.system.assemble(scene, t, q, v).and_then(|_| self.system.apply_forces(scene, v, f, self.baumgarte));
        match result {
            Ok(p) => p,
            Err(e) => {
                self.solver_error.get_or_insert(e);
                0.0
            }
        }
    }
}

impl Dynamics for ForceModel<'_> {
    fn acceleration(&mut self, t: f64, q: &[f64], v: &[f64], a: &mut [f64]) -> f64 {
        let started = Instant::now();
        let mut power = self.apply_fields(q, v, a);
        let fields_done = Instant::now();
        self.times.add(Stage::ApplyFields, fields_done - started);
        power += self.apply_loads(t, q, v, a);
        let loads_done = Instant::now();
        self.times.add(Stage::ApplyLoads, loads_done - fields_done);
        power += self.solve_constraints(t, q, v, a);
        let constraints_done = Instant::now();
        self.times.add(Stage::SolveConstraints, constraints_done - loads_done);
        // a = M⁻¹ F (fixed bodies: zero inverse mass, zero acceleration);
        // with constraints, the inverse masses their assembly just refreshed
        // for these bodies (the same values: no division per body and stage)
        let cached = self.system.inverse_masses();
        if !self.constraints.is_empty() && cached.len() == self.bodies.len() {
            for (inv, ai) in cached.iter().zip(a.chunks_mut(3)) {
                ai[0] *= inv[0];
                ai[1] *= inv[1];
                ai[2] *= inv[2];
            }
        } else {
            for (b, ai) in self.bodies.iter().zip(a.chunks_mut(3)) {
                let inv = b.inverse_mass();
                ai[0] *= inv[0];
                ai[1] *= inv[1];
                ai[2] *= inv[2];
            }
        }
        self.times.add(Stage::ApplyLoads, constraints_done.elapsed());
        power
    }

    fn length_scale(&self) -> f64 {
        self.length_scale
    }

    fn linear_model(&mut self, t: f64, q: &[f64], v: &[f64], model: &mut LinearModel) -> bool {
        self.linearise(t, q, v, model)
    }

    fn project(&mut self, t: f64, q: &mut [f64], v: &mut [f64]) -> bool {
        let Some(settings) = self.projection else { return false };
        if self.constraints.is_empty() || self.solver_error.is_some() {
            return false;
        }
        let started = Instant::now();
        let scene = Scene { bodies: self.bodies, constraints: self.constraints, surfaces: self.surfaces };
        // as `World::correct_drift`
        let result = self.system.project_state(scene, t, q, v, &settings);
        self.times.add(Stage::CorrectDrift, started.elapsed());
        match result {
            Ok(_) => true,
            Err(e) => {
                self.solver_error.get_or_insert(e);
                false
            }
        }
    }
}
