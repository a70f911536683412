//! One small interface over the peer engines, so that each scene is written once: build
//! static and dynamic bodies, step, and read back the dynamic bodies' states.

pub mod box2d;
pub mod rapier;

/// Surface material of a shape. Both engines get the same value on every shape, so their
/// different mixing rules (Box2D: friction √(μ₁μ₂), restitution max; rapier: average) agree.
#[derive(Clone, Copy, Debug)]
pub struct Material {
    /// Coulomb friction coefficient.
    pub friction: f64,
    /// Restitution coefficient.
    pub restitution: f64,
}

/// A dynamic body to create.
#[derive(Clone, Copy, Debug)]
pub enum Shape {
    /// A disc of this radius (m).
    Disc(f64),
    /// A rectangle of these half-extents (m).
    Rect([f64; 2]),
}

/// Engine settings shared by the scenes.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    /// Gravity (m/s²).
    pub gravity: [f64; 2],
    /// Step size (s).
    pub dt: f64,
    /// Sub-steps per step (Box2D's `subStepCount`; rapier's `num_solver_iterations`).
    pub substeps: usize,
    /// Worker threads.
    pub workers: usize,
    /// Box2D's contact stiffness (`contactHertz`, Hz); `None` keeps its default (30 Hz).
    /// Box2D caps it at an eighth of the sub-step rate. Ignored by rapier.
    pub contact_hertz: Option<f64>,
}

/// States of the dynamic bodies, in creation order.
#[derive(Default, Clone)]
pub struct State {
    /// Centres (m).
    pub position: Vec<[f64; 2]>,
    /// Angles (rad).
    pub angle: Vec<f64>,
    /// Linear velocities (m/s).
    pub velocity: Vec<[f64; 2]>,
    /// Angular velocities (rad/s).
    pub spin: Vec<f64>,
}

/// A peer physics engine holding one world.
pub trait Engine {
    /// Engine name as printed (`box2d`, `rapier`).
    fn name(&self) -> &'static str;
    /// Adds a static rectangle centred at `center`.
    fn add_static_rect(&mut self, center: [f64; 2], half: [f64; 2], material: Material) -> anyhow::Result<()>;
    /// Adds a dynamic body of density `density` (kg/m²).
    #[allow(clippy::too_many_arguments)]
    fn add_dynamic(
        &mut self,
        shape: Shape,
        center: [f64; 2],
        velocity: [f64; 2],
        density: f64,
        material: Material,
        allow_sleep: bool,
    ) -> anyhow::Result<()>;
    /// Advances one step of `Settings::dt`.
    fn step(&mut self) -> anyhow::Result<()>;
    /// Reads the dynamic bodies' states into `out`.
    fn read(&mut self, out: &mut State) -> anyhow::Result<()>;
}

/// Creates the engine named `name` (`box2d` or `rapier`).
pub fn create(name: &str, settings: Settings) -> anyhow::Result<Box<dyn Engine>> {
    match name {
        "box2d" => Ok(Box::new(box2d::Box2d::new(settings)?)),
        "rapier" => Ok(Box::new(rapier::Rapier::new(settings)?)),
        other => anyhow::bail!("unknown engine `{other}` (expected box2d or rapier)"),
    }
}
