//! `--trace` / `--energy` written by a windowed run at the fixed step, the
//! same bytes as `mx2d run --headless` writes (tested byte for byte).

use std::path::PathBuf;

use crate::output::{CsvWriter, ENERGY_HEADER, TRACE_HEADER};
use crate::run::RunOptions;
use crate::scene::Scene;
use crate::world::World;

/// The files a windowed run writes, as `mx2d run --headless` writes them.
pub(super) struct Recording {
    trace: Option<CsvWriter>,
    energy: Option<CsvWriter>,
    every: u64,
    /// The run's step count.
    pub(super) steps: u64,
    /// Step of the last rows written.
    last_recorded: Option<u64>,
    pub(super) done: bool,
}

impl Recording {
    /// `None` when nothing is to be written.
    pub(super) fn open(scene: &Scene, options: &RunOptions) -> anyhow::Result<Option<Self>> {
        if options.trace.is_none() && options.energy.is_none() {
            return Ok(None);
        }
        let steps = crate::run::planned_steps(scene, options).map_err(anyhow::Error::msg)?;
        crate::run::check_distinct_outputs(options).map_err(anyhow::Error::msg)?;
        let open = |p: &Option<PathBuf>, header: &str| -> anyhow::Result<Option<CsvWriter>> {
            Ok(p.as_ref().map(|p| CsvWriter::create(p, header)).transpose()?)
        };
        Ok(Some(Self {
            trace: open(&options.trace, TRACE_HEADER)?,
            energy: open(&options.energy, ENERGY_HEADER)?,
            every: options.every.unwrap_or(1).max(1),
            steps,
            last_recorded: None,
            done: false,
        }))
    }

    /// Writes the rows of the world's current step (reading the balls back
    /// from the GPU backend first: only at recorded steps).
    pub(super) fn record(&mut self, world: &mut World) -> anyhow::Result<()> {
        if world.population.is_some() {
            world.sync_population()?;
        }
        if let Some(t) = &mut self.trace {
            t.trace_rows(world)?;
        }
        if let Some(e) = &mut self.energy {
            let error = world.constraint_error();
            e.energy_row(world, error)?;
        }
        self.last_recorded = Some(world.step_count());
        Ok(())
    }

    /// After a step: record it when it is a recorded one; the last ends the run.
    pub(super) fn stepped(&mut self, world: &mut World) -> anyhow::Result<()> {
        let k = world.step_count();
        if k.is_multiple_of(self.every) || k >= self.steps {
            self.record(world)?;
        }
        if k >= self.steps {
            self.done = true;
        }
        Ok(())
    }

    /// At exit: the last step taken, if not written yet, then flush.
    pub(super) fn close(&mut self, world: &mut World) -> anyhow::Result<()> {
        if self.last_recorded != Some(world.step_count()) {
            self.record(world)?;
        }
        for w in [&mut self.trace, &mut self.energy].into_iter().flatten() {
            w.flush()?;
        }
        Ok(())
    }
}
