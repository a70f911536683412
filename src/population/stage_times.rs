//! Time per stage of the population step, on either backend, for the run
//! summary (issue 8: "ms/step in total and per stage").
//!
//! The stages are those of `mx2d bench --scene NAME --passes` (the GPU
//! step's passes, [`crate::population::gpu::GpuPopulation::step_profiled`]):
//! `release`, `resort`, `fields`, `grid`, `neighbours`, then per substep
//! `stabilise`, `predict`, `solve`, `velocities`, and last `bounds`.
//!
//! - **CPU twin**: the thread that starts the step reads the clock at each
//!   stage boundary (`StageClock::lap`); inside the substeps' team loop it
//!   first waits for the stage's last phase to complete (the wait its next
//!   phase would make anyway), so a stage's time is its wall time on the
//!   whole team, every thread's chunks included. About 4 clock reads per
//!   substep and 7 per step (≈ 70 at 16 substeps, ≈ 2 µs against a step of
//!   ≈ 30 ms of CPU at 10⁴ balls): no timer per ball or per chunk. Measured,
//!   balls_box 10⁴, 150 steps, 2 threads, 5 pairs alternated with main's
//!   binary (27 Nov 2026 20:26–20:31 UTC, load 4.9–7.2): process CPU 4.44 s
//!   before, 4.11 s with the timers (medians; pairs differ by ±10 % both
//!   ways), population wall 39.7 → 38.7 ms/step — no cost above the noise.
//! - **GPU**: timestamp queries around one pass per stage, resolved in the
//!   step's own submission into a slot of a buffer that is read with the
//!   balls (a readback the run makes anyway, never inside a step); see
//!   [`crate::population::gpu`]. An adapter without timestamp queries has
//!   no per-stage times: the summary says so. Cost on lavapipe, balls_box
//!   10³, 40 steps, 7 pairs alternated with main's binary (27 Nov 2026
//!   20:43–20:46 UTC, load 3.6–4.6): population wall 41.3 → 38.5 ms/step
//!   (medians; noise ±15 %), process CPU 2.15 → 2.23 s (+4 %: the
//!   timestamps and ~70 passes a step instead of one). On an NVIDIA H200 at
//!   10⁶ balls a timed step costs 5.7 % more (`mx2d bench --scene
//!   balls_box --passes`: 13.62 against 12.89 ms/step), so only one step
//!   in [`crate::gpu::timing::TIMED_STEP_STRIDE`] (8) is timed.
//!
//! What each CPU stage holds (the GPU's passes of the same name hold the
//! same work): `release` the hand-over of the step to the rayon pool (when
//! called from outside it), the scratch sizing and the release of pending
//! balls, `grid` the cell sort, `neighbours` the neighbour lists, the pair
//! ownership and the sweep order, `predict` the prediction and the contact
//! count, `velocities` the pairs' impulses and the substep's finish,
//! `bounds` the bounds check and the return from the pool.

use std::time::{Duration, Instant};

/// The stages in step order (the names `mx2d bench --scene --passes` prints).
pub const STAGE_NAMES: [&str; 10] =
    ["release", "resort", "fields", "grid", "neighbours", "stabilise", "predict", "solve", "velocities", "bounds"];

/// One stage of the population step (see the module documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PopulationStage {
    /// Pending balls enter the world (and the CPU twin sizes its scratch).
    Release,
    /// The periodic re-sort of the balls by cell.
    Resort,
    /// Gravity and the force fields.
    Fields,
    /// The cell sort.
    Grid,
    /// The neighbour lists (and on the CPU the pairs' order).
    Neighbours,
    /// The stabilisation sweep of a stabilising substep.
    Stabilise,
    /// Prediction and contact count.
    Predict,
    /// The position solve's colour sweeps.
    Solve,
    /// Velocities and the substep's finish.
    Velocities,
    /// The bounds check.
    Bounds,
}

impl PopulationStage {
    /// The stage's name (one of [`STAGE_NAMES`]).
    pub fn name(self) -> &'static str {
        STAGE_NAMES[self as usize]
    }
}

/// How the stage times of a population were measured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum StageTiming {
    /// The CPU twin's clock at each stage boundary, every step.
    #[default]
    CpuClock,
    /// GPU timestamp queries around one pass per stage.
    GpuTimestamps,
    /// On the GPU, untimed: the adapter has no timestamp queries.
    GpuNoTimestamps,
    /// On the GPU, untimed: stage timing was not asked for
    /// ([`crate::population::gpu::GpuPopulation::time_stages`]).
    GpuNotAsked,
}

impl StageTiming {
    /// What the summary says about the stage times.
    pub fn describe(self) -> &'static str {
        match self {
            StageTiming::CpuClock => "cpu clock at each stage boundary (the stepping thread, every step)",
            StageTiming::GpuTimestamps => "gpu timestamp queries, one pass per stage",
            StageTiming::GpuNoTimestamps => {
                "none: the adapter has no timestamp queries; only the total (host wall clock, submission to completion) is measured"
            }
            StageTiming::GpuNotAsked => "none: stage timing was not enabled; only the total is measured",
        }
    }
}

/// Time per stage summed over the timed steps.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct PopulationStageTimes {
    /// How the times were measured.
    pub timing: StageTiming,
    /// Time of each stage, indexed by [`PopulationStage`].
    totals: [Duration; STAGE_NAMES.len()],
    /// Whether the stage ran at least once (a re-sort may never run).
    ran: [bool; STAGE_NAMES.len()],
    /// Steps whose stages are counted.
    pub timed_steps: u64,
}

impl PopulationStageTimes {
    /// Adds `time` to the stage named `name`; a name that is no stage is
    /// ignored (and reported false).
    pub fn add_named(&mut self, name: &str, time: Duration) -> bool {
        match STAGE_NAMES.iter().position(|&n| n == name) {
            Some(k) => {
                self.totals[k] += time;
                self.ran[k] = true;
                true
            }
            None => false,
        }
    }

    /// Adds `time` to `stage`.
    pub fn add(&mut self, stage: PopulationStage, time: Duration) {
        self.totals[stage as usize] += time;
        self.ran[stage as usize] = true;
    }

    /// The total of `stage` over the timed steps.
    pub fn total(&self, stage: PopulationStage) -> Duration {
        self.totals[stage as usize]
    }

    /// Mean milliseconds per timed step of each stage that ran, in step order.
    pub fn ms_per_step(&self) -> Vec<(&'static str, f64)> {
        let steps = self.timed_steps.max(1) as f64;
        STAGE_NAMES
            .iter()
            .zip(self.totals.iter().zip(self.ran))
            .filter(|&(_, (_, ran))| ran)
            .map(|(&name, (t, _))| (name, t.as_secs_f64() * 1e3 / steps))
            .collect()
    }
}

/// The clock of one CPU step: each [`lap`](Self::lap) charges the time since
/// the previous one to a stage.
pub(crate) struct StageClock {
    last: Instant,
    /// The stage times being added to.
    pub(crate) times: PopulationStageTimes,
}

impl StageClock {
    /// A clock started now, adding to `times`.
    pub(crate) fn start(times: PopulationStageTimes) -> Self {
        Self { last: Instant::now(), times }
    }

    /// Charges the time since the last lap to `stage`.
    pub(crate) fn lap(&mut self, stage: PopulationStage) {
        let now = Instant::now();
        self.times.add(stage, now - self.last);
        self.last = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stage_times_are_means_per_timed_step_in_step_order_for_the_stages_that_ran() {
        let mut t = PopulationStageTimes::default();
        t.add(PopulationStage::Solve, Duration::from_millis(6));
        t.add(PopulationStage::Release, Duration::from_millis(2));
        assert!(t.add_named("solve", Duration::from_millis(2)));
        assert!(!t.add_named("nonsense", Duration::from_millis(2)));
        t.timed_steps = 2;
        assert_eq!(t.ms_per_step(), vec![("release", 1.0), ("solve", 4.0)]);
        assert_eq!(PopulationStage::Bounds.name(), "bounds");
        assert_eq!(PopulationStage::Resort.name(), "resort");
    }
}
