//! Distance constraint (a rigid massless bar between two body points, or a
//! body point and a world point): C = |p_a − p_b| − L.

use glam::DVec2;

use super::jet::JetPose;
use super::{Row, RowList};

/// The bar's single position row.
pub fn rows(anchor_a: DVec2, anchor_b: DVec2, length: f64, a: &JetPose, b: &JetPose, out: &mut RowList) {
    let d = a.point(anchor_a) - b.point(anchor_b);
    out.push(Row::Position(d.length() - length));
}
