//! The world's per-body linearisation for the implicit integrators' sparse
//! Newton iteration ([`crate::integrator::sparse_newton`]): the constraint
//! Jacobian at the state, and each body's force gradients against its own
//! coordinates and velocities, by finite differences over a colouring of the
//! bodies, on both sides and limited where they disagree
//! (`limited_slope`: a force that jumps at a field region's edge).
//!
//! Bodies that share a constraint or a load get different colours (greedy, in
//! body order). Perturbing one coordinate of every body of one colour then
//! changes each such body's force only through its own coordinate: whatever
//! couples it to another body (a joint, a spring) couples it to a body of
//! another colour, left where it was. Fields act on each body alone. So 3 ×
//! colours evaluations on each side give every body's 3×3 block, where one
//! body at a time would take 3 × bodies. The constraint forces are
//! differentiated with λ held at its value at the state (their geometric
//! stiffness): J(q + δ)ᵀ λ.

use super::forces::ForceModel;
use crate::integrator::LinearModel;
use crate::integrator::implicit::limited_slope;
use crate::integrator::weights::{position_kinds, velocity_kinds};

/// Marks a body that is not perturbed (fixed).
const NO_COLOUR: u32 = u32::MAX;

impl ForceModel<'_> {
    /// Fills `model` at (t, q, v); false if the constraint solve at the state
    /// failed (its error is kept for the step to report).
    pub(super) fn linearise(&mut self, t: f64, q: &[f64], v: &[f64], model: &mut LinearModel) -> bool {
        let n = self.bodies.len();
        model.reset(n);
        for (b, inv) in self.bodies.iter().zip(model.inverse_mass.iter_mut()) {
            *inv = b.inverse_mass();
        }
        model.rank_weights.extend(self.bodies.iter().map(|b| b.rank_weights()));
        // The derivatives must be of f64 forces: the GPU field kernel computes in f32.
        let evaluator = self.field_evaluator.take();
        let ok = self.linearise_cpu(t, q, v, model);
        self.field_evaluator = evaluator;
        ok
    }

    fn linearise_cpu(&mut self, t: f64, q: &[f64], v: &[f64], model: &mut LinearModel) -> bool {
        let mut scratch = std::mem::take(&mut model.scratch);
        let ok = self.finite_differences(t, q, v, model, &mut scratch);
        model.scratch = scratch;
        ok
    }

    fn finite_differences(
        &mut self,
        t: f64,
        q: &[f64],
        v: &[f64],
        model: &mut LinearModel,
        scratch: &mut LinearisationScratch,
    ) -> bool {
        let n = self.bodies.len();
        let constrained = !self.constraints.is_empty();
        let LinearisationScratch { lambda, base, x, perturbed, step, colours, jt, neighbours, used } = scratch;
        let [base_q, base_v] = base;
        let [ahead, behind] = perturbed;
        for buffer in [&mut *base_q, &mut *base_v, &mut *ahead, &mut *behind, &mut *jt] {
            buffer.clear();
            buffer.resize(3 * n, 0.0);
        }
        for side in step.iter_mut() {
            side.clear();
            side.resize(n, 0.0);
        }
        // λ and J at the state
        lambda.clear();
        if constrained {
            let f = &mut ahead[..];
            self.apply_fields(q, v, f);
            self.apply_loads(t, q, v, f);
            self.solve_constraints(t, q, v, f);
            if self.solver_error.is_some() {
                return false;
            }
            lambda.extend_from_slice(self.system.lambda());
            model.jacobian.copy_from(self.system.jacobian());
        }
        self.colour_bodies(colours, neighbours, used);
        model.coupling_loads =
            self.loads.iter().any(|load| load.body_handles().filter(|h| !self.bodies[h.0].fixed).count() >= 2);
        let n_colours = colours.iter().filter(|&&c| c != NO_COLOUR).max().map_or(0, |&c| c as usize + 1);
        // the unperturbed forces: with the constraint forces (for ∂/∂q), without (∂/∂v)
        if !self.total_force(t, q, v, lambda, base_q, jt) || !self.total_force(t, q, v, &[], base_v, jt) {
            return false;
        }
        let sqrt_u = f64::EPSILON.sqrt();
        let at_q = position_kinds(q, model.units);
        let kinds = [at_q, velocity_kinds(v, at_q[0], model.units)];
        // wrt positions (forces and constraint forces), then velocities (forces)
        for wrt_velocity in [false, true] {
            for colour in 0..n_colours as u32 {
                for k in 0..3 {
                    let kind = kinds[wrt_velocity as usize][k];
                    let perturbs = |b: usize, c: u32| c == colour && model.inverse_mass[b][k] > 0.0;
                    if !colours.iter().enumerate().any(|(b, &c)| perturbs(b, c)) {
                        continue;
                    }
                    // forward, then backward: both one-sided differences, limited
                    // (`limited_slope`: a force that jumps at a region's edge)
                    for (side, sign) in [(0, 1.0), (1, -1.0)] {
                        x.clear();
                        x.extend_from_slice(if wrt_velocity { v } else { q });
                        for (b, &c) in colours.iter().enumerate() {
                            if perturbs(b, c) {
                                let saved = x[3 * b + k];
                                x[3 * b + k] = saved + sign * sqrt_u * saved.abs().max(kind);
                                step[side][b] = sign * (x[3 * b + k] - saved); // the step actually taken
                            }
                        }
                        let out = if side == 0 { &mut *ahead } else { &mut *behind };
                        let ok = if wrt_velocity {
                            self.total_force(t, q, x, &[], out, jt)
                        } else {
                            self.total_force(t, x, v, lambda, out, jt)
                        };
                        if !ok {
                            return false;
                        }
                    }
                    let gradient = if wrt_velocity { &mut model.force_gradient_v } else { &mut model.force_gradient_q };
                    let base = if wrt_velocity { &*base_v } else { &*base_q };
                    for (b, &c) in colours.iter().enumerate() {
                        if perturbs(b, c) {
                            for i in 0..3 {
                                let at = 3 * b + i;
                                gradient[b][i][k] = limited_slope(
                                    (ahead[at] - base[at]) / step[0][b],
                                    (base[at] - behind[at]) / step[1][b],
                                );
                            }
                        }
                    }
                }
            }
        }
        // the system's J was assembled at perturbed positions: leave it at q
        if constrained {
            let scene = super::Scene { bodies: self.bodies, constraints: self.constraints, surfaces: self.surfaces };
            if let Err(e) = self.system.assemble(scene, t, q, v) {
                self.solver_error.get_or_insert(e);
                return false;
            }
        }
        true
    }

    /// F(t, q, v) + J(q)ᵀ λ with λ given (empty: F alone). False if the
    /// constraint rows could not be assembled.
    /// `jt` is scratch of `out`'s length.
    fn total_force(&mut self, t: f64, q: &[f64], v: &[f64], lambda: &[f64], out: &mut [f64], jt: &mut [f64]) -> bool {
        out.fill(0.0);
        self.apply_fields(q, v, out);
        self.apply_loads(t, q, v, out);
        if lambda.is_empty() {
            return true;
        }
        let scene = super::Scene { bodies: self.bodies, constraints: self.constraints, surfaces: self.surfaces };
        if let Err(e) = self.system.assemble(scene, t, q, v) {
            self.solver_error.get_or_insert(e);
            return false;
        }
        if self.system.jacobian().mul_transpose(lambda, jt).is_err() {
            return false;
        }
        for ((o, f), b) in out.iter_mut().zip(jt.iter()).zip(self.bodies.iter().flat_map(|b| b.inverse_mass())) {
            // a fixed body (or a point's angle) takes no force
            if b > 0.0 {
                *o += f;
            }
        }
        true
    }

    /// Greedy colouring of the bodies into `colours`: a body's colour differs
    /// from every body sharing a constraint or a load with it; fixed bodies get
    /// none. `neighbours` and `used` are scratch.
    fn colour_bodies(&self, colours: &mut Vec<u32>, neighbours: &mut Vec<Vec<usize>>, used: &mut Vec<u32>) {
        let n = self.bodies.len();
        neighbours.iter_mut().for_each(Vec::clear);
        neighbours.resize_with(n, Vec::new);
        let mut link = |a: usize, b: usize| {
            if a != b {
                neighbours[a].push(b);
                neighbours[b].push(a);
            }
        };
        for c in self.constraints.iter() {
            if let Some(b) = c.body_b {
                link(c.body_a.0, b.0);
            }
        }
        for load in self.loads {
            for (i, a) in load.body_handles().enumerate() {
                for b in load.body_handles().skip(i + 1) {
                    link(a.0, b.0);
                }
            }
        }
        colours.clear();
        colours.resize(n, NO_COLOUR);
        for b in 0..n {
            if self.bodies[b].fixed {
                continue;
            }
            used.clear();
            used.extend(neighbours[b].iter().map(|&o| colours[o]).filter(|&c| c != NO_COLOUR));
            used.sort_unstable();
            let mut colour = 0;
            for &c in used.iter() {
                if c == colour {
                    colour += 1;
                } else if c > colour {
                    break;
                }
            }
            colours[b] = colour;
        }
    }
}

/// The working arrays of [`ForceModel::linearise`]'s finite differences,
/// kept in the [`LinearModel`] between Newton Jacobians.
#[derive(Clone, Debug, Default)]
pub(crate) struct LinearisationScratch {
    lambda: Vec<f64>,
    base: [Vec<f64>; 2],
    x: Vec<f64>,
    /// The forces at the forward and the backward perturbation.
    perturbed: [Vec<f64>; 2],
    /// The steps taken forward and backward, per body.
    step: [Vec<f64>; 2],
    colours: Vec<u32>,
    jt: Vec<f64>,
    neighbours: Vec<Vec<usize>>,
    used: Vec<u32>,
}
