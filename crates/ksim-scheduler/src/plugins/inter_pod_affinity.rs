//! `InterPodAffinity` (upstream `interpodaffinity`: plugin.go, filtering.go, scoring.go of
//! kube-scheduler v1.35.4).
//!
//! - **PreFilter** counts, per topology pair `(key, value)`: existing pods whose *required
//!   anti-affinity* matches the incoming pod, existing pods matching *all* of the incoming pod's
//!   required affinity terms, and existing pods matching each of its required anti-affinity
//!   terms. It returns Skip when the incoming pod has no required terms and no existing
//!   anti-affinity term matches it. `add_pod`/`remove_pod` update the counts (nominated pods,
//!   preemption dry runs).
//! - **Filter** checks the incoming pod's affinity (`UnschedulableAndUnresolvable`, with the
//!   "first pod of a group" exception), its anti-affinity and the existing pods' anti-affinity
//!   (both `Unschedulable`).
//! - **PreScore/Score/NormalizeScore** sum preferred term weights (and `hardPodAffinityWeight`
//!   for existing pods' required affinity toward the incoming pod) per topology pair, then
//!   min–max normalise.
//! - **EnqueueExtensions** mirror `isSchedulableAfterPodChange` / `isSchedulableAfterNodeChange`
//!   with queueing hints enabled (the v1.35 default), i.e. Node `Add | UpdateNodeLabel`.
//!
//! `matchLabelKeys` / `mismatchLabelKeys` are ignored on purpose: in v1.35 the API server merges
//! them into `labelSelector` at pod creation and the scheduler itself never reads them (the
//! recorded cases confirm this, since the oracle used a fake client without admission).
//!
//! Upstream merges a term's `namespaceSelector` into its namespace list by listing the known
//! namespaces. Here the selector is evaluated against the target pod's namespace labels
//! ([`ClusterObjects::namespace_labels`]), which is the same whenever every namespace a pod
//! lives in exists — the model [`ClusterObjects`] assumes ("a namespace that is not listed
//! exists with no labels").
//!
//! Known difference: an affinity term whose label selector has an invalid operator makes
//! upstream's PreFilter fail with `parsing pod: ...`; [`PodInfo`] compiles it to a selector
//! that matches nothing instead.

use std::sync::Arc;

use ksim_api::config::{decode_args, InterPodAffinityArgs};
use ksim_api::{Labels, Node, Selector};
use rustc_hash::FxHashMap;

use crate::framework::{
    ClusterEventKind, ClusterEventObjects, CycleState, EnqueueExtensions, FactoryArgs,
    FilterPlugin, FilterResult, Plugin, PluginRef, PreFilterPlugin, PreFilterResult,
    PreScorePlugin, QueueingHint, ScorePlugin, Status, MAX_NODE_SCORE,
};
use crate::node_info::{ClusterObjects, NodeInfo, Snapshot};
use crate::pod_index::TermKind;
use crate::pod_info::{AffinityTerm, PodInfo};

pub const NAME: &str = "InterPodAffinity";

pub const ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH: &str =
    "node(s) didn't satisfy existing pods anti-affinity rules";
pub const ERR_REASON_AFFINITY_RULES_NOT_MATCH: &str = "node(s) didn't match pod affinity rules";
pub const ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH: &str =
    "node(s) didn't match pod anti-affinity rules";

/// Upstream's cycle-state keys (`"PreFilter" + Name`, `"PreScore" + Name`).
const PRE_FILTER_STATE_KEY: &str = "PreFilterInterPodAffinity";
const PRE_SCORE_STATE_KEY: &str = "PreScoreInterPodAffinity";

const MIN_HARD_POD_AFFINITY_WEIGHT: i32 = 0;
const MAX_HARD_POD_AFFINITY_WEIGHT: i32 = 100;

pub struct InterPodAffinity {
    hard_pod_affinity_weight: i32,
    ignore_preferred_terms_of_existing_pods: bool,
}

pub fn new(a: &FactoryArgs<'_>) -> Result<PluginRef, String> {
    let args: InterPodAffinityArgs = decode_args(NAME, a.args)?;
    validate_args(&args)?;
    Ok(Arc::new(InterPodAffinity {
        hard_pod_affinity_weight: args.hard_pod_affinity_weight,
        ignore_preferred_terms_of_existing_pods: args.ignore_preferred_terms_of_existing_pods,
    }))
}

/// `ValidateInterPodAffinityArgs`.
fn validate_args(args: &InterPodAffinityArgs) -> Result<(), String> {
    let w = args.hard_pod_affinity_weight;
    if !(MIN_HARD_POD_AFFINITY_WEIGHT..=MAX_HARD_POD_AFFINITY_WEIGHT).contains(&w) {
        return Err(format!(
            "hardPodAffinityWeight: Invalid value: {w}: not in valid range \
             [{MIN_HARD_POD_AFFINITY_WEIGHT}, {MAX_HARD_POD_AFFINITY_WEIGHT}]"
        ));
    }
    Ok(())
}

impl Plugin for InterPodAffinity {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        Some(self)
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
    fn as_enqueue_extensions(&self) -> Option<&dyn EnqueueExtensions> {
        Some(self)
    }
}

// ---- term matching -------------------------------------------------------------------------

/// An incoming pod's term against a target pod (upstream: the term after
/// `mergeAffinityTermNamespacesIfNotEmpty`, matched with nil namespace labels). The namespace
/// labels are only looked up when a non-empty namespace selector has to decide.
fn incoming_term_matches(t: &AffinityTerm, target: &PodInfo, objects: &ClusterObjects) -> bool {
    let ns = target.namespace();
    let ns_ok = t.namespaces.contains(ns)
        || match &t.namespace_selector {
            Selector::Nothing => false,
            s if s.is_empty() => true,
            s => s.matches(objects.namespace_labels(ns)),
        };
    ns_ok && t.selector.matches(target.labels())
}

/// `podMatchesAllAffinityTerms` for the incoming pod's terms: false for no terms.
fn matches_all_incoming(
    terms: &[AffinityTerm],
    target: &PodInfo,
    objects: &ClusterObjects,
) -> bool {
    !terms.is_empty()
        && terms
            .iter()
            .all(|t| incoming_term_matches(t, target, objects))
}

/// `podMatchesAllAffinityTerms` as the queueing hints call it: terms straight from the pod spec
/// (namespace selector not merged) matched with nil namespace labels.
fn matches_all_unmerged(terms: &[AffinityTerm], target: &PodInfo) -> bool {
    static EMPTY: std::sync::OnceLock<Labels> = std::sync::OnceLock::new();
    let empty = EMPTY.get_or_init(Labels::new);
    !terms.is_empty() && terms.iter().all(|t| t.matches(target, empty))
}

// ---- topology counts -----------------------------------------------------------------------

/// `topologyToMatchedTermCount`: topology key → value → count. Topology keys are few, so the
/// outer level is a vector (deterministic order); the inner map is only used for lookups.
/// Entries that drop to zero are removed, as upstream deletes them, so that "is empty" keeps
/// upstream's `len(map) == 0` meaning.
#[derive(Debug, Clone, Default)]
struct TopologyCounts(Vec<(String, FxHashMap<String, i64>)>);

impl TopologyCounts {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn get(&self, key: &str, value: &str) -> i64 {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, m)| m.get(value))
            .copied()
            .unwrap_or(0)
    }

    /// `update(node, key, delta)`: counts the node's value of `key`, if the node has the label.
    fn update(&mut self, node_labels: &Labels, key: &str, delta: i64) {
        let Some(value) = node_labels.get(key) else {
            return;
        };
        let i = match self.0.iter().position(|(k, _)| k == key) {
            Some(i) => i,
            None => {
                self.0.push((key.to_string(), FxHashMap::default()));
                self.0.len() - 1
            }
        };
        let inner = &mut self.0[i].1;
        let c = inner.entry(value.clone()).or_insert(0);
        *c += delta;
        if *c == 0 {
            inner.remove(value);
            if inner.is_empty() {
                self.0.swap_remove(i);
            }
        }
    }
}

// ---- PreFilter / Filter --------------------------------------------------------------------

/// `preFilterState`.
#[derive(Debug, Clone)]
struct PreFilterState {
    /// Existing pods' required anti-affinity terms matching the incoming pod.
    existing_anti_affinity_counts: TopologyCounts,
    /// Existing pods matching all of the incoming pod's required affinity terms.
    affinity_counts: TopologyCounts,
    /// Existing pods matching each of the incoming pod's required anti-affinity terms.
    anti_affinity_counts: TopologyCounts,
    /// The incoming pod's namespace labels (for existing pods' namespace selectors).
    namespace_labels: Labels,
    /// Whether the incoming pod matches all its own required affinity terms (the "first pod of
    /// a group" rule); it does not change when pods are added or removed.
    matches_own_affinity: bool,
}

impl PreFilterState {
    /// `updateWithPod`: the counts as if `other` were added (`delta` 1) to or removed (-1) from
    /// `node`.
    fn update_with_pod(
        &mut self,
        pod: &PodInfo,
        other: &PodInfo,
        node: &Node,
        objects: &ClusterObjects,
        delta: i64,
    ) {
        let labels = &node.metadata.labels;
        for t in &other.required_anti_affinity {
            if t.matches(pod, &self.namespace_labels) {
                self.existing_anti_affinity_counts
                    .update(labels, &t.topology_key, delta);
            }
        }
        if matches_all_incoming(&pod.required_affinity, other, objects) {
            for t in &pod.required_affinity {
                self.affinity_counts.update(labels, &t.topology_key, delta);
            }
        }
        for t in &pod.required_anti_affinity {
            if incoming_term_matches(t, other, objects) {
                self.anti_affinity_counts
                    .update(labels, &t.topology_key, delta);
            }
        }
    }
}

fn pre_filter_state(state: &CycleState) -> Result<&PreFilterState, Status> {
    state
        .read::<PreFilterState>(PRE_FILTER_STATE_KEY)
        .ok_or_else(|| {
            Status::error(format!(
                "error reading {PRE_FILTER_STATE_KEY:?} from cycleState: not found"
            ))
        })
}

impl PreFilterPlugin for InterPodAffinity {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let objects = &*snapshot.objects;
        let namespace_labels = objects.namespace_labels(pod.namespace()).clone();

        // Upstream walks every pod (or every pod with required anti-affinity); the snapshot's
        // pod index hands out only the pods and terms whose selector can match, and each is
        // still matched exactly. Counts are sums, so the order of the walk does not matter.
        let node_labels = |i: usize| snapshot.nodes.get(i).map(NodeInfo::labels);

        // getExistingAntiAffinityCounts: existing pods' required anti-affinity terms.
        let mut existing = TopologyCounts::default();
        snapshot.pod_index.for_each_term_candidate(
            TermKind::RequiredAntiAffinity,
            pod.labels(),
            |i, _, t, _| {
                if let Some(labels) = node_labels(i) {
                    if t.matches(pod, &namespace_labels) {
                        existing.update(labels, &t.topology_key, 1);
                    }
                }
            },
        );

        // getIncomingAffinityAntiAffinityCounts: every pod on every node.
        let mut affinity = TopologyCounts::default();
        let mut anti_affinity = TopologyCounts::default();
        let has_required =
            !pod.required_affinity.is_empty() || !pod.required_anti_affinity.is_empty();
        if let Some(first) = pod.required_affinity.first() {
            // A pod matching all the terms matches the first.
            snapshot
                .pod_index
                .for_each_candidate(&first.selector, |i, ep| {
                    if let Some(labels) = node_labels(i) {
                        if matches_all_incoming(&pod.required_affinity, ep, objects) {
                            for t in &pod.required_affinity {
                                affinity.update(labels, &t.topology_key, 1);
                            }
                        }
                    }
                });
        }
        for t in &pod.required_anti_affinity {
            snapshot.pod_index.for_each_candidate(&t.selector, |i, ep| {
                if let Some(labels) = node_labels(i) {
                    if incoming_term_matches(t, ep, objects) {
                        anti_affinity.update(labels, &t.topology_key, 1);
                    }
                }
            });
        }

        if existing.is_empty() && !has_required {
            return (None, Status::skip());
        }

        state.write(
            PRE_FILTER_STATE_KEY,
            PreFilterState {
                existing_anti_affinity_counts: existing,
                affinity_counts: affinity,
                anti_affinity_counts: anti_affinity,
                namespace_labels,
                matches_own_affinity: matches_all_incoming(&pod.required_affinity, pod, objects),
            },
        );
        (None, Status::success())
    }

    fn has_extensions(&self) -> bool {
        true
    }

    fn add_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        pod_to_add: &Arc<PodInfo>,
        node: &NodeInfo,
        snapshot: &Snapshot,
    ) -> Status {
        update_state(state, pod, pod_to_add, node, snapshot, 1)
    }

    fn remove_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        pod_to_remove: &Arc<PodInfo>,
        node: &NodeInfo,
        snapshot: &Snapshot,
    ) -> Status {
        update_state(state, pod, pod_to_remove, node, snapshot, -1)
    }
}

fn update_state(
    state: &mut CycleState,
    pod: &PodInfo,
    other: &PodInfo,
    node: &NodeInfo,
    snapshot: &Snapshot,
    delta: i64,
) -> Status {
    match state.read_mut::<PreFilterState>(PRE_FILTER_STATE_KEY) {
        Some(s) => {
            s.update_with_pod(pod, other, &node.node, &snapshot.objects, delta);
            Status::success()
        }
        None => Status::error(format!(
            "error reading {PRE_FILTER_STATE_KEY:?} from cycleState: not found"
        )),
    }
}

/// `satisfyPodAffinity`.
fn satisfy_pod_affinity(s: &PreFilterState, pod: &PodInfo, labels: &Labels) -> bool {
    let mut pods_exist = true;
    for t in &pod.required_affinity {
        match labels.get(&t.topology_key) {
            Some(v) => {
                if s.affinity_counts.get(&t.topology_key, v) <= 0 {
                    pods_exist = false;
                }
            }
            // All topology labels must exist on the node.
            None => return false,
        }
    }
    // The pod may be the first of a group with affinity to itself: allowed when no pod in the
    // cluster matches its terms and it matches them itself.
    pods_exist || (s.affinity_counts.is_empty() && s.matches_own_affinity)
}

/// `satisfyPodAntiAffinity`.
fn satisfy_pod_anti_affinity(s: &PreFilterState, pod: &PodInfo, labels: &Labels) -> bool {
    if s.anti_affinity_counts.is_empty() {
        return true;
    }
    !pod.required_anti_affinity.iter().any(|t| {
        labels
            .get(&t.topology_key)
            .is_some_and(|v| s.anti_affinity_counts.get(&t.topology_key, v) > 0)
    })
}

/// `satisfyExistingPodsAntiAffinity`: no counted pair is one of the node's labels.
fn satisfy_existing_pods_anti_affinity(s: &PreFilterState, labels: &Labels) -> bool {
    !s.existing_anti_affinity_counts.0.iter().any(|(k, m)| {
        labels
            .get(k)
            .is_some_and(|v| m.get(v).is_some_and(|&c| c > 0))
    })
}

impl InterPodAffinity {
    /// The Filter verdict as a [`Status`] (the trait method boxes a rejection).
    fn filter_status(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let s = match pre_filter_state(state) {
            Ok(s) => s,
            Err(e) => return e,
        };
        let labels = node.labels();
        if !satisfy_pod_affinity(s, pod, labels) {
            return Status::unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH);
        }
        if !satisfy_pod_anti_affinity(s, pod, labels) {
            return Status::unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH);
        }
        if !satisfy_existing_pods_anti_affinity(s, labels) {
            return Status::unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH);
        }
        Status::success()
    }
}

impl FilterPlugin for InterPodAffinity {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> FilterResult {
        self.filter_status(state, pod, node).into()
    }
}

// ---- PreScore / Score / NormalizeScore -----------------------------------------------------

/// `scoreMap`: topology key → value → summed weight.
#[derive(Debug, Clone, Default)]
struct TopologyScore(Vec<(String, FxHashMap<String, i64>)>);

impl TopologyScore {
    fn add(&mut self, key: &str, value: &str, delta: i64) {
        let i = match self.0.iter().position(|(k, _)| k == key) {
            Some(i) => i,
            None => {
                self.0.push((key.to_string(), FxHashMap::default()));
                self.0.len() - 1
            }
        };
        *self.0[i].1.entry(value.to_string()).or_insert(0) += delta;
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// `preScoreState`.
#[derive(Debug, Clone)]
struct PreScoreState {
    topology_score: TopologyScore,
}

/// What `processExistingPod` needs besides the existing pod.
struct ScoreContext<'a> {
    incoming: &'a PodInfo,
    namespace_labels: &'a Labels,
    hard_pod_affinity_weight: i32,
}

impl ScoreContext<'_> {
    /// `processTerm`: adds `weight * multiplier` to the node's pair when `matches`.
    fn process(
        score: &mut TopologyScore,
        matches: bool,
        key: &str,
        node_labels: &Labels,
        weight: i32,
        multiplier: i32,
    ) -> bool {
        if !matches {
            return false;
        }
        let Some(v) = node_labels.get(key) else {
            return false;
        };
        score.add(key, v, i64::from(weight.wrapping_mul(multiplier)));
        true
    }
}

impl PreScorePlugin for InterPodAffinity {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _nodes: &[&NodeInfo],
        snapshot: &Snapshot,
    ) -> Status {
        let has_constraints =
            !pod.preferred_affinity.is_empty() || !pod.preferred_anti_affinity.is_empty();
        // Optionally ignore existing pods' preferences when the incoming pod has none.
        if self.ignore_preferred_terms_of_existing_pods && !has_constraints {
            return Status::skip();
        }
        let objects = &*snapshot.objects;
        let ctx = ScoreContext {
            incoming: pod,
            namespace_labels: objects.namespace_labels(pod.namespace()),
            hard_pod_affinity_weight: self.hard_pod_affinity_weight,
        };
        let mut score = TopologyScore::default();
        let mut any = false;
        // Upstream runs processExistingPod over every pod (with constraints) or every pod with
        // (anti-)affinity. Each of its terms adds to a sum, so the terms are taken one kind at a
        // time from the snapshot's pod index, which hands out only the pods and terms whose
        // selector can match (each still matched exactly).
        let node_labels = |i: usize| snapshot.nodes.get(i).map(NodeInfo::labels);
        if has_constraints {
            for (terms, multiplier) in [
                (&pod.preferred_affinity, 1),
                (&pod.preferred_anti_affinity, -1),
            ] {
                for t in terms {
                    snapshot
                        .pod_index
                        .for_each_candidate(&t.term.selector, |i, ep| {
                            if let Some(labels) = node_labels(i) {
                                let m = incoming_term_matches(&t.term, ep, objects);
                                any |= ScoreContext::process(
                                    &mut score,
                                    m,
                                    &t.term.topology_key,
                                    labels,
                                    t.weight,
                                    multiplier,
                                );
                            }
                        });
                }
            }
        }
        let mut existing_terms = |kind: TermKind, multiplier: i32, hard: Option<i32>| {
            snapshot
                .pod_index
                .for_each_term_candidate(kind, pod.labels(), |i, _, t, w| {
                    if let Some(labels) = node_labels(i) {
                        let m = t.matches(ctx.incoming, ctx.namespace_labels);
                        let weight = hard.unwrap_or(w);
                        any |= ScoreContext::process(
                            &mut score,
                            m,
                            &t.topology_key,
                            labels,
                            weight,
                            multiplier,
                        );
                    }
                });
        };
        if ctx.hard_pod_affinity_weight > 0 {
            existing_terms(
                TermKind::RequiredAffinity,
                1,
                Some(ctx.hard_pod_affinity_weight),
            );
        }
        existing_terms(TermKind::PreferredAffinity, 1, None);
        existing_terms(TermKind::PreferredAntiAffinity, -1, None);
        if !any {
            return Status::skip();
        }
        state.write(
            PRE_SCORE_STATE_KEY,
            PreScoreState {
                topology_score: score,
            },
        );
        Status::success()
    }
}

fn pre_score_state(state: &CycleState) -> Result<&PreScoreState, Status> {
    state
        .read::<PreScoreState>(PRE_SCORE_STATE_KEY)
        .ok_or_else(|| {
            Status::error(format!(
                "failed to read {PRE_SCORE_STATE_KEY:?} from cycleState: not found"
            ))
        })
}

impl ScorePlugin for InterPodAffinity {
    fn score(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let s = pre_score_state(state)?;
        let labels = node.labels();
        let mut score = 0i64;
        for (key, values) in &s.topology_score.0 {
            if let Some(v) = labels.get(key) {
                score += values.get(v).copied().unwrap_or(0);
            }
        }
        Ok(score)
    }

    fn has_normalize(&self) -> bool {
        true
    }

    /// Min–max normalisation over the feasible nodes, in upstream's float arithmetic.
    fn normalize(&self, state: &CycleState, _pod: &PodInfo, scores: &mut [i64]) -> Status {
        let s = match pre_score_state(state) {
            Ok(s) => s,
            Err(e) => return e,
        };
        if s.topology_score.is_empty() {
            return Status::success();
        }
        let max = scores.iter().copied().max().unwrap_or(i64::MIN);
        let min = scores.iter().copied().min().unwrap_or(i64::MAX);
        let diff = max.wrapping_sub(min);
        for sc in scores.iter_mut() {
            let f = if diff > 0 {
                MAX_NODE_SCORE as f64 * ((*sc - min) as f64 / diff as f64)
            } else {
                0.0
            };
            *sc = f as i64;
        }
        Status::success()
    }
}

// ---- EnqueueExtensions ---------------------------------------------------------------------

impl InterPodAffinity {
    /// `isSchedulableAfterPodChange`.
    fn hint_pod(pod: &PodInfo, old: Option<&PodInfo>, new: Option<&PodInfo>) -> QueueingHint {
        let unassigned = |p: Option<&PodInfo>| p.is_some_and(|p| p.pod.spec.node_name.is_empty());
        if unassigned(new) || unassigned(old) {
            // An unscheduled pod cannot make the target pod schedulable.
            return QueueingHint::Skip;
        }
        let terms = &pod.required_affinity;
        let anti_terms = &pod.required_anti_affinity;
        match (old, new) {
            // Updated: it now matches the affinity, or no longer matches the anti-affinity.
            (Some(o), Some(n)) => {
                if !matches_all_unmerged(terms, o) && matches_all_unmerged(terms, n) {
                    return QueueingHint::Queue;
                }
                if matches_all_unmerged(anti_terms, o) && !matches_all_unmerged(anti_terms, n) {
                    return QueueingHint::Queue;
                }
                QueueingHint::Skip
            }
            // Added: it matches the affinity.
            (None, Some(n)) => {
                if matches_all_unmerged(terms, n) {
                    QueueingHint::Queue
                } else {
                    QueueingHint::Skip
                }
            }
            // Deleted: it matched the anti-affinity.
            (Some(o), None) => {
                if matches_all_unmerged(anti_terms, o) {
                    QueueingHint::Queue
                } else {
                    QueueingHint::Skip
                }
            }
            // Upstream's type assertion fails and it queues.
            (None, None) => QueueingHint::Queue,
        }
    }

    /// `isSchedulableAfterNodeChange` (the fine-grained version of v1.32+).
    fn hint_node(pod: &PodInfo, old: Option<&Node>, new: Option<&Node>) -> QueueingHint {
        let Some(new) = new else {
            return QueueingHint::Queue;
        };
        let new_labels = &new.metadata.labels;
        for t in &pod.required_affinity {
            let key = &t.topology_key;
            match old {
                // A node added with the affinity's topology key.
                None => {
                    if new_labels.contains_key(key) {
                        return QueueingHint::Queue;
                    }
                }
                Some(old) => {
                    let (o, n) = (old.metadata.labels.get(key), new_labels.get(key));
                    match (o, n) {
                        // The key appeared, or its value changed.
                        (None, Some(_)) => return QueueingHint::Queue,
                        (Some(a), Some(b)) if a != b => return QueueingHint::Queue,
                        _ => {}
                    }
                }
            }
        }
        for t in &pod.required_anti_affinity {
            let key = &t.topology_key;
            match old {
                // Any new node may be outside the repelling domains.
                None => return QueueingHint::Queue,
                Some(old) => {
                    let (o, n) = (old.metadata.labels.get(key), new_labels.get(key));
                    match (o, n) {
                        // The key disappeared, or its value changed.
                        (Some(_), None) => return QueueingHint::Queue,
                        (Some(a), Some(b)) if a != b => return QueueingHint::Queue,
                        _ => {}
                    }
                }
            }
        }
        QueueingHint::Skip
    }
}

impl EnqueueExtensions for InterPodAffinity {
    fn events(&self) -> &'static [ClusterEventKind] {
        &[
            ClusterEventKind::AssignedPodAdd,
            ClusterEventKind::AssignedPodUpdate,
            ClusterEventKind::AssignedPodDelete,
            // Upstream (queueing hints on): Node Add | UpdateNodeLabel; taint changes reach it
            // through buildQueueingHintMap's always-Queue UpdateNodeTaint entry.
            ClusterEventKind::NodeAdd,
            ClusterEventKind::NodeUpdateLabel,
        ]
    }

    fn hint(
        &self,
        pod: &PodInfo,
        _kind: ClusterEventKind,
        objects: &ClusterEventObjects<'_>,
    ) -> QueueingHint {
        match objects {
            ClusterEventObjects::Pod { old, new } => Self::hint_pod(pod, *old, *new),
            ClusterEventObjects::Node { old, new } => Self::hint_node(pod, *old, *new),
            ClusterEventObjects::Object { .. } | ClusterEventObjects::None => QueueingHint::Queue,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use ksim_api::config::Profile;
    use ksim_api::{Namespace, Pod};
    use serde_json::{json, Value};

    fn labels(kv: &[(&str, &str)]) -> Value {
        Value::Object(
            kv.iter()
                .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
                .collect(),
        )
    }

    fn node(name: &str, zone: Option<&str>) -> Arc<Node> {
        let mut l = vec![("kubernetes.io/hostname", name)];
        if let Some(z) = zone {
            l.push(("zone", z));
        }
        Arc::new(
            serde_json::from_value(json!({"metadata": {"name": name, "labels": labels(&l)}}))
                .unwrap(),
        )
    }

    fn pod(name: &str, ns: &str, node: &str, l: &[(&str, &str)], affinity: Value) -> PodInfo {
        let p: Pod = serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": ns, "uid": name, "labels": labels(l)},
            "spec": {"nodeName": node, "affinity": affinity, "containers": []}
        }))
        .unwrap();
        PodInfo::new(p)
    }

    fn term(key: &str, sel: &[(&str, &str)]) -> Value {
        json!({"labelSelector": {"matchLabels": labels(sel)}, "topologyKey": key})
    }

    fn required(kind: &str, terms: Vec<Value>) -> Value {
        json!({kind: {"requiredDuringSchedulingIgnoredDuringExecution": terms}})
    }

    fn preferred(kind: &str, terms: Vec<(i32, Value)>) -> Value {
        let t: Vec<Value> = terms
            .into_iter()
            .map(|(w, t)| json!({"weight": w, "podAffinityTerm": t}))
            .collect();
        json!({kind: {"preferredDuringSchedulingIgnoredDuringExecution": t}})
    }

    fn snapshot(
        nodes: Vec<Arc<Node>>,
        pods: Vec<PodInfo>,
        ns: Vec<(&str, &[(&str, &str)])>,
    ) -> Snapshot {
        let namespaces = ns
            .into_iter()
            .map(|(n, l)| {
                let ns: Namespace =
                    serde_json::from_value(json!({"metadata": {"name": n, "labels": labels(l)}}))
                        .unwrap();
                (n.to_string(), ns)
            })
            .collect();
        let objects = ClusterObjects {
            namespaces,
            ..Default::default()
        };
        Snapshot::build(nodes, pods.into_iter().map(Arc::new), Arc::new(objects))
    }

    fn plugin(args: Value) -> InterPodAffinity {
        let args: InterPodAffinityArgs = decode_args(NAME, Some(&args)).unwrap();
        validate_args(&args).unwrap();
        InterPodAffinity {
            hard_pod_affinity_weight: args.hard_pod_affinity_weight,
            ignore_preferred_terms_of_existing_pods: args.ignore_preferred_terms_of_existing_pods,
        }
    }

    /// Runs PreFilter and Filter on every node; returns (prefilter skipped, per-node result).
    fn run_filter(
        pl: &InterPodAffinity,
        pod: &PodInfo,
        s: &Snapshot,
    ) -> (bool, Vec<(String, Code, String)>) {
        let mut state = CycleState::new();
        let (_, st) = pl.pre_filter(&mut state, pod, s);
        if st.is_skip() {
            return (true, Vec::new());
        }
        assert!(st.is_success(), "{st}");
        let out = s
            .nodes
            .iter()
            .map(|n| {
                let st = pl.filter(&state, pod, n).into_status();
                (n.name().to_string(), st.code, st.message())
            })
            .collect();
        (false, out)
    }

    fn codes(res: &[(String, Code, String)]) -> Vec<(&str, Code)> {
        let mut v: Vec<(&str, Code)> = res.iter().map(|(n, c, _)| (n.as_str(), *c)).collect();
        v.sort();
        v
    }

    #[test]
    fn filter_table() {
        use Code::*;
        let nodes = || {
            vec![
                node("a", Some("z1")),
                node("b", Some("z1")),
                node("c", Some("z2")),
                node("d", None),
            ]
        };
        struct Case {
            name: &'static str,
            existing: Vec<PodInfo>,
            pod: PodInfo,
            skipped: bool,
            want: Vec<(&'static str, Code)>,
        }
        let web = |n: &str, node: &str| pod(n, "default", node, &[("app", "web")], Value::Null);
        let cases = vec![
            Case {
                name: "required affinity zone; node without the key is unresolvable",
                existing: vec![web("w", "a")],
                pod: pod(
                    "p",
                    "default",
                    "",
                    &[],
                    required("podAffinity", vec![term("zone", &[("app", "web")])]),
                ),
                skipped: false,
                want: vec![
                    ("a", Success),
                    ("b", Success),
                    ("c", UnschedulableAndUnresolvable),
                    ("d", UnschedulableAndUnresolvable),
                ],
            },
            Case {
                name: "first pod of a group: allowed wherever the topology key exists",
                existing: vec![],
                pod: pod(
                    "p",
                    "default",
                    "",
                    &[("app", "web")],
                    required("podAffinity", vec![term("zone", &[("app", "web")])]),
                ),
                skipped: false,
                want: vec![
                    ("a", Success),
                    ("b", Success),
                    ("c", Success),
                    ("d", UnschedulableAndUnresolvable),
                ],
            },
            Case {
                name: "affinity to nothing that the pod itself does not match",
                existing: vec![],
                pod: pod(
                    "p",
                    "default",
                    "",
                    &[("app", "x")],
                    required("podAffinity", vec![term("zone", &[("app", "web")])]),
                ),
                skipped: false,
                want: vec![
                    ("a", UnschedulableAndUnresolvable),
                    ("b", UnschedulableAndUnresolvable),
                    ("c", UnschedulableAndUnresolvable),
                    ("d", UnschedulableAndUnresolvable),
                ],
            },
            Case {
                name: "required anti-affinity zone; node without the key passes",
                existing: vec![web("w", "a")],
                pod: pod(
                    "p",
                    "default",
                    "",
                    &[],
                    required("podAntiAffinity", vec![term("zone", &[("app", "web")])]),
                ),
                skipped: false,
                want: vec![
                    ("a", Unschedulable),
                    ("b", Unschedulable),
                    ("c", Success),
                    ("d", Success),
                ],
            },
            Case {
                name: "anti-affinity in another namespace does not count",
                existing: vec![pod("w", "other", "a", &[("app", "web")], Value::Null)],
                pod: pod(
                    "p",
                    "default",
                    "",
                    &[],
                    required("podAntiAffinity", vec![term("zone", &[("app", "web")])]),
                ),
                skipped: false,
                want: vec![
                    ("a", Success),
                    ("b", Success),
                    ("c", Success),
                    ("d", Success),
                ],
            },
            Case {
                name: "existing pod's anti-affinity repels the incoming pod",
                existing: vec![pod(
                    "w",
                    "default",
                    "c",
                    &[],
                    required(
                        "podAntiAffinity",
                        vec![term("kubernetes.io/hostname", &[("app", "web")])],
                    ),
                )],
                pod: web("p", ""),
                skipped: false,
                want: vec![
                    ("a", Success),
                    ("b", Success),
                    ("c", Unschedulable),
                    ("d", Success),
                ],
            },
            Case {
                name: "nothing to do: PreFilter skips",
                existing: vec![pod(
                    "w",
                    "default",
                    "c",
                    &[],
                    required("podAntiAffinity", vec![term("zone", &[("app", "db")])]),
                )],
                pod: web("p", ""),
                skipped: true,
                want: vec![],
            },
        ];
        let pl = plugin(json!({}));
        for c in cases {
            let s = snapshot(nodes(), c.existing, vec![]);
            let (skipped, res) = run_filter(&pl, &c.pod, &s);
            assert_eq!(skipped, c.skipped, "{}", c.name);
            assert_eq!(codes(&res), c.want, "{}", c.name);
        }
    }

    #[test]
    fn filter_reasons() {
        let nodes = vec![node("a", Some("z1")), node("b", Some("z2"))];
        let existing = vec![
            pod("w", "default", "a", &[("app", "web")], Value::Null),
            pod(
                "g",
                "default",
                "b",
                &[],
                required("podAntiAffinity", vec![term("zone", &[("role", "x")])]),
            ),
        ];
        let s = snapshot(nodes, existing, vec![]);
        let pl = plugin(json!({}));
        let p = pod(
            "p",
            "default",
            "",
            &[("role", "x")],
            required("podAntiAffinity", vec![term("zone", &[("app", "web")])]),
        );
        let (_, res) = run_filter(&pl, &p, &s);
        assert_eq!(res[0].2, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH);
        assert_eq!(res[1].2, ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH);
        let p = pod(
            "p",
            "default",
            "",
            &[],
            required(
                "podAffinity",
                vec![term("zone", &[("app", "nope")]), term("zone", &[])],
            ),
        );
        let (_, res) = run_filter(&pl, &p, &s);
        assert_eq!(res[0].2, ERR_REASON_AFFINITY_RULES_NOT_MATCH);
    }

    #[test]
    fn namespace_selector() {
        let nodes = vec![
            node("a", Some("z1")),
            node("b", Some("z2")),
            node("c", Some("z3")),
        ];
        let existing = vec![
            pod("x", "ns-a", "a", &[("app", "web")], Value::Null),
            pod("y", "ns-b", "b", &[("app", "web")], Value::Null),
            pod("z", "unlisted", "c", &[("app", "web")], Value::Null),
        ];
        let s = snapshot(
            nodes,
            existing,
            vec![("ns-a", &[("team", "a")]), ("ns-b", &[("team", "b")])],
        );
        let pl = plugin(json!({}));
        let with_ns_sel = |sel: Value| {
            let mut t = term("zone", &[("app", "web")]);
            t["namespaceSelector"] = sel;
            pod("p", "default", "", &[], required("podAffinity", vec![t]))
        };
        let pass = |p: &PodInfo| -> Vec<String> {
            let (_, res) = run_filter(&pl, p, &s);
            res.into_iter()
                .filter(|r| r.1 == Code::Success)
                .map(|r| r.0)
                .collect()
        };
        assert_eq!(
            pass(&with_ns_sel(json!({"matchLabels": {"team": "b"}}))),
            vec!["b"]
        );
        assert_eq!(pass(&with_ns_sel(json!({}))), vec!["a", "b", "c"]);
        // An unlisted namespace exists with no labels.
        assert_eq!(
            pass(&with_ns_sel(
                json!({"matchExpressions": [{"key": "team", "operator": "DoesNotExist"}]})
            )),
            vec!["c"]
        );
    }

    #[test]
    fn add_and_remove_pod_update_counts() {
        let nodes = vec![node("a", Some("z1")), node("b", Some("z2"))];
        let repeller = Arc::new(pod(
            "r",
            "default",
            "a",
            &[],
            required("podAntiAffinity", vec![term("zone", &[("app", "web")])]),
        ));
        let s = snapshot(nodes, vec![(*repeller).clone()], vec![]);
        let pl = plugin(json!({}));
        let p = pod(
            "p",
            "default",
            "",
            &[("app", "web")],
            required("podAffinity", vec![term("zone", &[("app", "web")])]),
        );
        let mut state = CycleState::new();
        assert!(pl.pre_filter(&mut state, &p, &s).1.is_success());
        // First pod of its group: z2 is fine, z1 is repelled by the existing pod.
        assert_eq!(
            pl.filter(&state, &p, &s.nodes[0]).code(),
            Code::Unschedulable
        );
        assert!(pl.filter(&state, &p, &s.nodes[1]).is_success());

        // Preemption dry run: without the repeller, z1 passes.
        let mut removed = state.clone();
        assert!(pl
            .remove_pod(&mut removed, &p, &repeller, &s.nodes[0], &s)
            .is_success());
        assert!(pl.filter(&removed, &p, &s.nodes[0]).is_success());

        // A nominated matching pod on b: now only z2 satisfies the affinity.
        let nominated = Arc::new(pod("n", "default", "b", &[("app", "web")], Value::Null));
        let mut added = removed.clone();
        assert!(pl
            .add_pod(&mut added, &p, &nominated, &s.nodes[1], &s)
            .is_success());
        assert_eq!(
            pl.filter(&added, &p, &s.nodes[0]).code(),
            Code::UnschedulableAndUnresolvable
        );
        assert!(pl.filter(&added, &p, &s.nodes[1]).is_success());
        // Removing it again restores the "first pod" state (entries at zero are deleted).
        assert!(pl
            .remove_pod(&mut added, &p, &nominated, &s.nodes[1], &s)
            .is_success());
        assert!(pl.filter(&added, &p, &s.nodes[0]).is_success());
    }

    /// PreScore + Score + NormalizeScore over every node; None when PreScore skipped.
    fn run_score(
        pl: &InterPodAffinity,
        pod: &PodInfo,
        s: &Snapshot,
    ) -> Option<(Vec<i64>, Vec<i64>)> {
        let mut state = CycleState::new();
        let nodes: Vec<&NodeInfo> = s.nodes.iter().collect();
        let st = pl.pre_score(&mut state, pod, &nodes, s);
        if st.is_skip() {
            return None;
        }
        let raw: Vec<i64> = nodes
            .iter()
            .map(|n| pl.score(&state, pod, n).unwrap())
            .collect();
        let mut norm = raw.clone();
        assert!(pl.normalize(&state, pod, &mut norm).is_success());
        Some((raw, norm))
    }

    #[test]
    fn score_table() {
        let nodes = || {
            vec![
                node("a", Some("z1")),
                node("b", Some("z1")),
                node("c", Some("z2")),
                node("d", None),
            ]
        };
        let db = |n: &str, node: &str| pod(n, "default", node, &[("app", "db")], Value::Null);
        struct Case {
            name: &'static str,
            args: Value,
            existing: Vec<PodInfo>,
            pod: PodInfo,
            want: Option<(Vec<i64>, Vec<i64>)>,
        }
        let cases = vec![
            Case {
                name: "preferred affinity by zone",
                args: json!({}),
                existing: vec![db("x", "a"), db("y", "c"), db("z", "c")],
                pod: pod(
                    "p",
                    "default",
                    "",
                    &[],
                    preferred("podAffinity", vec![(10, term("zone", &[("app", "db")]))]),
                ),
                want: Some((vec![10, 10, 20, 0], vec![50, 50, 100, 0])),
            },
            Case {
                name: "preferred anti-affinity goes negative; min-max keeps order",
                args: json!({}),
                existing: vec![db("x", "a")],
                pod: pod(
                    "p",
                    "default",
                    "",
                    &[],
                    preferred(
                        "podAntiAffinity",
                        vec![(30, term("kubernetes.io/hostname", &[("app", "db")]))],
                    ),
                ),
                want: Some((vec![-30, 0, 0, 0], vec![0, 100, 100, 100])),
            },
            Case {
                name: "preferred affinity to nothing: skipped",
                args: json!({}),
                existing: vec![db("x", "a")],
                pod: pod(
                    "p",
                    "default",
                    "",
                    &[],
                    preferred("podAffinity", vec![(10, term("zone", &[("app", "none")]))]),
                ),
                want: None,
            },
            Case {
                name: "existing pod's required affinity counts hardPodAffinityWeight",
                args: json!({"hardPodAffinityWeight": 10}),
                existing: vec![pod(
                    "x",
                    "default",
                    "c",
                    &[],
                    required("podAffinity", vec![term("zone", &[("app", "web")])]),
                )],
                pod: pod("p", "default", "", &[("app", "web")], Value::Null),
                want: Some((vec![0, 0, 10, 0], vec![0, 0, 100, 0])),
            },
            Case {
                name: "hardPodAffinityWeight 0 disables it",
                args: json!({"hardPodAffinityWeight": 0}),
                existing: vec![pod(
                    "x",
                    "default",
                    "c",
                    &[],
                    required("podAffinity", vec![term("zone", &[("app", "web")])]),
                )],
                pod: pod("p", "default", "", &[("app", "web")], Value::Null),
                want: None,
            },
            Case {
                name: "existing pod's preferred anti-affinity toward the incoming pod",
                args: json!({}),
                existing: vec![pod(
                    "x",
                    "default",
                    "a",
                    &[],
                    preferred(
                        "podAntiAffinity",
                        vec![(5, term("zone", &[("app", "web")]))],
                    ),
                )],
                pod: pod("p", "default", "", &[("app", "web")], Value::Null),
                want: Some((vec![-5, -5, 0, 0], vec![0, 0, 100, 100])),
            },
            Case {
                name: "ignorePreferredTermsOfExistingPods skips when the pod has no preferences",
                args: json!({"ignorePreferredTermsOfExistingPods": true}),
                existing: vec![pod(
                    "x",
                    "default",
                    "a",
                    &[],
                    preferred(
                        "podAntiAffinity",
                        vec![(5, term("zone", &[("app", "web")]))],
                    ),
                )],
                pod: pod("p", "default", "", &[("app", "web")], Value::Null),
                want: None,
            },
        ];
        for c in cases {
            let s = snapshot(nodes(), c.existing, vec![]);
            assert_eq!(run_score(&plugin(c.args), &c.pod, &s), c.want, "{}", c.name);
        }
    }

    #[test]
    fn args_validation() {
        let profile = Profile::default();
        let bad = json!({"hardPodAffinityWeight": 101});
        let err = new(&FactoryArgs {
            args: Some(&bad),
            profile: &profile,
        })
        .err()
        .unwrap();
        assert!(err.contains("not in valid range [0, 100]"), "{err}");
        let ok = json!({"hardPodAffinityWeight": 100, "ignorePreferredTermsOfExistingPods": true});
        assert!(new(&FactoryArgs {
            args: Some(&ok),
            profile: &profile,
        })
        .is_ok());
    }

    #[test]
    fn pod_hints() {
        use QueueingHint::*;
        let target = pod(
            "p",
            "default",
            "",
            &[],
            json!({
                "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("zone", &[("app", "web")])]},
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term("zone", &[("app", "db")])]}
            }),
        );
        let web = pod("w", "default", "a", &[("app", "web")], Value::Null);
        let db = pod("d", "default", "a", &[("app", "db")], Value::Null);
        let other = pod("o", "default", "a", &[("app", "x")], Value::Null);
        let unassigned = pod("u", "default", "", &[("app", "web")], Value::Null);
        let h = |old: Option<&PodInfo>, new: Option<&PodInfo>| {
            InterPodAffinity::hint_pod(&target, old, new)
        };
        assert_eq!(h(None, Some(&web)), Queue);
        assert_eq!(h(None, Some(&other)), Skip);
        assert_eq!(h(None, Some(&unassigned)), Skip);
        assert_eq!(h(Some(&db), None), Queue);
        assert_eq!(h(Some(&web), None), Skip);
        assert_eq!(h(Some(&other), Some(&web)), Queue);
        assert_eq!(h(Some(&db), Some(&other)), Queue);
        assert_eq!(h(Some(&web), Some(&web)), Skip);
    }

    #[test]
    fn node_hints() {
        use QueueingHint::*;
        let aff = pod(
            "p",
            "default",
            "",
            &[],
            required("podAffinity", vec![term("zone", &[("app", "web")])]),
        );
        let anti = pod(
            "p",
            "default",
            "",
            &[],
            required("podAntiAffinity", vec![term("zone", &[("app", "web")])]),
        );
        let (z1, z2, none) = (
            node("n", Some("z1")),
            node("n", Some("z2")),
            node("n", None),
        );
        let h = |p: &PodInfo, old: Option<&Arc<Node>>, new: &Arc<Node>| {
            InterPodAffinity::hint_node(p, old.map(|n| &**n), Some(&**new))
        };
        // Affinity: a node with the key appears, or the key appears / changes value.
        assert_eq!(h(&aff, None, &z1), Queue);
        assert_eq!(h(&aff, None, &none), Skip);
        assert_eq!(h(&aff, Some(&none), &z1), Queue);
        assert_eq!(h(&aff, Some(&z1), &z2), Queue);
        assert_eq!(h(&aff, Some(&z1), &z1), Skip);
        assert_eq!(h(&aff, Some(&z1), &none), Skip);
        // Anti-affinity: any new node, or the key disappears / changes value.
        assert_eq!(h(&anti, None, &none), Queue);
        assert_eq!(h(&anti, Some(&z1), &none), Queue);
        assert_eq!(h(&anti, Some(&z1), &z2), Queue);
        assert_eq!(h(&anti, Some(&none), &z1), Skip);
        assert_eq!(h(&anti, Some(&z1), &z1), Skip);
    }
}
