//! `ksim fgd [--workload NAME]... [--policy NAME]... [--seeds 42..51] [--traces DIR]
//! [--threads N] [--tie-break node-name|random] [--no-plots] [--quiet] --out DIR`: the FGD
//! paper's experiment (workloads × policies × seeds on the openb traces), run in parallel;
//! `allocation.csv`, `fragmentation.csv`, `fragmentation_ratio.csv`, `summary.md`,
//! `summary.csv`, `runs.csv`, the policies' scheduler configurations and plots.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use ksim_gpu::experiment::{find_list, NODE_LIST};
use ksim_gpu::matrix::traces_dir;
use ksim_gpu::{parse_seeds, run_fgd, FgdOptions, Policy, TieBreak};

#[derive(Args)]
pub struct FgdArgs {
    /// A pod list by its suffix (`default`, `cpu050`, `gpushare40`, ...); repeat for several.
    /// Default: the paper's 17.
    #[arg(long = "workload", value_name = "NAME")]
    pub workloads: Vec<String>,
    /// Random, DotProd, GpuClustering, GpuPacking, BestFit or FGD (case-insensitive); repeat for
    /// several. Default: all six.
    #[arg(long = "policy", value_name = "NAME", value_parser = parse_policy)]
    pub policies: Vec<Policy>,
    /// Seeds: a range `42..51` (inclusive), `42..=51`, a list `42,43` or one number.
    #[arg(long, default_value = "42..51", value_parser = parse_seed_list)]
    pub seeds: Seeds,
    /// The openb traces folder (node list and pod lists, `.csv` or `.csv.gz`).
    /// Default: `traces/alibaba-gpu-v2023-openb` (the project's copy).
    #[arg(long, value_name = "DIR")]
    pub traces: Option<PathBuf>,
    /// Worker threads (default: one per core).
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    pub threads: Option<usize>,
    /// Host choice among equally scored nodes: `node-name` (the artifact's scheduler: the
    /// smallest name) or `random` (upstream kube-scheduler).
    #[arg(long, default_value = "node-name", value_parser = parse_tie_break)]
    pub tie_break: TieBreak,
    /// Try only the first N pods of each run (smoke tests; the curves stop early).
    #[arg(long, value_name = "N")]
    pub max_pods: Option<usize>,
    /// Do not write the plots.
    #[arg(long)]
    pub no_plots: bool,
    /// No line per finished run, no table.
    #[arg(long, short)]
    pub quiet: bool,
    /// Output directory.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

/// The parsed `--seeds` (a newtype so clap does not read it as a repeated flag).
#[derive(Clone, Debug)]
pub struct Seeds(pub Vec<u64>);

fn parse_seed_list(s: &str) -> Result<Seeds, String> {
    parse_seeds(s).map(Seeds).map_err(|e| e.to_string())
}

fn parse_policy(s: &str) -> Result<Policy, String> {
    Policy::parse(s).map_err(|e| e.to_string())
}

fn parse_threads(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err("expected a whole number of threads, at least 1".to_string()),
    }
}

fn parse_tie_break(s: &str) -> Result<TieBreak, String> {
    TieBreak::parse(s).map_err(|e| e.to_string())
}

/// The traces folder, checked: it must hold the GPU node list.
fn checked_traces(given: Option<&Path>) -> anyhow::Result<PathBuf> {
    let dir = traces_dir(given);
    let (what, hint) = if given.is_some() {
        ("--traces", "")
    } else {
        (
            "the default traces folder",
            " (run ksim from the repository root, where the openb files are shipped under \
             traces/, or give --traces DIR)",
        )
    };
    anyhow::ensure!(
        dir.is_dir(),
        "{what} {} does not exist{hint}",
        dir.display()
    );
    anyhow::ensure!(
        find_list(&dir, NODE_LIST).is_some(),
        "{what} {} has no {NODE_LIST}.csv[.gz]{hint}",
        dir.display()
    );
    Ok(dir)
}

pub fn run(a: FgdArgs) -> anyhow::Result<ExitCode> {
    let traces = checked_traces(a.traces.as_deref())?;
    let opts = FgdOptions {
        workloads: a.workloads,
        policies: a.policies.iter().map(|p| p.name().to_string()).collect(),
        seeds: a.seeds.0,
        traces: Some(traces.clone()),
        out: a.out.clone(),
        threads: a.threads,
        progress: !a.quiet,
        max_pods: a.max_pods,
        plots: !a.no_plots,
        tie_break: a.tie_break,
    };
    let s = run_fgd(opts).with_context(|| {
        format!(
            "FGD experiment (traces {}, out {})",
            traces.display(),
            a.out.display()
        )
    })?;
    if !a.quiet {
        println!("{}", s.markdown);
    }
    println!(
        "{} runs ({} workloads × {} policies × {} seeds) in {:.1} s; outputs in {}",
        s.runs,
        s.workloads.len(),
        s.policies.len(),
        s.seeds.len(),
        s.wall_seconds,
        s.out.display()
    );
    Ok(ExitCode::SUCCESS)
}
