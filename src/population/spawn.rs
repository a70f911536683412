//! The `population` section of a scene file and the generators that turn it
//! into balls: grids, random boxes (seeded), emitters over time. Large
//! populations come from generators, never ball by ball. Every field is
//! documented in `docs/scene-format.md`.

use glam::{DVec2, Vec2};
use serde::{Deserialize, Serialize};

fn one() -> f64 {
    1.0
}
fn default_substeps() -> u32 {
    16
}
fn default_iterations() -> u32 {
    2
}
fn default_stabilise_every() -> u32 {
    super::DEFAULT_STABILISE_EVERY
}
fn default_push_out() -> f64 {
    super::DEFAULT_PUSH_OUT as f64
}
fn default_sleep_time() -> f64 {
    super::DEFAULT_SLEEP_TIME
}
fn default_wake_overlap() -> f64 {
    f64::from(super::DEFAULT_WAKE_OVERLAP)
}
fn default_resort_every() -> u32 {
    super::DEFAULT_RESORT_EVERY
}
fn default_skin() -> f64 {
    0.5
}
fn default_friction() -> f64 {
    0.3
}
fn default_restitution() -> f64 {
    0.5
}

/// The `population` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Population")]
pub struct PopulationDef {
    /// Ball radius (m); with `radius_max`, the smallest radius.
    pub radius: f64,
    /// Radii uniform in `[radius, radius_max]` (seeded per spawner).
    #[serde(default)]
    pub radius_max: Option<f64>,
    /// Density (kg/m²): mass = density·π r²; default 1.
    #[serde(default = "one")]
    pub density: f64,
    /// Coefficient of restitution e ∈ [0, 1]; default 0.5.
    #[serde(default = "default_restitution")]
    pub restitution: f64,
    /// Coulomb friction μ ≥ 0; default 0.3.
    #[serde(default = "default_friction")]
    pub friction: f64,
    /// Rolling-resistance length μ_r ≥ 0 (m); default 0.
    #[serde(default)]
    pub rolling_resistance: f64,
    /// Normal speed below which an impact does not bounce (m/s); default
    /// 2·|g|·dt (the step, not the substep: Jacobi leaves residual speeds of
    /// order g·h in a pile, which must not bounce).
    #[serde(default)]
    pub resting_speed: Option<f64>,
    /// Substeps per step (≥ 1); default 16.
    #[serde(default = "default_substeps")]
    pub substeps: u32,
    /// Gauss–Seidel position sweeps per substep (≥ 1); default 2.
    #[serde(default = "default_iterations")]
    pub iterations: u32,
    /// The stabilisation sweep runs in substeps 0, K, 2K, … of a step for
    /// `stabilise_every` = K (0: never); default
    /// [`super::DEFAULT_STABILISE_EVERY`].
    #[serde(default = "default_stabilise_every")]
    pub stabilise_every: u32,
    /// Over-relaxation of the pair projections of the Gauss–Seidel position
    /// sweeps, in (0, 2); default 1.
    #[serde(default = "one")]
    pub relaxation: f64,
    /// The largest push-out of a ball–ball overlap that was there at a
    /// substep's start, per substep, as a fraction of the pair's smaller
    /// radius (> 0); default [`super::DEFAULT_PUSH_OUT`], unbounded.
    #[serde(default = "default_push_out")]
    pub push_out: f64,
    /// Sleeping (the module doc of [`crate::population`], "Sleeping"): a
    /// ball slower than `sleep_speed` (and spinning slower than
    /// `sleep_speed / r`) for `sleep_time` seconds falls asleep (s, ≥ 0; 0:
    /// never); default [`super::DEFAULT_SLEEP_TIME`], off without gravity
    /// unless `sleep_speed` is given.
    #[serde(default = "default_sleep_time")]
    pub sleep_time: f64,
    /// The speed under which a ball counts as at rest, and over which a
    /// ball approaching a sleeper wakes it (m/s, > 0); default
    /// [`super::SLEEP_SPEED_FACTOR`]·√(|g|·r_max).
    #[serde(default)]
    pub sleep_speed: Option<f64>,
    /// A sleeper wakes when a contact overlaps it by more than this
    /// fraction of the smaller radius (> 0); default
    /// [`super::DEFAULT_WAKE_OVERLAP`].
    #[serde(default = "default_wake_overlap")]
    pub wake_overlap: f64,
    /// The ball arrays are re-sorted by grid cell every this many steps (0:
    /// never); default [`super::DEFAULT_RESORT_EVERY`].
    #[serde(default = "default_resort_every")]
    pub resort_every: u32,
    /// Neighbour-list margin as a fraction of the largest radius; default 0.5.
    #[serde(default = "default_skin")]
    pub skin: f64,
    /// Count of the main (first) spawner; `--set population.count=N`.
    #[serde(default)]
    pub count: Option<u64>,
    /// Generators, in order (ball indices follow this order, then are sorted
    /// by release step: see `Population::live_range`).
    #[serde(default)]
    pub spawn: Vec<SpawnDef>,
    /// A box of three walls (floor, left, right) sized to the main grid spawner.
    #[serde(default)]
    pub container: Option<ContainerDef>,
    /// Balls entering one of these rectangles are removed and counted as killed.
    #[serde(default)]
    pub kill: Vec<RectDef>,
    /// The world: balls leaving it are removed and counted as escaped; default
    /// the bounding box of spawners, container and finite surfaces, grown by
    /// half its size on every side.
    #[serde(default)]
    pub bounds: Option<RectDef>,
}

/// An axis-aligned rectangle.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Rect")]
pub struct RectDef {
    /// Lower-left corner (m).
    pub min: DVec2,
    /// Upper-right corner (m).
    pub max: DVec2,
}

/// Walls around the main grid spawner (DESIGN.md's "balls_box").
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "GridBox")]
pub struct ContainerDef {
    /// Height of the floor (m).
    pub floor: f64,
    /// x of the left wall (m).
    pub left: f64,
    /// The right wall stands at x = columns·spacing + right_margin (m).
    pub right_margin: f64,
}

/// A generator of balls.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Spawn")]
pub enum SpawnDef {
    /// A grid filled row by row from `origin` (lowest-left ball), `columns`
    /// per row (default ⌈√count⌉).
    Grid {
        /// Centre of the first ball (m).
        origin: DVec2,
        /// Number of balls.
        #[serde(default)]
        count: u64,
        /// Balls per row; default ⌈√count⌉.
        #[serde(default)]
        columns: Option<u64>,
        /// Distance between neighbouring centres (m).
        spacing: f64,
        /// Common initial velocity (m/s).
        #[serde(default)]
        velocity: DVec2,
        /// Each velocity component gets a uniform random part in [−j, j] (m/s).
        #[serde(default)]
        velocity_jitter: f64,
        /// Random seed.
        #[serde(default)]
        seed: u64,
    },
    /// Centres at random in a rectangle, no two balls overlapping: random
    /// sequential placement (rejection on a grid hash, [`RANDOM_TRIES`]
    /// tries per ball), or, when that jams, a hexagonal lattice of the
    /// widest spacing that holds `count`, jittered and randomly thinned
    /// (see [`random_box`]). A box that cannot hold `count` balls is refused
    /// ([`check_random_box`]).
    RandomBox {
        /// Lower-left corner (m).
        min: DVec2,
        /// Upper-right corner (m).
        max: DVec2,
        /// Number of balls.
        #[serde(default)]
        count: u64,
        /// Common initial velocity (m/s).
        #[serde(default)]
        velocity: DVec2,
        /// Uniform random velocity part in [−j, j] per component (m/s).
        #[serde(default)]
        velocity_jitter: f64,
        /// Random seed.
        #[serde(default)]
        seed: u64,
    },
    /// Balls released one after another at `rate` per second from `position`
    /// (spread uniformly over `width` across the velocity), from time `start`.
    Emitter {
        /// Centre of the nozzle (m).
        position: DVec2,
        /// Release velocity (m/s).
        velocity: DVec2,
        /// Width of the nozzle across the velocity (m).
        #[serde(default)]
        width: f64,
        /// Balls per second.
        rate: f64,
        /// Number of balls in all.
        #[serde(default)]
        count: u64,
        /// Time of the first release (s).
        #[serde(default)]
        start: f64,
        /// Random seed.
        #[serde(default)]
        seed: u64,
    },
}

impl SpawnDef {
    /// Number of balls this generator makes.
    pub fn count(&self) -> u64 {
        match self {
            SpawnDef::Grid { count, .. } | SpawnDef::RandomBox { count, .. } | SpawnDef::Emitter { count, .. } => {
                *count
            }
        }
    }

    /// Sets the number of balls.
    pub fn set_count(&mut self, n: u64) {
        match self {
            SpawnDef::Grid { count, .. } | SpawnDef::RandomBox { count, .. } | SpawnDef::Emitter { count, .. } => {
                *count = n
            }
        }
    }

    /// Columns of a grid (⌈√count⌉ by default); 0 for other generators.
    pub fn columns(&self) -> u64 {
        match self {
            SpawnDef::Grid { count, columns, .. } => columns.unwrap_or_else(|| ceil_sqrt(*count)).max(1),
            _ => 0,
        }
    }
}

/// ⌈√n⌉ in integers (no float rounding at perfect squares).
pub fn ceil_sqrt(n: u64) -> u64 {
    let mut r = (n as f64).sqrt() as u64;
    while r * r < n {
        r += 1;
    }
    while r > 0 && (r - 1) * (r - 1) >= n {
        r -= 1;
    }
    r
}

/// SplitMix64: a tiny, well-mixed, seedable generator (reproducible spawns).
#[derive(Clone, Debug)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// Next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in [a, b).
    pub fn range(&mut self, a: f64, b: f64) -> f64 {
        a + (b - a) * self.unit()
    }
}

/// One generated ball (f64 until it is stored).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NewBall {
    /// Centre (m).
    pub position: DVec2,
    /// Velocity (m/s).
    pub velocity: DVec2,
    /// Radius (m).
    pub radius: f64,
    /// Time at which it enters the world (s); 0 for grids and boxes.
    pub release: f64,
}

/// Calls `out` for every ball of a generator, in index order. `radius`
/// draws a radius from the spawner's generator.
pub fn generate(spawn: &SpawnDef, radius: (f64, Option<f64>), mut out: impl FnMut(NewBall)) {
    let draw_radius = |rng: &mut SplitMix64| match radius.1 {
        Some(max) if max > radius.0 => rng.range(radius.0, max),
        _ => radius.0,
    };
    let jitter = |rng: &mut SplitMix64, j: f64| {
        if j > 0.0 { DVec2::new(rng.range(-j, j), rng.range(-j, j)) } else { DVec2::ZERO }
    };
    match *spawn {
        SpawnDef::Grid { origin, count, spacing, velocity, velocity_jitter, seed, .. } => {
            let columns = spawn.columns();
            let mut rng = SplitMix64::new(seed);
            for k in 0..count {
                let (col, row) = (k % columns, k / columns);
                let position = origin + DVec2::new(col as f64, row as f64) * spacing;
                let v = velocity + jitter(&mut rng, velocity_jitter);
                out(NewBall { position, velocity: v, radius: draw_radius(&mut rng), release: 0.0 });
            }
        }
        SpawnDef::RandomBox { min, max, count, velocity, velocity_jitter, seed } => {
            let mut rng = SplitMix64::new(seed);
            let radii: Vec<f64> = (0..count).map(|_| draw_radius(&mut rng)).collect();
            let r_max = radius.1.unwrap_or(radius.0).max(radius.0);
            for (k, position) in random_box(min, max, &radii, r_max, &mut rng).into_iter().enumerate() {
                let v = velocity + jitter(&mut rng, velocity_jitter);
                out(NewBall { position, velocity: v, radius: radii[k], release: 0.0 });
            }
        }
        SpawnDef::Emitter { position, velocity, width, rate, count, start, seed } => {
            let mut rng = SplitMix64::new(seed);
            let across = velocity.normalize_or(DVec2::X).perp();
            for k in 0..count {
                let offset = if width > 0.0 { rng.range(-0.5, 0.5) * width } else { 0.0 };
                out(NewBall {
                    position: position + across * offset,
                    velocity,
                    radius: draw_radius(&mut rng),
                    release: start + k as f64 / rate,
                });
            }
        }
    }
}

/// Candidate positions tried per ball by random sequential placement before
/// the generator falls back to the jittered lattice.
pub const RANDOM_TRIES: u32 = 64;

/// Density of the hexagonal packing of equal discs, π/(2√3): no packing of
/// the plane is denser (Thue, Fejes Tóth).
pub const HEXAGONAL_DENSITY: f64 = 0.906_899_682_117_108_9;

/// Oler's bound (N. Oler, 1961): points at mutual distance ≥ 1 in a convex
/// region of area A and perimeter P number at most (2/√3)·A + P/2 + 1.
/// Centres of balls of radius r are at distance ≥ 2 r: scaled by 1/(2r),
/// the centres' box W × H holds at most
/// (2/√3)·W·H/(4 r²) + (W + H)/(2 r) + 1 balls.
pub fn oler_bound(width: f64, height: f64, radius: f64) -> f64 {
    let (w, h) = (width / (2.0 * radius), height / (2.0 * radius));
    2.0 / 3f64.sqrt() * w * h + (w + h) + 1.0
}

/// Sites of a hexagonal lattice of spacing `s` in a `w` × `h` box (rows
/// `s·√3/2` apart, odd rows shifted by `s/2`), as (columns of even rows,
/// columns of odd rows, rows).
fn lattice_shape(w: f64, h: f64, s: f64) -> (u64, u64, u64) {
    let even = (w / s).floor() as u64 + 1;
    let odd = if w >= 0.5 * s { ((w - 0.5 * s) / s).floor() as u64 + 1 } else { 0 };
    let rows = (h / (s * 3f64.sqrt() / 2.0)).floor() as u64 + 1;
    (even, odd, rows)
}

fn lattice_sites(w: f64, h: f64, s: f64) -> u64 {
    let (even, odd, rows) = lattice_shape(w, h, s);
    let rows_odd = rows / 2;
    even.saturating_mul(rows - rows_odd).saturating_add(odd.saturating_mul(rows_odd))
}

/// Whether a random box can hold `count` balls of radius up to `r_max`
/// without overlap: refused past Oler's bound (no arrangement exists) and
/// past the hexagonal lattice of spacing 2 r_max that the generator falls
/// back to (the error names both). Checked before anything is allocated.
pub fn check_random_box(min: DVec2, max: DVec2, count: u64, r_max: f64) -> Result<(), String> {
    let (w, h) = (max.x - min.x, max.y - min.y);
    let bound = oler_bound(w, h, r_max);
    let lattice = lattice_sites(w, h, 2.0 * r_max);
    if (count as f64) > bound || count > lattice {
        return Err(format!(
            "{count} balls of radius {r_max} do not fit without overlap with their centres in the \
             {w} × {h} m box: at most {lattice} on the hexagonal lattice of spacing 2 r that this \
             generator uses, and no arrangement holds more than {} (Oler's packing bound \
             (2/√3)·W·H/(2r)² + (W + H)/(2r) + 1); enlarge the box or lower the count",
            bound.floor()
        ));
    }
    Ok(())
}

/// Centres for a random box: no two balls overlap (`radii[i] + radii[j]`
/// apart at least). Random sequential placement with a grid hash (cells of
/// 2 r_max, the 3 × 3 cells around a candidate checked): up to
/// [`RANDOM_TRIES`] uniform candidates per ball. Random placement jams near
/// a covered fraction of 0.55, so when a ball finds no room the whole box is
/// generated again as a hexagonal lattice: the widest spacing s ≥ 2 r_max
/// that holds the count, every site jittered by up to (s − 2 r_max)/(2√2)
/// per axis (so two sites stay ≥ 2 r_max apart), the sites used chosen at
/// random (partial Fisher–Yates), so that the balls spread over the whole
/// box. Deterministic for a seed. The caller checked the box with
/// [`check_random_box`].
pub fn random_box(min: DVec2, max: DVec2, radii: &[f64], r_max: f64, rng: &mut SplitMix64) -> Vec<DVec2> {
    let n = radii.len();
    let mut placed: Vec<DVec2> = Vec::with_capacity(n);
    let cell = (2.0 * r_max).max(f64::MIN_POSITIVE);
    let key = |p: DVec2| (((p.x - min.x) / cell).floor() as i64, ((p.y - min.y) / cell).floor() as i64);
    let mut grid: std::collections::HashMap<(i64, i64), Vec<u32>> = std::collections::HashMap::with_capacity(n);
    'balls: for (i, &r) in radii.iter().enumerate() {
        for _ in 0..RANDOM_TRIES {
            let p = DVec2::new(rng.range(min.x, max.x), rng.range(min.y, max.y));
            let (cx, cy) = key(p);
            let free = (cy - 1..=cy + 1).all(|y| {
                (cx - 1..=cx + 1).all(|x| {
                    grid.get(&(x, y)).is_none_or(|list| {
                        list.iter().all(|&j| placed[j as usize].distance_squared(p) >= (r + radii[j as usize]).powi(2))
                    })
                })
            });
            if free {
                grid.entry((cx, cy)).or_default().push(i as u32);
                placed.push(p);
                continue 'balls;
            }
        }
        return jittered_lattice(min, max, n, r_max, rng);
    }
    placed
}

fn jittered_lattice(min: DVec2, max: DVec2, n: usize, r_max: f64, rng: &mut SplitMix64) -> Vec<DVec2> {
    let (w, h) = (max.x - min.x, max.y - min.y);
    // Widest spacing that still holds n sites (bisection; sites(s) falls
    // as s grows).
    let (mut lo, mut hi) = (2.0 * r_max, 2.0 * r_max + w.max(h) + 1.0);
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if lattice_sites(w, h, mid) >= n as u64 { lo = mid } else { hi = mid }
    }
    let s = lo;
    let (even, odd, rows) = lattice_shape(w, h, s);
    let dy = s * 3f64.sqrt() / 2.0;
    let mut sites: Vec<DVec2> = Vec::with_capacity(lattice_sites(w, h, s) as usize);
    for row in 0..rows {
        let (cols, shift) = if row % 2 == 0 { (even, 0.0) } else { (odd, 0.5 * s) };
        for col in 0..cols {
            sites.push(min + DVec2::new(shift + col as f64 * s, row as f64 * dy));
        }
    }
    let amplitude = (s - 2.0 * r_max) / (2.0 * std::f64::consts::SQRT_2);
    (0..n)
        .map(|k| {
            let last = sites.len() - 1;
            let pick = k + (rng.unit() * (sites.len() - k) as f64) as usize;
            sites.swap(k, pick.min(last));
            let p = sites[k] + DVec2::new(rng.range(-amplitude, amplitude), rng.range(-amplitude, amplitude));
            p.clamp(min, max)
        })
        .collect()
}

/// Converts a rectangle to f32 corners.
pub fn rect32(r: &RectDef) -> (Vec2, Vec2) {
    (r.min.as_vec2(), r.max.as_vec2())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ceil_sqrt_is_exact_at_squares() {
        assert_eq!(ceil_sqrt(10_000), 100);
        assert_eq!(ceil_sqrt(10_001), 101);
        assert_eq!(ceil_sqrt(1), 1);
        assert_eq!(ceil_sqrt(0), 0);
    }
}
