//! The "balls_box" scene of DESIGN.md ("Peers"), engine-independent: N discs of radius 0.5 on
//! a grid of spacing 1.25 with ceil(√N) columns from (0.5, 1), random initial velocities in
//! [−2, 2]² from a fixed seed, in a box with its floor at y = 0 and walls at x = −1 and
//! x = cols·1.25 + 1; gravity −9.81, restitution 0.5, friction 0.3, dt = 1/60.

use crate::PointGrid;
use rand::{Rng, SeedableRng};

/// Disc radius (m).
pub const RADIUS: f64 = 0.5;
/// Grid spacing of the initial layout (m).
pub const SPACING: f64 = 1.25;
/// Gravity along y (m/s²).
pub const GRAVITY: f64 = -9.81;
/// Restitution of every shape (balls and box), so that any mixing rule gives 0.5.
pub const RESTITUTION: f64 = 0.5;
/// Friction of every shape, so that any mixing rule gives 0.3.
pub const FRICTION: f64 = 0.3;
/// Step size (s).
pub const DT: f64 = 1.0 / 60.0;
/// Seed of the initial velocities.
pub const SEED: u64 = 0x6d78_3264; // "mx2d"
/// Head room above the top row of the initial grid (m): the fastest ball (2 m/s up) rises
/// v²/2g ≈ 0.2 m, and contacts with restitution 0.5 only take energy away, so 10 m is ample.
pub const HEAD_ROOM: f64 = 10.0;

/// The scene for a given N: initial states and the box.
pub struct Layout {
    /// Initial centres.
    pub positions: Vec<[f64; 2]>,
    /// Initial velocities.
    pub velocities: Vec<[f64; 2]>,
    /// Inner face of the left wall (x).
    pub left: f64,
    /// Inner face of the right wall (x).
    pub right: f64,
    /// Floor (y).
    pub floor: f64,
    /// Top of the walls (y).
    pub top: f64,
}

impl Layout {
    /// Builds the layout of `n` balls.
    pub fn new(n: usize) -> Self {
        let cols = (n as f64).sqrt().ceil().max(1.0) as usize;
        let rows = n.div_ceil(cols).max(1);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(SEED);
        let positions =
            (0..n).map(|i| [0.5 + (i % cols) as f64 * SPACING, 1.0 + (i / cols) as f64 * SPACING]).collect();
        let velocities = (0..n).map(|_| [rng.random_range(-2.0..=2.0), rng.random_range(-2.0..=2.0)]).collect();
        Self {
            positions,
            velocities,
            left: -1.0,
            right: cols as f64 * SPACING + 1.0,
            floor: 0.0,
            top: 1.0 + (rows - 1) as f64 * SPACING + RADIUS + HEAD_ROOM,
        }
    }

    /// Whether a ball centred at `p` is outside the box (its centre past a wall, the floor or
    /// the top of the walls, or not a number).
    pub fn escaped(&self, p: &[f64; 2]) -> bool {
        // Written as a negated inside test so that NaN coordinates count as escaped.
        !(p[0] >= self.left && p[0] <= self.right && p[1] >= self.floor && p[1] <= self.top)
    }

    /// Largest overlap of any ball with another ball or with the box, divided by the radius
    /// (0 when nothing overlaps). Ball–ball overlap is 2r − d; ball–wall overlap is r minus the
    /// distance of the centre to the wall's inner face.
    pub fn max_overlap_ratio(&self, positions: &[[f64; 2]]) -> f64 {
        let r = RADIUS;
        let mut max_overlap: f64 = 0.0;
        for p in positions {
            let wall = [p[0] - self.left, self.right - p[0], p[1] - self.floor];
            for d in wall {
                max_overlap = max_overlap.max(r - d);
            }
        }
        let grid = PointGrid::new(positions, 2.0 * r, [self.left, self.floor], [self.right, self.top]);
        grid.for_each_pair(positions, |i, j| {
            let (a, b) = (positions[i], positions[j]);
            let d2 = (a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2);
            if d2 < 4.0 * r * r {
                max_overlap = max_overlap.max(2.0 * r - d2.sqrt());
            }
        });
        max_overlap.max(0.0) / r
    }

    /// Number of balls outside the box.
    pub fn count_escaped(&self, positions: &[[f64; 2]]) -> usize {
        positions.iter().filter(|p| self.escaped(p)).count()
    }
}

/// Kinetic energy per ball (J) of discs of density `density` (kg/m²): translation
/// ½ m v² plus rotation ½ I ω² with I = ½ m r² (a uniform disc).
pub fn kinetic_energy_per_ball(velocities: &[[f64; 2]], spins: &[f64], density: f64) -> f64 {
    if velocities.is_empty() {
        return 0.0;
    }
    let m = density * std::f64::consts::PI * RADIUS * RADIUS;
    let inertia = 0.5 * m * RADIUS * RADIUS;
    let total: f64 = velocities
        .iter()
        .zip(spins.iter().chain(std::iter::repeat(&0.0)))
        .map(|(v, w)| 0.5 * m * (v[0] * v[0] + v[1] * v[1]) + 0.5 * inertia * w * w)
        .sum();
    total / velocities.len() as f64
}

/// Quality of a run, gathered while stepping (engine-independent).
#[derive(Default)]
pub struct Quality {
    /// Kinetic energy per ball before the first step (J).
    pub kinetic_energy_initial: f64,
    /// Kinetic energy per ball after the last step (J).
    pub kinetic_energy_final: f64,
    /// Max overlap / r after the last step.
    pub max_overlap_ratio_final: f64,
    /// Max overlap / r over every sampled step.
    pub max_overlap_ratio_run: f64,
    /// Step at which the run's max overlap was seen.
    pub max_overlap_step: u64,
    /// Balls outside the box after the last step.
    pub escaped: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_the_design_scene() {
        let l = Layout::new(10);
        // ceil(√10) = 4 columns: right wall at 4·1.25 + 1 = 6.
        assert_eq!(l.right, 6.0);
        assert_eq!(l.positions[0], [0.5, 1.0]);
        assert_eq!(l.positions[5], [0.5 + 1.25, 1.0 + 1.25]);
        assert!(l.velocities.iter().flatten().all(|v| (-2.0..=2.0).contains(v)));
        // Same seed, same velocities.
        assert_eq!(Layout::new(10).velocities, l.velocities);
        assert_eq!(l.max_overlap_ratio(&l.positions), 0.0);
        assert_eq!(l.count_escaped(&l.positions), 0);
    }

    #[test]
    fn overlap_and_escape_are_measured() {
        let l = Layout::new(4);
        // Two balls 0.9 apart overlap by 0.1 = 0.2 r; one ball 0.45 above the floor by 0.05.
        let p = vec![[1.0, 2.0], [1.9, 2.0], [3.0, 0.45], [100.0, 1.0]];
        assert!((l.max_overlap_ratio(&p[..3]) - 0.2).abs() < 1e-12);
        assert_eq!(l.count_escaped(&p), 1);
        assert_eq!(l.count_escaped(&[[f64::NAN, 1.0]]), 1);
        let ke = kinetic_energy_per_ball(&[[1.0, 0.0]], &[2.0], 1.0);
        let m = std::f64::consts::PI * 0.25;
        assert!((ke - (0.5 * m + 0.5 * 0.5 * m * 0.25 * 4.0)).abs() < 1e-12);
    }
}
