//! What happens to claims after VolumeBinding's PreBind, outside kube-scheduler: the PV
//! controller completes static bindings, and an external provisioner creates a PV for a claim
//! annotated `volume.kubernetes.io/selected-node`.
//!
//! These are simplified stand-ins for `pkg/controller/volume/persistentvolume`
//! (`bindVolumeToClaim` / `bindClaimToVolume`) and the CSI external-provisioner, for a
//! simulator that wants later pods to see bound claims. The scheduler itself never calls them.

use std::sync::Arc;

use ksim_api::storage::{
    CsiPersistentVolumeSource, ObjectReference, PersistentVolume, PersistentVolumeClaim,
    VolumeNodeAffinity, ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER,
};
use ksim_api::{Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, ResourceList};

use crate::node_info::StorageObjects;

/// `pv.kubernetes.io/provisioned-by`: set on dynamically provisioned PVs.
pub const ANN_PROVISIONED_BY: &str = "pv.kubernetes.io/provisioned-by";

/// Why a controller step could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ControllerError {
    #[error("persistentvolumeclaim {0:?} not found")]
    ClaimNotFound(String),
    #[error("persistentvolume {0:?} not found")]
    VolumeNotFound(String),
    #[error("persistentvolume {0:?} already exists")]
    VolumeExists(String),
    #[error("persistentvolume {pv:?} is bound to another claim")]
    VolumeTaken { pv: String },
    #[error("claim {0:?} has no storage class that can provision")]
    NoProvisioner(String),
}

fn claim_ref(pvc: &PersistentVolumeClaim) -> ObjectReference {
    ObjectReference {
        kind: "PersistentVolumeClaim".into(),
        namespace: pvc.metadata.namespace.clone(),
        name: pvc.metadata.name.clone(),
        uid: pvc.metadata.uid.clone(),
        api_version: "v1".into(),
        resource_version: String::new(),
    }
}

/// Completes the binding of a claim (`namespace/name`) to a PV, as the PV controller does once
/// it sees the PV's `claimRef`: the PV becomes `Bound`, the claim gets `spec.volumeName`, the
/// bind-completed annotation, phase `Bound` and the PV's access modes and capacity.
pub fn bind_claim(
    objects: &mut StorageObjects,
    pvc_key: &str,
    pv_name: &str,
) -> Result<(), ControllerError> {
    let pvc = objects
        .persistent_volume_claims
        .get(pvc_key)
        .ok_or_else(|| ControllerError::ClaimNotFound(pvc_key.to_string()))?
        .clone();
    let pv = objects
        .persistent_volumes
        .get(pv_name)
        .ok_or_else(|| ControllerError::VolumeNotFound(pv_name.to_string()))?
        .clone();
    if let Some(r) = &pv.spec.claim_ref {
        let same = r.name == pvc.metadata.name
            && r.namespace == pvc.metadata.namespace
            && (r.uid.is_empty() || r.uid == pvc.metadata.uid);
        if !same {
            return Err(ControllerError::VolumeTaken {
                pv: pv_name.to_string(),
            });
        }
    }
    let mut new_pv = (*pv).clone();
    if new_pv
        .spec
        .claim_ref
        .as_ref()
        .is_none_or(|r| r.uid != pvc.metadata.uid)
    {
        if new_pv.spec.claim_ref.is_none() {
            new_pv
                .metadata
                .annotations
                .insert(ANN_BOUND_BY_CONTROLLER.into(), "yes".into());
        }
        new_pv.spec.claim_ref = Some(claim_ref(&pvc));
    }
    new_pv.status.phase = "Bound".into();

    let mut new_pvc = (*pvc).clone();
    if new_pvc.spec.volume_name.is_empty() {
        new_pvc
            .metadata
            .annotations
            .insert(ANN_BOUND_BY_CONTROLLER.into(), "yes".into());
        new_pvc.spec.volume_name = pv_name.to_string();
    }
    new_pvc
        .metadata
        .annotations
        .insert(ANN_BIND_COMPLETED.into(), "yes".into());
    new_pvc.status.phase = "Bound".into();
    new_pvc.status.access_modes = new_pv.spec.access_modes.clone();
    new_pvc.status.capacity = new_pv.spec.capacity.clone();

    objects
        .persistent_volumes
        .insert(pv_name.to_string(), Arc::new(new_pv));
    objects
        .persistent_volume_claims
        .insert(pvc_key.to_string(), Arc::new(new_pvc));
    Ok(())
}

/// Provisions a PV for a claim on `node` and binds it, as a CSI external-provisioner followed
/// by the PV controller would: the PV is named `pvc-<claim uid>`, has the claim's request as
/// capacity, its access modes, class and volume mode, a CSI source of the class' provisioner,
/// and node affinity on the driver's topology keys (from the node's CSINode) with the node's
/// values. Returns the new PV's name.
pub fn provision_claim(
    objects: &mut StorageObjects,
    pvc_key: &str,
    node: &Node,
) -> Result<String, ControllerError> {
    let pvc = objects
        .persistent_volume_claims
        .get(pvc_key)
        .ok_or_else(|| ControllerError::ClaimNotFound(pvc_key.to_string()))?
        .clone();
    let sc = objects
        .storage_classes
        .get(pvc.class())
        .filter(|sc| {
            !sc.provisioner.is_empty()
                && sc.provisioner != ksim_api::storage::NOT_SUPPORTED_PROVISIONER
        })
        .ok_or_else(|| ControllerError::NoProvisioner(pvc_key.to_string()))?
        .clone();
    let pv_name = format!("pvc-{}", pvc.metadata.uid);
    if objects.persistent_volumes.contains_key(&pv_name) {
        return Err(ControllerError::VolumeExists(pv_name));
    }
    let mut capacity = ResourceList::new();
    if let Some(q) = pvc.storage_request() {
        capacity.insert("storage".into(), q.clone());
    }
    let topology_keys: Vec<&String> = objects
        .csi_nodes
        .get(&node.metadata.name)
        .and_then(|n| n.spec.drivers.iter().find(|d| d.name == sc.provisioner))
        .map(|d| d.topology_keys.iter().collect())
        .unwrap_or_default();
    let exprs: Vec<NodeSelectorRequirement> = topology_keys
        .into_iter()
        .filter_map(|k| {
            node.metadata
                .labels
                .get(k)
                .map(|v| NodeSelectorRequirement {
                    key: k.clone(),
                    operator: "In".into(),
                    values: vec![v.clone()],
                })
        })
        .collect();
    let mut pv = PersistentVolume::default();
    pv.metadata.name = pv_name.clone();
    pv.metadata
        .annotations
        .insert(ANN_PROVISIONED_BY.into(), sc.provisioner.clone());
    pv.spec.capacity = capacity;
    pv.spec.access_modes = pvc.spec.access_modes.clone();
    pv.spec.storage_class_name = sc.metadata.name.clone();
    pv.spec.volume_mode = Some(pvc.volume_mode().to_string());
    pv.spec.persistent_volume_reclaim_policy =
        sc.reclaim_policy.clone().unwrap_or_else(|| "Delete".into());
    pv.spec.claim_ref = Some(claim_ref(&pvc));
    pv.spec.csi = Some(CsiPersistentVolumeSource {
        driver: sc.provisioner.clone(),
        volume_handle: pv_name.clone(),
        ..Default::default()
    });
    if !exprs.is_empty() {
        pv.spec.node_affinity = Some(VolumeNodeAffinity {
            required: Some(NodeSelector {
                node_selector_terms: vec![NodeSelectorTerm {
                    match_expressions: exprs,
                    match_fields: Vec::new(),
                }],
            }),
        });
    }
    pv.status.phase = "Bound".into();
    objects
        .persistent_volumes
        .insert(pv_name.clone(), Arc::new(pv));
    bind_claim(objects, pvc_key, &pv_name)?;
    Ok(pv_name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ksim_api::storage::{CsiNode, StorageClass};

    fn objects() -> StorageObjects {
        let mut o = StorageObjects::default();
        let pvc: PersistentVolumeClaim = serde_json::from_str(
            r#"{"metadata":{"name":"data","namespace":"default","uid":"u1"},
            "spec":{"accessModes":["ReadWriteOnce"],"storageClassName":"fast",
            "resources":{"requests":{"storage":"5Gi"}}}}"#,
        )
        .unwrap();
        o.persistent_volume_claims
            .insert("default/data".into(), Arc::new(pvc));
        let sc: StorageClass =
            serde_json::from_str(r#"{"metadata":{"name":"fast"},"provisioner":"csi.example.com"}"#)
                .unwrap();
        o.storage_classes.insert("fast".into(), Arc::new(sc));
        let pv: PersistentVolume = serde_json::from_str(
            r#"{"metadata":{"name":"pv1"},"spec":{"capacity":{"storage":"10Gi"},
            "accessModes":["ReadWriteOnce"],"storageClassName":"fast",
            "claimRef":{"namespace":"default","name":"data","uid":"u1"}},"status":{"phase":"Available"}}"#,
        )
        .unwrap();
        o.persistent_volumes.insert("pv1".into(), Arc::new(pv));
        o
    }

    #[test]
    fn bind_completes_claim() {
        let mut o = objects();
        bind_claim(&mut o, "default/data", "pv1").unwrap();
        let pvc = &o.persistent_volume_claims["default/data"];
        assert!(pvc.is_fully_bound());
        assert_eq!(pvc.spec.volume_name, "pv1");
        assert_eq!(o.persistent_volumes["pv1"].status.phase, "Bound");
    }

    #[test]
    fn provision_creates_pv_with_topology() {
        let mut o = objects();
        let csi: CsiNode = serde_json::from_str(
            r#"{"metadata":{"name":"n1"},"spec":{"drivers":[{"name":"csi.example.com",
            "topologyKeys":["topology.kubernetes.io/zone"]}]}}"#,
        )
        .unwrap();
        o.csi_nodes.insert("n1".into(), Arc::new(csi));
        let node: Node = serde_json::from_str(
            r#"{"metadata":{"name":"n1","labels":{"topology.kubernetes.io/zone":"a"}}}"#,
        )
        .unwrap();
        let name = provision_claim(&mut o, "default/data", &node).unwrap();
        assert_eq!(name, "pvc-u1");
        let pv = &o.persistent_volumes["pvc-u1"];
        assert_eq!(pv.spec.csi.as_ref().unwrap().driver, "csi.example.com");
        assert_eq!(pv.storage_capacity().value(), 5 << 30);
        let req = &pv
            .spec
            .node_affinity
            .as_ref()
            .unwrap()
            .required
            .as_ref()
            .unwrap()
            .node_selector_terms[0]
            .match_expressions[0];
        assert_eq!(req.values, vec!["a".to_string()]);
        assert!(o.persistent_volume_claims["default/data"].is_fully_bound());
    }
}
