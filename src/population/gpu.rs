//! The GPU backend of the population tier: `shaders/population.wgsl` on
//! resident buffers. A step is one command encoder with one compute pass —
//! release, fields, grid (count, [`PrefixSum`], scatter, cell sort),
//! neighbour lists, then per substep a stabilisation sweep, predict, count,
//! the Gauss–Seidel position sweeps (one dispatch per colour, the colour a
//! pipeline constant), velocity pass, finish — and bounds. Nothing is
//! read back during a step: [`GpuPopulation::read_back`] copies the balls to
//! the host only when the caller asks (trace, summary).
//!
//! The renderer can draw straight from [`GpuPopulation::ball_buffer`]
//! (`STORAGE | VERTEX`, one `vec4<f32>` per ball: x, y, vx, vy) and
//! [`GpuPopulation::property_buffer`] (angle, ω, radius, 1/m), with
//! [`GpuPopulation::state_buffer`] telling which balls are in the world.

use std::sync::Arc;

use bytemuck::{Pod, Zeroable};
use glam::{Vec2, Vec4};

use super::cpu::COLOURS;
use super::stage_times::StageTiming;
use super::{MAX_NEIGHBOURS, MAX_OBSTACLES, Obstacle, Population, PopulationError};
use crate::gpu::buffers::{GrowableBuffer, Readback};
use crate::gpu::prefix_sum::PrefixSum;
use crate::gpu::timing::{PassProfiler, PassTimings, StagedPasses, StepStageRecorder, add_by_name};
use crate::gpu::{GpuContext, GpuError, GpuField};

/// Bytes per ball on the GPU: ball 16, properties 16, state 4, release
/// step 4, id 4, acceleration 8, prediction 16, correction 8, velocity-pass
/// output 16, contact count 4, cell 4, sorted index 4, neighbour list
/// 4·(16 + 1), obstacle list 4·(8 + 1), rest timer 4, owned-entry mask 4,
/// rebound distances 4·(16 + 8) = 312. Plus 4 bytes per grid cell
/// (and the prefix sums' block sums, 1/256 of the cells and of the balls).
/// The re-sort needs no buffer of its own (it gathers into the step's
/// scratch). 10⁷ balls: 3.1 GB.
pub const GPU_BYTES_PER_BALL: u64 =
    16 + 16 + 4 + 4 + 4 + 8 + 16 + 8 + 16 + 4 + 4 + 4 + 4 * 17 + 4 * 9 + 4 + 4 + 4 * REBOUND_STRIDE;

/// Rebound slots a ball has on the GPU (`population.wgsl`'s
/// `REBOUND_STRIDE`): one per neighbour-list entry, then one per listed
/// obstacle.
const REBOUND_STRIDE: u64 = (MAX_NEIGHBOURS + MAX_OBSTACLES) as u64;

/// Storage bindings the step's bind group uses.
const STORAGE_BINDINGS: u32 = 24;

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, Pod, Zeroable)]
struct Params {
    /// End of the live range (the release cursor): balls `first..n` are dispatched.
    n: u32,
    cells: u32,
    nx: u32,
    ny: u32,
    origin: [f32; 2],
    cell: f32,
    h: f32,
    gravity: [f32; 2],
    resting: f32,
    relaxation: f32,
    bounds_min: [f32; 2],
    bounds_max: [f32; 2],
    restitution: f32,
    friction: f32,
    rolling: f32,
    skin: f32,
    field_count: u32,
    obstacle_count: u32,
    kill_count: u32,
    step: u32,
    dt: f32,
    /// Start of the live range ([`Population::live_range`]).
    first: u32,
    /// `PopulationParams::push_out`, [`UNBOUNDED_PUSH`] where infinite.
    push_out: f32,
    /// `PopulationParams::sleep_time` (0: sleeping off).
    sleep_time: f32,
    /// `PopulationParams::sleep_speed`.
    sleep_speed: f32,
    /// `PopulationParams::wake_overlap`.
    wake_overlap: f32,
    _pad: [u32; 2],
}

/// The push-out bound the shader gets for an unbounded one (WGSL may assume
/// no infinities; no overlap is 1e20 radii deep). Also the shader's bound
/// for obstacles.
pub(crate) const UNBOUNDED_PUSH: f32 = 1e20;

struct Pipelines {
    release: wgpu::ComputePipeline,
    apply_fields: wgpu::ComputePipeline,
    count_cells: wgpu::ComputePipeline,
    scatter: wgpu::ComputePipeline,
    sort_cells: wgpu::ComputePipeline,
    resort_mark: wgpu::ComputePipeline,
    resort_gather: wgpu::ComputePipeline,
    resort_commit: wgpu::ComputePipeline,
    clear_cells: wgpu::ComputePipeline,
    find_neighbours: wgpu::ComputePipeline,
    /// One per colour (`cpu::COLOURS`), the colour a pipeline constant.
    stabilise_colour: Vec<wgpu::ComputePipeline>,
    commit_and_predict: wgpu::ComputePipeline,
    predict: wgpu::ComputePipeline,
    count_predicted: wgpu::ComputePipeline,
    /// One per colour.
    solve_colour: Vec<wgpu::ComputePipeline>,
    solve_velocities: wgpu::ComputePipeline,
    finish_substep: wgpu::ComputePipeline,
    finish_and_predict: wgpu::ComputePipeline,
    check_bounds: wgpu::ComputePipeline,
    wake: wgpu::ComputePipeline,
    fall_asleep: wgpu::ComputePipeline,
}

/// The population's resident GPU buffers, pipelines and bind groups.
pub struct GpuPopulation {
    ctx: Arc<GpuContext>,
    pipelines: Pipelines,
    prefix: PrefixSum,
    /// The re-sort's scan of the out-of-world flags (over the neighbour
    /// lists' buffer, free at that point of the step).
    rank_prefix: PrefixSum,
    params: wgpu::Buffer,
    balls: wgpu::Buffer,
    properties: wgpu::Buffer,
    state: wgpu::Buffer,
    release: wgpu::Buffer,
    ball_id: wgpu::Buffer,
    cell_start: wgpu::Buffer,
    obstacles: wgpu::Buffer,
    obstacle_capacity: usize,
    counters: wgpu::Buffer,
    /// The balls' rest timers (`Population::rest`).
    rest: wgpu::Buffer,
    /// The step's bind group (one: the sweeps correct in place).
    bind_groups: Vec<wgpu::BindGroup>,
    layout: wgpu::BindGroupLayout,
    others: Vec<wgpu::Buffer>,
    readback: Readback,
    n: u32,
    cells: u64,
    /// Times the stages of the production steps ([`Self::time_stages`]).
    stage_recorder: Option<StepStageRecorder>,
    /// How the stages are timed (written into the population at each readback).
    stage_timing: StageTiming,
}

impl std::fmt::Debug for GpuPopulation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuPopulation").field("balls", &self.n).field("adapter", &self.ctx.adapter_name()).finish()
    }
}

thread_local! {
    static READ_BACKS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many times this thread has called [`GpuPopulation::read_back`]: the
/// renderer's tests check that drawing a frame makes no readback.
pub fn read_backs_on_this_thread() -> u64 {
    READ_BACKS.with(std::cell::Cell::get)
}

fn gpu_error(e: GpuError) -> PopulationError {
    PopulationError::Gpu(e.to_string())
}

/// The pipeline of `entry_point` for one colour of the Gauss–Seidel sweep
/// (the shader's `override COLOUR`), with validation errors named.
fn colour_pipeline(
    ctx: &GpuContext,
    shader: &wgpu::ShaderModule,
    entry_point: &'static str,
    layout: &wgpu::PipelineLayout,
    colour: usize,
) -> Result<wgpu::ComputePipeline, PopulationError> {
    let scope = ctx.device.push_error_scope(wgpu::ErrorFilter::Validation);
    let constants = [("COLOUR", colour as f64)];
    let pipeline = ctx.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(entry_point),
        layout: Some(layout),
        module: shader,
        entry_point: Some(entry_point),
        compilation_options: wgpu::PipelineCompilationOptions { constants: &constants, ..Default::default() },
        cache: None,
    });
    match pollster::block_on(scope.pop()) {
        Some(error) => Err(PopulationError::Gpu(format!("kernel {entry_point} (colour {colour}): {error}"))),
        None => Ok(pipeline),
    }
}

/// Cells of colour `colour` (`cpu::colour_of_cell`) in a grid of `nx` × `ny`:
/// the sweep kernel's invocations.
fn colour_cells(nx: u32, ny: u32, colour: usize) -> u64 {
    let (ox, oy) = (colour as u32 % 3, colour as u32 / 3);
    u64::from((nx + 2 - ox) / 3) * u64::from((ny + 2 - oy) / 3)
}

impl GpuPopulation {
    /// Checks the population against the adapter's limits — before any
    /// allocation — then creates the buffers, uploads the balls and builds
    /// the pipelines.
    pub fn new(ctx: Arc<GpuContext>, pop: &Population) -> Result<Self, PopulationError> {
        let n = pop.len() as u64;
        let cells = pop.grid.cells();
        let limits = ctx.limits();
        if limits.max_storage_buffers_per_shader_stage < STORAGE_BINDINGS {
            return Err(PopulationError::Gpu(format!(
                "the population step binds {STORAGE_BINDINGS} storage buffers, over this adapter's \
                 max_storage_buffers_per_shader_stage = {}",
                limits.max_storage_buffers_per_shader_stage
            )));
        }
        let binding = ctx.max_binding_bytes();
        let largest = (n * 4 * REBOUND_STRIDE).max((cells + 1) * 4).max(n * 16);
        if largest > binding {
            return Err(PopulationError::TooLarge {
                count: n,
                bytes: n * GPU_BYTES_PER_BALL + cells * 4,
                per_ball: GPU_BYTES_PER_BALL,
                extra: format!(" + 4 per grid cell × {cells}; its largest array is {largest} bytes"),
                backend: "gpu",
                limit: binding,
                limit_name: "max_storage_buffer_binding_size of this adapter, per array".into(),
            });
        }
        if n > u64::from(u32::MAX) / MAX_NEIGHBOURS as u64 {
            return Err(PopulationError::Gpu(format!("{n} balls: neighbour-list indices would overflow u32")));
        }
        ctx.dispatch_grid(n.max(1)).map_err(gpu_error)?;

        let shader = ctx
            .shader_module("population.wgsl", crate::field_shader!("population.wgsl", "population.wgsl"))
            .map_err(gpu_error)?;
        let entry = |binding: u32, ty: wgpu::BufferBindingType| wgpu::BindGroupLayoutEntry {
            binding,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer { ty, has_dynamic_offset: false, min_binding_size: None },
            count: None,
        };
        let rw = wgpu::BufferBindingType::Storage { read_only: false };
        let ro = wgpu::BufferBindingType::Storage { read_only: true };
        let read_only = [18u32, 19, 20];
        let mut entries = vec![entry(0, wgpu::BufferBindingType::Uniform)];
        for b in 1..=STORAGE_BINDINGS {
            entries.push(entry(b, if read_only.contains(&b) { ro } else { rw }));
        }
        let layout = ctx.device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("population"),
            entries: &entries,
        });
        let pipeline_layout = ctx.device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("population"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let p = |name: &'static str| ctx.compute_pipeline(&shader, name, &pipeline_layout).map_err(gpu_error);
        let pipelines = Pipelines {
            release: p("release")?,
            apply_fields: p("apply_fields")?,
            count_cells: p("count_cells")?,
            scatter: p("scatter")?,
            sort_cells: p("sort_cells")?,
            resort_mark: p("resort_mark")?,
            resort_gather: p("resort_gather")?,
            resort_commit: p("resort_commit")?,
            clear_cells: p("clear_cells")?,
            find_neighbours: p("find_neighbours")?,
            stabilise_colour: (0..COLOURS)
                .map(|c| colour_pipeline(&ctx, &shader, "stabilise_colour", &pipeline_layout, c))
                .collect::<Result<_, _>>()?,
            commit_and_predict: p("commit_and_predict")?,
            predict: p("predict")?,
            count_predicted: p("count_predicted")?,
            solve_colour: (0..COLOURS)
                .map(|c| colour_pipeline(&ctx, &shader, "solve_colour", &pipeline_layout, c))
                .collect::<Result<_, _>>()?,
            solve_velocities: p("solve_velocities")?,
            finish_substep: p("finish_substep")?,
            finish_and_predict: p("finish_and_predict")?,
            check_bounds: p("check_bounds")?,
            wake: p("wake")?,
            fall_asleep: p("fall_asleep")?,
        };

        let storage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC;
        let buffer = |label: &'static str, bytes: u64, extra: wgpu::BufferUsages| {
            let mut b = GrowableBuffer::new(label, storage | extra);
            b.ensure(&ctx, bytes.max(16)).map_err(gpu_error)?;
            Ok::<wgpu::Buffer, PopulationError>(b.get().clone())
        };
        let none = wgpu::BufferUsages::empty();
        let balls = buffer("population balls", n * 16, wgpu::BufferUsages::VERTEX)?;
        let properties = buffer("population properties", n * 16, wgpu::BufferUsages::VERTEX)?;
        let state = buffer("population state", n * 4, wgpu::BufferUsages::VERTEX)?;
        let release = buffer("population release", n * 4, none)?;
        let acc = buffer("population acceleration", n * 8, none)?;
        let pred = buffer("population prediction", n * 16, none)?;
        let ball_id = buffer("population ball id", n * 4, none)?;
        let dx = buffer("population correction", n * 8, none)?;
        let vout = buffer("population velocity pass", n * 16, none)?;
        let contacts = buffer("population contacts", n * 4, none)?;
        let cell_of = buffer("population cell", n * 4, none)?;
        let cell_start = buffer("population cell start", (cells + 1) * 4, none)?;
        let sorted = buffer("population sorted", n * 4, none)?;
        let neighbours = buffer("population neighbours", n * 4 * MAX_NEIGHBOURS as u64, none)?;
        let neighbour_count = buffer("population neighbour count", n * 4, none)?;
        let obstacle_ids = buffer("population obstacle ids", n * 4 * MAX_OBSTACLES as u64, none)?;
        let obstacle_count = buffer("population obstacle count", n * 4, none)?;
        let obstacle_capacity = pop.obstacles.len().max(1);
        let obstacles = buffer("population obstacles", (obstacle_capacity * size_of::<Obstacle>()) as u64, none)?;
        let fields = buffer("population fields", (pop.fields.len().max(1) * size_of::<GpuField>()) as u64, none)?;
        let kill = buffer("population kill regions", (pop.params.kill.len().max(1) * 16) as u64, none)?;
        let counters = buffer("population counters", 16, none)?;
        let rest = buffer("population rest", n * 4, none)?;
        let owned_mask = buffer("population owned entries", n * 4, none)?;
        let rebound = buffer("population rebound distances", n * 4 * REBOUND_STRIDE, none)?;
        let params = ctx.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("population params"),
            size: size_of::<Params>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut prefix = PrefixSum::new(&ctx).map_err(gpu_error)?;
        prefix.bind(&ctx, &cell_start, cells + 1).map_err(gpu_error)?;
        let mut rank_prefix = PrefixSum::new(&ctx).map_err(gpu_error)?;
        rank_prefix.bind(&ctx, &neighbours, n + 1).map_err(gpu_error)?;

        let q = &ctx.queue;
        let write = |b: &wgpu::Buffer, bytes: &[u8]| {
            if !bytes.is_empty() {
                q.write_buffer(b, 0, bytes);
            }
        };
        let pv: Vec<Vec4> = (0..pop.len())
            .map(|i| Vec4::new(pop.position[i].x, pop.position[i].y, pop.velocity[i].x, pop.velocity[i].y))
            .collect();
        let props: Vec<Vec4> =
            (0..pop.len()).map(|i| Vec4::new(pop.angle[i], pop.omega[i], pop.radius[i], pop.inv_mass[i])).collect();
        write(&balls, bytemuck::cast_slice(&pv));
        write(&properties, bytemuck::cast_slice(&props));
        write(&state, bytemuck::cast_slice(&pop.state));
        write(&release, bytemuck::cast_slice(&pop.release_step));
        write(&ball_id, bytemuck::cast_slice(&pop.ball_id));
        write(&rest, bytemuck::cast_slice(&pop.rest));
        write(&obstacles, bytemuck::cast_slice(&pop.obstacles));
        write(&fields, bytemuck::cast_slice(&pop.fields));
        let kills: Vec<Vec4> = pop.params.kill.iter().map(|(a, b)| Vec4::new(a.x, a.y, b.x, b.y)).collect();
        write(&kill, bytemuck::cast_slice(&kills));
        write(&counters, bytemuck::cast_slice(&[0u32, u32::MAX, 0, 0]));

        let others = vec![
            acc,
            pred,
            dx,
            vout,
            contacts,
            cell_of,
            sorted,
            neighbours,
            neighbour_count,
            obstacle_ids,
            obstacle_count,
            fields,
            kill,
            owned_mask,
            rebound,
        ];
        let mut gpu = GpuPopulation {
            bind_groups: Vec::new(),
            ctx,
            pipelines,
            prefix,
            rank_prefix,
            params,
            balls,
            properties,
            state,
            release,
            ball_id,
            cell_start,
            obstacles,
            obstacle_capacity,
            counters,
            rest,
            layout,
            others,
            readback: Readback::new(),
            n: n as u32,
            cells,
            stage_recorder: None,
            stage_timing: StageTiming::GpuNotAsked,
        };
        gpu.bind_groups = vec![gpu.bind_group()];
        Ok(gpu)
    }

    fn bind_group(&self) -> wgpu::BindGroup {
        let o = &self.others;
        // The shader's bindings 0..=24, in order.
        let buffers: [&wgpu::Buffer; 25] = [
            &self.params,
            &self.balls,
            &self.properties,
            &self.state,
            &self.release,
            &o[0],
            &o[1],
            &o[2],
            &self.ball_id,
            &o[3],
            &o[4],
            &o[5],
            &self.cell_start,
            &o[6],
            &o[7],
            &o[8],
            &o[9],
            &o[10],
            &self.obstacles,
            &o[11],
            &o[12],
            &self.counters,
            &self.rest,
            &o[13],
            &o[14],
        ];
        let entries: Vec<wgpu::BindGroupEntry<'_>> = buffers
            .iter()
            .enumerate()
            .map(|(k, b)| wgpu::BindGroupEntry { binding: k as u32, resource: b.as_entire_binding() })
            .collect();
        self.ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("population"),
            layout: &self.layout,
            entries: &entries,
        })
    }

    /// The adapter's description.
    pub fn adapter(&self) -> String {
        self.ctx.summary()
    }

    /// One `vec4<f32>` per ball: x, y, vx, vy (`STORAGE | VERTEX`).
    pub fn ball_buffer(&self) -> &wgpu::Buffer {
        &self.balls
    }

    /// One `vec4<f32>` per ball: angle, ω, radius, 1/m (`STORAGE | VERTEX`).
    pub fn property_buffer(&self) -> &wgpu::Buffer {
        &self.properties
    }

    /// One `u32` per ball: [`super::state`] codes (`STORAGE | VERTEX`).
    pub fn state_buffer(&self) -> &wgpu::Buffer {
        &self.state
    }

    /// One `u32` per ball: its id ([`super::Population::ball_id`]; `STORAGE`).
    pub fn id_buffer(&self) -> &wgpu::Buffer {
        &self.ball_id
    }

    /// Number of balls in the buffers.
    pub fn count(&self) -> u32 {
        self.n
    }

    /// Encodes and submits one step of `dt` (no wait, no readback). The
    /// host-side `pop` keeps the parameters, obstacles and step count; its
    /// balls are stale until [`read_back`](Self::read_back).
    pub fn step(&mut self, pop: &mut Population, dt: f32) -> Result<(), PopulationError> {
        let mut recorder = self.stage_recorder.take();
        let result = match recorder.as_mut().and_then(StepStageRecorder::next_step) {
            Some(profiler) => self.step_staged(pop, dt, profiler).map(|()| true),
            None => self.step_staged(pop, dt, &mut PassProfiler::disabled()).map(|()| false),
        };
        if let (Ok(true), Some(r)) = (&result, recorder.as_mut()) {
            r.step_submitted();
        }
        self.stage_recorder = recorder;
        result.map(|_| ())
    }

    /// From now on, times each stage of the steps with GPU timestamp queries
    /// (one pass per stage, the same kernels in the same order: the same
    /// bits), read with the balls at each [`read_back`](Self::read_back)
    /// into [`Population::stage_times`] — no readback of its own. Returns
    /// whether the adapter has timestamp queries; without them the steps
    /// stay untimed and the population's stage times say so.
    pub fn time_stages(&mut self) -> bool {
        self.stage_recorder = StepStageRecorder::new(&self.ctx, "population stage times");
        self.stage_timing =
            if self.stage_recorder.is_some() { StageTiming::GpuTimestamps } else { StageTiming::GpuNoTimestamps };
        self.stage_recorder.is_some()
    }

    /// One step like [`step`](Self::step), each stage in a pass of its own
    /// timed by `profiler` (GPU timestamps where the adapter has them):
    /// `release`, `resort`, `fields`, `grid`, `neighbours`, and per substep
    /// `stabilise`, `predict`, `solve` (the colour sweeps), `velocities`;
    /// last `bounds`. Waits for the step and returns the times, each stage
    /// summed over the substeps. The same kernels in the same order as
    /// [`step`](Self::step): only the pass boundaries differ.
    pub fn step_profiled(
        &mut self,
        pop: &mut Population,
        dt: f32,
        profiler: &mut PassProfiler,
    ) -> Result<PassTimings, PopulationError> {
        self.step_staged(pop, dt, profiler)?;
        self.ctx.wait("population profiled step").map_err(gpu_error)?;
        let timings = profiler.finish(&self.ctx).map_err(gpu_error)?;
        let mut summed = Vec::new();
        add_by_name(&mut summed, timings.passes);
        Ok(PassTimings { passes: summed, source: timings.source })
    }

    fn step_staged(
        &mut self,
        pop: &mut Population,
        dt: f32,
        profiler: &mut PassProfiler,
    ) -> Result<(), PopulationError> {
        let ctx = self.ctx.clone();
        if pop.obstacles.len() > self.obstacle_capacity {
            let mut b =
                GrowableBuffer::new("population obstacles", wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST);
            b.ensure(&ctx, (pop.obstacles.len() * size_of::<Obstacle>()) as u64).map_err(gpu_error)?;
            self.obstacles = b.get().clone();
            self.obstacle_capacity = pop.obstacles.len();
            self.bind_groups = vec![self.bind_group()];
        }
        if !pop.obstacles.is_empty() {
            ctx.queue.write_buffer(&self.obstacles, 0, bytemuck::cast_slice(&pop.obstacles));
        }
        let substeps = pop.params.substeps;
        let h = dt / substeps as f32;
        let m = pop.params.material;
        let g = pop.grid;
        // Only the live range is dispatched (the host keeps the release
        // cursor; the window's start moves at each readback).
        let live = pop.open_window(pop.steps + 1);
        let params = Params {
            n: live.end as u32,
            cells: self.cells as u32,
            nx: g.nx,
            ny: g.ny,
            origin: g.origin.into(),
            cell: g.cell,
            h,
            gravity: pop.gravity.into(),
            resting: pop.resting_speed(dt),
            relaxation: pop.params.relaxation,
            bounds_min: pop.params.bounds.0.into(),
            bounds_max: pop.params.bounds.1.into(),
            restitution: m.restitution,
            friction: m.friction,
            rolling: m.rolling_resistance,
            skin: pop.params.skin,
            field_count: pop.fields.len() as u32,
            obstacle_count: pop.obstacles.len() as u32,
            kill_count: pop.params.kill.len() as u32,
            step: (pop.steps + 1).min(u64::from(u32::MAX)) as u32,
            dt,
            first: live.start as u32,
            push_out: pop.params.push_out.min(UNBOUNDED_PUSH),
            sleep_time: pop.params.sleep_time,
            sleep_speed: pop.params.sleep_speed,
            wake_overlap: pop.params.wake_overlap,
            _pad: [0; 2],
        };
        ctx.queue.write_buffer(&self.params, 0, bytemuck::bytes_of(&params));
        let (x, y) = ctx.dispatch_grid((live.len() as u64).max(1)).map_err(gpu_error)?;
        let cell_grid = ctx.dispatch_grid(self.cells.max(1)).map_err(gpu_error)?;
        let resort = pop.resort_due() && !live.is_empty();
        let (mark_grid, all_cells_grid) = if resort {
            (
                ctx.dispatch_grid(live.len() as u64 + 1).map_err(gpu_error)?,
                ctx.dispatch_grid(self.cells + 1).map_err(gpu_error)?,
            )
        } else {
            ((1, 1), (1, 1))
        };
        let colour_grids = (0..COLOURS)
            .map(|c| ctx.dispatch_grid(colour_cells(g.nx, g.ny, c).max(1)))
            .collect::<Result<Vec<_>, _>>()
            .map_err(gpu_error)?;
        let mut staged = StagedPasses::new(&ctx, "population step", profiler);
        staged.encoder(&ctx).map_err(gpu_error)?.clear_buffer(&self.cell_start, 0, None);
        self.prefix.reset_slots();
        self.rank_prefix.reset_slots();
        let p = &self.pipelines;
        let group = &self.bind_groups[0];
        let run = |pass: &mut wgpu::ComputePass<'_>, pipeline: &wgpu::ComputePipeline, (x, y): (u32, u32)| {
            pass.set_pipeline(pipeline);
            pass.set_bind_group(0, group, &[]);
            pass.dispatch_workgroups(x, y, 1);
        };
        // One dispatch per colour, in colour order (the twin's colour phases,
        // `substep::Substeps::sweep`).
        let sweep = |pass: &mut wgpu::ComputePass<'_>, pipelines: &[wgpu::ComputePipeline]| {
            for (pipeline, &grid) in pipelines.iter().zip(&colour_grids) {
                run(pass, pipeline, grid);
            }
        };
        let balls = (x, y);
        // The pass of the next stage (a new timed pass when profiling).
        macro_rules! stage {
            ($name:literal) => {
                staged.stage(&ctx, $name).map_err(gpu_error)?
            };
        }
        run(stage!("release"), &p.release, balls);
        if resort {
            // The re-sort by cell (cpu::resort): a grid build, the ranks
            // of the balls out of the world, the gather, the copy back,
            // and the counts emptied for the step's own grid build.
            let pass = stage!("resort");
            run(pass, &p.count_cells, balls);
            self.prefix.encode(&ctx, pass, self.cells + 1).map_err(gpu_error)?;
            run(pass, &p.scatter, balls);
            run(pass, &p.sort_cells, cell_grid);
            run(pass, &p.resort_mark, mark_grid);
            self.rank_prefix.encode(&ctx, pass, live.len() as u64 + 1).map_err(gpu_error)?;
            run(pass, &p.resort_gather, balls);
            run(pass, &p.resort_commit, balls);
            run(pass, &p.clear_cells, all_cells_grid);
        }
        run(stage!("fields"), &p.apply_fields, balls);
        let pass = stage!("grid");
        run(pass, &p.count_cells, balls);
        self.prefix.encode(&ctx, pass, self.cells + 1).map_err(gpu_error)?;
        run(pass, &p.scatter, balls);
        run(pass, &p.sort_cells, cell_grid);
        let pass = stage!("neighbours");
        run(pass, &p.find_neighbours, balls);
        if pop.params.sleep_time > 0.0 {
            run(pass, &p.wake, balls);
        }
        // The predictions where the CPU twin makes them
        // (`PopulationParams::predicts_apart`): a kernel of their own in a
        // first substep without stabilisation, fused with the stabilisation's
        // commit after one, and otherwise made by the previous substep's
        // finish — 16 dispatches fewer a step at the defaults (16 substeps, a
        // stabilisation every 2nd).
        for substep in 0..substeps {
            let stabilises = pop.params.stabilises(substep);
            if stabilises {
                sweep(stage!("stabilise"), &p.stabilise_colour);
            }
            let pass = stage!("predict");
            if stabilises {
                run(pass, &p.commit_and_predict, balls);
            } else if substep == 0 {
                run(pass, &p.predict, balls);
            }
            run(pass, &p.count_predicted, balls);
            let pass = stage!("solve");
            for _ in 0..pop.params.iterations {
                sweep(pass, &p.solve_colour);
            }
            let pass = stage!("velocities");
            run(pass, &p.solve_velocities, balls);
            let predict_next = substep + 1 < substeps && !pop.params.predicts_apart(substep + 1);
            run(pass, if predict_next { &p.finish_and_predict } else { &p.finish_substep }, balls);
        }
        let pass = stage!("bounds");
        if pop.params.sleep_time > 0.0 {
            run(pass, &p.fall_asleep, balls);
        }
        run(pass, &p.check_bounds, balls);
        let commands = staged.finish(&ctx).map_err(gpu_error)?;
        ctx.submit("population step", [commands]).map_err(gpu_error)?;
        ctx.check("population step").map_err(gpu_error)?;
        pop.steps += 1;
        Ok(())
    }

    /// Waits until the GPU has finished every submitted step (no readback).
    pub fn wait(&self) -> Result<(), PopulationError> {
        self.ctx.wait("population steps").map_err(gpu_error)
    }

    /// Waits for the submitted steps and copies the balls into `pop`; a
    /// non-finite ball found by the GPU stops the run with its index.
    pub fn read_back(&mut self, pop: &mut Population) -> Result<(), PopulationError> {
        READ_BACKS.with(|c| c.set(c.get() + 1));
        let ctx = self.ctx.clone();
        let n = self.n as usize;
        let mut pv: Vec<Vec4> = Vec::new();
        let mut props: Vec<Vec4> = Vec::new();
        let mut counters: Vec<u32> = Vec::new();
        self.readback.read(&ctx, &self.balls, n, &mut pv).map_err(gpu_error)?;
        self.readback.read(&ctx, &self.properties, n, &mut props).map_err(gpu_error)?;
        self.readback.read(&ctx, &self.state, n, &mut pop.state).map_err(gpu_error)?;
        // The re-sort moves every per-ball array.
        self.readback.read(&ctx, &self.release, n, &mut pop.release_step).map_err(gpu_error)?;
        self.readback.read(&ctx, &self.ball_id, n, &mut pop.ball_id).map_err(gpu_error)?;
        self.readback.read(&ctx, &self.rest, n, &mut pop.rest).map_err(gpu_error)?;
        self.readback.read(&ctx, &self.counters, 4, &mut counters).map_err(gpu_error)?;
        for i in 0..n {
            pop.position[i] = Vec2::new(pv[i].x, pv[i].y);
            pop.velocity[i] = Vec2::new(pv[i].z, pv[i].w);
            pop.angle[i] = props[i].x;
            pop.omega[i] = props[i].y;
            pop.radius[i] = props[i].z;
            pop.inv_mass[i] = props[i].w;
        }
        pop.list_overflow = u64::from(counters[0]);
        pop.close_window();
        // The steps are complete (the reads above waited): their stage times.
        pop.stage_times.timing = self.stage_timing;
        if let Some(recorder) = &mut self.stage_recorder {
            let times = &mut pop.stage_times;
            let steps = recorder
                .drain(&ctx, |name, ms| {
                    times.add_named(name, std::time::Duration::from_secs_f64(ms.max(0.0) * 1e-3));
                })
                .map_err(gpu_error)?;
            times.timed_steps += steps;
        }
        // counters[2]: the largest overlap ratio of any substep, f32 bits.
        pop.max_overlap_seen = pop.max_overlap_seen.max(f32::from_bits(counters[2]));
        if counters[1] != u32::MAX {
            // The lowest id of a non-finite ball (as on the CPU).
            let ball = counters[1] as usize;
            let slot = pop.ball_id.iter().position(|&id| id as usize == ball).unwrap_or(0);
            return Err(PopulationError::NotFinite {
                step: pop.steps,
                ball,
                position: pop.position.get(slot).copied().unwrap_or(Vec2::NAN),
                velocity: pop.velocity.get(slot).copied().unwrap_or(Vec2::NAN),
            });
        }
        Ok(())
    }
}

impl super::PopulationBackend for GpuPopulation {
    fn step(&mut self, pop: &mut Population, dt: f32) -> Result<(), PopulationError> {
        GpuPopulation::step(self, pop, dt)
    }

    fn wait(&self) -> Result<(), PopulationError> {
        GpuPopulation::wait(self)
    }

    fn read_back(&mut self, pop: &mut Population) -> Result<(), PopulationError> {
        GpuPopulation::read_back(self, pop)
    }

    fn backend(&self) -> &'static str {
        "gpu"
    }
}
