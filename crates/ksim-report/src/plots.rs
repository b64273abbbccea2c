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
use crate::slo::{SloFile, SloMark};
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
    /// Device allocation per DRA driver and pool; only in runs with `Devices` records.
    pub devices: Option<String>,
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
    /// Bottom of the y axis (0 except for a CDF fitted to its tail); values below are drawn at it.
    y_min: f64,
    y_max: f64,
    /// The x values are log10 of the quantity; ticks print 10^x.
    x_log: bool,
    series: Vec<Series>,
    /// Shown in the middle when there is nothing to draw.
    empty_note: Option<&'static str>,
    /// The y axis counts things: no fractional ticks.
    integer_y: bool,
    legend: SeriesLabelPosition,
    /// Labelled points drawn as filled circles (the SLO marks).
    marks: Vec<(String, RGBColor, (f64, f64))>,
    /// Series drawn dashed (the indexes into `series`).
    dashed: Vec<usize>,
    /// Font scale (1 for a full-size chart, less for a small multiple).
    scale: f64,
}

impl LineChart {
    /// A time-series chart with the defaults most plots share.
    fn over_time(name: &'static str, title: String, unit_name: &str, x_max: f64) -> LineChart {
        LineChart {
            name,
            title,
            x_desc: format!("time ({unit_name})"),
            y_desc: String::new(),
            x_min: 0.0,
            x_max,
            y_min: 0.0,
            y_max: 1.0,
            x_log: false,
            series: Vec::new(),
            empty_note: None,
            integer_y: false,
            legend: SeriesLabelPosition::UpperRight,
            marks: Vec::new(),
            dashed: Vec::new(),
            scale: 1.0,
        }
    }
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
    draw_on(&root, c)?;
    root.present().map_err(e)?;
    Ok(())
}

/// Draws one chart into an area (a whole image, or one panel of a grid).
fn draw_on<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &LineChart) -> Result<(), String> {
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    let px = |v: f64| (v * c.scale).round().max(8.0) as u32;
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
    let mut chart = ChartBuilder::on(root)
        .caption(&c.title, ("sans-serif", px(22.0)))
        .margin(px(14.0))
        .x_label_area_size(px(48.0))
        .y_label_area_size(px(64.0))
        .build_cartesian_2d(
            c.x_min.min(x_max - 1e-9)..x_max,
            c.y_min.min(y_max - 1e-9)..y_max,
        )
        .map_err(e)?;
    // Counts up to 10 get one tick per integer; larger ranges get round steps anyway.
    let y_labels = if c.integer_y && y_max <= 11.0 {
        y_max.floor() as usize + 1
    } else if c.scale < 1.0 {
        5
    } else {
        10
    };
    chart
        .configure_mesh()
        .x_label_formatter(if c.x_log { &log_tick } else { &tick })
        .y_label_formatter(&tick)
        .y_labels(y_labels)
        .x_labels(if c.scale < 1.0 { 6 } else { 10 })
        .x_desc(c.x_desc.as_str())
        .y_desc(c.y_desc.as_str())
        .label_style(("sans-serif", px(14.0)))
        .axis_desc_style(("sans-serif", px(15.0)))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(e)?;
    let clamp = |(x, y): (f64, f64)| (x, y.max(c.y_min));
    for (k, (label, color, pts)) in c.series.iter().enumerate() {
        let color = *color;
        let anno = if c.dashed.contains(&k) {
            chart
                .draw_series(DashedLineSeries::new(
                    pts.iter().copied().map(clamp),
                    8,
                    5,
                    color.stroke_width(2),
                ))
                .map_err(e)?
        } else {
            chart
                .draw_series(LineSeries::new(
                    pts.iter().copied().map(clamp),
                    color.stroke_width(2),
                ))
                .map_err(e)?
        };
        anno.label(label.as_str()).legend(move |(x, y)| {
            PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
        });
    }
    for (label, color, pt) in &c.marks {
        let color = *color;
        chart
            .draw_series(std::iter::once(Circle::new(*pt, 6, color.filled())))
            .map_err(e)?
            .label(label.as_str())
            .legend(move |(x, y)| Circle::new((x + 10, y), 5, color.filled()));
    }
    if !c.series.is_empty() || !c.marks.is_empty() {
        chart
            .configure_series_labels()
            .position(c.legend.clone())
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(180, 180, 180))
            .label_font(("sans-serif", px(14.0)))
            .draw()
            .map_err(e)?;
    }
    if let Some(note) = c.empty_note {
        let (w, h) = root.dim_in_pixel();
        let style = ("sans-serif", px(20.0))
            .into_font()
            .color(&RGBColor(120, 120, 120))
            .pos(text_anchor::Pos::new(
                text_anchor::HPos::Center,
                text_anchor::VPos::Center,
            ));
        root.draw_text(note, &style, (w as i32 / 2, h as i32 / 2))
            .map_err(e)?;
    }
    Ok(())
}

/// Small multiples: one panel per chart in a grid of `cols` columns under a title.
fn draw_grid<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    title: &str,
    charts: &[LineChart],
    cols: usize,
) -> Result<(), String> {
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    root.fill(&WHITE).map_err(e)?;
    let titled = root.titled(title, ("sans-serif", 22)).map_err(e)?;
    let rows = charts.len().div_ceil(cols.max(1));
    let areas = titled.split_evenly((rows, cols.max(1)));
    for (area, chart) in areas.iter().zip(charts) {
        draw_on(area, chart)?;
    }
    root.present().map_err(e)?;
    Ok(())
}

/// Writes a grid of small charts as `<name>.svg` and `.png` and returns the SVG text.
fn render_grid(
    name: &str,
    title: &str,
    charts: &[LineChart],
    cols: usize,
    dir: &Path,
) -> Result<String, ReportError> {
    let err = |message: String| ReportError::Plot {
        name: name.to_string(),
        message,
    };
    let rows = charts.len().div_ceil(cols.max(1)) as u32;
    let size = (WIDTH, 40 + rows * 250);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        draw_grid(root, title, charts, cols).map_err(err)?;
    }
    let svg_path = dir.join(format!("{name}.svg"));
    std::fs::write(&svg_path, &svg).map_err(|e| ReportError::io(&svg_path, e))?;
    let png = dir.join(format!("{name}.png"));
    {
        let root = BitMapBackend::new(&png, size).into_drawing_area();
        draw_grid(root, title, charts, cols).map_err(err)?;
    }
    Ok(svg)
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

/// Pools up to which the per-pool utilization is one chart with a line per pool and resource;
/// more pools get small multiples (one panel per pool).
pub(crate) const MAX_POOLS_ONE_CHART: usize = 4;

/// Writes every plot as SVG and PNG into `dir` and returns the SVG texts. `slo` (the run's
/// `slo.json`) is marked on the latency CDF.
pub(crate) fn render_all(
    rec: &Recorder,
    sweep: &Sweep,
    device_keys: &[(String, String)],
    dir: &Path,
    slo: Option<&SloFile>,
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
    let mut utilization = LineChart::over_time(
        "utilization",
        "Requested / allocatable, whole cluster".into(),
        unit_name,
        x_max,
    );
    utilization.y_desc = "% of allocatable".into();
    // Headroom so the legend (upper right) does not hide the lines.
    utilization.y_max = y_max * 1.05 + 8.0 * series.len() as f64;
    utilization.empty_note = series.is_empty().then_some("no allocatable resources");
    utilization.series = series;

    // Per pool: the bottleneck is often one pool while the cluster-wide line looks calm.
    let pool_lines = crate::packing::pool_util_series(rec, &sweep.samples, unit);
    let mut pool_names: Vec<&str> = Vec::new();
    for (pool, _, _) in &pool_lines {
        if !pool_names.contains(&pool.as_str()) {
            pool_names.push(pool);
        }
    }
    let pool_title = "Requested / allocatable per node pool";
    let pool_utilization = if pool_names.len() > MAX_POOLS_ONE_CHART {
        // Small multiples: one panel per pool (cpu and memory), all on the same 0–100% axis
        // (or higher, if a pool went over) so panels compare at a glance.
        let y_top = pool_lines
            .iter()
            .flat_map(|(_, _, pts)| pts.iter().map(|p| p.1))
            .fold(100.0, f64::max)
            * 1.3;
        let charts: Vec<LineChart> = pool_names
            .iter()
            .map(|pool| {
                let mut c = LineChart::over_time(
                    "pool_utilization",
                    format!("pool {pool}"),
                    unit_name,
                    x_max,
                );
                c.y_desc = "%".into();
                c.y_max = y_top;
                c.scale = 0.7;
                c.series = pool_lines
                    .iter()
                    .filter(|(p, _, _)| p == pool)
                    .enumerate()
                    .map(|(k, (_, res, pts))| (res.clone(), PALETTE[k % PALETTE.len()], steps(pts)))
                    .collect();
                c
            })
            .collect();
        render_grid(
            "pool_utilization",
            &format!(
                "{pool_title} ({} pools, % of the pool's allocatable)",
                pool_names.len()
            ),
            &charts,
            3,
            dir,
        )?
    } else {
        let mut pool_series = Vec::new();
        let mut pool_y_max: f64 = 100.0;
        for (pool, res, pts) in &pool_lines {
            pool_y_max = pts.iter().map(|p| p.1).fold(pool_y_max, f64::max);
            pool_series.push((
                format!("{pool} {res}"),
                PALETTE[pool_series.len() % PALETTE.len()],
                steps(pts),
            ));
        }
        let mut c = LineChart::over_time("pool_utilization", pool_title.into(), unit_name, x_max);
        c.y_desc = "% of the pool's allocatable".into();
        c.y_max = pool_y_max * 1.05 + 8.0 * pool_series.len() as f64;
        c.empty_note = pool_series.is_empty().then_some("no allocatable resources");
        c.series = pool_series;
        render(&c, dir)?
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
    let mut running = LineChart::over_time("running", "Running pods".into(), unit_name, x_max);
    running.y_desc = "pods".into();
    running.y_max = running_max * 1.25;
    running.integer_y = true;
    running.series = vec![("running".into(), PALETTE[0], steps(&running_pts))];

    let in_use_pts = crate::packing::in_use_series(rec, &sweep.samples, unit);
    let in_use_max = in_use_pts.iter().map(|p| p.1).fold(1.0, f64::max);
    let mut nodes_in_use = LineChart::over_time(
        "nodes_in_use",
        "Nodes in use (hosting at least one pod)".into(),
        unit_name,
        x_max,
    );
    nodes_in_use.y_desc = "nodes".into();
    nodes_in_use.y_max = in_use_max * 1.25;
    nodes_in_use.integer_y = true;
    nodes_in_use.series = vec![("nodes in use".into(), PALETTE[1], steps(&in_use_pts))];

    let mut pending = LineChart::over_time("pending", "Pending pods".into(), unit_name, x_max);
    pending.y_desc = "pods".into();
    pending.y_max = y_max * 1.4;
    pending.integer_y = true;
    pending.series = vec![
        (
            "pending (peak since previous sample)".into(),
            RGBColor(250, 180, 170),
            steps(&peak_pts),
        ),
        ("pending".into(), PALETTE[3], steps(&pending_pts)),
    ];

    let latency_cdf = latency_cdf(rec, slo);

    // Device allocation: allocated / total in percent per pool (per driver beyond
    // `MAX_PLOT_SERIES` pools); only when the run has DRA pools.
    let devices = if device_keys.is_empty() {
        None
    } else {
        let lines = crate::devices::plot_lines(rec, device_keys)?;
        let per_pool = device_keys.len() <= crate::devices::MAX_PLOT_SERIES;
        let mut c = LineChart::over_time(
            "devices",
            if per_pool {
                "DRA devices allocated, per driver and pool (allocated / total)".into()
            } else {
                "DRA devices allocated, per driver (its pools summed)".into()
            },
            unit_name,
            x_max,
        );
        c.y_desc = "% of devices".into();
        c.y_max = 110.0;
        c.series = lines
            .iter()
            .enumerate()
            .map(|(i, (label, pts))| {
                let last = pts.last().map(|p| (p.1, p.2)).unwrap_or((0, 0));
                let pts: Vec<(f64, f64)> = pts
                    .iter()
                    .map(|(at, a, t)| {
                        let pct = if *t == 0 {
                            0.0
                        } else {
                            *a as f64 * 100.0 / *t as f64
                        };
                        (at.as_secs_f64() / unit, pct)
                    })
                    .collect();
                (
                    format!("{label}: {}/{} at the end", last.0, last.1),
                    PALETTE[i % PALETTE.len()],
                    steps(&pts),
                )
            })
            .collect();
        Some(render(&c, dir)?)
    };

    Ok(PlotSet {
        devices,
        utilization: render(&utilization, dir)?,
        pool_utilization,
        pending: render(&pending, dir)?,
        running: render(&running, dir)?,
        nodes_in_use: render(&nodes_in_use, dir)?,
        latency_cdf: render(&latency_cdf, dir)?,
    })
}

/// The latency CDF over every pod that needed scheduling, on a log time axis (the tail where
/// p99 lives gets room), thinned to at most 2,000 points (each an exact point of the CDF).
/// Pods still pending at the end never arrive, so the curve ends at the scheduled share.
/// Latencies below 1 ms are drawn at 1 ms. Both axes are fitted to the data: x from the least
/// to the largest latency (and SLO bound, and percentile), y from just below the share the
/// curve starts at when most pods are that fast (so a tail of 3% is not squeezed into the top
/// 3% of the plot; the y axis says where it starts). p50/p90/p99 are vertical markers, dashed
/// at a lower bound when pending pods could move them; markers that would overlap are one
/// marker naming each. The SLO's conditions are points (within(D)>=S, pNN<=D) or a line
/// (scheduled>=S) the curve must pass on or above.
fn latency_cdf(rec: &Recorder, slo: Option<&SloFile>) -> LineChart {
    let dist = crate::summary::latency_dist(rec);
    let total = dist.len();
    let scheduled = dist.scheduled();
    let lat: &[i64] = &scheduled;
    let lx = |us: i64| (us.max(1000) as f64 / 1e6).log10();
    let lxs = |secs: f64| secs.max(1e-3).log10();
    let n = lat.len();
    let mut cdf = Vec::new();
    if n > 0 {
        let m = n.min(2000);
        cdf.push((lx(lat[0]), 0.0));
        let mut prev_y = 0.0;
        for j in 1..=m {
            let idx = (j * n).div_ceil(m) - 1;
            let x = lx(lat[idx]);
            let y = (idx + 1) as f64 / total as f64;
            cdf.push((x, prev_y));
            cdf.push((x, y));
            prev_y = y;
        }
    }
    let marks: &[SloMark] = slo.map_or(&[], |f| f.marks.as_slice());
    // The x range covers the latencies and every SLO bound.
    let mut lo = lat.first().map_or(-3.0, |&a| lx(a).floor());
    let mut hi = lat.last().map_or(0.0, |&b| lx(b).ceil());
    for m in marks {
        if let Some(d) = m.within_s {
            lo = lo.min(lxs(d).floor());
            hi = hi.max(lxs(d).ceil());
        }
    }
    // ... and the percentiles' lower bounds, which pending pods' waits may put past them.
    let pcts: Vec<(u32, crate::summary::MaybeCensored)> = [50, 90, 99]
        .into_iter()
        .filter_map(|p| Some((p, dist.percentile(p)?)))
        .collect();
    for (_, m) in &pcts {
        lo = lo.min(lxs(m.secs).floor());
        hi = hi.max(lxs(m.secs).ceil());
    }
    let censored = dist.censored();
    let hi = hi.max(lo + 1.0);
    let y_min = cdf_y_min(lat, total, marks);
    let mut chart = LineChart {
        name: "latency_cdf",
        title: "Scheduling latency (scheduled − created), CDF over pods that needed scheduling"
            .into(),
        x_desc: "latency (s, log scale; below 1 ms drawn at 1 ms)".into(),
        y_desc: if y_min > 0.0 {
            format!(
                "share of pods that needed scheduling (axis from {}%)",
                crate::fmt::secs(y_min * 100.0)
            )
        } else {
            "share of pods that needed scheduling".into()
        },
        x_min: lo,
        x_max: hi,
        y_min,
        y_max: 1.0 + (1.0 - y_min) * 0.02,
        x_log: true,
        series: Vec::new(),
        empty_note: (total == 0).then_some("no pod needed scheduling"),
        integer_y: false,
        // A CDF ends high on the right: its lower right corner is free.
        legend: SeriesLabelPosition::LowerRight,
        marks: Vec::new(),
        dashed: Vec::new(),
        scale: 1.0,
    };
    if n > 0 {
        let label = if censored > 0 {
            format!("{n} scheduled, {censored} pending at the end")
        } else {
            format!("{n} scheduled pods")
        };
        chart.series.push((label, PALETTE[0], cdf));
    }
    // p50/p90/p99 as vertical markers, each in its own colour and named in the legend; a
    // percentile that pending pods could still move is dashed at its lower bound. Markers
    // closer than 1.5% of the axis are one marker (the first one's colour) naming each.
    let near = (hi - lo) * 0.015;
    let mut groups: Vec<(f64, Vec<(u32, crate::summary::MaybeCensored)>)> = Vec::new();
    for (p, m) in pcts {
        let x = lxs(m.secs);
        match groups.last_mut() {
            Some((gx, g)) if (x - *gx).abs() <= near => g.push((p, m)),
            _ => groups.push((x, vec![(p, m)])),
        }
    }
    for (x, g) in groups {
        let color = match g[0].0 {
            50 => PALETTE[1],
            90 => PALETTE[2],
            _ => PALETTE[3],
        };
        let names: Vec<String> = g
            .iter()
            .map(|(p, m)| {
                if m.censored {
                    format!("p{p} > {} s", crate::fmt::secs(m.secs))
                } else {
                    format!("p{p} = {} s", crate::fmt::secs(m.secs))
                }
            })
            .collect();
        let mut label = names.join(" · ");
        if g.iter().any(|(_, m)| m.censored) {
            label.push_str(" (lower bound: pods pending at the end)");
            chart.dashed.push(chart.series.len());
        }
        chart
            .series
            .push((label, color, vec![(x, y_min), (x, 1.0)]));
    }
    // The SLO: the curve must pass on or above each point / line.
    for (m, met) in crate::slo::mark_verdicts(marks, &dist) {
        let verdict = if met { "met" } else { "NOT met" };
        // The bound in black (the percentile markers use the palette), its point coloured by
        // the verdict.
        let color = BLACK;
        let point = if met {
            RGBColor(30, 150, 60)
        } else {
            RGBColor(220, 20, 20)
        };
        match m.within_s {
            Some(d) => {
                let x = lxs(d);
                chart.dashed.push(chart.series.len());
                chart.series.push((
                    format!("SLO {} ({verdict})", m.condition),
                    color,
                    vec![(lo, m.share), (x, m.share), (x, y_min)],
                ));
                chart.marks.push((
                    format!("{} s, {:.1}%", crate::fmt::secs(d), m.share * 100.0),
                    point,
                    (x, m.share),
                ));
            }
            None => {
                chart.dashed.push(chart.series.len());
                chart.series.push((
                    format!("SLO {} ({verdict})", m.condition),
                    color,
                    vec![(lo, m.share), (hi, m.share)],
                ));
            }
        }
    }
    chart
}

/// The bottom of the CDF's y axis: 0, unless more than half the pods are at the curve's first
/// step (the fastest latency drawn, 1 ms and below together); then twice the rest below 1
/// (97% at the first step: from 94%), in whole percents, low enough for every SLO share.
fn cdf_y_min(lat: &[i64], total: usize, marks: &[SloMark]) -> f64 {
    let Some(&first) = lat.first() else {
        return 0.0;
    };
    let step = first.max(1000);
    let at_first = lat.partition_point(|&v| v <= step) as f64 / total.max(1) as f64;
    if at_first <= 0.5 {
        return 0.0;
    }
    let mut y = (1.0 - 2.0 * (1.0 - at_first)).max(0.0);
    for m in marks {
        y = y.min(m.share - 0.02);
    }
    ((y * 100.0).floor() / 100.0).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::{cdf_y_min, steps};

    #[test]
    fn cdf_axis_fits_a_fast_majority() {
        // 97 of 100 pods within 1 ms: the axis starts at 94%.
        let mut lat = vec![500; 97];
        lat.extend([2_000_000, 5_000_000, 9_000_000]);
        assert_eq!(cdf_y_min(&lat, 100, &[]), 0.94);
        // An SLO share below it lowers it.
        let m = crate::slo::SloMark {
            condition: "within(1s)>=90%".into(),
            within_s: Some(1.0),
            share: 0.9,
        };
        assert_eq!(cdf_y_min(&lat, 100, &[m]), 0.88);
        // Spread latencies keep the whole axis.
        let spread: Vec<i64> = (1..=100).map(|i| i * 100_000).collect();
        assert_eq!(cdf_y_min(&spread, 100, &[]), 0.0);
        assert_eq!(cdf_y_min(&[], 0, &[]), 0.0);
    }

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
