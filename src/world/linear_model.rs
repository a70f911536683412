//! The world's per-body linearisation for the implicit integrators' sparse
//! Newton iteration ([`crate::integrator::sparse_newton`]): the constraint
//! Jacobian at the state, and each body's force gradients against its own
//! coordinates and velocities, by finite differences over a colouring of the
//! bodies.
//!
//! Bodies that share a constraint or a load get different colours (greedy, in
//! body order). Perturbing one coordinate of every body of one colour then
//! changes each such body's force only through its own coordinate: whatever
//! couples it to another body (a joint, a spring) couples it to a body of
//! another colour, left where it was. Fields act on each body alone. So 3 ×
//! colours evaluations give every body's 3×3 block, where one body at a time
//! would take 3 × bodies. The constraint forces are differentiated with λ held
//! at its value at the state (their geometric stiffness): J(q + δ)ᵀ λ.

use super::ForceModel;
use crate::integrator::LinearModel;
use crate::integrator::implicit::kind_norms;

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
        // The derivatives must be of f64 forces: a GPU field kernel computes in f32.
        let gpu = self.gpu_fields.take();
        let ok = self.linearise_cpu(t, q, v, model);
        self.gpu_fields = gpu;
        ok
    }

    fn linearise_cpu(&mut self, t: f64, q: &[f64], v: &[f64], model: &mut LinearModel) -> bool {
        let n = self.bodies.len();
        let constrained = !self.constraints.is_empty();
        // λ and J at the state
        let mut lambda = Vec::new();
        if constrained {
            let mut f = vec![0.0; 3 * n];
            self.apply_fields(q, v, &mut f);
            self.apply_loads(t, q, v, &mut f);
            self.solve_constraints(t, q, v, &mut f);
            if self.solver_error.is_some() {
                return false;
            }
            lambda.extend_from_slice(self.system.lambda());
            model.jacobian.copy_from(self.system.jacobian());
        }
        let colours = self.colours();
        model.coupling_loads =
            self.loads.iter().any(|load| load.bodies().iter().filter(|h| !self.bodies[h.0].fixed).count() >= 2);
        let n_colours = colours.iter().filter(|&&c| c != NO_COLOUR).max().map_or(0, |&c| c as usize + 1);
        // the unperturbed forces: with the constraint forces (for ∂/∂q), without (∂/∂v)
        let mut base = [vec![0.0; 3 * n], vec![0.0; 3 * n]];
        if !self.total_force(t, q, v, &lambda, &mut base[0]) || !self.total_force(t, q, v, &[], &mut base[1]) {
            return false;
        }
        let sqrt_u = f64::EPSILON.sqrt();
        let kinds = [kind_norms(q), kind_norms(v)];
        let mut x = Vec::with_capacity(3 * n);
        let mut perturbed = vec![0.0; 3 * n];
        let mut step = vec![0.0; n];
        // wrt positions (forces and constraint forces), then velocities (forces)
        for wrt_velocity in [false, true] {
            for colour in 0..n_colours as u32 {
                for k in 0..3 {
                    x.clear();
                    x.extend_from_slice(if wrt_velocity { v } else { q });
                    let kind = kinds[wrt_velocity as usize][k];
                    let mut any = false;
                    for (b, &c) in colours.iter().enumerate() {
                        if c == colour && model.inverse_mass[b][k] > 0.0 {
                            let saved = x[3 * b + k];
                            x[3 * b + k] = saved + sqrt_u * saved.abs().max(kind);
                            step[b] = x[3 * b + k] - saved; // the step actually taken
                            any = true;
                        }
                    }
                    if !any {
                        continue;
                    }
                    let ok = if wrt_velocity {
                        self.total_force(t, q, &x, &[], &mut perturbed)
                    } else {
                        self.total_force(t, &x, v, &lambda, &mut perturbed)
                    };
                    if !ok {
                        return false;
                    }
                    let gradient = if wrt_velocity { &mut model.force_gradient_v } else { &mut model.force_gradient_q };
                    for (b, &c) in colours.iter().enumerate() {
                        if c == colour && model.inverse_mass[b][k] > 0.0 {
                            for i in 0..3 {
                                let base = &base[wrt_velocity as usize];
                                gradient[b][i][k] = (perturbed[3 * b + i] - base[3 * b + i]) / step[b];
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
    fn total_force(&mut self, t: f64, q: &[f64], v: &[f64], lambda: &[f64], out: &mut [f64]) -> bool {
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
        let mut jt = vec![0.0; out.len()];
        if self.system.jacobian().mul_transpose(lambda, &mut jt).is_err() {
            return false;
        }
        for ((o, f), b) in out.iter_mut().zip(&jt).zip(self.bodies.iter().flat_map(|b| b.inverse_mass())) {
            // a fixed body (or a point's angle) takes no force
            if b > 0.0 {
                *o += f;
            }
        }
        true
    }

    /// Greedy colouring of the bodies: a body's colour differs from every body
    /// sharing a constraint or a load with it; fixed bodies get none.
    fn colours(&self) -> Vec<u32> {
        let n = self.bodies.len();
        let mut neighbours: Vec<Vec<usize>> = vec![Vec::new(); n];
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
            let bodies = load.bodies();
            for (i, a) in bodies.iter().enumerate() {
                for b in &bodies[i + 1..] {
                    link(a.0, b.0);
                }
            }
        }
        let mut colours = vec![NO_COLOUR; n];
        let mut used = Vec::new();
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
        colours
    }
}
