//! Settings of the soft-step solver and the soft-constraint coefficients.

use serde::{Deserialize, Serialize};

/// Default contact frequency as a fraction of the sub-step rate: 1/8, half
/// the cap; Box2D's 30 Hz at its 60 Hz step and 4 sub-steps (exactly:
/// 0.125 / (1/240 s) = 30 Hz), and Box2D v3.1's own cap.
pub const HERTZ_PER_SUBSTEP_RATE: f64 = 0.125;

/// Default largest push-out per step, in slops: 10, Box2D's 3 m/s × 1/60 s
/// over its linear slop of 5 mm. With mx2d's default slop (0.5 % of the
/// smallest body's bounding radius: 3.54 mm for a box of side 1 m) that is
/// 2.12 m/s at 60 Hz.
pub const PUSH_SLOPS_PER_STEP: f64 = 10.0;

/// Settings of the soft-step solver (scene `SoftStep(...)`, every field optional).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SoftStepSettings {
    /// Sub-steps per step (Box2D: 4).
    pub substeps: usize,
    /// Contact stiffness as a frequency (Hz), body–body; contacts with a
    /// static surface or a fixed body use twice it. Capped at a quarter of
    /// the sub-step rate. `None`: an eighth of the sub-step rate
    /// ([`Self::contact_hertz`]; Box2D's 30 Hz at its 60 Hz step and 4
    /// sub-steps).
    pub hertz: Option<f64>,
    /// Damping ratio of the contact spring (Box2D: 10).
    pub damping_ratio: f64,
    /// Largest speed at which penetration is pushed out (m/s). `None`:
    /// `PUSH_SLOPS_PER_STEP` (10) slops per step ([`Self::contact_push_speed`];
    /// Box2D's 3 m/s at its slop of 5 mm and its 60 Hz step).
    pub push_speed: Option<f64>,
    /// Biased sweeps per sub-step (Box2D: 1).
    pub iterations: usize,
    /// Relax sweeps per sub-step (Box2D: 1).
    pub relax_iterations: usize,
    /// Speculative margin (m): contacts closer than this are kept and may
    /// close within the step. `None`: 4 × the slop (Box2D: 4 × linear slop).
    pub speculative: Option<f64>,
}

impl Default for SoftStepSettings {
    fn default() -> Self {
        Self {
            substeps: 4,
            hertz: None,
            damping_ratio: 10.0,
            push_speed: None,
            iterations: 1,
            relax_iterations: 1,
            speculative: None,
        }
    }
}

impl SoftStepSettings {
    /// The contact frequency (Hz) for the sub-step `h` (s), before the cap
    /// of a quarter of the sub-step rate: `hertz`, or by default
    /// `HERTZ_PER_SUBSTEP_RATE` (1/8) of the sub-step rate. A frequency is a
    /// time constant: a fixed default (Box2D's 30 Hz) would make a scene in
    /// milliseconds 1000 times stiffer against its own step, so the default
    /// is derived from the step the scene gives.
    pub fn contact_hertz(&self, h: f64) -> f64 {
        self.hertz.unwrap_or(HERTZ_PER_SUBSTEP_RATE / h)
    }

    /// The largest push-out speed for a scene of this `slop` (m) and step
    /// `dt` (s): `push_speed`, or by default `PUSH_SLOPS_PER_STEP` (10) slops
    /// per step. A speed carries the units of length and time: Box2D's
    /// fixed 3 m/s is 3 mm/s in a scene in millimetres (a thousand times
    /// slower against the bodies) and 3000 m/s against millisecond steps; the
    /// slop (0.5 % of the smallest body by default) and the step are the
    /// scene's own length and time.
    pub fn contact_push_speed(&self, slop: f64, dt: f64) -> f64 {
        self.push_speed.unwrap_or(PUSH_SLOPS_PER_STEP * slop / dt)
    }

    /// What is out of range, naming the field first.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=64).contains(&self.substeps) {
            return Err(format!("substeps must be in 1..=64, got {}", self.substeps));
        }
        if !(1..=64).contains(&self.iterations) {
            return Err(format!("iterations must be in 1..=64, got {}", self.iterations));
        }
        if self.relax_iterations > 64 {
            return Err(format!("relax_iterations must be in 0..=64, got {}", self.relax_iterations));
        }
        for (name, v) in [("hertz", self.hertz), ("push_speed", self.push_speed)] {
            if let Some(v) = v
                && !(v.is_finite() && v > 0.0)
            {
                return Err(format!("{name} must be positive and finite, got {v}"));
            }
        }
        if !(self.damping_ratio.is_finite() && self.damping_ratio >= 0.0) {
            return Err(format!("damping_ratio must be finite and >= 0, got {}", self.damping_ratio));
        }
        if let Some(s) = self.speculative
            && !(s.is_finite() && s >= 0.0)
        {
            return Err(format!("speculative must be finite and >= 0, got {s}"));
        }
        Ok(())
    }
}

/// Soft-constraint coefficients for one sub-step (Catto, "Solver2D").
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Softness {
    /// Fraction of the separation turned into a target speed per second (1/s).
    pub bias_rate: f64,
    /// Scale of the effective mass.
    pub mass_scale: f64,
    /// Scale of the accumulated impulse that is taken out (the spring's damping).
    pub impulse_scale: f64,
}

impl Softness {
    /// A spring of `hertz` and `damping_ratio` over a sub-step `h`.
    pub fn new(hertz: f64, damping_ratio: f64, h: f64) -> Self {
        if hertz == 0.0 {
            return Self { bias_rate: 0.0, mass_scale: 1.0, impulse_scale: 0.0 };
        }
        let omega = 2.0 * std::f64::consts::PI * hertz;
        let a1 = 2.0 * damping_ratio + h * omega;
        let a2 = h * omega * a1;
        let a3 = 1.0 / (1.0 + a2);
        Self { bias_rate: omega / a1, mass_scale: a2 * a3, impulse_scale: a3 }
    }
}
