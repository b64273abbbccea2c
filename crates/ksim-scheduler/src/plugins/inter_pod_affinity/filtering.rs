//! PreFilter, AddPod/RemovePod and Filter (upstream filtering.go): the per-topology counts of
//! matching pods (existing anti-affinity, the incoming pod's affinity and anti-affinity terms)
//! and the three checks Filter makes with them.

use std::sync::Arc;

use ksim_api::{Labels, Node};
use rustc_hash::FxHashMap;

use super::{
    incoming_term_matches, matches_all_incoming, InterPodAffinity,
    ERR_REASON_AFFINITY_RULES_NOT_MATCH, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH, NAME, PRE_FILTER_STATE_KEY,
};
use crate::framework::{
    Code, CycleState, FilterPlugin, FilterResult, PreFilterPlugin, PreFilterResult, Status,
};
use crate::node_info::{ClusterObjects, NodeFlags, NodeInfo, Snapshot};
use crate::pod_index::{NodeSlice, TermKind, TopologyColumn, ValueCounts};
use crate::pod_info::{AffinityTerm, PodInfo};

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
        if let Some(value) = node_labels.get(key) {
            self.add(key, value, delta);
        }
    }

    /// Adds `delta` to the pair (`key`, `value`).
    fn add(&mut self, key: &str, value: &str, delta: i64) {
        let i = match self.0.iter().position(|(k, _)| k == key) {
            Some(i) => i,
            None => {
                self.0.push((key.to_string(), FxHashMap::default()));
                self.0.len() - 1
            }
        };
        let inner = &mut self.0[i].1;
        let c = inner.entry(value.to_string()).or_insert(0);
        *c += delta;
        if *c == 0 {
            inner.remove(value);
            if inner.is_empty() {
                self.0.swap_remove(i);
            }
        }
    }
}

/// Topology counts as PreFilter finds them: shared per-value counts kept by the snapshot's pod
/// index (a term group's holders or targets, or counts walked for this cycle), each with the
/// column of its topology key (the counts are by the column's value ids); several sources of
/// one key add up. Copied into [`TopologyCounts`] only when a pod is added or removed for this
/// cycle (nominated pods, preemption's dry runs), so a cycle that adds none costs no copy
/// however many pods are counted.
#[derive(Debug, Clone, Default)]
struct Counts {
    /// Every count in every source is positive (the pod index keeps no zero entries).
    shared: Vec<(Arc<TopologyColumn>, Arc<ValueCounts>)>,
    /// The sum of `shared` once a pod was added or removed (then `shared` is empty).
    owned: Option<TopologyCounts>,
}

/// Adds every count of a source to owned counts, under the values of its ids.
fn add_source(o: &mut TopologyCounts, column: &TopologyColumn, counts: &ValueCounts) {
    for (id, c) in counts.iter() {
        if let Some(value) = column.value(id) {
            o.add(&column.key, value, c);
        }
    }
}

impl Counts {
    fn push(&mut self, column: Arc<TopologyColumn>, counts: Arc<ValueCounts>) {
        match &mut self.owned {
            Some(o) => add_source(o, &column, &counts),
            None => {
                if !counts.is_empty() {
                    self.shared.push((column, counts));
                }
            }
        }
    }

    /// `len(map) == 0`.
    fn is_empty(&self) -> bool {
        match &self.owned {
            Some(o) => o.is_empty(),
            None => self.shared.is_empty(),
        }
    }

    /// The count of the pair (`key`, the node's value of `key`); `value` is that value (the
    /// node has the key).
    fn get(&self, key: &str, value: &str, slice: NodeSlice, node: &NodeInfo) -> i64 {
        match &self.owned {
            Some(o) => o.get(key, value),
            None => self
                .shared
                .iter()
                .filter(|(c, _)| c.key == key)
                .map(|(c, m)| m.get(c.id_of_node(slice, node)))
                .sum(),
        }
    }

    /// Whether some counted pair with a positive count is one of the node's labels.
    fn any_positive(&self, slice: NodeSlice, node: &NodeInfo) -> bool {
        match &self.owned {
            Some(o) => {
                let labels = node.labels();
                o.0.iter().any(|(k, m)| {
                    labels
                        .get(k)
                        .is_some_and(|v| m.get(v).is_some_and(|&c| c > 0))
                })
            }
            // No count is negative, so a positive count makes its sum positive (ABSENT and
            // UNKNOWN read as 0).
            None => self
                .shared
                .iter()
                .any(|(c, m)| m.get(c.id_of_node(slice, node)) > 0),
        }
    }

    /// The counts as one owned map, to be updated.
    fn owned(&mut self) -> &mut TopologyCounts {
        let shared = std::mem::take(&mut self.shared);
        self.owned.get_or_insert_with(|| {
            let mut o = TopologyCounts::default();
            for (c, m) in &shared {
                add_source(&mut o, c, m);
            }
            o
        })
    }
}

// ---- PreFilter / Filter --------------------------------------------------------------------

/// `preFilterState`.
#[derive(Debug, Clone)]
struct PreFilterState {
    /// Existing pods' required anti-affinity terms matching the incoming pod.
    existing_anti_affinity_counts: Counts,
    /// Existing pods matching all of the incoming pod's required affinity terms.
    affinity_counts: Counts,
    /// Existing pods matching each of the incoming pod's required anti-affinity terms.
    anti_affinity_counts: Counts,
    /// The incoming pod's namespace labels (for existing pods' namespace selectors).
    namespace_labels: Labels,
    /// Whether the incoming pod matches all its own required affinity terms (the "first pod of
    /// a group" rule); it does not change when pods are added or removed.
    matches_own_affinity: bool,
    /// The snapshot's nodes, for reading the columns by node index.
    slice: NodeSlice,
    /// The same as (address, length), to place a run of nodes without looking node by node.
    nodes_at: (usize, usize),
    /// The column of the topology key of the incoming pod's one required affinity term (none
    /// for no term or several), for Filter's checks by node index ([`Self::reject_at`]).
    affinity_column: Option<Arc<TopologyColumn>>,
    /// The one column that the affinity term's column (if any) and every shared source's
    /// column are (the same `Arc`), when they are: a node's value id is then read once for
    /// all of Filter's checks. Set in PreFilter, cleared with the shared counts.
    common_column: Option<Arc<TopologyColumn>>,
}

/// Whether a source counts a pod at node index `i` (its column has no entry there when the
/// node is not one the column was built from, which reads as 0: the callers only ask about
/// nodes of the snapshot the columns describe).
#[inline]
fn positive_at(sources: &[(Arc<TopologyColumn>, Arc<ValueCounts>)], i: usize) -> bool {
    sources
        .iter()
        .any(|(c, m)| c.ids.get(i).is_some_and(|&id| m.get(id) > 0))
}

impl PreFilterState {
    /// The snapshot index of the first of `nodes` when they are consecutive nodes of the
    /// snapshot this state was built for (a sub-slice of its nodes); `None` for no nodes or
    /// nodes elsewhere (copies).
    #[inline]
    fn run_start(&self, nodes: &[NodeInfo]) -> Option<usize> {
        let size = std::mem::size_of::<NodeInfo>();
        let (base, len) = self.nodes_at;
        let off = (nodes.as_ptr() as usize).wrapping_sub(base);
        let from = off / size;
        (!nodes.is_empty() && off % size == 0 && from <= len && nodes.len() <= len - from)
            .then_some(from)
    }

    /// Whether Filter's checks can be read by node index ([`Self::reject_at`]): every count is
    /// still the pod index's shared counts by value id (no pod was added or removed for this
    /// cycle), and the incoming pod has at most one required affinity term, whose column is
    /// known.
    fn by_index(&self, pod: &PodInfo) -> bool {
        self.existing_anti_affinity_counts.owned.is_none()
            && self.affinity_counts.owned.is_none()
            && self.anti_affinity_counts.owned.is_none()
            && match pod.required_affinity.len() {
                0 => true,
                1 => self.affinity_column.is_some(),
                _ => false,
            }
    }

    /// What [`filter`](FilterPlugin::filter) returns on the snapshot's node `i`, read from the
    /// columns by index: `None` when it passes, else its shared rejection. Only when
    /// [`Self::by_index`]; `i` must be an index of the snapshot the state was built for.
    ///
    /// The same three checks in the same order: every count is positive and every source of a
    /// count set is of a key of one of the pod's terms, so "some term's key has a positive sum
    /// at the node's value" is "some source is positive at the node's value id" (a node
    /// without the key reads [`TopologyColumn::ABSENT`], which has no count).
    #[inline(always)]
    fn reject_at(&self, first_of_group: bool, i: usize) -> Option<&'static Status> {
        if let Some(column) = &self.common_column {
            // One column for everything: the same checks with the id read once (a missing
            // entry reads as ABSENT, which has no count, as `positive_at` reads it).
            let id = column.ids.get(i).copied().unwrap_or(TopologyColumn::ABSENT);
            let positive = |c: &Counts| c.shared.iter().any(|(_, m)| m.get(id) > 0);
            if self.affinity_column.is_some()
                && (id == TopologyColumn::ABSENT
                    || !(positive(&self.affinity_counts) || first_of_group))
            {
                return Some(&AFFINITY_RULES_NOT_MATCH);
            }
            if positive(&self.anti_affinity_counts) {
                return Some(&ANTI_AFFINITY_RULES_NOT_MATCH);
            }
            if positive(&self.existing_anti_affinity_counts) {
                return Some(&EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH);
            }
            return None;
        }
        if let Some(column) = &self.affinity_column {
            // `satisfyPodAffinity` with one term: the node has the key, and a matching pod is
            // in its domain or the pod may be the first of its group.
            let has_key = column
                .ids
                .get(i)
                .is_some_and(|&id| id != TopologyColumn::ABSENT);
            if !has_key || !(positive_at(&self.affinity_counts.shared, i) || first_of_group) {
                return Some(&AFFINITY_RULES_NOT_MATCH);
            }
        }
        if positive_at(&self.anti_affinity_counts.shared, i) {
            return Some(&ANTI_AFFINITY_RULES_NOT_MATCH);
        }
        if positive_at(&self.existing_anti_affinity_counts.shared, i) {
            return Some(&EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH);
        }
        None
    }

    /// The "first pod of a group" exception of `satisfyPodAffinity`, the same for every node.
    fn first_of_group(&self) -> bool {
        self.affinity_counts.is_empty() && self.matches_own_affinity
    }

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
        // The counts become owned below: Filter reads them by label from now on.
        self.affinity_column = None;
        self.common_column = None;
        let labels = &node.metadata.labels;
        for t in &other.required_anti_affinity {
            if t.matches(pod, &self.namespace_labels) {
                self.existing_anti_affinity_counts
                    .owned()
                    .update(labels, &t.topology_key, delta);
            }
        }
        if matches_all_incoming(&pod.required_affinity, other, objects) {
            for t in &pod.required_affinity {
                self.affinity_counts
                    .owned()
                    .update(labels, &t.topology_key, delta);
            }
        }
        for t in &pod.required_anti_affinity {
            if incoming_term_matches(t, other, objects) {
                self.anti_affinity_counts
                    .owned()
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

/// Per value of `t`'s topology key, the bound pods the incoming pod's term `t` selects: the
/// pod index's count when bound pods carry the same term (of `kind`, `weight`) and it can keep
/// one, else counted now over the pods the selector may select.
pub(super) fn incoming_term_counts(
    snapshot: &Snapshot,
    kind: TermKind,
    weight: i32,
    t: &AffinityTerm,
) -> (Arc<TopologyColumn>, Arc<ValueCounts>) {
    if let Some(g) = snapshot.pod_index.group(kind, weight, t) {
        if let Some(targets) = &g.targets {
            return (g.column.clone(), targets.clone());
        }
    }
    let objects = &*snapshot.objects;
    let column = snapshot.pod_index.column(&t.topology_key, &snapshot.nodes);
    let mut m = ValueCounts::default();
    snapshot.pod_index.for_each_candidate(&t.selector, |i, ep| {
        if let Some(&id) = column.ids.get(i) {
            if id != TopologyColumn::ABSENT && incoming_term_matches(t, ep, objects) {
                m.add(id, 1);
            }
        }
    });
    (column, Arc::new(m))
}

impl PreFilterPlugin for InterPodAffinity {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let objects = &*snapshot.objects;
        let namespace_labels = objects.namespace_labels(pod.namespace()).into_owned();

        // Upstream walks every pod (or every pod with required anti-affinity) and sums per
        // topology pair. The snapshot's pod index keeps those sums per distinct term (see
        // `pod_index`): each term group whose selector can match is matched once, exactly, and
        // its per-value counts are taken whole. Counts are sums, so grouping does not change
        // them.

        // getExistingAntiAffinityCounts: existing pods' required anti-affinity terms.
        let mut existing = Counts::default();
        snapshot.pod_index.for_each_group_candidate(
            TermKind::RequiredAntiAffinity,
            pod.labels(),
            |g| {
                if g.term.matches(pod, &namespace_labels) {
                    existing.push(g.column.clone(), g.holders.clone());
                }
            },
        );

        // getIncomingAffinityAntiAffinityCounts: every pod on every node.
        let mut affinity = Counts::default();
        let mut affinity_column = None;
        let mut anti_affinity = Counts::default();
        let has_required =
            !pod.required_affinity.is_empty() || !pod.required_anti_affinity.is_empty();
        match pod.required_affinity.as_slice() {
            [] => {}
            [t] => {
                let (column, counts) =
                    incoming_term_counts(snapshot, TermKind::RequiredAffinity, 0, t);
                affinity_column = Some(column.clone());
                affinity.push(column, counts);
            }
            [first, ..] => {
                // Several terms: a pod counts when it matches all of them, so the pods are
                // walked (a pod matching all the terms matches the first).
                let counts = affinity.owned();
                snapshot
                    .pod_index
                    .for_each_candidate(&first.selector, |i, ep| {
                        if let Some(labels) = snapshot.nodes.get(i).map(NodeInfo::labels) {
                            if matches_all_incoming(&pod.required_affinity, ep, objects) {
                                for t in &pod.required_affinity {
                                    counts.update(labels, &t.topology_key, 1);
                                }
                            }
                        }
                    });
            }
        }
        for t in &pod.required_anti_affinity {
            let (column, counts) =
                incoming_term_counts(snapshot, TermKind::RequiredAntiAffinity, 0, t);
            anti_affinity.push(column, counts);
        }

        if existing.is_empty() && !has_required {
            return (None, Status::skip());
        }

        // The column every check reads, when they all read one (see `common_column`).
        let common_column = {
            let mut columns = affinity_column.iter().chain(
                [&affinity, &anti_affinity, &existing]
                    .into_iter()
                    .flat_map(|c| c.shared.iter().map(|(column, _)| column)),
            );
            columns
                .next()
                .cloned()
                .filter(|first| columns.all(|c| Arc::ptr_eq(c, first)))
        };
        state.write(
            PRE_FILTER_STATE_KEY,
            PreFilterState {
                common_column,
                existing_anti_affinity_counts: existing,
                affinity_counts: affinity,
                anti_affinity_counts: anti_affinity,
                namespace_labels,
                matches_own_affinity: matches_all_incoming(&pod.required_affinity, pod, objects),
                slice: NodeSlice::of(&snapshot.nodes),
                nodes_at: (snapshot.nodes.as_ptr() as usize, snapshot.nodes.len()),
                affinity_column,
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
fn satisfy_pod_affinity(s: &PreFilterState, pod: &PodInfo, node: &NodeInfo) -> bool {
    let mut pods_exist = true;
    let labels = node.labels();
    for t in &pod.required_affinity {
        match labels.get(&t.topology_key) {
            Some(v) => {
                if s.affinity_counts.get(&t.topology_key, v, s.slice, node) <= 0 {
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
fn satisfy_pod_anti_affinity(s: &PreFilterState, pod: &PodInfo, node: &NodeInfo) -> bool {
    if s.anti_affinity_counts.is_empty() {
        return true;
    }
    let counts = &s.anti_affinity_counts;
    match (&counts.owned, pod.required_anti_affinity.as_slice()) {
        // One term, so one source, of its key (the common case): the node's count by its value
        // id.
        (None, [_]) if counts.shared.len() == 1 => {
            let (column, m) = &counts.shared[0];
            m.get(column.id_of_node(s.slice, node)) <= 0
        }
        _ => {
            let labels = node.labels();
            !pod.required_anti_affinity.iter().any(|t| {
                labels
                    .get(&t.topology_key)
                    .is_some_and(|v| counts.get(&t.topology_key, v, s.slice, node) > 0)
            })
        }
    }
}

/// `satisfyExistingPodsAntiAffinity`: no counted pair is one of the node's labels.
fn satisfy_existing_pods_anti_affinity(s: &PreFilterState, node: &NodeInfo) -> bool {
    !s.existing_anti_affinity_counts.any_positive(s.slice, node)
}

// Filter's three fixed rejections, shared by every node they reject: rejecting the nodes of a
// required anti-affinity group allocates nothing and passes through the framework untouched.
static AFFINITY_RULES_NOT_MATCH: Status = Status::fixed(
    Code::UnschedulableAndUnresolvable,
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    NAME,
);
static ANTI_AFFINITY_RULES_NOT_MATCH: Status = Status::fixed(
    Code::Unschedulable,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    NAME,
);
static EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH: Status = Status::fixed(
    Code::Unschedulable,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    NAME,
);

impl FilterPlugin for InterPodAffinity {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> FilterResult {
        let s = match pre_filter_state(state) {
            Ok(s) => s,
            Err(e) => return e.into(),
        };
        if !satisfy_pod_affinity(s, pod, node) {
            return FilterResult::shared(&AFFINITY_RULES_NOT_MATCH);
        }
        if !satisfy_pod_anti_affinity(s, pod, node) {
            return FilterResult::shared(&ANTI_AFFINITY_RULES_NOT_MATCH);
        }
        if !satisfy_existing_pods_anti_affinity(s, node) {
            return FilterResult::shared(&EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH);
        }
        FilterResult::PASS
    }

    fn has_leading_passes(&self) -> bool {
        true
    }

    /// The nodes `filter` passes from node `from` on, read by node index from the value-id
    /// columns and the shared counts (a few array reads per node, no label lookup), stopping
    /// at the first node it rejects or that has a flag of `stop`.
    fn leading_passes_in(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        from: usize,
        to: usize,
        stop: NodeFlags,
        limit: usize,
    ) -> Option<usize> {
        let Ok(s) = pre_filter_state(state) else {
            return Some(0);
        };
        let flags = &snapshot.resource_columns().flags;
        let to = to
            .min(flags.len())
            .min(snapshot.nodes.len())
            .min(from.saturating_add(limit));
        if from >= to {
            return Some(0);
        }
        // The state must describe this snapshot's nodes, by index.
        if !s.by_index(pod)
            || s.nodes_at != (snapshot.nodes.as_ptr() as usize, snapshot.nodes.len())
        {
            return Some(0);
        }
        let first = s.first_of_group();
        let flags = &flags[from..to];
        let mut k = 0;
        while k < flags.len()
            && !flags[k].intersects(stop)
            && s.reject_at(first, from + k).is_none()
        {
            k += 1;
        }
        Some(k)
    }

    /// [`leading_passes_in`](Self::leading_passes_in) over a run of the snapshot's own nodes
    /// (found by address); 0 for nodes that are not.
    fn leading_passes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[NodeInfo],
        stop: NodeFlags,
        limit: usize,
    ) -> usize {
        let Ok(s) = pre_filter_state(state) else {
            return 0;
        };
        let nodes = &nodes[..limit.min(nodes.len())];
        let Some(from) = s.run_start(nodes) else {
            return 0;
        };
        if !s.by_index(pod) {
            return 0;
        }
        let first = s.first_of_group();
        nodes
            .iter()
            .enumerate()
            .position(|(j, n)| n.flags().intersects(stop) || s.reject_at(first, from + j).is_some())
            .unwrap_or(nodes.len())
    }

    /// A run of the snapshot's own nodes that `filter` rejects with the same shared status
    /// (the nodes of the pods a required anti-affinity term repels, say), read by index as in
    /// [`leading_passes_in`](Self::leading_passes_in).
    fn leading_rejections(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[NodeInfo],
        stop: NodeFlags,
        limit: usize,
    ) -> (usize, Option<&'static Status>) {
        let Ok(s) = pre_filter_state(state) else {
            return (0, None);
        };
        let nodes = &nodes[..limit.min(nodes.len())];
        let Some(from) = s.run_start(nodes) else {
            return (0, None);
        };
        if !s.by_index(pod) {
            return (0, None);
        }
        let first = s.first_of_group();
        let at = |j: usize, n: &NodeInfo| {
            if n.flags().intersects(stop) {
                return None;
            }
            s.reject_at(first, from + j)
        };
        let Some(status) = at(0, &nodes[0]) else {
            return (0, None);
        };
        let mut k = 1;
        while k < nodes.len() && at(k, &nodes[k]).is_some_and(|t| std::ptr::eq(t, status)) {
            k += 1;
        }
        (k, Some(status))
    }
}
