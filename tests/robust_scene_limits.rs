//! Issue 10: a generator asking for more bodies than memory allows is refused
//! by validation (what `mx2d check` runs), before anything is allocated, with
//! the estimate named. Before the fix `links: 100000000` aborted with an
//! allocation failure after 44 s and `links: 4294967296` hung; a refusal that
//! allocated first would take that long or abort the test process.

use mx2d::scene::Scene;

const CHAIN: &str = r#"Scene(
    name: "big",
    dt: 0.001,
    chains: [
        Chain(prefix: "l", links: 10, anchor: (0.0, 0.0), link_length: 0.1, link_mass: 0.01),
    ],
)"#;

fn refused(links: &str) -> mx2d::scene::SceneError {
    let set = format!("chains[0].links={links}");
    Scene::parse_with_overrides(CHAIN, "big.ron", &[set]).expect_err("must be refused")
}

#[test]
fn huge_chains_are_refused_with_the_estimate() {
    for links in ["100000000", "4294967296", "18446744073709551615"] {
        let e = refused(links);
        assert_eq!(e.field, "chains[0].links", "{e}");
        assert!(e.line > 0, "{e}");
        assert!(e.message.contains("GiB") && e.message.contains("bytes per link"), "{e}");
        assert!(e.message.contains(links), "{e}");
    }
}

#[test]
fn ordinary_chains_still_load() {
    let s = Scene::parse_with_overrides(CHAIN, "big.ron", &["chains[0].links=1000".into()]).expect("loads");
    assert_eq!(s.build_world().expect("world").bodies.len(), 1000);
}
