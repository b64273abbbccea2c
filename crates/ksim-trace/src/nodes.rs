//! Nodes files: the initial cluster as Kubernetes Node objects, written as a `kind: List`
//! (`kubectl get nodes -o yaml|json`), a multi-document YAML stream, a JSON array, or a single
//! Node. Every item gets the API server's defaulting (allocatable = capacity when absent) and the
//! quantity checks of [`crate::check`]. Items of another `kind` and duplicate names are errors.
//! A node with `metadata.generateName` and no name is kept unnamed here and named when the run
//! starts, from the run's seed (`MergedSource::name_initial_nodes`).
//! Errors name the file, the item index and the field:
//! `nodes.yaml: items[3] (node "n-3"): status.capacity.cpu: quantity "x" is ...`.
//!
//! Nodes files are parsed whole (they are small next to traces: 10⁴ nodes is a few MB).

use std::collections::BTreeSet;
use std::path::Path;

use ksim_api::load::{flatten_items, kind_of};
use ksim_api::Node;
use serde::Serialize;
use serde_json::Value;

use crate::error::TraceError;
use crate::io::{display_name, read_text};
use crate::native::decode_node_to_add;

/// Reads a nodes file (gzip is recognised).
pub fn load_nodes(path: &Path) -> Result<Vec<Node>, TraceError> {
    let text = read_text(path)?;
    parse_nodes(&display_name(path), &text)
}

/// Parses nodes from JSON or YAML text; `source` names the file in errors.
pub fn parse_nodes(source: &str, text: &str) -> Result<Vec<Node>, TraceError> {
    // A file of another kind (a scenario, a trace, a scheduler configuration) is named as such
    // before any node field is read.
    use crate::sniff::{is_json_lines_trace, misplaced, FileKind};
    if is_json_lines_trace(text) {
        return Err(TraceError::at_field(
            source,
            "",
            FileKind::JsonLinesTrace.hint(),
        ));
    }
    let docs = parse_documents(source, text)?;
    if let Some(e) = misplaced(source, text, Some(&docs), FileKind::Nodes) {
        if !matches!(
            crate::sniff::sniff(text, Some(&docs)),
            Some(FileKind::Objects)
        ) {
            return Err(e);
        }
    }
    let items = flatten_items(docs);
    nodes_from_values(source, &items)
}

/// Parses JSON or YAML text into one value per document, like `ksim_api::load::parse_documents`
/// but with serde-saphyr's resource budget scaled to the text: its defaults (1,024 documents,
/// 250,000 nodes) refuse real inputs such as the openb node YAML (1,213 documents) or a
/// 10,000-node `kubectl get nodes -o yaml`. The text is in memory already, so limits
/// proportional to its length still bound the work.
pub fn parse_documents(source: &str, text: &str) -> Result<Vec<Value>, TraceError> {
    let text = ksim_api::json::strip_bom(text);
    let trimmed = text.trim_start();
    if trimmed.starts_with('{') || trimmed.starts_with('[') {
        let v: Value = ksim_api::json::parse_value(text)
            .map_err(|e| TraceError::at_field(source, "", format!("not valid JSON: {e}")))?;
        return Ok(vec![v]);
    }
    let n = text.len();
    let mut budget = serde_saphyr::Budget::default();
    budget.max_documents = budget.max_documents.max(n / 4);
    budget.max_nodes = budget.max_nodes.max(n);
    budget.max_events = budget.max_events.max(2 * n);
    budget.max_total_scalar_bytes = budget.max_total_scalar_bytes.max(n);
    let opts = serde_saphyr::options! { budget: Some(budget) };
    let docs: Vec<Value> = serde_saphyr::from_multiple_with_options(text, opts).map_err(|e| {
        TraceError::at_field(
            source,
            "",
            format!("not valid YAML: {}", ksim_api::json::yaml_error_message(&e)),
        )
    })?;
    Ok(docs.into_iter().filter(|d| !d.is_null()).collect())
}

/// Decodes generic values into nodes, naming `items[i]` in errors.
pub fn nodes_from_values(source: &str, items: &[Value]) -> Result<Vec<Node>, TraceError> {
    let mut out = Vec::with_capacity(items.len());
    let mut seen = BTreeSet::new();
    for (i, item) in items.iter().enumerate() {
        let name = item
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        let generate = item
            .pointer("/metadata/generateName")
            .and_then(Value::as_str)
            .unwrap_or("");
        let at = if !name.is_empty() {
            format!("items[{i}] (node {name:?})")
        } else if !generate.is_empty() {
            format!("items[{i}] (node {generate:?}…)")
        } else {
            format!("items[{i}]")
        };
        let kind = kind_of(item);
        if !kind.is_empty() && kind != "Node" {
            return Err(TraceError::at_field(
                source,
                format!("{at}: kind"),
                format!("expected Node, got {kind:?}"),
            ));
        }
        // A node with only `generateName` is named when the run starts, from the run's seed
        // (`MergedSource::name_initial_nodes`), as the API server named it on create.
        let node = decode_node_to_add(item, "").map_err(|(f, m)| {
            TraceError::at_field(
                source,
                if f.is_empty() {
                    at.clone()
                } else {
                    format!("{at}: {f}")
                },
                m,
            )
        })?;
        if !node.metadata.name.is_empty() && !seen.insert(node.metadata.name.clone()) {
            return Err(TraceError::at_field(
                source,
                format!("{at}: metadata.name"),
                format!("duplicate node name {:?}", node.metadata.name),
            ));
        }
        out.push(node);
    }
    Ok(out)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct List<'a, T> {
    api_version: &'static str,
    kind: &'static str,
    items: &'a [T],
}

/// Renders nodes as a YAML `kind: List`, the shape `kubectl get nodes -o yaml` prints.
pub fn nodes_to_yaml(nodes: &[Node]) -> Result<String, String> {
    serde_saphyr::to_string(&List {
        api_version: "v1",
        kind: "List",
        items: nodes,
    })
    .map_err(|e| e.to_string())
}

/// Writes nodes as a YAML `kind: List`.
pub fn write_nodes(path: &Path, nodes: &[Node]) -> Result<(), TraceError> {
    let text =
        nodes_to_yaml(nodes).map_err(|m| TraceError::at_field(&display_name(path), "", m))?;
    let mut out = crate::io::create_output(path)?;
    std::io::Write::write_all(&mut out, text.as_bytes()).map_err(|e| TraceError::io(path, e))?;
    out.finish().map_err(|e| TraceError::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_list_and_multi_document_yaml() {
        let yaml = "apiVersion: v1\nkind: List\nitems:\n- kind: Node\n  metadata: {name: a}\n  status: {capacity: {cpu: '4', memory: 8Gi}}\n- metadata: {name: b}\n  status: {allocatable: {cpu: '1'}}\n";
        let nodes = parse_nodes("nodes.yaml", yaml).unwrap();
        assert_eq!(nodes.len(), 2);
        assert_eq!(nodes[0].status.allocatable["cpu"].milli_value(), 4000);
        let multi = "kind: Node\nmetadata: {name: a}\nstatus: {capacity: {cpu: '1'}}\n---\nkind: Node\nmetadata: {name: b}\nstatus: {capacity: {cpu: '1'}}\n";
        assert_eq!(parse_nodes("m.yaml", multi).unwrap().len(), 2);
    }

    #[test]
    fn errors_name_item_and_field() {
        let yaml = "kind: List\nitems:\n- metadata: {name: a}\n  status: {capacity: {cpu: '1'}}\n- metadata: {name: b}\n  status: {capacity: {cpu: lots}}\n";
        let err = parse_nodes("nodes.yaml", yaml).unwrap_err().to_string();
        assert!(
            err.starts_with(
                "nodes.yaml: items[1] (node \"b\"): status.capacity.cpu: quantity \"lots\""
            ),
            "{err}"
        );
        let dup = "- metadata: {name: a}\n  status: {capacity: {cpu: '1'}}\n- metadata: {name: a}\n  status: {capacity: {cpu: '1'}}\n";
        let err = parse_nodes("n.yaml", dup).unwrap_err().to_string();
        assert!(
            err.contains("items[1] (node \"a\"): metadata.name: duplicate"),
            "{err}"
        );
        // A bare `items:` mapping (no kind) is a list too; an empty one is no nodes.
        assert!(parse_nodes("e.yaml", "items: []\n").unwrap().is_empty());
        let bare = "items:\n- metadata: {name: a}\n  status: {capacity: {cpu: '1'}}\n";
        assert_eq!(parse_nodes("b.yaml", bare).unwrap().len(), 1);
        let pod = "- kind: Pod\n  metadata: {name: a}\n";
        let err = parse_nodes("n.yaml", pod).unwrap_err().to_string();
        assert!(
            err.contains("items[0] (node \"a\"): kind: expected Node"),
            "{err}"
        );
    }

    #[test]
    fn yaml_round_trip() {
        let yaml = "- metadata: {name: a, labels: {zone: z1}}\n  spec: {taints: [{key: k, effect: NoSchedule}]}\n  status: {capacity: {cpu: 4, memory: 8Gi, nvidia.com/gpu: '2'}}\n";
        let nodes = parse_nodes("n.yaml", yaml).unwrap();
        let text = nodes_to_yaml(&nodes).unwrap();
        assert_eq!(parse_nodes("again.yaml", &text).unwrap(), nodes);
    }
}
