//! Importers: public cluster traces, kubectl dumps, audit logs and SimKube traces converted into
//! a nodes file (`nodes.yaml`, a Kubernetes List) and a native trace (`trace.jsonl`).
//!
//! Entry point: [`import`] with an [`ImportFormat`], the input files, the output folder and
//! [`ImportOptions`]; it returns an [`ImportSummary`] with what was read, converted and skipped
//! (with reasons) and the approximations made, for the CLI to print as a table.
//!
//! Every importer streams its inputs row by row; events go through [`sink::EventSink`], an
//! external sort, so the trace comes out in time order with bounded memory. Malformed rows are
//! errors naming the file, line and column; rows that are well-formed but cannot be replayed
//! (outside the trace window, missing requests, unknown verbs) are skipped and counted by reason.
//!
//! GPU resources: every Alibaba importer uses the openb trace's own scheme (its node YAML and the
//! FGD artifact): nodes carry the extended resources `alibabacloud.com/gpu-count` (GPUs) and
//! `alibabacloud.com/gpu-milli` (1000 per GPU) and the label `alibabacloud.com/gpu-card-model`;
//! pods request `alibabacloud.com/gpu-milli` = GPUs × milli per GPU, plus
//! `alibabacloud.com/gpu-count` when they take whole GPUs, and carry the per-GPU split in the
//! annotations `alibabacloud.com/gpu-milli` (milli per GPU) and `alibabacloud.com/gpu-count` as
//! the artifact does, so a GPU-sharing plugin can place them on single GPUs. The aggregate
//! extended-resource check alone lets a shared pod straddle two half-free GPUs; only a
//! GPU-aware plugin can refuse that.

pub mod alibaba;
pub mod audit;
mod audit_dra;
pub mod borg;
pub mod kube_dump;
pub mod openb;
pub mod rows;
pub mod simkube;
pub mod sink;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use ksim_api::{Node, Quantity};

use crate::error::TraceError;
use crate::scenario::NodePool;
pub use sink::EventSink;

/// Resource and label names shared by the Alibaba importers (see the module doc).
pub mod gpu {
    pub const COUNT: &str = "alibabacloud.com/gpu-count";
    pub const MILLI: &str = "alibabacloud.com/gpu-milli";
    pub const MODEL: &str = "alibabacloud.com/gpu-card-model";
}

/// The formats [`import`] reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum ImportFormat {
    /// Alibaba cluster-trace-gpu-v2023 (openb): node lists (csv or yaml) and pod lists.
    Openb,
    /// Alibaba cluster-trace-v2017: server_event.csv and batch_task.csv.
    AlibabaV2017,
    /// Alibaba cluster-trace-v2018: machine_meta, container_meta, batch_task.
    AlibabaV2018,
    /// Alibaba cluster-trace-gpu-v2020 machine spec (node inventory only).
    AlibabaV2020Machines,
    /// Alibaba cluster-trace-gpu-v2025 disaggregated DLRM instances.
    AlibabaV2025Dlrm,
    /// Alibaba cluster-trace-v2026-spot-gpu node list (node inventory only).
    AlibabaV2026SpotNodes,
    /// Google cluster-data 2011 (machine_events, task_events csv parts).
    Borg2011,
    /// Google cluster-data 2019 (BigQuery JSON exports of MachineEvents and InstanceEvents).
    Borg2019,
    /// `kubectl get nodes,pods,pdb,priorityclasses -A -o json|yaml`.
    KubeDump,
    /// Kubernetes audit log (audit.k8s.io/v1 Event JSON lines).
    AuditLog,
    /// SimKube trace (msgpack).
    SimKube,
}

impl ImportFormat {
    /// Every format with its command-line name and a one-line description.
    pub const ALL: [(ImportFormat, &'static str, &'static str); 11] = [
        (
            ImportFormat::Openb,
            "alibaba-openb",
            "Alibaba GPU v2023 (openb): node list + pod lists",
        ),
        (
            ImportFormat::AlibabaV2017,
            "alibaba-v2017",
            "Alibaba v2017: server_event.csv + batch_task.csv",
        ),
        (
            ImportFormat::AlibabaV2018,
            "alibaba-v2018",
            "Alibaba v2018: machine_meta, container_meta, batch_task",
        ),
        (
            ImportFormat::AlibabaV2020Machines,
            "alibaba-v2020-machines",
            "Alibaba GPU v2020: pai_machine_spec.csv (nodes only)",
        ),
        (
            ImportFormat::AlibabaV2025Dlrm,
            "alibaba-v2025-dlrm",
            "Alibaba GPU v2025 DLRM instances (nodes from --node-pool)",
        ),
        (
            ImportFormat::AlibabaV2026SpotNodes,
            "alibaba-v2026-spot-nodes",
            "Alibaba v2026 spot GPU node_info_df.csv (nodes only)",
        ),
        (
            ImportFormat::Borg2011,
            "borg-2011",
            "Google cluster-data 2011: machine_events + task_events",
        ),
        (
            ImportFormat::Borg2019,
            "borg-2019",
            "Google cluster-data 2019: machine/instance events as JSON lines",
        ),
        (
            ImportFormat::KubeDump,
            "kube-dump",
            "kubectl get nodes,pods,pdb,priorityclasses -A -o json|yaml",
        ),
        (
            ImportFormat::AuditLog,
            "audit-log",
            "Kubernetes audit log (audit.k8s.io/v1 JSON lines)",
        ),
        (
            ImportFormat::SimKube,
            "simkube",
            "SimKube trace (msgpack .sktrace)",
        ),
    ];

    pub fn name(self) -> &'static str {
        ImportFormat::ALL
            .iter()
            .find(|(f, _, _)| *f == self)
            .map(|(_, n, _)| *n)
            .unwrap_or("?")
    }
}

impl ImportFormat {
    /// The input that carries the nodes, for the "0 nodes written" error; `None` for traces
    /// that never carry nodes (SimKube, DLRM) or may not (an audit log of pods only).
    fn node_input(self) -> Option<&'static str> {
        match self {
            ImportFormat::Openb => Some("openb_node_list_*.csv"),
            ImportFormat::AlibabaV2017 => Some("server_event.csv"),
            ImportFormat::AlibabaV2018 => Some("machine_meta.csv"),
            ImportFormat::AlibabaV2020Machines => Some("pai_machine_spec.csv"),
            ImportFormat::AlibabaV2026SpotNodes => Some("node_info_df.csv"),
            ImportFormat::Borg2011 => Some("the machine_events part files"),
            ImportFormat::Borg2019 => Some("the MachineEvents export"),
            ImportFormat::KubeDump => Some("kubectl get nodes,pods,pdb,priorityclasses -A"),
            ImportFormat::AlibabaV2025Dlrm | ImportFormat::AuditLog | ImportFormat::SimKube => None,
        }
    }
}

impl fmt::Display for ImportFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ImportFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let aliases = [
            ("openb", ImportFormat::Openb),
            ("dlrm", ImportFormat::AlibabaV2025Dlrm),
        ];
        ImportFormat::ALL
            .iter()
            .find(|(_, n, _)| *n == s)
            .map(|(f, _, _)| *f)
            .or_else(|| aliases.iter().find(|(n, _)| *n == s).map(|(_, f)| *f))
            .ok_or_else(|| {
                let names: Vec<&str> = ImportFormat::ALL.iter().map(|(_, n, _)| *n).collect();
                format!(
                    "unknown import format {s:?}; expected one of {}",
                    names.join(", ")
                )
            })
    }
}

/// A machine shape for traces whose resources are normalised (Borg, Alibaba v2017/v2018):
/// what 1.0 of cpu and memory means. Alibaba's memory is normalised to the largest machine
/// (0–1 in v2017, 0–100 in v2018), Borg's cpu and memory to the largest machine.
#[derive(Debug, Clone, PartialEq)]
pub struct MachineShape {
    pub cpu: Quantity,
    pub memory: Quantity,
}

/// Settings of an import.
#[derive(Debug, Clone, Default)]
pub struct ImportOptions {
    /// Node pools for traces without a node inventory (DLRM v2025; optional for others).
    /// Written to `nodes.yaml` after the trace's own nodes.
    pub node_pools: Vec<NodePool>,
    /// What normalised 1.0 means (required by Borg and Alibaba v2017/v2018; the memory of
    /// every node of the v2026 spot list, which has no memory column).
    pub machine: Option<MachineShape>,
    /// Stop after this many pods (a quick excerpt of a large trace).
    pub max_pods: Option<u64>,
    /// Expand at most this many instances per task (Alibaba v2017/v2018 batch tasks have up to
    /// 64,486 instances each).
    pub max_instances_per_task: Option<u64>,
    /// Namespace for pods of traces that have none (default `default`).
    pub namespace: Option<String>,
}

impl ImportOptions {
    pub(crate) fn namespace(&self) -> String {
        self.namespace.clone().unwrap_or_else(|| "default".into())
    }

    pub(crate) fn machine(&self, format: ImportFormat) -> Result<&MachineShape, TraceError> {
        self.machine.as_ref().ok_or_else(|| {
            TraceError::at_field(
                format.name(),
                "machine",
                "this trace's resources are normalised: give a machine shape (cpu and memory of a 1.0 machine)",
            )
        })
    }
}

/// What an import read, wrote and skipped.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportSummary {
    pub format: Option<ImportFormat>,
    pub nodes_file: PathBuf,
    pub trace_file: PathBuf,
    /// Other files written (e.g. `objects.yaml` with PodDisruptionBudgets).
    pub other_files: Vec<PathBuf>,
    /// Rows (lines, objects) read per input file.
    pub read: BTreeMap<String, u64>,
    /// Nodes written to the nodes file.
    pub nodes: u64,
    /// Events written, by kind.
    pub events: BTreeMap<String, u64>,
    /// Rows not converted, by reason.
    pub skipped: BTreeMap<String, u64>,
    /// Mapping choices and approximations the user should know about.
    pub notes: Vec<String>,
    /// CreatePod events of pods already bound to a node (`spec.nodeName`, e.g. a dump's running
    /// pods) at t=0 of the written trace: placed there, never scheduled by the run.
    pub pods_bound_at_start: u64,
    /// The same, created later in the trace.
    pub pods_bound_later: u64,
}

impl ImportSummary {
    pub(crate) fn skip(&mut self, reason: impl Into<String>) {
        *self.skipped.entry(reason.into()).or_default() += 1;
    }

    pub(crate) fn note(&mut self, note: impl Into<String>) {
        let n = note.into();
        if !self.notes.contains(&n) {
            self.notes.push(n);
        }
    }

    /// `(what, count)` rows for a table: inputs read, nodes, events by kind, skips by reason.
    pub fn table_rows(&self) -> Vec<(String, String)> {
        let mut rows = Vec::new();
        for (f, n) in &self.read {
            rows.push((format!("read {f}"), n.to_string()));
        }
        rows.push(("nodes written".into(), self.nodes.to_string()));
        for (k, n) in &self.events {
            rows.push((format!("events {k}"), n.to_string()));
            let bound = self.pods_bound_at_start + self.pods_bound_later;
            if k == "CreatePod" && bound > 0 {
                // Already-bound pods are placed, not scheduled: say so, and how many remain.
                if self.pods_bound_at_start > 0 {
                    rows.push((
                        "  of which already bound: placed at t=0, not scheduled".into(),
                        self.pods_bound_at_start.to_string(),
                    ));
                }
                if self.pods_bound_later > 0 {
                    rows.push((
                        "  of which already bound: placed when created, not scheduled".into(),
                        self.pods_bound_later.to_string(),
                    ));
                }
                rows.push((
                    "  of which to be scheduled".into(),
                    n.saturating_sub(bound).to_string(),
                ));
            }
        }
        for (r, n) in &self.skipped {
            rows.push((format!("skipped: {r}"), n.to_string()));
        }
        rows
    }
}

impl fmt::Display for ImportSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (k, v) in self.table_rows() {
            writeln!(f, "{k:<60} {v:>10}")?;
        }
        for n in &self.notes {
            writeln!(f, "note: {n}")?;
        }
        Ok(())
    }
}

/// What every importer gets: the sink for events, the node list, the summary to fill.
pub struct ImportContext<'a> {
    pub sink: EventSink,
    pub nodes: Vec<Node>,
    pub summary: ImportSummary,
    pub opts: &'a ImportOptions,
    /// Subtracted from every event time when the trace is written.
    pub time_base: i64,
    /// Pods created so far (for `max_pods`).
    pub pods: u64,
    /// Times of the CreatePod events of already-bound pods (for the import table).
    pub bound_times: Vec<i64>,
}

impl ImportContext<'_> {
    /// Whether `max_pods` is reached (importers stop reading pods then).
    pub fn pods_full(&self) -> bool {
        self.opts.max_pods.is_some_and(|m| self.pods >= m)
    }
}

/// Converts `inputs` of `format` into `out_dir/nodes.yaml` and `out_dir/trace.jsonl`. A
/// failed import leaves no folder behind that it created (an existing one keeps what it had).
pub fn import(
    format: ImportFormat,
    inputs: &[PathBuf],
    out_dir: &Path,
    opts: &ImportOptions,
) -> Result<ImportSummary, TraceError> {
    // The folders this import creates: out_dir and any missing parents, deepest first.
    let mut created = Vec::new();
    let mut p = Some(out_dir);
    while let Some(d) = p.filter(|d| !d.as_os_str().is_empty() && !d.exists()) {
        created.push(d.to_path_buf());
        p = d.parent();
    }
    let result = import_into(format, inputs, out_dir, opts);
    if result.is_err() {
        let _ =
            std::fs::remove_dir_all(out_dir.join(format!(".ksim-import-{}", std::process::id())));
        // The topmost folder it created holds nothing but what this import wrote.
        if let Some(top) = created.last() {
            let _ = std::fs::remove_dir_all(top);
        }
    }
    result
}

fn import_into(
    format: ImportFormat,
    inputs: &[PathBuf],
    out_dir: &Path,
    opts: &ImportOptions,
) -> Result<ImportSummary, TraceError> {
    if inputs.is_empty() {
        return Err(TraceError::at_field(
            format.name(),
            "inputs",
            "no input files given",
        ));
    }
    std::fs::create_dir_all(out_dir).map_err(|e| TraceError::io(out_dir, e))?;
    let scratch = out_dir.join(format!(".ksim-import-{}", std::process::id()));
    let mut cx = ImportContext {
        sink: EventSink::new(&scratch),
        nodes: Vec::new(),
        summary: ImportSummary {
            format: Some(format),
            ..ImportSummary::default()
        },
        opts,
        time_base: 0,
        pods: 0,
        bound_times: Vec::new(),
    };
    let result = match format {
        ImportFormat::Openb => openb::import(&mut cx, inputs),
        ImportFormat::AlibabaV2017 => alibaba::import_v2017(&mut cx, inputs),
        ImportFormat::AlibabaV2018 => alibaba::import_v2018(&mut cx, inputs),
        ImportFormat::AlibabaV2020Machines => alibaba::import_v2020_machines(&mut cx, inputs),
        ImportFormat::AlibabaV2025Dlrm => alibaba::import_v2025_dlrm(&mut cx, inputs),
        ImportFormat::AlibabaV2026SpotNodes => alibaba::import_v2026_spot(&mut cx, inputs),
        ImportFormat::Borg2011 => borg::import_2011(&mut cx, inputs),
        ImportFormat::Borg2019 => borg::import_2019(&mut cx, inputs),
        ImportFormat::KubeDump => kube_dump::import(&mut cx, inputs, out_dir),
        ImportFormat::AuditLog => audit::import(&mut cx, inputs),
        ImportFormat::SimKube => simkube::import(&mut cx, inputs),
    };
    if let Err(e) = result {
        let _ = std::fs::remove_dir_all(&scratch);
        return Err(e);
    }
    for (i, pool) in opts.node_pools.iter().enumerate() {
        let nodes = crate::scenario::pool_nodes(pool, &format!("nodePools[{i}]"))
            .map_err(|(f, m)| TraceError::at_field("node pool", f, m))?;
        cx.nodes.extend(nodes);
    }
    if cx.nodes.is_empty() && !cx.sink.counts().contains_key("AddNode") {
        // Written anyway, the next `ksim run` would have nothing to schedule onto (issue 16).
        match format.node_input() {
            Some(input) => {
                let _ = std::fs::remove_dir_all(&scratch);
                return Err(TraceError::at_field(
                    format.name(),
                    "inputs",
                    format!(
                        "0 nodes written: the inputs hold no node; pass the node list too \
                         ({input}) or add nodes with --node-pool"
                    ),
                ));
            }
            None => cx.summary.note(
                "0 nodes written: this kind of trace carries no node; add nodes with \
                 --node-pool, or run the trace with a scenario's pools",
            ),
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for n in &cx.nodes {
        if !seen.insert(n.metadata.name.as_str()) {
            return Err(TraceError::at_field(
                "nodes",
                "metadata.name",
                format!(
                    "node {:?} is defined twice (trace and node pool?)",
                    n.metadata.name
                ),
            ));
        }
    }
    let ImportContext {
        sink,
        nodes,
        mut summary,
        time_base,
        bound_times,
        ..
    } = cx;
    // The written trace's t=0 is `time_base`.
    summary.pods_bound_at_start = bound_times.iter().filter(|&&t| t <= time_base).count() as u64;
    summary.pods_bound_later = bound_times.len() as u64 - summary.pods_bound_at_start;
    summary.nodes_file = out_dir.join("nodes.yaml");
    summary.trace_file = out_dir.join("trace.jsonl");
    summary.nodes = nodes.len() as u64;
    crate::nodes::write_nodes(&summary.nodes_file, &nodes)?;
    summary.events = sink
        .counts()
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    sink.finish(&summary.trace_file, time_base)?;
    Ok(summary)
}

/// Helpers shared by the importers.
pub(crate) mod build {
    use ksim_api::defaults::{default_node, default_pod};
    use ksim_api::{Container, Labels, Node, Pod, Quantity, ResourceList};
    use ksim_engine::{InputEvent, SimDuration};

    use super::ImportContext;
    use crate::check;
    use crate::error::TraceError;

    /// A pod with one container `main` requesting `requests`, defaulted.
    pub fn pod(namespace: &str, name: &str, requests: ResourceList) -> Pod {
        let mut p = Pod::default();
        p.metadata.name = name.to_string();
        p.metadata.namespace = namespace.to_string();
        p.spec.containers.push(Container {
            name: "main".into(),
            ..Container::default()
        });
        p.spec.containers[0].resources.requests = requests;
        default_pod(&mut p);
        p
    }

    /// A node with `capacity` (allocatable = capacity), the kubelet's hostname and os labels,
    /// and `pods: 110` unless given.
    pub fn node(name: &str, mut capacity: ResourceList, labels: Labels) -> Node {
        let mut n = Node::default();
        n.metadata.name = name.to_string();
        n.metadata.labels = labels;
        n.metadata
            .labels
            .insert("kubernetes.io/hostname".into(), name.to_string());
        n.metadata
            .labels
            .entry("kubernetes.io/os".into())
            .or_insert_with(|| "linux".into());
        capacity
            .entry("pods".into())
            .or_insert_with(|| Quantity::from_value(110));
        n.status.capacity = capacity;
        default_node(&mut n);
        n
    }

    /// Millicores as a quantity.
    pub fn milli(m: i64) -> Quantity {
        Quantity::from_milli(m)
    }

    /// Bytes as a quantity (written in Mi when whole).
    pub fn bytes(b: i64) -> Quantity {
        if b % (1 << 20) == 0 {
            Quantity::parse(&format!("{}Mi", b >> 20)).unwrap_or_else(|_| Quantity::from_value(b))
        } else {
            Quantity::from_value(b)
        }
    }

    /// Seconds (possibly fractional) to microseconds, checked against the 100-year limit.
    pub fn secs_to_micros(s: f64) -> Result<i64, String> {
        if !s.is_finite() || s.abs() > check::MAX_TIME_SECS as f64 {
            return Err(format!("{s} seconds is out of range"));
        }
        Ok((s * 1e6).round() as i64)
    }

    /// Checks a pod's quantities (as every reader does) and pushes a CreatePod.
    pub fn create(
        cx: &mut ImportContext<'_>,
        at: i64,
        pod: Pod,
        run_for: Option<SimDuration>,
        err: impl Fn(String) -> TraceError,
    ) -> Result<(), TraceError> {
        check::check_pod(&pod).map_err(|(f, m)| err(format!("{f}: {m}")))?;
        if let Some(d) = run_for {
            check::check_duration(d).map_err(&err)?;
        }
        cx.pods += 1;
        if !pod.spec.node_name.is_empty() {
            cx.bound_times.push(at);
        }
        cx.sink.push(
            at,
            InputEvent::CreatePod {
                pod: Box::new(pod),
                run_for,
            },
        )
    }

    /// Checks a node's quantities.
    pub fn checked(node: Node, err: impl Fn(String) -> TraceError) -> Result<Node, TraceError> {
        check::check_node(&node).map_err(|(f, m)| err(format!("{f}: {m}")))?;
        Ok(node)
    }
}
