//! The fixed-slot fill of J (issue 10): once J is built for a constraint set,
//! a step overwrites its values in place (`SparseJacobian::set_values`) instead
//! of pushing every constraint again, and the structure id lets A's pattern and
//! the factor's analysis be recognised without comparing the joint list.
//!
//! Every check here is exact (bit for bit): the slot fill writes the same
//! numbers a fresh build would, so any difference is a wrong slot, a stale
//! value or a missed rebuild, never roundoff.

mod common;

use common::solver_gen::*;
use glam::DVec2;
use mx2d::body::{Body, BodyHandle};
use mx2d::constraint::system::{ConstraintSystem, Scene};
use mx2d::constraint::{Constraint, ConstraintKind, ConstraintSet};
use mx2d::shape::Shape;
use mx2d::solver::{ConstraintId, ConstraintSolver, SolverError, SparseJacobian};

/// A random structure: (rows, body a, body b) per constraint, one- and
/// two-body constraints of 1 to 3 rows (a chain with extra cross links, so A
/// has off-diagonal blocks and loops).
fn structure(rng: &mut Rng, n_bodies: usize) -> Vec<(usize, usize, Option<usize>)> {
    let mut s = vec![(2, 0, None)];
    for b in 1..n_bodies {
        s.push((1 + rng.below(3), b - 1, Some(b)));
        if b >= 3 && rng.below(3) == 0 {
            s.push((1 + rng.below(2), b, Some(b - 3)));
        }
    }
    s
}

/// Random values for every block of the structure (rows past a constraint's
/// row count are filled too: they must be ignored).
fn values(rng: &mut Rng, s: &[(usize, usize, Option<usize>)]) -> Vec<[[[f64; 3]; 3]; 2]> {
    s.iter()
        .map(|_| std::array::from_fn(|_| std::array::from_fn(|_| std::array::from_fn(|_| rng.range(-2.0, 2.0)))))
        .collect()
}

fn build(jac: &mut SparseJacobian, n_bodies: usize, s: &[(usize, usize, Option<usize>)], v: &[[[[f64; 3]; 3]; 2]]) {
    jac.clear(n_bodies);
    for (&(rows, a, b), m) in s.iter().zip(v) {
        match b {
            Some(b) => jac.push(rows, &[(a, m[0]), (b, m[1])]).expect("push"),
            None => jac.push(rows, &[(a, m[0])]).expect("push"),
        };
    }
}

/// Overwriting the values of a built J gives the J a fresh build with those
/// values gives, bit for bit (J v, Jᵀλ and λ of a solve included); the
/// structure id stays, so the solver's pattern and analysis are reused.
#[test]
fn slot_fill_equals_a_fresh_build_bit_for_bit() {
    let mut rng = Rng(7);
    let n = 40;
    let s = structure(&mut rng, n);
    let inv_mass = inv_masses(&mut rng, n);
    let mut slots = SparseJacobian::new();
    build(&mut slots, n, &s, &values(&mut rng, &s));
    let id = slots.structure_id();
    let mut solver = ConstraintSolver::new();
    let rhs: Vec<f64> = (0..slots.n_rows()).map(|_| rng.range(-1.0, 1.0)).collect();
    let mut lambda = vec![0.0; slots.n_rows()];
    solver.solve(&slots, &inv_mass, None, &rhs, &mut lambda).expect("first solve");
    let (version, analyses) = (solver.matrix().pattern_version(), solver.factors().analysis_count());
    for round in 0..3 {
        let v = values(&mut rng, &s);
        let mut finite = true;
        for (c, m) in v.iter().enumerate() {
            finite &= slots.set_values(ConstraintId(c as u32), m);
        }
        assert!(finite, "round {round}: finite values reported as non-finite");
        assert_eq!(slots.structure_id(), id, "set_values must keep the structure");
        let mut fresh = SparseJacobian::new();
        build(&mut fresh, n, &s, &v);
        assert_ne!(fresh.structure_id(), id, "a fresh build has its own structure id");
        assert!(slots.bitwise_eq(&fresh), "round {round}: slot-filled J differs from a fresh build");

        let x: Vec<f64> = (0..3 * n).map(|_| rng.range(-1.0, 1.0)).collect();
        let (mut jx_slots, mut jx_fresh) = (vec![0.0; slots.n_rows()], vec![0.0; slots.n_rows()]);
        slots.mul(&x, &mut jx_slots).expect("J x");
        fresh.mul(&x, &mut jx_fresh).expect("J x");
        assert_eq!(jx_slots, jx_fresh);
        let (mut f_slots, mut f_fresh) = (vec![0.0; 3 * n], vec![0.0; 3 * n]);
        slots.mul_transpose(&rhs, &mut f_slots).expect("Jᵀλ");
        fresh.mul_transpose(&rhs, &mut f_fresh).expect("Jᵀλ");
        assert_eq!(f_slots, f_fresh);

        solver.solve(&slots, &inv_mass, None, &rhs, &mut lambda).expect("slot solve");
        let mut other = ConstraintSolver::new();
        let mut lambda_fresh = vec![0.0; fresh.n_rows()];
        other.solve(&fresh, &inv_mass, None, &rhs, &mut lambda_fresh).expect("fresh solve");
        assert_eq!(lambda, lambda_fresh, "round {round}");
        assert_eq!(solver.matrix().pattern_version(), version, "A's pattern rebuilt for the same structure");
        assert_eq!(solver.factors().analysis_count(), analyses, "analysis redone for the same structure");
    }
    // a non-finite value is reported (the caller turns it into an error)
    let mut bad = values(&mut rng, &s);
    bad[5][0][0][1] = f64::NAN;
    let finite = bad.iter().enumerate().fold(true, |ok, (c, m)| slots.set_values(ConstraintId(c as u32), m) & ok);
    assert!(!finite, "NaN not reported by set_values");
    // values of a padding row are not read: infinity there is no error
    let mut padded = values(&mut rng, &s);
    let (c, _) = s.iter().enumerate().find(|(_, t)| t.0 < 3).expect("a constraint of fewer than 3 rows");
    padded[c][0][2] = [f64::INFINITY; 3];
    assert!(padded.iter().enumerate().all(|(c, m)| slots.set_values(ConstraintId(c as u32), m)));
}

/// A structure rebuilt by `clear` and `push` with the same joints gets a new id,
/// yet the solver still recognises its pattern (the exact comparison that the
/// id only short-cuts): no new analysis.
#[test]
fn a_rebuilt_identical_structure_keeps_the_analysis() {
    let mut rng = Rng(11);
    let n = 25;
    let s = structure(&mut rng, n);
    let inv_mass = inv_masses(&mut rng, n);
    let mut jac = SparseJacobian::new();
    build(&mut jac, n, &s, &values(&mut rng, &s));
    let mut solver = ConstraintSolver::new();
    let rhs = vec![0.5; jac.n_rows()];
    let mut lambda = vec![0.0; jac.n_rows()];
    solver.solve(&jac, &inv_mass, None, &rhs, &mut lambda).expect("solve");
    let (id, analyses) = (jac.structure_id(), solver.factors().analysis_count());
    build(&mut jac, n, &s, &values(&mut rng, &s));
    assert_ne!(jac.structure_id(), id);
    solver.solve(&jac, &inv_mass, None, &rhs, &mut lambda).expect("solve");
    assert_eq!(solver.factors().analysis_count(), analyses);
    // making a body static changes A's pattern (it no longer couples its joints)
    let mut fixed = inv_mass.clone();
    fixed[10] = [0.0; 3];
    let version = solver.matrix().pattern_version();
    solver.solve(&jac, &fixed, None, &rhs, &mut lambda).expect("solve");
    assert_ne!(solver.matrix().pattern_version(), version, "a body made static must rebuild A's pattern");
}

fn bar(name: &str) -> Body {
    Body::builder(name, Shape::Bar { length: 1.0, width: 0.1 }).mass(1.0).build().expect("body")
}

fn pin(name: &str, a: usize, b: Option<usize>, pa: (f64, f64), pb: (f64, f64)) -> Constraint {
    Constraint {
        name: name.into(),
        body_a: BodyHandle(a),
        body_b: b.map(BodyHandle),
        kind: ConstraintKind::Revolute { anchor_a: DVec2::new(pa.0, pa.1), anchor_b: DVec2::new(pb.0, pb.1) },
    }
}

/// A four-bar loop plus a pendulum: pins only, and a distance joint (rows by
/// automatic differentiation), so both evaluation paths fill slots.
fn mechanism() -> (Vec<Body>, ConstraintSet) {
    let bodies = vec![bar("crank"), bar("coupler"), bar("rocker"), bar("bob")];
    let mut set = ConstraintSet::new();
    set.insert(pin("ground_crank", 0, None, (-0.5, 0.0), (0.0, 0.0)));
    set.insert(pin("crank_coupler", 0, Some(1), (0.5, 0.0), (-0.5, 0.0)));
    set.insert(pin("coupler_rocker", 1, Some(2), (0.5, 0.0), (0.5, 0.0)));
    set.insert(pin("rocker_ground", 2, None, (-0.5, 0.0), (1.0, 0.0)));
    set.insert(Constraint {
        name: "rope".into(),
        body_a: BodyHandle(3),
        body_b: Some(BodyHandle(1)),
        kind: ConstraintKind::Distance { anchor_a: DVec2::ZERO, anchor_b: DVec2::ZERO, length: 1.0 },
    });
    (bodies, set)
}

fn state(seed: u64) -> (Vec<f64>, Vec<f64>) {
    let mut rng = Rng(seed);
    ((0..12).map(|_| rng.range(-1.0, 1.0)).collect(), (0..12).map(|_| rng.range(-1.0, 1.0)).collect())
}

/// The constraint system fills J's slots on its second assembly; J is then bit
/// for bit the J of a system assembling for the first time (a build by push).
/// Inserting or removing a constraint changes the set's generation and J is
/// rebuilt; a NaN state is still refused on the slot path.
#[test]
fn constraint_system_slot_fill_matches_a_fresh_assembly() {
    let (bodies, mut set) = mechanism();
    let mut system = ConstraintSystem::default();
    let (q0, v0) = state(1);
    let scene = Scene { bodies: &bodies, constraints: &set, surfaces: &[] };
    system.assemble(scene, 0.0, &q0, &v0).expect("first assembly");
    let id = system.jacobian().structure_id();
    for seed in 2..5 {
        let (q, v) = state(seed);
        system.assemble(scene, 0.1, &q, &v).expect("slot assembly");
        assert_eq!(system.jacobian().structure_id(), id, "J rebuilt although the set did not change");
        let mut fresh = ConstraintSystem::default();
        fresh.assemble(scene, 0.1, &q, &v).expect("fresh assembly");
        assert!(system.jacobian().bitwise_eq(fresh.jacobian()), "seed {seed}: slot-filled J differs");
    }
    let (q, v) = state(9);
    let mut q_nan = q.clone();
    q_nan[5] = f64::NAN; // the coupler's angle: its pins' J entries are NaN
    assert_eq!(
        system.assemble(scene, 0.0, &q_nan, &v).err(),
        Some(SolverError::NonFinite("Jacobian block")),
        "a NaN in J must be refused on the slot path too"
    );

    // a constraint added: the set's generation changes, J gets the new rows
    let generation = set.generation();
    let h = set.insert(pin("extra", 3, Some(0), (0.2, 0.0), (0.1, 0.1)));
    assert_ne!(set.generation(), generation);
    let scene = Scene { bodies: &bodies, constraints: &set, surfaces: &[] };
    let (q, v) = state(3);
    system.assemble(scene, 0.0, &q, &v).expect("assembly after insert");
    assert_eq!(system.jacobian().n_constraints(), 6);
    let mut fresh = ConstraintSystem::default();
    fresh.assemble(scene, 0.0, &q, &v).expect("fresh assembly");
    assert!(system.jacobian().bitwise_eq(fresh.jacobian()));
    // and removed again
    let clone = set.clone();
    assert_eq!(clone.generation(), set.generation(), "a clone holds the same constraints");
    set.remove(h).expect("remove the last constraint");
    assert_ne!(set.generation(), clone.generation());
    let scene = Scene { bodies: &bodies, constraints: &set, surfaces: &[] };
    system.assemble(scene, 0.0, &q, &v).expect("assembly after remove");
    assert_eq!(system.jacobian().n_constraints(), 5);
    let mut fresh = ConstraintSystem::default();
    fresh.assemble(scene, 0.0, &q, &v).expect("fresh assembly");
    assert!(system.jacobian().bitwise_eq(fresh.jacobian()));
}
