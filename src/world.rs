//! The world and its step.
//!
//! `World::step` is the stage list of DESIGN.md, each stage a function with its
//! time recorded:
//!
//! 1. `gather_state` — body states into the integrator's flat vectors;
//! 2. `integrate` — the chosen integrator; every acceleration evaluation runs
//!    `apply_fields` (gravity and force fields, per body, in parallel for large
//!    worlds) and `apply_loads` (forces, torques, springs, drag), then divides
//!    by the mass;
//! 3. `scatter_state` — back into the bodies;
//! 4. `check_divergence` — NaN/∞ or runaway energy stops the run, naming the
//!    step and the body.

use std::time::{Duration, Instant};

use glam::DVec2;
use rayon::prelude::*;

use crate::body::{Body, BodyHandle, BodySet};
use crate::field::{Field, total_force};
use crate::integrator::{Dynamics, Integrator, IntegratorError, Method, State};
use crate::load::{Kinematics, Load};
use crate::surface::Surface;

/// Below this many bodies the per-body loop runs on one thread (rayon's
/// fork-join costs more than it saves).
const PARALLEL_THRESHOLD: usize = 4096;

/// Energy of the world at one instant.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Energy {
    /// ½ m v² + ½ J ω², summed (J).
    pub kinetic: f64,
    /// Gravity −m g·r plus spring ½k(l − l₀)² (J).
    pub potential: f64,
    /// kinetic + potential (J).
    pub total: f64,
    /// Work done so far by non-conservative loads: fields, applied forces and
    /// torques, dampers, drag (J).
    pub work: f64,
}

impl Energy {
    /// `total − work`: constant in exact arithmetic (energy balance).
    pub fn balance(&self) -> f64 {
        self.total - self.work
    }
}

/// Wall time spent in each stage since the world was made.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StageTimes {
    /// Copying body states into the integrator.
    pub gather_state: Duration,
    /// Gravity and force fields.
    pub apply_fields: Duration,
    /// Applied loads.
    pub apply_loads: Duration,
    /// The integrator's own arithmetic (total integrate time minus the force
    /// evaluations above).
    pub integrate: Duration,
    /// Copying states back into the bodies.
    pub scatter_state: Duration,
    /// The divergence check.
    pub check_divergence: Duration,
}

impl StageTimes {
    /// (stage name, time) in step order.
    pub fn as_list(&self) -> [(&'static str, Duration); 6] {
        [
            ("gather_state", self.gather_state),
            ("apply_fields", self.apply_fields),
            ("apply_loads", self.apply_loads),
            ("integrate", self.integrate),
            ("scatter_state", self.scatter_state),
            ("check_divergence", self.check_divergence),
        ]
    }
}

/// Why the simulation stopped.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimulationError {
    /// A body's state became non-finite or its energy ran away.
    #[error("simulation diverged at step {step} (t = {time}): body '{body}': {reason}")]
    Diverged {
        /// Step that produced the bad state.
        step: u64,
        /// Time at the end of that step.
        time: f64,
        /// Name of the offending body.
        body: String,
        /// What was wrong.
        reason: String,
    },
    /// The integrator failed.
    #[error("step {step} (t = {time}): {source}")]
    Integrator {
        /// Step that failed.
        step: u64,
        /// Time at the start of that step.
        time: f64,
        /// The integrator's error.
        source: IntegratorError,
    },
}

/// When a run counts as diverged (besides any non-finite number).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DivergenceLimits {
    /// Largest kinetic energy a single body may reach (J); `None`: derived at
    /// the first step as 1e12 × (1 J + the initial kinetic + |potential| energy).
    pub max_body_energy: Option<f64>,
}

impl Default for DivergenceLimits {
    fn default() -> Self {
        Self {
            max_body_energy: None,
        }
    }
}

/// A planar world: bodies, static surfaces, loads, fields and gravity, advanced
/// by a chosen integrator with a fixed step.
#[derive(Clone, Debug)]
pub struct World {
    /// The bodies.
    pub bodies: BodySet,
    /// Static surfaces.
    pub surfaces: Vec<Surface>,
    /// Loads.
    pub loads: Vec<Load>,
    /// Force fields.
    pub fields: Vec<Field>,
    /// Gravitational acceleration (m/s²).
    pub gravity: DVec2,
    /// Step size (s).
    pub dt: f64,
    /// Divergence detection.
    pub limits: DivergenceLimits,
    time: f64,
    steps: u64,
    integrator: Integrator,
    state: State,
    times: StageTimes,
}

impl World {
    /// An empty world with this gravity, step 1 ms, symplectic Euler.
    pub fn new(gravity: DVec2) -> Self {
        Self {
            bodies: BodySet::new(),
            surfaces: Vec::new(),
            loads: Vec::new(),
            fields: Vec::new(),
            gravity,
            dt: 1e-3,
            limits: DivergenceLimits::default(),
            time: 0.0,
            steps: 0,
            integrator: Integrator::new(Method::Symplectic),
            state: State::default(),
            times: StageTimes::default(),
        }
    }

    /// Adds a body; fails if its name is taken.
    pub fn add_body(&mut self, body: Body) -> Result<BodyHandle, String> {
        self.integrator.reset();
        self.bodies.insert(body)
    }

    /// The body behind a handle.
    pub fn body(&self, h: BodyHandle) -> &Body {
        &self.bodies[h]
    }

    /// Selects the integration method (restarts multistep history).
    pub fn set_integrator(&mut self, method: Method) {
        self.integrator = Integrator::new(method);
    }

    /// The integration method in use.
    pub fn integrator(&self) -> Method {
        self.integrator.method()
    }

    /// Simulated time (s).
    pub fn time(&self) -> f64 {
        self.time
    }

    /// Steps taken.
    pub fn step_count(&self) -> u64 {
        self.steps
    }

    /// Time per stage, accumulated over all steps.
    pub fn stage_times(&self) -> &StageTimes {
        &self.times
    }

    /// Kinetic, potential, total energy and the non-conservative work so far.
    pub fn energy(&self) -> Energy {
        let bodies = self.bodies.as_slice();
        let kinetic: f64 = bodies.iter().map(Body::kinetic_energy).sum();
        let gravity: f64 = bodies
            .iter()
            .filter(|b| !b.fixed)
            .map(|b| -b.mass * self.gravity.dot(b.position))
            .sum();
        let springs: f64 = self.loads.iter().map(|l| l.potential_energy(bodies)).sum();
        let potential = gravity + springs;
        Energy {
            kinetic,
            potential,
            total: kinetic + potential,
            work: self.state.work,
        }
    }

    /// Advances the world by one step of `dt`.
    pub fn step(&mut self) -> Result<(), SimulationError> {
        if self.limits.max_body_energy.is_none() {
            let e = self.energy();
            self.limits.max_body_energy = Some(1e12 * (1.0 + e.kinetic + e.potential.abs()));
        }
        timed(&mut self.times.gather_state, || {
            gather_state(self.bodies.as_slice(), &mut self.state)
        });
        self.integrate()?;
        timed(&mut self.times.scatter_state, || {
            scatter_state(&self.state, self.bodies.as_mut_slice())
        });
        self.time += self.dt;
        self.steps += 1;
        let started = Instant::now();
        let result = self.check_divergence();
        self.times.check_divergence += started.elapsed();
        result
    }

    fn integrate(&mut self) -> Result<(), SimulationError> {
        let started = Instant::now();
        let before = self.times.apply_fields + self.times.apply_loads;
        let mut model = ForceModel {
            bodies: self.bodies.as_slice(),
            loads: &self.loads,
            fields: &self.fields,
            gravity: self.gravity,
            times: &mut self.times,
        };
        let result = self
            .integrator
            .step(&mut model, self.time, self.dt, &mut self.state);
        let forces = self.times.apply_fields + self.times.apply_loads - before;
        self.times.integrate += started.elapsed().saturating_sub(forces);
        result.map_err(|source| SimulationError::Integrator {
            step: self.steps + 1,
            time: self.time,
            source,
        })
    }

    fn check_divergence(&self) -> Result<(), SimulationError> {
        let limit = self.limits.max_body_energy.unwrap_or(f64::INFINITY);
        let bad = |b: &Body| -> Option<String> {
            let finite = b.position.is_finite()
                && b.velocity.is_finite()
                && b.angle.is_finite()
                && b.angular_velocity.is_finite();
            if !finite {
                return Some("position or velocity is not finite".into());
            }
            let e = b.kinetic_energy();
            (e > limit).then(|| format!("kinetic energy {e:e} J passed the bound {limit:e} J"))
        };
        match self.bodies.iter().find_map(|b| bad(b).map(|r| (b, r))) {
            None => Ok(()),
            Some((b, reason)) => Err(SimulationError::Diverged {
                step: self.steps,
                time: self.time,
                body: b.name.clone(),
                reason,
            }),
        }
    }
}

fn timed<R>(slot: &mut Duration, f: impl FnOnce() -> R) -> R {
    let started = Instant::now();
    let r = f();
    *slot += started.elapsed();
    r
}

fn gather_state(bodies: &[Body], state: &mut State) {
    state.q.resize(3 * bodies.len(), 0.0);
    state.v.resize(3 * bodies.len(), 0.0);
    for (i, b) in bodies.iter().enumerate() {
        state.q[3 * i..3 * i + 3].copy_from_slice(&[b.position.x, b.position.y, b.angle]);
        state.v[3 * i..3 * i + 3].copy_from_slice(&[
            b.velocity.x,
            b.velocity.y,
            b.angular_velocity,
        ]);
    }
}

fn scatter_state(state: &State, bodies: &mut [Body]) {
    for (i, b) in bodies.iter_mut().enumerate() {
        let (q, v) = (&state.q[3 * i..3 * i + 3], &state.v[3 * i..3 * i + 3]);
        b.position = DVec2::new(q[0], q[1]);
        b.angle = q[2];
        b.velocity = DVec2::new(v[0], v[1]);
        b.angular_velocity = v[2];
    }
}

/// The forces of a world at one integrator stage: gravity, fields, loads.
struct ForceModel<'w> {
    bodies: &'w [Body],
    loads: &'w [Load],
    fields: &'w [Field],
    gravity: DVec2,
    times: &'w mut StageTimes,
}

impl ForceModel<'_> {
    /// Gravity and fields: writes the force on every body into `f` (3 per
    /// body) and returns the power of the field forces (gravity has a
    /// potential and is not counted as work).
    fn apply_fields(&self, q: &[f64], v: &[f64], f: &mut [f64]) -> f64 {
        let per_body = |(i, out): (usize, &mut [f64])| -> f64 {
            let b = &self.bodies[i];
            if b.fixed {
                out.copy_from_slice(&[0.0; 3]);
                return 0.0;
            }
            let p = DVec2::new(q[3 * i], q[3 * i + 1]);
            let vel = DVec2::new(v[3 * i], v[3 * i + 1]);
            let field = total_force(self.fields, p, vel, b.mass, b.radius());
            let total = field + self.gravity * b.mass;
            out.copy_from_slice(&[total.x, total.y, 0.0]);
            field.dot(vel)
        };
        if self.bodies.len() >= PARALLEL_THRESHOLD {
            f.par_chunks_mut(3).enumerate().map(per_body).sum()
        } else {
            f.chunks_mut(3).enumerate().map(per_body).sum()
        }
    }

    /// Adds the loads' wrenches to `f`; returns their non-conservative power.
    fn apply_loads(&self, t: f64, q: &[f64], v: &[f64], f: &mut [f64]) -> f64 {
        let kin = |h: BodyHandle| {
            let i = 3 * h.0;
            Kinematics {
                position: DVec2::new(q[i], q[i + 1]),
                angle: q[i + 2],
                velocity: DVec2::new(v[i], v[i + 1]),
                angular_velocity: v[i + 2],
            }
        };
        let mut power = 0.0;
        for load in self.loads {
            let effect = load.evaluate(t, kin, self.bodies);
            for (h, (force, torque)) in effect.wrenches.into_iter().flatten() {
                if !self.bodies[h.0].fixed {
                    f[3 * h.0] += force.x;
                    f[3 * h.0 + 1] += force.y;
                    f[3 * h.0 + 2] += torque;
                }
            }
            power += effect.power;
        }
        power
    }
}

impl Dynamics for ForceModel<'_> {
    fn acceleration(&mut self, t: f64, q: &[f64], v: &[f64], a: &mut [f64]) -> f64 {
        let started = Instant::now();
        let mut power = self.apply_fields(q, v, a);
        let fields_done = Instant::now();
        self.times.apply_fields += fields_done - started;
        power += self.apply_loads(t, q, v, a);
        // a = M⁻¹ F (fixed bodies: zero inverse mass, zero acceleration).
        for (b, ai) in self.bodies.iter().zip(a.chunks_mut(3)) {
            let inv = b.inverse_mass();
            ai[0] *= inv[0];
            ai[1] *= inv[1];
            ai[2] *= inv[2];
        }
        self.times.apply_loads += fields_done.elapsed();
        power
    }
}
