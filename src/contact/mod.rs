//! Contacts and impacts of the mechanism tier: every body against the static
//! surfaces and against every other body (seeds 004, 000, 003 §IV-D, §V-C).
//!
//! # The stages (in `World::step`, after `integrate`)
//!
//! 1. **`broadphase`** ([`ContactSet::broadphase`]): candidate pairs from
//!    the boxes swept over the step (the union of each body's box at the
//!    start and at the end, so that a fast body meets what lies across its
//!    path). Body–body pairs come from [`crate::broadphase`]: the grid when
//!    the bounding radii spread by less than 4× and the bodies are many
//!    ([`GRID_MIN_BODIES`]), sweep-and-prune otherwise, or as the scene
//!    says, run on *fat* boxes (grown by an eighth of their size) and kept
//!    from call to call ([`crate::broadphase::FatBoxPairs`], Box2D v3's
//!    scheme): only a body whose box leaves its fat box is placed again and
//!    its pairs found again, and each call filters the kept pairs with the
//!    exact overlap test on the current boxes — the same pairs, in the same
//!    order, as the chosen broadphase from scratch. Its [`Aabb`] is f32:
//!    every box is rounded **outward** to the next f32 and padded by the
//!    contact slop, so a pair the f64 geometry would keep is never lost.
//!    Body–surface pairs are tested directly (few surfaces): the body's
//!    bounding disc against the surface's signed distance (a line's unit
//!    normal taken once per call; the square root of the swept chord only
//!    for a body within a bound of the surface). Bodies joined by a
//!    constraint are skipped unless `collide_connected`. On the 100-row
//!    pyramid at Box2D's settings (5,050 boxes, 2 threads, load 1.7) the
//!    stage went from 0.56 to 0.235 ms/step (medians of 4 pairs alternated
//!    with main's; docs/benchmarks.md, round `broad12`).
//! 2. **`impacts`** ([`ContactSet::earliest_impact`] + [`ContactSet::resolve_impacts`]):
//!    the time of impact on the integrator's own trajectory of the step, see
//!    [`toi`]. The world advances the **integrator** to the earliest root,
//!    applies the impact impulses there ([`impact`]: Newton's law with the
//!    rotational effective mass 1/m + (r×n)²/J per body, Coulomb-bounded
//!    tangential impulse) and integrates the rest of the step; several
//!    impacts in one step are handled in time order.
//! 3. **`narrowphase`** ([`ContactSet::narrowphase`]): the contact points at
//!    the end of the step ([`narrowphase`]), gap ≤ slop.
//! 4. **`contact_solve`** ([`ContactSet::solve`]): impacts that are still
//!    approaching faster than the resting speed, then resting and sliding
//!    contact as inequality rows — λₙ ≥ 0, |λₜ| ≤ μ λₙ (μ_s while sticking,
//!    μ_k while sliding), rolling-resistance torque |τ| ≤ μ_r λₙ for round
//!    shapes — solved by block projected Gauss–Seidel ([`crate::solver::pgs`]),
//!    warm-started by contact identity. The impulse found is spread over the
//!    step as the integrator would have integrated a constant force (position
//!    weight: 1 for symplectic Euler, ½ for the second- and fourth-order
//!    methods, 0 for explicit Euler), so a resting body stays exactly where it
//!    is and a sliding one follows the closed form. Remaining penetration
//!    deeper than the slop is projected out (positions only, nonlinear
//!    Gauss–Seidel on the linearised gaps, Box2D v2.4's position solver);
//! 5. **`project_penetration`** ([`projection`]): what is still deeper than
//!    the slop is projected out on the true gaps, the narrowphase evaluated
//!    again pair by pair, which also measures the overlap the summary
//!    reports as `max_penetration`. Where it pushes a body back by Δ, the
//!    velocity carrying the body back along −Δ is removed, up to |Δ|/h
//!    (`World::contact_stages`): without it a jammed pile kept velocities
//!    that its linearised rows allowed and the projection undid every step
//!    (balls_in_box: a still pile at a median 5.8 m/s).
//!
//! # The soft step
//!
//! `contacts.solver: SoftStep(...)` ([`ContactSolver::SoftStep`]) replaces
//! the integrator and stages 2–5 by Box2D v3's soft step ([`soft_step`]):
//! forces once per step, `broadphase` over the motion they predict, one
//! `narrowphase` with a speculative margin, then sub-steps of velocity
//! integration, warm start, soft solve, position integration and relax
//! (`integrate` and `contact_solve` in `stage_ms`), and a restitution pass.
//! Fast on tall stacks, at the price of soft contacts (a stack sags by the
//! springs' deflection), no exact impact times, and no joints (refused).
//! The step itself keeps only the impulses for the next warm start and the
//! largest penetration; the contacts for output ([`ContactSet::contacts`]:
//! the contacts CSV, reactions, tests) are written from the step's kept
//! lanes on the first read after the step, so a run that reads none pays
//! for none (Box2D stores the impulses only, too).
//!
//! # Contacts and joints
//!
//! Joints stay exact: their rows keep the sparse direct solve
//! ([`crate::constraint::system`]), contacts are a separate PGS. When a
//! contact body also carries joints, the world alternates the two (block
//! Gauss–Seidel between the subsystems): contact PGS, then the joints'
//! velocity projection (M-orthogonal, exact), `joint_passes` times, and the
//! step's drift projection is the last thing to touch the state. So the
//! joint error is the one of the projection (≤ 1e-10), whatever the contacts
//! do; what the alternation leaves inexact is the contact side (a contact
//! may be left slightly approaching, corrected next step). Why not PGS on the
//! Schur complement? It needs A⁻¹ of the equality block applied to every
//! contact column at every sweep; the alternation reuses the existing
//! factorisation path unchanged and gives the same fixed point.
//!
//! # Energy
//!
//! Impacts and contact forces do work: the kinetic energy an impact removes
//! and the mechanical energy (kinetic + gravity) the contact stage changes
//! are added to the world's non-conservative work, so the energy balance of
//! a run with impacts and friction stays closed.

pub mod force;
pub mod impact;
pub mod material;
pub mod narrowphase;
pub mod projection;
pub mod resting;
pub mod soft_step;
pub mod toi;

use std::collections::HashMap;

use glam::{DVec2, Vec2};
use serde::{Deserialize, Serialize};

use crate::body::Body;
use crate::broadphase::{Aabb, FatBoxPairs, FatPairStats, GridBroadphase, SweepAndPrune};
use crate::constraint::ConstraintSet;
use crate::surface::Surface;
pub use force::ContactForce;
pub use material::{Material, MixRule};
use narrowphase::{ManifoldPoint, Pose};

/// Below this many bodies `Auto` picks sweep-and-prune whatever the sizes.
pub const GRID_MIN_BODIES: usize = 4096;

/// Which broadphase finds the body–body candidate pairs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum BroadphaseChoice {
    /// The grid when the bounding radii spread by less than 4× and there are
    /// at least [`GRID_MIN_BODIES`] bodies, else sweep-and-prune.
    #[default]
    Auto,
    /// Uniform grid ([`GridBroadphase`]).
    Grid,
    /// Sweep-and-prune ([`SweepAndPrune`]).
    SweepAndPrune,
}

/// Which solver handles resting contact (scene field `contacts.solver`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum ContactSolver {
    /// Time of impact, exact impacts, block PGS with position projection
    /// (the stages above): closed forms to 1e-9, joints kept exact.
    #[default]
    Exact,
    /// Box2D v3's soft step ([`soft_step`]): sub-steps, soft contacts,
    /// warm start, relax and restitution passes; fast on tall stacks, no
    /// exact impact times, stacks sag by the contact springs' deflection.
    SoftStep(soft_step::SoftStepSettings),
}

/// Contact settings of a world (scene field `contacts`).
#[derive(Clone, Debug, PartialEq)]
pub struct ContactSettings {
    /// Contacts act at all.
    pub enabled: bool,
    /// How a body's material and its partner's combine.
    pub mix: MixRule,
    /// Broadphase for body–body pairs.
    pub broadphase: BroadphaseChoice,
    /// Bodies joined by a constraint collide too.
    pub collide_connected: bool,
    /// Below this approach speed (m/s) a contact is resting, not an impact
    /// (no micro-bounces); `None`: 2·|g|·dt, the speed gravity gives in two steps.
    pub resting_speed: Option<f64>,
    /// Penetration tolerated before positions are projected, and the gap
    /// below which two outlines touch (m); `None`: 0.5 % of the smallest
    /// dynamic body's bounding radius.
    pub slop: Option<f64>,
    /// PGS sweeps per solve (at most).
    pub iterations: usize,
    /// PGS stops when the largest impulse change is below this × the largest impulse.
    pub tolerance: f64,
    /// Alternations contact PGS ↔ joint velocity projection.
    pub joint_passes: usize,
    /// Time-of-impact events handled per step at most; later ones in the
    /// same step are met by the end-of-step impact pass.
    pub max_impact_events: usize,
    /// Contact material of each body, by body index (missing: the default material).
    pub body_materials: Vec<Material>,
    /// The resting-contact solver.
    pub solver: ContactSolver,
}

impl ContactSettings {
    /// The material of body `i` (missing: the default material).
    fn body_material(&self, i: usize) -> Material {
        self.body_materials.get(i).copied().unwrap_or_default()
    }

    /// The material of the pair of body `a` and partner `b`, by the mix
    /// rule (on the settings, not the contact set, so that the soft step's
    /// prepare reads it from several threads).
    fn mixed(&self, surfaces: &[Surface], a: usize, b: Partner) -> Material {
        let other = match b {
            Partner::Body(j) => self.body_material(j),
            Partner::Surface(s) => surface_material(&surfaces[s]),
        };
        self.mix.combine(&self.body_material(a), &other)
    }
}

impl Default for ContactSettings {
    fn default() -> Self {
        Self {
            enabled: false,
            mix: MixRule::Min,
            broadphase: BroadphaseChoice::Auto,
            collide_connected: false,
            resting_speed: None,
            slop: None,
            iterations: 100,
            tolerance: 1e-12,
            joint_passes: 4,
            max_impact_events: 64,
            body_materials: Vec::new(),
            solver: ContactSolver::Exact,
        }
    }
}

/// The second party of a contact.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Partner {
    /// Another body (index), always greater than the first one's.
    Body(usize),
    /// A static surface (index into the world's surfaces).
    Surface(usize),
}

/// A candidate pair from the broadphase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pair {
    /// First body.
    pub a: usize,
    /// Its partner.
    pub b: Partner,
}

/// One contact point at the end of a step, with the impulses it took.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Contact {
    /// First body.
    pub body_a: usize,
    /// The other body or the surface.
    pub partner: Partner,
    /// Geometry: point, normal (from partner to a), gap, feature.
    pub manifold: ManifoldPoint,
    /// Mixed material.
    pub material: Material,
    /// (normal, tangent, rolling) impulses of the last solve (N·s, N·s, N·m·s).
    pub impulse: [f64; 3],
}

/// An impact that happened: where, when and how hard.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ImpactEvent {
    /// Simulated time of the impact (s).
    pub time: f64,
    /// First body.
    pub body_a: usize,
    /// Partner.
    pub partner: Partner,
    /// Normal relative velocity before (negative: approaching) (m/s).
    pub normal_velocity_before: f64,
    /// Normal relative velocity after (m/s).
    pub normal_velocity_after: f64,
    /// Normal impulse (N·s).
    pub impulse: f64,
    /// Contact point (m).
    pub point: DVec2,
}

/// A contact that produced a non-finite number.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("contact between '{body_a}' and '{partner}': {reason}")]
pub struct ContactError {
    /// First body's name.
    pub body_a: String,
    /// Partner's name (a body name, or `surface <i>`).
    pub partner: String,
    /// What was wrong.
    pub reason: String,
}

/// The contact state of a world: settings, candidate pairs, the contacts of
/// the last step (for output and warm starting) and the impacts so far.
#[derive(Clone, Debug, Default)]
pub struct ContactSet {
    /// Settings.
    pub settings: ContactSettings,
    /// Candidate pairs of the current step.
    pairs: Vec<Pair>,
    /// The body–body broadphase the last call used ([`ContactSet::broadphase_used`]).
    broadphase_used: BroadphaseChoice,
    /// Contacts at the end of the last step.
    contacts: Vec<Contact>,
    /// Impulses by contact identity, for warm starting.
    warm: HashMap<(usize, Partner, u32), ([f64; 3], bool)>,
    /// Impacts since the last [`ContactSet::take_impacts`].
    impacts: Vec<ImpactEvent>,
    /// Largest penetration seen after any step (m).
    max_penetration: f64,
    scratch: Vec<ManifoldPoint>,
    /// The true-gap projection's rows and positions ([`projection`]).
    projection_rows: Vec<projection::PositionRow>,
    projection_q: Vec<f64>,
    projection_moved: Vec<bool>,
    projection_inv: Vec<f64>,
    aabbs: Vec<Aabb>,
    /// The body–surface pairs of each piece of the broadphase's per-body
    /// pass (one buffer per piece, so that the pieces run on any thread).
    surface_pairs: Vec<Vec<Pair>>,
    body_pairs: Vec<[u32; 2]>,
    /// The pairs of bodies joined by a constraint, sorted (broadphase buffer).
    joined: Vec<(usize, usize)>,
    grid: Scratch<GridBroadphase>,
    sweep: Scratch<SweepAndPrune>,
    /// The body–body candidates kept between calls (fat boxes).
    fat_pairs: Scratch<FatBoxPairs>,
    /// How the broadphase takes each surface's distance (a kept buffer).
    surface_distances: Vec<SurfaceDistance>,
    /// Each body's [`narrowphase::outline_hull`], body frame (built once).
    hulls: Vec<Vec<DVec2>>,
    /// Bumped each time `hulls` is rebuilt: what is derived from the hulls
    /// (the soft step's hull sizes) is recomputed when it changes.
    hulls_generation: u64,
    /// The integrator's [`resting::position_weight`], set by the world each step.
    pub position_weight: f64,
    /// The soft-step solver's manifolds and buffers.
    soft: soft_step::SoftState,
    /// The soft step's contacts for output, written on first read.
    soft_contacts: LazyContacts,
}

/// The contacts of the last soft step, written from its kept lanes on the
/// first read after the step and kept until the next step's broadphase
/// ([`ContactSet::contacts`]): the step itself needs only the impulses and
/// the largest penetration, so a run that reads no contacts writes none.
#[derive(Default)]
struct LazyContacts {
    /// The finish of a soft step ran and nothing has overwritten its lanes:
    /// the contacts can be (or have been) written.
    live: bool,
    /// The list, once written.
    list: std::sync::OnceLock<Vec<Contact>>,
    /// An earlier step's list, to be written over (no allocation per step).
    spare: std::sync::Mutex<Vec<Contact>>,
}

impl LazyContacts {
    /// A soft step finished: its contacts are written on the next read.
    fn finished(&mut self) {
        self.expire();
        self.live = true;
    }

    /// The lanes are about to be overwritten (a new step's broadphase): the
    /// list, if written, becomes the spare buffer.
    fn expire(&mut self) {
        self.live = false;
        if let Some(list) = self.list.take() {
            *self.spare.get_mut().unwrap_or_else(std::sync::PoisonError::into_inner) = list;
        }
    }
}

impl Clone for LazyContacts {
    /// The same list (written or not); the spare buffer starts empty.
    fn clone(&self) -> Self {
        Self { live: self.live, list: self.list.clone(), spare: Default::default() }
    }
}

impl std::fmt::Debug for LazyContacts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyContacts").field("live", &self.live).field("list", &self.list.get()).finish()
    }
}

/// Bodies from which the broadphase's per-body pass (boxes, surface pairs)
/// runs on the pool.
const BROADPHASE_PARALLEL_BODIES: usize = 2048;

/// Pieces per thread of that pass (a few, for balance).
const BROADPHASE_PIECES_PER_THREAD: usize = 2;

/// What the broadphase's per-body pass reads.
struct BodyPass<'a> {
    bodies: &'a [Body],
    surfaces: &'a [Surface],
    /// How each surface's signed distance is taken (one per surface).
    distances: &'a [SurfaceDistance],
    q0: &'a [f64],
    q1: &'a [f64],
    slop: f64,
}

/// A surface's signed distance as the broadphase reads it: a line's unit
/// normal taken once per call instead of once per body, bit for bit
/// `SurfaceGeometry::closest(p).distance` (`(p − point)·normal.normalize()`);
/// other geometries through `closest`. Kept in a buffer of the contact set
/// (no allocation per call).
#[derive(Clone, Copy, Debug)]
enum SurfaceDistance {
    /// A line through `point` with unit normal `normal`.
    Line { point: DVec2, normal: DVec2 },
    /// Any other geometry: its `closest`.
    Other,
}

impl SurfaceDistance {
    fn of(surface: &Surface) -> Self {
        match &surface.geometry {
            crate::surface::SurfaceGeometry::Line { point, normal } => {
                Self::Line { point: *point, normal: normal.normalize() }
            }
            _ => Self::Other,
        }
    }

    /// The signed distance of `p` (m) from `surface` (the one this was
    /// made of): the bits of `closest(p).distance`.
    #[inline]
    fn at(&self, surface: &Surface, p: DVec2) -> f64 {
        match self {
            Self::Line { point, normal } => (p - *point).dot(*normal),
            Self::Other => surface.geometry.closest(p).distance,
        }
    }
}

/// The smallest and largest bounding radius of some bodies (+∞ and 0 if
/// none), and whether one of them is fixed.
#[derive(Clone, Copy)]
struct RadiusRange {
    lo: f64,
    hi: f64,
    any_fixed: bool,
}

impl BodyPass<'_> {
    /// The bodies from `first` on (one per entry of `aabbs`): each one's box
    /// swept between `q0` and `q1`, grown by its bounding radius and the
    /// slop, into `aabbs`; its surface pairs (its bounding disc swept along
    /// the chord against the signed distance) into `out`, cleared first.
    fn piece(&self, first: usize, aabbs: &mut [Aabb], out: &mut Vec<Pair>) -> RadiusRange {
        let BodyPass { bodies, surfaces, distances, q0, q1, slop } = *self;
        out.clear();
        let mut range = RadiusRange { lo: f64::INFINITY, hi: 0.0, any_fixed: false };
        let pos = |q: &[f64], i: usize| DVec2::new(q[3 * i], q[3 * i + 1]);
        for (k, aabb) in aabbs.iter_mut().enumerate() {
            let i = first + k;
            let b = &bodies[i];
            let radius = b.shape.bounding_radius();
            (range.lo, range.hi) = (range.lo.min(radius), range.hi.max(radius));
            range.any_fixed |= b.fixed;
            let r = radius + slop;
            let (p0, p1) = (pos(q0, i), pos(q1, i));
            let lo = p0.min(p1) - DVec2::splat(r);
            let hi = p0.max(p1) + DVec2::splat(r);
            *aabb = Aabb::new(down(lo), up(hi));
            if b.fixed {
                continue;
            }
            // The pair is kept iff the distance is at most `reach` =
            // radius + slop + |p1 − p0|/2. `bound` is at least `reach` as
            // computed (|v| ≤ |vx| + |vy|, and the relative margin 1e-9 is
            // far above the few roundings of either), so a surface farther
            // than `bound` is out without the square root; the others are
            // tested against `reach` itself, as before.
            let chord = p1 - p0;
            let base = radius + slop;
            let half_sides = 0.5 * (chord.x.abs() + chord.y.abs());
            let bound = base + 1e-9 * base.abs() + half_sides * (1.0 + 1e-9);
            let mid = 0.5 * (p0 + p1);
            for (s, surface) in surfaces.iter().enumerate() {
                let distance = distances[s].at(surface, mid);
                if distance > bound {
                    continue;
                }
                let reach = radius + slop + 0.5 * chord.length();
                if distance <= reach {
                    out.push(Pair { a: i, b: Partner::Surface(s) });
                }
            }
        }
        range
    }
}

/// A broadphase's reusable buffers (kept between steps: no per-step
/// allocation once they have grown); a clone starts with empty ones.
#[derive(Default)]
struct Scratch<T>(T);

impl<T: Default> Clone for Scratch<T> {
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl<T> std::fmt::Debug for Scratch<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(std::any::type_name::<T>())
    }
}

impl ContactSet {
    /// Contact handling with these settings.
    pub fn new(settings: ContactSettings) -> Self {
        Self { settings, ..Self::default() }
    }

    /// Whether contacts act.
    pub fn enabled(&self) -> bool {
        self.settings.enabled
    }

    /// The contacts at the end of the last step. With the soft step they
    /// are written from the step's kept lanes on the first call after the
    /// step (on the pool for many) and kept until the next step's
    /// broadphase, so a run that never reads them does not pay for them;
    /// between that broadphase and the step's end (and after a soft step
    /// that failed before its finish) the list is empty.
    pub fn contacts(&self) -> &[Contact] {
        if !self.soft_contacts.live {
            return &self.contacts;
        }
        self.soft_contacts.list.get_or_init(|| {
            let spare = self.soft_contacts.spare.lock();
            let mut list = std::mem::take(&mut *spare.unwrap_or_else(std::sync::PoisonError::into_inner));
            self.soft_write_contacts(&mut list);
            list
        })
    }

    /// The body–body broadphase the last call used: `Grid` or
    /// `SweepAndPrune` (`Auto` resolved by the bodies' count and radii, or
    /// the scene's choice); `Auto` before the first call.
    pub fn broadphase_used(&self) -> BroadphaseChoice {
        self.broadphase_used
    }

    /// The candidate pairs of the last step.
    pub fn pairs(&self) -> &[Pair] {
        &self.pairs
    }

    /// What the body–body broadphase's kept pairs did so far (rebuilds,
    /// updates, bodies placed again; see [`FatBoxPairs`]).
    pub fn broadphase_stats(&self) -> FatPairStats {
        self.fat_pairs.0.stats()
    }

    /// Impacts recorded since the last call (the list is emptied).
    pub fn take_impacts(&mut self) -> Vec<ImpactEvent> {
        std::mem::take(&mut self.impacts)
    }

    /// Impacts recorded so far (not emptied).
    pub fn impacts(&self) -> &[ImpactEvent] {
        &self.impacts
    }

    /// Largest penetration seen after any step so far (m, ≥ 0).
    pub fn max_penetration(&self) -> f64 {
        self.max_penetration
    }

    /// The material of body `i`.
    pub fn body_material(&self, i: usize) -> Material {
        self.settings.body_material(i)
    }

    /// The slop for these bodies (see [`ContactSettings::slop`]).
    pub fn slop(&self, bodies: &[Body]) -> f64 {
        self.settings.slop.unwrap_or_else(|| {
            let r = bodies.iter().filter(|b| !b.fixed).map(|b| b.shape.bounding_radius()).fold(f64::INFINITY, f64::min);
            if r.is_finite() { 0.005 * r } else { 1e-3 }
        })
    }

    /// The resting speed for this gravity and step.
    pub fn resting_speed(&self, gravity: DVec2, dt: f64) -> f64 {
        self.settings.resting_speed.unwrap_or(2.0 * gravity.length() * dt)
    }

    fn mixed(&self, surfaces: &[Surface], a: usize, b: Partner) -> Material {
        self.settings.mixed(surfaces, a, b)
    }

    /// Stage `broadphase`: candidate pairs from the boxes swept between the
    /// positions `q0` and `q1` (3 per body).
    pub fn broadphase(
        &mut self,
        bodies: &[Body],
        surfaces: &[Surface],
        constraints: &ConstraintSet,
        q0: &[f64],
        q1: &[f64],
    ) {
        let slop = self.slop(bodies);
        self.broadphase_within(bodies, surfaces, constraints, q0, q1, slop);
    }

    /// [`ContactSet::broadphase`] with the bounding discs grown by `margin`
    /// (the slop there; the true-gap projection's reach in [`projection`]).
    pub(crate) fn broadphase_within(
        &mut self,
        bodies: &[Body],
        surfaces: &[Surface],
        constraints: &ConstraintSet,
        q0: &[f64],
        q1: &[f64],
        margin: f64,
    ) {
        let slop = margin;
        // A new step: the last soft step's lanes are about to be rebuilt.
        self.soft_contacts.expire();
        self.pairs.clear();
        // Per body: its box, its surface pairs (in body order, piece by
        // piece), and the range of bounding radii and whether any body is
        // fixed, for the choices below; on the pool in pieces when there
        // are many bodies (each body's box and pairs are a function of that
        // body alone, and a smallest or largest radius or an "any" does not
        // depend on the order it is taken in: the same bits and pairs at any
        // pool size).
        let n = bodies.len();
        let threads = rayon::current_num_threads();
        let piece = if threads > 1 && n >= BROADPHASE_PARALLEL_BODIES {
            n.div_ceil(BROADPHASE_PIECES_PER_THREAD * threads)
        } else {
            n.max(1)
        };
        let pieces = n.div_ceil(piece);
        if self.surface_pairs.len() < pieces {
            self.surface_pairs.resize_with(pieces, Vec::new);
        }
        // Kept from the last call and written over (every entry below).
        self.aabbs.resize(n, Aabb::new(Vec2::ZERO, Vec2::ZERO));
        self.surface_distances.clear();
        self.surface_distances.extend(surfaces.iter().map(SurfaceDistance::of));
        let pass = BodyPass { bodies, surfaces, distances: &self.surface_distances, q0, q1, slop };
        let buffers = &mut self.surface_pairs[..pieces];
        let both = |a: RadiusRange, b: RadiusRange| RadiusRange {
            lo: a.lo.min(b.lo),
            hi: a.hi.max(b.hi),
            any_fixed: a.any_fixed || b.any_fixed,
        };
        let none = RadiusRange { lo: f64::INFINITY, hi: 0.0, any_fixed: false };
        let range = if pieces > 1 {
            use rayon::prelude::*;
            self.aabbs
                .par_chunks_mut(piece)
                .zip(buffers.par_iter_mut())
                .enumerate()
                .map(|(k, (aabbs, out))| pass.piece(k * piece, aabbs, out))
                .reduce(|| none, both)
        } else {
            self.aabbs
                .chunks_mut(piece)
                .zip(buffers.iter_mut())
                .enumerate()
                .map(|(k, (aabbs, out))| pass.piece(k * piece, aabbs, out))
                .fold(none, both)
        };
        for out in &self.surface_pairs[..pieces] {
            self.pairs.extend_from_slice(out);
        }
        // Body–body.
        let choice = match self.settings.broadphase {
            BroadphaseChoice::Auto => {
                let RadiusRange { lo, hi, .. } = range;
                // The grid's per-thread tables cost more than a sort below a
                // few thousand boxes (measured: 3 ms against 0.3 ms per step
                // for the 210-box pyramid on 2 cores).
                if hi <= 4.0 * lo && bodies.len() >= GRID_MIN_BODIES {
                    BroadphaseChoice::Grid
                } else {
                    BroadphaseChoice::SweepAndPrune
                }
            }
            c => c,
        };
        self.broadphase_used = choice;
        let mut out = std::mem::take(&mut self.body_pairs);
        out.clear();
        // The body–body pairs: the candidates kept from the last call
        // ([`FatBoxPairs`]), brought up to date for the moved bodies (the
        // chosen broadphase finds them from scratch on the fat boxes when
        // many moved) and filtered on the current boxes: the same pairs, in
        // the same order, as the chosen broadphase on the current boxes.
        if bodies.len() > 1 {
            let (grid, sweep) = (&mut self.grid.0, &mut self.sweep.0);
            let mut rebuild = |boxes: &[Aabb], pairs: &mut Vec<[u32; 2]>| match choice {
                BroadphaseChoice::Grid => grid.find_pairs(boxes, pairs),
                _ => sweep.find_pairs(boxes, pairs),
            };
            self.fat_pairs.0.update(&self.aabbs, &mut rebuild);
        }
        // The jointed pairs, sorted, in a buffer kept between calls (the
        // broadphase runs several times a step: no set built per call).
        let mut joined = std::mem::take(&mut self.joined);
        joined.clear();
        if !self.settings.collide_connected {
            joined.extend(
                constraints.iter().filter_map(|c| c.body_b.map(|b| (c.body_a.0.min(b.0), c.body_a.0.max(b.0)))),
            );
            joined.sort_unstable();
        }
        if bodies.len() < 2 {
        } else if joined.is_empty() && !range.any_fixed {
            // Nothing to leave out (a pile on the ground): the pairs as
            // found, without reading each pair's two bodies.
            self.fat_pairs.0.filter_into(&self.aabbs, &mut self.pairs, |[i, j]| Pair {
                a: i as usize,
                b: Partner::Body(j as usize),
            });
        } else {
            self.fat_pairs.0.filter_into(&self.aabbs, &mut out, |pair| pair);
            for &[i, j] in &out {
                let (i, j) = (i as usize, j as usize);
                if (bodies[i].fixed && bodies[j].fixed) || joined.binary_search(&(i, j)).is_ok() {
                    continue;
                }
                self.pairs.push(Pair { a: i, b: Partner::Body(j) });
            }
        }
        self.body_pairs = out;
        self.joined = joined;
    }

    /// Builds the per-body outlines once (shapes do not change during a run).
    pub(crate) fn ensure_hulls(&mut self, bodies: &[Body]) {
        if self.hulls.len() != bodies.len() {
            self.hulls = bodies.iter().map(|b| narrowphase::outline_hull(&b.shape)).collect();
            self.hulls_generation += 1;
        }
    }

    /// Contact points of one pair at positions `q`, gap ≤ `margin`.
    fn collide_pair(&mut self, bodies: &[Body], surfaces: &[Surface], pair: Pair, q: &[f64], margin: f64) {
        self.scratch.clear();
        collide_pair_into(&self.hulls, bodies, surfaces, pair, q, margin, &mut self.scratch);
    }

    /// Stage `narrowphase`: the contacts at positions `q` (gap ≤ slop), with
    /// their mixed materials and warm-start impulses. A non-finite gap or
    /// normal is an error naming the pair.
    pub fn narrowphase(&mut self, bodies: &[Body], surfaces: &[Surface], q: &[f64]) -> Result<(), ContactError> {
        let slop = self.slop(bodies);
        self.ensure_hulls(bodies);
        self.contacts.clear();
        for k in 0..self.pairs.len() {
            let pair = self.pairs[k];
            self.collide_pair(bodies, surfaces, pair, q, slop);
            let material = self.mixed(surfaces, pair.a, pair.b);
            for m in std::mem::take(&mut self.scratch) {
                if !(m.gap.is_finite() && m.normal.is_finite() && m.point.is_finite()) {
                    return Err(self.error(bodies, pair, "the contact gap or normal is not finite (NaN state)"));
                }
                let impulse = self.warm.get(&(pair.a, pair.b, m.feature)).map(|w| w.0).unwrap_or_default();
                self.contacts.push(Contact { body_a: pair.a, partner: pair.b, manifold: m, material, impulse });
            }
        }
        Ok(())
    }

    fn error(&self, bodies: &[Body], pair: Pair, reason: &str) -> ContactError {
        ContactError {
            body_a: bodies[pair.a].name.clone(),
            partner: partner_name(bodies, pair.b),
            reason: reason.to_string(),
        }
    }
}

/// A body's name or `surface <i>`.
pub fn partner_name(bodies: &[Body], p: Partner) -> String {
    match p {
        Partner::Body(j) => bodies[j].name.clone(),
        Partner::Surface(s) => format!("surface {s}"),
    }
}

/// The material of a surface from its fields.
pub fn surface_material(s: &Surface) -> Material {
    Material {
        friction: s.friction,
        kinetic_friction: s.kinetic_friction,
        restitution: s.restitution,
        rolling_resistance: s.rolling_resistance,
    }
}

/// The next f32 at or below `x` (per component).
fn down(x: DVec2) -> Vec2 {
    // Both candidates computed and one selected (the rounding goes either
    // way at random: a branch would mispredict about half the time).
    let f = |v: f64| {
        let r = v as f32;
        select_f32((r as f64) > v, r.next_down(), r)
    };
    Vec2::new(f(x.x), f(x.y))
}

/// The next f32 at or above `x`.
fn up(x: DVec2) -> Vec2 {
    let f = |v: f64| {
        let r = v as f32;
        select_f32((r as f64) < v, r.next_up(), r)
    };
    Vec2::new(f(x.x), f(x.y))
}

/// `if take { a } else { b }` on the bits, without a branch.
#[inline]
fn select_f32(take: bool, a: f32, b: f32) -> f32 {
    let mask = u32::from(take).wrapping_neg();
    f32::from_bits((a.to_bits() & mask) | (b.to_bits() & !mask))
}

/// Inverse masses, 3 per body.
pub fn inverse_masses(bodies: &[Body]) -> Vec<f64> {
    bodies.iter().flat_map(|b| b.inverse_mass()).collect()
}

/// Kinetic + gravitational energy at a flat state.
pub fn mechanical_energy(bodies: &[Body], q: &[f64], v: &[f64], gravity: DVec2) -> f64 {
    bodies
        .iter()
        .enumerate()
        .filter(|(_, b)| !b.fixed)
        .map(|(i, b)| {
            let (vx, vy, w) = (v[3 * i], v[3 * i + 1], v[3 * i + 2]);
            0.5 * b.mass * (vx * vx + vy * vy) + 0.5 * b.inertia * w * w
                - b.mass * gravity.dot(DVec2::new(q[3 * i], q[3 * i + 1]))
        })
        .sum()
}

/// The contact points of one pair at positions `q` within `margin`,
/// appended to `out` (`hulls`: the cached body-frame outlines): a function of
/// its inputs only, so that pairs can be collided on any thread.
fn collide_pair_into(
    hulls: &[Vec<DVec2>],
    bodies: &[Body],
    surfaces: &[Surface],
    pair: Pair,
    q: &[f64],
    margin: f64,
    out: &mut Vec<ManifoldPoint>,
) {
    let pose = |i: usize| Pose { position: DVec2::new(q[3 * i], q[3 * i + 1]), angle: q[3 * i + 2] };
    match pair.b {
        Partner::Body(j) => narrowphase::collide_hulls(
            &bodies[pair.a].shape,
            &hulls[pair.a],
            &pose(pair.a),
            &bodies[j].shape,
            &hulls[j],
            &pose(j),
            margin,
            out,
        ),
        // Polygons against the cached outline (the very vertices
        // `narrowphase::hull` would build: no allocation per pair).
        Partner::Surface(s) if narrowphase::hull_is_polygon(&bodies[pair.a].shape) => {
            narrowphase::surface::collide_polygon_surface(
                &hulls[pair.a],
                &pose(pair.a),
                &surfaces[s].geometry,
                margin,
                out,
            )
        }
        Partner::Surface(s) => narrowphase::surface::collide_surface(
            &bodies[pair.a].shape,
            &pose(pair.a),
            &surfaces[s].geometry,
            margin,
            out,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shape::Shape;
    use crate::surface::SurfaceGeometry;

    fn surface(geometry: SurfaceGeometry) -> Surface {
        Surface {
            geometry,
            friction: 0.5,
            kinetic_friction: None,
            restitution: 0.0,
            rolling_resistance: 0.0,
            material: None,
        }
    }

    /// The broadphase's surface pairs are those of the plain test
    /// `closest(mid).distance ≤ radius + slop + |p1 − p0|/2` (before the
    /// bound that skips the square root, and the line's normal taken once),
    /// with thousands of bodies placed at that threshold to within a few
    /// roundings, on either side, against two lines and a circle.
    #[test]
    fn surface_pairs_are_those_of_the_plain_test() {
        let surfaces = vec![
            surface(SurfaceGeometry::Line { point: DVec2::new(0.3, -0.1), normal: DVec2::new(0.2, 3.0) }),
            surface(SurfaceGeometry::Line { point: DVec2::new(-4.0, 0.0), normal: DVec2::new(1.0, 0.0) }),
            surface(SurfaceGeometry::Circle { center: DVec2::new(5.0, 5.0), radius: 2.0, inside: false }),
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut uniform = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        let slop = 0.01;
        let n0 = DVec2::new(0.2, 3.0).normalize();
        let (mut bodies, mut q0, mut q1) = (Vec::new(), Vec::new(), Vec::new());
        for i in 0..6000 {
            let half = DVec2::new(0.1 + uniform(), 0.1 + uniform());
            let shape = Shape::Box { half_extents: half };
            let radius = shape.bounding_radius();
            let chord = match i % 4 {
                0 => DVec2::ZERO,
                1 => DVec2::new(uniform() - 0.5, uniform() - 0.5) * 1e-3,
                _ => DVec2::new(uniform() - 0.5, uniform() - 0.5) * 4.0,
            };
            let reach = radius + slop + 0.5 * chord.length();
            // At the first line's threshold, a few roundings either side
            // (every other body), or anywhere.
            let mid = if i % 2 == 0 {
                let off = [0.0, 1e-16, -1e-16, 4e-16, -4e-16, 1e-12, -1e-12][i / 2 % 7] * reach;
                DVec2::new(0.3, -0.1) + n0 * (reach + off) + n0.perp() * (uniform() - 0.5) * 10.0
            } else {
                DVec2::new(uniform() * 14.0 - 7.0, uniform() * 14.0 - 7.0)
            };
            let (a, b) = (mid - 0.5 * chord, mid + 0.5 * chord);
            q0.extend([a.x, a.y, 0.0]);
            q1.extend([b.x, b.y, 0.0]);
            let body = Body::builder(format!("b{i}"), shape).fixed(i % 97 == 5).build().expect("body");
            bodies.push(body);
        }
        let mut set = ContactSet::new(ContactSettings { enabled: true, slop: Some(slop), ..Default::default() });
        set.broadphase(&bodies, &surfaces, &ConstraintSet::default(), &q0, &q1);
        let got: Vec<Pair> = set.pairs().iter().copied().filter(|p| matches!(p.b, Partner::Surface(_))).collect();
        let mut want = Vec::new();
        for (i, b) in bodies.iter().enumerate().filter(|(_, b)| !b.fixed) {
            let (p0, p1) = (DVec2::new(q0[3 * i], q0[3 * i + 1]), DVec2::new(q1[3 * i], q1[3 * i + 1]));
            let reach = b.shape.bounding_radius() + slop + 0.5 * (p1 - p0).length();
            let mid = 0.5 * (p0 + p1);
            for (s, surface) in surfaces.iter().enumerate() {
                if surface.geometry.closest(mid).distance <= reach {
                    want.push(Pair { a: i, b: Partner::Surface(s) });
                }
            }
        }
        // Of the ~3,000 bodies at the first line's threshold, some in and
        // some out (the roundings of `reach` and of the distance decide).
        let at_threshold = want.iter().filter(|p| p.a % 2 == 0 && p.b == Partner::Surface(0)).count();
        assert!(at_threshold > 500 && at_threshold < 2500, "{at_threshold} of the bodies at the threshold pair");
        assert!(got == want, "{} surface pairs, {} by the plain test", got.len(), want.len());
    }

    /// A line's distance as the broadphase takes it is the bits of
    /// `closest(p).distance`.
    #[test]
    fn line_distance_is_that_of_closest() {
        let geometry = SurfaceGeometry::Line { point: DVec2::new(0.7, -1.3), normal: DVec2::new(-0.3, 2.9) };
        let s = surface(geometry.clone());
        let distance = SurfaceDistance::of(&s);
        for k in 0..1000 {
            let p = DVec2::new((k as f64 * 0.37).sin() * 50.0, (k as f64 * 0.91).cos() * 50.0);
            assert_eq!(distance.at(&s, p).to_bits(), geometry.closest(p).distance.to_bits(), "{p}");
        }
    }
}
