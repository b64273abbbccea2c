//! Property: no pod is ever lost. Whatever the run does to them (scheduling, preemption with
//! graceful termination, deletions, completions, controllers scaling, PDBs, nodes leaving
//! and coming back), every pod created ends in exactly one outcome: one `PodEnded` record,
//! or none and still live when the run ends. And no node ever holds more than its
//! allocatable, terminating pods included.

use std::collections::{BTreeMap, BTreeSet};

use ksim_api::object::{ApiObject, ObjectKind};
use ksim_api::{Node, Pod};
use ksim_engine::config::{EngineConfig, OnNodeRemoval};
use ksim_engine::{
    InputEvent, PodPhase, Record, SimDuration, SimTime, Simulation, TimedEvent, VecSource,
};
use ksim_scheduler::framework::Registry;
use ksim_scheduler::node_info::ClusterObjects;
use proptest::prelude::*;
use serde_json::json;

fn node(name: &str, cpu: u32) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": {"cpu": cpu.to_string(), "memory": "64Gi", "pods": "110"}}
    }))
    .expect("node")
}

fn pod(name: &str, cpu_m: u32, priority: i32, grace: Option<i64>, app: &str) -> Pod {
    let mut spec = json!({"priority": priority,
        "containers": [{"name": "c", "resources": {"requests": {"cpu": format!("{cpu_m}m")}}}]});
    if let Some(g) = grace {
        spec["terminationGracePeriodSeconds"] = json!(g);
    }
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default", "labels": {"app": app}},
        "spec": spec
    }))
    .expect("pod")
}

fn object(v: serde_json::Value) -> Box<ApiObject> {
    Box::new(ApiObject::from_value("test", &v).expect("object"))
}

fn replica_set(name: &str, replicas: i32, cpu_m: u32) -> Box<ApiObject> {
    object(json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c",
                                  "resources": {"requests": {"cpu": format!("{cpu_m}m")}}}]}}}}))
}

/// One generated step; names are resolved against what exists when the trace is built.
#[derive(Debug, Clone)]
enum Step {
    Create {
        cpu_m: u32,
        priority: i32,
        grace: Option<i64>,
        run_for: Option<i64>,
        app: u8,
    },
    Delete(usize),
    Complete(usize),
    ReplicaSet {
        which: u8,
        replicas: i32,
    },
    DeleteReplicaSet(u8),
    Pdb {
        which: u8,
        budget: u8,
    },
    AddNode,
    RemoveNode(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        6 => (
            prop::sample::select(vec![250u32, 500, 1000, 2000]),
            prop::sample::select(vec![0i32, 0, 100, 1000]),
            prop::sample::select(vec![None, Some(0i64), Some(5), Some(30)]),
            prop::option::of(5i64..120),
            0u8..3,
        )
            .prop_map(|(cpu_m, priority, grace, run_for, app)| Step::Create {
                cpu_m,
                priority,
                grace,
                run_for,
                app
            }),
        2 => any::<usize>().prop_map(Step::Delete),
        1 => any::<usize>().prop_map(Step::Complete),
        2 => (0u8..2, 0i32..4).prop_map(|(which, replicas)| Step::ReplicaSet { which, replicas }),
        1 => (0u8..2).prop_map(Step::DeleteReplicaSet),
        1 => (0u8..3, 0u8..4).prop_map(|(which, budget)| Step::Pdb { which, budget }),
        1 => Just(Step::AddNode),
        1 => any::<usize>().prop_map(Step::RemoveNode),
    ]
}

/// Builds the trace from the steps, one step every `gap` seconds.
fn trace(steps: &[(Step, u8)]) -> Vec<TimedEvent> {
    let mut out = Vec::new();
    let mut t = 0i64;
    let mut pods: Vec<String> = Vec::new();
    let mut sets: BTreeSet<u8> = BTreeSet::new();
    let mut pdbs: BTreeSet<u8> = BTreeSet::new();
    let mut nodes: Vec<String> = (0..3).map(|i| format!("n{i}")).collect();
    let mut added = 0;
    for (i, (s, gap)) in steps.iter().enumerate() {
        t += i64::from(*gap);
        let at = SimTime::from_secs(t);
        let ev = match s {
            Step::Create {
                cpu_m,
                priority,
                grace,
                run_for,
                app,
            } => {
                let name = format!("p{i}");
                pods.push(name.clone());
                let app = ["x", "rs0", "rs1"][*app as usize];
                InputEvent::CreatePod {
                    pod: Box::new(pod(&name, *cpu_m, *priority, *grace, app)),
                    run_for: run_for.map(SimDuration::from_secs),
                }
            }
            Step::Delete(k) | Step::Complete(k) if !pods.is_empty() => {
                let name = pods[k % pods.len()].clone();
                if matches!(s, Step::Delete(_)) {
                    InputEvent::DeletePod {
                        namespace: "default".into(),
                        name,
                    }
                } else {
                    InputEvent::CompletePod {
                        namespace: "default".into(),
                        name,
                    }
                }
            }
            Step::Delete(_) | Step::Complete(_) => continue,
            Step::ReplicaSet { which, replicas } => {
                let obj = replica_set(&format!("rs{which}"), *replicas, 500);
                if sets.insert(*which) {
                    InputEvent::CreateObject { object: obj }
                } else {
                    InputEvent::UpdateObject { object: obj }
                }
            }
            Step::DeleteReplicaSet(which) => {
                if !sets.remove(which) {
                    continue;
                }
                InputEvent::DeleteObject {
                    object_kind: ObjectKind::ReplicaSet,
                    namespace: "default".into(),
                    name: format!("rs{which}"),
                }
            }
            Step::Pdb { which, budget } => {
                let b = match budget {
                    0 => json!({"minAvailable": 1}),
                    1 => json!({"maxUnavailable": 1}),
                    2 => json!({"minAvailable": "50%"}),
                    _ => json!({"maxUnavailable": "0%"}),
                };
                let app = ["x", "rs0", "rs1"][*which as usize];
                let mut spec = json!({"selector": {"matchLabels": {"app": app}}});
                for (k, v) in b.as_object().into_iter().flatten() {
                    spec[k] = v.clone();
                }
                let obj = object(
                    json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                    "metadata": {"name": format!("pdb{which}"), "namespace": "default"}, "spec": spec}),
                );
                if pdbs.insert(*which) {
                    InputEvent::CreateObject { object: obj }
                } else {
                    InputEvent::UpdateObject { object: obj }
                }
            }
            Step::AddNode => {
                added += 1;
                let name = format!("m{added}");
                nodes.push(name.clone());
                InputEvent::AddNode {
                    node: Box::new(node(&name, 2)),
                }
            }
            Step::RemoveNode(k) => {
                if nodes.is_empty() {
                    continue;
                }
                let name = nodes.remove(k % nodes.len());
                InputEvent::RemoveNode { name }
            }
        };
        out.push(TimedEvent { at, event: ev });
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_pod_created_ends_in_exactly_one_outcome(
        steps in prop::collection::vec((step(), 0u8..20), 1..60),
        seed in 0u64..1000,
        removal in 0u8..3,
        horizon in prop::sample::select(vec![60i64, 300, 900]),
    ) {
        let cfg = EngineConfig {
            seed,
            horizon: Some(SimTime::from_secs(horizon)),
            on_node_removal: [
                OnNodeRemoval::FailAndRecreateOwned,
                OnNodeRemoval::Fail,
                OnNodeRemoval::KeepBound,
            ][removal as usize],
            ..Default::default()
        };
        let nodes: Vec<Node> = (0..3).map(|i| node(&format!("n{i}"), 2)).collect();
        let mut sim = Simulation::new(
            cfg,
            &Default::default(),
            &Registry::in_tree(),
            nodes,
            ClusterObjects::default(),
        )
        .expect("simulation");
        sim.retain_ended_pods(true);
        sim.add_source(Box::new(VecSource::new(trace(&steps)))).expect("source");
        let mut records = Vec::new();
        sim.run(&mut |r: &Record| records.push(r.clone())).expect("run");

        // Open incarnations by key; every PodEnded closes exactly one.
        let mut open: BTreeMap<String, u32> = BTreeMap::new();
        let (mut created, mut ended) = (0u64, 0u64);
        let mut alloc: BTreeMap<String, i64> = BTreeMap::new();
        let mut req: BTreeMap<String, i64> = BTreeMap::new();
        let mut used: BTreeMap<String, i64> = BTreeMap::new();
        let mut on: BTreeMap<String, String> = BTreeMap::new();
        let cpu = |v: &Vec<(String, i64)>| v.iter().find(|(n, _)| n == "cpu").map_or(0, |x| x.1);
        for r in &records {
            match r {
                Record::NodeAdded { node, allocatable, .. } => {
                    alloc.insert(node.clone(), cpu(allocatable));
                }
                Record::PodCreated { namespace, name, requests, .. } => {
                    created += 1;
                    let key = format!("{namespace}/{name}");
                    let n = open.entry(key.clone()).or_default();
                    *n += 1;
                    prop_assert_eq!(*n, 1, "{} created twice while live", key);
                    req.insert(key, cpu(requests));
                }
                Record::PodBound { namespace, name, node, .. } => {
                    let key = format!("{namespace}/{name}");
                    prop_assert!(open.contains_key(&key), "{} bound but not live", key);
                    *used.entry(node.clone()).or_default() += req[&key];
                    on.insert(key, node.clone());
                    let cap = alloc.get(node).copied().unwrap_or(0);
                    prop_assert!(used[node] <= cap, "node {} over-committed: {} > {}", node, used[node], cap);
                }
                Record::PodEnded { namespace, name, .. } => {
                    ended += 1;
                    let key = format!("{namespace}/{name}");
                    prop_assert!(open.remove(&key).is_some(), "{} ended twice or never created", key);
                    if let Some(n) = on.remove(&key) {
                        *used.entry(n).or_default() -= req[&key];
                    }
                }
                _ => {}
            }
        }
        // What is still open is exactly what the simulation holds live.
        let live: BTreeSet<String> = sim
            .pods()
            .iter()
            .filter(|s| !matches!(s.phase, PodPhase::Ended(_)))
            .map(|s| s.info.key.clone())
            .collect();
        let still: BTreeSet<String> = open.keys().cloned().collect();
        prop_assert_eq!(&still, &live);
        prop_assert_eq!(created, ended + live.len() as u64);
    }
}
