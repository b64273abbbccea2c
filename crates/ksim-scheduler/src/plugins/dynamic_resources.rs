//! `DynamicResources` (upstream `dynamicresources`), as it behaves for pods without resource
//! claims, which is every pod ksim models: PreFilter skips, Score gives 0, and PostFilter
//! answers "no new claims to deallocate" — or `not found` when its PreFilter never ran because
//! an earlier PreFilter plugin rejected the pod. Deliberate difference: ResourceClaims and
//! DeviceClasses are not modelled; a pod with `spec.resourceClaims` is treated the same way.

use std::sync::Arc;

use crate::framework::{
    CycleState, FactoryArgs, NodeToStatus, Plugin, PluginRef, PostFilterContext, PostFilterPlugin,
    PostFilterResult, PreFilterPlugin, PreFilterResult, PreScorePlugin, ScorePlugin, Status,
};
use crate::node_info::{NodeInfo, Snapshot};
use crate::pod_info::PodInfo;

pub const NAME: &str = "DynamicResources";

pub struct DynamicResources;

pub fn new(_: &FactoryArgs<'_>) -> Result<PluginRef, String> {
    Ok(Arc::new(DynamicResources))
}

/// Written by PreFilter: the pod's claims (none).
#[derive(Clone)]
struct StateData {
    claims: usize,
}

impl Plugin for DynamicResources {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
    fn as_post_filter(&self) -> Option<&dyn PostFilterPlugin> {
        Some(self)
    }
    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        Some(self)
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
}

impl PreFilterPlugin for DynamicResources {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        _: &PodInfo,
        _: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        state.write(NAME, StateData { claims: 0 });
        (None, Status::skip())
    }
}

impl PostFilterPlugin for DynamicResources {
    fn post_filter(
        &self,
        state: &CycleState,
        _: &PodInfo,
        _: &NodeToStatus,
        _: &mut PostFilterContext<'_>,
    ) -> (Option<PostFilterResult>, Status) {
        match state.read::<StateData>(NAME) {
            None => (None, Status::error("not found")),
            Some(s) if s.claims == 0 => {
                (None, Status::unschedulable("no new claims to deallocate"))
            }
            Some(_) => (None, Status::unschedulable("no new claims to deallocate")),
        }
    }
}

impl PreScorePlugin for DynamicResources {
    fn pre_score(&self, _: &mut CycleState, _: &PodInfo, _: &[&NodeInfo], _: &Snapshot) -> Status {
        Status::success()
    }
}

impl ScorePlugin for DynamicResources {
    fn score(&self, _: &CycleState, _: &PodInfo, _: &NodeInfo) -> Result<i64, Status> {
        Ok(0)
    }

    /// `score` is 0 on every node.
    fn uniform_score(&self, _: &CycleState, _: &PodInfo, _: &[&NodeInfo]) -> Option<(i64, i64)> {
        Some((0, 0))
    }
}
