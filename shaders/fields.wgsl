// Force fields in regions, one invocation per body: the GPU twin of
// src/field.rs (keep the two in step, formula for formula). f32 throughout;
// the CPU twin evaluates the same f32 inputs and f32-rounded parameters in
// f64, so Rect edge decisions agree exactly and forces to f32 rounding.

struct Body {
    position: vec2<f32>,
    velocity: vec2<f32>,
    mass: f32,
    radius: f32,
}

// kind: 0 uniform, 1 radial, 2 vortex, 3 drag
// falloff: 0 constant, 1 linear, 2 inverse-linear, 3 inverse-square
// flags: bit 0 per_mass, bit 1 stokes
// region_kind: 0 everywhere, 1 rect (min.xy, max.xy), 2 circle (center.xy, radius),
//              3 half-plane (point.xy, normal.xy)
// params: uniform (force.xy); radial/vortex (center.xy, strength, softening); drag (k)
// struct Field, region_contains, falloff_factor, field_force: shaders/field_common.wgsl
// (prepended when the module is built).

struct Params {
    body_count: u32,
    field_count: u32,
    _pad0: u32,
    _pad1: u32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> fields: array<Field>;
@group(0) @binding(2) var<storage, read> bodies: array<Body>;
@group(0) @binding(3) var<storage, read_write> forces: array<vec2<f32>>;

@compute @workgroup_size(256)
fn field_forces(
    @builtin(workgroup_id) workgroup: vec3<u32>,
    @builtin(num_workgroups) groups: vec3<u32>,
    @builtin(local_invocation_index) local: u32,
) {
    // Flattened 2D dispatch grid (past 65,535 workgroups per dimension).
    let i = (workgroup.y * groups.x + workgroup.x) * 256u + local;
    if i >= params.body_count {
        return;
    }
    let body = bodies[i];
    var total = vec2<f32>(0.0);
    for (var k = 0u; k < params.field_count; k++) {
        total += field_force(fields[k], body.position, body.velocity, body.mass, body.radius);
    }
    forces[i] = total;
}
