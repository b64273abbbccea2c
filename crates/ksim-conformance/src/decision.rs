//! Per-decision cases: one cluster, one pod, upstream's verdict (filter per node, scores per
//! plugin, best nodes, FitError text, preemption).
//!
//! The runner does what the oracle did: a detailed pass over the framework (PreFilter, Filter
//! with nominated pods on every node, PreScore and Score on every feasible node) to compare the
//! per-node numbers, then the real `SchedulePod` (and PostFilter when nothing fits) to compare
//! the choice, the FitError and preemption.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use ksim_api::config::KubeSchedulerConfiguration;
use ksim_api::defaults::{default_node, default_pod};
use ksim_api::storage;
use ksim_api::{Namespace, Node, Pod, PodDisruptionBudget, Service, WorkloadSet};
use ksim_scheduler::framework::{
    build_framework, CycleState, NodeToStatus, NominatedPods, PostFilterContext, Registry,
    ScoreTable, Status,
};
use ksim_scheduler::node_info::{ClusterObjects, Snapshot};
use ksim_scheduler::pod_info::PodInfo;
use ksim_scheduler::schedule::{Algorithm, ScheduleError};
use rand::SeedableRng;
use serde::Deserialize;
use serde_json::Value;

use crate::CaseError;

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Input {
    nodes: Vec<Node>,
    existing_pods: Vec<Pod>,
    pod: Pod,
    #[serde(default, deserialize_with = "ksim_api::config::strict_option")]
    config: Option<KubeSchedulerConfiguration>,
    services: Vec<Service>,
    replica_sets: Vec<WorkloadSet>,
    stateful_sets: Vec<WorkloadSet>,
    pdbs: Vec<PodDisruptionBudget>,
    namespaces: Vec<Namespace>,
    persistent_volumes: Vec<storage::PersistentVolume>,
    persistent_volume_claims: Vec<storage::PersistentVolumeClaim>,
    storage_classes: Vec<storage::StorageClass>,
    csi_nodes: Vec<storage::CsiNode>,
    csi_drivers: Vec<storage::CsiDriver>,
    csi_storage_capacities: Vec<storage::CsiStorageCapacity>,
    volume_attachments: Vec<storage::VolumeAttachment>,
}

#[derive(Deserialize, Default, Debug)]
#[serde(rename_all = "camelCase", default)]
struct ExpectedStatus {
    code: String,
    plugin: String,
    reasons: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct Expected {
    filter: BTreeMap<String, ExpectedStatus>,
    feasible_nodes: Vec<String>,
    weights: BTreeMap<String, i64>,
    scores: BTreeMap<String, BTreeMap<String, i64>>,
    total_scores: BTreeMap<String, i64>,
    best_nodes: Vec<String>,
    fit_error: Option<String>,
    fit_error_filter_only: Option<String>,
    preemption: Option<ExpectedPreemption>,
    unschedulable_plugins: Option<Vec<String>>,
    pre_filter_result: Option<Vec<String>>,
    volume_bindings: Option<BTreeMap<String, ExpectedVolumeBinding>>,
}

/// What VolumeBinding's Reserve + PreBind would write if the pod went to a node.
#[derive(Deserialize, Default, Debug, PartialEq)]
#[serde(rename_all = "camelCase", default)]
struct ExpectedVolumeBinding {
    all_bound: bool,
    static_bindings: Vec<ExpectedStaticBinding>,
    provisioned_claims: Vec<String>,
}

#[derive(Deserialize, Default, Debug, PartialEq, PartialOrd, Eq, Ord, Clone)]
#[serde(default)]
struct ExpectedStaticBinding {
    pvc: String,
    pv: String,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct ExpectedPreemption {
    eligible: bool,
    ineligible_reason: String,
    status_code: String,
    status_message: String,
    candidates: Vec<ExpectedCandidate>,
    possible_nominated_nodes: Vec<String>,
    nominated_node: String,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct ExpectedCandidate {
    node: String,
    victims: Vec<String>,
    #[serde(rename = "numPDBViolations")]
    num_pdb_violations: i64,
}

/// Nominated pods read from `existingPods` without a node.
struct Nominations(BTreeMap<String, Vec<Arc<PodInfo>>>);

impl NominatedPods for Nominations {
    fn nominated_pods_for_node(&self, node: &str) -> &[Arc<PodInfo>] {
        self.0.get(node).map(Vec::as_slice).unwrap_or(&[])
    }
}

/// Runs one decision case; returns the differences found (empty = pass).
pub fn run(case: &Value) -> Result<Vec<String>, CaseError> {
    let input: Input = serde_json::from_value(case.get("input").cloned().unwrap_or(Value::Null))
        .map_err(|e| CaseError::Format(format!("input: {e}")))?;
    let expected: Expected =
        serde_json::from_value(case.get("expected").cloned().unwrap_or(Value::Null))
            .map_err(|e| CaseError::Format(format!("expected: {e}")))?;
    let family = case.get("family").and_then(Value::as_str).unwrap_or("");

    let cfg = input.config.clone().unwrap_or_default();
    let profile = cfg.profiles.first().cloned().unwrap_or_default();
    let fwk = build_framework(&Registry::in_tree(), &cfg, &profile)
        .map_err(|e| CaseError::Format(format!("config: {e}")))?;

    let mut nodes: Vec<Arc<Node>> = input
        .nodes
        .into_iter()
        .map(|mut n| {
            default_node(&mut n);
            Arc::new(n)
        })
        .collect();
    // The recording scheduler listed the case's nodes from the API server: by name.
    ksim_scheduler::node_info::initial_node_order(&mut nodes);
    let mut bound = Vec::new();
    let mut noms: BTreeMap<String, Vec<Arc<PodInfo>>> = BTreeMap::new();
    for mut p in input.existing_pods {
        default_pod(&mut p);
        if !p.spec.node_name.is_empty() {
            bound.push(PodInfo::arc(p));
        } else if !p.status.nominated_node_name.is_empty() {
            let n = p.status.nominated_node_name.clone();
            noms.entry(n).or_default().push(PodInfo::arc(p));
        }
    }
    let nominations = Nominations(noms);
    let objects = ClusterObjects {
        namespaces: input
            .namespaces
            .into_iter()
            .map(|n| (n.metadata.name.clone(), n))
            .collect(),
        services: input.services,
        replica_sets: input.replica_sets,
        stateful_sets: input.stateful_sets,
        pdbs: input.pdbs,
        storage: storage_objects(
            input.persistent_volumes,
            input.persistent_volume_claims,
            input.storage_classes,
            input.csi_nodes,
            input.csi_drivers,
            input.csi_storage_capacities,
            input.volume_attachments,
        ),
        ..Default::default()
    };
    let snapshot = Snapshot::build(nodes, bound, Arc::new(objects));
    let mut pod = input.pod;
    default_pod(&mut pod);
    let pod = PodInfo::new(pod);
    let _ = family;

    let mut diffs = Vec::new();
    let names: Vec<&str> = snapshot.nodes.iter().map(|n| n.name()).collect();

    // Weights after expansion.
    let got_weights: BTreeMap<String, i64> = fwk
        .score
        .iter()
        .map(|w| (w.plugin.name().to_string(), w.weight))
        .collect();
    if !expected.weights.is_empty() && got_weights != expected.weights {
        diffs.push(format!(
            "weights: expected {:?}, got {:?}",
            expected.weights, got_weights
        ));
    }

    // ---- detailed pass -------------------------------------------------------------------
    let mut state = CycleState::new();
    let pre = fwk.run_pre_filter(&mut state, &pod, &snapshot);
    let mut statuses: Vec<Status> = Vec::with_capacity(snapshot.len());
    if !pre.status.is_success() {
        for _ in 0..snapshot.len() {
            statuses.push(pre.status.clone());
        }
    } else {
        let allowed: Option<BTreeSet<&str>> = pre
            .result
            .as_ref()
            .and_then(|r| r.node_names.as_ref())
            .map(|n| n.iter().map(String::as_str).collect());
        if let (Some(exp), Some(a)) = (&expected.pre_filter_result, &allowed) {
            let got: Vec<&str> = a.iter().copied().collect();
            if got != exp.iter().map(String::as_str).collect::<Vec<_>>() {
                diffs.push(format!("preFilterResult: expected {exp:?}, got {got:?}"));
            }
        } else if expected.pre_filter_result.is_some() != allowed.is_some() {
            diffs.push(format!(
                "preFilterResult: expected {:?}, got {:?}",
                expected.pre_filter_result, allowed
            ));
        }
        for n in &snapshot.nodes {
            if let Some(a) = &allowed {
                if !a.contains(n.name()) {
                    statuses.push(Status::unresolvable(format!(
                        "node(s) didn't satisfy plugin(s) [{}]",
                        pre.unschedulable_plugins.join(" ")
                    )));
                    continue;
                }
            }
            statuses.push(fwk.run_filter_with_nominated_pods(
                &state,
                &pod,
                n,
                &snapshot,
                &nominations,
            ));
        }
    }
    for (i, name) in names.iter().enumerate() {
        let got = &statuses[i];
        let Some(exp) = expected.filter.get(*name) else {
            diffs.push(format!("node {name}: no expected filter result"));
            continue;
        };
        let got_reasons: Vec<String> = got.reasons.iter().map(|r| r.to_string()).collect();
        if got.code.as_str() != exp.code || got.plugin != exp.plugin || got_reasons != exp.reasons {
            diffs.push(format!(
                "filter node {name}: expected {} {} {:?}, got {} {} {:?}",
                exp.code, exp.plugin, exp.reasons, got.code, got.plugin, got_reasons
            ));
        }
    }
    let feasible: Vec<usize> = (0..snapshot.len())
        .filter(|&i| statuses[i].is_success())
        .collect();
    let mut got_feasible: Vec<&str> = feasible.iter().map(|&i| names[i]).collect();
    got_feasible.sort();
    let exp_feasible: Vec<&str> = {
        let mut v: Vec<&str> = expected.feasible_nodes.iter().map(String::as_str).collect();
        v.sort();
        v
    };
    if got_feasible != exp_feasible {
        diffs.push(format!(
            "feasibleNodes: expected {exp_feasible:?}, got {got_feasible:?}"
        ));
    }

    if !feasible.is_empty() && pre.status.is_success() {
        let fnodes: Vec<_> = feasible.iter().map(|&i| &snapshot.nodes[i]).collect();
        let s = fwk.run_pre_score(&mut state, &pod, &fnodes, &snapshot);
        if !s.is_success() {
            diffs.push(format!("PreScore failed: {s}"));
        } else {
            let mut table = ScoreTable::default();
            let s = fwk.run_score(&state, &pod, &fnodes, &mut table);
            if !s.is_success() {
                diffs.push(format!("Score failed: {s}"));
            }
            let mut got_plugins: BTreeSet<&str> = BTreeSet::new();
            for ps in &table.plugins {
                got_plugins.insert(ps.plugin);
                let Some(exp) = expected.scores.get(ps.plugin) else {
                    diffs.push(format!(
                        "plugin {} scored but upstream skipped it",
                        ps.plugin
                    ));
                    continue;
                };
                for (k, &i) in feasible.iter().enumerate() {
                    let e = exp.get(names[i]).copied();
                    if e != Some(ps.weighted(k)) {
                        diffs.push(format!(
                            "score {} node {}: expected {:?}, got {} (raw {}, normalized {})",
                            ps.plugin,
                            names[i],
                            e,
                            ps.weighted(k),
                            ps.raw[k],
                            ps.normalized()[k]
                        ));
                    }
                }
            }
            for p in expected.scores.keys() {
                if !got_plugins.contains(p.as_str()) {
                    diffs.push(format!("plugin {p}: upstream scored it, ksim skipped it"));
                }
            }
            // With no score plugin at all upstream records no totals.
            let compare_totals = !(expected.total_scores.is_empty() && table.plugins.is_empty());
            for (k, &i) in feasible.iter().enumerate().filter(|_| compare_totals) {
                let e = expected.total_scores.get(names[i]).copied();
                if e != Some(table.totals[k]) {
                    diffs.push(format!(
                        "totalScore node {}: expected {:?}, got {}",
                        names[i], e, table.totals[k]
                    ));
                }
            }
        }
    }

    if let Some(exp) = &expected.volume_bindings {
        compare_volume_bindings(exp, &feasible, &snapshot, &pod, &mut diffs);
    }

    // ---- the real decision ---------------------------------------------------------------
    let mut alg = Algorithm::new(rand_chacha::ChaCha8Rng::seed_from_u64(1), 0);
    let mut state = CycleState::new();
    match alg.schedule_pod(&fwk, &mut state, &pod, &snapshot, &nominations) {
        Ok(r) => {
            let chosen = names[r.suggested_host];
            if !expected.best_nodes.iter().any(|b| b == chosen) {
                diffs.push(format!(
                    "chosen node {chosen} is not among bestNodes {:?}",
                    expected.best_nodes
                ));
            }
            if expected.fit_error.is_some() {
                diffs.push(format!("upstream found no node, ksim chose {chosen}"));
            }
        }
        Err(ScheduleError::Fit(mut fit)) => {
            if !expected.best_nodes.is_empty() {
                diffs.push(format!(
                    "upstream chose among {:?}, ksim found no node: {}",
                    expected.best_nodes,
                    fit.message()
                ));
            }
            if let Some(exp) = &expected.unschedulable_plugins {
                let got: Vec<&str> = fit.diagnosis.unschedulable_plugins.clone();
                if got != exp.iter().map(String::as_str).collect::<Vec<_>>() {
                    diffs.push(format!(
                        "unschedulablePlugins: expected {exp:?}, got {got:?}"
                    ));
                }
            }
            if let Some(exp) = &expected.fit_error_filter_only {
                let got = fit.message();
                if &got != exp {
                    diffs.push(format!(
                        "fitErrorFilterOnly:\n  expected {exp}\n  got      {got}"
                    ));
                }
            }
            let mut nominated = String::new();
            let mut victims: Vec<String> = Vec::new();
            let mut pf_status = Status::success();
            let mut preemption_view: Option<PreemptionView> = None;
            if fwk.has_post_filter_plugins() {
                let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
                let statuses: &NodeToStatus = &fit.diagnosis.node_to_status;
                let mut ctx = PostFilterContext {
                    framework: &fwk,
                    snapshot: &snapshot,
                    nominated: &nominations,
                    rng: &mut rng,
                };
                let (res, s) = fwk.run_post_filter(&state, &pod, statuses, &mut ctx);
                if let Some(r) = res {
                    nominated = r.nominated_node.unwrap_or_default();
                    victims = r.victims.iter().map(|v| v.name().to_string()).collect();
                    victims.sort();
                }
                fit.diagnosis.post_filter_msg = s.message();
                pf_status = s;
                preemption_view =
                    preemption_view_of(&fwk, &profile, &state, &pod, statuses, &mut ctx);
            }
            if let Some(exp) = &expected.fit_error {
                let got = fit.message();
                if &got != exp {
                    diffs.push(format!("fitError:\n  expected {exp}\n  got      {got}"));
                }
            }
            if let Some(p) = &expected.preemption {
                if pf_status.code.as_str() != p.status_code {
                    diffs.push(format!(
                        "preemption status: expected {} {:?}, got {} {:?}",
                        p.status_code,
                        p.status_message,
                        pf_status.code,
                        pf_status.message()
                    ));
                }
                let ok_nom = if p.possible_nominated_nodes.is_empty() {
                    nominated.is_empty()
                } else {
                    p.possible_nominated_nodes.contains(&nominated)
                };
                if !ok_nom {
                    diffs.push(format!(
                        "nominated node: expected one of {:?} (recorded {:?}), got {:?}",
                        p.possible_nominated_nodes, p.nominated_node, nominated
                    ));
                } else if !nominated.is_empty() {
                    let exp_v = p
                        .candidates
                        .iter()
                        .find(|c| c.node == nominated)
                        .map(|c| {
                            let mut v = c.victims.clone();
                            v.sort();
                            v
                        })
                        .unwrap_or_default();
                    if exp_v != victims {
                        diffs.push(format!(
                            "victims on {nominated}: expected {exp_v:?}, got {victims:?}"
                        ));
                    }
                }
                if let Some(view) = &preemption_view {
                    compare_preemption_view(p, view, &mut diffs);
                }
            }
        }
        Err(e) => diffs.push(format!("SchedulePod error: {}", e.message())),
    }
    Ok(diffs)
}

/// What DefaultPreemption decides besides the PostFilter result: eligibility and every
/// candidate as `(node, sorted victims, numPDBViolations)`.
struct PreemptionView {
    eligibility: Result<(), String>,
    /// `None` when the candidate search itself failed with an error.
    candidates: Option<BTreeSet<(String, Vec<String>, i64)>>,
}

/// Runs DefaultPreemption's eligibility check and candidate search on their own, when the
/// profile has it as a PostFilter plugin.
fn preemption_view_of(
    fwk: &ksim_scheduler::Framework,
    profile: &ksim_api::config::Profile,
    state: &CycleState,
    pod: &PodInfo,
    statuses: &NodeToStatus,
    ctx: &mut PostFilterContext<'_>,
) -> Option<PreemptionView> {
    use ksim_scheduler::plugins::default_preemption::{self as dp, DefaultPreemption};
    if !fwk.post_filter.iter().any(|p| p.name() == dp::NAME) {
        return None;
    }
    let args = ksim_api::config::decode_args(dp::NAME, profile.args_of(dp::NAME)).ok()?;
    let pl = DefaultPreemption::with_args(args).ok()?;
    let eligibility = pl.eligibility(pod, ctx.snapshot, statuses);
    let candidates = pl.candidates(state, pod, statuses, ctx).ok().map(|c| {
        c.unwrap_or_default()
            .into_iter()
            .map(|c| {
                let mut v: Vec<String> = c.victims.iter().map(|p| p.name().to_string()).collect();
                v.sort();
                (c.name, v, c.num_pdb_violations)
            })
            .collect()
    });
    Some(PreemptionView {
        eligibility,
        candidates,
    })
}

fn compare_preemption_view(p: &ExpectedPreemption, view: &PreemptionView, diffs: &mut Vec<String>) {
    let got_eligible = view.eligibility.is_ok();
    let got_reason = view.eligibility.clone().err().unwrap_or_default();
    if got_eligible != p.eligible || got_reason != p.ineligible_reason {
        diffs.push(format!(
            "preemption eligibility: expected {} {:?}, got {} {:?}",
            p.eligible, p.ineligible_reason, got_eligible, got_reason
        ));
    }
    // The oracle lists candidates only when DefaultPreemption ran its search; an Error from an
    // earlier PostFilter plugin stops before it.
    if p.status_code == "Error" {
        return;
    }
    let exp: BTreeSet<(String, Vec<String>, i64)> = p
        .candidates
        .iter()
        .map(|c| {
            let mut v = c.victims.clone();
            v.sort();
            (c.node.clone(), v, c.num_pdb_violations)
        })
        .collect();
    match &view.candidates {
        Some(got) if *got == exp => {}
        got => diffs.push(format!(
            "preemption candidates: expected {exp:?}, got {got:?}"
        )),
    }
}

/// The storage objects of a case, with the API server's defaulting applied.
fn storage_objects(
    pvs: Vec<storage::PersistentVolume>,
    pvcs: Vec<storage::PersistentVolumeClaim>,
    classes: Vec<storage::StorageClass>,
    csi_nodes: Vec<storage::CsiNode>,
    csi_drivers: Vec<storage::CsiDriver>,
    capacities: Vec<storage::CsiStorageCapacity>,
    attachments: Vec<storage::VolumeAttachment>,
) -> ksim_scheduler::node_info::StorageObjects {
    let mut st = ksim_scheduler::node_info::StorageObjects::default();
    for mut pv in pvs {
        storage::default_persistent_volume(&mut pv);
        st.persistent_volumes
            .insert(pv.metadata.name.clone(), Arc::new(pv));
    }
    for mut pvc in pvcs {
        storage::default_persistent_volume_claim(&mut pvc);
        st.persistent_volume_claims.insert(pvc.key(), Arc::new(pvc));
    }
    for mut sc in classes {
        storage::default_storage_class(&mut sc);
        st.storage_classes
            .insert(sc.metadata.name.clone(), Arc::new(sc));
    }
    for n in csi_nodes {
        st.csi_nodes.insert(n.metadata.name.clone(), Arc::new(n));
    }
    for d in csi_drivers {
        st.csi_drivers.insert(d.metadata.name.clone(), Arc::new(d));
    }
    for mut c in capacities {
        storage::default_csi_storage_capacity(&mut c);
        st.csi_storage_capacities.insert(
            format!("{}/{}", c.metadata.namespace, c.metadata.name),
            Arc::new(c),
        );
    }
    for va in attachments {
        st.volume_attachments
            .insert(va.metadata.name.clone(), Arc::new(va));
    }
    st
}

/// For every feasible node, runs a fresh VolumeBinding's PreFilter, Filter, Reserve and
/// PreBind for that node (its own assume cache, so nothing leaks between nodes) and compares
/// the recorded decision with `volumeBindings`.
fn compare_volume_bindings(
    exp: &BTreeMap<String, ExpectedVolumeBinding>,
    feasible: &[usize],
    snapshot: &Snapshot,
    pod: &PodInfo,
    diffs: &mut Vec<String>,
) {
    let mut got_nodes: BTreeSet<&str> = BTreeSet::new();
    for &i in feasible {
        let node = &snapshot.nodes[i];
        got_nodes.insert(node.name());
        let got = ksim_scheduler::plugins::volume_binding::decide_for_node(pod, node, snapshot)
            .map(|d| {
                let mut static_bindings: Vec<ExpectedStaticBinding> = d
                    .static_bindings
                    .iter()
                    .map(|b| ExpectedStaticBinding {
                        pvc: b.pvc.clone(),
                        pv: b.pv.clone(),
                    })
                    .collect();
                static_bindings.sort();
                let mut provisioned_claims: Vec<String> =
                    d.provisioned_claims.iter().map(|p| p.pvc.clone()).collect();
                provisioned_claims.sort();
                ExpectedVolumeBinding {
                    all_bound: d.all_bound,
                    static_bindings,
                    provisioned_claims,
                }
            })
            .map_err(|s| s.to_string());
        let Some(e) = exp.get(node.name()) else {
            diffs.push(format!(
                "volumeBindings: node {} is feasible but has no expected entry",
                node.name()
            ));
            continue;
        };
        let mut e_sorted = ExpectedVolumeBinding {
            all_bound: e.all_bound,
            static_bindings: e.static_bindings.clone(),
            provisioned_claims: e.provisioned_claims.clone(),
        };
        e_sorted.static_bindings.sort();
        e_sorted.provisioned_claims.sort();
        match got {
            Ok(g) if g == e_sorted => {}
            got => diffs.push(format!(
                "volumeBindings node {}: expected {e_sorted:?}, got {got:?}",
                node.name()
            )),
        }
    }
    for n in exp.keys() {
        if !got_nodes.contains(n.as_str()) {
            diffs.push(format!(
                "volumeBindings: expected an entry for {n}, which ksim found infeasible"
            ));
        }
    }
}
