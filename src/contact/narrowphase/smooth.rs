//! Contact of two convex shapes given by their support functions, exact to
//! 1e-12 relative: GJK/EPA ([`super::gjk`]) for a start, then Newton on the
//! common-normal condition.
//!
//! For a unit normal n = (cos θ, sin θ) pointing from B to A, the separation
//! of the pair along n is s(θ) = −h_A(−n) − h_B(n) (h: support function), and
//! the signed gap is its maximum over θ (the separating-axis theorem; for
//! overlapping shapes the maximum is minus the penetration depth). With
//! p_A = s_A(−n), p_B = s_B(n) the support points and t = dn/dθ,
//!
//! * s′(θ) = (p_A − p_B)·t — zero when p_A − p_B ∥ n (the common normal);
//! * s″(θ) = −(ρ_A(−n) + ρ_B(n) + s), ρ the outlines' radii of curvature at
//!   the support points ([`Shape::support_radius_of_curvature`]).
//!
//! Newton on s′ = 0 converges quadratically where both outlines are C² with
//! finite curvature (ellipses; superellipses with exponent n = 2). It is
//! safeguarded (Numerical Recipes' `rtsafe`): a bracket on which s′ changes
//! sign is kept, and a Newton step that leaves it or does not halve s′ is
//! replaced by bisection. That covers the points where Newton has no good
//! model: a superellipse with n > 2 is flat on its axes (ρ = ∞, s′ ∝
//! |θ|^{1/(n−1)}, plain Newton would overshoot), one with n < 2 is pointed
//! there (ρ = 0); both still converge, linearly near those points. The
//! iteration stops when the step in θ is below 1e-13 rad, so the normal is
//! exact to that and the gap (a maximum: its error is quadratic in the angle
//! error) to round-off.
//!
//! The iteration is local: it refines the maximum nearest GJK's (separated)
//! or EPA's (overlapping) normal, in a window of ±0.05 rad moved until the
//! maximum lies inside. When overlapping, s may have several local maxima
//! (s″ > 0 where the depth exceeds ρ_A + ρ_B); EPA, global to 1e-4 of the
//! shapes' size, picks the right one except in a near-tie of two maxima
//! within that tolerance (then the gap is still right to 1e-4·size).
//!
//! A convex polygon against a smooth shape: s(θ) has kinks at the polygon's
//! face normals. Between two of them one vertex supports and s is smooth,
//! so the window is cut at the kinks and the best of the pieces' maxima
//! kept; a maximum at a kink is the face normal itself (a smooth shape
//! resting on a face), exact.

use glam::DVec2;

use super::gjk::{Gjk, epa, gjk};
use super::{ManifoldPoint, Pose, hull};
use crate::shape::Shape;

/// Newton/bisection stop: step or bracket in θ below this (rad).
const ANGLE_TOLERANCE: f64 = 1e-13;
/// Iteration cap of the safeguarded Newton (bisection alone reaches 1e-13
/// rad from a 2π bracket in 46 steps).
const MAX_NEWTON: usize = 100;
/// Steps of unguarded Newton tried first (quadratic convergence from GJK's
/// 1e-2 rad start reaches 1e-13 in about 4).
const PLAIN_NEWTON_STEPS: usize = 8;

/// One side of the pair: its shape and pose, or a single polygon vertex
/// (world frame, relative to B's centre) when restricted to that vertex's
/// normal cone.
#[derive(Clone, Copy)]
struct Party<'a> {
    shape: &'a Shape,
    pose: &'a Pose,
    /// (cos, sin) of the pose's angle, computed once.
    rotation: DVec2,
    vertex: Option<DVec2>,
}

impl<'a> Party<'a> {
    fn new(shape: &'a Shape, pose: &'a Pose) -> Self {
        Party { shape, pose, rotation: DVec2::from_angle(pose.angle), vertex: None }
    }

    /// Support point (relative to `origin`) and radius of curvature in world direction `d`.
    fn support(&self, d: DVec2, origin: DVec2) -> (DVec2, f64) {
        match self.vertex {
            Some(v) => (v, 0.0),
            None => {
                let local = DVec2::new(self.rotation.x, -self.rotation.y).rotate(d);
                let (p, rho) = self.shape.support_and_curvature(local);
                ((self.pose.position - origin) + self.rotation.rotate(p), rho)
            }
        }
    }
}

/// s(θ), s′(θ), s″(θ) and the support points (relative to B's centre).
#[derive(Clone, Copy, Debug)]
struct Eval {
    s: f64,
    ds: f64,
    dds: f64,
    pa: DVec2,
    pb: DVec2,
}

fn eval(a: &Party, b: &Party, origin: DVec2, theta: f64) -> Eval {
    let (sin, cos) = theta.sin_cos();
    let n = DVec2::new(cos, sin);
    let t = DVec2::new(-sin, cos);
    let (pa, ra) = a.support(-n, origin);
    let (pb, rb) = b.support(n, origin);
    let d = pa - pb;
    let s = d.dot(n);
    Eval { s, ds: d.dot(t), dds: -(ra + rb + s), pa, pb }
}

/// The maximum of s on [lo, hi] (lo < hi), assuming s′ changes sign at most
/// once there: an end when s′ does not change sign, else safeguarded Newton.
fn maximize_on(f: &impl Fn(f64) -> Eval, mut lo: f64, mut hi: f64) -> f64 {
    let at_lo = f(lo);
    if at_lo.ds <= 0.0 {
        return lo;
    }
    let at_hi = f(hi);
    if at_hi.ds >= 0.0 {
        return hi;
    }
    let mut x = 0.5 * (lo + hi);
    let mut dx_old = hi - lo;
    let mut dx = dx_old;
    for _ in 0..MAX_NEWTON {
        let e = f(x);
        if e.ds == 0.0 || !e.ds.is_finite() {
            return x;
        }
        // s′ > 0: the maximum lies to the right.
        if e.ds > 0.0 {
            lo = x;
        } else {
            hi = x;
        }
        let newton = x - e.ds / e.dds;
        let newton_ok = e.dds.is_finite()
            && e.dds < 0.0
            && newton > lo
            && newton < hi
            && (2.0 * e.ds).abs() <= (dx_old * e.dds).abs();
        dx_old = dx;
        if newton_ok {
            dx = newton - x;
            x = newton;
        } else {
            dx = 0.5 * (hi - lo);
            x = lo + dx;
        }
        if dx.abs() < ANGLE_TOLERANCE || hi - lo < ANGLE_TOLERANCE {
            break;
        }
    }
    x
}

/// The polygon side of a polygon–smooth pair: its world vertices (relative
/// to B's centre) and whether it is party A.
struct PolygonSide {
    world: Vec<DVec2>,
    is_a: bool,
}

impl PolygonSide {
    /// θ at which the normal n is face i's normal (n = −face normal when the
    /// polygon is A, since its support direction is then −n).
    fn kink(&self, i: usize) -> f64 {
        let count = self.world.len();
        let e = self.world[(i + 1) % count] - self.world[i];
        (-e.x).atan2(e.y) + if self.is_a { std::f64::consts::PI } else { 0.0 }
    }

    /// The vertex supporting normal angle θ (its index).
    fn index_at(&self, theta: f64) -> usize {
        let d = DVec2::from_angle(theta) * if self.is_a { -1.0 } else { 1.0 };
        (0..self.world.len()).max_by(|&i, &j| self.world[i].dot(d).total_cmp(&self.world[j].dot(d))).unwrap_or(0)
    }

    /// The two parties with the polygon's side fixed to vertex `k`.
    fn fixed<'p>(&self, a: &Party<'p>, b: &Party<'p>, k: usize) -> (Party<'p>, Party<'p>) {
        let fixed = Some(self.world[k]);
        if self.is_a { (Party { vertex: fixed, ..*a }, *b) } else { (*a, Party { vertex: fixed, ..*b }) }
    }
}

/// The maximum of s on [lo, hi]: with a polygon, split at its face normals
/// (kinks of s) into pieces on each of which one vertex supports and s is
/// smooth; the best of the pieces' maxima. Returns (θ, s(θ)).
fn maximize_window(a: &Party, b: &Party, origin: DVec2, polygon: Option<&PolygonSide>, lo: f64, hi: f64) -> (f64, f64) {
    let tau = std::f64::consts::TAU;
    let mut bounds = vec![lo, hi];
    if let Some(p) = polygon {
        for i in 0..p.world.len() {
            let k = p.kink(i);
            // Every copy of the kink angle inside the window.
            let mut x = k + ((lo - k) / tau).ceil() * tau;
            while x < hi {
                if x > lo {
                    bounds.push(x);
                }
                x += tau;
            }
        }
        bounds.sort_by(f64::total_cmp);
    }
    let mut best = (lo, f64::NEG_INFINITY);
    for w in bounds.windows(2) {
        let (l, r) = (w[0], w[1]);
        if r <= l {
            continue;
        }
        let (pa, pb) = match polygon {
            Some(p) => p.fixed(a, b, p.index_at(0.5 * (l + r))),
            None => (*a, *b),
        };
        let f = |th: f64| eval(&pa, &pb, origin, th);
        let th = maximize_on(&f, l, r);
        let s = f(th).s;
        if s > best.1 {
            best = (th, s);
        }
    }
    best
}

/// Unguarded Newton from θ₀, accepted only when it converges within
/// [`PLAIN_NEWTON_STEPS`] steps, on a concave stretch (s″ < 0 at every
/// step), within 0.05 rad of θ₀ and, against a polygon, inside the normal
/// cone of the vertex supporting θ₀ (no kink crossed): the common case, a
/// few evaluations. Anything else goes to the bracketed search.
fn plain_newton(a: &Party, b: &Party, origin: DVec2, polygon: Option<&PolygonSide>, theta0: f64) -> Option<f64> {
    let k0 = polygon.map(|p| p.index_at(theta0));
    let (pa, pb) = match (polygon, k0) {
        (Some(p), Some(k)) => p.fixed(a, b, k),
        _ => (*a, *b),
    };
    let mut th = theta0;
    for _ in 0..PLAIN_NEWTON_STEPS {
        let e = eval(&pa, &pb, origin, th);
        if !(e.dds < 0.0 && e.dds.is_finite()) {
            return None;
        }
        let step = -e.ds / e.dds;
        let next = th + step;
        if (next - theta0).abs() > 0.05 {
            return None;
        }
        if let (Some(p), Some(k)) = (polygon, k0)
            && p.index_at(next) != k
        {
            // Newton left vertex k's cone: the maximum is the face normal
            // on that side (a kink) if s rises into it from k's side and
            // falls beyond it, on the neighbour's side.
            let count = p.world.len();
            let (face, other) =
                if step > 0.0 { (k, (k + 1) % count) } else { ((k + count - 1) % count, (k + count - 1) % count) };
            let kink = p.kink(face);
            let kink = kink + ((th - kink) / std::f64::consts::TAU).round() * std::f64::consts::TAU;
            let (qa, qb) = p.fixed(a, b, other);
            let here = eval(&pa, &pb, origin, kink).ds;
            let beyond = eval(&qa, &qb, origin, kink).ds;
            let rising_into = if step > 0.0 { here >= 0.0 && beyond <= 0.0 } else { here <= 0.0 && beyond >= 0.0 };
            return rising_into.then_some(kink);
        }
        th = next;
        if step.abs() < ANGLE_TOLERANCE {
            return Some(th);
        }
    }
    None
}

/// The maximum of s near θ₀ (GJK's or EPA's normal): a window of ±0.05 rad,
/// moved (and doubled) towards the side where s still rises until the
/// maximum lies inside it.
fn maximize_near(a: &Party, b: &Party, origin: DVec2, polygon: Option<&PolygonSide>, theta0: f64) -> f64 {
    if let Some(th) = plain_newton(a, b, origin, polygon, theta0) {
        return th;
    }
    let mut w = 0.05;
    let (mut lo, mut hi) = (theta0 - w, theta0 + w);
    let mut span = 0.0;
    loop {
        let (x, _) = maximize_window(a, b, origin, polygon, lo, hi);
        span += hi - lo;
        if span > std::f64::consts::TAU || (x != lo && x != hi) {
            return x;
        }
        w *= 2.0;
        if x == lo {
            (lo, hi) = (lo - w, lo);
        } else {
            (lo, hi) = (hi, hi + w);
        }
    }
}

/// Contact point of convex shapes `a` and `b` (at least one not a polygon)
/// at poses `pa`, `pb`, when the gap is ≤ `margin`: one point (two smooth
/// convex outlines, or a smooth one and a polygon, touch at one point).
pub fn collide_convex(a: &Shape, pa: &Pose, b: &Shape, pb: &Pose, margin: f64, out: &mut Vec<ManifoldPoint>) {
    let origin = pb.position;
    let party_a = Party::new(a, pa);
    let party_b = Party::new(b, pb);
    let support_d = |d: DVec2| party_a.support(d, origin).0 - party_b.support(-d, origin).0;
    let centres = pa.position - pb.position;
    let size = a.bounding_radius().max(b.bounding_radius());
    // The start: GJK's closest point (separated), EPA's nearest face
    // (overlapping), the line of centres when they only touch, +y when the
    // centres coincide too.
    let normal0 = match gjk(support_d, centres, margin) {
        Gjk::BeyondMargin => return,
        Gjk::Separated { closest, distance } => closest / distance,
        Gjk::Overlap(tri) => match epa(support_d, tri, 1e-4 * size) {
            Some((_, m)) if m.is_finite() => -m,
            _ => centres.try_normalize().unwrap_or(DVec2::Y),
        },
    };
    let theta0 = normal0.y.atan2(normal0.x);
    let world = |h: Vec<DVec2>, p: &Pose| h.iter().map(|&v| p.apply(v) - origin).collect();
    let polygon = match (hull(a), hull(b)) {
        (Some(h), _) => Some(PolygonSide { world: world(h, pa), is_a: true }),
        (_, Some(h)) => Some(PolygonSide { world: world(h, pb), is_a: false }),
        _ => None,
    };
    let best = maximize_near(&party_a, &party_b, origin, polygon.as_ref(), theta0);
    let e = eval(&party_a, &party_b, origin, best);
    let gap = e.s;
    if gap.is_nan() {
        // A defined normal for the caller to report: keep the NaN gap.
        out.push(ManifoldPoint { point: origin, normal: DVec2::Y, gap, feature: 0 });
        return;
    }
    if gap > margin {
        return;
    }
    let normal = DVec2::from_angle(best);
    // The smooth side's support point is exact; the polygon's may be any
    // point of a face, so the contact point is taken from the smooth side.
    let surface = if hull(a).is_none() { e.pa - normal * (0.5 * gap) } else { e.pb + normal * (0.5 * gap) };
    out.push(ManifoldPoint { point: origin + surface, normal, gap, feature: 0 });
}
