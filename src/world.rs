//! The world and its step.
//!
//! `World::step` is the stage list of DESIGN.md, each stage a function with its
//! time recorded:
//!
//! 1. `gather_state` — body states into the integrator's flat vectors;
//! 2. `integrate` — the chosen integrator; every acceleration evaluation runs
//!    `apply_fields` (gravity alone: m·g in one serial pass; with force
//!    fields, per body, in parallel for large worlds) and `apply_loads`
//!    (forces, torques, springs, drag), then divides by the mass — and
//!    `solve_constraints`: assemble J, A = J M⁻¹ Jᵀ, solve for λ (sparse
//!    Gauss) and add the constraint forces Jᵀλ;
//! 3. contacts, when the scene has them (`src/contact/`): `broadphase`,
//!    `impacts` (time of impact inside the step, integrator advanced to it),
//!    `narrowphase`, `contact_solve` (impacts left, PGS with friction,
//!    position update), `project_penetration` (overlap beyond the slop
//!    projected out on the exact gaps); with `contacts.solver: SoftStep`
//!    stages 2–3 are Box2D v3's soft step instead (`src/contact/soft_step/`:
//!    `broadphase`, `narrowphase`, then sub-steps timed as `integrate` and
//!    `contact_solve`);
//! 4. `correct_drift` — Newton projection of positions and velocities onto
//!    the constraints (seed 003 §IV);
//! 5. `scatter_state` — back into the bodies;
//! 6. `check_divergence` — NaN/∞ or runaway energy stops the run, naming the
//!    step and the body;
//! 7. `step_population` — when the world has a population tier
//!    ([`crate::population`]), its balls are stepped last, so that they see
//!    the bodies' new poses and velocities as moving obstacles (one-way
//!    coupling: balls do not push bodies). A non-finite ball stops the run
//!    with the step and the ball's index.

use std::time::{Duration, Instant};

use glam::DVec2;
use rayon::prelude::*;

use crate::body::{Body, BodyHandle, BodySet};
use crate::constraint::system::{ConstraintSystem, Reaction, Scene, Stabilization};
use crate::constraint::{Constraint, ConstraintHandle, ConstraintSet};
use crate::contact::soft_step::SoftStepSettings;
use crate::contact::{ContactError, ContactSet};
use crate::field::{Field, total_force};
use crate::gpu::GpuFieldBackend;
use crate::integrator::{
    DenseOutput, Dynamics, Integrator, IntegratorError, IntegratorStats, LinearModel, Method, State,
};
use crate::load::{Kinematics, Load};
use crate::population::Population;
use crate::population::gpu::GpuPopulation;
use crate::solver::SolverError;
use crate::surface::Surface;

mod linear_model;
pub(crate) use linear_model::LinearisationScratch;

/// Below this many bodies the per-body loop runs on one thread (rayon's
/// fork-join costs more than it saves).
const PARALLEL_THRESHOLD: usize = 4096;
/// Bodies per block of the field-power sum (a fixed reduction order, so the
/// sum does not depend on the thread count).
const POWER_BLOCK: usize = 1024;

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

/// The stages of [`World::step`], in step order. Adding a stage is one variant
/// here, one name in [`Stage::name`] and one timed call in the step: the
/// summary's `stage_ms` lists every variant in this order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stage {
    /// Copying body states into the integrator.
    GatherState,
    /// Gravity and force fields (inside every acceleration evaluation).
    ApplyFields,
    /// Applied loads, and the division by the mass.
    ApplyLoads,
    /// Constraint assembly and solve for λ.
    SolveConstraints,
    /// The integrator's own arithmetic (total integrate time minus the force
    /// evaluations above).
    Integrate,
    /// Candidate contact pairs from the swept boxes.
    Broadphase,
    /// Time of impact inside the step and the impact impulses there.
    Impacts,
    /// Contact points at the end of the step.
    Narrowphase,
    /// Resting/sliding contact: PGS with friction and the position update.
    ContactSolve,
    /// Overlap beyond the slop projected out on the exact gaps
    /// (`src/contact/projection.rs`: its broadphase, narrowphase rounds and
    /// position PGS).
    ProjectPenetration,
    /// Projection of positions and velocities onto the constraints.
    CorrectDrift,
    /// Copying states back into the bodies.
    ScatterState,
    /// The divergence check.
    CheckDivergence,
    /// The population tier's whole step (fields, grid, contacts, bounds).
    StepPopulation,
}

impl Stage {
    /// Every stage, in step order.
    pub const ALL: [Stage; 14] = [
        Stage::GatherState,
        Stage::ApplyFields,
        Stage::ApplyLoads,
        Stage::SolveConstraints,
        Stage::Integrate,
        Stage::Broadphase,
        Stage::Impacts,
        Stage::Narrowphase,
        Stage::ContactSolve,
        Stage::ProjectPenetration,
        Stage::CorrectDrift,
        Stage::ScatterState,
        Stage::CheckDivergence,
        Stage::StepPopulation,
    ];

    /// The stage's name in the summary's `stage_ms`.
    pub fn name(self) -> &'static str {
        match self {
            Stage::GatherState => "gather_state",
            Stage::ApplyFields => "apply_fields",
            Stage::ApplyLoads => "apply_loads",
            Stage::SolveConstraints => "solve_constraints",
            Stage::Integrate => "integrate",
            Stage::Broadphase => "broadphase",
            Stage::Impacts => "impacts",
            Stage::Narrowphase => "narrowphase",
            Stage::ContactSolve => "contact_solve",
            Stage::ProjectPenetration => "project_penetration",
            Stage::CorrectDrift => "correct_drift",
            Stage::ScatterState => "scatter_state",
            Stage::CheckDivergence => "check_divergence",
            Stage::StepPopulation => "step_population",
        }
    }
}

/// Wall time spent in each [`Stage`] since the world was made.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct StageTimes([Duration; Stage::ALL.len()]);

impl StageTimes {
    /// Time spent in one stage.
    pub fn get(&self, stage: Stage) -> Duration {
        self.0[stage as usize]
    }

    /// Adds time to one stage.
    pub fn add(&mut self, stage: Stage, d: Duration) {
        self.0[stage as usize] += d;
    }

    /// Runs `f`, charging its wall time to `stage`.
    pub fn timed<T>(&mut self, stage: Stage, f: impl FnOnce() -> T) -> T {
        let started = Instant::now();
        let out = f();
        self.add(stage, started.elapsed());
        out
    }

    /// (stage name, time) in step order.
    pub fn as_list(&self) -> Vec<(&'static str, Duration)> {
        Stage::ALL.iter().map(|&s| (s.name(), self.get(s))).collect()
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
    /// The constraint solver refused its input.
    #[error("step {step} (t = {time}): constraint solver: {source}")]
    Constraints {
        /// Step that failed.
        step: u64,
        /// Time at the start of that step.
        time: f64,
        /// The solver's error.
        source: SolverError,
    },
    /// The GPU field kernel failed (device lost, out of memory …).
    #[error("step {step} (t = {time}): GPU fields: {message}")]
    Gpu {
        /// Step that failed.
        step: u64,
        /// Time at the start of that step.
        time: f64,
        /// The GPU error.
        message: String,
    },
    /// A contact produced a non-finite number (the bodies are named).
    #[error("step {step} (t = {time}): {source}")]
    Contact {
        /// Step that failed.
        step: u64,
        /// Time at the start of that step.
        time: f64,
        /// The pair and the reason.
        source: ContactError,
    },
    /// The population tier failed (a non-finite ball, the GPU backend).
    #[error("step {step} (t = {time}): population: {source}")]
    Population {
        /// Step that failed.
        step: u64,
        /// Time at the end of that step.
        time: f64,
        /// What went wrong.
        source: crate::population::PopulationError,
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
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub struct DivergenceLimits {
    /// Largest kinetic energy a single body may reach (J); `None`: derived at
    /// the first step as 1e12 × (1 J + the initial kinetic + |potential| energy).
    pub max_body_energy: Option<f64>,
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
    /// Joints, rolling and curve contacts, motors.
    pub constraints: ConstraintSet,
    /// Drift correction of the constraints.
    pub stabilization: Stabilization,
    /// Contacts and impacts (off unless the scene turns them on).
    pub contacts: ContactSet,
    /// The population tier (balls), stepped after the bodies.
    pub population: Option<Population>,
    /// The population's GPU backend, when it runs there.
    population_gpu: Option<std::sync::Arc<std::sync::Mutex<GpuPopulation>>>,
    system: ConstraintSystem,
    /// Field forces from the GPU kernel instead of `field.rs`, when set.
    gpu_fields: Option<std::sync::Arc<std::sync::Mutex<GpuFieldBackend>>>,
    max_constraint_error: f64,
    prepared: bool,
    time: f64,
    /// (step, time, dt) from which `time` is counted: see `step`.
    time_origin: (u64, f64, f64),
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
            constraints: ConstraintSet::new(),
            stabilization: Stabilization::default(),
            contacts: ContactSet::default(),
            population: None,
            population_gpu: None,
            system: ConstraintSystem::default(),
            gpu_fields: None,
            max_constraint_error: 0.0,
            prepared: false,
            time: 0.0,
            time_origin: (0, 0.0, 1e-3),
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

    /// Adds a constraint after checking it against the bodies and surfaces.
    pub fn add_constraint(&mut self, c: Constraint) -> Result<ConstraintHandle, String> {
        c.validate(self.bodies.as_slice(), &self.surfaces)?;
        self.integrator.reset();
        self.prepared = false;
        Ok(self.constraints.insert(c))
    }

    /// The body behind a handle.
    pub fn body(&self, h: BodyHandle) -> &Body {
        &self.bodies[h]
    }

    /// Evaluates the force fields on the GPU (f32) from now on, or on the CPU
    /// again with `None`. Clones of the world share the device.
    pub fn set_gpu_fields(&mut self, backend: Option<GpuFieldBackend>) {
        self.gpu_fields = backend.map(|b| std::sync::Arc::new(std::sync::Mutex::new(b)));
    }

    /// `"gpu"` when the fields run on the GPU, else `"cpu"`.
    pub fn field_backend(&self) -> &'static str {
        if self.gpu_fields.is_some() { "gpu" } else { "cpu" }
    }

    /// Selects the integration method (restarts multistep history; keeps
    /// the tolerance).
    pub fn set_integrator(&mut self, method: Method) {
        let tolerance = self.integrator.tolerance;
        self.integrator = Integrator::new(method);
        self.integrator.tolerance = tolerance;
    }

    /// Makes the implicit integrators' Newton iteration use the dense
    /// finite-difference Jacobian instead of the sparse factorisation (the
    /// reference for tests and comparisons; see `integrator::sparse_newton`).
    pub fn set_dense_newton(&mut self, dense: bool) {
        self.integrator.set_dense_newton(dense);
    }

    /// Sets the relative error tolerance of the adaptive integrators
    /// (`dopri5`, `sdirk3`: steps ≤ `dt` chosen to meet it; infinite: fixed
    /// steps of `dt`).
    pub fn set_tolerance(&mut self, tolerance: f64) {
        self.integrator.tolerance = tolerance;
    }

    /// The integrators' tolerance.
    pub fn tolerance(&self) -> f64 {
        self.integrator.tolerance
    }

    /// Integrator counters: accepted and rejected (sub)steps, Newton
    /// iterations, Jacobians and acceleration evaluations.
    pub fn integrator_stats(&self) -> IntegratorStats {
        self.integrator.stats()
    }

    /// The DOPRI5 continuous extension of the last substep, when that is the
    /// integrator (for event location, e.g. a time of impact).
    pub fn dense_output(&self) -> Option<&DenseOutput> {
        self.integrator.dense_output()
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
        // Folded from +0.0: `Sum` of an empty iterator of floats is −0.0,
        // which a scene without bodies (a population alone) printed as "-0".
        let kinetic = bodies.iter().map(Body::kinetic_energy).fold(0.0, |s, e| s + e);
        let gravity =
            bodies.iter().filter(|b| !b.fixed).map(|b| -b.mass * self.gravity.dot(b.position)).fold(0.0, |s, e| s + e);
        let springs = self.loads.iter().map(|l| l.potential_energy(bodies)).fold(0.0, |s, e| s + e);
        let potential = gravity + springs;
        Energy { kinetic, potential, total: kinetic + potential, work: self.state.work }
    }

    /// Makes the initial state consistent with the constraints (positions and
    /// velocities projected as after a step), once, before the first step; also
    /// fixes the divergence bound from the initial energy if none was given.
    /// Scene files give positions to a few digits; this settles them so that
    /// the first step does not start with a jump in energy.
    pub fn prepare(&mut self) -> Result<(), SimulationError> {
        if self.prepared {
            return Ok(());
        }
        self.prepared = true;
        if self.limits.max_body_energy.is_none() {
            let e = self.energy();
            self.limits.max_body_energy = Some(1e12 * (1.0 + e.kinetic + e.potential.abs()));
        }
        if self.constraints.is_empty() || !self.stabilization.projection {
            return Ok(());
        }
        gather_state(self.bodies.as_slice(), &mut self.state);
        let result = self.correct_drift();
        scatter_state(&self.state, self.bodies.as_mut_slice());
        self.max_constraint_error = 0.0;
        result
    }

    /// Advances the world by one step of `dt`.
    pub fn step(&mut self) -> Result<(), SimulationError> {
        self.prepare()?;
        self.times.timed(Stage::GatherState, || gather_state(self.bodies.as_slice(), &mut self.state));
        let soft = self.contacts.soft_step_settings();
        let start = (self.contacts.enabled() && soft.is_none()).then(|| self.state.clone());
        if let Some(settings) = soft {
            let result = self.soft_step(settings);
            if result.is_err() {
                self.times.timed(Stage::ScatterState, || scatter_state(&self.state, self.bodies.as_mut_slice()));
            }
            result?;
        } else {
            self.integrate_span(self.time, self.dt)?;
        }
        if let Some(start) = start {
            let result = self.contact_stages(start);
            if result.is_err() {
                self.times.timed(Stage::ScatterState, || scatter_state(&self.state, self.bodies.as_mut_slice()));
            }
            result?;
        }
        self.steps += 1;
        // t = t₀ + (n − n₀)·dt, not a running sum of dt: after 8000 steps of
        // 0.0005 the sum reads 4.000000000000503. (t₀, n₀) move only when dt
        // is changed between steps.
        if self.dt != self.time_origin.2 {
            self.time_origin = (self.steps - 1, self.time, self.dt);
        }
        let (n0, t0, dt) = self.time_origin;
        self.time = t0 + (self.steps - n0) as f64 * dt;
        let drift = self.correct_drift();
        // Scatter even when the projection failed: the run stops with the
        // state that failed, which the trace then shows.
        self.times.timed(Stage::ScatterState, || scatter_state(&self.state, self.bodies.as_mut_slice()));
        drift?;
        let started = Instant::now();
        let result = self.check_divergence();
        self.times.add(Stage::CheckDivergence, started.elapsed());
        result?;
        let started = Instant::now();
        let result = self.step_population();
        self.times.add(Stage::StepPopulation, started.elapsed());
        result
    }

    /// The population stage: bodies become obstacles at their new pose, then
    /// one population step on the CPU twin or the GPU.
    fn step_population(&mut self) -> Result<(), SimulationError> {
        let Some(pop) = self.population.as_mut() else {
            return Ok(());
        };
        if !self.bodies.is_empty() {
            pop.set_body_obstacles(self.bodies.as_slice());
        }
        let dt = self.dt as f32;
        let result = match &self.population_gpu {
            None => crate::population::cpu::step(pop, dt),
            Some(gpu) => match gpu.lock() {
                Ok(mut gpu) => gpu.step(pop, dt),
                Err(_) => Err(crate::population::PopulationError::Gpu("the GPU backend was poisoned".into())),
            },
        };
        result.map_err(|source| SimulationError::Population { step: self.steps, time: self.time, source })
    }

    /// Steps the population on the GPU from now on (`None`: on the CPU twin
    /// again, after reading the balls back). Clones of the world share it.
    pub fn set_population_gpu(&mut self, gpu: Option<GpuPopulation>) -> Result<(), SimulationError> {
        self.sync_population()?;
        self.population_gpu = gpu.map(|g| std::sync::Arc::new(std::sync::Mutex::new(g)));
        Ok(())
    }

    /// `"gpu"` when the population steps on the GPU, else `"cpu"`.
    pub fn population_backend(&self) -> &'static str {
        if self.population_gpu.is_some() { "gpu" } else { "cpu" }
    }

    /// Waits until the GPU has finished the population steps submitted so
    /// far and counts the wait in the `step_population` stage: the GPU runs
    /// behind the host, so its steps' time is known only once the last one
    /// completed. Nothing to do on the CPU twin. Returns the wait.
    pub fn finish_population_steps(&mut self) -> Result<Duration, SimulationError> {
        let Some(gpu) = &self.population_gpu else {
            return Ok(Duration::ZERO);
        };
        let started = Instant::now();
        let result = match gpu.lock() {
            Ok(gpu) => gpu.wait(),
            Err(_) => Err(crate::population::PopulationError::Gpu("the GPU backend was poisoned".into())),
        };
        let waited = started.elapsed();
        self.times.add(Stage::StepPopulation, waited);
        result.map(|()| waited).map_err(|source| SimulationError::Population {
            step: self.steps,
            time: self.time,
            source,
        })
    }

    /// Brings the GPU's balls into [`World::population`] (a readback; nothing
    /// to do on the CPU twin). Call before reading the balls.
    pub fn sync_population(&mut self) -> Result<(), SimulationError> {
        let (Some(pop), Some(gpu)) = (self.population.as_mut(), &self.population_gpu) else {
            return Ok(());
        };
        let result = match gpu.lock() {
            Ok(mut gpu) => gpu.read_back(pop),
            Err(_) => Err(crate::population::PopulationError::Gpu("the GPU backend was poisoned".into())),
        };
        result.map_err(|source| SimulationError::Population { step: self.steps, time: self.time, source })
    }

    fn force_model(&mut self) -> (ForceModel<'_>, &mut Integrator, &mut State) {
        (
            ForceModel {
                bodies: self.bodies.as_slice(),
                loads: &self.loads,
                fields: &self.fields,
                gravity: self.gravity,
                constraints: &self.constraints,
                surfaces: &self.surfaces,
                system: &mut self.system,
                baumgarte: self.stabilization.baumgarte,
                projection: self.stabilization.projection.then_some(self.stabilization),
                solver_error: None,
                gpu_fields: self.gpu_fields.as_deref(),
                gpu_error: None,
                field_forces: Vec::new(),
                times: &mut self.times,
            },
            &mut self.integrator,
            &mut self.state,
        )
    }

    /// The contact stages of one step (see `src/contact/mod.rs`): `start` is
    /// the state at the beginning of the step, `self.state` its end.
    fn contact_stages(&mut self, start: State) -> Result<(), SimulationError> {
        let (t0, h, step) = (self.time, self.dt, self.steps + 1);
        let fail = |source| SimulationError::Contact { step, time: t0, source };
        let bodies = self.bodies.as_slice();
        let rest = self.contacts.resting_speed(self.gravity, h);
        self.times.timed(Stage::Broadphase, || {
            self.contacts.broadphase(bodies, &self.surfaces, &self.constraints, &start.q, &self.state.q)
        });
        // Impacts in time order: advance the integrator to the earliest root,
        // apply the impulses there, integrate the rest of the step.
        let (mut s0, mut t, mut left) = (start, t0, h);
        for _ in 0..self.contacts.settings.max_impact_events {
            let started = Instant::now();
            let span = crate::contact::toi::Span { start: &s0, end: &self.state, h: left };
            let tau = self.contacts.earliest_impact(self.bodies.as_slice(), &self.surfaces, &span, rest);
            self.times.add(Stage::Impacts, started.elapsed());
            let Some((mut tau, pair)) = tau else { break };
            self.state = s0.clone();
            self.integrate_span(t, tau)?;
            // The root was found on the dense output; Newton on the
            // integrator's own sub-step (exact already when the dense
            // output is, e.g. RK4 in free flight).
            let tol = 1e-12 * self.bodies.as_slice()[pair.a].shape.bounding_radius();
            for _ in 0..4 {
                let g = self.contacts.gap_and_rate(self.bodies.as_slice(), &self.surfaces, pair, &self.state);
                let Some((gap, rate)) = g else { break };
                if gap.abs() <= tol || rate >= 0.0 {
                    break;
                }
                let next = (tau - gap / rate).clamp(0.0, left);
                if next == tau {
                    break;
                }
                tau = next;
                self.state = s0.clone();
                self.integrate_span(t, tau)?;
            }
            let started = Instant::now();
            let hit =
                self.contacts.resolve_impacts(self.bodies.as_slice(), &self.surfaces, &mut self.state, t + tau, rest);
            self.times.add(Stage::Impacts, started.elapsed());
            hit.map_err(fail)?;
            self.integrator.reset();
            s0 = self.state.clone();
            (t, left) = (t + tau, left - tau);
            self.integrate_span(t, left)?;
            // The impulses changed the motion the pairs were swept along:
            // sweep again over the rest of the step, or a deflected body
            // meets one not listed (no time of impact, no contact).
            let bodies = self.bodies.as_slice();
            self.times.timed(Stage::Broadphase, || {
                self.contacts.broadphase(bodies, &self.surfaces, &self.constraints, &s0.q, &self.state.q)
            });
        }
        // The contact forces act over what is left of the step after the last impact.
        let (q_start, span) = (s0.q, left);
        let bodies = self.bodies.as_slice();
        self.times
            .timed(Stage::Narrowphase, || self.contacts.narrowphase(bodies, &self.surfaces, &self.state.q))
            .map_err(fail)?;
        let started = Instant::now();
        // Impacts found at the end of the step (touching, still approaching
        // fast): instantaneous, so not part of the position update below.
        self.contacts.impacts_on_contacts(bodies, &mut self.state, t0 + h, rest);
        let v_before = self.state.v.clone();
        let scene = Scene { bodies, constraints: &self.constraints, surfaces: &self.surfaces };
        self.contacts.position_weight = crate::contact::resting::position_weight(self.integrator.method());
        let passes = if self.constraints.is_empty() { 1 } else { self.contacts.settings.joint_passes.max(1) };
        let mut result = Ok(());
        for _ in 0..passes {
            if let Err(e) = self.contacts.solve(bodies, &mut self.state, &v_before, h, t0 + h, rest) {
                result = Err(fail(e));
                break;
            }
            if self.constraints.is_empty() {
                break;
            }
            if let Err(source) = self.system.project_velocities(scene, t0 + h, &self.state.q, &mut self.state.v) {
                result = Err(SimulationError::Constraints { step, time: t0, source });
                break;
            }
        }
        self.contacts.finish(bodies, &mut self.state.q, &self.state.v, &v_before, h);
        self.times.add(Stage::ContactSolve, started.elapsed());
        self.times.timed(Stage::ProjectPenetration, || {
            self.contacts.project_penetration(bodies, &self.surfaces, &self.constraints, &mut self.state.q)
        });
        if !self.contacts.contacts().is_empty() {
            self.state.work += self.contacts.work(&q_start, &self.state.q, span);
            self.integrator.reset();
        }
        result
    }

    /// The soft-step contact path (`src/contact/soft_step/`) in place of
    /// the integrator and the exact contact stages: the forces once at the
    /// start of the step, the broadphase over the motion they predict, the
    /// narrowphase and manifolds (`narrowphase`), then the sub-steps —
    /// velocities (`integrate`), warm start and soft solve (`contact_solve`),
    /// positions (`integrate`), relax (`contact_solve`) — and the restitution
    /// pass. The contacts' work is added to the non-conservative work: in
    /// the warm start and solve the impulses' work over each sub-step's
    /// velocity jump ([`contact_impulse_work`]), in the relax and
    /// restitution passes the kinetic energy they change.
    fn soft_step(&mut self, settings: SoftStepSettings) -> Result<(), SimulationError> {
        let (t0, dt, step) = (self.time, self.dt, self.steps + 1);
        let fail = |source| SimulationError::Contact { step, time: t0, source };
        if let Some(c) = self.constraints.iter().next() {
            return Err(fail(ContactError {
                body_a: self.bodies.as_slice()[c.body_a.0].name.clone(),
                partner: "its constraint".into(),
                reason: "the soft-step contact solver does not handle constraints (joints); use solver Exact".into(),
            }));
        }
        let (mut acc, mut q_end) = self.contacts.soft_take_buffers();
        acc.resize(self.state.q.len(), 0.0);
        let (mut model, _, state) = self.force_model();
        let power = model.acceleration(t0, &state.q, &state.v, &mut acc);
        let gpu_error = model.gpu_error.take();
        if let Some(message) = gpu_error {
            self.contacts.soft_put_buffers(acc, q_end);
            return Err(SimulationError::Gpu { step, time: t0, message });
        }
        // Where the forces alone would take the bodies: the swept boxes.
        q_end.clear();
        q_end.extend(self.state.q.iter().zip(&self.state.v).zip(&acc).map(|((q, v), a)| q + dt * (v + dt * a)));
        let bodies = self.bodies.as_slice();
        let rest = self.contacts.resting_speed(self.gravity, dt);
        self.times.timed(Stage::Broadphase, || {
            self.contacts.broadphase(bodies, &self.surfaces, &self.constraints, &self.state.q, &q_end)
        });
        let prepared = self.times.timed(Stage::Narrowphase, || {
            self.contacts.soft_prepare(bodies, &self.surfaces, &self.state.q, &self.state.v, dt, rest)
        });
        if let Err(e) = prepared {
            self.contacts.soft_put_buffers(acc, q_end);
            return Err(fail(e));
        }
        let kinetic = |v: &[f64]| kinetic_energy(bodies, v);
        // The predicted positions are spent (broadphase): the buffer holds
        // each sub-step's velocities before its kick.
        let (state, contacts, times) = (&mut self.state, &mut self.contacts, &mut self.times);
        let started = Instant::now();
        let substeps = contacts.soft_substeps(bodies, &mut state.q, &mut state.v, &acc, &mut q_end, &settings);
        times.add(Stage::Integrate, substeps.integrate);
        times.add(Stage::ContactSolve, started.elapsed().saturating_sub(substeps.integrate));
        let mut contact_work = substeps.contact_work;
        let before = substeps.kinetic_end;
        let (restituted, finished) = times.timed(Stage::ContactSolve, || {
            let restituted = contacts.soft_restitution(&mut state.v, rest);
            (restituted, contacts.soft_finish(bodies))
        });
        // A skipped restitution pass changes no velocity: its work is 0.
        if restituted {
            contact_work += kinetic(&state.v) - before;
        }
        state.work += power * dt + contact_work;
        contacts.soft_put_buffers(acc, q_end);
        self.integrator.reset();
        finished.map_err(fail)
    }

    fn integrate_span(&mut self, t: f64, dt: f64) -> Result<(), SimulationError> {
        let started = Instant::now();
        let force_time = |t: &StageTimes| {
            t.get(Stage::ApplyFields)
                + t.get(Stage::ApplyLoads)
                + t.get(Stage::SolveConstraints)
                + t.get(Stage::CorrectDrift)
        };
        let before = force_time(&self.times);
        let step = self.steps + 1;
        let (mut model, integrator, state) = self.force_model();
        let result = integrator.step(&mut model, t, dt, state);
        let notice = integrator.take_notice();
        let solver_error = model.solver_error.take();
        let gpu_error = model.gpu_error.take();
        let forces = force_time(&self.times) - before;
        self.times.add(Stage::Integrate, started.elapsed().saturating_sub(forces));
        if let Some(notice) = notice {
            self.system.warnings.insert(notice);
        }
        if let Some(message) = gpu_error {
            return Err(SimulationError::Gpu { step, time: t, message });
        }
        if let Some(source) = solver_error {
            return Err(SimulationError::Constraints { step, time: t, source });
        }
        result.map_err(|source| SimulationError::Integrator { step, time: t, source })
    }

    /// Projects the state onto the constraints (positions, then velocities)
    /// when projection is on, and records the constraint error.
    fn correct_drift(&mut self) -> Result<(), SimulationError> {
        if self.constraints.is_empty() {
            return Ok(());
        }
        let started = Instant::now();
        let scene = Scene { bodies: self.bodies.as_slice(), constraints: &self.constraints, surfaces: &self.surfaces };
        let (t, settings) = (self.time, self.stabilization);
        let result = if settings.projection {
            self.system.project_state(scene, t, &mut self.state.q, &mut self.state.v, &settings)
        } else {
            self.system.assemble(scene, t, &self.state.q, &self.state.v).map(|_| self.system.max_error())
        };
        self.times.add(Stage::CorrectDrift, started.elapsed());
        let err = result.map_err(|source| SimulationError::Constraints { step: self.steps, time: t, source })?;
        self.max_constraint_error = self.max_constraint_error.max(err);
        Ok(())
    }

    /// Largest |C| over the position rows at the current state.
    pub fn constraint_error(&mut self) -> f64 {
        if self.constraints.is_empty() {
            return 0.0;
        }
        gather_state(self.bodies.as_slice(), &mut self.state);
        let scene = Scene { bodies: self.bodies.as_slice(), constraints: &self.constraints, surfaces: &self.surfaces };
        match self.system.assemble(scene, self.time, &self.state.q, &self.state.v) {
            Ok(()) => self.system.max_error(),
            Err(_) => f64::NAN,
        }
    }

    /// Largest constraint error seen after any step so far.
    pub fn max_constraint_error(&self) -> f64 {
        self.max_constraint_error
    }

    /// Warnings of the constraint solver (redundant or singular constraints),
    /// each once.
    pub fn warnings(&self) -> impl Iterator<Item = &String> {
        self.system.warnings.iter()
    }

    /// Accelerations (3 per body) at the current state, constraint forces
    /// included; the multipliers are kept for [`World::reactions`].
    pub fn accelerations(&mut self) -> Result<Vec<f64>, SolverError> {
        gather_state(self.bodies.as_slice(), &mut self.state);
        let t = self.time;
        let (mut model, _, state) = self.force_model();
        let mut a = vec![0.0; state.q.len()];
        model.acceleration(t, &state.q, &state.v, &mut a);
        match model.solver_error {
            Some(e) => Err(e),
            None => Ok(a),
        }
    }

    /// The reaction of every constraint on its first body at the current
    /// state (forces and λ recomputed there).
    pub fn reactions(&mut self) -> Result<Vec<Reaction>, SolverError> {
        if self.constraints.is_empty() {
            return Ok(Vec::new());
        }
        self.accelerations()?;
        let scene = Scene { bodies: self.bodies.as_slice(), constraints: &self.constraints, surfaces: &self.surfaces };
        Ok(self.system.reactions(scene))
    }

    /// Impulsive velocity correction (seed 003 §IV-D): constraint `c` takes
    /// hold instantly (a foot caught by the ground, a hook) and the velocities
    /// jump to v ← v − factor·M⁻¹Jᵀ A⁻¹ (J v + bias) over all constraints,
    /// `c` included: factor 1 is absorbing (the new constraint's velocity
    /// becomes zero), 2 elastic (it reverses). `c` stays in the world when
    /// `keep` is true. Returns the kinetic energy before and after.
    pub fn impulsive_constraint(&mut self, c: Constraint, factor: f64, keep: bool) -> Result<(f64, f64), String> {
        if !(1.0..=2.0).contains(&factor) {
            return Err(format!("impulse factor must be in [1, 2] (1 absorbing … 2 elastic), got {factor}"));
        }
        let handle = self.add_constraint(c)?;
        let before = self.energy().kinetic;
        gather_state(self.bodies.as_slice(), &mut self.state);
        let scene = Scene { bodies: self.bodies.as_slice(), constraints: &self.constraints, surfaces: &self.surfaces };
        let result = self
            .system
            .assemble(scene, self.time, &self.state.q, &self.state.v)
            .and_then(|_| self.system.velocity_correction(&mut self.state.v, factor));
        if !keep {
            self.constraints.remove(handle);
        }
        result.map_err(|e| e.to_string())?;
        scatter_state(&self.state, self.bodies.as_mut_slice());
        self.integrator.reset();
        Ok((before, self.energy().kinetic))
    }

    /// A view of the constraint machinery for the inverse problems. Call
    /// [`World::sync_state`] first: the flat state is used as it is, so that
    /// repeated calls can move it step by step.
    pub(crate) fn constraint_parts(&mut self) -> (Scene<'_>, &mut ConstraintSystem, &mut State, f64) {
        (
            Scene { bodies: self.bodies.as_slice(), constraints: &self.constraints, surfaces: &self.surfaces },
            &mut self.system,
            &mut self.state,
            self.time,
        )
    }

    /// Copies the bodies' states into the flat state.
    pub(crate) fn sync_state(&mut self) {
        gather_state(self.bodies.as_slice(), &mut self.state);
    }

    /// Writes the flat state back into the bodies (after the inverse problems
    /// moved it) and forgets the multistep history.
    pub(crate) fn commit_state(&mut self) {
        scatter_state(&self.state, self.bodies.as_mut_slice());
        self.integrator.reset();
    }

    /// The state as flat vectors (x, y, φ per body; vx, vy, ω per body).
    pub fn state_vectors(&mut self) -> (&[f64], &[f64]) {
        gather_state(self.bodies.as_slice(), &mut self.state);
        (&self.state.q, &self.state.v)
    }

    /// Overwrites the bodies' states from flat vectors (as `state_vectors`).
    pub fn set_state_vectors(&mut self, q: &[f64], v: &[f64]) {
        self.state.q.clear();
        self.state.q.extend_from_slice(q);
        self.state.v.clear();
        self.state.v.extend_from_slice(v);
        scatter_state(&self.state, self.bodies.as_mut_slice());
        self.integrator.reset();
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
            Some((b, reason)) => {
                Err(SimulationError::Diverged { step: self.steps, time: self.time, body: b.name.clone(), reason })
            }
        }
    }
}

fn gather_state(bodies: &[Body], state: &mut State) {
    state.q.resize(3 * bodies.len(), 0.0);
    state.v.resize(3 * bodies.len(), 0.0);
    for (i, b) in bodies.iter().enumerate() {
        state.q[3 * i..3 * i + 3].copy_from_slice(&[b.position.x, b.position.y, b.angle]);
        state.v[3 * i..3 * i + 3].copy_from_slice(&[b.velocity.x, b.velocity.y, b.angular_velocity]);
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

/// The forces of a world at one integrator stage: gravity, fields, loads and
/// the constraint forces that keep the constraints.
struct ForceModel<'w> {
    bodies: &'w [Body],
    loads: &'w [Load],
    fields: &'w [Field],
    gravity: DVec2,
    constraints: &'w ConstraintSet,
    surfaces: &'w [Surface],
    system: &'w mut ConstraintSystem,
    baumgarte: Option<f64>,
    /// The projection's settings when it is on: the adaptive integrators
    /// project between their substeps too ([`Dynamics::project`]).
    projection: Option<Stabilization>,
    /// The first solver failure of this step (an evaluation cannot return it).
    solver_error: Option<SolverError>,
    /// The GPU field kernel, when the fields run there.
    gpu_fields: Option<&'w std::sync::Mutex<GpuFieldBackend>>,
    /// The first GPU failure of this step.
    gpu_error: Option<String>,
    /// Field forces from the GPU, one per body.
    field_forces: Vec<DVec2>,
    times: &'w mut StageTimes,
}

impl ForceModel<'_> {
    /// Gravity and fields: writes the force on every body into `f` (3 per
    /// body) and returns the power of the field forces (gravity has a
    /// potential and is not counted as work).
    fn apply_fields(&mut self, q: &[f64], v: &[f64], f: &mut [f64]) -> f64 {
        if let Some(gpu) = self.gpu_fields
            && !self.fields.is_empty()
        {
            return self.apply_fields_gpu(gpu, q, v, f);
        }
        if self.fields.is_empty() {
            return self.apply_gravity(f);
        }
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
        // The power is summed per fixed block of bodies, then the block sums
        // in order: the same additions in the same order whatever the number
        // of threads (a rayon `sum` splits where its scheduler likes, and the
        // last digits of the work then depended on RAYON_NUM_THREADS).
        let per_block = |(k, block): (usize, &mut [f64])| -> f64 {
            block.chunks_mut(3).enumerate().map(|(j, out)| per_body((k * POWER_BLOCK + j, out))).sum()
        };
        if self.bodies.len() >= PARALLEL_THRESHOLD {
            let blocks: Vec<f64> = f.par_chunks_mut(3 * POWER_BLOCK).enumerate().map(per_block).collect();
            blocks.iter().sum()
        } else {
            f.chunks_mut(3 * POWER_BLOCK).enumerate().map(per_block).sum()
        }
    }

    /// Gravity alone (no field in the scene): a constant acceleration, so
    /// the force is m·g per body — one serial pass with no field dispatch, no
    /// bounding radius, no rayon task and no allocation (a pass over 5,050
    /// bodies is a few µs: a rayon spawn cost more than the work). Bit for bit
    /// what the field loop writes: its field sum is exactly `DVec2::ZERO`
    /// (an empty sum), kept here as the same addition `ZERO + m·g` (which
    /// turns a −0 component into +0 as the loop did). Gravity has a
    /// potential: the power returned is zero.
    fn apply_gravity(&self, f: &mut [f64]) -> f64 {
        for (b, out) in self.bodies.iter().zip(f.chunks_mut(3)) {
            let total = if b.fixed { DVec2::ZERO } else { DVec2::ZERO + self.gravity * b.mass };
            // element by element: a 3-element `copy_from_slice` is a libc call
            out[0] = total.x;
            out[1] = total.y;
            out[2] = 0.0;
        }
        0.0
    }

    /// Gravity on the CPU, fields from the GPU kernel (the twin of the CPU
    /// loop above); a GPU failure is kept for the step to report.
    fn apply_fields_gpu(
        &mut self,
        gpu: &std::sync::Mutex<GpuFieldBackend>,
        q: &[f64],
        v: &[f64],
        f: &mut [f64],
    ) -> f64 {
        let mut forces = std::mem::take(&mut self.field_forces);
        let result = match gpu.lock() {
            Ok(mut backend) => backend.forces(self.fields, self.bodies, q, v, &mut forces).map_err(|e| e.to_string()),
            Err(_) => Err("the GPU field backend was poisoned by an earlier panic".to_string()),
        };
        if let Err(e) = result {
            self.gpu_error.get_or_insert(e);
            forces.clear();
        }
        forces.resize(self.bodies.len(), DVec2::ZERO);
        let mut power = 0.0;
        for (i, (b, out)) in self.bodies.iter().zip(f.chunks_mut(3)).enumerate() {
            if b.fixed {
                out.copy_from_slice(&[0.0; 3]);
                continue;
            }
            let total = forces[i] + self.gravity * b.mass;
            out.copy_from_slice(&[total.x, total.y, 0.0]);
            power += forces[i].dot(DVec2::new(v[3 * i], v[3 * i + 1]));
        }
        self.field_forces = forces;
        power
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

impl ForceModel<'_> {
    /// Adds the constraint forces Jᵀλ to `f`; returns their power.
    fn solve_constraints(&mut self, t: f64, q: &[f64], v: &[f64], f: &mut [f64]) -> f64 {
        if self.constraints.is_empty() {
            return 0.0;
        }
        let scene = Scene { bodies: self.bodies, constraints: self.constraints, surfaces: self.surfaces };
        let result =
            self.system.assemble(scene, t, q, v).and_then(|_| self.system.apply_forces(scene, v, f, self.baumgarte));
        match result {
            Ok(p) => p,
            Err(e) => {
                self.solver_error.get_or_insert(e);
                0.0
            }
        }
    }
}

impl Dynamics for ForceModel<'_> {
    fn acceleration(&mut self, t: f64, q: &[f64], v: &[f64], a: &mut [f64]) -> f64 {
        let started = Instant::now();
        let mut power = self.apply_fields(q, v, a);
        let fields_done = Instant::now();
        self.times.add(Stage::ApplyFields, fields_done - started);
        power += self.apply_loads(t, q, v, a);
        let loads_done = Instant::now();
        self.times.add(Stage::ApplyLoads, loads_done - fields_done);
        power += self.solve_constraints(t, q, v, a);
        let constraints_done = Instant::now();
        self.times.add(Stage::SolveConstraints, constraints_done - loads_done);
        // a = M⁻¹ F (fixed bodies: zero inverse mass, zero acceleration);
        // with constraints, the inverse masses their assembly just refreshed
        // for these bodies (the same values: no division per body and stage)
        let cached = self.system.inverse_masses();
        if !self.constraints.is_empty() && cached.len() == self.bodies.len() {
            for (inv, ai) in cached.iter().zip(a.chunks_mut(3)) {
                ai[0] *= inv[0];
                ai[1] *= inv[1];
                ai[2] *= inv[2];
            }
        } else {
            for (b, ai) in self.bodies.iter().zip(a.chunks_mut(3)) {
                let inv = b.inverse_mass();
                ai[0] *= inv[0];
                ai[1] *= inv[1];
                ai[2] *= inv[2];
            }
        }
        self.times.add(Stage::ApplyLoads, constraints_done.elapsed());
        power
    }

    fn linear_model(&mut self, t: f64, q: &[f64], v: &[f64], model: &mut LinearModel) -> bool {
        self.linearise(t, q, v, model)
    }

    fn project(&mut self, t: f64, q: &mut [f64], v: &mut [f64]) -> bool {
        let Some(settings) = self.projection else { return false };
        if self.constraints.is_empty() || self.solver_error.is_some() {
            return false;
        }
        let started = Instant::now();
        let scene = Scene { bodies: self.bodies, constraints: self.constraints, surfaces: self.surfaces };
        // as `World::correct_drift`
        let result = self.system.project_state(scene, t, q, v, &settings);
        self.times.add(Stage::CorrectDrift, started.elapsed());
        match result {
            Ok(_) => true,
            Err(e) => {
                self.solver_error.get_or_insert(e);
                false
            }
        }
    }
}
/// The work of the soft step's contact impulses in one sub-step's warm
/// start and solve: the sub-step changes each body's velocity from `v_start`
/// to `v_end` by one combined impulse, the forces' kick m·h·a and the
/// contacts' P = m·(v_end − (v_start + h·a)), and a velocity jump's impulse
/// J does work J·(v_start + v_end)/2; the contacts' share is
/// P·(v_start + v_end)/2 (per coordinate, m the mass or the inertia).
///
/// Why not the kinetic energy the contact passes change (their own jump
/// from the kicked velocity, as the relax and restitution passes are
/// counted)? A box resting on the floor is kicked to −g·h and stopped again
/// each sub-step without moving: the kick's ½ m g² h² is the integrator's
/// splitting, not energy, yet the contacts' jump counted it as work taken,
/// and the balance of a resting stack grew by ½ m g² h per second (1.7 J
/// of error against 2.3 J of contact work on `box_stack` after 100 steps).
/// Here a resting body's contact does no work, a sliding one's friction
/// does its closed form, and an impact's the kinetic energy it removes to
/// O(g·h/v) (the kick's share of the jump).
#[inline(never)]
pub(crate) fn contact_impulse_work(
    bodies: &[Body],
    v_start: &[f64],
    acceleration: &[f64],
    h: f64,
    v_end: &[f64],
) -> f64 {
    let mut work = 0.0;
    for (((b, v0), a), v1) in bodies.iter().zip(v_start.chunks(3)).zip(acceleration.chunks(3)).zip(v_end.chunks(3)) {
        if b.fixed {
            continue;
        }
        for k in 0..3 {
            let inertia = if k < 2 { b.mass } else { b.inertia };
            let kicked = v0[k] + h * a[k];
            work += inertia * (v1[k] - kicked) * 0.5 * (v0[k] + v1[k]);
        }
    }
    work
}

/// The kinetic energy of the moving bodies at velocities `v` (3 per body).
/// A function of its own, not inlined into the step: inlined, the sum was
/// kept on the stack, a store and a reload on each body's dependent add.
#[inline(never)]
pub(crate) fn kinetic_energy(bodies: &[Body], v: &[f64]) -> f64 {
    bodies
        .iter()
        .zip(v.chunks(3))
        .filter(|(b, _)| !b.fixed)
        .map(|(b, v)| 0.5 * b.mass * (v[0] * v[0] + v[1] * v[1]) + 0.5 * b.inertia * v[2] * v[2])
        .sum()
}
