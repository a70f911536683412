//! A log-log plot of time against N, drawn into an RGBA buffer and written
//! with the `png` crate: axes, decade grid, one polyline per path, a legend,
//! and labels in a built-in 3×5 bitmap font (no font dependency).

use super::BenchRow;
use std::path::Path;

const WIDTH: usize = 960;
const HEIGHT: usize = 640;
const LEFT: usize = 90;
const RIGHT: usize = 250;
const TOP: usize = 40;
const BOTTOM: usize = 70;

type Rgba = [u8; 4];

struct Canvas {
    pixels: Vec<u8>,
}

impl Canvas {
    fn new() -> Self {
        Self { pixels: vec![255; WIDTH * HEIGHT * 4] }
    }

    fn set(&mut self, x: i64, y: i64, color: Rgba) {
        if (0..WIDTH as i64).contains(&x) && (0..HEIGHT as i64).contains(&y) {
            let i = (y as usize * WIDTH + x as usize) * 4;
            self.pixels[i..i + 4].copy_from_slice(&color);
        }
    }

    fn rect(&mut self, x: i64, y: i64, w: i64, h: i64, color: Rgba) {
        for yy in y..y + h {
            for xx in x..x + w {
                self.set(xx, yy, color);
            }
        }
    }

    /// A `thickness`-pixel line (Bresenham with a square brush).
    fn line(&mut self, (x0, y0): (i64, i64), (x1, y1): (i64, i64), color: Rgba, thickness: i64) {
        let (dx, dy) = ((x1 - x0).abs(), -(y1 - y0).abs());
        let (sx, sy) = (if x0 < x1 { 1 } else { -1 }, if y0 < y1 { 1 } else { -1 });
        let (mut x, mut y, mut err) = (x0, y0, dx + dy);
        loop {
            self.rect(x - thickness / 2, y - thickness / 2, thickness, thickness, color);
            if x == x1 && y == y1 {
                break;
            }
            let e2 = 2 * err;
            if e2 >= dy {
                err += dy;
                x += sx;
            }
            if e2 <= dx {
                err += dx;
                y += sy;
            }
        }
    }

    /// Text in the 3×5 font scaled by `scale`, top-left at (x, y).
    fn text(&mut self, x: i64, y: i64, text: &str, scale: i64, color: Rgba) {
        for (k, c) in text.chars().enumerate() {
            let bits = glyph(c);
            for row in 0..5 {
                for col in 0..3 {
                    if bits >> (14 - (row * 3 + col)) & 1 == 1 {
                        let gx = x + (k as i64 * 4 + col) * scale;
                        self.rect(gx, y + row * scale, scale, scale, color);
                    }
                }
            }
        }
    }

    /// Text rotated 90° counter-clockwise (reads bottom to top), for the y label.
    fn text_vertical(&mut self, x: i64, y: i64, text: &str, scale: i64, color: Rgba) {
        for (k, c) in text.chars().enumerate() {
            let bits = glyph(c);
            for row in 0..5 {
                for col in 0..3 {
                    if bits >> (14 - (row * 3 + col)) & 1 == 1 {
                        let gx = x + row * scale;
                        let gy = y - (k as i64 * 4 + col) * scale;
                        self.rect(gx, gy, scale, scale, color);
                    }
                }
            }
        }
    }
}

/// 3×5 glyphs, rows top to bottom, 3 bits each (MSB left).
fn glyph(c: char) -> u16 {
    match c.to_ascii_lowercase() {
        '0' => 0b111_101_101_101_111,
        '1' => 0b010_110_010_010_111,
        '2' => 0b111_001_111_100_111,
        '3' => 0b111_001_111_001_111,
        '4' => 0b101_101_111_001_001,
        '5' => 0b111_100_111_001_111,
        '6' => 0b111_100_111_101_111,
        '7' => 0b111_001_001_001_001,
        '8' => 0b111_101_111_101_111,
        '9' => 0b111_101_111_001_111,
        'a' => 0b010_101_111_101_101,
        'b' => 0b110_101_110_101_110,
        'c' => 0b011_100_100_100_011,
        'd' => 0b110_101_101_101_110,
        'e' => 0b111_100_110_100_111,
        'f' => 0b111_100_110_100_100,
        'g' => 0b011_100_101_101_011,
        'h' => 0b101_101_111_101_101,
        'i' => 0b111_010_010_010_111,
        'j' => 0b001_001_001_101_010,
        'k' => 0b101_101_110_101_101,
        'l' => 0b100_100_100_100_111,
        'm' => 0b101_111_111_101_101,
        'n' => 0b110_101_101_101_101,
        'o' => 0b010_101_101_101_010,
        'p' => 0b110_101_110_100_100,
        'q' => 0b010_101_101_110_011,
        'r' => 0b110_101_110_101_101,
        's' => 0b011_100_010_001_110,
        't' => 0b111_010_010_010_010,
        'u' => 0b101_101_101_101_111,
        'v' => 0b101_101_101_101_010,
        'w' => 0b101_101_111_111_101,
        'x' => 0b101_101_010_101_101,
        'y' => 0b101_101_010_010_010,
        'z' => 0b111_001_010_100_111,
        '.' => 0b000_000_000_000_010,
        ',' => 0b000_000_000_010_100,
        '-' => 0b000_000_111_000_000,
        '+' => 0b000_010_111_010_000,
        '(' => 0b010_100_100_100_010,
        ')' => 0b010_001_001_001_010,
        '/' => 0b001_001_010_100_100,
        '=' => 0b000_111_000_111_000,
        ':' => 0b000_010_000_010_000,
        _ => 0,
    }
}

const PALETTE: [Rgba; 8] = [
    [31, 119, 180, 255],
    [255, 127, 14, 255],
    [44, 160, 44, 255],
    [214, 39, 40, 255],
    [148, 103, 189, 255],
    [140, 86, 75, 255],
    [227, 119, 194, 255],
    [90, 90, 90, 255],
];

/// Writes the plot of `rows` to `path`.
pub(super) fn write_plot(path: &Path, rows: &[BenchRow], adapter: &str) -> anyhow::Result<()> {
    // One series per (path, kernel).
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    let mut push = |name: String, n: usize, ms: Option<f64>| {
        if let Some(ms) = ms.filter(|&m| m > 0.0) {
            match series.iter_mut().find(|(s, _)| *s == name) {
                Some((_, points)) => points.push((n as f64, ms)),
                None => series.push((name, vec![(n as f64, ms)])),
            }
        }
    };
    for r in rows {
        push(format!("cpu {}", r.kernel), r.n, Some(r.cpu_ms));
        push(format!("gpu {}", r.kernel), r.n, r.gpu_ms);
        if r.kernel == "broadphase" {
            push("cpu sweep-and-prune".into(), r.n, r.sap_ms);
        }
    }
    let all = series.iter().flat_map(|(_, p)| p.iter().copied());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for (x, y) in all {
        (x0, x1, y0, y1) = (x0.min(x.log10()), x1.max(x.log10()), y0.min(y.log10()), y1.max(y.log10()));
    }
    if x0 > x1 {
        (x0, x1, y0, y1) = (3.0, 6.0, -2.0, 3.0);
    }
    let (x0, x1, y0, y1) = (x0.floor(), x1.ceil().max(x0.floor() + 1.0), y0.floor(), y1.ceil().max(y0.floor() + 1.0));
    let plot_w = (WIDTH - LEFT - RIGHT) as f64;
    let plot_h = (HEIGHT - TOP - BOTTOM) as f64;
    let to_px = |x: f64, y: f64| {
        let px = LEFT as f64 + (x.log10() - x0) / (x1 - x0) * plot_w;
        let py = TOP as f64 + (1.0 - (y.log10() - y0) / (y1 - y0)) * plot_h;
        (px.round() as i64, py.round() as i64)
    };

    let mut c = Canvas::new();
    let black = [0, 0, 0, 255];
    let grey = [225, 225, 225, 255];
    let (l, t, r, b) = (LEFT as i64, TOP as i64, (WIDTH - RIGHT) as i64, (HEIGHT - BOTTOM) as i64);
    for d in x0 as i64..=x1 as i64 {
        let (px, _) = to_px(10f64.powi(d as i32), 1.0);
        c.line((px, t), (px, b), grey, 1);
        c.text(px - 8, b + 10, &format!("1e{d}"), 2, black);
    }
    for d in y0 as i64..=y1 as i64 {
        let (_, py) = to_px(10f64.powi(x0 as i32), 10f64.powi(d as i32));
        c.line((l, py), (r, py), grey, 1);
        c.text(l - 50, py - 5, &format!("1e{d}"), 2, black);
    }
    c.line((l, t), (l, b), black, 2);
    c.line((l, b), (r, b), black, 2);
    c.line((l, t), (r, t), black, 1);
    c.line((r, t), (r, b), black, 1);
    c.text(l + (r - l) / 2 - 60, b + 40, "n (bodies)", 3, black);
    c.text_vertical(12, t + (b - t) / 2 + 60, "time (ms)", 3, black);
    let title: String = format!("mx2d bench: {adapter}").chars().take(70).collect();
    c.text(l, 12, &title, 2, black);

    for (k, (name, points)) in series.iter().enumerate() {
        let color = PALETTE[k % PALETTE.len()];
        let px: Vec<(i64, i64)> = points.iter().map(|&(x, y)| to_px(x, y)).collect();
        for w in px.windows(2) {
            c.line(w[0], w[1], color, 3);
        }
        for &(x, y) in &px {
            c.rect(x - 4, y - 4, 9, 9, color);
        }
        let ly = t + 10 + k as i64 * 26;
        c.rect(r + 16, ly, 16, 16, color);
        c.text(r + 40, ly + 3, name, 2, black);
    }

    let file = std::fs::File::create(path)?;
    let mut encoder = png::Encoder::new(std::io::BufWriter::new(file), WIDTH as u32, HEIGHT as u32);
    encoder.set_color(png::ColorType::Rgba);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(&c.pixels)?;
    writer.finish()?;
    Ok(())
}
