//! PreScore, Score and NormalizeScore (upstream scoring.go): preferred term weights (and
//! hardPodAffinityWeight) summed per topology pair, then min-max normalised.

use ksim_api::Labels;
use rustc_hash::FxHashMap;

use super::{incoming_term_matches, InterPodAffinity, PRE_SCORE_STATE_KEY};
use crate::framework::{CycleState, PreScorePlugin, ScorePlugin, Status, MAX_NODE_SCORE};
use crate::node_info::{NodeInfo, Snapshot};
use crate::pod_index::TermKind;
use crate::pod_info::PodInfo;

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
