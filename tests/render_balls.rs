//! A population's balls on screen (src/render/balls.rs, `ball_vs`).
//!
//! * With the GPU backend the frame draws the balls straight from the
//!   population's storage buffers: the picture equals the one drawn from the
//!   same state read back and uploaded from the host, and drawing it makes
//!   no readback (the population's per-thread readback counter is unchanged).
//! * The speed colours are the documented ones, at rest and at the scale.
//!
//! On lavapipe in CI (`MX2D_REQUIRE_GPU=1`); skipped with the reason printed
//! when no adapter is found otherwise.

mod common;

use std::path::Path;
use std::sync::Arc;

use glam::DVec2;
use mx2d::population::gpu::{GpuPopulation, read_backs_on_this_thread};
use mx2d::render::png::{Image, Offscreen};
use mx2d::render::{BallColour, BallStyle, Balls, Camera, DrawList, Extras, GpuBalls, HostBalls, Style, draw_list};
use mx2d::scene::Scene;

const SIZE: (u32, u32) = (320, 240);

fn balls_box(count: u64) -> Scene {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/balls_box.ron");
    Scene::load(&path, &[format!("population.count={count}")]).expect("balls_box loads")
}

/// Pixels that are not the background.
fn drawn(image: &Image, background: u32) -> usize {
    let bg = background.to_le_bytes();
    image.rgba.chunks(4).filter(|p| **p != bg).count()
}

/// balls_box with 400 balls on the GPU backend, 30 steps: the frame drawn
/// from the GPU buffers (through `draw_list` with `Extras::gpu_balls`, the
/// window's path) makes no readback and equals, pixel for pixel, the frame
/// drawn from the same state read back to the host and uploaded. Both run
/// the same shader on bit-identical f32 inputs (a readback copies the
/// buffers), so no tolerance is needed. The frame also differs from the
/// initial state's: the buffers bound are the ones the steps wrote.
#[test]
fn gpu_buffers_draw_what_the_host_upload_draws_without_a_readback() {
    let Some(ctx) = common::gpu(Default::default()) else { return };
    let ctx = Arc::new(ctx);
    let scene = balls_box(400);
    let mut world = scene.build_world().unwrap();
    let camera = Camera::fit_world(&world, SIZE.0, SIZE.1);
    let style = Style::default();
    let mut off = Offscreen::new(ctx.clone()).unwrap();
    let initial = {
        let list = draw_list(&world, &camera, SIZE.0, SIZE.1, &style, Extras::default());
        off.render(&list, &camera, SIZE, style.background, None).unwrap()
    };
    let gpu = GpuPopulation::new(ctx.clone(), world.population.as_ref().unwrap()).unwrap();
    let balls = GpuBalls::of(&gpu);
    assert_eq!(balls.count(), 400);
    world.set_population_backend(Some(Box::new(gpu))).unwrap();
    world.prepare().unwrap();
    for _ in 0..30 {
        world.step().unwrap();
    }

    let before = read_backs_on_this_thread();
    let extras = Extras { gpu_balls: Some(&balls), ..Extras::default() };
    let list = draw_list(&world, &camera, SIZE.0, SIZE.1, &style, extras);
    assert!(matches!(list.balls, Some((Balls::Gpu(_), _))), "the frame must bind the GPU buffers");
    let from_gpu = off.render(&list, &camera, SIZE, style.background, None).unwrap();
    assert_eq!(read_backs_on_this_thread(), before, "drawing a frame read the population back");

    // The counter can fail the test: a readback moves it.
    world.sync_population().unwrap();
    assert_eq!(read_backs_on_this_thread(), before + 1);
    let list = draw_list(&world, &camera, SIZE.0, SIZE.1, &style, Extras::default());
    assert!(matches!(list.balls, Some((Balls::Host(_), _))));
    let from_host = off.render(&list, &camera, SIZE, style.background, None).unwrap();

    let differing = from_gpu.rgba.chunks(4).zip(from_host.rgba.chunks(4)).filter(|(a, b)| a != b).count();
    assert_eq!(differing, 0, "{differing} pixels differ between the GPU-buffer and host-upload frames");
    // 400 balls of radius 0.5 m at this zoom cover thousands of pixels.
    let covered = drawn(&from_gpu, style.background);
    assert!(covered > 2000, "only {covered} pixels drawn");
    assert_ne!(from_gpu.rgba, initial.rgba, "30 steps later the balls must have moved");
}

/// Colour by speed: a ball at rest is drawn (40, 110, 220), one at the
/// style's speed scale (230, 60, 40) — sampled half a radius from the
/// centre, off the radius line and inside the rim. Colour by id gives two
/// balls different colours; by mass, a heavier ball a different one.
#[test]
fn speed_colours_are_the_documented_ones() {
    let Some(ctx) = common::gpu(Default::default()) else { return };
    let mut off = Offscreen::new(Arc::new(ctx)).unwrap();
    // Two balls of radius 1 m at x = ∓2, 20 px per metre: 20-pixel radii.
    let camera = Camera::new(DVec2::ZERO, 20.0);
    let scale = 5.0f32;
    let host = |mass_right: f32, id: Vec<u32>| HostBalls {
        motion: vec![[-2.0, 0.0, 0.0, 0.0], [2.0, 0.0, 0.0, -scale]],
        // Angle 0: the radius line points along +x; sample at +y.
        properties: vec![[0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0 / mass_right]],
        state: vec![0, 0],
        id,
    };
    let background = mx2d::render::rgba(255, 255, 255, 255);
    let mut render_ids = |colour: BallColour, mass_right: f32, id: Vec<u32>| {
        let style = BallStyle { colour, speed_scale: scale, mass_range: (1.0, mass_right.max(1.0)) };
        let list = DrawList { balls: Some((Balls::Host(host(mass_right, id)), style)), ..Default::default() };
        off.render(&list, &camera, SIZE, background, None).unwrap()
    };
    // Pixel centres half a radius (10 px) above each ball's centre.
    let at = |image: &Image, x_world: f64| {
        let p = camera.pixel_of(DVec2::new(x_world, 0.5), SIZE.0, SIZE.1);
        image.pixel(p.x as u32, p.y as u32)
    };
    let speed = render_ids(BallColour::Speed, 1.0, vec![0, 1]);
    // Unorm8 rounding of the interpolation: within 1 of the stated value.
    let close =
        |got: [u8; 4], want: [u8; 3]| got[..3].iter().zip(want).all(|(g, w)| (i32::from(*g) - i32::from(w)).abs() <= 1);
    assert!(close(at(&speed, -2.0), [40, 110, 220]), "at rest: {:?}", at(&speed, -2.0));
    assert!(close(at(&speed, 2.0), [230, 60, 40]), "at the scale: {:?}", at(&speed, 2.0));
    let id = render_ids(BallColour::Id, 1.0, vec![0, 1]);
    assert_ne!(at(&id, -2.0), at(&id, 2.0), "by id, two balls share a colour");
    // The colour is the ball's id's, not its slot's: the population re-sorts
    // its arrays by cell, and a ball must keep its colour.
    let swapped = render_ids(BallColour::Id, 1.0, vec![1, 0]);
    assert_eq!(at(&swapped, -2.0), at(&id, 2.0), "by id, the colour follows the slot");
    assert_eq!(at(&swapped, 2.0), at(&id, -2.0), "by id, the colour follows the slot");
    let same_mass = render_ids(BallColour::Mass, 1.0, vec![0, 1]);
    assert_eq!(at(&same_mass, -2.0), at(&same_mass, 2.0), "by mass, equal masses differ");
    let heavier = render_ids(BallColour::Mass, 8.0, vec![0, 1]);
    assert_ne!(at(&heavier, -2.0), at(&heavier, 2.0), "by mass, 1 kg and 8 kg look the same");
}

/// A ball that left the world (state ≠ alive) is not drawn.
#[test]
fn balls_out_of_the_world_are_not_drawn() {
    let Some(ctx) = common::gpu(Default::default()) else { return };
    let mut off = Offscreen::new(Arc::new(ctx)).unwrap();
    let camera = Camera::new(DVec2::ZERO, 20.0);
    let background = mx2d::render::rgba(255, 255, 255, 255);
    // A ball at rest, its angle pointing its radius line at -x; the green
    // channel's drop below white (255 → 110 at full cover) measures the
    // coverage of each pixel, the rim and the line only darken it further.
    let mut render = |state: u32| {
        let host = HostBalls {
            motion: vec![[0.0; 4]],
            properties: vec![[std::f32::consts::PI, 0.0, 1.0, 1.0]],
            state: vec![state],
            id: vec![0],
        };
        let style = BallStyle { colour: BallColour::Speed, speed_scale: 1.0, mass_range: (1.0, 1.0) };
        let list = DrawList { balls: Some((Balls::Host(host), style)), ..Default::default() };
        off.render(&list, &camera, SIZE, background, None).unwrap()
    };
    let alive = render(mx2d::population::state::ALIVE);
    let coverage: f64 = alive.rgba.chunks(4).map(|p| ((255.0 - f64::from(p[1])) / (255.0 - 110.0)).min(1.0)).sum();
    // πr² = π·20² ≈ 1257 pixels, within 2 % as tests/render_offscreen.rs
    // (the darker rim and line are counted as full cover: min(1)).
    let area = std::f64::consts::PI * 400.0;
    assert!((coverage - area).abs() < 0.02 * area, "coverage {coverage} px, πr² = {area}");
    assert_eq!(drawn(&render(mx2d::population::state::ESCAPED), background), 0);
}

/// balls_box's container walls (floor, left and right) are drawn: the
/// surface colour appears at the floor's height.
#[test]
fn the_container_walls_are_drawn() {
    let Some(ctx) = common::gpu(Default::default()) else { return };
    let mut off = Offscreen::new(Arc::new(ctx)).unwrap();
    let world = balls_box(100).build_world().unwrap();
    let camera = Camera::fit_world(&world, SIZE.0, SIZE.1);
    let style = Style::default();
    let list = draw_list(&world, &camera, SIZE.0, SIZE.1, &style, Extras::default());
    let image = off.render(&list, &camera, SIZE, style.background, None).unwrap();
    let surface = style.surface.to_le_bytes();
    // The floor (y = 0) and the left wall (x = -1) are strokes of the surface colour.
    let floor = camera.pixel_of(DVec2::new(5.0, 0.0), SIZE.0, SIZE.1);
    let left = camera.pixel_of(DVec2::new(-1.0, 5.0), SIZE.0, SIZE.1);
    for (name, p) in [("floor", floor), ("left wall", left)] {
        let hit = (-1..=1).any(|d: i32| {
            let (x, y) = if name == "floor" { (p.x as i32, p.y as i32 + d) } else { (p.x as i32 + d, p.y as i32) };
            image.pixel(x as u32, y as u32)[..3] == surface[..3]
        });
        assert!(hit, "{name} not drawn at {p:?}");
    }
}

/// The window's energy on the GPU backend (src/render/ball_energy.rs): a copy
/// recorded behind a submission and mapped asynchronously gives, once polled
/// in, exactly the kinetic energy of the same state read back to the host
/// (same f32 inputs, same f64 sum in ball order: no tolerance), belongs to
/// the time it was taken at, and makes no population readback. Polling
/// before the submission completes never blocks: it returns `None` or the
/// value, nothing else.
#[test]
fn gpu_ball_energy_arrives_without_waiting_and_equals_the_readback() {
    use mx2d::render::ball_energy::{BallEnergyReader, kinetic_energy, population_kinetic_energy};
    let Some(ctx) = common::gpu(Default::default()) else { return };
    let ctx = Arc::new(ctx);
    let scene = balls_box(300);
    let mut world = scene.build_world().unwrap();
    let gpu = GpuPopulation::new(ctx.clone(), world.population.as_ref().unwrap()).unwrap();
    let balls = GpuBalls::of(&gpu);
    world.set_population_backend(Some(Box::new(gpu))).unwrap();
    world.prepare().unwrap();
    for _ in 0..20 {
        world.step().unwrap();
    }
    let before = read_backs_on_this_thread();
    let mut reader = BallEnergyReader::new();
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    assert!(reader.record_copy(&ctx, &mut encoder, &balls, world.time()).unwrap());
    // A second copy while one is in flight is not recorded.
    assert!(!reader.record_copy(&ctx, &mut encoder, &balls, world.time()).unwrap());
    ctx.queue.submit([encoder.finish()]);
    reader.after_submit();
    let started = std::time::Instant::now();
    let (time, energy) = loop {
        if let Some(read) = reader.poll(&ctx).unwrap() {
            break read;
        }
        assert!(reader.is_pending());
        assert!(started.elapsed().as_secs() < 60, "the mapping never arrived");
        std::thread::sleep(std::time::Duration::from_millis(2));
    };
    assert_eq!(read_backs_on_this_thread(), before, "the energy read made a population readback");
    assert!(!reader.is_pending());
    assert_eq!(time, world.time());

    world.sync_population().unwrap();
    let host = HostBalls::of(world.population.as_ref().unwrap());
    let expected = kinetic_energy(&host.motion, &host.properties, &host.state);
    assert!(expected > 0.0, "20 steps into the drop the balls move");
    assert_eq!(energy, expected);
    // The CPU twin's path (host arrays read in place) sums the same terms.
    assert_eq!(population_kinetic_energy(world.population.as_ref().unwrap()), expected);
    assert_eq!(reader.latest(), Some((time, energy)));
}
