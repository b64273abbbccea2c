//! The node lifecycle controller and taint-based eviction, asserted as a user would see them:
//! when a failed node is marked Unknown and tainted, when each pod is evicted, what replaces
//! it, what a recovery cancels, and how zone states slow or stop the taints.
//!
//! Timeline of a node failed at 60 s with upstream's defaults (monitor period 5 s, grace 50 s,
//! lease renewed every 10 s): its last renewal (60 s) is seen by the pass at 60 s; the first
//! pass *after* 60 + 50 s is at 115 s and marks it Ready=Unknown (NoSchedule taint at once);
//! `processTaintBaseEviction` reads the status observed before that update, so the next pass
//! (120 s) queues it and the tainting pass taints it NoExecute at 120 s. A pod tolerating
//! unreachable for 60 s goes at 180 s, one with DefaultTolerationSeconds' 300 s at 420 s.

use std::collections::BTreeMap;

use ksim_api::object::ApiObject;
use ksim_api::{Node, Pod};
use ksim_engine::config::{CostModels, CycleCost, EngineConfig};
use ksim_engine::{InputEvent, Outcome, Record, SimTime, Simulation, TimedEvent, VecSource};
use ksim_scheduler::framework::Registry;
use serde_json::{json, Value};

fn node(name: &str, zone: &str) -> Node {
    let mut labels = json!({"kubernetes.io/hostname": name});
    if !zone.is_empty() {
        labels["topology.kubernetes.io/zone"] = json!(zone);
    }
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels},
        "status": {"capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"}}
    }))
    .expect("node")
}

/// The two default tolerations DefaultTolerationSeconds gives, with `secs` (None: forever).
fn tolerations(secs: Option<i64>) -> Value {
    let t = |key: &str| {
        let mut v = json!({"key": key, "operator": "Exists", "effect": "NoExecute"});
        if let Some(s) = secs {
            v["tolerationSeconds"] = json!(s);
        }
        v
    };
    json!([
        t("node.kubernetes.io/not-ready"),
        t("node.kubernetes.io/unreachable")
    ])
}

fn pod(name: &str, node: &str, tolerations: Value) -> InputEvent {
    let p: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")},
        "spec": {
            "nodeName": node,
            "tolerations": tolerations,
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]
        }
    }))
    .expect("pod");
    InputEvent::CreatePod {
        pod: Box::new(p),
        run_for: None,
    }
}

fn at(s: i64, event: InputEvent) -> TimedEvent {
    TimedEvent {
        at: SimTime::from_secs(s),
        event,
    }
}

fn fail(name: &str) -> InputEvent {
    InputEvent::FailNode { name: name.into() }
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

/// Pod name → (eviction time, cause) of every `PodEvicted`.
fn evictions(records: &[Record]) -> BTreeMap<String, (SimTime, String)> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::PodEvicted {
                at, name, cause, ..
            } => Some((name.clone(), (*at, cause.clone()))),
            _ => None,
        })
        .collect()
}

/// (time, node, event, detail) of every `NodeEvent` naming a node.
fn node_events(records: &[Record]) -> Vec<(i64, String, String, String)> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::NodeEvent {
                at,
                node,
                event,
                detail,
                ..
            } => Some((at.whole_secs(), node.clone(), event.clone(), detail.clone())),
            _ => None,
        })
        .collect()
}

fn ev(t: i64, node: &str, event: &str, detail: &str) -> (i64, String, String, String) {
    (t, node.into(), event.into(), detail.into())
}

fn replicaset(name: &str) -> InputEvent {
    let o = ApiObject::from_value(
        "test",
        &json!({
            "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {
                        "tolerations": tolerations(Some(300)),
                        "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]
                    }
                }
            }
        }),
    )
    .expect("replicaset");
    InputEvent::CreateObject {
        object: Box::new(o),
    }
}

fn cordon(name: &str, on: bool) -> InputEvent {
    let mut n = node(name, "");
    n.spec.unschedulable = on;
    InputEvent::UpdateNode { node: Box::new(n) }
}

/// Done when: node failed at t=60 s — taints at ~110 s (115 s NoSchedule with Ready=Unknown,
/// 120 s NoExecute), the 60 s pod evicted at 180 s, the default-toleration pod at 420 s, the
/// forever-tolerating pod stays, and the ReplicaSet's pod evicted at 420 s is replaced on
/// another node.
#[test]
fn failed_node_is_tainted_after_grace_and_pods_go_when_their_toleration_ends() {
    let nodes = vec![node("n0", ""), node("n1", ""), node("n2", "")];
    let events = vec![
        // The ReplicaSet's pod can only land on n0 at first.
        at(0, cordon("n1", true)),
        at(0, cordon("n2", true)),
        at(0, replicaset("web")),
        at(0, pod("tol-60", "n0", tolerations(Some(60)))),
        at(0, pod("tol-default", "n0", tolerations(Some(300)))),
        at(0, pod("tol-forever", "n0", tolerations(None))),
        at(10, cordon("n1", false)),
        at(10, cordon("n2", false)),
        at(60, fail("n0")),
    ];
    let records = run(cfg(600), nodes, events);
    let n0: Vec<_> = node_events(&records)
        .into_iter()
        .filter(|e| e.1 == "n0")
        .collect();
    assert_eq!(
        n0,
        vec![
            ev(60, "n0", "KubeletStopped", ""),
            ev(115, "n0", "NodeNotReady", "Unknown"),
            ev(
                115,
                "n0",
                "TaintAdded",
                "node.kubernetes.io/unreachable:NoSchedule"
            ),
            ev(
                120,
                "n0",
                "TaintAdded",
                "node.kubernetes.io/unreachable:NoExecute"
            ),
        ]
    );
    let evicted = evictions(&records);
    let secs = |n: &str| evicted.get(n).map(|(t, c)| (t.whole_secs(), c.as_str()));
    assert_eq!(secs("tol-60"), Some((180, "taint")));
    assert_eq!(secs("tol-default"), Some((420, "taint")));
    assert_eq!(secs("tol-forever"), None, "tolerates unreachable forever");
    let web: Vec<&String> = evicted.keys().filter(|k| k.starts_with("web-")).collect();
    assert_eq!(web.len(), 1, "{evicted:?}");
    assert_eq!(secs(web[0]), Some((420, "taint")));
    // Evicted pods end as failed; the replacement binds to another node.
    let ended: BTreeMap<&str, Outcome> = records
        .iter()
        .filter_map(|r| match r {
            Record::PodEnded { name, outcome, .. } => Some((name.as_str(), *outcome)),
            _ => None,
        })
        .collect();
    assert_eq!(ended.get("tol-60"), Some(&Outcome::Failed));
    let bound: Vec<(i64, &str, &str)> = records
        .iter()
        .filter_map(|r| match r {
            Record::PodBound { at, name, node, .. } if name.starts_with("web-") => {
                Some((at.whole_secs(), name.as_str(), node.as_str()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(bound.len(), 2, "{bound:?}");
    assert_eq!(bound[0].2, "n0");
    // Its ReplicaSet replaces it as soon as it starts terminating (upstream's
    // FilterActivePods), one informer delay later: within the same second.
    assert_eq!(
        bound[1].0, 420,
        "replaced when the eviction starts its termination"
    );
    assert_ne!(
        bound[1].2, "n0",
        "the unreachable node is tainted NoSchedule"
    );
}

/// Done when: a NoExecute taint added by UpdateNode at 30 s evicts an untolerating pod at once
/// and a pod tolerating it for 20 s at 50 s; a pod tolerating it forever stays.
#[test]
fn no_execute_taint_from_update_node_evicts_at_once_or_after_toleration() {
    let nodes = vec![node("n0", ""), node("n1", "")];
    let tol = |secs: Option<i64>| {
        let mut t = json!({"key": "maintenance", "operator": "Exists", "effect": "NoExecute"});
        if let Some(s) = secs {
            t["tolerationSeconds"] = json!(s);
        }
        json!([t])
    };
    let mut tainted = node("n0", "");
    tainted.spec.taints = vec![ksim_api::Taint {
        key: "maintenance".into(),
        value: "true".into(),
        effect: "NoExecute".into(),
    }];
    let events = vec![
        at(0, pod("plain", "n0", json!([]))),
        at(0, pod("for-20", "n0", tol(Some(20)))),
        at(0, pod("forever", "n0", tol(None))),
        at(0, pod("elsewhere", "n1", json!([]))),
        at(
            30,
            InputEvent::UpdateNode {
                node: Box::new(tainted),
            },
        ),
    ];
    let records = run(cfg(200), nodes, events);
    let evicted = evictions(&records);
    let secs = |n: &str| evicted.get(n).map(|(t, _)| t.whole_secs());
    assert_eq!(secs("plain"), Some(30));
    assert_eq!(secs("for-20"), Some(50));
    assert_eq!(secs("forever"), None);
    assert_eq!(secs("elsewhere"), None);
    // Not a condition taint: the node lifecycle controller neither records nor removes it.
    assert!(node_events(&records).is_empty());
}

/// RecoverNode: the kubelet posts its conditions again; the NoSchedule taint goes at once, the
/// NoExecute one at the next monitor pass, and the pending evictions are cancelled.
#[test]
fn recover_node_clears_conditions_taints_and_pending_evictions() {
    let nodes = vec![node("n0", ""), node("n1", ""), node("n2", "")];
    let events = vec![
        at(0, pod("tol-60", "n0", tolerations(Some(60)))),
        at(0, pod("tol-default", "n0", tolerations(Some(300)))),
        at(60, fail("n0")),
        at(202, InputEvent::RecoverNode { name: "n0".into() }),
    ];
    let records = run(cfg(900), nodes, events);
    let evicted = evictions(&records);
    assert_eq!(evicted.get("tol-60").map(|e| e.0.whole_secs()), Some(180));
    assert!(
        !evicted.contains_key("tol-default"),
        "cancelled by the recovery"
    );
    let after: Vec<_> = node_events(&records)
        .into_iter()
        .filter(|e| e.0 >= 200)
        .collect();
    assert_eq!(
        after,
        vec![
            ev(202, "n0", "KubeletStarted", ""),
            ev(202, "n0", "NodeReady", "True"),
            ev(
                202,
                "n0",
                "TaintRemoved",
                "node.kubernetes.io/unreachable:NoSchedule"
            ),
            ev(
                205,
                "n0",
                "TaintRemoved",
                "node.kubernetes.io/unreachable:NoExecute"
            ),
        ]
    );
}

fn no_execute_taint_times(records: &[Record]) -> Vec<(i64, String)> {
    node_events(records)
        .into_iter()
        .filter(|e| e.2 == "TaintAdded" && e.3.ends_with(":NoExecute"))
        .map(|e| (e.0, e.1))
        .collect()
}

/// `--node-eviction-rate` 0.1: in a Normal zone, failed nodes are tainted one every 10 s.
#[test]
fn normal_zone_taints_one_node_every_ten_seconds() {
    let nodes: Vec<Node> = (0..10).map(|i| node(&format!("a{i}"), "a")).collect();
    let events = vec![at(60, fail("a0")), at(60, fail("a1")), at(60, fail("a2"))];
    let records = run(cfg(300), nodes, events);
    assert_eq!(
        no_execute_taint_times(&records),
        vec![(120, "a0".into()), (130, "a1".into()), (140, "a2".into())]
    );
}

/// A small zone in PartialDisruption (4 of 5 not ready) stops tainting (`ReducedQPSFunc`
/// gives 0 under `--large-cluster-size-threshold`), while another zone stays Normal; when
/// every zone is fully disrupted, nothing is tainted NoExecute at all.
#[test]
fn zone_disruption_states_stop_taints() {
    let mut nodes: Vec<Node> = (0..5).map(|i| node(&format!("a{i}"), "a")).collect();
    nodes.extend((0..2).map(|i| node(&format!("b{i}"), "b")));
    let events: Vec<TimedEvent> = (0..4).map(|i| at(60, fail(&format!("a{i}")))).collect();
    let records = run(cfg(600), nodes, events);
    assert!(no_execute_taint_times(&records).is_empty());
    let zones: Vec<(i64, String, String)> = records
        .iter()
        .filter_map(|r| match r {
            Record::NodeEvent {
                at,
                zone,
                event,
                detail,
                ..
            } if event == "ZoneState" => Some((at.whole_secs(), zone.clone(), detail.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(zones, vec![(115, "a".into(), "PartialDisruption".into())]);

    let nodes: Vec<Node> = (0..3).map(|i| node(&format!("a{i}"), "a")).collect();
    let events: Vec<TimedEvent> = (0..3).map(|i| at(60, fail(&format!("a{i}")))).collect();
    let records = run(cfg(600), nodes, events);
    assert!(no_execute_taint_times(&records).is_empty());
    assert!(evictions(&records).is_empty());
}

/// Ready=False posted through UpdateNode (a kubelet that reports NotReady): the not-ready
/// NoSchedule taint at once, the NoExecute one at the next monitor pass.
#[test]
fn ready_false_condition_from_update_node_taints_not_ready() {
    let nodes = vec![node("n0", ""), node("n1", ""), node("n2", "")];
    let mut nr = node("n0", "");
    nr.status.conditions = vec![ksim_api::Condition {
        type_: "Ready".into(),
        status: "False".into(),
        reason: "KubeletNotReady".into(),
        message: String::new(),
    }];
    let events = vec![
        at(0, pod("plain", "n0", json!([]))),
        at(32, InputEvent::UpdateNode { node: Box::new(nr) }),
    ];
    // DefaultTolerationSeconds gives the pod 300 s of not-ready toleration: evicted at 335 s.
    let records = run(cfg(400), nodes, events);
    assert_eq!(
        node_events(&records),
        vec![
            ev(32, "n0", "NodeNotReady", "False"),
            ev(
                32,
                "n0",
                "TaintAdded",
                "node.kubernetes.io/not-ready:NoSchedule"
            ),
            ev(
                35,
                "n0",
                "TaintAdded",
                "node.kubernetes.io/not-ready:NoExecute"
            ),
        ]
    );
    assert_eq!(
        evictions(&records).get("plain").map(|e| e.0.whole_secs()),
        Some(335)
    );
}

/// With the controllers off, FailNode only records the kubelet stopping.
#[test]
fn disabled_node_lifecycle_changes_nothing() {
    let mut c = cfg(600);
    c.control_plane.node_lifecycle.enabled = false;
    let nodes = vec![node("n0", ""), node("n1", "")];
    let events = vec![at(0, pod("p", "n0", json!([]))), at(60, fail("n0"))];
    let records = run(c, nodes, events);
    assert!(evictions(&records).is_empty());
    assert_eq!(
        node_events(&records),
        vec![ev(60, "n0", "KubeletStopped", "")]
    );
}

mod no_pod_lost {
    use super::*;
    use proptest::prelude::*;

    /// One random step: (time s, kind, node index, toleration choice).
    fn step_event(i: usize, (t, kind, n, tol): (i64, u8, usize, u8)) -> TimedEvent {
        let node_name = format!("n{n}");
        let tols = match tol {
            0 => json!([]),
            1 => tolerations(Some(30)),
            2 => tolerations(None),
            _ => json!([{"key": "drain", "operator": "Exists", "effect": "NoExecute",
                         "tolerationSeconds": 20}]),
        };
        let e = match kind {
            0 | 1 => pod(&format!("p{i}"), &node_name, tols),
            2 => {
                // An unbound pod the scheduler places.
                let p: Pod = serde_json::from_value(json!({
                    "metadata": {"name": format!("u{i}"), "namespace": "default"},
                    "spec": {"tolerations": tols, "containers": [{"name": "c",
                        "resources": {"requests": {"cpu": "500m"}}}]}
                }))
                .expect("pod");
                InputEvent::CreatePod {
                    pod: Box::new(p),
                    run_for: None,
                }
            }
            3 => fail(&node_name),
            4 => InputEvent::RecoverNode { name: node_name },
            _ => {
                let mut nd = node(&node_name, "");
                if tol % 2 == 0 {
                    nd.spec.taints = vec![ksim_api::Taint {
                        key: "drain".into(),
                        value: String::new(),
                        effect: "NoExecute".into(),
                    }];
                }
                InputEvent::UpdateNode { node: Box::new(nd) }
            }
        };
        at(t, e)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// No pod is ever lost: whatever nodes fail, recover or get NoExecute taints, every
        /// pod created ends at most once, every eviction is followed by its pod's end, and at
        /// the horizon each created pod is either ended exactly once or still in the cluster.
        #[test]
        fn every_created_pod_has_exactly_one_fate(
            steps in proptest::collection::vec((0i64..900, 0u8..6, 0usize..3, 0u8..4), 1..40)
        ) {
            let mut steps = steps;
            steps.sort_by_key(|s| s.0);
            let events: Vec<TimedEvent> =
                steps.into_iter().enumerate().map(|(i, s)| step_event(i, s)).collect();
            let nodes = vec![node("n0", ""), node("n1", ""), node("n2", "")];
            let mut sim = Simulation::new(
                cfg(1200),
                &Default::default(),
                &Registry::in_tree(),
                nodes,
                Default::default(),
            )
            .expect("simulation");
            sim.retain_ended_pods(true);
            sim.add_source(Box::new(VecSource::new(events))).expect("source");
            let mut records = Vec::new();
            sim.run(&mut |r: &Record| records.push(r.clone())).expect("run");
            let mut created: BTreeMap<String, usize> = BTreeMap::new();
            let mut ended: BTreeMap<String, usize> = BTreeMap::new();
            // An eviction deletes the pod gracefully: it ends (Failed) after its grace period,
            // or is still terminating when the run ends.
            let mut evicted: BTreeMap<String, usize> = BTreeMap::new();
            for r in &records {
                match r {
                    Record::PodCreated { name, .. } => *created.entry(name.clone()).or_default() += 1,
                    Record::PodEvicted { name, .. } => *evicted.entry(name.clone()).or_default() += 1,
                    Record::PodEnded { name, outcome, .. } => {
                        if evicted.contains_key(name) {
                            prop_assert_eq!(*outcome, Outcome::Failed, "{} evicted", name);
                        }
                        *ended.entry(name.clone()).or_default() += 1;
                    }
                    _ => {}
                }
            }
            for (name, n) in &evicted {
                prop_assert_eq!(*n, 1, "{} evicted once", name);
                let live = sim.pod_id(&format!("default/{name}")).is_some();
                prop_assert!(ended.contains_key(name) || live, "{} evicted, never ended, not live", name);
            }
            for (name, n) in &created {
                prop_assert_eq!(*n, 1, "{} created once", name);
                let e = ended.get(name).copied().unwrap_or(0);
                let live = sim.pod_id(&format!("default/{name}")).is_some();
                prop_assert!(e <= 1, "{} ended {} times", name, e);
                prop_assert!((e == 1) != live, "{}: ended {} times, live {}", name, e, live);
            }
        }
    }
}
