//! Binary snapshots of a population (`mx2d run --snapshot FILE.bin`): the
//! trace format for large N. A CSV row per ball costs ~80 bytes and a
//! float-to-text conversion per number; a snapshot frame costs 28 bytes per
//! ball, written as the f32 arrays the tier already holds.
//!
//! # Layout (all integers and floats little-endian)
//! Header:
//!
//! | offset | size | content |
//! |---|---|---|
//! | 0 | 8 | magic `MX2DSNAP` (ASCII) |
//! | 8 | 4 | version, u32 = 1 |
//! | 12 | 8 | N, the number of balls (every state), u64 |
//! | 20 | 4 | F, the number of fields, u32 = 7 |
//! | 24 | … | F field descriptors: name length (u8), name (ASCII), type (u8: `f` f32, `u` u32) |
//!
//! The fields of version 1, in order: `x` f32, `y` f32, `vx` f32, `vy` f32,
//! `angle` f32, `omega` f32, `state` u32 (0 in the world, 1 not yet
//! released, 2 escaped, 3 killed: [`super::state`]); the header is 59 bytes.
//!
//! Then one frame per recorded step: `step` (u64), `t` (f64, s), then each
//! field's array of N values (4 bytes each) in field order — ball i of a
//! field at `16 + 4·(field·N + i)` from the frame's start. A frame is
//! 16 + 28·N bytes; the number of frames is (file length − header) / frame.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use super::Population;

/// First 8 bytes of a snapshot file.
pub const MAGIC: &[u8; 8] = b"MX2DSNAP";
/// Format version written.
pub const VERSION: u32 = 1;
/// Fields of a version-1 frame: name and type (`b'f'` f32, `b'u'` u32).
pub const FIELDS: [(&str, u8); 7] =
    [("x", b'f'), ("y", b'f'), ("vx", b'f'), ("vy", b'f'), ("angle", b'f'), ("omega", b'f'), ("state", b'u')];

/// Bytes of a frame of `n` balls: step, t, then 7 arrays of 4-byte values.
pub fn frame_bytes(n: u64) -> u64 {
    16 + 4 * FIELDS.len() as u64 * n
}

fn header() -> Vec<u8> {
    let mut h = Vec::with_capacity(59);
    h.extend_from_slice(MAGIC);
    h.extend_from_slice(&VERSION.to_le_bytes());
    h.extend_from_slice(&0u64.to_le_bytes()); // N, filled in by the writer
    h.extend_from_slice(&(FIELDS.len() as u32).to_le_bytes());
    for (name, kind) in FIELDS {
        h.push(name.len() as u8);
        h.extend_from_slice(name.as_bytes());
        h.push(kind);
    }
    h
}

/// Writes snapshot frames to a file (buffered; flushed on drop, so a run
/// that stops early keeps the frames it wrote). Every I/O error names the
/// file.
pub struct SnapshotWriter {
    out: BufWriter<File>,
    path: PathBuf,
    balls: usize,
}

impl SnapshotWriter {
    /// Creates `path` and writes the header for `balls` balls.
    pub fn create(path: &Path, balls: usize) -> std::io::Result<Self> {
        let file = File::create(path).map_err(|e| crate::output::named(path, e))?;
        let mut w = Self { out: BufWriter::with_capacity(1 << 20, file), path: path.to_path_buf(), balls };
        let mut h = header();
        h[12..20].copy_from_slice(&(balls as u64).to_le_bytes());
        w.write(&h)?;
        Ok(w)
    }

    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.out.write_all(bytes).map_err(|e| crate::output::named(&self.path, e))
    }

    /// Appends a frame: the population at `step`, time `t`.
    pub fn frame(&mut self, step: u64, t: f64, pop: &Population) -> std::io::Result<()> {
        if pop.len() != self.balls {
            return Err(std::io::Error::other(format!(
                "{}: the population has {} balls, the snapshot's header says {}",
                self.path.display(),
                pop.len(),
                self.balls
            )));
        }
        self.write(&step.to_le_bytes())?;
        self.write(&t.to_le_bytes())?;
        // Balls in id order (Population::ball_id), whatever the re-sort by
        // cell did to the arrays.
        let slots = pop.slots_by_id();
        let x: Vec<f32> = slots.iter().map(|&i| pop.position[i].x).collect();
        let y: Vec<f32> = slots.iter().map(|&i| pop.position[i].y).collect();
        let vx: Vec<f32> = slots.iter().map(|&i| pop.velocity[i].x).collect();
        let vy: Vec<f32> = slots.iter().map(|&i| pop.velocity[i].y).collect();
        let angle: Vec<f32> = slots.iter().map(|&i| pop.angle[i]).collect();
        let omega: Vec<f32> = slots.iter().map(|&i| pop.omega[i]).collect();
        for a in [&x, &y, &vx, &vy, &angle, &omega] {
            self.write(&le_bytes(a.iter().map(|v| v.to_bits())))?;
        }
        self.write(&le_bytes(slots.iter().map(|&i| pop.state[i])))
    }

    /// Flushes buffered frames to disk.
    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush().map_err(|e| crate::output::named(&self.path, e))
    }
}

fn le_bytes(values: impl Iterator<Item = u32>) -> Vec<u8> {
    values.flat_map(u32::to_le_bytes).collect()
}

impl Drop for SnapshotWriter {
    fn drop(&mut self) {
        let _ = self.out.flush();
    }
}

/// One recorded step of a snapshot file.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    /// Step number.
    pub step: u64,
    /// Simulated time (s).
    pub t: f64,
    /// Centres, x (m).
    pub x: Vec<f32>,
    /// Centres, y (m).
    pub y: Vec<f32>,
    /// Velocities, x (m/s).
    pub vx: Vec<f32>,
    /// Velocities, y (m/s).
    pub vy: Vec<f32>,
    /// Angles (rad).
    pub angle: Vec<f32>,
    /// Spins (rad/s).
    pub omega: Vec<f32>,
    /// [`super::state`] codes.
    pub state: Vec<u32>,
}

/// A snapshot file read back.
#[derive(Clone, Debug, PartialEq)]
pub struct Snapshot {
    /// Balls per frame.
    pub balls: u64,
    /// The frames, in file order.
    pub frames: Vec<Frame>,
}

/// Why a snapshot file cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    /// The file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: std::io::Error,
    },
    /// The bytes are not a snapshot this reader knows.
    #[error("{path}: byte {offset}: {message}")]
    Format {
        /// The file.
        path: String,
        /// Where the problem is.
        offset: u64,
        /// What is wrong.
        message: String,
    },
}

/// Reads a snapshot file whole. The header is checked against this
/// version's, and the ball count and frame count against the file's length
/// before any array is allocated (a corrupt N cannot ask for more memory
/// than the file holds).
pub fn read(path: &Path) -> Result<Snapshot, SnapshotError> {
    let name = path.display().to_string();
    let io = |source| SnapshotError::Io { path: name.clone(), source };
    let format = |offset: u64, message: String| SnapshotError::Format { path: name.clone(), offset, message };
    let mut file = File::open(path).map_err(io)?;
    let length = file.metadata().map_err(io)?.len();
    let expected = header();
    let mut h = vec![0u8; expected.len()];
    let start = (length as usize).min(h.len());
    file.read_exact(&mut h[..start]).map_err(io)?;
    if length < 8 || &h[0..8] != MAGIC {
        return Err(format(0, "not a snapshot (magic MX2DSNAP missing)".into()));
    }
    if length < expected.len() as u64 {
        return Err(format(0, format!("{length} bytes: shorter than the {}-byte header", expected.len())));
    }
    let version = u32::from_le_bytes(h[8..12].try_into().expect("4 bytes"));
    if version != VERSION {
        return Err(format(8, format!("version {version}, this reader knows version {VERSION}")));
    }
    if h[20..] != expected[20..] {
        return Err(format(20, "the field list is not version 1's (x y vx vy angle omega state)".into()));
    }
    let balls = u64::from_le_bytes(h[12..20].try_into().expect("8 bytes"));
    let body = length - h.len() as u64;
    // Sizes before allocation: a frame must fit in the file.
    if balls > body / (4 * FIELDS.len() as u64) {
        return Err(format(12, format!("{balls} balls per frame do not fit in the file's {body} bytes of frames")));
    }
    let frame = frame_bytes(balls);
    if !body.is_multiple_of(frame) {
        return Err(format(
            h.len() as u64 + body / frame * frame,
            format!("{body} bytes of frames are not a whole number of {frame}-byte frames (a truncated file?)"),
        ));
    }
    let n = balls as usize;
    let mut frames = Vec::with_capacity((body / frame) as usize);
    let mut buf = vec![0u8; frame as usize];
    for _ in 0..body / frame {
        file.read_exact(&mut buf).map_err(io)?;
        let u64_at = |o: usize| u64::from_le_bytes(buf[o..o + 8].try_into().expect("8 bytes"));
        let words = |field: usize| -> Vec<u32> {
            buf[16 + 4 * field * n..16 + 4 * (field + 1) * n]
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
                .collect()
        };
        let floats = |field: usize| words(field).into_iter().map(f32::from_bits).collect::<Vec<f32>>();
        frames.push(Frame {
            step: u64_at(0),
            t: f64::from_bits(u64_at(8)),
            x: floats(0),
            y: floats(1),
            vx: floats(2),
            vy: floats(3),
            angle: floats(4),
            omega: floats(5),
            state: words(6),
        });
    }
    Ok(Snapshot { balls, frames })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_is_59_bytes_as_documented() {
        let h = header();
        assert_eq!(h.len(), 59);
        assert_eq!(&h[24..27], &[1, b'x', b'f']);
        assert_eq!(&h[52..59], &[5, b's', b't', b'a', b't', b'e', b'u']);
        assert_eq!(frame_bytes(10), 16 + 280);
    }
}
