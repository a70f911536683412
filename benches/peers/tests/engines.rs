//! The engine adapters map the scene into each engine and read it back faithfully: checked
//! against closed forms, so a wrong sign, unit, ordering or placement fails here rather than
//! silently skewing a benchmark table.

use mx2d_peers::engines::{self, Material, Settings, Shape, State};

const ENGINES: [&str; 2] = ["box2d", "rapier"];

fn settings() -> Settings {
    Settings { gravity: [0.0, -9.81], dt: 1.0 / 60.0, substeps: 4, workers: 2 }
}

/// Free flight of two bodies launched with different velocities: positions after T follow
/// x = x₀ + v₀ₓT, y = y₀ + v₀ᵧT − gT²/2. Both engines use semi-implicit Euler per sub-step
/// h = dt/4, whose position error after T is at most g·h·T/2 = 9.81 · (1/240) · 1 / 2 ≈ 0.020 m;
/// the tolerance 0.03 m adds f32 rounding (positions ~10 m, ε ≈ 1e-6) and fails on any
/// mix-up of bodies, axes or signs (those are metres off).
#[test]
fn free_flight_matches_the_parabola() {
    for name in ENGINES {
        let mut engine = engines::create(name, settings()).unwrap();
        let material = Material { friction: 0.3, restitution: 0.5 };
        let starts = [([0.0, 10.0], [3.0, 4.0]), ([20.0, 5.0], [-1.0, 0.5])];
        for (p, v) in starts {
            engine.add_dynamic(Shape::Disc(0.5), p, v, 1.0, material, false).unwrap();
        }
        let steps = 60;
        for _ in 0..steps {
            engine.step().unwrap();
        }
        let mut state = State::default();
        engine.read(&mut state).unwrap();
        let t = steps as f64 / 60.0;
        for (i, (p, v)) in starts.iter().enumerate() {
            let expect = [p[0] + v[0] * t, p[1] + v[1] * t - 0.5 * 9.81 * t * t];
            let got = state.position[i];
            let err = ((got[0] - expect[0]).powi(2) + (got[1] - expect[1]).powi(2)).sqrt();
            assert!(err < 0.03, "{name}: body {i} at {got:?}, parabola {expect:?}");
            // Velocity: exact for semi-implicit Euler up to f32 rounding.
            let v_expect = [v[0], v[1] - 9.81 * t];
            assert!((state.velocity[i][0] - v_expect[0]).abs() < 1e-3, "{name}: vx {i}");
            assert!((state.velocity[i][1] - v_expect[1]).abs() < 1e-3, "{name}: vy {i}");
        }
    }
}

/// A disc and a box set down on a static slab (top face at y = 0) settle on it: the disc's
/// centre ends at y = r and the box's at y = h, each within 1 cm. Both engines keep resting
/// contacts within their linear slop (Box2D 0.005 m, rapier's allowed error 0.001 m) plus a
/// soft-contact sag far below 1 cm; a misplaced slab (wrong centre or half-extent) is off by
/// ≥ 0.5 m. The box must not turn (|angle| < 1e-3 rad).
#[test]
fn bodies_rest_on_a_static_slab() {
    for name in ENGINES {
        let mut engine = engines::create(name, settings()).unwrap();
        let material = Material { friction: 0.6, restitution: 0.0 };
        engine.add_static_rect([0.0, -1.0], [50.0, 1.0], material).unwrap();
        engine.add_dynamic(Shape::Disc(0.5), [-3.0, 0.7], [0.0, 0.0], 1.0, material, false).unwrap();
        engine.add_dynamic(Shape::Rect([0.5, 0.25]), [3.0, 0.4], [0.0, 0.0], 1.0, material, false).unwrap();
        for _ in 0..120 {
            engine.step().unwrap();
        }
        let mut state = State::default();
        engine.read(&mut state).unwrap();
        assert!((state.position[0][1] - 0.5).abs() < 0.01, "{name}: disc at {:?}", state.position[0]);
        assert!((state.position[1][1] - 0.25).abs() < 0.01, "{name}: box at {:?}", state.position[1]);
        assert!((state.position[0][0] + 3.0).abs() < 0.01, "{name}: disc drifted sideways");
        assert!(state.angle[1].abs() < 1e-3, "{name}: box turned {}", state.angle[1]);
    }
}
