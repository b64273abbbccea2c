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

use crate::framework::{
    ClusterEventKind, ClusterEventObjects, EnqueueExtensions, FactoryArgs, FilterPlugin, Plugin,
    PluginRef, PreFilterPlugin, PreScorePlugin, QueueingHint, ScorePlugin,
};
use crate::node_info::ClusterObjects;
use crate::pod_info::{AffinityTerm, PodInfo};

mod filtering;
mod scoring;
#[cfg(test)]
mod tests;

pub const NAME: &str = "InterPodAffinity";

pub const ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH: &str =
    "node(s) didn't satisfy existing pods anti-affinity rules";
pub const ERR_REASON_AFFINITY_RULES_NOT_MATCH: &str = "node(s) didn't match pod affinity rules";
pub const ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH: &str =
    "node(s) didn't match pod anti-affinity rules";

/// Upstream's cycle-state keys (`"PreFilter" + Name`, `"PreScore" + Name`).
static PRE_FILTER_STATE_KEY: &str = "PreFilterInterPodAffinity";
static PRE_SCORE_STATE_KEY: &str = "PreScoreInterPodAffinity";

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
            s => s.matches(&objects.namespace_labels(ns)),
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
