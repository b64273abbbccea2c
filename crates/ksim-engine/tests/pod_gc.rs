//! The pod garbage collector (`pkg/controller/podgc`): orphaned pods of a removed node are
//! deleted at the first run (every `gcCheckPeriod`, 20 s) after the node's quarantine
//! (`quarantineTime`, 40 s) that began at the run that first saw it missing; terminating pods
//! on a node that is not Ready and is tainted out-of-service are deleted at once.

use ksim_api::object::ApiObject;
use ksim_api::{Node, Pod};
use ksim_engine::config::{CostModels, CycleCost, EngineConfig, OnNodeRemoval};
use ksim_engine::{
    InputEvent, Outcome, Record, SimDuration, SimTime, Simulation, TimedEvent, VecSource,
};
use ksim_scheduler::framework::Registry;
use ksim_scheduler::node_info::ClusterObjects;
use serde_json::json;

fn node(name: &str, extra: serde_json::Value) -> Node {
    let mut v = json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"}}
    });
    if let Some(spec) = extra.get("spec") {
        v["spec"] = spec.clone();
    }
    if let Some(c) = extra.get("conditions") {
        v["status"]["conditions"] = c.clone();
    }
    serde_json::from_value(v).expect("node")
}

fn pod(name: &str, node: &str, grace: i64) -> Pod {
    serde_json::from_value(json!({"metadata": {"name": name, "namespace": "default"},
        "spec": {"nodeName": node, "terminationGracePeriodSeconds": grace,
                 "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}))
    .expect("pod")
}

fn at(s: i64, event: InputEvent) -> TimedEvent {
    TimedEvent {
        at: SimTime::from_secs(s),
        event,
    }
}

fn run(gc: bool, events: Vec<TimedEvent>, nodes: Vec<Node>) -> Vec<Record> {
    let mut cfg = EngineConfig {
        horizon: Some(SimTime::from_secs(300)),
        costs: CostModels {
            scheduling_cycle: CycleCost::zero(),
            bind_latency: SimDuration::ZERO,
            ..Default::default()
        },
        on_node_removal: OnNodeRemoval::KeepBound,
        ..Default::default()
    };
    cfg.control_plane.pod_gc.enabled = gc;
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

fn ends(r: &[Record]) -> Vec<(SimTime, String, Outcome)> {
    r.iter()
        .filter_map(|x| match x {
            Record::PodEnded {
                at, name, outcome, ..
            } => Some((*at, name.clone(), *outcome)),
            _ => None,
        })
        .collect()
}

/// Node removed at 50 s: the run at 60 s sees it missing (quarantine until 100 s); the run
/// at 100 s deletes its pods, which end `failed`.
#[test]
fn orphans_are_deleted_after_the_quarantine() {
    let events = vec![
        at(
            0,
            InputEvent::CreatePod {
                pod: Box::new(pod("a", "n1", 30)),
                run_for: None,
            },
        ),
        at(
            0,
            InputEvent::CreatePod {
                pod: Box::new(pod("b", "n1", 30)),
                run_for: None,
            },
        ),
        at(50, InputEvent::RemoveNode { name: "n1".into() }),
    ];
    let nodes = vec![node("n1", json!({})), node("n2", json!({}))];
    let r = run(true, events.clone(), nodes.clone());
    let t = SimTime::from_secs(100);
    assert_eq!(
        ends(&r),
        vec![
            (t, "a".to_string(), Outcome::Failed),
            (t, "b".to_string(), Outcome::Failed)
        ]
    );
    // Off: they stay bound to the missing node for good.
    assert!(ends(&run(false, events, nodes)).is_empty());
}

/// A node added back before its quarantine ends keeps its pods.
#[test]
fn a_node_back_before_the_quarantine_keeps_its_pods() {
    let events = vec![
        at(
            0,
            InputEvent::CreatePod {
                pod: Box::new(pod("a", "n1", 30)),
                run_for: None,
            },
        ),
        at(50, InputEvent::RemoveNode { name: "n1".into() }),
        at(
            90,
            InputEvent::AddNode {
                node: Box::new(node("n1", json!({}))),
            },
        ),
    ];
    let r = run(true, events, vec![node("n1", json!({}))]);
    assert!(ends(&r).is_empty(), "{:?}", ends(&r));
}

/// A ReplicaSet's orphan is replaced by its controller once the collector deletes it.
#[test]
fn a_replica_set_replaces_its_collected_orphan() {
    let rs = ApiObject::from_value(
        "t",
        &json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "rs", "namespace": "default"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "rs"}},
                     "template": {"metadata": {"labels": {"app": "rs"}},
                                  "spec": {"nodeSelector": {"kubernetes.io/hostname": "n1"},
                                           "containers": [{"name": "c"}]}}}}),
    )
    .expect("rs");
    let events = vec![
        at(
            0,
            InputEvent::CreateObject {
                object: Box::new(rs),
            },
        ),
        at(50, InputEvent::RemoveNode { name: "n1".into() }),
    ];
    let r = run(
        true,
        events,
        vec![node("n1", json!({})), node("n2", json!({}))],
    );
    let e = ends(&r);
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!((e[0].0, e[0].2), (SimTime::from_secs(100), Outcome::Failed));
    let created: Vec<SimTime> = r
        .iter()
        .filter_map(|x| match x {
            Record::PodCreated { at, .. } => Some(*at),
            _ => None,
        })
        .collect();
    // The first one informer delay (10 ms) in; its replacement one informer delay after the
    // deletion.
    assert_eq!(
        created,
        vec![
            (SimTime::ZERO + ksim_engine::SimDuration::from_micros(10_000)),
            (SimTime::ZERO + ksim_engine::SimDuration::from_micros(100_010_000))
        ]
    );
}

/// `gcTerminating`: a pod terminating with a 10-minute grace period on a node that turns
/// NotReady and out-of-service at 30 s is deleted by the run at 40 s.
#[test]
fn terminating_pods_on_an_out_of_service_node_are_deleted_at_once() {
    let down = node(
        "n1",
        json!({"spec": {"taints": [{"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"}]},
               "conditions": [{"type": "Ready", "status": "False"}]}),
    );
    let events = vec![
        at(
            0,
            InputEvent::CreatePod {
                pod: Box::new(pod("a", "n1", 600)),
                run_for: None,
            },
        ),
        at(
            10,
            InputEvent::DeletePod {
                namespace: "default".into(),
                name: "a".into(),
            },
        ),
        at(
            30,
            InputEvent::UpdateNode {
                node: Box::new(down),
            },
        ),
    ];
    let r = run(true, events, vec![node("n1", json!({}))]);
    assert_eq!(
        ends(&r),
        vec![(SimTime::from_secs(40), "a".to_string(), Outcome::Failed)]
    );
}
