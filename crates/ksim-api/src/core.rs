//! `core/v1` objects: Pod, Node, Service, Namespace and the pieces they are made of.
//!
//! Only what scheduling reads is modelled; unknown fields are ignored so that the output of
//! `kubectl get -o json|yaml` parses as is.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::meta::{LabelSelector, Labels, ObjectMeta};
use crate::quantity::Quantity;
use crate::sorted_map::SortedMap;

/// `v1.ResourceList`, ordered by resource name.
pub type ResourceList = SortedMap<String, Quantity>;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Pod {
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub kind: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub metadata: ObjectMeta,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub spec: PodSpec,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub status: PodStatus,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodSpec {
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub scheduler_name: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub init_containers: Vec<Container>,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub containers: Vec<Container>,
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub overhead: ResourceList,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub priority_class_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preemption_policy: Option<String>,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub node_name: String,
    #[serde(skip_serializing_if = "Labels::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub node_selector: Labels,
    /// Boxed: 144 bytes inline that most pods leave empty, and without them a scheduler's
    /// `PodInfo` fits mimalloc's 1 KiB size class instead of the 1.25 KiB one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Box<Affinity>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub tolerations: Vec<Toleration>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub topology_spread_constraints: Vec<TopologySpreadConstraint>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub scheduling_gates: Vec<SchedulingGate>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub host_network: bool,
    /// `spec.hostUsers` (false: the pod runs in a user namespace). Read by
    /// NodeDeclaredFeatures (v1.36: `UserNamespacesHostNetworkSupport` with `hostNetwork`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_users: Option<bool>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub volumes: Vec<Volume>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub termination_grace_period_seconds: Option<i64>,
    /// `spec.activeDeadlineSeconds`: the kubelet fails the pod (reason `DeadlineExceeded`)
    /// that long after it started on its node; ResourceQuota's `Terminating` /
    /// `NotTerminating` scopes read it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_deadline_seconds: Option<i64>,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub restart_policy: String,
    /// DRA: the claims the pod uses (`resource.k8s.io/v1`, see [`crate::resource`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub resource_claims: Vec<crate::resource::PodResourceClaim>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodStatus {
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub phase: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub nominated_node_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub conditions: Vec<Condition>,
    /// DRA: the claims the resource claim controller generated from templates.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub resource_claim_statuses: Vec<crate::resource::PodResourceClaimStatus>,
    /// DRAExtendedResource: the claim the scheduler created for the pod's extended resources.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extended_resource_claim_status:
        Option<crate::resource::extended::PodExtendedResourceClaimStatus>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Condition {
    #[serde(rename = "type")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub type_: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub status: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub reason: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub message: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Container {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub image: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub resources: ResourceRequirements,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub ports: Vec<ContainerPort>,
    /// `Always` on an init container makes it a restartable sidecar.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restart_policy: Option<String>,
    /// `restartPolicyRules` (ContainerRestartRules): only each rule's `action` is kept, which
    /// NodeDeclaredFeatures reads (v1.36: `RestartAllContainersOnContainerExits`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub restart_policy_rules: Vec<ContainerRestartRule>,
}

/// One `restartPolicyRules` entry of a container; its `exitCodes` matcher is not kept.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ContainerRestartRule {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub action: String,
}

impl Container {
    pub fn is_sidecar(&self) -> bool {
        self.restart_policy.as_deref() == Some("Always")
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceRequirements {
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub requests: ResourceList,
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub limits: ResourceList,
    /// DRA: the pod claims (by `spec.resourceClaims[].name`) the container uses.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub claims: Vec<crate::resource::ContainerResourceClaim>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ContainerPort {
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub name: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub container_port: i32,
    #[serde(skip_serializing_if = "is_zero_i32")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub host_port: i32,
    #[serde(rename = "hostIP", skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub host_ip: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub protocol: String,
}

fn is_zero_i32(v: &i32) -> bool {
    *v == 0
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SchedulingGate {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub name: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Toleration {
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub key: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub operator: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub value: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub effect: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub toleration_seconds: Option<i64>,
}

impl Toleration {
    /// `v1.Toleration.ToleratesTaint`.
    pub fn tolerates(&self, taint: &Taint) -> bool {
        if !self.effect.is_empty() && self.effect != taint.effect {
            return false;
        }
        if !self.key.is_empty() && self.key != taint.key {
            return false;
        }
        match self.operator.as_str() {
            // Empty operator means Equal.
            "" | "Equal" => self.value == taint.value,
            "Exists" => true,
            _ => false,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Taint {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub key: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub value: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub effect: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Affinity {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_affinity: Option<NodeAffinity>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_affinity: Option<PodAffinity>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_anti_affinity: Option<PodAffinity>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeAffinity {
    #[serde(
        rename = "requiredDuringSchedulingIgnoredDuringExecution",
        skip_serializing_if = "Option::is_none"
    )]
    pub required: Option<NodeSelector>,
    #[serde(
        rename = "preferredDuringSchedulingIgnoredDuringExecution",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub preferred: Vec<PreferredSchedulingTerm>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeSelector {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub node_selector_terms: Vec<NodeSelectorTerm>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeSelectorTerm {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub match_expressions: Vec<NodeSelectorRequirement>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub match_fields: Vec<NodeSelectorRequirement>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeSelectorRequirement {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub key: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub operator: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub values: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PreferredSchedulingTerm {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub weight: i32,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub preference: NodeSelectorTerm,
}

/// Used for both `podAffinity` and `podAntiAffinity`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodAffinity {
    #[serde(
        rename = "requiredDuringSchedulingIgnoredDuringExecution",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub required: Vec<PodAffinityTerm>,
    #[serde(
        rename = "preferredDuringSchedulingIgnoredDuringExecution",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub preferred: Vec<WeightedPodAffinityTerm>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodAffinityTerm {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub namespaces: Vec<String>,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub topology_key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub match_label_keys: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub mismatch_label_keys: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WeightedPodAffinityTerm {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub weight: i32,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub pod_affinity_term: PodAffinityTerm,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopologySpreadConstraint {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub max_skew: i32,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub topology_key: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub when_unsatisfiable: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_domains: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_affinity_policy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_taints_policy: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub match_label_keys: Vec<String>,
}

/// A pod volume. Only the sources that scheduling reads are modelled.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Volume {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub persistent_volume_claim: Option<PvcVolumeSource>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ephemeral: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gce_persistent_disk: Option<GcePersistentDisk>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub aws_elastic_block_store: Option<AwsElasticBlockStore>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iscsi: Option<Iscsi>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rbd: Option<Rbd>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub csi: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_path: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub empty_dir: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config_map: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PvcVolumeSource {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub claim_name: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub read_only: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GcePersistentDisk {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub pd_name: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub fs_type: String,
    #[serde(skip_serializing_if = "is_zero_i32")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub partition: i32,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub read_only: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AwsElasticBlockStore {
    #[serde(rename = "volumeID")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub volume_id: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub fs_type: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub read_only: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Iscsi {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub target_portal: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub iqn: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub lun: i32,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub read_only: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Rbd {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub monitors: Vec<String>,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub image: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub pool: String,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub read_only: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Node {
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub kind: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub metadata: ObjectMeta,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub spec: NodeSpec,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub status: NodeStatus,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeSpec {
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub unschedulable: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub taints: Vec<Taint>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeStatus {
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub capacity: ResourceList,
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub allocatable: ResourceList,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub images: Vec<ContainerImage>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub conditions: Vec<Condition>,
    /// `status.declaredFeatures` (v1.35 alpha, v1.36 beta: NodeDeclaredFeatures): the
    /// features the kubelet declares, which the NodeDeclaredFeatures filter matches.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub declared_features: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ContainerImage {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub names: Vec<String>,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub size_bytes: i64,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Namespace {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub metadata: ObjectMeta,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Service {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub metadata: ObjectMeta,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub spec: ServiceSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ServiceSpec {
    /// Plain `key: value` selector; empty selects nothing for spreading purposes.
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub selector: Labels,
}

/// ReplicationController: its selector is a plain map.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ReplicationController {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub metadata: ObjectMeta,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub spec: ServiceSpec,
}

/// ReplicaSet and StatefulSet: their selector is a `LabelSelector`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WorkloadSet {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub metadata: ObjectMeta,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub spec: WorkloadSetSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WorkloadSetSpec {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
}

/// `policy/v1` PodDisruptionBudget.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodDisruptionBudget {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub metadata: ObjectMeta,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub spec: PdbSpec,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub status: PdbStatus,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PdbSpec {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_available: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<serde_json::Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// `IfHealthyBudget` (default) or `AlwaysAllow`: read only by the Eviction API, which no
    /// ksim path uses (preemption and taint eviction delete pods, as upstream's do).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unhealthy_pod_eviction_policy: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PdbStatus {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub disruptions_allowed: i32,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub current_healthy: i32,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub desired_healthy: i32,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub expected_pods: i32,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub disrupted_pods: BTreeMap<String, String>,
}

/// `scheduling.k8s.io/v1` PriorityClass.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PriorityClass {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub metadata: ObjectMeta,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub value: i32,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub global_default: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preemption_policy: Option<String>,
}

impl Pod {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        crate::meta::concat(&[&self.metadata.namespace, "/", &self.metadata.name])
    }

    pub fn priority(&self) -> i32 {
        self.spec.priority.unwrap_or(0)
    }
}
