//! Static surfaces: the floors and curves bodies roll and slide on (seeds 000,
//! 001). Each gives a signed distance (negative inside the solid), the closest
//! boundary point with its outward normal, and an outline for drawing.

use glam::DVec2;
use serde::{Deserialize, Serialize};

use crate::shape::closest_on_parametric;

/// The geometry of a static surface.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum SurfaceGeometry {
    /// Infinite line through `point`; the solid is the half-plane opposite the
    /// normal.
    Line {
        /// A point of the line (m).
        point: DVec2,
        /// Normal pointing out of the solid, into free space (any length > 0).
        normal: DVec2,
    },
    /// Circle; the solid is the disc, or everything outside it when `inside`
    /// (a circular bowl bodies move inside).
    Circle {
        /// Centre (m).
        center: DVec2,
        /// Radius (m).
        radius: f64,
        /// Bodies move inside the circle.
        #[serde(default)]
        inside: bool,
    },
    /// Ellipse `((x−cx)/a)² + ((y−cy)/b)² = 1`; solid inside unless `inside`.
    Ellipse {
        /// Centre (m).
        center: DVec2,
        /// Semi-axis along x (m).
        a: f64,
        /// Semi-axis along y (m).
        b: f64,
        /// Bodies move inside the ellipse.
        #[serde(default)]
        inside: bool,
    },
    /// Superellipse `|(x−cx)/a|ⁿ + |(y−cy)/b|ⁿ = 1`; solid inside unless `inside`.
    Superellipse {
        /// Centre (m).
        center: DVec2,
        /// Semi-axis along x (m).
        a: f64,
        /// Semi-axis along y (m).
        b: f64,
        /// Exponent n > 1.
        exponent: f64,
        /// Bodies move inside the superellipse.
        #[serde(default)]
        inside: bool,
    },
    /// Open polyline; the solid is on the right of the direction of travel
    /// (points listed left to right make a floor).
    Polyline {
        /// At least two points (m).
        points: Vec<DVec2>,
    },
}

/// A static surface with its contact material.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Surface {
    /// Where the surface is.
    pub geometry: SurfaceGeometry,
    /// Coulomb friction coefficient μ (≥ 0); the static one when
    /// `kinetic_friction` is given.
    #[serde(default)]
    pub friction: f64,
    /// Kinetic friction coefficient μ_k (≤ `friction`); default `friction`.
    #[serde(default)]
    pub kinetic_friction: Option<f64>,
    /// Coefficient of restitution e ∈ [0, 1].
    #[serde(default)]
    pub restitution: f64,
    /// Rolling-resistance length μ_r (m): resisting torque μ_r·N.
    #[serde(default)]
    pub rolling_resistance: f64,
    /// A named scene material that replaces the four fields above.
    #[serde(default)]
    pub material: Option<String>,
}

/// Closest boundary point of a surface and the outward normal there.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SurfacePoint {
    /// Closest point on the surface (m).
    pub point: DVec2,
    /// Unit normal pointing into free space.
    pub normal: DVec2,
    /// Signed distance of the query point (negative inside the solid).
    pub distance: f64,
}

impl SurfaceGeometry {
    /// Closest point, outward normal and signed distance of `p`.
    pub fn closest(&self, p: DVec2) -> SurfacePoint {
        match self {
            SurfaceGeometry::Line { point, normal } => {
                let n = normal.normalize();
                let distance = (p - *point).dot(n);
                SurfacePoint { point: p - n * distance, normal: n, distance }
            }
            SurfaceGeometry::Circle { center, radius, inside } => {
                let r = p - *center;
                let dir = r.normalize_or(DVec2::Y);
                let d = r.length() - radius;
                let sign = if *inside { -1.0 } else { 1.0 };
                SurfacePoint { point: *center + dir * *radius, normal: dir * sign, distance: d * sign }
            }
            SurfaceGeometry::Ellipse { center, a, b, inside } => {
                let (a, b) = (*a, *b);
                let curve = |t: f64| DVec2::new(a * t.cos(), b * t.sin());
                let grad = |q: DVec2| DVec2::new(q.x / (a * a), q.y / (b * b));
                let inside_fn = |q: DVec2| (q.x / a).powi(2) + (q.y / b).powi(2) < 1.0;
                closed_curve(*center, p, curve, grad, inside_fn, *inside)
            }
            SurfaceGeometry::Superellipse { center, a, b, exponent, inside } => {
                let (a, b, n) = (*a, *b, *exponent);
                let curve = |t: f64| {
                    let (s, c) = t.sin_cos();
                    DVec2::new(a * c.signum() * c.abs().powf(2.0 / n), b * s.signum() * s.abs().powf(2.0 / n))
                };
                let grad = |q: DVec2| {
                    DVec2::new(
                        q.x.signum() * (q.x / a).abs().powf(n - 1.0) / a,
                        q.y.signum() * (q.y / b).abs().powf(n - 1.0) / b,
                    )
                };
                let inside_fn = |q: DVec2| (q.x / a).abs().powf(n) + (q.y / b).abs().powf(n) < 1.0;
                closed_curve(*center, p, curve, grad, inside_fn, *inside)
            }
            SurfaceGeometry::Polyline { points } => {
                let mut best = SurfacePoint { point: p, normal: DVec2::Y, distance: f64::INFINITY };
                for w in points.windows(2) {
                    let (a, b) = (w[0], w[1]);
                    let e = b - a;
                    let t = ((p - a).dot(e) / e.length_squared()).clamp(0.0, 1.0);
                    let c = a + e * t;
                    let d = (p - c).length();
                    if d < best.distance.abs() {
                        // Left of the travel direction is free space.
                        let left = e.perp().normalize();
                        let side = if (p - a).dot(left) >= 0.0 { 1.0 } else { -1.0 };
                        let normal = if d > 1e-12 && t > 0.0 && t < 1.0 {
                            left
                        } else if d > 1e-12 {
                            (p - c) / d * side
                        } else {
                            left
                        };
                        best = SurfacePoint { point: c, normal, distance: d * side };
                    }
                }
                best
            }
        }
    }

    /// Signed distance of `p` (negative inside the solid).
    pub fn signed_distance(&self, p: DVec2) -> f64 {
        self.closest(p).distance
    }

    /// Points along the surface for drawing; lines are cut to `half_length`
    /// either side of their point.
    pub fn outline(&self, segments: usize, half_length: f64) -> Vec<DVec2> {
        let circle = |c: DVec2, f: &dyn Fn(f64) -> DVec2| {
            (0..=segments).map(|i| c + f(std::f64::consts::TAU * i as f64 / segments as f64)).collect()
        };
        match self {
            SurfaceGeometry::Line { point, normal } => {
                let t = normal.normalize().perp();
                vec![*point - t * half_length, *point + t * half_length]
            }
            SurfaceGeometry::Circle { center, radius, .. } => circle(*center, &|t| DVec2::from_angle(t) * *radius),
            SurfaceGeometry::Ellipse { center, a, b, .. } => circle(*center, &|t| DVec2::new(a * t.cos(), b * t.sin())),
            SurfaceGeometry::Superellipse { center, a, b, exponent, .. } => circle(*center, &|t| {
                let (s, c) = t.sin_cos();
                DVec2::new(a * c.signum() * c.abs().powf(2.0 / exponent), b * s.signum() * s.abs().powf(2.0 / exponent))
            }),
            SurfaceGeometry::Polyline { points } => points.clone(),
        }
    }

    /// A description of what makes the geometry invalid, if anything.
    pub fn validate(&self) -> Result<(), String> {
        let pos = |name: &str, v: f64| {
            if v.is_finite() && v > 0.0 { Ok(()) } else { Err(format!("{name} must be positive and finite, got {v}")) }
        };
        match self {
            SurfaceGeometry::Line { point, normal } => {
                if !point.is_finite() || !normal.is_finite() || normal.length_squared() == 0.0 {
                    return Err("a line needs a finite point and a non-zero normal".into());
                }
            }
            SurfaceGeometry::Circle { center, radius, .. } => {
                if !center.is_finite() {
                    return Err("center must be finite".into());
                }
                pos("radius", *radius)?;
            }
            SurfaceGeometry::Ellipse { center, a, b, .. } => {
                if !center.is_finite() {
                    return Err("center must be finite".into());
                }
                pos("a", *a)?;
                pos("b", *b)?;
            }
            SurfaceGeometry::Superellipse { center, a, b, exponent, .. } => {
                if !center.is_finite() {
                    return Err("center must be finite".into());
                }
                pos("a", *a)?;
                pos("b", *b)?;
                if !(exponent.is_finite() && *exponent > 1.0) {
                    return Err(format!("exponent must be > 1, got {exponent}"));
                }
            }
            SurfaceGeometry::Polyline { points } => {
                if points.len() < 2 {
                    return Err("a polyline needs at least two points".into());
                }
                if points.iter().any(|p| !p.is_finite()) {
                    return Err("polyline points must be finite".into());
                }
                if points.windows(2).any(|w| w[0] == w[1]) {
                    return Err("polyline has two equal consecutive points".into());
                }
            }
        }
        Ok(())
    }
}

fn closed_curve(
    center: DVec2,
    p: DVec2,
    curve: impl Fn(f64) -> DVec2,
    grad: impl Fn(DVec2) -> DVec2,
    inside_fn: impl Fn(DVec2) -> bool,
    bodies_inside: bool,
) -> SurfacePoint {
    let local = p - center;
    let (_, c) = closest_on_parametric(&curve, local);
    let outward = grad(c).normalize_or(DVec2::Y);
    let d = (local - c).length();
    let d = if inside_fn(local) { -d } else { d };
    let sign = if bodies_inside { -1.0 } else { 1.0 };
    SurfacePoint { point: center + c, normal: outward * sign, distance: d * sign }
}

impl Surface {
    /// A frictionless, perfectly plastic surface of this geometry.
    pub fn new(geometry: SurfaceGeometry) -> Self {
        Self {
            geometry,
            friction: 0.0,
            kinetic_friction: None,
            restitution: 0.0,
            rolling_resistance: 0.0,
            material: None,
        }
    }
    /// Checks geometry and material.
    pub fn validate(&self) -> Result<(), String> {
        self.geometry.validate()?;
        if !(self.friction.is_finite() && self.friction >= 0.0) {
            return Err(format!("friction must be >= 0, got {}", self.friction));
        }
        if let Some(k) = self.kinetic_friction
            && !(k.is_finite() && k >= 0.0 && k <= self.friction)
        {
            return Err(format!("kinetic_friction must be in [0, friction = {}], got {k}", self.friction));
        }
        if !(0.0..=1.0).contains(&self.restitution) {
            return Err(format!("restitution must be in [0, 1], got {}", self.restitution));
        }
        if !(self.rolling_resistance.is_finite() && self.rolling_resistance >= 0.0) {
            return Err(format!("rolling_resistance must be >= 0, got {}", self.rolling_resistance));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_distance_and_normal() {
        let s = SurfaceGeometry::Line { point: DVec2::new(0.0, 1.0), normal: DVec2::new(0.0, 2.0) };
        let c = s.closest(DVec2::new(3.0, 4.0));
        assert_eq!(c.distance, 3.0);
        assert_eq!(c.point, DVec2::new(3.0, 1.0));
        assert_eq!(c.normal, DVec2::Y);
    }

    #[test]
    fn curved_surfaces_closest_point_is_orthogonal() {
        let shapes = [
            SurfaceGeometry::Ellipse { center: DVec2::new(1.0, 2.0), a: 3.0, b: 1.0, inside: false },
            SurfaceGeometry::Superellipse { center: DVec2::ZERO, a: 2.0, b: 1.0, exponent: 4.0, inside: true },
            SurfaceGeometry::Circle { center: DVec2::ZERO, radius: 2.0, inside: true },
        ];
        for s in &shapes {
            for k in 0..20 {
                let p = DVec2::from_angle(k as f64 * 0.31) * (0.5 + 0.2 * k as f64);
                let c = s.closest(p);
                // p − c is along the normal: the closest point is a foot of perpendicular.
                let r = p - c.point;
                assert!(r.perp_dot(c.normal).abs() < 1e-7 * (1.0 + r.length()), "{s:?} {p}");
                assert!((r.dot(c.normal) - c.distance).abs() < 1e-7, "{s:?} {p}");
            }
        }
    }

    #[test]
    fn polyline_floor_sign() {
        let s = SurfaceGeometry::Polyline {
            points: vec![DVec2::new(-1.0, 0.0), DVec2::new(1.0, 0.0), DVec2::new(2.0, 1.0)],
        };
        assert!((s.signed_distance(DVec2::new(0.0, 0.5)) - 0.5).abs() < 1e-12);
        assert!((s.signed_distance(DVec2::new(0.0, -0.25)) + 0.25).abs() < 1e-12);
    }
}
