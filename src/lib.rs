//! # mx2d — planar mechanisms, exactly; ball populations, fast
//!
//! mx2d simulates mechanical systems in the plane. Its **mechanism tier** (f64)
//! integrates rigid bodies — circles, ellipses, superellipses, polygons, bars —
//! under gravity, loads and force fields, held by joints, rolling contacts and
//! motors whose forces are Lagrange multipliers: the constraint Jacobian is
//! assembled block-sparse and J M⁻¹ Jᵀ λ = b is solved by sparse Gaussian
//! elimination ordered leaves-first. Its **population tier** (f32) steps
//! millions of balls — fields, grid, substepped Gauss–Seidel contacts with
//! restitution, friction and spin — with WGSL compute shaders on resident
//! buffers and a multithreaded CPU twin of every kernel; the bodies of the
//! mechanism tier are moving obstacles for the balls.
//!
//! ## Getting started
//!
//! ```
//! use glam::DVec2;
//! use mx2d::body::Body;
//! use mx2d::constraint::{Constraint, ConstraintKind};
//! use mx2d::integrator::Method;
//! use mx2d::shape::Shape;
//! use mx2d::world::World;
//!
//! // A 1 m bar pinned at one end, released horizontally.
//! let mut world = World::new(DVec2::new(0.0, -9.81));
//! world.set_integrator(Method::Rk4);
//! world.dt = 1e-3;
//! let bar = world
//!     .add_body(Body::builder("bar", Shape::Bar { length: 1.0, width: 0.02 }).mass(2.0).position(DVec2::new(0.5, 0.0)).build()?)?;
//! world.add_constraint(Constraint {
//!     name: "pivot".into(),
//!     body_a: bar,
//!     body_b: None,
//!     kind: ConstraintKind::Revolute { anchor_a: DVec2::new(-0.5, 0.0), anchor_b: DVec2::ZERO },
//! })?;
//! let e0 = world.energy().total;
//! for _ in 0..1000 {
//!     world.step()?;
//! }
//! // The pin's force does no work: the energy is kept.
//! assert!((world.energy().total - e0).abs() < 1e-8 * e0.abs().max(1.0));
//! assert!(world.constraint_error() < 1e-12);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Scenes are usually written as RON files (`scenes/*.ron`, schema in
//! `docs/scene-format.md`) and run with `mx2d run SCENE --headless`.
//!
//! ## Features
//!
//! | area | what | where |
//! |---|---|---|
//! | bodies | circle, ellipse, superellipse, convex polygon, box, bar, point mass (no rotation); mass from density | [`body`], [`shape`] |
//! | surfaces | line, circle, ellipse, superellipse (inside or out), polyline | [`surface`] |
//! | loads | forces at points, torques, time profiles, springs-dampers, Stokes drag | [`load`] |
//! | fields | uniform, radial (falloff), vortex, drag in rectangles, discs, half-planes | [`field`] (CPU), [`gpu`] (WGSL) |
//! | integrators | Euler, symplectic Euler, implicit midpoint (Newton), RK2, RK4, Adams–Bashforth 4, Dormand–Prince 5(4) with dense output, L-stable SDIRK3 for stiff mechanisms (both adaptive, `--tolerance`) | [`integrator`] |
//! | constraints | revolute, distance, prismatic, weld, angle, gear, motor, rolling, point-on-curve, user closures | [`constraint`] |
//! | solver | block-sparse J, A = J M⁻¹ Jᵀ, leaves-first LDLᵀ (AMD on loops, supernodal panels on meshes), regularised minimal norm for redundancy, continuous near the rank threshold, rank decided independently of masses and inertias; nearly massless rotations (m·ℓ²/I > 100) solved with the multipliers in a scaled KKT system (small systems, dense) or on a factor with those inertias raised and restored by iteration (any size; the projections too) | [`solver`] |
//! | drift | Newton projection of positions and velocities, Baumgarte | [`constraint::system`] |
//! | inverse problems | inverse kinematics, joint torques, impulsive constraints | [`inverse`], [`world::World::impulsive_constraint`] |
//! | broadphase | uniform grid (CPU twin + WGSL), sweep-and-prune | [`broadphase`], [`gpu`] |
//! | contacts | narrowphase (circle, polygon clipping, any shape vs surfaces), time of impact on the integrator's trajectory, Newton impacts, Coulomb friction (static/kinetic) and rolling resistance by block PGS (graph-coloured, parallel colours); or Box2D v3's soft step for tall stacks (`contacts.solver: SoftStep`); contact forces in the reactions file, materials with a mixing rule | [`contact`], [`solver::pgs`], [`contact::soft_step`] |
//! | population | balls from generators (random boxes without overlap); contacts, restitution, friction, spin; surfaces and bodies as obstacles; per-ball sleeping with wake through contacts (`population.sleep_time`, off by default); CPU twin + WGSL; binary snapshots (`--snapshot`) | [`population`], [`population::snapshot`] |
//! | scenes and CLI | RON scenes with positioned errors, `--set` overrides, CSV/JSON outputs | [`scene`], [`run`], [`output`] |
//! | pictures | wgpu renderer (SDF discs, tessellated shapes, surfaces, fields, joints, force arrows, trails; population balls straight from the GPU backend's buffers) to a winit window or PNG; default demo sized to the adapter; `--frames`; energy and bench plots with plotters | [`render`] |
//!
//! ## Conventions
//! SI units; angles in radians, counter-clockwise; z-torque r × F. A body's
//! position is its centre of mass; q = (x, y, φ), v = (vx, vy, ω), mass
//! matrix diag(m, m, J). Constraint forces are Jᵀλ. SI is only the default
//! of a scene's values (gravity, `dt`): a mechanism written in other units
//! of length, time or mass takes the same steps, bit for bit at powers of
//! two (`tests/units_invariance.rs`: five integrators, the adaptive and
//! implicit ones through [`integrator::weights`], both contact solvers,
//! inverse problems; the population tier in its time unit).
//!
//! ## FAQ
//! - *Why does a free body fall through a floor?* Contacts are off unless the
//!   scene turns them on: add `contacts: Contacts()` (RON) or set
//!   `world.contacts.settings = ContactSettings { enabled: true,
//!   ..Default::default() }` ([`contact::ContactSettings`]; per-body
//!   materials in its `body_materials`), and every body collides with every
//!   surface and every other body (impacts with restitution, friction,
//!   rolling resistance). Without it surfaces act on bodies only through
//!   constraints (rolling, point-on-curve). The balls of the population tier
//!   always collide with the surfaces and the bodies.
//! - *Exact contacts or the soft step?* The default contact solver is exact
//!   (impacts at their time on the integrator's trajectory, PGS on the
//!   Schur complement, joints exact to 1e-10): textbook answers. For tall
//!   stacks and piles of thousands of boxes, `contacts.solver: SoftStep` is
//!   Box2D v3's sub-stepped soft contacts, faster and stable, with springy
//!   contacts in return ([`contact::soft_step`]).
//! - *Do balls push the bodies?* No: the population is stepped after the
//!   bodies, which are kinematic obstacles for it (one-way coupling).
//! - *My pile still overlaps a few % of the radius.* The residual overlap of
//!   a pile is its load over the position solve's stiffness, ~N g h² per
//!   sweep for a pile N balls high: raise `substeps` (h² falls with their
//!   square, better than `iterations`). balls_box 10⁴ (100 high) rests at
//!   about 1 % of r (1.04–1.19 % over spawn seeds 1–6) with the defaults:
//!   16 substeps × 2 sweeps and the stabilisation sweep every other substep
//!   (0.9 % before that sweep, which ended a blow-up of one seed in five).
//! - *My chain diverges with `symplectic`.* First-order methods cannot follow
//!   links spinning at hundreds of rad/s at a millisecond step; use `rk4` or a
//!   smaller step.
//! - *My light chain under a heavy load (or a stiff spring) diverges with
//!   `rk4`.* Its stiffest mode needs a tiny explicit step; `sdirk3` (L-stable,
//!   implicit, adaptive) runs it at the step the motion needs, its Newton
//!   iteration on the same sparse factorisation as the constraint solve
//!   (`integrator::sparse_newton`). For a mechanism that is not stiff, `rk4`
//!   or `dopri5` are cheaper (linkage_loops at 1e-3 accuracy: dopri5 0.018,
//!   rk4 0.032, sdirk3 0.068, midpoint 0.240 CPU s per simulated second).
//! - *Does an adaptive step jump branches at a singular configuration?* Not
//!   any more: `dopri5` and `sdirk3` project onto the constraints between
//!   their substeps ([`integrator::Dynamics::project`]); without it the
//!   drift of a long step, amplified by the near-singular multipliers, did
//!   work and put `linkage_loops` on its other branch. The fixed-step
//!   `midpoint` halves a step whose Newton iteration fails there (down to
//!   dt/4096, the pieces joined by the same projection) and so passes it
//!   too; halving at step after step means a stiff system, and it stops
//!   and names `sdirk3`.
//! - *My run stops with "100000 substeps inside one step".* `dopri5` or
//!   `sdirk3` were asked to cross a step (`dt`, their largest) in which the
//!   motion is that much faster — a period of nanoseconds at a millisecond
//!   step, from forces or a gravity far beyond the bodies' scale. The stop
//!   ([`integrator::MAX_SUBSTEPS`]) says how far into the step they got;
//!   check the scene's forces and units, or give a smaller `dt`.
//! - *`mx2d check` says my bodies start overlapping.* Two bodies (or a body
//!   and a surface) are placed inside each other by more than 1 % of the
//!   smaller radius — a generator's `spacing` below the bodies' size, or
//!   bodies listed on top of each other. The contacts push them apart in the
//!   first steps, with the energy that takes; place them touching.
//! - *How do I model a point mass?* `shape: Point` with a `mass`: its rotation
//!   is not a degree of freedom; hang it on a `Distance` rod. A body with a
//!   tiny inertia on an offset pin works too (it is not a singular joint).
//! - *A constraint is listed twice.* It works: the multipliers are the
//!   regularised minimal-norm ones, the motion is unique, and a warning names
//!   the constraints.
//! - *My pile takes longer than 10 s to come to rest.* A pile 100 balls high
//!   keeps compacting (voids along its grain boundaries close) until 10–15 s;
//!   Box2D v3 does the same on that scene (docs/benchmarks.md, "settle17").
//!   `population.sleep_time` freezes balls at rest (off by default: it leaves
//!   sleepers' overlaps in place).
//! - *`mx2d run` refuses my `--trace`.* A trace row per ball and recorded step
//!   is ~84 bytes (84 MB a step at 10⁶ balls): past `--max-output` (4 GiB by
//!   default) the run is refused before any file exists, with the smallest
//!   `--every` that fits; `--snapshot` writes 28 bytes a ball and
//!   `--max-output none` lifts the limit.
//! - *Can I see it without a display?* Yes: `mx2d render SCENE --out F.png`
//!   and `mx2d run SCENE --headless --frames DIR` draw offscreen on any wgpu
//!   adapter, Mesa's software lavapipe included.
//! - *Does watching change the run?* No: the window takes fixed steps of
//!   `dt` whatever the frame rate and steps the same [`run::Session`] as a
//!   headless run, so `mx2d run SCENE --trace F` (or any other output) in a
//!   window, with `--frames` or `--headless` writes the same bytes and stops
//!   at the same step; with the GPU backend the balls are drawn from its
//!   buffers, never read back for a frame.
//! - *Why do the GPU and the CPU twin give different balls?* On lavapipe they
//!   give the same bits. A real GPU rounds differently (fused multiply-adds,
//!   Vulkan's 2.5-ulp division and square root), and a pile in motion
//!   amplifies one ulp to visible differences within a step (as the CPU twin
//!   does with itself: `examples/twin_sensitivity.rs`). Balls in flight agree
//!   within 1e-4; piles agree in their statistics (rest, overlap, energy).
//! - *How fast is the GPU step?* On an NVIDIA H200: 12.7 ms/step at 10⁶ balls
//!   and 91.9 at 10⁷ (16 substeps), 30–40× the 16-core CPU twin (27 Nov 2026,
//!   before the stabilisation sweep every other substep became the default:
//!   it adds 72 colour dispatches to the 288 of a step, not yet re-measured);
//!   `mx2d bench --scene balls_box --passes` shows where each stage's time goes.
//! - *Where does the GPU plug into the world?* Through two traits, so that
//!   [`world`] names no device API: the fields' [`field::FieldEvaluator`]
//!   ([`gpu::GpuFieldBackend`], `World::set_field_evaluator`) and the
//!   population's [`population::PopulationBackend`]
//!   ([`population::gpu::GpuPopulation`], `World::set_population_backend`).
//!   Without one the CPU path runs; another device (or a test double) is one
//!   impl of the trait.
//! - *May I push into `world.constraints` or `world.bodies` directly?* Yes:
//!   `World::add_constraint` checks a constraint as it adds it, and a set
//!   changed directly is checked before the next step or query uses it (a
//!   pin to a body the world does not have stops that step with the pin's
//!   name); a body count changed directly restarts the multistep history.
//! - *The GPU path says it cannot run.* Without any Vulkan/Metal/DX12 adapter the
//!   CPU twins run and the reason is printed once; `MX2D_REQUIRE_GPU=1` turns
//!   that into an error (CI sets it, with Mesa's lavapipe installed).
#![warn(missing_docs)]
// Numerical kernels index several arrays with one loop variable; iterator
// zips would hide the formulas they transcribe.
#![allow(clippy::needless_range_loop)]

pub mod bench;
pub mod body;
pub mod broadphase;
pub mod constraint;
pub mod contact;
pub mod field;
pub mod gpu;
pub mod integrator;
pub mod inverse;
pub mod load;
pub mod math;
pub mod output;
pub mod population;
pub mod render;
pub mod run;
pub mod scene;
pub mod shape;
pub mod solver;
pub mod surface;
pub(crate) mod team;
pub mod world;
