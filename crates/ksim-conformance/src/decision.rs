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
use ksim_api::version::KubernetesVersion;
use ksim_api::{resource, storage};
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

// Every recorded field is declared (`deny_unknown_fields`): a field the runner does not know
// makes the case fail instead of being ignored.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct Input {
    /// Same as the case name.
    #[allow(dead_code)]
    name: String,
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
    /// DRA (`resource.k8s.io/v1`), see `tests/conformance/v1.36/dra/README.md`.
    device_classes: Vec<resource::DeviceClass>,
    resource_slices: Vec<resource::ResourceSlice>,
    resource_claims: Vec<resource::ResourceClaim>,
}

#[derive(Deserialize, Default, Debug)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct ExpectedStatus {
    code: String,
    plugin: String,
    reasons: Vec<String>,
}

/// Plugin → node → score.
type PluginNodeScores = BTreeMap<String, BTreeMap<String, i64>>;

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct Expected {
    /// Provenance of the recording (`v1.35.4`); not a scheduling result.
    #[allow(dead_code)]
    k8s_version: String,
    profile: Option<String>,
    pre_filter_status: Option<ExpectedStatus>,
    skipped_filter_plugins: Option<Vec<String>>,
    filter: BTreeMap<String, ExpectedStatus>,
    feasible_nodes: Vec<String>,
    scoring_skipped: Option<bool>,
    skipped_score_plugins: Option<Vec<String>>,
    weights: BTreeMap<String, i64>,
    raw_scores: Option<PluginNodeScores>,
    normalized_scores: Option<PluginNodeScores>,
    scores: PluginNodeScores,
    total_scores: BTreeMap<String, i64>,
    best_nodes: Vec<String>,
    scheduled_node: Option<String>,
    fit_error: Option<String>,
    fit_error_filter_only: Option<String>,
    preemption: Option<ExpectedPreemption>,
    unschedulable_plugins: Option<Vec<String>>,
    pre_filter_result: Option<Vec<String>>,
    volume_bindings: Option<BTreeMap<String, ExpectedVolumeBinding>>,
    /// DRA: what Reserve + PreBind wrote to each claim of the pod on the chosen node.
    allocation: Option<BTreeMap<String, ExpectedAllocation>>,
}

/// One claim's allocation as the scheduler wrote it.
#[derive(Deserialize, Default, Debug, PartialEq)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct ExpectedAllocation {
    node: String,
    devices: Vec<ExpectedDevice>,
}

#[derive(Deserialize, Default, Debug, PartialEq)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct ExpectedDevice {
    request: String,
    driver: String,
    pool: String,
    device: String,
}

/// What VolumeBinding's Reserve + PreBind would write if the pod went to a node.
#[derive(Deserialize, Default, Debug, PartialEq)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct ExpectedVolumeBinding {
    all_bound: bool,
    static_bindings: Vec<ExpectedStaticBinding>,
    provisioned_claims: Vec<String>,
}

#[derive(Deserialize, Default, Debug, PartialEq, PartialOrd, Eq, Ord, Clone)]
#[serde(default, deny_unknown_fields)]
struct ExpectedStaticBinding {
    pvc: String,
    pv: String,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct ExpectedPreemption {
    eligible: bool,
    ineligible_reason: String,
    status_code: String,
    status_message: String,
    candidates: Vec<ExpectedCandidate>,
    possible_nominated_nodes: Vec<String>,
    nominated_node: String,
    victims: Option<Vec<String>>,
    deleted_victims: Option<Vec<String>>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
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

/// A decision case's cluster, pod and framework, built as the runner builds them: what any
/// other consumer of the cases (the `--explain` equality test) starts from.
pub struct CaseSetup {
    pub profile: ksim_api::config::Profile,
    pub fwk: ksim_scheduler::framework::Framework,
    pub snapshot: Snapshot,
    pub pod: PodInfo,
    /// Pods nominated to a node (`existingPods` without a node).
    pub nominations: Box<dyn NominatedPods>,
}

/// Builds a decision case's [`CaseSetup`], behaving as the version that recorded it.
pub fn setup(case: &Value) -> Result<CaseSetup, CaseError> {
    setup_as(case, crate::case_version(case)?)
}

/// Builds a decision case's [`CaseSetup`], behaving as `version` (its default gates).
pub fn setup_as(case: &Value, version: KubernetesVersion) -> Result<CaseSetup, CaseError> {
    let input: Input = serde_json::from_value(case.get("input").cloned().unwrap_or(Value::Null))
        .map_err(|e| CaseError::Format(format!("input: {e}")))?;

    let cfg = input.config.clone().unwrap_or_default();
    let profile = cfg.profiles.first().cloned().unwrap_or_default();
    let fwk = build_framework(&Registry::in_tree_for(version), &cfg, &profile)
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
        dra: dra_objects(
            input.device_classes,
            input.resource_slices,
            input.resource_claims,
        ),
        ..Default::default()
    };
    let snapshot = Snapshot::build(nodes, bound, Arc::new(objects));
    let mut pod = input.pod;
    default_pod(&mut pod);
    let pod = PodInfo::new(pod);
    Ok(CaseSetup {
        profile,
        fwk,
        snapshot,
        pod,
        nominations: Box::new(nominations),
    })
}

/// Runs one decision case as the version that recorded it; returns the differences found
/// (empty = pass).
pub fn run(case: &Value) -> Result<Vec<String>, CaseError> {
    run_as(case, crate::case_version(case)?)
}

/// Runs one decision case as `version`; returns the differences found (empty = pass).
pub fn run_as(case: &Value, version: KubernetesVersion) -> Result<Vec<String>, CaseError> {
    let expected: Expected =
        serde_json::from_value(case.get("expected").cloned().unwrap_or(Value::Null))
            .map_err(|e| CaseError::Format(format!("expected: {e}")))?;
    let CaseSetup {
        profile,
        fwk,
        snapshot,
        pod,
        nominations,
    } = setup_as(case, version)?;
    let nominations = &*nominations;

    let mut diffs = Vec::new();
    let names: Vec<&str> = snapshot.nodes.iter().map(|n| n.name()).collect();

    if let Some(exp) = &expected.profile {
        if exp != profile.name() {
            diffs.push(format!(
                "profile: expected {exp:?}, got {:?}",
                profile.name()
            ));
        }
    }

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
    // Recorded only when a PreFilter plugin rejected the pod.
    match &expected.pre_filter_status {
        Some(exp) => {
            let got_reasons: Vec<String> =
                pre.status.reasons.iter().map(|r| r.to_string()).collect();
            if pre.status.code.as_str() != exp.code
                || pre.status.plugin != exp.plugin
                || got_reasons != exp.reasons
            {
                diffs.push(format!(
                    "preFilterStatus: expected {} {} {:?}, got {} {} {:?}",
                    exp.code,
                    exp.plugin,
                    exp.reasons,
                    pre.status.code,
                    pre.status.plugin,
                    got_reasons
                ));
            }
        }
        None if !pre.status.is_success() => diffs.push(format!(
            "preFilterStatus: upstream's PreFilter passed, ksim's returned {} {} {:?}",
            pre.status.code,
            pre.status.plugin,
            pre.status.message()
        )),
        None => {}
    }
    if let Some(exp) = &expected.skipped_filter_plugins {
        compare_plugin_set(
            "skippedFilterPlugins",
            exp,
            state.skip_filter_plugins(),
            &mut diffs,
        );
    }
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
                nominations,
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
    // Recorded (as `true`) only when exactly one node was feasible.
    let got_scoring_skipped = feasible.len() == 1;
    if expected.scoring_skipped.unwrap_or(false) != got_scoring_skipped {
        diffs.push(format!(
            "scoringSkipped: expected {:?}, got {got_scoring_skipped}",
            expected.scoring_skipped
        ));
    }
    // The nodes tied at the top total, from the detailed pass; `None` when scoring failed.
    let mut got_best: Option<Vec<&str>> = match feasible.as_slice() {
        [] => Some(Vec::new()),
        [only] => Some(vec![names[*only]]),
        _ => None,
    };

    if !feasible.is_empty() && pre.status.is_success() {
        let fnodes: Vec<_> = feasible.iter().map(|&i| &snapshot.nodes[i]).collect();
        let s = fwk.run_pre_score(&mut state, &pod, &fnodes, &snapshot);
        if !s.is_success() {
            diffs.push(format!("PreScore failed: {s}"));
        } else {
            if let Some(exp) = &expected.skipped_score_plugins {
                compare_plugin_set(
                    "skippedScorePlugins",
                    exp,
                    state.skip_score_plugins(),
                    &mut diffs,
                );
            }
            let mut table = ScoreTable::default();
            let s = fwk.run_score(&state, &pod, &fnodes, &mut table);
            if !s.is_success() {
                diffs.push(format!("Score failed: {s}"));
            } else {
                if feasible.len() > 1 {
                    let top = table.totals.iter().copied().max().unwrap_or(0);
                    got_best = Some(
                        feasible
                            .iter()
                            .zip(&table.totals)
                            .filter(|(_, &t)| t == top)
                            .map(|(&i, _)| names[i])
                            .collect(),
                    );
                }
                compare_score_table("", &table, &feasible, &names, &expected, &mut diffs);
            }
            // The optimized path real runs take (issue 37): plugins scoring from the
            // snapshot's resource columns (`score_nodes_in`: the paired SSE2 / AVX2 loops where
            // the CPU has them), per plugin and per node against the same recorded scores.
            let mut by_columns = ScoreTable::default();
            let s = fwk.run_score_in(
                &state,
                &pod,
                &fnodes,
                Some((&snapshot, &feasible)),
                &mut by_columns,
            );
            if !s.is_success() {
                diffs.push(format!("Score (column path) failed: {s}"));
            } else {
                compare_score_table(
                    "column path: ",
                    &by_columns,
                    &feasible,
                    &names,
                    &expected,
                    &mut diffs,
                );
            }
        }
    }

    // `None` when scoring failed, already reported.
    if let Some(got) = &got_best {
        let mut got = got.clone();
        got.sort();
        let mut exp: Vec<&str> = expected.best_nodes.iter().map(String::as_str).collect();
        exp.sort();
        if got != exp {
            diffs.push(format!("bestNodes: expected {exp:?}, got {got:?}"));
        }
        // Upstream's pick must be one ksim would also accept.
        if let Some(s) = &expected.scheduled_node {
            if !got.contains(&s.as_str()) {
                diffs.push(format!(
                    "scheduledNode {s} (upstream's pick) is not among ksim's best nodes {got:?}"
                ));
            }
        }
    }
    if expected.scheduled_node.is_some() == expected.best_nodes.is_empty() {
        diffs.push(format!(
            "scheduledNode {:?} recorded with bestNodes {:?}",
            expected.scheduled_node, expected.best_nodes
        ));
    }

    if let Some(exp) = &expected.volume_bindings {
        compare_volume_bindings(exp, &feasible, &snapshot, &pod, &mut diffs);
    }

    // ---- the real decision ---------------------------------------------------------------
    let mut alg = Algorithm::new(rand_chacha::ChaCha8Rng::seed_from_u64(1), 0);
    let mut state = CycleState::new();
    match alg.schedule_pod(&fwk, &mut state, &pod, &snapshot, nominations) {
        Ok(r) => {
            let chosen = names[r.suggested_host];
            if let Some(exp) = &expected.allocation {
                compare_allocation(exp, &fwk, &mut state, &pod, chosen, &mut diffs);
            }
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
            let mut preemption_view: Result<Option<PreemptionView>, String> = Ok(None);
            if fwk.has_post_filter_plugins() {
                let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(2);
                let statuses: &NodeToStatus = &fit.diagnosis.node_to_status;
                let mut ctx = PostFilterContext {
                    framework: &fwk,
                    snapshot: &snapshot,
                    nominated: nominations,
                    rng: &mut rng,
                    extenders: &[],
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
            let has_default_preemption = fwk
                .post_filter
                .iter()
                .any(|p| p.name() == ksim_scheduler::plugins::default_preemption::NAME);
            if expected.preemption.is_none() && has_default_preemption {
                diffs.push(
                    "preemption: upstream recorded none, but ksim's profile has DefaultPreemption"
                        .to_string(),
                );
            }
            if let Some(p) = &expected.preemption {
                if pf_status.code.as_str() != p.status_code
                    || pf_status.message() != p.status_message
                {
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
                // The recorded run's victims (and the pods it deleted) belong to its nominated
                // node; they bind ksim's victims when ksim nominated the same node.
                if nominated == p.nominated_node {
                    for (field, exp) in [
                        ("victims", &p.victims),
                        ("deletedVictims", &p.deleted_victims),
                    ] {
                        if let Some(exp) = exp {
                            let mut exp = exp.clone();
                            exp.sort();
                            if exp != victims {
                                diffs.push(format!(
                                    "preemption {field} on {nominated:?}: expected {exp:?}, got {victims:?}"
                                ));
                            }
                        }
                    }
                }
                match &preemption_view {
                    Ok(Some(view)) => compare_preemption_view(p, view, &mut diffs),
                    Ok(None) => diffs.push(
                        "preemption recorded, but ksim's profile has no DefaultPreemption PostFilter"
                            .to_string(),
                    ),
                    Err(e) => diffs.push(format!("preemption could not be compared: {e}")),
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
) -> Result<Option<PreemptionView>, String> {
    use ksim_scheduler::plugins::default_preemption::{self as dp, DefaultPreemption};
    if !fwk.post_filter.iter().any(|p| p.name() == dp::NAME) {
        return Ok(None);
    }
    let args = ksim_api::config::decode_args(dp::NAME, profile.args_of(dp::NAME))
        .map_err(|e| format!("{} args: {e}", dp::NAME))?;
    let pl = DefaultPreemption::with_args(args).map_err(|e| format!("{}: {e}", dp::NAME))?;
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
    Ok(Some(PreemptionView {
        eligibility,
        candidates,
    }))
}

/// Compares a recorded plugin list with ksim's, as sets (upstream keeps them in a set).
fn compare_plugin_set(field: &str, exp: &[String], got: &[&str], diffs: &mut Vec<String>) {
    let exp: BTreeSet<&str> = exp.iter().map(String::as_str).collect();
    let got: BTreeSet<&str> = got.iter().copied().collect();
    if exp != got {
        diffs.push(format!("{field}: expected {exp:?}, got {got:?}"));
    }
}

/// Compares one plugin's per-node scores at one stage (`rawScores` or `normalizedScores`)
/// when the case records that stage.
fn compare_stage_scores<'a>(
    field: &str,
    plugin: &str,
    recorded: Option<&PluginNodeScores>,
    got: impl Iterator<Item = (&'a str, i64)>,
    diffs: &mut Vec<String>,
) {
    let Some(recorded) = recorded else {
        return;
    };
    let Some(exp) = recorded.get(plugin) else {
        diffs.push(format!("{field}: ksim scored {plugin}, upstream did not"));
        return;
    };
    let mut seen = BTreeSet::new();
    for (node, g) in got {
        seen.insert(node);
        let e = exp.get(node).copied();
        if e != Some(g) {
            diffs.push(format!(
                "{field} {plugin} node {node}: expected {e:?}, got {g}"
            ));
        }
    }
    for node in exp.keys() {
        if !seen.contains(node.as_str()) {
            diffs.push(format!(
                "{field} {plugin}: upstream scored node {node}, ksim did not"
            ));
        }
    }
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

/// The DRA objects of a case: claims defaulted as the oracle did (namespace `default`, uid
/// `uid-claim-<ns>-<name>`, `allocationMode` / `count`); slices and classes as written.
fn dra_objects(
    classes: Vec<resource::DeviceClass>,
    slices: Vec<resource::ResourceSlice>,
    claims: Vec<resource::ResourceClaim>,
) -> ksim_scheduler::node_info::DraObjects {
    let mut d = ksim_scheduler::node_info::DraObjects::default();
    for c in classes {
        d.device_classes
            .insert(c.metadata.name.clone(), Arc::new(c));
    }
    for s in slices {
        d.resource_slices
            .insert(s.metadata.name.clone(), Arc::new(s));
    }
    for mut c in claims {
        resource::default_resource_claim(&mut c);
        d.resource_claims.insert(c.key(), Arc::new(c));
    }
    d
}

/// Runs Reserve and PreBind on the chosen node (as `scheduleOne` does) and compares what
/// DynamicResources wrote, claim by claim, with `allocation`. A claim already reserved for
/// the pod is not written; a shared claim keeps its allocation.
fn compare_allocation(
    exp: &BTreeMap<String, ExpectedAllocation>,
    fwk: &ksim_scheduler::framework::Framework,
    state: &mut CycleState,
    pod: &PodInfo,
    node: &str,
    diffs: &mut Vec<String>,
) {
    let s = fwk.run_reserve(state, pod, node);
    if !s.is_success() {
        diffs.push(format!("allocation: Reserve on {node} failed: {s}"));
        return;
    }
    let s = fwk.run_pre_bind(state, pod, node);
    if !s.is_success() {
        diffs.push(format!("allocation: PreBind on {node} failed: {s}"));
        return;
    }
    let written = ksim_scheduler::plugins::dynamic_resources::prebind_writes(state);
    let mut got: BTreeMap<String, ExpectedAllocation> = BTreeMap::new();
    for c in written {
        let devices = c
            .status
            .allocation
            .iter()
            .flat_map(|a| a.devices.results.iter())
            .map(|r| ExpectedDevice {
                request: r.request.clone(),
                driver: r.driver.clone(),
                pool: r.pool.clone(),
                device: r.device.clone(),
            })
            .collect();
        got.insert(
            c.metadata.name.clone(),
            ExpectedAllocation {
                node: node.to_string(),
                devices,
            },
        );
    }
    let exp_keys: Vec<&String> = exp.keys().collect();
    let got_keys: Vec<&String> = got.keys().collect();
    if exp_keys != got_keys {
        diffs.push(format!(
            "allocation: expected claims {exp_keys:?}, got {got_keys:?}"
        ));
    }
    for (k, e) in exp {
        if let Some(g) = got.get(k) {
            if g != e {
                diffs.push(format!(
                    "allocation {k}:\n  expected {e:?}\n  got      {g:?}"
                ));
            }
        }
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

/// Compares one score table (the plain or the column path's) with the recorded raw,
/// normalized and weighted scores per plugin and node, and the totals; each difference
/// starts with `prefix`.
fn compare_score_table(
    prefix: &str,
    table: &ScoreTable,
    feasible: &[usize],
    names: &[&str],
    expected: &Expected,
    diffs: &mut Vec<String>,
) {
    let mut local: Vec<String> = Vec::new();
    let diffs_out = diffs;
    let diffs = &mut local;
    let mut got_plugins: BTreeSet<&str> = BTreeSet::new();
    for ps in &table.plugins {
        got_plugins.insert(ps.plugin);
        let per_node: Vec<(&str, i64, i64)> = feasible
            .iter()
            .enumerate()
            .map(|(k, &i)| {
                let raw = ps.raw_at(k).unwrap_or_default();
                (names[i], raw, ps.normalized_at(k).unwrap_or_default())
            })
            .collect();
        compare_stage_scores(
            "rawScores",
            ps.plugin,
            expected.raw_scores.as_ref(),
            per_node.iter().map(|&(n, raw, _)| (n, raw)),
            diffs,
        );
        compare_stage_scores(
            "normalizedScores",
            ps.plugin,
            expected.normalized_scores.as_ref(),
            per_node.iter().map(|&(n, _, norm)| (n, norm)),
            diffs,
        );
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
                    per_node[k].1,
                    per_node[k].2
                ));
            }
        }
    }
    let recorded = expected
        .scores
        .keys()
        .chain(expected.raw_scores.iter().flat_map(|m| m.keys()))
        .chain(expected.normalized_scores.iter().flat_map(|m| m.keys()));
    let missing: BTreeSet<&String> = recorded
        .filter(|p| !got_plugins.contains(p.as_str()))
        .collect();
    for p in missing {
        diffs.push(format!("plugin {p}: upstream scored it, ksim skipped it"));
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
    diffs_out.extend(local.into_iter().map(|d| format!("{prefix}{d}")));
}
