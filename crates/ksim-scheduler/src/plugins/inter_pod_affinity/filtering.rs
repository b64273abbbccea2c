//! PreFilter, AddPod/RemovePod and Filter (upstream filtering.go): the per-topology counts of
//! matching pods (existing anti-affinity, the incoming pod's affinity and anti-affinity terms)
//! and the three checks Filter makes with them.

use std::sync::Arc;

use ksim_api::{Labels, Node};
use rustc_hash::FxHashMap;

use super::{
    incoming_term_matches, matches_all_incoming, InterPodAffinity,
    ERR_REASON_AFFINITY_RULES_NOT_MATCH, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH, PRE_FILTER_STATE_KEY,
};
use crate::framework::{
    CycleState, FilterPlugin, FilterResult, PreFilterPlugin, PreFilterResult, Status,
};
use crate::node_info::{ClusterObjects, NodeInfo, Snapshot};
use crate::pod_index::TermKind;
use crate::pod_info::PodInfo;

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
