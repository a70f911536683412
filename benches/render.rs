//! Drawing cost (offscreen, waits for the GPU, no readback unless named):
//! N discs uploaded from the CPU every frame, N discs resident in a GPU
//! storage buffer, a population's N balls drawn from the GPU backend's own
//! buffers (`balls_gpu_buffers`: the window's path, nothing uploaded) and
//! from the host arrays uploaded (`balls_host_upload`: the CPU twin's path),
//! a whole 800×600 frame with readback (a `--frames` PNG before encoding),
//! and the CPU tessellation of the ragdoll.

use std::hint::black_box;
use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use mx2d::render::png::Offscreen;
use mx2d::render::tessellate::{DISC_RADIUS_LINE, DISC_RIM};
use mx2d::render::{Camera, DiscInstance, DrawList, Extras, Style, draw_list, rgba};
use wgpu::util::DeviceExt;

const SIZE: (u32, u32) = (800, 600);

/// N discs of radius 0.5 on a square grid of spacing 1.25 (the balls_box layout).
fn discs(n: usize) -> (Vec<DiscInstance>, Camera) {
    let cols = (n as f64).sqrt().ceil() as usize;
    let discs = (0..n)
        .map(|i| DiscInstance {
            position: [0.5 + 1.25 * (i % cols) as f32, 1.0 + 1.25 * (i / cols) as f32],
            radius: 0.5,
            angle: i as f32,
            color: rgba(66, 133, 244, 255),
            flags: DISC_RADIUS_LINE | DISC_RIM,
            pad: [0; 2],
        })
        .collect();
    let side = 1.25 * cols as f64 + 1.0;
    let camera = Camera::fit(glam::DVec2::ZERO, glam::DVec2::splat(side), SIZE.0, SIZE.1, 0.02);
    (discs, camera)
}

fn render(c: &mut Criterion) {
    let mut group = c.benchmark_group("render");
    group.sample_size(10);
    let scene = mx2d::scene::Scene::load(std::path::Path::new("scenes/ragdoll.ron"), &[]).expect("ragdoll scene");
    let world = scene.build_world().expect("ragdoll world");
    let camera = Camera::fit_world(&world, SIZE.0, SIZE.1);
    let style = Style::default();
    group.bench_function("tessellate_ragdoll", |b| {
        b.iter(|| draw_list(black_box(&world), &camera, SIZE.0, SIZE.1, &style, Extras::default()))
    });
    let mut off = match mx2d::gpu::GpuContext::new().map(Arc::new).and_then(Offscreen::new) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("GPU drawing not benchmarked: {e}");
            return;
        }
    };
    let list = draw_list(&world, &camera, SIZE.0, SIZE.1, &style, Extras::default());
    group.bench_function("ragdoll_frame_with_readback", |b| {
        b.iter(|| off.render(&list, &camera, SIZE, style.background, None).expect("render"))
    });
    for n in [1_000usize, 10_000, 100_000] {
        let (instances, camera) = discs(n);
        let list = DrawList { discs: instances.clone(), ..Default::default() };
        group.bench_with_input(BenchmarkId::new("discs_uploaded", n), &list, |b, list| {
            b.iter(|| off.draw(list, &camera, SIZE, style.background, &[]).expect("draw"))
        });
        let ctx = off.renderer().context().clone();
        let buffer = ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("bench resident discs"),
            contents: bytemuck::cast_slice(&instances),
            usage: wgpu::BufferUsages::STORAGE,
        });
        let group_resident = off.renderer().disc_bind_group(&buffer);
        let empty = DrawList::default();
        group.bench_with_input(BenchmarkId::new("discs_resident", n), &n, |b, &n| {
            b.iter(|| off.draw(&empty, &camera, SIZE, style.background, &[(&group_resident, n as u32)]).expect("draw"))
        });
    }
    for n in [1_000u64, 10_000, 100_000] {
        let scene =
            mx2d::scene::Scene::load(std::path::Path::new("scenes/balls_box.ron"), &[format!("population.count={n}")])
                .expect("balls_box scene");
        let world = scene.build_world().expect("balls_box world");
        let Some(pop) = world.population.as_ref() else { return };
        let camera = Camera::fit_world(&world, SIZE.0, SIZE.1);
        let ctx = off.renderer().context().clone();
        let gpu = match mx2d::population::gpu::GpuPopulation::new(ctx, pop) {
            Ok(g) => g,
            Err(e) => {
                eprintln!("balls_gpu_buffers not benchmarked: {e}");
                return;
            }
        };
        let extras = Extras { gpu_balls: Some(&mx2d::render::GpuBalls::of(&gpu)), ..Extras::default() };
        let resident = draw_list(&world, &camera, SIZE.0, SIZE.1, &style, extras);
        group.bench_with_input(BenchmarkId::new("balls_gpu_buffers", n), &resident, |b, list| {
            b.iter(|| off.draw(list, &camera, SIZE, style.background, &[]).expect("draw"))
        });
        // The host path converts the arrays every frame (draw_list) and uploads them.
        group.bench_with_input(BenchmarkId::new("balls_host_upload", n), &world, |b, world| {
            b.iter(|| {
                let list = draw_list(world, &camera, SIZE.0, SIZE.1, &style, Extras::default());
                off.draw(&list, &camera, SIZE, style.background, &[]).expect("draw")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, render);
criterion_main!(benches);
