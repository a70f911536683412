//! The GPU serving the mechanism tier: the fields scene stepped with the
//! force fields from the WGSL kernel (f32) against the same scene on the CPU
//! (f64). The kernel's forces differ from the CPU's by ~1e-7 relative; over
//! 2000 RK4 steps (1 s) the body positions (a few metres) then agree to
//! 1e-5 m, and both runs close the energy balance alike.

use mx2d::gpu::GpuFieldBackend;
use mx2d::scene::Scene;

#[test]
fn fields_on_the_gpu_match_the_cpu_trajectory() {
    let backend = match GpuFieldBackend::new() {
        Ok(b) => b,
        Err(e) if mx2d::run::backends::gpu_required() => {
            panic!("MX2D_REQUIRE_GPU=1 but the GPU is unavailable: {e}")
        }
        Err(e) => {
            eprintln!("skipping GPU test: {e}");
            return;
        }
    };
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/fields.ron");
    let scene = Scene::load(&path, &[]).expect("scene");
    let mut cpu = scene.build_world().expect("world");
    let mut gpu = scene.build_world().expect("world");
    gpu.set_field_evaluator(Some(Box::new(backend)));
    assert_eq!((cpu.field_backend(), gpu.field_backend()), ("cpu", "gpu"));
    let (e_cpu, e_gpu) = (cpu.energy(), gpu.energy());
    for _ in 0..2000 {
        cpu.step().expect("cpu step");
        gpu.step().expect("gpu step");
    }
    for (a, b) in cpu.bodies.iter().zip(gpu.bodies.iter()) {
        assert!((a.position - b.position).length() < 1e-5, "{}: {} vs {}", a.name, a.position, b.position);
    }
    // The fields did real work, and both runs account for it the same way.
    let (w_cpu, w_gpu) = (cpu.energy().work, gpu.energy().work);
    assert!(w_cpu.abs() > 1.0, "{w_cpu}");
    assert!((w_cpu - w_gpu).abs() < 1e-5 * w_cpu.abs(), "{w_cpu} vs {w_gpu}");
    let drift = |e0: mx2d::world::Energy, e1: mx2d::world::Energy| e1.balance() - e0.balance();
    assert!((drift(e_cpu, cpu.energy()) - drift(e_gpu, gpu.energy())).abs() < 1e-6 * e_cpu.total.abs());
}
