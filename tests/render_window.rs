//! The window. With `MX2D_WINDOW_TEST=1` (CI runs this file under Xvfb with
//! lavapipe): `mx2d` (the default demo) and `mx2d run SCENE` open a window,
//! draw 60 frames, take a screenshot through the S-key action, and exit with
//! status 0; the screenshot is a non-blank PNG of the window's size. Without
//! the variable those tests print why they skip. The window reports on
//! stderr (the project's convention for diagnostics). A windowed run with
//! `--trace`/`--energy` writes the same bytes as `--headless` (fixed step,
//! whatever the frame rate). Without a display, `mx2d` says so in one line
//! naming the headless commands (always tested).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use mx2d::render::png::Image;

fn window_test_enabled(name: &str) -> bool {
    let on = std::env::var("MX2D_WINDOW_TEST").as_deref() == Ok("1");
    if !on {
        eprintln!("{name}: skipped: set MX2D_WINDOW_TEST=1 with a display (CI: xvfb-run) to run the window");
    }
    on
}

/// Runs the binary with `args`, killing it after two minutes.
fn run_window(args: &[&str], screenshots: &Path) -> (bool, String, String) {
    let (code, stdout, stderr) = run_window_status(args, screenshots);
    (code == Some(0), stdout, stderr)
}

/// [`run_window`] with the exit status.
fn run_window_status(args: &[&str], screenshots: &Path) -> (Option<i32>, String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mx2d"))
        .args(args)
        .env("MX2D_WINDOW_TEST", "1")
        .env("MX2D_SCREENSHOT_DIR", screenshots)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{args:?}: the window did not exit within 120 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stdout).into(), String::from_utf8_lossy(&out.stderr).into())
}

fn check_screenshot(dir: &Path) {
    let path = dir.join("mx2d-screenshot-0.png");
    assert!(std::fs::metadata(&path).unwrap().len() > 0, "empty screenshot");
    let image = Image::read_png(&path).unwrap();
    assert!(image.width > 0 && image.height > 0);
    let first = &image.rgba[..4];
    let differing = image.rgba.chunks(4).filter(|p| *p != first).count();
    assert!(differing * 100 > (image.width * image.height) as usize, "blank screenshot");
}

#[test]
fn default_demo_runs_60_frames_and_takes_a_screenshot() {
    if !window_test_enabled("default_demo_runs_60_frames_and_takes_a_screenshot") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (ok, stdout, stderr) = run_window(&[], dir.path());
    assert!(ok, "mx2d exited with an error:\n{stdout}\n{stderr}");
    assert!(stderr.contains("window test: 60 frames drawn"), "{stdout}\n{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    // Sized to the adapter: CI's lavapipe is a CPU adapter, 10⁴ balls on the
    // CPU twin; a real GPU gets 10⁶ on the GPU backend. The exit report says which.
    let expected = if stderr.contains(", Cpu, ") || stderr.contains("llvmpipe") {
        "10000 balls on cpu"
    } else {
        "1000000 balls on gpu"
    };
    assert!(stderr.contains(expected), "expected `{expected}` in the exit report:\n{stderr}");
    assert!(stderr.contains("ms/frame") && stderr.contains("simulate") && stderr.contains("draw"), "{stderr}");
    check_screenshot(dir.path());
}

#[test]
fn run_without_headless_opens_the_scene() {
    if !window_test_enabled("run_without_headless_opens_the_scene") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let scene = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/ragdoll.ron");
    let (ok, stdout, stderr) = run_window(&["run", scene.to_str().unwrap(), "--size", "641x479"], dir.path());
    assert!(ok, "mx2d run exited with an error:\n{stdout}\n{stderr}");
    assert!(stderr.contains("window test: 60 frames drawn"), "{stdout}\n{stderr}");
    check_screenshot(dir.path());
}

/// balls_box on the GPU backend in the window: the balls are drawn from the
/// population's storage buffers on the window's device.
#[test]
fn run_with_the_gpu_backend_draws_from_the_gpu_buffers() {
    if !window_test_enabled("run_with_the_gpu_backend_draws_from_the_gpu_buffers") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let scene = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/balls_box.ron");
    let (ok, stdout, stderr) = run_window(&["run", scene.to_str().unwrap(), "--backend", "gpu"], dir.path());
    assert!(ok, "mx2d run exited with an error:\n{stdout}\n{stderr}");
    assert!(stderr.contains("window test: 60 frames drawn"), "{stderr}");
    assert!(stderr.contains("1000 balls on gpu"), "{stderr}");
    check_screenshot(dir.path());
}

/// Rendering does not change the simulation: `mx2d run SCENE --trace F
/// --energy G` in a window writes the same bytes as with `--headless`, for
/// a mechanism (ragdoll: contacts, joints) and a population (balls_box).
#[test]
fn the_window_writes_the_headless_trace_byte_for_byte() {
    if !window_test_enabled("the_window_writes_the_headless_trace_byte_for_byte") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (scene, steps) in [("ragdoll.ron", "150"), ("balls_box.ron", "150")] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes").join(scene);
        let files = |tag: &str| {
            (dir.path().join(format!("{scene}_{tag}.csv")), dir.path().join(format!("{scene}_{tag}_e.csv")))
        };
        let (wt, we) = files("window");
        let (ht, he) = files("headless");
        let common = ["run", path.to_str().unwrap(), "--steps", steps, "--every", "7"];
        let with = |t: &Path, e: &Path| {
            let mut a: Vec<String> = common.iter().map(|s| s.to_string()).collect();
            a.extend(["--trace".into(), t.display().to_string(), "--energy".into(), e.display().to_string()]);
            a
        };
        let args = with(&wt, &we);
        let (ok, stdout, stderr) = run_window(&args.iter().map(String::as_str).collect::<Vec<_>>(), dir.path());
        assert!(ok, "{scene}: windowed run failed:\n{stdout}\n{stderr}");
        assert!(stderr.contains("window test: "), "{scene}: did it open a window?\n{stderr}");
        let mut args = with(&ht, &he);
        args.push("--headless".into());
        let out = Command::new(env!("CARGO_BIN_EXE_mx2d")).args(&args).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let (a, b) = (std::fs::read(&wt).unwrap(), std::fs::read(&ht).unwrap());
        assert!(a.len() > 1000, "{scene}: trace of {} bytes", a.len());
        assert!(a == b, "{scene}: the windowed trace differs from the headless one");
        assert!(std::fs::read(&we).unwrap() == std::fs::read(&he).unwrap(), "{scene}: energy files differ");
    }
}

/// The window steps the same `Session` as `--headless`: the reactions and
/// contacts files are the same bytes, the summary reports the same steps and
/// energies (its timings differ), and a run that diverges (RK4 on the
/// heavy-load chain, whose stiff modes need dt ≈ 2e-5) stops at the same step
/// with the same trace and the headless exit status 3.
#[test]
fn the_window_runs_the_headless_session() {
    if !window_test_enabled("the_window_runs_the_headless_session") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let scenes = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes");
    let run_both = |scene: &str, extra: &[&str], tag: &str| {
        let mut outputs = Vec::new();
        for windowed in [true, false] {
            let name = |what: &str| dir.path().join(format!("{tag}_{windowed}_{what}"));
            let (trace, reactions, contacts, summary) =
                (name("trace.csv"), name("reactions.csv"), name("contacts.csv"), name("summary.json"));
            let mut args: Vec<String> = vec!["run".into(), scenes.join(scene).display().to_string()];
            args.extend(extra.iter().map(|s| s.to_string()));
            for (flag, path) in
                [("--trace", &trace), ("--reactions", &reactions), ("--contacts", &contacts), ("--summary", &summary)]
            {
                args.extend([flag.to_string(), path.display().to_string()]);
            }
            let code = if windowed {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let (code, _, stderr) = run_window_status(&args, dir.path());
                assert!(stderr.contains("window test: "), "{tag}: did it open a window?\n{stderr}");
                code
            } else {
                args.push("--headless".into());
                Command::new(env!("CARGO_BIN_EXE_mx2d")).args(&args).output().unwrap().status.code()
            };
            let summary: serde_json::Value = serde_json::from_slice(&std::fs::read(&summary).unwrap()).unwrap();
            outputs.push((
                code,
                std::fs::read(&trace).unwrap(),
                std::fs::read(&reactions).unwrap(),
                std::fs::read(&contacts).unwrap(),
                summary,
            ));
        }
        let (w, h) = (&outputs[0], &outputs[1]);
        assert_eq!(w.0, h.0, "{tag}: exit status");
        assert!(w.1 == h.1, "{tag}: traces differ");
        assert!(w.2 == h.2, "{tag}: reactions differ");
        assert!(w.3 == h.3, "{tag}: contacts differ");
        for key in ["steps", "t_final", "energy_initial", "energy_final", "max_constraint_error", "stopped"] {
            assert_eq!(w.4[key], h.4[key], "{tag}: summary {key}");
        }
        outputs.swap_remove(1)
    };
    let (code, _, reactions, _, summary) = run_both("ragdoll.ron", &["--steps", "60", "--every", "5"], "ragdoll");
    assert_eq!(code, Some(0));
    assert!(reactions.len() > 1000 && summary["steps"] == 60, "ragdoll: {} bytes of reactions", reactions.len());
    let (code, trace, _, _, summary) =
        run_both("heavy_load_chain.ron", &["--integrator", "rk4", "--steps", "200"], "diverging");
    assert_eq!(code, Some(3), "a diverging run exits 3");
    let stopped = summary["stopped"]["step"].as_u64().unwrap();
    assert!(stopped < 200 && !trace.is_empty(), "stopped at step {stopped}");
}

#[test]
fn without_a_display_mx2d_says_so_in_one_line() {
    let out =
        Command::new(env!("CARGO_BIN_EXE_mx2d")).env_remove("DISPLAY").env_remove("WAYLAND_DISPLAY").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("no display") && stderr.contains("--headless") && stderr.contains("mx2d render"),
        "{stderr}"
    );
}

/// Issue 11, item 10: a successful GPU run prints nothing that says "error"
/// (Mesa's device-select layer used to make libwayland print an
/// XDG_RUNTIME_DIR error while adapters were listed).
#[test]
fn gpu_run_without_xdg_runtime_dir_prints_no_error() {
    let scene = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes/fields.ron");
    let out = Command::new(env!("CARGO_BIN_EXE_mx2d"))
        .args(["run", scene.to_str().unwrap(), "--headless", "--backend", "gpu", "--steps", "5"])
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("NODEVICE_SELECT")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(!stderr.to_lowercase().contains("error"), "{stderr}");
}
