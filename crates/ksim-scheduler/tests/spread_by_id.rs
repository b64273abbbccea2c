//! PodTopologySpread reads a snapshot node's topology values by their ids in the snapshot's
//! label columns (Filter, PreScore's domains, Score); any other `NodeInfo` (a copy, the
//! preemption dry run's scratch node) is read by its labels. Over random clusters (keys
//! missing, empty values, pods of two namespaces and two apps) and random constraints, both
//! ways must give the same verdicts, the same domains and the same raw and normalized scores,
//! with the pod's own constraints and with the system default ones (a Service selects the
//! pod: nodes without a key are not ignored and a missing zone reads as "").

use std::sync::Arc;

use ksim_api::{Node, Pod, Service};
use ksim_scheduler::framework::{build_framework, CycleState, Registry, ScorePlugin};
use ksim_scheduler::node_info::{ClusterObjects, NodeInfo, Snapshot};
use ksim_scheduler::pod_info::PodInfo;
use proptest::prelude::*;
use serde_json::{json, Map, Value};

const KEYS: [&str; 3] = [
    "topology.kubernetes.io/zone",
    "example.com/rack",
    "kubernetes.io/hostname",
];
/// Zone and rack values; "" is a label present with an empty value.
const VALUES: [&str; 4] = ["a", "b", "", "c"];

/// Per node: its value of each key (`None`: the label is missing), and its pods as (app,
/// namespace) pairs.
type NodeShape = ([Option<usize>; 3], Vec<(usize, usize)>);

/// Per constraint: (key, maxSkew, DoNotSchedule, selected app).
type ConstraintShape = (usize, i32, bool, usize);

fn node(i: usize, (values, _): &NodeShape) -> Arc<Node> {
    let mut labels = Map::new();
    for (k, v) in values.iter().enumerate() {
        if let Some(v) = v {
            let value = if k == 2 {
                format!("node-{i}")
            } else {
                VALUES[*v].to_string()
            };
            labels.insert(KEYS[k].to_string(), Value::String(value));
        }
    }
    Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": format!("node-{i}"), "labels": labels},
            "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"}}
        }))
        .expect("a valid node"),
    )
}

fn pod_on(node: usize, j: usize, app: usize, ns: usize) -> Arc<PodInfo> {
    let namespace = ["default", "other"][ns];
    let p: Pod = serde_json::from_value(json!({
        "metadata": {"name": format!("p-{node}-{j}"), "namespace": namespace,
                     "uid": format!("u-{node}-{j}"), "labels": {"app": format!("app{app}")}},
        "spec": {"nodeName": format!("node-{node}"),
                 "containers": [{"name": "c", "image": "nginx",
                    "resources": {"requests": {"cpu": "100m"}}}]}
    }))
    .expect("a valid pod");
    Arc::new(PodInfo::new(p))
}

fn incoming(constraints: &[ConstraintShape]) -> PodInfo {
    let tsc: Vec<Value> = constraints
        .iter()
        .map(|&(k, skew, hard, app)| {
            json!({"maxSkew": skew, "topologyKey": KEYS[k],
                   "whenUnsatisfiable": if hard { "DoNotSchedule" } else { "ScheduleAnyway" },
                   "labelSelector": {"matchLabels": {"app": format!("app{app}")}}})
        })
        .collect();
    let p: Pod = serde_json::from_value(json!({
        "metadata": {"name": "incoming", "namespace": "default", "uid": "incoming",
                     "labels": {"app": "app0"}},
        "spec": {"schedulerName": "default-scheduler", "topologySpreadConstraints": tsc,
                 "containers": [{"name": "c", "image": "nginx",
                    "resources": {"requests": {"cpu": "100m"}}}]}
    }))
    .expect("a valid pod");
    PodInfo::new(p)
}

fn node_shape() -> impl Strategy<Value = NodeShape> {
    let value = |present: f64| proptest::option::weighted(present, 0usize..VALUES.len());
    (
        [value(0.9), value(0.8), value(0.95)],
        proptest::collection::vec((0usize..2, 0usize..2), 0..4),
    )
}

fn constraint_shape() -> impl Strategy<Value = ConstraintShape> {
    (0usize..3, 1i32..3, any::<bool>(), 0usize..2)
}

fn snapshot(nodes: &[NodeShape]) -> Snapshot {
    snapshot_with(nodes, ClusterObjects::default())
}

fn snapshot_with(nodes: &[NodeShape], objects: ClusterObjects) -> Snapshot {
    let pods: Vec<Arc<PodInfo>> = nodes
        .iter()
        .enumerate()
        .flat_map(|(i, (_, pods))| {
            pods.iter()
                .enumerate()
                .map(move |(j, &(app, ns))| pod_on(i, j, app, ns))
        })
        .collect();
    let mut s = Snapshot::build(
        nodes.iter().enumerate().map(|(i, n)| node(i, n)),
        pods,
        Arc::new(objects),
    );
    s.update_for_cycle();
    s
}

const NAME: &str = "PodTopologySpread";

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn filter_by_value_id_is_filter_by_label(
        nodes in proptest::collection::vec(node_shape(), 1..24),
        constraints in proptest::collection::vec(constraint_shape(), 1..3),
    ) {
        let fwk = build_framework(&Registry::in_tree(), &Default::default(), &Default::default())
            .expect("the default profile");
        let filter = fwk.filter.iter().find(|p| p.name() == NAME)
            .and_then(|p| p.as_filter()).expect("PodTopologySpread filters");
        let snapshot = snapshot(&nodes);
        let pod = incoming(&constraints);
        let mut state = CycleState::default();
        let _ = fwk.run_pre_filter(&mut state, &pod, &snapshot);
        for n in &snapshot.nodes {
            let copy: NodeInfo = n.clone();
            prop_assert_eq!(filter.filter(&state, &pod, n), filter.filter(&state, &pod, &copy),
                "node {}", n.name());
        }
    }

    #[test]
    fn scores_by_value_id_are_scores_by_label(
        nodes in proptest::collection::vec(node_shape(), 1..24),
        constraints in proptest::collection::vec(constraint_shape(), 1..3),
        scored in proptest::collection::vec(any::<bool>(), 24),
        defaulted in proptest::bool::weighted(0.3),
    ) {
        let fwk = build_framework(&Registry::in_tree(), &Default::default(), &Default::default())
            .expect("the default profile");
        let pre_score = fwk.pre_score.iter().find(|p| p.name() == NAME)
            .and_then(|p| p.as_pre_score()).expect("PodTopologySpread pre-scores");
        let score: &dyn ScorePlugin = fwk.score.iter().find(|w| w.plugin.name() == NAME)
            .and_then(|w| w.plugin.as_score()).expect("PodTopologySpread scores");
        let mut objects = ClusterObjects::default();
        let pod = if defaulted {
            let svc: Service = serde_json::from_value(json!({
                "metadata": {"name": "svc", "namespace": "default"},
                "spec": {"selector": {"app": "app0"}}
            }))
            .expect("a valid service");
            objects.services.push(svc);
            incoming(&[])
        } else {
            incoming(&constraints)
        };
        let snapshot = snapshot_with(&nodes, objects);
        // The nodes Filter left: a random subset, in snapshot order.
        let refs: Vec<&NodeInfo> = snapshot.nodes.iter()
            .zip(scored.iter().cycle())
            .filter(|(_, &keep)| keep)
            .map(|(n, _)| n)
            .collect();
        prop_assume!(!refs.is_empty());
        let copies: Vec<NodeInfo> = refs.iter().map(|&n| n.clone()).collect();
        let copy_refs: Vec<&NodeInfo> = copies.iter().collect();

        let mut by_id = CycleState::default();
        let mut by_label = CycleState::default();
        let a = pre_score.pre_score(&mut by_id, &pod, &refs, &snapshot);
        let b = pre_score.pre_score(&mut by_label, &pod, &copy_refs, &snapshot);
        prop_assert_eq!(&a, &b);
        prop_assume!(a.is_success());

        let scores = |state: &CycleState, nodes: &[&NodeInfo]| {
            let mut raw = Vec::new();
            score.score_nodes(state, &pod, nodes, &mut raw).expect("scores");
            let mut normalized = raw.clone();
            assert!(score.normalize(state, &pod, &mut normalized).is_success());
            (raw, normalized)
        };
        let fast = scores(&by_id, &refs);
        // Domains found by id, scores read by label; and both by label.
        prop_assert_eq!(&fast, &scores(&by_id, &copy_refs));
        prop_assert_eq!(&fast, &scores(&by_label, &copy_refs));
        // Node by node (`score`, which reads labels).
        for (k, n) in refs.iter().enumerate() {
            let one = score.score(&by_id, &pod, n).expect("a score");
            prop_assert_eq!(one, fast.0[k], "node {}", n.name());
        }
    }
}
