//! One team of threads walking a fixed list of phases, instead of one rayon
//! join per colour and per pass: the population's CPU twin walks its whole
//! step this way ([`crate::population`]), the soft contact step each
//! sub-step's sweeps ([`crate::contact::soft_step`]).
//!
//! Every participant runs the same program: for each phase in order it waits
//! until the previous phase is complete, then claims the phase's chunks one at
//! a time from a shared counter (`claimed`) and counts each finished chunk
//! (`done`). A phase is complete when `done` reaches its chunk count; a phase
//! with no chunks (an empty colour) is complete at once and costs no wait.
//!
//! **No participant waits for another to arrive.** Completion counts chunks,
//! not threads: the thread that starts the loop runs the whole program itself,
//! and the helpers spawned beside it (one per other worker of the pool) join
//! whenever a worker is free — at the first phase or at the last, or never
//! (a pool busy with other work, the test harness running tests side by
//! side). So the loop cannot deadlock on a helper that never runs, and with
//! one thread it costs two atomic increments per chunk and nothing else.
//!
//! **Same result at every pool size.** Which thread runs a chunk changes
//! nothing: a per-ball phase writes only its own balls from arrays that no
//! one writes in the phase, and a colour of a Gauss–Seidel sweep writes only
//! the 3 × 3 blocks of its cells, disjoint within the colour (the colouring
//! proof in [`crate::population`]); a colour of soft contact constraints
//! writes only the velocities of its own dynamic bodies, which no other
//! constraint of the colour has. Phases follow each other in the same
//! order as the former rayon joins, and each participant sees all of the
//! previous phase's writes before it starts the next one: every chunk's end
//! is a release increment of `done`, the waiter's load of the final count an
//! acquire, so every write of phase p happens before every read of phase
//! p + 1 (and, by induction, of every later phase).
//!
//! **Waiting.** A participant whose next phase is not ready spins a short
//! while (the phase is usually a few microseconds from its end), then
//! yields, then parks on a condition variable that the thread finishing a
//! phase's last chunk notifies. A pure spin would burn the time slice that the
//! thread it waits for needs on an oversubscribed machine.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

/// Spins of a waiting participant before it yields.
const SPINS: u32 = 200;
/// Yields before it parks.
const YIELDS: u32 = 10;
/// A parked participant re-checks at least this often (a safety net: the
/// notification is what wakes it).
const PARK: Duration = Duration::from_millis(2);

/// Counters of one phase (own cache line: the counters of neighbouring
/// phases are not touched at the same time, but the claims of one phase are).
#[derive(Default)]
#[repr(align(64))]
struct PhaseCounters {
    claimed: AtomicUsize,
    done: AtomicUsize,
    /// Claims from both ends ([`Participant::phase_from_ends`]): the chunks
    /// taken from the front in the low 32 bits, from the back in the high.
    ends: AtomicU64,
}

/// Length of the chunks that cut `items` into `parts` chunks, within
/// `min..=max` (clamped: at `max`, more chunks than parts, so that a thread
/// late to the phase still finds work; at `min`, fewer, when a claim would
/// cost more than its work). Which thread runs a chunk, and where the
/// chunks are cut, change no result of a phase whose chunks are independent.
pub(crate) fn balanced_chunk(items: usize, parts: usize, min: usize, max: usize) -> usize {
    items.div_ceil(parts.max(1)).clamp(min, max)
}

/// The shared state of one run of a phase list.
pub(crate) struct Schedule {
    phases: Vec<PhaseCounters>,
    sleepers: AtomicUsize,
    lock: Mutex<()>,
    wake: Condvar,
    /// A participant panicked in a chunk: the phase will never complete, so
    /// the waiters panic too (rayon's scope then carries the first panic to
    /// the caller) instead of waiting for ever.
    poisoned: AtomicBool,
}

impl Schedule {
    /// A schedule of `phases` phases (the number each participant walks).
    pub(crate) fn new(phases: usize) -> Self {
        Schedule {
            phases: (0..phases).map(|_| PhaseCounters::default()).collect(),
            sleepers: AtomicUsize::new(0),
            lock: Mutex::new(()),
            wake: Condvar::new(),
            poisoned: AtomicBool::new(false),
        }
    }

    /// A participant at the start of the list.
    pub(crate) fn participant(&self) -> Participant<'_> {
        Participant { schedule: self, next: 0, previous_chunks: 0, from_back: false }
    }

    /// A participant at the start of the list that takes the chunks of
    /// [`Participant::phase_from_ends`] from the back (the one from
    /// [`Schedule::participant`] takes them from the front).
    pub(crate) fn participant_from_back(&self) -> Participant<'_> {
        Participant { schedule: self, next: 0, previous_chunks: 0, from_back: true }
    }

    fn is_complete(&self, phase: usize, chunks: usize) -> bool {
        if self.poisoned.load(Ordering::Relaxed) {
            panic!("team of threads: another thread of the team panicked in phase {phase}");
        }
        self.phases[phase].done.load(Ordering::Acquire) >= chunks
    }

    /// Waits until `phase` (of `chunks` chunks) is complete.
    fn wait(&self, phase: usize, chunks: usize) {
        for _ in 0..SPINS {
            if self.is_complete(phase, chunks) {
                return;
            }
            std::hint::spin_loop();
        }
        for _ in 0..YIELDS {
            if self.is_complete(phase, chunks) {
                return;
            }
            std::thread::yield_now();
        }
        // Park. The sleeper count is raised before the last check and the
        // finisher reads it after its increment (both SeqCst): either the
        // check sees the phase complete or the finisher sees a sleeper and
        // notifies under the lock, which this thread holds until it waits.
        let mut guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        while !self.is_complete_or_poisoned(phase, chunks) {
            guard = match self.wake.wait_timeout(guard, PARK) {
                Ok((g, _)) => g,
                Err(e) => e.into_inner().0,
            };
        }
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
        drop(guard);
        // Panics (outside the lock) if the team was poisoned.
        self.is_complete(phase, chunks);
    }

    /// As `is_complete`, without panicking (under the lock).
    fn is_complete_or_poisoned(&self, phase: usize, chunks: usize) -> bool {
        self.poisoned.load(Ordering::Relaxed) || self.phases[phase].done.load(Ordering::Acquire) >= chunks
    }

    /// Wakes the parked participants (a phase has just completed).
    fn notify(&self) {
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            let _guard = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            self.wake.notify_all();
        }
    }
}

/// Poisons the schedule if dropped while a chunk unwinds (forgotten when the
/// chunk returns).
struct Poison<'a>(&'a Schedule);

impl Drop for Poison<'_> {
    fn drop(&mut self) {
        self.0.poisoned.store(true, Ordering::SeqCst);
        let _guard = self.0.lock.lock().unwrap_or_else(|e| e.into_inner());
        self.0.wake.notify_all();
    }
}

/// One thread's walk through a [`Schedule`]'s phases.
pub(crate) struct Participant<'a> {
    schedule: &'a Schedule,
    next: usize,
    previous_chunks: usize,
    /// Takes the chunks of `phase_from_ends` from the back.
    from_back: bool,
}

impl Participant<'_> {
    /// The next phase, of `chunks` chunks: waits for the previous phase to
    /// complete, then runs `work(k)` for the chunks `k` it claims. Every
    /// participant calls `phase` with the same chunk counts in the same order.
    pub(crate) fn phase(&mut self, chunks: usize, work: impl FnMut(usize)) {
        self.walk_phase(
            chunks,
            |counters| counters.claimed.load(Ordering::Relaxed),
            |counters| Some(counters.claimed.fetch_add(1, Ordering::Relaxed)).filter(|&k| k < chunks),
            work,
        );
    }

    /// As [`Participant::phase`], but the chunks are claimed from both ends:
    /// the front participant takes 0, 1, 2, … and the others n − 1, n − 2, …
    /// until they meet. With two threads each one then takes the same end of
    /// every phase, so that when consecutive phases' chunks cover the same
    /// data in the same order (the colours of a sweep over bodies in key
    /// order, the body pieces), each thread finds its part in its own cache
    /// instead of fetching what the other thread wrote a phase before.
    ///
    /// Exactly `chunks` claims succeed and no chunk is taken twice: a claim
    /// adds 1 to its end's count in one atomic word, and succeeds when the
    /// sum of both counts before it is below `chunks` (each successful claim
    /// sees a different sum; the front ones take indices 0..f, the back ones
    /// n − b..n, with f + b = n at the end).
    pub(crate) fn phase_from_ends(&mut self, chunks: usize, work: impl FnMut(usize)) {
        let (step, shift) = if self.from_back { (1u64 << 32, 32) } else { (1, 0) };
        let from_back = self.from_back;
        let taken = |ends: u64| (ends & 0xffff_ffff) as usize + (ends >> 32) as usize;
        assert!(chunks < 1 << 31, "too many chunks for a phase claimed from both ends");
        self.walk_phase(
            chunks,
            |counters| taken(counters.ends.load(Ordering::Relaxed)),
            |counters| {
                let before = counters.ends.fetch_add(step, Ordering::Relaxed);
                if taken(before) >= chunks {
                    return None;
                }
                let mine = ((before >> shift) & 0xffff_ffff) as usize;
                Some(if from_back { chunks - 1 - mine } else { mine })
            },
            work,
        );
    }

    /// The walk of one phase of `chunks` chunks, shared by [`Participant::phase`]
    /// and [`Participant::phase_from_ends`], which differ only in how a
    /// chunk is claimed: waits for the previous phase, and unless `taken`
    /// says every chunk is already claimed (an empty phase, or one the
    /// others took), runs `work(k)` for each chunk `k` that `claim` hands
    /// out until it hands out none, counting each done chunk.
    fn walk_phase(
        &mut self,
        chunks: usize,
        taken: impl Fn(&PhaseCounters) -> usize,
        mut claim: impl FnMut(&PhaseCounters) -> Option<usize>,
        mut work: impl FnMut(usize),
    ) {
        let schedule = self.schedule;
        if self.next > 0 {
            schedule.wait(self.next - 1, self.previous_chunks);
        }
        let counters = &schedule.phases[self.next];
        if taken(counters) < chunks {
            while let Some(k) = claim(counters) {
                let poison = Poison(schedule);
                work(k);
                std::mem::forget(poison);
                if counters.done.fetch_add(1, Ordering::SeqCst) + 1 == chunks {
                    schedule.notify();
                }
            }
        }
        self.previous_chunks = chunks;
        self.next += 1;
    }

    /// Waits until the last phase walked is complete (the caller then reads
    /// its results).
    pub(crate) fn finish(&self) {
        if self.next > 0 {
            self.schedule.wait(self.next - 1, self.previous_chunks);
        }
    }
}

/// A slice shared by the threads of a team, each touching elements that no
/// other thread touches in the same phase (the caller's proof).
pub(crate) struct Shared<T> {
    ptr: *mut T,
    len: usize,
}

// SAFETY: the accessors are unsafe; their callers guarantee that no element
// is written by one thread while another reads or writes it (the phases).
unsafe impl<T: Send> Sync for Shared<T> {}
unsafe impl<T: Send> Send for Shared<T> {}

impl<T: Copy> Shared<T> {
    /// Shares `v` (which the caller keeps untouched while this lives).
    pub(crate) fn new(v: &mut [T]) -> Self {
        Shared { ptr: v.as_mut_ptr(), len: v.len() }
    }

    /// Element `i`.
    ///
    /// # Safety
    /// No other thread writes element `i` in this phase.
    #[inline]
    pub(crate) unsafe fn get(&self, i: usize) -> T {
        assert!(i < self.len);
        // SAFETY: in bounds (checked); no concurrent writer (the caller).
        unsafe { *self.ptr.add(i) }
    }

    /// Sets element `i`.
    ///
    /// # Safety
    /// No other thread reads or writes element `i` in this phase.
    #[inline]
    pub(crate) unsafe fn set(&self, i: usize, v: T) {
        assert!(i < self.len);
        // SAFETY: in bounds (checked); exclusive (the caller).
        unsafe { *self.ptr.add(i) = v }
    }

    /// The whole slice, read-only.
    ///
    /// # Safety
    /// No thread writes any element while the reference lives (the phase).
    #[inline]
    pub(crate) unsafe fn all(&self) -> &[T] {
        // SAFETY: the pointer and length of a live slice; no writer (the caller).
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// Elements `range`, writable.
    ///
    /// # Safety
    /// No other thread reads or writes them while the reference lives.
    #[inline]
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn range_mut(&self, range: std::ops::Range<usize>) -> &mut [T] {
        assert!(range.start <= range.end && range.end <= self.len);
        // SAFETY: in bounds (checked); exclusive (the caller).
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(range.start), range.len()) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `program` on `threads` participants of one schedule in a pool of
    /// that size (the caller and `threads − 1` spawned helpers, as the
    /// substeps do).
    fn team(threads: usize, phases: usize, program: impl Fn(&mut Participant<'_>) + Sync) {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a pool");
        let schedule = Schedule::new(phases);
        pool.install(|| {
            rayon::scope(|scope| {
                for _ in 1..threads {
                    scope.spawn(|_| program(&mut schedule.participant()));
                }
                program(&mut schedule.participant());
            })
        });
    }

    /// Every chunk of phase p sees every chunk of phase p − 1 done (each
    /// chunk records the number of chunks finished before it, per phase),
    /// and every chunk runs exactly once, with empty phases in between.
    #[test]
    fn phases_run_in_order_and_every_chunk_once() {
        for threads in [1, 2, 3, 7] {
            let sizes = [5usize, 0, 17, 1, 0, 0, 40, 3];
            let runs: Vec<AtomicUsize> = sizes.iter().map(|_| AtomicUsize::new(0)).collect();
            team(threads, sizes.len(), |t| {
                for (p, &chunks) in sizes.iter().enumerate() {
                    t.phase(chunks, |_| {
                        // The last non-empty phase before p is complete.
                        if let Some(q) = (0..p).rev().find(|&q| sizes[q] > 0) {
                            assert_eq!(runs[q].load(Ordering::SeqCst), sizes[q], "phase {p} started early");
                        }
                        runs[p].fetch_add(1, Ordering::SeqCst);
                    });
                }
                t.finish();
            });
            for (p, r) in runs.iter().enumerate() {
                assert_eq!(r.load(Ordering::SeqCst), sizes[p], "phase {p} at {threads} threads");
            }
        }
    }

    /// Phases claimed from both ends: every chunk runs exactly once, after
    /// the previous phase, at 1, 2, 3 and 7 threads (one front participant,
    /// the others from the back); and with two participants each takes
    /// chunks from its own end only (the front one a prefix, the back one
    /// the rest).
    #[test]
    fn phases_from_both_ends_run_every_chunk_once_in_order() {
        for threads in [1, 2, 3, 7] {
            let sizes = [5usize, 0, 17, 1, 0, 0, 40, 3, 2];
            let runs: Vec<Vec<AtomicUsize>> =
                sizes.iter().map(|&n| (0..n).map(|_| AtomicUsize::new(0)).collect()).collect();
            // Per phase and chunk: 1 + whether a back participant ran it.
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("a pool");
            let schedule = Schedule::new(sizes.len());
            let program = |t: &mut Participant<'_>| {
                let back = t.from_back;
                for (p, &chunks) in sizes.iter().enumerate() {
                    t.phase_from_ends(chunks, |k| {
                        if let Some(q) = (0..p).rev().find(|&q| sizes[q] > 0) {
                            let done: usize = runs[q].iter().map(|r| usize::from(r.load(Ordering::SeqCst) > 0)).sum();
                            assert_eq!(done, sizes[q], "phase {p} started early");
                        }
                        let old = runs[p][k].swap(1 + usize::from(back), Ordering::SeqCst);
                        assert_eq!(old, 0, "phase {p} chunk {k} ran twice");
                    });
                }
                t.finish();
            };
            pool.install(|| {
                rayon::scope(|scope| {
                    for _ in 1..threads {
                        scope.spawn(|_| program(&mut schedule.participant_from_back()));
                    }
                    program(&mut schedule.participant());
                })
            });
            for (p, chunks) in runs.iter().enumerate() {
                let by: Vec<usize> = chunks.iter().map(|r| r.load(Ordering::SeqCst)).collect();
                assert!(by.iter().all(|&b| b > 0), "phase {p} at {threads} threads: a chunk did not run");
                // The front participant's chunks are a prefix.
                let front = by.iter().take_while(|&&b| b == 1).count();
                assert!(by[front..].iter().all(|&b| b == 2), "phase {p} at {threads} threads: {by:?}");
            }
        }
    }

    /// A panic in one chunk reaches the caller; the other participants,
    /// waiting for a phase that cannot complete, do not hang.
    #[test]
    fn a_panicking_chunk_poisons_the_team_instead_of_hanging_it() {
        let result = std::panic::catch_unwind(|| {
            team(3, 3, |t| {
                t.phase(4, |k| assert!(k != 2, "chunk 2 fails"));
                t.phase(4, |_| {});
                t.phase(1, |_| {});
                t.finish();
            })
        });
        assert!(result.is_err(), "the panic was lost");
    }
}
