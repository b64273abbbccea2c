//! PreScore, Score and NormalizeScore (upstream scoring.go): preferred term weights (and
//! hardPodAffinityWeight) summed per topology pair, then min-max normalised.

use std::sync::Arc;

use super::filtering::incoming_term_counts;
use super::{InterPodAffinity, PRE_SCORE_STATE_KEY};
use crate::framework::{CycleState, PreScorePlugin, ScorePlugin, Status, MAX_NODE_SCORE};
use crate::node_info::{NodeInfo, Snapshot};
use crate::pod_index::{NodeSlice, TermKind, TopologyColumn, ValueCounts};
use crate::pod_info::PodInfo;

/// `scoreMap` (topology key → value → summed weight) as a list of sources: per-value pod
/// counts from the snapshot's pod index (or counted this cycle), each with the column of its
/// topology key (the counts are by the column's value ids) and the weight every counted pod
/// adds (`weight * multiplier`). Upstream adds the weight once per matching pod, so a value's
/// sum is the sum of weight times count over the sources.
#[derive(Debug, Clone, Default)]
struct TopologyScore(Vec<(Arc<TopologyColumn>, Arc<ValueCounts>, i64)>);

impl TopologyScore {
    /// Adds a source; false (and nothing added) when it counts no pod, as upstream's map gets
    /// no entry then.
    fn add(&mut self, column: &Arc<TopologyColumn>, counts: Arc<ValueCounts>, weight: i64) -> bool {
        if counts.is_empty() {
            return false;
        }
        self.0.push((column.clone(), counts, weight));
        true
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// `preScoreState`.
#[derive(Debug, Clone)]
struct PreScoreState {
    topology_score: TopologyScore,
    /// The snapshot's nodes, for reading the columns by node index.
    slice: NodeSlice,
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
        let namespace_labels = objects.namespace_labels(pod.namespace());
        let mut score = TopologyScore::default();
        let mut any = false;
        // Upstream runs processExistingPod over every pod (with constraints) or every pod with
        // (anti-)affinity, adding `weight * multiplier` per matching term to the pair of the
        // pod's node. Those sums are taken per distinct term from the snapshot's pod index:
        // the incoming pod's terms with the bound pods each selects, per topology value; the
        // existing pods' term groups that may select the incoming pod, each matched once, with
        // how many pods carry them per topology value.
        if has_constraints {
            for (kind, terms, multiplier) in [
                (TermKind::PreferredAffinity, &pod.preferred_affinity, 1),
                (
                    TermKind::PreferredAntiAffinity,
                    &pod.preferred_anti_affinity,
                    -1,
                ),
            ] {
                for t in terms {
                    let (column, counts) = incoming_term_counts(snapshot, kind, t.weight, &t.term);
                    let w = i64::from(t.weight.wrapping_mul(multiplier));
                    any |= score.add(&column, counts, w);
                }
            }
        }
        let hard = self.hard_pod_affinity_weight;
        for (kind, multiplier) in [
            (TermKind::RequiredAffinity, 1),
            (TermKind::PreferredAffinity, 1),
            (TermKind::PreferredAntiAffinity, -1),
        ] {
            if kind == TermKind::RequiredAffinity && hard <= 0 {
                continue;
            }
            snapshot
                .pod_index
                .for_each_group_candidate(kind, pod.labels(), |g| {
                    if g.term.matches(pod, &namespace_labels) {
                        let weight = if kind == TermKind::RequiredAffinity {
                            hard
                        } else {
                            g.weight
                        };
                        let w = i64::from(weight.wrapping_mul(multiplier));
                        any |= score.add(&g.column, g.holders.clone(), w);
                    }
                });
        }
        if !any {
            return Status::skip();
        }
        state.write(
            PRE_SCORE_STATE_KEY,
            PreScoreState {
                topology_score: score,
                slice: NodeSlice::of(&snapshot.nodes),
            },
        );
        Status::success()
    }
}

/// A node's score: `weight * count` of every source at the node's value of its key.
fn node_score(score: &TopologyScore, slice: NodeSlice, node: &NodeInfo) -> i64 {
    let mut total = 0i64;
    for (column, counts, weight) in &score.0 {
        let c = counts.get(column.id_of_node(slice, node));
        if c != 0 {
            total = total.wrapping_add(c.wrapping_mul(*weight));
        }
    }
    total
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
        Ok(node_score(&s.topology_score, s.slice, node))
    }

    /// The cycle state read once; when every source has the same topology key (the common
    /// case: the incoming pod's term and the existing pods' group of one Deployment), the
    /// node's value id is read once for all of them. Same sums in the same order as
    /// [`score`](ScorePlugin::score).
    fn score_nodes(
        &self,
        state: &CycleState,
        _pod: &PodInfo,
        nodes: &[&NodeInfo],
        out: &mut Vec<i64>,
    ) -> Result<(), Status> {
        let s = pre_score_state(state)?;
        let sources = &s.topology_score.0;
        let slice = s.slice;
        match sources.as_slice() {
            [(column, counts, weight)] => out.extend(nodes.iter().map(|n| {
                counts
                    .get(column.id_of_node(slice, n))
                    .wrapping_mul(*weight)
            })),
            [(column, _, _), rest @ ..] if rest.iter().all(|(c, _, _)| Arc::ptr_eq(c, column)) => {
                out.extend(nodes.iter().map(|n| {
                    let id = column.id_of_node(slice, n);
                    let mut score = 0i64;
                    for (_, counts, weight) in sources {
                        let c = counts.get(id);
                        if c != 0 {
                            score = score.wrapping_add(c.wrapping_mul(*weight));
                        }
                    }
                    score
                }));
            }
            _ => out.extend(
                nodes
                    .iter()
                    .map(|n| node_score(&s.topology_score, slice, n)),
            ),
        }
        Ok(())
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
