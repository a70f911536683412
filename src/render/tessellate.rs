//! From a world to what the GPU draws: disc instances for circular bodies,
//! and triangles (fills and strokes) for every other shape, the static
//! surfaces (solid side shaded), the field regions, joints, reaction and
//! velocity arrows and trails. Geometry comes from [`Shape::outline`] and
//! [`Surface::outline`](crate::surface::SurfaceGeometry::outline); strokes
//! are built in world units from a width in pixels, so they stay one width
//! on screen at any zoom.

use glam::DVec2;

use super::balls::{BallColour, BallStyle, Balls, GpuBalls, HostBalls};
use super::camera::Camera;
use crate::constraint::ConstraintKind;
use crate::constraint::system::Reaction;
use crate::field::Region;
use crate::shape::Shape;
use crate::surface::SurfaceGeometry;
use crate::world::World;

/// One disc for `disc_vs` in `shaders/render.wgsl`: the storage-buffer layout
/// a population buffer must follow to be drawn in place (32 bytes, f32/u32).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct DiscInstance {
    /// Centre (m).
    pub position: [f32; 2],
    /// Radius (m).
    pub radius: f32,
    /// Angle (rad), where the radius line points.
    pub angle: f32,
    /// RGBA8 colour, red in the low byte ([`rgba`]).
    pub color: u32,
    /// Bit 0 ([`DISC_RADIUS_LINE`]): radius line; bit 1 ([`DISC_RIM`]): darker rim.
    pub flags: u32,
    /// Padding to 32 bytes.
    pub pad: [u32; 2],
}

/// [`DiscInstance::flags`]: draw the radius line.
pub const DISC_RADIUS_LINE: u32 = 1;
/// [`DiscInstance::flags`]: draw a darker rim.
pub const DISC_RIM: u32 = 2;

/// A mesh vertex: world position and RGBA8 colour (12 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Vertex {
    /// World position (m).
    pub position: [f32; 2],
    /// RGBA8, red in the low byte.
    pub color: u32,
}

/// Packs an RGBA8 colour with red in the low byte (WGSL `unpack4x8unorm`).
pub const fn rgba(r: u8, g: u8, b: u8, a: u8) -> u32 {
    u32::from_le_bytes([r, g, b, a])
}

/// Colours and what to draw.
#[derive(Clone, Debug)]
pub struct Style {
    /// Background (RGBA8, [`rgba`]).
    pub background: u32,
    /// Body colours, taken in turn.
    pub palette: Vec<u32>,
    /// Static surfaces: outline and solid side.
    pub surface: u32,
    /// Solid side of the surfaces.
    pub surface_fill: u32,
    /// Field regions.
    pub field: u32,
    /// Joints and constraint points.
    pub joint: u32,
    /// Reaction-force arrows (seed 003 draws them green).
    pub reaction: u32,
    /// Velocity arrows.
    pub velocity: u32,
    /// Trails.
    pub trail: u32,
    /// The population's world bounds (a thin frame).
    pub bounds: u32,
    /// What the population's colours show.
    pub ball_colour: BallColour,
    /// Draw reaction-force arrows.
    pub forces: bool,
    /// Draw velocity arrows.
    pub velocities: bool,
    /// Shade field regions.
    pub fields: bool,
    /// Draw joints.
    pub joints: bool,
    /// Outline width (pixels).
    pub line_px: f64,
}

impl Default for Style {
    fn default() -> Self {
        Self {
            background: rgba(248, 248, 244, 255),
            palette: vec![
                rgba(66, 133, 244, 255),
                rgba(234, 67, 53, 255),
                rgba(251, 188, 5, 255),
                rgba(52, 168, 83, 255),
                rgba(171, 71, 188, 255),
                rgba(0, 172, 193, 255),
                rgba(255, 112, 67, 255),
                rgba(158, 157, 36, 255),
            ],
            surface: rgba(60, 60, 60, 255),
            surface_fill: rgba(120, 120, 120, 90),
            field: rgba(100, 149, 237, 40),
            joint: rgba(30, 30, 30, 255),
            reaction: rgba(0, 160, 0, 255),
            velocity: rgba(200, 0, 120, 255),
            trail: rgba(90, 90, 200, 160),
            bounds: rgba(150, 150, 150, 160),
            ball_colour: BallColour::Speed,
            forces: false,
            velocities: false,
            fields: true,
            joints: true,
            line_px: 1.5,
        }
    }
}

/// What to draw in one frame, in draw order: meshes under the discs, the
/// discs, the population's balls, then the `over` meshes (joints, arrows).
#[derive(Clone, Debug, Default)]
pub struct DrawList {
    /// Surfaces, fields, non-circular bodies (under the discs).
    pub under: Vec<Vertex>,
    /// Discs (circular bodies).
    pub discs: Vec<DiscInstance>,
    /// Joints, arrows, trails (over the discs).
    pub over: Vec<Vertex>,
    /// A population's balls and how to colour them (drawn after the discs).
    pub balls: Option<(super::Balls, super::BallStyle)>,
}

/// Extra per-frame inputs that are not in the world.
#[derive(Clone, Copy, Debug, Default)]
pub struct Extras<'a> {
    /// Reactions of the constraints, in constraint order ([`World::reactions`]).
    pub reactions: Option<&'a [Reaction]>,
    /// Trails (world points, oldest first), one per traced body.
    pub trails: &'a [Vec<DVec2>],
    /// A line from a grabbed body's point to the cursor (world points).
    pub grab: Option<(DVec2, DVec2)>,
    /// The population's GPU buffers, when it steps there: its balls are
    /// drawn from them in place of the (stale) host arrays.
    pub gpu_balls: Option<&'a GpuBalls>,
    /// The balls' colours when the caller keeps them (the window: computing
    /// the mass range is a pass over every ball); `None`:
    /// [`BallStyle::for_population`] with `Style::ball_colour`.
    pub ball_style: Option<BallStyle>,
}

/// Triangle-list builder in world units for a given camera.
struct Builder<'a> {
    out: &'a mut Vec<Vertex>,
    /// Metres per pixel.
    px: f64,
}

fn v(p: DVec2, color: u32) -> Vertex {
    Vertex { position: [p.x as f32, p.y as f32], color }
}

impl Builder<'_> {
    fn tri(&mut self, a: DVec2, b: DVec2, c: DVec2, color: u32) {
        self.out.extend([v(a, color), v(b, color), v(c, color)]);
    }

    fn quad(&mut self, a: DVec2, b: DVec2, c: DVec2, d: DVec2, color: u32) {
        self.tri(a, b, c, color);
        self.tri(a, c, d, color);
    }

    /// Fan from `centre` over the closed outline (convex shapes and
    /// star-shaped ones about `centre`).
    fn fan(&mut self, centre: DVec2, outline: &[DVec2], color: u32) {
        for i in 0..outline.len() {
            self.tri(centre, outline[i], outline[(i + 1) % outline.len()], color);
        }
    }

    /// A segment `width_px` wide.
    fn segment(&mut self, a: DVec2, b: DVec2, width_px: f64, color: u32) {
        let d = b - a;
        if d.length_squared() <= 0.0 || !d.is_finite() || !a.is_finite() || !b.is_finite() {
            return;
        }
        let n = d.normalize().perp() * (0.5 * width_px * self.px);
        self.quad(a - n, b - n, b + n, a + n, color);
    }

    fn polyline(&mut self, points: &[DVec2], closed: bool, width_px: f64, color: u32) {
        if closed && points.len() > 2 {
            self.ring(points, width_px, color);
            return;
        }
        for w in points.windows(2) {
            self.segment(w[0], w[1], width_px, color);
        }
    }

    /// A closed outline as one strip with mitred joins: separate segment
    /// quads would stick their corners out at every vertex, a toothed rim
    /// on small round outlines. Miters are capped at twice the half-width
    /// (a corner sharper than 60° is bevelled short instead of spiking).
    fn ring(&mut self, outline: &[DVec2], width_px: f64, color: u32) {
        let n = outline.len();
        let half = 0.5 * width_px * self.px;
        let edge_normal = |i: usize| (outline[(i + 1) % n] - outline[i]).normalize_or_zero().perp();
        let offsets: Vec<DVec2> = (0..n)
            .map(|i| {
                let (before, after) = (edge_normal((i + n - 1) % n), edge_normal(i));
                let bisector = (before + after).normalize_or_zero();
                let cos = bisector.dot(after);
                if bisector == DVec2::ZERO || cos <= 0.5 { after * half } else { bisector * (half / cos) }
            })
            .collect();
        if !offsets.iter().chain(outline).all(|p| p.is_finite()) {
            return;
        }
        for i in 0..n {
            let j = (i + 1) % n;
            let (p, q) = (outline[i], outline[j]);
            self.quad(p - offsets[i], q - offsets[j], q + offsets[j], p + offsets[i], color);
        }
    }

    /// A filled dot of `radius_px`.
    fn dot(&mut self, c: DVec2, radius_px: f64, color: u32) {
        let ring: Vec<DVec2> = (0..12)
            .map(|i| c + DVec2::from_angle(std::f64::consts::TAU * i as f64 / 12.0) * radius_px * self.px)
            .collect();
        self.fan(c, &ring, color);
    }

    /// An arrow from `a` to `b` with a head of `head_px`.
    fn arrow(&mut self, a: DVec2, b: DVec2, width_px: f64, color: u32) {
        let d = b - a;
        let len = d.length();
        if len.is_nan() || len <= 2.0 * self.px || !len.is_finite() {
            return;
        }
        let u = d / len;
        let head = (8.0 * self.px).min(0.5 * len);
        let base = b - u * head;
        self.segment(a, base, width_px, color);
        let n = u.perp() * head * 0.5;
        self.tri(b, base + n, base - n, color);
    }
}

/// Builds the draw list of `world` seen by `camera` in a `width × height` target.
pub fn draw_list(world: &World, camera: &Camera, width: u32, height: u32, style: &Style, extras: Extras) -> DrawList {
    let mut list = DrawList::default();
    let px = 1.0 / camera.pixels_per_metre;
    let half = camera.half_extent(width, height);
    // Length that covers the view from anywhere in it: lines and half-planes
    // are drawn this far either side.
    let reach = 4.0 * half.length() + (camera.center.length());
    {
        let mut b = Builder { out: &mut list.under, px };
        if style.fields {
            for f in &world.fields {
                match f.region {
                    Region::Everywhere => {}
                    Region::Rect { min, max } => {
                        b.quad(min, DVec2::new(max.x, min.y), max, DVec2::new(min.x, max.y), style.field)
                    }
                    Region::Circle { center, radius } => {
                        let ring: Vec<DVec2> = (0..64)
                            .map(|i| center + DVec2::from_angle(std::f64::consts::TAU * i as f64 / 64.0) * radius)
                            .collect();
                        b.fan(center, &ring, style.field);
                    }
                    Region::HalfPlane { point, normal } => {
                        if normal.length_squared() > 0.0 {
                            let n = normal.normalize();
                            let t = n.perp() * reach;
                            b.quad(point - t, point + t, point + t + n * reach, point - t + n * reach, style.field);
                        }
                    }
                }
            }
        }
        for s in &world.surfaces {
            surface(&mut b, &s.geometry, reach, camera, width, height, style);
        }
    }
    for (i, body) in world.bodies.iter().enumerate() {
        let color = style.palette.get(i % style.palette.len().max(1)).copied().unwrap_or(rgba(66, 133, 244, 255));
        match body.shape {
            Shape::Circle { radius } => list.discs.push(DiscInstance {
                position: [body.position.x as f32, body.position.y as f32],
                radius: radius as f32,
                angle: body.angle as f32,
                color,
                flags: DISC_RADIUS_LINE | DISC_RIM,
                pad: [0; 2],
            }),
            ref shape => {
                let (s, c) = body.angle.sin_cos();
                let rot = DVec2::new(c, s);
                let outline: Vec<DVec2> =
                    shape.outline(48).into_iter().map(|p| body.position + rot.rotate(p)).collect();
                let mut b = Builder { out: &mut list.under, px };
                // A bar thinner than 4 pixels (an ideal rod has width 0) is
                // drawn 4 pixels wide so that it stays visible.
                if let Shape::Bar { length, width } = shape
                    && *width * camera.pixels_per_metre < 4.0
                {
                    let half = rot * (0.5 * length);
                    b.segment(body.position - half, body.position + half, 4.0, color);
                }
                b.fan(body.position, &outline, color);
                b.polyline(&outline, true, style.line_px, darker(color));
                // Radius line so that rotation shows, as on the discs.
                let tip = body.position + rot * shape.bounding_radius().min(shape_extent_x(shape));
                b.segment(body.position, tip, style.line_px, darker(color));
            }
        }
    }
    if let Some(pop) = &world.population {
        population_walls(&mut Builder { out: &mut list.under, px }, world, reach, camera, width, height, style);
        let balls = match extras.gpu_balls {
            Some(gpu) => Balls::Gpu(gpu.clone()),
            None => Balls::Host(HostBalls::of(pop)),
        };
        let ball_style = extras.ball_style.unwrap_or_else(|| BallStyle::for_population(pop, style.ball_colour));
        list.balls = Some((balls, ball_style));
    }
    let mut b = Builder { out: &mut list.over, px };
    for trail in extras.trails {
        b.polyline(trail, false, style.line_px, style.trail);
    }
    let bodies = world.bodies.as_slice();
    let world_point = |h: crate::body::BodyHandle, local: DVec2| bodies.get(h.0).map(|body| body.world_point(local));
    if style.joints {
        for c in world.constraints.iter() {
            let pa = |local: DVec2| world_point(c.body_a, local);
            let pb = |local: DVec2| match c.body_b {
                Some(h) => world_point(h, local),
                None => Some(local),
            };
            match &c.kind {
                ConstraintKind::Revolute { anchor_a, anchor_b } | ConstraintKind::Weld { anchor_a, anchor_b, .. } => {
                    if let (Some(a), Some(bp)) = (pa(*anchor_a), pb(*anchor_b)) {
                        b.dot(bp, 4.0, style.joint);
                        b.dot(a, 2.5, rgba(255, 255, 255, 255));
                    }
                }
                ConstraintKind::Distance { anchor_a, anchor_b, .. } => {
                    if let (Some(a), Some(bp)) = (pa(*anchor_a), pb(*anchor_b)) {
                        b.segment(a, bp, 2.0 * style.line_px, style.joint);
                        b.dot(a, 3.0, style.joint);
                        b.dot(bp, 3.0, style.joint);
                    }
                }
                ConstraintKind::Prismatic { anchor_a, anchor_b, axis, .. } => {
                    if let (Some(a), Some(bp)) = (pa(*anchor_a), pb(*anchor_b)) {
                        let rot = c.body_b.and_then(|h| bodies.get(h.0)).map_or(0.0, |body| body.angle);
                        let dir = DVec2::from_angle(rot).rotate(axis.normalize_or_zero());
                        let span = (a - bp).length().max(20.0 * px);
                        b.segment(bp - dir * span, bp + dir * span, style.line_px, style.joint);
                        b.dot(a, 3.0, style.joint);
                    }
                }
                ConstraintKind::PointOnCurve { point, .. } => {
                    if let Some(a) = pa(*point) {
                        b.dot(a, 3.0, style.joint);
                    }
                }
                _ => {}
            }
        }
    }
    if style.forces
        && let Some(reactions) = extras.reactions
    {
        // Longest arrow a quarter of the view's height.
        let largest = reactions.iter().map(|r| DVec2::new(r.fx, r.fy).length()).fold(0.0, f64::max);
        if largest > 0.0 && largest.is_finite() {
            let scale = 0.25 * 2.0 * half.y / largest;
            for (c, r) in world.constraints.iter().zip(reactions) {
                let at = match &c.kind {
                    ConstraintKind::Revolute { anchor_a, .. }
                    | ConstraintKind::Weld { anchor_a, .. }
                    | ConstraintKind::Distance { anchor_a, .. }
                    | ConstraintKind::Prismatic { anchor_a, .. } => world_point(c.body_a, *anchor_a),
                    ConstraintKind::PointOnCurve { point, .. } => world_point(c.body_a, *point),
                    _ => bodies.get(c.body_a.0).map(|body| body.position),
                };
                if let Some(at) = at {
                    b.arrow(at, at + DVec2::new(r.fx, r.fy) * scale, 2.0, style.reaction);
                }
            }
        }
    }
    if style.velocities {
        let fastest = bodies.iter().map(|body| body.velocity.length()).fold(0.0, f64::max);
        if fastest > 0.0 && fastest.is_finite() {
            let scale = 0.2 * 2.0 * half.y / fastest;
            for body in bodies {
                b.arrow(body.position, body.position + body.velocity * scale, 2.0, style.velocity);
            }
        }
    }
    if let Some((from, to)) = extras.grab {
        b.segment(from, to, 1.5, rgba(220, 40, 40, 255));
        b.dot(to, 3.0, rgba(220, 40, 40, 255));
    }
    list
}

/// Half-width along local x (where the radius line of a shape ends).
fn shape_extent_x(shape: &Shape) -> f64 {
    match shape {
        Shape::Ellipse { a, .. } | Shape::Superellipse { a, .. } => *a,
        Shape::Bar { length, .. } => 0.5 * length,
        Shape::Box { half_extents } => half_extents.x,
        other => other.bounding_radius(),
    }
}

/// The colour at 55 % brightness, same alpha.
pub fn darker(color: u32) -> u32 {
    let [r, g, b, a] = color.to_le_bytes();
    let f = |c: u8| (f64::from(c) * 0.55) as u8;
    rgba(f(r), f(g), f(b), a)
}

/// A static surface: the solid side shaded, the curve stroked.
fn surface(
    b: &mut Builder,
    geometry: &SurfaceGeometry,
    reach: f64,
    camera: &Camera,
    width: u32,
    height: u32,
    style: &Style,
) {
    // Depth of the shaded band on the solid side of open or inverted
    // surfaces: the whole view.
    let band = 2.0 * camera.half_extent(width, height).length();
    match geometry {
        SurfaceGeometry::Line { point, normal } => {
            if normal.length_squared() == 0.0 {
                return;
            }
            let n = normal.normalize();
            // The foot of the camera centre on the line, so that the drawn
            // piece is centred in the view.
            let foot = camera.center - n * (camera.center - *point).dot(n);
            let t = n.perp() * reach;
            b.quad(foot - t, foot + t, foot + t - n * reach, foot - t - n * reach, style.surface_fill);
            b.segment(foot - t, foot + t, 2.0 * style.line_px, style.surface);
        }
        SurfaceGeometry::Polyline { points } if closed_clockwise(points) => {
            // A closed outline travelled clockwise has its solid side inside
            // (on the right): fill the polygon itself, not a band the depth
            // of the view behind each edge (which would cross the picture).
            let outline = &points[..points.len() - 1];
            for [i, j, k] in triangulate(outline) {
                b.tri(outline[i], outline[j], outline[k], style.surface_fill);
            }
            b.polyline(points, false, 2.0 * style.line_px, style.surface);
        }
        SurfaceGeometry::Polyline { points } => {
            for w in points.windows(2) {
                let d = w[1] - w[0];
                if d.length_squared() > 0.0 {
                    // Solid on the right of the direction of travel.
                    let right = -d.normalize().perp() * band;
                    b.quad(w[0], w[1], w[1] + right, w[0] + right, style.surface_fill);
                }
            }
            b.polyline(points, false, 2.0 * style.line_px, style.surface);
        }
        SurfaceGeometry::Circle { center, inside, .. }
        | SurfaceGeometry::Ellipse { center, inside, .. }
        | SurfaceGeometry::Superellipse { center, inside, .. } => {
            // About 3 px per edge, 16 to 128 edges: tiny edges under a line
            // several pixels wide leave a jagged rim (the pegs of galton).
            let size = match geometry {
                SurfaceGeometry::Circle { radius, .. } => *radius,
                SurfaceGeometry::Ellipse { a, b: semi_b, .. } | SurfaceGeometry::Superellipse { a, b: semi_b, .. } => {
                    a.max(*semi_b)
                }
                _ => 0.0,
            };
            let rim_px = std::f64::consts::TAU * size / b.px;
            let segments = if rim_px.is_finite() { (rim_px / 3.0).ceil().clamp(16.0, 128.0) as usize } else { 128 };
            let mut outline = geometry.outline(segments, reach);
            outline.pop(); // the outline repeats its first point
            if *inside {
                // Solid outside: a band around the curve.
                for i in 0..outline.len() {
                    let (p, q) = (outline[i], outline[(i + 1) % outline.len()]);
                    let (dp, dq) = ((p - *center).normalize_or_zero(), (q - *center).normalize_or_zero());
                    b.quad(p, q, q + dq * band, p + dp * band, style.surface_fill);
                }
            } else {
                b.fan(*center, &outline, style.surface_fill);
            }
            b.polyline(&outline, true, 2.0 * style.line_px, style.surface);
        }
    }
}

/// Twice the signed area of a closed outline (positive counter-clockwise).
fn doubled_area(outline: &[DVec2]) -> f64 {
    (0..outline.len()).map(|i| outline[i].perp_dot(outline[(i + 1) % outline.len()])).sum()
}

/// Whether a polyline is closed (last point = first, at least a triangle)
/// and travelled clockwise.
fn closed_clockwise(points: &[DVec2]) -> bool {
    points.len() >= 4 && points.first() == points.last() && doubled_area(&points[..points.len() - 1]) < 0.0
}

/// Triangles covering a simple polygon (either orientation, no repeated
/// closing point) by ear clipping, O(n²): enough for scene outlines of tens
/// of points. A degenerate or self-intersecting outline yields the ears
/// found before no ear is left (never a panic, never a loop without end).
pub fn triangulate(outline: &[DVec2]) -> Vec<[usize; 3]> {
    let sign = if doubled_area(outline) < 0.0 { -1.0 } else { 1.0 };
    let mut left: Vec<usize> = (0..outline.len()).collect();
    let mut triangles = Vec::with_capacity(outline.len().saturating_sub(2));
    while left.len() > 3 {
        let n = left.len();
        let ear = (0..n).find(|&e| {
            let (i, j, k) = (left[(e + n - 1) % n], left[e], left[(e + 1) % n]);
            let (a, b, c) = (outline[i], outline[j], outline[k]);
            // Convex corner in the polygon's own orientation …
            if sign * (b - a).perp_dot(c - b) <= 0.0 {
                return false;
            }
            // … with no other remaining vertex inside the triangle.
            left.iter().all(|&m| {
                if m == i || m == j || m == k {
                    return true;
                }
                let p = outline[m];
                let inside = |u: DVec2, w: DVec2| sign * (w - u).perp_dot(p - u) > 0.0;
                !(inside(a, b) && inside(b, c) && inside(c, a))
            })
        });
        let Some(e) = ear else { break };
        triangles.push([left[(e + n - 1) % n], left[e], left[(e + 1) % n]]);
        left.remove(e);
    }
    if let [i, j, k] = left[..] {
        triangles.push([i, j, k]);
    }
    triangles
}

/// A population's container walls (the static obstacles that are not one of
/// the world's surfaces, which come first in `static_obstacles`) as
/// surfaces, and the world bounds (balls crossing them are removed) as a
/// thin frame.
fn population_walls(
    b: &mut Builder,
    world: &World,
    reach: f64,
    camera: &Camera,
    width: u32,
    height: u32,
    style: &Style,
) {
    let Some(pop) = &world.population else { return };
    let mut from_surfaces = Vec::new();
    for s in &world.surfaces {
        crate::population::obstacle::surface_obstacles(s, &mut from_surfaces);
    }
    use crate::population::obstacle::{INSIDE, kind};
    for o in pop.static_obstacles.iter().skip(from_surfaces.len()) {
        let geometry = match o.kind {
            kind::HALF_PLANE => SurfaceGeometry::Line { point: o.a.as_dvec2(), normal: o.b.as_dvec2() },
            kind::CIRCLE => SurfaceGeometry::Circle {
                center: o.a.as_dvec2(),
                radius: f64::from(o.b.x),
                inside: o.flags & INSIDE != 0,
            },
            _ => SurfaceGeometry::Polyline { points: vec![o.a.as_dvec2(), o.b.as_dvec2()] },
        };
        surface(b, &geometry, reach, camera, width, height, style);
    }
    let (lo, hi) = (pop.params.bounds.0.as_dvec2(), pop.params.bounds.1.as_dvec2());
    if lo.is_finite() && hi.is_finite() {
        let frame = [lo, DVec2::new(hi.x, lo.y), hi, DVec2::new(lo.x, hi.y)];
        b.polyline(&frame, true, 1.0, style.bounds);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ear clipping covers the polygon exactly: the triangles' areas sum to
    /// the polygon's (1e-12 relative: a few roundings per triangle) and every
    /// triangle has the polygon's orientation, for a convex pentagon, an
    /// L-shaped (non-convex) outline, both orientations; a clockwise closed
    /// polyline is recognised, an open or counter-clockwise one is not.
    #[test]
    fn triangulation_covers_convex_and_concave_outlines() {
        let pentagon: Vec<DVec2> =
            (0..5).map(|i| DVec2::from_angle(f64::from(i) * std::f64::consts::TAU / 5.0)).collect();
        let l_shape: Vec<DVec2> = [(0.0, 0.0), (2.0, 0.0), (2.0, 1.0), (1.0, 1.0), (1.0, 3.0), (0.0, 3.0)]
            .into_iter()
            .map(|(x, y)| DVec2::new(x, y))
            .collect();
        let reversed = |v: &[DVec2]| v.iter().rev().copied().collect::<Vec<_>>();
        for outline in [pentagon.clone(), l_shape.clone(), reversed(&pentagon), reversed(&l_shape)] {
            let area = 0.5 * doubled_area(&outline);
            let triangles = triangulate(&outline);
            assert_eq!(triangles.len(), outline.len() - 2);
            let sum: f64 = triangles
                .iter()
                .map(|&[i, j, k]| {
                    let t = 0.5 * (outline[j] - outline[i]).perp_dot(outline[k] - outline[i]);
                    assert!(t * area > 0.0, "a triangle against the outline's orientation");
                    t
                })
                .sum();
            assert!((sum - area).abs() <= 1e-12 * area.abs(), "{sum} vs {area}");
        }
        let mut closed_cw = reversed(&l_shape);
        closed_cw.push(closed_cw[0]);
        assert!(closed_clockwise(&closed_cw));
        assert!(!closed_clockwise(&closed_cw[..closed_cw.len() - 1]));
        assert!(!closed_clockwise(&reversed(&closed_cw)));
    }

    /// A closed outline's ring has mitred joins: for a regular 16-gon of
    /// radius 10 px drawn 3 px wide, every vertex of the strip lies on the
    /// offset polygons (radius 10 ± 1.5/cos(π/16), to 1e-5 px: f32 vertices),
    /// none sticks out as segment quads' corners did; a 90° corner is
    /// mitred (√2 · half-width), a 20° spike bevelled (no vertex past
    /// twice the half-width).
    #[test]
    fn closed_outlines_are_drawn_with_mitred_joins() {
        let mut out = Vec::new();
        let mut b = Builder { out: &mut out, px: 1.0 };
        let n = 16;
        let polygon: Vec<DVec2> =
            (0..n).map(|i| DVec2::from_angle(std::f64::consts::TAU * i as f64 / n as f64) * 10.0).collect();
        b.polyline(&polygon, true, 3.0, 0);
        assert_eq!(out.len(), 6 * n);
        let miter = 1.5 / (std::f64::consts::PI / n as f64).cos();
        for v in &out {
            let r = DVec2::new(f64::from(v.position[0]), f64::from(v.position[1])).length();
            let off = (r - 10.0).abs();
            assert!((off - miter).abs() < 1e-5, "vertex at radius {r}");
        }
        let mut out = Vec::new();
        let mut b = Builder { out: &mut out, px: 1.0 };
        let spike = [DVec2::new(0.0, 0.0), DVec2::new(10.0, 0.0), DVec2::new(10.0, 10.0), DVec2::new(0.0, 0.4)];
        b.polyline(&spike, true, 2.0, 0);
        for v in &out {
            let p = DVec2::new(f64::from(v.position[0]), f64::from(v.position[1]));
            let nearest = spike.iter().map(|c| (p - *c).length()).fold(f64::INFINITY, f64::min);
            assert!(nearest <= 2.0 * 1.0 + 1e-6, "a vertex {nearest} from its corner");
        }
    }
}
