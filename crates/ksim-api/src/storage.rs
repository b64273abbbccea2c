//! Storage objects: `core/v1` PersistentVolume and PersistentVolumeClaim, and the
//! `storage.k8s.io/v1` StorageClass, CSINode, CSIDriver, CSIStorageCapacity and VolumeAttachment,
//! with the API-server defaulting that volume scheduling depends on.
//!
//! Only what the volume plugins (VolumeBinding, VolumeRestrictions, VolumeZone, NodeVolumeLimits)
//! read is modelled; unknown fields are ignored so that `kubectl get -o json|yaml` output parses.
//! Pointer fields whose nil-ness upstream distinguishes (`storageClassName` on a claim,
//! `volumeMode`, `volumeBindingMode`, `allocatable.count`, ...) are `Option`s.

use serde::{Deserialize, Serialize};

use crate::core::{
    AwsElasticBlockStore, GcePersistentDisk, Iscsi, NodeSelector, Rbd, ResourceList,
};
use crate::meta::{LabelSelector, Labels, ObjectMeta};
use crate::quantity::Quantity;

/// `pv.kubernetes.io/bind-completed` (on a claim): the PV controller finished binding it.
pub const ANN_BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
/// `pv.kubernetes.io/bound-by-controller` (on a PV or claim): the binding was not made by a user.
pub const ANN_BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";
/// `volume.kubernetes.io/selected-node` (on a claim): the scheduler chose this node for
/// provisioning.
pub const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// `volume.beta.kubernetes.io/storage-class`: the beta form of `storageClassName`, which wins
/// over the field when present.
pub const ANN_BETA_STORAGE_CLASS: &str = "volume.beta.kubernetes.io/storage-class";
/// `storage.alpha.kubernetes.io/migrated-plugins` (on a CSINode): comma-separated in-tree
/// plugins migrated to CSI on that node.
pub const ANN_MIGRATED_PLUGINS: &str = "storage.alpha.kubernetes.io/migrated-plugins";
/// A StorageClass provisioner meaning "no dynamic provisioning".
pub const NOT_SUPPORTED_PROVISIONER: &str = "kubernetes.io/no-provisioner";

/// `volumeBindingMode: WaitForFirstConsumer`.
pub const BINDING_WAIT_FOR_FIRST_CONSUMER: &str = "WaitForFirstConsumer";
/// `volumeBindingMode: Immediate`.
pub const BINDING_IMMEDIATE: &str = "Immediate";

/// The access modes.
pub const READ_WRITE_ONCE: &str = "ReadWriteOnce";
pub const READ_ONLY_MANY: &str = "ReadOnlyMany";
pub const READ_WRITE_MANY: &str = "ReadWriteMany";
pub const READ_WRITE_ONCE_POD: &str = "ReadWriteOncePod";

/// `v1.PersistentVolume`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PersistentVolume {
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub kind: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub metadata: ObjectMeta,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub spec: PersistentVolumeSpec,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub status: PersistentVolumeStatus,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PersistentVolumeSpec {
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub capacity: ResourceList,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub access_modes: Vec<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub storage_class_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claim_ref: Option<ObjectReference>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_affinity: Option<VolumeNodeAffinity>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume_mode: Option<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub persistent_volume_reclaim_policy: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume_attributes_class_name: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub mount_options: Vec<String>,
    // Volume sources that scheduling reads. At most one is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub csi: Option<CsiPersistentVolumeSource>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local: Option<LocalVolumeSource>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_path: Option<HostPathVolumeSource>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gce_persistent_disk: Option<GcePersistentDisk>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aws_elastic_block_store: Option<AwsElasticBlockStore>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rbd: Option<Rbd>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iscsi: Option<Iscsi>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PersistentVolumeStatus {
    /// `Pending`, `Available`, `Bound`, `Released` or `Failed`.
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub phase: String,
}

/// `v1.ObjectReference` as a PV's `claimRef` uses it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ObjectReference {
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub kind: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub namespace: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub uid: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub resource_version: String,
}

/// `v1.VolumeNodeAffinity`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct VolumeNodeAffinity {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub required: Option<NodeSelector>,
}

/// `v1.CSIPersistentVolumeSource`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CsiPersistentVolumeSource {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub driver: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub volume_handle: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub read_only: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub fs_type: String,
    #[serde(skip_serializing_if = "Labels::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub volume_attributes: Labels,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LocalVolumeSource {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fs_type: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct HostPathVolumeSource {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub path: String,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
}

/// `v1.PersistentVolumeClaim`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PersistentVolumeClaim {
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub kind: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub metadata: ObjectMeta,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub spec: PersistentVolumeClaimSpec,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub status: PersistentVolumeClaimStatus,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PersistentVolumeClaimSpec {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub access_modes: Vec<String>,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub resources: VolumeResourceRequirements,
    /// `None` (absent) and `Some("")` differ for the PV controller's defaulting; for scheduling
    /// both mean "no class".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_class_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub volume_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume_mode: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume_attributes_class_name: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct VolumeResourceRequirements {
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub requests: ResourceList,
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub limits: ResourceList,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PersistentVolumeClaimStatus {
    /// `Pending`, `Bound` or `Lost`.
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub phase: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub access_modes: Vec<String>,
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub capacity: ResourceList,
}

/// `storage.k8s.io/v1` StorageClass. Its fields sit at the top level, not under `spec`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StorageClass {
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub kind: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub metadata: ObjectMeta,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub provisioner: String,
    #[serde(skip_serializing_if = "Labels::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub parameters: Labels,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reclaim_policy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume_binding_mode: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub allowed_topologies: Vec<TopologySelectorTerm>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_volume_expansion: Option<bool>,
}

/// `v1.TopologySelectorTerm`: its requirements are ANDed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopologySelectorTerm {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub match_label_expressions: Vec<TopologySelectorLabelRequirement>,
}

/// `v1.TopologySelectorLabelRequirement`: the label must have one of the values.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopologySelectorLabelRequirement {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub key: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub values: Vec<String>,
}

/// `storage.k8s.io/v1` CSINode, named after its node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CsiNode {
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub kind: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub metadata: ObjectMeta,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub spec: CsiNodeSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CsiNodeSpec {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub drivers: Vec<CsiNodeDriver>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CsiNodeDriver {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub name: String,
    #[serde(rename = "nodeID", skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub node_id: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub topology_keys: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allocatable: Option<VolumeNodeResources>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct VolumeNodeResources {
    /// Maximum number of unique volumes of this driver on the node; `None` = no limit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<i32>,
}

/// `storage.k8s.io/v1` CSIDriver.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CsiDriver {
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub kind: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub metadata: ObjectMeta,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub spec: CsiDriverSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CsiDriverSpec {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attach_required: Option<bool>,
    /// Whether the scheduler checks CSIStorageCapacity objects for this driver.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_capacity: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_info_on_mount: Option<bool>,
}

/// `storage.k8s.io/v1` CSIStorageCapacity (namespaced; its fields sit at the top level).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CsiStorageCapacity {
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub kind: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub metadata: ObjectMeta,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub storage_class_name: String,
    /// Which nodes can reach the storage; `None` means none can.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_topology: Option<LabelSelector>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<Quantity>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maximum_volume_size: Option<Quantity>,
}

/// `storage.k8s.io/v1` VolumeAttachment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct VolumeAttachment {
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub kind: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub metadata: ObjectMeta,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub spec: VolumeAttachmentSpec,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub status: VolumeAttachmentStatus,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct VolumeAttachmentSpec {
    /// The CSI driver name.
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub attacher: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub node_name: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub source: VolumeAttachmentSource,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct VolumeAttachmentSource {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub persistent_volume_name: Option<String>,
    /// An inline volume spec (migrated in-tree inline volume); kept opaque.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub inline_volume_spec: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct VolumeAttachmentStatus {
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub attached: bool,
}

impl PersistentVolume {
    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    /// `GetPersistentVolumeClass`: the beta annotation wins over `storageClassName`.
    pub fn class(&self) -> &str {
        match self.metadata.annotations.get(ANN_BETA_STORAGE_CLASS) {
            Some(c) => c,
            None => &self.spec.storage_class_name,
        }
    }

    /// The `storage` capacity; zero when absent.
    pub fn storage_capacity(&self) -> Quantity {
        self.spec
            .capacity
            .get("storage")
            .cloned()
            .unwrap_or_else(|| Quantity::from_value(0))
    }

    /// The effective volume mode (`Filesystem` when unset).
    pub fn volume_mode(&self) -> &str {
        self.spec.volume_mode.as_deref().unwrap_or("Filesystem")
    }
}

impl PersistentVolumeClaim {
    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    pub fn namespace(&self) -> &str {
        &self.metadata.namespace
    }

    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.metadata.namespace, self.metadata.name)
    }

    /// `GetPersistentVolumeClaimClass`: the beta annotation, else `storageClassName`, else "".
    pub fn class(&self) -> &str {
        if let Some(c) = self.metadata.annotations.get(ANN_BETA_STORAGE_CLASS) {
            return c;
        }
        self.spec.storage_class_name.as_deref().unwrap_or("")
    }

    /// The `storage` request, if any.
    pub fn storage_request(&self) -> Option<&Quantity> {
        self.spec.resources.requests.get("storage")
    }

    /// The effective volume mode (`Filesystem` when unset).
    pub fn volume_mode(&self) -> &str {
        self.spec.volume_mode.as_deref().unwrap_or("Filesystem")
    }

    /// Bound as far as the scheduler is concerned: `volumeName` set and the bind-completed
    /// annotation present (`isPVCFullyBound`). The phase is not consulted.
    pub fn is_fully_bound(&self) -> bool {
        !self.spec.volume_name.is_empty()
            && self.metadata.annotations.contains_key(ANN_BIND_COMPLETED)
    }

    pub fn has_access_mode(&self, mode: &str) -> bool {
        self.spec.access_modes.iter().any(|m| m == mode)
    }
}

impl StorageClass {
    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    pub fn is_wait_for_first_consumer(&self) -> bool {
        self.volume_binding_mode.as_deref() == Some(BINDING_WAIT_FOR_FIRST_CONSUMER)
    }
}

impl CsiNode {
    /// The in-tree plugin names listed in the migrated-plugins annotation.
    pub fn migrated_plugins(&self) -> impl Iterator<Item = &str> {
        self.metadata
            .annotations
            .get(ANN_MIGRATED_PLUGINS)
            .map(String::as_str)
            .unwrap_or("")
            .split(',')
            .filter(|s| !s.is_empty())
    }
}

/// Applies the API server's PV defaulting in place: phase `Pending`, reclaim policy `Retain`,
/// volume mode `Filesystem`. Idempotent.
pub fn default_persistent_volume(pv: &mut PersistentVolume) {
    if pv.status.phase.is_empty() {
        pv.status.phase = "Pending".into();
    }
    if pv.spec.persistent_volume_reclaim_policy.is_empty() {
        pv.spec.persistent_volume_reclaim_policy = "Retain".into();
    }
    if pv.spec.volume_mode.is_none() {
        pv.spec.volume_mode = Some("Filesystem".into());
    }
    if let Some(rbd) = &mut pv.spec.rbd {
        if rbd.pool.is_empty() {
            rbd.pool = "rbd".into();
        }
    }
}

/// Applies the API server's claim defaulting in place: namespace `default`, phase `Pending`,
/// volume mode `Filesystem`, and ksim's UID convention `uid-pvc-<ns>-<name>`. Idempotent.
pub fn default_persistent_volume_claim(pvc: &mut PersistentVolumeClaim) {
    if pvc.metadata.namespace.is_empty() {
        pvc.metadata.namespace = "default".into();
    }
    if pvc.status.phase.is_empty() {
        pvc.status.phase = "Pending".into();
    }
    if pvc.spec.volume_mode.is_none() {
        pvc.spec.volume_mode = Some("Filesystem".into());
    }
    // A claim named by generateName gets its uid when it is named.
    if pvc.metadata.uid.is_empty() && !pvc.metadata.name.is_empty() {
        pvc.metadata.uid = format!("uid-pvc-{}-{}", pvc.metadata.namespace, pvc.metadata.name);
    }
}

/// Applies the API server's StorageClass defaulting in place: binding mode `Immediate`,
/// reclaim policy `Delete`. Idempotent.
pub fn default_storage_class(sc: &mut StorageClass) {
    if sc.volume_binding_mode.is_none() {
        sc.volume_binding_mode = Some(BINDING_IMMEDIATE.into());
    }
    if sc.reclaim_policy.is_none() {
        sc.reclaim_policy = Some("Delete".into());
    }
}

/// Applies CSIStorageCapacity defaulting: an empty namespace becomes `default`.
pub fn default_csi_storage_capacity(c: &mut CsiStorageCapacity) {
    if c.metadata.namespace.is_empty() {
        c.metadata.namespace = "default".into();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_defaults_pv_and_claim() {
        let mut pv: PersistentVolume = serde_json::from_str(
            r#"{"metadata":{"name":"pv1","labels":{"topology.kubernetes.io/zone":"a"}},
            "spec":{"capacity":{"storage":"10Gi"},"accessModes":["ReadWriteOnce"],
            "storageClassName":"local","local":{"path":"/mnt"},
            "claimRef":{"namespace":"default","name":"data"},
            "nodeAffinity":{"required":{"nodeSelectorTerms":[{"matchExpressions":
            [{"key":"kubernetes.io/hostname","operator":"In","values":["n1"]}]}]}}}}"#,
        )
        .unwrap();
        default_persistent_volume(&mut pv);
        assert_eq!(pv.status.phase, "Pending");
        assert_eq!(pv.volume_mode(), "Filesystem");
        assert_eq!(pv.class(), "local");
        assert_eq!(pv.storage_capacity().value(), 10 << 30);
        assert_eq!(pv.spec.claim_ref.as_ref().unwrap().name, "data");

        let mut pvc: PersistentVolumeClaim = serde_json::from_str(
            r#"{"metadata":{"name":"data","annotations":{"pv.kubernetes.io/bind-completed":"yes"}},
            "spec":{"volumeName":"pv1","resources":{"requests":{"storage":"1Gi"}}}}"#,
        )
        .unwrap();
        default_persistent_volume_claim(&mut pvc);
        assert_eq!(pvc.key(), "default/data");
        assert_eq!(pvc.metadata.uid, "uid-pvc-default-data");
        assert_eq!(pvc.class(), "");
        assert!(pvc.is_fully_bound());
    }

    #[test]
    fn beta_class_annotation_wins() {
        let mut pvc = PersistentVolumeClaim::default();
        pvc.spec.storage_class_name = Some("ga".into());
        assert_eq!(pvc.class(), "ga");
        pvc.metadata
            .annotations
            .insert(ANN_BETA_STORAGE_CLASS.into(), "beta".into());
        assert_eq!(pvc.class(), "beta");
    }

    #[test]
    fn storage_class_and_csinode() {
        let mut sc: StorageClass = serde_json::from_str(
            r#"{"metadata":{"name":"s"},"provisioner":"csi.example.com",
            "allowedTopologies":[{"matchLabelExpressions":[{"key":"zone","values":["a","b"]}]}]}"#,
        )
        .unwrap();
        default_storage_class(&mut sc);
        assert_eq!(sc.volume_binding_mode.as_deref(), Some("Immediate"));
        assert!(!sc.is_wait_for_first_consumer());
        assert_eq!(
            sc.allowed_topologies[0].match_label_expressions[0]
                .values
                .len(),
            2
        );

        let n: CsiNode = serde_json::from_str(
            r#"{"metadata":{"name":"n1","annotations":{"storage.alpha.kubernetes.io/migrated-plugins":"kubernetes.io/gce-pd,kubernetes.io/aws-ebs"}},
            "spec":{"drivers":[{"name":"ebs.csi.aws.com","nodeID":"i-1","allocatable":{"count":3}}]}}"#,
        )
        .unwrap();
        assert_eq!(
            n.spec.drivers[0].allocatable.as_ref().unwrap().count,
            Some(3)
        );
        assert_eq!(n.migrated_plugins().count(), 2);
    }
}
