//! `ksim run SCENARIO --fork-at TIME --variant FILE...`: what-if forks.
//!
//! The scenario runs once up to TIME (every event and cycle of the instants up to TIME, as
//! `--dump-at` sees the cluster); the simulation is then copied in memory
//! ([`ksim_engine::Simulation::fork`]: clock, heap, cluster, queue, controllers, RNG states,
//! remaining input), once for the base branch and once per variant. Each copy continues to the
//! end on its own; a variant first changes its copy at TIME. The records of the shared prefix
//! were kept, and are replayed into every branch's recorder before its own, so each branch's
//! outputs are those of a whole run: the base branch's are byte for byte those of the run
//! without `--fork-at`, and so are an empty variant's.
//!
//! Layout: `OUT/` holds the base branch (a complete run, as without `--fork-at`),
//! `OUT/branches/<variant>/` each variant's run (with its `variant.yaml`), and `OUT/compare/`
//! the `ksim compare` of the base and the branches (`compare.csv`, `compare.txt`, plots). The
//! whole folder is written beside its target and swapped in when complete.
//!
//! # Variant files (YAML or JSON, one document)
//!
//! ```yaml
//! name: one-more-node        # the branch's folder name (default: the file name's stem)
//! schedulerConfig: most-allocated-config.yaml   # a KubeSchedulerConfiguration file (relative
//!                            # to this file), or the configuration inline as a mapping
//! addNodes:                  # Node objects, added at TIME
//!   - metadata: {name: extra-1, labels: {topology.kubernetes.io/zone: a}}
//!     status: {allocatable: {cpu: "8", memory: 32Gi, pods: "110"}}
//! addPools:                  # as the scenario's cluster.pools: nodes <name>-0 .. <name>-(count-1)
//!   - {name: burst, count: 2, template: {status: {allocatable: {cpu: "4", memory: 16Gi}}}}
//! removeNodes:               # removed at TIME, as a trace's RemoveNode
//!   names: [zone-b-0]
//!   selector: topology.kubernetes.io/zone=b     # or a LabelSelector mapping
//! scale:                     # KIND/NAME or KIND/NAMESPACE/NAME: replicas, or a factor
//!   deployment/web: 6        # (Deployment, ReplicaSet, StatefulSet); a later count from
//!                            # the trace replaces it
//!   statefulset/db: x1.5     # factor: replicas × 1.5, rounded up, and every later count
//!                            # the trace gives it × 1.5 too
//! objects:                   # Kubernetes objects applied at TIME as `kubectl apply` does:
//!   - apiVersion: policy/v1  # a trace's UpdateObject when the object exists then, its
//!     kind: PodDisruptionBudget   # CreateObject otherwise (a changed Deployment template
//!     metadata: {name: web}  # rolls out as the Deployment controller rolls it)
//!     spec: {minAvailable: 10, selector: {matchLabels: {app: web}}}
//! ```
//!
//! Every key is optional; an empty file is the empty variant. Removals come first, then
//! additions, then objects, then scaling, all at TIME after what the trunk already applied at
//! TIME; a node named twice, an object given twice (or also scaled), or a name, selector or
//! controller that matches nothing at TIME, is an error naming the file, line and field.

use std::path::Path;

use anyhow::{anyhow, bail, Context};
use ksim_engine::explain::ExplainSelector;
use ksim_engine::{Observer, Record, SimTime, Simulation};
use ksim_trace::ScenarioPlan;
use rayon::prelude::*;

use crate::progress::VirtualTimeProgress;

mod variant;

use variant::apply_variant;
pub use variant::{load_variant, Variant};

/// What a forked run needs besides the plan.
pub struct ForkRun<'a> {
    pub at: SimTime,
    pub variants: &'a [Variant],
    pub event_log: bool,
    pub explain: Option<ExplainSelector>,
    pub dump_at: Option<SimTime>,
    /// Files written into every branch's folder (the recorded scenario and configuration).
    pub extra: &'a [(&'a str, &'a str)],
    /// Do not print the comparison table.
    pub quiet: bool,
    /// The Kubernetes version the run behaves as (recorded in every branch's summary).
    pub version: ksim_api::version::KubernetesVersion,
}

/// The outputs of one branch: the shared prefix's records, then the branch's own.
struct BranchOut {
    recorder: ksim_report::Recorder,
    log: Option<ksim_report::EventLogWriter<std::io::BufWriter<std::fs::File>>>,
}

impl BranchOut {
    fn create(
        dir: &Path,
        event_log: bool,
        extra: &[(&str, &str)],
        version: ksim_api::version::KubernetesVersion,
    ) -> anyhow::Result<BranchOut> {
        for (name, text) in extra {
            let path = dir.join(name);
            std::fs::write(&path, text).with_context(|| path.display().to_string())?;
        }
        let mut recorder = ksim_report::Recorder::to_dir(dir)?;
        recorder.set_kubernetes_version(version.as_str());
        let log = if event_log {
            Some(ksim_report::EventLogWriter::create(
                &dir.join("events.jsonl"),
            )?)
        } else {
            None
        };
        Ok(BranchOut { recorder, log })
    }

    fn record(&mut self, r: &Record) {
        Observer::record(&mut self.recorder, r);
        if let Some(l) = self.log.as_mut() {
            Observer::record(l, r);
        }
    }
}

/// Runs `plan` to the fork instant, then the base branch into `out` and each variant into
/// `out/branches/<name>`, and compares them in `out/compare`. Returns the base's summary
/// and the branches' (name, summary).
pub fn run_forked(
    plan: ScenarioPlan,
    out: &Path,
    f: &ForkRun<'_>,
) -> anyhow::Result<(ksim_report::Summary, Vec<(String, ksim_report::Summary)>)> {
    let mut names = std::collections::BTreeSet::new();
    for v in f.variants {
        if v.name == "base" || !names.insert(v.name.clone()) {
            bail!(
                "{}: the branch name {:?} is taken (by the base branch or another variant): \
                 give the variant another `name:`",
                v.source,
                v.name
            );
        }
    }
    let staged = ksim_report::StagedDir::begin(out)?;
    let label = plan.name.clone();
    let horizon = plan.engine.horizon;
    let source = plan.source.clone();
    let mut sim = ksim_sweep::run::simulation_of(plan, f.explain.clone(), f.dump_at)
        .map_err(|e| anyhow!("{source}: {e}"))?;
    // The trunk: every record up to the fork instant is kept for the branches.
    let mut prefix: Vec<Record> = Vec::new();
    let mut progress = VirtualTimeProgress::new(&label, horizon);
    // An extender that cannot be reached is reported once per run: the trunk's here, each
    // branch's (a run of its own from the fork on) in `run_branch`.
    let warnings = sim.extender_warnings();
    let running = {
        let mut obs = |r: &Record| {
            for w in warnings.take() {
                eprintln!("warning: {source}: {w}");
            }
            progress.update(r.at());
            prefix.push(r.clone());
        };
        sim.run_to(f.at, &mut obs)
            .map_err(|e| anyhow!("{source}: {e}"))?
    };
    for w in warnings.take() {
        eprintln!("warning: {source}: {w}");
    }
    progress.finish();
    if !running {
        bail!(
            "--fork-at {}: the run ended at {} before that instant (nothing left could change); \
             fork earlier or give a horizon (--until)",
            f.at,
            sim.now()
        );
    }
    let branches = sim
        .fork(1 + f.variants.len())
        .map_err(|e| anyhow!("{source}: {e}"))?;
    // Every variant is applied (and checked) before any branch runs.
    let mut todo = Vec::with_capacity(branches.len());
    for (i, mut b) in branches.into_iter().enumerate() {
        let (dir, name) = if i == 0 {
            (staged.path().to_path_buf(), "base".to_string())
        } else {
            let v = &f.variants[i - 1];
            let d = staged.path().join("branches").join(&v.name);
            std::fs::create_dir_all(&d).with_context(|| d.display().to_string())?;
            apply_variant(v, &mut b, f.at)?;
            let p = d.join("variant.yaml");
            std::fs::write(&p, &v.text).with_context(|| p.display().to_string())?;
            if let Some(c) = &v.scheduler {
                // What the branch ran from the fork on (scheduler-config.yaml: before it).
                let p = d.join("variant-scheduler-config.yaml");
                let text = format!(
                    "# The effective KubeSchedulerConfiguration of this branch from the fork \
                     instant on, upstream's defaults applied.\n{}",
                    serde_saphyr::to_string(&super::run::effective_scheduler_config(c))?
                );
                std::fs::write(&p, text).with_context(|| p.display().to_string())?;
            }
            (d, v.name.clone())
        };
        todo.push((dir, name, b));
    }
    // The branches run in parallel (one simulation per thread, each writing its own folder:
    // nothing in any output depends on it); one bar counts the finished branches.
    let bar = crate::progress::RunsProgress::new(&format!("{label} branches"), todo.len() as u64);
    let results: Vec<anyhow::Result<ksim_report::Summary>> = todo
        .into_par_iter()
        .map(|(dir, name, b)| {
            let s = run_branch(b, &dir, &name, &prefix, f)
                .map_err(|e| anyhow!("{source} (branch {name}): {e:#}"));
            ksim_sweep::SweepProgress::run_done(&bar, &name);
            s
        })
        .collect();
    bar.finish();
    let mut results = results.into_iter();
    let base_summary = results.next().ok_or_else(|| anyhow!("no base branch"))??;
    let mut summaries = Vec::new();
    let mut dirs = vec![staged.path().to_path_buf()];
    for (v, r) in f.variants.iter().zip(results) {
        summaries.push((v.name.clone(), r?));
        dirs.push(staged.path().join("branches").join(&v.name));
    }
    // The comparison of the branches, base first, as `ksim compare` makes it.
    let mut table = ksim_sweep::RunTable::from_dirs(&dirs)?;
    for (row, name) in table
        .rows
        .iter_mut()
        .zip(std::iter::once("base".to_string()).chain(f.variants.iter().map(|v| v.name.clone())))
    {
        row.id = name;
    }
    let cmp = staged.path().join("compare");
    std::fs::create_dir_all(&cmp).with_context(|| cmp.display().to_string())?;
    table.write_csv(&cmp.join("compare.csv"))?;
    let txt = cmp.join("compare.txt");
    std::fs::write(&txt, table.terminal(true) + "\n").with_context(|| txt.display().to_string())?;
    ksim_sweep::plots::write_table_plots(&table, &cmp)?;
    if !f.quiet {
        println!("{}", table.terminal(true));
    }
    staged.commit()?;
    Ok((base_summary, summaries))
}

/// Continues one branch to its end and writes its outputs into `dir`: the shared prefix's
/// records first, then its own.
fn run_branch(
    mut b: Simulation,
    dir: &Path,
    name: &str,
    prefix: &[Record],
    f: &ForkRun<'_>,
) -> anyhow::Result<ksim_report::Summary> {
    let mut o = BranchOut::create(dir, f.event_log, f.extra, f.version)?;
    for r in prefix {
        o.record(r);
    }
    let warnings = b.extender_warnings();
    let warn = || {
        for w in warnings.take() {
            eprintln!("warning: branch {name}: {w}");
        }
    };
    b.run(&mut |r: &Record| {
        warn();
        o.record(r)
    })?;
    warn();
    if let Some(l) = o.log.take() {
        l.finish()?;
    }
    if f.explain.is_some() {
        let path = dir.join("explain.jsonl");
        let mut text = String::new();
        for line in b.take_explain() {
            text.push_str(&line);
            text.push('\n');
        }
        std::fs::write(&path, text).with_context(|| path.display().to_string())?;
    }
    if let Some(dump) = b.take_dump() {
        let path = dir.join("cluster-dump.json");
        let text = serde_json::to_string_pretty(&dump).unwrap_or_default() + "\n";
        std::fs::write(&path, text).with_context(|| path.display().to_string())?;
    }
    Ok(o.recorder.write_outputs(dir)?)
}
