//! Settings of the optional node-group autoscaler (the logic is in `sim/autoscaler.rs`).
//!
//! A deliberately small model of a cluster autoscaler, run as timed engine events:
//!
//! - **Scan** every `scanInterval` (default 10 s), after the cluster events of that instant.
//! - **Scale up**: pods the scheduler has found unschedulable (at least one failed attempt, no
//!   nominated node) that have been pending for at least `scaleUpDelay` (default 10 s, counted
//!   from the first scan that saw them pending) are offered to the pools in the order listed. A
//!   pool takes a pod when the pod passes the scheduler's PreFilter and Filter plugins against
//!   an empty node made from the pool's template; the pods a pool takes are packed first-fit by
//!   their requests onto the pool's nodes still being provisioned, then onto new nodes, up to the
//!   pool's `max`. Each new node joins (NodeAdded) after `provisioningDelay` (default 2 min).
//! - **Scale down**: a node of an autoscaled pool whose requested cpu and memory (the larger of
//!   the two shares of allocatable) stay below `scaleDownUtilization` (default 0.5) for
//!   `scaleDownUnneededTime` (default 10 min) is removed (NodeRemoved) when every pod on it is
//!   owned by a controller and fits, by requests, on the other nodes' free capacity — all such
//!   empty nodes at once, at most one non-empty node per scan, never below the pool's `min`,
//!   and not within `scaleDownDelayAfterAdd` (default 10 min) of a scale-up. Its pods then
//!   fail and are re-created as the scenario's `onNodeRemoval` says (the engine's only way to
//!   model a drain).
//!
//! Decisions depend only on the simulation state and are taken in a fixed order (pods by the
//! time first seen pending, then by id; pools as listed; nodes in arrival order), so runs stay
//! deterministic. New nodes are named `<pool>-<i>` with i continuing after the highest index in
//! use, and carry the pool's template labels plus `ksim.io/pool` and `kubernetes.io/hostname`.

use ksim_api::Node;
use serde::{Deserialize, Serialize};

use crate::time::SimDuration;

/// The autoscaler's settings (scenario field `autoscaler`, camelCase).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct AutoscalerConfig {
    pub scan_interval: SimDuration,
    pub scale_up_delay: SimDuration,
    pub provisioning_delay: SimDuration,
    pub scale_down_utilization: f64,
    pub scale_down_unneeded_time: SimDuration,
    pub scale_down_delay_after_add: SimDuration,
    /// The pools it may resize, in the order scale-up tries them.
    pub pools: Vec<AutoscaledPool>,
}

impl Default for AutoscalerConfig {
    fn default() -> Self {
        AutoscalerConfig {
            scan_interval: SimDuration::from_secs(10),
            scale_up_delay: SimDuration::from_secs(10),
            provisioning_delay: SimDuration::from_secs(120),
            scale_down_utilization: 0.5,
            scale_down_unneeded_time: SimDuration::from_secs(600),
            scale_down_delay_after_add: SimDuration::from_secs(600),
            pools: Vec::new(),
        }
    }
}

/// One resizable pool.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct AutoscaledPool {
    /// The pool's name (its nodes carry the label `ksim.io/pool: <pool>`).
    pub pool: String,
    pub min: u32,
    pub max: u32,
    /// The node a new member is made from. Scenarios fill it from the pool's template.
    #[serde(skip_serializing_if = "is_default_node")]
    pub template: Node,
}

fn is_default_node(n: &Node) -> bool {
    *n == Node::default()
}

impl AutoscalerConfig {
    /// Checks ranges; errors are (field, message).
    pub fn validate(&self) -> Result<(), (String, String)> {
        if self.scan_interval.micros() <= 0 {
            return Err(("scanInterval".into(), "must be positive".into()));
        }
        if !(0.0..=1.0).contains(&self.scale_down_utilization) {
            return Err((
                "scaleDownUtilization".into(),
                format!("{} is not in 0..1", self.scale_down_utilization),
            ));
        }
        for (i, p) in self.pools.iter().enumerate() {
            if p.min > p.max {
                return Err((
                    format!("pools[{i}]"),
                    format!("min {} is more than max {}", p.min, p.max),
                ));
            }
        }
        Ok(())
    }
}
