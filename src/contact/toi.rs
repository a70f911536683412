//! Time of impact on the integrator's own trajectory of the step.
//!
//! Seed 004 rewinds linearly between two steps and measured a restitution of
//! 0.696 for e = 0.7. Here the motion inside a step is the integrator's
//! **dense output**: per body and per coordinate the cubic Hermite
//! interpolant of (q₀, v₀) and (q₁, v₁) at the step's ends. It reproduces
//! any motion of degree ≤ 3 in time exactly — free flight under constant
//! forces (a parabola) with an exact integrator such as RK4, a constant spin
//! — and agrees with the integrator at both ends for the others.
//!
//! The gap function g(τ) of a pair (the smallest gap of its manifold at the
//! interpolated poses) is then searched for its first root in (0, h]:
//!
//! * g(0) > slop and g(h) < 0: the root is bracketed; Illinois regula falsi
//!   (superlinear, never leaves the bracket) refines it until the bracket is
//!   1e-15·h wide or |g| ≤ 1e-13·R.
//! * g(h) ≥ 0 but the pair could have met in between (a fast body, a thin
//!   wall: seed 004's "skip-through"): conservative advancement, τ += g(τ)/B
//!   with B a bound on the approach speed over the step (relative speed of
//!   the centres plus |ω|·R per body, the largest at τ = 0, h/2, h, times
//!   1.5) until g ≤ 0 brackets a root, or τ passes h.
//!
//! Before any of this, a body pair whose bounding discs cannot meet within
//! the span is skipped (`discs_stay_apart`: a rigorous bound on the relative
//! speed of the Hermite motion), so the search costs a narrowphase only for
//! pairs that may touch.
//!
//! A root whose approach speed is below the resting speed is not an impact:
//! the contact solver takes it as a resting contact.

use glam::DVec2;

use super::narrowphase::{self, ManifoldPoint, Pose};
use super::{ContactSet, Pair, Partner};
use crate::body::Body;
use crate::integrator::State;
use crate::surface::Surface;

/// The motion of every body over one (sub)step of length `h`.
#[derive(Clone, Copy)]
pub struct Span<'a> {
    /// Start state.
    pub start: &'a State,
    /// End state.
    pub end: &'a State,
    /// Length (s).
    pub h: f64,
}

impl Span<'_> {
    /// Hermite basis at s = τ/h: values and derivatives (per unit τ).
    fn basis(&self, tau: f64) -> ([f64; 4], [f64; 4]) {
        let s = tau / self.h;
        let (s2, s3) = (s * s, s * s * s);
        let v = [2.0 * s3 - 3.0 * s2 + 1.0, s3 - 2.0 * s2 + s, -2.0 * s3 + 3.0 * s2, s3 - s2];
        let d = [
            (6.0 * s2 - 6.0 * s) / self.h,
            3.0 * s2 - 4.0 * s + 1.0,
            (-6.0 * s2 + 6.0 * s) / self.h,
            3.0 * s2 - 2.0 * s,
        ];
        (v, d)
    }

    fn coord(&self, k: usize, tau: f64) -> (f64, f64) {
        let (b, d) = self.basis(tau);
        let (q0, v0, q1, v1) = (self.start.q[k], self.start.v[k], self.end.q[k], self.end.v[k]);
        let h = self.h;
        (b[0] * q0 + b[1] * h * v0 + b[2] * q1 + b[3] * h * v1, d[0] * q0 + d[1] * v0 + d[2] * q1 + d[3] * v1)
    }

    /// Pose of body `i` at τ.
    pub fn pose(&self, i: usize, tau: f64) -> Pose {
        if tau == 0.0 {
            return Pose {
                position: DVec2::new(self.start.q[3 * i], self.start.q[3 * i + 1]),
                angle: self.start.q[3 * i + 2],
            };
        }
        if tau == self.h {
            return Pose {
                position: DVec2::new(self.end.q[3 * i], self.end.q[3 * i + 1]),
                angle: self.end.q[3 * i + 2],
            };
        }
        Pose {
            position: DVec2::new(self.coord(3 * i, tau).0, self.coord(3 * i + 1, tau).0),
            angle: self.coord(3 * i + 2, tau).0,
        }
    }

    /// Velocity (v, ω) of body `i` at τ.
    pub fn velocity(&self, i: usize, tau: f64) -> (DVec2, f64) {
        (DVec2::new(self.coord(3 * i, tau).1, self.coord(3 * i + 1, tau).1), self.coord(3 * i + 2, tau).1)
    }
}

/// Smallest gap of a pair at τ along the span, with its manifold point.
fn gap_at(
    bodies: &[Body],
    hulls: &[Vec<DVec2>],
    surfaces: &[Surface],
    pair: Pair,
    span: &Span,
    tau: f64,
    scratch: &mut Vec<ManifoldPoint>,
) -> Option<ManifoldPoint> {
    scratch.clear();
    let pa = span.pose(pair.a, tau);
    match pair.b {
        Partner::Body(j) => narrowphase::collide_hulls(
            &bodies[pair.a].shape,
            &hulls[pair.a],
            &pa,
            &bodies[j].shape,
            &hulls[j],
            &span.pose(j, tau),
            f64::INFINITY,
            scratch,
        ),
        Partner::Surface(s) => narrowphase::surface::collide_surface(
            &bodies[pair.a].shape,
            &pa,
            &surfaces[s].geometry,
            f64::INFINITY,
            scratch,
        ),
    }
    scratch.iter().copied().min_by(|x, y| x.gap.total_cmp(&y.gap))
}

/// Relative normal velocity of a manifold point at τ (negative: approaching).
pub fn normal_velocity(span: &Span, pair: Pair, m: &ManifoldPoint, tau: f64) -> f64 {
    let point_velocity = |i: usize| {
        let (v, w) = span.velocity(i, tau);
        let r = m.point - span.pose(i, tau).position;
        v + DVec2::new(-w * r.y, w * r.x)
    };
    let mut rel = point_velocity(pair.a);
    if let Partner::Body(j) = pair.b {
        rel -= point_velocity(j);
    }
    rel.dot(m.normal)
}

/// Whether the bounding discs of bodies `a` and `b` stay apart over the
/// whole span, so that the pair cannot touch (a cheap test before any
/// narrowphase). The relative centre motion is a cubic Hermite curve; its
/// velocity is a quadratic Bézier curve with control points w₀,
/// 3Δp/h − w₀ − w₁ and w₁ (w: relative velocities, Δp: relative
/// displacement), so by the convex-hull property its speed never exceeds
/// the largest of their lengths, B, and the centres come at most B·h closer.
fn discs_stay_apart(bodies: &[Body], span: &Span, a: usize, b: usize) -> bool {
    let rel = |x: &[f64]| DVec2::new(x[3 * a] - x[3 * b], x[3 * a + 1] - x[3 * b + 1]);
    let (s0, s1) = (span.start, span.end);
    let (p0, p1, w0, w1) = (rel(&s0.q), rel(&s1.q), rel(&s0.v), rel(&s1.v));
    let mid = 3.0 * (p1 - p0) / span.h - w0 - w1;
    let bound = w0.length().max(w1.length()).max(mid.length());
    let reach = bodies[a].shape.bounding_radius() + bodies[b].shape.bounding_radius();
    // 1e-9 relative margin: round-off of the lengths above.
    p0.length() - bound * span.h > reach * (1.0 + 1e-9)
}

/// A rigorous bound on how fast a pair's gap can close over the span: the
/// relative speed of the centres (the Hermite velocity is a quadratic
/// Bézier curve, bounded by its control points, as in
/// [`discs_stay_apart`]) plus |ω|·R per body, |ω| bounded the same way
/// (control points ω₀, 3Δφ/h − ω₀ − ω₁, ω₁) and R the bounding radius: no
/// point of a body moves faster relative to the other.
fn closing_speed_bound(bodies: &[Body], span: &Span, pair: Pair) -> f64 {
    let (s0, s1, h) = (span.start, span.end, span.h);
    let bezier = |q0: DVec2, q1: DVec2, v0: DVec2, v1: DVec2| {
        let mid = 3.0 * (q1 - q0) / h - v0 - v1;
        v0.length().max(v1.length()).max(mid.length())
    };
    let centre = |x: &[f64], i: usize| DVec2::new(x[3 * i], x[3 * i + 1]);
    let spin = |i: usize| {
        let (w0, w1) = (s0.v[3 * i + 2], s1.v[3 * i + 2]);
        let mid = 3.0 * (s1.q[3 * i + 2] - s0.q[3 * i + 2]) / h - w0 - w1;
        w0.abs().max(w1.abs()).max(mid.abs()) * bodies[i].shape.bounding_radius()
    };
    let a = pair.a;
    match pair.b {
        Partner::Body(j) => {
            let rel = |x: &[f64]| centre(x, a) - centre(x, j);
            bezier(rel(&s0.q), rel(&s1.q), rel(&s0.v), rel(&s1.v)) + spin(a) + spin(j)
        }
        Partner::Surface(_) => bezier(centre(&s0.q, a), centre(&s1.q, a), centre(&s0.v, a), centre(&s1.v, a)) + spin(a),
    }
}

/// First root of a pair's gap in (0, h], if it is an impact (approach
/// faster than `resting_speed`). `before` (≤ h): an impact found elsewhere
/// at that time; a pair whose gap provably stays open until then
/// (g(0) − B·before > 1e-9·R, B from `closing_speed_bound`, far above
/// the narrowphase's 1e-12) is not searched. That changes no result: every
/// gap the search would evaluate before `before` is positive, so its root
/// could not come earlier than `before` (to the search's bracket, 1e-15·h).
#[allow(clippy::too_many_arguments)]
pub fn pair_time_of_impact(
    bodies: &[Body],
    hulls: &[Vec<DVec2>],
    surfaces: &[Surface],
    pair: Pair,
    span: &Span,
    before: f64,
    resting_speed: f64,
    scratch: &mut Vec<ManifoldPoint>,
) -> Option<f64> {
    let h = span.h;
    let g = |tau: f64, scratch: &mut Vec<ManifoldPoint>| {
        gap_at(bodies, hulls, surfaces, pair, span, tau, scratch).map_or(f64::INFINITY, |m| m.gap)
    };
    if let Partner::Body(j) = pair.b
        && discs_stay_apart(bodies, span, pair.a, j)
    {
        return None;
    }
    // The deepest point at both ends, kept for the approach rates below
    // (the same narrowphase: not evaluated twice).
    let m0 = gap_at(bodies, hulls, surfaces, pair, span, 0.0, scratch);
    let g0 = m0.map_or(f64::INFINITY, |m| m.gap);
    if g0 <= super::resting::touch_tolerance(&bodies[pair.a]) || !g0.is_finite() {
        return None;
    }
    if before < h {
        let radius = bodies[pair.a].shape.bounding_radius()
            + if let Partner::Body(j) = pair.b { bodies[j].shape.bounding_radius() } else { 0.0 };
        if g0 - closing_speed_bound(bodies, span, pair) * before > 1e-9 * radius {
            return None;
        }
    }
    let m1 = gap_at(bodies, hulls, surfaces, pair, span, h, scratch);
    let g1 = m1.map_or(f64::INFINITY, |m| m.gap);
    if g1 > 0.0 {
        // Separating at both ends: nothing to search (a pass-through
        // approaches at the start).
        let rate = |m: Option<ManifoldPoint>, tau: f64| m.map_or(0.0, |m| normal_velocity(span, pair, &m, tau));
        if rate(m0, 0.0) >= 0.0 && rate(m1, h) >= 0.0 {
            return None;
        }
    }
    let (mut lo, mut hi, mut glo, mut ghi) = (0.0, h, g0, g1);
    if g1 > 0.0 {
        // Conservative advancement for what a step could jump over.
        let radius = |i: usize| bodies[i].shape.bounding_radius();
        let mut bound: f64 = 0.0;
        for tau in [0.0, 0.5 * h, h] {
            let (va, wa) = span.velocity(pair.a, tau);
            let (mut rel, mut spin) = (va, wa.abs() * radius(pair.a));
            if let Partner::Body(j) = pair.b {
                let (vb, wb) = span.velocity(j, tau);
                rel -= vb;
                spin += wb.abs() * radius(j);
            }
            bound = bound.max(rel.length() + spin);
        }
        bound *= 1.5;
        if bound * h <= g0 {
            return None;
        }
        let mut tau = 0.0;
        let mut gt = g0;
        let mut found = false;
        for _ in 0..1000 {
            let next = tau + (gt / bound).max(1e-9 * h);
            if next >= h {
                break;
            }
            let gn = g(next, scratch);
            if gn <= 0.0 {
                (lo, hi, glo, ghi) = (tau, next, gt, gn);
                found = true;
                break;
            }
            (tau, gt) = (next, gn);
        }
        if !found {
            return None;
        }
    }
    // Illinois regula falsi on [lo, hi], glo > 0 ≥ ghi.
    let tol = 1e-13 * bodies[pair.a].shape.bounding_radius();
    let mut side = 0;
    for _ in 0..200 {
        if hi - lo <= 1e-15 * h.max(hi) {
            break;
        }
        let mut x = (lo * ghi - hi * glo) / (ghi - glo);
        if !(x > lo && x < hi) {
            x = 0.5 * (lo + hi);
        }
        let gx = g(x, scratch);
        if gx.abs() <= tol {
            lo = x;
            glo = gx;
            break;
        }
        if gx > 0.0 {
            (lo, glo) = (x, gx);
            if side == 1 {
                ghi *= 0.5;
            }
            side = 1;
        } else {
            (hi, ghi) = (x, gx);
            if side == -1 {
                glo *= 0.5;
            }
            side = -1;
        }
    }
    let _ = glo;
    let m = gap_at(bodies, hulls, surfaces, pair, span, lo, scratch)?;
    (normal_velocity(span, pair, &m, lo) < -resting_speed).then_some(lo)
}

impl ContactSet {
    /// Stage `impacts`, search: the earliest time of impact over all
    /// candidate pairs in the span, or `None`.
    pub fn earliest_impact(
        &mut self,
        bodies: &[Body],
        surfaces: &[Surface],
        span: &Span,
        resting_speed: f64,
    ) -> Option<(f64, Pair)> {
        self.ensure_hulls(bodies);
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut best: Option<(f64, Pair)> = None;
        for &pair in &self.pairs {
            let before = best.map_or(span.h, |b| b.0);
            if let Some(t) =
                pair_time_of_impact(bodies, &self.hulls, surfaces, pair, span, before, resting_speed, &mut scratch)
                && best.is_none_or(|b| t < b.0)
            {
                best = Some((t, pair));
            }
        }
        self.scratch = scratch;
        best
    }

    /// Gap and normal velocity of one pair at a state: what the world's
    /// Newton refinement of the impact time on the integrator itself uses
    /// (τ ← τ − g/ġ, re-integrating from the start of the step each time).
    pub fn gap_and_rate(
        &mut self,
        bodies: &[Body],
        surfaces: &[Surface],
        pair: Pair,
        state: &State,
    ) -> Option<(f64, f64)> {
        let span = Span { start: state, end: state, h: 1.0 };
        self.ensure_hulls(bodies);
        let m = gap_at(bodies, &self.hulls, surfaces, pair, &span, 0.0, &mut self.scratch)?;
        Some((m.gap, normal_velocity(&span, pair, &m, 0.0)))
    }
}
