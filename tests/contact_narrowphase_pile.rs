//! A drop of 100 mixed shapes (circles, ellipses, superellipses, triangles,
//! boxes, bars) into a box (issue 7, priority 2): the true penetration —
//! the exact narrowphase at the poses after each step, not the contact
//! stage's own linearised estimate — stays within the stated slop.
//!
//! Ignored for now: it fails, and the cause is not the narrowphase. Measured
//! on this 100-shape drop (3 s, dt 1/60, `Exact` solver): the deepest true
//! overlap is 0.09 m, between bodies of one column landing on each other,
//! mostly polygon pairs (bar–triangle, bar–box) and boxes on the floor —
//! pairs the narrowphase handles exactly — and it was 0.05 m (reported)
//! before the curved pairs became exact as after. It falls with the number
//! of impact events allowed per step (the scene's 4: 0.051 reported; 64:
//! 0.020) and with dt (dt/4: 0.005), barely with the PGS sweeps (30 → 300:
//! 0.051 → 0.039): contacts that arrive within a step beyond the event cap
//! are only met at its end, and the position projection (4 Gauss–Seidel
//! sweeps on linearised gaps) leaves most of that overlap. `SoftStep` gives
//! 0.10 (springs sag under the pile). The summary's `max_penetration` is the
//! linearised gap after the projection and understates the true overlap
//! (0.051 reported vs 0.093 true). The fix belongs to the contact stage
//! (`src/contact/{mod,resting,toi}.rs`).

use mx2d::contact::narrowphase::{Pose, collide_bodies, surface::surface_gap};
use mx2d::scene::Scene;
use mx2d::world::World;

fn drop_of(count: usize, columns: usize) -> World {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/balls_in_box.ron");
    let sets = [format!("drops.0.count={count}"), format!("drops.0.columns={columns}")];
    Scene::load(&path, &sets).unwrap_or_else(|e| panic!("{e}")).build_world().unwrap_or_else(|e| panic!("{e}"))
}

/// Deepest true overlap over all body pairs and body–surface pairs (m),
/// with the pair's names.
fn deepest(w: &World) -> (f64, String) {
    let bodies = w.bodies.as_slice();
    let pose = |i: usize| Pose { position: bodies[i].position, angle: bodies[i].angle };
    let mut worst = (0.0, String::new());
    let mut out = Vec::new();
    for i in 0..bodies.len() {
        for s in &w.surfaces {
            let g = surface_gap(&bodies[i].shape, &pose(i), &s.geometry, &mut out);
            if -g > worst.0 {
                worst = (-g, format!("{} / surface", bodies[i].name));
            }
        }
        for j in i + 1..bodies.len() {
            let reach = bodies[i].shape.bounding_radius() + bodies[j].shape.bounding_radius();
            if (bodies[i].position - bodies[j].position).length() > reach {
                continue;
            }
            out.clear();
            collide_bodies(&bodies[i].shape, &pose(i), &bodies[j].shape, &pose(j), 0.0, &mut out);
            let g = out.iter().map(|p| p.gap).fold(0.0, f64::min);
            if -g > worst.0 {
                worst = (-g, format!("{} / {}", bodies[i].name, bodies[j].name));
            }
        }
    }
    worst
}

#[test]
#[ignore = "fails: 0.09 m true penetration from the contact stage (event cap, 4-sweep projection), not the narrowphase; see the module docs"]
fn a_hundred_mixed_shapes_do_not_sink_into_each_other() {
    let mut w = drop_of(100, 10);
    let slop = w.contacts.slop(w.bodies.as_slice());
    let mut worst = (0.0, String::new(), 0.0);
    while w.time() < 3.0 - 1e-9 {
        w.step().unwrap_or_else(|e| panic!("{e}"));
        let (d, pair) = deepest(&w);
        if d > worst.0 {
            worst = (d, pair, w.time());
        }
    }
    assert!(worst.0 <= slop, "penetration {} ({}) at t = {} > slop {slop}", worst.0, worst.1, worst.2);
}
