//! `Snapshot::update_pod_status` (a pod's status change in the cache: the engine's "pod
//! started" update) leaves a plain pod's counts alone and only moves it in the node's list and
//! the pod index's sets. It must be exactly what the straightforward path gives: `remove_pod`,
//! the change on the object (`Arc::make_mut`), then `add_pod` of it. This test builds two equal
//! snapshots of random pods (labels, affinity terms, host ports, deletion marks, shared UIDs),
//! changes one pod's status in one snapshot by each path (its own node, or another node's name)
//! and requires the same result: every node field by field (their `Debug` text), the nodes with
//! affinity pods, the pod index's candidates (as a set: the index keeps no order, see
//! `pod_index`), its term groups and PodTopologySpread's counts.

use std::sync::Arc;

use ksim_api::{Node, Selector};
use ksim_scheduler::node_info::{ClusterObjects, Snapshot};
use ksim_scheduler::pod_index::TermKind;
use ksim_scheduler::pod_info::PodInfo;
use ksim_scheduler::spread_index::SpreadQuery;
use proptest::prelude::*;
use serde_json::json;

/// (node, app label 0..3 (3: none), anti-affinity, host port, terminating, uid slot).
type PodShape = (usize, u8, bool, bool, bool, u8);

const NODES: usize = 4;

fn node(i: usize) -> Arc<Node> {
    Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": format!("node-{i}"),
                         "labels": {"kubernetes.io/hostname": format!("node-{i}"),
                                    "zone": format!("z{}", i % 2)}},
            "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}
        }))
        .expect("a valid node"),
    )
}

fn pod(k: usize, &(n, app, anti, port, terminating, uid): &PodShape) -> PodInfo {
    let mut v = json!({
        "metadata": {"name": format!("p{k}"), "namespace": "default",
                     "uid": format!("u{uid}")},
        "spec": {"nodeName": format!("node-{}", n % NODES),
                 "containers": [{"name": "c", "image": "img:1",
                    "resources": {"requests": {"cpu": format!("{}m", 100 + k), "memory": "1Gi"}}}]}
    });
    if app < 3 {
        v["metadata"]["labels"] = json!({"app": format!("a{app}")});
    }
    if anti {
        v["spec"]["affinity"]["podAntiAffinity"] = json!({
            "requiredDuringSchedulingIgnoredDuringExecution": [{
                "labelSelector": {"matchLabels": {"app": "a0"}},
                "topologyKey": "kubernetes.io/hostname"}]});
    }
    if port {
        v["spec"]["containers"][0]["ports"] = json!([{"containerPort": 80, "hostPort": 8080}]);
    }
    if terminating {
        v["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    }
    PodInfo::new(serde_json::from_value(v).expect("a valid pod"))
}

fn selector(v: serde_json::Value) -> Selector {
    let ls = serde_json::from_value(v).expect("a valid selector");
    Selector::from_label_selector(Some(&ls))
}

/// Everything the two paths must agree on, as text.
fn state(s: &Snapshot, selectors: &[Selector]) -> Vec<String> {
    let mut out: Vec<String> = s.nodes.iter().map(|n| format!("{n:?}")).collect();
    out.push(format!(
        "{:?} {:?}",
        s.have_pods_with_affinity, s.have_pods_with_required_anti_affinity
    ));
    for sel in selectors {
        let mut c = Vec::new();
        s.pod_index.for_each_candidate(sel, |i, p| {
            c.push(format!("{i}:{}:{}", p.name(), p.pod.status.phase))
        });
        c.sort();
        out.push(c.join(","));
        let queries = [SpreadQuery {
            namespace: "default",
            selector: sel,
            key: None,
        }];
        out.push(
            s.pod_index
                .with_spread_groups(&queries, s.nodes.len(), |v| format!("{:?}", v[0].group)),
        );
    }
    for labels in [json!({"app": "a0"}), json!({"app": "a1"}), json!({})] {
        let labels = serde_json::from_value(labels).expect("labels");
        for kind in TermKind::ALL {
            s.pod_index
                .for_each_group_candidate(kind, &labels, |g| out.push(format!("{g:?}")));
        }
    }
    out
}

fn build(shapes: &[PodShape]) -> Snapshot {
    let mut s = Snapshot::build(
        (0..NODES).map(node),
        Vec::new(),
        Arc::new(ClusterObjects::default()),
    );
    for (k, sh) in shapes.iter().enumerate() {
        s.add_pod(Arc::new(pod(k, sh)));
    }
    s
}

fn start(status: &mut ksim_api::PodStatus) {
    status.phase = "Running".into();
    status.start_time = Some("2026-01-01T00:00:01Z".into());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn status_update_equals_remove_then_add(
        shapes in prop::collection::vec(
            (0..NODES, 0u8..4, any::<bool>(), any::<bool>(), any::<bool>(), 0u8..12), 1..14),
        pick in any::<prop::sample::Index>(),
        other_node in any::<bool>(),
        keep_old_ref in any::<bool>(),
    ) {
        let selectors = [
            selector(json!({})),
            selector(json!({"matchLabels": {"app": "a0"}})),
            selector(json!({"matchExpressions": [
                {"key": "app", "operator": "In", "values": ["a1", "a2"]}]})),
        ];
        let mut fast = build(&shapes);
        let mut slow = build(&shapes);
        // Both count the spreading selectors from the start.
        prop_assert_eq!(state(&fast, &selectors), state(&slow, &selectors));
        // The engine's reference to the pod: the snapshot's own object.
        let k = pick.index(shapes.len());
        let name = format!("p{k}");
        let find = |s: &Snapshot| {
            s.nodes
                .iter()
                .flat_map(|n| n.pods.iter())
                .find(|p| p.name() == name)
                .cloned()
                .expect("every pod is bound to a listed node")
        };
        let mut fast_ref = find(&fast);
        let mut slow_ref = find(&slow);
        // Something else (a queue entry) may still hold the old object.
        let held = keep_old_ref.then(|| (fast_ref.clone(), slow_ref.clone()));
        let node = if other_node {
            format!("node-{}", (shapes[k].0 + 1) % NODES)
        } else {
            format!("node-{}", shapes[k].0)
        };
        let fast_in = fast.update_pod_status(&node, &mut fast_ref, start);
        let slow_in = slow.remove_pod(&node, slow_ref.uid());
        start(&mut Arc::make_mut(&mut slow_ref).pod.status);
        if slow_in {
            slow.add_pod(slow_ref.clone());
        }
        prop_assert_eq!(fast_in, slow_in);
        prop_assert_eq!(format!("{:?}", fast_ref.pod), format!("{:?}", slow_ref.pod));
        prop_assert_eq!(state(&fast, &selectors), state(&slow, &selectors));
        drop(held);
    }
}
