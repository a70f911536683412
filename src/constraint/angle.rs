//! Angular couplings: a fixed relative angle, φ_a − φ_b = θ₀, and a gear,
//! φ_a + k·φ_b = c (k the ratio: k = 1 meshes two equal gears turning in
//! opposite senses).

use super::jet::JetPose;
use super::{Row, RowList};

/// Fixed relative angle: one row.
pub fn fixed_rows(angle: f64, a: &JetPose, b: &JetPose, out: &mut RowList) {
    out.push(Row::Position(a.angle - b.angle - angle));
}

/// Gear: one row.
pub fn gear_rows(ratio: f64, offset: f64, a: &JetPose, b: &JetPose, out: &mut RowList) {
    out.push(Row::Position(a.angle + b.angle * ratio - offset));
}
