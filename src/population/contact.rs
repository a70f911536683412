//! The contact law shared by the CPU twin and `shaders/population.wgsl`
//! (keep the two in step, formula for formula).
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

/// Extra separation a new impact is given (see the module doc): `gap0` the
/// gap at the start of the substep (> 0 for a new impact), `vn_pre` the
/// pre-solve normal velocity (< 0 approaching), `h` the substep.
#[inline]
pub fn rebound_distance(gap0: f32, vn_pre: f32, h: f32, restitution: f32, resting_speed: f32) -> f32 {
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
