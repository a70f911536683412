//! A population's balls on screen: `ball_vs` in `shaders/render.wgsl` reads
//! them from storage buffers in the layout of the GPU backend
//! ([`GpuPopulation`]: one `vec4` x, y, vx, vy; one `vec4` angle, ω, radius,
//! 1/m; one `u32` state and one `u32` id per ball) and colours them by
//! speed, mass or id (the id, not the slot: the population re-sorts its
//! arrays by cell, and a ball keeps its colour).
//!
//! Two sources, one shader:
//! * [`Balls::Gpu`] — the GPU backend's own buffers ([`GpuBalls`]), bound in
//!   place: nothing is read back or uploaded, the frame draws what the last
//!   submitted step wrote (queue order makes the render pass see it);
//! * [`Balls::Host`] — the CPU twin's arrays, copied into that layout and
//!   uploaded by [`Renderer::prepare`](super::Renderer::prepare).
//!
//! Both give the same picture of the same state (tests/render_balls.rs).

use std::sync::atomic::{AtomicU64, Ordering};

use bytemuck::{Pod, Zeroable};

use crate::population::Population;
use crate::population::gpu::GpuPopulation;

/// What the balls' colour shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BallColour {
    /// Speed: blue at rest to red at [`BallStyle::speed_scale`] and above.
    #[default]
    Speed,
    /// Mass on a log scale, lightest (teal) to heaviest (brown): the
    /// population has one contact material, so size × density — the mass —
    /// is what tells its balls apart.
    Mass,
    /// Index: golden-ratio hues, neighbours in the spawn order differ.
    Id,
}

impl BallColour {
    /// The next mode (the window's C key).
    pub fn next(self) -> Self {
        match self {
            BallColour::Speed => BallColour::Mass,
            BallColour::Mass => BallColour::Id,
            BallColour::Id => BallColour::Speed,
        }
    }

    /// Its name in the overlay.
    pub fn name(self) -> &'static str {
        match self {
            BallColour::Speed => "speed",
            BallColour::Mass => "mass",
            BallColour::Id => "id",
        }
    }

    fn code(self) -> u32 {
        match self {
            BallColour::Speed => 0,
            BallColour::Mass => 1,
            BallColour::Id => 2,
        }
    }
}

/// How the balls are coloured, fixed for a population so that successive
/// frames (and the two sources) agree.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BallStyle {
    /// What the colour shows.
    pub colour: BallColour,
    /// Speed drawn fully red (m/s).
    pub speed_scale: f32,
    /// Lightest and heaviest ball (kg), for [`BallColour::Mass`].
    pub mass_range: (f32, f32),
}

impl BallStyle {
    /// The style of `pop`: the speed scale is the speed of a fall across the
    /// world's width, √(2 |g| W) (at least 1 m/s) — a property of the scene,
    /// not of the current state, so colours mean the same in every frame;
    /// the mass range is taken from the balls' 1/m (fixed over a run).
    pub fn for_population(pop: &Population, colour: BallColour) -> Self {
        let (lo, hi) = pop.params.bounds;
        let width = (hi.x - lo.x).abs();
        let fall = (2.0 * pop.gravity.length() * width).sqrt();
        let speed_scale = if fall.is_finite() { fall.max(1.0) } else { 1.0 };
        let (mut light, mut heavy) = (f32::INFINITY, 0.0f32);
        for &inv in &pop.inv_mass {
            if inv > 0.0 && inv.is_finite() {
                light = light.min(1.0 / inv);
                heavy = heavy.max(1.0 / inv);
            }
        }
        let mass_range = if light <= heavy { (light, heavy) } else { (1.0, 1.0) };
        Self { colour, speed_scale, mass_range }
    }

    /// The `BallStyle` uniform for `count` balls.
    pub(super) fn uniform(&self, count: u32) -> BallStyleUniform {
        BallStyleUniform {
            colour_by: self.colour.code(),
            count,
            speed_scale: self.speed_scale,
            ln_mass_min: self.mass_range.0.max(f32::MIN_POSITIVE).ln(),
            ln_mass_max: self.mass_range.1.max(f32::MIN_POSITIVE).ln(),
            _pad: [0; 3],
        }
    }
}

/// The `BallStyle` uniform of `shaders/render.wgsl` (32 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
pub(super) struct BallStyleUniform {
    colour_by: u32,
    count: u32,
    speed_scale: f32,
    ln_mass_min: f32,
    ln_mass_max: f32,
    _pad: [u32; 3],
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Handles on a [`GpuPopulation`]'s ball buffers (clones of the same GPU
/// buffers), kept by whoever draws so that the population itself can be
/// handed to the world. Same device as the renderer's, or binding fails.
#[derive(Clone, Debug)]
pub struct GpuBalls {
    pub(super) motion: wgpu::Buffer,
    pub(super) properties: wgpu::Buffer,
    pub(super) state: wgpu::Buffer,
    pub(super) ids: wgpu::Buffer,
    pub(super) count: u32,
    /// Tells the renderer's cached bind group which buffers it binds.
    pub(super) id: u64,
}

impl GpuBalls {
    /// The buffers of `gpu`.
    pub fn of(gpu: &GpuPopulation) -> Self {
        Self {
            motion: gpu.ball_buffer().clone(),
            properties: gpu.property_buffer().clone(),
            state: gpu.state_buffer().clone(),
            ids: gpu.id_buffer().clone(),
            count: gpu.count(),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// Number of balls.
    pub fn count(&self) -> u32 {
        self.count
    }
}

/// A population's balls in the layout `ball_vs` reads, on the host.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HostBalls {
    /// x, y, vx, vy per ball.
    pub motion: Vec<[f32; 4]>,
    /// angle, ω, radius, 1/m per ball.
    pub properties: Vec<[f32; 4]>,
    /// [`crate::population::state`] code per ball.
    pub state: Vec<u32>,
    /// Each ball's id ([`Population::ball_id`]).
    pub id: Vec<u32>,
}

impl HostBalls {
    /// Copies the CPU arrays of `pop` (with the GPU backend: the state of
    /// the last read-back).
    pub fn of(pop: &Population) -> Self {
        let n = pop.len();
        let at = |v: &[f32], i: usize| v.get(i).copied().unwrap_or(0.0);
        Self {
            motion: (0..n)
                .map(|i| [pop.position[i].x, pop.position[i].y, pop.velocity[i].x, pop.velocity[i].y])
                .collect(),
            properties: (0..n)
                .map(|i| [at(&pop.angle, i), at(&pop.omega, i), at(&pop.radius, i), at(&pop.inv_mass, i)])
                .collect(),
            state: (0..n).map(|i| pop.state.get(i).copied().unwrap_or(crate::population::state::ALIVE)).collect(),
            id: (0..n).map(|i| pop.ball_id.get(i).copied().unwrap_or(i as u32)).collect(),
        }
    }
}

/// Where a frame's balls come from.
#[derive(Clone, Debug)]
pub enum Balls {
    /// Uploaded from the host.
    Host(HostBalls),
    /// Bound in place from the GPU backend.
    Gpu(GpuBalls),
}

impl Balls {
    /// Number of balls (live or not: dead ones are clipped by the shader).
    pub fn count(&self) -> u32 {
        match self {
            Balls::Host(h) => h.state.len() as u32,
            Balls::Gpu(g) => g.count,
        }
    }
}
