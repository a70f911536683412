//! Stage `project_penetration` on the exact path (after `contact_solve`): penetration
//! projected out on the **true** gaps, not the linearised ones.
//!
//! [`ContactSet::finish`] projects the contacts of the step's narrowphase
//! on their gaps linearised at the narrowphase's positions, four sweeps:
//! exact for a translation along a fixed normal, not for a body that turns,
//! blind to a contact that was apart at the narrowphase and closes in the
//! position update, and short of converged in a pile, where pushing one
//! body out pushes it into the next. In a 100-shape drop the three left
//! 0.09 m of true overlap.
//!
//! This pass is a Newton iteration on the position constraints gₖ(q) ≥ 0,
//! the way the joints' drift is removed ([`crate::constraint::system`]):
//! 1. the exact narrowphase of every candidate pair at the current
//!    positions q⁰ (gap ≤ slop);
//! 2. the smallest mass-weighted translation Δq (min ½ ΔqᵀMΔq, the bodies'
//!    angles held) with gₖ + Jₖ Δq ≥ targetₖ for every point within a reach
//!    of ¼ of the smallest body's bounding radius: target 0 for a point
//!    deeper than the slop (it is put back on the surface), min(gₖ, 0) for
//!    the others (a point touching or near must not be pushed deeper by its
//!    neighbours' moves — without these rows a correction pushed bodies into
//!    neighbours they did not touch yet, and the next round found as much
//!    overlap elsewhere). Its multipliers μₖ ≥ 0 (Δq = M⁻¹ Jᵀ μ) are found by projected
//!    Gauss–Seidel on the linearised rows, until a sweep finds every row
//!    held to 10 % of the slop (a criterion on the largest impulse change
//!    instead stopped slow sweeps with rows still violated: at 1 % of the
//!    slop the 100-shape drop kept 8 mm) or [`PROJECTION_SWEEPS`] sweeps — cheap, no narrowphase in
//!    the loop;
//! 3. back to 1 while the true overlap is deeper than the slop, at most
//!    [`PROJECTION_ROUNDS`] times.
//!
//! Why translations only: a curved body on a flat face has one contact
//! point, and a correction through it with the rotational inverse mass
//! rocks the body onto its other side — measured on the pile, the deepest
//! point then flipped sides round after round and 0.03 m stayed. A
//! translation along a normal changes a convex gap to first order exactly
//! as linearised. Why rounds of linearised rows: one Gauss–Seidel sweep per
//! narrowphase (Box2D v2.4's position solver with the gaps evaluated again)
//! converged linearly in the pile, ~50 narrowphases in a step; rounds of
//! solved linear problems need 1–3 (measured on the 100-shape drop, 3 s:
//! 84 steps one round, 73 two, 12 three), and the deepest true overlap
//! falls from 0.09 m to below the slop (1 mm; `tests/contact_narrowphase_pile.rs`).
//!
//! The last narrowphase's deepest overlap is what the summary reports as
//! `max_penetration` (measured at the step's final positions when the
//! rounds end with nothing beyond the slop, else the overlap the last round
//! started from). Velocities are not touched — drift removal, like the
//! joints' projection — and when nothing is deeper than the slop nothing
//! moves, so the closed-form scenes are unchanged bit for bit (the pass
//! still costs a broadphase and a narrowphase of every pair each step,
//! timed as the stage `project_penetration`).

use glam::DVec2;

use super::{Contact, ContactSet, Partner};
use crate::body::Body;
use crate::constraint::ConstraintSet;
use crate::integrator::State;
use crate::solver::pgs;
use crate::surface::Surface;

/// Narrowphase rounds per step. When the cap is reached the last round's
/// correction is not measured again: the reported overlap is the one that
/// round started from (a 300-shape drop in 12 columns reaches the cap).
pub const PROJECTION_ROUNDS: usize = 8;
/// Gauss–Seidel sweeps of one round's linearised problem, at most.
pub const PROJECTION_SWEEPS: usize = 200;

/// One linearised position row: g + J Δq ≥ target, on the translations
/// only (the angles are held, so the row's rotational entries would only
/// ever multiply a zero change: they are not stored — 88 bytes a row instead
/// of a 264-byte contact block, the sweeps being memory-bound).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct PositionRow {
    body_a: usize,
    /// `None` for a static surface.
    body_b: Option<usize>,
    /// The normal row's translation entries for body a and body b.
    normal_a: DVec2,
    normal_b: DVec2,
    /// Gap at the round's positions.
    gap: f64,
    /// Lowest gap allowed after the round.
    target: f64,
    /// J M⁻¹ Jᵀ of the normal row.
    k: f64,
    /// Accumulated position multiplier μ ≥ 0.
    mu: f64,
}

impl ContactSet {
    /// Projects penetration deeper than the slop out of positions `q` on
    /// the exact gaps of the candidate pairs (see the module docs) and
    /// records the deepest overlap measured. Returns it (m, ≥ 0).
    pub fn project_penetration(
        &mut self,
        bodies: &[Body],
        surfaces: &[Surface],
        constraints: &ConstraintSet,
        q: &mut [f64],
    ) -> f64 {
        if self.pairs.is_empty() {
            return 0.0;
        }
        self.ensure_hulls(bodies);
        let slop = self.slop(bodies);
        // Points still apart by up to `reach` are rows too (target 0): a
        // correction must not push a body into a neighbour it does not
        // touch yet.
        let reach = bodies
            .iter()
            .filter(|b| !b.fixed)
            .map(|b| 0.25 * b.shape.bounding_radius())
            .fold(f64::INFINITY, f64::min)
            .max(slop);
        if !reach.is_finite() {
            // No movable body (the step's pairs would be empty): nothing to project.
            return 0.0;
        }
        // The step's pairs came from boxes swept along the motion predicted
        // before its impacts; a body deflected by one can meet a body that
        // is not among them (measured: 0.14 m of overlap with an unlisted
        // pair in the 100-shape drop). The pairs of the final positions,
        // within the reach, are the ones that can touch now.
        self.broadphase_within(bodies, surfaces, constraints, q, q, reach);
        // Translations only (see the module docs); kept between steps.
        let mut inv = std::mem::take(&mut self.projection_inv);
        inv.clear();
        inv.extend(bodies.iter().flat_map(|b| {
            let [x, y, _] = b.inverse_mass();
            [x, y, 0.0]
        }));
        let mut rows = std::mem::take(&mut self.projection_rows);
        let mut q_round = std::mem::take(&mut self.projection_q);
        let mut moved = std::mem::take(&mut self.projection_moved);
        moved.clear();
        moved.resize(bodies.len(), true);
        rows.clear();
        let mut overlap = 0.0_f64;
        for _ in 0..PROJECTION_ROUNDS {
            // 1. The exact points at the current positions, for the pairs
            //    with a body the last round moved (all in the first round);
            //    the other pairs' rows still hold: neither body moved.
            rows.retain(|r| !moved[r.body_a] && !r.body_b.is_some_and(|j| moved[j]));
            for row in rows.iter_mut() {
                row.mu = 0.0;
            }
            for k in 0..self.pairs.len() {
                let pair = self.pairs[k];
                let touched = moved[pair.a] || matches!(pair.b, Partner::Body(j) if moved[j]);
                if !touched {
                    continue;
                }
                self.collide_pair(bodies, surfaces, pair, q, reach);
                for m in self.scratch.iter() {
                    // A non-finite gap is the next narrowphase's error to
                    // report; it moves nothing here.
                    if !m.gap.is_finite() || !m.normal.is_finite() || !m.point.is_finite() {
                        continue;
                    }
                    let contact = Contact {
                        body_a: pair.a,
                        partner: pair.b,
                        manifold: *m,
                        material: Default::default(),
                        impulse: [0.0; 3],
                    };
                    let block = super::resting::block_for(&contact, q, 1);
                    let k = pgs::effective_mass(&block, &inv)[0][0];
                    if k > 0.0 && k.is_finite() {
                        let target = if -m.gap > slop { 0.0 } else { m.gap.min(0.0) };
                        let translation = |jac: &[[f64; 3]; 3]| DVec2::new(jac[0][0], jac[0][1]);
                        rows.push(PositionRow {
                            body_a: block.body_a,
                            body_b: block.body_b,
                            normal_a: translation(&block.jac_a),
                            normal_b: translation(&block.jac_b),
                            gap: m.gap,
                            target,
                            k,
                            mu: 0.0,
                        });
                    }
                }
            }
            overlap = rows.iter().map(|r| -r.gap).fold(0.0, f64::max);
            if overlap <= slop {
                break;
            }
            // 2. PGS on the linearised rows: gap now = g + J (q − q_round).
            q_round.clear();
            q_round.extend_from_slice(q);
            for _ in 0..PROJECTION_SWEEPS {
                // The deepest violation a row showed before its update: a
                // sweep in which every row already held (to 10 % of the
                // slop) ends the round — over-pushed rows relaxing back is
                // not worth more sweeps.
                let mut violation = 0.0_f64;
                for row in rows.iter_mut() {
                    let g = row.gap + displacement(row, q, &q_round);
                    violation = violation.max(row.target - g);
                    let mu = (row.mu + (row.target - g) / row.k).max(0.0);
                    let dmu = mu - row.mu;
                    if dmu != 0.0 {
                        row.mu = mu;
                        push(row, &inv, dmu, q);
                    }
                }
                if violation <= 0.1 * slop {
                    break;
                }
            }
            for (i, m) in moved.iter_mut().enumerate() {
                *m = q[3 * i..3 * i + 3] != q_round[3 * i..3 * i + 3];
            }
        }
        self.projection_moved = moved;
        self.projection_inv = inv;
        self.projection_rows = rows;
        self.projection_q = q_round;
        self.max_penetration = self.max_penetration.max(overlap);
        overlap
    }
}

/// J (q − q_round) of a row (translations; the angles do not change).
fn displacement(row: &PositionRow, q: &[f64], q_round: &[f64]) -> f64 {
    let a = row.body_a;
    let mut s = 0.0;
    s += row.normal_a.x * (q[3 * a] - q_round[3 * a]);
    s += row.normal_a.y * (q[3 * a + 1] - q_round[3 * a + 1]);
    if let Some(j) = row.body_b {
        s += row.normal_b.x * (q[3 * j] - q_round[3 * j]);
        s += row.normal_b.y * (q[3 * j + 1] - q_round[3 * j + 1]);
    }
    s
}

/// q += M⁻¹ Jᵀ dμ for one row (translations only: the projection's inverse
/// masses have no rotational part).
fn push(row: &PositionRow, inv: &[f64], dmu: f64, q: &mut [f64]) {
    let a = row.body_a;
    q[3 * a] += inv[3 * a] * (row.normal_a.x * dmu);
    q[3 * a + 1] += inv[3 * a + 1] * (row.normal_a.y * dmu);
    if let Some(j) = row.body_b {
        q[3 * j] += inv[3 * j] * (row.normal_b.x * dmu);
        q[3 * j + 1] += inv[3 * j + 1] * (row.normal_b.y * dmu);
    }
}

/// The velocity counterpart of the penetration projection. The projection
/// moves positions only (translations): where it pushes a body back by Δ, a
/// velocity that carries the body back along −Δ would sink it again in the
/// next step, and the projection would lift it again, step after step — a
/// motion the positions never make but the velocities keep, and gravity
/// adds to. A settled pile of mixed shapes (`balls_in_box`) did exactly
/// that: its velocity constraints, linearised, let the jammed pile "flow",
/// the projection undid the flow, and at 3 s its bodies lay still with
/// velocities of 1–9 m/s, downward, growing with height (median 5.8 m/s;
/// 1,576 J of kinetic energy that was none; docs/benchmarks.md
/// "session20"). So, after the projection (`World::contact_stages`), the velocity component along −Δ̂ is removed, up to the
/// speed |Δ|/h that would make the projected displacement again in one
/// step: it only ever slows a body (never turns a projection into a push:
/// no energy is made), and it leaves a body alone that the projection did
/// not move or that already moves along Δ (a separating impact). Returns
/// the kinetic energy removed (≤ 0), which is non-conservative work.
pub fn stop_what_it_undid(bodies: &[Body], q_before: &[f64], state: &mut State, h: f64) -> f64 {
    let mut work = 0.0;
    for (i, body) in bodies.iter().enumerate() {
        if body.fixed || body.mass <= 0.0 {
            continue;
        }
        let moved = DVec2::new(state.q[3 * i] - q_before[3 * i], state.q[3 * i + 1] - q_before[3 * i + 1]);
        let distance = moved.length();
        if distance == 0.0 {
            continue;
        }
        let direction = moved / distance;
        let v = DVec2::new(state.v[3 * i], state.v[3 * i + 1]);
        let back = -v.dot(direction);
        if back > 0.0 {
            let v_new = v + direction * back.min(distance / h);
            work += 0.5 * body.mass * (v_new.length_squared() - v.length_squared());
            state.v[3 * i] = v_new.x;
            state.v[3 * i + 1] = v_new.y;
        }
    }
    work
}
