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
//! ```
//!
//! Every key is optional; an empty file is the empty variant. Removals come first, then
//! additions, then scaling, all at TIME after what the trunk already applied at TIME; a
//! node named twice, or a name, selector or controller that matches nothing at TIME, is an
//! error naming the file, line and field.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context};
use ksim_api::config::KubeSchedulerConfiguration;
use ksim_api::meta::{LabelSelector, Selector};
use ksim_api::object::{ApiObject, ObjectKind};
use ksim_api::Node;
use ksim_engine::explain::ExplainSelector;
use ksim_engine::{InputEvent, Observer, Record, SimTime, Simulation};
use ksim_trace::scenario::{pool_nodes, NodePool};
use ksim_trace::{ScenarioPlan, TraceError};
use rayon::prelude::*;
use serde_json::Value;

use crate::progress::VirtualTimeProgress;

/// A variant file, read and checked.
#[derive(Debug, Clone)]
pub struct Variant {
    pub name: String,
    /// The file as named on the command line, for errors.
    pub source: String,
    /// Its text, copied into the branch's folder.
    pub text: String,
    pub scheduler: Option<KubeSchedulerConfiguration>,
    pub add_nodes: Vec<(String, Node)>,
    pub remove_names: Vec<(String, String)>,
    pub remove_selector: Option<(String, Selector)>,
    pub scale: Vec<Scale>,
}

/// One `scale:` entry.
#[derive(Debug, Clone)]
pub struct Scale {
    pub field: String,
    pub kind: ObjectKind,
    pub namespace: String,
    pub name: String,
    pub to: ScaleTo,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ScaleTo {
    Replicas(i32),
    Factor(f64),
}

/// The line of `field` (a path like `scale.deployment/web` or `addPools[1].count`) in `text`:
/// the line of its top-level key, then of its first sub-key or list item found below it.
fn line_of(text: &str, field: &str) -> Option<u64> {
    let top_end = field.find(['.', '[']).unwrap_or(field.len());
    let top = &field[..top_end];
    let lines: Vec<&str> = text.lines().collect();
    let is_key = |l: &str| {
        let t = l
            .trim_start()
            .trim_start_matches(['{', ' '])
            .trim_start_matches('"');
        t.starts_with(&format!("{top}:")) || t.starts_with(&format!("{top}\":"))
    };
    // A top-level key is unindented in YAML; in JSON (or flow style) take the first match.
    let start = lines
        .iter()
        .position(|l| !l.starts_with([' ', '\t', '#']) && is_key(l))
        .or_else(|| lines.iter().position(|l| is_key(l)))?;
    let rest = &field[top_end..];
    let mut line = start;
    if let Some(idx) = rest
        .strip_prefix('[')
        .and_then(|r| r.split(']').next())
        .and_then(|n| n.parse::<usize>().ok())
    {
        // The idx-th list item below the key.
        let mut seen = 0;
        for (i, l) in lines.iter().enumerate().skip(start + 1) {
            if !l.starts_with([' ', '\t', '-']) && !l.trim().is_empty() && !l.starts_with('#') {
                break;
            }
            if l.trim_start().starts_with("- ") || l.trim() == "-" {
                if seen == idx {
                    line = i;
                    break;
                }
                seen += 1;
            }
        }
    } else if let Some(sub) = rest.strip_prefix('.') {
        let sub = sub.split(['.', '[']).next().unwrap_or(sub);
        for (i, l) in lines.iter().enumerate().skip(start + 1) {
            if !l.starts_with([' ', '\t', '-']) && !l.trim().is_empty() && !l.starts_with('#') {
                break;
            }
            let t = l
                .trim_start()
                .trim_start_matches("- ")
                .trim_start_matches('"');
            if t.starts_with(&format!("{sub}:")) || t.starts_with(&format!("{sub}\":")) {
                line = i;
                break;
            }
        }
    }
    Some(line as u64 + 1)
}

/// An error at `field` of the variant file `source`, with the field's line when found.
fn at(source: &str, text: &str, field: &str, message: impl Into<String>) -> anyhow::Error {
    let e = match line_of(text, field) {
        Some(l) => TraceError::at_line(source, l, field, message),
        None => TraceError::at_field(source, field, message),
    };
    anyhow!(e)
}

/// Reads and checks a variant file.
pub fn load_variant(path: &Path) -> anyhow::Result<Variant> {
    let source = path.display().to_string();
    let text = ksim_trace::io::read_text(path)?;
    let docs = ksim_trace::nodes::parse_documents(&source, &text)?;
    let doc = match <[Value; 1]>::try_from(docs) {
        Ok([d]) => d,
        Err(d) if d.is_empty() => Value::Object(Default::default()),
        Err(d) => bail!(TraceError::at_field(
            &source,
            "",
            format!("expected one YAML document, found {}", d.len())
        )),
    };
    let Value::Object(map) = doc else {
        bail!(TraceError::at_field(
            &source,
            "",
            format!(
                "a variant is a mapping (name, schedulerConfig, addNodes, addPools, \
                 removeNodes, scale), got {}",
                ksim_api::json::value_kind(&doc)
            )
        ));
    };
    let err = |field: &str, m: String| at(&source, &text, field, m);
    let stem = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "variant".into());
    let stem = stem
        .trim_end_matches(".yaml")
        .trim_end_matches(".yml")
        .trim_end_matches(".json")
        .to_string();
    let mut v = Variant {
        name: stem,
        source: source.clone(),
        text: text.clone(),
        scheduler: None,
        add_nodes: Vec::new(),
        remove_names: Vec::new(),
        remove_selector: None,
        scale: Vec::new(),
    };
    let base = path.parent().unwrap_or(Path::new("."));
    for (key, val) in &map {
        match key.as_str() {
            "name" => {
                let Some(n) = val.as_str() else {
                    return Err(err("name", "expected a string".into()));
                };
                if n.is_empty()
                    || n == "."
                    || n == ".."
                    || !n
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
                {
                    return Err(err(
                        "name",
                        format!("{n:?} is not a folder name (letters, digits, '-', '_', '.')"),
                    ));
                }
                v.name = n.to_string();
            }
            "schedulerConfig" => {
                v.scheduler = Some(match val {
                    Value::String(p) => {
                        let p = if Path::new(p).is_absolute() {
                            PathBuf::from(p)
                        } else {
                            base.join(p)
                        };
                        ksim_trace::scenario::load_scheduler_config(&p)
                            .map_err(|e| err("schedulerConfig", e.to_string()))?
                    }
                    Value::Object(_) => KubeSchedulerConfiguration::from_value(val)
                        .map_err(|e| err("schedulerConfig", e.to_string()))?,
                    _ => {
                        return Err(err(
                            "schedulerConfig",
                            "expected a file name or a KubeSchedulerConfiguration mapping".into(),
                        ))
                    }
                });
            }
            "addNodes" => {
                let Some(items) = val.as_array() else {
                    return Err(err("addNodes", "expected a list of Node objects".into()));
                };
                for (i, item) in items.iter().enumerate() {
                    let f = format!("addNodes[{i}]");
                    let n =
                        ksim_trace::native::decode_node(item, &f).map_err(|(p, m)| err(&p, m))?;
                    v.add_nodes.push((f, n));
                }
            }
            "addPools" => {
                let Some(items) = val.as_array() else {
                    return Err(err(
                        "addPools",
                        "expected a list of pools (name, count, template)".into(),
                    ));
                };
                for (i, item) in items.iter().enumerate() {
                    let f = format!("addPools[{i}]");
                    let pool: NodePool = serde_path_to_error::deserialize(item).map_err(|e| {
                        let p = e.path().to_string();
                        let p = if p == "." {
                            f.clone()
                        } else {
                            format!("{f}.{p}")
                        };
                        err(&p, e.inner().to_string())
                    })?;
                    for n in pool_nodes(&pool, &f).map_err(|(p, m)| err(&p, m))? {
                        v.add_nodes.push((f.clone(), n));
                    }
                }
            }
            "removeNodes" => parse_remove(val, &mut v, &err)?,
            "scale" => {
                let Some(m) = val.as_object() else {
                    return Err(err(
                        "scale",
                        "expected a mapping KIND/NAME: replicas (or a factor \"x1.5\")".into(),
                    ));
                };
                for (k, to) in m {
                    let f = format!("scale.{k}");
                    v.scale.push(parse_scale(k, to).map_err(|m| err(&f, m))?);
                    if let Some(s) = v.scale.last_mut() {
                        s.field = f;
                    }
                }
            }
            other => {
                return Err(err(
                    other,
                    "unknown field (expected name, schedulerConfig, addNodes, addPools, \
                     removeNodes or scale)"
                        .into(),
                ))
            }
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for (f, n) in &v.add_nodes {
        if !seen.insert(n.metadata.name.clone()) {
            return Err(err(f, format!("node {:?} is added twice", n.metadata.name)));
        }
    }
    Ok(v)
}

fn parse_remove(
    val: &Value,
    v: &mut Variant,
    err: &dyn Fn(&str, String) -> anyhow::Error,
) -> anyhow::Result<()> {
    let names = |list: &Value, field: &str, v: &mut Variant| -> anyhow::Result<()> {
        let Some(items) = list.as_array() else {
            return Err(err(field, "expected a list of node names".into()));
        };
        for (i, n) in items.iter().enumerate() {
            let f = format!("{field}[{i}]");
            match n.as_str() {
                Some(s) if !s.is_empty() => v.remove_names.push((f, s.to_string())),
                _ => return Err(err(&f, "expected a node name".into())),
            }
        }
        Ok(())
    };
    match val {
        Value::Array(_) => names(val, "removeNodes", v),
        Value::Object(m) => {
            for (k, x) in m {
                match k.as_str() {
                    "names" => names(x, "removeNodes.names", v)?,
                    "selector" => {
                        let f = "removeNodes.selector";
                        let sel = match x {
                            Value::String(s) => {
                                let mut labels = std::collections::BTreeMap::new();
                                for part in s.split(',') {
                                    let Some((k, val)) = part.split_once('=') else {
                                        return Err(err(
                                            f,
                                            format!("selector term {part:?} is not key=value"),
                                        ));
                                    };
                                    if k.trim().is_empty() {
                                        return Err(err(
                                            f,
                                            format!("selector term {part:?} has an empty key"),
                                        ));
                                    }
                                    labels.insert(k.trim().to_string(), val.trim().to_string());
                                }
                                LabelSelector {
                                    match_labels: labels.into_iter().collect(),
                                    ..Default::default()
                                }
                            }
                            _ => serde_path_to_error::deserialize::<_, LabelSelector>(x).map_err(
                                |e| err(f, format!("not a label selector: {}", e.inner())),
                            )?,
                        };
                        let s = Selector::from_label_selector(Some(&sel));
                        if s == Selector::Nothing {
                            return Err(err(f, "an invalid selector operator".into()));
                        }
                        if s == Selector::everything() {
                            return Err(err(f, "an empty selector would remove every node".into()));
                        }
                        v.remove_selector = Some((f.to_string(), s));
                    }
                    other => {
                        return Err(err(
                            &format!("removeNodes.{other}"),
                            "unknown field (expected names or selector)".into(),
                        ))
                    }
                }
            }
            Ok(())
        }
        _ => Err(err(
            "removeNodes",
            "expected a list of node names, or a mapping with names and/or selector".into(),
        )),
    }
}

fn parse_scale(key: &str, to: &Value) -> Result<Scale, String> {
    let parts: Vec<&str> = key.split('/').collect();
    let (kind, namespace, name) = match parts.as_slice() {
        [k, n] => (*k, "default", *n),
        [k, ns, n] => (*k, *ns, *n),
        _ => return Err("expected KIND/NAME or KIND/NAMESPACE/NAME".into()),
    };
    let kind = match kind.to_ascii_lowercase().as_str() {
        "deployment" | "deploy" | "deployments" => ObjectKind::Deployment,
        "replicaset" | "rs" | "replicasets" => ObjectKind::ReplicaSet,
        "statefulset" | "sts" | "statefulsets" => ObjectKind::StatefulSet,
        _ => {
            return Err(format!(
                "{kind:?} cannot be scaled (Deployment, ReplicaSet or StatefulSet)"
            ))
        }
    };
    if namespace.is_empty() || name.is_empty() {
        return Err("expected KIND/NAME or KIND/NAMESPACE/NAME".into());
    }
    let to = match to {
        Value::Number(n) => match n.as_i64() {
            Some(r) if (0..=i64::from(i32::MAX)).contains(&r) => ScaleTo::Replicas(r as i32),
            _ => return Err(format!("replicas {n} is not a whole number >= 0")),
        },
        Value::String(s) => {
            let t = s.trim();
            let f = t
                .strip_prefix(['x', '×'])
                .or_else(|| t.strip_suffix(['x', '×']))
                .and_then(|f| f.trim().parse::<f64>().ok());
            match f {
                Some(f) if f.is_finite() && f >= 0.0 => ScaleTo::Factor(f),
                _ => match t.parse::<i32>() {
                    Ok(r) if r >= 0 => ScaleTo::Replicas(r),
                    _ => {
                        return Err(format!(
                            "{s:?} is neither replicas (a whole number) nor a factor (\"x1.5\")"
                        ))
                    }
                },
            }
        }
        _ => return Err("expected replicas (a whole number) or a factor (\"x1.5\")".into()),
    };
    Ok(Scale {
        field: String::new(),
        kind,
        namespace: namespace.to_string(),
        name: name.to_string(),
        to,
    })
}

/// Changes a branch at the fork instant `t` as its variant says.
fn apply_variant(v: &Variant, sim: &mut Simulation, t: SimTime) -> anyhow::Result<()> {
    let err = |field: &str, m: String| at(&v.source, &v.text, field, m);
    if let Some(c) = &v.scheduler {
        sim.set_scheduler_config(c)
            .map_err(|e| err("schedulerConfig", e.to_string()))?;
    }
    let snap = sim.snapshot();
    let mut events = Vec::new();
    let mut removed = std::collections::BTreeSet::new();
    for (f, n) in &v.remove_names {
        if !snap.index.contains_key(n) {
            return Err(err(f, format!("no node {n:?} in the cluster at {t}")));
        }
        if removed.insert(n.clone()) {
            events.push(InputEvent::RemoveNode { name: n.clone() });
        }
    }
    if let Some((f, sel)) = &v.remove_selector {
        let mut names: Vec<String> = snap
            .nodes
            .iter()
            .filter(|n| sel.matches(&n.node.metadata.labels))
            .map(|n| n.name().to_string())
            .collect();
        if names.is_empty() {
            return Err(err(f, format!("selects no node of the cluster at {t}")));
        }
        names.sort();
        for n in names {
            if removed.insert(n.clone()) {
                events.push(InputEvent::RemoveNode { name: n });
            }
        }
    }
    for (f, n) in &v.add_nodes {
        if snap.index.contains_key(&n.metadata.name) && !removed.contains(&n.metadata.name) {
            return Err(err(
                f,
                format!(
                    "node {:?} is already in the cluster at {t}",
                    n.metadata.name
                ),
            ));
        }
        events.push(InputEvent::AddNode {
            node: Box::new(n.clone()),
        });
    }
    for s in &v.scale {
        let Some(mut w) = sim.controller_object(s.kind, &s.namespace, &s.name) else {
            return Err(err(
                &s.field,
                format!("no {} {}/{} at {t}", s.kind, s.namespace, s.name),
            ));
        };
        let now = w.spec.replicas.unwrap_or(1);
        let to = match s.to {
            ScaleTo::Replicas(r) => r,
            ScaleTo::Factor(f) => {
                let r = (f64::from(now) * f).ceil();
                if r > f64::from(i32::MAX) {
                    return Err(err(&s.field, format!("{now} × {f} replicas is too many")));
                }
                // A factor stays: later counts the trace gives this controller are multiplied
                // too (`x2` at 11m is still twice the trace's `replicas: 28` at 12m).
                sim.multiply_controller_scale(s.kind, &s.namespace, &s.name, f);
                r as i32
            }
        };
        w.spec.replicas = Some(to);
        // The variant's count is what runs: not multiplied again by the scenario's
        // controllerScale (the current count, which `x` multiplies, already is).
        w.metadata.annotations.insert(
            ksim_engine::config::UNSCALED_ANNOTATION.to_string(),
            "true".to_string(),
        );
        let object = match s.kind {
            ObjectKind::Deployment => ApiObject::Deployment(w),
            ObjectKind::ReplicaSet => ApiObject::ReplicaSet(w),
            _ => ApiObject::StatefulSet(w),
        };
        events.push(InputEvent::UpdateObject {
            object: Box::new(object),
        });
    }
    sim.inject(t, events)
        .map_err(|e| anyhow!("{}: {e}", v.source))?;
    Ok(())
}

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
