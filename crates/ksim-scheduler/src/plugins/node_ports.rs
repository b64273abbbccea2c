//! `NodePorts` (upstream `nodeports`): a pod's host ports must be free on the node, with
//! `0.0.0.0` conflicting with every address.

use std::sync::Arc;

use crate::framework::{
    ClusterEventKind, ClusterEventObjects, CycleState, EnqueueExtensions, FactoryArgs,
    FilterPlugin, FilterResult, Plugin, PluginRef, PreFilterPlugin, PreFilterResult, QueueingHint,
    Status,
};
use crate::node_info::{NodeInfo, Snapshot};
use crate::pod_info::PodInfo;

pub const NAME: &str = "NodePorts";
pub const ERR_REASON: &str = "node(s) didn't have free ports for the requested pod ports";

pub struct NodePorts;

pub fn new(_: &FactoryArgs<'_>) -> Result<PluginRef, String> {
    Ok(Arc::new(NodePorts))
}

impl Plugin for NodePorts {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
    fn as_enqueue_extensions(&self) -> Option<&dyn EnqueueExtensions> {
        Some(self)
    }
}

impl PreFilterPlugin for NodePorts {
    fn pre_filter(
        &self,
        _: &mut CycleState,
        pod: &PodInfo,
        _: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        if pod.host_ports.is_empty() {
            return (None, Status::skip());
        }
        (None, Status::success())
    }
}

impl NodePorts {
    /// The Filter verdict as a [`Status`] (the trait method boxes a rejection).
    fn filter_status(&self, _: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if pod.host_ports.iter().any(|p| node.host_port_conflicts(p)) {
            Status::unschedulable(ERR_REASON)
        } else {
            Status::success()
        }
    }
}

impl FilterPlugin for NodePorts {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> FilterResult {
        self.filter_status(state, pod, node).into()
    }
}

impl EnqueueExtensions for NodePorts {
    fn events(&self) -> &'static [ClusterEventKind] {
        &[
            ClusterEventKind::AssignedPodDelete,
            ClusterEventKind::UnscheduledPodDelete,
            ClusterEventKind::NodeAdd,
        ]
    }
    fn hint(
        &self,
        pod: &PodInfo,
        _: ClusterEventKind,
        objs: &ClusterEventObjects<'_>,
    ) -> QueueingHint {
        match objs {
            ClusterEventObjects::Pod {
                old: Some(old),
                new: None,
            } => {
                if old.pod.spec.node_name.is_empty()
                    && old.pod.status.nominated_node_name.is_empty()
                {
                    return QueueingHint::Skip;
                }
                // Only a deleted pod holding one of our ports can help.
                let conflicts = old.host_ports.iter().any(|h| {
                    pod.host_ports.iter().any(|w| {
                        w.port == h.port
                            && w.protocol == h.protocol
                            && (w.ip == "0.0.0.0" || h.ip == "0.0.0.0" || w.ip == h.ip)
                    })
                });
                if conflicts {
                    QueueingHint::Queue
                } else {
                    QueueingHint::Skip
                }
            }
            _ => QueueingHint::Queue,
        }
    }
}
