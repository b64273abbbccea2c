//! Alibaba cluster traces other than openb (see [`super::openb`]). GPUs use the scheme of
//! [`super`]'s module doc. Mapping choices, per trace:
//!
//! **v2017** (`server_event.csv`, headerless: timestamp, machine_id, event_type, event_detail,
//! cpus, memory, disk; `batch_task.csv` with its header), recognised by content:
//! - machines → nodes `m-<id>` with `cpu` = cores and `memory` = normalised × the machine
//!   shape's memory (required); disk is not modelled. `add` at t=0 → initial node, later →
//!   AddNode. `softerror`/`harderror` → UpdateNode cordoning the node (`unschedulable: true`,
//!   annotation `ksim.io/last-event`): per the trace doc no new work goes there, running work
//!   stays. There is no recovery event, so the node stays cordoned.
//! - tasks → `number_of_instances` pods `j<job>-t<task>-<i>` created at `task_create_time`
//!   (clamped to 0 for tasks created before the trace), requesting cpu = value/100 cores (the
//!   column holds 50, 100, ...: hundredths of a core, as in v2018) and memory = normalised ×
//!   shape memory. Terminated and Failed tasks run for `end − create`; Running and Waiting ones
//!   have no `runFor`. Skipped with reasons: no cpu/memory (the Waiting rows), end before
//!   create, zero instances, instances past `max_instances_per_task`.
//!
//! **v2018** (headerless; `machine_meta` 7 columns, `container_meta` 8, `batch_task` 9):
//! machines → nodes (`_` → `-` in names), labels `alibaba.com/failure-domain-1/2`; a later row
//! with another status → UpdateNode, cordoned unless `USING`. Containers → pods at their first
//! row (later snapshots are counted and skipped), cpu `cpu_request`/100 cores, memory
//! `mem_size`/100 × shape memory, label `app_du`, the trace's machine in the annotation
//! `ksim.io/trace-node`; long-running (no `runFor`). Batch tasks as v2017 (plan_cpu /100 cores,
//! plan_mem /100 × shape memory; `Terminated`/`Failed` run for end − start). Normalised values
//! of −1 or 101 (invalid per the trace doc) are skipped with that reason.
//!
//! **v2020 machine spec** (`machine,gpu_type,cap_cpu,cap_mem,cap_gpu`, headerless): nodes named
//! by the machine hash, cpu cores, memory GiB (the doc's "GB"), GPUs with model `gpu_type`
//! (none for `CPU` machines).
//!
//! **v2026 spot GPU nodes** (`gpu_model,gpu_capacity_num,cpu_num,node_name`): nodes
//! `spot-<node_name>`; the list has no memory, so every node gets the machine shape's memory
//! (required).
//!
//! **v2025 DLRM** (`disaggregated_DLRM_trace.csv`): instances → pods named `instance_sn`,
//! labels `app: <app_name>` and `alibaba.com/role: CN|HN`, requests cpu (cores), memory (GiB),
//! GPUs, `ephemeral-storage` = `disk_request` GiB and `ksim.io/rdma` = `rdma_request` (percent of
//! a NIC; nodes need that resource, e.g. 100 per NIC, in the node pool). Limits are not
//! modelled (scheduling reads requests). `max_instance_per_node`: 1 → required pod
//! anti-affinity on `kubernetes.io/hostname` among pods of the same app (exact); k > 1 → a
//! topology spread constraint on `kubernetes.io/hostname` with `maxSkew: k`, DoNotSchedule
//! (exact while some eligible node holds none of the app's pods, which is the common case in a
//! large cluster; a looser cap otherwise); −1 → none. The value is also kept in the annotation
//! `ksim.io/max-instances-per-node`. Times: created at `creation_time` (empty = before the
//! trace: t=0); `runFor = deletion − scheduled` (from 0 when both creation and scheduled
//! are empty); never scheduled → DeletePod at deletion; no deletion → runs to the horizon.
//! The trace has no nodes: give node pools.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use ksim_api::meta::LabelSelector;
use ksim_api::{
    Affinity, Labels, Node, PodAffinity, PodAffinityTerm, Quantity, ResourceList,
    TopologySpreadConstraint,
};
use ksim_engine::{InputEvent, SimDuration};

use super::build;
use super::gpu;
use super::rows::{Row, Rows};
use super::{ImportContext, ImportFormat, MachineShape};
use crate::error::TraceError;
use crate::io::display_name;

fn gib(x: f64) -> Quantity {
    scaled_bytes(x, 1u64 << 30)
}

/// `fraction × unit` bytes, rounded to whole bytes (written in Mi when exact).
fn scaled_bytes(fraction: f64, unit: u64) -> Quantity {
    let b = (fraction * unit as f64).round();
    build::bytes(b.clamp(0.0, 9.0e15) as i64)
}

fn shape_memory(shape: &MachineShape, fraction: f64) -> Quantity {
    build::bytes(
        (shape.memory.value() as f64 * fraction)
            .round()
            .clamp(0.0, 9.0e15) as i64,
    )
}

fn gpu_resources(cap: &mut ResourceList, gpus: i64) {
    if gpus > 0 {
        cap.insert(gpu::COUNT.into(), Quantity::from_value(gpus));
        // Saturating: an absurd count is refused by the node check, with its field.
        cap.insert(
            gpu::MILLI.into(),
            Quantity::from_value(gpus.saturating_mul(1000)),
        );
    }
}

fn finish_rows(cx: &mut ImportContext<'_>, rows: &Rows) {
    cx.summary.read.insert(rows.file.clone(), rows.count);
}

/// Pushes the pods of one batch task.
#[allow(clippy::too_many_arguments)]
fn batch_pods(
    cx: &mut ImportContext<'_>,
    r: &Row<'_>,
    base: &str,
    instances: u64,
    create: i64,
    end: i64,
    finished: bool,
    req: ResourceList,
) -> Result<(), TraceError> {
    let start = create.max(0);
    if create < 0 {
        cx.summary
            .note("tasks created before the trace (negative times) start at t=0");
    }
    let at = build::secs_to_micros(start as f64).map_err(|m| r.err("", m))?;
    let run_for = if finished {
        Some(SimDuration(
            build::secs_to_micros((end - start) as f64).map_err(|m| r.err("", m))?,
        ))
    } else {
        None
    };
    let cap = cx.opts.max_instances_per_task.unwrap_or(u64::MAX);
    let ns = cx.opts.namespace();
    for i in 0..instances {
        if i >= cap {
            cx.summary.skip("instance past --max-instances-per-task");
            continue;
        }
        if cx.pods_full() {
            cx.summary.skip("past --max-pods");
            continue;
        }
        let pod = build::pod(&ns, &format!("{base}-{i}"), req.clone());
        build::create(cx, at, pod, run_for, |m| r.err("", m))?;
    }
    Ok(())
}

pub fn import_v2017(cx: &mut ImportContext<'_>, inputs: &[PathBuf]) -> Result<(), TraceError> {
    let shape = cx.opts.machine(ImportFormat::AlibabaV2017)?.clone();
    for p in inputs {
        let first = Rows::peek_first(p)?;
        if first.first().is_some_and(|c| c == "task_create_time") {
            v2017_tasks(cx, p, &shape)?;
        } else if first.len() == 7 {
            v2017_servers(cx, p, &shape)?;
        } else {
            return Err(TraceError::at_line(&display_name(p), 1, "", "not a v2017 file: expected server_event.csv (7 columns, no header) or batch_task.csv (header task_create_time,...)"));
        }
    }
    Ok(())
}

fn v2017_servers(
    cx: &mut ImportContext<'_>,
    p: &Path,
    shape: &MachineShape,
) -> Result<(), TraceError> {
    let mut rows = Rows::open(
        p,
        false,
        &[
            "timestamp",
            "machine_id",
            "event_type",
            "event_detail",
            "cpus",
            "memory",
            "disk",
        ],
    )?;
    let mut known: BTreeMap<String, Node> = BTreeMap::new();
    let mut errors = Vec::new();
    while let Some(r) = rows.next_row()? {
        let t = r.i64(0)?;
        let name = format!("m-{}", r.u64(1)?);
        match r.str(2) {
            "add" => {
                let mut cap = ResourceList::new();
                cap.insert(
                    "cpu".into(),
                    Quantity::from_value(i64::try_from(r.u64(4)?).unwrap_or(i64::MAX)),
                );
                let mem = r.f64(5)?;
                if !(0.0..=1.0).contains(&mem) {
                    return Err(r.err_at(5, format!("normalised memory {mem} is outside 0..1")));
                }
                cap.insert("memory".into(), shape_memory(shape, mem));
                let node =
                    build::checked(build::node(&name, cap, Labels::new()), |m| r.err("", m))?;
                if known.insert(name.clone(), node.clone()).is_some() {
                    cx.summary.skip("machine added twice");
                    continue;
                }
                if t <= 0 {
                    cx.nodes.push(node);
                } else {
                    let at = build::secs_to_micros(t as f64).map_err(|m| r.err_at(0, m))?;
                    cx.sink.push(
                        at,
                        InputEvent::AddNode {
                            node: Box::new(node),
                        },
                    )?;
                }
            }
            kind @ ("softerror" | "harderror") => {
                // Errors are applied after all adds (the file is not time-ordered).
                errors.push((t, name, kind.to_string(), r.str(3).to_string(), r.line));
            }
            other => {
                return Err(r.err_at(
                    2,
                    format!("unknown event_type {other:?}; expected add, softerror or harderror"),
                ))
            }
        }
    }
    errors.sort();
    for (t, name, kind, detail, _line) in errors {
        let Some(node) = known.get_mut(&name) else {
            cx.summary.skip("error event for a machine never added");
            continue;
        };
        node.spec.unschedulable = true;
        node.metadata
            .annotations
            .insert("ksim.io/last-event".into(), format!("{kind}: {detail}"));
        let at = build::secs_to_micros(t.max(0) as f64)
            .map_err(|m| TraceError::at_field(&rows.file, "timestamp", m))?;
        cx.sink.push(
            at,
            InputEvent::UpdateNode {
                node: Box::new(node.clone()),
            },
        )?;
    }
    cx.summary
        .note("v2017 soft/hard errors cordon the node (unschedulable) for the rest of the trace");
    finish_rows(cx, &rows);
    Ok(())
}

fn v2017_tasks(
    cx: &mut ImportContext<'_>,
    p: &Path,
    shape: &MachineShape,
) -> Result<(), TraceError> {
    let mut rows = Rows::open(p, true, &[])?;
    while let Some(r) = rows.next_row()? {
        let create = r.i64(0)?;
        let end = r.i64(1)?;
        let job = r.str(2).to_string();
        let task = r.str(3).to_string();
        let n = r.u64(4)?;
        let status = r.str(5).to_string();
        let (Some(cpu), Some(mem)) = (r.opt_f64(6)?, r.opt_f64(7)?) else {
            cx.summary
                .skip("task without cpu/memory request (Waiting rows)");
            continue;
        };
        if end < create {
            cx.summary.skip("task ends before it starts");
            continue;
        }
        if n == 0 {
            cx.summary.skip("task with 0 instances");
            continue;
        }
        if cpu < 0.0 || !(0.0..=1.0).contains(&mem) {
            return Err(r.err(
                "",
                format!("cpu {cpu} or normalised memory {mem} out of range"),
            ));
        }
        let mut req = ResourceList::new();
        req.insert("cpu".into(), build::milli((cpu * 10.0).round() as i64));
        req.insert("memory".into(), shape_memory(shape, mem));
        let finished = matches!(status.as_str(), "Terminated" | "Failed");
        batch_pods(
            cx,
            &r,
            &format!("j{job}-t{task}"),
            n,
            create,
            end,
            finished,
            req,
        )?;
    }
    finish_rows(cx, &rows);
    Ok(())
}

fn dns_name(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect()
}

pub fn import_v2018(cx: &mut ImportContext<'_>, inputs: &[PathBuf]) -> Result<(), TraceError> {
    let shape = cx.opts.machine(ImportFormat::AlibabaV2018)?.clone();
    for p in inputs {
        match Rows::peek_first(p)?.len() {
            7 => v2018_machines(cx, p, &shape)?,
            8 => v2018_containers(cx, p, &shape)?,
            9 => v2018_tasks(cx, p, &shape)?,
            n => return Err(TraceError::at_line(&display_name(p), 1, "", format!("not a v2018 file: {n} columns (machine_meta has 7, container_meta 8, batch_task 9)"))),
        }
    }
    Ok(())
}

fn valid_norm(v: f64) -> bool {
    (0.0..=100.0).contains(&v)
}

fn v2018_machines(
    cx: &mut ImportContext<'_>,
    p: &Path,
    shape: &MachineShape,
) -> Result<(), TraceError> {
    let mut rows = Rows::open(
        p,
        false,
        &[
            "machine_id",
            "time_stamp",
            "failure_domain_1",
            "failure_domain_2",
            "cpu_num",
            "mem_size",
            "status",
        ],
    )?;
    let mut known: BTreeMap<String, Node> = BTreeMap::new();
    while let Some(r) = rows.next_row()? {
        let name = dns_name(r.str(0));
        let t = r.i64(1)?;
        let mem = r.f64(5)?;
        if !valid_norm(mem) {
            cx.summary.skip("invalid normalised value (-1 or 101)");
            continue;
        }
        let status = r.str(6).to_string();
        let at = build::secs_to_micros(t.max(0) as f64).map_err(|m| r.err_at(1, m))?;
        if let Some(node) = known.get_mut(&name) {
            let cordon = status != "USING";
            if node.spec.unschedulable != cordon {
                node.spec.unschedulable = cordon;
                node.metadata
                    .annotations
                    .insert("ksim.io/last-event".into(), status.clone());
                cx.sink.push(
                    at,
                    InputEvent::UpdateNode {
                        node: Box::new(node.clone()),
                    },
                )?;
            } else {
                cx.summary.skip("machine row without a status change");
            }
            continue;
        }
        let mut cap = ResourceList::new();
        cap.insert(
            "cpu".into(),
            Quantity::from_value(i64::try_from(r.u64(4)?).unwrap_or(i64::MAX)),
        );
        cap.insert("memory".into(), shape_memory(shape, mem / 100.0));
        let mut labels = Labels::new();
        labels.insert("alibaba.com/failure-domain-1".into(), r.str(2).to_string());
        labels.insert("alibaba.com/failure-domain-2".into(), dns_name(r.str(3)));
        let mut node = build::checked(build::node(&name, cap, labels), |m| r.err("", m))?;
        node.spec.unschedulable = status != "USING";
        known.insert(name, node.clone());
        if t <= 0 {
            cx.nodes.push(node);
        } else {
            cx.sink.push(
                at,
                InputEvent::AddNode {
                    node: Box::new(node),
                },
            )?;
        }
    }
    finish_rows(cx, &rows);
    Ok(())
}

fn v2018_containers(
    cx: &mut ImportContext<'_>,
    p: &Path,
    shape: &MachineShape,
) -> Result<(), TraceError> {
    let mut rows = Rows::open(
        p,
        false,
        &[
            "container_id",
            "machine_id",
            "time_stamp",
            "app_du",
            "status",
            "cpu_request",
            "cpu_limit",
            "mem_size",
        ],
    )?;
    let mut seen = HashSet::new();
    let ns = cx.opts.namespace();
    while let Some(r) = rows.next_row()? {
        let name = dns_name(r.str(0));
        if !seen.insert(name.clone()) {
            cx.summary.skip("repeated container snapshot");
            continue;
        }
        if cx.pods_full() {
            cx.summary.skip("past --max-pods");
            continue;
        }
        let t = r.i64(2)?;
        let cpu = r.f64(5)?;
        let mem = r.f64(7)?;
        if !valid_norm(mem) || cpu < 0.0 {
            cx.summary.skip("invalid normalised value (-1 or 101)");
            continue;
        }
        let mut req = ResourceList::new();
        req.insert("cpu".into(), build::milli((cpu * 10.0).round() as i64));
        req.insert("memory".into(), shape_memory(shape, mem / 100.0));
        let mut pod = build::pod(&ns, &name, req);
        pod.metadata.labels.insert("app".into(), dns_name(r.str(3)));
        pod.metadata
            .annotations
            .insert("ksim.io/trace-node".into(), dns_name(r.str(1)));
        let at = build::secs_to_micros(t.max(0) as f64).map_err(|m| r.err_at(2, m))?;
        build::create(cx, at, pod, None, |m| r.err("", m))?;
    }
    finish_rows(cx, &rows);
    Ok(())
}

fn v2018_tasks(
    cx: &mut ImportContext<'_>,
    p: &Path,
    shape: &MachineShape,
) -> Result<(), TraceError> {
    let mut rows = Rows::open(
        p,
        false,
        &[
            "task_name",
            "instance_num",
            "job_name",
            "task_type",
            "status",
            "start_time",
            "end_time",
            "plan_cpu",
            "plan_mem",
        ],
    )?;
    while let Some(r) = rows.next_row()? {
        let n = r.u64(1)?;
        let start = r.i64(5)?;
        let end = r.i64(6)?;
        let (Some(cpu), Some(mem)) = (r.opt_f64(7)?, r.opt_f64(8)?) else {
            cx.summary.skip("task without cpu/memory request");
            continue;
        };
        if !valid_norm(mem) || cpu < 0.0 {
            cx.summary.skip("invalid normalised value (-1 or 101)");
            continue;
        }
        if end < start && end != 0 {
            cx.summary.skip("task ends before it starts");
            continue;
        }
        if n == 0 {
            cx.summary.skip("task with 0 instances");
            continue;
        }
        let mut req = ResourceList::new();
        req.insert("cpu".into(), build::milli((cpu * 10.0).round() as i64));
        req.insert("memory".into(), shape_memory(shape, mem / 100.0));
        let finished = matches!(r.str(4), "Terminated" | "Failed") && end >= start;
        let base = format!("{}-{}", dns_name(r.str(2)), dns_name(r.str(0)));
        batch_pods(cx, &r, &base, n, start, end, finished, req)?;
    }
    finish_rows(cx, &rows);
    Ok(())
}

pub fn import_v2020_machines(
    cx: &mut ImportContext<'_>,
    inputs: &[PathBuf],
) -> Result<(), TraceError> {
    for p in inputs {
        let mut rows = Rows::open(
            p,
            false,
            &["machine", "gpu_type", "cap_cpu", "cap_mem", "cap_gpu"],
        )?;
        while let Some(r) = rows.next_row()? {
            if r.line == 1 && r.str(0) == "machine" {
                continue; // a header some copies carry
            }
            let name = dns_name(r.str(0));
            let mut cap = ResourceList::new();
            cap.insert(
                "cpu".into(),
                Quantity::from_value(i64::try_from(r.u64(2)?).unwrap_or(i64::MAX)),
            );
            cap.insert("memory".into(), gib(r.u64(3)? as f64));
            let gpus = i64::try_from(r.u64(4)?).unwrap_or(i64::MAX);
            gpu_resources(&mut cap, gpus);
            let mut labels = Labels::new();
            let model = r.str(1);
            if gpus > 0 && model != "CPU" {
                labels.insert(gpu::MODEL.into(), model.to_string());
            }
            cx.nodes
                .push(build::checked(build::node(&name, cap, labels), |m| {
                    r.err("", m)
                })?);
        }
        finish_rows(cx, &rows);
    }
    Ok(())
}

pub fn import_v2026_spot(cx: &mut ImportContext<'_>, inputs: &[PathBuf]) -> Result<(), TraceError> {
    let shape = cx.opts.machine.clone().ok_or_else(|| {
        TraceError::at_field(
            "alibaba-v2026-spot-nodes",
            "machine",
            "the node list has no memory column: give a machine shape whose memory every node gets",
        )
    })?;
    cx.summary.note(format!(
        "v2026 spot nodes have no memory column: every node gets {}",
        shape.memory
    ));
    for p in inputs {
        let mut rows = Rows::open(p, true, &[])?;
        let want = ["gpu_model", "gpu_capacity_num", "cpu_num", "node_name"];
        if rows.columns != want {
            return Err(TraceError::at_line(
                &rows.file,
                1,
                "",
                format!("expected the header {}", want.join(",")),
            ));
        }
        while let Some(r) = rows.next_row()? {
            let name = format!("spot-{}", dns_name(r.str(3)));
            let gpus = i64::try_from(r.u64(1)?).unwrap_or(i64::MAX);
            let mut cap = ResourceList::new();
            cap.insert(
                "cpu".into(),
                Quantity::from_value(i64::try_from(r.u64(2)?).unwrap_or(i64::MAX)),
            );
            cap.insert("memory".into(), shape.memory.clone());
            gpu_resources(&mut cap, gpus);
            let mut labels = Labels::new();
            if gpus > 0 {
                labels.insert(gpu::MODEL.into(), r.str(0).to_string());
            }
            cx.nodes
                .push(build::checked(build::node(&name, cap, labels), |m| {
                    r.err("", m)
                })?);
        }
        finish_rows(cx, &rows);
    }
    Ok(())
}

const DLRM_COLS: [&str; 17] = [
    "instance_sn",
    "role",
    "app_name",
    "cpu_request",
    "cpu_limit",
    "gpu_request",
    "gpu_limit",
    "rdma_request",
    "rdma_limit",
    "memory_request",
    "memory_limit",
    "disk_request",
    "disk_limit",
    "max_instance_per_node",
    "creation_time",
    "scheduled_time",
    "deletion_time",
];

/// The extended resource DLRM's RDMA share maps to.
pub const RDMA_RESOURCE: &str = "ksim.io/rdma";

pub fn import_v2025_dlrm(cx: &mut ImportContext<'_>, inputs: &[PathBuf]) -> Result<(), TraceError> {
    if cx.opts.node_pools.is_empty() {
        cx.summary
            .note("the DLRM trace has no nodes: nodes.yaml is empty unless node pools are given");
    }
    cx.summary.note("max_instance_per_node: 1 → pod anti-affinity; k>1 → topology spread maxSkew k on hostname (a cap only while some node has none of the app)");
    let ns = cx.opts.namespace();
    for p in inputs {
        let mut rows = Rows::open(p, true, &[])?;
        if rows.columns != DLRM_COLS {
            return Err(TraceError::at_line(
                &rows.file,
                1,
                "",
                format!("expected the DLRM header {}", DLRM_COLS.join(",")),
            ));
        }
        while let Some(r) = rows.next_row()? {
            if cx.pods_full() {
                cx.summary.skip("past --max-pods");
                continue;
            }
            let name = dns_name(r.str(0));
            let app = dns_name(r.str(2));
            let mut req = ResourceList::new();
            req.insert(
                "cpu".into(),
                Quantity::from_value(i64::try_from(r.u64(3)?).unwrap_or(i64::MAX)),
            );
            let gpus = i64::try_from(r.u64(5)?).unwrap_or(i64::MAX);
            if gpus > 0 {
                req.insert(gpu::COUNT.into(), Quantity::from_value(gpus));
                req.insert(gpu::MILLI.into(), Quantity::from_value(gpus * 1000));
            }
            let rdma = i64::try_from(r.u64(7)?).unwrap_or(i64::MAX);
            if rdma > 0 {
                req.insert(RDMA_RESOURCE.into(), Quantity::from_value(rdma));
            }
            let mem = r.f64(9)?;
            let disk = r.f64(11)?;
            if mem < 0.0 || disk < 0.0 {
                return Err(r.err("", "negative memory or disk request"));
            }
            req.insert("memory".into(), gib(mem));
            if disk > 0.0 {
                req.insert("ephemeral-storage".into(), gib(disk));
            }
            let mut pod = build::pod(&ns, &name, req);
            pod.metadata.labels.insert("app".into(), app.clone());
            pod.metadata
                .labels
                .insert("alibaba.com/role".into(), r.str(1).to_string());
            let cap = r.i64(13)?;
            let selector = LabelSelector {
                match_labels: [("app".to_string(), app.clone())].into_iter().collect(),
                ..LabelSelector::default()
            };
            if cap >= 1 {
                pod.metadata
                    .annotations
                    .insert("ksim.io/max-instances-per-node".into(), cap.to_string());
            }
            if cap == 1 {
                pod.spec.affinity = Some(Box::new(Affinity {
                    pod_anti_affinity: Some(PodAffinity {
                        required: vec![PodAffinityTerm {
                            label_selector: Some(selector),
                            topology_key: "kubernetes.io/hostname".into(),
                            ..PodAffinityTerm::default()
                        }],
                        ..PodAffinity::default()
                    }),
                    ..Affinity::default()
                }));
            } else if cap > 1 {
                pod.spec
                    .topology_spread_constraints
                    .push(TopologySpreadConstraint {
                        max_skew: i32::try_from(cap).map_err(|_| r.err_at(13, "too large"))?,
                        topology_key: "kubernetes.io/hostname".into(),
                        when_unsatisfiable: "DoNotSchedule".into(),
                        label_selector: Some(selector),
                        ..TopologySpreadConstraint::default()
                    });
            } else if cap != -1 && cap != 0 {
                return Err(r.err_at(
                    13,
                    format!("{cap} is neither −1 (unlimited) nor a positive cap"),
                ));
            }
            let created = r.opt_f64(14)?;
            let scheduled = r.opt_f64(15)?;
            let deleted = r.opt_f64(16)?;
            let us = |s: f64, c: usize| build::secs_to_micros(s).map_err(|m| r.err_at(c, m));
            let at = match created {
                Some(c) => us(c, 14)?,
                None => 0,
            };
            let (run_for, delete_at) = match (created, scheduled, deleted) {
                (_, Some(s), Some(d)) if d >= s => (Some(SimDuration(us(d - s, 16)?)), None),
                (_, Some(_), Some(_)) => {
                    return Err(r.err_at(16, "deletion_time is before scheduled_time"))
                }
                (None, None, Some(d)) => (Some(SimDuration(us(d, 16)?)), None),
                (Some(_), None, Some(d)) => (None, Some(us(d, 16)?)),
                (_, _, None) => (None, None),
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
        finish_rows(cx, &rows);
    }
    Ok(())
}
