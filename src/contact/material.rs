//! Contact materials and the rule that mixes two of them into the
//! coefficients of one contact (seed 004 advises the minimum).

use serde::{Deserialize, Serialize};

/// The contact material of a body or a surface.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Material")]
pub struct Material {
    /// Static Coulomb coefficient μ_s (≥ 0): sticking holds while |λₜ| ≤ μ_s λₙ.
    #[serde(default)]
    pub friction: f64,
    /// Kinetic coefficient μ_k (≥ 0) while sliding; default `friction`.
    #[serde(default)]
    pub kinetic_friction: Option<f64>,
    /// Coefficient of restitution e ∈ [0, 1] (Newton's law).
    #[serde(default)]
    pub restitution: f64,
    /// Rolling-resistance length μ_r (m): the resisting torque is at most μ_r λₙ (seed 000).
    #[serde(default)]
    pub rolling_resistance: f64,
}

impl Default for Material {
    fn default() -> Self {
        Self { friction: 0.0, kinetic_friction: None, restitution: 0.0, rolling_resistance: 0.0 }
    }
}

impl Material {
    /// μ_k, falling back to μ_s.
    pub fn kinetic(&self) -> f64 {
        self.kinetic_friction.unwrap_or(self.friction)
    }

    /// What makes the material unphysical, naming the field first (so that a
    /// scene error can point at it): negative friction, e outside [0, 1] …
    pub fn validate(&self) -> Result<(), String> {
        let non_negative = |name: &str, v: f64| {
            if v.is_finite() && v >= 0.0 { Ok(()) } else { Err(format!("{name} must be finite and >= 0, got {v}")) }
        };
        non_negative("friction", self.friction)?;
        if let Some(k) = self.kinetic_friction {
            non_negative("kinetic_friction", k)?;
            if k > self.friction {
                return Err(format!("kinetic_friction {k} must not exceed the static friction {}", self.friction));
            }
        }
        if !(self.restitution.is_finite() && (0.0..=1.0).contains(&self.restitution)) {
            return Err(format!("restitution must be in [0, 1], got {}", self.restitution));
        }
        non_negative("rolling_resistance", self.rolling_resistance)
    }
}

/// How two materials combine into one contact's coefficients.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum MixRule {
    /// The smaller of the two (seed 004: the weaker surface decides).
    #[default]
    Min,
    /// The larger of the two.
    Max,
    /// The arithmetic mean.
    Mean,
    /// The product (Box2D's friction rule is its square root; this is the plain product).
    Product,
}

impl MixRule {
    /// Mixes one coefficient.
    pub fn mix(self, a: f64, b: f64) -> f64 {
        match self {
            MixRule::Min => a.min(b),
            MixRule::Max => a.max(b),
            MixRule::Mean => 0.5 * (a + b),
            MixRule::Product => a * b,
        }
    }

    /// Mixes two materials coefficient by coefficient.
    pub fn combine(self, a: &Material, b: &Material) -> Material {
        let friction = self.mix(a.friction, b.friction);
        // Kinetic ≤ static is kept: the mix of the kinetic values, capped by the mixed static one.
        let kinetic = self.mix(a.kinetic(), b.kinetic()).min(friction);
        Material {
            friction,
            kinetic_friction: Some(kinetic),
            restitution: self.mix(a.restitution, b.restitution),
            rolling_resistance: self.mix(a.rolling_resistance, b.rolling_resistance),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixing_rules_and_validation() {
        let a = Material { friction: 0.4, kinetic_friction: Some(0.3), restitution: 0.5, rolling_resistance: 0.0 };
        let b = Material { friction: 0.8, kinetic_friction: None, restitution: 1.0, rolling_resistance: 0.01 };
        let m = MixRule::Min.combine(&a, &b);
        assert_eq!((m.friction, m.kinetic(), m.restitution, m.rolling_resistance), (0.4, 0.3, 0.5, 0.0));
        let m = MixRule::Mean.combine(&a, &b);
        assert!((m.friction - 0.6).abs() < 1e-15 && (m.restitution - 0.75).abs() < 1e-15);
        assert_eq!(MixRule::Product.mix(0.5, 0.5), 0.25);
        assert_eq!(MixRule::Max.mix(0.5, 0.2), 0.5);
        assert!(Material { restitution: 1.5, ..a }.validate().unwrap_err().starts_with("restitution"));
        assert!(Material { restitution: -0.1, ..a }.validate().unwrap_err().starts_with("restitution"));
        assert!(Material { friction: -1.0, ..a }.validate().unwrap_err().starts_with("friction"));
        assert!(a.validate().is_ok());
    }
}
