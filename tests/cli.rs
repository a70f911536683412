//! The command line contract, by running the binary.

use std::process::Command;

fn mx2d() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mx2d"))
}

fn scene(name: &str) -> String {
    format!("{}/scenes/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn run_writes_the_contracted_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (trace, energy, summary) = (dir.path().join("t.csv"), dir.path().join("e.csv"), dir.path().join("s.json"));
    let out = mx2d()
        .args(["run", &scene("spring.ron"), "--headless", "--steps", "200", "--every", "50"])
        .args(["--integrator", "rk4", "--set", "bodies.block.mass=5"])
        .arg("--trace")
        .arg(&trace)
        .arg("--energy")
        .arg(&energy)
        .arg("--summary")
        .arg(&summary)
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let trace = std::fs::read_to_string(trace).expect("trace");
    let mut lines = trace.lines();
    assert_eq!(lines.next(), Some("step,t,body,x,y,angle,vx,vy,omega"));
    // steps 0, 50, 100, 150, 200 for one body
    let rows: Vec<_> = lines.collect();
    assert_eq!(rows.len(), 5);
    assert!(rows[4].starts_with("200,") && rows[4].contains(",block,"));
    let energy = std::fs::read_to_string(energy).expect("energy");
    assert_eq!(energy.lines().next(), Some("step,t,kinetic,potential,total,constraint_error"));
    assert_eq!(energy.lines().count(), 6);
    let s: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(summary).expect("summary")).expect("json");
    for key in [
        "steps",
        "dt",
        "wall_ms",
        "ms_per_step",
        "energy_initial",
        "energy_final",
        "max_constraint_error",
        "max_penetration",
        "backend",
        "adapter",
    ] {
        assert!(s.get(key).is_some(), "summary lacks {key}: {s}");
    }
    assert_eq!(s["steps"], 200);
    assert_eq!(s["integrator"], "rk4");
    // The override took effect: ω = √(k/m) with m = 5 → energy of the stretched
    // spring is unchanged (½k·0.5² = 5 J) but the period changed; check the
    // conserved energy.
    let e0 = s["energy_initial"].as_f64().expect("number");
    assert!((e0 - 5.0).abs() < 1e-12, "{e0}");
}

#[test]
fn check_reports_bad_input_with_its_place_and_fails() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("bad.ron");
    std::fs::write(&bad, "Scene(\n  name: \"x\",\n  bodies: [Body(name: \"a\", shape: Circle(radius: -1.0))],\n)\n")
        .expect("write");
    let out = mx2d().arg("check").arg(&bad).output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad.ron:3:50: bodies[0].shape.radius: radius must be"), "{err}");
    let out = mx2d().args(["check", &scene("projectile.ron"), "--set", "bodies.nope.mass=1"]).output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown path 'bodies.nope.mass'"));
}

#[test]
fn a_diverging_run_stops_with_step_and_body_and_keeps_its_trace() {
    let dir = tempfile::tempdir().expect("tempdir");
    let trace = dir.path().join("t.csv");
    // The spring scene with a huge stiffness and explicit Euler at a big step.
    let out = mx2d()
        .args(["run", &scene("spring.ron"), "--headless", "--integrator", "euler", "--dt", "0.05"])
        .args(["--set", "loads[0].stiffness=1e7", "--steps", "100000"])
        .arg("--trace")
        .arg(&trace)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("diverged at step") && err.contains("'block'"), "{err}");
    // an explicit method: what to try is said after the error
    assert!(err.contains("hint: euler is explicit") && err.contains("--integrator sdirk3"), "{err}");
    let rows = std::fs::read_to_string(trace).expect("trace kept").lines().count();
    assert!(rows > 2, "trace rows written before the stop are kept");
}

/// Issue 10's regression under RK4 stops on the constraint bound with the
/// hint to the implicit method; the implicit midpoint names its own failure
/// (the stiffness and sdirk3, in its error) and gets no hint.
#[test]
fn a_stiff_mechanism_that_diverges_under_rk4_is_pointed_to_sdirk3() {
    let stopped_with = |integrator: &str| {
        let out = mx2d()
            .args(["run", &scene("heavy_load_chain.ron"), "--headless", "--integrator", integrator])
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(3), "{integrator}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let err = stopped_with("rk4");
    assert!(err.contains("diverged at step") && err.contains("hint: rk4 is explicit"), "{err}");
    let err = stopped_with("midpoint");
    assert!(err.contains("sdirk3 chooses its own step") && !err.contains("hint:"), "{err}");
}

#[test]
fn backend_flag_is_checked_and_reported() {
    let out = mx2d()
        .args(["run", &scene("fields.ron"), "--headless", "--steps", "5", "--backend", "tpu"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected cpu or gpu"));
    let dir = tempfile::tempdir().expect("tempdir");
    let summary = dir.path().join("s.json");
    let out = mx2d()
        .args(["run", &scene("fields.ron"), "--headless", "--steps", "20", "--backend", "gpu", "--summary"])
        .arg(&summary)
        .output()
        .expect("runs");
    let required = mx2d::run::backends::gpu_required();
    let s: serde_json::Value = match out.status.code() {
        Some(0) => serde_json::from_str(&std::fs::read_to_string(&summary).expect("summary")).expect("json"),
        code => panic!("exit {code:?}: {}", String::from_utf8_lossy(&out.stderr)),
    };
    if s["backend"] == "gpu" {
        assert!(!s["adapter"].as_str().unwrap_or("").starts_with("none"), "{s}");
    } else {
        // No adapter here: said once on stderr, never silently.
        assert!(!required, "MX2D_REQUIRE_GPU=1 but the run fell back: {s}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--backend gpu cannot run"));
    }
}

/// Issue 13: `mx2d bench` panicked in the CPU grid when rayon had more threads
/// than the input had runs of boxes (2 boxes on 4 threads; every size up to
/// 1000 on 64). Through the binary, as a user on a many-core machine runs it;
/// the environment variable sizes rayon's global pool whatever the cores.
#[test]
fn bench_cpu_runs_at_3_16_and_64_rayon_threads() {
    for threads in ["3", "16", "64"] {
        let out = mx2d()
            .env("RAYON_NUM_THREADS", threads)
            .args(["bench", "--no-gpu", "--sizes", "2,3,5,9,17,100,500,1000", "--repeats", "1", "--sap-max", "0"])
            .output()
            .expect("runs");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{threads} threads: {}\n{stdout}", String::from_utf8_lossy(&out.stderr));
        assert!(stdout.contains(&format!("cpu: {threads} rayon threads")), "{threads} threads:\n{stdout}");
        // One broadphase row per size.
        assert_eq!(stdout.lines().filter(|l| l.starts_with("broadphase ")).count(), 8, "{stdout}");
    }
}

/// `mx2d bench --passes --order cell --json`: the broadphase row names its four
/// passes in order, each with a time, and its readback-and-sort cost; the
/// field row has its one pass; the table follows. (That pass times add up to
/// the kernel time is checked in-process, in tests/gpu_broadphase.rs.)
/// Without an adapter (and without `MX2D_REQUIRE_GPU=1`) the rows carry no
/// passes.
#[test]
fn bench_passes_reports_each_gpu_pass_in_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("bench.json");
    let out = mx2d()
        .args(["bench", "--sizes", "2000", "--repeats", "1", "--sap-max", "0", "--passes", "--order", "cell", "--json"])
        .arg(&json)
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}\n{stdout}", String::from_utf8_lossy(&out.stderr));
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).expect("json")).expect("parses");
    assert_eq!(doc["order"], "cell");
    let rows = doc["rows"].as_array().expect("rows");
    let row = |kernel: &str| rows.iter().find(|r| r["kernel"] == kernel).expect("row");
    if doc["adapter"].as_str().is_some_and(|a| a.starts_with("none")) {
        assert!(!mx2d::run::backends::gpu_required(), "MX2D_REQUIRE_GPU=1 but no adapter: {doc}");
        assert!(row("broadphase")["gpu_passes"].is_null());
        return;
    }
    let passes = row("broadphase")["gpu_passes"].as_array().expect("broadphase passes");
    let names: Vec<&str> = passes.iter().filter_map(|p| p["name"].as_str()).collect();
    // count, each scan level (2000 boxes: at most a two-level scan), scatter, emission.
    assert_eq!(names.first(), Some(&"count_cells"), "{names:?}");
    assert_eq!(names[names.len() - 2..], ["scatter_cells", "find_pairs"], "{names:?}");
    let scan = &names[1..names.len() - 2];
    assert!(scan == ["scan_blocks_l0"] || scan == ["scan_blocks_l0", "scan_blocks_l1", "add_offsets_l0"], "{names:?}");
    assert!(passes.iter().all(|p| p["ms"].as_f64().is_some_and(|ms| ms >= 0.0)), "{passes:?}");
    assert!(row("broadphase")["gpu_readback_sort_ms"].as_f64().is_some());
    let fields = row("fields")["gpu_passes"].as_array().expect("field passes");
    assert_eq!(fields.len(), 1);
    assert_eq!(fields[0]["name"], "field_forces");
    assert!(stdout.contains("per-pass GPU times"), "{stdout}");
}

/// Issue 7's output contract on the exact contact path: `--contacts` has its
/// header and one row per active contact (the block and the disc on the
/// incline: the block's two corners and the disc, every recorded step), the
/// normal from the surface to the body, impulses ≥ 0 along it; the summary's
/// `max_penetration` is the contacts' real one, and the energy balance
/// counts what impacts and friction took: `energy_balance_error` stays at
/// round-off (1e-9 of the energy lost) on the bouncing ball, which loses
/// half its energy in impacts (e = 0.7), and on the incline.
#[test]
fn contacts_file_and_energy_balance_with_impacts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (contacts, summary) = (dir.path().join("c.csv"), dir.path().join("s.json"));
    let out = mx2d()
        .args(["run", &scene("incline_friction.ron"), "--headless", "--steps", "200", "--every", "50"])
        .arg("--contacts")
        .arg(&contacts)
        .arg("--summary")
        .arg(&summary)
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&contacts).expect("contacts");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("step,t,body_a,body_b,x,y,nx,ny,gap,normal_impulse,tangent_impulse"));
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    for step in ["50", "100", "150", "200"] {
        let at: Vec<_> = rows.iter().filter(|r| r[0] == step).collect();
        let bodies: Vec<&str> = at.iter().map(|r| r[2]).collect();
        assert_eq!(bodies, ["block", "block", "disc"], "step {step}: {at:?}");
        for r in at {
            assert_eq!(r.len(), 11, "{r:?}");
            assert_eq!(r[3], "surface0", "{r:?}");
            let num = |k: usize| r[k].parse::<f64>().unwrap_or_else(|_| panic!("{r:?}"));
            assert!((num(6).hypot(num(7)) - 1.0).abs() < 1e-12 && num(7) > 0.0, "normal {r:?}");
            assert!(num(9) > 0.0 && num(8).abs() < 1e-9, "impulse and gap {r:?}");
        }
    }
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).expect("summary")).expect("json");
    assert!(s["max_penetration"].as_f64().expect("number") < 1e-9, "{s}");
    // The contact stages are in the stage list, in step order, and timed.
    let stages: Vec<(&str, f64)> = s["stage_ms"]
        .as_array()
        .expect("stage_ms")
        .iter()
        .map(|p| (p[0].as_str().expect("name"), p[1].as_f64().expect("ms")))
        .collect();
    let position =
        |name: &str| stages.iter().position(|(n, _)| *n == name).unwrap_or_else(|| panic!("{name}: {stages:?}"));
    let order: Vec<usize> =
        ["integrate", "broadphase", "impacts", "narrowphase", "contact_solve", "project_penetration"]
            .iter()
            .map(|n| position(n))
            .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{stages:?}");
    for name in ["broadphase", "narrowphase", "contact_solve"] {
        assert!(stages[position(name)].1 > 0.0, "{name} not timed: {stages:?}");
    }
    for name in ["bounce.ron", "incline_friction.ron"] {
        let out = mx2d().args(["run", &scene(name), "--headless", "--summary"]).arg(&summary).output().expect("runs");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let s: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&summary).expect("summary")).expect("json");
        let lost = s["energy_initial"].as_f64().expect("e0") - s["energy_final"].as_f64().expect("e1");
        let work = s["work_nonconservative"].as_f64().expect("work");
        assert!(lost > 1e-2, "{name}: nothing was lost: {s}");
        assert!((work + lost).abs() < 1e-6 * lost, "{name}: work {work} J against the loss {lost} J");
        let error = s["energy_balance_error"].as_f64().expect("number");
        assert!(error <= 1e-9 * lost, "{name}: balance error {error} J of {lost} J lost");
    }
}

/// `mx2d bench --scene balls_box` (issue 8): the whole population step on
/// the CPU twin, and on the GPU where there is an adapter, from the same
/// state; a JSON row per size with both times, the agreement and the bytes
/// per ball; the scene given by name (under `scenes/`) or by path.
#[test]
fn bench_scene_times_the_population_step_on_both_backends() {
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("b.json");
    for scene_arg in ["balls_box".to_string(), scene("balls_box.ron")] {
        let out = mx2d()
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .args(["bench", "--scene", &scene_arg, "--sizes", "200,400", "--repeats", "1", "--json"])
            .arg(&json)
            .output()
            .expect("runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{scene_arg}: {stderr}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("bytes per ball"), "{stdout}");
        let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&json).expect("json")).expect("json");
        let rows = v["rows"].as_array().expect("rows");
        assert_eq!(rows.iter().map(|r| r["n"].as_u64()).collect::<Vec<_>>(), [Some(200), Some(400)], "{v}");
        for r in rows {
            assert_eq!(r["scene"].as_str(), Some(scene_arg.as_str()), "{r}");
            assert!(r["cpu_ms"].as_f64().is_some_and(|t| t > 0.0), "{r}");
            assert!(r["cpu_bytes_per_ball"].as_u64().is_some_and(|b| b > 0), "{r}");
            if r["gpu_error"].is_null() {
                assert!(r["gpu_ms"].as_f64().is_some_and(|t| t > 0.0), "{r}");
                assert_eq!(r["agree"], true, "{r}");
            } else {
                assert!(!mx2d::run::backends::gpu_required(), "no GPU: {r}");
            }
        }
    }
}

/// `mx2d bench --scene balls_box --plot FILE.png` draws the population bench
/// (a PNG of the plot's size, decoded, with both backends' lines when a GPU
/// ran); the scene is found from any working directory; a name that is not a
/// scene fails before any measurement, naming `--scene`, the name and the
/// places looked in.
#[test]
fn bench_scene_plot_and_a_missing_scene_named_with_where_it_looked() {
    let dir = tempfile::tempdir().expect("tempdir");
    let png = dir.path().join("population.png");
    let out = mx2d()
        .current_dir(dir.path())
        .args(["bench", "--scene", "balls_box", "--sizes", "100,300", "--repeats", "1", "--plot"])
        .arg(&png)
        .output()
        .expect("runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let image = mx2d::render::png::Image::read_png(&png).expect("a PNG");
    assert_eq!((image.width, image.height), (960, 640));
    // The CPU twin's line in the plot's first colour (31, 119, 180).
    let blue = image.rgba.chunks(4).filter(|p| p[..3] == [31, 119, 180]).count();
    assert!(blue >= 50, "the cpu line: {blue} pixels");

    let out = mx2d().current_dir(dir.path()).args(["bench", "--scene", "no_such_scene"]).output().expect("runs");
    // Bad input: exit 2 (it was 1, the code of an output that cannot be written).
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let looked_here = dir.path().join("scenes").join("no_such_scene.ron");
    assert!(stderr.contains("--scene no_such_scene"), "{stderr}");
    assert!(stderr.contains(&looked_here.display().to_string()), "{stderr}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("cpu ms/step"), "measured before failing");
    let missing = dir.path().join("missing.ron");
    let out = mx2d().args(["bench", "--scene"]).arg(&missing).output().expect("runs");
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&missing.display().to_string()), "{stderr}");
    // A scene without balls is refused before any measurement (it failed
    // with exit 1 on an internal `--set population.count=N`).
    let out = mx2d()
        .args(["bench", "--no-gpu", "--sizes", "10", "--repeats", "1", "--scene"])
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/spring.ron"))
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("has no population section"), "{stderr}");
    assert!(!stderr.contains("--set"), "{stderr}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("cpu ms/step"), "measured before failing");
}
