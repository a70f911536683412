//! Shared test helpers: a seeded generator, scene builders, GPU opt-in.
#![allow(dead_code)]

use glam::Vec2;
use mx2d::broadphase::Aabb;

/// SplitMix64: small, seeded, good enough for test scenes.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in [lo, hi).
    pub fn range(&mut self, lo: f32, hi: f32) -> f32 {
        let u = (self.next_u64() >> 40) as f32 / (1u64 << 24) as f32;
        lo + (hi - lo) * u
    }
    pub fn gaussian(&mut self) -> f32 {
        let u1 = self.range(1e-7, 1.0);
        let u2 = self.range(0.0, 1.0);
        (-2.0 * u1.ln()).sqrt() * (std::f32::consts::TAU * u2).cos()
    }
}

/// How the disc sizes are drawn.
#[derive(Clone, Copy, Debug)]
pub enum Radii {
    /// All the same.
    Uniform(f32),
    /// Log-uniform between the two.
    Varying(f32, f32),
}

/// How the centres are placed.
#[derive(Clone, Copy, Debug)]
pub enum Layout {
    /// Uniform in a square sized for ~`density` discs per unit area, offset by `origin`.
    Spread { origin: Vec2, density: f32 },
    /// Gaussian blobs of this standard deviation around `clusters` centres.
    Clustered { clusters: usize, sigma: f32, origin: Vec2 },
    /// All centres within `extent` of `origin` (everything in one cell).
    OneCell { origin: Vec2, extent: f32 },
}

pub fn discs(n: usize, layout: Layout, radii: Radii, seed: u64) -> Vec<Aabb> {
    let mut rng = Rng::new(seed);
    let centres: Vec<Vec2> = match layout {
        Layout::Spread { origin, density } => {
            let side = (n as f32 / density).sqrt().max(1.0);
            (0..n).map(|_| origin + Vec2::new(rng.range(0.0, side), rng.range(0.0, side))).collect()
        }
        Layout::Clustered { clusters, sigma, origin } => {
            let side = (n as f32).sqrt() * 4.0;
            let hubs: Vec<Vec2> =
                (0..clusters).map(|_| origin + Vec2::new(rng.range(-side, side), rng.range(-side, side))).collect();
            (0..n).map(|i| hubs[i % clusters] + Vec2::new(rng.gaussian(), rng.gaussian()) * sigma).collect()
        }
        Layout::OneCell { origin, extent } => {
            (0..n).map(|_| origin + Vec2::new(rng.range(0.0, extent), rng.range(0.0, extent))).collect()
        }
    };
    centres
        .into_iter()
        .map(|c| {
            let r = match radii {
                Radii::Uniform(r) => r,
                Radii::Varying(lo, hi) => lo * (hi / lo).powf(rng.range(0.0, 1.0)),
            };
            Aabb::from_disc(c, r)
        })
        .collect()
}

/// The scenes every broadphase must agree on (name, boxes).
pub fn scene_suite(sizes: &[usize]) -> Vec<(String, Vec<Aabb>)> {
    let mut scenes = vec![
        ("empty".to_string(), Vec::new()),
        ("one".to_string(), vec![Aabb::from_disc(Vec2::new(-3.0, 2.0), 0.5)]),
        ("two touching".to_string(), vec![Aabb::from_disc(Vec2::ZERO, 0.5), Aabb::from_disc(Vec2::new(1.0, 1.0), 0.5)]),
    ];
    for &n in sizes {
        let s = n as u64;
        scenes.push((
            format!("spread uniform {n}"),
            discs(n, Layout::Spread { origin: Vec2::ZERO, density: 0.6 }, Radii::Uniform(0.5), s),
        ));
        scenes.push((
            format!("spread varying negative {n}"),
            discs(
                n,
                Layout::Spread { origin: Vec2::new(-5000.0, -2500.0), density: 0.3 },
                Radii::Varying(0.02, 3.0),
                s + 1,
            ),
        ));
        scenes.push((
            format!("clustered varying {n}"),
            discs(
                n,
                Layout::Clustered { clusters: 7, sigma: 6.0, origin: Vec2::new(-40.0, 10.0) },
                Radii::Varying(0.05, 1.0),
                s + 2,
            ),
        ));
        scenes.push((
            format!("clustered uniform negative {n}"),
            discs(
                n,
                Layout::Clustered { clusters: 3, sigma: 20.0, origin: Vec2::new(-1.0e4, -3.0e4) },
                Radii::Uniform(0.25),
                s + 3,
            ),
        ));
    }
    scenes.push((
        "one cell".to_string(),
        discs(300, Layout::OneCell { origin: Vec2::new(-7.5, -7.5), extent: 0.01 }, Radii::Uniform(0.2), 99),
    ));
    scenes
}

/// A GPU context, or None (with the reason printed) when there is no adapter
/// and `MX2D_REQUIRE_GPU` is not `1`.
pub fn gpu(options: mx2d::gpu::GpuOptions) -> Option<mx2d::gpu::GpuContext> {
    match mx2d::gpu::GpuContext::with_options(options) {
        Ok(ctx) => {
            eprintln!("GPU: {}", ctx.summary());
            Some(ctx)
        }
        Err(e) if std::env::var("MX2D_REQUIRE_GPU").as_deref() == Ok("1") => {
            panic!("MX2D_REQUIRE_GPU=1 but the GPU is unavailable: {e}")
        }
        Err(e) => {
            eprintln!("skipping GPU test: {e}");
            None
        }
    }
}

pub mod solver_gen;
pub mod stacks;
pub mod threads;
pub mod twin;

/// The population of scenes/balls_box.ron with `count` balls.
pub fn balls_box(count: u64) -> mx2d::population::Population {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/balls_box.ron")).unwrap();
    let overrides = [format!("population.count={count}")];
    let scene = mx2d::scene::Scene::parse_with_overrides(&text, "balls_box.ron", &overrides).unwrap();
    scene.build_world().unwrap().population.unwrap()
}
