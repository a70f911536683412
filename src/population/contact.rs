//! The contact law shared by the CPU twin and `shaders/population.wgsl`
//! (keep the two in step, formula for formula). The CPU twin's velocity
//! pass computes its ball–ball pairs four at a time (`pair_lanes`: SSE2
//! on x86-64, each lane the operations of the scalar `pair_lane` in the
//! same order, so the same bits).
//!
//! Every contact is seen from one ball `i` against an *other*: a ball `j` or
//! an obstacle (infinite mass). Impulses are computed from quantities that
//! are exactly antisymmetric in `i` and `j` (normals and relative velocities
//! negate exactly in floating point), so the impulse ball `j` computes for
//! the pair is bitwise the negation of ball `i`'s: momentum is conserved to
//! the rounding of the sums, whatever the thread count or device.
//!
//! **Mass splitting** (Tonge, Benevolenski, Voroshilov 2012): a ball with
//! `n` active contacts enters each of them with `n` times its inverse mass,
//! so the Jacobi update (every contact solved from the same old state, the
//! ball moved by the sum) cannot overshoot, and the pair's effective inverse
//! mass `n_i w_i + n_j w_j` stays symmetric.
//!
//! **Restitution** (seed 004 eq. 6, with a resting threshold): a contact
//! approaching faster than the resting speed leaves with `−e·v_n` of its
//! pre-solve normal velocity; a slower one leaves with 0 (piles rest). As
//! seed 004 rewinds to the contact, the position target of a new impact adds
//! the rebound distance travelled after the time of impact,
//! `e·|v_n|·h·(1 − t_c)` with `t_c = gap/(|v_n| h)`, on the straight path of
//! the substep: apex heights then follow `e²` without the energy error of a
//! projection to the touching point.
//!
//! **Friction**: Coulomb at the contact point, with the rotational effective
//! mass of solid discs (`r²/J = 2/m`, so the tangential inverse mass is
//! `3 w`), bounded by `μ` times the normal impulse of the substep (the
//! position solve's share estimated from the predicted overlap, `δ/(h k)`).
//! **Rolling resistance**: a torque impulse `μ_r·P_n` against the spin,
//! never reversing it.

use glam::Vec2;

use super::substep::SweepBall;

/// Tangential inverse mass of a solid disc per unit of `w = 1/m`: `1 + r²/J`
/// with `J = m r²/2`.
pub const DISC_TANGENT_FACTOR: f32 = 3.0;

/// Contact material in use for one contact.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Material {
    /// Coefficient of restitution.
    pub restitution: f32,
    /// Coulomb friction coefficient.
    pub friction: f32,
    /// Rolling-resistance length (m).
    pub rolling_resistance: f32,
}

/// The material of a ball against an obstacle: restitution and rolling
/// resistance the larger of the two, friction their geometric mean (Box2D's
/// default mixing).
pub fn mix(balls: Material, restitution: f32, friction: f32, rolling_resistance: f32) -> Material {
    Material {
        restitution: balls.restitution.max(restitution),
        friction: (balls.friction * friction).sqrt(),
        rolling_resistance: balls.rolling_resistance.max(rolling_resistance),
    }
}

/// Extra separation the solve sweeps give a contact this substep (see the
/// module doc): `gap0` the gap at the start of the substep, `vn_pre` the
/// pre-solve normal velocity (< 0 approaching), `h` the substep, `push` the
/// largest push-out of an overlap present at the start (m; infinite:
/// unbounded).
///
/// * A new impact (`gap0 > 0`, approaching faster than the resting speed):
///   the rebound distance, ≥ 0.
/// * An overlap deeper than `push` at the start (`gap0 < −push`): the
///   negative `gap0 + push`, i.e. the sweeps leave an overlap of
///   `−gap0 − push`. A position correction becomes velocity (`Δx/h`), and
///   one that resolves a deep overlap in one substep gives the pair a speed
///   the Jacobi velocity pass does not take back once the balls are apart
///   (a tall column landing on a pile threw balls out at 370 m/s): bounded,
///   the separation speed this adds is at most `push/h` (Box2D v3's
///   `contactPushMaxVelocity`, here in radii per substep).
/// * Otherwise 0.
#[inline]
pub fn rebound_distance(gap0: f32, vn_pre: f32, h: f32, restitution: f32, resting_speed: f32, push: f32) -> f32 {
    if gap0 < -push {
        return gap0 + push;
    }
    if gap0 > 0.0 && vn_pre < -resting_speed {
        let tc = gap0 / (-vn_pre * h);
        if tc < 1.0 {
            return restitution * (-vn_pre) * h * (1.0 - tc);
        }
    }
    0.0
}

/// Position correction of ball `i` for one contact: `gap` the signed
/// distance minus the target separation (negative: too close), `normal`
/// from the other into `i`, `k` the split effective inverse mass
/// `n_i w_i + n_o w_o`.
#[inline]
pub fn position_correction(gap: f32, normal: Vec2, w_i: f32, k: f32) -> Vec2 {
    if gap < 0.0 && k > 0.0 { normal * (-gap * w_i / k) } else { Vec2::ZERO }
}

/// One contact of the velocity pass in its canonical orientation: ball `a`
/// (the lower index, or the ball against an obstacle) against `b`.
#[derive(Clone, Copy, Debug)]
pub struct VelocityContact {
    /// Unit normal from `b` into `a`.
    pub normal: Vec2,
    /// Velocity of `a`'s material at the contact point minus `b`'s
    /// (`v_a − r_a ω_a t − (v_b + r_b ω_b t)`, `t` = perp(n)).
    pub relative_velocity: Vec2,
    /// Pre-solve normal velocity `(v_a − v_b)·n` (< 0 approaching).
    pub vn_pre: f32,
    /// Overlap at the predicted (pre-solve) positions, ≥ 0.
    pub overlap_pred: f32,
    /// Split normal inverse mass `n_a w_a + n_b w_b`.
    pub k: f32,
}

/// Impulses of one contact on `a` (`b` receives their negation): normal
/// `p_n` along n, tangential `p_t` along perp(n), and the contact's normal
/// impulse over the substep `p_total` (for rolling resistance).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ContactImpulse {
    /// Normal impulse along n (N·s).
    pub normal: f32,
    /// Friction impulse along perp(n) (N·s).
    pub tangent: f32,
    /// Normal impulse of the substep, position share included (N·s).
    pub total: f32,
}

/// The velocity pass for one contact, substep `h`.
#[inline]
pub fn contact_impulse(c: &VelocityContact, m: Material, h: f32, resting_speed: f32) -> ContactImpulse {
    if c.k <= 0.0 {
        return ContactImpulse { normal: 0.0, tangent: 0.0, total: 0.0 };
    }
    let n = c.normal;
    let vn = c.relative_velocity.dot(n);
    let vt = c.relative_velocity.dot(n.perp());
    let target = if c.vn_pre < -resting_speed { -m.restitution * c.vn_pre } else { 0.0 };
    let p_n = (target - vn) / c.k;
    let total = c.overlap_pred / (h * c.k) + p_n.max(0.0);
    let limit = m.friction * total;
    let p_t = (-vt / (DISC_TANGENT_FACTOR * c.k)).clamp(-limit, limit);
    ContactImpulse { normal: p_n, tangent: p_t, total }
}

/// Spin change of a ball (inverse mass `w`, radius `r`) from a friction
/// impulse `p_t` of a contact: the same sign for `a` and `b` (the torque
/// `(−r n) × (p_t t)` on `a` equals `(r n) × (−p_t t)` on `b`); J = m r²/2.
#[inline]
pub fn spin_change(p_t: f32, w: f32, r: f32) -> f32 {
    -2.0 * w * p_t / r
}

/// Rolling resistance: the largest spin change `μ_r·P/J` a contact's normal
/// impulse `total` allows against the spin.
#[inline]
pub fn rolling_limit(m: Material, total: f32, w: f32, r: f32) -> f32 {
    m.rolling_resistance * total * 2.0 * w / (r * r)
}

/// Pairs the velocity pass computes at once ([`pair_lanes`]).
pub(crate) const LANES: usize = 4;

/// The per-ball arrays the velocity pass reads of a ball–ball pair (the
/// CPU twin's substep state): the sweeps' records (the latest positions
/// `x* + dx`, radii, inverse masses), predictions `x*`, pre-solve
/// velocities `v⁻`, position corrections `dx`, spins and contact counts.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PairInputs<'a> {
    /// The sweeps' records: `x* + dx`, radius, inverse mass.
    pub(crate) ball: &'a [SweepBall],
    /// The predictions `x*`.
    pub(crate) x_pred: &'a [Vec2],
    /// The pre-solve velocities `v⁻`.
    pub(crate) v_pre: &'a [Vec2],
    /// The position solve's corrections.
    pub(crate) dx: &'a [Vec2],
    /// The spins.
    pub(crate) omega: &'a [f32],
    /// The contact counts (mass splitting, `count_contacts`).
    pub(crate) count: &'a [u32],
}

/// What the velocity pass gives the [`LANES`] pairs of [`pair_lanes`], lane
/// `l` in bit `l` of the masks and in entry `l` of the arrays.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct PairLaneImpulses {
    /// The pairs that are near (not skipped by the far test): only their
    /// `overlap` counts in the summary's largest overlap.
    pub(crate) near: u32,
    /// The pairs that take part (their sides below are then the impulse).
    pub(crate) active: u32,
    /// Overlap at the new positions over the smaller radius.
    pub(crate) overlap: [f32; LANES],
    /// Ball `a`'s velocity change (x, y), spin change, rolling limit
    /// (`SideImpulse`'s fields in order).
    pub(crate) side_a: [[f32; 4]; LANES],
    /// Ball `b`'s.
    pub(crate) side_b: [[f32; 4]; LANES],
}

/// Whether the pair of records `ball_a`, `ball_b` (predictions `pred_a`,
/// `pred_b`) is far apart now and at the prediction (margin far above f32
/// rounding): no overlap to report, and no part in the velocity pass.
#[inline(always)]
pub(crate) fn pair_is_far(ball_a: SweepBall, ball_b: SweepBall, pred_a: Vec2, pred_b: Vec2) -> bool {
    use crate::population::cpu::{ACTIVE_SLOP, FAR_MARGIN};
    let sum_r = ball_a.radius + ball_b.radius;
    let active = sum_r * (1.0 + ACTIVE_SLOP);
    (ball_a.at - ball_b.at).length_squared() > active * active * (1.0 + FAR_MARGIN)
        && (pred_a - pred_b).length_squared() > sum_r * sum_r * (1.0 + FAR_MARGIN)
}

/// The ball–ball contact of the velocity pass for the pair (`a`, `b`), `a`
/// the lower slot, in scalar arithmetic (the reference of [`pair_lanes`];
/// the CPU twin's former per-pair code, expression for expression): far
/// test, normal, overlap, [`contact_impulse`], then each side's velocity
/// change `±(n p_n + t p_t) w`, [`spin_change`] and [`rolling_limit`];
/// written into lane `l` of `out`.
#[allow(clippy::too_many_arguments)]
#[cfg_attr(all(target_arch = "x86_64", target_feature = "sse2", not(test)), allow(dead_code))]
pub(crate) fn pair_lane(
    p: &PairInputs<'_>,
    (a, b): (usize, usize),
    m: Material,
    h: f32,
    resting: f32,
    l: usize,
    out: &mut PairLaneImpulses,
) {
    use crate::population::cpu::{ACTIVE_SLOP, pair_normal};
    let (ball_a, ball_b) = (p.ball[a], p.ball[b]);
    let (pa, pb, xa, xb) = (ball_a.at, ball_b.at, p.x_pred[a], p.x_pred[b]);
    let (r_a, r_b, w_a, w_b) = (ball_a.radius, ball_b.radius, ball_a.inv_mass, ball_b.inv_mass);
    let sum_r = r_a + r_b;
    let bit = 1u32 << l;
    (out.near, out.active) = (out.near & !bit, out.active & !bit);
    if pair_is_far(ball_a, ball_b, xa, xb) {
        return;
    }
    let (n, d) = pair_normal(pa, pb);
    out.near |= bit;
    out.overlap[l] = (sum_r - d) / r_a.min(r_b);
    let overlap_pred = (sum_r - (xa - xb).length()).max(0.0);
    if overlap_pred <= 0.0 && d > sum_r * (1.0 + ACTIVE_SLOP) {
        return;
    }
    let t = n.perp();
    let v_mid = |i: usize| p.v_pre[i] + p.dx[i] / h;
    let rel = (v_mid(a) - t * (r_a * p.omega[a])) - (v_mid(b) + t * (r_b * p.omega[b]));
    let c = VelocityContact {
        normal: n,
        relative_velocity: rel,
        vn_pre: (p.v_pre[a] - p.v_pre[b]).dot(n),
        overlap_pred,
        k: p.count[a] as f32 * w_a + p.count[b] as f32 * w_b,
    };
    let i = contact_impulse(&c, m, h, resting);
    let impulse = n * i.normal + t * i.tangent;
    let (dv_a, dv_b) = (impulse * w_a, -impulse * w_b);
    out.active |= bit;
    out.side_a[l] = [dv_a.x, dv_a.y, spin_change(i.tangent, w_a, r_a), rolling_limit(m, i.total, w_a, r_a)];
    out.side_b[l] = [dv_b.x, dv_b.y, spin_change(i.tangent, w_b, r_b), rolling_limit(m, i.total, w_b, r_b)];
}

/// [`pair_lane`] for the [`LANES`] pairs (`a[l]`, `b[l]`) at once: on x86-64
/// in SSE2 (part of the x86-64 baseline: no feature to detect), the same
/// IEEE operations (+, −, ×, ÷, √; no fused multiply-add) of the same
/// operands in the same order per lane, the branches as masks, so that
/// every lane's result is bitwise [`pair_lane`]'s (tested); elsewhere lane
/// by lane. The indices must be in bounds of every array of `p` (checked).
#[inline]
pub(crate) fn pair_lanes(
    p: &PairInputs<'_>,
    a: [usize; LANES],
    b: [usize; LANES],
    m: Material,
    h: f32,
    resting: f32,
    out: &mut PairLaneImpulses,
) {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    {
        let n = p.ball.len().min(p.x_pred.len()).min(p.v_pre.len()).min(p.dx.len());
        let n = n.min(p.omega.len()).min(p.count.len());
        assert!(a.iter().chain(&b).all(|&i| i < n), "pair lanes out of bounds");
        // SAFETY: SSE2 is part of every x86-64 CPU (the target's baseline);
        // the indices are in bounds (above).
        unsafe { sse2::pair_lanes(p, a, b, m, h, resting, out) };
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    for l in 0..LANES {
        pair_lane(p, (a[l], b[l]), m, h, resting, l, out);
    }
}

#[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
mod sse2 {
    //! [`super::pair_lanes`] in SSE2, expression for expression
    //! [`super::pair_lane`]'s (each line names the scalar expression). The
    //! lanes' data are loaded in rows (a record of 16 bytes, a `Vec2` of 8)
    //! and transposed into one register per field.
    use std::arch::x86_64::*;

    use glam::Vec2;

    use super::{DISC_TANGENT_FACTOR, LANES, Material, PairInputs, PairLaneImpulses};
    use crate::population::cpu::{ACTIVE_SLOP, FAR_MARGIN};

    /// `if mask { yes } else { no }` per lane.
    #[inline]
    #[target_feature(enable = "sse2")]
    fn select(mask: __m128, yes: __m128, no: __m128) -> __m128 {
        _mm_or_ps(_mm_and_ps(mask, yes), _mm_andnot_ps(mask, no))
    }

    /// `-x` (the sign bit flipped, as the scalar negation).
    #[inline]
    #[target_feature(enable = "sse2")]
    fn neg(x: __m128) -> __m128 {
        _mm_xor_ps(x, _mm_set1_ps(-0.0))
    }

    /// `x.max(0.0)` as Rust's `f32::max` compiles on x86-64: `0 > x ? 0 : x`,
    /// and 0 where x is NaN (the other argument).
    #[inline]
    #[target_feature(enable = "sse2")]
    fn max0(x: __m128) -> __m128 {
        _mm_andnot_ps(_mm_cmpunord_ps(x, x), _mm_max_ps(_mm_setzero_ps(), x))
    }

    /// Four lanes' `Vec2` of `v` as (x, y) registers.
    ///
    /// # Safety
    /// The indices are in bounds.
    #[inline]
    #[target_feature(enable = "sse2")]
    unsafe fn vec2s(v: &[Vec2], i: [usize; LANES]) -> (__m128, __m128) {
        let at = |l: usize| unsafe { v.as_ptr().add(i[l]) as *const __m128i };
        // SAFETY: 8-byte loads of in-bounds Vec2s by `_mm_loadl_epi64`, which
        // reads unaligned (a Vec2 is only 4-aligned: `_mm_load_sd` would
        // read an f64 and require 8).
        let (lo, hi) = unsafe {
            (
                _mm_castsi128_ps(_mm_unpacklo_epi64(_mm_loadl_epi64(at(0)), _mm_loadl_epi64(at(1)))),
                _mm_castsi128_ps(_mm_unpacklo_epi64(_mm_loadl_epi64(at(2)), _mm_loadl_epi64(at(3)))),
            )
        };
        (_mm_shuffle_ps::<0b10_00_10_00>(lo, hi), _mm_shuffle_ps::<0b11_01_11_01>(lo, hi))
    }

    /// Four lanes' records as (x, y, radius, inverse mass) registers.
    ///
    /// # Safety
    /// The indices are in bounds.
    #[inline]
    #[target_feature(enable = "sse2")]
    unsafe fn records(p: &PairInputs<'_>, i: [usize; LANES]) -> [__m128; 4] {
        // SAFETY: 16-byte loads of in-bounds 16-byte-aligned records.
        let row = |l: usize| unsafe { _mm_load_ps(p.ball.as_ptr().add(i[l]) as *const f32) };
        let (r0, r1, r2, r3) = (row(0), row(1), row(2), row(3));
        let (t0, t1) = (_mm_unpacklo_ps(r0, r1), _mm_unpacklo_ps(r2, r3));
        let (t2, t3) = (_mm_unpackhi_ps(r0, r1), _mm_unpackhi_ps(r2, r3));
        [_mm_movelh_ps(t0, t1), _mm_movehl_ps(t1, t0), _mm_movelh_ps(t2, t3), _mm_movehl_ps(t3, t2)]
    }

    /// Four lanes' f32 of `v`.
    ///
    /// # Safety
    /// The indices are in bounds.
    #[inline]
    #[target_feature(enable = "sse2")]
    unsafe fn scalars(v: &[f32], i: [usize; LANES]) -> __m128 {
        unsafe {
            let x = |l: usize| *v.get_unchecked(i[l]);
            _mm_set_ps(x(3), x(2), x(1), x(0))
        }
    }

    /// Four lanes' contact counts as f32: `n as f32` (the counts are at most
    /// a list and the obstacles, far below 2²⁴, where the signed conversion
    /// is the unsigned one, exactly).
    ///
    /// # Safety
    /// The indices are in bounds.
    #[inline]
    #[target_feature(enable = "sse2")]
    unsafe fn counts(v: &[u32], i: [usize; LANES]) -> __m128 {
        unsafe {
            let x = |l: usize| *v.get_unchecked(i[l]) as i32;
            _mm_cvtepi32_ps(_mm_set_epi32(x(3), x(2), x(1), x(0)))
        }
    }

    /// Four lanes' (dv.x, dv.y, spin, roll) as one row each.
    #[inline]
    #[target_feature(enable = "sse2")]
    fn rows(c: [__m128; 4], to: &mut [[f32; 4]; LANES]) {
        let (t0, t1) = (_mm_unpacklo_ps(c[0], c[1]), _mm_unpacklo_ps(c[2], c[3]));
        let (t2, t3) = (_mm_unpackhi_ps(c[0], c[1]), _mm_unpackhi_ps(c[2], c[3]));
        let rows = [_mm_movelh_ps(t0, t1), _mm_movehl_ps(t1, t0), _mm_movelh_ps(t2, t3), _mm_movehl_ps(t3, t2)];
        for (row, to) in rows.into_iter().zip(to) {
            // SAFETY: a 16-byte store into a [f32; 4].
            unsafe { _mm_storeu_ps(to.as_mut_ptr(), row) };
        }
    }

    /// # Safety
    /// SSE2 (the x86-64 baseline); every index is in bounds of every array.
    #[target_feature(enable = "sse2")]
    pub(super) unsafe fn pair_lanes(
        p: &PairInputs<'_>,
        a: [usize; LANES],
        b: [usize; LANES],
        m: Material,
        h: f32,
        resting: f32,
        out: &mut PairLaneImpulses,
    ) {
        let (add, sub, mul, div) = (_mm_add_ps, _mm_sub_ps, _mm_mul_ps, _mm_div_ps);
        let splat = _mm_set1_ps;
        let zero = _mm_setzero_ps();
        // SAFETY: the indices are in bounds (the caller).
        let ([pax, pay, r_a, w_a], [pbx, pby, r_b, w_b]) = unsafe { (records(p, a), records(p, b)) };
        let ((xax, xay), (xbx, xby)) = unsafe { (vec2s(p.x_pred, a), vec2s(p.x_pred, b)) };
        // sum_r = r_a + r_b; active = sum_r * (1 + ACTIVE_SLOP)
        let sum_r = add(r_a, r_b);
        let slop = splat(1.0 + ACTIVE_SLOP);
        let active = mul(sum_r, slop);
        // (pa − pb).length_squared() (dot: x·x + y·y)
        let (rx, ry) = (sub(pax, pbx), sub(pay, pby));
        let d2 = add(mul(rx, rx), mul(ry, ry));
        let (qx, qy) = (sub(xax, xbx), sub(xay, xby));
        let q2 = add(mul(qx, qx), mul(qy, qy));
        let margin = splat(1.0 + FAR_MARGIN);
        let far = _mm_and_ps(
            _mm_cmpgt_ps(d2, mul(mul(active, active), margin)),
            _mm_cmpgt_ps(q2, mul(mul(sum_r, sum_r), margin)),
        );
        // pair_normal: d = |r|, n = r / d where d > 0, else (1, 0) and 0.
        let d = _mm_sqrt_ps(d2);
        let positive = _mm_cmpgt_ps(d, zero);
        let nx = select(positive, div(rx, d), splat(1.0));
        let ny = select(positive, div(ry, d), zero);
        let d = select(positive, d, zero);
        // (sum_r − d) / r_a.min(r_b) (radii: positive, never NaN)
        // SAFETY: a 16-byte store into a [f32; 4].
        unsafe { _mm_storeu_ps(out.overlap.as_mut_ptr(), div(sub(sum_r, d), _mm_min_ps(r_a, r_b))) };
        // (sum_r − |x*_a − x*_b|).max(0)
        let overlap_pred = max0(sub(sum_r, _mm_sqrt_ps(q2)));
        let parted = _mm_and_ps(_mm_cmple_ps(overlap_pred, zero), _mm_cmpgt_ps(d, mul(sum_r, slop)));
        // t = n.perp() = (−n.y, n.x)
        let (tx, ty) = (neg(ny), nx);
        // v_mid = v⁻ + dx / h
        let hv = splat(h);
        let ((vax, vay), (vbx, vby)) = unsafe { (vec2s(p.v_pre, a), vec2s(p.v_pre, b)) };
        let ((dax, day), (dbx, dby)) = unsafe { (vec2s(p.dx, a), vec2s(p.dx, b)) };
        let (mid_ax, mid_ay) = (add(vax, div(dax, hv)), add(vay, div(day, hv)));
        let (mid_bx, mid_by) = (add(vbx, div(dbx, hv)), add(vby, div(dby, hv)));
        // rel = (v_mid_a − t (r_a ω_a)) − (v_mid_b + t (r_b ω_b))
        let (omega_a, omega_b) = unsafe { (scalars(p.omega, a), scalars(p.omega, b)) };
        let (sa, sb) = (mul(r_a, omega_a), mul(r_b, omega_b));
        let relx = sub(sub(mid_ax, mul(tx, sa)), add(mid_bx, mul(tx, sb)));
        let rely = sub(sub(mid_ay, mul(ty, sa)), add(mid_by, mul(ty, sb)));
        // vn_pre = (v⁻_a − v⁻_b)·n
        let vn_pre = add(mul(sub(vax, vbx), nx), mul(sub(vay, vby), ny));
        // k = n_a w_a + n_b w_b
        let (count_a, count_b) = unsafe { (counts(p.count, a), counts(p.count, b)) };
        let k = add(mul(count_a, w_a), mul(count_b, w_b));
        // contact_impulse: vn = rel·n, vt = rel·perp(n)
        let vn = add(mul(relx, nx), mul(rely, ny));
        let vt = add(mul(relx, neg(ny)), mul(rely, nx));
        // target = vn_pre < −resting ? −e·vn_pre : 0
        let target = select(_mm_cmplt_ps(vn_pre, splat(-resting)), mul(splat(-m.restitution), vn_pre), zero);
        // p_n = (target − vn) / k; total = overlap_pred / (h k) + p_n.max(0)
        let p_n = div(sub(target, vn), k);
        let total = add(div(overlap_pred, mul(hv, k)), max0(p_n));
        // limit = μ total; p_t = (−vt / (3 k)).clamp(−limit, limit)
        let limit = mul(splat(m.friction), total);
        let p_t = div(neg(vt), mul(splat(DISC_TANGENT_FACTOR), k));
        let low = neg(limit);
        let p_t = select(_mm_cmplt_ps(p_t, low), low, p_t);
        let p_t = select(_mm_cmpgt_ps(p_t, limit), limit, p_t);
        // k ≤ 0: no impulse
        let massless = _mm_cmple_ps(k, zero);
        let (p_n, p_t, total) =
            (select(massless, zero, p_n), select(massless, zero, p_t), select(massless, zero, total));
        // impulse = n p_n + t p_t
        let ix = add(mul(nx, p_n), mul(tx, p_t));
        let iy = add(mul(ny, p_n), mul(ty, p_t));
        // spin_change: −2 w p_t / r; rolling_limit: μ_r total · 2 · w / (r r)
        let spin = |w: __m128, r: __m128| div(mul(mul(splat(-2.0), w), p_t), r);
        let roll =
            |w: __m128, r: __m128| div(mul(mul(mul(splat(m.rolling_resistance), total), splat(2.0)), w), mul(r, r));
        rows([mul(ix, w_a), mul(iy, w_a), spin(w_a, r_a), roll(w_a, r_a)], &mut out.side_a);
        rows([mul(neg(ix), w_b), mul(neg(iy), w_b), spin(w_b, r_b), roll(w_b, r_b)], &mut out.side_b);
        out.near = (!_mm_movemask_ps(far) & 0b1111) as u32;
        out.active = out.near & !(_mm_movemask_ps(parted) as u32);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift) for the lanes' inputs.
    struct Draw(u64);

    impl Draw {
        fn unit(&mut self) -> f32 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 >> 40) as f32 / (1u64 << 24) as f32
        }
        fn range(&mut self, lo: f32, hi: f32) -> f32 {
            lo + (hi - lo) * self.unit()
        }
        fn vec(&mut self, scale: f32) -> Vec2 {
            Vec2::new(self.range(-scale, scale), self.range(-scale, scale))
        }
    }

    /// `pair_lanes` (SSE2 on x86-64) gives every lane bitwise the scalar
    /// law's result (`pair_lane`, the CPU twin's former per-pair code) on
    /// pairs of every kind: far, near but parted, touching, deep, at one
    /// point (coincident centres), massless (k = 0), fast impacts
    /// (restitution), friction clamped either way, mixed sizes and masses,
    /// −0 corrections. A lane off by one operation, or in another order,
    /// fails (the sums of the velocity pass would differ from the GPU's).
    #[test]
    fn pair_lanes_are_bitwise_the_scalar_pair_law() {
        let mut draw = Draw(0x9e37_79b9_7f4a_7c15);
        let m = Material { restitution: 0.5, friction: 0.6, rolling_resistance: 0.002 };
        let (h, resting) = (1.0 / 960.0, 0.05);
        let n = 64;
        let mut ball = Vec::with_capacity(n);
        let (mut x_pred, mut v_pre, mut dx, mut omega, mut count) = (vec![], vec![], vec![], vec![], vec![]);
        for i in 0..n {
            let radius = if i % 3 == 0 { 0.05 } else { draw.range(0.03, 0.08) };
            let inv_mass = match i % 7 {
                0 => 0.0,
                1 => 2.0,
                _ => draw.range(0.5, 4.0),
            };
            // Balls on a 0.3-wide patch: all kinds of distances; a few
            // share a centre.
            let centre = if i % 11 == 5 { Vec2::new(0.1, 0.1) } else { draw.vec(0.15) };
            let correction = if i % 5 == 0 { Vec2::new(-0.0, 0.0) } else { draw.vec(2e-3) };
            x_pred.push(centre);
            dx.push(correction);
            ball.push(SweepBall { at: centre + correction, radius, inv_mass });
            v_pre.push(draw.vec(if i % 4 == 0 { 3.0 } else { 0.2 }));
            omega.push(draw.range(-40.0, 40.0));
            count.push(1 + (i % 6) as u32);
        }
        let p = PairInputs { ball: &ball, x_pred: &x_pred, v_pre: &v_pre, dx: &dx, omega: &omega, count: &count };
        let all: Vec<(usize, usize)> = (0..n).flat_map(|a| (a + 1..n).map(move |b| (a, b))).collect();
        let (mut near, mut active, mut clamped, mut massless) = (0, 0, 0, 0);
        for group in all.chunks(LANES) {
            let (mut a, mut b) = ([group[0].0; LANES], [group[0].1; LANES]);
            for (l, &(i, j)) in group.iter().enumerate() {
                (a[l], b[l]) = (i, j);
            }
            let mut simd = PairLaneImpulses::default();
            pair_lanes(&p, a, b, m, h, resting, &mut simd);
            let mut scalar = PairLaneImpulses::default();
            for l in 0..LANES {
                pair_lane(&p, (a[l], b[l]), m, h, resting, l, &mut scalar);
            }
            assert_eq!(simd.near, scalar.near, "near, pairs {group:?}");
            assert_eq!(simd.active, scalar.active, "active, pairs {group:?}");
            let bits = |x: [f32; 4]| x.map(f32::to_bits);
            for l in 0..LANES {
                if scalar.near & (1 << l) != 0 {
                    near += 1;
                    assert_eq!(simd.overlap[l].to_bits(), scalar.overlap[l].to_bits(), "overlap, pair {a:?}{b:?}[{l}]");
                }
                if scalar.active & (1 << l) != 0 {
                    active += 1;
                    assert_eq!(bits(simd.side_a[l]), bits(scalar.side_a[l]), "side a, pair ({}, {})", a[l], b[l]);
                    assert_eq!(bits(simd.side_b[l]), bits(scalar.side_b[l]), "side b, pair ({}, {})", a[l], b[l]);
                    let k = count[a[l]] as f32 * ball[a[l]].inv_mass + count[b[l]] as f32 * ball[b[l]].inv_mass;
                    let (w, r) = (ball[a[l]].inv_mass, ball[a[l]].radius);
                    if k > 0.0 && w > 0.0 {
                        // The friction at its bound |p_t| = μ total (both
                        // read back from the spin change and rolling limit).
                        let p_t = -scalar.side_a[l][2] * r / (2.0 * w);
                        let total = scalar.side_a[l][3] * r * r / (2.0 * w * m.rolling_resistance);
                        clamped += usize::from(p_t.abs() >= 0.999 * m.friction * total);
                    } else if k <= 0.0 {
                        massless += 1;
                    }
                }
            }
        }
        assert!(
            near > 300 && active > 200 && massless > 2 && clamped > 0,
            "{near} near, {active} active, {massless} massless, {clamped}"
        );
    }
}
