//! Comparison plots (SVG and PNG): each headline figure against each axis (one file per axis, a
//! grid of panels), the latency CDFs of all runs overlaid, and a capacity plan's curve.
//!
//! As in ksim-report, plotters is built without its `ttf` feature; DejaVu Sans from the `dejavu`
//! crate is registered once as "sans-serif" (`ksim_report::ensure_plot_font`), so PNGs render on
//! a bare machine.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::error::SweepError;
use crate::table::RunTable;

const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];
const PASS: RGBColor = RGBColor(44, 160, 44);
const FAIL: RGBColor = RGBColor(214, 39, 40);

fn ensure_font() -> Result<(), SweepError> {
    ksim_report::ensure_plot_font().map_err(|e| SweepError::Plot {
        name: "font".into(),
        message: e.to_string(),
    })
}

/// The x axis of a panel.
#[derive(Debug, Clone)]
pub enum XAxis {
    Numeric,
    /// Values are positions 0..n; ticks show the labels.
    Categories(Vec<String>),
}

/// One small chart.
#[derive(Debug, Clone)]
pub struct Panel {
    pub title: String,
    pub x: XAxis,
    pub x_desc: String,
    /// Points, each with its colour.
    pub points: Vec<(f64, f64, RGBColor)>,
    /// A line through (x, y), drawn under the points (e.g. the mean per axis value).
    pub line: Vec<(f64, f64)>,
    /// A horizontal reference line (an SLO threshold).
    pub hline: Option<f64>,
}

fn range(vals: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in vals {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() || !hi.is_finite() {
        return (0.0, 1.0);
    }
    if lo == hi {
        let pad = if lo == 0.0 { 1.0 } else { lo.abs() * 0.1 };
        return (lo - pad, hi + pad);
    }
    let pad = (hi - lo) * 0.08;
    (lo - pad, hi + pad)
}

fn short(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    let a = v.abs();
    if ((a - a.round()).abs() < 1e-9 && a < 1e7) || a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// A tick label with enough decimals to tell ticks `span / 5` apart.
fn ticked(v: f64, span: f64) -> String {
    let step = span / 5.0;
    let decimals = if step > 0.0 && step.is_finite() {
        (-step.log10()).ceil().clamp(0.0, 6.0) as usize
    } else {
        2
    };
    format!("{v:.decimals$}")
}

fn draw_panel<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, p: &Panel) -> Result<(), String> {
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    let (x0, x1) = match &p.x {
        XAxis::Categories(c) => (-0.5, c.len().max(1) as f64 - 0.5),
        XAxis::Numeric => range(p.points.iter().map(|q| q.0)),
    };
    let ys = p
        .points
        .iter()
        .map(|q| q.1)
        .chain(p.hline)
        .collect::<Vec<_>>();
    // The y axis starts at zero for figures that cannot go negative, so a change of 0.2% is
    // drawn as 0.2% of the height, not stretched to all of it.
    let non_negative = ys.iter().all(|v| *v >= 0.0);
    let (y0, y1) = range(ys.into_iter().chain(non_negative.then_some(0.0)));
    let y0 = if non_negative { 0.0 } else { y0 };
    let mut chart = ChartBuilder::on(area)
        .caption(&p.title, ("sans-serif", 15))
        .margin(8)
        .x_label_area_size(34)
        .y_label_area_size(58)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(e)?;
    let cats = match &p.x {
        XAxis::Categories(c) => Some(c.clone()),
        XAxis::Numeric => None,
    };
    let fmt_x = |x: &f64| match &cats {
        Some(c) => {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 {
                c.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        }
        None => short(*x),
    };
    let n_labels = match &p.x {
        XAxis::Categories(c) => c.len() * 2 + 1,
        XAxis::Numeric => 6,
    };
    chart
        .configure_mesh()
        .x_labels(n_labels)
        .x_label_formatter(&fmt_x)
        .y_labels(5)
        .y_label_formatter(&|y| ticked(*y, y1 - y0))
        .x_desc(p.x_desc.as_str())
        .label_style(("sans-serif", 11))
        .axis_desc_style(("sans-serif", 12))
        .light_line_style(RGBColor(238, 238, 238))
        .draw()
        .map_err(e)?;
    if let Some(h) = p.hline {
        chart
            .draw_series(LineSeries::new(
                vec![(x0, h), (x1, h)],
                RGBColor(120, 120, 120).stroke_width(1),
            ))
            .map_err(e)?;
    }
    if p.line.len() > 1 {
        chart
            .draw_series(LineSeries::new(
                p.line.iter().copied(),
                RGBColor(31, 119, 180).mix(0.6).stroke_width(2),
            ))
            .map_err(e)?;
    }
    chart
        .draw_series(
            p.points
                .iter()
                .map(|&(x, y, c)| Circle::new((x, y), 4, c.filled())),
        )
        .map_err(e)?;
    Ok(())
}

fn grid<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    title: &str,
    panels: &[Panel],
    cols: usize,
) -> Result<(), String> {
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    root.fill(&WHITE).map_err(e)?;
    let root = root.titled(title, ("sans-serif", 20)).map_err(e)?;
    let rows = panels.len().div_ceil(cols).max(1);
    let areas = root.split_evenly((rows, cols));
    for (a, p) in areas.iter().zip(panels) {
        draw_panel(a, p)?;
    }
    root.present().map_err(e)?;
    Ok(())
}

/// Writes `<dir>/<name>.svg` and `.png` with a grid of panels.
pub fn write_grid(
    dir: &Path,
    name: &str,
    title: &str,
    panels: &[Panel],
    cols: usize,
) -> Result<(), SweepError> {
    ensure_font()?;
    let cols = cols.clamp(1, panels.len().max(1));
    let rows = panels.len().div_ceil(cols).max(1);
    let size = (420 * cols as u32, 300 * rows as u32 + 40);
    let err = |message: String| SweepError::Plot {
        name: name.to_string(),
        message,
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        grid(root, title, panels, cols).map_err(err)?;
    }
    let svg_path = dir.join(format!("{name}.svg"));
    std::fs::write(&svg_path, svg).map_err(|e| SweepError::io(&svg_path, e))?;
    let png = dir.join(format!("{name}.png"));
    {
        let root = BitMapBackend::new(&png, size).into_drawing_area();
        grid(root, title, panels, cols).map_err(err)?;
    }
    Ok(())
}

/// Keeps plot file names to safe characters.
fn file_part(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Writes the comparison plots of a table into `dir` and returns the files written (SVG):
/// `axis-<column>.{svg,png}` per axis (or `runs.{svg,png}` when the table has no axes: each
/// figure per run), and `latency_cdf.{svg,png}`.
pub fn write_table_plots(table: &RunTable, dir: &Path) -> Result<Vec<PathBuf>, SweepError> {
    let metrics: Vec<_> = table
        .columns()
        .into_iter()
        .filter(|m| m.name != "pods")
        .collect();
    let mut written = Vec::new();
    // Axes to plot against: each sweep axis, or the runs themselves.
    let mut axes: Vec<(String, Vec<String>, bool)> = table
        .axes
        .iter()
        .enumerate()
        .map(|(k, name)| {
            let labels: Vec<String> = table.rows.iter().map(|r| r.values[k].clone()).collect();
            (
                name.clone(),
                labels,
                table.numeric_axes.get(k).copied().unwrap_or(false),
            )
        })
        .collect();
    if axes.is_empty() {
        axes.push((
            "run".into(),
            table.rows.iter().map(|r| r.id.clone()).collect(),
            false,
        ));
    }
    for (name, labels, numeric) in &axes {
        // Category order: first appearance (the sweep file's order).
        let mut cats: Vec<String> = Vec::new();
        for l in labels {
            if !cats.contains(l) {
                cats.push(l.clone());
            }
        }
        let xs: Vec<f64> = labels
            .iter()
            .map(|l| {
                if *numeric {
                    l.parse::<f64>().unwrap_or(0.0)
                } else {
                    cats.iter().position(|c| c == l).unwrap_or(0) as f64
                }
            })
            .collect();
        let mut panels = Vec::new();
        for m in &metrics {
            // Runs compared side by side: only the figures that differ get a panel.
            if table.axes.is_empty() {
                let mut vals = table.rows.iter().map(|r| m.value(r));
                let first = vals.next().flatten();
                if vals.all(|v| v == first) {
                    continue;
                }
            }
            let mut points = Vec::new();
            for (i, r) in table.rows.iter().enumerate() {
                // A censored latency has no point to draw.
                if let Some((y, false)) = m.value(r) {
                    let y = if m.unit == ksim_report::compare::Unit::Share {
                        y * 100.0
                    } else {
                        y
                    };
                    let color = if table.axes.is_empty() {
                        PALETTE[i % PALETTE.len()]
                    } else {
                        PALETTE[0]
                    };
                    points.push((xs[i], y, color));
                }
            }
            // The mean per axis value, in x order.
            let mut line: Vec<(f64, f64)> = Vec::new();
            if !table.axes.is_empty() {
                let mut uniq: Vec<f64> = xs.clone();
                uniq.sort_by(f64::total_cmp);
                uniq.dedup();
                for x in uniq {
                    let ys: Vec<f64> = points.iter().filter(|p| p.0 == x).map(|p| p.1).collect();
                    if !ys.is_empty() {
                        line.push((x, ys.iter().sum::<f64>() / ys.len() as f64));
                    }
                }
            }
            let unit = match m.unit {
                ksim_report::compare::Unit::Share => " (%)",
                ksim_report::compare::Unit::Seconds => " (s)",
                _ => "",
            };
            panels.push(Panel {
                title: format!("{}{unit}", m.name),
                x: if *numeric {
                    XAxis::Numeric
                } else {
                    XAxis::Categories(cats.clone())
                },
                x_desc: name.clone(),
                points,
                line,
                hline: None,
            });
        }
        let file = if table.axes.is_empty() {
            "runs".to_string()
        } else {
            format!("axis-{}", file_part(name))
        };
        let title = if table.axes.is_empty() {
            "Headline figures per run".to_string()
        } else {
            format!("Headline figures against {name} (dots: runs; line: mean per value)")
        };
        write_grid(dir, &file, &title, &panels, 4)?;
        written.push(dir.join(format!("{file}.svg")));
    }
    write_latency_cdfs(table, dir)?;
    written.push(dir.join("latency_cdf.svg"));
    Ok(written)
}

/// Latencies (scheduled − created, seconds) of a run's scheduled pods, sorted, from pods.csv.
pub fn latencies(dir: &Path) -> Result<Vec<f64>, SweepError> {
    let path = dir.join("pods.csv");
    let mut r = csv::Reader::from_path(&path).map_err(|e| SweepError::Plot {
        name: "latency_cdf".into(),
        message: format!("{}: {e}", path.display()),
    })?;
    let bad = |m: String| SweepError::input(path.display().to_string(), m);
    let headers = r.headers().map_err(|e| bad(e.to_string()))?.clone();
    let col = |n: &str| {
        headers
            .iter()
            .position(|h| h == n)
            .ok_or_else(|| bad(format!("no column {n}")))
    };
    let (c, s) = (col("created_s")?, col("scheduled_s")?);
    let mut out = Vec::new();
    for rec in r.records() {
        let rec = rec.map_err(|e| bad(e.to_string()))?;
        let (Some(cv), Some(sv)) = (rec.get(c), rec.get(s)) else {
            continue;
        };
        if sv.is_empty() {
            continue;
        }
        if let (Ok(cv), Ok(sv)) = (cv.parse::<f64>(), sv.parse::<f64>()) {
            out.push(sv - cv);
        }
    }
    out.sort_by(f64::total_cmp);
    Ok(out)
}

fn draw_cdfs<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    series: &[(String, Vec<(f64, f64)>)],
    x_range: (f64, f64),
) -> Result<(), String> {
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    root.fill(&WHITE).map_err(e)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            "Scheduling latency (scheduled − created), CDF per run",
            ("sans-serif", 20),
        )
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(60)
        .build_cartesian_2d(x_range.0..x_range.1, 0f64..1.02)
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc("latency (s, log scale; below 1 ms drawn at 1 ms)")
        .y_desc("share of scheduled pods")
        // x is log10 of the latency: label ticks with the latency itself.
        .x_label_formatter(&|x| short(10f64.powf(*x)))
        .label_style(("sans-serif", 13))
        .light_line_style(RGBColor(238, 238, 238))
        .draw()
        .map_err(e)?;
    for (i, (label, pts)) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        // Every other run dashed, so curves stay apart in grey print and for colour-blind
        // readers; the legend shows the same dash.
        let dashed = i % 2 == 1;
        let s = if dashed {
            chart
                .draw_series(DashedLineSeries::new(
                    pts.iter().copied(),
                    8,
                    5,
                    color.stroke_width(2),
                ))
                .map_err(e)?
        } else {
            chart
                .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
                .map_err(e)?
        };
        if series.len() <= 12 {
            s.label(label.as_str()).legend(move |(x, y)| {
                let style = color.stroke_width(2);
                // Solid: both halves joined; dashed: a gap between them.
                let (end, start) = if dashed { (7, 11) } else { (18, 18) };
                EmptyElement::at((x, y))
                    + PathElement::new(vec![(0, 0), (end, 0)], style)
                    + PathElement::new(vec![(start, 0), (18, 0)], style)
            });
        }
    }
    if series.len() <= 12 && !series.is_empty() {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(RGBColor(180, 180, 180))
            .label_font(("sans-serif", 12))
            .draw()
            .map_err(e)?;
    }
    root.present().map_err(e)?;
    Ok(())
}

/// `latency_cdf.{svg,png}`: every run's latency CDF on one chart (legend up to 12 runs).
pub fn write_latency_cdfs(table: &RunTable, dir: &Path) -> Result<(), SweepError> {
    ensure_font()?;
    let mut series = Vec::new();
    // Log time axis: the tail where p99 lives gets as much room as the body.
    let lx = |v: f64| v.max(0.001).log10();
    let (mut x_min, mut x_max) = (f64::INFINITY, f64::NEG_INFINITY);
    for r in &table.rows {
        let lat = latencies(&r.dir)?;
        let n = lat.len();
        let mut pts = Vec::new();
        if n > 0 {
            // At most 400 exact points of the step function per run.
            let m = n.min(400);
            let mut prev = 0.0;
            pts.push((lx(lat[0]), 0.0));
            for j in 1..=m {
                let idx = (j * n).div_ceil(m) - 1;
                let y = (idx + 1) as f64 / n as f64;
                pts.push((lx(lat[idx]), prev));
                pts.push((lx(lat[idx]), y));
                prev = y;
            }
            x_min = x_min.min(lx(lat[0]).floor());
            x_max = x_max.max(lx(lat[n - 1]).ceil());
        }
        series.push((r.id.clone(), pts));
    }
    let x_range = if x_min.is_finite() && x_max.is_finite() {
        (x_min, x_max.max(x_min + 1.0))
    } else {
        (-3.0, 0.0)
    };
    let size = (1000, 520);
    let err = |message: String| SweepError::Plot {
        name: "latency_cdf".into(),
        message,
    };
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        draw_cdfs(root, &series, x_range).map_err(err)?;
    }
    let p = dir.join("latency_cdf.svg");
    std::fs::write(&p, svg).map_err(|e| SweepError::io(&p, e))?;
    let png = dir.join("latency_cdf.png");
    {
        let root = BitMapBackend::new(&png, size).into_drawing_area();
        draw_cdfs(root, &series, x_range).map_err(err)?;
    }
    Ok(())
}

/// Colours for a capacity plan's points.
pub fn pass_color(pass: bool) -> RGBColor {
    if pass {
        PASS
    } else {
        FAIL
    }
}
