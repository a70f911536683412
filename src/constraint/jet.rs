//! Automatic differentiation for constraint rows.
//!
//! A constraint is written once, as a formula C(q_a, q_b, t) in [`Jet`]
//! arithmetic; evaluating it yields everything the solver needs (seed 003
//! §III–IV):
//! - `val`: C itself (position drift, Baumgarte, projection);
//! - `grad`: ∂C/∂(x_a, y_a, φ_a, x_b, y_b, φ_b, t) — the Jacobian blocks and ∂C/∂t;
//! - `dd`: the second derivative of C along the motion w = (v_a, v_b, 1) with the
//!   accelerations set to zero: vᵀ ∇²C v + 2 ∂ₜ∇C·v + ∂ₜₜC, the "velocity
//!   product" term γ of C̈ = J a + γ.
//!
//! `d` is the first derivative along w (Ċ = J v + Cₜ); it is needed to
//! propagate `dd` through products and functions.

use std::ops::{Add, Div, Mul, Neg, Sub};

/// Number of independent variables: 3 coordinates of each of two bodies, and time.
pub const VARS: usize = 7;

/// A value with its gradient and its first and second derivatives along the
/// motion direction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Jet {
    /// Value.
    pub val: f64,
    /// Gradient with respect to (x_a, y_a, φ_a, x_b, y_b, φ_b, t).
    pub grad: [f64; VARS],
    /// First derivative along the motion.
    pub d: f64,
    /// Second derivative along the motion (accelerations zero).
    pub dd: f64,
}

impl Jet {
    /// A constant.
    pub const fn constant(val: f64) -> Jet {
        Jet { val, grad: [0.0; VARS], d: 0.0, dd: 0.0 }
    }

    /// Independent variable number `index` with value `val` and rate `rate`
    /// (its component of the motion direction).
    pub fn variable(val: f64, index: usize, rate: f64) -> Jet {
        let mut grad = [0.0; VARS];
        grad[index] = 1.0;
        Jet { val, grad, d: rate, dd: 0.0 }
    }

    /// f(self) given f, f′ and f″ at `self.val` (the chain rule to second order).
    #[inline]
    fn chain(self, f: f64, f1: f64, f2: f64) -> Jet {
        let mut grad = self.grad;
        for g in &mut grad {
            *g *= f1;
        }
        Jet { val: f, grad, d: f1 * self.d, dd: f1 * self.dd + f2 * self.d * self.d }
    }

    /// Sine.
    pub fn sin(self) -> Jet {
        let (s, c) = self.val.sin_cos();
        self.chain(s, c, -s)
    }
    /// Cosine.
    pub fn cos(self) -> Jet {
        let (s, c) = self.val.sin_cos();
        self.chain(c, -s, -c)
    }
    /// Square root (of a positive value).
    pub fn sqrt(self) -> Jet {
        let r = self.val.sqrt();
        self.chain(r, 0.5 / r, -0.25 / (r * self.val))
    }
    /// |x|ᵖ for a constant exponent p (smooth away from 0 when p > 2).
    pub fn abs_powf(self, p: f64) -> Jet {
        let a = self.val.abs();
        if a == 0.0 {
            return self.chain(0.0, 0.0, if p == 2.0 { 2.0 } else { 0.0 });
        }
        let f = a.powf(p);
        let s = self.val.signum();
        self.chain(f, p * f / a * s, p * (p - 1.0) * f / (a * a))
    }
    /// Square.
    pub fn sq(self) -> Jet {
        self * self
    }
    /// The reciprocal 1/x.
    pub fn recip(self) -> Jet {
        let r = 1.0 / self.val;
        self.chain(r, -r * r, 2.0 * r * r * r)
    }
}

impl From<f64> for Jet {
    fn from(v: f64) -> Jet {
        Jet::constant(v)
    }
}

impl Add for Jet {
    type Output = Jet;
    #[inline]
    fn add(mut self, o: Jet) -> Jet {
        for (g, h) in self.grad.iter_mut().zip(o.grad) {
            *g += h;
        }
        Jet { val: self.val + o.val, grad: self.grad, d: self.d + o.d, dd: self.dd + o.dd }
    }
}
impl Sub for Jet {
    type Output = Jet;
    #[inline]
    fn sub(self, o: Jet) -> Jet {
        self + (-o)
    }
}
impl Neg for Jet {
    type Output = Jet;
    #[inline]
    fn neg(mut self) -> Jet {
        for g in &mut self.grad {
            *g = -*g;
        }
        Jet { val: -self.val, grad: self.grad, d: -self.d, dd: -self.dd }
    }
}
impl Mul for Jet {
    type Output = Jet;
    #[inline]
    fn mul(self, o: Jet) -> Jet {
        let mut grad = [0.0; VARS];
        for (i, g) in grad.iter_mut().enumerate() {
            *g = self.val * o.grad[i] + o.val * self.grad[i];
        }
        Jet {
            val: self.val * o.val,
            grad,
            d: self.val * o.d + self.d * o.val,
            dd: self.val * o.dd + 2.0 * self.d * o.d + self.dd * o.val,
        }
    }
}
impl Div for Jet {
    type Output = Jet;
    #[inline]
    #[allow(clippy::suspicious_arithmetic_impl)] // a / b = a · (1/b): the chain rule lives in recip
    fn div(self, o: Jet) -> Jet {
        self * o.recip()
    }
}
impl Add<f64> for Jet {
    type Output = Jet;
    fn add(mut self, o: f64) -> Jet {
        self.val += o;
        self
    }
}
impl Sub<f64> for Jet {
    type Output = Jet;
    fn sub(mut self, o: f64) -> Jet {
        self.val -= o;
        self
    }
}
impl Mul<f64> for Jet {
    type Output = Jet;
    fn mul(mut self, o: f64) -> Jet {
        for g in &mut self.grad {
            *g *= o;
        }
        Jet { val: self.val * o, grad: self.grad, d: self.d * o, dd: self.dd * o }
    }
}
impl Div<f64> for Jet {
    type Output = Jet;
    fn div(self, o: f64) -> Jet {
        self * (1.0 / o)
    }
}

/// A 2D vector of jets.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JetVec2 {
    /// x component.
    pub x: Jet,
    /// y component.
    pub y: Jet,
}

impl JetVec2 {
    /// From components.
    pub fn new(x: Jet, y: Jet) -> Self {
        Self { x, y }
    }
    /// A constant vector.
    pub fn constant(v: glam::DVec2) -> Self {
        Self { x: Jet::constant(v.x), y: Jet::constant(v.y) }
    }
    /// Dot product.
    pub fn dot(self, o: JetVec2) -> Jet {
        self.x * o.x + self.y * o.y
    }
    /// z of the cross product: self.x·o.y − self.y·o.x.
    pub fn cross(self, o: JetVec2) -> Jet {
        self.x * o.y - self.y * o.x
    }
    /// Rotated by +90°: (−y, x).
    pub fn perp(self) -> JetVec2 {
        JetVec2 { x: -self.y, y: self.x }
    }
    /// Euclidean length.
    pub fn length(self) -> Jet {
        self.dot(self).sqrt()
    }
    /// Scaled by a jet.
    pub fn scale(self, s: Jet) -> JetVec2 {
        JetVec2 { x: self.x * s, y: self.y * s }
    }
    /// The plain values.
    pub fn value(self) -> glam::DVec2 {
        glam::DVec2::new(self.x.val, self.y.val)
    }
}

impl Add for JetVec2 {
    type Output = JetVec2;
    fn add(self, o: JetVec2) -> JetVec2 {
        JetVec2 { x: self.x + o.x, y: self.y + o.y }
    }
}
impl Sub for JetVec2 {
    type Output = JetVec2;
    fn sub(self, o: JetVec2) -> JetVec2 {
        JetVec2 { x: self.x - o.x, y: self.y - o.y }
    }
}

/// A body's pose as jets: position and angle.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JetPose {
    /// Centre of mass.
    pub position: JetVec2,
    /// Angle.
    pub angle: Jet,
    /// cos φ, sin φ (cached).
    cos: Jet,
    sin: Jet,
}

impl JetPose {
    /// The pose of body slot `slot` (0 or 1) from its q and v, or a constant
    /// pose (the world) when `state` is `None`.
    pub fn new(slot: usize, state: Option<([f64; 3], [f64; 3])>) -> Self {
        let [x, y, phi] = match state {
            Some((q, v)) => {
                let k = 3 * slot;
                [Jet::variable(q[0], k, v[0]), Jet::variable(q[1], k + 1, v[1]), Jet::variable(q[2], k + 2, v[2])]
            }
            None => [Jet::constant(0.0); 3],
        };
        Self { position: JetVec2::new(x, y), angle: phi, cos: phi.cos(), sin: phi.sin() }
    }

    /// A pose of constants (no derivatives) at q = (x, y, φ).
    pub fn constant(q: [f64; 3]) -> Self {
        let phi = Jet::constant(q[2]);
        Self {
            position: JetVec2::new(Jet::constant(q[0]), Jet::constant(q[1])),
            angle: phi,
            cos: phi.cos(),
            sin: phi.sin(),
        }
    }

    /// A body-frame vector turned into world orientation.
    pub fn rotate(&self, local: glam::DVec2) -> JetVec2 {
        JetVec2::new(self.cos * local.x - self.sin * local.y, self.sin * local.x + self.cos * local.y)
    }

    /// A body-frame jet vector turned into world orientation.
    pub fn rotate_jet(&self, local: JetVec2) -> JetVec2 {
        JetVec2::new(self.cos * local.x - self.sin * local.y, self.sin * local.x + self.cos * local.y)
    }

    /// A world-orientation jet vector turned into the body frame.
    pub fn unrotate_jet(&self, world: JetVec2) -> JetVec2 {
        JetVec2::new(self.cos * world.x + self.sin * world.y, -self.sin * world.x + self.cos * world.y)
    }

    /// World position of a body-frame point.
    pub fn point(&self, local: glam::DVec2) -> JetVec2 {
        self.position + self.rotate(local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// C = x·sin(φ) + √(y) along w: compare grad, d and dd with finite
    /// differences (central, h = 1e-4: truncation ~1e-8 relative).
    #[test]
    fn derivatives_match_finite_differences() {
        let f = |x: Jet, y: Jet, phi: Jet, t: Jet| x * phi.sin() + y.sqrt() * t.cos() + (x / y).abs_powf(3.0);
        let (q, v) = ([0.7, 1.3, 0.4], [0.2, -0.5, 1.1]);
        let eval = |s: f64| {
            let p = [q[0] + s * v[0], q[1] + s * v[1], q[2] + s * v[2], 0.3 + s];
            f(Jet::constant(p[0]), Jet::constant(p[1]), Jet::constant(p[2]), Jet::constant(p[3])).val
        };
        let j = f(
            Jet::variable(q[0], 0, v[0]),
            Jet::variable(q[1], 1, v[1]),
            Jet::variable(q[2], 2, v[2]),
            Jet::variable(0.3, 6, 1.0),
        );
        let h = 1e-4;
        let d_fd = (eval(h) - eval(-h)) / (2.0 * h);
        let dd_fd = (eval(h) - 2.0 * eval(0.0) + eval(-h)) / (h * h);
        assert!((j.d - d_fd).abs() < 1e-7, "{} vs {d_fd}", j.d);
        assert!((j.dd - dd_fd).abs() < 1e-5, "{} vs {dd_fd}", j.dd);
        let directional: f64 = j.grad[0] * v[0] + j.grad[1] * v[1] + j.grad[2] * v[2] + j.grad[6];
        assert!((directional - j.d).abs() < 1e-14);
    }
}
