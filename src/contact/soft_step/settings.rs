//! Settings of the soft-step solver and the soft-constraint coefficients.

use serde::{Deserialize, Serialize};

/// Settings of the soft-step solver (scene `SoftStep(...)`, every field optional).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SoftStepSettings {
    /// Sub-steps per step (Box2D: 4).
    pub substeps: usize,
    /// Contact stiffness as a frequency (Hz), body–body; contacts with a
    /// static surface or a fixed body use twice it (Box2D: 30). Capped at a
    /// quarter of the sub-step rate.
    pub hertz: f64,
    /// Damping ratio of the contact spring (Box2D: 10).
    pub damping_ratio: f64,
    /// Largest speed at which penetration is pushed out (m/s; Box2D: 3).
    pub push_speed: f64,
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
            hertz: 30.0,
            damping_ratio: 10.0,
            push_speed: 3.0,
            iterations: 1,
            relax_iterations: 1,
            speculative: None,
        }
    }
}

impl SoftStepSettings {
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
            if !(v.is_finite() && v > 0.0) {
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
