//! On-screen text: lines rasterised on the CPU with `ab_glyph` (DejaVu Sans
//! Mono, embedded) into an RGBA8 image with a translucent backing, then drawn
//! by the overlay pipeline as one textured quad. The same font serves the
//! plots ([`register_plot_font`]).

use ab_glyph::{Font, FontRef, PxScale, ScaleFont};

/// DejaVu Sans Mono (Bitstream Vera licence, `src/render/font/LICENSE-DejaVu.txt`).
pub const FONT_BYTES: &[u8] = include_bytes!("font/DejaVuSansMono.ttf");

/// Registers the embedded font as plotters' "sans-serif" (once per process).
pub fn register_plot_font() -> anyhow::Result<()> {
    static REGISTERED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font("sans-serif", plotters::style::FontStyle::Normal, FONT_BYTES).is_ok()
    });
    anyhow::ensure!(ok, "the embedded plot font could not be loaded");
    Ok(())
}

/// A block of text rasterised into straight-alpha RGBA8 pixels.
#[derive(Clone, Debug, Default)]
pub struct TextImage {
    /// Width (pixels).
    pub width: u32,
    /// Height (pixels).
    pub height: u32,
    /// Rows of RGBA8, top first.
    pub rgba: Vec<u8>,
}

/// Rasterises `lines` at `size_px` (white text on a translucent dark box
/// with a 6-pixel padding).
pub fn rasterize(lines: &[String], size_px: f32) -> TextImage {
    let Ok(font) = FontRef::try_from_slice(FONT_BYTES) else {
        return TextImage::default();
    };
    let scaled = font.as_scaled(PxScale::from(size_px));
    let line_height = (scaled.ascent() - scaled.descent() + scaled.line_gap()).ceil();
    let pad = 6.0;
    let text_width =
        lines.iter().map(|l| l.chars().map(|c| scaled.h_advance(font.glyph_id(c))).sum::<f32>()).fold(0.0, f32::max);
    let width = (text_width + 2.0 * pad).ceil().max(1.0) as u32;
    let height = (line_height * lines.len() as f32 + 2.0 * pad).ceil().max(1.0) as u32;
    let mut alpha = vec![0f32; (width * height) as usize];
    for (row, line) in lines.iter().enumerate() {
        let baseline = pad + scaled.ascent() + row as f32 * line_height;
        let mut x = pad;
        for c in line.chars() {
            let id = font.glyph_id(c);
            let glyph = id.with_scale_and_position(PxScale::from(size_px), ab_glyph::point(x, baseline));
            x += scaled.h_advance(id);
            if let Some(outlined) = font.outline_glyph(glyph) {
                let bounds = outlined.px_bounds();
                outlined.draw(|gx, gy, coverage| {
                    let px = bounds.min.x as i64 + i64::from(gx);
                    let py = bounds.min.y as i64 + i64::from(gy);
                    if (0..i64::from(width)).contains(&px) && (0..i64::from(height)).contains(&py) {
                        let a = &mut alpha[(py as u32 * width + px as u32) as usize];
                        *a = a.max(coverage);
                    }
                });
            }
        }
    }
    // White text over a dark box at 60 % opacity.
    let mut rgba = Vec::with_capacity(alpha.len() * 4);
    for a in alpha {
        let a = a.clamp(0.0, 1.0);
        let value = (255.0 * a + 20.0 * (1.0 - a)) as u8;
        let opacity = (255.0 * (0.6 + 0.4 * a)) as u8;
        rgba.extend_from_slice(&[value, value, value, opacity]);
    }
    TextImage { width, height, rgba }
}
