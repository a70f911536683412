//! The soft-step driver: what [`crate::world::World`] calls, stage by stage
//! (prepare, warm start, solve, integrate positions, relax, restitution,
//! finish).

use super::WarmImpulses;
use super::lanes::{LANES, SoftLanes, SweepInputs, sweep};
use super::manifold::{
    BodyFacts, ColouredBodies, MAX_COLOURS, Pass, Shared, SoftInfo, SoftManifold, SoftTotals, colour_of, delta_of,
    moved, new_manifold,
};
use crate::team::{Participant, Schedule, Shared as TeamShared, balanced_chunk};
use glam::DVec2;

use super::{SoftStepSettings, Softness};
use crate::body::Body;
use crate::contact::narrowphase::{
    ManifoldPoint, Pose,
    polygon::{fill_world, hull_size, polygon_polygon_world},
};
use crate::contact::{Contact, ContactError, ContactSet, Pair, Partner, collide_pair_into};
use crate::surface::Surface;

/// Passes walked by one team at most (a longer list is walked in pieces).
const MAX_PASSES: usize = 16;

/// Chunks per thread of a shared colour: a few, so that a thread that the
/// machine delays leaves its share to the others instead of holding the phase.
const CHUNKS_PER_THREAD: usize = 2;

/// Pairs below which the prepare collides them on the calling thread (a
/// fork costs more than a few hundred small narrowphases).
const PARALLEL_PAIRS_MIN: usize = 512;

/// Chunks of pairs per thread in the parallel narrowphase (a few, for balance).
const NARROW_CHUNKS_PER_THREAD: usize = 4;

/// Bodies from which the prepare gathers their facts on the pool.
const FACTS_BODIES_MIN: usize = 2048;

/// Bodies below which the world outlines are filled without splitting further.
const OUTLINE_BODIES_MIN: usize = 256;

/// Whether the prepare's narrowphase goes to the pool: several threads and
/// enough pairs.
fn narrow_in_parallel(pairs: usize, threads: usize) -> bool {
    threads > 1 && pairs >= PARALLEL_PAIRS_MIN
}

/// Pairs per chunk of the prepare's narrowphase: a few chunks per thread (at
/// least 64 pairs each) on the pool, else one chunk of every pair.
fn narrow_chunk_len(pairs: usize, threads: usize) -> usize {
    if narrow_in_parallel(pairs, threads) {
        balanced_chunk(pairs, NARROW_CHUNKS_PER_THREAD * threads, 64, usize::MAX)
    } else {
        pairs.max(1)
    }
}

/// The world outlines (vertices and unit outward edge normals) of the
/// polygons that meet another polygon in one prepare, at the start-of-step
/// pose: each computed once per step, not once per pair (a box of a pile
/// meets about three), laid out in body order before the narrowphase so that
/// every thread reads them.
#[derive(Clone, Debug, Default)]
pub(super) struct WorldPolygons {
    /// Where each body's outline starts in `vertices` (`u32::MAX`: none).
    start: Vec<u32>,
    vertices: Vec<DVec2>,
    normals: Vec<DVec2>,
    /// Each body's [`hull_size`] (the reference-face tolerance's scale;
    /// set for the bodies with an outline), once per body, not per pair.
    sizes: Vec<f64>,
}

impl WorldPolygons {
    /// The outlines of the bodies met by a polygon–polygon pair of `pairs`,
    /// at positions `q` (filled on the pool when `parallel`); `facts` says
    /// which bodies are polygons (40 bytes a body read per pair, not the
    /// two whole `Body`s).
    fn build(&mut self, hulls: &[Vec<DVec2>], facts: &[BodyFacts], pairs: &[Pair], q: &[f64], parallel: bool) {
        const NEEDED: u32 = 0;
        self.start.clear();
        self.start.resize(facts.len(), u32::MAX);
        for pair in pairs {
            if let Partner::Body(j) = pair.b
                && facts[pair.a].polygon
                && facts[j].polygon
            {
                self.start[pair.a] = NEEDED;
                self.start[j] = NEEDED;
            }
        }
        let mut total = 0usize;
        self.sizes.resize(facts.len(), 0.0);
        for ((start, hull), size) in self.start.iter_mut().zip(hulls).zip(&mut self.sizes) {
            if *start == NEEDED {
                *start = total as u32;
                total += hull.len();
                *size = hull_size(hull);
            }
        }
        self.vertices.resize(total, DVec2::ZERO);
        self.normals.resize(total, DVec2::ZERO);
        let min = if parallel { OUTLINE_BODIES_MIN } else { usize::MAX };
        fill_outlines(hulls, q, &self.start, 0..facts.len(), &mut self.vertices, &mut self.normals, min);
    }

    /// Body `i`'s [`hull_size`].
    fn size(&self, i: usize) -> f64 {
        self.sizes[i]
    }

    /// Whether body `i` has an outline this step (it is a polygon met by
    /// another polygon).
    fn has(&self, i: usize) -> bool {
        self.start[i] != u32::MAX
    }

    /// Body `i`'s outline: its vertices and normals.
    fn get(&self, hulls: &[Vec<DVec2>], i: usize) -> (&[DVec2], &[DVec2]) {
        let start = self.start[i] as usize;
        let range = start..start + hulls[i].len();
        (&self.vertices[range.clone()], &self.normals[range])
    }
}

/// Fills the outlines of `bodies` (a range whose outlines start at the
/// beginning of `vertices` and `normals`), halving the range on the pool
/// while it holds `min` bodies or more. Each outline is a function of its
/// body's hull and pose only: the same bits on any thread.
fn fill_outlines(
    hulls: &[Vec<DVec2>],
    q: &[f64],
    start: &[u32],
    bodies: std::ops::Range<usize>,
    vertices: &mut [DVec2],
    normals: &mut [DVec2],
    min: usize,
) {
    if bodies.len() >= min.max(2) {
        let mid = bodies.start + bodies.len() / 2;
        // The first outline at or after `mid`, relative to this range's.
        let base = start[bodies.clone()].iter().find(|&&s| s != u32::MAX).map_or(0, |&s| s as usize);
        let split =
            start[mid..bodies.end].iter().find(|&&s| s != u32::MAX).map_or(vertices.len(), |&s| s as usize - base);
        let (va, vb) = vertices.split_at_mut(split);
        let (na, nb) = normals.split_at_mut(split);
        rayon::join(
            || fill_outlines(hulls, q, start, bodies.start..mid, va, na, min),
            || fill_outlines(hulls, q, start, mid..bodies.end, vb, nb, min),
        );
        return;
    }
    let mut offset = 0;
    for i in bodies {
        if start[i] != u32::MAX {
            let len = hulls[i].len();
            let pose = Pose { position: DVec2::new(q[3 * i], q[3 * i + 1]), angle: q[3 * i + 2] };
            fill_world(&hulls[i], &pose, &mut vertices[offset..offset + len], &mut normals[offset..offset + len]);
            offset += len;
        }
    }
}

/// Puts `pairs` in key order. The broadphase lists the surface pairs (in
/// body order), then the body pairs (sorted): two sorted runs, merged here
/// in one pass into `spare`, whose buffer then holds the pairs (the two
/// buffers alternate, no allocation once grown), instead of a comparison
/// sort of every pair (2.5 % of the 100-row pyramid's step). Any other
/// order is sorted. The keys are distinct (and equal pairs are
/// indistinguishable): the same order as `sort_unstable`.
fn sort_pairs(pairs: &mut Vec<Pair>, spare: &mut Vec<Pair>) {
    let split = pairs.windows(2).position(|w| w[1] < w[0]).map_or(pairs.len(), |k| k + 1);
    if split == pairs.len() {
        return;
    }
    let (first, second) = pairs.split_at(split);
    if !second.is_sorted() {
        pairs.sort_unstable();
        return;
    }
    spare.clear();
    let (mut i, mut j) = (0, 0);
    while i < first.len() && j < second.len() {
        if second[j] < first[i] {
            spare.push(second[j]);
            j += 1;
        } else {
            spare.push(first[i]);
            i += 1;
        }
    }
    spare.extend_from_slice(&first[i..]);
    spare.extend_from_slice(&second[j..]);
    std::mem::swap(pairs, spare);
}

/// What the narrowphase of the prepare reads (shared by its threads).
struct NarrowInputs<'a> {
    bodies: &'a [Body],
    facts: &'a [BodyFacts],
    surfaces: &'a [Surface],
    hulls: &'a [Vec<DVec2>],
    pairs: &'a [Pair],
    world: &'a WorldPolygons,
    q: &'a [f64],
    dt: f64,
    margin: f64,
}

/// The narrowphase of the pairs from `first` on (one per entry of `ends`):
/// their points appended to `out` (cleared first), pair `k`'s ending at
/// `ends[k - first]`. Returns the first of these pairs with a point whose
/// gap, normal or position is not finite (a NaN state), if any.
fn narrow_chunk(
    inputs: &NarrowInputs<'_>,
    first: usize,
    ends: &mut [u32],
    out: &mut Vec<ManifoldPoint>,
) -> Option<usize> {
    let NarrowInputs { bodies, facts, surfaces, hulls, pairs, world, q, dt, margin } = *inputs;
    out.clear();
    let mut bad = None;
    for (k, end) in ends.iter_mut().enumerate() {
        let begin = out.len();
        let pair = pairs[first + k];
        // The pair's reach over the step: the speculative margin plus how
        // far the two can close at their start-of-step speeds (centre
        // speed + spin × bounding radius, `BodyFacts::closing_speed`), so
        // that a fast body meets a thin one or a surface as a speculative
        // contact instead of passing through it between two narrowphases.
        let speed = |i: usize| facts[i].closing_speed;
        let closing = speed(pair.a) + if let Partner::Body(j) = pair.b { speed(j) } else { 0.0 };
        let reach = margin + dt * closing;
        match pair.b {
            // Two polygons (both have outlines: each is a polygon met by a
            // polygon, and both are, as `WorldPolygons::build` marks them):
            // their world outlines, computed once per body.
            Partner::Body(j) if world.has(pair.a) && world.has(j) => {
                let (a, b) = (world.get(hulls, pair.a), world.get(hulls, j));
                polygon_polygon_world(world.size(pair.a), a, b, reach, out);
            }
            _ => collide_pair_into(hulls, bodies, surfaces, pair, q, reach, out),
        }
        *end = out.len() as u32;
        if bad.is_none()
            && !out[begin..].iter().all(|m| m.gap.is_finite() && m.normal.is_finite() && m.point.is_finite())
        {
            bad = Some(first + k);
        }
    }
    bad
}

/// What the build of the constraints reads (shared by its threads).
struct BuildInputs<'a> {
    settings: &'a crate::contact::ContactSettings,
    surfaces: &'a [Surface],
    pairs: &'a [Pair],
    /// The narrowphase's points, one buffer per chunk of `chunk` pairs.
    narrow_points: &'a [Vec<ManifoldPoint>],
    /// Where each pair's points end in its chunk's buffer.
    narrow_ends: &'a [u32],
    chunk: usize,
    /// Each chunk's first manifold (key order), then the manifold count.
    chunk_manifolds: &'a [u32],
    facts: &'a [BodyFacts],
    q: &'a [f64],
    v: &'a [f64],
    previous: &'a [WarmImpulses],
    previous_info: &'a [SoftInfo],
    /// Each manifold's slot: (colour, index in it).
    place: &'a [(u16, u32)],
    resting_speed: f64,
}

/// The slots of every colour (its lane groups and its totals), written by
/// the build from several threads, each slot by one thread.
///
/// Why the writes are disjoint: the colouring gave each manifold its own
/// slot (colour `c`, the count of `c` before it: no two manifolds share
/// one), each manifold is built by the one chunk that holds its pair, and
/// a lane is written through pointers to its own entries only
/// ([`SoftLanes::write_lane`]); the vectors are borrowed exclusively for
/// the wrapper's life (not resized, not read meanwhile).
struct ColourSlots<'a> {
    groups: [*mut SoftLanes; MAX_COLOURS as usize + 1],
    totals: [*mut SoftTotals; MAX_COLOURS as usize + 1],
    /// Each colour's manifold count (its totals' length).
    lens: [usize; MAX_COLOURS as usize + 1],
    _borrow: std::marker::PhantomData<&'a mut [Vec<SoftLanes>]>,
}

// SAFETY: see the type's docs: each slot is written by one thread, and
// nothing reads the slots until the build's join returns.
unsafe impl Sync for ColourSlots<'_> {}

impl<'a> ColourSlots<'a> {
    /// The slots of `by_colour` and `totals_by_colour` (at most
    /// [`MAX_COLOURS`] + 1 colours; colour `c`'s groups sized to its totals).
    fn new(by_colour: &'a mut [Vec<SoftLanes>], totals_by_colour: &'a mut [Vec<SoftTotals>]) -> ColourSlots<'a> {
        let mut slots = ColourSlots {
            groups: [std::ptr::null_mut(); MAX_COLOURS as usize + 1],
            totals: [std::ptr::null_mut(); MAX_COLOURS as usize + 1],
            lens: [0; MAX_COLOURS as usize + 1],
            _borrow: std::marker::PhantomData,
        };
        for (c, (groups, totals)) in by_colour.iter_mut().zip(totals_by_colour).enumerate() {
            assert_eq!(
                groups.len(),
                totals.len().div_ceil(LANES),
                "colour {c}'s groups are not sized to its manifolds"
            );
            slots.groups[c] = groups.as_mut_ptr();
            slots.totals[c] = totals.as_mut_ptr();
            slots.lens[c] = totals.len();
        }
        slots
    }

    /// Writes manifold `m` and its totals into slot `index` of colour `colour`.
    ///
    /// # Safety
    ///
    /// No other thread writes this slot during the wrapper's life (the
    /// type's docs: one slot per manifold, each manifold built once).
    unsafe fn write(&self, (colour, index): (u16, u32), m: &SoftManifold, totals: SoftTotals) {
        let (c, i) = (colour as usize, index as usize);
        assert!(i < self.lens[c], "slot {i} of colour {c} out of its {} manifolds", self.lens[c]);
        // SAFETY: in bounds (checked; the groups hold `lens[c]` lanes or
        // more); the slot is this thread's alone (the caller's contract).
        unsafe {
            SoftLanes::write_lane(self.groups[c].add(i / LANES), i % LANES, m);
            self.totals[c].add(i).write(totals);
        }
    }
}

/// Builds the manifolds of the narrowphase's chunks `chunks` into their
/// slots, their identities into `info` (which starts at the first chunk's
/// first manifold), halving the chunks on the pool while there are two or
/// more when `parallel`. Returns whether some manifold needs the
/// restitution pass (an OR: no order changes it).
fn build_chunks(
    inputs: &BuildInputs<'_>,
    slots: &ColourSlots<'_>,
    chunks: std::ops::Range<usize>,
    info: &mut [SoftInfo],
    parallel: bool,
) -> bool {
    if parallel && chunks.len() >= 2 {
        let mid = chunks.start + chunks.len() / 2;
        let split = (inputs.chunk_manifolds[mid] - inputs.chunk_manifolds[chunks.start]) as usize;
        let (ia, ib) = info.split_at_mut(split);
        let (a, b) = rayon::join(
            || build_chunks(inputs, slots, chunks.start..mid, ia, parallel),
            || build_chunks(inputs, slots, mid..chunks.end, ib, parallel),
        );
        return a || b;
    }
    let mut bouncy = false;
    for c in chunks.clone() {
        let first = (inputs.chunk_manifolds[c] - inputs.chunk_manifolds[chunks.start]) as usize;
        let last = (inputs.chunk_manifolds[c + 1] - inputs.chunk_manifolds[chunks.start]) as usize;
        bouncy |= build_chunk(inputs, slots, c, &mut info[first..last]);
    }
    bouncy
}

/// Builds the manifolds of the narrowphase's chunk `c` (pair order): each
/// one's constraint with its effective masses, friction and the previous
/// step's impulses matched by pair and feature, written into its slot, and
/// its identity into `info` (one entry per manifold of the chunk). Returns
/// whether some manifold needs the restitution pass.
fn build_chunk(inputs: &BuildInputs<'_>, slots: &ColourSlots<'_>, c: usize, info: &mut [SoftInfo]) -> bool {
    let BuildInputs {
        settings,
        surfaces,
        pairs,
        narrow_points,
        narrow_ends,
        chunk,
        chunk_manifolds,
        facts,
        q,
        v,
        previous,
        previous_info,
        place,
        resting_speed,
    } = *inputs;
    let pairs_here = c * chunk..((c + 1) * chunk).min(pairs.len());
    let points = &narrow_points[c];
    let first = chunk_manifolds[c] as usize;
    let mut manifold = first;
    let mut bouncy = false;
    // The previous step's identities are in key order: the first one at
    // or after this chunk's first pair found by bisection (where the
    // sequential merge would stand), then merged pair by pair.
    let mut prev = pairs_here.clone().next().map_or(0, |k| {
        let key = (pairs[k].a, pairs[k].b);
        previous_info.partition_point(|p| p.key < key)
    });
    let mut begin = 0;
    for k in pairs_here {
        let pair = pairs[k];
        let end = narrow_ends[k] as usize;
        let points = &points[begin..end];
        begin = end;
        if points.is_empty() {
            continue;
        }
        let material = settings.mixed(surfaces, pair.a, pair.b);
        let key = (pair.a, pair.b);
        while prev < previous_info.len() && previous_info[prev].key < key {
            prev += 1;
        }
        let first_prev = prev;
        for chunk in points.chunks(2) {
            let (mut man, totals) = new_manifold(facts, pair, &material, q, v, chunk, resting_speed);
            let mut features = [0u32; 2];
            for (f, m) in features.iter_mut().zip(chunk) {
                *f = m.feature;
            }
            // Warm start: the previous step's points of this pair with the same feature.
            let mut j = first_prev;
            while j < previous_info.len() && previous_info[j].key == key {
                let (old, old_info) = (&previous[j], &previous_info[j]);
                for (p, f) in man.points[..man.count as usize].iter_mut().zip(features) {
                    let found = (0..old_info.count as usize).find(|&i| old_info.features[i] == f);
                    if let Some(i) = found {
                        let bound = p.friction * old.normal[i];
                        p.normal_impulse = old.normal[i];
                        p.tangent_impulse = old.tangent[i].clamp(-bound, bound);
                    }
                }
                man.rolling_impulse = old.rolling;
                j += 1;
            }
            // The restitution pass only runs if some point approaches
            // faster than the resting speed (it skips every other point).
            bouncy |= totals.restitution > 0.0
                && totals.relative_velocity[..man.count as usize].iter().any(|&u| u <= -resting_speed);
            // SAFETY: `place[manifold]` is this manifold's own slot, and
            // this chunk alone builds it (`ColourSlots`' docs).
            unsafe { slots.write(place[manifold], &man, totals) };
            info[manifold - first] = SoftInfo { key, material, features, count: man.count };
            manifold += 1;
        }
    }
    bouncy
}

impl ContactSet {
    /// The soft-step settings, when that is the contact solver.
    pub fn soft_step_settings(&self) -> Option<SoftStepSettings> {
        match self.settings.solver {
            crate::contact::ContactSolver::SoftStep(s) if self.settings.enabled => Some(s),
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
        // resolved by the sub-step (Box2D v3.0's cap; v3.1 caps at an
        // eighth, where docs/benchmarks.md finds the pyramid's stability limit).
        let hertz = settings.hertz.min(0.25 / h);
        let mut soft = std::mem::take(&mut self.soft);
        soft.h = h;
        soft.soft = Softness::new(hertz, settings.damping_ratio, h);
        soft.static_soft = Softness::new(2.0 * hertz, settings.damping_ratio, h);
        soft.push_speed = settings.push_speed;
        soft.relax_iterations = settings.relax_iterations;
        soft.q0.clear();
        soft.q0.extend_from_slice(q);
        soft.delta.clear();
        soft.delta.resize(bodies.len(), [0.0, 0.0, 1.0, 0.0]);
        // Pair order = key order, so that matching with the previous step is a merge.
        sort_pairs(&mut self.pairs, &mut soft.sorted_pairs);
        std::mem::swap(&mut soft.previous, &mut soft.impulses);
        std::mem::swap(&mut soft.previous_info, &mut soft.info);
        soft.place.clear();
        // The colours' groups and totals and the identities are kept from
        // the last step, sized below and written over slot by slot (a new
        // group is pushed empty only past the last one): no 1.1 kB empty
        // group copied per group and step.
        soft.by_colour.resize_with(MAX_COLOURS as usize + 1, Vec::new);
        soft.totals_by_colour.resize_with(MAX_COLOURS as usize + 1, Vec::new);
        soft.used.clear();
        soft.used.resize(bodies.len(), 0);
        soft.resting_speed = resting_speed;
        // The narrowphase: every pair's points into its chunk's buffer, the
        // chunks on the pool when there are enough pairs (each pair's points
        // are a function of that pair alone: the same bits at any pool
        // size); then, below, the colouring and the constraints in pair order.
        let pairs = self.pairs.len();
        let threads = rayon::current_num_threads();
        let parallel = narrow_in_parallel(pairs, threads);
        let chunk = narrow_chunk_len(pairs, threads);
        let chunks = pairs.div_ceil(chunk);
        if soft.narrow_points.len() < chunks {
            soft.narrow_points.resize_with(chunks, Vec::new);
        }
        soft.narrow_ends.resize(pairs, 0);
        // Each body's facts, a function of that body alone (written in
        // place, in body order, on the pool for many bodies).
        soft.facts.clear();
        if threads > 1 && bodies.len() >= FACTS_BODIES_MIN {
            use rayon::prelude::*;
            soft.facts.par_extend(bodies.par_iter().enumerate().map(|(i, b)| BodyFacts::of(b, i, v)));
        } else {
            soft.facts.extend(bodies.iter().enumerate().map(|(i, b)| BodyFacts::of(b, i, v)));
        }
        soft.world_polygons.build(&self.hulls, &soft.facts, &self.pairs, q, parallel);
        let inputs = NarrowInputs {
            bodies,
            facts: &soft.facts,
            surfaces,
            hulls: &self.hulls,
            pairs: &self.pairs,
            world: &soft.world_polygons,
            q,
            dt,
            margin,
        };
        let ends = &mut soft.narrow_ends[..pairs];
        let buffers = &mut soft.narrow_points[..chunks];
        let bad = if parallel {
            use rayon::prelude::*;
            ends.par_chunks_mut(chunk)
                .zip(buffers.par_iter_mut())
                .enumerate()
                .filter_map(|(c, (ends, out))| narrow_chunk(&inputs, c * chunk, ends, out))
                .min()
        } else {
            ends.chunks_mut(chunk)
                .zip(buffers)
                .enumerate()
                .filter_map(|(c, (ends, out))| narrow_chunk(&inputs, c * chunk, ends, out))
                .min()
        };
        if let Some(k) = bad {
            for (colour, totals) in soft.by_colour.iter_mut().zip(&mut soft.totals_by_colour) {
                colour.clear();
                totals.clear();
            }
            soft.info.clear();
            soft.contact_starts.clear();
            soft.contact_starts.push(0);
            soft.bouncy = false;
            self.soft = soft;
            return Err(self.error(bodies, self.pairs[k], "the contact gap or normal is not finite (NaN state)"));
        }
        // The colouring, sequential and light: each manifold (a pair's
        // points two at a time) in key order gets the lowest colour its
        // dynamic bodies do not have yet (from their masks only, so the
        // colours are those of a colouring interleaved with the build) and
        // the next slot of that colour; each narrowphase chunk notes its
        // first manifold.
        let mut counts = [0u32; MAX_COLOURS as usize + 1];
        soft.chunk_manifolds.clear();
        soft.contact_starts.clear();
        soft.contact_starts.push(0);
        let mut contacts = 0u32;
        for k in 0..pairs {
            let begin = if k % chunk == 0 {
                soft.chunk_manifolds.push(soft.place.len() as u32);
                0
            } else {
                soft.narrow_ends[k - 1]
            };
            let points = soft.narrow_ends[k] - begin;
            if points == 0 {
                continue;
            }
            let coloured = ColouredBodies::of(&soft.facts, self.pairs[k]);
            for first in (0..points).step_by(2) {
                let c = colour_of(coloured, &mut soft.used);
                soft.place.push((c, counts[c as usize]));
                counts[c as usize] += 1;
                // The finish's output: this manifold's points (two at most)
                // after those of the manifolds before it.
                contacts += (points - first).min(2);
                soft.contact_starts.push(contacts);
            }
        }
        soft.chunk_manifolds.push(soft.place.len() as u32);
        // Every slot sized: each colour as many groups as its manifolds fill
        // (the groups kept from the last step are written over; a new one
        // is pushed empty), its totals and the identities as many entries,
        // each written once below.
        for ((colour, totals), &count) in soft.by_colour.iter_mut().zip(&mut soft.totals_by_colour).zip(&counts) {
            colour.resize(count.div_ceil(LANES as u32) as usize, SoftLanes::EMPTY);
            totals.resize(count as usize, SoftTotals::default());
        }
        soft.info.resize(soft.place.len(), SoftInfo::default());
        // The build: each manifold's constraint straight into its slot, the
        // narrowphase's chunks on the pool (halved while there are two or
        // more) when it ran there.
        let inputs = BuildInputs {
            settings: &self.settings,
            surfaces,
            pairs: &self.pairs,
            narrow_points: &soft.narrow_points,
            narrow_ends: &soft.narrow_ends,
            chunk,
            chunk_manifolds: &soft.chunk_manifolds,
            facts: &soft.facts,
            q,
            v,
            previous: &soft.previous,
            previous_info: &soft.previous_info,
            place: &soft.place,
            resting_speed,
        };
        let slots = ColourSlots::new(&mut soft.by_colour, &mut soft.totals_by_colour);
        soft.bouncy = build_chunks(&inputs, &slots, 0..chunks, &mut soft.info, parallel);
        // The last group's unused lanes empty (a kept group holds last
        // step's lanes there).
        for (colour, totals) in soft.by_colour.iter_mut().zip(&soft.totals_by_colour) {
            let filled = totals.len() % LANES;
            if filled > 0
                && let Some(last) = colour.last_mut()
            {
                for l in filled..LANES {
                    last.clear_lane(l);
                }
            }
        }
        self.soft = soft;
        Ok(())
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
            let chunk_groups = |c: usize, len: usize, groups: usize| {
                if parallel(c, len) {
                    balanced_chunk(groups, CHUNKS_PER_THREAD * threads, 16, usize::MAX)
                } else {
                    groups.max(1)
                }
            };
            let lens: [usize; MAX_COLOURS as usize + 1] =
                std::array::from_fn(|c| totals_by_colour.get(c).map_or(0, Vec::len));
            let mut constraints = by_colour.iter_mut();
            let constraints: [TeamShared<SoftLanes>; MAX_COLOURS as usize + 1] =
                std::array::from_fn(|_| TeamShared::new(constraints.next().map_or(&mut [][..], |c| &mut c[..])));
            let mut totals = totals_by_colour.iter_mut();
            let totals: [TeamShared<SoftTotals>; MAX_COLOURS as usize + 1] =
                std::array::from_fn(|_| TeamShared::new(totals.next().map_or(&mut [][..], |c| &mut c[..])));
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
    /// faster than `threshold` at the start of the step.
    pub fn soft_restitution(&mut self, v: &mut [f64], threshold: f64) {
        // Skipped when the prepare found no point approaching faster than
        // its resting speed (a larger threshold selects fewer points still).
        if self.soft.bouncy || threshold < self.soft.resting_speed {
            self.soft_passes(&[Pass::Restitution], v, threshold);
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
    /// the impulses kept in pair order for the next warm start. A
    /// non-finite impulse is an error naming the pair. Each manifold's
    /// contacts and impulses are a function of that manifold alone and land
    /// at a place fixed by the counts before it: written on the pool when
    /// there are many (the same bits at any pool size).
    pub fn soft_finish(&mut self, bodies: &[Body]) -> Result<(), ContactError> {
        let mut soft = std::mem::take(&mut self.soft);
        // The outputs sized to be written in place, each entry once (kept
        // buffers, not cleared: no allocation once grown, and only entries
        // past last step's length are filled first); where each manifold's
        // contacts start (key order) is the prepare's prefix sum.
        let total = soft.contact_starts.last().copied().unwrap_or(0);
        debug_assert_eq!(soft.contact_starts.len(), soft.info.len() + 1);
        if let Some(first) = soft.info.first() {
            let blank = Contact {
                body_a: 0,
                partner: Partner::Surface(0),
                manifold: ManifoldPoint { point: DVec2::ZERO, normal: DVec2::ZERO, gap: 0.0, feature: 0 },
                material: first.material,
                impulse: [0.0; 3],
            };
            self.contacts.resize(total as usize, blank);
        } else {
            self.contacts.clear();
        }
        soft.impulses.resize(soft.info.len(), WarmImpulses::default());
        let manifolds = soft.info.len();
        let threads = rayon::current_num_threads();
        let min = if threads > 1 && manifolds >= FINISH_MANIFOLDS_MIN {
            (manifolds / (FINISH_CHUNKS_PER_THREAD * threads)).max(FINISH_CHUNK_MIN)
        } else {
            usize::MAX
        };
        let inputs = FinishInputs {
            by_colour: &soft.by_colour,
            totals_by_colour: &soft.totals_by_colour,
            delta: &soft.delta,
            q0: &soft.q0,
            place: &soft.place,
            info: &soft.info,
            starts: &soft.contact_starts,
        };
        let (deepest, bad) = finish_range(&inputs, 0..manifolds, &mut soft.impulses, &mut self.contacts, min);
        self.max_penetration = self.max_penetration.max(deepest);
        self.soft = soft;
        match bad {
            Some(pair) => Err(self.error(bodies, pair, "the contact impulse is not finite")),
            None => Ok(()),
        }
    }
}

/// Manifolds below which the finish writes the contacts on the calling thread.
const FINISH_MANIFOLDS_MIN: usize = 1024;

/// Pieces per thread of the finish on the pool (a few, for balance).
const FINISH_CHUNKS_PER_THREAD: usize = 4;

/// The fewest manifolds in one piece of the finish on the pool.
const FINISH_CHUNK_MIN: usize = 256;

/// What the finish reads (shared by its threads).
struct FinishInputs<'a> {
    by_colour: &'a [Vec<SoftLanes>],
    totals_by_colour: &'a [Vec<SoftTotals>],
    delta: &'a [super::BodyDelta],
    q0: &'a [f64],
    place: &'a [(u16, u32)],
    info: &'a [SoftInfo],
    /// Where each manifold's contacts start in the output (one more entry
    /// than manifolds).
    starts: &'a [u32],
}

/// The finish of the manifolds `range` (key order): their warm-start
/// impulses into `impulses` and their contacts into `contacts` (both
/// starting at the range's first manifold), halving the range on the pool
/// while it holds `min` manifolds or more. Returns the deepest penetration
/// among the points that pushed (+0 if none; the largest positive value
/// does not depend on the order it is met in) and the first pair in key
/// order with a non-finite impulse or gap.
fn finish_range(
    inputs: &FinishInputs<'_>,
    range: std::ops::Range<usize>,
    impulses: &mut [WarmImpulses],
    contacts: &mut [Contact],
    min: usize,
) -> (f64, Option<Pair>) {
    if range.len() >= min.max(2) {
        let mid = range.start + range.len() / 2;
        let split = (inputs.starts[mid] - inputs.starts[range.start]) as usize;
        let (ia, ib) = impulses.split_at_mut(mid - range.start);
        let (ca, cb) = contacts.split_at_mut(split);
        let ((da, ba), (db, bb)) = rayon::join(
            || finish_range(inputs, range.start..mid, ia, ca, min),
            || finish_range(inputs, mid..range.end, ib, cb, min),
        );
        return (if db > da { db } else { da }, ba.or(bb));
    }
    let FinishInputs { by_colour, totals_by_colour, delta, q0, place, info, .. } = *inputs;
    let mut deepest: f64 = 0.0;
    let mut bad = None;
    let mut out = contacts.iter_mut();
    for ((&(c, i), info), warm) in place[range.clone()].iter().zip(&info[range]).zip(impulses) {
        let m = &by_colour[c as usize][i as usize / LANES].get(i as usize % LANES);
        let totals = &totals_by_colour[c as usize][i as usize];
        let [p0, p1] = &m.points;
        *warm = WarmImpulses {
            normal: [p0.normal_impulse, p1.normal_impulse],
            tangent: [p0.tangent_impulse, p1.tangent_impulse],
            rolling: m.rolling_impulse,
        };
        let (da, db) = (delta_of(delta, m.a), delta_of(delta, m.b));
        let pair = Pair { a: info.key.0, b: info.key.1 };
        for (k, (p, &feature)) in m.points[..m.count as usize].iter().zip(&info.features).enumerate() {
            let s = p.base_separation + p.normal.dot(moved(&da, p.ra) - moved(&db, p.rb));
            let (total_normal, total_tangent) = (totals.normal[k], totals.tangent[k]);
            if !(total_normal.is_finite() && total_tangent.is_finite() && s.is_finite()) {
                bad.get_or_insert(pair);
            }
            // Strictly deeper only: a NaN or a zero leaves +0 (the order
            // the pieces are met in cannot change a bit).
            if total_normal > 0.0 && -s > deepest {
                deepest = -s;
            }
            let centre = DVec2::new(q0[3 * m.a as usize], q0[3 * m.a as usize + 1]);
            if let Some(contact) = out.next() {
                *contact = Contact {
                    body_a: pair.a,
                    partner: pair.b,
                    manifold: ManifoldPoint {
                        point: centre + p.ra + DVec2::new(da[0], da[1]),
                        normal: p.normal,
                        gap: s,
                        feature,
                    },
                    material: info.material,
                    impulse: [total_normal, total_tangent, totals.rolling],
                };
            }
        }
    }
    (deepest, bad)
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
            super::sort_pairs(&mut pairs, &mut spare);
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

    /// A 50-row pyramid (1,275 boxes, over [`super::FINISH_MANIFOLDS_MIN`]
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
        assert!(manifolds >= super::FINISH_MANIFOLDS_MIN, "{manifolds} manifolds: the parallel finish is not taken");
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

    /// A 30-row pyramid (465 boxes, well over [`super::PARALLEL_PAIRS_MIN`]
    /// candidate pairs) stepped 10 times on pools of 1 and 3 threads: on 3 the
    /// prepare's narrowphase is cut into several chunks that all hold points,
    /// and the state and contact impulses are the same bits as on 1.
    #[test]
    fn prepare_narrowphase_in_chunks_gives_the_bits_of_one_thread() {
        let run = |threads: usize| {
            pyramid_on_pool(30, 10, threads, |world| {
                let soft = &world.contacts.soft;
                let pairs = soft.narrow_ends.len();
                let chunks = pairs.div_ceil(super::narrow_chunk_len(pairs, threads));
                let filled = soft.narrow_points[..chunks].iter().filter(|p| !p.is_empty()).count();
                let (q, v) = world.state_vectors();
                let mut bits: Vec<u64> = q.iter().chain(v).map(|x| x.to_bits()).collect();
                bits.extend(world.contacts.contacts().iter().flat_map(|c| c.impulse.map(f64::to_bits)));
                (pairs, filled, bits)
            })
        };
        let (pairs, one_filled, one) = run(1);
        let (_, three_filled, three) = run(3);
        assert!(pairs >= super::PARALLEL_PAIRS_MIN, "{pairs} pairs: the parallel path is not taken");
        assert_eq!(one_filled, 1);
        assert!(three_filled > 3, "{three_filled} chunks hold points on 3 threads");
        assert!(one == three, "the state or the contact impulses differ between 1 and 3 threads");
    }
}
