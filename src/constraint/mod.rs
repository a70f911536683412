//! Constraints: joints, rolling, curve contact, motors and user constraints
//! (seeds 000, 001, 003). Each kind lives in its own file and produces its
//! rows; this module turns rows into the numbers the solver needs.
//!
//! A row is either a **position row** C(q, t) = 0 (holonomic, possibly
//! rheonomic), or a **velocity row** A(q, t)·v + b(q, t) = 0 (the no-slip
//! condition of rolling). For each row the constraint supplies, through
//! [`jet`] automatic differentiation:
//! - the Jacobian blocks J_a, J_b (∂C/∂q, or A),
//! - the velocity bias: Ċ = J v + bias (∂C/∂t, or b),
//! - γ with C̈ = J a + γ,
//! - for position rows, the value C (drift).

pub mod angle;
pub mod augmented;
pub mod curve;
pub mod distance;
pub mod jet;
pub mod motor;
pub mod prismatic;
pub mod raised;
pub mod revolute;
pub mod rolling;
pub mod system;
pub mod user;
pub mod weld;

use glam::DVec2;

pub use curve::Toucher;
pub use motor::Drive;
pub use user::UserConstraint;

use crate::body::{Body, BodyHandle};
use crate::surface::Surface;
use jet::{Jet, JetPose};

/// One row as the constraint kinds produce it (short-lived, on the stack: the
/// size difference of the variants costs nothing).
#[derive(Clone, Copy, Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Row {
    /// Holonomic C(q, t) = 0.
    Position(Jet),
    /// A(q, t)·v + b(q, t) = 0; `coeffs` = A's six entries (body a then b).
    Velocity {
        /// A's entries.
        coeffs: [Jet; 6],
        /// b.
        bias: Jet,
    },
}

/// Up to three rows, on the stack (a constraint evaluation allocates nothing).
#[derive(Clone, Copy, Debug, Default)]
pub struct RowList {
    rows: [Option<Row>; 3],
    len: usize,
}

impl RowList {
    /// Appends a row (a constraint has at most three).
    pub fn push(&mut self, row: Row) {
        debug_assert!(self.len < 3, "a constraint has at most three rows");
        if self.len < 3 {
            self.rows[self.len] = Some(row);
            self.len += 1;
        }
    }
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The rows in order.
    pub fn iter(&self) -> impl Iterator<Item = &Row> {
        self.rows[..self.len].iter().flatten()
    }
}

/// What a constraint does.
#[derive(Clone, Debug)]
pub enum ConstraintKind {
    /// Pin: `anchor_a` (body a's frame) on `anchor_b` (body b's frame, or a
    /// world point when there is no body b).
    Revolute {
        /// Anchor on body a, body frame (m).
        anchor_a: DVec2,
        /// Anchor on body b (body frame) or in the world (m).
        anchor_b: DVec2,
    },
    /// Rigid bar of length `length` between the anchors.
    Distance {
        /// Anchor on body a, body frame (m).
        anchor_a: DVec2,
        /// Anchor on body b, or world point (m).
        anchor_b: DVec2,
        /// Bar length (m).
        length: f64,
    },
    /// Slider: body a's anchor moves along the line through body b's anchor
    /// with direction `axis` (b's frame, or world), at relative angle `angle`.
    Prismatic {
        /// Anchor on body a (m).
        anchor_a: DVec2,
        /// Point of the axis line on body b, or in the world (m).
        anchor_b: DVec2,
        /// Axis direction.
        axis: DVec2,
        /// Fixed relative angle φ_a − φ_b (rad).
        angle: f64,
    },
    /// Rigid joint: pin plus fixed relative angle.
    Weld {
        /// Anchor on body a (m).
        anchor_a: DVec2,
        /// Anchor on body b, or world point (m).
        anchor_b: DVec2,
        /// Relative angle φ_a − φ_b (rad).
        angle: f64,
    },
    /// φ_a − φ_b = angle.
    Angle {
        /// Relative angle (rad).
        angle: f64,
    },
    /// φ_a + ratio·φ_b = offset.
    Gear {
        /// Gear ratio k.
        ratio: f64,
        /// Constant c (rad).
        offset: f64,
    },
    /// φ_a − φ_b = initial + θ(t).
    Motor {
        /// θ(t).
        drive: Drive,
        /// Relative angle at t = 0 (rad).
        initial: f64,
    },
    /// Body a's outline touches surface `surface`: rolling without slipping
    /// (two rows) or sliding (one row).
    Rolling {
        /// Index into the world's surfaces.
        surface: usize,
        /// Frictionless sliding instead of rolling.
        sliding: bool,
    },
    /// A body-frame point of body a stays on surface `surface`, sliding along
    /// it (one row) or not (two rows).
    PointOnCurve {
        /// Body-frame point (m).
        point: DVec2,
        /// Index into the world's surfaces.
        surface: usize,
        /// The point may slide along the curve.
        sliding: bool,
    },
    /// C(q, t) = 0 from closures.
    User(UserConstraint),
}

/// A constraint on body a and, optionally, body b (else the world).
#[derive(Clone, Debug)]
pub struct Constraint {
    /// Name (used in warnings and in the reactions file).
    pub name: String,
    /// First body.
    pub body_a: BodyHandle,
    /// Second body, or `None` for the world.
    pub body_b: Option<BodyHandle>,
    /// What it does.
    pub kind: ConstraintKind,
}

/// Index of a constraint in its [`ConstraintSet`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConstraintHandle(pub usize);

/// A constraint's rows at one state, ready for the solver.
#[derive(Clone, Copy, Debug, Default)]
pub struct RowBlock {
    /// Number of rows (1–3).
    pub rows: usize,
    /// J blocks: `jac[slot][row]` with respect to (vx, vy, ω) of body a (slot 0)
    /// or b (slot 1).
    pub jac: [[[f64; 3]; 3]; 2],
    /// C for position rows (0 for velocity rows).
    pub value: [f64; 3],
    /// Whether each row is a position row.
    pub holonomic: [bool; 3],
    /// Ċ = J v + velocity_bias.
    pub velocity_bias: [f64; 3],
    /// C̈ = J a + gamma.
    pub gamma: [f64; 3],
}

impl Constraint {
    /// The bodies it touches.
    pub fn bodies(&self) -> (BodyHandle, Option<BodyHandle>) {
        (self.body_a, self.body_b)
    }

    /// Its rows at state (q, v) and time t. `qa`, `va` are body a's (x, y, φ)
    /// and (vx, vy, ω); `qb`, `vb` body b's (zeros for the world).
    pub fn evaluate(
        &self,
        t: f64,
        (qa, va): ([f64; 3], [f64; 3]),
        b: Option<([f64; 3], [f64; 3])>,
        bodies: &[Body],
        surfaces: &[Surface],
    ) -> RowBlock {
        if let ConstraintKind::User(u) = &self.kind {
            let (qb, vb) = b.unwrap_or(([0.0; 3], [0.0; 3]));
            let q = [qa[0], qa[1], qa[2], qb[0], qb[1], qb[2]];
            let v = [va[0], va[1], va[2], vb[0], vb[1], vb[2]];
            let (c, g, gamma) = u.evaluate(&q, &v, t);
            let mut block = RowBlock { rows: 1, ..Default::default() };
            block.jac[0][0] = [g[0], g[1], g[2]];
            block.jac[1][0] = [g[3], g[4], g[5]];
            block.value[0] = c;
            block.holonomic[0] = true;
            block.velocity_bias[0] = g[6];
            block.gamma[0] = gamma;
            return block;
        }
        if let ConstraintKind::Revolute { anchor_a, anchor_b } = &self.kind {
            return revolute::block(*anchor_a, *anchor_b, (qa, va), b);
        }
        self.evaluate_with_jets(t, (qa, va), b, bodies, surfaces)
    }

    /// [`Constraint::evaluate`] through automatic differentiation for every
    /// kind (the hand-written revolute rows are checked against it).
    pub fn evaluate_with_jets(
        &self,
        t: f64,
        (qa, va): ([f64; 3], [f64; 3]),
        b: Option<([f64; 3], [f64; 3])>,
        bodies: &[Body],
        surfaces: &[Surface],
    ) -> RowBlock {
        let pose_a = JetPose::new(0, Some((qa, va)));
        let pose_b = JetPose::new(1, b);
        let time = Jet::variable(t, 6, 1.0);
        let mut rows = RowList::default();
        match &self.kind {
            ConstraintKind::Revolute { anchor_a, anchor_b } => {
                revolute::rows(*anchor_a, *anchor_b, &pose_a, &pose_b, &mut rows)
            }
            ConstraintKind::Distance { anchor_a, anchor_b, length } => {
                distance::rows(*anchor_a, *anchor_b, *length, &pose_a, &pose_b, &mut rows)
            }
            ConstraintKind::Prismatic { anchor_a, anchor_b, axis, angle } => {
                prismatic::rows(*anchor_a, *anchor_b, *axis, *angle, &pose_a, &pose_b, &mut rows)
            }
            ConstraintKind::Weld { anchor_a, anchor_b, angle } => {
                weld::rows(*anchor_a, *anchor_b, *angle, &pose_a, &pose_b, &mut rows)
            }
            ConstraintKind::Angle { angle } => angle::fixed_rows(*angle, &pose_a, &pose_b, &mut rows),
            ConstraintKind::Gear { ratio, offset } => angle::gear_rows(*ratio, *offset, &pose_a, &pose_b, &mut rows),
            ConstraintKind::Motor { drive, initial } => motor::rows(drive, *initial, &pose_a, &pose_b, time, &mut rows),
            ConstraintKind::Rolling { surface, sliding } => rolling::rows(
                &bodies[self.body_a.0].shape,
                &surfaces[*surface].geometry,
                Toucher::Outline,
                *sliding,
                &pose_a,
                &mut rows,
            ),
            ConstraintKind::PointOnCurve { point, surface, sliding } => rolling::rows(
                &bodies[self.body_a.0].shape,
                &surfaces[*surface].geometry,
                Toucher::Point(*point),
                *sliding,
                &pose_a,
                &mut rows,
            ),
            ConstraintKind::User(_) => {}
        }
        let vb = b.map_or([0.0; 3], |x| x.1);
        let v = [va[0], va[1], va[2], vb[0], vb[1], vb[2]];
        let mut block = RowBlock { rows: rows.len(), ..Default::default() };
        for (r, row) in rows.iter().enumerate() {
            match row {
                Row::Position(c) => {
                    block.jac[0][r] = [c.grad[0], c.grad[1], c.grad[2]];
                    block.jac[1][r] = [c.grad[3], c.grad[4], c.grad[5]];
                    block.value[r] = c.val;
                    block.holonomic[r] = true;
                    block.velocity_bias[r] = c.grad[6];
                    block.gamma[r] = c.dd;
                }
                Row::Velocity { coeffs, bias } => {
                    block.jac[0][r] = [coeffs[0].val, coeffs[1].val, coeffs[2].val];
                    block.jac[1][r] = [coeffs[3].val, coeffs[4].val, coeffs[5].val];
                    block.velocity_bias[r] = bias.val;
                    block.gamma[r] = coeffs.iter().zip(&v).map(|(c, vi)| c.d * vi).sum::<f64>() + bias.d;
                }
            }
        }
        block
    }

    /// A description of what makes the constraint invalid in this world.
    pub fn validate(&self, bodies: &[Body], surfaces: &[Surface]) -> Result<(), String> {
        if self.body_a.0 >= bodies.len() || self.body_b.is_some_and(|b| b.0 >= bodies.len()) {
            return Err("constraint names a body that does not exist".into());
        }
        if self.body_b == Some(self.body_a) {
            return Err(format!("constraint '{}' joins body '{}' to itself", self.name, bodies[self.body_a.0].name));
        }
        let check_surface = |s: usize| {
            surfaces.get(s).ok_or_else(|| format!("surface index {s} out of range ({} surfaces)", surfaces.len()))
        };
        match &self.kind {
            ConstraintKind::Rolling { surface, .. } => {
                let s = check_surface(*surface)?;
                curve::check_supported(&bodies[self.body_a.0].shape, &s.geometry, Toucher::Outline)?;
                if self.body_b.is_some() {
                    return Err("rolling is on a static surface: give no second body".into());
                }
            }
            ConstraintKind::PointOnCurve { point, surface, .. } => {
                let s = check_surface(*surface)?;
                curve::check_supported(&bodies[self.body_a.0].shape, &s.geometry, Toucher::Point(*point))?;
                if self.body_b.is_some() {
                    return Err("point-on-curve is on a static surface: give no second body".into());
                }
            }
            ConstraintKind::Distance { length, .. } if !(length.is_finite() && *length > 0.0) => {
                return Err(format!("length must be positive, got {length}"));
            }
            ConstraintKind::Prismatic { axis, .. } if axis.length_squared() == 0.0 || !axis.is_finite() => {
                return Err("axis must be a non-zero vector".into());
            }
            ConstraintKind::Gear { ratio, .. } if !ratio.is_finite() => {
                return Err("ratio must be finite".into());
            }
            _ => {}
        }
        self.check_point_bodies(bodies, surfaces)
    }

    /// A [`Shape::Point`](crate::shape::Shape::Point) body has no rotation: a
    /// constraint may not act on its angle (an offset anchor, an angle or weld
    /// row). Checked on the rows at the bodies' current states.
    fn check_point_bodies(&self, bodies: &[Body], surfaces: &[Surface]) -> Result<(), String> {
        let state = |h: BodyHandle| {
            let b = &bodies[h.0];
            ([b.position.x, b.position.y, b.angle], [b.velocity.x, b.velocity.y, b.angular_velocity])
        };
        let slots = [Some(self.body_a), self.body_b];
        if !slots.iter().flatten().any(|h| bodies[h.0].is_point() && !bodies[h.0].fixed) {
            return Ok(());
        }
        let block = self.evaluate(0.0, state(self.body_a), self.body_b.map(state), bodies, surfaces);
        for (slot, h) in slots.iter().enumerate() {
            let Some(h) = h else { continue };
            let body = &bodies[h.0];
            if !body.is_point() || body.fixed {
                continue;
            }
            for row in &block.jac[slot][..block.rows] {
                if row[2].abs() > 1e-12 * (1.0 + row[0].abs() + row[1].abs()) {
                    return Err(format!(
                        "body '{}' is a Point (its rotation is not a degree of freedom): constraint '{}' must attach at its centre (anchor (0, 0)) and cannot hold its angle; a pendulum bob hangs on a Distance rod",
                        body.name, self.name
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Source of [`ConstraintSet::generation`]s (0 is the empty set's).
static NEXT_GENERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// The constraints of a world.
#[derive(Clone, Debug, Default)]
pub struct ConstraintSet {
    items: Vec<Constraint>,
    /// Fresh (unique in the process) at every insertion or removal; 0 for a
    /// set never changed (empty).
    generation: u64,
}

impl ConstraintSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }
    /// Adds a constraint as it is. [`World::add_constraint`](crate::world::World::add_constraint)
    /// checks it against the world's bodies and surfaces first; one inserted
    /// here directly is checked when the world next steps or is queried
    /// (a bad one stops that step with the constraint's name).
    pub fn insert(&mut self, c: Constraint) -> ConstraintHandle {
        self.items.push(c);
        self.bump();
        ConstraintHandle(self.items.len() - 1)
    }
    /// Removes the most recently added constraint if it is `h` (temporary
    /// constraints of the inverse problems and impulses); returns it.
    pub fn remove(&mut self, h: ConstraintHandle) -> Option<Constraint> {
        if h.0 + 1 == self.items.len() {
            self.bump();
            self.items.pop()
        } else {
            None
        }
    }
    /// A number that changes whenever the set does (an insertion or a
    /// removal), unique in the process: two sets with the same generation hold
    /// the same constraints (one is a clone of the other). The constraint system
    /// keeps J's structure while the generation stays the same (issue 10: the
    /// fixed-slot fill of J, no comparison of the joint list per step).
    pub fn generation(&self) -> u64 {
        self.generation
    }
    fn bump(&mut self) {
        self.generation = NEXT_GENERATION.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    /// Number of constraints.
    pub fn len(&self) -> usize {
        self.items.len()
    }
    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    /// All constraints as a slice, in handle order.
    pub fn as_slice(&self) -> &[Constraint] {
        &self.items
    }
    /// All constraints in handle order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = &Constraint> {
        self.items.iter()
    }
    /// The constraint behind a handle.
    pub fn get(&self, h: ConstraintHandle) -> Option<&Constraint> {
        self.items.get(h.0)
    }
    /// The handle of the constraint with this name.
    pub fn find(&self, name: &str) -> Option<ConstraintHandle> {
        self.items.iter().position(|c| c.name == name).map(ConstraintHandle)
    }
}
