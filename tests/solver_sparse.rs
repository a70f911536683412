//! Block-sparse constraint solver against the dense reference.
//!
//! Tolerances: the systems are built well-conditioned (masses 0.5–2, inertias
//! 0.05–0.5, anchors within 0.6 of the centre), so cond(A) stays below ~1e4 and
//! both LDLᵀ solutions are within cond·u ≈ 1e-12 of the exact one; 1e-10 relative
//! leaves two orders of margin while catching any wrong block (which gives O(1)).

mod common;

use common::solver_gen::*;
use mx2d::solver::{ConstraintId, ConstraintSolver, DenseLdl, SolverSettings, SparseJacobian, dense_matrix};

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

fn rel_diff(a: &[f64], b: &[f64]) -> f64 {
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
    norm(&d) / norm(b).max(f64::MIN_POSITIVE)
}

/// Solves with both solvers; returns (sparse λ, dense λ, solver).
fn both(jac: &SparseJacobian, inv_mass: &[[f64; 3]], rhs: &[f64]) -> (Vec<f64>, Vec<f64>, ConstraintSolver) {
    let mut s = ConstraintSolver::new();
    let mut lam = vec![0.0; jac.n_rows()];
    s.solve(jac, inv_mass, None, rhs, &mut lam).expect("sparse solve");
    let a = dense_matrix(jac, inv_mass, None).expect("dense A");
    let settings = SolverSettings::default();
    let d = DenseLdl::factor(&a, jac.n_rows(), &settings).expect("dense factor");
    let lam_d = d.solve(rhs, &settings).expect("dense solve");
    (lam, lam_d, s)
}

fn random_rhs(rng: &mut Rng, m: usize) -> Vec<f64> {
    (0..m).map(|_| rng.range(-1.0, 1.0)).collect()
}

/// A consistent right-hand side b = A y.
fn consistent_rhs(rng: &mut Rng, jac: &SparseJacobian, inv_mass: &[[f64; 3]]) -> Vec<f64> {
    let y = random_rhs(rng, jac.n_rows());
    let mut f = vec![0.0; 3 * jac.n_bodies()];
    jac.mul_transpose(&y, &mut f).unwrap();
    for (k, v) in f.iter_mut().enumerate() {
        *v *= inv_mass[k / 3][k % 3];
    }
    let mut b = vec![0.0; jac.n_rows()];
    jac.mul(&f, &mut b).unwrap();
    b
}

#[test]
fn sparse_matches_dense_on_chains() {
    let mut rng = Rng(1);
    for &n in &[1usize, 2, 3, 10, 57, 200] {
        let mut jac = SparseJacobian::new();
        chain(&mut rng, n, &mut jac);
        let im = inv_masses(&mut rng, n);
        let b = random_rhs(&mut rng, jac.n_rows());
        let (l, ld, s) = both(&jac, &im, &b);
        assert!(rel_diff(&l, &ld) < 1e-10, "n={n}: {}", rel_diff(&l, &ld));
        assert_eq!(s.factors().fill_blocks(), 0, "chain must not fill");
    }
}

#[test]
fn sparse_matches_dense_on_trees_with_zero_fill() {
    let mut rng = Rng(2);
    for &n in &[5usize, 40, 300] {
        let mut jac = SparseJacobian::new();
        tree(&mut rng, n, &mut jac);
        let im = inv_masses(&mut rng, n);
        let b = random_rhs(&mut rng, jac.n_rows());
        let (l, ld, s) = both(&jac, &im, &b);
        assert!(rel_diff(&l, &ld) < 1e-10, "n={n}: {}", rel_diff(&l, &ld));
        assert_eq!(s.factors().fill_blocks(), 0, "tree must not fill");
    }
}

#[test]
fn hub_tree_has_zero_fill() {
    // hubs of 12 leaves joined by paths of 6: plain minimum degree would pick the
    // degree-2 path nodes first and fill; leaves-first elimination does not
    let mut rng = Rng(3);
    let mut jac = SparseJacobian::new();
    let n = hub_tree(&mut rng, 5, 12, 6, &mut jac);
    let im = inv_masses(&mut rng, n);
    let b = random_rhs(&mut rng, jac.n_rows());
    let (l, ld, s) = both(&jac, &im, &b);
    assert!(rel_diff(&l, &ld) < 1e-10);
    assert_eq!(s.factors().fill_blocks(), 0);
    // a static body in the middle of a tree decouples it but still no fill
    let mut im2 = im.clone();
    im2[0] = [0.0; 3];
    let (l2, ld2, s2) = both(&jac, &im2, &b);
    assert!(rel_diff(&l2, &ld2) < 1e-10);
    assert_eq!(s2.factors().fill_blocks(), 0);
}

#[test]
fn loop_gives_correct_answer_with_bounded_fill() {
    let mut rng = Rng(4);
    for &n in &[3usize, 8, 100] {
        let mut jac = SparseJacobian::new();
        ring(&mut rng, n, &mut jac);
        let im = inv_masses(&mut rng, n);
        let b = random_rhs(&mut rng, jac.n_rows());
        let (l, ld, s) = both(&jac, &im, &b);
        assert!(rel_diff(&l, &ld) < 1e-10, "n={n}");
        // one loop: one extra block per eliminated link at most (seed 003 §V-D)
        assert!(s.factors().fill_blocks() <= n, "fill {} on a ring of {n}", s.factors().fill_blocks());
        // residual of the original system
        let mut r = vec![0.0; b.len()];
        s.matrix().mul(&l, &mut r).unwrap();
        assert!(rel_diff(&r, &b) < 1e-12);
    }
}

#[test]
fn sparse_matches_dense_on_grid_with_loops() {
    let mut rng = Rng(5);
    let mut jac = SparseJacobian::new();
    grid(&mut rng, 12, 9, &mut jac, false);
    let im = inv_masses(&mut rng, 12 * 9);
    let b = random_rhs(&mut rng, jac.n_rows());
    let (l, ld, mut s) = both(&jac, &im, &b);
    assert!(rel_diff(&l, &ld) < 1e-10, "{}", rel_diff(&l, &ld));
    assert!(s.factors().fill_blocks() > 0);
    let rep = s.solve(&jac, &im, None, &b, &mut vec![0.0; jac.n_rows()]).unwrap();
    assert!(!rep.regularized && rep.rank_deficient.is_empty());
}

#[test]
fn over_constrained_grid_gives_unique_forces() {
    // all-revolute grid: ~4 rows per 3 dof, dozens of redundant rows
    let mut rng = Rng(12);
    let (w, h) = (8, 7);
    let mut jac = SparseJacobian::new();
    grid(&mut rng, w, h, &mut jac, true);
    let im = inv_masses(&mut rng, w * h);
    let b = consistent_rhs(&mut rng, &jac, &im);
    let (l, ld, s) = both(&jac, &im, &b);
    let mut lam = vec![0.0; jac.n_rows()];
    let rep = s.clone().solve(&jac, &im, None, &b, &mut lam).unwrap();
    // at least (rows − dof) dependent rows, at most 2 per constraint
    let excess = jac.n_rows() - 3 * w * h;
    assert!(rep.regularized && 2 * rep.rank_deficient.len() >= excess, "{}", rep.rank_deficient.len());
    assert!(l.iter().all(|v| v.is_finite()));
    // consistent b: residual to 1e-12; both solvers reach the same diag(A)-weighted
    // minimal-norm λ. 1e-8: the regularised refinement leaves (ε/μ)² ≈ 1e-12 bias
    // plus roundoff amplified along near-null directions.
    assert!(rep.relative_residual < 1e-12, "{rep:?}");
    assert!(rel_diff(&l, &ld) < 1e-8, "{}", rel_diff(&l, &ld));
    // accelerations M⁻¹Jᵀλ are unique
    let mut f = vec![0.0; 3 * w * h];
    let mut fd = vec![0.0; 3 * w * h];
    jac.mul_transpose(&l, &mut f).unwrap();
    jac.mul_transpose(&ld, &mut fd).unwrap();
    assert!(rel_diff(&f, &fd) < 1e-9);
}

#[test]
fn over_constrained_grid_with_inconsistent_rhs_matches_dense() {
    // A random b on the all-revolute grid is not in the range of A: λ is the
    // least-squares one of least diag(A)-weighted norm, and the correction of the
    // refinement carries a null-space part of order |b|/ε that both applications
    // of T = (A + εE)⁻¹E per step must remove. The sparse solver and the dense
    // reference then differ by ~1e-3 in λ (the null-space error left is ~u/ε² ×
    // the inconsistency in both), but by ~1e-6 in |λ|_E and ~1e-9 in the forces
    // Jᵀλ. With T applied once per step in the sparse solver (measured, grid14):
    // |λ|_E 3× the dense one, forces 2e-5 apart, and 4e-6 in λ with 1e-9 of
    // inconsistency (5e-10 with both applications).
    let mut rng = Rng(13);
    let (w, h) = (8, 7);
    let mut jac = SparseJacobian::new();
    grid(&mut rng, w, h, &mut jac, true);
    let im = inv_masses(&mut rng, w * h);
    for trial in 0..3 {
        let b = random_rhs(&mut rng, jac.n_rows());
        let (l, ld, mut s) = both(&jac, &im, &b);
        let mut lam = vec![0.0; jac.n_rows()];
        let rep = s.solve(&jac, &im, None, &b, &mut lam).unwrap();
        assert!(rep.regularized && rep.relative_residual > 1e-3, "trial {trial}: {rep:?}");
        // diag(A)-weighted norms
        let a = s.matrix();
        let weighted_norm = |v: &[f64]| {
            let mut sum = 0.0;
            for c in 0..a.n_blocks() {
                let id = ConstraintId(c as u32);
                let (d, o) = (a.diagonal_block(id), a.row_offset(id));
                for r in 0..a.rows(id) {
                    sum += d[4 * r] * v[o + r] * v[o + r];
                }
            }
            sum.sqrt()
        };
        let norm_ratio = weighted_norm(&l) / weighted_norm(&ld);
        assert!((norm_ratio - 1.0).abs() < 1e-5, "trial {trial}: |λ|_E / |λ_dense|_E = {norm_ratio}");
        let mut f = vec![0.0; 3 * w * h];
        let mut fd = vec![0.0; 3 * w * h];
        jac.mul_transpose(&l, &mut f).unwrap();
        jac.mul_transpose(&ld, &mut fd).unwrap();
        assert!(rel_diff(&f, &fd) < 1e-7, "trial {trial}: forces {}", rel_diff(&f, &fd));
        // a consistent b plus an inconsistent part of 1e-9 of it
        let mut bc = consistent_rhs(&mut rng, &jac, &im);
        let scale = 1e-9 * norm(&bc) / norm(&b);
        for (v, r) in bc.iter_mut().zip(&b) {
            *v += scale * r;
        }
        let (l, ld, _) = both(&jac, &im, &bc);
        assert!(rel_diff(&l, &ld) < 1e-8, "trial {trial}, nearly consistent: {}", rel_diff(&l, &ld));
    }
}

#[test]
fn sparse_matches_dense_on_random_graphs() {
    let mut rng = Rng(6);
    for trial in 0..20 {
        let n = 5 + rng.below(60);
        let m = 1 + rng.below(n);
        let mut im = inv_masses(&mut rng, n);
        let mut jac = SparseJacobian::new();
        random_graph(&mut rng, n, m, &mut jac, &mut im);
        // consistent b: random graphs may be rank deficient (static bodies, stacked
        // rows); then both solvers must agree on the minimal-norm solution
        let b = consistent_rhs(&mut rng, &jac, &im);
        let (l, ld, s) = both(&jac, &im, &b);
        let _ = &s;
        assert!(rel_diff(&l, &ld) < 1e-10, "trial {trial}: {}", rel_diff(&l, &ld));
    }
}

#[test]
fn duplicated_constraint_gives_same_forces_and_is_reported() {
    let mut rng = Rng(7);
    let n = 6;
    let im = inv_masses(&mut rng, n);
    let mut jac = SparseJacobian::new();
    chain(&mut rng, n, &mut jac);
    // the same chain with constraint 3 pushed a second time (at the end)
    let mut dup = jac.clone();
    let blocks = jacobian_blocks(&jac, 3);
    let dup_id = dup.push(2, &blocks).unwrap();

    let b = random_rhs(&mut rng, jac.n_rows());
    let mut b_dup = b.clone();
    let o = jac.row_offset(ConstraintId(3));
    b_dup.extend_from_slice(&b[o..o + 2]);

    let mut s = ConstraintSolver::new();
    let mut l = vec![0.0; jac.n_rows()];
    let rep = s.solve(&jac, &im, None, &b, &mut l).unwrap();
    assert!(rep.rank_deficient.is_empty() && !rep.regularized);

    let mut s2 = ConstraintSolver::new();
    let mut l2 = vec![0.0; dup.n_rows()];
    let rep2 = s2.solve(&dup, &im, None, &b_dup, &mut l2).unwrap();
    assert!(l2.iter().all(|v| v.is_finite()));
    assert!(rep2.regularized);
    // the redundant pair is named: whichever copy is eliminated second is dependent
    assert_eq!(rep2.rank_deficient.len(), 1, "{:?}", rep2.rank_deficient);
    assert!(rep2.rank_deficient[0] == dup_id || rep2.rank_deficient[0] == ConstraintId(3));
    // forces unique: Jᵀλ equal to 1e-9 (relative)
    let mut f = vec![0.0; 3 * n];
    let mut f2 = vec![0.0; 3 * n];
    jac.mul_transpose(&l, &mut f).unwrap();
    dup.mul_transpose(&l2, &mut f2).unwrap();
    assert!(rel_diff(&f2, &f) < 1e-9, "{}", rel_diff(&f2, &f));
    // minimal (diag-weighted) norm: the two copies share the load equally
    let od = dup.row_offset(dup_id);
    for r in 0..2 {
        assert!((l2[o + r] - 0.5 * l[o + r]).abs() < 1e-9 * norm(&l));
        assert!((l2[od + r] - 0.5 * l[o + r]).abs() < 1e-9 * norm(&l));
    }
    // and the dense reference agrees on λ itself
    let a = dense_matrix(&dup, &im, None).unwrap();
    let st = SolverSettings::default();
    let d = DenseLdl::factor(&a, dup.n_rows(), &st).unwrap();
    assert!(d.regularized());
    let ld = d.solve(&b_dup, &st).unwrap();
    assert!(rel_diff(&l2, &ld) < 1e-9);
}

/// Reads back the blocks of constraint c through J (unit vectors).
fn jacobian_blocks(jac: &SparseJacobian, c: usize) -> Vec<(usize, [[f64; 3]; 3])> {
    let id = ConstraintId(c as u32);
    let o = jac.row_offset(id);
    let rows = jac.rows(id);
    let mut out = Vec::new();
    for b in jac.bodies(id).collect::<Vec<_>>() {
        let mut blk = [[0.0; 3]; 3];
        for k in 0..3 {
            let mut v = vec![0.0; 3 * jac.n_bodies()];
            v[3 * b + k] = 1.0;
            let mut y = vec![0.0; jac.n_rows()];
            jac.mul(&v, &mut y).unwrap();
            for r in 0..rows {
                blk[r][k] = y[o + r];
            }
        }
        out.push((b, blk));
    }
    out
}

#[test]
fn singular_four_bar_is_regularised_not_nan() {
    // ground (static, body 0), crank 1, coupler 2, rocker 3, all along the x axis:
    // crank and coupler aligned is the singular (dead-centre) position
    let im = vec![[0.0; 3], [1.0, 1.0, 12.0], [0.5, 0.5, 1.5], [1.0, 1.0, 12.0]];
    let mut jac = SparseJacobian::new();
    jac.clear(4);
    // bodies centred at x = 0.5 (crank, length 1), 2.0 (coupler, length 2),
    // 3.0 on a vertical rocker... all anchors on the x axis → the loop is flat
    let hinge = |jac: &mut SparseJacobian, a: usize, ra: [f64; 2], b: usize, rb: [f64; 2]| {
        jac.push(2, &[(a, point_block(ra, 1.0)), (b, point_block(rb, -1.0))]).unwrap()
    };
    hinge(&mut jac, 0, [0.0, 0.0], 1, [-0.5, 0.0]);
    hinge(&mut jac, 1, [0.5, 0.0], 2, [-1.0, 0.0]);
    hinge(&mut jac, 2, [1.0, 0.0], 3, [-0.5, 0.0]);
    hinge(&mut jac, 3, [0.5, 0.0], 0, [4.0, 0.0]);
    let mut rng = Rng(8);
    let b = consistent_rhs(&mut rng, &jac, &im);
    let mut s = ConstraintSolver::new();
    let mut l = vec![0.0; jac.n_rows()];
    let rep = s.solve(&jac, &im, None, &b, &mut l).unwrap();
    assert!(l.iter().all(|v| v.is_finite()));
    assert!(rep.regularized && !rep.rank_deficient.is_empty(), "{rep:?}");
    assert!(rep.relative_residual < 1e-12, "{rep:?}");
    // accelerations M⁻¹Jᵀλ equal those of the generating y (unique)
    let a = dense_matrix(&jac, &im, None).unwrap();
    let st = SolverSettings::default();
    let d = DenseLdl::factor(&a, jac.n_rows(), &st).unwrap();
    let ld = d.solve(&b, &st).unwrap();
    assert!(rel_diff(&l, &ld) < 1e-9, "{}", rel_diff(&l, &ld));
}

#[test]
fn symbolic_analysis_is_reused_while_pattern_is_unchanged() {
    let mut rng = Rng(9);
    let n = 50;
    let im = inv_masses(&mut rng, n);
    let mut s = ConstraintSolver::new();
    let mut jac = SparseJacobian::new();
    for step in 0..5 {
        // new values, same graph
        tree(&mut Rng(100), n, &mut jac);
        let mut im_step = im.clone();
        im_step[7][2] *= 1.0 + step as f64;
        let b = random_rhs(&mut rng, jac.n_rows());
        let mut l = vec![0.0; jac.n_rows()];
        let rep = s.solve(&jac, &im_step, None, &b, &mut l).unwrap();
        assert_eq!(rep.analyzed, step == 0);
        assert_eq!(s.factors().analysis_count(), 1);
    }
    // a new constraint changes the pattern
    jac.push(1, &[(3, [[0.0, 1.0, 0.0], [0.0; 3], [0.0; 3]])]).unwrap();
    let b = random_rhs(&mut rng, jac.n_rows());
    let mut l = vec![0.0; jac.n_rows()];
    let rep = s.solve(&jac, &im, None, &b, &mut l).unwrap();
    assert!(rep.analyzed);
    assert_eq!(s.factors().analysis_count(), 2);
    // a body becoming static changes the pattern too
    let mut im2 = im.clone();
    im2[0] = [0.0; 3];
    s.solve(&jac, &im2, None, &b, &mut l).unwrap();
    assert_eq!(s.factors().analysis_count(), 3);
}

#[test]
fn several_right_hand_sides_reuse_the_factor() {
    let mut rng = Rng(10);
    let mut jac = SparseJacobian::new();
    grid(&mut rng, 6, 5, &mut jac, false);
    let im = inv_masses(&mut rng, 30);
    let mut s = ConstraintSolver::new();
    s.factor(&jac, &im, None).unwrap();
    let a = dense_matrix(&jac, &im, None).unwrap();
    let st = SolverSettings::default();
    let d = DenseLdl::factor(&a, jac.n_rows(), &st).unwrap();
    for _ in 0..3 {
        let b = random_rhs(&mut rng, jac.n_rows());
        let mut l = vec![0.0; jac.n_rows()];
        s.solve_factored(&b, &mut l).unwrap();
        assert!(rel_diff(&l, &d.solve(&b, &st).unwrap()) < 1e-10);
    }
}

#[test]
fn compliance_is_added_to_the_diagonal() {
    let mut rng = Rng(11);
    let mut jac = SparseJacobian::new();
    ring(&mut rng, 7, &mut jac);
    let im = inv_masses(&mut rng, 7);
    let comp: Vec<f64> = (0..jac.n_rows()).map(|_| rng.range(0.0, 0.1)).collect();
    let b = random_rhs(&mut rng, jac.n_rows());
    let mut s = ConstraintSolver::new();
    let mut l = vec![0.0; jac.n_rows()];
    s.solve(&jac, &im, Some(&comp), &b, &mut l).unwrap();
    let a = dense_matrix(&jac, &im, Some(&comp)).unwrap();
    let st = SolverSettings::default();
    let ld = DenseLdl::factor(&a, jac.n_rows(), &st).unwrap().solve(&b, &st).unwrap();
    assert!(rel_diff(&l, &ld) < 1e-10);
}

#[test]
fn bad_input_is_an_error_not_a_panic() {
    let mut jac = SparseJacobian::new();
    jac.clear(2);
    assert!(jac.push(0, &[(0, [[0.0; 3]; 3])]).is_err());
    assert!(jac.push(4, &[(0, [[0.0; 3]; 3])]).is_err());
    assert!(jac.push(1, &[(2, [[0.0; 3]; 3])]).is_err());
    assert!(jac.push(1, &[(1, [[0.0; 3]; 3]), (1, [[0.0; 3]; 3])]).is_err());
    assert!(jac.push(1, &[(0, [[f64::NAN, 0.0, 0.0], [0.0; 3], [0.0; 3]])]).is_err());
    assert!(jac.push(1, &[]).is_err());
    jac.push(1, &[(0, [[1.0, 0.0, 0.0], [0.0; 3], [0.0; 3]])]).unwrap();
    let mut s = ConstraintSolver::new();
    let mut l = vec![0.0; 1];
    assert!(s.solve(&jac, &[[1.0; 3]], None, &[1.0], &mut l).is_err()); // inv_mass length
    assert!(s.solve(&jac, &[[1.0; 3]; 2], None, &[f64::NAN], &mut l).is_err());
    assert!(s.solve(&jac, &[[1.0; 3]; 2], None, &[1.0, 2.0], &mut l).is_err());
    assert!(s.solve_factored(&[1.0], &mut l).is_ok());
    // a zero row (constraint on a static body) is rank deficient, λ = 0, no NaN
    let rep = s.solve(&jac, &[[0.0; 3], [1.0; 3]], None, &[0.0], &mut l).unwrap();
    assert_eq!(*rep.rank_deficient, [ConstraintId(0)]);
    assert_eq!(l, vec![0.0]);
}
