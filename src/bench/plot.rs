//! The log-log plot of `mx2d bench --plot`: time against N, one line with
//! square markers per path and kernel, a decade grid and a legend on the
//! right, drawn with plotters' bitmap backend and written as PNG.

use super::BenchRow;
use plotters::prelude::*;
use std::path::Path;

const WIDTH: u32 = 960;
const HEIGHT: u32 = 640;
/// Width of the legend column on the right.
const LEGEND: u32 = 250;

const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(90, 90, 90),
];

/// One series per (path, kernel): (name, points (n, ms)).
fn series(rows: &[BenchRow]) -> Vec<(String, Vec<(f64, f64)>)> {
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    let mut push = |name: String, n: usize, ms: Option<f64>| {
        if let Some(ms) = ms.filter(|&m| m > 0.0 && m.is_finite()) {
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
    series
}

/// One series per backend of `mx2d bench --scene`: the CPU twin's and the
/// GPU's whole population step, (name, points (balls, ms per step)).
fn population_series(rows: &[super::population::PopulationRow]) -> Vec<(String, Vec<(f64, f64)>)> {
    let points = |ms: &dyn Fn(&super::population::PopulationRow) -> Option<f64>| -> Vec<(f64, f64)> {
        rows.iter().filter_map(|r| ms(r).filter(|&m| m > 0.0 && m.is_finite()).map(|m| (r.n as f64, m))).collect()
    };
    [("cpu twin step", points(&|r| Some(r.cpu_ms))), ("gpu step", points(&|r| r.gpu_ms))]
        .into_iter()
        .filter(|(_, p)| !p.is_empty())
        .map(|(name, p)| (name.to_string(), p))
        .collect()
}

/// Writes the plot of `rows` to `path`.
pub(super) fn write_plot(path: &Path, rows: &[BenchRow], adapter: &str) -> anyhow::Result<()> {
    draw(path, &series(rows), &format!("mx2d bench: {adapter}"), "n (bodies)", "time (ms)")
}

/// Writes the plot of `mx2d bench --scene NAME` (ms per population step
/// against the number of balls, one line per backend) to `path`.
pub(super) fn write_population_plot(
    path: &Path,
    rows: &[super::population::PopulationRow],
    scene: &str,
    adapter: &str,
) -> anyhow::Result<()> {
    let title = format!("mx2d bench --scene {scene}: {adapter}");
    draw(path, &population_series(rows), &title, "n (balls)", "time per step (ms)")
}

/// Draws `series` on log-log axes with a legend on the right into `path`.
fn draw(
    path: &Path,
    series: &[(String, Vec<(f64, f64)>)],
    title: &str,
    x_desc: &str,
    y_desc: &str,
) -> anyhow::Result<()> {
    // Whole decades around the data (1e3..1e6 ns and 1e-2..1e3 ms when empty).
    let points = || series.iter().flat_map(|(_, p)| p.iter().copied());
    let decade = |v: f64, up: bool| 10f64.powf(if up { v.log10().ceil() } else { v.log10().floor() });
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for (x, y) in points() {
        (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
    }
    let (x0, x1, y0, y1) = if x0 > x1 {
        (1e3, 1e6, 1e-2, 1e3)
    } else {
        let (x0, y0) = (decade(x0, false), decade(y0, false));
        (x0, decade(x1, true).max(10.0 * x0), y0, decade(y1, true).max(10.0 * y0))
    };

    let mut rgb = vec![255u8; 3 * (WIDTH * HEIGHT) as usize];
    {
        let root = crate::render::plot_text::GlyphBitmap::with_buffer(&mut rgb, (WIDTH, HEIGHT))?.into_drawing_area();
        let err = |e: DrawingAreaErrorKind<_>| anyhow::anyhow!("{e:?}");
        root.fill(&WHITE).map_err(err)?;
        let (plot_area, legend_area) = root.split_horizontally(WIDTH - LEGEND);
        let title: String = title.chars().take(80).collect();
        let mut chart = ChartBuilder::on(&plot_area)
            .caption(title, ("sans-serif", 16))
            .margin(14)
            .x_label_area_size(50)
            .y_label_area_size(70)
            .build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc(y_desc)
            .x_label_formatter(&|v| format!("{v:.0e}"))
            .y_label_formatter(&|v| format!("{v:.0e}"))
            .label_style(("sans-serif", 15))
            .axis_desc_style(("sans-serif", 18))
            .bold_line_style(RGBColor(225, 225, 225))
            .light_line_style(RGBColor(245, 245, 245))
            .draw()
            .map_err(err)?;
        for (k, (_, pts)) in series.iter().enumerate() {
            let color = PALETTE[k % PALETTE.len()];
            chart.draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(3))).map_err(err)?;
            chart
                .draw_series(
                    pts.iter().map(|&p| EmptyElement::at(p) + Rectangle::new([(-4, -4), (4, 4)], color.filled())),
                )
                .map_err(err)?;
        }
        // The legend: a colour square and the series name per row.
        for (k, (name, _)) in series.iter().enumerate() {
            let color = PALETTE[k % PALETTE.len()];
            let y = 50 + 26 * k as i32;
            legend_area.draw(&Rectangle::new([(6, y), (22, y + 16)], color.filled())).map_err(err)?;
            legend_area.draw(&Text::new(name.clone(), (30, y), ("sans-serif", 15).into_font())).map_err(err)?;
        }
        root.present().map_err(err)?;
    }
    crate::render::png::Image::from_rgb(WIDTH, HEIGHT, &rgb).write_png(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(kernel: &'static str, n: usize, cpu_ms: f64, gpu_ms: Option<f64>) -> BenchRow {
        BenchRow {
            kernel,
            n,
            cpu_ms,
            cpu_threads: 2,
            sap_ms: None,
            gpu_ms,
            gpu_timing: None,
            gpu_e2e_ms: None,
            speedup: None,
            pairs: None,
            max_force_rel_error: None,
            agree: None,
            gpu_error: None,
            gpu_readback_sort_ms: None,
            gpu_passes: None,
        }
    }

    /// Every series is drawn in its palette colour (≥ 50 pixels: a 3-px line
    /// across a decade), and the picture has the plot's size.
    #[test]
    fn plot_draws_each_series_in_its_colour() {
        let rows = [
            row("fields", 1000, 0.5, Some(0.2)),
            row("fields", 10_000, 5.0, Some(0.4)),
            row("fields", 100_000, 50.0, Some(1.1)),
        ];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bench.png");
        write_plot(&path, &rows, "test adapter").unwrap();
        let image = crate::render::png::Image::read_png(&path).unwrap();
        assert_eq!((image.width, image.height), (WIDTH, HEIGHT));
        for (k, name) in ["cpu fields", "gpu fields"].iter().enumerate() {
            let RGBColor(r, g, b) = PALETTE[k];
            let n = image.rgba.chunks(4).filter(|p| p[..3] == [r, g, b]).count();
            assert!(n >= 50, "{name}: {n} pixels");
        }
    }
}
