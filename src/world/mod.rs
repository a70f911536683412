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
//!
//! # Two tiers, one world
//!
//! One `World` owns both tiers and steps them as one stage list: the
//! mechanism tier (bodies, joints, contacts; f64) in stages 1–6, then the
//! population (balls; f32) in stage 7, every stage charged to its
//! [`Stage`] in [`World::stage_times`]. Where a stage runs on a device,
//! the world holds the device's backend behind a trait of the tier it
//! serves, and names no device API itself: the fields'
//! [`FieldEvaluator`] (the GPU kernel
//! [`crate::gpu::GpuFieldBackend`]) and the population's
//! [`PopulationBackend`]
//! ([`crate::population::gpu::GpuPopulation`]); without one, the CPU path
//! (`field.rs`, the population's CPU twin) runs. Clones of a world share
//! its backends.
//!
//! # Files
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | `World`, its step (the stage list above) and its queries |
//! | `stages.rs` | [`Stage`] and [`StageTimes`] |
//! | `error.rs` | [`SimulationError`] (the step, time and body, ball or pair at fault) and [`DivergenceLimits`] |
//! | `forces.rs` | the forces at an integrator stage: gravity, fields, loads, constraint forces |
//! | `linear_model.rs` | their linearisation for the implicit integrators' Newton iteration |
//! | `contacts.rs` | the exact contact stages and the soft step |
//! | `population_stage.rs` | the population stage and its backend |

use std::time::Instant;

use glam::DVec2;

use crate::body::{Body, BodyHandle, BodySet};
use crate::constraint::system::{ConstraintSystem, Reaction, Scene, Stabilization};
use crate::constraint::{Constraint, ConstraintHandle, ConstraintSet};
use crate::contact::ContactSet;
use crate::field::{Field, FieldEvaluator};
use crate::integrator::{DenseOutput, Dynamics, Integrator, IntegratorStats, Method, State};
use crate::load::Load;
use crate::population::{Population, PopulationBackend};
use crate::solver::SolverError;
use crate::surface::Surface;

mod contacts;
mod error;
mod forces;
mod linear_model;
mod population_stage;
mod stages;

pub use contacts::StartOverlap;
pub use error::{DivergenceLimits, SimulationError};
pub(crate) use linear_model::LinearisationScratch;
pub use stages::{Stage, StageTimes};

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
    /// The population's backend when it does not run on the CPU twin (the GPU).
    population_backend: Option<Shared<dyn PopulationBackend>>,
    system: ConstraintSystem,
    /// Field forces from this evaluator (the GPU kernel) instead of `field.rs`, when set.
    field_evaluator: Option<Shared<dyn FieldEvaluator>>,
    max_constraint_error: f64,
    /// (constraint set generation, bodies, surfaces) at the last check of
    /// every constraint ([`World::check_constraints`]).
    constraints_checked: Option<(u64, usize, usize)>,
    /// The number of bodies the integrator's history is of (None before the
    /// first step): a body inserted into `World::bodies` directly, past
    /// [`World::add_body`], restarts the history at the next step.
    history_bodies: Option<usize>,
    prepared: bool,
    time: f64,
    /// (step, time, dt) from which `time` is counted: see `step`.
    time_origin: (u64, f64, f64),
    steps: u64,
    integrator: Integrator,
    state: State,
    times: StageTimes,
}

/// A backend the world reaches through a lock, so that clones of the world
/// share it (one device, one set of buffers), with its name kept beside it
/// so that reporting where a stage runs takes no lock.
#[derive(Debug)]
struct Shared<T: ?Sized> {
    name: &'static str,
    inner: std::sync::Arc<std::sync::Mutex<Box<T>>>,
}

// (not derived: a derive would ask `T: Clone`, and the clone shares the backend)
impl<T: ?Sized> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Self { name: self.name, inner: self.inner.clone() }
    }
}

impl<T: ?Sized> Shared<T> {
    fn new(name: &'static str, backend: Box<T>) -> Self {
        Self { name, inner: std::sync::Arc::new(std::sync::Mutex::new(backend)) }
    }

    /// The backend, or `Err` when an earlier panic poisoned its lock.
    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Box<T>>, ()> {
        self.inner.lock().map_err(|_| ())
    }
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
            population_backend: None,
            system: ConstraintSystem::default(),
            field_evaluator: None,
            max_constraint_error: 0.0,
            constraints_checked: None,
            history_bodies: None,
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

    /// Evaluates the force fields with `evaluator` from now on (the GPU
    /// kernel, in f32: [`GpuFieldBackend`](crate::gpu::GpuFieldBackend)), or
    /// on the CPU in f64 again with `None`. Clones of the world share it.
    pub fn set_field_evaluator(&mut self, evaluator: Option<Box<dyn FieldEvaluator>>) {
        self.field_evaluator = evaluator.map(|e| Shared::new(e.backend(), e));
    }

    /// Where the fields are evaluated: the evaluator's name (`"gpu"`), else `"cpu"`.
    pub fn field_backend(&self) -> &'static str {
        self.field_evaluator.as_ref().map_or("cpu", |e| e.name)
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

    /// The scene's extent: the largest distance of a body's edge from the
    /// origin (|position| + bounding radius), 0 without bodies. The length
    /// scale of the run's stop rules (the constraint bound of
    /// [`run::Session`](crate::run::Session), the default energy bound).
    pub fn extent(&self) -> f64 {
        self.bodies.iter().map(|b| b.position.length() + b.radius()).fold(0.0, f64::max)
    }

    /// The divergence bound on a body's kinetic energy when the scene sets
    /// none: 1e12 × the scene's energy scale, 1 J + the initial kinetic
    /// energy + |the initial potential energy| + Σ m |g| L over the moving
    /// bodies, L the scene's [`extent`](Self::extent). The weight term is what a scene released from rest
    /// at zero potential (a chain laid out along y = 0) can turn into motion;
    /// without it the bound was 1e12 J whatever the masses and lengths, and
    /// the shipped chain with masses × 1e12 (or lengths and gravity × 1e9)
    /// "diverged" where the SI one ran (`tests/units_invariance.rs`). The
    /// 1 J is left only for a scene with neither gravity nor initial energy.
    fn default_energy_bound(&self) -> f64 {
        let e = self.energy();
        let (g, extent) = (self.gravity.length(), self.extent());
        let weight: f64 = self.bodies.iter().filter(|b| !b.fixed).map(|b| b.mass * g * extent).sum();
        let scale = 1.0 + e.kinetic + e.potential.abs() + weight;
        if scale.is_finite() { 1e12 * scale } else { f64::MAX }
    }

    /// Makes the initial state consistent with the constraints (positions and
    /// velocities projected as after a step), once, before the first step; also
    /// fixes the divergence bound from the initial energy if none was given.
    /// Scene files give positions to a few digits; this settles them so that
    /// the first step does not start with a jump in energy.
    pub fn prepare(&mut self) -> Result<(), SimulationError> {
        self.check_constraints().map_err(|source| SimulationError::Constraints {
            step: self.steps + 1,
            time: self.time,
            source,
        })?;
        // a multistep history of fewer bodies than the state (AB4 indexed
        // past its end)
        if self.history_bodies.is_some_and(|n| n != self.bodies.len()) {
            self.integrator.reset();
        }
        self.history_bodies = Some(self.bodies.len());
        if self.prepared {
            return Ok(());
        }
        self.prepared = true;
        if self.limits.max_body_energy.is_none() {
            self.limits.max_body_energy = Some(self.default_energy_bound());
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

    /// Checks every constraint against the bodies and surfaces
    /// ([`Constraint::validate`]) when the set, or the number of bodies or
    /// surfaces, changed since the last check. [`World::add_constraint`]
    /// checks what it adds, but `World::constraints` is public: a constraint
    /// inserted there directly that names a body or surface the world does
    /// not have is refused with its name (before the step or query that
    /// would use it) instead of indexing out of range where its rows are
    /// evaluated. One comparison when nothing changed.
    pub(crate) fn check_constraints(&mut self) -> Result<(), SolverError> {
        let key = (self.constraints.generation(), self.bodies.len(), self.surfaces.len());
        if self.constraints_checked == Some(key) {
            return Ok(());
        }
        for c in self.constraints.iter() {
            c.validate(self.bodies.as_slice(), &self.surfaces)
                .map_err(|reason| SolverError::InvalidConstraint { name: c.name.clone(), reason })?;
        }
        self.constraints_checked = Some(key);
        Ok(())
    }

    /// Advances the world by one step of `dt`.
    pub fn step(&mut self) -> Result<(), SimulationError> {
        self.prepare()?;
        self.run_stage(Stage::GatherState, |w| gather_state(w.bodies.as_slice(), &mut w.state));
        self.move_bodies()?;
        self.advance_clock();
        let drift = self.correct_drift();
        // Scatter even when the projection failed: the run stops with the
        // state that failed, which the trace then shows.
        self.run_stage(Stage::ScatterState, |w| scatter_state(&w.state, w.bodies.as_mut_slice()));
        drift?;
        self.run_stage(Stage::CheckDivergence, |w| w.check_divergence())?;
        self.run_stage(Stage::StepPopulation, World::step_population)
    }

    /// Runs `stage` on the world, charging its wall time to the stage.
    fn run_stage<T>(&mut self, stage: Stage, f: impl FnOnce(&mut Self) -> T) -> T {
        let started = Instant::now();
        let out = f(self);
        self.times.add(stage, started.elapsed());
        out
    }

    /// The bodies' motion over the step: the integrator, followed by the
    /// exact contact stages when the scene has contacts (`contacts.rs`), or
    /// the soft step in place of both. The stages time themselves.
    fn move_bodies(&mut self) -> Result<(), SimulationError> {
        let result = match self.contacts.soft_step_settings() {
            Some(settings) => self.soft_step(settings),
            None if self.contacts.enabled() => {
                let start = self.state.clone();
                // an integrator failure leaves the bodies as they were
                self.integrate_span(self.time, self.dt)?;
                self.contact_stages(start)
            }
            None => return self.integrate_span(self.time, self.dt),
        };
        if result.is_err() {
            // the run stops with the state the contacts failed on (the trace shows it)
            self.run_stage(Stage::ScatterState, |w| scatter_state(&w.state, w.bodies.as_mut_slice()));
        }
        result
    }

    /// Counts the step and sets the clock: t = t₀ + (n − n₀)·dt, not a
    /// running sum of dt (after 8000 steps of 0.0005 the sum reads
    /// 4.000000000000503). (t₀, n₀) move only when dt is changed between
    /// steps.
    fn advance_clock(&mut self) {
        self.steps += 1;
        if self.dt != self.time_origin.2 {
            self.time_origin = (self.steps - 1, self.time, self.dt);
        }
        let (n0, t0, dt) = self.time_origin;
        self.time = t0 + (self.steps - n0) as f64 * dt;
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
        let evaluator_error = model.evaluator_error.take();
        let forces = force_time(&self.times) - before;
        self.times.add(Stage::Integrate, started.elapsed().saturating_sub(forces));
        if let Some(notice) = notice {
            self.system.warnings.insert(notice);
        }
        if let Some(message) = evaluator_error {
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
        if self.check_constraints().is_err() {
            return f64::NAN;
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
        self.check_constraints()?;
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
        self.check_constraints().map_err(|e| e.to_string())?;
        let handle = self.add_constraint(c)?;
        let before = self.energy().kinetic;
        gather_state(self.bodies.as_slice(), &mut self.state);
        let scene = Scene { bodies: self.bodies.as_slice(), constraints: &self.constraints, surfaces: &self.surfaces };
        let result = self
            .system
            .assemble(scene, self.time, &self.state.q, &self.state.v)
            .and_then(|_| self.system.velocity_correction(scene, &mut self.state.v, factor));
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
