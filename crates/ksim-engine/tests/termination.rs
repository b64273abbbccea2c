//! Every run ends. Without a horizon a run stops when it stalls — nothing left can change the
//! cluster and every waiting pod already failed against it as it is — with those pods `stalled`
//! and a reason; the guards of `RunLimits` stop what would still go on, naming the setting.

use ksim_api::{Node, Pod};
use ksim_engine::config::{CostModels, EngineConfig, RunLimits};
use ksim_engine::{
    InputEvent, Outcome, Record, SimDuration, SimError, SimTime, Simulation, TimedEvent, VecSource,
};
use ksim_scheduler::framework::Registry;
use ksim_scheduler::node_info::ClusterObjects;
use serde_json::json;

fn node(name: &str, cpu: &str) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}}
    }))
    .unwrap()
}

fn pod(name: &str, cpu: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    }))
    .unwrap()
}

fn at(s: i64, event: InputEvent) -> TimedEvent {
    TimedEvent {
        at: SimTime::from_secs(s),
        event,
    }
}

fn create(s: i64, p: Pod, run_for: Option<i64>) -> TimedEvent {
    at(
        s,
        InputEvent::CreatePod {
            pod: Box::new(p),
            run_for: run_for.map(SimDuration::from_secs),
        },
    )
}

struct Ended {
    result: Result<(), SimError>,
    records: Vec<Record>,
}

impl Ended {
    fn outcome(&self, pod: &str) -> Option<Outcome> {
        self.records.iter().rev().find_map(|r| match r {
            Record::PodEnded { name, outcome, .. } if name == pod => Some(*outcome),
            _ => None,
        })
    }
    fn stalled(&self) -> Option<(SimTime, String)> {
        self.records.iter().find_map(|r| match r {
            Record::RunEnded {
                at,
                stalled: Some(why),
                ..
            } => Some((*at, why.clone())),
            _ => None,
        })
    }
    fn attempts(&self) -> usize {
        self.records
            .iter()
            .filter(|r| matches!(r, Record::Attempt { .. }))
            .count()
    }
}

fn run(cfg: EngineConfig, nodes: Vec<Node>, events: Vec<TimedEvent>) -> Ended {
    let cfg = EngineConfig {
        costs: CostModels::zero(),
        ..cfg
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
    let mut records = Vec::new();
    let result = sim.run(&mut |r: &Record| records.push(r.clone()));
    Ended { result, records }
}

#[test]
fn no_nodes_at_all_stalls_instead_of_retrying_forever() {
    // "no nodes available" is the error-backoff path, retried every few seconds forever before.
    let e = run(
        EngineConfig::default(),
        vec![],
        vec![create(0, pod("p", "1"), None)],
    );
    e.result.as_ref().unwrap();
    assert_eq!(e.outcome("p"), Some(Outcome::Stalled));
    let (end, why) = e.stalled().expect("a stall reason");
    assert!(why.contains("1 pod(s) still waiting"), "{why}");
    assert!(why.contains("--until"), "{why}");
    // The first attempt and one retry (the node count did not change): ends at once.
    assert!(end <= SimTime::from_secs(5), "{end}");
    assert!(e.attempts() <= 2, "{}", e.attempts());
}

#[test]
fn removing_every_node_while_a_pod_waits_stalls() {
    let events = vec![
        create(0, pod("big", "8"), None),
        at(10, InputEvent::RemoveNode { name: "n1".into() }),
    ];
    let e = run(EngineConfig::default(), vec![node("n1", "4")], events);
    e.result.as_ref().unwrap();
    assert_eq!(e.outcome("big"), Some(Outcome::Stalled));
    let (end, _) = e.stalled().expect("a stall reason");
    assert!(end <= SimTime::from_secs(20), "{end}");
}

#[test]
fn a_pod_that_never_fits_stalls_and_one_that_waits_for_room_is_scheduled() {
    // `later` fits once `short` completes at 100 s; `huge` never fits.
    let events = vec![
        create(0, pod("short", "3"), Some(100)),
        create(1, pod("later", "2"), None),
        create(2, pod("huge", "64"), None),
    ];
    let e = run(EngineConfig::default(), vec![node("n1", "4")], events);
    e.result.as_ref().unwrap();
    assert_eq!(e.outcome("huge"), Some(Outcome::Stalled));
    assert_eq!(e.outcome("short"), Some(Outcome::Succeeded));
    assert_eq!(e.outcome("later"), None, "still running, never ended");
    assert!(e
        .records
        .iter()
        .any(|r| matches!(r, Record::PodBound { name, .. } if name == "later")));
}

#[test]
fn a_run_with_a_horizon_goes_to_its_horizon_with_pods_pending() {
    let cfg = EngineConfig {
        horizon: Some(SimTime::from_secs(120)),
        ..Default::default()
    };
    let e = run(cfg, vec![], vec![create(0, pod("p", "1"), None)]);
    e.result.as_ref().unwrap();
    assert_eq!(e.stalled(), None);
    assert_eq!(e.outcome("p"), None, "pending at the horizon, not ended");
    assert!(matches!(
        e.records.last(),
        Some(Record::RunEnded { at, stalled: None, .. }) if *at == SimTime::from_secs(120)
    ));
}

#[test]
fn the_attempts_guard_names_its_setting() {
    let cfg = EngineConfig {
        horizon: Some(SimTime::from_secs(3600)),
        limits: RunLimits {
            max_attempts_without_change: 5,
            ..Default::default()
        },
        ..Default::default()
    };
    let e = run(cfg, vec![], vec![create(0, pod("p", "1"), None)]);
    let err = e.result.expect_err("the guard trips").to_string();
    assert!(
        err.contains("pod default/p failed 6 attempts in a row"),
        "{err}"
    );
    assert!(err.contains("limits.maxAttemptsWithoutChange = 5"), "{err}");
}

#[test]
fn the_virtual_time_guard_names_its_setting() {
    let cfg = EngineConfig {
        limits: RunLimits {
            max_virtual_time: SimDuration::from_secs(60),
            ..Default::default()
        },
        ..Default::default()
    };
    let e = run(
        cfg,
        vec![node("n1", "4")],
        vec![
            create(0, pod("a", "1"), None),
            create(3600, pod("b", "1"), None),
        ],
    );
    let err = e.result.expect_err("the guard trips").to_string();
    assert!(err.contains("limits.maxVirtualTime"), "{err}");
    assert!(err.contains("--until"), "{err}");
}

/// `limits.maxLivePods`: the pod that would pass the limit stops the run with an error naming
/// it; pods that ended free their place, so a run that keeps under it goes on.
#[test]
fn the_live_pods_guard_names_its_setting() {
    let limits = RunLimits {
        max_live_pods: 3,
        ..Default::default()
    };
    let cfg = EngineConfig {
        horizon: Some(SimTime::from_secs(100)),
        limits: limits.clone(),
        ..Default::default()
    };
    let events = (0..5)
        .map(|i| create(i, pod(&format!("p{i}"), "1"), None))
        .collect();
    let e = run(cfg, vec![], events);
    let err = e.result.expect_err("the guard trips").to_string();
    assert!(
        err.contains("creating pod default/p3 would make 4 pods alive at once (3 of them pending)"),
        "{err}"
    );
    assert!(err.contains("limits.maxLivePods = 3"), "{err}");
    assert!(err.starts_with("at 3s"), "{err}");
    // Pods that finish free their place: five pods of 1 s each, one a second, never more
    // than three alive.
    let cfg = EngineConfig {
        horizon: Some(SimTime::from_secs(100)),
        limits,
        ..Default::default()
    };
    let events = (0..5)
        .map(|i| create(i * 2, pod(&format!("q{i}"), "1"), Some(1)))
        .collect();
    let e = run(cfg, vec![node("n1", "4")], events);
    e.result.as_ref().unwrap();
    assert_eq!(e.outcome("q4"), Some(Outcome::Succeeded));
}

#[test]
fn a_pod_no_profile_serves_is_never_scheduled_and_ends_unserved() {
    // upstream: a pod whose schedulerName names no profile belongs to another scheduler; it is
    // never queued (the informer's responsibleForPod filter), so it waits for ever without
    // attempts. ksim ends it as `unserved` and names the scheduler in RunEnded.
    let mut other = pod("other", "1");
    other.spec.scheduler_name = "gpu-scheduler".into();
    for horizon in [None, Some(SimTime::from_secs(60))] {
        let e = run(
            EngineConfig {
                horizon,
                ..Default::default()
            },
            vec![node("n1", "4")],
            vec![
                create(0, pod("mine", "1"), None),
                create(0, other.clone(), None),
            ],
        );
        e.result.as_ref().unwrap();
        assert_eq!(e.outcome("other"), Some(Outcome::Unserved));
        assert_eq!(e.outcome("mine"), None, "still running, not ended");
        assert_eq!(e.attempts(), 1, "only the served pod is attempted");
        assert!(matches!(
            e.records.last(),
            Some(Record::RunEnded { stalled: None, unserved, .. }) if unserved == &["gpu-scheduler".to_string()]
        ));
    }
}
