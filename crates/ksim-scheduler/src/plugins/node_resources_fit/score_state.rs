//! The Score extension point shared by the plugins built on [`ResourceAllocationScorer`]
//! (NodeResourcesFit and NodeResourcesBalancedAllocation): the pod's requests that PreScore
//! keeps under the plugin's own key, and the scores read from them.

use super::ResourceAllocationScorer;
use crate::framework::{CycleState, Status};
use crate::node_info::{NodeInfo, Snapshot};
use crate::pod_info::PodInfo;

/// A resource scorer's PreScore state: the pod's request for each configured resource, kept
/// under the plugin's own key (NodeResourcesFit and NodeResourcesBalancedAllocation).
#[derive(Clone)]
pub(crate) struct PodRequests(pub(crate) Vec<i64>);

/// The Score extension point of a plugin built on [`ResourceAllocationScorer`], reading the
/// pod's requests from the state its PreScore wrote under `key` (computed again when PreScore
/// did not run).
impl ResourceAllocationScorer {
    pub(crate) fn score_from(
        &self,
        state: &CycleState,
        key: &'static str,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> i64 {
        match state.read::<PodRequests>(key) {
            Some(s) => self.score(node, &s.0),
            None => self.score(node, &self.pod_requests(pod)),
        }
    }

    pub(crate) fn score_nodes_from(
        &self,
        state: &CycleState,
        key: &'static str,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        out: &mut Vec<i64>,
    ) {
        let computed;
        let reqs = match state.read::<PodRequests>(key) {
            Some(s) => &s.0,
            None => {
                computed = self.pod_requests(pod);
                &computed
            }
        };
        self.score_nodes(nodes, reqs, out);
    }

    /// [`score_nodes_in`](Self::score_nodes_in) with the requests PreScore wrote; `None`
    /// when it wrote none or the columns cannot answer (the framework asks node by node).
    pub(crate) fn score_nodes_in_from(
        &self,
        state: &CycleState,
        key: &'static str,
        snapshot: &Snapshot,
        feasible: &[usize],
        out: &mut Vec<i64>,
    ) -> Option<Result<(), Status>> {
        let reqs = &state.read::<PodRequests>(key)?.0;
        self.score_nodes_in(snapshot, feasible, reqs, out)
            .then_some(Ok(()))
    }
}
