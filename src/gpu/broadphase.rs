//! The grid broadphase on the GPU (`shaders/broadphase.wgsl`), twin of
//! [`crate::broadphase::GridBroadphase`]. Both report the identical pair set
//! (tests compare them exactly), but by different algorithms.
//!
//! The GPU inserts every box into every cell it covers
//! ([`GridParams::for_aabbs`]). It counting-sorts with atomics and reports a
//! pair only from its reference cell (the cell of the lower-left corner of
//! the intersection), so that no thread coordinates with another.
//! [`GpuGridBroadphase::find_pairs`] sorts the pairs after readback.
//!
//! The CPU inserts each box once, at its min corner, and sweeps cells with a
//! half stencil. See `src/broadphase/grid.rs` for both algorithms and their
//! proofs.
//!
//! # Inputs larger than one storage binding
//!
//! Adapters cap each storage binding (`max_storage_buffer_binding_size`:
//! 128 MiB on lavapipe and in WebGPU's defaults), while 10⁷ boxes are 160 MB
//! of boxes, ~2–4·10⁷ cell entries of 12 bytes and as many pairs of 8 bytes.
//! So the three per-box arrays (`aabbs`, sorted cell entries, `pairs`) are
//! [`PagedBuffer`]s of [`PAGES`] bindings each, chosen in the shader by index
//! range. Each is limited to `PAGES ×` the binding limit (512 MiB on
//! lavapipe: 3.3·10⁷ boxes, 4.4·10⁷ entries, 6.7·10⁷ pairs, so about
//! 2·10⁷ discs of `mx2d bench` at ~2.25 entries each); past that,
//! [`GpuError::TooLargeSplit`] names the array. The bucket table is instead
//! kept to one binding: when the grid of [`GridParams::for_aabbs`] needs more
//! buckets than fit, the GPU switches to hashed keys with the largest
//! power-of-two table that fits (2²⁵ buckets on lavapipe). The pair set does
//! not depend on the table (hash collisions are filtered by cell
//! coordinates), only the bucket load does. Workgroup counts past 65,535 use
//! a 2D dispatch ([`GpuContext::dispatch_grid`]). All buffers only grow:
//! nothing is allocated per step once the sizes have been seen.

use super::buffers::{BUFFER_ALIGNMENT, GrowableBuffer, PagedBuffer, Readback, map_read};
use super::context::{GpuContext, GpuError, GpuTiming, PassTimer};
use super::prefix_sum::PrefixSum;
use crate::broadphase::{Aabb, GridParams};
use bytemuck::{Pod, Zeroable};
use rayon::prelude::*;

/// Capacities of the output buffers, as the shader's `Capacities` uniform.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
struct Capacities {
    entries: u32,
    pairs: u32,
    aabb_page: u32,
    entry_page: u32,
    pair_page: u32,
    _pad: [u32; 3],
}

/// Bindings (pages) of each split array; must match `shaders/broadphase.wgsl`.
pub const PAGES: usize = 4;

/// Storage bindings of the kernel: three split arrays, buckets, counters.
const STORAGE_BINDINGS: u32 = 3 * PAGES as u32 + 2;

/// What one GPU broadphase call did.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct GpuPairsReport {
    /// Pairs found.
    pub pairs: usize,
    /// (box, cell) entries sorted.
    pub entries: usize,
    /// Reruns after an output buffer overflowed (then grown to fit).
    pub reruns: u32,
    /// GPU time of the final (complete) run.
    pub timing: GpuTiming,
}

/// Reusable GPU grid broadphase: pipelines built once, buffers grown on
/// demand and kept, nothing allocated in a steady-state call.
pub struct GpuGridBroadphase {
    count_cells: wgpu::ComputePipeline,
    scatter_cells: wgpu::ComputePipeline,
    find_pairs: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
    scan: PrefixSum,
    grid_uniform: wgpu::Buffer,
    capacity_uniform: wgpu::Buffer,
    aabbs: PagedBuffer,
    buckets: GrowableBuffer,
    sorted: PagedBuffer,
    pairs: PagedBuffer,
    counters: GrowableBuffer,
    counters_read: wgpu::Buffer,
    bind_group: Option<wgpu::BindGroup>,
    params: GridParams,
    gpu_params: GridParams,
    entry_capacity: u64,
    pair_capacity: u64,
    readback: Readback,
    counter_values: Vec<u32>,
    timer: PassTimer,
}

const ENTRY_BYTES: u64 = 12;
const PAIR_BYTES: u64 = 8;
const AABB_BYTES: u64 = size_of::<Aabb>() as u64;

impl GpuGridBroadphase {
    /// Compiles the kernels and builds the pipelines.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        let available = ctx.limits().max_storage_buffers_per_shader_stage;
        if available < STORAGE_BINDINGS {
            return Err(GpuError::Kernel {
                kernel: "broadphase",
                message: format!(
                    "needs {STORAGE_BINDINGS} storage buffers per shader stage, the adapter allows {available}"
                ),
            });
        }
        let shader = ctx.shader_module("broadphase.wgsl", wgpu::include_wgsl!("../../shaders/broadphase.wgsl"))?;
        let entry = |binding, ty| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer { ty, has_dynamic_offset: false, min_binding_size: None },
            count: None,
        };
        let uniform = wgpu::BufferBindingType::Uniform;
        let read = wgpu::BufferBindingType::Storage { read_only: true };
        let write = wgpu::BufferBindingType::Storage { read_only: false };
        let layout = ctx.device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("broadphase"),
            entries: &[
                entry(0, uniform),
                entry(1, uniform),
                entry(2, read),
                entry(3, read),
                entry(4, read),
                entry(5, read),
                entry(6, write),
                entry(7, write),
                entry(8, write),
                entry(9, write),
                entry(10, write),
                entry(11, write),
                entry(12, write),
                entry(13, write),
                entry(14, write),
                entry(15, write),
            ],
        });
        let pipeline_layout = ctx.device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("broadphase"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let small = |label, usage| {
            ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: 256,
                usage,
                mapped_at_creation: false,
            })
        };
        let uniform_usage = wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST;
        let storage = wgpu::BufferUsages::STORAGE;
        Ok(Self {
            count_cells: ctx.compute_pipeline(&shader, "count_cells", &pipeline_layout)?,
            scatter_cells: ctx.compute_pipeline(&shader, "scatter_cells", &pipeline_layout)?,
            find_pairs: ctx.compute_pipeline(&shader, "find_pairs", &pipeline_layout)?,
            layout,
            scan: PrefixSum::new(ctx)?,
            grid_uniform: small("grid params", uniform_usage),
            capacity_uniform: small("capacities", uniform_usage),
            aabbs: PagedBuffer::new("aabbs", storage | wgpu::BufferUsages::COPY_DST, AABB_BYTES, PAGES),
            buckets: GrowableBuffer::new("buckets", storage | wgpu::BufferUsages::COPY_DST),
            sorted: PagedBuffer::new("sorted cell entries", storage, ENTRY_BYTES, PAGES),
            pairs: PagedBuffer::new("pairs", storage | wgpu::BufferUsages::COPY_SRC, PAIR_BYTES, PAGES),
            counters: GrowableBuffer::new(
                "counters",
                storage | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
            ),
            counters_read: small("counters readback", wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST),
            bind_group: None,
            params: GridParams::default(),
            gpu_params: GridParams::default(),
            entry_capacity: 0,
            pair_capacity: 0,
            readback: Readback::new(),
            counter_values: Vec::new(),
            timer: PassTimer::new(ctx, "broadphase timer"),
        })
    }

    /// The grid of the last upload ([`GridParams::for_aabbs`]).
    pub fn params(&self) -> &GridParams {
        &self.params
    }

    /// The grid the kernel actually ran: [`params`](Self::params), with
    /// hashed keys and a smaller table when its bucket table would not fit
    /// in one storage binding (same cells, same pairs).
    pub fn gpu_params(&self) -> &GridParams {
        &self.gpu_params
    }

    /// Replaces `out` with every overlapping pair `[i, j]`, `i < j`, sorted:
    /// the same set as [`crate::broadphase::GridBroadphase::find_pairs`].
    pub fn find_pairs(
        &mut self,
        ctx: &GpuContext,
        aabbs: &[Aabb],
        out: &mut Vec<[u32; 2]>,
    ) -> Result<GpuPairsReport, GpuError> {
        self.upload(ctx, aabbs)?;
        let report = self.run(ctx)?;
        self.read_pairs(ctx, report.pairs, out)?;
        Ok(report)
    }

    /// Uploads the boxes and chooses the grid for them ([`GridParams::for_aabbs`]).
    pub fn upload(&mut self, ctx: &GpuContext, aabbs: &[Aabb]) -> Result<(), GpuError> {
        self.params = GridParams::for_aabbs(aabbs);
        self.gpu_params = self.params;
        let max_table = ctx.max_binding_bytes() / BUFFER_ALIGNMENT * BUFFER_ALIGNMENT / 4;
        if u64::from(self.params.table_size) > max_table {
            // Largest power of two that fits one binding (the prefix sum and
            // the shader index one table); hashed keys accept any power of two.
            if max_table == 0 {
                return Err(GpuError::TooLarge { what: "buckets", bytes: 4, limit: ctx.max_binding_bytes() });
            }
            self.gpu_params.dense = 0;
            self.gpu_params.origin_x = 0;
            self.gpu_params.origin_y = 0;
            self.gpu_params.width = 0;
            self.gpu_params.table_size = 1 << max_table.ilog2();
        }
        let n = aabbs.len() as u64;
        let mut rebind = self.aabbs.upload(ctx, aabbs)?;
        if self.buckets.ensure(ctx, u64::from(self.gpu_params.table_size) * 4)? {
            self.scan.bind(ctx, self.buckets.get(), self.buckets.capacity() / 4)?;
            rebind = true;
        }
        // First guesses, at most what the pages hold; an overflow reruns
        // with the exact sizes.
        let entries = (4 * n).max(1024).min(self.sorted.max_elems(ctx)?);
        let pairs = (4 * n).max(1024).min(self.pairs.max_elems(ctx)?);
        rebind |= self.grow_outputs(ctx, entries, pairs)?;
        rebind |= self.counters.ensure(ctx, 256)?;
        if rebind {
            self.bind_group = None;
        }
        Ok(())
    }

    /// Grows the sorted-entry and pair buffers to at least these capacities.
    fn grow_outputs(&mut self, ctx: &GpuContext, entries: u64, pairs: u64) -> Result<bool, GpuError> {
        let mut grew = false;
        if entries > self.entry_capacity {
            grew |= self.sorted.ensure(ctx, entries)?;
            self.entry_capacity = self.sorted.capacity();
        }
        if pairs > self.pair_capacity {
            grew |= self.pairs.ensure(ctx, pairs)?;
            self.pair_capacity = self.pairs.capacity();
        }
        Ok(grew)
    }

    /// Runs the grid on the uploaded boxes, rerunning with larger buffers
    /// until nothing overflows; the pairs stay on the GPU.
    pub fn run(&mut self, ctx: &GpuContext) -> Result<GpuPairsReport, GpuError> {
        let mut reruns = 0;
        loop {
            let timing = self.run_once(ctx)?;
            let (entries, pairs) = self.read_counters(ctx)?;
            if entries <= self.entry_capacity && pairs <= self.pair_capacity {
                return Ok(GpuPairsReport { pairs: pairs as usize, entries: entries as usize, reruns, timing });
            }
            reruns += 1;
            // Exact sizes plus slack for the next, similar, step, within what
            // the pages can hold; the exact sizes alone must fit.
            let slack = |exact: u64, max: u64| (exact + exact / 4).min(max).max(exact);
            let entries = slack(entries, self.sorted.max_elems(ctx)?);
            let pairs = slack(pairs, self.pairs.max_elems(ctx)?);
            if self.grow_outputs(ctx, entries, pairs)? {
                self.bind_group = None;
            }
        }
    }

    /// Reads the first `count` pairs of the last run into `out` and sorts them.
    pub fn read_pairs(&mut self, ctx: &GpuContext, count: usize, out: &mut Vec<[u32; 2]>) -> Result<(), GpuError> {
        self.readback.read_paged(ctx, &self.pairs, count, out)?;
        out.par_sort_unstable();
        Ok(())
    }

    fn run_once(&mut self, ctx: &GpuContext) -> Result<GpuTiming, GpuError> {
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
        let mut encoder =
            ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("broadphase") });
        encoder.clear_buffer(self.buckets.get(), 0, Some(table * 4));
        encoder.clear_buffer(self.counters.get(), 0, None);
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("broadphase"),
                timestamp_writes: self.timer.pass_writes(),
            });
            // Dispatches in one pass are ordered, with storage writes visible
            // to later dispatches (WebGPU usage scopes): no host round trip.
            pass.set_bind_group(0, self.bind_group.as_ref(), &[]);
            let (x, y) = ctx.dispatch_grid(boxes)?;
            if boxes > 0 {
                pass.set_pipeline(&self.count_cells);
                pass.dispatch_workgroups(x, y, 1);
            }
            self.scan.encode(ctx, &mut pass, table)?;
            if boxes > 0 {
                pass.set_bind_group(0, self.bind_group.as_ref(), &[]);
                pass.set_pipeline(&self.scatter_cells);
                pass.dispatch_workgroups(x, y, 1);
                pass.set_pipeline(&self.find_pairs);
                pass.dispatch_workgroups(x, y, 1);
            }
        }
        self.timer.resolve(&mut encoder);
        encoder.copy_buffer_to_buffer(self.counters.get(), 0, &self.counters_read, 0, 8);
        self.timer.submitted();
        ctx.queue.submit([encoder.finish()]);
        ctx.wait("broadphase")?;
        self.timer.finish(ctx)
    }

    fn read_counters(&mut self, ctx: &GpuContext) -> Result<(u64, u64), GpuError> {
        map_read(ctx, &self.counters_read, 2, &mut self.counter_values)?;
        match self.counter_values[..] {
            [entries, pairs] => Ok((u64::from(entries), u64::from(pairs))),
            _ => Err(GpuError::Runtime { kernel: "broadphase counters", message: "short readback".into() }),
        }
    }
}
