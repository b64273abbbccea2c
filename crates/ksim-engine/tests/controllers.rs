//! Workload controllers in the engine, asserted as a user would notice them: how many pods run,
//! when replacements appear, which nodes DaemonSet pods land on, how many Job pods run at once.

use std::collections::{BTreeMap, BTreeSet};

use ksim_api::object::{ApiObject, ObjectKind};
use ksim_api::Node;
use ksim_engine::config::{CostModels, CycleCost, EngineConfig};
use ksim_engine::{
    InputEvent, Outcome, Record, SimDuration, SimTime, Simulation, TimedEvent, VecSource,
};
use ksim_scheduler::framework::Registry;
use serde_json::{json, Value};

mod common;
use common::{at, create, created, nodes, object, run, running, update};

fn node(name: &str) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": {"cpu": "32", "memory": "64Gi", "pods": "110"}}
    }))
    .expect("node")
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

/// These tests pin the controllers' own logic in the old flat 1 s reaction delay (the
/// timing model's own tests are in `jobs.rs`), with pods deleted at once
/// (`costs.terminationGrace: 0s`); graceful termination under the controllers is pinned in
/// `tests/graceful.rs`.
fn cfg(horizon: i64) -> EngineConfig {
    EngineConfig {
        horizon: Some(SimTime::from_secs(horizon)),
        controller_delay: Some(ksim_engine::SimDuration::from_secs(1)),
        costs: CostModels {
            scheduling_cycle: CycleCost::zero(),
            termination_grace: Some(SimDuration::ZERO),
            ..Default::default()
        },
        ..Default::default()
    }
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

/// A run that keeps the simulation, so a test can read the cluster objects afterwards.
fn run_sim(
    cfg: EngineConfig,
    nodes: Vec<Node>,
    events: Vec<TimedEvent>,
) -> (Simulation, Vec<Record>) {
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
    (sim, records)
}

fn bound_at(records: &[Record]) -> Vec<(SimTime, String, String)> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::PodBound { at, name, node, .. } => Some((*at, name.clone(), node.clone())),
            _ => None,
        })
        .collect()
}

fn statefulset(replicas: i32, policy: &str) -> ApiObject {
    object(json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "podManagementPolicy": policy,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {
                "metadata": {"labels": {"app": "db"}},
                "spec": {
                    "containers": [{"name": "db", "resources": {"requests": {"cpu": "1"}},
                                    "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]
                }
            },
            "volumeClaimTemplates": [{
                "metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast",
                         "resources": {"requests": {"storage": "10Gi"}}}
            }]
        }
    }))
}

fn fast_class() -> ApiObject {
    object(json!({
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
        "metadata": {"name": "fast"},
        "provisioner": "pd.csi.example.com",
        "volumeBindingMode": "WaitForFirstConsumer"
    }))
}

#[test]
fn an_ordered_ready_statefulset_starts_pods_strictly_in_order_with_bound_claims() {
    let mut c = cfg(300);
    c.costs.pod_startup = ksim_engine::time::SimDuration::from_secs(5);
    let (sim, r) = run_sim(
        c,
        nodes(3),
        vec![
            at(0.0, create(fast_class())),
            at(0.0, create(statefulset(3, "OrderedReady"))),
        ],
    );
    let made = created(&r);
    let names: Vec<&str> = made.iter().map(|(_, n)| n.as_str()).collect();
    assert_eq!(names, ["db-0", "db-1", "db-2"]);
    let bound = bound_at(&r);
    assert_eq!(bound.len(), 3);
    // Pod i+1 is created only once pod i runs: bound + podStartup (5 s) + the reaction (1 s).
    for i in 1..3 {
        let (prev_bound, ..) = bound[i - 1];
        assert_eq!(bound[i - 1].1, format!("db-{}", i - 1));
        assert_eq!(
            made[i].0,
            prev_bound + ksim_engine::time::SimDuration::from_secs(6),
            "db-{i} created one reaction after db-{} ran",
            i - 1
        );
    }
    // One claim per pod, named <template>-<sts>-<ordinal>, provisioned on the pod's node.
    let claims = &sim.snapshot().objects.storage.persistent_volume_claims;
    for (_, pod, node) in &bound {
        let pvc = claims
            .get(&format!("default/data-{pod}"))
            .unwrap_or_else(|| panic!("claim of {pod}"));
        assert!(pvc.is_fully_bound(), "data-{pod} bound");
        assert_eq!(
            pvc.metadata
                .annotations
                .get("volume.kubernetes.io/selected-node"),
            Some(node)
        );
    }
    assert_eq!(claims.len(), 3);
}

#[test]
fn a_statefulset_recreates_a_lost_pod_under_its_name_and_scales_down_from_the_top() {
    let (_, r) = run_sim(
        cfg(300),
        nodes(3),
        vec![
            at(0.0, create(fast_class())),
            at(0.0, create(statefulset(4, "Parallel"))),
            at(100.0, InputEvent::RemoveNode { name: "n0".into() }),
            at(200.0, update(statefulset(2, "Parallel"))),
        ],
    );
    let made = created(&r);
    // Parallel: all four at once, one reaction after the create.
    let first: Vec<_> = made
        .iter()
        .filter(|(t, _)| *t == SimTime::from_secs(1))
        .map(|(_, n)| n.as_str())
        .collect();
    assert_eq!(first, ["db-0", "db-1", "db-2", "db-3"]);
    let bound = bound_at(&r);
    let lost: BTreeSet<String> = bound
        .iter()
        .filter(|(t, _, n)| *t < SimTime::from_secs(100) && n == "n0")
        .map(|(_, p, _)| p.clone())
        .collect();
    assert!(!lost.is_empty(), "n0 had StatefulSet pods");
    let again: BTreeSet<String> = made
        .iter()
        .filter(|(t, _)| *t == SimTime::from_secs(101))
        .map(|(_, n)| n.clone())
        .collect();
    assert_eq!(again, lost, "lost pods come back under their own names");
    // A recreated pod keeps its claim (and so the node its local volume is on: here the
    // provisioned volume has no node affinity, so any node).
    let deleted: BTreeSet<String> = r
        .iter()
        .filter_map(|x| match x {
            Record::PodEnded {
                at,
                name,
                outcome: Outcome::Deleted,
                ..
            } if *at == SimTime::from_secs(201) => Some(name.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        deleted,
        ["db-2", "db-3"].map(String::from).into_iter().collect()
    );
    let left: BTreeSet<String> = running(&r).into_keys().collect();
    assert_eq!(
        left,
        ["db-0", "db-1"].map(String::from).into_iter().collect()
    );
}

#[test]
fn ordered_ready_scale_down_removes_the_highest_ordinal_one_at_a_time() {
    let (_, r) = run_sim(
        cfg(300),
        nodes(2),
        vec![
            at(0.0, create(fast_class())),
            at(0.0, create(statefulset(3, "OrderedReady"))),
            at(100.0, update(statefulset(0, "OrderedReady"))),
        ],
    );
    let deleted: Vec<(SimTime, String)> = r
        .iter()
        .filter_map(|x| match x {
            Record::PodEnded {
                at,
                name,
                outcome: Outcome::Deleted,
                ..
            } => Some((*at, name.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        deleted,
        vec![
            (SimTime::from_secs(101), "db-2".to_string()),
            (SimTime::from_secs(102), "db-1".to_string()),
            (SimTime::from_secs(103), "db-0".to_string()),
        ]
    );
}

fn deployment(replicas: i32, version: &str, strategy: Value, min_ready: i32) -> ApiObject {
    object(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "minReadySeconds": min_ready,
            "strategy": strategy,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}, "annotations": {"version": version}},
                "spec": {"containers": [{"name": "c", "image": format!("web:{version}"),
                                         "resources": {"requests": {"cpu": "500m"}}}]}
            }
        }
    }))
}

/// The hash part of a Deployment pod's name `<deploy>-<hash>-<5 chars>`.
fn hash_of(pod: &str) -> &str {
    pod.split('-').nth(1).unwrap_or("")
}

/// Checks a rolling update of 10 replicas from v1 to v2 at 60 s: live pods never exceed
/// 10 + surge, available pods (bound + startup + minReadySeconds) never drop below
/// 10 − unavailable once the Deployment was first fully available, and the end has 10 pods of
/// the new template.
fn check_rolling(strategy: Value, surge: usize, unavail: usize) {
    let startup = ksim_engine::time::SimDuration::from_secs(2);
    let min_ready = 5;
    let mut c = cfg(400);
    c.costs.pod_startup = startup;
    let r = run(
        c,
        nodes(4),
        vec![
            at(
                0.0,
                create(deployment(10, "v1", strategy.clone(), min_ready)),
            ),
            at(60.0, update(deployment(10, "v2", strategy, min_ready))),
        ],
    );
    let made = created(&r);
    let old_hash = hash_of(&made[0].1).to_string();
    let avail_after = ksim_engine::time::SimDuration::from_secs(2 + i64::from(min_ready));
    // (available from, ended at) per pod.
    let mut spans: BTreeMap<String, (Option<SimTime>, Option<SimTime>)> = BTreeMap::new();
    let mut live = 0usize;
    let mut max_live = 0usize;
    let mut times = BTreeSet::new();
    for x in &r {
        match x {
            Record::PodCreated { name, .. } => {
                live += 1;
                max_live = max_live.max(live);
                spans.insert(name.clone(), (None, None));
            }
            Record::PodBound { at, name, .. } => {
                if let Some(s) = spans.get_mut(name) {
                    s.0 = Some(*at + avail_after);
                }
            }
            Record::PodEnded { at, name, .. } => {
                live -= 1;
                if let Some(s) = spans.get_mut(name) {
                    s.1 = Some(*at);
                }
                times.insert(*at);
            }
            _ => {}
        }
    }
    assert!(max_live <= 10 + surge, "{max_live} pods live at once");
    let available_at = |t: SimTime| {
        spans
            .values()
            .filter(|(a, e)| a.is_some_and(|a| a <= t) && e.is_none_or(|e| e > t))
            .count()
    };
    assert_eq!(
        available_at(SimTime::from_secs(59)),
        10,
        "v1 fully available"
    );
    let mut min_avail = usize::MAX;
    for t in times
        .iter()
        .chain(spans.values().filter_map(|s| s.0.as_ref()))
    {
        if *t >= SimTime::from_secs(59) {
            min_avail = min_avail.min(available_at(*t));
        }
    }
    assert!(
        min_avail >= 10 - unavail,
        "only {min_avail} pods available at some instant"
    );
    let end = running(&r);
    assert_eq!(end.len(), 10);
    assert!(end.keys().all(|p| hash_of(p) != old_hash), "{end:?}");
    let new_hash = hash_of(end.keys().next().expect("pods")).to_string();
    assert!(end.keys().all(|p| hash_of(p) == new_hash));
    // It really rolled: new pods were created over several steps, not all at once.
    let new_steps: BTreeSet<SimTime> = made
        .iter()
        .filter(|(_, n)| hash_of(n) == new_hash)
        .map(|(t, _)| *t)
        .collect();
    assert!(new_steps.len() > 1, "{new_steps:?}");
    assert!(!times.is_empty(), "old pods deleted");
}

#[test]
fn a_rolling_update_stays_within_max_surge_and_max_unavailable() {
    // Integers.
    check_rolling(
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 3, "maxUnavailable": 2}}),
        3,
        2,
    );
    // Percentages: 25% of 10 → surge 3 (rounded up), unavailable 2 (rounded down).
    check_rolling(json!({}), 3, 2);
    // Both zero would block: unavailable becomes 1.
    check_rolling(
        json!({"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}),
        0,
        1,
    );
    // No surge: pods are replaced without ever exceeding 10.
    check_rolling(
        json!({"rollingUpdate": {"maxSurge": "0%", "maxUnavailable": "30%"}}),
        0,
        3,
    );
}

#[test]
fn a_recreate_update_deletes_every_old_pod_before_the_new_ones() {
    let r = run(
        cfg(200),
        nodes(4),
        vec![
            at(
                0.0,
                create(deployment(6, "v1", json!({"type": "Recreate"}), 0)),
            ),
            at(
                60.0,
                update(deployment(6, "v2", json!({"type": "Recreate"}), 0)),
            ),
        ],
    );
    let deleted: Vec<SimTime> = r
        .iter()
        .filter_map(|x| match x {
            Record::PodEnded { at, .. } => Some(*at),
            _ => None,
        })
        .collect();
    assert_eq!(deleted, vec![SimTime::from_secs(61); 6]);
    let new: Vec<_> = created(&r)
        .into_iter()
        .filter(|(t, _)| *t >= SimTime::from_secs(60))
        .collect();
    assert_eq!(new.len(), 6);
    // rolloutRecreate: the sync that scales the old ReplicaSet down ends there; the next one
    // (one reaction later) finds no old pod and scales the new ReplicaSet up.
    assert!(new.iter().all(|(t, _)| *t == SimTime::from_secs(62)));
    assert_eq!(running(&r).len(), 6);
}

fn small_node(name: &str) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"}}
    }))
    .expect("node")
}

/// A workload of `kind` whose pods request 2 CPUs and name `class` (if any).
fn classed(kind: &str, name: &str, replicas: i32, class: &str) -> ApiObject {
    let mut spec = json!({"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]});
    if !class.is_empty() {
        spec["priorityClassName"] = json!(class);
    }
    let mut o = json!({
        "kind": kind, "metadata": {"name": name},
        "spec": {
            "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}}, "spec": spec}
        }
    });
    if kind != "DaemonSet" {
        o["spec"]["replicas"] = json!(replicas);
    }
    object(o)
}

fn class(name: &str, value: i32, global_default: bool, policy: &str) -> ApiObject {
    object(json!({
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": name}, "value": value,
        "globalDefault": global_default, "preemptionPolicy": policy
    }))
}

fn priorities(records: &[Record]) -> BTreeMap<String, i32> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::PodCreated { name, priority, .. } => Some((name.clone(), *priority)),
            _ => None,
        })
        .collect()
}

fn preempted(records: &[Record]) -> Vec<(String, String)> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::PodEnded {
                name,
                outcome: Outcome::Preempted,
                preempted_by,
                ..
            } => Some((name.clone(), preempted_by.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn system_node_critical_daemonset_pods_are_never_preemption_victims() {
    let r = run(
        cfg(300),
        vec![small_node("a"), small_node("b")],
        vec![
            at(0.0, create(class("low", 10, false, "PreemptLowerPriority"))),
            at(
                0.0,
                create(class("high", 1_000_000_000, false, "PreemptLowerPriority")),
            ),
            at(
                0.0,
                create(classed("DaemonSet", "agent", 0, "system-node-critical")),
            ),
            at(0.0, create(classed("ReplicaSet", "filler", 2, "low"))),
            // Ordinary pods of the highest user priority: they preempt the fillers, and then,
            // with only DaemonSet pods left on the nodes, wait.
            at(50.0, create(classed("ReplicaSet", "important", 4, "high"))),
        ],
    );
    let prio = priorities(&r);
    let agents: Vec<_> = prio.keys().filter(|n| n.starts_with("agent-")).collect();
    assert_eq!(agents.len(), 2);
    assert!(agents.iter().all(|a| prio[*a] == 2_000_001_000));
    let victims = preempted(&r);
    assert!(
        victims.iter().all(|(v, _)| v.starts_with("filler-")),
        "{victims:?}"
    );
    // The fillers went (and their replacements, which cannot come back, stay pending).
    let fillers_preempted = victims.len();
    assert!(fillers_preempted >= 2, "{victims:?}");
    let on = running(&r);
    assert_eq!(on.keys().filter(|n| n.starts_with("agent-")).count(), 2);
    assert_eq!(on.keys().filter(|n| n.starts_with("important-")).count(), 2);
}

#[test]
fn global_default_and_preemption_policy_are_resolved_at_creation() {
    let bare = |name: &str| InputEvent::CreatePod {
        pod: Box::new(
            serde_json::from_value(json!({
                "metadata": {"name": name},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}
            }))
            .expect("pod"),
        ),
        run_for: None,
    };
    let r = run(
        cfg(300),
        vec![small_node("a")],
        vec![
            // Before any default class: priority 0.
            at(0.0, bare("old-1")),
            at(0.0, bare("old-2")),
            at(10.0, create(class("batch", 100, true, "Never"))),
            at(
                10.0,
                create(class("urgent", 100, false, "PreemptLowerPriority")),
            ),
            // No class named: the default class, which never preempts.
            at(20.0, create(classed("Deployment", "batch", 1, ""))),
            at(40.0, create(classed("ReplicaSet", "urgent", 1, "urgent"))),
        ],
    );
    let prio = priorities(&r);
    assert_eq!(prio["old-1"], 0);
    let batch = prio
        .keys()
        .find(|n| n.starts_with("batch-"))
        .expect("batch pod");
    assert_eq!(prio[batch], 100);
    // Same priority, but only the PreemptLowerPriority pod preempts; batch waits.
    let victims = preempted(&r);
    assert_eq!(victims.len(), 1, "{victims:?}");
    assert!(victims[0].1.starts_with("default/urgent-"), "{victims:?}");
    let on = running(&r);
    assert!(!on.contains_key(batch));
    assert!(on.keys().any(|n| n.starts_with("urgent-")));
}

#[test]
fn priority_admission_refuses_what_upstream_refuses() {
    let fails = |events: Vec<TimedEvent>| -> String {
        let mut sim = Simulation::new(
            cfg(100),
            &Default::default(),
            &Registry::in_tree(),
            nodes(1),
            Default::default(),
        )
        .expect("simulation");
        sim.add_source(Box::new(VecSource::new(events)))
            .expect("source");
        let mut sink = |_: &Record| {};
        sim.run(&mut sink).expect_err("refused").to_string()
    };
    // Pods refused by admission are recorded and the run goes on (upstream refuses only the
    // pod's creation); a workload whose template names an unknown class is accepted, and each
    // pod its controller tries is refused.
    let refusals = |events: Vec<TimedEvent>| -> Vec<String> {
        let mut sim = Simulation::new(
            cfg(100),
            &Default::default(),
            &Registry::in_tree(),
            nodes(1),
            Default::default(),
        )
        .expect("simulation");
        sim.add_source(Box::new(VecSource::new(events)))
            .expect("source");
        let mut out = Vec::new();
        let mut sink = |r: &Record| {
            if let Record::PodRefused { message, .. } = r {
                out.push(message.clone());
            }
        };
        sim.run(&mut sink).expect("the run goes on");
        out
    };
    let pod = |spec: Value| InputEvent::CreatePod {
        pod: Box::new(
            serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": spec})).expect("pod"),
        ),
        run_for: None,
    };
    let e = refusals(vec![at(0.0, pod(json!({"priorityClassName": "nope"})))]);
    assert_eq!(
        e,
        vec!["pods \"p\" is forbidden: no PriorityClass with name nope was found".to_string()]
    );
    let e = refusals(vec![
        at(0.0, create(class("c", 5, false, "Never"))),
        at(1.0, pod(json!({"priorityClassName": "c", "priority": 6}))),
    ]);
    assert_eq!(
        e,
        vec!["pods \"p\" is forbidden: the integer value of priority (6) must not be provided in pod spec; priority admission controller computed 5 from the given PriorityClass name".to_string()]
    );
    let e = refusals(vec![
        at(0.0, create(class("c", 5, false, "Never"))),
        at(
            1.0,
            pod(json!({"priorityClassName": "c", "preemptionPolicy": "PreemptLowerPriority"})),
        ),
    ]);
    assert_eq!(
        e,
        vec!["pods \"p\" is forbidden: the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in pod spec; priority admission controller computed Never from the given PriorityClass name".to_string()]
    );
    let e = refusals(vec![at(
        0.0,
        create(classed("DaemonSet", "ds", 0, "missing")),
    )]);
    assert!(!e.is_empty());
    assert!(
        e.iter().all(|m| m.starts_with(
            "pods \"ds-\" is forbidden: no PriorityClass with name missing was found"
        )),
        "{e:?}"
    );
    let e = fails(vec![
        at(0.0, create(class("a", 5, true, "PreemptLowerPriority"))),
        at(0.0, create(class("b", 6, true, "PreemptLowerPriority"))),
    ]);
    assert!(e.contains("only one default can exist"), "{e}");
    // Refused when read: a reserved name, a value above the user maximum, a bad policy.
    for (v, want) in [
        (
            json!({"kind": "PriorityClass", "metadata": {"name": "system-x"}, "value": 1}),
            "metadata.name",
        ),
        (
            json!({"kind": "PriorityClass", "metadata": {"name": "x"}, "value": 2_000_000_000}),
            "value",
        ),
        (
            json!({"kind": "PriorityClass", "metadata": {"name": "x"}, "preemptionPolicy": "Sometimes"}),
            "preemptionPolicy",
        ),
    ] {
        let err = ApiObject::from_value("test", &v).unwrap_err().to_string();
        assert!(err.starts_with(&format!("test: {want}")), "{err}");
    }
}

/// A pod of a dump: bound to `node`, owned by `owner_kind/owner_name`.
fn dumped(name: &str, node: &str, labels: Value, owner_kind: &str, owner_name: &str) -> InputEvent {
    InputEvent::CreatePod {
        pod: Box::new(
            serde_json::from_value(json!({
                "metadata": {"name": name, "labels": labels, "ownerReferences": [{
                    "apiVersion": "apps/v1", "kind": owner_kind, "name": owner_name,
                    "uid": format!("uid-{owner_name}"), "controller": true}]},
                "spec": {"nodeName": node,
                         "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}
            }))
            .expect("pod"),
        ),
        run_for: None,
    }
}

#[test]
fn controllers_adopt_the_dumped_pods_that_name_them_and_do_not_double_create() {
    let r = run(
        cfg(100),
        nodes(3),
        vec![
            at(
                0.0,
                create(workload("Deployment", "web", json!({"replicas": 3}))),
            ),
            at(
                0.0,
                create(workload("StatefulSet", "db", json!({"replicas": 2}))),
            ),
            at(0.0, create(workload("DaemonSet", "agent", json!({})))),
            at(
                0.0,
                dumped(
                    "web-7d4b9c-aaaaa",
                    "n0",
                    json!({"app": "web", "pod-template-hash": "7d4b9c"}),
                    "ReplicaSet",
                    "web-7d4b9c",
                ),
            ),
            at(
                0.0,
                dumped(
                    "web-7d4b9c-bbbbb",
                    "n1",
                    json!({"app": "web", "pod-template-hash": "7d4b9c"}),
                    "ReplicaSet",
                    "web-7d4b9c",
                ),
            ),
            at(
                0.0,
                dumped(
                    "web-7d4b9c-ccccc",
                    "n2",
                    json!({"app": "web", "pod-template-hash": "7d4b9c"}),
                    "ReplicaSet",
                    "web-7d4b9c",
                ),
            ),
            at(
                0.0,
                dumped("db-0", "n1", json!({"app": "db"}), "StatefulSet", "db"),
            ),
            at(
                0.0,
                dumped(
                    "agent-zzzzz",
                    "n0",
                    json!({"app": "agent"}),
                    "DaemonSet",
                    "agent",
                ),
            ),
            at(50.0, InputEvent::RemoveNode { name: "n0".into() }),
        ],
    );
    let made = created(&r);
    let by_controllers: Vec<&str> = made
        .iter()
        .filter(|(t, _)| *t > SimTime::ZERO && *t < SimTime::from_secs(50))
        .map(|(_, n)| n.as_str())
        .collect();
    // Only what the dump lacked: db-1, and the agent of n1 and n2.
    assert_eq!(by_controllers.len(), 3, "{by_controllers:?}");
    assert!(by_controllers.contains(&"db-1"));
    assert_eq!(
        by_controllers
            .iter()
            .filter(|n| n.starts_with("agent-"))
            .count(),
        2
    );
    // n0's web pod is the Deployment's: replaced after the node goes (its agent is not).
    let later: Vec<&str> = made
        .iter()
        .filter(|(t, n)| *t > SimTime::from_secs(50) && n.starts_with("web-"))
        .map(|(_, n)| n.as_str())
        .collect();
    assert_eq!(later.len(), 1, "{later:?}");
    assert!(later[0].starts_with("web-") && !later[0].starts_with("web-7d4b9c-"));
    let on = running(&r);
    assert_eq!(on.keys().filter(|n| n.starts_with("web-")).count(), 3);
    assert_eq!(on.keys().filter(|n| n.starts_with("db-")).count(), 2);
}
