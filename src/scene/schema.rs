//! The scene file schema (RON). Every field is documented in
//! `docs/scene-format.md`; keep the two in step.

use glam::DVec2;
use serde::{Deserialize, Serialize};

use crate::field::Field;
use crate::integrator::Method;
use crate::load::Profile;
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
