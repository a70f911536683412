//! Linear algebra of the constraint solver: block-sparse J and A = J M⁻¹ Jᵀ
//! ([`sparse`]), block-sparse Gaussian elimination ([`gauss`], seed 003 §V) and a
//! dense reference ([`dense`]).
//!
//! The factorisation is analysed once per constraint graph: leaf peeling (zero
//! fill on trees), then SuiteSparse's AMD on the loop part (`ordering`, via faer).
//! Its numeric part runs one of two kernels ([`NumericKernel`]): block elimination
//! over 3×3 blocks for short columns (chains, trees, single loops), or a
//! supernodal LDLᵀ with dense panels (`supernodal`) when the columns of L are long
//! (meshes of loops). Both apply the same scalar pivot rule, so rank decisions,
//! regularisation and the reported constraints are the same.
//!
//! # Continuity at the rank threshold
//!
//! A rank decision is a switch: a row whose relative pivot ρ = d_r / A_rr is at
//! or below τ = [`SolverSettings::pivot_tolerance`] is treated as dependent and λ
//! is the regularised minimal-norm one; just above τ it is the exact A⁻¹b, which
//! near a singular configuration is large (∝ 1/ρ on the part of b outside the
//! limit's range). As a function of the state the multipliers then jump where a
//! mechanism passes near its singular configuration, and an adaptive integrator's
//! error test fails at every step size across the jump (`dopri5` at tolerance
//! 1e-11 on `scenes/linkage_loops.ron` stopped at t = 0.85 s).
//!
//! So λ is made a continuous function of the system: with ρ_min the smallest
//! relative pivot of the exact factorisation (no row dependent) and
//! K = [`SolverSettings::regularization_band`],
//!
//! λ = (1 − w)·λ_exact + w·λ_regularised,  w = 3t² − 2t³,  t = ln(K·τ / ρ_min) / ln K
//!
//! clamped to w = 1 at ρ_min ≤ τ (a dependent row: the regularised path as
//! before) and w = 0 at ρ_min ≥ K·τ (the exact factor alone, bit for bit as
//! before: the ordinary case costs nothing). w is C¹ in ln ρ_min, and ρ_min is a
//! continuous function of A (a minimum of pivots, each a rational function of the
//! entries, no row being dropped above τ), so λ is continuous; λ_regularised does
//! not depend on the decision (the factor of A + ε·diag(A) and its refinement are
//! the same on both sides of τ), so nothing jumps at τ, and nothing at K·τ where
//! w reaches 0 with zero slope. In the band both factors are computed (one
//! more numeric pass, and the exact values kept in a second buffer). The
//! regularised solve leaves |b − Aλ| ≤ |b|, the exact one ≈ 0, so their convex
//! combination never makes the constraint error grow.
//!
//! *Scale invariance.* ρ is a ratio of a pivot to its row's own diagonal: a
//! change of units of a row (A → S A S, S diagonal) leaves every ρ unchanged, and
//! the weight is a function of ρ alone, so it is invariant as the hard test was.
//! With a rank metric ([`ConstraintSolver::set_rank_metric`]) ρ_min is taken in
//! G = J W Jᵀ, which contains no mass or inertia at all (module doc of
//! [`gauss`], "Scale-invariant rank decisions"), so the weight does not change
//! when any body's mass or inertia is scaled; A decides only whether G is
//! consulted, and through a second weight that falls continuously from 1 at
//! ρ_A = K·τ to 0 at K²·τ, so that consulting G or not is not a switch either.
//!
//! The dense reference ([`DenseLdl`]) keeps the hard switch; it is the reference
//! away from the band.
//!
//! # Nearly massless rotations (issue 10)
//!
//! A body whose inertia is tiny against its mass and size (I ≪ m·ℓ²) puts
//! 1/I·(anchor arm)² into every row of its joints. A = J M⁻¹ Jᵀ then has
//! κ(A) ≈ 1e3 · m ℓ²/I on a four-bar, and f64 keeps u·κ(A) of λ: the
//! scaling test of `tests/robust_scaling.rs` lost 1.9e-9 at inertias × 1e-4
//! and every digit at × 1e-8 (the mechanism fell off its pins, with the
//! "shape: Point" warning, from × 1e-9). Worse, α = (τ + (Jᵀλ)_θ)/I divides
//! whatever rounding λ has by I. The physics is not ill-conditioned: I → 0
//! is the point-mass limit, where the KKT system [[M, Jᵀ], [J, 0]] is regular
//! whenever J has full rank and M is positive definite on its null space.
//!
//! So the constraint system (`constraint::augmented`) keeps the angular
//! accelerations of the bodies with m·ℓ²/I > 100 (ℓ the bounding radius: a
//! uniform bar has 3) as unknowns beside λ:
//! [[B, J_r], [J_rᵀ, −I_r]] [λ; α] = [b; −τ_r], B = J M⁻¹ Jᵀ without those
//! rotations. I enters only on the diagonal, where it tends to 0. With the
//! rows scaled by 1/√B_ii and each α by the reciprocal of its largest scaled
//! entry, every entry is O(1) and the α diagonal is −I/(m·arm²) → 0: the
//! matrix is the scaled point-mass KKT matrix plus a vanishing perturbation,
//! so its condition stays that of the mechanism as I → 0. Gaussian
//! elimination with complete pivoting is backward stable on it (B alone may
//! be singular — four tiny-inertia bars have 10 pin rows on 8 translational
//! freedoms — so no fixed "λ first" order works), and one refinement step on
//! the scaled residual follows. The body's torque is then set to I·α, so that
//! a = M⁻¹f returns α to two roundings instead of a quotient by I.
//!
//! When it is taken: some constrained body has m·ℓ²/I > 100, the system has
//! at most 96 rows + such constrained rotations (dense, N³/3 operations; a
//! free body of that kind is left out, its α = τ/I needing no solve), and the rank decision —
//! made as always, in the metric G of [`gauss`] — finds J of full rank with
//! no blend towards the regularised λ due (or A merely singular in f64,
//! which the augmented system does not inherit). Otherwise, and for the
//! projections and impulses, the sparse factor of A' — A with those inertias
//! raised to m a²/100, a the arm their joints turn them by — with an
//! iteration that restores the true ones for the accelerations, the velocity
//! projection and impulses (`constraint::raised`, below); the position
//! projection keeps A' as its metric. A system with no such body runs bit for bit as before
//! (the shipped scenes' trace, energy and reaction CSVs byte-identical; only
//! `scenes/point_pendulum.ron`, I = 1e-12 kg·m², changes: its largest
//! position error against θ̈ = −(g/L) cos θ over 2 s fell from 5.5e-9 to
//! 1.1e-11 m).
//!
//! Measured (`tests/robust_scaling.rs`, every inertia decade j = −12 … −2,
//! each body alone and all four together): the accelerations and reactions
//! scale with mass and length units to ≤ 5.9e-15 and ≤ 1.4e-15 relative, the
//! pins hold to ≤ 2e-15, and x(10^j) converges to the point-mass limit
//! linearly, the decade-to-decade change falling by 0.1 ± 2e-4 down to
//! j = −12. Two near-point discs welded together and pinned (the weld's
//! angle row touches only the augmented rotations) move as the equivalent
//! single rigid body to 1.6e-16 (the normal equations: 3.2e-3, without a
//! warning); a redundant twin pin is still named at inertias × 1e-12.
//!
//! A mechanism above 96 unknowns with such bodies takes the sparse factor of
//! A' = J M'⁻¹ Jᵀ, M' with those inertias raised to m a²/100 (a the arm;
//! the normal equations are accurate there), and a fixed-point iteration restores the
//! true inertias (`constraint::raised`: it contracts by the share of a
//! permitted motion's kinetic energy that the raise added, ≈ 0.005 on
//! `scenes/linkage_loops.ron`; 7–10 right-hand sides a solve); so do the
//! projections of every system with such bodies. linkage_loops with every
//! inertia × 1e-8 … 1e-12 runs its 4,000 steps with the pins held to
//! 5e-14 m (before: diverged at × 1e-8, 19.5 m of error at × 1e-12);
//! four_bar and slider_crank hold theirs to ≤ 1e-12 m at × 1e-9 and × 1e-12
//! (before: up to 7e-5 m, and a stop at the first step). A motion of nearly
//! no inertia (a straight chain of light bars zig-zagging) is stiff, not
//! ill-conditioned: the iteration does not converge on it, and a warning
//! names it. Not covered either: the implicit integrators' Newton matrix
//! (`integrator::sparse_newton`) is still built with the true inertias. Not covered: inertias far *above* the
//! shape's own (j ≥ 4, κ(A) grows with the factor there too: 1.3e-10 at
//! j = 6, within the issue's 1e-9).
//!
//! # Cost of a redundant system (issue 10)
//!
//! A system with dependent rows is factored twice: the rank-revealing pass (exact
//! pivots, dependent ones dropped), then A + ε·diag(A). The decisions cannot be
//! read off the regularised factor alone: its relative pivot of a row is at least
//! ρ_exact + ε, and for a dependent row ε·(1 + Σ_j α_j² A_jj / A_rr) with α the
//! row's coefficients on the earlier rows, which are not bounded. Measured on the
//! all-revolute 100 × 100 grid (ε = 1e-8, τ = 1e-10): the dropped rows' regularised
//! pivots span 2.5ε to 3.7e6·ε, the kept rows' start at 4.7ε (a row whose exact ρ
//! is 1.2e-4), and kept rows with exact ρ down to 1.01e-10 exist. No threshold on
//! the regularised pivots reproduces the decisions (nor the continuity band, which
//! needs ρ_min of the exact factor), so both passes stay. What is cheaper: the
//! rank-revealing pass leaves the dropped columns out of its supernodal products
//! (`supernodal`). The regularised solve keeps two applications of
//! T = (A + εE)⁻¹E per refinement step: with one, the null-space part of an
//! inconsistent right-hand side's correction is removed only to u/ε relative,
//! which left the mass-weighted norm of λ 0.1 % above the two-application one on
//! that grid (forces Jᵀλ 5e-4 apart). Skipping the second application only where
//! the first one's change |T d|_E is small against λ (a consistent b: 33.7 →
//! 26.3 ms of solve on the all-revolute grid at |T d|_E ≤ 1e-4·|λ|_E) is not
//! kept either: the skipped application changes λ by up to |T d|_E on the
//! directions with generalised eigenvalue μ ≲ ε, not by the ~u/ε of the exact
//! null space, and near a singular configuration those directions carry
//! λ ∝ 1/μ (`scenes/linkage_loops.ron`: a reaction spike at its flat passage
//! went from −56 to 338 N); with the bound made sound (|T d|_E ≤ 1e-12·|λ|_E)
//! no step skips (docs/benchmarks.md, "grid14").
//!
//! The goal of issue 10, the all-revolute grid ≤ 2× the non-redundant grid, is
//! not within reach of this algorithm: its L has 1.86× the grid's entries
//! (2.11 M against 1.14 M: the same block structure with 2 rows on every
//! joint), and one numeric pass of it costs 1.8× the grid's (26.3 against
//! 14.4 ms, thread CPU), one solve pair ≈ 1.9×; the regularised pass and one
//! refinement step (three solve pairs for an inconsistent b) alone are ≈ 2.2×
//! the grid's full step, before the rank-revealing pass (≈ 17 ms). Skipping
//! that pass needs the decisions from elsewhere, and the regularised factor
//! bounds no exact Schur complement (above), so no cached set can be verified
//! from it either (docs/benchmarks.md, "grid14").
//!
//! # Per-step overhead (issue 10)
//!
//! A mechanism factors the same *structure* many times per step (four RK4 stages,
//! the projections), so nothing structural is redone while it holds:
//!
//! * J is built once by [`SparseJacobian::push`]; after that the constraint system
//!   overwrites its values in their fixed slots ([`SparseJacobian::set_values`]:
//!   no validation of bodies and rows, one accumulated finiteness test) while the
//!   constraint set's generation ([`crate::constraint::ConstraintSet::generation`])
//!   and the body count are those J was built for.
//! * Every built structure gets a process-unique [`SparseJacobian::structure_id`]:
//!   A's pattern is recognised by that id (and the same static bodies) instead of a
//!   comparison of the joint list, and so is the structure in the same-system test
//!   that skips a repeated factorisation (only J's values are compared there).
//! * With constraints of at most two rows (pins, contacts) the kernels touch only
//!   the leading 2×2 of each 3×3 block: J v, Jᵀλ, the zeroing of A's and L's
//!   blocks, the copy of A into L, the pivot block's inverse (its third, padding
//!   pivot is exactly 1: no division) and the diagonal step of the solve. Each
//!   entry they compute is the 3×3 kernel's expression, and the entries they skip
//!   are zeros that stay zero, so the results are bitwise those of the 3×3 kernels
//!   (`block` unit test, `tests/constraint_slots.rs`, and the traces of the shipped
//!   mechanism scenes compared byte for byte).
//! * A solve moves the right-hand side and λ between the compact vectors (by
//!   scalar row) and its padded ones (3 per constraint) with scalar moves, and
//!   with no offsets at all when every constraint has two rows: the copy of a
//!   run-time 1–3 rows compiled to a `memcpy` call per constraint (≈ 4 % of a
//!   small linkage's step; `scenes/linkage_loops.ron` −7 % CPU, bitwise the
//!   same results).
//! * With constraints of at most two rows the block kernel keeps L (and its
//!   column scratch) as compact 2×2 blocks ([`block::Block2`], 32 bytes instead
//!   of 72, packed in the padded buffers), and its 2×2 products drop the
//!   padded kernels' leading `+0 +`, an addition on the elimination's and the
//!   sweeps' dependency chains that could only turn a −0 into +0: every
//!   non-zero value is bitwise the padded kernels' (`block` unit test).
//! * [`ConstraintSolver::solve`] stages its right-hand side, and the two-row
//!   elimination substitutes it forward column by column as each column of L
//!   is finished (the sweep's operations in the sweep's order, so bitwise the
//!   same: `tests/solver_staged.rs`), on a chain independent of the
//!   elimination's; the solve then does only the diagonal and backward steps.
//!   Only a plain exact factor is used so (not a regularised, blended, reused
//!   or supernodal one).
//! * Row scales take one pass when every diagonal entry is positive (the
//!   fallback's mean, a chain of dependent additions, only when one is not).
//! * The same-system test recognises J by its
//!   [`SparseJacobian::values_identity`] (an owner unique in the process and
//!   a version bumped by every `clear`, `push` and `set_values`; none after a
//!   clone or `copy_from` until the values change) instead of keeping a copy
//!   of J and comparing it (a 19 KB `memcpy` per factorisation on a small
//!   linkage, and the whole J on the criterion bench's 10⁵ cases). The
//!   constraint system leaves a J of pins unwritten while no body's angle
//!   changed (`src/constraint/system.rs`), which keeps the identity at the
//!   first RK stage and so the factor reuse; the one-call solve takes its
//!   staged right-hand side without comparing it with itself.
//! * The two-row elimination copies A's blocks into L with the transposition
//!   as an offset of the loads (the branch on it followed no pattern a
//!   predictor learns: ≈ 7 % of the pass), eliminates a column of one to four
//!   blocks by straight-line code of its length (`eliminate_column2`: the
//!   loops' exits, after a trip count that changes from column to column,
//!   were mispredicted), and with every constraint of two rows loads the row
//!   scales and pivot blocks with the row count fixed; a pivot's relative-pivot
//!   division is skipped where it is far above the cap below which the
//!   weights need ρ_min exactly (`ratio_cap`). Bitwise the same (trace, energy
//!   and reaction CSVs, eight integrators and 13 other scenes).
//!
//! * Around the solver (linkage13): the constraint system counts its pins once
//!   per constraint-set generation, the world's `a = M⁻¹F` takes the inverse
//!   masses the assembly just refreshed instead of three divisions per body and
//!   stage, A's inverse-mass check is a vectorised fold over the flat slice,
//!   and pins reassembled at the positions of the last fill (the first RK stage,
//!   after the projections) re-evaluate only γ
//!   (`constraint::revolute::write_gamma`). Bitwise the same; ≈ 83 → 78.5 µs
//!   (docs/benchmarks.md, "linkage13").
//! * The chains through memory of the two-row kernels (linkage15): a small
//!   linkage's elimination tree is nearly a path, so column p's first block is
//!   usually row p + 1 and the value the next step needs was just stored. The
//!   elimination hands the next pivot block on in registers
//!   (`eliminate_column2` returns its first row's updated diagonal block), and
//!   the backward and forward sweeps carry x_{p+1} / y_{p+1} likewise, instead
//!   of reloading each from the store just made (a store-to-load forwarding on
//!   the chain per pivot). Bitwise the same; the backward sweep fell from
//!   8.9 % to 6.7 % of the profile, ≈ 76.7 → 74.7 µs a step.
//! * Copies and loads (linkage18): a caller that factors step after step
//!   hands the solver its inverse masses once
//!   ([`ConstraintSolver::set_inverse_masses`], then
//!   [`factor_held`](ConstraintSolver::factor_held) /
//!   [`solve_held`](ConstraintSolver::solve_held)), and the same-system test
//!   keeps the masses' and the rank metric's versions instead of copying both
//!   at every factorisation, and A's assembly does not check again the held
//!   masses it was last assembled with (finite, ≥ 0, which bodies are
//!   static); with every constraint of two rows the row scales
//!   load the exact pass's pivot blocks while they read A's diagonal (d + 0·s
//!   is d bit for bit for d > 0), and a pivot block is written as its leading
//!   2×2 only (the padding row and column stay in place from the analysis);
//!   each off-diagonal block of A takes its first contribution as a store of
//!   +0 + product, without a zeroing pass. Bitwise the same
//!   (docs/benchmarks.md, "linkage18").
//!
//! Each of these changed no result, bitwise (the shipped scenes' CSVs compared
//! byte for byte); the RK4 step of `scenes/linkage_loops.ron` (99 bars, 132
//! pins) measured ≈ 124 µs before the first and ≈ 74.7 µs after the last (the
//! machine's state moved the same binary by up to 25 % between days). The
//! issue's 50 µs is not met: what is left runs at its operation counts (the
//! four factorisations and assemblies of A an RK4 step with projection needs,
//! the joint rows and their `sincos`), so it needs fewer factorisations per
//! step, which changes results. Every round, with its method, and what was
//! tried and not kept (two interleaved elimination fronts, a closed-form
//! inverse of the pivot blocks, pin-specialised products, A's off-diagonal
//! blocks assembled straight into L's slots, the padding's zero terms dropped
//! from the pivot inverse, an AVX2 build, Jᵀλ summed body by body), is in
//! docs/benchmarks.md.
//!
//! The convenience entry point is [`ConstraintSolver`]:
//!
//! ```
//! use mx2d::solver::{ConstraintSolver, SparseJacobian};
//!
//! // two bodies, body 0 pinned to the world at its centre, body 1 hinged to body 0
//! let inv_mass = [[1.0, 1.0, 2.0], [0.5, 0.5, 1.0]];
//! let mut jac = SparseJacobian::new();
//! jac.clear(2);
//! // world pin: 2 rows, d/dt of body 0's position
//! let pin = jac.push(2, &[(0, [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0; 3]])]).unwrap();
//! // revolute joint: [I₂ | −r⊥] on each side, anchor offset r = (0.5, 0) from body 0
//! // and r = (−0.5, 0) from body 1: v0 + ω0 × r0 − v1 − ω1 × r1 = 0
//! let hinge = jac
//!     .push(
//!         2,
//!         &[
//!             (0, [[1.0, 0.0, 0.0], [0.0, 1.0, 0.5], [0.0; 3]]),
//!             (1, [[-1.0, 0.0, 0.0], [0.0, -1.0, 0.5], [0.0; 3]]),
//!         ],
//!     )
//!     .unwrap();
//! let rhs = vec![0.0, 1.0, 0.0, -2.0]; // rows of `pin`, then rows of `hinge`
//! let mut lambda = vec![0.0; jac.n_rows()];
//! let mut solver = ConstraintSolver::new();
//! let report = solver.solve(&jac, &inv_mass, None, &rhs, &mut lambda).unwrap();
//! assert!(report.rank_deficient.is_empty());
//! assert_eq!(jac.row_offset(hinge), 2);
//! # let _ = pin;
//! // the forces on the bodies: Jᵀ λ
//! let mut forces = vec![0.0; 6];
//! jac.mul_transpose(&lambda, &mut forces).unwrap();
//! // a second right-hand side with the same factors (e.g. velocity projection)
//! solver.solve_factored(&rhs, &mut lambda).unwrap();
//! ```

pub mod block;
pub mod dense;
pub mod gauss;
mod ordering;
pub mod pgs;
pub mod sparse;
mod supernodal;

pub use dense::{DenseLdl, dense_matrix};
pub use gauss::{BlockLdl, FactorReport, NumericKernel};
pub use sparse::{BlockSparseSymmetric, ConstraintId, SparseJacobian};

/// Errors of the solver: every one comes from inconsistent input, none from the
/// numbers (singular systems are regularised and reported, not refused).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SolverError {
    /// A constraint must have 1 to 3 rows.
    #[error("a constraint has 1 to 3 rows, got {0}")]
    InvalidRows(usize),
    /// A constraint touches one or two bodies.
    #[error("a constraint touches 1 or 2 bodies, got {0}")]
    InvalidBodyCount(usize),
    /// Body index past the number of bodies given to `SparseJacobian::clear`.
    #[error("body {body} out of range (n_bodies = {n_bodies})")]
    BodyOutOfRange {
        /// The offending index.
        body: usize,
        /// The number of bodies.
        n_bodies: usize,
    },
    /// The two bodies of a constraint are the same.
    #[error("a constraint joins body {0} with itself")]
    SameBody(usize),
    /// NaN or infinity (or a negative mass/compliance) in the input.
    #[error("non-finite or invalid value in {0}")]
    NonFinite(&'static str),
    /// A slice has the wrong length.
    #[error("{what} has length {got}, expected {expected}")]
    LengthMismatch {
        /// Which argument.
        what: &'static str,
        /// The length it should have.
        expected: usize,
        /// Its length.
        got: usize,
    },
    /// More than 2³² − 2 constraints.
    #[error("too many constraints")]
    TooLarge,
    /// `solve` called before `factor`, or with another matrix than the factored one.
    #[error("the matrix was not factored (or its pattern changed since)")]
    NotFactored,
    /// A constraint that does not fit its world (a body or surface that does
    /// not exist, an unsupported shape, a bad length or axis), found when a
    /// set changed outside [`World::add_constraint`](crate::world::World::add_constraint)
    /// is first used.
    #[error("constraint '{name}': {reason}")]
    InvalidConstraint {
        /// The constraint's name.
        name: String,
        /// What [`Constraint::validate`](crate::constraint::Constraint::validate) found.
        reason: String,
    },
}

/// Tolerances of the solver. The defaults suit f64 mechanisms; all are relative,
/// so results do not depend on units.
#[derive(Clone, Debug, PartialEq)]
pub struct SolverSettings {
    /// A pivot `d_r <= pivot_tolerance × A_rr` marks row r as dependent on the rows
    /// eliminated before it (redundant or singular constraint). Default 1e-10: the
    /// row is within ~1e-5 rad of the span of the others; roundoff on an exactly
    /// dependent row is ~1e-15.
    pub pivot_tolerance: f64,
    /// ε of the regularised factor A + ε·diag(A), used only when a dependent row was
    /// found. Default 1e-8 (≈ √u): well above the roundoff of the pivots
    /// (~1e-15·A_rr), so the regularised factor is safely positive definite, and
    /// small enough that the refinement converges in a few steps (rate ε/μ for a
    /// generalised eigenvalue μ of (A, diag A)); with an inconsistent right-hand side
    /// the null-space error left by the projection is ~u/ε² × its inconsistency.
    pub regularization: f64,
    /// Maximum refinement steps λ ← λ + (A + εD)⁻¹(b − Aλ) when regularised.
    pub max_refine_steps: usize,
    /// Refinement steps for a regular (non-regularised) factor; 0 by default
    /// (Cholesky-like LDLᵀ is backward stable).
    pub refine_steps: usize,
    /// Refinement stops when |b − Aλ| <= refine_tolerance × |b|.
    pub refine_tolerance: f64,
    /// Width K of the band (τ, K·τ) of smallest relative pivots, τ =
    /// `pivot_tolerance`, over which λ passes continuously from the exact to the
    /// regularised solution (module doc, "Continuity at the rank threshold").
    /// Default 100 (one decade of angle: 1e-5 to 1e-4 rad from a singular
    /// configuration); 1 or less: the hard switch at τ.
    pub regularization_band: f64,
}

impl Default for SolverSettings {
    fn default() -> Self {
        Self {
            pivot_tolerance: 1e-10,
            regularization: 1e-8,
            max_refine_steps: 20,
            refine_steps: 0,
            refine_tolerance: 1e-15,
            regularization_band: 100.0,
        }
    }
}

/// Weight of the regularised solution for a system whose smallest relative pivot
/// (d_r / A_rr in the rank metric, all rows independent) is `min_rel_pivot`: 1 at
/// or below τ = `pivot_tolerance`, 0 at or above K·τ (K = `regularization_band`),
/// and between them the C¹ step 3t² − 2t³ of t = ln(K·τ / ρ) / ln K (module doc,
/// "Continuity at the rank threshold").
pub fn regularization_weight(min_rel_pivot: f64, settings: &SolverSettings) -> f64 {
    band_weight(min_rel_pivot, settings.pivot_tolerance, settings.regularization_band)
}

/// 1 at `rho <= tau`, 0 at `rho >= band·tau`, the C¹ step in ln ρ between.
fn band_weight(rho: f64, tau: f64, band: f64) -> f64 {
    // NaN counts as small, as in the pivot test `d_r > τ·A_rr`
    if rho.is_nan() || rho <= tau {
        1.0
    } else if band.is_nan() || band <= 1.0 || rho >= band * tau {
        0.0
    } else {
        let t = (band * tau / rho).ln() / band.ln();
        t * t * (3.0 - 2.0 * t)
    }
}

/// What a solve found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SolveReport {
    /// Constraints with a row found dependent on the others (redundant or at a
    /// singular configuration), sorted. λ is then the regularised minimal-norm one.
    pub rank_deficient: std::sync::Arc<[ConstraintId]>,
    /// Constraints with independent rows on which A is nevertheless singular in
    /// f64 (see [`FactorReport::badly_scaled`]); λ is then the regularised one.
    pub badly_scaled: std::sync::Arc<[ConstraintId]>,
    /// The factor is of A + ε·diag(A) (also when `regularization_weight` is
    /// between 0 and 1: the exact factor is then used too).
    pub regularized: bool,
    /// Weight w of the regularised solution in λ = (1 − w)·λ_exact +
    /// w·λ_regularised: 0 exact, 1 regularised (a dependent row), in between in
    /// the band above the rank threshold (module doc, "Continuity at the rank
    /// threshold").
    pub regularization_weight: f64,
    /// Iterative refinement steps taken.
    pub refine_steps: usize,
    /// |b − Aλ| / |b| (NaN when not computed: regular factor without refinement).
    /// Well above the refinement tolerance with `regularized` means b was not in
    /// the range of A (inconsistent redundant constraints).
    pub relative_residual: f64,
    /// The symbolic analysis was redone for this solve (pattern changed).
    pub analyzed: bool,
}

/// One-call solver: holds A, its factors and the scratch space, all reused from
/// step to step (no allocation once the sizes are reached: checked by
/// `tests/solver_alloc.rs`). A [`factor`](Self::factor) of the very system
/// factored last (J, masses, rank metric and settings equal bit for bit) keeps
/// the factors: the velocity projection that ends a step and the first stage of
/// the next one factor the same J. J is recognised by its
/// [`SparseJacobian::values_identity`] (no copy of it is kept), or, when it has
/// none, by a copy compared bit for bit.
#[derive(Clone, Debug, Default)]
pub struct ConstraintSolver {
    /// Solver tolerances.
    pub settings: SolverSettings,
    a: BlockSparseSymmetric,
    ldl: BlockLdl,
    last_analyzed: bool,
    /// Per-body weights W of the rank metric G = J W Jᵀ (empty: none).
    rank_metric: Vec<[f64; 3]>,
    /// Bumped by [`set_rank_metric`](Self::set_rank_metric) when the weights
    /// change: the same-system test compares it instead of a copy of them.
    rank_metric_version: u64,
    /// The inverse masses of [`set_inverse_masses`](Self::set_inverse_masses)
    /// (the `*_held` calls factor with these), and a version bumped when they
    /// change.
    held_inv_mass: Vec<[f64; 3]>,
    held_inv_mass_version: u64,
    /// The version of the held masses A was last assembled with (None: given
    /// masses, or a failed assembly).
    a_held_inv_mass_version: Option<u64>,
    /// G, assembled only when A shows a small pivot.
    metric_matrix: BlockSparseSymmetric,
    /// The inputs of the last factorisation, to skip an identical one.
    factored: FactoredInputs,
    /// Its report.
    last_report: FactorReport,
    /// Factorisations skipped because their input was that of the last one.
    reused: u64,
}

/// The inputs of a factorisation, kept to recognise the same system again: a
/// constrained integrator often factors the same J twice in a row (the velocity
/// projection at the end of a step and the first stage of the next are at the
/// same positions).
#[derive(Clone, Debug, Default)]
struct FactoredInputs {
    valid: bool,
    /// J's [`SparseJacobian::values_identity`]; a J without one is kept as a
    /// copy in `jac` and compared bit for bit.
    jac_identity: Option<(u64, u64)>,
    jac: SparseJacobian,
    /// The inverse masses: the held ones' version (no copy kept), or a copy
    /// of the given ones.
    held_inv_mass_version: Option<u64>,
    inv_mass: Vec<[f64; 3]>,
    rank_metric_version: u64,
    settings: SolverSettings,
}

/// The inverse masses of a factorisation: given by the caller, or the ones
/// the solver holds ([`ConstraintSolver::set_inverse_masses`]).
#[derive(Clone, Copy)]
enum Masses<'m> {
    Given(&'m [[f64; 3]]),
    /// The held masses (the slice) at their version.
    Held(&'m [[f64; 3]], u64),
}

impl<'m> Masses<'m> {
    fn slice(self) -> &'m [[f64; 3]] {
        match self {
            Masses::Given(m) | Masses::Held(m, _) => m,
        }
    }
}

impl FactoredInputs {
    /// Same J, masses, metric and settings bit for bit (compliance: none).
    fn matches(
        &self,
        jac: &SparseJacobian,
        masses: Masses,
        rank_metric_version: u64,
        settings: &SolverSettings,
    ) -> bool {
        fn bits(v: &[[f64; 3]]) -> &[u64] {
            bytemuck::cast_slice(v)
        }
        // the same identity: the same values (no copy of J to compare)
        let same_jac = match (self.jac_identity, jac.values_identity()) {
            (Some(held), Some(given)) => held == given,
            (None, None) => self.jac.bitwise_eq(jac),
            _ => false,
        };
        // the held masses at the same version are the same values; a copy is
        // compared bit for bit (held masses against a factorisation from given
        // ones: not recorded, so not the same system as far as known)
        let same_masses = || match (self.held_inv_mass_version, masses) {
            (Some(held), Masses::Held(_, current)) => held == current,
            (Some(_), Masses::Given(_)) => false,
            (None, m) => bits(&self.inv_mass) == bits(m.slice()),
        };
        // J first: it is what differs between an RK step's stages (the
        // masses' and the metric's comparisons are then not made)
        self.valid
            && same_jac
            && self.settings == *settings
            && self.rank_metric_version == rank_metric_version
            && same_masses()
    }

    /// Records J (its identity, or a copy when it has none).
    fn record_jacobian(&mut self, jac: &SparseJacobian) {
        self.jac_identity = jac.values_identity();
        if self.jac_identity.is_none() {
            self.jac.copy_from(jac);
        }
    }
}

impl ConstraintSolver {
    /// A solver with default settings.
    pub fn new() -> Self {
        Self::default()
    }

    /// Assembles A = J M⁻¹ Jᵀ (+ compliance), analyses it if its pattern changed
    /// and factors it. `inv_mass[b] = (1/m, 1/m, 1/J)` of body b (zeros: static);
    /// `compliance`, if given, has one value (>= 0) per row.
    pub fn factor(
        &mut self,
        jac: &SparseJacobian,
        inv_mass: &[[f64; 3]],
        compliance: Option<&[f64]>,
    ) -> Result<FactorReport, SolverError> {
        self.factor_masses(jac, Masses::Given(inv_mass), compliance)
    }

    /// [`factor`](Self::factor) with the inverse masses held by the solver
    /// ([`set_inverse_masses`](Self::set_inverse_masses)): what a caller that
    /// factors step after step with masses that rarely change uses, so that
    /// the same-system test keeps their version instead of a copy of them
    /// (issue 10: the copies of the masses and of the rank metric were ≈ 1 %
    /// of a small linkage's RK4 step).
    pub fn factor_held(&mut self, jac: &SparseJacobian) -> Result<FactorReport, SolverError> {
        let masses = std::mem::take(&mut self.held_inv_mass);
        let rep = self.factor_masses(jac, Masses::Held(&masses, self.held_inv_mass_version), None);
        self.held_inv_mass = masses;
        rep
    }

    /// [`factor`](Self::factor) of the given or the held masses.
    fn factor_masses(
        &mut self,
        jac: &SparseJacobian,
        masses: Masses,
        compliance: Option<&[f64]>,
    ) -> Result<FactorReport, SolverError> {
        let inv_mass = masses.slice();
        // The same system as the last factorisation (bit for bit, hence the same
        // factors bit for bit): keep them. Not with a compliance (not recorded).
        if compliance.is_none() && self.factored.matches(jac, masses, self.rank_metric_version, &self.settings) {
            self.reused += 1;
            self.last_analyzed = false;
            let mut rep = self.last_report.clone();
            rep.analyzed = false;
            return Ok(rep);
        }
        self.factored.valid = false;
        // the held masses at the version A was last assembled with were
        // checked then (finite, ≥ 0, which bodies are static): not again
        let checked = matches!(masses, Masses::Held(_, v) if self.a_held_inv_mass_version == Some(v));
        self.a_held_inv_mass_version = None;
        self.a.assemble_masses(jac, inv_mass, compliance, checked)?;
        if let Masses::Held(_, v) = masses {
            self.a_held_inv_mass_version = Some(v);
        }
        let rep = if self.rank_metric.len() == jac.n_bodies() && !self.rank_metric.is_empty() {
            let (weights, g) = (&self.rank_metric, &mut self.metric_matrix);
            self.ldl.factor_with_metric(&self.a, &self.settings, || {
                g.assemble(jac, weights, None)?;
                Ok(&*g)
            })?
        } else {
            self.ldl.factor(&self.a, &self.settings)?
        };
        self.last_analyzed = rep.analyzed;
        if compliance.is_none() {
            // copies into the kept buffers: no allocation once the sizes are reached
            let f = &mut self.factored;
            f.record_jacobian(jac);
            match masses {
                Masses::Held(_, version) => f.held_inv_mass_version = Some(version),
                Masses::Given(m) => {
                    f.held_inv_mass_version = None;
                    f.inv_mass.clear();
                    f.inv_mass.extend_from_slice(m);
                }
            }
            f.rank_metric_version = self.rank_metric_version;
            f.settings.clone_from(&self.settings);
            f.valid = true;
            self.last_report.clone_from(&rep);
        }
        Ok(rep)
    }

    /// How many [`factor`](Self::factor) calls found the same J, masses, rank
    /// metric and settings (bit for bit) as the factorisation before and kept its
    /// factors instead of computing them again.
    pub fn reused_factorizations(&self) -> u64 {
        self.reused
    }

    /// Sets the per-body weights `W_b` of the metric in which rank is decided
    /// (module doc, "Scale-invariant rank decisions"): for each body
    /// `[1, 1, 1/ℓ_b²]` with ℓ_b a length of the body's geometry (its bounding
    /// radius; 0 for a point, whose rotation is not a degree of freedom), zeros
    /// for a fixed body. Zero weights must match the zero inverse masses. Empty:
    /// rank is decided on A itself. Copied; no allocation once the size is reached.
    pub fn set_rank_metric(&mut self, weights: &[[f64; 3]]) {
        if bytemuck::cast_slice::<_, u64>(&self.rank_metric) != bytemuck::cast_slice::<_, u64>(weights) {
            self.rank_metric.clear();
            self.rank_metric.extend_from_slice(weights);
            self.rank_metric_version += 1;
        }
    }

    /// Sets the per-body inverse masses `(1/m, 1/m, 1/J)` (zeros: static) that
    /// [`factor_held`](Self::factor_held) and [`solve_held`](Self::solve_held)
    /// use. Copied, and only when they differ bit for bit from the ones held;
    /// no allocation once the size is reached.
    pub fn set_inverse_masses(&mut self, inv_mass: &[[f64; 3]]) {
        if bytemuck::cast_slice::<_, u64>(&self.held_inv_mass) != bytemuck::cast_slice::<_, u64>(inv_mass) {
            self.held_inv_mass.clear();
            self.held_inv_mass.extend_from_slice(inv_mass);
            self.held_inv_mass_version += 1;
        }
    }

    /// Solves A λ = `rhs` with the factors of the last [`factor`](Self::factor)
    /// (any number of right-hand sides). `rhs` and `lambda` are indexed by rows
    /// (see [`SparseJacobian::row_offset`]).
    pub fn solve_factored(&mut self, rhs: &[f64], lambda: &mut [f64]) -> Result<SolveReport, SolverError> {
        self.ldl.solve(&self.a, &self.settings, rhs, lambda)
    }

    /// [`factor`](Self::factor) then [`solve_factored`](Self::solve_factored).
    pub fn solve(
        &mut self,
        jac: &SparseJacobian,
        inv_mass: &[[f64; 3]],
        compliance: Option<&[f64]>,
        rhs: &[f64],
        lambda: &mut [f64],
    ) -> Result<SolveReport, SolverError> {
        // the block kernel substitutes `rhs` forward while it factors (two-row
        // constraints): the solve then does only the diagonal and backward steps
        // (unstaged after the solve, also when either fails)
        self.solve_masses(jac, Masses::Given(inv_mass), compliance, rhs, lambda)
    }

    /// [`solve`](Self::solve) with the held inverse masses
    /// ([`factor_held`](Self::factor_held)).
    pub fn solve_held(
        &mut self,
        jac: &SparseJacobian,
        rhs: &[f64],
        lambda: &mut [f64],
    ) -> Result<SolveReport, SolverError> {
        let masses = std::mem::take(&mut self.held_inv_mass);
        let rep = self.solve_masses(jac, Masses::Held(&masses, self.held_inv_mass_version), None, rhs, lambda);
        self.held_inv_mass = masses;
        rep
    }

    /// [`solve`](Self::solve) of the given or the held masses.
    fn solve_masses(
        &mut self,
        jac: &SparseJacobian,
        masses: Masses,
        compliance: Option<&[f64]>,
        rhs: &[f64],
        lambda: &mut [f64],
    ) -> Result<SolveReport, SolverError> {
        self.ldl.stage_rhs(rhs);
        let solved = self
            .factor_masses(jac, masses, compliance)
            .and_then(|_| self.ldl.solve_staged(&self.a, &self.settings, lambda));
        self.ldl.stage_rhs(&[]);
        let mut rep = solved?;
        rep.analyzed = self.last_analyzed;
        Ok(rep)
    }

    /// The assembled matrix A.
    pub fn matrix(&self) -> &BlockSparseSymmetric {
        &self.a
    }

    /// The factors (fill, order, analysis counter).
    pub fn factors(&self) -> &BlockLdl {
        &self.ldl
    }
}
