//! A long fuzzing campaign over the shipped scenes (issue 11):
//! `cargo run --release --example fuzz_scenes -- --count 1000000 [--seed S] [--from K]`.
//! `--from K` resumes a campaign at mutant K (a multiple of the 10,000-mutant
//! chunk: each chunk has its own seed, so the mutants are those of the whole
//! run's).
//! Prints progress, the verdict counts and each failure (with the mutant);
//! exits 1 if any mutant failed. The checks are those of
//! `tests/fuzz_scenes.rs` (see `tests/common/fuzz.rs`).

#[path = "../tests/common/fuzz.rs"]
mod fuzz;

fn main() -> std::process::ExitCode {
    let mut count = 100_000u64;
    let mut seed = 1u64;
    let mut from = 0u64;
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let value = pair.get(1).and_then(|v| v.parse::<u64>().ok());
        match (pair[0].as_str(), value) {
            ("--count", Some(v)) => count = v,
            ("--seed", Some(v)) => seed = v,
            ("--from", Some(v)) if v % 10_000 == 0 => from = v,
            _ => {
                eprintln!("usage: fuzz_scenes [--count N] [--seed S] [--from K, a multiple of 10000]");
                return std::process::ExitCode::from(2);
            }
        }
    }
    std::panic::set_hook(Box::new(|_| {}));
    let scenes = fuzz::shipped_scenes();
    let started = std::time::Instant::now();
    let (mut totals, mut failed) = ([0u64; 3], 0u64);
    let chunk = 10_000u64;
    let mut done = from.min(count);
    while done < count {
        let n = chunk.min(count - done);
        // Each chunk has its own seed, so a failure can be replayed alone.
        let (counts, failures) = fuzz::campaign(seed.wrapping_mul(1_000_003).wrapping_add(done), n, &scenes);
        for (k, c) in counts.iter().enumerate() {
            totals[k] += c;
        }
        for (i, e, m) in &failures {
            println!(
                "FAIL chunk {done} mutant {i}: {e}\n  --set {:?}\n  {:?}",
                m.set,
                String::from_utf8_lossy(&m.bytes)
            );
        }
        failed += failures.len() as u64;
        done += n;
        eprintln!("{done}/{count} mutants, {failed} failures, {:.0} s", started.elapsed().as_secs_f64());
    }
    println!(
        "{} mutants ({from}..{count}) in {:.0} s: refused {}, ran {}, stopped {}, failures {failed}",
        count.saturating_sub(from),
        started.elapsed().as_secs_f64(),
        totals[0],
        totals[1],
        totals[2]
    );
    if failed == 0 { std::process::ExitCode::SUCCESS } else { std::process::ExitCode::from(1) }
}
