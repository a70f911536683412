//! Revolute joint (pin): a point of body a coincides with a point of body b, or
//! with a fixed world point. Two rows: C = x_a + R_a r_a − x_b − R_b r_b.

use glam::DVec2;

use super::jet::JetPose;
use super::{Row, RowBlock, RowList};

/// The pin's two position rows.
pub fn rows(anchor_a: DVec2, anchor_b: DVec2, a: &JetPose, b: &JetPose, out: &mut RowList) {
    let c = a.point(anchor_a) - b.point(anchor_b);
    out.push(Row::Position(c.x));
    out.push(Row::Position(c.y));
}

/// The pin's rows written out by hand — the hot path of chains and ragdolls.
/// With r = R r_local: J_a = [I | r_a⊥], J_b = −[I | r_b⊥] (r⊥ = (−r_y, r_x)),
/// and γ = −r_a ω_a² + r_b ω_b² (the centripetal terms of C̈).
pub fn block(
    anchor_a: DVec2,
    anchor_b: DVec2,
    (qa, va): ([f64; 3], [f64; 3]),
    b: Option<([f64; 3], [f64; 3])>,
) -> RowBlock {
    let mut out = RowBlock::default();
    write_block(
        anchor_a,
        anchor_b,
        (DVec2::from_angle(qa[2]), qa, va),
        b.map(|(qb, vb)| (DVec2::from_angle(qb[2]), qb, vb)),
        &mut out,
    );
    out
}

/// [`block`] with each body's rotation (cos φ, sin φ) given — the assembly
/// computes it once per body instead of once per joint end (a body of a
/// ladder or a chain carries two to four pins) — written in place.
pub fn write_block(
    anchor_a: DVec2,
    anchor_b: DVec2,
    a: (DVec2, [f64; 3], [f64; 3]),
    b: Option<(DVec2, [f64; 3], [f64; 3])>,
    out: &mut RowBlock,
) {
    // the entries that are the same at every state; `write_varying` writes
    // the others (zeros here, overwritten before anyone reads them)
    out.rows = 2;
    out.jac[0] = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0; 3]];
    out.jac[1] = if b.is_some() { [[-1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0; 3]] } else { [[0.0; 3]; 3] };
    out.value = [0.0; 3];
    out.holonomic = [true, true, false];
    out.velocity_bias = [0.0; 3];
    out.gamma = [0.0; 3];
    write_varying(anchor_a, anchor_b, a, b, out);
}

/// The angular column of a pin's J: (−r_a,y, r_a,x) for body a and, with a
/// body b, (r_b,y, −r_b,x) — every other entry of J_a = [I | r_a⊥] and
/// J_b = −[I | r_b⊥] is a constant.
pub type AngularColumns = ([f64; 2], Option<[f64; 2]>);

/// The entries of [`write_block`]'s rows that depend on the state: the
/// angular column of J, C and γ (the same expressions, so the same bits).
/// Every other entry of `out` must already be [`write_block`]'s for this
/// pin (its constants: unit and zero columns, padding row, flags, zero
/// velocity bias). Returns the angular columns written, for the caller
/// that keeps J elsewhere (issue 10: a pins-only assembly of a small
/// linkage writes 8 of a row block's 29 values and 4 of J's 18).
#[inline(always)]
pub fn write_varying(
    anchor_a: DVec2,
    anchor_b: DVec2,
    (rot_a, qa, va): (DVec2, [f64; 3], [f64; 3]),
    b: Option<(DVec2, [f64; 3], [f64; 3])>,
    out: &mut RowBlock,
) -> AngularColumns {
    let ra = rot_a.rotate(anchor_a);
    let pa = DVec2::new(qa[0], qa[1]) + ra;
    let (rb, pb, wb) = match b {
        Some((rot_b, qb, vb)) => {
            let rb = rot_b.rotate(anchor_b);
            (rb, DVec2::new(qb[0], qb[1]) + rb, vb[2])
        }
        None => (DVec2::ZERO, anchor_b, 0.0),
    };
    let c = pa - pb;
    let gamma = centripetal(ra, va[2], rb, wb);
    let col_a = [-ra.y, ra.x];
    out.jac[0][0][2] = col_a[0];
    out.jac[0][1][2] = col_a[1];
    let col_b = b.map(|_| {
        let col_b = [rb.y, -rb.x];
        out.jac[1][0][2] = col_b[0];
        out.jac[1][1][2] = col_b[1];
        col_b
    });
    out.value[0] = c.x;
    out.value[1] = c.y;
    out.gamma[0] = gamma.x;
    out.gamma[1] = gamma.y;
    (col_a, col_b)
}

/// γ = −r_a ω_a² + r_b ω_b² of a pin whose anchors are at r_a and r_b
/// (world-frame offsets from the centres of mass; r_b zero for a world pin).
#[inline(always)]
fn centripetal(ra: DVec2, wa: f64, rb: DVec2, wb: f64) -> DVec2 {
    -ra * (wa * wa) + rb * (wb * wb)
}

/// The velocity-dependent part of [`write_block`]'s rows (γ; a pin's
/// velocity bias is zero) at the positions `out` was written at, with the
/// angular velocities `wa` and `wb` (`None`: a world pin): bitwise the γ
/// [`write_block`] writes there, for an assembly at unchanged positions.
pub fn write_gamma(
    anchor_a: DVec2,
    anchor_b: DVec2,
    (rot_a, wa): (DVec2, f64),
    b: Option<(DVec2, f64)>,
    out: &mut RowBlock,
) {
    let ra = rot_a.rotate(anchor_a);
    let (rb, wb) = match b {
        Some((rot_b, wb)) => (rot_b.rotate(anchor_b), wb),
        None => (DVec2::ZERO, 0.0),
    };
    let gamma = centripetal(ra, wa, rb, wb);
    out.gamma = [gamma.x, gamma.y, 0.0];
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::body::{Body, BodyHandle};
    use crate::constraint::{Constraint, ConstraintKind};
    use crate::shape::Shape;

    /// The hand-written rows equal the automatically differentiated ones
    /// (to rounding) for a body pair and for a pin to the world.
    #[test]
    fn hand_written_rows_match_automatic_differentiation() {
        let bodies = vec![Body::builder("a", Shape::Circle { radius: 1.0 }).build().expect("body"); 2];
        let state_a = ([0.3, -1.2, 0.7], [1.5, -0.4, 2.2]);
        let state_b = ([1.1, 0.4, -2.0], [-0.3, 0.9, -1.7]);
        for b in [Some(BodyHandle(1)), None] {
            let c = Constraint {
                name: "pin".into(),
                body_a: BodyHandle(0),
                body_b: b,
                kind: ConstraintKind::Revolute { anchor_a: DVec2::new(0.4, -0.2), anchor_b: DVec2::new(-0.5, 0.3) },
            };
            let sb = b.map(|_| state_b);
            let fast = c.evaluate(0.5, state_a, sb, &bodies, &[]);
            let slow = c.evaluate_with_jets(0.5, state_a, sb, &bodies, &[]);
            assert_eq!(fast.rows, slow.rows);
            for r in 0..2 {
                assert!((fast.value[r] - slow.value[r]).abs() < 1e-14);
                assert!((fast.gamma[r] - slow.gamma[r]).abs() < 1e-13, "{} {}", fast.gamma[r], slow.gamma[r]);
                assert!((fast.velocity_bias[r] - slow.velocity_bias[r]).abs() < 1e-15);
                for slot in 0..2 {
                    for k in 0..3 {
                        assert!((fast.jac[slot][r][k] - slow.jac[slot][r][k]).abs() < 1e-14);
                    }
                }
            }
        }
    }
}
