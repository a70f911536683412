//! What a run's files will take on disk, estimated before anything is
//! written, and the limit `mx2d run --max-output` puts on it.
//!
//! A trace row per ball and recorded step is ~80 bytes: `vortex.ron`'s 10⁶
//! balls with `--trace` wrote about 6 GB in two seconds of wall time
//! before this check existed, and a run of a few thousand steps would fill
//! any disk. "Sizes are checked before allocation" applies to the disk as
//! much as to memory, so [`check`] refuses such a run (bad input, exit 2)
//! with the estimate, what it is made of, and the ways out: a coarser
//! `--every`, the binary `--snapshot` (28 bytes per ball), or a larger
//! `--max-output`.
//!
//! The estimate counts the files whose size the scene fixes — `--trace`
//! (bodies and balls), `--snapshot`, `--energy` — at the row sizes measured
//! on the shipped scenes (28 Nov 2026: linkage_loops' body rows 160 B,
//! balls_box's ball rows 80–81 B at 10⁴–10⁵ balls, energy rows 102 B),
//! rounded up. Every ball is counted as in the world for the whole run (an
//! emitter's balls too): an upper bound, as a limit wants. `--contacts` and
//! `--reactions` depend on the motion (contacts come and go) and the
//! pictures on their content; they are left out, and say so in the message.

use std::fmt;

use crate::world::World;

/// The default limit of the command line (`--max-output`): 4 GiB.
pub const DEFAULT_MAX_OUTPUT: u64 = 4 << 30;

/// Bytes of a `--trace` row of a mechanism body (f64 numbers): measured
/// 160 B on linkage_loops, taken as 170.
pub const BODY_ROW_BYTES: u64 = 170;
/// Bytes of a `--trace` row of a ball (f32 numbers, `ball<id>`): measured
/// 80–81 B on balls_box at 10⁴–10⁵ balls, taken as 84 (ids of 10⁶ and more
/// add a digit or two).
pub const BALL_ROW_BYTES: u64 = 84;
/// Bytes of an `--energy` row: measured 102 B, taken as 110.
pub const ENERGY_ROW_BYTES: u64 = 110;

/// The steps a run records: step 0, every `every`-th step, and the last
/// (which a stopped or uneven run records too).
pub fn recorded_steps(planned: u64, every: u64) -> u64 {
    let every = every.max(1);
    1 + planned / every + u64::from(!planned.is_multiple_of(every))
}

/// The size of each output file a run will write, in bytes.
#[derive(Clone, Debug, PartialEq)]
pub struct OutputEstimate {
    /// `(flag, bytes, what it is made of)` for each requested file counted.
    pub parts: Vec<(&'static str, u64, String)>,
    /// Recorded steps (step 0, every K-th, the last).
    pub recorded: u64,
    /// Bytes each recorded step adds, over all the files: every part is
    /// this much per recorded step, so the total is `per_step × recorded`.
    pub per_step: u64,
}

impl OutputEstimate {
    /// The total, saturating.
    pub fn total(&self) -> u64 {
        self.parts.iter().fold(0u64, |t, p| t.saturating_add(p.1))
    }
}

/// What the outputs asked for will take: `planned` steps recorded every
/// `every`-th; `[trace, snapshot, energy]`: whether each file is asked for.
pub fn estimate(world: &World, planned: u64, every: u64, [trace, snapshot, energy]: [bool; 3]) -> OutputEstimate {
    let recorded = recorded_steps(planned, every);
    let balls = world.population.as_ref().map_or(0, |p| p.len() as u64);
    let bodies = world.bodies.len() as u64;
    let mut parts = Vec::new();
    let mut per_step_total = 0u64;
    let mut part = |flag, per_step: u64, what| {
        per_step_total = per_step_total.saturating_add(per_step);
        parts.push((flag, per_step.saturating_mul(recorded), what));
    };
    if trace {
        let per_step = bodies.saturating_mul(BODY_ROW_BYTES).saturating_add(balls.saturating_mul(BALL_ROW_BYTES));
        let what = match (bodies, balls) {
            (_, 0) => format!("{bodies} bodies × {recorded} recorded steps × ~{BODY_ROW_BYTES} B a row"),
            (0, _) => format!("{balls} balls × {recorded} recorded steps × ~{BALL_ROW_BYTES} B a row"),
            _ => format!(
                "({bodies} bodies × ~{BODY_ROW_BYTES} B + {balls} balls × ~{BALL_ROW_BYTES} B) × {recorded} recorded steps"
            ),
        };
        part("--trace", per_step, what);
    }
    if snapshot && balls > 0 {
        let frame = crate::population::snapshot::frame_bytes(balls);
        part("--snapshot", frame, format!("{recorded} frames × {frame} B ({balls} balls)"));
    }
    if energy {
        part("--energy", ENERGY_ROW_BYTES, format!("{recorded} rows × ~{ENERGY_ROW_BYTES} B"));
    }
    OutputEstimate { parts, recorded, per_step: per_step_total }
}

/// A run whose files would exceed `--max-output` (bad input: exit 2).
#[derive(Clone, Debug, PartialEq)]
pub struct OutputTooLarge {
    /// The estimate.
    pub estimate: OutputEstimate,
    /// The limit, bytes.
    pub limit: u64,
    /// The smallest `--every` under which the estimate fits, if one does.
    pub every_that_fits: Option<u64>,
}

impl fmt::Display for OutputTooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> =
            self.estimate.parts.iter().map(|(flag, b, what)| format!("{flag} {}: {what}", bytes(*b))).collect();
        write!(
            f,
            "the run's files would take about {} ({}), over the {} of --max-output; ",
            bytes(self.estimate.total()),
            parts.join("; "),
            bytes(self.limit)
        )?;
        match self.every_that_fits {
            Some(k) => write!(f, "record fewer steps (--every {k} or more), ")?,
            None => write!(f, "even recording only the first and last steps does not fit; ")?,
        }
        write!(
            f,
            "write the population as --snapshot (28 B per ball and step) instead of --trace, or raise the limit \
             (--max-output 20G, or --max-output none); --contacts, --reactions and pictures are not counted"
        )
    }
}

impl std::error::Error for OutputTooLarge {}

/// Refuses outputs estimated above `limit` bytes, naming the estimate and
/// the smallest `--every` that fits.
pub fn check(world: &World, planned: u64, every: u64, asked: [bool; 3], limit: u64) -> Result<(), OutputTooLarge> {
    let estimate = estimate(world, planned, every, asked);
    if estimate.total() <= limit {
        return Ok(());
    }
    // The total, per_step × recorded, falls as K grows (fewer recorded
    // steps), so the smallest K that fits is found by bisection over
    // every..=planned.
    let fits = |k: u64| estimate.per_step.saturating_mul(recorded_steps(planned, k)) <= limit;
    let every_that_fits = if fits(planned.max(1)) {
        let (mut lo, mut hi) = (every.max(1), planned.max(1));
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if fits(mid) { hi = mid } else { lo = mid + 1 }
        }
        Some(lo)
    } else {
        None
    };
    Err(OutputTooLarge { estimate, limit, every_that_fits })
}

/// Parses `--max-output`: a byte count with an optional binary suffix
/// (`K`, `M`, `G`, `T`: powers of 1024; `B` allowed after it), a decimal
/// number allowed before the suffix (`1.5G`), or `none` (no limit).
pub fn parse_max_output(text: &str) -> Result<Option<u64>, String> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    let upper = t.to_ascii_uppercase();
    let digits = upper.strip_suffix("IB").or_else(|| upper.strip_suffix('B')).unwrap_or(&upper);
    let (number, scale) = match digits.chars().last() {
        Some('K') => (&digits[..digits.len() - 1], 1u64 << 10),
        Some('M') => (&digits[..digits.len() - 1], 1 << 20),
        Some('G') => (&digits[..digits.len() - 1], 1 << 30),
        Some('T') => (&digits[..digits.len() - 1], 1 << 40),
        _ => (digits, 1),
    };
    let bad = || format!("--max-output {text:?}: expected a size such as 500M, 4G, 1.5T or 1000000 (bytes), or none");
    let value: f64 = number.trim().parse().map_err(|_| bad())?;
    let value = value * scale as f64;
    if !(value.is_finite() && value >= 0.0 && value < u64::MAX as f64) {
        return Err(bad());
    }
    Ok(Some(value as u64))
}

/// `n` bytes in the largest unit that keeps a number ≥ 1 (KiB, MiB, GiB, TiB).
pub fn bytes(n: u64) -> String {
    const UNITS: [(&str, u64); 4] = [("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
    for (unit, size) in UNITS {
        if n >= size {
            return format!("{:.1} {unit}", n as f64 / size as f64);
        }
    }
    format!("{n} B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_steps_count_step_zero_every_kth_and_the_last() {
        assert_eq!(recorded_steps(0, 1), 1);
        assert_eq!(recorded_steps(10, 1), 11);
        assert_eq!(recorded_steps(10, 5), 3); // 0, 5, 10
        assert_eq!(recorded_steps(10, 3), 5); // 0, 3, 6, 9, 10
        assert_eq!(recorded_steps(10, 100), 2); // 0, 10
    }

    #[test]
    fn sizes_parse_with_binary_suffixes_and_none() {
        assert_eq!(parse_max_output("none"), Ok(None));
        assert_eq!(parse_max_output("1000"), Ok(Some(1000)));
        assert_eq!(parse_max_output("4G"), Ok(Some(4 << 30)));
        assert_eq!(parse_max_output("4GiB"), Ok(Some(4 << 30)));
        assert_eq!(parse_max_output("500mb"), Ok(Some(500 << 20)));
        assert_eq!(parse_max_output("1.5T"), Ok(Some(3 << 39)));
        for bad in ["", "G", "-1G", "lots", "1e400", "NaN"] {
            let e = parse_max_output(bad).expect_err(bad);
            assert!(e.contains("--max-output"), "{e}");
        }
    }

    #[test]
    fn byte_counts_read_in_binary_units() {
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(4 << 30), "4.0 GiB");
    }
}
