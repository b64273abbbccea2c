//! `ksim compare DIR... [--out DIR] [--csv FILE]`: the headline figures of runs made separately,
//! side by side — only the figures that differ get a column, the best value per column is
//! marked, and each value shows its change from the first run. Above the table, one verdict line
//! per figure that differs, nodes in use first. With `--out`, the same
//! `sweep.csv`-style table (compare.csv) and plots a sweep writes.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use ksim_sweep::RunTable;

#[derive(Args)]
pub struct CompareArgs {
    /// Run directories (each with a summary.json); the first is the baseline.
    #[arg(required = true)]
    pub runs: Vec<PathBuf>,
    /// Write compare.csv and the comparison plots (runs.svg, latency_cdf.svg) here.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also write compare.csv (the same table as `--out` writes) here.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// An SLO figure to add as a column (`within(30s)`, `p95`, `scheduled`, ...; repeatable),
    /// read from each run's pods.csv when summary.json does not store it.
    #[arg(long = "column", value_name = "FIGURE")]
    pub columns: Vec<String>,
}

pub fn run(a: CompareArgs) -> anyhow::Result<ExitCode> {
    let figures = ksim_sweep::table::parse_columns(&a.columns, "--column")?;
    let table = RunTable::from_dirs(&a.runs)?.with_figures(figures)?;
    println!("{}", table.terminal(true));
    if let Some(p) = &a.csv {
        // One CSV format for comparisons: the sweep.csv-style table.
        table.write_csv(p)?;
    }
    if let Some(out) = &a.out {
        std::fs::create_dir_all(out)?;
        table.write_csv(&out.join("compare.csv"))?;
        ksim_sweep::plots::write_table_plots(&table, out)?;
        println!("compare.csv and plots written to {}", out.display());
    }
    Ok(ExitCode::SUCCESS)
}
