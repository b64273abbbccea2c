//! `ksim explain`: one recorded attempt of one pod, read back from a run's `explain.jsonl`
//! (written by `ksim run --explain`, see `ksim_engine::explain`) and laid out for a person:
//!
//! - the **verdicts**: each filter reason with the number of nodes that gave it and the first
//!   few of them (a node with two reasons, e.g. `Insufficient cpu` and `Insufficient memory`,
//!   counts under both, as in the scheduler's own message); nodes a PreFilter rejected, nodes
//!   not evaluated (sampling) and feasible nodes have their own rows;
//! - the **top K** scored nodes by total, one column per score plugin (weighted), the pick and
//!   the nodes tied at the top marked;
//! - for an unschedulable attempt, the **nearest misses**: nodes that exactly one Filter plugin
//!   rejects (each plugin was run alone on each rejected node when the attempt was recorded),
//!   with what was missing in the pod's terms, ranked by how little would have to change:
//!   first the number of things to change (resources short, taints to tolerate, selector
//!   terms, host ports; 1 for other plugins); then resources the node has but others use
//!   (pods leaving or preemption make room), before a change to the pod or node spec
//!   (toleration, selector, port, affinity, ...), before resources beyond the node's
//!   allocatable; then the largest shortfall as a share of the node's allocatable; then
//!   node name.
//!
//! Nothing is recomputed: every figure is the record's.

use std::path::{Path, PathBuf};

use comfy_table::{presets, CellAlignment, ContentArrangement, Table};
use ksim_engine::{SimDuration, SimTime};
use serde::Serialize;
use serde_json::Value;

/// How many nodes a verdict row names.
pub const VERDICT_NODES_SHOWN: usize = 5;
/// How many nearest misses are listed.
pub const NEAREST_MISSES_SHOWN: usize = 10;

/// Why an explanation could not be given.
#[derive(Debug, thiserror::Error)]
pub enum ExplainError {
    #[error(
        "{}: no explain.jsonl in this run directory; record it with \
         `ksim run SCENARIO --explain POD` (POD: ns/name, app=web, pending or all)",
        .0.display()
    )]
    NoRecord(PathBuf),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}:{line}: {message}", path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{}: no recorded attempt of pod {pod} ({known}); record it with `ksim run ... --explain {pod}`", path.display())]
    UnknownPod {
        path: PathBuf,
        pod: String,
        known: String,
    },
    #[error("--attempt {attempt}: pod {pod} has recorded attempts {recorded}")]
    NoSuchAttempt {
        pod: String,
        attempt: u64,
        recorded: String,
    },
    #[error("--at {at}: before the first recorded attempt of pod {pod} (at {first})")]
    BeforeFirst {
        pod: String,
        at: String,
        first: String,
    },
    #[error("--at {0:?}: {1}")]
    BadTime(String, String),
}

/// Which attempt to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptChoice {
    /// The pod's last recorded attempt.
    Last,
    /// The attempt with this number (as in placements.csv).
    Number(u64),
    /// The last attempt made at or before this virtual time (e.g. "90m", "3600").
    At(String),
}

/// One row of the verdict table.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Verdict {
    /// The filter reason, or `feasible`, `not evaluated (sampling)`, a PreFilter message.
    pub reason: String,
    /// The plugin that gave it (empty for the rows that are not a plugin's).
    pub plugin: String,
    pub count: usize,
    /// The first [`VERDICT_NODES_SHOWN`] nodes by name (numbers compared as numbers).
    pub nodes: Vec<String>,
}

/// One scored node.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ScoreRow {
    pub node: String,
    pub total: i64,
    /// Weighted score per plugin, in [`AttemptView::score_plugins`] order.
    pub weighted: Vec<i64>,
    pub pick: bool,
    /// Tied at the top total.
    pub tie: bool,
}

/// A node that exactly one Filter plugin rejected.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct NearMiss {
    pub node: String,
    pub plugin: String,
    pub code: String,
    /// What was missing, in the pod's terms ("Insufficient cpu — 500m short").
    pub text: String,
    /// Things to change (resources short, taints, selector terms, ports; otherwise 1).
    pub changes: usize,
    /// For resources: the largest shortfall as a share of the node's allocatable.
    pub shortfall_share: f64,
    /// 0: resources the node has but others use (pods leaving or preemption make room);
    /// 1: a change to the pod or node spec (toleration, selector, port, ...); 2: resources
    /// beyond the node's allocatable (only a bigger node would do).
    pub kind_rank: u8,
}

/// One attempt, as shown by `ksim explain`.
#[derive(Debug, Clone, Serialize)]
pub struct AttemptView {
    pub pod: String,
    pub attempt: u64,
    /// The pod's recorded attempt numbers.
    pub recorded_attempts: Vec<u64>,
    pub at: String,
    pub result: String,
    pub profile: String,
    pub nodes: u64,
    pub evaluated: u64,
    pub feasible: u64,
    /// The scheduler's message for an unschedulable attempt.
    pub message: String,
    pub pick: Option<String>,
    pub ties: u64,
    pub verdicts: Vec<Verdict>,
    /// Score plugins, in the order of the record.
    pub score_plugins: Vec<String>,
    /// The top K nodes by total (the pick first among equals).
    pub top: Vec<ScoreRow>,
    pub scored_nodes: usize,
    /// Nodes that failed more than one plugin (not near misses).
    pub failed_several: usize,
    pub nearest_misses: Vec<NearMiss>,
    /// PostFilter (preemption): nominated node, victims, message.
    pub post_filter: Option<Value>,
    /// Reserve or Permit status, when it rejected the pick.
    pub reserve_permit: Option<Value>,
}

/// Reads `RUN_DIR/explain.jsonl`, each record expanded to one entry per node
/// ([`ksim_engine::explain::expand_record`]).
pub fn read_records(run_dir: &Path) -> Result<Vec<Value>, ExplainError> {
    let path = run_dir.join("explain.jsonl");
    if !path.is_file() {
        return Err(ExplainError::NoRecord(run_dir.to_path_buf()));
    }
    let text = std::fs::read_to_string(&path).map_err(|source| ExplainError::Io {
        path: path.clone(),
        source,
    })?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let mut v: Value = serde_json::from_str(line).map_err(|e| ExplainError::Parse {
            path: path.clone(),
            line: i + 1,
            message: e.to_string(),
        })?;
        if v.get("pod").and_then(Value::as_str).is_none() {
            return Err(ExplainError::Parse {
                path: path.clone(),
                line: i + 1,
                message: "record without a \"pod\" field".into(),
            });
        }
        // Grouped filter verdicts and column-wise scores, as written, back to one entry per node.
        ksim_engine::explain::expand_record(&mut v);
        out.push(v);
    }
    Ok(out)
}

/// The view of one attempt of `pod` (`ns/name`, or a name in namespace `default`).
pub fn view(
    run_dir: &Path,
    records: &[Value],
    pod: &str,
    choice: &AttemptChoice,
    top_k: usize,
) -> Result<AttemptView, ExplainError> {
    let key = if pod.contains('/') {
        pod.to_string()
    } else {
        format!("default/{pod}")
    };
    let mine: Vec<&Value> = records
        .iter()
        .filter(|r| r["pod"].as_str() == Some(key.as_str()))
        .collect();
    if mine.is_empty() {
        let mut known: Vec<&str> = records.iter().filter_map(|r| r["pod"].as_str()).collect();
        known.dedup();
        known.sort_unstable();
        known.dedup();
        let n = known.len();
        let shown: Vec<&str> = known.into_iter().take(5).collect();
        let known = match n {
            0 => "explain.jsonl records no pod".to_string(),
            _ if n > shown.len() => format!("recorded: {}, … {n} pods", shown.join(", ")),
            _ => format!("recorded: {}", shown.join(", ")),
        };
        return Err(ExplainError::UnknownPod {
            path: run_dir.join("explain.jsonl"),
            pod: key,
            known,
        });
    }
    let numbers: Vec<u64> = mine
        .iter()
        .map(|r| r["attempt"].as_u64().unwrap_or(0))
        .collect();
    let rec: &Value = match choice {
        AttemptChoice::Last => mine[mine.len() - 1],
        AttemptChoice::Number(n) => match mine.iter().find(|r| r["attempt"].as_u64() == Some(*n)) {
            Some(r) => r,
            None => {
                return Err(ExplainError::NoSuchAttempt {
                    pod: key,
                    attempt: *n,
                    recorded: ranges(&numbers),
                })
            }
        },
        AttemptChoice::At(t) => {
            let d = SimDuration::parse(t).map_err(|e| ExplainError::BadTime(t.clone(), e))?;
            let at = d.micros();
            match mine
                .iter()
                .rev()
                .find(|r| r["atMicros"].as_i64().is_some_and(|m| m <= at))
            {
                Some(r) => r,
                None => {
                    return Err(ExplainError::BeforeFirst {
                        pod: key,
                        at: SimTime(at).to_string(),
                        first: mine[0]["at"].as_str().unwrap_or("?").to_string(),
                    })
                }
            }
        }
    };
    Ok(build(rec, numbers, top_k))
}

/// `1-3, 5`: attempt numbers as ranges.
fn ranges(n: &[u64]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < n.len() {
        let mut j = i;
        while j + 1 < n.len() && n[j + 1] == n[j] + 1 {
            j += 1;
        }
        out.push(if i == j {
            n[i].to_string()
        } else {
            format!("{}-{}", n[i], n[j])
        });
        i = j + 1;
    }
    out.join(", ")
}

/// Names compared with their runs of digits as numbers: `n2` before `n10`.
fn natural_order(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let (mut a, mut b) = (a.as_bytes(), b.as_bytes());
    loop {
        match (a.first(), b.first()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                let da = a.iter().take_while(|c| c.is_ascii_digit()).count();
                let db = b.iter().take_while(|c| c.is_ascii_digit()).count();
                let (na, nb) = (&a[..da], &b[..db]);
                // Without leading zeros, a longer run is the larger number.
                let ta = &na[na.iter().take_while(|&&c| c == b'0').count()..];
                let tb = &nb[nb.iter().take_while(|&&c| c == b'0').count()..];
                let o = ta.len().cmp(&tb.len()).then(ta.cmp(tb)).then(da.cmp(&db));
                if o != Ordering::Equal {
                    return o;
                }
                (a, b) = (&a[da..], &b[db..]);
            }
            (Some(x), Some(y)) => {
                if x != y {
                    return x.cmp(y);
                }
                (a, b) = (&a[1..], &b[1..]);
            }
        }
    }
}

fn s(v: &Value) -> String {
    v.as_str().unwrap_or("").to_string()
}

fn build(rec: &Value, recorded_attempts: Vec<u64>, top_k: usize) -> AttemptView {
    let nodes = rec["nodes"].as_u64().unwrap_or(0);
    let evaluated = rec["evaluated"].as_u64().unwrap_or(0);
    let mut verdicts: Vec<Verdict> = Vec::new();
    let mut feasible_nodes: Vec<String> = Vec::new();
    let mut listed = 0usize;
    if let Some(map) = rec["filter"]["nodes"].as_object() {
        for (node, st) in map {
            listed += 1;
            if st["code"] == "Success" {
                feasible_nodes.push(node.clone());
                continue;
            }
            let plugin = s(&st["plugin"]);
            let reasons: Vec<String> = st["reasons"]
                .as_array()
                .map(|a| a.iter().map(s).collect())
                .unwrap_or_default();
            let reasons = if reasons.is_empty() {
                vec![s(&st["code"])]
            } else {
                reasons
            };
            for reason in reasons {
                match verdicts
                    .iter_mut()
                    .find(|v| v.reason == reason && v.plugin == plugin)
                {
                    Some(v) => {
                        v.count += 1;
                        v.nodes.push(node.clone());
                    }
                    None => verdicts.push(Verdict {
                        reason,
                        plugin: plugin.clone(),
                        count: 1,
                        nodes: vec![node.clone()],
                    }),
                }
            }
        }
    }
    // Most nodes first; equal counts keep the record's order (stable sort). The nodes shown
    // are the first by name (numbers in names compared as numbers), whatever order the record
    // lists them in.
    verdicts.sort_by_key(|v| std::cmp::Reverse(v.count));
    for v in &mut verdicts {
        v.nodes.sort_by(|a, b| natural_order(a, b));
        v.nodes.truncate(VERDICT_NODES_SHOWN);
    }
    feasible_nodes.sort_by(|a, b| natural_order(a, b));
    let unlisted = (nodes as usize).saturating_sub(listed);
    if let Some(o) = rec["filter"]["others"].as_object() {
        if unlisted > 0 {
            let reasons: Vec<String> = o
                .get("reasons")
                .and_then(Value::as_array)
                .map(|a| a.iter().map(s).collect())
                .unwrap_or_default();
            verdicts.push(Verdict {
                reason: if reasons.is_empty() {
                    s(&o["code"])
                } else {
                    reasons.join(", ")
                },
                plugin: o.get("plugin").map(s).unwrap_or_default(),
                count: unlisted,
                nodes: Vec::new(),
            });
        }
    } else if unlisted > 0 && evaluated < nodes {
        let nominated = rec["nominatedNodeBefore"]
            .as_str()
            .is_some_and(|n| !n.is_empty());
        verdicts.push(Verdict {
            reason: if nominated && evaluated == 1 {
                "not evaluated (the nominated node was tried alone and fit)".into()
            } else {
                "not evaluated (enough feasible nodes found: percentageOfNodesToScore)".into()
            },
            plugin: String::new(),
            count: unlisted,
            nodes: Vec::new(),
        });
    }
    if !feasible_nodes.is_empty() {
        verdicts.push(Verdict {
            reason: "feasible".into(),
            plugin: String::new(),
            count: feasible_nodes.len(),
            nodes: feasible_nodes
                .iter()
                .take(VERDICT_NODES_SHOWN)
                .cloned()
                .collect(),
        });
    }

    let pick = rec["pick"].as_str().map(str::to_string);
    let best: Vec<String> = rec["best"]
        .as_array()
        .map(|a| a.iter().map(s).collect())
        .unwrap_or_default();
    let mut score_plugins: Vec<String> = Vec::new();
    let mut rows: Vec<ScoreRow> = Vec::new();
    if let Some(arr) = rec["scores"].as_array() {
        for r in arr {
            if let Some(p) = r["plugins"].as_object() {
                for k in p.keys() {
                    if !score_plugins.contains(k) {
                        score_plugins.push(k.clone());
                    }
                }
            }
        }
        for r in arr {
            let node = s(&r["node"]);
            let weighted = score_plugins
                .iter()
                .map(|p| r["plugins"][p]["weighted"].as_i64().unwrap_or(0))
                .collect();
            rows.push(ScoreRow {
                pick: pick.as_deref() == Some(node.as_str()),
                tie: best.len() > 1 && best.contains(&node),
                total: r["total"].as_i64().unwrap_or(0),
                weighted,
                node,
            });
        }
    }
    let scored_nodes = rows.len();
    // Highest total first; the pick first among equals, then the record's (node) order.
    rows.sort_by(|a, b| b.total.cmp(&a.total).then(b.pick.cmp(&a.pick)));
    rows.truncate(top_k);

    let mut misses: Vec<NearMiss> = Vec::new();
    let mut failed_several = 0;
    if let Some(arr) = rec["misses"].as_array() {
        for m in arr {
            if m.get("plugins").is_some() {
                failed_several += 1;
                continue;
            }
            // Code and reasons are the node's recorded filter status unless the entry has
            // its own (see `ksim_engine::explain::misses_json`).
            let node = s(&m["node"]);
            let mut one = m.clone();
            if one.get("reasons").is_none() {
                let st = &rec["filter"]["nodes"][node.as_str()];
                one["code"] = st["code"].clone();
                one["reasons"] = st["reasons"].clone();
            }
            misses.push(near_miss(&node, &one));
        }
    }
    misses.sort_by(|a, b| {
        a.changes
            .cmp(&b.changes)
            .then(a.kind_rank.cmp(&b.kind_rank))
            .then(a.shortfall_share.total_cmp(&b.shortfall_share))
            .then_with(|| a.node.cmp(&b.node))
    });

    AttemptView {
        pod: s(&rec["pod"]),
        attempt: rec["attempt"].as_u64().unwrap_or(0),
        recorded_attempts,
        at: s(&rec["at"]),
        result: s(&rec["result"]),
        profile: s(&rec["profile"]),
        nodes,
        evaluated,
        feasible: rec["feasible"].as_u64().unwrap_or(0),
        message: s(&rec["message"]),
        pick,
        ties: rec["ties"].as_u64().unwrap_or(0),
        verdicts,
        score_plugins,
        top: rows,
        scored_nodes,
        failed_several,
        nearest_misses: misses,
        post_filter: rec.get("postFilter").cloned(),
        reserve_permit: rec.get("reservePermit").cloned(),
    }
}

/// A near miss's text from its one failing plugin's record.
fn near_miss(node: &str, f: &Value) -> NearMiss {
    let plugin = s(&f["plugin"]);
    let reasons: Vec<String> = f["reasons"]
        .as_array()
        .map(|a| a.iter().map(s).collect())
        .unwrap_or_default();
    let d = &f["detail"];
    let mut changes = 1;
    let mut share = 0.0f64;
    let mut kind_rank = 1;
    let text = match plugin.as_str() {
        "NodeResourcesFit" => {
            let rows = d["resources"].as_array().map(Vec::as_slice).unwrap_or(&[]);
            changes = rows.len().max(1);
            kind_rank = if rows.is_empty() { 1 } else { 0 };
            let parts: Vec<String> = rows
                .iter()
                .map(|r| {
                    let name = s(&r["resource"]);
                    let short = r["short"].as_i64().unwrap_or(0);
                    let alloc = r["allocatable"].as_i64().unwrap_or(0);
                    share = share.max(if alloc > 0 {
                        short as f64 / alloc as f64
                    } else {
                        1.0
                    });
                    let request = r["request"].as_i64().unwrap_or(0);
                    if name == "pods" {
                        format!("Too many pods — {alloc} of {alloc} pod slots used")
                    } else if request > alloc {
                        kind_rank = 2;
                        // No eviction makes room: only a bigger node would do.
                        format!(
                            "Insufficient {name} — {} short (requests {}, more than the node's allocatable {})",
                            quantity(&name, short),
                            quantity(&name, request),
                            quantity(&name, alloc)
                        )
                    } else {
                        format!("Insufficient {name} — {} short", quantity(&name, short))
                    }
                })
                .collect();
            if parts.is_empty() {
                reasons.join(", ")
            } else {
                parts.join("; ")
            }
        }
        "TaintToleration" => {
            let taints = d["taints"].as_array().map(Vec::as_slice).unwrap_or(&[]);
            changes = taints.len().max(1);
            let t: Vec<String> = taints
                .iter()
                .map(|t| {
                    let (k, v, e) = (s(&t["key"]), s(&t["value"]), s(&t["effect"]));
                    if v.is_empty() {
                        format!("{k}:{e}")
                    } else {
                        format!("{k}={v}:{e}")
                    }
                })
                .collect();
            if t.is_empty() {
                reasons.join(", ")
            } else {
                format!(
                    "untolerated taint{} {}",
                    if t.len() > 1 { "s" } else { "" },
                    t.join(", ")
                )
            }
        }
        "NodeAffinity" => {
            let sel = d["nodeSelector"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            let terms = d["requiredTerms"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or(&[]);
            let mut parts: Vec<String> = sel
                .iter()
                .map(|m| {
                    let have = match m["have"].as_str() {
                        Some(h) => format!("node has {}={h}", s(&m["key"])),
                        None => format!("node has no {}", s(&m["key"])),
                    };
                    format!(
                        "didn't match node selector {}={} ({have})",
                        s(&m["key"]),
                        s(&m["want"])
                    )
                })
                .collect();
            if !terms.is_empty() {
                let t: Vec<String> = terms
                    .iter()
                    .map(|t| {
                        t.as_array()
                            .map(|a| a.iter().map(s).collect::<Vec<_>>().join(" and "))
                            .unwrap_or_default()
                    })
                    .collect();
                parts.push(format!(
                    "didn't match required node affinity {}",
                    t.join(" or ")
                ));
            }
            changes = parts.len().max(1);
            if parts.is_empty() {
                reasons.join(", ")
            } else {
                parts.join("; ")
            }
        }
        "NodePorts" => {
            let ports = d["hostPorts"].as_array().map(Vec::as_slice).unwrap_or(&[]);
            changes = ports.len().max(1);
            let p: Vec<String> = ports
                .iter()
                .map(|p| format!("{}/{}", p["port"].as_i64().unwrap_or(0), s(&p["protocol"])))
                .collect();
            if p.is_empty() {
                reasons.join(", ")
            } else {
                format!("host port {} already in use", p.join(", "))
            }
        }
        "NodeUnschedulable" => "node is cordoned (spec.unschedulable)".to_string(),
        _ => reasons.join(", "),
    };
    NearMiss {
        node: node.to_string(),
        plugin,
        code: s(&f["code"]),
        text,
        changes,
        shortfall_share: (share * 1e6).round() / 1e6,
        kind_rank,
    }
}

/// A resource amount in the units a pod spec uses: cpu in millicores or cores, memory and
/// storage with a binary suffix when exact.
pub fn quantity(resource: &str, v: i64) -> String {
    match resource {
        "cpu" => {
            if v % 1000 == 0 {
                format!("{}", v / 1000)
            } else {
                format!("{v}m")
            }
        }
        "memory" | "ephemeral-storage" => {
            for (suffix, unit) in [
                ("Ti", 1i64 << 40),
                ("Gi", 1 << 30),
                ("Mi", 1 << 20),
                ("Ki", 1 << 10),
            ] {
                if v != 0 && v % unit == 0 {
                    return format!("{}{suffix}", v / unit);
                }
            }
            v.to_string()
        }
        _ => v.to_string(),
    }
}

fn table(header: Vec<&str>) -> Table {
    let mut t = Table::new();
    t.load_preset(presets::UTF8_FULL_CONDENSED)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header);
    t
}

/// The terminal text of a view.
pub fn render(v: &AttemptView) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "pod {}  attempt {} of {} recorded ({})  at {}  profile {}\n",
        v.pod,
        v.attempt,
        v.recorded_attempts.len(),
        ranges(&v.recorded_attempts),
        v.at,
        v.profile
    ));
    out.push_str(&format!(
        "result: {}  nodes {}  evaluated {}  feasible {}",
        v.result, v.nodes, v.evaluated, v.feasible
    ));
    if let Some(p) = &v.pick {
        out.push_str(&format!("  pick {p}"));
        if v.ties > 1 {
            out.push_str(&format!(" (one of {} tied)", v.ties));
        }
    }
    out.push('\n');
    if !v.message.is_empty() {
        out.push_str(&format!("message: {}\n", v.message));
    }
    if !v.verdicts.is_empty() {
        out.push_str("\nFilter verdicts\n");
        let mut t = table(vec!["reason", "plugin", "nodes", "first nodes"]);
        for r in &v.verdicts {
            let more = if r.count > r.nodes.len() && !r.nodes.is_empty() {
                ", …"
            } else {
                ""
            };
            t.add_row(vec![
                r.reason.clone(),
                r.plugin.clone(),
                r.count.to_string(),
                format!("{}{more}", r.nodes.join(", ")),
            ]);
        }
        if let Some(c) = t.column_mut(2) {
            c.set_cell_alignment(CellAlignment::Right);
        }
        out.push_str(&t.to_string());
        out.push('\n');
    }
    if !v.top.is_empty() {
        out.push_str(&format!(
            "\nTop {} of {} scored nodes (weighted scores; * pick, = tied at the top)\n",
            v.top.len(),
            v.scored_nodes
        ));
        let mut header = vec!["", "node", "total"];
        header.extend(v.score_plugins.iter().map(String::as_str));
        let mut t = table(header);
        for r in &v.top {
            let mark = match (r.pick, r.tie) {
                (true, _) => "*",
                (false, true) => "=",
                _ => "",
            };
            let mut row = vec![mark.to_string(), r.node.clone(), r.total.to_string()];
            row.extend(r.weighted.iter().map(|w| w.to_string()));
            t.add_row(row);
        }
        for i in 2..3 + v.score_plugins.len() {
            if let Some(c) = t.column_mut(i) {
                c.set_cell_alignment(CellAlignment::Right);
            }
        }
        out.push_str(&t.to_string());
        out.push('\n');
    }
    if v.result != "Scheduled" && v.post_filter.is_some() || !v.nearest_misses.is_empty() {
        if let Some(pf) = &v.post_filter {
            let nominated = pf["nominatedNode"].as_str().unwrap_or("");
            let victims: Vec<String> = pf["victims"]
                .as_array()
                .map(|a| a.iter().map(s).collect())
                .unwrap_or_default();
            if nominated.is_empty() {
                let msg = s(&pf["message"]);
                out.push_str(&format!(
                    "\npreemption: no node nominated{}\n",
                    if msg.is_empty() {
                        String::new()
                    } else {
                        format!(" ({msg})")
                    }
                ));
            } else {
                out.push_str(&format!(
                    "\npreemption: nominated {nominated}, victims {}\n",
                    if victims.is_empty() {
                        "none".to_string()
                    } else {
                        victims.join(", ")
                    }
                ));
            }
        }
    }
    if v.result == "Unschedulable" {
        if v.nearest_misses.is_empty() {
            out.push_str(&format!(
                "\nno near miss: {}\n",
                if v.failed_several > 0 {
                    format!(
                        "every rejected node failed more than one plugin ({})",
                        v.failed_several
                    )
                } else {
                    "no Filter plugin ran on a node (PreFilter rejected the pod, or there are no nodes)".into()
                }
            ));
        } else {
            out.push_str(&format!(
                "\nNearest misses: {} node(s) failed exactly one Filter plugin ({} failed several); fewest changes first\n",
                v.nearest_misses.len(),
                v.failed_several
            ));
            for m in v.nearest_misses.iter().take(NEAREST_MISSES_SHOWN) {
                out.push_str(&format!("  {}: {}  [{}]\n", m.node, m.text, m.plugin));
            }
            if v.nearest_misses.len() > NEAREST_MISSES_SHOWN {
                out.push_str(&format!(
                    "  … {} more (--json lists all)\n",
                    v.nearest_misses.len() - NEAREST_MISSES_SHOWN
                ));
            }
        }
    }
    if let Some(rp) = &v.reserve_permit {
        out.push_str(&format!(
            "\nReserve/Permit rejected the pick: {} {}\n",
            s(&rp["plugin"]),
            rp["reasons"]
                .as_array()
                .map(|a| a.iter().map(s).collect::<Vec<_>>().join(", "))
                .unwrap_or_default()
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn verdict_nodes_are_the_first_by_name_with_numbers_as_numbers() {
        use std::cmp::Ordering::*;
        assert_eq!(natural_order("n2", "n10"), Less);
        assert_eq!(natural_order("general-100", "general-99"), Greater);
        assert_eq!(natural_order("a-01", "a-1"), Greater);
        assert_eq!(natural_order("a", "a-1"), Less);
        assert_eq!(natural_order("zone-b-3", "zone-b-3"), Equal);
        // Grouped or per node, in any order: the verdict shows the same first nodes.
        let rec = json!({
            "pod": "default/p", "attempt": 1, "result": "Unschedulable", "nodes": 12,
            "evaluated": 12, "feasible": 0,
            "filter": {"rejected": [
                {"code": "Unschedulable", "plugin": "NodeResourcesFit", "reasons": ["Insufficient memory"],
                 "nodes": ["n11", "n9", "n7", "n5", "n3", "n1"]},
                {"code": "Unschedulable", "plugin": "NodeResourcesFit", "reasons": ["Insufficient cpu", "Insufficient memory"],
                 "nodes": ["n10", "n8", "n6", "n4", "n2", "n0"]}],
                "passed": [], "others": null}
        });
        let mut r = rec.clone();
        ksim_engine::explain::expand_record(&mut r);
        let v = build(&r, vec![1], 3);
        assert_eq!(v.verdicts[0].reason, "Insufficient memory");
        assert_eq!(v.verdicts[0].count, 12);
        assert_eq!(v.verdicts[0].nodes, ["n0", "n1", "n2", "n3", "n4"]);
        assert_eq!(v.verdicts[1].nodes, ["n0", "n2", "n4", "n6", "n8"]);
    }

    #[test]
    fn quantities_read_as_in_a_pod_spec() {
        assert_eq!(quantity("cpu", 500), "500m");
        assert_eq!(quantity("cpu", 2000), "2");
        assert_eq!(quantity("memory", 512 << 20), "512Mi");
        assert_eq!(quantity("memory", 1000), "1000");
        assert_eq!(quantity("nvidia.com/gpu", 1), "1");
    }

    #[test]
    fn nearest_misses_rank_by_what_must_change() {
        let rec = json!({
            "pod": "default/p", "attempt": 1, "at": "1s", "atMicros": 1_000_000,
            "result": "Unschedulable", "nodes": 3, "evaluated": 3, "feasible": 0,
            "filter": {"nodes": {
                "a": {"code": "Unschedulable", "plugin": "NodeResourcesFit", "reasons": ["Insufficient cpu", "Insufficient memory"]},
                "b": {"code": "Unschedulable", "plugin": "NodeResourcesFit", "reasons": ["Insufficient cpu"]},
                "c": {"code": "UnschedulableAndUnresolvable", "plugin": "TaintToleration", "reasons": ["x"]}},
                "others": null},
            "misses": [
                {"node": "a", "plugin": "NodeResourcesFit",
                  "detail": {"resources": [
                    {"resource": "cpu", "request": 1000, "allocatable": 4000, "requested": 3500, "short": 500},
                    {"resource": "memory", "request": 1, "allocatable": 1024, "requested": 1024, "short": 1}]}},
                {"node": "b", "plugin": "NodeResourcesFit",
                  "detail": {"resources": [{"resource": "cpu", "request": 1000, "allocatable": 4000, "requested": 3900, "short": 900}]}},
                {"node": "c", "plugins": ["NodeResourcesFit", "TaintToleration"]}
            ]
        });
        let v = build(&rec, vec![1], 3);
        assert_eq!(v.failed_several, 1);
        let names: Vec<&str> = v.nearest_misses.iter().map(|m| m.node.as_str()).collect();
        assert_eq!(names, ["b", "a"]);
        assert_eq!(v.nearest_misses[0].text, "Insufficient cpu — 900m short");
        // Insufficient cpu counts two nodes, memory one.
        assert_eq!(v.verdicts[0].reason, "Insufficient cpu");
        assert_eq!(v.verdicts[0].count, 2);
        assert_eq!(ranges(&[1, 2, 3, 5, 7, 8]), "1-3, 5, 7-8");
    }
}
