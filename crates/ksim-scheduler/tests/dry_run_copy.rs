//! The preemption dry run copies each node it checks into one scratch `NodeInfo`
//! (`NodeInfo::copy_into`, reusing the scratch's allocations) instead of cloning it, and a
//! rejection's reasons live in `Reasons` (one kept inline). Both must be exact: this test copies
//! random nodes (pods with and without affinity, host ports, images, taints, extended
//! resources) over a scratch that held another random node, with pods removed and added as the
//! dry run does, and requires the copy to equal a fresh clone field by field (their `Debug`
//! text); removes pods by address (`NodeInfo::remove_pod_info`, the dry run's way) and by UID
//! and requires equal nodes; and builds `Reasons` every way the code does and requires the
//! slice of a `Vec`.

mod common;

use std::borrow::Cow;
use std::sync::Arc;

use ksim_api::{Node, Pod};
use ksim_scheduler::framework::{Reason, Reasons, Status};
use ksim_scheduler::node_info::NodeInfo;
use ksim_scheduler::pod_info::PodInfo;
use proptest::prelude::*;
use serde_json::{json, Value};

/// (tainted, images, gpus, pods as (cpu millis, affinity, anti-affinity, host port)).
type NodeShape = (bool, usize, u8, Vec<(u32, bool, bool, Option<u16>)>);

fn node(i: usize, (tainted, images, gpus, _): &NodeShape) -> Arc<Node> {
    let taints: Vec<Value> = if *tainted {
        vec![json!({"key": "k", "value": "v", "effect": "NoSchedule"})]
    } else {
        vec![]
    };
    let images: Vec<Value> = (0..*images)
        .map(|k| json!({"names": [format!("img-{k}:1")], "sizeBytes": 1000 * (k + 1)}))
        .collect();
    let mut alloc = json!({"cpu": "8", "memory": "32Gi", "pods": "110"});
    if *gpus > 0 {
        alloc["example.com/gpu"] = json!(gpus.to_string());
    }
    Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": format!("node-{i}"),
                         "labels": {"kubernetes.io/hostname": format!("node-{i}")}},
            "spec": {"taints": taints},
            "status": {"allocatable": alloc, "images": images}
        }))
        .expect("a valid node"),
    )
}

fn pod(node: usize, k: usize, &(cpu, aff, anti, port): &(u32, bool, bool, Option<u16>)) -> PodInfo {
    let mut v = json!({
        "metadata": {"name": format!("p{node}-{k}"), "namespace": "default",
                     "uid": format!("u{node}-{k}"), "labels": {"app": "a"}},
        "spec": {"nodeName": format!("node-{node}"), "priority": k as i32,
                 "containers": [{"name": "c", "image": "img-0:1",
                    "resources": {"requests": {"cpu": format!("{cpu}m"), "memory": "1Gi"}}}]}
    });
    common::with_terms_and_port(&mut v, aff, anti, port);
    let p: Pod = serde_json::from_value(v).expect("a valid pod");
    PodInfo::new(p)
}

fn node_info(i: usize, shape: &NodeShape) -> NodeInfo {
    let mut n = NodeInfo::new(node(i, shape));
    for (k, p) in shape.3.iter().enumerate() {
        n.add_pod(Arc::new(pod(i, k, p)));
    }
    n
}

fn node_shape() -> impl Strategy<Value = NodeShape> {
    (
        any::<bool>(),
        0usize..3,
        0u8..3,
        proptest::collection::vec(
            (
                100u32..2000,
                proptest::bool::weighted(0.3),
                proptest::bool::weighted(0.3),
                proptest::option::weighted(0.3, 8000u16..8003),
            ),
            0..6,
        ),
    )
}

fn reason() -> impl Strategy<Value = Reason> {
    prop_oneof![
        Just(Cow::Borrowed("Insufficient cpu")),
        Just(Cow::Borrowed("Insufficient memory")),
        "[a-c]{0,3}".prop_map(Cow::Owned),
    ]
}

proptest! {
    #[test]
    fn copy_into_equals_clone(
        a in node_shape(),
        b in node_shape(),
        removed in proptest::collection::vec(0usize..6, 0..4),
        added in 0usize..3,
    ) {
        let src = node_info(1, &b);
        // The scratch held another node, and the dry run then changed it.
        let mut scratch = node_info(0, &a);
        for k in &removed {
            scratch.remove_pod(&format!("u0-{k}"));
        }
        for k in 0..added {
            scratch.add_pod(Arc::new(pod(0, 10 + k, &(100, k == 1, k == 2, Some(8000)))));
        }
        src.copy_into(&mut scratch);
        prop_assert_eq!(format!("{scratch:?}"), format!("{:?}", src.clone()));
        // The source is untouched by what the dry run does to the copy.
        let before = format!("{src:?}");
        for k in 0..b.3.len() {
            scratch.remove_pod(&format!("u1-{k}"));
        }
        prop_assert_eq!(format!("{src:?}"), before);
    }

    #[test]
    fn remove_pod_info_equals_remove_pod(
        a in node_shape(),
        order in proptest::collection::vec(0usize..8, 0..8),
    ) {
        // The dry run removes a node's own pods by address (`remove_pod_info`); the
        // straightforward path by UID. Some removals name a pod by a fresh copy with the same
        // UID (another address), some a pod no longer there.
        let mut by_uid = node_info(0, &a);
        let mut by_info = by_uid.clone();
        for (step, &k) in order.iter().enumerate() {
            let target: Arc<PodInfo> = match by_info.pods.get(k) {
                Some(p) if step % 3 != 2 => p.clone(),
                _ => Arc::new(pod(0, k, &(100, false, false, None))),
            };
            let found_uid = by_uid.remove_pod(target.uid());
            let found_info = by_info.remove_pod_info(&target);
            prop_assert_eq!(found_uid, found_info);
            prop_assert_eq!(format!("{by_info:?}"), format!("{by_uid:?}"));
        }
    }

    #[test]
    fn reasons_read_as_their_vec(
        v in proptest::collection::vec(reason(), 0..4),
        w in proptest::collection::vec(reason(), 0..4),
    ) {
        let from_vec = Reasons::from(v.clone());
        let collected: Reasons = v.iter().cloned().collect();
        let mut pushed = Reasons::new();
        for r in &v {
            pushed.push(r.clone());
        }
        for r in [&from_vec, &collected, &pushed] {
            prop_assert_eq!(r.as_slice(), v.as_slice());
            prop_assert_eq!(r.len(), v.len());
            prop_assert_eq!(r.iter().collect::<Vec<_>>(), v.iter().collect::<Vec<_>>());
            prop_assert_eq!(format!("{r:?}"), format!("{v:?}"));
        }
        // Equality is the vectors' equality, whatever the representation.
        prop_assert_eq!(Reasons::from(w.clone()) == pushed, w == v);
        // A status' message joins its reasons as before.
        let s = Status::with_reasons(ksim_scheduler::framework::Code::Unschedulable, v.clone());
        prop_assert_eq!(s.message(), v.join(", "));
    }
}
