//! Body shapes in their local frame: mass properties, support points, signed
//! distance and outlines.
//!
//! Every shape is described in the body's frame with its **centre of mass at the
//! origin** (a polygon's vertices are shifted so that their centroid is the
//! origin), so that the body's position `q = (x, y)` is its centre of mass and
//! the mass matrix is `diag(m, m, J)` with `J` about that point.
//!
//! The one-line formulas live in the per-shape files; this module dispatches.

mod bar;
mod circle;
mod ellipse;
mod polygon;
mod superellipse;

pub use polygon::polygon_centroid;

use glam::DVec2;
use serde::{Deserialize, Serialize};

/// A rigid body's shape, in the body frame (centre of mass at the origin).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Shape {
    /// Disc of the given radius.
    Circle {
        /// Radius (m).
        radius: f64,
    },
    /// Ellipse with semi-axis `a` along the body's x axis and `b` along its y axis.
    Ellipse {
        /// Semi-axis along local x (m).
        a: f64,
        /// Semi-axis along local y (m).
        b: f64,
    },
    /// Superellipse `|x/a|ⁿ + |y/b|ⁿ = 1` (n = 2: ellipse, n → ∞: rectangle).
    Superellipse {
        /// Semi-axis along local x (m).
        a: f64,
        /// Semi-axis along local y (m).
        b: f64,
        /// Exponent n (> 1, so that the shape is convex).
        exponent: f64,
    },
    /// Convex polygon, vertices counter-clockwise in the body frame. They are
    /// shifted so that their centroid is the origin when the body is built.
    Polygon {
        /// Vertices (m), counter-clockwise.
        vertices: Vec<DVec2>,
    },
    /// Rectangle `2·half_extents`, a shortcut for a four-vertex polygon.
    Box {
        /// Half width and half height (m).
        half_extents: DVec2,
    },
    /// A point mass (issue 10): no extent, no moment of inertia, and its
    /// rotation is **not a degree of freedom** (its angle stays as given; the
    /// solver's inverse inertia for it is 0). Its mass must be given. Joints
    /// attach at its centre (anchors (0, 0)); a pendulum bob is a `Point` on a
    /// `Distance` rod, not on an offset pin.
    Point,
    /// Thin bar (rod) along the local x axis, centred on the origin.
    Bar {
        /// Length (m).
        length: f64,
        /// Thickness (m); 0 is an ideal rod (its mass must then be given).
        #[serde(default)]
        width: f64,
    },
}

impl Shape {
    /// Area in m² (the mass of a body built from a density is `density · area`).
    pub fn area(&self) -> f64 {
        match self {
            Shape::Circle { radius } => circle::area(*radius),
            Shape::Ellipse { a, b } => ellipse::area(*a, *b),
            Shape::Superellipse { a, b, exponent } => superellipse::area(*a, *b, *exponent),
            Shape::Polygon { vertices } => polygon::area(vertices),
            Shape::Box { half_extents } => 4.0 * half_extents.x * half_extents.y,
            Shape::Bar { length, width } => length * width,
            Shape::Point => 0.0,
        }
    }

    /// Polar moment of inertia about the centre of mass **per unit mass**
    /// (m²): `J = m · unit_inertia()`, for a uniform density.
    pub fn unit_inertia(&self) -> f64 {
        match self {
            Shape::Circle { radius } => circle::unit_inertia(*radius),
            Shape::Ellipse { a, b } => ellipse::unit_inertia(*a, *b),
            Shape::Superellipse { a, b, exponent } => superellipse::unit_inertia(*a, *b, *exponent),
            Shape::Polygon { vertices } => polygon::unit_inertia(vertices),
            Shape::Box { half_extents } => (half_extents.x * half_extents.x + half_extents.y * half_extents.y) / 3.0,
            Shape::Bar { length, width } => bar::unit_inertia(*length, *width),
            Shape::Point => 0.0,
        }
    }

    /// The boundary point farthest in direction `direction` (local frame).
    pub fn support(&self, direction: DVec2) -> DVec2 {
        match self {
            Shape::Circle { radius } => circle::support(*radius, direction),
            Shape::Ellipse { a, b } => ellipse::support(*a, *b, direction),
            Shape::Superellipse { a, b, exponent } => superellipse::support(*a, *b, *exponent, direction),
            Shape::Polygon { vertices } => polygon::support(vertices, direction),
            Shape::Box { half_extents } => polygon::support(&box_vertices(*half_extents), direction),
            Shape::Bar { length, width } => bar::support(*length, *width, direction),
            Shape::Point => DVec2::ZERO,
        }
    }

    /// Radius of curvature of the outline at the support point in direction
    /// `direction` (local frame): how fast that point slides along the
    /// outline as the direction turns, dp/dθ = ρ·t. Used by the narrowphase's
    /// Newton iteration on the support functions. 0 for polygons (the support
    /// point stays on a vertex), `f64::INFINITY` at a flat point (a
    /// superellipse with n > 2 on its axes).
    pub fn support_radius_of_curvature(&self, direction: DVec2) -> f64 {
        self.support_and_curvature(direction).1
    }

    /// [`Shape::support`] and [`Shape::support_radius_of_curvature`] at once
    /// (the superellipse's curvature needs its support point).
    pub fn support_and_curvature(&self, direction: DVec2) -> (DVec2, f64) {
        match self {
            Shape::Circle { radius } => (circle::support(*radius, direction), *radius),
            Shape::Ellipse { a, b } => {
                (ellipse::support(*a, *b, direction), ellipse::support_radius_of_curvature(*a, *b, direction))
            }
            Shape::Superellipse { a, b, exponent } => {
                let p = superellipse::support(*a, *b, *exponent, direction);
                (p, superellipse::radius_of_curvature_at(*a, *b, *exponent, p))
            }
            _ => (self.support(direction), 0.0),
        }
    }

    /// Signed distance from local point `p` to the boundary: negative inside.
    pub fn signed_distance(&self, p: DVec2) -> f64 {
        match self {
            Shape::Circle { radius } => circle::signed_distance(*radius, p),
            Shape::Ellipse { a, b } => ellipse::signed_distance(*a, *b, p),
            Shape::Superellipse { a, b, exponent } => superellipse::signed_distance(*a, *b, *exponent, p),
            Shape::Polygon { vertices } => polygon::signed_distance(vertices, p),
            Shape::Box { half_extents } => polygon::signed_distance(&box_vertices(*half_extents), p),
            Shape::Bar { length, width } => bar::signed_distance(*length, *width, p),
            Shape::Point => p.length(),
        }
    }

    /// The boundary point closest to the local point `p`, the outward unit
    /// normal there, and the signed distance (negative inside), so that
    /// `p = point + normal · distance`. What a contact needs when a corner of another
    /// outline (a polyline's ridge) lies against or inside this one. The
    /// distance is [`Shape::signed_distance`]'s; the normal of a polygon is
    /// its nearest edge's (inside) or points from the nearest boundary
    /// point to `p` (outside); of a curved shape it is along p − point (the
    /// nearest point found by golden section, see `closest_on_parametric`),
    /// or the outline's gradient when `p` is on the outline.
    pub fn closest_boundary(&self, p: DVec2) -> (DVec2, DVec2, f64) {
        match self {
            Shape::Circle { radius } => {
                let normal = p.try_normalize().unwrap_or(DVec2::X);
                (normal * *radius, normal, p.length() - radius)
            }
            Shape::Point => (DVec2::ZERO, p.try_normalize().unwrap_or(DVec2::X), p.length()),
            Shape::Polygon { vertices } => polygon::closest_boundary(vertices, p),
            Shape::Box { half_extents } => polygon::closest_boundary(&box_vertices(*half_extents), p),
            Shape::Bar { length, width } => {
                polygon::closest_boundary(&box_vertices(DVec2::new(0.5 * length, 0.5 * width)), p)
            }
            Shape::Ellipse { a, b } => {
                let (a, b) = (*a, *b);
                let (_, c) = closest_on_parametric(|t| DVec2::new(a * t.cos(), b * t.sin()), p);
                let gradient = DVec2::new(c.x / (a * a), c.y / (b * b));
                let inside = (p.x / a).powi(2) + (p.y / b).powi(2) < 1.0;
                curved_boundary(p, c, gradient, inside, a.max(b))
            }
            Shape::Superellipse { a, b, exponent: n } => {
                let (a, b, n) = (*a, *b, *n);
                let (_, c) = closest_on_parametric(|t| superellipse::point(a, b, n, t), p);
                let gradient = DVec2::new(
                    c.x.signum() * (c.x / a).abs().powf(n - 1.0) / a,
                    c.y.signum() * (c.y / b).abs().powf(n - 1.0) / b,
                );
                let inside = (p.x / a).abs().powf(n) + (p.y / b).abs().powf(n) < 1.0;
                curved_boundary(p, c, gradient, inside, a.max(b))
            }
        }
    }

    /// Whether the local point `p` lies inside the shape (boundary excluded).
    /// Cheaper than [`Shape::signed_distance`]: implicit equations, no search.
    pub fn contains(&self, p: DVec2) -> bool {
        match self {
            Shape::Circle { radius } => p.length_squared() < radius * radius,
            Shape::Ellipse { a, b } => (p.x / a).powi(2) + (p.y / b).powi(2) < 1.0,
            Shape::Superellipse { a, b, exponent } => {
                (p.x / a).abs().powf(*exponent) + (p.y / b).abs().powf(*exponent) < 1.0
            }
            _ => self.signed_distance(p) < 0.0,
        }
    }

    /// Closed outline for drawing, counter-clockwise (`segments` points for
    /// curved shapes; the vertices for polygons).
    pub fn outline(&self, segments: usize) -> Vec<DVec2> {
        let segments = segments.max(8);
        match self {
            Shape::Circle { radius } => ellipse::outline(*radius, *radius, segments),
            Shape::Ellipse { a, b } => ellipse::outline(*a, *b, segments),
            Shape::Superellipse { a, b, exponent } => superellipse::outline(*a, *b, *exponent, segments),
            Shape::Polygon { vertices } => vertices.clone(),
            Shape::Box { half_extents } => box_vertices(*half_extents).to_vec(),
            Shape::Bar { length, width } => bar::outline(*length, *width),
            Shape::Point => vec![DVec2::ZERO],
        }
    }

    /// Radius of the smallest origin-centred disc containing the shape (for
    /// bounding boxes in the broadphase).
    pub fn bounding_radius(&self) -> f64 {
        match self {
            Shape::Circle { radius } => *radius,
            Shape::Ellipse { a, b } | Shape::Superellipse { a, b, .. } => {
                // A convex superellipse lies inside its bounding box.
                match self {
                    Shape::Superellipse { .. } => (a * a + b * b).sqrt(),
                    _ => a.max(*b),
                }
            }
            Shape::Polygon { vertices } => vertices.iter().map(|v| v.length()).fold(0.0, f64::max),
            Shape::Box { half_extents } => half_extents.length(),
            Shape::Bar { length, width } => (0.25 * length * length + 0.25 * width * width).sqrt(),
            Shape::Point => 0.0,
        }
    }

    /// The shape with its vertices moved so that the centroid is the origin
    /// (a no-op for the symmetric shapes). Returns the offset that was removed.
    pub fn centred(self) -> (Shape, DVec2) {
        match self {
            Shape::Polygon { vertices } => {
                let c = polygon_centroid(&vertices);
                let vertices = vertices.into_iter().map(|v| v - c).collect();
                (Shape::Polygon { vertices }, c)
            }
            other => (other, DVec2::ZERO),
        }
    }

    /// A description of what makes the shape's parameters unphysical, if
    /// anything does (zero or negative sizes, a non-convex polygon …).
    pub fn validate(&self) -> Result<(), String> {
        let positive = |name: &str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(format!("{name} must be a positive finite length, got {v}"))
            }
        };
        match self {
            Shape::Circle { radius } => positive("radius", *radius),
            Shape::Ellipse { a, b } => positive("a", *a).and(positive("b", *b)),
            Shape::Superellipse { a, b, exponent } => {
                positive("a", *a)?;
                positive("b", *b)?;
                if !(exponent.is_finite() && *exponent > 1.0) {
                    return Err(format!("exponent must be finite and > 1 (a convex superellipse), got {exponent}"));
                }
                Ok(())
            }
            Shape::Polygon { vertices } => polygon::validate(vertices),
            Shape::Box { half_extents } => {
                positive("half_extents.x", half_extents.x)?;
                positive("half_extents.y", half_extents.y)
            }
            Shape::Bar { length, width } => {
                positive("length", *length)?;
                if !(width.is_finite() && *width >= 0.0) {
                    return Err(format!("width must be finite and >= 0, got {width}"));
                }
                Ok(())
            }
            Shape::Point => Ok(()),
        }
    }
}

fn box_vertices(h: DVec2) -> [DVec2; 4] {
    [DVec2::new(-h.x, -h.y), DVec2::new(h.x, -h.y), DVec2::new(h.x, h.y), DVec2::new(-h.x, h.y)]
}

/// `Shape::closest_boundary` of a curved shape from its nearest boundary
/// point `c` to `p`, the outline's gradient there, whether `p` is inside,
/// and the shape's size: the normal along p − c (so that p = c + n·d to
/// round-off), the gradient's direction where p is within 1e-9 of the size
/// of the outline.
fn curved_boundary(p: DVec2, c: DVec2, gradient: DVec2, inside: bool, size: f64) -> (DVec2, DVec2, f64) {
    let d = (p - c).length();
    let distance = if inside { -d } else { d };
    let normal = if d > 1e-9 * size { (p - c) / distance } else { gradient.try_normalize().unwrap_or(DVec2::X) };
    (c, normal, distance)
}

/// [`Shape::closest_boundary`] of the convex polygon `vertices`
/// (counter-clockwise, local frame), without building a [`Shape`].
pub fn polygon_closest_boundary(vertices: &[DVec2], p: DVec2) -> (DVec2, DVec2, f64) {
    polygon::closest_boundary(vertices, p)
}

/// Closest point of a closed parametric curve `curve(t)`, t ∈ [0, 2π), to `p`:
/// coarse sampling, then golden-section refinement on the squared distance.
/// Shared by the curved shapes and the curved static surfaces.
pub(crate) fn closest_on_parametric(curve: impl Fn(f64) -> DVec2, p: DVec2) -> (f64, DVec2) {
    const SAMPLES: usize = 256;
    let tau = std::f64::consts::TAU;
    let dist2 = |t: f64| (curve(t) - p).length_squared();
    let mut best = 0;
    let mut best_d = f64::INFINITY;
    for i in 0..SAMPLES {
        let d = dist2(tau * i as f64 / SAMPLES as f64);
        if d < best_d {
            best_d = d;
            best = i;
        }
    }
    let h = tau / SAMPLES as f64;
    let (mut lo, mut hi) = (best as f64 * h - h, best as f64 * h + h);
    let g = 0.5 * (5f64.sqrt() - 1.0);
    let (mut x1, mut x2) = (hi - g * (hi - lo), lo + g * (hi - lo));
    let (mut f1, mut f2) = (dist2(x1), dist2(x2));
    for _ in 0..80 {
        if f1 < f2 {
            hi = x2;
            x2 = x1;
            f2 = f1;
            x1 = hi - g * (hi - lo);
            f1 = dist2(x1);
        } else {
            lo = x1;
            x1 = x2;
            f1 = f2;
            x2 = lo + g * (hi - lo);
            f2 = dist2(x2);
        }
    }
    let t = 0.5 * (lo + hi);
    (t, curve(t))
}

#[cfg(test)]
mod tests {
    /// `closest_boundary` on every shape at 400 points inside, near and
    /// outside: the distance is `signed_distance`'s, point + normal ·
    /// distance gives the point back (1e-12 of the size), the normal is a
    /// unit vector and outward: the boundary point is the shape's support
    /// point in that direction (to 1e-6 of the size: the curved shapes'
    /// nearest point is found by golden section to about that).
    #[test]
    fn closest_boundary_agrees_with_signed_distance_and_support() {
        let shapes = [
            Shape::Circle { radius: 0.7 },
            Shape::Ellipse { a: 1.3, b: 0.4 },
            Shape::Superellipse { a: 1.0, b: 0.6, exponent: 4.0 },
            Shape::Superellipse { a: 1.0, b: 0.6, exponent: 1.5 },
            Shape::Box { half_extents: DVec2::new(0.9, 0.3) },
            Shape::Bar { length: 2.0, width: 0.1 },
            Shape::Polygon { vertices: vec![DVec2::new(-1.0, -0.5), DVec2::new(1.0, -0.4), DVec2::new(0.2, 0.9)] },
        ];
        for shape in &shapes {
            let size = shape.bounding_radius();
            for k in 0..400 {
                let angle = 0.173 * k as f64;
                let p = DVec2::new(angle.cos(), angle.sin()) * size * (0.05 + 1.6 * (k % 20) as f64 / 20.0);
                let (point, normal, distance) = shape.closest_boundary(p);
                let reference = shape.signed_distance(p);
                assert!((distance - reference).abs() <= 1e-12 * size, "{shape:?} {p}: {distance} vs {reference}");
                assert!((point + normal * distance - p).length() <= 1e-9 * size, "{shape:?} {p}");
                assert!((normal.length() - 1.0).abs() < 1e-12, "{shape:?} {p}");
                let support = shape.support(normal);
                assert!(
                    (support - point).dot(normal).abs() <= 1e-6 * size,
                    "{shape:?} {p}: normal {normal} is not outward at {point} (support {support})"
                );
            }
        }
    }

    use super::*;

    /// Mass properties are checked against a brute-force grid integration of
    /// the shape's own inside test: this ties the analytic formulas to the
    /// geometry. Grid of 1200² cells: the boundary cells give a relative error
    /// of order (perimeter·h)/area ≈ 1e-3, hence the 3e-3 tolerance.
    fn grid_area_and_inertia(shape: &Shape) -> (f64, f64) {
        let r = shape.bounding_radius() * 1.01;
        let n = 1200;
        let h = 2.0 * r / n as f64;
        let (mut area, mut second) = (0.0, 0.0);
        for i in 0..n {
            for j in 0..n {
                let p = DVec2::new(-r + (i as f64 + 0.5) * h, -r + (j as f64 + 0.5) * h);
                if shape.contains(p) {
                    area += h * h;
                    second += h * h * p.length_squared();
                }
            }
        }
        (area, second / area)
    }

    #[test]
    fn mass_properties_match_grid_integration() {
        let shapes = [
            Shape::Circle { radius: 0.7 },
            Shape::Ellipse { a: 1.3, b: 0.4 },
            Shape::Superellipse { a: 1.0, b: 0.6, exponent: 4.0 },
            Shape::Superellipse { a: 0.8, b: 0.8, exponent: 1.5 },
            Shape::Box { half_extents: DVec2::new(0.9, 0.3) },
            Shape::Polygon { vertices: vec![DVec2::new(-0.5, -0.4), DVec2::new(0.7, -0.3), DVec2::new(0.2, 0.6)] }
                .centred()
                .0,
            Shape::Bar { length: 2.0, width: 0.2 },
        ];
        for s in &shapes {
            let (area, k2) = grid_area_and_inertia(s);
            assert!((area - s.area()).abs() / s.area() < 3e-3, "{s:?}: area {area} vs {}", s.area());
            assert!((k2 - s.unit_inertia()).abs() / s.unit_inertia() < 3e-3, "{s:?}: J/m {k2} vs {}", s.unit_inertia());
        }
    }

    #[test]
    fn support_points_lie_on_the_boundary_and_are_extreme() {
        let shapes = [
            Shape::Circle { radius: 0.7 },
            Shape::Ellipse { a: 1.3, b: 0.4 },
            Shape::Superellipse { a: 1.0, b: 0.6, exponent: 4.0 },
            Shape::Box { half_extents: DVec2::new(0.9, 0.3) },
        ];
        for s in &shapes {
            let outline = s.outline(720);
            for k in 0..36 {
                let d = DVec2::from_angle(k as f64 * 0.1745 + 0.01);
                let sp = s.support(d);
                assert!(s.signed_distance(sp).abs() < 1e-9, "{s:?} support off boundary");
                let best = outline.iter().map(|p| p.dot(d)).fold(f64::MIN, f64::max);
                assert!(sp.dot(d) >= best - 1e-9, "{s:?}: support not extreme");
            }
        }
    }

    /// The radius of curvature at the support point equals the rate at which
    /// the support point moves as the direction turns, |p(θ+h) − p(θ−h)|/2h
    /// (central difference: error O(h²)·ρ‴ ≈ 1e-8 relative for h = 1e-4;
    /// 1e-6 allowed). Directions avoid the axes, where a superellipse's ρ is
    /// 0 or ∞.
    #[test]
    fn radius_of_curvature_matches_the_support_points_speed() {
        let shapes = [
            Shape::Circle { radius: 0.7 },
            Shape::Ellipse { a: 1.3, b: 0.4 },
            Shape::Superellipse { a: 1.0, b: 0.6, exponent: 4.0 },
            Shape::Superellipse { a: 0.9, b: 0.7, exponent: 1.5 },
        ];
        let h = 1e-4;
        for s in &shapes {
            for k in 0..24 {
                let th = k as f64 * 0.2618 + 0.1;
                let rho = s.support_radius_of_curvature(DVec2::from_angle(th));
                let fd =
                    (s.support(DVec2::from_angle(th + h)) - s.support(DVec2::from_angle(th - h))).length() / (2.0 * h);
                assert!((rho - fd).abs() <= 1e-6 * fd.max(1e-3), "{s:?} θ={th}: ρ {rho} vs {fd}");
            }
        }
        let flat = Shape::Superellipse { a: 1.0, b: 0.6, exponent: 4.0 };
        assert!(flat.support_radius_of_curvature(DVec2::X).is_infinite());
        let pointed = Shape::Superellipse { a: 1.0, b: 0.6, exponent: 1.5 };
        assert_eq!(pointed.support_radius_of_curvature(DVec2::X), 0.0);
    }

    #[test]
    fn signed_distance_is_exact_for_an_ellipse_point_on_an_axis() {
        let e = Shape::Ellipse { a: 2.0, b: 1.0 };
        assert!((e.signed_distance(DVec2::new(3.0, 0.0)) - 1.0).abs() < 1e-12);
        assert!((e.signed_distance(DVec2::new(0.0, -1.5)) - 0.5).abs() < 1e-12);
        assert!((e.signed_distance(DVec2::new(0.0, 0.5)) + 0.5).abs() < 1e-9);
    }
}
