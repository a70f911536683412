//! The scene file schema (RON). Every field is documented in
//! `docs/scene-format.md`; keep the two in step.

use glam::DVec2;
use serde::{Deserialize, Serialize};

use crate::constraint::Drive;
use crate::contact::{BroadphaseChoice, MixRule};
use crate::field::Field;
use crate::integrator::Method;
use crate::load::Profile;
use crate::population::PopulationDef;
use crate::shape::Shape;
use crate::surface::Surface;

fn default_gravity() -> DVec2 {
    DVec2::new(0.0, -9.81)
}
fn default_dt() -> f64 {
    1e-3
}

/// A scene file: the world, how to integrate it, and for how long by default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Scene")]
pub struct SceneFile {
    /// Scene name (reported in summaries).
    pub name: String,
    /// Free text.
    #[serde(default)]
    pub description: String,
    /// Gravitational acceleration (m/s²); default (0, −9.81).
    #[serde(default = "default_gravity")]
    pub gravity: DVec2,
    /// Step size (s); default 0.001.
    #[serde(default = "default_dt")]
    pub dt: f64,
    /// Integration method; default `Symplectic`.
    #[serde(default)]
    pub integrator: Method,
    /// Relative error tolerance of the adaptive integrators (`Dopri5`,
    /// `Sdirk3`), which take steps ≤ `dt` to meet it; default 1e-6.
    #[serde(default)]
    pub tolerance: Option<f64>,
    /// Default run length in steps (the command line may override).
    #[serde(default)]
    pub steps: Option<u64>,
    /// Default run length in seconds, used when `steps` is absent; default 1 s.
    #[serde(default)]
    pub duration: Option<f64>,
    /// Rigid bodies.
    #[serde(default)]
    pub bodies: Vec<BodyDef>,
    /// Static surfaces.
    #[serde(default)]
    pub surfaces: Vec<Surface>,
    /// Loads.
    #[serde(default)]
    pub loads: Vec<LoadDef>,
    /// Force fields in regions.
    #[serde(default)]
    pub fields: Vec<Field>,
    /// Divergence bound: the largest kinetic energy one body may reach (J).
    #[serde(default)]
    pub max_body_energy: Option<f64>,
    /// Joints, rolling, curve contacts, motors.
    #[serde(default)]
    pub constraints: Vec<ConstraintDef>,
    /// Generated chains of bars joined by pins.
    #[serde(default)]
    pub chains: Vec<ChainDef>,
    /// Drift correction.
    #[serde(default)]
    pub stabilization: StabilizationDef,
    /// Contacts and impacts; absent: bodies pass through each other and the surfaces.
    #[serde(default)]
    pub contacts: Option<ContactsDef>,
    /// Named contact materials, for `bodies[i].material` and `surfaces[i].material`.
    #[serde(default)]
    pub materials: Vec<MaterialDef>,
    /// Generated piles of boxes: pyramids and columns.
    #[serde(default)]
    pub piles: Vec<PileDef>,
    /// Generated grids of bodies of mixed shapes, dropped from rest.
    #[serde(default)]
    pub drops: Vec<DropDef>,
    /// The population tier: balls from generators (`docs/scene-format.md`).
    #[serde(default)]
    pub population: Option<PopulationDef>,
}

/// `count` bodies on a grid of `columns` columns, `spacing` apart, from
/// `origin` (bottom-left) upwards; body k takes shape k mod len(shapes) and
/// angle 0.7·k rad. Bodies are named `<prefix><k>`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Drop")]
pub struct DropDef {
    /// Body name prefix.
    pub prefix: String,
    /// Number of bodies.
    pub count: usize,
    /// Bodies per row.
    pub columns: usize,
    /// Centre of the first body (m).
    pub origin: DVec2,
    /// Distance between neighbouring centres (m).
    pub spacing: f64,
    /// Shapes, used in turn.
    pub shapes: Vec<Shape>,
    /// Areal density (kg/m²); default 1.
    #[serde(default = "one")]
    pub density: f64,
    /// Contact material name; default none.
    #[serde(default)]
    pub material: Option<String>,
}

/// A generated pile of equal boxes, each touching its neighbours: a pyramid
/// (`rows` boxes at the bottom, one fewer per row, Box2D's `large_pyramid`) or
/// a column of `rows` boxes. Bodies are named `<prefix><row>_<column>`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Pile")]
pub struct PileDef {
    /// Body name prefix.
    pub prefix: String,
    /// Rows (pyramid: boxes in the bottom row; column: boxes).
    pub rows: usize,
    /// A pyramid (default) or a single column.
    #[serde(default = "yes")]
    pub pyramid: bool,
    /// Half side of a box (m); default 0.5.
    #[serde(default = "half_metre")]
    pub half_extent: f64,
    /// Middle of the bottom row's bottom edge (m); default (0, 0).
    #[serde(default)]
    pub base: DVec2,
    /// Mass of a box (kg); default 1.
    #[serde(default = "one")]
    pub mass: f64,
    /// Contact material name (one of `materials`); default none.
    #[serde(default)]
    pub material: Option<String>,
}

fn half_metre() -> f64 {
    0.5
}

fn one() -> f64 {
    1.0
}

/// Contact settings as written in a scene (see `src/contact/mod.rs`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Contacts")]
pub struct ContactsDef {
    /// How two materials mix: `Min` (default), `Max`, `Mean`, `Product`.
    #[serde(default)]
    pub mix: MixRule,
    /// Body–body broadphase: `Auto` (default), `Grid`, `SweepAndPrune`.
    #[serde(default)]
    pub broadphase: BroadphaseChoice,
    /// Bodies joined by a constraint collide too; default false.
    #[serde(default)]
    pub collide_connected: bool,
    /// Approach speed below which a contact rests instead of bouncing (m/s); default 2·|g|·dt.
    #[serde(default)]
    pub resting_speed: Option<f64>,
    /// Tolerated penetration / touching distance (m); default 0.5 % of the smallest body's bounding radius.
    #[serde(default)]
    pub slop: Option<f64>,
    /// PGS sweeps at most; default 100.
    #[serde(default)]
    pub iterations: Option<usize>,
    /// PGS relative convergence tolerance; default 1e-12.
    #[serde(default)]
    pub tolerance: Option<f64>,
    /// Contact PGS ↔ joint projection alternations; default 4.
    #[serde(default)]
    pub joint_passes: Option<usize>,
    /// Time-of-impact events per step at most; default 64.
    #[serde(default)]
    pub max_impact_events: Option<usize>,
    /// Resting-contact solver: `Exact` (default) or `SoftStep(...)`.
    #[serde(default)]
    pub solver: Option<ContactSolverDef>,
}

/// The resting-contact solver as written in a scene (see
/// `src/contact/soft_step/`); every `SoftStep` field is optional. Named
/// `ContactSolver` in messages (an unknown variant named the Rust type).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "ContactSolver")]
pub enum ContactSolverDef {
    /// Time of impact, exact impacts, block PGS (the default).
    Exact,
    /// Box2D v3's soft step.
    SoftStep {
        /// Sub-steps per step; default 4.
        #[serde(default)]
        substeps: Option<usize>,
        /// Contact stiffness (Hz), body–body; twice it against static partners;
        /// default an eighth of the sub-step rate (30 Hz at dt = 1/60 s and 4 sub-steps).
        #[serde(default)]
        hertz: Option<f64>,
        /// Damping ratio of the contact spring; default 10.
        #[serde(default)]
        damping_ratio: Option<f64>,
        /// Largest push-out speed (m/s); default 10 slops per step (2.12 m/s
        /// for boxes of side 1 m at dt = 1/60 s).
        #[serde(default)]
        push_speed: Option<f64>,
        /// Biased sweeps per sub-step; default 1.
        #[serde(default)]
        iterations: Option<usize>,
        /// Relax sweeps per sub-step; default 1.
        #[serde(default)]
        relax_iterations: Option<usize>,
        /// Speculative margin (m); default 4 × the slop.
        #[serde(default)]
        speculative: Option<f64>,
    },
}

impl ContactSolverDef {
    /// The solver these fields describe (not yet validated).
    pub fn solver(&self) -> crate::contact::ContactSolver {
        use crate::contact::soft_step::SoftStepSettings;
        match *self {
            ContactSolverDef::Exact => crate::contact::ContactSolver::Exact,
            ContactSolverDef::SoftStep {
                substeps,
                hertz,
                damping_ratio,
                push_speed,
                iterations,
                relax_iterations,
                speculative,
            } => {
                let d = SoftStepSettings::default();
                crate::contact::ContactSolver::SoftStep(SoftStepSettings {
                    substeps: substeps.unwrap_or(d.substeps),
                    hertz: hertz.or(d.hertz),
                    damping_ratio: damping_ratio.unwrap_or(d.damping_ratio),
                    push_speed: push_speed.or(d.push_speed),
                    iterations: iterations.unwrap_or(d.iterations),
                    relax_iterations: relax_iterations.unwrap_or(d.relax_iterations),
                    speculative: speculative.or(d.speculative),
                })
            }
        }
    }
}

/// A named contact material.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Material")]
pub struct MaterialDef {
    /// Name that bodies and surfaces use.
    pub name: String,
    /// Static friction μ_s (≥ 0); default 0.
    #[serde(default)]
    pub friction: f64,
    /// Kinetic friction μ_k (0 ≤ μ_k ≤ μ_s); default `friction`.
    #[serde(default)]
    pub kinetic_friction: Option<f64>,
    /// Restitution e ∈ [0, 1]; default 0.
    #[serde(default)]
    pub restitution: f64,
    /// Rolling-resistance length μ_r (m, ≥ 0); default 0.
    #[serde(default)]
    pub rolling_resistance: f64,
}

impl MaterialDef {
    /// The contact material these coefficients describe (not yet validated).
    pub fn material(&self) -> crate::contact::Material {
        crate::contact::Material {
            friction: self.friction,
            kinetic_friction: self.kinetic_friction,
            restitution: self.restitution,
            rolling_resistance: self.rolling_resistance,
        }
    }
}

/// How constraint drift is corrected.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Stabilization")]
pub struct StabilizationDef {
    /// Newton projection of positions and velocities after each step; default on.
    #[serde(default = "yes")]
    pub projection: bool,
    /// Baumgarte rate α (1/s); default off.
    #[serde(default)]
    pub baumgarte: Option<f64>,
}

impl Default for StabilizationDef {
    fn default() -> Self {
        Self { projection: true, baumgarte: None }
    }
}

fn yes() -> bool {
    true
}

/// A constraint as written in a scene. `a` and `b` name bodies; without `b`
/// the constraint ties body `a` to the world. Anchors are body-frame points;
/// `at`, where offered, gives the joint's world position at t = 0 instead and
/// the anchors are computed from it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Constraint")]
pub enum ConstraintDef {
    /// Pin joint.
    Revolute {
        /// Name (default `revolute<i>`).
        #[serde(default)]
        name: Option<String>,
        /// First body.
        a: String,
        /// Second body; none: the world.
        #[serde(default)]
        b: Option<String>,
        /// World position of the pin at t = 0.
        #[serde(default)]
        at: Option<DVec2>,
        /// Anchor on `a`, body frame (when `at` is absent).
        #[serde(default)]
        anchor_a: Option<DVec2>,
        /// Anchor on `b` (body frame) or world point (when `at` is absent).
        #[serde(default)]
        anchor_b: Option<DVec2>,
    },
    /// Rigid bar between two anchors.
    Distance {
        /// Name.
        #[serde(default)]
        name: Option<String>,
        /// First body.
        a: String,
        /// Second body; none: the world.
        #[serde(default)]
        b: Option<String>,
        /// Anchor on `a`, body frame; default the centre.
        #[serde(default)]
        anchor_a: DVec2,
        /// Anchor on `b` (body frame) or world point; default the centre/origin.
        #[serde(default)]
        anchor_b: DVec2,
        /// Length (m); default the distance at t = 0.
        #[serde(default)]
        length: Option<f64>,
    },
    /// Slider along an axis of `b` (or of the world).
    Prismatic {
        /// Name.
        #[serde(default)]
        name: Option<String>,
        /// Sliding body.
        a: String,
        /// Guide body; none: the world.
        #[serde(default)]
        b: Option<String>,
        /// Axis direction in world coordinates at t = 0.
        axis: DVec2,
    },
    /// Rigid joint at a world point.
    Weld {
        /// Name.
        #[serde(default)]
        name: Option<String>,
        /// First body.
        a: String,
        /// Second body; none: the world.
        #[serde(default)]
        b: Option<String>,
        /// World position of the weld at t = 0; default a's centre.
        #[serde(default)]
        at: Option<DVec2>,
    },
    /// Fixed relative angle (the one at t = 0 unless given).
    Angle {
        /// Name.
        #[serde(default)]
        name: Option<String>,
        /// First body.
        a: String,
        /// Second body; none: the world.
        #[serde(default)]
        b: Option<String>,
        /// φ_a − φ_b (rad).
        #[serde(default)]
        angle: Option<f64>,
    },
    /// Gear: φ_a + ratio·φ_b stays at its value at t = 0.
    Gear {
        /// Name.
        #[serde(default)]
        name: Option<String>,
        /// First body.
        a: String,
        /// Second body.
        b: String,
        /// Ratio k.
        ratio: f64,
    },
    /// Motor: prescribed relative angle φ_a − φ_b = φ₀ + θ(t).
    Motor {
        /// Name.
        #[serde(default)]
        name: Option<String>,
        /// Driven body.
        a: String,
        /// Reference body; none: the world.
        #[serde(default)]
        b: Option<String>,
        /// θ(t).
        drive: Drive,
    },
    /// Body outline on a static surface: rolling without slipping, or sliding.
    Rolling {
        /// Name.
        #[serde(default)]
        name: Option<String>,
        /// Body (circle, ellipse, or superellipse with exponent >= 2).
        body: String,
        /// Index of the surface in `surfaces`.
        surface: usize,
        /// Frictionless sliding instead of rolling.
        #[serde(default)]
        sliding: bool,
    },
    /// A body point kept on a static surface, sliding or not.
    PointOnCurve {
        /// Name.
        #[serde(default)]
        name: Option<String>,
        /// Body.
        body: String,
        /// Body-frame point (m).
        #[serde(default)]
        point: DVec2,
        /// Index of the surface in `surfaces`.
        surface: usize,
        /// The point may slide along the surface.
        #[serde(default = "yes")]
        sliding: bool,
    },
}

/// A chain of `links` bars hanging from a pin: bodies `<prefix>0…`, joined end
/// to end by pins, the first pinned to the world at `anchor`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Chain")]
pub struct ChainDef {
    /// Body name prefix.
    pub prefix: String,
    /// Number of links (bodies).
    pub links: usize,
    /// World pin of the first link (m).
    pub anchor: DVec2,
    /// Direction the chain is laid out in at t = 0.
    #[serde(default = "down")]
    pub direction: DVec2,
    /// Length of one link (m).
    pub link_length: f64,
    /// Mass of one link (kg).
    pub link_mass: f64,
    /// Thickness of a link (m), for drawing and inertia.
    #[serde(default)]
    pub width: f64,
}

fn down() -> DVec2 {
    DVec2::new(0.0, -1.0)
}

/// A rigid body as written in a scene.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Body")]
pub struct BodyDef {
    /// Unique name.
    pub name: String,
    /// Shape (body frame, centre of mass at the origin).
    pub shape: Shape,
    /// Mass (kg). Give `mass` or `density`; neither means density 1 kg/m².
    #[serde(default)]
    pub mass: Option<f64>,
    /// Areal density (kg/m²).
    #[serde(default)]
    pub density: Option<f64>,
    /// Moment of inertia about the centre of mass (kg·m²); default from the shape.
    #[serde(default)]
    pub inertia: Option<f64>,
    /// Initial centre of mass position (m).
    #[serde(default)]
    pub position: DVec2,
    /// Initial angle (rad).
    #[serde(default)]
    pub angle: f64,
    /// Initial velocity (m/s).
    #[serde(default)]
    pub velocity: DVec2,
    /// Initial angular velocity (rad/s).
    #[serde(default)]
    pub angular_velocity: f64,
    /// Immovable.
    #[serde(default)]
    pub fixed: bool,
    /// Contact material: the name of one of `materials`; default frictionless, e = 0.
    #[serde(default)]
    pub material: Option<String>,
}

/// The other end of a spring.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Anchor")]
pub enum AnchorDef {
    /// A fixed world point.
    World {
        /// Point (m).
        point: DVec2,
    },
    /// A point of another body, body frame.
    Body {
        /// Body name.
        body: String,
        /// Body-frame point (m).
        #[serde(default)]
        point: DVec2,
    },
}

/// A load as written in a scene (bodies by name).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename = "Load")]
pub enum LoadDef {
    /// Force at a body point, optionally time-varying.
    Force {
        /// Body name.
        body: String,
        /// Nominal force (N).
        force: DVec2,
        /// Point of application, body frame (m); default the centre of mass.
        #[serde(default)]
        point: DVec2,
        /// The force turns with the body.
        #[serde(default)]
        body_frame: bool,
        /// Time profile; default constant.
        #[serde(default)]
        profile: Profile,
    },
    /// Torque, optionally time-varying.
    Torque {
        /// Body name.
        body: String,
        /// Nominal torque (N·m).
        torque: f64,
        /// Time profile; default constant.
        #[serde(default)]
        profile: Profile,
    },
    /// Linear spring-damper from a body point to an anchor.
    Spring {
        /// Body name.
        body: String,
        /// Attachment point, body frame (m).
        #[serde(default)]
        point: DVec2,
        /// The other end.
        anchor: AnchorDef,
        /// Stiffness (N/m).
        stiffness: f64,
        /// Rest length (m); default 0.
        #[serde(default)]
        rest_length: f64,
        /// Damping (N·s/m); default 0.
        #[serde(default)]
        damping: f64,
    },
    /// Stokes drag F = −k·r·v.
    Drag {
        /// Body name.
        body: String,
        /// Coefficient k (N·s/m²).
        coefficient: f64,
    },
}
