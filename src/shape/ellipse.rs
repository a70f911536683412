//! Ellipse x²/a² + y²/b² = 1: area π a b, J/m = (a² + b²)/4.
use glam::DVec2;

pub(super) fn area(a: f64, b: f64) -> f64 {
    std::f64::consts::PI * a * b
}
pub(super) fn unit_inertia(a: f64, b: f64) -> f64 {
    0.25 * (a * a + b * b)
}
/// The support point is where the outward normal (x/a², y/b²) is parallel to
/// `d`: p = (a² dx, b² dy)/√(a² dx² + b² dy²).
pub(super) fn support(a: f64, b: f64, d: DVec2) -> DVec2 {
    let d = d.normalize_or(DVec2::X);
    let s = (a * a * d.x * d.x + b * b * d.y * d.y).sqrt();
    DVec2::new(a * a * d.x, b * b * d.y) / s
}
/// Radius of curvature at the support point of unit direction d:
/// ρ = a²b²/(a²dx² + b²dy²)^{3/2} (r for a circle).
pub(super) fn support_radius_of_curvature(a: f64, b: f64, d: DVec2) -> f64 {
    let d = d.normalize_or(DVec2::X);
    let s2 = a * a * d.x * d.x + b * b * d.y * d.y;
    a * a * b * b / (s2 * s2.sqrt())
}
/// Exact Euclidean signed distance: the closest point is found by Newton on
/// the parametric angle (Eberly's formulation, started from the two
/// quadrant-safe guesses and polished by the generic parametric search).
pub(super) fn signed_distance(a: f64, b: f64, p: DVec2) -> f64 {
    if a == b {
        return p.length() - a;
    }
    let curve = |t: f64| DVec2::new(a * t.cos(), b * t.sin());
    let (_, c) = super::closest_on_parametric(curve, p);
    let d = (p - c).length();
    if (p.x / a).powi(2) + (p.y / b).powi(2) < 1.0 { -d } else { d }
}
pub(super) fn outline(a: f64, b: f64, n: usize) -> Vec<DVec2> {
    (0..n)
        .map(|i| {
            let t = std::f64::consts::TAU * i as f64 / n as f64;
            DVec2::new(a * t.cos(), b * t.sin())
        })
        .collect()
}
