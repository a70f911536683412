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
        ctx.submit("readback", [encoder.finish()])?;
        map_read(ctx, self.staging.get(), count, out)
    }
}

impl Readback {
    /// Copies the first `count` elements of the paged array `source` into
    /// `out` (replacing its contents), one page at a time, so that the
    /// staging buffer never exceeds one page.
    pub fn read_paged<T: Pod>(
        &mut self,
        ctx: &GpuContext,
        source: &PagedBuffer,
        count: usize,
        out: &mut Vec<T>,
    ) -> Result<(), GpuError> {
        out.clear();
        let page_elems = source.page_elems() as usize;
        for (k, page) in source.pages().enumerate() {
            let n = count.saturating_sub(k * page_elems).min(page_elems);
            if n == 0 {
                break;
            }
            let copy = ((n * size_of::<T>()) as u64).next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT);
            self.staging.ensure(ctx, copy)?;
            let mut encoder =
                ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("readback") });
            encoder.copy_buffer_to_buffer(page, 0, self.staging.get(), 0, copy);
            ctx.submit("readback", [encoder.finish()])?;
            map_append(ctx, self.staging.get(), n, out)?;
        }
        Ok(())
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
    out.clear();
    map_append(ctx, buffer, count, out)
}

/// As [`map_read`], but appends to `out` instead of replacing it (reading a
/// [`PagedBuffer`] page by page into one vector).
pub fn map_append<T: Pod>(
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
        let start = out.len();
        out.resize(start + count, T::zeroed());
        // Copy bytewise: the mapped range's alignment is not guaranteed to suit T.
        bytemuck::cast_slice_mut::<T, u8>(&mut out[start..]).copy_from_slice(&view[..bytes as usize]);
    }
    buffer.unmap();
    Ok(())
}

/// An array too large for one storage binding, held as a fixed number of
/// *pages*: separate buffers of at most `page_elems` elements each, bound as
/// separate bindings. Element `i` lives in page `i / page_elems` at index
/// `i % page_elems`; the shader selects the binding with a `switch` (WGSL has
/// no arrays of storage-buffer bindings without extra features, hence a fixed
/// page count rather than as many as needed).
///
/// Why pages rather than one buffer bound at several offsets: separate
/// buffers also stay under `max_buffer_size`, and each page obeys the binding
/// limit by construction. Every page is allocated (at least one granule,
/// even when unused) so that the bind group is always complete.
///
/// Like [`GrowableBuffer`] it only grows: nothing is allocated once the
/// largest size has been seen. The capacity is at most
/// `pages × page_elems`; asking for more is [`GpuError::TooLargeSplit`].
pub struct PagedBuffer {
    pages: Vec<GrowableBuffer>,
    elem_bytes: u64,
    page_elems: u64,
    label: &'static str,
}

impl PagedBuffer {
    /// `pages` empty pages of `elem_bytes`-byte elements with these usages.
    pub fn new(label: &'static str, usage: wgpu::BufferUsages, elem_bytes: u64, pages: usize) -> Self {
        Self {
            pages: (0..pages.max(1)).map(|_| GrowableBuffer::new(label, usage)).collect(),
            elem_bytes,
            page_elems: 0,
            label,
        }
    }

    /// Elements per page on this adapter: as many whole elements as fit in
    /// the binding limit rounded down to the allocation granule (so that the
    /// granule rounding of [`GrowableBuffer`] never passes the limit), and
    /// at most `u32::MAX` (the shader indexes with `u32`).
    pub fn page_elems_for(&self, ctx: &GpuContext) -> Result<u64, GpuError> {
        let usable = ctx.max_binding_bytes() / BUFFER_ALIGNMENT * BUFFER_ALIGNMENT;
        let elems = (usable / self.elem_bytes).min(u64::from(u32::MAX));
        if elems == 0 {
            return Err(GpuError::TooLarge {
                what: self.label,
                bytes: self.elem_bytes,
                limit: ctx.max_binding_bytes(),
            });
        }
        Ok(elems)
    }

    /// The most elements this buffer can hold on this adapter.
    pub fn max_elems(&self, ctx: &GpuContext) -> Result<u64, GpuError> {
        Ok(self.page_elems_for(ctx)? * self.pages.len() as u64)
    }

    /// Makes room for `elems` elements. Returns true when any page was
    /// (re)allocated (bind groups must be rebuilt).
    pub fn ensure(&mut self, ctx: &GpuContext, elems: u64) -> Result<bool, GpuError> {
        let page = self.page_elems_for(ctx)?;
        let max = page * self.pages.len() as u64;
        if elems > max {
            return Err(GpuError::TooLargeSplit {
                what: self.label,
                bytes: elems * self.elem_bytes,
                bindings: self.pages.len() as u32,
                binding_bytes: page * self.elem_bytes,
            });
        }
        let mut grew = page != self.page_elems;
        self.page_elems = page;
        for (k, buffer) in self.pages.iter_mut().enumerate() {
            let need = elems.saturating_sub(k as u64 * page).min(page);
            grew |= buffer.ensure(ctx, need * self.elem_bytes)?;
        }
        Ok(grew)
    }

    /// Elements that fit: the pages are filled in order, so this counts full
    /// pages and the part of the first one that is not full.
    pub fn capacity(&self) -> u64 {
        let mut total = 0;
        for buffer in &self.pages {
            let elems = (buffer.capacity() / self.elem_bytes).min(self.page_elems);
            total += elems;
            if elems < self.page_elems {
                break;
            }
        }
        total
    }

    /// Elements per page (0 before the first [`ensure`](Self::ensure)).
    pub fn page_elems(&self) -> u64 {
        self.page_elems
    }

    /// The page buffers, in order.
    pub fn pages(&self) -> impl ExactSizeIterator<Item = &wgpu::Buffer> {
        self.pages.iter().map(GrowableBuffer::get)
    }

    /// Ensures room for `data` and queues its upload, page by page. Returns
    /// true when any page was reallocated.
    pub fn upload<T: Pod>(&mut self, ctx: &GpuContext, data: &[T]) -> Result<bool, GpuError> {
        debug_assert_eq!(size_of::<T>() as u64, self.elem_bytes);
        let grew = self.ensure(ctx, data.len() as u64)?;
        for (page, part) in self.pages.iter().zip(data.chunks(self.page_elems as usize)) {
            ctx.queue.write_buffer(page.get(), 0, bytemuck::cast_slice(part));
        }
        Ok(grew)
    }
}
