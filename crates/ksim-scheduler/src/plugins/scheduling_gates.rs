//! `SchedulingGates` (upstream `schedulinggates`): PreEnqueue keeps a pod with
//! `spec.schedulingGates` out of the active queue until every gate is removed.

use std::sync::Arc;

use crate::framework::{ClusterEventKind, EnqueueExtensions};
use crate::framework::{FactoryArgs, Plugin, PluginRef, PreEnqueuePlugin, Status};
use crate::pod_info::PodInfo;

pub const NAME: &str = "SchedulingGates";

pub struct SchedulingGates;

pub fn new(_: &FactoryArgs<'_>) -> Result<PluginRef, String> {
    Ok(Arc::new(SchedulingGates))
}

impl Plugin for SchedulingGates {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_pre_enqueue(&self) -> Option<&dyn PreEnqueuePlugin> {
        Some(self)
    }
    fn as_enqueue_extensions(&self) -> Option<&dyn EnqueueExtensions> {
        Some(self)
    }
}

impl PreEnqueuePlugin for SchedulingGates {
    fn pre_enqueue(&self, pod: &PodInfo) -> Status {
        let gates = &pod.pod.spec.scheduling_gates;
        if gates.is_empty() {
            return Status::success();
        }
        let names: Vec<&str> = gates.iter().map(|g| g.name.as_str()).collect();
        Status::new(
            crate::framework::Code::UnschedulableAndUnresolvable,
            format!("waiting for scheduling gates: [{}]", names.join(" ")),
        )
    }
}

impl EnqueueExtensions for SchedulingGates {
    fn events(&self) -> &'static [ClusterEventKind] {
        &[ClusterEventKind::UnscheduledPodUpdate]
    }
}
