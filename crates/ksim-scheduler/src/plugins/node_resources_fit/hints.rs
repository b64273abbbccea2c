//! NodeResourcesFit's queueing hints (`EventsToRegister`, `isSchedulableAfterPodEvent`,
//! `isSchedulableAfterNodeChange`).

use super::*;

impl EnqueueExtensions for Fit {
    fn events(&self) -> &'static [ClusterEventKind] {
        // With queueing hints on, upstream registers pod deletion (and scale-down) and node
        // add / allocatable change only.
        &[
            ClusterEventKind::AssignedPodDelete,
            ClusterEventKind::UnscheduledPodDelete,
            ClusterEventKind::NodeAdd,
            ClusterEventKind::NodeUpdateAllocatable,
        ]
    }

    fn hint(
        &self,
        pod: &PodInfo,
        kind: ClusterEventKind,
        objs: &ClusterEventObjects<'_>,
    ) -> QueueingHint {
        match (kind, objs) {
            (
                ClusterEventKind::AssignedPodDelete | ClusterEventKind::UnscheduledPodDelete,
                ClusterEventObjects::Pod { old: Some(old), .. },
            ) => {
                if old.pod.spec.node_name.is_empty()
                    && old.pod.status.nominated_node_name.is_empty()
                {
                    QueueingHint::Skip
                } else {
                    QueueingHint::Queue
                }
            }
            (
                _,
                ClusterEventObjects::Node {
                    old,
                    new: Some(new),
                },
            ) => {
                if !self.fits_empty_node(pod, new) {
                    return QueueingHint::Skip;
                }
                match old {
                    None => QueueingHint::Queue,
                    Some(old) if requested_resources_increased(pod, old, new) => {
                        QueueingHint::Queue
                    }
                    Some(_) => QueueingHint::Skip,
                }
            }
            _ => QueueingHint::Queue,
        }
    }
}

impl Fit {
    /// upstream `isFit`: the pod fits the node's allocatable with no other pod on it.
    fn fits_empty_node(&self, pod: &PodInfo, node: &ksim_api::Node) -> bool {
        let info = NodeInfo::new(std::sync::Arc::new(node.clone()));
        self.filter(&CycleState::new(), pod, &info).is_success()
    }
}

/// upstream `haveAnyRequestedResourcesIncreased`.
fn requested_resources_increased(
    pod: &PodInfo,
    old: &ksim_api::Node,
    new: &ksim_api::Node,
) -> bool {
    let o = crate::resource::Resource::from_list(&old.status.allocatable);
    let n = crate::resource::Resource::from_list(&new.status.allocatable);
    if n.allowed_pod_number > o.allowed_pod_number {
        return true;
    }
    let r = &pod.requests;
    if r.milli_cpu == 0 && r.memory == 0 && r.ephemeral_storage == 0 && r.scalar.is_empty() {
        return false;
    }
    if (r.milli_cpu > 0 && n.milli_cpu > o.milli_cpu)
        || (r.memory > 0 && n.memory > o.memory)
        || (r.ephemeral_storage > 0 && n.ephemeral_storage > o.ephemeral_storage)
    {
        return true;
    }
    r.scalar
        .iter()
        .any(|(name, q)| *q != 0 && n.scalar(name) > o.scalar(name))
}
