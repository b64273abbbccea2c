//! `ksim sweep SWEEP.yaml [--out DIR] [--shard I/N] [--jobs N]`: the cross product of a sweep's
//! axes, run in parallel; `sweep.csv`, plots and one directory per run. With `--shard` only that
//! slice runs, and `ksim merge` joins the slices.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use ksim_sweep::{load_sweep, run_sweep, RunTable, Shard, SweepOptions};

use crate::progress::RunsProgress;

#[derive(Args)]
pub struct SweepArgs {
    /// Sweep file (YAML or JSON): a base scenario and the axes to vary.
    pub sweep: PathBuf,
    /// Output directory (default: the sweep's `output`, else results/<sweep name>/).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Run only the I-th of N disjoint slices (I from 0); join them with `ksim merge`.
    #[arg(long)]
    pub shard: Option<String>,
    /// Runs at once (default: one per core).
    #[arg(long, short)]
    pub jobs: Option<usize>,
    /// Also write each run's event log (events.jsonl).
    #[arg(long)]
    pub event_log: bool,
    /// Do not print the table.
    #[arg(long, short)]
    pub quiet: bool,
    #[command(flatten)]
    pub version: super::version_args::VersionArgs,
}

/// A rayon pool of `jobs` threads (default: rayon's, one per core).
pub fn pool(jobs: Option<usize>) -> anyhow::Result<rayon::ThreadPool> {
    let mut b = rayon::ThreadPoolBuilder::new();
    if let Some(j) = jobs {
        anyhow::ensure!(j >= 1, "--jobs must be at least 1");
        b = b.num_threads(j);
    }
    b.build().context("starting worker threads")
}

pub fn run(a: SweepArgs) -> anyhow::Result<ExitCode> {
    let mut sweep = load_sweep(&a.sweep)?;
    let source = sweep.base_source.clone();
    a.version.apply_to_scenario(&mut sweep.base, &source)?;
    let shard = match &a.shard {
        Some(s) => Shard::parse(s)?,
        None => Shard::WHOLE,
    };
    let out = a
        .out
        .clone()
        .or_else(|| sweep.output.clone())
        .unwrap_or_else(|| PathBuf::from("results").join(&sweep.name));
    let runs = sweep
        .points()
        .iter()
        .filter(|p| shard.contains(p.index))
        .count();
    let started = Instant::now();
    let progress = RunsProgress::new(&sweep.name, runs as u64);
    let opts = SweepOptions {
        out: out.clone(),
        shard,
        event_log: a.event_log,
    };
    let manifest = pool(a.jobs)?.install(|| run_sweep(&sweep, &opts, &progress));
    progress.finish();
    let manifest = manifest?;
    let wall = started.elapsed().as_secs_f64();
    if !shard.is_whole() {
        println!(
            "shard {}/{}: {} of {} runs written to {}/runs ({wall:.2} s wall); join the shards with `ksim merge DIR...`",
            shard.index,
            shard.count,
            manifest.runs.len(),
            manifest.total_runs,
            out.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let table = RunTable::from_manifests(&[(out.clone(), manifest)])?;
    ksim_sweep::write_sweep_outputs(&table, &out)?;
    if !a.quiet {
        println!("{}", table.terminal(false));
    }
    println!(
        "{} runs; sweep.csv, plots and runs/ written to {} ({wall:.2} s wall)",
        table.rows.len(),
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}
