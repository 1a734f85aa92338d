//! Draws a [`Figure`] as an SVG document with plotters: axes with their units, log scales
//! where the figure asks, one colour per series, a legend beside the plot (where it never
//! hides a point). Every point is one `<circle>` (legend marks are rectangles), so a reader
//! can count the points in the page.

use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;

use super::figure::{Figure, XAxis};

/// Width and height of a plot and its legend in pixels.
const SIZE: (u32, u32) = (720, 380);
/// Width of the legend to the right of the plot.
const LEGEND_WIDTH: u32 = 200;

/// Series colours, in legend order; the first series (commcore) is always the dark blue.
const COLOURS: [RGBColor; 8] = [
    RGBColor(31, 78, 145),
    RGBColor(214, 96, 37),
    RGBColor(46, 140, 70),
    RGBColor(170, 40, 60),
    RGBColor(120, 80, 160),
    RGBColor(140, 100, 50),
    RGBColor(200, 80, 160),
    RGBColor(90, 90, 90),
];

/// The figure as one SVG document; an error when it has nothing to draw.
pub fn svg(figure: &Figure) -> Result<String, String> {
    if figure.point_count() == 0 {
        return Err(format!("figure {} has no points", figure.id));
    }
    let ys = figure.series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
    let (y_min, y_max) = bounds(ys);
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(draw_error)?;
        let (plot_area, legend_area) = root.split_horizontally(SIZE.0 - LEGEND_WIDTH);
        legend(&legend_area, figure)?;
        let root = plot_area;
        match &figure.x {
            XAxis::Categories { names, .. } => {
                // A linear axis whose ticks fall on the whole numbers, one per category.
                let x = -0.5..names.len() as f64 - 0.5;
                with_y(&root, figure, x, (y_min, y_max))?;
            }
            XAxis::Numeric { log, .. } => {
                let xs = figure.series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
                let (x_min, x_max) = bounds(xs);
                if *log {
                    let (lo, hi) = log_span(x_min, x_max);
                    with_y(&root, figure, (lo..hi).log_scale(), (y_min, y_max))?;
                } else {
                    let pad = ((x_max - x_min) * 0.05).max(0.5);
                    with_y(&root, figure, (x_min - pad)..(x_max + pad), (y_min, y_max))?;
                }
            }
        }
        root.present().map_err(draw_error)?;
    }
    Ok(out)
}

/// Picks the vertical scale, then draws.
fn with_y<X>(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    figure: &Figure,
    x: X,
    (y_min, y_max): (f64, f64),
) -> Result<(), String>
where
    X: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
{
    if figure.y_log {
        let (lo, hi) = log_span(y_min, y_max);
        draw(root, figure, x, (lo..hi).log_scale())
    } else {
        // Linear values start at zero so that bars of different heights compare truly.
        let lo = y_min.min(0.0);
        let hi = if y_max > lo { y_max * 1.1 } else { lo + 1.0 };
        draw(root, figure, x, lo..hi)
    }
}

fn draw<X, Y>(
    root: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    figure: &Figure,
    x: X,
    y: Y,
) -> Result<(), String>
where
    X: AsRangedCoord<Value = f64>,
    Y: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let mut chart = ChartBuilder::on(root)
        .caption(&figure.title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(42)
        .y_label_area_size(70)
        .build_cartesian_2d(x, y)
        .map_err(draw_error)?;
    let names = match &figure.x {
        XAxis::Categories { names, .. } => Some(names.clone()),
        XAxis::Numeric { .. } => None,
    };
    let x_labels = names.as_ref().map_or(10, |n| n.len() + 1);
    // Counts (processes, children) have no halves: leave such ticks unlabelled.
    let whole_xs = figure.series.iter().flat_map(|s| &s.points).all(|p| p.0.fract() == 0.0);
    let x_format = move |v: &f64| match &names {
        // Only whole positions name a category; plotters may add ticks between them.
        Some(names) if (v - v.round()).abs() < 1e-6 && *v >= 0.0 => {
            names.get(v.round() as usize).cloned().unwrap_or_default()
        }
        Some(_) => String::new(),
        None if whole_xs && v.fract() != 0.0 => String::new(),
        None => short(*v),
    };
    chart
        .configure_mesh()
        .x_desc(figure.x_label())
        .y_desc(&figure.y_label)
        .x_label_formatter(&x_format)
        .x_labels(x_labels)
        .y_label_formatter(&|v: &f64| short(*v))
        .x_max_light_lines(0)
        .y_max_light_lines(0)
        .y_labels(8)
        .draw()
        .map_err(draw_error)?;
    let joined = matches!(figure.x, XAxis::Numeric { .. });
    let count = figure.series.len();
    for (i, series) in figure.series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        // Series side by side within a category, so that equal values do not hide each other.
        let shift =
            if joined { 0.0 } else { (i as f64 - (count as f64 - 1.0) / 2.0) * 0.6 / count as f64 };
        if joined && series.points.len() > 1 {
            chart
                .draw_series(LineSeries::new(series.points.iter().copied(), colour.stroke_width(2)))
                .map_err(draw_error)?;
        }
        chart
            .draw_series(
                series.points.iter().map(|&(x, y)| Circle::new((x + shift, y), 4, colour.filled())),
            )
            .map_err(draw_error)?;
    }
    Ok(())
}

/// The legend: one coloured mark and name per series, top to bottom.
fn legend(
    area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>,
    figure: &Figure,
) -> Result<(), String> {
    for (i, series) in figure.series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let y = 44 + 20 * i as i32;
        area.draw(&Rectangle::new([(4, y - 5), (18, y + 5)], colour.filled()))
            .map_err(draw_error)?;
        let name: String = series.name.chars().take(34).collect();
        area.draw(&Text::new(name, (24, y - 7), ("sans-serif", 13))).map_err(draw_error)?;
    }
    Ok(())
}

/// The smallest and largest of `values`.
fn bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| (lo.min(v), hi.max(v)))
}

/// A log axis' span around positive `lo..=hi`, widened so that one value still has room.
fn log_span(lo: f64, hi: f64) -> (f64, f64) {
    (lo / 1.5, hi * 1.5)
}

/// A tick label: whole numbers with k/M suffixes, small ones with their decimals.
fn short(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 && (v / 1e6).fract().abs() < 1e-9 {
        format!("{}M", v / 1e6)
    } else if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if a >= 10.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if a >= 0.1 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

fn draw_error<E: std::fmt::Debug>(error: E) -> String {
    format!("drawing a plot: {error:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_point_is_one_circle() {
        let mut f = Figure::numeric("mem", "Memory", "processes", true, "bytes").log_y();
        for (i, n) in [1e3, 1e4, 1e5].iter().enumerate() {
            f.add("commcore", *n, Some(12.0 * n));
            f.add("baseline", *n, Some(480.0 * n * (i + 1) as f64));
        }
        let text = svg(&f).unwrap();
        assert_eq!(text.matches("<circle").count(), 6, "{text}");
        assert!(text.contains("commcore") && text.contains("baseline"));
        assert!(!text.contains("NaN"));
    }

    #[test]
    fn categories_label_the_axis() {
        let mut f = Figure::categorical("m", "Models", "model", &["direct", "lut"], "ns");
        f.add_at("commcore", "direct", Some(1.0));
        f.add_at("commcore", "lut", Some(2.0));
        let text = svg(&f).unwrap();
        assert_eq!(text.matches("<circle").count(), 2);
        assert!(text.contains("\ndirect\n") && text.contains("\nlut\n"), "{text}");
    }

    #[test]
    fn an_empty_figure_is_an_error() {
        let f = Figure::numeric("e", "Empty", "x", false, "y");
        assert!(svg(&f).is_err());
    }
}
