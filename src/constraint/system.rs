//! The constraint system of a world: assembly of J and A = J M⁻¹ Jᵀ from the
//! constraints' rows, the multipliers λ (seed 003 §III: M a = F + Jᵀλ with
//! J a = −γ), drift correction by Newton projection (seed 003 §IV-C/D) and the
//! reaction forces.
//!
//! An assembly evaluates every constraint's rows and writes them into J. J's
//! structure is built once per constraint set (generation) and body count; the
//! assemblies after that overwrite J's values in their fixed slots
//! ([`SparseJacobian::set_values`]), and what depends on the bodies alone — each
//! body's rotation (kept while its angle's bits do not change), inverse mass and
//! rank weights (kept while its mass, inertia, shape and fixedness do not) — is
//! not recomputed (issue 10: a ~100-body linkage assembles about six times per
//! RK4 step). A system of pins reassembled at the very positions of its last
//! fill — the first RK stage of a step, at the positions the projections ended
//! on, with the projected velocities — evaluates only the velocity-dependent γ:
//! J and C are those in place. A system of pins reassembled elsewhere, once
//! its row blocks and J hold a full evaluation of the same pins, writes only
//! the entries that depend on the state — J's angular columns (r⊥), C and γ,
//! 8 of a row block's 29 values and 4 of J's 18 — the constants (J's unit and
//! zero columns, the padding row, the flags) being in place (issue 10, round
//! "linkage14" of docs/benchmarks.md: ≈ −2 % of a small linkage's RK4 step).

use std::collections::BTreeSet;

use glam::DVec2;
use rayon::prelude::*;

use super::augmented::AugmentedSolve;
use super::raised::RaisedSolve;
use super::{ConstraintSet, RowBlock};
use crate::body::Body;
use crate::solver::{ConstraintId, ConstraintSolver, SolverError, SparseJacobian};
use crate::surface::Surface;

mod metric;
mod projection;

/// Above this many constraints the rows are evaluated in parallel.
const PARALLEL_ROWS: usize = 2048;

/// How position drift is kept in check.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stabilization {
    /// Newton–Raphson projection of positions onto C(q) = 0 and of velocities
    /// onto J v = −bias after each step.
    pub projection: bool,
    /// Baumgarte: add −2α Ċ − α² C to the acceleration condition (critically
    /// damped drift with rate α, 1/s); `None` turns it off.
    pub baumgarte: Option<f64>,
    /// Projection stops when max(|C|/`length_scale` over the rows in
    /// length, |C| over the rows in angle) ≤ this (unit-free).
    pub tolerance: f64,
    /// Projection gives up after this many Newton iterations.
    pub max_iterations: usize,
    /// The length (m) that makes the rows' errors unit-free: a row whose
    /// Jacobian has a translation part is a length (a pin, a distance), one
    /// without is an angle (a motor, a weld's or a prismatic's angle). 1 by
    /// default; a scene sets the smallest dynamic body's bounding radius, so
    /// that the projection stops at the same point in any length unit
    /// (`docs/requirements.md`, "Units and mass scale").
    pub length_scale: f64,
}

impl Default for Stabilization {
    fn default() -> Self {
        Self { projection: true, baumgarte: None, tolerance: 1e-12, max_iterations: 20, length_scale: 1.0 }
    }
}

/// Reaction of one constraint on its first body: the force Jᵀλ restricted to
/// that body (N, N, N·m about its centre of mass).
#[derive(Clone, Debug, PartialEq)]
pub struct Reaction {
    /// Constraint name.
    pub constraint: String,
    /// Force x (N).
    pub fx: f64,
    /// Force y (N).
    pub fy: f64,
    /// Torque about body a's centre of mass (N·m).
    pub torque: f64,
}

/// Buffers and solver of the constraint system, reused step after step.
#[derive(Clone, Debug, Default)]
pub struct ConstraintSystem {
    solver: ConstraintSolver,
    jac: SparseJacobian,
    blocks: Vec<RowBlock>,
    /// (cos φ, sin φ) of every body at the last assembly (empty when few pins).
    rotations: Vec<DVec2>,
    /// The angles (bits) `rotations` were computed from.
    rotation_angles: Vec<u64>,
    /// J holds the values of the last fill, made when every constraint was a
    /// pin and from the current `rotations`: a pin's J depends on its bodies'
    /// rotations alone, so while no angle changes J need not be written again
    /// (and keeps its values identity, which lets the solver reuse a factor).
    jac_from_rotations: bool,
    /// The positions (bits) at which the rows in `blocks` were evaluated,
    /// while `jac_from_rotations` holds.
    filled_at: Vec<u64>,
    /// Every row block and J hold a full evaluation of the current pins-only
    /// constraint set ([`revolute::write_block`](super::revolute::write_block)
    /// then a fill of J): their constant entries are in place, and an
    /// assembly of the same set writes only the entries that depend on the
    /// state.
    pin_constants_in_place: bool,
    inv_mass: Vec<[f64; 3]>,
    /// ((generation, length) of a constraint set, its number of pins).
    pins_counted: Option<((u64, usize), usize)>,
    rank_weights: Vec<[f64; 3]>,
    /// What `inv_mass` and `rank_weights` were computed from, per body.
    body_keys: Vec<BodyKey>,
    rhs: Vec<f64>,
    lambda: Vec<f64>,
    scratch: Vec<f64>,
    scratch_dq: Vec<f64>,
    scratch_q: Vec<f64>,
    scratch_rows: Vec<f64>,
    scratch_jac: SparseJacobian,
    /// (constraint set generation, body count, J's structure id) of the last
    /// build of J: while they hold, J's slots are overwritten, not rebuilt.
    jac_built_for: Option<(u64, usize, u64)>,
    /// (constraints, rows, bodies) of the J whose A the solver holds factored,
    /// None when it holds none (or the last factorisation failed).
    held_factor: Option<(usize, usize, usize)>,
    /// The constraint lists of the last warnings formatted.
    warned_rank_deficient: std::sync::Arc<[crate::solver::ConstraintId]>,
    warned_badly_scaled: std::sync::Arc<[crate::solver::ConstraintId]>,
    /// Warnings raised so far (redundant or singular constraints), each once.
    pub warnings: BTreeSet<String>,
    /// The dense solve of λ with the angular accelerations of the bodies
    /// whose rotation is nearly massless (`augmented`; none: not used).
    augmented: AugmentedSolve,
    /// Its right-hand side, and the α it found (by augmented body).
    rhs_augmented: Vec<f64>,
    alpha: Vec<f64>,
    /// The inverse masses A is built with: `inv_mass`, or with the light
    /// rotations raised (module `raised`) while `metric_raised` holds.
    metric_inv_mass: Vec<[f64; 3]>,
    /// Whether A is built with the light rotations raised: some constraint
    /// turns a body with a nearly massless rotation (any system size).
    metric_raised: bool,
    /// (constraint set generation, its length, `weights_version`) of the
    /// last choice of the metric.
    metric_for: Option<(u64, usize, u64)>,
    /// Incremented whenever `inv_mass` and `rank_weights` are recomputed.
    weights_version: u64,
    /// The raised iteration did not converge on this system (a motion of
    /// nearly no inertia): the true inertias for the whole system from then
    /// on, until the bodies' weights change.
    raise_failed: bool,
    /// The raised iteration is not used (tests: the normal equations as a
    /// reference).
    raise_disabled: bool,
    /// The iteration's buffers, its solution x and its right-hand side c.
    raised: RaisedSolve,
    raised_x: Vec<f64>,
    raised_c: Vec<f64>,
    /// Body → the largest arm its constraints turn it by (light bodies only;
    /// 0: not raised).
    raised_arms: Vec<f64>,
}

/// The inputs of a body's inverse mass and rank weights (mass and inertia as
/// bits: a change of either, even of a zero's sign, recomputes them).
#[derive(Clone, Debug)]
struct BodyKey {
    mass: u64,
    inertia: u64,
    fixed: bool,
    shape: crate::shape::Shape,
}

/// Everything the constraint rows depend on besides the state.
#[derive(Clone, Copy)]
pub struct Scene<'a> {
    /// The bodies (shapes, masses).
    pub bodies: &'a [Body],
    /// The constraints.
    pub constraints: &'a ConstraintSet,
    /// Static surfaces.
    pub surfaces: &'a [Surface],
}

/// The larger of `m` (never NaN) and `x`; `m` when `x` is NaN, as `f64::max`
/// (one `maxsd`, no fix-up of a NaN in `m`).
#[inline(always)]
fn larger(m: f64, x: f64) -> f64 {
    if x > m { x } else { m }
}

/// rhs = −γ − J M⁻¹f (− 2αĊ − α²C) by row, with `rhs` holding J M⁻¹f on
/// entry and `jv` = J v (used with Baumgarte only).
fn write_rhs(blocks: &[RowBlock], jv: &[f64], baumgarte: Option<f64>, rhs: &mut [f64]) {
    let mut row = 0;
    for block in blocks {
        for r in 0..block.rows {
            let mut b = -block.gamma[r] - rhs[row];
            if let Some(alpha) = baumgarte {
                let cdot = jv[row] + block.velocity_bias[r];
                b -= 2.0 * alpha * cdot;
                if block.holonomic[r] {
                    b -= alpha * alpha * block.value[r];
                }
            }
            rhs[row] = b;
            row += 1;
        }
    }
}

/// A pin's two ends: (rotation, position, velocity) of body a and of body b
/// (`None`: the world).
type PinEnds = ((DVec2, [f64; 3], [f64; 3]), Option<(DVec2, [f64; 3], [f64; 3])>);

#[inline(always)]
fn body_state(x: &[f64], i: usize) -> [f64; 3] {
    [x[3 * i], x[3 * i + 1], x[3 * i + 2]]
}

impl ConstraintSystem {
    /// Evaluates every constraint's rows at (t, q, v) and fills J.
    ///
    /// Pins (revolute joints) are written in place with each body's rotation
    /// computed once per assembly rather than once per joint end: in a
    /// linkage a body carries two to four pins, and `sin_cos` was the largest
    /// single cost of a small loop mechanism's step (issue 10).
    pub fn assemble(&mut self, scene: Scene, t: f64, q: &[f64], v: &[f64]) -> Result<(), SolverError> {
        let items = scene.constraints.as_slice();
        let pins = self.pin_count(scene.constraints);
        let mut rotations_changed = false;
        // a rotation per body pays when the pins' ends outnumber the bodies
        if 2 * pins >= scene.bodies.len() {
            // kept for the angles that did not change since the last assembly
            // (the first stage of a step is at the positions the last
            // projection ended on): the same angle's bits, the same rotation
            let n = scene.bodies.len();
            if self.rotation_angles.len() != n || self.rotations.len() != n {
                rotations_changed = true;
                self.rotation_angles.clear();
                self.rotation_angles.extend((0..n).map(|i| q[3 * i + 2].to_bits()));
                self.rotations.clear();
                self.rotations.extend((0..n).map(|i| DVec2::from_angle(q[3 * i + 2])));
            }
            for i in 0..n {
                let angle = q[3 * i + 2];
                if self.rotation_angles[i] != angle.to_bits() {
                    rotations_changed = true;
                    self.rotation_angles[i] = angle.to_bits();
                    self.rotations[i] = DVec2::from_angle(angle);
                }
            }
        } else {
            rotations_changed = true;
            self.rotations.clear();
            self.rotation_angles.clear();
        }
        // pins only, at the positions of the last fill (the first RK stage of
        // a step, at the positions the projections ended on, with the
        // projected velocities): J and C are those in place, only γ depends on
        // the velocities (issue 10: a full evaluation of the rows was ≈ 4 % of
        // a small linkage's step)
        let all_pins = pins == items.len() && !self.rotations.is_empty();
        if all_pins
            && !rotations_changed
            && self.jac_from_rotations
            && self.blocks.len() == items.len()
            && self.jac_fits(scene)
            && bytemuck::cast_slice::<f64, u64>(q) == self.filled_at.as_slice()
        {
            let rotations = &self.rotations;
            for (out, c) in self.blocks.iter_mut().zip(items) {
                if let super::ConstraintKind::Revolute { anchor_a, anchor_b } = c.kind {
                    let a = c.body_a.0;
                    let b = c.body_b.map(|h| (rotations[h.0], v[3 * h.0 + 2]));
                    super::revolute::write_gamma(anchor_a, anchor_b, (rotations[a], v[3 * a + 2]), b, out);
                }
            }
            self.update_body_weights(scene);
            return Ok(());
        }
        // pins only, and the row blocks and J hold a full evaluation of these
        // very pins: their constant entries (J's unit and zero columns, the
        // padding row, the flags, the zero velocity bias) are in place, so
        // only the angular columns of J, C and γ are written — 8 of a row
        // block's 29 values and 4 of J's 18 (issue 10: the row blocks' and
        // J's stores were ≈ 8 % of a small linkage's step)
        if all_pins && self.pin_constants_in_place && self.blocks.len() == items.len() && self.jac_fits(scene) {
            return self.assemble_pins_in_place(scene, rotations_changed, q, v);
        }
        self.pin_constants_in_place = false;
        let rotations = &self.rotations;
        let eval = |c: &super::Constraint, out: &mut RowBlock| {
            let a = c.body_a.0;
            match (&c.kind, rotations.is_empty()) {
                (super::ConstraintKind::Revolute { anchor_a, anchor_b }, false) => super::revolute::write_block(
                    *anchor_a,
                    *anchor_b,
                    (rotations[a], body_state(q, a), body_state(v, a)),
                    c.body_b.map(|h| (rotations[h.0], body_state(q, h.0), body_state(v, h.0))),
                    out,
                ),
                _ => {
                    let b = c.body_b.map(|h| (body_state(q, h.0), body_state(v, h.0)));
                    *out = c.evaluate(t, (body_state(q, a), body_state(v, a)), b, scene.bodies, scene.surfaces);
                }
            }
        };
        self.blocks.resize(items.len(), RowBlock::default());
        if items.len() >= PARALLEL_ROWS {
            self.blocks.par_iter_mut().zip(items.par_iter()).for_each(|(out, c)| eval(c, out));
        } else {
            self.blocks.iter_mut().zip(items).for_each(|(out, c)| eval(c, out));
        }
        self.update_body_weights(scene);
        // pins only, no body turned since the last fill (the first stage of a
        // step, at the positions the projections ended on): J is bit for bit
        // the one in place (the generation check: the same constraints)
        if all_pins && !rotations_changed && self.jac_from_rotations && self.jac_fits(scene) {
            self.record_fill_positions(q);
            self.pin_constants_in_place = true;
            return Ok(());
        }
        self.jac_from_rotations = false;
        self.fill_jacobian(scene)?;
        self.jac_from_rotations = all_pins;
        self.pin_constants_in_place = all_pins;
        self.record_fill_positions(q);
        Ok(())
    }

    /// The pins-only assembly when the row blocks and J hold a full
    /// evaluation of the same pins (`pin_constants_in_place`, J fitting
    /// this set): writes the state-dependent entries alone
    /// ([`revolute::write_varying`](super::revolute::write_varying), the
    /// expressions of a full evaluation: the same bits). J is left as it is,
    /// keeping its values identity, when no body turned since its last fill.
    #[inline(never)]
    fn assemble_pins_in_place(
        &mut self,
        scene: Scene,
        rotations_changed: bool,
        q: &[f64],
        v: &[f64],
    ) -> Result<(), SolverError> {
        let items = scene.constraints.as_slice();
        let rotations = &self.rotations;
        // (inlined: as a call, its result went through the stack and its
        // reloads stalled on store forwarding)
        #[inline(always)]
        fn ends(c: &super::Constraint, rotations: &[DVec2], q: &[f64], v: &[f64]) -> PinEnds {
            let a = c.body_a.0;
            // a `match`, not `Option::map`: the map's closure was not inlined
            #[allow(clippy::manual_map)]
            let b = match c.body_b {
                Some(h) => Some((rotations[h.0], body_state(q, h.0), body_state(v, h.0))),
                None => None,
            };
            ((rotations[a], body_state(q, a), body_state(v, a)), b)
        }
        let keep_jac = !rotations_changed && self.jac_from_rotations;
        let mut finite = true;
        if keep_jac {
            for (out, c) in self.blocks.iter_mut().zip(items) {
                if let super::ConstraintKind::Revolute { anchor_a, anchor_b } = c.kind {
                    let (a, b) = ends(c, rotations, q, v);
                    super::revolute::write_varying(anchor_a, anchor_b, a, b, out);
                }
            }
        } else {
            // a non-finite value is refused as `SparseJacobian::set_values`
            // refuses it (a test per pin, joined by a boolean `&`: a sum of
            // x·0 over the pins was a chain of additions, ≈ 1 % of the step)
            let jac_blocks = self.jac.values_mut();
            for ((out, c), pair) in self.blocks.iter_mut().zip(items).zip(jac_blocks.chunks_exact_mut(2)) {
                if let super::ConstraintKind::Revolute { anchor_a, anchor_b } = c.kind {
                    let (a, b) = ends(c, rotations, q, v);
                    let (col_a, col_b) = super::revolute::write_varying(anchor_a, anchor_b, a, b, out);
                    pair[0][2] = col_a[0];
                    pair[0][5] = col_a[1];
                    finite &= col_a[0].is_finite() & col_a[1].is_finite();
                    if let Some(col_b) = col_b {
                        pair[1][2] = col_b[0];
                        pair[1][5] = col_b[1];
                        finite &= col_b[0].is_finite() & col_b[1].is_finite();
                    }
                }
            }
        }
        self.update_body_weights(scene);
        if !finite {
            self.jac_from_rotations = false;
            return Err(SolverError::NonFinite("Jacobian block"));
        }
        self.jac_from_rotations = true;
        self.record_fill_positions(q);
        Ok(())
    }

    /// Keeps the positions (bits) of the rows just evaluated, for the
    /// γ-only assembly at the same positions.
    fn record_fill_positions(&mut self, q: &[f64]) {
        self.filled_at.clear();
        self.filled_at.extend_from_slice(bytemuck::cast_slice(q));
    }

    /// The number of pins (revolute joints) in `set`, counted once per
    /// generation of the set (a scan of the constraint list's kinds at every
    /// assembly was ≈ 1 % of a small linkage's step, issue 10).
    fn pin_count(&mut self, set: &ConstraintSet) -> usize {
        let key = (set.generation(), set.len());
        match self.pins_counted {
            Some((k, pins)) if k == key => pins,
            _ => {
                let pins = set.iter().filter(|c| matches!(c.kind, super::ConstraintKind::Revolute { .. })).count();
                self.pins_counted = Some((key, pins));
                pins
            }
        }
    }

    /// The inverse masses `(1/m, 1/m, 1/J)` of the bodies as of the last
    /// [`assemble`](Self::assemble) (zeros for fixed bodies; bitwise
    /// [`Body::inverse_mass`]). Empty before the first assembly.
    pub fn inverse_masses(&self) -> &[[f64; 3]] {
        &self.inv_mass
    }

    /// Whether J was built for this constraint set and body count and every
    /// constraint still has the rows it had (its slots can be refilled).
    fn jac_fits(&self, scene: Scene) -> bool {
        let key = (scene.constraints.generation(), scene.bodies.len(), self.jac.structure_id());
        self.jac_built_for == Some(key)
            && self.jac.n_constraints() == self.blocks.len()
            && self.blocks.iter().enumerate().all(|(c, b)| self.jac.rows(ConstraintId(c as u32)) == b.rows)
    }

    /// Writes the evaluated rows into J: into its fixed slots when J was built
    /// for this very constraint set and body count (a generation check, no
    /// comparison of the joint list) and every constraint still has the rows it
    /// had, else by rebuilding it constraint by constraint (with the checks of
    /// [`SparseJacobian::push`]).
    fn fill_jacobian(&mut self, scene: Scene) -> Result<(), SolverError> {
        if self.jac_fits(scene) {
            let mut finite = true;
            for (c, block) in self.blocks.iter().enumerate() {
                finite &= self.jac.set_values(ConstraintId(c as u32), &block.jac);
            }
            return if finite { Ok(()) } else { Err(SolverError::NonFinite("Jacobian block")) };
        }
        self.jac_built_for = None;
        self.jac.clear(scene.bodies.len());
        for (c, block) in scene.constraints.iter().zip(&self.blocks) {
            let a = (c.body_a.0, block.jac[0]);
            match c.body_b {
                Some(b) => self.jac.push(block.rows, &[a, (b.0, block.jac[1])])?,
                None => self.jac.push(block.rows, &[a])?,
            };
        }
        self.jac_built_for = Some((scene.constraints.generation(), scene.bodies.len(), self.jac.structure_id()));
        Ok(())
    }

    /// Solves for λ given the external forces `f` (3 per body) at the
    /// assembled state and adds the constraint forces Jᵀλ to `f`. Returns the
    /// power of the constraint forces, (Jᵀλ)·v — zero for ideal scleronomic
    /// constraints, the work rate of a motor otherwise.
    pub fn apply_forces(
        &mut self,
        scene: Scene,
        v: &[f64],
        f: &mut [f64],
        baumgarte: Option<f64>,
    ) -> Result<f64, SolverError> {
        let n = self.jac.n_rows();
        // light rotations: the dense augmented solve in a small system (the
        // raised iteration where it declines), the raised iteration in a
        // large one (modules `augmented`, `raised`)
        let augmented = self.augmented.prepare(scene.constraints, n);
        if self.metric_raised && !augmented {
            if let Some(power) = self.apply_forces_raised(scene, v, f, baumgarte)? {
                return Ok(power);
            }
            self.lower_metric(scene);
        }
        // rhs = −γ − J M⁻¹ f (− 2αĊ − α²C): the accelerations a = M⁻¹(f + Jᵀλ)
        // then satisfy J a + γ = 0 (seed 003 §III).
        self.scratch.resize(f.len(), 0.0);
        // (by body triples: no bounds check per entry)
        for ((s, fi), inv) in self.scratch.chunks_exact_mut(3).zip(f.chunks_exact(3)).zip(&self.inv_mass) {
            for k in 0..3 {
                s[k] = inv[k] * fi[k];
            }
        }
        self.rhs.resize(n, 0.0);
        self.jac.mul(&self.scratch, &mut self.rhs)?;
        let mut jv = std::mem::take(&mut self.scratch_rows);
        jv.resize(if baumgarte.is_some() { n } else { 0 }, 0.0);
        if baumgarte.is_some() {
            self.jac.mul(v, &mut jv)?;
        }
        write_rhs(&self.blocks, &jv, baumgarte, &mut self.rhs);
        if augmented {
            // b with the augmented rotations left out of M⁻¹f (module
            // `augmented`): J times M⁻¹f without them, then as above
            for &body in self.augmented.bodies() {
                self.scratch[3 * body as usize + 2] = 0.0;
            }
            self.rhs_augmented.resize(n, 0.0);
            self.jac.mul(&self.scratch, &mut self.rhs_augmented)?;
            write_rhs(&self.blocks, &jv, baumgarte, &mut self.rhs_augmented);
        }
        self.scratch_rows = jv;
        self.lambda.resize(n, 0.0);
        self.held_factor = None;
        let (rank_deficient, badly_scaled, solved_augmented) = if augmented {
            // the rank decision as always (in the metric G), then the dense
            // augmented solve where J has full rank and no blend towards the
            // regularised λ is due (away from a singular configuration)
            let rep = self.solver.factor_held(&self.jac)?;
            let dense =
                rep.rank_deficient.is_empty() && (rep.regularization_weight == 0.0 || !rep.badly_scaled.is_empty());
            let ok = dense
                && self.augmented.solve(
                    scene.constraints,
                    &self.blocks,
                    &self.inv_mass,
                    &self.rank_weights,
                    &self.rhs_augmented,
                    f,
                    &mut self.lambda,
                    &mut self.alpha,
                );
            if ok {
                (rep.rank_deficient, rep.badly_scaled, true)
            } else if self.metric_raised {
                // the dense solve declined (a dependent row, the blend band
                // of a singular configuration): the raised iteration
                if let Some(power) = self.apply_forces_raised(scene, v, f, baumgarte)? {
                    return Ok(power);
                }
                self.lower_metric(scene);
                let rep = self.solver.solve_held(&self.jac, &self.rhs, &mut self.lambda)?;
                (rep.rank_deficient, rep.badly_scaled, false)
            } else {
                let rep = self.solver.solve_factored(&self.rhs, &mut self.lambda)?;
                (rep.rank_deficient, rep.badly_scaled, false)
            }
        } else {
            let rep = self.solver.solve_held(&self.jac, &self.rhs, &mut self.lambda)?;
            (rep.rank_deficient, rep.badly_scaled, false)
        };
        self.held_factor = Some(self.pattern());
        // (after the augmented solve, A singular in f64 is no loss: λ and α
        // did not come from it, and nothing is regularised)
        let badly_scaled = if solved_augmented { None } else { Some(badly_scaled) };
        self.record_warnings(scene, rank_deficient, badly_scaled);
        // (mul_transpose overwrites the scratch)
        self.jac.mul_transpose(&self.lambda, &mut self.scratch)?;
        // the forces by body triples (no bounds check per entry); the power,
        // a chain of additions in body order, in a loop of its own
        let mut power = 0.0;
        for ((fi, s), inv) in f.chunks_exact_mut(3).zip(self.scratch.chunks_exact(3)).zip(&self.inv_mass) {
            if *inv != [0.0; 3] {
                // a fixed body takes no force
                for k in 0..3 {
                    fi[k] += s[k];
                }
            }
        }
        if solved_augmented {
            // the torque that gives the solved α exactly: a = M⁻¹f then
            // returns α (to two roundings) instead of (τ + (Jᵀλ)_θ)/I
            for (&body, &alpha) in self.augmented.bodies().iter().zip(&self.alpha) {
                let body = body as usize;
                f[3 * body + 2] = alpha / self.inv_mass[body][2];
            }
        }
        for ((s, inv), vi) in self.scratch.chunks_exact(3).zip(&self.inv_mass).zip(v.chunks_exact(3)) {
            if *inv != [0.0; 3] {
                for k in 0..3 {
                    power += s[k] * vi[k];
                }
            }
        }
        Ok(power)
    }

    /// Formats a warning when the set of named constraints changes (not
    /// step after step: no allocation per step, issue 10). `badly_scaled`
    /// None: not to be reported (λ did not come from that A).
    fn record_warnings(
        &mut self,
        scene: Scene,
        rank_deficient: std::sync::Arc<[ConstraintId]>,
        badly_scaled: Option<std::sync::Arc<[ConstraintId]>>,
    ) {
        let names = |ids: &[ConstraintId]| -> Vec<String> {
            ids.iter().filter_map(|id| scene.constraints.iter().nth(id.index()).map(|c| c.name.clone())).collect()
        };
        if let Some(badly_scaled) = badly_scaled
            && !badly_scaled.is_empty()
            && *badly_scaled != *self.warned_badly_scaled
        {
            self.warnings.insert(format!(
                "constraints {} are independent but their bodies' inertias are too small for their size (J ≪ m·ℓ²) to be resolved in f64: multipliers regularised; model such bodies as shape: Point",
                names(&badly_scaled).join(", ")
            ));
            self.warned_badly_scaled = badly_scaled;
        }
        if !rank_deficient.is_empty() && *rank_deficient != *self.warned_rank_deficient {
            self.warnings.insert(format!(
                "redundant or singular constraints: {} (multipliers regularised to the minimal norm)",
                names(&rank_deficient).join(", ")
            ));
            self.warned_rank_deficient = rank_deficient;
        }
    }

    /// Forces the path of light rotations (tests only): the dense augmented
    /// solve up to `dense_limit` unknowns, and the raised iteration or, with
    /// `raise` false, the normal equations with the true inertias beyond it.
    #[cfg(test)]
    pub(crate) fn force_light_path(&mut self, dense_limit: usize, raise: bool) {
        self.augmented.set_limit(dense_limit);
        self.raise_disabled = !raise;
        self.metric_for = None;
    }

    /// Whether A is built with the light rotations raised (module `raised`;
    /// tests only).
    #[cfg(test)]
    pub(crate) fn metric_raised(&self) -> bool {
        self.metric_raised
    }

    /// (constraints, rows, bodies) of the assembled J.
    fn pattern(&self) -> (usize, usize, usize) {
        (self.jac.n_constraints(), self.jac.n_rows(), self.jac.n_bodies())
    }

    /// Factors A = J M⁻¹ Jᵀ of the assembled J and records that the solver
    /// holds it.
    fn factor_assembled(&mut self) -> Result<(), SolverError> {
        self.held_factor = None;
        self.solver.factor_held(&self.jac)?;
        self.held_factor = Some(self.pattern());
        Ok(())
    }

    /// The reaction of each constraint on its first body, from the λ of the
    /// last [`apply_forces`](Self::apply_forces).
    pub fn reactions(&self, scene: Scene) -> Vec<Reaction> {
        let mut row = 0;
        let mut out = Vec::with_capacity(self.blocks.len());
        for (c, block) in scene.constraints.iter().zip(&self.blocks) {
            let mut w = [0.0; 3];
            for r in 0..block.rows {
                let l = self.lambda.get(row + r).copied().unwrap_or(0.0);
                for (k, wk) in w.iter_mut().enumerate() {
                    *wk += block.jac[0][r][k] * l;
                }
            }
            row += block.rows;
            out.push(Reaction { constraint: c.name.clone(), fx: w[0], fy: w[1], torque: w[2] });
        }
        out
    }

    /// The multipliers of the last solve, by row.
    pub fn lambda(&self) -> &[f64] {
        &self.lambda
    }

    /// The Jacobian of the last assembly.
    pub fn jacobian(&self) -> &SparseJacobian {
        &self.jac
    }

    /// The rows of the last assembly, one block per constraint.
    pub fn blocks(&self) -> &[RowBlock] {
        &self.blocks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::BodyHandle;
    use crate::constraint::{Constraint, ConstraintKind};
    use crate::shape::Shape;

    /// A parallelogram four-bar (cranks 1 m, coupler 2 m, one degree of
    /// freedom): positions (x, y, φ) of the three bars in the closed
    /// configuration with the cranks at angle `phi` from the ground.
    fn four_bar() -> (Vec<Body>, ConstraintSet) {
        let bar = |name: &str, mass: f64| {
            Body::builder(name, Shape::Circle { radius: 0.5 }).mass(mass).build().expect("body")
        };
        let bodies = vec![bar("crank", 1.0), bar("coupler", 3.0), bar("rocker", 0.5)];
        let mut set = ConstraintSet::new();
        let pin = |name: &str, a: usize, b: Option<usize>, pa: (f64, f64), pb: (f64, f64)| Constraint {
            name: name.into(),
            body_a: BodyHandle(a),
            body_b: b.map(BodyHandle),
            kind: ConstraintKind::Revolute { anchor_a: DVec2::new(pa.0, pa.1), anchor_b: DVec2::new(pb.0, pb.1) },
        };
        set.insert(pin("ground_crank", 0, None, (-0.5, 0.0), (0.0, 0.0)));
        set.insert(pin("crank_coupler", 0, Some(1), (0.5, 0.0), (-1.0, 0.0)));
        set.insert(pin("coupler_rocker", 1, Some(2), (1.0, 0.0), (0.5, 0.0)));
        set.insert(pin("rocker_ground", 2, None, (-0.5, 0.0), (2.0, 0.0)));
        (bodies, set)
    }

    fn closed(phi: f64) -> Vec<f64> {
        let (c, s) = (phi.cos(), phi.sin());
        vec![0.5 * c, 0.5 * s, phi, 1.0 + c, s, 0.0, 2.0 + 0.5 * c, 0.5 * s, phi]
    }

    /// A deterministic disturbance of every coordinate, of size `size`.
    fn disturbed(q: &[f64], size: f64) -> Vec<f64> {
        q.iter().enumerate().map(|(i, x)| x + size * ((i as f64 * 1.7).sin() + 0.3)).collect()
    }

    /// The chord projection on a held factor (issue 10) lands where the
    /// projection on a fresh factor does: every chord correction lies in
    /// q₀ + range(M⁻¹J₀ᵀ), and that 8-dimensional affine set meets the
    /// 1-dimensional constraint manifold in one point near q₀ whatever A is
    /// used for μ. So the two results differ by the convergence tolerance
    /// only: |C| ≤ 1e-12 m at the end, so ≤ 1e-10 between them (generous: the
    /// Jacobian's conditioning here is O(1)). With a held factor from far away
    /// (the cranks 0.8 rad apart: A off by O(1)) the contraction test makes
    /// the projection factor afresh, and it still converges; with one from
    /// nearby (1e-6) it converges on the held factor.
    #[test]
    fn projection_on_a_held_factor_lands_where_a_fresh_one_does() {
        let (bodies, set) = four_bar();
        let scene = Scene { bodies: &bodies, constraints: &set, surfaces: &[] };
        let settings = Stabilization::default();
        let v = vec![0.0; 9];
        let start = disturbed(&closed(0.9), 1e-3);

        let mut fresh = ConstraintSystem::default();
        let mut q_fresh = start.clone();
        let err = fresh.project_positions(scene, 0.0, &mut q_fresh, &v, &settings).expect("projection");
        assert!(err <= 1e-12, "fresh factor: |C| = {err:e}");

        for (label, held_at) in [("near", disturbed(&closed(0.9), 1e-6)), ("far", closed(0.1))] {
            let mut held = ConstraintSystem::default();
            held.assemble(scene, 0.0, &held_at, &v).expect("assembly");
            let mut f = vec![0.0; 9];
            held.apply_forces(scene, &v, &mut f, None).expect("forces"); // holds A at `held_at`
            let mut q = start.clone();
            let err = held.project_positions(scene, 0.0, &mut q, &v, &settings).expect("projection");
            assert!(err <= 1e-12, "{label} held factor: |C| = {err:e}");
            if label == "near" {
                let gap = q.iter().zip(&q_fresh).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
                assert!(gap <= 1e-10, "near held factor lands {gap:e} from the fresh projection");
            }
        }
    }

    /// A system of pins reassembled at positions whose angles did not change
    /// (the first RK stage after the projections: new velocities only) keeps
    /// J unwritten, so the solver finds the J it factored last and keeps the
    /// factor; the multipliers are bitwise those of a system that fills J.
    /// Turning a body fills J again and factors anew.
    #[test]
    fn pins_at_unchanged_angles_keep_the_factor() {
        let (bodies, set) = four_bar();
        let scene = Scene { bodies: &bodies, constraints: &set, surfaces: &[] };
        let q = closed(0.7);
        let (v1, v2) = (disturbed(&[0.0; 9], 0.2), disturbed(&[0.0; 9], -0.5));
        let mut system = ConstraintSystem::default();
        let mut f = vec![0.0; 9];
        system.assemble(scene, 0.0, &q, &v1).expect("assembly");
        system.apply_forces(scene, &v1, &mut f, None).expect("forces");
        let reused = system.solver.reused_factorizations();
        system.assemble(scene, 0.0, &q, &v2).expect("assembly");
        let mut f_kept = vec![0.0; 9];
        system.apply_forces(scene, &v2, &mut f_kept, None).expect("forces");
        assert_eq!(system.solver.reused_factorizations(), reused + 1, "same angles: the factor is kept");
        let mut other = ConstraintSystem::default();
        other.assemble(scene, 0.0, &q, &v2).expect("assembly");
        let mut f_fresh = vec![0.0; 9];
        other.apply_forces(scene, &v2, &mut f_fresh, None).expect("forces");
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&f_kept), bits(&f_fresh));
        assert_eq!(bits(system.lambda()), bits(other.lambda()));
        // one body turned: J is filled and A factored again
        let mut turned = q.clone();
        turned[5] += 1e-9;
        system.assemble(scene, 0.0, &turned, &v2).expect("assembly");
        system.apply_forces(scene, &v2, &mut f_kept, None).expect("forces");
        assert_eq!(system.solver.reused_factorizations(), reused + 1, "a turned body: factored anew");
        other.assemble(scene, 0.0, &turned, &v2).expect("assembly");
        other.apply_forces(scene, &v2, &mut f_fresh, None).expect("forces");
        assert_eq!(bits(system.lambda()), bits(other.lambda()));
    }

    /// A system of pins reassembled at the positions of its last fill (the
    /// first RK stage after the projections) evaluates only γ: its rows are
    /// bitwise those of a fresh system's full evaluation at the new
    /// velocities — world pins included — and a move of a body's centre that
    /// keeps every angle (so no rotation changes) is not taken for the same
    /// positions.
    #[test]
    fn pins_at_the_last_positions_update_gamma_only() {
        let (bodies, set) = four_bar();
        let scene = Scene { bodies: &bodies, constraints: &set, surfaces: &[] };
        let q = closed(0.7);
        let (v1, v2) = (disturbed(&[0.0; 9], 0.2), disturbed(&[0.0; 9], -0.5));
        let bits = |b: &[RowBlock]| {
            b.iter()
                .flat_map(|r| {
                    let jac = r.jac.iter().flatten().flatten();
                    jac.chain(&r.value).chain(&r.velocity_bias).chain(&r.gamma).map(|x| x.to_bits()).collect::<Vec<_>>()
                })
                .collect::<Vec<_>>()
        };
        let mut system = ConstraintSystem::default();
        system.assemble(scene, 0.0, &q, &v1).expect("assembly");
        system.assemble(scene, 0.0, &q, &v2).expect("assembly at the same positions");
        let mut fresh = ConstraintSystem::default();
        fresh.assemble(scene, 0.0, &q, &v2).expect("assembly");
        assert_eq!(bits(system.blocks()), bits(fresh.blocks()));
        assert_ne!(bits(system.blocks()), {
            let mut other = ConstraintSystem::default();
            other.assemble(scene, 0.0, &q, &v1).expect("assembly");
            bits(other.blocks())
        });
        // the coupler moved, no angle changed: C changes, and must be evaluated
        let mut moved = q.clone();
        moved[3] += 1e-3;
        system.assemble(scene, 0.0, &moved, &v2).expect("assembly");
        let mut fresh = ConstraintSystem::default();
        fresh.assemble(scene, 0.0, &moved, &v2).expect("assembly");
        assert_eq!(bits(system.blocks()), bits(fresh.blocks()));
        assert!(system.max_error() > 5e-4, "the move shows in C: {:e}", system.max_error());
    }

    /// Pins reassembled at new positions after a full evaluation write only
    /// the state-dependent entries (the angular columns of J, C and γ): the
    /// row blocks (flags and row counts included) and J are bitwise those of
    /// a fresh evaluation, world pins included, at positions with every
    /// angle changed and with none changed; a non-finite angular column is
    /// refused as the full fill refuses it.
    #[test]
    fn pins_reassembled_in_place_match_a_fresh_evaluation() {
        let (bodies, set) = four_bar();
        let scene = Scene { bodies: &bodies, constraints: &set, surfaces: &[] };
        let bits = |b: &[RowBlock]| {
            b.iter()
                .flat_map(|r| {
                    let jac = r.jac.iter().flatten().flatten();
                    let flags = r.holonomic.iter().map(|&h| h as u64).chain([r.rows as u64]);
                    let values = jac.chain(&r.value).chain(&r.velocity_bias).chain(&r.gamma).map(|x| x.to_bits());
                    values.chain(flags).collect::<Vec<_>>()
                })
                .collect::<Vec<_>>()
        };
        let jac_bits = |j: &SparseJacobian| bytemuck::cast_slice::<_, u64>(&j.blocks).to_vec();
        let v = disturbed(&[0.0; 9], 0.3);
        let mut system = ConstraintSystem::default();
        system.assemble(scene, 0.0, &closed(0.7), &v).expect("assembly");
        assert!(system.pin_constants_in_place);
        let turned = disturbed(&closed(0.9), 1e-3);
        let mut shifted = turned.clone();
        shifted[3] += 1e-3; // the coupler moves, no angle changes
        for q in [turned, shifted] {
            system.assemble(scene, 0.0, &q, &v).expect("assembly in place");
            let mut fresh = ConstraintSystem::default();
            fresh.assemble(scene, 0.0, &q, &v).expect("assembly");
            assert_eq!(bits(system.blocks()), bits(fresh.blocks()));
            assert_eq!(jac_bits(system.jacobian()), jac_bits(fresh.jacobian()));
            assert!(system.max_error() > 1e-4, "the state shows in C: {:e}", system.max_error());
        }
        let mut broken = closed(0.7);
        broken[2] = f64::NAN;
        assert!(matches!(system.assemble(scene, 0.0, &broken, &v), Err(SolverError::NonFinite(_))));
    }

    /// The unit-free error with one division (the largest |C| over the
    /// length) is bitwise the largest of the per-row quotients, for lengths
    /// small and large, and `max_error` the largest |C|.
    #[test]
    fn unit_free_error_with_one_division_is_the_largest_quotient() {
        let (bodies, set) = four_bar();
        let scene = Scene { bodies: &bodies, constraints: &set, surfaces: &[] };
        let mut system = ConstraintSystem::default();
        system.assemble(scene, 0.0, &disturbed(&closed(0.4), 3e-3), &[0.0; 9]).expect("assembly");
        let per_row = |length: f64| {
            let rows = system.blocks().iter().flat_map(|b| (0..b.rows).map(move |r| b.value[r].abs() / length));
            rows.fold(0.0, f64::max)
        };
        for length in [1.0, 0.37, 3e-3, 1.7e-7, 1e10, 0.0, -2.0, f64::NAN] {
            assert_eq!(system.max_unit_free_error(length).to_bits(), per_row(length).to_bits(), "length {length}");
        }
        assert_eq!(system.max_error().to_bits(), per_row(1.0).to_bits());
        assert!(system.max_error() > 1e-4);
    }

    /// `project_positions` leaves the system assembled at the projected q, so
    /// the velocity correction that follows it without an assembly gives
    /// bitwise the velocities of `project_velocities` (which assembles).
    #[test]
    fn velocity_projection_after_position_projection_needs_no_assembly() {
        let (bodies, set) = four_bar();
        let scene = Scene { bodies: &bodies, constraints: &set, surfaces: &[] };
        let settings = Stabilization::default();
        let mut q = disturbed(&closed(0.4), 1e-4);
        let v0 = disturbed(&[0.0; 9], 0.3);
        let mut system = ConstraintSystem::default();
        system.project_positions(scene, 0.0, &mut q, &v0, &settings).expect("projection");
        let mut v_reused = v0.clone();
        system.velocity_correction(scene, &mut v_reused, 1.0).expect("velocity correction");
        let mut other = ConstraintSystem::default();
        let mut v_assembled = v0.clone();
        other.project_velocities(scene, 0.0, &q, &mut v_assembled).expect("velocity projection");
        assert_eq!(v_reused, v_assembled);
        // and the projection did its job: J v = 0 to roundoff (|v| ~ 1 m/s)
        let mut jv = vec![0.0; system.jacobian().n_rows()];
        system.jacobian().mul(&v_reused, &mut jv).expect("J v");
        assert!(jv.iter().all(|x| x.abs() < 1e-13), "J v = {jv:?}");
    }
}
