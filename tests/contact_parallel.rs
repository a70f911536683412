//! The exact contact solve (block PGS) on the rayon pool (issue 7): contacts are coloured so
//! that no two of a colour share a dynamic body, and the large colours are
//! split among threads. Each contact then sees the same velocities whatever
//! the pool size, so the whole step is bitwise the same at every size.

mod common;

use mx2d::contact::inverse_masses;
use mx2d::contact::resting::block_for;
use mx2d::scene::Scene;
use mx2d::solver::pgs;

/// A 60-row pyramid (1,830 boxes) stepped 5 times at dt = 1/60: the bits
/// of every position, velocity and contact impulse agree at pool sizes 1, 2,
/// 3, 7, 16 and 64; and at least one colour is large enough to be split
/// (else the test would not reach the parallel path).
#[test]
fn the_pyramid_steps_the_same_at_every_pool_size() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/pyramid.ron");
    let scene = Scene::load(&path, &["piles[0].rows=60".to_string(), "contacts.solver=Exact".to_string()]).unwrap();
    let run = || {
        let mut w = scene.build_world().unwrap();
        for _ in 0..5 {
            w.step().unwrap();
        }
        let bodies = w.bodies.as_slice();
        let inv = inverse_masses(bodies);
        let (q, v) = w.state_vectors();
        let (q, v) = (q.to_vec(), v.to_vec());
        let blocks: Vec<_> = w.contacts.contacts().iter().map(|c| block_for(c, &q, 2)).collect();
        let largest = pgs::colour(&blocks, &inv).iter().map(|c| c.0.len()).max().unwrap_or(0);
        let bits = |x: &[f64]| x.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        let impulses: Vec<u64> = w.contacts.contacts().iter().flat_map(|c| c.impulse.map(f64::to_bits)).collect();
        (bits(&q), bits(&v), impulses, largest)
    };
    let (_, _, impulses, largest) = common::threads::assert_same_at_every_pool_size("contact solve", run);
    assert!(!impulses.is_empty());
    assert!(largest >= pgs::PARALLEL_COLOUR_MIN, "largest colour {largest}: the parallel path was not taken");
}

/// The colouring itself: no two contacts of a colour share a dynamic body,
/// every contact has exactly one colour, and a fixed body (the floor) does
/// not count as shared.
#[test]
fn contacts_of_a_colour_share_no_dynamic_body() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/pyramid.ron");
    let mut w = Scene::load(&path, &["contacts.solver=Exact".to_string()]).unwrap().build_world().unwrap();
    w.step().unwrap();
    let inv = inverse_masses(w.bodies.as_slice());
    let q = w.state_vectors().0.to_vec();
    let blocks: Vec<_> = w.contacts.contacts().iter().map(|c| block_for(c, &q, 2)).collect();
    let colours = pgs::colour(&blocks, &inv);
    let mut seen = vec![0; blocks.len()];
    for (members, _) in &colours {
        let mut used = std::collections::HashSet::new();
        for &k in members {
            seen[k] += 1;
            for body in [Some(blocks[k].body_a), blocks[k].body_b].into_iter().flatten() {
                if inv[3 * body] != 0.0 {
                    assert!(used.insert(body), "body {body} twice in one colour");
                }
            }
        }
    }
    assert!(seen.iter().all(|&n| n == 1), "every contact in exactly one colour");
    // 20 boxes on the floor: without the fixed-body rule they would need 40 colours.
    assert!(colours.len() < 20, "{} colours", colours.len());
}
