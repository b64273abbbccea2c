//! Each upstream queue rule pinned by a small timeline (zero-cost cycles and binding, as the
//! oracle's virtual-time model): when a pod is tried, not just whether.

use ksim_api::{Node, Pod};
use ksim_engine::config::{CostModels, EngineConfig};
use ksim_engine::{InputEvent, Record, SimTime, Simulation, TimedEvent, VecSource};
use ksim_scheduler::framework::Registry;
use ksim_scheduler::node_info::ClusterObjects;

fn node(name: &str, cpu: &str) -> Node {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}}
    }))
    .unwrap()
}

fn pod(name: &str, cpu: &str, gated: bool) -> Pod {
    let gates = if gated {
        serde_json::json!([{"name": "wait"}])
    } else {
        serde_json::json!([])
    };
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"schedulingGates": gates,
                 "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    }))
    .unwrap()
}

fn at(s: i64, event: InputEvent) -> TimedEvent {
    TimedEvent {
        at: SimTime::from_secs(s),
        event,
    }
}

/// (second, pod, result) of every attempt.
fn attempts(nodes: Vec<Node>, events: Vec<TimedEvent>, until: i64) -> Vec<(i64, String, String)> {
    let cfg = EngineConfig {
        horizon: Some(SimTime::from_secs(until)),
        costs: CostModels::zero(),
        ..Default::default()
    };
    let mut sim = Simulation::new(
        cfg,
        &Default::default(),
        &Registry::in_tree(),
        nodes,
        ClusterObjects::default(),
    )
    .unwrap();
    sim.add_source(Box::new(VecSource::new(events))).unwrap();
    let mut out = Vec::new();
    sim.run(&mut |r: &Record| {
        if let Record::Attempt {
            at, name, result, ..
        } = r
        {
            out.push((at.whole_secs(), name.clone(), result.as_str().to_string()));
        }
    })
    .unwrap();
    out
}

fn seconds(a: &[(i64, String, String)], pod: &str) -> Vec<i64> {
    a.iter().filter(|x| x.1 == pod).map(|x| x.0).collect()
}

#[test]
fn without_events_a_rejected_pod_is_retried_after_its_maximum_stay_on_the_30s_grid() {
    let a = attempts(
        vec![node("n1", "1")],
        vec![at(
            7,
            InputEvent::CreatePod {
                pod: Box::new(pod("p", "2", false)),
                run_for: None,
            },
        )],
        700,
    );
    // Failed at 7 s: strictly more than 300 s in the pool at the first 30 s flush → 330, then
    // failed at 330 → 660.
    assert_eq!(seconds(&a, "p"), vec![7, 330, 660]);
}

#[test]
fn no_nodes_is_the_error_backoff_path_window_aligned() {
    let a = attempts(
        vec![],
        vec![at(
            0,
            InputEvent::CreatePod {
                pod: Box::new(pod("p", "1", false)),
                run_for: None,
            },
        )],
        45,
    );
    assert_eq!(seconds(&a, "p"), vec![0, 2, 5, 10, 19, 30, 41]);
}

#[test]
fn error_backoff_ignores_cluster_events() {
    let events = vec![
        at(
            0,
            InputEvent::CreatePod {
                pod: Box::new(pod("p", "1", false)),
                run_for: None,
            },
        ),
        at(
            3,
            InputEvent::AddNode {
                node: Box::new(node("n1", "4")),
            },
        ),
    ];
    let a = attempts(vec![], events, 20);
    // The node added at 3 s does not move the pod out of the error-backoff queue: it waits for
    // its flush (at 5 s) and then binds.
    assert_eq!(seconds(&a, "p"), vec![0, 2, 5]);
    assert_eq!(a.last().map(|x| x.2.as_str()), Some("Scheduled"));
}

#[test]
fn a_useless_event_does_not_requeue_and_a_useful_one_does_at_once() {
    let events = vec![
        at(
            0,
            InputEvent::CreatePod {
                pod: Box::new(pod("p", "3", false)),
                run_for: None,
            },
        ),
        at(
            10,
            InputEvent::AddNode {
                node: Box::new(node("small", "2")),
            },
        ),
        at(
            20,
            InputEvent::AddNode {
                node: Box::new(node("big", "8")),
            },
        ),
    ];
    let a = attempts(vec![node("n1", "1")], events, 60);
    assert_eq!(seconds(&a, "p"), vec![0, 20]);
}

#[test]
fn gated_pods_wait_for_their_gates_and_keep_their_creation_order() {
    let events = vec![
        at(
            0,
            InputEvent::CreatePod {
                pod: Box::new(pod("first", "1", true)),
                run_for: None,
            },
        ),
        at(
            1,
            InputEvent::CreatePod {
                pod: Box::new(pod("second", "1", true)),
                run_for: None,
            },
        ),
        at(
            400,
            InputEvent::UpdatePod {
                pod: Box::new(pod("second", "1", false)),
            },
        ),
        at(
            400,
            InputEvent::UpdatePod {
                pod: Box::new(pod("first", "1", false)),
            },
        ),
    ];
    let a = attempts(vec![node("n1", "4")], events, 500);
    // Never tried while gated (the leftover flush skips gated pods); ungated in the same
    // second, they pop in creation order, not update order.
    let order: Vec<&str> = a.iter().map(|x| x.1.as_str()).collect();
    assert_eq!(order, vec!["first", "second"]);
    assert!(a.iter().all(|x| x.0 == 400));
}

#[test]
fn a_freed_pod_retries_in_the_same_second_even_while_backing_off() {
    let events = vec![
        at(
            0,
            InputEvent::CreatePod {
                pod: Box::new(pod("holder", "3", false)),
                run_for: None,
            },
        ),
        at(
            0,
            InputEvent::CreatePod {
                pod: Box::new(pod("p", "3", false)),
                run_for: None,
            },
        ),
        at(
            1,
            InputEvent::DeletePod {
                namespace: "default".into(),
                name: "holder".into(),
            },
        ),
    ];
    let a = attempts(vec![node("n1", "4")], events, 10);
    // p's backoff (1 s after failing at 0) lasts through second 1, yet the idle scheduler pops
    // it from backoffQ at once (PopFromBackoffQ).
    assert_eq!(seconds(&a, "p"), vec![0, 1]);
}
