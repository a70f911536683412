//! Narrowphase of every pair of body shapes against an independent
//! computation (issue 7, priority 1): brute-force sampling of both outlines
//! (10⁵ points per curved outline) and the separating-axis theorem on the
//! two sampled polygons; closed forms to 1e-12 where they exist; invariance
//! under a change of length unit (×10^±3).

use glam::DVec2;
use mx2d::contact::narrowphase::{ManifoldPoint, Pose, collide_bodies};
use mx2d::shape::Shape;

/// Points sampled on each curved outline.
const SAMPLES: usize = 100_000;

fn shapes() -> Vec<Shape> {
    vec![
        Shape::Circle { radius: 0.7 },
        Shape::Ellipse { a: 1.3, b: 0.4 },
        Shape::Superellipse { a: 1.0, b: 0.6, exponent: 4.0 },
        Shape::Superellipse { a: 0.8, b: 0.5, exponent: 2.5 },
        // Below 2: pointed tips on the axes (Newton falls back to bisection there).
        Shape::Superellipse { a: 0.9, b: 0.7, exponent: 1.5 },
        Shape::Box { half_extents: DVec2::new(0.9, 0.3) },
        Shape::Polygon { vertices: vec![DVec2::new(-0.5, -0.4), DVec2::new(0.7, -0.3), DVec2::new(0.2, 0.6)] }
            .centred()
            .0,
        Shape::Bar { length: 2.0, width: 0.1 },
    ]
}

/// The sampled outline (polygons: their own vertices, exact) and its
/// sampling error: the largest distance of a chord midpoint from the true
/// outline (the shape's own signed distance, a golden-section search
/// independent of the support functions), doubled because the chord's
/// farthest point from the arc need not be its midpoint where the curvature
/// varies along it.
fn sampled(shape: &Shape) -> (Vec<DVec2>, f64) {
    sampled_with(shape, SAMPLES)
}

/// [`sampled`] with `samples` points per curved outline.
fn sampled_with(shape: &Shape, samples: usize) -> (Vec<DVec2>, f64) {
    let curved = matches!(shape, Shape::Circle { .. } | Shape::Ellipse { .. } | Shape::Superellipse { .. });
    if !curved {
        return (shape.outline(8), 0.0);
    }
    let pts = shape.outline(samples);
    let err = (0..pts.len())
        .map(|i| shape.signed_distance(0.5 * (pts[i] + pts[(i + 1) % pts.len()])).abs())
        .fold(0.0, f64::max);
    (pts, 2.0 * err)
}

/// Separation (gap, normal from b to a) of two convex polygons given by
/// counter-clockwise world vertices, by the separating-axis theorem: the
/// largest, over every edge normal of both, of the distance between the
/// edge's line and the other polygon's deepest vertex. That vertex is found
/// by a full scan for the first edge, then by walking forward (it moves
/// forward as the edge normals turn). Exact for overlapping polygons; for
/// separated ones whose nearest features are two vertices the best axis
/// lies between edge normals and the result is low by at most
/// gap·(1 − cos δ), δ the largest turn between consecutive edges ([`turn`]).
fn sat(a: &[DVec2], b: &[DVec2]) -> (f64, DVec2) {
    let mut best = (f64::NEG_INFINITY, DVec2::ZERO);
    for (reference, other, sign) in [(b, a, 1.0), (a, b, -1.0)] {
        let normal = |i: usize| {
            let e = reference[(i + 1) % reference.len()] - reference[i];
            DVec2::new(e.y, -e.x).normalize()
        };
        let n0 = normal(0);
        let mut j = (0..other.len()).min_by(|&x, &y| other[x].dot(n0).total_cmp(&other[y].dot(n0))).unwrap();
        for (i, &vertex) in reference.iter().enumerate() {
            let m = normal(i);
            for _ in 0..other.len() {
                let next = (j + 1) % other.len();
                if other[next].dot(m) < other[j].dot(m) {
                    j = next;
                } else {
                    break;
                }
            }
            let s = (other[j] - vertex).dot(m);
            if s > best.0 {
                best = (s, sign * m);
            }
        }
    }
    best
}

/// Largest angle between consecutive edges of a polygon (rad).
fn turn(p: &[DVec2]) -> f64 {
    let n = p.len();
    (0..n)
        .map(|i| {
            let (e0, e1) = (p[(i + 1) % n] - p[i], p[(i + 2) % n] - p[(i + 1) % n]);
            e0.perp_dot(e1).atan2(e0.dot(e1)).abs()
        })
        .fold(0.0, f64::max)
}

/// Separation of the sampled polygons along a given normal n (b to a).
fn sat_along(a: &[DVec2], b: &[DVec2], n: DVec2) -> f64 {
    let min_a = a.iter().map(|p| p.dot(n)).fold(f64::INFINITY, f64::min);
    let max_b = b.iter().map(|p| p.dot(n)).fold(f64::NEG_INFINITY, f64::max);
    min_a - max_b
}

fn rng(seed: u64) -> impl FnMut() -> f64 {
    let mut s = seed;
    move || {
        s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (s >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn contact(a: &Shape, pa: &Pose, b: &Shape, pb: &Pose) -> ManifoldPoint {
    let mut out = Vec::new();
    collide_bodies(a, pa, b, pb, f64::INFINITY, &mut out);
    assert!(!out.is_empty(), "{a:?} vs {b:?}: no point");
    out.into_iter().min_by(|x, y| x.gap.total_cmp(&y.gap)).unwrap()
}

/// Every pair (64 of them) at 12 random poses, half separated and half
/// overlapping (centre distance 0.35–1.4 × the sum of the bounding radii).
/// The sampled polygons lie inside the true outlines, so the sampled gap
/// exceeds the true one by at most the two sampling errors ε_a + ε_b (each
/// ≤ 2e-8 m here); SAT on edge normals can be low by gap·(1 − cos δ) ≤
/// gap·δ²/2 when apart ([`sat`]). The narrowphase gap must lie in
/// [sampled − ε, sampled + gap·δ²/2] (+1e-12 for round-off). Its normal must
/// be the sampled polygons' best axis too: their separation along it must be
/// within those bounds of the gap.
#[test]
fn every_pair_matches_brute_force_sampling() {
    let shapes = shapes();
    let samples: Vec<(Vec<DVec2>, f64)> = shapes.iter().map(sampled).collect();
    let turns: Vec<f64> = samples.iter().map(|s| turn(&s.0)).collect();
    let mut rnd = rng(7);
    let (mut apart, mut overlapping) = (0, 0);
    for (ia, a) in shapes.iter().enumerate() {
        for (ib, b) in shapes.iter().enumerate() {
            for k in 0..12 {
                let reach = a.bounding_radius() + b.bounding_radius();
                let pb = Pose { position: DVec2::new(rnd() - 0.5, rnd() - 0.5), angle: 7.0 * rnd() };
                let u = if k % 2 == 0 { 0.35 + 0.45 * rnd() } else { 0.8 + 0.6 * rnd() };
                let pa =
                    Pose { position: pb.position + DVec2::from_angle(7.0 * rnd()) * (u * reach), angle: 7.0 * rnd() };
                let world = |s: &[DVec2], p: &Pose| s.iter().map(|&v| p.apply(v)).collect::<Vec<_>>();
                let (wa, wb) = (world(&samples[ia].0, &pa), world(&samples[ib].0, &pb));
                let (brute, _) = sat(&wa, &wb);
                let eps = samples[ia].1 + samples[ib].1 + 1e-12 * reach;
                let delta = turns[ia].max(turns[ib]);
                let low = brute.max(0.0) * 0.5 * delta * delta + 1e-12 * reach;
                let c = contact(a, &pa, b, &pb);
                if brute < 0.0 {
                    overlapping += 1;
                } else {
                    apart += 1;
                }
                assert!(
                    c.gap <= brute + low && c.gap >= brute - eps,
                    "{a:?} vs {b:?} k={k}: gap {} vs sampled {brute} (ε {eps})",
                    c.gap
                );
                assert!((c.normal.length() - 1.0).abs() < 1e-12);
                let along = sat_along(&wa, &wb, c.normal);
                assert!(
                    along - c.gap <= eps && c.gap - along <= low,
                    "{a:?} vs {b:?} k={k}: sampled separation along the normal {along} vs gap {}",
                    c.gap
                );
            }
        }
    }
    assert!(apart > 250 && overlapping > 250, "{apart} apart, {overlapping} overlapping");
}

/// A disc against a curved shape: the gap is the shape's signed distance
/// of the disc's centre minus the radius (`Shape::signed_distance`: a
/// golden-section search on the parametrisation, exact to round-off), to
/// 1e-12 relative — the stated tolerance of the Newton iteration.
#[test]
fn disc_against_curved_shapes_equals_the_signed_distance() {
    let mut rnd = rng(11);
    for shape in &shapes()[1..5] {
        for k in 0..40 {
            let pb = Pose { position: DVec2::new(rnd(), rnd()), angle: 7.0 * rnd() };
            let r = 0.1 + 0.5 * rnd();
            // From 0.5 to 2 bounding radii: separated, and overlapping by less than r.
            let centre = pb.position + DVec2::from_angle(7.0 * rnd()) * (shape.bounding_radius() * (0.9 + 1.1 * rnd()));
            let pa = Pose { position: centre, angle: 0.0 };
            let c = contact(&Shape::Circle { radius: r }, &pa, shape, &pb);
            let sd = shape.signed_distance(pb.unrotate(centre - pb.position));
            if sd < 0.0 {
                continue; // the centre inside: the gap is then not sd − r
            }
            let exact = sd - r;
            assert!(
                (c.gap - exact).abs() < 1e-12 * shape.bounding_radius().max(1.0),
                "{shape:?} k={k}: {} vs {exact}",
                c.gap
            );
        }
    }
}

/// A curved shape resting above a box's top face (its support point inside
/// the face): the gap is the closed form d − h(n), h(n) = √(a²(n·e₁)² +
/// b²(n·e₂)²) for an ellipse, to 1e-12. The normal is the face normal, exact.
#[test]
fn ellipse_above_a_box_face_has_the_closed_form_gap() {
    let (a, b) = (0.5, 0.2);
    let ellipse = Shape::Ellipse { a, b };
    let floor = Shape::Box { half_extents: DVec2::new(3.0, 0.5) };
    let pb = Pose { position: DVec2::new(0.2, -0.1), angle: 0.3 };
    let up = DVec2::from_angle(0.3).rotate(DVec2::Y);
    for k in 0..20 {
        let phi = 0.31 * k as f64;
        let height = 0.5 + 0.45 + 0.01 * k as f64; // some overlap (−0.05 … ) and some gap
        let pa =
            Pose { position: pb.position + up * height + DVec2::from_angle(0.3).rotate(DVec2::X) * 0.4, angle: phi };
        let e1 = DVec2::from_angle(phi);
        let e2 = e1.perp();
        let h = (a * a * up.dot(e1).powi(2) + b * b * up.dot(e2).powi(2)).sqrt();
        let exact = height - 0.5 - h;
        let c = contact(&ellipse, &pa, &floor, &pb);
        assert!((c.gap - exact).abs() < 1e-12, "k={k}: {} vs {exact}", c.gap);
        assert!((c.normal - up).length() < 1e-12, "k={k}: {:?}", c.normal);
    }
}

/// Two equal ellipses side by side along their major axes: gap d − 2a, normal
/// along the line of centres, to 1e-12 — also overlapping by up to 0.02a
/// (less than the tips' summed radii of curvature 2b²/a = 0.18a: deeper,
/// an oblique push-out becomes shorter than the axial one).
#[test]
fn aligned_ellipses_have_the_closed_form_gap() {
    let e = Shape::Ellipse { a: 1.0, b: 0.3 };
    for k in 0..21 {
        let d = 1.98 + 0.02 * k as f64;
        let rot = DVec2::from_angle(0.7);
        let pb = Pose { position: DVec2::new(1.0, 2.0), angle: 0.7 };
        let pa = Pose { position: pb.position + rot * d, angle: 0.7 };
        let c = contact(&e, &pa, &e, &pb);
        assert!((c.gap - (d - 2.0)).abs() < 1e-12, "d={d}: {}", c.gap);
        assert!((c.normal - rot).length() < 1e-9, "d={d}: {:?}", c.normal);
    }
}

/// Units: scaling every length by 10^±3 scales the gap and the contact
/// point by the same factor and leaves the normal, to 1e-12 relative (only
/// round-off differs).
#[test]
fn gap_and_normal_do_not_depend_on_the_length_unit() {
    let scale_shape = |s: &Shape, f: f64| match s {
        Shape::Circle { radius } => Shape::Circle { radius: radius * f },
        Shape::Ellipse { a, b } => Shape::Ellipse { a: a * f, b: b * f },
        Shape::Superellipse { a, b, exponent } => Shape::Superellipse { a: a * f, b: b * f, exponent: *exponent },
        Shape::Box { half_extents } => Shape::Box { half_extents: *half_extents * f },
        Shape::Polygon { vertices } => Shape::Polygon { vertices: vertices.iter().map(|v| *v * f).collect() },
        Shape::Bar { length, width } => Shape::Bar { length: length * f, width: width * f },
        Shape::Point => Shape::Point,
    };
    let shapes = shapes();
    let mut rnd = rng(3);
    for a in &shapes[1..5] {
        for b in &shapes {
            let reach = a.bounding_radius() + b.bounding_radius();
            let pb = Pose { position: DVec2::new(rnd(), rnd()), angle: 7.0 * rnd() };
            let pa = Pose {
                position: pb.position + DVec2::from_angle(7.0 * rnd()) * (reach * (0.6 + 0.8 * rnd())),
                angle: 7.0 * rnd(),
            };
            let base = contact(a, &pa, b, &pb);
            for f in [1e-3, 1e3] {
                let s = |p: &Pose| Pose { position: p.position * f, angle: p.angle };
                let c = contact(&scale_shape(a, f), &s(&pa), &scale_shape(b, f), &s(&pb));
                assert!(
                    (c.gap - f * base.gap).abs() <= 1e-12 * f * reach,
                    "{a:?}/{b:?} ×{f}: {} vs {}",
                    c.gap,
                    f * base.gap
                );
                assert!((c.normal - base.normal).length() < 1e-9, "{a:?}/{b:?} ×{f}: normal");
                assert!((c.point - f * base.point).length() <= 1e-9 * f * reach, "{a:?}/{b:?} ×{f}: point");
            }
        }
    }
}

/// Degenerate contacts give a defined (finite, unit) normal and a finite
/// gap: coincident centres of two curved shapes, of a curved shape and a
/// polygon, two shapes touching at one point (zero-area overlap), and a
/// curved shape exactly on a polygon's corner. Where the answer is known it
/// is checked: two equal discs-like ellipses at the same centre and angle
/// overlap by their minor diameter (the shortest push-out is along the
/// minor axis, 2b); touching ones have gap 0 to 1e-12.
#[test]
fn degenerate_contacts_have_a_defined_normal() {
    let e = Shape::Ellipse { a: 1.0, b: 0.4 };
    let sq = Shape::Box { half_extents: DVec2::splat(0.5) };
    let s4 = Shape::Superellipse { a: 0.6, b: 0.6, exponent: 4.0 };
    let at = |x: f64, y: f64, angle: f64| Pose { position: DVec2::new(x, y), angle };
    let defined =
        |c: &ManifoldPoint| c.gap.is_finite() && c.normal.is_finite() && (c.normal.length() - 1.0).abs() < 1e-12;
    // Coincident centres, same angle: push-out along the minor axis, 2b deep.
    let c = contact(&e, &at(0.3, 0.2, 0.0), &e, &at(0.3, 0.2, 0.0));
    assert!(defined(&c) && (c.gap + 0.8).abs() < 1e-9 && c.normal.x.abs() < 1e-9, "{c:?}");
    for (a, b) in [(&e, &sq), (&sq, &e), (&s4, &s4), (&s4, &sq), (&e, &s4)] {
        let c = contact(a, &at(0.0, 0.0, 0.3), b, &at(0.0, 0.0, 0.3));
        assert!(defined(&c) && c.gap < 0.0, "{a:?}/{b:?} coincident: {c:?}");
    }
    // Touching at one point (zero-area overlap): tip to tip, tip on a face.
    let c = contact(&e, &at(2.0, 0.0, 0.0), &e, &at(0.0, 0.0, 0.0));
    assert!(defined(&c) && c.gap.abs() < 1e-12 && (c.normal - DVec2::X).length() < 1e-9, "{c:?}");
    let c = contact(&e, &at(0.0, 0.9, 0.0), &sq, &at(0.0, 0.0, 0.0));
    assert!(defined(&c) && c.gap.abs() < 1e-12 && (c.normal - DVec2::Y).length() < 1e-12, "{c:?}");
    // An ellipse's tip exactly on the box's corner, along the diagonal.
    let diag = DVec2::splat(std::f64::consts::FRAC_1_SQRT_2);
    let centre = DVec2::splat(0.5) + diag * 1.0;
    let c = contact(&e, &at(centre.x, centre.y, std::f64::consts::FRAC_PI_4), &sq, &at(0.0, 0.0, 0.0));
    assert!(defined(&c) && c.gap.abs() < 1e-12 && (c.normal - diag).length() < 1e-6, "{c:?}");
}

/// The smooth static surfaces the issue lists, both ways round: circle,
/// ellipse and superellipse, outside and inside (a bowl).
fn smooth_surfaces() -> Vec<(&'static str, mx2d::surface::SurfaceGeometry)> {
    use mx2d::surface::SurfaceGeometry as S;
    let c = DVec2::ZERO;
    vec![
        ("circle", S::Circle { center: c, radius: 3.0, inside: false }),
        ("circle inside", S::Circle { center: c, radius: 3.0, inside: true }),
        ("ellipse", S::Ellipse { center: c, a: 4.0, b: 2.0, inside: false }),
        ("ellipse inside", S::Ellipse { center: c, a: 4.0, b: 2.5, inside: true }),
        ("superellipse", S::Superellipse { center: c, a: 3.0, b: 2.0, exponent: 4.0, inside: false }),
        ("superellipse inside", S::Superellipse { center: c, a: 4.0, b: 3.0, exponent: 4.0, inside: true }),
    ]
}

/// The minimum of `f` over the points of `outline` (a closed sampled
/// curve): every 10th point first, then every point within 20 of the three
/// smallest of those (a smooth function along the outline: its minimum lies
/// next to a small coarse value). Ten times fewer evaluations than a full scan.
fn sampled_minimum(outline: &[DVec2], f: impl Fn(DVec2) -> f64) -> f64 {
    let n = outline.len();
    let mut coarse: Vec<(f64, usize)> = (0..n).step_by(10).map(|i| (f(outline[i]), i)).collect();
    coarse.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut best = f64::INFINITY;
    for &(_, i) in coarse.iter().take(3) {
        for d in 0..=40 {
            best = best.min(f(outline[(i + n + d - 20) % n]));
        }
    }
    best
}

/// Narrowphase of every body shape against every smooth curved surface
/// (issue 7: "every shape against every static surface", each against an
/// independent computation; the line is tested in
/// `src/contact/narrowphase/surface.rs`): the smallest gap equals the
/// minimum, over 10,000 samples of the body's outline, of the surface's
/// signed distance (`SurfaceGeometry::closest`; the round shapes'
/// narrowphase finds its deepest point by its own support-point iteration).
/// At the minimum both satisfy the same condition (the outline normal
/// opposite the surface normal), so they agree to the sampling error plus
/// 1e-9 m wherever the gap matters for contact (below 0.1 m: overlapping by
/// up to 5 cm, or touching within 2 cm); farther off only "no contact" is
/// checked (gap ≥ 0.1 m: the iteration stops early there, e.g. 8e-7 m high at
/// 0.8 m). Every returned point has a finite gap and a unit normal.
#[test]
fn every_shape_against_every_smooth_surface_matches_outline_sampling() {
    use mx2d::contact::narrowphase::surface::{collide_surface, surface_gap};
    let mut out = Vec::new();
    let mut worst = 0.0f64;
    let mut compared = 0;
    for shape in shapes() {
        let (outline, sampling) = sampled_with(&shape, 10_000);
        let reach = shape.bounding_radius();
        for (label, surface) in smooth_surfaces() {
            for k in 0..4 {
                // A place on the surface: the closest point to a probe.
                let phi = 0.3 + k as f64 * std::f64::consts::TAU / 4.0;
                let foot = surface.closest(1.5 * DVec2::new(phi.cos(), phi.sin()));
                for clearance in [-0.05, 0.02] {
                    for angle in [0.7, 2.1] {
                        let pose = Pose { position: foot.point + foot.normal * (reach + clearance), angle };
                        let gap = surface_gap(&shape, &pose, &surface, &mut out);
                        let brute = sampled_minimum(&outline, |p| surface.closest(pose.apply(p)).distance);
                        let at = format!("{label}, {shape:?} at {pose:?}: gap {gap}, sampled {brute}");
                        if brute < 0.1 {
                            compared += 1;
                            worst = worst.max((gap - brute).abs());
                            assert!((gap - brute).abs() <= sampling + 1e-9, "{at} (sampling error {sampling:e})");
                        } else {
                            assert!(gap >= 0.1 - sampling - 1e-9, "{at}");
                        }
                        out.clear();
                        collide_surface(&shape, &pose, &surface, f64::INFINITY, &mut out);
                        assert!(
                            out.iter().all(|c| c.gap.is_finite() && (c.normal.length() - 1.0).abs() < 1e-12),
                            "{at}: {out:?}"
                        );
                    }
                }
            }
        }
    }
    assert!(compared > 100, "only {compared} poses near contact: the test would prove little");
    eprintln!("{compared} poses near contact, largest difference {worst:e} m");
}

/// Degenerate body–surface contacts give a defined (finite, unit) normal and
/// a finite gap (issue 7, bad input): a disc centred exactly on a polyline's
/// convex and concave corners, a box corner exactly on a corner, a disc at
/// the centre of a circular bowl (every direction is nearest) and an ellipse
/// at the centre of an elliptical bowl.
#[test]
fn degenerate_surface_contacts_have_a_defined_normal() {
    use mx2d::contact::narrowphase::surface::collide_surface;
    use mx2d::surface::SurfaceGeometry as S;
    let polyline = S::Polyline { points: vec![DVec2::new(-2.0, 0.0), DVec2::new(0.0, -1.0), DVec2::new(2.0, 0.0)] };
    let roof = S::Polyline { points: vec![DVec2::new(-2.0, -1.0), DVec2::new(0.0, 0.0), DVec2::new(2.0, -1.0)] };
    let bowl = S::Circle { center: DVec2::new(1.0, 2.0), radius: 3.0, inside: true };
    let oval = S::Ellipse { center: DVec2::ZERO, a: 3.0, b: 2.0, inside: true };
    let disc = Shape::Circle { radius: 0.5 };
    let square = Shape::Box { half_extents: DVec2::splat(0.5) };
    let ellipse = Shape::Ellipse { a: 1.0, b: 0.5 };
    let at = |x: f64, y: f64, angle: f64| Pose { position: DVec2::new(x, y), angle };
    let cases = [
        ("disc on the concave corner", &disc, at(0.0, -1.0, 0.0), &polyline),
        ("disc on the convex corner", &disc, at(0.0, 0.0, 0.0), &roof),
        ("box corner on the convex corner", &square, at(0.0, 0.5_f64.hypot(0.5), std::f64::consts::FRAC_PI_4), &roof),
        (
            "box corner on the concave corner",
            &square,
            at(0.0, -1.0 + 0.5_f64.hypot(0.5), std::f64::consts::FRAC_PI_4),
            &polyline,
        ),
        ("disc at the bowl's centre", &disc, at(1.0, 2.0, 0.0), &bowl),
        ("ellipse at the oval's centre", &ellipse, at(0.0, 0.0, 0.0), &oval),
        ("ellipse at the oval's centre, turned", &ellipse, at(0.0, 0.0, std::f64::consts::FRAC_PI_2), &oval),
    ];
    for (label, shape, pose, surface) in cases {
        let mut out = Vec::new();
        collide_surface(shape, &pose, surface, f64::INFINITY, &mut out);
        assert!(!out.is_empty(), "{label}: no contact point");
        for c in &out {
            assert!(
                c.gap.is_finite() && c.point.is_finite() && (c.normal.length() - 1.0).abs() < 1e-12,
                "{label}: {c:?}"
            );
        }
    }
}

/// A polyline's convex corner (a peak of the solid) poking into a body's
/// flat side is a contact: a wide box, a flat ellipse and a flat
/// superellipse lying across a roof's ridge, 5 cm into it, have gap −0.05 m
/// (a disc does, by its centre's distance). Found by the audit of 27 Nov
/// 2026 (docs/requirements.md): polygons were tested vertex by vertex
/// against the surface and the round shapes' support-point iteration
/// started from the normal facing the centre; both missed the ridge and
/// reported +0.40, +0.62 and +0.42 m, so such a body sank through a ridge.
/// The surface narrowphase now also tests the polyline's ridges.
#[test]
fn a_polyline_ridge_inside_a_flat_side_is_a_contact() {
    use mx2d::contact::narrowphase::surface::surface_gap;
    use mx2d::surface::SurfaceGeometry as S;
    let roof = S::Polyline { points: vec![DVec2::new(-2.0, -1.0), DVec2::new(0.0, 0.0), DVec2::new(2.0, -1.0)] };
    let mut out = Vec::new();
    for (shape, half_height) in [
        (Shape::Circle { radius: 0.5 }, 0.5),
        (Shape::Box { half_extents: DVec2::new(1.0, 0.1) }, 0.1),
        (Shape::Ellipse { a: 1.3, b: 0.4 }, 0.4),
        (Shape::Superellipse { a: 1.0, b: 0.3, exponent: 4.0 }, 0.3),
    ] {
        for depth in [0.05, -0.001] {
            let pose = Pose { position: DVec2::new(0.0, half_height - depth), angle: 0.0 };
            let gap = surface_gap(&shape, &pose, &roof, &mut out);
            assert!((gap + depth).abs() < 1e-9, "{shape:?} {depth} m into the ridge: gap {gap}");
        }
    }
}
