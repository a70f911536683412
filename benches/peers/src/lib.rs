//! Shared pieces of the peer programs: the scene layouts (exactly as DESIGN.md "Peers" and
//! Box2D v3's `large_pyramid` define them) and the engine-independent quality measures, so
//! that Box2D v3, rapier2d and mx2d are judged by one yardstick.
//!
//! Quality is measured from body poses only (positions, angles, velocities), never from an
//! engine's own contact data: engines report penetration differently (Box2D's speculative
//! separations, rapier's predictive contacts), and a geometric measure is what mx2d reports too.

#![warn(missing_docs)]

pub mod balls_box;
pub mod engines;
pub mod pyramid;

use std::time::Instant;

/// Number of worker threads to use when none is asked for: the machine's available cores.
pub fn default_workers() -> usize {
    std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
}

/// CPU time consumed so far by all threads of this process (ms), where the platform tells it.
pub fn process_cpu_ms() -> Option<f64> {
    #[cfg(unix)]
    {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a valid, writable timespec; the call only writes into it.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
        (rc == 0).then_some(ts.tv_sec as f64 * 1e3 + ts.tv_nsec as f64 * 1e-6)
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Accumulates the wall time and the process CPU time of the engine's step calls only
/// (quality sampling is excluded). On a machine shared with other jobs the wall time depends
/// on the load; the CPU time (summed over the engine's worker threads, spin-waiting included)
/// depends on it much less, so both are reported.
#[derive(Default)]
pub struct StepTimer {
    total_ms: f64,
    cpu_ms: Option<f64>,
    steps: u64,
}

impl StepTimer {
    /// Runs `step` once and adds its wall time and CPU time.
    pub fn time<T>(&mut self, step: impl FnOnce() -> T) -> T {
        let cpu0 = process_cpu_ms();
        let start = Instant::now();
        let out = step();
        self.total_ms += start.elapsed().as_secs_f64() * 1e3;
        if let (Some(a), Some(b)) = (cpu0, process_cpu_ms()) {
            *self.cpu_ms.get_or_insert(0.0) += b - a;
        }
        self.steps += 1;
        out
    }

    /// Mean process CPU time per step (ms, all threads), where the platform tells it.
    pub fn cpu_ms_per_step(&self) -> Option<f64> {
        self.cpu_ms.filter(|_| self.steps > 0).map(|c| c / self.steps as f64)
    }

    /// Mean wall time per step (ms); 0 before any step.
    pub fn ms_per_step(&self) -> f64 {
        if self.steps == 0 { 0.0 } else { self.total_ms / self.steps as f64 }
    }

    /// Total wall time of the timed steps (ms).
    pub fn total_ms(&self) -> f64 {
        self.total_ms
    }
}

/// Writes `value` as pretty JSON to `path`, naming the file in the error.
pub fn write_json(path: &std::path::Path, value: &serde_json::Value) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(value)?;
    std::fs::write(path, text + "\n").map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))
}

/// Uniform grid over points, used to enumerate neighbour pairs in O(N) for the overlap
/// measures (cell size ≥ the interaction range, so only the 3×3 block of cells is searched).
pub struct PointGrid {
    cell: f64,
    min: [f64; 2],
    dims: [usize; 2],
    /// `starts[c]..starts[c + 1]` indexes `items` for cell `c` (counting sort).
    starts: Vec<usize>,
    items: Vec<usize>,
}

impl PointGrid {
    /// Bins `points` into square cells of side `cell` (> 0) covering the rectangle
    /// `min..max` (the container). Points outside it are clamped into the border cells: the
    /// clamp is monotone, so two points within one cell size of each other still land in the
    /// same or adjacent cells and no pair is missed; escapees only cost extra distance checks.
    pub fn new(points: &[[f64; 2]], cell: f64, min: [f64; 2], max: [f64; 2]) -> Self {
        let mut dims = [0usize; 2];
        for k in 0..2 {
            let span = (max[k] - min[k]).max(0.0) / cell;
            // Bounded by the container and a hard cap (the caller's sizes are small).
            dims[k] = (span.floor() as usize + 1).clamp(1, 1 << 14);
        }
        let mut grid = Self { cell, min, dims, starts: Vec::new(), items: Vec::new() };
        let ncells = dims[0] * dims[1];
        let mut counts = vec![0usize; ncells + 1];
        let keys: Vec<usize> = points.iter().map(|p| grid.key(grid.coords(p))).collect();
        for &k in &keys {
            counts[k + 1] += 1;
        }
        for c in 0..ncells {
            counts[c + 1] += counts[c];
        }
        let mut fill = counts.clone();
        let mut items = vec![0usize; points.len()];
        for (i, &k) in keys.iter().enumerate() {
            items[fill[k]] = i;
            fill[k] += 1;
        }
        grid.starts = counts;
        grid.items = items;
        grid
    }

    fn coords(&self, p: &[f64; 2]) -> [usize; 2] {
        let mut c = [0usize; 2];
        for k in 0..2 {
            let f = ((p[k] - self.min[k]) / self.cell).floor();
            // NaN and out-of-range points land in a border cell.
            c[k] = if f.is_nan() || f < 0.0 { 0 } else { (f as usize).min(self.dims[k] - 1) };
        }
        c
    }

    fn key(&self, c: [usize; 2]) -> usize {
        c[1] * self.dims[0] + c[0]
    }

    /// Calls `f(i, j)` once for every unordered pair i < j in the same or adjacent cells.
    pub fn for_each_pair(&self, points: &[[f64; 2]], mut f: impl FnMut(usize, usize)) {
        for (i, p) in points.iter().enumerate() {
            let c = self.coords(p);
            for cy in c[1].saturating_sub(1)..=(c[1] + 1).min(self.dims[1] - 1) {
                for cx in c[0].saturating_sub(1)..=(c[0] + 1).min(self.dims[0] - 1) {
                    let k = self.key([cx, cy]);
                    for &j in &self.items[self.starts[k]..self.starts[k + 1]] {
                        if j > i {
                            f(i, j);
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The grid must find exactly the pairs a brute-force O(N²) scan finds within the range.
    #[test]
    fn grid_pairs_match_brute_force() {
        let mut points = Vec::new();
        let mut s = 12345u64;
        for _ in 0..400 {
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let x = (s >> 11) as f64 / (1u64 << 53) as f64 * 20.0;
            s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let y = (s >> 11) as f64 / (1u64 << 53) as f64 * 20.0;
            points.push([x, y]);
        }
        points.push([1e6, -1e6]); // a far escapee must not blow the grid up
        let range = 1.0;
        let grid = PointGrid::new(&points, range, [0.0, 0.0], [20.0, 20.0]);
        let mut found = Vec::new();
        grid.for_each_pair(&points, |i, j| {
            let d = ((points[i][0] - points[j][0]).powi(2) + (points[i][1] - points[j][1]).powi(2)).sqrt();
            if d < range {
                found.push((i, j));
            }
        });
        let mut brute = Vec::new();
        for i in 0..points.len() {
            for j in i + 1..points.len() {
                let d = ((points[i][0] - points[j][0]).powi(2) + (points[i][1] - points[j][1]).powi(2)).sqrt();
                if d < range {
                    brute.push((i, j));
                }
            }
        }
        found.sort();
        assert_eq!(found, brute);
        assert!(!brute.is_empty());
    }
}
