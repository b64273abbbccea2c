//! Volume scheduling: the state and logic behind the four volume plugins
//! (`VolumeBinding`, `VolumeRestrictions`, `VolumeZone`, `NodeVolumeLimits`).
//!
//! Mirrors upstream `pkg/scheduler/framework/plugins/volumebinding` (binder.go, the PV/PVC
//! assume caches), `component-helpers/storage/volume` (claim/PV matching, `CheckNodeAffinity`)
//! and the parts of `csi-translation-lib` that scheduling reads.
//!
//! - [`affinity`]: a PV's required node affinity and a StorageClass' `allowedTopologies`.
//! - [`translate`]: in-tree (GCE PD, AWS EBS) → CSI translation.
//! - [`binder`]: the [`binder::AssumeCache`] and the binder steps VolumeBinding runs at
//!   PreFilter (`GetPodVolumeClaims`), Filter (`FindPodVolumes`) and Reserve
//!   (`AssumePodVolumes`), and the [`binder::VolumeBindingDecision`] that Reserve records.
//! - [`controller`]: what happens after PreBind outside the scheduler (the PV controller and an
//!   external provisioner), for a simulator that wants later pods to see the result.
//!
//! ## How the engine applies volume bindings
//!
//! The storage objects live in [`crate::node_info::StorageObjects`] (inside the snapshot's
//! `ClusterObjects`). The scheduler never edits them; it reports what the API writes would be:
//!
//! 1. **Reserve.** `VolumeBinding` picks, for the chosen node, the static PVs to bind and the
//!    claims to provision, records them in the [`binder::AssumeCache`] it owns (so the next
//!    cycles already see the PV as taken and the claim as provisioning on that node) and
//!    writes a [`binder::VolumeBindingDecision`] into the `CycleState`. Read it with
//!    [`crate::plugins::volume_binding::decision`].
//! 2. **PreBind** succeeds at once (upstream issues the writes and polls until the PV controller
//!    has bound every claim; in ksim the engine models that wait: the pod's binding completes
//!    only once its claims are bound, see `ksim-engine`'s `sim/volumes.rs`). The engine applies
//!    [`binder::VolumeBindingDecision::apply_prebind`] to its `StorageObjects`: each static PV
//!    gets `spec.claimRef` (and `pv.kubernetes.io/bound-by-controller` unless it was pre-bound),
//!    each provisioned claim gets `volume.kubernetes.io/selected-node`. Once the API objects
//!    changed, the assumed copies are no longer used (an assumed object is only used while the
//!    API object it was derived from is unchanged, as upstream's assume cache drops an assumed
//!    object when a newer API version arrives).
//! 3. **PV controller / provisioner** (after whatever delay the engine models):
//!    [`controller::bind_claim`] completes a static binding (`spec.volumeName`, the
//!    bind-completed annotation, phases `Bound`) and [`controller::provision_claim`] creates a
//!    PV for a provisioned claim and binds it. Only then do later pods see the claim as bound.
//! 4. **Unreserve** (a later plugin failed, or binding failed) restores the assumed objects.
//!
//! Deliberate differences: the unbound-claim volume handle NodeVolumeLimits uses is a fixed
//! prefix instead of a random one (it only has to differ from real handles); only GCE PD and
//! AWS EBS in-tree sources are modelled for CSI translation.

pub mod affinity;
pub mod binder;
pub mod controller;
pub mod translate;

use std::borrow::Cow;

use ksim_api::storage::PersistentVolumeClaim;
use ksim_api::{Pod, Volume};

/// A pod volume that refers to a PersistentVolumeClaim, directly or through a generic
/// ephemeral volume.
#[derive(Debug, Clone)]
pub struct PodClaim<'a> {
    pub volume: &'a Volume,
    /// The claim's name in the pod's namespace.
    pub claim_name: Cow<'a, str>,
    /// A generic ephemeral volume: the claim is `<pod>-<volume>` and must be owned by the pod.
    pub ephemeral: bool,
}

/// The pod's claim references in volume order (`persistentVolumeClaim` and `ephemeral`).
pub fn pod_claims(pod: &Pod) -> impl Iterator<Item = PodClaim<'_>> {
    pod.spec.volumes.iter().filter_map(move |v| {
        if let Some(c) = &v.persistent_volume_claim {
            Some(PodClaim {
                volume: v,
                claim_name: Cow::Borrowed(c.claim_name.as_str()),
                ephemeral: false,
            })
        } else if v.ephemeral.is_some() {
            Some(PodClaim {
                volume: v,
                claim_name: Cow::Owned(ephemeral_claim_name(pod, v)),
                ephemeral: true,
            })
        } else {
            None
        }
    })
}

/// `ephemeral.VolumeClaimName`: `<pod name>-<volume name>`.
pub fn ephemeral_claim_name(pod: &Pod, vol: &Volume) -> String {
    format!("{}-{}", pod.metadata.name, vol.name)
}

/// `ephemeral.VolumeIsForPod`: the claim must be in the pod's namespace and controlled by it.
pub fn volume_is_for_pod(pod: &Pod, pvc: &PersistentVolumeClaim) -> Result<(), String> {
    let controlled = pvc
        .metadata
        .owner_references
        .iter()
        .any(|o| o.controller == Some(true) && o.uid == pod.metadata.uid);
    if pvc.metadata.namespace != pod.metadata.namespace || !controlled {
        return Err(format!(
            "PVC {}/{} was not created for pod {}/{} (pod is not owner)",
            pvc.metadata.namespace, pvc.metadata.name, pod.metadata.namespace, pod.metadata.name
        ));
    }
    Ok(())
}

/// `namespace/name`.
pub fn claim_key(namespace: &str, name: &str) -> String {
    format!("{namespace}/{name}")
}

/// Upstream's NotFound message for a claim (`persistentvolumeclaim "<name>" not found`).
pub fn claim_not_found(name: &str) -> String {
    format!("persistentvolumeclaim {name:?} not found")
}

#[cfg(test)]
mod tests {
    use super::*;
    use ksim_api::meta::OwnerReference;

    #[test]
    fn claims_and_ownership() {
        let mut pod: Pod = serde_json::from_str(
            r#"{"metadata":{"name":"app","namespace":"default","uid":"u1"},"spec":{"containers":[],
            "volumes":[{"name":"a","persistentVolumeClaim":{"claimName":"data"}},
            {"name":"s","ephemeral":{"volumeClaimTemplate":{}}},{"name":"e","emptyDir":{}}]}}"#,
        )
        .unwrap();
        let claims: Vec<_> = pod_claims(&pod)
            .map(|c| (c.claim_name.to_string(), c.ephemeral))
            .collect();
        assert_eq!(
            claims,
            vec![("data".to_string(), false), ("app-s".to_string(), true)]
        );
        let mut pvc = PersistentVolumeClaim::default();
        pvc.metadata.name = "app-s".into();
        pvc.metadata.namespace = "default".into();
        let err = volume_is_for_pod(&pod, &pvc).unwrap_err();
        assert_eq!(
            err,
            "PVC default/app-s was not created for pod default/app (pod is not owner)"
        );
        pvc.metadata.owner_references.push(OwnerReference {
            uid: "u1".into(),
            controller: Some(true),
            ..Default::default()
        });
        assert!(volume_is_for_pod(&pod, &pvc).is_ok());
        pod.metadata.uid = "other".into();
        assert!(volume_is_for_pod(&pod, &pvc).is_err());
    }
}
