//! Offscreen rendering to an RGBA8 image and PNG files.
//!
//! A texture-to-buffer copy needs rows padded to
//! `wgpu::COPY_BYTES_PER_ROW_ALIGNMENT` (256 bytes), so a `w`-pixel row
//! occupies `ceil(4w / 256)·256` bytes in the readback buffer;
//! [`unpad_rows`] drops the padding (odd widths are where a wrong stride
//! shears the picture).

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;

use super::{Camera, DrawList, Renderer, TextImage};
use crate::gpu::buffers::{GrowableBuffer, map_read};
use crate::gpu::{GpuContext, GpuError};

/// The offscreen format: RGBA8, values written as the shader gives them.
pub const OFFSCREEN_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Rgba8Unorm;

/// An RGBA8 picture, rows top first, no padding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    /// Width (pixels).
    pub width: u32,
    /// Height (pixels).
    pub height: u32,
    /// `4 · width · height` bytes.
    pub rgba: Vec<u8>,
}

impl Image {
    /// The pixel at column `x`, row `y` (from the top).
    pub fn pixel(&self, x: u32, y: u32) -> [u8; 4] {
        let i = 4 * (y as usize * self.width as usize + x as usize);
        [self.rgba[i], self.rgba[i + 1], self.rgba[i + 2], self.rgba[i + 3]]
    }

    /// An opaque picture from RGB8 rows (plotters' bitmap buffer).
    pub fn from_rgb(width: u32, height: u32, rgb: &[u8]) -> Self {
        Self { width, height, rgba: rgb.chunks_exact(3).flat_map(|c| [c[0], c[1], c[2], 255]).collect() }
    }

    /// Writes an 8-bit RGBA PNG.
    pub fn write_png(&self, path: &Path) -> anyhow::Result<()> {
        let file = std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
        let mut encoder = ::png::Encoder::new(std::io::BufWriter::new(file), self.width, self.height);
        encoder.set_color(::png::ColorType::Rgba);
        encoder.set_depth(::png::BitDepth::Eight);
        let mut writer = encoder.write_header().with_context(|| format!("writing {}", path.display()))?;
        writer.write_image_data(&self.rgba).with_context(|| format!("writing {}", path.display()))?;
        writer.finish().with_context(|| format!("writing {}", path.display()))?;
        Ok(())
    }

    /// Reads an 8-bit RGBA or RGB PNG (tests, and checking what was written).
    pub fn read_png(path: &Path) -> anyhow::Result<Self> {
        let file = std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        let decoder = ::png::Decoder::new(std::io::BufReader::new(file));
        let mut reader = decoder.read_info().with_context(|| format!("reading {}", path.display()))?;
        let size = reader.output_buffer_size().context("PNG too large")?;
        let mut buf = vec![0; size];
        let info = reader.next_frame(&mut buf).with_context(|| format!("reading {}", path.display()))?;
        anyhow::ensure!(info.bit_depth == ::png::BitDepth::Eight, "{}: not an 8-bit PNG", path.display());
        let rgba = match info.color_type {
            ::png::ColorType::Rgba => buf[..info.buffer_size()].to_vec(),
            ::png::ColorType::Rgb => {
                buf[..info.buffer_size()].chunks(3).flat_map(|c| [c[0], c[1], c[2], 255]).collect()
            }
            other => anyhow::bail!("{}: unsupported PNG colour type {other:?}", path.display()),
        };
        Ok(Self { width: info.width, height: info.height, rgba })
    }
}

/// Bytes per row of a `width`-pixel RGBA8 texture in a copy buffer.
pub fn padded_bytes_per_row(width: u32) -> u32 {
    (4 * width).next_multiple_of(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT)
}

/// Drops the row padding of a texture copy: `height` rows of
/// `padded_row` bytes, of which the first `4 · width` are pixels.
pub fn unpad_rows(padded: &[u8], width: u32, height: u32, padded_row: u32) -> Vec<u8> {
    let row = 4 * width as usize;
    let mut out = Vec::with_capacity(row * height as usize);
    for y in 0..height as usize {
        let start = y * padded_row as usize;
        out.extend_from_slice(&padded[start..start + row]);
    }
    out
}

/// Checks a requested picture size against the adapter (before allocating).
pub fn check_size(ctx: &GpuContext, width: u32, height: u32) -> Result<(), GpuError> {
    let max = ctx.limits().max_texture_dimension_2d;
    if width == 0 || height == 0 || width > max || height > max {
        return Err(GpuError::Runtime {
            kernel: "render",
            message: format!("a picture of {width}×{height} pixels: each side must be 1 to {max} on this adapter"),
        });
    }
    Ok(())
}

/// A renderer with an offscreen texture: draw, read back, get an [`Image`].
pub struct Offscreen {
    renderer: Renderer,
    target: Option<(wgpu::Texture, u32, u32)>,
    readback: GrowableBuffer,
    padded: Vec<u8>,
}

impl Offscreen {
    /// Pipelines for [`OFFSCREEN_FORMAT`] on `ctx`.
    pub fn new(ctx: Arc<GpuContext>) -> Result<Self, GpuError> {
        Ok(Self {
            renderer: Renderer::new(ctx, OFFSCREEN_FORMAT)?,
            target: None,
            readback: GrowableBuffer::new(
                "render readback",
                wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            ),
            padded: Vec::new(),
        })
    }

    /// The renderer (its context, its disc bind groups).
    pub fn renderer(&self) -> &Renderer {
        &self.renderer
    }

    /// Draws `list` (and `external_discs`, see [`Renderer::encode`]) into the
    /// offscreen target and waits for the GPU, without reading back: the
    /// drawing cost of a frame, for benchmarks.
    pub fn draw(
        &mut self,
        list: &DrawList,
        camera: &Camera,
        size: (u32, u32),
        background: u32,
        external_discs: &[(&wgpu::BindGroup, u32)],
    ) -> Result<(), GpuError> {
        let encoder = self.encode_frame(list, camera, size, background, None, external_discs, false)?;
        let ctx = self.renderer.context().clone();
        ctx.submit("render", [encoder.finish()])?;
        ctx.wait("render")
    }

    /// Draws `list` seen by `camera` into a `width × height` picture and
    /// reads it back (this waits for the GPU).
    pub fn render(
        &mut self,
        list: &DrawList,
        camera: &Camera,
        (width, height): (u32, u32),
        background: u32,
        overlay: Option<&TextImage>,
    ) -> Result<Image, GpuError> {
        let encoder = self.encode_frame(list, camera, (width, height), background, overlay, &[], true)?;
        let ctx = self.renderer.context().clone();
        let padded_row = padded_bytes_per_row(width);
        let bytes = u64::from(padded_row) * u64::from(height);
        ctx.submit("render", [encoder.finish()])?;
        map_read(&ctx, self.readback.get(), bytes as usize, &mut self.padded)?;
        Ok(Image { width, height, rgba: unpad_rows(&self.padded, width, height, padded_row) })
    }

    #[allow(clippy::too_many_arguments)]
    fn encode_frame(
        &mut self,
        list: &DrawList,
        camera: &Camera,
        (width, height): (u32, u32),
        background: u32,
        overlay: Option<&TextImage>,
        external_discs: &[(&wgpu::BindGroup, u32)],
        readback: bool,
    ) -> Result<wgpu::CommandEncoder, GpuError> {
        let ctx = self.renderer.context().clone();
        check_size(&ctx, width, height)?;
        if self.target.as_ref().is_none_or(|(_, w, h)| (*w, *h) != (width, height)) {
            let texture = ctx.device.create_texture(&wgpu::TextureDescriptor {
                label: Some("render offscreen"),
                size: wgpu::Extent3d { width, height, depth_or_array_layers: 1 },
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format: OFFSCREEN_FORMAT,
                usage: wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
                view_formats: &[],
            });
            self.target = Some((texture, width, height));
        }
        let padded_row = padded_bytes_per_row(width);
        let bytes = u64::from(padded_row) * u64::from(height);
        if readback {
            self.readback.ensure(&ctx, bytes)?;
        }
        self.renderer.prepare(list, camera, (width, height), overlay)?;
        let Some((texture, _, _)) = &self.target else {
            return Err(GpuError::Runtime { kernel: "render", message: "no offscreen target".into() });
        };
        let view = texture.create_view(&wgpu::TextureViewDescriptor::default());
        let mut encoder = ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("render") });
        self.renderer.encode(&mut encoder, &view, background, external_discs);
        if readback {
            encoder.copy_texture_to_buffer(
                wgpu::TexelCopyTextureInfo {
                    texture,
                    mip_level: 0,
                    origin: wgpu::Origin3d::ZERO,
                    aspect: wgpu::TextureAspect::All,
                },
                wgpu::TexelCopyBufferInfo {
                    buffer: self.readback.get(),
                    layout: wgpu::TexelCopyBufferLayout {
                        offset: 0,
                        bytes_per_row: Some(padded_row),
                        rows_per_image: Some(height),
                    },
                },
                wgpu::Extent3d { width, height, depth_or_array_layers: 1 },
            );
        }
        Ok(encoder)
    }
}
