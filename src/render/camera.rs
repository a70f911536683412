//! The 2D camera: a world point at the centre of the target and a scale in
//! pixels per metre (y up in the world, down in pixel rows).

use glam::DVec2;

use crate::world::World;

/// Where the view looks and how close.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Camera {
    /// World point at the centre of the target (m).
    pub center: DVec2,
    /// Pixels per metre.
    pub pixels_per_metre: f64,
}

/// The `View` uniform of `shaders/render.wgsl` (32 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ViewUniform {
    /// clip = world · scale + offset.
    pub scale: [f32; 2],
    /// See `scale`.
    pub offset: [f32; 2],
    /// Target size (pixels).
    pub viewport: [f32; 2],
    /// Pixels per metre.
    pub pixels_per_metre: f32,
    /// 1 when the target re-encodes to sRGB.
    pub srgb_target: u32,
}

impl Camera {
    /// A camera centred on `center` at `pixels_per_metre`.
    pub fn new(center: DVec2, pixels_per_metre: f64) -> Self {
        Self { center, pixels_per_metre }
    }

    /// The camera that shows the box `min..max` whole in a `width × height`
    /// target, with `margin` (a fraction of the box) around it.
    pub fn fit(min: DVec2, max: DVec2, width: u32, height: u32, margin: f64) -> Self {
        let size = (max - min).max(DVec2::splat(1e-3)) * (1.0 + 2.0 * margin);
        let scale = (f64::from(width.max(1)) / size.x).min(f64::from(height.max(1)) / size.y);
        Self { center: 0.5 * (min + max), pixels_per_metre: scale }
    }

    /// The camera that shows the bodies and the bounded surfaces of `world`.
    pub fn fit_world(world: &World, width: u32, height: u32) -> Self {
        let (min, max) = world_bounds(world);
        Self::fit(min, max, width, height, 0.08)
    }

    /// The uniform for a `width × height` target.
    pub fn uniform(&self, width: u32, height: u32, srgb_target: bool) -> ViewUniform {
        let (w, h) = (f64::from(width.max(1)), f64::from(height.max(1)));
        let sx = 2.0 * self.pixels_per_metre / w;
        let sy = 2.0 * self.pixels_per_metre / h;
        ViewUniform {
            scale: [sx as f32, sy as f32],
            offset: [(-self.center.x * sx) as f32, (-self.center.y * sy) as f32],
            viewport: [w as f32, h as f32],
            pixels_per_metre: self.pixels_per_metre as f32,
            srgb_target: u32::from(srgb_target),
        }
    }

    /// The world point under pixel `(px, py)` (from the top-left corner) of a
    /// `width × height` target.
    pub fn world_at(&self, px: f64, py: f64, width: u32, height: u32) -> DVec2 {
        let dx = px - 0.5 * f64::from(width);
        let dy = 0.5 * f64::from(height) - py;
        self.center + DVec2::new(dx, dy) / self.pixels_per_metre
    }

    /// The pixel (from the top-left corner) of world point `p`.
    pub fn pixel_of(&self, p: DVec2, width: u32, height: u32) -> DVec2 {
        let d = (p - self.center) * self.pixels_per_metre;
        DVec2::new(0.5 * f64::from(width) + d.x, 0.5 * f64::from(height) - d.y)
    }

    /// Zooms by `factor` keeping the world point under pixel `(px, py)` fixed.
    pub fn zoom_about(&mut self, factor: f64, px: f64, py: f64, width: u32, height: u32) {
        let anchor = self.world_at(px, py, width, height);
        self.pixels_per_metre = (self.pixels_per_metre * factor).clamp(1e-6, 1e9);
        let moved = self.world_at(px, py, width, height);
        self.center += anchor - moved;
    }

    /// Half the visible extent (m) of a `width × height` target.
    pub fn half_extent(&self, width: u32, height: u32) -> DVec2 {
        DVec2::new(f64::from(width), f64::from(height)) * (0.5 / self.pixels_per_metre)
    }
}

/// Bounding box of the bodies (their bounding discs) and of the bounded
/// surfaces; lines count by their point. A world with nothing gives the unit box.
pub fn world_bounds(world: &World) -> (DVec2, DVec2) {
    let mut min = DVec2::splat(f64::INFINITY);
    let mut max = DVec2::splat(f64::NEG_INFINITY);
    let mut add = |p: DVec2, r: f64| {
        if p.is_finite() && r.is_finite() {
            min = min.min(p - DVec2::splat(r));
            max = max.max(p + DVec2::splat(r));
        }
    };
    for b in world.bodies.iter() {
        add(b.position, b.shape.bounding_radius());
    }
    for s in &world.surfaces {
        use crate::surface::SurfaceGeometry as G;
        match &s.geometry {
            G::Line { point, .. } => add(*point, 0.0),
            G::Polyline { points } => points.iter().for_each(|p| add(*p, 0.0)),
            // A bowl bodies move inside bounds the scene; a solid ball is
            // shown in part at most (its size can dwarf the bodies: a planet).
            G::Circle { center, radius, inside: true } => add(*center, *radius),
            G::Ellipse { center, a, b, inside: true } | G::Superellipse { center, a, b, inside: true, .. } => {
                add(*center - DVec2::new(*a, *b), 0.0);
                add(*center + DVec2::new(*a, *b), 0.0);
            }
            G::Circle { .. } | G::Ellipse { .. } | G::Superellipse { .. } => {}
        }
    }
    // A mechanism pinned to the world can turn about its pin: include the
    // disc it sweeps (pin to the farthest body of the pinned group), so that
    // a pendulum stays in a fixed frame as it swings.
    for (pin, reach) in pinned_reach(world) {
        add(pin, reach);
    }
    if !(min.is_finite() && max.is_finite()) {
        return (DVec2::splat(-1.0), DVec2::splat(1.0));
    }
    // Never narrower than a metre in either direction: a single body falling
    // straight down still gets some context.
    let centre = 0.5 * (min + max);
    let half = (0.5 * (max - min)).max(DVec2::splat(0.5));
    (centre - half, centre + half)
}

/// For every revolute or distance joint to a world point: the point and the
/// largest distance from it to a body (plus the body's bounding radius) in
/// the group of bodies joined to the pinned one.
fn pinned_reach(world: &World) -> Vec<(DVec2, f64)> {
    use crate::constraint::ConstraintKind as K;
    let n = world.bodies.len();
    // Union-find over the joints that link two bodies.
    let mut parent: Vec<usize> = (0..n).collect();
    fn root(parent: &mut [usize], mut i: usize) -> usize {
        while parent[i] != i {
            parent[i] = parent[parent[i]];
            i = parent[i];
        }
        i
    }
    for c in world.constraints.iter() {
        if let Some(b) = c.body_b
            && c.body_a.0 < n
            && b.0 < n
        {
            let (ra, rb) = (root(&mut parent, c.body_a.0), root(&mut parent, b.0));
            parent[ra] = rb;
        }
    }
    let bodies = world.bodies.as_slice();
    let mut out = Vec::new();
    for c in world.constraints.iter() {
        let pin = match (&c.kind, c.body_b) {
            (K::Revolute { anchor_b, .. } | K::Distance { anchor_b, .. }, None) => *anchor_b,
            _ => continue,
        };
        if c.body_a.0 >= n {
            continue;
        }
        let group = root(&mut parent, c.body_a.0);
        let reach = (0..n)
            .filter(|&i| root(&mut parent, i) == group)
            .map(|i| (bodies[i].position - pin).length() + bodies[i].shape.bounding_radius())
            .fold(0.0, f64::max);
        out.push((pin, reach));
    }
    out
}
