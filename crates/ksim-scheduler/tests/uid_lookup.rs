//! The snapshot finds a bound pod by UID through per-node UID hashes (`remove_pod`,
//! `update_pod_status`). It must take exactly the pod the plain scan takes, the first on the
//! node with that UID, UIDs shared between pods included. This test drives a snapshot and a
//! model (plain `NodeInfo`s, removing with `NodeInfo::remove_pod`'s scan) through random
//! additions, removals by UID and status changes, and compares every node's pods (name and
//! status, in order) after each step.

use std::sync::Arc;

use ksim_api::Node;
use ksim_scheduler::node_info::{ClusterObjects, NodeInfo, Snapshot};
use ksim_scheduler::pod_info::PodInfo;
use proptest::prelude::*;
use serde_json::json;

const NODES: usize = 3;

fn node(i: usize) -> Arc<Node> {
    Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": format!("node-{i}"),
                         "labels": {"kubernetes.io/hostname": format!("node-{i}")}},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}
        }))
        .expect("a valid node"),
    )
}

fn pod(k: usize, n: usize, uid: u8, app: u8) -> Arc<PodInfo> {
    PodInfo::arc(
        serde_json::from_value(json!({
            "metadata": {"name": format!("p{k}"), "namespace": "default",
                         "uid": format!("u{uid}"), "labels": {"app": format!("a{app}")}},
            "spec": {"nodeName": format!("node-{n}"),
                     "containers": [{"name": "c", "image": "img:1",
                        "resources": {"requests": {"cpu": "100m", "memory": "1Gi"}}}]}
        }))
        .expect("a valid pod"),
    )
}

fn pods_of(nodes: &[NodeInfo]) -> Vec<Vec<String>> {
    nodes
        .iter()
        .map(|n| {
            n.pods
                .iter()
                .map(|p| format!("{}:{}:{}", p.name(), p.uid(), p.pod.status.phase))
                .collect()
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// Each step: (0 add, 1 remove by UID, 2 status change; node; UID among six, so shared
    /// often; app label).
    #[test]
    fn lookup_by_uid_hash_takes_the_first_pod_with_the_uid(
        ops in prop::collection::vec((0u8..3, 0..NODES, 0u8..6, 0u8..3), 1..60)
    ) {
        let mut snap = Snapshot::build(
            (0..NODES).map(node),
            Vec::new(),
            Arc::new(ClusterObjects::default()),
        );
        let mut model: Vec<NodeInfo> = (0..NODES).map(|i| NodeInfo::new(node(i))).collect();
        for (k, &(op, n, slot, app)) in ops.iter().enumerate() {
            let node_name = format!("node-{n}");
            let uid = format!("u{slot}");
            match op {
                0 => {
                    let p = pod(k, n, slot, app);
                    prop_assert!(snap.add_pod(p.clone()));
                    model[n].add_pod(p);
                }
                1 => {
                    let found = snap.remove_pod(&node_name, &uid);
                    prop_assert_eq!(found, model[n].remove_pod(&uid));
                }
                _ => {
                    // The status change of the first pod with the UID, through the snapshot's
                    // own object (what the engine holds).
                    let Some(mut held) = snap.nodes[n].pods.iter().find(|p| p.uid() == uid).cloned()
                    else {
                        continue;
                    };
                    let phase = format!("Running{k}");
                    let set = |s: &mut ksim_api::PodStatus| s.phase = phase.clone();
                    prop_assert!(snap.update_pod_status(&node_name, &mut held, set));
                    let first = model[n].pods.iter().position(|p| p.uid() == uid);
                    let Some(first) = first else {
                        prop_assert!(false, "the model lacks a pod the snapshot has");
                        continue;
                    };
                    let mut changed = model[n].remove_pod_at(first);
                    Arc::make_mut(&mut changed).pod.status.phase = phase.clone();
                    model[n].add_pod(changed);
                }
            }
            prop_assert_eq!(pods_of(&snap.nodes), pods_of(&model));
        }
    }
}
