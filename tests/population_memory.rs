//! The CPU twin's memory per ball, [`CPU_BYTES_PER_BALL`], is what a
//! population really allocates: the size check that refuses a population over
//! the machine's memory before any allocation (issue 8) multiplies the ball
//! count by it, so a constant that falls behind the code (a new per-ball
//! array) would let a population through that then fails to allocate.
//!
//! Live heap bytes are counted by a global allocator over every thread (the
//! step runs on the pool); the peak over building the world from the scene
//! and stepping it is divided by the ball count.

use mx2d::population::{CPU_BYTES_PER_BALL, cpu};
use mx2d::scene::Scene;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(bytes: usize) {
    let now = LIVE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: forwards to the system allocator and only counts sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            // Both blocks are live during the copy.
            grew(new_size);
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// balls_box with 40,000 balls: the peak live heap of building and stepping
/// it, per ball, lies within [0.8, 1.2] × `CPU_BYTES_PER_BALL` (measured 27
/// Nov 2026: 688 B against 660; after pop9's pair stream and flags 690 B
/// against 764, the stream counted at its worst case). The margin above covers what the constant
/// does not count: the scene's text and definition, the grid's cells (4 bytes
/// a cell, counted separately by the size check) and, while a vector grows,
/// two copies of it. The margin below is there so that a constant overstating
/// the memory (refusing populations that fit) fails too; before the owned
/// pairs the constant was 312, which this test would reject against today's
/// arrays.
#[test]
fn cpu_bytes_per_ball_is_what_a_population_allocates() {
    let count = 40_000u64;
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/balls_box.ron")).unwrap();
    // Warm the pool up first: its threads' stacks and queues are not the
    // population's.
    rayon::broadcast(|_| ());
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let scene = Scene::parse_with_overrides(&text, "balls_box.ron", &[format!("population.count={count}")]).unwrap();
    let mut pop = scene.build_world().unwrap().population.unwrap();
    for _ in 0..3 {
        cpu::step(&mut pop, 1.0 / 60.0).unwrap();
    }
    let peak = PEAK.load(Ordering::Relaxed) - before;
    let per_ball = peak as f64 / count as f64;
    let stated = CPU_BYTES_PER_BALL as f64;
    eprintln!("peak {peak} B over {count} balls: {per_ball:.0} B per ball (CPU_BYTES_PER_BALL {stated})");
    assert!(
        (0.8 * stated..=1.2 * stated).contains(&per_ball),
        "peak {peak} B = {per_ball:.0} B per ball, CPU_BYTES_PER_BALL = {stated}"
    );
    drop(pop);
}
