//! Output files of `mx2d run` — a contract scripts rely on (DESIGN.md,
//! "Command line"): trace and energy CSV with fixed headers, a JSON summary.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::constraint::system::Reaction;
use crate::world::World;

/// `--trace` header: one row per body per recorded step.
pub const TRACE_HEADER: &str = "step,t,body,x,y,angle,vx,vy,omega";
/// `--contacts` CSV header: one row per active contact per recorded step
/// (impulses of the step, N·s; the partner is a body name or `surface<i>`).
pub const CONTACTS_HEADER: &str = "step,t,body_a,body_b,x,y,nx,ny,gap,normal_impulse,tangent_impulse";
/// `--reactions` header: one row per constraint per recorded step (the
/// constraint's force and torque on its first body; the last two fields
/// empty), then one row per active contact of the step, named
/// `contact:<body_a>:<body_b>` (`body_b` a body name or `surface<i>`), with
/// the contact's mean force over the step on `body_a` and its normal and
/// tangential parts (N).
pub const REACTIONS_HEADER: &str = "step,t,constraint,fx,fy,torque,normal_force,tangent_force";
/// `--energy` header: one row per recorded step.
pub const ENERGY_HEADER: &str = "step,t,kinetic,potential,total,constraint_error";

/// A CSV file written row by row through the `csv` crate (so a field with a
/// comma, a quote or a newline is quoted, RFC 4180) and flushed on drop, so
/// that a run that stops early keeps what it wrote. Every I/O error names the
/// file. Numbers are written with Rust's shortest round-trip formatting.
pub struct CsvWriter {
    out: csv::Writer<File>,
    path: PathBuf,
}

impl CsvWriter {
    /// Creates `path` and writes `header` (comma-separated names).
    pub fn create(path: &Path, header: &str) -> std::io::Result<Self> {
        let file = File::create(path).map_err(|e| named(path, e))?;
        let mut w = Self { out: csv::Writer::from_writer(file), path: path.to_path_buf() };
        w.row(header.split(','))?;
        Ok(w)
    }

    /// The file this writer writes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn row<I, T>(&mut self, fields: I) -> std::io::Result<()>
    where
        I: IntoIterator<Item = T>,
        T: AsRef<[u8]>,
    {
        self.out.write_record(fields).map_err(|e| named(&self.path, e.into()))
    }

    /// Appends the trace rows of every body at the world's current step.
    pub fn trace_rows(&mut self, world: &World) -> std::io::Result<()> {
        let (step, t) = (world.step_count().to_string(), world.time().to_string());
        for b in world.bodies.iter() {
            let numbers = [b.position.x, b.position.y, b.angle, b.velocity.x, b.velocity.y, b.angular_velocity];
            let numbers = numbers.map(|v| v.to_string());
            self.row(
                [step.as_str(), t.as_str(), b.name.as_str()].into_iter().chain(numbers.iter().map(String::as_str)),
            )?;
        }
        // Balls in the world, named `ball<id>` and listed by id (the arrays
        // are re-sorted by cell: Population::ball_id; call
        // World::sync_population first when the population runs on the GPU).
        if let Some(pop) = &world.population {
            let slots = pop.slots_by_id();
            for (id, &i) in slots.iter().enumerate().filter(|&(_, &i)| pop.state[i] == crate::population::state::ALIVE)
            {
                let (p, v) = (pop.position[i], pop.velocity[i]);
                let numbers = [p.x, p.y, pop.angle[i], v.x, v.y, pop.omega[i]].map(|x| x.to_string());
                let name = format!("ball{id}");
                self.row(
                    [step.as_str(), t.as_str(), name.as_str()].into_iter().chain(numbers.iter().map(String::as_str)),
                )?;
            }
        }
        Ok(())
    }

    /// Appends one row per contact of the world's last step.
    pub fn contact_rows(&mut self, world: &World) -> std::io::Result<()> {
        let (step, t) = (world.step_count(), world.time());
        let bodies = world.bodies.as_slice();
        for c in world.contacts.contacts() {
            let partner = match c.partner {
                crate::contact::Partner::Body(j) => bodies[j].name.clone(),
                crate::contact::Partner::Surface(s) => format!("surface{s}"),
            };
            let m = &c.manifold;
            let numbers = [t, m.point.x, m.point.y, m.normal.x, m.normal.y, m.gap, c.impulse[0], c.impulse[1]]
                .map(|v| v.to_string());
            let (step, a) = (step.to_string(), bodies[c.body_a].name.as_str());
            self.row(
                [step.as_str(), numbers[0].as_str(), a, partner.as_str()]
                    .into_iter()
                    .chain(numbers[1..].iter().map(String::as_str)),
            )?;
        }
        Ok(())
    }

    /// Appends the energy row of the world's current step.
    pub fn energy_row(&mut self, world: &World, constraint_error: f64) -> std::io::Result<()> {
        let e = world.energy();
        let numbers = [world.time(), e.kinetic, e.potential, e.total, constraint_error].map(|v| v.to_string());
        self.row(std::iter::once(world.step_count().to_string()).chain(numbers))
    }

    /// Appends the given reaction rows at the world's current step, then the
    /// contact forces of its last step (see [`REACTIONS_HEADER`]).
    pub fn reaction_rows(&mut self, world: &World, reactions: &[Reaction]) -> std::io::Result<()> {
        let (step, t) = (world.step_count().to_string(), world.time().to_string());
        for r in reactions {
            let numbers = [r.fx, r.fy, r.torque].map(|v| v.to_string());
            self.row(
                [step.as_str(), t.as_str(), r.constraint.as_str()]
                    .into_iter()
                    .chain(numbers.iter().map(String::as_str))
                    .chain(["", ""]),
            )?;
        }
        let bodies = world.bodies.as_slice();
        for f in world.contacts.forces(bodies, world.dt) {
            let partner = match f.partner {
                crate::contact::Partner::Body(j) => bodies[j].name.clone(),
                crate::contact::Partner::Surface(s) => format!("surface{s}"),
            };
            let name = format!("contact:{}:{partner}", bodies[f.body_a].name);
            let numbers = [f.force.x, f.force.y, f.torque, f.normal_force, f.tangent_force].map(|v| v.to_string());
            self.row([step.as_str(), t.as_str(), name.as_str()].into_iter().chain(numbers.iter().map(String::as_str)))?;
        }
        Ok(())
    }

    /// Flushes buffered rows to disk.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush().map_err(|e| named(&self.path, e))
    }
}

impl Drop for CsvWriter {
    fn drop(&mut self) {
        let _ = self.out.flush();
    }
}

/// An I/O error that names the file it happened on.
pub fn named(path: &Path, e: std::io::Error) -> std::io::Error {
    std::io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display()))
}

/// Writes one line to stderr; a failure to write there (a closed pipe, a
/// full disk) is ignored, as there is nowhere left to report it.
pub fn report(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}");
}

/// Why a run ended early.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Stopped {
    /// Step at which it stopped.
    pub step: u64,
    /// Body involved, if any.
    pub body: Option<String>,
    /// The full message.
    pub message: String,
}

/// `--summary` JSON.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Summary {
    /// Scene name.
    pub scene: String,
    /// Integrator name.
    pub integrator: String,
    /// Number of bodies.
    pub bodies: usize,
    /// Steps taken.
    pub steps: u64,
    /// Integrator (sub)steps accepted: equal to `steps` for the fixed-step
    /// methods, the adaptive ones may take several per step.
    pub substeps: u64,
    /// Integrator steps rejected by the error control or a failed Newton.
    pub rejected_steps: u64,
    /// Newton iterations of the implicit methods (0 for the explicit ones).
    pub newton_iterations: u64,
    /// Jacobian evaluations of the implicit methods.
    pub jacobians: u64,
    /// Relative tolerance of the adaptive integrators.
    pub tolerance: f64,
    /// Step size (s).
    pub dt: f64,
    /// Final simulated time (s).
    pub t_final: f64,
    /// Wall time of the stepping loop (ms).
    pub wall_ms: f64,
    /// Mean wall time per step (ms).
    pub ms_per_step: f64,
    /// Total mechanical energy at the start (J).
    pub energy_initial: f64,
    /// Total mechanical energy at the end (J).
    pub energy_final: f64,
    /// Work done by non-conservative loads over the run (J).
    pub work_nonconservative: f64,
    /// |(E_final − W) − E_initial|: the energy balance error (J).
    pub energy_balance_error: f64,
    /// Largest constraint violation seen (0 without constraints).
    pub max_constraint_error: f64,
    /// Largest contact penetration seen (0 without contacts).
    pub max_penetration: f64,
    /// `cpu` or `gpu`.
    pub backend: String,
    /// GPU adapter name, or a note why none was used.
    pub adapter: String,
    /// Milliseconds spent per stage over the run, in step order.
    pub stage_ms: Vec<(String, f64)>,
    /// Set when the run stopped early.
    pub stopped: Option<Stopped>,
    /// Warnings raised during the run (redundant constraints …).
    pub warnings: Vec<String>,
    /// The population tier's figures, when the scene has one.
    pub population: Option<PopulationSummary>,
}

/// The population tier in `--summary` (the peers script reads `escaped`,
/// `kinetic_per_ball` and `max_overlap_ratio`).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct PopulationSummary {
    /// Balls in all (every state).
    pub balls: usize,
    /// `cpu` or `gpu`: where the population stepped.
    pub backend: String,
    /// Mean wall time of the population stage per step (ms).
    pub ms_per_step: f64,
    /// Mean time per timed step of each stage that ran (ms), in step order,
    /// under the names of `mx2d bench --scene NAME --passes`
    /// ([`crate::population::stage_times`]); empty when the stages were not
    /// timed (`stage_timing` says why).
    pub stage_ms_per_step: Vec<(String, f64)>,
    /// How the stages were timed (CPU clock, GPU timestamps, or why none).
    pub stage_timing: String,
    /// Steps whose stages were timed (all on the CPU twin; on the GPU one in
    /// [`crate::gpu::timing::TIMED_STEP_STRIDE`] of the first
    /// [`crate::gpu::timing::RECORDED_STEPS`] after each readback).
    pub stage_timed_steps: u64,
    /// Substeps per step.
    pub substeps: u32,
    /// Position iterations per substep.
    pub iterations: u32,
    /// Figures at the start.
    pub initial: crate::population::PopulationStats,
    /// Figures at the end: `alive`, `escaped`, `killed`, `pending`,
    /// `kinetic_energy`, `kinetic_per_ball`, `max_overlap_ratio` (overlap over
    /// the smaller radius), `asleep`, `list_overflow`.
    pub last: crate::population::PopulationStats,
    /// Balls that left the world over the run.
    pub escaped: u64,
    /// Balls asleep at the end (the population's sleeping: at rest for
    /// `sleep_time`, static until something wakes them).
    pub asleep: u64,
    /// Kinetic energy per ball in the world at the end (J).
    pub kinetic_per_ball: f64,
    /// Largest overlap / radius at the end.
    pub max_overlap_ratio: f64,
    /// Largest overlap / radius after any substep of the run (reduced in the
    /// step on either backend, not sampled).
    pub max_overlap_ratio_seen: f64,
}

impl Summary {
    /// Writes the summary as pretty JSON.
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        std::fs::write(path, text + "\n").map_err(|e| named(path, e))
    }
}
