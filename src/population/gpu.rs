//! The GPU backend of the population tier (`shaders/population.wgsl`).

use super::{Population, PopulationError};

/// The population's resident GPU buffers and pipelines.
#[derive(Debug)]
pub struct GpuPopulation {}

impl GpuPopulation {
    /// One population step on the GPU.
    pub fn step(&mut self, _pop: &mut Population, _dt: f32) -> Result<(), PopulationError> {
        Err(PopulationError::Gpu("not built yet".into()))
    }

    /// Reads the balls back into `pop`.
    pub fn read_back(&mut self, _pop: &mut Population) -> Result<(), PopulationError> {
        Ok(())
    }
}
