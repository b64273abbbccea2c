//! `NodeVolumeLimits` (upstream `pkg/scheduler/framework/plugins/nodevolumelimits`, `CSILimits`).
//!
//! Counts unique `(driver, volumeHandle)` pairs per CSI driver on a node and fails the node
//! when the pod's new volumes would exceed `CSINode.spec.drivers[].allocatable.count`
//! (`node(s) exceed max volume count`, `Unschedulable`). A node without a CSINode, or a
//! driver without a count, has no limit.
//!
//! A volume is identified as upstream's `filterAttachableVolumes` does:
//! - a claim bound to a CSI PV: the PV's driver and handle;
//! - a claim bound to an in-tree GCE PD / EBS PV, or an inline GCE PD / EBS volume: translated
//!   to its CSI driver on every node that has a CSINode (the migrated-plugins annotation is not
//!   consulted for these plugins);
//! - an unbound claim (or one whose PV is missing): one volume of its class' provisioner, with
//!   a handle unique to the claim;
//! - anything else (local, hostPath, ...): not counted.
//!
//! Volumes of pods already on the node and VolumeAttachments to the node (whose PV is a CSI
//! PV) count as attached; the pod's volumes already attached are not counted again.
//!
//! Deliberate difference: the unbound-claim handle uses a fixed prefix instead of upstream's
//! random one; it only has to differ from real handles.

use std::collections::BTreeMap;
use std::sync::Arc;

use ksim_api::object::{ApiObject, ObjectKind};
use ksim_api::storage::{PersistentVolumeClaim, VolumeAttachment};
use ksim_api::Pod;

use crate::framework::{
    ClusterEventKind, ClusterEventObjects, CycleState, EnqueueExtensions, FactoryArgs,
    FilterPlugin, FilterResult, ObjectAction, Plugin, PluginRef, PreFilterPlugin, PreFilterResult,
    QueueingHint, Status,
};
use crate::node_info::{ClusterObjects, NodeInfo, Snapshot, StorageObjects};
use crate::pod_info::PodInfo;
use crate::volume::translate::{
    csi_driver_for_plugin, inline_csi_handle, inline_plugin, limits_migration_on, pv_csi_handle,
    pv_plugin,
};
use crate::volume::{claim_key, ephemeral_claim_name, pod_claims, volume_is_for_pod};

pub const NAME: &str = "NodeVolumeLimits";

/// The Filter failure text.
pub const REASON_MAX_VOLUME_COUNT: &str = "node(s) exceed max volume count";

/// Prefix of the handle an unbound claim is counted under (upstream: 32 random characters).
const UNBOUND_HANDLE_PREFIX: &str = "ksim-unbound-claim";

pub struct NodeVolumeLimits;

pub fn new(_: &FactoryArgs<'_>) -> Result<PluginRef, String> {
    Ok(Arc::new(NodeVolumeLimits))
}

/// One attachable volume, resolved as far as possible without knowing the node.
#[derive(Debug, Clone)]
enum VolSource {
    /// A CSI PV: the same everywhere. (driver, `driver/handle`)
    Csi { driver: String, unique: String },
    /// An in-tree PV or inline volume: counted where migration is on for its plugin.
    InTree {
        plugin: &'static str,
        /// (driver, `driver/handle`), or the translation error.
        translated: Result<(String, String), String>,
        /// Inline volumes turn a translation error into a Filter error; PVs are skipped.
        inline: bool,
    },
    /// An unbound claim, counted through its class' provisioner.
    Provisioner {
        provisioner: String,
        /// `provisioner/handle`.
        unique: String,
        /// For an in-tree provisioner name: (CSI driver, `driver/handle`).
        migrated: Option<(String, String)>,
    },
}

impl VolSource {
    /// The (driver, unique name) on a node with (or without) a CSINode; `Err` is a Filter error.
    fn resolve(
        &self,
        csi_node: Option<&ksim_api::storage::CsiNode>,
    ) -> Result<Option<(&str, &str)>, String> {
        match self {
            VolSource::Csi { driver, unique } => Ok(Some((driver, unique))),
            VolSource::InTree {
                plugin,
                translated,
                inline,
            } => {
                if !limits_migration_on(csi_node, plugin) {
                    return Ok(None);
                }
                match translated {
                    Ok((d, u)) => Ok(Some((d, u))),
                    Err(e) if *inline => Err(e.clone()),
                    Err(_) => Ok(None),
                }
            }
            VolSource::Provisioner {
                provisioner,
                unique,
                migrated,
            } => match migrated {
                Some((d, u)) => {
                    if limits_migration_on(csi_node, provisioner) {
                        Ok(Some((d, u)))
                    } else {
                        Ok(None)
                    }
                }
                None => Ok(Some((provisioner, unique))),
            },
        }
    }
}

/// `getCSIDriverInfoFromSC`, minus the node-dependent migration check.
fn source_from_class(pvc: &PersistentVolumeClaim, st: &StorageObjects) -> Option<VolSource> {
    let class = pvc.class();
    if class.is_empty() {
        // Must be immediate binding, hence bound before scheduling: not counted.
        return None;
    }
    let sc = st.storage_classes.get(class)?;
    let handle = format!(
        "{UNBOUND_HANDLE_PREFIX}-{}/{}",
        pvc.metadata.namespace, pvc.metadata.name
    );
    let provisioner = sc.provisioner.clone();
    let migrated =
        csi_driver_for_plugin(&provisioner).map(|d| (d.to_string(), format!("{d}/{handle}")));
    Some(VolSource::Provisioner {
        unique: format!("{provisioner}/{handle}"),
        provisioner,
        migrated,
    })
}

/// `getCSIDriverInfo` for a claim, minus the node-dependent migration check.
fn source_of_claim(pvc: &PersistentVolumeClaim, st: &StorageObjects) -> Option<VolSource> {
    if pvc.spec.volume_name.is_empty() {
        return source_from_class(pvc, st);
    }
    let Some(pv) = st.persistent_volumes.get(&pvc.spec.volume_name) else {
        // Deleted, or pre-bound to a PV not created yet: count through the class.
        return source_from_class(pvc, st);
    };
    if let Some(csi) = &pv.spec.csi {
        return Some(VolSource::Csi {
            driver: csi.driver.clone(),
            unique: format!("{}/{}", csi.driver, csi.volume_handle),
        });
    }
    let plugin = pv_plugin(pv)?;
    let translated = pv_csi_handle(pv)?
        .map(|(d, h)| (d.to_string(), format!("{d}/{h}")))
        .map_err(|e| e.to_string());
    Some(VolSource::InTree {
        plugin,
        translated,
        inline: false,
    })
}

/// `filterAttachableVolumes` without the node: the pod's attachable volumes in volume order.
/// An `Err` ends the list: upstream stops there with that status (for the new pod a missing
/// claim; for any pod an ephemeral claim it does not own). For an existing pod a missing claim
/// is skipped.
fn pod_volume_sources(
    pod: &Pod,
    st: &StorageObjects,
    new_pod: bool,
) -> Vec<Result<VolSource, Status>> {
    let mut out = Vec::new();
    for v in &pod.spec.volumes {
        let (claim_name, ephemeral) = if let Some(c) = &v.persistent_volume_claim {
            (c.claim_name.clone(), false)
        } else if v.ephemeral.is_some() {
            (ephemeral_claim_name(pod, v), true)
        } else {
            let Some(plugin) = inline_plugin(v) else {
                continue;
            };
            let translated = match inline_csi_handle(v) {
                Some(Ok((d, h))) => Ok((d.to_string(), format!("{d}/{h}"))),
                Some(Err(e)) => Err(format!(
                    "converting volume({}) from inline to csi: {e}",
                    v.name
                )),
                None => continue,
            };
            out.push(Ok(VolSource::InTree {
                plugin,
                translated,
                inline: true,
            }));
            continue;
        };
        if claim_name.is_empty() {
            out.push(Err(Status::error("PersistentVolumeClaim had no name")));
            return out;
        }
        let key = claim_key(&pod.metadata.namespace, &claim_name);
        let Some(pvc) = st.persistent_volume_claims.get(&key) else {
            if new_pod {
                out.push(Err(Status::unresolvable(format!(
                    "looking up PVC {key}: persistentvolumeclaim {claim_name:?} not found"
                ))));
                return out;
            }
            continue;
        };
        if ephemeral {
            if let Err(e) = volume_is_for_pod(pod, pvc) {
                out.push(Err(Status::error(e)));
                return out;
            }
        }
        if let Some(s) = source_of_claim(pvc, st) {
            out.push(Ok(s));
        }
    }
    out
}

/// Whether a pod has a volume the plugin looks at (PreFilter's test).
fn has_attachable_volume(pod: &Pod) -> bool {
    pod.spec.volumes.iter().any(|v| {
        v.persistent_volume_claim.is_some() || v.ephemeral.is_some() || inline_plugin(v).is_some()
    })
}

/// Per-cycle state: the new pod's volumes and the VolumeAttachments by node.
#[derive(Clone)]
struct StateData(Arc<StateInner>);

struct StateInner {
    objects: Arc<ClusterObjects>,
    new_volumes: Vec<Result<VolSource, Status>>,
    /// Node → attached (unique name, driver) from VolumeAttachments of CSI PVs.
    attachments: BTreeMap<String, Vec<(String, String)>>,
}

impl Plugin for NodeVolumeLimits {
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

impl PreFilterPlugin for NodeVolumeLimits {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        if !has_attachable_volume(&pod.pod) {
            return (None, Status::skip());
        }
        let objects = snapshot.objects.clone();
        let st = &objects.storage;
        let new_volumes = pod_volume_sources(&pod.pod, st, true);
        let mut attachments: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        for va in st.volume_attachments.values() {
            let Some(pv_name) = &va.spec.source.persistent_volume_name else {
                continue;
            };
            let Some(csi) = st
                .persistent_volumes
                .get(pv_name)
                .and_then(|pv| pv.spec.csi.as_ref())
            else {
                continue;
            };
            attachments
                .entry(va.spec.node_name.clone())
                .or_default()
                .push((
                    format!("{}/{}", va.spec.attacher, csi.volume_handle),
                    va.spec.attacher.clone(),
                ));
        }
        state.write(
            NAME,
            StateData(Arc::new(StateInner {
                objects: objects.clone(),
                new_volumes,
                attachments,
            })),
        );
        (None, Status::success())
    }
}

impl NodeVolumeLimits {
    /// The Filter verdict as a [`Status`] (the trait method boxes a rejection).
    fn filter_status(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if pod.pod.spec.volumes.is_empty() {
            return Status::success();
        }
        let Some(StateData(s)) = state.read::<StateData>(NAME) else {
            return Status::error(format!("reading {NAME:?} from cycleState: not found"));
        };
        let st = &s.objects.storage;
        let csi_node = st.csi_nodes.get(node.name()).map(|n| &**n);
        // Limits come only from the CSINode; without any the node passes unless resolving the
        // pod's volumes fails. Judged first so that nodes without limits allocate nothing.
        let has_limits = csi_node.is_some_and(|n| {
            n.spec
                .drivers
                .iter()
                .any(|d| d.allocatable.as_ref().is_some_and(|a| a.count.is_some()))
        });
        if !has_limits {
            for src in &s.new_volumes {
                match src {
                    Err(e) => return e.clone(),
                    Ok(src) => {
                        if let Err(e) = src.resolve(csi_node) {
                            return Status::error(e);
                        }
                    }
                }
            }
            return Status::success();
        }
        // unique name → driver, for the new pod.
        let mut new: Vec<(&str, &str)> = Vec::with_capacity(s.new_volumes.len());
        for src in &s.new_volumes {
            let src = match src {
                Ok(src) => src,
                Err(e) => return e.clone(),
            };
            match src.resolve(csi_node) {
                Err(e) => return Status::error(e),
                Ok(Some((driver, unique))) => {
                    if !new.iter().any(|(u, _)| *u == unique) {
                        new.push((unique, driver));
                    }
                }
                Ok(None) => {}
            }
        }
        if new.is_empty() {
            return Status::success();
        }
        let Some(csi_node) = csi_node else {
            return Status::success();
        };
        let limits: Vec<(&str, i64)> = csi_node
            .spec
            .drivers
            .iter()
            .filter_map(|d| {
                d.allocatable
                    .as_ref()
                    .and_then(|a| a.count)
                    .map(|c| (d.name.as_str(), c as i64))
            })
            .collect();
        if limits.is_empty() {
            return Status::success();
        }

        // Volumes of the pods on the node: unique name → driver.
        let mut attached: BTreeMap<String, String> = BTreeMap::new();
        for p in &node.pods {
            if !has_attachable_volume(&p.pod) {
                continue;
            }
            for src in pod_volume_sources(&p.pod, st, false) {
                let src = match src {
                    Ok(src) => src,
                    Err(e) => return e,
                };
                match src.resolve(Some(csi_node)) {
                    Err(e) => return Status::error(e),
                    Ok(Some((driver, unique))) => {
                        attached.insert(unique.to_string(), driver.to_string());
                    }
                    Ok(None) => {}
                }
            }
        }
        // A volume already used on the node is not attached again.
        new.retain(|(u, _)| !attached.contains_key(*u));
        let mut attached_count: BTreeMap<&str, i64> = BTreeMap::new();
        for driver in attached.values() {
            *attached_count.entry(driver.as_str()).or_default() += 1;
        }
        // Attachments not covered by a pod's volume count too.
        if let Some(vas) = s.attachments.get(node.name()) {
            let mut seen: Vec<&str> = Vec::new();
            for (unique, driver) in vas {
                if attached.contains_key(unique) || seen.contains(&unique.as_str()) {
                    continue;
                }
                seen.push(unique);
                *attached_count.entry(driver.as_str()).or_default() += 1;
            }
        }
        let mut new_count: BTreeMap<&str, i64> = BTreeMap::new();
        for (_, driver) in &new {
            *new_count.entry(*driver).or_default() += 1;
        }
        for (driver, count) in new_count {
            if let Some((_, max)) = limits.iter().find(|(d, _)| *d == driver) {
                let current = attached_count.get(driver).copied().unwrap_or(0);
                if current + count > *max {
                    return Status::unschedulable(REASON_MAX_VOLUME_COUNT);
                }
            }
        }
        Status::success()
    }
}

impl FilterPlugin for NodeVolumeLimits {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> FilterResult {
        self.filter_status(state, pod, node).into()
    }
}

impl EnqueueExtensions for NodeVolumeLimits {
    fn events(&self) -> &'static [ClusterEventKind] {
        use ClusterEventKind::{AssignedPodDelete, Object};
        use ObjectKind::*;
        // Upstream: CSINode add, assigned pod delete, PVC add, VolumeAttachment delete.
        &[
            Object(CsiNode, ObjectAction::Add),
            AssignedPodDelete,
            Object(PersistentVolumeClaim, ObjectAction::Add),
            Object(VolumeAttachment, ObjectAction::Delete),
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
            ) => hint_pod_deleted(&d.pod),
            (
                _,
                ClusterEventObjects::Object {
                    new: Some(ApiObject::PersistentVolumeClaim(c)),
                    ..
                },
            ) => hint_pvc_added(pod, c),
            (
                _,
                ClusterEventObjects::Object {
                    old: Some(ApiObject::VolumeAttachment(va)),
                    new: None,
                },
            ) => hint_volume_attachment_deleted(pod, va),
            _ => QueueingHint::Queue,
        }
    }
}

/// `isSchedulableAfterVolumeAttachmentDeleted`: the pod uses a claim, or an inline migratable
/// volume whose CSI driver is the attachment's attacher.
pub fn hint_volume_attachment_deleted(pod: &PodInfo, va: &VolumeAttachment) -> QueueingHint {
    for v in &pod.pod.spec.volumes {
        if v.persistent_volume_claim.is_some() {
            return QueueingHint::Queue;
        }
        let driver = inline_plugin(v).and_then(csi_driver_for_plugin);
        if driver.is_some_and(|d| d == va.spec.attacher) {
            return QueueingHint::Queue;
        }
    }
    QueueingHint::Skip
}

/// `isSchedulableAfterPodDeleted`: the deleted pod was on a node and had a claim, an ephemeral
/// or a migratable inline volume.
pub fn hint_pod_deleted(deleted: &Pod) -> QueueingHint {
    if deleted.spec.node_name.is_empty() || !has_attachable_volume(deleted) {
        QueueingHint::Skip
    } else {
        QueueingHint::Queue
    }
}

/// `isSchedulableAfterPVCAdded`: a claim the pod uses (directly or as its ephemeral claim).
pub fn hint_pvc_added(pod: &PodInfo, pvc: &PersistentVolumeClaim) -> QueueingHint {
    if pvc.metadata.namespace == pod.namespace()
        && pod_claims(&pod.pod).any(|c| c.claim_name == pvc.metadata.name)
    {
        QueueingHint::Queue
    } else {
        QueueingHint::Skip
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use ksim_api::storage::{CsiNode, PersistentVolume, StorageClass, VolumeAttachment};
    use ksim_api::Node;

    fn pod(name: &str, node: &str, volumes: &str) -> Arc<PodInfo> {
        let mut p: Pod = serde_json::from_str(&format!(
            r#"{{"metadata":{{"name":"{name}","namespace":"default"}},
            "spec":{{"nodeName":"{node}","containers":[],"volumes":{volumes}}}}}"#
        ))
        .unwrap();
        ksim_api::defaults::default_pod(&mut p);
        Arc::new(PodInfo::new(p))
    }

    fn claim_vol(claims: &[&str]) -> String {
        let v: Vec<String> = claims
            .iter()
            .map(|c| format!(r#"{{"name":"{c}","persistentVolumeClaim":{{"claimName":"{c}"}}}}"#))
            .collect();
        format!("[{}]", v.join(","))
    }

    /// Claims `c<i>` bound to CSI PVs `pv-c<i>` of driver `d`, handles `h<i>`.
    fn storage(n_claims: usize, driver: &str) -> StorageObjects {
        let mut st = StorageObjects::default();
        for i in 0..n_claims {
            let pv: PersistentVolume = serde_json::from_str(&format!(
                r#"{{"metadata":{{"name":"pv-c{i}"}},"spec":{{"csi":{{"driver":"{driver}","volumeHandle":"h{i}"}}}}}}"#
            ))
            .unwrap();
            st.persistent_volumes
                .insert(format!("pv-c{i}"), Arc::new(pv));
            let pvc: PersistentVolumeClaim = serde_json::from_str(&format!(
                r#"{{"metadata":{{"name":"c{i}","namespace":"default","annotations":{{"pv.kubernetes.io/bind-completed":"yes"}}}},
                "spec":{{"volumeName":"pv-c{i}"}}}}"#
            ))
            .unwrap();
            st.persistent_volume_claims
                .insert(format!("default/c{i}"), Arc::new(pvc));
        }
        st
    }

    fn csi_node(name: &str, driver: &str, count: Option<i32>) -> CsiNode {
        let alloc = count
            .map(|c| format!(r#","allocatable":{{"count":{c}}}"#))
            .unwrap_or_default();
        serde_json::from_str(&format!(
            r#"{{"metadata":{{"name":"{name}"}},"spec":{{"drivers":[{{"name":"{driver}"{alloc}}}]}}}}"#
        ))
        .unwrap()
    }

    fn run(st: StorageObjects, existing: Vec<Arc<PodInfo>>, incoming: &PodInfo) -> Status {
        let mut n = Node::default();
        n.metadata.name = "n1".into();
        let objects = ClusterObjects {
            storage: st,
            ..Default::default()
        };
        let snap = Snapshot::build(vec![Arc::new(n)], existing, Arc::new(objects));
        let mut state = CycleState::new();
        let (_, s) = NodeVolumeLimits.pre_filter(&mut state, incoming, &snap);
        if s.is_skip() {
            return s;
        }
        NodeVolumeLimits
            .filter(&state, incoming, &snap.nodes[0])
            .into_status()
    }

    /// (claims used by the pod already on n1, claims of the new pod, limit, fits)
    type LimitCase<'a> = (&'a [&'a str], &'a [&'a str], Option<i32>, bool);

    #[test]
    fn limits_table() {
        let cases: &[LimitCase] = &[
            (&["c0", "c1"], &["c2"], Some(3), true),
            (&["c0", "c1"], &["c2", "c3"], Some(3), false),
            // a shared volume is not counted twice
            (&["c0", "c1"], &["c0"], Some(2), true),
            (&["c0", "c1"], &["c2"], Some(2), false),
            // no count: no limit
            (&["c0", "c1"], &["c2", "c3"], None, true),
            // limit 0
            (&[], &["c0"], Some(0), false),
        ];
        for (old, new, limit, fits) in cases {
            let mut st = storage(4, "ebs.csi.aws.com");
            st.csi_nodes.insert(
                "n1".into(),
                Arc::new(csi_node("n1", "ebs.csi.aws.com", *limit)),
            );
            let existing = vec![pod("old", "n1", &claim_vol(old))];
            let s = run(st, existing, &pod("new", "", &claim_vol(new)));
            assert_eq!(s.is_success(), *fits, "{old:?} {new:?} {limit:?}: {s}");
            if !fits {
                assert_eq!(s.code, Code::Unschedulable);
                assert_eq!(s.message(), REASON_MAX_VOLUME_COUNT);
            }
        }
    }

    #[test]
    fn other_driver_and_no_csinode() {
        let mut st = storage(2, "csi.example.com");
        st.csi_nodes.insert(
            "n1".into(),
            Arc::new(csi_node("n1", "ebs.csi.aws.com", Some(0))),
        );
        assert!(run(st, vec![], &pod("new", "", &claim_vol(&["c0"]))).is_success());
        let st = storage(2, "ebs.csi.aws.com");
        assert!(run(st, vec![], &pod("new", "", &claim_vol(&["c0"]))).is_success());
    }

    #[test]
    fn unbound_claim_counts_through_class_and_inline_gce() {
        let mut st = storage(1, "csi.example.com");
        let sc: StorageClass = serde_json::from_str(
            r#"{"metadata":{"name":"fast"},"provisioner":"csi.example.com","volumeBindingMode":"WaitForFirstConsumer"}"#,
        )
        .unwrap();
        st.storage_classes.insert("fast".into(), Arc::new(sc));
        let fresh: PersistentVolumeClaim = serde_json::from_str(
            r#"{"metadata":{"name":"fresh","namespace":"default"},"spec":{"storageClassName":"fast"}}"#,
        )
        .unwrap();
        st.persistent_volume_claims
            .insert("default/fresh".into(), Arc::new(fresh));
        st.csi_nodes.insert(
            "n1".into(),
            Arc::new(csi_node("n1", "csi.example.com", Some(1))),
        );
        let existing = vec![pod("old", "n1", &claim_vol(&["c0"]))];
        let s = run(
            st.clone(),
            existing,
            &pod("new", "", &claim_vol(&["fresh"])),
        );
        assert_eq!(s.message(), REASON_MAX_VOLUME_COUNT);

        // Inline GCE PD counts against pd.csi.storage.gke.io where a CSINode exists.
        let mut st = StorageObjects::default();
        st.csi_nodes.insert(
            "n1".into(),
            Arc::new(csi_node("n1", "pd.csi.storage.gke.io", Some(1))),
        );
        let gce = |d: &str| format!(r#"[{{"name":"g","gcePersistentDisk":{{"pdName":"{d}"}}}}]"#);
        let existing = vec![pod("old", "n1", &gce("disk-1"))];
        let s = run(
            st.clone(),
            existing.clone(),
            &pod("new", "", &gce("disk-2")),
        );
        assert_eq!(s.message(), REASON_MAX_VOLUME_COUNT);
        let s = run(st, existing, &pod("new", "", &gce("disk-1")));
        assert!(s.is_success());
    }

    #[test]
    fn volume_attachments_count() {
        let mut st = storage(3, "ebs.csi.aws.com");
        st.csi_nodes.insert(
            "n1".into(),
            Arc::new(csi_node("n1", "ebs.csi.aws.com", Some(2))),
        );
        for (i, pv) in ["pv-c0", "pv-c1"].iter().enumerate() {
            let va: VolumeAttachment = serde_json::from_str(&format!(
                r#"{{"metadata":{{"name":"va{i}"}},"spec":{{"attacher":"ebs.csi.aws.com","nodeName":"n1",
                "source":{{"persistentVolumeName":"{pv}"}}}}}}"#
            ))
            .unwrap();
            st.volume_attachments.insert(format!("va{i}"), Arc::new(va));
        }
        // Two attachments, one of them also used by a pod: 2 attached, +1 new > 2.
        let existing = vec![pod("old", "n1", &claim_vol(&["c0"]))];
        let s = run(st, existing, &pod("new", "", &claim_vol(&["c2"])));
        assert_eq!(s.message(), REASON_MAX_VOLUME_COUNT);
    }

    #[test]
    fn prefilter_skips_without_volumes() {
        let s = run(
            StorageObjects::default(),
            vec![],
            &pod("new", "", r#"[{"name":"e","emptyDir":{}}]"#),
        );
        assert!(s.is_skip());
    }
}
