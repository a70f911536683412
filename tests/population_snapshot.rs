//! `mx2d run --snapshot FILE.bin`: the binary frames read back
//! (`snapshot::read`) equal the `--trace` CSV's values ball for ball —
//! bit for bit, as the CSV writes f32 in shortest round-trip form — and a
//! damaged file is refused with the byte it fails at, before allocating.

use mx2d::population::snapshot::{self, FIELDS, frame_bytes};
use mx2d::population::state;

#[test]
fn snapshot_reads_back_equal_to_the_csv_trace() {
    let dir = tempfile::tempdir().unwrap();
    let (trace, snap) = (dir.path().join("t.csv"), dir.path().join("s.bin"));
    let scene = format!("{}/scenes/hourglass.ron", env!("CARGO_MANIFEST_DIR"));
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_mx2d"))
        .args(["run", &scene, "--headless", "--steps", "12", "--every", "5", "--set", "population.count=300"])
        .arg("--trace")
        .arg(&trace)
        .arg("--snapshot")
        .arg(&snap)
        .status()
        .unwrap();
    assert!(status.success());
    let s = snapshot::read(&snap).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.balls, 300);
    // Step 0, steps 5 and 10, and the last, 12.
    assert_eq!(s.frames.iter().map(|f| f.step).collect::<Vec<_>>(), [0, 5, 10, 12]);
    let length = std::fs::metadata(&snap).unwrap().len();
    assert_eq!(length, 59 + 4 * frame_bytes(300));
    let mut reader = csv::Reader::from_path(&trace).unwrap();
    let mut rows = 0;
    for row in reader.records() {
        let row = row.unwrap();
        let Some(ball) = row[2].strip_prefix("ball") else { continue };
        let i: usize = ball.parse().unwrap();
        let step: u64 = row[0].parse().unwrap();
        let frame = s.frames.iter().find(|f| f.step == step).expect("a frame per recorded step");
        assert_eq!(frame.t.to_string(), row[1]);
        let csv: Vec<f32> = (3..9).map(|k| row[k].parse().unwrap()).collect();
        let bin = [frame.x[i], frame.y[i], frame.angle[i], frame.vx[i], frame.vy[i], frame.omega[i]];
        assert_eq!(csv, bin, "step {step} ball {i}");
        assert_eq!(frame.state[i], state::ALIVE);
        rows += 1;
    }
    // The CSV lists the balls in the world; the snapshot all of them.
    let alive: usize = s.frames.iter().map(|f| f.state.iter().filter(|&&x| x == state::ALIVE).count()).sum();
    assert_eq!(rows, alive);
    assert!(rows >= 4 * 290, "{rows}");
}

#[test]
fn damaged_snapshots_are_refused_at_their_byte() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("g.bin");
    let scene = format!("{}/scenes/hourglass.ron", env!("CARGO_MANIFEST_DIR"));
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_mx2d"))
        .args(["run", &scene, "--headless", "--steps", "2", "--set", "population.count=10"])
        .arg("--snapshot")
        .arg(&good)
        .status()
        .unwrap();
    assert!(status.success());
    let bytes = std::fs::read(&good).unwrap();
    // Steps 0, 1 and 2.
    assert_eq!(bytes.len() as u64, 59 + 3 * (16 + 4 * FIELDS.len() as u64 * 10));
    let write = |name: &str, b: &[u8]| {
        let p = dir.path().join(name);
        std::fs::write(&p, b).unwrap();
        snapshot::read(&p).unwrap_err().to_string()
    };
    // Truncated by a byte: not a whole number of frames.
    let e = write("cut.bin", &bytes[..bytes.len() - 1]);
    assert!(e.contains("truncated"), "{e}");
    // A ball count of 2⁶⁰: refused before allocating (the file is 947 bytes).
    let mut huge = bytes.clone();
    huge[12..20].copy_from_slice(&(1u64 << 60).to_le_bytes());
    let e = write("huge.bin", &huge);
    assert!(e.contains("byte 12") && e.contains("do not fit"), "{e}");
    // Not a snapshot; a future version.
    let e = write("csv.bin", b"step,t,body,x,y,angle,vx,vy,omega\n0,0,ball0,1,2,3,4,5,6\n");
    assert!(e.contains("magic"), "{e}");
    let mut v2 = bytes.clone();
    v2[8] = 2;
    let e = write("v2.bin", &v2);
    assert!(e.contains("byte 8") && e.contains("version 2"), "{e}");
}
