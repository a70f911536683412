//! Revolute joint (pin): a point of body a coincides with a point of body b, or
//! with a fixed world point. Two rows: C = x_a + R_a r_a − x_b − R_b r_b.

use glam::DVec2;

use super::Row;
use super::jet::JetPose;

/// The pin's two position rows.
pub fn rows(anchor_a: DVec2, anchor_b: DVec2, a: &JetPose, b: &JetPose, out: &mut Vec<Row>) {
    let c = a.point(anchor_a) - b.point(anchor_b);
    out.push(Row::Position(c.x));
    out.push(Row::Position(c.y));
}
