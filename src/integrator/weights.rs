//! The weights of the implicit and adaptive integrators: what an error of a
//! state's component is measured against — in the error norm of the step
//! control (dopri5, sdirk3), the Newton tolerances (sdirk3, the implicit
//! midpoint rule) and the steps of the finite-difference Jacobians.
//!
//! Each component is weighed by tol × max(|y₀|, |y₁|, the size of its kind),
//! the kinds being translation and angle of the positions, speed and angular
//! speed of the velocities. The sizes are ∞-norms over the bodies, so each
//! carries its own unit and the weighed error has none: a scene in
//! millimetres, or in milliseconds, takes the steps the one in metres and
//! seconds takes (`tests/units_invariance.rs` checks it bit for bit at powers
//! of two). Every floor and fallback is therefore made of the state and of
//! the scene's own units ([`KindUnits`]), never of a constant in m, m/s or
//! rad/s:
//!
//! * angles: at least 1 rad (a unit-free size);
//! * angular speeds: at least the speeds' size over the translations' size,
//!   the turn rate at which a point as far out as the bodies moves as fast as
//!   the fastest body — the rate that makes an angular error count as the
//!   translation error it makes there, as the angle's 1 rad counts as a
//!   translation of its own size (until 7 Dec 2026: 1 rad/s, which made the
//!   steps depend on the time unit);
//! * translations, when every body sits at the origin: the scene's length
//!   (the smallest dynamic body's bounding radius, the projection's length);
//! * speeds, when no body translates: the angular speeds' size times the
//!   translations' size, and when nothing moves at all (the start from
//!   rest) the length the scene's length crosses in a step, length / h —
//!   the speed whose error moves a position by its tolerance within the
//!   step, as RADAU5 weighs its higher-index components by h (until 7 Dec
//!   2026: 1 m/s).

/// The scene's own units for the sizes a state does not give
/// (module doc): a length of the scene and the speed of a step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KindUnits {
    /// The size of the translations when every body sits at the origin.
    pub length: f64,
    /// The size of the speeds when nothing moves: `length` / h.
    pub rest_speed: f64,
}

impl Default for KindUnits {
    /// A length of 1 crossed in a step of 1, for systems without a scene.
    fn default() -> Self {
        Self { length: 1.0, rest_speed: 1.0 }
    }
}

impl KindUnits {
    /// The units of a scene of length `length` stepped at `h`; a length or
    /// step that is not a positive finite number falls back to 1 (a world
    /// built without a scene, or a bad h that the integrator refuses anyway).
    pub fn new(length: f64, h: f64) -> Self {
        let length = if length.is_finite() && length > 0.0 { length } else { 1.0 };
        let rest_speed = length / h;
        Self { length, rest_speed: if rest_speed.is_finite() && rest_speed > 0.0 { rest_speed } else { length } }
    }
}

/// ∞-norms of a flat state's (x, y, φ per body) translational and angular
/// components, each 0 without bodies.
fn norms(x: &[f64]) -> (f64, f64) {
    let mut t = 0.0f64;
    let mut r = 0.0f64;
    for (i, v) in x.iter().enumerate() {
        if i % 3 == 2 {
            r = r.max(v.abs());
        } else {
            t = t.max(v.abs());
        }
    }
    (t, r)
}

/// Sizes of the position kinds [translation, translation, angle] of `q`
/// (module doc: the scene's length where every body is at the origin, at
/// least 1 rad for angles).
pub(crate) fn position_kinds(q: &[f64], units: KindUnits) -> [f64; 3] {
    let (t, r) = norms(q);
    let t = if t > 0.0 { t } else { units.length };
    [t, t, r.max(1.0)]
}

/// Sizes of the velocity kinds [speed, speed, angular speed] of `v`, with
/// `translation` the size of the positions' translations (module doc).
pub(crate) fn velocity_kinds(v: &[f64], translation: f64, units: KindUnits) -> [f64; 3] {
    velocity_kinds_of(norms(v), translation, units)
}

/// [`velocity_kinds`] of the norms (speeds, angular speeds).
fn velocity_kinds_of((t, r): (f64, f64), translation: f64, units: KindUnits) -> [f64; 3] {
    let speed = if t > 0.0 {
        t
    } else if r > 0.0 {
        r * translation
    } else {
        units.rest_speed
    };
    [speed, speed, r.max(speed / translation)]
}

/// The weights of the positions and velocities between the states
/// (`q[0]`, `v[0]`) and (`q[1]`, `v[1]`): tol × max(|y₀|, |y₁|, the size of
/// its kind over both states), written into `out_q` and `out_v`. The
/// fallbacks apply where both states lack a size (a step from rest has the
/// speeds of its end).
pub(crate) fn error_scales(
    q: [&[f64]; 2],
    v: [&[f64]; 2],
    units: KindUnits,
    tol: f64,
    out_q: &mut Vec<f64>,
    out_v: &mut Vec<f64>,
) {
    let larger = |a: (f64, f64), b: (f64, f64)| (a.0.max(b.0), a.1.max(b.1));
    let (t, r) = larger(norms(q[0]), norms(q[1]));
    let translation = if t > 0.0 { t } else { units.length };
    let kq = [translation, translation, r.max(1.0)];
    let kv = velocity_kinds_of(larger(norms(v[0]), norms(v[1])), translation, units);
    for (out, [y0, y1], kind) in [(out_q, q, kq), (out_v, v, kv)] {
        out.clear();
        out.extend(y0.iter().zip(y1).enumerate().map(|(i, (a, b))| tol * a.abs().max(b.abs()).max(kind[i % 3])));
    }
}

/// RMS of e/sc over q and v.
pub(crate) fn error_norm(eq: &[f64], ev: &[f64], scq: &[f64], scv: &[f64]) -> f64 {
    let n = eq.len() + ev.len();
    let s: f64 = eq.iter().zip(scq).chain(ev.iter().zip(scv)).map(|(e, s)| (e / s).powi(2)).sum();
    (s / n.max(1) as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kinds scale with their units, the fallbacks included: lengths ×
    /// 2⁵ and times × 2⁻³ scale the translations by 2⁵, the speeds by 2⁸ and
    /// the angular speeds by 2³, bit for bit; angles do not change.
    #[test]
    fn kinds_scale_with_their_units() {
        let (l, tau) = (32.0, 0.125);
        let cases: [(&[f64], &[f64]); 4] = [
            (&[0.3, -1.7, 0.2, 2.5, 0.1, -4.0], &[0.5, 0.25, -0.75, -1.5, 3.0, 0.5]),
            // every body at the origin, turning
            (&[0.0, 0.0, 0.2, 0.0, 0.0, -0.1], &[0.0, 0.0, 3.0, 0.0, 0.0, -0.5]),
            // turning only
            (&[0.3, -1.7, 0.2, 2.5, 0.1, -4.0], &[0.0, 0.0, 3.0, 0.0, 0.0, -0.5]),
            // at rest
            (&[0.3, -1.7, 0.2, 2.5, 0.1, -4.0], &[0.0; 6]),
        ];
        let (length, h) = (0.05, 1e-3);
        for (q, v) in cases {
            let scaled = |x: &[f64], s: [f64; 2]| -> Vec<f64> {
                x.iter().enumerate().map(|(i, x)| x * if i % 3 == 2 { s[1] } else { s[0] }).collect()
            };
            let (q1, v1) = (scaled(q, [l, 1.0]), scaled(v, [l / tau, 1.0 / tau]));
            let (u0, u1) = (KindUnits::new(length, h), KindUnits::new(length * l, h * tau));
            let (p0, p1) = (position_kinds(q, u0), position_kinds(&q1, u1));
            assert_eq!(p1, [p0[0] * l, p0[1] * l, p0[2]], "positions {q:?}");
            let (w0, w1) = (velocity_kinds(v, p0[0], u0), velocity_kinds(&v1, p1[0], u1));
            assert_eq!(w1, [w0[0] * l / tau, w0[1] * l / tau, w0[2] / tau], "velocities {v:?}");
            assert!(w0.iter().chain(&p0).all(|&k| k > 0.0 && k.is_finite()), "{p0:?} {w0:?}");
        }
        // the fallbacks as stated: the scene's length, length / h, the turn rate
        let u = KindUnits::new(0.05, 1e-3);
        assert_eq!(position_kinds(&[0.0, 0.0, 0.0], u), [0.05, 0.05, 1.0]);
        assert_eq!(velocity_kinds(&[0.0, 0.0, 0.0], 2.0, u), [50.0, 50.0, 25.0]);
        assert_eq!(velocity_kinds(&[0.0, 0.0, 3.0], 2.0, u), [6.0, 6.0, 3.0]);
        assert_eq!(velocity_kinds(&[4.0, 0.0, 0.5], 2.0, u), [4.0, 4.0, 2.0]);
        // no scene: 1 and 1 (and a step that is not positive finite: the length)
        assert_eq!(KindUnits::new(0.0, 1e-3), KindUnits { length: 1.0, rest_speed: 1e3 });
        assert_eq!(KindUnits::new(2.0, 0.0), KindUnits { length: 2.0, rest_speed: 2.0 });
    }

    /// The weights are tol × max(|y₀|, |y₁|, kind), the kinds the larger of
    /// both states', the fallbacks only where both lack a size.
    #[test]
    fn error_scales_take_the_larger_state() {
        let (mut sq, mut sv) = (Vec::new(), Vec::new());
        let q0 = [1.0, 0.0, 0.5];
        let q1 = [2.0, 0.0, 3.0];
        let v0 = [0.0, 0.0, 0.0];
        let v1 = [0.5, -1.0, 0.25];
        error_scales([&q0, &q1], [&v0, &v1], KindUnits::new(0.1, 0.01), 1e-3, &mut sq, &mut sv);
        assert_eq!(sq, [2e-3, 2e-3, 1e-3 * 3.0]);
        // speeds: 1 (v₁'s, not the rest fallback of v₀); angular: max(0.25, 1/2)
        assert_eq!(sv, [1e-3, 1e-3, 5e-4]);
        // both at rest: length / h and that over the translations' size, 2
        error_scales([&q0, &q1], [&v0, &v0], KindUnits::new(0.1, 0.01), 1e-3, &mut sq, &mut sv);
        let rest = 0.1 / 0.01;
        assert_eq!(sv, [1e-3 * rest, 1e-3 * rest, 1e-3 * (rest / 2.0)]);
    }
}
