//! `RandomBox` spawns balls that do not overlap — by random placement when
//! the box is roomy, by a jittered hexagonal lattice when it is crowded —
//! the same seed gives the same balls, and a box that cannot hold the count
//! is refused at its place with the packing bound named. Emitters: the
//! step visits only the released balls still in the world (the release
//! cursor), on both backends, at every pool size.

mod common;

use std::sync::Arc;

use mx2d::gpu::GpuOptions;
use mx2d::population::gpu::GpuPopulation;
use mx2d::population::{Population, cpu, state};
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

/// A spawner that places balls outside the world's bounds is refused at
/// the spawner, with how far it reaches and the bounds: such balls would
/// leave at the first step, and until then the grid clamps them into its
/// edge cells, whose scans are quadratic in their balls (`mx2d check
/// scenes/vortex.ron --set population.count=4000000` ran for 348 s with
/// 2·10⁶ balls in the edge cells; now it is refused before any ball exists).
/// Grids, random boxes and emitters alike; spawners inside pass.
#[test]
fn a_spawner_past_the_world_bounds_is_refused_with_its_reach() {
    let path = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/vortex.ron"));
    let err = Scene::load(path, &["population.count=4000000".to_string()])
        .and_then(|scene| scene.build_world().map(|_| ()))
        .expect_err("the grid reaches past the bounds");
    let text = err.to_string();
    assert_eq!(err.field, "population.spawn[0]", "{text}");
    assert!(
        text.contains("4000000 balls in 2000 columns reach (-59.94, -59.94) … (179.94, 179.94)")
            && text.contains("(-95, -95) … (95, 95)"),
        "{text}"
    );
    // The shipped size fits, and so does a smaller one.
    for count in ["1000000", "10000"] {
        let scene = Scene::load(path, &[format!("population.count={count}")]).unwrap_or_else(|e| panic!("{e}"));
        assert!(scene.build_world().is_ok(), "vortex with {count} balls");
    }
    // A random box half outside: refused at its spawner.
    let err = random_box(10, 150.0, "radius: 0.25", 1).expect_err("the box reaches past the bounds");
    assert_eq!(err.field, "population.spawn[0]", "{err}");
    assert!(err.to_string().contains("its box (-150, -150) … (150, 150)"), "{err}");
    // An emitter outside: refused.
    let text = "Scene(name: \"emitter\", gravity: (0.0, -9.81), dt: 0.01,
           population: Population(radius: 0.01,
             spawn: [Emitter(position: (0.0, 20.0), velocity: (0.0, -5.0), width: 0.5, rate: 100.0, count: 10)],
             bounds: Rect(min: (-10.0, -10.0), max: (10.0, 10.0))))";
    let err = Scene::parse(text, "emitter.ron").and_then(|s| s.build_world().map(|_| ())).expect_err("refused");
    assert!(err.to_string().contains("it emits at (0, 20)"), "{err}");
}

/// A `Grid` packed so close that one cell of the population's grid would
/// hold more than 64 of its balls is refused at its spacing, with the
/// spacing that would pass: a cell's scans are quadratic in its balls
/// (vortex.ron at spacing 0.001 m: 15,876 a cell, and `mx2d check` did not
/// return in minutes). Just above the bound, and any spacing for a grid of
/// at most 64 balls, build. The same bound holds an emitter's releases of
/// one step.
#[test]
fn a_grid_crowding_the_cells_is_refused_at_its_spacing() {
    let load = |name: &str, sets: &[&str]| {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes").join(name);
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        Scene::load(&path, &sets).and_then(|scene| scene.build_world().map(|_| ()))
    };
    let err = load("vortex.ron", &["population.spawn[0].spacing=0.001"]).expect_err("crowded");
    assert_eq!(err.field, "population.spawn[0].spacing", "{err}");
    assert!(err.to_string().contains("15876 balls") && err.to_string().contains("above 0.015625 m"), "{err}");
    // balls_box: cells of 1.25 m (2 r + skin), so the bound is 1.25 / 8.
    let err = load("balls_box.ron", &["population.spawn[0].spacing=0.15625"]).expect_err("81 a cell");
    assert!(err.to_string().contains("81 balls"), "{err}");
    load("balls_box.ron", &["population.spawn[0].spacing=0.157"]).unwrap_or_else(|e| panic!("{e}"));
    load("balls_box.ron", &["population.spawn[0].spacing=0.001", "population.count=64"])
        .unwrap_or_else(|e| panic!("{e}"));
    // An emitter's step of releases starts on its nozzle's line: 10⁷ balls/s
    // from a point put 10⁵ balls a step into one cell (15.8 s a step in the
    // neighbour lists). Refused at its rate; 6,400/s (64 a step) builds.
    let emitter = |rate: &str| {
        let text = format!(
            "Scene(name: \"emit\", gravity: (0.0, -9.81), dt: 0.01,
               population: Population(radius: 0.01,
                 spawn: [Emitter(position: (0.0, 0.0), velocity: (0.0, -5.0), width: 0.0, rate: {rate}, count: 200000)],
                 bounds: Rect(min: (-10.0, -10.0), max: (10.0, 10.0))))"
        );
        Scene::parse(&text, "emit.ron").and_then(|scene| scene.build_world().map(|_| ()))
    };
    let err = emitter("10000000.0").expect_err("crowded nozzle");
    assert_eq!(err.field, "population.spawn[0].rate", "{err}");
    assert!(err.to_string().contains("100000 balls a step") && err.to_string().contains("at most 6400/s"), "{err}");
    emitter("6400.0").unwrap_or_else(|e| panic!("{e}"));
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

/// An emitter dropping one ball per step (dt = 0.01 s, rate 100/s) of r =
/// 0.01 m at 5 m/s downwards from a nozzle 0.5 m wide: consecutive balls are
/// 5 cm apart vertically, never touching (2r = 2 cm). With `kill`, balls are
/// removed 1 m below the nozzle (about 18 steps of flight).
fn emitter(count: u64, kill: bool, extra_spawn: &str) -> Population {
    // With the kill region, a small world (its grid of 2 cm cells is what a
    // GPU step on lavapipe costs most); without, room for 1 s of free fall.
    let (kill, bounds) = if kill {
        ("kill: [Rect(min: (-5.0, -5.0), max: (5.0, -1.0))],", "Rect(min: (-1.0, -2.0), max: (5.0, 2.0))")
    } else {
        ("", "Rect(min: (-10.0, -10.0), max: (10.0, 10.0))")
    };
    let text = format!(
        "Scene(name: \"emitter\", gravity: (0.0, -9.81), dt: 0.01,
           population: Population(radius: 0.01,
             spawn: [{extra_spawn}Emitter(position: (0.0, 0.0), velocity: (0.0, -5.0), width: 0.5, rate: 100.0,
                     count: {count}, seed: 3)],
             {kill}
             bounds: {bounds}))"
    );
    Scene::parse(&text, "emitter.ron").unwrap().build_world().unwrap().population.unwrap()
}

fn bits(p: &Population, range: std::ops::Range<usize>) -> Vec<(u32, u32, u32, u32, u32)> {
    range
        .map(|i| {
            let (x, v) = (p.position[i], p.velocity[i]);
            (x.x.to_bits(), x.y.to_bits(), v.x.to_bits(), v.y.to_bits(), p.state[i])
        })
        .collect()
}

/// The cost bound, counted not timed: after s steps the emitter has
/// released s + 1 balls (ball k is due at k·dt, the first at 0), and the
/// step's kernels have visited exactly Σ (released balls) = Σ_{s=1..S} (s + 1)
/// ball slots — 5,150 for S = 100, not S·N = 200,000 as when every step
/// visited the pending balls. The pending tail is untouched, bit for bit.
#[test]
fn an_emitter_step_visits_only_the_released_balls() {
    let built = emitter(2000, false, "");
    let mut pop = built.clone();
    assert_eq!(pop.live_range(), 0..1, "ball 0 is due at t = 0");
    let steps = 100u64;
    for s in 1..=steps {
        cpu::step(&mut pop, 0.01).unwrap();
        assert_eq!(pop.live_range(), 0..(s as usize + 1), "after step {s}");
    }
    assert_eq!(pop.ball_visits(), steps * (steps + 1) / 2 + steps);
    let released = steps as usize + 1;
    assert!(pop.state[..released].iter().all(|&s| s == state::ALIVE));
    assert_eq!(bits(&pop, released..2000), bits(&built, released..2000), "pending balls were touched");
    // The pending balls change nothing: the same emitter cut to the balls
    // released so far steps to the same bits.
    let mut short = emitter(released as u64, false, "");
    for _ in 0..steps {
        cpu::step(&mut short, 0.01).unwrap();
    }
    assert_eq!(bits(&pop, 0..released), bits(&short, 0..released));
}

/// Balls leave (a kill region) in about the order they came, so the
/// window's start follows the release cursor: the balls in flight, about
/// 1 m / 5–10 m/s ≈ 18 steps of them, are all a step visits — 400 steps of
/// a 10⁴-ball emitter visit under 25 balls per step, not 10⁴.
#[test]
fn removed_balls_leave_the_window() {
    let mut pop = emitter(10_000, true, "");
    let steps = 400;
    for _ in 0..steps {
        cpu::step(&mut pop, 0.01).unwrap();
        // Free fall from 5 m/s: 1 m in 0.172 s, 18 steps; + 1 for the
        // ball released this step and 1 for rounding.
        assert!(pop.live_range().len() <= 20, "window {:?} at step {}", pop.live_range(), pop.steps);
    }
    let stats = pop.stats();
    assert_eq!(stats.killed as usize, pop.live_range().start, "every ball before the window was removed");
    assert!(stats.killed > 350, "{stats:?}");
    assert!(pop.ball_visits() <= 20 * steps, "{} visits", pop.ball_visits());
}

/// Balls are sorted by release step at build: a grid listed after an
/// emitter comes first (its balls are in the world at t = 0), and the
/// emitter's balls keep their order.
#[test]
fn balls_are_ordered_by_release_step() {
    let pop = emitter(50, false, "Grid(origin: (3.0, 0.0), count: 4, spacing: 0.1), ");
    // Ordered as the emitter's 50 then the grid's 4 in the file.
    assert!(pop.release_step.is_sorted());
    assert_eq!(pop.live_range(), 0..5, "4 grid balls and the emitter's first");
    assert!(pop.position[..4].iter().all(|p| p.x > 2.9), "grid balls first");
    assert!(pop.position[4..].iter().all(|p| p.x.abs() <= 0.25), "then the emitter's, from its nozzle");
    assert!(pop.state[..5].iter().all(|&s| s == state::ALIVE));
    assert!(pop.state[5..].iter().all(|&s| s == state::PENDING));
}

/// The windowed kernels give the same bits at every rayon pool size.
#[test]
fn windowed_step_is_the_same_at_every_pool_size() {
    common::threads::assert_same_at_every_pool_size("emitter with a kill region, 60 steps", || {
        let mut pop = emitter(1000, true, "Grid(origin: (3.0, 0.0), count: 200, spacing: 0.1), ");
        for _ in 0..60 {
            cpu::step(&mut pop, 0.01).unwrap();
        }
        (bits(&pop, 0..pop.len()), pop.live_range(), pop.ball_visits())
    });
}

/// The GPU dispatches the same live range: after 90 steps (read back every
/// 30, when the window's start moves) its balls match the CPU twin's —
/// states exactly, positions and velocities within 1e-5 relative (free
/// flight, the same f32 formulas: a few ulps of fused multiply-adds per
/// step, ~1e-7 each over 90 steps) — and the pending balls are untouched.
#[test]
fn the_gpu_steps_the_same_window() {
    let Some(ctx) = common::gpu(GpuOptions::default()) else { return };
    let built = emitter(300, true, "");
    let mut on_cpu = built.clone();
    let mut on_gpu = built.clone();
    let mut gpu = GpuPopulation::new(Arc::new(ctx), &on_gpu).unwrap();
    for s in 1..=90 {
        cpu::step(&mut on_cpu, 0.01).unwrap();
        gpu.step(&mut on_gpu, 0.01).unwrap();
        if s % 30 == 0 {
            gpu.read_back(&mut on_gpu).unwrap();
            assert_eq!(on_gpu.live_range(), on_cpu.live_range(), "step {s}");
        }
    }
    assert!(on_cpu.live_range().start > 60, "{:?}", on_cpu.live_range());
    for i in 0..built.len() {
        assert_eq!(on_gpu.state[i], on_cpu.state[i], "ball {i}");
        let (xc, xg) = (on_cpu.position[i], on_gpu.position[i]);
        let (vc, vg) = (on_cpu.velocity[i], on_gpu.velocity[i]);
        assert!((xg - xc).length() <= 1e-5 * xc.length().max(1.0), "ball {i}: {xg} on the GPU, {xc} on the CPU");
        assert!((vg - vc).length() <= 1e-5 * vc.length().max(1.0), "ball {i}: {vg} on the GPU, {vc} on the CPU");
    }
    let tail = on_cpu.live_range().end..built.len();
    assert_eq!(bits(&on_gpu, tail.clone()), bits(&built, tail));
}

/// The solver's fields out of range are refused at build, naming the field
/// (`population.<field>`) and the file, never stepped: substeps and
/// iterations 0, relaxation 2, a push-out bound of 0, −1, NaN (RON reads
/// `NaN`) or 1e-50 (0 in the step's f32); `inf` (unbounded) is accepted.
#[test]
fn solver_fields_out_of_range_are_refused_with_the_field_named() {
    let build = |field: &str| {
        let text = format!(
            "Scene(name: \"f\", gravity: (0.0, -9.81), dt: 0.01,\n  population: Population(radius: 0.5, {field},\n    \
             spawn: [Grid(origin: (0.0, 1.0), count: 4, spacing: 1.25)],\n    \
             bounds: Rect(min: (-10.0, -10.0), max: (10.0, 10.0))))"
        );
        Scene::parse(&text, "f.ron").and_then(|s| s.build_world())
    };
    for (field, name) in [
        ("substeps: 0", "population.substeps"),
        ("iterations: 0", "population.iterations"),
        ("relaxation: 2.0", "population.relaxation"),
        ("push_out: 0.0", "population.push_out"),
        ("push_out: -1.0", "population.push_out"),
        ("push_out: NaN", "population.push_out"),
        ("push_out: 1e-50", "population.push_out"),
    ] {
        let err = build(field).err().unwrap_or_else(|| panic!("{field} was accepted"));
        let text = err.to_string();
        assert_eq!(err.field, name, "{field}: {text}");
        assert!(text.contains("f.ron"), "{field}: the file is not named: {text}");
    }
    let pop = build("push_out: inf").unwrap_or_else(|e| panic!("{e}")).population.expect("a population");
    assert!(pop.params.push_out.is_infinite());
    let pop = build("push_out: 0.05").unwrap_or_else(|e| panic!("{e}")).population.expect("a population");
    assert_eq!(pop.params.push_out, 0.05);
}

/// An unknown spawner is a parse error at its place that names the enum as
/// the scene format does (`Spawn`), not the Rust type (`SpawnDef`, before),
/// and lists the spawners there are.
#[test]
fn an_unknown_spawner_is_named_as_in_the_scene_format() {
    let text = "Scene(name: \"f\", dt: 0.01,\n  population: Population(radius: 0.1,\n    \
                spawn: [Lattice(count: 3)],\n    bounds: Rect(min: (0.0, 0.0), max: (1.0, 1.0))))";
    let err = Scene::parse(text, "f.ron").expect_err("an unknown spawner was accepted");
    let shown = err.to_string();
    assert_eq!((err.line, err.field.as_str()), (3, "population.spawn[0]"), "{shown}");
    assert!(shown.contains("enum `Spawn`") && !shown.contains("SpawnDef"), "{shown}");
    assert!(shown.contains("`Grid`, `RandomBox`, or `Emitter`"), "{shown}");
}

/// Extreme values in the validation messages are shown in exponent form:
/// f64's `Display` has none, so `radius: 1e50` was refused with a
/// 51-digit number and a mechanism body's `mass: -2.5e90` with a 91-digit
/// one.
#[test]
fn extreme_values_in_error_messages_are_shown_in_exponent_form() {
    let population = "Scene(name: \"f\", dt: 0.01,\n  population: Population(radius: 1e50,\n    \
                      spawn: [Grid(origin: (0.0, 1.0), count: 3, spacing: 1.0)],\n    \
                      bounds: Rect(min: (0.0, 0.0), max: (1.0, 1.0))))";
    let body =
        "Scene(name: \"b\", dt: 0.01,\n  bodies: [Body(name: \"a\", mass: -2.5e90, shape: Circle(radius: 1.0))])";
    let velocity = population
        .replace("radius: 1e50", "radius: 0.1")
        .replace("spacing: 1.0)", "spacing: 1.0, velocity: (1e30, 2.0))");
    for (text, field, shown) in [
        (population, "population.radius", "got 1e50"),
        (velocity.as_str(), "population.spawn[0].velocity", "got (1e30, 2)"),
        (body, "bodies[0].mass", "got -2.5e90"),
    ] {
        let err = Scene::parse(text, "f.ron")
            .and_then(|s| s.build_world())
            .err()
            .unwrap_or_else(|| panic!("{field} was accepted"));
        let message = err.to_string();
        assert_eq!(err.field, field, "{message}");
        assert!(message.contains(shown) && message.len() < 200, "{message}");
    }
}
