//! GJK distance and EPA penetration for two convex shapes given only by their
//! support functions (Gilbert–Johnson–Keerthi 1988; van den Bergen,
//! *Collision Detection in Interactive 3D Environments*, §4.3 and §4.5).
//!
//! Both work on the Minkowski difference D = A − B, whose support point in
//! direction d is s_A(d) − s_B(−d). The gap of the pair is the signed
//! distance of D from the origin: its distance when the origin lies outside
//! (GJK), minus the depth of the origin below D's nearest face when it lies
//! inside (EPA). Here they only have to **start** [`super::smooth`]'s Newton
//! iteration: GJK stops at 1e-4 relative (its normal is then good to about
//! √(2·1e-4) ≈ 0.014 rad), EPA at 1e-4 of the shapes' size, and the exact
//! answer (1e-12) is Newton's.

use glam::DVec2;

/// GJK stops when the lower and upper bounds of the distance agree to this
/// fraction (van den Bergen's ε: |v|² − v·w ≤ ε |v|²).
const GJK_RELATIVE_TOLERANCE: f64 = 1e-4;
/// Iteration caps: GJK converges linearly on curved shapes (each step halves
/// the angle error at worst), EPA adds one vertex per step.
const MAX_ITERATIONS: usize = 64;

/// What GJK found.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Gjk {
    /// The shapes are apart: `closest` is D's point nearest the origin (so the
    /// normal from B to A is `closest / distance`), to 1e-6 relative.
    Separated {
        /// Closest point of D = A − B to the origin.
        closest: DVec2,
        /// Its length: the distance between A and B.
        distance: f64,
    },
    /// The distance is proven larger than the margin: no contact.
    BeyondMargin,
    /// The origin lies in D (overlap or touching): the last simplex, a
    /// triangle containing the origin (possibly degenerate when touching).
    Overlap([DVec2; 3]),
}

/// GJK on the Minkowski difference with support `support_d`, from the first
/// direction `start` (e.g. the line of centres). Returns early once the
/// distance is proven to exceed `margin`.
pub fn gjk(support_d: impl Fn(DVec2) -> DVec2, start: DVec2, margin: f64) -> Gjk {
    let start = if start.length_squared() > 0.0 { start } else { DVec2::Y };
    let mut simplex: [DVec2; 3] = [support_d(-start); 3];
    let mut len = 1;
    let mut v = simplex[0];
    for _ in 0..MAX_ITERATIONS {
        let vv = v.length_squared();
        if vv == 0.0 {
            return Gjk::Overlap(simplex_or_degenerate(&simplex, len));
        }
        let w = support_d(-v);
        let vw = v.dot(w);
        // Lower bound of the distance: v·w/|v| (every x in D has v·x ≥ v·w).
        if vw > 0.0 && vw * vw > margin * margin * vv {
            return Gjk::BeyondMargin;
        }
        if vv - vw <= GJK_RELATIVE_TOLERANCE * vv {
            let distance = vv.sqrt();
            return Gjk::Separated { closest: v, distance };
        }
        simplex[len] = w;
        len += 1;
        let (closest, kept) = closest_on_simplex(&simplex[..len]);
        if kept.len == 3 {
            return Gjk::Overlap(simplex);
        }
        let mut next = [DVec2::ZERO; 3];
        for (slot, &i) in next.iter_mut().zip(kept.indices()) {
            *slot = simplex[i];
        }
        simplex = next;
        len = kept.len;
        // No progress (round-off at the closest point): done.
        if closest.length_squared() >= vv {
            return Gjk::Separated { closest: v, distance: vv.sqrt() };
        }
        v = closest;
    }
    Gjk::Separated { closest: v, distance: v.length() }
}

fn simplex_or_degenerate(s: &[DVec2; 3], len: usize) -> [DVec2; 3] {
    match len {
        1 => [s[0]; 3],
        2 => [s[0], s[1], s[1]],
        _ => *s,
    }
}

/// Closest point of the convex hull of 1–3 points to the origin, with the
/// indices of the points whose hull it lies on (Johnson's sub-algorithm, by
/// Voronoi regions in 2D). Three indices: the origin is inside the triangle.
fn closest_on_simplex(s: &[DVec2]) -> (DVec2, Kept) {
    match s.len() {
        1 => (s[0], Kept::one(0)),
        2 => segment(s[0], s[1], 0, 1),
        _ => {
            let (a, b, c) = (s[0], s[1], s[2]);
            let area = (b - a).perp_dot(c - a);
            if area.abs() > 1e-300 {
                // Barycentric signs: the origin is inside if on the inner side of every edge.
                let inside = |p: DVec2, q: DVec2| (q - p).perp_dot(-p) * area >= 0.0;
                if inside(a, b) && inside(b, c) && inside(c, a) {
                    return (DVec2::ZERO, Kept { index: [0, 1, 2], len: 3 });
                }
            }
            // Otherwise the closest of the three edges.
            [segment(a, b, 0, 1), segment(b, c, 1, 2), segment(c, a, 2, 0)]
                .into_iter()
                .min_by(|x, y| x.0.length_squared().total_cmp(&y.0.length_squared()))
                .unwrap_or((a, Kept::one(0)))
        }
    }
}

/// The simplex points a closest point lies on (1–3 indices; no allocation:
/// GJK runs inside every time-of-impact evaluation).
#[derive(Clone, Copy, Debug)]
struct Kept {
    index: [usize; 3],
    len: usize,
}

impl Kept {
    fn one(i: usize) -> Self {
        Self { index: [i, 0, 0], len: 1 }
    }

    fn indices(&self) -> &[usize] {
        &self.index[..self.len]
    }
}

fn segment(a: DVec2, b: DVec2, ia: usize, ib: usize) -> (DVec2, Kept) {
    let e = b - a;
    let ee = e.length_squared();
    if ee == 0.0 {
        return (a, Kept::one(ia));
    }
    let t = -a.dot(e) / ee;
    if t <= 0.0 {
        (a, Kept::one(ia))
    } else if t >= 1.0 {
        (b, Kept::one(ib))
    } else {
        (a + e * t, Kept { index: [ia, ib, 0], len: 2 })
    }
}

/// EPA in 2D: the face of D nearest the origin, grown from GJK's triangle by
/// adding D's support point in the nearest face's outward normal until it
/// adds less than `tolerance`. Returns (depth, outward unit normal m of D's
/// nearest face), so the pair's normal from B to A is −m and its gap −depth;
/// `None` for a degenerate triangle (touching shapes: zero depth, no face).
pub fn epa(support_d: impl Fn(DVec2) -> DVec2, triangle: [DVec2; 3], tolerance: f64) -> Option<(f64, DVec2)> {
    let mut poly: Vec<DVec2> = triangle.to_vec();
    let area = (poly[1] - poly[0]).perp_dot(poly[2] - poly[0]);
    if area.abs() <= 1e-300 || !area.is_finite() {
        return None;
    }
    if area < 0.0 {
        poly.swap(1, 2); // counter-clockwise
    }
    let mut best = (f64::INFINITY, DVec2::Y);
    for _ in 0..MAX_ITERATIONS {
        // Nearest edge: outward normal m = (e.y, −e.x)/|e| of a CCW polygon.
        let n = poly.len();
        let mut nearest = (f64::INFINITY, 0usize, DVec2::Y);
        for i in 0..n {
            let e = poly[(i + 1) % n] - poly[i];
            let m = DVec2::new(e.y, -e.x).normalize_or_zero();
            if m == DVec2::ZERO {
                continue;
            }
            let d = m.dot(poly[i]);
            if d < nearest.0 {
                nearest = (d, i, m);
            }
        }
        let (d, i, m) = nearest;
        if !d.is_finite() {
            return None;
        }
        best = (d, m);
        let w = support_d(m);
        if w.dot(m) - d <= tolerance {
            break;
        }
        poly.insert(i + 1, w);
    }
    Some((best.0.max(0.0), best.1))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two discs: D is a disc of radius r_a + r_b at c_a − c_b, so the
    /// distance is |c_a − c_b| − r_a − r_b (GJK to its 1e-4 relative
    /// tolerance; the normal to √(2·1e-4)) and the penetration depth r_a + r_b − |c_a − c_b| (EPA to
    /// its 1e-9 absolute tolerance, plus the polygon's inscribed-chord error,
    /// which the stopping test bounds by the tolerance).
    #[test]
    fn discs_distance_and_depth() {
        let d = |c: DVec2, r: f64| move |dir: DVec2| c + dir.normalize() * r;
        match gjk(d(DVec2::new(3.0, 4.0), 1.5), DVec2::X, f64::INFINITY) {
            Gjk::Separated { distance, closest } => {
                assert!((distance - 3.5).abs() < 3.5e-4, "{distance}");
                assert!((closest.normalize() - DVec2::new(0.6, 0.8)).length() < 3e-2);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(gjk(d(DVec2::new(3.0, 4.0), 1.5), DVec2::X, 1.0), Gjk::BeyondMargin);
        match gjk(d(DVec2::new(0.3, -0.4), 2.0), DVec2::X, 0.0) {
            Gjk::Overlap(tri) => {
                let (depth, m) = epa(d(DVec2::new(0.3, -0.4), 2.0), tri, 1e-9).expect("a face");
                assert!((depth - 1.5).abs() < 1e-6, "{depth}");
                assert!((m - DVec2::new(-0.6, 0.8)).length() < 2e-3, "{m:?}");
            }
            other => panic!("{other:?}"),
        }
    }
}
