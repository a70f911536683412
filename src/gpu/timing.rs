//! Per-pass GPU timing: one timestamp pair around each compute pass of a
//! kernel, so that the slow pass of a multi-pass kernel is visible on any
//! adapter (issue 13).
//!
//! A kernel that can be profiled records each of its passes through a
//! [`PassProfiler`]: [`PassProfiler::writes`] gives the timestamp writes of
//! the next named pass, and [`PassProfiler::end_pass`] closes it. With
//! timestamp queries (`Features::TIMESTAMP_QUERY`) the passes all go into one
//! submission and the GPU's own clock times each of them. Without them the
//! profiler falls back to the host's wall clock and says so
//! ([`TimingSource::Wall`]): each pass is then submitted on its own and waited
//! for, which adds a submission and a wait to every pass, so such figures are
//! an upper bound for the pass, not its kernel time.
//!
//! A disabled profiler ([`PassProfiler::disabled`]) records nothing and
//! splits nothing: the production path pays for no query.
//!
//! A run's own steps are timed by a [`StepStageRecorder`] (issue 8, the
//! summary's per-stage times): the same profiler with timestamps, its ticks
//! copied by each step's submission into a slot of a buffer that is read
//! only when the caller reads back anyway — never a wait inside a step.

use super::context::{GpuContext, GpuError, TimingSource};
use std::time::Instant;

/// Most passes one profiled submission can time (the population step's
/// stages: about 4 per substep, 16 substeps and the step's own).
pub const MAX_PASSES: u32 = 128;

/// The time of one compute pass.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct PassTime {
    /// The pass, e.g. "count_cells" or "scan".
    pub name: &'static str,
    /// Milliseconds.
    pub ms: f64,
}

/// The passes of one profiled run, in submission order.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct PassTimings {
    /// Each pass and its time.
    pub passes: Vec<PassTime>,
    /// How they were measured (`None` when nothing was recorded).
    pub source: Option<TimingSource>,
}

impl PassTimings {
    /// Sum of the pass times (ms).
    pub fn total_ms(&self) -> f64 {
        self.passes.iter().map(|p| p.ms).sum()
    }

    /// The time of the pass named `name` (ms), summed if it ran more than once.
    pub fn ms(&self, name: &str) -> Option<f64> {
        let mut found = None;
        for p in self.passes.iter().filter(|p| p.name == name) {
            *found.get_or_insert(0.0) += p.ms;
        }
        found
    }
}

/// Adds each pass's time to the entry of its name in `totals`, appending
/// a name met for the first time (so `totals` keeps first-run order): the
/// stages of a step that run once per substep, or of several steps.
pub fn add_by_name(totals: &mut Vec<PassTime>, passes: impl IntoIterator<Item = PassTime>) {
    for pass in passes {
        match totals.iter_mut().find(|p| p.name == pass.name) {
            Some(p) => p.ms += pass.ms,
            None => totals.push(pass),
        }
    }
}

enum Mode {
    Off,
    Timestamps { set: wgpu::QuerySet, resolve: wgpu::Buffer, read: wgpu::Buffer, period_ns: f64 },
    Wall { last: Option<Instant>, times: Vec<f64> },
}

/// Records the passes of one submission (see the module documentation).
pub struct PassProfiler {
    mode: Mode,
    names: Vec<&'static str>,
    ticks: Vec<u64>,
    /// Where [`resolve`](Self::resolve) copies the ticks when not to its own
    /// read buffer: a slot of a [`StepStageRecorder`]'s buffer.
    copy_to: Option<(wgpu::Buffer, u64)>,
}

impl PassProfiler {
    /// A profiler that records nothing (the production path).
    pub fn disabled() -> Self {
        Self { mode: Mode::Off, names: Vec::new(), ticks: Vec::new(), copy_to: None }
    }

    /// A profiler timing with GPU timestamps when the adapter has them, else
    /// with the host clock around separately submitted passes.
    pub fn new(ctx: &GpuContext, label: &'static str) -> Self {
        let mode = if ctx.has_timestamps() {
            let bytes = u64::from(2 * MAX_PASSES) * 8;
            let buffer = |usage| {
                ctx.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some(label),
                    size: bytes,
                    usage,
                    mapped_at_creation: false,
                })
            };
            Mode::Timestamps {
                set: ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
                    label: Some(label),
                    ty: wgpu::QueryType::Timestamp,
                    count: 2 * MAX_PASSES,
                }),
                resolve: buffer(wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC),
                read: buffer(wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST),
                period_ns: f64::from(ctx.queue.get_timestamp_period()),
            }
        } else {
            Mode::Wall { last: None, times: Vec::new() }
        };
        Self { mode, names: Vec::new(), ticks: Vec::new(), copy_to: None }
    }

    /// A profiler timing with the host clock whatever the adapter offers
    /// (each pass submitted and waited for on its own): the fallback of
    /// adapters without timestamp queries, available everywhere for tests.
    pub fn wall_clock() -> Self {
        Self { mode: Mode::Wall { last: None, times: Vec::new() }, names: Vec::new(), ticks: Vec::new(), copy_to: None }
    }

    /// Whether this profiler records anything.
    pub fn is_enabled(&self) -> bool {
        !matches!(self.mode, Mode::Off)
    }

    /// How the passes are timed (`None` when disabled).
    pub fn source(&self) -> Option<TimingSource> {
        match self.mode {
            Mode::Off => None,
            Mode::Timestamps { .. } => Some(TimingSource::Timestamps),
            Mode::Wall { .. } => Some(TimingSource::Wall),
        }
    }

    /// Forgets the passes recorded so far; call before encoding a new run.
    pub fn begin(&mut self) {
        self.names.clear();
        if let Mode::Wall { last, times } = &mut self.mode {
            *last = None;
            times.clear();
        }
    }

    /// Timestamp writes for the next pass, named `name`; `None` when the
    /// pass is not timed on the GPU (disabled, wall clock, or past
    /// [`MAX_PASSES`], whose passes then go unrecorded).
    pub fn writes(&mut self, name: &'static str) -> Option<wgpu::ComputePassTimestampWrites<'_>> {
        match &mut self.mode {
            Mode::Off => None,
            Mode::Wall { last, .. } => {
                self.names.push(name);
                last.get_or_insert_with(Instant::now);
                None
            }
            Mode::Timestamps { set, .. } => {
                let index = self.names.len() as u32;
                if index >= MAX_PASSES {
                    return None;
                }
                self.names.push(name);
                Some(wgpu::ComputePassTimestampWrites {
                    query_set: set,
                    beginning_of_pass_write_index: Some(2 * index),
                    end_of_pass_write_index: Some(2 * index + 1),
                })
            }
        }
    }

    /// Closes the pass just encoded into `encoder`. With the wall clock this
    /// submits the encoder, waits, times the pass and leaves a fresh encoder
    /// in its place; otherwise it does nothing.
    pub fn end_pass(&mut self, ctx: &GpuContext, encoder: &mut wgpu::CommandEncoder) -> Result<(), GpuError> {
        if let Mode::Wall { last, times } = &mut self.mode {
            let fresh =
                ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("profiled pass") });
            let done = std::mem::replace(encoder, fresh);
            // Named by the pass just closed, so that a pass that never ends
            // on an adapter is named by the timeout's error.
            let pass = self.names.last().copied().unwrap_or("profiled pass");
            ctx.submit(pass, [done.finish()])?;
            ctx.wait(pass)?;
            let now = Instant::now();
            let start = last.replace(now).unwrap_or(now);
            times.push((now - start).as_secs_f64() * 1e3);
        }
        Ok(())
    }

    /// Appends the resolve of the recorded timestamps to `encoder` (after
    /// the last timed pass, before submission).
    pub fn resolve(&self, encoder: &mut wgpu::CommandEncoder) {
        if let Mode::Timestamps { set, resolve, read, .. } = &self.mode {
            let count = self.names.len().min(MAX_PASSES as usize) as u32;
            if count > 0 {
                encoder.resolve_query_set(set, 0..2 * count, resolve, 0);
                let (target, offset) = self.copy_to.as_ref().map_or((read, 0), |(b, o)| (b, *o));
                encoder.copy_buffer_to_buffer(resolve, 0, target, offset, u64::from(2 * count) * 8);
            }
        }
    }

    /// Reads the times after the submission completed (after
    /// [`GpuContext::wait`]). A pass whose end tick is not after its start
    /// (a driver that does not time empty passes) reads 0 ms.
    pub fn finish(&mut self, ctx: &GpuContext) -> Result<PassTimings, GpuError> {
        let source = self.source();
        let times: Vec<f64> = match &self.mode {
            Mode::Off => Vec::new(),
            Mode::Wall { times, .. } => times.clone(),
            Mode::Timestamps { read, period_ns, .. } => {
                let count = self.names.len().min(MAX_PASSES as usize);
                if count == 0 {
                    Vec::new()
                } else {
                    super::buffers::map_read(ctx, read, 2 * count, &mut self.ticks)?;
                    self.ticks.chunks_exact(2).map(|t| t[1].saturating_sub(t[0]) as f64 * period_ns * 1e-6).collect()
                }
            }
        };
        let passes = self.names.iter().zip(times).map(|(&name, ms)| PassTime { name, ms }).collect();
        Ok(PassTimings { passes, source })
    }
}

/// One command encoder whose compute work is cut into named stages: a
/// single compute pass for everything when the profiler is disabled (the
/// production path, unchanged), one timed pass per stage when it is
/// enabled. Kernels that chain many dispatches (the population step) encode
/// through it so that the same code is both their step and their profile.
pub struct StagedPasses<'p> {
    encoder: wgpu::CommandEncoder,
    pass: Option<wgpu::ComputePass<'static>>,
    profiler: &'p mut PassProfiler,
    label: &'static str,
}

impl<'p> StagedPasses<'p> {
    /// A fresh encoder named `label`, its stages recorded by `profiler`
    /// ([`PassProfiler::begin`] is called here).
    pub fn new(ctx: &GpuContext, label: &'static str, profiler: &'p mut PassProfiler) -> Self {
        profiler.begin();
        let encoder = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some(label) });
        Self { encoder, pass: None, profiler, label }
    }

    /// The encoder, for commands outside compute passes (clears, copies);
    /// closes the open pass first.
    pub fn encoder(&mut self, ctx: &GpuContext) -> Result<&mut wgpu::CommandEncoder, GpuError> {
        self.close(ctx)?;
        Ok(&mut self.encoder)
    }

    /// The pass to encode the stage `name` into: the open one when not
    /// profiling, else a new pass timed under `name`.
    pub fn stage(&mut self, ctx: &GpuContext, name: &'static str) -> Result<&mut wgpu::ComputePass<'static>, GpuError> {
        let profiling = self.profiler.is_enabled();
        let pass = match self.pass.take() {
            Some(open) if !profiling => open,
            open => {
                if open.is_some() {
                    drop(open);
                    self.profiler.end_pass(ctx, &mut self.encoder)?;
                }
                let label = if profiling { name } else { self.label };
                let timestamp_writes = self.profiler.writes(name);
                self.encoder
                    .begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some(label), timestamp_writes })
                    .forget_lifetime()
            }
        };
        Ok(self.pass.insert(pass))
    }

    fn close(&mut self, ctx: &GpuContext) -> Result<(), GpuError> {
        if self.pass.take().is_some() && self.profiler.is_enabled() {
            self.profiler.end_pass(ctx, &mut self.encoder)?;
        }
        Ok(())
    }

    /// Closes the open pass, appends the timestamps' resolve and returns the
    /// commands to submit.
    pub fn finish(mut self, ctx: &GpuContext) -> Result<wgpu::CommandBuffer, GpuError> {
        self.close(ctx)?;
        self.profiler.resolve(&mut self.encoder);
        Ok(self.encoder.finish())
    }
}

/// Steps whose stages a [`StepStageRecorder`] times between two drains.
pub const RECORDED_STEPS: usize = 256;

/// A [`StepStageRecorder`] times one step in this many: a timed step runs
/// each stage in a pass of its own, which cost 5.7 % of the step on an
/// NVIDIA H200 at 10⁶ balls (13.62 against 12.89 ms/step, 27 Nov 2026),
/// so timing one in eight costs < 1 % while the stage means still cover
/// the whole run.
pub const TIMED_STEP_STRIDE: u64 = 8;

/// Bytes of one step's slot: the ticks of [`MAX_PASSES`] passes.
const SLOT_BYTES: u64 = 2 * MAX_PASSES as u64 * 8;

/// Times the stages of a kernel's production steps with timestamp queries
/// and no readback of its own: each step's passes are timed by a
/// [`PassProfiler`] whose ticks the step's own submission resolves and
/// copies into the next free slot of a buffer; [`drain`](Self::drain) reads
/// the slots when the caller reads back anyway (the population's balls),
/// after the wait that readback makes. The first [`RECORDED_STEPS`] steps
/// after each drain are timed; later ones run untimed (one pass, the
/// production encoding) until the next drain frees the slots. Of those,
/// one step in [`TIMED_STEP_STRIDE`] is timed (the first, the ninth, …).
pub struct StepStageRecorder {
    profiler: PassProfiler,
    slots: wgpu::Buffer,
    /// Each used slot's pass names, in submission order.
    names: Vec<Vec<&'static str>>,
    ticks: Vec<u64>,
    period_ns: f64,
    /// Steps asked for so far ([`next_step`](Self::next_step) calls).
    steps: u64,
}

impl StepStageRecorder {
    /// A recorder when the adapter has timestamp queries, else `None`.
    pub fn new(ctx: &GpuContext, label: &'static str) -> Option<Self> {
        if !ctx.has_timestamps() {
            return None;
        }
        let slots = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: SLOT_BYTES * RECORDED_STEPS as u64,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        Some(Self {
            profiler: PassProfiler::new(ctx, label),
            slots,
            names: Vec::new(),
            ticks: Vec::new(),
            period_ns: f64::from(ctx.queue.get_timestamp_period()),
            steps: 0,
        })
    }

    /// The profiler of the next step, its ticks copied into the next slot;
    /// `None` for the steps between two timed ones ([`TIMED_STEP_STRIDE`])
    /// and when every slot is used (the step then runs untimed).
    pub fn next_step(&mut self) -> Option<&mut PassProfiler> {
        let due = self.steps.is_multiple_of(TIMED_STEP_STRIDE);
        self.steps += 1;
        if !due || self.names.len() >= RECORDED_STEPS {
            return None;
        }
        self.profiler.copy_to = Some((self.slots.clone(), SLOT_BYTES * self.names.len() as u64));
        Some(&mut self.profiler)
    }

    /// Marks the slot of the step just encoded with [`next_step`]'s profiler
    /// as used (call after its submission).
    ///
    /// [`next_step`]: Self::next_step
    pub fn step_submitted(&mut self) {
        let names = self.profiler.names.iter().copied().take(MAX_PASSES as usize).collect();
        self.names.push(names);
    }

    /// Reads the used slots (the submitted steps must be complete: call after
    /// a wait), calls `add(pass, ms)` for every timed pass, frees the slots
    /// and returns the number of steps read.
    pub fn drain(&mut self, ctx: &GpuContext, mut add: impl FnMut(&'static str, f64)) -> Result<u64, GpuError> {
        let used = self.names.len();
        if used == 0 {
            return Ok(0);
        }
        let per_slot = (SLOT_BYTES / 8) as usize;
        super::buffers::map_read(ctx, &self.slots, used * per_slot, &mut self.ticks)?;
        for (slot, names) in self.names.iter().enumerate() {
            let ticks = &self.ticks[slot * per_slot..];
            for (k, &name) in names.iter().enumerate() {
                add(name, ticks[2 * k + 1].saturating_sub(ticks[2 * k]) as f64 * self.period_ns * 1e-6);
            }
        }
        self.names.clear();
        Ok(used as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pass_timings_sum_and_look_up_by_name() {
        let t = PassTimings {
            passes: vec![
                PassTime { name: "count", ms: 1.5 },
                PassTime { name: "scan", ms: 0.25 },
                PassTime { name: "count", ms: 0.5 },
            ],
            source: Some(TimingSource::Timestamps),
        };
        assert_eq!(t.total_ms(), 2.25);
        assert_eq!(t.ms("count"), Some(2.0));
        assert_eq!(t.ms("scan"), Some(0.25));
        assert_eq!(t.ms("sort"), None);
        let mut totals = vec![PassTime { name: "scan", ms: 1.0 }];
        add_by_name(&mut totals, t.passes);
        assert_eq!(totals, vec![PassTime { name: "scan", ms: 1.25 }, PassTime { name: "count", ms: 2.0 }]);
    }
}
