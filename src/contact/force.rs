//! Contact forces for the reactions file (`--reactions`): each active
//! contact's impulse of the last step spread evenly over the step, F = λ/h
//! (the contact solve's impulses hold a body against forces that act over
//! the whole step, so λ/h is the mean contact force of the step: a box at
//! rest on a floor gets Σ Fₙ = m g).

use glam::DVec2;

use super::{ContactSet, Partner};
use crate::body::Body;

/// The force one contact exerted on its first body over the last step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContactForce {
    /// First body (index).
    pub body_a: usize,
    /// The other body or the surface.
    pub partner: Partner,
    /// Contact point (m).
    pub point: DVec2,
    /// Normal force λₙ/h (N, ≥ 0: contacts push), along the normal from the partner to body a.
    pub normal_force: f64,
    /// Tangential (friction) force λₜ/h (N) along t = n⊥ (the normal turned by +90°).
    pub tangent_force: f64,
    /// Total force on body a, Fₙ n + Fₜ t (N).
    pub force: DVec2,
    /// Torque on body a about its centre of mass (N·m): r_a × F plus the
    /// rolling-resistance torque λᵣ/h.
    pub torque: f64,
}

impl ContactSet {
    /// The force of every contact of the last step on its first body, for a
    /// step of `h` seconds (see the module docs), lever arms from the bodies'
    /// current positions.
    pub fn forces(&self, bodies: &[Body], h: f64) -> Vec<ContactForce> {
        self.contacts()
            .iter()
            .map(|c| {
                let (n, point) = (c.manifold.normal, c.manifold.point);
                let (normal_force, tangent_force, rolling) = (c.impulse[0] / h, c.impulse[1] / h, c.impulse[2] / h);
                let force = n * normal_force + n.perp() * tangent_force;
                let r = point - bodies[c.body_a].position;
                ContactForce {
                    body_a: c.body_a,
                    partner: c.partner,
                    point,
                    normal_force,
                    tangent_force,
                    force,
                    torque: r.perp_dot(force) + rolling,
                }
            })
            .collect()
    }
}
