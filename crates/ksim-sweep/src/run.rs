//! Running plans: one run ([`run_plan`], shared with `ksim run`), and a sweep's runs in parallel
//! ([`run_sweep`]) with rayon. Each run is one single-threaded simulation writing its own
//! directory, so running in parallel changes nothing in any output.

use std::path::{Path, PathBuf};

use ksim_engine::{Observer, Record, SimTime, Simulation};
use ksim_report::Summary;
use ksim_scheduler::framework::Registry;
use ksim_trace::ScenarioPlan;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::error::SweepError;
use crate::spec::{RunPoint, Sweep};

/// Runs a plan and writes every output of a run (pods.csv, placements.csv, utilization.csv,
/// summary.json, plots, report.html; events.jsonl with `event_log`) into `out`. `progress` is
/// called with the virtual time of each record.
pub fn run_plan(
    plan: ScenarioPlan,
    out: &Path,
    event_log: bool,
    progress: &mut dyn FnMut(SimTime),
) -> Result<Summary, SweepError> {
    run_plan_with(plan, out, event_log, progress, &[])
}

/// [`run_plan`], also writing `extra` files (name, content) into the run directory before
/// the run (a sweep's `run.json`), inside the same atomic swap.
pub fn run_plan_with(
    plan: ScenarioPlan,
    out: &Path,
    event_log: bool,
    progress: &mut dyn FnMut(SimTime),
    extra: &[(&str, &str)],
) -> Result<Summary, SweepError> {
    run_plan_explain(plan, out, event_log, progress, extra, None, None)
}

/// The simulation of a scenario plan, ready to run: its events seeded, initial nodes with only
/// `generateName` named first from the seed's stream (before the simulation inserts the nodes
/// in name order), `--explain` and `--dump-at` set, the events added as its source. Every run
/// path builds it here, so a fork's trunk is the simulation a plain run would be.
pub fn simulation_of(
    plan: ScenarioPlan,
    explain: Option<ksim_engine::explain::ExplainSelector>,
    dump_at: Option<SimTime>,
) -> Result<Simulation, ksim_engine::SimError> {
    let mut events = plan.events;
    events.set_seed(plan.engine.seed);
    let mut nodes = plan.nodes;
    events.name_initial_nodes(&mut nodes);
    let mut sim = Simulation::new(
        plan.engine,
        &plan.scheduler,
        &Registry::in_tree_gates(&plan.gates),
        nodes,
        plan.objects,
    )?;
    if let Some(sel) = explain {
        sim.set_explain(sel);
    }
    if let Some(t) = dump_at {
        sim.set_dump_at(t);
    }
    // Read (parsed, generated) on a second thread ahead of the engine: the same events, the
    // same positions and errors in the same order (`Prefetch`), so outputs are unchanged.
    sim.add_source(Box::new(ksim_engine::Prefetch::new(Box::new(events))))?;
    Ok(sim)
}

/// [`run_plan_with`], also recording the selected pods' attempts into `explain.jsonl`, and
/// with `dump_at` the cluster at that instant into `cluster-dump.json`.
pub fn run_plan_explain(
    plan: ScenarioPlan,
    out: &Path,
    event_log: bool,
    progress: &mut dyn FnMut(SimTime),
    extra: &[(&str, &str)],
    explain: Option<ksim_engine::explain::ExplainSelector>,
    dump_at: Option<SimTime>,
) -> Result<Summary, SweepError> {
    let source = plan.source.clone();
    let run_err = |e: ksim_engine::SimError| sim_error(&source, e);
    // Written into a staging folder, swapped into place only when complete: an interrupted
    // run leaves the previous output as it was.
    let staged = ksim_report::StagedDir::begin(out)?;
    let explaining = explain.is_some();
    let version = plan.gates.version();
    let mut sim = simulation_of(plan, explain, dump_at).map_err(run_err)?;
    let dir = staged.path();
    for (name, text) in extra {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| SweepError::io(&path, e))?;
    }
    let mut recorder = ksim_report::Recorder::to_dir(dir)?;
    recorder.set_kubernetes_version(version.as_str());
    let mut log = if event_log {
        Some(ksim_report::EventLogWriter::create(
            &dir.join("events.jsonl"),
        )?)
    } else {
        None
    };
    // An extender that cannot be reached is reported as soon as it fails, once per run.
    let warnings = sim.extender_warnings();
    let warn = |source: &str| {
        for w in warnings.take() {
            eprintln!("warning: {source}: {w}");
        }
    };
    {
        let mut obs = |r: &Record| {
            warn(&source);
            progress(r.at());
            Observer::record(&mut recorder, r);
            if let Some(l) = log.as_mut() {
                Observer::record(l, r);
            }
        };
        sim.run(&mut obs).map_err(run_err)?;
    }
    warn(&source);
    if let Some(l) = log {
        l.finish()?;
    }
    if explaining {
        let path = dir.join("explain.jsonl");
        let mut text = String::new();
        for line in sim.take_explain() {
            text.push_str(&line);
            text.push('\n');
        }
        std::fs::write(&path, text).map_err(|e| SweepError::io(&path, e))?;
    }
    if let Some(dump) = sim.take_dump() {
        // `--dump-at`: the cluster at that instant, for `ksim import kube-dump`.
        let path = dir.join("cluster-dump.json");
        let text = serde_json::to_string_pretty(&dump).unwrap_or_default() + "\n";
        std::fs::write(&path, text).map_err(|e| SweepError::io(&path, e))?;
    }
    let summary = recorder.write_outputs(dir)?;
    staged.commit()?;
    Ok(summary)
}

/// A run's error, the file first: an input error already names its file and line, so it is
/// shown as it is; another (a limit, the scheduler configuration) is prefixed with the
/// scenario's name when the run has one (not for a run made of command-line flags alone).
fn sim_error(source: &str, e: ksim_engine::SimError) -> SweepError {
    use ksim_engine::SimError;
    let names_file = match &e {
        SimError::Source(_) => true,
        SimError::Input { origin, .. } => origin.is_some(),
        _ => false,
    };
    let m = e.to_string();
    if names_file || source == "<command line>" || source.is_empty() {
        SweepError::Failed(m)
    } else {
        SweepError::Failed(format!("{source}: {m}"))
    }
}

/// `--shard I/N`: the I-th (0-based) of N disjoint slices of a sweep. Run k belongs to shard
/// k mod N, so neighbouring (often similar-cost) runs spread over the shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Parses `I/N` with 0 ≤ I < N.
    pub fn parse(s: &str) -> Result<Shard, SweepError> {
        let bad = |m: &str| SweepError::input(format!("--shard {s:?}"), m.to_string());
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| bad("expected I/N, e.g. 0/4 (I counts from 0)"))?;
        let index: usize = i
            .trim()
            .parse()
            .map_err(|_| bad("I is not a whole number"))?;
        let count: usize = n
            .trim()
            .parse()
            .map_err(|_| bad("N is not a whole number"))?;
        if count == 0 {
            return Err(bad("N must be at least 1"));
        }
        if index >= count {
            return Err(bad("I must be less than N (I counts from 0)"));
        }
        Ok(Shard { index, count })
    }

    pub fn contains(&self, run_index: usize) -> bool {
        run_index % self.count == self.index
    }

    pub fn is_whole(&self) -> bool {
        self.count == 1
    }
}

/// One run in a manifest: its index, id and axis labels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ManifestRun {
    pub index: usize,
    pub id: String,
    pub values: Vec<String>,
}

/// What a sweep (or one shard of it) wrote: `sweep.json`, or `shard-I-of-N.json` for a shard.
/// `ksim merge` reads these to join shards.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub sweep: String,
    /// [`Sweep::fingerprint`]: shards of different sweeps are never joined.
    pub fingerprint: String,
    pub axes: Vec<String>,
    /// Numeric values of each axis' labels, when the axis is numeric (for plots).
    pub numeric_axes: Vec<bool>,
    /// How many runs the whole sweep has.
    pub total_runs: usize,
    pub shard: Shard,
    /// The runs of this shard, in index order.
    pub runs: Vec<ManifestRun>,
    /// SLO figures the sweep file asks for as extra `sweep.csv` columns (`columns:`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub columns: Vec<String>,
}

impl Manifest {
    pub fn file_name(shard: Shard) -> String {
        if shard.is_whole() {
            "sweep.json".into()
        } else {
            format!("shard-{}-of-{}.json", shard.index, shard.count)
        }
    }

    pub fn read(path: &Path) -> Result<Manifest, SweepError> {
        let text = std::fs::read_to_string(path).map_err(|e| SweepError::io(path, e))?;
        serde_json::from_str(&text)
            .map_err(|e| SweepError::input(path.display().to_string(), e.to_string()))
    }

    pub fn write(&self, dir: &Path) -> Result<PathBuf, SweepError> {
        let path = dir.join(Manifest::file_name(self.shard));
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        std::fs::write(&path, text).map_err(|e| SweepError::io(&path, e))?;
        Ok(path)
    }
}

/// What the caller sees while a sweep runs.
pub trait SweepProgress: Sync {
    /// A run finished (called from worker threads, in completion order).
    fn run_done(&self, id: &str);
}

impl SweepProgress for () {
    fn run_done(&self, _: &str) {}
}

/// Options of [`run_sweep`].
#[derive(Debug, Clone)]
pub struct SweepOptions {
    /// The sweep's directory: runs go to `<out>/runs/<run-id>/`.
    pub out: PathBuf,
    pub shard: Shard,
    pub event_log: bool,
}

/// Where the runs of a sweep directory live.
pub fn run_dir(out: &Path, id: &str) -> PathBuf {
    out.join("runs").join(id)
}

/// Builds the manifest of a sweep's shard.
pub fn manifest(sweep: &Sweep, shard: Shard) -> Manifest {
    let runs = sweep
        .points()
        .into_iter()
        .filter(|p| shard.contains(p.index))
        .map(|p| ManifestRun {
            index: p.index,
            values: sweep.labels(&p),
            id: p.id,
        })
        .collect();
    Manifest {
        sweep: sweep.name.clone(),
        fingerprint: sweep.fingerprint(),
        axes: sweep.axes.iter().map(|a| a.name.clone()).collect(),
        numeric_axes: sweep
            .axes
            .iter()
            .map(|a| a.values.iter().all(|v| v.number.is_some()))
            .collect(),
        total_runs: sweep.len(),
        shard,
        runs,
        columns: sweep.columns.clone(),
    }
}

/// Runs one point of a sweep into `dir`.
pub fn run_point(
    sweep: &Sweep,
    p: &RunPoint,
    dir: &Path,
    event_log: bool,
) -> Result<Summary, SweepError> {
    let rs = sweep.scenario_for(p);
    let source = format!("{} [{}]", sweep.base_source, p.id);
    let plan = rs
        .plan(&source, &sweep.base_dir)
        .map_err(|e| SweepError::Run {
            run: p.id.clone(),
            message: e.to_string(),
        })?;
    let cfg_text = serde_json::to_string_pretty(&serde_json::json!({
        "sweep": sweep.name,
        "run": p.id,
        "axes": sweep.axes.iter().map(|a| a.name.clone()).collect::<Vec<_>>(),
        "values": sweep.labels(p),
        "seed": plan.engine.seed,
        "scheduler": plan.scheduler,
    }))
    .unwrap_or_default();
    let run_json = cfg_text + "\n";
    run_plan_with(
        plan,
        dir,
        event_log,
        &mut |_| {},
        &[("run.json", &run_json)],
    )
    .map_err(|e| match e {
        SweepError::Run { message, .. } | SweepError::Failed(message) => SweepError::Run {
            run: p.id.clone(),
            message,
        },
        other => other,
    })
}

/// Runs the sweep's runs of `opts.shard` in parallel on the current rayon pool and writes the
/// shard's manifest. Returns the manifest; the first failing run's error otherwise (the other
/// runs still finish).
pub fn run_sweep(
    sweep: &Sweep,
    opts: &SweepOptions,
    progress: &dyn SweepProgress,
) -> Result<Manifest, SweepError> {
    std::fs::create_dir_all(&opts.out).map_err(|e| SweepError::io(&opts.out, e))?;
    let points: Vec<RunPoint> = sweep
        .points()
        .into_iter()
        .filter(|p| opts.shard.contains(p.index))
        .collect();
    let results: Vec<Result<(), SweepError>> = points
        .par_iter()
        .map(|p| {
            let r = run_point(sweep, p, &run_dir(&opts.out, &p.id), opts.event_log).map(|_| ());
            progress.run_done(&p.id);
            r
        })
        .collect();
    for r in results {
        r?;
    }
    let m = manifest(sweep, opts.shard);
    m.write(&opts.out)?;
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_partition() {
        assert_eq!(Shard::parse("1/3").unwrap(), Shard { index: 1, count: 3 });
        for (s, want) in [
            ("3/3", "--shard \"3/3\": I must be less than N"),
            ("0/0", "--shard \"0/0\": N must be at least 1"),
            ("x/2", "--shard \"x/2\": I is not a whole number"),
            ("2", "--shard \"2\": expected I/N"),
        ] {
            let e = Shard::parse(s).unwrap_err().to_string();
            assert!(e.starts_with(want), "{s}: {e}");
        }
        let shards: Vec<Shard> = (0..3).map(|i| Shard { index: i, count: 3 }).collect();
        for k in 0..10 {
            assert_eq!(shards.iter().filter(|s| s.contains(k)).count(), 1);
        }
    }
}
