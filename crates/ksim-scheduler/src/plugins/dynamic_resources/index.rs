//! What `DynamicResources` keeps between cycles so that Filter's work per node is a few array
//! reads, not a walk over the cluster's slices and claims (upstream keeps the same knowledge in
//! its informers, the `allocatedDevices` tracker and `celcache`):
//!
//! - **Slices** ([`DraIndex::sync`]): every slice in name order, each device numbered twice —
//!   by position (slice, device) and by a dense id per `(driver, pool, device)` name; the slices
//!   of each node by `nodeName`, and those with `allNodes` or a `nodeSelector`; per pool, how
//!   many slices each generation has. Rebuilt when the slice map changes.
//! - **Pools per node** ([`DraIndex::pools_for`]): `GatherPools`' answer, computed once per node
//!   (again when the slices change, or a node's labels do while selector slices exist).
//! - **Allocated devices**: per dense id, how many claims in the API have it allocated
//!   (admin-access results excepted, as `GatherAllocatedState`), kept current by diffing the
//!   claim map the index saw last against the current one (both persistent maps, so only the
//!   nodes that differ are visited).
//! - **Counters** (DRAPartitionableDevices, [`super::partitionable::CounterIndex`]): each
//!   pool's counter sets and, kept in step with the allocated-device counts, what the
//!   allocated devices consume.
//! - **CEL verdicts**: per selector expression and device position, match / no match / runtime
//!   error, computed once while the slices stay the same (a verdict depends on nothing else);
//!   a selector that reads only `device.driver` is evaluated once per driver.

use std::collections::BTreeMap;
use std::sync::Arc;

use ksim_api::resource::{AllocationResult, ResourceClaim, ResourceSlice};
use ksim_api::{Labels, Node};
use rustc_hash::FxHashMap;

use super::allocator::DeviceId;
use super::cel::{device_value, root_context, CelCache, Selector};
use super::consumable_capacity::{is_share, SharedState};
use crate::cluster_objects::{DraMap, DraObjects};

/// A pool gathered for one node: its slices as indices into [`DraIndex`]'s slices.
#[derive(Debug, Clone)]
pub struct Pool {
    pub driver: String,
    pub name: String,
    pub incomplete: bool,
    pub invalid: bool,
    pub slices: Vec<u32>,
}

/// `GatherPools`' answer for one node.
#[derive(Debug, Clone, Default)]
pub struct NodePools {
    pub pools: Vec<Pool>,
    /// The devices of the pools that are neither incomplete nor invalid, the only ones the
    /// search may pick, in pool, slice and device order.
    pub usable: Vec<UsableDevice>,
    pub any_invalid: bool,
    /// Positions of per-device-node-selection devices the node does not see (sorted).
    pub hidden: Vec<u32>,
}

/// A device the search may pick on a node, with everything the first-fit loop reads, so
/// that it walks one array instead of pools, slices and device structs.
#[derive(Debug, Clone, Copy)]
pub struct UsableDevice {
    /// Dense id.
    pub id: u32,
    /// Position among all devices (the CEL verdict slots' index).
    pub pos: u32,
    /// Slice (index in the index) and device (index in the slice).
    pub slice: u32,
    pub device: u32,
    /// Pool (index in [`NodePools::pools`]) and slice (index in the pool).
    pub pool_index: u32,
    pub slice_in_pool: u32,
}

/// Per device position: it has binding conditions (never selectable while
/// DRADeviceBindingConditions is off; the first-fit and full searches both read it in
/// `selectable_at`, and the gate changes nothing else about the search).
pub const HAS_BINDING_CONDITIONS: u8 = 1;
/// Per device position: it consumes counters (never allocatable while
/// DRAPartitionableDevices is off; counted by [`super::partitionable`] while it is on).
pub const CONSUMES_COUNTERS: u8 = 2;
/// Per device position: it has taints (the taint check reads the device only then).
pub const HAS_TAINTS: u8 = 4;
/// Per device position: `allowMultipleAllocations: true` (DRAConsumableCapacity: first fit
/// checks its capacity only then, or when the request asks for capacity).
pub const ALLOWS_MULTIPLE: u8 = 8;

/// A selector expression's verdicts on every device position.
struct Slot {
    compiled: Arc<Result<Selector, String>>,
    /// Per device position: 0 not evaluated, 1 match, 2 no match, 3 runtime error.
    state: Vec<u8>,
    /// For a selector that reads only `device.driver`: the verdict per driver (with the
    /// runtime error's text), so that each driver is evaluated once.
    by_driver: FxHashMap<String, (u8, Option<String>)>,
}

const UNKNOWN: u8 = 0;
const MATCH: u8 = 1;
const NO_MATCH: u8 = 2;
const ERROR: u8 = 3;

/// A selector's verdict on one device.
pub enum Verdict<'a> {
    Match,
    NoMatch,
    /// The expression did not compile.
    Compile(&'a str),
    /// Evaluation failed.
    Runtime(&'a str),
}

/// See the module doc.
#[derive(Default)]
pub struct DraIndex {
    /// The slice map the index was built from (`None`: never built).
    slices_seen: Option<DraMap<ResourceSlice>>,
    /// The claim map `api_counts` reflects.
    claims_seen: DraMap<ResourceClaim>,
    /// Every slice, in name order.
    pub(super) slices: Vec<Arc<ResourceSlice>>,
    /// Position of slice `i`'s first device.
    base: Vec<u32>,
    /// Dense id of the device at each position.
    dense: Vec<u32>,
    /// [`HAS_BINDING_CONDITIONS`], [`CONSUMES_COUNTERS`] and [`HAS_TAINTS`] of the device at
    /// each position.
    pub(super) flags: Vec<u8>,
    /// Dense ids by name; devices that claims name but no slice lists have one too.
    ids: FxHashMap<DeviceId, u32>,
    /// Slices by `nodeName`.
    by_node: FxHashMap<String, Vec<u32>>,
    /// Slices with `allNodes` or a `nodeSelector`, in name order.
    others: Vec<u32>,
    /// Per `(driver, pool)`: slices per generation.
    pool_gens: FxHashMap<(String, String), BTreeMap<i64, i64>>,
    /// `GatherPools` per node name, with the labels it was computed for.
    node_pools: FxHashMap<String, (Labels, Arc<NodePools>)>,
    /// The same by node object (its address, the object kept so the address stays its own):
    /// Filter's lookup, without hashing names.
    node_pools_by_object: FxHashMap<usize, (Arc<Node>, Arc<NodePools>)>,
    /// Per dense id: claims in the API with the device allocated.
    api_counts: Vec<u32>,
    /// Per dense id: `api_counts > 0`, kept in step (a cycle copies it).
    api_bits: Vec<bool>,
    /// Selector slots by expression.
    slot_ids: FxHashMap<String, u32>,
    slots: Vec<Slot>,
    /// Runtime error texts by (slot, position).
    errors: FxHashMap<(u32, u32), String>,
    /// The CEL root context, made on the first evaluation.
    root: Option<cel::Context<'static, 'static>>,
    /// DRAConsumableCapacity: the consumed capacity of shared devices.
    pub(super) shared: SharedState,
    /// DRAPartitionableDevices: counter sets and the allocated devices' consumption.
    pub(super) counters: super::partitionable::CounterIndex,
    /// Whether DRAPartitionableDevices is on (pools per node depend on it).
    partitionable: bool,
    /// Whether DRADeviceBindingConditions is on.
    pub(super) binding_conditions: bool,
}

// The index lives in the plugin's mutex, so it must be `Send` (the CEL context included).
const _: fn() = || {
    fn send<T: Send>() {}
    send::<DraIndex>();
};

impl DraIndex {
    /// An empty index; with DRAConsumableCapacity on, results with a `shareID` are shares.
    pub fn with_consumable_capacity(on: bool) -> DraIndex {
        DraIndex {
            shared: SharedState::with_gate(on),
            ..Default::default()
        }
    }

    /// Brings the index up to the cluster's DRA objects.
    pub fn sync(&mut self, dra: &DraObjects) {
        let same_slices = self
            .slices_seen
            .as_ref()
            .is_some_and(|s| s.ptr_eq(&dra.resource_slices));
        if !same_slices {
            self.rebuild(&dra.resource_slices);
            self.claims_seen = DraMap::default();
            self.api_counts = vec![0; self.ids.len()];
            self.api_bits = vec![false; self.ids.len()];
            self.shared.clear();
        }
        if self.claims_seen.ptr_eq(&dra.resource_claims) {
            return;
        }
        let seen = std::mem::take(&mut self.claims_seen);
        for item in seen.diff(&dra.resource_claims) {
            match item {
                imbl::ordmap::DiffItem::Add(_, new) => self.count_claim(new, 1),
                imbl::ordmap::DiffItem::Remove(_, old) => self.count_claim(old, -1),
                imbl::ordmap::DiffItem::Update {
                    old: (_, old),
                    new: (_, new),
                } => {
                    if !Arc::ptr_eq(old, new) {
                        self.count_claim(old, -1);
                        self.count_claim(new, 1);
                    }
                }
            }
        }
        self.claims_seen = dra.resource_claims.clone();
    }

    fn rebuild(&mut self, slices: &DraMap<ResourceSlice>) {
        self.slices = slices.values().cloned().collect();
        self.base.clear();
        self.dense.clear();
        self.flags.clear();
        self.ids.clear();
        self.by_node.clear();
        self.others.clear();
        self.pool_gens.clear();
        self.node_pools.clear();
        self.node_pools_by_object.clear();
        self.slot_ids.clear();
        self.slots.clear();
        self.errors.clear();
        for (i, s) in self.slices.iter().enumerate() {
            self.base.push(self.dense.len() as u32);
            for d in &s.spec.devices {
                let id = DeviceId {
                    driver: s.spec.driver.clone(),
                    pool: s.spec.pool.name.clone(),
                    device: d.name.clone(),
                };
                let next = self.ids.len() as u32;
                let dense = *self.ids.entry(id).or_insert(next);
                self.dense.push(dense);
                let mut flags = 0;
                if !d.binding_conditions.is_empty() {
                    flags |= HAS_BINDING_CONDITIONS;
                }
                if !d.consumes_counters.is_empty() {
                    flags |= CONSUMES_COUNTERS;
                }
                if !d.taints.is_empty() {
                    flags |= HAS_TAINTS;
                }
                if d.allow_multiple_allocations == Some(true) {
                    flags |= ALLOWS_MULTIPLE;
                }
                self.flags.push(flags);
            }
            match s.spec.node_name.as_deref() {
                Some(n) if !n.is_empty() && s.spec.shared_counters.is_empty() => self
                    .by_node
                    .entry(n.to_string())
                    .or_default()
                    .push(i as u32),
                _ => self.others.push(i as u32),
            }
            *self
                .pool_gens
                .entry((s.spec.driver.clone(), s.spec.pool.name.clone()))
                .or_default()
                .entry(s.spec.pool.generation)
                .or_default() += 1;
        }
        self.counters.rebuild(&self.slices, &self.base, &self.dense);
        self.slices_seen = Some(slices.clone());
    }

    /// Sets DRADeviceBindingConditions: off, a device with [`HAS_BINDING_CONDITIONS`] is
    /// never selectable (upstream `isSelectable`).
    pub(super) fn set_binding_conditions(&mut self, on: bool) {
        self.binding_conditions = on;
    }

    /// Sets DRAPartitionableDevices (the pools per node are gathered again on a change).
    pub(super) fn set_partitionable(&mut self, on: bool) {
        if self.partitionable != on {
            self.partitionable = on;
            self.node_pools.clear();
            self.node_pools_by_object.clear();
        }
    }

    /// The dense id of a device name, made when new.
    pub(super) fn intern(&mut self, driver: &str, pool: &str, device: &str) -> u32 {
        let key = DeviceId {
            driver: driver.to_string(),
            pool: pool.to_string(),
            device: device.to_string(),
        };
        let next = self.ids.len() as u32;
        let id = *self.ids.entry(key).or_insert(next);
        if self.api_counts.len() < self.ids.len() {
            self.api_counts.resize(self.ids.len(), 0);
            self.api_bits.resize(self.ids.len(), false);
        }
        id
    }

    /// The dense ids an allocation uses, admin-access results excepted
    /// (`GatherAllocatedState`).
    pub(super) fn allocation_ids(&mut self, a: &AllocationResult, out: &mut Vec<u32>) {
        for r in &a.devices.results {
            if r.admin_access == Some(true) || is_share(self.shared.enabled, r) {
                continue;
            }
            out.push(self.intern(&r.driver, &r.pool, &r.device));
        }
    }

    fn count_claim(&mut self, c: &ResourceClaim, delta: i32) {
        let Some(a) = &c.status.allocation else {
            return;
        };
        if self.shared.enabled {
            let ids: Vec<u32> = (a.devices.results.iter())
                .map(|r| self.intern(&r.driver, &r.pool, &r.device))
                .collect();
            self.shared.count(a, &ids, i64::from(delta));
        }
        let mut ids = Vec::new();
        self.allocation_ids(a, &mut ids);
        for id in ids {
            let n = &mut self.api_counts[id as usize];
            *n = n.saturating_add_signed(delta);
            if self.api_bits[id as usize] != (*n > 0) {
                self.counters.set_allocated(id, *n > 0);
            }
            self.api_bits[id as usize] = *n > 0;
        }
    }

    /// Per dense id, whether some claim of the API has the device allocated.
    pub(super) fn api_allocated(&self) -> Vec<bool> {
        self.api_bits.clone()
    }

    /// Claims the API holds with the device allocated.
    pub(super) fn api_count(&self, id: u32) -> u32 {
        self.api_counts.get(id as usize).copied().unwrap_or(0)
    }

    /// The number of dense ids.
    pub(super) fn id_count(&self) -> usize {
        self.ids.len()
    }

    /// Position of device `d` of slice `s`.
    pub(super) fn position(&self, s: u32, d: usize) -> u32 {
        self.base[s as usize] + d as u32
    }

    /// Dense id of device `d` of slice `s`.
    pub(super) fn dense_id(&self, s: u32, d: usize) -> u32 {
        self.dense[self.position(s, d) as usize]
    }

    /// `GatherPools` for `node`: pools in `(driver, pool)` order, only the newest generation's
    /// slices (by name), incomplete when the cluster holds fewer slices of that generation
    /// than `resourceSliceCount` says, obsolete (left out) when a newer generation exists,
    /// invalid when a device name repeats.
    pub fn pools_for(&mut self, node: &Arc<Node>) -> Arc<NodePools> {
        let key = Arc::as_ptr(node) as usize;
        if let Some((_, pools)) = self.node_pools_by_object.get(&key) {
            return pools.clone();
        }
        let pools = self.pools_by_name(node);
        // Replaced node objects leave stale entries behind; start afresh when they pile up.
        if self.node_pools_by_object.len() > 2 * self.node_pools.len() + 64 {
            self.node_pools_by_object.clear();
        }
        self.node_pools_by_object
            .insert(key, (node.clone(), pools.clone()));
        pools
    }

    fn pools_by_name(&mut self, node: &Node) -> Arc<NodePools> {
        let name = node.metadata.name.as_str();
        if let Some((labels, pools)) = self.node_pools.get(name) {
            if self.others.is_empty() || *labels == node.metadata.labels {
                return pools.clone();
            }
        }
        let mut idx: Vec<u32> = self.by_node.get(name).cloned().unwrap_or_default();
        for &i in &self.others {
            idx.push(i);
        }
        let gate = self.partitionable;
        idx.retain(|&i| super::partitionable::slice_visible(&self.slices[i as usize], node, gate));
        idx.sort_unstable();
        let mut pools: BTreeMap<(&str, &str), Pool> = BTreeMap::new();
        for &i in &idx {
            let s = &self.slices[i as usize];
            let pool = pools
                .entry((s.spec.driver.as_str(), s.spec.pool.name.as_str()))
                .or_insert_with(|| Pool {
                    driver: s.spec.driver.clone(),
                    name: s.spec.pool.name.clone(),
                    incomplete: false,
                    invalid: false,
                    slices: Vec::new(),
                });
            let first = pool
                .slices
                .first()
                .map(|&f| self.slices[f as usize].spec.pool.generation);
            match first {
                Some(g) if s.spec.pool.generation < g => continue,
                Some(g) if s.spec.pool.generation > g => pool.slices.clear(),
                _ => {}
            }
            pool.slices.push(i);
        }
        let mut out = Vec::with_capacity(pools.len());
        for (_, mut pool) in pools {
            let Some(&first) = pool.slices.first() else {
                continue;
            };
            let first = &self.slices[first as usize].spec.pool;
            let (generation, want) = (first.generation, first.resource_slice_count);
            if pool.slices.len() as i64 != want {
                // checkSlicesInPool: the generation's slices over the whole cluster.
                let gens = self
                    .pool_gens
                    .get(&(pool.driver.clone(), pool.name.clone()));
                let newest = gens.and_then(|g| g.keys().next_back().copied());
                if newest.is_some_and(|n| n > generation) {
                    continue;
                }
                let n = gens.and_then(|g| g.get(&generation)).copied().unwrap_or(0);
                pool.incomplete = n != want;
            }
            let mut names = std::collections::BTreeSet::new();
            pool.invalid = pool
                .slices
                .iter()
                .flat_map(|&s| self.slices[s as usize].spec.devices.iter())
                .any(|d| !names.insert(d.name.as_str()));
            pool.invalid |= self.partitionable
                && !pool.incomplete
                && self
                    .counters
                    .pool_invalid(&pool.driver, &pool.name, generation);
            out.push(pool);
        }
        let mut usable = Vec::new();
        let mut hidden = Vec::new();
        for (pi, pool) in out.iter().enumerate() {
            if pool.incomplete || pool.invalid {
                continue;
            }
            for (sj, &s) in pool.slices.iter().enumerate() {
                let base = self.position(s, 0);
                super::partitionable::hidden_devices(
                    &self.slices[s as usize],
                    base,
                    node,
                    &mut hidden,
                );
                for d in 0..self.slices[s as usize].spec.devices.len() {
                    let pos = self.position(s, d);
                    usable.push(UsableDevice {
                        id: self.dense[pos as usize],
                        pos,
                        slice: s,
                        device: d as u32,
                        pool_index: pi as u32,
                        slice_in_pool: sj as u32,
                    });
                }
            }
        }
        let out = Arc::new(NodePools {
            any_invalid: out.iter().any(|p| p.invalid),
            pools: out,
            usable,
            hidden,
        });
        self.node_pools.insert(
            name.to_string(),
            (node.metadata.labels.clone(), out.clone()),
        );
        out
    }

    /// The slot of a selector expression (compiled through `cel` on first sight).
    pub(super) fn slot(&mut self, cel: &CelCache, expression: &str) -> u32 {
        if let Some(&s) = self.slot_ids.get(expression) {
            return s;
        }
        let s = self.slots.len() as u32;
        self.slots.push(Slot {
            compiled: cel.get_or_compile(expression),
            state: vec![UNKNOWN; self.dense.len()],
            by_driver: FxHashMap::default(),
        });
        self.slot_ids.insert(expression.to_string(), s);
        s
    }

    /// Slot `slot`'s verdict on device `d` of slice `s` (at position `pos`), evaluated on
    /// first use.
    pub(super) fn verdict(&mut self, slot: u32, s: u32, d: usize, pos: u32) -> Verdict<'_> {
        let state = self.slots[slot as usize].state[pos as usize];
        let state = if state == UNKNOWN {
            self.evaluate(slot, s, d, pos)
        } else {
            state
        };
        let sl = &self.slots[slot as usize];
        match (&*sl.compiled, state) {
            (Err(e), _) => Verdict::Compile(e),
            (_, MATCH) => Verdict::Match,
            (_, NO_MATCH) => Verdict::NoMatch,
            _ => Verdict::Runtime(
                self.errors
                    .get(&(slot, pos))
                    .map(String::as_str)
                    .unwrap_or(""),
            ),
        }
    }

    fn evaluate(&mut self, slot: u32, s: u32, d: usize, pos: u32) -> u8 {
        let compiled = self.slots[slot as usize].compiled.clone();
        let state = match &*compiled {
            Err(_) => ERROR,
            Ok(sel) => {
                let slice = &self.slices[s as usize];
                let driver = slice.spec.driver.as_str();
                let known = sel
                    .driver_only()
                    .then(|| self.slots[slot as usize].by_driver.get(driver).cloned())
                    .flatten();
                let (state, error) = match known {
                    Some(k) => k,
                    None => {
                        let value = device_value(driver, &slice.spec.devices[d]);
                        let root = self.root.get_or_insert_with(root_context);
                        let verdict = match sel.matches(root, &value) {
                            Ok(true) => (MATCH, None),
                            Ok(false) => (NO_MATCH, None),
                            Err(e) => (ERROR, Some(e)),
                        };
                        if sel.driver_only() {
                            self.slots[slot as usize]
                                .by_driver
                                .insert(driver.to_string(), verdict.clone());
                        }
                        verdict
                    }
                };
                if let Some(e) = error {
                    self.errors.insert((slot, pos), e);
                }
                state
            }
        };
        self.slots[slot as usize].state[pos as usize] = state;
        state
    }
}
