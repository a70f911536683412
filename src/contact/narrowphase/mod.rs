//! Narrowphase: contact points of one pair of shapes, or of a shape and a
//! static surface, at given poses.
//!
//! Every function appends [`ManifoldPoint`]s whose gap is at most `margin`
//! (speculative contacts: a pair about to touch gets its rows before it does,
//! as in Box2D v3). Convention: the normal is a unit vector pointing **from
//! the second party (body b or the surface) to the first (body a)**; the gap
//! is the signed distance along it, negative when overlapping.
//!
//! Pair families, one file each: [`circle`] (circle–circle exact, circle–polygon
//! exact by Voronoi regions), [`polygon`] (polygon–polygon by reference-face
//! clipping, Box2D's manifold, up to 2 points), [`surface`] (any shape against
//! the static surfaces). Boxes and bars are polygons; a bar of zero width gets
//! a half-width of 1e-6·length so that its edge normals are defined. Ellipses
//! and superellipses against *bodies* other than circles are, for now,
//! approximated by their 64-vertex inscribed outline (error ≤ R(1 − cos π/64)
//! ≈ 1.2e-3 R); against surfaces and circles they are exact to 1e-12 (support
//! function iteration, see [`surface`]). The outlines are built once per body
//! and kept by the contact set ([`collide_hulls`]); the clipping finds each
//! face's deepest vertex by walking (rotating calipers) on outlines, so a
//! 64-gon against a 64-gon costs O(64 + 64), not O(64²).

pub mod circle;
pub mod polygon;
pub mod surface;

use glam::DVec2;

use crate::shape::Shape;

/// Where a body is: centre of mass and angle.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Pose {
    /// Centre of mass (m).
    pub position: DVec2,
    /// Angle (rad).
    pub angle: f64,
}

impl Pose {
    /// World point of a body-frame point.
    #[inline]
    pub fn apply(&self, local: DVec2) -> DVec2 {
        self.position + DVec2::from_angle(self.angle).rotate(local)
    }

    /// World direction of a body-frame direction.
    #[inline]
    pub fn rotate(&self, local: DVec2) -> DVec2 {
        DVec2::from_angle(self.angle).rotate(local)
    }

    /// Body-frame direction of a world direction.
    #[inline]
    pub fn unrotate(&self, world: DVec2) -> DVec2 {
        DVec2::from_angle(-self.angle).rotate(world)
    }
}

/// One contact point of a pair.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ManifoldPoint {
    /// World contact point (m), midway between the two outlines.
    pub point: DVec2,
    /// Unit normal from the second party to the first.
    pub normal: DVec2,
    /// Signed gap along the normal (m); negative: penetration.
    pub gap: f64,
    /// Which features touch (a vertex or face index): the identity used to
    /// warm-start the contact from one step to the next.
    pub feature: u32,
}

/// Vertices of a shape handled as a polygon (counter-clockwise, body frame),
/// or `None` for the round shapes.
pub fn hull(shape: &Shape) -> Option<Vec<DVec2>> {
    match shape {
        Shape::Polygon { vertices } => Some(vertices.clone()),
        Shape::Box { half_extents: h } => Some(rect(h.x, h.y)),
        Shape::Bar { length, width } => Some(rect(0.5 * length, (0.5 * width).max(1e-6 * length))),
        _ => None,
    }
}

/// Whether [`hull`] gives the shape's vertices (polygon, box, bar).
pub fn hull_is_polygon(shape: &Shape) -> bool {
    matches!(shape, Shape::Polygon { .. } | Shape::Box { .. } | Shape::Bar { .. })
}

/// Vertices used for a curved shape against a polygon or another curved
/// shape (see the module docs): its outline with 64 vertices; the polygon's
/// own vertices otherwise; empty for a circle (handled exactly).
pub fn outline_hull(shape: &Shape) -> Vec<DVec2> {
    match shape {
        Shape::Circle { .. } => Vec::new(),
        _ => hull(shape).unwrap_or_else(|| shape.outline(64)),
    }
}

fn rect(hx: f64, hy: f64) -> Vec<DVec2> {
    vec![DVec2::new(-hx, -hy), DVec2::new(hx, -hy), DVec2::new(hx, hy), DVec2::new(-hx, hy)]
}

/// Contact points of body shapes `a` and `b` at their poses, gap ≤ `margin`.
pub fn collide_bodies(a: &Shape, pa: &Pose, b: &Shape, pb: &Pose, margin: f64, out: &mut Vec<ManifoldPoint>) {
    collide_hulls(a, &outline_hull(a), pa, b, &outline_hull(b), pb, margin, out);
}

/// [`collide_bodies`] with each shape's [`outline_hull`] computed beforehand
/// (the contact set keeps them per body: building a 64-vertex outline costs
/// more than the collision itself).
#[allow(clippy::too_many_arguments)]
pub fn collide_hulls(
    a: &Shape,
    hull_a: &[DVec2],
    pa: &Pose,
    b: &Shape,
    hull_b: &[DVec2],
    pb: &Pose,
    margin: f64,
    out: &mut Vec<ManifoldPoint>,
) {
    match (a, b) {
        (Shape::Circle { radius: ra }, Shape::Circle { radius: rb }) => {
            circle::circle_circle(*ra, pa.position, *rb, pb.position, margin, out)
        }
        (Shape::Circle { radius }, _) => {
            circle::circle_hull(*radius, pa.position, hull_b, pb, margin, out);
        }
        (_, Shape::Circle { radius }) => {
            let start = out.len();
            circle::circle_hull(*radius, pb.position, hull_a, pa, margin, out);
            flip(&mut out[start..]);
        }
        _ => polygon::polygon_polygon(hull_a, pa, hull_b, pb, margin, out),
    }
}

/// Reverses the roles of the two parties of some points.
pub(crate) fn flip(points: &mut [ManifoldPoint]) {
    for p in points {
        p.normal = -p.normal;
        p.feature ^= 0x8000_0000;
    }
}

/// The smallest gap of a pair (`f64::INFINITY` when the functions above find
/// no point even with an unbounded margin, which does not happen for convex
/// shapes): the function whose root is the time of impact.
pub fn pair_gap(a: &Shape, pa: &Pose, b: &Shape, pb: &Pose, scratch: &mut Vec<ManifoldPoint>) -> f64 {
    scratch.clear();
    collide_bodies(a, pa, b, pb, f64::INFINITY, scratch);
    scratch.iter().map(|p| p.gap).fold(f64::INFINITY, f64::min)
}
