//! What the window shows besides the scene: the overlay's lines (time,
//! steps/s, frame ms, N, energies, backends, adapter) and the energy graph
//! (E key), with the balls' kinetic energy on either backend.

use glam::DVec2;

use super::{App, HELP};
use crate::render::ball_energy::population_kinetic_energy;
use crate::render::tessellate::Vertex;

impl App {
    /// Kinetic energy of the balls in the world, Σ ½ m v² + ½ I ω² (I = ½ m r²
    /// for a solid disc), in f64 ([`population_kinetic_energy`]). On the GPU backend the
    /// host arrays are stale (a frame never waits on a readback): the value is
    /// the last one [`BallEnergyReader`] brought back asynchronously, with
    /// the simulated time it belongs to; `None` until the first arrives.
    pub(super) fn balls_kinetic(&self) -> Option<f64> {
        let pop = self.world.population.as_ref()?;
        if self.gpu_balls.is_some() {
            return self.ball_energy.latest().map(|(_, e)| e);
        }
        Some(population_kinetic_energy(pop))
    }

    pub(super) fn overlay_lines(&self) -> Vec<String> {
        let steps: u64 = self.steps_window.iter().map(|(_, n)| n).sum();
        let adapter = self.gpu.as_ref().map_or("-".to_string(), |g| g.renderer.context().adapter_name().to_string());
        let mut lines = vec![
            format!(
                "{}  t = {:.3} s  x{}{}",
                self.scene.file.name,
                self.world.time(),
                self.speed,
                if self.paused { "  [paused]" } else { "" }
            ),
            format!(
                "{steps} steps/s   frame {:.1} ms (simulate {:.1}, draw {:.1})",
                self.frame_ms, self.simulate_ms, self.draw_ms
            ),
            format!(
                "N = {} bodies, {} balls   E = {:.6e} J (bodies)",
                self.world.bodies.len(),
                self.world.population.as_ref().map_or(0, |p| p.position.len()),
                self.world.energy().total
            ),
            format!("fields on {}   draw on {adapter}", self.world.field_backend()),
        ];
        if self.world.population.is_some() {
            let source = if self.gpu_balls.is_some() { "its GPU buffers" } else { "the host" };
            lines.push(format!(
                "balls on {}, drawn from {source}, colour = {} (C)",
                self.world.population_backend(),
                self.style.ball_colour.name()
            ));
            lines.push(match (self.balls_kinetic(), self.gpu_balls.is_some()) {
                (Some(e), false) => format!("balls' kinetic energy {e:.6e} J"),
                (Some(e), true) => format!(
                    "balls' kinetic energy {e:.6e} J at t = {:.3} s (read without waiting)",
                    self.ball_energy.latest().map_or(0.0, |(t, _)| t)
                ),
                (None, _) => "balls' kinetic energy: first asynchronous read pending".into(),
            });
        }
        if let Some(note) = &self.population_note {
            lines.push(note.clone());
        }
        if let Some(session) = &self.session {
            let planned = session.planned_steps();
            lines.push(if session.is_over(&self.world) {
                format!("recorded {} of {planned} steps: done", self.world.step_count())
            } else {
                format!("recording step {} of {planned}", self.world.step_count())
            });
        }
        if let Some(h) = &self.halted {
            lines.push(format!("stopped: {h}").chars().take(100).collect());
        }
        if self.help {
            lines.push(String::new());
            lines.extend(HELP.iter().map(|s| s.to_string()));
        } else {
            lines.push("H: help".into());
        }
        lines
    }

    /// The energy graph, bottom right, as mesh triangles in world units.
    pub(super) fn energy_graph(&self, out: &mut Vec<Vertex>) {
        if self.energy.len() < 2 {
            return;
        }
        let (w, h) = (f64::from(self.size.0), f64::from(self.size.1));
        let (gw, gh) = ((0.35 * w).min(420.0), (0.25 * h).min(200.0));
        let (x0, y0) = (w - gw - 10.0, h - gh - 10.0);
        let to_world = |px: f64, py: f64| self.camera.world_at(px, py, self.size.0, self.size.1);
        let px = 1.0 / self.camera.pixels_per_metre;
        let push_quad = |out: &mut Vec<Vertex>, a: DVec2, b: DVec2, c: DVec2, d: DVec2, color: u32| {
            for p in [a, b, c, a, c, d] {
                out.push(Vertex { position: [p.x as f32, p.y as f32], color });
            }
        };
        push_quad(
            out,
            to_world(x0, y0),
            to_world(x0 + gw, y0),
            to_world(x0 + gw, y0 + gh),
            to_world(x0, y0 + gh),
            crate::render::rgba(255, 255, 255, 220),
        );
        let (lo, hi) = self
            .energy
            .iter()
            .flat_map(|e| [e.1, e.2, e.3, e.4])
            .filter(|v| v.is_finite())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| (l.min(v), h.max(v)));
        let span = (hi - lo).max(1e-12);
        let (t0, t1) = (self.energy.front().map_or(0.0, |e| e.0), self.energy.back().map_or(1.0, |e| e.0));
        let tspan = (t1 - t0).max(1e-12);
        // Bodies' total, kinetic, potential; the balls' kinetic (teal).
        let colours = [
            crate::render::rgba(0, 0, 0, 255),
            crate::render::rgba(66, 133, 244, 255),
            crate::render::rgba(234, 67, 53, 255),
            crate::render::rgba(0, 150, 170, 255),
        ];
        for (k, colour) in colours.iter().enumerate() {
            let point = |e: &(f64, f64, f64, f64, f64)| {
                let v = [e.1, e.2, e.3, e.4][k];
                v.is_finite().then(|| {
                    to_world(x0 + 6.0 + (gw - 12.0) * (e.0 - t0) / tspan, y0 + gh - 6.0 - (gh - 12.0) * (v - lo) / span)
                })
            };
            let pts: Vec<DVec2> = self.energy.iter().filter_map(point).collect();
            for s in pts.windows(2) {
                let d = s[1] - s[0];
                if d.length_squared() > 0.0 {
                    let n = d.normalize().perp() * (0.75 * px);
                    push_quad(out, s[0] - n, s[1] - n, s[1] + n, s[0] + n, *colour);
                }
            }
        }
    }
}
