// Force-field definitions shared by every kernel that evaluates fields
// (shaders/fields.wgsl, shaders/population.wgsl): prepended to each of them
// when its module is built (src/gpu/mod.rs, `field_shader`). WGSL has no
// include, and one copy keeps the kernels in step with src/field.rs.

// One field, as packed by src/gpu/fields.rs (GpuField).
struct Field {
    kind: u32,
    falloff: u32,
    flags: u32,
    region_kind: u32,
    params: vec4<f32>,
    region: vec4<f32>,
}

// Closed regions: the boundary belongs to the region (Region::contains).
fn region_contains(f: Field, p: vec2<f32>) -> bool {
    switch f.region_kind {
        case 1u: {
            return p.x >= f.region.x && p.x <= f.region.z && p.y >= f.region.y && p.y <= f.region.w;
        }
        case 2u: {
            let r = p - f.region.xy;
            return dot(r, r) <= f.region.z * f.region.z;
        }
        case 3u: {
            return dot(p - f.region.xy, f.region.zw) >= 0.0;
        }
        default: {
            return true;
        }
    }
}

fn falloff_factor(falloff: u32, d: f32) -> f32 {
    switch falloff {
        case 1u: { return d; }
        case 2u: { return 1.0 / d; }
        case 3u: { return 1.0 / (d * d); }
        default: { return 1.0; }
    }
}

// The force of field `f` on a body or ball at `p` moving at `v` (the twins:
// src/field.rs, src/population/cpu.rs field_force): kind 0 uniform, 1 radial,
// 2 vortex, 3 drag; flag 1 scales by the mass, flag 2 the drag by the radius.
fn field_force(f: Field, p: vec2<f32>, v: vec2<f32>, mass: f32, radius: f32) -> vec2<f32> {
    if !region_contains(f, p) {
        return vec2<f32>(0.0);
    }
    let scale = select(1.0, mass, (f.flags & 1u) != 0u);
    switch f.kind {
        case 0u: {
            return f.params.xy * scale;
        }
        case 1u, 2u: {
            // Softened distance; direction r/d (zero at the centre).
            let r = p - f.params.xy;
            let softening = f.params.w;
            let d = sqrt(dot(r, r) + softening * softening);
            if d <= 0.0 {
                return vec2<f32>(0.0);
            }
            let dir = r / d;
            let magnitude = f.params.z * falloff_factor(f.falloff, d) * scale;
            if f.kind == 1u {
                return dir * magnitude;
            }
            return vec2<f32>(-dir.y, dir.x) * magnitude;
        }
        case 3u: {
            return -v * (f.params.x * select(1.0, radius, (f.flags & 2u) != 0u));
        }
        default: {
            return vec2<f32>(0.0);
        }
    }
}
