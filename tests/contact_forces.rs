//! Contact forces in the reactions file (issue 7): each active contact's
//! mean force over the step, λ/h, against the statics of a resting body.

use std::process::Command;

use glam::DVec2;
use mx2d::body::Body;
use mx2d::contact::{ContactSettings, Material};
use mx2d::shape::Shape;
use mx2d::surface::{Surface, SurfaceGeometry};
use mx2d::world::World;

/// A box of mass `m` and half extents `half` resting on a line of normal
/// (sin θ, cos θ) through the origin, gravity (0, −g), friction 1 (it sticks
/// for tan θ < 1), run for 120 steps of 1/60 s.
fn resting_box(m: f64, half: DVec2, g: f64, theta: f64) -> World {
    let mut w = World::new(DVec2::new(0.0, -g));
    w.dt = 1.0 / 60.0;
    let n = DVec2::new(theta.sin(), theta.cos());
    let mut s = Surface::new(SurfaceGeometry::Line { point: DVec2::ZERO, normal: n });
    s.friction = 1.0;
    w.surfaces.push(s);
    let b = Body::builder("box", Shape::Box { half_extents: half }).mass(m).position(n * half.y).angle(-theta);
    w.add_body(b.build().unwrap()).unwrap();
    let material = Material { friction: 1.0, ..Material::default() };
    w.contacts.settings = ContactSettings { enabled: true, body_materials: vec![material], ..Default::default() };
    for _ in 0..120 {
        w.step().unwrap();
    }
    w
}

/// Σ normal and Σ tangent force of the world's contacts.
fn sums(w: &World) -> (f64, f64, usize) {
    let forces = w.contacts.forces(w.bodies.as_slice(), w.dt);
    (forces.iter().map(|f| f.normal_force).sum(), forces.iter().map(|f| f.tangent_force).sum(), forces.len())
}

/// A box at rest on a level floor: its two contact points share the weight,
/// Σ Fₙ = m g, Σ Fₜ = 0, the total force is (0, m g) and the total torque
/// about the centre zero. Tolerance 1e-9 relative: the PGS solves the two
/// points to its 1e-12 relative tolerance, the rest is round-off. The same
/// in other units and at other mass scales (mm instead of m: lengths and g
/// × 1000; a 1000× heavier box): the result may not depend on them.
#[test]
fn a_resting_box_is_held_by_its_weight() {
    for (m, scale) in [(3.0, 1.0), (3000.0, 1.0), (3.0, 1000.0), (0.002, 1000.0)] {
        let g = 9.81 * scale;
        let w = resting_box(m, DVec2::new(0.5, 0.25) * scale, g, 0.0);
        let (normal, tangent, count) = sums(&w);
        assert_eq!(count, 2, "a box on a floor has two contact points");
        let weight = m * g;
        assert!((normal - weight).abs() <= 1e-9 * weight, "m {m} scale {scale}: Σ Fn {normal} vs m g {weight}");
        assert!(tangent.abs() <= 1e-9 * weight, "m {m} scale {scale}: Σ Ft {tangent}");
        let forces = w.contacts.forces(w.bodies.as_slice(), w.dt);
        let total: DVec2 = forces.iter().map(|f| f.force).sum();
        let torque: f64 = forces.iter().map(|f| f.torque).sum();
        assert!((total - DVec2::new(0.0, weight)).length() <= 1e-9 * weight, "total force {total}");
        // Lever arms are half a box wide: the torques cancel to 1e-9 m g × size.
        assert!(torque.abs() <= 1e-9 * weight * 0.5 * scale, "total torque {torque}");
    }
}

/// A box sticking on a 0.3 rad incline (tan θ = 0.31 < μ = 1): the normal
/// forces carry m g cos θ and friction m g sin θ up the slope (along
/// t = n⊥, which points up-slope here). Tolerance as above.
#[test]
fn a_box_sticking_on_an_incline_has_the_static_forces() {
    let (m, g, theta) = (2.0, 9.81, 0.3f64);
    let w = resting_box(m, DVec2::new(0.4, 0.1), g, theta);
    let (normal, tangent, _) = sums(&w);
    let weight = m * g;
    assert!((normal - weight * theta.cos()).abs() <= 1e-9 * weight, "Σ Fn {normal} vs {}", weight * theta.cos());
    assert!((tangent - weight * theta.sin()).abs() <= 1e-9 * weight, "Σ Ft {tangent} vs {}", weight * theta.sin());
}

/// The CLI writes one `contact:<a>:<b>` row per contact in the reactions
/// file, after the constraint rows, with the documented header; the floor
/// rows of a resting box sum to its weight (2 kg × 10 m/s², 1e-9 relative).
#[test]
fn the_reactions_file_lists_the_contact_forces() {
    let dir = tempfile::tempdir().unwrap();
    let scene = dir.path().join("box.ron");
    std::fs::write(
        &scene,
        r#"Scene(
    name: "box", gravity: (0.0, -10.0), dt: 0.016666666666666666, integrator: Symplectic, steps: 60,
    contacts: Contacts(),
    materials: [ Material(name: "wood", friction: 0.6) ],
    bodies: [ Body(name: "crate", shape: Box(half_extents: (0.5, 0.25)), mass: 2.0, position: (0.0, 0.25), material: "wood") ],
    surfaces: [ Surface(geometry: Line(point: (0.0, 0.0), normal: (0.0, 1.0)), material: "wood") ],
)"#,
    )
    .unwrap();
    let csv = dir.path().join("r.csv");
    let out = Command::new(env!("CARGO_BIN_EXE_mx2d"))
        .args(["run", scene.to_str().unwrap(), "--headless", "--every", "60", "--reactions", csv.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("step,t,constraint,fx,fy,torque,normal_force,tangent_force"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).filter(|r: &Vec<&str>| r[0] == "60").collect();
    assert_eq!(rows.len(), 2, "two contact rows at step 60: {text}");
    let mut normal = 0.0;
    for r in &rows {
        assert_eq!(r[2], "contact:crate:surface0");
        normal += r[6].parse::<f64>().unwrap();
        let fy: f64 = r[4].parse().unwrap();
        assert!((fy - r[6].parse::<f64>().unwrap()).abs() <= 1e-12 * 20.0, "fy is the normal force on a level floor");
    }
    assert!((normal - 20.0).abs() <= 1e-9 * 20.0, "Σ normal force {normal} vs m g = 20 N");
}
