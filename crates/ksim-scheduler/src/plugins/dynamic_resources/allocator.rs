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
//! 5. **Config** (`Allocate`): the classes' config (`FromClass`) and the claim's config
//!    (`FromClaim`) for the requests and chosen subrequests, as upstream lists them.
//!
//! Cost: gathering pools is linear in the cluster's slices; the search visits each device of
//! the node's pools once per device still needed when nothing backtracks, and each CEL verdict
//! is computed once per (request, device) per node.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use ksim_api::resource::{
    AllocationResult, DeviceAllocationResult, DeviceAttribute, DeviceClass,
    DeviceRequestAllocationResult, DeviceSelector, ResourceClaim, ResourceSlice,
    ALLOCATION_RESULTS_MAX_SIZE, MODE_ALL, MODE_EXACT_COUNT,
};
use ksim_api::{Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm};
use rustc_hash::FxHashMap;

use super::alloc_config::{allocation_config, Chosen};
use super::cel::{device_value, root_context, CelCache, DeviceValue};
use crate::plugins::helper::CompiledNodeSelector;

/// The DRA feature gates the allocator reads (upstream `structured.Features`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Features {
    /// DRAAdminAccess.
    pub admin_access: bool,
    /// DRAPrioritizedList (`firstAvailable`).
    pub prioritized_list: bool,
}

impl Default for Features {
    /// v1.35's and v1.36's defaults: both on.
    fn default() -> Self {
        Features {
            admin_access: true,
            prioritized_list: true,
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

/// A pool gathered for one node.
pub struct Pool {
    pub driver: String,
    pub name: String,
    pub incomplete: bool,
    pub invalid: bool,
    pub slices: Vec<Arc<ResourceSlice>>,
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

/// `GatherPools`: `slices` are all the cluster's slices in name order.
pub fn gather_pools(slices: &[Arc<ResourceSlice>], node: &Node) -> Vec<Pool> {
    let mut pools: BTreeMap<(String, String), Pool> = BTreeMap::new();
    for s in slices {
        if !slice_matches_node(s, node) {
            continue;
        }
        let key = (s.spec.driver.clone(), s.spec.pool.name.clone());
        let pool = pools.entry(key).or_insert_with(|| Pool {
            driver: s.spec.driver.clone(),
            name: s.spec.pool.name.clone(),
            incomplete: false,
            invalid: false,
            slices: Vec::new(),
        });
        match pool.slices.first().map(|f| f.spec.pool.generation) {
            Some(g) if s.spec.pool.generation < g => continue,
            Some(g) if s.spec.pool.generation > g => pool.slices.clear(),
            _ => {}
        }
        pool.slices.push(s.clone());
    }
    let mut out = Vec::with_capacity(pools.len());
    for (_, mut pool) in pools {
        let Some(first) = pool.slices.first() else {
            continue;
        };
        let generation = first.spec.pool.generation;
        let want = first.spec.pool.resource_slice_count;
        if pool.slices.len() as i64 != want {
            // checkSlicesInPool: count the generation's slices over the whole cluster.
            let mut n = 0i64;
            let mut obsolete = false;
            for s in slices {
                if s.spec.driver != pool.driver || s.spec.pool.name != pool.name {
                    continue;
                }
                if s.spec.pool.generation == generation {
                    n += 1;
                } else if s.spec.pool.generation > generation {
                    obsolete = true;
                    break;
                }
            }
            if obsolete {
                continue;
            }
            pool.incomplete = n != want;
        }
        let mut names = BTreeSet::new();
        pool.invalid = pool
            .slices
            .iter()
            .flat_map(|s| s.spec.devices.iter())
            .any(|d| !names.insert(d.name.as_str()));
        out.push(pool);
    }
    out
}

/// What every allocation on any node of one cycle shares.
pub struct Allocator<'a> {
    pub features: Features,
    pub classes: &'a BTreeMap<String, Arc<DeviceClass>>,
    /// Every slice of the cluster, by name.
    pub slices: &'a [Arc<ResourceSlice>],
    /// Devices allocated to some claim (in the API or in flight), admin-access results excepted.
    pub allocated: &'a BTreeSet<DeviceId>,
    pub cel: &'a CelCache,
    /// The claims to allocate, in pod order.
    pub claims: &'a [Arc<ResourceClaim>],
}

/// One request or subrequest as the search sees it.
struct RequestData<'a> {
    name: &'a str,
    parent: Option<&'a str>,
    class: Arc<DeviceClass>,
    selectors: &'a [DeviceSelector],
    all: bool,
    admin_access: bool,
    num_devices: usize,
    all_devices: Vec<Loc>,
}

/// A device by position: pool, slice, device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
struct Loc {
    pool: usize,
    slice: usize,
    device: usize,
}

struct MatchAttribute {
    requests: BTreeSet<String>,
    attribute: String,
    value: Option<DeviceAttribute>,
    count: usize,
}

impl MatchAttribute {
    fn applies(&self, request: &str, sub: Option<&str>) -> bool {
        if self.requests.is_empty() {
            return true;
        }
        match sub {
            None => self.requests.contains(request),
            Some(s) => {
                self.requests.contains(request) || self.requests.contains(&format!("{request}/{s}"))
            }
        }
    }

    fn add(
        &mut self,
        request: &str,
        sub: Option<&str>,
        driver: &str,
        d: &ksim_api::resource::Device,
    ) -> bool {
        if !self.applies(request, sub) {
            return true;
        }
        let Some(attr) = lookup_attribute(d, driver, &self.attribute) else {
            return false;
        };
        if self.count == 0 {
            self.value = Some(attr.clone());
            self.count = 1;
            return true;
        }
        let Some(v) = &self.value else {
            return false;
        };
        let same = match (&attr.string, &attr.int, &attr.bool, &attr.version) {
            (Some(s), _, _, _) => v.string.as_ref() == Some(s),
            (_, Some(i), _, _) => v.int.as_ref() == Some(i),
            (_, _, Some(b), _) => v.bool.as_ref() == Some(b),
            (_, _, _, Some(x)) => v.version.as_ref() == Some(x),
            _ => false,
        };
        if same {
            self.count += 1;
        }
        same
    }

    fn remove(&mut self, request: &str, sub: Option<&str>) {
        if self.applies(request, sub) {
            self.count = self.count.saturating_sub(1);
        }
    }
}

/// `lookupAttribute`: the fully qualified name, or the bare name when the domain is the driver.
fn lookup_attribute<'d>(
    d: &'d ksim_api::resource::Device,
    driver: &str,
    qualified: &str,
) -> Option<&'d DeviceAttribute> {
    if let Some(a) = d.attributes.get(qualified) {
        return Some(a);
    }
    let (domain, id) = qualified.split_once('/')?;
    if domain != driver {
        return None;
    }
    d.attributes.get(id)
}

struct Picked {
    request: String,
    parent: Option<String>,
    id: DeviceId,
    loc: Loc,
    admin_access: bool,
}

enum Fail {
    MaxSize,
    Fatal(String),
}

/// One allocation attempt for one node.
struct Search<'a, 'b> {
    a: &'b Allocator<'a>,
    node: &'b Node,
    pools: Vec<Pool>,
    requests: BTreeMap<(usize, usize, usize), RequestData<'a>>,
    selected_sub: BTreeMap<(usize, usize), usize>,
    constraints: Vec<Vec<MatchAttribute>>,
    allocating: FxHashMap<DeviceId, BTreeSet<usize>>,
    result: Vec<Vec<Picked>>,
    matches: FxHashMap<((usize, usize, usize), Loc), bool>,
    values: FxHashMap<Loc, DeviceValue>,
    root: cel::Context<'static, 'static>,
}

impl<'a> Allocator<'a> {
    /// `Allocate`: `Ok(Some(results))` (one per claim, in order), `Ok(None)` when the node
    /// cannot satisfy them, `Err` when the attempt must fail as a whole (upstream returns an
    /// error, the Filter an Error status).
    pub fn allocate(&self, node: &Node) -> Result<Option<Vec<AllocationResult>>, String> {
        let pools = gather_pools(self.slices, node);
        let mut s = Search {
            a: self,
            node,
            pools,
            requests: BTreeMap::new(),
            selected_sub: BTreeMap::new(),
            constraints: Vec::new(),
            allocating: FxHashMap::default(),
            result: (0..self.claims.len()).map(|_| Vec::new()).collect(),
            matches: FxHashMap::default(),
            values: FxHashMap::default(),
            root: root_context(),
        };
        s.prepare()?;
        match s.allocate_one((0, 0, 0, 0), false, Loc::default()) {
            Ok(true) => {}
            Ok(false) | Err(Fail::MaxSize) => {
                if s.pools.iter().any(|p| p.invalid) {
                    return Err("invalid resource pools were encountered".into());
                }
                return Ok(None);
            }
            Err(Fail::Fatal(e)) => return Err(e),
        }
        Ok(Some(s.results()))
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

impl<'a> Search<'a, '_> {
    fn prepare(&mut self) -> Result<(), String> {
        let claims = self.a.claims;
        for (ci, claim) in claims.iter().enumerate() {
            let cref = claim_ref(claim);
            let mut min_devices = 0usize;
            for (ri, r) in claim.spec.devices.requests.iter().enumerate() {
                if !r.first_available.is_empty() {
                    if !self.a.features.prioritized_list {
                        return Err(format!(
                            "claim {cref}, request {}: has subrequests, but the DRAPrioritizedList feature is disabled",
                            r.name
                        ));
                    }
                    let mut min = usize::MAX;
                    for (si, sub) in r.first_available.iter().enumerate() {
                        let d = self.request_data(
                            &cref,
                            &sub.name,
                            Some(&r.name),
                            &sub.device_class_name,
                            &sub.selectors,
                            &sub.allocation_mode,
                            sub.count,
                            false,
                            false,
                            (ci, ri, si),
                        )?;
                        min = min.min(d.num_devices);
                        self.requests.insert((ci, ri, si), d);
                    }
                    min_devices += min;
                } else if let Some(e) = &r.exactly {
                    let d = self.request_data(
                        &cref,
                        &r.name,
                        None,
                        &e.device_class_name,
                        &e.selectors,
                        &e.allocation_mode,
                        e.count,
                        e.admin_access.unwrap_or(false),
                        e.admin_access.is_some(),
                        (ci, ri, 0),
                    )?;
                    min_devices += d.num_devices;
                    self.requests.insert((ci, ri, 0), d);
                } else {
                    return Err(format!(
                        "claim {cref}, request {}: missing device class name (unsupported request type?)",
                        r.name
                    ));
                }
            }
            if min_devices > ALLOCATION_RESULTS_MAX_SIZE {
                return Err(format!(
                    "claim {cref}: number of requested devices {min_devices} exceeds the claim limit of {ALLOCATION_RESULTS_MAX_SIZE}"
                ));
            }
            let mut cs = Vec::new();
            for (i, c) in claim.spec.devices.constraints.iter().enumerate() {
                match &c.match_attribute {
                    Some(a) => cs.push(MatchAttribute {
                        requests: c.requests.iter().cloned().collect(),
                        attribute: a.clone(),
                        value: None,
                        count: 0,
                    }),
                    None => {
                        return Err(format!(
                            "claim {cref}, constraint #{i}: empty constraint (unsupported constraint type?)"
                        ))
                    }
                }
            }
            self.constraints.push(cs);
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    fn request_data(
        &mut self,
        cref: &str,
        name: &'a str,
        parent: Option<&'a str>,
        class_name: &str,
        selectors: &'a [DeviceSelector],
        mode: &str,
        count: i64,
        admin_access: bool,
        has_admin_access: bool,
        key: (usize, usize, usize),
    ) -> Result<RequestData<'a>, String> {
        if let Some(i) = selectors.iter().position(|s| s.cel.is_none()) {
            return Err(format!(
                "claim {cref}, request {name}, selector #{i}: CEL expression empty (unsupported selector type?)"
            ));
        }
        if !self.a.features.admin_access && has_admin_access {
            return Err(format!(
                "claim {cref}, request {name}: admin access is requested, but the feature is disabled"
            ));
        }
        if class_name.is_empty() {
            return Err(format!(
                "claim {cref}, request {name}: missing device class name (unsupported request type?)"
            ));
        }
        let Some(class) = self.a.classes.get(class_name).cloned() else {
            return Err(format!(
                "claim {cref}, request {name}: could not retrieve device class {class_name}: deviceclass.resource.k8s.io \"{class_name}\" not found"
            ));
        };
        let mut d = RequestData {
            name,
            parent,
            class,
            selectors,
            all: mode == MODE_ALL,
            admin_access,
            num_devices: 0,
            all_devices: Vec::new(),
        };
        match mode {
            MODE_EXACT_COUNT => d.num_devices = count.max(0) as usize,
            MODE_ALL => {
                for pi in 0..self.pools.len() {
                    let pool = &self.pools[pi];
                    let pid = format!("{}/{}", pool.driver, pool.name);
                    if pool.incomplete {
                        return Err(format!(
                            "claim {cref}, request {name}: asks for all devices, but resource pool {pid} is currently being updated"
                        ));
                    }
                    if pool.invalid {
                        return Err(format!(
                            "claim {cref}, request {name}: asks for all devices, but resource pool {pid} is currently invalid"
                        ));
                    }
                    for si in 0..self.pools[pi].slices.len() {
                        for di in 0..self.pools[pi].slices[si].spec.devices.len() {
                            let loc = Loc {
                                pool: pi,
                                slice: si,
                                device: di,
                            };
                            if self.selectable(key, &d, loc)? {
                                d.all_devices.push(loc);
                            }
                        }
                    }
                }
                d.num_devices = d.all_devices.len();
            }
            other => {
                return Err(format!(
                    "claim {cref}, request {name}: unsupported count mode {other}"
                ))
            }
        }
        Ok(d)
    }

    fn device_id(&self, loc: Loc) -> DeviceId {
        let s = &self.pools[loc.pool].slices[loc.slice];
        DeviceId {
            driver: s.spec.driver.clone(),
            pool: s.spec.pool.name.clone(),
            device: s.spec.devices[loc.device].name.clone(),
        }
    }

    /// `isSelectable`: the class's selectors, then the request's.
    fn selectable(
        &mut self,
        key: (usize, usize, usize),
        d: &RequestData<'_>,
        loc: Loc,
    ) -> Result<bool, String> {
        if let Some(m) = self.matches.get(&(key, loc)) {
            return Ok(*m);
        }
        // DRADeviceBindingConditions is not modelled (off): such devices are never selectable.
        let device = &self.pools[loc.pool].slices[loc.slice].spec.devices[loc.device];
        if !device.binding_conditions.is_empty() {
            self.matches.insert((key, loc), false);
            return Ok(false);
        }
        let m = self.selectors_match(key, loc, Some(&d.class), &d.class.spec.selectors)?
            && self.selectors_match(key, loc, None, d.selectors)?;
        self.matches.insert((key, loc), m);
        Ok(m)
    }

    fn selectors_match(
        &mut self,
        key: (usize, usize, usize),
        loc: Loc,
        class: Option<&DeviceClass>,
        selectors: &[DeviceSelector],
    ) -> Result<bool, String> {
        if selectors.is_empty() {
            return Ok(true);
        }
        let owner = match class {
            Some(c) => format!("class {}", c.metadata.name),
            None => format!("claim {}", claim_ref(&self.a.claims[key.0])),
        };
        if !self.values.contains_key(&loc) {
            let s = &self.pools[loc.pool].slices[loc.slice];
            let v = device_value(&s.spec.driver, &s.spec.devices[loc.device]);
            self.values.insert(loc, v);
        }
        for (i, sel) in selectors.iter().enumerate() {
            let expr = sel
                .cel
                .as_ref()
                .map(|c| c.expression.as_str())
                .unwrap_or("");
            let compiled = self.a.cel.get_or_compile(expr);
            let compiled = match &*compiled {
                Ok(c) => c,
                Err(e) => return Err(format!("{owner}: selector #{i}: CEL compile error: {e}")),
            };
            let Some(value) = self.values.get(&loc) else {
                return Ok(false);
            };
            match compiled.matches(&self.root, value) {
                Ok(true) => {}
                Ok(false) => return Ok(false),
                Err(e) => {
                    return Err(format!(
                        "{owner}: selector #{i} on device {}: CEL runtime error: {e}",
                        self.device_id(loc)
                    ))
                }
            }
        }
        Ok(true)
    }

    fn in_use(&self, id: &DeviceId) -> bool {
        self.a.allocated.contains(id) || self.allocating.get(id).is_some_and(|s| !s.is_empty())
    }

    fn allocating_for_claim(&self, id: &DeviceId, claim: usize) -> bool {
        self.allocating.get(id).is_some_and(|s| s.contains(&claim))
    }

    /// `allocateOne`; `r` is (claim, request, subrequest, device index).
    fn allocate_one(
        &mut self,
        r: (usize, usize, usize, usize),
        in_sub: bool,
        start: Loc,
    ) -> Result<bool, Fail> {
        let (ci, ri, si, di) = r;
        if ci >= self.a.claims.len() {
            return Ok(true);
        }
        let claim = self.a.claims[ci].clone();
        if ri >= claim.spec.devices.requests.len() {
            return match self.allocate_one((ci + 1, 0, 0, 0), false, Loc::default()) {
                Err(Fail::MaxSize) => Ok(false),
                other => other,
            };
        }
        let key = (ci, ri, si);
        let has_parent = self.requests.get(&key).is_some_and(|d| d.parent.is_some());
        if !in_sub && has_parent {
            let mut all_exceeded = true;
            let mut sub = 0;
            loop {
                if !self.requests.contains_key(&(ci, ri, sub)) {
                    return if all_exceeded {
                        Err(Fail::MaxSize)
                    } else {
                        Ok(false)
                    };
                }
                match self.allocate_one((ci, ri, sub, 0), true, Loc::default()) {
                    Err(Fail::MaxSize) => {
                        sub += 1;
                        continue;
                    }
                    Err(e) => return Err(e),
                    Ok(true) => {
                        self.selected_sub.insert((ci, ri), sub);
                        return Ok(true);
                    }
                    Ok(false) => {
                        all_exceeded = false;
                        sub += 1;
                    }
                }
            }
        }
        let Some(d) = self.requests.get(&key) else {
            return Err(Fail::Fatal(format!(
                "internal error: no request data for claim #{ci} request #{ri}"
            )));
        };
        let (all, num, admin) = (d.all, d.num_devices, d.admin_access);
        if all && d.all_devices.is_empty() {
            return Ok(false);
        }
        if di >= num {
            return self.allocate_one((ci, ri + 1, 0, 0), false, Loc::default());
        }
        if self.result[ci].len() + num - di > ALLOCATION_RESULTS_MAX_SIZE {
            return Err(Fail::MaxSize);
        }
        if all {
            let loc = d.all_devices[di];
            if !self.allocate_device(key, loc, true)? {
                return Ok(false);
            }
            let done = self.allocate_one((ci, ri, si, di + 1), in_sub, Loc::default());
            match done {
                Ok(true) => return Ok(true),
                other => {
                    self.deallocate(key, loc);
                    return other;
                }
            }
        }
        for pi in start.pool..self.pools.len() {
            if self.pools[pi].incomplete || self.pools[pi].invalid {
                continue;
            }
            let slice_start = if pi == start.pool { start.slice } else { 0 };
            for sj in slice_start..self.pools[pi].slices.len() {
                let dev_start = if pi == start.pool && sj == start.slice {
                    start.device
                } else {
                    0
                };
                for dj in dev_start..self.pools[pi].slices[sj].spec.devices.len() {
                    let loc = Loc {
                        pool: pi,
                        slice: sj,
                        device: dj,
                    };
                    let id = self.device_id(loc);
                    if admin && self.allocating_for_claim(&id, ci) {
                        continue;
                    }
                    if !admin && self.in_use(&id) {
                        continue;
                    }
                    // `selectable` borrows the search mutably: take the request data out.
                    let ok = {
                        let Some(data) = self.requests.remove(&key) else {
                            return Err(Fail::Fatal("internal error: request data".into()));
                        };
                        let r = self.selectable(key, &data, loc);
                        self.requests.insert(key, data);
                        r.map_err(Fail::Fatal)?
                    };
                    if !ok {
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
                        Ok(false) => self.deallocate(key, loc),
                        Err(e) => {
                            self.deallocate(key, loc);
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
        let (ci, _, _) = key;
        let id = self.device_id(loc);
        let (name, parent, admin) = {
            let d = &self.requests[&key];
            (
                d.name.to_string(),
                d.parent.map(str::to_string),
                d.admin_access,
            )
        };
        if admin && self.allocating_for_claim(&id, ci) {
            return Ok(false);
        }
        if !admin && self.in_use(&id) {
            return Ok(false);
        }
        // DRAPartitionableDevices is not modelled (off): a device that consumes counters
        // cannot be allocated.
        if !self.pools[loc.pool].slices[loc.slice].spec.devices[loc.device]
            .consumes_counters
            .is_empty()
        {
            return Ok(false);
        }
        let (base, sub) = match &parent {
            Some(p) => (p.clone(), Some(name.as_str())),
            None => (name.clone(), None),
        };
        let slice = self.pools[loc.pool].slices[loc.slice].clone();
        let device = &slice.spec.devices[loc.device];
        let n = self.constraints[ci].len();
        for i in 0..n {
            if !self.constraints[ci][i].add(&base, sub, &slice.spec.driver, device) {
                if must {
                    let c = &self.a.claims[ci];
                    return Err(Fail::Fatal(format!(
                        "claim {}, request {name}: cannot add device {id} because a claim constraint would not be satisfied",
                        claim_ref(c)
                    )));
                }
                for e in 0..i {
                    self.constraints[ci][e].remove(&base, sub);
                }
                return Ok(false);
            }
        }
        self.allocating.entry(id.clone()).or_default().insert(ci);
        self.result[ci].push(Picked {
            request: name,
            parent,
            id,
            loc,
            admin_access: admin,
        });
        Ok(true)
    }

    fn deallocate(&mut self, key: (usize, usize, usize), loc: Loc) {
        let (ci, _, _) = key;
        let Some(p) = self.result[ci].pop() else {
            return;
        };
        debug_assert_eq!(p.loc, loc);
        let sub = p.parent.as_ref().map(|_| p.request.as_str());
        let base = p.parent.clone().unwrap_or_else(|| p.request.clone());
        for c in &mut self.constraints[ci] {
            c.remove(&base, sub);
        }
        if let Some(s) = self.allocating.get_mut(&p.id) {
            s.remove(&ci);
        }
    }

    fn results(&self) -> Vec<AllocationResult> {
        let mut out = Vec::with_capacity(self.result.len());
        for picks in &self.result {
            let results = picks
                .iter()
                .map(|p| DeviceRequestAllocationResult {
                    request: match &p.parent {
                        Some(par) => format!("{par}/{}", p.request),
                        None => p.request.clone(),
                    },
                    driver: p.id.driver.clone(),
                    pool: p.id.pool.clone(),
                    device: p.id.device.clone(),
                    admin_access: p.admin_access.then_some(true),
                    share_id: None,
                })
                .collect();
            let config = self.config(out.len());
            out.push(AllocationResult {
                devices: DeviceAllocationResult { results, config },
                node_selector: self.node_selector(picks),
                allocation_timestamp: None,
            });
        }
        out
    }

    /// The claim's `devices.config` (see [`super::alloc_config`]): per request, the written
    /// request name and class of the request or its chosen subrequest.
    fn config(&self, ci: usize) -> Vec<serde_json::Value> {
        let claim = &self.a.claims[ci];
        let chosen: Vec<Option<Chosen>> = (0..claim.spec.devices.requests.len())
            .map(|ri| {
                let sub = self.selected_sub.get(&(ci, ri)).copied();
                let d = self.requests.get(&(ci, ri, sub.unwrap_or(0)))?;
                Some(Chosen {
                    name: match d.parent {
                        Some(p) => format!("{p}/{}", d.name),
                        None => d.name.to_string(),
                    },
                    class: d.class.clone(),
                    sub,
                })
            })
            .collect();
        allocation_config(claim, &chosen)
    }

    /// `createNodeSelector`.
    fn node_selector(&self, picks: &[Picked]) -> Option<NodeSelector> {
        let mut term = NodeSelectorTerm::default();
        for p in picks {
            let s = &self.pools[p.loc.pool].slices[p.loc.slice];
            if s.spec.node_name.as_deref().is_some_and(|n| !n.is_empty()) {
                return Some(NodeSelector {
                    node_selector_terms: vec![NodeSelectorTerm {
                        match_expressions: Vec::new(),
                        match_fields: vec![NodeSelectorRequirement {
                            key: "metadata.name".into(),
                            operator: "In".into(),
                            values: vec![self.node.metadata.name.clone()],
                        }],
                    }],
                });
            }
            if let Some(ns) = &s.spec.node_selector {
                if let [t] = ns.node_selector_terms.as_slice() {
                    add_requirements(&t.match_fields, &mut term.match_fields);
                    add_requirements(&t.match_expressions, &mut term.match_expressions);
                }
            }
        }
        if term.match_fields.is_empty() && term.match_expressions.is_empty() {
            None
        } else {
            Some(NodeSelector {
                node_selector_terms: vec![term],
            })
        }
    }
}

fn add_requirements(from: &[NodeSelectorRequirement], to: &mut Vec<NodeSelectorRequirement>) {
    for r in from {
        let values: BTreeSet<&String> = r.values.iter().collect();
        let present = to.iter().any(|e| {
            e.key == r.key
                && e.operator == r.operator
                && e.values.iter().collect::<BTreeSet<_>>() == values
        });
        if !present {
            to.push(r.clone());
        }
    }
}

/// The devices a claim's allocation uses, admin-access results excepted (upstream
/// `ListAllAllocatedDevices` / `GatherAllocatedState`).
pub fn allocated_devices(alloc: &AllocationResult, into: &mut BTreeSet<DeviceId>) {
    for r in &alloc.devices.results {
        if r.admin_access == Some(true) {
            continue;
        }
        into.insert(DeviceId {
            driver: r.driver.clone(),
            pool: r.pool.clone(),
            device: r.device.clone(),
        });
    }
}
