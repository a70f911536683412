//! The energy accounting of the soft step: the work of the contact impulses
//! and the kinetic energy of the moving bodies.

use crate::body::Body;

/// The work of the soft step's contact impulses in one sub-step's warm
/// start and solve: the sub-step changes each body's velocity from `v_start`
/// to `v_end` by one combined impulse, the forces' kick m·h·a and the
/// contacts' P = m·(v_end − (v_start + h·a)), and a velocity jump's impulse
/// J does work J·(v_start + v_end)/2; the contacts' share is
/// P·(v_start + v_end)/2 (per coordinate, m the mass or the inertia).
///
/// Why not the kinetic energy the contact passes change (their own jump
/// from the kicked velocity, as the relax and restitution passes are
/// counted)? A box resting on the floor is kicked to −g·h and stopped again
/// each sub-step without moving: the kick's ½ m g² h² is the integrator's
/// splitting, not energy, yet the contacts' jump counted it as work taken,
/// and the balance of a resting stack grew by ½ m g² h per second (1.7 J
/// of error against 2.3 J of contact work on `box_stack` after 100 steps).
/// Here a resting body's contact does no work, a sliding one's friction
/// does its closed form, and an impact's the kinetic energy it removes to
/// O(g·h/v) (the kick's share of the jump).
#[inline(never)]
pub(crate) fn contact_impulse_work(
    bodies: &[Body],
    v_start: &[f64],
    acceleration: &[f64],
    h: f64,
    v_end: &[f64],
) -> f64 {
    let mut work = 0.0;
    for (((b, v0), a), v1) in bodies.iter().zip(v_start.chunks(3)).zip(acceleration.chunks(3)).zip(v_end.chunks(3)) {
        if b.fixed {
            continue;
        }
        for k in 0..3 {
            let inertia = if k < 2 { b.mass } else { b.inertia };
            let kicked = v0[k] + h * a[k];
            work += inertia * (v1[k] - kicked) * 0.5 * (v0[k] + v1[k]);
        }
    }
    work
}

/// The kinetic energy of the moving bodies at velocities `v` (3 per body).
/// A function of its own, not inlined into the step: inlined, the sum was
/// kept on the stack, a store and a reload on each body's dependent add.
#[inline(never)]
pub(crate) fn kinetic_energy(bodies: &[Body], v: &[f64]) -> f64 {
    bodies
        .iter()
        .zip(v.chunks(3))
        .filter(|(b, _)| !b.fixed)
        .map(|(b, v)| 0.5 * b.mass * (v[0] * v[0] + v[1] * v[1]) + 0.5 * b.inertia * v[2] * v[2])
        .sum()
}
