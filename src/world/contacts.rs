//! The contact stages of [`World::step`]: the exact path (broadphase,
//! impacts at their time of impact, narrowphase, PGS with friction, the
//! penetration projection; `src/contact/mod.rs`) and the soft step that
//! replaces the integrator when the scene asks for it
//! (`src/contact/soft_step/`).

use std::time::Instant;

use super::{SimulationError, Stage, World};
use crate::constraint::system::Scene;
use crate::contact::ContactError;
use crate::contact::soft_step::{SoftStepSettings, kinetic_energy};
use crate::integrator::{Dynamics, State};

/// A body overlapping another (or a surface) as placed, at the deepest pair
/// ([`World::start_overlap`]).
#[derive(Clone, Debug, PartialEq)]
pub struct StartOverlap {
    /// Depth over the bounding radius of the smaller body of the pair (of
    /// the body, against a surface).
    pub ratio: f64,
    /// The body.
    pub body: String,
    /// The other body, or `surfaces[i]`.
    pub partner: String,
}

impl World {
    /// The deepest overlap of the bodies where they are now (before the
    /// first step: as the scene places them), when contacts are on and some
    /// pair overlaps; `None` otherwise. Computed on a copy of the contact
    /// set: the steps that follow are not changed. A drop spawned at a
    /// spacing of 1e-9 m put its 1,000 bodies on one point, and the first
    /// steps' push-out raised the energy from 499 J to 4,526 J with nothing
    /// said (`mx2d check` and the run's warnings say it now: module `run`).
    pub fn start_overlap(&self) -> Option<StartOverlap> {
        if !self.contacts.settings.enabled || self.bodies.is_empty() {
            return None;
        }
        let bodies = self.bodies.as_slice();
        let mut state = State::default();
        super::gather_state(bodies, &mut state);
        let mut contacts = self.contacts.clone();
        contacts.broadphase(bodies, &self.surfaces, &self.constraints, &state.q, &state.q);
        contacts.narrowphase(bodies, &self.surfaces, &state.q).ok()?;
        let radius = |i: usize| bodies[i].shape.bounding_radius();
        contacts
            .contacts()
            .iter()
            .filter(|c| c.manifold.gap < 0.0)
            .map(|c| {
                let (size, partner) = match c.partner {
                    crate::contact::Partner::Body(b) => (radius(c.body_a).min(radius(b)), bodies[b].name.clone()),
                    crate::contact::Partner::Surface(s) => (radius(c.body_a), format!("surfaces[{s}]")),
                };
                StartOverlap { ratio: -c.manifold.gap / size, body: bodies[c.body_a].name.clone(), partner }
            })
            .filter(|o| o.ratio.is_finite())
            .max_by(|a, b| a.ratio.total_cmp(&b.ratio))
    }

    /// The contact stages of one step (see `src/contact/mod.rs`): `start` is
    /// the state at the beginning of the step, `self.state` its end.
    pub(super) fn contact_stages(&mut self, start: State) -> Result<(), SimulationError> {
        let (t0, h, step) = (self.time, self.dt, self.steps + 1);
        let fail = |source| SimulationError::Contact { step, time: t0, source };
        let bodies = self.bodies.as_slice();
        let rest = self.contacts.resting_speed(self.gravity, h);
        self.times.timed(Stage::Broadphase, || {
            self.contacts.broadphase(bodies, &self.surfaces, &self.constraints, &start.q, &self.state.q)
        });
        // (the contacts' work is taken over the whole step: below)
        let q_step_start = start.q.clone();
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
        let q_before_projection = self.state.q.clone();
        self.times.timed(Stage::ProjectPenetration, || {
            self.contacts.project_penetration(bodies, &self.surfaces, &self.constraints, &mut self.state.q)
        });
        self.state.work +=
            crate::contact::projection::stop_what_it_undid(bodies, &q_before_projection, &mut self.state, h);
        if !self.contacts.contacts().is_empty() {
            // The contact forces' work over the whole step: the solve's
            // impulses spread over the step (λ/h), as the position update
            // spreads them (`finish`: w·h·Δv), times the rows' motion from
            // the step's start. It was taken over the span after the last
            // impact (λ/span): an impact late in the step made a resting
            // contact's force λ/span and counted the step's sinking, which
            // the contact stage undoes, as work — a column of ten balls
            // dropped on each other "gained" 113 J while its energy fell by
            // 22 J (tests/contact_energy.rs). What it costs: a contact that
            // begins at an impact inside the step has its friction work
            // taken over the whole step's slip (bounce_incline: balance
            // error 2e-14 → 0.19 % of the energy).
            self.state.work += self.contacts.work(&q_step_start, &self.state.q, h);
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
    pub(super) fn soft_step(&mut self, settings: SoftStepSettings) -> Result<(), SimulationError> {
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
        let evaluator_error = model.evaluator_error.take();
        if let Some(message) = evaluator_error {
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
}
