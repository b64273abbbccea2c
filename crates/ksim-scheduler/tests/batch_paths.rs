//! The cycle's batch paths against a node-by-node computation, over random clusters and pods
//! through the default profile:
//! - `Framework::leading_passes` (runs of nodes the Filter plugins vouch for, taken in one
//!   call) may only count nodes that every plugin passes, and never one with a promised flag;
//! - `Framework::leading_rejections` (runs of nodes rejected with one shared status) may only
//!   count nodes on which `run_filter` and `run_active_filters` return that very status;
//! - `NodeToStatus::set_run` (a run of rejected nodes recorded at once) must leave the table
//!   `set` node by node leaves;
//! - the preemption dry run's filters (`PluginsRunner::dry_run_filters`, resolved once) must
//!   answer every node as the full plugin list does, status and pass/fail alike;
//! - `ScorePlugin::uniform_score` (a score the same on every node, filled instead of scored)
//!   must be what `score_nodes` and `normalize` give each node, and `run_score`'s table (raw,
//!   normalized, weighted, totals) must equal one built plugin by plugin without it; told the
//!   union of the nodes' flags (`uniform_score_with_flags`), a plugin answers the same.

mod common;

use std::sync::Arc;

use ksim_api::{Node, Pod};
use ksim_scheduler::framework::{
    build_framework, Code, CycleState, Framework, NoNominatedPods, NodeToStatus, PluginsRunner,
    Registry, ScoreTable, Status,
};
use ksim_scheduler::node_info::{ClusterObjects, NodeFlags, NodeInfo, Snapshot};
use ksim_scheduler::pod_info::PodInfo;
use proptest::prelude::*;
use serde_json::{json, Value};

const IMAGES: [&str; 3] = ["nginx:latest", "redis:7", "busybox:latest"];

/// (cordoned, taints as (key index, effect index), no room for pods, 1 cpu only, an extended
/// resource, images listed as (image index, size in MiB)).
type NodeShape = (
    bool,
    Vec<(usize, usize)>,
    bool,
    bool,
    bool,
    Vec<(usize, u64)>,
);

fn node(i: usize, (cordoned, taints, full, busy, gpu, images): &NodeShape) -> Arc<Node> {
    let taints = common::taints(taints);
    let images: Vec<Value> = images
        .iter()
        .map(|&(k, mib)| json!({"names": [IMAGES[k]], "sizeBytes": mib * 1024 * 1024}))
        .collect();
    let mut alloc = json!({"cpu": if *busy { "1" } else { "32" }, "memory": "128Gi",
                           "pods": if *full { "0" } else { "110" }});
    if *gpu {
        alloc["example.com/gpu"] = json!("2");
    }
    Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": format!("node-{i}"),
                         "labels": {"kubernetes.io/hostname": format!("node-{i}")}},
            "spec": {"unschedulable": cordoned, "taints": taints},
            "status": {"allocatable": alloc, "images": images}
        }))
        .expect("a valid node"),
    )
}

/// (tolerations as (key index or wildcard, effect index or any), cpu request in cores (0 =
/// none), asks for the extended resource, image index).
type PodShape = (Vec<(Option<usize>, Option<usize>)>, u32, bool, usize);

fn pod((tolerations, cpu, gpu, image): &PodShape) -> PodInfo {
    let tols: Vec<Value> = common::tolerations(tolerations);
    let mut requests = json!({"memory": "1Gi"});
    if *cpu > 0 {
        requests["cpu"] = json!(cpu.to_string());
    }
    if *gpu {
        requests["example.com/gpu"] = json!("1");
    }
    let image = IMAGES[*image].trim_end_matches(":latest");
    let p: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p", "namespace": "default", "uid": "u"},
        "spec": {"schedulerName": "default-scheduler",
                 "tolerations": tols,
                 "containers": [{"name": "c", "image": image,
                    "resources": {"requests": requests}}]}
    }))
    .expect("a valid pod");
    PodInfo::new(p)
}

fn node_shape() -> impl Strategy<Value = NodeShape> {
    (
        proptest::bool::weighted(0.1),
        proptest::collection::vec((0usize..3, 0usize..3), 0..3).prop_map(|v| {
            // Most nodes are untainted.
            if v.len() == 2 {
                Vec::new()
            } else {
                v
            }
        }),
        proptest::bool::weighted(0.05),
        proptest::bool::weighted(0.1),
        proptest::bool::weighted(0.2),
        proptest::collection::vec((0usize..3, 1u64..2000), 0..2).prop_map(|v| {
            if v.len() == 1 && v[0].1 > 1000 {
                Vec::new()
            } else {
                v
            }
        }),
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
        0u32..4,
        proptest::bool::weighted(0.2),
        0usize..3,
    )
}

fn snapshot(nodes: &[NodeShape]) -> Snapshot {
    Snapshot::build(
        nodes.iter().enumerate().map(|(i, s)| node(i, s)),
        Vec::new(),
        Arc::new(ClusterObjects::default()),
    )
}

/// The default profile, a snapshot of `nodes` and the pod after a successful PreFilter (`None`
/// when PreFilter rejects it): what every Filter-side property starts from.
fn prefiltered(
    nodes: &[NodeShape],
    pod_shape: &PodShape,
) -> Option<(Framework, Snapshot, PodInfo, CycleState)> {
    let fwk = build_framework(
        &Registry::in_tree(),
        &Default::default(),
        &Default::default(),
    )
    .expect("the default profile");
    let snapshot = snapshot(nodes);
    let pod = pod(pod_shape);
    let mut state = CycleState::default();
    let pre = fwk.run_pre_filter(&mut state, &pod, &snapshot);
    pre.status
        .is_success()
        .then_some((fwk, snapshot, pod, state))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn leading_passes_counts_only_nodes_every_filter_passes(
        nodes in proptest::collection::vec(node_shape(), 1..16),
        pod_shape in pod_shape(),
        limit in 0usize..20,
    ) {
        let Some((fwk, snapshot, pod, state)) = prefiltered(&nodes, &pod_shape) else {
            return Err(TestCaseError::reject("PreFilter rejects the pod"));
        };
        let active = fwk.active_filters(&state, &pod);
        for start in 0..snapshot.len() {
            let run = &snapshot.nodes[start..];
            let k = fwk.leading_passes(&active, &state, &pod, run, limit);
            prop_assert!(k <= limit.min(run.len()));
            for n in &run[..k] {
                let full = fwk.run_filter(&state, &pod, n);
                prop_assert!(full.is_success(), "node {} counted but {:?}", n.name(), full);
            }
        }
    }

    #[test]
    fn leading_rejections_are_what_filter_returns_on_each_node(
        nodes in proptest::collection::vec(node_shape(), 1..16),
        pod_shape in pod_shape(),
        limit in 0usize..20,
    ) {
        let Some((fwk, snapshot, pod, state)) = prefiltered(&nodes, &pod_shape) else {
            return Err(TestCaseError::reject("PreFilter rejects the pod"));
        };
        let active = fwk.active_filters(&state, &pod);
        for start in 0..snapshot.len() {
            let run = &snapshot.nodes[start..];
            let (k, shared) = fwk.leading_rejections(&active, &state, &pod, run, limit);
            prop_assert!(k <= limit.min(run.len()));
            prop_assert_eq!(k > 0, shared.is_some());
            for n in &run[..k] {
                let s = shared.expect("a status with the run");
                let full = fwk.run_filter(&state, &pod, n);
                prop_assert_eq!(&full, s, "node {}", n.name());
                let active_r = fwk.run_active_filters(&active, &state, &pod, n).into_status();
                prop_assert_eq!(&active_r, s, "node {}", n.name());
            }
        }
    }

    #[test]
    fn dry_run_filters_answer_as_the_full_list(
        nodes in proptest::collection::vec(node_shape(), 1..16),
        pod_shape in pod_shape(),
    ) {
        // The preemption dry run filters through the cycle's resolved plugins
        // (`PluginsRunner::dry_run_filters`), and its reprieve loop asks only pass or fail.
        let Some((fwk, snapshot, pod, state)) = prefiltered(&nodes, &pod_shape) else {
            return Err(TestCaseError::reject("PreFilter rejects the pod"));
        };
        let runner: &dyn PluginsRunner = &fwk;
        let filters = runner.dry_run_filters(&state, &pod);
        prop_assert!(filters.is_some());
        for n in &snapshot.nodes {
            let full = runner.run_filter_with_nominated_pods(&state, &pod, n, &snapshot, &NoNominatedPods);
            let using = runner.run_filter_with_nominated_pods_using(
                filters.as_ref(), &state, &pod, n, &snapshot, &NoNominatedPods);
            prop_assert_eq!(&using, &full, "node {}", n.name());
            let passes = runner.passes_filters_with_nominated_pods(
                filters.as_ref(), &state, &pod, n, &snapshot, &NoNominatedPods);
            prop_assert_eq!(passes, full.is_success(), "node {}", n.name());
        }
    }

    #[test]
    fn set_run_is_set_node_by_node(
        num_nodes in 0usize..12,
        runs in proptest::collection::vec((0usize..14, 0usize..6, 0usize..3), 0..6),
    ) {
        // The failed cycle records a run of rejected nodes with `NodeToStatus::set_run`, of
        // shared (static) statuses.
        static STATUSES: [Status; 3] = [
            Status::fixed(Code::Unschedulable, "Insufficient cpu", ""),
            Status::fixed(Code::UnschedulableAndUnresolvable, "Insufficient memory", ""),
            Status::fixed(Code::Unschedulable, "Too many pods", ""),
        ];
        let statuses = &STATUSES;
        let mut by_run = NodeToStatus::new(num_nodes);
        let mut by_node = NodeToStatus::new(num_nodes);
        for &(start, len, k) in &runs {
            by_run.set_run(start..start + len, &statuses[k]);
            for i in start..start + len {
                by_node.set(i, statuses[k].clone());
            }
            prop_assert_eq!(by_run.len(), by_node.len());
            prop_assert_eq!(
                by_run.iter().collect::<Vec<_>>(),
                by_node.iter().collect::<Vec<_>>()
            );
            for i in 0..num_nodes + 16 {
                prop_assert_eq!(by_run.get(i), by_node.get(i));
            }
        }
    }

    #[test]
    fn uniform_scores_are_the_scores_of_every_node(
        nodes in proptest::collection::vec(node_shape(), 1..16),
        pod_shape in pod_shape(),
    ) {
        let fwk = build_framework(&Registry::in_tree(), &Default::default(), &Default::default())
            .expect("the default profile");
        let snapshot = snapshot(&nodes);
        let pod = pod(&pod_shape);
        let refs: Vec<&NodeInfo> = snapshot.nodes.iter().collect();
        let mut state = CycleState::default();
        prop_assume!(fwk.run_pre_filter(&mut state, &pod, &snapshot).status.is_success());
        prop_assume!(fwk.run_pre_score(&mut state, &pod, &refs, &snapshot).is_success());
        let mut table = ScoreTable::default();
        prop_assert!(fwk.run_score(&state, &pod, &refs, &mut table).is_success());
        // The same table, plugin by plugin, every node scored and normalized.
        let mut totals = vec![0i64; refs.len()];
        let mut k = 0;
        for wp in &fwk.score {
            let p = &wp.plugin;
            if state.should_skip_score(p.name()) {
                continue;
            }
            let sp = p.as_score().expect("a score plugin");
            let mut raw = Vec::new();
            prop_assert!(sp.score_nodes(&state, &pod, &refs, &mut raw).is_ok());
            let mut normalized = raw.clone();
            if sp.has_normalize() {
                prop_assert!(sp.normalize(&state, &pod, &mut normalized).is_success());
            }
            // Told the union of the nodes' flags, the same answer.
            let flags = refs.iter().fold(NodeFlags::NONE, |a, n| a | n.flags());
            prop_assert_eq!(sp.uniform_score_with_flags(&state, &pod, &refs, flags),
                sp.uniform_score(&state, &pod, &refs), "{}", p.name());
            if let Some((r, n)) = sp.uniform_score(&state, &pod, &refs) {
                prop_assert!(raw.iter().all(|&x| x == r), "{}: raw {:?}, uniform {}", p.name(), raw, r);
                prop_assert!(normalized.iter().all(|&x| x == n),
                    "{}: normalized {:?}, uniform {}", p.name(), normalized, n);
            }
            let got = &table.plugins[k];
            prop_assert_eq!(got.plugin, p.name());
            prop_assert_eq!(&got.raw()[..], &raw[..], "{}", p.name());
            prop_assert_eq!(&got.normalized()[..], &normalized[..], "{}", p.name());
            for (i, t) in totals.iter_mut().enumerate() {
                prop_assert_eq!(got.weighted(i), normalized[i] * wp.weight);
                *t += normalized[i] * wp.weight;
            }
            k += 1;
        }
        prop_assert_eq!(k, table.plugins.len());
        prop_assert_eq!(&table.totals, &totals);
    }
}

/// The default profile's Score plugins.
const SCORE_PLUGINS: [&str; 9] = [
    "TaintToleration",
    "NodeAffinity",
    "NodeResourcesFit",
    "VolumeBinding",
    "PodTopologySpread",
    "InterPodAffinity",
    "DynamicResources",
    "NodeResourcesBalancedAllocation",
    "ImageLocality",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// `run_score_in` adds the uniform plugins' weighted scores into the totals in one pass
    /// at the end, and skips reading the scored nodes'
    /// flags when no node of the snapshot has one: the table (totals, raw and normalized
    /// scores) must be the one built plugin by plugin, every node scored, whatever the order
    /// and weights of the plugins and the sampled nodes.
    #[test]
    fn totals_with_uniform_scores_folded_are_the_plugin_by_plugin_sums(
        nodes in proptest::collection::vec(node_shape(), 1..16),
        pod_shape in pod_shape(),
        order in Just(SCORE_PLUGINS.to_vec()).prop_shuffle(),
        weights in proptest::collection::vec(1i32..100, SCORE_PLUGINS.len()),
        keep in proptest::collection::vec(proptest::bool::weighted(0.8), 16),
        rotate in 0usize..16,
    ) {
        let enabled: Vec<Value> = order
            .iter()
            .zip(&weights)
            .map(|(name, w)| json!({"name": name, "weight": w}))
            .collect();
        let profile: ksim_api::config::Profile = serde_json::from_value(json!({
            "plugins": {"score": {"disabled": [{"name": "*"}], "enabled": enabled}}
        }))
        .expect("a profile");
        let fwk = build_framework(&Registry::in_tree(), &Default::default(), &profile)
            .expect("the profile");
        let snapshot = snapshot(&nodes);
        let pod = pod(&pod_shape);
        let n = snapshot.len();
        let feasible: Vec<usize> =
            (0..n).map(|k| (k + rotate) % n).filter(|&i| keep[i]).collect();
        let refs: Vec<&NodeInfo> = feasible.iter().map(|&i| &snapshot.nodes[i]).collect();
        let mut state = CycleState::default();
        prop_assume!(fwk.run_pre_filter(&mut state, &pod, &snapshot).status.is_success());
        prop_assume!(fwk.run_pre_score(&mut state, &pod, &refs, &snapshot).is_success());
        let mut by_columns = ScoreTable::default();
        let mut by_nodes = ScoreTable::default();
        let sc = fwk.run_score_in(&state, &pod, &refs, Some((&snapshot, &feasible)), &mut by_columns);
        let sn = fwk.run_score(&state, &pod, &refs, &mut by_nodes);
        prop_assert!(sc.is_success(), "{:?}", sc);
        prop_assert!(sn.is_success(), "{:?}", sn);
        // The straightforward table: every plugin scores and normalizes every node, and its
        // weighted scores are added into the totals node by node.
        let mut totals = vec![0i64; refs.len()];
        let mut k = 0;
        for wp in &fwk.score {
            let p = &wp.plugin;
            if state.should_skip_score(p.name()) {
                continue;
            }
            let sp = p.as_score().expect("a score plugin");
            let mut raw = Vec::new();
            prop_assert!(sp.score_nodes(&state, &pod, &refs, &mut raw).is_ok());
            let mut normalized = raw.clone();
            if sp.has_normalize() {
                prop_assert!(sp.normalize(&state, &pod, &mut normalized).is_success());
            }
            for table in [&by_columns, &by_nodes] {
                let got = &table.plugins[k];
                prop_assert_eq!(got.plugin, p.name());
                prop_assert_eq!(&got.raw()[..], &raw[..], "{}", p.name());
                prop_assert_eq!(&got.normalized()[..], &normalized[..], "{}", p.name());
            }
            for (t, v) in totals.iter_mut().zip(&normalized) {
                *t += v * wp.weight;
            }
            k += 1;
        }
        prop_assert_eq!(k, by_columns.plugins.len());
        prop_assert_eq!(&by_columns.totals, &totals);
        prop_assert_eq!(&by_nodes.totals, &totals);
    }
}

/// A cluster of plain nodes is filtered in runs: the batch takes every node it may, up to the
/// limit, and stops at a cordoned or tainted node (whose promising plugins must run).
#[test]
fn plain_nodes_are_taken_in_one_run() {
    let fwk = build_framework(
        &Registry::in_tree(),
        &Default::default(),
        &Default::default(),
    )
    .expect("the default profile");
    let plain: NodeShape = (false, vec![], false, false, false, vec![]);
    let mut shapes = vec![plain.clone(); 10];
    shapes[7] = (false, vec![(0, 2)], false, false, false, vec![]);
    let snapshot = snapshot(&shapes);
    let pod = pod(&(vec![], 1, false, 0));
    let mut state = CycleState::default();
    assert!(fwk
        .run_pre_filter(&mut state, &pod, &snapshot)
        .status
        .is_success());
    let active = fwk.active_filters(&state, &pod);
    assert_eq!(
        fwk.leading_passes(&active, &state, &pod, &snapshot.nodes, 5),
        5
    );
    assert_eq!(
        fwk.leading_passes(&active, &state, &pod, &snapshot.nodes, 100),
        7
    );
    // Untainted nodes without images: TaintToleration and ImageLocality fill, not score.
    let refs: Vec<&NodeInfo> = snapshot.nodes[..7].iter().collect();
    assert!(fwk
        .run_pre_score(&mut state, &pod, &refs, &snapshot)
        .is_success());
    for name in ["TaintToleration", "ImageLocality"] {
        let sp = fwk.plugin(name).and_then(|p| p.as_score()).expect(name);
        assert!(sp.uniform_score(&state, &pod, &refs).is_some(), "{name}");
    }
}
