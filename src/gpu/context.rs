//! The wgpu instance, adapter, device and queue, and the error type of the
//! GPU path.

use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Why the GPU path cannot run or failed. Never a panic: the caller falls
/// back to the CPU twin or reports the error.
#[derive(Debug, thiserror::Error)]
pub enum GpuError {
    /// No adapter matched (no GPU, no software Vulkan, or filtered out by
    /// `WGPU_BACKEND` / `WGPU_ADAPTER_NAME`).
    #[error("no GPU adapter available ({0}); install a Vulkan driver (e.g. mesa-vulkan-drivers) or use the CPU path")]
    NoAdapter(String),
    /// The adapter refused to create a device.
    #[error("GPU device request failed on {adapter}: {message}")]
    Device {
        /// Adapter name.
        adapter: String,
        /// wgpu's message.
        message: String,
    },
    /// A shader failed to compile or a pipeline failed to validate.
    #[error("GPU kernel `{kernel}` failed to build: {message}")]
    Kernel {
        /// Name of the kernel (entry point).
        kernel: &'static str,
        /// wgpu's message.
        message: String,
    },
    /// The device was lost or an uncaptured error was raised while running.
    #[error("GPU failure while running `{kernel}`: {message}")]
    Runtime {
        /// Name of the kernel or operation running.
        kernel: &'static str,
        /// What the device reported.
        message: String,
    },
    /// A dispatch needs more workgroups than an `x × y` grid allows.
    #[error("a dispatch of {workgroups} workgroups exceeds the {limit}² grid this adapter allows")]
    DispatchTooLarge {
        /// Workgroups needed.
        workgroups: u64,
        /// Per-dimension limit.
        limit: u64,
    },
    /// A buffer would exceed the adapter's limits.
    #[error("{what} needs {bytes} bytes, over this adapter's limit of {limit} bytes")]
    TooLarge {
        /// Which buffer.
        what: &'static str,
        /// Bytes needed.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// An array split over several storage bindings still does not fit.
    #[error(
        "{what} needs {bytes} bytes, over the {bindings} storage bindings of at most {binding_bytes} bytes each \
         that this kernel splits it into"
    )]
    TooLargeSplit {
        /// Which array.
        what: &'static str,
        /// Bytes needed.
        bytes: u64,
        /// Bindings (pages) the kernel has for it.
        bindings: u32,
        /// Bytes per binding on this adapter.
        binding_bytes: u64,
    },
}

/// Overrides of the adapter's limits, for tests that must exercise the 2D
/// dispatch and split-buffer paths with small inputs.
#[derive(Clone, Copy, Debug, Default)]
pub struct GpuOptions {
    /// Use at most this many workgroups per dispatch dimension.
    pub max_workgroups_per_dimension: Option<u32>,
    /// Use storage bindings of at most this many bytes.
    pub max_binding_bytes: Option<u64>,
}

/// How a GPU time was measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum TimingSource {
    /// GPU timestamp queries around the compute pass.
    Timestamps,
    /// Host wall clock from submission to completion.
    Wall,
}

/// A measured GPU time.
#[derive(Clone, Copy, Debug, serde::Serialize)]
pub struct GpuTiming {
    /// Milliseconds.
    pub ms: f64,
    /// How they were measured.
    pub source: TimingSource,
}

/// The GPU: device, queue, limits in use, adapter description.
pub struct GpuContext {
    /// The device.
    pub device: wgpu::Device,
    /// Its queue.
    pub queue: wgpu::Queue,
    adapter: wgpu::Adapter,
    info: wgpu::AdapterInfo,
    limits: wgpu::Limits,
    workgroups_per_dimension: u32,
    binding_bytes: u64,
    timestamps: bool,
    /// First device-lost or uncaptured error, reported at the next wait.
    failure: Arc<Mutex<Option<String>>>,
}

impl std::fmt::Debug for GpuContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GpuContext").field("adapter", &self.summary()).finish()
    }
}

impl GpuContext {
    /// Opens the default GPU (see [`with_options`](Self::with_options)).
    pub fn new() -> Result<Self, GpuError> {
        Self::with_options(GpuOptions::default())
    }

    /// Opens the GPU: instance configured from the environment, the adapter
    /// named by `WGPU_ADAPTER_NAME` or else the high-performance one, and a
    /// device requesting the adapter's real limits (not the WebGPU defaults
    /// with their 128 MiB storage bindings) and timestamp queries when offered.
    pub fn with_options(options: GpuOptions) -> Result<Self, GpuError> {
        let instance = wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
        Self::open(&instance, None, options)
    }

    /// Opens the GPU that can present to `surface` (a window's, created from
    /// `instance`), with the same device settings as
    /// [`with_options`](Self::with_options), so that one device runs the
    /// kernels and draws (share it as `Arc<GpuContext>`).
    pub fn for_surface(instance: &wgpu::Instance, surface: &wgpu::Surface<'_>) -> Result<Self, GpuError> {
        Self::open(instance, Some(surface), GpuOptions::default())
    }

    fn open(
        instance: &wgpu::Instance,
        surface: Option<&wgpu::Surface<'_>>,
        options: GpuOptions,
    ) -> Result<Self, GpuError> {
        let adapter = match pollster::block_on(wgpu::util::initialize_adapter_from_env(instance, surface)) {
            Ok(adapter) => adapter,
            Err(_) => pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
                power_preference: wgpu::PowerPreference::HighPerformance,
                force_fallback_adapter: false,
                compatible_surface: surface,
                ..Default::default()
            }))
            .map_err(|e| GpuError::NoAdapter(e.to_string()))?,
        };
        let info = adapter.get_info();
        let limits = adapter.limits();
        let timestamps = adapter.features().contains(wgpu::Features::TIMESTAMP_QUERY);
        let required_features = if timestamps { wgpu::Features::TIMESTAMP_QUERY } else { wgpu::Features::empty() };
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("mx2d compute"),
            required_features,
            required_limits: limits.clone(),
            experimental_features: wgpu::ExperimentalFeatures::disabled(),
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        }))
        .map_err(|e| GpuError::Device { adapter: info.name.clone(), message: e.to_string() })?;

        // wgpu's default handlers panic; record the failure and report it as an
        // error at the next synchronisation point instead.
        let failure = Arc::new(Mutex::new(None::<String>));
        let lost = failure.clone();
        device.set_device_lost_callback(move |reason, message| {
            if let Ok(mut slot) = lost.lock() {
                slot.get_or_insert(format!("device lost ({reason:?}): {message}"));
            }
        });
        let uncaptured = failure.clone();
        device.on_uncaptured_error(Arc::new(move |error: wgpu::Error| {
            if let Ok(mut slot) = uncaptured.lock() {
                slot.get_or_insert(error.to_string());
            }
        }));

        let workgroups_per_dimension =
            options.max_workgroups_per_dimension.map_or(limits.max_compute_workgroups_per_dimension, |m| {
                m.clamp(1, limits.max_compute_workgroups_per_dimension)
            });
        let binding_bytes = options
            .max_binding_bytes
            .map_or(limits.max_storage_buffer_binding_size, |m| m.min(limits.max_storage_buffer_binding_size))
            .min(limits.max_buffer_size);
        Ok(Self { device, queue, adapter, info, limits, workgroups_per_dimension, binding_bytes, timestamps, failure })
    }

    /// The adapter (surface capabilities of a window).
    pub fn adapter(&self) -> &wgpu::Adapter {
        &self.adapter
    }

    /// The adapter's name, e.g. "NVIDIA H100" or "llvmpipe (LLVM 15.0.7, 256 bits)".
    pub fn adapter_name(&self) -> &str {
        &self.info.name
    }

    /// One line for summaries: name, backend, device type, driver.
    pub fn summary(&self) -> String {
        format!(
            "{} ({:?}, {:?}, {} {})",
            self.info.name, self.info.backend, self.info.device_type, self.info.driver, self.info.driver_info
        )
    }

    /// Whether the adapter is a software rasteriser (lavapipe, WARP): its
    /// timings say nothing about GPU performance.
    pub fn is_software(&self) -> bool {
        self.info.device_type == wgpu::DeviceType::Cpu
    }

    /// The device limits in force (the adapter's own).
    pub fn limits(&self) -> &wgpu::Limits {
        &self.limits
    }

    /// Largest storage binding used, in bytes (adapter limit or override).
    pub fn max_binding_bytes(&self) -> u64 {
        self.binding_bytes
    }

    /// Whether GPU timestamp queries are available.
    pub fn has_timestamps(&self) -> bool {
        self.timestamps
    }

    /// Workgroup grid `(x, y)` covering `invocations` threads in workgroups of
    /// [`super::WORKGROUP_SIZE`]; 2D once x would pass the per-dimension limit.
    pub fn dispatch_grid(&self, invocations: u64) -> Result<(u32, u32), GpuError> {
        let groups = invocations.div_ceil(u64::from(super::WORKGROUP_SIZE)).max(1);
        let limit = u64::from(self.workgroups_per_dimension);
        if groups <= limit {
            return Ok((groups as u32, 1));
        }
        let y = groups.div_ceil(limit);
        if y > limit {
            return Err(GpuError::DispatchTooLarge { workgroups: groups, limit });
        }
        Ok((limit as u32, y as u32))
    }

    /// Builds a compute pipeline from WGSL, turning compile and validation
    /// errors into [`GpuError::Kernel`] naming `entry_point`.
    pub fn compute_pipeline(
        &self,
        shader: &wgpu::ShaderModule,
        entry_point: &'static str,
        layout: &wgpu::PipelineLayout,
    ) -> Result<wgpu::ComputePipeline, GpuError> {
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let pipeline = self.device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some(entry_point),
            layout: Some(layout),
            module: shader,
            entry_point: Some(entry_point),
            compilation_options: Default::default(),
            cache: None,
        });
        match pollster::block_on(scope.pop()) {
            Some(error) => Err(GpuError::Kernel { kernel: entry_point, message: error.to_string() }),
            None => Ok(pipeline),
        }
    }

    /// Compiles a WGSL module, turning parse/validation errors into
    /// [`GpuError::Kernel`] naming `name`.
    pub fn shader_module(
        &self,
        name: &'static str,
        descriptor: wgpu::ShaderModuleDescriptor<'_>,
    ) -> Result<wgpu::ShaderModule, GpuError> {
        let scope = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let module = self.device.create_shader_module(descriptor);
        match pollster::block_on(scope.pop()) {
            Some(error) => Err(GpuError::Kernel { kernel: name, message: error.to_string() }),
            None => Ok(module),
        }
    }

    /// Blocks until all submitted work is done; reports a lost device or an
    /// uncaptured error raised meanwhile.
    pub fn wait(&self, kernel: &'static str) -> Result<(), GpuError> {
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| GpuError::Runtime { kernel, message: e.to_string() })?;
        self.check(kernel)
    }

    /// Reports (once) a failure recorded by the device callbacks.
    pub fn check(&self, kernel: &'static str) -> Result<(), GpuError> {
        let failure = self.failure.lock().ok().and_then(|mut f| f.take());
        match failure {
            Some(message) => Err(GpuError::Runtime { kernel, message }),
            None => Ok(()),
        }
    }
}

/// Times one compute pass: GPU timestamps when the adapter has them, else the
/// host clock around submission and completion.
pub(crate) struct PassTimer {
    queries: Option<(wgpu::QuerySet, wgpu::Buffer, wgpu::Buffer)>,
    period_ns: f64,
    started: Option<Instant>,
}

impl PassTimer {
    pub(crate) fn new(ctx: &GpuContext, label: &'static str) -> Self {
        let queries = ctx.has_timestamps().then(|| {
            let set = ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some(label),
                ty: wgpu::QueryType::Timestamp,
                count: 2,
            });
            let resolve = ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: 16,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            });
            let read = ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: 16,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            });
            (set, resolve, read)
        });
        Self { queries, period_ns: f64::from(ctx.queue.get_timestamp_period()), started: None }
    }

    /// Timestamp writes for the pass to time (None without timestamp support).
    pub(crate) fn pass_writes(&self) -> Option<wgpu::ComputePassTimestampWrites<'_>> {
        self.queries.as_ref().map(|(set, _, _)| wgpu::ComputePassTimestampWrites {
            query_set: set,
            beginning_of_pass_write_index: Some(0),
            end_of_pass_write_index: Some(1),
        })
    }

    /// Appends the query resolve to the encoder (after the timed pass).
    pub(crate) fn resolve(&self, encoder: &mut wgpu::CommandEncoder) {
        if let Some((set, resolve, read)) = &self.queries {
            encoder.resolve_query_set(set, 0..2, resolve, 0);
            encoder.copy_buffer_to_buffer(resolve, 0, read, 0, 16);
        }
    }

    /// Call right before `queue.submit`.
    pub(crate) fn submitted(&mut self) {
        self.started = Some(Instant::now());
    }

    /// Call after the submission completed (after [`GpuContext::wait`]).
    pub(crate) fn finish(&mut self, ctx: &GpuContext) -> Result<GpuTiming, GpuError> {
        let wall_ms = self.started.take().map_or(0.0, |t| t.elapsed().as_secs_f64() * 1e3);
        if let Some((_, _, read)) = &self.queries {
            let mut ticks = Vec::<u64>::new();
            super::buffers::map_read(ctx, read, 2, &mut ticks)?;
            if let [begin, end] = ticks[..]
                && end > begin
            {
                return Ok(GpuTiming {
                    ms: (end - begin) as f64 * self.period_ns * 1e-6,
                    source: TimingSource::Timestamps,
                });
            }
        }
        Ok(GpuTiming { ms: wall_ms, source: TimingSource::Wall })
    }
}
