//! Scenario files (YAML or JSON): everything one run needs, turned into a [`ScenarioPlan`] the
//! engine can run.
//!
//! ```yaml
//! name: web-capacity            # required
//! description: optional text
//! seed: 42                      # default 0; every random stream derives from it
//! horizon: 24h                  # optional: the run stops after this instant
//! cluster:
//!   nodesFiles: [nodes.yaml]    # Kubernetes node Lists (kubectl get nodes -o yaml)
//!   objectsFiles: [objects.yaml] # PDBs, Namespaces, Services, ReplicaSets, PVs, PVCs,
//!                                # StorageClasses, CSI objects... (a List)
//!   pools:                      # template × count; names <pool>-<i>, i from 0
//!     - name: cpu
//!       count: 10
//!       template: {metadata: {labels: {zone: a}}, status: {capacity: {cpu: "8", memory: 32Gi, pods: "110"}}}
//! workload:
//!   traces: [trace.jsonl, big.csv.gz]   # native JSON Lines or compact CSV (by name)
//!   generators: [...]                    # see crate::generator
//!   controllers:                         # Lists of controller objects (Deployment, ReplicaSet,
//!     - apps.yaml                        # StatefulSet, DaemonSet, Job, PriorityClass), at t=0
//!     - {file: batch.yaml, at: 15m, scale: 2}   # or at `at`, replicas x2 (annotation ksim.io/scale)
//!   controllerScale: {"*": 1.5, web: 2}  # or one number: ksim_engine::config::ControllerScale
//! scheduler:                    # optional; default: the default profile
//!   configFile: sched.yaml      # a KubeSchedulerConfiguration file, or
//!   config: {profiles: [...]}   # the same inline (not both)
//! costs:                        # optional: ksim_engine::CostModels, camelCase
//!   schedulingCycle: {base: 1ms, perNode: 10us}
//!   bindLatency: 50ms
//! queue:                        # optional
//!   backoffFlushPeriod: 1s
//!   leftoverFlushPeriod: 30s
//!   maxInUnschedulable: 5m
//! onNodeRemoval: failAndRecreateOwned   # or fail, keepBound
//! controlPlane:                 # optional: ksim_engine::control_plane::ControlPlane
//!   disruption: {reactionDelay: 1s}   # PDB status (docs/disruption.md)
//!   podGC: {quarantineTime: 40s}
//! limits:                       # optional guards (ksim_engine::config::RunLimits)
//!   maxAttemptsWithoutChange: 10000   # failed attempts of one pod with no cluster change
//!   maxVirtualTime: 366d              # virtual time a run without a horizon may reach
//!   maxNodes: 1000000                 # nodes at t=0 (files and pools)
//!   maxPodsPerGenerator: 100000000    # a generator's count
//! output: results/web-capacity # optional output directory
//! ```
//!
//! Relative paths resolve against the scenario file's folder. Unknown fields are errors, and
//! errors name the field path (`scenario.yaml: workload.generators[0].arrival: unknown variant
//! ...`). Pool nodes get the labels `ksim.io/pool: <pool>` and `kubernetes.io/hostname: <name>`
//! (as a kubelet sets it). Node names must be unique across pools and files.
//!
//! The events of all traces and generators are merged by [`MergedSource`] on (time, source
//! index, sequence): the controller objects of `cluster.objectsFiles` and
//! `workload.controllers` first (one source, by creation time), then traces in the order
//! listed, then generators in the order listed.

use std::path::{Path, PathBuf};

use ksim_api::config::KubeSchedulerConfiguration;
use ksim_api::load::flatten_items;
use ksim_api::object::ObjectKind;
use ksim_api::Node;
use ksim_engine::config::OnNodeRemoval;
use ksim_engine::{CostModels, EngineConfig, SimDuration, SimTime};
use ksim_scheduler::ClusterObjects;
use serde::Deserialize;
use serde_json::Value;

use crate::csv_trace::CsvReader;
use crate::error::{join_path, TraceError};
use crate::generator::{Generator, GeneratorSpec};
use crate::io::{display_name, is_csv, read_text};
use crate::merge::{BoxedSource, MergedSource};
use crate::native::{decode_node, decode_object, decode_object_to_create, NativeReader};
use crate::nodes::{load_nodes, parse_documents};

mod objects;
pub use objects::*;

/// A scenario file as written.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Scenario {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub seed: u64,
    #[serde(default)]
    pub horizon: Option<SimDuration>,
    #[serde(default)]
    pub cluster: ClusterSpec,
    #[serde(default)]
    pub workload: WorkloadSpec,
    #[serde(default)]
    pub scheduler: Option<SchedulerSpec>,
    #[serde(default)]
    pub costs: Option<CostModels>,
    #[serde(default)]
    pub queue: QueueSpec,
    #[serde(default)]
    pub on_node_removal: Option<OnNodeRemoval>,
    #[serde(default)]
    pub output: Option<String>,
    /// Optional node-group autoscaler over some pools (see `ksim_engine::autoscale`); each
    /// pool's template is the pool's own unless given.
    #[serde(default)]
    pub autoscaler: Option<ksim_engine::autoscale::AutoscalerConfig>,
    /// Guards against runs that would go on forever (`ksim_engine::config::RunLimits`).
    #[serde(default)]
    pub limits: Option<ksim_engine::config::RunLimits>,
    /// The old flat reaction delay of the workload controllers (unset by default: the timing
    /// model of `controllerTiming` applies; see `docs/controller-timing.md`).
    #[serde(default)]
    pub controller_delay: Option<SimDuration>,
    /// The Kubernetes version the run behaves as (`1.35`, `1.36`; default 1.36, the newest
    /// recorded): its default profile, plugin behaviour and feature-gate defaults
    /// (docs/versions.md).
    #[serde(default)]
    pub kubernetes_version: Option<ksim_api::version::KubernetesVersion>,
    /// Feature gates as kube-scheduler's `--feature-gates` takes them, as a map
    /// (`NodeDeclaredFeatures: false`); unknown and locked gates are refused, per version.
    #[serde(default)]
    pub feature_gates: std::collections::BTreeMap<String, bool>,
    /// The controllers' timing model (`ksim_engine::config::ControllerTiming`): informer
    /// delay, reconcile, `kubeApiQps` / `kubeApiBurst`, burst and slow-start settings.
    #[serde(default)]
    pub controller_timing: Option<ksim_engine::config::ControllerTiming>,
    /// The control plane's controllers and their upstream flags (`controlPlane:`; see
    /// `ksim_engine::control_plane`), upstream v1.35's defaults when absent.
    #[serde(default)]
    pub control_plane: ksim_engine::control_plane::ControlPlane,
}

/// The kinds the admission chain reads, created before the workloads of the same file.
fn admitting(k: ObjectKind) -> bool {
    matches!(
        k,
        ObjectKind::PriorityClass | ObjectKind::LimitRange | ObjectKind::ResourceQuota
    )
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterSpec {
    #[serde(default)]
    pub nodes_files: Vec<String>,
    #[serde(default)]
    pub pools: Vec<NodePool>,
    /// Lists of PodDisruptionBudgets, Namespaces, Services, ReplicaSets, StatefulSets,
    /// ReplicationControllers and storage objects (PersistentVolumes, PersistentVolumeClaims,
    /// StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities, VolumeAttachments), present
    /// at t=0 (e.g. the `objects.yaml` of `ksim import kube-dump`).
    #[serde(default)]
    pub objects_files: Vec<String>,
}

/// `count` nodes made from one template.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodePool {
    pub name: String,
    pub count: u32,
    /// A Node object; its name is replaced by `<pool>-<i>`.
    pub template: Value,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkloadSpec {
    #[serde(default)]
    pub traces: Vec<String>,
    #[serde(default)]
    pub generators: Vec<GeneratorSpec>,
    /// Lists of controller objects (Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs,
    /// PriorityClasses), each created at its `at` (default t=0).
    #[serde(default)]
    pub controllers: Vec<ControllersEntry>,
    /// What-if replica factors of the controllers (see [`ControllerScaleSpec`]).
    #[serde(default)]
    pub controller_scale: Option<ControllerScaleSpec>,
    /// Run times of controller pods without a `ksim.io/run-for` annotation, by controller
    /// (`Kind/namespace/name`, `namespace/name`, `name` or `*`): a distribution as a
    /// generator's `runTime` (`{fixed: 7m}`, `{uniform: {min: 1m, max: 5m}}`, ...).
    #[serde(default)]
    pub run_times: std::collections::BTreeMap<String, ksim_engine::config::RunTimeDist>,
}

/// One `workload.controllers` entry: a file name, or `{file, at, scale}`.
#[derive(Debug, Clone, PartialEq)]
pub struct ControllersEntry {
    pub file: String,
    /// When its objects are created (default t=0).
    pub at: Option<SimDuration>,
    /// The replica factor of its controllers (their `ksim.io/scale` annotation).
    pub scale: Option<f64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ControllersEntryFull {
    file: String,
    #[serde(default)]
    at: Option<SimDuration>,
    #[serde(default)]
    scale: Option<f64>,
}

impl<'de> Deserialize<'de> for ControllersEntry {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        match Value::deserialize(d)? {
            Value::String(file) => Ok(ControllersEntry {
                file,
                at: None,
                scale: None,
            }),
            v @ Value::Object(_) => {
                let e: ControllersEntryFull =
                    serde_path_to_error::deserialize(&v).map_err(|e| {
                        let path = e.path().to_string();
                        if path == "." {
                            D::Error::custom(e.inner())
                        } else {
                            D::Error::custom(format!("{path}: {}", e.inner()))
                        }
                    })?;
                if let Some(f) = e.scale {
                    ksim_engine::config::check_scale(f)
                        .map_err(|m| D::Error::custom(format!("scale: {m}")))?;
                }
                Ok(ControllersEntry {
                    file: e.file,
                    at: e.at,
                    scale: e.scale,
                })
            }
            other => Err(D::Error::custom(format!(
                "expected a file name or {{file, at, scale}}, got {other}"
            ))),
        }
    }
}

/// `workload.controllerScale`: one factor for every controller (`1.5`), or factors by
/// controller (`{web: 2, default/db: 1, Job/default/batch: 3, "*": 1.5}`; keys
/// `Kind/namespace/name`, `namespace/name` or `name`, the most specific wins; `"*"` for the
/// others). See `ksim_engine::config::ControllerScale`.
#[derive(Debug, Clone, PartialEq)]
pub struct ControllerScaleSpec {
    pub all: f64,
    pub by_name: std::collections::BTreeMap<String, f64>,
}

impl<'de> Deserialize<'de> for ControllerScaleSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let check = |what: &str, f: f64| {
            ksim_engine::config::check_scale(f).map_err(|m| {
                D::Error::custom(if what.is_empty() {
                    m
                } else {
                    format!("{what}: {m}")
                })
            })
        };
        match Value::deserialize(d)? {
            Value::Number(n) => {
                let f = n.as_f64().unwrap_or(f64::NAN);
                check("", f)?;
                Ok(ControllerScaleSpec {
                    all: f,
                    by_name: Default::default(),
                })
            }
            Value::Object(m) => {
                let mut out = ControllerScaleSpec {
                    all: 1.0,
                    by_name: Default::default(),
                };
                for (k, v) in m {
                    let f = v.as_f64().ok_or_else(|| {
                        D::Error::custom(format!("{k}: expected a number, got {v}"))
                    })?;
                    check(&k, f)?;
                    if k.is_empty() || k.split('/').count() > 3 {
                        return Err(D::Error::custom(format!(
                            "{k:?}: expected name, namespace/name, Kind/namespace/name or \"*\""
                        )));
                    }
                    if k == "*" {
                        out.all = f;
                    } else {
                        out.by_name.insert(k, f);
                    }
                }
                Ok(out)
            }
            other => Err(D::Error::custom(format!(
                "expected a factor (1.5) or factors by controller ({{web: 1.5, \"*\": 1}}), got {other}"
            ))),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SchedulerSpec {
    #[serde(default)]
    pub config_file: Option<String>,
    #[serde(default)]
    pub config: Option<Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QueueSpec {
    #[serde(default)]
    pub backoff_flush_period: Option<SimDuration>,
    #[serde(default)]
    pub leftover_flush_period: Option<SimDuration>,
    #[serde(default)]
    pub max_in_unschedulable: Option<SimDuration>,
}

/// What the CLI hands the engine: a scenario with its files read and its sources open.
pub struct ScenarioPlan {
    pub name: String,
    /// The scenario file (or `<inline>`).
    pub source: String,
    pub engine: EngineConfig,
    pub scheduler: KubeSchedulerConfiguration,
    /// The nodes present at time 0: files first, in order, then pools.
    pub nodes: Vec<Node>,
    /// PDBs, namespaces, services, workload sets and storage objects the plugins and
    /// preemption read.
    pub objects: ClusterObjects,
    /// All traces and generators, merged in time order.
    pub events: MergedSource,
    /// Resolved output directory, when the scenario names one.
    pub output_dir: Option<PathBuf>,
    /// Things worth telling the user before the run (e.g. a trace with no event).
    pub warnings: Vec<String>,
    /// The Kubernetes version and feature gates the run behaves as (scenario
    /// `kubernetesVersion` / `featureGates`, `--kubernetes-version` / `--feature-gates`).
    pub gates: ksim_api::version::FeatureGates,
}

impl std::fmt::Debug for ScenarioPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScenarioPlan")
            .field("name", &self.name)
            .field("engine", &self.engine)
            .field("nodes", &self.nodes.len())
            .field("sources", &self.events.len())
            .field("output_dir", &self.output_dir)
            .field("gates", &self.gates)
            .finish()
    }
}

/// Parses scenario text (YAML or JSON); `source` names the file in errors.
pub fn parse_scenario(source: &str, text: &str) -> Result<Scenario, TraceError> {
    // A file of another kind is named as such before any scenario field is read.
    if crate::sniff::is_json_lines_trace(text) {
        return Err(TraceError::at_field(
            source,
            "",
            crate::sniff::FileKind::JsonLinesTrace.hint(),
        ));
    }
    let docs = parse_documents(source, text)?;
    if let Some(e) =
        crate::sniff::misplaced(source, text, Some(&docs), crate::sniff::FileKind::Scenario)
    {
        return Err(e);
    }
    let [doc] = <[Value; 1]>::try_from(docs).map_err(|d| {
        TraceError::at_field(
            source,
            "",
            format!("expected exactly one YAML document, found {}", d.len()),
        )
    })?;
    ksim_api::json::expect_mapping(&doc, "a scenario")
        .map_err(|m| TraceError::at_field(source, "", m))?;
    serde_path_to_error::deserialize::<_, Scenario>(&doc).map_err(|e| {
        let path = e.path().to_string();
        TraceError::at_field(
            source,
            if path == "." { String::new() } else { path },
            crate::sniff::with_did_you_mean(e.inner().to_string()),
        )
    })
}

/// Reads a scenario file and builds its plan.
pub fn load_scenario(path: &Path) -> Result<ScenarioPlan, TraceError> {
    let text = read_text(path)?;
    let name = display_name(path);
    let scenario = parse_scenario(&name, &text)?;
    let base = path.parent().unwrap_or(Path::new("."));
    scenario.plan(&name, base)
}

/// Opens a trace file as a source: CSV when named `*.csv`/`*.csv.gz`, JSON Lines otherwise.
pub fn open_trace(path: &Path) -> Result<BoxedSource, TraceError> {
    if is_csv(path) {
        Ok(Box::new(CsvReader::open(path)?))
    } else {
        Ok(Box::new(NativeReader::open(path)?))
    }
}

/// Builds the nodes of a pool.
pub fn pool_nodes(pool: &NodePool, path: &str) -> Result<Vec<Node>, (String, String)> {
    if pool.name.is_empty() {
        return Err((join_path(path, "name"), "required".into()));
    }
    let mut template = pool.template.clone();
    // The template is nameless; name it so decoding and checks pass, then rename per node.
    if let Some(m) = template.as_object_mut() {
        let meta = m
            .entry("metadata")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(
                "name".into(),
                Value::String(format!("{}-template", pool.name)),
            );
        }
    }
    let node = decode_node(&template, &join_path(path, "template"))?;
    let mut out = Vec::with_capacity(pool.count as usize);
    for i in 0..pool.count {
        let mut n = node.clone();
        let name = format!("{}-{i}", pool.name);
        n.metadata
            .labels
            .insert("ksim.io/pool".into(), pool.name.clone());
        n.metadata
            .labels
            .insert("kubernetes.io/hostname".into(), name.clone());
        n.metadata.uid = format!("uid-node-{name}");
        n.metadata.name = name;
        out.push(n);
    }
    Ok(out)
}

/// Reads a KubeSchedulerConfiguration file (YAML or JSON).
pub fn load_scheduler_config(path: &Path) -> Result<KubeSchedulerConfiguration, TraceError> {
    let name = display_name(path);
    let text = read_text(path)?;
    if crate::sniff::is_json_lines_trace(&text) {
        return Err(TraceError::at_field(
            &name,
            "",
            crate::sniff::FileKind::JsonLinesTrace.hint(),
        ));
    }
    let docs = parse_documents(&name, &text)?;
    if let Some(e) = crate::sniff::misplaced(
        &name,
        &text,
        Some(&docs),
        crate::sniff::FileKind::SchedulerConfig,
    ) {
        return Err(e);
    }
    let items = flatten_items(docs);
    let [doc] = <[Value; 1]>::try_from(items).map_err(|d| {
        TraceError::at_field(
            &name,
            "",
            format!(
                "expected one KubeSchedulerConfiguration, found {} documents",
                d.len()
            ),
        )
    })?;
    scheduler_config_from_value(&name, "", &doc)
}

fn scheduler_config_from_value(
    source: &str,
    prefix: &str,
    v: &Value,
) -> Result<KubeSchedulerConfiguration, TraceError> {
    KubeSchedulerConfiguration::from_value(v)
        .map_err(|e| TraceError::at_field(source, "", e.prefixed(prefix).to_string()))
}

impl Scenario {
    /// The autoscaler's settings checked, with each pool's template taken from the pool.
    fn autoscaler_config(
        &self,
        source: &str,
        a: &ksim_engine::autoscale::AutoscalerConfig,
    ) -> Result<ksim_engine::autoscale::AutoscalerConfig, TraceError> {
        a.validate()
            .map_err(|(f, m)| TraceError::at_field(source, join_path("autoscaler", &f), m))?;
        let mut a = a.clone();
        for (i, p) in a.pools.iter_mut().enumerate() {
            let path = format!("autoscaler.pools[{i}]");
            let Some(pool) = self.cluster.pools.iter().find(|c| c.name == p.pool) else {
                let names: Vec<&str> = self.cluster.pools.iter().map(|c| c.name.as_str()).collect();
                return Err(TraceError::at_field(
                    source,
                    join_path(&path, "pool"),
                    format!(
                        "no pool named {:?} in cluster.pools (pools: {names:?})",
                        p.pool
                    ),
                ));
            };
            if p.template == Node::default() {
                let one = NodePool {
                    count: 1,
                    ..pool.clone()
                };
                let nodes = pool_nodes(&one, &format!("cluster.pools[{i}]"))
                    .map_err(|(f, m)| TraceError::at_field(source, f, m))?;
                if let Some(mut n) = nodes.into_iter().next() {
                    // The autoscaler names each new node and sets its hostname label.
                    n.metadata.name.clear();
                    n.metadata.uid.clear();
                    n.metadata.labels.remove("kubernetes.io/hostname");
                    p.template = n;
                }
            }
        }
        Ok(a)
    }

    /// Reads the files the scenario names (relative to `base`), opens its traces and builds its
    /// generators. Call again for a fresh plan (e.g. one per run of a sweep).
    pub fn plan(&self, source: &str, base: &Path) -> Result<ScenarioPlan, TraceError> {
        if self.name.is_empty() {
            return Err(TraceError::at_field(source, "name", "required"));
        }
        let gates = self.gates(source)?;
        let resolve = |p: &str| -> PathBuf {
            let p = Path::new(p);
            if p.is_absolute() {
                p.to_path_buf()
            } else {
                base.join(p)
            }
        };
        let horizon = self.horizon.map(|d| SimTime(d.0));
        let mut engine = EngineConfig {
            seed: self.seed,
            horizon,
            ..EngineConfig::default()
        };
        if let Some(c) = self.costs {
            engine.costs = c;
        }
        if let Some(o) = self.on_node_removal {
            engine.on_node_removal = o;
        }
        engine.controller_delay = self.controller_delay;
        if let Some(t) = &self.controller_timing {
            t.validate().map_err(|(f, m)| {
                TraceError::at_field(source, format!("controllerTiming.{f}"), m)
            })?;
            engine.controller_timing = t.clone();
        }
        for (k, d) in &self.workload.run_times {
            d.validate().map_err(|m| {
                TraceError::at_field(source, format!("workload.runTimes[{k:?}]"), m)
            })?;
        }
        engine.controller_run_times =
            ksim_engine::config::ControllerRunTimes(self.workload.run_times.clone());
        self.control_plane
            .node_lifecycle
            .validate()
            .map_err(|e| TraceError::at_field(source, "controlPlane.nodeLifecycle", e))?;
        engine.control_plane = self.control_plane.clone();
        if let Some(d) = self.queue.backoff_flush_period {
            engine.backoff_flush_period = d;
        }
        if let Some(d) = self.queue.leftover_flush_period {
            engine.leftover_flush_period = d;
        }
        if let Some(d) = self.queue.max_in_unschedulable {
            engine.max_in_unschedulable = d;
        }
        if let Some(l) = &self.limits {
            engine.limits = l.clone();
        }
        self.control_plane.admission.check().map_err(|(f, m)| {
            TraceError::at_field(source, format!("controlPlane.admission.{f}"), m)
        })?;

        let scheduler = match &self.scheduler {
            None => KubeSchedulerConfiguration::default(),
            Some(SchedulerSpec {
                config_file: Some(_),
                config: Some(_),
            }) => {
                return Err(TraceError::at_field(
                    source,
                    "scheduler",
                    "give configFile or config, not both",
                ))
            }
            Some(SchedulerSpec {
                config_file: Some(f),
                ..
            }) => load_scheduler_config(&resolve(f))?,
            Some(SchedulerSpec {
                config: Some(v), ..
            }) => scheduler_config_from_value(source, "scheduler.config", v)?,
            Some(_) => KubeSchedulerConfiguration::default(),
        };

        let max_nodes = engine.limits.max_nodes;
        let too_many_nodes = |field: String, n: u64| {
            TraceError::at_field(
                source,
                field,
                format!(
                    "{n} nodes is more than the limit of {max_nodes} nodes (raise it with \
                     limits.maxNodes in the scenario)"
                ),
            )
        };
        let mut nodes = Vec::new();
        for f in &self.cluster.nodes_files {
            nodes.extend(load_nodes(&resolve(f))?);
        }
        let mut total = nodes.len() as u64;
        for (i, pool) in self.cluster.pools.iter().enumerate() {
            // Counted before any node is built: the check must not cost what it prevents.
            total += u64::from(pool.count);
            if total > max_nodes {
                return Err(too_many_nodes(format!("cluster.pools[{i}].count"), total));
            }
        }
        if total > max_nodes {
            return Err(too_many_nodes("cluster.nodesFiles".into(), total));
        }
        for (i, pool) in self.cluster.pools.iter().enumerate() {
            let path = format!("cluster.pools[{i}]");
            nodes.extend(
                pool_nodes(pool, &path).map_err(|(f, m)| TraceError::at_field(source, f, m))?,
            );
        }
        if let Some(a) = &self.autoscaler {
            engine.autoscaler = Some(self.autoscaler_config(source, a)?);
        }
        let mut seen = std::collections::BTreeSet::new();
        // Nodes named by generateName are named when the run starts (the run's seed).
        for n in nodes.iter().filter(|n| !n.metadata.name.is_empty()) {
            if !seen.insert(n.metadata.name.as_str()) {
                return Err(TraceError::at_field(
                    source,
                    "cluster",
                    format!(
                        "node name {:?} appears twice across pools and nodes files",
                        n.metadata.name
                    ),
                ));
            }
        }

        let mut objects = ClusterObjects::default();
        // Controller objects by creation time: objectsFiles and controllers entries without
        // `at` at t=0 (one group, so PriorityClasses come first and duplicates are caught
        // across files), later entries each at theirs.
        let mut timed: Vec<(SimTime, Vec<ksim_api::object::ApiObject>)> =
            vec![(SimTime::ZERO, Vec::new())];
        for f in &self.cluster.objects_files {
            load_objects_and_workloads(&resolve(f), &mut objects, &mut timed[0].1)?;
        }
        for e in &self.workload.controllers {
            let at = SimTime(e.at.map_or(0, |d| d.0));
            let i = match timed.iter().position(|(t, _)| *t == at) {
                Some(i) => i,
                None => {
                    timed.push((at, Vec::new()));
                    timed.len() - 1
                }
            };
            if at == SimTime::ZERO {
                load_controllers(&resolve(&e.file), e.scale, &mut objects, &mut timed[i].1)?;
            } else {
                // Created later: not a spreading selector from t=0.
                let mut later = ClusterObjects::default();
                load_controllers(&resolve(&e.file), e.scale, &mut later, &mut timed[i].1)?;
            }
        }
        let mut warnings = Vec::new();
        if let Some(sc) = &self.workload.controller_scale {
            engine.controller_scale.all = sc.all;
            engine.controller_scale.by_name = sc.by_name.clone();
            for k in sc.by_name.keys() {
                let named = timed.iter().flat_map(|(_, w)| w).any(|o| {
                    let ns = if o.namespace().is_empty() {
                        "default"
                    } else {
                        o.namespace()
                    };
                    let kind = o.kind();
                    kind.is_workload()
                        && [
                            format!("{kind}/{ns}/{}", o.name()),
                            format!("{ns}/{}", o.name()),
                            o.name().to_string(),
                        ]
                        .contains(k)
                });
                if !named {
                    warnings.push(format!(
                        "{source}: workload.controllerScale: no controller of cluster.objectsFiles \
                         or workload.controllers is named {k:?} (only one a trace creates can use it)"
                    ));
                }
            }
        }
        warnings.extend(jobs_without_run_time(
            source,
            timed.iter().flat_map(|(_, w)| w),
            &engine.controller_run_times,
        ));
        timed.sort_by_key(|(t, _)| *t);
        // Claims present at t=0 without `storageClassName` get the default class, as
        // upstream's retroactive default assignment gives it to them (the engine admits
        // claims created later the same way).
        if let Some(class) =
            ksim_engine::sim::default_storage_class(&objects.storage.storage_classes)
        {
            for pvc in objects.storage.persistent_volume_claims.values_mut() {
                if pvc.spec.storage_class_name.is_none() {
                    std::sync::Arc::make_mut(pvc).spec.storage_class_name = Some(class.clone());
                }
            }
        }

        let mut sources: Vec<BoxedSource> = Vec::new();
        // The workloads are created at their time, before any trace event of that time.
        let events: Vec<ksim_engine::TimedEvent> = timed
            .into_iter()
            .flat_map(|(at, w)| {
                w.into_iter().map(move |o| ksim_engine::TimedEvent {
                    at,
                    event: ksim_engine::InputEvent::CreateObject {
                        object: Box::new(o),
                    },
                })
            })
            .collect();
        if !events.is_empty() {
            sources.push(Box::new(ksim_engine::VecSource::new(events)));
        }
        for t in &self.workload.traces {
            let path = resolve(t);
            if !crate::io::trace_has_events(&path)? {
                warnings.push(format!("{}: the trace has no event", display_name(&path)));
            }
            sources.push(open_trace(&path)?);
        }
        let mut names = std::collections::BTreeSet::new();
        for (i, g) in self.workload.generators.iter().enumerate() {
            let path = format!("workload.generators[{i}]");
            if !names.insert(g.name.clone()) {
                return Err(TraceError::at_field(
                    source,
                    join_path(&path, "name"),
                    format!("generator name {:?} is used twice", g.name),
                ));
            }
            let max_pods = engine.limits.max_pods_per_generator;
            if let Some(c) = g.count.filter(|c| *c > max_pods) {
                return Err(TraceError::at_field(
                    source,
                    join_path(&path, "count"),
                    format!(
                        "{c} pods is more than the limit of {max_pods} pods per generator \
                         (raise it with limits.maxPodsPerGenerator in the scenario)"
                    ),
                ));
            }
            let gen = Generator::new(g.clone(), self.seed, horizon, &path)
                .map_err(|(f, m)| TraceError::at_field(source, f, m))?;
            sources.push(Box::new(gen));
        }

        Ok(ScenarioPlan {
            name: self.name.clone(),
            source: source.to_string(),
            engine,
            scheduler,
            nodes,
            objects,
            events: MergedSource::new(sources),
            output_dir: self.output.as_deref().map(resolve),
            warnings,
            gates,
        })
    }

    /// The version and feature gates the scenario asks for (`kubernetesVersion`,
    /// `featureGates`), refused as kube-scheduler refuses them.
    pub fn gates(&self, source: &str) -> Result<ksim_api::version::FeatureGates, TraceError> {
        let mut gates =
            ksim_api::version::FeatureGates::new(self.kubernetes_version.unwrap_or_default());
        gates
            .set_from_map(&self.feature_gates)
            .map_err(|e| TraceError::at_field(source, "featureGates", e.to_string()))?;
        Ok(gates)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ksim_engine::EventSource;

    #[test]
    fn unknown_fields_and_bad_values_name_the_path() {
        let cases = [
            ("name: x\ncolour: red\n", "s.yaml: colour: unknown field"),
            ("name: x\ncluster: {pools: [{name: a, count: 1, templat: {}}]}\n", "s.yaml: cluster.pools[0].templat: unknown field"),
            ("name: x\nworkload: {generators: [{name: g, arrival: {sometimes: 1}, shapes: [{}]}]}\n", "s.yaml: workload.generators[0].arrival: unknown variant"),
            ("name: x\nhorizon: soon\n", "s.yaml: horizon: invalid duration"),
            ("name: x\ncosts: {bindLatency: -1s}\n", "s.yaml: costs.bindLatency: negative duration"),
            ("name: x\nseed: -3\n", "s.yaml: seed: invalid value"),
            ("seed: 1\n", "s.yaml: missing field `name`"),
        ];
        for (y, want) in cases {
            let err = parse_scenario("s.yaml", y).unwrap_err().to_string();
            assert!(err.starts_with(want), "{y}\n got {err}\nwant {want}");
        }
    }

    #[test]
    fn plan_errors_name_the_field() {
        let cases = [
            ("name: x\ncluster: {pools: [{name: a, count: 2, template: {status: {capacity: {cpu: lots}}}}]}\n", "s.yaml: cluster.pools[0].template.status.capacity.cpu: quantity \"lots\""),
            ("name: x\nworkload: {generators: [{name: g, arrival: {interval: 1s}, shapes: [{}]}]}\n", "s.yaml: workload.generators[0].count: a generator needs a count"),
            ("name: x\nscheduler: {config: {percentageOfNodesToScore: 200}}\n", "s.yaml: scheduler.config.percentageOfNodesToScore: Invalid value: 200: not in valid range [0-100]"),
            ("name: x\ncluster: {nodesFiles: [missing.yaml]}\n", "./missing.yaml: "),
        ];
        for (y, want) in cases {
            let s = parse_scenario("s.yaml", y).unwrap();
            let err = s.plan("s.yaml", Path::new(".")).unwrap_err().to_string();
            assert!(err.starts_with(want), "{y}\n got {err}\nwant {want}");
        }
    }

    #[test]
    fn plans_pools_generators_and_traces() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("trace.jsonl"),
            "{\"at\": 0, \"kind\": \"CreatePod\", \"pod\": {\"metadata\": {\"name\": \"t0\"}}}\n{\"at\": 5, \"kind\": \"DeletePod\", \"name\": \"t0\"}\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("nodes.yaml"),
            "kind: List\nitems:\n- metadata: {name: big}\n  status: {capacity: {cpu: '64'}}\n",
        )
        .unwrap();
        let yaml = "name: demo\nseed: 3\nhorizon: 10s\ncluster:\n  nodesFiles: [nodes.yaml]\n  pools:\n    - {name: cpu, count: 3, template: {status: {capacity: {cpu: '8', memory: 32Gi}}}}\nworkload:\n  traces: [trace.jsonl]\n  generators:\n    - {name: g, arrival: {interval: 5s}, shapes: [{requests: {cpu: '1'}}]}\nqueue: {maxInUnschedulable: 1m}\noutput: out\n";
        let path = dir.path().join("scenario.yaml");
        std::fs::write(&path, yaml).unwrap();
        let mut plan = load_scenario(&path).unwrap();
        assert_eq!(plan.name, "demo");
        assert_eq!(plan.engine.seed, 3);
        assert_eq!(plan.engine.horizon, Some(SimTime::from_secs(10)));
        assert_eq!(plan.engine.max_in_unschedulable, SimDuration::from_secs(60));
        let names: Vec<_> = plan.nodes.iter().map(|n| n.metadata.name.clone()).collect();
        assert_eq!(names, ["big", "cpu-0", "cpu-1", "cpu-2"]);
        assert_eq!(plan.nodes[2].metadata.labels["ksim.io/pool"], "cpu");
        assert_eq!(
            plan.nodes[2].metadata.labels["kubernetes.io/hostname"],
            "cpu-1"
        );
        assert_eq!(plan.nodes[2].status.allocatable["cpu"].milli_value(), 8000);
        assert_eq!(plan.output_dir, Some(dir.path().join("out")));
        let mut seen = Vec::new();
        while let Some(e) = plan.events.next_event().unwrap() {
            seen.push((e.at.whole_secs(), e.event.kind()));
        }
        // Trace (source 0) before generator (source 1) at equal times.
        assert_eq!(
            seen,
            [
                (0, "CreatePod"),
                (0, "CreatePod"),
                (5, "DeletePod"),
                (5, "CreatePod"),
                (10, "CreatePod")
            ]
        );
    }
}
