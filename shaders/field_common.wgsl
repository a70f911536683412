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

