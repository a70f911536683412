//! Stacking (issue 7, priority 3): a column of 10 boxes and Box2D's 20-row
//! pyramid stand for 10 s, with the exact contact path (block PGS).

mod common;

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

/// 10 s at dt = 1/60 within the bounds (`common::stacks`).
fn stands(name: &str) {
    common::stacks::assert_stands_ten_seconds(name, load(name));
}

#[test]
fn a_stack_of_ten_boxes_stands() {
    stands("box_stack.ron");
}

#[test]
fn the_twenty_row_pyramid_stands() {
    stands("pyramid.ron");
}
