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
//!    both derive from the scene by default (units, `docs/requirements.md`
//!    "Units and mass scale"): `hertz` an eighth of the sub-step rate,
//!    `push_speed` 10 slops per step (`settings.rs`);
//!    a positive gap s only lets the contact approach by s/h (speculative);
//! 4. **integrate positions**: x += h·v, φ += h·ω;
//! 5. **relax** (`relax_iterations` sweeps, no bias, rigid): the velocity
//!    the bias added is taken out again, so that pushing out of an overlap
//!    does not turn into a bounce; then Coulomb friction per point,
//!    |λₜ| ≤ μ λₙ, and rolling resistance |λᵣ| ≤ μᵣ Σλₙ for round shapes.
//!    Friction is solved here only, as Box2D v3.1 does (in the soft sweep
//!    only when `relax_iterations` is 0): solved against the biased
//!    velocities of step 3 it holds the tangential part of the push-out
//!    velocity, and a pyramid leans — the cause of most of the difference
//!    from Box2D's sag at its settings (20 rows, 4 sub-steps, 30 Hz: the top
//!    box moved (+17, −30) mm with friction in both sweeps, (−2, −30) mm
//!    now; Box2D v3: 30 mm down).
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
//! # Parallelism and layout
//!
//! Manifolds are coloured (`manifold::colour_at`, greedy in pair order, fixed
//! bodies and surfaces ignored, as Box2D v3's graph colouring): the manifolds
//! of one colour share no dynamic body. The prepare colours each manifold as
//! it is made and builds its constraint straight into its colour's array
//! (`SoftState::by_colour`, key order within a colour), so a colour is one
//! contiguous slice and nothing is copied to lay the constraints out. A
//! colour is stored four manifolds to a group (`lanes::SoftLanes`, structure
//! of arrays: one `[f64; 4]` per field, the last group padded with empty
//! lanes whose bodies are none), and the sweeps run four manifolds at once
//! (Box2D v3's `b2ContactConstraintSIMD`, in f64): the four manifolds'
//! velocities gathered (the motions by one 4×4 transpose, the velocities as
//! (x, y) pairs), the kernel on four-wide values, scattered back. Where the
//! processor has AVX (detected at run time) the kernel runs on one 256-bit
//! register per value written with the intrinsics (`lanes::avx::A4`); the
//! portable path uses plain lane-wise arithmetic on arrays, which LLVM packs
//! as it sees fit (it had packed the AVX kernel partly per lane too, which
//! the intrinsics fixed). Each lane does the scalar kernel's operations in
//! the same order, without fused multiply-add, and a point a lane lacks is
//! computed and discarded by a select (rolling resistance is skipped where
//! no lane has it): bitwise the scalar kernel's result on any x86-64
//! (`lanes::tests` checks every pass on both paths). The sequential overflow colour, whose manifolds may share a
//! body, and the restitution pass go lane by lane through the scalar kernel
//! (`SoftManifold::run`). What
//! only the last relax sweep and the restitution pass touch (the step's
//! impulse totals, the start-of-step normal velocities, the restitution)
//! lies beside it in `totals_by_colour` (same colour, same index), so that
//! the warm start, solve and relax sweeps stream less memory. After the step
//! only the impulses (`WarmImpulses`, 40 bytes per manifold, key order) are
//! kept for the next warm start.
//!
//! The sub-steps of a step are walked by one team of threads (`src/team.rs`,
//! shared with the population tier; `ContactSet::soft_substeps`): one phase
//! per colour and pass, and per sub-step one phase of body pieces for the
//! kick (v += h·a, the velocities before it kept) and one for the positions,
//! where the world's energy sums (the impulses' work, the kinetic energy
//! before and after each relax) run as chunks beside the pieces, since that
//! phase only reads the velocities. One team scope per step (before: one
//! per sub-step's warm start and solve, one per its relax, a rayon loop for
//! its positions, and the sums on the calling thread between them while the
//! pool waited); the same values, summed in the same order. The chunks of a
//! phase are claimed from both ends (`Participant::phase_from_ends`): with
//! two threads each takes the same end of every colour and body range, so
//! that the velocities it writes stay in its own cache from phase to phase. A colour of at least
//! [`crate::solver::pgs::PARALLEL_COLOUR_MIN`] manifolds is cut into two
//! chunks per thread (at least 64 manifolds), claimed as threads come free;
//! a smaller colour is one chunk. Each manifold reads and writes only its own
//! bodies' velocities, so the result is bitwise the same at every pool size,
//! for any split and whichever thread runs a chunk. A sweep matches its pass
//! once per chunk and runs a copy of the constraint kernel inlined for that
//! pass (no branch on the pass per constraint).
//!
//! The prepare runs in three parts. First the narrowphase of every candidate
//! pair, on the pool when there are at least 512 pairs and several threads:
//! the pairs are cut into four chunks per thread (at least 64 pairs), each
//! chunk writes its pairs' contact points into its own buffer
//! (`SoftState::narrow_points`, with each pair's end in `narrow_ends`) and
//! reports its first pair with a non-finite point (the error names the first
//! in key order); two boxes meet in the reference box's frame
//! (`narrowphase::polygon::box_box`, Box2D v3's `b2CollidePolygons`: each
//! box seen in the other's frame, the separations from its extents on the
//! axis-aligned normals, the clip in the reference face's frame), from each
//! box's rotation (cos, sin), and other polygons from their world outlines
//! (vertices, edge normals); both are filled before it
//! (`prepare::WorldPolygons`), once per body, in body order and in
//! parallel, instead of once per pair. Then one light sequential pass in pair order colours the manifolds
//! (a pair's points two at a time) from their bodies' colour masks only
//! (`manifold::colour_at`), giving each the next slot of its colour (its
//! lane), and takes the prefix sums the build and the finish need (each
//! chunk's first manifold, each manifold's first output contact). Last, the
//! build, on the pool in the narrowphase's chunks: each manifold's
//! constraint (effective masses, friction, the previous step's impulses
//! matched by pair and feature, the previous step's identities found by
//! bisection at a chunk's start and merged from there) is written straight
//! into its lane (`step::ColourSlots`: raw-pointer writes of one lane's
//! entries, each slot written by the one chunk that holds its manifold),
//! over the groups kept from the last step (sized first, then the last
//! group's unused lanes emptied: no empty group copied in per group), each
//! chunk asking for the cache lines of the slot 8 manifolds ahead. Called
//! from outside the pool, the whole prepare is handed to it once, so that
//! its parallel parts are joins inside the pool. What
//! the prepare reads of a body (inverse mass and inertia, fixed, round and
//! polygon flags, closing speed) is gathered once per step in body order, on
//! the pool from 2,048 bodies (`manifold::BodyFacts`), and the broadphase's
//! two sorted runs (surface pairs, then body pairs) are merged into key
//! order instead of sorted; the broadphase's own pass over the bodies (boxes,
//! surface pairs) runs in pieces on the pool from 2,048 bodies too.
//! A pair's points and a manifold's constraint are functions of that pair
//! alone, and the colouring runs in the same order as before: the same bits
//! at every pool size.
//!
//! Measured (100-row pyramid, 5,050 boxes, Box2D's settings: 4 sub-steps,
//! 30 Hz; `pyramid_quality -- 100 2`, CPU ms/step, 2-core machine, five
//! alternated runs, 27 Nov 2026, load 6–7; docs/benchmarks.md's "Speed at Box2D's
//! settings on 100 rows" has the table): 20.3 before these three changes,
//! 15.9 after (−22 %), Box2D v3 5.18 in the same session (3.1×, was 3.9×).
//! The narrowphase on the pool (same command, six alternated pairs,
//! 27 Nov 2026 04:11–04:20 UTC, load 4.3–6.9): CPU 15.2 → 14.7 ms/step
//! (medians; one thread: 15.2 → 14.3), wall 32.1 → 25.9 ms/step (the wall
//! time of a 2-core machine shared by other builds is mostly waiting for a
//! core), Box2D v3 5.06 CPU in the same session (2.9×).
//! The sweeps four constraints wide (same command, five alternated pairs,
//! 27 Nov 2026 06:17 UTC, load 8.6–10.3): CPU 14.0 → 11.7 ms/step (medians,
//! −16 %; one thread: 13.6 → 11.4), Box2D v3 4.65 CPU in the same session
//! (2.5×, was 3.0×).
//! The prepare and the polygon narrowphase without needless work (the
//! closest-points scan skipped where a vertex against the separating edge
//! already bounds it, no integer division for the next vertex, the clip's
//! edge direction as `n.perp()`; the broadphase's two sorted runs merged,
//! not sorted; the lane groups kept from step to step; each body's
//! `BodyFacts` once per step; same command, seven alternated pairs,
//! 27 Nov 2026 09:31 UTC, load 5.3–5.7): CPU 13.1 → 11.2 ms/step (medians,
//! −15 %; one thread: 12.5 → 10.6), Box2D v3 5.25 CPU in the same session
//! (2.1×, was 2.5×; at load 8.7–9.9: 13.3 → 11.8, Box2D 5.22).
//! The prepare's build, `BodyFacts` and the broadphase's per-body pass on the
//! pool, the finish's blank fill gone (same command, 2 threads, twelve
//! alternated pairs, 27 Nov 2026 11:31–11:40 UTC, load 4–5): wall 15.84 →
//! 14.29 ms/step, CPU 11.16 → 10.65 (medians; one thread: CPU 10.86 →
//! 10.44), Box2D v3 6.88 wall, 4.98 CPU in the same runs (2.1× both, was
//! 2.3× / 2.2×); the calling thread's share of the samples at 2 threads
//! 31.5 % → 12.7 %.
//! The prepare without its stalls (the features built in registers, the
//! materials mixed once per step when all bodies share one, the hull sizes
//! once per run, the colouring on mask slots, the whole prepare handed to
//! the pool once, the build's slots prefetched; same bits; docs/benchmarks.md's
//! pyramid11 round): the narrowphase and prepare's CPU time 2.81 → 2.60
//! ms/step (medians of 4 alternated pairs of `perf record` samples, 2
//! threads, 27 Nov 2026 14:28 UTC, load 4.9; one thread, whole step: CPU
//! 9.91 → 9.39); the wall time could not be told apart from the other
//! sessions' noise.
//! The sweeps in explicit AVX intrinsics, with the gathers as transposes
//! (`sweep11`; same command, four alternated pairs, 27 Nov 2026 14:29 UTC,
//! load 6): wall 14.66 → 13.01 ms/step, CPU 10.57 → 9.21, `contact_solve`
//! 7.88 → 5.57 (medians; one thread: CPU 9.62 → 8.37), Box2D v3 7.15 wall,
//! 4.89 CPU in the same runs (1.8× / 1.9×, was 2.1× / 2.2×; four more pairs
//! at load 2.3: wall 9.69 → 7.99, CPU 10.65 → 8.84, Box2D 5.35 / 5.55); the sweeps
//! alone (`lanes::tests::sweep_speed_on_the_pyramid`, one thread) 288 → 186
//! ns per group of four manifolds and sub-step. docs/benchmarks.md's
//! `sweep11` round has the per-point accounting against Box2D v3.
//! The box–box narrowphase in the reference box's frame (`narrow12`; a
//! change of results at round-off, checked against the world-outline
//! formula to 1e-12 m; same command, 2 threads, five alternated pairs, 27 Nov
//! 2026 17:00 UTC, load 5–6): the `narrowphase` stage 2.67 → 2.31 ms/step
//! (medians; one thread, four pairs: 2.89 → 2.42); docs/benchmarks.md's
//! `narrow12` round has the table.
//!
//! # Files
//!
//! - `settings.rs`: [`SoftStepSettings`] (scene fields, validation) and
//!   [`Softness`] (Catto's soft-constraint coefficients);
//! - `manifold.rs`: the contact constraint arrays (points, manifolds), their
//!   colouring and the prepare / warm-start / solve / relax / restitution
//!   passes over one manifold;
//! - `lanes.rs`: a colour's constraints four to a group (structure of
//!   arrays) and the sweeps over them four manifolds wide (AVX intrinsics
//!   where the processor has it), bitwise the scalar passes;
//! - `step.rs`: the step driver on [`ContactSet`](super::ContactSet) that
//!   [`crate::world::World`] calls stage by stage.

mod finish;
mod lanes;
mod manifold;
mod prepare;
mod settings;
mod step;
mod work;

pub use settings::{SoftStepSettings, Softness};
pub(crate) use work::{contact_impulse_work, kinetic_energy};

use lanes::SoftLanes;
use manifold::{SoftInfo, SoftTotals};

use super::{Pair, Partner};

impl Default for Partner {
    fn default() -> Self {
        Partner::Surface(0)
    }
}

/// Per-body motion since the start of the step: Δx, Δy, cos Δφ, sin Δφ.
pub type BodyDelta = [f64; 4];

/// The impulses of one manifold kept for the next step's warm start (key
/// order: 40 bytes instead of the whole ~300-byte constraint).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct WarmImpulses {
    /// Normal impulse of the last sub-step per point (N·s).
    normal: [f64; 2],
    /// Tangent impulse of the last sub-step per point (N·s).
    tangent: [f64; 2],
    /// Rolling-resistance impulse of the last sub-step (N·m·s).
    rolling: f64,
}

/// Solver state kept between steps (buffers reused: no per-step allocation
/// once they have grown).
#[derive(Clone, Debug, Default)]
pub struct SoftState {
    /// The constraints of each colour, contiguous, four to a group
    /// (colour `c` is `by_colour[c]`, its manifold `i` lane `i % 4` of group
    /// `i / 4`, the last group padded with empty lanes; the last colour,
    /// [`manifold::MAX_COLOURS`], is the sequential overflow colour). Built
    /// there directly by the prepare, in key order within a colour: no copy
    /// of the constraints to lay them out.
    by_colour: Vec<Vec<SoftLanes>>,
    /// The step totals and restitution data of each constraint, beside it
    /// (same colour, same index; its length is the colour's manifold count).
    totals_by_colour: Vec<Vec<SoftTotals>>,
    /// Where each manifold (key order) lies: (colour, index in it).
    place: Vec<(u16, u32)>,
    /// The previous step's warm-start impulses in key order.
    previous: Vec<WarmImpulses>,
    /// Their identities.
    previous_info: Vec<SoftInfo>,
    /// This step's impulses in key order (written by the finish).
    impulses: Vec<WarmImpulses>,
    /// Where each manifold's output contacts start (key order, one more
    /// entry than manifolds; the prefix sum of the point counts, taken by
    /// the prepare's colouring pass).
    contact_starts: Vec<u32>,
    /// The identities of this step's manifolds in key order.
    info: Vec<SoftInfo>,
    /// Some manifold has a restitution and a point approaching faster than
    /// `resting_speed`: the restitution pass is needed.
    bouncy: bool,
    /// The resting speed the prepare used for `bouncy`.
    resting_speed: f64,
    /// Colour masks per body, then the shared slot of the fixed bodies and
    /// surfaces (`manifold::colour_at`).
    used: Vec<u64>,
    /// Each body's slot in `used` this step (its own, or the shared one
    /// when fixed).
    colour_slots: Vec<u32>,
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
    /// The polygons' world outlines of this step's prepare.
    world_polygons: prepare::WorldPolygons,
    /// The prepare's narrowphase: the contact points of each chunk of pairs
    /// (one buffer per chunk, so that the chunks run on any thread).
    narrow_points: Vec<Vec<crate::contact::narrowphase::ManifoldPoint>>,
    /// Where each pair's points end in its chunk's buffer (pair order).
    narrow_ends: Vec<u32>,
    /// Each narrowphase chunk's first manifold (key order), then the
    /// manifold count: where each chunk's build writes its identities.
    chunk_manifolds: Vec<u32>,
    /// What the prepare reads of each body this step (body order).
    facts: Vec<manifold::BodyFacts>,
    /// The pairs' mixed materials of this step's prepare.
    materials: prepare::PairMaterials,
    /// The buffer the prepare merges the broadphase's pairs into (it and
    /// the contact set's pair list swap buffers each step).
    sorted_pairs: Vec<Pair>,
    /// Relax sweeps per sub-step (friction is solved in them; in the soft
    /// sweep only when there are none).
    relax_iterations: usize,
}
