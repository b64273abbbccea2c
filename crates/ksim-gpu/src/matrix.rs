//! The experiment matrix: workloads × policies × seeds, run in parallel (rayon), and its
//! outputs: the curve CSVs, the summary table, the per-run table and the plots.
//!
//! **Determinism:** every run is seeded on its own and results are written in the order of the
//! matrix (workloads as given, policies, seeds), so the same options give byte-identical files
//! whatever the number of threads.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use rayon::prelude::*;

use crate::error::FgdError;
use crate::experiment::{
    load_workload, registry, run_one, Policy, RunOptions, RunOutcome, TieBreak, Workload,
    MAX_BUCKET,
};

/// The 17 pod lists of the paper's experiments (the artifact's `generate_run_scripts.py`):
/// the real list, four CPU-only shares, four GPU-sharing shares, four GPU-model-constraint
/// shares and four multi-GPU shares.
pub const PAPER_WORKLOADS: [&str; 17] = [
    "default",
    "cpu050",
    "cpu100",
    "cpu200",
    "cpu250",
    "gpushare40",
    "gpushare60",
    "gpushare80",
    "gpushare100",
    "gpuspec10",
    "gpuspec20",
    "gpuspec25",
    "gpuspec33",
    "multigpu20",
    "multigpu30",
    "multigpu40",
    "multigpu50",
];

/// The paper's seeds.
pub const PAPER_SEEDS: std::ops::RangeInclusive<u64> = 42..=51;

/// Where the openb traces are when no directory is given.
pub const DEFAULT_TRACES: &str = "traces/alibaba-gpu-v2023-openb";

/// What `ksim fgd` runs.
#[derive(Debug, Clone, Default)]
pub struct FgdOptions {
    /// Pod-list suffixes (`default`, `cpu050`, …); empty = the paper's 17.
    pub workloads: Vec<String>,
    /// Policy names; empty = all six.
    pub policies: Vec<String>,
    /// Empty = 42..=51.
    pub seeds: Vec<u64>,
    /// The openb folder; `None` = `traces/alibaba-gpu-v2023-openb` (relative to the working
    /// directory, else to this source tree).
    pub traces: Option<PathBuf>,
    pub out: PathBuf,
    /// Worker threads; `None` = rayon's default (one per core).
    pub threads: Option<usize>,
    /// Print a line per finished run to stderr.
    pub progress: bool,
    /// Try only the first this many pods of each run (smoke tests only).
    pub max_pods: Option<usize>,
    /// Write the plots (SVG and PNG).
    pub plots: bool,
    /// Host choice among equal scores; the default is the artifact's (smallest node name).
    pub tie_break: TieBreak,
}

/// Mean and population standard deviation of one cell of the summary table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeanSd {
    pub mean: f64,
    pub sd: f64,
    pub n: usize,
}

impl MeanSd {
    pub fn of(values: &[f64]) -> Option<MeanSd> {
        if values.is_empty() {
            return None;
        }
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
        Some(MeanSd {
            mean,
            sd: var.sqrt(),
            n: values.len(),
        })
    }
}

/// What `run_fgd` did.
#[derive(Debug, Clone)]
pub struct FgdSummary {
    pub workloads: Vec<String>,
    pub policies: Vec<Policy>,
    pub seeds: Vec<u64>,
    pub runs: usize,
    /// Wall time of the whole matrix (loading, runs and outputs), seconds.
    pub wall_seconds: f64,
    /// `[workload][policy]`: unallocated GPU % when arrived demand reached 100% of capacity.
    pub unallocated_at_100: Vec<Vec<Option<MeanSd>>>,
    /// The summary table as Markdown.
    pub markdown: String,
    pub files: Vec<PathBuf>,
    pub out: PathBuf,
}

/// Parses `42..51` (inclusive, as the paper writes it), `42..=51`, `42,43,44` or `42`.
pub fn parse_seeds(s: &str) -> Result<Vec<u64>, FgdError> {
    let bad = || FgdError::BadSeeds(s.to_string());
    let t = s.trim();
    if let Some((a, b)) = t.split_once("..") {
        let b = b.strip_prefix('=').unwrap_or(b);
        let a: u64 = a.trim().parse().map_err(|_| bad())?;
        let b: u64 = b.trim().parse().map_err(|_| bad())?;
        if b < a {
            return Err(bad());
        }
        return Ok((a..=b).collect());
    }
    t.split(',')
        .map(|x| x.trim().parse::<u64>().map_err(|_| bad()))
        .collect()
}

/// The traces folder: the given one, else `traces/alibaba-gpu-v2023-openb` under the working
/// directory, else under this source tree.
pub fn traces_dir(given: Option<&Path>) -> PathBuf {
    if let Some(p) = given {
        return p.to_path_buf();
    }
    let local = PathBuf::from(DEFAULT_TRACES);
    if local.is_dir() {
        return local;
    }
    let tree = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(DEFAULT_TRACES);
    if tree.is_dir() {
        tree
    } else {
        local
    }
}

/// Runs the matrix and writes every output into `opts.out`.
pub fn run_fgd(opts: FgdOptions) -> Result<FgdSummary, FgdError> {
    let start = Instant::now();
    let workloads: Vec<String> = if opts.workloads.is_empty() {
        PAPER_WORKLOADS.iter().map(|s| s.to_string()).collect()
    } else {
        opts.workloads.clone()
    };
    let mut policies: Vec<Policy> = if opts.policies.is_empty() {
        Policy::ALL.to_vec()
    } else {
        opts.policies
            .iter()
            .map(|p| Policy::parse(p))
            .collect::<Result<_, _>>()?
    };
    policies.dedup();
    let seeds: Vec<u64> = if opts.seeds.is_empty() {
        PAPER_SEEDS.collect()
    } else {
        opts.seeds.clone()
    };
    let dir = traces_dir(opts.traces.as_deref());
    let pool = {
        let mut b = rayon::ThreadPoolBuilder::new();
        if let Some(t) = opts.threads {
            if t == 0 {
                return Err(FgdError::Invalid("threads must be at least 1".into()));
            }
            b = b.num_threads(t);
        }
        b.build()
            .map_err(|e| FgdError::Invalid(format!("thread pool: {e}")))?
    };
    let outcomes = pool.install(|| {
        run_matrix(
            &dir,
            &workloads,
            &policies,
            &seeds,
            RunOptions {
                max_pods: opts.max_pods,
                tie_break: opts.tie_break,
            },
            opts.progress,
        )
    })?;
    std::fs::create_dir_all(&opts.out).map_err(|e| FgdError::io(&opts.out, e))?;
    let mut files = Vec::new();
    files.extend(write_outputs(
        &opts.out,
        &outcomes,
        &workloads,
        &policies,
        opts.tie_break,
    )?);
    if opts.plots {
        files.extend(crate::plot::write_plots(
            &opts.out.join("plots"),
            &outcomes,
            &workloads,
            &policies,
        )?);
    }
    let unallocated = unallocated_table(&outcomes, &workloads, &policies);
    let markdown = summary_markdown(
        &unallocated,
        &workloads,
        &policies,
        seeds.len(),
        opts.tie_break,
    );
    let md_path = opts.out.join("summary.md");
    write(&md_path, &markdown)?;
    files.push(md_path);
    Ok(FgdSummary {
        workloads,
        policies,
        seeds,
        runs: outcomes.len(),
        wall_seconds: start.elapsed().as_secs_f64(),
        unallocated_at_100: unallocated,
        markdown,
        files,
        out: opts.out,
    })
}

/// Loads the workloads and runs every (workload, policy, seed) on the current rayon pool.
/// Results come back in matrix order.
pub fn run_matrix(
    dir: &Path,
    workloads: &[String],
    policies: &[Policy],
    seeds: &[u64],
    run: RunOptions,
    progress: bool,
) -> Result<Vec<RunOutcome>, FgdError> {
    let loaded: Vec<Arc<Workload>> = workloads
        .par_iter()
        .map(|w| load_workload(dir, w).map(Arc::new))
        .collect::<Result<_, _>>()?;
    let reg = registry();
    let fws = policies
        .iter()
        .map(|p| p.framework(&reg, run.tie_break))
        .collect::<Result<Vec<_>, _>>()?;
    let mut specs = Vec::new();
    for (wi, _) in loaded.iter().enumerate() {
        for (pi, _) in policies.iter().enumerate() {
            for &s in seeds {
                specs.push((wi, pi, s));
            }
        }
    }
    let done = AtomicUsize::new(0);
    let total = specs.len();
    specs
        .par_iter()
        .map(|&(wi, pi, seed)| {
            let t = Instant::now();
            let r = run_one(&loaded[wi], policies[pi], seed, &fws[pi], run);
            if progress {
                let k = done.fetch_add(1, Ordering::Relaxed) + 1;
                if let Ok(o) = &r {
                    eprintln!(
                        "[{k}/{total}] {} {} seed {}: {} pods, {} failed, {:.1} s",
                        o.workload,
                        o.policy.name(),
                        o.seed,
                        o.pods,
                        o.failed,
                        t.elapsed().as_secs_f64()
                    );
                }
            }
            r
        })
        .collect()
}

fn write(path: &Path, text: &str) -> Result<(), FgdError> {
    std::fs::write(path, text).map_err(|e| FgdError::io(path, e))
}

fn cell(v: Option<f64>) -> String {
    match v {
        Some(x) => format!("{x:.2}"),
        None => String::new(),
    }
}

/// One curve CSV: `workload,policy,seed,0,1,...,130`.
pub fn curves_csv(
    outcomes: &[RunOutcome],
    pick: impl Fn(&RunOutcome) -> &Vec<Option<f64>>,
) -> String {
    let mut s = String::from("workload,policy,seed");
    for k in 0..=MAX_BUCKET {
        let _ = write!(s, ",{k}");
    }
    s.push('\n');
    for o in outcomes {
        let _ = write!(s, "{},{},{}", o.workload, o.policy.name(), o.seed);
        for v in pick(o) {
            s.push(',');
            s.push_str(&cell(*v));
        }
        s.push('\n');
    }
    s
}

/// Writes the three curve CSVs, the per-run table, the summary CSV and the scheduler
/// configurations used.
pub fn write_outputs(
    out: &Path,
    outcomes: &[RunOutcome],
    workloads: &[String],
    policies: &[Policy],
    tie_break: TieBreak,
) -> Result<Vec<PathBuf>, FgdError> {
    let mut files = Vec::new();
    let mut put = |name: &str, text: String| -> Result<(), FgdError> {
        let p = out.join(name);
        write(&p, &text)?;
        files.push(p);
        Ok(())
    };
    put(
        "allocation.csv",
        curves_csv(outcomes, |o| &o.curves.allocation),
    )?;
    put(
        "fragmentation.csv",
        curves_csv(outcomes, |o| &o.curves.fragmentation),
    )?;
    put(
        "fragmentation_ratio.csv",
        curves_csv(outcomes, |o| &o.curves.fragmentation_ratio),
    )?;
    let mut runs = String::from(
        "workload,policy,seed,pods,scheduled,failed,failed_gpu_milli,failed_cpu_only,failed_share,failed_1gpu,failed_2gpu,failed_4gpu,failed_8gpu,failed_other,first_failure_arrived_pct,mean_top_ties,arrived_gpu_milli,capacity_gpu_milli,allocated_gpu_milli,unallocated_pct_at_100\n",
    );
    for o in outcomes {
        let kinds: Vec<String> = o.failed_by_kind.iter().map(|k| k.to_string()).collect();
        let _ = writeln!(
            runs,
            "{},{},{},{},{},{},{},{},{},{:.2},{},{},{},{}",
            o.workload,
            o.policy.name(),
            o.seed,
            o.pods,
            o.scheduled,
            o.failed,
            o.failed_milli,
            kinds.join(","),
            cell(o.first_failure_pct),
            o.mean_top_ties,
            o.arrived_milli,
            o.capacity_milli,
            o.allocated_milli,
            cell(o.curves.allocation[100].map(|a| 100.0 - a)),
        );
    }
    put("runs.csv", runs)?;
    let table = unallocated_table(outcomes, workloads, policies);
    let mut sum = String::from(
        "workload,policy,runs,unallocated_pct_at_100_mean,unallocated_pct_at_100_sd\n",
    );
    for (wi, w) in workloads.iter().enumerate() {
        for (pi, p) in policies.iter().enumerate() {
            match table[wi][pi] {
                Some(m) => {
                    let _ = writeln!(sum, "{w},{},{},{:.2},{:.2}", p.name(), m.n, m.mean, m.sd);
                }
                None => {
                    let _ = writeln!(sum, "{w},{},0,,", p.name());
                }
            }
        }
    }
    put("summary.csv", sum)?;
    let cfg_dir = out.join("scheduler-config");
    std::fs::create_dir_all(&cfg_dir).map_err(|e| FgdError::io(&cfg_dir, e))?;
    for p in policies {
        let path = cfg_dir.join(format!("{}.yaml", p.name()));
        write(&path, &p.scheduler_config(tie_break))?;
        files.push(path);
    }
    Ok(files)
}

/// Unallocated GPU % (100 − allocation) at 100% arrived demand, per workload and policy, over
/// the seeds.
pub fn unallocated_table(
    outcomes: &[RunOutcome],
    workloads: &[String],
    policies: &[Policy],
) -> Vec<Vec<Option<MeanSd>>> {
    workloads
        .iter()
        .map(|w| {
            policies
                .iter()
                .map(|p| {
                    let v: Vec<f64> = outcomes
                        .iter()
                        .filter(|o| &o.workload == w && o.policy == *p)
                        .filter_map(|o| o.curves.allocation[100].map(|a| 100.0 - a))
                        .collect();
                    MeanSd::of(&v)
                })
                .collect()
        })
        .collect()
}

/// The summary table in Markdown: workloads × policies, `mean ± sd`.
pub fn summary_markdown(
    table: &[Vec<Option<MeanSd>>],
    workloads: &[String],
    policies: &[Policy],
    seeds: usize,
    tie_break: TieBreak,
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Unallocated GPU (% of cluster GPU capacity) when arrived GPU demand reached 100% of \
         capacity; mean ± population sd over {seeds} seed(s); ties between equally scored \
         nodes broken by {}. Lower is better; the best mean of each row is in bold.",
        match tie_break {
            TieBreak::NodeName => "smallest node name (the artifact's scheduler)",
            TieBreak::Random => "a seeded random draw (upstream kube-scheduler)",
        }
    );
    s.push('\n');
    s.push_str("| workload |");
    for p in policies {
        let _ = write!(s, " {} |", p.name());
    }
    s.push_str("\n|---|");
    for _ in policies {
        s.push_str("---:|");
    }
    s.push('\n');
    for (wi, w) in workloads.iter().enumerate() {
        let _ = write!(s, "| {w} |");
        let best = table[wi]
            .iter()
            .filter_map(|c| c.map(|m| m.mean))
            .fold(f64::INFINITY, f64::min);
        for c in &table[wi] {
            match c {
                Some(m) if format!("{:.2}", m.mean) == format!("{best:.2}") => {
                    let _ = write!(s, " **{:.2} ± {:.2}** |", m.mean, m.sd);
                }
                Some(m) => {
                    let _ = write!(s, " {:.2} ± {:.2} |", m.mean, m.sd);
                }
                None => s.push_str(" – |"),
            }
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_parse() {
        assert_eq!(
            parse_seeds("42..51").unwrap(),
            (42..=51).collect::<Vec<_>>()
        );
        assert_eq!(parse_seeds("42..=44").unwrap(), vec![42, 43, 44]);
        assert_eq!(parse_seeds("7, 9").unwrap(), vec![7, 9]);
        assert_eq!(parse_seeds("5").unwrap(), vec![5]);
        assert!(parse_seeds("51..42").is_err());
        assert!(parse_seeds("x").is_err());
    }

    #[test]
    fn population_sd() {
        let m = MeanSd::of(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]).unwrap();
        assert_eq!(m.mean, 5.0);
        assert_eq!(m.sd, 2.0);
        assert!(MeanSd::of(&[]).is_none());
    }
}
