//! plotters' bitmap backend with text drawn by `ab_glyph` from the embedded
//! font ([`overlay::FONT_BYTES`](super::overlay::FONT_BYTES)).
//!
//! Why not plotters' own `ab_glyph` feature: features unify across the
//! build, and with it plotters stops laying out SVG text without a
//! registered font, which breaks criterion's reports in every bench. With
//! no font feature plotters has no text rasteriser, so this wrapper
//! supplies one: every drawing call goes to [`BitMapBackend`] except text.

use ab_glyph::{Font, FontRef, PxScale, ScaleFont};
use plotters::prelude::*;
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind};

use super::overlay::FONT_BYTES;

/// A [`BitMapBackend`] on an RGB buffer that draws text itself.
pub struct GlyphBitmap<'a> {
    inner: BitMapBackend<'a>,
    font: FontRef<'static>,
}

impl<'a> GlyphBitmap<'a> {
    /// Draws into `rgb` (3 bytes per pixel, rows top first) of `size` pixels.
    pub fn with_buffer(rgb: &'a mut [u8], size: (u32, u32)) -> anyhow::Result<Self> {
        let font = FontRef::try_from_slice(FONT_BYTES).map_err(|_| anyhow::anyhow!("the embedded font is invalid"))?;
        Ok(Self { inner: BitMapBackend::with_buffer(rgb, size), font })
    }

    /// Box of `text` at `size` px: ((0, 0), (advance width, ascent − descent)).
    fn layout(&self, text: &str, size: f64) -> (i32, i32) {
        let scaled = self.font.as_scaled(PxScale::from(size as f32));
        let width: f32 = text.chars().map(|c| scaled.h_advance(self.font.glyph_id(c))).sum();
        (width.ceil() as i32, (scaled.ascent() - scaled.descent()).ceil() as i32)
    }
}

type Error<'a> = DrawingErrorKind<<BitMapBackend<'a> as DrawingBackend>::ErrorType>;

impl<'a> DrawingBackend for GlyphBitmap<'a> {
    type ErrorType = <BitMapBackend<'a> as DrawingBackend>::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<(), Error<'a>> {
        self.inner.ensure_prepared()
    }

    fn present(&mut self) -> Result<(), Error<'a>> {
        self.inner.present()
    }

    fn draw_pixel(&mut self, point: BackendCoord, color: BackendColor) -> Result<(), Error<'a>> {
        self.inner.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(&mut self, from: BackendCoord, to: BackendCoord, style: &S) -> Result<(), Error<'a>> {
        self.inner.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), Error<'a>> {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), Error<'a>> {
        self.inner.draw_path(path, style)
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), Error<'a>> {
        self.inner.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), Error<'a>> {
        self.inner.fill_polygon(vert, style)
    }

    fn blit_bitmap(&mut self, pos: BackendCoord, size: (u32, u32), src: &[u8]) -> Result<(), Error<'a>> {
        self.inner.blit_bitmap(pos, size, src)
    }

    fn estimate_text_size<T: BackendTextStyle>(&self, text: &str, style: &T) -> Result<(u32, u32), Error<'a>> {
        let (w, h) = self.layout(text, style.size());
        Ok((w.max(0) as u32, h.max(0) as u32))
    }

    fn draw_text<T: BackendTextStyle>(&mut self, text: &str, style: &T, pos: BackendCoord) -> Result<(), Error<'a>> {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let size = style.size();
        let (width, height) = self.layout(text, size);
        let dx = match style.anchor().h_pos {
            HPos::Left => 0,
            HPos::Right => -width,
            HPos::Center => -width / 2,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0,
            VPos::Center => -height / 2,
            VPos::Bottom => -height,
        };
        let transform = style.transform();
        let (w, h) = self.get_size();
        let scale = PxScale::from(size as f32);
        let scaled = self.font.as_scaled(scale);
        let mut x = 0.0f32;
        let mut coverage: Vec<(i32, i32, f32)> = Vec::new();
        for c in text.chars() {
            let id = self.font.glyph_id(c);
            let glyph = id.with_scale_and_position(scale, ab_glyph::point(x, scaled.ascent()));
            x += scaled.h_advance(id);
            if let Some(outlined) = self.font.outline_glyph(glyph) {
                let bounds = outlined.px_bounds();
                outlined.draw(|gx, gy, a| {
                    coverage.push((bounds.min.x as i32 + gx as i32, bounds.min.y as i32 + gy as i32, a));
                });
            }
        }
        for (gx, gy, a) in coverage {
            if a <= 0.0 {
                continue;
            }
            let (tx, ty) = transform.transform(gx + dx, gy + dy);
            let (px, py) = (pos.0 + tx, pos.1 + ty);
            if px >= 0 && py >= 0 && (px as u32) < w && (py as u32) < h {
                let c = BackendColor { alpha: color.alpha * f64::from(a.min(1.0)), rgb: color.rgb };
                self.inner.draw_pixel((px, py), c)?;
            }
        }
        Ok(())
    }
}
