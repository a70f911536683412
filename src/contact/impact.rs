//! Impacts: Newton's law of restitution at the normal velocity, with the
//! rotational effective mass K = 1/m_a + (r_a×n)²/J_a + 1/m_b + (r_b×n)²/J_b
//! (seed 004 eq. 6 for discs, seed 003 §IV-D for the impulsive form).
//!
//! One impact: P = −(1 + e) vₙ / K along n, then a tangential impulse that
//! stops the sliding at the contact point if Coulomb allows it
//! (|Pₜ| ≤ μ_s P), else μ_s P against it. For e = 1 and no friction the
//! kinetic energy is kept exactly (P is an M-orthogonal reflection).
//!
//! Simultaneous impacts (Newton's cradle, a body hitting two things at
//! once) are solved by **propagation**: the touching contact approaching
//! fastest takes its Newton impulse first, the velocities change, and so on
//! until no touching contact approaches faster than the resting speed. With
//! e = 1 and equal masses this sends one ball out for one ball in, two for
//! two, as the cradle does; the simultaneous-LCP alternative (all Newton
//! laws at once on the pre-impact velocities) would move the whole row.
//! Each impulse is one of a sequence, each one a single-pair Newton impact,
//! so restitution per material pair holds contact by contact.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

use glam::DVec2;

use super::resting::block_for;
use super::{ContactSet, ImpactEvent, inverse_masses};
use crate::body::Body;
use crate::integrator::State;
use crate::solver::pgs;

/// Impact events kept (the oldest half is dropped past this).
const MAX_EVENTS: usize = 100_000;

impl ContactSet {
    /// Applies impact impulses at the contacts of the last narrowphase
    /// (gap ≤ slop) approaching faster than `resting_speed`;
    /// records one [`ImpactEvent`] per impulse at time `t` and adds the
    /// kinetic energy lost to `state.work`. Returns the number of impulses.
    pub fn impacts_on_contacts(&mut self, bodies: &[Body], state: &mut State, t: f64, resting_speed: f64) -> usize {
        if self.contacts.is_empty() {
            return 0;
        }
        let inv = inverse_masses(bodies);
        // Only touching contacts take impacts; one still apart is met by the
        // next step's time of impact.
        let touching: Vec<usize> = (0..self.contacts.len())
            .filter(|&k| {
                self.contacts[k].manifold.gap <= super::resting::touch_tolerance(&bodies[self.contacts[k].body_a])
            })
            .collect();
        let blocks: Vec<pgs::ContactBlock> =
            touching.iter().map(|&k| block_for(&self.contacts[k], &state.q, 2)).collect();
        let ks: Vec<[[f64; 3]; 3]> = blocks.iter().map(|b| pgs::effective_mass(b, &inv)).collect();
        let kinetic = |v: &[f64]| -> f64 {
            bodies
                .iter()
                .enumerate()
                .map(|(i, b)| {
                    0.5 * (b.mass * (v[3 * i].powi(2) + v[3 * i + 1].powi(2)) + b.inertia * v[3 * i + 2].powi(2))
                })
                .filter(|e| e.is_finite())
                .sum()
        };
        let before = kinetic(&state.v);
        // Round-off never counts as an approach: 1e-9 of the fastest body's
        // speed is the floor of the resting speed (zero without gravity).
        let fastest = state.v.chunks(3).map(|v| v[0].hypot(v[1])).fold(0.0, f64::max);
        let resting_speed = resting_speed.max(1e-9 * fastest);
        let limit = 100 * blocks.len() + 100;
        // The fastest approach is kept in a min-heap (ties: the lower index,
        // as a scan would pick) over each block's current normal velocity;
        // after an impulse only the blocks sharing a body that can move
        // change, and only theirs are evaluated again (stale entries are
        // skipped when popped). The choice is the scan's, impulse for
        // impulse (a body that cannot move only turns a −0 velocity into +0,
        // which never makes a row an approach); the scan was O(blocks) per
        // impulse, quadratic on a pile where most contacts approach.
        let movable = |i: usize| inv[3 * i..3 * i + 3].iter().any(|&w| w != 0.0);
        let bodies_of = |b: &pgs::ContactBlock| [Some(b.body_a), b.body_b];
        let mut first = vec![0usize; bodies.len() + 1];
        for b in &blocks {
            for i in bodies_of(b).into_iter().flatten().filter(|&i| movable(i)) {
                first[i + 1] += 1;
            }
        }
        for i in 0..bodies.len() {
            first[i + 1] += first[i];
        }
        let mut fill = first.clone();
        let mut adjacent = vec![0usize; first[bodies.len()]];
        for (k, b) in blocks.iter().enumerate() {
            for i in bodies_of(b).into_iter().flatten().filter(|&i| movable(i)) {
                adjacent[fill[i]] = k;
                fill[i] += 1;
            }
        }
        let mut approach: Vec<f64> = blocks.iter().map(|b| row(b, &state.v, 0)).collect();
        let mut heap: BinaryHeap<Reverse<Approach>> =
            approach.iter().enumerate().map(|(k, &vn)| Reverse(Approach { vn, k })).collect();
        let mut count = 0;
        while count < limit {
            let Some(Reverse(Approach { vn, k })) = heap.pop() else { break };
            if vn.to_bits() != approach[k].to_bits() {
                continue; // stale: the block's velocity changed since
            }
            if vn >= -resting_speed || vn.is_nan() || ks[k][0][0] <= 0.0 {
                break;
            }
            let c = self.contacts[touching[k]];
            let e = c.material.restitution;
            let pn = -(1.0 + e) * vn / ks[k][0][0];
            pgs::apply_impulse(&blocks[k], &inv, [pn, 0.0, 0.0], &mut state.v);
            // Coulomb-bounded tangential impulse.
            let vt = row(&blocks[k], &state.v, 1);
            let mu = c.material.friction;
            let pt = if ks[k][1][1] > 0.0 { (-vt / ks[k][1][1]).clamp(-mu * pn, mu * pn) } else { 0.0 };
            pgs::apply_impulse(&blocks[k], &inv, [0.0, pt, 0.0], &mut state.v);
            let after = row(&blocks[k], &state.v, 0);
            self.impacts.push(ImpactEvent {
                time: t,
                body_a: c.body_a,
                partner: c.partner,
                normal_velocity_before: vn,
                normal_velocity_after: after,
                impulse: pn,
                point: c.manifold.point,
            });
            count += 1;
            for i in bodies_of(&blocks[k]).into_iter().flatten().filter(|&i| movable(i)) {
                for &m in &adjacent[first[i]..first[i + 1]] {
                    let now = row(&blocks[m], &state.v, 0);
                    if now.to_bits() != approach[m].to_bits() {
                        approach[m] = now;
                        heap.push(Reverse(Approach { vn: now, k: m }));
                    }
                }
            }
        }
        state.work += kinetic(&state.v) - before;
        if self.impacts.len() > MAX_EVENTS {
            self.impacts.drain(..MAX_EVENTS / 2);
        }
        count
    }
}

/// A block's normal velocity in the impact heap: ordered by
/// [`f64::total_cmp`], then by index.
#[derive(Clone, Copy, Debug)]
struct Approach {
    vn: f64,
    k: usize,
}

impl PartialEq for Approach {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Approach {}

impl PartialOrd for Approach {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Approach {
    fn cmp(&self, other: &Self) -> Ordering {
        self.vn.total_cmp(&other.vn).then(self.k.cmp(&other.k))
    }
}

fn row(b: &pgs::ContactBlock, v: &[f64], r: usize) -> f64 {
    let mut u: f64 = (0..3).map(|d| b.jac_a[r][d] * v[3 * b.body_a + d]).sum();
    if let Some(j) = b.body_b {
        u += (0..3).map(|d| b.jac_b[r][d] * v[3 * j + d]).sum::<f64>();
    }
    u
}

/// The closed form of seed 004 eq. 6 for two discs without rotation: the
/// velocities after an impact with restitution `e` along the unit normal `n`
/// (from disc 2 to disc 1).
pub fn two_disc_impact(m1: f64, v1: DVec2, m2: f64, v2: DVec2, n: DVec2, e: f64) -> (DVec2, DVec2) {
    let vn = (v1 - v2).dot(n);
    let u1 = v1 - n * (m2 * (1.0 + e) * vn / (m1 + m2));
    let u2 = v2 + n * (m1 * (1.0 + e) * vn / (m1 + m2));
    (u1, u2)
}
