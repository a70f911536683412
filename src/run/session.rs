//! One run of a world, headless ([`super::run_scene`]) or in a window
//! ([`crate::render::window`]): the files it writes, the checks after every
//! step that stop a run gone wrong, and the summary at the end — one loop
//! body for both, so a windowed run writes what `--headless` writes and
//! stops where it stops.
//!
//! ```text
//! Session::open      check the outputs, create the files (nothing stepped)
//! Session::begin     project the initial state, record step 0
//! Session::advance   one step, the stop checks, the rows of a recorded step
//! Session::interrupt a signal: the last complete step recorded, then stop
//! Session::finish    the last rows, flush, the summary (and --summary)
//! ```

use std::time::{Duration, Instant};

use super::{RunOptions, RunStop, check_distinct_outputs, planned_steps};
use crate::output::{CsvWriter, ENERGY_HEADER, PopulationSummary, REACTIONS_HEADER, Stopped, Summary, TRACE_HEADER};
use crate::population::{POSITION_RESOLUTION_WARNING, PopulationStats};
use crate::scene::Scene;
use crate::world::{Energy, SimulationError, World};

/// A run in progress: its outputs, its stop checks, its counters.
pub struct Session {
    recorder: Recorder,
    every: u64,
    planned: u64,
    energy_initial: Energy,
    population_initial: Option<PopulationStats>,
    initial_constraint_error: f64,
    constraint_bound: f64,
    /// What `constraint_bound` is, for the stop's message.
    constraint_rule: &'static str,
    overlap_seen: f64,
    last_recorded: Option<u64>,
    stop: Option<RunStop>,
    /// Time spent inside [`advance`](Self::advance) (the summary's `wall_ms`).
    stepping: Duration,
    /// The unsolved-contacts warning was said during the run (once).
    overflow_said: bool,
    /// A warning to say now, during the run ([`take_notice`](Self::take_notice)).
    notice: Option<String>,
    /// Bodies overlapping as placed ([`World::start_overlap`]), for the
    /// run's warnings.
    start_overlap: Option<String>,
}

impl Session {
    /// Checks the options (step count, distinct output files) and creates
    /// the output files for `world`, before anything is stepped.
    pub fn open(scene: &Scene, options: &RunOptions, world: &World) -> anyhow::Result<Session> {
        let planned = planned_steps(scene, options).map_err(anyhow::Error::msg)?;
        check_distinct_outputs(options).map_err(anyhow::Error::msg)?;
        if let Some(limit) = options.max_output {
            let asked = [options.trace.is_some(), options.snapshot.is_some(), options.energy.is_some()];
            let every = options.every.unwrap_or(1).max(1);
            super::output_size::check(world, planned, every, asked, limit)?;
        }
        let open = |p: &Option<std::path::PathBuf>, header: &str| -> anyhow::Result<Option<CsvWriter>> {
            Ok(p.as_ref().map(|p| CsvWriter::create(p, header)).transpose()?)
        };
        let recorder = Recorder {
            trace: open(&options.trace, TRACE_HEADER)?,
            energy: open(&options.energy, ENERGY_HEADER)?,
            reactions: open(&options.reactions, REACTIONS_HEADER)?,
            contacts: open(&options.contacts, crate::output::CONTACTS_HEADER)?,
            snapshot: match (&options.snapshot, &world.population) {
                (Some(p), Some(pop)) => Some(crate::population::snapshot::SnapshotWriter::create(p, pop.len())?),
                (Some(p), None) => anyhow::bail!("--snapshot {}: the scene has no population to record", p.display()),
                (None, _) => None,
            },
            pictures: crate::render::headless::RunPictures::open(
                world,
                &scene.file.name,
                options.frames.as_deref(),
                options.frame_size,
                options.energy_plot.as_deref(),
            )?,
        };
        Ok(Session {
            recorder,
            every: options.every.unwrap_or(1).max(1),
            planned,
            energy_initial: Energy::default(),
            population_initial: None,
            initial_constraint_error: 0.0,
            constraint_bound: f64::INFINITY,
            constraint_rule: "",
            overlap_seen: 0.0,
            last_recorded: None,
            stop: None,
            stepping: Duration::ZERO,
            overflow_said: false,
            notice: None,
            start_overlap: None,
        })
    }

    /// Projects the initial state onto the constraints and records step 0.
    /// An initial state that cannot be projected stops the run like a failed
    /// step (exit 3) at step 0, with the outputs of step 0 kept. Call once,
    /// after the world is on its backends.
    pub fn begin(&mut self, world: &mut World) -> anyhow::Result<()> {
        let prepared = world.prepare();
        self.start_overlap = body_overlap_warning(world);
        self.energy_initial = world.energy();
        self.population_initial = world.population.as_ref().map(|p| p.stats());
        self.overlap_seen = self.population_initial.map_or(0.0, |s| s.max_overlap_ratio);
        self.initial_constraint_error = world.constraint_error();
        // With the projection on, the constraints hold after every step to
        // its tolerance (≤ 1e-12 m on every shipped scene): an error of a
        // thousandth of the scene's extent means the projection could not
        // hold them (before `constraint::raised`, nearly massless rotations in
        // a system too large for the augmented solve left linkage_loops 19.5 m
        // apart, issue 10), and the
        // run stops rather than write a mechanism that is not one. Without
        // the projection the drift is a fraction of the extent, and only
        // past 1000 × the extent does a joint no longer mean anything.
        let extent = world.extent();
        let projected = world.stabilization.projection && !world.constraints.is_empty();
        (self.constraint_bound, self.constraint_rule) = if projected {
            (1e-3 * extent, "a thousandth of the scene's extent: the projection did not hold the constraints")
        } else {
            (1e3 * extent, "1000 × the scene's extent")
        };
        self.stop = prepared.err().map(RunStop::from);
        let recorded = self.record(world)?;
        if self.stop.is_none() {
            self.stop = recorded.err();
        }
        if self.stop.is_none() {
            self.stop = energy_check(world, self.energy_initial);
        }
        Ok(())
    }

    /// The number of steps the run takes unless it stops.
    pub fn planned_steps(&self) -> u64 {
        self.planned
    }

    /// Why the run stopped early, if it did.
    pub fn stopped(&self) -> Option<&RunStop> {
        self.stop.as_ref()
    }

    /// Whether no step is left: stopped, or the planned steps taken.
    pub fn is_over(&self, world: &World) -> bool {
        self.stop.is_some() || world.step_count() >= self.planned
    }

    /// One step, the checks that stop a diverging run (a failed step, a
    /// non-finite energy, a constraint error past the bound), and the rows
    /// of a recorded step (every K-th and the last). A stopped run records
    /// the state that went wrong: it shows what happened. The error is an
    /// output error (naming the file); a stop is kept in
    /// [`stopped`](Self::stopped).
    pub fn advance(&mut self, world: &mut World) -> anyhow::Result<()> {
        if self.is_over(world) {
            return Ok(());
        }
        let started = Instant::now();
        let result = self.advance_inner(world);
        self.stepping += started.elapsed();
        result
    }

    fn advance_inner(&mut self, world: &mut World) -> anyhow::Result<()> {
        let stepped = world.step().map_err(RunStop::from).and_then(|()| self.check(world));
        if let Err(stop) = stepped {
            self.stop = Some(stop);
            // reactions may no longer be computable: keep the rest
            let _ = world.sync_population();
            self.record(world)?.ok();
            return Ok(());
        }
        let k = world.step_count();
        self.notice_overflow(world);
        if k.is_multiple_of(self.every) || k >= self.planned {
            if world.population.is_some()
                && (self.recorder.trace.is_some() || self.recorder.energy.is_some() || self.recorder.snapshot.is_some())
            {
                if let Err(e) = world.sync_population() {
                    self.stop = Some(e.into());
                    return Ok(());
                }
                if let Some(pop) = &world.population {
                    self.overlap_seen = self.overlap_seen.max(pop.stats().max_overlap_ratio);
                }
            }
            if let Err(stop) = self.record(world)? {
                self.stop = Some(stop);
            }
        }
        Ok(())
    }

    /// Contacts left unsolved because a ball's list was full are said when
    /// first seen, not only in the summary at the end: a vortex's attractor
    /// that piles 10⁵ balls onto one point ran at 0.3 s a step with 7e8
    /// candidates left out and said nothing until it ended. Seen at once on
    /// the CPU twin; on the GPU at the first readback after it happened (the
    /// counter lives on the device).
    fn notice_overflow(&mut self, world: &World) {
        let Some(pop) = &world.population else { return };
        if self.overflow_said || pop.list_overflow == 0 {
            return;
        }
        self.overflow_said = true;
        self.notice = Some(format!(
            "warning: step {}: population: {} neighbour or obstacle candidates did not fit a ball's list and their contacts were not solved (balls piled closer than touching); said once, the summary counts them over the run",
            world.step_count(),
            pop.list_overflow
        ));
    }

    /// A warning to say on the console now, while the run goes on (taken:
    /// said once).
    pub fn take_notice(&mut self) -> Option<String> {
        self.notice.take()
    }

    fn check(&self, world: &World) -> Result<(), RunStop> {
        if let Some(stop) = energy_check(world, self.energy_initial) {
            return Err(stop);
        }
        let e = world.max_constraint_error();
        if e.is_nan() || e > self.constraint_bound {
            return Err(RunStop::ConstraintError {
                step: world.step_count(),
                time: world.time(),
                error: e,
                bound: self.constraint_bound,
                rule: self.constraint_rule,
            });
        }
        Ok(())
    }

    /// A signal asked the run to stop: the last complete step is recorded
    /// (unless it just was) and the run is over.
    pub fn interrupt(&mut self, world: &mut World, signal: usize) -> anyhow::Result<()> {
        if self.last_recorded != Some(world.step_count()) {
            self.record(world)?.ok();
        }
        self.stop = Some(RunStop::Signal { step: world.step_count(), time: world.time(), signal });
        Ok(())
    }

    /// Ends the run: the last step taken is recorded if it was not (a window
    /// closed early), the files are flushed, the summary is built (and
    /// written to `--summary`). `adapter` names the GPU used, if any.
    pub fn finish(
        mut self,
        scene: &Scene,
        options: &RunOptions,
        world: &mut World,
        adapter: String,
    ) -> anyhow::Result<(Summary, Option<RunStop>)> {
        // The GPU runs behind the host: the steps are timed up to the
        // completion of the last one (counted in `step_population` too).
        let mut error = self.stop.take();
        match world.finish_population_steps() {
            Ok(waited) => self.stepping += waited,
            Err(e) => {
                error.get_or_insert(e.into());
            }
        }
        if self.last_recorded != Some(world.step_count()) {
            let _ = world.sync_population();
            self.record(world)?.ok();
        }
        self.recorder.flush()?;
        if let Err(e) = world.sync_population() {
            error.get_or_insert(e.into());
        }
        let wall_ms = self.stepping.as_secs_f64() * 1e3;
        let taken = world.step_count();
        let population = match (&world.population, self.population_initial) {
            (Some(pop), Some(initial)) => {
                let last = pop.stats();
                let stage = world.stage_times().get(crate::world::Stage::StepPopulation).as_secs_f64() * 1e3;
                Some(PopulationSummary {
                    balls: pop.len(),
                    backend: world.population_backend().into(),
                    ms_per_step: if taken > 0 { stage / taken as f64 } else { 0.0 },
                    stage_ms_per_step: pop
                        .stage_times
                        .ms_per_step()
                        .into_iter()
                        .map(|(name, ms)| (name.to_string(), ms))
                        .collect(),
                    stage_timing: pop.stage_times.timing.describe().to_string(),
                    stage_timed_steps: pop.stage_times.timed_steps,
                    substeps: pop.params.substeps,
                    iterations: pop.params.iterations,
                    initial,
                    last,
                    escaped: last.escaped,
                    asleep: last.asleep,
                    kinetic_per_ball: last.kinetic_per_ball,
                    max_overlap_ratio: last.max_overlap_ratio,
                    // The step's own reduction over every substep, and the
                    // recorded samples (the initial state, the end).
                    max_overlap_ratio_seen: self
                        .overlap_seen
                        .max(last.max_overlap_ratio)
                        .max(f64::from(pop.max_overlap_seen)),
                })
            }
            _ => None,
        };
        self.recorder.pictures.finish()?;
        let energy_final = world.energy();
        let stats = world.integrator_stats();
        let summary = Summary {
            scene: scene.file.name.clone(),
            integrator: world.integrator().name().to_string(),
            bodies: world.bodies.len(),
            steps: taken,
            substeps: stats.steps,
            rejected_steps: stats.rejected,
            newton_iterations: stats.newton_iterations,
            jacobians: stats.jacobians,
            tolerance: world.tolerance(),
            dt: world.dt,
            t_final: world.time(),
            wall_ms,
            ms_per_step: if taken > 0 { wall_ms / taken as f64 } else { 0.0 },
            energy_initial: self.energy_initial.total,
            energy_final: energy_final.total,
            work_nonconservative: energy_final.work,
            energy_balance_error: (energy_final.balance() - self.energy_initial.balance()).abs(),
            max_constraint_error: world.max_constraint_error().max(self.initial_constraint_error),
            max_penetration: world.contacts.max_penetration(),
            backend: if world.population.is_some() { world.population_backend() } else { world.field_backend() }.into(),
            adapter,
            stage_ms: world
                .stage_times()
                .as_list()
                .iter()
                .map(|(n, d)| (n.to_string(), d.as_secs_f64() * 1e3))
                .collect(),
            stopped: error.as_ref().map(|e| Stopped {
                step: e.step(),
                body: match e {
                    RunStop::Simulation(SimulationError::Diverged { body, .. }) => Some(body.clone()),
                    _ => None,
                },
                message: e.to_string(),
            }),
            warnings: self
                .start_overlap
                .iter()
                .chain(world.warnings())
                .cloned()
                .chain(population.as_ref().and_then(|p| {
                    let resolution = world.population.as_ref().map_or(0.0, |pop| pop.position_resolution);
                    population_warnings(&p.initial, &p.last, resolution)
                }))
                .collect(),
            population,
        };
        if let Some(p) = &options.summary {
            summary.write(p)?;
        }
        Ok((summary, error))
    }

    /// Writes the rows of the world's current step to every open file. The
    /// outer error is an output error; the inner one a reaction that cannot
    /// be computed, which stops the run like a step.
    fn record(&mut self, world: &mut World) -> anyhow::Result<Result<(), RunStop>> {
        self.last_recorded = Some(world.step_count());
        self.recorder.record(world)
    }
}

/// A stop when the energy or the work is no longer finite (a body at 1e308
/// under gravity, a force applied at an absurd point): the numbers reported
/// would be meaningless.
fn energy_check(world: &World, initial: Energy) -> Option<RunStop> {
    let e = world.energy();
    let (step, time) = (world.step_count(), world.time());
    if !initial.total.is_finite() || !e.total.is_finite() {
        let value = if initial.total.is_finite() { e.total } else { initial.total };
        return Some(RunStop::NonFiniteEnergy { step, time, what: "energy", value });
    }
    (!e.work.is_finite()).then_some(RunStop::NonFiniteEnergy {
        step,
        time,
        what: "non-conservative work",
        value: e.work,
    })
}

/// The outputs of a run, each optional.
struct Recorder {
    trace: Option<CsvWriter>,
    energy: Option<CsvWriter>,
    reactions: Option<CsvWriter>,
    contacts: Option<CsvWriter>,
    /// `--snapshot`: binary population frames.
    snapshot: Option<crate::population::snapshot::SnapshotWriter>,
    /// `--frames` and `--energy-plot` (src/render/headless.rs).
    pictures: crate::render::headless::RunPictures,
}

impl Recorder {
    fn record(&mut self, world: &mut World) -> anyhow::Result<Result<(), RunStop>> {
        if let Some(t) = &mut self.trace {
            t.trace_rows(world)?;
        }
        if let Some(e) = &mut self.energy {
            let error = world.constraint_error();
            e.energy_row(world, error)?;
        }
        if let Some(r) = &mut self.reactions {
            match world.reactions() {
                Ok(reactions) => r.reaction_rows(world, &reactions)?,
                Err(source) => {
                    let (step, time) = (world.step_count(), world.time());
                    return Ok(Err(SimulationError::Constraints { step, time, source }.into()));
                }
            }
        }
        if let Some(c) = &mut self.contacts {
            c.contact_rows(world)?;
        }
        if let (Some(s), Some(pop)) = (&mut self.snapshot, &world.population) {
            s.frame(world.step_count(), world.time(), pop)?;
        }
        self.pictures.record(world)?;
        Ok(Ok(()))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        for w in [&mut self.trace, &mut self.energy, &mut self.reactions, &mut self.contacts].into_iter().flatten() {
            w.flush()?;
        }
        if let Some(s) = &mut self.snapshot {
            s.flush()?;
        }
        Ok(())
    }
}

/// What went wrong in the population without stopping the run, said on the
/// console and in the summary's `warnings` (the figures alone sit in the
/// JSON, where a user who did not ask for it never sees them): balls that
/// started overlapping ([`start_overlap_warning`]), a world too far out for
/// f32 positions ([`resolution_warning`]), contacts that did not fit a
/// ball's list were not solved, and balls that left the world are gone.
/// `None` when none happened (the shipped scenes).
fn population_warnings(initial: &PopulationStats, last: &PopulationStats, resolution: f64) -> Option<String> {
    let mut parts: Vec<String> = start_overlap_warning(initial).into_iter().collect();
    parts.extend(resolution_warning(resolution));
    if last.list_overflow > 0 {
        parts.push(format!(
            "{} neighbour or obstacle candidates did not fit a ball's list (at most {} neighbours and {} obstacles a ball) and their contacts were not solved: balls packed closer than touching (a spawner's spacing under 2 r) or a `skin` of several radii fill the lists",
            last.list_overflow,
            crate::population::MAX_NEIGHBOURS,
            crate::population::MAX_OBSTACLES
        ));
    }
    if last.escaped > 0 {
        parts.push(format!("{} balls left the world (`population.bounds`) and were removed", last.escaped));
    }
    (!parts.is_empty()).then(|| format!("population: {}", parts.join("; ")))
}

/// The warning for a world whose farthest coordinate puts f32 positions
/// more than [`POSITION_RESOLUTION_WARNING`] of the smallest radius apart
/// (`resolution`: [`crate::population::Population::position_resolution`]): slow motions and
/// small overlaps round away there. `None` below it. Said by `mx2d check`
/// too.
pub fn resolution_warning(resolution: f64) -> Option<String> {
    (resolution > POSITION_RESOLUTION_WARNING).then(|| {
        format!(
            "the world reaches so far from the origin that f32 positions there are {:.2} % of the smallest radius apart (over {:.2} %): slow motions and small overlaps round away; bring the scene nearer the origin",
            100.0 * resolution,
            100.0 * POSITION_RESOLUTION_WARNING
        )
    })
}

/// Overlap of two bodies (or a body and a surface) as placed, over the
/// smaller one's bounding radius, above which `mx2d check` and the run say
/// so: twice the default contact slop (0.5 % of the smallest dynamic
/// body's radius), so that bodies resting as a run left them (sunk by up to
/// the slop) are not said; the shipped scenes place their bodies touching
/// at the closest (a stack or pyramid: 0 up to rounding).
pub const START_OVERLAP_BODIES: f64 = 1e-2;

/// The warning for bodies that overlap as placed, naming the deepest pair:
/// the contacts push them apart in the first steps, which gives them energy
/// a user who meant them touching does not expect. `None` below
/// [`START_OVERLAP_BODIES`] or without contacts. Said by `mx2d check` too.
pub fn body_overlap_warning(world: &World) -> Option<String> {
    let o = world.start_overlap()?;
    (o.ratio > START_OVERLAP_BODIES).then(|| {
        format!(
            "bodies start overlapping: {} and {} by {:.1} % of the smaller one's bounding radius (the deepest pair; a generator's spacing closer than the bodies' size, or bodies listed inside each other): the first steps push them apart, with the energy that takes",
            o.body,
            o.partner,
            100.0 * o.ratio
        )
    })
}

/// Overlap at the start, as a fraction of r, above which the spawn is said
/// to overlap: the generators place balls touching at the closest (a grid
/// of spacing 2 r, a random box without overlap: 0 up to the f32 rounding
/// of the centres, ~1e-7 of r), so anything past 1e-3 of r is a spawner
/// packed closer than touching.
pub const START_OVERLAP: f64 = 1e-3;

/// The warning for balls that start overlapping (a `Grid` spawner's
/// `spacing` under 2 r): the first steps push the overlaps apart at the
/// bounded rate (`push_out`), which a user who meant a resting lattice does
/// not expect. `None` below [`START_OVERLAP`]. Said by `mx2d check` too.
pub fn start_overlap_warning(initial: &PopulationStats) -> Option<String> {
    (initial.max_overlap_ratio > START_OVERLAP).then(|| {
        format!(
            "balls start overlapping by up to {:.1} % of r (a spawner packed closer than touching, e.g. a Grid's spacing under 2 r): the first steps push them apart",
            100.0 * initial.max_overlap_ratio
        )
    })
}
