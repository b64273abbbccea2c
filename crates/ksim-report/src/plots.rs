//! Plots (SVG and PNG) with plotters: utilization over time, pending pods over time, latency CDF.
//!
//! plotters is built without its `ttf` feature (which needs fontconfig/freetype on the machine);
//! text is drawn with `ab_glyph` from DejaVu Sans shipped inside the `dejavu` crate, registered
//! once as the "sans-serif" family, so PNGs render on a bare machine. SVGs carry text as `<text>`
//! elements (the viewer's sans-serif font draws them); the registered font only sizes the layout.

use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor;
use plotters::style::{register_font, FontStyle};

use crate::error::ReportError;
use crate::recorder::Recorder;
use crate::summary::latencies;
use crate::utilization::Sweep;

pub(crate) const WIDTH: u32 = 960;
pub(crate) const HEIGHT: u32 = 420;

const PALETTE: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

/// The SVG text of each plot, for inlining into the HTML page.
#[derive(Debug, Clone)]
pub(crate) struct PlotSet {
    pub utilization: String,
    pub pending: String,
    pub latency_cdf: String,
    pub running: String,
    pub pool_utilization: String,
    pub nodes_in_use: String,
}

/// The embedded plot font could not be registered (it ships inside the binary, so this means a
/// broken build rather than a missing system package).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the embedded DejaVu Sans font could not be loaded")]
pub struct PlotFontError;

/// Registers DejaVu Sans (embedded) as plotters' "sans-serif" family, once per process: every
/// crate that draws plots (reports, sweeps, the FGD experiment, the scaling curve) calls this
/// before drawing, so text renders on a machine without font packages.
pub fn ensure_plot_font() -> Result<(), PlotFontError> {
    static FONT: OnceLock<bool> = OnceLock::new();
    let ok = *FONT.get_or_init(|| {
        register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular()).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(PlotFontError)
    }
}

fn ensure_font() -> Result<(), ReportError> {
    ensure_plot_font().map_err(|e| ReportError::Plot {
        name: "font".into(),
        message: e.to_string(),
    })
}

/// A named, coloured line.
type Series = (String, RGBColor, Vec<(f64, f64)>);

/// One line chart: everything the three plots need.
struct LineChart {
    name: &'static str,
    title: String,
    x_desc: String,
    y_desc: String,
    /// Left end of the x axis (0 except on a log axis).
    x_min: f64,
    x_max: f64,
    y_max: f64,
    /// The x values are log10 of the quantity; ticks print 10^x.
    x_log: bool,
    series: Vec<Series>,
    /// Shown in the middle when there is nothing to draw.
    empty_note: Option<&'static str>,
    /// The y axis counts things: no fractional ticks.
    integer_y: bool,
    legend: SeriesLabelPosition,
}

/// Tick labels without a useless ".0".
fn tick(v: &f64) -> String {
    if (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}")
    } else {
        crate::fmt::secs(*v)
    }
}

/// Tick label of a log10 axis: the quantity itself (0.01, 1, 100).
fn log_tick(v: &f64) -> String {
    let x = 10f64.powf(*v);
    if x >= 1.0 {
        format!("{}", (x * 10.0).round() / 10.0)
    } else {
        let t = format!("{x:.4}");
        t.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}

/// The time unit for the x axis, so a week-long run is not labelled in seconds.
fn time_unit(horizon_s: f64) -> (f64, &'static str) {
    if horizon_s <= 600.0 {
        (1.0, "s")
    } else if horizon_s <= 10.0 * 3600.0 {
        (60.0, "min")
    } else if horizon_s <= 10.0 * 86_400.0 {
        (3600.0, "h")
    } else {
        (86_400.0, "d")
    }
}

/// Step-shaped points: a sample's value holds until the next sample. Runs of equal values are
/// drawn as one segment, which keeps the SVGs small.
fn steps(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::new();
    let mut last_y: Option<f64> = None;
    for &(x, y) in points {
        match last_y {
            Some(prev) if prev == y => continue,
            Some(prev) => out.push((x, prev)),
            None => {}
        }
        out.push((x, y));
        last_y = Some(y);
    }
    // Carry the last value to the last sample.
    if let (Some(&(x, y)), Some(&(lx, _))) = (points.last(), out.last()) {
        if x != lx {
            out.push((x, y));
        }
    }
    out
}

fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, c: &LineChart) -> Result<(), String> {
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    root.fill(&WHITE).map_err(e)?;
    let x_max = if c.x_max > 0.0 && c.x_max.is_finite() {
        c.x_max
    } else {
        1.0
    };
    let y_max = if c.y_max > 0.0 && c.y_max.is_finite() {
        c.y_max
    } else {
        1.0
    };
    let mut chart = ChartBuilder::on(&root)
        .caption(&c.title, ("sans-serif", 22))
        .margin(14)
        .x_label_area_size(48)
        .y_label_area_size(64)
        .build_cartesian_2d(c.x_min.min(x_max - 1e-9)..x_max, 0f64..y_max)
        .map_err(e)?;
    // Counts up to 10 get one tick per integer; larger ranges get round steps anyway.
    let y_labels = if c.integer_y && y_max <= 11.0 {
        y_max.floor() as usize + 1
    } else {
        10
    };
    chart
        .configure_mesh()
        .x_label_formatter(if c.x_log { &log_tick } else { &tick })
        .y_label_formatter(&tick)
        .y_labels(y_labels)
        .x_desc(c.x_desc.as_str())
        .y_desc(c.y_desc.as_str())
        .label_style(("sans-serif", 14))
        .axis_desc_style(("sans-serif", 15))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(e)?;
    for (label, color, pts) in &c.series {
        let color = *color;
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
            .map_err(e)?
            .label(label.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    if !c.series.is_empty() {
        chart
            .configure_series_labels()
            .position(c.legend.clone())
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(180, 180, 180))
            .label_font(("sans-serif", 14))
            .draw()
            .map_err(e)?;
    }
    if let Some(note) = c.empty_note {
        let (w, h) = root.dim_in_pixel();
        let style = ("sans-serif", 20)
            .into_font()
            .color(&RGBColor(120, 120, 120))
            .pos(text_anchor::Pos::new(
                text_anchor::HPos::Center,
                text_anchor::VPos::Center,
            ));
        root.draw_text(note, &style, (w as i32 / 2, h as i32 / 2))
            .map_err(e)?;
    }
    root.present().map_err(e)?;
    Ok(())
}

fn render(c: &LineChart, dir: &Path) -> Result<String, ReportError> {
    let err = |message: String| ReportError::Plot {
        name: c.name.to_string(),
        message,
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        draw(root, c).map_err(err)?;
    }
    std::fs::write(dir.join(format!("{}.svg", c.name)), &svg)
        .map_err(|e| ReportError::io(dir.join(format!("{}.svg", c.name)), e))?;
    let png = dir.join(format!("{}.png", c.name));
    {
        let root = BitMapBackend::new(&png, (WIDTH, HEIGHT)).into_drawing_area();
        draw(root, c).map_err(err)?;
    }
    Ok(svg)
}

/// Writes the three plots as SVG and PNG into `dir` and returns the SVG texts.
pub(crate) fn render_all(
    rec: &Recorder,
    sweep: &Sweep,
    dir: &Path,
) -> Result<PlotSet, ReportError> {
    ensure_font()?;
    let horizon_s = rec.horizon().as_secs_f64();
    let (unit, unit_name) = time_unit(horizon_s);
    let x_max = horizon_s / unit;
    let t = |s: &crate::utilization::ClusterSample| s.at.as_secs_f64() / unit;

    // Utilization: requested/allocatable per resource, in percent.
    let mut series = Vec::new();
    let mut y_max: f64 = 100.0;
    for (c, name) in sweep.resources.iter().enumerate() {
        let pts: Vec<(f64, f64)> = sweep
            .samples
            .iter()
            .filter(|s| s.allocatable[c] > 0)
            .map(|s| {
                (
                    t(s),
                    100.0 * s.requested[c] as f64 / s.allocatable[c] as f64,
                )
            })
            .collect();
        if pts.is_empty() {
            continue;
        }
        y_max = pts.iter().map(|p| p.1).fold(y_max, f64::max);
        series.push((
            name.clone(),
            PALETTE[series.len() % PALETTE.len()],
            steps(&pts),
        ));
    }
    let utilization = LineChart {
        x_min: 0.0,
        x_log: false,
        name: "utilization",
        title: "Requested / allocatable, whole cluster".into(),
        x_desc: format!("time ({unit_name})"),
        y_desc: "% of allocatable".into(),
        x_max,
        // Headroom so the legend (upper right) does not hide the lines.
        y_max: y_max * 1.05 + 8.0 * series.len() as f64,
        empty_note: series.is_empty().then_some("no allocatable resources"),
        integer_y: false,
        legend: SeriesLabelPosition::UpperRight,
        series,
    };

    // Per pool: the bottleneck is often one pool while the cluster-wide line looks calm.
    let mut pool_series = Vec::new();
    let mut pool_y_max: f64 = 100.0;
    for (pool, res, pts) in crate::packing::pool_util_series(rec, &sweep.samples, unit) {
        pool_y_max = pts.iter().map(|p| p.1).fold(pool_y_max, f64::max);
        pool_series.push((
            format!("{pool} {res}"),
            PALETTE[pool_series.len() % PALETTE.len()],
            steps(&pts),
        ));
    }
    let pool_utilization = LineChart {
        x_min: 0.0,
        x_log: false,
        name: "pool_utilization",
        title: "Requested / allocatable per node pool".into(),
        x_desc: format!("time ({unit_name})"),
        y_desc: "% of the pool's allocatable".into(),
        x_max,
        y_max: pool_y_max * 1.05 + 8.0 * pool_series.len() as f64,
        empty_note: pool_series.is_empty().then_some("no allocatable resources"),
        integer_y: false,
        legend: SeriesLabelPosition::UpperRight,
        series: pool_series,
    };

    // Pending pods: value at each sample, and the peak reached since the previous sample.
    let pending_pts: Vec<(f64, f64)> = sweep
        .samples
        .iter()
        .map(|s| (t(s), s.pending as f64))
        .collect();
    let peak_pts: Vec<(f64, f64)> = sweep
        .samples
        .iter()
        .map(|s| (t(s), s.pending_peak as f64))
        .collect();
    let running_pts: Vec<(f64, f64)> = sweep
        .samples
        .iter()
        .map(|s| (t(s), s.running as f64))
        .collect();
    // Pending pods get their own axis: next to the running count (thousands) a peak of ten
    // would be a flat line. Running pods have their own chart.
    let y_max = peak_pts.iter().map(|p| p.1).fold(1.0, f64::max);
    let running_max = running_pts.iter().map(|p| p.1).fold(1.0, f64::max);
    let running = LineChart {
        x_min: 0.0,
        x_log: false,
        name: "running",
        title: "Running pods".into(),
        x_desc: format!("time ({unit_name})"),
        y_desc: "pods".into(),
        x_max,
        y_max: running_max * 1.25,
        empty_note: None,
        integer_y: true,
        legend: SeriesLabelPosition::UpperRight,
        series: vec![("running".into(), PALETTE[0], steps(&running_pts))],
    };
    let in_use_pts = crate::packing::in_use_series(rec, &sweep.samples, unit);
    let in_use_max = in_use_pts.iter().map(|p| p.1).fold(1.0, f64::max);
    let nodes_in_use = LineChart {
        x_min: 0.0,
        x_log: false,
        name: "nodes_in_use",
        title: "Nodes in use (hosting at least one pod)".into(),
        x_desc: format!("time ({unit_name})"),
        y_desc: "nodes".into(),
        x_max,
        y_max: in_use_max * 1.25,
        empty_note: None,
        integer_y: true,
        legend: SeriesLabelPosition::UpperRight,
        series: vec![("nodes in use".into(), PALETTE[1], steps(&in_use_pts))],
    };
    let pending = LineChart {
        x_min: 0.0,
        x_log: false,
        name: "pending",
        title: "Pending pods".into(),
        x_desc: format!("time ({unit_name})"),
        y_desc: "pods".into(),
        x_max,
        y_max: y_max * 1.4,
        empty_note: None,
        integer_y: true,
        legend: SeriesLabelPosition::UpperRight,
        series: vec![
            (
                "pending (peak since previous sample)".into(),
                RGBColor(250, 180, 170),
                steps(&peak_pts),
            ),
            ("pending".into(), PALETTE[3], steps(&pending_pts)),
        ],
    };

    // Latency CDF on a log time axis (the tail where p99 lives gets room), thinned to at most
    // 2,000 points (each an exact point of the CDF). Latencies below 1 ms are drawn at 1 ms.
    let lat = latencies(rec);
    let lx = |us: i64| (us.max(1000) as f64 / 1e6).log10();
    let n = lat.len();
    let mut cdf = Vec::new();
    if n > 0 {
        let m = n.min(2000);
        cdf.push((lx(lat[0]), 0.0));
        let mut prev_y = 0.0;
        for j in 1..=m {
            let idx = (j * n).div_ceil(m) - 1;
            let x = lx(lat[idx]);
            let y = (idx + 1) as f64 / n as f64;
            cdf.push((x, prev_y));
            cdf.push((x, y));
            prev_y = y;
        }
    }
    let (lat_min, lat_max) = match (lat.first(), lat.last()) {
        (Some(&a), Some(&b)) => (lx(a).floor(), lx(b).ceil().max(lx(a).floor() + 1.0)),
        _ => (-3.0, 0.0),
    };
    let mut series = if n > 0 {
        vec![(format!("{n} scheduled pods"), PALETTE[0], cdf)]
    } else {
        Vec::new()
    };
    // p50/p90/p99 as vertical markers, each in its own colour and named in the legend.
    for (p, color) in [(50, PALETTE[1]), (90, PALETTE[2]), (99, PALETTE[3])] {
        if let Some(v) = crate::summary::nearest_rank(&lat, p) {
            let x = lx(v);
            series.push((
                format!("p{p} = {} s", crate::fmt::secs(v as f64 / 1e6)),
                color,
                vec![(x, 0.0), (x, 1.0)],
            ));
        }
    }
    let latency_cdf = LineChart {
        x_min: lat_min,
        x_log: true,
        name: "latency_cdf",
        title: "Scheduling latency (scheduled − created), CDF".into(),
        x_desc: "latency (s, log scale; below 1 ms drawn at 1 ms)".into(),
        y_desc: "share of scheduled pods".into(),
        x_max: lat_max,
        y_max: 1.02,
        empty_note: (n == 0).then_some("no pod was scheduled"),
        integer_y: false,
        // A CDF ends high on the right: its lower right corner is free.
        legend: SeriesLabelPosition::LowerRight,
        series,
    };

    Ok(PlotSet {
        utilization: render(&utilization, dir)?,
        pool_utilization: render(&pool_utilization, dir)?,
        pending: render(&pending, dir)?,
        running: render(&running, dir)?,
        nodes_in_use: render(&nodes_in_use, dir)?,
        latency_cdf: render(&latency_cdf, dir)?,
    })
}

#[cfg(test)]
mod tests {
    use super::steps;

    #[test]
    fn steps_merge_equal_runs() {
        let pts = [(0.0, 1.0), (1.0, 1.0), (2.0, 3.0), (3.0, 3.0), (4.0, 3.0)];
        assert_eq!(
            steps(&pts),
            vec![(0.0, 1.0), (2.0, 1.0), (2.0, 3.0), (4.0, 3.0)]
        );
        assert_eq!(steps(&[(0.0, 2.0)]), vec![(0.0, 2.0)]);
        assert!(steps(&[]).is_empty());
    }
}
