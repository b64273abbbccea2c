//! Trace validation: reads a whole trace (native JSON Lines or CSV) and lists every problem with
//! its line, instead of stopping at the first as the run-time readers do:
//!
//! - lines that do not parse (JSON, unknown kinds or fields, bad quantities or durations);
//! - times that go backwards;
//! - references: DeletePod / CompletePod / UpdatePod of a pod the trace never created, CreatePod
//!   of a pod that already exists, AddNode of a node that exists, UpdateNode / RemoveNode of a
//!   node that does not, and CreatePod bound (`spec.nodeName`) to an unknown node. Nodes of the
//!   scenario's nodes files can be passed in [`ValidateOptions::known_nodes`];
//! - objects: CreateObject of an object that exists, UpdateObject / DeleteObject of one the
//!   trace never created (objects of the scenario's objects files can be passed in
//!   [`ValidateOptions::known_objects`]).
//!
//! A pod that ended on its own (its `runFor` elapsed) may still be deleted later by the trace;
//! that is not a problem, so a deletion of an already deleted or completed pod is accepted.
//! Memory grows with the number of distinct pod and node names, not with the trace length.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::path::Path;

use ksim_api::object::ObjectKind;
use ksim_engine::{InputEvent, SimTime, TimedEvent};

use crate::csv_trace::CsvReader;
use crate::error::TraceError;
use crate::io::{display_name, is_csv};
use crate::native::NativeReader;

/// One problem found in a trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub line: Option<u64>,
    pub field: String,
    pub message: String,
}

/// What [`validate_trace`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ValidationReport {
    pub file: String,
    /// Events that parsed.
    pub events: u64,
    pub by_kind: BTreeMap<&'static str, u64>,
    pub first: Option<SimTime>,
    pub last: Option<SimTime>,
    /// At most [`ValidateOptions::max_problems`] problems, in line order.
    pub problems: Vec<Problem>,
    /// Problems found beyond the cap.
    pub more_problems: u64,
}

impl ValidationReport {
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
    /// All problems, including those past the cap.
    pub fn problem_count(&self) -> u64 {
        self.problems.len() as u64 + self.more_problems
    }
}

impl fmt::Display for ValidationReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for p in &self.problems {
            write!(f, "{}", self.file)?;
            if let Some(l) = p.line {
                write!(f, ":{l}")?;
            }
            if !p.field.is_empty() {
                write!(f, ": {}", p.field)?;
            }
            writeln!(f, ": {}", p.message)?;
        }
        if self.more_problems > 0 {
            writeln!(
                f,
                "... and {} more {}",
                self.more_problems,
                plural(self.more_problems, "problem", "problems")
            )?;
        }
        let kinds: Vec<String> = self
            .by_kind
            .iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        write!(
            f,
            "{}: {} {} ({}), {} {}",
            self.file,
            self.events,
            plural(self.events, "event", "events"),
            kinds.join(", "),
            self.problem_count(),
            plural(self.problem_count(), "problem", "problems")
        )?;
        if let (Some(a), Some(b)) = (self.first, self.last) {
            write!(f, ", time {a} .. {b}")?;
        }
        writeln!(f)
    }
}

/// `one` for 1, `many` otherwise ("1 problem", "0 problems").
fn plural(n: u64, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 {
        one
    } else {
        many
    }
}

/// Settings for validation.
#[derive(Debug, Clone)]
pub struct ValidateOptions {
    /// Nodes that exist before the trace starts (from nodes files or pools).
    pub known_nodes: BTreeSet<String>,
    /// Objects that exist before the trace starts (objects files), as
    /// [`object_id`]`(kind, namespace, name)`.
    pub known_objects: BTreeSet<String>,
    /// How many problems to keep in the report (the rest are counted).
    pub max_problems: usize,
    /// The run's version and gates: DRA objects' gated fields are checked against them
    /// (`ksim_api::resource::check_gates`), as `ksim run` checks them.
    pub gates: ksim_api::version::FeatureGates,
}

/// A DRA object's gated fields that the run would refuse: the first field's path (under
/// `object`) and every refusal.
fn gate_problem(
    object: &ksim_api::object::ApiObject,
    opts: &ValidateOptions,
) -> Option<(String, String)> {
    let modelled = ksim_scheduler::plugins::dynamic_resources::MODELLED_GATES;
    let e = ksim_api::resource::check_gates(object, &opts.gates, modelled).err()?;
    let field = e.0.first().map(|f| format!("object.{}", f.field))?;
    Some((field, e.to_string()))
}

/// How [`ValidateOptions::known_objects`] names an object: `Kind/namespace/name`, or
/// `Kind/name` for cluster-scoped kinds.
pub fn object_id(kind: ObjectKind, namespace: &str, name: &str) -> String {
    let ns = match (kind.namespaced(), namespace) {
        (false, _) => "",
        (true, "") => "default",
        (true, ns) => ns,
    };
    format!("{}/{}", kind, kind.key(ns, name))
}

impl Default for ValidateOptions {
    fn default() -> Self {
        ValidateOptions {
            known_nodes: BTreeSet::new(),
            known_objects: BTreeSet::new(),
            max_problems: 1000,
            gates: ksim_api::version::FeatureGates::new(Default::default()),
        }
    }
}

/// Validates a trace file with default options.
pub fn validate_trace(path: &Path) -> Result<ValidationReport, TraceError> {
    validate_trace_with(path, &ValidateOptions::default())
}

/// Validates a trace file (CSV by name, JSON Lines otherwise). Only failing to open the file is
/// an error; everything in it is reported as problems.
pub fn validate_trace_with(
    path: &Path,
    opts: &ValidateOptions,
) -> Result<ValidationReport, TraceError> {
    let file = display_name(path);
    if is_csv(path) {
        let mut r = CsvReader::open(path)?;
        Ok(validate_stream(&file, || r.next_unordered(), opts))
    } else {
        let mut r = NativeReader::open(path)?;
        Ok(validate_stream(&file, || r.next_unordered(), opts))
    }
}

#[derive(Clone, Copy)]
enum PodState {
    Live(u64),
    Gone,
}

/// Validates a stream of `(line, event)` results.
pub fn validate_stream(
    file: &str,
    mut next: impl FnMut() -> Option<Result<(u64, TimedEvent), TraceError>>,
    opts: &ValidateOptions,
) -> ValidationReport {
    let mut rep = ValidationReport {
        file: file.to_string(),
        ..ValidationReport::default()
    };
    let push = |rep: &mut ValidationReport, line: Option<u64>, field: &str, msg: String| {
        if rep.problems.len() < opts.max_problems {
            rep.problems.push(Problem {
                line,
                field: field.to_string(),
                message: msg,
            });
        } else {
            rep.more_problems += 1;
        }
    };
    let mut pods: HashMap<String, PodState> = HashMap::new();
    let mut nodes: HashMap<String, Option<u64>> =
        opts.known_nodes.iter().map(|n| (n.clone(), None)).collect();
    // Object id → the line that created it (`None`: known before the trace).
    let mut objects: HashMap<String, Option<u64>> = opts
        .known_objects
        .iter()
        .map(|o| (o.clone(), None))
        .collect();
    let mut last: Option<(SimTime, u64)> = None;
    while let Some(item) = next() {
        let (line, ev) = match item {
            Ok(x) => x,
            Err(TraceError::Input { at, message }) => {
                push(&mut rep, at.line, &at.field, message);
                continue;
            }
            Err(e @ TraceError::Io { .. }) => {
                push(&mut rep, None, "", e.to_string());
                break;
            }
        };
        rep.events += 1;
        *rep.by_kind.entry(ev.event.kind()).or_default() += 1;
        rep.first.get_or_insert(ev.at);
        match last {
            Some((t, l)) if ev.at < t => push(
                &mut rep,
                Some(line),
                "at",
                format!(
                    "time {} is before the previous event's {t} (line {l})",
                    ev.at
                ),
            ),
            _ => last = Some((ev.at, line)),
        }
        rep.last = Some(last.map(|(t, _)| t).unwrap_or(ev.at));
        match &ev.event {
            InputEvent::CreatePod { pod, .. } => {
                let key = pod.key();
                if let Some(PodState::Live(l)) = pods.get(&key) {
                    let msg =
                        format!("pod {key} is created again while it exists (created at line {l})");
                    push(&mut rep, Some(line), "pod.metadata.name", msg);
                }
                pods.insert(key, PodState::Live(line));
                let nn = &pod.spec.node_name;
                if !nn.is_empty() && !nodes.contains_key(nn) {
                    let msg = format!("pod is bound to node {nn:?}, which does not exist");
                    push(&mut rep, Some(line), "pod.spec.nodeName", msg);
                }
            }
            InputEvent::DeletePod { namespace, name }
            | InputEvent::CompletePod { namespace, name } => {
                let key = format!("{namespace}/{name}");
                match pods.get(&key) {
                    None => push(
                        &mut rep,
                        Some(line),
                        "name",
                        format!(
                            "{} of pod {key}, which the trace never created",
                            ev.event.kind()
                        ),
                    ),
                    Some(_) => {
                        pods.insert(key, PodState::Gone);
                    }
                }
            }
            InputEvent::UpdatePod { pod } => {
                let key = pod.key();
                match pods.get(&key) {
                    Some(PodState::Live(_)) => {}
                    Some(PodState::Gone) => push(
                        &mut rep,
                        Some(line),
                        "pod.metadata.name",
                        format!("UpdatePod of pod {key}, which was already deleted"),
                    ),
                    None => push(
                        &mut rep,
                        Some(line),
                        "pod.metadata.name",
                        format!("UpdatePod of pod {key}, which the trace never created"),
                    ),
                }
            }
            InputEvent::AddNode { node } => {
                let name = &node.metadata.name;
                if let Some(at) = nodes.get(name) {
                    let msg = match at {
                        Some(l) => format!("node {name:?} is added again (added at line {l})"),
                        None => format!("node {name:?} already exists in the initial cluster"),
                    };
                    push(&mut rep, Some(line), "node.metadata.name", msg);
                }
                nodes.insert(name.clone(), Some(line));
            }
            InputEvent::UpdateNode { node } => {
                let name = &node.metadata.name;
                if !nodes.contains_key(name) {
                    push(
                        &mut rep,
                        Some(line),
                        "node.metadata.name",
                        format!("UpdateNode of node {name:?}, which does not exist"),
                    );
                }
            }
            InputEvent::FailNode { name } | InputEvent::RecoverNode { name } => {
                if !nodes.contains_key(name) {
                    push(
                        &mut rep,
                        Some(line),
                        "name",
                        format!("{} of node {name:?}, which does not exist", ev.event.kind()),
                    );
                }
            }
            InputEvent::RemoveNode { name } => {
                if nodes.remove(name).is_none() {
                    push(
                        &mut rep,
                        Some(line),
                        "name",
                        format!("RemoveNode of node {name:?}, which does not exist"),
                    );
                }
            }
            InputEvent::CreateObject { object } | InputEvent::UpdateObject { object }
                if gate_problem(object, opts).is_some() =>
            {
                if let Some((field, msg)) = gate_problem(object, opts) {
                    push(&mut rep, Some(line), &field, msg);
                }
            }
            InputEvent::CreateObject { object } => {
                let id = object_id(object.kind(), object.namespace(), object.name());
                if let Some(at) = objects.get(&id) {
                    let msg = match at {
                        Some(l) => {
                            format!("{id} is created again while it exists (created at line {l})")
                        }
                        None => format!("{id} already exists in the initial cluster"),
                    };
                    push(&mut rep, Some(line), "object.metadata.name", msg);
                }
                objects.insert(id, Some(line));
            }
            InputEvent::UpdateObject { object } => {
                let id = object_id(object.kind(), object.namespace(), object.name());
                if !objects.contains_key(&id) {
                    push(
                        &mut rep,
                        Some(line),
                        "object.metadata.name",
                        format!("UpdateObject of {id}, which does not exist"),
                    );
                }
            }
            InputEvent::DeleteObject {
                object_kind,
                namespace,
                name,
            } => {
                let id = object_id(*object_kind, namespace, name);
                if objects.remove(&id).is_none() {
                    push(
                        &mut rep,
                        Some(line),
                        "name",
                        format!("DeleteObject of {id}, which does not exist"),
                    );
                }
            }
        }
    }
    rep
}

#[cfg(test)]
mod tests {
    use super::*;

    fn validate(text: &str) -> ValidationReport {
        let mut r = NativeReader::new("t.jsonl", text.as_bytes());
        validate_stream(
            "t.jsonl",
            || r.next_unordered(),
            &ValidateOptions::default(),
        )
    }

    #[test]
    fn lists_every_problem_with_its_line() {
        let text = r#"{"at": 0, "kind": "AddNode", "node": {"metadata": {"name": "n1"}, "status": {"capacity": {"cpu": "1"}}}}
{"at": 1, "kind": "CreatePod", "pod": {"metadata": {"name": "a"}}}
{"at": 2, "kind": "CreatePod", "pod": {"metadata": {"name": "b"}, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]}}}
{"at": 0, "kind": "DeletePod", "name": "ghost"}
{"at": 3, "kind": "UpdateNode", "node": {"metadata": {"name": "n9"}, "status": {"capacity": {"cpu": "1"}}}}
{"at": 4, "kind": "CreatePod", "pod": {"metadata": {"name": "a"}}}
{"at": 5, "kind": "CreatePod", "pod": {"metadata": {"name": "c"}, "spec": {"nodeName": "n2"}}}
{"at": 6, "kind": "RemoveNode", "name": "n1"}
{"at": 7, "kind": "RemoveNode", "name": "n1"}
{"at": 8, "kind": "AddNode", "node": {"metadata": {"name": "n1"}, "status": {"capacity": {"cpu": "1"}}}}
{"at": 9, "kind": "Oops"}
"#;
        let rep = validate(text);
        let got: Vec<(Option<u64>, &str)> = rep
            .problems
            .iter()
            .map(|p| (p.line, p.field.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (Some(3), "pod.spec.containers[0].resources.requests.cpu"),
                (Some(4), "at"),
                (Some(4), "name"),
                (Some(5), "node.metadata.name"),
                (Some(6), "pod.metadata.name"),
                (Some(7), "pod.spec.nodeName"),
                (Some(9), "name"),
                (Some(11), "kind"),
            ],
            "{rep}"
        );
        assert_eq!(rep.events, 9);
        let shown = rep.to_string();
        assert!(
            shown.contains(
                "t.jsonl:4: name: DeletePod of pod default/ghost, which the trace never created"
            ),
            "{shown}"
        );
    }

    #[test]
    fn dra_gated_fields_are_checked_against_the_gates() {
        let text = r#"{"at": 0, "kind": "CreateObject", "object": {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "s"}, "spec": {"driver": "d.example.com", "nodeName": "n1", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1}, "devices": [{"name": "gpu-0", "taints": [{"key": "k", "effect": "NoSchedule"}]}]}}}
"#;
        let mut r = NativeReader::new("t.jsonl", text.as_bytes());
        let opts = ValidateOptions {
            gates: ksim_api::version::FeatureGates::new(
                ksim_api::version::KubernetesVersion::V1_35,
            ),
            ..ValidateOptions::default()
        };
        let rep = validate_stream("t.jsonl", || r.next_unordered(), &opts);
        assert_eq!(rep.problems.len(), 1, "{rep}");
        let p = &rep.problems[0];
        assert_eq!(p.line, Some(1));
        assert_eq!(p.field, "object.spec.devices[0].taints");
        assert!(
            p.message
                .contains("the DRADeviceTaints feature gate is off in this run"),
            "{}",
            p.message
        );
    }

    #[test]
    fn object_references_are_checked() {
        let text = r#"{"at": 0, "kind": "CreateObject", "object": {"kind": "PersistentVolume", "metadata": {"name": "pv1"}}}
{"at": 1, "kind": "CreateObject", "object": {"kind": "PersistentVolume", "metadata": {"name": "pv1"}}}
{"at": 2, "kind": "UpdateObject", "object": {"kind": "StorageClass", "metadata": {"name": "local"}}}
{"at": 3, "kind": "UpdateObject", "object": {"kind": "StorageClass", "metadata": {"name": "known"}}}
{"at": 4, "kind": "DeleteObject", "objectKind": "PersistentVolume", "name": "pv1"}
{"at": 5, "kind": "DeleteObject", "objectKind": "PersistentVolumeClaim", "name": "data"}
"#;
        let mut r = NativeReader::new("t.jsonl", text.as_bytes());
        let opts = ValidateOptions {
            known_objects: [object_id(ObjectKind::StorageClass, "", "known")].into(),
            ..ValidateOptions::default()
        };
        let rep = validate_stream("t.jsonl", || r.next_unordered(), &opts);
        let got: Vec<(Option<u64>, &str)> = rep
            .problems
            .iter()
            .map(|p| (p.line, p.message.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    Some(2),
                    "PersistentVolume/pv1 is created again while it exists (created at line 1)"
                ),
                (
                    Some(3),
                    "UpdateObject of StorageClass/local, which does not exist"
                ),
                (
                    Some(6),
                    "DeleteObject of PersistentVolumeClaim/default/data, which does not exist"
                ),
            ],
            "{rep}"
        );
    }

    #[test]
    fn a_clean_trace_has_no_problems() {
        let text = "{\"at\": 0, \"kind\": \"CreatePod\", \"pod\": {\"metadata\": {\"name\": \"a\"}}, \"runFor\": 5}\n{\"at\": 9, \"kind\": \"DeletePod\", \"name\": \"a\"}\n";
        let rep = validate(text);
        assert!(rep.is_ok(), "{rep}");
        assert_eq!(rep.by_kind["CreatePod"], 1);
    }
}
