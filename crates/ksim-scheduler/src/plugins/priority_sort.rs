//! `PrioritySort` (upstream `queuesort`): higher priority first, then the earlier queue
//! timestamp.

use std::sync::Arc;

use crate::framework::{FactoryArgs, Plugin, PluginRef, QueueSortPlugin};
use crate::pod_info::PodInfo;

pub const NAME: &str = "PrioritySort";

pub struct PrioritySort;

pub fn new(_: &FactoryArgs<'_>) -> Result<PluginRef, String> {
    Ok(Arc::new(PrioritySort))
}

impl Plugin for PrioritySort {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_queue_sort(&self) -> Option<&dyn QueueSortPlugin> {
        Some(self)
    }
}

impl QueueSortPlugin for PrioritySort {
    fn less(&self, a: &PodInfo, a_ts: (i64, u64), b: &PodInfo, b_ts: (i64, u64)) -> bool {
        let (pa, pb) = (a.priority(), b.priority());
        pa > pb || (pa == pb && a_ts < b_ts)
    }
}
