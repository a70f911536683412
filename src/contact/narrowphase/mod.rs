//! Narrowphase: contact points of one pair of shapes, or of a shape and a
//! static surface, at given poses.
//!
//! Every function appends [`ManifoldPoint`]s whose gap is at most `margin`
//! (speculative contacts: a pair about to touch gets its rows before it does,
//! as in Box2D v3). Convention: the normal is a unit vector pointing **from
//! the second party (body b or the surface) to the first (body a)**; the gap
//! is the signed distance along it, negative when overlapping.
//!
//! Pair families, one file each, and how exact each is:
//!
//! | pair | file | method | tolerance |
//! |---|---|---|---|
//! | circle–circle (a point mass is a circle of radius 0) | [`circle`] | line of centres | exact (round-off) |
//! | circle–polygon (box, bar, polygon) | [`circle`] | Voronoi regions of the polygon | exact |
//! | polygon–polygon | [`polygon`] | reference-face clipping (Box2D's manifold, up to 2 points); apart with two corners nearest, their exact closest points (1 point); two boxes in the soft step: the same in the reference box's frame (`polygon::box_box`) | exact (box–box in the box's frame: the world-outline formula's values to 1e-12 m) |
//! | ellipse or superellipse against any body shape | [`smooth`] | GJK ([`gjk`]) or EPA for a start, then Newton on the common-normal condition of the two support functions, safeguarded by bisection (1 point) | normal 1e-13 rad, gap 1e-12 relative; superellipse exponent < 2 or > 2: still converges, linearly near its axis points |
//! | any shape against a static surface | [`surface`] | polygon vertices against the surface's signed distance; circles by the closest point; curved shapes by support-point iteration | exact / 1e-12 |
//!
//! Boxes and bars are polygons; a bar of zero width gets a half-width of
//! 1e-6·length so that its edge normals are defined. The polygons' vertices
//! are built once per body and kept by the contact set ([`collide_hulls`]);
//! curved shapes keep nothing (their support functions are closed forms).
//! Each pair type is tested against a brute-force sampling of both outlines
//! (10⁵ points per curved outline, `tests/contact_narrowphase.rs`).
//!
//! Degenerate inputs give a defined normal: coincident centres of two
//! circles take +y; of curved shapes, EPA's nearest face (or the line of
//! centres, or +y); shapes touching at one point have gap 0 and the normal
//! of the touching point.

pub mod circle;
pub mod gjk;
pub mod polygon;
pub mod smooth;
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

/// Whether a shape is met through its support function and curvature
/// ([`smooth`]) rather than as a circle or a polygon.
pub fn is_smooth_curved(shape: &Shape) -> bool {
    matches!(shape, Shape::Ellipse { .. } | Shape::Superellipse { .. })
}

/// The polygon vertices of a shape kept per body by the contact set (built
/// once): [`hull`]'s vertices for polygons, boxes and bars; empty for round
/// and curved shapes (handled exactly from their support functions).
pub fn outline_hull(shape: &Shape) -> Vec<DVec2> {
    hull(shape).unwrap_or_default()
}

fn rect(hx: f64, hy: f64) -> Vec<DVec2> {
    vec![DVec2::new(-hx, -hy), DVec2::new(hx, -hy), DVec2::new(hx, hy), DVec2::new(-hx, hy)]
}

/// Contact points of body shapes `a` and `b` at their poses, gap ≤ `margin`.
pub fn collide_bodies(a: &Shape, pa: &Pose, b: &Shape, pb: &Pose, margin: f64, out: &mut Vec<ManifoldPoint>) {
    collide_hulls(a, &outline_hull(a), pa, b, &outline_hull(b), pb, margin, out);
}

/// [`collide_bodies`] with each shape's [`outline_hull`] computed beforehand
/// (the contact set keeps them per body).
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
    if is_smooth_curved(a) || is_smooth_curved(b) {
        return smooth::collide_convex(a, pa, b, pb, margin, out);
    }
    // A point mass meets others as a disc of radius 0.
    let round = |s: &Shape| match s {
        Shape::Circle { radius } => Some(*radius),
        Shape::Point => Some(0.0),
        _ => None,
    };
    match (round(a), round(b)) {
        (Some(ra), Some(rb)) => circle::circle_circle(ra, pa.position, rb, pb.position, margin, out),
        (Some(radius), None) => circle::circle_hull(radius, pa.position, hull_b, pb, margin, out),
        (None, Some(radius)) => {
            let start = out.len();
            circle::circle_hull(radius, pb.position, hull_a, pa, margin, out);
            flip(&mut out[start..]);
        }
        (None, None) => polygon::polygon_polygon(hull_a, pa, hull_b, pb, margin, out),
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
