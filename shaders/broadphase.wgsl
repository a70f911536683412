// Uniform-grid broadphase: the GPU twin of src/broadphase/grid.rs. Same pair
// set, different algorithm. The GPU inserts every box into every cell it
// covers and reports each pair from its reference cell. The CPU inserts each
// box once, at its min corner, and sweeps with a half stencil. That file's
// documentation describes both and proves that every pair is reported
// exactly once.
//
// Per call, one compute pass each: clear buckets and counters; count_cells
// (per box); exclusive prefix sum of the buckets (prefix_sum.wgsl);
// scatter_cells (per box; the host then copies the last bucket end, the
// entry count, into the counters); find_pairs (per sorted entry).
// Afterwards the bucket table holds bucket *ends* (start of bucket k = end
// of bucket k − 1).
// Overflow of `sorted` or `pairs` is never silent: the counters keep counting
// past the capacities, the host compares and reruns with larger buffers.
//
// Split buffers: `aabbs`, `sorted` and `pairs` can each exceed one storage
// binding (max_storage_buffer_binding_size, 128 MiB on lavapipe; 10^7 boxes
// are 160 MB of boxes alone). Each is bound as PAGES = 4 separate bindings of
// at most the limit (src/gpu/buffers.rs, PagedBuffer); element i lives in
// page i / page_size at i % page_size, and the load_/store_ helpers below
// select the binding. WGSL has no binding arrays of storage buffers without
// extra features, hence the fixed page count and the switch. The bucket
// table is not paged: the host shrinks it to one binding (hashed keys; see
// GpuGridBroadphase::upload), which also keeps the prefix sum single-binding.

struct GridParams {
    cell_size: f32,
    inv_cell_size: f32,
    origin_x: i32,
    origin_y: i32,
    width: u32,
    table_size: u32,
    dense: u32,
    box_count: u32,
}

struct Capacities {
    entries: u32,
    pairs: u32,
    // Elements per page of each split array.
    aabb_page: u32,
    entry_page: u32,
    pair_page: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

struct Aabb {
    min: vec2<f32>,
    max: vec2<f32>,
}

// One (box, cell) entry of the counting sort, 24 bytes. It carries the box
// itself, so that find_pairs streams through `sorted` and never reads
// `aabbs` at the random index of a partner (on a GPU with random body order,
// those reads were the pair pass's cost). The cell is stored as its offset
// from the box's lower-left covered cell, 16 bits per axis (count_cells
// flags a box spanning more than 65,536 cells on an axis).
struct CellEntry {
    min: vec2<f32>,
    max: vec2<f32>,
    body: u32,
    cell_offset: u32,
}

// `entries` is not counted here: the host copies the last bucket end after
// scatter_cells into it (one global atomic per box saved). `pairs` grows by
// one atomic per workgroup of find_pairs, not per pair. `span_overflow` is
// set when a box covers more than MAX_SPAN + 1 cells on an axis.
struct Counters {
    entries: atomic<u32>,
    pairs: atomic<u32>,
    span_overflow: atomic<u32>,
}

const MAX_SPAN: i32 = 65535;

@group(0) @binding(0) var<uniform> grid: GridParams;
@group(0) @binding(1) var<uniform> capacity: Capacities;
@group(0) @binding(2) var<storage, read> aabbs0: array<Aabb>;
@group(0) @binding(3) var<storage, read> aabbs1: array<Aabb>;
@group(0) @binding(4) var<storage, read> aabbs2: array<Aabb>;
@group(0) @binding(5) var<storage, read> aabbs3: array<Aabb>;
@group(0) @binding(6) var<storage, read_write> buckets: array<atomic<u32>>;
@group(0) @binding(7) var<storage, read_write> sorted0: array<CellEntry>;
@group(0) @binding(8) var<storage, read_write> sorted1: array<CellEntry>;
@group(0) @binding(9) var<storage, read_write> sorted2: array<CellEntry>;
@group(0) @binding(10) var<storage, read_write> sorted3: array<CellEntry>;
@group(0) @binding(11) var<storage, read_write> pairs0: array<vec2<u32>>;
@group(0) @binding(12) var<storage, read_write> pairs1: array<vec2<u32>>;
@group(0) @binding(13) var<storage, read_write> pairs2: array<vec2<u32>>;
@group(0) @binding(14) var<storage, read_write> pairs3: array<vec2<u32>>;
@group(0) @binding(15) var<storage, read_write> counters: Counters;

fn load_aabb(i: u32) -> Aabb {
    let page = i / capacity.aabb_page;
    let k = i - page * capacity.aabb_page;
    var a: Aabb;
    switch page {
        case 0u: { a = aabbs0[k]; }
        case 1u: { a = aabbs1[k]; }
        case 2u: { a = aabbs2[k]; }
        default: { a = aabbs3[k]; }
    }
    return a;
}

fn load_entry(s: u32) -> CellEntry {
    let page = s / capacity.entry_page;
    let k = s - page * capacity.entry_page;
    var e: CellEntry;
    switch page {
        case 0u: { e = sorted0[k]; }
        case 1u: { e = sorted1[k]; }
        case 2u: { e = sorted2[k]; }
        default: { e = sorted3[k]; }
    }
    return e;
}

fn store_entry(s: u32, e: CellEntry) {
    let page = s / capacity.entry_page;
    let k = s - page * capacity.entry_page;
    switch page {
        case 0u: { sorted0[k] = e; }
        case 1u: { sorted1[k] = e; }
        case 2u: { sorted2[k] = e; }
        default: { sorted3[k] = e; }
    }
}

fn store_pair(p: u32, v: vec2<u32>) {
    let page = p / capacity.pair_page;
    let k = p - page * capacity.pair_page;
    switch page {
        case 0u: { pairs0[k] = v; }
        case 1u: { pairs1[k] = v; }
        case 2u: { pairs2[k] = v; }
        default: { pairs3[k] = v; }
    }
}

const CELL_COORD_LIMIT: f32 = 1073741824.0; // 2^30, as in grid.rs

fn cell_coord(x: f32) -> i32 {
    return i32(clamp(floor(x * grid.inv_cell_size), -CELL_COORD_LIMIT, CELL_COORD_LIMIT));
}

// The cells a box covers, (x0, y0, x1, y1) inclusive: the same range in the
// count, scatter and pair passes, so every pass sees the same entries.
fn covered_cells(a: Aabb) -> vec4<i32> {
    return vec4<i32>(cell_coord(a.min.x), cell_coord(a.min.y), cell_coord(a.max.x), cell_coord(a.max.y));
}

fn hash_cell(ix: i32, iy: i32) -> u32 {
    var h = (bitcast<u32>(ix) * 0x8da6b343u) ^ (bitcast<u32>(iy) * 0xd8163841u);
    h ^= h >> 16u;
    h *= 0x7feb352du;
    return h ^ (h >> 15u);
}

fn cell_key(ix: i32, iy: i32) -> u32 {
    if grid.dense != 0u {
        let k = bitcast<u32>(iy - grid.origin_y) * grid.width + bitcast<u32>(ix - grid.origin_x);
        return min(k, grid.table_size - 1u);
    }
    return hash_cell(ix, iy) & (grid.table_size - 1u);
}

fn is_valid(a: Aabb) -> bool {
    return a.min.x <= a.max.x && a.min.y <= a.max.y;
}

// Closed intervals: touching counts (Aabb::overlaps).
fn overlaps(a: Aabb, b: Aabb) -> bool {
    return a.min.x <= b.max.x && b.min.x <= a.max.x && a.min.y <= b.max.y && b.min.y <= a.max.y;
}

fn box_index(workgroup: vec3<u32>, groups: vec3<u32>, local: u32) -> u32 {
    return (workgroup.y * groups.x + workgroup.x) * 256u + local;
}

@compute @workgroup_size(256)
fn count_cells(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) local: u32,
) {
    let i = box_index(workgroup, groups, local);
    if i >= grid.box_count {
        return;
    }
    let a = load_aabb(i);
    if !is_valid(a) {
        return;
    }
    let cells = covered_cells(a);
    let x0 = cells.x;
    let y0 = cells.y;
    let x1 = cells.z;
    let y1 = cells.w;
    if x1 - x0 > MAX_SPAN || y1 - y0 > MAX_SPAN {
        atomicMax(&counters.span_overflow, 1u);
        return;
    }
    for (var iy = y0; iy <= y1; iy++) {
        for (var ix = x0; ix <= x1; ix++) {
            atomicAdd(&buckets[cell_key(ix, iy)], 1u);
        }
    }
}

@compute @workgroup_size(256)
fn scatter_cells(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) local: u32,
) {
    let i = box_index(workgroup, groups, local);
    if i >= grid.box_count {
        return;
    }
    let a = load_aabb(i);
    if !is_valid(a) {
        return;
    }
    let cells = covered_cells(a);
    let x0 = cells.x;
    let y0 = cells.y;
    let x1 = cells.z;
    let y1 = cells.w;
    if x1 - x0 > MAX_SPAN || y1 - y0 > MAX_SPAN {
        return;
    }
    for (var iy = y0; iy <= y1; iy++) {
        for (var ix = x0; ix <= x1; ix++) {
            let slot = atomicAdd(&buckets[cell_key(ix, iy)], 1u);
            if slot < capacity.entries {
                let offset = (u32(iy - y0) << 16u) | u32(ix - x0);
                store_entry(slot, CellEntry(a.min, a.max, i, offset));
            }
        }
    }
}

// The cell of entry `e`: its box's lower-left covered cell plus the offset.
fn entry_cell(e: CellEntry) -> vec2<i32> {
    let origin = vec2<i32>(cell_coord(e.min.x), cell_coord(e.min.y));
    return origin + vec2<i32>(i32(e.cell_offset & 0xffffu), i32(e.cell_offset >> 16u));
}

// The partners of sorted entry `s` (cell `cell`, box `e`): the later entries
// of its bucket, up to `end`, in the same cell, whose box overlaps and whose
// intersection has its lower-left corner in this cell (the reference cell:
// exactly one cell reports a pair). Counts them, or, with `emit`, stores
// them from pair slot `first` on.
fn partners(s: u32, e: CellEntry, cell: vec2<i32>, end: u32, emit: bool, first: u32) -> u32 {
    var found = 0u;
    for (var t = s + 1u; t < end; t++) {
        let f = load_entry(t);
        let a = Aabb(e.min, e.max);
        let b = Aabb(f.min, f.max);
        if overlaps(a, b) && cell_coord(max(a.min.x, b.min.x)) == cell.x
            && cell_coord(max(a.min.y, b.min.y)) == cell.y && all(entry_cell(f) == cell) {
            if emit {
                let p = first + found;
                if p < capacity.pairs {
                    store_pair(p, vec2<u32>(min(e.body, f.body), max(e.body, f.body)));
                }
            }
            found += 1u;
        }
    }
    return found;
}

var<workgroup> group_pairs: atomic<u32>;
var<workgroup> group_first: u32;

// One thread per sorted entry (dispatched over the entry capacity): every
// pair of boxes sharing its reference cell c has one entry each in c's
// bucket, so the pair is found once, by the earlier of the two entries.
// Reads are sequential in `sorted` (a bucket's entries are contiguous), so
// the pass streams whatever the body order. Pair slots are taken per
// workgroup (count, workgroup-local offsets, one global atomic, emit), not
// one global atomic per pair.
@compute @workgroup_size(256)
fn find_pairs(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) local: u32,
) {
    let s = box_index(workgroup, groups, local);
    // Entries stored: the last bucket end, within the capacity (past an
    // overflow the tail of `sorted` was never written).
    let stored = min(atomicLoad(&buckets[grid.table_size - 1u]), capacity.entries);
    var e: CellEntry;
    var cell = vec2<i32>(0, 0);
    var end = 0u;
    var mine = 0u;
    if s < stored {
        e = load_entry(s);
        cell = entry_cell(e);
        end = min(atomicLoad(&buckets[cell_key(cell.x, cell.y)]), capacity.entries);
        mine = partners(s, e, cell, end, false, 0u);
    }
    var offset = 0u;
    if mine > 0u {
        offset = atomicAdd(&group_pairs, mine);
    }
    workgroupBarrier();
    if local == 0u {
        let total = atomicLoad(&group_pairs);
        if total > 0u {
            group_first = atomicAdd(&counters.pairs, total);
        }
    }
    let first = workgroupUniformLoad(&group_first);
    if mine > 0u {
        partners(s, e, cell, end, true, first + offset);
    }
}
