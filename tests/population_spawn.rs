//! `RandomBox` spawns balls that do not overlap — by random placement when
//! the box is roomy, by a jittered hexagonal lattice when it is crowded —
//! the same seed gives the same balls, and a box that cannot hold the count
//! is refused at its place with the packing bound named.

use mx2d::population::Population;
use mx2d::scene::Scene;

fn random_box(count: u64, half: f64, radius: &str, seed: u64) -> Result<Population, mx2d::scene::SceneError> {
    let text = format!(
        "Scene(name: \"box\", gravity: (0.0, 0.0), dt: 0.01,\n  population: Population({radius},\n    \
         spawn: [RandomBox(min: (-{half}, -{half}), max: ({half}, {half}), count: {count}, seed: {seed})],\n    \
         bounds: Rect(min: (-100.0, -100.0), max: (100.0, 100.0))))"
    );
    let world = Scene::parse(&text, "box.ron")?.build_world()?;
    Ok(world.population.expect("the scene has a population"))
}

/// Every pair, by brute force: centres at least r_i + r_j apart, less the
/// f32 rounding of the stored coordinates (|x| ≤ 10 m: ulp 1e-6, so 1e-5 m
/// is ten roundings; overlaps the generator could make are ≥ 0 of a radius
/// of 0.05 to 0.5 m — orders above it). Centres inside the box.
fn assert_no_overlap(pop: &Population, half: f32) {
    let n = pop.len();
    for i in 0..n {
        let p = pop.position[i];
        assert!(p.abs().max_element() <= half + 1e-5, "ball {i} at {p} is outside the box ±{half}");
        for j in 0..i {
            let d = p.distance(pop.position[j]);
            let contact = pop.radius[i] + pop.radius[j];
            assert!(d >= contact - 1e-5, "balls {i} and {j} overlap: {d} apart, radii sum {contact}");
        }
    }
}

/// Balls in each quadrant of the box: the generator spreads them over the
/// whole box (the lattice picks its sites at random, it does not fill the
/// bottom rows first).
fn quadrants(pop: &Population) -> [usize; 4] {
    let mut q = [0; 4];
    for p in &pop.position {
        q[usize::from(p.x > 0.0) + 2 * usize::from(p.y > 0.0)] += 1;
    }
    q
}

#[test]
fn sparse_random_box_has_no_overlap_and_is_spread() {
    // 2,000 balls of r = 0.1 in a 20 × 20 m box: 3 % of it covered, random
    // placement finds room at once.
    let pop = random_box(2000, 10.0, "radius: 0.1", 3).unwrap();
    assert_eq!(pop.len(), 2000);
    assert_no_overlap(&pop, 10.0);
    // Binomial(2000, 1/4) per quadrant: sd ≈ 19; 100 is over five sd.
    for (k, &c) in quadrants(&pop).iter().enumerate() {
        assert!((c as i64 - 500).abs() < 100, "quadrant {k}: {c} of 2000");
    }
}

#[test]
fn crowded_random_box_uses_the_lattice_without_overlap() {
    // 1,500 balls of r = 0.25 with centres in a 20 × 20 m box: the discs
    // cover 0.70 of the grown box (20.5² m²), above random placement's jamming
    // fraction (≈ 0.55): the jittered hexagonal lattice places them.
    let pop = random_box(1500, 10.0, "radius: 0.25", 5).unwrap();
    let covered = 1500.0 * std::f64::consts::PI * 0.25f64.powi(2) / 20.5f64.powi(2);
    assert!(covered > 0.6, "{covered}");
    assert_no_overlap(&pop, 10.0);
    for (k, &c) in quadrants(&pop).iter().enumerate() {
        assert!((c as i64 - 375).abs() < 90, "quadrant {k}: {c} of 1500");
    }
    // Radii drawn in [0.1, 0.3]: each pair kept r_i + r_j apart.
    let pop = random_box(1000, 10.0, "radius: 0.1, radius_max: 0.3", 9).unwrap();
    assert!(pop.radius.iter().any(|&r| r > 0.25) && pop.radius.iter().any(|&r| r < 0.15));
    assert_no_overlap(&pop, 10.0);
}

#[test]
fn random_box_is_deterministic_for_a_seed() {
    for (count, radius) in [(500, 0.1), (1500, 0.25)] {
        let r = format!("radius: {radius}");
        let a = random_box(count, 10.0, &r, 42).unwrap();
        let b = random_box(count, 10.0, &r, 42).unwrap();
        let c = random_box(count, 10.0, &r, 43).unwrap();
        let bits = |p: &Population| p.position.iter().map(|v| (v.x.to_bits(), v.y.to_bits())).collect::<Vec<_>>();
        assert_eq!(bits(&a), bits(&b), "same seed, same balls ({count})");
        assert_ne!(bits(&a), bits(&c), "another seed, other balls ({count})");
        assert_eq!(a.velocity, b.velocity);
    }
}

/// Past the capacity the scene is refused before anything is allocated:
/// positioned at the spawner's `count`, naming Oler's bound. Balls of
/// r = 0.25 with centres in a 20 × 20 m box: the lattice of spacing 0.5
/// holds 41·24 + 40·23 = 1,904 sites and Oler's bound is
/// ⌊(2/√3)·40² + 80 + 1⌋ = 1,928; 2,500 are over both.
#[test]
fn a_box_too_small_for_its_count_is_refused_with_the_bound() {
    let started = std::time::Instant::now();
    let err = random_box(2500, 10.0, "radius: 0.25", 1).expect_err("refused");
    let text = err.to_string();
    assert_eq!(err.field, "population.spawn[0].count", "{text}");
    assert_eq!(err.line, 3, "{text}");
    assert!(text.contains("Oler") && text.contains("1928"), "{text}");
    // A billion balls in a small box are refused as fast.
    let err = random_box(1_000_000_000, 1.0, "radius: 0.1", 1).expect_err("refused");
    assert!(err.to_string().contains("do not fit"), "{err}");
    assert!(started.elapsed().as_secs() < 5, "refusing took {:?}", started.elapsed());
    assert!(oler_consistent());
}

/// The bound is an upper bound of what the generator reaches: the lattice's
/// site count never exceeds Oler's bound (checked over box shapes).
fn oler_consistent() -> bool {
    use mx2d::population::spawn::{check_random_box, oler_bound};
    for (w, h) in [(1.0, 1.0), (20.0, 20.0), (3.3, 17.1), (0.0, 5.0), (100.0, 0.5)] {
        let bound = oler_bound(w, h, 0.25).floor() as u64;
        let low = glam::DVec2::ZERO;
        let high = glam::DVec2::new(w, h);
        // The largest count accepted is ≤ the bound.
        let mut accepted = 0;
        while check_random_box(low, high, accepted + 1, 0.25).is_ok() {
            accepted += 1;
            if accepted > bound + 1 {
                return false;
            }
        }
        assert!(accepted >= 1 && accepted <= bound, "{w} × {h}: accepted {accepted}, Oler {bound}");
    }
    true
}
