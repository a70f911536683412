//! Resting and sliding contact (stage `contact_solve`): the rows of each
//! contact, their block PGS solve ([`crate::solver::pgs`]) and the position
//! projection that keeps penetration below the slop.
//!
//! Rows of a contact with normal n (from the partner to body a), tangent
//! t = n⊥ and lever arms r = point − centre:
//! normal `[n, r_a×n | −n, −r_b×n]`, tangent `[t, r_a×t | −t, −r_b×t]`,
//! rolling `[0, 0, 1 | 0, 0, −1]` (relative spin; only when μ_r > 0 and one
//! of the two is round — circle, ellipse, superellipse).
//!
//! Targets: the normal velocity may close what is left of a positive gap
//! within the step (uₙ* = −max(gap, 0)/h, a speculative contact), never
//! more; friction and rolling resistance aim at zero slip. The friction
//! coefficient is μ_s for a contact that stuck at the previous step (or is
//! new and not slipping) and μ_k for one that slid.

use glam::DVec2;

use super::{ContactError, ContactSet, inverse_masses};
use crate::body::Body;
use crate::integrator::{Method, State};
use crate::shape::Shape;
use crate::solver::pgs::{self, ContactBlock};
use crate::surface::Surface;

/// How much of a velocity change made at the end of a step the method
/// would have turned into displacement had it been a constant force over
/// the step: q₁ gains w·h·Δv. Symplectic Euler moves with the new velocity
/// (w = 1), explicit Euler with the old one (w = 0), the second- and
/// fourth-order methods integrate a constant force exactly (½ h² F/m: w = ½).
pub fn position_weight(method: Method) -> f64 {
    match method {
        Method::Euler => 0.0,
        Method::Symplectic => 1.0,
        _ => 0.5,
    }
}

fn round(shape: &Shape) -> bool {
    matches!(shape, Shape::Circle { .. } | Shape::Ellipse { .. } | Shape::Superellipse { .. })
}

fn cross(r: DVec2, n: DVec2) -> f64 {
    r.x * n.y - r.y * n.x
}

/// The rows of one contact at positions `q`, `rows` of them (2 or 3).
pub fn block_for(c: &super::Contact, q: &[f64], rows: usize) -> ContactBlock {
    let n = c.manifold.normal;
    let t = n.perp();
    let p = c.manifold.point;
    let centre = |i: usize| DVec2::new(q[3 * i], q[3 * i + 1]);
    let ra = p - centre(c.body_a);
    let jac_a = [[n.x, n.y, cross(ra, n)], [t.x, t.y, cross(ra, t)], [0.0, 0.0, 1.0]];
    let (body_b, jac_b) = match c.partner {
        super::Partner::Body(j) => {
            let rb = p - centre(j);
            (Some(j), [[-n.x, -n.y, -cross(rb, n)], [-t.x, -t.y, -cross(rb, t)], [0.0, 0.0, -1.0]])
        }
        super::Partner::Surface(_) => (None, [[0.0; 3]; 3]),
    };
    ContactBlock {
        body_a: c.body_a,
        body_b,
        jac_a,
        jac_b,
        rows,
        target_normal: 0.0,
        friction: c.material.friction,
        rolling_resistance: c.material.rolling_resistance,
        impulse: c.impulse,
    }
}

/// Row velocity of a block.
fn row(b: &ContactBlock, v: &[f64], r: usize) -> f64 {
    let mut u: f64 = (0..3).map(|d| b.jac_a[r][d] * v[3 * b.body_a + d]).sum();
    if let Some(j) = b.body_b {
        u += (0..3).map(|d| b.jac_b[r][d] * v[3 * j + d]).sum::<f64>();
    }
    u
}

/// Result of a contact solve.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SolveReport {
    /// PGS sweeps.
    pub iterations: usize,
    /// Reserved: impacts are applied by [`ContactSet::impacts_on_contacts`] before the solve.
    pub impacts: usize,
}

impl ContactSet {
    /// Stage `contact_solve`, velocity part, on the contacts of the last
    /// [`ContactSet::narrowphase`] (after [`ContactSet::impacts_on_contacts`]):
    /// the block PGS with friction and rolling resistance. Velocities in `state.v` change; positions do not (see
    /// [`ContactSet::finish`]). `v_narrowphase`: the velocities when the
    /// gaps were measured (the normal targets are computed from them).
    pub fn solve(
        &mut self,
        bodies: &[Body],
        state: &mut State,
        _v_narrowphase: &[f64],
        _h: f64,
        t: f64,
        resting_speed: f64,
    ) -> Result<SolveReport, ContactError> {
        let _ = t;
        if self.contacts.is_empty() {
            return Ok(SolveReport::default());
        }
        let inv = inverse_masses(bodies);
        let mut blocks: Vec<ContactBlock> = self
            .contacts
            .iter()
            .map(|c| {
                let other_round = match c.partner {
                    super::Partner::Body(j) => round(&bodies[j].shape),
                    super::Partner::Surface(_) => false,
                };
                let rolling = c.material.rolling_resistance > 0.0 && (round(&bodies[c.body_a].shape) || other_round);
                let mut b = block_for(c, &state.q, if rolling { 3 } else { 2 });
                if !rolling {
                    b.impulse[2] = 0.0;
                }
                // A touching contact may not approach (Signorini at velocity
                // level); the gap itself is made exact in `finish`. One not
                // yet touching that approaches fast is left to the next
                // step's time of impact (stopping it here would stop a
                // falling body short of the surface).
                let touching = c.manifold.gap <= touch_tolerance(&bodies[c.body_a]);
                b.target_normal =
                    if touching || row(&b, &state.v, 0) >= -resting_speed { 0.0 } else { f64::NEG_INFINITY };
                let slid = self.warm.get(&(c.body_a, c.partner, c.manifold.feature)).is_some_and(|w| w.1);
                // A new contact slips if it slides faster than gravity alone
                // could have made it within the step (the resting speed).
                let slipping = row(&b, &state.v, 1).abs() > resting_speed;
                if slid || (slipping && !self.warm.contains_key(&(c.body_a, c.partner, c.manifold.feature))) {
                    b.friction = c.material.kinetic();
                }
                b
            })
            .collect();
        let report = pgs::solve(&mut blocks, &inv, &mut state.v, self.settings.iterations, self.settings.tolerance);
        self.warm.clear();
        for (c, b) in self.contacts.iter_mut().zip(&blocks) {
            c.impulse = b.impulse;
            for x in &c.impulse {
                if !x.is_finite() {
                    return Err(ContactError {
                        body_a: bodies[c.body_a].name.clone(),
                        partner: super::partner_name(bodies, c.partner),
                        reason: "the contact impulse is not finite".into(),
                    });
                }
            }
            // Sliding: the contact point still slips after the solve (a
            // corner at its friction bound inside a sticking block does not).
            let sliding = row(b, &state.v, 1).abs() > 1e-6 * resting_speed;
            self.warm.insert((c.body_a, c.partner, c.manifold.feature), (b.impulse, sliding));
        }
        Ok(SolveReport { iterations: report.iterations, impacts: 0 })
    }

    /// Stage `contact_solve`, position part: moves `q` by w·h·(v − v_before)
    /// (the contact stage's velocity change turned into displacement as the
    /// integrator would have, [`position_weight`]), then projects pressing
    /// contacts (λₙ > 0) onto gap 0 and the others' penetration deeper than
    /// the slop back to gap 0 (nonlinear Gauss–Seidel on the linearised gaps,
    /// 4 sweeps, positions only: no velocity is added);
    /// [`ContactSet::project_penetration`] follows on the true gaps.
    pub fn finish(&mut self, bodies: &[Body], q: &mut [f64], v: &[f64], v_before: &[f64], h: f64) {
        let weight = self.position_weight;
        let q_narrow = q.to_vec();
        for (i, b) in bodies.iter().enumerate() {
            if b.fixed {
                continue;
            }
            for d in 0..3 {
                q[3 * i + d] += weight * h * (v[3 * i + d] - v_before[3 * i + d]);
            }
        }
        let slop = self.slop(bodies);
        let inv = inverse_masses(bodies);
        let blocks: Vec<ContactBlock> = self.contacts.iter().map(|c| block_for(c, &q_narrow, 2)).collect();
        let gaps0: Vec<f64> = self.contacts.iter().map(|c| c.manifold.gap).collect();
        let gap = |k: usize, q: &[f64]| {
            let b = &blocks[k];
            let mut g = gaps0[k];
            g += (0..3).map(|d| b.jac_a[0][d] * (q[3 * b.body_a + d] - q_narrow[3 * b.body_a + d])).sum::<f64>();
            if let Some(j) = b.body_b {
                g += (0..3).map(|d| b.jac_b[0][d] * (q[3 * j + d] - q_narrow[3 * j + d])).sum::<f64>();
            }
            g
        };
        for _ in 0..4 {
            let mut moved = false;
            for k in 0..blocks.len() {
                let g = gap(k, q);
                // A pressing contact (λₙ > 0) is put exactly at gap 0: the
                // end of a step split by an impact leaves it a little off,
                // and it is resting, so it belongs on the surface. Any other
                // contact only when it penetrates deeper than the slop.
                let pressing = self.contacts[k].impulse[0] > 0.0;
                // Zero within round-off: 1e-15 of the body's size (a fixed
                // 1e-15 m would depend on the length unit; the size is
                // looked up only for the contacts that may move).
                if (!pressing && g >= -slop) || g.abs() <= 1e-15 * bodies[blocks[k].body_a].shape.bounding_radius() {
                    continue;
                }
                let kn = pgs::effective_mass(&blocks[k], &inv)[0][0];
                if kn <= 0.0 {
                    continue;
                }
                pgs::apply_impulse(&blocks[k], &inv, [-g / kn, 0.0, 0.0], q);
                moved = true;
            }
            if !moved {
                break;
            }
        }
        // The gaps written out (contacts CSV) are these linearised ones;
        // the penetration the summary reports is measured on the true gaps
        // by the projection that follows ([`super::projection`]).
        for k in 0..blocks.len() {
            let g = gap(k, q);
            self.contacts[k].manifold.gap = g;
        }
    }

    /// Work of the contact forces over a step, from the impulses of the last
    /// solve spread evenly over it (force λ/h) and the displacement of the
    /// contact rows over the step, J·(q_end − q_start): zero for a resting
    /// contact, −μ_k λₙ × slip for a sliding one, −μ_r λₙ × relative turn for
    /// rolling resistance. (Impacts count their kinetic-energy change
    /// separately.)
    pub fn work(&self, q_start: &[f64], q_end: &[f64], h: f64) -> f64 {
        let mut work = 0.0;
        for c in &self.contacts {
            let b = block_for(c, q_end, 3);
            for r in 0..3 {
                let mut d: f64 =
                    (0..3).map(|k| b.jac_a[r][k] * (q_end[3 * b.body_a + k] - q_start[3 * b.body_a + k])).sum();
                if let Some(j) = b.body_b {
                    d += (0..3).map(|k| b.jac_b[r][k] * (q_end[3 * j + k] - q_start[3 * j + k])).sum::<f64>();
                }
                work += c.impulse[r] / h * d;
            }
        }
        work
    }

    /// Narrowphase at `state`, then the impacts there (see [`ContactSet::impacts_on_contacts`]).
    pub fn resolve_impacts(
        &mut self,
        bodies: &[Body],
        surfaces: &[Surface],
        state: &mut State,
        t: f64,
        resting_speed: f64,
    ) -> Result<usize, ContactError> {
        self.narrowphase(bodies, surfaces, &state.q)?;
        Ok(self.impacts_on_contacts(bodies, state, t, resting_speed))
    }
}

/// Gap below which a contact touches: 1e-9 of the body's bounding radius
/// (the impact time is refined to 1e-12 of it).
pub fn touch_tolerance(body: &Body) -> f64 {
    1e-9 * body.shape.bounding_radius()
}
