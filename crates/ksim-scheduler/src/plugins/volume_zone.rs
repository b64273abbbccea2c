//! `VolumeZone` (upstream). Volume scheduling is built in the volume issue; until then this plugin
//! skips pods without volumes exactly as upstream does and rejects a pod with claim or
//! inline-disk volumes with an explicit error rather than guessing.

use std::sync::Arc;

use crate::framework::{
    CycleState, FactoryArgs, FilterPlugin, Plugin, PluginRef, PreFilterPlugin, PreFilterResult,
    Status,
};
use crate::node_info::{NodeInfo, Snapshot};
use crate::pod_info::PodInfo;

pub const NAME: &str = "VolumeZone";

pub struct Plug;

pub fn new(_: &FactoryArgs<'_>) -> Result<PluginRef, String> {
    Ok(Arc::new(Plug))
}

impl Plugin for Plug {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
}

fn uses_volumes(pod: &PodInfo) -> bool {
    pod.pod.spec.volumes.iter().any(|v| {
        v.persistent_volume_claim.is_some()
            || v.ephemeral.is_some()
            || v.gce_persistent_disk.is_some()
            || v.aws_elastic_block_store.is_some()
            || v.iscsi.is_some()
            || v.rbd.is_some()
    })
}

impl PreFilterPlugin for Plug {
    fn pre_filter(
        &self,
        _: &mut CycleState,
        pod: &PodInfo,
        _: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        if !uses_volumes(pod) {
            return (None, Status::skip());
        }
        (
            None,
            Status::error("volume scheduling is not implemented yet"),
        )
    }
}

impl FilterPlugin for Plug {
    fn filter(&self, _: &CycleState, _: &PodInfo, _: &NodeInfo) -> Status {
        Status::success()
    }
}
