//! CPU time of the whole process, shared by the examples that report speed:
//! on the shared development machine a loaded CPU inflates wall time far
//! more than it inflates CPU time.

/// CPU time of every thread of this process so far (s), from
/// `/proc/self/task/*/schedstat` (first field: ns on a CPU); 0 elsewhere.
pub fn cpu_seconds() -> f64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return 0.0 };
    tasks
        .filter_map(|t| t.ok())
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next().and_then(|x| x.parse::<f64>().ok()))
        .sum::<f64>()
        * 1e-9
}
