//! The run table behind `sweep.csv`, `ksim compare` and `ksim merge`: one row per run — its id,
//! its axis values, then the headline figures of its `summary.json` — and the terminal table.
//!
//! The figures are always read back from each run's `summary.json` on disk, whether the runs
//! were just made or made elsewhere (shards, separate `ksim run`s), so the same runs give the
//! same bytes in `sweep.csv` however they were produced. Numbers are written with Rust's
//! shortest round-trip formatting (`0.9975`, `400`); a figure a run does not have is empty.

use std::path::{Path, PathBuf};

use comfy_table::{presets, CellAlignment, ContentArrangement, Table};
use ksim_report::compare::{Better, Metric, Unit, METRICS};
use ksim_report::{LatencyDist, Summary};

use crate::error::SweepError;
use crate::run::{run_dir, Manifest};

/// The headline figures, in `sweep.csv` column order: the comparison's columns plus the node
/// count at the end (which an autoscaler or a pool axis changes).
pub fn headline() -> Vec<Metric> {
    let mut m: Vec<Metric> = METRICS.to_vec();
    m.push(Metric {
        name: "nodes_at_end",
        better: Better::Neither,
        unit: Unit::Count,
        get: |s| Some(s.nodes.at_end as f64),
    });
    m.extend(packing_metrics());
    m
}

/// The packing figures (`summary.json` → `packing`), appended to the sweep columns. Fewer nodes
/// in use for the same pods is better: the rest can be scaled away.
pub fn packing_metrics() -> Vec<Metric> {
    fn pk(s: &Summary) -> Option<&ksim_report::packing::Packing> {
        s.packing.as_ref()
    }
    vec![
        Metric {
            name: "nodes_in_use_at_end",
            better: Better::Lower,
            unit: Unit::Count,
            get: |s| pk(s).map(|p| p.nodes_in_use.at_end as f64),
        },
        Metric {
            name: "nodes_in_use_mean",
            better: Better::Lower,
            unit: Unit::Ratio,
            get: |s| pk(s).and_then(|p| p.nodes_in_use.mean),
        },
        Metric {
            name: "nodes_in_use_peak",
            better: Better::Lower,
            unit: Unit::Count,
            get: |s| pk(s).map(|p| p.nodes_in_use.peak as f64),
        },
        Metric {
            name: "nodes_ever_used",
            better: Better::Lower,
            unit: Unit::Count,
            get: |s| pk(s).map(|p| p.nodes_ever_used as f64),
        },
        Metric {
            name: "stranded_cpu_millis",
            better: Better::Lower,
            unit: Unit::Count,
            get: |s| pk(s).and_then(|p| p.stranded.cpu_millis.map(|v| v as f64)),
        },
        Metric {
            name: "stranded_memory_bytes",
            better: Better::Lower,
            unit: Unit::Count,
            get: |s| pk(s).and_then(|p| p.stranded.memory_bytes.map(|v| v as f64)),
        },
    ]
}

/// One column of the table after the axes: a headline figure, a pool's failure share, or an
/// SLO figure asked for by name (a sweep file's `columns`, `ksim compare --column`).
#[derive(Debug, Clone)]
pub struct Column {
    /// The `sweep.csv` column name.
    pub name: String,
    pub better: Better,
    pub unit: Unit,
    source: Source,
}

#[derive(Debug, Clone)]
enum Source {
    Headline(Metric),
    /// `packing.pools[pool].failure_share`.
    PoolFailureShare(String),
    /// An SLO figure (`within(30s)`, `p95`, `scheduled`, ...), read like `ksim plan` reads it.
    Figure(crate::plan::Condition),
}

impl Column {
    fn headline(m: Metric) -> Column {
        Column {
            name: m.name.to_string(),
            better: m.better,
            unit: m.unit,
            source: Source::Headline(m),
        }
    }

    /// The run's value and whether it is censored (a latency percentile falling on a pod still
    /// pending at the end: only a lower bound).
    pub fn value(&self, r: &Row) -> Option<(f64, bool)> {
        match &self.source {
            Source::Headline(m) => (m.get)(&r.summary).map(|v| (v, false)),
            Source::PoolFailureShare(pool) => r
                .summary
                .packing
                .as_ref()
                .and_then(|p| p.pools.get(pool))
                .and_then(|p| p.failure_share)
                .map(|v| (v, false)),
            Source::Figure(c) => c.value(&r.summary, r.latencies.as_ref()),
        }
    }

    /// The value for ranking and plots: a censored latency is more than any observed one.
    pub fn get(&self, r: &Row) -> Option<f64> {
        self.value(r)
            .map(|(v, censored)| if censored { f64::INFINITY } else { v })
    }

    /// The `sweep.csv` cell: the number, `>N` when censored, empty when absent.
    fn cell(&self, r: &Row) -> String {
        match self.value(r) {
            None => String::new(),
            Some((v, true)) => format!(">{v}"),
            Some((v, false)) => format!("{v}"),
        }
    }

    /// The headline figure behind the column, if it is one.
    pub fn metric(&self) -> Option<&Metric> {
        match &self.source {
            Source::Headline(m) => Some(m),
            _ => None,
        }
    }
}

/// The `sweep.csv` name of a pool's failure-share column.
pub fn failure_share_column(pool: &str) -> String {
    format!(
        "failure_share.{}",
        if pool.is_empty() { "(no pool)" } else { pool }
    )
}

/// Parses SLO figures asked for as columns (`within(30s)`, `p95`, `scheduled`, ...); `at`
/// names where they were given.
pub fn parse_columns(
    figures: &[String],
    at: &str,
) -> Result<Vec<crate::plan::Condition>, SweepError> {
    figures
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let (kind, metric) = crate::plan::parse_figure(f.trim(), &format!("{at}[{i}] {f:?}"))?;
            Ok(crate::plan::Condition {
                text: f.trim().to_string(),
                metric,
                cmp: crate::plan::Cmp::Ge,
                threshold: 0.0,
                kind,
            })
        })
        .collect()
}

/// One run of the table.
#[derive(Debug, Clone)]
pub struct Row {
    pub id: String,
    /// The run's directory (holds summary.json and pods.csv).
    pub dir: PathBuf,
    /// One label per axis.
    pub values: Vec<String>,
    pub summary: Summary,
    /// The run's latencies from its pods.csv, read when an SLO-figure column needs them (and
    /// the run kept its pods.csv).
    pub latencies: Option<LatencyDist>,
}

/// Runs side by side.
#[derive(Debug, Clone)]
pub struct RunTable {
    /// The axis columns (empty for `ksim compare`).
    pub axes: Vec<String>,
    /// Whether each axis has numeric values (plots use a numeric x axis then).
    pub numeric_axes: Vec<bool>,
    pub rows: Vec<Row>,
    /// SLO figures shown as extra columns, after the headline and failure-share columns.
    pub figures: Vec<crate::plan::Condition>,
}

impl RunTable {
    /// The table of a complete sweep from its manifests (one `sweep.json`, or every shard's)
    /// and the directories holding them: each run's `summary.json` is read from
    /// `<dir>/runs/<id>/`. Errors unless the manifests are of one sweep and cover every run
    /// exactly once.
    pub fn from_manifests(parts: &[(PathBuf, Manifest)]) -> Result<RunTable, SweepError> {
        let Some((first_dir, first)) = parts.first() else {
            return Err(SweepError::input(
                "merge",
                "no sweep.json or shard manifest found",
            ));
        };
        let mut slots: Vec<Option<Row>> = (0..first.total_runs).map(|_| None).collect();
        for (dir, m) in parts {
            if m.fingerprint != first.fingerprint
                || m.total_runs != first.total_runs
                || m.axes != first.axes
                || m.columns != first.columns
            {
                return Err(SweepError::input(
                    dir.display().to_string(),
                    format!(
                        "shard of sweep {:?} ({}) does not match sweep {:?} ({}) in {}",
                        m.sweep,
                        m.fingerprint,
                        first.sweep,
                        first.fingerprint,
                        first_dir.display()
                    ),
                ));
            }
            for r in &m.runs {
                let Some(slot) = slots.get_mut(r.index) else {
                    return Err(SweepError::input(
                        dir.display().to_string(),
                        format!(
                            "run index {} is past the sweep's {} runs",
                            r.index, m.total_runs
                        ),
                    ));
                };
                if slot.is_some() {
                    return Err(SweepError::input(
                        dir.display().to_string(),
                        format!("run {} appears in more than one shard", r.id),
                    ));
                }
                let rdir = run_dir(dir, &r.id);
                *slot = Some(Row {
                    id: r.id.clone(),
                    summary: Summary::read_run(&rdir)?,
                    dir: rdir,
                    values: r.values.clone(),
                    latencies: None,
                });
            }
        }
        let missing: Vec<usize> = slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s.is_none())
            .map(|(i, _)| i)
            .collect();
        if !missing.is_empty() {
            let shown: Vec<String> = missing.iter().take(10).map(|i| i.to_string()).collect();
            return Err(SweepError::input(
                "merge",
                format!(
                    "{} of {} runs of sweep {:?} are missing (indices {}{}); merge every shard",
                    missing.len(),
                    first.total_runs,
                    first.sweep,
                    shown.join(", "),
                    if missing.len() > 10 { ", ..." } else { "" }
                ),
            ));
        }
        let table = RunTable {
            axes: first.axes.clone(),
            numeric_axes: first.numeric_axes.clone(),
            rows: slots.into_iter().flatten().collect(),
            figures: Vec::new(),
        };
        table.with_figures(parse_columns(&first.columns, "columns")?)
    }

    /// Adds SLO-figure columns, reading each run's latencies from its pods.csv when a column
    /// needs more than summary.json stores (a run without pods.csv, e.g. a pruned plan probe,
    /// then shows only the stored figures).
    pub fn with_figures(
        mut self,
        figures: Vec<crate::plan::Condition>,
    ) -> Result<RunTable, SweepError> {
        use crate::plan::Kind;
        let needs = figures
            .iter()
            .any(|c| matches!(c.kind, Kind::AllPods(_) | Kind::Within(_)));
        if needs {
            for r in &mut self.rows {
                let pods = r.dir.join("pods.csv");
                if pods.is_file() {
                    r.latencies = Some(LatencyDist::from_pods_csv(&pods, r.summary.horizon_s)?);
                }
            }
        }
        self.figures = figures;
        Ok(self)
    }

    /// Every column after the axes, in `sweep.csv` order: [`headline`]'s figures, then one
    /// `failure_share.<pool>` per pool any run has (by name), then the SLO figures asked for.
    pub fn columns(&self) -> Vec<Column> {
        let mut cols: Vec<Column> = headline().into_iter().map(Column::headline).collect();
        let mut pools = std::collections::BTreeSet::new();
        for r in &self.rows {
            if let Some(p) = &r.summary.packing {
                pools.extend(p.pools.keys().cloned());
            }
        }
        for pool in pools {
            cols.push(Column {
                name: failure_share_column(&pool),
                // Neither better nor worse: failures moving from one pool to another change the
                // shares without any failure fewer (the failure count itself is elsewhere).
                better: Better::Neither,
                unit: Unit::Share,
                source: Source::PoolFailureShare(pool),
            });
        }
        for c in &self.figures {
            use crate::plan::Kind;
            let (better, unit) = match c.kind {
                Kind::AllPods(_) => (Better::Lower, Unit::Seconds),
                Kind::Within(_) | Kind::ScheduledOfNeeded => (Better::Higher, Unit::Share),
                Kind::Headline => (c.metric.better, c.metric.unit),
            };
            let name = c.figure();
            if cols.iter().any(|k| k.name == name) {
                continue;
            }
            cols.push(Column {
                name,
                better,
                unit,
                source: Source::Figure(c.clone()),
            });
        }
        cols
    }

    /// Runs made separately: each directory (or summary.json file) is a run named by its
    /// directory; no axes.
    pub fn from_dirs(paths: &[PathBuf]) -> Result<RunTable, SweepError> {
        let mut rows = Vec::new();
        let mut seen = std::collections::BTreeMap::<String, usize>::new();
        for p in paths {
            let dir = if p.file_name().is_some_and(|n| n == "summary.json") {
                p.parent().unwrap_or(Path::new(".")).to_path_buf()
            } else {
                p.clone()
            };
            let mut id = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| dir.display().to_string());
            // Two runs of the same name (a/run, b/run): number the repeats.
            let n = seen.entry(id.clone()).or_default();
            *n += 1;
            if *n > 1 {
                id = format!("{id}#{n}");
            }
            rows.push(Row {
                summary: Summary::read_run(&dir)?,
                id,
                dir,
                values: Vec::new(),
                latencies: None,
            });
        }
        Ok(RunTable {
            axes: Vec::new(),
            numeric_axes: Vec::new(),
            rows,
            figures: Vec::new(),
        })
    }

    /// `sweep.csv`: `run`, the axis columns, then [`RunTable::columns`].
    pub fn to_csv(&self) -> String {
        let metrics = self.columns();
        let mut w = csv::Writer::from_writer(Vec::new());
        let mut header = vec!["run".to_string()];
        header.extend(self.axes.iter().cloned());
        header.extend(metrics.iter().map(|m| m.name.to_string()));
        // Writing into a Vec cannot fail.
        let _ = w.write_record(&header);
        for r in &self.rows {
            let mut rec = vec![r.id.clone()];
            rec.extend(r.values.iter().cloned());
            rec.extend(metrics.iter().map(|m| m.cell(r)));
            let _ = w.write_record(&rec);
        }
        String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
    }

    pub fn write_csv(&self, path: &Path) -> Result<(), SweepError> {
        std::fs::write(path, self.to_csv()).map_err(|e| SweepError::io(path, e))
    }

    /// Per run, whether its value of `m` is the best (ties all marked; nothing marked when the
    /// figure has no direction, fewer than two runs have it, or all are equal).
    pub fn best(&self, m: &Column) -> Vec<bool> {
        let values: Vec<Option<f64>> = self.rows.iter().map(|r| m.get(r)).collect();
        let present: Vec<f64> = values.iter().flatten().copied().collect();
        if m.better == Better::Neither || present.len() < 2 {
            return vec![false; values.len()];
        }
        let lo = present.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = present.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if lo == hi {
            return vec![false; values.len()];
        }
        let target = if m.better == Better::Higher { hi } else { lo };
        values.iter().map(|v| *v == Some(target)).collect()
    }

    /// The terminal table. Only figures that differ between runs get a column (the others are
    /// listed once below the table), the best value of each column is marked `*`, and with
    /// `baseline` each value that differs from the first run's shows its change (`+12%`).
    pub fn terminal(&self, baseline: bool) -> String {
        let metrics = self.columns();
        let differs = |m: &Column| {
            let mut vals = self.rows.iter().map(|r| m.value(r));
            match vals.next() {
                None => false,
                Some(first) => vals.any(|v| v != first),
            }
        };
        // Packing figures lead: they are what a capacity planner reads first.
        let mut shown: Vec<&Column> = metrics.iter().filter(|m| differs(m)).collect();
        shown.sort_by_key(|m| lead(&m.name));
        let same: Vec<&Column> = metrics.iter().filter(|m| !differs(m)).collect();
        let mut t = Table::new();
        t.load_preset(presets::UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Disabled);
        let mut header = vec!["run".to_string()];
        header.extend(self.axes.iter().cloned());
        header.extend(shown.iter().map(|m| label(m)));
        t.set_header(header);
        let best: Vec<Vec<bool>> = shown.iter().map(|m| self.best(m)).collect();
        for (i, r) in self.rows.iter().enumerate() {
            let mut row = vec![r.id.clone()];
            row.extend(r.values.iter().cloned());
            for (c, m) in shown.iter().enumerate() {
                let v = m.value(r);
                let mut text = display_value(m, v);
                if baseline && i > 0 {
                    let b = self.rows.first().and_then(|r0| m.value(r0));
                    if let (Some((v, false)), Some((b, false))) = (v, b) {
                        if v != b {
                            text.push_str(&format!(" ({})", change(m, v, b)));
                        }
                    }
                }
                if best[c][i] {
                    text.push_str(" *");
                }
                row.push(text);
            }
            t.add_row(row);
        }
        let first_metric = 1 + self.axes.len();
        for c in first_metric..first_metric + shown.len() {
            if let Some(col) = t.column_mut(c) {
                col.set_cell_alignment(CellAlignment::Right);
            }
        }
        let mut out = String::new();
        if baseline {
            for line in self.verdicts() {
                out.push_str(&line);
                out.push('\n');
            }
            if self.rows.len() > 1 {
                out.push('\n');
            }
        }
        out.push_str(&t.to_string());
        out.push_str("\n* best of the runs in that column");
        if baseline && self.rows.len() > 1 {
            out.push_str(&format!(
                "; (±…) change from the first run, {}",
                self.rows[0].id
            ));
        }
        out.push('\n');
        let censored = metrics.iter().any(|m| {
            self.rows
                .iter()
                .any(|r| matches!(m.value(r), Some((_, true))))
        });
        if censored {
            out.push_str(CENSORED_NOTE);
            out.push('\n');
        }
        if !same.is_empty() {
            let r0 = &self.rows[0];
            let parts: Vec<String> = same
                .iter()
                .map(|m| format!("{} {}", label(m), display_value(m, m.value(r0))))
                .collect();
            out.push_str(&format!("same in every run: {}\n", parts.join(", ")));
        }
        out
    }
}

impl RunTable {
    /// One sentence per figure that differs from the first run, per later run: what changed,
    /// by how much (absolute and relative) and whether that is better. The nodes-in-use figures
    /// come first; a run whose latency percentiles equal the baseline's says "at the same
    /// latency" on its first line.
    pub fn verdicts(&self) -> Vec<String> {
        let Some(base) = self.rows.first() else {
            return Vec::new();
        };
        let mut metrics = self.columns();
        metrics.sort_by_key(|m| lead(&m.name));
        let mut lines = Vec::new();
        for r in self.rows.iter().skip(1) {
            let same_latency = ["latency_p50_s", "latency_p90_s", "latency_p99_s"]
                .iter()
                .all(|n| {
                    metrics
                        .iter()
                        .find(|m| m.name == *n)
                        .is_some_and(|m| m.value(r) == m.value(base))
                });
            let mut first = true;
            for m in &metrics {
                // A censored figure is only a bound: no verdict on it.
                let (Some((v, false)), Some((b, false))) = (m.value(r), m.value(base)) else {
                    continue;
                };
                if v == b {
                    continue;
                }
                let mut line = verdict(m, &r.id, &base.id, v, b);
                if first && same_latency {
                    line.push_str(" at the same latency");
                }
                first = false;
                lines.push(line);
            }
        }
        lines
    }
}

/// Column order of the comparison: nodes in use first (what a capacity planner reads first),
/// then the other node figures, then the rest as they come.
fn lead(name: &str) -> u8 {
    if name.starts_with("nodes_in_use") {
        0
    } else if name.starts_with("nodes_") {
        1
    } else {
        2
    }
}

/// "mostallocated uses 57 fewer nodes at the end (243 vs 300, −19.0%) than default".
fn verdict(m: &Column, run: &str, base: &str, v: f64, b: f64) -> String {
    let rel = if b == 0.0 {
        String::new()
    } else {
        format!(
            ", {}",
            signed(format!("{:+.1}%", (v - b) / b.abs() * 100.0))
        )
    };
    let (vs, bs) = (display(m, Some(v)), display(m, Some(b)));
    let amount = |d: f64| {
        let d = d.abs();
        match m.unit {
            Unit::Share => format!("{:.2} pp", d * 100.0),
            _ => display(m, Some(d)),
        }
    };
    let judgement = match (m.better, v < b) {
        (Better::Neither, _) => "",
        (Better::Lower, true) | (Better::Higher, false) => " (better)",
        _ => " (worse)",
    };
    let word = if v < b { "fewer" } else { "more" };
    let pool_failures = m.name.strip_prefix("failure_share.");
    let text = match m.name.as_str() {
        "nodes_in_use_at_end" => format!(
            "{run} uses {} {word} nodes at the end ({vs} vs {bs}{rel}) than {base}",
            amount(v - b)
        ),
        "nodes_in_use_mean" => format!(
            "{run} keeps {} {word} nodes in use on average ({vs} vs {bs}{rel}) than {base}",
            amount(v - b)
        ),
        "stranded_cpu_millis" | "stranded_memory_bytes" => format!(
            "{run} strands {} {} {} ({vs} vs {bs}{rel}) than {base}{judgement}",
            amount(v - b),
            if v < b { "less" } else { "more" },
            if m.name == "stranded_cpu_millis" {
                "cpu on nodes without room for memory"
            } else {
                "memory on nodes without room for cpu"
            }
        ),
        "nodes_in_use_peak" => format!(
            "{run} peaks at {} {word} nodes in use ({vs} vs {bs}{rel}) than {base}",
            amount(v - b)
        ),
        "nodes_ever_used" => format!(
            "{run} ever uses {} {word} nodes ({vs} vs {bs}{rel}) than {base}",
            amount(v - b)
        ),
        _ if pool_failures.is_some() => format!(
            "{run}: {} {} of the failures name pool {} ({vs} vs {bs}) than {base}{judgement}",
            amount(v - b),
            if v < b { "fewer" } else { "more" },
            pool_failures.unwrap_or_default()
        ),
        _ => format!(
            "{run}: {} {} {} ({vs} vs {bs}{rel}) than {base}{judgement}",
            m.name,
            if v < b { "lower by" } else { "higher by" },
            amount(v - b)
        ),
    };
    text
}

/// A sign as a typographic minus, so "−19%" reads as a change, not a hyphen.
fn signed(s: String) -> String {
    s.replacen('-', "\u{2212}", 1)
}

/// What "> N s" means, printed under a table that shows one.
pub const CENSORED_NOTE: &str = "> N s: a lower bound; pods still pending at the end count with \
their own wait so far (end − created), so the true figure is at least N";

/// A column's name as the terminal shows it: the stranded-capacity figures are stored in
/// bytes and millicores (sweep.csv) but shown in GiB and cores, and their label says so.
fn label(m: &Column) -> String {
    if let Some(stem) = m.name.strip_suffix("_bytes") {
        return format!("{stem} (GiB)");
    }
    if let Some(stem) = m.name.strip_suffix("_millis") {
        return format!("{stem} (cores)");
    }
    m.name.to_string()
}

/// A value as the terminal shows it, "> N s" when censored.
fn display_value(m: &Column, v: Option<(f64, bool)>) -> String {
    match v {
        Some((v, true)) => format!("> {}", display(m, Some(v))),
        Some((v, false)) => display(m, Some(v)),
        None => display(m, None),
    }
}

fn display(m: &Column, v: Option<f64>) -> String {
    let Some(v) = v else {
        return "–".into();
    };
    // Raw units of the stranded-capacity figures, shown the way people size nodes.
    if m.name.ends_with("_bytes") {
        return format!("{:.1} GiB", v / (1024.0 * 1024.0 * 1024.0));
    }
    if m.name.ends_with("_millis") {
        return format!("{:.1} cpu", v / 1000.0);
    }
    if m.name == "nodes_in_use_mean" {
        return format!("{v:.1}");
    }
    match m.unit {
        Unit::Count => format!("{v}"),
        Unit::Share => format!("{:.2}%", v * 100.0),
        Unit::Seconds => {
            let t = format!("{v:.3}");
            let t = t.trim_end_matches('0').trim_end_matches('.');
            format!("{t} s")
        }
        Unit::Ratio => format!("{v:.3}"),
    }
}

/// The change from the baseline: percentage points for shares, relative change otherwise.
fn change(m: &Column, v: f64, b: f64) -> String {
    match m.unit {
        Unit::Share => format!("{:+.2} pp", (v - b) * 100.0),
        _ if b == 0.0 && (m.name.ends_with("_bytes") || m.name.ends_with("_millis")) => {
            format!("+{}", display(m, Some(v - b)))
        }
        _ if b == 0.0 => format!("{:+}", v - b),
        _ => format!("{:+.1}%", (v - b) / b.abs() * 100.0),
    }
}
