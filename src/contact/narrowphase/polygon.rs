//! Polygon–polygon contact by reference-face clipping (Box2D's manifold): the
//! axis of largest separation among both polygons' edge normals picks the
//! reference face; the incident face (the other polygon's edge most
//! anti-parallel to it) is clipped to the reference face's side planes; each
//! surviving incident vertex is a contact point with its own gap. Flat on flat
//! gives 2 points (a box on a box), a corner on a face 1.

use glam::DVec2;

use super::{ManifoldPoint, Pose};

/// Vertices of a polygon handled on the stack (boxes, bars, small polygons);
/// larger ones (64-vertex outlines) use the heap.
const STACK_VERTICES: usize = 8;

/// Calls `f` with the world vertices and unit outward edge normals of a
/// polygon at a pose (the rotation computed once; no allocation up to
/// [`STACK_VERTICES`] vertices).
fn with_world<R>(hull: &[DVec2], pose: &Pose, f: impl FnOnce(&[DVec2], &[DVec2]) -> R) -> R {
    let fill = |v: &mut [DVec2], n: &mut [DVec2]| fill_world(hull, pose, v, n);
    let len = hull.len();
    if len <= STACK_VERTICES {
        let (mut v, mut n) = ([DVec2::ZERO; STACK_VERTICES], [DVec2::ZERO; STACK_VERTICES]);
        fill(&mut v[..len], &mut n[..len]);
        f(&v[..len], &n[..len])
    } else {
        let (mut v, mut n) = (vec![DVec2::ZERO; len], vec![DVec2::ZERO; len]);
        fill(&mut v, &mut n);
        f(&v, &n)
    }
}

/// The world vertices `v` and unit outward edge normals `n` of a polygon
/// (`hull`: body-frame vertices) at a pose; `v` and `n` as long as `hull`:
/// the very values [`polygon_polygon`] computes for each pair, computed once
/// per body by a caller that meets a body in several pairs at one pose (the
/// soft step's prepare).
pub(crate) fn fill_world(hull: &[DVec2], pose: &Pose, v: &mut [DVec2], n: &mut [DVec2]) {
    let rot = DVec2::from_angle(pose.angle);
    for (w, &p) in v.iter_mut().zip(hull) {
        *w = pose.position + rot.rotate(p);
    }
    let len = v.len();
    for i in 0..len {
        let e = v[next(i, len)] - v[i];
        n[i] = DVec2::new(e.y, -e.x).normalize_or_zero();
    }
}

/// The vertex after `i` on a closed outline of `len` vertices: `(i + 1) %
/// len` without the division (an integer division costs more than the
/// dot products around it).
#[inline(always)]
fn next(i: usize, len: usize) -> usize {
    if i + 1 == len { 0 } else { i + 1 }
}

/// The size of a polygon for the reference-face tolerance: its farthest
/// vertex from its centre (`hull`: body-frame vertices).
pub(crate) fn hull_size(hull: &[DVec2]) -> f64 {
    hull.iter().map(|v| v.length()).fold(0.0, f64::max)
}

/// [`polygon_polygon`] on world vertices and normals from [`fill_world`]
/// (`size_a`: [`hull_size`] of the first): the same points bit for bit.
pub(crate) fn polygon_polygon_world(
    size_a: f64,
    world_a: (&[DVec2], &[DVec2]),
    world_b: (&[DVec2], &[DVec2]),
    margin: f64,
    out: &mut Vec<ManifoldPoint>,
) {
    collide_world(size_a, world_a.0, world_a.1, world_b.0, world_b.1, margin, out);
}

/// Polygons with at least this many vertices find their deepest vertex by
/// walking (see [`max_separation`]); smaller ones by a full scan.
const WALK_MIN_VERTICES: usize = 16;

/// Largest separation of `b` from `a` over `a`'s edge normals: (separation, edge).
///
/// For each edge i of `a` the separation is the smallest (p − aᵢ)·nᵢ over
/// b's vertices p: b's support point in the direction −nᵢ. Both polygons
/// are convex and counter-clockwise, so as i advances nᵢ turns
/// counter-clockwise and that support point moves forward along b: after
/// one full scan for the first edge, each next one is found by walking on
/// from the last (rotating calipers), O(n_a + n_b) instead of O(n_a n_b) —
/// a 64-vertex outline against another costs 130 dot products, not 4,096.
/// The walk stops at the first vertex not lower than its successor; on a
/// convex polygon the values along the walk fall to the minimum, then rise,
/// so that is the same minimum as the full scan's.
fn max_separation(va: &[DVec2], na: &[DVec2], vb: &[DVec2]) -> (f64, usize) {
    if vb.len() < WALK_MIN_VERTICES {
        // Two boxes (the piles' pairs): the same scan on arrays of four,
        // which the compiler unrolls (same operations, same order).
        if let (Ok(va), Ok(na), Ok(vb)) =
            (<&[DVec2; 4]>::try_from(va), <&[DVec2; 4]>::try_from(na), <&[DVec2; 4]>::try_from(vb))
        {
            return scan_separation(va, na, vb);
        }
        return scan_separation(va, na, vb);
    }
    let mut best = (f64::MIN, 0);
    let nb = vb.len();
    let mut j = (0..nb).min_by(|&x, &y| vb[x].dot(na[0]).total_cmp(&vb[y].dot(na[0]))).unwrap_or(0);
    for i in 0..va.len() {
        let n = na[i];
        for _ in 0..nb {
            let next = (j + 1) % nb;
            if vb[next].dot(n) < vb[j].dot(n) {
                j = next;
            } else {
                break;
            }
        }
        let s = (vb[j] - va[i]).dot(n);
        if s > best.0 {
            best = (s, i);
        }
    }
    best
}

/// [`max_separation`] by a full scan of `vb` for each edge of `va` (slices,
/// or arrays of a fixed length for an unrolled copy).
#[inline(always)]
fn scan_separation<A: AsRef<[DVec2]> + ?Sized, B: AsRef<[DVec2]> + ?Sized>(va: &A, na: &A, vb: &B) -> (f64, usize) {
    let (va, na, vb) = (va.as_ref(), na.as_ref(), vb.as_ref());
    let mut best = (f64::MIN, 0);
    for i in 0..va.len() {
        let s = vb.iter().map(|&p| (p - va[i]).dot(na[i])).fold(f64::INFINITY, f64::min);
        if s > best.0 {
            best = (s, i);
        }
    }
    best
}

/// Contact points of convex polygons `a` and `b` (body-frame vertices,
/// counter-clockwise) at poses `pa`, `pb`, gap ≤ `margin`.
pub fn polygon_polygon(a: &[DVec2], pa: &Pose, b: &[DVec2], pb: &Pose, margin: f64, out: &mut Vec<ManifoldPoint>) {
    let size_a = hull_size(a);
    with_world(a, pa, |va, na| with_world(b, pb, |vb, nb| collide_world(size_a, va, na, vb, nb, margin, out)));
}

/// [`polygon_polygon`] on world vertices and normals (`size`: [`hull_size`]
/// of the first).
fn collide_world(
    size: f64,
    va: &[DVec2],
    na: &[DVec2],
    vb: &[DVec2],
    nb: &[DVec2],
    margin: f64,
    out: &mut Vec<ManifoldPoint>,
) {
    let (sa, ea) = max_separation(va, na, vb);
    if sa > margin {
        return;
    }
    let (sb, eb) = max_separation(vb, nb, va);
    if sb > margin {
        return;
    }
    // Prefer a's face unless b's is clearly better (hysteresis keeps the
    // reference face, hence the warm-start identities, stable).
    // Box2D's tolerance: a's face unless b's separates more by 1e-3 of a's size.
    let tol = 1e-3 * size;
    // Apart with two corners nearest each other, the best face normal
    // understates the distance (the true axis lies between face normals) and
    // the incident face may clip away entirely: the exact closest points then
    // make one point (Box2D v3's segment-distance case).
    if sa.max(sb) > 0.0 {
        let beyond = sa.max(sb) + 1e-9 * size;
        // The closest distance is at most that of any vertex–edge pair: if
        // the other polygon's vertices against the edge of largest
        // separation already come within `beyond` (a face on a face, the
        // usual case), the full scan below cannot exceed it and is skipped.
        let (from, to, edge) = if sa >= sb { (vb, va, ea) } else { (va, vb, eb) };
        let (q0, q1) = (to[edge], to[next(edge, to.len())]);
        if !from.iter().any(|&p| vertex_edge(p, q0, q1).0 <= beyond) {
            let (dist, pa, pb, feature) = closest_points(va, vb);
            if dist > beyond && dist > 0.0 {
                if dist <= margin {
                    let normal = (pa - pb) / dist;
                    out.push(ManifoldPoint {
                        point: 0.5 * (pa + pb),
                        normal,
                        gap: dist,
                        feature: 0x2000_0000 | feature,
                    });
                }
                return;
            }
        }
    }
    if sb > sa + tol {
        // The reference is b: the normal already points from b to a.
        clip(vb, nb, eb, va, na, margin, false, out);
    } else {
        // The reference is a: normals from a to b, turned round (as `flip`),
        // and the identity marks the reference side once.
        clip(va, na, ea, vb, nb, margin, true, out);
    }
}

/// The distance from `p` to the segment `q0`–`q1`, and the nearest point
/// of the segment (one term of [`closest_points`]).
#[inline(always)]
fn vertex_edge(p: DVec2, q0: DVec2, q1: DVec2) -> (f64, DVec2) {
    let e = q1 - q0;
    let t = if e.length_squared() > 0.0 { ((p - q0).dot(e) / e.length_squared()).clamp(0.0, 1.0) } else { 0.0 };
    let q = q0 + e * t;
    ((p - q).length(), q)
}

/// Closest points of two disjoint convex polygons' outlines (world
/// vertices): the nearest vertex–edge pair either way, by a full scan
/// (polygons here have few vertices). Returns (distance, point on a, point
/// on b, the two features' indices).
fn closest_points(va: &[DVec2], vb: &[DVec2]) -> (f64, DVec2, DVec2, u32) {
    let mut best = (f64::INFINITY, DVec2::ZERO, DVec2::ZERO, 0u32);
    for (from, to, a_is_vertex) in [(va, vb, true), (vb, va, false)] {
        for (i, &p) in from.iter().enumerate() {
            for j in 0..to.len() {
                let (d, q) = vertex_edge(p, to[j], to[next(j, to.len())]);
                if d < best.0 {
                    let feature = ((i as u32) << 12) | j as u32 | if a_is_vertex { 0 } else { 0x0100_0000 };
                    best = if a_is_vertex { (d, p, q, feature) } else { (d, q, p, feature) };
                }
            }
        }
    }
    best
}

/// Clips the incident face of `inc` against reference edge `edge` of `refp`;
/// pushes points with normal = the reference face normal (from ref to inc),
/// or, when `reversed`, its opposite with the identity bit 0x4000_0000 set
/// (the reference is the pair's first body: what [`flip`] and that mark
/// would make of the points, written once).
#[allow(clippy::too_many_arguments)]
fn clip(
    refv: &[DVec2],
    refn: &[DVec2],
    edge: usize,
    inc: &[DVec2],
    incn: &[DVec2],
    margin: f64,
    reversed: bool,
    out: &mut Vec<ManifoldPoint>,
) {
    let n = refn[edge];
    let (v1, v2) = (refv[edge], refv[next(edge, refv.len())]);
    // Incident edge: most anti-parallel normal (the first of equals, as
    // `min_by`), each dot product once.
    let mut ie = 0;
    let mut lowest = incn[0].dot(n);
    for (i, m) in incn.iter().enumerate().skip(1) {
        let d = m.dot(n);
        if d.total_cmp(&lowest).is_lt() {
            (ie, lowest) = (i, d);
        }
    }
    let (i1, i2) = (ie, next(ie, inc.len()));
    let mut pts = [(inc[i1], i1 as u32), (inc[i2], i2 as u32)];
    // The edge's unit direction: `n` is (e.y, −e.x)/|e| for the edge e =
    // v2 − v1 (`fill_world`), so (v2 − v1).normalize_or_zero() is exactly
    // n.perp() (same length, same reciprocal, the products negated).
    let t = n.perp();
    // Clip to the side planes t·(p − v1) ≥ 0 and t·(p − v2) ≤ 0.
    let planes = [(t, t.dot(v1)), (-t, -t.dot(v2))];
    for (dir, offset) in planes {
        let d0 = pts[0].0.dot(dir) - offset;
        let d1 = pts[1].0.dot(dir) - offset;
        if d0 < 0.0 && d1 < 0.0 {
            return;
        }
        if d0 < 0.0 || d1 < 0.0 {
            let s = d0 / (d0 - d1);
            let p = pts[0].0 + (pts[1].0 - pts[0].0) * s;
            if d0 < 0.0 {
                // The clipped point keeps the identity of the vertex it
                // replaces: clipping or not must not change it (warm start).
                pts[0] = (p, pts[0].1);
            } else {
                pts[1] = (p, pts[1].1);
            }
        }
    }
    let (normal, mark) = if reversed { (-n, 0x4000_0000) } else { (n, 0) };
    for (p, id) in pts {
        let gap = (p - v1).dot(n);
        if gap <= margin {
            out.push(ManifoldPoint {
                point: p - n * (0.5 * gap),
                normal,
                gap,
                feature: ((edge as u32) << 12) | id | mark,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn square(h: f64) -> Vec<DVec2> {
        vec![DVec2::new(-h, -h), DVec2::new(h, -h), DVec2::new(h, h), DVec2::new(-h, h)]
    }

    /// The walking support search gives the full scan's separation on
    /// 64-vertex outlines (ellipse, superellipse) against each other and
    /// against a box, over 2,000 random poses: equal to 1e-15 (the same
    /// vertex, or a tie of the same value, up to the rounding of the dot
    /// products).
    #[test]
    fn walking_separation_equals_the_full_scan() {
        use crate::shape::Shape;
        let shapes = [
            Shape::Ellipse { a: 0.3, b: 0.12 }.outline(64),
            Shape::Superellipse { a: 0.2, b: 0.15, exponent: 4.0 }.outline(64),
            square(0.2),
        ];
        let mut lcg = crate::math::Lcg(12345u64);
        let mut rnd = || lcg.unit();
        for _ in 0..2000 {
            for a in &shapes {
                for b in &shapes {
                    let pa = Pose { position: DVec2::new(rnd(), rnd()), angle: 7.0 * rnd() };
                    let pb = Pose { position: DVec2::new(rnd(), rnd()), angle: 7.0 * rnd() };
                    with_world(a, &pa, |va, na| {
                        with_world(b, &pb, |vb, _| {
                            let walk = max_separation(va, na, vb).0;
                            let scan = (0..va.len())
                                .map(|i| vb.iter().map(|&p| (p - va[i]).dot(na[i])).fold(f64::INFINITY, f64::min))
                                .fold(f64::MIN, f64::max);
                            assert!((walk - scan).abs() <= 1e-15, "walk {walk} vs scan {scan}");
                        })
                    });
                }
            }
        }
    }

    /// The clip takes the reference edge's direction as `n.perp()`: bit
    /// for bit `(v2 − v1).normalize_or_zero()` on every edge of boxes, bars
    /// and 64-vertex outlines at 2,000 random poses.
    #[test]
    fn edge_direction_is_the_edge_normal_turned() {
        use crate::shape::Shape;
        let shapes = [
            Shape::Ellipse { a: 0.3, b: 0.12 }.outline(64),
            square(0.2),
            vec![DVec2::new(-1.0, -1e-6), DVec2::new(1.0, -1e-6), DVec2::new(1.0, 1e-6), DVec2::new(-1.0, 1e-6)],
        ];
        let mut lcg = crate::math::Lcg(777u64);
        let mut rnd = || lcg.unit();
        for _ in 0..2000 {
            for hull in &shapes {
                let pose = Pose { position: DVec2::new(100.0 * rnd(), 50.0 * rnd()), angle: 7.0 * rnd() - 3.5 };
                with_world(hull, &pose, |v, n| {
                    for i in 0..v.len() {
                        let t = (v[next(i, v.len())] - v[i]).normalize_or_zero();
                        assert_eq!(t.to_array().map(f64::to_bits), n[i].perp().to_array().map(f64::to_bits));
                    }
                });
            }
        }
    }

    /// The full closest-points scan is skipped when a vertex of one polygon
    /// against the other's edge of largest separation comes within
    /// `beyond`; then the scan's distance is within it too (it is the
    /// smallest of the same terms), so its case would not have been taken.
    /// Boxes side by side and on each other, slightly apart and turned,
    /// 20,000 random poses; the skip is taken in most of them.
    #[test]
    fn skipped_closest_points_scan_would_not_have_made_the_point() {
        let mut lcg = crate::math::Lcg(4242u64);
        let mut rnd = || lcg.unit();
        let hull = square(0.5);
        let size = hull_size(&hull);
        let (mut apart, mut skipped) = (0, 0);
        for k in 0..20000 {
            let offset = if k % 2 == 0 { DVec2::new(1.0, 0.0) } else { DVec2::new(0.5, 1.0) };
            let base = DVec2::new(40.0 * rnd(), 20.0 * rnd());
            let pa = Pose { position: base, angle: 1e-3 * (rnd() - 0.5) };
            let gap = DVec2::new(2e-3 * rnd(), 2e-3 * rnd());
            let pb = Pose { position: base + offset + gap, angle: 0.02 * (rnd() - 0.5) };
            with_world(&hull, &pa, |va, na| {
                with_world(&hull, &pb, |vb, nb| {
                    let (sa, ea) = max_separation(va, na, vb);
                    let (sb, eb) = max_separation(vb, nb, va);
                    if sa.max(sb) <= 0.0 {
                        return;
                    }
                    apart += 1;
                    let beyond = sa.max(sb) + 1e-9 * size;
                    let (from, to, edge) = if sa >= sb { (vb, va, ea) } else { (va, vb, eb) };
                    let (q0, q1) = (to[edge], to[next(edge, to.len())]);
                    if from.iter().any(|&p| vertex_edge(p, q0, q1).0 <= beyond) {
                        skipped += 1;
                        let dist = closest_points(va, vb).0;
                        assert!(dist <= beyond, "skipped, but the scan gives {dist} > {beyond}");
                    }
                })
            });
        }
        assert!(apart > 5000 && skipped > apart / 2, "{apart} pairs apart, {skipped} skipped");
    }

    #[test]
    fn box_on_box_gives_two_points_with_the_exact_gap() {
        let mut out = Vec::new();
        let top = Pose { position: DVec2::new(0.3, 0.99), angle: 0.0 };
        let bottom = Pose { position: DVec2::ZERO, angle: 0.0 };
        polygon_polygon(&square(0.5), &top, &square(0.5), &bottom, 0.1, &mut out);
        assert_eq!(out.len(), 2);
        for p in &out {
            assert!((p.gap + 0.01).abs() < 1e-14, "gap {}", p.gap);
            assert!((p.normal - DVec2::Y).length() < 1e-14, "normal {:?}", p.normal);
        }
        let xs: Vec<f64> = out.iter().map(|p| p.point.x).collect();
        assert!(xs.iter().any(|x| (x + 0.2).abs() < 1e-12) && xs.iter().any(|x| (x - 0.5).abs() < 1e-12), "{xs:?}");
    }

    /// Corner of a tilted box on a face: the gap equals the brute-force
    /// minimum over 20,000 outline samples of the signed distance to the
    /// other box (sampling error ≤ perimeter/20,000 · tilt ≈ 1e-4 bound, the
    /// corner itself is sampled exactly).
    #[test]
    fn tilted_corner_matches_sampling() {
        let mut out = Vec::new();
        let a = Pose { position: DVec2::new(0.1, 1.15), angle: 0.5 };
        let b = Pose { position: DVec2::ZERO, angle: -0.1 };
        polygon_polygon(&square(0.5), &a, &square(0.5), &b, 1.0, &mut out);
        let gap = out.iter().map(|p| p.gap).fold(f64::INFINITY, f64::min);
        let shape = crate::shape::Shape::Box { half_extents: DVec2::splat(0.5) };
        let verts = square(0.5);
        let mut brute = f64::INFINITY;
        for i in 0..4 {
            for k in 0..5000 {
                let local = verts[i] + (verts[(i + 1) % 4] - verts[i]) * (k as f64 / 5000.0);
                let w = a.apply(local);
                let in_b = b.unrotate(w - b.position);
                brute = brute.min(shape.signed_distance(in_b));
            }
        }
        assert!((gap - brute).abs() < 1e-9, "clipping {gap} vs sampling {brute}");
    }
}
