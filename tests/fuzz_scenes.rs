//! The scene fuzzer in CI (issue 11): 5,000 seeded mutants of the shipped
//! scenes, each checked in-process (no subprocess per mutant) as `check` and
//! a short `run`: no panic, no abort, every error positioned, every accepted
//! scene runs or stops with exit 3. Long campaigns:
//! `cargo run --release --example fuzz_scenes -- --count 1000000`.

#[path = "common/fuzz.rs"]
mod fuzz;

#[test]
fn five_thousand_mutants_are_refused_at_a_place_or_run() {
    // The panic hook would print every caught panic; the failures list
    // reports them instead.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let scenes = fuzz::shipped_scenes();
    let (counts, failures) = fuzz::campaign(0x5eed_0011, 5_000, &scenes);
    std::panic::set_hook(hook);
    for (i, e, m) in failures.iter().take(5) {
        eprintln!("mutant {i}: {e}\n  --set {:?}\n  {}", m.set, String::from_utf8_lossy(&m.bytes));
    }
    assert!(failures.is_empty(), "{} of 5000 mutants failed (first above)", failures.len());
    // The mutator must exercise both sides: refusals and accepted scenes.
    let [refused, ran, stopped] = counts;
    assert!(refused > 1_000 && ran + stopped > 250, "refused {refused}, ran {ran}, stopped {stopped}");
}
