//! Sleeping in the population tier (`population.sleep_time`,
//! `population.sleep_speed`; the module doc of `src/population/mod.rs`,
//! "Sleeping"), on the CPU twin and, where an adapter is found, on the GPU:
//! a ball at rest falls asleep after `sleep_time` and not before; a sleeper
//! hit by a ball wakes and the impact comes out as between awake balls; the
//! sleep timers move with the re-sort and are the same at every pool size.

mod common;

use std::sync::Arc;

use common::threads::assert_same_at_every_pool_size;
use mx2d::gpu::GpuOptions;
use mx2d::population::gpu::GpuPopulation;
use mx2d::population::{Population, cpu};
use mx2d::scene::Scene;

const DT: f32 = 1.0 / 60.0;

fn population(text: &str, overrides: &[String]) -> Population {
    let scene = Scene::parse_with_overrides(text, "sleep.ron", overrides).unwrap_or_else(|e| panic!("{e}"));
    scene.build_world().unwrap_or_else(|e| panic!("{e}")).population.expect("a population")
}

/// One ball (r = 0.1 m) set on a floor at rest, sleeping after 0.5 s.
const RESTING: &str = "Scene(name: \"rest\", gravity: (0.0, -9.81), dt: 0.016666666666666666,
   surfaces: [Surface(geometry: Line(point: (0.0, 0.0), normal: (0.0, 1.0)))],
   population: Population(radius: 0.1, restitution: 0.5, friction: 0.3, sleep_time: 0.5,
     spawn: [Grid(origin: (0.0, 0.1), count: 1, spacing: 1.0)],
     bounds: Rect(min: (-5.0, -1.0), max: (5.0, 10.0))))";

/// A step function for either backend.
type Stepper = Box<dyn FnMut(&mut Population)>;

fn cpu_stepper() -> Stepper {
    Box::new(|pop: &mut Population| cpu::step(pop, DT).unwrap_or_else(|e| panic!("{e}")))
}

/// The GPU's step with a read-back after each (the test reads every step).
fn gpu_stepper(ctx: &Arc<mx2d::gpu::GpuContext>, pop: &Population) -> Stepper {
    let mut gpu = GpuPopulation::new(ctx.clone(), pop).unwrap_or_else(|e| panic!("{e}"));
    Box::new(move |pop: &mut Population| {
        gpu.step(pop, DT).unwrap_or_else(|e| panic!("{e}"));
        gpu.read_back(pop).unwrap_or_else(|e| panic!("{e}"));
    })
}

/// The ball resting on the floor: slow from its first step, it must be
/// awake for its first 29 steps (29/60 s < 0.5 s) and asleep from step 30
/// on (30 steps of 1/60 s summed in f32: 0.5 within rounding, and the
/// timer compares ≥, so step 30 or 31 — one step of slack for the f32
/// sum), with velocity and spin exactly 0 and the position kept; the
/// timer counts while it is slow. A sleeper stays put for a further
/// second (no gravity acts on it).
fn falls_asleep_after_sleep_time(mut step: Stepper, mut pop: Population, backend: &str) {
    let speed = pop.params.sleep_speed;
    assert!(speed > 0.0 && pop.params.sleep_time == 0.5, "{:?}", pop.params);
    let mut fell_asleep = None;
    for k in 1..=120u32 {
        step(&mut pop);
        let asleep = pop.params.asleep(pop.rest[0]);
        assert!(pop.velocity[0].length() < speed, "{backend}: step {k}: the ball moves at {}", pop.velocity[0]);
        if k < 30 {
            assert!(!asleep, "{backend}: asleep after {k} steps, before sleep_time");
            assert!((pop.rest[0] - k as f32 * DT).abs() < 1e-5, "{backend}: step {k}: rest timer {}", pop.rest[0]);
        }
        if asleep && fell_asleep.is_none() {
            fell_asleep = Some((k, pop.position[0]));
        }
        if let Some((_, at)) = fell_asleep {
            assert!(asleep, "{backend}: step {k}: the sleeper woke with nothing touching it");
            assert_eq!(pop.velocity[0], glam::Vec2::ZERO, "{backend}: step {k}: a sleeper's velocity");
            assert_eq!(pop.omega[0], 0.0, "{backend}: step {k}: a sleeper's spin");
            assert_eq!(pop.position[0], at, "{backend}: step {k}: the sleeper moved");
        }
    }
    let (k, at) = fell_asleep.unwrap_or_else(|| panic!("{backend}: not asleep after 2 s at rest"));
    assert!((30..=31).contains(&k), "{backend}: asleep after {k} steps, sleep_time is 30");
    assert!((at.y - 0.1).abs() < 2e-3 * 0.1, "{backend}: asleep at height {} (r = 0.1)", at.y);
    assert_eq!(pop.stats().asleep, 1);
}

#[test]
fn a_ball_resting_on_the_floor_falls_asleep_after_sleep_time_and_not_before() {
    let pop = population(RESTING, &[]);
    falls_asleep_after_sleep_time(cpu_stepper(), pop, "cpu");
}

#[test]
fn a_ball_resting_on_the_floor_falls_asleep_after_sleep_time_on_the_gpu() {
    let Some(ctx) = common::gpu(GpuOptions::default()) else { return };
    let ctx = Arc::new(ctx);
    let pop = population(RESTING, &[]);
    falls_asleep_after_sleep_time(gpu_stepper(&ctx, &pop), pop, "gpu");
}

/// A dropped ball does not fall asleep at the tops of its bounces (it is
/// slower than sleep_speed there for a few milliseconds, not 0.5 s), and
/// sleeping off (`sleep_time: 0`) keeps every timer at 0.
#[test]
fn a_bouncing_ball_stays_awake_and_sleep_time_zero_is_off() {
    let overrides = ["population.spawn[0].origin=(0.0, 2.0)".to_string()];
    let mut pop = population(RESTING, &overrides);
    let mut airborne_steps = 0;
    for _ in 0..90 {
        cpu::step(&mut pop, DT).unwrap();
        if pop.position[0].y > 0.15 {
            airborne_steps += 1;
            assert!(!pop.params.asleep(pop.rest[0]), "asleep in the air at {}", pop.position[0]);
        }
    }
    assert!(airborne_steps > 60, "the ball did not bounce: the test would prove little");
    let mut off = population(RESTING, &["population.sleep_time=0".to_string()]);
    for _ in 0..120 {
        cpu::step(&mut off, DT).unwrap();
    }
    assert_eq!(off.rest[0], 0.0);
    assert_eq!(off.stats().asleep, 0);
}

/// Two balls (r = 0.1 m, no friction, e = 0.5) on a floor: A set at rest,
/// B sliding at 2 m/s towards it from 3.2 m away, so that A is asleep
/// (after 1 s) before B arrives (at ≈ 1.5 s). B must wake A, and the
/// impact must come out as between awake balls: the horizontal momentum
/// kept within 1 % (a static A would send B back and keep still: −2 m/s
/// in all), A moving forward, and both velocities within 2 % of 2 m/s of
/// the run with sleeping off (the same contact law; A's only difference
/// there is its residual velocity of order g·h from resting on the floor).
/// (The solver's split is not the closed form's 1.5 / 0.5 m/s: both balls
/// also touch the floor, and the velocity pass splits their mass over
/// their contacts; the sleeping-off run is the reference for that.)
fn impact_wakes_the_sleeper(mut step: Stepper, mut pop: Population, backend: &str, reference: Option<[f32; 2]>) {
    let mut was_asleep = false;
    let mut woke = false;
    // By id: the re-sort by cell may swap the two balls' slots.
    let slot = |pop: &Population, id: usize| pop.slots_by_id()[id];
    for _ in 0..150 {
        step(&mut pop);
        let a_asleep = pop.params.asleep(pop.rest[slot(&pop, 0)]);
        was_asleep |= a_asleep;
        woke |= was_asleep && !a_asleep;
    }
    if reference.is_some() {
        assert!(was_asleep, "{backend}: A never fell asleep: the test would prove little");
        assert!(woke, "{backend}: the sleeper did not wake");
    }
    let (va, vb) = (pop.velocity[slot(&pop, 0)].x, pop.velocity[slot(&pop, 1)].x);
    assert!(vb.abs() < 1.9, "{backend}: no impact in 2.5 s (B at {vb} m/s)");
    let momentum = va + vb;
    assert!((momentum - 2.0).abs() < 0.01 * 2.0, "{backend}: momentum {momentum} (A {va}, B {vb}), 2 before");
    assert!(va > 0.5 && vb > 0.0, "{backend}: A {va} m/s, B {vb} m/s");
    if let Some([ra, rb]) = reference {
        assert!(
            (va - ra).abs() < 0.02 * 2.0 && (vb - rb).abs() < 0.02 * 2.0,
            "{backend}: A {va}, B {vb}; awake throughout: A {ra}, B {rb}"
        );
    }
}

const IMPACT: &str = "Scene(name: \"impact\", gravity: (0.0, -9.81), dt: 0.016666666666666666,
   surfaces: [Surface(geometry: Line(point: (0.0, 0.0), normal: (0.0, 1.0)), friction: 0.0)],
   population: Population(radius: 0.1, restitution: 0.5, friction: 0.0, sleep_time: 1.0,
     spawn: [Grid(origin: (0.0, 0.1), count: 1, spacing: 1.0),
             Grid(origin: (-3.2, 0.1), count: 1, spacing: 1.0, velocity: (2.0, 0.0))],
     bounds: Rect(min: (-5.0, -1.0), max: (5.0, 10.0))))";

fn impact_reference() -> [f32; 2] {
    let mut awake = population(IMPACT, &["population.sleep_time=0".to_string()]);
    impact_wakes_the_sleeper(cpu_stepper(), awake.clone(), "cpu, sleeping off", None);
    for _ in 0..150 {
        cpu::step(&mut awake, DT).unwrap();
    }
    let slots = awake.slots_by_id();
    [awake.velocity[slots[0]].x, awake.velocity[slots[1]].x]
}

#[test]
fn a_sleeper_hit_by_a_sliding_ball_wakes_and_takes_the_impact_as_an_awake_ball() {
    let reference = impact_reference();
    impact_wakes_the_sleeper(cpu_stepper(), population(IMPACT, &[]), "cpu", Some(reference));
}

#[test]
fn a_sleeper_hit_by_a_sliding_ball_wakes_on_the_gpu() {
    let Some(ctx) = common::gpu(GpuOptions::default()) else { return };
    let ctx = Arc::new(ctx);
    let reference = impact_reference();
    let pop = population(IMPACT, &[]);
    impact_wakes_the_sleeper(gpu_stepper(&ctx, &pop), pop, "gpu", Some(reference));
}

/// balls_box with `count` balls and sleeping at the defaults (spelled out,
/// so that the test holds whatever the default).
fn sleeping_box(count: u64, resort_every: u32) -> Population {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/balls_box.ron")).unwrap();
    let overrides = [
        format!("population.count={count}"),
        format!("population.resort_every={resort_every}"),
        "population.sleep_time=1".to_string(),
    ];
    population(&text, &overrides)
}

/// The sleep timers move with the re-sort: a re-sort every step against
/// none, every value bitwise by id (timers included) at every step, over
/// the 8 s in which a pile of 600 forms and falls asleep.
#[test]
fn sleep_state_survives_the_resort_bitwise() {
    let mut never = sleeping_box(600, 0);
    let mut every = sleeping_box(600, 1);
    for step in 0..480 {
        cpu::step(&mut never, DT).unwrap();
        cpu::step(&mut every, DT).unwrap();
        let (a, b) = (common::twin::bits_by_id(&never), common::twin::bits_by_id(&every));
        let diff = (0..a.len()).find(|&i| a[i] != b[i]);
        assert!(diff.is_none(), "step {step}: ball {diff:?} differs");
    }
    assert_ne!(every.ball_id, never.ball_id, "nothing was re-sorted");
    let asleep = every.stats().asleep;
    assert!(asleep > 300, "only {asleep} of 600 asleep after 8 s: the test would prove little");
}

/// Sleeping on, the step is the same at every pool size (1, 2, 3, 7, 16,
/// 64 threads), timers included: the wake pass reads only what no ball
/// writes in it.
#[test]
fn sleeping_is_the_same_at_every_pool_size() {
    let (bits, asleep) = assert_same_at_every_pool_size("population step with sleeping", || {
        let mut pop = sleeping_box(1000, 8);
        for _ in 0..420 {
            cpu::step(&mut pop, DT).unwrap();
        }
        (common::twin::bits_by_id(&pop), pop.stats().asleep)
    });
    assert!(asleep > 100 && bits.len() == 1000, "only {asleep} asleep: the test would prove little");
}

/// The GPU against the CPU twin with sleepers in the pile: a pile of 1000
/// after 6 s (many asleep) stepped ten more steps on each backend: the same
/// sleep states (where the device computes the twin's bits, the same
/// bits; elsewhere the timers may differ only for balls whose speed is
/// within rounding of sleep_speed, so the count of sleepers within 1 %).
#[test]
fn gpu_and_cpu_twin_agree_on_the_sleepers() {
    let Some(ctx) = common::gpu(GpuOptions::default()) else { return };
    let ctx = Arc::new(ctx);
    let mut start = sleeping_box(1000, 8);
    for _ in 0..360 {
        cpu::step(&mut start, DT).unwrap();
    }
    let asleep = start.stats().asleep;
    assert!(asleep > 200, "only {asleep} asleep: the test would prove little");
    let mut on_cpu = start.clone();
    let mut on_gpu = start.clone();
    let mut gpu = GpuPopulation::new(ctx, &on_gpu).unwrap();
    for _ in 0..10 {
        cpu::step(&mut on_cpu, DT).unwrap();
        gpu.step(&mut on_gpu, DT).unwrap();
    }
    gpu.read_back(&mut on_gpu).unwrap();
    let (c, g) = (on_cpu.stats().asleep, on_gpu.stats().asleep);
    if common::twin::bitwise_equal(&on_cpu, &on_gpu) {
        assert_eq!(
            common::twin::bits_by_id(&on_cpu),
            common::twin::bits_by_id(&on_gpu),
            "the same positions, other timers"
        );
        eprintln!("the device computes the CPU twin's bits, sleep timers included ({c} asleep)");
    } else {
        assert!(c.abs_diff(g) <= c / 100 + 1, "asleep: CPU {c}, GPU {g}");
    }
}

/// Bad sleep values are refused with the field named: a negative or
/// non-finite time, a speed or wake depth ≤ 0.
#[test]
fn bad_sleep_values_are_refused_with_the_field_named() {
    for (set, field) in [
        ("population.sleep_time=-1", "sleep_time"),
        ("population.sleep_time=inf", "sleep_time"),
        ("population.sleep_speed=0", "sleep_speed"),
        ("population.sleep_speed=-0.1", "sleep_speed"),
        ("population.wake_overlap=0", "wake_overlap"),
    ] {
        let built = Scene::parse_with_overrides(RESTING, "sleep.ron", &[set.to_string()])
            .map_err(|e| e.to_string())
            .and_then(|scene| scene.build_world().map(|_| ()).map_err(|e| e.to_string()));
        let message = built.expect_err(set);
        assert!(message.contains(field) && message.contains("must be"), "{set}: {message}");
    }
    // Given, the speed turns sleeping on without gravity too; not given, off.
    let zero_g = RESTING.replace("gravity: (0.0, -9.81)", "gravity: (0.0, 0.0)");
    assert_eq!(population(&zero_g, &[]).params.sleep_time, 0.0);
    let set = ["population.sleep_speed=0.01".to_string()];
    assert_eq!(population(&zero_g, &set).params.sleep_time, 0.5);
}
