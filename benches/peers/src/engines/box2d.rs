//! Box2D v3 through the `boxdd` crate (vendored Box2D source, its built-in task scheduler
//! with `WorkerCount` workers).

use super::{Engine, Material, Settings, Shape, State};
use anyhow::Context;
use boxdd::{
    BodyBuilder, BodyId, BodyType, Foundation, Position, ShapeDef, SurfaceMaterial, Vec2, WorkerCount, World,
    WorldBuilder,
};

/// A Box2D v3 world and its dynamic bodies in creation order.
pub struct Box2d {
    foundation: &'static Foundation,
    world: World,
    bodies: Vec<BodyId>,
    dt: f32,
    substeps: i32,
}

fn shape_def(density: f64, material: Material) -> anyhow::Result<ShapeDef> {
    let surface = SurfaceMaterial::default()
        .with_friction(material.friction as f32)?
        .with_restitution(material.restitution as f32)?;
    Ok(ShapeDef::builder().density(density as f32).material(surface).build()?)
}

impl Box2d {
    /// Creates an empty world.
    pub fn new(settings: Settings) -> anyhow::Result<Self> {
        let foundation = Foundation::initialize_default().context("Box2D foundation")?;
        let workers = WorkerCount::new(settings.workers as u32)
            .with_context(|| format!("Box2D worker count {}", settings.workers))?;
        let mut builder = WorldBuilder::from(foundation.world_def())
            .gravity(Vec2::new(settings.gravity[0] as f32, settings.gravity[1] as f32))
            .worker_count(workers);
        if let Some(hertz) = settings.contact_hertz {
            builder = builder.contact_hertz(hertz as f32);
        }
        let def = builder.build()?;
        let world = foundation.create_world(def)?;
        Ok(Self { foundation, world, bodies: Vec::new(), dt: settings.dt as f32, substeps: settings.substeps as i32 })
    }
}

impl Engine for Box2d {
    fn name(&self) -> &'static str {
        "box2d"
    }

    fn add_static_rect(&mut self, center: [f64; 2], half: [f64; 2], material: Material) -> anyhow::Result<()> {
        let def = BodyBuilder::from(self.foundation.body_def())
            .body_type(BodyType::Static)
            .position(Position::new(center[0] as f32, center[1] as f32))
            .build()?;
        let id = self.world.create_body(def)?;
        self.world.body(id)?.create_box(&shape_def(0.0, material)?, half[0] as f32, half[1] as f32)?;
        Ok(())
    }

    fn add_dynamic(
        &mut self,
        shape: Shape,
        center: [f64; 2],
        velocity: [f64; 2],
        density: f64,
        material: Material,
        allow_sleep: bool,
    ) -> anyhow::Result<()> {
        let def = BodyBuilder::from(self.foundation.body_def())
            .body_type(BodyType::Dynamic)
            .position(Position::new(center[0] as f32, center[1] as f32))
            .linear_velocity(Vec2::new(velocity[0] as f32, velocity[1] as f32))
            .enable_sleep(allow_sleep)
            .build()?;
        let id = self.world.create_body(def)?;
        let sd = shape_def(density, material)?;
        let mut body = self.world.body(id)?;
        match shape {
            Shape::Disc(r) => body.create_centered_circle(&sd, r as f32)?,
            Shape::Rect(h) => body.create_box(&sd, h[0] as f32, h[1] as f32)?,
        };
        self.bodies.push(id);
        Ok(())
    }

    fn step(&mut self) -> anyhow::Result<()> {
        // `into_result` surfaces a failure Box2D found after advancing (a task error).
        let done = self.world.step(self.dt, self.substeps)?.into_result().context("Box2D step")?;
        drop(done);
        Ok(())
    }

    fn read(&mut self, out: &mut State) -> anyhow::Result<()> {
        let n = self.bodies.len();
        out.position.resize(n, [0.0; 2]);
        out.angle.resize(n, 0.0);
        out.velocity.resize(n, [0.0; 2]);
        out.spin.resize(n, 0.0);
        for (i, &id) in self.bodies.iter().enumerate() {
            let body = self.world.body(id)?;
            let p = body.position()?;
            let v = body.linear_velocity()?;
            out.position[i] = [p.x as f64, p.y as f64];
            out.angle[i] = body.rotation()?.angle() as f64;
            out.velocity[i] = [v.x as f64, v.y as f64];
            out.spin[i] = body.angular_velocity()? as f64;
        }
        Ok(())
    }
}
