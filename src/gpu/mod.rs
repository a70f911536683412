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

pub use broadphase::{GpuGridBroadphase, GpuPairsReport};
pub use context::{GpuContext, GpuError, GpuOptions, GpuTiming, TimingSource};
pub use fields::{GpuBody, GpuField, GpuFieldEvaluator, cpu_field_forces};
pub use mechanism::GpuFieldBackend;

/// Invocations per workgroup of every kernel (`@workgroup_size(256)`).
pub const WORKGROUP_SIZE: u32 = 256;
