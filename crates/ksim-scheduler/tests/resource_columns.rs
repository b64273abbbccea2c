//! The snapshot's resource columns (`Snapshot::resource_columns`) and the batch paths that read
//! them:
//! - after any sequence of snapshot operations (pods added, removed and restarted, nodes
//!   added, removed, updated, the cycle's reorder), the columns are exactly those built from
//!   the nodes;
//! - `Framework::leading_passes_in` (Filter runs from the columns) counts what
//!   `Framework::leading_passes` counts on the nodes;
//! - `Framework::run_score_in` (scores from the columns) builds the table `run_score` builds
//!   from the nodes, for feasible lists in sampled order.

use std::sync::Arc;

use ksim_api::{Node, Pod};
use ksim_scheduler::framework::{build_framework, CycleState, Registry, ScoreTable};
use ksim_scheduler::node_columns::NodeColumns;
use ksim_scheduler::node_info::{ClusterObjects, NodeFlags, NodeInfo, Snapshot};
use ksim_scheduler::pod_info::PodInfo;
use proptest::prelude::*;
use serde_json::json;

/// (cpu cores (0: none listed), memory GiB (0: none listed), pods allowed, cordoned, tainted,
/// zone).
type NodeShape = (u32, u32, u32, bool, bool, u8);

fn node(name: &str, &(cpu, mem, pods, cordoned, tainted, zone): &NodeShape) -> Arc<Node> {
    let mut alloc = json!({"pods": pods.to_string(), "ephemeral-storage": "100Gi"});
    if cpu > 0 {
        alloc["cpu"] = json!(cpu.to_string());
    }
    if mem > 0 {
        alloc["memory"] = json!(format!("{mem}Gi"));
    }
    let taints = if tainted {
        json!([{"key": "k", "value": "v", "effect": "NoSchedule"}])
    } else {
        json!([])
    };
    Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": name,
                         "labels": {"kubernetes.io/hostname": name,
                                    "topology.kubernetes.io/zone": format!("z{zone}")}},
            "spec": {"unschedulable": cordoned, "taints": taints},
            "status": {"allocatable": alloc}
        }))
        .expect("a valid node"),
    )
}

/// (milli-cpu (0: none), memory MiB (0: none), ephemeral storage GiB (0: none)).
type Requests = (u32, u32, u32);

fn pod(name: &str, uid: &str, node: &str, &(cpu, mem, eph): &Requests) -> PodInfo {
    let mut requests = json!({});
    if cpu > 0 {
        requests["cpu"] = json!(format!("{cpu}m"));
    }
    if mem > 0 {
        requests["memory"] = json!(format!("{mem}Mi"));
    }
    if eph > 0 {
        requests["ephemeral-storage"] = json!(format!("{eph}Gi"));
    }
    let p: Pod = serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default", "uid": uid},
        "spec": {"schedulerName": "default-scheduler", "nodeName": node,
                 "containers": [{"name": "c", "image": "nginx",
                    "resources": {"requests": requests}}]}
    }))
    .expect("a valid pod");
    PodInfo::new(p)
}

fn node_shape() -> impl Strategy<Value = NodeShape> {
    (
        prop_oneof![Just(0u32), 1u32..64],
        prop_oneof![Just(0u32), 1u32..256],
        0u32..6,
        proptest::bool::weighted(0.1),
        proptest::bool::weighted(0.1),
        0u8..3,
    )
}

fn requests() -> impl Strategy<Value = Requests> {
    (
        prop_oneof![Just(0u32), 1u32..16_000],
        prop_oneof![Just(0u32), 1u32..65_536],
        prop_oneof![3 => Just(0u32), 1 => 1u32..50],
    )
}

#[derive(Debug, Clone)]
enum Op {
    /// A pod on node `node % n`, UID from a small set (repeats happen).
    AddPod(usize, u8, Requests),
    /// The `k % count`-th bound pod removed.
    RemovePod(usize),
    /// The `k`-th bound pod's status changed, on its own node or (`other`) another's name.
    Restart(usize, bool),
    /// Node `node % n` replaced by a new object of that name.
    UpdateNode(usize, NodeShape),
    AddNode(NodeShape),
    RemoveNode(usize),
    /// The start of a cycle (reorders the nodes after membership changes).
    Cycle,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0usize..64, 0u8..16, requests()).prop_map(|(n, u, r)| Op::AddPod(n, u, r)),
        2 => (0usize..64).prop_map(Op::RemovePod),
        2 => (0usize..64, any::<bool>()).prop_map(|(k, o)| Op::Restart(k, o)),
        1 => (0usize..64, node_shape()).prop_map(|(n, s)| Op::UpdateNode(n, s)),
        1 => node_shape().prop_map(Op::AddNode),
        1 => (0usize..64).prop_map(Op::RemoveNode),
        1 => Just(Op::Cycle),
    ]
}

fn bound_pods(s: &Snapshot) -> Vec<Arc<PodInfo>> {
    s.nodes
        .iter()
        .flat_map(|n| n.pods.iter().cloned())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn columns_follow_the_nodes(
        shapes in proptest::collection::vec(node_shape(), 1..8),
        ops in proptest::collection::vec(op(), 1..40),
    ) {
        let mut next_node = shapes.len();
        let mut s = Snapshot::build(
            shapes.iter().enumerate().map(|(i, sh)| node(&format!("n{i}"), sh)),
            Vec::new(),
            Arc::new(ClusterObjects::default()),
        );
        prop_assert_eq!(s.resource_columns(), &NodeColumns::of(&s.nodes));
        for (k, op) in ops.iter().enumerate() {
            let n = s.nodes.len();
            match op {
                Op::AddPod(i, uid, r) if n > 0 => {
                    let name = s.nodes[i % n].name().to_string();
                    s.add_pod(Arc::new(pod(&format!("p{k}"), &format!("u{uid}"), &name, r)));
                }
                Op::RemovePod(j) => {
                    let pods = bound_pods(&s);
                    if !pods.is_empty() {
                        let p = &pods[j % pods.len()];
                        s.remove_pod(&p.pod.spec.node_name.clone(), p.uid());
                    }
                }
                Op::Restart(j, other) => {
                    let pods = bound_pods(&s);
                    if !pods.is_empty() {
                        let mut p = pods[j % pods.len()].clone();
                        let on = if *other && n > 1 {
                            s.nodes[(j + 1) % n].name().to_string()
                        } else {
                            p.pod.spec.node_name.clone()
                        };
                        drop(pods);
                        s.update_pod_status(&on, &mut p, |st| st.phase = "Running".into());
                    }
                }
                Op::UpdateNode(i, sh) if n > 0 => {
                    let name = s.nodes[i % n].name().to_string();
                    s.update_node(node(&name, sh));
                }
                Op::AddNode(sh) => {
                    s.add_node(NodeInfo::new(node(&format!("n{next_node}"), sh)));
                    next_node += 1;
                }
                Op::RemoveNode(i) if n > 0 => {
                    let name = s.nodes[i % n].name().to_string();
                    s.remove_node(&name);
                }
                Op::Cycle => s.update_for_cycle(),
                _ => {}
            }
            prop_assert_eq!(s.resource_columns(), &NodeColumns::of(&s.nodes), "after {:?}", op);
            // The union kept from per-flag counts is the union of the nodes' flags.
            let union = s.nodes.iter().fold(NodeFlags::NONE, |a, n| a | n.flags());
            prop_assert_eq!(s.resource_columns().flags_union(), union, "after {:?}", op);
            prop_assert!(s.resource_columns().matches_all(&s.nodes));
        }
    }

    #[test]
    fn filter_runs_and_scores_from_columns_are_the_nodes(
        shapes in proptest::collection::vec(node_shape(), 1..14),
        bound in proptest::collection::vec((0usize..14, requests()), 0..30),
        incoming in requests(),
        limit in 0usize..20,
        rotate in 0usize..14,
        skip in proptest::collection::vec(any::<bool>(), 14),
    ) {
        let fwk = build_framework(&Registry::in_tree(), &Default::default(), &Default::default())
            .expect("the default profile");
        let names: Vec<String> = (0..shapes.len()).map(|i| format!("n{i}")).collect();
        let mut snapshot = Snapshot::build(
            shapes.iter().zip(&names).map(|(sh, name)| node(name, sh)),
            Vec::new(),
            Arc::new(ClusterObjects::default()),
        );
        for (k, (i, r)) in bound.iter().enumerate() {
            let name = &names[i % names.len()];
            snapshot.add_pod(Arc::new(pod(&format!("b{k}"), &format!("ub{k}"), name, r)));
        }
        let pod = pod("p", "u", "", &incoming);
        let mut state = CycleState::default();
        prop_assume!(fwk.run_pre_filter(&mut state, &pod, &snapshot).status.is_success());
        let active = fwk.active_filters(&state, &pod);
        let n = snapshot.len();
        for from in 0..n {
            for to in from..=n {
                let want = fwk.leading_passes(&active, &state, &pod, &snapshot.nodes[from..to], limit);
                let got = fwk.leading_passes_in(&active, &state, &pod, &snapshot, from, to, limit);
                prop_assert_eq!(got, want, "nodes {}..{}", from, to);
            }
        }
        // A sampled cycle's feasible list: from a rotating start, some nodes left out.
        let feasible: Vec<usize> = (0..n).map(|k| (k + rotate) % n).filter(|&i| !skip[i]).collect();
        let refs: Vec<&NodeInfo> = feasible.iter().map(|&i| &snapshot.nodes[i]).collect();
        prop_assume!(fwk.run_pre_score(&mut state, &pod, &refs, &snapshot).is_success());
        let mut want = ScoreTable::default();
        let mut got = ScoreTable::default();
        let ws = fwk.run_score(&state, &pod, &refs, &mut want);
        let gs = fwk.run_score_in(&state, &pod, &refs, Some((&snapshot, &feasible)), &mut got);
        prop_assert_eq!(&gs, &ws);
        prop_assert_eq!(&got.totals, &want.totals);
        prop_assert_eq!(got.plugins.len(), want.plugins.len());
        for (g, w) in got.plugins.iter().zip(&want.plugins) {
            prop_assert_eq!(g.plugin, w.plugin);
            prop_assert_eq!(g.raw(), w.raw(), "{}", g.plugin);
            prop_assert_eq!(g.normalized(), w.normalized(), "{}", g.plugin);
        }
    }
}
