//! Pictures without a display: `mx2d render SCENE --out FILE.png [--time T]
//! [--size WxH]` and the PNG sequence of `mx2d run --frames DIR --every K`.
//!
//! Both only read the world: a run writes the same trace with and without
//! frames (tests/render_frames.rs checks it byte for byte).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;

use super::png::{Image, Offscreen};
use super::{Camera, Extras, Style, draw_list, overlay};
use crate::gpu::GpuContext;
use crate::scene::{MAX_STEPS, Scene};
use crate::world::World;

/// Default picture size (pixels).
pub const DEFAULT_SIZE: (u32, u32) = (800, 600);

/// Parses `WxH` (e.g. `800x600`): two integers from 1 to 16384.
pub fn parse_size(text: &str) -> Result<(u32, u32), String> {
    let (w, h) = text
        .split_once(['x', 'X', '×'])
        .ok_or_else(|| format!("`{text}`: expected WIDTHxHEIGHT in pixels, e.g. 800x600"))?;
    let side =
        |s: &str| {
            s.trim().parse::<u32>().ok().filter(|v| (1..=16384).contains(v)).ok_or_else(|| {
                format!("`{text}`: each side must be a whole number of pixels from 1 to 16384, got `{s}`")
            })
        };
    Ok((side(w)?, side(h)?))
}

/// Opens the GPU for drawing, or says why it cannot run.
pub fn open_gpu(what: &str) -> anyhow::Result<Arc<GpuContext>> {
    GpuContext::new().map(Arc::new).map_err(|e| {
        anyhow::anyhow!(
            "{what} draws with wgpu and needs a GPU adapter (software Vulkan such as Mesa's lavapipe will do): {e}"
        )
    })
}

/// One line for the picture's corner: scene, time, step.
fn caption(name: &str, world: &World) -> Vec<String> {
    vec![format!("{name}  t = {:.3} s  step {}", world.time(), world.step_count())]
}

/// Draws `world` framed by `camera` with `style`, caption on top when given.
pub fn render_world(
    offscreen: &mut Offscreen,
    world: &World,
    camera: &Camera,
    size: (u32, u32),
    style: &Style,
    caption_lines: Option<&[String]>,
) -> anyhow::Result<Image> {
    let list = draw_list(world, camera, size.0, size.1, style, Extras::default());
    let text = caption_lines.map(|lines| overlay::rasterize(lines, 14.0));
    Ok(offscreen.render(&list, camera, size, style.background, text.as_ref())?)
}

/// What `mx2d render` draws besides the bodies.
#[derive(Clone, Copy, Debug)]
pub struct RenderOptions {
    /// Simulated time to show (s).
    pub time: f64,
    /// Picture size (pixels).
    pub size: (u32, u32),
    /// Trails of the bodies over the run (one point per 1 % of it).
    pub trails: bool,
    /// Reaction-force arrows (green) at the joints.
    pub forces: bool,
}

impl Default for RenderOptions {
    fn default() -> Self {
        Self { time: 0.0, size: DEFAULT_SIZE, trails: false, forces: false }
    }
}

/// The steps `mx2d render` takes to reach `time` with steps of `dt` (the
/// nearest step): `time` must be finite and ≥ 0, and the count within
/// [`MAX_STEPS`] — checked by the command line before the adapter is opened
/// or anything is written (bad input, exit 2), and by [`render_scene`].
pub fn render_steps(time: f64, dt: f64) -> Result<u64, String> {
    if !(time.is_finite() && time >= 0.0) {
        return Err(format!("--time must be a finite number of seconds >= 0, got {time}"));
    }
    let steps = (time / dt).round();
    // NaN included (a dt that is not a step): only a count known to be within the limit passes.
    if steps.is_nan() || steps > MAX_STEPS as f64 {
        return Err(format!("--time {time:e} s is {steps:e} steps of {dt:e} s, more than the limit of {MAX_STEPS:e}"));
    }
    Ok(steps as u64)
}

/// `mx2d render`: builds the scene, steps it to `options.time` (nearest
/// step), and writes the picture to `out`. Returns the step count reached.
pub fn render_scene(scene: &Scene, options: &RenderOptions, out: &Path) -> anyhow::Result<u64> {
    let RenderOptions { time, size, .. } = *options;
    let steps = render_steps(time, scene.file.dt).map_err(anyhow::Error::msg)?;
    let mut world = scene.build_world()?;
    let mut offscreen = Offscreen::new(open_gpu("mx2d render")?)?;
    world.prepare().map_err(|e| anyhow::anyhow!("{}: the initial state cannot be used: {e}", scene.file.name))?;
    let mut trails: Vec<Vec<glam::DVec2>> = Vec::new();
    let mut record = |world: &World| {
        if options.trails {
            trails.resize(world.bodies.len(), Vec::new());
            for (trail, body) in trails.iter_mut().zip(world.bodies.iter()) {
                trail.push(body.position);
            }
        }
    };
    record(&world);
    let stride = (steps / 100).max(1);
    for k in 1..=steps {
        world.step().map_err(|e| anyhow::anyhow!("{}: stopped before t = {time}: {e}", scene.file.name))?;
        if k % stride == 0 || k == steps {
            record(&world);
        }
    }
    let reactions = if options.forces {
        Some(world.reactions().map_err(|e| anyhow::anyhow!("--forces: the reactions cannot be solved for: {e}"))?)
    } else {
        None
    };
    let camera = Camera::fit_world(&world, size.0, size.1);
    let style = Style { forces: options.forces, ..Style::default() };
    let extras = Extras { reactions: reactions.as_deref(), trails: &trails, ..Extras::default() };
    let list = draw_list(&world, &camera, size.0, size.1, &style, extras);
    let text = overlay::rasterize(&caption(&scene.file.name, &world), 14.0);
    let image = offscreen.render(&list, &camera, size, style.background, Some(&text))?;
    image.write_png(out)?;
    Ok(world.step_count())
}

/// Writes `DIR/frame_000000.png`, `frame_000001.png`, … at the steps a run
/// records, with a camera fixed by the initial state (frames line up in a
/// video: `ffmpeg -framerate 30 -i DIR/frame_%06d.png -pix_fmt yuv420p out.mp4`).
pub struct FrameWriter {
    dir: PathBuf,
    offscreen: Offscreen,
    camera: Camera,
    size: (u32, u32),
    style: Style,
    name: String,
    written: u64,
}

impl FrameWriter {
    /// Creates `dir` (and its parents) and the renderer; frames `world` as it is now.
    pub fn new(dir: &Path, size: (u32, u32), world: &World, name: &str) -> anyhow::Result<Self> {
        std::fs::create_dir_all(dir).with_context(|| format!("--frames: cannot create {}", dir.display()))?;
        let offscreen = Offscreen::new(open_gpu("--frames")?)?;
        Ok(Self {
            dir: dir.to_path_buf(),
            offscreen,
            camera: Camera::fit_world(world, size.0, size.1),
            size,
            style: Style::default(),
            name: name.to_string(),
            written: 0,
        })
    }

    /// Draws and writes the next frame.
    pub fn write(&mut self, world: &World) -> anyhow::Result<()> {
        let lines = caption(&self.name, world);
        let image = render_world(&mut self.offscreen, world, &self.camera, self.size, &self.style, Some(&lines))?;
        image.write_png(&self.dir.join(format!("frame_{:06}.png", self.written)))?;
        self.written += 1;
        Ok(())
    }

    /// Frames written so far.
    pub fn written(&self) -> u64 {
        self.written
    }
}

/// The pictures a headless run makes: a frame per recorded step
/// (`--frames`) and the energy plot at the end (`--energy-plot`). Both only
/// read the world.
#[derive(Default)]
pub struct RunPictures {
    frames: Option<FrameWriter>,
    energy: Option<(PathBuf, super::plot::EnergySeries)>,
}

impl RunPictures {
    /// Opens what was asked for (nothing when both are `None`).
    pub fn open(
        world: &World,
        name: &str,
        frames: Option<&Path>,
        size: Option<(u32, u32)>,
        energy_plot: Option<&Path>,
    ) -> anyhow::Result<Self> {
        Ok(Self {
            frames: frames.map(|dir| FrameWriter::new(dir, size.unwrap_or(DEFAULT_SIZE), world, name)).transpose()?,
            energy: energy_plot.map(|p| (p.to_path_buf(), super::plot::EnergySeries::new(name))),
        })
    }

    /// Called at every recorded step.
    pub fn record(&mut self, world: &mut World) -> anyhow::Result<()> {
        if let Some(frames) = &mut self.frames {
            // The GPU backend's balls, read back for the frame (a PNG is
            // read back anyway); the host arrays are then current, and the
            // trace reads the same state.
            world.sync_population()?;
            frames.write(world)?;
        }
        if let Some((_, series)) = &mut self.energy {
            let error = world.constraint_error();
            series.push(world, error);
        }
        Ok(())
    }

    /// Writes the energy plot.
    pub fn finish(&mut self) -> anyhow::Result<()> {
        if let Some((path, series)) = &self.energy {
            series.write(path)?;
        }
        Ok(())
    }
}
