//! `mx2d run --frames DIR --every K` and `--energy-plot`: drawing never
//! changes the simulation (the trace and energy files are identical byte for
//! byte with and without pictures), one frame per recorded step, and the
//! energy plot holds its three energy curves and the error curve.

mod common;

use std::path::Path;
use std::process::Command;

use mx2d::render::png::Image;

fn run(scene: &str, dir: &Path, tag: &str, extra: &[&str]) -> (Vec<u8>, Vec<u8>) {
    let trace = dir.join(format!("{tag}_trace.csv"));
    let energy = dir.join(format!("{tag}_energy.csv"));
    let scene = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes").join(scene);
    let out = Command::new(env!("CARGO_BIN_EXE_mx2d"))
        .args(["run", scene.to_str().unwrap(), "--headless", "--steps", "300", "--every", "25"])
        .args(["--trace", trace.to_str().unwrap(), "--energy", energy.to_str().unwrap()])
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (std::fs::read(trace).unwrap(), std::fs::read(energy).unwrap())
}

#[test]
fn frames_do_not_change_the_trace() {
    let Some(_) = common::gpu(Default::default()) else { return };
    let dir = tempfile::tempdir().unwrap();
    for scene in ["double_pendulum.ron", "fields.ron", "ellipses_on_ellipse.ron", "balls_box.ron"] {
        let frames = dir.path().join(format!("{scene}_frames"));
        let plot = dir.path().join(format!("{scene}_energy.png"));
        let plain = run(scene, dir.path(), "plain", &[]);
        let drawn = run(
            scene,
            dir.path(),
            "drawn",
            &["--frames", frames.to_str().unwrap(), "--size", "97x61", "--energy-plot", plot.to_str().unwrap()],
        );
        assert!(plain.0 == drawn.0, "{scene}: the trace differs with --frames");
        assert!(plain.1 == drawn.1, "{scene}: the energy file differs with --frames");
        // Steps 0, 25, …, 300: 13 recorded steps, one frame each.
        let mut names: Vec<String> =
            std::fs::read_dir(&frames).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into()).collect();
        names.sort();
        let expected: Vec<String> = (0..13).map(|i| format!("frame_{i:06}.png")).collect();
        assert_eq!(names, expected, "{scene}");
        for name in &names {
            let image = Image::read_png(&frames.join(name)).unwrap();
            assert_eq!((image.width, image.height), (97, 61), "{scene}/{name}");
        }
        // Successive frames of a moving scene differ.
        let first = Image::read_png(&frames.join(&names[0])).unwrap();
        let last = Image::read_png(&frames.join(&names[12])).unwrap();
        assert_ne!(first.rgba, last.rgba, "{scene}: the frames do not move");
    }
}

/// The energy plot is drawn with the series' colours: kinetic (66,133,244),
/// potential (234,67,53), total (black) and constraint error (52,168,83),
/// each over at least 100 pixels (a curve 2 px wide across the plot).
#[test]
fn energy_plot_draws_every_series() {
    let dir = tempfile::tempdir().unwrap();
    let plot = dir.path().join("energy.png");
    let scene = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/double_pendulum.ron");
    let out = Command::new(env!("CARGO_BIN_EXE_mx2d"))
        .args(["run", scene.to_str().unwrap(), "--headless", "--duration", "1", "--every", "10"])
        .args(["--energy-plot", plot.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let image = Image::read_png(&plot).unwrap();
    assert_eq!((image.width, image.height), (960, 720));
    for (name, colour) in [
        ("kinetic", [66, 133, 244]),
        ("potential", [234, 67, 53]),
        ("total", [0, 0, 0]),
        ("constraint error", [52, 168, 83]),
    ] {
        let n = image.rgba.chunks(4).filter(|p| p[..3] == colour).count();
        assert!(n >= 100, "{name}: {n} pixels of its colour");
    }
}
