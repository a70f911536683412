//! rapier2d (feature `parallel`) with a dedicated rayon pool of `workers` threads.

use super::{Engine, Material, Settings, Shape, State};
use rapier2d::prelude::*;

/// A rapier2d world and its dynamic bodies in creation order.
pub struct Rapier {
    world: PhysicsWorld,
    bodies: Vec<RigidBodyHandle>,
}

fn collider(builder: ColliderBuilder, density: f64, material: Material) -> ColliderBuilder {
    builder.density(density as Real).friction(material.friction as Real).restitution(material.restitution as Real)
}

impl Rapier {
    /// Creates an empty world. `Settings::substeps` sets `num_solver_iterations`, which in
    /// rapier ≥ 0.18 is the number of TGS-soft sub-steps (its default is 4, like Box2D's).
    pub fn new(settings: Settings) -> anyhow::Result<Self> {
        let mut world = PhysicsWorld::new();
        world.gravity = Vector::new(settings.gravity[0] as Real, settings.gravity[1] as Real);
        world.integration_parameters.dt = settings.dt as Real;
        world.integration_parameters.num_solver_iterations = settings.substeps.max(1);
        world
            .physics_pipeline
            .configure_thread_pool(settings.workers)
            .map_err(|e| anyhow::anyhow!("rapier thread pool of {}: {e}", settings.workers))?;
        Ok(Self { world, bodies: Vec::new() })
    }
}

impl Engine for Rapier {
    fn name(&self) -> &'static str {
        "rapier"
    }

    fn add_static_rect(&mut self, center: [f64; 2], half: [f64; 2], material: Material) -> anyhow::Result<()> {
        self.world.insert(
            RigidBodyBuilder::fixed().translation(Vector::new(center[0] as Real, center[1] as Real)),
            collider(ColliderBuilder::cuboid(half[0] as Real, half[1] as Real), 1.0, material),
        );
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
        let body = RigidBodyBuilder::dynamic()
            .translation(Vector::new(center[0] as Real, center[1] as Real))
            .linvel(Vector::new(velocity[0] as Real, velocity[1] as Real))
            .can_sleep(allow_sleep);
        let shape = match shape {
            Shape::Disc(r) => ColliderBuilder::ball(r as Real),
            Shape::Rect(h) => ColliderBuilder::cuboid(h[0] as Real, h[1] as Real),
        };
        let (handle, _) = self.world.insert(body, collider(shape, density, material));
        self.bodies.push(handle);
        Ok(())
    }

    fn step(&mut self) -> anyhow::Result<()> {
        self.world.step();
        Ok(())
    }

    fn read(&mut self, out: &mut State) -> anyhow::Result<()> {
        let n = self.bodies.len();
        out.position.resize(n, [0.0; 2]);
        out.angle.resize(n, 0.0);
        out.velocity.resize(n, [0.0; 2]);
        out.spin.resize(n, 0.0);
        for (i, &h) in self.bodies.iter().enumerate() {
            let Some(rb) = self.world.bodies.get(h) else {
                anyhow::bail!("rapier lost body {i}");
            };
            let p = rb.translation();
            let v = rb.linvel();
            out.position[i] = [p.x as f64, p.y as f64];
            out.angle[i] = rb.rotation().angle() as f64;
            out.velocity[i] = [v.x as f64, v.y as f64];
            out.spin[i] = rb.angvel() as f64;
        }
        Ok(())
    }
}
