//! `--explain`: the detail of selected pods' scheduling attempts, one JSON object per attempt
//! (`explain.jsonl`). Everything recorded is what the cycle itself computed — the filter
//! statuses of its `Diagnosis` (or `Algorithm::last_statuses`), the `ScoreTable` of
//! `Algorithm::last_scores` — read after the cycle, never recomputed; an unselected pod costs
//! one selector test per attempt.

use ksim_scheduler::framework::interface::NodeToStatus;
use ksim_scheduler::framework::runtime::ScoreTable;
use ksim_scheduler::framework::status::Status;
use ksim_scheduler::node_info::Snapshot;
use ksim_scheduler::pod_info::PodInfo;
use serde_json::{json, Value};

/// Which pods' attempts are recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExplainSelector {
    /// Every pod.
    All,
    /// Pods with at least one unschedulable attempt (only their attempts are kept).
    Pending,
    /// One pod, `namespace/name` (a bare name means namespace `default`).
    Pod { namespace: String, name: String },
    /// Pods whose labels carry every `key=value` pair.
    Labels(Vec<(String, String)>),
}

impl ExplainSelector {
    /// Parses `all`, `pending`, `ns/name`, `name`, or `k=v[,k=v...]`.
    pub fn parse(s: &str) -> Result<ExplainSelector, String> {
        let s = s.trim();
        if s.is_empty() {
            return Err("empty selector (give ns/name, app=web, pending or all)".into());
        }
        Ok(match s {
            "all" => ExplainSelector::All,
            "pending" => ExplainSelector::Pending,
            _ if s.contains('=') => {
                let mut pairs = Vec::new();
                for part in s.split(',') {
                    let Some((k, v)) = part.split_once('=') else {
                        return Err(format!("selector term {part:?} is not key=value"));
                    };
                    if k.trim().is_empty() {
                        return Err(format!("selector term {part:?} has an empty key"));
                    }
                    pairs.push((k.trim().to_string(), v.trim().to_string()));
                }
                ExplainSelector::Labels(pairs)
            }
            _ => match s.split_once('/') {
                Some((ns, n)) if !ns.is_empty() && !n.is_empty() && !n.contains('/') => {
                    ExplainSelector::Pod {
                        namespace: ns.into(),
                        name: n.into(),
                    }
                }
                Some(_) => return Err(format!("selector {s:?} is not namespace/name")),
                None => ExplainSelector::Pod {
                    namespace: "default".into(),
                    name: s.into(),
                },
            },
        })
    }

    /// Whether attempts of `pod` are recorded.
    pub fn selects(&self, pod: &PodInfo) -> bool {
        match self {
            ExplainSelector::All | ExplainSelector::Pending => true,
            ExplainSelector::Pod { namespace, name } => {
                pod.pod.metadata.namespace == *namespace && pod.pod.metadata.name == *name
            }
            ExplainSelector::Labels(pairs) => pairs
                .iter()
                .all(|(k, v)| pod.pod.metadata.labels.get(k).map(|x| x == v) == Some(true)),
        }
    }
}

/// A status as recorded: code, plugin, reasons.
pub fn status_json(s: &Status) -> Value {
    json!({
        "code": format!("{:?}", s.code),
        "plugin": s.plugin,
        "reasons": s.reasons.iter().map(|r| r.as_ref()).collect::<Vec<&str>>(),
    })
}

/// The per-node filter results: rejected nodes with their status, feasible nodes as `Success`,
/// and the status every unlisted node shares (a PreFilter rejection or restriction).
pub fn filter_json(snapshot: &Snapshot, statuses: &NodeToStatus, feasible: &[usize]) -> Value {
    let mut nodes = serde_json::Map::new();
    for (i, s) in statuses.iter() {
        if let Some(n) = snapshot.nodes.get(i) {
            nodes.insert(n.name().to_string(), status_json(s));
        }
    }
    for &i in feasible {
        if let Some(n) = snapshot.nodes.get(i) {
            nodes.insert(n.name().to_string(), json!({"code": "Success"}));
        }
    }
    json!({
        "nodes": Value::Object(nodes),
        "others": statuses.absent.as_ref().map(status_json),
    })
}

/// The score table of a cycle with more than one feasible node: per node, per plugin raw,
/// normalized, weighted, and the total; the best set and its size.
pub fn scores_json(
    snapshot: &Snapshot,
    table: &ScoreTable,
    feasible: &[usize],
) -> (Value, Vec<String>) {
    let mut rows = Vec::new();
    let max = table.totals.iter().copied().max().unwrap_or(0);
    let mut best = Vec::new();
    for (k, &i) in feasible.iter().enumerate() {
        let Some(n) = snapshot.nodes.get(i) else {
            continue;
        };
        let mut plugins = serde_json::Map::new();
        for p in &table.plugins {
            if let (Some(raw), Some(norm)) = (p.raw.get(k), p.normalized().get(k)) {
                plugins.insert(
                    p.plugin.to_string(),
                    json!({"raw": raw, "normalized": norm, "weight": p.weight, "weighted": norm * p.weight}),
                );
            }
        }
        let total = table.totals.get(k).copied().unwrap_or(0);
        if total == max {
            best.push(n.name().to_string());
        }
        rows.push(json!({"node": n.name(), "plugins": Value::Object(plugins), "total": total}));
    }
    (Value::Array(rows), best)
}
