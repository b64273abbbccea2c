//! Comparing runs (`ksim compare`, `ksim sweep`): several runs' `summary.json` side by side, one
//! row per run, with the best value of each column marked.
//!
//! "Best" follows each metric's direction (scheduled share and utilization: higher; latency,
//! pending, attempts, preemptions, fragmentation: lower; pod count: none). A column is marked only
//! when at least two runs have a value and they are not all equal; ties for best are all marked.

use std::path::{Path, PathBuf};

use comfy_table::{presets, CellAlignment, ContentArrangement, Table};

use crate::error::ReportError;
use crate::fmt::{opt_pct, opt_secs};
use crate::summary::Summary;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
    /// Context, not a goal (e.g. how many pods the run had).
    Neither,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Count,
    Share,
    Seconds,
    Ratio,
}

/// One column of the comparison.
#[derive(Debug, Clone, Copy)]
pub struct Metric {
    /// Column name, also the `metric` value in the CSV.
    pub name: &'static str,
    pub better: Better,
    pub unit: Unit,
    pub get: fn(&Summary) -> Option<f64>,
}

fn util(s: &Summary, r: &str) -> Option<f64> {
    s.utilization.get(r).and_then(|u| u.mean)
}

/// The comparison's columns, in order.
pub const METRICS: [Metric; 12] = [
    Metric {
        name: "pods",
        better: Better::Neither,
        unit: Unit::Count,
        get: |s| Some(s.pods.created as f64),
    },
    Metric {
        name: "scheduled_share",
        better: Better::Higher,
        unit: Unit::Share,
        get: |s| s.scheduled_share,
    },
    Metric {
        name: "latency_p50_s",
        better: Better::Lower,
        unit: Unit::Seconds,
        get: |s| s.latency_s.p50,
    },
    Metric {
        name: "latency_p90_s",
        better: Better::Lower,
        unit: Unit::Seconds,
        get: |s| s.latency_s.p90,
    },
    Metric {
        name: "latency_p99_s",
        better: Better::Lower,
        unit: Unit::Seconds,
        get: |s| s.latency_s.p99,
    },
    Metric {
        name: "latency_max_s",
        better: Better::Lower,
        unit: Unit::Seconds,
        get: |s| s.latency_s.max,
    },
    Metric {
        name: "pending_at_end",
        better: Better::Lower,
        unit: Unit::Count,
        get: |s| Some(s.pods.pending_at_end as f64),
    },
    Metric {
        name: "attempts_per_pod",
        better: Better::Lower,
        unit: Unit::Ratio,
        get: |s| s.attempts.mean_per_pod,
    },
    Metric {
        name: "preempted_pods",
        better: Better::Lower,
        unit: Unit::Count,
        get: |s| Some(s.preemptions.preempted_pods as f64),
    },
    Metric {
        name: "cpu_utilization_mean",
        better: Better::Higher,
        unit: Unit::Share,
        get: |s| util(s, "cpu"),
    },
    Metric {
        name: "memory_utilization_mean",
        better: Better::Higher,
        unit: Unit::Share,
        get: |s| util(s, "memory"),
    },
    Metric {
        name: "fragmentation",
        better: Better::Lower,
        unit: Unit::Share,
        get: |s| s.fragmentation.as_ref().and_then(|f| f.share),
    },
];

/// Runs side by side.
#[derive(Debug, Clone)]
pub struct Comparison {
    pub runs: Vec<(String, Summary)>,
}

impl Comparison {
    pub fn new(runs: Vec<(String, Summary)>) -> Comparison {
        Comparison { runs }
    }

    /// Reads each run directory's (or file's) `summary.json`; a run is named by its directory.
    pub fn from_paths(paths: &[PathBuf]) -> Result<Comparison, ReportError> {
        let mut runs = Vec::with_capacity(paths.len());
        for p in paths {
            let summary = Summary::read_run(p)?;
            runs.push((run_name(p), summary));
        }
        Ok(Comparison { runs })
    }

    /// Per run, whether its value of `m` is the best.
    pub fn best(&self, m: &Metric) -> Vec<bool> {
        let values: Vec<Option<f64>> = self.runs.iter().map(|(_, s)| (m.get)(s)).collect();
        let present: Vec<f64> = values.iter().flatten().copied().collect();
        let none = vec![false; values.len()];
        if m.better == Better::Neither || present.len() < 2 {
            return none;
        }
        let (lo, hi) = present
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &v| {
                (lo.min(v), hi.max(v))
            });
        if lo == hi {
            return none;
        }
        let target = if m.better == Better::Higher { hi } else { lo };
        values.iter().map(|v| *v == Some(target)).collect()
    }

    /// The terminal table: one row per run, `*` after the best value of each column.
    pub fn table(&self) -> String {
        let mut t = Table::new();
        t.load_preset(presets::UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Disabled);
        let mut header = vec!["run".to_string()];
        header.extend(METRICS.iter().map(|m| m.name.to_string()));
        t.set_header(header);
        let best: Vec<Vec<bool>> = METRICS.iter().map(|m| self.best(m)).collect();
        for (i, (name, s)) in self.runs.iter().enumerate() {
            let mut row = vec![name.clone()];
            for (c, m) in METRICS.iter().enumerate() {
                let v = (m.get)(s);
                let mut text = match m.unit {
                    Unit::Count => v.map(|v| format!("{v}")).unwrap_or_else(|| "–".into()),
                    Unit::Share => opt_pct(v),
                    Unit::Seconds => opt_secs(v),
                    Unit::Ratio => v.map(|v| format!("{v:.2}")).unwrap_or_else(|| "–".into()),
                };
                if best[c][i] {
                    text.push_str(" *");
                }
                row.push(text);
            }
            t.add_row(row);
        }
        for c in 1..=METRICS.len() {
            if let Some(col) = t.column_mut(c) {
                col.set_cell_alignment(CellAlignment::Right);
            }
        }
        let mut out = t.to_string();
        out.push_str("\n* best of the runs in that column\n");
        out
    }

    /// Long-format CSV: `run,metric,value,best` (value empty when the run has none; shares as
    /// fractions, latencies in seconds), so it loads as numbers anywhere.
    pub fn to_csv(&self) -> String {
        let mut w = csv::Writer::from_writer(Vec::new());
        let mut rows: Vec<[String; 4]> = Vec::new();
        let best: Vec<Vec<bool>> = METRICS.iter().map(|m| self.best(m)).collect();
        for (i, (name, s)) in self.runs.iter().enumerate() {
            for (c, m) in METRICS.iter().enumerate() {
                rows.push([
                    name.clone(),
                    m.name.to_string(),
                    (m.get)(s).map(|v| v.to_string()).unwrap_or_default(),
                    best[c][i].to_string(),
                ]);
            }
        }
        // Writing into a Vec cannot fail.
        let _ = w.write_record(["run", "metric", "value", "best"]);
        for r in &rows {
            let _ = w.write_record(r);
        }
        let bytes = w.into_inner().unwrap_or_default();
        String::from_utf8(bytes).unwrap_or_default()
    }

    pub fn write_csv(&self, path: &Path) -> Result<(), ReportError> {
        std::fs::write(path, self.to_csv()).map_err(|e| ReportError::io(path, e))
    }
}

fn run_name(p: &Path) -> String {
    let dir = if p.file_name().is_some_and(|n| n == "summary.json") {
        p.parent().unwrap_or(p)
    } else {
        p
    };
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| dir.display().to_string())
}
