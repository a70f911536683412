//! Building a [`World`] from a parsed scene: bodies, generators (chains,
//! drops, piles), constraints, loads, contacts and the population, each error
//! at its field (`Scene::error_at`).

use glam::DVec2;

use super::schema::{self, AnchorDef, ChainDef, ConstraintDef, LoadDef};
use super::{MAX_CONTACT_ITERATIONS, MAX_JOINT_PASSES, MAX_STEPS, Scene, SceneError, constraint_numbers, readable};
use crate::body::{Body, BodyHandle};
use crate::constraint::{Constraint, ConstraintKind};
use crate::load::{Anchor, Load};
use crate::population::{Population, PopulationError};
use crate::shape::Shape;
use crate::world::World;

impl Scene {
    /// Builds the world the scene describes.
    pub fn build_world(&self) -> Result<World, SceneError> {
        let f = &self.file;
        self.check_numbers()?;
        let finite_vec = |path: &str, v: glam::DVec2| {
            if v.is_finite() {
                Ok(())
            } else {
                Err(self.error_at(path, format!("must be finite, got ({}, {})", v.x, v.y)))
            }
        };
        finite_vec("gravity", f.gravity)?;
        if !(f.dt.is_finite() && f.dt > 0.0) {
            return Err(self.error_at("dt", format!("the step must be positive and finite, got {}", readable(f.dt))));
        }
        if let Some(d) = f.duration
            && !(d.is_finite() && d >= 0.0)
        {
            return Err(self.error_at("duration", format!("must be finite and >= 0, got {d}", d = readable(d))));
        }
        if let Some(n) = f.steps
            && n > MAX_STEPS
        {
            return Err(self.error_at("steps", format!("{n} steps is more than the limit of {MAX_STEPS}")));
        }
        if f.steps.is_none()
            && let Some(d) = f.duration
            && d / f.dt > MAX_STEPS as f64
        {
            let n = d / f.dt;
            return Err(
                self.error_at("duration", format!("duration / dt = {n:e} steps, more than the limit of {MAX_STEPS}"))
            );
        }
        if let Some(e) = f.max_body_energy
            && !(e.is_finite() && e > 0.0)
        {
            return Err(self.error_at("max_body_energy", format!("must be positive, got {e}", e = readable(e))));
        }
        self.check_size()?;
        let mut world = World::new(f.gravity);
        world.dt = f.dt;
        world.set_integrator(f.integrator);
        if let Some(tol) = f.tolerance {
            if !(tol.is_finite() && tol > 0.0 && tol < 1.0) {
                return Err(self.error_at("tolerance", format!("must be in (0, 1), got {tol}", tol = readable(tol))));
            }
            world.set_tolerance(tol);
        }
        world.limits.max_body_energy = f.max_body_energy;
        for (i, b) in f.bodies.iter().enumerate() {
            let at = |field: &str| format!("bodies[{i}].{field}");
            if let Some(m) = b.mass
                && !(m.is_finite() && m > 0.0)
            {
                return Err(
                    self.error_at(&at("mass"), format!("mass must be positive and finite, got {m}", m = readable(m)))
                );
            }
            if let Some(d) = b.density
                && !(d.is_finite() && d > 0.0)
            {
                return Err(self.error_at(
                    &at("density"),
                    format!("density must be positive and finite, got {d}", d = readable(d)),
                ));
            }
            if let Some(j) = b.inertia
                && !(j.is_finite() && j > 0.0)
            {
                return Err(self.error_at(
                    &at("inertia"),
                    format!(
                        "inertia must be positive and finite, got {j} (for a point mass use shape: Point)",
                        j = readable(j)
                    ),
                ));
            }
            b.shape.validate().map_err(|m| self.error_at(&at("shape"), m))?;
            finite_vec(&at("position"), b.position)?;
            finite_vec(&at("velocity"), b.velocity)?;
            for (name, v) in [("angle", b.angle), ("angular_velocity", b.angular_velocity)] {
                if !v.is_finite() {
                    return Err(self.error_at(&at(name), format!("must be finite, got {v}", v = readable(v))));
                }
            }
            let mut builder = Body::builder(b.name.clone(), b.shape.clone())
                .position(b.position)
                .angle(b.angle)
                .velocity(b.velocity)
                .angular_velocity(b.angular_velocity)
                .fixed(b.fixed);
            if let Some(m) = b.mass {
                builder = builder.mass(m);
            }
            if let Some(d) = b.density {
                builder = builder.density(d);
            }
            if let Some(j) = b.inertia {
                builder = builder.inertia(j);
            }
            let body = builder.build().map_err(|m| {
                let field = if m.starts_with("velocity") {
                    "velocity"
                } else if m.starts_with("name") {
                    "name"
                } else if m.starts_with("inertia") {
                    "inertia"
                } else {
                    "mass"
                };
                self.error_at(&at(field), m)
            })?;
            world.add_body(body).map_err(|m| self.error_at(&at("name"), m))?;
        }
        for (i, s) in f.surfaces.iter().enumerate() {
            s.validate().map_err(|m| {
                let word = m.split_whitespace().next().unwrap_or("");
                let field = if ["friction", "kinetic_friction", "restitution", "rolling_resistance"].contains(&word) {
                    format!("surfaces[{i}].{word}")
                } else {
                    format!("surfaces[{i}].geometry")
                };
                self.error_at(&field, m)
            })?;
        }
        world.surfaces = f.surfaces.clone();
        self.build_contacts(&mut world)?;
        // which bodies each generator placed, and the field that placed them
        let mut generated: Vec<(std::ops::Range<usize>, String)> = Vec::new();
        for (i, p) in f.piles.iter().enumerate() {
            let first = world.bodies.len();
            self.build_pile(&mut world, i, p)?;
            generated.push((first..world.bodies.len(), format!("piles[{i}].base")));
        }
        for (i, d) in f.drops.iter().enumerate() {
            let first = world.bodies.len();
            self.build_drop(&mut world, i, d)?;
            generated.push((first..world.bodies.len(), format!("drops[{i}].origin")));
        }
        for (i, fd) in f.fields.iter().enumerate() {
            fd.validate_kind().map_err(|m| self.error_at(&format!("fields[{i}].kind"), m))?;
            fd.validate_region().map_err(|m| self.error_at(&format!("fields[{i}].region"), m))?;
        }
        world.fields = f.fields.clone();
        for (i, c) in f.chains.iter().enumerate() {
            let first = world.bodies.len();
            self.build_chain(&mut world, i, c)?;
            generated.push((first..world.bodies.len(), format!("chains[{i}].anchor")));
        }
        self.check_generated_extent(&world, &generated)?;
        for (i, l) in f.loads.iter().enumerate() {
            let load = self.build_load(&world, i, l)?;
            world.loads.push(load);
        }
        if let Some(alpha) = f.stabilization.baumgarte
            && !(alpha.is_finite() && alpha > 0.0)
        {
            return Err(self.error_at(
                "stabilization.baumgarte",
                format!("must be positive, got {alpha}", alpha = readable(alpha)),
            ));
        }
        world.stabilization.projection = f.stabilization.projection;
        world.stabilization.baumgarte = f.stabilization.baumgarte;
        // The projection's stop is unit-free: lengths over the smallest
        // dynamic body's bounding radius (the contact slop's length; points,
        // of radius 0, do not count), so that a scene in millimetres stops
        // where the one in metres does.
        let smallest = world
            .bodies
            .iter()
            .filter(|b| !b.fixed)
            .map(|b| b.shape.bounding_radius())
            .filter(|&r| r > 0.0)
            .fold(f64::INFINITY, f64::min);
        if smallest.is_finite() {
            world.stabilization.length_scale = smallest;
        }
        for (i, c) in f.constraints.iter().enumerate() {
            let constraint = self.build_constraint(&world, i, c)?;
            world.add_constraint(constraint).map_err(|m| self.error_at(&format!("constraints[{i}]"), m))?;
        }
        if world.contacts.soft_step_settings().is_some() && !world.constraints.is_empty() {
            return Err(self.error_at(
                "contacts.solver",
                "the soft-step contact solver does not handle constraints (joints, chains, rolling): \
                 use the default solver (Exact), which keeps joints exact beside contacts",
            ));
        }
        if let Some(def) = &f.population {
            let built = Population::build(
                def,
                &world.surfaces,
                &world.fields,
                f.gravity,
                f.dt,
                crate::population::cpu_memory_limit(),
            );
            world.population = Some(built.map_err(|e| match e {
                // A field starting with '/' is a scene-level one (gravity, dt).
                PopulationError::Invalid { field, message } => match field.strip_prefix('/') {
                    Some(top) => self.error_at(top, message),
                    None => self.error_at(&format!("population.{field}"), message),
                },
                other => {
                    let field = if f.population.as_ref().is_some_and(|p| p.count.is_some()) {
                        "population.count"
                    } else {
                        "population.spawn"
                    };
                    self.error_at(field, other.to_string())
                }
            })?);
        }
        Ok(world)
    }

    /// Materials and contact settings (`contacts`, `materials`,
    /// `bodies[i].material`, `surfaces[i].material`), each bad value refused
    /// at its position.
    fn build_contacts(&self, world: &mut World) -> Result<(), SceneError> {
        use crate::contact::{ContactSettings, Material};
        let f = &self.file;
        let mut named: Vec<(&str, Material)> = Vec::new();
        for (i, m) in f.materials.iter().enumerate() {
            let material = m.material();
            material.validate().map_err(|e| self.error_at(&format!("materials[{i}]"), e))?;
            if named.iter().any(|(n, _)| *n == m.name) {
                return Err(
                    self.error_at(&format!("materials[{i}].name"), format!("material '{}' is defined twice", m.name))
                );
            }
            named.push((&m.name, material));
        }
        let lookup = |path: &str, name: &str| {
            named.iter().find(|(n, _)| *n == name).map(|(_, m)| *m).ok_or_else(|| {
                let known: Vec<&str> = named.iter().map(|(n, _)| *n).collect();
                self.error_at(path, format!("unknown material '{name}' (materials: {})", known.join(", ")))
            })
        };
        let mut body_materials = Vec::with_capacity(f.bodies.len());
        for (i, b) in f.bodies.iter().enumerate() {
            body_materials.push(match &b.material {
                Some(name) => lookup(&format!("bodies[{i}].material"), name)?,
                None => Material::default(),
            });
        }
        for (i, s) in f.surfaces.iter().enumerate() {
            if let Some(name) = &s.material {
                let m = lookup(&format!("surfaces[{i}].material"), name)?;
                let surface = &mut world.surfaces[i];
                surface.friction = m.friction;
                surface.kinetic_friction = m.kinetic_friction;
                surface.restitution = m.restitution;
                surface.rolling_resistance = m.rolling_resistance;
            }
        }
        let Some(c) = &f.contacts else {
            return Ok(());
        };
        let positive = |path: &str, v: Option<f64>| match v {
            Some(x) if !(x.is_finite() && x >= 0.0) => {
                Err(self.error_at(path, format!("must be finite and >= 0, got {x}", x = readable(x))))
            }
            _ => Ok(()),
        };
        positive("contacts.resting_speed", c.resting_speed)?;
        positive("contacts.slop", c.slop)?;
        positive("contacts.tolerance", c.tolerance)?;
        // 0 sweeps left resting contacts unsolved (bodies sank, no word), and
        // 2⁶⁴ − 1 with `tolerance: 0` never ended a step; 0 joint passes was
        // taken as 1.
        for (path, value, most) in [
            ("contacts.iterations", c.iterations, MAX_CONTACT_ITERATIONS),
            ("contacts.joint_passes", c.joint_passes, MAX_JOINT_PASSES),
        ] {
            if let Some(n) = value
                && !(1..=most).contains(&n)
            {
                return Err(self.error_at(path, format!("must be in 1..={most}, got {n}")));
            }
        }
        let solver = c.solver.as_ref().map(|d| d.solver()).unwrap_or_default();
        if let crate::contact::ContactSolver::SoftStep(soft) = &solver {
            soft.validate().map_err(|m| self.error_at("contacts.solver", m))?;
        }
        let defaults = ContactSettings::default();
        world.contacts.settings = ContactSettings {
            solver,
            enabled: true,
            mix: c.mix,
            broadphase: c.broadphase,
            collide_connected: c.collide_connected,
            resting_speed: c.resting_speed,
            slop: c.slop,
            iterations: c.iterations.unwrap_or(defaults.iterations),
            tolerance: c.tolerance.unwrap_or(defaults.tolerance),
            joint_passes: c.joint_passes.unwrap_or(defaults.joint_passes),
            max_impact_events: c.max_impact_events.unwrap_or(defaults.max_impact_events),
            body_materials,
        };
        Ok(())
    }

    /// The generators' bodies must lie where f64 still resolves them, as the
    /// listed ones must (`Scene::check_numbers`): within
    /// [`super::MAX_EXTENT_RATIO`] × the largest body radius of the origin. A drop
    /// whose origin was −9.2e18 m put its 1,000 bodies where the spacing of
    /// f64 is 2,048 m: the 25 columns fell onto one x, every pair of a row
    /// overlapped, and the first step took 0.15 s and did 1e55 J of
    /// non-conservative work (the fuzzing campaign of 7 Dec 2026 spent some
    /// 20 minutes on its 20 steps). Named at the field that placed the body
    /// (a drop's `origin`, a pile's `base`, a chain's `anchor`).
    fn check_generated_extent(
        &self,
        world: &World,
        generated: &[(std::ops::Range<usize>, String)],
    ) -> Result<(), SceneError> {
        let bodies = world.bodies.as_slice();
        let largest = bodies.iter().map(|b| b.radius()).fold(0.0, f64::max);
        for (range, field) in generated {
            for b in &bodies[range.clone()] {
                if let Some(m) = super::beyond_extent(b.position, largest) {
                    return Err(self.error_at(field, format!("body {}: {m}", b.name)));
                }
            }
        }
        Ok(())
    }

    /// Adds the bodies of a drop (see [`schema::DropDef`]), sizes checked first.
    fn build_drop(&self, world: &mut World, i: usize, d: &schema::DropDef) -> Result<(), SceneError> {
        let at = |field: &str| format!("drops[{i}].{field}");
        const MAX_COUNT: usize = 1_000_000;
        if d.count == 0 || d.count > MAX_COUNT {
            return Err(self.error_at(&at("count"), format!("count must be in 1..={MAX_COUNT}, got {}", d.count)));
        }
        if d.columns == 0 {
            return Err(self.error_at(&at("columns"), "columns must be at least 1"));
        }
        if d.shapes.is_empty() {
            return Err(self.error_at(&at("shapes"), "shapes must name at least one shape"));
        }
        for (name, v) in [("spacing", d.spacing), ("density", d.density)] {
            if !(v.is_finite() && v > 0.0) {
                return Err(
                    self.error_at(&at(name), format!("{name} must be positive and finite, got {v}", v = readable(v)))
                );
            }
        }
        for (k, s) in d.shapes.iter().enumerate() {
            s.validate().map_err(|m| self.error_at(&format!("drops[{i}].shapes[{k}]"), m))?;
        }
        let material = self.named_material(d.material.as_deref(), &at("material"))?;
        let n = world.bodies.len();
        world.contacts.settings.body_materials.resize(n, crate::contact::Material::default());
        for k in 0..d.count {
            let p = d.origin + DVec2::new((k % d.columns) as f64, (k / d.columns) as f64) * d.spacing;
            let body = Body::builder(format!("{}{k}", d.prefix), d.shapes[k % d.shapes.len()].clone())
                .density(d.density)
                .position(p)
                .angle(0.7 * k as f64)
                .build()
                .map_err(|m| self.error_at(&format!("drops[{i}].shapes[{}]", k % d.shapes.len()), m))?;
            world.add_body(body).map_err(|m| self.error_at(&at("prefix"), m))?;
            world.contacts.settings.body_materials.push(material);
        }
        Ok(())
    }

    /// The contact material a generator names (`None`: the default),
    /// refused at `field` when the scene declares no material of that name.
    fn named_material(&self, name: Option<&str>, field: &str) -> Result<crate::contact::Material, SceneError> {
        let Some(name) = name else { return Ok(crate::contact::Material::default()) };
        self.file
            .materials
            .iter()
            .find(|m| m.name == name)
            .map(schema::MaterialDef::material)
            .ok_or_else(|| self.error_at(field, format!("unknown material '{name}'")))
    }

    /// Adds the boxes of a pile (see [`schema::PileDef`]), sizes checked first.
    fn build_pile(&self, world: &mut World, i: usize, p: &schema::PileDef) -> Result<(), SceneError> {
        let at = |field: &str| format!("piles[{i}].{field}");
        const MAX_ROWS: usize = 2000;
        if p.rows == 0 || p.rows > MAX_ROWS {
            return Err(self.error_at(&at("rows"), format!("rows must be in 1..={MAX_ROWS}, got {}", p.rows)));
        }
        for (name, v) in [("half_extent", p.half_extent), ("mass", p.mass)] {
            if !(v.is_finite() && v > 0.0) {
                return Err(
                    self.error_at(&at(name), format!("{name} must be positive and finite, got {v}", v = readable(v)))
                );
            }
        }
        let material = self.named_material(p.material.as_deref(), &at("material"))?;
        let h = p.half_extent;
        let materials = &mut world.contacts.settings.body_materials;
        materials.resize(world.bodies.len(), crate::contact::Material::default());
        for row in 0..p.rows {
            let count = if p.pyramid { p.rows - row } else { 1 };
            for col in 0..count {
                let x = p.base.x + (2.0 * col as f64 - (count as f64 - 1.0)) * h;
                let y = p.base.y + h + 2.0 * h * row as f64;
                let body =
                    Body::builder(format!("{}{row}_{col}", p.prefix), Shape::Box { half_extents: DVec2::splat(h) })
                        .mass(p.mass)
                        .position(DVec2::new(x, y))
                        .build()
                        .map_err(|m| self.error_at(&at("half_extent"), m))?;
                world.add_body(body).map_err(|m| self.error_at(&at("prefix"), m))?;
                world.contacts.settings.body_materials.push(material);
            }
        }
        Ok(())
    }

    fn build_chain(&self, world: &mut World, i: usize, c: &ChainDef) -> Result<(), SceneError> {
        let at = |field: &str| format!("chains[{i}].{field}");
        crate::body::check_name(&format!("{}0", c.prefix)).map_err(|m| self.error_at(&at("prefix"), m))?;
        if c.links == 0 {
            return Err(self.error_at(&at("links"), "a chain needs at least one link"));
        }
        for (name, v) in [("link_length", c.link_length), ("link_mass", c.link_mass)] {
            if !(v.is_finite() && v > 0.0) {
                return Err(self.error_at(&at(name), format!("{name} must be positive, got {v}", v = readable(v))));
            }
        }
        if !(c.direction.is_finite() && c.direction.length_squared() > 0.0) {
            return Err(self.error_at(&at("direction"), "direction must be a non-zero vector"));
        }
        let dir = c.direction.normalize();
        let angle = dir.y.atan2(dir.x);
        let half = DVec2::new(c.link_length / 2.0, 0.0);
        let mut previous: Option<BodyHandle> = None;
        for k in 0..c.links {
            let centre = c.anchor + dir * (c.link_length * (k as f64 + 0.5));
            let body = Body::builder(format!("{}{k}", c.prefix), Shape::Bar { length: c.link_length, width: c.width })
                .mass(c.link_mass)
                .position(centre)
                .angle(angle)
                .build()
                .map_err(|m| self.error_at(&at(if m.contains("width") { "width" } else { "link_length" }), m))?;
            let h = world.add_body(body).map_err(|m| self.error_at(&at("prefix"), m))?;
            let (body_b, anchor_b) = match previous {
                None => (None, c.anchor),
                Some(p) => (Some(p), half),
            };
            world
                .add_constraint(Constraint {
                    name: format!("{}{k}_pin", c.prefix),
                    body_a: h,
                    body_b,
                    kind: ConstraintKind::Revolute { anchor_a: -half, anchor_b },
                })
                .map_err(|m| self.error_at(&at("prefix"), m))?;
            previous = Some(h);
        }
        Ok(())
    }

    fn build_constraint(&self, world: &World, i: usize, c: &ConstraintDef) -> Result<Constraint, SceneError> {
        let at_path = |field: &str| format!("constraints[{i}].{field}");
        for (field, values) in constraint_numbers(c) {
            if let Some(v) = values.iter().find(|v| !v.is_finite()) {
                return Err(self.error_at(&at_path(field), format!("must be finite, got {v}", v = readable(*v))));
            }
        }
        let handle = |field: &str, name: &str| self.body_handle(world, &at_path(field), name);
        let opt_handle = |name: &Option<String>| name.as_ref().map(|n| handle("b", n)).transpose();
        let body = |h: BodyHandle| world.body(h);
        // Body-frame coordinates of a world point, or the point itself for the world.
        let local = |h: Option<BodyHandle>, p: DVec2| match h {
            Some(h) => DVec2::from_angle(-body(h).angle).rotate(p - body(h).position),
            None => p,
        };
        let angle_of = |h: Option<BodyHandle>| h.map_or(0.0, |h| body(h).angle);
        let default_name = |kind: &str| format!("{kind}{i}");
        let (name, a, b, kind) = match c {
            ConstraintDef::Revolute { name, a, b, at, anchor_a, anchor_b } => {
                let (a, b) = (handle("a", a)?, opt_handle(b)?);
                let (anchor_a, anchor_b) = match at {
                    Some(p) => (local(Some(a), *p), local(b, *p)),
                    None => {
                        let anchor_a = anchor_a.unwrap_or(DVec2::ZERO);
                        let world_pin = body(a).world_point(anchor_a);
                        (anchor_a, anchor_b.unwrap_or_else(|| local(b, world_pin)))
                    }
                };
                (
                    name.clone().unwrap_or_else(|| default_name("revolute")),
                    a,
                    b,
                    ConstraintKind::Revolute { anchor_a, anchor_b },
                )
            }
            ConstraintDef::Distance { name, a, b, anchor_a, anchor_b, length } => {
                let (a, b) = (handle("a", a)?, opt_handle(b)?);
                let pb = match b {
                    Some(h) => body(h).world_point(*anchor_b),
                    None => *anchor_b,
                };
                let length = length.unwrap_or_else(|| (body(a).world_point(*anchor_a) - pb).length());
                let kind = ConstraintKind::Distance { anchor_a: *anchor_a, anchor_b: *anchor_b, length };
                (name.clone().unwrap_or_else(|| default_name("distance")), a, b, kind)
            }
            ConstraintDef::Prismatic { name, a, b, axis } => {
                let (a, b) = (handle("a", a)?, opt_handle(b)?);
                if !(axis.is_finite() && axis.length_squared() > 0.0) {
                    return Err(self.error_at(&at_path("axis"), "axis must be a non-zero vector"));
                }
                let kind = ConstraintKind::Prismatic {
                    anchor_a: DVec2::ZERO,
                    anchor_b: local(b, body(a).position),
                    axis: DVec2::from_angle(-angle_of(b)).rotate(*axis),
                    angle: body(a).angle - angle_of(b),
                };
                (name.clone().unwrap_or_else(|| default_name("prismatic")), a, b, kind)
            }
            ConstraintDef::Weld { name, a, b, at } => {
                let (a, b) = (handle("a", a)?, opt_handle(b)?);
                let p = at.unwrap_or(body(a).position);
                let kind = ConstraintKind::Weld {
                    anchor_a: local(Some(a), p),
                    anchor_b: local(b, p),
                    angle: body(a).angle - angle_of(b),
                };
                (name.clone().unwrap_or_else(|| default_name("weld")), a, b, kind)
            }
            ConstraintDef::Angle { name, a, b, angle } => {
                let (a, b) = (handle("a", a)?, opt_handle(b)?);
                let angle = angle.unwrap_or(body(a).angle - angle_of(b));
                (name.clone().unwrap_or_else(|| default_name("angle")), a, b, ConstraintKind::Angle { angle })
            }
            ConstraintDef::Gear { name, a, b, ratio } => {
                let (a, b) = (handle("a", a)?, handle("b", b)?);
                if !ratio.is_finite() {
                    return Err(self.error_at(&at_path("ratio"), "ratio must be finite"));
                }
                let offset = body(a).angle + ratio * body(b).angle;
                (
                    name.clone().unwrap_or_else(|| default_name("gear")),
                    a,
                    Some(b),
                    ConstraintKind::Gear { ratio: *ratio, offset },
                )
            }
            ConstraintDef::Motor { name, a, b, drive } => {
                let (a, b) = (handle("a", a)?, opt_handle(b)?);
                let initial = body(a).angle - angle_of(b);
                (
                    name.clone().unwrap_or_else(|| default_name("motor")),
                    a,
                    b,
                    ConstraintKind::Motor { drive: *drive, initial },
                )
            }
            ConstraintDef::Rolling { name, body: bn, surface, sliding } => {
                let a = handle("body", bn)?;
                if *surface >= world.surfaces.len() {
                    return Err(self.error_at(
                        &at_path("surface"),
                        format!("surface {surface} does not exist ({} surfaces)", world.surfaces.len()),
                    ));
                }
                (
                    name.clone().unwrap_or_else(|| default_name("rolling")),
                    a,
                    None,
                    ConstraintKind::Rolling { surface: *surface, sliding: *sliding },
                )
            }
            ConstraintDef::PointOnCurve { name, body: bn, point, surface, sliding } => {
                let a = handle("body", bn)?;
                if *surface >= world.surfaces.len() {
                    return Err(self.error_at(
                        &at_path("surface"),
                        format!("surface {surface} does not exist ({} surfaces)", world.surfaces.len()),
                    ));
                }
                let kind = ConstraintKind::PointOnCurve { point: *point, surface: *surface, sliding: *sliding };
                (name.clone().unwrap_or_else(|| default_name("point_on_curve")), a, None, kind)
            }
        };
        crate::body::check_name(&name).map_err(|m| self.error_at(&at_path("name"), m))?;
        if b == Some(a) {
            return Err(
                self.error_at(&at_path("b"), format!("constraint '{name}' joins body '{}' to itself", body(a).name))
            );
        }
        Ok(Constraint { name, body_a: a, body_b: b, kind })
    }

    fn body_handle(&self, world: &World, path: &str, name: &str) -> Result<BodyHandle, SceneError> {
        world.bodies.find(name).ok_or_else(|| {
            let known: Vec<_> = world.bodies.iter().map(|b| b.name.as_str()).collect();
            self.error_at(path, format!("unknown body '{name}' (bodies: {})", known.join(", ")))
        })
    }

    fn build_load(&self, world: &World, i: usize, l: &LoadDef) -> Result<Load, SceneError> {
        let at = |field: &str| format!("loads[{i}].{field}");
        let finite = |field: &str, v: f64| {
            if v.is_finite() {
                Ok(())
            } else {
                Err(self.error_at(&at(field), format!("must be finite, got {v}", v = readable(v))))
            }
        };
        Ok(match l {
            LoadDef::Force { body, force, point, body_frame, profile } => {
                let body = self.body_handle(world, &at("body"), body)?;
                finite("force", force.x + force.y)?;
                finite("point", point.x + point.y)?;
                profile.validate().map_err(|m| self.error_at(&at("profile"), m))?;
                Load::Force { body, force: *force, point: *point, body_frame: *body_frame, profile: profile.clone() }
            }
            LoadDef::Torque { body, torque, profile } => {
                let body = self.body_handle(world, &at("body"), body)?;
                finite("torque", *torque)?;
                profile.validate().map_err(|m| self.error_at(&at("profile"), m))?;
                Load::Torque { body, torque: *torque, profile: profile.clone() }
            }
            LoadDef::Spring { body, point, anchor, stiffness, rest_length, damping } => {
                let handle = self.body_handle(world, &at("body"), body)?;
                let anchor = match anchor {
                    AnchorDef::World { point } => Anchor::World(*point),
                    AnchorDef::Body { body: other, point } => {
                        let h = self.body_handle(world, &at("anchor.body"), other)?;
                        if h == handle {
                            return Err(self.error_at(&at("anchor.body"), "a spring cannot join a body to itself"));
                        }
                        Anchor::Body(h, *point)
                    }
                };
                for (name, v) in [("stiffness", *stiffness), ("rest_length", *rest_length), ("damping", *damping)] {
                    if !(v.is_finite() && v >= 0.0) {
                        return Err(self
                            .error_at(&at(name), format!("{name} must be finite and >= 0, got {v}", v = readable(v))));
                    }
                }
                Load::Spring {
                    body: handle,
                    point: *point,
                    anchor,
                    stiffness: *stiffness,
                    rest_length: *rest_length,
                    damping: *damping,
                }
            }
            LoadDef::Drag { body, coefficient } => {
                let body = self.body_handle(world, &at("body"), body)?;
                if !(coefficient.is_finite() && *coefficient >= 0.0) {
                    return Err(self.error_at(
                        &at("coefficient"),
                        format!("must be finite and >= 0, got {coefficient}", coefficient = readable(*coefficient)),
                    ));
                }
                Load::Drag { body, coefficient: *coefficient }
            }
        })
    }
}
