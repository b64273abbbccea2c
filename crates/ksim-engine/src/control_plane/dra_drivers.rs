//! `controlPlane.draDrivers`: ksim's model of the DRA drivers that report device binding
//! conditions (DRADeviceBindingConditions). A real driver of such devices (a fabric-attached
//! GPU, a device that must be attached to the node first) writes the claim's
//! `status.devices[].conditions` once the device is ready, or a binding failure condition
//! when it cannot be; the scheduler's PreBind waits for that. A simulation has no driver, so
//! a driver listed here does it after `bindingDelay`:
//!
//! ```yaml
//! controlPlane:
//!   draDrivers:
//!     gpu.example.com: {bindingDelay: 30s}                   # conditions True after 30 s
//!     fabric.example.com: {bindingDelay: 5s, outcome: Failure}  # a failure condition True
//! ```
//!
//! A driver not listed writes nothing (the default): pods whose devices have binding
//! conditions then wait in PreBind until the scheduler's `bindingTimeout` (600 s), as they
//! would upstream with no driver, unless a trace's `UpdateObject` of the claim sets the
//! conditions. ksim does not invent a readiness latency it cannot know; the user says how
//! long their driver takes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::time::SimDuration;

/// What the simulated driver reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum DraBindingOutcome {
    /// Every binding condition of the device True (reason `Ready`).
    #[default]
    Ready,
    /// The device's first binding failure condition True (reason `Failed`).
    Failure,
}

/// One simulated driver.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct DraDriverModel {
    /// From PreBind writing the allocation to the driver writing the device's conditions.
    pub binding_delay: SimDuration,
    pub outcome: DraBindingOutcome,
}

impl Default for DraDriverModel {
    fn default() -> Self {
        DraDriverModel {
            binding_delay: SimDuration::ZERO,
            outcome: DraBindingOutcome::Ready,
        }
    }
}

/// The simulated drivers by driver name (none by default).
pub type DraDrivers = BTreeMap<String, DraDriverModel>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn drivers_parse_with_defaults_and_refuse_unknown_fields() {
        let d: DraDrivers = serde_json::from_value(serde_json::json!({
            "gpu.example.com": {"bindingDelay": "30s"},
            "fabric.example.com": {"outcome": "Failure"},
        }))
        .expect("drivers");
        assert_eq!(
            d["gpu.example.com"].binding_delay,
            SimDuration::from_secs(30)
        );
        assert_eq!(d["gpu.example.com"].outcome, DraBindingOutcome::Ready);
        assert_eq!(d["fabric.example.com"].binding_delay, SimDuration::ZERO);
        assert_eq!(d["fabric.example.com"].outcome, DraBindingOutcome::Failure);
        let e = serde_json::from_value::<DraDrivers>(serde_json::json!({
            "gpu.example.com": {"delay": "30s"}}))
        .expect_err("unknown field");
        assert!(e.to_string().contains("unknown field `delay`"), "{e}");
        let e = serde_json::from_value::<DraDrivers>(serde_json::json!({
            "gpu.example.com": {"bindingDelay": "-1s"}}))
        .expect_err("negative");
        assert!(e.to_string().contains("negative duration"), "{e}");
    }
}
