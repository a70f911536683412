//! Rigid bodies in the plane: state q = (x, y, φ), v = (vx, vy, ω), mass matrix
//! diag(m, m, J) about the centre of mass. [`BodySet`] owns them; a
//! [`BodyHandle`] names one.

use glam::DVec2;

use crate::shape::Shape;

/// Index of a body in its [`BodySet`] (stable: bodies are never removed).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BodyHandle(pub usize);

/// A rigid body: shape, mass properties and state.
#[derive(Clone, Debug, PartialEq)]
pub struct Body {
    /// Unique name (scene files refer to bodies by name).
    pub name: String,
    /// Shape in the body frame, centre of mass at the origin.
    pub shape: Shape,
    /// Mass m (kg); ignored when `fixed`.
    pub mass: f64,
    /// Moment of inertia J about the centre of mass (kg·m²).
    pub inertia: f64,
    /// Centre of mass position (m).
    pub position: DVec2,
    /// Orientation φ (rad, counter-clockwise), unwrapped: it is never reduced
    /// modulo 2π, so a spinning body's angle grows continuously.
    pub angle: f64,
    /// Centre of mass velocity (m/s).
    pub velocity: DVec2,
    /// Angular velocity ω (rad/s).
    pub angular_velocity: f64,
    /// A fixed body never moves (infinite mass); it can anchor joints.
    pub fixed: bool,
}

impl Body {
    /// Starts a builder for a body of the given shape.
    pub fn builder(name: impl Into<String>, shape: Shape) -> BodyBuilder {
        BodyBuilder::new(name, shape)
    }

    /// Inverse masses (1/m, 1/m, 1/J) — zeros for a fixed body; (1/m, 1/m, 0)
    /// for a point mass, whose rotation is not a degree of freedom.
    pub fn inverse_mass(&self) -> [f64; 3] {
        if self.fixed {
            [0.0; 3]
        } else if self.is_point() {
            [1.0 / self.mass, 1.0 / self.mass, 0.0]
        } else {
            [1.0 / self.mass, 1.0 / self.mass, 1.0 / self.inertia]
        }
    }

    /// Whether the body is a point mass ([`Shape::Point`]): no rotational
    /// degree of freedom.
    pub fn is_point(&self) -> bool {
        matches!(self.shape, Shape::Point)
    }

    /// Weights (1, 1, 1/ℓ²) of the mass-independent metric in which the
    /// constraint solver decides rank (ℓ: bounding radius; see
    /// `solver::gauss`, "Scale-invariant rank decisions"); zeros for a fixed
    /// body, (1, 1, 0) for a point.
    pub fn rank_weights(&self) -> [f64; 3] {
        let r = self.radius();
        if self.fixed {
            [0.0; 3]
        } else if self.is_point() || r <= 0.0 {
            [1.0, 1.0, 0.0]
        } else {
            [1.0, 1.0, 1.0 / (r * r)]
        }
    }

    /// Radius of the shape's bounding disc, the radius used by Stokes drag and
    /// the force fields.
    pub fn radius(&self) -> f64 {
        self.shape.bounding_radius()
    }

    /// World position of the body-frame point `local`.
    pub fn world_point(&self, local: DVec2) -> DVec2 {
        self.position + DVec2::from_angle(self.angle).rotate(local)
    }

    /// World velocity of the body-frame point `local`: v + ω × r.
    pub fn point_velocity(&self, local: DVec2) -> DVec2 {
        let r = DVec2::from_angle(self.angle).rotate(local);
        self.velocity + r.perp() * self.angular_velocity
    }

    /// Kinetic energy ½ m v² + ½ J ω² (zero for a fixed body).
    pub fn kinetic_energy(&self) -> f64 {
        if self.fixed {
            0.0
        } else {
            0.5 * self.mass * self.velocity.length_squared()
                + 0.5 * self.inertia * self.angular_velocity * self.angular_velocity
        }
    }
}

/// Builds a [`Body`]: mass given directly or from a density, inertia given or
/// computed from the shape.
#[derive(Clone, Debug)]
pub struct BodyBuilder {
    name: String,
    shape: Shape,
    mass: Option<f64>,
    density: Option<f64>,
    inertia: Option<f64>,
    position: DVec2,
    angle: f64,
    velocity: DVec2,
    angular_velocity: f64,
    fixed: bool,
}

impl BodyBuilder {
    /// A body of this shape at rest at the origin, density 1 kg/m² unless set.
    pub fn new(name: impl Into<String>, shape: Shape) -> Self {
        Self {
            name: name.into(),
            shape,
            mass: None,
            density: None,
            inertia: None,
            position: DVec2::ZERO,
            angle: 0.0,
            velocity: DVec2::ZERO,
            angular_velocity: 0.0,
            fixed: false,
        }
    }
    /// Sets the mass (kg); the inertia follows from the shape unless given.
    pub fn mass(mut self, mass: f64) -> Self {
        self.mass = Some(mass);
        self
    }
    /// Sets the areal density (kg/m²): mass = density · area.
    pub fn density(mut self, density: f64) -> Self {
        self.density = Some(density);
        self
    }
    /// Overrides the moment of inertia about the centre of mass (kg·m²).
    pub fn inertia(mut self, inertia: f64) -> Self {
        self.inertia = Some(inertia);
        self
    }
    /// Initial position of the centre of mass (m).
    pub fn position(mut self, position: DVec2) -> Self {
        self.position = position;
        self
    }
    /// Initial angle (rad).
    pub fn angle(mut self, angle: f64) -> Self {
        self.angle = angle;
        self
    }
    /// Initial velocity (m/s).
    pub fn velocity(mut self, velocity: DVec2) -> Self {
        self.velocity = velocity;
        self
    }
    /// Initial angular velocity (rad/s).
    pub fn angular_velocity(mut self, omega: f64) -> Self {
        self.angular_velocity = omega;
        self
    }
    /// Makes the body fixed (immovable).
    pub fn fixed(mut self, fixed: bool) -> Self {
        self.fixed = fixed;
        self
    }

    /// Finishes the body. A polygon is re-centred on its centroid (its
    /// position then names the centroid). Fails on unphysical parameters.
    pub fn build(self) -> Result<Body, String> {
        check_name(&self.name)?;
        self.shape.validate()?;
        let (shape, _) = self.shape.centred();
        let mass = match (self.mass, self.density) {
            (Some(_), Some(_)) => return Err("give either mass or density, not both".into()),
            (Some(m), None) => m,
            (None, d) => d.unwrap_or(1.0) * shape.area(),
        };
        // `is_normal`: a subnormal mass (1e-320) is "positive and finite" but
        // its inverse is infinite, and the first step diverges.
        if !(self.fixed || mass.is_normal() && mass > 0.0) {
            return Err(format!(
                "mass must be positive and finite, got {mass} (a bar of zero width needs an explicit mass)"
            ));
        }
        if self.fixed && (self.velocity != DVec2::ZERO || self.angular_velocity != 0.0) {
            return Err("velocity: a fixed body cannot move: give it no velocity".into());
        }
        let point = matches!(shape, Shape::Point);
        if point && (self.angular_velocity != 0.0 || self.inertia.is_some_and(|j| j != 0.0)) {
            return Err("inertia: a Point body has no rotation (give it no inertia and no angular velocity)".into());
        }
        let inertia = if point { 0.0 } else { self.inertia.unwrap_or(mass * shape.unit_inertia()) };
        if !(self.fixed || point || inertia.is_normal() && inertia > 0.0) {
            return Err(format!(
                "moment of inertia must be positive and finite, got {inertia} (for a point mass use shape: Point)"
            ));
        }
        for (what, v) in [
            ("position", self.position),
            ("velocity", self.velocity),
            ("angle", DVec2::splat(self.angle)),
            ("angular_velocity", DVec2::splat(self.angular_velocity)),
        ] {
            if !v.is_finite() {
                return Err(format!("{what} must be finite"));
            }
        }
        Ok(Body {
            name: self.name,
            shape,
            mass,
            inertia,
            position: self.position,
            angle: self.angle,
            velocity: self.velocity,
            angular_velocity: self.angular_velocity,
            fixed: self.fixed,
        })
    }
}

/// The longest name (in characters) a body or a constraint may have.
pub const MAX_NAME_CHARS: usize = 256;

/// Checks a body or constraint name: it appears in CSV rows, messages and
/// `--set` paths, so it must be non-empty, at most [`MAX_NAME_CHARS`]
/// characters, without control characters (a newline would split a row), and
/// without the path separators `.`, `[` and `]`.
pub fn check_name(name: &str) -> Result<(), String> {
    if name.trim().is_empty() {
        return Err(format!("name must not be empty or blank, got {name:?}"));
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(format!("name must have at most {MAX_NAME_CHARS} characters, got {}", name.chars().count()));
    }
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return Err(format!("name must not contain control characters, got {c:?} in {name:?}"));
    }
    if let Some(c) = name.chars().find(|c| matches!(c, '.' | '[' | ']')) {
        return Err(format!("name must not contain '{c}' (it separates the parts of a --set path), got {name:?}"));
    }
    Ok(())
}

/// The bodies of a world, addressed by [`BodyHandle`] or by name.
#[derive(Clone, Debug, Default)]
pub struct BodySet {
    bodies: Vec<Body>,
    by_name: std::collections::HashMap<String, usize>,
}

impl BodySet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }
    /// Adds a body; names must be unique.
    pub fn insert(&mut self, body: Body) -> Result<BodyHandle, String> {
        if self.by_name.contains_key(&body.name) {
            return Err(format!("a body named '{}' already exists", body.name));
        }
        self.by_name.insert(body.name.clone(), self.bodies.len());
        self.bodies.push(body);
        Ok(BodyHandle(self.bodies.len() - 1))
    }
    /// The body behind a handle.
    pub fn get(&self, h: BodyHandle) -> Option<&Body> {
        self.bodies.get(h.0)
    }
    /// Mutable access to the body behind a handle.
    pub fn get_mut(&mut self, h: BodyHandle) -> Option<&mut Body> {
        self.bodies.get_mut(h.0)
    }
    /// The handle of the body with this name.
    pub fn find(&self, name: &str) -> Option<BodyHandle> {
        self.by_name.get(name).copied().map(BodyHandle)
    }
    /// Number of bodies.
    pub fn len(&self) -> usize {
        self.bodies.len()
    }
    /// Whether there are no bodies.
    pub fn is_empty(&self) -> bool {
        self.bodies.is_empty()
    }
    /// All bodies in handle order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &Body> {
        self.bodies.iter()
    }
    /// All bodies as a slice, in handle order.
    pub fn as_slice(&self) -> &[Body] {
        &self.bodies
    }
    /// All bodies as a mutable slice, in handle order.
    pub fn as_mut_slice(&mut self) -> &mut [Body] {
        &mut self.bodies
    }
}

impl std::ops::Index<BodyHandle> for BodySet {
    type Output = Body;
    fn index(&self, h: BodyHandle) -> &Body {
        &self.bodies[h.0]
    }
}
impl std::ops::IndexMut<BodyHandle> for BodySet {
    fn index_mut(&mut self, h: BodyHandle) -> &mut Body {
        &mut self.bodies[h.0]
    }
}
