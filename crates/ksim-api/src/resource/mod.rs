//! `resource.k8s.io/v1`: the objects of Dynamic Resource Allocation (DRA) with structured
//! parameters — [`DeviceClass`], [`ResourceSlice`], [`ResourceClaim`] and
//! [`ResourceClaimTemplate`] — with the API server's defaulting ([`default_resource_claim`],
//! upstream `SetObjectDefaults_ResourceClaim`) and validation ([`validate_device_class`],
//! [`validate_resource_slice`], [`validate_resource_claim`], [`validate_resource_claim_template`],
//! upstream `pkg/apis/resource/validation`).
//!
//! Fields ksim does not model (partitionable devices' counters, consumable capacity, device
//! taints and tolerations, binding conditions, `distinctAttribute`, DRA-backed extended
//! resources, per-device node selection) are refused by validation with a message that names
//! them, never read as if absent. CEL expressions are compiled where they are used (the
//! scheduler's `dynamic_resources::cel`), which refuses an invalid one with upstream's message.

use std::collections::BTreeMap;

pub mod binding_conditions;
pub mod cel_cost;
mod claim_status;
pub mod consumable_capacity;
pub mod counters;
pub mod extended;
pub mod names;
pub mod taints;

pub use taints::{DeviceTaint, DeviceToleration};

pub use binding_conditions::{AllocatedDeviceStatus, DeviceCondition};
pub use counters::{Counter, CounterSet, DeviceCounterConsumption};

pub use consumable_capacity::{
    CapacityRequestPolicy, CapacityRequestPolicyRange, CapacityRequirements,
};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::core::NodeSelector;
use crate::meta::ObjectMeta;
use crate::quantity::Quantity;
use crate::validation::{is_dns1123_subdomain, quote, FieldError, FieldErrors};

/// `resource.k8s.io/v1`.
pub const API_VERSION: &str = "resource.k8s.io/v1";
/// `resourceapi.Finalizer`, added by the scheduler when it allocates a claim.
pub const FINALIZER: &str = "resource.kubernetes.io/delete-protection";
/// `ResourceClaimReservedForMaxSize`.
pub const RESERVED_FOR_MAX_SIZE: usize = 256;
/// `DeviceRequestsMaxSize` (also the limits on constraints, selectors and configs).
pub const DEVICE_REQUESTS_MAX_SIZE: usize = 32;
/// `FirstAvailableDeviceRequestMaxSize`.
pub const FIRST_AVAILABLE_MAX_SIZE: usize = 8;
/// `AllocationResultsMaxSize`.
pub const ALLOCATION_RESULTS_MAX_SIZE: usize = 32;
/// `ResourceSliceMaxDevices`.
pub const RESOURCE_SLICE_MAX_DEVICES: usize = 128;
/// `ResourceSliceMaxAttributesAndCapacitiesPerDevice`.
pub const MAX_ATTRIBUTES_AND_CAPACITIES: usize = 32;
/// `ExactCount`, the default allocation mode.
pub const MODE_EXACT_COUNT: &str = "ExactCount";
/// `All`.
pub const MODE_ALL: &str = "All";

// ---- DeviceClass ---------------------------------------------------------------------------

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DeviceClass {
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub kind: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub metadata: ObjectMeta,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub spec: DeviceClassSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct DeviceClassSpec {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub selectors: Vec<DeviceSelector>,
    /// Kept and copied into allocations' config by upstream; ksim keeps it, it does not affect
    /// placement.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub config: Vec<Value>,
    /// DRAExtendedResource: the extended resource the class's devices serve (see
    /// [`extended`]); admitted when the gate is on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extended_resource_name: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct DeviceSelector {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cel: Option<CelDeviceSelector>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct CelDeviceSelector {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub expression: String,
}

// ---- ResourceSlice -------------------------------------------------------------------------

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceSlice {
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub kind: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub metadata: ObjectMeta,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub spec: ResourceSliceSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ResourceSliceSpec {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub driver: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub pool: ResourcePool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<NodeSelector>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub all_nodes: Option<bool>,
    /// DRAPartitionableDevices: refused by validation (not modelled).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub per_device_node_selection: Option<bool>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub devices: Vec<Device>,
    /// DRAPartitionableDevices: refused by validation (not modelled).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub shared_counters: Vec<CounterSet>,
}

impl ResourceSlice {
    /// `nodeName`, or "" for a network-attached slice.
    pub fn node_name(&self) -> &str {
        self.spec.node_name.as_deref().unwrap_or("")
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ResourcePool {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub name: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub generation: i64,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub resource_slice_count: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct Device {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub name: String,
    /// By qualified name (`model` or `domain/model`), ordered.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub attributes: BTreeMap<String, DeviceAttribute>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub capacity: BTreeMap<String, DeviceCapacity>,
    // Everything below is refused by validation (features ksim does not model).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub consumes_counters: Vec<DeviceCounterConsumption>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<NodeSelector>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub all_nodes: Option<bool>,
    /// DRADeviceTaints.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub taints: Vec<DeviceTaint>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub binding_conditions: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub binding_failure_conditions: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub binds_to_node: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_multiple_allocations: Option<bool>,
}

/// One attribute value: exactly one of the four is set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct DeviceAttribute {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub int: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bool: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub string: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

impl DeviceAttribute {
    fn count_set(&self) -> usize {
        self.int.is_some() as usize
            + self.bool.is_some() as usize
            + self.string.is_some() as usize
            + self.version.is_some() as usize
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct DeviceCapacity {
    /// Required by validation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Quantity>,
    /// DRAConsumableCapacity: how a request for this capacity is defaulted and rounded up
    /// (validated by [`consumable_capacity::validate_device_consumable_capacity`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_policy: Option<CapacityRequestPolicy>,
}

// ---- ResourceClaim -------------------------------------------------------------------------

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceClaim {
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub kind: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub metadata: ObjectMeta,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub spec: ResourceClaimSpec,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub status: ResourceClaimStatus,
}

impl ResourceClaim {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.metadata.namespace, self.metadata.name)
    }

    /// `resourceclaim.IsReservedForPod`: the pod's uid is in `reservedFor`.
    pub fn is_reserved_for(&self, pod_uid: &str) -> bool {
        self.status.reserved_for.iter().any(|r| r.uid == pod_uid)
    }

    /// `resourceclaim.CanBeReserved`: fewer than [`RESERVED_FOR_MAX_SIZE`] consumers.
    pub fn can_be_reserved(&self) -> bool {
        self.status.reserved_for.len() < RESERVED_FOR_MAX_SIZE
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ResourceClaimSpec {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub devices: DeviceClaim,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct DeviceClaim {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub requests: Vec<DeviceRequest>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub constraints: Vec<DeviceConstraint>,
    /// Opaque driver configuration: kept, does not affect placement.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub config: Vec<Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct DeviceRequest {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exactly: Option<ExactDeviceRequest>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub first_available: Vec<DeviceSubRequest>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ExactDeviceRequest {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub device_class_name: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub selectors: Vec<DeviceSelector>,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub allocation_mode: String,
    #[serde(skip_serializing_if = "is_zero")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub count: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin_access: Option<bool>,
    /// DRADeviceTaints.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub tolerations: Vec<DeviceToleration>,
    /// DRAConsumableCapacity: the capacity to consume on each allocated device.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacityRequirements>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct DeviceSubRequest {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub name: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub device_class_name: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub selectors: Vec<DeviceSelector>,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub allocation_mode: String,
    #[serde(skip_serializing_if = "is_zero")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub count: i64,
    /// DRADeviceTaints.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub tolerations: Vec<DeviceToleration>,
    /// DRAConsumableCapacity: the capacity to consume on each allocated device.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacityRequirements>,
}

fn is_zero(v: &i64) -> bool {
    *v == 0
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct DeviceConstraint {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub requests: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub match_attribute: Option<String>,
    /// DRAConsumableCapacity: refused by validation (not modelled).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distinct_attribute: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ResourceClaimStatus {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allocation: Option<AllocationResult>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub reserved_for: Vec<ResourceClaimConsumerReference>,
    /// DRAResourceClaimDeviceStatus: written by drivers; DRADeviceBindingConditions reads the
    /// conditions ([`binding_conditions`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub devices: Vec<AllocatedDeviceStatus>,
}

impl ResourceClaimStatus {
    pub fn is_empty(&self) -> bool {
        self.allocation.is_none() && self.reserved_for.is_empty() && self.devices.is_empty()
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct AllocationResult {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub devices: DeviceAllocationResult,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<NodeSelector>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allocation_timestamp: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct DeviceAllocationResult {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub results: Vec<DeviceRequestAllocationResult>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub config: Vec<Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct DeviceRequestAllocationResult {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub request: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub driver: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub pool: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub device: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admin_access: Option<bool>,
    /// DRAConsumableCapacity: set when the device allows multiple allocations.
    #[serde(rename = "shareID", skip_serializing_if = "Option::is_none")]
    pub share_id: Option<String>,
    /// DRAConsumableCapacity: the capacity this allocation consumes on a shared device.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub consumed_capacity: BTreeMap<String, Quantity>,
    /// DRADeviceTaints: the request's tolerations at allocation time.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub tolerations: Vec<DeviceToleration>,
    /// DRADeviceBindingConditions: the device's conditions at allocation time.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub binding_conditions: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub binding_failure_conditions: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ResourceClaimConsumerReference {
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub api_group: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub resource: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub name: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub uid: String,
}

// ---- ResourceClaimTemplate -----------------------------------------------------------------

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceClaimTemplate {
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub kind: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub metadata: ObjectMeta,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub spec: ResourceClaimTemplateSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ResourceClaimTemplateSpec {
    /// Labels and annotations copied to the generated claims.
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub metadata: ObjectMeta,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub spec: ResourceClaimSpec,
}

// ---- Pod references ------------------------------------------------------------------------

/// `v1.PodResourceClaim`: exactly one of the two names is set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct PodResourceClaim {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_claim_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_claim_template_name: Option<String>,
}

/// `v1.PodResourceClaimStatus`: the claim generated for a template reference (`None` when the
/// controller decided none was needed).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct PodResourceClaimStatus {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_claim_name: Option<String>,
}

/// `v1.ResourceClaim` in a container's `resources.claims`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ContainerResourceClaim {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub request: String,
}

// ---- defaulting ----------------------------------------------------------------------------

/// The API server's defaulting of a claim spec: an empty `allocationMode` becomes `ExactCount`,
/// and `count` 0 with `ExactCount` becomes 1, for `exactly` requests and `firstAvailable`
/// subrequests (upstream `SetDefaults_ExactDeviceRequest`, `SetDefaults_DeviceSubRequest`).
pub fn default_claim_spec(spec: &mut ResourceClaimSpec) {
    for r in &mut spec.devices.requests {
        if let Some(e) = &mut r.exactly {
            default_mode(&mut e.allocation_mode, &mut e.count);
            taints::default_tolerations(&mut e.tolerations);
        }
        for s in &mut r.first_available {
            default_mode(&mut s.allocation_mode, &mut s.count);
            taints::default_tolerations(&mut s.tolerations);
        }
    }
}

fn default_mode(mode: &mut String, count: &mut i64) {
    if mode.is_empty() {
        *mode = MODE_EXACT_COUNT.into();
    }
    if mode == MODE_EXACT_COUNT && *count == 0 {
        *count = 1;
    }
}

/// Defaulting of a ResourceClaim: namespace `default`, uid `uid-claim-<ns>-<name>` (ksim's
/// convention, as the recorded cases'), and [`default_claim_spec`].
pub fn default_resource_claim(c: &mut ResourceClaim) {
    if c.metadata.namespace.is_empty() {
        c.metadata.namespace = "default".into();
    }
    if c.metadata.uid.is_empty() && !c.metadata.name.is_empty() {
        c.metadata.uid = format!("uid-claim-{}-{}", c.metadata.namespace, c.metadata.name);
    }
    default_claim_spec(&mut c.spec);
}

/// Defaulting of a ResourceClaimTemplate: namespace `default` and [`default_claim_spec`].
pub fn default_resource_claim_template(t: &mut ResourceClaimTemplate) {
    if t.metadata.namespace.is_empty() {
        t.metadata.namespace = "default".into();
    }
    default_claim_spec(&mut t.spec.spec);
}

// ---- validation ----------------------------------------------------------------------------

/// `IsDNS1123Label`.
fn is_dns1123_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fn validate_name(errs: &mut FieldErrors, field: &str, name: &str, label: bool) {
    if name.is_empty() {
        errs.push(FieldError::required(field, ""));
    } else if label {
        if !is_dns1123_label(name) {
            errs.push(FieldError::invalid(
                field,
                quote(name),
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character",
            ));
        }
    } else {
        for m in is_dns1123_subdomain(name) {
            errs.push(FieldError::invalid(field, quote(name), &m));
        }
    }
}

/// `resource.CELSelectorExpressionMaxLength`.
pub const CEL_SELECTOR_EXPRESSION_MAX_LENGTH: usize = 10 * 1024;

fn validate_selectors(errs: &mut FieldErrors, field: &str, selectors: &[DeviceSelector]) {
    if selectors.len() > DEVICE_REQUESTS_MAX_SIZE {
        errs.push(FieldError::new(
            field,
            format!(
                "Too many: {}: must have at most {DEVICE_REQUESTS_MAX_SIZE} items",
                selectors.len()
            ),
        ));
    }
    for (i, s) in selectors.iter().enumerate() {
        match &s.cel {
            None => errs.push(FieldError::required(format!("{field}[{i}].cel"), "")),
            Some(c) if c.expression.trim().is_empty() => errs.push(FieldError::required(
                format!("{field}[{i}].cel.expression"),
                "",
            )),
            // `validateCELSelector`: upstream refuses an expression that does not compile
            // (`convertCELErrorToValidationError`, `Invalid` with the compiler's detail; the
            // parser's message is cel-rust's), and one whose worst-case cost exceeds
            // `CELSelectorExpressionMaxCost`.
            Some(c) if c.expression.len() <= CEL_SELECTOR_EXPRESSION_MAX_LENGTH => {
                match cel_cost::estimate(&c.expression) {
                    Err(msg) => errs.push(FieldError::invalid(
                        format!("{field}[{i}].cel.expression"),
                        crate::validation::quote(&c.expression),
                        &format!("compilation failed: {}", msg.trim()),
                    )),
                    Ok(cost) if cost > cel_cost::MAX_COST => errs.push(FieldError::forbidden(
                        format!("{field}[{i}].cel.expression"),
                        "too complex, exceeds cost limit",
                    )),
                    Ok(_) => {}
                }
            }
            Some(_) => {}
        }
    }
}

/// `ValidateDeviceClass`.
pub fn validate_device_class(c: &DeviceClass) -> Result<(), FieldErrors> {
    let mut errs = FieldErrors::default();
    validate_name(&mut errs, "metadata.name", &c.metadata.name, false);
    validate_selectors(&mut errs, "spec.selectors", &c.spec.selectors);
    if c.spec.config.len() > DEVICE_REQUESTS_MAX_SIZE {
        errs.push(FieldError::new(
            "spec.config",
            format!(
                "Too many: {}: must have at most 32 items",
                c.spec.config.len()
            ),
        ));
    }
    if let Some(name) = &c.spec.extended_resource_name {
        extended::validate_extended_resource_name(&mut errs, "spec.extendedResourceName", name);
        not_modelled(
            &mut errs,
            "spec.extendedResourceName",
            "DRAExtendedResource (extended resources backed by DRA)",
        );
    }
    errs.into_result()
}

fn is_semver(v: &str) -> bool {
    // semver 2.0.0: MAJOR.MINOR.PATCH[-pre][+build], no leading zeros in the numbers.
    let core = v.split(['-', '+']).next().unwrap_or("");
    let parts: Vec<&str> = core.split('.').collect();
    parts.len() == 3
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.bytes().all(|b| b.is_ascii_digit())
                && !(p.len() > 1 && p.starts_with('0'))
        })
        && v.len() <= 64
}

/// `ValidateResourceSlice`.
pub fn validate_resource_slice(s: &ResourceSlice) -> Result<(), FieldErrors> {
    let mut errs = FieldErrors::default();
    validate_name(&mut errs, "metadata.name", &s.metadata.name, false);
    let spec = &s.spec;
    validate_name(&mut errs, "spec.driver", &spec.driver, false);
    names::validate_driver_name_length(&mut errs, "spec.driver", &spec.driver);
    if spec.pool.name.is_empty() {
        errs.push(FieldError::required("spec.pool.name", ""));
    }
    if spec.pool.generation < 0 {
        errs.push(FieldError::invalid(
            "spec.pool.generation",
            spec.pool.generation,
            "must be greater than or equal to 0",
        ));
    }
    if spec.pool.resource_slice_count <= 0 {
        errs.push(FieldError::invalid(
            "spec.pool.resourceSliceCount",
            spec.pool.resource_slice_count,
            "must be greater than zero",
        ));
    }
    let set = [
        spec.node_name.as_deref().is_some_and(|n| !n.is_empty()),
        spec.node_selector.is_some(),
        spec.all_nodes == Some(true),
        spec.per_device_node_selection == Some(true),
    ];
    match set.iter().filter(|b| **b).count() {
        0 => errs.push(FieldError::required(
            "spec",
            "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required",
        )),
        1 => {}
        _ => errs.push(FieldError::invalid(
            "spec",
            "{`nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection`}",
            "exactly one field must be set, not more",
        )),
    }
    if let Some(ns) = &spec.node_selector {
        if ns.node_selector_terms.len() != 1 {
            errs.push(FieldError::invalid(
                "spec.nodeSelector.nodeSelectorTerms",
                ns.node_selector_terms.len(),
                "must have exactly one node selector term",
            ));
        }
    }
    if spec.per_device_node_selection.is_some() {
        not_modelled(
            &mut errs,
            "spec.perDeviceNodeSelection",
            "DRAPartitionableDevices (per-device node selection)",
        );
    }
    if !spec.shared_counters.is_empty() {
        not_modelled(
            &mut errs,
            "spec.sharedCounters",
            "DRAPartitionableDevices (shared counters)",
        );
    }
    if spec.devices.len() > RESOURCE_SLICE_MAX_DEVICES {
        errs.push(FieldError::new(
            "spec.devices",
            format!(
                "Too many: {}: must have at most {RESOURCE_SLICE_MAX_DEVICES} items",
                spec.devices.len()
            ),
        ));
    }
    let tainted = spec.devices.iter().any(|d| !d.taints.is_empty());
    taints::validate_tainted_slice_size(&mut errs, "spec.devices", spec.devices.len(), tainted);
    counters::validate_partitionable(spec, &mut errs);
    let mut names = std::collections::BTreeSet::new();
    for (i, d) in spec.devices.iter().enumerate() {
        let f = format!("spec.devices[{i}]");
        validate_name(&mut errs, &format!("{f}.name"), &d.name, true);
        if !d.name.is_empty() && !names.insert(d.name.as_str()) {
            errs.push(FieldError::duplicate(format!("{f}.name"), &d.name));
        }
        taints::validate_device_taints(&mut errs, &format!("{f}.taints"), &d.taints);
        binding_conditions::validate_device_binding_parameters(
            &mut errs,
            &f,
            &d.binding_conditions,
            &d.binding_failure_conditions,
        );
        if d.attributes.len() + d.capacity.len() > MAX_ATTRIBUTES_AND_CAPACITIES {
            errs.push(FieldError::new(
                format!("{f}.attributes"),
                format!(
                    "Too many: {}: must have at most {MAX_ATTRIBUTES_AND_CAPACITIES} attributes and capacities combined",
                    d.attributes.len() + d.capacity.len()
                ),
            ));
        }
        for (k, a) in &d.attributes {
            let af = format!("{f}.attributes[{}]", quote(k));
            names::validate_qualified_name(&mut errs, &af, k);
            if let Some(v) = &a.string {
                names::validate_string_value(&mut errs, &format!("{af}.string"), v);
            }
            match a.count_set() {
                0 => errs.push(FieldError::required(
                    af.clone(),
                    "exactly one value must be specified",
                )),
                1 => {}
                _ => errs.push(FieldError::invalid(
                    af.clone(),
                    "{...}",
                    "exactly one value must be specified",
                )),
            }
            if let Some(v) = &a.version {
                if !is_semver(v) {
                    errs.push(FieldError::invalid(
                        format!("{af}.version"),
                        quote(v),
                        "must be a string compatible with semver.org spec 2.0.0",
                    ));
                }
            }
        }
        for (k, c) in &d.capacity {
            names::validate_qualified_name(&mut errs, &format!("{f}.capacity[{}]", quote(k)), k);
            if c.value.is_none() {
                errs.push(FieldError::required(
                    format!("{f}.capacity[{}].value", quote(k)),
                    "",
                ));
            }
            if c.request_policy.is_some() {
                not_modelled(
                    &mut errs,
                    &format!("{f}.capacity[{}].requestPolicy", quote(k)),
                    "DRAConsumableCapacity (capacity request policies)",
                );
            }
        }
        consumable_capacity::validate_device_consumable_capacity(&mut errs, &f, d);
        let unmodelled: [(bool, &str, &str); 9] = [
            (
                !d.consumes_counters.is_empty(),
                "consumesCounters",
                "DRAPartitionableDevices (counters)",
            ),
            (
                d.node_name.is_some(),
                "nodeName",
                "DRAPartitionableDevices (per-device node selection)",
            ),
            (
                d.node_selector.is_some(),
                "nodeSelector",
                "DRAPartitionableDevices (per-device node selection)",
            ),
            (
                d.all_nodes.is_some(),
                "allNodes",
                "DRAPartitionableDevices (per-device node selection)",
            ),
            (!d.taints.is_empty(), "taints", "DRADeviceTaints"),
            (
                !d.binding_conditions.is_empty(),
                "bindingConditions",
                "DRADeviceBindingConditions",
            ),
            (
                !d.binding_failure_conditions.is_empty(),
                "bindingFailureConditions",
                "DRADeviceBindingConditions",
            ),
            (
                d.binds_to_node.is_some(),
                "bindsToNode",
                "DRADeviceBindingConditions",
            ),
            (
                d.allow_multiple_allocations.is_some(),
                "allowMultipleAllocations",
                "DRAConsumableCapacity (shared devices)",
            ),
        ];
        for (bad, field, what) in unmodelled {
            if bad {
                not_modelled(&mut errs, &format!("{f}.{field}"), what);
            }
        }
    }
    errs.into_result()
}

fn validate_mode(
    errs: &mut FieldErrors,
    f: &str,
    mode: &str,
    count: i64,
    tolerations: &[DeviceToleration],
    capacity: &Option<CapacityRequirements>,
) {
    match mode {
        MODE_EXACT_COUNT => {
            if count <= 0 {
                errs.push(FieldError::invalid(
                    format!("{f}.count"),
                    count,
                    "must be greater than zero",
                ));
            }
        }
        MODE_ALL => {
            if count != 0 {
                errs.push(FieldError::invalid(
                    format!("{f}.count"),
                    count,
                    "must not be specified when allocationMode is 'All'",
                ));
            }
        }
        other => errs.push(FieldError::not_supported(
            format!("{f}.allocationMode"),
            other,
            &[MODE_ALL, MODE_EXACT_COUNT],
        )),
    }
    taints::validate_device_tolerations(errs, &format!("{f}.tolerations"), tolerations);
    if !tolerations.is_empty() {
        not_modelled(errs, &format!("{f}.tolerations"), "DRADeviceTaints");
    }
    consumable_capacity::validate_capacity_requirements(errs, f, capacity);
    if capacity.is_some() {
        not_modelled(
            errs,
            &format!("{f}.capacity"),
            "DRAConsumableCapacity (capacity requests)",
        );
    }
}

/// `validateResourceClaimSpec` on an already defaulted spec; `f` is its path.
pub fn validate_claim_spec(spec: &ResourceClaimSpec, f: &str) -> FieldErrors {
    let mut errs = FieldErrors::default();
    let d = &spec.devices;
    let rf = format!("{f}.devices.requests");
    if d.requests.len() > DEVICE_REQUESTS_MAX_SIZE {
        errs.push(FieldError::new(
            rf.clone(),
            format!("Too many: {}: must have at most 32 items", d.requests.len()),
        ));
    }
    // Request names (and `request/subrequest` names) a constraint may refer to.
    let mut names: std::collections::BTreeSet<String> = Default::default();
    for (i, r) in d.requests.iter().enumerate() {
        let f = format!("{rf}[{i}]");
        validate_name(&mut errs, &format!("{f}.name"), &r.name, true);
        if !r.name.is_empty() && !names.insert(r.name.clone()) {
            errs.push(FieldError::duplicate(format!("{f}.name"), &r.name));
        }
        match (&r.exactly, r.first_available.is_empty()) {
            (Some(_), false) => errs.push(FieldError::invalid(
                f.clone(),
                "{`exactly`, `firstAvailable`}",
                "exactly one field must be set, not more",
            )),
            (None, true) => errs.push(FieldError::required(
                f.clone(),
                "exactly one of `exactly` or `firstAvailable` is required",
            )),
            _ => {}
        }
        if let Some(e) = &r.exactly {
            let f = format!("{f}.exactly");
            validate_name(
                &mut errs,
                &format!("{f}.deviceClassName"),
                &e.device_class_name,
                false,
            );
            validate_selectors(&mut errs, &format!("{f}.selectors"), &e.selectors);
            validate_mode(
                &mut errs,
                &f,
                &e.allocation_mode,
                e.count,
                &e.tolerations,
                &e.capacity,
            );
        }
        if r.first_available.len() > FIRST_AVAILABLE_MAX_SIZE {
            errs.push(FieldError::new(
                format!("{f}.firstAvailable"),
                format!(
                    "Too many: {}: must have at most {FIRST_AVAILABLE_MAX_SIZE} items",
                    r.first_available.len()
                ),
            ));
        }
        let mut subs = std::collections::BTreeSet::new();
        for (j, s) in r.first_available.iter().enumerate() {
            let sf = format!("{f}.firstAvailable[{j}]");
            validate_name(&mut errs, &format!("{sf}.name"), &s.name, true);
            if !s.name.is_empty() && !subs.insert(s.name.as_str()) {
                errs.push(FieldError::duplicate(format!("{sf}.name"), &s.name));
            }
            names.insert(format!("{}/{}", r.name, s.name));
            validate_name(
                &mut errs,
                &format!("{sf}.deviceClassName"),
                &s.device_class_name,
                false,
            );
            validate_selectors(&mut errs, &format!("{sf}.selectors"), &s.selectors);
            validate_mode(
                &mut errs,
                &sf,
                &s.allocation_mode,
                s.count,
                &s.tolerations,
                &s.capacity,
            );
        }
    }
    let cf = format!("{f}.devices.constraints");
    if d.constraints.len() > DEVICE_REQUESTS_MAX_SIZE {
        errs.push(FieldError::new(
            cf.clone(),
            format!(
                "Too many: {}: must have at most 32 items",
                d.constraints.len()
            ),
        ));
    }
    for (i, c) in d.constraints.iter().enumerate() {
        let f = format!("{cf}[{i}]");
        for (j, r) in c.requests.iter().enumerate() {
            if !names.contains(r) {
                errs.push(FieldError::invalid(
                    format!("{f}.requests[{j}]"),
                    quote(r),
                    "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'",
                ));
            }
        }
        consumable_capacity::validate_distinct_attribute(&mut errs, &f, c);
        if c.distinct_attribute.is_some() {
            not_modelled(
                &mut errs,
                &format!("{f}.distinctAttribute"),
                "DRAConsumableCapacity (distinctAttribute)",
            );
        }
        match &c.match_attribute {
            None if c.distinct_attribute.is_none() => {
                errs.push(FieldError::required(format!("{f}.matchAttribute"), ""))
            }
            None => {}
            Some(a) => match a.split_once('/') {
                Some((domain, name))
                    if is_dns1123_subdomain(domain).is_empty()
                        && !name.is_empty()
                        && name.len() <= 64
                        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                        && name.as_bytes()[0].is_ascii_alphabetic() => {}
                _ => errs.push(FieldError::invalid(
                    format!("{f}.matchAttribute"),
                    quote(a),
                    "a fully qualified name must be a domain and a name separated by a slash",
                )),
            },
        }
    }
    if d.config.len() > DEVICE_REQUESTS_MAX_SIZE {
        errs.push(FieldError::new(
            format!("{f}.devices.config"),
            format!("Too many: {}: must have at most 32 items", d.config.len()),
        ));
    }
    errs
}

/// `ValidateResourceClaim` (spec and status) on a defaulted claim.
pub fn validate_resource_claim(c: &ResourceClaim) -> Result<(), FieldErrors> {
    let mut errs = FieldErrors::default();
    validate_name(&mut errs, "metadata.name", &c.metadata.name, false);
    errs.0.extend(validate_claim_spec(&c.spec, "spec").0);
    claim_status::validate_claim_status(&mut errs, &c.status);
    errs.into_result()
}

/// `ValidateResourceClaimTemplate`.
pub fn validate_resource_claim_template(t: &ResourceClaimTemplate) -> Result<(), FieldErrors> {
    let mut errs = FieldErrors::default();
    validate_name(&mut errs, "metadata.name", &t.metadata.name, false);
    errs.0
        .extend(validate_claim_spec(&t.spec.spec, "spec.spec").0);
    errs.into_result()
}

/// Validation of a pod's `spec.resourceClaims` and its containers' `resources.claims`
/// (`validatePodResourceClaims`, `validateResourceClaimNames`): names are DNS labels and
/// unique, exactly one source per entry, and every container claim names an entry.
pub fn validate_pod_claims(pod: &crate::core::Pod) -> Result<(), FieldErrors> {
    let mut errs = FieldErrors::default();
    let mut names = std::collections::BTreeSet::new();
    for (i, c) in pod.spec.resource_claims.iter().enumerate() {
        let f = format!("spec.resourceClaims[{i}]");
        validate_name(&mut errs, &format!("{f}.name"), &c.name, true);
        if !c.name.is_empty() && !names.insert(c.name.as_str()) {
            errs.push(FieldError::duplicate(format!("{f}.name"), &c.name));
        }
        match (&c.resource_claim_name, &c.resource_claim_template_name) {
            (Some(a), None) => validate_name(&mut errs, &format!("{f}.resourceClaimName"), a, false),
            (None, Some(b)) => validate_name(
                &mut errs,
                &format!("{f}.resourceClaimTemplateName"),
                b,
                false,
            ),
            (Some(_), Some(_)) => errs.push(FieldError::invalid(
                f.clone(),
                "`{resourceClaimName, resourceClaimTemplateName}`",
                "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified",
            )),
            (None, None) => errs.push(FieldError::invalid(
                f.clone(),
                "`{}`",
                "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`",
            )),
        }
    }
    for (kind, list) in [
        ("containers", &pod.spec.containers),
        ("initContainers", &pod.spec.init_containers),
    ] {
        for (i, ctr) in list.iter().enumerate() {
            for (j, c) in ctr.resources.claims.iter().enumerate() {
                if !names.contains(c.name.as_str()) {
                    errs.push(FieldError::new(
                        format!("spec.{kind}[{i}].resources.claims[{j}]"),
                        format!(
                            "Not found: {}: must be one of the names in pod.spec.resourceClaims",
                            quote(&c.name)
                        ),
                    ));
                }
            }
        }
    }
    errs.into_result()
}

/// `resourceclaim.Name`: the claim a pod's entry refers to. `Ok(None)` when the controller
/// recorded that no claim was needed; `Err` is upstream's text when the generated claim is not
/// known yet. The `bool` is `mustCheckOwner` (a generated claim must be owned by the pod).
pub fn claim_name_for(
    pod: &crate::core::Pod,
    c: &PodResourceClaim,
) -> Result<Option<(String, bool)>, String> {
    if let Some(n) = &c.resource_claim_name {
        return Ok(Some((n.clone(), false)));
    }
    if c.resource_claim_template_name.is_some() {
        for s in &pod.status.resource_claim_statuses {
            if s.name == c.name {
                return Ok(s.resource_claim_name.clone().map(|n| (n, true)));
            }
        }
        return Err(format!(
            "pod \"{}/{}\": ResourceClaim not created yet",
            pod.metadata.namespace, pod.metadata.name
        ));
    }
    Err(format!(
        "pod \"{}/{}\", spec.resourceClaim {:?}: unsupported resource claim source",
        pod.metadata.namespace, pod.metadata.name, c.name
    ))
}

mod gates;
use gates::not_modelled;
pub use gates::{check_gates, gated_fields, without_gated};

#[cfg(test)]
mod tests;
