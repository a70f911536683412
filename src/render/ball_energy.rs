//! The balls' kinetic energy for the window's overlay and energy graph when
//! the population runs on the GPU backend — without a frame ever waiting.
//!
//! The balls live in the GPU backend's storage buffers; the host copy is
//! refreshed only by [`GpuPopulation::read_back`](crate::population::gpu::GpuPopulation::read_back),
//! which waits for the device. A frame must not (issue 9). So
//! [`BallEnergyReader`] copies the three ball buffers into a staging buffer
//! of its own at the end of a frame's submission, asks for the mapping with
//! `map_async`, and on later frames only *polls* the device
//! (`PollType::Poll`, non-blocking). When the mapping has arrived the energy
//! is summed on the host and shown with the simulated time it belongs to —
//! typically a frame or two behind the picture. One copy is in flight at a
//! time; the next is asked for once the last has been read.
//!
//! Both backends sum with [`kinetic_energy`], on the same f32 inputs in the
//! same order, so the figure does not depend on where the balls ran.

use std::sync::mpsc::{Receiver, TryRecvError, channel};

use super::balls::GpuBalls;
use crate::gpu::{GpuContext, GpuError};
use crate::population::{Population, state};

/// Kinetic energy of one ball, ½ m v² + ½ I ω² with I = ½ m r² (a solid
/// disc), in f64; 0 for a ball of zero inverse mass.
fn ball_kinetic_energy(velocity: [f32; 2], omega: f32, radius: f32, inv_mass: f32) -> f64 {
    let inv_mass = f64::from(inv_mass);
    if inv_mass <= 0.0 {
        return 0.0;
    }
    let mass = 1.0 / inv_mass;
    let (vx, vy, omega, r) = (f64::from(velocity[0]), f64::from(velocity[1]), f64::from(omega), f64::from(radius));
    0.5 * mass * (vx * vx + vy * vy) + 0.25 * mass * r * r * omega * omega
}

/// Kinetic energy of the live balls, summed in f64 in ball order; `motion`
/// is (x, y, vx, vy), `properties` (angle, ω, r, 1/m), the layout of the GPU
/// backend's buffers. Balls not alive or with a non-finite energy are left
/// out.
pub fn kinetic_energy(motion: &[[f32; 4]], properties: &[[f32; 4]], states: &[u32]) -> f64 {
    motion
        .iter()
        .zip(properties)
        .zip(states)
        .filter(|(_, s)| **s == state::ALIVE)
        .map(|((m, p), _)| ball_kinetic_energy([m[2], m[3]], p[1], p[2], p[3]))
        .filter(|e| e.is_finite())
        .sum()
}

/// [`kinetic_energy`] of a population's host arrays (the CPU twin's balls),
/// read in place: the same terms in the same order, so the same value.
pub fn population_kinetic_energy(pop: &Population) -> f64 {
    let at = |v: &[f32], i: usize| v.get(i).copied().unwrap_or(0.0);
    (0..pop.len())
        .filter(|&i| pop.state.get(i).is_none_or(|s| *s == state::ALIVE))
        .map(|i| {
            let velocity = pop.velocity.get(i).map_or([0.0; 2], |v| v.to_array());
            ball_kinetic_energy(velocity, at(&pop.omega, i), at(&pop.radius, i), at(&pop.inv_mass, i))
        })
        .filter(|e| e.is_finite())
        .sum()
}

/// A copy in flight: the simulated time it belongs to and, once its
/// submission has gone, the mapping's outcome.
struct Pending {
    time: f64,
    mapped: Option<Receiver<Result<(), wgpu::BufferAsyncError>>>,
}

/// Reads the balls' kinetic energy from the GPU buffers asynchronously (see
/// the module documentation).
pub struct BallEnergyReader {
    staging: Option<wgpu::Buffer>,
    count: u32,
    pending: Option<Pending>,
    latest: Option<(f64, f64)>,
    motion: Vec<[f32; 4]>,
    properties: Vec<[f32; 4]>,
    states: Vec<u32>,
}

impl Default for BallEnergyReader {
    fn default() -> Self {
        Self::new()
    }
}

/// Bytes of one ball in the staging buffer: motion, properties, state.
const BALL_BYTES: u64 = 16 + 16 + 4;

impl BallEnergyReader {
    /// A reader with nothing asked for yet.
    pub fn new() -> Self {
        Self {
            staging: None,
            count: 0,
            pending: None,
            latest: None,
            motion: Vec::new(),
            properties: Vec::new(),
            states: Vec::new(),
        }
    }

    /// Whether a copy is in flight.
    pub fn is_pending(&self) -> bool {
        self.pending.is_some()
    }

    /// The latest energy read: (simulated time, joules).
    pub fn latest(&self) -> Option<(f64, f64)> {
        self.latest
    }

    /// Forgets what was read and drops a copy in flight (after a reset).
    pub fn clear(&mut self) {
        if let Some(Pending { mapped: Some(_), .. }) = self.pending.take()
            && let Some(staging) = &self.staging
        {
            // A mapping asked for but not yet read: unmapping cancels it.
            staging.unmap();
        }
        self.latest = None;
    }

    /// Records into `encoder` the copy of `balls` as they are at simulated
    /// time `time`; once the caller has submitted `encoder`, it calls
    /// [`after_submit`](Self::after_submit), which asks for the mapping (a
    /// buffer may not be mapped while a submission still writes it). Does
    /// nothing while a copy is in flight. Returns whether a copy was recorded.
    pub fn record_copy(
        &mut self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        balls: &GpuBalls,
        time: f64,
    ) -> Result<bool, GpuError> {
        if self.pending.is_some() || balls.count == 0 {
            return Ok(false);
        }
        let n = u64::from(balls.count);
        let bytes = n.checked_mul(BALL_BYTES).ok_or(GpuError::TooLarge {
            what: "ball energy staging",
            bytes: u64::MAX,
            limit: ctx.limits().max_buffer_size,
        })?;
        if self.count != balls.count || self.staging.is_none() {
            if bytes > ctx.limits().max_buffer_size {
                return Err(GpuError::TooLarge {
                    what: "ball energy staging",
                    bytes,
                    limit: ctx.limits().max_buffer_size,
                });
            }
            self.staging = Some(ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("ball energy staging"),
                size: bytes.next_multiple_of(wgpu::COPY_BUFFER_ALIGNMENT),
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            }));
            self.count = balls.count;
        }
        let Some(staging) = &self.staging else { return Ok(false) };
        encoder.copy_buffer_to_buffer(&balls.motion, 0, staging, 0, 16 * n);
        encoder.copy_buffer_to_buffer(&balls.properties, 0, staging, 16 * n, 16 * n);
        encoder.copy_buffer_to_buffer(&balls.state, 0, staging, 32 * n, (4 * n).next_multiple_of(4));
        self.pending = Some(Pending { time, mapped: None });
        Ok(true)
    }

    /// Asks for the mapping of the copy recorded by
    /// [`record_copy`](Self::record_copy), after its submission.
    pub fn after_submit(&mut self) {
        let (Some(pending), Some(staging)) = (&mut self.pending, &self.staging) else { return };
        if pending.mapped.is_some() {
            return;
        }
        let (sender, mapped) = channel();
        pending.mapped = Some(mapped);
        staging.slice(..).map_async(wgpu::MapMode::Read, move |result| {
            // The receiver may be gone after a reset: nothing to tell then.
            let _ = sender.send(result);
        });
    }

    /// Checks, without blocking, whether the copy in flight has arrived; if
    /// so sums it and returns the new (time, energy).
    pub fn poll(&mut self, ctx: &GpuContext) -> Result<Option<(f64, f64)>, GpuError> {
        let Some(Pending { time, mapped: Some(mapped) }) = &self.pending else { return Ok(None) };
        // Non-blocking: runs the callbacks of what has completed.
        ctx.device
            .poll(wgpu::PollType::Poll)
            .map_err(|e| GpuError::Runtime { kernel: "ball energy", message: e.to_string() })?;
        let outcome = match mapped.try_recv() {
            Err(TryRecvError::Empty) => return Ok(None),
            Err(TryRecvError::Disconnected) => Err("the mapping was dropped".to_string()),
            Ok(result) => result.map_err(|e| e.to_string()),
        };
        let time = *time;
        self.pending = None;
        let Some(staging) = &self.staging else { return Ok(None) };
        outcome.map_err(|message| GpuError::Runtime { kernel: "ball energy", message })?;
        let n = self.count as usize;
        {
            let view = staging
                .slice(..)
                .get_mapped_range()
                .map_err(|e| GpuError::Runtime { kernel: "ball energy", message: e.to_string() })?;
            let read = |at: usize, len: usize| &view[at..at + len];
            self.motion.resize(n, [0.0; 4]);
            self.properties.resize(n, [0.0; 4]);
            self.states.resize(n, 0);
            // Bytewise: the mapped range's alignment need not suit f32.
            bytemuck::cast_slice_mut::<_, u8>(&mut self.motion).copy_from_slice(read(0, 16 * n));
            bytemuck::cast_slice_mut::<_, u8>(&mut self.properties).copy_from_slice(read(16 * n, 16 * n));
            bytemuck::cast_slice_mut::<_, u8>(&mut self.states).copy_from_slice(read(32 * n, 4 * n));
        }
        staging.unmap();
        let energy = kinetic_energy(&self.motion, &self.properties, &self.states);
        self.latest = Some((time, energy));
        Ok(self.latest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinetic_energy_of_a_moving_spinning_disc_and_the_dead_left_out() {
        // m = 2 kg (1/m = 0.5), r = 0.5, v = (3, 4), ω = 2:
        // ½·2·25 + ¼·2·0.25·4 = 25 + 0.5.
        let motion = [[0.0, 0.0, 3.0, 4.0], [0.0, 0.0, 100.0, 0.0]];
        let properties = [[0.0, 2.0, 0.5, 0.5], [0.0, 0.0, 0.5, 0.5]];
        assert_eq!(kinetic_energy(&motion, &properties, &[state::ALIVE, state::ESCAPED]), 25.5);
        assert_eq!(kinetic_energy(&motion, &properties, &[state::PENDING, state::KILLED]), 0.0);
    }
}
