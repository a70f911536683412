// Drawing a world: three pipelines sharing one view uniform (group 0).
//
// * disc_*: instanced discs. One instance per disc, read from a storage
//   buffer of `Disc` (the `#[repr(C)]` `DiscInstance` of src/render/tessellate.rs,
//   32 bytes), so that a population's GPU buffer can be bound in place of the
//   one the CPU fills. Each instance is a 4-vertex triangle strip around the
//   disc; the fragment shader computes the signed distance to the rim in
//   pixels and turns it into coverage (anti-aliased edge), darkens a rim and
//   draws a radius line so that rotation shows.
// * ball_vs: a population's balls straight from its storage buffers (the
//   layout of src/population/gpu.rs: x, y, vx, vy | angle, ω, radius, 1/m |
//   state), coloured by speed, mass or id (`BallStyle`), drawn by disc_fs.
//   The GPU backend binds its own buffers here (no readback); the CPU twin's
//   arrays are uploaded in the same layout, so both paths run this shader.
// * mesh_*: triangle lists in world coordinates with a per-vertex RGBA8
//   colour (tessellated shapes, surfaces, field regions, joints, arrows).
// * overlay_*: a textured quad in pixel coordinates (text rasterised on the
//   CPU by src/render/overlay.rs).
//
// Colours are sRGB-encoded values; `view.srgb_target` = 1 converts them to
// linear when the target re-encodes (an *Srgb surface format).

struct View {
    // clip = world * scale + offset
    scale: vec2<f32>,
    offset: vec2<f32>,
    // target size in pixels
    viewport: vec2<f32>,
    pixels_per_metre: f32,
    srgb_target: u32,
}

@group(0) @binding(0) var<uniform> view: View;

fn to_target(c: vec3<f32>) -> vec3<f32> {
    if view.srgb_target == 1u {
        // sRGB decode (IEC 61966-2-1), so that the target's encode gives c back.
        let lo = c / 12.92;
        let hi = pow((c + 0.055) / 1.055, vec3<f32>(2.4));
        return select(hi, lo, c <= vec3<f32>(0.04045));
    }
    return c;
}

// ---- discs ----

struct Disc {
    position: vec2<f32>,
    radius: f32,
    angle: f32,
    // RGBA8, red in the low byte (unpack4x8unorm order).
    color: u32,
    // bit 0: draw the radius line; bit 1: draw the rim.
    flags: u32,
    pad0: u32,
    pad1: u32,
}

@group(1) @binding(0) var<storage, read> discs: array<Disc>;

struct DiscOut {
    @builtin(position) clip: vec4<f32>,
    // position relative to the centre, in pixels
    @location(0) local: vec2<f32>,
    @location(1) @interpolate(flat) radius_px: f32,
    @location(2) @interpolate(flat) color: vec4<f32>,
    @location(3) @interpolate(flat) direction: vec2<f32>,
    @location(4) @interpolate(flat) flags: u32,
}

// Anti-aliasing margin around the disc, in pixels.
const AA_MARGIN: f32 = 1.5;

@vertex
fn disc_vs(@builtin(vertex_index) vertex: u32, @builtin(instance_index) instance: u32) -> DiscOut {
    let d = discs[instance];
    let corner = vec2<f32>(f32(vertex & 1u) * 2.0 - 1.0, f32((vertex >> 1u) & 1u) * 2.0 - 1.0);
    let radius_px = d.radius * view.pixels_per_metre;
    let half_px = radius_px + AA_MARGIN;
    let world = d.position + corner * (half_px / view.pixels_per_metre);
    var out: DiscOut;
    out.clip = vec4<f32>(world * view.scale + view.offset, 0.0, 1.0);
    // Pixel y grows downwards but `local` is only used through lengths and the
    // radius direction, both taken in world orientation (y up).
    out.local = corner * half_px;
    out.radius_px = radius_px;
    out.color = unpack4x8unorm(d.color);
    out.direction = vec2<f32>(cos(d.angle), sin(d.angle));
    out.flags = d.flags;
    return out;
}

@fragment
fn disc_fs(in: DiscOut) -> @location(0) vec4<f32> {
    // Signed distance to the rim in pixels (negative inside); coverage of a
    // pixel by the disc ≈ clamp(0.5 − d, 0, 1), so the summed coverage is the
    // disc's area πr² in pixels.
    let d = length(in.local) - in.radius_px;
    let coverage = clamp(0.5 - d, 0.0, 1.0);
    if coverage <= 0.0 {
        discard;
    }
    var rgb = in.color.rgb;
    let detailed = in.radius_px >= 4.0;
    if detailed && (in.flags & 2u) != 0u {
        // A darker rim, about 1.2 px wide.
        rgb = mix(rgb, rgb * 0.45, clamp(d + 1.7, 0.0, 1.0));
    }
    if detailed && (in.flags & 1u) != 0u {
        // Radius line from the centre along the body's angle.
        let t = clamp(dot(in.local, in.direction), 0.0, in.radius_px);
        let off = length(in.local - in.direction * t);
        rgb = mix(rgb, rgb * 0.35, clamp(1.0 - off, 0.0, 1.0));
    }
    return vec4<f32>(to_target(rgb), in.color.a * coverage);
}

// ---- population balls ----

struct BallStyle {
    // 0: speed, 1: mass, 2: id (src/render/balls.rs `BallColour`).
    colour_by: u32,
    count: u32,
    // Speed drawn fully red (m/s).
    speed_scale: f32,
    // ln of the lightest and heaviest ball's mass (kg).
    ln_mass_min: f32,
    ln_mass_max: f32,
    pad0: u32,
    pad1: u32,
    pad2: u32,
}

@group(1) @binding(0) var<storage, read> ball_motion: array<vec4<f32>>;
@group(1) @binding(1) var<storage, read> ball_properties: array<vec4<f32>>;
@group(1) @binding(2) var<storage, read> ball_state: array<u32>;
@group(1) @binding(3) var<uniform> ball_style: BallStyle;
@group(1) @binding(4) var<storage, read> ball_id: array<u32>;

// population::state::ALIVE
const BALL_ALIVE: u32 = 0u;

fn ball_colour(i: u32, velocity: vec2<f32>, inv_mass: f32) -> vec3<f32> {
    let slow = vec3<f32>(40.0, 110.0, 220.0) / 255.0;
    let fast = vec3<f32>(230.0, 60.0, 40.0) / 255.0;
    if ball_style.colour_by == 1u {
        // Light (teal) to heavy (brown) on a log scale.
        let span = max(ball_style.ln_mass_max - ball_style.ln_mass_min, 1e-6);
        let t = clamp((-log(max(inv_mass, 1e-30)) - ball_style.ln_mass_min) / span, 0.0, 1.0);
        return mix(vec3<f32>(0.0, 172.0, 193.0) / 255.0, vec3<f32>(141.0, 85.0, 36.0) / 255.0, t);
    }
    if ball_style.colour_by == 2u {
        // Golden-ratio hues: neighbours in index differ in colour.
        let h = fract(f32(i) * 0.61803398875) * 6.0;
        let rgb = clamp(abs(fract(vec3<f32>(h, h + 4.0, h + 2.0) / 6.0) * 6.0 - 3.0) - 1.0, vec3<f32>(0.0), vec3<f32>(1.0));
        return mix(vec3<f32>(0.85), rgb, 0.75);
    }
    let t = clamp(length(velocity) / max(ball_style.speed_scale, 1e-12), 0.0, 1.0);
    return mix(slow, fast, t);
}

@vertex
fn ball_vs(@builtin(vertex_index) vertex: u32, @builtin(instance_index) instance: u32) -> DiscOut {
    var out: DiscOut;
    if ball_state[instance] != BALL_ALIVE {
        // Off the target: the quad is clipped whole.
        out.clip = vec4<f32>(2.0, 2.0, 0.0, 1.0);
        return out;
    }
    let m = ball_motion[instance];
    let p = ball_properties[instance];
    let corner = vec2<f32>(f32(vertex & 1u) * 2.0 - 1.0, f32((vertex >> 1u) & 1u) * 2.0 - 1.0);
    let radius_px = p.z * view.pixels_per_metre;
    let half_px = radius_px + AA_MARGIN;
    let world = m.xy + corner * (half_px / view.pixels_per_metre);
    out.clip = vec4<f32>(world * view.scale + view.offset, 0.0, 1.0);
    out.local = corner * half_px;
    out.radius_px = radius_px;
    out.color = vec4<f32>(ball_colour(ball_id[instance], m.zw, p.w), 1.0);
    out.direction = vec2<f32>(cos(p.x), sin(p.x));
    // Radius line and rim, as the bodies' discs.
    out.flags = 3u;
    return out;
}

// ---- meshes ----

struct MeshIn {
    @location(0) position: vec2<f32>,
    @location(1) color: vec4<f32>,
}

struct MeshOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) color: vec4<f32>,
}

@vertex
fn mesh_vs(in: MeshIn) -> MeshOut {
    var out: MeshOut;
    out.clip = vec4<f32>(in.position * view.scale + view.offset, 0.0, 1.0);
    out.color = in.color;
    return out;
}

@fragment
fn mesh_fs(in: MeshOut) -> @location(0) vec4<f32> {
    return vec4<f32>(to_target(in.color.rgb), in.color.a);
}

// ---- overlay ----

struct OverlayIn {
    // pixels from the top-left corner
    @location(0) pixel: vec2<f32>,
    @location(1) uv: vec2<f32>,
}

struct OverlayOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) uv: vec2<f32>,
}

@group(1) @binding(0) var overlay_texture: texture_2d<f32>;
@group(1) @binding(1) var overlay_sampler: sampler;

@vertex
fn overlay_vs(in: OverlayIn) -> OverlayOut {
    var out: OverlayOut;
    let ndc = in.pixel / view.viewport * vec2<f32>(2.0, -2.0) + vec2<f32>(-1.0, 1.0);
    out.clip = vec4<f32>(ndc, 0.0, 1.0);
    out.uv = in.uv;
    return out;
}

@fragment
fn overlay_fs(in: OverlayOut) -> @location(0) vec4<f32> {
    let c = textureSample(overlay_texture, overlay_sampler, in.uv);
    return vec4<f32>(to_target(c.rgb), c.a);
}
