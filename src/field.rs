//! Force fields in regions (seed 000: "fields of forces in areas").
//!
//! Every field is a **pure function of (position, velocity, mass, radius)** of
//! the body or ball it acts on, applied at the centre of mass (no torque).
//! This file is the reference the GPU kernel `shaders/fields.wgsl` is tested
//! against: keep the two in step, formula for formula.
//!
//! Work done by fields is not folded into a potential energy (a field cut off
//! at a region's edge is not conservative); the world integrates it as work of
//! non-conservative loads so that the energy balance stays checkable.

use glam::DVec2;
use serde::{Deserialize, Serialize};

use crate::body::Body;

/// Evaluates the force fields on every body at once in place of this
/// module's f64 loop, when a world is given one
/// ([`World::set_field_evaluator`](crate::world::World::set_field_evaluator)):
/// the GPU kernel [`GpuFieldBackend`](crate::gpu::GpuFieldBackend) is one.
/// The world holds it behind this trait, so that `src/world/` names no
/// device API.
pub trait FieldEvaluator: std::fmt::Debug + Send {
    /// Writes into `out` the field force on each body (gravity not
    /// included), one per body in body order, at positions `q` and
    /// velocities `v` (x, y, φ per body).
    fn field_forces(
        &mut self,
        fields: &[Field],
        bodies: &[Body],
        q: &[f64],
        v: &[f64],
        out: &mut Vec<DVec2>,
    ) -> Result<(), String>;
    /// Where it runs, as summaries report it (`"gpu"`).
    fn backend(&self) -> &'static str;
}

/// Where a field acts. Boundaries belong to the region (closed sets), so a body
/// exactly on an edge feels the field.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub enum Region {
    /// The whole plane.
    #[default]
    Everywhere,
    /// Axis-aligned rectangle `min ≤ p ≤ max` (component-wise).
    Rect {
        /// Lower-left corner (m).
        min: DVec2,
        /// Upper-right corner (m).
        max: DVec2,
    },
    /// Disc `|p − center| ≤ radius`.
    Circle {
        /// Centre (m).
        center: DVec2,
        /// Radius (m).
        radius: f64,
    },
    /// Half-plane `(p − point) · normal ≥ 0`: the side the normal points to.
    HalfPlane {
        /// A point on the boundary line (m).
        point: DVec2,
        /// Normal pointing into the region (any length > 0).
        normal: DVec2,
    },
}

impl Region {
    /// Whether `p` lies in the region (boundary included).
    #[inline]
    pub fn contains(&self, p: DVec2) -> bool {
        match *self {
            Region::Everywhere => true,
            Region::Rect { min, max } => p.x >= min.x && p.x <= max.x && p.y >= min.y && p.y <= max.y,
            Region::Circle { center, radius } => (p - center).length_squared() <= radius * radius,
            Region::HalfPlane { point, normal } => (p - point).dot(normal) >= 0.0,
        }
    }
}

/// How a central field's magnitude depends on the (softened) distance
/// `d = √(|p − c|² + softening²)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum Falloff {
    /// Magnitude `strength`, independent of distance.
    #[default]
    Constant,
    /// Magnitude `strength · d` (a linear spring towards/away from the centre).
    Linear,
    /// Magnitude `strength / d`.
    InverseLinear,
    /// Magnitude `strength / d²` (gravitation, Coulomb).
    InverseSquare,
}

impl Falloff {
    /// The factor multiplying `strength` at softened distance `d`.
    #[inline]
    pub fn factor(self, d: f64) -> f64 {
        match self {
            Falloff::Constant => 1.0,
            Falloff::Linear => d,
            Falloff::InverseLinear => 1.0 / d,
            Falloff::InverseSquare => 1.0 / (d * d),
        }
    }
}

/// What a field does to a body inside its region.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum FieldKind {
    /// Constant force `force` (N), or acceleration (m/s²) when `per_mass`.
    Uniform {
        /// Force, or acceleration when `per_mass` is true.
        force: DVec2,
        /// Multiply by the body's mass (a gravity-like field).
        #[serde(default)]
        per_mass: bool,
    },
    /// Central field along `p − center`: `strength > 0` repels, `< 0` attracts.
    Radial {
        /// Centre (m).
        center: DVec2,
        /// Signed strength (units follow from the falloff; N·mⁿ, or per kg).
        strength: f64,
        /// Distance law.
        #[serde(default)]
        falloff: Falloff,
        /// Softening length added in quadrature to the distance (m), ≥ 0;
        /// keeps inverse laws finite at the centre.
        #[serde(default)]
        softening: f64,
        /// Multiply by the body's mass.
        #[serde(default)]
        per_mass: bool,
    },
    /// Swirl perpendicular to `p − center`, counter-clockwise for `strength > 0`.
    Vortex {
        /// Centre (m).
        center: DVec2,
        /// Signed strength.
        strength: f64,
        /// Distance law.
        #[serde(default)]
        falloff: Falloff,
        /// Softening length (m), ≥ 0.
        #[serde(default)]
        softening: f64,
        /// Multiply by the body's mass.
        #[serde(default)]
        per_mass: bool,
    },
    /// Linear drag `F = −k·v`, or Stokes drag `F = −k·r·v` (seed 004) when
    /// `stokes` is true (r: the body's radius).
    Drag {
        /// Drag coefficient k (N·s/m, or N·s/m² for Stokes).
        coefficient: f64,
        /// Scale by the body's radius (Stokes' law).
        #[serde(default)]
        stokes: bool,
    },
}

/// A force field restricted to a region.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Field {
    /// What the field does.
    pub kind: FieldKind,
    /// Where it acts.
    #[serde(default)]
    pub region: Region,
}

impl Field {
    /// The force this field exerts on a body at `position` moving with
    /// `velocity`, of mass `mass` and radius `radius` (zero outside the region).
    #[inline]
    pub fn force(&self, position: DVec2, velocity: DVec2, mass: f64, radius: f64) -> DVec2 {
        if !self.region.contains(position) {
            return DVec2::ZERO;
        }
        let scale = |per_mass: bool| if per_mass { mass } else { 1.0 };
        match self.kind {
            FieldKind::Uniform { force, per_mass } => force * scale(per_mass),
            FieldKind::Radial { center, strength, falloff, softening, per_mass } => {
                let (dir, d) = central_direction(position - center, softening);
                dir * (strength * falloff.factor(d) * scale(per_mass))
            }
            FieldKind::Vortex { center, strength, falloff, softening, per_mass } => {
                let (dir, d) = central_direction(position - center, softening);
                dir.perp() * (strength * falloff.factor(d) * scale(per_mass))
            }
            FieldKind::Drag { coefficient, stokes } => -velocity * (coefficient * if stokes { radius } else { 1.0 }),
        }
    }

    /// A description of what makes the field unphysical or ill-defined, if any
    /// ([`validate_kind`](Self::validate_kind), then
    /// [`validate_region`](Self::validate_region)).
    pub fn validate(&self) -> Result<(), String> {
        self.validate_kind()?;
        self.validate_region()
    }

    /// What makes the field's `kind` unphysical, if any; the message starts
    /// with the name of the parameter at fault (scene errors point at it).
    pub fn validate_kind(&self) -> Result<(), String> {
        let finite = |name: &str, v: f64| {
            if v.is_finite() { Ok(()) } else { Err(format!("{name} must be finite, got {v}")) }
        };
        match self.kind {
            FieldKind::Uniform { force, .. } => {
                finite("force.x", force.x)?;
                finite("force.y", force.y)?;
            }
            FieldKind::Radial { center, strength, falloff, softening, .. }
            | FieldKind::Vortex { center, strength, falloff, softening, .. } => {
                finite("center.x", center.x)?;
                finite("center.y", center.y)?;
                finite("strength", strength)?;
                if !(softening.is_finite() && softening >= 0.0) {
                    return Err(format!("softening must be finite and >= 0, got {softening}"));
                }
                let _ = falloff;
            }
            FieldKind::Drag { coefficient, .. } => {
                if !(coefficient.is_finite() && coefficient >= 0.0) {
                    return Err(format!(
                        "coefficient must be finite and >= 0 (drag removes energy), got {coefficient}"
                    ));
                }
            }
        }
        Ok(())
    }

    /// What makes the field's `region` ill-defined, if any; the message
    /// starts with the name of the parameter at fault.
    pub fn validate_region(&self) -> Result<(), String> {
        match self.region {
            Region::Everywhere => Ok(()),
            Region::Rect { min, max } => {
                if !min.is_finite() {
                    Err(format!("min must be finite, got {min}"))
                } else if max.is_finite() && min.x <= max.x && min.y <= max.y {
                    Ok(())
                } else {
                    Err(format!("max must be finite and >= min in x and y, got min {min}, max {max}"))
                }
            }
            Region::Circle { center, radius } => {
                if !center.is_finite() {
                    Err(format!("center must be finite, got {center}"))
                } else if radius.is_finite() && radius > 0.0 {
                    Ok(())
                } else {
                    Err(format!("radius of a circle region must be finite and > 0, got {radius}"))
                }
            }
            Region::HalfPlane { point, normal } => {
                if !point.is_finite() {
                    Err(format!("point must be finite, got {point}"))
                } else if normal.is_finite() && normal.length_squared() > 0.0 {
                    Ok(())
                } else {
                    Err(format!("normal of a half-plane must be finite and non-zero, got {normal}"))
                }
            }
        }
    }
}

/// Unit direction of `r` and its softened length `√(|r|² + s²)`. The direction
/// is `r / d` (shorter than unit inside the softening core, zero at the centre),
/// which keeps the field continuous through the centre.
#[inline]
fn central_direction(r: DVec2, softening: f64) -> (DVec2, f64) {
    let d = (r.length_squared() + softening * softening).sqrt();
    if d > 0.0 { (r / d, d) } else { (DVec2::ZERO, 0.0) }
}

/// Sum of the forces of all `fields` on one body.
#[inline]
pub fn total_force(fields: &[Field], position: DVec2, velocity: DVec2, mass: f64, radius: f64) -> DVec2 {
    fields.iter().map(|f| f.force(position, velocity, mass, radius)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_field_acts_inside_its_rectangle_only_boundary_included() {
        let f = Field {
            kind: FieldKind::Uniform { force: DVec2::new(2.0, 0.0), per_mass: false },
            region: Region::Rect { min: DVec2::new(0.0, 0.0), max: DVec2::new(1.0, 1.0) },
        };
        assert_eq!(f.force(DVec2::new(0.5, 0.5), DVec2::ZERO, 3.0, 0.1), DVec2::new(2.0, 0.0));
        assert_eq!(f.force(DVec2::new(1.0, 1.0), DVec2::ZERO, 3.0, 0.1), DVec2::new(2.0, 0.0));
        assert_eq!(f.force(DVec2::new(1.0 + 1e-12, 0.5), DVec2::ZERO, 3.0, 0.1), DVec2::ZERO);
    }

    #[test]
    fn radial_inverse_square_obeys_its_law() {
        let f = Field {
            kind: FieldKind::Radial {
                center: DVec2::new(1.0, -2.0),
                strength: -5.0,
                falloff: Falloff::InverseSquare,
                softening: 0.0,
                per_mass: true,
            },
            region: Region::Everywhere,
        };
        for d in [0.5, 1.0, 2.0, 4.0] {
            let p = DVec2::new(1.0, -2.0) + DVec2::from_angle(0.3) * d;
            let force = f.force(p, DVec2::ZERO, 2.0, 0.0);
            // attractive, |F| = m |s| / d²
            assert!((force.length() - 2.0 * 5.0 / (d * d)).abs() < 1e-12);
            assert!(force.dot(p - DVec2::new(1.0, -2.0)) < 0.0);
        }
    }

    #[test]
    fn vortex_is_perpendicular_and_drag_opposes_velocity() {
        let v = Field {
            kind: FieldKind::Vortex {
                center: DVec2::ZERO,
                strength: 1.0,
                falloff: Falloff::Linear,
                softening: 0.0,
                per_mass: false,
            },
            region: Region::Circle { center: DVec2::ZERO, radius: 10.0 },
        };
        let p = DVec2::new(3.0, 4.0);
        let f = v.force(p, DVec2::ZERO, 1.0, 0.0);
        assert!(f.dot(p).abs() < 1e-12 && (f.length() - 5.0).abs() < 1e-12 && p.perp_dot(f) > 0.0);
        let d = Field {
            kind: FieldKind::Drag { coefficient: 0.5, stokes: true },
            region: Region::HalfPlane { point: DVec2::ZERO, normal: DVec2::Y },
        };
        assert_eq!(d.force(DVec2::new(0.0, 1.0), DVec2::new(2.0, 0.0), 1.0, 0.2), DVec2::new(-0.2, 0.0));
        assert_eq!(d.force(DVec2::new(0.0, -1.0), DVec2::new(2.0, 0.0), 1.0, 0.2), DVec2::ZERO);
    }
}
