//! Contact pipeline, soft step and exact PGS: Box2D v3's pyramid (`scenes/pyramid.ron`) at 20 rows
//! (210 boxes) and 100 rows (5,050 boxes, Box2D's `large_pyramid`), ms per
//! `World::step` with the CPU broadphase, measured on the pyramid after it
//! has settled for 1 s (60 steps at dt = 1/60). The stack quality at the
//! same settings (drift after 10 s, max penetration) comes from
//! `tests/contact_stacking.rs` and `mx2d run scenes/pyramid.ron`.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use mx2d::scene::Scene;
use mx2d::world::World;

fn pyramid(rows: usize, solver: &str) -> World {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/pyramid.ron");
    let sets = [format!("piles[0].rows={rows}"), format!("contacts.solver={solver}")];
    let scene = Scene::load(&path, &sets).expect("pyramid.ron loads");
    scene.build_world().expect("pyramid builds")
}

fn bench(c: &mut Criterion) {
    // The scene's soft step (8 sub-steps, 60 Hz) and the exact block PGS.
    for (name, solver) in [("pyramid_step_soft", "SoftStep(substeps: 8, hertz: 60)"), ("pyramid_step", "Exact")] {
        let mut group = c.benchmark_group(name);
        group.sample_size(10);
        for rows in [20usize, 100] {
            let mut w = pyramid(rows, solver);
            let settle = if rows > 50 && solver == "Exact" { 5 } else { 60 };
            for _ in 0..settle {
                w.step().expect("step");
            }
            group.bench_with_input(BenchmarkId::from_parameter(rows), &rows, |b, _| b.iter(|| w.step().expect("step")));
        }
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
