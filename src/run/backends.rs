//! `--backend gpu`: the world's fields and population put on the GPU, with
//! one policy for `mx2d run` and the window. No silent fallback: a backend
//! that cannot run is said once on stderr and the CPU path runs in its
//! place, or, when the GPU is required (`MX2D_REQUIRE_GPU=1`, as CI sets
//! it), the run is refused with the reason.

use std::sync::Arc;

use crate::gpu::{GpuContext, GpuFieldBackend};
use crate::output::report;
use crate::population::gpu::GpuPopulation;
use crate::world::World;

/// Whether the GPU is required (`MX2D_REQUIRE_GPU=1`): a backend that cannot
/// run is then an error instead of a message.
pub fn gpu_required() -> bool {
    std::env::var("MX2D_REQUIRE_GPU").as_deref() == Ok("1")
}

/// Puts `world` on the GPU: the fields on the bodies on a device of their
/// own (a scene of balls alone has none to evaluate), the population on
/// `population_device` when given (the window's, whose frame binds the
/// balls' buffers) or on a device of its own, with per-stage timestamps
/// when `time_stages` (the summary's stage times). `on_population` sees
/// the population's backend before the world takes it (the window keeps
/// handles on its buffers). Returns the adapter the summary names: the
/// population's when it has one, else the fields', `none (why)` where the
/// CPU runs instead.
pub fn attach_gpu(
    world: &mut World,
    population_device: Option<Arc<GpuContext>>,
    time_stages: bool,
    on_population: impl FnOnce(&GpuPopulation),
) -> anyhow::Result<String> {
    let required = gpu_required();
    let mut adapter = String::new();
    if !(world.bodies.is_empty() && world.population.is_some()) {
        match GpuFieldBackend::new() {
            Ok(gpu) => {
                adapter = gpu.adapter();
                world.set_field_evaluator(Some(Box::new(gpu)));
            }
            Err(e) if required => anyhow::bail!("--backend gpu: {e} (MX2D_REQUIRE_GPU=1)"),
            Err(e) => {
                report(&format!("mx2d: --backend gpu cannot run ({e}); the fields run on the CPU"));
                adapter = format!("none ({e})");
            }
        }
    }
    let Some(pop) = &world.population else { return Ok(adapter) };
    let device = match population_device {
        Some(ctx) => Ok(ctx),
        None => GpuContext::new().map(Arc::new).map_err(|e| e.to_string()),
    };
    match device.and_then(|ctx| GpuPopulation::new(ctx, pop).map_err(|e| e.to_string())) {
        Ok(mut gpu) => {
            adapter = gpu.adapter();
            if time_stages {
                // timestamps where the adapter has them (the summary says
                // when it has not)
                gpu.time_stages();
            }
            on_population(&gpu);
            world.set_population_backend(Some(Box::new(gpu)))?;
        }
        Err(e) if required => anyhow::bail!("--backend gpu: population: {e} (MX2D_REQUIRE_GPU=1)"),
        Err(e) => {
            report(&format!("mx2d: --backend gpu cannot run the population ({e}); it runs on the CPU twin"));
            adapter = format!("none ({e})");
        }
    }
    Ok(adapter)
}
