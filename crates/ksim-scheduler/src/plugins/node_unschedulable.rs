//! `NodeUnschedulable` (upstream `nodeunschedulable`): a cordoned node (`spec.unschedulable`)
//! rejects pods that do not tolerate `node.kubernetes.io/unschedulable:NoSchedule`.

use std::sync::Arc;

use ksim_api::Taint;

use crate::framework::{
    ClusterEventKind, ClusterEventObjects, CycleState, EnqueueExtensions, FactoryArgs,
    FilterPlugin, FilterResult, Plugin, PluginRef, QueueingHint, Status,
};
use crate::node_info::{NodeFlags, NodeInfo};
use crate::plugins::helper::tolerations_tolerate;
use crate::pod_info::PodInfo;

pub const NAME: &str = "NodeUnschedulable";
pub const ERR_REASON: &str = "node(s) were unschedulable";

pub struct NodeUnschedulable {
    taint: Taint,
}

pub fn new(_: &FactoryArgs<'_>) -> Result<PluginRef, String> {
    Ok(Arc::new(NodeUnschedulable {
        taint: Taint {
            key: "node.kubernetes.io/unschedulable".into(),
            value: String::new(),
            effect: "NoSchedule".into(),
        },
    }))
}

impl Plugin for NodeUnschedulable {
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

impl FilterPlugin for NodeUnschedulable {
    fn filter(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> FilterResult {
        if !node.unschedulable() || tolerations_tolerate(&pod.pod.spec.tolerations, &self.taint) {
            return FilterResult::PASS;
        }
        Status::unresolvable(ERR_REASON).into()
    }

    /// The verdict reads the node object only.
    fn ignores_pods(&self) -> bool {
        true
    }

    /// Only a cordoned node can reject, and none does a pod tolerating the unschedulable taint.
    fn passes_nodes_without(&self, pod: &PodInfo) -> Option<NodeFlags> {
        if tolerations_tolerate(&pod.pod.spec.tolerations, &self.taint) {
            Some(NodeFlags::NONE)
        } else {
            Some(NodeFlags::UNSCHEDULABLE)
        }
    }
}

impl EnqueueExtensions for NodeUnschedulable {
    fn events(&self) -> &'static [ClusterEventKind] {
        &[
            ClusterEventKind::NodeAdd,
            ClusterEventKind::NodeUpdateTaint,
            ClusterEventKind::UnscheduledPodUpdate,
        ]
    }
    fn hint(
        &self,
        _: &PodInfo,
        _: ClusterEventKind,
        objs: &ClusterEventObjects<'_>,
    ) -> QueueingHint {
        // Queue when a schedulable node is added, or a node goes unschedulable → schedulable.
        match objs {
            ClusterEventObjects::Node {
                old,
                new: Some(new),
            } => {
                let now_ok = !new.spec.unschedulable;
                match old {
                    None if now_ok => QueueingHint::Queue,
                    Some(o) if o.spec.unschedulable && now_ok => QueueingHint::Queue,
                    _ => QueueingHint::Skip,
                }
            }
            ClusterEventObjects::Pod { .. } => QueueingHint::Queue,
            _ => QueueingHint::Skip,
        }
    }
}
