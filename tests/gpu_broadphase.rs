//! GPU grid broadphase against its CPU twin and sweep-and-prune: identical
//! sorted pair sets.

mod common;

use common::{Layout, Radii, discs, gpu, scene_suite};
use glam::Vec2;
use mx2d::broadphase::{Aabb, GridBroadphase, GridParams, SweepAndPrune, brute_force_pairs};
use mx2d::gpu::prefix_sum;
use mx2d::gpu::timing::{PassProfiler, PassTimings};
use mx2d::gpu::{GpuContext, GpuError, GpuGridBroadphase, GpuOptions, TimingSource};

#[test]
fn gpu_pairs_equal_cpu_grid_and_sweep_and_prune() {
    let Some(ctx) = gpu(GpuOptions::default()) else {
        return;
    };
    let mut gpu_grid = GpuGridBroadphase::new(&ctx).map_err(|e| e.to_string()).unwrap();
    let mut cpu_grid = GridBroadphase::new();
    let mut sap = SweepAndPrune::new();
    let (mut g, mut c, mut s) = (Vec::new(), Vec::new(), Vec::new());
    for (name, boxes) in scene_suite(&[100, 10_000, 100_000]) {
        let report = gpu_grid.find_pairs(&ctx, &boxes, &mut g).map_err(|e| format!("{name}: {e}")).unwrap();
        cpu_grid.find_pairs(&boxes, &mut c);
        sap.find_pairs(&boxes, &mut s);
        eprintln!("{name}: {} pairs, {:?}", g.len(), report);
        assert_eq!(c, s, "cpu grid vs sweep-and-prune: {name}");
        assert_eq!(g.len(), c.len(), "pair count gpu vs cpu: {name}");
        assert_eq!(g, c, "gpu vs cpu grid: {name}");
    }
}

#[test]
fn overflowing_pair_buffer_is_grown_and_every_pair_found() {
    let Some(ctx) = gpu(GpuOptions::default()) else {
        return;
    };
    let mut gpu_grid = GpuGridBroadphase::new(&ctx).map_err(|e| e.to_string()).unwrap();
    // 2000 discs of radius 1 within 0.5 of each other: all 1,999,000 pairs,
    // far over the first guess of 8,000.
    let boxes = discs(2000, Layout::OneCell { origin: Vec2::new(-3.0, 9.0), extent: 0.5 }, Radii::Uniform(1.0), 5);
    let mut pairs = Vec::new();
    let report = gpu_grid.find_pairs(&ctx, &boxes, &mut pairs).map_err(|e| e.to_string()).unwrap();
    assert!(report.reruns >= 1, "{report:?}");
    assert_eq!(pairs.len(), 2000 * 1999 / 2);
    assert_eq!(pairs, brute_force_pairs(&boxes));
    // The grown buffers are kept: the same scene again needs no rerun.
    let report = gpu_grid.find_pairs(&ctx, &boxes, &mut pairs).map_err(|e| e.to_string()).unwrap();
    assert_eq!(report.reruns, 0);
}

#[test]
fn two_dimensional_dispatch_gives_the_same_pairs() {
    // At most 20 workgroups per dimension: 10^4 boxes need 40 → a 20 × 2 grid,
    // and the prefix sum's first level (≥ 10^4 buckets) a 2D grid too.
    let Some(ctx) = gpu(GpuOptions { max_workgroups_per_dimension: Some(20), ..Default::default() }) else {
        return;
    };
    let mut gpu_grid = GpuGridBroadphase::new(&ctx).map_err(|e| e.to_string()).unwrap();
    let boxes =
        discs(10_000, Layout::Spread { origin: Vec2::new(-50.0, -80.0), density: 0.5 }, Radii::Varying(0.1, 1.5), 11);
    let (mut g, mut c) = (Vec::new(), Vec::new());
    gpu_grid.find_pairs(&ctx, &boxes, &mut g).map_err(|e| e.to_string()).unwrap();
    GridBroadphase::new().find_pairs(&boxes, &mut c);
    assert!(!c.is_empty());
    assert_eq!(g, c);
}

#[test]
fn arrays_split_over_several_bindings_give_the_same_pairs() {
    // Storage bindings of at most 128 KiB: 9000 boxes (144 kB) take two
    // pages of 8192; the ~2·10⁴ cell entries of 24 bytes (uniform discs of
    // radius 0.5 in cells of 2 m cover 2.25 cells on average) take four
    // pages of 5461, the ~2·10⁴ pairs of the dense scene two pages of 16384,
    // and the clustered scene's hashed table (2^16 buckets, 256 KiB) is
    // shrunk to 2^15. Boxes on two pages and entries within four leave a
    // narrow window, 8192 < n ≤ 9709 boxes of 2.25 entries: hence 9000.
    let limit = 128 * 1024;
    let Some(ctx) = gpu(GpuOptions { max_binding_bytes: Some(limit), ..Default::default() }) else {
        return;
    };
    let mut gpu_grid = GpuGridBroadphase::new(&ctx).map_err(|e| e.to_string()).unwrap();
    let scenes = [
        ("spread", Layout::Spread { origin: Vec2::new(-50.0, -80.0), density: 1.2 }),
        ("clustered", Layout::Clustered { clusters: 7, sigma: 12.0, origin: Vec2::new(30.0, -5.0) }),
    ];
    let (mut g, mut c, mut s) = (Vec::new(), Vec::new(), Vec::new());
    let (mut most_entries, mut most_pairs, mut shrunk) = (0, 0, false);
    for (name, layout) in scenes {
        let boxes = discs(9000, layout, Radii::Uniform(0.5), 17);
        let report = gpu_grid.find_pairs(&ctx, &boxes, &mut g).map_err(|e| format!("{name}: {e}")).unwrap();
        let (table, gpu_table) = (gpu_grid.params().table_size, gpu_grid.gpu_params().table_size);
        eprintln!("{name}: {} pairs, {report:?}, table {table} → {gpu_table}", g.len());
        GridBroadphase::new().find_pairs(&boxes, &mut c);
        SweepAndPrune::new().find_pairs(&boxes, &mut s);
        assert_eq!(c, s, "cpu grid vs sweep-and-prune: {name}");
        assert_eq!(g.len(), c.len(), "pair count gpu vs cpu: {name}");
        assert_eq!(g, c, "gpu vs cpu grid: {name}");
        assert!(u64::from(gpu_table) * 4 <= limit, "{name}");
        most_entries = most_entries.max(report.entries as u64);
        most_pairs = most_pairs.max(report.pairs as u64);
        shrunk |= gpu_table < table;
        // Steady state: the same input again needs no rerun.
        let report = gpu_grid.find_pairs(&ctx, &boxes, &mut g).map_err(|e| format!("{name}: {e}")).unwrap();
        assert_eq!(report.reruns, 0, "{name}");
        assert_eq!(g, c, "gpu vs cpu grid, second call: {name}");
    }
    // The split paths really ran: boxes (9000 > 8192 per page), entries and
    // pairs on more than one page, and a shrunk bucket table.
    assert!(most_entries > limit / 24, "{most_entries} entries");
    assert!(most_pairs > limit / 8, "{most_pairs} pairs");
    assert!(shrunk, "no scene needed a smaller bucket table");
}

#[test]
fn input_beyond_every_page_is_a_precise_error() {
    // 16 KiB bindings × 4 pages hold 4096 boxes; 10^4 boxes do not fit.
    let Some(ctx) = gpu(GpuOptions { max_binding_bytes: Some(16 * 1024), ..Default::default() }) else {
        return;
    };
    let mut gpu_grid = GpuGridBroadphase::new(&ctx).map_err(|e| e.to_string()).unwrap();
    let boxes = discs(10_000, Layout::Spread { origin: Vec2::ZERO, density: 0.5 }, Radii::Uniform(0.5), 3);
    let mut pairs = Vec::new();
    match gpu_grid.find_pairs(&ctx, &boxes, &mut pairs) {
        Err(GpuError::TooLargeSplit { what, bytes, bindings, binding_bytes }) => {
            assert_eq!((what, bytes, bindings, binding_bytes), ("aabbs", 160_000, 4, 16 * 1024));
        }
        other => panic!("expected TooLargeSplit, got {other:?}"),
    }
}

/// Maps a MAP_READ buffer the test filled by a copy and returns its words.
fn read_words(ctx: &GpuContext, buffer: &wgpu::Buffer, words: usize) -> Vec<u32> {
    let (sender, receiver) = std::sync::mpsc::channel();
    buffer.slice(..(words * 4) as u64).map_async(wgpu::MapMode::Read, move |r| {
        let _ = sender.send(r);
    });
    ctx.wait("test readback").map_err(|e| e.to_string()).unwrap();
    receiver.recv().map_err(|e| e.to_string()).unwrap().map_err(|e| e.to_string()).unwrap();
    let out = bytemuck::cast_slice::<u8, u32>(&buffer.slice(..(words * 4) as u64).get_mapped_range().unwrap()).to_vec();
    buffer.unmap();
    out
}

fn buffer(ctx: &GpuContext, label: &str, size: u64, usage: wgpu::BufferUsages) -> wgpu::Buffer {
    ctx.device.create_buffer(&wgpu::BufferDescriptor { label: Some(label), size, usage, mapped_at_creation: false })
}

/// The no-round-trip path: boxes already in a GPU buffer of the caller, the
/// broadphase recorded into the caller's encoder, the pairs consumed on the
/// GPU (here: copied by the same encoder into the caller's own buffer, as a
/// consumer pass would read them). One submission; the pair set must equal
/// the CPU grid's exactly. Then a pair buffer sized too small: the counter
/// read on request reports the true count, grows the buffer, and the next
/// encoded run holds every pair.
#[test]
fn resident_path_encodes_into_the_callers_encoder_with_no_host_round_trip() {
    let Some(ctx) = gpu(GpuOptions::default()) else {
        return;
    };
    let boxes =
        discs(20_000, Layout::Spread { origin: Vec2::new(7.0, -3.0), density: 0.9 }, Radii::Varying(0.1, 0.9), 23);
    let mut cpu = Vec::new();
    GridBroadphase::new().find_pairs(&boxes, &mut cpu);
    let source = buffer(
        &ctx,
        "caller's boxes",
        (boxes.len() * 16) as u64,
        wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST,
    );
    ctx.queue.write_buffer(&source, 0, bytemuck::cast_slice(&boxes));
    let mut compared = 0;
    for expected_pairs in [4 * boxes.len() as u64, 1024] {
        // Fresh each time: buffers only grow.
        let mut gpu_grid = GpuGridBroadphase::new(&ctx).map_err(|e| e.to_string()).unwrap();
        gpu_grid
            .prepare_resident(&ctx, GridParams::for_aabbs(&boxes), boxes.len(), expected_pairs)
            .map_err(|e| e.to_string())
            .unwrap();
        for attempt in 0..2 {
            let capacity = gpu_grid.pair_capacity();
            let counts = buffer(&ctx, "counts", 8, wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST);
            let pairs =
                buffer(&ctx, "pairs", capacity * 8, wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST);
            let mut encoder = ctx.device.create_command_encoder(&Default::default());
            gpu_grid.copy_boxes(&mut encoder, &source, boxes.len() as u64);
            gpu_grid.encode(&ctx, &mut encoder).map_err(|e| e.to_string()).unwrap();
            encoder.copy_buffer_to_buffer(gpu_grid.counters(), 0, &counts, 0, 8);
            let page = gpu_grid.pair_page_elems();
            for (k, p) in gpu_grid.pair_pages().enumerate() {
                let first = k as u64 * page;
                if first < capacity {
                    encoder.copy_buffer_to_buffer(p, 0, &pairs, first * 8, (capacity - first).min(page) * 8);
                }
            }
            ctx.queue.submit([encoder.finish()]);
            let found = u64::from(read_words(&ctx, &counts, 2)[1]);
            assert_eq!(found, cpu.len() as u64, "expected_pairs {expected_pairs}, attempt {attempt}");
            if found <= capacity {
                let words = read_words(&ctx, &pairs, 2 * found as usize);
                let mut got: Vec<[u32; 2]> = words.chunks_exact(2).map(|w| [w[0], w[1]]).collect();
                got.sort_unstable();
                assert_eq!(got, cpu, "expected_pairs {expected_pairs}, attempt {attempt}");
                compared += 1;
                break;
            }
            // Overflowed (only the small guess): the count on request is
            // exact, and it grows the buffers for the next run.
            assert_eq!((expected_pairs, attempt), (1024, 0), "an overflow where none was expected");
            let (_, counted) = gpu_grid.read_counts(&ctx).map_err(|e| e.to_string()).unwrap();
            assert_eq!(counted, found);
            assert!(gpu_grid.pair_capacity() >= found);
        }
    }
    assert_eq!(compared, 2, "each pair-buffer size ended with a complete run");
    assert!(cpu.len() > 1024, "the small guess must overflow: {} pairs", cpu.len());
}

/// Per-pass timing: the four passes, in order, each timed, summing to the
/// run's time when timestamps time them (the sum is the definition, so up to
/// rounding: 1e-9 ms); with the wall-clock fallback, the same passes, each
/// run on its own, and the same pairs either way.
#[test]
fn profiled_runs_time_each_pass_and_find_the_same_pairs() {
    let Some(ctx) = gpu(GpuOptions::default()) else {
        return;
    };
    let mut gpu_grid = GpuGridBroadphase::new(&ctx).map_err(|e| e.to_string()).unwrap();
    let boxes =
        discs(5000, Layout::Clustered { clusters: 4, sigma: 8.0, origin: Vec2::ZERO }, Radii::Varying(0.05, 0.7), 31);
    let mut cpu = Vec::new();
    GridBroadphase::new().find_pairs(&boxes, &mut cpu);
    // count, the scan level by level (up, then down), scatter, emission.
    let check_names = |passes: &PassTimings| {
        let names: Vec<&str> = passes.passes.iter().map(|p| p.name).collect();
        assert_eq!(names.first(), Some(&"count_cells"), "{names:?}");
        assert_eq!(names[names.len() - 2..], ["scatter_cells", "find_pairs"], "{names:?}");
        let scan = &names[1..names.len() - 2];
        assert!(scan.len() % 2 == 1, "{names:?}");
        let levels = scan.len().div_ceil(2) as u32;
        assert_eq!(scan, prefix_sum::profiled_pass_names(256u64.pow(levels - 1) + 1), "{names:?}");
    };
    let mut pairs = Vec::new();
    gpu_grid.upload(&ctx, &boxes).map_err(|e| e.to_string()).unwrap();
    let (report, passes) = gpu_grid.run_profiled(&ctx).map_err(|e| e.to_string()).unwrap();
    check_names(&passes);
    assert!(passes.passes.iter().all(|p| p.ms >= 0.0), "{passes:?}");
    if ctx.has_timestamps() {
        assert_eq!(passes.source, Some(TimingSource::Timestamps));
        assert!((passes.total_ms() - report.timing.ms).abs() <= 1e-9, "{passes:?} vs {report:?}");
        assert!(passes.total_ms() > 0.0, "{passes:?}");
    }
    gpu_grid.read_pairs(&ctx, report.pairs, &mut pairs).map_err(|e| e.to_string()).unwrap();
    assert_eq!(pairs, cpu);

    gpu_grid.set_profiler(PassProfiler::wall_clock());
    let (report, passes) = gpu_grid.run_profiled(&ctx).map_err(|e| e.to_string()).unwrap();
    assert_eq!(passes.source, Some(TimingSource::Wall));
    check_names(&passes);
    // Each pass waited for on its own takes some host time.
    assert!(passes.passes.iter().all(|p| p.ms > 0.0), "{passes:?}");
    assert_eq!(report.timing.source, TimingSource::Wall);
    gpu_grid.read_pairs(&ctx, report.pairs, &mut pairs).map_err(|e| e.to_string()).unwrap();
    assert_eq!(pairs, cpu);
    // `run` with a wall-clock profiler times the whole submission, in one piece.
    assert_eq!(gpu_grid.run(&ctx).map_err(|e| e.to_string()).unwrap().pairs, cpu.len());
}

/// Entries store their cell as a 16-bit offset per axis: a box over more
/// than 65,536 cells on an axis (possible only with a caller's grid) is an
/// error naming the pass, not a wrong pair set.
#[test]
fn a_box_spanning_too_many_cells_is_an_error() {
    let Some(ctx) = gpu(GpuOptions::default()) else {
        return;
    };
    let mut gpu_grid = GpuGridBroadphase::new(&ctx).map_err(|e| e.to_string()).unwrap();
    let boxes = [Aabb::new(Vec2::ZERO, Vec2::new(100.0, 0.5)), Aabb::from_disc(Vec2::new(3.0, 0.0), 0.5)];
    let cell = 1e-3f32;
    let params = GridParams {
        cell_size: cell,
        inv_cell_size: 1.0 / cell,
        origin_x: 0,
        origin_y: 0,
        width: 0,
        table_size: 1 << 12,
        dense: 0,
        box_count: 0,
    };
    gpu_grid.prepare_resident(&ctx, params, boxes.len(), 16).map_err(|e| e.to_string()).unwrap();
    let source = buffer(&ctx, "boxes", 32, wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST);
    ctx.queue.write_buffer(&source, 0, bytemuck::cast_slice(&boxes));
    let mut encoder = ctx.device.create_command_encoder(&Default::default());
    gpu_grid.copy_boxes(&mut encoder, &source, 2);
    gpu_grid.encode(&ctx, &mut encoder).map_err(|e| e.to_string()).unwrap();
    ctx.queue.submit([encoder.finish()]);
    match gpu_grid.read_counts(&ctx) {
        Err(GpuError::Runtime { kernel, message }) => {
            assert_eq!(kernel, "count_cells");
            assert!(message.contains("65536 cells"), "{message}");
        }
        other => panic!("expected a span error, got {other:?}"),
    }
}

/// Units: the same scene in metres, in 1024ths and in 1024s of a metre gives
/// the same pair set on the GPU. Powers of two scale every f32 coordinate
/// exactly (no rounding), so equality is exact, touching pairs included.
#[test]
fn pairs_do_not_depend_on_the_unit_of_length() {
    let Some(ctx) = gpu(GpuOptions::default()) else {
        return;
    };
    let mut gpu_grid = GpuGridBroadphase::new(&ctx).map_err(|e| e.to_string()).unwrap();
    let boxes =
        discs(5000, Layout::Spread { origin: Vec2::new(-20.0, 4.0), density: 0.8 }, Radii::Varying(0.1, 0.8), 41);
    let mut reference = Vec::new();
    gpu_grid.find_pairs(&ctx, &boxes, &mut reference).map_err(|e| e.to_string()).unwrap();
    assert!(!reference.is_empty());
    for scale in [1024.0f32, 1.0 / 1024.0] {
        let scaled: Vec<Aabb> = boxes.iter().map(|b| Aabb::new(b.min * scale, b.max * scale)).collect();
        let mut pairs = Vec::new();
        gpu_grid.find_pairs(&ctx, &scaled, &mut pairs).map_err(|e| e.to_string()).unwrap();
        assert_eq!(pairs, reference, "scale {scale}");
    }
}
