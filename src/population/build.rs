//! Building a population from its scene section ([`Population::build`]):
//! every value checked and the memory estimated against the backend's limit
//! before anything is allocated per ball, then the spawners' balls, ordered
//! by release step.

use glam::DVec2;

use super::spawn::{self, PopulationDef, SpawnDef};
use super::{
    CPU_BYTES_PER_BALL, F32_PARAMETER_MAX, GridSpec, MAX_CELLS, MAX_POSITION_RESOLUTION, Population, PopulationError,
    PopulationParams, SLEEP_SPEED_FACTOR, contact, cpu, invalid, obstacle, stage_times, state,
};
use crate::field::Field;
use crate::gpu::GpuField;
use crate::scene::{readable, readable_vec};
use crate::surface::Surface;

impl Population {
    /// Builds the population a scene section describes, after checking every
    /// value and the memory it needs (`memory_limit` bytes on the CPU) —
    /// before allocating anything per ball.
    pub fn build(
        def: &PopulationDef,
        surfaces: &[Surface],
        fields: &[Field],
        gravity: DVec2,
        dt: f64,
        memory_limit: u64,
    ) -> Result<Population, PopulationError> {
        // The tier computes in f32: a value past F32_PARAMETER_MAX would turn
        // into ∞ (or its products would), and then into NaN inside a kernel.
        let positive = |field: &str, v: f64| {
            if v.is_finite() && v > 0.0 && v <= F32_PARAMETER_MAX {
                Ok(())
            } else {
                Err(invalid(
                    field,
                    format!("must be positive and at most {F32_PARAMETER_MAX:e} (f32 tier), got {v}", v = readable(v)),
                ))
            }
        };
        let nonneg = |field: &str, v: f64| {
            if (0.0..=F32_PARAMETER_MAX).contains(&v) {
                Ok(())
            } else {
                Err(invalid(
                    field,
                    format!("must be >= 0 and at most {F32_PARAMETER_MAX:e} (f32 tier), got {v}", v = readable(v)),
                ))
            }
        };
        // A velocity past it became ±∞ in f32 and NaN in the first step.
        let f32_velocity = |field: &str, v: DVec2| {
            if v.abs().max_element() <= F32_PARAMETER_MAX {
                Ok(())
            } else {
                Err(invalid(
                    field,
                    format!("must be at most {F32_PARAMETER_MAX:e} m/s per axis (f32 tier), got {}", readable_vec(v)),
                ))
            }
        };
        // Scene-level values the balls use (named without the `population.` prefix).
        for (field, v) in [("/gravity", gravity.abs().max_element()), ("/dt", dt)] {
            // NaN is refused too (it fails the comparison).
            if v.is_nan() || v > F32_PARAMETER_MAX {
                return Err(invalid(
                    field,
                    format!(
                        "must be at most {F32_PARAMETER_MAX:e} in size with a population (f32 tier), got {v}",
                        v = readable(v)
                    ),
                ));
            }
        }
        positive("radius", def.radius)?;
        if let Some(m) = def.radius_max
            && !(m.is_finite() && m >= def.radius && m <= F32_PARAMETER_MAX)
        {
            return Err(invalid(
                "radius_max",
                format!(
                    "must be >= radius ({}) and at most {F32_PARAMETER_MAX:e} (f32 tier), got {m}",
                    def.radius,
                    m = readable(m)
                ),
            ));
        }
        positive("density", def.density)?;
        // A ball's inverse mass is f32: a mass that rounds to 0 there gave
        // every ball of the step NaN (exit 3) instead of an input error.
        for r in [def.radius, def.radius_max.unwrap_or(def.radius)] {
            let mass = def.density * std::f64::consts::PI * r * r;
            if !(1.0 / F32_PARAMETER_MAX..=F32_PARAMETER_MAX).contains(&mass) {
                return Err(invalid(
                    "density",
                    format!(
                        "a ball of radius {r} m weighs {mass:e} kg at this density: the f32 tier needs masses in \
                         [{:e}, {F32_PARAMETER_MAX:e}] kg",
                        1.0 / F32_PARAMETER_MAX
                    ),
                ));
            }
        }
        if !(0.0..=1.0).contains(&def.restitution) {
            return Err(invalid("restitution", format!("must be in [0, 1], got {}", readable(def.restitution))));
        }
        nonneg("friction", def.friction)?;
        nonneg("rolling_resistance", def.rolling_resistance)?;
        if let Some(v) = def.resting_speed {
            nonneg("resting_speed", v)?;
        }
        if def.substeps == 0 || def.substeps > 1024 {
            return Err(invalid("substeps", format!("must be in 1..=1024, got {}", def.substeps)));
        }
        if def.iterations == 0 || def.iterations > 1024 {
            return Err(invalid("iterations", format!("must be in 1..=1024, got {}", def.iterations)));
        }
        if !(def.relaxation > 0.0 && def.relaxation < 2.0) {
            return Err(invalid("relaxation", format!("must be in (0, 2), got {}", readable(def.relaxation))));
        }
        // checked as the step holds it (f32): NaN and values that round to 0
        // are refused
        if (def.push_out as f32).is_nan() || def.push_out as f32 <= 0.0 {
            return Err(invalid("push_out", format!("must be > 0 (inf: unbounded), got {}", readable(def.push_out))));
        }
        nonneg("skin", def.skin)?;
        nonneg("sleep_time", def.sleep_time)?;
        positive("wake_overlap", def.wake_overlap)?;
        if let Some(v) = def.sleep_speed {
            positive("sleep_speed", v)?;
        }
        let mut spawn = def.spawn.clone();
        if let Some(n) = def.count {
            match spawn.first_mut() {
                Some(s) => s.set_count(n),
                None => return Err(invalid("count", "there is no spawner to resize (spawn is empty)")),
            }
        }
        let mut total: u64 = 0;
        for (i, s) in spawn.iter().enumerate() {
            let at = |f: &str| format!("spawn[{i}].{f}");
            match s {
                SpawnDef::Grid { origin, spacing, velocity, velocity_jitter, columns, .. } => {
                    if !origin.is_finite() || !velocity.is_finite() {
                        return Err(invalid(at("origin"), "origin and velocity must be finite"));
                    }
                    f32_velocity(&at("velocity"), *velocity)?;
                    positive(&at("spacing"), *spacing)?;
                    nonneg(&at("velocity_jitter"), *velocity_jitter)?;
                    if *columns == Some(0) {
                        return Err(invalid(at("columns"), "must be at least 1"));
                    }
                }
                SpawnDef::RandomBox { min, max, velocity, velocity_jitter, .. } => {
                    if !(min.is_finite() && max.is_finite() && min.x <= max.x && min.y <= max.y) {
                        return Err(invalid(
                            at("min"),
                            format!("needs finite min <= max, got {} and {}", readable_vec(*min), readable_vec(*max)),
                        ));
                    }
                    if !velocity.is_finite() {
                        return Err(invalid(at("velocity"), "must be finite"));
                    }
                    f32_velocity(&at("velocity"), *velocity)?;
                    nonneg(&at("velocity_jitter"), *velocity_jitter)?;
                    // Hook for spawn.rs: balls of a random box must not overlap.
                    let r_max = def.radius_max.unwrap_or(def.radius);
                    spawn::check_random_box(*min, *max, s.count(), r_max).map_err(|m| invalid(at("count"), m))?;
                }
                SpawnDef::Emitter { position, velocity, width, rate, start, .. } => {
                    if !position.is_finite() || !velocity.is_finite() {
                        return Err(invalid(at("position"), "position and velocity must be finite"));
                    }
                    f32_velocity(&at("velocity"), *velocity)?;
                    nonneg(&at("width"), *width)?;
                    positive(&at("rate"), *rate)?;
                    nonneg(&at("start"), *start)?;
                }
            }
            total = total.saturating_add(s.count());
        }
        if total > u64::from(u32::MAX) {
            return Err(invalid("count", format!("{total} balls: at most {} (u32 indices)", u32::MAX)));
        }
        for (k, r) in def.kill.iter().enumerate() {
            if !(r.min.is_finite() && r.max.is_finite() && r.min.x <= r.max.x && r.min.y <= r.max.y) {
                return Err(invalid(format!("kill[{k}]"), "needs finite min <= max"));
            }
        }
        let max_radius = def.radius_max.unwrap_or(def.radius);
        let skin = def.skin * max_radius;

        // Static obstacles: the scene's surfaces, then the container's walls.
        let mut static_obstacles = Vec::new();
        for s in surfaces {
            obstacle::surface_obstacles(s, &mut static_obstacles);
        }
        let mut extent = Extent::default();
        if let Some(c) = &def.container {
            let Some(main @ SpawnDef::Grid { spacing, .. }) = spawn.first() else {
                return Err(invalid("container", "a GridBox container needs a Grid as the first spawner"));
            };
            if !(c.floor.is_finite() && c.left.is_finite() && c.right_margin.is_finite()) {
                return Err(invalid("container", "floor, left and right_margin must be finite"));
            }
            let right = main.columns() as f64 * spacing + c.right_margin;
            if right <= c.left {
                return Err(invalid("container", format!("right wall x = {right} is not right of left = {}", c.left)));
            }
            let wall = |point: DVec2, normal: DVec2| Surface {
                geometry: crate::surface::SurfaceGeometry::Line { point, normal },
                friction: def.friction,
                restitution: def.restitution,
                rolling_resistance: def.rolling_resistance,
                kinetic_friction: None,
                material: None,
            };
            for s in [
                wall(DVec2::new(0.0, c.floor), DVec2::Y),
                wall(DVec2::new(c.left, 0.0), DVec2::X),
                wall(DVec2::new(right, 0.0), -DVec2::X),
            ] {
                obstacle::surface_obstacles(&s, &mut static_obstacles);
            }
            extent.add(DVec2::new(c.left, c.floor));
            extent.add(DVec2::new(right, c.floor));
        }

        // World bounds.
        let bounds = match &def.bounds {
            Some(r) => {
                if !(r.min.is_finite() && r.max.is_finite() && r.min.x < r.max.x && r.min.y < r.max.y) {
                    return Err(invalid("bounds", "needs finite min < max"));
                }
                (r.min, r.max)
            }
            None => {
                for s in &spawn {
                    spawn_extent(s, &mut extent);
                }
                for o in &static_obstacles {
                    match o.kind {
                        obstacle::kind::CIRCLE => {
                            let r = f64::from(o.b.x);
                            extent.add(o.a.as_dvec2() - DVec2::splat(r));
                            extent.add(o.a.as_dvec2() + DVec2::splat(r));
                        }
                        obstacle::kind::SEGMENT => {
                            extent.add(o.a.as_dvec2());
                            extent.add(o.b.as_dvec2());
                        }
                        _ => {}
                    }
                }
                let (min, max) = extent.get().ok_or_else(|| invalid("bounds", "cannot derive bounds: no spawner"))?;
                let grow = (max - min) * 0.5 + DVec2::splat(4.0 * max_radius);
                (min - grow, max + grow)
            }
        };
        let cell = (2.0 * max_radius + skin) as f32;
        let size = (bounds.1 - bounds.0).as_vec2();
        let (nx, ny) = ((size.x / cell).ceil().max(1.0) as u64, (size.y / cell).ceil().max(1.0) as u64);
        let cells = nx.saturating_mul(ny);
        // The grid before the memory, unless the balls alone are too many: a
        // world too large for the grid (a position or bound near f32's range)
        // saturated the memory estimate, and the error blamed the balls.
        if cells > MAX_CELLS && total.saturating_mul(CPU_BYTES_PER_BALL) <= memory_limit {
            return Err(invalid(
                "bounds",
                format!(
                    "the world {} × {} m needs {cells} grid cells of {cell} m, over the limit of {MAX_CELLS} \
                     (MAX_CELLS); {}",
                    readable(f64::from(size.x)),
                    readable(f64::from(size.y)),
                    if def.bounds.is_some() {
                        "give smaller bounds"
                    } else {
                        "no bounds are given, so they span the spawners, obstacles and container: give bounds \
                         or bring those nearer each other"
                    }
                ),
            ));
        }
        let explicit_bounds = def.bounds.is_some().then_some(bounds);
        check_spawners_fit(&spawn, explicit_bounds, cell, dt)?;
        let position_resolution = position_resolution(bounds, def.radius);
        if position_resolution > MAX_POSITION_RESOLUTION {
            return Err(invalid(
                "bounds",
                format!(
                    "the world reaches {} m from the origin, where f32 positions are {} m apart: {:.0} % of the smallest radius ({} m), so the balls cannot be told apart; {}",
                    readable(far_coordinate(bounds)),
                    readable(position_resolution * def.radius),
                    100.0 * position_resolution,
                    readable(def.radius),
                    "bring the scene nearer the origin (the population computes in f32)"
                ),
            ));
        }
        let bytes = total.saturating_mul(CPU_BYTES_PER_BALL).saturating_add(cells.saturating_mul(4));
        if bytes > memory_limit {
            return Err(PopulationError::TooLarge {
                count: total,
                bytes,
                per_ball: CPU_BYTES_PER_BALL,
                extra: format!(" + 4 per grid cell × {cells}"),
                backend: "cpu",
                limit: memory_limit,
                limit_name: "this machine's memory, MemTotal".into(),
            });
        }

        let n = total as usize;
        let mut pop = Population {
            params: PopulationParams {
                material: contact::Material {
                    restitution: def.restitution as f32,
                    friction: def.friction as f32,
                    rolling_resistance: def.rolling_resistance as f32,
                },
                resting_speed: def.resting_speed.map(|v| v as f32),
                substeps: def.substeps,
                iterations: def.iterations,
                stabilise_every: def.stabilise_every,
                relaxation: def.relaxation as f32,
                push_out: def.push_out as f32,
                skin: skin as f32,
                resort_every: def.resort_every,
                // Off without gravity unless a speed is given (no scale to
                // derive it from, and nothing to come to rest under).
                sleep_time: match def.sleep_speed {
                    Some(_) => def.sleep_time as f32,
                    None if gravity.length() > 0.0 => def.sleep_time as f32,
                    None => 0.0,
                },
                sleep_speed: def.sleep_speed.unwrap_or(SLEEP_SPEED_FACTOR * (gravity.length() * max_radius).sqrt())
                    as f32,
                wake_overlap: def.wake_overlap as f32,
                bounds: (bounds.0.as_vec2(), bounds.1.as_vec2()),
                kill: def.kill.iter().map(spawn::rect32).collect(),
            },
            position: Vec::with_capacity(n),
            velocity: Vec::with_capacity(n),
            angle: vec![0.0; n],
            omega: vec![0.0; n],
            radius: Vec::with_capacity(n),
            inv_mass: Vec::with_capacity(n),
            state: Vec::with_capacity(n),
            release_step: Vec::with_capacity(n),
            rest: vec![0.0; n],
            ball_id: (0..n as u32).collect(),
            grid: GridSpec { origin: bounds.0.as_vec2(), cell, nx: nx as u32, ny: ny as u32 },
            obstacles: static_obstacles.clone(),
            static_obstacles,
            gravity: gravity.as_vec2(),
            fields: fields.iter().map(GpuField::from).collect(),
            steps: 0,
            max_radius: max_radius as f32,
            position_resolution,
            list_overflow: 0,
            max_overlap_seen: 0.0,
            stage_times: stage_times::PopulationStageTimes::default(),
            window: (0, 0),
            ball_visits: 0,
            scratch: cpu::Scratch::default(),
        };
        for s in &spawn {
            spawn::generate(s, (def.radius, def.radius_max), |b| {
                let mass = def.density * std::f64::consts::PI * b.radius * b.radius;
                pop.position.push(b.position.as_vec2());
                pop.velocity.push(b.velocity.as_vec2());
                pop.radius.push(b.radius as f32);
                pop.inv_mass.push((1.0 / mass) as f32);
                // The first step at whose start the ball is due (a relative
                // margin keeps k/rate = k·dt on step k despite rounding).
                let step = (b.release / dt * (1.0 - 1e-12)).ceil();
                if b.release > 0.0 {
                    pop.state.push(state::PENDING);
                    pop.release_step.push(step.min(f64::from(u32::MAX)) as u32);
                } else {
                    pop.state.push(state::ALIVE);
                    pop.release_step.push(0);
                }
            });
        }
        pop.sort_by_release();
        pop.window = (0, pop.release_step.partition_point(|&r| r == 0));
        Ok(pop)
    }

    /// Orders the balls by release step (stable: balls released at the same
    /// step keep the spawners' order), so that the balls in the world are a
    /// prefix that the release cursor grows. A scene whose spawners list
    /// their balls in release order (grids and boxes, then emitters) keeps
    /// its indices.
    fn sort_by_release(&mut self) {
        if self.release_step.is_sorted() {
            return;
        }
        let mut order: Vec<u32> = (0..self.len() as u32).collect();
        order.sort_by_key(|&i| self.release_step[i as usize]);
        fn permute<T: Copy>(v: &mut Vec<T>, order: &[u32]) {
            *v = order.iter().map(|&i| v[i as usize]).collect();
        }
        permute(&mut self.position, &order);
        permute(&mut self.velocity, &order);
        permute(&mut self.angle, &order);
        permute(&mut self.omega, &order);
        permute(&mut self.radius, &order);
        permute(&mut self.inv_mass, &order);
        permute(&mut self.state, &order);
        permute(&mut self.release_step, &order);
        permute(&mut self.rest, &order);
    }
}

#[derive(Default)]
struct Extent(Option<(DVec2, DVec2)>);

impl Extent {
    fn add(&mut self, p: DVec2) {
        self.0 = Some(match self.0 {
            None => (p, p),
            Some((a, b)) => (a.min(p), b.max(p)),
        });
    }
    fn get(&self) -> Option<(DVec2, DVec2)> {
        self.0
    }
}

/// Where the spawners put their balls against the grid, before any ball
/// exists. The grid's pair scans and its in-cell sort are quadratic in a
/// cell's balls, so no spawner may crowd a cell:
/// * with bounds given, every spawner inside them: a ball spawned outside
///   leaves at the first step's end, and until then the grid clamps it into
///   a cell of the world's edge (vortex.ron with `population.count=4000000`
///   put 2·10⁶ balls into the edge cells: `mx2d check` ran for 348 s);
/// * a `Grid` at most [`MAX_SPAWNED_PER_CELL`] balls a cell (vortex.ron at
///   spacing 0.001 m: 15,876 a cell, `mx2d check` did not return);
/// * an `Emitter` at most as many a step into a cell of its nozzle's line:
///   a step's releases all start there, ⌈rate·dt⌉ balls over its cells (10⁷
///   balls/s from a point: 10⁵ a step in one cell, 15.8 s a step in the
///   neighbour lists).
fn check_spawners_fit(
    spawn: &[SpawnDef],
    bounds: Option<(DVec2, DVec2)>,
    cell: f32,
    dt: f64,
) -> Result<(), PopulationError> {
    // The cell as the f32 grid holds it, printed to a nanometre; reaches to
    // a micrometre (a grid's far corner is a sum of spacings).
    let cell = (f64::from(cell) * 1e9).round() / 1e9;
    let near = |v: DVec2| readable_vec((v * 1e6).round() / 1e6);
    let most = MAX_SPAWNED_PER_CELL as f64;
    for (i, s) in spawn.iter().enumerate() {
        if let Some((min, max)) = bounds {
            let mut reach = Extent::default();
            spawn_extent(s, &mut reach);
            if let Some((lo, hi)) = reach.get()
                && (lo.x < min.x || lo.y < min.y || hi.x > max.x || hi.y > max.y)
            {
                let what = match s {
                    SpawnDef::Grid { .. } => {
                        format!("its {} balls in {} columns reach {} … {}", s.count(), s.columns(), near(lo), near(hi))
                    }
                    SpawnDef::RandomBox { .. } => format!("its box {} … {}", near(lo), near(hi)),
                    SpawnDef::Emitter { .. } => format!("it emits at {}", near(lo)),
                };
                return Err(invalid(
                    format!("spawn[{i}]"),
                    format!(
                        "{what}, outside the world bounds {} … {}: give larger bounds, or fewer balls or a smaller \
                         spacing",
                        readable_vec(min),
                        readable_vec(max)
                    ),
                ));
            }
        }
        match *s {
            SpawnDef::Grid { spacing, .. } => {
                let per_axis = (cell / spacing).floor() + 1.0;
                let per_cell = (per_axis * per_axis).min(s.count() as f64);
                if per_cell > most {
                    return Err(invalid(
                        format!("spawn[{i}].spacing"),
                        format!(
                            "{} m puts up to {per_cell} balls into one grid cell of {} m (at most \
                             {MAX_SPAWNED_PER_CELL}: balls this close start mostly inside each other, and the grid's \
                             scans grow with the square of a cell's balls); give a spacing above {} m",
                            readable(spacing),
                            readable(cell),
                            readable(cell / most.sqrt())
                        ),
                    ));
                }
            }
            SpawnDef::Emitter { width, rate, .. } => {
                let across = (width / cell).floor().max(1.0);
                let per_cell = ((rate * dt).ceil().min(s.count() as f64) / across).ceil();
                if per_cell > most {
                    return Err(invalid(
                        format!("spawn[{i}].rate"),
                        format!(
                            "{} balls/s release up to {per_cell} balls a step of {} s into one grid cell of {} m at \
                             the nozzle ({} m wide; at most {MAX_SPAWNED_PER_CELL}: they start inside each other, \
                             and the grid's scans grow with the square of a cell's balls); give a rate of at most \
                             {}/s or a wider nozzle",
                            readable(rate),
                            readable(dt),
                            readable(cell),
                            readable(width),
                            readable((most * across / dt).floor())
                        ),
                    ));
                }
            }
            SpawnDef::RandomBox { .. } => {}
        }
    }
    Ok(())
}

/// Most balls a `Grid` spawner may put into one cell of the population's
/// grid (a spacing above an eighth of a cell, ≈ 0.26 r_max), and an
/// `Emitter` in one step.
const MAX_SPAWNED_PER_CELL: u64 = 64;

fn spawn_extent(s: &SpawnDef, extent: &mut Extent) {
    match *s {
        SpawnDef::Grid { origin, count, spacing, .. } => {
            let cols = s.columns();
            let rows = count.div_ceil(cols.max(1));
            extent.add(origin);
            extent.add(origin + DVec2::new(cols.saturating_sub(1) as f64, rows.saturating_sub(1) as f64) * spacing);
        }
        SpawnDef::RandomBox { min, max, .. } => {
            extent.add(min);
            extent.add(max);
        }
        SpawnDef::Emitter { position, .. } => extent.add(position),
    }
}

/// The largest magnitude of a coordinate of the world's bounds (m).
fn far_coordinate(bounds: (DVec2, DVec2)) -> f64 {
    [bounds.0.x, bounds.0.y, bounds.1.x, bounds.1.y].into_iter().map(f64::abs).fold(0.0, f64::max)
}

/// The spacing of f32 numbers at the world's farthest coordinate over the
/// smallest radius ([`super::POSITION_RESOLUTION_WARNING`]).
fn position_resolution(bounds: (DVec2, DVec2), smallest_radius: f64) -> f64 {
    let far = far_coordinate(bounds) as f32;
    let spacing = if far.is_finite() { far.next_up() - far } else { f32::INFINITY };
    f64::from(spacing) / smallest_radius
}
