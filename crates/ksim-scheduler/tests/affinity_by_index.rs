//! InterPodAffinity's Filter over runs of the snapshot's nodes, read by node index from the
//! value-id columns and the pod index's shared counts (`leading_passes_in`, `leading_passes`,
//! `leading_rejections`), against `filter` node by node, over random clusters: nodes with or
//! without a zone and a hostname label, some cordoned (a flag a promise stops at) or full,
//! bound pods of two apps and two namespaces carrying required anti-affinity terms, and an
//! incoming pod with at most one required affinity term and up to two required anti-affinity
//! terms, by zone or by host.
//!
//! - The plugin's runs are exact: as many nodes as `filter` passes from the start (none with
//!   a stop flag), and the longest run `filter` rejects with the same shared status.
//! - Nodes that are not the snapshot's own (copies) get no run.
//! - Once a pod is added to the cycle state (a nominated pod), the runs stay correct.
//! - The framework's runs (`leading_passes_in`, `leading_rejections`, which now asks later
//!   plugins for rejection runs that the earlier ones pass) agree with `run_filter` and
//!   `run_active_filters` on every node they count.

use std::sync::Arc;

use ksim_api::{Node, Pod};
use ksim_scheduler::framework::{
    build_framework, CycleState, FilterPlugin, FilterResult, Framework, Registry, Status,
};
use ksim_scheduler::node_info::{ClusterObjects, NodeFlags, NodeInfo, Snapshot};
use ksim_scheduler::pod_info::PodInfo;
use proptest::prelude::*;
use serde_json::{json, Map, Value};

const KEYS: [&str; 2] = ["topology.kubernetes.io/zone", "kubernetes.io/hostname"];
const ZONES: [&str; 3] = ["a", "b", "c"];
const NAME: &str = "InterPodAffinity";

/// A required term: (topology key index, selected app).
type TermShape = (usize, usize);

/// A bound pod: (app, namespace, its required anti-affinity term).
type PodShape = (usize, usize, Option<TermShape>);

/// Per node: zone (`None`: no label), has a hostname label, cordoned, full, its pods.
type NodeShape = (Option<usize>, bool, bool, bool, Vec<PodShape>);

/// The incoming pod: its app, its required affinity term, its required anti-affinity terms.
type IncomingShape = (usize, Option<TermShape>, Vec<TermShape>);

fn terms(ts: &[TermShape]) -> Vec<Value> {
    ts.iter()
        .map(|&(k, app)| {
            json!({"labelSelector": {"matchLabels": {"app": format!("app{app}")}},
                   "topologyKey": KEYS[k]})
        })
        .collect()
}

fn node(i: usize, (zone, host, cordoned, full, _): &NodeShape) -> Arc<Node> {
    let mut labels = Map::new();
    if let Some(z) = zone {
        labels.insert(KEYS[0].to_string(), Value::String(ZONES[*z].to_string()));
    }
    if *host {
        labels.insert(KEYS[1].to_string(), Value::String(format!("node-{i}")));
    }
    Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": format!("node-{i}"), "labels": labels},
            "spec": {"unschedulable": cordoned},
            "status": {"allocatable": {"cpu": "32", "memory": "128Gi",
                                       "pods": if *full { "0" } else { "110" }}}
        }))
        .expect("a valid node"),
    )
}

fn pod_json(name: &str, node: Option<usize>, app: usize, ns: usize) -> Value {
    let namespace = ["default", "other"][ns];
    let mut v = json!({
        "metadata": {"name": name, "namespace": namespace, "uid": name,
                     "labels": {"app": format!("app{app}")}},
        "spec": {"schedulerName": "default-scheduler",
                 "containers": [{"name": "c", "image": "nginx",
                    "resources": {"requests": {"cpu": "100m"}}}]}
    });
    if let Some(n) = node {
        v["spec"]["nodeName"] = json!(format!("node-{n}"));
    }
    v
}

fn bound(node: usize, j: usize, &(app, ns, anti): &PodShape) -> Arc<PodInfo> {
    let mut v = pod_json(&format!("p-{node}-{j}"), Some(node), app, ns);
    if let Some(t) = anti {
        v["spec"]["affinity"]["podAntiAffinity"] =
            json!({"requiredDuringSchedulingIgnoredDuringExecution": terms(&[t])});
    }
    let p: Pod = serde_json::from_value(v).expect("a valid pod");
    Arc::new(PodInfo::new(p))
}

fn incoming((app, affinity, anti): &IncomingShape) -> PodInfo {
    let mut v = pod_json("incoming", None, *app, 0);
    if let Some(t) = affinity {
        v["spec"]["affinity"]["podAffinity"] =
            json!({"requiredDuringSchedulingIgnoredDuringExecution": terms(&[*t])});
    }
    if !anti.is_empty() {
        v["spec"]["affinity"]["podAntiAffinity"] =
            json!({"requiredDuringSchedulingIgnoredDuringExecution": terms(anti)});
    }
    PodInfo::new(serde_json::from_value(v).expect("a valid pod"))
}

fn term_shape() -> impl Strategy<Value = TermShape> {
    (0usize..2, 0usize..2)
}

fn node_shape() -> impl Strategy<Value = NodeShape> {
    (
        proptest::option::weighted(0.85, 0usize..3),
        proptest::bool::weighted(0.9),
        proptest::bool::weighted(0.1),
        proptest::bool::weighted(0.05),
        proptest::collection::vec(
            (
                0usize..2,
                0usize..2,
                proptest::option::weighted(0.5, term_shape()),
            ),
            0..3,
        ),
    )
}

fn incoming_shape() -> impl Strategy<Value = IncomingShape> {
    (
        0usize..2,
        proptest::option::weighted(0.4, term_shape()),
        proptest::collection::vec(term_shape(), 0..3),
    )
}

fn snapshot(nodes: &[NodeShape]) -> Snapshot {
    let pods: Vec<Arc<PodInfo>> = nodes
        .iter()
        .enumerate()
        .flat_map(|(i, n)| n.4.iter().enumerate().map(move |(j, p)| bound(i, j, p)))
        .collect();
    let mut s = Snapshot::build(
        nodes.iter().enumerate().map(|(i, n)| node(i, n)),
        pods,
        Arc::new(ClusterObjects::default()),
    );
    s.update_for_cycle();
    s
}

fn framework() -> Framework {
    build_framework(
        &Registry::in_tree(),
        &Default::default(),
        &Default::default(),
    )
    .expect("the default profile")
}

fn plugin(fwk: &Framework) -> &dyn FilterPlugin {
    fwk.filter
        .iter()
        .find(|p| p.name() == NAME)
        .and_then(|p| p.as_filter())
        .expect("InterPodAffinity filters")
}

/// The node-by-node answers: how many nodes from `start` (at most `limit`) `filter` passes
/// without a `stop` flag, and how long a run it rejects with the first node's rejection.
fn by_node(
    f: &dyn FilterPlugin,
    state: &CycleState,
    pod: &PodInfo,
    nodes: &[NodeInfo],
    stop: NodeFlags,
    limit: usize,
) -> (usize, usize, Option<Status>) {
    let nodes = &nodes[..limit.min(nodes.len())];
    let verdict = |n: &NodeInfo| (!n.flags().intersects(stop)).then(|| f.filter(state, pod, n));
    let passes = nodes
        .iter()
        .position(|n| verdict(n) != Some(FilterResult::PASS))
        .unwrap_or(nodes.len());
    let first = nodes
        .first()
        .and_then(verdict)
        .and_then(|r| r.status().cloned());
    let rejected = match &first {
        Some(s) => nodes
            .iter()
            .position(|n| verdict(n).and_then(|r| r.status().cloned()).as_ref() != Some(s))
            .unwrap_or(nodes.len()),
        None => 0,
    };
    (passes, rejected, first)
}

/// Checks the plugin's three runs against `by_node` from every start, for both stop masks.
fn check_runs(
    f: &dyn FilterPlugin,
    state: &CycleState,
    pod: &PodInfo,
    snapshot: &Snapshot,
    limit: usize,
    exact: bool,
) -> Result<(), TestCaseError> {
    let n = snapshot.nodes.len();
    for stop in [NodeFlags::NONE, NodeFlags::UNSCHEDULABLE] {
        for start in 0..n {
            let run = &snapshot.nodes[start..];
            let (passes, rejected, first) = by_node(f, state, pod, run, stop, limit);
            let k_in = f
                .leading_passes_in(state, pod, snapshot, start, n, stop, limit)
                .unwrap_or_else(|| f.leading_passes(state, pod, run, stop, limit));
            let k = f.leading_passes(state, pod, run, stop, limit);
            let (r, s) = f.leading_rejections(state, pod, run, stop, limit);
            prop_assert!(
                k_in <= passes && k <= passes,
                "start {}: {} {} > {}",
                start,
                k_in,
                k,
                passes
            );
            prop_assert!(
                r <= rejected,
                "start {}: {} rejections > {}",
                start,
                r,
                rejected
            );
            prop_assert_eq!(r > 0, s.is_some());
            if let Some(s) = s {
                prop_assert_eq!(Some(s), first.as_ref(), "start {}", start);
                prop_assert_eq!(s.plugin, NAME);
            }
            if exact {
                prop_assert_eq!(k_in, passes, "start {}: passes in", start);
                prop_assert_eq!(k, passes, "start {}: passes", start);
                prop_assert_eq!(r, rejected, "start {}: rejections", start);
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn runs_by_index_are_filter_node_by_node(
        nodes in proptest::collection::vec(node_shape(), 1..20),
        pod_shape in incoming_shape(),
        limit in 1usize..24,
    ) {
        let fwk = framework();
        let f = plugin(&fwk);
        let snapshot = snapshot(&nodes);
        let pod = incoming(&pod_shape);
        let mut state = CycleState::default();
        let pre = fwk.run_pre_filter(&mut state, &pod, &snapshot);
        prop_assume!(pre.status.is_success() && !state.should_skip_filter(NAME));
        // With the shared counts and at most one affinity term every run is read by index,
        // exactly.
        check_runs(f, &state, &pod, &snapshot, limit, true)?;

        // Copies of the nodes are not the snapshot's: no run.
        let copies: Vec<NodeInfo> = snapshot.nodes.clone();
        prop_assert_eq!(f.leading_passes(&state, &pod, &copies, NodeFlags::NONE, limit), 0);
        prop_assert_eq!(f.leading_rejections(&state, &pod, &copies, NodeFlags::NONE, limit).0, 0);

        // A nominated pod added to the cycle: the counts are owned from then on; whatever
        // the runs are, they must still be right.
        let nominated = bound(0, 99, &(pod_shape.0, 0, pod_shape.2.first().copied()));
        let mut added = state.clone();
        prop_assert!(fwk
            .run_pre_filter_add_pod(&mut added, &pod, &nominated, &snapshot.nodes[0], &snapshot)
            .is_success());
        check_runs(f, &added, &pod, &snapshot, limit, false)?;
    }

    #[test]
    fn framework_runs_are_what_filter_returns(
        nodes in proptest::collection::vec(node_shape(), 1..20),
        pod_shape in incoming_shape(),
        limit in 1usize..24,
    ) {
        let fwk = framework();
        let snapshot = snapshot(&nodes);
        let pod = incoming(&pod_shape);
        let mut state = CycleState::default();
        let pre = fwk.run_pre_filter(&mut state, &pod, &snapshot);
        prop_assume!(pre.status.is_success());
        let active = fwk.active_filters(&state, &pod);
        let n = snapshot.nodes.len();
        for start in 0..n {
            let k = fwk.leading_passes_in(&active, &state, &pod, &snapshot, start, n, limit);
            prop_assert!(k <= limit.min(n - start));
            for node in &snapshot.nodes[start..start + k] {
                let full = fwk.run_filter(&state, &pod, node);
                prop_assert!(full.is_success(), "node {} counted but {:?}", node.name(), full);
            }
            let run = &snapshot.nodes[start..];
            let (k, shared) = fwk.leading_rejections(&active, &state, &pod, run, limit);
            prop_assert!(k <= limit.min(run.len()));
            prop_assert_eq!(k > 0, shared.is_some());
            for node in &run[..k] {
                let s = shared.expect("a status with the run");
                prop_assert_eq!(&fwk.run_filter(&state, &pod, node), s, "node {}", node.name());
                let active_r = fwk.run_active_filters(&active, &state, &pod, node).into_status();
                prop_assert_eq!(&active_r, s, "node {}", node.name());
            }
        }
    }
}

/// A host anti-affinity group (the scheduler_perf workload's shape): the nodes holding a pod
/// of the group are rejected in runs by InterPodAffinity, after NodeResourcesFit passed them,
/// and the nodes between are taken in runs.
#[test]
fn host_anti_affinity_is_filtered_in_runs() {
    let fwk = framework();
    let member = (0, 0, Some((1, 0)));
    let shapes: Vec<NodeShape> = (0..8)
        .map(|i| {
            let pods = if i == 2 || i == 3 || i == 6 {
                vec![member]
            } else {
                vec![]
            };
            (Some(0), true, false, false, pods)
        })
        .collect();
    let snapshot = snapshot(&shapes);
    let pod = incoming(&(0, None, vec![(1, 0)]));
    let mut state = CycleState::default();
    assert!(fwk
        .run_pre_filter(&mut state, &pod, &snapshot)
        .status
        .is_success());
    let active = fwk.active_filters(&state, &pod);
    assert_eq!(
        fwk.leading_passes_in(&active, &state, &pod, &snapshot, 0, 8, 8),
        2
    );
    let (k, s) = fwk.leading_rejections(&active, &state, &pod, &snapshot.nodes[2..], 6);
    assert_eq!(k, 2);
    assert_eq!(s.map(|s| s.plugin), Some(NAME));
    assert_eq!(
        fwk.leading_passes_in(&active, &state, &pod, &snapshot, 4, 8, 8),
        2
    );
}
