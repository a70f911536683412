//! User-defined scalar constraint C(q, t) = 0 given as Rust closures of the
//! coordinates of (up to) two bodies and time, with its gradient (seed 003:
//! "exotic constraints like x = cos(y)").
//!
//! γ = d/ds [∇C(q + s v, t + s)·w] at s = 0 is taken by a central difference of
//! the user's gradient along the motion (step 1e-6 of the motion's scale:
//! relative error ~1e-10 for smooth C).

use std::sync::Arc;

/// q of both bodies (x_a, y_a, φ_a, x_b, y_b, φ_b) and time → C.
pub type UserValue = Arc<dyn Fn(&[f64; 6], f64) -> f64 + Send + Sync>;
/// q and time → ∂C/∂(x_a, y_a, φ_a, x_b, y_b, φ_b, t).
pub type UserGradient = Arc<dyn Fn(&[f64; 6], f64) -> [f64; 7] + Send + Sync>;

/// A user constraint's value and gradient closures.
#[derive(Clone)]
pub struct UserConstraint {
    /// C(q, t).
    pub value: UserValue,
    /// ∇C(q, t).
    pub gradient: UserGradient,
}

impl std::fmt::Debug for UserConstraint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("UserConstraint(..)")
    }
}

impl UserConstraint {
    /// (C, ∇C, γ) at (q, v, t).
    pub fn evaluate(&self, q: &[f64; 6], v: &[f64; 6], t: f64) -> (f64, [f64; 7], f64) {
        let c = (self.value)(q, t);
        let g = (self.gradient)(q, t);
        let w = [v[0], v[1], v[2], v[3], v[4], v[5], 1.0];
        let scale = w.iter().fold(0.0f64, |m, x| m.max(x.abs())).max(1e-300);
        let h = 1e-6 / scale;
        let shifted = |s: f64| {
            let mut qs = *q;
            for (qi, vi) in qs.iter_mut().zip(v) {
                *qi += s * vi;
            }
            let gs = (self.gradient)(&qs, t + s);
            gs.iter().zip(&w).map(|(a, b)| a * b).sum::<f64>()
        };
        let gamma = (shifted(h) - shifted(-h)) / (2.0 * h);
        (c, g, gamma)
    }
}
