//! `ksim bench WORKLOAD.json [--repeat N] [--seed S] [--scheduler-config FILE] [--json]`: times
//! the scheduling loop over a workload (`{"nodes": [...], "pods": [...]}`) and prints pods/s,
//! seconds, peak memory and the placement digest; with `--repeat` the median run is reported
//! and every run must reach the same digest.
//!
//! `ksim bench --replay --nodes N --pods P`: whole-run throughput of the engine on a streamed
//! synthetic trace (events/s, seconds, peak memory).
//!
//! `ksim bench --scaling --out DIR [--repeat N]`: the scaling curve (pods/s against node count
//! and pods per node, every workload kind) as scaling.csv, scaling.md and scaling.svg/png.
//!
//! `ksim bench --suite scheduler-perf [--quick] [--only TEXT] [--repeat N] [--out DIR]`:
//! upstream's scheduler_perf workloads (see `ksim_bench::suite`), pods/s on the measured pods
//! beside upstream's CI threshold; writes suite.csv and suite.md into DIR (default
//! results/suite). `--write-workloads DIR` writes each workload as a `ksim bench` file (nodes
//! and every pod pending, init pods first) instead of running it.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context};
use clap::Args;
use ksim_bench::replay::ReplaySpec;
use ksim_bench::{Kind, Options};

#[derive(Args)]
pub struct BenchArgs {
    /// Workload file (`{"nodes": [...], "pods": [...]}`, e.g. from `ksim gen bench`).
    pub workload: Option<PathBuf>,
    /// Run the loop this many times (fresh cluster each time) and report the median.
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
    /// Seed of the tie-break RNG.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// A KubeSchedulerConfiguration file (default: the default profile).
    #[arg(long)]
    pub scheduler_config: Option<PathBuf>,
    /// Print one JSON object per run and for the median instead of text.
    #[arg(long)]
    pub json: bool,
    /// Instead of the scheduling loop, replay a streamed synthetic trace through the engine.
    #[arg(long)]
    pub replay: bool,
    /// Replay: number of nodes.
    #[arg(long, default_value_t = 10_000)]
    pub nodes: usize,
    /// Replay: number of pods created.
    #[arg(long, default_value_t = 1_000_000)]
    pub pods: usize,
    /// Instead of one workload, measure the scaling curve (1k/5k/15k nodes with 10,000 pods;
    /// 1, 2, 5, 10 pods per node on 5,000 nodes; every kind) and write it into --out.
    #[arg(long)]
    pub scaling: bool,
    /// Scaling: the output directory.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Replay: workload kind of the pods (plain, mixed, affinity, node-affinity).
    #[arg(long, default_value = "plain")]
    pub kind: String,
    /// Run a benchmark suite instead: `scheduler-perf` (upstream's scheduler_perf workloads).
    #[arg(long)]
    pub suite: Option<String>,
    /// Suite: small sizes (1/50 of upstream's), to check that it runs.
    #[arg(long)]
    pub quick: bool,
    /// Suite: only the workloads whose name contains this text (several texts separated by
    /// commas: any of them, e.g. `SchedulingBasic,ResourceClaim`).
    #[arg(long)]
    pub only: Option<String>,
    /// Suite: write each workload as a `ksim bench` workload file into this directory instead
    /// of running the suite.
    #[arg(long)]
    pub write_workloads: Option<PathBuf>,
    #[command(flatten)]
    pub version: super::version_args::VersionArgs,
}

fn mib(b: Option<u64>) -> String {
    b.map(|b| format!("{:.1} MiB", b as f64 / (1024.0 * 1024.0)))
        .unwrap_or_else(|| "n/a".into())
}

pub fn run(a: BenchArgs) -> anyhow::Result<ExitCode> {
    if a.replay {
        return replay(&a);
    }
    if a.scaling {
        return scaling(&a);
    }
    if let Some(suite) = &a.suite {
        return run_suite(&a, suite);
    }
    let Some(path) = &a.workload else {
        bail!("give a workload file (see `ksim gen bench`), or --replay");
    };
    if a.repeat == 0 {
        bail!("--repeat must be at least 1");
    }
    let t0 = Instant::now();
    let w = ksim_bench::load(path)?;
    let load_secs = t0.elapsed().as_secs_f64();
    let mut opts = Options {
        seed: a.seed,
        gates: a.version.gates()?,
        ..Default::default()
    };
    if let Some(c) = &a.scheduler_config {
        opts.config = ksim_trace::scenario::load_scheduler_config(c)
            .with_context(|| format!("reading {}", c.display()))?;
    }
    if !a.json {
        println!(
            "workload {}: {} nodes, {} pods (loaded in {:.2} s)",
            path.display(),
            w.nodes.len(),
            w.pods.len(),
            load_secs
        );
    }
    let mut runs = Vec::with_capacity(a.repeat);
    for i in 0..a.repeat {
        let r = ksim_bench::run_once(&w, &opts)?;
        if a.json {
            println!(
                "{}",
                serde_json::json!({
                    "run": i + 1, "pods": r.pods, "scheduled": r.scheduled,
                    "attempts": r.attempts, "seconds": r.secs, "podsPerSecond": r.pods_per_sec(),
                    "digest": format!("{:016x}", r.digest),
                })
            );
        } else {
            println!(
                "run {}: {:.0} pods/s, {:.3} s, {} scheduled / {} pods, {} attempts, digest {:016x}",
                i + 1,
                r.pods_per_sec(),
                r.secs,
                r.scheduled,
                r.pods,
                r.attempts,
                r.digest
            );
        }
        runs.push(r);
    }
    if runs.iter().any(|r| r.digest != runs[0].digest) {
        eprintln!("error: runs reached different placements (digests differ)");
        return Ok(ExitCode::from(1));
    }
    runs.sort_by(|x, y| x.secs.total_cmp(&y.secs));
    let m = &runs[runs.len() / 2];
    let peak = ksim_bench::peak_memory_bytes();
    if a.json {
        println!(
            "{}",
            serde_json::json!({
                "median": true, "runs": runs.len(), "pods": m.pods, "scheduled": m.scheduled,
                "seconds": m.secs, "podsPerSecond": m.pods_per_sec(),
                "peakMemoryBytes": peak, "digest": format!("{:016x}", m.digest),
            })
        );
    } else {
        println!(
            "median of {}: {:.0} pods/s, {:.3} s total, peak memory {}, digest {:016x}",
            runs.len(),
            m.pods_per_sec(),
            m.secs,
            mib(peak),
            m.digest
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn run_suite(a: &BenchArgs, suite: &str) -> anyhow::Result<ExitCode> {
    if suite != "scheduler-perf" {
        bail!("unknown suite {suite:?} (scheduler-perf)");
    }
    if a.repeat == 0 {
        bail!("--repeat must be at least 1");
    }
    let mut opts = Options {
        seed: a.seed,
        gates: a.version.gates()?,
        ..Default::default()
    };
    if let Some(c) = &a.scheduler_config {
        opts.config = ksim_trace::scenario::load_scheduler_config(c)
            .with_context(|| format!("reading {}", c.display()))?;
    }
    let workloads: Vec<_> = ksim_bench::suite::workloads(a.quick)
        .into_iter()
        .filter(|w| {
            a.only
                .as_deref()
                .is_none_or(|o| o.split(',').any(|t| w.name.contains(t)))
        })
        .collect();
    if workloads.is_empty() {
        bail!(
            "--only {:?} selects no workload",
            a.only.as_deref().unwrap_or("")
        );
    }
    if let Some(dir) = &a.write_workloads {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        for w in &workloads {
            if w.dra.is_some() {
                // A workload file holds nodes and pods only: no slices, classes or claims.
                eprintln!(
                    "{}: not written (its ResourceSlices, DeviceClass and claims have no place in a workload file)",
                    w.name
                );
                continue;
            }
            let file = dir.join(format!("{}.json", w.name.replace('/', "_")));
            ksim_bench::save(&ksim_bench::suite::as_workload(w), &file)?;
            println!("{}", file.display());
        }
        return Ok(ExitCode::SUCCESS);
    }
    let out = a
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("results/suite"));
    let t = Instant::now();
    let mut results = Vec::new();
    for w in &workloads {
        let mut runs = Vec::with_capacity(a.repeat);
        for _ in 0..a.repeat {
            runs.push(ksim_bench::suite::run_workload(w, &opts)?);
        }
        if runs.iter().any(|r| r.digest != runs[0].digest) {
            eprintln!(
                "error: {}: runs reached different placements (digests differ)",
                w.name
            );
            return Ok(ExitCode::from(1));
        }
        runs.sort_by(|x, y| x.secs.total_cmp(&y.secs));
        let m = runs.swap_remove(runs.len() / 2);
        let threshold = m
            .threshold
            .map(|t| format!("{t:.0} pods/s"))
            .unwrap_or_else(|| "none".into());
        println!(
            "{:<56} {:>9.0} pods/s ({:.2} s, {}/{} measured pods placed)  upstream CI threshold: {} ({}/{})",
            m.name,
            m.pods_per_sec(),
            m.secs,
            m.scheduled,
            m.measured_pods,
            threshold,
            ksim_bench::suite::UPSTREAM_DIR,
            m.source
        );
        results.push(m);
    }
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let csv = out.join("suite.csv");
    std::fs::write(&csv, ksim_bench::suite::csv(&results))
        .with_context(|| format!("writing {}", csv.display()))?;
    let md = out.join("suite.md");
    let table = ksim_bench::suite::markdown(&results);
    std::fs::write(&md, &table).with_context(|| format!("writing {}", md.display()))?;
    print!("{table}");
    println!(
        "{} workloads (median of {}) in {:.0} s; suite.csv and suite.md in {}. Upstream's thresholds are measured with an API server and informers in the loop; ksim's loop has neither.",
        results.len(),
        a.repeat,
        t.elapsed().as_secs_f64(),
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn scaling(a: &BenchArgs) -> anyhow::Result<ExitCode> {
    let Some(out) = &a.out else {
        bail!("--scaling needs --out DIR");
    };
    if a.repeat == 0 {
        bail!("--repeat must be at least 1");
    }
    let spec = ksim_bench::scaling::ScalingSpec {
        repeat: a.repeat,
        seed: a.seed,
        gates: a.version.gates()?,
        ..Default::default()
    };
    let t = Instant::now();
    let points = ksim_bench::scaling::run(&spec, |p| {
        eprintln!(
            "{:<13} {:<13} {:>6} nodes {:>6} pods: {:>8.0} pods/s ({:.2} s)",
            p.curve,
            p.kind.as_str(),
            p.nodes,
            p.pods,
            p.pods_per_sec,
            p.secs
        )
    })?;
    ksim_bench::scaling::write(&points, out)?;
    print!("{}", ksim_bench::scaling::markdown(&points));
    println!(
        "{} points in {:.0} s; scaling.csv, scaling.md, scaling.svg, scaling.png in {}",
        points.len(),
        t.elapsed().as_secs_f64(),
        out.display()
    );
    Ok(ExitCode::SUCCESS)
}

fn replay(a: &BenchArgs) -> anyhow::Result<ExitCode> {
    let kind = Kind::parse(&a.kind)?;
    let mut spec = ReplaySpec::new(kind, a.nodes, a.pods, a.seed);
    spec.gates = a.version.gates()?;
    let r = ksim_bench::replay::run(&spec)?;
    let peak = ksim_bench::peak_memory_bytes();
    if a.json {
        println!(
            "{}",
            serde_json::json!({
                "nodes": a.nodes, "pods": a.pods, "events": r.events, "seconds": r.secs,
                "eventsPerSecond": r.events_per_sec(), "scheduled": r.scheduled,
                "maxLivePods": r.max_live_pods, "peakMemoryBytes": peak,
                "bindDigest": format!("{:016x}", r.bind_digest),
            })
        );
    } else {
        println!(
            "replay {} nodes, {} pods ({}): {} events in {:.2} s = {:.0} events/s; {} scheduled, at most {} pods live; peak memory {}; bindings digest {:016x}",
            a.nodes,
            a.pods,
            kind.as_str(),
            r.events,
            r.secs,
            r.events_per_sec(),
            r.scheduled,
            r.max_live_pods,
            mib(peak),
            r.bind_digest
        );
    }
    Ok(ExitCode::SUCCESS)
}
