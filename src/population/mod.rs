//! The population tier: many balls (discs) in f32, stepped by one algorithm
//! with two backends — the CPU twin ([`cpu`], rayon, structure of arrays) and
//! the GPU ([`gpu`], `shaders/population.wgsl`, resident buffers).
//!
//! # Composition with the mechanism tier
//! One [`crate::world::World`] owns both tiers. `World::step` runs the
//! mechanism stages first, then the population as one more stage
//! (`Stage::StepPopulation`): the balls see the bodies' new poses and
//! velocities as moving obstacles ([`obstacle`]). Coupling is one-way: balls
//! do not push back on bodies.
//!
//! # The step (both backends, pass for pass)
//! Every kernel runs over the live range only ([`Population::live_range`]):
//! the balls are sorted by release step at build, a release cursor marks the
//! last ball due, and the range starts at the first ball not yet removed —
//! pending balls, and balls gone in about the order they came, cost nothing.
//! 1. `release` — emitter balls whose time has come enter the world; then,
//!    every `resort_every` steps, `resort` (below);
//! 2. `apply_fields` — gravity plus the scene's force fields, per ball, held
//!    for the step (`acceleration`);
//! 3. `build_grid` — cell of every ball (cell size 2 r_max + skin), counting
//!    sort by cell (count, exclusive prefix sum, scatter);
//! 4. `find_neighbours` — per ball, the balls within
//!    `r_i + r_j + skin + |v_i − v_j|·dt` (the pair's closing distance in the
//!    step: a fast pair must not meet unlisted) in the 3 × 3 cells around it, and the obstacles within `r_i + skin`
//!    (fixed-capacity lists, [`MAX_NEIGHBOURS`], [`MAX_OBSTACLES`]; overflow
//!    is counted and reported); on the CPU then the owned-pair lists
//!    (below: per ball its listed neighbours of higher id);
//! 5. `substeps` × { `stabilise` (one Gauss–Seidel sweep from the current
//!    positions, committed without velocity; only in substeps 0, K, 2K, …
//!    of [`PopulationParams::stabilise_every`] = K, default never), `predict` (v += a h,
//!    x* = x + v h), `count_contacts` (the velocity pass's mass splitting),
//!    `iterations` × `sweep_positions` (cell-coloured Gauss–Seidel, below),
//!    then `solve_velocities` (restitution, friction, rolling resistance,
//!    spin, new x, v, ω, angle) } — see [`contact`]. The GPU runs
//!    `solve_velocities` as one kernel per ball, each pair's impulse
//!    computed from both of its balls; the CPU twin splits it in two
//!    phases (below), with bitwise the same results;
//! 6. `check_bounds` — balls leaving the world or entering a kill region are
//!    removed and counted; a non-finite ball stops the run with its index.
//!
//! # The re-sort by cell
//! Every [`PopulationParams::resort_every`] steps (default
//! [`DEFAULT_RESORT_EVERY`]) the balls of the live range are re-sorted by
//! grid cell so that neighbours are near in memory: after a grid build, the
//! balls out of the world first (slot order: the window's start then moves
//! past them), then the balls in the world by cell, ties by id. Every
//! per-ball array moves (position, velocity, angle, spin, radius, inverse
//! mass, state, release step) and [`Population::ball_id`] keeps each ball's
//! index at build: the trace (`ball<id>`), the snapshot (id order), the
//! `NotFinite` error and [`Population::in_original_order`] name balls by id.
//! Only the released range moves, so the release cursor keeps working (the
//! pending balls stay sorted by release step behind it). On the GPU the same
//! permutation is three kernels (`resort_mark` flags the out-of-world balls
//! and a [`crate::gpu::prefix_sum::PrefixSum`] ranks them, `resort_gather`
//! writes the new order into the step's scratch, free at that point,
//! `resort_commit` copies it back) — no readback, and the buffers the
//! renderer binds stay the same.
//!
//! **A re-sort changes no result, bitwise** (tested on both backends): a
//! cell's balls are visited in id order (the grid's counting sort, then an
//! insertion sort of each cell's few balls by id: `sort_cells` on the GPU),
//! so the neighbour lists and the sweeps visit the same balls in the same
//! order whatever the arrays' order; a pair's orientation (the lower slot is
//! `a`) may flip, and every pair formula is exactly antisymmetric under the
//! flip (IEEE negation is exact).
//!
//! # Why this contact scheme
//! A substepped position-based solve (small steps, XPBD style) whose
//! position iterations are **cell-coloured Gauss–Seidel**: every contact is
//! projected in full at the latest positions, once per sweep (at the turn of
//! its ball of lower id: the ball lists hold a pair on both sides), both balls moved in place by
//! their inverse-mass shares (`λ = −gap/(w_a + w_b)`, `Δx_a = λ w_a n`,
//! `Δx_b = −λ w_b n`: equal and opposite momenta, so momentum is conserved),
//! then the ball is projected out of its obstacles. A correction made low
//! in a pile is seen by the balls above it in the same sweep, where Jacobi
//! (the previous scheme) moved it one ball per iteration, with the
//! mass-splitting share `1/(n_a + n_b)` ≈ 1/8 of the overlap per contact
//! instead of the full projection.
//!
//! **The colouring and why it is safe.** Cell (cx, cy) of the grid has colour
//! `(cy mod 3)·3 + (cx mod 3)` (9 colours, [`cpu::colour_of_cell`]). A
//! sweep runs the colours in order — the bottom row of every band of three
//! rows first — and within a colour one thread per cell, which takes the
//! cell's balls in index order and solves each one's listed contacts and
//! obstacles. The neighbour lists are built from the 3 × 3 cells around a
//! ball's cell at the grid build, so the thread of cell C reads and writes
//! only balls whose (build-time) cells lie in the 3 × 3 block around C. Two
//! distinct cells of one colour differ by a non-zero multiple of 3 in cx or
//! in cy, so their blocks (cx − 1 … cx + 1, cy − 1 … cy + 1) share no cell,
//! hence no ball: two threads of one colour never touch the same ball —
//! and no two balls in same-colour cells can be a contact pair of two
//! threads. Which of a pair's two balls runs its projection does not matter
//! to this argument (the projection writes both, and both lie in the block
//! of either ball's cell); the ball of lower *id* runs it, not the lower
//! array slot, so that the re-sort changes no result. Colours are separated
//! by a phase boundary of the CPU twin's team (`src/team.rs`: every chunk of
//! a colour done before any chunk of the next
//! starts) or a dispatch boundary (GPU). The result is therefore the same at every pool size and on every
//! run: a ball's update reads only what earlier colours, or earlier balls of
//! its own cell, wrote. On the GPU a cell sort after the atomic scatter
//! (`sort_cells`: each cell's short segment by ball id) gives the twin's
//! order, so two GPU runs are bitwise identical and GPU = CPU up to the
//! compilers' fused multiply-adds.
//!
//! The velocity pass stays Jacobi with mass splitting (restitution, friction,
//! rolling resistance; Müller et al. 2020): it only sets the contacts'
//! relative velocities from the positions' outcome, which removes the energy
//! the projection would add — piles come to rest.
//!
//! **What it costs in quality, measured** (balls_box, 600 steps = 10 s,
//! dt 1/60, `mx2d run --set population.substeps=S --set
//! population.iterations=I`, overlap and KE per ball at 10 s, KE relative
//! to the initial): a pile's residual overlap is its load over the solver's
//! stiffness, ~N g h²/(share · iterations), so it grows with the pile's
//! height N and with h². 10³ balls, 16 × 2: 0.08 % of r, KE 1e-5. 10⁴ balls
//! (a pile 100 high), 16 × 2: **0.84 % of r, KE 2.8e-4** (the Jacobi
//! solve left 3–3.4 % and ~1e-3: it did not settle); 16 × 1: 1.6 %, 4.7e-3;
//! 8 × 2: 2.9 %, 1.5e-3; 8 × 1: 5.1 %, 3.8e-3. So 10⁴ settles at the same
//! substeps as before, not with fewer: halving h² costs more overlap than
//! Gauss–Seidel gains.
//!
//! **Issue 8's fourth round: less work per step** (27 Nov, measured at
//! 10⁴ balls, 10 s; CPU user time of the 600 steps at 2 threads, load 4–7,
//! one run each): each pair projected once per sweep instead of from both
//! balls, and the stabilisation sweep a knob (`stabilise_every`, default 0
//! = never). Before (16 × 2, stabilised every substep, pairs twice): 0.84 %
//! of r at the end, 3.5 % worst, KE 2.8e-4, 60.5 s. Pairs once: 0.90 %,
//! 4.7 %, 1.0e-3, 43.0 s. And the stabilisation every other substep: 1.1 %,
//! 9.2 %, 3.6e-3, 38 s; in the first substep only: 1.2 %, 7.4 %, 1.6e-3,
//! 35 s; never (**the default**): **0.90 %, 12.6 %, 1.6e-5, 37 s** (0.86 %,
//! 11.6 %, 1.5e-4, 39 s with the pair's projecting ball chosen by slot). Without
//! the stabilisation, fewer substeps: 12 × 2 2.4 % (fails the 2 %), 10 × 3
//! 2.8 %, 8 × 3 2.1 %, 8 × 4 1.8 % and 23 s but a late collapse leaves
//! KE/ball 1.9e-3 of the initial over the tenth second
//! (`balls_box_10000_settles` fails): 16 × 2 stays. The worst overlap while
//! the pile forms rises (3.5 → 12.6 % at 10⁴; Box2D v3 138 %). The mixer's
//! scene keeps `stabilise_every: 1`: without it a ball ends up to 40 % of r
//! inside the turning paddle (the stabilisation projects the balls out of
//! the obstacles from the current positions first). One-thread CPU time of
//! the falling phase, before/after alternated, 3 pairs each, load 6–7:
//! 10⁴ × 30 steps 914 → 729 ms (−20 %), 10⁵ × 8 steps 3,076 → 2,467 ms
//! (−20 %), scene build included (−24 %, −26 % with the ball chosen by
//! slot: the id costs a lookup per listed pair); the settled pile gains more (−35 % above),
//! its sweeps having more contacts per ball. The velocity pass (Jacobi, per
//! ball, both sides of a pair) and the four per-ball passes are unchanged;
//! the GPU issues 288 dispatches per step for the position solve instead of
//! 432 (no stabilisation sweeps, no commit).
//!
//! **What it costs in time** (before the fourth round): 16 substeps of three sweeps (a stabilisation,
//! two solves) of 9 colours each, each pair projected from both of its
//! balls, plus four per-ball passes (predict with the stabilisation's
//! commit, count with the rebound distances, velocities, finish). In one
//! run of `benches/peers/run.sh` (2 cores, loaded) the CPU twin took 4.2×
//! Box2D v3's ms/step at 10⁴ and 4.4× at 10⁵ (the Jacobi solve: 3.8× at
//! 10⁴). Since then (results bitwise unchanged): the re-sort by cell; the
//! substep's rebound distances computed once per listed contact in
//! `count_contacts` instead of once per sweep and per side; pairs far apart
//! skipped before their square root (a 1e-4 margin on squared distances,
//! far above f32 rounding); two per-ball passes fused. One-thread CPU time
//! of balls_box (falling phase, same load, back to back): 10⁴ −25 %, 10⁵
//! −35 %; 2 threads, 10⁴: 110 → 88 ms/step wall under a load of 15. The
//! issue's ≤ 0.3× is still not met (3–5× Box2D v3 in runs under loads of
//! 6–15: docs/benchmarks.md). The barriers were then 432 colour joins per step (a
//! profile under load: ~30 % in the rayon workers' sleep/wake); since issue
//! 8's third round the substeps of a step are one list of phases walked by
//! one team (`src/team.rs`: one rayon scope per step, a phase
//! boundary is a chunk counter — spin, yield, then park — and empty colours
//! cost nothing; bitwise the same results). Measured (24 Nov, 2-core machine
//! under a load of 6–12, one-thread CPU time and `benches/peers/run.sh
//! --engine box2d --steps 30`, before and after back to back): one-thread CPU
//! time unchanged within the noise (10⁴ × 30 steps 0.83–0.90 s both; 10⁵ × 8
//! steps 3.2–3.4 s before, 3.5 s after: +5–9 %, within this load's noise or
//! the cost of the team's counters and bounds checks), mx2d ÷ Box2D v3 at 10⁴ 2.7× before,
//! 2.8–3.4× after, at 10⁵ 4.1× before, 3.7–4.1× after: under such a load the
//! two threads rarely run at once, so the barriers' cost was not what kept
//! the twin from the issue's ≤ 0.3×: its work is (16 substeps of three
//! sweeps, where Box2D v3 does 4 substeps). Fewer colours are not free here: 4 colours
//! (cells 2 apart) are safe only if a cell's thread writes its own balls
//! alone, i.e. each side of a pair moves only its own ball at its own
//! time — the two halves of a pair's correction then come from different
//! gaps and the position solve no longer conserves momentum, which
//! `momentum_is_conserved_over_1000_steps_without_gravity_or_walls`
//! requires; not done. On the GPU each colour is a dispatch: 432 per step
//! for the position solve (Jacobi: 48), launch overhead that a real GPU's
//! 10⁶ ≤ 1 ms/step target cannot afford at 16 substeps. Measured on an
//! NVIDIA H200 (27 Nov 2026, 2 × 9 colours: 288 sweep dispatches a step):
//! the sweeps are 70–90 % of the step, ≈ 13 µs a dispatch below 10⁵ balls;
//! 12.7 ms/step at 10⁶, 91.9 at 10⁷ (docs/benchmarks.md, "On a lent GPU
//! machine"; `mx2d bench --scene balls_box --passes` times each stage).
//!
//! **Small populations** (issue 8, pop7b; 27 Nov, 2-core machine, load
//! 3.5–6, balls_box × 300 steps, `--summary` ms/step, before and after back to
//! back). Where 10³ balls spend their time: one thread, `perf record`: 46 %
//! `solve_velocities`, 30 % `solve_ball`, 16 % `count_contacts`, the team's
//! `phase` 1 %, the grid, lists and allocation under 1.5 % each — the same
//! shares at 2 threads. So the fixed costs are not what 10³ pays: it is
//! the arithmetic of 16 substeps (one-thread CPU 4.6 ms/step; Box2D v3 in
//! the same minute 0.90 ms/step, 4 substeps, 2 workers). What was fixed
//! cost is now cut: the caller walks the list alone below 128 balls a
//! thread (no helper, no scope, no waits: `substep::MIN_BALLS_PER_THREAD`,
//! break-even measured near 125–150), and a phase's chunks cut its work
//! evenly between the threads (10³ on 2 threads: 500 + 500 balls, not
//! 512 + 488; a colour's 111 cells 56 + 55, not 64 + 47; below 512 balls
//! there used to be one per-ball chunk, run by one thread). Bitwise the
//! same (snapshots of 200, 10³, 10⁴ balls × 120 steps at 1, 2, 3, 16
//! threads against the former binary). Measured, 2 threads (medians of 6
//! alternated pairs at 10³, 3 at 10² and 300): 10² 0.83 → 0.41 ms/step,
//! 300 1.34 → 1.55 (within the noise: 1.29–1.70 both), 10³ 6.6 → 5.9
//! ms/step wall (CPU 1.97 → 1.68 s for 300 steps, 3 pairs); one thread
//! 10³ unchanged (task-clock 1.37 s both, median of 3 pairs). 10⁴ takes the
//! former chunks (512 balls, 64 cells: the caps) and is unchanged. Under
//! these loads 2 threads at 10³ (5–7 ms/step wall) can be slower than one
//! (4.6): the helper waits on a thread that the machine's other load has
//! descheduled; at load 2.7, 3.3 ms/step at 2 threads against 4.5 at one.
//!
//! Tried for the tall pile with the Jacobi solve and not kept (measured at
//! 10⁴, 10 s): stack mass scaling (Macklin et al. 2014 §5.1; resting pairs'
//! upper ball lighter in the position solve) brings the overlap to 1 % but
//! feeds energy in (KE/ball 2.7 J, balls thrown out of the box).
//! Warm-started accumulated position impulses λ per pair stay stable but
//! leave 3.4 % and KE/ball 0.09 J. Over-relaxation ω = 1.5: 5.8 % and 3 balls
//! thrown out. A velocity-level soft step with warm starting (Box2D v3) was
//! not tried.
//!
//! **Issue 8, pop8: each pair once in the CPU twin's velocity pass** (27
//! Nov, bitwise the same: snapshots and summaries of balls_box 3·10³,
//! mixer, hourglass and galton at 1, 3 and 16 threads, and of balls_box
//! with overflowing lists, identical to main's). `find_neighbours` is
//! followed by `cpu::owned_pairs`: per ball its listed neighbours of higher
//! id, in list order, contiguous (the sweeps and `count_contacts`'
//! rebound distances read no ids and skip nothing), then its *orphans*
//! (neighbours of lower id whose full list dropped it: the former pass gave
//! such a pair to this ball alone), and for each pair its entry in both
//! lists. The velocity pass is then two phases: `pair_impulses`, per ball
//! over the pairs it owns, computes each pair's impulse once and writes
//! what it gives each ball (velocity, spin, rolling bound; −0 for a pair
//! that takes no part, since x + (−0) = x) into the pair's two list
//! entries; the per-ball sums (`ball_velocity`, fused with the finish: a
//! ball reads others only through its entries) add its entries in list
//! order — the former sums, bitwise — then the obstacles as before.
//! `count_contacts` keeps the per-side count (a sum and a compare per
//! entry: a per-pair flag would be read back as dearly) and skips the
//! rebound's normal for pairs closing slower than the resting speed or too
//! far to meet in the substep (1e-4 margins on squared distances). The GPU
//! kernels are unchanged (GPU = CPU tests pass on lavapipe). CPU time
//! (task-clock, before/after alternated, 3 pairs, medians, load ≈ 3):
//! balls_box 10³ × 300 steps 1.37 → 1.09 s at one thread (−20 %), 1.49 →
//! 1.11 s at two (−26 %); 10⁴ × 60 steps (falling, build included) 1.63 →
//! 1.45 s (−11 %) at one, 1.65 → 1.47 s at two. The profile at 10³ then:
//! `solve_ball` 35 %, `pair_impulses` 30 %, `count_contacts` 17 %, the sums
//! and finish 7 % (figures and the peers in docs/benchmarks.md).
//!
//! **Issue 8, pop9: the pair loops' memory** (27 Nov, bitwise the same:
//! `--trace`, `--snapshot` every 5 steps and `--summary` of balls_box
//! 3·10³ × 300 steps, mixer, hourglass and galton × 400 at 1, 3 and 16
//! threads identical to main's). A profile at 10⁵ balls (falling) put the
//! sweeps' time in the load of each ball's list slots (a 64-byte line per
//! ball and array, fetched cold) and the velocity pass's in the 16-byte
//! list entries written and summed for pairs far apart. Three changes:
//! (1) what the pair loops read of a ball is one 16-byte record
//! (`substep::SweepBall`: the latest position `base + dx`, radius, inverse
//! mass), rewritten by the same addition wherever a correction is written,
//! so reading it is bitwise reading `base[j] + dx[j]`; (2) the pairs the
//! sweeps project, with their rebound distances, are one stream in the
//! order the sweeps visit their balls (`cpu::sweep_order_pairs`: colour,
//! cell, id — the sweep's order at every pool size), which a sweep reads
//! front to back and `count_contacts` fills per ball; (3) a pair that
//! takes no part in the velocity pass writes a byte (`side_active`)
//! instead of its two 16-byte −0 entries, and a ball's sums skip those
//! entries (x + (−0) = x: bitwise the same); a ball with no active entry
//! reads none, one with some sums them all branch-free (`or_none`: which
//! listed pairs touch is data a branch predictor cannot learn). CPU time,
//! one thread (task-clock, before/after alternated, 3 pairs, medians):
//! balls_box 10³ × 300 steps (settled) 1.12 → 1.13 s, 10⁴ × 60
//! (falling, build included) 1.81 → 1.57 s (−14 %), 10⁵ × 8 2.62 → 1.53 s
//! (−42 %); two threads 1.11 → 1.16 s (+4 %), 1.44 → 1.35 s (−6 %), 2.52 →
//! 1.54 s (−39 %) (load 10–12; docs/benchmarks.md). The settled pile at 10³ pays the flags (+4 % for
//! that change alone) and gains little from the rest: it is arithmetic
//! bound (`pair_impulses` 31 %, `solve_ball` 30 %, `count_contacts` 16 %).
//! Tried and not kept: the owned pairs as one per-ball record in the
//! 16-slot lists (other ball, rebound, both entries: 12 bytes; or 8 without
//! the entries): 10⁵ +20–25 % (the slots, 128–192 bytes a ball, were still
//! fetched cold, and more of them); the sums skipping inactive entries by
//! recomputing the far test instead of a flag: 10³ +7 %; the sums
//! branch-free over all entries: 10⁵ +39 % against the branch (the reads
//! are the cost).
//!
//! # Memory
//! [`CPU_BYTES_PER_BALL`] and `gpu::GPU_BYTES_PER_BALL` state what a ball
//! costs; a population over the backend's memory is refused before any
//! allocation, with the estimate and the limit named. The CPU twin's owned
//! pairs (pop8) cost 348 bytes a ball more than before (312 → 660), most of
//! it the 16 list entries' impulses (16 bytes each); pop9's record, pair
//! stream and flags 104 more, its stream replacing the rebound distances'
//! list slots (64): 660 → 764 (the stream counted at its worst, 8 bytes × 16;
//! measured 690 bytes a ball at 4·10⁴ balls, `tests/population_memory.rs`).

pub mod contact;
pub mod cpu;
pub mod gpu;
pub mod obstacle;
pub mod snapshot;
pub mod spawn;
mod substep;

use glam::{DVec2, Vec2};

use crate::body::Body;
use crate::field::Field;
use crate::gpu::GpuField;
use crate::surface::Surface;
pub use obstacle::Obstacle;
pub use spawn::{ContainerDef, PopulationDef, RectDef, SpawnDef};

/// Steps between two re-sorts of the ball arrays by grid cell
/// ([`PopulationParams::resort_every`]).
pub const DEFAULT_RESORT_EVERY: u32 = 8;

/// Neighbour-list capacity per ball.
pub const MAX_NEIGHBOURS: usize = 16;
/// Obstacle-list capacity per ball.
pub const MAX_OBSTACLES: usize = 8;

/// Ball states (`Population::state`).
pub mod state {
    /// In the world.
    pub const ALIVE: u32 = 0;
    /// An emitter ball not yet released.
    pub const PENDING: u32 = 1;
    /// Left the world's bounds.
    pub const ESCAPED: u32 = 2;
    /// Entered a kill region.
    pub const KILLED: u32 = 3;
}

/// Bytes per ball of the CPU twin: state (position 8, velocity 8, angle 4,
/// spin 4, radius 4, inverse mass 4, state 4, release step 4, id 4 = 44)
/// plus step scratch (acceleration 8, pre-solve velocity 8, predicted
/// position 8, correction 8, the pair loops' record of the ball 16, contact
/// count 4, cell key 4, sorted index 4, re-sort order 4, neighbour list
/// 4·(16 + 1), obstacle list 4·(8 + 1), the obstacle contacts' rebound
/// distances 4·8, the re-sort's copy of one array 8, owned pairs 4·(16 +
/// 2), their entries in both lists 1·(16 + 16), the sweeps' stream of them
/// with their rebound distances 8·16 at most and its range 8, the list
/// entries' velocity-pass impulses 16·16 and whether each takes part
/// 1·16 = 720; pop9 added the record, the stream and the flags and dropped
/// the rebound distances' 16 list slots: 616 before, and 268 before the
/// owned pairs, pop8, with a new velocity and spin).
pub const CPU_BYTES_PER_BALL: u64 = 44 + 720;

/// Why a population cannot be built or stepped.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PopulationError {
    /// A value of the `population` section is unusable.
    #[error("{field}: {message}")]
    Invalid {
        /// Field path under `population` (`spawn[0].count`).
        field: String,
        /// What is wrong.
        message: String,
    },
    /// The population would not fit the backend's memory.
    #[error(
        "{count} balls need about {bytes} bytes on the {backend} backend ({per_ball} bytes per ball{extra}), \
         over the limit of {limit} bytes ({limit_name})"
    )]
    TooLarge {
        /// Balls asked for.
        count: u64,
        /// Estimated bytes.
        bytes: u64,
        /// Bytes per ball on that backend.
        per_ball: u64,
        /// Other terms of the estimate (grid cells …).
        extra: String,
        /// `cpu` or `gpu`.
        backend: &'static str,
        /// The limit (bytes).
        limit: u64,
        /// Which limit.
        limit_name: String,
    },
    /// A ball's state became non-finite.
    #[error("ball {ball} is not finite after step {step} (position {position}, velocity {velocity})")]
    NotFinite {
        /// Step after which it was found.
        step: u64,
        /// Index of the ball.
        ball: usize,
        /// Its position.
        position: Vec2,
        /// Its velocity.
        velocity: Vec2,
    },
    /// The GPU backend failed.
    #[error("GPU population step: {0}")]
    Gpu(String),
}

fn invalid(field: impl Into<String>, message: impl Into<String>) -> PopulationError {
    PopulationError::Invalid { field: field.into(), message: message.into() }
}

/// Run-time parameters of the step (f32).
#[derive(Clone, Debug, PartialEq)]
pub struct PopulationParams {
    /// Ball–ball material; obstacles mix theirs in ([`contact::mix`]).
    pub material: contact::Material,
    /// Resting speed, or `None` for 2·|g|·dt.
    pub resting_speed: Option<f32>,
    /// Substeps per step.
    pub substeps: u32,
    /// Jacobi position iterations per substep.
    pub iterations: u32,
    /// The stabilisation sweep runs in substeps 0, K, 2K, … of each step for
    /// K = `stabilise_every` (0: never; [`PopulationParams::stabilises`]).
    pub stabilise_every: u32,
    /// Over-relaxation of the position correction.
    pub relaxation: f32,
    /// Neighbour margin (m).
    pub skin: f32,
    /// The ball arrays are re-sorted by cell every this many steps (0: never;
    /// [`Population::resort`]).
    pub resort_every: u32,
    /// World bounds (min, max).
    pub bounds: (Vec2, Vec2),
    /// Kill regions (min, max).
    pub kill: Vec<(Vec2, Vec2)>,
}

impl PopulationParams {
    /// Whether substep `substep` (0-based, within a step) begins with the
    /// stabilisation sweep: substeps 0, K, 2K, … for K = `stabilise_every`,
    /// none for K = 0. Both backends ask this, so they run the same sweeps.
    pub fn stabilises(&self, substep: u32) -> bool {
        self.stabilise_every != 0 && substep.is_multiple_of(self.stabilise_every)
    }

    /// Substeps of a step that begin with the stabilisation sweep.
    pub fn stabilising_substeps(&self) -> u32 {
        (0..self.substeps).filter(|&s| self.stabilises(s)).count() as u32
    }
}

/// The uniform grid the balls are sorted into.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GridSpec {
    /// Lower-left corner of cell (0, 0).
    pub origin: Vec2,
    /// Cell side (m): 2 r_max + skin.
    pub cell: f32,
    /// Cells along x.
    pub nx: u32,
    /// Cells along y.
    pub ny: u32,
}

impl GridSpec {
    /// Number of cells.
    pub fn cells(&self) -> u64 {
        u64::from(self.nx) * u64::from(self.ny)
    }

    /// Cell coordinates of a point (clamped into the grid).
    #[inline]
    pub fn coords(&self, p: Vec2) -> (u32, u32) {
        let c = ((p - self.origin) / self.cell).floor();
        let cx = (c.x.max(0.0) as u32).min(self.nx - 1);
        let cy = (c.y.max(0.0) as u32).min(self.ny - 1);
        (cx, cy)
    }
}

/// Largest number of grid cells (4 bytes each on either backend).
pub const MAX_CELLS: u64 = 1 << 28;

/// Counters and quality figures of a population at one instant.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct PopulationStats {
    /// Balls in the world.
    pub alive: u64,
    /// Emitter balls not yet released.
    pub pending: u64,
    /// Balls that left the world's bounds.
    pub escaped: u64,
    /// Balls removed by kill regions.
    pub killed: u64,
    /// ½ m v² + ½ J ω² over the balls in the world (J).
    pub kinetic_energy: f64,
    /// Kinetic energy per ball in the world (J).
    pub kinetic_per_ball: f64,
    /// Largest overlap of two balls (or a ball and an obstacle) divided by
    /// the smaller radius.
    pub max_overlap_ratio: f64,
    /// Contacts dropped because a neighbour or obstacle list was full (over the run).
    pub list_overflow: u64,
}

/// A population of balls: structure of arrays, f32.
#[derive(Clone, Debug)]
pub struct Population {
    /// Step parameters.
    pub params: PopulationParams,
    /// Centres (m).
    pub position: Vec<Vec2>,
    /// Velocities (m/s).
    pub velocity: Vec<Vec2>,
    /// Angles (rad).
    pub angle: Vec<f32>,
    /// Spins (rad/s).
    pub omega: Vec<f32>,
    /// Radii (m).
    pub radius: Vec<f32>,
    /// Inverse masses (1/kg).
    pub inv_mass: Vec<f32>,
    /// [`state`] codes.
    pub state: Vec<u32>,
    /// Step at which a pending ball is released (0 for the others).
    pub release_step: Vec<u32>,
    /// The ball's index at build (its name in every output: `ball<id>` in
    /// the trace, the snapshot's order, the `NotFinite` error): the re-sort
    /// by cell ([`Population::resort`]) moves the balls, not their ids.
    pub ball_id: Vec<u32>,
    /// The sorting grid.
    pub grid: GridSpec,
    /// Obstacles from the static surfaces (and the container).
    pub static_obstacles: Vec<Obstacle>,
    /// All obstacles of the current step (static, then bodies').
    pub obstacles: Vec<Obstacle>,
    /// Gravity (m/s²).
    pub gravity: Vec2,
    /// Force fields in f32 (the GPU encoding).
    pub fields: Vec<GpuField>,
    /// Steps taken.
    pub steps: u64,
    /// Largest radius (m).
    pub max_radius: f32,
    /// Contacts dropped from full lists so far.
    pub list_overflow: u64,
    /// Largest overlap / smaller radius after any substep so far (balls and
    /// obstacles; reduced in the velocity pass on either backend, read back
    /// from the GPU with the balls).
    pub max_overlap_seen: f32,
    /// The release cursor and the first ball not yet out: the step's kernels
    /// visit only `window.0..window.1` ([`Population::live_range`]).
    window: (usize, usize),
    /// Ball slots the step's kernels have visited, summed over the steps.
    ball_visits: u64,
    scratch: cpu::Scratch,
}

/// Total memory of this machine (bytes), from `/proc/meminfo`; 16 GiB when
/// unknown.
pub fn cpu_memory_limit() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("MemTotal:"))
                .and_then(|l| l.split_whitespace().nth(1).and_then(|kb| kb.parse::<u64>().ok()).map(|kb| kb * 1024))
        })
        .unwrap_or(16 << 30)
}

/// The largest magnitude of a parameter of the population tier: its
/// arithmetic is f32 (largest ≈ 3.4e38), so a parameter and the product of two
/// such stay finite.
pub const F32_PARAMETER_MAX: f64 = 1e15;

impl Population {
    /// Builds the population a scene section describes, after checking every
    /// value and the memory it needs (`memory_limit` bytes on the CPU) —
    /// before allocating anything per ball.
    pub fn build(
        def: &PopulationDef,
        surfaces: &[Surface],
        fields: &[Field],
        gravity: DVec2,
        dt: f64,
        memory_limit: u64,
    ) -> Result<Population, PopulationError> {
        // The tier computes in f32: a value past F32_PARAMETER_MAX would turn
        // into ∞ (or its products would), and then into NaN inside a kernel.
        let positive = |field: &str, v: f64| {
            if v.is_finite() && v > 0.0 && v <= F32_PARAMETER_MAX {
                Ok(())
            } else {
                Err(invalid(field, format!("must be positive and at most {F32_PARAMETER_MAX:e} (f32 tier), got {v}")))
            }
        };
        let nonneg = |field: &str, v: f64| {
            if (0.0..=F32_PARAMETER_MAX).contains(&v) {
                Ok(())
            } else {
                Err(invalid(field, format!("must be >= 0 and at most {F32_PARAMETER_MAX:e} (f32 tier), got {v}")))
            }
        };
        // Scene-level values the balls use (named without the `population.` prefix).
        for (field, v) in [("/gravity", gravity.abs().max_element()), ("/dt", dt)] {
            // NaN is refused too (it fails the comparison).
            if v.is_nan() || v > F32_PARAMETER_MAX {
                return Err(invalid(
                    field,
                    format!("must be at most {F32_PARAMETER_MAX:e} in size with a population (f32 tier), got {v}"),
                ));
            }
        }
        positive("radius", def.radius)?;
        if let Some(m) = def.radius_max
            && !(m.is_finite() && m >= def.radius)
        {
            return Err(invalid("radius_max", format!("must be >= radius ({}), got {m}", def.radius)));
        }
        positive("density", def.density)?;
        if !(0.0..=1.0).contains(&def.restitution) {
            return Err(invalid("restitution", format!("must be in [0, 1], got {}", def.restitution)));
        }
        nonneg("friction", def.friction)?;
        nonneg("rolling_resistance", def.rolling_resistance)?;
        if let Some(v) = def.resting_speed {
            nonneg("resting_speed", v)?;
        }
        if def.substeps == 0 || def.substeps > 1024 {
            return Err(invalid("substeps", format!("must be in 1..=1024, got {}", def.substeps)));
        }
        if def.iterations == 0 || def.iterations > 1024 {
            return Err(invalid("iterations", format!("must be in 1..=1024, got {}", def.iterations)));
        }
        if !(def.relaxation > 0.0 && def.relaxation < 2.0) {
            return Err(invalid("relaxation", format!("must be in (0, 2), got {}", def.relaxation)));
        }
        nonneg("skin", def.skin)?;
        let mut spawn = def.spawn.clone();
        if let Some(n) = def.count {
            match spawn.first_mut() {
                Some(s) => s.set_count(n),
                None => return Err(invalid("count", "there is no spawner to resize (spawn is empty)")),
            }
        }
        let mut total: u64 = 0;
        for (i, s) in spawn.iter().enumerate() {
            let at = |f: &str| format!("spawn[{i}].{f}");
            match s {
                SpawnDef::Grid { origin, spacing, velocity, velocity_jitter, columns, .. } => {
                    if !origin.is_finite() || !velocity.is_finite() {
                        return Err(invalid(at("origin"), "origin and velocity must be finite"));
                    }
                    positive(&at("spacing"), *spacing)?;
                    nonneg(&at("velocity_jitter"), *velocity_jitter)?;
                    if *columns == Some(0) {
                        return Err(invalid(at("columns"), "must be at least 1"));
                    }
                }
                SpawnDef::RandomBox { min, max, velocity, velocity_jitter, .. } => {
                    if !(min.is_finite() && max.is_finite() && min.x <= max.x && min.y <= max.y) {
                        return Err(invalid(at("min"), format!("needs finite min <= max, got {min} and {max}")));
                    }
                    if !velocity.is_finite() {
                        return Err(invalid(at("velocity"), "must be finite"));
                    }
                    nonneg(&at("velocity_jitter"), *velocity_jitter)?;
                    // Hook for spawn.rs: balls of a random box must not overlap.
                    let r_max = def.radius_max.unwrap_or(def.radius);
                    spawn::check_random_box(*min, *max, s.count(), r_max).map_err(|m| invalid(at("count"), m))?;
                }
                SpawnDef::Emitter { position, velocity, width, rate, start, .. } => {
                    if !position.is_finite() || !velocity.is_finite() {
                        return Err(invalid(at("position"), "position and velocity must be finite"));
                    }
                    nonneg(&at("width"), *width)?;
                    positive(&at("rate"), *rate)?;
                    nonneg(&at("start"), *start)?;
                }
            }
            total = total.saturating_add(s.count());
        }
        if total > u64::from(u32::MAX) {
            return Err(invalid("count", format!("{total} balls: at most {} (u32 indices)", u32::MAX)));
        }
        for (k, r) in def.kill.iter().enumerate() {
            if !(r.min.is_finite() && r.max.is_finite() && r.min.x <= r.max.x && r.min.y <= r.max.y) {
                return Err(invalid(format!("kill[{k}]"), "needs finite min <= max"));
            }
        }
        let max_radius = def.radius_max.unwrap_or(def.radius);
        let skin = def.skin * max_radius;

        // Static obstacles: the scene's surfaces, then the container's walls.
        let mut static_obstacles = Vec::new();
        for s in surfaces {
            obstacle::surface_obstacles(s, &mut static_obstacles);
        }
        let mut extent = Extent::default();
        if let Some(c) = &def.container {
            let Some(main @ SpawnDef::Grid { spacing, .. }) = spawn.first() else {
                return Err(invalid("container", "a GridBox container needs a Grid as the first spawner"));
            };
            if !(c.floor.is_finite() && c.left.is_finite() && c.right_margin.is_finite()) {
                return Err(invalid("container", "floor, left and right_margin must be finite"));
            }
            let right = main.columns() as f64 * spacing + c.right_margin;
            if right <= c.left {
                return Err(invalid("container", format!("right wall x = {right} is not right of left = {}", c.left)));
            }
            let wall = |point: DVec2, normal: DVec2| Surface {
                geometry: crate::surface::SurfaceGeometry::Line { point, normal },
                friction: def.friction,
                restitution: def.restitution,
                rolling_resistance: def.rolling_resistance,
                kinetic_friction: None,
                material: None,
            };
            for s in [
                wall(DVec2::new(0.0, c.floor), DVec2::Y),
                wall(DVec2::new(c.left, 0.0), DVec2::X),
                wall(DVec2::new(right, 0.0), -DVec2::X),
            ] {
                obstacle::surface_obstacles(&s, &mut static_obstacles);
            }
            extent.add(DVec2::new(c.left, c.floor));
            extent.add(DVec2::new(right, c.floor));
        }

        // World bounds.
        let bounds = match &def.bounds {
            Some(r) => {
                if !(r.min.is_finite() && r.max.is_finite() && r.min.x < r.max.x && r.min.y < r.max.y) {
                    return Err(invalid("bounds", "needs finite min < max"));
                }
                (r.min, r.max)
            }
            None => {
                for s in &spawn {
                    spawn_extent(s, &mut extent);
                }
                for o in &static_obstacles {
                    match o.kind {
                        obstacle::kind::CIRCLE => {
                            let r = f64::from(o.b.x);
                            extent.add(o.a.as_dvec2() - DVec2::splat(r));
                            extent.add(o.a.as_dvec2() + DVec2::splat(r));
                        }
                        obstacle::kind::SEGMENT => {
                            extent.add(o.a.as_dvec2());
                            extent.add(o.b.as_dvec2());
                        }
                        _ => {}
                    }
                }
                let (min, max) = extent.get().ok_or_else(|| invalid("bounds", "cannot derive bounds: no spawner"))?;
                let grow = (max - min) * 0.5 + DVec2::splat(4.0 * max_radius);
                (min - grow, max + grow)
            }
        };
        let cell = (2.0 * max_radius + skin) as f32;
        let size = (bounds.1 - bounds.0).as_vec2();
        let (nx, ny) = ((size.x / cell).ceil().max(1.0) as u64, (size.y / cell).ceil().max(1.0) as u64);
        let cells = nx.saturating_mul(ny);
        let bytes = total.saturating_mul(CPU_BYTES_PER_BALL).saturating_add(cells.saturating_mul(4));
        if bytes > memory_limit {
            return Err(PopulationError::TooLarge {
                count: total,
                bytes,
                per_ball: CPU_BYTES_PER_BALL,
                extra: format!(" + 4 per grid cell × {cells}"),
                backend: "cpu",
                limit: memory_limit,
                limit_name: "this machine's memory, MemTotal".into(),
            });
        }

        if cells > MAX_CELLS {
            return Err(invalid(
                "bounds",
                format!(
                    "the world {} × {} m needs {cells} grid cells of {cell} m, over the limit of {MAX_CELLS} \
                     (MAX_CELLS); give smaller bounds",
                    size.x, size.y
                ),
            ));
        }
        let n = total as usize;
        let mut pop = Population {
            params: PopulationParams {
                material: contact::Material {
                    restitution: def.restitution as f32,
                    friction: def.friction as f32,
                    rolling_resistance: def.rolling_resistance as f32,
                },
                resting_speed: def.resting_speed.map(|v| v as f32),
                substeps: def.substeps,
                iterations: def.iterations,
                stabilise_every: def.stabilise_every,
                relaxation: def.relaxation as f32,
                skin: skin as f32,
                resort_every: def.resort_every,
                bounds: (bounds.0.as_vec2(), bounds.1.as_vec2()),
                kill: def.kill.iter().map(spawn::rect32).collect(),
            },
            position: Vec::with_capacity(n),
            velocity: Vec::with_capacity(n),
            angle: vec![0.0; n],
            omega: vec![0.0; n],
            radius: Vec::with_capacity(n),
            inv_mass: Vec::with_capacity(n),
            state: Vec::with_capacity(n),
            release_step: Vec::with_capacity(n),
            ball_id: (0..n as u32).collect(),
            grid: GridSpec { origin: bounds.0.as_vec2(), cell, nx: nx as u32, ny: ny as u32 },
            obstacles: static_obstacles.clone(),
            static_obstacles,
            gravity: gravity.as_vec2(),
            fields: fields.iter().map(GpuField::from).collect(),
            steps: 0,
            max_radius: max_radius as f32,
            list_overflow: 0,
            max_overlap_seen: 0.0,
            window: (0, 0),
            ball_visits: 0,
            scratch: cpu::Scratch::default(),
        };
        for s in &spawn {
            spawn::generate(s, (def.radius, def.radius_max), |b| {
                let mass = def.density * std::f64::consts::PI * b.radius * b.radius;
                pop.position.push(b.position.as_vec2());
                pop.velocity.push(b.velocity.as_vec2());
                pop.radius.push(b.radius as f32);
                pop.inv_mass.push((1.0 / mass) as f32);
                // The first step at whose start the ball is due (a relative
                // margin keeps k/rate = k·dt on step k despite rounding).
                let step = (b.release / dt * (1.0 - 1e-12)).ceil();
                if b.release > 0.0 {
                    pop.state.push(state::PENDING);
                    pop.release_step.push(step.min(f64::from(u32::MAX)) as u32);
                } else {
                    pop.state.push(state::ALIVE);
                    pop.release_step.push(0);
                }
            });
        }
        pop.sort_by_release();
        pop.window = (0, pop.release_step.partition_point(|&r| r == 0));
        Ok(pop)
    }

    /// Orders the balls by release step (stable: balls released at the same
    /// step keep the spawners' order), so that the balls in the world are a
    /// prefix that the release cursor grows. A scene whose spawners list
    /// their balls in release order (grids and boxes, then emitters) keeps
    /// its indices.
    fn sort_by_release(&mut self) {
        if self.release_step.is_sorted() {
            return;
        }
        let mut order: Vec<u32> = (0..self.len() as u32).collect();
        order.sort_by_key(|&i| self.release_step[i as usize]);
        fn permute<T: Copy>(v: &mut Vec<T>, order: &[u32]) {
            *v = order.iter().map(|&i| v[i as usize]).collect();
        }
        permute(&mut self.position, &order);
        permute(&mut self.velocity, &order);
        permute(&mut self.angle, &order);
        permute(&mut self.omega, &order);
        permute(&mut self.radius, &order);
        permute(&mut self.inv_mass, &order);
        permute(&mut self.state, &order);
        permute(&mut self.release_step, &order);
    }

    /// Whether the step after `steps` steps re-sorts the balls by cell (both
    /// backends: steps K, 2K, … of `resort_every` = K; never for K = 0).
    pub fn resort_due(&self) -> bool {
        let every = u64::from(self.params.resort_every);
        every > 0 && (self.steps + 1).is_multiple_of(every)
    }

    /// Re-sorts the balls of the live range by grid cell now (on the CPU; the
    /// step does it by itself every [`PopulationParams::resort_every`]
    /// steps): the balls out of the world first, in index order, then the
    /// balls in the world by cell, ties by id (deterministic). Every
    /// per-ball array moves; [`Population::ball_id`] keeps each ball's name.
    /// Changes no result, bitwise: the step visits a cell's balls by id, so
    /// in the same order before and after, and a pair's formulas are exactly
    /// antisymmetric in its two balls (IEEE negation is exact) when the
    /// re-sort flips which of them has the lower slot.
    pub fn resort(&mut self) {
        let live = self.live_range();
        cpu::resort(self, &live);
        self.close_window();
    }

    /// Slot of each ball id: `position[slots_by_id()[id]]` is ball `id`'s
    /// position (the inverse of [`Population::ball_id`]).
    pub fn slots_by_id(&self) -> Vec<usize> {
        let mut slots = vec![0; self.len()];
        for (slot, &id) in self.ball_id.iter().enumerate() {
            slots[id as usize] = slot;
        }
        slots
    }

    /// A copy with the balls back in id order (`ball_id[i] = i`): what the
    /// outputs and the tests read balls by index from.
    pub fn in_original_order(&self) -> Population {
        let slots = self.slots_by_id();
        fn gather<T: Copy>(v: &[T], slots: &[usize]) -> Vec<T> {
            slots.iter().map(|&s| v[s]).collect()
        }
        Population {
            params: self.params.clone(),
            position: gather(&self.position, &slots),
            velocity: gather(&self.velocity, &slots),
            angle: gather(&self.angle, &slots),
            omega: gather(&self.omega, &slots),
            radius: gather(&self.radius, &slots),
            inv_mass: gather(&self.inv_mass, &slots),
            state: gather(&self.state, &slots),
            release_step: gather(&self.release_step, &slots),
            ball_id: (0..self.len() as u32).collect(),
            grid: self.grid,
            static_obstacles: self.static_obstacles.clone(),
            obstacles: self.obstacles.clone(),
            gravity: self.gravity,
            fields: self.fields.clone(),
            steps: self.steps,
            max_radius: self.max_radius,
            list_overflow: self.list_overflow,
            max_overlap_seen: self.max_overlap_seen,
            // The window's bounds are slots of the sorted arrays: the copy
            // is for reading; stepping it visits every ball.
            window: (0, self.window.1.max(self.window.0)),
            ball_visits: self.ball_visits,
            scratch: cpu::Scratch::default(),
        }
    }

    /// The balls the step's kernels visit, on either backend: from the first
    /// ball not yet removed (escaped or killed) to the release cursor (the
    /// balls are sorted by release step, so the pending balls are the tail
    /// and releasing one moves the cursor by one). A step costs time in
    /// proportion to this range, not to the whole population: an emitter
    /// that has released k of its N balls costs O(k), and when balls leave
    /// in about the order they came (a Galton board, an hourglass draining
    /// into a kill region) O(balls in flight).
    pub fn live_range(&self) -> std::ops::Range<usize> {
        self.window.0..self.window.1
    }

    /// Ball slots visited by the step's kernels so far: the sum over the
    /// steps of the length of [`live_range`](Self::live_range) (each kernel
    /// of a step runs over that range once per pass).
    pub fn ball_visits(&self) -> u64 {
        self.ball_visits
    }

    /// Moves the release cursor to the balls due at `step` (before the
    /// step's kernels run) and counts the window's balls as visited.
    pub(crate) fn open_window(&mut self, step: u64) -> std::ops::Range<usize> {
        let (lo, mut hi) = self.window;
        let n = self.len();
        hi = hi.min(n);
        while hi < n && u64::from(self.release_step[hi]) <= step {
            hi += 1;
        }
        self.window = (lo.min(hi), hi);
        self.ball_visits += (hi - self.window.0) as u64;
        self.live_range()
    }

    /// Moves the window's start past the balls that left the world (after
    /// the bounds check, or after a GPU readback: the host then knows the
    /// states).
    pub(crate) fn close_window(&mut self) {
        let (mut lo, hi) = self.window;
        while lo < hi && matches!(self.state[lo], state::ESCAPED | state::KILLED) {
            lo += 1;
        }
        self.window = (lo, hi);
    }

    /// Number of balls (in every state).
    pub fn len(&self) -> usize {
        self.position.len()
    }

    /// Whether there are no balls.
    pub fn is_empty(&self) -> bool {
        self.position.is_empty()
    }

    /// Replaces the moving obstacles by the bodies at their current pose
    /// (static obstacles kept). Bodies get the balls' material.
    pub fn set_body_obstacles(&mut self, bodies: &[Body]) {
        self.obstacles.clear();
        self.obstacles.extend_from_slice(&self.static_obstacles);
        let m = self.params.material;
        for b in bodies {
            obstacle::body_obstacles(b, m.restitution, m.friction, &mut self.obstacles);
        }
    }

    /// The resting speed for step `dt`.
    pub fn resting_speed(&self, dt: f32) -> f32 {
        self.params.resting_speed.unwrap_or(2.0 * self.gravity.length() * dt)
    }

    /// Mass of ball `i` (kg).
    pub fn mass(&self, i: usize) -> f32 {
        1.0 / self.inv_mass[i]
    }

    /// Counters, kinetic energy and the largest overlap at the current
    /// positions (neighbours and obstacles searched afresh).
    pub fn stats(&self) -> PopulationStats {
        cpu::stats(self)
    }
}

#[derive(Default)]
struct Extent(Option<(DVec2, DVec2)>);

impl Extent {
    fn add(&mut self, p: DVec2) {
        self.0 = Some(match self.0 {
            None => (p, p),
            Some((a, b)) => (a.min(p), b.max(p)),
        });
    }
    fn get(&self) -> Option<(DVec2, DVec2)> {
        self.0
    }
}

fn spawn_extent(s: &SpawnDef, extent: &mut Extent) {
    match *s {
        SpawnDef::Grid { origin, count, spacing, .. } => {
            let cols = s.columns();
            let rows = count.div_ceil(cols.max(1));
            extent.add(origin);
            extent.add(origin + DVec2::new(cols.saturating_sub(1) as f64, rows.saturating_sub(1) as f64) * spacing);
        }
        SpawnDef::RandomBox { min, max, .. } => {
            extent.add(min);
            extent.add(max);
        }
        SpawnDef::Emitter { position, .. } => extent.add(position),
    }
}
