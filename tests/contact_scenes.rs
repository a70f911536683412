//! Contact scenes and contact input (issue 7): every new scene validates and
//! runs; each bad contact value gets an error naming file, line, column and
//! field.

use mx2d::scene::Scene;

const BASE: &str = r#"Scene(
    name: "t",
    contacts: Contacts(),
    materials: [
        Material(name: "rubber", friction: 0.8, restitution: 0.5),
    ],
    bodies: [
        Body(name: "a", shape: Circle(radius: 0.5), mass: 1.0, position: (0.0, 1.0), material: "rubber"),
    ],
    surfaces: [
        Surface(geometry: Line(point: (0.0, 0.0), normal: (0.0, 1.0)), friction: 0.3),
    ],
)
"#;

fn error_for(text: &str) -> mx2d::scene::SceneError {
    match Scene::parse(text, "bad.ron") {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e,
    }
}

/// Line and column of the first occurrence of `needle` (1-based).
fn position_of(text: &str, needle: &str) -> (usize, usize) {
    let at = text.find(needle).unwrap_or_else(|| panic!("{needle} not in text"));
    let line = text[..at].matches('\n').count() + 1;
    let column = at - text[..at].rfind('\n').map_or(0, |i| i + 1) + 1;
    (line, column)
}

#[test]
fn the_base_scene_is_good() {
    Scene::parse(BASE, "good.ron").unwrap_or_else(|e| panic!("{e}"));
}

/// Each bad value: the error names the file, the field path, and the line
/// and column of the value in the text.
#[test]
fn bad_contact_input_gets_positioned_errors() {
    let cases = [
        ("restitution: 0.5", "restitution: -0.5", "-0.5", "materials[0].restitution", "restitution must be in [0, 1]"),
        ("restitution: 0.5", "restitution: 1.5", "1.5", "materials[0].restitution", "restitution must be in [0, 1]"),
        ("friction: 0.8", "friction: -0.8", "-0.8", "materials[0].friction", "friction must be finite and >= 0"),
        ("material: \"rubber\"", "material: \"steel\"", "\"steel\"", "bodies[0].material", "unknown material 'steel'"),
        ("friction: 0.3", "friction: -0.3", "-0.3", "surfaces[0].friction", "friction must be >= 0"),
        ("contacts: Contacts()", "contacts: Contacts(slop: -1.0)", "-1.0", "contacts.slop", "must be finite and >= 0"),
        // 0 sweeps left resting contacts unsolved; a huge count with
        // tolerance 0 never ended a step; 0 joint passes was taken as 1.
        (
            "contacts: Contacts()",
            "contacts: Contacts(iterations: 0)",
            "0",
            "contacts.iterations",
            "must be in 1..=100000",
        ),
        (
            "contacts: Contacts()",
            "contacts: Contacts(iterations: 100001)",
            "100001",
            "contacts.iterations",
            "must be in 1..=100000, got 100001",
        ),
        (
            "contacts: Contacts()",
            "contacts: Contacts(joint_passes: 0)",
            "0",
            "contacts.joint_passes",
            "must be in 1..=1000",
        ),
    ];
    for (good, bad, value, field, words) in cases {
        let text = BASE.replacen(good, bad, 1);
        let e = error_for(&text);
        assert_eq!(e.file, "bad.ron");
        assert_eq!(e.field, field, "{e}");
        assert!(e.message.contains(words), "{e}");
        assert_eq!((e.line, e.column), position_of(&text, bad.split(": ").last().unwrap_or(value)), "{e}");
    }
}

/// Every contact scene builds and runs some steps without stopping.
#[test]
fn contact_scenes_run() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes");
    let scenes = [
        ("bounce", 300),
        ("bounce_incline", 300),
        ("two_balls", 300),
        ("incline_friction", 300),
        ("newtons_cradle", 300),
        ("box_stack", 60),
        ("pyramid", 10),
        ("ellipse_bounce", 300),
        ("balls_in_box", 3),
    ];
    for (name, steps) in scenes {
        let scene = Scene::load(&dir.join(format!("{name}.ron")), &[]).unwrap_or_else(|e| panic!("{e}"));
        let mut w = scene.build_world().unwrap_or_else(|e| panic!("{e}"));
        assert!(w.contacts.enabled(), "{name}: contacts off");
        for _ in 0..steps {
            w.step().unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
}

/// Contact generators past this machine's memory (or past the body limit)
/// are refused while the scene is read, before a body is allocated, with the
/// field, its line and the estimate; a usize::MAX row count must not wrap
/// around n(n + 1)/2. A pile of 100 rows (5,050 boxes, 40 MB) still loads.
#[test]
fn huge_piles_and_drops_are_refused_with_the_estimate() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes");
    let pyramid = std::fs::read_to_string(root.join("pyramid.ron")).unwrap();
    let drops = std::fs::read_to_string(root.join("balls_in_box.ron")).unwrap();
    let cases = [
        (&pyramid, "piles[0].rows", "10000000"),
        (&pyramid, "piles[0].rows", "18446744073709551615"),
        (&drops, "drops[0].count", "1000000000000"),
        (&drops, "drops[0].count", "18446744073709551615"),
    ];
    for (text, field, value) in cases {
        let started = std::time::Instant::now();
        let e = Scene::parse_with_overrides(text, "big.ron", &[format!("{field}={value}")])
            .and_then(|s| s.build_world().map(|_| s))
            .err()
            .unwrap_or_else(|| panic!("{field}={value} must be refused"));
        assert_eq!(e.field, field, "{e}");
        assert!(e.line > 0, "{e}");
        assert!(e.message.contains("GiB") && e.message.contains("bytes per body"), "{e}");
        // Refused without building anything (a built 10⁷-row pile would take minutes).
        assert!(started.elapsed().as_secs() < 5, "{field}={value} took {:?}", started.elapsed());
    }
    let fine = Scene::parse_with_overrides(&pyramid, "p.ron", &["piles[0].rows=100".into()]).unwrap();
    assert_eq!(fine.build_world().unwrap().bodies.len(), 5050);
}

/// Two discs joined by a distance joint, overlapping by 0.2 m, and a third
/// disc overlapping the first without a joint. Without `collide_connected`
/// the joined pair is never a candidate (the broadphase leaves it out), the
/// free pair is; with it, the joined pair collides too (issue 7: as Box2D's
/// and rapier's flag).
#[test]
fn joined_bodies_collide_only_with_collide_connected() {
    let scene = |flag: &str| {
        format!(
            r#"Scene(
    name: "joined",
    gravity: (0.0, 0.0),
    dt: 0.001,
    contacts: Contacts({flag}),
    bodies: [
        Body(name: "a", shape: Circle(radius: 0.5), mass: 1.0, position: (0.0, 0.0)),
        Body(name: "b", shape: Circle(radius: 0.5), mass: 1.0, position: (0.8, 0.0)),
        Body(name: "c", shape: Circle(radius: 0.5), mass: 1.0, position: (0.0, 0.9)),
    ],
    constraints: [ Distance(a: "a", b: "b", length: 0.8) ],
)"#
        )
    };
    use mx2d::contact::{Pair, Partner};
    let joined = Pair { a: 0, b: Partner::Body(1) };
    let free = Pair { a: 0, b: Partner::Body(2) };
    for (flag, collides) in [("", false), ("collide_connected: false", false), ("collide_connected: true", true)] {
        let mut w = Scene::parse(&scene(flag), "joined.ron")
            .and_then(|s| s.build_world())
            .unwrap_or_else(|e| panic!("{flag}: {e}"));
        w.step().unwrap_or_else(|e| panic!("{flag}: {e}"));
        let pairs = w.contacts.pairs();
        assert!(pairs.contains(&free), "{flag}: the free pair is missing: {pairs:?}");
        assert_eq!(pairs.contains(&joined), collides, "{flag}: pairs {pairs:?}");
        let touching_b = w.contacts.contacts().iter().any(|c| c.body_a == 0 && c.partner == Partner::Body(1));
        assert_eq!(touching_b, collides, "{flag}: contacts {:?}", w.contacts.contacts());
    }
}

/// A NaN state stops the step with an error naming the step and the body
/// (issue 7, bad input), not a panic and not a silent NaN: a NaN position or
/// velocity of a body touching a surface and another body, on the exact path
/// and the soft step. A state that overflows inside the step reaches the
/// contact stage, which names the pair.
#[test]
fn nan_in_a_contact_stops_the_step_naming_the_bodies() {
    let pair = r#"Scene(
    name: "nan",
    gravity: (0.0, -9.81),
    dt: 0.01,
    contacts: Contacts(SOLVER),
    bodies: [
        Body(name: "left", shape: Circle(radius: 0.5), mass: 1.0, position: (0.0, 0.5)),
        Body(name: "right", shape: Box(half_extents: (0.5, 0.5)), mass: 1.0, position: (0.99, 0.5)),
    ],
    surfaces: [ Surface(geometry: Line(point: (0.0, 0.0), normal: (0.0, 1.0))) ],
)"#;
    for solver in ["", "solver: SoftStep()"] {
        for (body, what) in [(0, "position"), (1, "position"), (0, "velocity"), (1, "velocity")] {
            let text = pair.replace("SOLVER", solver);
            let mut w = Scene::parse(&text, "nan.ron").and_then(|s| s.build_world()).unwrap_or_else(|e| panic!("{e}"));
            for _ in 0..3 {
                w.step().unwrap_or_else(|e| panic!("{solver}: {e}"));
            }
            let b = &mut w.bodies.as_mut_slice()[body];
            match what {
                "position" => b.position.y = f64::NAN,
                _ => b.velocity.x = f64::NAN,
            }
            let name = b.name.clone();
            let err = w.step().expect_err("a NaN state must stop the step");
            let text = err.to_string();
            assert!(text.contains("step 4"), "{solver} {name} {what}: {text}");
            assert!(text.contains(&format!("'{name}'")), "{solver} {name} {what}: {text}");
            assert!(!text.contains("panicked"), "{text}");
        }
        // A step so long that the positions overflow inside it: the contact
        // stage meets the non-finite gap and names the pair.
        let mut w = Scene::parse(&pair.replace("SOLVER", solver), "nan.ron")
            .and_then(|s| s.build_world())
            .unwrap_or_else(|e| panic!("{e}"));
        w.dt = 1e300;
        let text = w.step().expect_err("an overflowing step must stop").to_string();
        assert!(text.contains("step 1") && text.contains("contact between 'left' and "), "{solver}: {text}");
    }
}

/// The broadphase's automatic choice (issue 7: "automatic by size spread and
/// overridable in the scene"): 4,096 equal discs use the grid, 4,096 discs
/// whose radii spread 10× and 4,095 equal ones use sweep-and-prune, and the
/// scene's `broadphase` overrides either way.
#[test]
fn the_broadphase_is_chosen_by_count_and_spread_and_the_scene_overrides_it() {
    use mx2d::contact::BroadphaseChoice::{Grid, SweepAndPrune};
    let scene = |count: usize, shapes: &str, broadphase: &str| {
        format!(
            "Scene(name: \"b\", gravity: (0.0, -9.81), dt: 0.016666666666666666,
              contacts: Contacts(broadphase: {broadphase}, solver: SoftStep()),
              drops: [Drop(prefix: \"d\", count: {count}, columns: 64, origin: (0.0, 1.0), spacing: 1.2,
                           shapes: [{shapes}])],
              surfaces: [Surface(geometry: Line(point: (0.0, 0.0), normal: (0.0, 1.0)))])"
        )
    };
    let equal = "Circle(radius: 0.5)";
    let spread = "Circle(radius: 0.05), Circle(radius: 0.5)";
    for (count, shapes, broadphase, expected) in [
        (4096, equal, "Auto", Grid),
        (4096, spread, "Auto", SweepAndPrune),
        (4095, equal, "Auto", SweepAndPrune),
        (4096, equal, "SweepAndPrune", SweepAndPrune),
        (100, spread, "Grid", Grid),
    ] {
        let text = scene(count, shapes, broadphase);
        let mut world = Scene::parse(&text, "b.ron").unwrap_or_else(|e| panic!("{e}")).build_world().unwrap();
        world.step().unwrap();
        assert_eq!(world.contacts.broadphase_used(), expected, "{count} bodies of {shapes}, {broadphase}");
    }
}

/// An unknown contact solver is a parse error at its place that names the
/// enum as the scene format does (`ContactSolver`), not the Rust type
/// (`ContactSolverDef`, before).
#[test]
fn an_unknown_contact_solver_is_named_as_in_the_scene_format() {
    let text = BASE.replacen("contacts: Contacts()", "contacts: Contacts(solver: Soft)", 1);
    let e = error_for(&text);
    assert_eq!((e.line, e.field.as_str()), (3, "contacts.solver"), "{e}");
    assert!(e.message.contains("enum `ContactSolver`"), "{e}");
    assert!(e.message.contains("`Exact` or `SoftStep`"), "{e}");
}

/// Bodies placed inside each other are said before the run: a drop at a
/// spacing of 1e-9 m puts its 1,000 bodies on one point (two coincident
/// discs of radius r overlap by 2 r, 200 % of it), and its first steps'
/// push-out took the energy from 499 J to 4,526 J with nothing said. Every
/// shipped scene places its bodies touching at the closest and is not said
/// (a stack, a pyramid: 0 up to rounding), and the check does not change
/// the run that follows (it works on a copy of the contact set).
#[test]
fn bodies_placed_overlapping_are_said_and_the_shipped_scenes_are_not() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenes");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).expect("scenes/") {
        let path = entry.expect("entry").path();
        if path.extension().is_none_or(|x| x != "ron") {
            continue;
        }
        let world = Scene::load(&path, &[]).and_then(|s| s.build_world()).unwrap_or_else(|e| panic!("{e}"));
        let said = mx2d::run::session::body_overlap_warning(&world);
        assert!(said.is_none(), "{}: {said:?}", path.display());
        checked += 1;
    }
    assert!(checked >= 30, "{checked} scenes");
    let path = dir.join("balls_in_box.ron");
    let text = std::fs::read_to_string(&path).expect("balls_in_box");
    assert!(text.contains("spacing: 0.5,"));
    let packed = Scene::parse(&text.replace("spacing: 0.5,", "spacing: 1e-9,"), "packed.ron").expect("parses");
    let world = packed.build_world().expect("builds");
    let o = world.start_overlap().expect("overlapping");
    // mixed shapes on one point: at least a whole radius deep
    assert!(o.ratio >= 1.0, "{o:?}");
    let said = mx2d::run::session::body_overlap_warning(&world).expect("said");
    assert!(said.starts_with("bodies start overlapping: ") && said.contains(&o.body), "{said}");
    // the query leaves the steps as they were: two runs, one queried first
    let original = Scene::load(&path, &[]).expect("loads");
    let (mut a, mut b) = (original.build_world().expect("a"), original.build_world().expect("b"));
    assert!(a.start_overlap().is_none_or(|o| o.ratio < 1e-2));
    for _ in 0..10 {
        a.step().expect("a steps");
        b.step().expect("b steps");
    }
    let positions = |w: &mx2d::world::World| w.bodies.iter().map(|b| (b.position, b.angle)).collect::<Vec<_>>();
    assert_eq!(positions(&a), positions(&b));
}
