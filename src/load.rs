//! Loads on bodies: applied forces and torques (constant or time-varying),
//! linear springs with dampers between body points, Stokes drag (seed 004).
//! Gravity and the force fields live in the world and [`crate::field`].

use glam::DVec2;
use serde::{Deserialize, Serialize};

use crate::body::{Body, BodyHandle};

/// A scalar time profile multiplying a load's nominal value.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub enum Profile {
    /// Always 1.
    #[default]
    Constant,
    /// sin(2π·frequency·t + phase).
    Sine {
        /// Frequency (Hz).
        frequency: f64,
        /// Phase (rad).
        #[serde(default)]
        phase: f64,
    },
    /// Rises linearly from 0 at t = 0 to 1 at t = `duration`, then stays 1.
    Ramp {
        /// Rise time (s), > 0.
        duration: f64,
    },
    /// 1 for `start ≤ t < end`, else 0.
    Pulse {
        /// Switch-on time (s).
        start: f64,
        /// Switch-off time (s).
        end: f64,
    },
    /// Piecewise-linear through `(t, value)` points (t increasing), held
    /// constant outside.
    Table {
        /// Sample points.
        points: Vec<(f64, f64)>,
    },
}

impl Profile {
    /// Value at time `t`.
    pub fn value(&self, t: f64) -> f64 {
        match self {
            Profile::Constant => 1.0,
            Profile::Sine { frequency, phase } => (std::f64::consts::TAU * frequency * t + phase).sin(),
            Profile::Ramp { duration } => (t / duration).clamp(0.0, 1.0),
            Profile::Pulse { start, end } => f64::from(t >= *start && t < *end),
            Profile::Table { points } => {
                let i = points.partition_point(|p| p.0 <= t);
                match i {
                    0 => points.first().map_or(0.0, |p| p.1),
                    i if i == points.len() => points[i - 1].1,
                    i => {
                        let (a, b) = (points[i - 1], points[i]);
                        a.1 + (b.1 - a.1) * (t - a.0) / (b.0 - a.0)
                    }
                }
            }
        }
    }

    /// A description of what makes the profile ill-defined, if anything.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            Profile::Constant => Ok(()),
            Profile::Sine { frequency, phase } if frequency.is_finite() && phase.is_finite() => Ok(()),
            Profile::Sine { .. } => Err("sine frequency and phase must be finite".into()),
            Profile::Ramp { duration } if duration.is_finite() && *duration > 0.0 => Ok(()),
            Profile::Ramp { duration } => Err(format!("ramp duration must be > 0, got {duration}")),
            Profile::Pulse { start, end } if start.is_finite() && end.is_finite() && start <= end => Ok(()),
            Profile::Pulse { .. } => Err("pulse needs finite start <= end".into()),
            Profile::Table { points } => {
                if points.is_empty() {
                    return Err("table needs at least one point".into());
                }
                if points.iter().any(|p| !p.0.is_finite() || !p.1.is_finite()) {
                    return Err("table points must be finite".into());
                }
                if points.windows(2).any(|w| w[1].0 <= w[0].0) {
                    return Err("table times must be strictly increasing".into());
                }
                Ok(())
            }
        }
    }
}

/// Where a spring's second end is attached.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Anchor {
    /// A fixed point in the world (m).
    World(DVec2),
    /// A body-frame point of a body.
    Body(BodyHandle, DVec2),
}

/// A load acting on one or two bodies.
#[derive(Clone, Debug, PartialEq)]
pub enum Load {
    /// Force `force · profile(t)` applied at body-frame point `point`; its
    /// torque about the centre of mass is r × F. `body_frame`: the force turns
    /// with the body (a thruster) instead of keeping its world direction.
    Force {
        /// Body acted on.
        body: BodyHandle,
        /// Nominal force (N).
        force: DVec2,
        /// Point of application, body frame (m).
        point: DVec2,
        /// Force expressed in the body frame.
        body_frame: bool,
        /// Time profile.
        profile: Profile,
    },
    /// Torque `torque · profile(t)` (N·m, counter-clockwise positive).
    Torque {
        /// Body acted on.
        body: BodyHandle,
        /// Nominal torque (N·m).
        torque: f64,
        /// Time profile.
        profile: Profile,
    },
    /// Linear spring-damper between a body point and an anchor:
    /// F = −(k (l − l₀) + c l̇) along the line joining the two points.
    Spring {
        /// First body.
        body: BodyHandle,
        /// Attachment on the first body, body frame (m).
        point: DVec2,
        /// The other end.
        anchor: Anchor,
        /// Stiffness k (N/m).
        stiffness: f64,
        /// Rest length l₀ (m).
        rest_length: f64,
        /// Damping c (N·s/m).
        damping: f64,
    },
    /// Stokes drag F = −k·r·v on one body (seed 004; r: the body's radius).
    Drag {
        /// Body acted on.
        body: BodyHandle,
        /// Coefficient k (N·s/m²).
        coefficient: f64,
    },
}

/// Position and velocity of one body while a load is evaluated (the
/// integrator's stage values, not the stored body state).
#[derive(Clone, Copy, Debug)]
pub struct Kinematics {
    /// Centre of mass position.
    pub position: DVec2,
    /// Angle.
    pub angle: f64,
    /// Centre of mass velocity.
    pub velocity: DVec2,
    /// Angular velocity.
    pub angular_velocity: f64,
}

impl Kinematics {
    /// Body-frame point `local` in world coordinates, and its velocity.
    pub fn point(&self, local: DVec2) -> (DVec2, DVec2) {
        let r = DVec2::from_angle(self.angle).rotate(local);
        (self.position + r, self.velocity + r.perp() * self.angular_velocity)
    }
    /// Lever arm of `local` in world orientation.
    pub fn arm(&self, local: DVec2) -> DVec2 {
        DVec2::from_angle(self.angle).rotate(local)
    }
}

/// A generalised force on one body: (Fx, Fy, torque).
pub type Wrench = (DVec2, f64);

/// What evaluating one load produced: wrenches on up to two bodies, the
/// power of its non-conservative part and its potential energy.
#[derive(Clone, Copy, Debug, Default)]
pub struct LoadEffect {
    /// Wrenches on up to two bodies.
    pub wrenches: [Option<(BodyHandle, Wrench)>; 2],
    /// Power of the non-conservative part (W); integrated as work.
    pub power: f64,
}

impl Load {
    /// Wrenches and power at time `t` for the stage kinematics `kin(handle)`.
    pub fn evaluate(&self, t: f64, kin: impl Fn(BodyHandle) -> Kinematics, bodies: &[Body]) -> LoadEffect {
        match self {
            Load::Force { body, force, point, body_frame, profile } => {
                let k = kin(*body);
                let mut f = *force * profile.value(t);
                if *body_frame {
                    f = DVec2::from_angle(k.angle).rotate(f);
                }
                let r = k.arm(*point);
                let (_, vp) = k.point(*point);
                LoadEffect { wrenches: [Some((*body, (f, r.perp_dot(f)))), None], power: f.dot(vp) }
            }
            Load::Torque { body, torque, profile } => {
                let k = kin(*body);
                let m = torque * profile.value(t);
                LoadEffect { wrenches: [Some((*body, (DVec2::ZERO, m))), None], power: m * k.angular_velocity }
            }
            Load::Spring { body, point, anchor, stiffness, rest_length, damping } => {
                let ka = kin(*body);
                let (pa, va) = ka.point(*point);
                let (pb, vb, other) = match anchor {
                    Anchor::World(p) => (*p, DVec2::ZERO, None),
                    Anchor::Body(h, local) => {
                        let (p, v) = kin(*h).point(*local);
                        (p, v, Some((*h, kin(*h).arm(*local))))
                    }
                };
                let d = pa - pb;
                let l = d.length();
                let dir = if l > 0.0 { d / l } else { DVec2::ZERO };
                let ldot = (va - vb).dot(dir);
                let elastic = stiffness * (l - rest_length);
                let viscous = damping * ldot;
                let f = -dir * (elastic + viscous); // on the first body
                let ra = ka.arm(*point);
                let wa = Some((*body, (f, ra.perp_dot(f))));
                let wb = other.map(|(h, rb)| (h, (-f, rb.perp_dot(-f))));
                // The elastic part is conservative (potential ½k(l−l₀)²); only
                // the damper's power −c·l̇² counts as non-conservative work.
                LoadEffect { wrenches: [wa, wb], power: -viscous * ldot }
            }
            Load::Drag { body, coefficient } => {
                let k = kin(*body);
                let f = -k.velocity * (coefficient * bodies[body.0].radius());
                LoadEffect { wrenches: [Some((*body, (f, 0.0))), None], power: f.dot(k.velocity) }
            }
        }
    }

    /// Potential energy stored in the load (springs), else 0.
    pub fn potential_energy(&self, bodies: &[Body]) -> f64 {
        match self {
            Load::Spring { body, point, anchor, stiffness, rest_length, .. } => {
                let pa = bodies[body.0].world_point(*point);
                let pb = match anchor {
                    Anchor::World(p) => *p,
                    Anchor::Body(h, local) => bodies[h.0].world_point(*local),
                };
                0.5 * stiffness * ((pa - pb).length() - rest_length).powi(2)
            }
            _ => 0.0,
        }
    }

    /// The bodies this load touches.
    pub fn bodies(&self) -> Vec<BodyHandle> {
        self.body_handles().collect()
    }

    /// The bodies this load touches, without allocating: its body, then the
    /// other end of a spring anchored on a body.
    pub fn body_handles(&self) -> impl Iterator<Item = BodyHandle> + Clone {
        let (body, other) = match self {
            Load::Force { body, .. } | Load::Torque { body, .. } | Load::Drag { body, .. } => (*body, None),
            Load::Spring { body, anchor, .. } => match anchor {
                Anchor::World(_) => (*body, None),
                Anchor::Body(h, _) => (*body, Some(*h)),
            },
        };
        std::iter::once(body).chain(other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn table_profile_interpolates_and_holds() {
        let p = Profile::Table { points: vec![(0.0, 1.0), (1.0, 3.0), (3.0, -1.0)] };
        assert_eq!(p.value(-1.0), 1.0);
        assert_eq!(p.value(0.5), 2.0);
        assert_eq!(p.value(2.0), 1.0);
        assert_eq!(p.value(10.0), -1.0);
        assert_eq!(Profile::Ramp { duration: 2.0 }.value(0.5), 0.25);
    }
}
