//! Bar: a thin rectangle `length × width` along local x. J/m = (L² + w²)/12
//! (an ideal rod for w = 0).
use glam::DVec2;

pub(super) fn unit_inertia(length: f64, width: f64) -> f64 {
    (length * length + width * width) / 12.0
}
pub(super) fn support(length: f64, width: f64, d: DVec2) -> DVec2 {
    DVec2::new(0.5 * length * sign(d.x), 0.5 * width * sign(d.y))
}
fn sign(x: f64) -> f64 {
    if x >= 0.0 { 1.0 } else { -1.0 }
}
/// Box distance (exact), a segment distance when `width` is 0.
pub(super) fn signed_distance(length: f64, width: f64, p: DVec2) -> f64 {
    let q = p.abs() - DVec2::new(0.5 * length, 0.5 * width);
    q.max(DVec2::ZERO).length() + q.x.max(q.y).min(0.0)
}
pub(super) fn outline(length: f64, width: f64) -> Vec<DVec2> {
    let (hx, hy) = (0.5 * length, 0.5 * width);
    vec![DVec2::new(-hx, -hy), DVec2::new(hx, -hy), DVec2::new(hx, hy), DVec2::new(-hx, hy)]
}
