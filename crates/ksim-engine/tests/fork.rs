//! What-if forks (`Simulation::run_to` + `Simulation::fork`): a copy continued without change
//! records exactly what the uninterrupted run records, whatever the instant of the fork (an
//! arrival, a cycle in flight, a preemption grace period, a node removal), and copies are
//! independent of each other.

use ksim_api::{Node, Pod};
use ksim_engine::config::EngineConfig;
use ksim_engine::{
    AttemptResult, InputEvent, Record, SimDuration, SimTime, Simulation, TimedEvent, VecSource,
};
use ksim_scheduler::framework::Registry;
use ksim_scheduler::node_info::ClusterObjects;

fn node(name: &str, zone: &str, cpu: &str) -> Node {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                     "topology.kubernetes.io/zone": zone}},
        "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}}
    }))
    .unwrap()
}

fn pod(name: &str, cpu: &str, priority: i32) -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "w"}},
        "spec": {"priority": priority, "terminationGracePeriodSeconds": 5,
                 "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}
    }))
    .unwrap()
}

fn secs(s: f64) -> SimTime {
    SimTime((s * 1e6) as i64)
}

/// Arrivals with ties, preemptions (priority 1000 pods on a full cluster), a node lost and
/// one added: every kind of state a fork must copy.
fn events() -> Vec<TimedEvent> {
    let mut ev = Vec::new();
    for i in 0..70 {
        let cpu = ["500m", "1", "1500m", "2500m"][i % 4];
        let prio = if i % 11 == 10 { 1000 } else { 0 };
        ev.push(TimedEvent {
            at: secs((i / 2) as f64 * 1.3),
            event: InputEvent::CreatePod {
                pod: Box::new(pod(&format!("p{i}"), cpu, prio)),
                run_for: Some(SimDuration::from_secs(20 + (i as i64 * 7) % 60)),
            },
        });
    }
    ev.push(TimedEvent {
        at: secs(30.0),
        event: InputEvent::RemoveNode { name: "n2".into() },
    });
    ev.push(TimedEvent {
        at: secs(50.0),
        event: InputEvent::AddNode {
            node: Box::new(node("n9", "b", "8")),
        },
    });
    ev
}

fn sim() -> Simulation {
    let cfg = EngineConfig {
        seed: 5,
        horizon: Some(secs(200.0)),
        ..Default::default()
    };
    let nodes = vec![
        node("n1", "a", "4"),
        node("n2", "b", "4"),
        node("n3", "a", "4"),
        node("n4", "b", "4"),
    ];
    let mut s = Simulation::new(
        cfg,
        &Default::default(),
        &Registry::in_tree(),
        nodes,
        ClusterObjects::default(),
    )
    .expect("simulation");
    s.add_source(Box::new(VecSource::new(events())))
        .expect("source");
    s
}

fn whole_run() -> Vec<Record> {
    let mut records = Vec::new();
    sim()
        .run(&mut |r: &Record| records.push(r.clone()))
        .expect("run");
    records
}

#[test]
fn unchanged_copies_record_what_the_uninterrupted_run_records() {
    let whole = whole_run();
    assert!(
        whole.iter().any(|r| matches!(
            r,
            Record::Attempt {
                result: AttemptResult::Unschedulable,
                ..
            }
        )),
        "the workload must make pods wait"
    );
    // Fork instants: t=0, arrivals, 1 µs into cycles (a cycle in flight), the node removal,
    // quiet instants, the horizon.
    let mut instants = vec![
        SimTime::ZERO,
        secs(1.3),
        secs(13.0),
        secs(30.0),
        secs(30.000_001),
        secs(77.77),
        secs(200.0),
    ];
    let cycles: Vec<SimTime> = whole
        .iter()
        .filter_map(|r| match r {
            Record::Attempt { at, .. } => Some(*at),
            _ => None,
        })
        .collect();
    for k in [3, 17, 40, cycles.len() / 2, cycles.len() - 2] {
        instants.push(SimTime(cycles[k].micros() + 1));
    }
    for t in instants {
        let mut s = sim();
        let mut prefix = Vec::new();
        let running = s
            .run_to(t, &mut |r: &Record| prefix.push(r.clone()))
            .expect("run_to");
        assert!(running, "paused at {t}");
        assert!(
            prefix.iter().all(|r| r.at() <= t),
            "nothing after {t} before the fork"
        );
        let copies = s.fork(2).expect("fork");
        for (i, mut c) in copies.into_iter().enumerate() {
            let mut records = prefix.clone();
            c.run(&mut |r: &Record| records.push(r.clone()))
                .expect("run");
            assert_eq!(
                records.len(),
                whole.len(),
                "fork at {t}, copy {i}: record count"
            );
            for (k, (a, b)) in records.iter().zip(&whole).enumerate() {
                assert_eq!(a, b, "fork at {t}, copy {i}: record {k} differs");
            }
        }
    }
}

#[test]
fn a_changed_copy_does_not_change_its_sibling() {
    let whole = whole_run();
    let t = secs(20.0);
    let mut s = sim();
    let mut prefix = Vec::new();
    assert!(s
        .run_to(t, &mut |r: &Record| prefix.push(r.clone()))
        .unwrap());
    let mut copies = s.fork(2).expect("fork");
    let mut sibling = copies.pop().unwrap();
    let mut changed = copies.pop().unwrap();
    // The changed copy loses two nodes and runs first, to its end.
    changed
        .inject(
            t,
            vec![
                InputEvent::RemoveNode { name: "n1".into() },
                InputEvent::RemoveNode { name: "n3".into() },
            ],
        )
        .unwrap();
    let mut a = prefix.clone();
    changed.run(&mut |r: &Record| a.push(r.clone())).unwrap();
    let mut b = prefix.clone();
    sibling.run(&mut |r: &Record| b.push(r.clone())).unwrap();
    assert_eq!(b, whole, "the unchanged sibling");
    assert_ne!(a, whole, "the changed copy");
    // The change shows from the fork instant on, not before.
    let first_diff = a.iter().zip(&whole).position(|(x, y)| x != y).unwrap();
    assert!(a[first_diff].at() >= t);
    assert!(a
        .iter()
        .any(|r| matches!(r, Record::NodeRemoved { node, at, .. } if node == "n1" && *at == t)));
}

#[test]
fn a_fork_after_the_run_ended_says_so() {
    // Without a horizon a run whose pods wait for nothing that can come stops (the stall
    // rule); a fork after that instant has nothing left to continue.
    let cfg = EngineConfig {
        seed: 5,
        ..Default::default()
    };
    let mut s = Simulation::new(
        cfg,
        &Default::default(),
        &Registry::in_tree(),
        vec![node("n1", "a", "4")],
        ClusterObjects::default(),
    )
    .unwrap();
    s.add_source(Box::new(VecSource::new(vec![TimedEvent {
        at: secs(1.0),
        event: InputEvent::CreatePod {
            pod: Box::new(pod("p", "100", 0)),
            run_for: Some(SimDuration::from_secs(5)),
        },
    }])))
    .unwrap();
    let mut n = 0;
    assert!(!s.run_to(secs(3600.0), &mut |_: &Record| n += 1).unwrap());
    assert!(n > 0);
}

#[test]
fn the_same_configuration_set_again_changes_nothing() {
    // Frameworks and extenders rebuilt from an equal configuration (what a schedulerConfig
    // variant does) schedule exactly as the ones they replace.
    let whole = whole_run();
    for t in [secs(13.0), secs(30.000_001)] {
        let mut s = sim();
        let mut records = Vec::new();
        assert!(s
            .run_to(t, &mut |r: &Record| records.push(r.clone()))
            .unwrap());
        let mut c = s.fork(1).unwrap().pop().unwrap();
        c.set_scheduler_config(&Default::default()).unwrap();
        c.run(&mut |r: &Record| records.push(r.clone())).unwrap();
        assert_eq!(records, whole, "fork at {t}");
    }
}
