//! Exclusive prefix sum on the GPU (`shaders/prefix_sum.wgsl`): multi-level
//! scan-then-propagate. Level ℓ scans 256-element blocks of its data and
//! writes block totals into level ℓ+1's data; the last level fits one block;
//! then block offsets propagate back down. Only ordinary dispatch ordering
//! synchronises workgroups, so it is portable to adapters without
//! forward-progress guarantees.
//!
//! Several scans may share one submission (substeps, batches of steps): each
//! `encode` takes its own parameter slot (a dynamic uniform offset) instead
//! of overwriting one uniform, up to [`PARAM_SLOTS`] scans per submission;
//! call [`PrefixSum::reset_slots`] when a new submission starts.
//!
//! [`PrefixSum::encode`] records every level into the caller's compute pass
//! (the production path: one pass, no timestamps). When a kernel is profiled,
//! [`PrefixSum::encode_profiled`] gives each level's dispatch a compute pass
//! of its own, named after its direction and level (`scan_blocks_l0`,
//! `scan_blocks_l1`, …, `add_offsets_l0`), so that a slow level — the one
//! whose block sums stop fitting in a cache, say — shows in `mx2d bench
//! --passes` (issue 13).

use super::WORKGROUP_SIZE;
use super::buffers::GrowableBuffer;
use super::context::{GpuContext, GpuError};
use super::timing::PassProfiler;
use bytemuck::{Pod, Zeroable};
use std::sync::atomic::{AtomicU64, Ordering};

/// Scans that can share one submission (parameter slots per level).
pub const PARAM_SLOTS: u64 = 32;

/// Bytes between parameter slots: a multiple of every adapter's
/// `min_uniform_buffer_offset_alignment` (at most 256).
const SLOT_STRIDE: u64 = 256;

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
struct ScanParams {
    count: u32,
    _pad: [u32; 3],
}

struct Level {
    params: wgpu::Buffer,
    /// Block totals of this level (the data of the next level); held so the
    /// buffer's lifetime is visibly tied to the level.
    _sums: GrowableBuffer,
    bind_group: wgpu::BindGroup,
}

/// A reusable in-place exclusive prefix sum over a `u32` storage buffer.
pub struct PrefixSum {
    scan_blocks: wgpu::ComputePipeline,
    add_block_offsets: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
    levels: Vec<Level>,
    capacity: u64,
    /// Next parameter slot (wraps after [`PARAM_SLOTS`]).
    next_slot: AtomicU64,
}

/// Most levels a scan may have (a `u32` count needs at most 4; one spare).
pub const MAX_LEVELS: usize = 5;

/// Pass names of the up-sweep (block scans), level by level.
const SCAN_BLOCKS_NAMES: [&str; MAX_LEVELS] =
    ["scan_blocks_l0", "scan_blocks_l1", "scan_blocks_l2", "scan_blocks_l3", "scan_blocks_l4"];
/// Pass names of the down-sweep (block offsets added), level by level.
const ADD_OFFSETS_NAMES: [&str; MAX_LEVELS] =
    ["add_offsets_l0", "add_offsets_l1", "add_offsets_l2", "add_offsets_l3", "add_offsets_l4"];

/// The names of the passes [`PrefixSum::encode_profiled`] records for a scan
/// of `count` elements, in submission order: the block scans from the data up,
/// then the offsets added from the top level down.
pub fn profiled_pass_names(count: u64) -> Vec<&'static str> {
    if count == 0 {
        return Vec::new();
    }
    let levels = level_counts(count).len().min(MAX_LEVELS);
    let up = SCAN_BLOCKS_NAMES[..levels].iter();
    let down = ADD_OFFSETS_NAMES[..levels - 1].iter().rev();
    up.chain(down).copied().collect()
}

/// Element counts of the levels needed for `count` elements.
fn level_counts(count: u64) -> Vec<u64> {
    let mut counts = vec![count];
    while let Some(&last) = counts.last() {
        if last <= u64::from(WORKGROUP_SIZE) {
            break;
        }
        counts.push(last.div_ceil(u64::from(WORKGROUP_SIZE)));
    }
    counts
}

impl PrefixSum {
    /// Compiles the scan kernels.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        let shader = ctx.shader_module("prefix_sum.wgsl", wgpu::include_wgsl!("../../shaders/prefix_sum.wgsl"))?;
        let entry = |binding, ty, dynamic| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer { ty, has_dynamic_offset: dynamic, min_binding_size: None },
            count: None,
        };
        let storage = wgpu::BufferBindingType::Storage { read_only: false };
        let layout = ctx.device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("prefix_sum"),
            entries: &[
                entry(0, wgpu::BufferBindingType::Uniform, true),
                entry(1, storage, false),
                entry(2, storage, false),
            ],
        });
        let pipeline_layout = ctx.device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("prefix_sum"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        Ok(Self {
            scan_blocks: ctx.compute_pipeline(&shader, "scan_blocks", &pipeline_layout)?,
            add_block_offsets: ctx.compute_pipeline(&shader, "add_block_offsets", &pipeline_layout)?,
            layout,
            levels: Vec::new(),
            capacity: 0,
            next_slot: AtomicU64::new(0),
        })
    }

    /// Binds the scan to `data` (capacity `capacity` elements); call again
    /// whenever that buffer is reallocated.
    pub fn bind(&mut self, ctx: &GpuContext, data: &wgpu::Buffer, capacity: u64) -> Result<(), GpuError> {
        self.levels.clear();
        self.capacity = capacity;
        let counts = level_counts(capacity.max(1));
        let mut level_data = data.clone();
        for &count in &counts {
            let mut sums = GrowableBuffer::new("prefix_sum block sums", wgpu::BufferUsages::STORAGE);
            sums.ensure(ctx, count.div_ceil(u64::from(WORKGROUP_SIZE)) * 4)?;
            let params = ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("prefix_sum params"),
                size: PARAM_SLOTS * SLOT_STRIDE,
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            let bind_group = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("prefix_sum"),
                layout: &self.layout,
                entries: &[
                    wgpu::BindGroupEntry {
                        binding: 0,
                        resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                            buffer: &params,
                            offset: 0,
                            size: std::num::NonZeroU64::new(size_of::<ScanParams>() as u64),
                        }),
                    },
                    wgpu::BindGroupEntry { binding: 1, resource: level_data.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 2, resource: sums.get().as_entire_binding() },
                ],
            });
            level_data = sums.get().clone();
            self.levels.push(Level { params, _sums: sums, bind_group });
        }
        Ok(())
    }

    /// Starts a new submission: the next `encode` uses the first parameter slot.
    pub fn reset_slots(&self) {
        self.next_slot.store(0, Ordering::Relaxed);
    }

    /// Checks `count` against the bound capacity and queues the level sizes
    /// into the next parameter slot; returns the levels' element counts and
    /// the slot's dynamic offset.
    fn prepare(&self, ctx: &GpuContext, count: u64) -> Result<(Vec<u64>, u32), GpuError> {
        if count > self.capacity {
            return Err(GpuError::Runtime {
                kernel: "scan_blocks",
                message: format!("prefix sum bound to {} elements, asked for {count}", self.capacity),
            });
        }
        let counts = level_counts(count);
        if counts.len() > MAX_LEVELS || counts.len() > self.levels.len() {
            return Err(GpuError::Runtime {
                kernel: "scan_blocks",
                message: format!("a scan of {count} elements needs {} levels", counts.len()),
            });
        }
        let slot = self.next_slot.fetch_add(1, Ordering::Relaxed) % PARAM_SLOTS;
        let offset = slot * SLOT_STRIDE;
        for (level, &n) in self.levels.iter().zip(&counts) {
            let params = ScanParams { count: n as u32, _pad: [0; 3] };
            ctx.queue.write_buffer(&level.params, offset, bytemuck::bytes_of(&params));
        }
        Ok((counts, offset as u32))
    }

    /// The dispatches of one scan in order: (add offsets?, level, elements).
    /// Up the levels with `scan_blocks`, then down with `add_block_offsets`
    /// (the top level, one block, needs no offsets).
    fn dispatches(counts: &[u64]) -> impl Iterator<Item = (bool, usize, u64)> + '_ {
        let up = counts.iter().enumerate().map(|(level, &n)| (false, level, n));
        let down = counts.iter().enumerate().take(counts.len() - 1).rev().map(|(level, &n)| (true, level, n));
        up.chain(down)
    }

    fn dispatch(
        &self,
        ctx: &GpuContext,
        pass: &mut wgpu::ComputePass<'_>,
        (add_offsets, level, n): (bool, usize, u64),
        offset: u32,
    ) -> Result<(), GpuError> {
        let (x, y) = ctx.dispatch_grid(n)?;
        pass.set_pipeline(if add_offsets { &self.add_block_offsets } else { &self.scan_blocks });
        pass.set_bind_group(0, &self.levels[level].bind_group, &[offset]);
        pass.dispatch_workgroups(x, y, 1);
        Ok(())
    }

    /// Records the scan of the first `count` elements into `pass` (and queues
    /// the level sizes into this scan's own parameter slot, which take effect
    /// at the next submission: up to [`PARAM_SLOTS`] scans per submission).
    pub fn encode(&self, ctx: &GpuContext, pass: &mut wgpu::ComputePass<'_>, count: u64) -> Result<(), GpuError> {
        if count == 0 {
            return Ok(());
        }
        let (counts, offset) = self.prepare(ctx, count)?;
        for step in Self::dispatches(&counts) {
            self.dispatch(ctx, pass, step, offset)?;
        }
        Ok(())
    }

    /// As [`encode`](Self::encode), with every level's dispatch in a compute
    /// pass of its own, timed by `profiler` under the names
    /// [`profiled_pass_names`] gives. Passes in one encoder run in order and
    /// see each other's storage writes, so the result is the same.
    pub fn encode_profiled(
        &self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        profiler: &mut PassProfiler,
        count: u64,
    ) -> Result<(), GpuError> {
        if count == 0 {
            return Ok(());
        }
        let (counts, offset) = self.prepare(ctx, count)?;
        for step @ (add_offsets, level, _) in Self::dispatches(&counts) {
            let name = if add_offsets { ADD_OFFSETS_NAMES[level] } else { SCAN_BLOCKS_NAMES[level] };
            {
                let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                    label: Some(name),
                    timestamp_writes: profiler.writes(name),
                });
                self.dispatch(ctx, &mut pass, step, offset)?;
            }
            profiler.end_pass(ctx, encoder)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn level_counts_shrink_by_workgroups_until_one_block() {
        assert_eq!(super::level_counts(10), vec![10]);
        assert_eq!(super::level_counts(256), vec![256]);
        assert_eq!(super::level_counts(257), vec![257, 2]);
        assert_eq!(super::level_counts(1 << 20), vec![1 << 20, 4096, 16]);
    }

    #[test]
    fn profiled_names_go_up_the_levels_then_down() {
        assert!(super::profiled_pass_names(0).is_empty());
        assert_eq!(super::profiled_pass_names(256), ["scan_blocks_l0"]);
        assert_eq!(
            super::profiled_pass_names(1 << 20),
            ["scan_blocks_l0", "scan_blocks_l1", "scan_blocks_l2", "add_offsets_l1", "add_offsets_l0"]
        );
        // The largest u32 count needs 4 levels (256⁴ = 2³²): the names suffice.
        let most = super::level_counts(u64::from(u32::MAX)).len();
        assert_eq!(most, 4);
        assert_eq!(super::profiled_pass_names(u64::from(u32::MAX)).len(), 2 * most - 1);
    }
}
