//! `TaintToleration` (upstream `tainttoleration`): Filter rejects nodes with an untolerated
//! NoSchedule/NoExecute taint; Score counts untolerated PreferNoSchedule taints, reverse-
//! normalised so that fewer is better.

use std::sync::Arc;

use ksim_api::{Taint, Toleration};

use crate::framework::{
    ClusterEventKind, ClusterEventObjects, CycleState, EnqueueExtensions, FactoryArgs,
    FilterPlugin, FilterResult, Plugin, PluginRef, PreScorePlugin, QueueingHint, ScorePlugin,
    Status, MAX_NODE_SCORE,
};
use crate::node_info::{NodeFlags, NodeInfo, Snapshot};
use crate::plugins::helper::{
    default_normalize_score, find_untolerated_taint, tolerations_tolerate,
};
use crate::pod_info::PodInfo;

pub const NAME: &str = "TaintToleration";
pub const ERR_REASON_NOT_MATCH: &str = "node(s) had untolerated taint(s)";

pub struct TaintToleration;

pub fn new(_: &FactoryArgs<'_>) -> Result<PluginRef, String> {
    Ok(Arc::new(TaintToleration))
}

impl Plugin for TaintToleration {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        Some(self)
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
    fn as_enqueue_extensions(&self) -> Option<&dyn EnqueueExtensions> {
        Some(self)
    }
}

fn do_not_schedule(t: &Taint) -> bool {
    t.effect == "NoSchedule" || t.effect == "NoExecute"
}

impl FilterPlugin for TaintToleration {
    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> FilterResult {
        if !node.tainted() {
            return FilterResult::PASS;
        }
        match find_untolerated_taint(
            &node.node.spec.taints,
            &pod.pod.spec.tolerations,
            do_not_schedule,
        ) {
            None => FilterResult::PASS,
            Some(_) => Status::unresolvable(ERR_REASON_NOT_MATCH).into(),
        }
    }

    /// The verdict reads the node object only.
    fn ignores_pods(&self) -> bool {
        true
    }

    /// A node without taints has none the pod fails to tolerate.
    fn passes_nodes_without(&self, _: &PodInfo) -> Option<NodeFlags> {
        Some(NodeFlags::TAINTED)
    }
}

/// Tolerations whose effect is empty or PreferNoSchedule.
#[derive(Clone)]
struct PreScoreState(Vec<Toleration>);

impl PreScorePlugin for TaintToleration {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        _: &Snapshot,
    ) -> Status {
        if nodes.is_empty() {
            return Status::success();
        }
        state.write(NAME, PreScoreState(prefer_no_schedule_tolerations(pod)));
        Status::success()
    }
}

/// Tolerations whose effect is empty or PreferNoSchedule (what Score considers).
fn prefer_no_schedule_tolerations(pod: &PodInfo) -> Vec<Toleration> {
    pod.pod
        .spec
        .tolerations
        .iter()
        .filter(|t| t.effect.is_empty() || t.effect == "PreferNoSchedule")
        .cloned()
        .collect()
}

/// Untolerated PreferNoSchedule taints of a node.
fn count_intolerable(tols: &[Toleration], node: &NodeInfo) -> i64 {
    if !node.tainted() {
        return 0;
    }
    node.node
        .spec
        .taints
        .iter()
        .filter(|t| t.effect == "PreferNoSchedule" && !tolerations_tolerate(tols, t))
        .count() as i64
}

impl ScorePlugin for TaintToleration {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(match state.read::<PreScoreState>(NAME) {
            Some(s) => count_intolerable(&s.0, node),
            None => count_intolerable(&prefer_no_schedule_tolerations(pod), node),
        })
    }

    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        out: &mut Vec<i64>,
    ) -> Result<(), Status> {
        let computed;
        let tols: &[Toleration] = match state.read::<PreScoreState>(NAME) {
            Some(s) => &s.0,
            None => {
                computed = prefer_no_schedule_tolerations(pod);
                &computed
            }
        };
        out.extend(nodes.iter().map(|n| count_intolerable(tols, n)));
        Ok(())
    }

    /// No node with an untolerated PreferNoSchedule taint (an untainted node has none): every
    /// node counts 0, which the reverse normalization turns into the maximum score.
    fn uniform_score(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
    ) -> Option<(i64, i64)> {
        // Untainted nodes (most) need no tolerations to count nothing.
        let mut tainted = nodes.iter().filter(|n| n.tainted()).peekable();
        if tainted.peek().is_some() {
            let computed;
            let tols: &[Toleration] = match state.read::<PreScoreState>(NAME) {
                Some(s) => &s.0,
                None => {
                    computed = prefer_no_schedule_tolerations(pod);
                    &computed
                }
            };
            if tainted.any(|n| count_intolerable(tols, n) != 0) {
                return None;
            }
        }
        Some((0, MAX_NODE_SCORE))
    }

    /// No tainted node among them: every node counts nothing, without reading a node.
    fn uniform_score_with_flags(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        flags: NodeFlags,
    ) -> Option<(i64, i64)> {
        if flags.intersects(NodeFlags::TAINTED) {
            self.uniform_score(state, pod, nodes)
        } else {
            Some((0, MAX_NODE_SCORE))
        }
    }

    fn has_normalize(&self) -> bool {
        true
    }
    fn normalize(&self, _: &CycleState, _: &PodInfo, scores: &mut [i64]) -> Status {
        default_normalize_score(MAX_NODE_SCORE, true, scores);
        Status::success()
    }
}

impl EnqueueExtensions for TaintToleration {
    fn events(&self) -> &'static [ClusterEventKind] {
        &[
            ClusterEventKind::NodeAdd,
            ClusterEventKind::NodeUpdateTaint,
            ClusterEventKind::UnscheduledPodUpdate,
        ]
    }

    fn hint(
        &self,
        pod: &PodInfo,
        _: ClusterEventKind,
        objs: &ClusterEventObjects<'_>,
    ) -> QueueingHint {
        match objs {
            ClusterEventObjects::Node {
                old,
                new: Some(new),
            } => {
                let untolerated = |n: &ksim_api::Node| {
                    find_untolerated_taint(
                        &n.spec.taints,
                        &pod.pod.spec.tolerations,
                        do_not_schedule,
                    )
                    .is_some()
                };
                let was = old.is_none_or(untolerated);
                if was && !untolerated(new) {
                    QueueingHint::Queue
                } else {
                    QueueingHint::Skip
                }
            }
            _ => QueueingHint::Queue,
        }
    }
}
