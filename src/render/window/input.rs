//! What the user does to the window: keys, the mouse (pan, zoom, grab a
//! body with a spring) and winit's event dispatch ([`ApplicationHandler`]).
//! The keys are listed in the module docs of [`super`].

use std::time::Instant;

use glam::DVec2;
use winit::application::ApplicationHandler;
use winit::event::{ElementState, MouseButton, MouseScrollDelta, WindowEvent};
use winit::event_loop::ActiveEventLoop;
use winit::keyboard::{Key, NamedKey};
use winit::window::WindowId;

use super::{App, TRAIL_BODIES, test_frames};
use crate::load::{Anchor, Load};
use crate::output::report;

/// A mouse drag in progress.
pub(super) enum Drag {
    Pan { last: (f64, f64) },
    Grab { body: usize, load: usize, local: DVec2 },
}

impl App {
    /// The world point under the cursor.
    pub(super) fn cursor_world(&self) -> DVec2 {
        self.camera.world_at(self.cursor.0, self.cursor.1, self.size.0, self.size.1)
    }

    fn key(&mut self, event_loop: &ActiveEventLoop, key: &Key) {
        match key {
            Key::Named(NamedKey::Space) => self.paused = !self.paused,
            Key::Named(NamedKey::ArrowRight) => {
                self.paused = true;
                self.step_once();
            }
            Key::Named(NamedKey::Escape) => event_loop.exit(),
            Key::Character(c) => match c.as_str() {
                "+" | "=" => self.speed = (self.speed * 2.0).min(64.0),
                "-" | "_" => self.speed = (self.speed * 0.5).max(1.0 / 64.0),
                "r" | "R" => self.reset(),
                "f" | "F" => self.style.forces = !self.style.forces,
                "e" | "E" => self.energy_graph = !self.energy_graph,
                "h" | "H" => self.help = !self.help,
                "v" | "V" => self.style.velocities = !self.style.velocities,
                "c" | "C" => self.style.ball_colour = self.style.ball_colour.next(),
                "t" | "T" => {
                    self.trails = match self.trails {
                        Some(_) => None,
                        None => Some(vec![Vec::new(); self.world.bodies.len().min(TRAIL_BODIES)]),
                    }
                }
                "q" | "Q" => event_loop.exit(),
                "s" | "S" => {
                    if let Err(e) = self.screenshot() {
                        report(&format!("mx2d: screenshot failed: {e:#}"));
                    }
                }
                _ => {}
            },
            _ => {}
        }
    }

    fn press(&mut self) {
        let p = self.cursor_world();
        let hit = self
            .world
            .bodies
            .iter()
            .position(|b| !b.fixed && b.shape.contains(DVec2::from_angle(-b.angle).rotate(p - b.position)));
        // Grabbing would change a recorded run: pan only.
        let hit = hit.filter(|_| self.session.is_none());
        self.drag = Some(match hit {
            Some(i) => {
                let body = &self.world.bodies.as_slice()[i];
                let local = DVec2::from_angle(-body.angle).rotate(p - body.position);
                // A spring of about 3 Hz on the body's mass, near critically damped.
                let omega = std::f64::consts::TAU * 3.0;
                let stiffness = body.mass * omega * omega;
                let damping = 2.0 * body.mass * omega;
                self.world.loads.push(Load::Spring {
                    body: crate::body::BodyHandle(i),
                    point: local,
                    anchor: Anchor::World(p),
                    stiffness,
                    rest_length: 0.0,
                    damping,
                });
                Drag::Grab { body: i, load: self.world.loads.len() - 1, local }
            }
            None => Drag::Pan { last: self.cursor },
        });
    }

    fn release(&mut self) {
        if let Some(Drag::Grab { load, .. }) = self.drag.take()
            && load < self.world.loads.len()
        {
            self.world.loads.remove(load);
        }
    }
}

impl ApplicationHandler for App {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.gpu.is_none()
            && let Err(e) = self.open(event_loop)
        {
            self.fail(event_loop, e);
        }
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, _id: WindowId, event: WindowEvent) {
        match event {
            WindowEvent::CloseRequested => event_loop.exit(),
            WindowEvent::Resized(size) => {
                if let Some(gpu) = self.gpu.as_mut()
                    && size.width > 0
                    && size.height > 0
                {
                    gpu.config.width = size.width;
                    gpu.config.height = size.height;
                    gpu.surface.configure(&gpu.renderer.context().device, &gpu.config);
                    self.size = (size.width, size.height);
                }
            }
            WindowEvent::KeyboardInput { event, .. } if event.state == ElementState::Pressed => {
                self.key(event_loop, &event.logical_key);
            }
            WindowEvent::MouseWheel { delta, .. } => {
                let lines = match delta {
                    MouseScrollDelta::LineDelta(_, y) => f64::from(y),
                    MouseScrollDelta::PixelDelta(p) => p.y / 40.0,
                };
                self.camera.zoom_about(1.15f64.powf(lines), self.cursor.0, self.cursor.1, self.size.0, self.size.1);
            }
            WindowEvent::CursorMoved { position, .. } => {
                self.cursor = (position.x, position.y);
                if let Some(Drag::Pan { last }) = &mut self.drag {
                    let d = DVec2::new(position.x - last.0, last.1 - position.y) / self.camera.pixels_per_metre;
                    self.camera.center -= d;
                    *last = (position.x, position.y);
                }
            }
            WindowEvent::MouseInput { state, button: MouseButton::Left | MouseButton::Right, .. } => match state {
                ElementState::Pressed => self.press(),
                ElementState::Released => self.release(),
            },
            WindowEvent::RedrawRequested => {
                let now = Instant::now();
                let elapsed = self.last_frame.map_or(0.0, |t| now.duration_since(t).as_secs_f64().min(0.25));
                if let Some(t) = self.last_frame {
                    self.frame_ms = now.duration_since(t).as_secs_f64() * 1e3;
                }
                self.last_frame = Some(now);
                self.stats.first.get_or_insert(now);
                self.stats.last = Some(now);
                self.stats.frames += 1;
                self.simulate(elapsed);
                if let Err(e) = self.draw() {
                    self.fail(event_loop, e);
                    return;
                }
                self.frames += 1;
                if self.test && self.frames == test_frames() / 2 {
                    // Exercise the drawing toggles half way: forces,
                    // energy graph, trails, velocities, help.
                    for c in ["f", "e", "t", "v", "c", "h"] {
                        self.key(event_loop, &Key::Character(c.into()));
                    }
                }
                let recording = self.session.as_ref().is_some_and(|r| !r.is_over(&self.world) && self.halted.is_none());
                if self.test && self.frames >= test_frames() && !recording {
                    match self.screenshot() {
                        Ok(path) => {
                            report(&format!("window test: {} frames drawn, screenshot {}", self.frames, path.display()))
                        }
                        Err(e) => self.failure = Some(e.context("window test: screenshot")),
                    }
                    event_loop.exit();
                }
            }
            _ => {}
        }
    }

    fn about_to_wait(&mut self, _event_loop: &ActiveEventLoop) {
        if let Some(gpu) = &self.gpu {
            gpu.window.request_redraw();
        }
    }
}
