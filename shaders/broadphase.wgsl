// Uniform-grid broadphase: the GPU twin of src/broadphase/grid.rs. Same pair
// set, different algorithm. The GPU inserts every box into every cell it
// covers and reports each pair from its reference cell. The CPU inserts each
// box once, at its min corner, and sweeps with a half stencil. That file's
// documentation describes both and proves that every pair is reported
// exactly once.
//
// Per call: clear buckets and counters; count_cells; exclusive prefix sum of
// the buckets (prefix_sum.wgsl); scatter_cells; find_pairs. Afterwards the
// bucket table holds bucket *ends* (start of bucket k = end of bucket k − 1).
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

struct CellEntry {
    body: u32,
    ix: i32,
    iy: i32,
}

// `entries` is not counted here: the host copies the last bucket end after
// scatter_cells into it (one global atomic per box saved).
struct Counters {
    entries: atomic<u32>,
    pairs: atomic<u32>,
}

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
    for (var iy = y0; iy <= y1; iy++) {
        for (var ix = x0; ix <= x1; ix++) {
            let slot = atomicAdd(&buckets[cell_key(ix, iy)], 1u);
            if slot < capacity.entries {
                store_entry(slot, CellEntry(i, ix, iy));
            }
        }
    }
}

@compute @workgroup_size(256)
fn find_pairs(
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
    for (var iy = y0; iy <= y1; iy++) {
        for (var ix = x0; ix <= x1; ix++) {
            let key = cell_key(ix, iy);
            var start = 0u;
            if key > 0u {
                start = atomicLoad(&buckets[key - 1u]);
            }
            // Past an overflow the tail of `sorted` was never written.
            let end = min(atomicLoad(&buckets[key]), capacity.entries);
            for (var s = start; s < end; s++) {
                let e = load_entry(s);
                if e.body <= i || e.ix != ix || e.iy != iy {
                    continue;
                }
                let b = load_aabb(e.body);
                // Report from the reference cell only: the cell holding the
                // lower-left corner of the intersection.
                if overlaps(a, b) && cell_coord(max(a.min.x, b.min.x)) == ix
                    && cell_coord(max(a.min.y, b.min.y)) == iy {
                    let p = atomicAdd(&counters.pairs, 1u);
                    if p < capacity.pairs {
                        store_pair(p, vec2<u32>(i, e.body));
                    }
                }
            }
        }
    }
}
