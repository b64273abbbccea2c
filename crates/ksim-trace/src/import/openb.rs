//! Alibaba cluster-trace-gpu-v2023 ("openb", the FGD paper's traces).
//!
//! Inputs, recognised by content: one node list — `openb_node_list_*.csv` (header
//! `sn,cpu_milli,memory_mib,gpu,model`) or the trace's own node YAML — and any number of pod
//! lists (`name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,
//! deletion_time,scheduled_time`, or the 5-column multigpu variant).
//!
//! Mapping choices:
//! - Nodes: `cpu: <cpu_milli>m`, `memory: <memory_mib>Mi`, `pods: 1001` (as the trace's YAML),
//!   labels `kubernetes.io/hostname`, `kubernetes.io/os` and `beta.kubernetes.io/os: linux`; GPU
//!   nodes get `alibabacloud.com/gpu-count: <gpu>`, `alibabacloud.com/gpu-milli: <gpu × 1000>`
//!   and the label `alibabacloud.com/gpu-card-model: <model>` — exactly the trace's node YAML.
//!   CPU-only nodes (all_node list) get no GPU resources.
//! - Pods: one container `main` requesting `cpu: <cpu_milli>m`, `memory: <memory_mib>Mi`, and
//!   for GPU pods the GPU resources and annotations of [`super`]'s module doc.
//! - `gpu_spec` (allowed models, `|`-separated, duplicates removed) becomes required node
//!   affinity `alibabacloud.com/gpu-card-model In [...]`, and the annotation
//!   `alibabacloud.com/gpu-card-model` as in the FGD artifact.
//! - `qos` → priority: `LS` and `Guaranteed` 1000, `Burstable` 500, `BE` 0 (latency-sensitive
//!   above best-effort, Kubernetes' classes mapped alongside); the value is also in the label
//!   `alibabacloud.com/qos`. Preemption in a replay therefore favours LS pods; the FGD
//!   experiment itself has no preemption.
//! - Time: CreatePod at `creation_time`; `runFor = deletion_time − scheduled_time`. A pod never
//!   scheduled (`scheduled_time` empty, phase Pending) is created without `runFor` and deleted at
//!   `deletion_time`. Pods still Running at the trace end have `deletion_time` = trace end, so
//!   they end there.
//! - The 5-column multigpu lists have no times: every pod is created at t=0, in file order, and
//!   never ends (the FGD setup: pods never leave).
//! - One pod list goes to the namespace from the options (default `default`); with several,
//!   each list's pods go to a namespace named after the file (`openb-pod-list-gpushare40`),
//!   since the re-sampled lists reuse pod names.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use ksim_api::{
    Affinity, Labels, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
    Quantity, ResourceList,
};
use ksim_engine::{InputEvent, SimDuration};

use super::build;
use super::gpu;
use super::rows::Rows;
use super::ImportContext;
use crate::error::TraceError;
use crate::io::display_name;

const NODE_COLS: [&str; 5] = ["sn", "cpu_milli", "memory_mib", "gpu", "model"];
const POD_COLS: [&str; 11] = [
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "gpu_spec",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
];

enum Input {
    NodeCsv(PathBuf),
    NodeYaml(PathBuf),
    Pods(PathBuf, bool),
}

fn classify(path: &Path) -> Result<Input, TraceError> {
    let name = path.to_string_lossy().to_ascii_lowercase();
    if name.ends_with(".yaml") || name.ends_with(".yml") || name.ends_with(".yaml.gz") {
        return Ok(Input::NodeYaml(path.to_path_buf()));
    }
    let first = Rows::peek_first(path)?;
    let first: Vec<&str> = first.iter().map(String::as_str).collect();
    if first == NODE_COLS {
        Ok(Input::NodeCsv(path.to_path_buf()))
    } else if first == POD_COLS {
        Ok(Input::Pods(path.to_path_buf(), true))
    } else if first == POD_COLS[..5] {
        Ok(Input::Pods(path.to_path_buf(), false))
    } else {
        Err(TraceError::at_line(
            &display_name(path),
            1,
            "",
            format!(
                "not an openb file: expected the header {:?} (nodes) or {:?} (pods), found another \
                 first line ({} fields)",
                NODE_COLS.join(","),
                POD_COLS.join(","),
                first.len()
            ),
        ))
    }
}

/// Converts openb node lists and pod lists.
pub fn import(cx: &mut ImportContext<'_>, inputs: &[PathBuf]) -> Result<(), TraceError> {
    let classified = inputs
        .iter()
        .map(|p| classify(p))
        .collect::<Result<Vec<_>, _>>()?;
    let node_lists = classified
        .iter()
        .filter(|i| !matches!(i, Input::Pods(..)))
        .count();
    if node_lists > 1 {
        return Err(TraceError::at_field(
            "alibaba-openb",
            "inputs",
            "give one node list: the lists renumber their nodes, so their names collide",
        ));
    }
    let pod_lists = classified.len() - node_lists;
    cx.summary
        .note("qos → priority: LS 1000, Guaranteed 1000, Burstable 500, BE 0");
    for input in &classified {
        match input {
            Input::NodeCsv(p) => read_node_csv(cx, p)?,
            Input::NodeYaml(p) => {
                let nodes = crate::nodes::load_nodes(p)?;
                cx.summary.read.insert(display_name(p), nodes.len() as u64);
                cx.nodes.extend(nodes);
            }
            Input::Pods(p, full) => {
                let ns = if pod_lists > 1 {
                    namespace_from_file(p)
                } else {
                    cx.opts.namespace()
                };
                read_pods(cx, p, *full, &ns)?;
            }
        }
    }
    Ok(())
}

fn namespace_from_file(p: &Path) -> String {
    let stem = p
        .file_name()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_default();
    let stem = stem.split('.').next().unwrap_or("");
    let ns: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let ns = ns.trim_matches('-');
    ns.chars().take(63).collect()
}

fn read_node_csv(cx: &mut ImportContext<'_>, path: &Path) -> Result<(), TraceError> {
    let mut rows = Rows::open(path, true, &[])?;
    while let Some(r) = rows.next_row()? {
        let name = r.str(0).to_string();
        if name.is_empty() {
            return Err(r.err_at(0, "empty node name"));
        }
        let cpu = r.u64(1)? as i64;
        let mem = r.u64(2)? as i64;
        let gpus = r.u64(3)? as i64;
        let model = r.str(4);
        let mut cap = ResourceList::new();
        cap.insert("cpu".into(), build::milli(cpu));
        cap.insert("memory".into(), quantity(&r, 2, &format!("{mem}Mi"))?);
        cap.insert("pods".into(), Quantity::from_value(1001));
        let mut labels = Labels::new();
        labels.insert("beta.kubernetes.io/os".into(), "linux".into());
        if gpus > 0 {
            cap.insert(gpu::COUNT.into(), Quantity::from_value(gpus));
            cap.insert(gpu::MILLI.into(), Quantity::from_value(gpus * 1000));
            if model.is_empty() {
                return Err(r.err_at(4, "a GPU node needs a model"));
            }
            labels.insert(gpu::MODEL.into(), model.to_string());
        }
        let node = build::node(&name, cap, labels);
        let node = build::checked(node, |m| r.err("", m))?;
        cx.nodes.push(node);
    }
    cx.summary.read.insert(rows.file.clone(), rows.count);
    Ok(())
}

fn quantity(r: &super::rows::Row<'_>, col: usize, s: &str) -> Result<Quantity, TraceError> {
    Quantity::parse(s).map_err(|e| r.err_at(col, e.to_string()))
}

/// The priority a qos class maps to.
pub fn qos_priority(qos: &str) -> Option<i32> {
    match qos {
        "LS" | "Guaranteed" => Some(1000),
        "Burstable" => Some(500),
        "BE" => Some(0),
        _ => None,
    }
}

fn read_pods(
    cx: &mut ImportContext<'_>,
    path: &Path,
    full: bool,
    ns: &str,
) -> Result<(), TraceError> {
    let mut rows = Rows::open(path, true, &[])?;
    if !full {
        cx.summary.note(
            "5-column multigpu lists have no times: pods arrive at t=0 in file order and never end",
        );
    }
    while let Some(r) = rows.next_row()? {
        if cx.pods_full() {
            cx.summary.skip("past --max-pods");
            continue;
        }
        let name = r.str(0).to_string();
        if name.is_empty() {
            return Err(r.err_at(0, "empty pod name"));
        }
        let cpu = r.u64(1)? as i64;
        let mem = r.u64(2)? as i64;
        let num_gpu = r.u64(3)? as i64;
        let gpu_milli = r.u64(4)? as i64;
        if gpu_milli > 1000 {
            return Err(r.err_at(4, format!("{gpu_milli} is more than one GPU (1000)")));
        }
        if (num_gpu == 0) != (gpu_milli == 0) {
            return Err(r.err_at(
                4,
                format!(
                    "num_gpu {num_gpu} and gpu_milli {gpu_milli} disagree (both or neither are 0)"
                ),
            ));
        }
        let mut req = ResourceList::new();
        req.insert("cpu".into(), build::milli(cpu));
        req.insert("memory".into(), quantity(&r, 2, &format!("{mem}Mi"))?);
        if num_gpu > 0 {
            req.insert(gpu::MILLI.into(), Quantity::from_value(num_gpu * gpu_milli));
            if gpu_milli == 1000 {
                req.insert(gpu::COUNT.into(), Quantity::from_value(num_gpu));
            }
        }
        let mut pod = build::pod(ns, &name, req);
        if num_gpu > 0 {
            let a = &mut pod.metadata.annotations;
            a.insert(gpu::MILLI.into(), gpu_milli.to_string());
            a.insert(gpu::COUNT.into(), num_gpu.to_string());
        }
        let (at, run_for, delete_at) = if full {
            let spec: BTreeSet<&str> = r.str(5).split('|').filter(|s| !s.is_empty()).collect();
            if !spec.is_empty() {
                let models: Vec<String> = spec.iter().map(|s| s.to_string()).collect();
                pod.metadata
                    .annotations
                    .insert(gpu::MODEL.into(), models.join("|"));
                pod.spec.affinity = Some(Box::new(Affinity {
                    node_affinity: Some(NodeAffinity {
                        required: Some(NodeSelector {
                            node_selector_terms: vec![NodeSelectorTerm {
                                match_expressions: vec![NodeSelectorRequirement {
                                    key: gpu::MODEL.into(),
                                    operator: "In".into(),
                                    values: models,
                                }],
                                ..NodeSelectorTerm::default()
                            }],
                        }),
                        ..NodeAffinity::default()
                    }),
                    ..Affinity::default()
                }));
            }
            let qos = r.str(6);
            let prio = qos_priority(qos).ok_or_else(|| {
                r.err_at(
                    6,
                    format!("unknown qos {qos:?}; expected LS, BE, Burstable or Guaranteed"),
                )
            })?;
            pod.spec.priority = Some(prio);
            pod.metadata
                .labels
                .insert("alibabacloud.com/qos".into(), qos.to_string());
            let created = r.u64(8)? as i64;
            let deleted = r.u64(9)? as i64;
            let scheduled = r.opt_i64(10)?;
            if deleted < created {
                return Err(r.err_at(
                    9,
                    format!("deletion_time {deleted} is before creation_time {created}"),
                ));
            }
            let secs =
                |s: i64, col: usize| build::secs_to_micros(s as f64).map_err(|m| r.err_at(col, m));
            match scheduled {
                Some(s) => {
                    if s < created || s > deleted {
                        return Err(r.err_at(
                            10,
                            format!("scheduled_time {s} is outside creation..deletion ({created}..{deleted})"),
                        ));
                    }
                    (
                        secs(created, 8)?,
                        Some(SimDuration(secs(deleted - s, 9)?)),
                        None,
                    )
                }
                None => (secs(created, 8)?, None, Some(secs(deleted, 9)?)),
            }
        } else {
            (0, None, None)
        };
        let key = (pod.metadata.namespace.clone(), pod.metadata.name.clone());
        build::create(cx, at, pod, run_for, |m| r.err("", m))?;
        if let Some(d) = delete_at {
            cx.sink.push(
                d,
                InputEvent::DeletePod {
                    namespace: key.0,
                    name: key.1,
                },
            )?;
        }
    }
    cx.summary.read.insert(rows.file.clone(), rows.count);
    Ok(())
}
