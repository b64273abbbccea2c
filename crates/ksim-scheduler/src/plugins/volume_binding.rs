//! `VolumeBinding` (upstream `pkg/scheduler/framework/plugins/volumebinding`).
//!
//! - **PreFilter** checks every claim the pod uses (`persistentVolumeClaim` and generic
//!   `ephemeral` volumes) through the API objects: missing, `Lost`, being deleted, ephemeral
//!   claim not owned by the pod — each `UnschedulableAndUnresolvable` with upstream's text.
//!   It then classifies the claims through the assume cache ([`crate::volume::binder`]) and
//!   rejects the pod when any claim is unbound and not WaitForFirstConsumer
//!   (`pod has unbound immediate PersistentVolumeClaims`). A pod without claims is skipped.
//! - **Filter** runs `FindPodVolumes` for the node: bound PVs' node affinity (translated to CSI
//!   where the node's CSINode lists the in-tree plugin as migrated), static matching of the
//!   delayed claims, dynamic provisioning (`allowedTopologies`, CSIStorageCapacity). Failures
//!   are `UnschedulableAndUnresolvable` with one to three reasons in upstream's order.
//! - **PreScore** always skips: the `StorageCapacityScoring` gate is alpha and off in v1.35,
//!   so upstream builds no scorer. Score returns 0.
//! - **Reserve** assumes the node's static bindings and provisions in the plugin's
//!   [`AssumeCache`] and records a [`VolumeBindingDecision`] in the `CycleState`; read it with
//!   [`decision`]. **Unreserve** reverts the assumptions.
//! - **PreBind** succeeds without waiting: the API writes it would issue are the decision's
//!   ([`VolumeBindingDecision::apply_prebind`]); the engine applies them and simulates the PV
//!   controller (see [`crate::volume`]).
//!
//! Deliberate difference: upstream's PreBind blocks until the PV controller has bound every
//! claim (or times out); ksim leaves that wait to the engine's event model.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use ksim_api::object::{ApiObject, ObjectKind};
use ksim_api::storage::{
    CsiDriver, CsiNode, CsiStorageCapacity, PersistentVolumeClaim, StorageClass,
};

use crate::framework::{
    ClusterEventKind, ClusterEventObjects, Code, CycleState, EnqueueExtensions, FactoryArgs,
    FilterPlugin, FilterResult, ObjectAction, Plugin, PluginRef, PreBindPlugin, PreFilterPlugin,
    PreFilterResult, PreScorePlugin, QueueingHint, ReservePlugin, ScorePlugin, Status,
};
use crate::node_info::{ClusterObjects, NodeInfo, Snapshot};
use crate::pod_info::PodInfo;
use crate::volume::binder::{
    assume_pod_volumes, find_pod_volumes, get_pod_volume_claims, AssumeCache, PodVolumeClaims,
    PodVolumes, VolumeBindingDecision,
};
use crate::volume::{claim_key, claim_not_found, pod_claims, volume_is_for_pod};

pub const NAME: &str = "VolumeBinding";

/// CycleState key of the [`VolumeBindingDecision`] Reserve records.
pub const DECISION_KEY: &str = "VolumeBinding/decision";

/// PreFilter text when a claim is not bound and not WaitForFirstConsumer.
pub const REASON_UNBOUND_IMMEDIATE: &str = "pod has unbound immediate PersistentVolumeClaims";

/// The plugin; its assume cache is shared by every cycle of the profile.
pub struct VolumeBinding {
    cache: Mutex<AssumeCache>,
}

pub fn new(_: &FactoryArgs<'_>) -> Result<PluginRef, String> {
    Ok(Arc::new(VolumeBinding::new()))
}

impl VolumeBinding {
    pub fn new() -> VolumeBinding {
        VolumeBinding {
            cache: Mutex::new(AssumeCache::new()),
        }
    }

    /// A copy of the assume cache (for tests and reports).
    pub fn assume_cache(&self) -> AssumeCache {
        match self.cache.lock() {
            Ok(c) => c.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    /// Replaces the assume cache (a forked simulation continues with a copy of its trunk's).
    pub fn restore_assume_cache(&self, cache: AssumeCache) {
        self.with_cache(|c| *c = cache);
    }

    fn with_cache<R>(&self, f: impl FnOnce(&mut AssumeCache) -> R) -> R {
        // A poisoned lock only means another thread panicked mid-update; the cache holds plain
        // data, so keep using it.
        let mut guard = match self.cache.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        f(&mut guard)
    }
}

impl Default for VolumeBinding {
    fn default() -> Self {
        VolumeBinding::new()
    }
}

/// The decision Reserve recorded for this cycle, if Reserve ran.
pub fn decision(state: &CycleState) -> Option<&VolumeBindingDecision> {
    state.read::<VolumeBindingDecision>(DECISION_KEY)
}

/// What VolumeBinding's Reserve + PreBind would do if `pod` went to `node`, judged by a fresh
/// instance (its own empty assume cache): PreFilter, Filter on that node, Reserve, PreBind.
/// `Err` is the first non-success status (a rejected pod or node, or an internal error).
pub fn decide_for_node(
    pod: &PodInfo,
    node: &NodeInfo,
    snapshot: &Snapshot,
) -> Result<VolumeBindingDecision, Status> {
    let vb = VolumeBinding::new();
    let mut state = CycleState::new();
    let (_, s) = vb.pre_filter(&mut state, pod, snapshot);
    if s.is_success() {
        let f = vb.filter_status(&state, pod, node);
        if !f.is_success() {
            return Err(f);
        }
    } else if !s.is_skip() {
        return Err(s);
    }
    let r = vb.reserve(&mut state, pod, node.name());
    if !r.is_success() {
        return Err(r);
    }
    let b = vb.pre_bind(&state, pod, node.name());
    if !b.is_success() {
        return Err(b);
    }
    decision(&state)
        .cloned()
        .ok_or_else(|| Status::error("VolumeBinding recorded no decision"))
}

/// Per-cycle state. Shared (not deep-copied) by `CycleState` clones, as upstream's
/// `stateData.Clone` returns the same pointer: Filter records each node's result in it.
#[derive(Clone)]
struct StateData(Arc<StateInner>);

struct StateInner {
    objects: Arc<ClusterObjects>,
    /// `None` when PreFilter skipped (the pod has no claims).
    claims: Option<PodVolumeClaims>,
    /// Node → what the node would need (`podVolumesByNode`); only nodes with something to
    /// bind or provision are recorded.
    by_node: Mutex<BTreeMap<String, PodVolumes>>,
}

impl Plugin for VolumeBinding {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        Some(self)
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
    fn as_reserve(&self) -> Option<&dyn ReservePlugin> {
        Some(self)
    }
    fn as_pre_bind(&self) -> Option<&dyn PreBindPlugin> {
        Some(self)
    }
    fn as_enqueue_extensions(&self) -> Option<&dyn EnqueueExtensions> {
        Some(self)
    }
}

/// `podHasPVCs`: whether the pod uses a claim, or the first problem with one (read from the
/// API objects, not the assume cache).
fn pod_has_pvcs(pod: &PodInfo, objects: &ClusterObjects) -> Result<bool, String> {
    let mut has = false;
    for c in pod_claims(&pod.pod) {
        has = true;
        let key = claim_key(pod.namespace(), &c.claim_name);
        let Some(pvc) = objects.storage.persistent_volume_claims.get(&key) else {
            return Err(if c.ephemeral {
                format!(
                    "waiting for ephemeral volume controller to create the persistentvolumeclaim {:?}",
                    c.claim_name
                )
            } else {
                claim_not_found(&c.claim_name)
            });
        };
        if pvc.status.phase == "Lost" {
            return Err(format!(
                "persistentvolumeclaim {:?} bound to non-existent persistentvolume {:?}",
                pvc.metadata.name, pvc.spec.volume_name
            ));
        }
        if pvc.metadata.deletion_timestamp.is_some() {
            return Err(format!(
                "persistentvolumeclaim {:?} is being deleted",
                pvc.metadata.name
            ));
        }
        if c.ephemeral {
            volume_is_for_pod(&pod.pod, pvc)?;
        }
    }
    Ok(has)
}

impl PreFilterPlugin for VolumeBinding {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let objects = snapshot.objects.clone();
        match pod_has_pvcs(pod, &objects) {
            Err(msg) => return (None, Status::unresolvable(msg)),
            Ok(false) => {
                state.write(
                    NAME,
                    StateData(Arc::new(StateInner {
                        objects,
                        claims: None,
                        by_node: Mutex::new(BTreeMap::new()),
                    })),
                );
                return (None, Status::skip());
            }
            Ok(true) => {}
        }
        let claims = self.with_cache(|cache| {
            cache.prune(&objects.storage);
            get_pod_volume_claims(&pod.pod, &objects.storage, cache)
        });
        let claims = match claims {
            Ok(c) => c,
            Err(e) => return (None, Status::error(e.to_string())),
        };
        if !claims.unbound_immediate.is_empty() {
            return (None, Status::unresolvable(REASON_UNBOUND_IMMEDIATE));
        }
        state.write(
            NAME,
            StateData(Arc::new(StateInner {
                objects,
                claims: Some(claims),
                by_node: Mutex::new(BTreeMap::new()),
            })),
        );
        (None, Status::success())
    }
}

fn read_state(state: &CycleState) -> Result<&StateInner, Status> {
    state
        .read::<StateData>(NAME)
        .map(|s| &*s.0)
        .ok_or_else(|| Status::error(format!("reading {NAME:?} from cycleState: not found")))
}

impl VolumeBinding {
    /// The Filter verdict as a [`Status`] (the trait method boxes a rejection).
    fn filter_status(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let s = match read_state(state) {
            Ok(s) => s,
            Err(e) => return e,
        };
        let Some(claims) = &s.claims else {
            return Status::success();
        };
        let csi_node = s.objects.storage.csi_nodes.get(node.name()).map(|n| &**n);
        let (volumes, reasons) = match find_pod_volumes(claims, &node.node, csi_node) {
            Ok(r) => r,
            Err(e) => return Status::error(e),
        };
        if reasons.any() {
            return Status::with_reasons(
                Code::UnschedulableAndUnresolvable,
                reasons.texts().into_iter().map(Into::into).collect(),
            );
        }
        let mut by_node = match s.by_node.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        if volumes.is_empty() {
            by_node.remove(node.name());
        } else {
            by_node.insert(node.name().to_string(), volumes);
        }
        Status::success()
    }
}

impl FilterPlugin for VolumeBinding {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> FilterResult {
        self.filter_status(state, pod, node).into()
    }
}

impl PreScorePlugin for VolumeBinding {
    fn pre_score(&self, _: &mut CycleState, _: &PodInfo, _: &[&NodeInfo], _: &Snapshot) -> Status {
        // StorageCapacityScoring is alpha and off in v1.35: no scorer, so PreScore skips.
        Status::skip()
    }
}

impl ScorePlugin for VolumeBinding {
    fn score(&self, _: &CycleState, _: &PodInfo, _: &NodeInfo) -> Result<i64, Status> {
        Ok(0)
    }
}

impl ReservePlugin for VolumeBinding {
    fn reserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        let decision = {
            let s = match read_state(state) {
                Ok(s) => s,
                Err(e) => return e,
            };
            match &s.claims {
                None => VolumeBindingDecision {
                    node: node.to_string(),
                    all_bound: true,
                    ..Default::default()
                },
                Some(claims) => {
                    let volumes = {
                        let by_node = match s.by_node.lock() {
                            Ok(g) => g,
                            Err(p) => p.into_inner(),
                        };
                        by_node.get(node).cloned().unwrap_or_default()
                    };
                    let r = self.with_cache(|cache| {
                        assume_pod_volumes(
                            &pod.pod,
                            node,
                            claims,
                            &volumes,
                            &s.objects.storage,
                            cache,
                        )
                    });
                    match r {
                        Ok(d) => d,
                        Err(e) => return Status::error(e),
                    }
                }
            }
        };
        state.write(DECISION_KEY, decision);
        Status::success()
    }

    fn unreserve(&self, state: &mut CycleState, _pod: &PodInfo, node: &str) {
        if let Some(d) = decision(state) {
            if d.node == node {
                self.with_cache(|cache| d.revert(cache));
            }
        }
    }
}

impl PreBindPlugin for VolumeBinding {
    fn pre_bind(&self, state: &CycleState, _pod: &PodInfo, node: &str) -> Status {
        match decision(state) {
            Some(d) if d.node == node => Status::success(),
            _ => Status::error(format!("no pod volumes found for node {node:?}")),
        }
    }
}

impl EnqueueExtensions for VolumeBinding {
    fn events(&self) -> &'static [ClusterEventKind] {
        use ClusterEventKind::{NodeAdd, NodeUpdateLabel, Object};
        use ObjectAction::{Add, Update};
        use ObjectKind::*;
        // Upstream (queueing hints on): StorageClass add/update, PVC add/update, PV
        // add/update, Node add / label update, CSINode add/update, CSIDriver update,
        // CSIStorageCapacity add/update.
        &[
            Object(StorageClass, Add),
            Object(StorageClass, Update),
            Object(PersistentVolumeClaim, Add),
            Object(PersistentVolumeClaim, Update),
            Object(PersistentVolume, Add),
            Object(PersistentVolume, Update),
            NodeAdd,
            NodeUpdateLabel,
            Object(CsiNode, Add),
            Object(CsiNode, Update),
            Object(CsiDriver, Update),
            Object(CsiStorageCapacity, Add),
            Object(CsiStorageCapacity, Update),
        ]
    }

    fn hint(
        &self,
        pod: &PodInfo,
        _kind: ClusterEventKind,
        objects: &ClusterEventObjects<'_>,
    ) -> QueueingHint {
        // Node and PV events have no hint upstream.
        let ClusterEventObjects::Object {
            old,
            new: Some(new),
        } = objects
        else {
            return QueueingHint::Queue;
        };
        match (*old, *new) {
            (_, ApiObject::PersistentVolumeClaim(n)) => hint_pvc_change(pod, n),
            (o, ApiObject::StorageClass(n)) => {
                let o = match o {
                    Some(ApiObject::StorageClass(o)) => Some(o),
                    _ => None,
                };
                hint_storage_class_change(o, n)
            }
            (o, ApiObject::CsiNode(n)) => {
                let o = match o {
                    Some(ApiObject::CsiNode(o)) => Some(o),
                    _ => None,
                };
                hint_csi_node_change(o, n)
            }
            (Some(ApiObject::CsiDriver(o)), ApiObject::CsiDriver(n)) => {
                hint_csi_driver_change(pod, o, n)
            }
            (o, ApiObject::CsiStorageCapacity(n)) => {
                let o = match o {
                    Some(ApiObject::CsiStorageCapacity(o)) => Some(o),
                    _ => None,
                };
                hint_csi_storage_capacity_change(o, n)
            }
            _ => QueueingHint::Queue,
        }
    }
}

/// `isSchedulableAfterPersistentVolumeClaimChange`: a claim of the pod (same namespace, named
/// by one of its `persistentVolumeClaim` or `ephemeral` volumes) was added or updated.
pub fn hint_pvc_change(pod: &PodInfo, new: &PersistentVolumeClaim) -> QueueingHint {
    if pod.namespace() != new.metadata.namespace {
        return QueueingHint::Skip;
    }
    if pod_claims(&pod.pod).any(|c| c.claim_name == new.metadata.name) {
        QueueingHint::Queue
    } else {
        QueueingHint::Skip
    }
}

/// `isSchedulableAfterStorageClassChange`: a new class, or changed `allowedTopologies`.
pub fn hint_storage_class_change(old: Option<&StorageClass>, new: &StorageClass) -> QueueingHint {
    match old {
        None => QueueingHint::Queue,
        Some(o) if o.allowed_topologies != new.allowed_topologies => QueueingHint::Queue,
        Some(_) => QueueingHint::Skip,
    }
}

/// `isSchedulableAfterCSINodeChange`: a new CSINode, or a changed migrated-plugins annotation.
pub fn hint_csi_node_change(old: Option<&CsiNode>, new: &CsiNode) -> QueueingHint {
    let ann = |n: &CsiNode| {
        n.metadata
            .annotations
            .get(ksim_api::storage::ANN_MIGRATED_PLUGINS)
            .cloned()
    };
    match old {
        None => QueueingHint::Queue,
        Some(o) if ann(o) != ann(new) => QueueingHint::Queue,
        Some(_) => QueueingHint::Skip,
    }
}

/// `isSchedulableAfterCSIStorageCapacityChange`: a new capacity, or a larger volume limit.
pub fn hint_csi_storage_capacity_change(
    old: Option<&CsiStorageCapacity>,
    new: &CsiStorageCapacity,
) -> QueueingHint {
    let limit = |c: &CsiStorageCapacity| {
        c.maximum_volume_size
            .as_ref()
            .or(c.capacity.as_ref())
            .map(|q| q.value())
    };
    let Some(old) = old else {
        return QueueingHint::Queue;
    };
    match (limit(old), limit(new)) {
        (_, None) => QueueingHint::Skip,
        (None, Some(_)) => QueueingHint::Queue,
        (Some(o), Some(n)) if n > o => QueueingHint::Queue,
        _ => QueueingHint::Skip,
    }
}

/// `isSchedulableAfterCSIDriverChange`: storage capacity tracking was turned off for a driver
/// one of the pod's inline CSI volumes uses.
pub fn hint_csi_driver_change(pod: &PodInfo, old: &CsiDriver, new: &CsiDriver) -> QueueingHint {
    let uses = pod.pod.spec.volumes.iter().any(|v| {
        v.csi
            .as_ref()
            .and_then(|c| c.get("driver"))
            .and_then(|d| d.as_str())
            == Some(new.metadata.name.as_str())
    });
    if uses && old.spec.storage_capacity == Some(true) && new.spec.storage_capacity != Some(true) {
        QueueingHint::Queue
    } else {
        QueueingHint::Skip
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node_info::StorageObjects;
    use ksim_api::storage::{
        default_persistent_volume, default_persistent_volume_claim, default_storage_class,
        PersistentVolume,
    };
    use ksim_api::{Node, Pod};

    fn node(name: &str, labels: &[(&str, &str)]) -> Arc<Node> {
        let mut n = Node::default();
        n.metadata.name = name.into();
        n.metadata.labels = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        n.metadata
            .labels
            .insert("kubernetes.io/hostname".into(), name.into());
        Arc::new(n)
    }

    fn pod(volumes: &str) -> PodInfo {
        let mut p: Pod = serde_json::from_str(&format!(
            r#"{{"metadata":{{"name":"app","namespace":"default","uid":"uid-default-app"}},
            "spec":{{"containers":[{{"name":"c"}}],"volumes":{volumes}}}}}"#
        ))
        .unwrap();
        ksim_api::defaults::default_pod(&mut p);
        PodInfo::new(p)
    }

    fn pv(
        name: &str,
        size: &str,
        class: &str,
        host: Option<&str>,
        extra: &str,
    ) -> PersistentVolume {
        let aff = host
            .map(|h| {
                format!(
                    r#","nodeAffinity":{{"required":{{"nodeSelectorTerms":[{{"matchExpressions":
                    [{{"key":"kubernetes.io/hostname","operator":"In","values":["{h}"]}}]}}]}}}}"#
                )
            })
            .unwrap_or_default();
        let mut p: PersistentVolume = serde_json::from_str(&format!(
            r#"{{"metadata":{{"name":"{name}"}},"spec":{{"capacity":{{"storage":"{size}"}},
            "accessModes":["ReadWriteOnce"],"storageClassName":"{class}","local":{{"path":"/x"}}{aff}{extra}}},
            "status":{{"phase":"Available"}}}}"#
        ))
        .unwrap();
        default_persistent_volume(&mut p);
        p
    }

    fn pvc(json: &str) -> PersistentVolumeClaim {
        let mut c: PersistentVolumeClaim = serde_json::from_str(json).unwrap();
        default_persistent_volume_claim(&mut c);
        c
    }

    fn class(name: &str, provisioner: &str, mode: &str) -> StorageClass {
        let mut sc: StorageClass = serde_json::from_str(&format!(
            r#"{{"metadata":{{"name":"{name}"}},"provisioner":"{provisioner}","volumeBindingMode":"{mode}"}}"#
        ))
        .unwrap();
        default_storage_class(&mut sc);
        sc
    }

    fn snapshot(
        nodes: Vec<Arc<Node>>,
        pvs: Vec<PersistentVolume>,
        pvcs: Vec<PersistentVolumeClaim>,
        classes: Vec<StorageClass>,
    ) -> Snapshot {
        let mut st = StorageObjects::default();
        for p in pvs {
            st.persistent_volumes
                .insert(p.metadata.name.clone(), Arc::new(p));
        }
        for c in pvcs {
            st.persistent_volume_claims.insert(c.key(), Arc::new(c));
        }
        for c in classes {
            st.storage_classes
                .insert(c.metadata.name.clone(), Arc::new(c));
        }
        let objects = ClusterObjects {
            storage: st,
            ..Default::default()
        };
        Snapshot::build(nodes, Vec::new(), Arc::new(objects))
    }

    /// PreFilter, then Filter on every node: (prefilter status, per-node reasons).
    fn run(
        plugin: &VolumeBinding,
        pod: &PodInfo,
        snap: &Snapshot,
    ) -> (Status, Vec<(String, Vec<String>)>, CycleState) {
        let mut state = CycleState::new();
        let (_, s) = plugin.pre_filter(&mut state, pod, snap);
        let mut out = Vec::new();
        if s.is_success() {
            for n in &snap.nodes {
                let f = plugin.filter(&state, pod, n).into_status();
                out.push((
                    n.name().to_string(),
                    f.reasons.iter().map(|r| r.to_string()).collect(),
                ));
            }
        }
        (s, out, state)
    }

    const CLAIM: &str = r#"[{"name":"v","persistentVolumeClaim":{"claimName":"data"}}]"#;

    #[test]
    fn prefilter_rejections() {
        let cases: Vec<(&str, Vec<PersistentVolumeClaim>, Vec<StorageClass>, &str)> = vec![
            (
                CLAIM,
                vec![pvc(r#"{"metadata":{"name":"data"},"spec":{"storageClassName":"imm"}}"#)],
                vec![class("imm", "x", "Immediate")],
                REASON_UNBOUND_IMMEDIATE,
            ),
            (
                CLAIM,
                vec![pvc(r#"{"metadata":{"name":"data"},"spec":{}}"#)],
                vec![],
                REASON_UNBOUND_IMMEDIATE,
            ),
            (
                // volumeName without bind-completed counts as immediate whatever the class
                CLAIM,
                vec![pvc(r#"{"metadata":{"name":"data"},"spec":{"storageClassName":"w","volumeName":"pv1"}}"#)],
                vec![class("w", "x", "WaitForFirstConsumer")],
                REASON_UNBOUND_IMMEDIATE,
            ),
            (
                CLAIM,
                vec![pvc(r#"{"metadata":{"name":"data"},"spec":{"volumeName":"pv9"},"status":{"phase":"Lost"}}"#)],
                vec![],
                "persistentvolumeclaim \"data\" bound to non-existent persistentvolume \"pv9\"",
            ),
            (
                CLAIM,
                vec![pvc(r#"{"metadata":{"name":"data","deletionTimestamp":"2024-01-01T00:00:00Z"},"spec":{}}"#)],
                vec![],
                "persistentvolumeclaim \"data\" is being deleted",
            ),
            (CLAIM, vec![], vec![], "persistentvolumeclaim \"data\" not found"),
            (
                r#"[{"name":"s","ephemeral":{"volumeClaimTemplate":{}}}]"#,
                vec![],
                vec![],
                "waiting for ephemeral volume controller to create the persistentvolumeclaim \"app-s\"",
            ),
            (
                r#"[{"name":"s","ephemeral":{"volumeClaimTemplate":{}}}]"#,
                vec![pvc(r#"{"metadata":{"name":"app-s"},"spec":{}}"#)],
                vec![],
                "PVC default/app-s was not created for pod default/app (pod is not owner)",
            ),
        ];
        for (vols, pvcs, classes, want) in cases {
            let snap = snapshot(vec![node("n1", &[])], vec![], pvcs, classes);
            let (s, _, _) = run(&VolumeBinding::new(), &pod(vols), &snap);
            assert_eq!(s.code, Code::UnschedulableAndUnresolvable, "{want}");
            assert_eq!(s.message(), want);
        }
    }

    #[test]
    fn no_claims_skips_and_reserve_is_all_bound() {
        let snap = snapshot(vec![node("n1", &[])], vec![], vec![], vec![]);
        let p = pod("[]");
        let vb = VolumeBinding::new();
        let mut state = CycleState::new();
        let (_, s) = vb.pre_filter(&mut state, &p, &snap);
        assert!(s.is_skip());
        assert!(vb.reserve(&mut state, &p, "n1").is_success());
        assert!(decision(&state).unwrap().all_bound);
        assert!(vb.pre_bind(&state, &p, "n1").is_success());
    }

    #[test]
    fn bound_claim_node_affinity() {
        let mut v = pv("pv1", "10Gi", "local", Some("n2"), "");
        v.status.phase = "Bound".into();
        let c = pvc(
            r#"{"metadata":{"name":"data","annotations":{"pv.kubernetes.io/bind-completed":"yes"}},
            "spec":{"volumeName":"pv1","storageClassName":"local"}}"#,
        );
        let snap = snapshot(
            vec![node("n1", &[]), node("n2", &[])],
            vec![v],
            vec![c],
            vec![],
        );
        let (s, per_node, _) = run(&VolumeBinding::new(), &pod(CLAIM), &snap);
        assert!(s.is_success());
        assert_eq!(
            per_node,
            vec![
                (
                    "n1".to_string(),
                    vec![crate::volume::binder::REASON_NODE_CONFLICT.to_string()]
                ),
                ("n2".to_string(), vec![]),
            ]
        );
    }

    #[test]
    fn wffc_smallest_pv_and_reserve_assumes() {
        let pvs = vec![
            pv("pv-big", "50Gi", "wffc", Some("n1"), ""),
            pv("pv-exact", "10Gi", "wffc", Some("n1"), ""),
            pv("pv-small", "5Gi", "wffc", Some("n2"), ""),
        ];
        let c = pvc(
            r#"{"metadata":{"name":"data"},"spec":{"storageClassName":"wffc","accessModes":["ReadWriteOnce"],
            "resources":{"requests":{"storage":"10Gi"}}}}"#,
        );
        let snap = snapshot(
            vec![node("n1", &[]), node("n2", &[])],
            pvs,
            vec![c],
            vec![class(
                "wffc",
                "kubernetes.io/no-provisioner",
                "WaitForFirstConsumer",
            )],
        );
        let vb = VolumeBinding::new();
        let p = pod(CLAIM);
        let (s, per_node, mut state) = run(&vb, &p, &snap);
        assert!(s.is_success());
        assert_eq!(per_node[0].1, Vec::<String>::new());
        assert_eq!(
            per_node[1].1,
            vec![crate::volume::binder::REASON_BIND_CONFLICT.to_string()]
        );
        assert!(vb.reserve(&mut state, &p, "n1").is_success());
        let d = decision(&state).unwrap().clone();
        assert!(!d.all_bound);
        assert_eq!(d.static_bindings.len(), 1);
        assert_eq!(d.static_bindings[0].pv, "pv-exact");
        let r = d.static_bindings[0]
            .updated_pv
            .spec
            .claim_ref
            .as_ref()
            .unwrap();
        assert_eq!((r.namespace.as_str(), r.name.as_str()), ("default", "data"));
        // The next cycle sees pv-exact as taken: another claim of the same size gets pv-big.
        let cache = vb.assume_cache();
        assert!(!cache.is_empty());
        assert!(cache
            .pv(&snap.objects.storage, "pv-exact")
            .unwrap()
            .spec
            .claim_ref
            .is_some());
        // Unreserve reverts.
        vb.unreserve(&mut state, &p, "n1");
        assert!(vb.assume_cache().is_empty());
    }

    #[test]
    fn provisioning_topology_and_selected_node() {
        let mut sc = class("csi", "csi.example.com", "WaitForFirstConsumer");
        sc.allowed_topologies =
            serde_json::from_str(r#"[{"matchLabelExpressions":[{"key":"zone","values":["a"]}]}]"#)
                .unwrap();
        let c = pvc(
            r#"{"metadata":{"name":"data"},"spec":{"storageClassName":"csi",
            "resources":{"requests":{"storage":"1Gi"}}}}"#,
        );
        let snap = snapshot(
            vec![node("n1", &[("zone", "a")]), node("n2", &[("zone", "b")])],
            vec![],
            vec![c],
            vec![sc.clone()],
        );
        let vb = VolumeBinding::new();
        let p = pod(CLAIM);
        let (_, per_node, mut state) = run(&vb, &p, &snap);
        assert!(per_node[0].1.is_empty());
        assert_eq!(
            per_node[1].1,
            vec![crate::volume::binder::REASON_BIND_CONFLICT.to_string()]
        );
        assert!(vb.reserve(&mut state, &p, "n1").is_success());
        let d = decision(&state).unwrap();
        assert_eq!(d.provisioned_claims.len(), 1);
        assert_eq!(
            d.provisioned_claims[0].updated_pvc.metadata.annotations
                [ksim_api::storage::ANN_SELECTED_NODE],
            "n1"
        );
        // A claim already annotated for n2 only fits n2.
        let c = pvc(
            r#"{"metadata":{"name":"data","annotations":{"volume.kubernetes.io/selected-node":"n2"}},
            "spec":{"storageClassName":"csi"}}"#,
        );
        sc.allowed_topologies.clear();
        let snap = snapshot(
            vec![node("n1", &[]), node("n2", &[])],
            vec![],
            vec![c],
            vec![sc],
        );
        let (_, per_node, _) = run(&VolumeBinding::new(), &p, &snap);
        assert!(!per_node[0].1.is_empty());
        assert!(per_node[1].1.is_empty());
    }

    #[test]
    fn hints() {
        let p = pod(CLAIM);
        let c = pvc(r#"{"metadata":{"name":"data"},"spec":{}}"#);
        assert_eq!(hint_pvc_change(&p, &c), QueueingHint::Queue);
        let other = pvc(r#"{"metadata":{"name":"other"},"spec":{}}"#);
        assert_eq!(hint_pvc_change(&p, &other), QueueingHint::Skip);
        let sc = class("a", "x", "Immediate");
        assert_eq!(hint_storage_class_change(None, &sc), QueueingHint::Queue);
        assert_eq!(
            hint_storage_class_change(Some(&sc), &sc),
            QueueingHint::Skip
        );
    }

    #[test]
    fn object_events_reach_the_hints() {
        use ksim_api::object::ApiObject;
        let vb = VolumeBinding::new();
        let p = pod(CLAIM);
        let ev = |kind: ObjectKind, action: ObjectAction| ClusterEventKind::Object(kind, action);
        let registered = |k: ClusterEventKind| vb.events().iter().any(|e| e.covers(k));
        assert!(registered(ev(
            ObjectKind::PersistentVolume,
            ObjectAction::Add
        )));
        assert!(registered(ev(ObjectKind::CsiDriver, ObjectAction::Update)));
        assert!(!registered(ev(ObjectKind::CsiDriver, ObjectAction::Add)));
        assert!(!registered(ev(
            ObjectKind::PersistentVolume,
            ObjectAction::Delete
        )));
        assert!(!registered(ev(
            ObjectKind::PodDisruptionBudget,
            ObjectAction::Add
        )));
        let mine =
            ApiObject::PersistentVolumeClaim(pvc(r#"{"metadata":{"name":"data"},"spec":{}}"#));
        let other = ApiObject::PersistentVolumeClaim(pvc(r#"{"metadata":{"name":"x"},"spec":{}}"#));
        let hint = |o: &ApiObject| {
            vb.hint(
                &p,
                ev(ObjectKind::PersistentVolumeClaim, ObjectAction::Add),
                &ClusterEventObjects::Object {
                    old: None,
                    new: Some(o),
                },
            )
        };
        assert_eq!(hint(&mine), QueueingHint::Queue);
        assert_eq!(hint(&other), QueueingHint::Skip);
        let sc = ApiObject::StorageClass(class("a", "x", "Immediate"));
        let same = vb.hint(
            &p,
            ev(ObjectKind::StorageClass, ObjectAction::Update),
            &ClusterEventObjects::Object {
                old: Some(&sc),
                new: Some(&sc),
            },
        );
        assert_eq!(same, QueueingHint::Skip);
    }
}
