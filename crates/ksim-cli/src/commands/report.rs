//! `ksim report LOG --out DIR [--slo C]...`: re-render a run's reports from its event log.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

#[derive(Args)]
pub struct ReportArgs {
    /// The event log a run wrote with `--event-log` (JSON Lines of records).
    pub log: PathBuf,
    /// Output directory.
    #[arg(long)]
    pub out: PathBuf,
    /// SLO conditions to mark on the latency CDF and check, as `ksim plan --slo` takes them
    /// (e.g. "within(30s)>=99%", "p99<=30s"); written to slo.json. Without it the run's own
    /// slo.json (beside the log) is kept.
    #[arg(long)]
    pub slo: Vec<String>,
}

pub fn run(a: ReportArgs) -> anyhow::Result<ExitCode> {
    let slo = crate::commands::run::parse_slo_flags(&a.slo)?;
    let file = slo.as_deref().map(ksim_sweep::plan::slo_file);
    let summary = ksim_report::render_event_log_with(&a.log, &a.out, file.as_ref())
        .with_context(|| format!("rendering {}", a.log.display()))?;
    println!("{}", ksim_report::summary_table(&summary));
    crate::commands::run::print_slo_verdicts(slo.as_deref(), &summary, &a.out)?;
    println!("reports written to {}", a.out.display());
    Ok(ExitCode::SUCCESS)
}
