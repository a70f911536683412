//! Issue 11, class 8: every number a run reports is independent of the rayon
//! thread count. With ≥ 4,096 bodies the field forces run in parallel, and
//! the non-conservative work used to be a rayon `sum` whose last digits
//! depended on how the pool split it.

mod common;

use mx2d::scene::Scene;

/// `n` discs spread over the four fields of scenes/fields.ron (wind band,
/// softened attractor, vortex, Stokes pool), so every field does work.
fn crowd(n: usize) -> String {
    let fields =
        std::fs::read_to_string(format!("{}/scenes/fields.ron", env!("CARGO_MANIFEST_DIR"))).expect("fields.ron");
    let start = fields.find("    fields: [").expect("fields");
    let end = start + fields[start..].find("\n    ],").expect("end of fields") + "\n    ],".len();
    let mut rng = common::Rng::new(11);
    let mut bodies = String::new();
    for i in 0..n {
        let (x, y) = (rng.next_u64() % 20_000, rng.next_u64() % 8_000);
        let (x, y) = (x as f64 / 1000.0 - 10.0, y as f64 / 1000.0 - 3.0);
        bodies.push_str(&format!(
            "Body(name: \"b{i}\", shape: Circle(radius: 0.05), mass: 0.1, position: ({x}, {y}), velocity: (1.0, 0.5)),\n"
        ));
    }
    format!("Scene(name: \"crowd\", dt: 0.001, integrator: Rk4, bodies: [\n{bodies}],\n{}\n)", &fields[start..end])
}

#[test]
fn work_and_states_are_the_same_at_every_pool_size() {
    // 5,000 bodies: past the 4,096 threshold of the parallel field loop, and
    // not a multiple of its 1,024-body blocks.
    let scene = Scene::parse(&crowd(5_000), "crowd.ron").expect("valid scene");
    let work = common::threads::assert_same_at_every_pool_size("fields power", || {
        let mut world = scene.build_world().expect("world");
        for _ in 0..5 {
            world.step().expect("step");
        }
        let e = world.energy();
        let states: Vec<u64> =
            world.bodies.iter().flat_map(|b| [b.position.x.to_bits(), b.velocity.y.to_bits()]).collect();
        // Compared bitwise: a reordered float sum differs in the last bits.
        (e.work.to_bits(), e.total.to_bits(), states)
    });
    // The work must be real: the drag pool and the wind do work on this crowd.
    assert!(f64::from_bits(work.0).abs() > 1e-6, "the fields do work: {}", f64::from_bits(work.0));
}
