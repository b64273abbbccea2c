//! SimKube traces (`.sktrace`, msgpack, version 2): `events` of applied and deleted tracked
//! objects with Unix-second timestamps, and `pod_lifecycles` keyed by (owner kind, owner
//! `namespace/name`) → pod-spec hash → `[{"Finished": [start, end]} | {"Running": start}]`.
//!
//! Expansion into pods (times relative to the first event):
//! - A bare `Pod` applied → CreatePod at that time. Its lifecycle, when recorded, gives `runFor`
//!   (`end − start` of a Finished entry); Running means it outlived the trace (no `runFor`).
//!   A deleted Pod → DeletePod.
//! - `Deployment`, `ReplicaSet`, `StatefulSet`: the pods of `spec.template`, named
//!   `<owner>-<k>` with k counting up; `spec.replicas` (default 1) is followed at each apply:
//!   scaling up creates pods, scaling down deletes the newest. A changed pod template replaces
//!   every pod at once (approximates a rolling update as a recreate). Deleting the owner deletes
//!   its pods. Recorded lifecycles, if any, are handed out in order to the created pods.
//! - `Job`: `spec.completions` (default 1) pods from `spec.template`, with lifecycles as above.
//! - `CronJob`: one pod per recorded lifecycle entry, created at the entry's start with
//!   `runFor = end − start`; the cron schedule itself is not evaluated, so a CronJob without
//!   recorded lifecycles yields no pods (counted).
//! - Other kinds are counted as skipped.
//!
//! Approximations (also reported in the summary notes): controller behaviour is reduced to the
//! above; pod names are generated, not the controller's random suffixes; the time between an
//! owner change and the pod's creation by its controller is 0.

use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;

use ksim_api::Pod;
use ksim_engine::{InputEvent, SimDuration};
use rmpv::Value as Mp;
use serde_json::Value;

use super::build;
use super::ImportContext;
use crate::error::TraceError;
use crate::io::{display_name, read_bytes};
use crate::native::decode_pod;

/// msgpack → JSON for Kubernetes objects (string keys; other keys are stringified).
fn to_json(v: &Mp) -> Value {
    match v {
        Mp::Nil => Value::Null,
        Mp::Boolean(b) => Value::Bool(*b),
        Mp::Integer(i) => i
            .as_i64()
            .map(Value::from)
            .or_else(|| i.as_u64().map(Value::from))
            .unwrap_or(Value::Null),
        Mp::F32(f) => {
            serde_json::Number::from_f64(f64::from(*f)).map_or(Value::Null, Value::Number)
        }
        Mp::F64(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
        Mp::String(s) => Value::String(s.as_str().unwrap_or("").to_string()),
        Mp::Binary(_) | Mp::Ext(..) => Value::Null,
        Mp::Array(a) => Value::Array(a.iter().map(to_json).collect()),
        Mp::Map(m) => Value::Object(
            m.iter()
                .map(|(k, v)| {
                    let key = match k {
                        Mp::String(s) => s.as_str().unwrap_or("").to_string(),
                        other => other.to_string(),
                    };
                    (key, to_json(v))
                })
                .collect(),
        ),
    }
}

fn get<'a>(m: &'a Mp, key: &str) -> Option<&'a Mp> {
    m.as_map()?
        .iter()
        .find(|(k, _)| k.as_str() == Some(key))
        .map(|(_, v)| v)
}

/// One recorded pod lifetime.
#[derive(Debug, Clone, Copy)]
enum Life {
    Finished(i64, i64),
    Running(i64),
}

fn parse_lifecycles(v: Option<&Mp>) -> BTreeMap<(String, String), VecDeque<Life>> {
    let mut out: BTreeMap<(String, String), VecDeque<Life>> = BTreeMap::new();
    let Some(Mp::Map(entries)) = v else {
        return out;
    };
    for (k, by_hash) in entries {
        let Some([gvk, key]) = k
            .as_array()
            .and_then(|a| <&[Mp; 2]>::try_from(a.as_slice()).ok())
        else {
            continue;
        };
        let owner = (
            gvk.as_str().unwrap_or("").to_string(),
            key.as_str().unwrap_or("").to_string(),
        );
        let list = out.entry(owner).or_default();
        for (_, lives) in by_hash.as_map().into_iter().flatten() {
            for l in lives.as_array().into_iter().flatten() {
                if let Some(f) = get(l, "Finished").and_then(Mp::as_array) {
                    if let (Some(a), Some(b)) = (
                        f.first().and_then(Mp::as_i64),
                        f.get(1).and_then(Mp::as_i64),
                    ) {
                        list.push_back(Life::Finished(a, b));
                    }
                } else if let Some(s) = get(l, "Running").and_then(Mp::as_i64) {
                    list.push_back(Life::Running(s));
                }
            }
        }
    }
    out
}

struct Owner {
    template: Value,
    pods: Vec<String>,
    next: u64,
}

fn gvk_of(obj: &Value) -> String {
    let api = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    format!("{api}.{kind}")
}

pub fn import(cx: &mut ImportContext<'_>, inputs: &[PathBuf]) -> Result<(), TraceError> {
    cx.summary.note("SimKube owners expanded into pods: rolling updates approximated as recreate; controller delays are 0; CronJob pods only from recorded lifecycles");
    for path in inputs {
        let file = display_name(path);
        let bytes = read_bytes(path)?;
        let root = rmpv::decode::read_value(&mut bytes.as_slice()).map_err(|e| {
            TraceError::at_field(&file, "", format!("not a msgpack SimKube trace: {e}"))
        })?;
        let version = get(&root, "version").and_then(Mp::as_i64);
        if version != Some(2) {
            return Err(TraceError::at_field(
                &file,
                "version",
                format!("SimKube trace version {version:?} is not supported (expected 2)"),
            ));
        }
        let mut lifecycles = parse_lifecycles(get(&root, "pod_lifecycles"));
        let Some(events) = get(&root, "events").and_then(Mp::as_array) else {
            return Err(TraceError::at_field(&file, "events", "required"));
        };
        let t0 = events
            .iter()
            .filter_map(|e| get(e, "ts").and_then(Mp::as_i64))
            .min()
            .unwrap_or(0);
        let mut owners: BTreeMap<(String, String), Owner> = BTreeMap::new();
        let mut count = 0;
        for (i, e) in events.iter().enumerate() {
            let field = |f: &str| format!("events[{i}].{f}");
            let ts = get(e, "ts")
                .and_then(Mp::as_i64)
                .ok_or_else(|| TraceError::at_field(&file, field("ts"), "required integer"))?;
            let t = (ts - t0).saturating_mul(1_000_000);
            for (list, deleted) in [("applied_objs", false), ("deleted_objs", true)] {
                for (j, o) in get(e, list)
                    .and_then(Mp::as_array)
                    .into_iter()
                    .flatten()
                    .enumerate()
                {
                    count += 1;
                    let obj = to_json(o);
                    let at = field(&format!("{list}[{j}]"));
                    let gvk = gvk_of(&obj);
                    let ns = obj
                        .pointer("/metadata/namespace")
                        .and_then(Value::as_str)
                        .unwrap_or("default")
                        .to_string();
                    let name = obj
                        .pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string();
                    let key = (gvk.clone(), format!("{ns}/{name}"));
                    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
                    match (kind, deleted) {
                        ("Pod", false) => {
                            let pod = decode_pod(&obj, "").map_err(|(f, m)| {
                                TraceError::at_field(&file, format!("{at}: {f}"), m)
                            })?;
                            let life = lifecycles.get_mut(&key).and_then(VecDeque::pop_front);
                            create(cx, t, pod, life, t0, &file, &at)?;
                        }
                        ("Pod", true) => cx.sink.push(
                            t,
                            InputEvent::DeletePod {
                                namespace: ns,
                                name,
                            },
                        )?,
                        ("Deployment" | "ReplicaSet" | "StatefulSet" | "Job", false) => {
                            let template = obj
                                .pointer("/spec/template")
                                .cloned()
                                .unwrap_or(Value::Null);
                            let want = if kind == "Job" {
                                obj.pointer("/spec/completions")
                                    .and_then(Value::as_u64)
                                    .unwrap_or(1)
                            } else {
                                obj.pointer("/spec/replicas")
                                    .and_then(Value::as_u64)
                                    .unwrap_or(1)
                            } as usize;
                            let owner = owners.entry(key.clone()).or_insert_with(|| Owner {
                                template: template.clone(),
                                pods: Vec::new(),
                                next: 0,
                            });
                            if owner.template != template {
                                for p in owner.pods.drain(..) {
                                    cx.sink.push(
                                        t,
                                        InputEvent::DeletePod {
                                            namespace: ns.clone(),
                                            name: p,
                                        },
                                    )?;
                                }
                                owner.template = template.clone();
                            }
                            while owner.pods.len() > want {
                                if let Some(p) = owner.pods.pop() {
                                    cx.sink.push(
                                        t,
                                        InputEvent::DeletePod {
                                            namespace: ns.clone(),
                                            name: p,
                                        },
                                    )?;
                                }
                            }
                            while owner.pods.len() < want {
                                let pname = format!("{name}-{}", owner.next);
                                owner.next += 1;
                                let pod = pod_from_template(&template, &ns, &pname, kind, &name)
                                    .map_err(|(f, m)| {
                                        TraceError::at_field(
                                            &file,
                                            format!("{at}: spec.template.{f}"),
                                            m,
                                        )
                                    })?;
                                owner.pods.push(pname);
                                let life = lifecycles.get_mut(&key).and_then(VecDeque::pop_front);
                                create(cx, t, pod, life, t0, &file, &at)?;
                            }
                        }
                        ("Deployment" | "ReplicaSet" | "StatefulSet" | "Job", true) => {
                            if let Some(owner) = owners.remove(&key) {
                                for p in owner.pods {
                                    cx.sink.push(
                                        t,
                                        InputEvent::DeletePod {
                                            namespace: ns.clone(),
                                            name: p,
                                        },
                                    )?;
                                }
                            }
                        }
                        ("CronJob", false) => {
                            let template = obj
                                .pointer("/spec/jobTemplate/spec/template")
                                .cloned()
                                .unwrap_or(Value::Null);
                            let lives: Vec<Life> =
                                lifecycles.remove(&key).map(Vec::from).unwrap_or_default();
                            if lives.is_empty() {
                                cx.summary.skip(
                                    "CronJob without recorded lifecycles (schedule not evaluated)",
                                );
                            }
                            for (k, life) in lives.into_iter().enumerate() {
                                let pname = format!("{name}-{k}");
                                let pod = pod_from_template(&template, &ns, &pname, kind, &name)
                                    .map_err(|(f, m)| {
                                        TraceError::at_field(
                                            &file,
                                            format!("{at}: spec.jobTemplate.spec.template.{f}"),
                                            m,
                                        )
                                    })?;
                                let start = match life {
                                    Life::Finished(s, _) | Life::Running(s) => s,
                                };
                                let at_t = (start - t0).max(0).saturating_mul(1_000_000);
                                create(cx, at_t, pod, Some(life), t0, &file, &at)?;
                            }
                        }
                        ("CronJob", true) => {}
                        (k, _) => cx.summary.skip(format!("kind {k} not expanded")),
                    }
                }
            }
        }
        cx.summary.read.insert(file, count);
    }
    Ok(())
}

fn pod_from_template(
    template: &Value,
    ns: &str,
    name: &str,
    owner_kind: &str,
    owner: &str,
) -> Result<Pod, (String, String)> {
    let mut v = template.clone();
    if !v.is_object() {
        return Err((String::new(), "the owner has no pod template".into()));
    }
    if let Some(m) = v.as_object_mut() {
        let meta = m
            .entry("metadata")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert("name".into(), Value::String(name.into()));
            meta.insert("namespace".into(), Value::String(ns.into()));
        }
    }
    let mut pod = decode_pod(&v, "")?;
    pod.metadata
        .owner_references
        .push(ksim_api::meta::OwnerReference {
            kind: owner_kind.to_string(),
            name: owner.to_string(),
            controller: Some(true),
            ..Default::default()
        });
    Ok(pod)
}

fn create(
    cx: &mut ImportContext<'_>,
    t: i64,
    pod: Pod,
    life: Option<Life>,
    _t0: i64,
    file: &str,
    at: &str,
) -> Result<(), TraceError> {
    let run_for = match life {
        Some(Life::Finished(a, b)) if b >= a => {
            Some(SimDuration((b - a).saturating_mul(1_000_000)))
        }
        _ => None,
    };
    build::create(cx, t, pod, run_for, |m| TraceError::at_field(file, at, m))
}
