//! The soft contact constraints: points and manifolds (built one at a time
//! by the prepare, then laid out four to a group in `lanes::SoftLanes` for
//! the sweeps), their graph colouring, and the passes over one manifold
//! (warm start, solve with bias, relax, restitution): the scalar kernel that
//! the four-wide sweeps reproduce bit for bit, and that runs the restitution
//! pass and the sequential overflow colour.

use glam::DVec2;

use super::{BodyDelta, SoftState};
use crate::body::Body;
use crate::contact::narrowphase::hull_is_polygon;
use crate::contact::{Pair, Partner};
use crate::shape::Shape;

/// No second body (a surface).
pub(super) const NONE: u32 = u32::MAX;

/// One point of a soft manifold.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct SoftPoint {
    /// Unit normal from the partner to body a.
    pub(super) normal: DVec2,
    /// Anchor on a, from its centre (world frame, start of the step).
    pub(super) ra: DVec2,
    /// Anchor on b (zero for a surface).
    pub(super) rb: DVec2,
    /// Gap at the start of the step (m).
    pub(super) base_separation: f64,
    /// 1 / (normal effective mass⁻¹).
    pub(super) normal_mass: f64,
    /// 1 / (tangent effective mass⁻¹).
    pub(super) tangent_mass: f64,
    /// Normal impulse of the last sub-step (N·s).
    pub(super) normal_impulse: f64,
    /// Tangent impulse of the last sub-step (N·s).
    pub(super) tangent_impulse: f64,
    /// Static (μ_s) or kinetic (μ_k) friction for this step.
    pub(super) friction: f64,
}

/// What a manifold is, for warm starting and output (kept apart from
/// [`SoftManifold`] so that the sweeps stream less memory).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct SoftInfo {
    pub(super) key: (usize, Partner),
    pub(super) material: crate::contact::Material,
    pub(super) features: [u32; 2],
    /// Number of points (the first `count` of `features`).
    pub(super) count: u8,
}

/// What only the last relax sweep and the restitution pass of a manifold
/// read or write, kept beside the constraint (same colour, same index) so
/// that the warm start, solve and relax sweeps stream less memory.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct SoftTotals {
    /// Normal impulse per point summed over the sub-steps (N·s).
    pub(super) normal: [f64; 2],
    /// Tangent impulse per point summed over the sub-steps (N·s).
    pub(super) tangent: [f64; 2],
    /// Rolling-resistance impulse summed over the sub-steps (N·m·s).
    pub(super) rolling: f64,
    /// Normal velocity per point at the start of the step (m/s).
    pub(super) relative_velocity: [f64; 2],
    /// Coefficient of restitution of the pair.
    pub(super) restitution: f64,
}

/// The soft constraint of one pair (up to 2 points): only what the passes use.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct SoftManifold {
    pub(super) a: u32,
    pub(super) b: u32,
    pub(super) inv_mass_a: f64,
    pub(super) inv_inertia_a: f64,
    pub(super) inv_mass_b: f64,
    pub(super) inv_inertia_b: f64,
    pub(super) dynamic_a: bool,
    pub(super) dynamic_b: bool,
    pub(super) rolling_resistance: f64,
    pub(super) rolling_mass: f64,
    pub(super) rolling_impulse: f64,
    /// Body–body (soft) or against a static surface/fixed body (twice as stiff).
    pub(super) static_partner: bool,
    pub(super) count: u8,
    pub(super) points: [SoftPoint; 2],
}

pub(super) fn cross(a: DVec2, b: DVec2) -> f64 {
    a.x * b.y - a.y * b.x
}

/// ω × r for a scalar ω.
pub(super) fn cross_sv(w: f64, r: DVec2) -> DVec2 {
    DVec2::new(-w * r.y, w * r.x)
}

pub(super) fn round(shape: &Shape) -> bool {
    matches!(shape, Shape::Circle { .. } | Shape::Ellipse { .. } | Shape::Superellipse { .. })
}

/// Colours kept in a body's bit mask; the rest go to one sequential colour.
pub(super) const MAX_COLOURS: u16 = 63;

/// Greedy colouring (see the module docs), one manifold at a time in key
/// order: the lowest colour none of its dynamic bodies has yet,
/// [`MAX_COLOURS`] meaning the sequential overflow colour. `used` holds one
/// colour mask per body, cleared at the start of the step, then one shared
/// slot; `a` and `b` are the manifold's bodies' slots: a dynamic body's
/// own, the shared last one for a fixed body or a surface (which constrain
/// no colour: the shared slot is zero whenever read, each manifold's bit
/// cleared from it again), so that the colouring reads no dynamic flag and
/// takes no branch on one. It reads only the manifold's bodies, so the
/// prepare colours every manifold before building any.
#[inline(always)]
pub(super) fn colour_at(a: u32, b: u32, used: &mut [u64]) -> u16 {
    let (a, b, shared) = (a as usize, b as usize, used.len() - 1);
    let c = (!(used[a] | used[b])).trailing_zeros() as u16;
    if c >= MAX_COLOURS {
        return MAX_COLOURS;
    }
    used[a] |= 1 << c;
    used[b] |= 1 << c;
    used[shared] = 0;
    c
}

/// Body velocities shared by the threads of one colour: each manifold of a
/// colour touches only its own dynamic bodies' entries, and no two manifolds
/// of a colour share one, so accesses are disjoint (as
/// `crate::solver::pgs`'s shared velocities). Fixed bodies and surfaces are
/// only read.
pub(super) struct Shared {
    pub(super) ptr: *mut f64,
    pub(super) len: usize,
}

// SAFETY: see the type's docs; colours are swept one after the other.
unsafe impl Sync for Shared {}

impl Shared {
    #[inline]
    pub(super) fn get(&self, body: u32) -> (DVec2, f64) {
        if body == NONE {
            return (DVec2::ZERO, 0.0);
        }
        let i = 3 * body as usize;
        assert!(i + 2 < self.len);
        // SAFETY: in bounds; no other thread writes these entries (type docs).
        unsafe { (DVec2::new(self.ptr.add(i).read(), self.ptr.add(i + 1).read()), self.ptr.add(i + 2).read()) }
    }

    #[inline]
    pub(super) fn set(&self, body: u32, v: DVec2, w: f64) {
        let i = 3 * body as usize;
        assert!(i + 2 < self.len);
        // SAFETY: in bounds; no other thread reads or writes these entries.
        unsafe {
            self.ptr.add(i).write(v.x);
            self.ptr.add(i + 1).write(v.y);
            self.ptr.add(i + 2).write(w);
        }
    }
}

/// Which pass of a sub-step.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Pass {
    WarmStart,
    Solve,
    Relax,
    /// The last relax sweep of a sub-step, which also adds the sub-step's
    /// impulses to the step totals (one pass fewer over the manifolds).
    RelaxAccumulate,
    Restitution,
}

impl SoftManifold {
    /// One pass on this manifold, reading and writing its bodies' velocities.
    #[inline(always)]
    pub(super) fn run(
        &mut self,
        totals: &mut SoftTotals,
        pass: Pass,
        v: &Shared,
        delta: &[BodyDelta],
        st: &SoftState,
        threshold: f64,
    ) {
        let (mut va, mut wa) = v.get(self.a);
        let (mut vb, mut wb) = v.get(self.b);
        let (ma, ia, mb, ib) = (self.inv_mass_a, self.inv_inertia_a, self.inv_mass_b, self.inv_inertia_b);
        let apply = |p: DVec2, ra: DVec2, rb: DVec2, va: &mut DVec2, wa: &mut f64, vb: &mut DVec2, wb: &mut f64| {
            *va += ma * p;
            *wa += ia * cross(ra, p);
            *vb -= mb * p;
            *wb -= ib * cross(rb, p);
        };
        match pass {
            Pass::WarmStart => {
                for p in &self.points[..self.count as usize] {
                    let t = p.normal.perp();
                    let imp = p.normal_impulse * p.normal + p.tangent_impulse * t;
                    apply(imp, p.ra, p.rb, &mut va, &mut wa, &mut vb, &mut wb);
                }
                wa += ia * self.rolling_impulse;
                wb -= ib * self.rolling_impulse;
            }
            Pass::Solve | Pass::Relax | Pass::RelaxAccumulate => {
                let use_bias = pass == Pass::Solve;
                let soft = if self.static_partner { st.static_soft } else { st.soft };
                let (da, db) = (delta_of(delta, self.a), delta_of(delta, self.b));
                let inv_h = 1.0 / st.h;
                let mut total_normal = 0.0;
                for p in &mut self.points[..self.count as usize] {
                    let s = p.base_separation + p.normal.dot(moved(&da, p.ra) - moved(&db, p.rb));
                    // Speculative (s > 0): may close the gap within the
                    // sub-step, no more. Penetrating: the soft spring's
                    // target speed, at most `push_speed`, mass and impulse
                    // scaled (Catto's soft step); relax: rigid, no bias.
                    let (bias, mass_scale, impulse_scale) = if s > 0.0 {
                        (s * inv_h, 1.0, 0.0)
                    } else if use_bias {
                        (
                            (soft.mass_scale * soft.bias_rate * s).max(-st.push_speed),
                            soft.mass_scale,
                            soft.impulse_scale,
                        )
                    } else {
                        (0.0, 1.0, 0.0)
                    };
                    let dv = va + cross_sv(wa, p.ra) - vb - cross_sv(wb, p.rb);
                    let vn = dv.dot(p.normal);
                    let impulse = -p.normal_mass * (mass_scale * vn + bias) - impulse_scale * p.normal_impulse;
                    let new = (p.normal_impulse + impulse).max(0.0);
                    let d = new - p.normal_impulse;
                    p.normal_impulse = new;
                    total_normal += new;
                    apply(d * p.normal, p.ra, p.rb, &mut va, &mut wa, &mut vb, &mut wb);
                }
                // Friction and rolling resistance only in the relax (rigid,
                // unbiased) sweeps, as Box2D v3.1: solved against the biased
                // velocities of the soft sweep, friction holds the push-out
                // velocity's tangential part and the stack leans (20-row
                // pyramid at Box2D's settings: 17 mm lean of the top box with
                // friction in both sweeps, 2 mm in the relax only). With no
                // relax sweep (`relax_iterations: 0`) they stay in the solve.
                let friction_here = !use_bias || st.relax_iterations == 0;
                if friction_here {
                    for p in &mut self.points[..self.count as usize] {
                        let t = p.normal.perp();
                        let dv = va + cross_sv(wa, p.ra) - vb - cross_sv(wb, p.rb);
                        let vt = dv.dot(t);
                        let bound = p.friction * p.normal_impulse;
                        let new = (p.tangent_impulse - p.tangent_mass * vt).clamp(-bound, bound);
                        let d = new - p.tangent_impulse;
                        p.tangent_impulse = new;
                        apply(d * t, p.ra, p.rb, &mut va, &mut wa, &mut vb, &mut wb);
                    }
                }
                let accumulate = pass == Pass::RelaxAccumulate;
                if friction_here && self.rolling_mass > 0.0 {
                    let bound = self.rolling_resistance * total_normal;
                    let new = (self.rolling_impulse - self.rolling_mass * (wa - wb)).clamp(-bound, bound);
                    let d = new - self.rolling_impulse;
                    self.rolling_impulse = new;
                    wa += ia * d;
                    wb -= ib * d;
                }
                if accumulate {
                    self.accumulate(totals);
                }
            }
            Pass::Restitution => {
                let restitution = totals.restitution;
                if restitution == 0.0 {
                    return;
                }
                for (i, p) in self.points[..self.count as usize].iter_mut().enumerate() {
                    let relative_velocity = totals.relative_velocity[i];
                    // No impulse over the step: a speculative point that never touched.
                    if relative_velocity > -threshold || totals.normal[i] == 0.0 {
                        continue;
                    }
                    let dv = va + cross_sv(wa, p.ra) - vb - cross_sv(wb, p.rb);
                    let vn = dv.dot(p.normal);
                    let impulse = -p.normal_mass * (vn + restitution * relative_velocity);
                    let new = (p.normal_impulse + impulse).max(0.0);
                    let d = new - p.normal_impulse;
                    p.normal_impulse = new;
                    totals.normal[i] += d;
                    apply(d * p.normal, p.ra, p.rb, &mut va, &mut wa, &mut vb, &mut wb);
                }
            }
        }
        if self.dynamic_a {
            v.set(self.a, va, wa);
        }
        if self.dynamic_b {
            v.set(self.b, vb, wb);
        }
    }

    /// Adds this sub-step's impulses to the step totals.
    pub(super) fn accumulate(&self, totals: &mut SoftTotals) {
        for (i, p) in self.points[..self.count as usize].iter().enumerate() {
            totals.normal[i] += p.normal_impulse;
            totals.tangent[i] += p.tangent_impulse;
        }
        totals.rolling += self.rolling_impulse;
    }
}

pub(super) fn delta_of(delta: &[BodyDelta], body: u32) -> BodyDelta {
    if body == NONE { [0.0, 0.0, 1.0, 0.0] } else { delta[body as usize] }
}

pub(super) fn moved(d: &BodyDelta, r: DVec2) -> DVec2 {
    DVec2::new(d[0] + d[2] * r.x - d[3] * r.y - r.x, d[1] + d[3] * r.x + d[2] * r.y - r.y)
}

/// What the prepare reads of one body, gathered once per step in body
/// order (on the pool for many bodies): 40 bytes, where each pair would otherwise read its two whole
/// [`Body`]s (name, shape, pose) and compute this again.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct BodyFacts {
    /// 1/m (0 for a fixed body).
    pub(super) inv_mass: f64,
    /// 1/I (0 for a fixed body or no inertia).
    pub(super) inv_inertia: f64,
    /// How fast the body can close on another at its start-of-step speeds:
    /// centre speed + spin × bounding radius (m/s).
    pub(super) closing_speed: f64,
    pub(super) fixed: bool,
    /// A round shape (rolling resistance applies).
    pub(super) round: bool,
    /// A polygon for the narrowphase ([`hull_is_polygon`]): one that meets
    /// another polygon needs its world outline this step.
    pub(super) polygon: bool,
}

impl BodyFacts {
    /// Body `i`'s facts at velocities `v` (3 per body).
    pub(super) fn of(body: &Body, i: usize, v: &[f64]) -> BodyFacts {
        let (inv_mass, inv_inertia) = if body.fixed {
            (0.0, 0.0)
        } else {
            (1.0 / body.mass, if body.inertia > 0.0 { 1.0 / body.inertia } else { 0.0 })
        };
        let r = body.shape.bounding_radius();
        BodyFacts {
            inv_mass,
            inv_inertia,
            closing_speed: DVec2::new(v[3 * i], v[3 * i + 1]).length() + v[3 * i + 2].abs() * r,
            fixed: body.fixed,
            round: round(&body.shape),
            polygon: hull_is_polygon(&body.shape),
        }
    }
}

/// A manifold of up to 2 narrowphase points of one pair (`facts`: every
/// body's [`BodyFacts`]).
pub(super) fn new_manifold(
    facts: &[BodyFacts],
    pair: Pair,
    material: &crate::contact::Material,
    q: &[f64],
    v: &[f64],
    points: &[crate::contact::narrowphase::ManifoldPoint],
    resting_speed: f64,
) -> (SoftManifold, SoftTotals) {
    let a = pair.a;
    let fa = &facts[a];
    let (ma, ia) = (fa.inv_mass, fa.inv_inertia);
    let (b, mb, ib, fixed_b, round_b) = match pair.b {
        Partner::Body(j) => {
            let fb = &facts[j];
            (j as u32, fb.inv_mass, fb.inv_inertia, fb.fixed, fb.round)
        }
        Partner::Surface(_) => (NONE, 0.0, 0.0, true, false),
    };
    let centre = |i: u32| if i == NONE { DVec2::ZERO } else { DVec2::new(q[3 * i as usize], q[3 * i as usize + 1]) };
    let vel = |i: u32| {
        if i == NONE {
            (DVec2::ZERO, 0.0)
        } else {
            let k = 3 * i as usize;
            (DVec2::new(v[k], v[k + 1]), v[k + 2])
        }
    };
    let (va, wa) = vel(a as u32);
    let (vb, wb) = vel(b);
    let mut m = SoftManifold {
        a: a as u32,
        b,
        inv_mass_a: ma,
        inv_inertia_a: ia,
        inv_mass_b: mb,
        inv_inertia_b: ib,
        dynamic_a: !fa.fixed,
        dynamic_b: b != NONE && !fixed_b,
        rolling_resistance: material.rolling_resistance,
        static_partner: fa.fixed || fixed_b,
        count: points.len().min(2) as u8,
        ..SoftManifold::default()
    };
    let round_pair = fa.round || round_b;
    if material.rolling_resistance > 0.0 && round_pair && ia + ib > 0.0 {
        m.rolling_mass = 1.0 / (ia + ib);
    }
    let mut totals = SoftTotals { restitution: material.restitution, ..SoftTotals::default() };
    for ((p, mp), u) in m.points.iter_mut().zip(points).zip(&mut totals.relative_velocity) {
        let n = mp.normal;
        let t = n.perp();
        let ra = mp.point - centre(a as u32);
        let rb = if b == NONE { DVec2::ZERO } else { mp.point - centre(b) };
        let kn = ma + mb + ia * cross(ra, n).powi(2) + ib * cross(rb, n).powi(2);
        let kt = ma + mb + ia * cross(ra, t).powi(2) + ib * cross(rb, t).powi(2);
        let dv = va + cross_sv(wa, ra) - vb - cross_sv(wb, rb);
        // Static friction for a point that does not slip at the start of the
        // step, kinetic for one that does (faster than gravity gives in a step).
        let slipping = dv.dot(t).abs() > resting_speed;
        *p = SoftPoint {
            normal: n,
            ra,
            rb,
            base_separation: mp.gap,
            normal_mass: if kn > 0.0 { 1.0 / kn } else { 0.0 },
            tangent_mass: if kt > 0.0 { 1.0 / kt } else { 0.0 },
            friction: if slipping { material.kinetic() } else { material.friction },
            ..SoftPoint::default()
        };
        *u = dv.dot(n);
    }
    (m, totals)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The colouring before the shared slot (dynamic flags read per
    /// manifold, masks of fixed bodies and surfaces neither read nor set).
    fn colour_with_flags(a: usize, dynamic_a: bool, b: Option<(usize, bool)>, used: &mut [u64]) -> u16 {
        let mut taken = 0u64;
        if dynamic_a {
            taken |= used[a];
        }
        if let Some((b, true)) = b {
            taken |= used[b];
        }
        let c = (!taken).trailing_zeros() as u16;
        if c >= MAX_COLOURS {
            return MAX_COLOURS;
        }
        if dynamic_a {
            used[a] |= 1 << c;
        }
        if let Some((b, true)) = b {
            used[b] |= 1 << c;
        }
        c
    }

    /// `colour_at` with the shared slot gives the colours and the dynamic
    /// bodies' masks of the colouring that reads each body's dynamic flag:
    /// 200 random sets of 40 bodies (a quarter fixed) and 2,000 manifolds
    /// against bodies and surfaces, enough to reach the overflow colour
    /// (a body in more than 63 manifolds), which then sets no bit.
    #[test]
    fn shared_slot_colours_as_the_dynamic_flags() {
        let mut lcg = crate::math::Lcg(99u64);
        let mut overflow = 0;
        for _ in 0..200 {
            let n = 40;
            let fixed: Vec<bool> = (0..n).map(|_| lcg.unit() < 0.25).collect();
            let slots: Vec<u32> = (0..n).map(|i| if fixed[i] { n as u32 } else { i as u32 }).collect();
            let (mut flags_used, mut slot_used) = (vec![0u64; n], vec![0u64; n + 1]);
            for _ in 0..2000 {
                let a = (lcg.unit() * n as f64) as usize % n;
                let b = (lcg.unit() < 0.8).then(|| (lcg.unit() * n as f64) as usize % n).filter(|&b| b != a);
                let expected = colour_with_flags(a, !fixed[a], b.map(|b| (b, !fixed[b])), &mut flags_used);
                let got = colour_at(slots[a], b.map_or(n as u32, |b| slots[b]), &mut slot_used);
                assert_eq!(got, expected);
                overflow += usize::from(got == MAX_COLOURS);
                assert_eq!(slot_used[n], 0, "the shared slot is left set");
            }
            for i in (0..n).filter(|&i| !fixed[i]) {
                assert_eq!(slot_used[i], flags_used[i], "body {i}'s colour mask");
            }
        }
        assert!(overflow > 0, "the overflow colour was never reached");
    }
}
