//! Counts of the bound pods that PodTopologySpread's selectors match, kept on bind and unbind
//! (issue 20), so that PreFilter and PreScore read counts instead of walking the matching pods
//! of every node in every cycle.
//!
//! A [`SpreadGroup`] is one (namespace, selector) that an incoming pod's constraints used (the
//! selector after `matchLabelKeys` were merged in, or the default selector deduced from the
//! pod's Services and workloads): thousands of replicas with one constraint shape share it. It
//! counts, per node, the bound pods upstream's `countPodsMatchSelector` counts (same
//! namespace, not being deleted, matched by the selector; an empty selector counts nothing),
//! and, per topology key asked for, the sums of those counts per value of the key over the
//! nodes carrying it (`counts`, by the ids of the snapshot's [`LabelColumn`] of the key) and
//! over the nodes without it (`absent`). Which nodes a constraint counts (nodes with every
//! topology key, `nodeAffinityPolicy`, `nodeTaintsPolicy`) is decided by the plugin per cycle;
//! the per-node counts serve whatever rule it applies.
//!
//! Groups are made on first use (from the pod index's label sets) and then kept current by
//! [`PodIndex::add`](crate::pod_index::PodIndex::add) and `remove`; at most [`MAX_GROUPS`] are
//! kept, the least recently used one making room for a new one. Counts are by node index, so
//! the groups live inside the pod index, which the snapshot rebuilds whenever node indices or
//! node labels change; a key's counts are recounted from the per-node counts when the
//! snapshot's column of that key is a different one (nodes updated since).
//!
//! The groups are derived data behind a mutex (PreFilter reads the snapshot through a shared
//! reference and may be the first to ask for a selector); answers never depend on which groups
//! happen to be kept.

use std::hash::{BuildHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};

use ksim_api::meta::SelectorOp;
use ksim_api::Selector;
use rustc_hash::{FxBuildHasher, FxHashMap};

use crate::node_info::LabelColumn;
use crate::pod_info::PodInfo;

/// Most groups kept at once.
pub const MAX_GROUPS: usize = 64;

/// A group's counts per value of one topology key.
#[derive(Debug, Clone)]
pub struct KeyCounts {
    pub key: String,
    /// The snapshot's column of `key` the counts are by.
    pub column: Arc<LabelColumn>,
    /// Value → id in `column`.
    pub ids: Arc<FxHashMap<String, u32>>,
    /// Per id of `column`: the counted pods on the nodes with that value.
    pub counts: Vec<i64>,
    /// The counted pods on nodes without the key.
    pub absent: i64,
    /// Every node carries the key.
    pub on_every_node: bool,
}

impl KeyCounts {
    fn build(key: &str, column: &Arc<LabelColumn>, per_node: &[i64]) -> KeyCounts {
        let ids: FxHashMap<String, u32> = column
            .values
            .iter()
            .enumerate()
            .map(|(i, v)| (v.clone(), i as u32))
            .collect();
        let mut kc = KeyCounts {
            key: key.to_string(),
            column: column.clone(),
            ids: Arc::new(ids),
            counts: vec![0; column.values.len()],
            absent: 0,
            on_every_node: column.ids.iter().all(|&v| v != LabelColumn::ABSENT),
        };
        for (node, &c) in per_node.iter().enumerate() {
            if c != 0 {
                kc.bump(node, c);
            }
        }
        kc
    }

    /// Counts `delta` pods on node `node`. A node outside the column (cannot happen while the
    /// column and the counts come from the same snapshot nodes) reads as a node without the key.
    fn bump(&mut self, node: usize, delta: i64) {
        match self.column.ids.get(node) {
            Some(&id) if id != LabelColumn::ABSENT => self.counts[id as usize] += delta,
            _ => self.absent += delta,
        }
    }

    /// The counted pods on nodes whose value of the key is `value`.
    pub fn get(&self, value: &str) -> i64 {
        self.ids
            .get(value)
            .map_or(0, |&id| self.counts[id as usize])
    }
}

/// The bound pods one (namespace, selector) counts.
#[derive(Debug, Clone)]
pub struct SpreadGroup {
    pub namespace: String,
    pub selector: Selector,
    hash: u64,
    /// The first `In` requirement of the selector (key, values): a quick rejection.
    first_in: Option<(String, Vec<String>)>,
    /// Per node index: the counted pods on that node.
    pub per_node: Vec<i64>,
    keys: Vec<KeyCounts>,
    last_used: u64,
}

impl SpreadGroup {
    /// Upstream `countPodsMatchSelector`'s test for one pod.
    pub fn counts_pod(&self, p: &PodInfo) -> bool {
        if self.selector.is_empty()
            || p.pod.metadata.deletion_timestamp.is_some()
            || p.namespace() != self.namespace
        {
            return false;
        }
        if let Some((k, vs)) = &self.first_in {
            if !p.labels().get(k).is_some_and(|v| vs.contains(v)) {
                return false;
            }
        }
        self.selector.matches(p.labels())
    }

    /// The counts per value of `key`, if asked for in this query.
    pub fn key(&self, key: &str) -> Option<&KeyCounts> {
        self.keys.iter().find(|k| k.key == key)
    }

    fn bump(&mut self, node: usize, delta: i64) {
        if node >= self.per_node.len() {
            self.per_node.resize(node + 1, 0);
        }
        self.per_node[node] += delta;
        for k in &mut self.keys {
            k.bump(node, delta);
        }
    }

    /// Makes sure the counts per value of `key` are by `column`.
    fn ensure_key(&mut self, key: &str, column: &Arc<LabelColumn>) {
        if let Some(i) = self.keys.iter().position(|k| k.key == key) {
            let kc = &mut self.keys[i];
            if Arc::ptr_eq(&kc.column, column) {
                return;
            }
            // The snapshot dropped its columns (a node object was updated) and built this one
            // anew: the same ids when the labels are the same.
            if kc.column.ids == column.ids && kc.column.values == column.values {
                kc.column = column.clone();
                return;
            }
            self.keys.swap_remove(i);
        }
        self.keys
            .push(KeyCounts::build(key, column, &self.per_node));
    }
}

fn group_hash(ns: &str, selector: &Selector) -> u64 {
    let mut h = FxBuildHasher.build_hasher();
    ns.hash(&mut h);
    selector.hash(&mut h);
    h.finish()
}

/// What a constraint asks for: the pods `selector` matches in `namespace`, and optionally
/// their sums per value of a topology key by the snapshot's column of that key.
#[derive(Debug, Clone, Copy)]
pub struct SpreadQuery<'a> {
    pub namespace: &'a str,
    pub selector: &'a Selector,
    pub key: Option<(&'a str, &'a Arc<LabelColumn>)>,
}

/// One query's answer.
#[derive(Debug, Clone, Copy)]
pub struct SpreadView<'a> {
    pub group: &'a SpreadGroup,
    /// The counts per value of the query's key (`None` when the query asked for none).
    pub key: Option<&'a KeyCounts>,
}

#[derive(Debug, Clone)]
pub(crate) struct SpreadGroups {
    groups: Vec<SpreadGroup>,
    clock: u64,
    cap: usize,
}

impl Default for SpreadGroups {
    fn default() -> Self {
        SpreadGroups {
            groups: Vec::new(),
            clock: 0,
            cap: MAX_GROUPS,
        }
    }
}

impl SpreadGroups {
    /// A pod was added (`delta` 1) to or removed (-1) from node `node`.
    pub(crate) fn update(&mut self, node: usize, pod: &PodInfo, delta: i64) {
        for g in &mut self.groups {
            if g.counts_pod(pod) {
                g.bump(node, delta);
            }
        }
    }

    fn find(&self, hash: u64, ns: &str, selector: &Selector) -> Option<usize> {
        self.groups
            .iter()
            .position(|g| g.hash == hash && g.namespace == ns && g.selector == *selector)
    }
}

/// The groups behind a mutex, so that a reader of the snapshot can add one. A clone copies
/// them (they are valid for the cloned pod index).
#[derive(Default)]
pub(crate) struct SpreadCache(Mutex<SpreadGroups>);

impl Clone for SpreadCache {
    fn clone(&self) -> Self {
        let g = self.0.lock().unwrap_or_else(|e| e.into_inner());
        SpreadCache(Mutex::new(g.clone()))
    }
}

impl std::fmt::Debug for SpreadCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SpreadCache")
    }
}

impl SpreadCache {
    pub(crate) fn get_mut(&mut self) -> &mut SpreadGroups {
        self.0.get_mut().unwrap_or_else(|e| e.into_inner())
    }

    #[cfg(test)]
    pub(crate) fn set_cap(&mut self, cap: usize) {
        self.get_mut().cap = cap;
    }

    #[cfg(test)]
    pub(crate) fn groups(&self) -> Vec<SpreadGroup> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .groups
            .clone()
    }

    /// Answers `queries` (making the groups and key counts they need; `count` counts a new
    /// group's pods: it calls its argument with each candidate (node, pod)) and hands the
    /// answers, in query order, to `f`.
    pub(crate) fn with<R>(
        &self,
        queries: &[SpreadQuery<'_>],
        nodes: usize,
        count: impl Fn(&Selector, &mut dyn FnMut(usize, &PodInfo)),
        f: impl FnOnce(&[SpreadView<'_>]) -> R,
    ) -> R {
        let mut guard = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let gs = &mut *guard;
        gs.clock += 1;
        let now = gs.clock;
        let mut at: Vec<usize> = Vec::with_capacity(queries.len());
        for q in queries {
            let hash = group_hash(q.namespace, q.selector);
            let i = match gs.find(hash, q.namespace, q.selector) {
                Some(i) => i,
                None => {
                    if gs.groups.len() >= gs.cap {
                        // The least recently used group not asked for by this query.
                        let victim = gs
                            .groups
                            .iter()
                            .enumerate()
                            .filter(|(_, g)| g.last_used < now)
                            .min_by_key(|(_, g)| g.last_used)
                            .map(|(i, _)| i);
                        if let Some(v) = victim {
                            gs.groups.swap_remove(v);
                            // Indices found so far may have moved.
                            for a in &mut at {
                                if *a == gs.groups.len() {
                                    *a = v;
                                }
                            }
                        }
                    }
                    let first_in = match q.selector {
                        Selector::Requirements(reqs) => reqs
                            .iter()
                            .find(|r| r.op == SelectorOp::In)
                            .map(|r| (r.key.clone(), r.values.clone())),
                        Selector::Nothing => None,
                    };
                    let mut g = SpreadGroup {
                        namespace: q.namespace.to_string(),
                        selector: q.selector.clone(),
                        hash,
                        first_in,
                        per_node: vec![0; nodes],
                        keys: Vec::new(),
                        last_used: now,
                    };
                    if !g.selector.is_empty() {
                        let mut per_node = std::mem::take(&mut g.per_node);
                        count(q.selector, &mut |node, p| {
                            if g.counts_pod(p) {
                                if node >= per_node.len() {
                                    per_node.resize(node + 1, 0);
                                }
                                per_node[node] += 1;
                            }
                        });
                        g.per_node = per_node;
                    }
                    gs.groups.push(g);
                    gs.groups.len() - 1
                }
            };
            let g = &mut gs.groups[i];
            g.last_used = now;
            if let Some((key, column)) = q.key {
                g.ensure_key(key, column);
            }
            at.push(i);
        }
        let views: Vec<SpreadView<'_>> = queries
            .iter()
            .zip(&at)
            .map(|(q, &i)| {
                let group = &gs.groups[i];
                SpreadView {
                    group,
                    key: q.key.and_then(|(k, _)| group.key(k)),
                }
            })
            .collect();
        f(&views)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node_info::{ClusterObjects, Snapshot};
    use ksim_api::{Node, Pod};
    use proptest::prelude::*;

    const ZONE: &str = "zone";
    const HOST: &str = "kubernetes.io/hostname";

    fn make_node(i: usize, zone: Option<u8>) -> Arc<Node> {
        let mut n = Node::default();
        n.metadata.name = format!("n{i}");
        n.metadata.labels = [(HOST.to_string(), format!("n{i}"))].into();
        if let Some(z) = zone {
            // Zone 3 is the empty value, a value of its own.
            let v = if z == 3 {
                String::new()
            } else {
                format!("z{z}")
            };
            n.metadata.labels.insert(ZONE.into(), v);
        }
        Arc::new(n)
    }

    /// (app, tier, namespace, being deleted)
    type PodSpec = (u8, u8, u8, bool);

    fn make_pod(i: usize, (app, tier, ns, deleted): &PodSpec) -> Arc<PodInfo> {
        let mut p = Pod::default();
        p.metadata.name = format!("p{i}");
        p.metadata.uid = format!("u{i}");
        p.metadata.namespace = ["default", "other"][*ns as usize % 2].into();
        if *app < 3 {
            p.metadata
                .labels
                .insert("app".into(), ["a", "b", "c"][*app as usize].into());
        }
        if *tier < 2 {
            p.metadata
                .labels
                .insert("tier".into(), ["x", "y"][*tier as usize].into());
        }
        if *deleted {
            p.metadata.deletion_timestamp = Some("2026-01-01T00:00:00Z".into());
        }
        Arc::new(PodInfo::new(p))
    }

    fn selector(k: u8) -> Selector {
        let json = match k % 6 {
            0 => serde_json::json!({"matchLabels": {"app": "a"}}),
            1 => serde_json::json!({"matchLabels": {"app": "b", "tier": "x"}}),
            2 => serde_json::json!({"matchExpressions": [
                {"key": "app", "operator": "In", "values": ["a", "c"]}]}),
            3 => serde_json::json!({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}),
            4 => serde_json::json!({}),
            _ => return Selector::Nothing,
        };
        Selector::from_label_selector(Some(&serde_json::from_value(json).unwrap()))
    }

    /// A query: (selector, namespace, key).
    type Q = (u8, u8, u8);

    fn brute(s: &Snapshot, ns: &str, sel: &Selector) -> Vec<i64> {
        s.nodes
            .iter()
            .map(|n| {
                if sel.is_empty() {
                    return 0;
                }
                n.pods
                    .iter()
                    .filter(|p| {
                        p.pod.metadata.deletion_timestamp.is_none()
                            && p.namespace() == ns
                            && sel.matches(p.labels())
                    })
                    .count() as i64
            })
            .collect()
    }

    /// Asks the index for `q` and checks its answer against a count over the nodes' pods.
    fn check(s: &Snapshot, (sel, ns, key): Q) -> Result<(), TestCaseError> {
        let sel = selector(sel);
        let ns = ["default", "other"][ns as usize % 2];
        let key = [ZONE, HOST][key as usize % 2];
        let col = s.label_column(key);
        let want = brute(s, ns, &sel);
        let q = SpreadQuery {
            namespace: ns,
            selector: &sel,
            key: Some((key, &col)),
        };
        s.pod_index
            .with_spread_groups(&[q], s.nodes.len(), |views| {
                let v = views[0];
                let per_node: Vec<i64> = (0..s.nodes.len())
                    .map(|k| v.group.per_node.get(k).copied().unwrap_or(0))
                    .collect();
                prop_assert_eq!(&per_node, &want);
                prop_assert!(
                    v.group.per_node[s.nodes.len().min(v.group.per_node.len())..]
                        .iter()
                        .all(|&c| c == 0)
                );
                let kc = v.key.expect("the key asked for");
                let mut by_value: FxHashMap<String, i64> = FxHashMap::default();
                let mut absent = 0;
                for (n, c) in s.nodes.iter().zip(&want) {
                    match n.labels().get(key) {
                        Some(value) => *by_value.entry(value.clone()).or_default() += c,
                        None => absent += c,
                    }
                }
                prop_assert_eq!(kc.absent, absent);
                for (value, c) in &by_value {
                    prop_assert_eq!(kc.get(value), *c, "value {:?}", value);
                }
                prop_assert_eq!(
                    kc.counts.iter().sum::<i64>(),
                    by_value.values().sum::<i64>()
                );
                prop_assert_eq!(
                    kc.on_every_node,
                    s.nodes.iter().all(|n| n.labels().contains_key(key))
                );
                Ok(())
            })
    }

    #[derive(Debug, Clone)]
    enum Op {
        Bind(usize, usize),
        Unbind(usize),
        Relabel(usize, Option<u8>),
        Query(Q),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0usize..30, 0usize..6).prop_map(|(p, n)| Op::Bind(p, n)),
            2 => (0usize..30).prop_map(Op::Unbind),
            1 => (0usize..6, proptest::option::of(0u8..4)).prop_map(|(n, z)| Op::Relabel(n, z)),
            2 => (0u8..6, 0u8..2, 0u8..2).prop_map(Op::Query),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]

        /// Random clusters and bind/unbind/relabel sequences, with queries in between (so that
        /// groups exist while pods come and go and are kept, not recounted): every answer
        /// equals a count from scratch over the nodes' pods, per node, per value and for the
        /// nodes without the key. A small cap makes groups get evicted and made again.
        #[test]
        fn indexed_spread_counts_equal_brute_force(
            zones in proptest::collection::vec(proptest::option::of(0u8..4), 6),
            pods in proptest::collection::vec((0u8..4, 0u8..3, 0u8..2, any::<bool>()), 30),
            ops in proptest::collection::vec(op(), 1..60),
            cap in 1usize..8,
        ) {
            let nodes: Vec<Arc<Node>> =
                zones.iter().enumerate().map(|(i, z)| make_node(i, *z)).collect();
            let pods: Vec<Arc<PodInfo>> =
                pods.iter().enumerate().map(|(i, p)| make_pod(i, p)).collect();
            let mut s = Snapshot::build(nodes, [], Arc::new(ClusterObjects::default()));
            s.pod_index.spread.set_cap(cap);
            let mut bound: Vec<(usize, String)> = Vec::new();
            for op in ops {
                match op {
                    Op::Bind(p, n) => {
                        if bound.iter().any(|(b, _)| *b == p) {
                            continue;
                        }
                        let name = format!("n{n}");
                        prop_assert!(s.add_pod(Arc::new(pods[p].assumed_on(&name))));
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
                        s.pod_index.spread.set_cap(cap);
                    }
                    Op::Query(q) => check(&s, q)?,
                }
                // Every group kept counts what a fresh count finds.
                for g in s.pod_index.spread.groups() {
                    prop_assert_eq!(
                        &g.per_node[..s.nodes.len()],
                        &brute(&s, &g.namespace, &g.selector)[..]
                    );
                }
                prop_assert!(s.pod_index.spread.groups().len() <= cap);
            }
        }
    }
}
