//! `DynamicResources` (upstream `pkg/scheduler/framework/plugins/dynamicresources`): the
//! scheduler's side of Dynamic Resource Allocation with structured parameters
//! (`resource.k8s.io/v1`), with the DRA gates of [`allocator::Features`].
//!
//! - **PreEnqueue** (`PreEnqueue` → `foreachPodResourceClaim`): a pod whose claim (or the claim
//!   generated from its template) does not exist, is being deleted, or is not owned by the pod,
//!   waits outside the queue. It reads the objects the plugin last saw
//!   ([`DynamicResources::set_objects`]).
//! - **PreFilter**: the same checks (each `UnschedulableAndUnresolvable` with upstream's text),
//!   then per claim: allocated and reserved by 256 consumers without this pod →
//!   `resourceclaim in use`; allocated → its `nodeSelector` is remembered; not allocated → an
//!   allocation in flight for it (another pod's Reserve) → `resource claim <ns/name> is in the
//!   process of being allocated`, a missing class → `request <req>: device class <class> does
//!   not exist`. A pod without claims is skipped.
//! - **Filter**: the [`allocator`] on the node for the unallocated claims (its error aborts
//!   the attempt with an Error status; no solution → `cannot allocate all claims`), then the
//!   allocated claims' node selectors (`resourceclaim not available on the node`).
//! - **PostFilter**: among the allocated claims that were unavailable on some node, the first
//!   that no other pod uses is deallocated ([`DynamicResources::take_deallocations`]) →
//!   `deallocation of ResourceClaim completed`; otherwise `still not schedulable`, or
//!   `no new claims to deallocate` when PreFilter recorded no claims.
//! - **Score** (`computeScore`, v1.34+): for each `firstAvailable` request, the chosen
//!   subrequest at index `i` adds `8 − i`; an allocated claim is scored from its allocation.
//!   NormalizeScore is the default (`score × 100 / max`).
//! - **Reserve** takes the node's allocation from Filter and marks it in flight: later cycles
//!   count its devices as allocated and a pod sharing the claim waits (upstream
//!   `SignalClaimPendingAllocation`). **Unreserve** drops it, and takes the pod back out of
//!   `reservedFor` of the claims PreBind wrote ([`DynamicResources::take_unreservations`]).
//!   **PreBind** writes the claim: finalizer `resource.kubernetes.io/delete-protection`,
//!   `status.allocation`, the pod in
//!   `status.reservedFor` ([`prebind_writes`]); the written claim stays assumed until the
//!   cluster's copy shows the allocation.
//! - **Events** (`EventsToRegister`, queueing hints on): Node add / label update; ResourceClaim
//!   add / update (`isSchedulableAfterClaimChange`); the pod's own update
//!   (`isSchedulableAfterPodChange`); DeviceClass and ResourceSlice add / update.
//!
//! PostFilter of a pod without claims answers `no new claims to deallocate` (v1.35), or
//! `not found` when its PreFilter never ran because an earlier PreFilter plugin rejected it.

mod alloc_config;
mod allocate_once;
pub mod allocator;
pub mod binding_conditions;
pub mod cel;
mod constraint;
mod consumable_capacity;
mod device_taints;
pub mod extended_resources;
pub mod index;
mod node_selector;
mod partitionable;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use ksim_api::object::{ApiObject, ObjectKind};
use ksim_api::resource::{
    claim_name_for, AllocationResult, ResourceClaim, ResourceClaimConsumerReference, FINALIZER,
    FIRST_AVAILABLE_MAX_SIZE,
};
use rustc_hash::FxHashMap;

use crate::framework::{
    ClusterEventKind, ClusterEventObjects, CycleState, EnqueueExtensions, FactoryArgs,
    FilterPlugin, FilterResult, NodeToStatus, ObjectAction, Plugin, PluginRef, PostFilterContext,
    PostFilterPlugin, PostFilterResult, PreBindPlugin, PreEnqueuePlugin, PreFilterPlugin,
    PreFilterResult, PreScorePlugin, QueueingHint, ReservePlugin, ScorePlugin, Status,
};
use crate::node_info::NodeFlags;
use crate::node_info::{ClusterObjects, NodeInfo, Snapshot};
use crate::plugins::helper::{default_normalize_score, CompiledNodeSelector};
use crate::pod_info::PodInfo;

use allocator::{score_picks, Features, NodePicks, Prepared};
use cel::CelCache;
use index::DraIndex;

pub const NAME: &str = "DynamicResources";

/// The DRA feature gates whose fields ksim models: with such a gate on, objects that use its
/// fields are admitted (the others are refused, see docs/dra.md).
pub const MODELLED_GATES: &[&str] = &[
    "DRAConsumableCapacity",
    "DRADeviceBindingConditions",
    "DRADeviceTaints",
    "DRAExtendedResource",
    "DRAPartitionableDevices",
];

/// `framework.MaxNodeScore`.
const MAX_NODE_SCORE: i64 = 100;

/// The plugin. Its in-flight allocations and compiled selectors are shared by every cycle.
pub struct DynamicResources {
    features: Features,
    cel: CelCache,
    /// Claims by `namespace/name` whose allocation this scheduler made and the cluster does
    /// not show yet: `false` from Reserve to PreBind (pending), `true` after PreBind (assumed).
    in_flight: Mutex<BTreeMap<String, (bool, Arc<ResourceClaim>)>>,
    /// The cluster objects PreEnqueue reads.
    objects: Mutex<Option<Arc<ClusterObjects>>>,
    /// Claims PostFilter asked to deallocate, by `namespace/name`, for the engine to apply.
    deallocations: Mutex<Vec<String>>,
    /// Slices, pools per node, allocated devices and CEL verdicts, kept between cycles.
    index: Mutex<DraIndex>,
    /// `(namespace/name, pod uid)`: claims PreBind reserved for a pod whose binding then
    /// failed; Unreserve takes the pod back out of `reservedFor` (for the engine to apply).
    unreservations: Mutex<Vec<(String, String)>>,
    /// DRADeviceBindingConditions: PreBind's `bindingTimeout` (None: the gates are off).
    binding_timeout: Option<std::time::Duration>,
    /// Claims (`namespace/name`) whose PreBind wait timed out, until seen unallocated
    /// (upstream's `isClaimTimeout` reads the allocation timestamp instead).
    binding_timed_out: Mutex<BTreeSet<String>>,
    /// DRAExtendedResource ([`extended_resources`]).
    extended_resource: bool,
    /// Claims (`namespace/name`) to delete: extended resource claims PostFilter found stale
    /// or Unreserve created in vain, for the engine to apply.
    deletions: Mutex<Vec<String>>,
}

pub fn new(args: &FactoryArgs<'_>) -> Result<PluginRef, String> {
    let mut p = DynamicResources::with_features(allocator_features(args.features));
    p.binding_timeout = binding_conditions::binding_timeout(
        args.args,
        args.features.enable_dra_device_binding_conditions
            && args.features.enable_dra_resource_claim_device_status,
    )?;
    p.extended_resource = args.features.enable_dra_extended_resource;
    Ok(Arc::new(p))
}

/// The allocator's gates, from the run's (upstream's `New` copies them from `fts`).
pub fn allocator_features(f: &crate::framework::Features) -> Features {
    Features {
        admin_access: f.enable_dra_admin_access,
        prioritized_list: f.enable_dra_prioritized_list,
        device_taints: f.enable_dra_device_taints,
        partitionable_devices: f.enable_dra_partitionable_devices,
        device_binding_conditions: f.enable_dra_device_binding_conditions
            && f.enable_dra_resource_claim_device_status,
        consumable_capacity: f.enable_dra_consumable_capacity,
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

impl DynamicResources {
    pub fn with_features(features: Features) -> DynamicResources {
        DynamicResources {
            features,
            cel: CelCache::default(),
            in_flight: Mutex::new(BTreeMap::new()),
            objects: Mutex::new(None),
            deallocations: Mutex::new(Vec::new()),
            index: Mutex::new(DraIndex::with_consumable_capacity(
                features.consumable_capacity,
            )),
            unreservations: Mutex::new(Vec::new()),
            binding_timeout: features
                .device_binding_conditions
                .then_some(binding_conditions::BINDING_TIMEOUT_DEFAULT),
            binding_timed_out: Mutex::new(BTreeSet::new()),
            extended_resource: false,
            deletions: Mutex::new(Vec::new()),
        }
    }

    /// With DRAExtendedResource on or off.
    pub fn with_extended_resource(mut self, on: bool) -> DynamicResources {
        self.extended_resource = on;
        self
    }

    /// Extended resource claims to delete since the last call, by `namespace/name`.
    pub fn take_deletions(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.deletions))
    }

    /// DRADeviceBindingConditions: how long PreBind waits for the binding conditions of the
    /// pod's devices (None: the gates are off, PreBind never waits).
    pub fn binding_timeout(&self) -> Option<std::time::Duration> {
        self.binding_timeout
    }

    /// PreBind's wait for claim `namespace/name` timed out: until the claim is seen
    /// unallocated, Filter finds it unavailable (upstream `isClaimTimeout`), so that
    /// PostFilter can deallocate it.
    pub fn binding_timed_out(&self, key: &str) {
        lock(&self.binding_timed_out).insert(key.to_string());
    }

    /// The cluster objects PreEnqueue checks pods against (the engine calls it when they
    /// change; PreFilter keeps it current too).
    pub fn set_objects(&self, objects: Arc<ClusterObjects>) {
        *lock(&self.objects) = Some(objects);
    }

    /// The cluster now holds what PreBind wrote for these claims (`namespace/name`): their
    /// assumed copies go, as upstream's assume cache drops an object once the informer
    /// delivers a newer version. (Kept, a copy would count its devices as allocated after
    /// the claim is deallocated or deleted.)
    pub fn writes_applied(&self, keys: &[String]) {
        let mut inf = lock(&self.in_flight);
        for k in keys {
            if matches!(inf.get(k), Some((true, _))) {
                inf.remove(k);
            }
        }
    }

    /// Claims PostFilter deallocated since the last call, by `namespace/name`.
    pub fn take_deallocations(&self) -> Vec<String> {
        std::mem::take(&mut *lock(&self.deallocations))
    }

    /// Claims Unreserve took a pod out of since the last call: `(namespace/name, pod uid)`
    /// (upstream's strategic merge patch deleting the pod's `reservedFor` entry).
    pub fn take_unreservations(&self) -> Vec<(String, String)> {
        std::mem::take(&mut *lock(&self.unreservations))
    }

    /// The claim `namespace/name` as this scheduler sees it: the assumed copy PreBind wrote
    /// while the cluster's copy shows no allocation yet, else the cluster's.
    fn claim(&self, objects: &ClusterObjects, key: &str) -> Option<Arc<ResourceClaim>> {
        let api = objects.dra.resource_claims.get(key).cloned();
        let mut inf = lock(&self.in_flight);
        if let Some((true, assumed)) = inf.get(key) {
            match &api {
                Some(c)
                    if c.status.allocation.is_some() || c.metadata.uid != assumed.metadata.uid =>
                {
                    inf.remove(key);
                }
                None => {
                    inf.remove(key);
                }
                Some(_) => return Some(assumed.clone()),
            }
        }
        api
    }

    /// `foreachPodResourceClaim`: the pod's claims in order, or upstream's reason why not.
    fn pod_claims(
        &self,
        pod: &PodInfo,
        objects: &ClusterObjects,
    ) -> Result<Vec<Arc<ResourceClaim>>, String> {
        let p = &pod.pod;
        let mut out = Vec::with_capacity(p.spec.resource_claims.len());
        for rc in &p.spec.resource_claims {
            let Some((name, must_check_owner)) = claim_name_for(p, rc)? else {
                continue;
            };
            let key = format!("{}/{name}", p.metadata.namespace);
            let Some(claim) = self.claim(objects, &key) else {
                return Err(format!(
                    "resourceclaim.resource.k8s.io \"{name}\" not found"
                ));
            };
            if claim.metadata.deletion_timestamp.is_some() {
                return Err(format!("resourceclaim \"{name}\" is being deleted"));
            }
            if must_check_owner {
                let owned = claim
                    .metadata
                    .owner_references
                    .iter()
                    .any(|o| o.controller == Some(true) && o.uid == p.metadata.uid);
                if !owned {
                    return Err(format!(
                        "ResourceClaim {}/{name} was not created for pod {}/{} (pod is not owner)",
                        p.metadata.namespace, p.metadata.namespace, p.metadata.name
                    ));
                }
            }
            out.push(claim);
        }
        Ok(out)
    }

    /// Per dense id of `idx`, whether a device is allocated in the cluster or in flight
    /// (admin access excepted).
    fn allocated(&self, idx: &mut DraIndex, objects: &ClusterObjects) -> Vec<bool> {
        let mut inf = lock(&self.in_flight);
        // An assumed copy yields to the cluster's as in `claim` (upstream's assume cache drops
        // it on the informer's update or delete): a claim PreBind wrote and that was deleted
        // since frees its devices even when no pod looks the claim up again.
        inf.retain(|key, (assumed, c)| {
            !*assumed
                || objects.dra.resource_claims.get(key).is_some_and(|api| {
                    api.status.allocation.is_none() && api.metadata.uid == c.metadata.uid
                })
        });
        consumable_capacity::set_in_flight(idx, &objects.dra, inf.iter().map(|(k, (_, c))| (k, c)));
        if inf.is_empty() {
            return idx.api_allocated();
        }
        // In flight: the copy stands in for the cluster's claim of the same name.
        let mut delta: FxHashMap<u32, i64> = FxHashMap::default();
        let mut ids = Vec::new();
        for (key, (_, c)) in inf.iter() {
            if let Some(a) = objects
                .dra
                .resource_claims
                .get(key)
                .and_then(|api| api.status.allocation.as_ref())
            {
                ids.clear();
                idx.allocation_ids(a, &mut ids);
                for &id in &ids {
                    *delta.entry(id).or_default() -= 1;
                }
            }
            if let Some(a) = &c.status.allocation {
                ids.clear();
                idx.allocation_ids(a, &mut ids);
                for &id in &ids {
                    *delta.entry(id).or_default() += 1;
                }
            }
        }
        let mut view = idx.api_allocated();
        view.resize(idx.id_count(), false);
        for (id, d) in delta {
            view[id as usize] = i64::from(idx.api_count(id)) + d > 0;
        }
        view
    }
}

/// Written by PreFilter. Clones share the per-node results (upstream keeps a pointer).
#[derive(Clone, Default)]
struct StateData {
    /// The pod's claims (empty: nothing to do).
    claims: Vec<Arc<ResourceClaim>>,
    /// Per claim: the allocated claim's node selector.
    available_on: Vec<Option<CompiledNodeSelector>>,
    /// Indices into `claims` of the claims to allocate.
    to_allocate: Vec<usize>,
    /// Allocated claims whose binding failed or timed out: unavailable on every node.
    binding_blocked: Vec<usize>,
    /// The claims to allocate, prepared for the allocator.
    prepared: Option<Arc<Prepared>>,
    /// Per dense id of the plugin's index: allocated in the cluster or in flight.
    allocated: Arc<Vec<bool>>,
    shared: Arc<Mutex<Shared>>,
    /// DRAExtendedResource: the pod's extended resources backed by DRA.
    extended: Option<Arc<extended_resources::Extended>>,
}

#[derive(Default)]
struct Shared {
    /// Claims (indices) allocated but unavailable on some node.
    unavailable: BTreeSet<usize>,
    /// Filter's allocation per node: the picks of each claim to allocate.
    /// By the node object's address (the object kept, so the address stays its own), in the
    /// order Filter made them (a node may come twice, with the same picks); sorted by address
    /// on Score's first lookup.
    node_allocations: Vec<(usize, Arc<ksim_api::Node>, NodePicks)>,
    sorted: bool,
    /// Reserve's node and allocations (by claim index).
    reserved: Option<(String, BTreeMap<usize, AllocationResult>)>,
    /// The claims PreBind wrote.
    written: Vec<ResourceClaim>,
}

/// The extended resource claim PreBind wrote in this cycle, for the engine to create under a
/// generated name, and the pod's request mappings (`status.extendedResourceClaimStatus`).
pub fn prebind_extended_claim(
    state: &CycleState,
) -> Option<(
    ResourceClaim,
    Vec<ksim_api::resource::extended::ContainerExtendedResourceRequest>,
)> {
    let s = state.read::<StateData>(NAME)?;
    let e = s.extended.as_ref()?;
    let w = lock(&e.written).clone();
    w
}

/// The claims PreBind wrote in this cycle (the API writes the engine applies).
pub fn prebind_writes(state: &CycleState) -> Vec<ResourceClaim> {
    match state.read::<StateData>(NAME) {
        Some(s) => lock(&s.shared).written.clone(),
        None => Vec::new(),
    }
}

fn unresolvable(msg: impl Into<String>) -> Status {
    Status::unresolvable(msg.into())
}

impl Plugin for DynamicResources {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_pre_enqueue(&self) -> Option<&dyn PreEnqueuePlugin> {
        Some(self)
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
    fn as_post_filter(&self) -> Option<&dyn PostFilterPlugin> {
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
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }
}

impl PreEnqueuePlugin for DynamicResources {
    fn pre_enqueue(&self, pod: &PodInfo) -> Status {
        if pod.pod.spec.resource_claims.is_empty() {
            return Status::success();
        }
        let objects = lock(&self.objects).clone();
        let Some(objects) = objects else {
            return Status::success();
        };
        match self.pod_claims(pod, &objects) {
            Ok(_) => Status::success(),
            Err(e) => unresolvable(e),
        }
    }
}

impl PreFilterPlugin for DynamicResources {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        state.write(NAME, StateData::default());
        let extended = match self.extended_resource && !pod.requests.scalar.is_empty() {
            true => extended_resources::pre_filter(pod, &snapshot.objects).map(Arc::new),
            false => None,
        };
        if pod.pod.spec.resource_claims.is_empty() && extended.is_none() {
            return (None, Status::skip());
        }
        let objects = snapshot.objects.clone();
        self.set_objects(objects.clone());
        let claims = match self.pod_claims(pod, &objects) {
            Ok(c) => c,
            Err(e) => return (None, unresolvable(e)),
        };
        if claims.is_empty() && extended.is_none() {
            return (None, Status::skip());
        }
        let mut s = StateData {
            available_on: vec![None; claims.len()],
            extended,
            ..Default::default()
        };
        for (i, claim) in claims.iter().enumerate() {
            if let Some(a) = &claim.status.allocation {
                if !claim.can_be_reserved() && !claim.is_reserved_for(pod.uid()) {
                    return (None, unresolvable("resourceclaim in use"));
                }
                if let Some(ns) = &a.node_selector {
                    s.available_on[i] = Some(CompiledNodeSelector::new(ns));
                }
                if self.binding_timeout.is_some()
                    && binding_conditions::binding_blocked(claim, &lock(&self.binding_timed_out))
                {
                    s.binding_blocked.push(i);
                }
                continue;
            }
            s.to_allocate.push(i);
            let key = claim.key();
            if self.binding_timeout.is_some() {
                lock(&self.binding_timed_out).remove(&key);
            }
            if matches!(lock(&self.in_flight).get(&key), Some((false, _))) {
                return (
                    None,
                    unresolvable(format!(
                        "resource claim {key} is in the process of being allocated"
                    )),
                );
            }
            for r in &claim.spec.devices.requests {
                if r.first_available.is_empty() {
                    let class = r
                        .exactly
                        .as_ref()
                        .map(|e| e.device_class_name.as_str())
                        .unwrap_or("");
                    if let Some(st) = validate_class(&objects, class, &r.name) {
                        return (None, st);
                    }
                } else {
                    if !self.features.prioritized_list {
                        return (
                            None,
                            unresolvable(format!(
                                "resource claim {key}, request {}: has subrequests, but the DRAPrioritizedList feature is disabled",
                                r.name
                            )),
                        );
                    }
                    for sub in &r.first_available {
                        let q = format!("{}/{}", r.name, sub.name);
                        if let Some(st) = validate_class(&objects, &sub.device_class_name, &q) {
                            return (None, st);
                        }
                    }
                }
            }
        }
        if !s.to_allocate.is_empty() || s.extended.is_some() {
            let mut idx = lock(&self.index);
            idx.sync(&objects.dra);
            s.allocated = Arc::new(self.allocated(&mut idx, &objects));
        }
        if !s.to_allocate.is_empty() {
            let mut idx = lock(&self.index);
            let to_allocate = s.to_allocate.iter().map(|&i| claims[i].clone()).collect();
            s.prepared = Some(Arc::new(Prepared::new(
                self.features,
                &objects.dra.device_classes,
                &mut idx,
                &self.cel,
                to_allocate,
            )));
        }
        s.claims = claims;
        state.write(NAME, s);
        (None, Status::success())
    }
}

/// `validateDeviceClass`.
fn validate_class(objects: &ClusterObjects, class: &str, request: &str) -> Option<Status> {
    if class.is_empty() {
        return Some(Status::error(format!(
            "request {request}: unsupported request type"
        )));
    }
    if objects.dra.device_classes.contains_key(class) {
        return None;
    }
    Some(unresolvable(format!(
        "request {request}: device class {class} does not exist"
    )))
}

impl DynamicResources {
    fn filter_status(&self, s: &StateData, pod: &PodInfo, node: &NodeInfo) -> Status {
        if s.claims.is_empty() && s.extended.is_none() {
            return Status::success();
        }
        let n = &node.node;
        let mut prepared = s.prepared.clone();
        if let Some(e) = &s.extended {
            match e.verdict(&node.allocatable) {
                extended_resources::NodeVerdict::Reject(msg) => return unresolvable(msg),
                extended_resources::NodeVerdict::NoClaim if s.claims.is_empty() => {
                    return Status::success()
                }
                extended_resources::NodeVerdict::NoClaim => e.passed(&n.metadata.name, vec![]),
                extended_resources::NodeVerdict::Dra(set) => {
                    prepared = Some(self.extended_variant(s, e, pod, &set).prepared.clone());
                    e.passed(&n.metadata.name, set);
                }
            }
        }
        let unavailable: Vec<usize> = (0..s.claims.len())
            .filter(|&i| {
                s.available_on[i]
                    .as_ref()
                    .is_some_and(|sel| !sel.matches(n))
            })
            .chain(s.binding_blocked.iter().copied())
            .collect();
        let mut allocations = None;
        if let Some(prepared) = &prepared {
            let mut idx = lock(&self.index);
            match prepared.allocate(&mut idx, &s.allocated, n) {
                Err(e) => return Status::error(e),
                Ok(None) => return unresolvable("cannot allocate all claims"),
                Ok(Some(r)) => allocations = Some(r),
            }
        }
        let mut sh = lock(&s.shared);
        if !unavailable.is_empty() {
            sh.unavailable.extend(unavailable);
            return unresolvable("resourceclaim not available on the node");
        }
        if let Some(a) = allocations {
            sh.node_allocations
                .push((Arc::as_ptr(n) as usize, n.clone(), a));
            sh.sorted = false;
        }
        Status::success()
    }
}

impl DynamicResources {
    /// The node claim for `set` and the allocator for the pod's claims with it (last).
    fn extended_variant(
        &self,
        s: &StateData,
        e: &extended_resources::Extended,
        pod: &PodInfo,
        set: &[usize],
    ) -> Arc<extended_resources::Variant> {
        e.variant(&pod.pod, set, |claim, classes| {
            let mut claims: Vec<_> = s.to_allocate.iter().map(|&i| s.claims[i].clone()).collect();
            claims.push(claim);
            let mut idx = lock(&self.index);
            Prepared::new(self.features, classes, &mut idx, &self.cel, claims)
        })
    }
}

/// Reserve's key of the extended resource claim's allocation (after the pod's claims).
const EXTENDED_INDEX: usize = usize::MAX;

impl FilterPlugin for DynamicResources {
    fn filter(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> FilterResult {
        match state.read::<StateData>(NAME) {
            None => Status::error("reading \"DynamicResources\" from cycleState: not found").into(),
            Some(s) => self.filter_status(s, _pod, node).into(),
        }
    }

    fn has_leading_passes(&self) -> bool {
        true
    }

    /// `filter` over a run of nodes, with one lock of the index and the cycle's allocations:
    /// the nodes it passes, recorded as `filter` records them, up to the first it would not
    /// pass (which the framework then filters on its own, status and all).
    fn leading_passes(
        &self,
        state: &CycleState,
        _pod: &PodInfo,
        nodes: &[NodeInfo],
        stop: NodeFlags,
        limit: usize,
    ) -> usize {
        let Some(s) = state.read::<StateData>(NAME) else {
            return 0;
        };
        // Each node's extended resource claim depends on its allocatable: `filter` judges
        // them one by one.
        if !s.binding_blocked.is_empty() || s.extended.is_some() {
            return 0;
        }
        let mut idx = lock(&self.index);
        let mut sh = lock(&s.shared);
        let mut k = 0;
        for n in nodes.iter().take(limit) {
            if n.flags().intersects(stop) {
                break;
            }
            let node = &n.node;
            if s.available_on
                .iter()
                .any(|sel| sel.as_ref().is_some_and(|sel| !sel.matches(node)))
            {
                break;
            }
            if let Some(p) = &s.prepared {
                match p.allocate(&mut idx, &s.allocated, node) {
                    Ok(Some(a)) => {
                        sh.node_allocations
                            .push((Arc::as_ptr(node) as usize, node.clone(), a));
                        sh.sorted = false;
                    }
                    _ => break,
                }
            }
            k += 1;
        }
        k
    }
}

impl PostFilterPlugin for DynamicResources {
    fn post_filter(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        _: &NodeToStatus,
        _: &mut PostFilterContext<'_>,
    ) -> (Option<PostFilterResult>, Status) {
        let Some(s) = state.read::<StateData>(NAME) else {
            return (None, Status::error("not found"));
        };
        if s.claims.is_empty() && s.extended.is_none() {
            return (None, Status::unschedulable("no new claims to deallocate"));
        }
        let unavailable: Vec<usize> = lock(&s.shared).unavailable.iter().copied().collect();
        for i in unavailable {
            let claim = &s.claims[i];
            let rf = &claim.status.reserved_for;
            if rf.is_empty() || (rf.len() == 1 && rf[0].uid == pod.uid()) {
                lock(&self.deallocations).push(claim.key());
                return (
                    None,
                    Status::unschedulable("deallocation of ResourceClaim completed"),
                );
            }
        }
        if let Some(e) = s.extended.as_ref().filter(|e| e.existing) {
            // A claim a former cycle created (its binding failed): deleted, to retry anew.
            lock(&self.deletions).push(e.claim.key());
            return (
                None,
                Status::unschedulable("deletion of ResourceClaim completed"),
            );
        }
        (None, Status::unschedulable("still not schedulable"))
    }
}

impl PreScorePlugin for DynamicResources {
    fn pre_score(&self, _: &mut CycleState, _: &PodInfo, _: &[&NodeInfo], _: &Snapshot) -> Status {
        Status::success()
    }
}

/// `computeScore`: `8 − i` for each `firstAvailable` request whose subrequest `i` was chosen.
fn score_allocation(claim: &ResourceClaim, alloc: &AllocationResult) -> i64 {
    let mut score = 0;
    for r in &claim.spec.devices.requests {
        if r.first_available.is_empty() {
            continue;
        }
        let prefix = format!("{}/", r.name);
        let chosen = alloc
            .devices
            .results
            .iter()
            .find_map(|res| res.request.strip_prefix(&prefix));
        if let Some(sub) = chosen {
            if let Some(i) = r.first_available.iter().position(|s| s.name == sub) {
                score += FIRST_AVAILABLE_MAX_SIZE as i64 - i as i64;
            }
        }
    }
    score
}

impl ScorePlugin for DynamicResources {
    fn score(&self, state: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let Some(s) = state.read::<StateData>(NAME) else {
            return Ok(0);
        };
        if s.claims.is_empty() {
            return Ok(0);
        }
        let mut sh = lock(&s.shared);
        if !sh.sorted {
            sh.node_allocations.sort_by_key(|(ptr, _, _)| *ptr);
            sh.sorted = true;
        }
        let ptr = Arc::as_ptr(&node.node) as usize;
        let allocs = sh
            .node_allocations
            .binary_search_by_key(&ptr, |(p, _, _)| *p)
            .ok()
            .map(|i| &sh.node_allocations[i].2);
        let mut score = 0;
        let mut k = 0;
        for (i, claim) in s.claims.iter().enumerate() {
            if s.to_allocate.contains(&i) {
                if let Some(a) = allocs {
                    score += score_picks(claim, a.claim(k));
                }
                k += 1;
            } else if let Some(a) = &claim.status.allocation {
                score += score_allocation(claim, a);
            }
        }
        Ok(score)
    }

    fn uniform_score(
        &self,
        state: &CycleState,
        _: &PodInfo,
        _: &[&NodeInfo],
    ) -> Option<(i64, i64)> {
        match state.read::<StateData>(NAME) {
            // Only `firstAvailable` requests score: without one, every node scores 0, and
            // the default normalization leaves zeros as they are.
            Some(s)
                if s.claims.iter().any(|c| {
                    c.spec
                        .devices
                        .requests
                        .iter()
                        .any(|r| !r.first_available.is_empty())
                }) =>
            {
                None
            }
            _ => Some((0, 0)),
        }
    }

    fn has_normalize(&self) -> bool {
        true
    }

    fn normalize(&self, _: &CycleState, _: &PodInfo, scores: &mut [i64]) -> Status {
        default_normalize_score(MAX_NODE_SCORE, false, scores);
        Status::success()
    }
}

impl ReservePlugin for DynamicResources {
    fn reserve(&self, state: &mut CycleState, _pod: &PodInfo, node: &str) -> Status {
        let Some(s) = state.read::<StateData>(NAME) else {
            return Status::error("not found");
        };
        let variant = s.extended.as_ref().and_then(|e| e.variant_for(node));
        if s.to_allocate.is_empty() && variant.is_none() {
            return Status::success();
        }
        let mut sh = lock(&s.shared);
        let Some((_, _, picks)) = sh
            .node_allocations
            .iter()
            .find(|(_, n, _)| n.metadata.name == node)
        else {
            return Status::error("claim allocation not found for node");
        };
        let prepared = match &variant {
            Some(v) => Some(&v.prepared),
            None => s.prepared.as_ref(),
        };
        let allocs = match prepared {
            Some(p) => p.materialize(&lock(&self.index), node, picks),
            None => Vec::new(),
        };
        let want = s.to_allocate.len() + usize::from(variant.is_some());
        if allocs.len() != want {
            return Status::error(format!(
                "internal error, have {} allocations, {want} claims to allocate",
                allocs.len(),
            ));
        }
        let mut reserved = BTreeMap::new();
        let mut inf = lock(&self.in_flight);
        for (k, &i) in s.to_allocate.iter().enumerate() {
            let mut c = (*s.claims[i]).clone();
            if !c.metadata.finalizers_contains(FINALIZER) {
                c.metadata.add_finalizer(FINALIZER);
            }
            c.status.allocation = Some(allocs[k].clone());
            inf.insert(c.key(), (false, Arc::new(c)));
            reserved.insert(i, allocs[k].clone());
        }
        if let (Some(v), Some(e)) = (&variant, &s.extended) {
            // The node's extended resource claim, last: in flight under its temporary UID.
            let a = allocs[s.to_allocate.len()].clone();
            let mut c = (*v.claim).clone();
            c.metadata.add_finalizer(FINALIZER);
            c.status.allocation = Some(a.clone());
            inf.insert(e.in_flight_key(), (false, Arc::new(c)));
            reserved.insert(EXTENDED_INDEX, a);
        }
        sh.reserved = Some((node.to_string(), reserved));
        Status::success()
    }

    fn unreserve(&self, state: &mut CycleState, pod: &PodInfo, _node: &str) {
        let Some(s) = state.read::<StateData>(NAME) else {
            return;
        };
        let mut inf = lock(&self.in_flight);
        for c in &s.claims {
            inf.remove(&c.key());
        }
        if let Some(e) = &s.extended {
            inf.remove(&e.in_flight_key());
            // `unreserveExtendedResourceClaim`: a claim PreBind created is deleted.
            if lock(&e.written).take().is_some() {
                let objects = lock(&self.objects).clone();
                if let Some(c) = objects.and_then(|o| extended_resources::find_claim(&pod.pod, &o))
                {
                    lock(&self.deletions).push(c.key());
                }
            }
        }
        let mut sh = lock(&s.shared);
        sh.reserved = None;
        // Upstream removes the pod from `reservedFor` of each allocated claim reserved for it;
        // the claims PreBind reserved are the ones this cycle wrote.
        let mut unres = lock(&self.unreservations);
        for c in sh.written.drain(..) {
            if c.status.allocation.is_some() && c.is_reserved_for(pod.uid()) {
                unres.push((c.key(), pod.uid().to_string()));
            }
        }
    }
}

impl PreBindPlugin for DynamicResources {
    fn pre_bind(&self, state: &CycleState, pod: &PodInfo, node: &str) -> Status {
        let Some(s) = state.read::<StateData>(NAME) else {
            return Status::error("not found");
        };
        if s.claims.is_empty() && s.extended.is_none() {
            return Status::success();
        }
        let variant = s.extended.as_ref().and_then(|e| e.variant_for(node));
        let mut sh = lock(&s.shared);
        let reserved = match &sh.reserved {
            Some((n, r)) if n == node => r.clone(),
            Some(_) | None if !s.to_allocate.is_empty() || variant.is_some() => {
                return Status::error("claim allocation not found for node")
            }
            _ => BTreeMap::new(),
        };
        let mut written = Vec::new();
        for (i, claim) in s.claims.iter().enumerate() {
            if claim.is_reserved_for(pod.uid()) {
                continue;
            }
            let mut c = (**claim).clone();
            if let Some(a) = reserved.get(&i) {
                c.status.allocation = Some(a.clone());
                if !c.metadata.finalizers_contains(FINALIZER) {
                    c.metadata.add_finalizer(FINALIZER);
                }
            }
            if c.status.allocation.is_none() {
                return Status::error(format!(
                    "claim {} got deallocated in the meantime",
                    claim.key()
                ));
            }
            if !c.can_be_reserved() {
                return Status::error(format!(
                    "claim {} cannot be reserved for the pod: too many consumers",
                    claim.key()
                ));
            }
            c.status.reserved_for.push(ResourceClaimConsumerReference {
                api_group: String::new(),
                resource: "pods".into(),
                name: pod.name().to_string(),
                uid: pod.uid().to_string(),
            });
            written.push(c);
        }
        if let (Some(v), Some(e)) = (&variant, &s.extended) {
            let st = extended_resources::pre_bind(v, e, reserved.get(&EXTENDED_INDEX), pod, node);
            if !st.is_success() {
                return st;
            }
        }
        let mut inf = lock(&self.in_flight);
        if let Some(e) = &s.extended {
            // The engine creates the claim with this cycle's writes (see `pre_bind`).
            inf.remove(&e.in_flight_key());
        }
        for c in &written {
            inf.insert(c.key(), (true, Arc::new(c.clone())));
        }
        sh.written = written;
        Status::success()
    }
}

impl EnqueueExtensions for DynamicResources {
    fn events(&self) -> &'static [ClusterEventKind] {
        use ClusterEventKind::{NodeAdd, NodeUpdateLabel, Object, UnscheduledPodUpdate};
        use ObjectAction::{Add, Update};
        &[
            NodeAdd,
            NodeUpdateLabel,
            Object(ObjectKind::ResourceClaim, Add),
            Object(ObjectKind::ResourceClaim, Update),
            UnscheduledPodUpdate,
            Object(ObjectKind::DeviceClass, Add),
            Object(ObjectKind::DeviceClass, Update),
            Object(ObjectKind::ResourceSlice, Add),
            Object(ObjectKind::ResourceSlice, Update),
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
                ClusterEventKind::Object(ObjectKind::ResourceClaim, _),
                ClusterEventObjects::Object {
                    old,
                    new: Some(ApiObject::ResourceClaim(n)),
                },
            ) => {
                let o = match old {
                    Some(ApiObject::ResourceClaim(o)) => Some(o),
                    _ => None,
                };
                self.hint_claim_change(pod, o, n)
            }
            // `isSchedulableAfterClaimChange`: a deleted claim makes no pod schedulable.
            (
                ClusterEventKind::Object(ObjectKind::ResourceClaim, _),
                ClusterEventObjects::Object { new: None, .. },
            ) => QueueingHint::Skip,
            (ClusterEventKind::UnscheduledPodUpdate, ClusterEventObjects::Pod { new, .. }) => {
                let Some(new) = new else {
                    return QueueingHint::Queue;
                };
                if new.uid() != pod.uid() {
                    return QueueingHint::Skip;
                }
                let objects = lock(&self.objects).clone();
                match objects {
                    Some(o) if self.pod_claims(new, &o).is_err() => QueueingHint::Skip,
                    _ => QueueingHint::Queue,
                }
            }
            _ => QueueingHint::Queue,
        }
    }
}

impl DynamicResources {
    /// `isSchedulableAfterClaimChange`.
    fn hint_claim_change(
        &self,
        pod: &PodInfo,
        old: Option<&ResourceClaim>,
        new: &ResourceClaim,
    ) -> QueueingHint {
        let objects = lock(&self.objects).clone();
        let uses = match &objects {
            Some(o) => match self.pod_claims(pod, o) {
                Err(_) => return QueueingHint::Skip,
                Ok(claims) => claims.iter().any(|c| c.metadata.uid == new.metadata.uid),
            },
            None => true,
        };
        if old.is_some_and(|o| o.status.allocation.is_some()) && new.status.allocation.is_none() {
            return QueueingHint::Queue;
        }
        if !uses {
            return QueueingHint::Skip;
        }
        match old {
            None => QueueingHint::Queue,
            Some(o) if o.status == new.status => QueueingHint::Skip,
            Some(_) => QueueingHint::Queue,
        }
    }
}

#[cfg(test)]
mod allocator_table;
#[cfg(test)]
mod allocator_table_basic;
#[cfg(test)]
mod allocator_table_binding_conditions;
#[cfg(test)]
mod allocator_table_constraints;
#[cfg(test)]
mod allocator_table_consumable_capacity;
#[cfg(test)]
mod allocator_table_consumable_capacity_more;
#[cfg(test)]
mod allocator_table_device_taints;
#[cfg(test)]
mod allocator_table_partitionable;
#[cfg(test)]
mod allocator_table_partitionable_more;
#[cfg(test)]
mod allocator_table_pools;
#[cfg(test)]
mod allocator_table_prioritized;
#[cfg(test)]
mod extended_resources_tests;
#[cfg(test)]
mod plugin_table;
#[cfg(test)]
mod plugin_table_binding_conditions;
#[cfg(test)]
mod plugin_table_cases;
#[cfg(test)]
mod plugin_table_device_taints;
#[cfg(test)]
mod plugin_table_extended_resources;
#[cfg(test)]
mod plugin_table_hints;
#[cfg(test)]
mod plugin_table_scoring;
#[cfg(test)]
mod shortcut_props;
#[cfg(test)]
mod tests;
