//! The standing test of a stack of boxes (issue 7), shared by the exact path
//! (`tests/contact_stacking.rs`) and the soft step (`tests/contact_soft_step.rs`).

use mx2d::world::World;

/// 10 s at the scene's dt: no box moves more than 1 % of its size (1 m), the
/// penetration stays below the slop (0.5 % of a box's bounding radius), and
/// each box ends with less than 1e-6 J of kinetic energy (the bounds).
pub fn assert_stands_ten_seconds(name: &str, mut w: World) {
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
