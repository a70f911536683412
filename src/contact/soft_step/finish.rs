//! The soft step's finish: the impulses kept for the next warm start and
//! the largest penetration, every step; the contacts for output only when
//! someone reads them ([`ContactSet::contacts`]). Both written in place on
//! the pool. On the 100-row pyramid (~30,000 contacts a step, none read by
//! `pyramid_quality`) the finish went from 0.68 to 0.39 ms/step of CPU on
//! one thread (`perf record`; docs/benchmarks.md, round `broad12`).

use super::WarmImpulses;
use super::lanes::{LANES, SoftLanes};
use super::manifold::{SoftInfo, SoftTotals, delta_of, moved};
use glam::DVec2;

use crate::body::Body;
use crate::contact::narrowphase::ManifoldPoint;
use crate::contact::{Contact, ContactError, ContactSet, Pair, Partner};

impl ContactSet {
    /// After the step: the largest penetration and the impulses kept in
    /// pair order for the next warm start. A non-finite impulse or gap is an
    /// error naming the pair. The contacts for output are not written here
    /// but on the first read of [`ContactSet::contacts`] after the step
    /// (`ContactSet::soft_write_contacts`, from the lanes the step leaves
    /// as they are): a step nobody reads the contacts of writes none (~30,000
    /// records of 128 bytes per step on the 100-row pyramid). Each manifold's
    /// impulses are a function of that manifold alone: written on the pool
    /// when there are many (the same bits at any pool size).
    pub fn soft_finish(&mut self, bodies: &[Body]) -> Result<(), ContactError> {
        // Kept buffer, resized, every entry written below.
        let mut impulses = std::mem::take(&mut self.soft.impulses);
        let manifolds = self.soft.info.len();
        impulses.resize(manifolds, WarmImpulses::default());
        let inputs = FinishInputs::of(&self.soft);
        let (deepest, bad) = finish_range(&inputs, 0..manifolds, &mut impulses, finish_piece_min(manifolds));
        self.soft.impulses = impulses;
        self.max_penetration = self.max_penetration.max(deepest);
        // This step's contacts: written from the lanes when first read.
        self.soft_contacts.finished();
        match bad {
            Some(pair) => Err(self.error(bodies, pair, "the contact impulse is not finite")),
            None => Ok(()),
        }
    }

    /// The contacts of the last soft step into `out` (resized; a kept buffer,
    /// not cleared: no allocation once grown): per point, the impulses summed
    /// over the sub-steps and the gap at the end of the step, in key order,
    /// from the lanes, totals and motions the step left. The same arithmetic
    /// as the finish before it wrote them every step (the same bits). Each
    /// manifold's contacts land at a place fixed by the point counts before
    /// it (the prepare's prefix sum): written on the pool when there are many.
    pub(in crate::contact) fn soft_write_contacts(&self, out: &mut Vec<Contact>) {
        let soft = &self.soft;
        let total = soft.contact_starts.last().copied().unwrap_or(0);
        debug_assert_eq!(soft.contact_starts.len(), soft.info.len() + 1);
        match soft.info.first() {
            Some(first) => {
                let blank = Contact {
                    body_a: 0,
                    partner: Partner::Surface(0),
                    manifold: ManifoldPoint { point: DVec2::ZERO, normal: DVec2::ZERO, gap: 0.0, feature: 0 },
                    material: first.material,
                    impulse: [0.0; 3],
                };
                out.resize(total as usize, blank);
            }
            None => out.clear(),
        }
        let manifolds = soft.info.len();
        contacts_range(&FinishInputs::of(soft), 0..manifolds, out, finish_piece_min(manifolds));
    }
}

/// The fewest manifolds a piece of the finish (or of the contacts' writing)
/// is halved from on the pool (`usize::MAX`: not at all).
fn finish_piece_min(manifolds: usize) -> usize {
    let threads = rayon::current_num_threads();
    if threads > 1 && manifolds >= FINISH_MANIFOLDS_MIN {
        (manifolds / (FINISH_CHUNKS_PER_THREAD * threads)).max(FINISH_CHUNK_MIN)
    } else {
        usize::MAX
    }
}

/// Manifolds below which the finish writes the contacts on the calling thread.
pub(super) const FINISH_MANIFOLDS_MIN: usize = 1024;

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

impl<'a> FinishInputs<'a> {
    /// What the finish reads of the soft state.
    fn of(soft: &'a super::SoftState) -> Self {
        Self {
            by_colour: &soft.by_colour,
            totals_by_colour: &soft.totals_by_colour,
            delta: &soft.delta,
            q0: &soft.q0,
            place: &soft.place,
            info: &soft.info,
            starts: &soft.contact_starts,
        }
    }
}

/// The finish of the manifolds `range` (key order): their warm-start
/// impulses into `impulses` (starting at the range's first manifold),
/// halving the range on the pool while it holds `min` manifolds or more.
/// Returns the deepest penetration among the points that pushed (+0 if
/// none; the largest positive value does not depend on the order it is met
/// in) and the first pair in key order with a non-finite impulse or gap.
fn finish_range(
    inputs: &FinishInputs<'_>,
    range: std::ops::Range<usize>,
    impulses: &mut [WarmImpulses],
    min: usize,
) -> (f64, Option<Pair>) {
    if range.len() >= min.max(2) {
        let mid = range.start + range.len() / 2;
        let (ia, ib) = impulses.split_at_mut(mid - range.start);
        let ((da, ba), (db, bb)) = rayon::join(
            || finish_range(inputs, range.start..mid, ia, min),
            || finish_range(inputs, mid..range.end, ib, min),
        );
        return (if db > da { db } else { da }, ba.or(bb));
    }
    let FinishInputs { by_colour, totals_by_colour, delta, place, info, .. } = *inputs;
    let mut deepest: f64 = 0.0;
    let mut bad = None;
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
        for (k, p) in m.points[..m.count as usize].iter().enumerate() {
            let s = separation(p, &da, &db);
            let (total_normal, total_tangent) = (totals.normal[k], totals.tangent[k]);
            if !(total_normal.is_finite() && total_tangent.is_finite() && s.is_finite()) {
                bad.get_or_insert(Pair { a: info.key.0, b: info.key.1 });
            }
            // Strictly deeper only: a NaN or a zero leaves +0 (the order
            // the pieces are met in cannot change a bit).
            if total_normal > 0.0 && -s > deepest {
                deepest = -s;
            }
        }
    }
    (deepest, bad)
}

/// The separation of a point at the end of the step: its start-of-step
/// separation and the anchors' motion along the normal (what the sweeps
/// use, one expression for the finish and the contacts alike).
#[inline]
fn separation(p: &super::manifold::SoftPoint, da: &super::BodyDelta, db: &super::BodyDelta) -> f64 {
    p.base_separation + p.normal.dot(moved(da, p.ra) - moved(db, p.rb))
}

/// The output contacts of the manifolds `range` (key order) into `contacts`
/// (starting at the range's first manifold's first contact), halving the
/// range on the pool while it holds `min` manifolds or more.
fn contacts_range(inputs: &FinishInputs<'_>, range: std::ops::Range<usize>, contacts: &mut [Contact], min: usize) {
    if range.len() >= min.max(2) {
        let mid = range.start + range.len() / 2;
        let split = (inputs.starts[mid] - inputs.starts[range.start]) as usize;
        let (ca, cb) = contacts.split_at_mut(split);
        rayon::join(
            || contacts_range(inputs, range.start..mid, ca, min),
            || contacts_range(inputs, mid..range.end, cb, min),
        );
        return;
    }
    let FinishInputs { by_colour, totals_by_colour, delta, q0, place, info, .. } = *inputs;
    let mut out = contacts.iter_mut();
    for (&(c, i), info) in place[range.clone()].iter().zip(&info[range]) {
        let m = &by_colour[c as usize][i as usize / LANES].get(i as usize % LANES);
        let totals = &totals_by_colour[c as usize][i as usize];
        let (da, db) = (delta_of(delta, m.a), delta_of(delta, m.b));
        let centre = DVec2::new(q0[3 * m.a as usize], q0[3 * m.a as usize + 1]);
        for (k, (p, &feature)) in m.points[..m.count as usize].iter().zip(&info.features).enumerate() {
            if let Some(contact) = out.next() {
                *contact = Contact {
                    body_a: info.key.0,
                    partner: info.key.1,
                    manifold: ManifoldPoint {
                        point: centre + p.ra + DVec2::new(da[0], da[1]),
                        normal: p.normal,
                        gap: separation(p, &da, &db),
                        feature,
                    },
                    material: info.material,
                    impulse: [totals.normal[k], totals.tangent[k], totals.rolling],
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    /// A 20-row pyramid on the soft step (4 sub-steps, 30 Hz).
    fn pyramid() -> crate::world::World {
        let overrides = ["piles[0].rows=20".to_string(), "contacts.solver=SoftStep(substeps: 4, hertz: 30)".into()];
        let scene = crate::scene::Scene::load(std::path::Path::new("scenes/pyramid.ron"), &overrides).expect("scene");
        scene.build_world().expect("world")
    }

    /// The contacts are written when read: two worlds, one read after every
    /// step and one every third, stay bitwise the same; the list read is
    /// the same on a second read (kept, not written again), in a clone made
    /// before or after the read, and in the other world; it is refreshed by
    /// the next step; the floor's normal impulses carry the pile's weight.
    #[test]
    fn contacts_written_when_read_change_nothing() {
        let (mut every, mut some) = (pyramid(), pyramid());
        for step in 0..40 {
            every.step().expect("step");
            some.step().expect("step");
            let unread = some.contacts.clone();
            let listed = every.contacts.contacts().to_vec();
            assert!(listed.len() > 400, "{} contacts", listed.len());
            assert!(std::ptr::eq(every.contacts.contacts(), every.contacts.contacts()), "written again");
            assert!(every.contacts.clone().contacts() == &listed[..]);
            assert!(unread.contacts() == &listed[..], "step {step}: a clone made before the read");
            if step % 3 == 0 {
                assert!(some.contacts.contacts() == &listed[..], "step {step}");
            }
            let (q, v) = every.state_vectors();
            let bits: Vec<u64> = q.iter().chain(v).map(|x| x.to_bits()).collect();
            let (q, v) = some.state_vectors();
            assert!(bits == q.iter().chain(v).map(|x| x.to_bits()).collect::<Vec<_>>(), "step {step}: states differ");
            // The forces (the reactions output) read the same list.
            let forces = every.contacts.forces(every.bodies.as_slice(), every.dt);
            assert_eq!(forces.len(), listed.len(), "step {step}: one force per contact");
            assert!(forces.iter().zip(&listed).all(|(f, c)| f.normal_force == c.impulse[0] / every.dt));
            if step == 39 {
                let floor: f64 = listed
                    .iter()
                    .filter(|c| matches!(c.partner, crate::contact::Partner::Surface(_)))
                    .map(|c| c.impulse[0])
                    .sum();
                let weight: f64 = every.bodies.iter().map(|b| b.mass * 10.0).sum();
                let ratio = floor / (weight * every.dt);
                assert!((ratio - 1.0).abs() < 0.05, "floor impulse / (weight·dt) = {ratio}");
            }
        }
        // The next step's contacts replace the list.
        let before = every.contacts.contacts().to_vec();
        every.step().expect("step");
        assert!(every.contacts.contacts() != &before[..], "the list was not refreshed");
    }
}
