//! The scaling curve: pods/s of the scheduling loop against node count and against pods per
//! node, for each workload kind, written as a CSV, a Markdown table and a two-panel plot (SVG
//! and PNG). `ksim bench --scaling --out DIR` runs it.
//!
//! Every point is a generated workload ([`crate::gen`]) through [`crate::run_once`], the same
//! loop `ksim bench` times; with `repeat > 1` the median run is kept.

use std::fmt::Write as _;
use std::path::Path;

use plotters::prelude::*;

use crate::gen::{generate, Kind, Spec};
use crate::run::{run_once, Options};
use crate::BenchError;

/// Upstream kube-scheduler v1.35.4 in-process on a 2-core machine (issue 8's yardstick), for
/// the reference workloads: (kind, nodes, pods, pods/s).
pub const UPSTREAM: [(Kind, usize, usize, f64); 2] = [
    (Kind::Plain, 5000, 10_000, 704.0),
    (Kind::Mixed, 5000, 10_000, 264.0),
];

/// Which points to measure.
#[derive(Debug, Clone)]
pub struct ScalingSpec {
    pub kinds: Vec<Kind>,
    /// Node counts of the first curve (pods fixed at `pods`).
    pub node_counts: Vec<usize>,
    pub pods: usize,
    /// Pods of the second curve, on `fixed_nodes` nodes (pods per node = pods / nodes).
    pub fixed_nodes: usize,
    pub pod_counts: Vec<usize>,
    pub repeat: usize,
    pub seed: u64,
    /// The Kubernetes version and feature gates the scheduler behaves as (default: 1.36).
    pub gates: ksim_api::version::FeatureGates,
}

impl Default for ScalingSpec {
    fn default() -> Self {
        ScalingSpec {
            kinds: Kind::ALL.to_vec(),
            node_counts: vec![1000, 5000, 15_000],
            pods: 10_000,
            fixed_nodes: 5000,
            pod_counts: vec![5000, 10_000, 25_000, 50_000],
            repeat: 1,
            seed: 1,
            gates: Default::default(),
        }
    }
}

/// One measured point.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// "nodes" (first curve) or "pods-per-node" (second curve).
    pub curve: &'static str,
    pub kind: Kind,
    pub nodes: usize,
    pub pods: usize,
    pub scheduled: usize,
    pub secs: f64,
    pub pods_per_sec: f64,
    pub digest: u64,
}

impl Point {
    pub fn pods_per_node(&self) -> f64 {
        self.pods as f64 / self.nodes.max(1) as f64
    }
}

fn measure(
    curve: &'static str,
    kind: Kind,
    nodes: usize,
    pods: usize,
    spec: &ScalingSpec,
) -> Result<Point, BenchError> {
    let w = generate(&Spec::reference(kind, nodes, pods, spec.seed))?;
    let opts = Options {
        seed: spec.seed,
        gates: spec.gates.clone(),
        ..Default::default()
    };
    let mut runs = Vec::new();
    for _ in 0..spec.repeat.max(1) {
        runs.push(run_once(&w, &opts)?);
    }
    runs.sort_by(|a, b| a.secs.total_cmp(&b.secs));
    let r = &runs[runs.len() / 2];
    Ok(Point {
        curve,
        kind,
        nodes,
        pods,
        scheduled: r.scheduled,
        secs: r.secs,
        pods_per_sec: r.pods_per_sec(),
        digest: r.digest,
    })
}

/// Measures every point, calling `progress` after each.
pub fn run(spec: &ScalingSpec, mut progress: impl FnMut(&Point)) -> Result<Vec<Point>, BenchError> {
    let mut out = Vec::new();
    for &kind in &spec.kinds {
        for &n in &spec.node_counts {
            let p = measure("nodes", kind, n, spec.pods, spec)?;
            progress(&p);
            out.push(p);
        }
        for &pods in &spec.pod_counts {
            let p = measure("pods-per-node", kind, spec.fixed_nodes, pods, spec)?;
            progress(&p);
            out.push(p);
        }
    }
    Ok(out)
}

fn upstream_for(p: &Point) -> Option<f64> {
    UPSTREAM
        .iter()
        .find(|(k, n, pods, _)| *k == p.kind && *n == p.nodes && *pods == p.pods)
        .map(|u| u.3)
}

/// The CSV: one row per point.
pub fn csv(points: &[Point]) -> String {
    let mut s = String::from(
        "curve,kind,nodes,pods,pods_per_node,scheduled,secs,pods_per_sec,upstream_pods_per_sec,digest\n",
    );
    for p in points {
        let _ = writeln!(
            s,
            "{},{},{},{},{:.2},{},{:.4},{:.0},{},{:016x}",
            p.curve,
            p.kind.as_str(),
            p.nodes,
            p.pods,
            p.pods_per_node(),
            p.scheduled,
            p.secs,
            p.pods_per_sec,
            upstream_for(p)
                .map(|u| format!("{u:.0}"))
                .unwrap_or_default(),
            p.digest
        );
    }
    s
}

/// The Markdown table: kinds as rows, points as columns, pods/s in the cells (and the
/// upstream figure beside ours where we have it).
pub fn markdown(points: &[Point]) -> String {
    let mut s = String::new();
    for (curve, title) in [
        ("nodes", "pods/s against node count"),
        ("pods-per-node", "pods/s against pods per node"),
    ] {
        let cols: Vec<(usize, usize)> = {
            let mut c: Vec<(usize, usize)> = points
                .iter()
                .filter(|p| p.curve == curve)
                .map(|p| (p.nodes, p.pods))
                .collect();
            c.sort();
            c.dedup();
            c
        };
        if cols.is_empty() {
            continue;
        }
        let _ = writeln!(s, "**{title}**\n");
        s.push_str("| kind |");
        for (n, pods) in &cols {
            if curve == "nodes" {
                let _ = write!(s, " {n} nodes |");
            } else {
                let _ = write!(s, " {} pods/node ({pods} pods) |", pods / n.max(&1));
            }
        }
        s.push_str("\n|---|");
        s.push_str(&"---:|".repeat(cols.len()));
        s.push('\n');
        let mut kinds: Vec<Kind> = points.iter().map(|p| p.kind).collect();
        kinds.dedup();
        for k in kinds {
            let _ = write!(s, "| {} |", k.as_str());
            for (n, pods) in &cols {
                match points
                    .iter()
                    .find(|p| p.curve == curve && p.kind == k && p.nodes == *n && p.pods == *pods)
                {
                    Some(p) => match upstream_for(p) {
                        Some(u) => {
                            let _ = write!(
                                s,
                                " {:.0} (upstream {u:.0}, {:.1}×) |",
                                p.pods_per_sec,
                                p.pods_per_sec / u
                            );
                        }
                        None => {
                            let _ = write!(s, " {:.0} |", p.pods_per_sec);
                        }
                    },
                    None => s.push_str(" |"),
                }
            }
            s.push('\n');
        }
        s.push('\n');
    }
    s
}

const PALETTE: [RGBColor; 4] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
];

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    points: &[Point],
) -> Result<(), String> {
    let e = |x: DrawingAreaErrorKind<DB::ErrorType>| x.to_string();
    root.fill(&WHITE).map_err(e)?;
    let panels = root.split_evenly((1, 2));
    let y_max = points
        .iter()
        .map(|p| p.pods_per_sec)
        .fold(0.0, f64::max)
        .max(1.0)
        * 1.1;
    let mut kinds: Vec<Kind> = points.iter().map(|p| p.kind).collect();
    kinds.dedup();
    for (panel, (curve, x_desc)) in panels.iter().zip([
        ("nodes", "nodes (10,000 pods)"),
        ("pods-per-node", "pods per node (5,000 nodes)"),
    ]) {
        let xs: Vec<f64> = points
            .iter()
            .filter(|p| p.curve == curve)
            .map(|p| {
                if curve == "nodes" {
                    p.nodes as f64
                } else {
                    p.pods_per_node()
                }
            })
            .collect();
        let x_max = xs.iter().copied().fold(0.0, f64::max).max(1.0) * 1.05;
        let mut chart = ChartBuilder::on(panel)
            .caption(format!("pods/s vs {}", x_desc), ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(64)
            .build_cartesian_2d(0f64..x_max, 0f64..y_max)
            .map_err(|x| x.to_string())?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc("pods/s")
            .label_style(("sans-serif", 14))
            .draw()
            .map_err(|x| x.to_string())?;
        for (i, k) in kinds.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()];
            let mut line: Vec<(f64, f64)> = points
                .iter()
                .filter(|p| p.curve == curve && p.kind == *k)
                .map(|p| {
                    let x = if curve == "nodes" {
                        p.nodes as f64
                    } else {
                        p.pods_per_node()
                    };
                    (x, p.pods_per_sec)
                })
                .collect();
            line.sort_by(|a, b| a.0.total_cmp(&b.0));
            chart
                .draw_series(LineSeries::new(line.clone(), color.stroke_width(2)))
                .map_err(|x| x.to_string())?
                .label(k.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2))
                });
            chart
                .draw_series(
                    line.iter()
                        .map(|&(x, y)| Circle::new((x, y), 3, color.filled())),
                )
                .map_err(|x| x.to_string())?;
            // Upstream's in-process figure for this kind, where measured, as a cross.
            let up: Vec<(f64, f64)> = points
                .iter()
                .filter(|p| p.curve == curve && p.kind == *k)
                .filter_map(|p| {
                    let x = if curve == "nodes" {
                        p.nodes as f64
                    } else {
                        p.pods_per_node()
                    };
                    upstream_for(p).map(|u| (x, u))
                })
                .collect();
            chart
                .draw_series(
                    up.iter()
                        .map(|&(x, y)| Cross::new((x, y), 6, color.stroke_width(2))),
                )
                .map_err(|x| x.to_string())?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.3))
            .label_font(("sans-serif", 14))
            .draw()
            .map_err(|x| x.to_string())?;
    }
    root.present().map_err(e)?;
    Ok(())
}

/// Writes `scaling.csv`, `scaling.md`, `scaling.svg` and `scaling.png` into `dir`.
pub fn write(points: &[Point], dir: &Path) -> Result<(), BenchError> {
    let io = |path: &Path| {
        let path = path.display().to_string();
        move |source| BenchError::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let p = dir.join("scaling.csv");
    std::fs::write(&p, csv(points)).map_err(io(&p))?;
    let p = dir.join("scaling.md");
    std::fs::write(&p, markdown(points)).map_err(io(&p))?;
    ksim_report::ensure_plot_font().map_err(|e| BenchError::Spec(e.to_string()))?;
    let (w, h) = (1200u32, 460u32);
    let p = dir.join("scaling.svg");
    draw(SVGBackend::new(&p, (w, h)).into_drawing_area(), points)
        .map_err(|m| BenchError::Spec(format!("{}: {m}", p.display())))?;
    let p = dir.join("scaling.png");
    draw(BitMapBackend::new(&p, (w, h)).into_drawing_area(), points)
        .map_err(|m| BenchError::Spec(format!("{}: {m}", p.display())))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_sweep_writes_table_csv_and_plots() {
        let spec = ScalingSpec {
            kinds: vec![Kind::Plain, Kind::Mixed],
            node_counts: vec![50, 100],
            pods: 200,
            fixed_nodes: 50,
            pod_counts: vec![100, 200],
            repeat: 1,
            seed: 3,
            gates: Default::default(),
        };
        let mut seen = 0;
        let points = run(&spec, |_| seen += 1).expect("sweep");
        assert_eq!(seen, 8);
        assert!(points
            .iter()
            .all(|p| p.scheduled == p.pods && p.pods_per_sec > 0.0));
        let dir = std::env::temp_dir().join(format!("ksim-scaling-{}", std::process::id()));
        write(&points, &dir).expect("write");
        let csv = std::fs::read_to_string(dir.join("scaling.csv")).expect("csv");
        assert_eq!(csv.lines().count(), 9);
        let md = std::fs::read_to_string(dir.join("scaling.md")).expect("md");
        assert!(md.contains("| plain |") && md.contains("| 100 nodes |"));
        assert!(md.contains("4 pods/node (200 pods)"));
        for f in ["scaling.svg", "scaling.png"] {
            assert!(std::fs::metadata(dir.join(f)).expect(f).len() > 1000);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
