//! The soft-step contact solver (scene `contacts: Contacts(solver: SoftStep(...))`):
//! Box2D v3's scheme (Catto, "Solver2D", 2024) on the mechanism tier's
//! bodies, f64, graph-coloured for rayon.
//!
//! # The step
//!
//! One broadphase and one narrowphase per step, at the positions of the
//! start of the step, with a speculative margin (contacts up to
//! `speculative` apart, plus what the pair can close at its start-of-step
//! speeds, are kept and may close within the step, never more: a fast body
//! does not tunnel).
//! Then `substeps` sub-steps of h = dt / substeps, each
//!
//! 1. **integrate velocities**: v += h·F/m with the world's forces
//!    (gravity, fields, loads) evaluated once at the start of the step;
//! 2. **warm start**: the impulses of the previous sub-step (of the previous
//!    step for the first one, matched by contact identity) are applied again;
//! 3. **solve** (`iterations` sweeps, with bias): each contact point is a
//!    *soft* constraint — a damped spring of frequency `hertz` and damping
//!    ratio `damping_ratio` on the contact's effective mass (Catto's
//!    "soft step": bias rate ω/(2ζ + hω), mass scale hω(2ζ + hω)/(1 + hω(2ζ + hω)),
//!    impulse scale 1/(1 + hω(2ζ + hω)), ω = 2π·hertz), so that penetration
//!    is pushed out at a bounded speed (`push_speed`) instead of at once;
//!    a positive gap s only lets the contact approach by s/h (speculative);
//!    then Coulomb friction per point, |λₜ| ≤ μ λₙ, and rolling resistance
//!    |λᵣ| ≤ μᵣ Σλₙ for round shapes;
//! 4. **integrate positions**: x += h·v, φ += h·ω;
//! 5. **relax** (`relax_iterations` sweeps, no bias, rigid): the velocity
//!    the bias added is taken out again, so that pushing out of an overlap
//!    does not turn into a bounce.
//!
//! After the sub-steps, a **restitution** pass gives each point that
//! approached faster than the resting speed at the start of the step the
//! Newton rebound −e·uₙ (Box2D's relative-velocity restitution), and the
//! impulses are kept for the next step's warm start.
//!
//! Separation during the step is not recomputed by the narrowphase: each
//! point keeps its anchors rₐ, r_b (world frame, start of the step), and the
//! current separation is s₀ + n·[(Δxₐ + (R(Δφₐ) − I) rₐ) − (Δx_b + (R(Δφ_b) − I) r_b)]
//! (Box2D v3's relative-anchor update): exact for translations, first-order
//! in the contact's sliding over the step.
//!
//! # Why, and what it costs in quality
//!
//! Projected Gauss–Seidel converges like a diffusion on a tall stack: the
//! weight of the top has to travel the whole height, 1,000 sweeps for the
//! 100-row pyramid ([`crate::solver::pgs`]). Sub-stepping with soft contacts
//! converges in time instead of in iterations: one sweep per sub-step, the
//! spring carries the load down over a few steps, and warm starting keeps it
//! there. The price is that contacts are springs: a contact carrying a load W
//! with effective mass mₙ rests at a penetration W/(mₙ ω²) (the spring's static
//! deflection), so a tall stack sags, more at the bottom, and the stack is
//! only as stiff as `hertz` allows (at most a quarter of the sub-step rate is
//! used, as Box2D does, since a stiffer spring is not resolved by the
//! sub-step). Impacts have no exact time of impact (the speculative margin
//! stops them at the surface within a step instead), the restitution is
//! Newton's law on the start-of-step velocity, and static friction is
//! approximate (μ_s for a point that did not slip at the start of the step,
//! μ_k otherwise). For exact contacts (closed forms to 1e-9, exact impact
//! times) keep the default solver `Exact`.
//!
//! # Joints
//!
//! Refused: a scene with constraints (joints, rolling, curve contacts) and
//! the soft step is an error at `check` (positioned at `contacts.solver`),
//! and [`crate::world::World::step`] stops with a contact error if
//! constraints were added in code. Joints keep their exact projection only in
//! the exact contact path; alternating the exact projection with sub-steps
//! would need one projection per sub-step (the cost the soft step exists to
//! avoid).
//!
//! # Parallelism
//!
//! Manifolds are coloured ([`colour_manifolds`], greedy, fixed bodies and
//! surfaces ignored, as Box2D v3's graph colouring): the manifolds of one
//! colour share no dynamic body. A colour of at least
//! [`crate::solver::pgs::PARALLEL_COLOUR_MIN`] manifolds is split over the
//! rayon pool; each manifold reads and writes only its own bodies' velocities,
//! so the result is bitwise the same at every pool size.

use glam::DVec2;
use serde::{Deserialize, Serialize};

use super::{Contact, ContactError, ContactSet, Pair, Partner};
use crate::body::Body;
use crate::shape::Shape;
use crate::surface::Surface;

/// Settings of the soft-step solver (scene `SoftStep(...)`, every field optional).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SoftStepSettings {
    /// Sub-steps per step (Box2D: 4).
    pub substeps: usize,
    /// Contact stiffness as a frequency (Hz), body–body; contacts with a
    /// static surface or a fixed body use twice it (Box2D: 30). Capped at a
    /// quarter of the sub-step rate.
    pub hertz: f64,
    /// Damping ratio of the contact spring (Box2D: 10).
    pub damping_ratio: f64,
    /// Largest speed at which penetration is pushed out (m/s; Box2D: 3).
    pub push_speed: f64,
    /// Biased sweeps per sub-step (Box2D: 1).
    pub iterations: usize,
    /// Relax sweeps per sub-step (Box2D: 1).
    pub relax_iterations: usize,
    /// Speculative margin (m): contacts closer than this are kept and may
    /// close within the step. `None`: 4 × the slop (Box2D: 4 × linear slop).
    pub speculative: Option<f64>,
}

impl Default for SoftStepSettings {
    fn default() -> Self {
        Self {
            substeps: 4,
            hertz: 30.0,
            damping_ratio: 10.0,
            push_speed: 3.0,
            iterations: 1,
            relax_iterations: 1,
            speculative: None,
        }
    }
}

impl SoftStepSettings {
    /// What is out of range, naming the field first.
    pub fn validate(&self) -> Result<(), String> {
        if !(1..=64).contains(&self.substeps) {
            return Err(format!("substeps must be in 1..=64, got {}", self.substeps));
        }
        if !(1..=64).contains(&self.iterations) {
            return Err(format!("iterations must be in 1..=64, got {}", self.iterations));
        }
        if self.relax_iterations > 64 {
            return Err(format!("relax_iterations must be in 0..=64, got {}", self.relax_iterations));
        }
        for (name, v) in [("hertz", self.hertz), ("push_speed", self.push_speed)] {
            if !(v.is_finite() && v > 0.0) {
                return Err(format!("{name} must be positive and finite, got {v}"));
            }
        }
        if !(self.damping_ratio.is_finite() && self.damping_ratio >= 0.0) {
            return Err(format!("damping_ratio must be finite and >= 0, got {}", self.damping_ratio));
        }
        if let Some(s) = self.speculative
            && !(s.is_finite() && s >= 0.0)
        {
            return Err(format!("speculative must be finite and >= 0, got {s}"));
        }
        Ok(())
    }
}

/// Soft-constraint coefficients for one sub-step (Catto, "Solver2D").
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Softness {
    /// Fraction of the separation turned into a target speed per second (1/s).
    pub bias_rate: f64,
    /// Scale of the effective mass.
    pub mass_scale: f64,
    /// Scale of the accumulated impulse that is taken out (the spring's damping).
    pub impulse_scale: f64,
}

impl Softness {
    /// A spring of `hertz` and `damping_ratio` over a sub-step `h`.
    pub fn new(hertz: f64, damping_ratio: f64, h: f64) -> Self {
        if hertz == 0.0 {
            return Self { bias_rate: 0.0, mass_scale: 1.0, impulse_scale: 0.0 };
        }
        let omega = 2.0 * std::f64::consts::PI * hertz;
        let a1 = 2.0 * damping_ratio + h * omega;
        let a2 = h * omega * a1;
        let a3 = 1.0 / (1.0 + a2);
        Self { bias_rate: omega / a1, mass_scale: a2 * a3, impulse_scale: a3 }
    }
}

/// No second body (a surface).
const NONE: u32 = u32::MAX;

/// One point of a soft manifold.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct SoftPoint {
    /// Unit normal from the partner to body a.
    normal: DVec2,
    /// Anchor on a, from its centre (world frame, start of the step).
    ra: DVec2,
    /// Anchor on b (zero for a surface).
    rb: DVec2,
    /// Gap at the start of the step (m).
    base_separation: f64,
    /// 1 / (normal effective mass⁻¹).
    normal_mass: f64,
    /// 1 / (tangent effective mass⁻¹).
    tangent_mass: f64,
    /// Normal impulse of the last sub-step (N·s).
    normal_impulse: f64,
    /// Tangent impulse of the last sub-step (N·s).
    tangent_impulse: f64,
    /// Normal impulse summed over the sub-steps (N·s).
    total_normal: f64,
    /// Tangent impulse summed over the sub-steps (N·s).
    total_tangent: f64,
    /// Normal velocity at the start of the step (m/s).
    relative_velocity: f64,
    /// Static (μ_s) or kinetic (μ_k) friction for this step.
    friction: f64,
}

/// What a manifold is, for warm starting and output (kept apart from
/// [`SoftManifold`] so that the sweeps stream less memory).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct SoftInfo {
    key: (usize, Partner),
    material: super::Material,
    features: [u32; 2],
}

/// The soft constraint of one pair (up to 2 points): only what the sweeps use.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct SoftManifold {
    a: u32,
    b: u32,
    inv_mass_a: f64,
    inv_inertia_a: f64,
    inv_mass_b: f64,
    inv_inertia_b: f64,
    dynamic_a: bool,
    dynamic_b: bool,
    restitution: f64,
    rolling_resistance: f64,
    rolling_mass: f64,
    rolling_impulse: f64,
    total_rolling: f64,
    /// Body–body (soft) or against a static surface/fixed body (twice as stiff).
    static_partner: bool,
    count: u8,
    points: [SoftPoint; 2],
}

impl Default for Partner {
    fn default() -> Self {
        Partner::Surface(0)
    }
}

/// Per-body motion since the start of the step: Δx, Δy, cos Δφ, sin Δφ.
pub type BodyDelta = [f64; 4];

/// Solver state kept between steps (buffers reused: no per-step allocation
/// once they have grown).
#[derive(Clone, Debug, Default)]
pub struct SoftState {
    /// Manifolds in colour order.
    manifolds: Vec<SoftManifold>,
    /// The previous step's manifolds in key order (warm start).
    previous: Vec<SoftManifold>,
    /// Their identities.
    previous_info: Vec<SoftInfo>,
    /// Fresh manifolds in key order, before colouring.
    fresh: Vec<SoftManifold>,
    /// Their identities.
    info: Vec<SoftInfo>,
    /// Some manifold has a restitution: the restitution pass is needed.
    bouncy: bool,
    /// (start, len, parallel) of each colour in `manifolds`.
    colours: Vec<(usize, usize, bool)>,
    /// Colour of each fresh manifold.
    colour_of: Vec<u16>,
    /// Key-order index of each manifold in colour order.
    order: Vec<u32>,
    /// Colour masks per body.
    used: Vec<u64>,
    /// Body motion since the start of the step.
    delta: Vec<BodyDelta>,
    /// Positions at the start of the step.
    q0: Vec<f64>,
    /// Accelerations F/m at the start of the step (3 per body).
    acceleration: Vec<f64>,
    /// Positions the forces alone would reach by the end of the step.
    predicted: Vec<f64>,
    /// Sub-step (s) and its softness for body–body / static contacts.
    h: f64,
    soft: Softness,
    static_soft: Softness,
    push_speed: f64,
}

fn cross(a: DVec2, b: DVec2) -> f64 {
    a.x * b.y - a.y * b.x
}

/// ω × r for a scalar ω.
fn cross_sv(w: f64, r: DVec2) -> DVec2 {
    DVec2::new(-w * r.y, w * r.x)
}

fn round(shape: &Shape) -> bool {
    matches!(shape, Shape::Circle { .. } | Shape::Ellipse { .. } | Shape::Superellipse { .. })
}

/// Colours kept in a body's bit mask; the rest go to one sequential colour.
const MAX_COLOURS: u16 = 63;

/// Greedy colouring of manifolds (see the module docs): returns each one's
/// colour, [`MAX_COLOURS`] meaning the sequential overflow colour.
fn colour_manifolds(manifolds: &[SoftManifold], used: &mut Vec<u64>, bodies: usize, out: &mut Vec<u16>) {
    used.clear();
    used.resize(bodies, 0);
    out.clear();
    for m in manifolds {
        let mut taken = 0u64;
        if m.dynamic_a {
            taken |= used[m.a as usize];
        }
        if m.dynamic_b {
            taken |= used[m.b as usize];
        }
        let c = (!taken).trailing_zeros() as u16;
        if c >= MAX_COLOURS {
            out.push(MAX_COLOURS);
            continue;
        }
        if m.dynamic_a {
            used[m.a as usize] |= 1 << c;
        }
        if m.dynamic_b {
            used[m.b as usize] |= 1 << c;
        }
        out.push(c);
    }
}

/// Body velocities shared by the threads of one colour: each manifold of a
/// colour touches only its own dynamic bodies' entries, and no two manifolds
/// of a colour share one, so accesses are disjoint (as
/// `crate::solver::pgs`'s shared velocities). Fixed bodies and surfaces are
/// only read.
struct Shared {
    ptr: *mut f64,
    len: usize,
}

// SAFETY: see the type's docs; colours are swept one after the other.
unsafe impl Sync for Shared {}

impl Shared {
    #[inline]
    fn get(&self, body: u32) -> (DVec2, f64) {
        if body == NONE {
            return (DVec2::ZERO, 0.0);
        }
        let i = 3 * body as usize;
        assert!(i + 2 < self.len);
        // SAFETY: in bounds; no other thread writes these entries (type docs).
        unsafe { (DVec2::new(self.ptr.add(i).read(), self.ptr.add(i + 1).read()), self.ptr.add(i + 2).read()) }
    }

    #[inline]
    fn set(&self, body: u32, v: DVec2, w: f64) {
        let i = 3 * body as usize;
        assert!(i + 2 < self.len);
        // SAFETY: in bounds; no other thread reads or writes these entries.
        unsafe {
            self.ptr.add(i).write(v.x);
            self.ptr.add(i + 1).write(v.y);
            self.ptr.add(i + 2).write(w);
        }
    }
}

/// Which pass of a sub-step.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pass {
    WarmStart,
    Solve,
    Relax,
    /// The last relax sweep of a sub-step, which also adds the sub-step's
    /// impulses to the step totals (one pass fewer over the manifolds).
    RelaxAccumulate,
    Restitution,
}

impl SoftManifold {
    /// One pass on this manifold, reading and writing its bodies' velocities.
    #[inline]
    fn run(&mut self, pass: Pass, v: &Shared, delta: &[BodyDelta], st: &SoftState, threshold: f64) {
        let (mut va, mut wa) = v.get(self.a);
        let (mut vb, mut wb) = v.get(self.b);
        let (ma, ia, mb, ib) = (self.inv_mass_a, self.inv_inertia_a, self.inv_mass_b, self.inv_inertia_b);
        let apply = |p: DVec2, ra: DVec2, rb: DVec2, va: &mut DVec2, wa: &mut f64, vb: &mut DVec2, wb: &mut f64| {
            *va += ma * p;
            *wa += ia * cross(ra, p);
            *vb -= mb * p;
            *wb -= ib * cross(rb, p);
        };
        match pass {
            Pass::WarmStart => {
                for p in &self.points[..self.count as usize] {
                    let t = p.normal.perp();
                    let imp = p.normal_impulse * p.normal + p.tangent_impulse * t;
                    apply(imp, p.ra, p.rb, &mut va, &mut wa, &mut vb, &mut wb);
                }
                wa += ia * self.rolling_impulse;
                wb -= ib * self.rolling_impulse;
            }
            Pass::Solve | Pass::Relax | Pass::RelaxAccumulate => {
                let use_bias = pass == Pass::Solve;
                let soft = if self.static_partner { st.static_soft } else { st.soft };
                let (da, db) = (delta_of(delta, self.a), delta_of(delta, self.b));
                let inv_h = 1.0 / st.h;
                let mut total_normal = 0.0;
                for p in &mut self.points[..self.count as usize] {
                    let s = p.base_separation + p.normal.dot(moved(&da, p.ra) - moved(&db, p.rb));
                    // Speculative (s > 0): may close the gap within the
                    // sub-step, no more. Penetrating: the soft spring's
                    // target speed, at most `push_speed`, mass and impulse
                    // scaled (Catto's soft step); relax: rigid, no bias.
                    let (bias, mass_scale, impulse_scale) = if s > 0.0 {
                        (s * inv_h, 1.0, 0.0)
                    } else if use_bias {
                        (
                            (soft.mass_scale * soft.bias_rate * s).max(-st.push_speed),
                            soft.mass_scale,
                            soft.impulse_scale,
                        )
                    } else {
                        (0.0, 1.0, 0.0)
                    };
                    let dv = va + cross_sv(wa, p.ra) - vb - cross_sv(wb, p.rb);
                    let vn = dv.dot(p.normal);
                    let impulse = -p.normal_mass * (mass_scale * vn + bias) - impulse_scale * p.normal_impulse;
                    let new = (p.normal_impulse + impulse).max(0.0);
                    let d = new - p.normal_impulse;
                    p.normal_impulse = new;
                    total_normal += new;
                    apply(d * p.normal, p.ra, p.rb, &mut va, &mut wa, &mut vb, &mut wb);
                }
                for p in &mut self.points[..self.count as usize] {
                    let t = p.normal.perp();
                    let dv = va + cross_sv(wa, p.ra) - vb - cross_sv(wb, p.rb);
                    let vt = dv.dot(t);
                    let bound = p.friction * p.normal_impulse;
                    let new = (p.tangent_impulse - p.tangent_mass * vt).clamp(-bound, bound);
                    let d = new - p.tangent_impulse;
                    p.tangent_impulse = new;
                    apply(d * t, p.ra, p.rb, &mut va, &mut wa, &mut vb, &mut wb);
                }
                let accumulate = pass == Pass::RelaxAccumulate;
                if self.rolling_mass > 0.0 {
                    let bound = self.rolling_resistance * total_normal;
                    let new = (self.rolling_impulse - self.rolling_mass * (wa - wb)).clamp(-bound, bound);
                    let d = new - self.rolling_impulse;
                    self.rolling_impulse = new;
                    wa += ia * d;
                    wb -= ib * d;
                }
                if accumulate {
                    self.accumulate();
                }
            }
            Pass::Restitution => {
                if self.restitution == 0.0 {
                    return;
                }
                for p in &mut self.points[..self.count as usize] {
                    // No impulse over the step: a speculative point that never touched.
                    if p.relative_velocity > -threshold || p.total_normal == 0.0 {
                        continue;
                    }
                    let dv = va + cross_sv(wa, p.ra) - vb - cross_sv(wb, p.rb);
                    let vn = dv.dot(p.normal);
                    let impulse = -p.normal_mass * (vn + self.restitution * p.relative_velocity);
                    let new = (p.normal_impulse + impulse).max(0.0);
                    let d = new - p.normal_impulse;
                    p.normal_impulse = new;
                    p.total_normal += d;
                    apply(d * p.normal, p.ra, p.rb, &mut va, &mut wa, &mut vb, &mut wb);
                }
            }
        }
        if self.dynamic_a {
            v.set(self.a, va, wa);
        }
        if self.dynamic_b {
            v.set(self.b, vb, wb);
        }
    }

    /// Adds this sub-step's impulses to the step totals.
    fn accumulate(&mut self) {
        for p in &mut self.points[..self.count as usize] {
            p.total_normal += p.normal_impulse;
            p.total_tangent += p.tangent_impulse;
        }
        self.total_rolling += self.rolling_impulse;
    }
}

impl ContactSet {
    /// The soft-step settings, when that is the contact solver.
    pub fn soft_step_settings(&self) -> Option<SoftStepSettings> {
        match self.settings.solver {
            super::ContactSolver::SoftStep(s) if self.settings.enabled => Some(s),
            _ => None,
        }
    }

    /// Soft step, once per step: narrowphase at the start-of-step positions
    /// `q` (velocities `v`) with the speculative margin, the manifolds with
    /// their effective masses, friction and warm-start impulses (matched by
    /// pair and feature with the previous step, both in pair order: no
    /// hashing), and their colouring. Call after [`ContactSet::broadphase`].
    pub fn soft_prepare(
        &mut self,
        bodies: &[Body],
        surfaces: &[Surface],
        q: &[f64],
        v: &[f64],
        dt: f64,
        resting_speed: f64,
    ) -> Result<(), ContactError> {
        let Some(settings) = self.soft_step_settings() else { return Ok(()) };
        let slop = self.slop(bodies);
        let margin = settings.speculative.unwrap_or(4.0 * slop);
        self.ensure_hulls(bodies);
        let h = dt / settings.substeps as f64;
        // A spring stiffer than a quarter of the sub-step rate is not
        // resolved by the sub-step (Box2D caps it the same way).
        let hertz = settings.hertz.min(0.25 / h);
        let mut soft = std::mem::take(&mut self.soft);
        soft.h = h;
        soft.soft = Softness::new(hertz, settings.damping_ratio, h);
        soft.static_soft = Softness::new(2.0 * hertz, settings.damping_ratio, h);
        soft.push_speed = settings.push_speed;
        soft.q0.clear();
        soft.q0.extend_from_slice(q);
        soft.delta.clear();
        soft.delta.resize(bodies.len(), [0.0, 0.0, 1.0, 0.0]);
        // Pair order = key order, so that matching with the previous step is a merge.
        self.pairs.sort_unstable();
        std::mem::swap(&mut soft.previous, &mut soft.fresh);
        std::mem::swap(&mut soft.previous_info, &mut soft.info);
        soft.fresh.clear();
        soft.info.clear();
        soft.bouncy = false;
        let mut prev = 0usize;
        for k in 0..self.pairs.len() {
            let pair = self.pairs[k];
            // The pair's reach over the step: the speculative margin plus how
            // far the two can close at their start-of-step speeds (centre
            // speed + spin × bounding radius), so that a fast body meets a
            // thin one or a surface as a speculative contact instead of
            // passing through it between two narrowphases.
            let speed = |i: usize| {
                let r = bodies[i].shape.bounding_radius();
                DVec2::new(v[3 * i], v[3 * i + 1]).length() + v[3 * i + 2].abs() * r
            };
            let closing = speed(pair.a) + if let Partner::Body(j) = pair.b { speed(j) } else { 0.0 };
            self.collide_pair(bodies, surfaces, pair, q, margin + dt * closing);
            if self.scratch.is_empty() {
                continue;
            }
            let material = self.mixed(surfaces, pair.a, pair.b);
            let key = (pair.a, pair.b);
            while prev < soft.previous.len() && soft.previous_info[prev].key < key {
                prev += 1;
            }
            let first_prev = prev;
            for chunk in self.scratch.chunks(2) {
                for m in chunk {
                    if !(m.gap.is_finite() && m.normal.is_finite() && m.point.is_finite()) {
                        self.soft = soft;
                        return Err(self.error(bodies, pair, "the contact gap or normal is not finite (NaN state)"));
                    }
                }
                let mut man = new_manifold(bodies, pair, &material, q, v, chunk, resting_speed);
                let mut features = [0u32; 2];
                for (f, m) in features.iter_mut().zip(chunk) {
                    *f = m.feature;
                }
                // Warm start: the previous step's points of this pair with the same feature.
                let mut j = first_prev;
                while j < soft.previous.len() && soft.previous_info[j].key == key {
                    let (old, old_info) = (&soft.previous[j], &soft.previous_info[j]);
                    for (p, f) in man.points[..man.count as usize].iter_mut().zip(features) {
                        let found = (0..old.count as usize).find(|&i| old_info.features[i] == f);
                        if let Some(o) = found.map(|i| &old.points[i]) {
                            let bound = p.friction * o.normal_impulse;
                            p.normal_impulse = o.normal_impulse;
                            p.tangent_impulse = o.tangent_impulse.clamp(-bound, bound);
                        }
                    }
                    man.rolling_impulse = old.rolling_impulse;
                    j += 1;
                }
                soft.bouncy |= man.restitution > 0.0;
                soft.fresh.push(man);
                soft.info.push(SoftInfo { key, material, features });
            }
        }
        // Colour, then lay the manifolds out colour by colour.
        colour_manifolds(&soft.fresh, &mut soft.used, bodies.len(), &mut soft.colour_of);
        let mut counts = [0usize; MAX_COLOURS as usize + 1];
        for &c in &soft.colour_of {
            counts[c as usize] += 1;
        }
        soft.colours.clear();
        let mut starts = [0usize; MAX_COLOURS as usize + 1];
        let mut offset = 0;
        for (c, &n) in counts.iter().enumerate() {
            starts[c] = offset;
            if n > 0 {
                soft.colours.push((offset, n, c < MAX_COLOURS as usize));
            }
            offset += n;
        }
        soft.manifolds.clear();
        soft.manifolds.resize(soft.fresh.len(), SoftManifold::default());
        soft.order.clear();
        soft.order.resize(soft.fresh.len(), 0);
        for (k, (m, &c)) in soft.fresh.iter().zip(&soft.colour_of).enumerate() {
            soft.manifolds[starts[c as usize]] = *m;
            soft.order[starts[c as usize]] = k as u32;
            starts[c as usize] += 1;
        }
        self.soft = soft;
        Ok(())
    }

    /// Manifolds in the largest colour swept on the pool (0 if none) at the
    /// last [`ContactSet::soft_prepare`]: tests check the parallel path is taken.
    pub fn soft_largest_colour(&self) -> usize {
        self.soft.colours.iter().filter(|c| c.2).map(|c| c.1).max().unwrap_or(0)
    }

    fn soft_pass(&mut self, pass: Pass, v: &mut [f64], threshold: f64) {
        use rayon::prelude::*;
        let parallel = rayon::current_num_threads() > 1;
        let shared = Shared { ptr: v.as_mut_ptr(), len: v.len() };
        let mut manifolds = std::mem::take(&mut self.soft.manifolds);
        let st = &self.soft;
        let delta = &st.delta;
        for &(start, len, colourable) in &st.colours {
            let slice = &mut manifolds[start..start + len];
            if parallel && colourable && len >= crate::solver::pgs::PARALLEL_COLOUR_MIN {
                let shared = &shared;
                slice.par_chunks_mut(64).for_each(|chunk| {
                    for m in chunk {
                        m.run(pass, shared, delta, st, threshold);
                    }
                });
            } else {
                for m in slice {
                    m.run(pass, &shared, delta, st, threshold);
                }
            }
        }
        self.soft.manifolds = manifolds;
    }

    /// Sub-step pass: the stored impulses applied again.
    pub fn soft_warm_start(&mut self, v: &mut [f64]) {
        self.soft_pass(Pass::WarmStart, v, 0.0);
    }

    /// Sub-step pass: the soft solve (`relax` false, with bias) or the relax
    /// (rigid, no bias), `sweeps` times.
    pub fn soft_solve(&mut self, v: &mut [f64], relax: bool, sweeps: usize) {
        for k in 0..sweeps {
            let pass = match (relax, k + 1 == sweeps) {
                (false, _) => Pass::Solve,
                (true, false) => Pass::Relax,
                (true, true) => Pass::RelaxAccumulate,
            };
            self.soft_pass(pass, v, 0.0);
        }
        if relax && sweeps == 0 {
            for m in &mut self.soft.manifolds {
                m.accumulate();
            }
        }
    }

    /// After the sub-steps: Newton's restitution for points that approached
    /// faster than `threshold` at the start of the step.
    pub fn soft_restitution(&mut self, v: &mut [f64], threshold: f64) {
        if self.soft.bouncy {
            self.soft_pass(Pass::Restitution, v, threshold);
        }
    }

    /// Integrates positions over one sub-step (q += h·v, every body, fixed
    /// ones with their own velocity) and updates the motion since the start
    /// of the step.
    pub fn soft_integrate_positions(&mut self, q: &mut [f64], v: &[f64]) {
        let h = self.soft.h;
        let q0 = &self.soft.q0;
        for (i, d) in self.soft.delta.iter_mut().enumerate() {
            for k in 0..3 {
                q[3 * i + k] += h * v[3 * i + k];
            }
            let dphi = q[3 * i + 2] - q0[3 * i + 2];
            *d = [q[3 * i] - q0[3 * i], q[3 * i + 1] - q0[3 * i + 1], dphi.cos(), dphi.sin()];
        }
    }

    /// The sub-step length of the current step (s).
    pub fn soft_substep(&self) -> f64 {
        self.soft.h
    }

    /// Takes the buffers for the start-of-step accelerations and the
    /// predicted end positions (reused from step to step; give them back
    /// with [`ContactSet::soft_put_buffers`]).
    pub fn soft_take_buffers(&mut self) -> (Vec<f64>, Vec<f64>) {
        (std::mem::take(&mut self.soft.acceleration), std::mem::take(&mut self.soft.predicted))
    }

    /// Gives the buffers back.
    pub fn soft_put_buffers(&mut self, acceleration: Vec<f64>, predicted: Vec<f64>) {
        self.soft.acceleration = acceleration;
        self.soft.predicted = predicted;
    }

    /// After the step: the contacts for output (impulses summed over the
    /// sub-steps, gap at the end of the step), the largest penetration, and
    /// the manifolds kept in pair order for the next warm start. A
    /// non-finite impulse is an error naming the pair.
    pub fn soft_finish(&mut self, bodies: &[Body]) -> Result<(), ContactError> {
        let mut soft = std::mem::take(&mut self.soft);
        self.contacts.clear();
        let mut deepest: f64 = 0.0;
        let mut bad = None;
        // Back to key order (fresh) with the solved impulses, for the next
        // step's warm start and for output in pair order.
        for (m, &k) in soft.manifolds.iter().zip(&soft.order) {
            soft.fresh[k as usize] = *m;
        }
        for (m, info) in soft.fresh.iter().zip(&soft.info) {
            let (da, db) = (delta_of(&soft.delta, m.a), delta_of(&soft.delta, m.b));
            let pair = Pair { a: info.key.0, b: info.key.1 };
            for (p, &feature) in m.points[..m.count as usize].iter().zip(&info.features) {
                let s = p.base_separation + p.normal.dot(moved(&da, p.ra) - moved(&db, p.rb));
                if !(p.total_normal.is_finite() && p.total_tangent.is_finite() && s.is_finite()) {
                    bad.get_or_insert(pair);
                }
                if p.total_normal > 0.0 {
                    deepest = deepest.max(-s);
                }
                let centre = DVec2::new(soft.q0[3 * m.a as usize], soft.q0[3 * m.a as usize + 1]);
                self.contacts.push(Contact {
                    body_a: pair.a,
                    partner: pair.b,
                    manifold: super::narrowphase::ManifoldPoint {
                        point: centre + p.ra + DVec2::new(da[0], da[1]),
                        normal: p.normal,
                        gap: s,
                        feature,
                    },
                    material: info.material,
                    impulse: [p.total_normal, p.total_tangent, m.total_rolling],
                });
            }
        }
        self.max_penetration = self.max_penetration.max(deepest);
        self.soft = soft;
        match bad {
            Some(pair) => Err(self.error(bodies, pair, "the contact impulse is not finite")),
            None => Ok(()),
        }
    }
}

fn delta_of(delta: &[BodyDelta], body: u32) -> BodyDelta {
    if body == NONE { [0.0, 0.0, 1.0, 0.0] } else { delta[body as usize] }
}

fn moved(d: &BodyDelta, r: DVec2) -> DVec2 {
    DVec2::new(d[0] + d[2] * r.x - d[3] * r.y - r.x, d[1] + d[3] * r.x + d[2] * r.y - r.y)
}

/// A manifold of up to 2 narrowphase points of one pair.
fn new_manifold(
    bodies: &[Body],
    pair: Pair,
    material: &super::Material,
    q: &[f64],
    v: &[f64],
    points: &[super::narrowphase::ManifoldPoint],
    resting_speed: f64,
) -> SoftManifold {
    let inv = |i: usize| {
        let b = &bodies[i];
        if b.fixed { (0.0, 0.0) } else { (1.0 / b.mass, if b.inertia > 0.0 { 1.0 / b.inertia } else { 0.0 }) }
    };
    let a = pair.a;
    let (ma, ia) = inv(a);
    let (b, mb, ib, fixed_b) = match pair.b {
        Partner::Body(j) => {
            let (mb, ib) = inv(j);
            (j as u32, mb, ib, bodies[j].fixed)
        }
        Partner::Surface(_) => (NONE, 0.0, 0.0, true),
    };
    let centre = |i: u32| if i == NONE { DVec2::ZERO } else { DVec2::new(q[3 * i as usize], q[3 * i as usize + 1]) };
    let vel = |i: u32| {
        if i == NONE {
            (DVec2::ZERO, 0.0)
        } else {
            let k = 3 * i as usize;
            (DVec2::new(v[k], v[k + 1]), v[k + 2])
        }
    };
    let (va, wa) = vel(a as u32);
    let (vb, wb) = vel(b);
    let mut m = SoftManifold {
        a: a as u32,
        b,
        inv_mass_a: ma,
        inv_inertia_a: ia,
        inv_mass_b: mb,
        inv_inertia_b: ib,
        dynamic_a: !bodies[a].fixed,
        dynamic_b: b != NONE && !bodies[b as usize].fixed,
        restitution: material.restitution,
        rolling_resistance: material.rolling_resistance,
        static_partner: bodies[a].fixed || fixed_b,
        count: points.len().min(2) as u8,
        ..SoftManifold::default()
    };
    let round_pair = round(&bodies[a].shape) || matches!(pair.b, Partner::Body(j) if round(&bodies[j].shape));
    if material.rolling_resistance > 0.0 && round_pair && ia + ib > 0.0 {
        m.rolling_mass = 1.0 / (ia + ib);
    }
    for (p, mp) in m.points.iter_mut().zip(points) {
        let n = mp.normal;
        let t = n.perp();
        let ra = mp.point - centre(a as u32);
        let rb = if b == NONE { DVec2::ZERO } else { mp.point - centre(b) };
        let kn = ma + mb + ia * cross(ra, n).powi(2) + ib * cross(rb, n).powi(2);
        let kt = ma + mb + ia * cross(ra, t).powi(2) + ib * cross(rb, t).powi(2);
        let dv = va + cross_sv(wa, ra) - vb - cross_sv(wb, rb);
        // Static friction for a point that does not slip at the start of the
        // step, kinetic for one that does (faster than gravity gives in a step).
        let slipping = dv.dot(t).abs() > resting_speed;
        *p = SoftPoint {
            normal: n,
            ra,
            rb,
            base_separation: mp.gap,
            normal_mass: if kn > 0.0 { 1.0 / kn } else { 0.0 },
            tangent_mass: if kt > 0.0 { 1.0 / kt } else { 0.0 },
            relative_velocity: dv.dot(n),
            friction: if slipping { material.kinetic() } else { material.friction },
            ..SoftPoint::default()
        };
    }
    m
}
