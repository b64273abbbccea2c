//! `ksim report LOG --out DIR`: re-render a run's reports from its event log.

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
}

pub fn run(a: ReportArgs) -> anyhow::Result<ExitCode> {
    let summary = ksim_report::render_event_log(&a.log, &a.out)
        .with_context(|| format!("rendering {}", a.log.display()))?;
    println!("{}", ksim_report::summary_table(&summary));
    println!("reports written to {}", a.out.display());
    Ok(ExitCode::SUCCESS)
}
