//! Constraint solves with bodies whose rotation is nearly massless (issue 10,
//! I ≪ m·ℓ²) on the *sparse* factor: the normal equations built with those
//! inertias *raised*, and the true inertias restored by a fixed-point
//! iteration on the torque the raise leaves out. Used for every solve of a
//! large system (past the dense [`super::augmented`] solve's
//! [`MAX_UNKNOWNS`](super::augmented::MAX_UNKNOWNS)), and in a small one for
//! the projections and for the accelerations where the dense solve declines
//! (a dependent row, the blend band of a singular configuration).
//!
//! # Why
//!
//! The normal equations A = J M⁻¹ Jᵀ carry 1/I · arm² in every row of a light
//! body: κ(A) ≈ 1e3 · m ℓ²/I on a linkage, and α = (τ + (Jᵀλ)_θ)/I divides the
//! rounding of λ by I. On `scenes/linkage_loops.ron` (99 bars, 264 rows) with
//! every inertia × 1e-8 the run diverged at step 203, and at × 1e-12 it kept
//! 19.5 m of constraint error. The projections of the small mechanisms
//! factored the same A: four_bar kept 7e-5 m of error at × 1e-12 and
//! slider_crank stopped at its first step. The dense augmented solve cures
//! the accelerations but is O(N³); its system is indefinite, so the sparse
//! LDLᵀ (which pivots on the diagonal, in a fill-reducing order) cannot take
//! it.
//!
//! # The iteration
//!
//! Let M' be M with each light rotation's inertia raised to
//! I' = m a²/[`RATIO`], a its arm: the largest lever by which its
//! constraints turn it (a pin's or a distance bar's anchor distance, the
//! bounding radius ℓ for the other kinds; [`raise`]). Its rows' angular
//! terms a²/I' are then RATIO × their 1/m terms: A' is as well conditioned as
//! the normal equations at a hundredth of a bar's own inertia (κ ≲ 1e5,
//! module `augmented`). ΔM = M' − M ≥ 0 (on those rotations only). The system M x = g + Jᵀλ, J x = c is solved as
//!
//! ```text
//! M' x_{k+1} = g + ΔM x_k + Jᵀλ_{k+1},   J x_{k+1} = c,   x_0 = 0,
//! ```
//!
//! each iterate one right-hand side on the factor of A' = J M'⁻¹ Jᵀ
//! (λ_{k+1} = A'⁻¹(c − J M'⁻¹(g + ΔM x_k))). A fixed point is the true
//! system. The error obeys e_{k+1} = P M'⁻¹ ΔM e_k with P the M'-orthogonal
//! projector onto J's null space, so in the M'-norm it contracts at least by
//!
//! μ = max over motions u with J u = 0 of uᵀ ΔM u / uᵀ M' u  < 1,
//!
//! the largest share of a permitted motion's (raised) kinetic energy that the
//! raise added. A motion that turns a light body by ω moves its anchor by
//! a·ω relative to its centre; unless the anchor stands still (below) its
//! mass moves too, and μ ≲ I'/(I' + m a²) = 1/(1 + RATIO). Measured on
//! `scenes/linkage_loops.ron`: the change falls by ≈ 0.003–0.008 an
//! iteration, 7–10 right-hand sides a solve to [`TOLERANCE`] (relative,
//! M'-norm of the last change), against one for the normal equations: that
//! scene at inertias × 1e-9 steps in ≈ 3.5× the time of the scene as shipped.
//! A change that stops shrinking is the rounding floor of the raised solve:
//! accepted below [`FLOOR`]. It is ~1e-15 away from singular configurations
//! and rises near them (A' nearly singular, where the rank decision blends λ
//! towards the regularised one anyway): on linkage_loops at × 1e-12, 105 of
//! its ~10⁵ solves stopped above 1e-9, the largest at 1.3e-5.
//!
//! A motion that turns light bodies while their anchors stand still has
//! μ ≈ 1: a straight chain of light bars zig-zagging about their centres
//! (each pin moves along the chain, every centre stays put). Such a motion
//! has nearly no inertia: it is genuinely fast (for I → 0 the point-mass
//! limit does not exist, M not being positive definite on J's null space),
//! and the iteration crawls on it. (A light body pinned at its centre has
//! arm 0 and is not raised: 1/I never enters A, its α = τ/I needs no
//! iteration; one pinned 0.1 mm off it is raised by 0.1 mm and converges.)
//! The iteration is stopped after [`MAX_ITERATIONS`] or when its change
//! stops shrinking above [`FLOOR`]; the whole system then falls back to the
//! normal equations with the true inertias, as before this module, until
//! the bodies' weights change, and a warning names the body whose rotation
//! changed most.
//!
//! # The projections
//!
//! The position projection (and the inverse kinematics' Newton step)
//! factors the same raised A': any positive-definite
//! metric gives a Newton projection onto C(q) = 0 (the mass-weighted one is a
//! choice, not a requirement), and the raised one is the well-conditioned
//! choice. The velocity projection and impulses ([`RaisedSolve::solve`] with
//! g = 0) take the iteration, so they are the true M-orthogonal ones: the
//! projection removes the least kinetic energy, an impact's impulse reaches
//! a light body's rotation through its true inertia.
//!
//! Systems without light bodies never come here: their results are bit for
//! bit what they were (26 shipped scenes' trace and energy CSVs compared;
//! only `scenes/point_pendulum.ron`, I = 1e-12 kg·m², changes, by ≤ 7.8e-14 in
//! its trace over 300 steps).

use super::augmented::RATIO;
use crate::solver::{ConstraintSolver, SolveReport, SolverError, SparseJacobian};

/// Relative change (M'-norm) of x at which the iteration has converged.
pub const TOLERANCE: f64 = 1e-14;

/// A change that stopped shrinking is the rounding floor of the raised
/// solve when it is below this (near a singular configuration, where A' is
/// nearly singular, the floor reached 1.3e-5 on `scenes/linkage_loops.ron`
/// at inertias × 1e-12); above it, the iteration failed.
pub const FLOOR: f64 = 1e-4;

/// Iterations after which the iteration is given up (μ ≳ 0.5).
pub const MAX_ITERATIONS: usize = 48;

/// The raised inverse masses: each rotation with an arm a > 0 (the largest
/// lever by which its constraints turn it) at 1/I' = RATIO/(m a²) where that
/// is below 1/I, every other entry as in `inv_mass`. With a the arm, the
/// rows' angular terms a²/I' are RATIO × their 1/m terms (A' as well
/// conditioned as at the shapes' own inertias), and a motion that turns the
/// body moves its anchor, and so its mass, by a·ω: μ ≲ 1/(1 + RATIO).
pub fn raise(inv_mass: &[[f64; 3]], arms: &[f64], out: &mut Vec<[f64; 3]>) {
    out.clear();
    out.extend(inv_mass.iter().zip(arms).map(|(im, &arm)| {
        let raised = if arm > 0.0 { RATIO * im[0] / (arm * arm) } else { f64::INFINITY };
        [im[0], im[1], im[2].min(raised)]
    }));
}

/// How an iterated solve ended.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The report of the last right-hand side solved.
    pub report: SolveReport,
    /// Iterations done.
    pub iterations: usize,
    /// Whether the change fell to [`TOLERANCE`] (or to the rounding floor).
    pub converged: bool,
}

/// Buffers of the iteration, reused from solve to solve.
#[derive(Clone, Debug, Default)]
pub struct RaisedSolve {
    /// g + ΔM x_k (3 per body).
    force: Vec<f64>,
    /// M'⁻¹ times it, then Jᵀλ.
    scratch: Vec<f64>,
    /// The raised body whose rotation changed most in the last iteration
    /// of the last solve (None: none changed).
    slowest_body: Option<usize>,
    /// The right-hand side of A' λ.
    rhs: Vec<f64>,
}

impl RaisedSolve {
    /// The raised body whose rotation the last iteration changed most (the
    /// one that names a slow mode when the iteration did not converge).
    pub fn slowest_body(&self) -> Option<usize> {
        self.slowest_body
    }

    /// Solves M x = g + Jᵀλ, J x = c (module doc) on the factor of
    /// A' = J M'⁻¹ Jᵀ that `solver` holds (M' = `raised`⁻¹, M = `inv_mass`⁻¹):
    /// `x` (3 per body) and `lambda` (by row) on return. `g` is 3 per body,
    /// `c` by row. A fixed body (zero inverse mass) gets x = 0.
    #[allow(clippy::too_many_arguments)]
    pub fn solve(
        &mut self,
        solver: &mut ConstraintSolver,
        jac: &SparseJacobian,
        inv_mass: &[[f64; 3]],
        raised: &[[f64; 3]],
        g: &[f64],
        c: &[f64],
        lambda: &mut [f64],
        x: &mut Vec<f64>,
    ) -> Result<Outcome, SolverError> {
        let n_dof = g.len();
        x.clear();
        x.resize(n_dof, 0.0);
        self.force.clear();
        self.force.extend_from_slice(g);
        self.scratch.resize(n_dof, 0.0);
        self.rhs.resize(c.len(), 0.0);
        let mut last_change = f64::INFINITY;
        let mut iterations = 0;
        loop {
            iterations += 1;
            // λ = A'⁻¹ (c − J M'⁻¹ (g + ΔM x_k))
            for ((s, fi), inv) in self.scratch.chunks_exact_mut(3).zip(self.force.chunks_exact(3)).zip(raised) {
                for k in 0..3 {
                    s[k] = inv[k] * fi[k];
                }
            }
            jac.mul(&self.scratch, &mut self.rhs)?;
            for (r, ci) in self.rhs.iter_mut().zip(c) {
                *r = ci - *r;
            }
            let report = solver.solve_factored(&self.rhs, lambda)?;
            // x_{k+1} = M'⁻¹ (g + ΔM x_k + Jᵀλ), and its change in the M'-norm
            jac.mul_transpose(lambda, &mut self.scratch)?;
            let (mut change, mut size, mut largest, mut slowest) = (0.0, 0.0, 0.0, None);
            for (body, ((((xi, fi), s), inv), true_inv)) in x
                .chunks_exact_mut(3)
                .zip(self.force.chunks_exact(3))
                .zip(self.scratch.chunks_exact(3))
                .zip(raised)
                .zip(inv_mass)
                .enumerate()
            {
                for k in 0..3 {
                    if inv[k] > 0.0 {
                        let new = inv[k] * (fi[k] + s[k]);
                        let step = (new - xi[k]).powi(2) / inv[k];
                        change += step;
                        size += new * new / inv[k];
                        xi[k] = new;
                        if k == 2 && inv[2] != true_inv[2] && step > largest {
                            (largest, slowest) = (step, Some(body));
                        }
                    }
                }
            }
            self.slowest_body = slowest;
            if !(change.is_finite() && size.is_finite()) {
                return Err(SolverError::NonFinite("raised-inertia iteration"));
            }
            let change = (change / size.max(f64::MIN_POSITIVE)).sqrt();
            // converged; or no longer shrinking at all: the rounding floor of
            // the raised solve itself (near a singular configuration it is
            // far above TOLERANCE), accepted below FLOOR
            let converged = change <= TOLERANCE || (change >= last_change && change <= FLOOR);
            if converged || iterations >= MAX_ITERATIONS || change >= last_change {
                return Ok(Outcome { report, iterations, converged });
            }
            last_change = change;
            // the torque the raise leaves out: g + (M' − M) x on the raised rotations
            for (((fi, gi), xi), (inv, raised_inv)) in self
                .force
                .chunks_exact_mut(3)
                .zip(g.chunks_exact(3))
                .zip(x.chunks_exact(3))
                .zip(inv_mass.iter().zip(raised))
            {
                if inv[2] != raised_inv[2] {
                    fi[2] = gi[2] + (1.0 / raised_inv[2] - 1.0 / inv[2]) * xi[2];
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::system::{ConstraintSystem, Scene};
    use crate::world::World;

    /// `scenes/linkage_loops.ron` (99 bars, 264 pin rows: past the dense
    /// augmented solve) with every inertia × `scale`, stepped `steps` steps:
    /// the world and its state (q, v).
    fn ladder(scale: f64, steps: usize) -> (World, Vec<f64>, Vec<f64>) {
        let scene = crate::scene::Scene::load(std::path::Path::new("scenes/linkage_loops.ron"), &[]).expect("scene");
        let mut world = scene.build_world().expect("world");
        for b in world.bodies.as_mut_slice() {
            b.inertia *= scale;
        }
        for _ in 0..steps {
            world.step().expect("step");
        }
        let (q, v) = world.state_vectors();
        let (q, v) = (q.to_vec(), v.to_vec());
        (world, q, v)
    }

    /// The accelerations (3 per body), λ and, after a velocity projection
    /// of `v`, the projected velocities, by a system on the path `force`
    /// chooses (None: the automatic choice).
    fn solve(
        world: &World,
        q: &[f64],
        v: &[f64],
        force: Option<(usize, bool)>,
    ) -> (Vec<f64>, Vec<f64>, Vec<f64>, bool) {
        let bodies = world.bodies.as_slice();
        let scene = Scene { bodies, constraints: &world.constraints, surfaces: &world.surfaces };
        let mut system = ConstraintSystem::default();
        if let Some((dense_limit, raise)) = force {
            system.force_light_path(dense_limit, raise);
        }
        system.assemble(scene, 0.0, q, v).expect("assemble");
        let mut f: Vec<f64> =
            bodies.iter().flat_map(|b| [b.mass * world.gravity.x, b.mass * world.gravity.y, 0.0]).collect();
        system.apply_forces(scene, v, &mut f, None).expect("forces");
        let raised = system.metric_raised();
        let a: Vec<f64> = f
            .chunks_exact(3)
            .zip(system.inverse_masses())
            .flat_map(|(fi, inv)| [fi[0] * inv[0], fi[1] * inv[1], fi[2] * inv[2]])
            .collect();
        let lambda = system.lambda().to_vec();
        // a velocity off the constraints (every body pushed), projected back
        let mut w: Vec<f64> = v.iter().enumerate().map(|(i, vi)| vi + 0.01 * ((i * 7919 % 13) as f64 - 6.0)).collect();
        system.velocity_correction(scene, &mut w, 1.0).expect("velocity projection");
        (a, lambda, w, raised)
    }

    /// Largest difference of x and y over the entries `pick` selects,
    /// relative to the largest |y| there.
    fn rel(x: &[f64], y: &[f64], pick: impl Fn(usize) -> bool) -> f64 {
        let (mut diff, mut size) = (0.0f64, 0.0f64);
        for (_, (a, b)) in x.iter().zip(y).enumerate().filter(|(i, _)| pick(*i)) {
            diff = diff.max((a - b).abs());
            size = size.max(b.abs());
        }
        diff / size
    }

    /// The raised iteration against the dense augmented solve (complete
    /// pivoting, accurate at any inertia: module `augmented`) on the same
    /// large system, in motion, at inertias × 1e-9 and × 1e-12: the
    /// translational and angular accelerations and λ agree to 1e-9 relative
    /// (the iteration stops at a change of 1e-14, the dense solve keeps
    /// u·κ of its scaled KKT matrix; measured 1e-13 … 1e-11).
    #[test]
    fn raised_iteration_matches_the_dense_augmented_solve() {
        for scale in [1e-9, 1e-12] {
            let (world, q, v) = ladder(scale, 400);
            let (a, lambda, _, raised) = solve(&world, &q, &v, None);
            assert!(raised, "× {scale}: the large system took the raised path");
            let (a_dense, lambda_dense, _, dense_raised) = solve(&world, &q, &v, Some((10_000, false)));
            assert!(!dense_raised);
            let (trans, rot, mult) = (
                rel(&a, &a_dense, |i| i % 3 != 2),
                rel(&a, &a_dense, |i| i % 3 == 2),
                rel(&lambda, &lambda_dense, |_| true),
            );
            eprintln!("× {scale:e}: a (translations) {trans:.1e}, α {rot:.1e}, λ {mult:.1e}");
            assert!(trans < 1e-9 && rot < 1e-9 && mult < 1e-9, "× {scale}: {trans:e} {rot:e} {mult:e}");
        }
    }

    /// Where the normal equations with the true inertias are still accurate
    /// (inertias × 1e-2: m ℓ²/I = 300, raised; κ(A) ≈ 3e5, so they keep
    /// ~1e-11), the raised iteration gives their accelerations, λ and
    /// velocity projection (the M-orthogonal one) to 1e-9 relative.
    #[test]
    fn raised_iteration_matches_the_normal_equations_where_they_are_accurate() {
        let (world, q, v) = ladder(1e-2, 400);
        let (a, lambda, w, raised) = solve(&world, &q, &v, None);
        assert!(raised);
        let (a_n, lambda_n, w_n, normal_raised) = solve(&world, &q, &v, Some((0, false)));
        assert!(!normal_raised);
        let errors = [rel(&a, &a_n, |_| true), rel(&lambda, &lambda_n, |_| true), rel(&w, &w_n, |_| true)];
        eprintln!("× 1e-2: a {:.1e}, λ {:.1e}, projected v {:.1e}", errors[0], errors[1], errors[2]);
        assert!(errors.iter().all(|e| *e < 1e-9), "{errors:?}");
    }
}
