//! Graceful termination (issue 34): a deleted, scaled-down or preempted pod on a node keeps
//! its resources for its `terminationGracePeriodSeconds` (API default 30 s) with its
//! `deletionTimestamp` set, as upstream's NodeInfo counts a terminating pod; the
//! `costs.terminationGrace` and `costs.victimGrace` overrides stay possible.

use ksim_api::object::ApiObject;
use ksim_api::{Node, Pod};
use ksim_engine::config::{CostModels, CycleCost, EngineConfig};
use ksim_engine::{
    InputEvent, Outcome, Record, SimDuration, SimTime, Simulation, TimedEvent, VecSource,
};
use ksim_scheduler::framework::Registry;
use ksim_scheduler::node_info::ClusterObjects;
use serde_json::{json, Value};

fn node(name: &str, cpu: &str) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": {"cpu": cpu, "memory": "16Gi", "pods": "110"}}
    }))
    .expect("node")
}

fn pod(name: &str, cpu: &str, priority: i32, grace: Option<i64>) -> Pod {
    let mut spec = json!({"priority": priority,
        "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]});
    if let Some(g) = grace {
        spec["terminationGracePeriodSeconds"] = json!(g);
    }
    serde_json::from_value(
        json!({"metadata": {"name": name, "namespace": "default"}, "spec": spec}),
    )
    .expect("pod")
}

fn at(s: i64, event: InputEvent) -> TimedEvent {
    TimedEvent {
        at: SimTime::from_secs(s),
        event,
    }
}

fn create(p: Pod) -> InputEvent {
    InputEvent::CreatePod {
        pod: Box::new(p),
        run_for: None,
    }
}

fn delete(name: &str) -> InputEvent {
    InputEvent::DeletePod {
        namespace: "default".into(),
        name: name.into(),
    }
}

fn object(v: Value) -> Box<ApiObject> {
    Box::new(ApiObject::from_value("test", &v).expect("object"))
}

fn cfg(costs: impl FnOnce(&mut CostModels)) -> EngineConfig {
    let mut c = CostModels {
        scheduling_cycle: CycleCost::zero(),
        bind_latency: SimDuration::ZERO,
        ..Default::default()
    };
    costs(&mut c);
    EngineConfig {
        horizon: Some(SimTime::from_secs(400)),
        costs: c,
        ..Default::default()
    }
}

fn run(cfg: EngineConfig, nodes: Vec<Node>, events: Vec<TimedEvent>) -> Vec<Record> {
    let mut sim = Simulation::new(
        cfg,
        &Default::default(),
        &Registry::in_tree(),
        nodes,
        ClusterObjects::default(),
    )
    .expect("simulation");
    sim.add_source(Box::new(VecSource::new(events)))
        .expect("source");
    let mut out = Vec::new();
    sim.run(&mut |r: &Record| out.push(r.clone())).expect("run");
    out
}

fn ended(r: &[Record], who: &str) -> Option<(SimTime, Outcome)> {
    r.iter().find_map(|x| match x {
        Record::PodEnded {
            at, name, outcome, ..
        } if name == who => Some((*at, *outcome)),
        _ => None,
    })
}

fn bound(r: &[Record], who: &str) -> Option<SimTime> {
    r.iter().find_map(|x| match x {
        Record::PodBound { at, name, .. } if name == who => Some(*at),
        _ => None,
    })
}

/// A deleted pod holds its node for the default 30 s; the pod waiting for its space binds
/// only then.
#[test]
fn deleted_pod_keeps_its_resources_for_the_default_grace_period() {
    let events = vec![
        at(0, create(pod("old", "3", 0, None))),
        at(10, delete("old")),
        at(11, create(pod("new", "3", 0, None))),
    ];
    let r = run(cfg(|_| {}), vec![node("n1", "4")], events);
    assert_eq!(
        ended(&r, "old"),
        Some((SimTime::from_secs(40), Outcome::Deleted))
    );
    assert_eq!(bound(&r, "new"), Some(SimTime::from_secs(40)));
}

/// The pod's own `terminationGracePeriodSeconds`; 0 deletes at once; an unscheduled pod is
/// deleted at once whatever its grace.
#[test]
fn the_pods_own_grace_period_applies() {
    let events = vec![
        at(0, create(pod("five", "1", 0, Some(5)))),
        at(0, create(pod("zero", "1", 0, Some(0)))),
        at(0, create(pod("huge", "64", 0, Some(600)))),
        at(10, delete("five")),
        at(10, delete("zero")),
        at(10, delete("huge")),
    ];
    let r = run(cfg(|_| {}), vec![node("n1", "4")], events);
    assert_eq!(
        ended(&r, "five"),
        Some((SimTime::from_secs(15), Outcome::Deleted))
    );
    assert_eq!(
        ended(&r, "zero"),
        Some((SimTime::from_secs(10), Outcome::Deleted))
    );
    assert_eq!(
        ended(&r, "huge"),
        Some((SimTime::from_secs(10), Outcome::Deleted)),
        "pending"
    );
}

/// `costs.terminationGrace` overrides every pod's grace period.
#[test]
fn termination_grace_cost_overrides() {
    let events = vec![
        at(0, create(pod("old", "3", 0, Some(30)))),
        at(10, delete("old")),
        at(11, create(pod("new", "3", 0, None))),
    ];
    let r = run(
        cfg(|c| c.termination_grace = Some(SimDuration::from_secs(2))),
        vec![node("n1", "4")],
        events,
    );
    assert_eq!(
        ended(&r, "old"),
        Some((SimTime::from_secs(12), Outcome::Deleted))
    );
    assert_eq!(bound(&r, "new"), Some(SimTime::from_secs(12)));
}

/// A preemption victim terminates for its own grace period (here 20 s) and the preemptor,
/// nominated meanwhile, binds when it is gone; `costs.victimGrace: 0s` keeps the old
/// immediate end.
#[test]
fn preemption_victims_terminate_for_their_grace_period() {
    let events = vec![
        at(0, create(pod("low", "3", 0, Some(20)))),
        at(5, create(pod("high", "3", 1000, None))),
    ];
    let r = run(cfg(|_| {}), vec![node("n1", "4")], events.clone());
    assert_eq!(
        ended(&r, "low"),
        Some((SimTime::from_secs(25), Outcome::Preempted))
    );
    assert_eq!(bound(&r, "high"), Some(SimTime::from_secs(25)));
    let r = run(
        cfg(|c| c.victim_grace = Some(SimDuration::ZERO)),
        vec![node("n1", "4")],
        events,
    );
    assert_eq!(
        ended(&r, "low"),
        Some((SimTime::from_secs(5), Outcome::Preempted))
    );
}

/// A second deletion of a terminating pod changes nothing.
#[test]
fn deleting_a_terminating_pod_again_changes_nothing() {
    let events = vec![
        at(0, create(pod("old", "1", 0, None))),
        at(10, delete("old")),
        at(20, delete("old")),
    ];
    let r = run(cfg(|_| {}), vec![node("n1", "4")], events);
    let ends = r
        .iter()
        .filter(|x| matches!(x, Record::PodEnded { name, .. } if name == "old"))
        .count();
    assert_eq!(ends, 1);
    assert_eq!(
        ended(&r, "old"),
        Some((SimTime::from_secs(40), Outcome::Deleted))
    );
}

fn statefulset(replicas: i32) -> Box<ApiObject> {
    object(json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "db", "namespace": "default"},
        "spec": {"replicas": replicas, "serviceName": "db",
                 "selector": {"matchLabels": {"app": "db"}},
                 "template": {"metadata": {"labels": {"app": "db"}},
                              "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}}))
}

/// An OrderedReady StatefulSet scaled to 0 deletes its highest ordinal and waits until that
/// pod is gone (30 s) before deleting the next, as upstream's waits for a terminating pod.
#[test]
fn ordered_ready_scale_down_waits_for_each_termination() {
    let events = vec![
        at(
            0,
            InputEvent::CreateObject {
                object: statefulset(3),
            },
        ),
        at(
            100,
            InputEvent::UpdateObject {
                object: statefulset(0),
            },
        ),
    ];
    let r = run(cfg(|_| {}), vec![node("n1", "4")], events);
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
            // Each one informer delay (10 ms) after the previous is gone, plus its 30 s grace
            // (the controller does not poll while it waits: the pod's end wakes it).
            (
                (SimTime::ZERO + ksim_engine::SimDuration::from_micros(130_010_000)),
                "db-2".to_string()
            ),
            (
                (SimTime::ZERO + ksim_engine::SimDuration::from_micros(160_020_000)),
                "db-1".to_string()
            ),
            (
                (SimTime::ZERO + ksim_engine::SimDuration::from_micros(190_030_000)),
                "db-0".to_string()
            ),
        ]
    );
}

/// A ReplicaSet scaled down: the surplus pods terminate for 30 s; the controller does not
/// count them (upstream's `FilterActivePods`) and creates nothing in their place.
#[test]
fn replica_set_scale_down_terminates_gracefully() {
    let rs = |n: i32| {
        object(json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "rs", "namespace": "default"},
            "spec": {"replicas": n, "selector": {"matchLabels": {"app": "rs"}},
                     "template": {"metadata": {"labels": {"app": "rs"}},
                                  "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}]}}}}))
    };
    let events = vec![
        at(0, InputEvent::CreateObject { object: rs(4) }),
        at(50, InputEvent::UpdateObject { object: rs(1) }),
    ];
    let r = run(cfg(|_| {}), vec![node("n1", "4")], events);
    let ends: Vec<SimTime> = r
        .iter()
        .filter_map(|x| match x {
            Record::PodEnded {
                at,
                outcome: Outcome::Deleted,
                ..
            } => Some(*at),
            _ => None,
        })
        .collect();
    // Scaled down one informer delay (10 ms) after the update, then 30 s of grace.
    assert_eq!(
        ends,
        vec![SimTime::ZERO + ksim_engine::SimDuration::from_micros(80_010_000); 3]
    );
    let created = r
        .iter()
        .filter(|x| matches!(x, Record::PodCreated { .. }))
        .count();
    assert_eq!(created, 4);
}

/// Pods terminating after a scale-down whose node is then removed fail with it and are not
/// re-created (the ReplicaSet already stopped counting them); the one live pod is replaced
/// by its controller.
#[test]
fn terminating_pods_lost_with_their_node_are_not_recreated() {
    let rs = |n: i32| {
        object(json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "rs", "namespace": "default"},
            "spec": {"replicas": n, "selector": {"matchLabels": {"app": "rs"}},
                     "template": {"metadata": {"labels": {"app": "rs"}},
                                  "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}]}}}}))
    };
    let events = vec![
        at(0, InputEvent::CreateObject { object: rs(4) }),
        at(50, InputEvent::UpdateObject { object: rs(1) }),
        at(60, InputEvent::RemoveNode { name: "n1".into() }),
    ];
    let r = run(cfg(|_| {}), vec![node("n1", "4")], events);
    let created = r
        .iter()
        .filter(|x| matches!(x, Record::PodCreated { .. }))
        .count();
    assert_eq!(created, 5, "4, then one replacement of the live pod");
    let failed = r
        .iter()
        .filter(|x| matches!(x, Record::PodEnded { outcome: Outcome::Failed, at, .. } if *at == SimTime::from_secs(60)))
        .count();
    assert_eq!(failed, 4);
}
