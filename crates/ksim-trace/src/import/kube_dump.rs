//! Kubernetes cluster dumps: `kubectl get nodes,pods,pdb,priorityclasses -A -o json|yaml` (a
//! `kind: List`, several files, or multi-document YAML) → the cluster at t=0.
//!
//! - Nodes go to `nodes.yaml` as they are (with defaulting).
//! - Pods bound to a node (`spec.nodeName`) become CreatePod at t=0 with `spec.nodeName` kept:
//!   they are already running there. They come first, so the cluster is full before anything
//!   is scheduled. Pending pods follow, also at t=0, in `creationTimestamp` order (then file
//!   order). Neither gets a `runFor`: a snapshot says nothing of how long pods will live.
//! - Pods that are `Succeeded` or `Failed` are skipped (they hold no resources); so are pods
//!   being deleted (`metadata.deletionTimestamp` set), counted with that reason.
//! - PriorityClasses are honoured as the Priority admission plugin does: a pod without
//!   `spec.priority` gets its class's value, or the `globalDefault` class's value when it names
//!   none. A class missing from the dump leaves the priority unset (counted, not an error: the
//!   dump may simply not include classes).
//! - PodDisruptionBudgets, Namespaces, Services, ReplicaSets, StatefulSets and
//!   ReplicationControllers (which preemption and spreading read), and the storage objects the
//!   volume plugins read (PersistentVolumes, PersistentVolumeClaims, StorageClasses, CSINodes,
//!   CSIDrivers, CSIStorageCapacities, VolumeAttachments: `kubectl get pv,pvc,sc,csinode,
//!   csidriver,csistoragecapacity,volumeattachment -A -o yaml`) are written to `objects.yaml`
//!   as a List, for the scenario's `cluster.objectsFiles`. Storage objects are checked as they
//!   are read, so a bad one is reported against the dump, not the scenario.
//! - Workloads (Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs with a pod template)
//!   go to `objects.yaml` too, so their controllers run; they adopt the dumped pods whose
//!   controller `ownerReferences` name them and create only what is missing. A ReplicaSet owned
//!   by a Deployment loses its template's containers (it stays a selector for spreading: its
//!   Deployment runs it); a finished Job (condition Complete or Failed) is skipped; a running Job's
//!   `completions` is reduced by its `status.succeeded` and its `backoffLimit` by its
//!   `status.failed`, so it does not run them again.
//! - When the dump has workloads, its PriorityClasses (but the built-ins) go to `objects.yaml`
//!   too: the controllers' new pods are admitted against them. (A dump of pods alone needs no
//!   classes: its pods get their priorities here.)
//! - A pod with the annotation `ksim.io/run-for` (a Go duration; `ksim run --dump-at` writes
//!   what is left of a controller pod's run there) runs for that long from t=0.
//! - Other kinds are counted as skipped.

use std::path::{Path, PathBuf};

use ksim_api::load::{flatten_items, kind_of};
use ksim_api::{Pod, PriorityClass};
use ksim_engine::SimDuration;
use serde_json::Value;

use super::build;
use super::ImportContext;
use crate::error::TraceError;
use crate::io::{display_name, read_text};
use crate::native::{decode_node_to_add, decode_object_to_create, decode_pod};
use crate::nodes::parse_documents;

/// The annotation giving a pod its run time (as the engine's controllers read it).
const RUN_FOR_ANNOTATION: &str = "ksim.io/run-for";

/// The kinds written to `objects.yaml`.
pub const OBJECT_KINDS: [&str; 15] = [
    "PodDisruptionBudget",
    "Namespace",
    "Service",
    "ReplicaSet",
    "StatefulSet",
    "ReplicationController",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "StorageClass",
    "CSINode",
    "CSIDriver",
    "CSIStorageCapacity",
    "VolumeAttachment",
    "LimitRange",
    "ResourceQuota",
];

pub fn import(
    cx: &mut ImportContext<'_>,
    inputs: &[PathBuf],
    out_dir: &Path,
) -> Result<(), TraceError> {
    let mut items: Vec<(String, usize, Value)> = Vec::new();
    for p in inputs {
        let name = display_name(p);
        let text = read_text(p)?;
        let list = flatten_items(parse_documents(&name, &text)?);
        cx.summary.read.insert(name.clone(), list.len() as u64);
        items.extend(
            list.into_iter()
                .enumerate()
                .map(|(i, v)| (name.clone(), i, v)),
        );
    }
    // Priority classes first: pods need them.
    // The built-in classes exist in every cluster, dumped or not.
    let mut classes: std::collections::BTreeMap<String, i32> =
        ksim_api::defaults::BUILTIN_PRIORITY_CLASSES
            .iter()
            .map(|(n, v)| (n.to_string(), *v))
            .collect();
    let mut global_default: Option<i32> = None;
    let mut class_objects = Vec::new();
    for (file, i, v) in &items {
        if kind_of(v) == "PriorityClass" {
            let pc: PriorityClass = ksim_api::load::decode(file, v)
                .map_err(|e| TraceError::at_field(file, format!("items[{i}]"), e.to_string()))?;
            if pc.global_default {
                global_default = Some(pc.value);
            }
            classes.insert(pc.metadata.name.clone(), pc.value);
            if !ksim_api::defaults::BUILTIN_PRIORITY_CLASSES
                .iter()
                .any(|(n, _)| *n == pc.metadata.name)
            {
                class_objects.push(v.clone());
            }
        }
    }
    let mut bound: Vec<(Pod, Option<SimDuration>)> = Vec::new();
    let mut pending: Vec<(String, usize, Pod, Option<SimDuration>)> = Vec::new();
    let mut workloads = 0;
    let mut objects = Vec::new();
    let mut missing_class = 0;
    for (file, i, mut v) in items {
        let at = |f: String| {
            if f.is_empty() {
                format!("items[{i}]")
            } else {
                format!("items[{i}]: {f}")
            }
        };
        let kind = kind_of(&v).to_string();
        match kind.as_str() {
            "Node" => {
                let n =
                    // generateName kept: the run names the node from its seed.
                    decode_node_to_add(&v, "").map_err(|(f, m)| TraceError::at_field(&file, at(f), m))?;
                cx.nodes.push(n);
            }
            "Pod" => {
                let mut pod =
                    decode_pod(&v, "").map_err(|(f, m)| TraceError::at_field(&file, at(f), m))?;
                match pod.status.phase.as_str() {
                    "Succeeded" | "Failed" => {
                        cx.summary.skip("pod already finished (Succeeded/Failed)");
                        continue;
                    }
                    _ => {}
                }
                if pod.metadata.deletion_timestamp.is_some() {
                    cx.summary.skip("pod being deleted (deletionTimestamp set)");
                    continue;
                }
                if pod.spec.priority.is_none() {
                    if pod.spec.priority_class_name.is_empty() {
                        pod.spec.priority = global_default;
                    } else if let Some(v) = classes.get(&pod.spec.priority_class_name) {
                        pod.spec.priority = Some(*v);
                    } else {
                        missing_class += 1;
                    }
                }
                let run_for = match pod.metadata.annotations.get(RUN_FOR_ANNOTATION) {
                    None => None,
                    Some(t) => Some(SimDuration::parse(t).map_err(|e| {
                        TraceError::at_field(
                            &file,
                            at(format!("metadata.annotations[{RUN_FOR_ANNOTATION}]")),
                            e,
                        )
                    })?),
                };
                if pod.spec.node_name.is_empty() {
                    pending.push((
                        pod.metadata.creation_timestamp.clone().unwrap_or_default(),
                        pending.len(),
                        pod,
                        run_for,
                    ));
                } else {
                    bound.push((pod, run_for));
                }
            }
            "PriorityClass" => {}
            "ReplicaSet" | "Job" if controller_skips(&mut v, cx) => {}
            k if ksim_api::object::ObjectKind::from_kind(k).is_some() => {
                // Read (and checked) now, written as kubectl wrote it.
                // generateName kept: the run creates it at t=0 and names it from its seed.
                let o = decode_object_to_create(&v, "")
                    .map_err(|(f, m)| TraceError::at_field(&file, at(f), m))?;
                if o.kind().is_workload() {
                    workloads += 1;
                }
                objects.push(v);
            }
            k if OBJECT_KINDS.contains(&k) => objects.push(v),
            "" => {
                return Err(TraceError::at_field(
                    &file,
                    at("kind".into()),
                    "missing kind",
                ))
            }
            other => cx.summary.skip(format!("kind {other} is not used")),
        }
    }
    if missing_class > 0 {
        cx.summary.note(format!(
            "{missing_class} pods name a priorityClassName missing from the dump; their priority is unset"
        ));
    }
    // RFC 3339 timestamps in UTC sort as text.
    pending.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    for (pod, run_for) in bound
        .into_iter()
        .chain(pending.into_iter().map(|(_, _, p, r)| (p, r)))
    {
        let key = pod.key();
        build::create(cx, 0, pod, run_for, |m| {
            TraceError::at_field("kube-dump", key.clone(), m)
        })?;
    }
    if workloads > 0 && !class_objects.is_empty() {
        // Classes first in the List (the scenario creates them before the workloads anyway).
        objects.splice(0..0, class_objects);
    }
    if !objects.is_empty() {
        let path = out_dir.join("objects.yaml");
        let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": objects});
        let text = serde_saphyr::to_string(&list)
            .map_err(|e| TraceError::at_field(&display_name(&path), "", e.to_string()))?;
        std::fs::write(&path, text).map_err(|e| TraceError::io(&path, e))?;
        cx.summary.other_files.push(path);
        cx.summary.note(format!(
            "{} PodDisruptionBudgets/Namespaces/Services/workload sets/storage objects written to objects.yaml (scenario cluster.objectsFiles)",
            objects.len()
        ));
    }
    Ok(())
}

/// Prepares a dumped ReplicaSet or Job for the controllers (see the module docs); true when the
/// object is to be skipped.
fn controller_skips(v: &mut Value, cx: &mut ImportContext<'_>) -> bool {
    let owned_by_deployment = v
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .is_some_and(|refs| {
            refs.iter().any(|r| {
                r.get("kind").and_then(Value::as_str) == Some("Deployment")
                    && r.get("controller").and_then(Value::as_bool) == Some(true)
            })
        });
    match kind_of(v) {
        "ReplicaSet" if owned_by_deployment => {
            // Without template containers a ReplicaSet is read as a selector, not run.
            if let Some(spec) = v
                .pointer_mut("/spec/template/spec")
                .and_then(Value::as_object_mut)
            {
                spec.remove("containers");
            }
            false
        }
        "Job" => {
            let finished = v
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .is_some_and(|cs| {
                    cs.iter().any(|c| {
                        matches!(
                            c.get("type").and_then(Value::as_str),
                            Some("Complete" | "Failed")
                        ) && c.get("status").and_then(Value::as_str) == Some("True")
                    })
                });
            if finished {
                cx.summary
                    .skip("Job already finished (condition Complete or Failed)");
                return true;
            }
            let done = v
                .pointer("/status/succeeded")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            if done > 0 {
                if let Some(c) = v.pointer_mut("/spec/completions") {
                    if let Some(n) = c.as_i64() {
                        *c = Value::from((n - done).max(0));
                    }
                }
            }
            let failed = v
                .pointer("/status/failed")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            if failed > 0 {
                // Upstream's default backoffLimit is 6.
                let limit = v
                    .pointer("/spec/backoffLimit")
                    .and_then(Value::as_i64)
                    .unwrap_or(6);
                if let Some(spec) = v.pointer_mut("/spec").and_then(Value::as_object_mut) {
                    spec.insert("backoffLimit".into(), Value::from((limit - failed).max(0)));
                }
            }
            false
        }
        _ => false,
    }
}
