//! `ksim plan SCENARIO --pool NAME --slo "scheduled>=99.9%, p99<=30s" [--min N] [--max N]`: the
//! smallest count of a pool whose run meets the SLO, by bisection over runs, with the curve of
//! the SLO figures against the count. Exit code 1 when no count in range meets it.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::Args;
use ksim_sweep::plan::{parse_slo, plan_capacity, PlanOptions, PlanProgress};

#[derive(Args)]
pub struct PlanArgs {
    /// Scenario file (YAML or JSON) with the pool to size.
    pub scenario: PathBuf,
    /// The node pool whose count is searched.
    #[arg(long)]
    pub pool: String,
    /// Conditions that must all hold, e.g. "within(30s)>=99%" "p99<=30s" (repeat the flag or
    /// separate with commas). within(D)>=S: share of the pods that needed scheduling scheduled
    /// within D of creation; scheduled>=S: share of them scheduled at all; p50/p90/p99/max:
    /// latency over all of them, pods pending at the end counting as more than any bound;
    /// pending_end<=N: pods pending at the end. Pods that arrived already bound are left out.
    /// Also pending, preempted, cpu, memory, or any sweep.csv column.
    #[arg(long, required = true)]
    pub slo: Vec<String>,
    /// Smallest count considered (default 1).
    #[arg(long, default_value_t = 1)]
    pub min: u32,
    /// Largest count considered (default: twice the scenario's count).
    #[arg(long)]
    pub max: Option<u32>,
    /// Counts run in parallel per bisection round (1 = plain bisection). Fixed, so the counts
    /// run and the curve do not depend on the machine.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u64).range(1..=64))]
    pub probes: u64,
    /// Runs at once (default: one per core).
    #[arg(long, short)]
    pub jobs: Option<usize>,
    /// Output directory (default results/<scenario name>-plan-<pool>/).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Keep every output of each probe run (pods.csv, placements.csv, ...); by default only
    /// each probe's summary.json and the curve (plan.csv, plan.json, plan.svg/png) are kept.
    #[arg(long)]
    pub keep_runs: bool,
    #[command(flatten)]
    pub version: super::version_args::VersionArgs,
}

struct Printer;

impl PlanProgress for Printer {
    fn round(&self, counts: &[u32]) {
        let c: Vec<String> = counts.iter().map(|c| c.to_string()).collect();
        eprintln!("running counts {}", c.join(", "));
    }
    fn done(&self, count: u32, pass: bool) {
        eprintln!(
            "  count {count}: {}",
            if pass {
                "meets the SLO"
            } else {
                "does not meet the SLO"
            }
        );
    }
}

pub fn run(a: PlanArgs) -> anyhow::Result<ExitCode> {
    let slo = parse_slo(&a.slo.join(","))?;
    let text = std::fs::read_to_string(&a.scenario)
        .map_err(|e| anyhow::anyhow!("{}: {e}", a.scenario.display()))?;
    let source = a.scenario.display().to_string();
    let mut scenario = ksim_trace::parse_scenario(&source, &text)?;
    a.version.apply_to_scenario(&mut scenario, &source)?;
    let base = a.scenario.parent().unwrap_or(Path::new("."));
    let current = scenario
        .cluster
        .pools
        .iter()
        .find(|p| p.name == a.pool)
        .map(|p| p.count)
        .unwrap_or(0);
    let max = a.max.unwrap_or(current.saturating_mul(2).max(a.min.max(1)));
    if max < a.min {
        anyhow::bail!("--max {max} is below --min {}", a.min);
    }
    // Refused before any run: a probe of this size would be refused anyway, after the others.
    let limit = scenario.limits.as_ref().map_or_else(
        || ksim_engine::config::RunLimits::default().max_nodes,
        |l| l.max_nodes,
    );
    if u64::from(max) > limit {
        anyhow::bail!(
            "--max {max}: more than the limit of {limit} nodes (raise it with limits.maxNodes in the scenario)"
        );
    }
    let out = a.out.clone().unwrap_or_else(|| {
        PathBuf::from("results").join(format!("{}-plan-{}", scenario.name, a.pool))
    });
    let opts = PlanOptions {
        pool: a.pool.clone(),
        slo,
        min: a.min,
        max,
        probes: a.probes as usize,
        out: out.clone(),
        keep_runs: a.keep_runs,
    };
    let started = Instant::now();
    let result = crate::commands::sweep::pool(a.jobs)?
        .install(|| plan_capacity(&scenario, &source, base, &opts, &Printer))?;
    result.write_outputs(&out, &source, &opts)?;
    println!("{}", result.terminal(&opts.slo));
    for v in &result.violations {
        println!(
            "warning: not monotone (differences above {:.0}% relative): {v}",
            ksim_sweep::plan::MONOTONE_TOLERANCE * 100.0
        );
    }
    let slo_text: Vec<&str> = opts.slo.iter().map(|c| c.text.as_str()).collect();
    match result.answer {
        Some(n) => println!(
            "smallest count of pool {} meeting {}: {n} ({} runs, {:.2} s wall; plan.csv, plan.json, plan.svg in {})",
            a.pool,
            slo_text.join(", "),
            result.points.len(),
            started.elapsed().as_secs_f64(),
            out.display()
        ),
        None => println!(
            "no count of pool {} in {}..={} meets {} (plan.csv, plan.json, plan.svg in {})",
            a.pool,
            a.min,
            max,
            slo_text.join(", "),
            out.display()
        ),
    }
    Ok(if result.answer.is_some() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
