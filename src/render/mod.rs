//! Seeing a world: one wgpu renderer for two targets, a window surface
//! ([`window`]) and an offscreen texture written as PNG ([`png`]).
//!
//! * [`Renderer`] builds its three pipelines (`shaders/render.wgsl`: discs,
//!   meshes, overlay) once for a target format and draws a [`DrawList`] in
//!   one render pass: surfaces, fields and non-circular bodies, then the
//!   discs (instanced quads with a signed-distance fragment shader, read
//!   from a storage buffer of [`DiscInstance`]), then joints and arrows, then
//!   the text overlay.
//! * [`balls`]: a population's balls, drawn by `ball_vs` straight from the
//!   GPU backend's storage buffers (no readback) or from the CPU twin's
//!   arrays uploaded in the same layout; coloured by speed, mass or id.
//! * [`tessellate`] turns a world into a [`DrawList`] from
//!   [`Shape::outline`](crate::shape::Shape::outline) and
//!   [`Surface::outline`](crate::surface::SurfaceGeometry::outline).
//! * [`camera`]: centre and pixels per metre; [`overlay`]: text.
//! * [`png`]: offscreen target, readback with 256-byte row alignment, PNG.
//! * [`headless`]: `mx2d render` and `mx2d run --frames DIR --every K`.
//! * [`plot`]: `--energy-plot` with plotters.
//! * [`window`]: the winit 0.30 application (`mx2d`, `mx2d run SCENE`).
//!
//! Drawing never changes the simulation: it reads the world (and the
//! reactions the caller computed) and nothing else.

pub mod ball_energy;
pub mod balls;
pub mod camera;
pub mod headless;
pub mod overlay;
pub mod plot;
pub mod plot_text;
pub mod png;
pub mod tessellate;
pub mod window;

use std::sync::Arc;

use crate::gpu::buffers::GrowableBuffer;
use crate::gpu::{GpuContext, GpuError};
pub use balls::{BallColour, BallStyle, Balls, GpuBalls, HostBalls};
pub use camera::Camera;
pub use overlay::TextImage;
pub use tessellate::{DiscInstance, DrawList, Extras, Style, Vertex, draw_list, rgba};

/// Pipelines and buffers to draw [`DrawList`]s into targets of one format.
/// Built once; buffers grow when a frame needs more.
pub struct Renderer {
    ctx: Arc<GpuContext>,
    format: wgpu::TextureFormat,
    view_buffer: wgpu::Buffer,
    view_group: wgpu::BindGroup,
    disc_layout: wgpu::BindGroupLayout,
    overlay_layout: wgpu::BindGroupLayout,
    disc_pipeline: wgpu::RenderPipeline,
    mesh_pipeline: wgpu::RenderPipeline,
    overlay_pipeline: wgpu::RenderPipeline,
    sampler: wgpu::Sampler,
    discs: GrowableBuffer,
    disc_group: Option<wgpu::BindGroup>,
    disc_count: u32,
    ball_layout: wgpu::BindGroupLayout,
    ball_pipeline: wgpu::RenderPipeline,
    ball_style: wgpu::Buffer,
    /// The CPU twin's balls, uploaded: motion, properties, state, id.
    host_balls: [GrowableBuffer; 4],
    ball_group: Option<(wgpu::BindGroup, BallKey)>,
    ball_count: u32,
    under: GrowableBuffer,
    under_count: u32,
    over: GrowableBuffer,
    over_count: u32,
    overlay: Option<OverlayTexture>,
    overlay_vertices: GrowableBuffer,
    overlay_visible: bool,
}

/// Which buffers the cached ball bind group binds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BallKey {
    Host,
    Gpu(u64),
}

struct OverlayTexture {
    texture: wgpu::Texture,
    group: wgpu::BindGroup,
    size: (u32, u32),
}

/// Straight-alpha "over" for colour, and alpha that stays 1 over an opaque
/// background (so PNGs are opaque).
const BLEND: wgpu::BlendState =
    wgpu::BlendState { color: wgpu::BlendComponent::OVER, alpha: wgpu::BlendComponent::OVER };
const BLEND_STRAIGHT: wgpu::BlendState = wgpu::BlendState {
    color: wgpu::BlendComponent {
        src_factor: wgpu::BlendFactor::SrcAlpha,
        dst_factor: wgpu::BlendFactor::OneMinusSrcAlpha,
        operation: wgpu::BlendOperation::Add,
    },
    alpha: BLEND.alpha,
};

impl Renderer {
    /// Builds the pipelines for targets of `format`.
    pub fn new(ctx: Arc<GpuContext>, format: wgpu::TextureFormat) -> Result<Self, GpuError> {
        let device = &ctx.device;
        let shader = ctx.shader_module("render", wgpu::include_wgsl!("../../shaders/render.wgsl"))?;
        // One buffer binding of the given type and stages (no dynamic offset).
        let buffer_entry = |binding, visibility, ty| wgpu::BindGroupLayoutEntry {
            binding,
            visibility,
            ty: wgpu::BindingType::Buffer { ty, has_dynamic_offset: false, min_binding_size: None },
            count: None,
        };
        let uniform = wgpu::BufferBindingType::Uniform;
        let storage = wgpu::BufferBindingType::Storage { read_only: true };
        let vertex = wgpu::ShaderStages::VERTEX;
        let view_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("render view"),
            entries: &[buffer_entry(0, wgpu::ShaderStages::VERTEX_FRAGMENT, uniform)],
        });
        let disc_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("render discs"),
            entries: &[buffer_entry(0, vertex, storage)],
        });
        // Motion, properties, state (the population's buffers), the style,
        // then the balls' ids (colour by id follows a ball through re-sorts).
        let ball_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("render balls"),
            entries: &[
                buffer_entry(0, vertex, storage),
                buffer_entry(1, vertex, storage),
                buffer_entry(2, vertex, storage),
                buffer_entry(3, vertex, uniform),
                buffer_entry(4, vertex, storage),
            ],
        });
        let ball_style = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("render ball style"),
            size: size_of::<balls::BallStyleUniform>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let overlay_layout = device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("render overlay"),
            entries: &[
                wgpu::BindGroupLayoutEntry {
                    binding: 0,
                    visibility: wgpu::ShaderStages::FRAGMENT,
                    ty: wgpu::BindingType::Texture {
                        sample_type: wgpu::TextureSampleType::Float { filterable: true },
                        view_dimension: wgpu::TextureViewDimension::D2,
                        multisampled: false,
                    },
                    count: None,
                },
                wgpu::BindGroupLayoutEntry {
                    binding: 1,
                    visibility: wgpu::ShaderStages::FRAGMENT,
                    ty: wgpu::BindingType::Sampler(wgpu::SamplerBindingType::Filtering),
                    count: None,
                },
            ],
        });
        let view_buffer = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("render view"),
            size: size_of::<camera::ViewUniform>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let view_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("render view"),
            layout: &view_layout,
            entries: &[wgpu::BindGroupEntry { binding: 0, resource: view_buffer.as_entire_binding() }],
        });
        let layout = |label, second: &wgpu::BindGroupLayout| {
            device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                label: Some(label),
                bind_group_layouts: &[Some(&view_layout), Some(second)],
                immediate_size: 0,
            })
        };
        let mesh_layout = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("render mesh"),
            bind_group_layouts: &[Some(&view_layout)],
            immediate_size: 0,
        });
        let disc_pipeline_layout = layout("render discs", &disc_layout);
        let overlay_pipeline_layout = layout("render overlay", &overlay_layout);
        let ball_pipeline_layout = layout("render balls", &ball_layout);
        let target =
            |blend| [Some(wgpu::ColorTargetState { format, blend: Some(blend), write_mask: wgpu::ColorWrites::ALL })];
        let straight = target(BLEND_STRAIGHT);
        let scope = device.push_error_scope(wgpu::ErrorFilter::Validation);
        let pipeline = |label: &'static str,
                        layout: &wgpu::PipelineLayout,
                        vs: &'static str,
                        fs: &'static str,
                        buffers: &[Option<wgpu::VertexBufferLayout>],
                        topology| {
            device.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                label: Some(label),
                layout: Some(layout),
                vertex: wgpu::VertexState {
                    module: &shader,
                    entry_point: Some(vs),
                    compilation_options: Default::default(),
                    buffers,
                },
                primitive: wgpu::PrimitiveState { topology, ..Default::default() },
                depth_stencil: None,
                multisample: wgpu::MultisampleState::default(),
                fragment: Some(wgpu::FragmentState {
                    module: &shader,
                    entry_point: Some(fs),
                    compilation_options: Default::default(),
                    targets: &straight,
                }),
                multiview_mask: None,
                cache: None,
            })
        };
        let disc_pipeline = pipeline(
            "render discs",
            &disc_pipeline_layout,
            "disc_vs",
            "disc_fs",
            &[],
            wgpu::PrimitiveTopology::TriangleStrip,
        );
        let ball_pipeline = pipeline(
            "render balls",
            &ball_pipeline_layout,
            "ball_vs",
            "disc_fs",
            &[],
            wgpu::PrimitiveTopology::TriangleStrip,
        );
        let mesh_attributes = wgpu::vertex_attr_array![0 => Float32x2, 1 => Unorm8x4];
        let mesh_pipeline = pipeline(
            "render mesh",
            &mesh_layout,
            "mesh_vs",
            "mesh_fs",
            &[Some(wgpu::VertexBufferLayout {
                array_stride: size_of::<Vertex>() as u64,
                step_mode: wgpu::VertexStepMode::Vertex,
                attributes: &mesh_attributes,
            })],
            wgpu::PrimitiveTopology::TriangleList,
        );
        let overlay_attributes = wgpu::vertex_attr_array![0 => Float32x2, 1 => Float32x2];
        let overlay_pipeline = pipeline(
            "render overlay",
            &overlay_pipeline_layout,
            "overlay_vs",
            "overlay_fs",
            &[Some(wgpu::VertexBufferLayout {
                array_stride: 16,
                step_mode: wgpu::VertexStepMode::Vertex,
                attributes: &overlay_attributes,
            })],
            wgpu::PrimitiveTopology::TriangleList,
        );
        if let Some(error) = pollster::block_on(scope.pop()) {
            return Err(GpuError::Kernel { kernel: "render pipelines", message: error.to_string() });
        }
        let sampler = device.create_sampler(&wgpu::SamplerDescriptor {
            label: Some("render overlay"),
            mag_filter: wgpu::FilterMode::Nearest,
            min_filter: wgpu::FilterMode::Nearest,
            ..Default::default()
        });
        let copy = wgpu::BufferUsages::COPY_DST;
        Ok(Self {
            format,
            view_buffer,
            view_group,
            disc_layout,
            overlay_layout,
            disc_pipeline,
            mesh_pipeline,
            overlay_pipeline,
            sampler,
            discs: GrowableBuffer::new("render discs", wgpu::BufferUsages::STORAGE | copy),
            disc_group: None,
            disc_count: 0,
            ball_layout,
            ball_pipeline,
            ball_style,
            host_balls: [
                GrowableBuffer::new("render ball motion", wgpu::BufferUsages::STORAGE | copy),
                GrowableBuffer::new("render ball properties", wgpu::BufferUsages::STORAGE | copy),
                GrowableBuffer::new("render ball state", wgpu::BufferUsages::STORAGE | copy),
                GrowableBuffer::new("render ball id", wgpu::BufferUsages::STORAGE | copy),
            ],
            ball_group: None,
            ball_count: 0,
            under: GrowableBuffer::new("render under", wgpu::BufferUsages::VERTEX | copy),
            under_count: 0,
            over: GrowableBuffer::new("render over", wgpu::BufferUsages::VERTEX | copy),
            over_count: 0,
            overlay: None,
            overlay_vertices: GrowableBuffer::new("render overlay", wgpu::BufferUsages::VERTEX | copy),
            overlay_visible: false,
            ctx,
        })
    }

    /// The target format the pipelines were built for.
    pub fn format(&self) -> wgpu::TextureFormat {
        self.format
    }

    /// The GPU it draws with.
    pub fn context(&self) -> &Arc<GpuContext> {
        &self.ctx
    }

    /// A bind group that makes `disc_vs` read its instances from `buffer`
    /// (an array of [`DiscInstance`], e.g. a population's GPU buffer written
    /// by a compute pass), for [`encode`](Self::encode)'s `external_discs`.
    pub fn disc_bind_group(&self, buffer: &wgpu::Buffer) -> wgpu::BindGroup {
        self.ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("render external discs"),
            layout: &self.disc_layout,
            entries: &[wgpu::BindGroupEntry { binding: 0, resource: buffer.as_entire_binding() }],
        })
    }

    /// Queues the uploads of one frame: the view, the lists, the balls (the
    /// host's uploaded, the GPU backend's bound in place), the overlay
    /// (`None` hides it). Nothing is read back.
    pub fn prepare(
        &mut self,
        list: &DrawList,
        camera: &Camera,
        (width, height): (u32, u32),
        overlay: Option<&TextImage>,
    ) -> Result<(), GpuError> {
        let ctx = self.ctx.clone();
        let srgb = self.format.is_srgb();
        ctx.queue.write_buffer(&self.view_buffer, 0, bytemuck::bytes_of(&camera.uniform(width, height, srgb)));
        let grew = self.discs.upload(&ctx, &list.discs)?;
        if grew || self.disc_group.is_none() {
            self.disc_group = Some(self.disc_bind_group(self.discs.get()));
        }
        self.disc_count = list.discs.len() as u32;
        self.under.upload(&ctx, &list.under)?;
        self.under_count = list.under.len() as u32;
        self.over.upload(&ctx, &list.over)?;
        self.over_count = list.over.len() as u32;
        self.prepare_balls(list.balls.as_ref())?;
        self.overlay_visible = false;
        if let Some(text) = overlay.filter(|t| t.width > 0 && t.height > 0) {
            self.upload_overlay(text)?;
            // Top-left corner, 8 pixels in.
            let (x0, y0) = (8.0f32, 8.0f32);
            let (x1, y1) = (x0 + text.width as f32, y0 + text.height as f32);
            let quad: [[f32; 4]; 6] = [
                [x0, y0, 0.0, 0.0],
                [x1, y0, 1.0, 0.0],
                [x1, y1, 1.0, 1.0],
                [x0, y0, 0.0, 0.0],
                [x1, y1, 1.0, 1.0],
                [x0, y1, 0.0, 1.0],
            ];
            self.overlay_vertices.upload(&ctx, &quad)?;
            self.overlay_visible = true;
        }
        Ok(())
    }

    fn prepare_balls(&mut self, balls: Option<&(Balls, BallStyle)>) -> Result<(), GpuError> {
        self.ball_count = 0;
        let Some((balls, style)) = balls.filter(|(b, _)| b.count() > 0) else {
            return Ok(());
        };
        let ctx = self.ctx.clone();
        let key = match balls {
            Balls::Host(h) => {
                let [motion, properties, state, id] = &mut self.host_balls;
                let grew = [
                    motion.upload(&ctx, &h.motion)?,
                    properties.upload(&ctx, &h.properties)?,
                    state.upload(&ctx, &h.state)?,
                    id.upload(&ctx, &h.id)?,
                ];
                if grew.contains(&true) {
                    self.ball_group = None;
                }
                BallKey::Host
            }
            Balls::Gpu(g) => BallKey::Gpu(g.id),
        };
        if self.ball_group.as_ref().is_none_or(|(_, k)| *k != key) {
            let buffers: [&wgpu::Buffer; 4] = match balls {
                Balls::Host(_) => {
                    let [motion, properties, state, id] = &self.host_balls;
                    [motion.get(), properties.get(), state.get(), id.get()]
                }
                Balls::Gpu(g) => [&g.motion, &g.properties, &g.state, &g.ids],
            };
            let group = ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("render balls"),
                layout: &self.ball_layout,
                entries: &[
                    wgpu::BindGroupEntry { binding: 0, resource: buffers[0].as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 1, resource: buffers[1].as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 2, resource: buffers[2].as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 3, resource: self.ball_style.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 4, resource: buffers[3].as_entire_binding() },
                ],
            });
            self.ball_group = Some((group, key));
        }
        ctx.queue.write_buffer(&self.ball_style, 0, bytemuck::bytes_of(&style.uniform(balls.count())));
        self.ball_count = balls.count();
        Ok(())
    }

    fn upload_overlay(&mut self, text: &TextImage) -> Result<(), GpuError> {
        let size = (text.width, text.height);
        let max = self.ctx.limits().max_texture_dimension_2d;
        if text.width > max || text.height > max {
            return Err(GpuError::TooLarge {
                what: "overlay text",
                bytes: u64::from(text.width.max(text.height)),
                limit: u64::from(max),
            });
        }
        if self.overlay.as_ref().is_none_or(|o| o.size != size) {
            let texture = self.ctx.device.create_texture(&wgpu::TextureDescriptor {
                label: Some("render overlay"),
                size: wgpu::Extent3d { width: text.width, height: text.height, depth_or_array_layers: 1 },
                mip_level_count: 1,
                sample_count: 1,
                dimension: wgpu::TextureDimension::D2,
                format: wgpu::TextureFormat::Rgba8Unorm,
                usage: wgpu::TextureUsages::TEXTURE_BINDING | wgpu::TextureUsages::COPY_DST,
                view_formats: &[],
            });
            let view = texture.create_view(&wgpu::TextureViewDescriptor::default());
            let group = self.ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("render overlay"),
                layout: &self.overlay_layout,
                entries: &[
                    wgpu::BindGroupEntry { binding: 0, resource: wgpu::BindingResource::TextureView(&view) },
                    wgpu::BindGroupEntry { binding: 1, resource: wgpu::BindingResource::Sampler(&self.sampler) },
                ],
            });
            self.overlay = Some(OverlayTexture { texture, group, size });
        }
        if let Some(o) = &self.overlay {
            self.ctx.queue.write_texture(
                wgpu::TexelCopyTextureInfo {
                    texture: &o.texture,
                    mip_level: 0,
                    origin: wgpu::Origin3d::ZERO,
                    aspect: wgpu::TextureAspect::All,
                },
                &text.rgba,
                wgpu::TexelCopyBufferLayout {
                    offset: 0,
                    bytes_per_row: Some(4 * text.width),
                    rows_per_image: Some(text.height),
                },
                wgpu::Extent3d { width: text.width, height: text.height, depth_or_array_layers: 1 },
            );
        }
        Ok(())
    }

    /// Records the frame's render pass into `encoder`: clear to
    /// `background`, meshes under, the discs (the prepared ones, then each
    /// `(bind group, count)` of `external_discs`), the balls, meshes over,
    /// overlay.
    pub fn encode(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        target: &wgpu::TextureView,
        background: u32,
        external_discs: &[(&wgpu::BindGroup, u32)],
    ) {
        let [r, g, b, a] = background.to_le_bytes().map(|c| f64::from(c) / 255.0);
        // The clear colour is not re-encoded by the shader: decode it for
        // sRGB targets so that the background matches the PNG's.
        let decode = |c: f64| {
            if !self.format.is_srgb() {
                c
            } else if c <= 0.04045 {
                c / 12.92
            } else {
                ((c + 0.055) / 1.055).powf(2.4)
            }
        };
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("render"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: target,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: wgpu::LoadOp::Clear(wgpu::Color { r: decode(r), g: decode(g), b: decode(b), a }),
                    store: wgpu::StoreOp::Store,
                },
            })],
            ..Default::default()
        });
        pass.set_bind_group(0, &self.view_group, &[]);
        if self.under_count > 0 {
            pass.set_pipeline(&self.mesh_pipeline);
            pass.set_vertex_buffer(0, self.under.get().slice(..));
            pass.draw(0..self.under_count, 0..1);
        }
        pass.set_pipeline(&self.disc_pipeline);
        if let Some(group) = self.disc_group.as_ref().filter(|_| self.disc_count > 0) {
            pass.set_bind_group(1, group, &[]);
            pass.draw(0..4, 0..self.disc_count);
        }
        for (group, count) in external_discs.iter().filter(|(_, n)| *n > 0) {
            pass.set_bind_group(1, *group, &[]);
            pass.draw(0..4, 0..*count);
        }
        if let Some((group, _)) = self.ball_group.as_ref().filter(|_| self.ball_count > 0) {
            pass.set_pipeline(&self.ball_pipeline);
            pass.set_bind_group(1, group, &[]);
            pass.draw(0..4, 0..self.ball_count);
        }
        if self.over_count > 0 {
            pass.set_pipeline(&self.mesh_pipeline);
            pass.set_vertex_buffer(0, self.over.get().slice(..));
            pass.draw(0..self.over_count, 0..1);
        }
        if self.overlay_visible
            && let Some(o) = &self.overlay
        {
            pass.set_pipeline(&self.overlay_pipeline);
            pass.set_bind_group(1, &o.group, &[]);
            pass.set_vertex_buffer(0, self.overlay_vertices.get().slice(..));
            pass.draw(0..6, 0..1);
        }
    }
}
