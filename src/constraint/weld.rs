//! Weld: two bodies (or a body and the world) rigidly joined at a point with a
//! fixed relative angle. Three rows: the pin's two and φ_a − φ_b − θ₀.

use glam::DVec2;

use super::jet::JetPose;
use super::{Row, RowList};

/// The weld's three position rows.
pub fn rows(anchor_a: DVec2, anchor_b: DVec2, angle: f64, a: &JetPose, b: &JetPose, out: &mut RowList) {
    super::revolute::rows(anchor_a, anchor_b, a, b, out);
    out.push(Row::Position(a.angle - b.angle - angle));
}
