//! Box2D v3's `large_pyramid` benchmark scene, engine-independent: `rows` rows of square
//! boxes of half-size 0.5 (rows·(rows+1)/2 boxes: 20 → 210, 100 → 5,050) standing on a static
//! ground box of half-size 100 × 1 centred at (0, −1) (top face at y = 0); density 1, Box2D's
//! default friction 0.6 and restitution 0, sleeping disabled, dt = 1/60, 4 sub-steps.
//! Positions follow `benchmark/large_pyramid.c`: row i, column j ≥ i at
//! x = (i + 1)·h + 2(j − i)·h − h·rows, y = (2i + 1)·h.

use crate::PointGrid;

/// Half-size of a box (m).
pub const HALF: f64 = 0.5;
/// Friction (Box2D's default, set on both engines).
pub const FRICTION: f64 = 0.6;
/// Density (kg/m²).
pub const DENSITY: f64 = 1.0;
/// Ground box half-extents and centre.
pub const GROUND_HALF: [f64; 2] = [100.0, 1.0];
/// Centre of the ground box.
pub const GROUND_CENTER: [f64; 2] = [0.0, -1.0];
/// Step size (s).
pub const DT: f64 = 1.0 / 60.0;

/// Initial box centres, row by row from the bottom.
pub fn initial_positions(rows: usize) -> Vec<[f64; 2]> {
    let h = HALF;
    let mut out = Vec::with_capacity(rows * (rows + 1) / 2);
    for i in 0..rows {
        let y = (2.0 * i as f64 + 1.0) * h;
        for j in i..rows {
            let x = (i as f64 + 1.0) * h + 2.0 * (j - i) as f64 * h - h * rows as f64;
            out.push([x, y]);
        }
    }
    out
}

/// A box pose: centre and angle (rad).
#[derive(Clone, Copy, Debug)]
pub struct Pose {
    /// Centre.
    pub center: [f64; 2],
    /// Angle (rad).
    pub angle: f64,
}

impl Pose {
    fn corners(&self) -> [[f64; 2]; 4] {
        let (s, c) = self.angle.sin_cos();
        let mut out = [[0.0; 2]; 4];
        for (k, (sx, sy)) in [(-1.0, -1.0), (1.0, -1.0), (1.0, 1.0), (-1.0, 1.0)].iter().enumerate() {
            let (lx, ly) = (sx * HALF, sy * HALF);
            out[k] = [self.center[0] + c * lx - s * ly, self.center[1] + s * lx + c * ly];
        }
        out
    }

    fn axes(&self) -> [[f64; 2]; 2] {
        let (s, c) = self.angle.sin_cos();
        [[c, s], [-s, c]]
    }
}

/// Penetration depth of two squares of half-size [`HALF`] by the separating-axis theorem:
/// the smallest overlap of their projections on the four face normals (0 if any axis
/// separates them). Exact for convex polygons: the minimum over face normals is the depth.
pub fn box_box_penetration(a: &Pose, b: &Pose) -> f64 {
    let (ca, cb) = (a.corners(), b.corners());
    let mut depth = f64::INFINITY;
    for axis in a.axes().into_iter().chain(b.axes()) {
        let project = |cs: &[[f64; 2]; 4]| {
            cs.iter()
                .map(|p| p[0] * axis[0] + p[1] * axis[1])
                .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)))
        };
        let (a_lo, a_hi) = project(&ca);
        let (b_lo, b_hi) = project(&cb);
        let overlap = a_hi.min(b_hi) - a_lo.max(b_lo);
        if overlap <= 0.0 {
            return 0.0;
        }
        depth = depth.min(overlap);
    }
    depth
}

/// Largest penetration (m) among all box pairs and of any box corner below the ground's
/// top face (y = 0).
pub fn max_penetration(poses: &[Pose], rows: usize) -> f64 {
    let mut max_pen: f64 = 0.0;
    for p in poses {
        for c in p.corners() {
            max_pen = max_pen.max(-c[1]);
        }
    }
    let centers: Vec<[f64; 2]> = poses.iter().map(|p| p.center).collect();
    let width = rows as f64 * 2.0 * HALF;
    // Boxes interact within one diagonal (2·√2·h) of each other.
    let range = 2.0 * std::f64::consts::SQRT_2 * HALF;
    let grid = PointGrid::new(&centers, range, [-width, -1.0], [width, width + 1.0]);
    grid.for_each_pair(&centers, |i, j| {
        let d2 = (centers[i][0] - centers[j][0]).powi(2) + (centers[i][1] - centers[j][1]).powi(2);
        if d2 < range * range {
            max_pen = max_pen.max(box_box_penetration(&poses[i], &poses[j]));
        }
    });
    max_pen
}

/// Largest horizontal and vertical displacement (m) of any box centre from its initial
/// position: tells a stack that sags under soft contacts (vertical) from one that slides.
pub fn max_drift_xy(initial: &[[f64; 2]], poses: &[Pose]) -> [f64; 2] {
    initial
        .iter()
        .zip(poses)
        .fold([0.0f64; 2], |m, (a, p)| [m[0].max((a[0] - p.center[0]).abs()), m[1].max((a[1] - p.center[1]).abs())])
}

/// Largest distance (m) of any box centre from its initial position.
pub fn max_drift(initial: &[[f64; 2]], poses: &[Pose]) -> f64 {
    initial
        .iter()
        .zip(poses)
        .map(|(a, p)| ((a[0] - p.center[0]).powi(2) + (a[1] - p.center[1]).powi(2)).sqrt())
        .fold(0.0, f64::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_is_box2d_large_pyramid() {
        let p = initial_positions(20);
        assert_eq!(p.len(), 210);
        assert_eq!(initial_positions(100).len(), 5050);
        // Bottom row of 20 boxes spans [-10, 10], touching; the apex is at y = 19.5.
        assert_eq!(p[0], [-9.5, 0.5]);
        assert_eq!(p[19], [9.5, 0.5]);
        assert_eq!(p[209], [0.0, 19.5]);
        let poses: Vec<Pose> = p.iter().map(|&c| Pose { center: c, angle: 0.0 }).collect();
        // Touching boxes: zero penetration (within rounding).
        assert!(max_penetration(&poses, 20) < 1e-12);
    }

    #[test]
    fn sat_depth_matches_closed_forms() {
        let a = Pose { center: [0.0, 0.0], angle: 0.0 };
        // Axis-aligned, 0.1 overlap along x.
        let b = Pose { center: [0.9, 0.3], angle: 0.0 };
        assert!((box_box_penetration(&a, &b) - 0.1).abs() < 1e-12);
        // A box turned 45° with its corner 0.05 into a's right face: corner at
        // x = cx − h√2 = 0.45.
        let c = Pose { center: [0.45 + HALF * std::f64::consts::SQRT_2, 0.0], angle: std::f64::consts::FRAC_PI_4 };
        assert!((box_box_penetration(&a, &c) - 0.05).abs() < 1e-9);
        let d = Pose { center: [1.2, 0.0], angle: 0.3 };
        assert_eq!(box_box_penetration(&a, &d), 0.0);
    }
}
