//! No tunnelling (issue 7, priority 4; seed 004's "skip-through"): a ball
//! at 1000 m/s against a 1 mm wall and against a small ball, at dt = 1/60
//! (16.7 m per step, 333 wall thicknesses).

use glam::DVec2;
use mx2d::body::Body;
use mx2d::contact::{ContactSettings, Material};
use mx2d::shape::Shape;
use mx2d::world::World;

fn world() -> World {
    let mut w = World::new(DVec2::ZERO);
    w.dt = 1.0 / 60.0;
    let bouncy = Material { restitution: 1.0, ..Material::default() };
    w.contacts.settings = ContactSettings { enabled: true, body_materials: vec![bouncy; 2], ..Default::default() };
    w
}

#[test]
fn a_fast_ball_does_not_pass_a_thin_wall() {
    let mut w = world();
    let ball = Body::builder("ball", Shape::Circle { radius: 0.05 }).mass(1.0).velocity(DVec2::new(1000.0, 0.0));
    w.add_body(ball.build().unwrap()).unwrap();
    let wall = Body::builder("wall", Shape::Box { half_extents: DVec2::new(0.0005, 1.0) })
        .position(DVec2::new(10.0, 0.0))
        .fixed(true);
    w.add_body(wall.build().unwrap()).unwrap();
    for _ in 0..3 {
        w.step().unwrap();
    }
    let b = &w.bodies.as_slice()[0];
    assert_eq!(w.contacts.impacts().len(), 1, "impacts: {:?}", w.contacts.impacts());
    assert!(b.position.x < 10.0 - 0.0005 - 0.05 + 1e-9, "passed through: x = {}", b.position.x);
    // Elastic: it comes back at full speed; the impact is at the wall face (1e-9 m).
    assert!((b.velocity.x + 1000.0).abs() < 1e-9, "v = {}", b.velocity);
    let hit = w.contacts.impacts()[0];
    assert!((hit.time - (10.0 - 0.0005 - 0.05) / 1000.0).abs() < 1e-12, "impact at {}", hit.time);
}

#[test]
fn a_fast_ball_does_not_pass_a_small_ball() {
    let mut w = world();
    let bullet = Body::builder("bullet", Shape::Circle { radius: 0.01 }).mass(1.0).velocity(DVec2::new(1000.0, 0.0));
    w.add_body(bullet.build().unwrap()).unwrap();
    let target = Body::builder("target", Shape::Circle { radius: 0.01 }).mass(1.0).position(DVec2::new(5.0, 0.005));
    w.add_body(target.build().unwrap()).unwrap();
    for _ in 0..3 {
        w.step().unwrap();
    }
    assert_eq!(w.contacts.impacts().len(), 1, "no collision: {:?}", w.contacts.impacts());
    let b = w.bodies.as_slice();
    assert!(b[1].velocity.length() > 100.0, "the target did not move: {}", b[1].velocity);
    let p: DVec2 = b.iter().map(|x| x.velocity * x.mass).sum();
    assert!((p - DVec2::new(1000.0, 0.0)).length() < 1e-9, "momentum {p}");
}
