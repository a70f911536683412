//! Output files of `mx2d run` — a contract scripts rely on (DESIGN.md,
//! "Command line"): trace and energy CSV with fixed headers, a JSON summary.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use serde::Serialize;

use crate::world::World;

/// `--trace` header: one row per body per recorded step.
pub const TRACE_HEADER: &str = "step,t,body,x,y,angle,vx,vy,omega";
/// `--reactions` header: one row per constraint per recorded step (the
/// constraint's force and torque on its first body).
pub const REACTIONS_HEADER: &str = "step,t,constraint,fx,fy,torque";
/// `--energy` header: one row per recorded step.
pub const ENERGY_HEADER: &str = "step,t,kinetic,potential,total,constraint_error";

/// A CSV file written row by row and flushed on drop, so that a run that
/// stops early keeps what it wrote.
pub struct CsvWriter {
    out: BufWriter<File>,
}

impl CsvWriter {
    /// Creates `path` and writes `header`.
    pub fn create(path: &Path, header: &str) -> std::io::Result<Self> {
        let mut out = BufWriter::new(File::create(path)?);
        writeln!(out, "{header}")?;
        Ok(Self { out })
    }

    /// Appends the trace rows of every body at the world's current step.
    pub fn trace_rows(&mut self, world: &World) -> std::io::Result<()> {
        let (step, t) = (world.step_count(), world.time());
        for b in world.bodies.iter() {
            writeln!(
                self.out,
                "{step},{t},{},{},{},{},{},{},{}",
                b.name, b.position.x, b.position.y, b.angle, b.velocity.x, b.velocity.y, b.angular_velocity
            )?;
        }
        // Balls in the world, named `ball<index>` (call World::sync_population
        // first when the population runs on the GPU).
        if let Some(pop) = &world.population {
            for i in (0..pop.len()).filter(|&i| pop.state[i] == crate::population::state::ALIVE) {
                let (p, v) = (pop.position[i], pop.velocity[i]);
                writeln!(
                    self.out,
                    "{step},{t},ball{i},{},{},{},{},{},{}",
                    p.x, p.y, pop.angle[i], v.x, v.y, pop.omega[i]
                )?;
            }
        }
        Ok(())
    }

    /// Appends the energy row of the world's current step.
    pub fn energy_row(&mut self, world: &World, constraint_error: f64) -> std::io::Result<()> {
        let e = world.energy();
        writeln!(
            self.out,
            "{},{},{},{},{},{}",
            world.step_count(),
            world.time(),
            e.kinetic,
            e.potential,
            e.total,
            constraint_error
        )
    }

    /// Appends the reaction rows of the world's current step.
    pub fn reaction_rows(&mut self, world: &mut World) -> std::io::Result<()> {
        let (step, t) = (world.step_count(), world.time());
        let reactions = world.reactions().map_err(std::io::Error::other)?;
        for r in reactions {
            writeln!(self.out, "{step},{t},{},{},{},{}", r.constraint, r.fx, r.fy, r.torque)?;
        }
        Ok(())
    }

    /// Flushes buffered rows to disk.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

impl Drop for CsvWriter {
    fn drop(&mut self) {
        let _ = self.out.flush();
    }
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
    /// Substeps per step.
    pub substeps: u32,
    /// Position iterations per substep.
    pub iterations: u32,
    /// Figures at the start.
    pub initial: crate::population::PopulationStats,
    /// Figures at the end: `alive`, `escaped`, `killed`, `pending`,
    /// `kinetic_energy`, `kinetic_per_ball`, `max_overlap_ratio` (overlap over
    /// the smaller radius), `list_overflow`.
    pub last: crate::population::PopulationStats,
    /// Balls that left the world over the run.
    pub escaped: u64,
    /// Kinetic energy per ball in the world at the end (J).
    pub kinetic_per_ball: f64,
    /// Largest overlap / radius at the end.
    pub max_overlap_ratio: f64,
    /// Largest overlap / radius over the recorded steps.
    pub max_overlap_ratio_seen: f64,
}

impl Summary {
    /// Writes the summary as pretty JSON.
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        std::fs::write(path, text + "\n")
    }
}
