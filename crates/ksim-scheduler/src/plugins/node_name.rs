//! `NodeName` (upstream `nodename`): a pod with `spec.nodeName` fits only that node.

use std::sync::Arc;

use crate::framework::{
    ClusterEventKind, ClusterEventObjects, CycleState, EnqueueExtensions, FactoryArgs,
    FilterPlugin, FilterResult, Plugin, PluginRef, QueueingHint, Status,
};
use crate::node_info::{NodeFlags, NodeInfo};
use crate::pod_info::PodInfo;

pub const NAME: &str = "NodeName";
pub const ERR_REASON: &str = "node(s) didn't match the requested node name";

pub struct NodeName;

pub fn new(_: &FactoryArgs<'_>) -> Result<PluginRef, String> {
    Ok(Arc::new(NodeName))
}

impl Plugin for NodeName {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
    fn as_enqueue_extensions(&self) -> Option<&dyn EnqueueExtensions> {
        Some(self)
    }
}

impl FilterPlugin for NodeName {
    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> FilterResult {
        let want = &pod.pod.spec.node_name;
        if want.is_empty() || want == node.name() {
            FilterResult::PASS
        } else {
            Status::unresolvable(ERR_REASON).into()
        }
    }

    /// The verdict reads the node object only.
    fn ignores_pods(&self) -> bool {
        true
    }

    /// A pod without `spec.nodeName` fits every node.
    fn passes_nodes_without(&self, pod: &PodInfo) -> Option<NodeFlags> {
        pod.pod.spec.node_name.is_empty().then_some(NodeFlags::NONE)
    }
}

impl EnqueueExtensions for NodeName {
    fn events(&self) -> &'static [ClusterEventKind] {
        &[ClusterEventKind::NodeAdd]
    }
    fn hint(
        &self,
        pod: &PodInfo,
        _: ClusterEventKind,
        objs: &ClusterEventObjects<'_>,
    ) -> QueueingHint {
        match objs {
            ClusterEventObjects::Node { new: Some(n), .. }
                if n.metadata.name == pod.pod.spec.node_name =>
            {
                QueueingHint::Queue
            }
            ClusterEventObjects::Node { .. } => QueueingHint::Skip,
            _ => QueueingHint::Queue,
        }
    }
}
