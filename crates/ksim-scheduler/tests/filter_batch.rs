//! Filtering a batch of nodes plugin by plugin gives every node the status that filtering it on
//! its own gives: the same first failing plugin, code and reasons, and passes where it passes.
//!
//! The cluster mixes what the default Filter plugins reject: cordoned nodes, NoSchedule taints,
//! nodes that are full (cpu, memory or pod count), nodes without the zone label a topology
//! spread constraint needs, and plain nodes; pods vary in requests, tolerations, node selectors
//! and spreading, so that each plugin rejects some nodes the plugins before it passed.

use std::sync::Arc;

use ksim_api::{Node, Pod};
use ksim_scheduler::framework::{build_framework, CycleState, FilterBatch, Registry};
use ksim_scheduler::node_info::{ClusterObjects, Snapshot};
use ksim_scheduler::pod_info::PodInfo;
use proptest::prelude::*;

fn node(i: usize) -> Arc<Node> {
    let taints = if i % 5 == 1 {
        serde_json::json!([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])
    } else {
        serde_json::json!([])
    };
    let mut labels = serde_json::json!({"kubernetes.io/hostname": format!("node-{i}"),
                                        "disk": if i.is_multiple_of(3) { "ssd" } else { "hdd" }});
    if i % 11 != 4 {
        labels["topology.kubernetes.io/zone"] = serde_json::json!(format!("zone-{}", i % 3));
    }
    let (cpu, pods) = match i % 7 {
        2 => ("1", "110"), // little cpu
        3 => ("32", "1"),  // one pod fills it
        _ => ("32", "110"),
    };
    Arc::new(
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": format!("node-{i}"), "labels": labels},
            "spec": {"unschedulable": i % 13 == 6, "taints": taints},
            "status": {"allocatable": {"cpu": cpu, "memory": if i % 9 == 5 { "1Gi" } else { "128Gi" },
                                       "pods": pods}}
        }))
        .unwrap(),
    )
}

fn pod(i: usize, cpu: &str, memory: &str, tolerate: bool, selector: bool, spread: bool) -> PodInfo {
    let mut spec = serde_json::json!({
        "schedulerName": "default-scheduler",
        "containers": [{"name": "c", "image": "nginx",
                        "resources": {"requests": {"cpu": cpu, "memory": memory}}}]
    });
    if tolerate {
        spec["tolerations"] =
            serde_json::json!([{"key": "dedicated", "operator": "Equal", "value": "gpu"}]);
    }
    if selector {
        spec["nodeSelector"] = serde_json::json!({"disk": "ssd"});
    }
    if spread {
        spec["topologySpreadConstraints"] = serde_json::json!([{
            "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}}}]);
    }
    let p: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": format!("p{i}"), "namespace": "default", "uid": format!("u{i}"),
                     "labels": {"app": "web"}},
        "spec": spec
    }))
    .unwrap();
    PodInfo::new(p)
}

fn cluster(n: usize) -> Snapshot {
    let mut snap = Snapshot::build(
        (0..n).map(node),
        Vec::new(),
        Arc::new(ClusterObjects::default()),
    );
    // One pod on every node of the "one pod fills it" kind, and a few spread pods elsewhere.
    for i in (0..n).filter(|i| i % 7 == 3 || i % 4 == 0) {
        let mut p = pod(1000 + i, "100m", "128Mi", true, false, false);
        p.pod.spec.node_name = format!("node-{i}");
        snap.add_pod(Arc::new(PodInfo::new(p.pod)));
    }
    snap
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn batch_statuses_equal_node_by_node_statuses(
        n in 1usize..120,
        cpu in prop::sample::select(vec!["100m", "2", "30", "64"]),
        memory in prop::sample::select(vec!["256Mi", "2Gi", "200Gi"]),
        tolerate: bool,
        selector: bool,
        spread: bool,
    ) {
        let snap = cluster(n);
        let fwk = build_framework(&Registry::in_tree(), &Default::default(), &Default::default())
            .unwrap();
        let p = pod(0, cpu, memory, tolerate, selector, spread);
        let mut state = CycleState::new();
        let pre = fwk.run_pre_filter(&mut state, &p, &snap);
        prop_assume!(pre.status.is_success());
        let filters = fwk.active_filters(&state);

        let mut refs: Vec<_> = snap.nodes.iter().collect();
        let mut batch = FilterBatch::default();
        fwk.run_active_filters_batch(&filters, &state, &p, &mut refs, &mut batch);
        prop_assert_eq!(batch.results.len(), n);
        for (node, batched) in snap.nodes.iter().zip(batch.results.drain(..)) {
            let single = fwk.run_active_filters(&filters, &state, &p, node);
            prop_assert_eq!(batched, single, "node {}", node.name());
        }
    }
}

#[test]
fn each_default_filter_rejects_something_in_the_cluster() {
    // Guards the test above against a cluster in which everything passes.
    let snap = cluster(120);
    let fwk = build_framework(
        &Registry::in_tree(),
        &Default::default(),
        &Default::default(),
    )
    .unwrap();
    let p = pod(0, "2", "2Gi", false, true, true);
    let mut state = CycleState::new();
    assert!(fwk
        .run_pre_filter(&mut state, &p, &snap)
        .status
        .is_success());
    let filters = fwk.active_filters(&state);
    let mut refs: Vec<_> = snap.nodes.iter().collect();
    let mut batch = FilterBatch::default();
    fwk.run_active_filters_batch(&filters, &state, &p, &mut refs, &mut batch);
    let mut plugins: Vec<&str> = batch
        .results
        .iter()
        .filter_map(|r| r.status().map(|s| s.plugin))
        .collect();
    plugins.sort_unstable();
    plugins.dedup();
    assert_eq!(
        plugins,
        [
            "NodeAffinity",
            "NodeResourcesFit",
            "NodeUnschedulable",
            "PodTopologySpread",
            "TaintToleration"
        ]
    );
    assert!(batch.results.iter().any(|r| r.is_success()));
}
