//! `ksim run [SCENARIO] [--nodes FILE] [--trace FILE]... [--scheduler-config FILE] [--seed N]
//! [--until DURATION] [--out DIR]`: flags override the scenario; with `--nodes` and `--trace`
//! no scenario file is needed.
//!
//! Every run records what it ran beside its outputs: `scenario.yaml` (the scenario after the
//! command-line overrides, paths made absolute, its scheduler configuration pointing at the
//! next file), `scheduler-config.yaml` (the effective KubeSchedulerConfiguration: upstream's
//! defaults applied — global fields, every profile's plugin sets merged with the default
//! multi-point set, the args of the in-tree plugins that take args), and `ksim-run.json`
//! (ksim's version, the seed, the horizon, the `--explain` selector). `ksim run
//! DIR/scenario.yaml` re-runs it: same outputs, byte for byte.
//!
//! `--fork-at TIME --variant FILE...` runs to TIME, then continues the same in-memory state once
//! unchanged and once per variant (`fork/`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::bail;
use clap::Args;
use ksim_engine::{EngineConfig, SimDuration, SimTime};
use ksim_scheduler::node_info::ClusterObjects;
use ksim_trace::scenario::load_scheduler_config;
use ksim_trace::{load_nodes, load_scenario, open_trace, MergedSource, ScenarioPlan};

use crate::progress::VirtualTimeProgress;

#[derive(Args)]
pub struct RunArgs {
    /// Scenario file (YAML or JSON).
    pub scenario: Option<PathBuf>,
    /// Nodes present at time 0 (a Kubernetes List, JSON or YAML); replaces the scenario's.
    #[arg(long)]
    pub nodes: Option<PathBuf>,
    /// Native traces (JSON Lines, or CSV by extension); replace the scenario's workload.
    #[arg(long = "trace")]
    pub traces: Vec<PathBuf>,
    /// Lists of cluster objects present at t=0 (repeatable), added to the scenario's
    /// `cluster.objectsFiles`: PDBs, namespaces, services, storage objects and workloads (run
    /// by their controllers), e.g. the `objects.yaml` of `ksim import kube-dump`.
    #[arg(long = "objects", value_name = "FILE")]
    pub objects: Vec<PathBuf>,
    /// A KubeSchedulerConfiguration file; replaces the scenario's.
    #[arg(long)]
    pub scheduler_config: Option<PathBuf>,
    /// Seed of every random choice (tie-breaks, generators, jitter).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Stop after this virtual time (e.g. "2h", "90m", "3600").
    #[arg(long)]
    pub until: Option<String>,
    /// Output directory (default results/<scenario name>/).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also write the event log (events.jsonl) that `ksim report` re-renders.
    #[arg(long)]
    pub event_log: bool,
    /// Record the scheduling detail (per-node filter results, per-plugin scores, preemption) of
    /// the selected pods' attempts into explain.jsonl: `ns/name`, a label selector `app=web`,
    /// `pending` (pods with an unschedulable attempt) or `all`.
    #[arg(long, value_name = "SELECTOR")]
    pub explain: Option<String>,
    /// Also write the cluster at this virtual time (nodes, bound and pending pods with their
    /// nominations, PDBs, storage objects) as a kubectl-style List, `cluster-dump.json`, which
    /// `ksim import kube-dump` reads back.
    #[arg(long, value_name = "TIME")]
    pub dump_at: Option<String>,
    /// What-if forks: run to this virtual time, then continue the same in-memory state once
    /// unchanged (the base branch, written to the output directory) and once per `--variant`
    /// (written to OUT/branches/<name>/), and compare them (OUT/compare/).
    #[arg(long, value_name = "TIME", requires = "variants")]
    pub fork_at: Option<String>,
    /// A variant file for `--fork-at` (repeatable): scheduler configuration, nodes or pools
    /// added or removed, controllers scaled from the fork instant (see the README).
    #[arg(long = "variant", value_name = "FILE", requires = "fork_at")]
    pub variants: Vec<PathBuf>,
    /// Do not print the summary table (nor, with `--fork-at`, the comparison of the branches).
    #[arg(long, short)]
    pub quiet: bool,
    /// SLO conditions, as `ksim plan --slo` takes them (e.g. "within(30s)>=99%", "p99<=30s"):
    /// checked after the run, written to slo.json and marked on the report's latency CDF.
    #[arg(long)]
    pub slo: Vec<String>,
    #[command(flatten)]
    pub version: super::version_args::VersionArgs,
}

/// `--slo` flags (repeated or comma-separated) parsed by `ksim plan`'s parser; `None` when
/// none was given.
pub fn parse_slo_flags(
    flags: &[String],
) -> anyhow::Result<Option<Vec<ksim_sweep::plan::Condition>>> {
    if flags.is_empty() {
        return Ok(None);
    }
    Ok(Some(ksim_sweep::plan::parse_slo(&flags.join(","))?))
}

/// Prints whether the run in `dir` meets each condition (latencies read from its pods.csv).
pub fn print_slo_verdicts(
    slo: Option<&[ksim_sweep::plan::Condition]>,
    summary: &ksim_report::Summary,
    dir: &Path,
) -> anyhow::Result<()> {
    let Some(slo) = slo else {
        return Ok(());
    };
    let dist = ksim_report::LatencyDist::from_pods_csv(dir, summary.horizon_s)?;
    for line in ksim_sweep::plan::slo_verdicts(slo, summary, Some(&dist)) {
        println!("{line}");
    }
    Ok(())
}

fn plan_from(a: &RunArgs) -> anyhow::Result<ScenarioPlan> {
    let mut plan = match &a.scenario {
        // `--seed` replaces the scenario's seed before its generators are built, so it reseeds
        // them too (as its help says, and as a sweep's seed axis does).
        Some(p) => match a.seed {
            Some(seed) => {
                let name = ksim_trace::io::display_name(p);
                let text = ksim_trace::io::read_text(p)?;
                let mut scenario = ksim_trace::parse_scenario(&name, &text)?;
                scenario.seed = seed;
                scenario.plan(&name, p.parent().unwrap_or(Path::new(".")))?
            }
            None => load_scenario(p)?,
        },
        None => {
            if a.nodes.is_none() || a.traces.is_empty() {
                bail!("give a scenario file, or both --nodes and --trace");
            }
            ScenarioPlan {
                name: a
                    .traces
                    .first()
                    .and_then(|t| t.file_stem())
                    .map(|s| s.to_string_lossy().trim_end_matches(".jsonl").to_string())
                    .unwrap_or_else(|| "run".into()),
                source: "<command line>".into(),
                engine: EngineConfig::default(),
                scheduler: Default::default(),
                nodes: Vec::new(),
                objects: ClusterObjects::default(),
                events: MergedSource::new(Vec::new()),
                output_dir: None,
                warnings: Vec::new(),
                gates: Default::default(),
            }
        }
    };
    plan.gates = a.version.apply(&plan.gates)?;
    if let Some(n) = &a.nodes {
        plan.nodes = load_nodes(n)?;
    }
    if !a.traces.is_empty() {
        plan.warnings
            .retain(|w| !w.ends_with("the trace has no event"));
        for t in &a.traces {
            if !ksim_trace::io::trace_has_events(t)? {
                plan.warnings
                    .push(format!("{}: the trace has no event", t.display()));
            }
        }
        let sources = a
            .traces
            .iter()
            .map(|t| open_trace(t))
            .collect::<Result<Vec<_>, _>>()?;
        plan.events = MergedSource::new(sources);
    }
    if !a.objects.is_empty() {
        add_objects(&mut plan, &a.objects)?;
    }
    if let Some(c) = &a.scheduler_config {
        plan.scheduler = load_scheduler_config(c)?;
    }
    if let Some(s) = a.seed {
        plan.engine.seed = s;
    }
    if let Some(u) = &a.until {
        let d = SimDuration::parse(u).map_err(|e| anyhow::anyhow!("--until: {e}"))?;
        plan.engine.horizon = Some(SimTime(d.micros()));
    }
    Ok(plan)
}

/// `--objects FILE...`: each List's objects join the plan's t=0 objects, and its workloads
/// are created at t=0 before any trace event, as a scenario's `cluster.objectsFiles` are.
fn add_objects(plan: &mut ScenarioPlan, files: &[PathBuf]) -> anyhow::Result<()> {
    let mut workloads = Vec::new();
    for f in files {
        ksim_trace::scenario::load_objects_and_workloads(f, &mut plan.objects, &mut workloads)?;
    }
    // Claims without a class get the default one, as for a scenario's objects files.
    if let Some(class) =
        ksim_engine::sim::default_storage_class(&plan.objects.storage.storage_classes)
    {
        for pvc in plan.objects.storage.persistent_volume_claims.values_mut() {
            if pvc.spec.storage_class_name.is_none() {
                std::sync::Arc::make_mut(pvc).spec.storage_class_name = Some(class.clone());
            }
        }
    }
    if !workloads.is_empty() {
        let events = workloads
            .into_iter()
            .map(|o| ksim_engine::TimedEvent {
                at: SimTime::ZERO,
                event: ksim_engine::InputEvent::CreateObject {
                    object: Box::new(o),
                },
            })
            .collect();
        plan.events
            .prepend(Box::new(ksim_engine::VecSource::new(events)))
            .map_err(|e| anyhow::anyhow!("--objects: {e}"))?;
    }
    Ok(())
}

pub fn run(a: RunArgs) -> anyhow::Result<ExitCode> {
    let slo = parse_slo_flags(&a.slo)?;
    let plan = plan_from(&a)?;
    let out = a
        .out
        .clone()
        .or_else(|| plan.output_dir.clone())
        .unwrap_or_else(|| Path::new("results").join(&plan.name));
    let started = Instant::now();
    for w in &plan.warnings {
        eprintln!("warning: {w}");
    }
    if plan.nodes.is_empty() && plan.engine.autoscaler.is_none() {
        eprintln!(
            "warning: {}: the cluster has no nodes at t=0; pods wait until a trace adds nodes \
             (a run without a horizon stops as soon as nothing can change)",
            plan.source
        );
    }
    let horizon = plan.engine.horizon;
    let explain = match &a.explain {
        Some(s) => Some(
            ksim_engine::explain::ExplainSelector::parse(s)
                .map_err(|e| anyhow::anyhow!("--explain: {e}"))?,
        ),
        None => None,
    };
    let dump_at = match &a.dump_at {
        Some(t) => {
            let d = SimDuration::parse(t).map_err(|e| anyhow::anyhow!("--dump-at: {e}"))?;
            let at = SimTime(d.micros());
            if let Some(h) = horizon.filter(|h| at > *h) {
                bail!("--dump-at {t}: past the run's horizon ({h}); give a time up to it");
            }
            Some(at)
        }
        None => None,
    };
    let fork_at = match &a.fork_at {
        Some(t) => {
            let d = SimDuration::parse(t).map_err(|e| anyhow::anyhow!("--fork-at: {e}"))?;
            let at = SimTime(d.micros());
            if let Some(h) = horizon.filter(|h| at > *h) {
                bail!("--fork-at {t}: past the run's horizon ({h}); give a time up to it");
            }
            Some(at)
        }
        None => None,
    };
    let variants = a
        .variants
        .iter()
        .map(|p| super::fork::load_variant(p))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let recorded = recorded_files(&a, &plan)?;
    let slo_json = slo
        .as_deref()
        .map(|c| ksim_sweep::plan::slo_file(c).to_json());
    let mut extra: Vec<(&str, &str)> = recorded.iter().map(|(n, t)| (*n, t.as_str())).collect();
    if let Some(t) = slo_json.as_deref() {
        extra.push((ksim_report::SLO_FILE, t));
    }
    let summary = match fork_at {
        Some(at) => {
            let f = super::fork::ForkRun {
                at,
                variants: &variants,
                event_log: a.event_log,
                explain,
                dump_at,
                extra: &extra,
                quiet: a.quiet,
                version: plan.gates.version(),
            };
            let (base, branches) = super::fork::run_forked(plan, &out, &f)?;
            for (name, s) in &branches {
                if let Some(why) = &s.stalled {
                    eprintln!("note: branch {name}: {why}");
                }
            }
            base
        }
        None => run_plan_explain(plan, &out, a.event_log, explain, dump_at, &extra)?,
    };
    let wall = started.elapsed();
    if let Some(why) = &summary.stalled {
        eprintln!("note: {why}");
    }
    if !summary.unserved_schedulers.is_empty() {
        eprintln!(
            "warning: {} pod(s) name a schedulerName no profile serves ({}); as upstream, \
             another scheduler owns them and they were never scheduled (outcome 'unserved' in \
             pods.csv)",
            summary.pods.by_outcome.unserved,
            summary.unserved_schedulers.join(", ")
        );
    }
    if !a.quiet {
        println!("{}", ksim_report::summary_table(&summary));
        print_slo_verdicts(slo.as_deref(), &summary, &out)?;
        println!(
            "reports written to {} ({:.2} s wall)",
            out.display(),
            wall.as_secs_f64()
        );
    }
    let _ = horizon;
    Ok(ExitCode::SUCCESS)
}

/// [`run_plan`] with `--explain`.
pub fn run_plan_explain(
    plan: ScenarioPlan,
    out: &Path,
    event_log: bool,
    explain: Option<ksim_engine::explain::ExplainSelector>,
    dump_at: Option<SimTime>,
    extra: &[(&str, &str)],
) -> anyhow::Result<ksim_report::Summary> {
    let mut progress = VirtualTimeProgress::new(&plan.name, plan.engine.horizon);
    let summary = ksim_sweep::run_plan_explain(
        plan,
        out,
        event_log,
        &mut |at| progress.update(at),
        extra,
        explain,
        dump_at,
    );
    progress.finish();
    Ok(summary?)
}

/// The files that record what a run ran: `scenario.yaml`, `scheduler-config.yaml`,
/// `ksim-run.json` (see the module doc).
fn recorded_files(a: &RunArgs, plan: &ScenarioPlan) -> anyhow::Result<Vec<(&'static str, String)>> {
    let scenario = recorded_scenario(a, plan)?;
    let features = ksim_scheduler::framework::Features::from_gates(&plan.gates);
    let config = effective_scheduler_config_for(&plan.scheduler, &features);
    let scenario_yaml = format!(
        "# The scenario this run ran, after command-line overrides (paths made absolute).\n\
         # Re-run it: ksim run scenario.yaml --out DIR\n{}",
        serde_saphyr::to_string(&scenario)?
    );
    let config_yaml = format!(
        "# The effective KubeSchedulerConfiguration of this run, upstream's defaults applied.\n{}",
        serde_saphyr::to_string(&config)?
    );
    let run = serde_json::json!({
        "ksimVersion": env!("CARGO_PKG_VERSION"),
        "kubeScheduler": plan.gates.version().recorded_release(),
        "kubernetesVersion": plan.gates.version().as_str(),
        "featureGates": plan.gates.overrides(),
        "seed": plan.engine.seed,
        "horizon": plan.engine.horizon.map(|h| h.to_string()),
        "source": plan.source,
        "scenario": "scenario.yaml",
        "schedulerConfig": "scheduler-config.yaml",
        "explain": a.explain,
        "eventLog": a.event_log,
        "dumpAt": a.dump_at,
    });
    let mut run = run;
    if let Some(t) = &a.fork_at {
        // A forked run: this file sits in the base branch and in every branch's folder.
        run["forkAt"] = serde_json::json!(t);
        run["variants"] = serde_json::json!(a
            .variants
            .iter()
            .map(|p| absolute(Path::new("."), &p.to_string_lossy()))
            .collect::<Vec<_>>());
    }
    Ok(vec![
        ("scenario.yaml", scenario_yaml),
        ("scheduler-config.yaml", config_yaml),
        (
            "ksim-run.json",
            format!("{}\n", serde_json::to_string_pretty(&run)?),
        ),
    ])
}

/// `p` against `base` when relative, made absolute against the working directory.
fn absolute(base: &Path, p: &str) -> String {
    let p = Path::new(p);
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    };
    std::path::absolute(&joined)
        .unwrap_or(joined)
        .display()
        .to_string()
}

/// The scenario file as written, with the overrides of the command line applied, its file
/// paths made absolute, no output directory, and `scheduler.configFile` naming the recorded
/// effective configuration (which sits beside it).
fn recorded_scenario(a: &RunArgs, plan: &ScenarioPlan) -> anyhow::Result<serde_json::Value> {
    use serde_json::{json, Value};
    let mut v = match &a.scenario {
        Some(p) => {
            let name = p.display().to_string();
            let text = std::fs::read_to_string(p).map_err(|e| anyhow::anyhow!("{name}: {e}"))?;
            let doc = ksim_trace::nodes::parse_documents(&name, &text)?
                .into_iter()
                .next()
                .unwrap_or(Value::Null);
            let base = p.parent().unwrap_or(Path::new("."));
            let mut doc = match doc {
                Value::Object(m) => Value::Object(m),
                _ => json!({}),
            };
            for (section, key) in [
                ("cluster", "nodesFiles"),
                ("cluster", "objectsFiles"),
                ("workload", "traces"),
            ] {
                if let Some(list) = doc
                    .get_mut(section)
                    .and_then(|s| s.get_mut(key))
                    .and_then(Value::as_array_mut)
                {
                    for f in list.iter_mut() {
                        if let Some(s) = f.as_str() {
                            *f = json!(absolute(base, s));
                        }
                    }
                }
            }
            doc
        }
        None => json!({}),
    };
    let Some(m) = v.as_object_mut() else {
        bail!("scenario is not a mapping");
    };
    m.insert("name".into(), json!(plan.name));
    m.insert("seed".into(), json!(plan.engine.seed));
    m.insert(
        "kubernetesVersion".into(),
        json!(plan.gates.version().as_str()),
    );
    if plan.gates.overrides().is_empty() {
        m.remove("featureGates");
    } else {
        m.insert("featureGates".into(), json!(plan.gates.overrides()));
    }
    if let Some(u) = &a.until {
        m.insert("horizon".into(), json!(u));
    }
    m.remove("output");
    if let Some(n) = &a.nodes {
        let cluster = m.entry("cluster").or_insert_with(|| json!({}));
        cluster["nodesFiles"] = json!([absolute(Path::new("."), &n.to_string_lossy())]);
        // --nodes replaces the pools' nodes too; an autoscaler still reads their templates.
        if let Some(pools) = cluster.get_mut("pools").and_then(Value::as_array_mut) {
            for p in pools.iter_mut() {
                p["count"] = json!(0);
            }
        }
    }
    if !a.objects.is_empty() {
        // Before the scenario's own objects files, as the run created their workloads first.
        let cluster = m.entry("cluster").or_insert_with(|| json!({}));
        let mut files: Vec<Value> = a
            .objects
            .iter()
            .map(|f| json!(absolute(Path::new("."), &f.to_string_lossy())))
            .collect();
        if let Some(old) = cluster.get("objectsFiles").and_then(Value::as_array) {
            files.extend(old.iter().cloned());
        }
        cluster["objectsFiles"] = Value::Array(files);
    }
    if !a.traces.is_empty() {
        let traces: Vec<String> = a
            .traces
            .iter()
            .map(|t| absolute(Path::new("."), &t.to_string_lossy()))
            .collect();
        m.insert("workload".into(), json!({ "traces": traces }));
    }
    m.insert(
        "scheduler".into(),
        json!({"configFile": "scheduler-config.yaml"}),
    );
    Ok(v)
}

/// The configuration a run's scheduler used, with upstream's defaults written out
/// (`SetDefaults_KubeSchedulerConfiguration`): parallelism, percentageOfNodesToScore and the
/// backoffs; one `default-scheduler` profile when none is given; each profile's plugins merged
/// with the default multi-point set, and the args of every enabled in-tree plugin that takes
/// args, defaulted. Reading it back builds the same frameworks.
pub fn effective_scheduler_config(
    cfg: &ksim_api::config::KubeSchedulerConfiguration,
) -> ksim_api::config::KubeSchedulerConfiguration {
    effective_scheduler_config_for(cfg, &Default::default())
}

/// [`effective_scheduler_config`] with the default profile of `features`' version and gates.
pub fn effective_scheduler_config_for(
    cfg: &ksim_api::config::KubeSchedulerConfiguration,
    features: &ksim_scheduler::framework::Features,
) -> ksim_api::config::KubeSchedulerConfiguration {
    use ksim_api::config::{self as c, decode_args, PluginConfig, Profile};
    let mut out = cfg.clone();
    out.parallelism.get_or_insert(16);
    out.percentage_of_nodes_to_score.get_or_insert(0);
    out.pod_initial_backoff_seconds.get_or_insert(1);
    out.pod_max_backoff_seconds.get_or_insert(10);
    if out.profiles.is_empty() {
        out.profiles.push(Profile::default());
    }
    fn args<T: serde::de::DeserializeOwned + Default + serde::Serialize>(
        name: &str,
        raw: Option<&serde_json::Value>,
        finish: fn(T) -> T,
    ) -> Option<serde_json::Value> {
        decode_args::<T>(name, raw)
            .ok()
            .map(finish)
            .and_then(|a| serde_json::to_value(a).ok())
    }
    for p in &mut out.profiles {
        if p.scheduler_name.is_empty() {
            p.scheduler_name = "default-scheduler".into();
        }
        let plugins = ksim_scheduler::framework::registry::defaulted_plugins_with(
            features,
            p.plugins.as_ref(),
        );
        let enabled: Vec<String> = [
            &plugins.multi_point,
            &plugins.pre_filter,
            &plugins.filter,
            &plugins.post_filter,
            &plugins.pre_score,
            &plugins.score,
            &plugins.reserve,
            &plugins.permit,
            &plugins.pre_bind,
            &plugins.bind,
        ]
        .iter()
        .flat_map(|s| s.enabled.iter().map(|r| r.name.clone()))
        .collect();
        for name in [
            "DefaultPreemption",
            "InterPodAffinity",
            "NodeAffinity",
            "NodeResourcesBalancedAllocation",
            "NodeResourcesFit",
            "PodTopologySpread",
            "VolumeBinding",
        ] {
            if !enabled.iter().any(|e| e == name) {
                continue;
            }
            let raw = p.args_of(name);
            let v = match name {
                "DefaultPreemption" => args::<c::DefaultPreemptionArgs>(name, raw, |a| a),
                "InterPodAffinity" => args::<c::InterPodAffinityArgs>(name, raw, |a| a),
                "NodeAffinity" => args::<c::NodeAffinityArgs>(name, raw, |a| a),
                "NodeResourcesBalancedAllocation" => {
                    args::<c::NodeResourcesBalancedAllocationArgs>(name, raw, |a| a.defaulted())
                }
                "NodeResourcesFit" => args::<c::NodeResourcesFitArgs>(name, raw, |a| a.defaulted()),
                "PodTopologySpread" => args::<c::PodTopologySpreadArgs>(name, raw, |a| a),
                _ => args::<c::VolumeBindingArgs>(name, raw, |a| a),
            };
            // Args that do not decode were refused before the run; keep them as given.
            let Some(v) = v else { continue };
            match p.plugin_config.iter_mut().find(|pc| pc.name == name) {
                Some(pc) => pc.args = v,
                None => p.plugin_config.push(PluginConfig {
                    name: name.into(),
                    args: v,
                }),
            }
        }
        p.plugins = Some(plugins);
    }
    out
}
