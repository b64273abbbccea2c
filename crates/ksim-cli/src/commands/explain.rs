//! `ksim explain RUN_DIR POD [--attempt N | --at TIME] [--top K] [--json]`: one recorded
//! attempt of a pod from the run's `explain.jsonl` (`ksim run --explain`). The reading and
//! the layout are `ksim_report::explain_view`'s; this only parses the arguments and prints.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use ksim_report::explain_view::{read_records, render, view, AttemptChoice};

#[derive(Args)]
pub struct ExplainArgs {
    /// A run directory written with `ksim run --explain`.
    pub run_dir: PathBuf,
    /// The pod: `namespace/name`, or a name in namespace `default`.
    pub pod: String,
    /// The attempt number (as in placements.csv); default: the last recorded.
    #[arg(long, conflicts_with = "at")]
    pub attempt: Option<u64>,
    /// The last attempt made at or before this virtual time (e.g. "90m", "3600").
    #[arg(long, value_name = "TIME")]
    pub at: Option<String>,
    /// How many scored nodes to list.
    #[arg(long, default_value_t = 5)]
    pub top: usize,
    /// Print the same data as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(a: ExplainArgs) -> anyhow::Result<ExitCode> {
    let records = read_records(&a.run_dir)?;
    let choice = match (a.attempt, &a.at) {
        (Some(n), _) => AttemptChoice::Number(n),
        (None, Some(t)) => AttemptChoice::At(t.clone()),
        (None, None) => AttemptChoice::Last,
    };
    let v = view(&a.run_dir, &records, &a.pod, &choice, a.top)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        print!("{}", render(&v));
    }
    Ok(ExitCode::SUCCESS)
}
