//! Fast paths of the preemption dry run, each against the straightforward way:
//!
//! - `NodeInfo::copy_removing_into` (a node copied without the pods the dry run removes, the
//!   removals played on positions) must leave exactly what `copy_into` and one
//!   `remove_pod_info` per pod leave: the same pods at the same positions (by address), the
//!   same counts, affinity lists, ports and generation; and fail, touching nothing, exactly when
//!   one of those removals finds no pod. Pods share UIDs and appear twice on purpose (a removal
//!   by UID then takes another pod than the one named).
//! - `NodeToStatus` (one small slot per node naming a shared status) must answer `get`,
//!   `explicit`, `iter`, `len` and `nodes_where` as a plain map of node → status filled by the
//!   same `set` and `set_run` calls.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;

use ksim_api::{Node, Pod};
use ksim_scheduler::framework::{Code, NodeToStatus, Status};
use ksim_scheduler::node_info::NodeInfo;
use ksim_scheduler::pod_info::PodInfo;
use proptest::prelude::*;
use serde_json::{json, Value};

/// A pod: (uid number, cpu millis, gpus, affinity, anti-affinity, host port).
type PodShape = (u8, u32, u8, bool, bool, Option<u16>);

fn node(i: usize, tainted: bool) -> Arc<Node> {
    let taints: Vec<Value> = if tainted {
        vec![json!({"key": "k", "value": "v", "effect": "NoSchedule"})]
    } else {
        vec![]
    };
    Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": format!("node-{i}"),
                         "labels": {"kubernetes.io/hostname": format!("node-{i}")}},
            "spec": {"taints": taints},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110",
                                       "example.com/gpu": "4"},
                       "images": [{"names": ["img-0:1"], "sizeBytes": 1000}]}
        }))
        .expect("a valid node"),
    )
}

fn pod(node: usize, k: usize, &(uid, cpu, gpus, aff, anti, port): &PodShape) -> Arc<PodInfo> {
    let mut requests = json!({"cpu": format!("{cpu}m"), "memory": "1Gi"});
    if gpus > 0 {
        requests["example.com/gpu"] = json!(gpus.to_string());
    }
    let mut v = json!({
        "metadata": {"name": format!("p{node}-{k}"), "namespace": "default",
                     "uid": format!("u-{uid}"), "labels": {"app": "a"}},
        "spec": {"nodeName": format!("node-{node}"), "priority": k as i32,
                 "containers": [{"name": "c", "image": "img-0:1",
                    "resources": {"requests": requests}}]}
    });
    common::with_terms_and_port(&mut v, aff, anti, port);
    let p: Pod = serde_json::from_value(v).expect("a valid pod");
    Arc::new(PodInfo::new(p))
}

fn pod_shape() -> impl Strategy<Value = PodShape> {
    (
        0u8..6,
        100u32..2000,
        0u8..2,
        proptest::bool::weighted(0.3),
        proptest::bool::weighted(0.3),
        proptest::option::weighted(0.3, 8000u16..8003),
    )
}

/// A node with `shapes` added; the pods at positions `twice` are added a second time (the
/// same `Arc`).
fn node_info(i: usize, tainted: bool, shapes: &[PodShape], twice: &[usize]) -> NodeInfo {
    let mut n = NodeInfo::new(node(i, tainted));
    for (k, s) in shapes.iter().enumerate() {
        n.add_pod(pod(i, k, s));
    }
    for &t in twice {
        if let Some(p) = n.pods.get(t).cloned() {
            n.add_pod(p);
        }
    }
    n
}

/// Everything about a node, pods by address as well as by content.
fn fingerprint(
    n: &NodeInfo,
) -> (
    String,
    Vec<*const PodInfo>,
    Vec<*const PodInfo>,
    Vec<*const PodInfo>,
) {
    let addrs = |v: &[Arc<PodInfo>]| v.iter().map(Arc::as_ptr).collect::<Vec<_>>();
    (
        format!("{n:?}"),
        addrs(&n.pods),
        addrs(&n.pods_with_affinity),
        addrs(&n.pods_with_required_anti_affinity),
    )
}

proptest! {
    #[test]
    fn copy_removing_into_is_copy_then_removals(
        src_pods in proptest::collection::vec(pod_shape(), 0..8),
        src_twice in proptest::collection::vec(0usize..8, 0..2),
        old_pods in proptest::collection::vec(pod_shape(), 0..5),
        tainted in any::<bool>(),
        // (position in the source, how to name it: 0 the pod itself, 1 a copy with its UID,
        // 2 a pod of that UID shape that is not on the node).
        removals in proptest::collection::vec((0usize..10, 0u8..3), 0..8),
    ) {
        let src = node_info(1, tainted, &src_pods, &src_twice);
        let targets: Vec<Arc<PodInfo>> = removals
            .iter()
            .map(|&(k, how)| match (src.pods.get(k), how) {
                (Some(p), 0) => p.clone(),
                (Some(p), 1) => Arc::new((**p).clone()),
                _ => pod(1, 50 + k, &(10 + k as u8, 100, 0, false, false, None)),
            })
            .collect();
        // The scratch held another node before.
        let mut slow = node_info(0, !tainted, &old_pods, &[]);
        let mut fast = slow.clone();
        let before = fingerprint(&fast);
        src.copy_into(&mut slow);
        let all_found = targets.iter().all(|t| slow.remove_pod_info(t));
        let done = src.copy_removing_into(&mut fast, targets.iter());
        prop_assert_eq!(done, all_found);
        if done {
            prop_assert_eq!(fingerprint(&fast), fingerprint(&slow));
        } else {
            prop_assert_eq!(fingerprint(&fast), before);
        }
    }

    #[test]
    fn node_to_status_is_a_map(
        num_nodes in 0usize..12,
        ops in proptest::collection::vec((any::<bool>(), 0usize..14, 0usize..6, 0usize..4), 0..10),
        absent in proptest::option::of(0usize..4),
    ) {
        // Shared (static) statuses, as `set_run` takes them.
        static STATUSES: [Status; 4] = [
            Status::fixed(Code::Unschedulable, "Insufficient cpu", ""),
            Status::fixed(Code::UnschedulableAndUnresolvable, "Insufficient memory", ""),
            Status::fixed(Code::Unschedulable, "Too many pods", ""),
            Status::fixed(Code::Error, "boom", ""),
        ];
        let statuses = &STATUSES;
        let mut table = NodeToStatus::new(num_nodes);
        let mut model: BTreeMap<usize, Status> = BTreeMap::new();
        table.absent = absent.map(|k| statuses[k].clone());
        for &(run, start, len, k) in &ops {
            if run {
                table.set_run(start..start + len, &statuses[k]);
                for i in start..start + len {
                    model.insert(i, statuses[k].clone());
                }
            } else {
                table.set(start, statuses[k].clone());
                model.insert(start, statuses[k].clone());
            }
            prop_assert_eq!(table.len(), model.len());
            prop_assert_eq!(table.is_empty(), model.is_empty());
            prop_assert_eq!(table.iter().collect::<Vec<_>>(), model.iter().map(|(&i, s)| (i, s)).collect::<Vec<_>>());
            for i in 0..num_nodes + 16 {
                prop_assert_eq!(table.explicit(i), model.get(&i));
                prop_assert_eq!(table.get(i), model.get(&i).or(table.absent.as_ref()));
            }
            for code in [Code::Unschedulable, Code::UnschedulableAndUnresolvable, Code::Error] {
                let want: Vec<usize> = (0..num_nodes)
                    .filter(|&i| model.get(&i).or(table.absent.as_ref()).is_some_and(|s| s.code == code))
                    .collect();
                prop_assert_eq!(table.nodes_where(num_nodes, |s| s.is_some_and(|s| s.code == code)), want);
            }
        }
    }
}
