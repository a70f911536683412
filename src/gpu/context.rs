//! The wgpu instance, adapter, device and queue, and the error type of the
//! GPU path.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long one submission may run before [`GpuContext::wait`] gives up,
/// unless `MX2D_GPU_TIMEOUT_S` or [`GpuOptions::wait_timeout`] says
/// otherwise: far above any one step or kernel run of mx2d (the largest,
/// 10⁷ balls on lavapipe, takes seconds), far below "for ever".
pub const DEFAULT_WAIT_TIMEOUT: Duration = Duration::from_secs(120);

/// Submissions kept in flight before [`GpuContext::submit`] waits for the
/// oldest: enough to keep a GPU busy, few enough that the host cannot run
/// arbitrarily far ahead (each in-flight submission holds its command
/// buffers).
pub const MAX_IN_FLIGHT: usize = 64;

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
    /// A submission did not complete within the wait timeout: a kernel that
    /// never ends on this adapter (a driver or shader fault), or a job far
    /// larger than the adapter can run in that time. The device is left as
    /// it is; the context should not be used further.
    #[error(
        "GPU work submitted for `{kernel}` did not finish within {seconds} s on {adapter}: a kernel that never \
         ends on this adapter, or a job too large for it (MX2D_GPU_TIMEOUT_S sets the limit in seconds, 0 waits \
         indefinitely)"
    )]
    Timeout {
        /// Name of the kernel or operation waited for.
        kernel: &'static str,
        /// The timeout, in seconds.
        seconds: f64,
        /// Adapter name.
        adapter: String,
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
    /// How long one submission may run before a wait fails with
    /// [`GpuError::Timeout`]; `None`: `MX2D_GPU_TIMEOUT_S` (seconds, 0 =
    /// indefinitely) when set, else [`DEFAULT_WAIT_TIMEOUT`].
    pub wait_timeout: Option<Duration>,
}

/// The wait timeout of `options` (see [`GpuOptions::wait_timeout`]); `None`
/// waits indefinitely. An unreadable `MX2D_GPU_TIMEOUT_S` is an error, not
/// a silent default.
fn wait_timeout(options: &GpuOptions) -> Result<Option<Duration>, GpuError> {
    if let Some(timeout) = options.wait_timeout {
        return Ok(Some(timeout));
    }
    match std::env::var("MX2D_GPU_TIMEOUT_S") {
        Ok(text) => {
            parse_wait_timeout(&text).map_err(|message| GpuError::Device { adapter: "(not opened)".into(), message })
        }
        Err(_) => Ok(Some(DEFAULT_WAIT_TIMEOUT)),
    }
}

/// `MX2D_GPU_TIMEOUT_S`'s text: seconds from 1 ms to 1e9, or `0` for
/// indefinitely (a shorter limit would fail every wait that is not already
/// over: not a setting, a typo).
pub fn parse_wait_timeout(text: &str) -> Result<Option<Duration>, String> {
    let text = text.trim();
    match text.parse::<f64>() {
        Ok(seconds) if seconds == 0.0 && !text.starts_with('-') => Ok(None),
        Ok(seconds) if (1e-3..1e9).contains(&seconds) => Ok(Some(Duration::from_secs_f64(seconds))),
        _ => {
            Err(format!("MX2D_GPU_TIMEOUT_S = {text:?} is not a number of seconds in [0.001, 1e9), or 0 for no limit"))
        }
    }
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
    /// How long one submission may run (`None`: indefinitely).
    wait_timeout: Option<Duration>,
    /// Submissions made through [`submit`](GpuContext::submit) and not yet
    /// waited for, oldest first, each with the kernel it ran: [`wait`](GpuContext::wait)
    /// waits for each in turn, so the timeout bounds one submission, not a
    /// queue of many, and a timeout names the submission that hung.
    in_flight: Mutex<VecDeque<(wgpu::SubmissionIndex, &'static str)>>,
    /// Set by a [`GpuError::Timeout`]: the device may never go idle, so
    /// dropping the context must not wait for it (see `Drop`).
    timed_out: std::sync::atomic::AtomicBool,
}

impl Drop for GpuContext {
    fn drop(&mut self) {
        // wgpu waits for the queue to go idle when the last handle of the
        // queue or device goes, with no time limit: after a timeout that
        // wait may never end. Leak one handle of each instead (the process
        // is about to report the error; the driver reclaims all at exit).
        if self.timed_out.load(std::sync::atomic::Ordering::Relaxed) {
            std::mem::forget(self.queue.clone());
            std::mem::forget(self.device.clone());
        }
    }
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
        let wait_timeout = wait_timeout(&options)?;
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
        Ok(Self {
            device,
            queue,
            adapter,
            info,
            limits,
            workgroups_per_dimension,
            binding_bytes,
            timestamps,
            failure,
            wait_timeout,
            in_flight: Mutex::new(VecDeque::new()),
            timed_out: std::sync::atomic::AtomicBool::new(false),
        })
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

    /// Submits `commands` (the work of `kernel`) and remembers the
    /// submission for [`wait`](Self::wait). With [`MAX_IN_FLIGHT`]
    /// submissions already in flight it first waits for the oldest (same
    /// timeout as `wait`): the host cannot run arbitrarily far ahead of the
    /// GPU — a window's frames too then wait for the GPU once 64 are queued.
    pub fn submit<I: IntoIterator<Item = wgpu::CommandBuffer>>(
        &self,
        kernel: &'static str,
        commands: I,
    ) -> Result<(), GpuError> {
        let index = self.queue.submit(commands);
        let oldest = {
            let mut in_flight = self.in_flight.lock().map_err(|_| poisoned(kernel))?;
            in_flight.push_back((index, kernel));
            if in_flight.len() > MAX_IN_FLIGHT { in_flight.pop_front() } else { None }
        };
        match oldest {
            Some((index, oldest_kernel)) => self.wait_for(oldest_kernel, Some(index)),
            None => Ok(()),
        }
    }

    /// Blocks until all submitted work is done; reports a lost device, an
    /// uncaptured error raised meanwhile, or a submission that ran past the
    /// wait timeout ([`GpuError::Timeout`]; each submission of
    /// [`submit`](Self::submit) gets the whole timeout, so a long queue of
    /// short steps is not a timeout, one kernel that never ends is).
    ///
    /// A timeout names the submission that did not finish (its kernel), which
    /// may be another caller's than `kernel`.
    pub fn wait(&self, kernel: &'static str) -> Result<(), GpuError> {
        loop {
            let next = self.in_flight.lock().map_err(|_| poisoned(kernel))?.pop_front();
            match next {
                Some((index, submitted)) => self.wait_for(submitted, Some(index))?,
                None => break,
            }
        }
        // Work submitted on the queue directly (callers outside mx2d).
        self.wait_for(kernel, None)?;
        self.check(kernel)
    }

    /// The wait timeout in force (`None`: indefinitely).
    pub fn wait_timeout(&self) -> Option<Duration> {
        self.wait_timeout
    }

    fn wait_for(&self, kernel: &'static str, index: Option<wgpu::SubmissionIndex>) -> Result<(), GpuError> {
        match self.device.poll(wgpu::PollType::Wait { submission_index: index, timeout: self.wait_timeout }) {
            Ok(_) => Ok(()),
            Err(wgpu::PollError::Timeout) => {
                self.timed_out.store(true, std::sync::atomic::Ordering::Relaxed);
                Err(GpuError::Timeout {
                    kernel,
                    seconds: self.wait_timeout.map_or(f64::INFINITY, |t| t.as_secs_f64()),
                    adapter: self.info.name.clone(),
                })
            }
            // A submission that failed validation (or met a lost device)
            // keeps an index that never completes: the real cause is the
            // error the device callbacks recorded, reported here; with none
            // recorded, there is nothing left to wait for.
            Err(wgpu::PollError::WrongSubmissionIndex(..)) => self.check(kernel),
        }
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

fn poisoned(kernel: &'static str) -> GpuError {
    GpuError::Runtime { kernel, message: "the submission list was poisoned by a panic on another thread".into() }
}
