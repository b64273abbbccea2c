//! `ksim run [SCENARIO] [--nodes FILE] [--trace FILE]... [--scheduler-config FILE] [--seed N]
//! [--until DURATION] [--out DIR]`: flags override the scenario; with `--nodes` and `--trace`
//! no scenario file is needed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::bail;
use clap::Args;
use ksim_engine::{EngineConfig, SimDuration, SimTime};
use ksim_scheduler::node_info::ClusterObjects;
use ksim_trace::scenario::load_scheduler_config;
use ksim_trace::{load_nodes, load_scenario, open_trace, MergedSource, ScenarioPlan};

use crate::progress::VirtualTimeProgress;

#[derive(Args)]
pub struct RunArgs {
    /// Scenario file (YAML or JSON).
    pub scenario: Option<PathBuf>,
    /// Nodes present at time 0 (a Kubernetes List, JSON or YAML); replaces the scenario's.
    #[arg(long)]
    pub nodes: Option<PathBuf>,
    /// Native traces (JSON Lines, or CSV by extension); replace the scenario's workload.
    #[arg(long = "trace")]
    pub traces: Vec<PathBuf>,
    /// A KubeSchedulerConfiguration file; replaces the scenario's.
    #[arg(long)]
    pub scheduler_config: Option<PathBuf>,
    /// Seed of every random choice (tie-breaks, generators, jitter).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Stop after this virtual time (e.g. "2h", "90m", "3600").
    #[arg(long)]
    pub until: Option<String>,
    /// Output directory (default results/<scenario name>/).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also write the event log (events.jsonl) that `ksim report` re-renders.
    #[arg(long)]
    pub event_log: bool,
    /// Record the scheduling detail (per-node filter results, per-plugin scores, preemption) of
    /// the selected pods' attempts into explain.jsonl: `ns/name`, a label selector `app=web`,
    /// `pending` (pods with an unschedulable attempt) or `all`.
    #[arg(long, value_name = "SELECTOR")]
    pub explain: Option<String>,
    /// Do not print the summary table.
    #[arg(long, short)]
    pub quiet: bool,
    /// SLO conditions, as `ksim plan --slo` takes them (e.g. "within(30s)>=99%", "p99<=30s"):
    /// checked after the run, written to slo.json and marked on the report's latency CDF.
    #[arg(long)]
    pub slo: Vec<String>,
}

/// `--slo` flags (repeated or comma-separated) parsed by `ksim plan`'s parser; `None` when
/// none was given.
pub fn parse_slo_flags(
    flags: &[String],
) -> anyhow::Result<Option<Vec<ksim_sweep::plan::Condition>>> {
    if flags.is_empty() {
        return Ok(None);
    }
    Ok(Some(ksim_sweep::plan::parse_slo(&flags.join(","))?))
}

/// Prints whether the run in `dir` meets each condition (latencies read from its pods.csv).
pub fn print_slo_verdicts(
    slo: Option<&[ksim_sweep::plan::Condition]>,
    summary: &ksim_report::Summary,
    dir: &Path,
) -> anyhow::Result<()> {
    let Some(slo) = slo else {
        return Ok(());
    };
    let dist = ksim_report::LatencyDist::from_pods_csv(dir)?;
    for line in ksim_sweep::plan::slo_verdicts(slo, summary, Some(&dist)) {
        println!("{line}");
    }
    Ok(())
}

fn plan_from(a: &RunArgs) -> anyhow::Result<ScenarioPlan> {
    let mut plan = match &a.scenario {
        Some(p) => load_scenario(p)?,
        None => {
            if a.nodes.is_none() || a.traces.is_empty() {
                bail!("give a scenario file, or both --nodes and --trace");
            }
            ScenarioPlan {
                name: a
                    .traces
                    .first()
                    .and_then(|t| t.file_stem())
                    .map(|s| s.to_string_lossy().trim_end_matches(".jsonl").to_string())
                    .unwrap_or_else(|| "run".into()),
                source: "<command line>".into(),
                engine: EngineConfig::default(),
                scheduler: Default::default(),
                nodes: Vec::new(),
                objects: ClusterObjects::default(),
                events: MergedSource::new(Vec::new()),
                output_dir: None,
                warnings: Vec::new(),
            }
        }
    };
    if let Some(n) = &a.nodes {
        plan.nodes = load_nodes(n)?;
    }
    if !a.traces.is_empty() {
        plan.warnings
            .retain(|w| !w.ends_with("the trace has no event"));
        for t in &a.traces {
            if !ksim_trace::io::trace_has_events(t)? {
                plan.warnings
                    .push(format!("{}: the trace has no event", t.display()));
            }
        }
        let sources = a
            .traces
            .iter()
            .map(|t| open_trace(t))
            .collect::<Result<Vec<_>, _>>()?;
        plan.events = MergedSource::new(sources);
    }
    if let Some(c) = &a.scheduler_config {
        plan.scheduler = load_scheduler_config(c)?;
    }
    if let Some(s) = a.seed {
        plan.engine.seed = s;
    }
    if let Some(u) = &a.until {
        let d = SimDuration::parse(u).map_err(|e| anyhow::anyhow!("--until: {e}"))?;
        plan.engine.horizon = Some(SimTime(d.micros()));
    }
    Ok(plan)
}

pub fn run(a: RunArgs) -> anyhow::Result<ExitCode> {
    let slo = parse_slo_flags(&a.slo)?;
    let plan = plan_from(&a)?;
    let out = a
        .out
        .clone()
        .or_else(|| plan.output_dir.clone())
        .unwrap_or_else(|| Path::new("results").join(&plan.name));
    let started = Instant::now();
    for w in &plan.warnings {
        eprintln!("warning: {w}");
    }
    if plan.nodes.is_empty() && plan.engine.autoscaler.is_none() {
        eprintln!(
            "warning: {}: the cluster has no nodes at t=0; pods wait until a trace adds nodes \
             (a run without a horizon stops as soon as nothing can change)",
            plan.source
        );
    }
    let horizon = plan.engine.horizon;
    let explain = match &a.explain {
        Some(s) => Some(
            ksim_engine::explain::ExplainSelector::parse(s)
                .map_err(|e| anyhow::anyhow!("--explain: {e}"))?,
        ),
        None => None,
    };
    let slo_json = slo
        .as_deref()
        .map(|c| ksim_sweep::plan::slo_file(c).to_json());
    let extra: Vec<(&str, &str)> = slo_json
        .as_deref()
        .map(|t| (ksim_report::SLO_FILE, t))
        .into_iter()
        .collect();
    let summary = run_plan_explain(plan, &out, a.event_log, explain, &extra)?;
    let wall = started.elapsed();
    if let Some(why) = &summary.stalled {
        eprintln!("note: {why}");
    }
    if !summary.unserved_schedulers.is_empty() {
        eprintln!(
            "warning: {} pod(s) name a schedulerName no profile serves ({}); as upstream, \
             another scheduler owns them and they were never scheduled (outcome 'unserved' in \
             pods.csv)",
            summary.pods.by_outcome.unserved,
            summary.unserved_schedulers.join(", ")
        );
    }
    if !a.quiet {
        println!("{}", ksim_report::summary_table(&summary));
        print_slo_verdicts(slo.as_deref(), &summary, &out)?;
        println!(
            "reports written to {} ({:.2} s wall)",
            out.display(),
            wall.as_secs_f64()
        );
    }
    let _ = horizon;
    Ok(ExitCode::SUCCESS)
}

/// [`run_plan`] with `--explain`.
pub fn run_plan_explain(
    plan: ScenarioPlan,
    out: &Path,
    event_log: bool,
    explain: Option<ksim_engine::explain::ExplainSelector>,
    extra: &[(&str, &str)],
) -> anyhow::Result<ksim_report::Summary> {
    let mut progress = VirtualTimeProgress::new(&plan.name, plan.engine.horizon);
    let summary = ksim_sweep::run_plan_explain(
        plan,
        out,
        event_log,
        &mut |at| progress.update(at),
        extra,
        explain,
    );
    progress.finish();
    Ok(summary?)
}
