//! Encoding and running the passes of [`GpuGridBroadphase`]: the resident
//! [`encode`](GpuGridBroadphase::encode) path (no submission), the host
//! paths [`run`](GpuGridBroadphase::run) / [`run_profiled`](GpuGridBroadphase::run_profiled)
//! with their rerun-on-overflow loop, and the small readbacks (counters,
//! pairs). The buffers and pipelines they use are set up in the parent module.

use super::super::buffers::map_read;
use super::super::context::{GpuContext, GpuError, GpuTiming, TimingSource};
use super::super::timing::{PassProfiler, PassTimings};
use super::{Capacities, GpuGridBroadphase, GpuPairsReport, MAX_SPAN_CELLS, Stage};
use rayon::prelude::*;

/// Reruns after an overflow before the counts are called a device fault: the
/// first rerun already has room for the counts of the same input.
const MAX_RERUNS: u32 = 2;

impl GpuGridBroadphase {
    /// Runs the grid on the uploaded boxes, rerunning with larger buffers
    /// until nothing overflows; the pairs stay on the GPU. The timing is the
    /// sum of the passes' GPU timestamps, or the wall clock from submission
    /// to completion on an adapter without timestamps.
    pub fn run(&mut self, ctx: &GpuContext) -> Result<GpuPairsReport, GpuError> {
        Ok(self.run_with(ctx, false)?.0)
    }

    /// Replaces the profiler of [`run_profiled`](Self::run_profiled) (e.g.
    /// [`PassProfiler::wall_clock`] to compare with timestamps). A wall-clock
    /// profiler is used by `run_profiled` only; [`run`](Self::run) then times
    /// the whole submission.
    pub fn set_profiler(&mut self, profiler: PassProfiler) {
        self.profiler = profiler;
    }

    /// As [`run`](Self::run), and the time of each pass of the final run
    /// (count, each level of the scan — see
    /// [`profiled_pass_names`](crate::gpu::prefix_sum::profiled_pass_names) — scatter, pair emission). Without timestamp queries each
    /// pass is submitted and waited for on its own and timed by the wall
    /// clock ([`TimingSource::Wall`]): an upper bound, not a kernel time.
    pub fn run_profiled(&mut self, ctx: &GpuContext) -> Result<(GpuPairsReport, PassTimings), GpuError> {
        self.run_with(ctx, true)
    }

    fn run_with(&mut self, ctx: &GpuContext, per_pass: bool) -> Result<(GpuPairsReport, PassTimings), GpuError> {
        let mut reruns = 0;
        let mut counted = Vec::new();
        loop {
            let (timing, passes) = self.run_once(ctx, per_pass)?;
            let (entries, pairs) = self.read_counters(ctx)?;
            if entries <= self.entry_capacity && pairs <= self.pair_capacity {
                let report = GpuPairsReport { pairs: pairs as usize, entries: entries as usize, reruns, timing };
                return Ok((report, passes));
            }
            counted.push((entries, pairs));
            // The same input gives the same counts, and a rerun gets room for
            // them: a second overflow means the counts are not the input's
            // (a device fault), and rerunning would loop for ever.
            if reruns == MAX_RERUNS {
                return Err(GpuError::Runtime {
                    kernel: "broadphase",
                    message: format!(
                        "the cell entries and pairs still overflowed after {reruns} reruns with room for the counts \
                         of the run before: (entries, pairs) counted {counted:?}, capacities {} and {}",
                        self.entry_capacity, self.pair_capacity
                    ),
                });
            }
            reruns += 1;
            self.grow_to_fit(ctx, entries, pairs)?;
        }
    }

    /// Grows the outputs to the exact sizes of an overflowed run, plus slack
    /// for the next, similar, step, within what the pages can hold.
    fn grow_to_fit(&mut self, ctx: &GpuContext, entries: u64, pairs: u64) -> Result<(), GpuError> {
        let slack = |exact: u64, max: u64| (exact + exact / 4).min(max).max(exact);
        let entries = slack(entries, self.sorted.max_elems(ctx)?);
        let pairs = slack(pairs, self.pairs.max_elems(ctx)?);
        if self.grow_outputs(ctx, entries, pairs)? {
            self.bind_group = None;
        }
        Ok(())
    }

    /// Reads the counters of the last submitted run (a small readback: call
    /// it only when the count is needed on the host). Returns (cell entries,
    /// pairs) and, when either passed its capacity, grows the buffers so that
    /// the next run fits; the overflowed run stored only the first
    /// [`pair_capacity`](Self::pair_capacity) pairs.
    pub fn read_counts(&mut self, ctx: &GpuContext) -> Result<(u64, u64), GpuError> {
        let mut encoder =
            ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("broadphase counts") });
        encoder.copy_buffer_to_buffer(self.counters.get(), 0, &self.counters_read, 0, 12);
        ctx.submit("broadphase counts", [encoder.finish()])?;
        ctx.wait("broadphase counts")?;
        let (entries, pairs) = self.read_counters(ctx)?;
        if entries > self.entry_capacity || pairs > self.pair_capacity {
            self.grow_to_fit(ctx, entries, pairs)?;
        }
        Ok((entries, pairs))
    }

    /// Reads the first `count` pairs of the last run into `out` and sorts them.
    pub fn read_pairs(&mut self, ctx: &GpuContext, count: usize, out: &mut Vec<[u32; 2]>) -> Result<(), GpuError> {
        self.readback.read_paged(ctx, &self.pairs, count, out)?;
        out.par_sort_unstable();
        Ok(())
    }

    /// Records every pass of one run into `encoder`, on the resident buffers:
    /// clear, count, scan, scatter, pair emission. Nothing is submitted and
    /// nothing is read back: a consumer of the pairs records its own passes
    /// after these, in the same encoder. Call [`upload`](Self::upload) or
    /// [`prepare_resident`](Self::prepare_resident) first.
    pub fn encode(&mut self, ctx: &GpuContext, encoder: &mut wgpu::CommandEncoder) -> Result<(), GpuError> {
        let mut off = PassProfiler::disabled();
        self.encode_passes(ctx, encoder, &mut off)
    }

    fn encode_passes(
        &mut self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        profiler: &mut PassProfiler,
    ) -> Result<(), GpuError> {
        let params = self.gpu_params;
        ctx.queue.write_buffer(&self.grid_uniform, 0, bytemuck::bytes_of(&params));
        // Page sizes are at most u32::MAX (PagedBuffer::page_elems_for).
        let caps = Capacities {
            entries: self.entry_capacity.min(u64::from(u32::MAX)) as u32,
            pairs: self.pair_capacity.min(u64::from(u32::MAX)) as u32,
            aabb_page: self.aabbs.page_elems() as u32,
            entry_page: self.sorted.page_elems() as u32,
            pair_page: self.pairs.page_elems() as u32,
            _pad: [0; 3],
        };
        ctx.queue.write_buffer(&self.capacity_uniform, 0, bytemuck::bytes_of(&caps));
        if self.bind_group.is_none() {
            // Bindings in the shader's order: uniforms, aabbs pages, buckets,
            // sorted pages, pairs pages, counters.
            let buffers = [&self.grid_uniform, &self.capacity_uniform]
                .into_iter()
                .chain(self.aabbs.pages())
                .chain([self.buckets.get()])
                .chain(self.sorted.pages())
                .chain(self.pairs.pages())
                .chain([self.counters.get()]);
            let entries: Vec<wgpu::BindGroupEntry<'_>> = buffers
                .enumerate()
                .map(|(binding, buffer)| wgpu::BindGroupEntry {
                    binding: binding as u32,
                    resource: buffer.as_entire_binding(),
                })
                .collect();
            self.bind_group = Some(ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("broadphase"),
                layout: &self.layout,
                entries: &entries,
            }));
        }
        let table = u64::from(params.table_size);
        let boxes = u64::from(params.box_count);
        encoder.clear_buffer(self.buckets.get(), 0, Some(table * 4));
        encoder.clear_buffer(self.counters.get(), 0, None);
        if boxes == 0 {
            return Ok(());
        }
        let (x, y) = ctx.dispatch_grid(boxes)?;
        let entry_grid = ctx.dispatch_grid(self.entry_capacity)?;
        // One compute pass per stage, so that each can be timed; passes in
        // one encoder run in order, each seeing the storage writes of the
        // ones before (WebGPU usage scopes): no host round trip.
        for stage in Stage::ALL {
            let name = stage.name();
            if stage == Stage::Scan && profiler.is_enabled() {
                // Profiled: one pass per scan level (prefix_sum's names), so
                // a slow level shows on its own.
                self.scan.encode_profiled(ctx, encoder, profiler, table)?;
                continue;
            }
            {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some(name),
                    timestamp_writes: profiler.writes(name),
                });
                let pipeline = match stage {
                    Stage::Scan => {
                        self.scan.encode(ctx, &mut pass, table)?;
                        None
                    }
                    Stage::CountCells => Some(&self.count_cells),
                    Stage::ScatterCells => Some(&self.scatter_cells),
                    Stage::FindPairs => Some(&self.find_pairs),
                };
                if let Some(pipeline) = pipeline {
                    // find_pairs runs one thread per stored entry; their
                    // number is on the GPU, so cover the capacity (threads
                    // past the stored entries return at once).
                    let (x, y) = if stage == Stage::FindPairs { entry_grid } else { (x, y) };
                    pass.set_bind_group(0, self.bind_group.as_ref(), &[]);
                    pass.set_pipeline(pipeline);
                    pass.dispatch_workgroups(x, y, 1);
                }
            }
            if stage == Stage::ScatterCells {
                // After the scatter the table holds bucket ends, so its last
                // entry is the number of cell entries: the counters' first
                // word, without an atomic per box on one address.
                encoder.copy_buffer_to_buffer(self.buckets.get(), (table - 1) * 4, self.counters.get(), 0, 4);
            }
            profiler.end_pass(ctx, encoder)?;
        }
        Ok(())
    }

    fn run_once(&mut self, ctx: &GpuContext, per_pass: bool) -> Result<(GpuTiming, PassTimings), GpuError> {
        // Per-pass wall-clock timing splits the submission; only on request.
        let timestamps = self.profiler.source() == Some(TimingSource::Timestamps);
        let mut profiler = if timestamps || per_pass {
            std::mem::replace(&mut self.profiler, PassProfiler::disabled())
        } else {
            PassProfiler::disabled()
        };
        profiler.begin();
        let mut encoder =
            ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("broadphase") });
        let started = std::time::Instant::now();
        let encoded = self.encode_passes(ctx, &mut encoder, &mut profiler);
        let result = encoded.and_then(|()| {
            profiler.resolve(&mut encoder);
            encoder.copy_buffer_to_buffer(self.counters.get(), 0, &self.counters_read, 0, 12);
            ctx.submit("broadphase", [encoder.finish()])?;
            ctx.wait("broadphase")?;
            let wall_ms = started.elapsed().as_secs_f64() * 1e3;
            let passes = profiler.finish(ctx)?;
            let timing = match passes.source {
                Some(TimingSource::Timestamps) => GpuTiming { ms: passes.total_ms(), source: TimingSource::Timestamps },
                _ => GpuTiming { ms: wall_ms, source: TimingSource::Wall },
            };
            Ok((timing, passes))
        });
        if profiler.is_enabled() {
            self.profiler = profiler;
        }
        result
    }

    fn read_counters(&mut self, ctx: &GpuContext) -> Result<(u64, u64), GpuError> {
        map_read(ctx, &self.counters_read, 3, &mut self.counter_values)?;
        match self.counter_values[..] {
            [_, _, span_overflow] if span_overflow != 0 => Err(GpuError::Runtime {
                kernel: "count_cells",
                message: format!(
                    "a box spans more than {MAX_SPAN_CELLS} cells of {} m on an axis; choose larger cells",
                    self.gpu_params.cell_size
                ),
            }),
            [entries, pairs, _] => Ok((u64::from(entries), u64::from(pairs))),
            _ => Err(GpuError::Runtime { kernel: "broadphase counters", message: "short readback".into() }),
        }
    }
}
