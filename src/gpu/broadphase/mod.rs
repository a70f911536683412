//! The grid broadphase on the GPU (`shaders/broadphase.wgsl`), twin of
//! [`crate::broadphase::GridBroadphase`]. Both report the identical pair set
//! (tests compare them exactly), but by different algorithms.
//!
//! The GPU inserts every box into every cell it covers
//! ([`GridParams::for_aabbs`]). It counting-sorts (box, cell) entries with
//! atomics (`count_cells`, a prefix sum, `scatter_cells`) and then runs one
//! thread per sorted entry (`find_pairs`): each entry is tested against the
//! later entries of its bucket, and a pair is reported only from its
//! reference cell (the cell of the lower-left corner of the intersection),
//! so that no thread coordinates with another. Entries carry their box, so
//! the pair pass streams through the sorted entries and never reads a
//! partner's box at a random index; pair slots are taken once per workgroup.
//!
//! The CPU inserts each box once, at its min corner, and sweeps cells with a
//! half stencil. See `src/broadphase/grid.rs` for both algorithms and their
//! proofs.
//!
//! # Two ways to call it
//!
//! * [`find_pairs`](GpuGridBroadphase::find_pairs): upload from the host,
//!   run (rerunning once with larger buffers if an output overflowed), read
//!   the pairs back and sort them. For tests and the comparison with the
//!   CPU; `mx2d bench` reports the readback and sort separately
//!   (`gpu_readback_sort_ms`).
//! * Resident, for GPU consumers of the pairs (the population step):
//!   [`prepare_resident`](GpuGridBroadphase::prepare_resident) with the
//!   caller's grid, [`copy_boxes`](GpuGridBroadphase::copy_boxes) from the
//!   caller's buffer (or a producer kernel writing
//!   [`box_pages`](GpuGridBroadphase::box_pages)), then
//!   [`encode`](GpuGridBroadphase::encode) into the caller's command encoder:
//!   no submission, no readback, no host sort. The pairs stay in
//!   [`pair_pages`](GpuGridBroadphase::pair_pages), their count in
//!   [`counters`](GpuGridBroadphase::counters) (a consumer reads at most
//!   [`pair_capacity`](GpuGridBroadphase::pair_capacity) of them);
//!   [`read_counts`](GpuGridBroadphase::read_counts) reads the count on
//!   request and grows the buffers after an overflow.
//!
//! Each stage is its own compute pass, so
//! [`run_profiled`](GpuGridBroadphase::run_profiled) times each one
//! ([`super::timing`]): `mx2d bench --passes`.
//!
//! # Inputs larger than one storage binding
//!
//! Adapters cap each storage binding (`max_storage_buffer_binding_size`:
//! 128 MiB on lavapipe and in WebGPU's defaults; 2 GiB on Vulkan drivers
//! that allow more, wgpu's i32 cap), while 10⁷ boxes are 160 MB of boxes,
//! ~2.25·10⁷ cell entries of 24 bytes and as many pairs of 8 bytes. So the
//! three per-box arrays (`aabbs`, sorted cell entries, `pairs`) are
//! [`PagedBuffer`]s of [`PAGES`] bindings each, chosen in the shader by index
//! range. Each is limited to `PAGES ×` the binding limit (512 MiB on
//! lavapipe: 3.3·10⁷ boxes, 2.2·10⁷ entries, 6.7·10⁷ pairs, so about
//! 9.9·10⁶ discs of `mx2d bench` at ~2.25 entries each; 8 GiB at 2 GiB per
//! binding); past that, [`GpuError::TooLargeSplit`] names the array. The
//! bucket table is instead kept to one binding: when the grid of
//! [`GridParams::for_aabbs`] needs more buckets than fit, the GPU switches to
//! hashed keys with the largest power-of-two table that fits (2²⁵ buckets on
//! lavapipe). The pair set does not depend on the table (hash collisions are
//! filtered by cell coordinates), only the bucket load does. Workgroup
//! counts past 65,535 use a 2D dispatch ([`GpuContext::dispatch_grid`]). All
//! buffers only grow: nothing is allocated per step once the sizes have been
//! seen.

use super::buffers::{BUFFER_ALIGNMENT, GrowableBuffer, PagedBuffer, Readback};
use super::context::{GpuContext, GpuError, GpuTiming};
use super::prefix_sum::PrefixSum;
use super::timing::PassProfiler;
use crate::broadphase::{Aabb, GridParams};
use bytemuck::{Pod, Zeroable};

mod passes;

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
    /// Times each pass with GPU timestamps when the adapter has them (else,
    /// only in [`run_profiled`](GpuGridBroadphase::run_profiled), with the
    /// wall clock around separately submitted passes).
    profiler: PassProfiler,
}

/// The passes of one run, in order; each is its own compute pass so that
/// each can be timed ([`GpuGridBroadphase::run_profiled`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Per box: one atomic increment per covered cell's bucket.
    CountCells,
    /// Exclusive prefix sum of the bucket counts (all levels).
    Scan,
    /// Per box: one atomic slot per covered cell, the entry written there.
    ScatterCells,
    /// Per box: its cells' buckets scanned for partners, pairs emitted.
    FindPairs,
}

impl Stage {
    const ALL: [Stage; 4] = [Stage::CountCells, Stage::Scan, Stage::ScatterCells, Stage::FindPairs];

    /// The pass's name in timings (the kernel's entry point).
    fn name(self) -> &'static str {
        match self {
            Stage::CountCells => "count_cells",
            Stage::Scan => "scan",
            Stage::ScatterCells => "scatter_cells",
            Stage::FindPairs => "find_pairs",
        }
    }
}

/// Most cells a box may cover on one axis (`MAX_SPAN + 1` in the shader:
/// an entry stores its cell as a 16-bit offset per axis).
pub const MAX_SPAN_CELLS: u32 = 65_536;

/// WGSL `CellEntry`: the box (16 bytes), its index, its cell's offset.
const ENTRY_BYTES: u64 = 24;
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
        let shader = ctx.shader_module("broadphase.wgsl", wgpu::include_wgsl!("../../../shaders/broadphase.wgsl"))?;
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
            buckets: GrowableBuffer::new(
                "buckets",
                storage | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
            ),
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
            profiler: PassProfiler::new(ctx, "broadphase passes"),
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
        self.configure(ctx, GridParams::for_aabbs(aabbs), aabbs.len(), 4 * aabbs.len() as u64)?;
        if self.aabbs.upload(ctx, aabbs)? {
            self.bind_group = None;
        }
        Ok(())
    }

    /// Prepares a run on boxes that stay on the GPU (no host copy of them):
    /// `params` is the grid (`box_count` is filled in here), which the caller
    /// chooses from what it knows of its population (e.g. its bounds and
    /// largest radius; [`GridParams::for_aabbs`] on a host copy gives the
    /// bench's grid), and `expected_pairs` sizes the pair buffer. The caller
    /// then fills the boxes with [`copy_boxes`](Self::copy_boxes) or its own
    /// kernel writing [`box_pages`](Self::box_pages), and records the
    /// passes with [`encode`](Self::encode).
    pub fn prepare_resident(
        &mut self,
        ctx: &GpuContext,
        params: GridParams,
        box_count: usize,
        expected_pairs: u64,
    ) -> Result<(), GpuError> {
        self.configure(ctx, params, box_count, expected_pairs)?;
        if self.aabbs.ensure(ctx, box_count as u64)? {
            self.bind_group = None;
        }
        Ok(())
    }

    /// Records the copy of `count` boxes (WGSL `Aabb`, 16 bytes each) from
    /// the start of `source` (which needs `COPY_SRC`) into the box pages: a
    /// GPU-to-GPU copy, no host round trip.
    pub fn copy_boxes(&self, encoder: &mut wgpu::CommandEncoder, source: &wgpu::Buffer, count: u64) {
        let page = self.aabbs.page_elems();
        for (k, target) in self.aabbs.pages().enumerate() {
            let first = k as u64 * page;
            if first >= count {
                break;
            }
            let elems = (count - first).min(page);
            encoder.copy_buffer_to_buffer(source, first * AABB_BYTES, target, 0, elems * AABB_BYTES);
        }
    }

    /// The box pages (binding `k` holds boxes `k·page .. (k+1)·page`, page =
    /// [`box_page_elems`](Self::box_page_elems)), for a producer kernel.
    pub fn box_pages(&self) -> impl ExactSizeIterator<Item = &wgpu::Buffer> {
        self.aabbs.pages()
    }

    /// Boxes per box page.
    pub fn box_page_elems(&self) -> u64 {
        self.aabbs.page_elems()
    }

    /// The pair pages (`vec2<u32>` `[i, j]`, `i < j`, unsorted), as the
    /// box pages; the first `min(pairs, pair_capacity)` are valid, where
    /// `pairs` is the second `u32` of [`counters`](Self::counters).
    pub fn pair_pages(&self) -> impl ExactSizeIterator<Item = &wgpu::Buffer> {
        self.pairs.pages()
    }

    /// Pairs per pair page.
    pub fn pair_page_elems(&self) -> u64 {
        self.pairs.page_elems()
    }

    /// Pairs the pair pages hold; a run that finds more keeps counting (see
    /// [`read_counts`](Self::read_counts)) but stores only this many.
    pub fn pair_capacity(&self) -> u64 {
        self.pair_capacity
    }

    /// The counters of the last encoded run, two `u32` on the GPU:
    /// (cell entries, pairs), both exact even past the capacities.
    pub fn counters(&self) -> &wgpu::Buffer {
        self.counters.get()
    }

    /// Chooses the kernel's grid for `params` (hashed keys when the dense
    /// table would not fit one binding) and sizes every buffer but the boxes.
    fn configure(
        &mut self,
        ctx: &GpuContext,
        mut params: GridParams,
        box_count: usize,
        expected_pairs: u64,
    ) -> Result<(), GpuError> {
        params.box_count = u32::try_from(box_count).map_err(|_| GpuError::TooLarge {
            what: "box count",
            bytes: box_count as u64,
            limit: u64::from(u32::MAX),
        })?;
        let valid_cell = params.cell_size.is_finite() && params.cell_size > 0.0 && params.inv_cell_size > 0.0;
        let valid_table = params.table_size > 0
            && (params.dense != 0 || params.table_size.is_power_of_two())
            && (params.dense == 0 || u64::from(params.width) <= u64::from(params.table_size));
        if !(valid_cell && valid_table) {
            return Err(GpuError::Runtime {
                kernel: "broadphase",
                message: format!(
                    "invalid grid {params:?}: needs a finite positive cell size, at least one bucket, \
                     a power-of-two table for hashed keys"
                ),
            });
        }
        self.params = params;
        self.gpu_params = params;
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
        let n = box_count as u64;
        let mut rebind = false;
        if self.buckets.ensure(ctx, u64::from(self.gpu_params.table_size).max(1) * 4)? {
            self.scan.bind(ctx, self.buckets.get(), self.buckets.capacity() / 4)?;
            rebind = true;
        }
        // First guesses, at most what the pages hold; an overflow reruns
        // with the exact sizes.
        let entries = (4 * n).max(1024).min(self.sorted.max_elems(ctx)?);
        let pairs = expected_pairs.max(1024).min(self.pairs.max_elems(ctx)?);
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
}
