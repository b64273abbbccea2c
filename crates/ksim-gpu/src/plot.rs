//! Plots of the curves (SVG and PNG): per workload, allocation ratio, fragmentation amount and
//! fragmentation ratio against arrived GPU demand, one line per policy (mean over seeds).
//!
//! plotters is built without its `ttf` feature; text is drawn with DejaVu Sans from the
//! `dejavu` crate, registered once as "sans-serif" by `ksim_report::ensure_plot_font`, so PNGs
//! render on a bare machine.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::error::FgdError;
use crate::experiment::{Curves, Policy, RunOutcome, MAX_BUCKET};

const WIDTH: u32 = 900;
const HEIGHT: u32 = 560;

/// One colour per policy, in `Policy::ALL` order.
const COLORS: [RGBColor; 6] = [
    RGBColor(140, 140, 140),
    RGBColor(31, 119, 180),
    RGBColor(148, 103, 189),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(214, 39, 40),
];

/// The mean over runs of one curve, per bucket (buckets missing in every run are skipped).
pub fn mean_curve(
    runs: &[&RunOutcome],
    pick: impl Fn(&Curves) -> &Vec<Option<f64>>,
) -> Vec<(f64, f64)> {
    (0..=MAX_BUCKET)
        .filter_map(|k| {
            let v: Vec<f64> = runs.iter().filter_map(|r| pick(&r.curves)[k]).collect();
            (!v.is_empty()).then(|| (k as f64, v.iter().sum::<f64>() / v.len() as f64))
        })
        .collect()
}

/// A named, coloured line.
type Series = (&'static str, RGBColor, Vec<(f64, f64)>);

struct Chart<'a> {
    title: String,
    y_desc: &'a str,
    y_max: f64,
    series: Vec<Series>,
}

fn draw<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, c: &Chart<'_>) -> Result<(), String> {
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    root.fill(&WHITE).map_err(e)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(&c.title, ("sans-serif", 22))
        .margin(16)
        .x_label_area_size(50)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..MAX_BUCKET as f64, 0f64..c.y_max)
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_desc("Arrived GPU demand (% of cluster GPU capacity)")
        .y_desc(c.y_desc)
        .x_labels(14)
        .y_labels(11)
        .x_label_formatter(&|v| format!("{v:.0}"))
        .y_label_formatter(&|v| format!("{v:.0}"))
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 16))
        .draw()
        .map_err(e)?;
    for (name, color, pts) in &c.series {
        let color = *color;
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), color.stroke_width(2)))
            .map_err(e)?
            .label(*name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 22, y)], color.stroke_width(3))
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .label_font(("sans-serif", 15))
        .draw()
        .map_err(e)?;
    root.present().map_err(e)?;
    Ok(())
}

fn render(path_stem: &Path, c: &Chart<'_>) -> Result<Vec<PathBuf>, FgdError> {
    let svg = path_stem.with_extension("svg");
    let png = path_stem.with_extension("png");
    let perr = |p: &Path, message: String| FgdError::Plot {
        path: p.to_path_buf(),
        message,
    };
    draw(
        SVGBackend::new(&svg, (WIDTH, HEIGHT)).into_drawing_area(),
        c,
    )
    .map_err(|m| perr(&svg, m))?;
    draw(
        BitMapBackend::new(&png, (WIDTH, HEIGHT)).into_drawing_area(),
        c,
    )
    .map_err(|m| perr(&png, m))?;
    Ok(vec![svg, png])
}

/// Writes `<workload>_allocation`, `<workload>_fragmentation` and
/// `<workload>_fragmentation_ratio` (`.svg` and `.png`) for every workload.
pub fn write_plots(
    dir: &Path,
    outcomes: &[RunOutcome],
    workloads: &[String],
    policies: &[Policy],
) -> Result<Vec<PathBuf>, FgdError> {
    ksim_report::ensure_plot_font().map_err(|e| FgdError::Plot {
        path: dir.to_path_buf(),
        message: e.to_string(),
    })?;
    std::fs::create_dir_all(dir).map_err(|e| FgdError::io(dir, e))?;
    let mut files = Vec::new();
    for w in workloads {
        let series = |pick: fn(&Curves) -> &Vec<Option<f64>>| {
            policies
                .iter()
                .map(|p| {
                    let runs: Vec<&RunOutcome> = outcomes
                        .iter()
                        .filter(|o| &o.workload == w && o.policy == *p)
                        .collect();
                    let color = COLORS[Policy::ALL.iter().position(|x| x == p).unwrap_or(0)];
                    (p.name(), color, mean_curve(&runs, pick))
                })
                .collect::<Vec<_>>()
        };
        let seeds = outcomes
            .iter()
            .filter(|o| &o.workload == w && Some(&o.policy) == policies.first())
            .count();
        let charts = [
            (
                "allocation",
                Chart {
                    title: format!("GPU allocation ratio, openb {w} (mean of {seeds} seeds)"),
                    y_desc: "GPU allocation ratio (%)",
                    y_max: 100.0,
                    series: series(|c| &c.allocation),
                },
            ),
            (
                "fragmentation",
                Chart {
                    title: format!("GPU fragmentation amount, openb {w} (mean of {seeds} seeds)"),
                    y_desc: "Fragmented GPUs (% of capacity)",
                    y_max: 0.0,
                    series: series(|c| &c.fragmentation),
                },
            ),
            (
                "fragmentation_ratio",
                Chart {
                    title: format!("GPU fragmentation ratio, openb {w} (mean of {seeds} seeds)"),
                    y_desc: "Fragmented / idle GPU milli (%)",
                    y_max: 100.0,
                    series: series(|c| &c.fragmentation_ratio),
                },
            ),
        ];
        for (name, mut chart) in charts {
            if chart.y_max == 0.0 {
                let top = chart
                    .series
                    .iter()
                    .flat_map(|(_, _, p)| p.iter().map(|(_, y)| *y))
                    .fold(0.0, f64::max);
                chart.y_max = ((top / 5.0).ceil() * 5.0).max(5.0);
            }
            files.extend(render(&dir.join(format!("{w}_{name}")), &chart)?);
        }
    }
    Ok(files)
}
