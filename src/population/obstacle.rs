//! Obstacles of the population tier: the static surfaces of the core and the
//! mechanism tier's bodies, reduced to three f32 primitives that the CPU twin
//! and `shaders/population.wgsl` evaluate with the same formulas:
//!
//! * a half-plane (a [`SurfaceGeometry::Line`]);
//! * a circle, solid inside or (`inside`) solid outside;
//! * a segment whose free side is on its left (polylines as written, and the
//!   outlines of ellipses, superellipses and bodies, oriented so).
//!
//! Ellipses, superellipses and non-circular bodies are tessellated
//! ([`CURVE_SEGMENTS`] chords): the cost is a chord error of at most
//! a·(π/n)²/2 (≈ 7.5e-5·a for n = 256), below 0.1 % of the radius for the
//! scenes shipped. Bodies are moving obstacles: each primitive carries the
//! body's velocity, angular velocity and centre so that the contact sees the
//! surface's own velocity; balls do **not** push back on bodies (one-way
//! coupling: the mechanism tier is stepped first and its bodies are
//! kinematic for the balls).

use bytemuck::{Pod, Zeroable};
use glam::{DVec2, Vec2};

use crate::body::Body;
use crate::shape::Shape;
use crate::surface::{Surface, SurfaceGeometry};

/// Chords per closed curve (ellipse, superellipse, non-circular body).
pub const CURVE_SEGMENTS: usize = 256;

/// Primitive kinds (`Obstacle::kind`).
pub mod kind {
    /// Half-plane: `a` a point of the line, `b` the unit normal into free space.
    pub const HALF_PLANE: u32 = 0;
    /// Circle: `a` the centre, `b.x` the radius; solid inside unless `INSIDE`.
    pub const CIRCLE: u32 = 1;
    /// Segment from `a` to `b`, free space on its left.
    pub const SEGMENT: u32 = 2;
}

/// Flag: the circle's free space is inside it (a bowl).
pub const INSIDE: u32 = 1;

/// One obstacle primitive (WGSL `Obstacle`, 64 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct Obstacle {
    /// [`kind`] code.
    pub kind: u32,
    /// [`INSIDE`] or 0.
    pub flags: u32,
    /// Coefficient of restitution of the obstacle's surface.
    pub restitution: f32,
    /// Coulomb friction coefficient of the obstacle's surface.
    pub friction: f32,
    /// First point (see [`kind`]).
    pub a: Vec2,
    /// Second point, normal or radius (see [`kind`]).
    pub b: Vec2,
    /// Velocity of the carrying body's centre (m/s); zero for surfaces.
    pub velocity: Vec2,
    /// Centre of the carrying body (m).
    pub center: Vec2,
    /// Angular velocity of the carrying body (rad/s).
    pub omega: f32,
    /// Rolling-resistance length of the surface (m).
    pub rolling_resistance: f32,
    /// Padding to 64 bytes.
    pub _pad: [u32; 2],
}

/// Closest point of an obstacle to a point: signed distance (negative inside
/// the solid) and the unit normal pointing into free space.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ObstacleContact {
    /// Signed distance of the point from the obstacle's surface (m).
    pub distance: f32,
    /// Unit normal into free space.
    pub normal: Vec2,
}

impl Obstacle {
    /// Signed distance and normal at `p` (the formula `population.wgsl`'s
    /// `obstacle_contact` mirrors). Segments: signed by side inside their
    /// span, unsigned (pushing away from the end) beyond it, so that the
    /// faces of a closed outline do not claim balls beside their neighbours.
    pub fn contact(&self, p: Vec2) -> ObstacleContact {
        match self.kind {
            kind::HALF_PLANE => ObstacleContact { distance: (p - self.a).dot(self.b), normal: self.b },
            kind::CIRCLE => {
                let r = p - self.a;
                let len = r.length();
                let dir = if len > 0.0 { r / len } else { Vec2::Y };
                if self.flags & INSIDE != 0 {
                    ObstacleContact { distance: self.b.x - len, normal: -dir }
                } else {
                    ObstacleContact { distance: len - self.b.x, normal: dir }
                }
            }
            _ => {
                let e = self.b - self.a;
                let len2 = e.length_squared().max(f32::MIN_POSITIVE);
                let t = ((p - self.a).dot(e) / len2).clamp(0.0, 1.0);
                let c = self.a + e * t;
                if t > 0.0 && t < 1.0 {
                    let left = e.perp() / len2.sqrt();
                    ObstacleContact { distance: (p - self.a).dot(left), normal: left }
                } else {
                    let r = p - c;
                    let d = r.length();
                    let normal = if d > 0.0 { r / d } else { e.perp() / len2.sqrt() };
                    ObstacleContact { distance: d, normal }
                }
            }
        }
    }

    /// Velocity of the obstacle's material at `p` (v + ω × (p − centre)).
    pub fn velocity_at(&self, p: Vec2) -> Vec2 {
        self.velocity + (p - self.center).perp() * self.omega
    }
}

fn segments_of(points: &[DVec2], base: Obstacle, out: &mut Vec<Obstacle>) {
    for w in points.windows(2) {
        if w[0] != w[1] {
            out.push(Obstacle { kind: kind::SEGMENT, a: w[0].as_vec2(), b: w[1].as_vec2(), ..base });
        }
    }
}

/// The primitives of a static surface, appended to `out`.
pub fn surface_obstacles(surface: &Surface, out: &mut Vec<Obstacle>) {
    let base = Obstacle {
        restitution: surface.restitution as f32,
        // A surface's μ is checked in f64 only; past F32_PARAMETER_MAX it acts
        // as unbounded friction, which that value already gives in f32.
        friction: surface.friction.min(super::F32_PARAMETER_MAX) as f32,
        rolling_resistance: surface.rolling_resistance as f32,
        ..Obstacle::default()
    };
    match &surface.geometry {
        SurfaceGeometry::Line { point, normal } => {
            out.push(Obstacle { kind: kind::HALF_PLANE, a: point.as_vec2(), b: normal.normalize().as_vec2(), ..base })
        }
        SurfaceGeometry::Circle { center, radius, inside } => out.push(Obstacle {
            kind: kind::CIRCLE,
            flags: if *inside { INSIDE } else { 0 },
            a: center.as_vec2(),
            b: Vec2::new(*radius as f32, 0.0),
            ..base
        }),
        SurfaceGeometry::Ellipse { inside, .. } | SurfaceGeometry::Superellipse { inside, .. } => {
            // The outline runs counter-clockwise: its left is the interior.
            let mut points = surface.geometry.outline(CURVE_SEGMENTS, 0.0);
            if !inside {
                points.reverse();
            }
            segments_of(&points, base, out);
        }
        SurfaceGeometry::Polyline { points } => segments_of(points, base, out),
    }
}

/// The primitives of a body at its current pose, appended to `out`, with the
/// given contact material (bodies have none of their own).
pub fn body_obstacles(body: &Body, restitution: f32, friction: f32, out: &mut Vec<Obstacle>) {
    let base = Obstacle {
        restitution,
        friction,
        velocity: body.velocity.as_vec2(),
        center: body.position.as_vec2(),
        omega: body.angular_velocity as f32,
        ..Obstacle::default()
    };
    if let Shape::Circle { radius } = body.shape {
        out.push(Obstacle { kind: kind::CIRCLE, a: body.position.as_vec2(), b: Vec2::new(radius as f32, 0.0), ..base });
        return;
    }
    // Counter-clockwise outline in the body frame, reversed so that the free
    // space (outside) is on the left; closed by repeating the first point.
    let mut points: Vec<DVec2> = body.shape.outline(CURVE_SEGMENTS).iter().map(|&p| body.world_point(p)).collect();
    if let Some(&first) = points.first() {
        points.push(first);
    }
    points.reverse();
    segments_of(&points, base, out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_free_side_is_left_and_ends_push_away() {
        let s = Obstacle { kind: kind::SEGMENT, a: Vec2::new(0.0, 0.0), b: Vec2::new(2.0, 0.0), ..Default::default() };
        let c = s.contact(Vec2::new(1.0, 0.5));
        assert_eq!((c.distance, c.normal), (0.5, Vec2::Y));
        let c = s.contact(Vec2::new(1.0, -0.25));
        assert_eq!((c.distance, c.normal), (-0.25, Vec2::Y));
        let c = s.contact(Vec2::new(3.0, 0.0));
        assert_eq!((c.distance, c.normal), (1.0, Vec2::X));
    }

    #[test]
    fn bowl_circle_is_free_inside() {
        let s = Obstacle { kind: kind::CIRCLE, flags: INSIDE, b: Vec2::new(2.0, 0.0), ..Default::default() };
        let c = s.contact(Vec2::new(0.0, -1.5));
        assert_eq!((c.distance, c.normal), (0.5, Vec2::Y));
    }
}
