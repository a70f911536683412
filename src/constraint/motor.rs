//! Motor: a rheonomic constraint C(q, t) = φ_a − φ_b − θ(t) that prescribes the
//! relative angle, at constant speed or oscillating. Its force does work: the
//! world counts it as non-conservative work.

use serde::{Deserialize, Serialize};

use super::jet::{Jet, JetPose};
use super::{Row, RowList};

/// The prescribed relative angle θ(t).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub enum Drive {
    /// θ(t) = θ₀ + speed·t (rad/s).
    Speed {
        /// Angular speed (rad/s).
        speed: f64,
    },
    /// θ(t) = θ₀ + amplitude·sin(2π·frequency·t + phase).
    Oscillate {
        /// Amplitude (rad).
        amplitude: f64,
        /// Frequency (Hz).
        frequency: f64,
        /// Phase (rad).
        #[serde(default)]
        phase: f64,
    },
}

impl Drive {
    /// θ(t) − θ₀ as a jet of time.
    pub fn angle(&self, t: Jet) -> Jet {
        match *self {
            Drive::Speed { speed } => t * speed,
            Drive::Oscillate { amplitude, frequency, phase } => {
                (t * (std::f64::consts::TAU * frequency) + phase).sin() * amplitude
            }
        }
    }
}

/// The motor's single position row.
pub fn rows(drive: &Drive, initial: f64, a: &JetPose, b: &JetPose, t: Jet, out: &mut RowList) {
    out.push(Row::Position(a.angle - b.angle - initial - drive.angle(t)));
}
