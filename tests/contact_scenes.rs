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
