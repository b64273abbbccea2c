//! The cluster objects other than pods and nodes that a trace may create, update or delete while
//! a run goes on, and that a scenario may list at t=0: the storage objects volume scheduling
//! reads (PersistentVolume, PersistentVolumeClaim, StorageClass, CSINode, CSIDriver,
//! CSIStorageCapacity, VolumeAttachment), PodDisruptionBudgets (preemption) and Services
//! (PodTopologySpread's default constraints), and the workloads the engine's controllers run
//! (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob; see [`crate::workloads`]), and
//! PriorityClasses (the engine resolves a new pod's priority against them, as the Priority
//! admission plugin does).
//!
//! [`ApiObject`] reads and writes the Kubernetes JSON of any of them, dispatching on `kind`;
//! [`ObjectKind`] names the kind alone (for deletions and cluster events).

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::admission::{LimitRange, ResourceQuota};
use crate::core::{PodDisruptionBudget, PriorityClass, Service};
use crate::load::{decode, LoadError};
use crate::meta::ObjectMeta;
use crate::resource::{self, DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice};
use crate::storage::{
    default_csi_storage_capacity, default_persistent_volume, default_persistent_volume_claim,
    default_storage_class, CsiDriver, CsiNode, CsiStorageCapacity, PersistentVolume,
    PersistentVolumeClaim, StorageClass, VolumeAttachment,
};
use crate::workloads::Workload;

/// The kind of an [`ApiObject`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ObjectKind {
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    CsiNode,
    CsiDriver,
    CsiStorageCapacity,
    VolumeAttachment,
    PodDisruptionBudget,
    Service,
    Deployment,
    ReplicaSet,
    StatefulSet,
    DaemonSet,
    Job,
    CronJob,
    PriorityClass,
    DeviceClass,
    ResourceSlice,
    ResourceClaim,
    ResourceClaimTemplate,
    LimitRange,
    ResourceQuota,
}

impl ObjectKind {
    /// Every kind, in the order the documentation lists them.
    pub const ALL: [ObjectKind; 22] = [
        ObjectKind::PersistentVolume,
        ObjectKind::PersistentVolumeClaim,
        ObjectKind::StorageClass,
        ObjectKind::CsiNode,
        ObjectKind::CsiDriver,
        ObjectKind::CsiStorageCapacity,
        ObjectKind::VolumeAttachment,
        ObjectKind::PodDisruptionBudget,
        ObjectKind::Service,
        ObjectKind::Deployment,
        ObjectKind::ReplicaSet,
        ObjectKind::StatefulSet,
        ObjectKind::DaemonSet,
        ObjectKind::Job,
        ObjectKind::CronJob,
        ObjectKind::PriorityClass,
        ObjectKind::DeviceClass,
        ObjectKind::ResourceSlice,
        ObjectKind::ResourceClaim,
        ObjectKind::ResourceClaimTemplate,
        ObjectKind::LimitRange,
        ObjectKind::ResourceQuota,
    ];

    /// The `resource.k8s.io` kinds of Dynamic Resource Allocation.
    pub fn is_dra(self) -> bool {
        matches!(
            self,
            ObjectKind::DeviceClass
                | ObjectKind::ResourceSlice
                | ObjectKind::ResourceClaim
                | ObjectKind::ResourceClaimTemplate
        )
    }

    /// The workload kinds the engine's controllers run.
    pub fn is_workload(self) -> bool {
        matches!(
            self,
            ObjectKind::Deployment
                | ObjectKind::ReplicaSet
                | ObjectKind::StatefulSet
                | ObjectKind::DaemonSet
                | ObjectKind::Job
                | ObjectKind::CronJob
        )
    }

    /// The Kubernetes `kind` (`CSINode`, not `CsiNode`).
    pub fn as_str(self) -> &'static str {
        match self {
            ObjectKind::PersistentVolume => "PersistentVolume",
            ObjectKind::PersistentVolumeClaim => "PersistentVolumeClaim",
            ObjectKind::StorageClass => "StorageClass",
            ObjectKind::CsiNode => "CSINode",
            ObjectKind::CsiDriver => "CSIDriver",
            ObjectKind::CsiStorageCapacity => "CSIStorageCapacity",
            ObjectKind::VolumeAttachment => "VolumeAttachment",
            ObjectKind::PodDisruptionBudget => "PodDisruptionBudget",
            ObjectKind::Service => "Service",
            ObjectKind::Deployment => "Deployment",
            ObjectKind::ReplicaSet => "ReplicaSet",
            ObjectKind::StatefulSet => "StatefulSet",
            ObjectKind::DaemonSet => "DaemonSet",
            ObjectKind::Job => "Job",
            ObjectKind::CronJob => "CronJob",
            ObjectKind::PriorityClass => "PriorityClass",
            ObjectKind::DeviceClass => "DeviceClass",
            ObjectKind::ResourceSlice => "ResourceSlice",
            ObjectKind::ResourceClaim => "ResourceClaim",
            ObjectKind::ResourceClaimTemplate => "ResourceClaimTemplate",
            ObjectKind::LimitRange => "LimitRange",
            ObjectKind::ResourceQuota => "ResourceQuota",
        }
    }

    /// The kind for a Kubernetes `kind` string, if ksim models it.
    pub fn from_kind(kind: &str) -> Option<ObjectKind> {
        ObjectKind::ALL.into_iter().find(|k| k.as_str() == kind)
    }

    /// The `apiVersion` kubectl writes for the kind.
    pub fn api_version(self) -> &'static str {
        match self {
            ObjectKind::PersistentVolume
            | ObjectKind::PersistentVolumeClaim
            | ObjectKind::Service
            | ObjectKind::LimitRange
            | ObjectKind::ResourceQuota => "v1",
            ObjectKind::PodDisruptionBudget => "policy/v1",
            ObjectKind::Deployment
            | ObjectKind::ReplicaSet
            | ObjectKind::StatefulSet
            | ObjectKind::DaemonSet => "apps/v1",
            ObjectKind::Job | ObjectKind::CronJob => "batch/v1",
            ObjectKind::PriorityClass => "scheduling.k8s.io/v1",
            ObjectKind::DeviceClass
            | ObjectKind::ResourceSlice
            | ObjectKind::ResourceClaim
            | ObjectKind::ResourceClaimTemplate => crate::resource::API_VERSION,
            _ => "storage.k8s.io/v1",
        }
    }

    /// Whether objects of the kind live in a namespace.
    pub fn namespaced(self) -> bool {
        matches!(
            self,
            ObjectKind::PersistentVolumeClaim
                | ObjectKind::CsiStorageCapacity
                | ObjectKind::PodDisruptionBudget
                | ObjectKind::Service
                | ObjectKind::ResourceClaim
                | ObjectKind::ResourceClaimTemplate
                | ObjectKind::LimitRange
                | ObjectKind::ResourceQuota
        ) || self.is_workload()
    }

    /// The store key of an object of this kind: `namespace/name` when namespaced, else `name`.
    pub fn key(self, namespace: &str, name: &str) -> String {
        if self.namespaced() {
            format!("{namespace}/{name}")
        } else {
            name.to_string()
        }
    }

    /// The kinds as a comma-separated list, for error messages.
    pub fn list() -> String {
        ObjectKind::ALL
            .iter()
            .map(|k| k.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl std::fmt::Display for ObjectKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for ObjectKind {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ObjectKind {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        ObjectKind::from_kind(&s).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown object kind {s:?}; expected one of {}",
                ObjectKind::list()
            ))
        })
    }
}

/// One object of a kind listed in [`ObjectKind`], as Kubernetes JSON reads it.
///
/// The variants differ in size (a PV is the largest); events hold the enum boxed and stores
/// hold the inner objects, so boxing each variant would only make matching clumsier.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum ApiObject {
    PersistentVolume(PersistentVolume),
    PersistentVolumeClaim(PersistentVolumeClaim),
    StorageClass(StorageClass),
    CsiNode(CsiNode),
    CsiDriver(CsiDriver),
    CsiStorageCapacity(CsiStorageCapacity),
    VolumeAttachment(VolumeAttachment),
    PodDisruptionBudget(PodDisruptionBudget),
    Service(Service),
    Deployment(Workload),
    ReplicaSet(Workload),
    StatefulSet(Workload),
    DaemonSet(Workload),
    Job(Workload),
    CronJob(Workload),
    PriorityClass(PriorityClass),
    DeviceClass(DeviceClass),
    ResourceSlice(ResourceSlice),
    ResourceClaim(ResourceClaim),
    ResourceClaimTemplate(ResourceClaimTemplate),
    LimitRange(LimitRange),
    ResourceQuota(ResourceQuota),
}

impl ApiObject {
    pub fn kind(&self) -> ObjectKind {
        match self {
            ApiObject::PersistentVolume(_) => ObjectKind::PersistentVolume,
            ApiObject::PersistentVolumeClaim(_) => ObjectKind::PersistentVolumeClaim,
            ApiObject::StorageClass(_) => ObjectKind::StorageClass,
            ApiObject::CsiNode(_) => ObjectKind::CsiNode,
            ApiObject::CsiDriver(_) => ObjectKind::CsiDriver,
            ApiObject::CsiStorageCapacity(_) => ObjectKind::CsiStorageCapacity,
            ApiObject::VolumeAttachment(_) => ObjectKind::VolumeAttachment,
            ApiObject::PodDisruptionBudget(_) => ObjectKind::PodDisruptionBudget,
            ApiObject::Service(_) => ObjectKind::Service,
            ApiObject::Deployment(_) => ObjectKind::Deployment,
            ApiObject::ReplicaSet(_) => ObjectKind::ReplicaSet,
            ApiObject::StatefulSet(_) => ObjectKind::StatefulSet,
            ApiObject::DaemonSet(_) => ObjectKind::DaemonSet,
            ApiObject::Job(_) => ObjectKind::Job,
            ApiObject::CronJob(_) => ObjectKind::CronJob,
            ApiObject::PriorityClass(_) => ObjectKind::PriorityClass,
            ApiObject::DeviceClass(_) => ObjectKind::DeviceClass,
            ApiObject::ResourceSlice(_) => ObjectKind::ResourceSlice,
            ApiObject::ResourceClaim(_) => ObjectKind::ResourceClaim,
            ApiObject::ResourceClaimTemplate(_) => ObjectKind::ResourceClaimTemplate,
            ApiObject::LimitRange(_) => ObjectKind::LimitRange,
            ApiObject::ResourceQuota(_) => ObjectKind::ResourceQuota,
        }
    }

    pub fn metadata(&self) -> &ObjectMeta {
        match self {
            ApiObject::PersistentVolume(o) => &o.metadata,
            ApiObject::PersistentVolumeClaim(o) => &o.metadata,
            ApiObject::StorageClass(o) => &o.metadata,
            ApiObject::CsiNode(o) => &o.metadata,
            ApiObject::CsiDriver(o) => &o.metadata,
            ApiObject::CsiStorageCapacity(o) => &o.metadata,
            ApiObject::VolumeAttachment(o) => &o.metadata,
            ApiObject::PodDisruptionBudget(o) => &o.metadata,
            ApiObject::Service(o) => &o.metadata,
            ApiObject::Deployment(o)
            | ApiObject::ReplicaSet(o)
            | ApiObject::StatefulSet(o)
            | ApiObject::DaemonSet(o)
            | ApiObject::Job(o)
            | ApiObject::CronJob(o) => &o.metadata,
            ApiObject::PriorityClass(o) => &o.metadata,
            ApiObject::DeviceClass(o) => &o.metadata,
            ApiObject::ResourceSlice(o) => &o.metadata,
            ApiObject::ResourceClaim(o) => &o.metadata,
            ApiObject::ResourceClaimTemplate(o) => &o.metadata,
            ApiObject::LimitRange(o) => &o.metadata,
            ApiObject::ResourceQuota(o) => &o.metadata,
        }
    }

    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        match self {
            ApiObject::PersistentVolume(o) => &mut o.metadata,
            ApiObject::PersistentVolumeClaim(o) => &mut o.metadata,
            ApiObject::StorageClass(o) => &mut o.metadata,
            ApiObject::CsiNode(o) => &mut o.metadata,
            ApiObject::CsiDriver(o) => &mut o.metadata,
            ApiObject::CsiStorageCapacity(o) => &mut o.metadata,
            ApiObject::VolumeAttachment(o) => &mut o.metadata,
            ApiObject::PodDisruptionBudget(o) => &mut o.metadata,
            ApiObject::Service(o) => &mut o.metadata,
            ApiObject::Deployment(o)
            | ApiObject::ReplicaSet(o)
            | ApiObject::StatefulSet(o)
            | ApiObject::DaemonSet(o)
            | ApiObject::Job(o)
            | ApiObject::CronJob(o) => &mut o.metadata,
            ApiObject::PriorityClass(o) => &mut o.metadata,
            ApiObject::DeviceClass(o) => &mut o.metadata,
            ApiObject::ResourceSlice(o) => &mut o.metadata,
            ApiObject::ResourceClaim(o) => &mut o.metadata,
            ApiObject::ResourceClaimTemplate(o) => &mut o.metadata,
            ApiObject::LimitRange(o) => &mut o.metadata,
            ApiObject::ResourceQuota(o) => &mut o.metadata,
        }
    }

    pub fn name(&self) -> &str {
        &self.metadata().name
    }

    /// Sets `apiVersion` and `kind` to the canonical values, so that an object reads back
    /// equal to itself whatever `apiVersion` it was written with.
    fn set_type_meta(&mut self) {
        let k = self.kind();
        let (api_version, kind) = match self {
            ApiObject::PersistentVolume(o) => (&mut o.api_version, &mut o.kind),
            ApiObject::PersistentVolumeClaim(o) => (&mut o.api_version, &mut o.kind),
            ApiObject::StorageClass(o) => (&mut o.api_version, &mut o.kind),
            ApiObject::CsiNode(o) => (&mut o.api_version, &mut o.kind),
            ApiObject::CsiDriver(o) => (&mut o.api_version, &mut o.kind),
            ApiObject::CsiStorageCapacity(o) => (&mut o.api_version, &mut o.kind),
            ApiObject::VolumeAttachment(o) => (&mut o.api_version, &mut o.kind),
            ApiObject::LimitRange(o) => (&mut o.api_version, &mut o.kind),
            ApiObject::ResourceQuota(o) => (&mut o.api_version, &mut o.kind),
            ApiObject::Deployment(o)
            | ApiObject::ReplicaSet(o)
            | ApiObject::StatefulSet(o)
            | ApiObject::DaemonSet(o)
            | ApiObject::Job(o)
            | ApiObject::CronJob(o) => (&mut o.api_version, &mut o.kind),
            ApiObject::DeviceClass(o) => (&mut o.api_version, &mut o.kind),
            ApiObject::ResourceSlice(o) => (&mut o.api_version, &mut o.kind),
            ApiObject::ResourceClaim(o) => (&mut o.api_version, &mut o.kind),
            ApiObject::ResourceClaimTemplate(o) => (&mut o.api_version, &mut o.kind),
            // PDB, Service and PriorityClass types carry no type meta.
            ApiObject::PodDisruptionBudget(_)
            | ApiObject::Service(_)
            | ApiObject::PriorityClass(_) => return,
        };
        *api_version = k.api_version().to_string();
        *kind = k.as_str().to_string();
    }

    /// The namespace ("" for cluster-scoped kinds).
    pub fn namespace(&self) -> &str {
        if self.kind().namespaced() {
            &self.metadata().namespace
        } else {
            ""
        }
    }

    /// `namespace/name` for namespaced kinds, `name` otherwise.
    pub fn key(&self) -> String {
        self.kind().key(&self.metadata().namespace, self.name())
    }

    /// Names an object created with `metadata.generateName` (as the API server does on create),
    /// then re-applies the defaults that derive from the name (a claim's uid).
    pub fn set_generated_name(&mut self, name: String) {
        let meta = self.metadata_mut();
        meta.name = name;
        if let ApiObject::PersistentVolumeClaim(pvc) = self {
            pvc.metadata.uid.clear();
        }
        if let ApiObject::ResourceClaim(c) = self {
            c.metadata.uid.clear();
        }
        self.apply_defaults();
    }

    /// Applies the API server's defaulting: `default` namespace for namespaced kinds (and none
    /// for cluster-scoped ones), then the storage defaults of [`crate::storage`]. Idempotent.
    pub fn apply_defaults(&mut self) {
        let namespaced = self.kind().namespaced();
        let meta = self.metadata_mut();
        if !namespaced {
            meta.namespace.clear();
        } else if meta.namespace.is_empty() {
            meta.namespace = "default".into();
        }
        match self {
            ApiObject::PersistentVolume(pv) => default_persistent_volume(pv),
            ApiObject::PersistentVolumeClaim(pvc) => default_persistent_volume_claim(pvc),
            ApiObject::StorageClass(sc) => default_storage_class(sc),
            ApiObject::CsiStorageCapacity(c) => default_csi_storage_capacity(c),
            ApiObject::ResourceClaim(c) => crate::resource::default_resource_claim(c),
            ApiObject::ResourceClaimTemplate(t) => {
                crate::resource::default_resource_claim_template(t)
            }
            ApiObject::LimitRange(lr) => {
                for item in &mut lr.spec.limits {
                    crate::admission::default_limit_range_item(item);
                }
            }
            _ => {}
        }
    }

    /// Decodes an object from its Kubernetes JSON, dispatching on `kind`. Errors name the field
    /// path; `source_name` names the document.
    pub fn from_value(source_name: &str, v: &Value) -> Result<ApiObject, LoadError> {
        let field = |path: &str, message: String| LoadError::Field {
            source_name: source_name.to_string(),
            path: path.to_string(),
            message,
        };
        if !v.is_object() {
            return Err(field(
                "",
                format!(
                    "expected a Kubernetes object, got {}",
                    crate::json::value_kind(v)
                ),
            ));
        }
        let kind = match v.get("kind") {
            Some(Value::String(k)) => k.as_str(),
            Some(other) => {
                return Err(field(
                    "kind",
                    format!("expected a string, got {}", crate::json::value_kind(other)),
                ))
            }
            None => {
                return Err(field(
                    "kind",
                    format!("required (one of {})", ObjectKind::list()),
                ))
            }
        };
        let Some(k) = ObjectKind::from_kind(kind) else {
            return Err(field(
                "kind",
                format!(
                    "unknown object kind {kind:?}; expected one of {}",
                    ObjectKind::list()
                ),
            ));
        };
        // apiVersion and kind first, then strict field validation (`crate::strict`).
        crate::strict::check_document(kind, v).map_err(|(path, message)| field(&path, message))?;
        let obj = match k {
            ObjectKind::PersistentVolume => ApiObject::PersistentVolume(decode(source_name, v)?),
            ObjectKind::PersistentVolumeClaim => {
                ApiObject::PersistentVolumeClaim(decode(source_name, v)?)
            }
            ObjectKind::StorageClass => ApiObject::StorageClass(decode(source_name, v)?),
            ObjectKind::CsiNode => ApiObject::CsiNode(decode(source_name, v)?),
            ObjectKind::CsiDriver => ApiObject::CsiDriver(decode(source_name, v)?),
            ObjectKind::CsiStorageCapacity => {
                ApiObject::CsiStorageCapacity(decode(source_name, v)?)
            }
            ObjectKind::VolumeAttachment => ApiObject::VolumeAttachment(decode(source_name, v)?),
            ObjectKind::PodDisruptionBudget => {
                ApiObject::PodDisruptionBudget(decode(source_name, v)?)
            }
            ObjectKind::Service => ApiObject::Service(decode(source_name, v)?),
            ObjectKind::Deployment
            | ObjectKind::ReplicaSet
            | ObjectKind::StatefulSet
            | ObjectKind::DaemonSet
            | ObjectKind::Job
            | ObjectKind::CronJob => {
                let w: Workload = decode(source_name, v)?;
                crate::workloads::validate(kind, &w)
                    .map_err(|(path, message)| field(&path, message))?;
                match k {
                    ObjectKind::Deployment => ApiObject::Deployment(w),
                    ObjectKind::ReplicaSet => ApiObject::ReplicaSet(w),
                    ObjectKind::StatefulSet => ApiObject::StatefulSet(w),
                    ObjectKind::DaemonSet => ApiObject::DaemonSet(w),
                    ObjectKind::CronJob => ApiObject::CronJob(w),
                    _ => ApiObject::Job(w),
                }
            }
            ObjectKind::PriorityClass => {
                let pc: PriorityClass = decode(source_name, v)?;
                validate_priority_class(&pc).map_err(|(path, message)| field(path, message))?;
                ApiObject::PriorityClass(pc)
            }
            ObjectKind::DeviceClass => {
                let c: DeviceClass = decode(source_name, v)?;
                resource::validate_device_class(&c)
                    .or_else(resource::without_gated)
                    .map_err(|e| dra_error(source_name, e))?;
                ApiObject::DeviceClass(c)
            }
            ObjectKind::ResourceSlice => {
                let s: ResourceSlice = decode(source_name, v)?;
                resource::validate_resource_slice(&s)
                    .or_else(resource::without_gated)
                    .map_err(|e| dra_error(source_name, e))?;
                ApiObject::ResourceSlice(s)
            }
            ObjectKind::ResourceClaim => {
                let mut c: ResourceClaim = decode(source_name, v)?;
                // Validated as the API server does: after defaulting.
                resource::default_claim_spec(&mut c.spec);
                resource::validate_resource_claim(&c)
                    .or_else(resource::without_gated)
                    .map_err(|e| dra_error(source_name, e))?;
                ApiObject::ResourceClaim(c)
            }
            ObjectKind::ResourceClaimTemplate => {
                let mut t: ResourceClaimTemplate = decode(source_name, v)?;
                resource::default_claim_spec(&mut t.spec.spec);
                resource::validate_resource_claim_template(&t)
                    .or_else(resource::without_gated)
                    .map_err(|e| dra_error(source_name, e))?;
                ApiObject::ResourceClaimTemplate(t)
            }
            ObjectKind::LimitRange => {
                let lr: LimitRange = decode(source_name, v)?;
                validate_limit_range(&lr).map_err(|(path, message)| field(&path, message))?;
                ApiObject::LimitRange(lr)
            }
            ObjectKind::ResourceQuota => {
                let rq: ResourceQuota = decode(source_name, v)?;
                crate::admission::check_quota(&rq)
                    .map_err(|(path, message)| field(&path, message))?;
                ApiObject::ResourceQuota(rq)
            }
        };
        let mut obj = obj;
        obj.set_type_meta();
        if obj.name().is_empty() && obj.metadata().generate_name.is_empty() {
            return Err(field("metadata.name", format!("a {kind} needs a name")));
        }
        Ok(obj)
    }

    /// The object's Kubernetes JSON, with `apiVersion` and `kind` set.
    pub fn to_value(&self) -> Value {
        // These types hold only string-keyed maps and no floats, so serialising cannot fail;
        // the fallback is never taken.
        let v = match self {
            ApiObject::PersistentVolume(o) => serde_json::to_value(o),
            ApiObject::PersistentVolumeClaim(o) => serde_json::to_value(o),
            ApiObject::StorageClass(o) => serde_json::to_value(o),
            ApiObject::CsiNode(o) => serde_json::to_value(o),
            ApiObject::CsiDriver(o) => serde_json::to_value(o),
            ApiObject::CsiStorageCapacity(o) => serde_json::to_value(o),
            ApiObject::VolumeAttachment(o) => serde_json::to_value(o),
            ApiObject::PodDisruptionBudget(o) => serde_json::to_value(o),
            ApiObject::Service(o) => serde_json::to_value(o),
            ApiObject::Deployment(o)
            | ApiObject::ReplicaSet(o)
            | ApiObject::StatefulSet(o)
            | ApiObject::DaemonSet(o)
            | ApiObject::Job(o)
            | ApiObject::CronJob(o) => serde_json::to_value(o),
            ApiObject::PriorityClass(o) => serde_json::to_value(o),
            ApiObject::DeviceClass(o) => serde_json::to_value(o),
            ApiObject::ResourceSlice(o) => serde_json::to_value(o),
            ApiObject::ResourceClaim(o) => serde_json::to_value(o),
            ApiObject::ResourceClaimTemplate(o) => serde_json::to_value(o),
            ApiObject::LimitRange(o) => serde_json::to_value(o),
            ApiObject::ResourceQuota(o) => serde_json::to_value(o),
        };
        let mut m = match v {
            Ok(Value::Object(m)) => m,
            _ => serde_json::Map::new(),
        };
        let k = self.kind();
        m.insert("apiVersion".into(), Value::String(k.api_version().into()));
        m.insert("kind".into(), Value::String(k.as_str().into()));
        Value::Object(m)
    }
}

impl Serialize for ApiObject {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.to_value().serialize(s)
    }
}

impl<'de> Deserialize<'de> for ApiObject {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        ApiObject::from_value("", &v).map_err(|e| match e {
            LoadError::Field { path, message, .. } => {
                serde::de::Error::custom(format!("{path}: {message}"))
            }
            other => serde::de::Error::custom(other.to_string()),
        })
    }
}

/// A DRA validation failure as a [`LoadError`]: the first field error's path, all of them in
/// the message.
fn dra_error(source_name: &str, e: crate::validation::FieldErrors) -> LoadError {
    let path = e.0.first().map(|f| f.field.clone()).unwrap_or_default();
    LoadError::Field {
        source_name: source_name.to_string(),
        path,
        message: e.to_string(),
    }
}

/// Upstream's `HighestUserDefinablePriority`: a PriorityClass not named `system-` may not be
/// higher.
pub const HIGHEST_USER_DEFINABLE_PRIORITY: i32 = 1_000_000_000;

/// What the API server's PriorityClass validation refuses: a name with the reserved `system-`
/// prefix (the built-ins exist already), a value above [`HIGHEST_USER_DEFINABLE_PRIORITY`], a
/// `preemptionPolicy` other than `PreemptLowerPriority` / `Never`.
fn validate_priority_class(pc: &PriorityClass) -> Result<(), (&'static str, String)> {
    if pc.metadata.name.starts_with("system-") {
        return Err((
            "metadata.name",
            format!(
                "{:?}: the prefix \"system-\" is reserved for the built-in classes",
                pc.metadata.name
            ),
        ));
    }
    if pc.value > HIGHEST_USER_DEFINABLE_PRIORITY {
        return Err((
            "value",
            format!(
                "must be no more than {HIGHEST_USER_DEFINABLE_PRIORITY}, got {}",
                pc.value
            ),
        ));
    }
    match pc.preemption_policy.as_deref() {
        None | Some("PreemptLowerPriority") | Some("Never") => Ok(()),
        Some(p) => Err((
            "preemptionPolicy",
            format!("{p:?} is not PreemptLowerPriority or Never"),
        )),
    }
}

/// What the API server's `ValidateLimitRange` refuses in the parts ksim reads: an item type
/// other than `Container`, `Pod`, `PersistentVolumeClaim`; a `Pod` item with `default` or
/// `defaultRequest`; `min` above `max`, a `defaultRequest` or `default` outside `[min, max]`,
/// a `defaultRequest` above `default`; a `maxLimitRequestRatio` below 1.
fn validate_limit_range(lr: &LimitRange) -> Result<(), (String, String)> {
    for (i, item) in lr.spec.limits.iter().enumerate() {
        let at = |f: &str| format!("spec.limits[{i}].{f}");
        match item.type_.as_str() {
            "Container" | "Pod" | "PersistentVolumeClaim" => {}
            t => {
                return Err((
                    at("type"),
                    format!("Unsupported value: {t:?}: supported values: \"Container\", \"PersistentVolumeClaim\", \"Pod\""),
                ))
            }
        }
        if item.type_ == "Pod" {
            for (f, l) in [
                ("default", &item.default),
                ("defaultRequest", &item.default_request),
            ] {
                if let Some((k, _)) = l.iter().next() {
                    return Err((
                        format!("{}[{k}]", at(f)),
                        "Forbidden: may not be specified when `type` is 'Pod'".into(),
                    ));
                }
            }
        }
        for (k, max) in &item.max {
            if let Some(min) = item.min.get(k) {
                if min.milli_value() > max.milli_value() {
                    return Err((
                        format!("{}[{k}]", at("min")),
                        format!(
                            "Invalid value: {:?}: min value {} is greater than max value {}",
                            min.as_str(),
                            min,
                            max
                        ),
                    ));
                }
            }
        }
        for (k, dr) in &item.default_request {
            if let Some(d) = item.default.get(k) {
                if dr.milli_value() > d.milli_value() {
                    return Err((
                        format!("{}[{k}]", at("defaultRequest")),
                        format!("Invalid value: {:?}: default request value {} is greater than default limit value {}", dr.as_str(), dr, d),
                    ));
                }
            }
        }
        for (f, l) in [
            ("default", &item.default),
            ("defaultRequest", &item.default_request),
        ] {
            for (k, v) in l {
                if let Some(max) = item
                    .max
                    .get(k)
                    .filter(|m| v.milli_value() > m.milli_value())
                {
                    return Err((
                        format!("{}[{k}]", at(f)),
                        format!(
                            "Invalid value: {:?}: {f} value {v} is greater than max value {max}",
                            v.as_str()
                        ),
                    ));
                }
                if let Some(min) = item
                    .min
                    .get(k)
                    .filter(|m| v.milli_value() < m.milli_value())
                {
                    return Err((
                        format!("{}[{k}]", at(f)),
                        format!(
                            "Invalid value: {:?}: min value {min} is greater than {f} value {v}",
                            v.as_str()
                        ),
                    ));
                }
            }
        }
        for (k, r) in &item.max_limit_request_ratio {
            if r.milli_value() < 1000 {
                return Err((
                    format!("{}[{k}]", at("maxLimitRequestRatio")),
                    format!("Invalid value: {:?}: ratio {r} is less than 1", r.as_str()),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_defaults_and_round_trips() {
        let v: Value = serde_json::from_str(
            r#"{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"data"},
            "spec":{"storageClassName":"local","resources":{"requests":{"storage":"1Gi"}}}}"#,
        )
        .unwrap();
        let mut o = ApiObject::from_value("x", &v).unwrap();
        o.apply_defaults();
        assert_eq!(o.kind(), ObjectKind::PersistentVolumeClaim);
        assert_eq!(o.key(), "default/data");
        let ApiObject::PersistentVolumeClaim(pvc) = &o else {
            panic!("{o:?}")
        };
        assert_eq!(pvc.status.phase, "Pending");
        let back: ApiObject = serde_json::from_value(o.to_value()).unwrap();
        assert_eq!(back, o);
        assert_eq!(o.to_value()["kind"], "PersistentVolumeClaim");

        let sc: Value = serde_json::from_str(
            r#"{"kind":"StorageClass","metadata":{"name":"s","namespace":"x"},"provisioner":"p"}"#,
        )
        .unwrap();
        let mut sc = ApiObject::from_value("x", &sc).unwrap();
        sc.apply_defaults();
        assert_eq!(sc.key(), "s");
        assert_eq!(sc.namespace(), "");
        assert_eq!(sc.to_value()["apiVersion"], "storage.k8s.io/v1");
    }

    #[test]
    fn errors_name_the_field() {
        let cases = [
            (r#"{"metadata":{"name":"a"}}"#, "x: kind: required"),
            (
                r#"{"kind":"Pod","metadata":{"name":"a"}}"#,
                "x: kind: unknown object kind \"Pod\"",
            ),
            (
                r#"{"kind":"CSINode","metadata":{}}"#,
                "x: metadata.name: a CSINode needs a name",
            ),
            (
                r#"{"kind":"PersistentVolume","metadata":{"name":"a"},"spec":{"capacity":{"storage":"lots"}}}"#,
                "x: spec.capacity.storage:",
            ),
        ];
        for (json, want) in cases {
            let v: Value = serde_json::from_str(json).unwrap();
            let err = ApiObject::from_value("x", &v).unwrap_err().to_string();
            assert!(err.starts_with(want), "{json}\n got {err}\nwant {want}");
        }
        assert_eq!(
            serde_json::from_str::<ObjectKind>("\"CSIDriver\"").unwrap(),
            ObjectKind::CsiDriver
        );
        assert!(serde_json::from_str::<ObjectKind>("\"Pod\"").is_err());
    }
}
