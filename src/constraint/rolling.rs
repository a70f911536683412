//! Rolling without slipping (seed 000's wheel, seed 001's ellipses) and sliding
//! contact of a smooth convex body on a static curve.
//!
//! Row 1 (holonomic): the signed gap between the outline and the curve is 0.
//! Row 2 (no slip, velocity level): the body's material point at the contact
//! has no tangential velocity, τ·(v + ω × r_c) = 0 — written as a velocity row
//! A(q)·v = 0 whose acceleration term γ = Ȧ v comes from the jets. A sliding
//! contact keeps row 1 only.

use super::curve::{Toucher, contact};
use super::jet::{Jet, JetPose};
use super::{Row, RowList};
use crate::shape::Shape;
use crate::surface::SurfaceGeometry;

/// Rows of a body touching `surface` at its outline or at a body point.
pub fn rows(shape: &Shape, surface: &SurfaceGeometry, toucher: Toucher, sliding: bool, a: &JetPose, out: &mut RowList) {
    let c = contact(shape, surface, toucher, a);
    out.push(Row::Position(c.gap));
    if !sliding {
        let zero = Jet::constant(0.0);
        out.push(Row::Velocity {
            coeffs: [c.tangent.x, c.tangent.y, c.arm.cross(c.tangent), zero, zero, zero],
            bias: zero,
        });
    }
}
