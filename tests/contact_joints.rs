//! Joints and contacts together (issue 7, priority 4): a pendulum of 5
//! links swings into a floor; the joints stay exact while contacts act.

use mx2d::scene::Scene;

const SCENE: &str = r#"Scene(
    name: "pendulum_floor",
    gravity: (0.0, -9.81),
    dt: 0.001,
    integrator: Rk4,
    contacts: Contacts(),
    materials: [ Material(name: "floor", friction: 0.5, restitution: 0.3) ],
    chains: [ Chain(prefix: "link", links: 5, anchor: (0.0, 3.0), direction: (1.0, 0.0), link_length: 0.5, link_mass: 1.0, width: 0.05) ],
    surfaces: [ Surface(geometry: Line(point: (0.0, 0.9), normal: (0.0, 1.0)), material: "floor") ],
)"#;

/// The chain reaches down to y = 0.5 < 0.9: it hits the floor and drags on
/// it. The joint error stays ≤ 1e-9 m at every step (the contact PGS
/// alternates with the joints' exact projection, which comes last), no link
/// sinks deeper than the slop, and contacts did act.
#[test]
fn a_five_link_pendulum_hits_the_floor_with_exact_joints() {
    let mut w = Scene::parse(SCENE, "pendulum_floor.ron").unwrap().build_world().unwrap();
    let mut touched = 0;
    while w.time() < 2.0 {
        w.step().unwrap_or_else(|e| panic!("{e}"));
        if !w.contacts.contacts().is_empty() {
            touched += 1;
        }
        let err = w.constraint_error();
        assert!(err <= 1e-9, "joint error {err} at t = {}", w.time());
    }
    assert!(touched > 10, "the chain never touched the floor ({touched} steps)");
    let slop = w.contacts.slop(w.bodies.as_slice());
    assert!(w.contacts.max_penetration() <= slop, "penetration {} > slop {slop}", w.contacts.max_penetration());
}
