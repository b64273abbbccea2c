//! Which nodes a cycle looks at on a large cluster, as upstream decides it: the initial nodes in
//! name order, the NodeTree's zone interleaving, the snapshot re-listing the tree only when the set
//! of nodes changed (`UpdateSnapshot`), `numFeasibleNodesToFind`, and the rotating start index
//! (`findNodesThatFitPod` / `findNodesThatPassFilters`, pkg/scheduler/schedule_one.go).

use std::sync::Arc;

use ksim_api::config::KubeSchedulerConfiguration;
use ksim_api::{Node, Pod};
use ksim_scheduler::framework::{build_framework, CycleState, NoNominatedPods, Registry};
use ksim_scheduler::node_info::{initial_node_order, ClusterObjects, NodeInfo, Snapshot};
use ksim_scheduler::pod_info::PodInfo;
use ksim_scheduler::schedule::Algorithm;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;

fn node(name: &str, zone: &str, tainted: bool) -> Node {
    let taints = if tainted {
        json!([{"key": "dedicated", "value": "x", "effect": "NoSchedule"}])
    } else {
        json!([])
    };
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone,
                                               "kubernetes.io/hostname": name}},
        "spec": {"taints": taints},
        "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}}
    }))
    .expect("a valid node")
}

fn names(s: &Snapshot) -> Vec<&str> {
    s.nodes.iter().map(|n| n.name()).collect()
}

fn snapshot(nodes: Vec<Node>) -> Snapshot {
    let mut nodes: Vec<Arc<Node>> = nodes.into_iter().map(Arc::new).collect();
    initial_node_order(&mut nodes);
    Snapshot::build(nodes, Vec::new(), Arc::new(ClusterObjects::default()))
}

#[test]
fn initial_nodes_are_taken_in_name_order_then_interleaved_by_zone() {
    let s = snapshot(vec![
        node("n5", "b", false),
        node("n1", "a", false),
        node("n4", "a", false),
        node("n2", "b", false),
        node("n3", "c", false),
    ]);
    // By name: n1(a) n2(b) n3(c) n4(a) n5(b) → zones a, b, c in order of first appearance.
    assert_eq!(names(&s), ["n1", "n2", "n3", "n4", "n5"]);
    let s = snapshot(vec![
        node("n3", "b", false),
        node("n1", "a", false),
        node("n2", "a", false),
    ]);
    assert_eq!(names(&s), ["n1", "n3", "n2"]);
}

#[test]
fn a_node_removed_and_re_added_between_cycles_keeps_its_place() {
    let mut s = snapshot(vec![
        node("a1", "a", false),
        node("a2", "a", false),
        node("b1", "b", false),
    ]);
    assert_eq!(names(&s), ["a1", "b1", "a2"]);
    let info = s.remove_node("a1").expect("a1 exists");
    s.add_node(NodeInfo::new(info.node.clone()));
    s.update_for_cycle();
    // UpdateSnapshot saw the same set of nodes: the list is not re-read.
    assert_eq!(names(&s), ["a1", "b1", "a2"]);
    // Across a cycle, the removal re-reads the tree; the re-added a1 is then last in zone a.
    let info = s.remove_node("a1").expect("a1 exists");
    s.update_for_cycle();
    assert_eq!(names(&s), ["a2", "b1"]);
    s.add_node(NodeInfo::new(info.node.clone()));
    s.update_for_cycle();
    assert_eq!(names(&s), ["a2", "b1", "a1"]);
}

#[test]
fn a_zone_change_reorders_only_when_the_set_of_nodes_next_changes() {
    let mut s = snapshot(vec![
        node("a1", "a", false),
        node("a2", "a", false),
        node("b1", "b", false),
        node("b2", "b", false),
    ]);
    assert_eq!(names(&s), ["a1", "b1", "a2", "b2"]);
    s.update_node(Arc::new(node("a1", "b", false)));
    s.update_for_cycle();
    assert_eq!(names(&s), ["a1", "b1", "a2", "b2"], "no re-listing");
    s.add_node(NodeInfo::new(Arc::new(node("c1", "c", false))));
    s.update_for_cycle();
    // The tree: zone a [a2], zone b [b1, b2, a1], zone c [c1].
    assert_eq!(names(&s), ["a2", "b1", "c1", "b2", "a1"]);
}

fn algorithm(pct: i32) -> Algorithm {
    Algorithm::new(ChaCha8Rng::seed_from_u64(1), pct)
}

#[test]
fn num_feasible_nodes_to_find_follows_upstream() {
    let alg = algorithm(0);
    // Fewer than 100 nodes: all of them.
    assert_eq!(alg.num_feasible_nodes_to_find(None, 99), 99);
    // Adaptive: 50 - n/125 percent, at least 5 percent, at least 100 nodes.
    assert_eq!(alg.num_feasible_nodes_to_find(None, 150), 100);
    assert_eq!(alg.num_feasible_nodes_to_find(None, 1000), 420);
    assert_eq!(alg.num_feasible_nodes_to_find(None, 5000), 500);
    assert_eq!(alg.num_feasible_nodes_to_find(None, 6000), 300);
    assert_eq!(alg.num_feasible_nodes_to_find(None, 1500), 570);
    // Explicit, with the 100-node floor; a profile's value wins over the global one; a profile's
    // explicit 0 means adaptive.
    assert_eq!(alg.num_feasible_nodes_to_find(Some(10), 500), 100);
    assert_eq!(alg.num_feasible_nodes_to_find(Some(30), 3000), 900);
    let global = algorithm(50);
    assert_eq!(global.num_feasible_nodes_to_find(None, 3000), 1500);
    assert_eq!(global.num_feasible_nodes_to_find(Some(5), 3000), 150);
    assert_eq!(global.num_feasible_nodes_to_find(Some(0), 3000), 780);
}

fn pod() -> PodInfo {
    let p: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p", "namespace": "default", "uid": "p"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    }))
    .expect("a valid pod");
    PodInfo::new(p)
}

/// 300 nodes in one zone, `tainted` of them untolerated; percentageOfNodesToScore 10 gives
/// numNodesToFind = max(30, 100) = 100. Returns the next start index after one cycle and the
/// (evaluated, feasible) counts.
fn one_cycle(tainted: impl Fn(usize) -> bool) -> (usize, usize, usize) {
    let nodes: Vec<Node> = (0..300)
        .map(|i| node(&format!("n{i:03}"), "a", tainted(i)))
        .collect();
    let s = snapshot(nodes);
    let cfg = KubeSchedulerConfiguration::default();
    let profile = Default::default();
    let fwk = build_framework(&Registry::in_tree(), &cfg, &profile).expect("default profile");
    let mut alg = algorithm(10);
    let mut state = CycleState::new();
    let r = alg
        .schedule_pod(&fwk, &mut state, &pod(), &s, &NoNominatedPods)
        .expect("schedulable");
    (
        alg.next_start_node_index,
        r.evaluated_nodes,
        r.feasible_nodes,
    )
}

#[test]
fn the_search_stops_at_the_feasible_node_after_num_nodes_to_find() {
    // Every node feasible: the 101st feasible node cancels the search and is not counted.
    assert_eq!(one_cycle(|_| false), (100, 100, 100));
    // Nodes 100..110 rejected: they lie between the 100th feasible node and the one that
    // cancels the search, so upstream still records them and starts the next cycle after them.
    assert_eq!(one_cycle(|i| (100..110).contains(&i)), (110, 110, 100));
    // Rejected nodes among the first ones count too.
    assert_eq!(one_cycle(|i| i % 3 == 0), (151, 151, 100));
}
