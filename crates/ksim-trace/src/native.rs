//! The native trace: JSON Lines, one input event per line, in non-decreasing time.
//!
//! ```text
//! {"at": "1.5s", "kind": "CreatePod", "pod": {<Kubernetes Pod JSON>}, "runFor": "10m"}
//! {"at": 30, "kind": "DeletePod", "namespace": "default", "name": "web-1"}
//! {"at": "1m", "kind": "CompletePod", "namespace": "default", "name": "batch-7"}
//! {"at": "1m", "kind": "UpdatePod", "pod": {...}}
//! {"at": "2m", "kind": "AddNode", "node": {<Kubernetes Node JSON>}}
//! {"at": "2m", "kind": "UpdateNode", "node": {...}}
//! {"at": "3m", "kind": "RemoveNode", "name": "node-3"}
//! {"at": "4m", "kind": "CreateObject", "object": {"kind": "PersistentVolume", ...}}
//! {"at": "4m", "kind": "UpdateObject", "object": {"kind": "StorageClass", ...}}
//! {"at": "5m", "kind": "DeleteObject", "objectKind": "PersistentVolumeClaim", "namespace": "db", "name": "data-db-0"}
//! ```
//!
//! Rules (the reader enforces them; the writer produces them):
//! - `at` (time since the start of the run) and `runFor` are Go-style durations (`"1h2m3.5s"`,
//!   `"250ms"`) or plain numbers of seconds (`90`, `1.5`); negative values and values over 100
//!   years are errors. `runFor` is optional: without it the pod runs until deleted or the horizon.
//! - Times never decrease from one line to the next; equal times keep their file order.
//! - Allowed top-level fields are exactly `at`, `kind` and the fields of that kind (above); any
//!   other field, or a field of another kind, is an error, as is an unknown `kind`.
//! - DeletePod / CompletePod: `namespace` may be omitted and means `default`.
//! - CreateObject / UpdateObject carry one Kubernetes object whose `kind` is one of
//!   [`ObjectKind::ALL`]: PersistentVolume, PersistentVolumeClaim, StorageClass, CSINode,
//!   CSIDriver, CSIStorageCapacity, VolumeAttachment, PodDisruptionBudget, Service (generic
//!   events rather than one event kind per object kind, so a new kind needs no new event).
//!   DeleteObject names the object by `objectKind`, `name` and, for namespaced kinds,
//!   `namespace` (default `default`; cluster-scoped kinds take none).
//! - Pods and nodes are Kubernetes objects as `kubectl get -o json` writes them (unknown fields
//!   inside them are ignored, as kubectl's own output has many); the API server's defaulting is
//!   applied (`ksim_api::defaults`), and quantities are checked (see [`crate::check`]).
//! - Blank lines and lines whose first non-blank character is `#` are skipped, so traces can
//!   carry comments (a JSON value never starts with `#`). The writer writes neither.
//! - Errors name the file, the line and the field path:
//!   `trace.jsonl:17: pod.spec.containers[0].resources.requests.cpu: quantity "lots" is ...`.
//!
//! The reader streams: it holds one line at a time.

use std::io::{BufRead, Write};
use std::path::Path;

use ksim_api::defaults::{default_node, default_pod};
use ksim_api::load::LoadError;
use ksim_api::object::{ApiObject, ObjectKind};
use ksim_api::{Node, Pod};
use ksim_engine::{
    EventSource, InputEvent, SimDuration, SimTime, SourceError, SourcePos, TimedEvent,
};
use serde_json::{Map, Value};

use crate::check::{self, FieldProblem};
use crate::error::{join_path, TraceError};
use crate::io::{create_output, display_name, open_input, InputReader, Output};

/// Every event kind the native trace knows.
pub const KINDS: [&str; 12] = [
    "CreatePod",
    "DeletePod",
    "CompletePod",
    "UpdatePod",
    "AddNode",
    "UpdateNode",
    "RemoveNode",
    "FailNode",
    "RecoverNode",
    "CreateObject",
    "UpdateObject",
    "DeleteObject",
];

/// The fields each kind takes besides `at` and `kind` (required ones first).
fn fields_of(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "CreatePod" => &["pod", "runFor"],
        "DeletePod" | "CompletePod" => &["name", "namespace"],
        "UpdatePod" => &["pod"],
        "AddNode" | "UpdateNode" => &["node"],
        "RemoveNode" | "FailNode" | "RecoverNode" => &["name"],
        "CreateObject" | "UpdateObject" => &["object"],
        "DeleteObject" => &["objectKind", "name", "namespace"],
        _ => return None,
    })
}

const ALL_FIELDS: [&str; 9] = [
    "at",
    "kind",
    "pod",
    "runFor",
    "node",
    "namespace",
    "name",
    "object",
    "objectKind",
];

/// Decodes a pod from JSON, applies API-server defaulting and checks it. Field paths in errors
/// are prefixed with `prefix` (e.g. `pod`).
pub fn decode_pod(v: &Value, prefix: &str) -> Result<Pod, FieldProblem> {
    if !v.is_object() {
        return Err((
            prefix.to_string(),
            format!("expected a Pod object, got {v}"),
        ));
    }
    check_kind_and_fields("Pod", v, prefix)?;
    let mut pod: Pod = decode_value(v, prefix)?;
    default_pod(&mut pod);
    check::check_pod(&pod).map_err(|(f, m)| (join_path(prefix, &f), m))?;
    Ok(pod)
}

/// Decodes a node from JSON, applies defaulting (allocatable = capacity when absent) and checks
/// it, name included.
pub fn decode_node(v: &Value, prefix: &str) -> Result<Node, FieldProblem> {
    let node = decode_node_to_add(v, prefix)?;
    require_name(&node.metadata, "node", prefix)?;
    Ok(node)
}

/// The object's name, required where no API server names it (initial objects, updates):
/// `generateName` only applies to creation events.
fn require_name(meta: &ksim_api::ObjectMeta, kind: &str, prefix: &str) -> Result<(), FieldProblem> {
    if meta.name.is_empty() {
        return Err((
            join_path(prefix, "metadata.name"),
            format!("a {kind} needs a name"),
        ));
    }
    Ok(())
}

/// As [`decode_node`] for an `AddNode` event: a node with `metadata.generateName` and no name is
/// accepted (the merged source names it).
pub fn decode_node_to_add(v: &Value, prefix: &str) -> Result<Node, FieldProblem> {
    if !v.is_object() {
        return Err((
            prefix.to_string(),
            format!(
                "expected a Node object, got {}",
                ksim_api::json::value_kind(v)
            ),
        ));
    }
    check_kind_and_fields("Node", v, prefix)?;
    let mut node: Node = decode_value(v, prefix)?;
    default_node(&mut node);
    check::check_node(&node).map_err(|(f, m)| (join_path(prefix, &f), m))?;
    Ok(node)
}

/// Decodes a storage object, PDB or Service from its Kubernetes JSON (dispatching on `kind`),
/// applies defaulting and checks its quantities.
pub fn decode_object(v: &Value, prefix: &str) -> Result<ApiObject, FieldProblem> {
    let obj = decode_object_to_create(v, prefix)?;
    require_name(obj.metadata(), obj.kind().as_str(), prefix)?;
    Ok(obj)
}

/// As [`decode_object`] for a `CreateObject` event: an object with `metadata.generateName` and
/// no name is accepted (the merged source names it).
pub fn decode_object_to_create(v: &Value, prefix: &str) -> Result<ApiObject, FieldProblem> {
    let mut obj = ApiObject::from_value("", v).map_err(|e| match e {
        LoadError::Field { path, message, .. } => (join_path(prefix, &path), message),
        other => (prefix.to_string(), other.to_string()),
    })?;
    obj.apply_defaults();
    check::check_object(&obj).map_err(|(f, m)| (join_path(prefix, &f), m))?;
    Ok(obj)
}

/// `kind` (when given) must be `want`; then `apiVersion` and the fields as the API server's
/// strict field validation checks them (`ksim_api::strict`).
fn check_kind_and_fields(want: &str, v: &Value, prefix: &str) -> Result<(), FieldProblem> {
    match v.get("kind") {
        None | Some(Value::Null) => {}
        Some(Value::String(k)) if k == want => {}
        Some(Value::String(k)) if k.is_empty() => {}
        Some(other) => {
            return Err((
                join_path(prefix, "kind"),
                format!("expected {want}, got {other}"),
            ))
        }
    }
    ksim_api::strict::check_document(want, v).map_err(|(f, m)| (join_path(prefix, &f), m))
}

fn decode_value<T: serde::de::DeserializeOwned>(
    v: &Value,
    prefix: &str,
) -> Result<T, FieldProblem> {
    ksim_api::load::decode::<T>("", v).map_err(|e| match e {
        LoadError::Field { path, message, .. } => (join_path(prefix, &path), message),
        other => (prefix.to_string(), other.to_string()),
    })
}

fn required_str(obj: &Map<String, Value>, field: &str) -> Result<String, FieldProblem> {
    match obj.get(field) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(Value::String(_)) => Err((field.into(), "must not be empty".into())),
        Some(other) => Err((field.into(), format!("expected a string, got {other}"))),
        None => Err((field.into(), "required".into())),
    }
}

/// Parses one line of a native trace. `Ok(None)` for blank and comment lines.
pub fn parse_event_line(text: &str) -> Result<Option<TimedEvent>, FieldProblem> {
    let t = ksim_api::json::strip_bom(text).trim();
    if t.is_empty() || t.starts_with('#') {
        return Ok(None);
    }
    let v: Value = ksim_api::json::parse_value(t)
        .map_err(|e| (String::new(), format!("not valid JSON: {e}")))?;
    let Value::Object(obj) = v else {
        return Err((
            String::new(),
            "expected a JSON object with \"at\" and \"kind\"".into(),
        ));
    };
    parse_event_object(&obj).map(Some)
}

/// Parses one event given as a JSON object (a native trace line).
pub fn parse_event_object(obj: &Map<String, Value>) -> Result<TimedEvent, FieldProblem> {
    for key in obj.keys() {
        if !ALL_FIELDS.contains(&key.as_str()) {
            return Err((
                key.clone(),
                format!("unknown field; expected one of {}", ALL_FIELDS.join(", ")),
            ));
        }
    }
    let kind = match obj.get("kind") {
        Some(Value::String(k)) => k.as_str(),
        Some(other) => return Err(("kind".into(), format!("expected a string, got {other}"))),
        None => return Err(("kind".into(), "required".into())),
    };
    let Some(allowed) = fields_of(kind) else {
        return Err((
            "kind".into(),
            format!(
                "unknown kind {kind:?}; expected one of {}",
                KINDS.join(", ")
            ),
        ));
    };
    for key in obj.keys() {
        if key != "at" && key != "kind" && !allowed.contains(&key.as_str()) {
            return Err((key.clone(), format!("is not a field of kind {kind}")));
        }
    }
    let at = match obj.get("at") {
        Some(v) => check::parse_time_value(v).map_err(|m| ("at".to_string(), m))?,
        None => return Err(("at".into(), "required".into())),
    };
    let pod = |obj: &Map<String, Value>| -> Result<Box<Pod>, FieldProblem> {
        match obj.get("pod") {
            Some(v) => decode_pod(v, "pod").map(Box::new),
            None => Err(("pod".into(), "required".into())),
        }
    };
    let node = |obj: &Map<String, Value>| -> Result<Box<Node>, FieldProblem> {
        match obj.get("node") {
            Some(v) => decode_node(v, "node").map(Box::new),
            None => Err(("node".into(), "required".into())),
        }
    };
    let namespace = |obj: &Map<String, Value>| -> Result<String, FieldProblem> {
        match obj.get("namespace") {
            None => Ok("default".into()),
            Some(_) => required_str(obj, "namespace"),
        }
    };
    let event = match kind {
        "CreatePod" => {
            let run_for = match obj.get("runFor") {
                None | Some(Value::Null) => None,
                Some(v) => {
                    Some(check::parse_duration_value(v).map_err(|m| ("runFor".to_string(), m))?)
                }
            };
            InputEvent::CreatePod {
                pod: pod(obj)?,
                run_for,
            }
        }
        "DeletePod" => InputEvent::DeletePod {
            namespace: namespace(obj)?,
            name: required_str(obj, "name")?,
        },
        "CompletePod" => InputEvent::CompletePod {
            namespace: namespace(obj)?,
            name: required_str(obj, "name")?,
        },
        "UpdatePod" => InputEvent::UpdatePod { pod: pod(obj)? },
        "AddNode" => InputEvent::AddNode {
            node: match obj.get("node") {
                Some(v) => Box::new(decode_node_to_add(v, "node")?),
                None => return Err(("node".into(), "required".into())),
            },
        },
        "UpdateNode" => InputEvent::UpdateNode { node: node(obj)? },
        "RemoveNode" => InputEvent::RemoveNode {
            name: required_str(obj, "name")?,
        },
        "FailNode" => InputEvent::FailNode {
            name: required_str(obj, "name")?,
        },
        "RecoverNode" => InputEvent::RecoverNode {
            name: required_str(obj, "name")?,
        },
        "CreateObject" | "UpdateObject" => {
            let object = match obj.get("object") {
                Some(v) if kind == "CreateObject" => {
                    Box::new(decode_object_to_create(v, "object")?)
                }
                Some(v) => Box::new(decode_object(v, "object")?),
                None => return Err(("object".into(), "required".into())),
            };
            if kind == "CreateObject" {
                InputEvent::CreateObject { object }
            } else {
                InputEvent::UpdateObject { object }
            }
        }
        "DeleteObject" => {
            let k = required_str(obj, "objectKind")?;
            let Some(object_kind) = ObjectKind::from_kind(&k) else {
                return Err((
                    "objectKind".into(),
                    format!(
                        "unknown object kind {k:?}; expected one of {}",
                        ObjectKind::list()
                    ),
                ));
            };
            let namespace = if object_kind.namespaced() {
                namespace(obj)?
            } else if obj.contains_key("namespace") {
                return Err((
                    "namespace".into(),
                    format!("{object_kind} is cluster-scoped and takes no namespace"),
                ));
            } else {
                String::new()
            };
            InputEvent::DeleteObject {
                object_kind,
                namespace,
                name: required_str(obj, "name")?,
            }
        }
        _ => unreachable!("fields_of accepted only known kinds"),
    };
    Ok(TimedEvent { at, event })
}

/// The JSON object the writer emits for an event (fields in the documented order).
pub fn event_to_json(ev: &TimedEvent) -> Value {
    let mut m = Map::new();
    m.insert(
        "at".into(),
        Value::String(check::format_duration(SimDuration(ev.at.0))),
    );
    m.insert("kind".into(), Value::String(ev.event.kind().into()));
    match &ev.event {
        InputEvent::CreatePod { pod, run_for } => {
            m.insert("pod".into(), to_value(pod.as_ref()));
            if let Some(d) = run_for {
                m.insert("runFor".into(), Value::String(check::format_duration(*d)));
            }
        }
        InputEvent::DeletePod { namespace, name } | InputEvent::CompletePod { namespace, name } => {
            m.insert("namespace".into(), Value::String(namespace.clone()));
            m.insert("name".into(), Value::String(name.clone()));
        }
        InputEvent::UpdatePod { pod } => {
            m.insert("pod".into(), to_value(pod.as_ref()));
        }
        InputEvent::AddNode { node } | InputEvent::UpdateNode { node } => {
            m.insert("node".into(), to_value(node.as_ref()));
        }
        InputEvent::RemoveNode { name }
        | InputEvent::FailNode { name }
        | InputEvent::RecoverNode { name } => {
            m.insert("name".into(), Value::String(name.clone()));
        }
        InputEvent::CreateObject { object } | InputEvent::UpdateObject { object } => {
            m.insert("object".into(), object.to_value());
        }
        InputEvent::DeleteObject {
            object_kind,
            namespace,
            name,
        } => {
            m.insert(
                "objectKind".into(),
                Value::String(object_kind.as_str().into()),
            );
            if object_kind.namespaced() {
                m.insert("namespace".into(), Value::String(namespace.clone()));
            }
            m.insert("name".into(), Value::String(name.clone()));
        }
    }
    Value::Object(m)
}

/// Pod and Node serialise infallibly (string keys only, no non-finite floats), so the
/// fallback is never taken.
fn to_value<T: serde::Serialize>(x: &T) -> Value {
    serde_json::to_value(x).unwrap_or(Value::Null)
}

/// One event as a native trace line (without the newline).
pub fn event_to_line(ev: &TimedEvent) -> String {
    event_to_json(ev).to_string()
}

/// A streaming reader of a native trace.
pub struct NativeReader<R> {
    src: R,
    file: String,
    /// The same name, shared by every event's [`SourcePos`].
    file_name: std::sync::Arc<str>,
    line: u64,
    buf: Vec<u8>,
    last: SimTime,
    last_line: u64,
    failed: bool,
}

impl NativeReader<InputReader> {
    /// Opens a trace file (gzip is recognised).
    pub fn open(path: &Path) -> Result<Self, TraceError> {
        Ok(NativeReader::new(&display_name(path), open_input(path)?))
    }
}

impl<R: BufRead> NativeReader<R> {
    /// A reader over `src`, reporting errors under the name `file`.
    pub fn new(file: &str, src: R) -> Self {
        NativeReader {
            src,
            file: file.to_string(),
            file_name: file.into(),
            line: 0,
            buf: Vec::new(),
            last: SimTime::ZERO,
            last_line: 0,
            failed: false,
        }
    }

    /// The next event and its line, without the ordering check. After an error in one line the
    /// next call goes on with the following line, so a validator can list every problem.
    pub fn next_unordered(&mut self) -> Option<Result<(u64, TimedEvent), TraceError>> {
        loop {
            self.buf.clear();
            match crate::io::read_line_capped(&mut self.src, &mut self.buf) {
                Ok(crate::io::LineRead::Eof) => return None,
                Ok(crate::io::LineRead::Line) => {}
                Ok(crate::io::LineRead::TooLong) => {
                    self.line += 1;
                    return Some(Err(TraceError::at_line(
                        &self.file,
                        self.line,
                        "",
                        crate::io::line_too_long(),
                    )));
                }
                Err(e) => {
                    self.line += 1;
                    return Some(Err(TraceError::at_line(
                        &self.file,
                        self.line,
                        "",
                        format!("cannot read: {e}"),
                    )));
                }
            }
            self.line += 1;
            let text = match std::str::from_utf8(&self.buf) {
                Ok(t) => t,
                Err(e) => {
                    return Some(Err(TraceError::at_line(
                        &self.file,
                        self.line,
                        "",
                        format!("not valid UTF-8: {e}"),
                    )))
                }
            };
            match parse_event_line(text) {
                Ok(None) => continue,
                Ok(Some(ev)) => return Some(Ok((self.line, ev))),
                Err((field, msg)) => {
                    return Some(Err(TraceError::at_line(&self.file, self.line, field, msg)))
                }
            }
        }
    }

    /// The next event, checking that times do not decrease. Stops at the first error.
    pub fn read_event(&mut self) -> Result<Option<TimedEvent>, TraceError> {
        if self.failed {
            return Ok(None);
        }
        match self.next_unordered() {
            None => Ok(None),
            Some(Err(e)) => {
                self.failed = true;
                Err(e)
            }
            Some(Ok((line, ev))) => {
                if ev.at < self.last {
                    self.failed = true;
                    return Err(TraceError::at_line(
                        &self.file,
                        line,
                        "at",
                        format!(
                            "time {} is before the previous event's {} (line {}); a trace must be in time order",
                            ev.at, self.last, self.last_line
                        ),
                    ));
                }
                self.last = ev.at;
                self.last_line = line;
                Ok(Some(ev))
            }
        }
    }

    /// The file name errors are reported under.
    pub fn file(&self) -> &str {
        &self.file
    }
}

impl<R: BufRead> EventSource for NativeReader<R> {
    fn next_event(&mut self) -> Result<Option<TimedEvent>, SourceError> {
        self.read_event().map_err(SourceError::from)
    }
    fn last_position(&self) -> Option<SourcePos> {
        (self.last_line > 0).then(|| SourcePos {
            file: self.file_name.clone(),
            line: self.last_line,
        })
    }
}

impl<R: BufRead> Iterator for NativeReader<R> {
    type Item = Result<TimedEvent, TraceError>;
    fn next(&mut self) -> Option<Self::Item> {
        self.read_event().transpose()
    }
}

/// A streaming writer of the native trace. Refuses an event earlier than the previous one.
pub struct NativeWriter<W: Write> {
    out: W,
    file: String,
    last: SimTime,
    written: u64,
}

impl NativeWriter<Output> {
    /// Creates (truncates) a trace file; `.gz` names are compressed.
    pub fn create(path: &Path) -> Result<Self, TraceError> {
        Ok(NativeWriter::new(&display_name(path), create_output(path)?))
    }

    /// Flushes and closes the file.
    pub fn finish(self) -> Result<u64, TraceError> {
        let file = self.file;
        self.out
            .finish()
            .map_err(|e| TraceError::io(Path::new(&file), e))?;
        Ok(self.written)
    }
}

impl<W: Write> NativeWriter<W> {
    pub fn new(file: &str, out: W) -> Self {
        NativeWriter {
            out,
            file: file.to_string(),
            last: SimTime::ZERO,
            written: 0,
        }
    }

    /// Appends one event.
    pub fn write_event(&mut self, ev: &TimedEvent) -> Result<(), TraceError> {
        if ev.at < self.last {
            return Err(TraceError::at_line(
                &self.file,
                self.written + 1,
                "at",
                format!(
                    "event at {} written after one at {}; events must be written in time order",
                    ev.at, self.last
                ),
            ));
        }
        self.last = ev.at;
        let line = event_to_line(ev);
        self.write_line(&line)
    }

    /// Appends a line already in the native format (used by the importers' sorter).
    pub(crate) fn write_line(&mut self, line: &str) -> Result<(), TraceError> {
        let file = &self.file;
        self.out
            .write_all(line.as_bytes())
            .and_then(|_| self.out.write_all(b"\n"))
            .map_err(|e| TraceError::io(Path::new(file), e))?;
        self.written += 1;
        Ok(())
    }

    /// Events written so far.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// Flushes and returns the inner writer.
    pub fn into_inner(mut self) -> Result<W, TraceError> {
        self.out
            .flush()
            .map_err(|e| TraceError::io(Path::new(&self.file), e))?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(text: &str) -> Result<Vec<TimedEvent>, TraceError> {
        NativeReader::new("trace.jsonl", text.as_bytes()).collect()
    }

    #[test]
    fn reads_every_kind_with_defaults() {
        let text = r#"
# a comment
{"at": "1.5s", "kind": "CreatePod", "pod": {"metadata": {"name": "a"}, "spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": "1"}}}]}}, "runFor": "10m"}
{"at": 2, "kind": "DeletePod", "name": "a"}
{"at": 2, "kind": "CompletePod", "namespace": "x", "name": "b"}
{"at": "3s", "kind": "UpdatePod", "pod": {"metadata": {"name": "a"}}}
{"at": "3s", "kind": "AddNode", "node": {"metadata": {"name": "n"}, "status": {"capacity": {"cpu": "4"}}}}
{"at": "3s", "kind": "UpdateNode", "node": {"metadata": {"name": "n"}, "status": {"capacity": {"cpu": "4"}}}}
{"at": "1h", "kind": "RemoveNode", "name": "n"}
"#;
        let evs = read_all(text).unwrap();
        assert_eq!(evs.len(), 7);
        assert_eq!(evs[0].at, SimTime(1_500_000));
        let InputEvent::CreatePod { pod, run_for } = &evs[0].event else {
            panic!("{:?}", evs[0])
        };
        assert_eq!(pod.metadata.namespace, "default");
        assert_eq!(
            pod.spec.containers[0].resources.requests["cpu"].milli_value(),
            1000
        );
        assert_eq!(*run_for, Some(SimDuration::from_secs(600)));
        assert_eq!(
            evs[1].event,
            InputEvent::DeletePod {
                namespace: "default".into(),
                name: "a".into()
            }
        );
        let InputEvent::AddNode { node } = &evs[4].event else {
            panic!()
        };
        assert_eq!(node.status.allocatable["cpu"].milli_value(), 4000);
        assert_eq!(evs[6].at, SimTime::from_secs(3600));
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let cases = [
            (
                r#"{"at": 1, "kind": "CreatePod", "pod": {"metadata": {"name": "a"}, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]}}}"#,
                "trace.jsonl:1: pod.spec.containers[0].resources.requests.cpu: quantity \"lots\"",
            ),
            (
                r#"{"at": 1, "kind": "Explode", "name": "a"}"#,
                "trace.jsonl:1: kind: unknown kind \"Explode\"",
            ),
            (
                r#"{"at": 1, "kind": "DeletePod", "name": "a", "colour": "red"}"#,
                "trace.jsonl:1: colour: unknown field",
            ),
            (
                r#"{"at": 1, "kind": "DeletePod", "name": "a", "runFor": 3}"#,
                "trace.jsonl:1: runFor: is not a field of kind DeletePod",
            ),
            (
                r#"{"at": -1, "kind": "RemoveNode", "name": "a"}"#,
                "trace.jsonl:1: at: -1 seconds is negative",
            ),
            (
                r#"{"at": 1, "kind": "CreatePod", "pod": {"metadata": {"name": "a"}}, "runFor": "-5s"}"#,
                "trace.jsonl:1: runFor: negative duration",
            ),
            (
                r#"{"at": 1, "kind": "CreatePod", "pod": {"metadata": {"name": "a"}, "spec": {"containers": [{"name": "c", "resources": {"requests": {"memory": "-1Gi"}}}]}}}"#,
                "trace.jsonl:1: pod.spec.containers[0].resources.requests.memory: quantity \"-1Gi\" is negative",
            ),
            (
                r#"{"at": 1, "kind": "AddNode", "node": {"metadata": {"name": "n"}, "status": {"capacity": {"cpu": "5000000"}}}}"#,
                "trace.jsonl:1: node.status.capacity.cpu: quantity \"5000000\" is more than",
            ),
            (
                r#"{"at": 1, "kind": "CreatePod", "pod": {"spec": {}}}"#,
                "trace.jsonl:1: pod.metadata.name: a pod needs a name (metadata.name, or metadata.generateName)",
            ),
            ("{not json", "trace.jsonl:1: not valid JSON"),
            (
                r#"{"kind": "RemoveNode", "name": "a"}"#,
                "trace.jsonl:1: at: required",
            ),
        ];
        for (line, want) in cases {
            let err = read_all(line).unwrap_err().to_string();
            assert!(
                err.starts_with(want),
                "line {line}\n got {err}\nwant {want}"
            );
        }
    }

    #[test]
    fn object_events_read_default_and_round_trip() {
        let text = r#"{"at": 1, "kind": "CreateObject", "object": {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv1"}, "spec": {"capacity": {"storage": "10Gi"}, "storageClassName": "local", "local": {"path": "/mnt"}}}}
{"at": 2, "kind": "CreateObject", "object": {"kind": "PersistentVolumeClaim", "metadata": {"name": "data"}, "spec": {"storageClassName": "local", "resources": {"requests": {"storage": "1Gi"}}}}}
{"at": 3, "kind": "UpdateObject", "object": {"kind": "StorageClass", "metadata": {"name": "local"}, "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"}}
{"at": 4, "kind": "DeleteObject", "objectKind": "PersistentVolumeClaim", "name": "data"}
{"at": 5, "kind": "DeleteObject", "objectKind": "CSINode", "name": "n1"}
"#;
        let evs = read_all(text).unwrap();
        assert_eq!(evs.len(), 5);
        let InputEvent::CreateObject { object } = &evs[1].event else {
            panic!("{:?}", evs[1])
        };
        // API-server defaulting: namespace, phase, the claim's UID convention.
        assert_eq!(object.key(), "default/data");
        let ksim_api::object::ApiObject::PersistentVolumeClaim(pvc) = object.as_ref() else {
            panic!()
        };
        assert_eq!(pvc.status.phase, "Pending");
        assert_eq!(
            evs[3].event,
            InputEvent::DeleteObject {
                object_kind: ObjectKind::PersistentVolumeClaim,
                namespace: "default".into(),
                name: "data".into()
            }
        );
        let mut w = NativeWriter::new("out.jsonl", Vec::new());
        for e in &evs {
            w.write_event(e).unwrap();
        }
        let bytes = w.into_inner().unwrap();
        let again = read_all(std::str::from_utf8(&bytes).unwrap()).unwrap();
        assert_eq!(evs, again);
        // The timeline runner reads events with serde: the same objects come out.
        let via_serde: InputEvent =
            serde_json::from_value(serde_json::to_value(&evs[1].event).unwrap()).unwrap();
        assert_eq!(via_serde, evs[1].event);
    }

    #[test]
    fn object_event_errors_name_the_field() {
        let cases = [
            (
                r#"{"at": 1, "kind": "CreateObject", "object": {"kind": "Pod", "metadata": {"name": "a"}}}"#,
                "trace.jsonl:1: object.kind: unknown object kind \"Pod\"",
            ),
            (
                r#"{"at": 1, "kind": "CreateObject", "object": {"kind": "PersistentVolume", "metadata": {"name": "a"}, "spec": {"capacity": {"storage": "-1Gi"}}}}"#,
                "trace.jsonl:1: object.spec.capacity.storage: quantity \"-1Gi\" is negative",
            ),
            (
                r#"{"at": 1, "kind": "UpdateObject", "object": {"kind": "StorageClass", "metadata": {}}}"#,
                "trace.jsonl:1: object.metadata.name: a StorageClass needs a name",
            ),
            (
                r#"{"at": 1, "kind": "CreateObject"}"#,
                "trace.jsonl:1: object: required",
            ),
            (
                r#"{"at": 1, "kind": "DeleteObject", "objectKind": "Volume", "name": "a"}"#,
                "trace.jsonl:1: objectKind: unknown object kind \"Volume\"",
            ),
            (
                r#"{"at": 1, "kind": "DeleteObject", "objectKind": "PersistentVolume", "namespace": "x", "name": "a"}"#,
                "trace.jsonl:1: namespace: PersistentVolume is cluster-scoped",
            ),
            (
                r#"{"at": 1, "kind": "DeleteObject", "name": "a"}"#,
                "trace.jsonl:1: objectKind: required",
            ),
            (
                r#"{"at": 1, "kind": "DeleteObject", "objectKind": "PersistentVolume", "object": {}, "name": "a"}"#,
                "trace.jsonl:1: object: is not a field of kind DeleteObject",
            ),
        ];
        for (line, want) in cases {
            let err = read_all(line).unwrap_err().to_string();
            assert!(
                err.starts_with(want),
                "line {line}\n got {err}\nwant {want}"
            );
        }
    }

    #[test]
    fn decreasing_time_is_an_error_naming_both_lines() {
        let text = "{\"at\": 5, \"kind\": \"RemoveNode\", \"name\": \"a\"}\n\n{\"at\": 4, \"kind\": \"RemoveNode\", \"name\": \"b\"}\n";
        let err = read_all(text).unwrap_err().to_string();
        assert!(
            err.starts_with("trace.jsonl:3: at: time 4s is before"),
            "{err}"
        );
        assert!(err.contains("(line 1)"), "{err}");
    }

    #[test]
    fn writer_round_trips_and_refuses_disorder() {
        let text = r#"{"at": "1.5s", "kind": "CreatePod", "pod": {"metadata": {"name": "a", "labels": {"app": "x"}}, "spec": {"priority": 5, "containers": [{"name": "c", "resources": {"requests": {"cpu": "250m", "memory": "1Gi"}}}]}}, "runFor": 61.25}
{"at": 2, "kind": "DeletePod", "name": "a"}
{"at": 3, "kind": "AddNode", "node": {"metadata": {"name": "n", "labels": {"zone": "a"}}, "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}, "status": {"capacity": {"cpu": "4", "memory": "8Gi"}}}}
{"at": 4, "kind": "RemoveNode", "name": "n"}
"#;
        let evs = read_all(text).unwrap();
        let mut w = NativeWriter::new("out.jsonl", Vec::new());
        for e in &evs {
            w.write_event(e).unwrap();
        }
        let bytes = w.into_inner().unwrap();
        let again = read_all(std::str::from_utf8(&bytes).unwrap()).unwrap();
        assert_eq!(evs, again);
        let mut w = NativeWriter::new("out.jsonl", Vec::new());
        w.write_event(&evs[1]).unwrap();
        assert!(w.write_event(&evs[0]).is_err());
    }

    #[test]
    fn fail_and_recover_node_read_and_write_back() {
        let text = "{\"at\": \"1m\", \"kind\": \"FailNode\", \"name\": \"n1\"}\n\
                    {\"at\": \"2m\", \"kind\": \"RecoverNode\", \"name\": \"n1\"}\n";
        let evs = read_all(text).unwrap();
        assert_eq!(evs[0].event, InputEvent::FailNode { name: "n1".into() });
        assert_eq!(evs[1].event, InputEvent::RecoverNode { name: "n1".into() });
        for e in &evs {
            assert_eq!(read_all(&event_to_line(e)).unwrap(), vec![e.clone()]);
        }
        let err = read_all("{\"at\": 1, \"kind\": \"FailNode\"}\n").unwrap_err();
        assert!(err.to_string().contains("name"), "{err}");
    }
}
