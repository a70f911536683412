//! Stacking (issue 7, priority 3): a column of 10 boxes and Box2D's 20-row
//! pyramid stand for 10 s, with the exact contact path (block PGS).

use mx2d::scene::Scene;
use mx2d::world::World;

/// The scene with the exact contact path (the scenes themselves use the
/// soft step, tested in `tests/contact_soft_step.rs`).
fn load(name: &str) -> World {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes").join(name);
    Scene::load(&path, &["contacts.solver=Exact".to_string()])
        .unwrap_or_else(|e| panic!("{e}"))
        .build_world()
        .unwrap_or_else(|e| panic!("{e}"))
}

/// 10 s at dt = 1/60: no box moves more than 1 % of its size (1 m), the
/// penetration stays below the slop (0.5 % of a box's bounding radius), and
/// each box ends with less than 1e-6 J of kinetic energy (the bounds).
fn stands(name: &str) {
    let mut w = load(name);
    let start: Vec<_> = w.bodies.iter().map(|b| b.position).collect();
    while w.time() < 10.0 - 1e-9 {
        w.step().unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let slop = w.contacts.slop(w.bodies.as_slice());
    assert!(w.contacts.max_penetration() < slop, "{name}: penetration {} ≥ slop {slop}", w.contacts.max_penetration());
    for (b, p0) in w.bodies.iter().zip(&start) {
        let moved = (b.position - *p0).length();
        assert!(moved < 0.01, "{name}: {} moved {moved} m", b.name);
        assert!(b.kinetic_energy() < 1e-6, "{name}: {} keeps {} J", b.name, b.kinetic_energy());
    }
}

#[test]
fn a_stack_of_ten_boxes_stands() {
    stands("box_stack.ron");
}

#[test]
fn the_twenty_row_pyramid_stands() {
    stands("pyramid.ron");
}
