//! Why a run stops ([`SimulationError`]: the step, the time and the body, ball
//! or pair at fault) and when it counts as diverged ([`DivergenceLimits`]).

use crate::contact::ContactError;
use crate::integrator::IntegratorError;
use crate::solver::SolverError;

/// Why the simulation stopped.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimulationError {
    /// A body's state became non-finite or its energy ran away.
    #[error("simulation diverged at step {step} (t = {time}): body '{body}': {reason}")]
    Diverged {
        /// Step that produced the bad state.
        step: u64,
        /// Time at the end of that step.
        time: f64,
        /// Name of the offending body.
        body: String,
        /// What was wrong.
        reason: String,
    },
    /// The constraint solver refused its input.
    #[error("step {step} (t = {time}): constraint solver: {source}")]
    Constraints {
        /// Step that failed.
        step: u64,
        /// Time at the start of that step.
        time: f64,
        /// The solver's error.
        source: SolverError,
    },
    /// The field evaluator (the GPU kernel) failed (device lost, out of memory …).
    #[error("step {step} (t = {time}): GPU fields: {message}")]
    Gpu {
        /// Step that failed.
        step: u64,
        /// Time at the start of that step.
        time: f64,
        /// The GPU error.
        message: String,
    },
    /// A contact produced a non-finite number (the bodies are named).
    #[error("step {step} (t = {time}): {source}")]
    Contact {
        /// Step that failed.
        step: u64,
        /// Time at the start of that step.
        time: f64,
        /// The pair and the reason.
        source: ContactError,
    },
    /// The population tier failed (a non-finite ball, the GPU backend).
    #[error("step {step} (t = {time}): population: {source}")]
    Population {
        /// Step that failed.
        step: u64,
        /// Time at the end of that step.
        time: f64,
        /// What went wrong.
        source: crate::population::PopulationError,
    },
    /// The integrator failed.
    #[error("step {step} (t = {time}): {source}")]
    Integrator {
        /// Step that failed.
        step: u64,
        /// Time at the start of that step.
        time: f64,
        /// The integrator's error.
        source: IntegratorError,
    },
}

/// When a run counts as diverged (besides any non-finite number).
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct DivergenceLimits {
    /// Largest kinetic energy a single body may reach (J); `None`: derived at
    /// the first step as 1e12 × (1 J + the initial kinetic + |potential| energy).
    pub max_body_energy: Option<f64>,
}
