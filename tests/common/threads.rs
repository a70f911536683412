//! Runs a computation at several rayon pool sizes in-process, so the machine's
//! core count does not matter (issue 13: a 16-core run found a panic that 2
//! cores hide).
//!
//! One line per parallel path:
//! `common::threads::assert_same_at_every_pool_size("grid", || compute(input));`

/// Pool sizes every parallel path is tested at: 1 (the reference), a machine
/// with fewer cores than CI, odd counts that do not divide typical sizes, and
/// workstation counts larger than most inputs.
pub const POOL_SIZES: [usize; 6] = [1, 2, 3, 7, 16, 64];

/// Runs `f` inside a rayon pool of `threads` threads and returns its result.
pub fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap_or_else(|e| panic!("cannot build a rayon pool of {threads} threads: {e}"))
        .install(f)
}

/// Runs `f` at every size of [`POOL_SIZES`] and asserts that each result equals
/// the one-thread result exactly (`PartialEq`; bitwise for floats compared as
/// bits by the caller). Returns the one-thread result.
pub fn assert_same_at_every_pool_size<T, F>(what: &str, f: F) -> T
where
    T: PartialEq + std::fmt::Debug + Send,
    F: Fn() -> T + Send + Sync,
{
    let reference = in_pool(1, &f);
    for &threads in &POOL_SIZES[1..] {
        let got = in_pool(threads, &f);
        assert!(got == reference, "{what}: result with {threads} threads differs from 1 thread");
    }
    reference
}
