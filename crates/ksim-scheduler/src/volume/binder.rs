//! The volume binder VolumeBinding drives (upstream `volumebinding/binder.go`) and its PV/PVC
//! assume cache (`assume_cache.go`).
//!
//! - PreFilter: [`get_pod_volume_claims`] splits the pod's claims into bound, unbound with
//!   delayed binding (WaitForFirstConsumer) and unbound immediate, and compiles everything the
//!   per-node step needs (candidate PVs and their node affinity, provisioning checks), once.
//! - Filter: [`find_pod_volumes`] judges one node: bound PVs' node affinity, static matching of
//!   the delayed claims (`FindMatchingVolume`), and dynamic provisioning (`allowedTopologies`,
//!   CSIStorageCapacity).
//! - Reserve: [`assume_pod_volumes`] records the node's choice in the [`AssumeCache`] and
//!   returns the [`VolumeBindingDecision`] PreBind reports.

use std::collections::BTreeMap;
use std::sync::Arc;

use ksim_api::storage::{
    CsiNode, ObjectReference, PersistentVolume, PersistentVolumeClaim, StorageClass,
    TopologySelectorTerm, ANN_BOUND_BY_CONTROLLER, ANN_SELECTED_NODE, NOT_SUPPORTED_PROVISIONER,
};
use ksim_api::{Labels, Node, Pod, Quantity, Selector};

use crate::node_info::StorageObjects;
use crate::volume::affinity::{match_topology_terms, PvAffinity};
use crate::volume::translate::{binding_migration_on, pv_plugin, translated_pv_affinity};
use crate::volume::{claim_key, pod_claims, volume_is_for_pod};

/// A bound claim's PV does not match the node's labels.
pub const REASON_NODE_CONFLICT: &str = "node(s) didn't match PersistentVolume's node affinity";
/// No PV could be matched or provisioned for an unbound claim.
pub const REASON_BIND_CONFLICT: &str = "node(s) didn't find available persistent volumes to bind";
/// Provisioning is possible but no CSIStorageCapacity has room.
pub const REASON_NOT_ENOUGH_SPACE: &str = "node(s) did not have enough free storage";
/// A bound claim names a PV that does not exist.
pub const REASON_PV_NOT_EXIST: &str =
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)";

// ---- assume cache ------------------------------------------------------------------------

/// An assumed object and the API object it was derived from.
#[derive(Debug, Clone)]
struct Assumed<T> {
    base: Arc<T>,
    latest: Arc<T>,
}

impl<T: PartialEq> Assumed<T> {
    /// Whether the API object is still the one this assumption was made on. Upstream drops an
    /// assumed object when the informer delivers a newer version; a changed API object is the
    /// same signal here.
    fn current(&self, api: &Arc<T>) -> bool {
        Arc::ptr_eq(&self.base, api) || *self.base == **api
    }
}

/// The PV and PVC assume caches: objects Reserve changed in memory before the API writes of
/// PreBind (and the PV controller's reaction) arrive.
///
/// A lookup returns the assumed object while the API object it was derived from is unchanged,
/// and the API object otherwise; a deleted API object hides its assumed copy.
#[derive(Debug, Clone, Default)]
pub struct AssumeCache {
    pvs: BTreeMap<String, Assumed<PersistentVolume>>,
    pvcs: BTreeMap<String, Assumed<PersistentVolumeClaim>>,
}

impl AssumeCache {
    pub fn new() -> AssumeCache {
        AssumeCache::default()
    }

    /// Whether nothing is assumed.
    pub fn is_empty(&self) -> bool {
        self.pvs.is_empty() && self.pvcs.is_empty()
    }

    /// The PV as the scheduler sees it (`pvCache.GetPV`).
    pub fn pv(&self, objects: &StorageObjects, name: &str) -> Option<Arc<PersistentVolume>> {
        let api = objects.persistent_volumes.get(name)?;
        Some(match self.pvs.get(name) {
            Some(a) if a.current(api) => a.latest.clone(),
            _ => api.clone(),
        })
    }

    /// The claim as the scheduler sees it (`pvcCache.GetPVC`), by `namespace/name`.
    pub fn pvc(&self, objects: &StorageObjects, key: &str) -> Option<Arc<PersistentVolumeClaim>> {
        let api = objects.persistent_volume_claims.get(key)?;
        Some(match self.pvcs.get(key) {
            Some(a) if a.current(api) => a.latest.clone(),
            _ => api.clone(),
        })
    }

    /// Every PV of a class, in name order (`pvCache.ListPVs`).
    pub fn list_pvs(&self, objects: &StorageObjects, class: &str) -> Vec<Arc<PersistentVolume>> {
        objects
            .persistent_volumes
            .iter()
            .map(|(name, api)| match self.pvs.get(name) {
                Some(a) if a.current(api) => a.latest.clone(),
                _ => api.clone(),
            })
            .filter(|pv| pv.class() == class)
            .collect()
    }

    /// `pvCache.Assume`: the PV must exist in the API objects.
    pub fn assume_pv(
        &mut self,
        objects: &StorageObjects,
        pv: PersistentVolume,
    ) -> Result<(), String> {
        let name = pv.metadata.name.clone();
        let api = objects
            .persistent_volumes
            .get(&name)
            .ok_or_else(|| format!("PersistentVolume {name:?} not found in the cache"))?;
        let base = match self.pvs.get(&name) {
            Some(a) if a.current(api) => a.base.clone(),
            _ => api.clone(),
        };
        self.pvs.insert(
            name,
            Assumed {
                base,
                latest: Arc::new(pv),
            },
        );
        Ok(())
    }

    /// `pvcCache.Assume`: the claim must exist in the API objects.
    pub fn assume_pvc(
        &mut self,
        objects: &StorageObjects,
        pvc: PersistentVolumeClaim,
    ) -> Result<(), String> {
        let key = pvc.key();
        let api = objects
            .persistent_volume_claims
            .get(&key)
            .ok_or_else(|| format!("PersistentVolumeClaim {key:?} not found in the cache"))?;
        let base = match self.pvcs.get(&key) {
            Some(a) if a.current(api) => a.base.clone(),
            _ => api.clone(),
        };
        self.pvcs.insert(
            key,
            Assumed {
                base,
                latest: Arc::new(pvc),
            },
        );
        Ok(())
    }

    /// `pvCache.Restore`: back to the API object.
    pub fn restore_pv(&mut self, name: &str) {
        self.pvs.remove(name);
    }

    /// `pvcCache.Restore`.
    pub fn restore_pvc(&mut self, key: &str) {
        self.pvcs.remove(key);
    }

    /// Drops assumptions whose API object changed or disappeared (they are never used again).
    pub fn prune(&mut self, objects: &StorageObjects) {
        self.pvs.retain(|name, a| {
            objects
                .persistent_volumes
                .get(name)
                .is_some_and(|api| a.current(api))
        });
        self.pvcs.retain(|key, a| {
            objects
                .persistent_volume_claims
                .get(key)
                .is_some_and(|api| a.current(api))
        });
    }
}

// ---- PreFilter: GetPodVolumeClaims ---------------------------------------------------------

/// A bound claim and its PV (resolved through the assume cache at PreFilter).
#[derive(Debug, Clone)]
pub struct BoundClaim {
    pub pvc: Arc<PersistentVolumeClaim>,
    /// `None`: the PV does not exist.
    pv: Option<BoundPv>,
}

#[derive(Debug, Clone)]
struct BoundPv {
    affinity: PvAffinity,
    /// For an in-tree PV: its plugin and the affinity after CSI translation (used on nodes
    /// whose CSINode lists the plugin as migrated).
    migrated: Option<(&'static str, Result<PvAffinity, String>)>,
}

/// An unbound claim of a WaitForFirstConsumer class.
#[derive(Debug, Clone)]
pub struct UnboundClaim {
    pub pvc: Arc<PersistentVolumeClaim>,
    class: String,
    selected_node: Option<String>,
    /// `None`: no selector (every PV label set matches).
    selector: Option<Selector>,
    request: Quantity,
    provision: ProvisionCheck,
}

/// What `checkVolumeProvisions` needs of a claim, resolved at PreFilter.
#[derive(Debug, Clone)]
enum ProvisionCheck {
    NoClass,
    ClassMissing(String),
    /// No provisioner or `kubernetes.io/no-provisioner`.
    NotSupported,
    Provisionable {
        allowed_topologies: Vec<TopologySelectorTerm>,
        /// `None`: no capacity check (no request, no CSIDriver, or storageCapacity off).
        /// `Some(selectors)`: the `nodeTopology` of every CSIStorageCapacity of the class
        /// that is large enough; the node must match one.
        capacity: Option<Vec<Selector>>,
    },
}

/// A candidate PV for static matching, with its node affinity compiled.
#[derive(Debug, Clone)]
struct Candidate {
    pv: Arc<PersistentVolume>,
    affinity: PvAffinity,
    capacity: Quantity,
}

/// The pod's claims as PreFilter classified them (`PodVolumeClaims`).
#[derive(Debug, Clone, Default)]
pub struct PodVolumeClaims {
    pub bound: Vec<BoundClaim>,
    pub unbound_delay: Vec<UnboundClaim>,
    /// Unbound claims that are not WaitForFirstConsumer (or have `volumeName` without the
    /// bind-completed annotation): PreFilter rejects the pod when there is any.
    pub unbound_immediate: Vec<Arc<PersistentVolumeClaim>>,
    /// PVs of the delayed claims' classes, by class (`unboundVolumesDelayBinding`).
    candidates: BTreeMap<String, Vec<Candidate>>,
}

/// A PreFilter failure of the binder (upstream returns an error, hence an `Error` status).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BinderError {
    #[error("error getting PVC {0:?}: persistentvolumeclaim {1:?} not found")]
    ClaimNotFound(String, String),
    #[error("{0}")]
    Ephemeral(String),
    #[error("VolumeBindingMode not set for StorageClass {0:?}")]
    NoBindingMode(String),
}

/// `IsDelayBindingMode`: the claim's class exists and is WaitForFirstConsumer.
fn is_delay_binding(
    pvc: &PersistentVolumeClaim,
    objects: &StorageObjects,
) -> Result<bool, BinderError> {
    let class = pvc.class();
    if class.is_empty() {
        return Ok(false);
    }
    let Some(sc) = objects.storage_classes.get(class) else {
        return Ok(false);
    };
    match sc.volume_binding_mode.as_deref() {
        None => Err(BinderError::NoBindingMode(class.to_string())),
        Some(m) => Ok(m == ksim_api::storage::BINDING_WAIT_FOR_FIRST_CONSUMER),
    }
}

/// `GetPodVolumeClaims`, plus the per-cycle precomputation of everything Filter reads.
pub fn get_pod_volume_claims(
    pod: &Pod,
    objects: &StorageObjects,
    cache: &AssumeCache,
) -> Result<PodVolumeClaims, BinderError> {
    let mut out = PodVolumeClaims::default();
    for c in pod_claims(pod) {
        let key = claim_key(&pod.metadata.namespace, &c.claim_name);
        let pvc = cache
            .pvc(objects, &key)
            .ok_or_else(|| BinderError::ClaimNotFound(key.clone(), c.claim_name.to_string()))?;
        if c.ephemeral {
            volume_is_for_pod(pod, &pvc).map_err(BinderError::Ephemeral)?;
        }
        if pvc.is_fully_bound() {
            let pv = cache.pv(objects, &pvc.spec.volume_name).map(|pv| BoundPv {
                affinity: PvAffinity::new(
                    pv.spec
                        .node_affinity
                        .as_ref()
                        .and_then(|a| a.required.as_ref()),
                ),
                migrated: pv_plugin(&pv).map(|plugin| {
                    let t = translated_pv_affinity(&pv)
                        .map(|ns| PvAffinity::new(ns.as_ref()))
                        .map_err(|e| format!("could not translate pv: {e}"));
                    (plugin, t)
                }),
            });
            out.bound.push(BoundClaim { pvc, pv });
            continue;
        }
        // A claim with volumeName but not fully bound is treated as immediate ("prebound").
        if is_delay_binding(&pvc, objects)? && pvc.spec.volume_name.is_empty() {
            out.unbound_delay.push(unbound_claim(pvc, objects));
        } else {
            out.unbound_immediate.push(pvc);
        }
    }
    for c in &out.unbound_delay {
        if out.candidates.contains_key(&c.class) {
            continue;
        }
        let cands = cache
            .list_pvs(objects, &c.class)
            .into_iter()
            .map(|pv| Candidate {
                affinity: PvAffinity::new(
                    pv.spec
                        .node_affinity
                        .as_ref()
                        .and_then(|a| a.required.as_ref()),
                ),
                capacity: pv.storage_capacity(),
                pv,
            })
            .collect();
        out.candidates.insert(c.class.clone(), cands);
    }
    Ok(out)
}

fn unbound_claim(pvc: Arc<PersistentVolumeClaim>, objects: &StorageObjects) -> UnboundClaim {
    let class = pvc.class().to_string();
    let (request, has_request) = match pvc.storage_request() {
        Some(q) => (q.clone(), true),
        None => (Quantity::from_value(0), false),
    };
    let provision = provision_check(&class, &request, has_request, objects);
    UnboundClaim {
        selected_node: pvc.metadata.annotations.get(ANN_SELECTED_NODE).cloned(),
        selector: pvc
            .spec
            .selector
            .as_ref()
            .map(|s| Selector::from_label_selector(Some(s))),
        class,
        request,
        provision,
        pvc,
    }
}

fn provision_check(
    class: &str,
    request: &Quantity,
    has_request: bool,
    objects: &StorageObjects,
) -> ProvisionCheck {
    if class.is_empty() {
        return ProvisionCheck::NoClass;
    }
    let Some(sc) = objects.storage_classes.get(class) else {
        return ProvisionCheck::ClassMissing(class.to_string());
    };
    if sc.provisioner.is_empty() || sc.provisioner == NOT_SUPPORTED_PROVISIONER {
        return ProvisionCheck::NotSupported;
    }
    ProvisionCheck::Provisionable {
        allowed_topologies: sc.allowed_topologies.clone(),
        capacity: capacity_check(sc, request, has_request, objects),
    }
}

/// `hasEnoughCapacity`, minus the per-node `nodeHasAccess` part.
fn capacity_check(
    sc: &StorageClass,
    request: &Quantity,
    has_request: bool,
    objects: &StorageObjects,
) -> Option<Vec<Selector>> {
    if !has_request {
        return None;
    }
    let driver = objects.csi_drivers.get(&sc.provisioner)?;
    if driver.spec.storage_capacity != Some(true) {
        return None;
    }
    let size = request.value();
    Some(
        objects
            .csi_storage_capacities
            .values()
            .filter(|c| c.storage_class_name == sc.metadata.name)
            .filter(|c| {
                // `maximumVolumeSize` is more precise than `capacity` when set.
                c.maximum_volume_size
                    .as_ref()
                    .or(c.capacity.as_ref())
                    .is_some_and(|limit| limit.value() >= size)
            })
            // A capacity without `nodeTopology` is reachable from no node.
            .filter_map(|c| {
                c.node_topology
                    .as_ref()
                    .map(|t| Selector::from_label_selector(Some(t)))
            })
            .collect(),
    )
}

// ---- Filter: FindPodVolumes ----------------------------------------------------------------

/// What a node would need for the pod's volumes (`PodVolumes`): indices into
/// [`PodVolumeClaims::unbound_delay`].
#[derive(Debug, Clone, Default)]
pub struct PodVolumes {
    /// (claim index, chosen PV), in the order the claims were matched (smallest request first).
    pub static_bindings: Vec<(usize, Arc<PersistentVolume>)>,
    pub dynamic_provisions: Vec<usize>,
}

impl PodVolumes {
    pub fn is_empty(&self) -> bool {
        self.static_bindings.is_empty() && self.dynamic_provisions.is_empty()
    }
}

/// Why a node cannot take the pod's volumes, in upstream's reason order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ConflictReasons {
    pub node_conflict: bool,
    pub bind_conflict: bool,
    pub not_enough_space: bool,
    pub pv_not_exist: bool,
}

impl ConflictReasons {
    pub fn any(&self) -> bool {
        self.node_conflict || self.bind_conflict || self.not_enough_space || self.pv_not_exist
    }

    /// The reason texts, in upstream's order.
    pub fn texts(&self) -> Vec<&'static str> {
        let mut v = Vec::with_capacity(4);
        if self.node_conflict {
            v.push(REASON_NODE_CONFLICT);
        }
        if self.bind_conflict {
            v.push(REASON_BIND_CONFLICT);
        }
        if self.not_enough_space {
            v.push(REASON_NOT_ENOUGH_SPACE);
        }
        if self.pv_not_exist {
            v.push(REASON_PV_NOT_EXIST);
        }
        v
    }
}

/// `FindPodVolumes` for one node. `Err` is an internal error (Filter's `Error` status).
pub fn find_pod_volumes(
    claims: &PodVolumeClaims,
    node: &Node,
    csi_node: Option<&CsiNode>,
) -> Result<(PodVolumes, ConflictReasons), String> {
    let mut pv = PodVolumes::default();
    let mut reasons = ConflictReasons::default();
    let labels = &node.metadata.labels;

    if !claims.bound.is_empty() {
        let (satisfied, found) = check_bound_claims(&claims.bound, labels, csi_node)?;
        reasons.node_conflict = !satisfied;
        reasons.pv_not_exist = !found;
    }

    if claims.unbound_delay.is_empty() {
        return Ok((pv, reasons));
    }
    let mut to_match: Vec<usize> = Vec::new();
    let mut to_provision: Vec<usize> = Vec::new();
    for (i, c) in claims.unbound_delay.iter().enumerate() {
        match &c.selected_node {
            Some(n) if *n != node.metadata.name => {
                // Fast path: the claim is already being provisioned for another node.
                reasons.bind_conflict = true;
                return Ok((pv, reasons));
            }
            Some(_) => to_provision.push(i),
            None => to_match.push(i),
        }
    }
    if !to_match.is_empty() {
        let (found, unmatched) = find_matching_volumes(claims, to_match, labels, &mut pv)?;
        reasons.bind_conflict = !found;
        to_provision.extend(unmatched);
    }
    if !to_provision.is_empty() {
        let (satisfied, sufficient) =
            check_volume_provisions(claims, &to_provision, labels, &mut pv)?;
        reasons.bind_conflict = !satisfied;
        reasons.not_enough_space = !sufficient;
    }
    Ok((pv, reasons))
}

/// `checkBoundClaims`: (node affinity satisfied, every PV found). Stops at the first problem.
fn check_bound_claims(
    bound: &[BoundClaim],
    labels: &Labels,
    csi_node: Option<&CsiNode>,
) -> Result<(bool, bool), String> {
    for c in bound {
        let Some(pv) = &c.pv else {
            return Ok((true, false));
        };
        let affinity = match &pv.migrated {
            Some((plugin, translated)) if binding_migration_on(csi_node, plugin) => {
                translated.as_ref().map_err(Clone::clone)?
            }
            _ => &pv.affinity,
        };
        if !affinity.matches(labels) {
            return Ok((false, true));
        }
    }
    Ok((true, true))
}

/// `findMatchingVolumes`: claims by increasing request, each taking the best PV no earlier
/// claim took. Returns (all matched, the unmatched claims).
fn find_matching_volumes(
    claims: &PodVolumeClaims,
    mut to_match: Vec<usize>,
    labels: &Labels,
    out: &mut PodVolumes,
) -> Result<(bool, Vec<usize>), String> {
    // Upstream's sort is not stable in general, but with the handful of claims a pod has it
    // is an insertion sort, which is.
    to_match.sort_by(|&a, &b| {
        cmp_quantity(
            &claims.unbound_delay[a].request,
            &claims.unbound_delay[b].request,
        )
    });
    let mut found = true;
    let mut unmatched = Vec::new();
    let mut chosen: Vec<&str> = Vec::new();
    for i in to_match {
        let claim = &claims.unbound_delay[i];
        let cands = claims
            .candidates
            .get(&claim.class)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        match find_matching_volume(claim, cands, labels, &chosen) {
            None => {
                unmatched.push(i);
                found = false;
            }
            Some(c) => {
                chosen.push(&c.pv.metadata.name);
                out.static_bindings.push((i, c.pv.clone()));
            }
        }
    }
    Ok((found, unmatched))
}

fn cmp_quantity(a: &Quantity, b: &Quantity) -> std::cmp::Ordering {
    a.value()
        .cmp(&b.value())
        .then(a.milli_value().cmp(&b.milli_value()))
}

/// `IsVolumeBoundToClaim`: the PV's claimRef names the claim (and its UID, when set).
pub fn is_volume_bound_to_claim(pv: &PersistentVolume, pvc: &PersistentVolumeClaim) -> bool {
    let Some(r) = &pv.spec.claim_ref else {
        return false;
    };
    r.name == pvc.metadata.name
        && r.namespace == pvc.metadata.namespace
        && (r.uid.is_empty() || r.uid == pvc.metadata.uid)
}

/// `FindMatchingVolume` (scheduler path: node set, delayBinding true).
fn find_matching_volume<'a>(
    claim: &UnboundClaim,
    cands: &'a [Candidate],
    labels: &Labels,
    excluded: &[&str],
) -> Option<&'a Candidate> {
    let pvc = &*claim.pvc;
    let claim_vac = pvc
        .spec
        .volume_attributes_class_name
        .as_deref()
        .unwrap_or("");
    let mut smallest: Option<&Candidate> = None;
    for c in cands {
        let pv = &*c.pv;
        if excluded.contains(&pv.metadata.name.as_str()) {
            continue;
        }
        if pv.spec.claim_ref.is_some() && !is_volume_bound_to_claim(pv, pvc) {
            continue;
        }
        if cmp_quantity(&c.capacity, &claim.request).is_lt() {
            continue;
        }
        if pv.volume_mode() != pvc.volume_mode() {
            continue;
        }
        if pv.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let affinity_ok = c.affinity.matches(labels);
        if is_volume_bound_to_claim(pv, pvc) {
            // A PV pre-bound to this claim ends the search either way.
            return affinity_ok.then_some(c);
        }
        if pv.status.phase != "Available" {
            continue;
        }
        if let Some(sel) = &claim.selector {
            if !sel.matches(&pv.metadata.labels) {
                continue;
            }
        }
        if pv.class() != claim.class {
            continue;
        }
        if pv
            .spec
            .volume_attributes_class_name
            .as_deref()
            .unwrap_or("")
            != claim_vac
        {
            continue;
        }
        if !affinity_ok {
            continue;
        }
        if !pvc
            .spec
            .access_modes
            .iter()
            .all(|m| pv.spec.access_modes.contains(m))
        {
            continue;
        }
        if smallest.is_none_or(|s| cmp_quantity(&s.capacity, &c.capacity).is_gt()) {
            smallest = Some(c);
        }
    }
    smallest
}

/// `checkVolumeProvisions`: (provisioning possible, storage sufficient). Stops at the first
/// claim that cannot be provisioned; on success the claims become dynamic provisions.
fn check_volume_provisions(
    claims: &PodVolumeClaims,
    to_provision: &[usize],
    labels: &Labels,
    out: &mut PodVolumes,
) -> Result<(bool, bool), String> {
    for &i in to_provision {
        let c = &claims.unbound_delay[i];
        match &c.provision {
            ProvisionCheck::NoClass => {
                return Err(format!("no class for claim {:?}", c.pvc.key()));
            }
            ProvisionCheck::ClassMissing(name) => {
                return Err(format!("failed to find storage class {name:?}"));
            }
            ProvisionCheck::NotSupported => return Ok((false, true)),
            ProvisionCheck::Provisionable {
                allowed_topologies,
                capacity,
            } => {
                if !match_topology_terms(allowed_topologies, labels) {
                    return Ok((false, true));
                }
                if let Some(sels) = capacity {
                    if !sels.iter().any(|s| s.matches(labels)) {
                        return Ok((true, false));
                    }
                }
            }
        }
    }
    out.dynamic_provisions.extend_from_slice(to_provision);
    Ok((true, true))
}

// ---- Reserve: AssumePodVolumes -------------------------------------------------------------

/// One PV PreBind updates: `spec.claimRef` now names the claim.
#[derive(Debug, Clone, PartialEq)]
pub struct StaticBinding {
    /// The claim, `namespace/name`.
    pub pvc: String,
    pub pv: String,
    /// The PV as PreBind writes it.
    pub updated_pv: PersistentVolume,
}

/// One claim PreBind hands to the provisioner with `volume.kubernetes.io/selected-node`.
#[derive(Debug, Clone, PartialEq)]
pub struct ProvisionedClaim {
    /// `namespace/name`.
    pub pvc: String,
    /// The claim as PreBind writes it.
    pub updated_pvc: PersistentVolumeClaim,
}

/// What VolumeBinding decided at Reserve for the chosen node, and what PreBind writes.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct VolumeBindingDecision {
    pub node: String,
    /// Every claim was already bound: nothing to write.
    pub all_bound: bool,
    pub static_bindings: Vec<StaticBinding>,
    pub provisioned_claims: Vec<ProvisionedClaim>,
}

impl VolumeBindingDecision {
    /// Applies PreBind's API writes to the storage objects (the updated PVs and claims).
    /// Objects that disappeared meanwhile are skipped, as the API update would fail.
    pub fn apply_prebind(&self, objects: &mut StorageObjects) {
        for b in &self.static_bindings {
            if let Some(pv) = objects.persistent_volumes.get_mut(&b.pv) {
                *pv = Arc::new(b.updated_pv.clone());
            }
        }
        for p in &self.provisioned_claims {
            if let Some(pvc) = objects.persistent_volume_claims.get_mut(&p.pvc) {
                *pvc = Arc::new(p.updated_pvc.clone());
            }
        }
    }

    /// Undoes the Reserve assumptions (`RevertAssumedPodVolumes`).
    pub fn revert(&self, cache: &mut AssumeCache) {
        for b in &self.static_bindings {
            cache.restore_pv(&b.pv);
        }
        for p in &self.provisioned_claims {
            cache.restore_pvc(&p.pvc);
        }
    }
}

/// `arePodVolumesBound`: every claim of the pod is fully bound in the assume cache.
pub fn are_pod_volumes_bound(pod: &Pod, objects: &StorageObjects, cache: &AssumeCache) -> bool {
    pod_claims(pod).all(|c| {
        let key = claim_key(&pod.metadata.namespace, &c.claim_name);
        match cache.pvc(objects, &key) {
            None => false,
            Some(pvc) => {
                (!c.ephemeral || volume_is_for_pod(pod, &pvc).is_ok()) && pvc.is_fully_bound()
            }
        }
    })
}

/// `GetBindVolumeToClaim`: the PV with `claimRef` set to the claim, and whether it changed.
pub fn bind_volume_to_claim(
    pv: &PersistentVolume,
    pvc: &PersistentVolumeClaim,
) -> (PersistentVolume, bool) {
    let mut dirty = false;
    let set_bound_by_controller = !is_volume_bound_to_claim(pv, pvc);
    let mut out = pv.clone();
    let same = pv.spec.claim_ref.as_ref().is_some_and(|r| {
        r.name == pvc.metadata.name
            && r.namespace == pvc.metadata.namespace
            && r.uid == pvc.metadata.uid
    });
    if !same {
        out.spec.claim_ref = Some(ObjectReference {
            kind: "PersistentVolumeClaim".into(),
            namespace: pvc.metadata.namespace.clone(),
            name: pvc.metadata.name.clone(),
            uid: pvc.metadata.uid.clone(),
            api_version: "v1".into(),
            resource_version: String::new(),
        });
        dirty = true;
    }
    if set_bound_by_controller
        && !out
            .metadata
            .annotations
            .contains_key(ANN_BOUND_BY_CONTROLLER)
    {
        out.metadata
            .annotations
            .insert(ANN_BOUND_BY_CONTROLLER.into(), "yes".into());
        dirty = true;
    }
    (out, dirty)
}

/// `AssumePodVolumes`: records the node's bindings and provisions in the assume cache and
/// returns the decision. On error nothing stays assumed.
pub fn assume_pod_volumes(
    pod: &Pod,
    node: &str,
    claims: &PodVolumeClaims,
    pod_volumes: &PodVolumes,
    objects: &StorageObjects,
    cache: &mut AssumeCache,
) -> Result<VolumeBindingDecision, String> {
    let mut decision = VolumeBindingDecision {
        node: node.to_string(),
        ..Default::default()
    };
    if are_pod_volumes_bound(pod, objects, cache) {
        decision.all_bound = true;
        return Ok(decision);
    }
    for (i, pv) in &pod_volumes.static_bindings {
        let pvc = &claims.unbound_delay[*i].pvc;
        let (new_pv, dirty) = bind_volume_to_claim(pv, pvc);
        if dirty {
            if let Err(e) = cache.assume_pv(objects, new_pv.clone()) {
                decision.revert(cache);
                return Err(e);
            }
        }
        decision.static_bindings.push(StaticBinding {
            pvc: pvc.key(),
            pv: new_pv.metadata.name.clone(),
            updated_pv: new_pv,
        });
    }
    for &i in &pod_volumes.dynamic_provisions {
        let mut claim = (*claims.unbound_delay[i].pvc).clone();
        claim
            .metadata
            .annotations
            .insert(ANN_SELECTED_NODE.into(), node.to_string());
        if let Err(e) = cache.assume_pvc(objects, claim.clone()) {
            decision.revert(cache);
            return Err(e);
        }
        decision.provisioned_claims.push(ProvisionedClaim {
            pvc: claim.key(),
            updated_pvc: claim,
        });
    }
    Ok(decision)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::volume::controller;

    fn pv(name: &str, size: &str) -> PersistentVolume {
        serde_json::from_str(&format!(
            r#"{{"metadata":{{"name":"{name}"}},"spec":{{"capacity":{{"storage":"{size}"}},
            "accessModes":["ReadWriteOnce"],"storageClassName":"wffc","volumeMode":"Filesystem"}},
            "status":{{"phase":"Available"}}}}"#
        ))
        .unwrap()
    }

    fn pvc(name: &str, size: &str) -> PersistentVolumeClaim {
        serde_json::from_str(&format!(
            r#"{{"metadata":{{"name":"{name}","namespace":"default","uid":"uid-{name}"}},
            "spec":{{"accessModes":["ReadWriteOnce"],"storageClassName":"wffc","volumeMode":"Filesystem",
            "resources":{{"requests":{{"storage":"{size}"}}}}}}}}"#
        ))
        .unwrap()
    }

    fn pod(claim: &str) -> Pod {
        serde_json::from_str(&format!(
            r#"{{"metadata":{{"name":"p-{claim}","namespace":"default"}},"spec":{{"containers":[],
            "volumes":[{{"name":"v","persistentVolumeClaim":{{"claimName":"{claim}"}}}}]}}}}"#
        ))
        .unwrap()
    }

    fn objects() -> StorageObjects {
        let mut st = StorageObjects::default();
        for p in [pv("pv-10", "10Gi"), pv("pv-20", "20Gi")] {
            st.persistent_volumes
                .insert(p.metadata.name.clone(), Arc::new(p));
        }
        for c in [pvc("a", "5Gi"), pvc("b", "5Gi")] {
            st.persistent_volume_claims.insert(c.key(), Arc::new(c));
        }
        let sc: StorageClass = serde_json::from_str(
            r#"{"metadata":{"name":"wffc"},"provisioner":"kubernetes.io/no-provisioner",
            "volumeBindingMode":"WaitForFirstConsumer"}"#,
        )
        .unwrap();
        st.storage_classes.insert("wffc".into(), Arc::new(sc));
        st
    }

    fn node() -> Node {
        serde_json::from_str(r#"{"metadata":{"name":"n1"}}"#).unwrap()
    }

    /// Reserve for `claim`: the PV chosen.
    fn reserve(st: &StorageObjects, cache: &mut AssumeCache, claim: &str) -> VolumeBindingDecision {
        let p = pod(claim);
        let claims = get_pod_volume_claims(&p, st, cache).unwrap();
        let (vols, reasons) = find_pod_volumes(&claims, &node(), None).unwrap();
        assert!(!reasons.any());
        assume_pod_volumes(&p, "n1", &claims, &vols, st, cache).unwrap()
    }

    #[test]
    fn assumed_pv_is_taken_until_api_changes() {
        let mut st = objects();
        let mut cache = AssumeCache::new();
        let d = reserve(&st, &mut cache, "a");
        assert_eq!(d.static_bindings[0].pv, "pv-10");
        // The next claim no longer sees pv-10 as free.
        let d2 = reserve(&st, &mut cache, "b");
        assert_eq!(d2.static_bindings[0].pv, "pv-20");
        // PreBind's writes and the PV controller: claim a becomes fully bound.
        d.apply_prebind(&mut st);
        controller::bind_claim(&mut st, "default/a", "pv-10").unwrap();
        cache.prune(&st);
        let p = pod("a");
        assert!(are_pod_volumes_bound(&p, &st, &cache));
        let claims = get_pod_volume_claims(&p, &st, &cache).unwrap();
        assert_eq!(claims.bound.len(), 1);
        // Reverting b's reservation frees pv-20 again.
        d2.revert(&mut cache);
        assert!(cache.pv(&st, "pv-20").unwrap().spec.claim_ref.is_none());
    }

    #[test]
    fn pre_bound_pv_keeps_its_annotation_free() {
        let mut v = pv("pv-10", "10Gi");
        let c = pvc("a", "5Gi");
        let (out, dirty) = bind_volume_to_claim(&v, &c);
        assert!(dirty);
        assert_eq!(out.metadata.annotations[ANN_BOUND_BY_CONTROLLER], "yes");
        v.spec.claim_ref = Some(ObjectReference {
            namespace: "default".into(),
            name: "a".into(),
            ..Default::default()
        });
        let (out, dirty) = bind_volume_to_claim(&v, &c);
        // The UID is filled in, but a pre-bound PV is not marked as bound by the controller.
        assert!(dirty);
        assert!(!out
            .metadata
            .annotations
            .contains_key(ANN_BOUND_BY_CONTROLLER));
        assert_eq!(out.spec.claim_ref.unwrap().uid, "uid-a");
    }

    #[test]
    fn reasons_keep_upstream_order() {
        let r = ConflictReasons {
            node_conflict: true,
            bind_conflict: true,
            not_enough_space: true,
            pv_not_exist: false,
        };
        assert_eq!(
            r.texts(),
            vec![
                REASON_NODE_CONFLICT,
                REASON_BIND_CONFLICT,
                REASON_NOT_ENOUGH_SPACE
            ]
        );
    }
}
