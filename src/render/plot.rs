//! `--energy-plot FILE.png`: kinetic, potential and total energy against
//! time, and the constraint error on a log axis below, drawn with plotters'
//! bitmap backend in the look of `mx2d bench --plot`.

use std::path::Path;

use plotters::prelude::*;

use crate::world::World;

/// Picture size of the energy plot (pixels).
pub const ENERGY_PLOT_SIZE: (u32, u32) = (960, 720);

/// Floor of the log axis: a constraint error of exactly 0 is drawn here.
const ERROR_FLOOR: f64 = 1e-17;

/// The energy of a run at its recorded steps.
#[derive(Clone, Debug, Default)]
pub struct EnergySeries {
    /// Scene name (the title).
    pub name: String,
    /// (t, kinetic, potential, total, constraint error) per recorded step.
    pub rows: Vec<[f64; 5]>,
}

impl EnergySeries {
    /// An empty series titled `name`.
    pub fn new(name: &str) -> Self {
        Self { name: name.to_string(), rows: Vec::new() }
    }

    /// Records the world's current energy and the given constraint error.
    pub fn push(&mut self, world: &World, constraint_error: f64) {
        let e = world.energy();
        self.rows.push([world.time(), e.kinetic, e.potential, e.total, constraint_error]);
    }

    /// Draws the plot into `path` (PNG).
    pub fn write(&self, path: &Path) -> anyhow::Result<()> {
        super::overlay::register_plot_font()?;
        let finite: Vec<&[f64; 5]> = self.rows.iter().filter(|r| r[..4].iter().all(|v| v.is_finite())).collect();
        anyhow::ensure!(!finite.is_empty(), "{}: no finite energy to plot", path.display());
        let t_max = finite.iter().map(|r| r[0]).fold(0.0, f64::max).max(1e-12);
        let (lo, hi) = finite
            .iter()
            .flat_map(|r| r[1..4].iter().copied())
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)));
        let pad = ((hi - lo) * 0.08).max(1e-9 * hi.abs().max(lo.abs()).max(1.0));
        let errors: Vec<(f64, f64)> = finite
            .iter()
            .map(|r| (r[0], if r[4].is_finite() && r[4] > ERROR_FLOOR { r[4] } else { ERROR_FLOOR }))
            .collect();
        let e_max = errors.iter().map(|e| e.1).fold(ERROR_FLOOR * 10.0, f64::max);
        let e_top = 10f64.powf(e_max.log10().ceil() + 0.5);

        let (width, height) = ENERGY_PLOT_SIZE;
        let mut rgb = vec![255u8; 3 * width as usize * height as usize];
        self.draw(&mut rgb, t_max, (lo - pad, hi + pad), &errors, e_top, path)?;
        super::png::Image::from_rgb(width, height, &rgb).write_png(path)
    }

    #[allow(clippy::too_many_arguments)]
    fn draw(
        &self,
        rgb: &mut [u8],
        t_max: f64,
        (lo, hi): (f64, f64),
        errors: &[(f64, f64)],
        e_top: f64,
        path: &Path,
    ) -> anyhow::Result<()> {
        let finite: Vec<&[f64; 5]> = self.rows.iter().filter(|r| r[..4].iter().all(|v| v.is_finite())).collect();
        let root = BitMapBackend::with_buffer(rgb, ENERGY_PLOT_SIZE).into_drawing_area();
        let draw_err = |e: DrawingAreaErrorKind<_>| anyhow::anyhow!("drawing {}: {e:?}", path.display());
        root.fill(&WHITE).map_err(draw_err)?;
        let (upper, lower) = root.split_vertically(ENERGY_PLOT_SIZE.1 * 3 / 5);
        let mut chart = ChartBuilder::on(&upper)
            .caption(format!("{}: energy", self.name), ("sans-serif", 22))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(90)
            .build_cartesian_2d(0.0..t_max, lo..hi)
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .x_desc("t (s)")
            .y_desc("energy (J)")
            .label_style(("sans-serif", 14))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(draw_err)?;
        let series =
            [("kinetic", 1, RGBColor(66, 133, 244)), ("potential", 2, RGBColor(234, 67, 53)), ("total", 3, BLACK)];
        for (label, column, color) in series {
            chart
                .draw_series(LineSeries::new(finite.iter().map(|r| (r[0], r[column])), color.stroke_width(2)))
                .map_err(draw_err)?
                .label(label)
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], color.stroke_width(2)));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 14))
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(draw_err)?;

        let mut chart = ChartBuilder::on(&lower)
            .caption("constraint error", ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(90)
            .build_cartesian_2d(0.0..t_max, (ERROR_FLOOR..e_top).log_scale())
            .map_err(draw_err)?;
        chart
            .configure_mesh()
            .x_desc("t (s)")
            .y_desc("|C| (m, rad)")
            .y_label_formatter(&|v| format!("{v:.0e}"))
            .label_style(("sans-serif", 14))
            .light_line_style(RGBColor(235, 235, 235))
            .draw()
            .map_err(draw_err)?;
        chart
            .draw_series(LineSeries::new(errors.iter().copied(), RGBColor(52, 168, 83).stroke_width(2)))
            .map_err(draw_err)?;
        root.present().map_err(draw_err)?;
        Ok(())
    }
}
