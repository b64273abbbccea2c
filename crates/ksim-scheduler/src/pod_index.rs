//! Indexes over the pods bound in a [`Snapshot`](crate::node_info::Snapshot), so that the
//! affinity and spreading plugins look at the pods a selector can select instead of every pod
//! of the cluster, and read per-topology counts that bind and unbind keep current instead of
//! recounting them every cycle.
//!
//! - `pods_by_label`: bound pods by label `(key, value)` ([`PodIndex::for_each_candidate`]).
//! - Term groups ([`TermGroup`]): the pod-affinity terms of bound pods, grouped by kind,
//!   weight and term (namespaces, namespace selector, label selector, topology key): the
//!   replicas of a Deployment share one group. Each group counts, per value of its topology
//!   key, the bound pods *carrying* the term (`holders`) and the bound pods the term
//!   *selects* (`targets`). Upstream's InterPodAffinity walks every pod with affinity terms in
//!   each cycle and sums per topology value; those sums are sums of these counts, so a cycle
//!   matches each distinct term once and a node costs a hash lookup. Groups are filed under
//!   the first `In` requirement of their label selector (one key, its values), or in a list of
//!   their own when the selector has no `In` requirement, so that a pod's labels find the
//!   groups that may select it.
//!
//! Candidates only narrow: whoever asks still matches the selector (and namespaces) exactly,
//! so a result computed from the candidates is the result over all pods. Integer counts are
//! all anyone computes from them (InterPodAffinity's and PodTopologySpread's), so the order of
//! candidates does not matter, and it is not kept: the sets are hash sets keyed by the pods'
//! addresses, whose iteration order may differ between runs. A new reader that needs an
//! order must impose one (sort) rather than take the sets'.
//!
//! Entries carry the node's index in `Snapshot::nodes` and counts are by the node's labels at
//! the time the pod was added; the snapshot rebuilds the index when node indices or node labels
//! change (a node added, removed, moved or relabelled).
//!
//! Per-value counts are by value id: each topology key a group uses has a [`TopologyColumn`]
//! (per node index, the id of the node's value), and [`ValueCounts`] is an array by id. So
//! bind and unbind update a count without touching a string, and InterPodAffinity's Filter and
//! Score read a node's count with two array reads ([`TopologyColumn::id_of_node`], by the
//! node's index when it is the snapshot's own `NodeInfo`).

use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::Arc;

use ksim_api::meta::SelectorOp;
use ksim_api::{Labels, Selector};
use rustc_hash::{FxBuildHasher, FxHashMap};

use crate::node_info::NodeInfo;
use crate::pod_info::{AffinityTerm, PodInfo};
use crate::spread_index::{SpreadCache, SpreadQuery, SpreadView};

/// Bound pods keyed by the address of their `PodInfo` (UIDs need not be unique in hand-written
/// inputs; an `Arc` in the snapshot is), with their node index. Unordered: a bind and an
/// unbind each cost one probe (an insertion-ordered map's removal costs two and moves an
/// entry), and every reader only counts (see the module doc).
type PodSet = FxHashMap<usize, (u32, Arc<PodInfo>)>;

fn key_of(p: &PodInfo) -> usize {
    p as *const PodInfo as usize
}

/// Values per chunk of [`ValueCounts`].
const CHUNK: usize = 64;

/// Counts per value of a topology key, by the value's id in the key's [`TopologyColumn`]: an
/// array read per node instead of a string hash. Counts are never negative, and "empty" means
/// "no value has a positive count" (upstream's map with no entry).
///
/// The counts are shared with the cycle states that read them (an `Arc`), and bind/unbind
/// update them while a cycle state may still hold them (the pod is assumed before its binding
/// cycle ends): the array is in chunks of [`CHUNK`] values, each behind its own `Arc`, so that
/// such an update copies the chunk pointers and one chunk, not every count. A chunk with no
/// count is not allocated.
#[derive(Debug, Clone, Default)]
pub struct ValueCounts {
    chunks: Vec<Option<Arc<[i64; CHUNK]>>>,
    /// Values with a positive count.
    positive: usize,
}

impl ValueCounts {
    /// The count of value `id` (0 for [`TopologyColumn::ABSENT`] and
    /// [`TopologyColumn::UNKNOWN`], which are never counted).
    #[inline]
    pub fn get(&self, id: u32) -> i64 {
        let id = id as usize;
        match self.chunks.get(id / CHUNK) {
            Some(Some(c)) => c[id % CHUNK],
            _ => 0,
        }
    }

    /// No value has a positive count.
    pub fn is_empty(&self) -> bool {
        self.positive == 0
    }

    /// The values with a positive count, by id, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, i64)> + '_ {
        self.chunks.iter().enumerate().flat_map(|(k, c)| {
            c.iter().flat_map(move |c| {
                c.iter()
                    .enumerate()
                    .filter(|(_, &n)| n > 0)
                    .map(move |(j, &n)| ((k * CHUNK + j) as u32, n))
            })
        })
    }

    /// Adds `delta` to value `id`'s count, as upstream's map would: a count reaching zero or
    /// below is gone (reads as 0), and removing from a value with no count does nothing.
    /// Nothing for [`TopologyColumn::ABSENT`] (a node without the key is not counted).
    pub fn add(&mut self, id: u32, delta: i64) {
        if id == TopologyColumn::ABSENT || delta == 0 {
            return;
        }
        let id = id as usize;
        let k = id / CHUNK;
        if delta < 0 && self.get(id as u32) == 0 {
            return;
        }
        if self.chunks.len() <= k {
            self.chunks.resize(k + 1, None);
        }
        let chunk = Arc::make_mut(self.chunks[k].get_or_insert_with(|| Arc::new([0; CHUNK])));
        let c = &mut chunk[id % CHUNK];
        let before = *c;
        *c = (before + delta).max(0);
        match (before > 0, *c > 0) {
            (false, true) => self.positive += 1,
            (true, false) => self.positive -= 1,
            _ => {}
        }
    }
}

/// The values of one topology key on the snapshot's nodes, interned: per node index the id of
/// the node's value, so that a plugin reads a node's count with an array read and a lookup by
/// integer instead of a label lookup and a string hash. Built from the nodes the pod index was
/// built with; the snapshot rebuilds the pod index (and so its columns) whenever node indices
/// or node labels change, so a column always describes the snapshot's current nodes.
#[derive(Debug, Default)]
pub struct TopologyColumn {
    pub key: String,
    /// Per node index: the id of the node's value of `key`, or [`TopologyColumn::ABSENT`].
    pub ids: Vec<u32>,
    /// The value of each id, ids in order of first appearance over the nodes.
    pub values: Vec<String>,
    by_value: FxHashMap<String, u32>,
}

impl TopologyColumn {
    /// The node lacks the key.
    pub const ABSENT: u32 = u32::MAX;
    /// A value no node of the column has (no count is ever kept under it).
    pub const UNKNOWN: u32 = u32::MAX - 1;

    fn build(key: &str, nodes: &[NodeInfo]) -> TopologyColumn {
        let mut c = TopologyColumn {
            key: key.to_string(),
            ids: Vec::with_capacity(nodes.len()),
            ..Default::default()
        };
        for n in nodes {
            let id = match n.labels().get(key) {
                None => Self::ABSENT,
                Some(v) => match c.by_value.get(v.as_str()) {
                    Some(&id) => id,
                    None => {
                        let id = c.values.len() as u32;
                        c.values.push(v.clone());
                        c.by_value.insert(v.clone(), id);
                        id
                    }
                },
            };
            c.ids.push(id);
        }
        c
    }

    /// The id of a value ([`UNKNOWN`](Self::UNKNOWN) when no node has it).
    pub fn id_of_value(&self, value: &str) -> u32 {
        self.by_value.get(value).copied().unwrap_or(Self::UNKNOWN)
    }

    /// The id of the value of the key in `labels` ([`ABSENT`](Self::ABSENT) without the key).
    pub fn id_of_labels(&self, labels: &Labels) -> u32 {
        match labels.get(&self.key) {
            None => Self::ABSENT,
            Some(v) => self.id_of_value(v),
        }
    }

    /// The id of `node`'s value: read by the node's index when `node` is the snapshot's own
    /// `NodeInfo` (`slice` describes the snapshot's nodes this column was built from), looked
    /// up by label otherwise (a copy with nominated pods, a preemption dry run's copy).
    #[inline]
    pub fn id_of_node(&self, slice: NodeSlice, node: &NodeInfo) -> u32 {
        match slice.index_of(node).and_then(|i| self.ids.get(i)) {
            Some(&id) => id,
            None => self.id_of_labels(node.labels()),
        }
    }

    /// The value of an id (`None` for [`ABSENT`](Self::ABSENT) and [`UNKNOWN`](Self::UNKNOWN)).
    pub fn value(&self, id: u32) -> Option<&str> {
        self.values.get(id as usize).map(String::as_str)
    }
}

/// Where the snapshot's `NodeInfo`s are in memory, so that a plugin given a `&NodeInfo` can
/// tell whether it is the snapshot's `i`-th node (by address: no unsafe code, no guess; a
/// `NodeInfo` elsewhere is simply not found). Taken from the snapshot in PreFilter/PreScore and
/// used in the same cycle, while the snapshot cannot change.
#[derive(Debug, Clone, Copy, Default)]
pub struct NodeSlice {
    base: usize,
    len: usize,
}

impl NodeSlice {
    pub fn of(nodes: &[NodeInfo]) -> NodeSlice {
        NodeSlice {
            base: nodes.as_ptr() as usize,
            len: nodes.len(),
        }
    }

    /// `Some(i)` when `node` is `nodes[i]` of the slice this was taken from.
    #[inline]
    pub fn index_of(self, node: &NodeInfo) -> Option<usize> {
        let size = std::mem::size_of::<NodeInfo>();
        let off = (node as *const NodeInfo as usize).wrapping_sub(self.base);
        let i = off / size;
        (i < self.len && off.is_multiple_of(size)).then_some(i)
    }
}

/// The four kinds of pod-affinity terms a pod can carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TermKind {
    RequiredAffinity,
    RequiredAntiAffinity,
    PreferredAffinity,
    PreferredAntiAffinity,
}

impl TermKind {
    pub const ALL: [TermKind; 4] = [
        TermKind::RequiredAffinity,
        TermKind::RequiredAntiAffinity,
        TermKind::PreferredAffinity,
        TermKind::PreferredAntiAffinity,
    ];

    /// The pod's terms of this kind, with their weights (0 for required terms).
    pub fn terms(self, p: &PodInfo) -> impl Iterator<Item = (&AffinityTerm, i32)> {
        let (req, pref) = match self {
            TermKind::RequiredAffinity => (&p.required_affinity[..], &[][..]),
            TermKind::RequiredAntiAffinity => (&p.required_anti_affinity[..], &[][..]),
            TermKind::PreferredAffinity => (&[][..], &p.preferred_affinity[..]),
            TermKind::PreferredAntiAffinity => (&[][..], &p.preferred_anti_affinity[..]),
        };
        req.iter()
            .map(|t| (t, 0))
            .chain(pref.iter().map(|w| (&w.term, w.weight)))
    }
}

/// One distinct (kind, weight, term) among the bound pods' affinity terms.
#[derive(Debug, Clone)]
pub struct TermGroup {
    pub kind: TermKind,
    /// The preferred term's weight; 0 for required terms.
    pub weight: i32,
    pub term: AffinityTerm,
    /// The column of the term's topology key: the ids `holders` and `targets` count by.
    pub column: Arc<TopologyColumn>,
    /// How many terms of bound pods are in the group (a pod listing the term twice counts
    /// twice, as upstream processes each listed term).
    carried: usize,
    /// Per value of the topology key: the terms in the group carried by pods on nodes with that
    /// value (nodes without the key are not counted, as upstream skips them).
    pub holders: Arc<ValueCounts>,
    /// Per value of the topology key: the bound pods this term selects, as an incoming pod's
    /// term selects them (its namespaces, then its label selector). Kept only when the
    /// namespace selector is absent or empty, so that namespace labels cannot change the
    /// answer; `None` otherwise (the caller counts by walking the pods).
    pub targets: Option<Arc<ValueCounts>>,
}

/// Whether `t` selects `p` as an incoming pod's term does (upstream: the term after
/// `mergeAffinityTermNamespacesIfNotEmpty`) when its namespace selector is absent (`Nothing`)
/// or empty (every namespace).
fn selects_without_ns_labels(t: &AffinityTerm, p: &PodInfo) -> bool {
    let ns_ok = t.namespaces.contains(p.namespace())
        || matches!(&t.namespace_selector, s @ Selector::Requirements(_) if s.is_empty());
    ns_ok && t.selector.matches(p.labels())
}

/// Whether targets can be counted for `t` without namespace labels.
pub fn targets_countable(t: &AffinityTerm) -> bool {
    match &t.namespace_selector {
        Selector::Nothing => true,
        s => s.is_empty(),
    }
}

/// Adds `delta` to the count of value `id` (nothing for a node without the key).
fn add_count(m: &mut Arc<ValueCounts>, id: u32, delta: i64) {
    if id == TopologyColumn::ABSENT {
        return;
    }
    Arc::make_mut(m).add(id, delta);
}

/// The columns of the topology keys asked for so far. Derived data behind a mutex: PreFilter
/// may ask for a key no term group uses yet through a shared reference.
#[derive(Default)]
struct ColumnCache(std::sync::Mutex<FxHashMap<String, Arc<TopologyColumn>>>);

impl Clone for ColumnCache {
    fn clone(&self) -> Self {
        let m = self.0.lock().unwrap_or_else(|e| e.into_inner());
        ColumnCache(std::sync::Mutex::new(m.clone()))
    }
}

impl std::fmt::Debug for ColumnCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ColumnCache")
    }
}

impl ColumnCache {
    fn get(&self, key: &str, nodes: &[NodeInfo]) -> Arc<TopologyColumn> {
        let mut m = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = m.get(key) {
            return c.clone();
        }
        let c = Arc::new(TopologyColumn::build(key, nodes));
        m.insert(key.to_string(), c.clone());
        c
    }

    fn get_mut(&mut self, key: &str, nodes: &[NodeInfo]) -> Arc<TopologyColumn> {
        let m = self.0.get_mut().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = m.get(key) {
            return c.clone();
        }
        let c = Arc::new(TopologyColumn::build(key, nodes));
        m.insert(key.to_string(), c.clone());
        c
    }
}

/// The first `In` requirement of a selector, with its values deduplicated; `Err(())` when the
/// selector selects nothing, `Ok(None)` when it has no `In` requirement.
fn first_in(selector: &Selector) -> Result<Option<(&str, Vec<&str>)>, ()> {
    match selector {
        Selector::Nothing => Err(()),
        Selector::Requirements(reqs) => Ok(reqs.iter().find(|r| r.op == SelectorOp::In).map(|r| {
            let mut values: Vec<&str> = r.values.iter().map(String::as_str).collect();
            values.sort_unstable();
            values.dedup();
            (r.key.as_str(), values)
        })),
    }
}

/// The term groups of the bound pods.
#[derive(Debug, Clone, Default)]
struct TermGroups {
    /// Slots; a removed group leaves `None`, reused through `free`.
    groups: Vec<Option<TermGroup>>,
    free: Vec<u32>,
    /// Hash of (kind, weight, term) → the groups with that hash.
    by_hash: FxHashMap<u64, Vec<u32>>,
    /// Label key → label value → groups whose selector's first `In` requirement lists it.
    by_label: FxHashMap<String, FxHashMap<String, Vec<u32>>>,
    /// Groups whose selector has no `In` requirement (they may select anything).
    other: Vec<u32>,
}

fn group_hash(kind: TermKind, weight: i32, t: &AffinityTerm) -> u64 {
    let mut h = FxBuildHasher.build_hasher();
    kind.hash(&mut h);
    weight.hash(&mut h);
    t.hash(&mut h);
    h.finish()
}

fn remove_id(v: &mut Vec<u32>, id: u32) {
    if let Some(k) = v.iter().position(|&x| x == id) {
        v.swap_remove(k);
    }
}

impl TermGroups {
    fn find(&self, kind: TermKind, weight: i32, t: &AffinityTerm) -> Option<u32> {
        self.by_hash
            .get(&group_hash(kind, weight, t))?
            .iter()
            .copied()
            .find(|&id| {
                self.groups[id as usize]
                    .as_ref()
                    .is_some_and(|g| g.kind == kind && g.weight == weight && g.term == *t)
            })
    }

    fn get(&self, id: u32) -> Option<&TermGroup> {
        self.groups.get(id as usize).and_then(Option::as_ref)
    }

    /// Calls `f` for every group whose selector may select a pod labelled `labels` (each
    /// once: a group is filed under one label key, and `labels` has one value per key).
    fn for_each_candidate(&self, labels: &Labels, mut f: impl FnMut(u32)) {
        if !self.by_label.is_empty() {
            for (k, v) in labels {
                if let Some(ids) = self.by_label.get(k).and_then(|m| m.get(v)) {
                    ids.iter().for_each(|&id| f(id));
                }
            }
        }
        self.other.iter().for_each(|&id| f(id));
    }

    fn insert(&mut self, g: TermGroup) -> u32 {
        let h = group_hash(g.kind, g.weight, &g.term);
        let placement: Result<Option<(String, Vec<String>)>, ()> =
            first_in(&g.term.selector).map(|o| {
                o.map(|(k, vs)| (k.to_string(), vs.into_iter().map(str::to_string).collect()))
            });
        let id = match self.free.pop() {
            Some(id) => {
                self.groups[id as usize] = Some(g);
                id
            }
            None => {
                self.groups.push(Some(g));
                (self.groups.len() - 1) as u32
            }
        };
        self.by_hash.entry(h).or_default().push(id);
        match placement {
            // Selects nothing: no pod can find it, and its targets stay empty.
            Err(()) => {}
            Ok(None) => self.other.push(id),
            Ok(Some((key, values))) => {
                let by_value = self.by_label.entry(key).or_default();
                for v in values {
                    by_value.entry(v).or_default().push(id);
                }
            }
        }
        id
    }

    fn delete(&mut self, id: u32) {
        let Some(g) = self.groups.get_mut(id as usize).and_then(Option::take) else {
            return;
        };
        self.free.push(id);
        let h = group_hash(g.kind, g.weight, &g.term);
        if let Some(ids) = self.by_hash.get_mut(&h) {
            remove_id(ids, id);
            if ids.is_empty() {
                self.by_hash.remove(&h);
            }
        }
        match first_in(&g.term.selector) {
            Err(()) => {}
            Ok(None) => remove_id(&mut self.other, id),
            Ok(Some((key, values))) => {
                if let Some(by_value) = self.by_label.get_mut(key) {
                    for v in values {
                        if let Some(ids) = by_value.get_mut(v) {
                            remove_id(ids, id);
                            if ids.is_empty() {
                                by_value.remove(v);
                            }
                        }
                    }
                    if by_value.is_empty() {
                        self.by_label.remove(key);
                    }
                }
            }
        }
    }
}

/// The snapshot's pod indexes.
#[derive(Debug, Clone, Default)]
pub struct PodIndex {
    /// Label key → label value → pods.
    pods_by_label: FxHashMap<String, FxHashMap<String, PodSet>>,
    /// Every bound pod.
    all: PodSet,
    groups: TermGroups,
    /// The columns of the term groups' topology keys (and of keys PreFilter asked for).
    columns: ColumnCache,
    /// PodTopologySpread's per-selector counts ([`crate::spread_index`]).
    pub(crate) spread: SpreadCache,
}

/// The id of node `i`'s value in `column` (a node outside the column, which cannot happen
/// while the column and the index come from the same nodes, reads as lacking the key).
fn node_id(column: &TopologyColumn, i: usize) -> u32 {
    column.ids.get(i).copied().unwrap_or(TopologyColumn::ABSENT)
}

impl PodIndex {
    /// Adds a pod bound to node `node` (an index into `nodes`, the snapshot's nodes).
    pub fn add(&mut self, node: usize, pod: &Arc<PodInfo>, nodes: &[NodeInfo]) {
        self.link(node, pod);
        self.spread.get_mut().update(node, pod, 1);
        // The groups that select the pod count it (before the pod's own terms may create
        // groups, which count it among the pods already bound).
        self.update_targets(pod, node, 1);
        if !pod.has_affinity() {
            return;
        }
        for kind in TermKind::ALL {
            for (t, w) in kind.terms(pod) {
                let id = match self.groups.find(kind, w, t) {
                    Some(id) => id,
                    None => {
                        let column = self.columns.get_mut(&t.topology_key, nodes);
                        let targets =
                            targets_countable(t).then(|| Arc::new(self.count_targets(t, &column)));
                        self.groups.insert(TermGroup {
                            kind,
                            weight: w,
                            term: t.clone(),
                            column,
                            carried: 0,
                            holders: Arc::default(),
                            targets,
                        })
                    }
                };
                let Some(g) = self.groups.groups[id as usize].as_mut() else {
                    continue;
                };
                g.carried += 1;
                let id = node_id(&g.column, node);
                add_count(&mut g.holders, id, 1);
            }
        }
    }

    /// Removes a pod (the same `PodInfo` that was added, with the nodes unchanged since).
    pub fn remove(&mut self, pod: &PodInfo) {
        // Out of `all` first: its entry names the node (one probe for the lookup and the
        // removal; the counts below never read `all`).
        let Some((node, _)) = self.all.remove(&key_of(pod)) else {
            return;
        };
        if pod.has_affinity() {
            for kind in TermKind::ALL {
                for (t, w) in kind.terms(pod) {
                    let Some(id) = self.groups.find(kind, w, t) else {
                        continue;
                    };
                    let Some(g) = self.groups.groups[id as usize].as_mut() else {
                        continue;
                    };
                    g.carried = g.carried.saturating_sub(1);
                    if g.carried == 0 {
                        self.groups.delete(id);
                    } else {
                        let id = node_id(&g.column, node as usize);
                        add_count(&mut g.holders, id, -1);
                    }
                }
            }
        }
        self.update_targets(pod, node as usize, -1);
        self.spread.get_mut().update(node as usize, pod, -1);
        self.unlink_labels(pod);
    }

    /// The node index a bound pod (this very object) was added with.
    pub fn node_of(&self, pod: &PodInfo) -> Option<usize> {
        self.all.get(&key_of(pod)).map(|(n, _)| *n as usize)
    }

    /// Files a pod under its labels and in `all` (the sets part of [`PodIndex::add`], counts
    /// untouched). [`Snapshot::update_pod_status`](crate::node_info::Snapshot::update_pod_status)
    /// puts back with it a pod it took out with [`PodIndex::unlink`]: its counts read nothing
    /// a status change can change.
    pub(crate) fn link(&mut self, node: usize, pod: &Arc<PodInfo>) {
        let node = node as u32;
        let uid = key_of(pod);
        for (k, v) in pod.labels() {
            // One lookup per level when the key and value are known; their strings are cloned
            // only when new.
            match self.pods_by_label.get_mut(k.as_str()) {
                Some(by_value) => match by_value.get_mut(v.as_str()) {
                    Some(set) => {
                        set.insert(uid, (node, pod.clone()));
                    }
                    None => {
                        let mut set = PodSet::default();
                        set.insert(uid, (node, pod.clone()));
                        by_value.insert(v.clone(), set);
                    }
                },
                None => {
                    let mut set = PodSet::default();
                    set.insert(uid, (node, pod.clone()));
                    let mut by_value = FxHashMap::default();
                    by_value.insert(v.clone(), set);
                    self.pods_by_label.insert(k.clone(), by_value);
                }
            }
        }
        self.all.insert(uid, (node, pod.clone()));
    }

    /// Takes a pod out of its label sets and `all` (the sets part of [`PodIndex::remove`]).
    pub(crate) fn unlink(&mut self, pod: &PodInfo) {
        self.unlink_labels(pod);
        self.all.remove(&key_of(pod));
    }

    /// Takes a pod out of its label sets.
    fn unlink_labels(&mut self, pod: &PodInfo) {
        let uid = key_of(pod);
        for (k, v) in pod.labels() {
            if let Some(by_value) = self.pods_by_label.get_mut(k) {
                if let Some(set) = by_value.get_mut(v) {
                    set.remove(&uid);
                    if set.is_empty() {
                        by_value.remove(v);
                    }
                }
                if by_value.is_empty() {
                    self.pods_by_label.remove(k);
                }
            }
        }
    }

    /// Adds `delta` to the targets of every group that selects `pod`, at its node's value.
    fn update_targets(&mut self, pod: &PodInfo, node: usize, delta: i64) {
        let mut hit: Vec<u32> = Vec::new();
        self.groups
            .for_each_candidate(pod.labels(), |id| hit.push(id));
        for id in hit {
            let Some(g) = self.groups.groups[id as usize].as_mut() else {
                continue;
            };
            let Some(targets) = g.targets.as_mut() else {
                continue;
            };
            if !selects_without_ns_labels(&g.term, pod) {
                continue;
            }
            add_count(targets, node_id(&g.column, node), delta);
        }
    }

    /// The targets of a new group: the bound pods `t` selects, per value of its topology key.
    fn count_targets(&self, t: &AffinityTerm, column: &TopologyColumn) -> ValueCounts {
        let mut m = ValueCounts::default();
        self.for_each_candidate(&t.selector, |i, p| {
            if selects_without_ns_labels(t, p) {
                m.add(node_id(column, i), 1);
            }
        });
        m
    }

    /// The column of topology key `key` over `nodes` (the snapshot's nodes, as the index was
    /// built with): the term groups' own when one uses the key, else built now and kept.
    pub fn column(&self, key: &str, nodes: &[NodeInfo]) -> Arc<TopologyColumn> {
        self.columns.get(key, nodes)
    }

    /// Calls `f(node, pod)` for every bound pod that `selector` may select: the pods carrying
    /// a value of its first `In` requirement, or every pod when it has none. A superset of the
    /// selected pods; nothing for a selector that selects nothing.
    pub fn for_each_candidate(&self, selector: &Selector, mut f: impl FnMut(usize, &Arc<PodInfo>)) {
        match first_in(selector) {
            Err(()) => {}
            Ok(None) => {
                for (node, p) in self.all.values() {
                    f(*node as usize, p);
                }
            }
            Ok(Some((key, values))) => {
                let Some(by_value) = self.pods_by_label.get(key) else {
                    return;
                };
                for v in values {
                    if let Some(set) = by_value.get(v) {
                        for (node, p) in set.values() {
                            f(*node as usize, p);
                        }
                    }
                }
            }
        }
    }

    /// Calls `f(group)` for every group of `kind` whose selector may select a pod labelled
    /// `labels`: a superset of the groups whose selector matches `labels`.
    pub fn for_each_group_candidate(
        &self,
        kind: TermKind,
        labels: &Labels,
        mut f: impl FnMut(&TermGroup),
    ) {
        self.groups.for_each_candidate(labels, |id| {
            if let Some(g) = self.groups.get(id) {
                if g.kind == kind {
                    f(g);
                }
            }
        });
    }

    /// PodTopologySpread's counts of the bound pods each query's selector matches in its
    /// namespace, per node and per value of its topology key ([`crate::spread_index`]), handed
    /// to `f` in query order. `nodes` is the snapshot's node count.
    pub fn with_spread_groups<R>(
        &self,
        queries: &[SpreadQuery<'_>],
        nodes: usize,
        f: impl FnOnce(&[SpreadView<'_>]) -> R,
    ) -> R {
        self.spread.with(
            queries,
            nodes,
            |sel, visit| self.for_each_candidate(sel, |n, p| visit(n, p)),
            f,
        )
    }

    /// The group of bound pods' terms equal to (`kind`, `weight`, `t`), if a pod carries it.
    pub fn group(&self, kind: TermKind, weight: i32, t: &AffinityTerm) -> Option<&TermGroup> {
        self.groups
            .find(kind, weight, t)
            .and_then(|id| self.groups.get(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node_info::{ClusterObjects, Snapshot};
    use ksim_api::{Node, Pod};
    use proptest::prelude::*;

    fn pod(name: &str, labels: &[(&str, &str)], anti_app: Option<&str>) -> Arc<PodInfo> {
        let mut p = Pod::default();
        p.metadata.name = name.into();
        p.metadata.namespace = "default".into();
        p.metadata.uid = name.into();
        p.metadata.labels = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        if let Some(app) = anti_app {
            let term: ksim_api::PodAffinityTerm = serde_json::from_value(serde_json::json!({
                "labelSelector": {"matchExpressions": [
                    {"key": "tier", "operator": "Exists"},
                    {"key": "app", "operator": "In", "values": [app, app, "other"]}]},
                "topologyKey": "kubernetes.io/hostname"
            }))
            .unwrap();
            p.spec.affinity = Some(Box::new(ksim_api::Affinity {
                pod_anti_affinity: Some(ksim_api::PodAffinity {
                    required: vec![term],
                    preferred: vec![],
                }),
                ..Default::default()
            }));
        }
        PodInfo::arc(p)
    }

    fn node_infos(n: usize) -> Vec<NodeInfo> {
        (0..n)
            .map(|i| {
                let mut node = Node::default();
                node.metadata.name = format!("n{i}");
                node.metadata.labels =
                    [("kubernetes.io/hostname".to_string(), format!("n{i}"))].into();
                NodeInfo::new(Arc::new(node))
            })
            .collect()
    }

    fn candidates(ix: &PodIndex, sel: &Selector) -> Vec<String> {
        let mut v = Vec::new();
        ix.for_each_candidate(sel, |n, p| v.push(format!("{n}:{}", p.name())));
        v.sort();
        v
    }

    #[test]
    fn pods_by_label_narrow_and_fall_back() {
        let nodes = node_infos(2);
        let mut ix = PodIndex::default();
        let a = pod("a", &[("app", "x")], None);
        ix.add(0, &a, &nodes);
        ix.add(1, &pod("b", &[("app", "y")], None), &nodes);
        ix.add(1, &pod("c", &[("tier", "t")], None), &nodes);
        let sel = |json: serde_json::Value| {
            Selector::from_label_selector(Some(&serde_json::from_value(json).unwrap()))
        };
        assert_eq!(
            candidates(&ix, &sel(serde_json::json!({"matchLabels": {"app": "x"}}))),
            vec!["0:a"]
        );
        // No In requirement: every pod.
        assert_eq!(
            candidates(
                &ix,
                &sel(
                    serde_json::json!({"matchExpressions": [{"key": "app", "operator": "Exists"}]})
                )
            ),
            vec!["0:a", "1:b", "1:c"]
        );
        assert!(candidates(&ix, &Selector::Nothing).is_empty());
        ix.remove(&a);
        assert!(candidates(&ix, &sel(serde_json::json!({"matchLabels": {"app": "x"}}))).is_empty());
    }

    #[test]
    fn replicas_share_one_group_found_by_an_in_value() {
        let nodes = node_infos(4);
        let mut ix = PodIndex::default();
        let holders: Vec<_> = (0..3)
            .map(|i| pod(&format!("h{i}"), &[("app", "x"), ("tier", "t")], Some("x")))
            .collect();
        for (i, h) in holders.iter().enumerate() {
            ix.add(i, h, &nodes);
        }
        let labels: Labels = [("app".to_string(), "x".to_string())].into();
        let mut found = Vec::new();
        ix.for_each_group_candidate(TermKind::RequiredAntiAffinity, &labels, |g| {
            let mut h: Vec<_> = g
                .holders
                .iter()
                .map(|(k, v)| (g.column.values[k as usize].clone(), v))
                .collect();
            h.sort();
            found.push((
                g.term.topology_key.clone(),
                h,
                g.targets.as_ref().map(|t| t.iter().count()),
            ))
        });
        let hosts = |n: usize| (0..n).map(|i| (format!("n{i}"), 1)).collect::<Vec<_>>();
        // One group for the three replicas; each selects the others (and itself).
        assert_eq!(
            found,
            vec![("kubernetes.io/hostname".into(), hosts(3), Some(3))]
        );
        let other: Labels = [("app".to_string(), "z".to_string())].into();
        let mut n = 0;
        ix.for_each_group_candidate(TermKind::RequiredAntiAffinity, &other, |_| n += 1);
        assert_eq!(n, 0);
        for h in &holders {
            ix.remove(h);
        }
        ix.for_each_group_candidate(TermKind::RequiredAntiAffinity, &labels, |_| n += 1);
        assert_eq!(n, 0);
        assert!(ix.groups.by_hash.is_empty() && ix.groups.by_label.is_empty());
    }

    // ---- indexed counts against a brute-force count ----------------------------------------

    const KINDS: [&str; 4] = ["ra", "raa", "pa", "paa"];

    /// A term from small pools, so that random pods share terms (as replicas do).
    fn term_json(sel: u8, key: u8, ns: u8) -> serde_json::Value {
        let selector = match sel % 5 {
            0 => serde_json::json!({"matchLabels": {"app": "a"}}),
            1 => serde_json::json!({"matchLabels": {"app": "b"}}),
            2 => serde_json::json!({"matchExpressions": [
                {"key": "app", "operator": "In", "values": ["a", "c"]}]}),
            3 => serde_json::json!({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}),
            _ => serde_json::json!({}),
        };
        let key = ["kubernetes.io/hostname", "zone"][key as usize % 2];
        let mut t = serde_json::json!({"labelSelector": selector, "topologyKey": key});
        match ns % 4 {
            0 => {}
            1 => t["namespaces"] = serde_json::json!(["other"]),
            2 => t["namespaceSelector"] = serde_json::json!({}),
            _ => t["namespaceSelector"] = serde_json::json!({"matchLabels": {"team": "x"}}),
        }
        t
    }

    type PodSpec = (u8, u8, u8, Vec<(u8, u8, u8, u8, u8)>);

    fn make_pod(i: usize, (app, tier, ns, terms): &PodSpec) -> Arc<PodInfo> {
        let mut labels = serde_json::Map::new();
        if *app < 3 {
            labels.insert("app".into(), ["a", "b", "c"][*app as usize].into());
        }
        if *tier < 2 {
            labels.insert("tier".into(), ["x", "y"][*tier as usize].into());
        }
        let mut aff = serde_json::json!({
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [],
                            "preferredDuringSchedulingIgnoredDuringExecution": []},
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [],
                                "preferredDuringSchedulingIgnoredDuringExecution": []}});
        for &(kind, sel, key, nsk, w) in terms {
            let t = term_json(sel, key, nsk);
            let (side, list, v) = match KINDS[kind as usize % 4] {
                "ra" => (
                    "podAffinity",
                    "requiredDuringSchedulingIgnoredDuringExecution",
                    t,
                ),
                "raa" => (
                    "podAntiAffinity",
                    "requiredDuringSchedulingIgnoredDuringExecution",
                    t,
                ),
                "pa" => (
                    "podAffinity",
                    "preferredDuringSchedulingIgnoredDuringExecution",
                    serde_json::json!({"weight": 1 + w % 2 * 4, "podAffinityTerm": t}),
                ),
                _ => (
                    "podAntiAffinity",
                    "preferredDuringSchedulingIgnoredDuringExecution",
                    serde_json::json!({"weight": 1 + w % 2 * 4, "podAffinityTerm": t}),
                ),
            };
            aff[side][list].as_array_mut().unwrap().push(v);
        }
        let namespace = ["default", "other"][*ns as usize % 2];
        let p: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": format!("p{i}"), "uid": format!("u{i}"),
                         "namespace": namespace, "labels": labels},
            "spec": {"affinity": aff, "containers": [{"name": "c"}]}
        }))
        .unwrap();
        PodInfo::arc(p)
    }

    fn make_node(i: usize, zone: Option<u8>) -> Arc<Node> {
        let mut n = Node::default();
        n.metadata.name = format!("n{i}");
        n.metadata.labels = [("kubernetes.io/hostname".to_string(), format!("n{i}"))].into();
        if let Some(z) = zone {
            n.metadata.labels.insert("zone".into(), format!("z{z}"));
        }
        Arc::new(n)
    }

    /// The counts recomputed from the snapshot's nodes: every (kind, weight, term) of a bound
    /// pod with its holders, and (when countable) the pods it selects, per topology value.
    type Brute = Vec<(
        TermKind,
        i32,
        AffinityTerm,
        Vec<(String, i64)>,
        Option<Vec<(String, i64)>>,
    )>;

    fn brute_force(s: &Snapshot) -> Brute {
        let bound: Vec<(&NodeInfo, &Arc<PodInfo>)> = s
            .nodes
            .iter()
            .flat_map(|n| n.pods.iter().map(move |p| (n, p)))
            .collect();
        let mut keys: Vec<(TermKind, i32, AffinityTerm)> = Vec::new();
        for (_, p) in &bound {
            for kind in TermKind::ALL {
                for (t, w) in kind.terms(p) {
                    if !keys
                        .iter()
                        .any(|(k, kw, kt)| *k == kind && *kw == w && kt == t)
                    {
                        keys.push((kind, w, t.clone()));
                    }
                }
            }
        }
        let sorted = |m: FxHashMap<String, i64>| {
            let mut v: Vec<_> = m.into_iter().filter(|(_, c)| *c != 0).collect();
            v.sort();
            v
        };
        let mut out = Vec::new();
        for (kind, w, t) in keys {
            let mut holders: FxHashMap<String, i64> = FxHashMap::default();
            let mut targets: FxHashMap<String, i64> = FxHashMap::default();
            for (n, p) in &bound {
                let Some(v) = n.labels().get(&t.topology_key) else {
                    continue;
                };
                let carried = kind
                    .terms(p)
                    .filter(|(pt, pw)| **pt == t && *pw == w)
                    .count();
                *holders.entry(v.clone()).or_default() += carried as i64;
                // The incoming-term rule, spelled out: listed namespace or empty selector.
                let ns_ok = t.namespaces.contains(p.namespace())
                    || t.namespace_selector == Selector::Requirements(vec![]);
                if ns_ok && t.selector.matches(p.labels()) {
                    *targets.entry(v.clone()).or_default() += 1;
                }
            }
            let countable = matches!(&t.namespace_selector, Selector::Nothing)
                || t.namespace_selector == Selector::Requirements(vec![]);
            out.push((
                kind,
                w,
                t,
                sorted(holders),
                countable.then(|| sorted(targets)),
            ));
        }
        out
    }

    fn indexed(s: &Snapshot, brute: &Brute) -> Brute {
        let sorted = |col: &TopologyColumn, m: &ValueCounts| {
            let mut v: Vec<_> = m
                .iter()
                .map(|(id, c)| {
                    (
                        col.value(id)
                            .expect("a count under a node's value")
                            .to_string(),
                        c,
                    )
                })
                .collect();
            v.sort();
            v
        };
        let live = s.pod_index.groups.groups.iter().flatten().count();
        assert_eq!(live, brute.len(), "one group per distinct term");
        brute
            .iter()
            .map(|(kind, w, t, _, _)| {
                let g = s
                    .pod_index
                    .group(*kind, *w, t)
                    .expect("group of a bound pod's term");
                (
                    *kind,
                    *w,
                    t.clone(),
                    sorted(&g.column, &g.holders),
                    g.targets.as_deref().map(|m| sorted(&g.column, m)),
                )
            })
            .collect()
    }

    #[derive(Debug, Clone)]
    enum Op {
        Bind(usize, usize),
        Unbind(usize),
        Relabel(usize, Option<u8>),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0usize..40, 0usize..6).prop_map(|(p, n)| Op::Bind(p, n)),
            2 => (0usize..40).prop_map(Op::Unbind),
            1 => (0usize..6, proptest::option::of(0u8..3)).prop_map(|(n, z)| Op::Relabel(n, z)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Random clusters, random bind/unbind/relabel sequences: after every step the
        /// groups' counts equal a count from scratch over the nodes' pods, and the group
        /// candidates for a pod's labels include every group whose selector matches them.
        #[test]
        fn indexed_counts_equal_brute_force(
            zones in proptest::collection::vec(proptest::option::of(0u8..3), 6),
            pods in proptest::collection::vec(
                (0u8..4, 0u8..3, 0u8..2, proptest::collection::vec(
                    (0u8..4, 0u8..5, 0u8..2, 0u8..4, 0u8..2), 0..3)),
                40),
            ops in proptest::collection::vec(op(), 1..60),
        ) {
            let nodes: Vec<Arc<Node>> =
                zones.iter().enumerate().map(|(i, z)| make_node(i, *z)).collect();
            let pods: Vec<Arc<PodInfo>> =
                pods.iter().enumerate().map(|(i, p)| make_pod(i, p)).collect();
            let mut s = Snapshot::build(nodes, [], Arc::new(ClusterObjects::default()));
            let mut bound: Vec<(usize, String)> = Vec::new();
            for op in ops {
                match op {
                    Op::Bind(p, n) => {
                        if bound.iter().any(|(b, _)| *b == p) {
                            continue;
                        }
                        let name = format!("n{n}");
                        let pi = Arc::new(pods[p].assumed_on(&name));
                        prop_assert!(s.add_pod(pi));
                        bound.push((p, name));
                    }
                    Op::Unbind(k) => {
                        if bound.is_empty() {
                            continue;
                        }
                        let (p, node) = bound.remove(k % bound.len());
                        prop_assert!(s.remove_pod(&node, pods[p].uid()));
                    }
                    Op::Relabel(n, z) => {
                        prop_assert!(s.update_node(make_node(n, z)));
                    }
                }
                let brute = brute_force(&s);
                prop_assert_eq!(indexed(&s, &brute), brute.clone());
                // Every column names each node's value: read by index for the snapshot's own
                // NodeInfo, by label for a copy; a count read by id is the brute-force count at
                // the node's value.
                let slice = NodeSlice::of(&s.nodes);
                for (kind, w, t, holders, _) in &brute {
                    let Some(g) = s.pod_index.group(*kind, *w, t) else {
                        continue;
                    };
                    for (i, n) in s.nodes.iter().enumerate() {
                        let want = n.labels().get(&t.topology_key);
                        let copy = n.clone();
                        prop_assert_eq!(slice.index_of(n), Some(i));
                        prop_assert_eq!(slice.index_of(&copy), None);
                        for id in [g.column.id_of_node(slice, n), g.column.id_of_node(slice, &copy)] {
                            prop_assert_eq!(g.column.value(id), want.map(String::as_str));
                            prop_assert_eq!(id == TopologyColumn::ABSENT, want.is_none());
                            let c = g.holders.get(id);
                            let b = want
                                .and_then(|v| holders.iter().find(|(hv, _)| hv == v))
                                .map_or(0, |(_, c)| *c);
                            prop_assert_eq!(c, b);
                        }
                    }
                    prop_assert_eq!(g.column.id_of_value("no-such-value"), TopologyColumn::UNKNOWN);
                }
                for p in &pods {
                    for kind in TermKind::ALL {
                        let mut found = Vec::new();
                        s.pod_index.for_each_group_candidate(kind, p.labels(), |g| {
                            found.push(g.term.clone())
                        });
                        for (k, _, t, _, _) in &brute {
                            if *k == kind && t.selector.matches(p.labels()) {
                                prop_assert!(found.contains(t));
                            }
                        }
                    }
                }
            }
        }
    }
}
