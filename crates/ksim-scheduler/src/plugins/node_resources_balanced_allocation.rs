//! `NodeResourcesBalancedAllocation` (upstream `noderesources.BalancedAllocation`): favours
//! nodes whose requested fractions of the configured resources are even. Skips pods that
//! request none of those resources.
//!
//! v1.36 scores the improvement a pod brings, `50 + (50 + withPod − withoutPod) / 2`, where
//! each term is v1.35's balance score (`balancedResourceScorer`) with and without the pod:
//! [`Features::balanced_allocation_improvement`](crate::framework::Features) (not a gate
//! upstream: the v1.36 code; see docs/versions.md). v1.35 scores the balance with the pod.

use std::sync::Arc;

use ksim_api::config::{decode_args, NodeResourcesBalancedAllocationArgs};

use crate::framework::{
    ClusterEventKind, CycleState, EnqueueExtensions, FactoryArgs, Plugin, PluginRef,
    PreScorePlugin, ScorePlugin, Status,
};
use crate::node_info::{NodeInfo, Snapshot};
use crate::plugins::node_resources_fit::{PodRequests, ResourceAllocationScorer, Strategy};
use crate::pod_info::PodInfo;

pub const NAME: &str = "NodeResourcesBalancedAllocation";

pub struct BalancedAllocation {
    scorer: ResourceAllocationScorer,
}

pub fn new(a: &FactoryArgs<'_>) -> Result<PluginRef, String> {
    let args: NodeResourcesBalancedAllocationArgs =
        decode_args::<NodeResourcesBalancedAllocationArgs>(NAME, a.args)?.defaulted();
    if args.resources.len() > 16 {
        return Err("resources: at most 16 resources are supported".into());
    }
    Ok(Arc::new(BalancedAllocation {
        scorer: ResourceAllocationScorer::new(Strategy::Balanced, args.resources, true)
            .with_improvement(a.features.balanced_allocation_improvement),
    }))
}

impl Plugin for BalancedAllocation {
    fn name(&self) -> &'static str {
        NAME
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

impl PreScorePlugin for BalancedAllocation {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _: &[&NodeInfo],
        _: &Snapshot,
    ) -> Status {
        let reqs = self.scorer.pod_requests(pod);
        if reqs.iter().all(|r| *r == 0) {
            return Status::skip();
        }
        state.write(NAME, PodRequests(reqs));
        Status::success()
    }
}

impl ScorePlugin for BalancedAllocation {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(self.scorer.score_from(state, NAME, pod, node))
    }

    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        out: &mut Vec<i64>,
    ) -> Result<(), Status> {
        self.scorer.score_nodes_from(state, NAME, pod, nodes, out);
        Ok(())
    }

    fn score_nodes_in(
        &self,
        state: &CycleState,
        _: &PodInfo,
        snapshot: &Snapshot,
        feasible: &[usize],
        out: &mut Vec<i64>,
    ) -> Option<Result<(), Status>> {
        self.scorer
            .score_nodes_in_from(state, NAME, snapshot, feasible, out)
    }
}

impl EnqueueExtensions for BalancedAllocation {
    fn events(&self) -> &'static [ClusterEventKind] {
        &[]
    }
}
