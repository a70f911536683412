//! The population stage of [`World::step`]: the bodies become the balls'
//! moving obstacles at their new pose, then one population step on the CPU
//! twin or on the backend the world was given; and the calls that reach
//! that backend between steps (wait, read back).

use std::time::{Duration, Instant};

use super::{SimulationError, Stage, World};
use crate::population::gpu::GpuPopulation;

impl World {
    /// The population stage: bodies become obstacles at their new pose, then
    /// one population step on the CPU twin or the GPU.
    pub(super) fn step_population(&mut self) -> Result<(), SimulationError> {
        let Some(pop) = self.population.as_mut() else {
            return Ok(());
        };
        if !self.bodies.is_empty() {
            pop.set_body_obstacles(self.bodies.as_slice());
        }
        let dt = self.dt as f32;
        let result = match &self.population_gpu {
            None => crate::population::cpu::step(pop, dt),
            Some(gpu) => match gpu.lock() {
                Ok(mut gpu) => gpu.step(pop, dt),
                Err(_) => Err(crate::population::PopulationError::Gpu("the GPU backend was poisoned".into())),
            },
        };
        result.map_err(|source| SimulationError::Population { step: self.steps, time: self.time, source })
    }

    /// Steps the population on the GPU from now on (`None`: on the CPU twin
    /// again, after reading the balls back). Clones of the world share it.
    pub fn set_population_gpu(&mut self, gpu: Option<GpuPopulation>) -> Result<(), SimulationError> {
        self.sync_population()?;
        self.population_gpu = gpu.map(|g| std::sync::Arc::new(std::sync::Mutex::new(g)));
        Ok(())
    }

    /// `"gpu"` when the population steps on the GPU, else `"cpu"`.
    pub fn population_backend(&self) -> &'static str {
        if self.population_gpu.is_some() { "gpu" } else { "cpu" }
    }

    /// Waits until the GPU has finished the population steps submitted so
    /// far and counts the wait in the `step_population` stage: the GPU runs
    /// behind the host, so its steps' time is known only once the last one
    /// completed. Nothing to do on the CPU twin. Returns the wait.
    pub fn finish_population_steps(&mut self) -> Result<Duration, SimulationError> {
        let Some(gpu) = &self.population_gpu else {
            return Ok(Duration::ZERO);
        };
        let started = Instant::now();
        let result = match gpu.lock() {
            Ok(gpu) => gpu.wait(),
            Err(_) => Err(crate::population::PopulationError::Gpu("the GPU backend was poisoned".into())),
        };
        let waited = started.elapsed();
        self.times.add(Stage::StepPopulation, waited);
        result.map(|()| waited).map_err(|source| SimulationError::Population {
            step: self.steps,
            time: self.time,
            source,
        })
    }

    /// Brings the GPU's balls into [`World::population`] (a readback; nothing
    /// to do on the CPU twin). Call before reading the balls.
    pub fn sync_population(&mut self) -> Result<(), SimulationError> {
        let (Some(pop), Some(gpu)) = (self.population.as_mut(), &self.population_gpu) else {
            return Ok(());
        };
        let result = match gpu.lock() {
            Ok(mut gpu) => gpu.read_back(pop),
            Err(_) => Err(crate::population::PopulationError::Gpu("the GPU backend was poisoned".into())),
        };
        result.map_err(|source| SimulationError::Population { step: self.steps, time: self.time, source })
    }
}
