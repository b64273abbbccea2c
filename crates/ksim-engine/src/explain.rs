//! `--explain`: the detail of selected pods' scheduling attempts, one JSON object per attempt
//! (`explain.jsonl`). Everything recorded is what the cycle itself computed — the filter
//! statuses of its `Diagnosis` (or `Algorithm::last_statuses`), the `ScoreTable` of
//! `Algorithm::last_scores` — read after the cycle, never recomputed; an unselected pod costs
//! one selector test per attempt.
//!
//! An unschedulable attempt also records, for each rejected node, every Filter plugin that
//! rejects it when each is run alone (upstream stops at the first), with what was missing in
//! the pod's terms (`misses`: resources short, untolerated taints, unmatched selector terms,
//! conflicting host ports) — what `ksim explain` ranks as the nearest misses. That pass runs
//! only for selected pods' failed attempts, after the cycle decided, and changes nothing.

use ksim_scheduler::framework::interface::{NodeToStatus, NominatedPods};
use ksim_scheduler::framework::runtime::ScoreTable;
use ksim_scheduler::framework::status::Status;
use ksim_scheduler::framework::{CycleState, Framework};
use ksim_scheduler::node_info::{NodeInfo, Snapshot};
use ksim_scheduler::pod_info::PodInfo;
use ksim_scheduler::schedule::{Algorithm, ScheduleError, ScheduleResult};
use serde_json::{json, Value};

use crate::time::SimTime;

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

/// Entries that are equal but for their node, each kept once with its `nodes` (in the order
/// they were added; groups in the order of their first node).
#[derive(Default)]
struct NodeGroups<'n> {
    groups: Vec<(Value, Vec<&'n str>)>,
    index: std::collections::HashMap<String, usize>,
}

impl<'n> NodeGroups<'n> {
    fn add(&mut self, entry: Value, node: &'n str) {
        let groups = &mut self.groups;
        let g = *self.index.entry(entry.to_string()).or_insert_with(|| {
            groups.push((entry, Vec::new()));
            groups.len() - 1
        });
        self.groups[g].1.push(node);
    }

    /// Each entry with its `nodes` added.
    fn into_values(self) -> Vec<Value> {
        self.groups
            .into_iter()
            .map(|(mut v, nodes)| {
                v["nodes"] = json!(nodes);
                v
            })
            .collect()
    }
}

/// The per-node filter results, grouped: each distinct rejection status once with the nodes
/// that got it (`rejected`, groups in the order of their first node, nodes in the cycle's
/// order), the feasible nodes (`passed`), and the status every unlisted node shares
/// (`others`: a PreFilter rejection or restriction). Grouping keeps a record of a cluster of
/// thousands of nodes small: most nodes share a handful of statuses. [`expand_record`] turns
/// it back into one entry per node.
pub fn filter_json(snapshot: &Snapshot, statuses: &NodeToStatus, feasible: &[usize]) -> Value {
    let mut rejected = NodeGroups::default();
    for (i, s) in statuses.iter() {
        if let Some(n) = snapshot.nodes.get(i) {
            rejected.add(status_json(s), n.name());
        }
    }
    let passed: Vec<&str> = feasible
        .iter()
        .filter_map(|&i| snapshot.nodes.get(i).map(|n| n.name()))
        .collect();
    json!({
        "rejected": rejected.into_values(),
        "passed": passed,
        "others": statuses.absent.as_ref().map(status_json),
    })
}

/// The score table of a cycle with more than one feasible node, column-wise: the score
/// plugins and their weights once, then per feasible node (the cycle's order) the raw and
/// normalized score of each plugin (aligned with `plugins`; weighted = normalized × weight)
/// and the total. Returns it with the best set (the nodes with the highest total).
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
        let raw: Vec<Value> = table
            .plugins
            .iter()
            .map(|p| p.raw_at(k).map_or(Value::Null, |v| json!(v)))
            .collect();
        let norm: Vec<Value> = table
            .plugins
            .iter()
            .map(|p| p.normalized_at(k).map_or(Value::Null, |v| json!(v)))
            .collect();
        let total = table.totals.get(k).copied().unwrap_or(0);
        if total == max {
            best.push(n.name().to_string());
        }
        rows.push(json!({"node": n.name(), "raw": raw, "normalized": norm, "total": total}));
    }
    let plugins: Vec<&str> = table.plugins.iter().map(|p| p.plugin).collect();
    let weights: Vec<i64> = table.plugins.iter().map(|p| p.weight).collect();
    (
        json!({"plugins": plugins, "weights": weights, "nodes": rows}),
        best,
    )
}

/// Turns a record's grouped `filter` and column-wise `scores` (as written) into one entry per
/// node: `filter.nodes` = `{node: {code, plugin, reasons}}` (feasible nodes `{"code":
/// "Success"}`), and `scores` = `[{node, plugins: {Name: {raw, normalized, weight,
/// weighted}}, total}]`, and `misses` one entry per `node`. A record already in that form is
/// left as it is.
pub fn expand_record(rec: &mut Value) {
    if let Some(filter) = rec.get_mut("filter").and_then(Value::as_object_mut) {
        if !filter.contains_key("nodes") {
            let mut nodes = serde_json::Map::new();
            if let Some(Value::Array(groups)) = filter.remove("rejected") {
                for mut g in groups {
                    let names = g
                        .as_object_mut()
                        .and_then(|o| o.remove("nodes"))
                        .unwrap_or(Value::Null);
                    for n in names.as_array().into_iter().flatten() {
                        if let Some(n) = n.as_str() {
                            nodes.insert(n.to_string(), g.clone());
                        }
                    }
                }
            }
            if let Some(Value::Array(passed)) = filter.remove("passed") {
                for n in passed {
                    if let Some(n) = n.as_str() {
                        nodes.insert(n.to_string(), json!({"code": "Success"}));
                    }
                }
            }
            filter.insert("nodes".into(), Value::Object(nodes));
        }
    }
    if let Some(Value::Array(misses)) = rec.get_mut("misses") {
        if misses.iter().any(|m| m.get("nodes").is_some()) {
            let mut per_node = Vec::new();
            for m in misses.drain(..) {
                let Value::Object(mut m) = m else {
                    continue;
                };
                match m.remove("nodes") {
                    Some(Value::Array(nodes)) => {
                        for n in nodes {
                            let mut one = serde_json::Map::new();
                            one.insert("node".into(), n);
                            one.extend(m.clone());
                            per_node.push(Value::Object(one));
                        }
                    }
                    _ => per_node.push(Value::Object(m)),
                }
            }
            *misses = per_node;
        }
    }
    let Some(scores) = rec.get("scores").and_then(Value::as_object) else {
        return;
    };
    let plugins: Vec<&str> = scores["plugins"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let weights: Vec<i64> = scores["weights"]
        .as_array()
        .map(|a| a.iter().map(|w| w.as_i64().unwrap_or(0)).collect())
        .unwrap_or_default();
    let mut rows = Vec::new();
    for r in scores["nodes"].as_array().into_iter().flatten() {
        let mut per = serde_json::Map::new();
        for (j, p) in plugins.iter().enumerate() {
            let (raw, norm) = (&r["raw"][j], &r["normalized"][j]);
            let (Some(raw), Some(norm)) = (raw.as_i64(), norm.as_i64()) else {
                continue;
            };
            let w = weights.get(j).copied().unwrap_or(0);
            per.insert(
                p.to_string(),
                json!({"raw": raw, "normalized": norm, "weight": w, "weighted": norm * w}),
            );
        }
        rows.push(json!({"node": r["node"], "plugins": Value::Object(per), "total": r["total"]}));
    }
    rec["scores"] = Value::Array(rows);
}

/// What one attempt's record is built from: the cycle's framework, algorithm (its kept
/// statuses and scores), snapshot, nominations and cycle state, as `SchedulePod` left them.
pub struct AttemptContext<'a> {
    pub fwk: &'a Framework,
    pub alg: &'a Algorithm,
    pub snapshot: &'a Snapshot,
    pub nominated: &'a dyn NominatedPods,
    pub state: &'a CycleState,
    pub pod: &'a PodInfo,
    pub attempt: u32,
    /// `nextStartNodeIndex` before the cycle.
    pub start: usize,
    pub now: SimTime,
}

/// The `--explain` record of an attempt, from what the cycle computed: the filter statuses
/// (the failed cycle's diagnosis, or those the algorithm kept) and the score table. Reserve,
/// Permit and PostFilter are added by the caller, which runs them.
#[allow(clippy::result_large_err)]
pub fn attempt_json(cx: &AttemptContext<'_>, res: &Result<ScheduleResult, ScheduleError>) -> Value {
    let (snap, fwk, alg, info) = (cx.snapshot, cx.fwk, cx.alg, cx.pod);
    let pct = fwk
        .percentage_of_nodes_to_score
        .unwrap_or(alg.percentage_of_nodes_to_score);
    let mut e = json!({
        "at": cx.now.to_string(),
        "atMicros": cx.now.0,
        "pod": format!("{}/{}", info.namespace(), info.name()),
        "attempt": cx.attempt,
        "profile": fwk.profile_name,
        "nominatedNodeBefore": info.pod.status.nominated_node_name,
        "nodes": snap.len(),
        "sampling": {
            "percentageOfNodesToScore": pct,
            "numFeasibleNodesToFind": alg.num_feasible_nodes_to_find(fwk.percentage_of_nodes_to_score, snap.len()),
            "startIndex": cx.start,
        },
    });
    match res {
        Ok(r) => {
            let feasible = alg.last_feasible();
            e["result"] = json!("Scheduled");
            e["evaluated"] = json!(r.evaluated_nodes);
            e["feasible"] = json!(r.feasible_nodes);
            e["filter"] = filter_json(snap, alg.last_statuses(), feasible);
            let pick = snap
                .nodes
                .get(r.suggested_host)
                .map(|n| n.name().to_string())
                .unwrap_or_default();
            if feasible.len() > 1 {
                let (rows, best) = scores_json(snap, alg.last_scores(), feasible);
                e["scores"] = rows;
                e["ties"] = json!(best.len());
                e["best"] = json!(best);
            } else {
                e["best"] = json!([pick]);
                e["ties"] = json!(1);
            }
            e["pick"] = json!(pick);
        }
        Err(ScheduleError::Fit(fit)) => {
            e["result"] = json!("Unschedulable");
            e["evaluated"] = json!(fit.diagnosis.node_to_status.len());
            e["feasible"] = json!(0);
            e["filter"] = filter_json(snap, &fit.diagnosis.node_to_status, &[]);
            if !fit.diagnosis.pre_filter_msg.is_empty() {
                e["preFilter"] = json!(fit.diagnosis.pre_filter_msg);
            }
            e["unschedulablePlugins"] = json!(fit.diagnosis.unschedulable_plugins);
            e["message"] = json!(fit.filter_only_message());
            e["misses"] = misses_json(cx, &fit.diagnosis.node_to_status);
        }
        Err(ScheduleError::NoNodesAvailable) => {
            e["result"] = json!("Unschedulable");
            e["message"] = json!(ksim_scheduler::schedule::NO_NODES_AVAILABLE);
        }
        Err(ScheduleError::Internal(s)) => {
            e["result"] = json!("Error");
            e["error"] = status_json(s);
        }
    }
    e
}

/// For each node a Filter plugin rejected: the active Filter plugins that reject it when each
/// is run alone. A node that one plugin alone rejects (a near miss) gets `plugin` and the
/// `detail` of what the pod lacked there (and `code`/`reasons` when they differ from the
/// node's recorded filter status); a node that several reject gets only their names
/// (`plugins`), to keep the record small. Entries equal but for their node are written once
/// with their `nodes` (in the cycle's order). Nodes rejected only by PreFilter (no explicit
/// status) are not listed: no Filter plugin ran on them.
pub fn misses_json(cx: &AttemptContext<'_>, statuses: &NodeToStatus) -> Value {
    // Nodes whose entries are equal but for the node (a pool behind one taint, nodes with the
    // same usage) share one entry with their `nodes`.
    let mut out = NodeGroups::default();
    for (i, s) in statuses.iter() {
        if s.plugin.is_empty() || !s.is_rejected() {
            continue;
        }
        let Some(node) = cx.snapshot.nodes.get(i) else {
            continue;
        };
        let failed = failing_plugins(cx, node);
        match failed.as_slice() {
            [(name, st, on)] => {
                let mut v = json!({"plugin": name});
                // A plugin's own status does not carry its name (the framework sets it).
                if *name != s.plugin || st.code != s.code || st.reasons != s.reasons {
                    v["code"] = json!(format!("{:?}", st.code));
                    v["reasons"] =
                        json!(st.reasons.iter().map(|r| r.as_ref()).collect::<Vec<&str>>());
                }
                let n = on.as_ref().unwrap_or(node);
                if let Some(d) = miss_detail(name, cx.pod, n) {
                    v["detail"] = d;
                }
                out.add(v, node.name());
            }
            _ => {
                let names: Vec<&str> = failed.iter().map(|f| f.0).collect();
                out.add(json!({"plugins": names}), node.name());
            }
        }
    }
    Value::Array(out.into_values())
}

/// Runs each active Filter plugin alone on `node` — as `RunFilterPluginsWithNominatedPods`
/// does, first with the node's nominated pods of at least the pod's priority added, then
/// without — and lists each plugin that rejects in either pass, once, with its status and
/// the node as that pass saw it (`Some` when with nominated pods).
fn failing_plugins(
    cx: &AttemptContext<'_>,
    node: &NodeInfo,
) -> Vec<(&'static str, Status, Option<NodeInfo>)> {
    let (fwk, pod) = (cx.fwk, cx.pod);
    let noms: Vec<_> = if cx.nominated.is_empty() {
        Vec::new()
    } else {
        cx.nominated
            .nominated_pods_for_node(node.name())
            .iter()
            .filter(|n| n.priority() >= pod.priority() && n.uid() != pod.uid())
            .cloned()
            .collect()
    };
    let mut with_noms: Option<(NodeInfo, CycleState)> = None;
    if !noms.is_empty() {
        let mut n_out = node.clone();
        let mut s_out = cx.state.clone();
        for n in &noms {
            n_out.add_pod(n.clone());
            let _ = fwk.run_pre_filter_add_pod(&mut s_out, pod, n, &n_out, cx.snapshot);
        }
        with_noms = Some((n_out, s_out));
    }
    let mut failed = Vec::new();
    for (i, p) in fwk.filter.iter().enumerate() {
        if cx.state.filter_skipped(&fwk.filter, i, |p| p.name()) {
            continue;
        }
        let Some(f) = p.as_filter() else {
            continue;
        };
        if let Some((n, s)) = &with_noms {
            let r = f.filter(s, pod, n).into_status();
            if r.is_rejected() {
                failed.push((p.name(), r, Some(n.clone())));
                continue;
            }
        }
        let r = f.filter(cx.state, pod, node).into_status();
        if r.is_rejected() {
            failed.push((p.name(), r, None));
        }
    }
    failed
}

/// What the pod lacked on `node` for a plugin whose verdict can be put in numbers or
/// objects: resources short, untolerated taints, unmatched node selector terms, the host
/// ports in use, the cordon.
fn miss_detail(plugin: &str, pod: &PodInfo, node: &NodeInfo) -> Option<Value> {
    use ksim_scheduler::plugins::helper::tolerations_tolerate;
    match plugin {
        "NodeResourcesFit" => {
            let (req, alloc, used) = (&pod.requests, &node.allocatable, &node.requested);
            let mut rows = Vec::new();
            let mut push = |name: &str, want: i64, a: i64, u: i64| {
                if want > 0 && want > a - u {
                    rows.push(json!({
                        "resource": name, "request": want, "allocatable": a,
                        "requested": u, "short": want - (a - u),
                    }));
                }
            };
            push("pods", 1, alloc.allowed_pod_number, node.pods.len() as i64);
            push("cpu", req.milli_cpu, alloc.milli_cpu, used.milli_cpu);
            push("memory", req.memory, alloc.memory, used.memory);
            push(
                "ephemeral-storage",
                req.ephemeral_storage,
                alloc.ephemeral_storage,
                used.ephemeral_storage,
            );
            for (name, q) in &req.scalar {
                push(name, *q, alloc.scalar(name), used.scalar(name));
            }
            Some(json!({"resources": rows}))
        }
        "TaintToleration" => {
            let taints: Vec<Value> = node
                .node
                .spec
                .taints
                .iter()
                .filter(|t| t.effect == "NoSchedule" || t.effect == "NoExecute")
                .filter(|t| !tolerations_tolerate(&pod.pod.spec.tolerations, t))
                .map(|t| json!({"key": t.key, "value": t.value, "effect": t.effect}))
                .collect();
            Some(json!({"taints": taints}))
        }
        "NodeUnschedulable" => Some(json!({"unschedulable": node.node.spec.unschedulable})),
        "NodeAffinity" => {
            let labels = &node.node.metadata.labels;
            let selector: Vec<Value> = pod
                .pod
                .spec
                .node_selector
                .iter()
                .filter(|(k, v)| labels.get(*k) != Some(*v))
                .map(|(k, v)| json!({"key": k, "want": v, "have": labels.get(k)}))
                .collect();
            // Required terms are ORed: the pod needed any one; each is listed with the
            // expressions this node fails.
            let terms: Vec<Value> = pod
                .pod
                .spec
                .affinity
                .as_ref()
                .and_then(|a| a.node_affinity.as_ref())
                .and_then(|na| na.required.as_ref())
                .map(|r| {
                    r.node_selector_terms
                        .iter()
                        .filter(|t| {
                            !ksim_scheduler::plugins::helper::CompiledTerm::new(t)
                                .matches(&node.node)
                        })
                        .map(|t| {
                            let exprs: Vec<String> = t
                                .match_expressions
                                .iter()
                                .map(|x| {
                                    format!("{} {} [{}]", x.key, x.operator, x.values.join(","))
                                })
                                .chain(t.match_fields.iter().map(|x| {
                                    format!(
                                        "field {} {} [{}]",
                                        x.key,
                                        x.operator,
                                        x.values.join(",")
                                    )
                                }))
                                .collect();
                            json!(exprs)
                        })
                        .collect()
                })
                .unwrap_or_default();
            Some(json!({"nodeSelector": selector, "requiredTerms": terms}))
        }
        "NodePorts" => {
            let ports: Vec<Value> = pod
                .host_ports
                .iter()
                .filter(|p| node.host_port_conflicts(p))
                .map(|p| json!({"port": p.port, "protocol": p.protocol, "hostIP": p.ip}))
                .collect();
            Some(json!({"hostPorts": ports}))
        }
        _ => None,
    }
}
