//! Continuity of the multipliers at the rank threshold (issue 10): a
//! one-parameter family of systems passing through a singular configuration,
//! solved on both sides of the pivot tolerance τ and of the top K·τ of the
//! regularisation band (module doc of `mx2d::solver`, "Continuity at the rank
//! threshold").
//!
//! The family: one body, two one-row constraints whose rows make an angle θ,
//! `J = [[1, 0, 0], [cos θ, sin θ, 0]]`, unit masses, so A = [[1, c], [c, 1]] and
//! the second pivot relative to its diagonal is ρ = 1 − c² = sin²θ: ρ = τ = 1e-10
//! at θ ≈ 1e-5 rad, ρ = K·τ = 1e-8 at θ ≈ 1e-4 rad. The right-hand side b = (1, 0)
//! is outside the range of A at θ = 0, so the exact λ = A⁻¹b = (1, −c)/sin²θ grows
//! like 1/θ² while the regularised (least-squares, minimal-norm) one stays near
//! (¼, ¼): a hard switch between them at τ is a jump of ~1e10.

use mx2d::solver::{ConstraintSolver, SolveReport, SparseJacobian, regularization_weight};

/// λ and the report for angle θ.
fn solve_at(solver: &mut ConstraintSolver, theta: f64) -> (Vec<f64>, SolveReport, f64) {
    let mut jac = SparseJacobian::new();
    jac.clear(1);
    jac.push(1, &[(0, [[1.0, 0.0, 0.0], [0.0; 3], [0.0; 3]])]).expect("row 1");
    jac.push(1, &[(0, [[theta.cos(), theta.sin(), 0.0], [0.0; 3], [0.0; 3]])]).expect("row 2");
    let inv_mass = [[1.0, 1.0, 1.0]];
    let rhs = [1.0, 0.0];
    let mut lambda = vec![0.0; 2];
    let rep = solver.solve(&jac, &inv_mass, None, &rhs, &mut lambda).expect("solve");
    // the constraint error left: |b − Aλ| relative to |b| = 1
    let mut a_lambda = vec![0.0; 2];
    solver.matrix().mul(&lambda, &mut a_lambda).expect("mul");
    let res = ((rhs[0] - a_lambda[0]).powi(2) + (rhs[1] - a_lambda[1]).powi(2)).sqrt();
    (lambda, rep, res)
}

/// Largest change of λ between neighbouring samples θ0 + k·h, k = −n..n,
/// relative to the largest |λ| seen.
fn largest_step(solver: &mut ConstraintSolver, theta0: f64, h: f64, n: i32) -> f64 {
    let mut prev: Option<Vec<f64>> = None;
    let (mut step, mut scale) = (0.0f64, 0.0f64);
    for k in -n..=n {
        let (l, _, res) = solve_at(solver, theta0 + k as f64 * h);
        // a regularised or blended solve never makes the constraint error grow
        assert!(res <= 1.0 + 1e-12, "θ = {}: |b − Aλ| = {res} > |b| = 1", theta0 + k as f64 * h);
        scale = scale.max(l[0].abs()).max(l[1].abs());
        if let Some(p) = &prev {
            step = step.max((l[0] - p[0]).abs()).max((l[1] - p[1]).abs());
        }
        prev = Some(l);
    }
    step / scale
}

#[test]
fn multipliers_are_continuous_through_the_rank_threshold() {
    let mut solver = ConstraintSolver::new();
    let tau = solver.settings.pivot_tolerance;
    let band = solver.settings.regularization_band;
    // the angles where ρ = sin²θ crosses τ and K·τ
    let theta_tau = tau.sqrt().asin();
    let theta_top = (band * tau).sqrt().asin();
    // Samples 1e-12 rad apart. Away from any jump λ changes per sample by at most
    // |dλ/dθ|·h ≈ (2/θ³)·h ≈ 2e15·1e-12 = 2e3 at θ = 1e-5, i.e. 2e-7 of its
    // scale 1e10, plus the roundoff of λ_exact (sin²θ computed as 1 − c² to
    // ~1e-16 absolute, so ~1e-6 relative at ρ = 1e-10). 1e-4 leaves a factor 100
    // above both and is 1e-4 of the hard switch's jump (checked below).
    let h = 1e-12;
    for (where_, theta0) in [("τ", theta_tau), ("K·τ", theta_top)] {
        let s = largest_step(&mut solver, theta0, h, 40);
        assert!(s < 1e-4, "λ jumps by {s:.3e} of its scale at θ = {theta0:e} ({where_})");
    }
    // the weight passes through the band: 1 below τ, 0 above K·τ, in between inside
    let w = |th: f64, s: &mut ConstraintSolver| solve_at(s, th).1.regularization_weight;
    assert_eq!(w(0.5 * theta_tau, &mut solver), 1.0);
    assert_eq!(w(2.0 * theta_top, &mut solver), 0.0);
    let mid = w((theta_tau * theta_top).sqrt(), &mut solver);
    assert!(mid > 0.1 && mid < 0.9, "weight at mid-band {mid}");
    // below τ the row is reported dependent, in the band it is not
    assert_eq!(solve_at(&mut solver, 0.5 * theta_tau).1.rank_deficient.len(), 1);
    assert!(solve_at(&mut solver, 2.0 * theta_tau).1.rank_deficient.is_empty());
    // well away from the band the solve is the exact one (weight 0, λ = A⁻¹b to
    // roundoff: the 2×2 inverse of a matrix with condition ~4/θ² = 4e4 at θ = 1e-2)
    let theta = 1e-2;
    let (l, rep, _) = solve_at(&mut solver, theta);
    assert!(!rep.regularized && rep.regularization_weight == 0.0);
    let (c, s2) = (theta.cos(), theta.sin().powi(2));
    for (got, want) in l.iter().zip([1.0 / s2, -c / s2]) {
        assert!((got - want).abs() <= 1e-10 * want.abs(), "{got} vs {want}");
    }
}

#[test]
fn the_hard_switch_jumps_so_the_continuity_test_can_fail() {
    // band 1: today's switch at τ, exact above, regularised below
    let mut solver = ConstraintSolver::new();
    solver.settings.regularization_band = 1.0;
    let theta_tau = solver.settings.pivot_tolerance.sqrt().asin();
    let s = largest_step(&mut solver, theta_tau, 1e-12, 40);
    assert!(s > 0.5, "expected a jump at τ with the hard switch, largest step {s:e}");
}

#[test]
fn the_weight_is_a_continuous_step_in_the_relative_pivot() {
    let settings = mx2d::solver::SolverSettings::default();
    let (tau, band) = (settings.pivot_tolerance, settings.regularization_band);
    assert_eq!(regularization_weight(tau, &settings), 1.0);
    assert_eq!(regularization_weight(band * tau, &settings), 0.0);
    assert_eq!(regularization_weight(f64::NAN, &settings), 1.0);
    // monotone, and its difference quotient in ln ρ bounded by the step's
    // largest slope 1.5 / ln K (3t² − 2t³ has slope ≤ 1.5 in t)
    let n = 2000;
    let mut prev = 1.0;
    for k in 1..=n {
        let rho = tau * band.powf(k as f64 / n as f64);
        let w = regularization_weight(rho, &settings);
        assert!(w <= prev, "not monotone at ρ = {rho:e}");
        let dq = (prev - w) / (band.ln() / n as f64);
        assert!(dq <= 1.5 / band.ln() + 1e-9, "slope {dq} at ρ = {rho:e}");
        prev = w;
    }
}
