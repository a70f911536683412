//! The CPU twin's substep loop (step 5 of [`crate::population`]): per
//! substep `stabilise` (9 colour phases; only in the substeps
//! [`super::PopulationParams::stabilises`] names), `predict`, `count_contacts`,
//! `iterations` × `sweep_positions` (9 colour phases each), the velocity
//! pass as `pair_impulses` (each pair once, by the ball that owns it; a
//! chunk's pairs [`contact::LANES`] at a time in SIMD lanes,
//! [`contact::pair_lanes`], each lane bitwise the scalar law) and
//! `finish_substep` (each ball's sums over its list entries — an entry's
//! four fields in the lanes of one SSE2 addition, each lane the scalar
//! addition: [`sum_sides`] — its obstacles, then x, v, ω, angle) — all the
//! substeps of a step as one list of phases walked by one team of threads
//! ([`crate::team`]): one rayon scope per step instead of one join per
//! colour and per pass.
//!
//! `predict` is a phase of its own only in the first substep and after a
//! stabilisation: otherwise each chunk of the previous substep's finish
//! phase predicts its balls right after finishing them (a ball's
//! prediction reads only its own new state), so a step of S substeps
//! without stabilisation walks S − 1 phase boundaries fewer, with the
//! same bits (docs/benchmarks.md, "population14": CPU time −1 to −2 % at
//! 2 threads, within the noise of a loaded machine).
//!
//! The passes are those of `shaders/population.wgsl`, pass for pass: ball
//! for ball but for the velocity pass, which the GPU computes per ball from
//! both sides of each pair and the twin once per pair, then sums per ball
//! in list order (the same numbers, bitwise: [`SideImpulse`]); the way the
//! work is handed to threads changes no result either (the argument is in
//! [`crate::team`]).

use std::ops::Range;

use glam::Vec2;

use super::contact::{self, LANES, Material, PairInputs, PairLaneImpulses, VelocityContact};
use super::cpu::{ACTIVE_SLOP, CELL_CHUNK, CHUNK, FAR_MARGIN, NO_MIRROR, SweepPair, obstacle_in_reach, pair_normal};
use super::stage_times::{PopulationStage, StageClock};
use super::{MAX_NEIGHBOURS, MAX_OBSTACLES, Population, state};
use crate::team::{Participant, Schedule, Shared, balanced_chunk};

/// The arrays the substeps write, shared by the team (each phase's writes
/// are disjoint: per ball, or per colour's 3 × 3 blocks).
struct Arrays {
    position: Shared<Vec2>,
    velocity: Shared<Vec2>,
    omega: Shared<f32>,
    angle: Shared<f32>,
    v_pre: Shared<Vec2>,
    x_pred: Shared<Vec2>,
    dx: Shared<Vec2>,
    ball: Shared<SweepBall>,
    contacts: Shared<u32>,
    side_impulse: Shared<SideImpulse>,
    side_active: Shared<bool>,
    sweep_pairs: Shared<SweepPair>,
    obstacle_extra: Shared<f32>,
}

/// What one contact with a ball gives a ball in the substep's velocity
/// pass (one entry of its neighbour list), computed once per pair by the
/// pair's owner ([`Substeps::pair_impulses`]) for both of its balls.
#[derive(Clone, Copy, Debug, PartialEq)]
#[repr(C)]
pub(crate) struct SideImpulse {
    /// Velocity change `±(n p_n + t p_t) w` (+ on the ball of lower slot).
    pub(crate) dv: Vec2,
    /// Spin change (`contact::spin_change`).
    pub(crate) spin: f32,
    /// The rolling resistance's bound on the spin change
    /// (`contact::rolling_limit`).
    pub(crate) roll: f32,
}

// The SSE2 sums of `finish_substep` load an entry as four f32 lanes in the
// order dv.x, dv.y, spin, roll: that layout, checked at compile time (glam's
// `Vec2` is two f32 in `repr(C)`, but a feature change must not move it).
const _: () = assert!(
    size_of::<SideImpulse>() == 16
        && std::mem::offset_of!(SideImpulse, dv) == 0
        && std::mem::offset_of!(SideImpulse, spin) == 8
        && std::mem::offset_of!(SideImpulse, roll) == 12
);

impl SideImpulse {
    /// A contact that takes no part (far apart, or not overlapping and
    /// separating): −0 everywhere, since `x + (−0) = x` for every x in IEEE
    /// arithmetic (−0 included): summing it is bitwise the same as skipping
    /// it, as the former per-side pass did.
    pub(crate) const NONE: SideImpulse = SideImpulse { dv: Vec2::new(-0.0, -0.0), spin: -0.0, roll: -0.0 };

    /// The impulse of a row (dv.x, dv.y, spin, roll), as
    /// [`contact::pair_lanes`] gives it.
    #[inline(always)]
    fn from_row([dvx, dvy, spin, roll]: [f32; 4]) -> SideImpulse {
        SideImpulse { dv: Vec2::new(dvx, dvy), spin, roll }
    }

    /// The impulse where `active`, else [`Self::NONE`], without a branch
    /// (whether a listed pair takes part is data the branch predictor
    /// cannot learn): each field's bits masked.
    #[inline(always)]
    #[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2"), allow(dead_code))]
    fn or_none(self, active: bool) -> SideImpulse {
        let keep = (active as u32).wrapping_neg();
        let pick = |x: f32| f32::from_bits((x.to_bits() & keep) | ((-0.0f32).to_bits() & !keep));
        SideImpulse { dv: Vec2::new(pick(self.dv.x), pick(self.dv.y)), spin: pick(self.spin), roll: pick(self.roll) }
    }
}

/// A ball as the substeps' pair loops read it (`count_contacts`, the
/// sweeps, `pair_impulses`): one 16-byte record, one cache line fetched per
/// neighbour where the position, its correction, the radius and the inverse
/// mass were four arrays. `at` is the ball's latest position in the sweep,
/// `base + dx` (the prediction, or the position in a stabilisation, plus
/// the correction so far), computed by the same addition wherever the
/// correction is written, so that reading it is bitwise reading
/// `base[j] + dx[j]`.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C, align(16))]
pub(crate) struct SweepBall {
    /// `base + dx`: the latest position.
    pub(crate) at: Vec2,
    /// The radius (`Population::radius`).
    pub(crate) radius: f32,
    /// The inverse mass (`Population::inv_mass`).
    pub(crate) inv_mass: f32,
}

/// The bytes of a ball's first `k` list entries, `ENTRY_MASK[k]` (k ≤
/// [`MAX_NEIGHBOURS`]), in the word of its 16 entry flags (`side_active`,
/// a byte each): the entries past a list's count hold stale flags.
static ENTRY_MASK: [u128; MAX_NEIGHBOURS + 1] = {
    let mut mask = [0u128; MAX_NEIGHBOURS + 1];
    let mut k = 1;
    while k <= MAX_NEIGHBOURS {
        mask[k] = u128::MAX >> (128 - 8 * k);
        k += 1;
    }
    mask
};
// A ball's entry flags fit one 128-bit word.
const _: () = assert!(MAX_NEIGHBOURS == 16);

/// The sum of a ball's list entries' impulses in list order, from zeros,
/// the inactive ones as [`SideImpulse::NONE`] (`or_none`): field by field
/// the additions of the scalar loop, here the four fields of an entry in
/// the four lanes of one SSE2 addition (the same IEEE addition per lane).
#[inline(always)]
fn sum_sides(sides: &[SideImpulse], active: &[bool]) -> SideImpulse {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    {
        use std::arch::x86_64::{
            _mm_add_ps, _mm_and_ps, _mm_andnot_ps, _mm_castsi128_ps, _mm_loadu_ps, _mm_or_ps, _mm_set1_epi32,
            _mm_set1_ps, _mm_setzero_ps, _mm_storeu_ps,
        };
        let mut sum = [0.0f32; 4];
        // SAFETY: SSE2 (checked above); each load reads one 16-byte
        // `SideImpulse` (`repr(C)`: dv.x, dv.y, spin, roll), the store the
        // four floats of `sum`.
        unsafe {
            let (mut acc, none) = (_mm_setzero_ps(), _mm_set1_ps(-0.0));
            for (side, &active) in sides.iter().zip(active) {
                let row = _mm_loadu_ps((side as *const SideImpulse).cast::<f32>());
                let keep = _mm_castsi128_ps(_mm_set1_epi32(-(active as i32)));
                acc = _mm_add_ps(acc, _mm_or_ps(_mm_and_ps(keep, row), _mm_andnot_ps(keep, none)));
            }
            _mm_storeu_ps(sum.as_mut_ptr(), acc);
        }
        let [dvx, dvy, spin, roll] = sum;
        SideImpulse { dv: Vec2::new(dvx, dvy), spin, roll }
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    {
        let mut sum = SideImpulse { dv: Vec2::ZERO, spin: 0.0, roll: 0.0 };
        for (side, &active) in sides.iter().zip(active) {
            let side = side.or_none(active);
            sum.dv += side.dv;
            sum.spin += side.spin;
            sum.roll += side.roll;
        }
        sum
    }
}

/// What a sweep of the position solve does.
#[derive(Clone, Copy, Debug)]
enum Sweep {
    /// Pre-stabilisation: from the current positions, no rebound.
    Stabilise,
    /// The substep's solve: from the predicted positions, new impacts get
    /// their rebound distance (`count_contacts`).
    Solve,
}

/// One step's substeps: the read-only state (`pop`, whose written arrays
/// are taken out into `m` for the loop) and the substep's constants.
struct Substeps<'a> {
    pop: &'a Population,
    m: Arrays,
    h: f32,
    resting: f32,
    live: Range<usize>,
    /// Threads walking the phases ([`team_size`]); the chunk sizes follow
    /// from it (which thread runs a chunk, and how the work is cut into
    /// chunks, change no result: see [`crate::team`]).
    threads: usize,
}

/// Fewest balls per thread for which a team is worth its phase boundaries.
/// Measured on balls_box (2 threads of a 2-core machine, load ~6, ms/step
/// as a team / alone, with the balanced chunks): 100 balls 0.49–0.57 /
/// 0.40–0.43, 150 0.63–0.75 / 0.63–0.67, 250 1.06 / 1.05, 300 1.24–1.47 /
/// 1.29–1.30, 500 1.96–2.09 / 2.18–2.22: the break-even is near 125–150
/// balls a thread. Below it the caller walks the list alone: no helper, no
/// rayon scope, no waits.
const MIN_BALLS_PER_THREAD: usize = 128;

/// Fewest cells in a chunk of a colour phase (a claim costs an atomic).
const MIN_CELL_CHUNK: usize = 8;

/// The threads of a step's team: the pool's, or one (the caller alone) when
/// the live range gives fewer than [`MIN_BALLS_PER_THREAD`] balls a thread.
fn team_size(pool: usize, balls: usize) -> usize {
    if balls < pool.saturating_mul(MIN_BALLS_PER_THREAD) { 1 } else { pool.max(1) }
}

/// Runs the step's `substeps` substeps of length `h` over the balls of
/// `live` (see the module doc).
/// The calling thread charges each stage's time to `clock` (see
/// [`super::stage_times`]); the helpers time nothing.
pub(crate) fn run(pop: &mut Population, h: f32, resting: f32, live: &Range<usize>, clock: &mut StageClock) {
    let take2 = |v: &mut Vec<Vec2>| std::mem::take(v);
    let take1 = |v: &mut Vec<f32>| std::mem::take(v);
    let (mut position, mut velocity) = (take2(&mut pop.position), take2(&mut pop.velocity));
    let (mut omega, mut angle) = (take1(&mut pop.omega), take1(&mut pop.angle));
    let s = &mut pop.scratch;
    let (mut v_pre, mut x_pred, mut dx) = (take2(&mut s.v_pre), take2(&mut s.x_pred), take2(&mut s.dx));
    let mut sweep_ball = std::mem::take(&mut s.sweep_ball);
    let (mut sweep_pairs, mut obstacle_extra) = (std::mem::take(&mut s.sweep_pairs), take1(&mut s.obstacle_extra));
    let mut contacts = std::mem::take(&mut s.contacts);
    let mut side_impulse = std::mem::take(&mut s.side_impulse);
    let mut side_active = std::mem::take(&mut s.side_active);
    let worst = {
        let work = Substeps {
            pop,
            m: Arrays {
                position: Shared::new(&mut position),
                velocity: Shared::new(&mut velocity),
                omega: Shared::new(&mut omega),
                angle: Shared::new(&mut angle),
                v_pre: Shared::new(&mut v_pre),
                x_pred: Shared::new(&mut x_pred),
                dx: Shared::new(&mut dx),
                ball: Shared::new(&mut sweep_ball),
                contacts: Shared::new(&mut contacts),
                side_impulse: Shared::new(&mut side_impulse),
                side_active: Shared::new(&mut side_active),
                sweep_pairs: Shared::new(&mut sweep_pairs),
                obstacle_extra: Shared::new(&mut obstacle_extra),
            },
            h,
            resting,
            live: live.clone(),
            threads: team_size(rayon::current_num_threads(), live.len()),
        };
        let schedule = Schedule::new(work.phase_count());
        if work.threads <= 1 {
            work.walk(&mut schedule.participant(), Some(clock))
        } else {
            // One helper per other worker of the pool; the caller walks the
            // whole list itself, the helpers join when a worker is free
            // (no one waits for a helper: see the team's doc).
            let helpers = std::sync::Mutex::new(0.0f32);
            let mine = rayon::scope(|scope| {
                for _ in 1..work.threads {
                    scope.spawn(|_| {
                        let worst = work.walk(&mut schedule.participant(), None);
                        let mut all = helpers.lock().unwrap_or_else(|e| e.into_inner());
                        *all = all.max(worst);
                    });
                }
                work.walk(&mut schedule.participant(), Some(&mut *clock))
            });
            // max is exact and order-free: the same at every pool size.
            mine.max(helpers.into_inner().unwrap_or_else(|e| e.into_inner()))
        }
    };
    pop.max_overlap_seen = pop.max_overlap_seen.max(worst);
    (pop.position, pop.velocity, pop.omega, pop.angle) = (position, velocity, omega, angle);
    let s = &mut pop.scratch;
    (s.v_pre, s.x_pred, s.dx) = (v_pre, x_pred, dx);
    (s.sweep_pairs, s.obstacle_extra, s.contacts) = (sweep_pairs, obstacle_extra, contacts);
    s.side_impulse = side_impulse;
    s.side_active = side_active;
    s.sweep_ball = sweep_ball;
}

impl Substeps<'_> {
    /// Phases of the step: per substep the stabilisation's records and its
    /// 9 colours, predict, count, `iterations` × 9 colours, the pairs'
    /// impulses, velocities with the finish.
    fn phase_count(&self) -> usize {
        let p = &self.pop.params;
        let colours = super::cpu::COLOURS;
        // predict: in the first substep and after each stabilisation (else
        // in the previous substep's finish phase).
        let predicts = (0..p.substeps).filter(|&s| self.predict_phase(s)).count();
        p.substeps as usize * (3 + colours * p.iterations as usize)
            + predicts
            + p.stabilising_substeps() as usize * (1 + colours)
    }

    /// One participant's walk through the step's phases; returns the largest
    /// overlap ratio seen by the velocity chunks it ran.
    ///
    /// With `clock` (the calling thread's walk), each stage ends with a wait
    /// for its last phase to complete — the wait the next phase makes first
    /// anyway — and a lap of the clock: the stage's wall time on the team.
    fn walk(&self, t: &mut Participant<'_>, mut clock: Option<&mut StageClock>) -> f32 {
        let mut lap = |t: &mut Participant<'_>, stage: PopulationStage| {
            if let Some(clock) = clock.as_deref_mut() {
                t.finish();
                clock.lap(stage);
            }
        };
        let mut worst = 0.0f32;
        for substep in 0..self.pop.params.substeps {
            if self.pop.params.stabilises(substep) {
                self.per_chunk(t, |balls| unsafe { self.start_stabilisation(balls) });
                self.sweep(t, Sweep::Stabilise);
                lap(t, PopulationStage::Stabilise);
            }
            // The predictions of a substep after the first were made in the
            // previous substep's finish phase (no phase of their own),
            // unless a stabilisation came in between.
            if self.predict_phase(substep) {
                self.per_chunk(t, |balls| unsafe { self.predict(balls) });
            }
            self.per_chunk(t, |balls| unsafe { self.count_contacts(balls) });
            lap(t, PopulationStage::Predict);
            for _ in 0..self.pop.params.iterations {
                self.sweep(t, Sweep::Solve);
            }
            lap(t, PopulationStage::Solve);
            self.per_chunk(t, |balls| worst = worst.max(unsafe { self.pair_impulses(balls) }));
            // The next substep's predictions, chunk by chunk after the
            // finish: a ball's prediction reads its own state alone (its
            // new position, velocity and zero correction), so it needs no
            // phase boundary; the same function as the predict phase, so
            // the same bits, with the chunk still in cache.
            let predict_next = substep + 1 < self.pop.params.substeps && !self.predict_phase(substep + 1);
            self.per_chunk(t, |balls| {
                worst = worst.max(unsafe { self.finish_substep(balls.clone()) });
                if predict_next {
                    // SAFETY: the chunk's balls are this thread's alone, and
                    // `finish_substep`'s slices of them are dead.
                    unsafe { self.predict(balls) };
                }
            });
            lap(t, PopulationStage::Velocities);
        }
        t.finish();
        worst
    }

    /// Whether `substep`'s predictions are a phase of their own: in the
    /// first substep and after a stabilisation (else the previous substep's
    /// finish phase makes them).
    fn predict_phase(&self, substep: u32) -> bool {
        #[cfg(test)]
        if self.pop.scratch.predict_phase_every_substep {
            return true;
        }
        self.pop.params.predicts_apart(substep)
    }

    /// Balls per chunk of a per-ball phase: the live range cut evenly
    /// between the threads, at most [`CHUNK`] (1000 balls on 2 threads:
    /// 500 + 500, not 512 + 488).
    fn ball_chunk(&self) -> usize {
        balanced_chunk(self.live.len(), self.threads, 1, CHUNK)
    }

    /// A per-ball phase whose kernel takes a chunk of balls at once
    /// (streaming passes: slices, no per-element bounds checks).
    fn per_chunk(&self, t: &mut Participant<'_>, mut kernel: impl FnMut(Range<usize>)) {
        let (live, chunk) = (&self.live, self.ball_chunk());
        t.phase(live.len().div_ceil(chunk), |k| {
            let start = live.start + k * chunk;
            kernel(start..(start + chunk).min(live.end));
        });
    }

    /// One Gauss–Seidel sweep of the position solve over `base + dx`: the
    /// colours in order ([`super::cpu::colour_of_cell`]: the bottom band's
    /// rows first), each a phase whose chunks are its cells holding balls
    /// cut evenly between the threads (at most [`CELL_CHUNK`], at least
    /// [`MIN_CELL_CHUNK`]), in each cell its balls in id order. The same at
    /// every pool size: a ball's update reads only values of earlier colours
    /// or of earlier balls of its own cell.
    fn sweep(&self, t: &mut Participant<'_>, sweep: Sweep) {
        let s = &self.pop.scratch;
        for cells in &s.colour_cells {
            let chunk = balanced_chunk(cells.len(), self.threads, MIN_CELL_CHUNK, CELL_CHUNK);
            t.phase(cells.len().div_ceil(chunk), |k| {
                for &c in &cells[k * chunk..((k + 1) * chunk).min(cells.len())] {
                    let c = c as usize;
                    for &i in &s.sorted[s.cell_start[c] as usize..s.cell_start[c + 1] as usize] {
                        // SAFETY: this chunk owns cell c for the colour (the
                        // colour's cells are distinct and 3 apart).
                        unsafe { self.solve_ball(i as usize, sweep) };
                    }
                }
            });
        }
    }

    /// The stabilisation sweep's records ([`SweepBall`]): its base is the
    /// current position, its correction (zero here) `dx`.
    ///
    /// # Safety
    /// A per-ball phase: the balls of `balls` are this thread's alone.
    unsafe fn start_stabilisation(&self, balls: Range<usize>) {
        let (pop, m) = (self.pop, &self.m);
        let (radius, inv_mass) = (&pop.radius[balls.clone()], &pop.inv_mass[balls.clone()]);
        let rest = &pop.rest[balls.clone()];
        let (position, dx, ball) =
            unsafe { (&m.position.all()[balls.clone()], &m.dx.all()[balls.clone()], m.ball.range_mut(balls)) };
        for k in 0..ball.len() {
            // A sleeper is static here too (inverse mass 0): pushed apart
            // weightless, sleepers opened gaps under the balls they carried
            // (balls_box 10⁴ seed 2: late collapses, KE 1.7e-3 of the
            // initial at 10 s, against 8.6e-6 static).
            let w = pop.params.solve_inverse_mass(rest[k], inv_mass[k]);
            ball[k] = SweepBall { at: position[k] + dx[k], radius: radius[k], inv_mass: w };
        }
    }

    /// v⁻ = v + a h (pre-solve velocity), x* = x + v⁻ h, correction 0,
    /// the solve's records ([`SweepBall`], at `x* + 0`); fused with the end
    /// of the stabilisation: x += dx (its correction).
    ///
    /// # Safety
    /// A per-ball phase: the balls of `balls` are this thread's alone.
    unsafe fn predict(&self, balls: Range<usize>) {
        let (pop, m, h) = (self.pop, &self.m, self.h);
        let (states, acc) = (&pop.state[balls.clone()], &pop.scratch.acc[balls.clone()]);
        let (radius, inv_mass) = (&pop.radius[balls.clone()], &pop.inv_mass[balls.clone()]);
        let rest = &pop.rest[balls.clone()];
        let (position, dx, velocity, v_pre, x_pred, ball) = unsafe {
            (
                m.position.range_mut(balls.clone()),
                m.dx.range_mut(balls.clone()),
                m.velocity.range_mut(balls.clone()),
                m.v_pre.range_mut(balls.clone()),
                m.x_pred.range_mut(balls.clone()),
                m.ball.range_mut(balls),
            )
        };
        for k in 0..position.len() {
            position[k] += dx[k];
            dx[k] = Vec2::ZERO;
            // A sleeper does not move in the substep (no field, no
            // velocity) and is static in the sweeps and the velocity pass
            // (inverse mass 0, as in `start_stabilisation`).
            let asleep = pop.params.asleep(rest[k]);
            if states[k] != state::ALIVE || asleep {
                v_pre[k] = velocity[k];
                x_pred[k] = position[k];
            } else {
                v_pre[k] = velocity[k] + acc[k] * h;
                x_pred[k] = position[k] + v_pre[k] * h;
            }
            // The sweeps' base + dx (x* + 0 is x* but for the sign of a
            // zero; the same sum as theirs).
            let w = pop.params.solve_inverse_mass(rest[k], inv_mass[k]);
            ball[k] = SweepBall { at: x_pred[k] + dx[k], radius: radius[k], inv_mass: w };
        }
    }

    /// The contacts of the balls of `balls` at the predicted positions, at
    /// least 1 (the mass splitting of the velocity pass, Jacobi), and the
    /// rebound distances of the substep's solve sweeps (`rebound_distance`
    /// from the positions and pre-solve velocities, which the sweeps do not
    /// change: computed once per substep instead of once per sweep and per
    /// side). A chunk of balls at once: the arrays are fetched once per
    /// chunk, not once per ball.
    ///
    /// # Safety
    /// A per-ball phase after `predict` (positions, predictions, records and
    /// pre-solve velocities are read-only in it).
    unsafe fn count_contacts(&self, balls: Range<usize>) {
        let (pop, m, h, resting) = (self.pop, &self.m, self.h, self.resting);
        let (obstacles, s) = (&pop.obstacles, &pop.scratch);
        let (material, push_out) = (pop.params.material, pop.params.push_out);
        let (position, x_pred, v_pre, ball) =
            unsafe { (m.position.all(), m.x_pred.all(), m.v_pre.all(), m.ball.all()) };
        for i in balls {
            let me = ball[i];
            let (at_i, r_i, x_i, v_i) = (me.at, me.radius, position[i], v_pre[i]);
            let mut n = 0u32;
            // The records' x* + 0 for x*: the same squared distances (a
            // zero's sign does not survive the squares).
            for &j in &s.neighbours[i * MAX_NEIGHBOURS..i * MAX_NEIGHBOURS + s.neighbour_count[i] as usize] {
                let other = ball[j as usize];
                let reach = r_i + other.radius;
                n += ((other.at - at_i).length_squared() < reach * reach) as u32;
            }
            // SAFETY: ball i's range of the sweeps' pairs is its own.
            let [start, end] = s.sweep_range[i];
            let projected = unsafe { m.sweep_pairs.range_mut(start as usize..end as usize) };
            for pair in projected.iter_mut() {
                let j = pair.other as usize;
                let sum_r = r_i + ball[j].radius;
                // The rebound distance, from i's side: every quantity below
                // is the canonical one (a the lower slot) or its exact
                // negation, and the rebound reads them through squares and
                // the product of the two negated ones, so it is bitwise
                // the same.
                let r = x_i - position[j];
                let d2 = r.length_squared();
                // Overlapping at the substep's start (margin far above f32
                // rounding): no new impact, no rebound. An overlap deeper
                // than the push-out bound keeps its excess
                // (`rebound_distance`); the sqrt is skipped where, with the
                // margin, the exact test gives 0 too (and always when the
                // bound reaches past the radii: infinite, unbounded).
                if d2 < sum_r * sum_r * (1.0 - FAR_MARGIN) {
                    let push = push_out * r_i.min(ball[j].radius);
                    let inner = sum_r - push;
                    pair.rebound = if inner > 0.0 && d2 < inner * inner * (1.0 + FAR_MARGIN) {
                        let (_, d0) = pair_normal(r, Vec2::ZERO);
                        contact::rebound_distance(d0 - sum_r, 0.0, h, material.restitution, resting, push)
                    } else {
                        0.0
                    };
                    continue;
                }
                // Closing slower than the resting speed whatever the normal
                // (|v_n| ≤ |v_a − v_b|, with the same margin): no rebound;
                // skip the sqrt.
                let closing = v_i - v_pre[j];
                let closing2 = closing.length_squared();
                if resting > 0.0 && closing2 < resting * resting * (1.0 - FAR_MARGIN) {
                    pair.rebound = 0.0;
                    continue;
                }
                // Too far to meet in the substep at |v_a − v_b| ≥ |v_n| (the
                // gap above the distance closed, with the margin: the time of
                // impact is past the substep; a resting speed ≥ 0 asks v_n < 0
                // of an impact): no rebound; skip the normal.
                let meet = sum_r + closing2.sqrt() * h;
                if resting >= 0.0 && d2 > meet * meet * (1.0 + FAR_MARGIN) {
                    pair.rebound = 0.0;
                    continue;
                }
                let (n0, d0) = pair_normal(r, Vec2::ZERO);
                let vn_pre = closing.dot(n0);
                let push = push_out * r_i.min(ball[j].radius);
                pair.rebound = contact::rebound_distance(d0 - sum_r, vn_pre, h, material.restitution, resting, push);
            }
            let p = x_pred[i];
            let listed = i * MAX_OBSTACLES..i * MAX_OBSTACLES + s.obstacle_count[i] as usize;
            // SAFETY: ball i's slots of the obstacles' rebounds are its own.
            let obstacle_extra = unsafe { m.obstacle_extra.range_mut(listed.clone()) };
            for (extra, &o) in obstacle_extra.iter_mut().zip(&s.obstacle_ids[listed]) {
                let o = &obstacles[o as usize];
                let d = o.contact(p).distance;
                if d < r_i && obstacle_in_reach(o, d, r_i) {
                    n += 1;
                }
                let mat = contact::mix(material, o.restitution, o.friction, o.rolling_resistance);
                let start = o.contact(x_i);
                let vn_pre = (v_i - o.velocity_at(x_i - start.normal * r_i)).dot(start.normal);
                // Obstacles keep their priority: always pushed out in full.
                *extra =
                    contact::rebound_distance(start.distance - r_i, vn_pre, h, mat.restitution, resting, f32::INFINITY);
            }
            // SAFETY: ball i's own count.
            unsafe { m.contacts.set(i, n.max(1)) };
        }
    }

    /// Ball `i`'s turn in a Gauss–Seidel sweep: each of its owned pairs (its
    /// listed contacts with a ball of higher id, `cpu::owned_pairs`; the
    /// other side's turn takes the rest: each pair once per sweep) is projected in full at the latest positions (`base + dx`), moving
    /// both balls by their inverse-mass shares (`k = w_a + w_b`; the pair's
    /// corrections are equal and opposite in momentum), then the ball is
    /// projected out of its obstacles in turn, in full (infinite mass,
    /// priority: a pile cannot push a ball into a wall or a moving paddle).
    ///
    /// # Safety
    /// Called by the thread owning ball `i`'s cell in a colour phase: the
    /// balls it touches (its neighbours, listed from the 3 × 3 cells around
    /// its cell) are touched by no other thread of the colour (the colouring
    /// proof of [`crate::population`]), and `base` is not written.
    unsafe fn solve_ball(&self, i: usize, sweep: Sweep) {
        let (pop, m) = (self.pop, &self.m);
        let s = &pop.scratch;
        let obstacles = &pop.obstacles;
        let relaxation = pop.params.relaxation;
        let base = unsafe {
            match sweep {
                Sweep::Stabilise => m.position.all(),
                Sweep::Solve => m.x_pred.all(),
            }
        };
        let (sweep_pairs, obstacle_extra) = unsafe { (m.sweep_pairs.all(), m.obstacle_extra.all()) };
        let (dx, ball) = (&m.dx, &m.ball);
        // SAFETY (every get/set below): balls i and j lie in the 3 × 3 cells
        // around i's cell, which this thread alone touches (the caller).
        let (r_i, w_i) = {
            let me = unsafe { ball.get(i) };
            (me.radius, me.inv_mass)
        };
        // A ball's correction and its record's base + dx, written together.
        let correct = |j: usize, record: SweepBall, dx_j: Vec2| unsafe {
            dx.set(j, dx_j);
            ball.set(j, SweepBall { at: base[j] + dx_j, ..record });
        };
        // Each pair once per sweep, from its ball of lower id (the owned
        // pairs, `cpu::owned_pairs`): the pair's projection moves both balls.
        // (`cpu::sweep_order_pairs`: the sweep reads them as one stream.)
        let [start, end] = s.sweep_range[i];
        for &SweepPair { other: j, rebound } in &sweep_pairs[start as usize..end as usize] {
            let j = j as usize;
            let (a, b) = if i < j { (i, j) } else { (j, i) };
            let (ball_a, ball_b) = unsafe { (ball.get(a), ball.get(b)) };
            let sum_r = ball_a.radius + ball_b.radius;
            // The substep's rebound distance (count_contacts) in the solve.
            let extra = match sweep {
                Sweep::Solve => rebound,
                Sweep::Stabilise => 0.0,
            };
            let (pa, pb) = (ball_a.at, ball_b.at);
            // Far apart (with a relative margin far above f32 rounding): the
            // gap below is positive and the pair does nothing; skip its sqrt.
            let reach = sum_r + extra;
            if (pa - pb).length_squared() > reach * reach * (1.0 + FAR_MARGIN) {
                continue;
            }
            let (n, d) = pair_normal(pa, pb);
            let (w_a, w_b) = (ball_a.inv_mass, ball_b.inv_mass);
            let k = w_a + w_b;
            let gap = d - sum_r - extra;
            if gap < 0.0 && k > 0.0 {
                // λ: the pair's position impulse per unit mass share.
                let lambda = n * (-gap / k * relaxation);
                let (dx_a, dx_b) = unsafe { (dx.get(a), dx.get(b)) };
                correct(a, ball_a, dx_a + lambda * w_a);
                correct(b, ball_b, dx_b + -(lambda * w_b));
            }
        }
        let me = unsafe { ball.get(i) };
        let mut p_i = me.at;
        let mut correction = Vec2::ZERO;
        let listed = i * MAX_OBSTACLES..i * MAX_OBSTACLES + s.obstacle_count[i] as usize;
        for (&o, &rebound) in s.obstacle_ids[listed.clone()].iter().zip(&obstacle_extra[listed]) {
            let o = &obstacles[o as usize];
            let extra = match sweep {
                Sweep::Solve => rebound,
                Sweep::Stabilise => 0.0,
            };
            let now = o.contact(p_i);
            if obstacle_in_reach(o, now.distance, r_i) {
                let c = contact::position_correction(now.distance - r_i - extra, now.normal, w_i, w_i);
                correction += c;
                p_i += c;
            }
        }
        if correction != Vec2::ZERO {
            correct(i, me, unsafe { dx.get(i) } + correction);
        }
    }

    /// The velocity pass's first half for the balls of `balls`: the impulse
    /// of each pair they compute (`cpu::owned_pairs`: each ball's owned
    /// pairs, then its orphans) from the pair's canonical orientation (`a`
    /// the lower slot), once per pair where both balls used to compute the
    /// same numbers, and what it gives each ball ([`SideImpulse`]; none
    /// where the pair takes no part) into the pair's two list entries. The
    /// pairs of the chunk are computed [`contact::LANES`] at a time
    /// ([`contact::pair_lanes`]: SIMD lanes, each lane bitwise the scalar
    /// law), whichever balls they belong to: a ball has about three. Returns
    /// the largest overlap / smaller radius of these pairs at the substep's
    /// new positions (the summary's `max_overlap_ratio_seen`; a max is the
    /// same in any order).
    ///
    /// # Safety
    /// A per-ball phase after the sweeps (predictions, corrections,
    /// pre-solve velocities, counts and spins are read-only in it); each
    /// list entry belongs to one pair, whose owner alone writes it.
    unsafe fn pair_impulses(&self, balls: Range<usize>) -> f32 {
        let (pop, m) = (self.pop, &self.m);
        let s = &pop.scratch;
        let inputs = unsafe {
            PairInputs {
                ball: m.ball.all(),
                x_pred: m.x_pred.all(),
                v_pre: m.v_pre.all(),
                dx: m.dx.all(),
                omega: m.omega.all(),
                count: m.contacts.all(),
            }
        };
        // Each lane's pair: its balls a < b, its owner i, the other ball j,
        // the pair's entry in i's list and in j's (the mirror).
        let (mut a, mut b) = ([0usize; LANES], [0usize; LANES]);
        let mut pairs = [(0usize, 0usize, 0u8, 0u8); LANES];
        let mut filled = 0;
        let mut worst = 0.0f32;
        for i in balls {
            let computed = i * MAX_NEIGHBOURS..i * MAX_NEIGHBOURS + s.pair_count[i] as usize;
            let owned = s.owned[computed.clone()].iter().zip(&s.owned_entry[computed.clone()]).zip(&s.mirror[computed]);
            for ((&j, &entry), &mirror) in owned {
                let j = j as usize;
                // The pair's balls, the lower slot first.
                let (low, high) = if i < j { (i, j) } else { (j, i) };
                // Far pairs (most, in flight) are settled here, from the
                // records and predictions alone: their other arrays are
                // not fetched (cold lines at 10⁵ balls) and they take no
                // lane.
                if contact::pair_is_far(inputs.ball[low], inputs.ball[high], inputs.x_pred[low], inputs.x_pred[high]) {
                    // SAFETY: entries of this pair alone (the owned lists).
                    unsafe {
                        m.side_active.set(i * MAX_NEIGHBOURS + entry as usize, false);
                        if mirror != NO_MIRROR {
                            m.side_active.set(j * MAX_NEIGHBOURS + mirror as usize, false);
                        }
                    }
                    continue;
                }
                (a[filled], b[filled]) = (low, high);
                pairs[filled] = (i, j, entry, mirror);
                filled += 1;
                if filled == LANES {
                    worst = worst.max(unsafe { self.write_pair_lanes(&inputs, a, b, &pairs) });
                    filled = 0;
                }
            }
        }
        // The last lanes: the unfilled ones repeat the first pair, computed
        // and not written.
        if filled > 0 {
            let (a0, b0) = (a[0], b[0]);
            a[filled..].fill(a0);
            b[filled..].fill(b0);
            worst = worst.max(unsafe { self.write_pair_lanes(&inputs, a, b, &pairs[..filled]) });
        }
        worst
    }

    /// The impulses of the pairs (`a[l]`, `b[l]`) ([`contact::pair_lanes`])
    /// into the list entries of `pairs` (owner, other ball, owner's entry,
    /// mirror; the first lanes): the side of each ball where the pair takes
    /// part, else its entries marked inactive (they give
    /// [`SideImpulse::NONE`], which the sums skip: `ball_velocity`). Returns
    /// the largest overlap / smaller radius of the near pairs.
    ///
    /// # Safety
    /// As [`Self::pair_impulses`], for the owners of `pairs`.
    #[inline(always)]
    unsafe fn write_pair_lanes(
        &self,
        inputs: &PairInputs<'_>,
        a: [usize; LANES],
        b: [usize; LANES],
        pairs: &[(usize, usize, u8, u8)],
    ) -> f32 {
        let m = &self.m;
        let mut out = PairLaneImpulses::default();
        contact::pair_lanes(inputs, a, b, self.pop.params.material, self.h, self.resting, &mut out);
        let mut worst = 0.0f32;
        for (l, &(i, j, entry, mirror)) in pairs.iter().enumerate() {
            if out.near & (1 << l) != 0 {
                worst = worst.max(out.overlap[l]);
            }
            let (mine, other) = (i * MAX_NEIGHBOURS + entry as usize, j * MAX_NEIGHBOURS + mirror as usize);
            let active = out.active & (1 << l) != 0;
            // SAFETY: entries of this pair alone (the owned lists).
            unsafe {
                m.side_active.set(mine, active);
                if mirror != NO_MIRROR {
                    m.side_active.set(other, active);
                }
                if active {
                    let (side_a, side_b) = (SideImpulse::from_row(out.side_a[l]), SideImpulse::from_row(out.side_b[l]));
                    let (side_mine, side_other) = if i < j { (side_a, side_b) } else { (side_b, side_a) };
                    m.side_impulse.set(mine, side_mine);
                    if mirror != NO_MIRROR {
                        m.side_impulse.set(other, side_other);
                    }
                }
            }
        }
        worst
    }

    /// The velocity pass's second half for (live) ball `i`, whose
    /// correction is `dx_i` and spin `omega_i`: v = v⁻ + dx/h, then
    /// restitution, friction and rolling resistance per contact (Jacobi):
    /// the pairs' impulses ([`Self::pair_impulses`]) summed in the order of
    /// `i`'s neighbour list (the sums of the former per-side pass, bitwise),
    /// then the obstacles. Returns the new velocity and spin and the largest
    /// overlap / radius of its obstacle contacts.
    ///
    /// # Safety
    /// After [`Self::pair_impulses`] (its list entries, predictions and
    /// pre-solve velocities are read-only).
    unsafe fn ball_velocity(&self, i: usize, dx_i: Vec2, omega_i: f32) -> (Vec2, f32, f32) {
        let (pop, m, h, resting) = (self.pop, &self.m, self.h, self.resting);
        let s = &pop.scratch;
        let (radius, inv_mass, obstacles) = (&pop.radius, &pop.inv_mass, &pop.obstacles);
        let (x_pred, v_pre, side_impulse, side_active) =
            unsafe { (m.x_pred.all(), m.v_pre.all(), m.side_impulse.all(), m.side_active.all()) };
        let balls = pop.params.material;
        let (r_i, w_i) = (radius[i], inv_mass[i]);
        let mut worst = 0.0f32;
        // In list order: the sums of the former per-side pass, bitwise. The
        // entries of pairs that take no part (`side_active` false) would
        // give −0 everywhere ([`SideImpulse::NONE`]), which adds nothing,
        // bitwise: they are neither written nor read (at 10⁵ balls in
        // flight most entries, 16 bytes each, for a byte).
        let listed = i * MAX_NEIGHBOURS..i * MAX_NEIGHBOURS + s.neighbour_count[i] as usize;
        // A ball with no contact (in flight) reads none of its entries; one
        // with some reads them all, the inactive ones as NONE without a
        // branch (which pairs take part is data a branch predictor cannot
        // learn; the entries of a ball are one or two cache lines). Whether
        // any takes part: its 16 flags as one word, the stale ones past its
        // count masked off (no loop, no exit to mispredict).
        let flags = &side_active[listed.start..listed.start + MAX_NEIGHBOURS];
        let word = u128::from_le_bytes(std::array::from_fn(|k| flags[k] as u8)) & ENTRY_MASK[listed.len()];
        let sides = if word != 0 { &side_impulse[listed.clone()] } else { &[][..] };
        let SideImpulse { dv, spin: domega, mut roll } = sum_sides(sides, &side_active[listed]);
        // Obstacles after the balls, in turn and in full (infinite mass,
        // priority), from the velocity the balls' impulses left.
        let p_i = x_pred[i] + dx_i;
        let mut v_i = (v_pre[i] + dx_i / h) + dv;
        let mut spin = omega_i + domega;
        for &o in &s.obstacle_ids[i * MAX_OBSTACLES..i * MAX_OBSTACLES + s.obstacle_count[i] as usize] {
            let o = &obstacles[o as usize];
            let now = o.contact(p_i);
            if !obstacle_in_reach(o, now.distance, r_i) {
                continue;
            }
            worst = worst.max((r_i - now.distance) / r_i);
            let overlap_pred = (r_i - o.contact(x_pred[i]).distance).max(0.0);
            if overlap_pred <= 0.0 && now.distance > r_i * (1.0 + ACTIVE_SLOP) {
                continue;
            }
            let mat: Material = contact::mix(balls, o.restitution, o.friction, o.rolling_resistance);
            let n = now.normal;
            let t = n.perp();
            let surface_velocity = o.velocity_at(p_i - n * r_i);
            let c = VelocityContact {
                normal: n,
                relative_velocity: v_i - t * (r_i * spin) - surface_velocity,
                vn_pre: (v_pre[i] - surface_velocity).dot(n),
                overlap_pred,
                k: w_i,
            };
            let p = contact::contact_impulse(&c, mat, h, resting);
            v_i += (n * p.normal + t * p.tangent) * w_i;
            spin += contact::spin_change(p.tangent, w_i, r_i);
            roll += contact::rolling_limit(mat, p.total, w_i, r_i);
        }
        (v_i, spin - spin.signum() * roll.min(spin.abs()), worst)
    }

    /// The velocity pass's second half ([`Self::ball_velocity`]) fused
    /// with the substep's end: x = x* + dx, v, ω from the velocity pass,
    /// angle += ω h (a ball's new velocity reads no other ball's state but
    /// through its list entries, so no phase boundary is needed between
    /// the two). The correction is cleared for the next substep's
    /// stabilisation (as on the GPU). Returns the largest overlap / radius
    /// of the chunk's obstacle contacts.
    ///
    /// # Safety
    /// A per-ball phase after [`Self::pair_impulses`]: the balls of `balls`
    /// are this thread's alone.
    unsafe fn finish_substep(&self, balls: Range<usize>) -> f32 {
        let (m, h) = (&self.m, self.h);
        let states = &self.pop.state[balls.clone()];
        let rest = &self.pop.rest[balls.clone()];
        let x_pred = unsafe { &m.x_pred.all()[balls.clone()] };
        let (dx, position, velocity, omega, angle) = unsafe {
            (
                m.dx.range_mut(balls.clone()),
                m.position.range_mut(balls.clone()),
                m.velocity.range_mut(balls.clone()),
                m.omega.range_mut(balls.clone()),
                m.angle.range_mut(balls.clone()),
            )
        };
        let mut worst = 0.0f32;
        for k in 0..dx.len() {
            let correction = std::mem::take(&mut dx[k]);
            if states[k] != state::ALIVE {
                continue;
            }
            if self.pop.params.asleep(rest[k]) {
                // Static: its solve correction is 0 (inverse mass 0), its
                // velocity and spin stay 0.
                position[k] = x_pred[k] + correction;
                continue;
            }
            let (v, spin, overlap) = unsafe { self.ball_velocity(balls.start + k, correction, omega[k]) };
            worst = worst.max(overlap);
            position[k] = x_pred[k] + correction;
            velocity[k] = v;
            omega[k] = spin;
            angle[k] += spin * h;
        }
        worst
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `SideImpulse::or_none` keeps an active entry's bits and gives the
    /// inactive one −0 in every field (what adds nothing, bitwise), whatever
    /// the entry held (a stale impulse, a NaN).
    #[test]
    fn an_inactive_entry_reads_as_negative_zeros_and_an_active_one_unchanged() {
        let held = SideImpulse { dv: Vec2::new(1.5, -0.0), spin: f32::NAN, roll: 3.0e-30 };
        let bits = |s: SideImpulse| [s.dv.x.to_bits(), s.dv.y.to_bits(), s.spin.to_bits(), s.roll.to_bits()];
        assert_eq!(bits(held.or_none(true)), bits(held));
        assert_eq!(bits(held.or_none(false)), bits(SideImpulse::NONE));
        assert_eq!(bits(SideImpulse::NONE), [(-0.0f32).to_bits(); 4]);
        for x in [0.0f32, -0.0, 1.0, -2.5e-40, f32::INFINITY] {
            assert_eq!((x + SideImpulse::NONE.spin).to_bits(), x.to_bits(), "{x} + (−0)");
        }
    }

    /// `sum_sides` is bitwise the scalar loop over the entries (each
    /// `or_none`, added field by field in list order from zeros): entries
    /// active and not, stale NaNs and infinities in inactive ones, signed
    /// zeros (an inactive entry's −0 must keep a −0 sum −0), sums that round.
    #[test]
    fn the_sums_of_the_entries_are_bitwise_the_scalar_loop() {
        let values = [0.0f32, -0.0, 1.0, -1.0e-3, 3.0e-7, 1.0e8, -2.5, f32::NAN, f32::INFINITY, 7.0e-39, 0.1];
        let entry = |k: usize| SideImpulse {
            dv: Vec2::new(values[k % values.len()], values[(k * 3 + 1) % values.len()]),
            spin: values[(k * 5 + 2) % values.len()],
            roll: values[(k * 7 + 3) % values.len()],
        };
        let bits = |s: SideImpulse| [s.dv.x.to_bits(), s.dv.y.to_bits(), s.spin.to_bits(), s.roll.to_bits()];
        let mut cases = 0;
        for len in 0..=MAX_NEIGHBOURS {
            for pattern in [0u32, 0xffff, 0x5555, 0xaaaa, 0x0f0f, 0x1234, 0x8001] {
                for shift in 0..3 {
                    let sides: Vec<SideImpulse> = (0..len).map(|k| entry(k + shift * 17)).collect();
                    let active: Vec<bool> = (0..len).map(|k| pattern >> k & 1 != 0).collect();
                    let mut want = SideImpulse { dv: Vec2::ZERO, spin: 0.0, roll: 0.0 };
                    for (side, &a) in sides.iter().zip(&active) {
                        let side = side.or_none(a);
                        want.dv += side.dv;
                        want.spin += side.spin;
                        want.roll += side.roll;
                    }
                    assert_eq!(bits(sum_sides(&sides, &active)), bits(want), "len {len}, pattern {pattern:#x}");
                    cases += 1;
                }
            }
        }
        // All inactive from zeros: +0 + (−0) stays +0 in every field.
        let none = sum_sides(&[entry(7); 3], &[false; 3]);
        assert_eq!(bits(none), [0; 4]);
        assert!(cases > 300);
    }

    /// The predictions made in the finish phase are bitwise those of a
    /// predict phase of their own (every array of the balls after 80 steps
    /// of a pile forming, 1 and 3 threads, with and without a stabilisation
    /// every third substep), and the run moves the balls (the comparison
    /// is not of two idle populations).
    #[test]
    fn predictions_in_the_finish_phase_are_bitwise_those_of_a_predict_phase() {
        let state = |pop: &Population| {
            let bits2 = |v: &[Vec2]| v.iter().flat_map(|p| [p.x.to_bits(), p.y.to_bits()]).collect::<Vec<u32>>();
            let bits1 = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
            (bits2(&pop.position), bits2(&pop.velocity), bits1(&pop.omega), bits1(&pop.angle))
        };
        for stabilise in ["population.stabilise_every=0", "population.stabilise_every=3"] {
            for threads in [1, 3] {
                let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a pool");
                let run = |predict_phase_every_substep: bool| {
                    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/balls_box.ron"))
                        .expect("scenes/balls_box.ron");
                    let overrides = ["population.count=1500".to_string(), stabilise.to_string()];
                    let scene =
                        crate::scene::Scene::parse_with_overrides(&text, "balls_box.ron", &overrides).expect("parses");
                    let mut pop = scene.build_world().expect("builds").population.expect("a population");
                    let start = state(&pop);
                    pop.scratch.predict_phase_every_substep = predict_phase_every_substep;
                    pool.install(|| {
                        for _ in 0..80 {
                            super::super::cpu::step(&mut pop, 1.0 / 60.0).expect("a finite step");
                        }
                    });
                    assert_ne!(state(&pop).0, start.0, "the balls did not move");
                    state(&pop)
                };
                assert!(run(false) == run(true), "{stabilise}, {threads} threads: the fused predictions differ");
            }
        }
    }

    /// The mask of a ball's first k entry flags: k bytes of ones.
    #[test]
    fn the_entry_masks_keep_the_first_k_bytes() {
        for (k, &mask) in ENTRY_MASK.iter().enumerate() {
            assert_eq!(mask.to_le_bytes().iter().filter(|&&b| b == 0xff).count(), k);
            assert!(mask.to_le_bytes()[..k].iter().all(|&b| b == 0xff));
        }
    }

    /// A team only where each thread gets its share of balls; the chunks
    /// cut the work evenly, within their bounds, and cover it.
    #[test]
    fn small_live_ranges_walk_alone_and_chunks_are_balanced() {
        assert_eq!(team_size(2, 2 * MIN_BALLS_PER_THREAD - 1), 1);
        assert_eq!(team_size(2, 2 * MIN_BALLS_PER_THREAD), 2);
        assert_eq!(team_size(16, 1000), 1);
        assert_eq!(team_size(0, 1000), 1);
        assert_eq!(balanced_chunk(1000, 2, 1, CHUNK), 500);
        assert_eq!(balanced_chunk(10_000, 2, 1, CHUNK), CHUNK);
        assert_eq!(balanced_chunk(111, 2, MIN_CELL_CHUNK, CELL_CHUNK), 56);
        assert_eq!(balanced_chunk(5, 16, MIN_CELL_CHUNK, CELL_CHUNK), MIN_CELL_CHUNK);
        for (items, threads) in [(1000, 2), (1001, 3), (7, 16), (0, 2)] {
            let chunk = balanced_chunk(items, threads, 1, CHUNK);
            assert!(items.div_ceil(chunk) * chunk >= items && items.div_ceil(chunk) <= threads.max(1));
        }
    }
}
