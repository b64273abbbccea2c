//! What a file looks like, for errors that say so when a file is passed in the wrong place
//! (issue 37): a scenario given as `--nodes`, a nodes List given as `--scheduler-config`, a
//! JSON Lines trace given as a scenario. Each reader asks [`misplaced`] before it parses the
//! text as its own kind, so the news is "this is a JSON Lines trace; use --trace", not the
//! parser's "trailing characters at line 2 column 1".
//!
//! The guess is cheap and conservative: a JSON Lines trace is two or more lines that are each
//! a JSON object with an `at` (the native trace's event time); the other kinds are read from the
//! first document's `apiVersion`/`kind` (a KubeSchedulerConfiguration, a List or a Node) or its
//! top-level keys (a ksim scenario: `cluster`, `workload`, `scheduler`, ...). Anything else is
//! left to the reader's own errors.

use serde_json::Value;

use crate::error::TraceError;

/// The kinds of input file a run takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    /// A ksim scenario (YAML or JSON).
    Scenario,
    /// A native trace, JSON Lines.
    JsonLinesTrace,
    /// A List of Nodes (or one Node): a nodes file.
    Nodes,
    /// A List of cluster objects other than nodes alone (a kube dump, an objects file).
    Objects,
    /// A KubeSchedulerConfiguration.
    SchedulerConfig,
}

impl FileKind {
    /// What to tell a user who passed a file of this kind in the wrong place.
    pub fn hint(self) -> &'static str {
        match self {
            FileKind::Scenario => "this looks like a ksim scenario; pass it as the first argument",
            FileKind::JsonLinesTrace => "this is a JSON Lines trace; use --trace",
            FileKind::Nodes => "this is a List of Nodes; use --nodes",
            FileKind::Objects => {
                "this is a List of cluster objects; use --objects (or `ksim import kube-dump` \
                 for a whole cluster dump)"
            }
            FileKind::SchedulerConfig => {
                "this is a KubeSchedulerConfiguration; use --scheduler-config"
            }
        }
    }
}

/// The top-level keys of a scenario (see [`crate::scenario::Scenario`]) that no Kubernetes
/// object has at its top level.
const SCENARIO_KEYS: [&str; 8] = [
    "cluster",
    "workload",
    "scheduler",
    "horizon",
    "costs",
    "queue",
    "onNodeRemoval",
    "controllerDelay",
];

/// Whether `text` is a JSON Lines trace: at least two non-empty lines, the first two each one
/// JSON object with an `at` key. Only the first lines are read.
pub fn is_json_lines_trace(text: &str) -> bool {
    let text = ksim_api::json::strip_bom(text);
    let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
    let mut n = 0;
    for line in lines.by_ref().take(2) {
        if !line.starts_with('{') {
            return false;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(v) if v.get("at").is_some() => n += 1,
            _ => return false,
        }
    }
    n == 2
}

/// What a parsed document looks like, from its `apiVersion`/`kind` or its keys.
pub fn kind_of_document(v: &Value) -> Option<FileKind> {
    let obj = v.as_object()?;
    let api = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    if api.starts_with("kubescheduler.config.k8s.io") || kind == "KubeSchedulerConfiguration" {
        return Some(FileKind::SchedulerConfig);
    }
    if kind == "Node" || kind == "NodeList" {
        return Some(FileKind::Nodes);
    }
    if kind == "List" || kind.ends_with("List") {
        let items = obj.get("items").and_then(Value::as_array)?;
        if items.is_empty() {
            return None;
        }
        let kind_of = |i: &Value| i.get("kind").and_then(Value::as_str).map(str::to_string);
        if items
            .iter()
            .any(|i| kind_of(i).as_deref() == Some("KubeSchedulerConfiguration"))
        {
            return Some(FileKind::SchedulerConfig);
        }
        let all_nodes = items.iter().all(|i| kind_of(i).as_deref() == Some("Node"));
        return Some(if all_nodes {
            FileKind::Nodes
        } else {
            FileKind::Objects
        });
    }
    if api.is_empty() && kind.is_empty() && SCENARIO_KEYS.iter().any(|k| obj.contains_key(*k)) {
        return Some(FileKind::Scenario);
    }
    None
}

/// What `text` looks like, when it is clearly one of the kinds: a JSON Lines trace from its
/// first lines, else the first document (`docs`, already parsed by the caller, or parsed here
/// when `None`; a text that does not parse is nothing known).
pub fn sniff(text: &str, docs: Option<&[Value]>) -> Option<FileKind> {
    if is_json_lines_trace(text) {
        return Some(FileKind::JsonLinesTrace);
    }
    match docs {
        Some(d) => d.first().and_then(kind_of_document),
        None => crate::nodes::parse_documents("", text)
            .ok()?
            .first()
            .and_then(kind_of_document),
    }
}

/// The error for a file of another kind than `expected` (`None` when it looks like the
/// expected kind, or like nothing known): `source: this is a JSON Lines trace; use --trace`.
pub fn misplaced(
    source: &str,
    text: &str,
    docs: Option<&[Value]>,
    expected: FileKind,
) -> Option<TraceError> {
    let got = sniff(text, docs)?;
    // An objects List may hold nodes too; a nodes reader refuses its other items itself.
    if got == expected || (expected == FileKind::Objects && got == FileKind::Nodes) {
        return None;
    }
    Some(TraceError::at_field(source, "", got.hint()))
}

/// serde's message for an unknown key (`unknown field `horizn`, expected one of `name`, ...`)
/// with the nearest known key added: `... (did you mean `horizon`?)`. Other messages are
/// returned as they are.
pub fn with_did_you_mean(message: String) -> String {
    let Some(rest) = message.strip_prefix("unknown field `") else {
        return message;
    };
    let Some((key, expected)) = rest.split_once('`') else {
        return message;
    };
    // The known names are the backquoted words after "expected".
    let known: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
    match ksim_api::config::strict::did_you_mean(key, known) {
        Some(n) => format!("{message} (did you mean `{n}`?)"),
        None => message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_are_recognised() {
        let trace =
            "{\"at\":\"0s\",\"kind\":\"CreatePod\"}\n{\"at\":\"1s\",\"kind\":\"DeletePod\"}\n";
        assert_eq!(sniff(trace, None), Some(FileKind::JsonLinesTrace));
        // One line is a JSON document, not a trace.
        assert_eq!(sniff("{\"at\":\"0s\"}\n", None), None);
        let scen = "name: x\ncluster:\n  pools: []\nworkload: {}\n";
        assert_eq!(sniff(scen, None), Some(FileKind::Scenario));
        let nodes = "kind: List\nitems:\n- kind: Node\n  metadata: {name: a}\n";
        assert_eq!(sniff(nodes, None), Some(FileKind::Nodes));
        let objs = "kind: List\nitems:\n- kind: Node\n- kind: Pod\n";
        assert_eq!(sniff(objs, None), Some(FileKind::Objects));
        let cfg =
            "apiVersion: kubescheduler.config.k8s.io/v1beta1\nkind: KubeSchedulerConfiguration\n";
        assert_eq!(sniff(cfg, None), Some(FileKind::SchedulerConfig));
        assert_eq!(sniff("root:x:0:0:root:/root:/bin/bash\n", None), None);
    }

    #[test]
    fn misplaced_names_the_kind_and_the_flag() {
        let nodes = "kind: List\nitems:\n- kind: Node\n  metadata: {name: a}\n";
        let e = misplaced("n.yaml", nodes, None, FileKind::SchedulerConfig).map(|e| e.to_string());
        assert_eq!(
            e.as_deref(),
            Some("n.yaml: this is a List of Nodes; use --nodes")
        );
        assert!(misplaced("n.yaml", nodes, None, FileKind::Nodes).is_none());
        assert!(misplaced("n.yaml", nodes, None, FileKind::Objects).is_none());
    }

    #[test]
    fn unknown_keys_get_the_nearest() {
        let m = "unknown field `horizn`, expected one of `name`, `seed`, `horizon`, `cluster`";
        assert_eq!(
            with_did_you_mean(m.to_string()),
            format!("{m} (did you mean `horizon`?)")
        );
        let far = "unknown field `zzzzzz`, expected one of `name`, `seed`";
        assert_eq!(with_did_you_mean(far.to_string()), far);
        assert_eq!(with_did_you_mean("other".into()), "other");
    }
}
