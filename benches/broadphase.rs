//! Broadphase benchmarks: CPU grid and sweep-and-prune for 10³…10⁶ discs
//! (SAP up to 10⁵: it grows ≈ N^1.5), and the GPU grid when an adapter
//! exists, both ways: `gpu_grid` uploads, runs, reads the pairs back and
//! sorts them; `gpu_grid_resident` records the passes on boxes already on
//! the GPU and only waits for them (what a GPU consumer of the pairs pays).

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use mx2d::bench::bench_population;
use mx2d::broadphase::{Aabb, GridBroadphase, SweepAndPrune};
use std::hint::black_box;

fn discs(n: usize) -> Vec<Aabb> {
    bench_population(n).iter().map(|b| Aabb::from_disc(b.position, b.radius)).collect()
}

fn broadphase(c: &mut Criterion) {
    let mut group = c.benchmark_group("broadphase");
    group.sample_size(10);
    let gpu =
        mx2d::gpu::GpuContext::new().and_then(|ctx| mx2d::gpu::GpuGridBroadphase::new(&ctx).map(|grid| (ctx, grid)));
    let mut gpu = match gpu {
        Ok(g) => Some(g),
        Err(e) => {
            eprintln!("GPU grid not benchmarked: {e}");
            None
        }
    };
    for n in [1_000, 10_000, 100_000, 1_000_000] {
        let aabbs = discs(n);
        let mut pairs = Vec::new();
        let mut grid = GridBroadphase::new();
        group.bench_with_input(BenchmarkId::new("cpu_grid", n), &aabbs, |b, a| {
            b.iter(|| grid.find_pairs(black_box(a), &mut pairs))
        });
        if n <= 100_000 {
            let mut sap = SweepAndPrune::new();
            group.bench_with_input(BenchmarkId::new("cpu_sap", n), &aabbs, |b, a| {
                b.iter(|| sap.find_pairs(black_box(a), &mut pairs))
            });
        }
        if let Some((ctx, grid)) = gpu.as_mut() {
            group.bench_with_input(BenchmarkId::new("gpu_grid", n), &aabbs, |b, a| {
                b.iter(|| {
                    if let Err(e) = grid.find_pairs(ctx, black_box(a), &mut pairs) {
                        panic!("GPU broadphase failed: {e}");
                    }
                })
            });
            // Boxes uploaded once; buffers sized by the run above.
            if let Err(e) = grid.upload(ctx, &aabbs) {
                panic!("GPU broadphase upload failed: {e}");
            }
            group.bench_with_input(BenchmarkId::new("gpu_grid_resident", n), &aabbs, |b, _| {
                b.iter(|| {
                    let mut encoder = ctx.device.create_command_encoder(&Default::default());
                    if let Err(e) = grid.encode(ctx, &mut encoder) {
                        panic!("GPU broadphase failed: {e}");
                    }
                    ctx.queue.submit([encoder.finish()]);
                    if let Err(e) = ctx.wait("broadphase") {
                        panic!("GPU broadphase failed: {e}");
                    }
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, broadphase);
criterion_main!(benches);
