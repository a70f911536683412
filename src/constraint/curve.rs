//! Contact geometry for rolling and point-on-curve constraints: where a body
//! (a point, a circle, or a smooth convex outline) touches a static curve,
//! differentiated through the contact search.
//!
//! The contact parameters (s on the surface, u on the body outline) solve
//! tangency conditions g(s, u; q) = 0. They are found in f64 by Newton, then
//! two chord-Newton steps are repeated in [`Jet`] arithmetic with the Jacobian
//! ∂g/∂(s, u) frozen at the solution: since g = 0 there, the first step gives
//! exact first derivatives with respect to q and the second exact second
//! derivatives (implicit function theorem), which is all the rows need.

use glam::DVec2;

use super::jet::{Jet, JetPose, JetVec2};
use crate::shape::Shape;
use crate::surface::SurfaceGeometry;

/// A point and tangent of a curve at a parameter, as jets.
struct CurvePoint {
    point: JetVec2,
    tangent: JetVec2,
}

/// sgn(x)·|x|ᵖ as a jet.
fn signed_pow(x: Jet, p: f64) -> Jet {
    let m = x.abs_powf(p);
    if x.val < 0.0 { -m } else { m }
}

/// The polar superellipse radius ρ(θ) = (|cos θ/a|ⁿ + |sin θ/b|ⁿ)^(−1/n) and
/// its derivative, as jets.
fn superellipse_polar(theta: Jet, a: f64, b: f64, n: f64) -> (Jet, Jet) {
    let (c, s) = (theta.cos(), theta.sin());
    let u = (c / a).abs_powf(n) + (s / b).abs_powf(n);
    let du = signed_pow(c / a, n - 1.0) * (-s / a) * n + signed_pow(s / b, n - 1.0) * (c / b) * n;
    let rho = u.abs_powf(-1.0 / n);
    let drho = rho / u * du * (-1.0 / n);
    (rho, drho)
}

/// A smooth closed or open curve in its own frame (centre at the origin).
#[derive(Clone, Copy, Debug)]
enum Curve {
    Line { point: DVec2, normal: DVec2 },
    Ellipse { a: f64, b: f64 },
    Superellipse { a: f64, b: f64, n: f64 },
}

impl Curve {
    fn at(&self, s: Jet) -> CurvePoint {
        match *self {
            Curve::Line { point, normal } => {
                let t = normal.normalize().perp();
                CurvePoint { point: JetVec2::new(s * t.x + point.x, s * t.y + point.y), tangent: JetVec2::constant(t) }
            }
            Curve::Ellipse { a, b } => {
                let (c, sn) = (s.cos(), s.sin());
                CurvePoint { point: JetVec2::new(c * a, sn * b), tangent: JetVec2::new(-sn * a, c * b) }
            }
            Curve::Superellipse { a, b, n } => {
                let (rho, drho) = superellipse_polar(s, a, b, n);
                let (c, sn) = (s.cos(), s.sin());
                CurvePoint {
                    point: JetVec2::new(rho * c, rho * sn),
                    tangent: JetVec2::new(drho * c - rho * sn, drho * sn + rho * c),
                }
            }
        }
    }

    /// Parameter of the curve point nearest to the direction/location `p`
    /// (a starting guess).
    fn guess(&self, p: DVec2) -> f64 {
        match *self {
            Curve::Line { point, normal } => (p - point).dot(normal.normalize().perp()),
            Curve::Ellipse { a, b } => (p.y / b).atan2(p.x / a),
            Curve::Superellipse { .. } => p.y.atan2(p.x),
        }
    }
}

/// A static surface as a curve plus its placement and which side is free.
struct SurfaceCurve {
    curve: Curve,
    center: DVec2,
    /// +1: free space is outside (the normal (t_y, −t_x) of a counter-clockwise
    /// curve); −1: bodies move inside.
    side: f64,
}

fn surface_curve(g: &SurfaceGeometry) -> Result<SurfaceCurve, String> {
    Ok(match *g {
        SurfaceGeometry::Line { point, normal } => {
            SurfaceCurve { curve: Curve::Line { point, normal }, center: DVec2::ZERO, side: 1.0 }
        }
        SurfaceGeometry::Circle { center, radius, inside } => SurfaceCurve {
            curve: Curve::Ellipse { a: radius, b: radius },
            center,
            side: if inside { -1.0 } else { 1.0 },
        },
        SurfaceGeometry::Ellipse { center, a, b, inside } => {
            SurfaceCurve { curve: Curve::Ellipse { a, b }, center, side: if inside { -1.0 } else { 1.0 } }
        }
        SurfaceGeometry::Superellipse { center, a, b, exponent, inside } => {
            if exponent < 2.0 {
                return Err("rolling on a superellipse needs exponent >= 2 (a smooth curve)".into());
            }
            SurfaceCurve {
                curve: Curve::Superellipse { a, b, n: exponent },
                center,
                side: if inside { -1.0 } else { 1.0 },
            }
        }
        SurfaceGeometry::Polyline { .. } => {
            return Err("rolling and point-on-curve constraints need a smooth surface (not a polyline)".into());
        }
    })
}

impl SurfaceCurve {
    fn at(&self, s: Jet) -> CurvePoint {
        let mut cp = self.curve.at(s);
        cp.point = cp.point + JetVec2::constant(self.center);
        cp
    }
    /// Unit normal pointing into free space.
    fn normal(&self, tangent: JetVec2) -> JetVec2 {
        let n = JetVec2::new(tangent.y, -tangent.x);
        n.scale(tangent.length().recip() * self.side)
    }
}

/// What touches the surface.
#[derive(Clone, Copy, Debug)]
pub enum Toucher {
    /// A body-frame point.
    Point(DVec2),
    /// The body's outline (circle, ellipse or superellipse).
    Outline,
}

/// The body outline as a curve, if it is smooth.
fn body_curve(shape: &Shape) -> Result<Option<Curve>, String> {
    Ok(match *shape {
        Shape::Circle { .. } => None,
        Shape::Ellipse { a, b } => Some(Curve::Ellipse { a, b }),
        Shape::Superellipse { a, b, exponent } if exponent >= 2.0 => Some(Curve::Superellipse { a, b, n: exponent }),
        _ => {
            return Err(
                "rolling needs a smooth convex body: circle, ellipse, or superellipse with exponent >= 2".into()
            );
        }
    })
}

/// Checks that `shape` can roll on `surface` (or a point slide on it).
pub fn check_supported(shape: &Shape, surface: &SurfaceGeometry, toucher: Toucher) -> Result<(), String> {
    surface_curve(surface)?;
    if let Toucher::Outline = toucher {
        body_curve(shape)?;
    }
    Ok(())
}

/// The contact: signed gap along the surface normal (0 when touching), the
/// material contact point on the body relative to its centre (world
/// orientation), and the surface tangent (unit) there.
pub struct Contact {
    /// Signed gap (m).
    pub gap: Jet,
    /// Contact point minus the body's centre of mass.
    pub arm: JetVec2,
    /// Unit surface tangent.
    pub tangent: JetVec2,
}

/// Locates the contact of body pose `pose` (shape `shape`) with `surface`.
pub fn contact(shape: &Shape, surface: &SurfaceGeometry, toucher: Toucher, pose: &JetPose) -> Contact {
    // Infallible after `check_supported`; unsupported combinations degrade
    // to a point contact at the centre rather than panic.
    let Ok(sc) = surface_curve(surface) else {
        return Contact {
            gap: Jet::constant(0.0),
            arm: JetVec2::constant(DVec2::ZERO),
            tangent: JetVec2::constant(DVec2::X),
        };
    };
    let radius = match (toucher, shape) {
        (Toucher::Outline, Shape::Circle { radius }) => *radius,
        _ => 0.0,
    };
    let outline = match toucher {
        Toucher::Outline => body_curve(shape).ok().flatten(),
        Toucher::Point(_) => None,
    };
    match outline {
        None => {
            // A point (or a circle's centre at distance r): one parameter s,
            // g(s) = (p − c(s))·c′(s) = 0.
            let local = match toucher {
                Toucher::Point(p) => p,
                Toucher::Outline => DVec2::ZERO,
            };
            let p = pose.point(local);
            let g = |s: Jet, p: JetVec2| {
                let cp = sc.at(s);
                (p - cp.point).dot(cp.tangent)
            };
            let p0 = JetVec2::constant(p.value());
            let mut s = sc.curve.guess(p.value() - sc.center);
            let gs = |s: f64| {
                let h = 1e-7 * (1.0 + s.abs());
                (g(Jet::constant(s + h), p0).val - g(Jet::constant(s - h), p0).val) / (2.0 * h)
            };
            for _ in 0..50 {
                let step = g(Jet::constant(s), p0).val / gs(s);
                s -= step;
                if step.abs() < 1e-15 * (1.0 + s.abs()) {
                    break;
                }
            }
            let slope = gs(s);
            let mut sj = Jet::constant(s);
            for _ in 0..2 {
                sj = sj - g(sj, p) / slope;
            }
            let cp = sc.at(sj);
            let n = sc.normal(cp.tangent);
            let gap = (p - cp.point).dot(n) - radius;
            let arm = p - pose.position - n.scale(Jet::constant(radius));
            let tangent = cp.tangent.scale(cp.tangent.length().recip());
            Contact { gap, arm, tangent }
        }
        Some(body) => {
            // Outline point P(u) = x + R·B(u) and surface point c(s):
            // g₁ = c′(s) × P′(u) = 0 (tangents parallel),
            // g₂ = (P(u) − c(s))·c′(s) = 0 (P on the normal line through c(s)).
            let eval = |s: Jet, u: Jet, pose: &JetPose| {
                let cp = sc.at(s);
                let bp = body.at(u);
                let p = pose.position + pose.rotate_jet(bp.point);
                let pt = pose.rotate_jet(bp.tangent);
                (cp.tangent.cross(pt), (p - cp.point).dot(cp.tangent), cp, p)
            };
            let value_pose = JetPose::constant([pose.position.x.val, pose.position.y.val, pose.angle.val]);
            let gv = |s: f64, u: f64| {
                let (g1, g2, _, _) = eval(Jet::constant(s), Jet::constant(u), &value_pose);
                [g1.val, g2.val]
            };
            // Guesses: the surface point nearest the centre; the outline point
            // whose outward normal opposes the surface normal there.
            let centre = pose.position.value();
            let mut s = sc.curve.guess(centre - sc.center);
            let n0 = sc.normal(sc.at(Jet::constant(s)).tangent).value();
            let local_dir = DVec2::from_angle(-pose.angle.val).rotate(-n0);
            let mut u = body.guess(shape.support(local_dir));
            let jac = |s: f64, u: f64| {
                let (hs, hu) = (1e-7 * (1.0 + s.abs()), 1e-7 * (1.0 + u.abs()));
                let (a, b) = (gv(s + hs, u), gv(s - hs, u));
                let (c, d) = (gv(s, u + hu), gv(s, u - hu));
                [
                    [(a[0] - b[0]) / (2.0 * hs), (c[0] - d[0]) / (2.0 * hu)],
                    [(a[1] - b[1]) / (2.0 * hs), (c[1] - d[1]) / (2.0 * hu)],
                ]
            };
            let solve = |m: [[f64; 2]; 2], r: [f64; 2]| {
                let det = m[0][0] * m[1][1] - m[0][1] * m[1][0];
                [(r[0] * m[1][1] - r[1] * m[0][1]) / det, (m[0][0] * r[1] - m[1][0] * r[0]) / det]
            };
            for _ in 0..50 {
                let d = solve(jac(s, u), gv(s, u));
                s -= d[0];
                u -= d[1];
                if d[0].abs() + d[1].abs() < 1e-15 * (1.0 + s.abs() + u.abs()) {
                    break;
                }
            }
            let m = jac(s, u);
            let det = m[0][0] * m[1][1] - m[0][1] * m[1][0];
            let (mut sj, mut uj) = (Jet::constant(s), Jet::constant(u));
            for _ in 0..2 {
                let (g1, g2, _, _) = eval(sj, uj, pose);
                let ds = (g1 * m[1][1] - g2 * m[0][1]) / det;
                let du = (g2 * m[0][0] - g1 * m[1][0]) / det;
                sj = sj - ds;
                uj = uj - du;
            }
            let (_, _, cp, p) = eval(sj, uj, pose);
            let n = sc.normal(cp.tangent);
            let gap = (p - cp.point).dot(n);
            let tangent = cp.tangent.scale(cp.tangent.length().recip());
            Contact { gap, arm: p - pose.position, tangent }
        }
    }
}
