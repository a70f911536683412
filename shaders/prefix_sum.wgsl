// Exclusive prefix sum, one level of a portable multi-level scan.
//
// scan_blocks: each 256-element block is scanned in workgroup memory, written
// back exclusive, and its total stored in `block_sums`. The host scans
// `block_sums` with the same kernel (recursively, until one block remains),
// then add_block_offsets adds each block's exclusive offset to its elements.
// No workgroup ever waits for another (no decoupled look-back): correct on
// adapters without forward-progress guarantees, such as lavapipe.

struct ScanParams {
    count: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

@group(0) @binding(0) var<uniform> scan: ScanParams;
@group(0) @binding(1) var<storage, read_write> data: array<u32>;
@group(0) @binding(2) var<storage, read_write> block_sums: array<u32>;

var<workgroup> partial: array<u32, 256>;

@compute @workgroup_size(256)
fn scan_blocks(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) local: u32,
) {
    let block = workgroup.y * groups.x + workgroup.x;
    let i = block * 256u + local;
    var value = 0u;
    if i < scan.count {
        value = data[i];
    }
    partial[local] = value;
    workgroupBarrier();
    // Hillis–Steele inclusive scan; the loop bound is uniform, so the
    // barriers are in uniform control flow.
    for (var offset = 1u; offset < 256u; offset = offset * 2u) {
        var left = 0u;
        if local >= offset {
            left = partial[local - offset];
        }
        workgroupBarrier();
        partial[local] = partial[local] + left;
        workgroupBarrier();
    }
    if i < scan.count {
        data[i] = partial[local] - value;
    }
    if local == 255u && block * 256u < scan.count {
        block_sums[block] = partial[255];
    }
}

@compute @workgroup_size(256)
fn add_block_offsets(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) local: u32,
) {
    let block = workgroup.y * groups.x + workgroup.x;
    let i = block * 256u + local;
    if i < scan.count {
        data[i] = data[i] + block_sums[block];
    }
}
