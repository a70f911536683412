//! GPU compute (wgpu 30, WGSL): force fields and the grid broadphase.
//!
//! * [`context`]: one [`GpuContext`] per process — instance from the
//!   environment (`WGPU_BACKEND`, `WGPU_ADAPTER_NAME`, `WGPU_POWER_PREF`),
//!   a high-performance adapter, a device with the adapter's own limits,
//!   errors instead of panics.
//! * [`buffers`]: growable buffers (allocated once, reused every step) and
//!   readback through a staging buffer.
//! * [`fields`]: `shaders/fields.wgsl` and its CPU twin.
//! * [`broadphase`]: `shaders/broadphase.wgsl`, twin of
//!   [`crate::broadphase::GridBroadphase`]. It gives the same pair set, by a
//!   different algorithm (multi-cell insertion and a reference cell, against
//!   the CPU's single insertion and half-stencil sweep).
//! * [`timing`]: per-pass GPU timing from timestamp queries (wall clock,
//!   stated as such, without them), for `mx2d bench --passes`.
//! * [`prefix_sum`]: `shaders/prefix_sum.wgsl`, a portable multi-level
//!   scan-then-propagate exclusive prefix sum (no inter-workgroup waiting).
//!
//! Every kernel uses 256-invocation workgroups and flattens a 2D dispatch
//! grid, so more than `max_compute_workgroups_per_dimension` workgroups
//! (65,535 on most adapters) are launched as an `x × y` grid.

pub mod broadphase;
pub mod buffers;
pub mod context;
pub mod fields;
pub mod mechanism;
pub mod prefix_sum;
pub mod timing;

#[cfg(test)]
mod shader_constants;

pub use broadphase::{GpuGridBroadphase, GpuPairsReport};
pub use context::{
    DEFAULT_WAIT_TIMEOUT, GpuContext, GpuError, GpuOptions, GpuTiming, MAX_IN_FLIGHT, TimingSource, parse_wait_timeout,
};
pub use fields::{GpuBody, GpuField, GpuFieldEvaluator, cpu_field_forces};
pub use mechanism::GpuFieldBackend;

/// Invocations per workgroup of every kernel (`@workgroup_size(256)`).
pub const WORKGROUP_SIZE: u32 = 256;

/// A field-evaluating kernel's WGSL module source: `shaders/field_common.wgsl`
/// (the `Field` struct, `region_contains`, `falloff_factor`) followed by the
/// kernel's own file. WGSL has no include; one shared copy keeps the field
/// kernel and the population step in step with `src/field.rs`.
#[macro_export]
#[doc(hidden)]
macro_rules! field_shader {
    ($label:literal, $file:literal) => {
        wgpu::ShaderModuleDescriptor {
            label: Some($label),
            source: wgpu::ShaderSource::Wgsl(std::borrow::Cow::Borrowed(concat!(
                include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/shaders/field_common.wgsl")),
                "\n",
                include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/shaders/", $file))
            ))),
        }
    };
}
