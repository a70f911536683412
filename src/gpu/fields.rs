//! Force fields on the GPU (`shaders/fields.wgsl`) and their CPU twin.
//!
//! The GPU evaluates f32 inputs with f32 field parameters. The CPU twin
//! ([`cpu_field_forces`]) runs [`crate::field`] itself in f64, in parallel,
//! on the *same* f32 inputs and the field parameters rounded to f32 (through
//! [`GpuField`]), so both see the same numbers: comparisons against rectangle
//! edges agree exactly, and forces agree to f32 rounding.

use super::buffers::{GrowableBuffer, Readback};
use super::context::{GpuContext, GpuError, GpuTiming, PassTimer};
use crate::field::{Falloff, Field, FieldKind, Region};
use bytemuck::{Pod, Zeroable};
use glam::{DVec2, Vec2};
use rayon::prelude::*;

/// A body or ball as the field kernel sees it (WGSL `Body`, 24 bytes).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuBody {
    /// Centre of mass (m).
    pub position: Vec2,
    /// Velocity of the centre of mass (m/s).
    pub velocity: Vec2,
    /// Mass (kg).
    pub mass: f32,
    /// Radius (m), used by Stokes drag.
    pub radius: f32,
}

/// A [`Field`] in f32 for the GPU (WGSL `Field`, 48 bytes). The encoding of
/// each kind is documented in `shaders/fields.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable)]
pub struct GpuField {
    /// 0 uniform, 1 radial, 2 vortex, 3 drag.
    pub kind: u32,
    /// 0 constant, 1 linear, 2 inverse-linear, 3 inverse-square.
    pub falloff: u32,
    /// Bit 0: per mass; bit 1: Stokes drag.
    pub flags: u32,
    /// 0 everywhere, 1 rectangle, 2 circle, 3 half-plane.
    pub region_kind: u32,
    /// Kind parameters (force; centre, strength, softening; coefficient).
    pub params: [f32; 4],
    /// Region parameters (min, max; centre, radius; point, normal).
    pub region: [f32; 4],
}

const PER_MASS: u32 = 1;
const STOKES: u32 = 2;

fn falloff_code(f: Falloff) -> u32 {
    match f {
        Falloff::Constant => 0,
        Falloff::Linear => 1,
        Falloff::InverseLinear => 2,
        Falloff::InverseSquare => 3,
    }
}

fn falloff_from_code(code: u32) -> Falloff {
    match code {
        1 => Falloff::Linear,
        2 => Falloff::InverseLinear,
        3 => Falloff::InverseSquare,
        _ => Falloff::Constant,
    }
}

impl From<&Field> for GpuField {
    fn from(field: &Field) -> Self {
        let v = |a: f64, b: f64, c: f64, d: f64| [a as f32, b as f32, c as f32, d as f32];
        let flag = |on: bool, bit: u32| if on { bit } else { 0 };
        let (kind, falloff, flags, params) = match field.kind {
            FieldKind::Uniform { force, per_mass } => (0, 0, flag(per_mass, PER_MASS), v(force.x, force.y, 0.0, 0.0)),
            FieldKind::Radial { center, strength, falloff, softening, per_mass } => {
                (1, falloff_code(falloff), flag(per_mass, PER_MASS), v(center.x, center.y, strength, softening))
            }
            FieldKind::Vortex { center, strength, falloff, softening, per_mass } => {
                (2, falloff_code(falloff), flag(per_mass, PER_MASS), v(center.x, center.y, strength, softening))
            }
            FieldKind::Drag { coefficient, stokes } => (3, 0, flag(stokes, STOKES), v(coefficient, 0.0, 0.0, 0.0)),
        };
        let (region_kind, region) = match field.region {
            Region::Everywhere => (0, [0.0; 4]),
            Region::Rect { min, max } => (1, v(min.x, min.y, max.x, max.y)),
            Region::Circle { center, radius } => (2, v(center.x, center.y, radius, 0.0)),
            Region::HalfPlane { point, normal } => (3, v(point.x, point.y, normal.x, normal.y)),
        };
        Self { kind, falloff, flags, region_kind, params, region }
    }
}

impl GpuField {
    /// The field this encodes, in f64 (exactly the f32 values): what the CPU
    /// twin evaluates so that it sees the numbers the GPU sees.
    pub fn to_field(&self) -> Field {
        let p = self.params.map(f64::from);
        let r = self.region.map(f64::from);
        let per_mass = self.flags & PER_MASS != 0;
        let falloff = falloff_from_code(self.falloff);
        let kind = match self.kind {
            1 => {
                FieldKind::Radial { center: DVec2::new(p[0], p[1]), strength: p[2], falloff, softening: p[3], per_mass }
            }
            2 => {
                FieldKind::Vortex { center: DVec2::new(p[0], p[1]), strength: p[2], falloff, softening: p[3], per_mass }
            }
            3 => FieldKind::Drag { coefficient: p[0], stokes: self.flags & STOKES != 0 },
            _ => FieldKind::Uniform { force: DVec2::new(p[0], p[1]), per_mass },
        };
        let region = match self.region_kind {
            1 => Region::Rect { min: DVec2::new(r[0], r[1]), max: DVec2::new(r[2], r[3]) },
            2 => Region::Circle { center: DVec2::new(r[0], r[1]), radius: r[2] },
            3 => Region::HalfPlane { point: DVec2::new(r[0], r[1]), normal: DVec2::new(r[2], r[3]) },
            _ => Region::Everywhere,
        };
        Field { kind, region }
    }
}

/// The CPU twin of the field kernel: total force of `fields` on every body,
/// by [`crate::field::total_force`] in f64 on the f32 inputs and the
/// f32-rounded fields, in parallel over bodies. Replaces `forces`.
pub fn cpu_field_forces(fields: &[Field], bodies: &[GpuBody], forces: &mut Vec<Vec2>) {
    let rounded: Vec<Field> = fields.iter().map(|f| GpuField::from(f).to_field()).collect();
    forces.clear();
    forces.resize(bodies.len(), Vec2::ZERO);
    forces.par_iter_mut().with_min_len(1024).zip(bodies).for_each(|(force, b)| {
        let f = crate::field::total_force(
            &rounded,
            b.position.as_dvec2(),
            b.velocity.as_dvec2(),
            f64::from(b.mass),
            f64::from(b.radius),
        );
        *force = f.as_vec2();
    });
}

/// Uniform of the field kernel (WGSL `Params`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
struct FieldParams {
    body_count: u32,
    field_count: u32,
    _pad: [u32; 2],
}

/// One binding-sized slice of the population: its own buffers and bind group.
struct FieldChunk {
    bodies: GrowableBuffer,
    forces: GrowableBuffer,
    params: wgpu::Buffer,
    bind_group: Option<wgpu::BindGroup>,
    count: usize,
}

/// Field forces on the GPU. Pipelines and buffers are created once and
/// reused; populations larger than one storage binding are split into chunks
/// with their own buffers (one dispatch each, all in one compute pass).
pub struct GpuFieldEvaluator {
    pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
    fields: GrowableBuffer,
    field_count: usize,
    chunks: Vec<FieldChunk>,
    bodies_per_chunk: usize,
    readback: Readback,
    scratch: Vec<Vec2>,
    timer: PassTimer,
}

impl GpuFieldEvaluator {
    /// Compiles `shaders/fields.wgsl` and builds the pipeline.
    pub fn new(ctx: &GpuContext) -> Result<Self, GpuError> {
        let shader = ctx.shader_module("fields.wgsl", crate::field_shader!("fields.wgsl", "fields.wgsl"))?;
        let storage = |binding, read_only| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: wgpu::BufferBindingType::Storage { read_only },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        };
        let layout = ctx.device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("field_forces"),
            entries: &[
                wgpu::BindGroupLayoutEntry {
                    binding: 0,
                    visibility: wgpu::ShaderStages::COMPUTE,
                    ty: wgpu::BindingType::Buffer {
                        ty: wgpu::BufferBindingType::Uniform,
                        has_dynamic_offset: false,
                        min_binding_size: None,
                    },
                    count: None,
                },
                storage(1, true),
                storage(2, true),
                storage(3, false),
            ],
        });
        let pipeline_layout = ctx.device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("field_forces"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let pipeline = ctx.compute_pipeline(&shader, "field_forces", &pipeline_layout)?;
        // Bodies are the larger record (24 bytes); whole workgroups per chunk.
        let per_binding = (ctx.max_binding_bytes() / size_of::<GpuBody>() as u64) as usize;
        let bodies_per_chunk = (per_binding / 256 * 256).max(256);
        Ok(Self {
            pipeline,
            layout,
            fields: GrowableBuffer::new("fields", wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST),
            field_count: 0,
            chunks: Vec::new(),
            bodies_per_chunk,
            readback: Readback::new(),
            scratch: Vec::new(),
            timer: PassTimer::new(ctx, "field_forces timer"),
        })
    }

    /// Bodies per chunk (one storage binding).
    pub fn bodies_per_chunk(&self) -> usize {
        self.bodies_per_chunk
    }

    /// Uploads the fields (f32-rounded, see [`GpuField`]).
    pub fn set_fields(&mut self, ctx: &GpuContext, fields: &[Field]) -> Result<(), GpuError> {
        let encoded: Vec<GpuField> = fields.iter().map(GpuField::from).collect();
        // An empty storage binding is invalid: keep at least one (unused) record.
        let data = if encoded.is_empty() { vec![GpuField::default()] } else { encoded };
        if self.fields.upload(ctx, &data)? {
            self.chunks.iter_mut().for_each(|c| c.bind_group = None);
        }
        self.field_count = fields.len();
        Ok(())
    }

    /// Uploads the bodies, splitting them into binding-sized chunks.
    pub fn upload_bodies(&mut self, ctx: &GpuContext, bodies: &[GpuBody]) -> Result<(), GpuError> {
        let needed = bodies.len().div_ceil(self.bodies_per_chunk).max(1);
        while self.chunks.len() < needed {
            self.chunks.push(FieldChunk {
                bodies: GrowableBuffer::new("bodies", wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST),
                forces: GrowableBuffer::new("forces", wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC),
                params: ctx.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("field params"),
                    size: size_of::<FieldParams>() as u64,
                    usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                }),
                bind_group: None,
                count: 0,
            });
        }
        for (k, chunk) in self.chunks.iter_mut().enumerate() {
            let start = (k * self.bodies_per_chunk).min(bodies.len());
            let end = (start + self.bodies_per_chunk).min(bodies.len());
            let slice = &bodies[start..end];
            chunk.count = slice.len();
            if chunk.count == 0 {
                continue;
            }
            let grew_bodies = chunk.bodies.upload(ctx, slice)?;
            let grew_forces = chunk.forces.ensure(ctx, (slice.len() * size_of::<Vec2>()) as u64)?;
            if grew_bodies || grew_forces {
                chunk.bind_group = None;
            }
        }
        Ok(())
    }

    /// Runs the kernel on the uploaded fields and bodies and waits; returns
    /// the GPU time of the pass.
    pub fn run(&mut self, ctx: &GpuContext) -> Result<GpuTiming, GpuError> {
        if self.fields.capacity() == 0 {
            self.set_fields(ctx, &[])?;
        }
        for chunk in self.chunks.iter().filter(|c| c.count > 0) {
            let params =
                FieldParams { body_count: chunk.count as u32, field_count: self.field_count as u32, _pad: [0; 2] };
            ctx.queue.write_buffer(&chunk.params, 0, bytemuck::bytes_of(&params));
        }
        for chunk in self.chunks.iter_mut().filter(|c| c.count > 0 && c.bind_group.is_none()) {
            chunk.bind_group = Some(ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("field_forces"),
                layout: &self.layout,
                entries: &[
                    wgpu::BindGroupEntry { binding: 0, resource: chunk.params.as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 1, resource: self.fields.get().as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 2, resource: chunk.bodies.get().as_entire_binding() },
                    wgpu::BindGroupEntry { binding: 3, resource: chunk.forces.get().as_entire_binding() },
                ],
            }));
        }
        let mut encoder =
            ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("field_forces") });
        {
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("field_forces"),
                timestamp_writes: self.timer.pass_writes(),
            });
            pass.set_pipeline(&self.pipeline);
            for chunk in self.chunks.iter().filter(|c| c.count > 0) {
                let (x, y) = ctx.dispatch_grid(chunk.count as u64)?;
                pass.set_bind_group(0, chunk.bind_group.as_ref(), &[]);
                pass.dispatch_workgroups(x, y, 1);
            }
        }
        self.timer.resolve(&mut encoder);
        self.timer.submitted();
        ctx.submit("field_forces", [encoder.finish()])?;
        ctx.wait("field_forces")?;
        self.timer.finish(ctx)
    }

    /// Reads the forces of the last [`run`](Self::run) into `out` (replaced).
    pub fn read_forces(&mut self, ctx: &GpuContext, out: &mut Vec<Vec2>) -> Result<(), GpuError> {
        out.clear();
        for chunk in self.chunks.iter().filter(|c| c.count > 0) {
            self.readback.read(ctx, chunk.forces.get(), chunk.count, &mut self.scratch)?;
            out.extend_from_slice(&self.scratch);
        }
        Ok(())
    }

    /// Uploads, runs and reads back: the forces of `fields` on `bodies`.
    pub fn compute(
        &mut self,
        ctx: &GpuContext,
        fields: &[Field],
        bodies: &[GpuBody],
        out: &mut Vec<Vec2>,
    ) -> Result<GpuTiming, GpuError> {
        self.set_fields(ctx, fields)?;
        self.upload_bodies(ctx, bodies)?;
        let timing = self.run(ctx)?;
        self.read_forces(ctx, out)?;
        Ok(timing)
    }
}
