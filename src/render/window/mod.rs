//! The window: a winit 0.30 [`ApplicationHandler`](winit::application::ApplicationHandler) that steps a world at a
//! fixed `dt` decoupled from the frame rate and draws it with the same
//! [`Renderer`] as the PNGs, on a surface of the same device.
//!
//! Each frame: the real time elapsed (× speed) is added to an accumulator,
//! whole steps are taken from it within a time budget (the rest is dropped
//! when the simulation cannot keep up, so the window stays responsive), the
//! draw list is rebuilt and drawn, and the frame is presented. Nothing is
//! read back in a frame except when the screenshot key asks for it.
//!
//! Keys: space pause, → single step, +/− speed, wheel zoom, drag to pan,
//! drag a body to pull it with a spring, R reset, F forces (reaction
//! arrows), E energy graph, T trails, V velocity arrows, C ball colours
//! (speed, mass, id), S screenshot, H help, Esc/Q quit.
//!
//! # One device, no readback
//! The window opens the GPU that presents to its surface and, with
//! `--backend gpu` (or the default demo on a real GPU), builds the
//! population's GPU backend on that same device: the frame binds the
//! population's storage buffers ([`GpuBalls`]) and draws the balls from them
//! — the simulation's compute pass and the render pass meet in queue order,
//! nothing is read back.
//!
//! # Recording (`--trace`, `--energy`, `--summary`, … every output of `mx2d run`)
//! Steps are taken at the scene's fixed `dt` whatever the frame rate, and
//! each one goes through the same [`Session`] as `mx2d run --headless`
//! (outputs, stop checks, summary): a windowed run writes the same rows,
//! stops at the same step when it diverges (the window stays open on that
//! state and the exit status is the headless one), and the step count is
//! the run's (`--steps`, `--duration`, the scene's); the stepping stops
//! there. While recording, grabbing a body and R are off (they would change
//! the run). Closing the window early keeps the rows written, with the last
//! step taken.
//!
//! Diagnostics go to stderr ([`crate::output::report`]); at exit the window
//! reports its frames, the mean frame time split into simulate and draw, and
//! the steps per second.
//!
//! `MX2D_WINDOW_TEST=1`: run 60 frames (`MX2D_WINDOW_FRAMES`: more),
//! toggling F, E, T, V, C and H half way, take a screenshot through the
//! S-key action, and exit (the CI test under Xvfb); when recording, also
//! wait for the last step.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use glam::DVec2;
use winit::dpi::PhysicalSize;
use winit::event_loop::{ActiveEventLoop, ControlFlow, EventLoop};
use winit::window::Window;

use super::ball_energy::BallEnergyReader;
mod hud;
mod input;

use input::Drag;

use super::png::Offscreen;
use super::{BallStyle, Camera, Extras, GpuBalls, Renderer, Style, draw_list, overlay};
use crate::gpu::GpuContext;
use crate::load::{Anchor, Load};
use crate::output::report;
use crate::run::{Backend, RunOptions, RunStop, Session};
use crate::scene::Scene;
use crate::world::World;

/// The scene of `mx2d` with no arguments: DESIGN.md's balls_box, balls
/// thrown into a box, resized to the adapter ([`demo_size`]).
pub const DEMO_SCENE: &str = include_str!("../../../scenes/balls_box.ron");

/// Balls of the default demo on a real GPU (population on the GPU backend).
pub const DEMO_BALLS_GPU: u64 = 1_000_000;
/// Balls of the default demo on a CPU adapter (lavapipe, llvmpipe, WARP):
/// the population runs on the CPU twin.
pub const DEMO_BALLS_CPU: u64 = 10_000;

/// The default demo's size and backend for an adapter: 10⁶ balls on the GPU
/// backend for a real GPU, 10⁴ on the CPU twin for a software one (whose
/// "GPU" is the same CPU cores, slower than the twin at this).
pub fn demo_size(software_adapter: bool) -> (u64, Backend) {
    if software_adapter { (DEMO_BALLS_CPU, Backend::Cpu) } else { (DEMO_BALLS_GPU, Backend::Gpu) }
}

/// Frames the `MX2D_WINDOW_TEST=1` run draws before its screenshot and exit.
pub const TEST_FRAMES: u64 = 60;

/// Frames of an `MX2D_WINDOW_TEST=1` run: `MX2D_WINDOW_FRAMES` when set to
/// a whole number ≥ 2 (longer runs to measure the frame time), else
/// [`TEST_FRAMES`].
fn test_frames() -> u64 {
    std::env::var("MX2D_WINDOW_FRAMES").ok().and_then(|v| v.parse().ok()).filter(|&n| n >= 2).unwrap_or(TEST_FRAMES)
}

/// Bodies that get a trail (T), and points per trail.
const TRAIL_BODIES: usize = 32;
const TRAIL_POINTS: usize = 400;

/// Keys listed by H.
const HELP: [&str; 11] = [
    "space   pause / run",
    "->      one step (paused)",
    "+ / -   speed x2 / x0.5",
    "wheel   zoom       drag   pan",
    "drag a body        pull it with a spring",
    "R reset   F forces   E energy graph",
    "T trails  V velocities  C ball colours",
    "S screenshot (PNG in the current folder)",
    "H help    Esc / Q quit",
    "",
    "headless: mx2d render SCENE --out F.png",
];

/// Whether a display server is reachable, judged by the environment (Linux
/// and the BSDs; other systems always have one).
pub fn display_available() -> bool {
    if cfg!(all(unix, not(target_os = "macos"), not(target_os = "android"))) {
        std::env::var_os("DISPLAY").is_some() || std::env::var_os("WAYLAND_DISPLAY").is_some()
    } else {
        true
    }
}

/// The one line printed when there is no display.
pub const NO_DISPLAY: &str = "mx2d: no display (neither DISPLAY nor WAYLAND_DISPLAY is set); headless: \
     `mx2d run SCENE --headless [--frames DIR]`, `mx2d render SCENE --out FILE.png` (see `mx2d --help`)";

/// Whether `options` asks for any output file: the window then steps a
/// [`Session`] (a fixed number of steps, the headless rows and stops).
pub fn records(options: &RunOptions) -> bool {
    options.trace.is_some()
        || options.energy.is_some()
        || options.summary.is_some()
        || options.snapshot.is_some()
        || options.reactions.is_some()
        || options.contacts.is_some()
        || options.frames.is_some()
        || options.energy_plot.is_some()
}

/// Opens a window on `scene` and runs until it is closed. `options`: the
/// backend, `--dt`, `--integrator`, `--tolerance`, and the outputs of
/// `mx2d run` (`--trace`, `--energy`, `--summary`, `--every`, `--steps`, …).
/// Returns why the run stopped early, if it did (a diverging step: the
/// headless exit status applies).
pub fn run(scene: Scene, size: (u32, u32), trails: bool, options: &RunOptions) -> anyhow::Result<Option<RunStop>> {
    let world = scene.build_world()?;
    let session = if records(options) { Some(Session::open(&scene, options, &world)?) } else { None };
    let event_loop = EventLoop::new().map_err(|e| anyhow::anyhow!("{NO_DISPLAY}: {e}"))?;
    event_loop.set_control_flow(ControlFlow::Poll);
    let test = std::env::var("MX2D_WINDOW_TEST").as_deref() == Ok("1");
    let mut app = App::new(scene, world, size, test, options.clone(), false);
    app.session = session;
    if trails {
        app.trails = Some(vec![Vec::new(); app.world.bodies.len().min(TRAIL_BODIES)]);
    }
    event_loop.run_app(&mut app).map_err(|e| anyhow::anyhow!("window: {e}"))?;
    app.finish()
}

/// The default demo: balls_box sized to the adapter ([`demo_size`]).
pub fn run_demo() -> anyhow::Result<()> {
    let scene = Scene::parse(DEMO_SCENE, "demo (scenes/balls_box.ron)")?;
    let world = scene.build_world()?;
    let event_loop = EventLoop::new().map_err(|e| anyhow::anyhow!("{NO_DISPLAY}: {e}"))?;
    event_loop.set_control_flow(ControlFlow::Poll);
    let test = std::env::var("MX2D_WINDOW_TEST").as_deref() == Ok("1");
    let mut app = App::new(scene, world, (1024, 768), test, RunOptions::default(), true);
    event_loop.run_app(&mut app).map_err(|e| anyhow::anyhow!("window: {e}"))?;
    app.finish().map(|_| ())
}

/// Frame time totals, reported at exit.
#[derive(Default)]
struct FrameStats {
    frames: u64,
    steps: u64,
    simulate_ms: f64,
    draw_ms: f64,
    first: Option<Instant>,
    last: Option<Instant>,
}

struct Gpu {
    window: Arc<Window>,
    surface: wgpu::Surface<'static>,
    config: wgpu::SurfaceConfiguration,
    renderer: Renderer,
    screenshot: Option<Offscreen>,
}

struct App {
    scene: Scene,
    world: World,
    size: (u32, u32),
    test: bool,
    gpu: Option<Gpu>,
    camera: Camera,
    style: Style,
    paused: bool,
    speed: f64,
    accumulator: f64,
    last_frame: Option<Instant>,
    frames: u64,
    steps_window: VecDeque<(Instant, u64)>,
    frame_ms: f64,
    simulate_ms: f64,
    draw_ms: f64,
    help: bool,
    energy_graph: bool,
    /// (t, bodies' total, kinetic, potential, balls' kinetic or NaN).
    energy: VecDeque<(f64, f64, f64, f64, f64)>,
    /// Trails of the first [`TRAIL_BODIES`] bodies (T), oldest point first.
    trails: Option<Vec<Vec<DVec2>>>,
    cursor: (f64, f64),
    drag: Option<Drag>,
    halted: Option<String>,
    screenshots: u32,
    failure: Option<anyhow::Error>,
    /// Backend, --dt, --integrator, --tolerance.
    options: RunOptions,
    /// The default demo: resized to the adapter when the window opens.
    demo: bool,
    /// What the overlay says about the population's size and backend.
    population_note: Option<String>,
    /// The population's GPU buffers, when it steps on the GPU backend.
    gpu_balls: Option<GpuBalls>,
    /// The balls' kinetic energy on the GPU backend, read without waiting.
    ball_energy: BallEnergyReader,
    /// The balls' colour scales, computed once per world.
    ball_style: Option<BallStyle>,
    /// The run's outputs and stop checks, when any output is asked for.
    session: Option<Session>,
    stats: FrameStats,
}

impl App {
    fn new(scene: Scene, world: World, size: (u32, u32), test: bool, options: RunOptions, demo: bool) -> Self {
        let camera = Camera::fit_world(&world, size.0, size.1);
        Self {
            scene,
            world,
            size,
            test,
            gpu: None,
            camera,
            style: Style::default(),
            paused: false,
            speed: 1.0,
            accumulator: 0.0,
            last_frame: None,
            frames: 0,
            steps_window: VecDeque::new(),
            frame_ms: 0.0,
            simulate_ms: 0.0,
            draw_ms: 0.0,
            help: false,
            energy_graph: false,
            energy: VecDeque::new(),
            trails: None,
            cursor: (0.0, 0.0),
            drag: None,
            halted: None,
            screenshots: 0,
            failure: None,
            options,
            demo,
            population_note: None,
            gpu_balls: None,
            ball_energy: BallEnergyReader::new(),
            ball_style: None,
            session: None,
            stats: FrameStats::default(),
        }
    }

    /// After the event loop: end the session (the last rows, the summary),
    /// report the frame times, return the first failure, else why the run
    /// stopped early.
    fn finish(mut self) -> anyhow::Result<Option<RunStop>> {
        let mut stop = None;
        if let Some(session) = self.session.take() {
            let planned = session.planned_steps();
            if !session.is_over(&self.world) {
                report(&format!(
                    "mx2d: window closed after step {} of {planned}: the files end there",
                    self.world.step_count(),
                ));
            }
            let adapter = self.gpu.as_ref().map_or_else(String::new, |g| g.renderer.context().summary());
            match session.finish(&self.scene, &self.options, &mut self.world, adapter) {
                Ok((_, s)) => stop = s,
                Err(e) => {
                    self.failure.get_or_insert(e);
                }
            }
        }
        let s = &self.stats;
        if s.frames > 0 {
            let wall = match (s.first, s.last) {
                (Some(a), Some(b)) => b.duration_since(a).as_secs_f64(),
                _ => 0.0,
            };
            let frames = s.frames as f64;
            let intervals = (frames - 1.0).max(1.0);
            report(&format!(
                "window: {} frames, {:.1} ms/frame ({:.1} frames/s): simulate {:.2} ms, draw {:.2} ms per frame; \
                 {} steps ({:.0} steps/s); {} balls on {}, drawn on {}",
                s.frames,
                1e3 * wall / intervals,
                intervals / wall.max(1e-9),
                s.simulate_ms / frames,
                s.draw_ms / frames,
                s.steps,
                s.steps as f64 / wall.max(1e-9),
                self.world.population.as_ref().map_or(0, |p| p.len()),
                self.world.population_backend(),
                self.gpu.as_ref().map_or("-".to_string(), |g| g.renderer.context().summary()),
            ));
        }
        match self.failure.take() {
            Some(e) => Err(e),
            None => Ok(stop),
        }
    }

    /// Puts the world on the backend asked for: the fields' GPU backend (its
    /// own device), the population's on `ctx` — the device that draws — so
    /// that the frame binds its buffers. No silent fallback: a backend that
    /// cannot run is reported once (an error under `MX2D_REQUIRE_GPU=1`).
    fn attach_backend(&mut self, ctx: &Arc<GpuContext>) -> anyhow::Result<()> {
        self.gpu_balls = None;
        self.ball_energy.clear();
        self.ball_style = self.world.population.as_ref().map(|p| BallStyle::for_population(p, self.style.ball_colour));
        if self.options.backend != Backend::Gpu {
            return Ok(());
        }
        let gpu_balls = &mut self.gpu_balls;
        crate::run::backends::attach_gpu(&mut self.world, Some(ctx.clone()), false, |gpu| {
            *gpu_balls = Some(GpuBalls::of(gpu));
        })?;
        Ok(())
    }

    /// The run's overrides (as `mx2d run` applies them).
    fn apply_overrides(&mut self) -> anyhow::Result<()> {
        if let Some(dt) = self.options.dt {
            self.world.dt = dt;
        }
        if let Some(m) = self.options.integrator {
            self.world.set_integrator(m);
        }
        if let Some(tol) = self.options.tolerance {
            anyhow::ensure!(tol.is_finite() && tol > 0.0 && tol < 1.0, "--tolerance must be in (0, 1), got {tol}");
            self.world.set_tolerance(tol);
        }
        Ok(())
    }

    /// The default demo resized to the adapter ([`demo_size`]).
    fn size_demo(&mut self, ctx: &GpuContext) -> anyhow::Result<()> {
        let (balls, backend) = demo_size(ctx.is_software());
        let name = format!("demo (balls_box, {balls} balls)");
        self.scene = Scene::parse_with_overrides(DEMO_SCENE, &name, &[format!("population.count={balls}")])?;
        self.world = self.scene.build_world()?;
        self.options.backend = backend;
        let why = if ctx.is_software() { "a CPU adapter: the CPU twin" } else { "a GPU: the GPU backend" };
        self.population_note = Some(format!("demo sized to the adapter: {balls} balls on {why}"));
        Ok(())
    }

    fn fail(&mut self, event_loop: &ActiveEventLoop, e: anyhow::Error) {
        self.failure.get_or_insert(e);
        event_loop.exit();
    }

    fn open(&mut self, event_loop: &ActiveEventLoop) -> anyhow::Result<()> {
        let attributes = Window::default_attributes()
            .with_title(format!("mx2d: {}", self.scene.file.name))
            .with_inner_size(PhysicalSize::new(self.size.0, self.size.1));
        let window = Arc::new(event_loop.create_window(attributes)?);
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        let surface = instance.create_surface(window.clone())?;
        let ctx = Arc::new(GpuContext::for_surface(&instance, &surface)?);
        let inner = window.inner_size();
        let (w, h) = (inner.width.max(1), inner.height.max(1));
        let caps = surface.get_capabilities(ctx.adapter());
        // A non-sRGB format when offered: colours are then written as the
        // PNGs have them (the shader converts for an sRGB one otherwise).
        let format = caps
            .formats
            .iter()
            .copied()
            .find(|f| !f.is_srgb())
            .or_else(|| caps.formats.first().copied())
            .ok_or_else(|| anyhow::anyhow!("the surface offers no format on {}", ctx.adapter_name()))?;
        let mut config = surface
            .get_default_config(ctx.adapter(), w, h)
            .ok_or_else(|| anyhow::anyhow!("the surface is not supported by {}", ctx.adapter_name()))?;
        config.format = format;
        config.present_mode = wgpu::PresentMode::AutoVsync;
        surface.configure(&ctx.device, &config);
        if self.demo {
            self.size_demo(&ctx)?;
        }
        self.apply_overrides()?;
        self.attach_backend(&ctx)?;
        let renderer = Renderer::new(ctx, format)?;
        self.size = (w, h);
        self.camera = Camera::fit_world(&self.world, w, h);
        match &mut self.session {
            Some(session) => {
                session.begin(&mut self.world)?;
                if let Some(stop) = session.stopped() {
                    self.halted = Some(stop.to_string());
                }
            }
            None => self.prepare_world(),
        }
        self.gpu = Some(Gpu { window, surface, config, renderer, screenshot: None });
        Ok(())
    }

    fn prepare_world(&mut self) {
        if let Err(e) = self.world.prepare() {
            self.halted = Some(format!("initial state: {e}"));
        }
    }

    fn reset(&mut self) {
        if self.session.is_some() {
            self.halted.get_or_insert_with(|| "R is off while recording (--trace, --energy, …)".into());
            return;
        }
        let Some(ctx) = self.gpu.as_ref().map(|g| g.renderer.context().clone()) else { return };
        match self.scene.build_world() {
            Ok(world) => {
                self.world = world;
                if let Err(e) = self.apply_overrides().and_then(|()| self.attach_backend(&ctx)) {
                    self.halted = Some(format!("{e:#}"));
                    return;
                }
                self.halted = None;
                self.drag = None;
                self.energy.clear();
                if let Some(trails) = &mut self.trails {
                    trails.iter_mut().for_each(Vec::clear);
                }
                self.accumulator = 0.0;
                self.prepare_world();
            }
            Err(e) => self.halted = Some(e.to_string()),
        }
    }

    fn step_once(&mut self) {
        if self.halted.is_some() {
            return;
        }
        if let Some(Drag::Grab { load, .. }) = &self.drag {
            let target = self.cursor_world();
            if let Some(Load::Spring { anchor, .. }) = self.world.loads.get_mut(*load) {
                *anchor = Anchor::World(target);
            }
        }
        match &mut self.session {
            Some(session) => {
                if session.is_over(&self.world) {
                    return;
                }
                if let Err(e) = session.advance(&mut self.world) {
                    self.halted = Some(format!("recording: {e:#}"));
                    self.failure.get_or_insert(e);
                    self.paused = true;
                    return;
                }
                if let Some(notice) = session.take_notice() {
                    crate::output::report(&notice);
                }
                if let Some(stop) = session.stopped() {
                    self.halted = Some(stop.to_string());
                }
                if session.is_over(&self.world) {
                    self.paused = true;
                }
            }
            None => {
                if let Err(e) = self.world.step() {
                    self.halted = Some(e.to_string());
                    self.paused = true;
                }
            }
        }
    }

    /// Takes the whole steps the elapsed time allows, within a budget of
    /// 12 ms of stepping per frame.
    fn simulate(&mut self, elapsed: f64) {
        let started = Instant::now();
        let dt = self.world.dt;
        if !self.paused && self.halted.is_none() {
            self.accumulator += elapsed * self.speed;
        }
        let budget = Duration::from_millis(12);
        let mut taken = 0u64;
        while self.accumulator >= dt
            && started.elapsed() < budget
            && self.halted.is_none()
            && !self.session.as_ref().is_some_and(|r| r.is_over(&self.world))
        {
            self.step_once();
            self.accumulator -= dt;
            taken += 1;
        }
        // Behind real time: drop the backlog rather than spiral.
        if self.accumulator > 4.0 * dt {
            self.accumulator = 0.0;
        }
        let now = Instant::now();
        self.steps_window.push_back((now, taken));
        while self.steps_window.front().is_some_and(|(t, _)| now.duration_since(*t) > Duration::from_secs(1)) {
            self.steps_window.pop_front();
        }
        if taken > 0
            && let Some(trails) = &mut self.trails
        {
            for (trail, body) in trails.iter_mut().zip(self.world.bodies.iter()) {
                trail.push(body.position);
                if trail.len() > TRAIL_POINTS {
                    trail.remove(0);
                }
            }
        }
        if taken > 0 || self.energy.is_empty() {
            let e = self.world.energy();
            let balls = self.balls_kinetic().unwrap_or(f64::NAN);
            self.energy.push_back((self.world.time(), e.total, e.kinetic, e.potential, balls));
            if self.energy.len() > 600 {
                self.energy.pop_front();
            }
        }
        self.simulate_ms = started.elapsed().as_secs_f64() * 1e3;
        self.stats.steps += taken;
        self.stats.simulate_ms += self.simulate_ms;
    }

    /// What the window shows now: the draw list (with the toggled extras)
    /// and the overlay text.
    fn contents(&mut self) -> (super::DrawList, super::TextImage) {
        let reactions = if self.style.forces { self.world.reactions().ok() } else { None };
        let grab = match &self.drag {
            Some(Drag::Grab { body, local, .. }) => {
                self.world.bodies.as_slice().get(*body).map(|b| (b.world_point(*local), self.cursor_world()))
            }
            _ => None,
        };
        let extras = Extras {
            reactions: reactions.as_deref(),
            trails: self.trails.as_deref().unwrap_or(&[]),
            grab,
            gpu_balls: self.gpu_balls.as_ref(),
            ball_style: self.ball_style.map(|b| BallStyle { colour: self.style.ball_colour, ..b }),
        };
        let mut list = draw_list(&self.world, &self.camera, self.size.0, self.size.1, &self.style, extras);
        if self.energy_graph {
            self.energy_graph(&mut list.over);
        }
        (list, overlay::rasterize(&self.overlay_lines(), 15.0))
    }

    fn draw(&mut self) -> anyhow::Result<()> {
        let started = Instant::now();
        let (list, text) = self.contents();
        let Some(gpu) = self.gpu.as_mut() else { return Ok(()) };
        gpu.renderer.prepare(&list, &self.camera, self.size, Some(&text))?;
        let frame = match gpu.surface.get_current_texture() {
            wgpu::CurrentSurfaceTexture::Success(f) | wgpu::CurrentSurfaceTexture::Suboptimal(f) => f,
            wgpu::CurrentSurfaceTexture::Outdated | wgpu::CurrentSurfaceTexture::Lost => {
                gpu.surface.configure(&gpu.renderer.context().device, &gpu.config);
                return Ok(());
            }
            // Minimised or slow: skip this frame.
            wgpu::CurrentSurfaceTexture::Timeout | wgpu::CurrentSurfaceTexture::Occluded => return Ok(()),
            wgpu::CurrentSurfaceTexture::Validation => anyhow::bail!("the surface texture failed validation"),
        };
        let view = frame.texture.create_view(&wgpu::TextureViewDescriptor::default());
        let ctx = gpu.renderer.context().clone();
        let mut encoder = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("frame") });
        gpu.renderer.encode(&mut encoder, &view, self.style.background, &[]);
        // The balls' energy on the GPU backend: the last copy polled (never
        // waited for), a new copy recorded behind this frame once it is in.
        if let Some(balls) = &self.gpu_balls {
            self.ball_energy.poll(&ctx)?;
            self.ball_energy.record_copy(&ctx, &mut encoder, balls, self.world.time())?;
        }
        ctx.submit("frame", [encoder.finish()])?;
        self.ball_energy.after_submit();
        gpu.window.pre_present_notify();
        ctx.queue.present(frame);
        ctx.check("render")?;
        self.draw_ms = started.elapsed().as_secs_f64() * 1e3;
        self.stats.draw_ms += self.draw_ms;
        Ok(())
    }

    /// The S key: draws the current state offscreen and writes it as PNG
    /// (the only readback of the window). Returns the file written.
    fn screenshot(&mut self) -> anyhow::Result<PathBuf> {
        let (list, text) = self.contents();
        let Some(gpu) = self.gpu.as_mut() else { anyhow::bail!("no window yet") };
        if gpu.screenshot.is_none() {
            gpu.screenshot = Some(Offscreen::new(gpu.renderer.context().clone())?);
        }
        let dir = std::env::var_os("MX2D_SCREENSHOT_DIR").map_or_else(|| PathBuf::from("."), PathBuf::from);
        let path = dir.join(format!("mx2d-screenshot-{}.png", self.screenshots));
        self.screenshots += 1;
        let Some(offscreen) = gpu.screenshot.as_mut() else { anyhow::bail!("no offscreen renderer") };
        let image = offscreen.render(&list, &self.camera, self.size, self.style.background, Some(&text))?;
        image.write_png(&path)?;
        report(&format!("screenshot: {}", path.display()));
        Ok(path)
    }
}
