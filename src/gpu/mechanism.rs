//! The GPU serving the mechanism tier (DESIGN.md, "Two tiers, one world"): the
//! force fields on rigid bodies evaluated by `shaders/fields.wgsl` instead of
//! `field.rs`. The kernel works in f32: forces agree with the f64 CPU path to
//! ~1e-7 relative, which is what `--backend gpu` trades for offloading the
//! per-body field loop.

use glam::{DVec2, Vec2};

use super::{GpuBody, GpuContext, GpuError, GpuFieldEvaluator};
use crate::body::Body;
use crate::field::Field;

/// A GPU context, the field pipeline and its staging vectors, kept for the
/// whole run (nothing allocated per evaluation once sizes are reached).
pub struct GpuFieldBackend {
    ctx: GpuContext,
    evaluator: GpuFieldEvaluator,
    bodies: Vec<GpuBody>,
    forces: Vec<Vec2>,
}

impl std::fmt::Debug for GpuFieldBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GpuFieldBackend({})", self.ctx.adapter_name())
    }
}

impl GpuFieldBackend {
    /// Opens the adapter chosen from the environment and builds the pipeline.
    pub fn new() -> Result<Self, GpuError> {
        let ctx = GpuContext::new()?;
        let evaluator = GpuFieldEvaluator::new(&ctx)?;
        Ok(Self { ctx, evaluator, bodies: Vec::new(), forces: Vec::new() })
    }

    /// The adapter, as reported in summaries.
    pub fn adapter(&self) -> String {
        self.ctx.summary()
    }
}

/// Field forces on every body at positions/velocities `q`, `v` (3 per body),
/// written into `out` (one per body), by `shaders/fields.wgsl`.
impl crate::field::FieldEvaluator for GpuFieldBackend {
    fn field_forces(
        &mut self,
        fields: &[Field],
        bodies: &[Body],
        q: &[f64],
        v: &[f64],
        out: &mut Vec<DVec2>,
    ) -> Result<(), String> {
        self.bodies.clear();
        self.bodies.extend(bodies.iter().enumerate().map(|(i, b)| GpuBody {
            position: Vec2::new(q[3 * i] as f32, q[3 * i + 1] as f32),
            velocity: Vec2::new(v[3 * i] as f32, v[3 * i + 1] as f32),
            mass: b.mass as f32,
            radius: b.radius() as f32,
        }));
        self.evaluator.compute(&self.ctx, fields, &self.bodies, &mut self.forces).map_err(|e| e.to_string())?;
        out.clear();
        out.extend(self.forces.iter().map(|f| f.as_dvec2()));
        Ok(())
    }

    fn backend(&self) -> &'static str {
        "gpu"
    }
}
