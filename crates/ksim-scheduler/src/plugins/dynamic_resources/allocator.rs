//! The structured allocator (upstream
//! `staging/src/k8s.io/dynamic-resource-allocation/structured/internal/incubating`,
//! `Allocator.Allocate`, `GatherPools`, `allocateOne`, `allocateDevice`, `createNodeSelector`),
//! the variant v1.35's and v1.36's default feature gates select.
//!
//! For one node and the pod's unallocated claims:
//!
//! 1. **Pools** (`GatherPools`): every slice whose `nodeName` is the node, whose `nodeSelector`
//!    matches it, or with `allNodes`, joins the pool `(driver, pool name)`; only the highest
//!    generation's slices count. A pool is *incomplete* when the cluster holds fewer slices of
//!    that generation than `resourceSliceCount`, *obsolete* (ignored) when a newer generation
//!    exists elsewhere, *invalid* when a device name repeats. Pools are taken in
//!    `(driver, pool)` order, a pool's slices by name, a slice's devices as listed.
//! 2. **Requests** (`validateDeviceRequest`): claims in pod order, requests in claim order; a
//!    `firstAvailable` request tries its subrequests in order. `ExactCount` needs `count`
//!    devices; `All` needs every matching device of the node's pools and fails the whole
//!    attempt (an error) when a pool is incomplete or invalid. A claim needing more than 32
//!    devices is an error.
//! 3. **Search** (`allocateOne`): first fit with backtracking. A device is a candidate when no
//!    allocated claim in the cluster (nor an earlier pick of this attempt) uses it — with admin
//!    access only this claim's own picks count —, the class's and the request's CEL selectors
//!    accept it, and every `matchAttribute` constraint of the claim still holds. Within one
//!    request, devices are only combined in increasing order (no permutations). Devices of
//!    incomplete or invalid pools are never picked.
//! 4. **Node selector** (`createNodeSelector`): a node-local device pins the claim to the node
//!    (`matchFields metadata.name In [node]`); devices of `nodeSelector` slices add that
//!    selector's requirements; `allNodes` devices add nothing (no selector at all when every
//!    device is such).
//!
//! 5. **Config** (`Allocate`): the classes' config (`FromClass`) and the claim's config
//!    (`FromClaim`) for the requests and chosen subrequests, as upstream lists them
//!    ([`super::alloc_config`]).
//!
//! Cost: what does not depend on the node (classes, selectors, constraints, error texts) is
//! prepared once per cycle ([`Prepared`]); pools per node, allocated devices and CEL verdicts
//! come from the plugin's [`DraIndex`]. Per node, the search visits each device of the node's
//! pools once per device still needed when nothing backtracks, each visit a few array reads;
//! the allocation is kept as positions ([`Pick`]) and only the chosen node's is written out as
//! an `AllocationResult` ([`Prepared::materialize`]).

use std::sync::Arc;

use ksim_api::resource::{
    AllocationResult, CapacityRequirements, DeviceAllocationResult, DeviceClass,
    DeviceRequestAllocationResult, DeviceSelector, DeviceToleration, ResourceClaim, ResourceSlice,
    ALLOCATION_RESULTS_MAX_SIZE, MODE_ALL, MODE_EXACT_COUNT,
};
use ksim_api::Node;

use super::alloc_config::{allocation_config, Chosen};
pub use super::allocate_once::{allocate_once, allocate_once_with};
use super::binding_conditions;
use super::cel::CelCache;
use super::constraint::{constraint_add, constraint_remove, ConstraintSpec, MatchState};
use super::consumable_capacity as cc;
use super::device_taints::untolerated;
use super::index::{
    DraIndex, NodePools, Verdict, ALLOWS_MULTIPLE, CONSUMES_COUNTERS, HAS_BINDING_CONDITIONS,
};
use super::node_selector::node_selector;
use super::partitionable::{self, Attempt, CycleCounters};
use crate::cluster_objects::DraMap;
use crate::plugins::helper::CompiledNodeSelector;

/// The DRA feature gates the allocator reads (upstream `structured.Features`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Features {
    /// DRAAdminAccess.
    pub admin_access: bool,
    /// DRAPrioritizedList (`firstAvailable`).
    pub prioritized_list: bool,
    /// DRADeviceTaints (device `taints`, request `tolerations`).
    pub device_taints: bool,
    /// DRAPartitionableDevices: counters and per-device node selection
    /// ([`super::partitionable`]).
    pub partitionable_devices: bool,
    /// DRADeviceBindingConditions: devices with binding conditions are selectable, their
    /// conditions are copied into the result ([`super::binding_conditions`]).
    pub device_binding_conditions: bool,
    /// DRAConsumableCapacity (shared devices, capacity requests, `distinctAttribute`).
    pub consumable_capacity: bool,
}

impl Default for Features {
    /// v1.35's defaults: admin access and prioritized lists on, device taints, partitionable
    /// devices and consumable capacity off.
    fn default() -> Self {
        Features {
            admin_access: true,
            prioritized_list: true,
            device_taints: false,
            partitionable_devices: false,
            device_binding_conditions: false,
            consumable_capacity: false,
        }
    }
}

/// `DeviceID`: driver, pool, device.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DeviceId {
    pub driver: String,
    pub pool: String,
    pub device: String,
}

impl std::fmt::Display for DeviceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}/{}", self.driver, self.pool, self.device)
    }
}

/// Whether a slice's devices are reachable from `node` (`NodeMatches`).
pub fn slice_matches_node(slice: &ResourceSlice, node: &Node) -> bool {
    let spec = &slice.spec;
    match spec.node_name.as_deref() {
        Some(n) if !n.is_empty() => return n == node.metadata.name,
        _ => {}
    }
    if spec.all_nodes == Some(true) {
        return true;
    }
    match &spec.node_selector {
        Some(ns) => CompiledNodeSelector::new(ns).matches(node),
        None => false,
    }
}

/// `klog.KObj`: `namespace/name`, or the name alone without a namespace.
fn claim_ref(c: &ResourceClaim) -> String {
    if c.metadata.namespace.is_empty() {
        c.metadata.name.clone()
    } else {
        format!("{}/{}", c.metadata.namespace, c.metadata.name)
    }
}

/// One request or subrequest, as far as it does not depend on the node.
struct Request {
    name: String,
    parent: Option<String>,
    class: Arc<DeviceClass>,
    /// `class <name>`: the owner in selector error texts.
    class_owner: String,
    class_slots: Vec<u32>,
    slots: Vec<u32>,
    all: bool,
    admin_access: bool,
    /// ExactCount's `count`.
    count: usize,
    tolerations: Vec<DeviceToleration>,
    /// DRAConsumableCapacity: `capacity`.
    capacity: Option<CapacityRequirements>,
}

enum Entry {
    /// `exactly`.
    One(Result<Request, String>),
    /// `firstAvailable`, in order.
    Subs(Vec<Result<Request, String>>),
    /// A request the allocator refuses whatever the node.
    Err(String),
}

struct ClaimPrep {
    cref: String,
    requests: Vec<Entry>,
    constraints: Result<Vec<ConstraintSpec>, String>,
}

/// The node-independent part of allocating a pod's unallocated claims (upstream does it at
/// the start of each `Allocate`): made once per cycle by PreFilter.
pub struct Prepared {
    claims: Vec<Arc<ResourceClaim>>,
    prep: Vec<ClaimPrep>,
    /// The search must begin with an ExactCount request without admin access for at least
    /// one device, and nothing can fail before it on any node: then a node without a free
    /// usable device fails as the search would, without one.
    quick_reject: bool,
    /// One claim with one ExactCount request, no admin access, no constraints: the search is
    /// first fit without backtracking ([`Prepared::first_fit`]).
    single: bool,
    /// DRADeviceTaints: untolerated NoSchedule/NoExecute taints prevent allocation.
    device_taints: bool,
    /// DRAPartitionableDevices' counters of this cycle, made on first need.
    counters: Option<std::sync::OnceLock<Arc<CycleCounters>>>,
    /// DRAConsumableCapacity on.
    consumable: bool,
}

#[allow(clippy::too_many_arguments)]
fn request(
    features: Features,
    classes: &DraMap<DeviceClass>,
    index: &mut DraIndex,
    cel: &CelCache,
    cref: &str,
    name: &str,
    parent: Option<&str>,
    class_name: &str,
    selectors: &[DeviceSelector],
    mode: &str,
    count: i64,
    admin_access: bool,
    has_admin_access: bool,
    capacity: Option<&CapacityRequirements>,
) -> Result<Request, String> {
    if let Some(i) = selectors.iter().position(|s| s.cel.is_none()) {
        return Err(format!(
            "claim {cref}, request {name}, selector #{i}: CEL expression empty (unsupported selector type?)"
        ));
    }
    if !features.admin_access && has_admin_access {
        return Err(format!(
            "claim {cref}, request {name}: admin access is requested, but the feature is disabled"
        ));
    }
    if class_name.is_empty() {
        return Err(format!(
            "claim {cref}, request {name}: missing device class name (unsupported request type?)"
        ));
    }
    let Some(class) = classes.get(class_name) else {
        return Err(format!(
            "claim {cref}, request {name}: could not retrieve device class {class_name}: deviceclass.resource.k8s.io \"{class_name}\" not found"
        ));
    };
    let mut slots_of = |sels: &[DeviceSelector]| -> Vec<u32> {
        sels.iter()
            .map(|s| {
                let expr = s.cel.as_ref().map(|c| c.expression.as_str()).unwrap_or("");
                index.slot(cel, expr)
            })
            .collect()
    };
    let class_slots = slots_of(&class.spec.selectors);
    let slots = slots_of(selectors);
    let all = match mode {
        MODE_EXACT_COUNT => false,
        MODE_ALL => true,
        other => {
            return Err(format!(
                "claim {cref}, request {name}: unsupported count mode {other}"
            ))
        }
    };
    Ok(Request {
        name: name.to_string(),
        parent: parent.map(str::to_string),
        class_owner: format!("class {}", class.metadata.name),
        class: class.clone(),
        class_slots,
        slots,
        all,
        admin_access,
        count: count.max(0) as usize,
        tolerations: Vec::new(),
        capacity: capacity.cloned(),
    })
}

/// Each request's and subrequest's `tolerations` (DRADeviceTaints; also copied into the
/// allocation results).
fn set_tolerations(entries: &mut [Entry], requests: &[ksim_api::resource::DeviceRequest]) {
    for (entry, r) in entries.iter_mut().zip(requests) {
        match (entry, &r.exactly) {
            (Entry::One(Ok(q)), Some(e)) => q.tolerations = e.tolerations.clone(),
            (Entry::Subs(subs), _) => {
                for (q, s) in subs.iter_mut().zip(&r.first_available) {
                    if let Ok(q) = q {
                        q.tolerations = s.tolerations.clone();
                    }
                }
            }
            _ => {}
        }
    }
}

impl Prepared {
    /// Prepares `claims` (in pod order) against the classes, resolving each selector to its
    /// slot in `index`.
    pub fn new(
        features: Features,
        classes: &DraMap<DeviceClass>,
        index: &mut DraIndex,
        cel: &CelCache,
        claims: Vec<Arc<ResourceClaim>>,
    ) -> Prepared {
        let mut prep = Vec::with_capacity(claims.len());
        for claim in &claims {
            let cref = claim_ref(claim);
            let mut requests = Vec::new();
            for r in &claim.spec.devices.requests {
                let entry = if !r.first_available.is_empty() {
                    if !features.prioritized_list {
                        Entry::Err(format!(
                            "claim {cref}, request {}: has subrequests, but the DRAPrioritizedList feature is disabled",
                            r.name
                        ))
                    } else {
                        Entry::Subs(
                            r.first_available
                                .iter()
                                .map(|sub| {
                                    request(
                                        features,
                                        classes,
                                        index,
                                        cel,
                                        &cref,
                                        &sub.name,
                                        Some(&r.name),
                                        &sub.device_class_name,
                                        &sub.selectors,
                                        &sub.allocation_mode,
                                        sub.count,
                                        false,
                                        false,
                                        sub.capacity.as_ref(),
                                    )
                                })
                                .collect(),
                        )
                    }
                } else if let Some(e) = &r.exactly {
                    Entry::One(request(
                        features,
                        classes,
                        index,
                        cel,
                        &cref,
                        &r.name,
                        None,
                        &e.device_class_name,
                        &e.selectors,
                        &e.allocation_mode,
                        e.count,
                        e.admin_access.unwrap_or(false),
                        e.admin_access.is_some(),
                        e.capacity.as_ref(),
                    ))
                } else {
                    Entry::Err(format!(
                        "claim {cref}, request {}: missing device class name (unsupported request type?)",
                        r.name
                    ))
                };
                requests.push(cc::gate_off_error(features, &cref, r).map_or(entry, Entry::Err));
            }
            set_tolerations(&mut requests, &claim.spec.devices.requests);
            let mut constraints = Ok(Vec::new());
            for (i, c) in claim.spec.devices.constraints.iter().enumerate() {
                match (&c.match_attribute, &mut constraints) {
                    (Some(a), Ok(cs)) => cs.push(ConstraintSpec {
                        requests: c.requests.iter().cloned().collect(),
                        attribute: a.clone(),
                        distinct: false,
                    }),
                    (None, Ok(cs)) if c.distinct_attribute.is_some() => cs.push(ConstraintSpec {
                        requests: c.requests.iter().cloned().collect(),
                        attribute: c.distinct_attribute.clone().unwrap_or_default(),
                        distinct: true,
                    }),
                    (None, Ok(_)) => {
                        constraints = Err(format!(
                            "claim {cref}, constraint #{i}: empty constraint (unsupported constraint type?)"
                        ))
                    }
                    (_, Err(_)) => {}
                }
            }
            prep.push(ClaimPrep {
                cref,
                requests,
                constraints,
            });
        }
        // DRAConsumableCapacity: capacity only refuses more devices, so a node without a free
        // usable device still fails; first fit checks capacity where it can decide.
        let quick_reject = quick_reject(&prep);
        index.set_partitionable(features.partitionable_devices);
        index.set_binding_conditions(features.device_binding_conditions);
        // Counters make first fit miss what backtracking finds: no shortcut then.
        let counters =
            (features.partitionable_devices && index.counters.any()).then(std::sync::OnceLock::new);
        let single = quick_reject
            && counters.is_none()
            && matches!(prep.as_slice(), [cp] if cp.requests.len() == 1
                && cp.constraints.as_ref().is_ok_and(Vec::is_empty)
                && matches!(cp.requests[0], Entry::One(Ok(_))));
        Prepared {
            claims,
            prep,
            quick_reject,
            single,
            device_taints: features.device_taints,
            counters,
            consumable: features.consumable_capacity,
        }
    }

    /// Turns the shortcuts off (the tests compare answers with and without them).
    pub(super) fn without_shortcuts(&mut self) {
        self.quick_reject = false;
        self.single = false;
    }

    /// The claims, in pod order.
    pub fn claims(&self) -> &[Arc<ResourceClaim>] {
        &self.claims
    }

    fn request(&self, ci: usize, ri: usize, si: usize) -> Option<&Request> {
        match self.prep.get(ci)?.requests.get(ri)? {
            Entry::One(Ok(r)) if si == 0 => Some(r),
            Entry::Subs(subs) => subs.get(si)?.as_ref().ok(),
            _ => None,
        }
    }

    /// `Allocate` on `node`: `Ok(Some(picks))` (one list per claim, in order), `Ok(None)` when
    /// the node cannot satisfy them, `Err` when the attempt must fail as a whole (upstream
    /// returns an error, the Filter an Error status). `allocated` is per dense id of `index`.
    pub fn allocate(
        &self,
        index: &mut DraIndex,
        allocated: &[bool],
        node: &Arc<Node>,
    ) -> Result<Option<NodePicks>, String> {
        let pools = index.pools_for(node);
        if self.quick_reject
            && !pools
                .usable
                .iter()
                .any(|u| !allocated.get(u.id as usize).copied().unwrap_or(false))
        {
            return if pools.any_invalid {
                Err("invalid resource pools were encountered".into())
            } else {
                Ok(None)
            };
        }
        if self.single {
            return self.first_fit(index, allocated, &pools);
        }
        let counters = self.counters.as_ref().map(|c| {
            let c =
                c.get_or_init(|| Arc::new(index.counters.cycle(allocated, &index.api_allocated())));
            Attempt::new(c.clone())
        });
        let mut s = Search {
            p: self,
            idx: index,
            allocated,
            pools,
            all_devices: Vec::new(),
            constraints: Vec::new(),
            allocating: Vec::new(),
            capacity: Vec::new(),
            result: (0..self.claims.len()).map(|_| Vec::new()).collect(),
            counters,
        };
        s.prepare()?;
        match s.allocate_one((0, 0, 0, 0), false, Loc::default()) {
            Ok(true) => Ok(Some(NodePicks::Claims(s.result))),
            Ok(false) | Err(Fail::MaxSize) => {
                if s.pools.any_invalid {
                    return Err("invalid resource pools were encountered".into());
                }
                Ok(None)
            }
            Err(Fail::Fatal(e)) => Err(e),
        }
    }

    /// The search for [`Prepared::single`]: with one request and no constraint, backtracking
    /// never finds what the first pass missed (it revisits the same devices, whose verdicts,
    /// errors included, it has already seen), so the first `count` free selectable devices in
    /// pool, slice and device order are the answer, and a runtime error on a device reached
    /// before them is the error.
    fn first_fit(
        &self,
        index: &mut DraIndex,
        allocated: &[bool],
        pools: &NodePools,
    ) -> Result<Option<NodePicks>, String> {
        let Some(Entry::One(Ok(r))) = self.prep[0].requests.first() else {
            return Err("internal error: no request data for claim #0 request #0".into());
        };
        let mut picks: smallvec::SmallVec<[Pick; 1]> = smallvec::SmallVec::new();
        // `usable` lists the devices of the complete, valid pools in pool, slice and device
        // order: the order of the search's walk.
        for u in &pools.usable {
            if allocated.get(u.id as usize).copied().unwrap_or(false) {
                continue;
            }
            let (s, dj) = (u.slice, u.device as usize);
            if !selectable_at(index, &self.prep[0].cref, r, s, dj, u.pos)?
                || pools.hidden.binary_search(&u.pos).is_ok()
            {
                continue;
            }
            if index.flags[u.pos as usize] & CONSUMES_COUNTERS != 0 {
                continue;
            }
            if self.device_taints && untolerated(index, s, dj, &r.tolerations) {
                continue;
            }
            // One request takes a device once, so this attempt consumed nothing on it yet.
            if self.consumable
                && (r.capacity.is_some() || index.flags[u.pos as usize] & ALLOWS_MULTIPLE != 0)
                && cc::search_fit(index, s, dj, r.capacity.as_ref(), &[]).is_none()
            {
                continue;
            }
            picks.push(Pick {
                ri: 0,
                si: None,
                id: u.id,
                slice: s,
                device: u.device,
                admin_access: false,
                loc: Loc {
                    pool: u.pool_index as usize,
                    slice: u.slice_in_pool as usize,
                    device: dj,
                },
            });
            if picks.len() == r.count {
                break;
            }
        }
        if picks.len() == r.count {
            return Ok(Some(match picks.len() {
                1 => NodePicks::One(picks.swap_remove(0)),
                _ => NodePicks::Claims(vec![picks.into_vec()]),
            }));
        }
        if pools.any_invalid {
            return Err("invalid resource pools were encountered".into());
        }
        Ok(None)
    }

    /// The allocation results of `picks` on `node` (`createNodeSelector` for each claim).
    pub fn materialize(
        &self,
        index: &DraIndex,
        node: &str,
        picks: &NodePicks,
    ) -> Vec<AllocationResult> {
        let mut out = Vec::with_capacity(picks.len());
        for ci in 0..picks.len() {
            let claim_picks = picks.claim(ci);
            let results = claim_picks
                .iter()
                .map(|p| {
                    let slice = &index.slices[p.slice as usize];
                    let r = self.request(ci, p.ri, p.si.unwrap_or(0));
                    let name = match r {
                        Some(r) => match &r.parent {
                            Some(par) => format!("{par}/{}", r.name),
                            None => r.name.clone(),
                        },
                        None => String::new(),
                    };
                    let device = &slice.spec.devices[p.device as usize];
                    let req = r;
                    let mut r = DeviceRequestAllocationResult {
                        request: name,
                        driver: slice.spec.driver.clone(),
                        pool: slice.spec.pool.name.clone(),
                        device: device.name.clone(),
                        admin_access: p.admin_access.then_some(true),
                        tolerations: req.map(|r| r.tolerations.clone()).unwrap_or_default(),
                        ..binding_conditions::result_conditions(index, slice, p.device)
                    };
                    cc::share(
                        self.consumable,
                        &self.claims[ci],
                        req.and_then(|r| r.capacity.as_ref()),
                        device,
                        &mut r,
                    );
                    r
                })
                .collect();
            let claim = &self.claims[ci];
            let chosen: Vec<Option<Chosen>> = (0..claim.spec.devices.requests.len())
                .map(|ri| {
                    let sub = match self.prep[ci].requests.get(ri)? {
                        Entry::Subs(_) => claim_picks.iter().find(|p| p.ri == ri)?.si,
                        _ => None,
                    };
                    let r = self.request(ci, ri, sub.unwrap_or(0))?;
                    Some(Chosen {
                        name: match &r.parent {
                            Some(p) => format!("{p}/{}", r.name),
                            None => r.name.clone(),
                        },
                        class: r.class.clone(),
                        sub,
                    })
                })
                .collect();
            out.push(AllocationResult {
                devices: DeviceAllocationResult {
                    results,
                    config: allocation_config(claim, &chosen),
                },
                node_selector: node_selector(index, node, claim_picks),
                allocation_timestamp: None,
            });
        }
        out
    }
}

/// Whether [`Prepared::quick_reject`] holds: no request or constraint is refused, none is
/// All mode (whose per-node checks can fail), no claim needs more devices than allowed, and
/// the first request of the first claim needs at least one device without admin access.
fn quick_reject(prep: &[ClaimPrep]) -> bool {
    let mut first = true;
    for cp in prep {
        if cp.constraints.is_err() {
            return false;
        }
        let mut min_devices = 0usize;
        for entry in &cp.requests {
            let reqs: Vec<&Result<Request, String>> = match entry {
                Entry::Err(_) => return false,
                Entry::One(r) => vec![r],
                Entry::Subs(subs) => subs.iter().collect(),
            };
            let mut min = usize::MAX;
            for r in reqs {
                let Ok(r) = r else {
                    return false;
                };
                if r.all {
                    return false;
                }
                min = min.min(r.count);
            }
            min_devices = min_devices.saturating_add(min);
            if first {
                first = false;
                match entry {
                    Entry::One(Ok(r)) if !r.admin_access && r.count >= 1 => {}
                    _ => return false,
                }
            }
        }
        if min_devices > ALLOCATION_RESULTS_MAX_SIZE {
            return false;
        }
    }
    !first
}

/// `computeScore` on picks: `8 − i` for each `firstAvailable` request of `claim` whose
/// subrequest `i` was chosen.
pub fn score_picks(claim: &ResourceClaim, picks: &[Pick]) -> i64 {
    let mut score = 0;
    for (ri, r) in claim.spec.devices.requests.iter().enumerate() {
        if r.first_available.is_empty() {
            continue;
        }
        if let Some(si) = picks.iter().find(|p| p.ri == ri).and_then(|p| p.si) {
            score += ksim_api::resource::FIRST_AVAILABLE_MAX_SIZE as i64 - si as i64;
        }
    }
    score
}

/// `isSelectable`: the class's selectors, then the request's, on device `d` of slice `s`.
fn selectable(
    index: &mut DraIndex,
    cref: &str,
    r: &Request,
    s: u32,
    d: usize,
) -> Result<bool, String> {
    let pos = index.position(s, d);
    selectable_at(index, cref, r, s, d, pos)
}

/// [`selectable`] with the device's position known.
fn selectable_at(
    index: &mut DraIndex,
    cref: &str,
    r: &Request,
    s: u32,
    d: usize,
    pos: u32,
) -> Result<bool, String> {
    // DRADeviceBindingConditions off: such devices are never selectable.
    if !index.binding_conditions && index.flags[pos as usize] & HAS_BINDING_CONDITIONS != 0 {
        return Ok(false);
    }
    for (slots, class) in [(&r.class_slots, true), (&r.slots, false)] {
        for (i, &slot) in slots.iter().enumerate() {
            let err = match index.verdict(slot, s, d, pos) {
                Verdict::Match => continue,
                Verdict::NoMatch => return Ok(false),
                Verdict::Compile(e) => format!("CEL compile error: {e}"),
                Verdict::Runtime(e) => format!("CEL runtime error: {e}"),
            };
            let owner = if class {
                r.class_owner.clone()
            } else {
                format!("claim {cref}")
            };
            // Upstream's text names the selector, not the device.
            return Err(format!("{owner}: selector #{i}: {err}"));
        }
    }
    Ok(true)
}

/// Whether the device consumes counters: with DRAPartitionableDevices off it is never
/// allocated, with it on only when its counters fit ([`partitionable::take`]).
fn consumes_counters(index: &DraIndex, s: u32, d: usize) -> bool {
    index.flags[index.position(s, d) as usize] & CONSUMES_COUNTERS != 0
}

/// The devices picked on one node, per claim to allocate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodePicks {
    /// One claim, one device (most pods): no list to allocate.
    One(Pick),
    /// Per claim, its devices.
    Claims(Vec<Vec<Pick>>),
}

impl NodePicks {
    /// The number of claims.
    pub fn len(&self) -> usize {
        match self {
            NodePicks::One(_) => 1,
            NodePicks::Claims(c) => c.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Claim `k`'s devices (none beyond the last claim).
    pub fn claim(&self, k: usize) -> &[Pick] {
        match self {
            NodePicks::One(p) if k == 0 => std::slice::from_ref(p),
            NodePicks::One(_) => &[],
            NodePicks::Claims(c) => c.get(k).map_or(&[], Vec::as_slice),
        }
    }
}

/// A device by position among the node's pools: pool, slice, device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
struct Loc {
    pool: usize,
    slice: usize,
    device: usize,
}

/// A device the search picked for a claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pick {
    /// The request (index in the claim) and, for `firstAvailable`, the subrequest.
    pub ri: usize,
    pub si: Option<usize>,
    /// Dense id in the index.
    pub id: u32,
    /// Slice (index in the index) and device (index in the slice).
    pub slice: u32,
    pub device: u32,
    pub admin_access: bool,
    loc: Loc,
}

enum Fail {
    MaxSize,
    Fatal(String),
}

/// One allocation attempt for one node.
struct Search<'p, 'i> {
    p: &'p Prepared,
    idx: &'i mut DraIndex,
    allocated: &'p [bool],
    pools: Arc<NodePools>,
    /// All-mode requests' devices on this node, by (claim, request, subrequest).
    all_devices: Vec<((usize, usize, usize), Vec<Loc>)>,
    constraints: Vec<Vec<MatchState>>,
    /// Devices picked in this attempt, with the claim that picked them.
    allocating: Vec<(u32, usize)>,
    /// DRAConsumableCapacity: what this attempt's picks of shared devices consume.
    capacity: Vec<(u32, cc::Consumed)>,
    result: Vec<Vec<Pick>>,
    /// DRAPartitionableDevices: the counters this attempt took (`None`: gate off).
    counters: Option<Attempt>,
}

impl Search<'_, '_> {
    /// The per-node part of `Allocate`'s validation, in upstream's order.
    fn prepare(&mut self) -> Result<(), String> {
        let p = self.p;
        for (ci, cp) in p.prep.iter().enumerate() {
            let mut min_devices = 0usize;
            for (ri, entry) in cp.requests.iter().enumerate() {
                match entry {
                    Entry::Err(e) => return Err(e.clone()),
                    Entry::One(r) => {
                        let r = r.as_ref().map_err(Clone::clone)?;
                        min_devices += self.num_for(ci, (ri, 0), r)?;
                    }
                    Entry::Subs(subs) => {
                        let mut min = usize::MAX;
                        for (si, r) in subs.iter().enumerate() {
                            let r = r.as_ref().map_err(Clone::clone)?;
                            min = min.min(self.num_for(ci, (ri, si), r)?);
                        }
                        min_devices = min_devices.saturating_add(min);
                    }
                }
            }
            if min_devices > ALLOCATION_RESULTS_MAX_SIZE {
                return Err(format!(
                    "claim {}: number of requested devices {min_devices} exceeds the claim limit of {ALLOCATION_RESULTS_MAX_SIZE}",
                    cp.cref
                ));
            }
            match &cp.constraints {
                Err(e) => return Err(e.clone()),
                // Claims without constraints need no state (the first with some fills the
                // states of those before it).
                Ok(cs) if cs.is_empty() && self.constraints.is_empty() => {}
                Ok(cs) => {
                    while self.constraints.len() < ci {
                        self.constraints.push(Vec::new());
                    }
                    self.constraints
                        .push(cs.iter().map(|_| MatchState::default()).collect());
                }
            }
        }
        Ok(())
    }

    /// The number of devices a request needs on this node; for All mode, every selectable
    /// device of the node's pools (an error when a pool is incomplete or invalid).
    fn num_for(
        &mut self,
        ci: usize,
        (ri, si): (usize, usize),
        r: &Request,
    ) -> Result<usize, String> {
        if !r.all {
            return Ok(r.count);
        }
        let cref = &self.p.prep[ci].cref;
        let pools = self.pools.clone();
        let mut list = Vec::new();
        for (pi, pool) in pools.pools.iter().enumerate() {
            let pid = format!("{}/{}", pool.driver, pool.name);
            if pool.incomplete {
                return Err(format!(
                    "claim {cref}, request {}: asks for all devices, but resource pool {pid} is currently being updated",
                    r.name
                ));
            }
            if pool.invalid {
                return Err(format!(
                    "claim {cref}, request {}: asks for all devices, but resource pool {pid} is currently invalid",
                    r.name
                ));
            }
            for (sj, &s) in pool.slices.iter().enumerate() {
                for dj in 0..self.idx.slices[s as usize].spec.devices.len() {
                    let loc = Loc {
                        pool: pi,
                        slice: sj,
                        device: dj,
                    };
                    if self.selectable(ci, r, loc)? && self.fits(r, loc).is_some() {
                        list.push(loc);
                    }
                }
            }
        }
        let n = list.len();
        self.all_devices.push(((ci, ri, si), list));
        Ok(n)
    }

    fn slice_of(&self, loc: Loc) -> u32 {
        self.pools.pools[loc.pool].slices[loc.slice]
    }

    fn device_id(&self, loc: Loc) -> DeviceId {
        let s = &self.idx.slices[self.slice_of(loc) as usize];
        DeviceId {
            driver: s.spec.driver.clone(),
            pool: s.spec.pool.name.clone(),
            device: s.spec.devices[loc.device].name.clone(),
        }
    }

    /// `isSelectable` on the device at `loc`.
    fn selectable(&mut self, ci: usize, r: &Request, loc: Loc) -> Result<bool, String> {
        let s = self.slice_of(loc);
        let pos = self.idx.position(s, loc.device);
        Ok(
            selectable(self.idx, &self.p.prep[ci].cref, r, s, loc.device)?
                && self.pools.hidden.binary_search(&pos).is_err(),
        )
    }

    /// DRAConsumableCapacity (`CmpRequestOverCapacity`): `None` when the device at `loc`
    /// lacks capacity for `r`; `Some(Some(consumed))` for a shared device, `Some(None)`
    /// otherwise (and always with the gate off).
    fn fits(&self, r: &Request, loc: Loc) -> Option<Option<cc::Consumed>> {
        if !self.p.consumable {
            return Some(None);
        }
        let s = self.slice_of(loc);
        cc::search_fit(self.idx, s, loc.device, r.capacity.as_ref(), &self.capacity)
    }

    fn in_use(&self, id: u32) -> bool {
        self.allocated.get(id as usize).copied().unwrap_or(false)
            || self.allocating.iter().any(|&(d, _)| d == id)
    }

    fn allocating_for_claim(&self, id: u32, claim: usize) -> bool {
        self.allocating.contains(&(id, claim))
    }

    /// `allocateOne`; `r` is (claim, request, subrequest, device index).
    fn allocate_one(
        &mut self,
        r: (usize, usize, usize, usize),
        in_sub: bool,
        start: Loc,
    ) -> Result<bool, Fail> {
        let p = self.p;
        let (ci, ri, si, di) = r;
        if ci >= p.claims.len() {
            return Ok(true);
        }
        if ri >= p.claims[ci].spec.devices.requests.len() {
            return match self.allocate_one((ci + 1, 0, 0, 0), false, Loc::default()) {
                Err(Fail::MaxSize) => Ok(false),
                other => other,
            };
        }
        if let (false, Some(Entry::Subs(subs))) = (in_sub, p.prep[ci].requests.get(ri)) {
            let mut all_exceeded = true;
            for sub in 0..subs.len() {
                match self.allocate_one((ci, ri, sub, 0), true, Loc::default()) {
                    Err(Fail::MaxSize) => continue,
                    Err(e) => return Err(e),
                    Ok(true) => return Ok(true),
                    Ok(false) => all_exceeded = false,
                }
            }
            return if all_exceeded {
                Err(Fail::MaxSize)
            } else {
                Ok(false)
            };
        }
        let Some(d) = p.request(ci, ri, si) else {
            return Err(Fail::Fatal(format!(
                "internal error: no request data for claim #{ci} request #{ri}"
            )));
        };
        let key = (ci, ri, si);
        let all = if d.all {
            let Some((_, list)) = self.all_devices.iter().find(|(k, _)| *k == key) else {
                return Err(Fail::Fatal(format!(
                    "internal error: no device list for claim #{ci} request #{ri}"
                )));
            };
            Some(list.clone())
        } else {
            None
        };
        let num = all.as_ref().map_or(d.count, Vec::len);
        if all.as_ref().is_some_and(Vec::is_empty) {
            return Ok(false);
        }
        if di >= num {
            return self.allocate_one((ci, ri + 1, 0, 0), false, Loc::default());
        }
        if self.result[ci].len() + num - di > ALLOCATION_RESULTS_MAX_SIZE {
            return Err(Fail::MaxSize);
        }
        if let Some(list) = all {
            let loc = list[di];
            if !self.allocate_device(key, loc, true)? {
                return Ok(false);
            }
            return match self.allocate_one((ci, ri, si, di + 1), in_sub, Loc::default()) {
                Ok(true) => Ok(true),
                other => {
                    self.deallocate(key);
                    other
                }
            };
        }
        let admin = d.admin_access;
        let pools = self.pools.clone();
        let pools = &pools.pools;
        for (pi, pool) in pools.iter().enumerate().skip(start.pool) {
            if pool.incomplete || pool.invalid {
                continue;
            }
            let slice_start = if pi == start.pool { start.slice } else { 0 };
            for sj in slice_start..pool.slices.len() {
                let s = pool.slices[sj];
                let dev_start = if pi == start.pool && sj == start.slice {
                    start.device
                } else {
                    0
                };
                for dj in dev_start..self.idx.slices[s as usize].spec.devices.len() {
                    let loc = Loc {
                        pool: pi,
                        slice: sj,
                        device: dj,
                    };
                    let id = self.idx.dense_id(s, dj);
                    if admin && self.allocating_for_claim(id, ci) {
                        continue;
                    }
                    if !admin && self.in_use(id) {
                        continue;
                    }
                    if !self.selectable(ci, d, loc).map_err(Fail::Fatal)? {
                        continue;
                    }
                    if self.fits(d, loc).is_none() {
                        continue;
                    }
                    if !self.allocate_device(key, loc, false)? {
                        continue;
                    }
                    let next = Loc {
                        pool: pi,
                        slice: sj,
                        device: dj + 1,
                    };
                    match self.allocate_one((ci, ri, si, di + 1), in_sub, next) {
                        Ok(true) => return Ok(true),
                        Ok(false) => self.deallocate(key),
                        Err(e) => {
                            self.deallocate(key);
                            return Err(e);
                        }
                    }
                }
            }
        }
        Ok(false)
    }

    /// `allocateDevice`: availability and constraints; records the pick.
    fn allocate_device(
        &mut self,
        key: (usize, usize, usize),
        loc: Loc,
        must: bool,
    ) -> Result<bool, Fail> {
        let p = self.p;
        let (ci, ri, si) = key;
        let Some(d) = p.request(ci, ri, si) else {
            return Err(Fail::Fatal("internal error: request data".into()));
        };
        let s = self.slice_of(loc);
        let id = self.idx.dense_id(s, loc.device);
        let admin = d.admin_access;
        if admin && self.allocating_for_claim(id, ci) {
            return Ok(false);
        }
        if !admin && self.in_use(id) {
            return Ok(false);
        }
        let pos = self.idx.position(s, loc.device);
        if consumes_counters(self.idx, s, loc.device)
            && (self.counters.is_none()
                || !cc::counters_held(self.idx, s, loc.device, &self.capacity))
            && !partitionable::take(&mut self.counters, &self.idx.counters, pos)
        {
            return Ok(false);
        }
        if p.device_taints && untolerated(self.idx, s, loc.device, &d.tolerations) {
            return Ok(false);
        }
        let Some(consumed) = self.fits(d, loc) else {
            return Ok(false);
        };
        let (base, sub) = match &d.parent {
            Some(par) => (par.as_str(), Some(d.name.as_str())),
            None => (d.name.as_str(), None),
        };
        let specs = match &p.prep[ci].constraints {
            Ok(cs) => cs,
            Err(e) => return Err(Fail::Fatal(e.clone())),
        };
        if !specs.is_empty() {
            let slice = self.idx.slices[s as usize].clone();
            let device = &slice.spec.devices[loc.device];
            for i in 0..specs.len() {
                let st = &mut self.constraints[ci][i];
                if !constraint_add(&specs[i], st, base, sub, &slice.spec.driver, device) {
                    if must {
                        return Err(Fail::Fatal(format!(
                            "claim {}, request {}: cannot add device {} because a claim constraint would not be satisfied",
                            p.prep[ci].cref,
                            d.name,
                            self.device_id(loc)
                        )));
                    }
                    for (e, spec) in specs.iter().enumerate().take(i) {
                        constraint_remove(spec, &mut self.constraints[ci][e], base, sub);
                    }
                    return Ok(false);
                }
            }
        }
        match consumed {
            Some(c) => self.capacity.push((id, c)),
            None => self.allocating.push((id, ci)),
        }
        self.result[ci].push(Pick {
            ri,
            si: d.parent.as_ref().map(|_| si),
            id,
            slice: s,
            device: loc.device as u32,
            admin_access: admin,
            loc,
        });
        Ok(true)
    }

    fn deallocate(&mut self, key: (usize, usize, usize)) {
        let p = self.p;
        let (ci, _, _) = key;
        let Some(pick) = self.result[ci].pop() else {
            return;
        };
        if let (Some(d), Ok(specs)) = (
            p.request(ci, pick.ri, pick.si.unwrap_or(0)),
            &p.prep[ci].constraints,
        ) {
            let (base, sub) = match &d.parent {
                Some(par) => (par.as_str(), Some(d.name.as_str())),
                None => (d.name.as_str(), None),
            };
            for (i, spec) in specs.iter().enumerate() {
                constraint_remove(spec, &mut self.constraints[ci][i], base, sub);
            }
        }
        if let Some(i) = self.allocating.iter().rposition(|&x| x == (pick.id, ci)) {
            self.allocating.remove(i);
        } else if let Some(i) = self.capacity.iter().rposition(|x| x.0 == pick.id) {
            self.capacity.remove(i);
        }
        let pos = self.idx.position(pick.slice, pick.device as usize);
        // Without counters in this attempt there is nothing to give back (and no device
        // struct to read on every undo).
        if self.counters.is_some()
            && !cc::counters_held(self.idx, pick.slice, pick.device as usize, &self.capacity)
        {
            partitionable::give_back(&mut self.counters, &self.idx.counters, pos);
        }
    }
}
