//! The preemption dry run tells some nodes by arithmetic on their totals
//! (`DefaultPreemption`'s `select_victims_or_reject`): a node where NodeResourcesFit rejects
//! the pod even with every lower-priority pod gone is rejected without a copy, its status
//! built only if no candidate is found; and when every active Filter plugin judges totals or
//! ignores pods, the victims are chosen on the totals, no pod moved. This test runs the dry
//! run both ways over random clusters and requires the same candidates (nodes, victims by
//! address and in order, PDB violations), the same node statuses and the same aggregated
//! error: the straightforward way is the same plugin behind an `Interface` that only has
//! `select_victims_on_node` (the trait's default `select_victims_or_reject` asks it for every
//! node).
//!
//! The clusters have random capacities (cpu, pod count, an extended resource), pods of random
//! priority, requests, start times and labels, some with host ports or required
//! anti-affinity (PreFilter extensions then run), some sharing a UID with another pod of the
//! node or listed twice; random PDBs and nominated pods; random filter lists (NodeResourcesFit
//! disabled or ignoring the extended resource, NodePorts or InterPodAffinity off, a plugin
//! that fails some nodes with an error placed before NodeResourcesFit); and the dry run is
//! asked from a random offset for a random number of candidates over every node.

mod common;

use std::collections::HashMap;
use std::sync::Arc;

use ksim_api::config::{KubeSchedulerConfiguration, Profile};
use ksim_api::{Node, Pod, PodDisruptionBudget};
use ksim_scheduler::framework::{
    build_framework, CycleState, FactoryArgs, FilterPlugin, FilterResult, NodeToStatus,
    NominatedPods, Plugin, PluginRef, Registry, Status,
};
use ksim_scheduler::node_info::{ClusterObjects, NodeInfo, Snapshot};
use ksim_scheduler::plugins::default_preemption::DefaultPreemption;
use ksim_scheduler::pod_info::PodInfo;
use ksim_scheduler::preemption::{
    select_candidate, Candidate, CompiledPdb, DryRunContext, Evaluator, Interface,
};
use proptest::prelude::*;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

const GPU: &str = "example.com/gpu";

/// A Filter plugin that fails nodes labelled `flaky=yes` with an error (not a rejection).
struct Flaky;

impl Plugin for Flaky {
    fn name(&self) -> &'static str {
        "Flaky"
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
}

impl FilterPlugin for Flaky {
    fn filter(&self, _: &CycleState, _: &PodInfo, node: &NodeInfo) -> FilterResult {
        if node.labels().get("flaky").is_some_and(|v| v == "yes") {
            Status::error(format!("flaky node {}", node.name())).into()
        } else {
            FilterResult::PASS
        }
    }
}

fn flaky(_: &FactoryArgs<'_>) -> Result<PluginRef, String> {
    Ok(Arc::new(Flaky))
}

/// The plugin's policy with only `select_victims_on_node`: every node the long way.
struct Plain(DefaultPreemption);

impl Interface for Plain {
    fn get_offset_and_num_candidates(&self, n: usize, rng: &mut ChaCha8Rng) -> (usize, usize) {
        self.0.get_offset_and_num_candidates(n, rng)
    }
    fn pod_eligible_to_preempt_others(
        &self,
        pod: &PodInfo,
        snapshot: &Snapshot,
        status: Option<&Status>,
    ) -> Result<(), String> {
        self.0.pod_eligible_to_preempt_others(pod, snapshot, status)
    }
    fn select_victims_on_node(
        &self,
        ctx: &DryRunContext<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
        scratch: &mut Option<NodeInfo>,
        pdbs: &[CompiledPdb],
    ) -> (Vec<Arc<PodInfo>>, i64, Status) {
        self.0
            .select_victims_on_node(ctx, state, pod, node, scratch, pdbs)
    }
}

struct Noms(HashMap<String, Vec<Arc<PodInfo>>>);

impl NominatedPods for Noms {
    fn nominated_pods_for_node(&self, node: &str) -> &[Arc<PodInfo>] {
        self.0.get(node).map_or(&[], Vec::as_slice)
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// (cpu cores, max pods, gpus, tainted, flaky).
type NodeShape = (u32, u32, u8, bool, bool);

/// (priority, cpu millis, gpus, host port, anti-affinity, UID of an earlier pod of the node,
/// listed twice, label index, start second (None: not started)).
type PodShape = (
    i32,
    u32,
    u8,
    Option<u16>,
    bool,
    Option<usize>,
    bool,
    usize,
    Option<u8>,
);

/// (priority, cpu millis, gpus, host port, anti-affinity, tolerates the taint).
type PreemptorShape = (i32, u32, u8, Option<u16>, bool, bool);

/// (NodeResourcesFit on, it ignores the gpu, NodePorts on, InterPodAffinity on, Flaky on).
type Config = (bool, bool, bool, bool, bool);

fn node(i: usize, &(cpu, pods, gpus, tainted, flaky): &NodeShape) -> Arc<Node> {
    let taints: Vec<Value> = if tainted {
        vec![json!({"key": "k", "value": "v", "effect": "NoSchedule"})]
    } else {
        vec![]
    };
    let mut alloc = json!({"cpu": cpu.to_string(), "memory": "32Gi", "pods": pods.to_string()});
    if gpus > 0 {
        alloc[GPU] = json!(gpus.to_string());
    }
    let flaky = if flaky { "yes" } else { "no" };
    Arc::new(
        serde_json::from_value(json!({
            "metadata": {"name": format!("node-{i}"),
                         "labels": {"kubernetes.io/hostname": format!("node-{i}"), "flaky": flaky}},
            "spec": {"taints": taints},
            "status": {"allocatable": alloc}
        }))
        .expect("a valid node"),
    )
}

const APPS: [&str; 3] = ["a", "b", "c"];

#[allow(clippy::too_many_arguments)]
fn pod_json(
    name: &str,
    uid: &str,
    node: Option<&str>,
    prio: i32,
    cpu: u32,
    gpus: u8,
    port: Option<u16>,
    anti: bool,
    app: usize,
    start: Option<u8>,
) -> Pod {
    let mut requests = json!({"cpu": format!("{cpu}m"), "memory": "1Gi"});
    if gpus > 0 {
        requests[GPU] = json!(gpus.to_string());
    }
    let mut v = json!({
        "metadata": {"name": name, "namespace": "default", "uid": uid,
                     "labels": {"app": APPS[app % APPS.len()]}},
        "spec": {"priority": prio,
                 "containers": [{"name": "c", "resources": {"requests": requests}}]},
        "status": {}
    });
    if let Some(n) = node {
        v["spec"]["nodeName"] = json!(n);
    }
    if let Some(s) = start {
        v["status"]["startTime"] = json!(format!("2024-01-01T00:00:{:02}Z", s % 60));
    }
    common::with_terms_and_port(&mut v, false, anti, port);
    serde_json::from_value(v).expect("a valid pod")
}

fn profile(&(fit, ignore_gpu, ports, ipa, flaky): &Config) -> Profile {
    let mut filters: Vec<&str> = vec!["NodeUnschedulable", "NodeName", "TaintToleration"];
    if flaky {
        filters.push("Flaky");
    }
    filters.push("NodeAffinity");
    if ports {
        filters.push("NodePorts");
    }
    if fit {
        filters.push("NodeResourcesFit");
    }
    if ipa {
        filters.push("InterPodAffinity");
    }
    let enabled: Vec<Value> = filters.iter().map(|n| json!({"name": n})).collect();
    let mut p = json!({
        "plugins": {"filter": {"disabled": [{"name": "*"}], "enabled": enabled}},
    });
    if ignore_gpu {
        p["pluginConfig"] = json!([{"name": "NodeResourcesFit",
                                    "args": {"ignoredResources": [GPU]}}]);
    }
    serde_json::from_value(p).expect("a valid profile")
}

fn node_shape() -> impl Strategy<Value = NodeShape> {
    (
        1u32..6,
        1u32..7,
        0u8..3,
        proptest::bool::weighted(0.15),
        proptest::bool::weighted(0.15),
    )
}

fn pod_shape() -> impl Strategy<Value = PodShape> {
    (
        0i32..5,
        100u32..2500,
        proptest::option::weighted(0.2, 1u8..2).prop_map(|g| g.unwrap_or(0)),
        proptest::option::weighted(0.15, 8000u16..8002),
        proptest::bool::weighted(0.1),
        proptest::option::weighted(0.2, 0usize..6),
        proptest::bool::weighted(0.05),
        0usize..3,
        proptest::option::weighted(0.8, 0u8..4),
    )
}

fn preemptor_shape() -> impl Strategy<Value = PreemptorShape> {
    (
        1i32..6,
        200u32..5000,
        proptest::option::weighted(0.2, 1u8..3).prop_map(|g| g.unwrap_or(0)),
        proptest::option::weighted(0.15, 8000u16..8002),
        proptest::bool::weighted(0.1),
        proptest::bool::weighted(0.3),
    )
}

fn config() -> impl Strategy<Value = Config> {
    (
        proptest::bool::weighted(0.8),
        proptest::bool::weighted(0.3),
        proptest::bool::weighted(0.3),
        proptest::bool::weighted(0.3),
        proptest::bool::weighted(0.25),
    )
}

/// What the dry run returned, pods by address and statuses by their full text.
type Outcome = (
    Vec<(usize, String, Vec<*const PodInfo>, i64)>,
    Vec<(usize, String)>,
    Option<String>,
);

/// A candidate, its victims by address.
type Picked = (usize, String, Vec<*const PodInfo>, i64);

fn picked(c: Candidate) -> Picked {
    (
        c.node,
        c.name,
        c.victims.iter().map(Arc::as_ptr).collect(),
        c.num_pdb_violations,
    )
}

fn outcome((candidates, statuses, err): (Vec<Candidate>, NodeToStatus, Option<String>)) -> Outcome {
    (
        candidates.into_iter().map(picked).collect(),
        statuses
            .iter()
            .map(|(i, s)| (i, format!("{s:?}")))
            .collect(),
        err,
    )
}

/// The dry run over every node of the cluster, fast and straightforward; and the candidate
/// kept by the dry run that keeps only the best (`dry_run_best`), with its statuses and
/// error, against `select_candidate` of the straightforward list. `None` when PreFilter
/// rejects the pod.
#[allow(clippy::too_many_arguments)]
fn run_both(
    nodes: &[(NodeShape, Vec<PodShape>)],
    preemptor: PreemptorShape,
    cfg: &Config,
    pdbs: &[(usize, i32)],
    nominated: &[(usize, i32, u32)],
    offset: usize,
    num_candidates: usize,
) -> Option<(Outcome, Outcome, BestPair)> {
    let mut registry = Registry::in_tree();
    registry.register("Flaky", flaky);
    let fwk = build_framework(
        &registry,
        &KubeSchedulerConfiguration::default(),
        &profile(cfg),
    )
    .expect("a valid profile");
    let mut pods: Vec<Arc<PodInfo>> = Vec::new();
    for (i, (_, shapes)) in nodes.iter().enumerate() {
        let on = format!("node-{i}");
        let mut uids: Vec<String> = Vec::new();
        for (k, &(prio, cpu, gpus, port, anti, same_uid, twice, app, start)) in
            shapes.iter().enumerate()
        {
            let uid = match same_uid.and_then(|j| uids.get(j)) {
                Some(u) => u.clone(),
                None => format!("u{i}-{k}"),
            };
            uids.push(uid.clone());
            let p = PodInfo::arc(pod_json(
                &format!("p{i}-{k}"),
                &uid,
                Some(&on),
                prio,
                cpu,
                gpus,
                port,
                anti,
                app,
                start,
            ));
            if twice {
                pods.push(p.clone());
            }
            pods.push(p);
        }
    }
    let pdbs: Vec<PodDisruptionBudget> = pdbs
        .iter()
        .enumerate()
        .map(|(k, &(app, allowed))| {
            serde_json::from_value(json!({
                "metadata": {"name": format!("pdb-{k}"), "namespace": "default"},
                "spec": {"selector": {"matchLabels": {"app": APPS[app % APPS.len()]}}},
                "status": {"disruptionsAllowed": allowed}
            }))
            .expect("a valid PDB")
        })
        .collect();
    let objects = ClusterObjects {
        pdbs,
        ..Default::default()
    };
    let snapshot = Snapshot::build(
        nodes.iter().enumerate().map(|(i, (s, _))| node(i, s)),
        pods,
        Arc::new(objects),
    );
    let (prio, cpu, gpus, port, anti, tolerates) = preemptor;
    let mut incoming = pod_json(
        "incoming", "u-in", None, prio, cpu, gpus, port, anti, 0, None,
    );
    if tolerates {
        incoming.spec.tolerations =
            serde_json::from_value(json!([{"operator": "Exists"}])).expect("tolerations");
    }
    let pod = PodInfo::new(incoming);
    let mut noms: HashMap<String, Vec<Arc<PodInfo>>> = HashMap::new();
    for (k, &(n, prio, cpu)) in nominated.iter().enumerate() {
        if n < nodes.len() {
            let p = pod_json(
                &format!("nom-{k}"),
                &format!("un-{k}"),
                None,
                prio,
                cpu,
                0,
                None,
                false,
                0,
                None,
            );
            noms.entry(format!("node-{n}"))
                .or_default()
                .push(PodInfo::arc(p));
        }
    }
    let noms = Noms(noms);
    let mut state = CycleState::new();
    let pre = fwk.run_pre_filter(&mut state, &pod, &snapshot);
    if !pre.status.is_success() {
        return None;
    }
    let ctx = DryRunContext {
        framework: &fwk,
        snapshot: &snapshot,
        nominated: &noms,
        extenders: &[],
        pre_filter_extensions: true,
        filters: None,
    };
    let potential: Vec<usize> = (0..snapshot.len()).collect();
    let compiled = CompiledPdb::compile_all(&snapshot.objects.pdbs);
    let offset = offset % potential.len();
    let plugin = DefaultPreemption::with_args(Default::default()).expect("default args");
    let fast = Evaluator {
        plugin_name: "DefaultPreemption",
        interface: &plugin,
    };
    let got = fast.dry_run_preemption(
        &ctx,
        &state,
        &pod,
        &potential,
        &compiled,
        offset,
        num_candidates,
    );
    let plain = Plain(DefaultPreemption::with_args(Default::default()).expect("default args"));
    let slow = Evaluator {
        plugin_name: "DefaultPreemption",
        interface: &plain,
    };
    let want = slow.dry_run_preemption(
        &ctx,
        &state,
        &pod,
        &potential,
        &compiled,
        offset,
        num_candidates,
    );
    let (best, best_statuses, best_err) = fast.dry_run_best(
        &ctx,
        &state,
        &pod,
        &potential,
        &compiled,
        offset,
        num_candidates,
    );
    let selected = select_candidate(&want.0).cloned().map(picked);
    let best_pair = (
        (
            best.map(picked),
            outcome((Vec::new(), best_statuses, best_err)),
        ),
        (
            selected,
            outcome((Vec::new(), want.1.clone(), want.2.clone())),
        ),
    );
    Some((outcome(got), outcome(want), best_pair))
}

/// The best candidate with the dry run's statuses and error: kept by `dry_run_best`, and
/// picked by `select_candidate` from the full list.
type BestPair = ((Option<Picked>, Outcome), (Option<Picked>, Outcome));

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    #[test]
    fn dry_run_by_totals_is_the_dry_run(
        nodes in proptest::collection::vec(
            (node_shape(), proptest::collection::vec(pod_shape(), 0..6)), 1..9),
        preemptor in preemptor_shape(),
        cfg in config(),
        pdbs in proptest::collection::vec((0usize..3, 0i32..2), 0..3),
        nominated in proptest::collection::vec((0usize..9, 0i32..6, 100u32..3000), 0..4),
        offset in 0usize..9,
        num_candidates in 1usize..10,
    ) {
        let Some((got, want, (best, selected))) =
            run_both(&nodes, preemptor, &cfg, &pdbs, &nominated, offset, num_candidates)
        else {
            return Err(TestCaseError::reject("PreFilter rejects the pod"));
        };
        prop_assert_eq!(got, want);
        prop_assert_eq!(best, selected);
    }
}

/// A plain pod on a 4-cpu node: (priority, cpu millis, same UID as pod `same`, start second).
fn plain(prio: i32, cpu: u32, same: Option<usize>, start: u8) -> PodShape {
    (prio, cpu, 0, None, false, same, false, 0, Some(start))
}

const FOUR_CPUS: NodeShape = (4, 10, 0, false, false);
const FIT_ONLY: Config = (true, false, false, false, false);

/// A pod that stays (higher priority) shares a UID with a lower-priority one: removing the
/// latter takes the former (it comes first), so the pod fits on the copy though the totals
/// of the lower-priority pods say it does not.
#[test]
fn a_pod_that_stays_sharing_a_uid_takes_the_long_way() {
    let nodes = vec![(
        FOUR_CPUS,
        vec![
            plain(5, 3000, None, 0),
            plain(0, 100, Some(0), 1),
            plain(0, 900, None, 2),
        ],
    )];
    let (got, want, (best, selected)) = run_both(
        &nodes,
        (3, 3500, 0, None, false, false),
        &FIT_ONLY,
        &[],
        &[],
        0,
        1,
    )
    .expect("PreFilter passes");
    assert_eq!(got, want);
    assert_eq!(best, selected);
    assert_eq!(want.0.len(), 1, "a candidate on the copy: {want:?}");
}

/// Two lower-priority pods share a UID: a reprieve that fails removes the first of them on the
/// node, which is the other one when that one was reprieved before.
#[test]
fn victims_sharing_a_uid_take_the_long_way() {
    let nodes = vec![(
        FOUR_CPUS,
        vec![
            plain(0, 2000, None, 1),
            plain(0, 100, Some(0), 0),
            plain(0, 500, None, 2),
        ],
    )];
    let (got, want, (best, selected)) = run_both(
        &nodes,
        (3, 2500, 0, None, false, false),
        &FIT_ONLY,
        &[],
        &[],
        0,
        1,
    )
    .expect("PreFilter passes");
    assert_eq!(got, want);
    assert_eq!(best, selected);
    // The 500m pod is a victim only because the 100m one left in the 2000m one's place.
    assert_eq!(want.0[0].2.len(), 2, "{want:?}");
}

/// A policy whose `select_victims_on_node` names a pod that is not on the node: the trait's
/// default `select_victims_or_reject` answers with an error status for that node instead of
/// a candidate (victims are the node's own pods).
struct Foreign(DefaultPreemption);

impl Interface for Foreign {
    fn get_offset_and_num_candidates(&self, n: usize, rng: &mut ChaCha8Rng) -> (usize, usize) {
        self.0.get_offset_and_num_candidates(n, rng)
    }
    fn pod_eligible_to_preempt_others(
        &self,
        pod: &PodInfo,
        snapshot: &Snapshot,
        status: Option<&Status>,
    ) -> Result<(), String> {
        self.0.pod_eligible_to_preempt_others(pod, snapshot, status)
    }
    fn select_victims_on_node(
        &self,
        _: &DryRunContext<'_>,
        _: &mut CycleState,
        _: &PodInfo,
        _: &NodeInfo,
        _: &mut Option<NodeInfo>,
        _: &[CompiledPdb],
    ) -> (Vec<Arc<PodInfo>>, i64, Status) {
        let stranger = pod_json(
            "stranger",
            "u-s",
            Some("node-0"),
            0,
            100,
            0,
            None,
            false,
            0,
            None,
        );
        (vec![PodInfo::arc(stranger)], 0, Status::success())
    }
}

#[test]
fn a_victim_that_is_not_on_the_node_is_an_error_for_the_node() {
    let fwk = build_framework(
        &Registry::in_tree(),
        &KubeSchedulerConfiguration::default(),
        &profile(&FIT_ONLY),
    )
    .expect("a valid profile");
    let on_node = PodInfo::arc(pod_json(
        "p0",
        "u0",
        Some("node-0"),
        0,
        3000,
        0,
        None,
        false,
        0,
        Some(1),
    ));
    let snapshot = Snapshot::build(
        [node(0, &FOUR_CPUS)],
        vec![on_node],
        Arc::new(ClusterObjects::default()),
    );
    let pod = PodInfo::new(pod_json(
        "incoming", "u-in", None, 3, 2000, 0, None, false, 0, None,
    ));
    let mut state = CycleState::new();
    assert!(fwk
        .run_pre_filter(&mut state, &pod, &snapshot)
        .status
        .is_success());
    let noms = Noms(HashMap::new());
    let ctx = DryRunContext {
        framework: &fwk,
        snapshot: &snapshot,
        nominated: &noms,
        extenders: &[],
        pre_filter_extensions: true,
        filters: None,
    };
    let foreign = Foreign(DefaultPreemption::with_args(Default::default()).expect("default args"));
    let evaluator = Evaluator {
        plugin_name: "DefaultPreemption",
        interface: &foreign,
    };
    let (candidates, statuses, err) =
        evaluator.dry_run_preemption(&ctx, &state, &pod, &[0], &[], 0, 1);
    assert!(candidates.is_empty(), "{candidates:?}");
    let err = err.expect("the node's error is aggregated");
    assert!(
        err.contains("victim stranger is not a pod of node node-0"),
        "{err}"
    );
    let status = statuses.get(0).expect("the node's status");
    assert!(
        status.message().contains("is not a pod of node"),
        "{status:?}"
    );
}
