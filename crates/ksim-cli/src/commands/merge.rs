//! `ksim merge DIR... [--out DIR]`: joins the outputs of a sweep's shards (`ksim sweep --shard
//! I/N`) into the `sweep.csv` and plots one unsharded run would give.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

#[derive(Args)]
pub struct MergeArgs {
    /// Shard output directories (each with shard-I-of-N.json and runs/); one shared directory
    /// holding every shard works too.
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Where sweep.csv and the plots go (default: the first directory).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Do not print the table.
    #[arg(long, short)]
    pub quiet: bool,
}

pub fn run(a: MergeArgs) -> anyhow::Result<ExitCode> {
    let out = a.out.clone().unwrap_or_else(|| a.dirs[0].clone());
    let table = ksim_sweep::merge(&a.dirs, &out)?;
    if !a.quiet {
        println!("{}", table.terminal(false));
    }
    println!(
        "{} runs merged; sweep.csv and plots written to {}",
        table.rows.len(),
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}
