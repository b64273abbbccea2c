//! `Features` (upstream `pkg/scheduler/framework/plugins/feature.Features`): the feature-gate
//! values and per-version behaviours the in-tree plugins read, built once from a run's
//! [`FeatureGates`] (upstream `NewSchedulerFeaturesFromGates`) and handed to every plugin
//! constructor through the [`Registry`](crate::framework::Registry) and
//! [`FactoryArgs::features`](crate::framework::FactoryArgs), as upstream's in-tree registry
//! passes `fts` to each factory. No plugin asks which version it runs as: it reads a field here.
//!
//! Behaviours that changed between versions without a gate (upstream changed the code) are
//! fields too, set from [`VERSION_BEHAVIOURS`], one row per version.

use ksim_api::version::{FeatureGates, KubernetesVersion};

/// Behaviours of a version that no feature gate controls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionBehaviour {
    /// NodeResourcesBalancedAllocation scores the improvement a pod brings,
    /// `50 + (50 + withPod − withoutPod) / 2`, instead of the balance with the pod (v1.36).
    pub balanced_allocation_improvement: bool,
}

/// One row per version of [`KubernetesVersion::ALL`].
pub const VERSION_BEHAVIOURS: [VersionBehaviour; 2] = [
    // v1.35
    VersionBehaviour {
        balanced_allocation_improvement: false,
    },
    // v1.36
    VersionBehaviour {
        balanced_allocation_improvement: true,
    },
];

/// What the plugins read of the gates and the version (upstream `feature.Features`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Features {
    /// The gates these were built from (version and overrides), for defaulting the profile.
    pub gates: FeatureGates,
    pub enable_node_declared_features: bool,
    pub enable_dra_extended_resource: bool,
    pub enable_dra_partitionable_devices: bool,
    pub enable_dra_consumable_capacity: bool,
    pub enable_dra_device_taints: bool,
    pub enable_dra_device_binding_conditions: bool,
    pub enable_dra_prioritized_list: bool,
    pub enable_dra_admin_access: bool,
    pub enable_dra_resource_claim_device_status: bool,
    pub enable_dra_scheduler_filter_timeout: bool,
    pub enable_in_place_pod_vertical_scaling: bool,
    pub enable_in_place_pod_level_resources_vertical_scaling: bool,
    pub enable_pod_level_resources: bool,
    pub enable_storage_capacity_scoring: bool,
    pub enable_scheduler_async_api_calls: bool,
    pub enable_scheduler_pop_from_backoff_q: bool,
    pub enable_nominated_node_name_for_expectation: bool,
    pub enable_clearing_nominated_node_name_after_binding: bool,
    pub enable_opportunistic_batching: bool,
    pub enable_gang_scheduling: bool,
    pub enable_generic_workload: bool,
    pub enable_topology_aware_workload_scheduling: bool,
    pub enable_workload_aware_preemption: bool,
    /// See [`VersionBehaviour::balanced_allocation_improvement`].
    pub balanced_allocation_improvement: bool,
}

impl Features {
    /// upstream `NewSchedulerFeaturesFromGates`.
    pub fn from_gates(gates: &FeatureGates) -> Features {
        let on = |g: &str| gates.enabled(g);
        let behaviour = VERSION_BEHAVIOURS[gates.version().index()];
        Features {
            gates: gates.clone(),
            enable_node_declared_features: on("NodeDeclaredFeatures"),
            enable_dra_extended_resource: on("DRAExtendedResource"),
            enable_dra_partitionable_devices: on("DRAPartitionableDevices"),
            enable_dra_consumable_capacity: on("DRAConsumableCapacity"),
            enable_dra_device_taints: on("DRADeviceTaints"),
            enable_dra_device_binding_conditions: on("DRADeviceBindingConditions"),
            enable_dra_prioritized_list: on("DRAPrioritizedList"),
            enable_dra_admin_access: on("DRAAdminAccess"),
            enable_dra_resource_claim_device_status: on("DRAResourceClaimDeviceStatus"),
            enable_dra_scheduler_filter_timeout: on("DRASchedulerFilterTimeout"),
            enable_in_place_pod_vertical_scaling: on("InPlacePodVerticalScaling"),
            enable_in_place_pod_level_resources_vertical_scaling: on(
                "InPlacePodLevelResourcesVerticalScaling",
            ),
            enable_pod_level_resources: on("PodLevelResources"),
            enable_storage_capacity_scoring: on("StorageCapacityScoring"),
            enable_scheduler_async_api_calls: on("SchedulerAsyncAPICalls"),
            enable_scheduler_pop_from_backoff_q: on("SchedulerPopFromBackoffQ"),
            enable_nominated_node_name_for_expectation: on("NominatedNodeNameForExpectation"),
            enable_clearing_nominated_node_name_after_binding: on(
                "ClearingNominatedNodeNameAfterBinding",
            ),
            enable_opportunistic_batching: on("OpportunisticBatching"),
            enable_gang_scheduling: on("GangScheduling"),
            enable_generic_workload: on("GenericWorkload"),
            enable_topology_aware_workload_scheduling: on("TopologyAwareWorkloadScheduling"),
            enable_workload_aware_preemption: on("WorkloadAwarePreemption"),
            balanced_allocation_improvement: behaviour.balanced_allocation_improvement,
        }
    }

    /// The defaults of `version`.
    pub fn of(version: KubernetesVersion) -> Features {
        Features::from_gates(&FeatureGates::new(version))
    }

    pub fn version(&self) -> KubernetesVersion {
        self.gates.version()
    }
}

impl Default for Features {
    /// The default version's defaults.
    fn default() -> Features {
        Features::of(KubernetesVersion::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_from_the_gates_and_the_version_row() {
        let a = Features::of(KubernetesVersion::V1_35);
        let b = Features::of(KubernetesVersion::V1_36);
        assert!(!a.enable_node_declared_features && b.enable_node_declared_features);
        assert!(!a.balanced_allocation_improvement && b.balanced_allocation_improvement);
        assert!(!a.enable_dra_extended_resource && b.enable_dra_extended_resource);
        let mut g = FeatureGates::new(KubernetesVersion::V1_36);
        g.set_from_str("NodeDeclaredFeatures=false").unwrap();
        let c = Features::from_gates(&g);
        assert!(!c.enable_node_declared_features);
        assert!(c.balanced_allocation_improvement);
        assert_eq!(VERSION_BEHAVIOURS.len(), KubernetesVersion::ALL.len());
    }
}
