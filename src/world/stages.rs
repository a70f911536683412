//! The named stages of [`World::step`](super::World::step) and the time spent
//! in each: one variant per stage, one timed call per stage in the step.

use std::time::{Duration, Instant};

/// The stages of [`World::step`](super::World::step), in step order. Adding a stage is one variant
/// here, one name in [`Stage::name`] and one timed call in the step: the
/// summary's `stage_ms` lists every variant in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// Copying body states into the integrator.
    GatherState,
    /// Gravity and force fields (inside every acceleration evaluation).
    ApplyFields,
    /// Applied loads, and the division by the mass.
    ApplyLoads,
    /// Constraint assembly and solve for λ.
    SolveConstraints,
    /// The integrator's own arithmetic (total integrate time minus the force
    /// evaluations above).
    Integrate,
    /// Candidate contact pairs from the swept boxes.
    Broadphase,
    /// Time of impact inside the step and the impact impulses there.
    Impacts,
    /// Contact points at the end of the step.
    Narrowphase,
    /// Resting/sliding contact: PGS with friction and the position update.
    ContactSolve,
    /// Overlap beyond the slop projected out on the exact gaps
    /// (`src/contact/projection.rs`: its broadphase, narrowphase rounds and
    /// position PGS).
    ProjectPenetration,
    /// Projection of positions and velocities onto the constraints.
    CorrectDrift,
    /// Copying states back into the bodies.
    ScatterState,
    /// The divergence check.
    CheckDivergence,
    /// The population tier's whole step (fields, grid, contacts, bounds).
    StepPopulation,
}

impl Stage {
    /// Every stage, in step order.
    pub const ALL: [Stage; 14] = [
        Stage::GatherState,
        Stage::ApplyFields,
        Stage::ApplyLoads,
        Stage::SolveConstraints,
        Stage::Integrate,
        Stage::Broadphase,
        Stage::Impacts,
        Stage::Narrowphase,
        Stage::ContactSolve,
        Stage::ProjectPenetration,
        Stage::CorrectDrift,
        Stage::ScatterState,
        Stage::CheckDivergence,
        Stage::StepPopulation,
    ];

    /// The stage's name in the summary's `stage_ms`.
    pub fn name(self) -> &'static str {
        match self {
            Stage::GatherState => "gather_state",
            Stage::ApplyFields => "apply_fields",
            Stage::ApplyLoads => "apply_loads",
            Stage::SolveConstraints => "solve_constraints",
            Stage::Integrate => "integrate",
            Stage::Broadphase => "broadphase",
            Stage::Impacts => "impacts",
            Stage::Narrowphase => "narrowphase",
            Stage::ContactSolve => "contact_solve",
            Stage::ProjectPenetration => "project_penetration",
            Stage::CorrectDrift => "correct_drift",
            Stage::ScatterState => "scatter_state",
            Stage::CheckDivergence => "check_divergence",
            Stage::StepPopulation => "step_population",
        }
    }
}

/// Wall time spent in each [`Stage`] since the world was made.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StageTimes([Duration; Stage::ALL.len()]);

impl StageTimes {
    /// Time spent in one stage.
    pub fn get(&self, stage: Stage) -> Duration {
        self.0[stage as usize]
    }

    /// Adds time to one stage.
    pub fn add(&mut self, stage: Stage, d: Duration) {
        self.0[stage as usize] += d;
    }

    /// Runs `f`, charging its wall time to `stage`.
    pub fn timed<T>(&mut self, stage: Stage, f: impl FnOnce() -> T) -> T {
        let started = Instant::now();
        let out = f();
        self.add(stage, started.elapsed());
        out
    }

    /// (stage name, time) in step order.
    pub fn as_list(&self) -> Vec<(&'static str, Duration)> {
        Stage::ALL.iter().map(|&s| (s.name(), self.get(s))).collect()
    }
}
