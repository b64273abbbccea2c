//! `DefaultBinder` (upstream `defaultbinder`): binds the pod to the chosen node. In ksim the
//! engine applies the binding after the bind latency; the plugin itself always succeeds.

use std::sync::Arc;

use crate::framework::{BindPlugin, CycleState, FactoryArgs, Plugin, PluginRef, Status};
use crate::pod_info::PodInfo;

pub const NAME: &str = "DefaultBinder";

pub struct DefaultBinder;

pub fn new(_: &FactoryArgs<'_>) -> Result<PluginRef, String> {
    Ok(Arc::new(DefaultBinder))
}

impl Plugin for DefaultBinder {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_bind(&self) -> Option<&dyn BindPlugin> {
        Some(self)
    }
}

impl BindPlugin for DefaultBinder {
    fn bind(&self, _: &CycleState, _: &PodInfo, _: &str) -> Status {
        Status::success()
    }
}
