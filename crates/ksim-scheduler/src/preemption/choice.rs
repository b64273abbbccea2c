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

/// `pickOneNodeForPreemption`: the index of the candidate with, in order, the fewest PDB
/// violations, the lowest highest-victim priority, the lowest sum of priorities, the fewest
/// victims and the latest start of its highest-priority victims; then the first one.
pub fn pick_one_node_for_preemption(candidates: &[Candidate]) -> usize {
    type ScoreFn = fn(&Candidate) -> i128;
    const SCORE_FUNCS: [ScoreFn; 5] = [
        |c| -(c.num_pdb_violations as i128),
        |c| -(c.victims.first().map_or(0, |p| p.priority()) as i128),
        |c| {
            // MaxInt32+1 is added to every priority so that negative priorities still make a
            // node with more victims score lower.
            -c.victims
                .iter()
                .map(|p| p.priority() as i128 + i32::MAX as i128 + 1)
                .sum::<i128>()
        },
        |c| -(c.victims.len() as i128),
        |c| earliest_start_of_highest_priority(&c.victims).map_or(i128::MIN, |t| t.as_score()),
    ];
    let mut all: Vec<usize> = (0..candidates.len()).collect();
    for f in SCORE_FUNCS {
        let mut selected: Vec<usize> = Vec::new();
        let mut max = i128::MIN;
        for &i in &all {
            let s = f(&candidates[i]);
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
