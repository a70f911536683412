//! The soft step's prepare: the narrowphase in chunks on the pool, the
//! colouring pass, and each manifold built straight into its lane.

use super::WarmImpulses;
use super::lanes::{LANES, SoftLanes};
use super::manifold::{BodyFacts, MAX_COLOURS, SoftInfo, SoftManifold, SoftTotals, colour_at, new_manifold};
use crate::team::balanced_chunk;
use glam::DVec2;

use super::Softness;
use crate::body::Body;
use crate::contact::narrowphase::{
    ManifoldPoint, Pose,
    polygon::{BoxPlacement, box_box, fill_world, hull_size, polygon_polygon_world, rect_half_extents},
};
use crate::contact::{ContactError, ContactSet, Pair, Partner, collide_pair_into};
use crate::surface::Surface;

/// Pairs below which the prepare collides them on the calling thread (a
/// fork costs more than a few hundred small narrowphases).
pub(super) const PARALLEL_PAIRS_MIN: usize = 512;

/// Chunks of pairs per thread in the parallel narrowphase (a few, for balance).
const NARROW_CHUNKS_PER_THREAD: usize = 4;

/// How many manifolds ahead the build asks for a slot's cache lines.
const PREFETCH_AHEAD: usize = 8;

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
pub(super) fn narrow_chunk_len(pairs: usize, threads: usize) -> usize {
    if narrow_in_parallel(pairs, threads) {
        balanced_chunk(pairs, NARROW_CHUNKS_PER_THREAD * threads, 64, usize::MAX)
    } else {
        pairs.max(1)
    }
}

/// What the polygon pairs of one prepare read of their bodies at the
/// start-of-step pose, each computed once per step, not once per pair (a
/// box of a pile meets about three), laid out in body order before the
/// narrowphase so that every thread reads them: a box's rotation (box
/// pairs are met in the box's own frame, [`box_box`]), another polygon's
/// world outline (vertices and unit outward edge normals) when it meets a
/// polygon.
#[derive(Clone, Debug, Default)]
pub(super) struct WorldPolygons {
    /// Where each body's outline starts in `vertices` (`u32::MAX`: none).
    start: Vec<u32>,
    vertices: Vec<DVec2>,
    normals: Vec<DVec2>,
    /// Each body's [`hull_size`] (the reference-face tolerance's scale),
    /// once per run, not per pair and step.
    sizes: Vec<f64>,
    /// Each body's half extents when its hull is a box
    /// ([`rect_half_extents`]), once per run with `sizes`.
    halves: Vec<Option<DVec2>>,
    /// Each box's (cos φ, sin φ) this step (stale for other bodies).
    rotations: Vec<DVec2>,
    /// The generation of the hull list `sizes` belongs to
    /// (`ContactSet::hulls_generation`; 0: none yet).
    sizes_of: u64,
}

impl WorldPolygons {
    /// The outlines of the bodies met by a polygon–polygon pair of `pairs`,
    /// at positions `q` (filled on the pool when `parallel`); `facts` says
    /// which bodies are polygons (40 bytes a body read per pair, not the
    /// two whole `Body`s).
    fn build(
        &mut self,
        (hulls, generation): (&[Vec<DVec2>], u64),
        facts: &[BodyFacts],
        pairs: &[Pair],
        q: &[f64],
        parallel: bool,
    ) {
        const NEEDED: u32 = 0;
        // The sizes of every body's hull and which hulls are boxes, once
        // for the run (the hulls are built once, `ContactSet::ensure_hulls`;
        // a rebuilt hull list, told by its generation, is sized again).
        if self.sizes_of != generation {
            self.sizes.clear();
            self.sizes.extend(hulls.iter().map(|h| hull_size(h)));
            self.halves.clear();
            self.halves.extend(hulls.iter().map(|h| rect_half_extents(h)));
            self.sizes_of = generation;
        }
        // Each box's rotation (a function of its angle alone), in pieces on
        // the pool when `parallel`.
        self.rotations.resize(facts.len(), DVec2::X);
        let halves = &self.halves;
        let turn = |(piece, rotations): (usize, &mut [DVec2])| {
            for (k, r) in rotations.iter_mut().enumerate() {
                let i = piece * OUTLINE_BODIES_MIN + k;
                if halves[i].is_some() {
                    *r = DVec2::from_angle(q[3 * i + 2]);
                }
            }
        };
        if parallel {
            use rayon::prelude::*;
            self.rotations.par_chunks_mut(OUTLINE_BODIES_MIN).enumerate().for_each(turn);
        } else {
            self.rotations.chunks_mut(OUTLINE_BODIES_MIN).enumerate().for_each(turn);
        }
        // The outlines of polygons other than boxes: every one when there
        // are twice as many pairs as polygons or more (each polygon then
        // likely meets another: a pile), without a pass over the pairs;
        // else those met by a pair of two such polygons. Which outlines are
        // filled changes no point: an outline is a function of its body
        // alone, and a pair of two such polygons finds both (a box against
        // another polygon is collided on its own, `collide_pair_into`).
        let outlined = |i: usize| facts[i].polygon && self.halves[i].is_none();
        self.start.clear();
        let polygons = facts.iter().filter(|f| f.polygon).count();
        if pairs.len() >= 2 * polygons {
            self.start.extend((0..facts.len()).map(|i| if outlined(i) { NEEDED } else { u32::MAX }));
        } else {
            self.start.resize(facts.len(), u32::MAX);
            for pair in pairs {
                if let Partner::Body(j) = pair.b
                    && outlined(pair.a)
                    && outlined(j)
                {
                    self.start[pair.a] = NEEDED;
                    self.start[j] = NEEDED;
                }
            }
        }
        let mut total = 0usize;
        for (start, hull) in self.start.iter_mut().zip(hulls) {
            if *start == NEEDED {
                *start = total as u32;
                total += hull.len();
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

    /// Whether body `i` has an outline this step (a polygon other than a
    /// box, met by another such polygon).
    fn has(&self, i: usize) -> bool {
        self.start[i] != u32::MAX
    }

    /// Body `i`'s placement for [`box_box`] when it is a box (`q`: the
    /// positions the rotations were taken at).
    #[inline(always)]
    fn box_at(&self, q: &[f64], i: usize) -> Option<BoxPlacement> {
        self.halves[i].map(|half| BoxPlacement {
            centre: DVec2::new(q[3 * i], q[3 * i + 1]),
            rotation: self.rotations[i],
            half,
        })
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
pub(super) fn sort_pairs(pairs: &mut Vec<Pair>, spare: &mut Vec<Pair>) {
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
        let boxes = match pair.b {
            Partner::Body(j) => world.box_at(q, pair.a).zip(world.box_at(q, j)),
            Partner::Surface(_) => None,
        };
        if let Some((a, b)) = boxes {
            // Two boxes: in the reference box's frame.
            box_box(world.size(pair.a), &a, &b, reach, out);
        } else {
            match pair.b {
                // Two other polygons (both have outlines, as
                // `WorldPolygons::build` marks them): their world outlines,
                // computed once per body.
                Partner::Body(j) if world.has(pair.a) && world.has(j) => {
                    let (a, b) = (world.get(hulls, pair.a), world.get(hulls, j));
                    polygon_polygon_world(world.size(pair.a), a, b, reach, out);
                }
                _ => collide_pair_into(hulls, bodies, surfaces, pair, q, reach, out),
            }
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
    materials: &'a PairMaterials,
}

/// The mixed materials of this step's pairs when every body has the same
/// material (a pile of one wood): the body–body mix and each surface's,
/// mixed once per step instead of once per pair; otherwise each pair's is
/// mixed as it comes ([`crate::contact::ContactSettings`]'s mix rule). The
/// same values bit for bit: the same mix of the same materials.
#[derive(Clone, Debug, Default)]
pub(super) struct PairMaterials {
    /// The mix of two bodies' materials, when all bodies' are the same.
    body_body: Option<crate::contact::Material>,
    /// The mix of that material with each surface's (empty when the
    /// bodies' differ).
    body_surface: Vec<crate::contact::Material>,
}

impl PairMaterials {
    /// Mixes the step's shared materials (`bodies`: the body count).
    fn update(&mut self, settings: &crate::contact::ContactSettings, surfaces: &[Surface], bodies: usize) {
        use crate::contact::Material;
        // Compared bit for bit (0.0 and −0.0, or two NaNs, could mix apart).
        let bits = |m: &Material| {
            (
                [m.friction.to_bits(), m.restitution.to_bits(), m.rolling_resistance.to_bits()],
                m.kinetic_friction.map(f64::to_bits),
            )
        };
        let first = settings.body_material(0);
        let same = (1..bodies).all(|i| bits(&settings.body_material(i)) == bits(&first));
        self.body_surface.clear();
        if same && bodies > 0 {
            self.body_body = Some(settings.mixed(surfaces, 0, Partner::Body(0)));
            self.body_surface.extend((0..surfaces.len()).map(|s| settings.mixed(surfaces, 0, Partner::Surface(s))));
        } else {
            self.body_body = None;
        }
    }

    /// The material of `pair`.
    #[inline]
    fn of(
        &self,
        settings: &crate::contact::ContactSettings,
        surfaces: &[Surface],
        pair: Pair,
    ) -> crate::contact::Material {
        match (self.body_body, pair.b) {
            (Some(m), Partner::Body(_)) => m,
            (Some(_), Partner::Surface(s)) => self.body_surface[s],
            (None, b) => settings.mixed(surfaces, pair.a, b),
        }
    }
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

    /// Asks the processor to fetch slot `index` of colour `colour` into the
    /// cache ahead of its write: its totals, and its lane group's lines when
    /// it is the group's first lane (the other lanes find them there). A
    /// hint only (no memory is read or written; an address out of the
    /// slots is not formed).
    #[inline(always)]
    fn prefetch(&self, (colour, index): (u16, u32)) {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
            let (c, i) = (colour as usize, index as usize);
            if i >= self.lens[c] {
                return;
            }
            // In bounds (checked above), so `wrapping_add` is the plain offset.
            let totals = self.totals[c].wrapping_add(i) as *const i8;
            // SAFETY: a prefetch reads nothing and cannot fault.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(totals) };
            if i % LANES == 0 {
                let group = self.groups[c].wrapping_add(i / LANES) as *const i8;
                for line in (0..std::mem::size_of::<SoftLanes>()).step_by(64) {
                    // SAFETY: as above; the offset stays within the group.
                    unsafe { _mm_prefetch::<_MM_HINT_T0>(group.wrapping_add(line)) };
                }
            }
        }
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
        materials,
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
        let material = materials.of(settings, surfaces, pair);
        let key = (pair.a, pair.b);
        while prev < previous_info.len() && previous_info[prev].key < key {
            prev += 1;
        }
        let first_prev = prev;
        for chunk in points.chunks(2) {
            let (mut man, totals) = new_manifold(facts, pair, &material, q, v, chunk, resting_speed);
            // Built in registers (filling an array element by element and
            // reading it back whole stalled on the store forwarding).
            let features = [chunk[0].feature, chunk.get(1).map_or(0, |m| m.feature)];
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
            // The slot a few manifolds on, fetched while this one is written
            // (each manifold's slot is in another colour's arrays: the writes
            // miss the cache).
            if let Some(&ahead) = place.get(manifold + PREFETCH_AHEAD) {
                slots.prefetch(ahead);
            }
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
        // Called from outside the pool (the world's thread), each parallel
        // part below would be handed to the pool on its own and the calling
        // thread would block meanwhile (four hand-overs a step, each waking
        // the sleeping workers: they sleep through the sequential parts in
        // between). The whole prepare handed over once instead: its parallel
        // parts are then joins inside the pool. The same work in the same
        // order on any thread: the same bits.
        if rayon::current_thread_index().is_none() && narrow_in_parallel(self.pairs.len(), rayon::current_num_threads())
        {
            return rayon::scope(|_| self.soft_prepare_in_pool(bodies, surfaces, q, v, dt, resting_speed));
        }
        self.soft_prepare_in_pool(bodies, surfaces, q, v, dt, resting_speed)
    }

    /// [`ContactSet::soft_prepare`] on the calling thread (a pool's worker
    /// when it runs parallel parts).
    fn soft_prepare_in_pool(
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
        let hertz = settings.contact_hertz(h).min(0.25 / h);
        let mut soft = std::mem::take(&mut self.soft);
        soft.h = h;
        soft.soft = Softness::new(hertz, settings.damping_ratio, h);
        soft.static_soft = Softness::new(2.0 * hertz, settings.damping_ratio, h);
        soft.push_speed = settings.contact_push_speed(slop, dt);
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
        // One colour mask per body, and the shared slot of the fixed bodies
        // and surfaces (`colour_at`).
        soft.used.resize(bodies.len() + 1, 0);
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
        soft.world_polygons.build((&self.hulls, self.hulls_generation), &soft.facts, &self.pairs, q, parallel);
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
        // Each body's colour mask slot: its own for a dynamic body, the
        // shared last one (always read as zero) for a fixed body, as for a
        // surface (`colour_at`).
        let shared_slot = bodies.len() as u32;
        soft.colour_slots.clear();
        soft.colour_slots
            .extend(soft.facts.iter().enumerate().map(|(i, f)| if f.fixed { shared_slot } else { i as u32 }));
        // The pass works on local vectors and slices (taken out of the
        // state and put back after), reserved for one manifold per point at
        // most: no vector header reloaded per manifold, no growth check
        // that can reallocate; the narrowphase's chunks walked as they were
        // cut (no per-pair chunk counter).
        let mut chunk_manifolds = std::mem::take(&mut soft.chunk_manifolds);
        let mut place = std::mem::take(&mut soft.place);
        let mut starts = std::mem::take(&mut soft.contact_starts);
        chunk_manifolds.clear();
        starts.clear();
        let most: usize = soft.narrow_points[..chunks].iter().map(Vec::len).sum();
        place.reserve(most);
        starts.reserve(most + 1);
        starts.push(0);
        let mut contacts = 0u32;
        let (used, colour_slots) = (&mut soft.used[..], &soft.colour_slots[..]);
        for (ends, chunk_pairs) in soft.narrow_ends[..pairs].chunks(chunk).zip(self.pairs.chunks(chunk)) {
            chunk_manifolds.push(place.len() as u32);
            let mut begin = 0;
            for (&end, pair) in ends.iter().zip(chunk_pairs) {
                let points = end - begin;
                begin = end;
                if points == 0 {
                    continue;
                }
                let slot_b = match pair.b {
                    Partner::Body(j) => colour_slots[j],
                    Partner::Surface(_) => shared_slot,
                };
                let slot_a = colour_slots[pair.a];
                let mut first = 0;
                while first < points {
                    let c = colour_at(slot_a, slot_b, used);
                    place.push((c, counts[c as usize]));
                    counts[c as usize] += 1;
                    // The finish's output: this manifold's points (two at
                    // most) after those of the manifolds before it.
                    contacts += (points - first).min(2);
                    starts.push(contacts);
                    first += 2;
                }
            }
        }
        chunk_manifolds.push(place.len() as u32);
        soft.chunk_manifolds = chunk_manifolds;
        soft.place = place;
        soft.contact_starts = starts;
        // Every slot sized: each colour as many groups as its manifolds fill
        // (the groups kept from the last step are written over; a new one
        // is pushed empty), its totals and the identities as many entries,
        // each written once below.
        for ((colour, totals), &count) in soft.by_colour.iter_mut().zip(&mut soft.totals_by_colour).zip(&counts) {
            colour.resize(count.div_ceil(LANES as u32) as usize, SoftLanes::EMPTY);
            totals.resize(count as usize, SoftTotals::default());
        }
        soft.info.resize(soft.place.len(), SoftInfo::default());
        soft.materials.update(&self.settings, surfaces, bodies.len());
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
            materials: &soft.materials,
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contact::{ContactSettings, Material, MixRule};
    use crate::surface::SurfaceGeometry;

    /// The step's mixed materials are the pairs' own mixes bit for bit:
    /// every body–body and body–surface pair of 6 bodies and 2 surfaces,
    /// with one material for all bodies (mixed once), with one body's
    /// different (mixed per pair) and with −0.0 against 0.0 (told apart:
    /// mixed per pair), under each mix rule.
    #[test]
    fn step_materials_are_the_pairs_mixes() {
        let wood = Material { friction: 0.6, kinetic_friction: None, restitution: 0.1, rolling_resistance: 0.0 };
        let ice = Material { friction: 0.05, kinetic_friction: Some(0.02), restitution: 0.3, rolling_resistance: 0.01 };
        let surface = |friction: f64, restitution: f64| Surface {
            geometry: SurfaceGeometry::Line { point: DVec2::ZERO, normal: DVec2::Y },
            friction,
            kinetic_friction: None,
            restitution,
            rolling_resistance: 0.0,
            material: None,
        };
        let surfaces = [surface(0.4, 0.0), surface(0.9, 0.5)];
        let (zero, signed_zero) = (Material { friction: 0.0, ..wood }, Material { friction: -0.0, ..wood });
        let cases = [
            (vec![wood; 6], true),
            (vec![wood, wood, ice, wood, wood, wood], false),
            (vec![zero, signed_zero, zero], false),
        ];
        for mix in [MixRule::Min, MixRule::Max, MixRule::Mean, MixRule::Product] {
            for (materials, shared) in &cases {
                let settings = ContactSettings { mix, body_materials: materials.clone(), ..ContactSettings::default() };
                let n = materials.len();
                let mut step = PairMaterials::default();
                step.update(&settings, &surfaces, n);
                assert_eq!(step.body_body.is_some(), *shared);
                let bits =
                    |m: Material| [m.friction, m.kinetic(), m.restitution, m.rolling_resistance].map(f64::to_bits);
                for a in 0..n {
                    let partners = (a + 1..n).map(Partner::Body).chain((0..surfaces.len()).map(Partner::Surface));
                    for b in partners {
                        let pair = Pair { a, b };
                        let got = step.of(&settings, &surfaces, pair);
                        let want = settings.mixed(&surfaces, a, b);
                        assert_eq!(bits(got), bits(want), "{mix:?}, pair {pair:?}");
                        assert_eq!(got.kinetic_friction.is_some(), want.kinetic_friction.is_some());
                    }
                }
            }
        }
    }
}
