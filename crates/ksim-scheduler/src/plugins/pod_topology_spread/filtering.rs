//! PreFilter, AddPod/RemovePod and Filter (upstream filtering.go): per-constraint counts of
//! matching pods per topology value, the two critical paths, and the max-skew check.

use std::sync::Arc;

use ksim_api::Node;
use rustc_hash::FxHashMap;

use super::common::{matching_pods_per_node, node_labels_match, Constraint};
use super::{
    PodTopologySpread, DO_NOT_SCHEDULE, ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH, MAX_INT32, PRE_FILTER_STATE_KEY,
};
use crate::framework::{
    CycleState, FilterPlugin, FilterResult, PreFilterPlugin, PreFilterResult, Status,
};
use crate::node_info::{LabelColumn, NodeInfo, Snapshot};
use crate::plugins::helper::RequiredNodeAffinity;
use crate::pod_info::PodInfo;

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

/// Matching-pod counts per topology value of one constraint, in first-seen order.
#[derive(Debug, Clone, Default)]
struct Domains {
    /// Topology value → index into `counts`; shared between clones until a value is added.
    index: Arc<FxHashMap<String, usize>>,
    counts: Vec<i64>,
}

impl Domains {
    fn get(&self, value: &str) -> i64 {
        self.index.get(value).map_or(0, |&i| self.counts[i])
    }

    fn index_of(&mut self, value: &str) -> usize {
        if let Some(&i) = self.index.get(value) {
            return i;
        }
        let i = self.counts.len();
        Arc::make_mut(&mut self.index).insert(value.to_string(), i);
        self.counts.push(0);
        i
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
        let node_counts: Vec<FxHashMap<usize, i64>> = constraints
            .iter()
            .map(|c| matching_pods_per_node(snapshot, &c.selector, ns))
            .collect();
        // Every node is visited, in order, through the snapshot's label columns: a node
        // lacking a constraint's key is skipped (`nodeLabelsMatchSpreadConstraints`), and
        // domains are numbered in order of first appearance, as `Domains::index_of` would.
        let columns: Vec<Arc<LabelColumn>> = constraints
            .iter()
            .map(|c| snapshot.label_column(&c.topology_key))
            .collect();
        // Inclusion policies that admit every node need no per-node check.
        let admits_all: Vec<bool> = constraints
            .iter()
            .map(|c| !c.node_taints_honor && (!c.node_affinity_honor || required.is_empty()))
            .collect();
        let mut domain_of: Vec<Vec<u32>> = columns
            .iter()
            .map(|col| vec![u32::MAX; col.values.len()])
            .collect();
        let mut domain_values: Vec<Vec<u32>> = vec![Vec::new(); constraints.len()];
        let mut counts: Vec<Vec<i64>> = vec![Vec::new(); constraints.len()];
        for (k, n) in snapshot.nodes.iter().enumerate() {
            if columns
                .iter()
                .any(|col| col.ids.get(k).is_none_or(|&v| v == LabelColumn::ABSENT))
            {
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                if !admits_all[i] && !c.match_node_inclusion_policies(pod, &n.node, &required) {
                    continue;
                }
                let v = columns[i].ids[k] as usize;
                let d = match domain_of[i][v] {
                    u32::MAX => {
                        let d = domain_values[i].len();
                        domain_of[i][v] = d as u32;
                        domain_values[i].push(v as u32);
                        counts[i].push(0);
                        d
                    }
                    d => d as usize,
                };
                counts[i][d] += node_counts[i].get(&k).copied().unwrap_or(0);
            }
        }
        let domains: Vec<Domains> = (0..constraints.len())
            .map(|i| Domains {
                index: Arc::new(
                    domain_values[i]
                        .iter()
                        .enumerate()
                        .map(|(d, &v)| (columns[i].values[v as usize].clone(), d))
                        .collect(),
                ),
                counts: std::mem::take(&mut counts[i]),
            })
            .collect();
        let mut critical_paths = Vec::with_capacity(constraints.len());
        for d in &domains {
            let mut p = CriticalPaths::new();
            let mut by_index: Vec<(&str, usize)> =
                d.index.iter().map(|(v, &i)| (v.as_str(), i)).collect();
            // Upstream ranges over a Go map (random order); the minimum does not depend on the
            // order, so a fixed one (first seen) keeps ksim deterministic.
            by_index.sort_unstable_by_key(|&(_, i)| i);
            for (v, i) in by_index {
                p.update(i, v, d.counts[i]);
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

impl PodTopologySpread {
    /// The Filter verdict as a [`Status`] (the trait method boxes a rejection).
    fn filter_status(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(s) = state.read::<PreFilterState>(PRE_FILTER_STATE_KEY) else {
            return pre_filter_state_missing();
        };
        let labels = node.labels();
        for (i, c) in s.constraints.iter().enumerate() {
            let Some(value) = labels.get(&c.topology_key) else {
                return Status::unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH);
            };
            // 'existing matching num' + 'if self-match (1 or 0)' - 'global minimum' <= 'maxSkew'
            let min_match_num = s.min_match_num(i, c.min_domains);
            let self_match_num = i64::from(s.self_match[i]);
            let match_num = s.domains[i].get(value);
            let skew = match_num + self_match_num - min_match_num;
            if skew > i64::from(c.max_skew) {
                return Status::unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH);
            }
        }
        Status::success()
    }
}

impl FilterPlugin for PodTopologySpread {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> FilterResult {
        self.filter_status(state, pod, node).into()
    }
}
