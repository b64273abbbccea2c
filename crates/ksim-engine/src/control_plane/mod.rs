//! Settings of the control-plane components around the scheduler (the scenario's
//! `controlPlane:` section): one field and one module per component, each with upstream's
//! defaults and the flag or constant each default comes from.
//!
//! ```yaml
//! controlPlane:
//!   admission: {defaultNotReadyTolerationSeconds: 300}
//!   nodeLifecycle: {nodeMonitorGracePeriod: 50s}
//!   disruption: {reactionDelay: 1s}
//!   podGC: {gcCheckPeriod: 20s, quarantineTime: 40s, terminatedPodGCThreshold: 12500}
//!   draDrivers: {gpu.example.com: {bindingDelay: 30s}}
//! ```
//!
//! Adding a component: a module with its settings struct (`#[serde(default)]`, camelCase,
//! `deny_unknown_fields`, a `Default` with upstream's values) and one field here.

use serde::{Deserialize, Serialize};

pub mod disruption;
pub mod dra_drivers;
pub mod node_lifecycle;
pub mod pod_gc;

pub use disruption::DisruptionConfig;
pub use dra_drivers::{DraBindingOutcome, DraDriverModel, DraDrivers};
pub use node_lifecycle::*;
pub use pod_gc::PodGcConfig;

/// The scenario's `controlPlane:` section.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ControlPlane {
    /// The API server's admission plugins (`sim/admission`).
    #[serde(skip_serializing_if = "crate::sim::AdmissionConfig::is_default")]
    pub admission: crate::sim::AdmissionConfig,
    /// The node lifecycle controller and the taint-eviction controller.
    pub node_lifecycle: NodeLifecycleConfig,
    /// The disruption controller (PodDisruptionBudget status).
    #[serde(skip_serializing_if = "DisruptionConfig::is_default")]
    pub disruption: DisruptionConfig,
    /// The pod garbage collector.
    #[serde(rename = "podGC", skip_serializing_if = "PodGcConfig::is_default")]
    pub pod_gc: PodGcConfig,
    /// ksim's model of the DRA drivers that report device binding conditions.
    #[serde(skip_serializing_if = "DraDrivers::is_empty")]
    pub dra_drivers: DraDrivers,
}

impl ControlPlane {
    /// Whether every setting is its default (the engine configuration then omits the section).
    pub fn is_default(&self) -> bool {
        *self == ControlPlane::default()
    }
}
