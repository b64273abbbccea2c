//! Workload controllers in the engine, asserted as a user would notice them: how many pods run,
//! when replacements appear, which nodes DaemonSet pods land on, how many Job pods run at once.

use std::collections::{BTreeMap, BTreeSet};

use ksim_api::object::{ApiObject, ObjectKind};
use ksim_api::Node;
use ksim_engine::config::{CostModels, CycleCost, EngineConfig};
use ksim_engine::{InputEvent, Outcome, Record, SimTime, Simulation, TimedEvent, VecSource};
use ksim_scheduler::framework::Registry;
use serde_json::{json, Value};

fn node(name: &str) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": {"cpu": "32", "memory": "64Gi", "pods": "110"}}
    }))
    .expect("node")
}

fn object(v: Value) -> ApiObject {
    ApiObject::from_value("test", &v).expect("object")
}

fn workload(kind: &str, name: &str, spec: Value) -> ApiObject {
    let mut spec = spec;
    spec["selector"] = json!({"matchLabels": {"app": name}});
    let ann = spec
        .get("runFor")
        .cloned()
        .map(|r| json!({"ksim.io/run-for": r}))
        .unwrap_or(json!({}));
    if let Some(m) = spec.as_object_mut() {
        m.remove("runFor");
    }
    spec["template"] = json!({
        "metadata": {"labels": {"app": name}, "annotations": ann},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}
    });
    object(json!({"kind": kind, "metadata": {"name": name}, "spec": spec}))
}

fn at(s: f64, event: InputEvent) -> TimedEvent {
    TimedEvent {
        at: SimTime((s * 1e6).round() as i64),
        event,
    }
}

fn create(o: ApiObject) -> InputEvent {
    InputEvent::CreateObject {
        object: Box::new(o),
    }
}

fn update(o: ApiObject) -> InputEvent {
    InputEvent::UpdateObject {
        object: Box::new(o),
    }
}

fn cfg(horizon: i64) -> EngineConfig {
    EngineConfig {
        horizon: Some(SimTime::from_secs(horizon)),
        costs: CostModels {
            scheduling_cycle: CycleCost::zero(),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn run(cfg: EngineConfig, nodes: Vec<Node>, events: Vec<TimedEvent>) -> Vec<Record> {
    let mut sim = Simulation::new(
        cfg,
        &Default::default(),
        &Registry::in_tree(),
        nodes,
        Default::default(),
    )
    .expect("simulation");
    sim.add_source(Box::new(VecSource::new(events)))
        .expect("source");
    let mut records = Vec::new();
    sim.run(&mut |r: &Record| records.push(r.clone()))
        .expect("run");
    records
}

/// Pods alive (created and not ended) and bound (bound and not ended) at the end, by name.
fn running(records: &[Record]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for r in records {
        match r {
            Record::PodBound { name, node, .. } => {
                out.insert(name.clone(), node.clone());
            }
            Record::PodEnded { name, .. } => {
                out.remove(name);
            }
            _ => {}
        }
    }
    out
}

fn created(records: &[Record]) -> Vec<(SimTime, String)> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::PodCreated { at, name, .. } => Some((*at, name.clone())),
            _ => None,
        })
        .collect()
}

fn nodes(n: usize) -> Vec<Node> {
    (0..n).map(|i| node(&format!("n{i}"))).collect()
}

#[test]
fn a_deployment_of_50_replicas_runs_50_pods_and_scales_to_120() {
    let r = run(
        cfg(120),
        nodes(10),
        vec![
            at(
                0.0,
                create(workload("Deployment", "web", json!({"replicas": 50}))),
            ),
            at(
                60.0,
                update(workload("Deployment", "web", json!({"replicas": 120}))),
            ),
        ],
    );
    let c = created(&r);
    let before: Vec<_> = c
        .iter()
        .filter(|(t, _)| *t < SimTime::from_secs(60))
        .collect();
    assert_eq!(before.len(), 50);
    // Created one reaction delay (1 s) after the event.
    assert!(before.iter().all(|(t, _)| *t == SimTime::from_secs(1)));
    let after: Vec<_> = c
        .iter()
        .filter(|(t, _)| *t >= SimTime::from_secs(60))
        .collect();
    assert_eq!(after.len(), 70);
    assert!(after.iter().all(|(t, _)| *t == SimTime::from_secs(61)));
    assert_eq!(running(&r).len(), 120);
    // Upstream naming: <deploy>-<template hash>-<5 chars>.
    for (_, n) in &c {
        let parts: Vec<_> = n.split('-').collect();
        assert_eq!(parts.len(), 3, "{n}");
        assert_eq!((parts[0], parts[1].len(), parts[2].len()), ("web", 10, 5));
    }
    let names: BTreeSet<_> = c.iter().map(|(_, n)| n.clone()).collect();
    assert_eq!(names.len(), 120);
}

#[test]
fn scale_down_deletes_the_surplus() {
    let r = run(
        cfg(100),
        nodes(2),
        vec![
            at(
                0.0,
                create(workload("ReplicaSet", "rs", json!({"replicas": 6}))),
            ),
            at(
                50.0,
                update(workload("ReplicaSet", "rs", json!({"replicas": 2}))),
            ),
        ],
    );
    assert_eq!(running(&r).len(), 2);
    let deleted = r
        .iter()
        .filter(|x| matches!(x, Record::PodEnded { outcome: Outcome::Deleted, at, .. } if *at == SimTime::from_secs(51)))
        .count();
    assert_eq!(deleted, 4);
}

#[test]
fn removing_a_node_recreates_its_replicaset_pods_elsewhere() {
    let r = run(
        cfg(100),
        nodes(3),
        vec![
            at(
                0.0,
                create(workload("ReplicaSet", "rs", json!({"replicas": 9}))),
            ),
            at(30.0, InputEvent::RemoveNode { name: "n0".into() }),
        ],
    );
    let lost = r
        .iter()
        .filter(|x| {
            matches!(
                x,
                Record::PodEnded {
                    outcome: Outcome::Failed,
                    ..
                }
            )
        })
        .count();
    assert!(lost > 0, "n0 had pods");
    let run_now = running(&r);
    assert_eq!(run_now.len(), 9);
    assert!(run_now.values().all(|n| n != "n0"));
    // The replacements are new rs-xxxxx pods created at 31 s, not the engine's `-rN` copies.
    let late: Vec<_> = created(&r)
        .into_iter()
        .filter(|(t, _)| *t == SimTime::from_secs(31))
        .collect();
    assert_eq!(late.len(), lost);
    assert!(late
        .iter()
        .all(|(_, n)| n.starts_with("rs-") && n.len() == 8));
}

#[test]
fn a_daemonset_runs_one_pod_per_node_including_a_node_added_later() {
    let r = run(
        cfg(200),
        nodes(4),
        vec![
            at(0.0, create(workload("DaemonSet", "agent", json!({})))),
            at(
                100.0,
                InputEvent::AddNode {
                    node: Box::new(node("late")),
                },
            ),
        ],
    );
    let on: BTreeMap<String, usize> = running(&r).values().fold(BTreeMap::new(), |mut m, n| {
        *m.entry(n.clone()).or_default() += 1;
        m
    });
    assert_eq!(on.len(), 5, "{on:?}");
    assert!(on.values().all(|&c| c == 1));
    assert!(on.contains_key("late"));
}

#[test]
fn a_job_never_runs_more_than_parallelism_and_completes_after_its_10th_success() {
    let r = run(
        cfg(1000),
        nodes(4),
        vec![at(
            0.0,
            create(workload(
                "Job",
                "batch",
                json!({"completions": 10, "parallelism": 3, "runFor": "10s"}),
            )),
        )],
    );
    let mut live = BTreeSet::new();
    let mut max = 0;
    let mut succeeded = 0;
    for x in &r {
        match x {
            Record::PodBound { name, .. } => {
                live.insert(name.clone());
                max = max.max(live.len());
            }
            Record::PodEnded { name, outcome, .. } => {
                live.remove(name);
                if *outcome == Outcome::Succeeded {
                    succeeded += 1;
                }
            }
            _ => {}
        }
    }
    assert_eq!(max, 3);
    assert_eq!(succeeded, 10);
    assert_eq!(created(&r).len(), 10, "no pod after the 10th success");
}

#[test]
fn bad_workloads_name_the_field() {
    let cases = [
        (
            json!({"kind": "Deployment", "metadata": {"name": "d"},
                   "spec": {"replicas": -3, "selector": {"matchLabels": {"a": "b"}}}}),
            "test: spec.replicas: must be greater than or equal to 0",
        ),
        (
            json!({"kind": "ReplicaSet", "metadata": {"name": "d"},
                   "spec": {"selector": {"matchLabels": {"a": "b"}},
                            "template": {"metadata": {"labels": {"a": "c"}}}}}),
            "test: spec.template.metadata.labels: `selector` does not match template `labels`",
        ),
        (
            json!({"kind": "DaemonSet", "metadata": {"name": "d"}, "spec": {}}),
            "test: spec.selector: a DaemonSet needs a selector",
        ),
    ];
    for (v, want) in cases {
        let err = ApiObject::from_value("test", &v).unwrap_err().to_string();
        assert!(err.starts_with(want), "got {err}\nwant {want}");
    }
    assert!(ObjectKind::Job.is_workload());
}
