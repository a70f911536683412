// The population step on the GPU: the twin of src/population/cpu.rs (keep
// the two in step, kernel for kernel, formula for formula). One invocation
// per ball (or per cell: sort_cells, the sweeps), 256 per workgroup,
// flattened 2D dispatch. Every kernel writes only its own ball, except the
// grid's atomic count, the counters, and the Gauss-Seidel sweeps, which write
// the corrections of the balls of the 3 x 3 cells around their cell (one
// dispatch per colour: those blocks are disjoint).

struct Params {
    n: u32,
    cells: u32,
    nx: u32,
    ny: u32,
    origin: vec2<f32>,
    cell: f32,
    h: f32,
    gravity: vec2<f32>,
    resting: f32,
    relaxation: f32,
    bounds_min: vec2<f32>,
    bounds_max: vec2<f32>,
    restitution: f32,
    friction: f32,
    rolling: f32,
    skin: f32,
    field_count: u32,
    obstacle_count: u32,
    kill_count: u32,
    step: u32,
    dt: f32,
    // Start of the live range; n is its end (gpu.rs, Population::live_range).
    first: u32,
    // PopulationParams::push_out (UNBOUNDED_PUSH for infinite: WGSL may
    // assume no infinities).
    push_out: f32,
    // Sleeping (PopulationParams::sleep_time, 0: off; sleep_speed;
    // PopulationParams::wake_overlap).
    sleep_time: f32,
    sleep_speed: f32,
    wake_overlap: f32,
    pad3: u32,
    pad4: u32,
}

// A push-out bound no overlap reaches (gpu.rs `UNBOUNDED_PUSH`).
const UNBOUNDED_PUSH: f32 = 1e20;

// Copy of shaders/fields.wgsl's Field (same encoding).
// struct Field: shaders/field_common.wgsl (prepended when the module is built).

// src/population/obstacle.rs: kind 0 half-plane (a point, b normal),
// 1 circle (a centre, b.x radius, flags 1 = free inside), 2 segment a→b
// with free space on its left.
struct Obstacle {
    kind: u32,
    flags: u32,
    restitution: f32,
    friction: f32,
    a: vec2<f32>,
    b: vec2<f32>,
    velocity: vec2<f32>,
    center: vec2<f32>,
    omega: f32,
    rolling: f32,
    pad: vec2<u32>,
}

const ALIVE: u32 = 0u;
const PENDING: u32 = 1u;
const ESCAPED: u32 = 2u;
const KILLED: u32 = 3u;
const MAX_NEIGHBOURS: u32 = 16u;
const MAX_OBSTACLES: u32 = 8u;
const ACTIVE_SLOP: f32 = 1e-3;
const NONE: u32 = 0xffffffffu;
// cpu::SUPPORT_GAP.
const SUPPORT_GAP: f32 = 1e-3;

@group(0) @binding(0) var<uniform> P: Params;
// Ball state: (x, y, vx, vy) and (angle, omega, radius, inverse mass).
@group(0) @binding(1) var<storage, read_write> pv: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> ang: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> state: array<u32>;
// Written only by the re-sort (resort_commit).
@group(0) @binding(4) var<storage, read_write> release_step: array<u32>;
@group(0) @binding(5) var<storage, read_write> acc: array<vec2<f32>>;
// (x*, v⁻): predicted position and pre-solve velocity.
@group(0) @binding(6) var<storage, read_write> pred: array<vec4<f32>>;
// The position solve's corrections (in place: Gauss-Seidel).
@group(0) @binding(7) var<storage, read_write> dx: array<vec2<f32>>;
// Each ball's index at build (Population::ball_id), moved by the re-sort.
@group(0) @binding(8) var<storage, read_write> ball_id: array<u32>;
// (vx, vy, omega, -) out of the velocity pass.
@group(0) @binding(9) var<storage, read_write> vout: array<vec4<f32>>;
// Contact counts; during the grid build, each ball's rank in its cell.
@group(0) @binding(10) var<storage, read_write> contacts: array<u32>;
@group(0) @binding(11) var<storage, read_write> cell_of: array<u32>;
@group(0) @binding(12) var<storage, read_write> cell_start: array<atomic<u32>>;
@group(0) @binding(13) var<storage, read_write> sorted: array<u32>;
@group(0) @binding(14) var<storage, read_write> neighbours: array<u32>;
@group(0) @binding(15) var<storage, read_write> neighbour_count: array<u32>;
@group(0) @binding(16) var<storage, read_write> obstacle_ids: array<u32>;
@group(0) @binding(17) var<storage, read_write> obstacle_count: array<u32>;
@group(0) @binding(18) var<storage, read> obstacles: array<Obstacle>;
@group(0) @binding(19) var<storage, read> fields: array<Field>;
@group(0) @binding(20) var<storage, read> kill: array<vec4<f32>>;
// [0] contacts dropped from full lists, [1] lowest non-finite ball, [2] the
// largest overlap / smaller radius after any substep, as f32 bits (overlaps
// are >= 0, and non-negative f32s order as their bits: atomicMax).
@group(0) @binding(21) var<storage, read_write> counters: array<atomic<u32>>;
// Each ball's rest timer (Population::rest, s): asleep from sleep_time on.
@group(0) @binding(22) var<storage, read_write> rest: array<f32>;
// Per ball, bit k set where its list entry k is a pair it owns (the other
// ball's id is higher: cpu::owned_pairs), written with the lists
// (find_neighbours): the sweeps skip the other entries without reading the
// other ball's id.
@group(0) @binding(23) var<storage, read_write> owned_mask: array<u32>;
// Per ball, REBOUND_STRIDE slots: the substep's rebound distance of each
// owned list entry, then of each listed obstacle, written once per substep
// by count_predicted and read by both solve sweeps (the CPU twin's
// SweepPair::rebound and obstacle_extra, computed in count_contacts).
@group(0) @binding(24) var<storage, read_write> rebound: array<f32>;
const REBOUND_STRIDE: u32 = MAX_NEIGHBOURS + MAX_OBSTACLES;

// PopulationParams::asleep.
fn asleep(i: u32) -> bool {
    return P.sleep_time > 0.0 && rest[i] >= P.sleep_time;
}

// The inverse mass a ball has in the sweeps and the velocity pass: 0 for a
// sleeper (static; cpu: the records of predict and start_stabilisation).
fn w_of(i: u32, stabilise: bool) -> f32 {
    if asleep(i) {
        return 0.0;
    }
    return ang[i].w;
}

// The invocation's index in a flattened 2D dispatch (cell kernels).
fn thread_index(wg: vec3<u32>, groups: vec3<u32>, local: u32) -> u32 {
    return (wg.y * groups.x + wg.x) * 256u + local;
}

// Per-ball kernels cover the live range first..n only (the release cursor,
// Population::live_range).
fn ball_index(wg: vec3<u32>, groups: vec3<u32>, local: u32) -> u32 {
    return P.first + thread_index(wg, groups, local);
}

fn perp(v: vec2<f32>) -> vec2<f32> {
    return vec2<f32>(-v.y, v.x);
}

// ---- obstacles (obstacle.rs Obstacle::contact): (distance, normal) ----
fn obstacle_contact(o: Obstacle, p: vec2<f32>) -> vec3<f32> {
    switch o.kind {
        case 0u: {
            return vec3<f32>(dot(p - o.a, o.b), o.b);
        }
        case 1u: {
            let r = p - o.a;
            let len = length(r);
            var dir = vec2<f32>(0.0, 1.0);
            if len > 0.0 {
                dir = r / len;
            }
            if (o.flags & 1u) != 0u {
                return vec3<f32>(o.b.x - len, -dir);
            }
            return vec3<f32>(len - o.b.x, dir);
        }
        default: {
            let e = o.b - o.a;
            let len2 = max(dot(e, e), 1.17549435e-38);
            let t = clamp(dot(p - o.a, e) / len2, 0.0, 1.0);
            let c = o.a + e * t;
            if t > 0.0 && t < 1.0 {
                let left = perp(e) / sqrt(len2);
                return vec3<f32>(dot(p - o.a, left), left);
            }
            let r = p - c;
            let d = length(r);
            var normal = perp(e) / sqrt(len2);
            if d > 0.0 {
                normal = r / d;
            }
            return vec3<f32>(d, normal);
        }
    }
}

fn velocity_at(o: Obstacle, p: vec2<f32>) -> vec2<f32> {
    return o.velocity + perp(p - o.center) * o.omega;
}

fn in_reach(o: Obstacle, distance: f32, r: f32) -> bool {
    return o.kind != 2u || distance > -r;
}

// ---- contact law (contact.rs) ----
fn rebound_distance(gap0: f32, vn_pre: f32, h: f32, restitution: f32, push: f32) -> f32 {
    if gap0 < -push {
        return gap0 + push;
    }
    if gap0 > 0.0 && vn_pre < -P.resting {
        let tc = gap0 / (-vn_pre * h);
        if tc < 1.0 {
            return restitution * (-vn_pre) * h * (1.0 - tc);
        }
    }
    return 0.0;
}

fn position_correction(gap: f32, normal: vec2<f32>, w_i: f32, k: f32) -> vec2<f32> {
    if gap < 0.0 && k > 0.0 {
        return normal * (-gap * w_i / k);
    }
    return vec2<f32>(0.0);
}

fn pair_normal(pa: vec2<f32>, pb: vec2<f32>) -> vec3<f32> {
    let r = pa - pb;
    let d = length(r);
    if d > 0.0 {
        return vec3<f32>(d, r / d);
    }
    return vec3<f32>(0.0, 1.0, 0.0);
}

struct Material {
    restitution: f32,
    friction: f32,
    rolling: f32,
}

fn balls_material() -> Material {
    return Material(P.restitution, P.friction, P.rolling);
}

fn mix(o: Obstacle) -> Material {
    return Material(max(P.restitution, o.restitution), sqrt(P.friction * o.friction), max(P.rolling, o.rolling));
}

// (normal impulse, tangent impulse, substep normal impulse)
fn contact_impulse(n: vec2<f32>, rel: vec2<f32>, vn_pre: f32, overlap_pred: f32, k: f32, m: Material) -> vec3<f32> {
    if k <= 0.0 {
        return vec3<f32>(0.0);
    }
    let vn = dot(rel, n);
    let vt = dot(rel, perp(n));
    var target_vn = 0.0;
    if vn_pre < -P.resting {
        target_vn = -m.restitution * vn_pre;
    }
    let p_n = (target_vn - vn) / k;
    let total = overlap_pred / (P.h * k) + max(p_n, 0.0);
    let limit = m.friction * total;
    let p_t = clamp(-vt / (3.0 * k), -limit, limit);
    return vec3<f32>(p_n, p_t, total);
}

// ---- stages ----
@compute @workgroup_size(256)
fn release(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
           @builtin(local_invocation_index) local: u32) {
    let i = ball_index(wg, groups, local);
    if i >= P.n {
        return;
    }
    if state[i] == PENDING && release_step[i] <= P.step {
        state[i] = ALIVE;
    }
}

@compute @workgroup_size(256)
fn apply_fields(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
                @builtin(local_invocation_index) local: u32) {
    let i = ball_index(wg, groups, local);
    if i >= P.n {
        return;
    }
    if state[i] != ALIVE {
        acc[i] = vec2<f32>(0.0);
        return;
    }
    let w = ang[i].w;
    var force = vec2<f32>(0.0);
    for (var k = 0u; k < P.field_count; k++) {
        force += field_force(fields[k], pv[i].xy, pv[i].zw, 1.0 / w, ang[i].z);
    }
    acc[i] = P.gravity + force * w;
}

fn cell_coords(p: vec2<f32>) -> vec2<u32> {
    let c = floor((p - P.origin) / P.cell);
    let cx = min(u32(max(c.x, 0.0)), P.nx - 1u);
    let cy = min(u32(max(c.y, 0.0)), P.ny - 1u);
    return vec2<u32>(cx, cy);
}

// Count per cell (cell_start[c] before the scan), each ball's rank in its cell.
@compute @workgroup_size(256)
fn count_cells(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
               @builtin(local_invocation_index) local: u32) {
    let i = ball_index(wg, groups, local);
    if i >= P.n {
        return;
    }
    if state[i] != ALIVE {
        cell_of[i] = NONE;
        return;
    }
    let c = cell_coords(pv[i].xy);
    let cell = c.y * P.nx + c.x;
    cell_of[i] = cell;
    contacts[i] = atomicAdd(&cell_start[cell], 1u);
}

@compute @workgroup_size(256)
fn scatter(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
           @builtin(local_invocation_index) local: u32) {
    let i = ball_index(wg, groups, local);
    if i >= P.n || cell_of[i] == NONE {
        return;
    }
    sorted[atomicLoad(&cell_start[cell_of[i]]) + contacts[i]] = i;
}

// One invocation per cell: the scatter's atomics rank a cell's balls in
// whatever order the threads ran; an insertion sort of the cell's short
// segment puts them in ball-id order (ball_id: the order the re-sort does
// not change), the CPU twin's order, so that the neighbour lists, the
// sweeps and every sum run in the same order on every run, on either
// backend, re-sorted or not.
@compute @workgroup_size(256)
fn sort_cells(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
              @builtin(local_invocation_index) local: u32) {
    let c = thread_index(wg, groups, local);
    if c >= P.cells {
        return;
    }
    let start = atomicLoad(&cell_start[c]);
    let end = atomicLoad(&cell_start[c + 1u]);
    for (var k = start + 1u; k < end; k++) {
        let key = sorted[k];
        var m = k;
        while m > start && ball_id[sorted[m - 1u]] > ball_id[key] {
            sorted[m] = sorted[m - 1u];
            m--;
        }
        sorted[m] = key;
    }
}

// ---- the re-sort by cell (cpu::resort), every resort_every steps ----
// After release and a grid build: the balls of the live range out of the
// world first (index order, ranked by a prefix sum of their flags), then
// `sorted` (cell, ties by index). The step's scratch is free until
// apply_fields and find_neighbours, so it holds the new order: neighbours
// the flags and ranks, pred / vout / neighbour_count / obstacle_count /
// cell_of the gathered (pv, ang, state, release step, id); resort_commit
// copies them back in place, so the buffers the renderer binds stay the same.

// Flag of each live ball out of the world, and a 0 after the last (the
// exclusive scan then leaves their total at index len).
@compute @workgroup_size(256)
fn resort_mark(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
               @builtin(local_invocation_index) local: u32) {
    let t = thread_index(wg, groups, local);
    let len = P.n - P.first;
    if t > len {
        return;
    }
    var out = 0u;
    if t < len && state[P.first + t] != ALIVE {
        out = 1u;
    }
    neighbours[t] = out;
}

fn resort_copy(src: u32, dst: u32) {
    pred[dst] = pv[src];
    vout[dst] = ang[src];
    neighbour_count[dst] = state[src];
    obstacle_count[dst] = release_step[src];
    cell_of[dst] = ball_id[src];
    // acc is free until apply_fields, after the re-sort.
    acc[dst] = vec2<f32>(rest[src], 0.0);
}

// Thread t moves live ball first + t if it is out of the world (to its rank
// among those), and the t-th ball of `sorted` (after them).
@compute @workgroup_size(256)
fn resort_gather(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
                 @builtin(local_invocation_index) local: u32) {
    let t = thread_index(wg, groups, local);
    let len = P.n - P.first;
    if t >= len {
        return;
    }
    let out_of_world = neighbours[len];
    let src = P.first + t;
    if state[src] != ALIVE {
        resort_copy(src, P.first + neighbours[t]);
    }
    if t < len - out_of_world {
        resort_copy(sorted[t], P.first + out_of_world + t);
    }
}

@compute @workgroup_size(256)
fn resort_commit(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
                 @builtin(local_invocation_index) local: u32) {
    let i = ball_index(wg, groups, local);
    if i >= P.n {
        return;
    }
    pv[i] = pred[i];
    ang[i] = vout[i];
    state[i] = neighbour_count[i];
    release_step[i] = obstacle_count[i];
    ball_id[i] = cell_of[i];
    rest[i] = acc[i].x;
}

// Empties the grid's counts for the step's own grid build (cells + 1 entries).
@compute @workgroup_size(256)
fn clear_cells(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
               @builtin(local_invocation_index) local: u32) {
    let c = thread_index(wg, groups, local);
    if c <= P.cells {
        atomicStore(&cell_start[c], 0u);
    }
}

@compute @workgroup_size(256)
fn find_neighbours(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
                   @builtin(local_invocation_index) local: u32) {
    let i = ball_index(wg, groups, local);
    if i >= P.n {
        return;
    }
    neighbour_count[i] = 0u;
    obstacle_count[i] = 0u;
    owned_mask[i] = 0u;
    if state[i] != ALIVE {
        return;
    }
    let p = pv[i].xy;
    let r = ang[i].z;
    let c = cell_coords(p);
    var count = 0u;
    var dropped = 0u;
    for (var y = max(c.y, 1u) - 1u; y <= min(c.y + 1u, P.ny - 1u); y++) {
        for (var x = max(c.x, 1u) - 1u; x <= min(c.x + 1u, P.nx - 1u); x++) {
            let cell = y * P.nx + x;
            let end = atomicLoad(&cell_start[cell + 1u]);
            for (var k = atomicLoad(&cell_start[cell]); k < end; k++) {
                let j = sorted[k];
                if j == i {
                    continue;
                }
                // cpu.rs: the pair's closing distance in the step joins the skin.
                let reach = r + ang[j].z + P.skin + length(pv[j].zw - pv[i].zw) * P.dt;
                let d = pv[j].xy - p;
                if dot(d, d) < reach * reach {
                    if count < MAX_NEIGHBOURS {
                        neighbours[i * MAX_NEIGHBOURS + count] = j;
                        count++;
                    } else {
                        dropped++;
                    }
                }
            }
        }
    }
    neighbour_count[i] = count;
    var mask = 0u;
    let id = ball_id[i];
    for (var k = 0u; k < count; k++) {
        if ball_id[neighbours[i * MAX_NEIGHBOURS + k]] > id {
            mask |= 1u << k;
        }
    }
    owned_mask[i] = mask;
    var ocount = 0u;
    // Each listed obstacle's distance: a full list keeps the nearest (the
    // farthest listed gives its slot, first such slot on a tie), as
    // cpu::farthest_listed.
    var listed: array<f32, MAX_OBSTACLES>;
    for (var k = 0u; k < P.obstacle_count; k++) {
        let o = obstacles[k];
        let d = obstacle_contact(o, p).x;
        let reach = r + P.skin + (length(pv[i].zw) + length(velocity_at(o, p))) * P.dt;
        if d < reach && in_reach(o, d, reach) {
            if ocount < MAX_OBSTACLES {
                obstacle_ids[i * MAX_OBSTACLES + ocount] = k;
                listed[ocount] = d;
                ocount++;
            } else {
                dropped++;
                var far = 0u;
                for (var slot = 1u; slot < MAX_OBSTACLES; slot++) {
                    if listed[slot] > listed[far] {
                        far = slot;
                    }
                }
                if d < listed[far] {
                    obstacle_ids[i * MAX_OBSTACLES + far] = k;
                    listed[far] = d;
                }
            }
        }
    }
    obstacle_count[i] = ocount;
    if dropped > 0u {
        atomicAdd(&counters[0], dropped);
    }
}

// Mass-splitting counts of the velocity pass, at the predicted positions.
fn count_at(i: u32) -> u32 {
    let p = pred[i].xy;
    let r = ang[i].z;
    var n = 0u;
    for (var k = 0u; k < neighbour_count[i]; k++) {
        let j = neighbours[i * MAX_NEIGHBOURS + k];
        let reach = r + ang[j].z;
        let d = pred[j].xy - p;
        if dot(d, d) < reach * reach {
            n++;
        }
    }
    for (var k = 0u; k < obstacle_count[i]; k++) {
        let o = obstacles[obstacle_ids[i * MAX_OBSTACLES + k]];
        let d = obstacle_contact(o, p).x;
        if d < r && in_reach(o, d, r) {
            n++;
        }
    }
    return max(n, 1u);
}

// The substep's rebound distances (cpu substep::count_contacts) of ball i's
// owned pairs and listed obstacles, from the positions at the substep's start
// and the pre-solve velocities, which the solve sweeps do not change: once
// per substep instead of once per sweep.
fn store_rebounds(i: u32) {
    let base = i * REBOUND_STRIDE;
    let mask = owned_mask[i];
    for (var k = 0u; k < neighbour_count[i]; k++) {
        if ((mask >> k) & 1u) == 0u {
            continue;
        }
        let j = neighbours[i * MAX_NEIGHBOURS + k];
        let sum_r = ang[i].z + ang[j].z;
        let s0 = pair_normal(pv[i].xy, pv[j].xy);
        let vn_pre = dot(pred[i].zw - pred[j].zw, s0.yz);
        let push = P.push_out * min(ang[i].z, ang[j].z);
        rebound[base + k] = rebound_distance(s0.x - sum_r, vn_pre, P.h, P.restitution, push);
    }
    let r_i = ang[i].z;
    for (var k = 0u; k < obstacle_count[i]; k++) {
        let o = obstacles[obstacle_ids[i * MAX_OBSTACLES + k]];
        let m = mix(o);
        let start = obstacle_contact(o, pv[i].xy);
        let vn_pre = dot(pred[i].zw - velocity_at(o, pv[i].xy - start.yz * r_i), start.yz);
        // Obstacles keep their priority: always pushed out in full.
        rebound[base + MAX_NEIGHBOURS + k] = rebound_distance(start.x - r_i, vn_pre, P.h, m.restitution, UNBOUNDED_PUSH);
    }
}

@compute @workgroup_size(256)
fn count_predicted(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
                   @builtin(local_invocation_index) local: u32) {
    let i = ball_index(wg, groups, local);
    if i < P.n {
        contacts[i] = count_at(i);
        store_rebounds(i);
    }
}

// The colour of the Gauss-Seidel sweep this pipeline runs (cpu.rs
// colour_of_cell): cells with (cx mod 3, cy mod 3) = (COLOUR % 3, COLOUR / 3).
override COLOUR: u32 = 0u;

fn at(j: u32, stabilise: bool) -> vec2<f32> {
    if stabilise {
        return pv[j].xy + dx[j];
    }
    return pred[j].xy + dx[j];
}

// cpu.rs `solve_ball`: each listed contact projected in full at the latest
// positions, both balls moved by their inverse-mass shares, in place; then
// the obstacles in turn, in full. Only the thread of the ball's cell runs
// it while its colour's threads run: they touch disjoint 3 x 3 blocks.
fn solve_ball(i: u32, stabilise: bool) {
    let r_i = ang[i].z;
    let w_i = w_of(i, stabilise);
    let base = i * REBOUND_STRIDE;
    let mask = owned_mask[i];
    for (var k = 0u; k < neighbour_count[i]; k++) {
        // Each pair once per sweep, from its ball of lower id (cpu solve_ball).
        if ((mask >> k) & 1u) == 0u {
            continue;
        }
        let j = neighbours[i * MAX_NEIGHBOURS + k];
        // The pair's roles by id, not by slot (see solve_velocities).
        let a = i;
        let b = j;
        let sum_r = ang[a].z + ang[b].z;
        var extra = 0.0;
        if !stabilise {
            extra = rebound[base + k];
        }
        let s = pair_normal(at(a, stabilise), at(b, stabilise));
        let w_a = w_of(a, stabilise);
        let w_b = w_of(b, stabilise);
        let kk = w_a + w_b;
        let gap = s.x - sum_r - extra;
        if gap < 0.0 && kk > 0.0 {
            let lambda = s.yz * (-gap / kk * P.relaxation);
            dx[a] += lambda * w_a;
            dx[b] -= lambda * w_b;
        }
    }
    var p_i = at(i, stabilise);
    var correction = vec2<f32>(0.0);
    for (var k = 0u; k < obstacle_count[i]; k++) {
        let o = obstacles[obstacle_ids[i * MAX_OBSTACLES + k]];
        var extra = 0.0;
        if !stabilise {
            extra = rebound[base + MAX_NEIGHBOURS + k];
        }
        let now = obstacle_contact(o, p_i);
        if in_reach(o, now.x, r_i) {
            let c = position_correction(now.x - r_i - extra, now.yz, w_i, w_i);
            correction += c;
            p_i += c;
        }
    }
    if any(correction != vec2<f32>(0.0)) {
        dx[i] += correction;
    }
}

// One invocation per cell of the colour; its balls in index order.
fn sweep_cell(t: u32, stabilise: bool) {
    let ox = COLOUR % 3u;
    let oy = COLOUR / 3u;
    let ncx = (P.nx + 2u - ox) / 3u;
    let ncy = (P.ny + 2u - oy) / 3u;
    if t >= ncx * ncy {
        return;
    }
    let cell = (oy + 3u * (t / ncx)) * P.nx + ox + 3u * (t % ncx);
    let end = atomicLoad(&cell_start[cell + 1u]);
    for (var k = atomicLoad(&cell_start[cell]); k < end; k++) {
        solve_ball(sorted[k], stabilise);
    }
}

// Pre-stabilisation sweep (one per colour) from the current positions.
@compute @workgroup_size(256)
fn stabilise_colour(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
                    @builtin(local_invocation_index) local: u32) {
    sweep_cell(thread_index(wg, groups, local), true);
}

// v⁻ = v + a h, x* = x + v⁻ h, correction 0 (cpu substep::predict). Reads
// and writes ball i's own state only, so it runs fused into the kernel
// before it (commit_and_predict, finish_and_predict) as on the CPU twin,
// one dispatch fewer.
fn predict_ball(i: u32) {
    dx[i] = vec2<f32>(0.0);
    // A sleeper does not move in the substep (cpu substep::predict).
    if state[i] != ALIVE || asleep(i) {
        pred[i] = pv[i];
        return;
    }
    let v = pv[i].zw + acc[i] * P.h;
    pred[i] = vec4<f32>(pv[i].xy + v * P.h, v);
}

// pv += the stabilisation's corrections, then the substep's prediction.
@compute @workgroup_size(256)
fn commit_and_predict(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
                      @builtin(local_invocation_index) local: u32) {
    let i = ball_index(wg, groups, local);
    if i < P.n {
        pv[i] = vec4<f32>(pv[i].xy + dx[i], pv[i].zw);
        predict_ball(i);
    }
}

// The first substep's prediction when it does not stabilise.
@compute @workgroup_size(256)
fn predict(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
           @builtin(local_invocation_index) local: u32) {
    let i = ball_index(wg, groups, local);
    if i < P.n {
        predict_ball(i);
    }
}

// The substep's position sweep (one per colour) from the predicted positions.
@compute @workgroup_size(256)
fn solve_colour(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
                @builtin(local_invocation_index) local: u32) {
    sweep_cell(thread_index(wg, groups, local), false);
}

@compute @workgroup_size(256)
fn solve_velocities(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
                    @builtin(local_invocation_index) local: u32) {
    let i = ball_index(wg, groups, local);
    if i >= P.n {
        return;
    }
    if state[i] != ALIVE {
        vout[i] = vec4<f32>(pred[i].zw, ang[i].y, 0.0);
        return;
    }
    let r_i = ang[i].z;
    let w_i = w_of(i, false);
    var dv = vec2<f32>(0.0);
    var domega = 0.0;
    var roll = 0.0;
    var worst = 0.0;
    let id_i = ball_id[i];
    for (var k = 0u; k < neighbour_count[i]; k++) {
        let j = neighbours[i * MAX_NEIGHBOURS + k];
        // The pair's roles by ball id (the twin's owner), never by slot: a
        // compiler may fuse `c_a w_a + c_b w_b` into fma(c_a, w_a, c_b w_b),
        // which is not symmetric in a and b, so roles by slot made a
        // re-sort change the results on an NVIDIA H200 (population_resort).
        var a = i;
        var b = j;
        if ball_id[j] < id_i {
            a = j;
            b = i;
        }
        let sum_r = ang[a].z + ang[b].z;
        let s = pair_normal(pred[a].xy + dx[a], pred[b].xy + dx[b]);
        worst = max(worst, (sum_r - s.x) / min(ang[a].z, ang[b].z));
        let overlap_pred = max(sum_r - length(pred[a].xy - pred[b].xy), 0.0);
        if overlap_pred <= 0.0 && s.x > sum_r * (1.0 + ACTIVE_SLOP) {
            continue;
        }
        let n = s.yz;
        let t = perp(n);
        let va = pred[a].zw + dx[a] / P.h;
        let vb = pred[b].zw + dx[b] / P.h;
        let rel = (va - t * (ang[a].z * ang[a].y)) - (vb + t * (ang[b].z * ang[b].y));
        let kk = f32(contacts[a]) * w_of(a, false) + f32(contacts[b]) * w_of(b, false);
        let p = contact_impulse(n, rel, dot(pred[a].zw - pred[b].zw, n), overlap_pred, kk, balls_material());
        let impulse = n * p.x + t * p.y;
        if i == a {
            dv += impulse * w_i;
        } else {
            dv -= impulse * w_i;
        }
        domega += -2.0 * w_i * p.y / r_i;
        roll += P.rolling * p.z * 2.0 * w_i / (r_i * r_i);
    }
    // A sleeper keeps velocity and spin 0 (static; cpu finish_substep):
    // its pairs' overlaps count, its obstacles are not visited.
    if asleep(i) {
        vout[i] = vec4<f32>(pred[i].zw, ang[i].y, 0.0);
        if worst > 0.0 {
            atomicMax(&counters[2], bitcast<u32>(worst));
        }
        return;
    }
    // Obstacles after the balls, in turn and in full (infinite mass, priority).
    let p_i = pred[i].xy + dx[i];
    var v_i = pred[i].zw + dx[i] / P.h + dv;
    var spin = ang[i].y + domega;
    for (var k = 0u; k < obstacle_count[i]; k++) {
        let o = obstacles[obstacle_ids[i * MAX_OBSTACLES + k]];
        let now = obstacle_contact(o, p_i);
        if !in_reach(o, now.x, r_i) {
            continue;
        }
        worst = max(worst, (r_i - now.x) / r_i);
        let overlap_pred = max(r_i - obstacle_contact(o, pred[i].xy).x, 0.0);
        if overlap_pred <= 0.0 && now.x > r_i * (1.0 + ACTIVE_SLOP) {
            continue;
        }
        let m = mix(o);
        let n = now.yz;
        let t = perp(n);
        let surface_velocity = velocity_at(o, p_i - n * r_i);
        let rel = v_i - t * (r_i * spin) - surface_velocity;
        let p = contact_impulse(n, rel, dot(pred[i].zw - surface_velocity, n), overlap_pred, w_i, m);
        v_i += (n * p.x + t * p.y) * w_i;
        spin += -2.0 * w_i * p.y / r_i;
        roll += m.rolling * p.z * 2.0 * w_i / (r_i * r_i);
    }
    vout[i] = vec4<f32>(v_i, spin - sign(spin) * min(roll, abs(spin)), 0.0);
    if worst > 0.0 {
        atomicMax(&counters[2], bitcast<u32>(worst));
    }
}

@compute @workgroup_size(256)
fn finish_substep(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
                  @builtin(local_invocation_index) local: u32) {
    let i = ball_index(wg, groups, local);
    if i < P.n {
        finish_ball(i);
    }
}

// finish_substep, then the next substep's prediction, when that substep
// does not stabilise first (cpu: the finish phase predicts its chunk).
@compute @workgroup_size(256)
fn finish_and_predict(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
                      @builtin(local_invocation_index) local: u32) {
    let i = ball_index(wg, groups, local);
    if i < P.n {
        finish_ball(i);
        predict_ball(i);
    }
}

fn finish_ball(i: u32) {
    let correction = dx[i];
    // Cleared for the next substep's stabilisation sweep.
    dx[i] = vec2<f32>(0.0);
    if state[i] != ALIVE {
        return;
    }
    pv[i] = vec4<f32>(pred[i].xy + correction, vout[i].xy);
    let w = vout[i].z;
    ang[i] = vec4<f32>(ang[i].x + w * P.h, w, ang[i].zw);
}

// cpu::wake: after the neighbour lists, a sleeper wakes (timer 0) when a
// listed ball moves faster than sleep_speed, or a listed ball or obstacle overlaps it by more than
// wake_overlap of the smaller radius, or a listed obstacle moves. Reads
// positions, velocities and radii only; writes its own timer.
@compute @workgroup_size(256)
fn wake(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
        @builtin(local_invocation_index) local: u32) {
    let i = ball_index(wg, groups, local);
    if i >= P.n || state[i] != ALIVE || !asleep(i) {
        return;
    }
    let p = pv[i].xy;
    let r = ang[i].z;
    let a = acc[i];
    // Held up: a touching contact whose normal opposes the acceleration.
    var supported = all(a == vec2<f32>(0.0));
    var woken = false;
    let touching = SUPPORT_GAP * r;
    for (var k = 0u; k < neighbour_count[i]; k++) {
        let j = neighbours[i * MAX_NEIGHBOURS + k];
        let s = pair_normal(p, pv[j].xy);
        let gap = s.x - r - ang[j].z;
        let v = pv[j].zw;
        if dot(v, v) > P.sleep_speed * P.sleep_speed || -gap > P.wake_overlap * min(r, ang[j].z) {
            woken = true;
        }
        if gap <= touching && dot(s.yz, a) < 0.0 {
            supported = true;
        }
    }
    for (var k = 0u; k < obstacle_count[i]; k++) {
        let o = obstacles[obstacle_ids[i * MAX_OBSTACLES + k]];
        let c = obstacle_contact(o, p);
        let reach = in_reach(o, c.x, r);
        if any(velocity_at(o, p - c.yz * r) != vec2<f32>(0.0)) || (reach && r - c.x > P.wake_overlap * r) {
            woken = true;
        }
        if reach && c.x - r <= touching && dot(c.yz, a) < 0.0 {
            supported = true;
        }
    }
    if woken || !supported {
        rest[i] = 0.0;
    }
}

// cpu::fall_asleep: the sleep timers at the step's end.
@compute @workgroup_size(256)
fn fall_asleep(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
               @builtin(local_invocation_index) local: u32) {
    let i = ball_index(wg, groups, local);
    if i >= P.n || state[i] != ALIVE || P.sleep_time <= 0.0 || asleep(i) {
        return;
    }
    let v = pv[i].zw;
    let slow = dot(v, v) < P.sleep_speed * P.sleep_speed && abs(ang[i].y * ang[i].z) < P.sleep_speed;
    var t = 0.0;
    if slow {
        t = rest[i] + P.dt;
    }
    rest[i] = t;
    if asleep(i) {
        pv[i] = vec4<f32>(pv[i].xy, 0.0, 0.0);
        ang[i] = vec4<f32>(ang[i].x, 0.0, ang[i].zw);
    }
}

@compute @workgroup_size(256)
fn check_bounds(@builtin(workgroup_id) wg: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>,
                @builtin(local_invocation_index) local: u32) {
    let i = ball_index(wg, groups, local);
    if i >= P.n || state[i] != ALIVE {
        return;
    }
    let s = pv[i];
    // Non-finite (NaN or infinity): exponent bits all ones. Tested on the
    // bits, because WGSL lets a compiler assume floats are finite and fold
    // `s != s` to false (lavapipe did: a NaN ball stayed alive, unreported).
    if any((bitcast<vec4<u32>>(s) & vec4<u32>(0x7fffffffu)) >= vec4<u32>(0x7f800000u)) {
        // Named by its id (the lowest id: the same ball as the CPU twin's).
        atomicMin(&counters[1], ball_id[i]);
        return;
    }
    let p = s.xy;
    if any(p < P.bounds_min) || any(p > P.bounds_max) {
        state[i] = ESCAPED;
        return;
    }
    for (var k = 0u; k < P.kill_count; k++) {
        let r = kill[k];
        if all(p >= r.xy) && all(p <= r.zw) {
            state[i] = KILLED;
            return;
        }
    }
}
