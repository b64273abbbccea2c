//! `VolumeZone` (upstream `pkg/scheduler/framework/plugins/volumezone`).
//!
//! PreFilter reads the PVs bound to the pod's `persistentVolumeClaim` volumes (through the API
//! objects, by `spec.volumeName` whether or not the claim is fully bound) and keeps their zone
//! and region labels (GA and beta, values split on `__`). Unbound WaitForFirstConsumer claims
//! are ignored; a pod without any such label is skipped. Missing objects reject the pod with
//! upstream's NotFound texts (`persistentvolume "<pv>" not found`, ...).
//!
//! Filter: a node without any of the four topology labels passes; otherwise every PV label
//! must be matched by the node's label of the same key — a beta PV key may also be matched by
//! the GA node key, never the reverse. Failure: `node(s) had no available volume zone`,
//! `UnschedulableAndUnresolvable`.

use std::sync::Arc;

use ksim_api::object::{ApiObject, ObjectKind};
use ksim_api::storage::{PersistentVolume, PersistentVolumeClaim, StorageClass};

use crate::framework::{
    ClusterEventKind, ClusterEventObjects, CycleState, EnqueueExtensions, FactoryArgs,
    FilterPlugin, FilterResult, ObjectAction, Plugin, PluginRef, PreFilterPlugin, PreFilterResult,
    QueueingHint, Status,
};
use crate::node_info::{ClusterObjects, NodeInfo, Snapshot};
use crate::pod_info::PodInfo;
use crate::volume::{claim_key, claim_not_found};

pub const NAME: &str = "VolumeZone";

/// The Filter failure text.
pub const REASON_CONFLICT: &str = "node(s) had no available volume zone";

const LABEL_ZONE: &str = "topology.kubernetes.io/zone";
const LABEL_REGION: &str = "topology.kubernetes.io/region";
const LABEL_BETA_ZONE: &str = "failure-domain.beta.kubernetes.io/zone";
const LABEL_BETA_REGION: &str = "failure-domain.beta.kubernetes.io/region";

/// Upstream's `topologyLabels`, in its order.
const TOPOLOGY_LABELS: [&str; 4] = [LABEL_BETA_ZONE, LABEL_BETA_REGION, LABEL_ZONE, LABEL_REGION];

pub struct VolumeZone;

pub fn new(_: &FactoryArgs<'_>) -> Result<PluginRef, String> {
    Ok(Arc::new(VolumeZone))
}

/// One PV topology label: its key and the allowed values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PvTopology {
    pub key: &'static str,
    pub values: Vec<String>,
}

#[derive(Debug, Clone)]
struct StateData {
    topologies: Vec<PvTopology>,
}

impl Plugin for VolumeZone {
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

fn translate_to_ga(key: &str) -> &str {
    match key {
        LABEL_BETA_REGION => LABEL_REGION,
        LABEL_BETA_ZONE => LABEL_ZONE,
        k => k,
    }
}

/// `getPVTopologies`: the PV's topology labels; a value with an empty `__` part is ignored.
pub fn pv_topologies(pv: &PersistentVolume) -> Vec<PvTopology> {
    let mut out = Vec::new();
    for key in TOPOLOGY_LABELS {
        let Some(value) = pv.metadata.labels.get(key) else {
            continue;
        };
        let zones: Vec<String> = value.split("__").map(|z| z.trim().to_string()).collect();
        if zones.iter().any(String::is_empty) {
            continue;
        }
        out.push(PvTopology { key, values: zones });
    }
    out
}

/// `getPVbyPod`.
fn pv_topologies_of_pod(
    pod: &PodInfo,
    objects: &ClusterObjects,
) -> Result<Vec<PvTopology>, Status> {
    let st = &objects.storage;
    let mut out = Vec::new();
    for v in &pod.pod.spec.volumes {
        let Some(src) = &v.persistent_volume_claim else {
            continue;
        };
        let name = &src.claim_name;
        if name.is_empty() {
            return Err(Status::unresolvable("PersistentVolumeClaim had no name"));
        }
        let Some(pvc) = st
            .persistent_volume_claims
            .get(&claim_key(pod.namespace(), name))
        else {
            return Err(Status::unresolvable(claim_not_found(name)));
        };
        let pv_name = &pvc.spec.volume_name;
        if pv_name.is_empty() {
            let class = pvc.class();
            if class.is_empty() {
                return Err(Status::unresolvable(
                    "PersistentVolumeClaim had no pv name and storageClass name",
                ));
            }
            let Some(sc) = st.storage_classes.get(class) else {
                return Err(Status::unresolvable(format!(
                    "storageclass.storage.k8s.io {class:?} not found"
                )));
            };
            match sc.volume_binding_mode.as_deref() {
                None => {
                    return Err(Status::unresolvable(format!(
                        "VolumeBindingMode not set for StorageClass {class:?}"
                    )))
                }
                Some(ksim_api::storage::BINDING_WAIT_FOR_FIRST_CONSUMER) => continue,
                Some(_) => return Err(Status::unresolvable("PersistentVolume had no name")),
            }
        }
        let Some(pv) = st.persistent_volumes.get(pv_name) else {
            return Err(Status::unresolvable(format!(
                "persistentvolume {pv_name:?} not found"
            )));
        };
        out.extend(pv_topologies(pv));
    }
    Ok(out)
}

impl PreFilterPlugin for VolumeZone {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        match pv_topologies_of_pod(pod, &snapshot.objects) {
            Err(s) => (None, s),
            Ok(t) if t.is_empty() => (None, Status::skip()),
            Ok(topologies) => {
                state.write(NAME, StateData { topologies });
                (None, Status::success())
            }
        }
    }
}

impl VolumeZone {
    /// The Filter verdict as a [`Status`] (the trait method boxes a rejection).
    fn filter_status(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        if pod.pod.spec.volumes.is_empty() {
            return Status::success();
        }
        let Some(s) = state.read::<StateData>(NAME) else {
            return Status::error(format!("reading {NAME:?} from cycleState: not found"));
        };
        let labels = node.labels();
        if !TOPOLOGY_LABELS.iter().any(|k| labels.contains_key(*k)) {
            // A node without topology labels (single-zone cluster) takes any volume.
            return Status::success();
        }
        for t in &s.topologies {
            let v = labels
                .get(t.key)
                .or_else(|| labels.get(translate_to_ga(t.key)));
            if !v.is_some_and(|v| t.values.iter().any(|x| x == v)) {
                return Status::unresolvable(REASON_CONFLICT);
            }
        }
        Status::success()
    }
}

impl FilterPlugin for VolumeZone {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> FilterResult {
        self.filter_status(state, pod, node).into()
    }
}

impl EnqueueExtensions for VolumeZone {
    fn events(&self) -> &'static [ClusterEventKind] {
        use ClusterEventKind::{NodeAdd, NodeUpdateLabel, Object};
        use ObjectAction::{Add, Update};
        use ObjectKind::*;
        // Upstream (queueing hints on): StorageClass add, Node add / label update, PVC
        // add/update, PV add/update.
        &[
            Object(StorageClass, Add),
            NodeAdd,
            NodeUpdateLabel,
            Object(PersistentVolumeClaim, Add),
            Object(PersistentVolumeClaim, Update),
            Object(PersistentVolume, Add),
            Object(PersistentVolume, Update),
        ]
    }

    fn hint(
        &self,
        pod: &PodInfo,
        _kind: ClusterEventKind,
        objects: &ClusterEventObjects<'_>,
    ) -> QueueingHint {
        // Node events have no hint upstream.
        let ClusterEventObjects::Object {
            old,
            new: Some(new),
        } = objects
        else {
            return QueueingHint::Queue;
        };
        match (*old, *new) {
            (_, ApiObject::StorageClass(n)) => hint_storage_class_added(n),
            (_, ApiObject::PersistentVolumeClaim(n)) => hint_pvc_change(pod, n),
            (o, ApiObject::PersistentVolume(n)) => {
                let o = match o {
                    Some(ApiObject::PersistentVolume(o)) => Some(o),
                    _ => None,
                };
                hint_pv_change(o, n)
            }
            _ => QueueingHint::Queue,
        }
    }
}

/// `isSchedulableAfterPersistentVolumeClaimChange`: a claim one of the pod's
/// `persistentVolumeClaim` volumes names, in its namespace.
pub fn hint_pvc_change(pod: &PodInfo, pvc: &PersistentVolumeClaim) -> QueueingHint {
    let wanted = pod.namespace() == pvc.metadata.namespace
        && pod.pod.spec.volumes.iter().any(|v| {
            v.persistent_volume_claim
                .as_ref()
                .is_some_and(|c| c.claim_name == pvc.metadata.name)
        });
    if wanted {
        QueueingHint::Queue
    } else {
        QueueingHint::Skip
    }
}

/// `isSchedulableAfterStorageClassAdded`: only a WaitForFirstConsumer class helps.
pub fn hint_storage_class_added(sc: &StorageClass) -> QueueingHint {
    if sc.is_wait_for_first_consumer() {
        QueueingHint::Queue
    } else {
        QueueingHint::Skip
    }
}

/// `isSchedulableAfterPersistentVolumeChange`: a new PV, or changed topology labels.
pub fn hint_pv_change(old: Option<&PersistentVolume>, new: &PersistentVolume) -> QueueingHint {
    match old {
        None => QueueingHint::Queue,
        Some(o) if pv_topologies(o) != pv_topologies(new) => QueueingHint::Queue,
        Some(_) => QueueingHint::Skip,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::node_info::StorageObjects;
    use ksim_api::{Node, Pod};

    fn node(labels: &[(&str, &str)]) -> NodeInfo {
        let mut n = Node::default();
        n.metadata.name = "n".into();
        n.metadata.labels = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        NodeInfo::new(Arc::new(n))
    }

    fn setup(pv_labels: &str) -> (PodInfo, Snapshot) {
        let pod: Pod = serde_json::from_str(
            r#"{"metadata":{"name":"app","namespace":"default"},"spec":{"containers":[],
            "volumes":[{"name":"v","persistentVolumeClaim":{"claimName":"data"}}]}}"#,
        )
        .unwrap();
        let pv: PersistentVolume = serde_json::from_str(&format!(
            r#"{{"metadata":{{"name":"pv1","labels":{pv_labels}}},"spec":{{}}}}"#
        ))
        .unwrap();
        let pvc: PersistentVolumeClaim = serde_json::from_str(
            r#"{"metadata":{"name":"data","namespace":"default"},"spec":{"volumeName":"pv1"}}"#,
        )
        .unwrap();
        let mut st = StorageObjects::default();
        st.persistent_volumes.insert("pv1".into(), Arc::new(pv));
        st.persistent_volume_claims
            .insert("default/data".into(), Arc::new(pvc));
        let objects = ClusterObjects {
            storage: st,
            ..Default::default()
        };
        (
            PodInfo::new(pod),
            Snapshot::build(Vec::new(), Vec::new(), Arc::new(objects)),
        )
    }

    #[test]
    fn filter_table() {
        let ga = r#"{"topology.kubernetes.io/zone":"zone-a__zone-c"}"#;
        let beta = r#"{"failure-domain.beta.kubernetes.io/zone":"zone-a"}"#;
        type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], bool);
        let cases: &[Case] = &[
            (ga, &[(LABEL_ZONE, "zone-a")], true),
            (ga, &[(LABEL_ZONE, "zone-c")], true),
            (ga, &[(LABEL_ZONE, "zone-b")], false),
            // no topology label at all: passes
            (ga, &[("other", "x")], true),
            // region only: the zone label is missing
            (ga, &[(LABEL_REGION, "r1")], false),
            // GA PV key is never matched by a beta node label
            (ga, &[(LABEL_BETA_ZONE, "zone-a")], false),
            // beta PV key matched by the GA node label
            (beta, &[(LABEL_ZONE, "zone-a")], true),
            (beta, &[(LABEL_BETA_ZONE, "zone-a")], true),
        ];
        for (pv_labels, node_labels, ok) in cases {
            let (pod, snap) = setup(pv_labels);
            let mut state = CycleState::new();
            let (_, s) = VolumeZone.pre_filter(&mut state, &pod, &snap);
            assert!(s.is_success(), "{s}");
            let f = VolumeZone
                .filter(&state, &pod, &node(node_labels))
                .into_status();
            assert_eq!(f.is_success(), *ok, "{pv_labels} {node_labels:?}");
            if !ok {
                assert_eq!(f.code, Code::UnschedulableAndUnresolvable);
                assert_eq!(f.message(), REASON_CONFLICT);
            }
        }
    }

    #[test]
    fn prefilter_skip_and_missing_pv() {
        let (pod, snap) = setup("{}");
        let mut state = CycleState::new();
        assert!(VolumeZone.pre_filter(&mut state, &pod, &snap).1.is_skip());
        let (pod, mut snap) = setup("{}");
        let mut objects = (*snap.objects).clone();
        objects.storage.persistent_volumes.clear();
        snap.objects = Arc::new(objects);
        let (_, s) = VolumeZone.pre_filter(&mut state, &pod, &snap);
        assert_eq!(s.message(), "persistentvolume \"pv1\" not found");
        assert_eq!(s.code, Code::UnschedulableAndUnresolvable);
    }
}
