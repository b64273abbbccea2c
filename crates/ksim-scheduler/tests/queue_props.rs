//! Property tests of the scheduling queue under random sequences of adds, updates, deletes,
//! cycles (pop + outcome), cluster events and timer flushes: no pod is lost or duplicated, a
//! popped pod is in no queue, backoff never exceeds the maximum, time never goes backwards.

use std::collections::BTreeSet;
use std::sync::Arc;

use ksim_api::Pod;
use ksim_scheduler::framework::{
    build_framework, ClusterEventKind, ClusterEventObjects, Framework, Registry,
};
use ksim_scheduler::pod_info::PodInfo;
use ksim_scheduler::queue::{Location, QueueConfig, QueueingStrategy, SchedulingQueue};
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Add { priority: i32, gated: bool },
    Pop { outcome: u8 },
    Delete(usize),
    Ungate(usize),
    NodeAdded,
    FlushBackoff,
    FlushLeftover,
    Advance(i64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..3i32, any::<bool>()).prop_map(|(p, g)| Op::Add { priority: p * 100, gated: g }),
        4 => (0..3u8).prop_map(|o| Op::Pop { outcome: o }),
        1 => (0..64usize).prop_map(Op::Delete),
        1 => (0..64usize).prop_map(Op::Ungate),
        1 => Just(Op::NodeAdded),
        2 => Just(Op::FlushBackoff),
        1 => Just(Op::FlushLeftover),
        3 => (0..120_000_000i64).prop_map(Op::Advance),
    ]
}

fn framework() -> Framework {
    let cfg = Default::default();
    build_framework(&Registry::in_tree(), &cfg, &Default::default()).expect("default profile")
}

fn pod(i: usize, priority: i32, gated: bool) -> Arc<PodInfo> {
    let gates = if gated {
        serde_json::json!([{"name": "g"}])
    } else {
        serde_json::json!([])
    };
    let p: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": format!("p{i}"), "namespace": "default", "uid": format!("u{i}")},
        "spec": {"priority": priority, "schedulingGates": gates,
                 "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    }))
    .expect("pod");
    Arc::new(PodInfo::new(p))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn queue_never_loses_or_duplicates_pods(ops in proptest::collection::vec(op(), 1..200)) {
        let fwk = framework();
        let cfg = QueueConfig::default();
        let mut q = SchedulingQueue::new(cfg);
        let mut live: BTreeSet<u32> = BTreeSet::new();
        let mut next_id = 0u32;
        let mut now = 0i64;
        let mut seq = 0u64;
        let node: ksim_api::Node = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "n"},
            "status": {"allocatable": {"cpu": "64", "memory": "64Gi", "pods": "110"}}
        })).expect("node");
        for op in ops {
            seq += 1;
            let prev_now = now;
            match op {
                Op::Add { priority, gated } => {
                    let id = next_id;
                    next_id += 1;
                    q.add(id, pod(id as usize, priority, gated), (now, seq), &fwk);
                    live.insert(id);
                }
                Op::Pop { outcome } => {
                    if let Some((id, _, attempts)) = q.pop() {
                        prop_assert!(attempts >= 1);
                        prop_assert_eq!(q.get(id).map(|e| e.location), Some(Location::InFlight));
                        prop_assert!(q.check_invariants().is_ok());
                        match outcome {
                            0 => { q.failed_unschedulable(id, (now, seq), vec!["NodeResourcesFit"], vec![], QueueingStrategy::Skip); }
                            1 => { q.failed_error(id, (now, seq)); }
                            _ => { q.remove(id); live.remove(&id); }
                        }
                    }
                }
                Op::Delete(i) => {
                    if let Some(&id) = live.iter().nth(i % live.len().max(1)) {
                        if q.get(id).is_some_and(|e| e.location != Location::InFlight) {
                            q.remove(id);
                            live.remove(&id);
                        }
                    }
                }
                Op::Ungate(i) => {
                    if let Some(&id) = live.iter().nth(i % live.len().max(1)) {
                        if let Some(e) = q.get(id) {
                            if e.location != Location::InFlight {
                                let p = pod(id as usize, e.pod.priority(), false);
                                q.update(id, p, now, &fwk);
                            }
                        }
                    }
                }
                Op::NodeAdded => {
                    let objs = ClusterEventObjects::Node { old: None, new: Some(&node) };
                    q.on_event(&[ClusterEventKind::NodeAdd], &objs, now, &fwk);
                }
                Op::FlushBackoff => { q.flush_backoff_completed(now); }
                Op::FlushLeftover => { q.flush_unschedulable_leftover(now); }
                Op::Advance(dt) => { now += dt; }
            }
            prop_assert!(now >= prev_now, "time went backwards");
            if let Err(e) = q.check_invariants() {
                prop_assert!(false, "{}", e);
            }
            let queued: BTreeSet<u32> = q.iter().map(|(id, _)| id).collect();
            prop_assert_eq!(&queued, &live, "queue content differs from the live pods");
            for (_, e) in q.iter() {
                prop_assert!(q.backoff_secs(e) <= cfg.max_backoff_secs);
            }
        }
    }
}
