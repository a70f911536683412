//! Any body shape against a static surface.
//!
//! The contact point is the body's own outline point (not the midpoint used
//! between two bodies): its lever arm r is then the body's true one, which
//! the closed forms of rolling and rolling resistance need to 1e-9.
//!
//! * Polygons (boxes, bars): every vertex is tested against the surface's
//!   signed distance ([`SurfaceGeometry::closest`]); the (up to) two deepest
//!   within the margin are kept, so a box lying on a floor gets its two
//!   corners. Exact for lines, polylines and the curved surfaces alike.
//! * Circles: the centre's closest surface point; gap = distance − r. Exact.
//! * Ellipses and superellipses: the deepest point is the shape's support
//!   point in −n, where n is the surface normal at the point facing it: a
//!   fixed-point iteration p ← support(−n(p)), n ← closest(p).normal, started
//!   from the normal facing the centre, stopped when the point moves less
//!   than 1e-12·R. Against a line one iteration is exact (n is constant).

use super::{ManifoldPoint, Pose, hull};
use crate::shape::Shape;
use crate::surface::SurfaceGeometry;
use glam::DVec2;

/// Contact points of `shape` at `pose` against `surface`, gap ≤ `margin`.
pub fn collide_surface(
    shape: &Shape,
    pose: &Pose,
    surface: &SurfaceGeometry,
    margin: f64,
    out: &mut Vec<ManifoldPoint>,
) {
    if let Some(h) = hull(shape) {
        collide_polygon_surface(&h, pose, surface, margin, out);
        return;
    }
    collide_round_surface(shape, pose, surface, margin, out);
}

/// [`collide_surface`] for a polygon given by its vertices `hull` (body
/// frame, as [`hull`] gives them; the contact set passes its cached copy so
/// that a step allocates nothing): its two deepest vertices within `margin`.
pub fn collide_polygon_surface(
    hull: &[DVec2],
    pose: &Pose,
    surface: &SurfaceGeometry,
    margin: f64,
    out: &mut Vec<ManifoldPoint>,
) {
    {
        let h = hull;
        let mut best: [Option<ManifoldPoint>; 2] = [None, None];
        for (i, &v) in h.iter().enumerate() {
            let w = pose.apply(v);
            let c = surface.closest(w);
            if c.distance > margin {
                continue;
            }
            let p = ManifoldPoint {
                point: w - c.normal * (0.5 * c.distance),
                normal: c.normal,
                gap: c.distance,
                feature: i as u32,
            };
            match best {
                [None, _] => best[0] = Some(p),
                [Some(b0), None] => {
                    if p.gap < b0.gap {
                        best = [Some(p), Some(b0)];
                    } else {
                        best[1] = Some(p);
                    }
                }
                [Some(b0), Some(b1)] => {
                    if p.gap < b0.gap {
                        best = [Some(p), Some(b0)];
                    } else if p.gap < b1.gap {
                        best[1] = Some(p);
                    }
                }
            }
        }
        out.extend(best.into_iter().flatten());
    }
}

/// [`collide_surface`] for the round shapes (circle exactly, the other
/// curved shapes by support-point iteration).
fn collide_round_surface(
    shape: &Shape,
    pose: &Pose,
    surface: &SurfaceGeometry,
    margin: f64,
    out: &mut Vec<ManifoldPoint>,
) {
    if let Shape::Circle { radius } = shape {
        let c = surface.closest(pose.position);
        let gap = c.distance - radius;
        if gap <= margin {
            let point = pose.position - c.normal * *radius;
            out.push(ManifoldPoint { point, normal: c.normal, gap, feature: 0 });
        }
        return;
    }
    // Curved, non-circular: support-point iteration.
    let r = shape.bounding_radius();
    let mut n = surface.closest(pose.position).normal;
    let mut p = pose.apply(shape.support(pose.unrotate(-n)));
    for _ in 0..50 {
        let c = surface.closest(p);
        n = c.normal;
        let next = pose.apply(shape.support(pose.unrotate(-n)));
        let moved = (next - p).length();
        p = next;
        if moved <= 1e-12 * r {
            break;
        }
    }
    let c = surface.closest(p);
    if c.distance <= margin {
        out.push(ManifoldPoint {
            point: p - c.normal * (0.5 * c.distance),
            normal: c.normal,
            gap: c.distance,
            feature: 0,
        });
    }
}

/// The smallest gap of a shape against a surface (unbounded margin).
pub fn surface_gap(shape: &Shape, pose: &Pose, surface: &SurfaceGeometry, scratch: &mut Vec<ManifoldPoint>) -> f64 {
    scratch.clear();
    collide_surface(shape, pose, surface, f64::INFINITY, scratch);
    scratch.iter().map(|p| p.gap).fold(f64::INFINITY, f64::min)
}

#[cfg(test)]
mod tests {
    use super::*;
    use glam::DVec2;

    /// The gap of every shape against a tilted line equals the minimum over
    /// 20,000 outline samples of the line's signed distance: sampling errs
    /// by at most R(1 − cos(π/20,000)) ≈ 1.2e-8 R on curved outlines, and is
    /// exact at polygon vertices.
    #[test]
    fn shapes_against_a_tilted_line_match_outline_sampling() {
        let line = SurfaceGeometry::Line { point: DVec2::new(0.0, 0.2), normal: DVec2::new(-2.0, 10.0) };
        let shapes = [
            Shape::Circle { radius: 0.7 },
            Shape::Ellipse { a: 1.3, b: 0.4 },
            Shape::Superellipse { a: 1.0, b: 0.6, exponent: 4.0 },
            Shape::Box { half_extents: DVec2::new(0.9, 0.3) },
            Shape::Bar { length: 2.0, width: 0.1 },
        ];
        for s in &shapes {
            for k in 0..12 {
                let pose = Pose { position: DVec2::new(0.3 * k as f64, 0.8), angle: 0.37 * k as f64 };
                let gap = surface_gap(s, &pose, &line, &mut Vec::new());
                let brute = s
                    .outline(20_000)
                    .iter()
                    .map(|&p| line.closest(pose.apply(p)).distance)
                    .fold(f64::INFINITY, f64::min);
                assert!((gap - brute).abs() < 1e-7, "{s:?} k={k}: {gap} vs {brute}");
            }
        }
    }

    #[test]
    fn box_on_floor_has_two_points() {
        let floor = SurfaceGeometry::Line { point: DVec2::ZERO, normal: DVec2::Y };
        let mut out = Vec::new();
        let pose = Pose { position: DVec2::new(0.0, 0.499), angle: 0.0 };
        collide_surface(&Shape::Box { half_extents: DVec2::splat(0.5) }, &pose, &floor, 0.01, &mut out);
        assert_eq!(out.len(), 2);
        assert!(out.iter().all(|p| (p.gap + 0.001).abs() < 1e-15));
    }
}
