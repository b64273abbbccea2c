//! PreScore, Score and NormalizeScore (upstream scoring.go): the ScheduleAnyway constraints
//! weighed by log(size+2) per topology, with Go's math.Log ported for bit-identical weights.

use ksim_api::Node;
use rustc_hash::FxHashMap;

use std::sync::Arc;

use super::common::{count_pods_match_selector, node_labels_match, Constraint};
use super::{PodTopologySpread, LABEL_HOSTNAME, PRE_SCORE_STATE_KEY, SCHEDULE_ANYWAY};
use crate::framework::{CycleState, PreScorePlugin, ScorePlugin, Status, MAX_NODE_SCORE};
use crate::node_info::{LabelColumn, NodeInfo, Snapshot};
use crate::plugins::helper::RequiredNodeAffinity;
use crate::pod_index::NodeSlice;
use crate::pod_info::PodInfo;
use crate::spread_index::SpreadQuery;

/// upstream `preScoreState`.
#[derive(Clone)]
struct PreScoreState {
    constraints: Vec<Constraint>,
    /// Whether nodes must carry every topology key (not with system defaulting).
    require_all_topologies: bool,
    /// By position in the feasible-node list PreScore was given (`IgnoredNodes`).
    ignored: Vec<bool>,
    /// Per constraint: topology value → matching pods (empty for hostname constraints, which
    /// are counted per node in Score).
    topology_value_to_pod_counts: Vec<FxHashMap<String, i64>>,
    topology_normalizing_weight: Vec<f64>,
    /// The same counts by value id of each constraint's label column, for Score to read a
    /// snapshot node's count by its index (empty when PreScore did not build them).
    by_id: ByValueId,
}

/// [`PreScoreState::topology_value_to_pod_counts`] by the ids of the keys' label columns:
/// `counts[i][id]` is the count of the value with column id `id` (0 when it is no domain).
/// Hostname constraints keep an empty list (Score counts them per node).
#[derive(Clone, Default)]
struct ByValueId {
    columns: Vec<Arc<LabelColumn>>,
    counts: Vec<Vec<i64>>,
    slice: NodeSlice,
}

impl ByValueId {
    /// Whether columns are small enough next to the `scored` nodes for PreScore's walk and
    /// this table to go by id (one lookup per column value).
    fn worth_it(columns: &[Arc<LabelColumn>], scored: usize) -> bool {
        columns.iter().map(|c| c.values.len()).sum::<usize>() <= 4 * scored.max(16)
    }

    /// Built from the final counts and the constraints' label `columns` (left empty when
    /// they are not [`worth_it`](Self::worth_it)).
    fn build(
        constraints: &[Constraint],
        counts: &[FxHashMap<String, i64>],
        columns: Vec<Arc<LabelColumn>>,
        snapshot: &Snapshot,
        scored: usize,
    ) -> ByValueId {
        if !Self::worth_it(&columns, scored) {
            return ByValueId::default();
        }
        let counts = constraints
            .iter()
            .zip(&columns)
            .zip(counts)
            .map(|((c, col), m)| {
                if c.topology_key == LABEL_HOSTNAME {
                    return Vec::new();
                }
                col.values
                    .iter()
                    .map(|v| m.get(v.as_str()).copied().unwrap_or(0))
                    .collect()
            })
            .collect();
        ByValueId {
            columns,
            counts,
            slice: NodeSlice::of(&snapshot.nodes),
        }
    }

    /// [`node_score`] of a snapshot node by its value ids; `None` for any other node.
    #[inline]
    fn node_score(&self, s: &PreScoreState, pod: &PodInfo, node: &NodeInfo) -> Option<i64> {
        if self.columns.is_empty() {
            return None;
        }
        let k = self.slice.index_of(node)?;
        let mut score = 0f64;
        for (i, c) in s.constraints.iter().enumerate() {
            let id = *self.columns[i].ids.get(k)?;
            if id == LabelColumn::ABSENT {
                if s.require_all_topologies {
                    return Some(0);
                }
                continue;
            }
            let cnt = if c.topology_key == LABEL_HOSTNAME {
                count_pods_match_selector(&node.pods, &c.selector, pod.namespace())
            } else {
                *self.counts[i].get(id as usize)?
            };
            score += score_for_count(cnt, c.max_skew, s.topology_normalizing_weight[i]);
        }
        Some(score.round() as i64)
    }
}

impl PreScoreState {
    fn is_ignored(&self, node: &Node) -> bool {
        self.require_all_topologies && !node_labels_match(&node.metadata.labels, &self.constraints)
    }
}

impl PreScorePlugin for PodTopologySpread {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        snapshot: &Snapshot,
    ) -> Status {
        if snapshot.nodes.is_empty() {
            return Status::skip();
        }
        // Only require every topology label with non-system-default spreading, so that nodes
        // without a zone label still get hostname spreading.
        let require_all =
            !pod.pod.spec.topology_spread_constraints.is_empty() || !self.system_defaulted;
        // `initPreScoreState`.
        let constraints = match self.constraints_for(pod, SCHEDULE_ANYWAY, Some(&snapshot.objects))
        {
            Ok(c) => c.unwrap_or_default(),
            Err(e) => {
                return Status::error(format!("calculating preScoreState: {e}"));
            }
        };
        if constraints.is_empty() {
            return Status::skip();
        }
        let mut counts: Vec<FxHashMap<String, i64>> = vec![FxHashMap::default(); constraints.len()];
        let mut ignored = vec![false; nodes.len()];
        let mut num_ignored = 0usize;
        // A snapshot node's value of each key is its id in the key's label column: the domains
        // are marked by id and named once after the walk (the same set of values). Columns
        // much larger than the node list are read by label instead.
        let key_columns: Vec<Arc<LabelColumn>> = constraints
            .iter()
            .map(|c| snapshot.label_column(&c.topology_key))
            .collect();
        let by_id = ByValueId::worth_it(&key_columns, nodes.len());
        let slice = NodeSlice::of(&snapshot.nodes);
        let mut seen: Vec<Vec<bool>> = if by_id {
            key_columns
                .iter()
                .map(|c| vec![false; c.values.len()])
                .collect()
        } else {
            Vec::new()
        };
        let mut seen_absent = vec![false; constraints.len()];
        let mut ids: Vec<u32> = Vec::with_capacity(constraints.len());
        // The node's value of every constraint's key, looked up once per node.
        let mut values: Vec<Option<&String>> = Vec::with_capacity(constraints.len());
        for (k, n) in nodes.iter().enumerate() {
            if let Some(at) = slice.index_of(n).filter(|_| by_id) {
                ids.clear();
                ids.extend(
                    key_columns
                        .iter()
                        .map(|col| col.ids.get(at).copied().unwrap_or(LabelColumn::ABSENT)),
                );
                if require_all && ids.contains(&LabelColumn::ABSENT) {
                    ignored[k] = true;
                    num_ignored += 1;
                    continue;
                }
                for (i, c) in constraints.iter().enumerate() {
                    if c.topology_key == LABEL_HOSTNAME {
                        continue;
                    }
                    match seen[i].get_mut(ids[i] as usize) {
                        Some(seen) => *seen = true,
                        // A missing key reads as "" (below).
                        None => seen_absent[i] = true,
                    }
                }
                continue;
            }
            let labels = n.labels();
            values.clear();
            values.extend(constraints.iter().map(|c| labels.get(&c.topology_key)));
            // `nodeLabelsMatchSpreadConstraints`.
            if require_all && values.iter().any(Option::is_none) {
                ignored[k] = true;
                num_ignored += 1;
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                if c.topology_key == LABEL_HOSTNAME {
                    continue;
                }
                // A missing key reads as "" (Go map semantics) and forms a domain of its own.
                let value = values[i].map_or("", String::as_str);
                if !counts[i].contains_key(value) {
                    counts[i].insert(value.to_string(), 0);
                }
            }
        }
        // The domains marked by id, named (a missing key reads as "", Go map semantics).
        for (i, seen) in seen.iter().enumerate() {
            for (id, _) in seen.iter().enumerate().filter(|(_, &s)| s) {
                let value = key_columns[i].values[id].as_str();
                if !counts[i].contains_key(value) {
                    counts[i].insert(value.to_string(), 0);
                }
            }
        }
        for (i, _) in seen_absent.iter().enumerate().filter(|(_, &a)| a) {
            counts[i].entry(String::new()).or_insert(0);
        }
        let weights: Vec<f64> = constraints
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let size = if c.topology_key == LABEL_HOSTNAME {
                    nodes.len() - num_ignored
                } else {
                    counts[i].len()
                };
                topology_normalizing_weight(size)
            })
            .collect();

        let required = RequiredNodeAffinity::of_pod(&pod.pod);
        let ns = pod.namespace();
        // Upstream adds countPodsMatchSelector of every eligible node to its value's count;
        // the snapshot's pod index keeps those counts per node and per topology value. Only
        // values of candidate nodes are counted; hostname counts are per node (Score).
        let wanted: Vec<usize> = (0..constraints.len())
            .filter(|&i| !counts[i].is_empty())
            .collect();
        if !wanted.is_empty() {
            let columns: Vec<&Arc<LabelColumn>> = wanted.iter().map(|&i| &key_columns[i]).collect();
            let queries: Vec<SpreadQuery<'_>> = wanted
                .iter()
                .zip(&columns)
                .map(|(&i, col)| SpreadQuery {
                    namespace: ns,
                    selector: &constraints[i].selector,
                    key: Some((constraints[i].topology_key.as_str(), col)),
                })
                .collect();
            // Whether a node may lack a constraint's key and still count (for another key's
            // sum): only without `require_all`, or when every node carries every key.
            let every_node_has_every_key = || {
                key_columns
                    .iter()
                    .all(|c| c.ids.iter().all(|&v| v != LabelColumn::ABSENT))
            };
            let key_sums_count =
                !require_all || constraints.len() == 1 || every_node_has_every_key();
            snapshot
                .pod_index
                .with_spread_groups(&queries, snapshot.nodes.len(), |views| {
                    for (&i, view) in wanted.iter().zip(views) {
                        let c = &constraints[i];
                        let admits_all =
                            !c.node_taints_honor && (!c.node_affinity_honor || required.is_empty());
                        match view.key {
                            Some(kc) if admits_all && key_sums_count => {
                                // Nodes without the key read as "" (Go map semantics) and count
                                // there unless they are ignored (`require_all`).
                                for (value, cnt) in counts[i].iter_mut() {
                                    *cnt += kc.get(value);
                                    if value.is_empty() && !require_all {
                                        *cnt += kc.absent;
                                    }
                                }
                            }
                            _ => {
                                // Node by node, in node order (the sum does not depend on it).
                                for (k, &matched) in view.group.per_node.iter().enumerate() {
                                    if matched == 0 {
                                        continue;
                                    }
                                    let Some(n) = snapshot.nodes.get(k) else {
                                        continue;
                                    };
                                    let node = &n.node;
                                    if require_all
                                        && !node_labels_match(&node.metadata.labels, &constraints)
                                    {
                                        continue;
                                    }
                                    if !c.match_node_inclusion_policies(pod, node, &required) {
                                        continue;
                                    }
                                    let value = node
                                        .metadata
                                        .labels
                                        .get(&c.topology_key)
                                        .map_or("", String::as_str);
                                    if let Some(cnt) = counts[i].get_mut(value) {
                                        *cnt += matched;
                                    }
                                }
                            }
                        }
                    }
                });
        }
        let by_id = ByValueId::build(&constraints, &counts, key_columns, snapshot, nodes.len());
        state.write(
            PRE_SCORE_STATE_KEY,
            PreScoreState {
                constraints,
                require_all_topologies: require_all,
                ignored,
                by_id,
                topology_value_to_pod_counts: counts,
                topology_normalizing_weight: weights,
            },
        );
        Status::success()
    }
}

/// A node's score: 0 for an ignored node (without one of the keys when every key is
/// required), else the sum of `scoreForCount` over the constraints whose key the node has.
fn node_score(s: &PreScoreState, pod: &PodInfo, node: &NodeInfo) -> i64 {
    let labels = node.labels();
    let mut score = 0f64;
    for (i, c) in s.constraints.iter().enumerate() {
        let Some(value) = labels.get(&c.topology_key) else {
            if s.require_all_topologies {
                return 0;
            }
            continue;
        };
        let cnt = if c.topology_key == LABEL_HOSTNAME {
            count_pods_match_selector(&node.pods, &c.selector, pod.namespace())
        } else {
            s.topology_value_to_pod_counts[i]
                .get(value.as_str())
                .copied()
                .unwrap_or(0)
        };
        score += score_for_count(cnt, c.max_skew, s.topology_normalizing_weight[i]);
    }
    // Go's math.Round rounds half away from zero, as f64::round does.
    score.round() as i64
}

fn pre_score_state_missing() -> Status {
    Status::error(format!(
        "error reading {PRE_SCORE_STATE_KEY:?} from cycleState: not found"
    ))
}

impl ScorePlugin for PodTopologySpread {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let Some(s) = state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) else {
            return Err(pre_score_state_missing());
        };
        if s.is_ignored(&node.node) {
            return Ok(0);
        }
        Ok(node_score(s, pod, node))
    }

    /// The cycle state read once; a node's value of each key looked up once (the ignored
    /// test and the score share it). Same scores as [`score`](ScorePlugin::score).
    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        out: &mut Vec<i64>,
    ) -> Result<(), Status> {
        let Some(s) = state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) else {
            return Err(pre_score_state_missing());
        };
        out.extend(nodes.iter().map(|node| {
            s.by_id
                .node_score(s, pod, node)
                .unwrap_or_else(|| node_score(s, pod, node))
        }));
        Ok(())
    }

    fn has_normalize(&self) -> bool {
        true
    }

    fn normalize(&self, state: &CycleState, _pod: &PodInfo, scores: &mut [i64]) -> Status {
        let Some(s) = state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) else {
            return pre_score_state_missing();
        };
        const INVALID_SCORE: i64 = -1;
        let mut min_score = i64::MAX;
        let mut max_score = 0i64;
        for (i, score) in scores.iter_mut().enumerate() {
            if s.ignored.get(i).copied().unwrap_or(false) {
                *score = INVALID_SCORE;
                continue;
            }
            min_score = min_score.min(*score);
            max_score = max_score.max(*score);
        }
        for score in scores.iter_mut() {
            if *score == INVALID_SCORE {
                *score = 0;
                continue;
            }
            if max_score == 0 {
                *score = MAX_NODE_SCORE;
                continue;
            }
            *score = MAX_NODE_SCORE * (max_score + min_score - *score) / max_score;
        }
        Status::success()
    }
}

/// `topologyNormalizingWeight`: `log(size + 2)`.
pub(super) fn topology_normalizing_weight(size: usize) -> f64 {
    go_log((size + 2) as f64)
}

/// `scoreForCount`: `cnt * weight + (maxSkew - 1)`.
pub(super) fn score_for_count(cnt: i64, max_skew: i32, weight: f64) -> f64 {
    cnt as f64 * weight + f64::from(max_skew - 1)
}

/// Go's `math.Frexp`.
pub(super) fn go_frexp(f: f64) -> (f64, i32) {
    if f == 0.0 || f.is_infinite() || f.is_nan() {
        return (f, 0);
    }
    let (f, mut exp) = if f.abs() < f64::MIN_POSITIVE {
        (f * (1u64 << 52) as f64, -52)
    } else {
        (f, 0)
    };
    let mut x = f.to_bits();
    exp += ((x >> 52) & 0x7ff) as i32 - 1023 + 1;
    x &= !(0x7ffu64 << 52);
    x |= 1022u64 << 52;
    (f64::from_bits(x), exp)
}

/// Go's pure-Go `math.Log` (FreeBSD `e_log.c`), operation for operation, so results are
/// bit-identical to upstream's (amd64's assembly version evaluates the same expression).
pub(super) fn go_log(x: f64) -> f64 {
    // The bit patterns fdlibm and Go's source give next to the decimal literals.
    const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
    const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
    const L1: f64 = f64::from_bits(0x3fe5_5555_5555_5593);
    const L2: f64 = f64::from_bits(0x3fd9_9999_9997_fa04);
    const L3: f64 = f64::from_bits(0x3fd2_4924_9422_9359);
    const L4: f64 = f64::from_bits(0x3fcc_71c5_1d8e_78af);
    const L5: f64 = f64::from_bits(0x3fc7_4664_96cb_03de);
    const L6: f64 = f64::from_bits(0x3fc3_9a09_d078_c69f);
    const L7: f64 = f64::from_bits(0x3fc2_f112_df3e_5244);
    if x.is_nan() || x == f64::INFINITY {
        return x;
    }
    if x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    let (mut f1, mut ki) = go_frexp(x);
    if f1 < std::f64::consts::SQRT_2 / 2.0 {
        f1 *= 2.0;
        ki -= 1;
    }
    let f = f1 - 1.0;
    let k = f64::from(ki);
    let s = f / (2.0 + f);
    let s2 = s * s;
    let s4 = s2 * s2;
    let t1 = s2 * (L1 + s4 * (L3 + s4 * (L5 + s4 * L7)));
    let t2 = s4 * (L2 + s4 * (L4 + s4 * L6));
    let r = t1 + t2;
    let hfsq = 0.5 * f * f;
    k * LN2_HI - ((hfsq - (s * (hfsq + r) + k * LN2_LO)) - f)
}
