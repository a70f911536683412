//! The constants a WGSL kernel and its CPU twin (or its host code) must
//! share, checked against each other: WGSL cannot import a Rust `const`, so
//! each is written twice, and this test is what keeps the two copies equal.

use crate::population::{self, cpu, state};

/// The literal of `const NAME: TYPE = VALUE;` in `source`, without a
/// trailing integer suffix (`16u` → `16`) or comment.
fn literal<'a>(source: &'a str, name: &str) -> &'a str {
    let head = format!("const {name}:");
    let line = source
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with(&head))
        .unwrap_or_else(|| panic!("no `{head}` in the shader"));
    let value = line.split_once('=').map(|(_, v)| v).unwrap_or_else(|| panic!("{line}: no `=`"));
    let value = value.split(';').next().unwrap_or(value).trim();
    value.trim_end_matches(['u', 'i'])
}

fn int(source: &str, name: &str) -> u64 {
    let text = literal(source, name);
    let parsed = match text.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => text.parse(),
    };
    parsed.unwrap_or_else(|e| panic!("{name} = {text}: {e}"))
}

fn float(source: &str, name: &str) -> f32 {
    let text = literal(source, name);
    // parsed as f32, as the shader compiler reads an `f32` literal
    text.parse().unwrap_or_else(|e| panic!("{name} = {text}: {e}"))
}

#[test]
fn population_shader_constants_match_the_rust_ones() {
    let src = include_str!("../../shaders/population.wgsl");
    assert_eq!(int(src, "ALIVE"), state::ALIVE as u64);
    assert_eq!(int(src, "PENDING"), state::PENDING as u64);
    assert_eq!(int(src, "ESCAPED"), state::ESCAPED as u64);
    assert_eq!(int(src, "KILLED"), state::KILLED as u64);
    assert_eq!(int(src, "MAX_NEIGHBOURS"), population::MAX_NEIGHBOURS as u64);
    assert_eq!(int(src, "MAX_OBSTACLES"), population::MAX_OBSTACLES as u64);
    assert_eq!(int(src, "NONE"), u32::MAX as u64);
    assert_eq!(float(src, "ACTIVE_SLOP"), cpu::ACTIVE_SLOP);
    assert_eq!(float(src, "SUPPORT_GAP"), cpu::SUPPORT_GAP);
    assert_eq!(float(src, "UNBOUNDED_PUSH"), population::gpu::UNBOUNDED_PUSH);
}

#[test]
fn broadphase_shader_clamps_cells_as_the_grid_does() {
    let src = include_str!("../../shaders/broadphase.wgsl");
    assert_eq!(float(src, "CELL_COORD_LIMIT"), crate::broadphase::CELL_COORD_LIMIT);
}

#[test]
fn render_shader_reads_the_population_states() {
    let src = include_str!("../../shaders/render.wgsl");
    assert_eq!(int(src, "BALL_ALIVE"), state::ALIVE as u64);
}

#[test]
fn the_parser_reads_what_it_is_given() {
    // the test above can fail: a changed literal is read as changed
    let src = "const A: u32 = 17u; // note\nconst B: f32 = 2.5e-3;\nconst C: u32 = 0x10u;";
    assert_eq!(int(src, "A"), 17);
    assert_eq!(float(src, "B"), 2.5e-3);
    assert_eq!(int(src, "C"), 16);
}
