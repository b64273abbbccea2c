//! Settings of the pod garbage collector (kube-controller-manager's `podgc` controller,
//! `pkg/controller/podgc/gc_controller.go`).

use serde::{Deserialize, Serialize};

use crate::time::SimDuration;

/// `controlPlane.podGC`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct PodGcConfig {
    /// Whether the controller runs (kube-controller-manager `--controllers`, on by default).
    pub enabled: bool,
    /// `gcCheckPeriod` (a constant, 20 s): how often the collector runs.
    pub gc_check_period: SimDuration,
    /// `quarantineTime` (a constant, 40 s): how long a node must have been gone before the
    /// pods bound to it are deleted as orphans (`gcOrphaned`).
    pub quarantine_time: SimDuration,
    /// `--terminated-pod-gc-threshold` (default 12500): terminated pods (phase Succeeded or
    /// Failed) kept before the oldest are deleted (`gcTerminated`); 0 or less disables it.
    #[serde(rename = "terminatedPodGCThreshold")]
    pub terminated_pod_gc_threshold: i64,
}

impl Default for PodGcConfig {
    fn default() -> Self {
        PodGcConfig {
            enabled: true,
            gc_check_period: SimDuration::from_secs(20),
            quarantine_time: SimDuration::from_secs(40),
            terminated_pod_gc_threshold: 12500,
        }
    }
}

impl PodGcConfig {
    pub fn is_default(&self) -> bool {
        *self == PodGcConfig::default()
    }
}
