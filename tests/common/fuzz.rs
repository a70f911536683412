//! The scene fuzzer's core (issue 11), shared by `tests/fuzz_scenes.rs` (CI,
//! 5,000 mutants) and `examples/fuzz_scenes.rs` (long campaigns): a seeded
//! mutator over the shipped scenes, and an in-process check of each mutant
//! that asserts what `mx2d check` and a short `mx2d run` would do.
//!
//! Mutations: byte edits, deletions, splices from another scene,
//! truncation, extreme and subnormal numbers, deep nesting, nested block
//! comments, raw strings, invalid UTF-8, a byte-order mark; a third of the
//! mutants also get `--set` overrides with odd paths and values.

use std::panic::AssertUnwindSafe;

use mx2d::run::{RunOptions, run_scene};
use mx2d::scene::Scene;

/// SplitMix64 (the same generator as `tests/common::Rng`, repeated here so
/// that the example can include this file alone).
pub struct Mutator(u64);

impl Mutator {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Numbers that have broken parsers and solvers.
const NUMBERS: &[&str] = &[
    "1e-320",
    "5e-324",
    "-1e-310",
    "1e308",
    "-1e308",
    "1e300",
    "1e100",
    "1e-300",
    "NaN",
    "inf",
    "-inf",
    "-0.0",
    "0",
    "-1",
    "18446744073709551615",
    "-9223372036854775808",
    "1e18",
    "0x1F",
    "1_000",
    "+3",
    "2.5e",
    ".5",
    "1.",
];
/// Fragments with grammar that a naive scanner misreads.
const FRAGMENTS: &[&str] = &[
    "/* old: /* note */ dt: 0.5 */",
    "r#\" dt: 0.5 ( [ \"#",
    "r##\"a \"# b\"##",
    "// \\",
    "'\\''",
    "b\"x\"",
    "Some(",
    ")",
    "]",
    ",",
    ":",
    "\"",
    "\u{FEFF}",
    "é",
    "name: \"x\",",
    "dt: -1,",
];
const SET_PATHS: &[&str] = &[
    "dt",
    "gravity",
    "bodies.0.mass",
    "bodies[0].name",
    "bodies.0.position",
    "constraints.0.a",
    "loads[0].stiffness",
    "chains[0].links",
    "3",
    "",
    "bodies",
    "stabilization",
    "bodies.9.mass",
    "name",
    "steps",
    "duration",
];
const SET_VALUES: &[&str] = &[
    "1",
    "-1",
    "1e-320",
    "1e308",
    "NaN",
    "(",
    "1 // x",
    "1, name: \"y\"",
    "r#\"a\"#",
    "\"\"",
    "(0, -1.62)",
    "Some(2.0)",
    "[]",
    "\"a\\nb\"",
    "1000000000000",
    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
];

/// One mutant: the bytes of a scene file and the `--set` overrides.
#[derive(Clone, Debug)]
pub struct Mutant {
    /// The file's bytes.
    pub bytes: Vec<u8>,
    /// `PATH=VALUE` overrides.
    pub set: Vec<String>,
}

impl Mutator {
    /// A mutant of one of `scenes`, with 1 to 3 mutations.
    pub fn mutant(&mut self, scenes: &[Vec<u8>]) -> Mutant {
        let mut b = self.pick(scenes).clone();
        for _ in 0..1 + self.below(3) {
            self.mutate(&mut b, scenes);
        }
        let mut set = Vec::new();
        if self.below(3) == 0 {
            for _ in 0..1 + self.below(2) {
                set.push(format!("{}={}", self.pick(SET_PATHS), self.pick(SET_VALUES)));
            }
        }
        Mutant { bytes: b, set }
    }

    fn mutate(&mut self, b: &mut Vec<u8>, scenes: &[Vec<u8>]) {
        let at = self.below(b.len() + 1);
        match self.below(10) {
            // A byte edit.
            0 if !b.is_empty() => {
                let i = self.below(b.len());
                b[i] = *self.pick(b"()[]{},:\"'/*#r0123456789.-+eE \n\\\xff\xc3");
            }
            // A deletion.
            1 => {
                let end = (at + 1 + self.below(40)).min(b.len());
                b.drain(at.min(end)..end);
            }
            // A splice from another scene.
            2 => {
                let other = self.pick(scenes).clone();
                let start = self.below(other.len());
                let end = (start + self.below(200)).min(other.len());
                b.splice(at..at, other[start..end].iter().copied());
            }
            // A number replaced by an extreme one.
            3 | 4 => {
                let digits: Vec<usize> = (0..b.len()).filter(|&i| b[i].is_ascii_digit()).collect();
                if digits.is_empty() {
                    return;
                }
                let mut s = *self.pick(&digits);
                while s > 0 && (b[s - 1].is_ascii_digit() || matches!(b[s - 1], b'.' | b'-' | b'e')) {
                    s -= 1;
                }
                let mut e = s;
                while e < b.len() && (b[e].is_ascii_alphanumeric() || matches!(b[e], b'.' | b'-' | b'+' | b'_')) {
                    e += 1;
                }
                let n = self.pick(NUMBERS).as_bytes().to_vec();
                b.splice(s..e, n);
            }
            // Deep nesting.
            5 => {
                let depth = *self.pick(&[64, 129, 300, 5_000, 40_000]);
                let (open, close) = *self.pick(&[("[", "]"), ("(", ")"), ("Some(", ")")]);
                let mut nest = open.repeat(depth);
                if self.below(2) == 0 {
                    nest.push_str(&close.repeat(depth));
                }
                if self.below(2) == 0 {
                    nest = format!("r#\"{nest}\"#");
                }
                b.splice(at..at, nest.into_bytes());
            }
            // Comments, raw strings and other tricky grammar.
            6 | 7 => {
                b.splice(at..at, self.pick(FRAGMENTS).as_bytes().iter().copied());
            }
            // Invalid UTF-8.
            8 => {
                let bad =
                    self.pick(&[&[0xffu8][..], &[0xc3], &[0xe2, 0x82], &[0xed, 0xa0, 0x80], &[0xc0, 0xaf]]).to_vec();
                b.splice(at..at, bad);
            }
            // Truncation, or a byte-order mark.
            _ => {
                if self.below(2) == 0 {
                    b.truncate(at);
                } else {
                    b.splice(0..0, "\u{FEFF}".bytes());
                }
            }
        }
    }
}

/// What one mutant did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Verdict {
    /// Refused with a positioned error (`check`/`run` exit 2).
    #[default]
    Refused,
    /// Accepted, and the short run finished (exit 0).
    Ran,
    /// Accepted, and the short run stopped (exit 3).
    Stopped,
}

/// Checks one mutant in-process as `mx2d check` then `mx2d run --steps ≤ 20`
/// would: no panic; an error is positioned at file:line:col (an error of a
/// `--set` itself names the override instead); an accepted scene runs or
/// stops with exit 3. Returns the verdict or a description of the failure.
pub fn check_mutant(m: &Mutant) -> Result<Verdict, String> {
    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| -> Result<Verdict, String> {
        let scene = match Scene::from_bytes(m.bytes.clone(), "mutant.ron", &m.set) {
            Err(e) => {
                let placed = e.line >= 1 && e.column >= 1;
                let set_error = e.field.starts_with("--set ") && !m.set.is_empty();
                return if placed || set_error {
                    Ok(Verdict::Refused)
                } else {
                    Err(format!("unpositioned error: {e}"))
                };
            }
            Ok(s) => s,
        };
        let world = scene.build_world().map_err(|e| format!("validated scene fails to build: {e}"))?;
        let options = RunOptions::default();
        let steps = mx2d::run::planned_steps(&scene, &options).map_err(|e| format!("validated scene: {e}"))?;
        if world.bodies.len() > 2_000 {
            // Valid, but too large to step within the campaign's time.
            return Ok(Verdict::Ran);
        }
        let options = RunOptions { steps: Some(steps.min(20)), ..options };
        match run_scene(&scene, &options) {
            Ok(outcome) => match outcome.error {
                None => Ok(Verdict::Ran),
                Some(stop) if stop.exit_code() == 3 => Ok(Verdict::Stopped),
                Some(stop) => Err(format!("unexpected stop: {stop}")),
            },
            Err(e) => Err(format!("run failed outside the simulation (exit 1): {e:#}")),
        }
    }));
    match outcome {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Err(format!("panic: {msg}"))
        }
    }
}

/// The shipped scenes' bytes.
pub fn shipped_scenes() -> Vec<Vec<u8>> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/scenes");
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .expect("scenes/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "ron"))
        .collect();
    paths.sort();
    paths.iter().map(|p| std::fs::read(p).expect("scene")).collect()
}

/// Runs `count` mutants from `seed`; returns the verdict counts and the
/// failures (mutant index, what went wrong, the mutant).
pub fn campaign(seed: u64, count: u64, scenes: &[Vec<u8>]) -> ([u64; 3], Vec<(u64, String, Mutant)>) {
    let mut rng = Mutator::new(seed);
    let mut counts = [0u64; 3];
    let mut failures = Vec::new();
    for i in 0..count {
        let m = rng.mutant(scenes);
        match check_mutant(&m) {
            Ok(v) => counts[v as usize] += 1,
            Err(e) => failures.push((i, e, m)),
        }
    }
    (counts, failures)
}
