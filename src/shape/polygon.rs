//! Convex polygon (vertices counter-clockwise): shoelace area, centroid and
//! second moment.
use glam::DVec2;

/// Signed area by the shoelace formula (positive when counter-clockwise).
pub(super) fn area(v: &[DVec2]) -> f64 {
    0.5 * edges(v).map(|(p, q)| p.perp_dot(q)).sum::<f64>()
}

fn edges(v: &[DVec2]) -> impl Iterator<Item = (DVec2, DVec2)> + '_ {
    (0..v.len()).map(move |i| (v[i], v[(i + 1) % v.len()]))
}

/// Area centroid of a simple polygon.
pub fn polygon_centroid(v: &[DVec2]) -> DVec2 {
    let a = area(v);
    edges(v).map(|(p, q)| (p + q) * p.perp_dot(q)).sum::<DVec2>() / (6.0 * a)
}

/// Polar second moment about the origin per unit area, divided by the area:
/// Σ (p×q)(p·p + p·q + q·q) / 12, over the area.
pub(super) fn unit_inertia(v: &[DVec2]) -> f64 {
    let j: f64 = edges(v).map(|(p, q)| p.perp_dot(q) * (p.dot(p) + p.dot(q) + q.dot(q))).sum::<f64>() / 12.0;
    j / area(v)
}

pub(super) fn support(v: &[DVec2], d: DVec2) -> DVec2 {
    v.iter().copied().max_by(|p, q| p.dot(d).total_cmp(&q.dot(d))).unwrap_or(DVec2::ZERO)
}

/// Exact signed distance to a convex polygon: the largest edge-plane distance
/// inside, the distance to the nearest edge segment outside.
pub(super) fn signed_distance(v: &[DVec2], p: DVec2) -> f64 {
    let mut max_plane = f64::MIN;
    let mut min_seg = f64::INFINITY;
    for (a, b) in edges(v) {
        let e = b - a;
        let n = DVec2::new(e.y, -e.x).normalize();
        max_plane = max_plane.max((p - a).dot(n));
        let t = ((p - a).dot(e) / e.length_squared()).clamp(0.0, 1.0);
        min_seg = min_seg.min((p - (a + e * t)).length());
    }
    if max_plane <= 0.0 { max_plane } else { min_seg }
}

/// [`signed_distance`] with the nearest boundary point and the outward
/// normal there (see `Shape::closest_boundary`).
pub(super) fn closest_boundary(v: &[DVec2], p: DVec2) -> (DVec2, DVec2, f64) {
    let mut max_plane = (f64::MIN, DVec2::X);
    let mut min_seg = (f64::INFINITY, DVec2::ZERO);
    for (a, b) in edges(v) {
        let e = b - a;
        let n = DVec2::new(e.y, -e.x).normalize();
        let plane = (p - a).dot(n);
        if plane > max_plane.0 {
            max_plane = (plane, n);
        }
        let t = ((p - a).dot(e) / e.length_squared()).clamp(0.0, 1.0);
        let c = a + e * t;
        let d = (p - c).length();
        if d < min_seg.0 {
            min_seg = (d, c);
        }
    }
    let (plane, n) = max_plane;
    if plane <= 0.0 {
        (p - n * plane, n, plane)
    } else {
        let (d, c) = min_seg;
        (c, (p - c) / d, d)
    }
}

pub(super) fn validate(v: &[DVec2]) -> Result<(), String> {
    if v.len() < 3 {
        return Err(format!("a polygon needs at least 3 vertices, got {}", v.len()));
    }
    if v.iter().any(|p| !p.is_finite()) {
        return Err("polygon vertices must be finite".into());
    }
    for i in 0..v.len() {
        let (a, b, c) = (v[i], v[(i + 1) % v.len()], v[(i + 2) % v.len()]);
        if (b - a).perp_dot(c - b) <= 0.0 {
            return Err(format!(
                "polygon must be convex with counter-clockwise vertices (turn at vertex {} is not a left turn)",
                (i + 1) % v.len()
            ));
        }
    }
    Ok(())
}
