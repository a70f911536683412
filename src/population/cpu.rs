//! The CPU twin of `shaders/population.wgsl`: the same stages, pass for
//! pass (the velocity pass split in two phases over owned pairs,
//! `owned_pairs`, with bitwise the GPU kernel's per-ball sums), as rayon
//! loops over a structure of arrays in f32. Every per-ball
//! loop writes only its own ball from buffers that no one writes meanwhile;
//! the substeps (`src/population/substep.rs`) run as one list of phases
//! walked by one team of threads (`src/team.rs`), the Gauss–Seidel
//! position sweeps one colour at a time, chunks of cells, each cell writing
//! only the balls of the 3 × 3 cells around it (disjoint within a colour:
//! the proof is in [`crate::population`]). So the
//! result is the same at every pool size (tested at 1, 2, 3, 7, 16 and 64
//! threads).

use std::ops::Range;

use glam::Vec2;
use rayon::prelude::*;

use super::obstacle::{Obstacle, kind};
use super::stage_times::{PopulationStage, StageClock};
use super::substep::{SideImpulse, SweepBall};
use super::{GridSpec, MAX_NEIGHBOURS, MAX_OBSTACLES, Population, PopulationError, PopulationStats, state};
use crate::gpu::GpuField;

/// Balls per rayon task (below this the fork-join costs more than it saves).
pub(crate) const CHUNK: usize = 512;

/// Cells per rayon task in a colour of the Gauss–Seidel sweep.
pub(crate) const CELL_CHUNK: usize = 64;

/// Relative margin on squared distances under which a pair is skipped
/// without its square root: 1e-4 is far above the few ulps (~1e-7) by which
/// `|r|²` and `|r|` computed in f32 can disagree, so a skipped pair is one
/// the exact test would have skipped too (the results are bitwise the same).
pub(crate) const FAR_MARGIN: f32 = 1e-4;

/// A contact counts in the velocity pass when it overlapped before the
/// position solve or its gap is below this fraction of the radii after it.
pub const ACTIVE_SLOP: f32 = 1e-3;

/// Step scratch, reused between steps.
#[derive(Clone, Debug, Default)]
pub(crate) struct Scratch {
    /// Tests only: run the predict phase in every substep (the schedule
    /// before the predictions moved into the finish phase), to compare the
    /// two bit for bit.
    #[cfg(test)]
    pub(crate) predict_phase_every_substep: bool,
    pub(crate) acc: Vec<Vec2>,
    pub(crate) v_pre: Vec<Vec2>,
    pub(crate) x_pred: Vec<Vec2>,
    pub(crate) dx: Vec<Vec2>,
    /// What the substeps' pair loops read of a ball, one 16-byte record
    /// each ([`SweepBall`]: latest position, radius, inverse mass).
    pub(crate) sweep_ball: Vec<SweepBall>,
    pub(crate) contacts: Vec<u32>,
    pub(crate) cell_of: Vec<u32>,
    pub(crate) cell_start: Vec<u32>,
    pub(crate) sorted: Vec<u32>,
    pub(crate) neighbours: Vec<u32>,
    pub(crate) neighbour_count: Vec<u32>,
    pub(crate) obstacle_ids: Vec<u32>,
    pub(crate) obstacle_count: Vec<u32>,
    /// The pairs each ball computes (`MAX_NEIGHBOURS` slots a ball, the
    /// other ball of each; [`owned_pairs`]): first its listed neighbours of
    /// higher id (`owned_count`, list order: the pairs its sweeps project),
    /// then its orphans (up to `pair_count`: the velocity pass only).
    pub(crate) owned: Vec<u32>,
    /// Pairs a ball projects in the sweeps (the first of its `owned` slots).
    pub(crate) owned_count: Vec<u32>,
    /// Pairs a ball computes in the velocity pass (`owned_count` + orphans).
    pub(crate) pair_count: Vec<u32>,
    /// Each owned pair's entry in its ball's neighbour list.
    pub(crate) owned_entry: Vec<u8>,
    /// Each owned pair's entry in the other ball's list, [`NO_MIRROR`] where
    /// that list does not hold the pair.
    pub(crate) mirror: Vec<u8>,
    /// The impulse each entry of the neighbour lists gives its ball in the
    /// substep's velocity pass, written by the pair's owner.
    pub(crate) side_impulse: Vec<SideImpulse>,
    /// Whether the entry's pair takes part in the substep's velocity pass
    /// (its `side_impulse` written); written with it by the pair's owner.
    pub(crate) side_active: Vec<bool>,
    /// The pairs the sweeps project (each ball's owned pairs, before its
    /// orphans), in the order the sweeps visit their balls (colour, cell,
    /// id: [`sweep_order_pairs`]), with their rebound distances for the
    /// substep (`count_contacts`): a sweep reads them as one stream.
    pub(crate) sweep_pairs: Vec<SweepPair>,
    /// Each ball's pairs in `sweep_pairs` (start, end).
    pub(crate) sweep_range: Vec<[u32; 2]>,
    /// Rebound distance of each listed obstacle for the substep.
    pub(crate) obstacle_extra: Vec<f32>,
    /// The re-sort's gather order (`resort`).
    pub(crate) order: Vec<u32>,
    /// The cells holding balls, by colour (`colour_of_cell`), rebuilt with
    /// the grid.
    pub(crate) colour_cells: [Vec<u32>; COLOURS],
}

/// A pair a sweep projects, as the sweep reads it ([`Scratch::sweep_pairs`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct SweepPair {
    /// The other ball (its slot; the projecting ball is the one whose
    /// range holds the pair).
    pub(crate) other: u32,
    /// The pair's rebound distance for the substep's solve sweeps, written
    /// by `count_contacts`.
    pub(crate) rebound: f32,
}

/// Colours of the Gauss–Seidel sweep: a cell (cx, cy) has colour
/// `(cy mod 3)·3 + (cx mod 3)`.
pub const COLOURS: usize = 9;

/// The colour of cell (cx, cy): rows of the bottom band first (see the
/// proof in the module doc of [`crate::population`]).
#[inline]
pub fn colour_of_cell(cx: u32, cy: u32) -> usize {
    (cy % 3 * 3 + cx % 3) as usize
}

/// Advances the population by `dt` (see the module doc of
/// [`crate::population`] for the stages).
pub fn step(pop: &mut Population, dt: f32) -> Result<(), PopulationError> {
    // The step's ~60 parallel loops are started from a worker of the pool:
    // one hand-over to the pool per step instead of one per loop, which is
    // most of a step's cost when the live range is a few balls (one chunk,
    // run in place) — an emitter's first balls, a Galton board.
    // The clock starts here: the hand-over to the pool is charged to the
    // first stage (`release`)
    // and the return from it to the last (`bounds`), so that the stages
    // add up to the whole step.
    let mut clock = StageClock::start(pop.stage_times);
    let result = if rayon::current_thread_index().is_none() {
        rayon::scope(|_| step_in_pool(pop, dt, &mut clock))
    } else {
        step_in_pool(pop, dt, &mut clock)
    };
    clock.lap(PopulationStage::Bounds);
    clock.times.timed_steps += 1;
    pop.stage_times = clock.times;
    result
}

fn step_in_pool(pop: &mut Population, dt: f32, clock: &mut StageClock) -> Result<(), PopulationError> {
    let n = pop.len();
    let s = &mut pop.scratch;
    for v in [&mut s.acc, &mut s.v_pre, &mut s.x_pred, &mut s.dx] {
        v.resize(n, Vec2::ZERO);
    }
    s.sweep_ball.resize(n, SweepBall::default());
    s.contacts.resize(n, 1);
    s.side_impulse.resize(n * MAX_NEIGHBOURS, SideImpulse::NONE);
    s.side_active.resize(n * MAX_NEIGHBOURS, false);
    s.obstacle_extra.resize(n * MAX_OBSTACLES, 0.0);
    // Every kernel visits only the live range (release cursor onwards from
    // the first ball still in the world), indexing the arrays by ball.
    let live = pop.open_window(pop.steps + 1);
    release(&mut pop.state[live.clone()], &pop.release_step[live.clone()], pop.steps + 1);
    clock.lap(PopulationStage::Release);
    if pop.resort_due() {
        resort(pop, &live);
        clock.lap(PopulationStage::Resort);
    }
    apply_fields(
        &pop.fields,
        pop.gravity,
        &pop.position,
        &pop.velocity,
        &pop.radius,
        &pop.inv_mass,
        &pop.state,
        &mut pop.scratch.acc,
        &live,
    );
    clock.lap(PopulationStage::Fields);
    build_grid(&pop.grid, &pop.position, &pop.state, &pop.ball_id, &mut pop.scratch, &live);
    clock.lap(PopulationStage::Grid);
    pop.list_overflow += find_neighbours(pop, dt, &live);
    if pop.params.sleep_time > 0.0 {
        wake(pop, &live);
    }
    owned_pairs(&pop.ball_id, &mut pop.scratch, &live);
    sweep_order_pairs(&mut pop.scratch, &live);
    // The corrections start at zero (then finish_substep clears them).
    par_live(&mut pop.scratch.dx, &live).for_each(|(_, d)| *d = Vec2::ZERO);
    let substeps = pop.params.substeps;
    let h = dt / substeps as f32;
    let resting = pop.resting_speed(dt);
    clock.lap(PopulationStage::Neighbours);
    super::substep::run(pop, h, resting, &live, clock);
    pop.steps += 1;
    if pop.params.sleep_time > 0.0 {
        fall_asleep(pop, dt, &live);
    }
    let result = check_bounds(pop, &live);
    pop.close_window();
    clock.lap(PopulationStage::Bounds);
    result
}

/// Items `live` of a per-ball array, in parallel, with their ball index.
fn par_live<'a, T: Send>(
    items: &'a mut [T],
    live: &Range<usize>,
) -> impl IndexedParallelIterator<Item = (usize, &'a mut T)> + 'a {
    let first = live.start;
    items[live.clone()].par_iter_mut().with_min_len(CHUNK).enumerate().map(move |(k, x)| (first + k, x))
}

/// Pending balls whose release step has come enter the world (called on
/// the live range: the balls are sorted by release step).
pub fn release(states: &mut [u32], release_step: &[u32], step: u64) {
    states.par_iter_mut().with_min_len(CHUNK).zip(release_step).for_each(|(s, &r)| {
        if *s == state::PENDING && u64::from(r) <= step {
            *s = state::ALIVE;
        }
    });
}

/// The f32 twin of `field_force` in `shaders/field_common.wgsl` (shared by
/// the field kernel and the population step): the force of one field on a ball.
#[inline]
pub fn field_force(f: &GpuField, p: Vec2, v: Vec2, mass: f32, radius: f32) -> Vec2 {
    let inside = match f.region_kind {
        1 => p.x >= f.region[0] && p.x <= f.region[2] && p.y >= f.region[1] && p.y <= f.region[3],
        2 => {
            let r = p - Vec2::new(f.region[0], f.region[1]);
            r.dot(r) <= f.region[2] * f.region[2]
        }
        3 => (p - Vec2::new(f.region[0], f.region[1])).dot(Vec2::new(f.region[2], f.region[3])) >= 0.0,
        _ => true,
    };
    if !inside {
        return Vec2::ZERO;
    }
    let scale = if f.flags & 1 != 0 { mass } else { 1.0 };
    match f.kind {
        0 => Vec2::new(f.params[0], f.params[1]) * scale,
        1 | 2 => {
            let r = p - Vec2::new(f.params[0], f.params[1]);
            let softening = f.params[3];
            let d = (r.dot(r) + softening * softening).sqrt();
            if d <= 0.0 {
                return Vec2::ZERO;
            }
            let dir = r / d;
            let falloff = match f.falloff {
                1 => d,
                2 => 1.0 / d,
                3 => 1.0 / (d * d),
                _ => 1.0,
            };
            let magnitude = f.params[2] * falloff * scale;
            if f.kind == 1 { dir * magnitude } else { dir.perp() * magnitude }
        }
        3 => -v * (f.params[0] * if f.flags & 2 != 0 { radius } else { 1.0 }),
        _ => Vec2::ZERO,
    }
}

/// Acceleration of every ball in the world: gravity plus the fields' force
/// over the mass, held for the step.
#[allow(clippy::too_many_arguments)]
pub fn apply_fields(
    fields: &[GpuField],
    gravity: Vec2,
    position: &[Vec2],
    velocity: &[Vec2],
    radius: &[f32],
    inv_mass: &[f32],
    states: &[u32],
    acc: &mut [Vec2],
    live: &Range<usize>,
) {
    par_live(acc, live).for_each(|(i, a)| {
        if states[i] != state::ALIVE {
            *a = Vec2::ZERO;
            return;
        }
        let w = inv_mass[i];
        let mut force = Vec2::ZERO;
        for f in fields {
            force += field_force(f, position[i], velocity[i], 1.0 / w, radius[i]);
        }
        *a = gravity + force * w;
    });
}

/// Counting sort of the balls in the world by cell: `cell_start[c]..cell_start[c + 1]`
/// indexes `sorted` for cell `c`, balls in increasing id within a cell
/// ([`Population::ball_id`]; the balls of `live` only). Ordering a cell by
/// id, not by slot, makes the step independent of the arrays' order: the
/// neighbour lists and the Gauss–Seidel sweeps visit the same balls in the
/// same order whatever the re-sort did, so re-sorting changes no result.
pub(crate) fn build_grid(
    grid: &GridSpec,
    position: &[Vec2],
    states: &[u32],
    ball_id: &[u32],
    s: &mut Scratch,
    live: &Range<usize>,
) {
    let cells = grid.cells() as usize;
    s.cell_of.resize(position.len(), 0);
    par_live(&mut s.cell_of, live).for_each(|(i, c)| {
        *c = if states[i] == state::ALIVE {
            let (cx, cy) = grid.coords(position[i]);
            cy * grid.nx + cx
        } else {
            u32::MAX
        };
    });
    s.cell_start.clear();
    s.cell_start.resize(cells + 1, 0);
    for &c in &s.cell_of[live.clone()] {
        if c != u32::MAX {
            s.cell_start[c as usize + 1] += 1;
        }
    }
    for c in 0..cells {
        s.cell_start[c + 1] += s.cell_start[c];
    }
    let alive = s.cell_start[cells] as usize;
    s.sorted.resize(alive, 0);
    // The scatter cursor is the start of each cell, advanced as balls land.
    let mut cursor = s.cell_start[..cells].to_vec();
    for (i, &c) in s.cell_of.iter().enumerate().take(live.end).skip(live.start) {
        if c != u32::MAX {
            let slot = &mut cursor[c as usize];
            s.sorted[*slot as usize] = i as u32;
            *slot += 1;
        }
    }
    // The occupied cells by colour, in cell order (the sweep's work lists).
    for list in &mut s.colour_cells {
        list.clear();
    }
    for c in 0..cells {
        let (start, end) = (s.cell_start[c] as usize, s.cell_start[c + 1] as usize);
        if end > start {
            // A cell's few balls by id (insertion sort: the scatter leaves
            // them by slot, which after a re-sort is by id but for the balls
            // that changed cells since).
            let segment = &mut s.sorted[start..end];
            for k in 1..segment.len() {
                let key = segment[k];
                let mut m = k;
                while m > 0 && ball_id[segment[m - 1] as usize] > ball_id[key as usize] {
                    segment[m] = segment[m - 1];
                    m -= 1;
                }
                segment[m] = key;
            }
            let (cx, cy) = (c as u32 % grid.nx, c as u32 / grid.nx);
            s.colour_cells[colour_of_cell(cx, cy)].push(c as u32);
        }
    }
}

/// The re-sort by cell (`Population::resort`; the GPU's `resort_*`
/// kernels): the grid is built, then every per-ball array of `live` is
/// gathered in the order "balls out of the world (slot order), then
/// `sorted`" (cell, ties by id). The out-of-world balls go first so that
/// the window's start moves past them (`Population::close_window`).
pub(crate) fn resort(pop: &mut Population, live: &Range<usize>) {
    build_grid(&pop.grid, &pop.position, &pop.state, &pop.ball_id, &mut pop.scratch, live);
    let s = &mut pop.scratch;
    let states = &pop.state;
    s.order.clear();
    s.order.extend(live.clone().filter(|&i| states[i] != state::ALIVE).map(|i| i as u32));
    s.order.extend_from_slice(&s.sorted);
    debug_assert_eq!(s.order.len(), live.len(), "every ball of the live range is released");
    let order = &s.order;
    fn gather<T: Copy + Send + Sync>(v: &mut [T], live: &Range<usize>, order: &[u32]) {
        let old = v[live.clone()].to_vec();
        v[live.clone()].par_iter_mut().with_min_len(CHUNK).zip(order).for_each(|(x, &from)| {
            *x = old[from as usize - live.start];
        });
    }
    gather(&mut pop.position, live, order);
    gather(&mut pop.velocity, live, order);
    gather(&mut pop.angle, live, order);
    gather(&mut pop.omega, live, order);
    gather(&mut pop.radius, live, order);
    gather(&mut pop.inv_mass, live, order);
    gather(&mut pop.state, live, order);
    gather(&mut pop.release_step, live, order);
    gather(&mut pop.rest, live, order);
    gather(&mut pop.ball_id, live, order);
}

/// Segments claim a ball only within a radius behind them (a ball deeper
/// than that belongs to another face of the outline).
#[inline]
pub(crate) fn obstacle_in_reach(o: &Obstacle, distance: f32, r: f32) -> bool {
    o.kind != kind::SEGMENT || distance > -r
}

/// Neighbour and obstacle lists of every ball; returns the contacts dropped
/// because a list was full. Balls are listed within `r_i + r_j + skin` plus
/// the distance the pair can close in the step, `|v_i − v_j|·dt` (the 3 × 3
/// cells around a ball cover one cell, `2 r_max + skin`, so a pair closing
/// faster than `skin/dt` can still be missed). Obstacles are listed within `r + skin` plus the
/// distance the ball and the obstacle's surface there can close in the step,
/// `(|v| + |v_o|)·dt`: a moving paddle or a ball shoved by the pile must
/// not pass an obstacle it did not list.
fn find_neighbours(pop: &mut Population, dt: f32, live: &Range<usize>) -> u64 {
    let n = pop.len();
    let s = &mut pop.scratch;
    s.neighbours.resize(n * MAX_NEIGHBOURS, 0);
    s.neighbour_count.resize(n, 0);
    s.obstacle_ids.resize(n * MAX_OBSTACLES, 0);
    s.obstacle_count.resize(n, 0);
    let (grid, skin) = (pop.grid, pop.params.skin);
    let (position, velocity, radius, states, obstacles) =
        (&pop.position, &pop.velocity, &pop.radius, &pop.state, &pop.obstacles);
    let (cell_start, sorted) = (&s.cell_start, &s.sorted);
    let overflow_n: u64 = s.neighbours[live.start * MAX_NEIGHBOURS..live.end * MAX_NEIGHBOURS]
        .par_chunks_mut(MAX_NEIGHBOURS)
        .with_min_len(CHUNK)
        .zip(s.neighbour_count[live.clone()].par_iter_mut())
        .enumerate()
        .map(|(k, (list, count))| {
            let i = live.start + k;
            *count = 0;
            if states[i] != state::ALIVE {
                return 0;
            }
            let (p, r) = (position[i], radius[i]);
            let (cx, cy) = grid.coords(p);
            let mut dropped = 0;
            for y in cy.saturating_sub(1)..=(cy + 1).min(grid.ny - 1) {
                for x in cx.saturating_sub(1)..=(cx + 1).min(grid.nx - 1) {
                    let c = (y * grid.nx + x) as usize;
                    for &j in &sorted[cell_start[c] as usize..cell_start[c + 1] as usize] {
                        if j as usize == i {
                            continue;
                        }
                        // The pair's closing distance in the step joins the
                        // skin: a fast pair must not meet unlisted.
                        let closing = (velocity[j as usize] - velocity[i]).length() * dt;
                        let reach = r + radius[j as usize] + skin + closing;
                        if (position[j as usize] - p).length_squared() < reach * reach {
                            if (*count as usize) < MAX_NEIGHBOURS {
                                list[*count as usize] = j;
                                *count += 1;
                            } else {
                                dropped += 1;
                            }
                        }
                    }
                }
            }
            dropped
        })
        .sum();
    let overflow_o: u64 = s.obstacle_ids[live.start * MAX_OBSTACLES..live.end * MAX_OBSTACLES]
        .par_chunks_mut(MAX_OBSTACLES)
        .with_min_len(CHUNK)
        .zip(s.obstacle_count[live.clone()].par_iter_mut())
        .enumerate()
        .map(|(k, (list, count))| {
            let i = live.start + k;
            *count = 0;
            if states[i] != state::ALIVE {
                return 0;
            }
            let (p, r) = (position[i], radius[i]);
            let mut dropped = 0;
            // Each listed obstacle's distance: a full list keeps the nearest.
            let mut listed = [0.0f32; MAX_OBSTACLES];
            for (k, o) in obstacles.iter().enumerate() {
                let d = o.contact(p).distance;
                let reach = r + skin + (velocity[i].length() + o.velocity_at(p).length()) * dt;
                if d < reach && obstacle_in_reach(o, d, reach) {
                    if (*count as usize) < MAX_OBSTACLES {
                        (list[*count as usize], listed[*count as usize]) = (k as u32, d);
                        *count += 1;
                    } else {
                        dropped += 1;
                        let far = farthest_listed(&listed);
                        if d < listed[far] {
                            (list[far], listed[far]) = (k as u32, d);
                        }
                    }
                }
            }
            dropped
        })
        .sum();
    overflow_n + overflow_o
}

/// The slot of a full obstacle list holding the farthest obstacle (the
/// first such slot on a tie). A ball near finely tessellated curves (256
/// chords an ellipse) reaches more chords than the list holds; a full list
/// used to keep the first in obstacle order, so a wall listed after a hill's
/// chords was dropped and balls wedged between the two left through the
/// wall. Now a nearer obstacle takes the farthest one's slot (the same rule
/// in `shaders/population.wgsl`'s `find_neighbours`); a list that does not
/// overflow keeps obstacle order, as before.
pub(crate) fn farthest_listed(distances: &[f32; MAX_OBSTACLES]) -> usize {
    let mut far = 0;
    for (slot, &d) in distances.iter().enumerate().skip(1) {
        if d > distances[far] {
            far = slot;
        }
    }
    far
}

/// The `mirror` of an owned pair whose other ball does not list it.
pub(crate) const NO_MIRROR: u8 = u8::MAX;
// A list entry fits in a byte, apart from NO_MIRROR.
const _: () = assert!(MAX_NEIGHBOURS < NO_MIRROR as usize);

/// The owned-pair lists of the step (after `find_neighbours`), so that the
/// substeps read no ids and skip nothing. Ball `i` owns the pairs with its
/// listed neighbours of higher *id* (as the sweeps did when they skipped
/// the others: ids, not slots, so that a re-sort changes nothing), in list
/// order; after them come its *orphans*, listed neighbours of lower id whose
/// full list dropped `i` (the former per-side velocity pass gave such a pair
/// to `i` alone, and no sweep projects it). For each, the pair's entry in
/// `i`'s list (`owned_entry`) and the other side's entry in the other
/// ball's list (`mirror`, or [`NO_MIRROR`] where that list does not hold
/// `i`), where the velocity pass writes the two sides' impulses.
pub(crate) fn owned_pairs(ball_id: &[u32], s: &mut Scratch, live: &Range<usize>) {
    let n = s.neighbour_count.len();
    s.owned.resize(n * MAX_NEIGHBOURS, 0);
    s.owned_entry.resize(n * MAX_NEIGHBOURS, 0);
    s.mirror.resize(n * MAX_NEIGHBOURS, 0);
    s.owned_count.resize(n, 0);
    s.pair_count.resize(n, 0);
    let (neighbours, neighbour_count) = (&s.neighbours, &s.neighbour_count);
    let listed = |i: usize| &neighbours[i * MAX_NEIGHBOURS..i * MAX_NEIGHBOURS + neighbour_count[i] as usize];
    // The entry of ball i in ball j's list, if j's list holds it.
    let entry_of = |i: usize, j: usize| listed(j).iter().position(|&e| e as usize == i).map(|k| k as u8);
    let lists = live.start * MAX_NEIGHBOURS..live.end * MAX_NEIGHBOURS;
    s.owned[lists.clone()]
        .par_chunks_mut(MAX_NEIGHBOURS)
        .with_min_len(CHUNK)
        .zip(s.owned_entry[lists.clone()].par_chunks_mut(MAX_NEIGHBOURS))
        .zip(s.mirror[lists].par_chunks_mut(MAX_NEIGHBOURS))
        .zip(s.owned_count[live.clone()].par_iter_mut().zip(s.pair_count[live.clone()].par_iter_mut()))
        .enumerate()
        .for_each(|(k, (((owned, owned_entry), mirror), (owned_count, pair_count)))| {
            let i = live.start + k;
            let id = ball_id[i];
            let mut count = 0;
            for (entry, &j) in listed(i).iter().enumerate() {
                if ball_id[j as usize] > id {
                    (owned[count], owned_entry[count]) = (j, entry as u8);
                    mirror[count] = entry_of(i, j as usize).unwrap_or(NO_MIRROR);
                    count += 1;
                }
            }
            *owned_count = count as u32;
            for (entry, &j) in listed(i).iter().enumerate() {
                if ball_id[j as usize] < id && entry_of(i, j as usize).is_none() {
                    (owned[count], owned_entry[count], mirror[count]) = (j, entry as u8, NO_MIRROR);
                    count += 1;
                }
            }
            *pair_count = count as u32;
        });
}

/// The sweeps' pairs in the order the sweeps visit their balls
/// ([`Scratch::sweep_pairs`], after [`owned_pairs`] and the grid): the
/// colours in order, each colour's cells in order, each cell's balls by id —
/// the order of `Substeps::sweep` whatever the pool size (its chunks are
/// runs of a colour's cells), so that a sweep reads its pairs front to back
/// (a ball's list slots were a cache line each, fetched cold at 10⁵ balls).
/// Balls out of the world get an empty range.
pub(crate) fn sweep_order_pairs(s: &mut Scratch, live: &Range<usize>) {
    s.sweep_range.resize(s.owned_count.len(), [0, 0]);
    s.sweep_range[live.clone()].fill([0, 0]);
    s.sweep_pairs.clear();
    for cells in &s.colour_cells {
        for &c in cells {
            let c = c as usize;
            for &i in &s.sorted[s.cell_start[c] as usize..s.cell_start[c + 1] as usize] {
                let i = i as usize;
                let start = s.sweep_pairs.len() as u32;
                let owned = &s.owned[i * MAX_NEIGHBOURS..i * MAX_NEIGHBOURS + s.owned_count[i] as usize];
                s.sweep_pairs.extend(owned.iter().map(|&j| SweepPair { other: j, rebound: 0.0 }));
                s.sweep_range[i] = [start, s.sweep_pairs.len() as u32];
            }
        }
    }
}

/// The pair geometry in canonical orientation (`a` the lower index): unit
/// normal from `b` into `a` and the distance. Coincident centres get a fixed
/// normal so that both balls agree.
#[inline]
pub fn pair_normal(pa: Vec2, pb: Vec2) -> (Vec2, f32) {
    let r = pa - pb;
    let d = r.length();
    if d > 0.0 { (r / d, d) } else { (Vec2::X, 0.0) }
}

/// The wake pass (after the neighbour lists, before the substeps; the GPU's
/// `wake` kernel): a sleeper wakes (its rest timer set to 0) when
/// - a listed ball (within `r_i + r_j + skin + |v_j|·dt`: it may meet the
///   sleeper in the step) moves faster than `sleep_speed` — coming to hit
///   it, or moving away from under it. (A rule "its gap ≤ its speed · dt"
///   let a ball sliding at 2 m/s bounce off a sleeper as off a wall: the
///   contact's rebound distance makes it meet a ball a little farther away,
///   `tests/population_sleep.rs`);
/// - a listed ball, asleep or awake, overlaps it by more than
///   `wake_overlap` of the smaller radius;
/// - a listed obstacle moves (a body's surface velocity there is not 0), or
///   overlaps it by more than `wake_overlap` of its radius;
/// - nothing holds it up any more: no ball or obstacle touches it (gap at
///   most [`SUPPORT_GAP`] of its radius) on the side its acceleration
///   (gravity and the fields, `apply_fields`) pushes it to. A sleeper is
///   weightless: were the balls under it to creep away slower than
///   `sleep_speed`, it would hang in the air and fall by the gap when
///   woken. (A guard: on balls_box 10⁴, spawn seed 1, it changed no bit
///   — sleepers there never lost their support.)
///
/// It reads positions, velocities, radii and accelerations, which no ball
/// writes in it, and writes each ball's own timer: the same result at
/// every pool size.
pub(crate) fn wake(pop: &mut Population, live: &Range<usize>) {
    let params = &pop.params;
    let (position, velocity, radius, states, obstacles) =
        (&pop.position, &pop.velocity, &pop.radius, &pop.state, &pop.obstacles);
    let s = &pop.scratch;
    let acc = &s.acc;
    let (speed, depth) = (params.sleep_speed, params.wake_overlap);
    par_live(&mut pop.rest, live).for_each(|(i, rest)| {
        if states[i] != state::ALIVE || !params.asleep(*rest) {
            return;
        }
        let (p, r, a) = (position[i], radius[i], acc[i]);
        // Held up: a touching contact whose normal (into this ball)
        // opposes the acceleration; nothing to hold where there is none.
        let mut supported = a == Vec2::ZERO;
        let mut woken = false;
        let touching = SUPPORT_GAP * r;
        for &j in &s.neighbours[i * MAX_NEIGHBOURS..i * MAX_NEIGHBOURS + s.neighbour_count[i] as usize] {
            let j = j as usize;
            let (n, d) = pair_normal(p, position[j]);
            let gap = d - r - radius[j];
            // A sleeper's velocity is 0: the other ball's speed is the
            // pair's relative speed.
            woken |= velocity[j].length_squared() > speed * speed || -gap > depth * r.min(radius[j]);
            supported |= gap <= touching && n.dot(a) < 0.0;
        }
        for &o in &s.obstacle_ids[i * MAX_OBSTACLES..i * MAX_OBSTACLES + s.obstacle_count[i] as usize] {
            let o = &obstacles[o as usize];
            let c = o.contact(p);
            let reach = obstacle_in_reach(o, c.distance, r);
            woken |= o.velocity_at(p - c.normal * r) != Vec2::ZERO || (reach && r - c.distance > depth * r);
            supported |= reach && c.distance - r <= touching && c.normal.dot(a) < 0.0;
        }
        if woken || !supported {
            *rest = 0.0;
        }
    });
}

/// A contact within this fraction of a sleeper's radius (gap) touches it:
/// it holds the sleeper up (the wake pass, `wake`).
pub const SUPPORT_GAP: f32 = 1e-3;

/// The sleep timers at the step's end (before the bounds check; the GPU's
/// `fall_asleep` kernel): an awake ball slower than `sleep_speed` whose
/// spin speed |ω|·r is too adds `dt` to its timer, else the timer is 0; a
/// ball whose timer reaches `sleep_time` falls asleep with velocity and
/// spin set to 0. A sleeper's timer stays.
fn fall_asleep(pop: &mut Population, dt: f32, live: &Range<usize>) {
    let params = &pop.params;
    let (states, radius) = (&pop.state, &pop.radius);
    let speed = params.sleep_speed;
    par_live(&mut pop.rest, live)
        .zip(pop.velocity[live.clone()].par_iter_mut())
        .zip(pop.omega[live.clone()].par_iter_mut())
        .for_each(|(((i, rest), v), omega)| {
            if states[i] != state::ALIVE || params.asleep(*rest) {
                return;
            }
            let slow = v.length_squared() < speed * speed && (*omega * radius[i]).abs() < speed;
            *rest = if slow { *rest + dt } else { 0.0 };
            if params.asleep(*rest) {
                *v = Vec2::ZERO;
                *omega = 0.0;
            }
        });
}

/// Removes (and counts, through their state) balls outside the world or in
/// a kill region; a non-finite ball stops the run with its index.
fn check_bounds(pop: &mut Population, live: &Range<usize>) -> Result<(), PopulationError> {
    let (min, max) = pop.params.bounds;
    let kill = &pop.params.kill;
    let (position, velocity, ball_id) = (&pop.position, &pop.velocity, &pop.ball_id);
    let bad = par_live(&mut pop.state, live).map(|(i, s)| {
        if *s != state::ALIVE {
            return usize::MAX;
        }
        let (p, v) = (position[i], velocity[i]);
        if !(p.is_finite() && v.is_finite()) {
            // Named by its id: the lowest id, as on the GPU.
            return ball_id[i] as usize;
        }
        if p.x < min.x || p.y < min.y || p.x > max.x || p.y > max.y {
            *s = state::ESCAPED;
        } else if kill.iter().any(|(a, b)| p.x >= a.x && p.y >= a.y && p.x <= b.x && p.y <= b.y) {
            *s = state::KILLED;
        }
        usize::MAX
    });
    match bad.min() {
        Some(ball) if ball != usize::MAX => {
            let slot = pop.ball_id.iter().position(|&id| id as usize == ball).unwrap_or(ball);
            Err(PopulationError::NotFinite {
                step: pop.steps,
                ball,
                position: pop.position[slot],
                velocity: pop.velocity[slot],
            })
        }
        _ => Ok(()),
    }
}

/// Counters, kinetic energy and the largest overlap (the grid is rebuilt
/// from the current positions into a private scratch).
pub(crate) fn stats(pop: &Population) -> PopulationStats {
    let mut s = Scratch::default();
    build_grid(&pop.grid, &pop.position, &pop.state, &pop.ball_id, &mut s, &(0..pop.len()));
    let grid = pop.grid;
    let (position, radius, states) = (&pop.position, &pop.radius, &pop.state);
    let (kinetic, overlap) = (0..pop.len())
        .into_par_iter()
        .with_min_len(CHUNK)
        .filter(|&i| states[i] == state::ALIVE)
        .map(|i| {
            let m = f64::from(pop.mass(i));
            let r = f64::from(radius[i]);
            let ke = 0.5 * m * f64::from(pop.velocity[i].length_squared())
                + 0.25 * m * r * r * f64::from(pop.omega[i]).powi(2);
            let (p, r) = (position[i], radius[i]);
            let mut worst = 0.0f32;
            let (cx, cy) = grid.coords(p);
            for y in cy.saturating_sub(1)..=(cy + 1).min(grid.ny - 1) {
                for x in cx.saturating_sub(1)..=(cx + 1).min(grid.nx - 1) {
                    let c = (y * grid.nx + x) as usize;
                    for &j in &s.sorted[s.cell_start[c] as usize..s.cell_start[c + 1] as usize] {
                        let j = j as usize;
                        if j != i {
                            let o = r + radius[j] - (position[j] - p).length();
                            worst = worst.max(o / r.min(radius[j]));
                        }
                    }
                }
            }
            for o in &pop.obstacles {
                let d = o.contact(p).distance;
                if obstacle_in_reach(o, d, r) {
                    worst = worst.max((r - d) / r);
                }
            }
            (ke, f64::from(worst))
        })
        .reduce(|| (0.0, 0.0), |a, b| (a.0 + b.0, a.1.max(b.1)));
    let count = |code| states.par_iter().filter(|&&s| s == code).count() as u64;
    let alive = count(state::ALIVE);
    let asleep = (0..pop.len())
        .into_par_iter()
        .with_min_len(CHUNK)
        .filter(|&i| states[i] == state::ALIVE && pop.params.asleep(pop.rest[i]))
        .count() as u64;
    PopulationStats {
        alive,
        pending: count(state::PENDING),
        escaped: count(state::ESCAPED),
        killed: count(state::KILLED),
        kinetic_energy: kinetic,
        kinetic_per_ball: if alive > 0 { kinetic / alive as f64 } else { 0.0 },
        max_overlap_ratio: overlap,
        asleep,
        list_overflow: pop.list_overflow,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The population of scenes/balls_box.ron with `overrides` (`--set` syntax).
    fn balls_box(overrides: &[&str]) -> Population {
        let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/balls_box.ron"))
            .expect("scenes/balls_box.ron");
        let overrides: Vec<String> = overrides.iter().map(|o| o.to_string()).collect();
        let scene = crate::scene::Scene::parse_with_overrides(&text, "balls_box.ron", &overrides).expect("parses");
        scene.build_world().expect("balls_box builds").population.expect("a population")
    }

    /// The premises of the Gauss–Seidel sweep's safety argument
    /// ([`SharedCorrections`]) on a pile in motion: every listed pair's
    /// cells (at the grid build) are adjacent or equal, so a cell's thread
    /// touches only the 3 × 3 block around its cell; and two distinct cells
    /// of one colour are at least 3 apart along x or y, so their blocks are
    /// disjoint. Either failing would make the sweep a data race.
    #[test]
    fn listed_pairs_stay_in_the_three_by_three_block_of_their_cell() {
        let mut pop = balls_box(&["population.count=600"]);
        let mut pairs = 0usize;
        for _ in 0..40 {
            step(&mut pop, 1.0 / 60.0).expect("a finite step");
            let (s, nx) = (&pop.scratch, pop.grid.nx);
            let coords = |c: u32| ((c % nx) as i64, (c / nx) as i64);
            for i in 0..pop.len() {
                for &j in &s.neighbours[i * MAX_NEIGHBOURS..i * MAX_NEIGHBOURS + s.neighbour_count[i] as usize] {
                    let ((xi, yi), (xj, yj)) = (coords(s.cell_of[i]), coords(s.cell_of[j as usize]));
                    assert!((xi - xj).abs() <= 1 && (yi - yj).abs() <= 1, "pair {i}, {j}: cells not adjacent");
                    pairs += 1;
                }
            }
            for (colour, cells) in s.colour_cells.iter().enumerate() {
                for (k, &a) in cells.iter().enumerate() {
                    let (xa, ya) = coords(a);
                    assert_eq!(colour_of_cell(xa as u32, ya as u32), colour);
                    for &b in &cells[k + 1..] {
                        let (xb, yb) = coords(b);
                        assert!((xa - xb).abs() >= 3 || (ya - yb).abs() >= 3, "cells {a} and {b} share a block");
                    }
                }
            }
        }
        assert!(pairs > 1000, "only {pairs} listed pairs: the test would prove little");
    }

    /// The sweeps' pair stream (`sweep_order_pairs`) on a pile in motion:
    /// each ball's range holds its owned pairs in list order, and the ranges
    /// follow one another in the sweeps' visiting order (colour, cell, id)
    /// with no gap, covering the stream; balls out of the grid get none. A
    /// range off by one would project another ball's pairs; one out of
    /// order would make the sweeps read the stream in jumps.
    #[test]
    fn the_sweep_pair_stream_holds_each_balls_owned_pairs_in_visiting_order() {
        let mut pop = balls_box(&["population.count=700"]);
        let mut pairs = 0usize;
        for _ in 0..40 {
            step(&mut pop, 1.0 / 60.0).expect("a finite step");
            let s = &pop.scratch;
            let mut next = 0u32;
            let mut visited = vec![false; pop.len()];
            for cells in &s.colour_cells {
                for &c in cells {
                    let c = c as usize;
                    for &i in &s.sorted[s.cell_start[c] as usize..s.cell_start[c + 1] as usize] {
                        let i = i as usize;
                        let [start, end] = s.sweep_range[i];
                        assert_eq!(start, next, "ball {i}: its range does not follow the previous one");
                        let owned = &s.owned[i * MAX_NEIGHBOURS..i * MAX_NEIGHBOURS + s.owned_count[i] as usize];
                        let streamed: Vec<u32> =
                            s.sweep_pairs[start as usize..end as usize].iter().map(|p| p.other).collect();
                        assert_eq!(streamed, owned, "ball {i}");
                        next = end;
                        visited[i] = true;
                        pairs += owned.len();
                    }
                }
            }
            assert_eq!(next as usize, s.sweep_pairs.len(), "the ranges do not cover the stream");
            for (i, seen) in visited.iter().enumerate() {
                if !seen {
                    assert_eq!(s.sweep_range[i][0], s.sweep_range[i][1], "ball {i} out of the grid has pairs");
                }
            }
        }
        assert!(pairs > 1000, "only {pairs} streamed pairs: the test would prove little");
    }

    /// The owned-pair lists behind the velocity pass's once-per-pair split
    /// (`owned_pairs`), on a pile whose lists overflow (a wide skin), so that
    /// orphans occur: every entry of every neighbour list is written by
    /// exactly one computed pair (its own entry or its mirror), the owned
    /// pairs are the entries of higher id in list order (the sweeps' former
    /// skip), and an orphan is a pair of lower id whose other list does not
    /// hold the ball. A missed or doubled entry would change the sums.
    #[test]
    fn every_listed_pair_is_computed_once_with_orphans_of_full_lists() {
        let mut pop = balls_box(&["population.count=800", "population.skin=2.4"]);
        let (mut orphans, mut mirrored) = (0usize, 0usize);
        for _ in 0..60 {
            step(&mut pop, 1.0 / 60.0).expect("a finite step");
            let (s, id) = (&pop.scratch, &pop.ball_id);
            let listed =
                |i: usize| &s.neighbours[i * MAX_NEIGHBOURS..i * MAX_NEIGHBOURS + s.neighbour_count[i] as usize];
            let mut writers = vec![0u32; pop.len() * MAX_NEIGHBOURS];
            for i in 0..pop.len() {
                let (owned, paired) = (s.owned_count[i] as usize, s.pair_count[i] as usize);
                let higher: Vec<u32> = listed(i).iter().copied().filter(|&j| id[j as usize] > id[i]).collect();
                assert_eq!(&s.owned[i * MAX_NEIGHBOURS..i * MAX_NEIGHBOURS + owned], &higher[..], "ball {i}");
                for q in i * MAX_NEIGHBOURS..i * MAX_NEIGHBOURS + paired {
                    let (j, entry) = (s.owned[q] as usize, s.owned_entry[q] as usize);
                    assert_eq!(listed(i)[entry] as usize, j, "ball {i}: own entry");
                    writers[i * MAX_NEIGHBOURS + entry] += 1;
                    if s.mirror[q] != NO_MIRROR {
                        let m = j * MAX_NEIGHBOURS + s.mirror[q] as usize;
                        assert_eq!((m / MAX_NEIGHBOURS, s.neighbours[m] as usize), (j, i), "ball {i}: mirror");
                        writers[m] += 1;
                        mirrored += 1;
                    }
                    if q >= i * MAX_NEIGHBOURS + owned {
                        assert!(id[j] < id[i] && !listed(j).contains(&(i as u32)), "ball {i}: orphan {j}");
                        orphans += 1;
                    }
                }
            }
            for i in 0..pop.len() {
                for k in 0..s.neighbour_count[i] as usize {
                    assert_eq!(writers[i * MAX_NEIGHBOURS + k], 1, "ball {i} entry {k}");
                }
            }
        }
        assert!(pop.list_overflow > 0 && orphans > 0 && mirrored > 1000, "{orphans} orphans, {mirrored} mirrored");
    }
}
