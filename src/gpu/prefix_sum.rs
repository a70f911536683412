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

use super::WORKGROUP_SIZE;
use super::buffers::GrowableBuffer;
use super::context::{GpuContext, GpuError};
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

    /// Records the scan of the first `count` elements into `pass` (and queues
    /// the level sizes into this scan's own parameter slot, which take effect
    /// at the next submission: up to [`PARAM_SLOTS`] scans per submission).
    pub fn encode(&self, ctx: &GpuContext, pass: &mut wgpu::ComputePass<'_>, count: u64) -> Result<(), GpuError> {
        if count == 0 {
            return Ok(());
        }
        if count > self.capacity {
            return Err(GpuError::Runtime {
                kernel: "scan_blocks",
                message: format!("prefix sum bound to {} elements, asked for {count}", self.capacity),
            });
        }
        let counts = level_counts(count);
        let slot = self.next_slot.fetch_add(1, Ordering::Relaxed) % PARAM_SLOTS;
        let offset = slot * SLOT_STRIDE;
        for (level, &n) in self.levels.iter().zip(&counts) {
            let params = ScanParams { count: n as u32, _pad: [0; 3] };
            ctx.queue.write_buffer(&level.params, offset, bytemuck::bytes_of(&params));
        }
        let dynamic = [offset as u32];
        pass.set_pipeline(&self.scan_blocks);
        for (level, &n) in self.levels.iter().zip(&counts) {
            let (x, y) = ctx.dispatch_grid(n)?;
            pass.set_bind_group(0, &level.bind_group, &dynamic);
            pass.dispatch_workgroups(x, y, 1);
        }
        pass.set_pipeline(&self.add_block_offsets);
        for (level, &n) in self.levels.iter().zip(&counts).take(counts.len() - 1).rev() {
            let (x, y) = ctx.dispatch_grid(n)?;
            pass.set_bind_group(0, &level.bind_group, &dynamic);
            pass.dispatch_workgroups(x, y, 1);
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
}
