//! Settings of the disruption controller (kube-controller-manager's `disruption` controller,
//! `pkg/controller/disruption`), which computes every PodDisruptionBudget's status.

use serde::{Deserialize, Serialize};

use crate::time::SimDuration;

/// `controlPlane.disruption`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct DisruptionConfig {
    /// Whether the controller runs (kube-controller-manager `--controllers`, which enables
    /// `disruption` by default). Off: every PDB keeps the status its file gives it (0 allowed
    /// when absent), as ksim did before it modelled the controller.
    pub enabled: bool,
    /// From a change the controller watches (a pod added, updated or deleted, a PDB added or
    /// changed, a controller's scale) to the PDB's new status being visible. Upstream has no
    /// flag for it: it is the informer, work queue and `UpdateStatus` round trip, modelled as
    /// the workload controllers' reaction delay (default 1 s).
    pub reaction_delay: SimDuration,
    /// `DeletionTimeout` (a constant, 2 min): how long an entry of `status.disruptedPods`
    /// keeps its pod out of `currentHealthy` while the pod is not deleted.
    pub deletion_timeout: SimDuration,
}

impl Default for DisruptionConfig {
    fn default() -> Self {
        DisruptionConfig {
            enabled: true,
            reaction_delay: SimDuration::from_secs(1),
            deletion_timeout: SimDuration::from_secs(120),
        }
    }
}

impl DisruptionConfig {
    pub fn is_default(&self) -> bool {
        *self == DisruptionConfig::default()
    }
}
