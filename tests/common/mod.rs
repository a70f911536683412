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

/// One test at a time on the GPU in a test process (see [`gpu`]).
static GPU_TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

thread_local! {
    /// The turn this test thread holds until it ends (libtest gives each test
    /// a thread; with `--test-threads=1` the main thread keeps it throughout).
    static GPU_TURN_HELD: std::cell::RefCell<Option<std::sync::MutexGuard<'static, ()>>> =
        const { std::cell::RefCell::new(None) };
}

/// A GPU context, or None (with the reason printed) when there is no adapter
/// and `MX2D_REQUIRE_GPU` is not `1`.
///
/// The test takes the process's GPU turn first and keeps it until it ends:
/// on an NVIDIA H200 (driver 580.159, 27 Nov 2026) `gpu_broadphase` and
/// `render_balls` never finished with their tests on their own devices at
/// once (libtest's default), and passed in 3 s each one at a time
/// (docs/benchmarks.md, "On a lent GPU machine"). `MX2D_TEST_GPU_TURN`
/// = `create` serialises only the context's creation, `none` nothing: the
/// diagnosis's variants.
pub fn gpu(options: mx2d::gpu::GpuOptions) -> Option<mx2d::gpu::GpuContext> {
    let turn = std::env::var("MX2D_TEST_GPU_TURN").unwrap_or_default();
    let lock = || GPU_TURN.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let _creating = match turn.as_str() {
        "none" => None,
        "create" => Some(lock()),
        _ => {
            GPU_TURN_HELD.with(|held| {
                let mut held = held.borrow_mut();
                if held.is_none() {
                    *held = Some(lock());
                }
            });
            None
        }
    };
    match mx2d::gpu::GpuContext::with_options(options) {
        Ok(ctx) => {
            eprintln!("GPU: {}", ctx.summary());
            Some(ctx)
        }
        Err(e) if mx2d::run::backends::gpu_required() => {
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
    balls_box_seeded(count, 1)
}

/// [`balls_box`] with the main spawner's seed (its initial velocities) set.
pub fn balls_box_seeded(count: u64, seed: u64) -> mx2d::population::Population {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/balls_box.ron")).unwrap();
    let overrides = [format!("population.count={count}"), format!("population.spawn[0].seed={seed}")];
    let scene = mx2d::scene::Scene::parse_with_overrides(&text, "balls_box.ron", &overrides).unwrap();
    scene.build_world().unwrap().population.unwrap()
}

/// 100 balls (r = 5 cm) dropped into a circular bowl (r = 2.5 m) on a
/// superellipse hill (256 chords) that sits low in it: the pile fills the
/// two wedges between hill and wall, where a ball reaches more chords of
/// the hill than its obstacle list holds (8). Before a full list kept the
/// nearest obstacles, the wall (listed after the hill's chords) was the one
/// dropped, and 21 of the 100 balls left through it in 5 s.
pub const WEDGE_SCENE: &str = r#"Scene(name: "wedge", gravity: (0.0, -9.81), dt: 0.016666666666666666,
  surfaces: [Surface(geometry: Superellipse(center: (0.0, -1.9), a: 1.0, b: 0.6, exponent: 4.0), restitution: 0.3),
             Surface(geometry: Circle(center: (0.0, 0.0), radius: 2.5, inside: true), restitution: 0.3)],
  population: Population(radius: 0.05, restitution: 0.3, friction: 0.2,
    spawn: [Grid(origin: (-0.5, -0.6), count: 100, spacing: 0.13, velocity_jitter: 0.5, seed: 5)],
    bounds: Rect(min: (-3.0, -3.0), max: (3.0, 3.0))))"#;

/// Checks a population after [`WEDGE_SCENE`]'s 5 s: every ball alive and
/// inside the bowl and out of the hill (its centre at least 0.98 r from
/// the wall and from the hill's outline), overlap below 2 % of r, and the obstacle lists did overflow
/// (the case the scene is for).
pub fn check_wedge(pop: &mx2d::population::Population, backend: &str) {
    let s = pop.stats();
    assert_eq!((s.alive, s.escaped), (100, 0), "{backend}: {s:?}");
    assert!(s.list_overflow > 0, "{backend}: no list overflowed, the scene does not test the full list");
    assert!(s.max_overlap_ratio < 0.02, "{backend}: overlap {} of r", s.max_overlap_ratio);
    let r = 0.05 * 0.98;
    for p in &pop.position {
        assert!(f64::from(p.length()) <= 2.5 - r, "{backend}: ball at {p} is outside the bowl");
        let hill = mx2d::shape::Shape::Superellipse { a: 1.0, b: 0.6, exponent: 4.0 };
        let from_hill = hill.signed_distance(glam::DVec2::new(f64::from(p.x), f64::from(p.y) + 1.9));
        assert!(from_hill >= r, "{backend}: ball at {p} is {from_hill} m from the hill (r = 0.05)");
    }
}
