//! `NodeNameTieBreak`: the artifact's host selection among equal scores.
//!
//! The FGD artifact does not run upstream kube-scheduler: its `go.mod` replaces
//! `k8s.io/kubernetes` with `github.com/mental2008/kubernetes v1.20.5-minor`, whose
//! `selectHost` keeps, among the nodes with the top total score, the one with the smallest
//! name ("for reproducibility") instead of drawing one at random. Node names carry a seeded
//! random `NNNN-` prefix, so in effect ties go to a fixed, seeded node order.
//!
//! ksim's scheduler core picks at random among ties, as upstream does. This PreScore plugin
//! records the feasible nodes in the order the framework scores them; after `schedule_pod` the
//! experiment driver calls [`select_host`] with the cycle's total scores to apply the
//! artifact's rule. The plugin scores nothing and changes no verdict.

use std::sync::Arc;

use ksim_scheduler::framework::{
    CycleState, FactoryArgs, Plugin, PluginRef, PreScorePlugin, Status,
};
use ksim_scheduler::node_info::{NodeInfo, Snapshot};
use ksim_scheduler::pod_info::PodInfo;

use crate::state::{handle, GpuCluster};

pub const NAME: &str = "NodeNameTieBreak";
const FEASIBLE_KEY: &str = "PreScore-NodeNameTieBreak";

/// The feasible nodes of the cycle (GPU-state slots), in the order of the score table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FeasibleSlots(pub Vec<u32>);

pub struct NodeNameTieBreak;

pub fn new(_: &FactoryArgs<'_>) -> Result<PluginRef, String> {
    Ok(Arc::new(NodeNameTieBreak))
}

impl Plugin for NodeNameTieBreak {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        Some(self)
    }
}

impl PreScorePlugin for NodeNameTieBreak {
    fn pre_score(
        &self,
        state: &mut CycleState,
        _: &PodInfo,
        nodes: &[&NodeInfo],
        _: &Snapshot,
    ) -> Status {
        let slots = match handle(state) {
            Ok(h) => {
                let c = h.read();
                let mut v = Vec::with_capacity(nodes.len());
                for n in nodes {
                    match c.slot(n) {
                        Some(s) => v.push(s as u32),
                        None => {
                            return Status::error(format!(
                                "node {} is not in the GPU state",
                                n.name()
                            ))
                        }
                    }
                }
                v
            }
            Err(s) => return s,
        };
        state.write(FEASIBLE_KEY, FeasibleSlots(slots));
        Status::success()
    }
}

/// The artifact's `selectHost`: among the nodes with the highest total, the one with the
/// smallest name. `totals` are the cycle's total scores, in the order PreScore saw the nodes.
/// `None` when the plugin did not run this cycle (a single feasible node skips scoring) or the
/// table does not match.
pub fn select_host(state: &CycleState, totals: &[i64], cluster: &GpuCluster) -> Option<usize> {
    let FeasibleSlots(slots) = state.read::<FeasibleSlots>(FEASIBLE_KEY)?;
    if slots.len() != totals.len() || slots.is_empty() {
        return None;
    }
    let mut best = 0usize;
    for i in 1..totals.len() {
        let better = totals[i] > totals[best]
            || (totals[i] == totals[best]
                && cluster.name(slots[i] as usize) < cluster.name(slots[best] as usize));
        if better {
            best = i;
        }
    }
    Some(slots[best] as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::GpuRequest;
    use crate::plugins::testutil::{node, pod, Fixture};

    #[test]
    fn ties_go_to_the_smallest_name_higher_scores_win() {
        let f = Fixture::new(
            vec![
                node("0007-c", 8000, 1, "T4"),
                node("0002-a", 8000, 1, "T4"),
                node("0005-b", 8000, 1, "T4"),
            ],
            &[],
        );
        let p = pod("p", 1000, &GpuRequest::share(100));
        let nodes: Vec<&NodeInfo> = f.snapshot.nodes.iter().collect();
        let mut st = f.state();
        assert!(NodeNameTieBreak
            .pre_score(&mut st, &p, &nodes, &f.snapshot)
            .is_success());
        let c = f.handle.read();
        let slot_of = |name: &str| c.slot_by_name(name).unwrap();
        let order: Vec<&str> = nodes.iter().map(|n| n.name()).collect();
        let totals_for = |scores: [(&str, i64); 3]| -> Vec<i64> {
            order
                .iter()
                .map(|n| scores.iter().find(|(m, _)| m == n).unwrap().1)
                .collect()
        };
        let t = totals_for([("0007-c", 50), ("0002-a", 50), ("0005-b", 50)]);
        assert_eq!(select_host(&st, &t, &c), Some(slot_of("0002-a")));
        let t = totals_for([("0007-c", 50), ("0002-a", 40), ("0005-b", 50)]);
        assert_eq!(select_host(&st, &t, &c), Some(slot_of("0005-b")));
        let t = totals_for([("0007-c", 90), ("0002-a", 40), ("0005-b", 50)]);
        assert_eq!(select_host(&st, &t, &c), Some(slot_of("0007-c")));
        // A table of another length, or no PreScore this cycle: no opinion.
        assert_eq!(select_host(&st, &[1, 2], &c), None);
        assert_eq!(select_host(&f.state(), &t, &c), None);
    }
}
