//! Filter plugins may promise, once per cycle, to pass every node without certain flags
//! (cordoned, tainted), and the cycle then skips calling them on such nodes. A promise that
//! were not exact would change which nodes are feasible or which plugin is blamed: this test
//! filters random cordoned, tainted and full nodes for random pods through the default profile,
//! once with the promises (`run_active_filters`) and once calling every plugin
//! (`run_filter`), and requires the same status on every node.

mod common;

use std::sync::Arc;

use ksim_api::{Node, Pod};
use ksim_scheduler::framework::{build_framework, CycleState, Registry};
use ksim_scheduler::node_info::{ClusterObjects, Snapshot};
use ksim_scheduler::pod_info::PodInfo;
use proptest::prelude::*;
use serde_json::{json, Value};

/// (cordoned, taints as (key index, effect index), pods already on it at 110 max, cpu free).
type NodeShape = (bool, Vec<(usize, usize)>, bool, bool);

fn node(i: usize, (cordoned, taints, full, busy): &NodeShape) -> Arc<Node> {
    let taints = common::taints(taints);
    Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": format!("node-{i}"),
                         "labels": {"kubernetes.io/hostname": format!("node-{i}")}},
            "spec": {"unschedulable": cordoned, "taints": taints},
            "status": {"allocatable": {"cpu": if *busy { "1" } else { "32" }, "memory": "128Gi",
                                       "pods": if *full { "0" } else { "110" }}}
        }))
        .expect("a valid node"),
    )
}

/// (tolerations as (key index or wildcard, effect index or any), nodeName index or none).
type PodShape = (Vec<(Option<usize>, Option<usize>)>, bool, Option<usize>);

fn pod((tolerations, tolerate_cordon, node_name): &PodShape) -> PodInfo {
    let mut tols: Vec<Value> = common::tolerations(tolerations);
    if *tolerate_cordon {
        tols.push(
            json!({"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
                         "effect": "NoSchedule"}),
        );
    }
    let p: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p", "namespace": "default", "uid": "u"},
        "spec": {"schedulerName": "default-scheduler",
                 "nodeName": node_name.map(|i| format!("node-{i}")).unwrap_or_default(),
                 "tolerations": tols,
                 "containers": [{"name": "c", "image": "nginx",
                    "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}}]}
    }))
    .expect("a valid pod");
    PodInfo::new(p)
}

fn node_shape() -> impl Strategy<Value = NodeShape> {
    (
        any::<bool>(),
        proptest::collection::vec((0usize..3, 0usize..3), 0..3),
        proptest::bool::weighted(0.1),
        proptest::bool::weighted(0.2),
    )
}

fn pod_shape() -> impl Strategy<Value = PodShape> {
    (
        proptest::collection::vec(
            (
                proptest::option::of(0usize..3),
                proptest::option::of(0usize..3),
            ),
            0..3,
        ),
        any::<bool>(),
        proptest::option::weighted(0.2, 0usize..12),
    )
}

proptest! {
    #[test]
    fn promised_filters_give_every_node_the_full_verdict(
        nodes in proptest::collection::vec(node_shape(), 1..12),
        pod_shape in pod_shape(),
    ) {
        let fwk = build_framework(&Registry::in_tree(), &Default::default(), &Default::default())
            .expect("the default profile");
        let snapshot = Snapshot::build(
            nodes.iter().enumerate().map(|(i, s)| node(i, s)),
            Vec::new(),
            Arc::new(ClusterObjects::default()),
        );
        let pod = pod(&pod_shape);
        let mut state = CycleState::default();
        let pre = fwk.run_pre_filter(&mut state, &pod, &snapshot);
        prop_assume!(pre.status.is_success());
        let active = fwk.active_filters(&state, &pod);
        for node in &snapshot.nodes {
            let promised = fwk.run_active_filters(&active, &state, &pod, node).into_status();
            let full = fwk.run_filter(&state, &pod, node);
            prop_assert_eq!(&promised, &full, "node {} flags {:?}", node.name(), node.flags());
        }
    }
}

/// The promises do skip work where they may: a cordoned node is still rejected by
/// NodeUnschedulable, a tainted one by TaintToleration, for a pod that tolerates neither.
#[test]
fn flagged_nodes_still_run_the_promising_plugins() {
    let fwk = build_framework(
        &Registry::in_tree(),
        &Default::default(),
        &Default::default(),
    )
    .expect("the default profile");
    let shapes: [NodeShape; 3] = [
        (true, vec![], false, false),
        (false, vec![(0, 0)], false, false),
        (false, vec![], false, false),
    ];
    let snapshot = Snapshot::build(
        shapes.iter().enumerate().map(|(i, s)| node(i, s)),
        Vec::new(),
        Arc::new(ClusterObjects::default()),
    );
    let pod = pod(&(vec![], false, None));
    let mut state = CycleState::default();
    assert!(fwk
        .run_pre_filter(&mut state, &pod, &snapshot)
        .status
        .is_success());
    let active = fwk.active_filters(&state, &pod);
    let blamed: Vec<&str> = snapshot
        .nodes
        .iter()
        .map(|n| {
            let r = fwk.run_active_filters(&active, &state, &pod, n);
            r.status().map_or("", |s| s.plugin)
        })
        .collect();
    assert_eq!(blamed, ["NodeUnschedulable", "TaintToleration", ""]);
}
