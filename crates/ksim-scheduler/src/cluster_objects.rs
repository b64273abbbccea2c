//! The cluster objects plugins read through listers besides nodes and pods (namespaces,
//! services, workload selectors, PDBs, storage and DRA objects), kept beside the
//! [`Snapshot`](crate::node_info::Snapshot) and updated by the engine as objects change.

use std::collections::BTreeMap;
use std::sync::Arc;

use ksim_api::object::{ApiObject, ObjectKind};
use ksim_api::{
    Labels, Namespace, PodDisruptionBudget, ReplicationController, Service, WorkloadSet,
};

use crate::node_info::namespace_or_default;

/// The non-node objects plugins read through listers.
#[derive(Debug, Clone, Default)]
pub struct ClusterObjects {
    pub namespaces: BTreeMap<String, Namespace>,
    pub services: Vec<Service>,
    pub replication_controllers: Vec<ReplicationController>,
    pub replica_sets: Vec<WorkloadSet>,
    pub stateful_sets: Vec<WorkloadSet>,
    pub pdbs: Vec<PodDisruptionBudget>,
    /// Storage objects read by the volume plugins, keyed for lookup and iterated in key order.
    pub storage: StorageObjects,
    /// DRA objects read by `DynamicResources` (see [`DraObjects`]).
    pub dra: DraObjects,
}

/// The `resource.k8s.io/v1` objects `DynamicResources` reads through its listers, ordered by
/// name (`namespace/name` for claims and templates), behind `Arc` as the storage objects.
///
/// The maps are persistent (`imbl::OrdMap`): copying the cluster objects, which every claim
/// write does while a cycle or the plugin still holds the previous copy, shares their nodes
/// instead of copying thousands of entries, and `DynamicResources` diffs the claims it saw last
/// against the current ones by visiting only the nodes that differ.
#[derive(Debug, Clone, Default)]
pub struct DraObjects {
    pub device_classes: DraMap<ksim_api::resource::DeviceClass>,
    pub resource_slices: DraMap<ksim_api::resource::ResourceSlice>,
    pub resource_claims: DraMap<ksim_api::resource::ResourceClaim>,
    pub resource_claim_templates: DraMap<ksim_api::resource::ResourceClaimTemplate>,
}

/// A DRA object map: name (or `namespace/name`) to the object.
pub type DraMap<T> = imbl::OrdMap<String, Arc<T>>;

impl DraObjects {
    /// Whether the run has no DRA object at all.
    pub fn is_empty(&self) -> bool {
        self.device_classes.is_empty()
            && self.resource_slices.is_empty()
            && self.resource_claims.is_empty()
            && self.resource_claim_templates.is_empty()
    }
}

/// The storage objects the volume plugins read through listers (see [`crate::volume`]).
///
/// Every collection is ordered (by name, or `namespace/name` for namespaced objects) so that
/// iteration never depends on hashing. Objects are behind `Arc` because a scheduling cycle
/// keeps references to them in its `CycleState`.
#[derive(Debug, Clone, Default)]
pub struct StorageObjects {
    /// PersistentVolumes by name.
    pub persistent_volumes: BTreeMap<String, Arc<ksim_api::storage::PersistentVolume>>,
    /// PersistentVolumeClaims by `namespace/name`.
    pub persistent_volume_claims: BTreeMap<String, Arc<ksim_api::storage::PersistentVolumeClaim>>,
    /// StorageClasses by name.
    pub storage_classes: BTreeMap<String, Arc<ksim_api::storage::StorageClass>>,
    /// CSINodes by name (the node's name).
    pub csi_nodes: BTreeMap<String, Arc<ksim_api::storage::CsiNode>>,
    /// CSIDrivers by name.
    pub csi_drivers: BTreeMap<String, Arc<ksim_api::storage::CsiDriver>>,
    /// CSIStorageCapacities by `namespace/name`.
    pub csi_storage_capacities: BTreeMap<String, Arc<ksim_api::storage::CsiStorageCapacity>>,
    /// VolumeAttachments by name.
    pub volume_attachments: BTreeMap<String, Arc<ksim_api::storage::VolumeAttachment>>,
}

impl ClusterObjects {
    /// Labels of a namespace. A namespace that is not listed exists (upstream's
    /// NamespaceLifecycle admits no pod into a namespace that does not) with the one label the
    /// API server gives every namespace, `kubernetes.io/metadata.name=<name>` (GA since v1.22;
    /// listed namespaces get it when they are read: [`ksim_api::defaults::default_namespace`]).
    pub fn namespace_labels(&self, ns: &str) -> std::borrow::Cow<'_, Labels> {
        match self.namespaces.get(ns) {
            Some(n) => std::borrow::Cow::Borrowed(&n.metadata.labels),
            None => {
                let mut l = Labels::new();
                l.insert(
                    ksim_api::defaults::NAMESPACE_NAME_LABEL.to_string(),
                    ns.to_string(),
                );
                std::borrow::Cow::Owned(l)
            }
        }
    }

    /// The stored object of `kind` named `namespace/name` (`namespace` is ignored for
    /// cluster-scoped kinds), as an [`ApiObject`].
    pub fn get_object(&self, kind: ObjectKind, namespace: &str, name: &str) -> Option<ApiObject> {
        let key = kind.key(namespace, name);
        let st = &self.storage;
        Some(match kind {
            ObjectKind::PersistentVolume => {
                ApiObject::PersistentVolume((**st.persistent_volumes.get(&key)?).clone())
            }
            ObjectKind::PersistentVolumeClaim => {
                ApiObject::PersistentVolumeClaim((**st.persistent_volume_claims.get(&key)?).clone())
            }
            ObjectKind::StorageClass => {
                ApiObject::StorageClass((**st.storage_classes.get(&key)?).clone())
            }
            ObjectKind::CsiNode => ApiObject::CsiNode((**st.csi_nodes.get(&key)?).clone()),
            ObjectKind::CsiDriver => ApiObject::CsiDriver((**st.csi_drivers.get(&key)?).clone()),
            ObjectKind::CsiStorageCapacity => {
                ApiObject::CsiStorageCapacity((**st.csi_storage_capacities.get(&key)?).clone())
            }
            ObjectKind::VolumeAttachment => {
                ApiObject::VolumeAttachment((**st.volume_attachments.get(&key)?).clone())
            }
            ObjectKind::PodDisruptionBudget => ApiObject::PodDisruptionBudget(
                self.pdbs
                    .iter()
                    .find(|p| p.metadata.namespace == namespace && p.metadata.name == name)?
                    .clone(),
            ),
            ObjectKind::Service => ApiObject::Service(
                self.services
                    .iter()
                    .find(|p| p.metadata.namespace == namespace && p.metadata.name == name)?
                    .clone(),
            ),
            ObjectKind::DeviceClass => {
                ApiObject::DeviceClass((**self.dra.device_classes.get(&key)?).clone())
            }
            ObjectKind::ResourceSlice => {
                ApiObject::ResourceSlice((**self.dra.resource_slices.get(&key)?).clone())
            }
            ObjectKind::ResourceClaim => {
                ApiObject::ResourceClaim((**self.dra.resource_claims.get(&key)?).clone())
            }
            ObjectKind::ResourceClaimTemplate => ApiObject::ResourceClaimTemplate(
                (**self.dra.resource_claim_templates.get(&key)?).clone(),
            ),
            // Workloads live in the engine's controllers, PriorityClasses in its admission,
            // not in the scheduler's cache.
            ObjectKind::Deployment
            | ObjectKind::ReplicaSet
            | ObjectKind::StatefulSet
            | ObjectKind::DaemonSet
            | ObjectKind::Job
            | ObjectKind::CronJob
            | ObjectKind::PriorityClass
            | ObjectKind::LimitRange
            | ObjectKind::ResourceQuota => return None,
        })
    }

    /// Stores an object (already defaulted), replacing the one with the same kind and key;
    /// returns the replaced one. PDBs and Services keep their list position when replaced and
    /// are appended when new.
    pub fn put_object(&mut self, obj: ApiObject) -> Option<ApiObject> {
        let old = self.get_object(obj.kind(), obj.namespace(), obj.name());
        let key = obj.key();
        let st = &mut self.storage;
        match obj {
            ApiObject::PersistentVolume(o) => {
                st.persistent_volumes.insert(key, Arc::new(o));
            }
            ApiObject::PersistentVolumeClaim(o) => {
                st.persistent_volume_claims.insert(key, Arc::new(o));
            }
            ApiObject::StorageClass(o) => {
                st.storage_classes.insert(key, Arc::new(o));
            }
            ApiObject::CsiNode(o) => {
                st.csi_nodes.insert(key, Arc::new(o));
            }
            ApiObject::CsiDriver(o) => {
                st.csi_drivers.insert(key, Arc::new(o));
            }
            ApiObject::CsiStorageCapacity(o) => {
                st.csi_storage_capacities.insert(key, Arc::new(o));
            }
            ApiObject::VolumeAttachment(o) => {
                st.volume_attachments.insert(key, Arc::new(o));
            }
            ApiObject::PodDisruptionBudget(o) => {
                let same = |p: &PodDisruptionBudget| {
                    p.metadata.namespace == o.metadata.namespace
                        && p.metadata.name == o.metadata.name
                };
                match self.pdbs.iter_mut().find(|p| same(p)) {
                    Some(p) => *p = o,
                    None => self.pdbs.push(o),
                }
            }
            ApiObject::Service(o) => {
                let same = |p: &Service| {
                    p.metadata.namespace == o.metadata.namespace
                        && p.metadata.name == o.metadata.name
                };
                match self.services.iter_mut().find(|p| same(p)) {
                    Some(p) => *p = o,
                    None => self.services.push(o),
                }
            }
            ApiObject::DeviceClass(o) => {
                self.dra.device_classes.insert(key, Arc::new(o));
            }
            ApiObject::ResourceSlice(o) => {
                self.dra.resource_slices.insert(key, Arc::new(o));
            }
            ApiObject::ResourceClaim(o) => {
                self.dra.resource_claims.insert(key, Arc::new(o));
            }
            ApiObject::ResourceClaimTemplate(o) => {
                self.dra.resource_claim_templates.insert(key, Arc::new(o));
            }
            // Workloads live in the engine's controllers, PriorityClasses in its admission.
            ApiObject::Deployment(_)
            | ApiObject::ReplicaSet(_)
            | ApiObject::StatefulSet(_)
            | ApiObject::DaemonSet(_)
            | ApiObject::Job(_)
            | ApiObject::CronJob(_)
            | ApiObject::PriorityClass(_)
            | ApiObject::LimitRange(_)
            | ApiObject::ResourceQuota(_) => {}
        }
        old
    }

    /// Lists a ReplicaSet (`stateful` false) or StatefulSet for the listers that
    /// PodTopologySpread's `DefaultSelector` reads, replacing one with the same namespace and
    /// name. The engine calls it for the sets its controllers create while the run goes (a
    /// Deployment's ReplicaSets, a `CreateObject`), as the API server's informers would list them.
    pub fn put_workload_set(&mut self, stateful: bool, set: WorkloadSet) {
        let list = if stateful {
            &mut self.stateful_sets
        } else {
            &mut self.replica_sets
        };
        let same = |w: &WorkloadSet| {
            namespace_or_default(&w.metadata.namespace)
                == namespace_or_default(&set.metadata.namespace)
                && w.metadata.name == set.metadata.name
        };
        match list.iter_mut().find(|w| same(w)) {
            Some(w) => *w = set,
            None => list.push(set),
        }
    }

    /// Removes a ReplicaSet (`stateful` false) or StatefulSet from the listers.
    pub fn remove_workload_set(&mut self, stateful: bool, namespace: &str, name: &str) {
        let list = if stateful {
            &mut self.stateful_sets
        } else {
            &mut self.replica_sets
        };
        list.retain(|w| {
            !(namespace_or_default(&w.metadata.namespace) == namespace_or_default(namespace)
                && w.metadata.name == name)
        });
    }

    /// Deletes an object; returns it, or `None` when there was none.
    pub fn delete_object(
        &mut self,
        kind: ObjectKind,
        namespace: &str,
        name: &str,
    ) -> Option<ApiObject> {
        let old = self.get_object(kind, namespace, name)?;
        let key = kind.key(namespace, name);
        let st = &mut self.storage;
        match kind {
            ObjectKind::PersistentVolume => {
                st.persistent_volumes.remove(&key);
            }
            ObjectKind::PersistentVolumeClaim => {
                st.persistent_volume_claims.remove(&key);
            }
            ObjectKind::StorageClass => {
                st.storage_classes.remove(&key);
            }
            ObjectKind::CsiNode => {
                st.csi_nodes.remove(&key);
            }
            ObjectKind::CsiDriver => {
                st.csi_drivers.remove(&key);
            }
            ObjectKind::CsiStorageCapacity => {
                st.csi_storage_capacities.remove(&key);
            }
            ObjectKind::VolumeAttachment => {
                st.volume_attachments.remove(&key);
            }
            ObjectKind::PodDisruptionBudget => self
                .pdbs
                .retain(|p| !(p.metadata.namespace == namespace && p.metadata.name == name)),
            ObjectKind::Service => self
                .services
                .retain(|p| !(p.metadata.namespace == namespace && p.metadata.name == name)),
            ObjectKind::DeviceClass => {
                self.dra.device_classes.remove(&key);
            }
            ObjectKind::ResourceSlice => {
                self.dra.resource_slices.remove(&key);
            }
            ObjectKind::ResourceClaim => {
                self.dra.resource_claims.remove(&key);
            }
            ObjectKind::ResourceClaimTemplate => {
                self.dra.resource_claim_templates.remove(&key);
            }
            ObjectKind::Deployment
            | ObjectKind::ReplicaSet
            | ObjectKind::StatefulSet
            | ObjectKind::DaemonSet
            | ObjectKind::Job
            | ObjectKind::CronJob
            | ObjectKind::PriorityClass
            | ObjectKind::LimitRange
            | ObjectKind::ResourceQuota => {}
        }
        Some(old)
    }
}
