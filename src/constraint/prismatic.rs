//! Prismatic joint (slider): body a slides along an axis fixed in body b (or
//! in the world) without turning relative to it. Rows: the offset of a's
//! anchor from b's axis line, C₁ = (p_a − p_b)·(R_b n̂), and the relative angle,
//! C₂ = φ_a − φ_b − θ₀.

use glam::DVec2;

use super::jet::JetPose;
use super::{Row, RowList};

/// The slider's two position rows.
pub fn rows(anchor_a: DVec2, anchor_b: DVec2, axis: DVec2, angle: f64, a: &JetPose, b: &JetPose, out: &mut RowList) {
    let normal = b.rotate(axis.normalize_or(DVec2::X).perp());
    out.push(Row::Position((a.point(anchor_a) - b.point(anchor_b)).dot(normal)));
    out.push(Row::Position(a.angle - b.angle - angle));
}
