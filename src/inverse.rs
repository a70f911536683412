//! Inverse problems on a constrained world (seed 003 §IV-E and §VI).
//!
//! - **Inverse kinematics**: move the mechanism, respecting its joints, until
//!   a body point reaches a target. The target is one more constraint (a pin
//!   to the world at the target); Newton's method on all position rows takes
//!   the mass-weighted minimal-norm step, bounded in length far from the
//!   solution (a gradient-like walk) and full near it (quadratic convergence).
//! - **Inverse dynamics**: the joint torques that realise a prescribed motion.
//!   The motion is prescribed by motor constraints; the motors' multipliers
//!   are the torques. Replaying them as loads without the motors reproduces
//!   the motion.

use glam::DVec2;

use crate::body::BodyHandle;
use crate::constraint::{Constraint, ConstraintHandle, ConstraintKind};
use crate::world::World;

/// Settings of the inverse-kinematics iteration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IkSettings {
    /// Largest move of the target point asked for per iteration (m).
    pub max_step: f64,
    /// Stop when every constraint and the target are met to this (m).
    pub tolerance: f64,
    /// Iteration cap.
    pub max_iterations: usize,
}

impl Default for IkSettings {
    fn default() -> Self {
        Self { max_step: 0.1, tolerance: 1e-12, max_iterations: 200 }
    }
}

/// What the inverse-kinematics iteration did.
#[derive(Clone, Debug, PartialEq)]
pub struct IkReport {
    /// max |C| (joints and target) before each iteration, then at the end.
    pub residuals: Vec<f64>,
    /// Distance from the target point to the target before each step taken.
    pub distances: Vec<f64>,
    /// Whether the tolerance was met.
    pub converged: bool,
}

/// Moves the world's bodies so that body point `local` of `body` reaches the
/// world point `target`, keeping every constraint. Velocities are left as
/// they were; the world's time does not advance.
pub fn inverse_kinematics(
    world: &mut World,
    body: BodyHandle,
    local: DVec2,
    target: DVec2,
    settings: &IkSettings,
) -> Result<IkReport, String> {
    let goal = Constraint {
        name: "ik_target".into(),
        body_a: body,
        body_b: None,
        kind: ConstraintKind::Revolute { anchor_a: local, anchor_b: target },
    };
    world.check_constraints().map_err(|e| e.to_string())?;
    let handle = world.add_constraint(goal)?;
    let mut report = IkReport { residuals: Vec::new(), distances: Vec::new(), converged: false };
    world.sync_state();
    let result = (|| -> Result<(), String> {
        for _ in 0..settings.max_iterations {
            let (scene, system, state, t) = world.constraint_parts();
            let (err, distance) = system
                .newton_step(scene, t, &mut state.q, &state.v, handle.0, settings.max_step)
                .map_err(|e| e.to_string())?;
            report.residuals.push(err);
            if err <= settings.tolerance {
                report.converged = true;
                return Ok(());
            }
            report.distances.push(distance);
        }
        Ok(())
    })();
    world.commit_state();
    world.constraints.remove(handle);
    result.map(|_| report)
}

/// The torque each motor exerts on its first body at every step while the
/// world runs `steps` steps: `torques[k][m]` is motor `motors[m]`'s torque at
/// the start of step k (the motion the motors prescribe is realised by these
/// torques, applied as +τ on body a and −τ on body b).
pub fn joint_torques(world: &mut World, motors: &[ConstraintHandle], steps: usize) -> Result<Vec<Vec<f64>>, String> {
    let mut out = Vec::with_capacity(steps + 1);
    world.prepare().map_err(|e| e.to_string())?;
    for k in 0..=steps {
        let reactions = world.reactions().map_err(|e| e.to_string())?;
        out.push(motors.iter().map(|m| reactions[m.0].torque).collect());
        if k < steps {
            world.step().map_err(|e| e.to_string())?;
        }
    }
    Ok(out)
}
