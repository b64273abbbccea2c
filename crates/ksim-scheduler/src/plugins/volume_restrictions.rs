//! `VolumeRestrictions` (upstream `pkg/scheduler/framework/plugins/volumerestrictions`).
//!
//! - **Disk conflicts** with the pods already on the node, for inline GCE PD (same `pdName`,
//!   unless both read-only), AWS EBS (same `volumeID`, read-only ignored), iSCSI (same `iqn`,
//!   unless both read-only) and RBD (a common monitor, same pool and image, unless both
//!   read-only): `node(s) had no available disk`, `Unschedulable`.
//! - **ReadWriteOncePod**: PreFilter looks up every `persistentVolumeClaim` volume (a missing
//!   claim rejects the pod, `persistentvolumeclaim "<name>" not found`) and counts how many
//!   scheduled pods, cluster-wide, use the pod's RWOP claims. Any use fails every node,
//!   `Unschedulable`, so preemption can evict the holder (AddPod/RemovePod keep the count).
//!
//! PreFilter skips when the pod has no disk to check and no RWOP claim in use.

use std::sync::Arc;

use ksim_api::object::{ApiObject, ObjectKind};
use ksim_api::storage::{PersistentVolumeClaim, READ_WRITE_ONCE_POD};
use ksim_api::{Pod, Volume};

use crate::framework::{
    ClusterEventKind, ClusterEventObjects, CycleState, EnqueueExtensions, FactoryArgs,
    FilterPlugin, FilterResult, ObjectAction, Plugin, PluginRef, PreFilterPlugin, PreFilterResult,
    QueueingHint, Status,
};
use crate::node_info::{NodeInfo, Snapshot};
use crate::pod_info::PodInfo;
use crate::volume::{claim_key, claim_not_found};

pub const NAME: &str = "VolumeRestrictions";

/// A disk conflict with a pod on the node.
pub const REASON_DISK_CONFLICT: &str = "node(s) had no available disk";
/// A ReadWriteOncePod claim of the pod is used by another pod.
pub const REASON_RWOP_CONFLICT: &str =
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod";

pub struct VolumeRestrictions;

pub fn new(_: &FactoryArgs<'_>) -> Result<PluginRef, String> {
    Ok(Arc::new(VolumeRestrictions))
}

/// `preFilterState`.
#[derive(Debug, Clone)]
struct StateData {
    /// Names of the pod's claims with the ReadWriteOncePod access mode.
    rwop_claims: Vec<String>,
    /// References to those claims by scheduled pods.
    conflicting_refs: i64,
}

impl StateData {
    /// `conflictingPVCRefCountForPod`: upstream matches the claim name only, not the namespace.
    fn refs_of(&self, pod: &Pod) -> i64 {
        pod.spec
            .volumes
            .iter()
            .filter_map(|v| v.persistent_volume_claim.as_ref())
            .filter(|c| self.rwop_claims.contains(&c.claim_name))
            .count() as i64
    }
}

impl Plugin for VolumeRestrictions {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
    fn as_enqueue_extensions(&self) -> Option<&dyn EnqueueExtensions> {
        Some(self)
    }
}

/// `needsRestrictionsCheck`.
fn needs_restrictions_check(v: &Volume) -> bool {
    v.gce_persistent_disk.is_some()
        || v.aws_elastic_block_store.is_some()
        || v.rbd.is_some()
        || v.iscsi.is_some()
}

/// `isVolumeConflict`: whether `volume` conflicts with any volume of `pod`.
pub fn is_volume_conflict(volume: &Volume, pod: &Pod) -> bool {
    for ev in &pod.spec.volumes {
        if let (Some(d), Some(e)) = (&volume.gce_persistent_disk, &ev.gce_persistent_disk) {
            if d.pd_name == e.pd_name && !(d.read_only && e.read_only) {
                return true;
            }
        }
        if let (Some(d), Some(e)) = (&volume.aws_elastic_block_store, &ev.aws_elastic_block_store) {
            if d.volume_id == e.volume_id {
                return true;
            }
        }
        if let (Some(d), Some(e)) = (&volume.iscsi, &ev.iscsi) {
            if d.iqn == e.iqn && !(d.read_only && e.read_only) {
                return true;
            }
        }
        if let (Some(d), Some(e)) = (&volume.rbd, &ev.rbd) {
            let overlap = d.monitors.iter().any(|m| e.monitors.contains(m));
            if overlap && d.pool == e.pool && d.image == e.image && !(d.read_only && e.read_only) {
                return true;
            }
        }
    }
    false
}

/// `satisfyVolumeConflicts`.
fn satisfies_volume_conflicts(pod: &Pod, node: &NodeInfo) -> bool {
    pod.spec
        .volumes
        .iter()
        .filter(|v| needs_restrictions_check(v))
        .all(|v| !node.pods.iter().any(|ev| is_volume_conflict(v, &ev.pod)))
}

fn uses_claim(pod: &Pod, namespace: &str, claim: &str) -> bool {
    pod.metadata.namespace == namespace
        && pod.spec.volumes.iter().any(|v| {
            v.persistent_volume_claim
                .as_ref()
                .is_some_and(|c| c.claim_name == claim)
        })
}

impl PreFilterPlugin for VolumeRestrictions {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let needs_check = pod.pod.spec.volumes.iter().any(needs_restrictions_check);
        let claims = &snapshot.objects.storage.persistent_volume_claims;
        let mut rwop_claims: Vec<String> = Vec::new();
        for v in &pod.pod.spec.volumes {
            let Some(src) = &v.persistent_volume_claim else {
                continue;
            };
            let Some(pvc) = claims.get(&claim_key(pod.namespace(), &src.claim_name)) else {
                return (None, Status::unresolvable(claim_not_found(&src.claim_name)));
            };
            if pvc.has_access_mode(READ_WRITE_ONCE_POD) && !rwop_claims.contains(&pvc.metadata.name)
            {
                rwop_claims.push(pvc.metadata.name.clone());
            }
        }
        // `IsPVCUsedByPods`: any scheduled pod, on any node, using the claim.
        let conflicting_refs = rwop_claims
            .iter()
            .filter(|c| {
                snapshot.nodes.iter().any(|n| {
                    n.pods
                        .iter()
                        .any(|p| uses_claim(&p.pod, pod.namespace(), c))
                })
            })
            .count() as i64;
        if !needs_check && conflicting_refs == 0 {
            return (None, Status::skip());
        }
        state.write(
            NAME,
            StateData {
                rwop_claims,
                conflicting_refs,
            },
        );
        (None, Status::success())
    }

    fn has_extensions(&self) -> bool {
        true
    }

    fn add_pod(
        &self,
        state: &mut CycleState,
        _pod: &PodInfo,
        pod_to_add: &Arc<PodInfo>,
        _node: &NodeInfo,
        _snapshot: &Snapshot,
    ) -> Status {
        match state.read_mut::<StateData>(NAME) {
            Some(s) => {
                s.conflicting_refs += s.refs_of(&pod_to_add.pod);
                Status::success()
            }
            None => Status::error(format!("cannot read \"PreFilter{NAME}\" from cycleState")),
        }
    }

    fn remove_pod(
        &self,
        state: &mut CycleState,
        _pod: &PodInfo,
        pod_to_remove: &Arc<PodInfo>,
        _node: &NodeInfo,
        _snapshot: &Snapshot,
    ) -> Status {
        match state.read_mut::<StateData>(NAME) {
            Some(s) => {
                s.conflicting_refs -= s.refs_of(&pod_to_remove.pod);
                Status::success()
            }
            None => Status::error(format!("cannot read \"PreFilter{NAME}\" from cycleState")),
        }
    }
}

impl VolumeRestrictions {
    /// The Filter verdict as a [`Status`] (the trait method boxes a rejection).
    fn filter_status(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if !satisfies_volume_conflicts(&pod.pod, node) {
            return Status::unschedulable(REASON_DISK_CONFLICT);
        }
        match state.read::<StateData>(NAME) {
            None => Status::error(format!("cannot read \"PreFilter{NAME}\" from cycleState")),
            Some(s) if s.conflicting_refs > 0 => Status::unschedulable(REASON_RWOP_CONFLICT),
            Some(_) => Status::success(),
        }
    }
}

impl FilterPlugin for VolumeRestrictions {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> FilterResult {
        self.filter_status(state, pod, node).into()
    }
}

impl EnqueueExtensions for VolumeRestrictions {
    fn events(&self) -> &'static [ClusterEventKind] {
        // Upstream (queueing hints on): assigned pod delete, node add, PVC add.
        &[
            ClusterEventKind::AssignedPodDelete,
            ClusterEventKind::NodeAdd,
            ClusterEventKind::Object(ObjectKind::PersistentVolumeClaim, ObjectAction::Add),
        ]
    }

    fn hint(
        &self,
        pod: &PodInfo,
        kind: ClusterEventKind,
        objects: &ClusterEventObjects<'_>,
    ) -> QueueingHint {
        match (kind, objects) {
            (
                ClusterEventKind::AssignedPodDelete,
                ClusterEventObjects::Pod { old: Some(d), .. },
            ) => hint_pod_deleted(pod, &d.pod),
            (
                _,
                ClusterEventObjects::Object {
                    new: Some(ApiObject::PersistentVolumeClaim(c)),
                    ..
                },
            ) => hint_pvc_added(pod, c),
            _ => QueueingHint::Queue,
        }
    }
}

/// `isSchedulableAfterPodDeleted`: the deleted pod (same namespace) had a conflicting disk or
/// used one of the pod's claims.
pub fn hint_pod_deleted(pod: &PodInfo, deleted: &Pod) -> QueueingHint {
    if deleted.metadata.namespace != pod.namespace() {
        return QueueingHint::Skip;
    }
    let conflicts = pod
        .pod
        .spec
        .volumes
        .iter()
        .filter(|v| needs_restrictions_check(v))
        .any(|v| is_volume_conflict(v, deleted));
    if conflicts {
        return QueueingHint::Queue;
    }
    let shares_claim = pod
        .pod
        .spec
        .volumes
        .iter()
        .filter_map(|v| v.persistent_volume_claim.as_ref())
        .any(|c| uses_claim(deleted, pod.namespace(), &c.claim_name));
    if shares_claim {
        QueueingHint::Queue
    } else {
        QueueingHint::Skip
    }
}

/// `isSchedulableAfterPersistentVolumeClaimAdded`: a claim the pod names, in its namespace.
pub fn hint_pvc_added(pod: &PodInfo, pvc: &PersistentVolumeClaim) -> QueueingHint {
    if uses_claim(&pod.pod, &pvc.metadata.namespace, &pvc.metadata.name) {
        QueueingHint::Queue
    } else {
        QueueingHint::Skip
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::node_info::{ClusterObjects, StorageObjects};
    use ksim_api::Node;

    fn pod(name: &str, node: &str, volumes: &str) -> PodInfo {
        let mut p: Pod = serde_json::from_str(&format!(
            r#"{{"metadata":{{"name":"{name}","namespace":"default"}},
            "spec":{{"nodeName":"{node}","containers":[],"volumes":{volumes}}}}}"#
        ))
        .unwrap();
        ksim_api::defaults::default_pod(&mut p);
        PodInfo::new(p)
    }

    fn node_with(pods: Vec<PodInfo>) -> NodeInfo {
        let mut n = Node::default();
        n.metadata.name = "n1".into();
        let mut ni = NodeInfo::new(Arc::new(n));
        for p in pods {
            ni.add_pod(Arc::new(p));
        }
        ni
    }

    #[test]
    fn disk_conflicts() {
        let gce = |ro: bool| {
            format!(r#"[{{"name":"d","gcePersistentDisk":{{"pdName":"disk-1","readOnly":{ro}}}}}]"#)
        };
        let ebs = |ro: bool| {
            format!(
                r#"[{{"name":"d","awsElasticBlockStore":{{"volumeID":"vol-1","readOnly":{ro}}}}}]"#
            )
        };
        let iscsi = |ro: bool, portal: &str| {
            format!(
                r#"[{{"name":"d","iscsi":{{"targetPortal":"{portal}","iqn":"iqn.1","lun":0,"readOnly":{ro}}}}}]"#
            )
        };
        let rbd = |mons: &str, pool: &str, ro: bool| {
            format!(
                r#"[{{"name":"d","rbd":{{"monitors":{mons},"image":"img","pool":"{pool}","readOnly":{ro}}}}}]"#
            )
        };
        let cases: Vec<(String, String, bool)> = vec![
            (gce(true), gce(true), false),
            (gce(true), gce(false), true),
            (gce(false), gce(false), true),
            (ebs(true), ebs(true), true),
            (iscsi(false, "a"), iscsi(false, "b"), true),
            (iscsi(true, "a"), iscsi(true, "a"), false),
            (
                rbd(r#"["m1","m2"]"#, "rbd", false),
                rbd(r#"["m2"]"#, "rbd", false),
                true,
            ),
            (
                rbd(r#"["m1"]"#, "rbd", false),
                rbd(r#"["m2"]"#, "rbd", false),
                false,
            ),
            (
                rbd(r#"["m1"]"#, "a", false),
                rbd(r#"["m1"]"#, "b", false),
                false,
            ),
            (
                rbd(r#"["m1"]"#, "rbd", true),
                rbd(r#"["m1"]"#, "rbd", true),
                false,
            ),
            // the defaulted pool equals an explicit "rbd"
            (
                r#"[{"name":"d","rbd":{"monitors":["m1"],"image":"img"}}]"#.to_string(),
                rbd(r#"["m1"]"#, "rbd", false),
                true,
            ),
        ];
        let snap = Snapshot::default();
        for (new, existing, conflict) in cases {
            let incoming = pod("new", "", &new);
            let node = node_with(vec![pod("old", "n1", &existing)]);
            let mut state = CycleState::new();
            let (_, s) = VolumeRestrictions.pre_filter(&mut state, &incoming, &snap);
            assert!(s.is_success(), "{s}");
            let f = VolumeRestrictions
                .filter(&state, &incoming, &node)
                .into_status();
            assert_eq!(!f.is_success(), conflict, "{new} vs {existing}");
            if conflict {
                assert_eq!(f.code, Code::Unschedulable);
                assert_eq!(f.message(), REASON_DISK_CONFLICT);
            }
        }
    }

    fn rwop_snapshot(holder_ns: &str) -> (Snapshot, Arc<PodInfo>) {
        let pvc: PersistentVolumeClaim = serde_json::from_str(
            r#"{"metadata":{"name":"solo","namespace":"default"},"spec":{"accessModes":["ReadWriteOncePod"]}}"#,
        )
        .unwrap();
        let mut st = StorageObjects::default();
        st.persistent_volume_claims
            .insert("default/solo".into(), Arc::new(pvc));
        let objects = ClusterObjects {
            storage: st,
            ..Default::default()
        };
        let mut n = Node::default();
        n.metadata.name = "n1".into();
        let mut holder = pod(
            "holder",
            "n1",
            r#"[{"name":"v","persistentVolumeClaim":{"claimName":"solo"}}]"#,
        );
        holder.pod.metadata.namespace = holder_ns.into();
        let holder = Arc::new(holder);
        (
            Snapshot::build(vec![Arc::new(n)], vec![holder.clone()], Arc::new(objects)),
            holder,
        )
    }

    #[test]
    fn read_write_once_pod() {
        let incoming = pod(
            "new",
            "",
            r#"[{"name":"v","persistentVolumeClaim":{"claimName":"solo"}}]"#,
        );
        let (snap, holder) = rwop_snapshot("default");
        let mut state = CycleState::new();
        let (_, s) = VolumeRestrictions.pre_filter(&mut state, &incoming, &snap);
        assert!(s.is_success());
        let f = VolumeRestrictions
            .filter(&state, &incoming, &snap.nodes[0])
            .into_status();
        assert_eq!(f.code, Code::Unschedulable);
        assert_eq!(f.message(), REASON_RWOP_CONFLICT);
        // Removing the holder (preemption dry run) clears the conflict.
        let mut st2 = state.clone();
        VolumeRestrictions.remove_pod(&mut st2, &incoming, &holder, &snap.nodes[0], &snap);
        assert!(VolumeRestrictions
            .filter(&st2, &incoming, &snap.nodes[0])
            .is_success());

        // A holder in another namespace does not count: nothing to check, PreFilter skips.
        let (snap, _) = rwop_snapshot("other");
        let mut state = CycleState::new();
        assert!(VolumeRestrictions
            .pre_filter(&mut state, &incoming, &snap)
            .1
            .is_skip());

        // A missing claim rejects the pod.
        let missing = pod(
            "new",
            "",
            r#"[{"name":"v","persistentVolumeClaim":{"claimName":"nope"}}]"#,
        );
        let (_, s) = VolumeRestrictions.pre_filter(&mut state, &missing, &snap);
        assert_eq!(s.code, Code::UnschedulableAndUnresolvable);
        assert_eq!(s.message(), "persistentvolumeclaim \"nope\" not found");
    }

    #[test]
    fn pod_deleted_hint() {
        let incoming = pod(
            "new",
            "",
            r#"[{"name":"d","gcePersistentDisk":{"pdName":"disk-1"}}]"#,
        );
        let holder = pod(
            "old",
            "n1",
            r#"[{"name":"d","gcePersistentDisk":{"pdName":"disk-1"}}]"#,
        );
        let other = pod("x", "n1", "[]");
        assert_eq!(
            hint_pod_deleted(&incoming, &holder.pod),
            QueueingHint::Queue
        );
        assert_eq!(hint_pod_deleted(&incoming, &other.pod), QueueingHint::Skip);
    }
}
