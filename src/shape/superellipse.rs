//! Superellipse |x/a|ⁿ + |y/b|ⁿ = 1 (n > 1).
//!
//! Mass properties by the Dirichlet integral
//! ∫∫_{xⁿ+yⁿ≤1, x,y≥0} xᵖ yᵠ dx dy = Γ(α)Γ(β) / (n² Γ(α+β+1)), α = (p+1)/n, β = (q+1)/n:
//! area = 4ab·Γ(1/n)²/(n² Γ(2/n+1)), ∫∫x² = 4a³b·Γ(3/n)Γ(1/n)/(n² Γ(4/n+1)).
use glam::DVec2;

use crate::math::gamma;

fn dirichlet(n: f64, p: f64, q: f64) -> f64 {
    let (al, be) = ((p + 1.0) / n, (q + 1.0) / n);
    gamma(al) * gamma(be) / (n * n * gamma(al + be + 1.0))
}

pub(super) fn area(a: f64, b: f64, n: f64) -> f64 {
    4.0 * a * b * dirichlet(n, 0.0, 0.0)
}
pub(super) fn unit_inertia(a: f64, b: f64, n: f64) -> f64 {
    let ixx = 4.0 * a * a * a * b * dirichlet(n, 2.0, 0.0);
    let iyy = 4.0 * a * b * b * b * dirichlet(n, 0.0, 2.0);
    (ixx + iyy) / area(a, b, n)
}
/// Support point by Hölder's inequality: with u = a·dx, w = b·dy and
/// m = n/(n−1), X = sgn(u)|u|^{1/(n−1)} / (|u|^m + |w|^m)^{1/n}, likewise Y.
/// |u|^m = |u|·|u|^{1/(n−1)} saves two powers, and the common exponents
/// (n = 2, 3, 4) take roots instead of `powf` — the narrowphase calls this
/// in its Newton loop, where `powf` was the largest cost of a pile.
pub(super) fn support(a: f64, b: f64, n: f64, d: DVec2) -> DVec2 {
    let d = d.normalize_or(DVec2::X);
    let (u, w) = (a * d.x, b * d.y);
    let (pu, pw) = (pow_inverse_n_minus_1(u.abs(), n), pow_inverse_n_minus_1(w.abs(), n));
    let norm = pow_inverse_n(u.abs() * pu + w.abs() * pw, n);
    DVec2::new(a * u.signum() * pu / norm, b * w.signum() * pw / norm)
}
/// x^{1/(n−1)}, x ≥ 0.
fn pow_inverse_n_minus_1(x: f64, n: f64) -> f64 {
    match n {
        2.0 => x,
        3.0 => x.sqrt(),
        4.0 => x.cbrt(),
        _ => x.powf(1.0 / (n - 1.0)),
    }
}
/// x^{1/n}, x ≥ 0.
fn pow_inverse_n(x: f64, n: f64) -> f64 {
    match n {
        2.0 => x.sqrt(),
        3.0 => x.cbrt(),
        4.0 => x.sqrt().sqrt(),
        _ => x.powf(1.0 / n),
    }
}
/// x^k for x ≥ 0, by repeated products when k is a small whole number.
fn pow_whole(x: f64, k: f64) -> f64 {
    if k.fract() == 0.0 && (0.0..=16.0).contains(&k) { x.powi(k as i32) } else { x.powf(k) }
}
/// Radius of curvature at the outline point `p`, from the implicit form
/// F = |x/a|ⁿ + |y/b|ⁿ: κ = (F_xx F_y² + F_yy F_x²)/|∇F|³ (F_xy = 0), ρ = 1/κ.
/// On the axes κ = 0 for n > 2 (ρ = ∞, flat points) and κ = ∞ for n < 2
/// (ρ = 0, pointed tips).
pub(super) fn radius_of_curvature_at(a: f64, b: f64, n: f64, p: DVec2) -> f64 {
    let (x, y) = ((p.x / a).abs(), (p.y / b).abs());
    let (fx, fy) = (n / a * pow_whole(x, n - 1.0), n / b * pow_whole(y, n - 1.0));
    let (fxx, fyy) = (n * (n - 1.0) / (a * a) * pow_whole(x, n - 2.0), n * (n - 1.0) / (b * b) * pow_whole(y, n - 2.0));
    let g2 = fx * fx + fy * fy;
    // 0·∞ (n < 2 on an axis) is an infinite curvature: the term that is infinite wins.
    let term = |f2: f64, s: f64| if s.is_infinite() && f2 > 0.0 { f64::INFINITY } else { s * f2 };
    let kappa = (term(fy * fy, fxx) + term(fx * fx, fyy)) / (g2 * g2.sqrt());
    1.0 / kappa
}
/// Parametrisation x = a·sgn(cos t)|cos t|^{2/n}, y = b·sgn(sin t)|sin t|^{2/n}.
pub(super) fn point(a: f64, b: f64, n: f64, t: f64) -> DVec2 {
    let (s, c) = t.sin_cos();
    DVec2::new(a * c.signum() * c.abs().powf(2.0 / n), b * s.signum() * s.abs().powf(2.0 / n))
}
pub(super) fn signed_distance(a: f64, b: f64, n: f64, p: DVec2) -> f64 {
    let (_, c) = super::closest_on_parametric(|t| point(a, b, n, t), p);
    let d = (p - c).length();
    if (p.x / a).abs().powf(n) + (p.y / b).abs().powf(n) < 1.0 { -d } else { d }
}
pub(super) fn outline(a: f64, b: f64, n: f64, segments: usize) -> Vec<DVec2> {
    (0..segments).map(|i| point(a, b, n, std::f64::consts::TAU * i as f64 / segments as f64)).collect()
}
