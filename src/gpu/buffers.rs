//! Buffers that are allocated once and reused every step, and readback.
//!
//! Alignment rules: buffer copies need 4-byte sizes and offsets
//! (`COPY_BUFFER_ALIGNMENT`), mapping needs 8-byte offsets (`MAP_ALIGNMENT`),
//! and bound ranges start at multiples of `min_storage_buffer_offset_alignment`
//! (256 on most adapters). All sizes here are rounded up to 256 bytes, so every
//! rule holds whatever the element size.

use super::context::{GpuContext, GpuError};
use bytemuck::Pod;

/// Allocation granule of every buffer (covers all copy/map/offset alignments).
pub const BUFFER_ALIGNMENT: u64 = 256;

/// A GPU buffer that only grows: [`ensure`](Self::ensure) reallocates when
/// asked for more bytes than it has, and tells the caller so that bind
/// groups can be rebuilt; otherwise nothing is allocated.
pub struct GrowableBuffer {
    buffer: Option<wgpu::Buffer>,
    capacity: u64,
    usage: wgpu::BufferUsages,
    label: &'static str,
}

impl GrowableBuffer {
    /// An empty buffer with these usages.
    pub fn new(label: &'static str, usage: wgpu::BufferUsages) -> Self {
        Self { buffer: None, capacity: 0, usage, label }
    }

    /// Makes room for `bytes` (at least one granule). Returns true when the
    /// buffer was (re)allocated.
    pub fn ensure(&mut self, ctx: &GpuContext, bytes: u64) -> Result<bool, GpuError> {
        let bytes = bytes.max(1).next_multiple_of(BUFFER_ALIGNMENT);
        if self.buffer.is_some() && bytes <= self.capacity {
            return Ok(false);
        }
        let storage = self.usage.contains(wgpu::BufferUsages::STORAGE);
        let limit = if storage { ctx.max_binding_bytes() } else { ctx.limits().max_buffer_size };
        if bytes > limit {
            return Err(GpuError::TooLarge { what: self.label, bytes, limit });
        }
        self.buffer = Some(ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(self.label),
            size: bytes,
            usage: self.usage,
            mapped_at_creation: false,
        }));
        self.capacity = bytes;
        Ok(true)
    }

    /// The buffer; call [`ensure`](Self::ensure) first.
    ///
    /// # Panics
    /// If never allocated (a bug in the caller's ordering, not a GPU failure).
    pub fn get(&self) -> &wgpu::Buffer {
        self.buffer.as_ref().expect("GrowableBuffer::ensure must be called before use")
    }

    /// Allocated bytes.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Ensures room for `data` and queues its upload (staged by wgpu, applied
    /// before the next submission). Returns true when reallocated.
    pub fn upload<T: Pod>(&mut self, ctx: &GpuContext, data: &[T]) -> Result<bool, GpuError> {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        let grew = self.ensure(ctx, bytes.len() as u64)?;
        // write_buffer needs a multiple of 4 bytes; every Pod here is.
        if !bytes.is_empty() {
            ctx.queue.write_buffer(self.get(), 0, bytes);
        }
        Ok(grew)
    }
}

/// A staging buffer for reading results back, reused between calls.
pub struct Readback {
    staging: GrowableBuffer,
}

impl Default for Readback {
    fn default() -> Self {
        Self::new()
    }
}

impl Readback {
    /// An empty staging buffer.
    pub fn new() -> Self {
        Self {
            staging: GrowableBuffer::new(
                "readback staging",
                wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            ),
        }
    }

    /// Copies `count` elements of `T` from the start of `source` into `out`
    /// (replacing its contents); submits and waits.
    pub fn read<T: Pod>(
        &mut self,
        ctx: &GpuContext,
        source: &wgpu::Buffer,
        count: usize,
        out: &mut Vec<T>,
    ) -> Result<(), GpuError> {
        out.clear();
        if count == 0 {
            return Ok(());
        }
        let bytes = (count * size_of::<T>()) as u64;
        let copy = bytes.next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT);
        self.staging.ensure(ctx, copy)?;
        let mut encoder =
            ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("readback") });
        encoder.copy_buffer_to_buffer(source, 0, self.staging.get(), 0, copy);
        ctx.queue.submit([encoder.finish()]);
        map_read(ctx, self.staging.get(), count, out)
    }
}

/// Maps `buffer` (MAP_READ, copies already submitted), copies its first
/// `count` elements into `out`, and unmaps.
pub fn map_read<T: Pod>(
    ctx: &GpuContext,
    buffer: &wgpu::Buffer,
    count: usize,
    out: &mut Vec<T>,
) -> Result<(), GpuError> {
    let bytes = (count * size_of::<T>()) as u64;
    let mapped = bytes.next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT).max(wgpu::COPY_BUFFER_ALIGNMENT);
    let (sender, receiver) = std::sync::mpsc::channel();
    buffer.slice(..mapped).map_async(wgpu::MapMode::Read, move |result| {
        // The receiver lives until after the poll below; a failed send only
        // means the caller already returned with an error.
        let _ = sender.send(result);
    });
    ctx.wait("readback")?;
    let status = receiver.recv().map_err(|e| GpuError::Runtime { kernel: "readback", message: e.to_string() })?;
    status.map_err(|e| GpuError::Runtime { kernel: "readback", message: e.to_string() })?;
    {
        let view = buffer
            .slice(..mapped)
            .get_mapped_range()
            .map_err(|e| GpuError::Runtime { kernel: "readback", message: e.to_string() })?;
        out.clear();
        out.resize(count, T::zeroed());
        // Copy bytewise: the mapped range's alignment is not guaranteed to suit T.
        bytemuck::cast_slice_mut::<T, u8>(out).copy_from_slice(&view[..bytes as usize]);
    }
    buffer.unmap();
    Ok(())
}
