//! The soft-step driver: what [`crate::world::World`] calls, stage by stage
//! (prepare, warm start, solve, integrate positions, relax, restitution,
//! finish).

use super::lanes::{LANES, SoftLanes, SweepInputs, sweep};
use super::manifold::{MAX_COLOURS, Pass, Shared, SoftTotals};
use crate::team::{Participant, Schedule, Shared as TeamShared, balanced_chunk};
use std::time::{Duration, Instant};

use super::SoftStepSettings;
use crate::contact::ContactSet;

/// Bodies from which a sub-step's position update runs on the pool.
const INTEGRATE_PARALLEL_BODIES: usize = 2048;

/// Pieces per thread of that update (a few, for balance).
const INTEGRATE_PIECES_PER_THREAD: usize = 2;

/// q += h·v for the bodies of `delta` (3 entries each in `q`, `v`, `q0`),
/// and each one's motion since the start of the step: (Δx, Δy, cos Δφ, sin Δφ).
fn integrate_positions(h: f64, delta: &mut [super::BodyDelta], q: &mut [f64], v: &[f64], q0: &[f64]) {
    for (i, d) in delta.iter_mut().enumerate() {
        for k in 0..3 {
            q[3 * i + k] += h * v[3 * i + k];
        }
        let dphi = q[3 * i + 2] - q0[3 * i + 2];
        *d = [q[3 * i] - q0[3 * i], q[3 * i + 1] - q0[3 * i + 1], dphi.cos(), dphi.sin()];
    }
}

/// Passes walked by one team at most (a longer list is walked in pieces).
const MAX_PASSES: usize = 16;

/// Chunks per thread of a shared colour: a few, so that a thread that the
/// machine delays leaves its share to the others instead of holding the phase.
const CHUNKS_PER_THREAD: usize = 2;

/// What [`ContactSet::soft_substeps`] hands back to the world.
pub(crate) struct SoftSubsteps {
    /// The contacts' work over the sub-steps (J): each sub-step's impulse
    /// work over its velocity jump, then the kinetic energy its relax changed.
    pub contact_work: f64,
    /// The kinetic energy after the last sub-step (J).
    pub kinetic_end: f64,
    /// The calling thread's time in the kicks and position updates (the
    /// `integrate` stage; the rest is the `contact_solve` stage).
    pub integrate: Duration,
}

impl ContactSet {
    /// The soft-step settings, when that is the contact solver.
    pub fn soft_step_settings(&self) -> Option<SoftStepSettings> {
        match self.settings.solver {
            crate::contact::ContactSolver::SoftStep(s) if self.settings.enabled => Some(s),
            _ => None,
        }
    }

    /// Manifolds in the largest colour swept on the pool (0 if none) at the
    /// last [`ContactSet::soft_prepare`]: tests check the parallel path is taken.
    pub fn soft_largest_colour(&self) -> usize {
        self.soft.totals_by_colour.iter().take(MAX_COLOURS as usize).map(Vec::len).max().unwrap_or(0)
    }

    /// Runs `passes` one after the other, each over every colour in order
    /// (a Gauss–Seidel sweep per pass). When the pool has several threads and
    /// some colour is large enough to share, one team of threads
    /// ([`crate::team`]) walks the whole list — one phase per colour and
    /// pass — instead of one rayon join per colour and pass: a sub-step's
    /// warm start and solve are one team, its relax sweeps another.
    fn soft_passes(&mut self, passes: &[Pass], v: &mut [f64], threshold: f64) {
        let threads = rayon::current_num_threads();
        let shared = Shared { ptr: v.as_mut_ptr(), len: v.len() };
        let mut by_colour = std::mem::take(&mut self.soft.by_colour);
        let mut totals_by_colour = std::mem::take(&mut self.soft.totals_by_colour);
        let st = &self.soft;
        let delta = &st.delta;
        // Colours past the last non-empty one are not walked.
        let colours = by_colour.iter().rposition(|c| !c.is_empty()).map_or(0, |c| c + 1);
        // Every colour but the overflow one runs four manifolds wide.
        let independent = |c: usize| c < MAX_COLOURS as usize;
        let parallel =
            |c: usize, len: usize| threads > 1 && independent(c) && len >= crate::solver::pgs::PARALLEL_COLOUR_MIN;
        let shareable = totals_by_colour[..colours].iter().enumerate().any(|(c, m)| parallel(c, m.len()));
        if !shareable {
            for &pass in passes {
                for (c, (colour, totals)) in by_colour[..colours].iter_mut().zip(&mut totals_by_colour).enumerate() {
                    sweep(
                        colour,
                        totals,
                        &SweepInputs { pass, v: &shared, delta, st, threshold, independent: independent(c) },
                    );
                }
            }
        } else {
            // Chunks of a shared colour, in groups of four manifolds: a few
            // per thread (at least 16 groups), claimed as threads come free;
            // the constraints of a colour share no dynamic body, so any
            // split and any thread gives the same bits. A small colour, or
            // the overflow colour, is one chunk (sequential).
            let chunk_groups = |c: usize, len: usize, groups: usize| chunk_groups(parallel(c, len), groups, threads);
            let ColourShares { lens, constraints, totals } = ColourShares::new(&mut by_colour, &mut totals_by_colour);
            let schedule = Schedule::new(passes.len() * colours);
            let walk = |team: &mut Participant<'_>| {
                for &pass in passes {
                    for c in 0..colours {
                        let len = lens[c];
                        let groups = len.div_ceil(LANES);
                        let size = chunk_groups(c, len, groups);
                        team.phase(groups.div_ceil(size), |k| {
                            let range = k * size..((k + 1) * size).min(groups);
                            let manifolds = LANES * range.start..(LANES * range.end).min(len);
                            // SAFETY: the chunks of a phase are disjoint
                            // ranges of one colour, each run by one thread;
                            // nothing else touches the colour in the phase.
                            let (ms, ts) = unsafe { (constraints[c].range_mut(range), totals[c].range_mut(manifolds)) };
                            sweep(
                                ms,
                                ts,
                                &SweepInputs { pass, v: &shared, delta, st, threshold, independent: independent(c) },
                            );
                        });
                    }
                }
                team.finish();
            };
            // The caller walks the whole list itself; a helper per other
            // worker joins when it is free (no one waits for a helper).
            rayon::scope(|scope| {
                for _ in 1..threads {
                    scope.spawn(|_| walk(&mut schedule.participant()));
                }
                walk(&mut schedule.participant());
            });
        }
        self.soft.by_colour = by_colour;
        self.soft.totals_by_colour = totals_by_colour;
    }

    /// The step's sub-steps (after the prepare, before the restitution):
    /// for each, the velocities kicked by the start-of-step accelerations
    /// (`v += h·a`, the velocities before the kick kept in `v_start`), the warm
    /// start and `iterations` soft solve sweeps, the positions (q += h·v), and
    /// `relax_iterations` relax sweeps; with the contacts' work over them
    /// (the impulses' work over each sub-step's velocity jump, the kinetic
    /// energy each relax changes, as [`crate::world`]'s energy bookkeeping).
    ///
    /// When some colour is shared by the pool (as in `soft_passes`), one team
    /// of threads walks the whole step, sub-steps included: the kicks and the
    /// position updates are phases of body pieces, and the energy sums run as
    /// chunks of the position phase beside its pieces (they only read the
    /// velocities, which no one writes in that phase; the kinetic energy after
    /// a relax is that of the next sub-step's `v_start`, the velocities before
    /// its kick). One team per step instead of two per sub-step and a rayon
    /// loop for the positions, and no sequential sums between them while the
    /// pool waits. Every value is computed by the same function over the same
    /// inputs as on one thread, and the work is added up after the team in
    /// the same order: the same bits at every pool size.
    pub(crate) fn soft_substeps(
        &mut self,
        bodies: &[crate::body::Body],
        q: &mut [f64],
        v: &mut [f64],
        acceleration: &[f64],
        v_start: &mut Vec<f64>,
        settings: &SoftStepSettings,
    ) -> SoftSubsteps {
        let threads = rayon::current_num_threads();
        let colours = self.soft.by_colour.iter().rposition(|c| !c.is_empty()).map_or(0, |c| c + 1);
        let shareable = threads > 1
            && settings.relax_iterations > 0
            && self.soft.totals_by_colour[..colours]
                .iter()
                .take(MAX_COLOURS as usize)
                .any(|m| m.len() >= crate::solver::pgs::PARALLEL_COLOUR_MIN);
        if shareable {
            self.soft_substeps_in_team(bodies, q, v, acceleration, v_start, settings)
        } else {
            self.soft_substeps_one_by_one(bodies, q, v, acceleration, v_start, settings)
        }
    }

    /// [`ContactSet::soft_substeps`] stage by stage (one thread, or no colour
    /// worth sharing).
    fn soft_substeps_one_by_one(
        &mut self,
        bodies: &[crate::body::Body],
        q: &mut [f64],
        v: &mut [f64],
        acceleration: &[f64],
        v_start: &mut Vec<f64>,
        settings: &SoftStepSettings,
    ) -> SoftSubsteps {
        let h = self.soft.h;
        let kinetic = |v: &[f64]| super::kinetic_energy(bodies, v);
        let mut integrate = Duration::ZERO;
        let mut contact_work = 0.0;
        let mut kinetic_end = None;
        for _ in 0..settings.substeps {
            let started = Instant::now();
            v_start.clear();
            v_start.extend_from_slice(v);
            for (v, a) in v.iter_mut().zip(acceleration) {
                *v += h * a;
            }
            integrate += started.elapsed();
            self.soft_warm_start_and_solve(v, settings.iterations);
            contact_work += super::contact_impulse_work(bodies, v_start, acceleration, h, v);
            let started = Instant::now();
            self.soft_integrate_positions(q, v);
            integrate += started.elapsed();
            let before = kinetic(v);
            self.soft_solve(v, true, settings.relax_iterations);
            let after = kinetic(v);
            contact_work += after - before;
            kinetic_end = Some(after);
        }
        SoftSubsteps { contact_work, kinetic_end: kinetic_end.unwrap_or_else(|| kinetic(v)), integrate }
    }

    /// [`ContactSet::soft_substeps`] as one team of threads.
    fn soft_substeps_in_team(
        &mut self,
        bodies: &[crate::body::Body],
        q: &mut [f64],
        v: &mut [f64],
        acceleration: &[f64],
        v_start: &mut Vec<f64>,
        settings: &SoftStepSettings,
    ) -> SoftSubsteps {
        let threads = rayon::current_num_threads();
        let h = self.soft.h;
        let substeps = settings.substeps;
        let body_count = v.len() / 3;
        v_start.resize(v.len(), 0.0);
        let mut delta = std::mem::take(&mut self.soft.delta);
        let mut by_colour = std::mem::take(&mut self.soft.by_colour);
        let mut totals_by_colour = std::mem::take(&mut self.soft.totals_by_colour);
        let st = &self.soft;
        let colours = by_colour.iter().rposition(|c| !c.is_empty()).map_or(0, |c| c + 1);
        let independent = |c: usize| c < MAX_COLOURS as usize;
        let parallel =
            |c: usize, len: usize| threads > 1 && independent(c) && len >= crate::solver::pgs::PARALLEL_COLOUR_MIN;
        // As `soft_passes`: a shared colour in a few chunks per thread, a
        // small or the overflow colour in one.
        let chunk_groups = |c: usize, len: usize, groups: usize| chunk_groups(parallel(c, len), groups, threads);
        let ColourShares { lens, constraints, totals } = ColourShares::new(&mut by_colour, &mut totals_by_colour);
        // Body pieces of the kick and position phases.
        let piece = body_count.div_ceil(INTEGRATE_PIECES_PER_THREAD * threads).max(1);
        let pieces = body_count.div_ceil(piece);
        // Per sub-step: the impulses' work, the kinetic energy before the
        // relax and after it (the last one's after the team).
        let mut impulse_work = vec![0.0; substeps];
        let mut before_relax = vec![0.0; substeps];
        let mut after_relax = vec![0.0; substeps];
        let shared = Shared { ptr: v.as_mut_ptr(), len: v.len() };
        let q_team = TeamShared::new(q);
        let delta_team = TeamShared::new(&mut delta);
        let v_start_team = TeamShared::new(v_start);
        let work_team = TeamShared::new(&mut impulse_work);
        let before_team = TeamShared::new(&mut before_relax);
        let after_team = TeamShared::new(&mut after_relax);
        let mut passes: Vec<Pass> = vec![Pass::WarmStart];
        passes.extend(std::iter::repeat_n(Pass::Solve, settings.iterations));
        let relax_passes: Vec<Pass> = (0..settings.relax_iterations)
            .map(|k| if k + 1 == settings.relax_iterations { Pass::RelaxAccumulate } else { Pass::Relax })
            .collect();
        // Phases per sub-step: a sync point and the kick, the sweeps' colours,
        // a sync point and the positions.
        let phases = substeps * (4 + (passes.len() + relax_passes.len()) * colours);
        let schedule = Schedule::new(phases);
        let walk = |team: &mut Participant<'_>, caller: bool| -> Duration {
            let mut integrate = Duration::ZERO;
            let sweeps = |team: &mut Participant<'_>, passes: &[Pass]| {
                for &pass in passes {
                    for c in 0..colours {
                        let len = lens[c];
                        let groups = len.div_ceil(LANES);
                        let size = chunk_groups(c, len, groups);
                        team.phase_from_ends(groups.div_ceil(size), |k| {
                            let range = k * size..((k + 1) * size).min(groups);
                            let manifolds = LANES * range.start..(LANES * range.end).min(len);
                            // SAFETY: the chunks of a phase are disjoint
                            // ranges of one colour, each run by one thread;
                            // nothing else touches the colour in the phase,
                            // and no one writes the motions in a sweep phase.
                            let (ms, ts, delta) = unsafe {
                                (constraints[c].range_mut(range), totals[c].range_mut(manifolds), delta_team.all())
                            };
                            let inputs = SweepInputs {
                                pass,
                                v: &shared,
                                delta,
                                st,
                                threshold: 0.0,
                                independent: independent(c),
                            };
                            sweep(ms, ts, &inputs);
                        });
                    }
                }
            };
            for s in 0..substeps {
                // An empty phase: waits for the previous one (the caller's
                // clock then times only the kick).
                team.phase_from_ends(0, |_| {});
                let started = caller.then(Instant::now);
                team.phase_from_ends(pieces, |k| {
                    let piece_bodies = k * piece..((k + 1) * piece).min(body_count);
                    let entries = 3 * piece_bodies.start..3 * piece_bodies.end;
                    // SAFETY: each piece's entries are its own in this phase;
                    // no one else reads the velocities in it.
                    let (v, v0) = unsafe {
                        (
                            std::slice::from_raw_parts_mut(shared.ptr.add(entries.start), entries.len()),
                            v_start_team.range_mut(entries.clone()),
                        )
                    };
                    v0.copy_from_slice(v);
                    for (v, a) in v.iter_mut().zip(&acceleration[entries]) {
                        *v += h * a;
                    }
                });
                if let Some(t) = started {
                    integrate += t.elapsed();
                }
                sweeps(team, &passes);
                team.phase_from_ends(0, |_| {});
                let started = caller.then(Instant::now);
                // The sums first (claimed first, the longest chunks), then
                // the pieces; the kinetic energy after the previous relax is
                // that of this sub-step's `v_start`.
                let sums = if s > 0 { 3 } else { 2 };
                team.phase_from_ends(sums + pieces, |k| {
                    // SAFETY: in this phase the velocities and `v_start` are
                    // only read; each sum's slot, each piece's positions and
                    // motions are written by the one chunk that holds them.
                    unsafe {
                        let v = std::slice::from_raw_parts(shared.ptr, shared.len);
                        match k {
                            0 => work_team
                                .set(s, super::contact_impulse_work(bodies, v_start_team.all(), acceleration, h, v)),
                            1 => before_team.set(s, super::kinetic_energy(bodies, v)),
                            _ if k < sums => after_team.set(s - 1, super::kinetic_energy(bodies, v_start_team.all())),
                            _ => {
                                let k = k - sums;
                                let piece_bodies = k * piece..((k + 1) * piece).min(body_count);
                                let entries = 3 * piece_bodies.start..3 * piece_bodies.end;
                                integrate_positions(
                                    h,
                                    delta_team.range_mut(piece_bodies),
                                    q_team.range_mut(entries.clone()),
                                    &v[entries.clone()],
                                    &st.q0[entries],
                                );
                            }
                        }
                    }
                });
                if let Some(t) = started {
                    integrate += t.elapsed();
                }
                sweeps(team, &relax_passes);
            }
            team.finish();
            integrate
        };
        let mut integrate = Duration::ZERO;
        rayon::scope(|scope| {
            for _ in 1..threads {
                scope.spawn(|_| {
                    walk(&mut schedule.participant_from_back(), false);
                });
            }
            integrate = walk(&mut schedule.participant(), true);
        });
        self.soft.delta = delta;
        self.soft.by_colour = by_colour;
        self.soft.totals_by_colour = totals_by_colour;
        let kinetic_end = super::kinetic_energy(bodies, v);
        if let Some(last) = after_relax.last_mut() {
            *last = kinetic_end;
        }
        let mut contact_work = 0.0;
        for s in 0..substeps {
            contact_work += impulse_work[s];
            contact_work += after_relax[s] - before_relax[s];
        }
        SoftSubsteps { contact_work, kinetic_end, integrate }
    }

    /// Sub-step passes: the stored impulses applied again (warm start),
    /// then `sweeps` soft solve sweeps (with bias).
    pub fn soft_warm_start_and_solve(&mut self, v: &mut [f64], sweeps: usize) {
        let mut passes = [Pass::Solve; MAX_PASSES];
        passes[0] = Pass::WarmStart;
        let count = (1 + sweeps).min(MAX_PASSES);
        self.soft_passes(&passes[..count], v, 0.0);
        for _ in count..1 + sweeps {
            self.soft_passes(&[Pass::Solve], v, 0.0);
        }
    }

    /// Sub-step pass: the soft solve (`relax` false, with bias) or the relax
    /// (rigid, no bias), `sweeps` times.
    pub fn soft_solve(&mut self, v: &mut [f64], relax: bool, sweeps: usize) {
        let pass_of = |k: usize| match (relax, k + 1 == sweeps) {
            (false, _) => Pass::Solve,
            (true, false) => Pass::Relax,
            (true, true) => Pass::RelaxAccumulate,
        };
        let mut done = 0;
        while done < sweeps {
            let count = (sweeps - done).min(MAX_PASSES);
            let mut passes = [Pass::Solve; MAX_PASSES];
            for (i, p) in passes[..count].iter_mut().enumerate() {
                *p = pass_of(done + i);
            }
            self.soft_passes(&passes[..count], v, 0.0);
            done += count;
        }
        if relax && sweeps == 0 {
            let soft = &mut self.soft;
            for (colour, totals) in soft.by_colour.iter().zip(&mut soft.totals_by_colour) {
                for (g, t) in colour.iter().zip(totals.chunks_mut(LANES)) {
                    g.accumulate(t);
                }
            }
        }
    }

    /// After the sub-steps: Newton's restitution for points that approached
    /// faster than `threshold` at the start of the step. Returns whether the
    /// pass ran (when it did not, the velocities are untouched).
    pub fn soft_restitution(&mut self, v: &mut [f64], threshold: f64) -> bool {
        // Skipped when the prepare found no point approaching faster than
        // its resting speed (a larger threshold selects fewer points still).
        let runs = self.soft.bouncy || threshold < self.soft.resting_speed;
        if runs {
            self.soft_passes(&[Pass::Restitution], v, threshold);
        }
        runs
    }

    /// Integrates positions over one sub-step (q += h·v, every body, fixed
    /// ones with their own velocity) and updates the motion since the start
    /// of the step.
    ///
    /// Each body's update reads and writes that body alone, so with many
    /// bodies it runs on the pool in pieces (its rotation's cosine and sine,
    /// once per body and sub-step, were a sequential 0.1 ms a step on the
    /// 100-row pyramid): the same bits at any pool size.
    pub fn soft_integrate_positions(&mut self, q: &mut [f64], v: &[f64]) {
        let h = self.soft.h;
        let q0 = &self.soft.q0;
        let delta = &mut self.soft.delta;
        let bodies = delta.len();
        let threads = rayon::current_num_threads();
        if threads > 1 && bodies >= INTEGRATE_PARALLEL_BODIES {
            use rayon::prelude::*;
            let piece = bodies.div_ceil(INTEGRATE_PIECES_PER_THREAD * threads);
            delta
                .par_chunks_mut(piece)
                .zip(q.par_chunks_mut(3 * piece))
                .zip(v.par_chunks(3 * piece))
                .zip(q0.par_chunks(3 * piece))
                .for_each(|(((d, q), v), q0)| integrate_positions(h, d, q, v, q0));
        } else {
            integrate_positions(h, delta, q, v, q0);
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
}

/// Lane groups per chunk of a colour's phase: a shared colour in a few
/// chunks per thread (at least 16 groups each), claimed as threads come
/// free; a small or the overflow colour in one chunk (sequential).
fn chunk_groups(shared: bool, groups: usize, threads: usize) -> usize {
    if shared { balanced_chunk(groups, CHUNKS_PER_THREAD * threads, 16, usize::MAX) } else { groups.max(1) }
}

/// Each colour's lanes and totals, handed to a team (one slot per colour,
/// empty past the last), with each colour's number of manifolds.
struct ColourShares {
    lens: [usize; MAX_COLOURS as usize + 1],
    constraints: [TeamShared<SoftLanes>; MAX_COLOURS as usize + 1],
    totals: [TeamShared<SoftTotals>; MAX_COLOURS as usize + 1],
}

impl ColourShares {
    fn new(by_colour: &mut [Vec<SoftLanes>], totals_by_colour: &mut [Vec<SoftTotals>]) -> Self {
        let lens = std::array::from_fn(|c| totals_by_colour.get(c).map_or(0, Vec::len));
        let mut constraints = by_colour.iter_mut();
        let constraints =
            std::array::from_fn(|_| TeamShared::new(constraints.next().map_or(&mut [][..], |c| &mut c[..])));
        let mut totals = totals_by_colour.iter_mut();
        let totals = std::array::from_fn(|_| TeamShared::new(totals.next().map_or(&mut [][..], |c| &mut c[..])));
        Self { lens, constraints, totals }
    }
}

#[cfg(test)]
mod tests {
    use crate::contact::{Pair, Partner};

    /// The merge of the broadphase's two runs gives `sort_unstable`'s
    /// order: surface pairs then body pairs (the broadphase's order), one
    /// run, either run empty, and unsorted lists (which fall back to the
    /// sort), over 500 random lists.
    #[test]
    fn pairs_merged_as_sorted() {
        let mut lcg = crate::math::Lcg(99);
        let mut rnd = |n: usize| lcg.below(n);
        let mut spare = Vec::new();
        for case in 0..500 {
            let bodies = 1 + rnd(300);
            let mut surface: Vec<Pair> =
                (0..rnd(40)).map(|_| Pair { a: rnd(bodies), b: Partner::Surface(rnd(3)) }).collect();
            let mut body: Vec<Pair> = (0..rnd(400))
                .map(|_| {
                    let a = rnd(bodies);
                    Pair { a, b: Partner::Body(a + 1 + rnd(20)) }
                })
                .collect();
            if case % 5 != 4 {
                surface.sort_unstable();
                body.sort_unstable();
            }
            let mut pairs = surface;
            pairs.extend(body);
            let mut expected = pairs.clone();
            expected.sort_unstable();
            super::super::prepare::sort_pairs(&mut pairs, &mut spare);
            assert_eq!(pairs, expected, "case {case}");
        }
    }

    /// The colours' lane groups are kept from step to step: after every
    /// prepare each colour has as many groups as its manifolds fill, and the
    /// last group's unused lanes are empty (as `SoftLanes::EMPTY`'s), while
    /// 300 falling balls make and break contacts (the colours grow and
    /// shrink: checked to happen).
    #[test]
    fn kept_lane_groups_are_cut_to_length_and_padded_empty() {
        use super::super::lanes::{LANES, SoftLanes};
        let overrides =
            ["contacts.solver=SoftStep(substeps: 4, hertz: 30)".to_string(), "drops[0].count=300".to_string()];
        let scene =
            crate::scene::Scene::load(std::path::Path::new("scenes/balls_in_box.ron"), &overrides).expect("scene");
        let mut world = scene.build_world().expect("world");
        let mut groups_before: Vec<usize> = Vec::new();
        let mut shrank = 0;
        for _ in 0..120 {
            world.step().expect("step");
            let soft = &world.contacts.soft;
            let groups: Vec<usize> = soft.by_colour.iter().map(Vec::len).collect();
            for (c, (colour, totals)) in soft.by_colour.iter().zip(&soft.totals_by_colour).enumerate() {
                assert_eq!(colour.len(), totals.len().div_ceil(LANES), "colour {c}");
                if let Some(last) = colour.last() {
                    for l in (totals.len() - 1) % LANES + 1..LANES {
                        assert!(last.get(l) == SoftLanes::EMPTY.get(l), "colour {c} lane {l} is not empty");
                    }
                }
                if groups_before.get(c).is_some_and(|&g| g > groups[c]) {
                    shrank += 1;
                }
            }
            groups_before = groups;
        }
        assert!(shrank > 0, "no colour shrank: the reuse of kept groups is not exercised");
    }

    /// `scenes/pyramid.ron` with `rows` rows stepped `steps` times on a pool
    /// of `threads` threads; `read` looks at the world there (mutably: reading
    /// the state vectors gathers them).
    fn pyramid_on_pool<R: Send>(
        rows: usize,
        steps: usize,
        threads: usize,
        read: impl Fn(&mut crate::world::World) -> R + Send + Sync,
    ) -> R {
        let overrides = [format!("piles[0].rows={rows}")];
        let scene = crate::scene::Scene::load(std::path::Path::new("scenes/pyramid.ron"), &overrides).expect("scene");
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
        pool.install(|| {
            let mut world = scene.build_world().expect("world");
            for _ in 0..steps {
                world.step().expect("step");
            }
            read(&mut world)
        })
    }

    /// A 50-row pyramid stepped 8 times on pools of 1, 2 and 3 threads: on
    /// 2 and 3 one team walks each step's sub-steps (some colour is shared:
    /// checked), on 1 they run stage by stage; the positions, velocities,
    /// the contacts' impulses and the non-conservative work (the energy sums
    /// run as chunks inside the team) are the same bits. Fails when a kick,
    /// a position piece or an energy sum is missed, run twice or run on the
    /// wrong velocities.
    #[test]
    fn substeps_in_one_team_give_the_bits_of_one_thread() {
        let run = |threads: usize| {
            pyramid_on_pool(50, 8, threads, |world| {
                let largest = world.contacts.soft_largest_colour();
                let work = world.energy().work;
                let (q, v) = world.state_vectors();
                let mut bits: Vec<u64> = q.iter().chain(v).map(|x| x.to_bits()).collect();
                bits.extend(world.contacts.contacts().iter().flat_map(|c| c.impulse.map(f64::to_bits)));
                (largest, work, bits)
            })
        };
        let (_, work, one) = run(1);
        assert!(work.is_finite() && work != 0.0, "work {work}");
        for threads in [2, 3] {
            let (largest, other_work, other) = run(threads);
            assert!(largest >= crate::solver::pgs::PARALLEL_COLOUR_MIN, "{largest}: the team path is not taken");
            assert_eq!(work.to_bits(), other_work.to_bits(), "work {work} on 1 thread, {other_work} on {threads}");
            assert!(one == other, "the state or the impulses differ between 1 and {threads} threads");
        }
    }

    /// A 50-row pyramid (1,275 boxes, over [`super::super::finish::FINISH_MANIFOLDS_MIN`]
    /// manifolds) stepped 8 times on pools of 1 and 3 threads: on 3 the
    /// finish writes its pieces on the pool, and every output contact
    /// (point, normal, gap, feature, impulses), the state and the largest
    /// penetration are the same bits as on 1.
    #[test]
    fn finish_on_the_pool_gives_the_bits_of_one_thread() {
        let run = |threads: usize| {
            pyramid_on_pool(50, 8, threads, |world| {
                let manifolds = world.contacts.soft.info.len();
                let (q, v) = world.state_vectors();
                let mut bits: Vec<u64> = q.iter().chain(v).map(|x| x.to_bits()).collect();
                for c in world.contacts.contacts() {
                    let m = &c.manifold;
                    bits.extend([c.body_a as u64, u64::from(m.feature)]);
                    bits.extend([m.point.x, m.point.y, m.normal.x, m.normal.y, m.gap].map(f64::to_bits));
                    bits.extend(c.impulse.map(f64::to_bits));
                }
                bits.push(world.contacts.max_penetration.to_bits());
                (manifolds, world.contacts.contacts().len(), bits)
            })
        };
        let (manifolds, contacts, one) = run(1);
        let (_, _, three) = run(3);
        assert!(
            manifolds >= super::super::finish::FINISH_MANIFOLDS_MIN,
            "{manifolds} manifolds: the parallel finish is not taken"
        );
        assert!(contacts > manifolds, "{contacts} contacts of {manifolds} manifolds");
        assert!(one == three, "the output contacts or the state differ between 1 and 3 threads");
    }

    /// A 50-row pyramid stepped 6 times on pools of 1, 3 and 16 threads: on
    /// 3 and 16 the prepare builds the constraints from several narrowphase
    /// chunks at once (checked: more than one chunk holds manifolds), and
    /// every colour's lanes and totals, the manifolds' slots and identities,
    /// the output contacts and the state are the same bits as on 1; and on
    /// every pool each lane holds the manifold its slot names (its bodies and
    /// point count), in key order within its colour. Fails when a chunk's
    /// manifolds land in the wrong lanes.
    #[test]
    fn prepare_build_on_the_pool_puts_each_manifold_in_its_lane() {
        use super::super::lanes::LANES;
        use super::super::manifold::NONE;
        let run = |threads: usize| {
            pyramid_on_pool(50, 6, threads, |world| {
                let soft = &world.contacts.soft;
                let chunks_with_manifolds = soft.chunk_manifolds.windows(2).filter(|w| w[1] > w[0]).count();
                for (m, (&(c, i), info)) in soft.place.iter().zip(&soft.info).enumerate() {
                    let lane = soft.by_colour[c as usize][i as usize / LANES].get(i as usize % LANES);
                    let b = match info.key.1 {
                        Partner::Body(j) => j as u32,
                        Partner::Surface(_) => NONE,
                    };
                    assert_eq!((lane.a, lane.b, lane.count), (info.key.0 as u32, b, info.count), "manifold {m}");
                    if i > 0 {
                        let before = soft.place.iter().position(|&p| p == (c, i - 1)).expect("slot before");
                        assert!(before < m, "manifold {m}: colour {c} not in key order");
                    }
                }
                let mut text =
                    format!("{:?}{:?}{:?}{:?}", soft.by_colour, soft.totals_by_colour, soft.place, soft.info);
                let manifolds = soft.info.len();
                let (q, v) = world.state_vectors();
                let bits: Vec<u64> = q.iter().chain(v).map(|x| x.to_bits()).collect();
                text.push_str(&format!("{bits:?}{:?}", world.contacts.contacts()));
                (chunks_with_manifolds, manifolds, text)
            })
        };
        let (one_chunks, manifolds, one) = run(1);
        assert_eq!(one_chunks, 1);
        assert!(manifolds > 1000, "{manifolds} manifolds");
        for threads in [3, 16] {
            let (chunks, _, other) = run(threads);
            assert!(chunks > 3, "{chunks} chunks hold manifolds on {threads} threads");
            assert!(one == other, "the lanes, slots or contacts differ between 1 and {threads} threads");
        }
    }

    /// A 30-row pyramid (465 boxes, well over [`super::super::prepare::PARALLEL_PAIRS_MIN`]
    /// candidate pairs) stepped 10 times on pools of 1 and 3 threads: on 3 the
    /// prepare's narrowphase is cut into several chunks that all hold points,
    /// and the state and contact impulses are the same bits as on 1.
    #[test]
    fn prepare_narrowphase_in_chunks_gives_the_bits_of_one_thread() {
        let run = |threads: usize| {
            pyramid_on_pool(30, 10, threads, |world| {
                let soft = &world.contacts.soft;
                let pairs = soft.narrow_ends.len();
                let chunks = pairs.div_ceil(super::super::prepare::narrow_chunk_len(pairs, threads));
                let filled = soft.narrow_points[..chunks].iter().filter(|p| !p.is_empty()).count();
                let (q, v) = world.state_vectors();
                let mut bits: Vec<u64> = q.iter().chain(v).map(|x| x.to_bits()).collect();
                bits.extend(world.contacts.contacts().iter().flat_map(|c| c.impulse.map(f64::to_bits)));
                (pairs, filled, bits)
            })
        };
        let (pairs, one_filled, one) = run(1);
        let (_, three_filled, three) = run(3);
        assert!(pairs >= super::super::prepare::PARALLEL_PAIRS_MIN, "{pairs} pairs: the parallel path is not taken");
        assert_eq!(one_filled, 1);
        assert!(three_filled > 3, "{three_filled} chunks hold points on 3 threads");
        assert!(one == three, "the state or the contact impulses differ between 1 and 3 threads");
    }
}
