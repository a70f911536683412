//! Disc: area π r², J/m = r²/2.
use glam::DVec2;

pub(super) fn area(r: f64) -> f64 {
    std::f64::consts::PI * r * r
}
pub(super) fn unit_inertia(r: f64) -> f64 {
    0.5 * r * r
}
pub(super) fn support(r: f64, d: DVec2) -> DVec2 {
    d.normalize_or(DVec2::X) * r
}
pub(super) fn signed_distance(r: f64, p: DVec2) -> f64 {
    p.length() - r
}
