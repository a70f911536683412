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
    // A ridge of a polyline can press into the middle of a curved side,
    // where the iteration from the centre-facing normal does not look.
    let reach = shape.bounding_radius() + margin;
    if let Some(ridge) = deepest_ridge(reach, |p| shape.closest_boundary(p), pose, surface, margin)
        && out.last().is_none_or(|p| ridge.gap < p.gap)
    {
        out.clear();
        out.push(ridge);
    }
}

/// Feature ids of ridge contacts: this bit and the ridge's vertex index
/// (body vertices are numbered from 0; ids must differ for warm starting).
const RIDGE_FEATURE: u32 = 1 << 24;

/// The deepest ridge of a polyline `surface` against a shape at `pose`
/// whose [`Shape::closest_boundary`] is `closest`, gap ≤ `margin` (None for
/// other surfaces). A ridge is an inner vertex where
/// the polyline turns clockwise: a corner of the solid (on the right of the
/// travel) pointing into free space. Its contact is the shape's nearest
/// boundary point ([`Shape::closest_boundary`]): gap = the shape's signed
/// distance at the vertex, normal = minus the shape's outward normal there
/// (from the surface into the body, as every surface contact's), point =
/// the midpoint of vertex and boundary point. Kept only when that normal
/// lies in the ridge's normal cone (between the normals of its two edges):
/// outside it an edge is nearer the body and the body's own points are the
/// contact. Vertices farther from the centre than `reach` (the bounding
/// radius plus the margin) are skipped before any distance is computed.
fn deepest_ridge(
    reach: f64,
    closest: impl Fn(DVec2) -> (DVec2, DVec2, f64),
    pose: &Pose,
    surface: &SurfaceGeometry,
    margin: f64,
) -> Option<ManifoldPoint> {
    let SurfaceGeometry::Polyline { points } = surface else { return None };
    let mut best: Option<ManifoldPoint> = None;
    for (k, w) in points.windows(3).enumerate() {
        let (e1, e2) = (w[1] - w[0], w[2] - w[1]);
        let vertex = w[1];
        // Clockwise turn (solid on the right): a convex corner of the solid.
        if e1.perp_dot(e2) >= 0.0 || (vertex - pose.position).length() > reach {
            continue;
        }
        let (boundary, outward, gap) = closest(pose.unrotate(vertex - pose.position));
        if gap > margin || best.is_some_and(|b| gap >= b.gap) {
            continue;
        }
        let normal = -pose.rotate(outward);
        // The ridge's normal cone: from its first edge's left normal
        // clockwise to its second's (the turn is clockwise).
        let (n1, n2) = (e1.perp().normalize(), e2.perp().normalize());
        const CONE_SLACK: f64 = 1e-12;
        if n1.perp_dot(normal) > CONE_SLACK || normal.perp_dot(n2) > CONE_SLACK {
            continue;
        }
        let on_body = pose.apply(boundary);
        best = Some(ManifoldPoint {
            point: 0.5 * (vertex + on_body),
            normal,
            gap,
            feature: RIDGE_FEATURE | (k as u32 + 1),
        });
    }
    best
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
            keep_two_deepest(&mut best, p);
        }
        // A polyline's ridge pressing into a side (between the vertices).
        if let Some(p) = deepest_ridge_of_polygon(h, pose, surface, margin) {
            keep_two_deepest(&mut best, p);
        }
        out.extend(best.into_iter().flatten());
    }
}

/// Keeps in `best` the two points of smallest gap met so far, deepest first
/// (a later point replaces an earlier one only when strictly deeper).
fn keep_two_deepest(best: &mut [Option<ManifoldPoint>; 2], p: ManifoldPoint) {
    match *best {
        [None, _] => best[0] = Some(p),
        [Some(b0), b1] => {
            if p.gap < b0.gap {
                *best = [Some(p), Some(b0)];
            } else if b1.is_none_or(|b1| p.gap < b1.gap) {
                best[1] = Some(p);
            }
        }
    }
}

/// [`deepest_ridge`] for a polygon given by its hull (body frame).
fn deepest_ridge_of_polygon(
    hull: &[DVec2],
    pose: &Pose,
    surface: &SurfaceGeometry,
    margin: f64,
) -> Option<ManifoldPoint> {
    if !matches!(surface, SurfaceGeometry::Polyline { .. }) || hull.len() < 3 {
        return None;
    }
    let reach = hull.iter().map(|v| v.length()).fold(0.0, f64::max) + margin;
    deepest_ridge(reach, |p| crate::shape::polygon_closest_boundary(hull, p), pose, surface, margin)
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

    /// The signed distance of a local point to a shape by 20,000 outline
    /// samples: the nearest sample's distance, negative inside (the
    /// outline polygon's winding test). Errs by at most R(1 − cos(π/20,000))
    /// on curved outlines, nothing at polygon vertices and edges' ends.
    fn sampled_signed_distance(shape: &Shape, p: DVec2) -> f64 {
        let outline = shape.outline(20_000);
        let n = outline.len();
        let mut nearest = f64::INFINITY;
        let mut inside = true;
        for i in 0..n {
            let (a, b) = (outline[i], outline[(i + 1) % n]);
            let e = b - a;
            let t = ((p - a).dot(e) / e.length_squared()).clamp(0.0, 1.0);
            nearest = nearest.min((p - (a + e * t)).length());
            inside &= e.perp_dot(p - a) > 0.0;
        }
        if inside { -nearest } else { nearest }
    }

    /// A polyline's ridge pressed into the flat or curved side of every
    /// body shape, with the body turned and shifted so that the ridge meets
    /// the side away from its middle: the contact's gap is the body's
    /// signed distance at the ridge (brute force over outline samples, to
    /// 1e-7 m), its normal points from the ridge into the body and lies in
    /// the ridge's normal cone, and it is the deepest point reported.
    /// Before the ridges were tested, the round shapes' iteration and the
    /// polygons' vertices missed the ridge (gaps of +0.4 m for 5 cm inside).
    #[test]
    fn a_ridge_inside_a_side_is_found_on_every_shape() {
        let roof = SurfaceGeometry::Polyline {
            points: vec![DVec2::new(-3.0, -1.0), DVec2::new(0.0, 0.0), DVec2::new(3.0, -1.0)],
        };
        let (n1, n2) = (DVec2::new(3.0, 1.0).perp().normalize(), DVec2::new(3.0, -1.0).perp().normalize());
        let shapes = [
            Shape::Box { half_extents: DVec2::new(1.0, 0.1) },
            Shape::Bar { length: 2.0, width: 0.2 },
            Shape::Polygon {
                vertices: vec![
                    DVec2::new(-1.2, -0.3),
                    DVec2::new(1.1, -0.35),
                    DVec2::new(0.8, 0.4),
                    DVec2::new(-0.9, 0.3),
                ],
            },
            Shape::Ellipse { a: 1.3, b: 0.4 },
            Shape::Superellipse { a: 1.0, b: 0.3, exponent: 4.0 },
            Shape::Superellipse { a: 1.0, b: 0.5, exponent: 1.5 },
        ];
        let mut out = Vec::new();
        let mut checked = 0;
        for shape in &shapes {
            for k in 0..9 {
                let angle = 0.05 * (k as f64 - 4.0);
                let shift = 0.08 * (k as f64 - 4.0);
                // The bottom side's point at local x = shift (bisection on
                // the signed distance along the local vertical) ...
                let (mut lo, mut hi) = (-shape.bounding_radius(), 0.0);
                for _ in 0..100 {
                    let mid = 0.5 * (lo + hi);
                    if shape.signed_distance(DVec2::new(shift, mid)) > 0.0 { lo = mid } else { hi = mid }
                }
                // ... put `depth` above the ridge (the world's origin).
                for depth in [0.05, 0.01, -0.002] {
                    let local = DVec2::new(shift, hi + depth);
                    let turned = Pose { position: DVec2::ZERO, angle };
                    let pose = Pose { position: -turned.rotate(local), angle };
                    out.clear();
                    collide_surface(shape, &pose, &roof, 0.01, &mut out);
                    let local = pose.unrotate(-pose.position);
                    let brute = sampled_signed_distance(shape, local);
                    let Some(deepest) = out.iter().min_by(|a, b| a.gap.total_cmp(&b.gap)) else {
                        panic!("{shape:?} k={k} depth {depth}: no contact (brute {brute})");
                    };
                    // The ridge is the deepest feature whenever the body's own
                    // points are not deeper (they are all above the roof here
                    // unless the body reaches down past the slopes).
                    if deepest.feature & RIDGE_FEATURE == 0 {
                        continue;
                    }
                    checked += 1;
                    assert!((deepest.gap - brute).abs() < 1e-7, "{shape:?} k={k}: gap {} vs {brute}", deepest.gap);
                    assert!(deepest.normal.y > 0.0, "{shape:?} k={k}: normal {:?}", deepest.normal);
                    assert!(
                        n1.perp_dot(deepest.normal) <= 1e-12 && deepest.normal.perp_dot(n2) <= 1e-12,
                        "{shape:?} k={k}: normal {:?} outside the ridge's cone",
                        deepest.normal
                    );
                }
            }
        }
        assert!(checked >= 6 * 9 * 2, "only {checked} poses met the ridge");
    }

    /// A ridge contact is reported only against a polyline, only for a
    /// corner of the solid (a valley is not one), and only within the margin.
    #[test]
    fn ridges_only_where_the_solid_has_a_corner() {
        let valley = SurfaceGeometry::Polyline {
            points: vec![DVec2::new(-3.0, 1.0), DVec2::new(0.0, 0.0), DVec2::new(3.0, 1.0)],
        };
        let roof = SurfaceGeometry::Polyline {
            points: vec![DVec2::new(-3.0, -1.0), DVec2::new(0.0, 0.0), DVec2::new(3.0, -1.0)],
        };
        let shape = Shape::Ellipse { a: 1.3, b: 0.4 };
        let mut out = Vec::new();
        // Well inside the valley's solid side (under the vertex): the
        // ellipse's own deepest point, no ridge feature.
        collide_surface(&shape, &Pose { position: DVec2::new(0.0, 0.3), angle: 0.0 }, &valley, 0.01, &mut out);
        assert!(out.iter().all(|p| p.feature & RIDGE_FEATURE == 0), "{out:?}");
        // Above the roof by more than the margin: nothing.
        out.clear();
        collide_surface(&shape, &Pose { position: DVec2::new(0.0, 0.45), angle: 0.0 }, &roof, 0.01, &mut out);
        assert!(out.is_empty(), "{out:?}");
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
