//! The seam between the world and a population backend other than the CPU
//! twin: the world steps its population through [`PopulationBackend`]
//! (the GPU's is [`GpuPopulation`](super::gpu::GpuPopulation)), so that
//! `src/world/` names no device API. Without a backend the world runs the
//! twin, [`cpu::step`](super::cpu::step), itself.

use super::{Population, PopulationError};

/// Something that steps a [`Population`] in place of the CPU twin. It may run
/// behind the host (the GPU queues its steps): the host-side population keeps
/// the parameters, the obstacles and the step count, and its balls are stale
/// until [`read_back`](Self::read_back).
pub trait PopulationBackend: std::fmt::Debug + Send {
    /// Submits one step of `dt` of `pop` (no wait, no readback).
    fn step(&mut self, pop: &mut Population, dt: f32) -> Result<(), PopulationError>;
    /// Waits until every submitted step has finished (no readback).
    fn wait(&self) -> Result<(), PopulationError>;
    /// Waits for the submitted steps and copies the balls into `pop`; a
    /// non-finite ball stops the run with its index.
    fn read_back(&mut self, pop: &mut Population) -> Result<(), PopulationError>;
    /// Where the steps run, as summaries report it (`"gpu"`).
    fn backend(&self) -> &'static str;
}
