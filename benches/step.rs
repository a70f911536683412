//! `World::step` throughput: N free bodies under gravity and two fields (a
//! radial attractor with falloff and a drag region), symplectic Euler.
//! Report: time per step / N = ns per body-step (criterion prints the
//! element throughput).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use glam::DVec2;
use mx2d::body::Body;
use mx2d::field::{Falloff, Field, FieldKind, Region};
use mx2d::integrator::Method;
use mx2d::shape::Shape;
use mx2d::world::World;

fn world(n: usize, method: Method) -> World {
    let mut w = World::new(DVec2::new(0.0, -9.81));
    w.dt = 1e-3;
    w.set_integrator(method);
    w.fields.push(Field {
        kind: FieldKind::Radial {
            center: DVec2::ZERO,
            strength: -50.0,
            falloff: Falloff::InverseSquare,
            softening: 0.5,
            per_mass: true,
        },
        region: Region::Circle { center: DVec2::ZERO, radius: 500.0 },
    });
    w.fields.push(Field {
        kind: FieldKind::Drag { coefficient: 0.1, stokes: true },
        region: Region::HalfPlane { point: DVec2::ZERO, normal: DVec2::new(0.0, -1.0) },
    });
    let side = (n as f64).sqrt().ceil() as usize;
    for i in 0..n {
        let p = DVec2::new((i % side) as f64, (i / side) as f64) * 0.3 - DVec2::splat(0.15 * side as f64);
        let body = Body::builder(format!("b{i}"), Shape::Circle { radius: 0.1 })
            .mass(1.0)
            .position(p)
            .velocity(DVec2::new(p.y, -p.x) * 0.1)
            .build()
            .expect("valid body");
        w.add_body(body).expect("unique names");
    }
    w
}

fn step_throughput(c: &mut Criterion) {
    let mut group = c.benchmark_group("world_step");
    group.sample_size(10);
    for n in [1_000usize, 10_000, 100_000, 1_000_000] {
        for method in [Method::Symplectic, Method::Rk4] {
            let mut w = world(n, method);
            group.throughput(Throughput::Elements(n as u64));
            group.bench_with_input(BenchmarkId::new(method.name(), n), &n, |b, _| {
                b.iter(|| w.step().expect("bench world stays finite"))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, step_throughput);
criterion_main!(benches);
