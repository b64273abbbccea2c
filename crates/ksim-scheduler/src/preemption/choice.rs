//! Candidate choice (upstream `SelectCandidate`, `pickOneNodeForPreemption`) and the
//! lower-priority nominated pods whose nomination the caller clears.

use std::sync::Arc;

use super::{earliest_start_of_highest_priority, Candidate};
use crate::framework::runtime::NominatedPods;
use crate::pod_info::PodInfo;

/// `SelectCandidate` with the default score functions (`pickOneNodeForPreemption`).
pub fn select_candidate(candidates: &[Candidate]) -> Option<&Candidate> {
    match candidates {
        [] => None,
        [one] => Some(one),
        _ => Some(&candidates[pick_one_node_for_preemption(candidates)]),
    }
}

/// A candidate as `pickOneNodeForPreemption` scores it: its victims (most important first;
/// owned by a [`Candidate`], borrowed from the node during the dry run) and its number of PDB
/// violations.
type Scored<'a, P> = (&'a [P], i64);

/// How many score functions `pickOneNodeForPreemption` applies.
const SCORE_FUNCS: usize = 5;

/// `pickOneNodeForPreemption`'s score function `k`, in the order they are applied.
fn score<P: AsRef<PodInfo>>(k: usize, (v, pdb): Scored<'_, P>) -> i128 {
    match k {
        0 => -(pdb as i128),
        1 => -(v.first().map_or(0, |p| p.as_ref().priority()) as i128),
        // MaxInt32+1 is added to every priority so that negative priorities still make a
        // node with more victims score lower.
        2 => -v
            .iter()
            .map(|p| p.as_ref().priority() as i128 + i32::MAX as i128 + 1)
            .sum::<i128>(),
        3 => -(v.len() as i128),
        _ => earliest_start_of_highest_priority(v).map_or(i128::MIN, |t| t.as_score()),
    }
}

/// `pickOneNodeForPreemption`: the index of the candidate with, in order, the fewest PDB
/// violations, the lowest highest-victim priority, the lowest sum of priorities, the fewest
/// victims and the latest start of its highest-priority victims; then the first one.
pub fn pick_one_node_for_preemption(candidates: &[Candidate]) -> usize {
    let mut all: Vec<usize> = (0..candidates.len()).collect();
    for k in 0..SCORE_FUNCS {
        let mut selected: Vec<usize> = Vec::new();
        let mut max = i128::MIN;
        for &i in &all {
            let c = &candidates[i];
            let s = score(k, (&c.victims, c.num_pdb_violations));
            if s > max {
                max = s;
                selected.clear();
            }
            if s == max {
                selected.push(i);
            }
        }
        if selected.len() == 1 {
            return selected[0];
        }
        all = selected;
    }
    all.first().copied().unwrap_or(0)
}

/// A candidate's scores by [`pick_one_node_for_preemption`]'s functions, in order: of two
/// candidates the function prefers the one with the lexicographically higher scores, and of
/// equal ones the first. The candidate it picks is therefore the first of the highest-scoring
/// ones, which a running best replaced only on strictly higher scores keeps. The last score
/// (the start time of the highest-priority victims, which reads every victim's start time) is
/// computed only when the first four are equal, once per candidate.
#[derive(Debug, Clone)]
pub(crate) struct Scores {
    head: [i128; 4],
    last: Option<i128>,
}

impl Scores {
    pub(crate) fn new<P: AsRef<PodInfo>>(c: Scored<'_, P>) -> Scores {
        Scores {
            head: [score(0, c), score(1, c), score(2, c), score(3, c)],
            last: None,
        }
    }

    /// Whether `self` (of candidate `c`) scores strictly higher than `other` (of candidate
    /// `o`).
    pub(crate) fn higher<P: AsRef<PodInfo>>(
        &mut self,
        c: Scored<'_, P>,
        other: &mut Scores,
        o: Scored<'_, P>,
    ) -> bool {
        if self.head != other.head {
            return self.head > other.head;
        }
        let mine = *self.last.get_or_insert_with(|| score(4, c));
        let theirs = *other.last.get_or_insert_with(|| score(4, o));
        mine > theirs
    }
}

/// Pods nominated to `node` with a lower priority than `pod`: after preempting there, the caller
/// clears their nomination (upstream `getLowerPriorityNominatedPods` + `clearNominatedNodeName`).
pub fn lower_priority_nominated_pods(
    nominated: &dyn NominatedPods,
    pod: &PodInfo,
    node: &str,
) -> Vec<Arc<PodInfo>> {
    nominated
        .nominated_pods_for_node(node)
        .iter()
        .filter(|p| p.priority() < pod.priority())
        .cloned()
        .collect()
}
