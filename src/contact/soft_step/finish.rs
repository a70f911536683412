//! The soft step's finish: the contacts for output and the impulses kept
//! for the next warm start, written in place on the pool.

use super::WarmImpulses;
use super::lanes::{LANES, SoftLanes};
use super::manifold::{SoftInfo, SoftTotals, delta_of, moved};
use glam::DVec2;

use crate::body::Body;
use crate::contact::narrowphase::ManifoldPoint;
use crate::contact::{Contact, ContactError, ContactSet, Pair, Partner};

impl ContactSet {
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
