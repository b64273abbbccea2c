//! PreFilter, AddPod/RemovePod and Filter (upstream filtering.go): per-constraint counts of
//! matching pods per topology value, the two critical paths, and the max-skew check.

use std::sync::Arc;

use ksim_api::Node;
use rustc_hash::FxHashMap;

use super::common::{node_labels_match, Constraint};
use super::{
    PodTopologySpread, DO_NOT_SCHEDULE, ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH, MAX_INT32, NAME, PRE_FILTER_STATE_KEY,
};
use crate::framework::{
    Code, CycleState, FilterPlugin, FilterResult, PreFilterPlugin, PreFilterResult, Status,
};
use crate::node_info::{LabelColumn, NodeInfo, Snapshot};
use crate::plugins::helper::RequiredNodeAffinity;
use crate::pod_index::NodeSlice;
use crate::pod_info::PodInfo;
use crate::spread_index::{KeyCounts, SpreadQuery, SpreadView};

/// One of the two smallest-count domains of a constraint. `domain == None` is upstream's initial
/// entry, whose topology value is the empty string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct CriticalPath {
    domain: Option<usize>,
    pub(super) match_num: i64,
}

/// upstream `criticalPaths`: `[0]` always holds the minimum match number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct CriticalPaths(pub(super) [CriticalPath; 2]);

impl CriticalPaths {
    pub(super) fn new() -> CriticalPaths {
        let p = CriticalPath {
            domain: None,
            match_num: MAX_INT32,
        };
        CriticalPaths([p, p])
    }

    /// `criticalPaths.update` for the domain `idx` whose topology value is `value`.
    pub(super) fn update(&mut self, idx: usize, value: &str, num: i64) {
        let p = &mut self.0;
        let same =
            |c: &CriticalPath| c.domain == Some(idx) || (c.domain.is_none() && value.is_empty());
        let i = if same(&p[0]) {
            Some(0)
        } else if same(&p[1]) {
            Some(1)
        } else {
            None
        };
        match i {
            Some(i) => {
                p[i].match_num = num;
                // Upstream keeps the stored topology value; a matched initial entry stays "".
                if p[0].match_num > p[1].match_num {
                    p.swap(0, 1);
                }
            }
            None => {
                if num < p[0].match_num {
                    p[1] = p[0];
                    p[0] = CriticalPath {
                        domain: Some(idx),
                        match_num: num,
                    };
                } else if num < p[1].match_num {
                    p[1] = CriticalPath {
                        domain: Some(idx),
                        match_num: num,
                    };
                }
            }
        }
    }
}

/// Matching-pod counts per topology value of one constraint, in first-seen order. Values are
/// found through the ids of the snapshot's label column of the topology key (`ids`, shared
/// across cycles), so a cycle builds no map of values.
#[derive(Debug, Clone)]
struct Domains {
    /// Value → id in the key's label column.
    ids: Arc<FxHashMap<String, u32>>,
    /// Column id → domain (`u32::MAX`: not a domain); `None` when every column value is a
    /// domain, numbered as the column numbers them.
    slot_of: Option<Arc<Vec<u32>>>,
    /// Values outside the column that became domains (by AddPod), with their domain.
    extra: Vec<(String, usize)>,
    counts: Vec<i64>,
}

impl Domains {
    fn slot(&self, value: &str) -> Option<usize> {
        match self.ids.get(value) {
            Some(&id) => match &self.slot_of {
                None => Some(id as usize),
                Some(s) => s
                    .get(id as usize)
                    .copied()
                    .filter(|&d| d != u32::MAX)
                    .map(|d| d as usize),
            },
            None => self.extra.iter().find(|(v, _)| v == value).map(|&(_, d)| d),
        }
    }

    fn get(&self, value: &str) -> i64 {
        self.slot(value).map_or(0, |d| self.counts[d])
    }

    /// [`get`](Self::get) of the value with column id `id`, without reading the value:
    /// `None` when only the value can tell (a domain outside the column, or an id past the
    /// counts).
    #[inline]
    fn get_by_id(&self, id: u32) -> Option<i64> {
        if !self.extra.is_empty() {
            return None;
        }
        match &self.slot_of {
            None => self.counts.get(id as usize).copied(),
            Some(s) => match s.get(id as usize) {
                Some(&u32::MAX) => Some(0),
                Some(&d) => self.counts.get(d as usize).copied(),
                None => None,
            },
        }
    }

    fn index_of(&mut self, value: &str) -> usize {
        if let Some(d) = self.slot(value) {
            return d;
        }
        let d = self.counts.len();
        self.counts.push(0);
        match self.ids.get(value) {
            Some(&id) => {
                let n = self.ids.len();
                let slot_of = self
                    .slot_of
                    .get_or_insert_with(|| Arc::new((0..n as u32).collect()));
                let s = Arc::make_mut(slot_of);
                if s.len() <= id as usize {
                    s.resize(id as usize + 1, u32::MAX);
                }
                s[id as usize] = d as u32;
            }
            None => self.extra.push((value.to_string(), d)),
        }
        d
    }

    /// Number of domains (`len(TpValueToMatchNum[i])`).
    fn len(&self) -> usize {
        self.counts.len()
    }
}

/// upstream `preFilterState`.
#[derive(Clone)]
struct PreFilterState {
    constraints: Arc<[Constraint]>,
    /// Whether each constraint's selector matches the incoming pod (`selfMatchNum`).
    self_match: Arc<[bool]>,
    /// The incoming pod's required node affinity (for AddPod/RemovePod).
    required: Arc<RequiredNodeAffinity>,
    domains: Vec<Domains>,
    critical_paths: Vec<CriticalPaths>,
    /// Each constraint's label column, and where the snapshot's nodes are: Filter reads a
    /// snapshot node's value id by its index instead of looking its labels up by string.
    columns: Arc<[Arc<LabelColumn>]>,
    slice: NodeSlice,
}

impl PreFilterState {
    /// `minMatchNum`: the global minimum, 0 when fewer domains than `minDomains` exist.
    fn min_match_num(&self, i: usize, min_domains: i32) -> i64 {
        if (self.domains[i].len() as i64) < min_domains as i64 {
            return 0;
        }
        self.critical_paths[i].0[0].match_num
    }

    /// `updateWithPod`.
    fn update_with_pod(&mut self, updated: &PodInfo, preemptor: &PodInfo, node: &Node, delta: i64) {
        if updated.namespace() != preemptor.namespace() {
            return;
        }
        if !node_labels_match(&node.metadata.labels, &self.constraints) {
            return;
        }
        for (i, c) in self.constraints.iter().enumerate() {
            if !c.selector.matches(updated.labels()) {
                continue;
            }
            if !c.match_node_inclusion_policies(preemptor, node, &self.required) {
                continue;
            }
            let value = node
                .metadata
                .labels
                .get(&c.topology_key)
                .map_or("", String::as_str);
            let idx = self.domains[i].index_of(value);
            self.domains[i].counts[idx] += delta;
            let num = self.domains[i].counts[idx];
            self.critical_paths[i].update(idx, value, num);
        }
    }
}

/// The domains of every constraint node by node, as upstream's PreFilter walks them: a node
/// lacking a constraint's key is skipped (`nodeLabelsMatchSpreadConstraints`), the inclusion
/// policies are checked per node, and domains are numbered in order of first appearance.
#[allow(clippy::too_many_arguments)]
fn domains_by_node(
    snapshot: &Snapshot,
    pod: &PodInfo,
    constraints: &[Constraint],
    required: &RequiredNodeAffinity,
    columns: &[Arc<LabelColumn>],
    admits_all: &[bool],
    views: &[SpreadView<'_>],
    keys: Option<Vec<&KeyCounts>>,
) -> Vec<Domains> {
    let mut domain_of: Vec<Vec<u32>> = columns
        .iter()
        .map(|col| vec![u32::MAX; col.values.len()])
        .collect();
    let mut counts: Vec<Vec<i64>> = vec![Vec::new(); constraints.len()];
    for (k, n) in snapshot.nodes.iter().enumerate() {
        if columns
            .iter()
            .any(|col| col.ids.get(k).is_none_or(|&v| v == LabelColumn::ABSENT))
        {
            continue;
        }
        for (i, c) in constraints.iter().enumerate() {
            if !admits_all[i] && !c.match_node_inclusion_policies(pod, &n.node, required) {
                continue;
            }
            let v = columns[i].ids[k] as usize;
            let d = match domain_of[i][v] {
                u32::MAX => {
                    let d = counts[i].len();
                    domain_of[i][v] = d as u32;
                    counts[i].push(0);
                    d
                }
                d => d as usize,
            };
            counts[i][d] += views[i].group.per_node.get(k).copied().unwrap_or(0);
        }
    }
    (0..constraints.len())
        .map(|i| Domains {
            ids: match &keys {
                Some(keys) => keys[i].ids.clone(),
                None => Arc::new(
                    columns[i]
                        .values
                        .iter()
                        .enumerate()
                        .map(|(id, v)| (v.clone(), id as u32))
                        .collect(),
                ),
            },
            slot_of: Some(Arc::new(std::mem::take(&mut domain_of[i]))),
            extra: Vec::new(),
            counts: std::mem::take(&mut counts[i]),
        })
        .collect()
}

fn pre_filter_state_missing() -> Status {
    Status::error(format!(
        "reading {PRE_FILTER_STATE_KEY:?} from cycleState: not found"
    ))
}

impl PreFilterPlugin for PodTopologySpread {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let constraints = match self.constraints_for(pod, DO_NOT_SCHEDULE, Some(&snapshot.objects))
        {
            Ok(c) => c.unwrap_or_default(),
            Err(e) => {
                return (
                    None,
                    Status::error(format!("get constraints from pod: {e}")),
                )
            }
        };
        if constraints.is_empty() {
            return (None, Status::skip());
        }
        let required = RequiredNodeAffinity::of_pod(&pod.pod);
        let ns = pod.namespace();
        let columns: Vec<Arc<LabelColumn>> = constraints
            .iter()
            .map(|c| snapshot.label_column(&c.topology_key))
            .collect();
        // Inclusion policies that admit every node need no per-node check.
        let admits_all: Vec<bool> = constraints
            .iter()
            .map(|c| !c.node_taints_honor && (!c.node_affinity_honor || required.is_empty()))
            .collect();
        // The matching pods per node and per topology value, from the snapshot's pod index
        // (`countPodsMatchSelector` of every node, kept on bind and unbind).
        let queries: Vec<SpreadQuery<'_>> = constraints
            .iter()
            .zip(&columns)
            .map(|(c, col)| SpreadQuery {
                namespace: ns,
                selector: &c.selector,
                key: Some((c.topology_key.as_str(), col)),
            })
            .collect();
        let domains: Vec<Domains> =
            snapshot
                .pod_index
                .with_spread_groups(&queries, snapshot.nodes.len(), |views| {
                    let keys: Option<Vec<&KeyCounts>> = views.iter().map(|v| v.key).collect();
                    match keys {
                        // Every node with the topology key counts (one constraint, or every node
                        // carries every key) and the policies admit every node: the domains are
                        // the column's values in the column's order (first seen in node order),
                        // with the counts kept per value.
                        Some(keys)
                            if admits_all.iter().all(|&a| a)
                                && (keys.len() == 1 || keys.iter().all(|k| k.on_every_node)) =>
                        {
                            keys.iter()
                                .map(|k| Domains {
                                    ids: k.ids.clone(),
                                    slot_of: None,
                                    extra: Vec::new(),
                                    counts: k.counts.clone(),
                                })
                                .collect()
                        }
                        keys => domains_by_node(
                            snapshot,
                            pod,
                            &constraints,
                            &required,
                            &columns,
                            &admits_all,
                            views,
                            keys,
                        ),
                    }
                });
        let mut critical_paths = Vec::with_capacity(constraints.len());
        for (d, col) in domains.iter().zip(&columns) {
            let mut p = CriticalPaths::new();
            // Upstream ranges over a Go map (random order); the minimum does not depend on the
            // order, so a fixed one (first seen) keeps ksim deterministic.
            match &d.slot_of {
                None => {
                    for (i, v) in col.values.iter().enumerate() {
                        p.update(i, v, d.counts[i]);
                    }
                }
                Some(slot_of) => {
                    let mut value_of: Vec<&str> = vec![""; d.len()];
                    for (id, &slot) in slot_of.iter().enumerate() {
                        if let (Some(v), Some(out)) =
                            (col.values.get(id), value_of.get_mut(slot as usize))
                        {
                            *out = v;
                        }
                    }
                    for (i, v) in value_of.into_iter().enumerate() {
                        p.update(i, v, d.counts[i]);
                    }
                }
            }
            critical_paths.push(p);
        }
        let self_match: Arc<[bool]> = constraints
            .iter()
            .map(|c| c.selector.matches(pod.labels()))
            .collect();
        state.write(
            PRE_FILTER_STATE_KEY,
            PreFilterState {
                constraints: constraints.into(),
                self_match,
                required: Arc::new(required),
                domains,
                critical_paths,
                columns: columns.into(),
                slice: NodeSlice::of(&snapshot.nodes),
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
        _snapshot: &Snapshot,
    ) -> Status {
        let Some(s) = state.read_mut::<PreFilterState>(PRE_FILTER_STATE_KEY) else {
            return pre_filter_state_missing();
        };
        s.update_with_pod(pod_to_add, pod, &node.node, 1);
        Status::success()
    }

    fn remove_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        pod_to_remove: &Arc<PodInfo>,
        node: &NodeInfo,
        _snapshot: &Snapshot,
    ) -> Status {
        let Some(s) = state.read_mut::<PreFilterState>(PRE_FILTER_STATE_KEY) else {
            return pre_filter_state_missing();
        };
        s.update_with_pod(pod_to_remove, pod, &node.node, -1);
        Status::success()
    }
}

// Filter's two fixed rejections, shared by every node they reject (named by the plugin, as the
// framework names them anyway).
static NODE_LABEL_NOT_MATCH: Status = Status::fixed(
    Code::UnschedulableAndUnresolvable,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    NAME,
);
static CONSTRAINTS_NOT_MATCH: Status =
    Status::fixed(Code::Unschedulable, ERR_REASON_CONSTRAINTS_NOT_MATCH, NAME);

impl FilterPlugin for PodTopologySpread {
    fn filter(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> FilterResult {
        let Some(s) = state.read::<PreFilterState>(PRE_FILTER_STATE_KEY) else {
            return pre_filter_state_missing().into();
        };
        let labels = node.labels();
        // A snapshot node's value of each key is its id in the key's column.
        let at = s.slice.index_of(node);
        for (i, c) in s.constraints.iter().enumerate() {
            let id = at.and_then(|k| s.columns.get(i).and_then(|col| col.ids.get(k)));
            let match_num = match id {
                Some(&LabelColumn::ABSENT) => return FilterResult::shared(&NODE_LABEL_NOT_MATCH),
                Some(&id) => s.domains[i].get_by_id(id),
                None => None,
            };
            let match_num = match match_num {
                Some(m) => m,
                None => match labels.get(&c.topology_key) {
                    Some(value) => s.domains[i].get(value),
                    None => return FilterResult::shared(&NODE_LABEL_NOT_MATCH),
                },
            };
            // 'existing matching num' + 'if self-match (1 or 0)' - 'global minimum' <= 'maxSkew'
            let min_match_num = s.min_match_num(i, c.min_domains);
            let self_match_num = i64::from(s.self_match[i]);
            let skew = match_num + self_match_num - min_match_num;
            if skew > i64::from(c.max_skew) {
                return FilterResult::shared(&CONSTRAINTS_NOT_MATCH);
            }
        }
        FilterResult::PASS
    }
}
