//! Capacity planning (`ksim plan`): the smallest count of one node pool whose run meets an SLO,
//! found by bisection over runs.
//!
//! An SLO is one or more conditions on headline figures, e.g. `scheduled>=99.9%` and
//! `p99<=30s` (see [`parse_slo`]). The search assumes that more nodes never make a figure worse
//! and checks it: it first runs the smallest and the largest count; when the largest fails there
//! is no answer in range, when the smallest passes it is the answer. Otherwise each round runs
//! `probes` counts evenly spaced strictly inside (failing, passing) in parallel — `probes` is a
//! setting, not the thread count, so the counts run and the answer do not depend on the
//! machine — and narrows the bracket to the largest failing and smallest passing count seen.
//! Every count run is kept as a point of the curve. Afterwards every pair of runs is checked:
//! a larger count that fails the SLO where a smaller one met it, or whose SLO figure is worse,
//! is reported (the bisection's answer is then only "a" minimal count, not necessarily the least).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use comfy_table::{presets, CellAlignment, ContentArrangement, Table};
use ksim_engine::SimDuration;
use ksim_report::compare::{Better, Metric, Unit};
use ksim_report::{LatencyDist, Summary};
use ksim_trace::Scenario;
use rayon::prelude::*;
use serde::Serialize;

use crate::error::SweepError;
use crate::plots::{pass_color, write_grid, Panel, XAxis};
use crate::table::headline;

/// A comparison in an SLO condition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Cmp {
    #[serde(rename = ">=")]
    Ge,
    #[serde(rename = ">")]
    Gt,
    #[serde(rename = "<=")]
    Le,
    #[serde(rename = "<")]
    Lt,
}

impl Cmp {
    fn holds(self, v: f64, t: f64) -> bool {
        match self {
            Cmp::Ge => v >= t,
            Cmp::Gt => v > t,
            Cmp::Le => v <= t,
            Cmp::Lt => v < t,
        }
    }
    fn as_str(self) -> &'static str {
        match self {
            Cmp::Ge => ">=",
            Cmp::Gt => ">",
            Cmp::Le => "<=",
            Cmp::Lt => "<",
        }
    }
}

/// One condition: `figure op threshold`.
#[derive(Debug, Clone)]
pub struct Condition {
    /// As the user wrote it.
    pub text: String,
    pub metric: Metric,
    pub cmp: Cmp,
    /// In the figure's own unit (shares as fractions, latencies in seconds).
    pub threshold: f64,
    /// What is measured beyond a plain headline figure.
    pub kind: Kind,
}

/// The figure an SLO condition reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// The headline figure `metric` as stored in summary.json.
    Headline,
    /// Nearest-rank percentile over every pod that needed scheduling, each pod pending at the
    /// end counted with its own wait (a lower bound; `p50`, `p90`, `p99`, `max`).
    AllPods(u32),
    /// Share of the pods that needed scheduling scheduled within this many seconds.
    Within(f64),
    /// Pods that needed scheduling and were scheduled, as a share (`scheduled`).
    ScheduledOfNeeded,
}

impl Condition {
    /// The run's value of the figure; `censored` when it is only a lower bound (a percentile
    /// that pods still pending at the end, each at its own wait, could move).
    ///
    /// `dist` is the run's [`LatencyDist`] (from its records or its pods.csv): percentiles
    /// other than p50/p90/p99/max and `within(D)` at durations summary.json does not store
    /// need it; without it only the stored figures are available.
    pub fn value(&self, s: &Summary, dist: Option<&LatencyDist>) -> Option<(f64, bool)> {
        match self.kind {
            Kind::Headline => (self.metric.get)(s).map(|v| (v, false)),
            Kind::AllPods(p) => match dist {
                Some(d) => d.percentile(p),
                None => s.latency_all_percentile(p),
            }
            .map(|m| (m.secs, m.censored)),
            Kind::Within(secs) => match dist {
                Some(d) => d.within_share(secs),
                None => s.within_share(secs),
            }
            .map(|v| (v, false)),
            Kind::ScheduledOfNeeded => {
                if s.latency_all_s.is_none() {
                    // A summary from before the field existed: the old share.
                    return s.scheduled_share.map(|v| (v, false));
                }
                (s.needed_scheduling > 0).then(|| {
                    (
                        s.scheduled_of_needed as f64 / s.needed_scheduling as f64,
                        false,
                    )
                })
            }
        }
    }

    /// Whether a run meets it; a run without the figure (e.g. no pod needed scheduling) does
    /// not. A censored latency is more than any bound, so `<=`/`<` fail and `>=`/`>` hold.
    pub fn holds(&self, s: &Summary, dist: Option<&LatencyDist>) -> bool {
        match self.value(s, dist) {
            None => false,
            Some((_, true)) => matches!(self.cmp, Cmp::Ge | Cmp::Gt),
            Some((v, false)) => self.cmp.holds(v, self.threshold),
        }
    }

    /// The value as the terminal shows it ("> 540 s" when censored, "–" when absent).
    pub fn display(&self, s: &Summary, dist: Option<&LatencyDist>) -> String {
        match (self.value(s, dist), self.metric.unit) {
            (None, _) => "–".to_string(),
            (Some((v, true)), _) => format!("> {v} s"),
            (Some((v, false)), Unit::Share) => format!("{:.3}%", v * 100.0),
            (Some((v, false)), Unit::Seconds) => format!("{v} s"),
            (Some((v, false)), _) => format!("{v}"),
        }
    }

    /// How the report's latency CDF marks this condition (see [`ksim_report::slo`]), when it
    /// is a bound on latencies the CDF shows: `within(D)>=S`, `pNN<=D`, `scheduled>=S`.
    pub fn cdf_mark(&self) -> Option<ksim_report::SloMark> {
        let lower_bound = matches!(self.cmp, Cmp::Ge | Cmp::Gt);
        let (within_s, share) = match self.kind {
            Kind::Within(d) if lower_bound => (Some(d), self.threshold),
            Kind::AllPods(p) if !lower_bound => (Some(self.threshold), f64::from(p) / 100.0),
            Kind::ScheduledOfNeeded if lower_bound => (None, self.threshold),
            _ => return None,
        };
        Some(ksim_report::SloMark {
            condition: self.text.clone(),
            within_s,
            share,
        })
    }

    /// The figure's name in plan.json, plan.csv and the plot.
    pub fn figure(&self) -> String {
        match self.kind {
            Kind::Headline => self.metric.name.to_string(),
            Kind::AllPods(100) => "latency_all_max_s".to_string(),
            Kind::AllPods(p) => format!("latency_all_p{p}_s"),
            Kind::Within(secs) => format!("within_{secs}s_share"),
            Kind::ScheduledOfNeeded => "scheduled_of_needed_share".to_string(),
        }
    }
}

/// Figure names an SLO may use: the headline figures (`sweep.csv` columns) and short aliases.
fn metric_named(name: &str) -> Option<Metric> {
    let canonical = match name {
        "scheduled" | "scheduled%" => "scheduled_share",
        "p50" => "latency_p50_s",
        "p90" => "latency_p90_s",
        "p99" => "latency_p99_s",
        "max" | "max_latency" => "latency_max_s",
        "pending" => "pending_at_end",
        "preempted" => "preempted_pods",
        "cpu" => "cpu_utilization_mean",
        "memory" => "memory_utilization_mean",
        other => other,
    };
    headline().into_iter().find(|m| m.name == canonical)
}

/// The figure of an SLO condition or a sweep column (`within(30s)`, `p99`, `scheduled`,
/// `pending_end`, an alias or a headline figure), with `at` naming it in errors.
pub fn parse_figure(name: &str, at: &str) -> Result<(Kind, Metric), SweepError> {
    let (kind, name) = match name {
        "p50" => (Kind::AllPods(50), name),
        "p90" => (Kind::AllPods(90), name),
        "p99" => (Kind::AllPods(99), name),
        "max" | "max_latency" => (Kind::AllPods(100), name),
        // Any other percentile (p95, p999 is not one: 1 to 100) over the run's latencies.
        n if n.len() > 1
            && n.starts_with('p')
            && n[1..].parse::<u32>().is_ok_and(|v| (1..=100).contains(&v)) =>
        {
            (Kind::AllPods(n[1..].parse().unwrap_or(99)), "p99")
        }
        "scheduled" | "scheduled%" => (Kind::ScheduledOfNeeded, name),
        "pending_end" => (Kind::Headline, "pending_at_end"),
        n if n.starts_with("within") => {
            let inner = n["within".len()..]
                .trim()
                .strip_prefix('(')
                .and_then(|r| r.strip_suffix(')'))
                .map(str::trim)
                .ok_or_else(|| {
                    SweepError::input(
                        at,
                        "expected within(DURATION)>=SHARE, e.g. within(30s)>=99%",
                    )
                })?;
            let secs = match inner.parse::<f64>() {
                Ok(v) => v,
                Err(_) => SimDuration::parse(inner)
                    .map_err(|e| {
                        SweepError::input(
                            at,
                            format!("within({inner}): {inner:?} is not a duration ({e})"),
                        )
                    })?
                    .as_secs_f64(),
            };
            if !secs.is_finite() || secs < 0.0 {
                return Err(SweepError::input(
                    at,
                    format!("within({inner}): the duration must be 0 or more"),
                ));
            }
            (Kind::Within(secs), "scheduled_share")
        }
        _ => (Kind::Headline, name),
    };
    let metric = metric_named(name).ok_or_else(|| {
        let names: Vec<&str> = headline().iter().map(|m| m.name).collect();
        SweepError::input(
            at,
            format!(
                "unknown figure {name:?}: use within(30s), scheduled, p50, p90, p99, max, pending, pending_end, preempted, cpu, memory or one of {}",
                names.join(", ")
            ),
        )
    })?;
    Ok((kind, metric))
}

/// Parses an SLO: conditions separated by `,` or ` and `, each `FIGURE OP VALUE` with OP one of
/// `>=`, `≥`, `>`, `<=`, `≤`, `<`. FIGURE is a headline figure (`scheduled_share`,
/// `latency_p99_s`, `pending_at_end`, ...) or an alias (`scheduled`, `p50`, `p90`, `p99`, `max`,
/// `pending`, `preempted`, `cpu`, `memory`). Shares take a percentage (`99.9%`) or a fraction
/// (`0.999`); latencies take a duration (`30s`, `2m`, `500ms`) or seconds.
pub fn parse_slo(text: &str) -> Result<Vec<Condition>, SweepError> {
    let mut out = Vec::new();
    let normalized = text.replace(" and ", ",").replace(" AND ", ",");
    for part in normalized
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        let at = format!("--slo {part:?}");
        let ops: [(&str, Cmp); 6] = [
            (">=", Cmp::Ge),
            ("≥", Cmp::Ge),
            ("<=", Cmp::Le),
            ("≤", Cmp::Le),
            (">", Cmp::Gt),
            ("<", Cmp::Lt),
        ];
        let Some((pos, op, cmp)) = ops
            .iter()
            .filter_map(|(op, c)| part.find(op).map(|p| (p, *op, *c)))
            .min_by_key(|(p, op, _)| (*p, std::cmp::Reverse(op.len())))
        else {
            return Err(SweepError::input(
                at,
                "expected FIGURE OP VALUE, e.g. scheduled>=99.9% or p99<=30s",
            ));
        };
        let name = part[..pos].trim();
        let value = part[pos + op.len()..].trim();
        let (kind, metric) = parse_figure(name, &at)?;
        let threshold = match metric.unit {
            Unit::Share => {
                if let Some(p) = value.strip_suffix('%') {
                    let v: f64 = p.trim().parse().map_err(|_| {
                        SweepError::input(&at, format!("{value:?} is not a percentage"))
                    })?;
                    if !(0.0..=100.0).contains(&v) {
                        return Err(SweepError::input(
                            &at,
                            format!("{value} is not a share: a percentage is between 0% and 100%"),
                        ));
                    }
                    v / 100.0
                } else {
                    let v: f64 = value.parse().map_err(|_| {
                        SweepError::input(&at, format!("{value:?} is not a share (99.9% or 0.999)"))
                    })?;
                    if v < 0.0 {
                        return Err(SweepError::input(
                            &at,
                            format!("{value} is not a share: a share is between 0 and 1"),
                        ));
                    }
                    if v > 1.0 {
                        return Err(SweepError::input(
                            &at,
                            format!(
                                "{value} is more than 1: write a percentage with %, e.g. {value}%"
                            ),
                        ));
                    }
                    v
                }
            }
            Unit::Seconds => match value.parse::<f64>() {
                Ok(v) => v,
                Err(_) => SimDuration::parse(value)
                    .map_err(|e| SweepError::input(&at, format!("{value:?}: {e}")))?
                    .as_secs_f64(),
            },
            Unit::Count | Unit::Ratio => value
                .parse()
                .map_err(|_| SweepError::input(&at, format!("{value:?} is not a number")))?,
        };
        if !threshold.is_finite() {
            return Err(SweepError::input(at, "the value must be finite"));
        }
        out.push(Condition {
            text: part.to_string(),
            metric,
            cmp,
            threshold,
            kind,
        });
    }
    if out.is_empty() {
        return Err(SweepError::input(
            "--slo",
            "give at least one condition, e.g. scheduled>=99.9%",
        ));
    }
    Ok(out)
}

/// The `slo.json` of a run judged against these conditions (`ksim run --slo`).
pub fn slo_file(conditions: &[Condition]) -> ksim_report::SloFile {
    ksim_report::SloFile {
        conditions: conditions.iter().map(|c| c.text.clone()).collect(),
        marks: conditions.iter().filter_map(Condition::cdf_mark).collect(),
    }
}

/// One line per condition: whether the run meets it and its value, e.g.
/// `SLO within(30s)>=99%: met (99.6%)`.
pub fn slo_verdicts(
    conditions: &[Condition],
    s: &Summary,
    dist: Option<&LatencyDist>,
) -> Vec<String> {
    conditions
        .iter()
        .map(|c| {
            format!(
                "SLO {}: {} ({})",
                c.text,
                if c.holds(s, dist) { "met" } else { "NOT met" },
                c.display(s, dist)
            )
        })
        .collect()
}

/// Settings of a capacity search.
#[derive(Debug, Clone)]
pub struct PlanOptions {
    pub pool: String,
    pub slo: Vec<Condition>,
    /// The count range searched (inclusive).
    pub min: u32,
    pub max: u32,
    /// Counts run in parallel per round (≥ 1; 1 is plain bisection).
    pub probes: usize,
    /// Runs go to `<out>/runs/count-<N>/`; plan.csv, plan.json and the plot to `<out>`.
    pub out: PathBuf,
    /// Keep every output of each probe run; by default only its `summary.json` (and the
    /// completion marker) stay, so a plan's disk use does not grow with the workload.
    pub keep_runs: bool,
}

/// One count that was run.
#[derive(Debug, Clone)]
pub struct Point {
    pub count: u32,
    pub dir: PathBuf,
    pub summary: Summary,
    /// The run's latencies, read from its pods.csv before the run was pruned.
    pub latencies: LatencyDist,
    pub pass: bool,
}

impl Point {
    /// The run's value of an SLO figure (see [`Condition::value`]).
    pub fn value(&self, c: &Condition) -> Option<(f64, bool)> {
        c.value(&self.summary, Some(&self.latencies))
    }
    /// Whether the run meets the condition.
    pub fn holds(&self, c: &Condition) -> bool {
        c.holds(&self.summary, Some(&self.latencies))
    }
    /// The value as the terminal shows it.
    pub fn display(&self, c: &Condition) -> String {
        c.display(&self.summary, Some(&self.latencies))
    }
}

/// What the search found.
#[derive(Debug, Clone)]
pub struct PlanResult {
    /// The smallest count meeting the SLO; `None` when even `max` does not.
    pub answer: Option<u32>,
    /// Every count run, in count order.
    pub points: Vec<Point>,
    /// Places where a larger count did worse (empty when the runs were monotone).
    pub violations: Vec<String>,
}

/// What the plan is told as it goes.
pub trait PlanProgress: Sync {
    /// A round of counts is about to run.
    fn round(&self, counts: &[u32]);
    /// One count finished.
    fn done(&self, count: u32, pass: bool);
}

impl PlanProgress for () {
    fn round(&self, _: &[u32]) {}
    fn done(&self, _: u32, _: bool) {}
}

/// Searches the smallest count of `opts.pool` in the scenario that meets the SLO.
pub fn plan_capacity(
    scenario: &Scenario,
    source: &str,
    base_dir: &Path,
    opts: &PlanOptions,
    progress: &dyn PlanProgress,
) -> Result<PlanResult, SweepError> {
    let pool = scenario
        .cluster
        .pools
        .iter()
        .position(|p| p.name == opts.pool)
        .ok_or_else(|| {
            let names: Vec<&str> = scenario
                .cluster
                .pools
                .iter()
                .map(|p| p.name.as_str())
                .collect();
            SweepError::input(
                format!("--pool {:?}", opts.pool),
                format!("{source} has no such pool (its pools: {names:?})"),
            )
        })?;
    if opts.min > opts.max {
        return Err(SweepError::input(
            "--min/--max",
            format!("--min {} is more than --max {}", opts.min, opts.max),
        ));
    }
    let probes = opts.probes.max(1);
    let width = opts.max.to_string().len();
    let mut seen: BTreeMap<u32, Point> = BTreeMap::new();
    let run = |counts: &[u32], seen: &mut BTreeMap<u32, Point>| -> Result<(), SweepError> {
        let todo: Vec<u32> = counts
            .iter()
            .copied()
            .filter(|c| !seen.contains_key(c))
            .collect();
        if todo.is_empty() {
            return Ok(());
        }
        progress.round(&todo);
        let results: Vec<Result<Point, SweepError>> = todo
            .par_iter()
            .map(|&count| {
                let mut s = scenario.clone();
                s.cluster.pools[pool].count = count;
                let id = format!("count-{count:0width$}");
                let dir = opts.out.join("runs").join(&id);
                let plan =
                    s.plan(&format!("{source} [{id}]"), base_dir)
                        .map_err(|e| SweepError::Run {
                            run: id.clone(),
                            message: e.to_string(),
                        })?;
                let summary = crate::run::run_plan(plan, &dir, false, &mut |_| {})?;
                // Read back what was written, as sweeps do, so plan.csv matches summary.json;
                // the latencies beside it (from pods.csv, before pruning) serve SLOs at any
                // percentile or within(D).
                let summary = Summary::read(&dir).unwrap_or(summary);
                let latencies = LatencyDist::from_pods_csv(&dir, summary.horizon_s)?;
                if !opts.keep_runs {
                    prune_run(&dir)?;
                }
                let mut point = Point {
                    count,
                    dir,
                    summary,
                    latencies,
                    pass: false,
                };
                point.pass = opts.slo.iter().all(|c| point.holds(c));
                progress.done(count, point.pass);
                Ok(point)
            })
            .collect();
        for r in results {
            let p = r?;
            seen.insert(p.count, p);
        }
        Ok(())
    };

    let passes = |seen: &BTreeMap<u32, Point>, c: u32| seen.get(&c).is_some_and(|p| p.pass);
    run(&[opts.min, opts.max], &mut seen)?;
    let answer = if !passes(&seen, opts.max) {
        None
    } else if passes(&seen, opts.min) {
        Some(opts.min)
    } else {
        let (mut lo, mut hi) = (opts.min, opts.max);
        while hi - lo > 1 {
            let span = u64::from(hi - lo);
            let mut counts: Vec<u32> = (1..=probes as u64)
                .map(|j| lo + (span * j / (probes as u64 + 1)) as u32)
                .filter(|&c| c > lo && c < hi)
                .collect();
            counts.dedup();
            if counts.is_empty() {
                counts.push(lo + 1);
            }
            run(&counts, &mut seen)?;
            // The smallest passing count in the bracket, then the largest failing one below it.
            let new_hi = seen
                .range(lo..=hi)
                .find(|(_, p)| p.pass)
                .map(|(c, _)| *c)
                .unwrap_or(hi);
            let new_lo = seen
                .range(lo..new_hi)
                .filter(|(_, p)| !p.pass)
                .map(|(c, _)| *c)
                .next_back()
                .unwrap_or(lo);
            lo = new_lo;
            hi = new_hi;
        }
        Some(hi)
    };
    let points: Vec<Point> = seen.into_values().collect();
    let violations = check_monotone(&points, &opts.slo);
    Ok(PlanResult {
        answer,
        points,
        violations,
    })
}

/// Removes every output of a probe run except `summary.json` and the completion marker.
fn prune_run(dir: &Path) -> Result<(), SweepError> {
    let keep = ["summary.json", ksim_report::staging::COMPLETE_MARKER];
    let entries = std::fs::read_dir(dir).map_err(|e| SweepError::io(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| SweepError::io(dir, e))?;
        let path = entry.path();
        if keep.iter().any(|k| entry.file_name() == *k) {
            continue;
        }
        let removed = if path.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        removed.map_err(|e| SweepError::io(&path, e))?;
    }
    Ok(())
}

/// Every place a larger count did worse: failed the SLO after a smaller count met it, or had a
/// worse SLO figure than the next smaller count.
fn check_monotone(points: &[Point], slo: &[Condition]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, a) in points.iter().enumerate() {
        for b in &points[i + 1..] {
            if a.pass && !b.pass {
                out.push(format!(
                    "count {} met the SLO but the larger count {} did not",
                    a.count, b.count
                ));
            }
        }
    }
    for w in points.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        for c in slo {
            // A censored latency is larger than any observed one.
            let eff = |p: &Point| {
                p.value(c)
                    .map(|(v, censored)| if censored { f64::INFINITY } else { v })
            };
            let (va, vb) = (eff(a), eff(b));
            let better = match c.kind {
                Kind::Headline => c.metric.better,
                Kind::AllPods(_) => Better::Lower,
                Kind::Within(_) | Kind::ScheduledOfNeeded => Better::Higher,
            };
            let worse = match (va, vb, better) {
                (Some(va), Some(vb), Better::Higher) => matters(va, vb) && vb < va,
                (Some(va), Some(vb), Better::Lower) => matters(va, vb) && vb > va,
                (Some(_), None, _) => true,
                _ => false,
            };
            if worse {
                out.push(format!(
                    "{} got worse from count {} ({}) to count {} ({})",
                    c.figure(),
                    a.count,
                    a.display(c),
                    b.count,
                    b.display(c)
                ));
            }
        }
    }
    out
}

/// Differences smaller than this share of the larger value are noise (a pod's jitter), not a
/// sign that more nodes did worse; the not-monotone warning ignores them.
pub const MONOTONE_TOLERANCE: f64 = 0.05;

/// Whether two values of a figure differ by more than [`MONOTONE_TOLERANCE`] (relative).
fn matters(a: f64, b: f64) -> bool {
    if a.is_infinite() || b.is_infinite() {
        return a != b;
    }
    (a - b).abs() > MONOTONE_TOLERANCE * a.abs().max(b.abs())
}

#[derive(Serialize)]
struct PlanJson<'a> {
    scenario: &'a str,
    pool: &'a str,
    slo: Vec<SloJson<'a>>,
    min: u32,
    max: u32,
    probes: usize,
    answer: Option<u32>,
    monotone: bool,
    violations: &'a [String],
    counts_run: Vec<u32>,
}

#[derive(Serialize)]
struct SloJson<'a> {
    condition: &'a str,
    figure: String,
    op: &'a str,
    threshold: f64,
}

impl PlanResult {
    /// `plan.csv`: one row per count run — `count`, `meets_slo`, then the headline figures.
    pub fn to_csv(&self) -> String {
        let metrics = headline();
        let mut w = csv::Writer::from_writer(Vec::new());
        let mut header = vec!["count".to_string(), "meets_slo".to_string()];
        header.extend(metrics.iter().map(|m| m.name.to_string()));
        let _ = w.write_record(&header);
        for p in &self.points {
            let mut rec = vec![p.count.to_string(), p.pass.to_string()];
            rec.extend(metrics.iter().map(|m| {
                (m.get)(&p.summary)
                    .map(|v| format!("{v}"))
                    .unwrap_or_default()
            }));
            let _ = w.write_record(&rec);
        }
        String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
    }

    /// The terminal table: count, verdict and each SLO figure.
    pub fn terminal(&self, slo: &[Condition]) -> String {
        let mut t = Table::new();
        t.load_preset(presets::UTF8_FULL_CONDENSED)
            .set_content_arrangement(ContentArrangement::Disabled);
        let mut header = vec!["count".to_string(), "meets SLO".to_string()];
        header.extend(slo.iter().map(|c| c.text.clone()));
        t.set_header(header);
        for p in &self.points {
            let mut row = vec![
                if Some(p.count) == self.answer {
                    format!("{} ←", p.count)
                } else {
                    p.count.to_string()
                },
                if p.pass { "yes".into() } else { "no".into() },
            ];
            for c in slo {
                let text = p.display(c);
                let mark = if p.holds(c) { "" } else { " ✗" };
                row.push(format!("{text}{mark}"));
            }
            t.add_row(row);
        }
        for c in 2..2 + slo.len() {
            if let Some(col) = t.column_mut(c) {
                col.set_cell_alignment(CellAlignment::Right);
            }
        }
        let mut out = t.to_string();
        let censored = self
            .points
            .iter()
            .any(|p| slo.iter().any(|c| p.display(c).starts_with("> ")));
        if censored {
            out.push('\n');
            out.push_str(crate::table::CENSORED_NOTE);
        }
        out
    }

    /// Writes plan.csv, plan.json and plan.{svg,png} (each SLO figure against the count, with
    /// its threshold; green points meet the whole SLO, red ones do not).
    pub fn write_outputs(
        &self,
        out: &Path,
        scenario: &str,
        opts: &PlanOptions,
    ) -> Result<(), SweepError> {
        std::fs::create_dir_all(out).map_err(|e| SweepError::io(out, e))?;
        let csv_path = out.join("plan.csv");
        std::fs::write(&csv_path, self.to_csv()).map_err(|e| SweepError::io(&csv_path, e))?;
        let json = PlanJson {
            scenario,
            pool: &opts.pool,
            slo: opts
                .slo
                .iter()
                .map(|c| SloJson {
                    condition: &c.text,
                    figure: c.figure(),
                    op: c.cmp.as_str(),
                    threshold: c.threshold,
                })
                .collect(),
            min: opts.min,
            max: opts.max,
            probes: opts.probes,
            answer: self.answer,
            monotone: self.violations.is_empty(),
            violations: &self.violations,
            counts_run: self.points.iter().map(|p| p.count).collect(),
        };
        let json_path = out.join("plan.json");
        let text = serde_json::to_string_pretty(&json).unwrap_or_default() + "\n";
        std::fs::write(&json_path, text).map_err(|e| SweepError::io(&json_path, e))?;
        // Each SLO figure with its threshold, then a few context figures without one.
        let panel = |title: String,
                     unit: Unit,
                     get: &dyn Fn(&Point) -> Option<(f64, bool)>,
                     threshold: Option<f64>| {
            let scale = if unit == Unit::Share { 100.0 } else { 1.0 };
            let t = threshold.map(|t| t * scale);
            // The y-axis stays around the threshold: shares from a little below it to 100%,
            // latencies from 0 to twice it; values beyond (and censored latencies, which are
            // "more than the run") are drawn at the edge.
            let (lo, hi) = match (t, unit) {
                (Some(t), Unit::Share) => ((2.0 * t - 100.0 - 5.0).max(0.0), 100.0),
                (Some(t), Unit::Seconds) if t > 0.0 => (0.0, 2.0 * t),
                _ => (f64::NEG_INFINITY, f64::INFINITY),
            };
            let pts: Vec<(f64, f64, bool)> = self
                .points
                .iter()
                .filter_map(|p| {
                    let (v, censored) = get(p)?;
                    let v = if censored { f64::INFINITY } else { v * scale };
                    let v = v.clamp(lo, hi);
                    v.is_finite().then_some((f64::from(p.count), v, p.pass))
                })
                .collect();
            Panel {
                title: format!("{title}{}", if unit == Unit::Share { " (%)" } else { "" }),
                x: XAxis::Numeric,
                x_desc: format!("nodes in pool {}", opts.pool),
                points: pts
                    .iter()
                    .map(|&(x, y, pass)| (x, y, pass_color(pass)))
                    .collect(),
                line: pts.iter().map(|&(x, y, _)| (x, y)).collect(),
                hline: t,
            }
        };
        let mut panels: Vec<Panel> = opts
            .slo
            .iter()
            .map(|c| {
                let unit = match c.kind {
                    Kind::AllPods(_) => Unit::Seconds,
                    Kind::Within(_) | Kind::ScheduledOfNeeded => Unit::Share,
                    Kind::Headline => c.metric.unit,
                };
                panel(
                    format!("{} ({})", c.figure(), c.text),
                    unit,
                    &|p| p.value(c),
                    Some(c.threshold),
                )
            })
            .collect();
        for name in ["scheduled_share", "latency_p99_s", "cpu_utilization_mean"] {
            let shown = opts
                .slo
                .iter()
                .any(|c| c.kind == Kind::Headline && c.metric.name == name);
            if !shown {
                if let Some(m) = metric_named(name) {
                    panels.push(panel(
                        m.name.to_string(),
                        m.unit,
                        &|p| (m.get)(&p.summary).map(|v| (v, false)),
                        None,
                    ));
                }
            }
        }
        let title =
            match self.answer {
                Some(a) => {
                    format!(
                "Capacity plan for pool {}: {a} nodes meet {} (green: meets, red: does not)",
                opts.pool,
                opts.slo.iter().map(|c| c.text.as_str()).collect::<Vec<_>>().join(", ")
            )
                }
                None => format!(
                    "Capacity plan for pool {}: no count up to {} meets the SLO",
                    opts.pool, opts.max
                ),
            };
        write_grid(out, "plan", &title, &panels, 2.min(panels.len().max(1)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slo_strings() {
        let c = parse_slo("scheduled>=99.9%, p99<=30s").unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(c[0].metric.name, "scheduled_share");
        assert_eq!(c[0].cmp, Cmp::Ge);
        assert!((c[0].threshold - 0.999).abs() < 1e-12);
        assert_eq!(c[1].metric.name, "latency_p99_s");
        assert_eq!(c[1].threshold, 30.0);
        let c = parse_slo("latency_p90_s < 2m and pending_at_end<=0").unwrap();
        assert_eq!((c[0].cmp, c[0].threshold), (Cmp::Lt, 120.0));
        assert_eq!((c[1].cmp, c[1].threshold), (Cmp::Le, 0.0));
        for (s, want) in [
            ("", "--slo: give at least one condition"),
            (
                "scheduled 99%",
                "--slo \"scheduled 99%\": expected FIGURE OP VALUE",
            ),
            ("speed>=3", "--slo \"speed>=3\": unknown figure \"speed\""),
            (
                "scheduled>=99.9",
                "--slo \"scheduled>=99.9\": 99.9 is more than 1",
            ),
            ("p99<=soon", "--slo \"p99<=soon\": \"soon\": "),
            (
                "scheduled>=lots%",
                "--slo \"scheduled>=lots%\": \"lots%\" is not a percentage",
            ),
        ] {
            let e = parse_slo(s).unwrap_err().to_string();
            assert!(e.starts_with(want), "{s}: {e}");
        }
    }
}
