//! The population stage of [`World::step`]: the bodies become the balls'
//! moving obstacles at their new pose, then one population step on the CPU
//! twin or on the [`PopulationBackend`] the world was given; and the calls
//! that reach that backend between steps (wait, read back).

use std::time::{Duration, Instant};

use super::{Shared, SimulationError, Stage, World};
use crate::population::{PopulationBackend, PopulationError};

/// The lock of backend `backend`, poisoned by an earlier panic, as a
/// population error.
fn poisoned(backend: &'static str) -> PopulationError {
    PopulationError::Poisoned { backend }
}

impl World {
    /// The population stage: bodies become obstacles at their new pose, then
    /// one population step on the CPU twin or the world's backend.
    pub(super) fn step_population(&mut self) -> Result<(), SimulationError> {
        let Some(pop) = self.population.as_mut() else {
            return Ok(());
        };
        if !self.bodies.is_empty() {
            pop.set_body_obstacles(self.bodies.as_slice());
        }
        let dt = self.dt as f32;
        let result = match &self.population_backend {
            None => crate::population::cpu::step(pop, dt),
            Some(backend) => backend.lock().map_err(|_| poisoned(backend.name)).and_then(|mut b| b.step(pop, dt)),
        };
        result.map_err(|source| SimulationError::Population { step: self.steps, time: self.time, source })
    }

    /// Steps the population on `backend` from now on (the GPU's:
    /// [`GpuPopulation`](crate::population::gpu::GpuPopulation)), or on the
    /// CPU twin again with `None`, after reading the balls back from the
    /// backend it replaces. Clones of the world share it.
    pub fn set_population_backend(
        &mut self,
        backend: Option<Box<dyn PopulationBackend>>,
    ) -> Result<(), SimulationError> {
        self.sync_population()?;
        self.population_backend = backend.map(|b| Shared::new(b.backend(), b));
        Ok(())
    }

    /// Where the population steps: its backend's name (`"gpu"`), else `"cpu"`.
    pub fn population_backend(&self) -> &'static str {
        self.population_backend.as_ref().map_or("cpu", |b| b.name)
    }

    /// Waits until the backend has finished the population steps submitted
    /// so far and counts the wait in the `step_population` stage: the GPU
    /// runs behind the host, so its steps' time is known only once the last
    /// one completed. Nothing to do on the CPU twin. Returns the wait.
    pub fn finish_population_steps(&mut self) -> Result<Duration, SimulationError> {
        let Some(backend) = &self.population_backend else {
            return Ok(Duration::ZERO);
        };
        let started = Instant::now();
        let result = backend.lock().map_err(|_| poisoned(backend.name)).and_then(|b| b.wait());
        let waited = started.elapsed();
        self.times.add(Stage::StepPopulation, waited);
        result.map(|()| waited).map_err(|source| SimulationError::Population {
            step: self.steps,
            time: self.time,
            source,
        })
    }

    /// Brings the backend's balls into [`World::population`] (a readback;
    /// nothing to do on the CPU twin). Call before reading the balls.
    pub fn sync_population(&mut self) -> Result<(), SimulationError> {
        let (Some(pop), Some(backend)) = (self.population.as_mut(), &self.population_backend) else {
            return Ok(());
        };
        let result = backend.lock().map_err(|_| poisoned(backend.name)).and_then(|mut b| b.read_back(pop));
        result.map_err(|source| SimulationError::Population { step: self.steps, time: self.time, source })
    }
}
