//! `ksim compare DIR...`: the headline figures of several runs side by side.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

#[derive(Args)]
pub struct CompareArgs {
    /// Run directories (each with a summary.json).
    #[arg(required = true)]
    pub runs: Vec<PathBuf>,
    /// Also write the table as CSV here.
    #[arg(long)]
    pub csv: Option<PathBuf>,
}

pub fn run(a: CompareArgs) -> anyhow::Result<ExitCode> {
    let cmp = ksim_report::Comparison::from_paths(&a.runs)?;
    println!("{}", cmp.table());
    if let Some(p) = &a.csv {
        cmp.write_csv(p)?;
    }
    Ok(ExitCode::SUCCESS)
}
