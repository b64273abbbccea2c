//! Pods started in the same instant keep the order of the actions that started them in their
//! `status.startTime` (1 µs apart, as the recording oracle's clock), and preemption reads it:
//! between candidate nodes tied on PDBs, victim priorities and counts, `pickOneNodeForPreemption`
//! takes the node whose highest-priority victims started latest — whatever the seed.

use ksim_api::{Node, Pod};
use ksim_engine::config::{CostModels, EngineConfig};
use ksim_engine::{InputEvent, Record, SimTime, Simulation, TimedEvent, VecSource};
use ksim_scheduler::framework::Registry;
use ksim_scheduler::node_info::ClusterObjects;
use serde_json::json;

fn node(name: &str) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "110"}}
    }))
    .unwrap()
}

fn pod(name: &str, priority: i32, node: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"priority": priority, "nodeName": node,
                 "containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}
    }))
    .unwrap()
}

fn create(s: i64, p: Pod) -> TimedEvent {
    TimedEvent {
        at: SimTime::from_secs(s),
        event: InputEvent::CreatePod {
            pod: Box::new(p),
            run_for: None,
        },
    }
}

/// The preemptor's nominated node and the pods that ended, for one seed.
fn preemption(seed: u64) -> (String, Vec<String>) {
    let cfg = EngineConfig {
        seed,
        horizon: Some(SimTime::from_secs(30)),
        costs: CostModels::zero(),
        ..Default::default()
    };
    let mut sim = Simulation::new(
        cfg,
        &Default::default(),
        &Registry::in_tree(),
        vec![node("n1"), node("n2")],
        ClusterObjects::default(),
    )
    .unwrap();
    // Both victims start in the same second, v-early first; the preemptor fits on either node
    // after evicting its one victim.
    let events = vec![
        create(0, pod("v-early", 0, "n1")),
        create(0, pod("v-late", 0, "n2")),
        create(5, pod("preemptor", 100, "")),
    ];
    sim.add_source(Box::new(VecSource::new(events))).unwrap();
    let mut nominated = String::new();
    let mut ended = Vec::new();
    sim.run(&mut |r: &Record| match r {
        Record::Attempt {
            name,
            nominated_node,
            ..
        } if name == "preemptor" && !nominated_node.is_empty() => {
            nominated = nominated_node.clone();
        }
        Record::PodEnded { name, .. } => ended.push(name.clone()),
        _ => {}
    })
    .unwrap();
    (nominated, ended)
}

#[test]
fn preemption_picks_the_node_whose_victims_started_latest_within_one_second() {
    for seed in 1..=8 {
        let (nominated, ended) = preemption(seed);
        assert_eq!(nominated, "n2", "seed {seed}");
        assert!(
            ended.contains(&"v-late".to_string()),
            "seed {seed}: {ended:?}"
        );
        assert!(
            !ended.contains(&"v-early".to_string()),
            "seed {seed}: {ended:?}"
        );
    }
}
