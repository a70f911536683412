//! The solve that follows a factorisation in [`ConstraintSolver::solve`] has its
//! forward substitution done during the elimination when every constraint has
//! two rows (issue 10, `src/solver/mod.rs` "Per-step overhead"). It must give
//! the multipliers of a factorisation followed by a separate solve bit for bit —
//! on a loop with fill, on systems near and at a singular configuration
//! (blended and regularised factors), after a reused factorisation and with
//! another right-hand side on the same factor.

use mx2d::solver::{ConstraintSolver, SparseJacobian};

/// A ring of `n` bodies joined by pins (two rows each), body 0 also pinned to
/// the world, plus a body held by two two-row constraints whose first rows
/// make the angle `theta` (dependent at θ = 0, in the regularisation band
/// near 1e-5 rad).
fn system(n: usize, theta: f64) -> (SparseJacobian, Vec<[f64; 3]>) {
    let mut jac = SparseJacobian::new();
    jac.clear(n + 2);
    let pin = |rx: f64, ry: f64, s: f64| [[s, 0.0, -s * ry], [0.0, s, s * rx], [0.0; 3]];
    jac.push(2, &[(0, pin(0.3, -0.2, 1.0))]).expect("world pin");
    for i in 0..n {
        let (a, b) = (i, (i + 1) % n);
        let (ra, rb) = (0.5 + 0.1 * i as f64, -0.4 + 0.07 * i as f64);
        jac.push(2, &[(a, pin(ra, 0.2, 1.0)), (b, pin(rb, -0.1, -1.0))]).expect("ring pin");
    }
    // the second pin's first row is the first pin's first row turned by θ;
    // its second row acts on another body
    let (lone, other) = (n, n + 1);
    jac.push(2, &[(lone, [[1.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0; 3]])]).expect("first");
    let turned = [[theta.cos(), theta.sin(), 0.0], [0.0; 3], [0.0; 3]];
    jac.push(2, &[(lone, turned), (other, [[0.0; 3], [1.0, 0.0, 0.0], [0.0; 3]])]).expect("second");
    let inv_mass = (0..n + 2).map(|i| [1.0 / (1.0 + i as f64), 1.0 / (1.0 + i as f64), 3.0]).collect();
    (jac, inv_mass)
}

fn bits(v: &[f64]) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn staged_solve_is_the_separate_one_bit_for_bit() {
    let mut staged = ConstraintSolver::new();
    let tau = staged.settings.pivot_tolerance;
    // well conditioned, in the band (blend of two factors), dependent (regularised)
    let thetas = [0.3, 1e-2, (3.0 * tau).sqrt(), (30.0 * tau).sqrt(), 0.0];
    let mut blended = false;
    let mut regularised = false;
    for &theta in &thetas {
        let (jac, inv_mass) = system(7, theta);
        let rows = jac.n_rows();
        let rhs: Vec<f64> = (0..rows).map(|r| ((r * 7 + 3) % 11) as f64 - 5.0).collect();
        let mut separate = ConstraintSolver::new();
        separate.factor(&jac, &inv_mass, None).expect("factor");
        let mut expect = vec![0.0; rows];
        let rep_sep = separate.solve_factored(&rhs, &mut expect).expect("solve");
        let mut got = vec![0.0; rows];
        let rep = staged.solve(&jac, &inv_mass, None, &rhs, &mut got).expect("staged solve");
        assert_eq!(bits(&got), bits(&expect), "θ = {theta:e}");
        assert_eq!(rep.regularization_weight, rep_sep.regularization_weight);
        blended |= rep.regularization_weight > 0.0 && rep.regularization_weight < 1.0;
        regularised |= rep.regularization_weight == 1.0;
        // the same system again: the factorisation is reused (no elimination,
        // so no forward substitution staged by it), another right-hand side
        let rhs2: Vec<f64> = rhs.iter().map(|b| 0.5 * b + 1.0).collect();
        let mut expect2 = vec![0.0; rows];
        separate.solve_factored(&rhs2, &mut expect2).expect("solve 2");
        let reused = staged.reused_factorizations();
        staged.solve(&jac, &inv_mass, None, &rhs2, &mut got).expect("staged solve 2");
        assert_eq!(staged.reused_factorizations(), reused + 1);
        assert_eq!(bits(&got), bits(&expect2), "θ = {theta:e}, reused factor");
        // and a plain solve on the staged solver's factor
        staged.solve_factored(&rhs, &mut got).expect("solve 3");
        assert_eq!(bits(&got), bits(&expect), "θ = {theta:e}, solve_factored after");
    }
    assert!(blended && regularised, "the family must reach the band and the dependent case");
}
