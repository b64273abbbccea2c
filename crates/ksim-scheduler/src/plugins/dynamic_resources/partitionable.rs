//! DRAPartitionableDevices in the structured allocator (upstream
//! `structured/internal/incubating`: `GatherPools`, `buildPool`, `getAndValidateCounterSets`,
//! `validateDeviceCounterConsumption`, `checkAvailableCounters`,
//! `deallocateCountersForDevice`, `NodeMatches`, `isSelectable`, `createNodeSelector`).
//!
//! - **Counter sets**: a pool's slices with `sharedCounters` define its counter sets; such
//!   slices belong to the pool on every node, whatever their node selection. A pool is
//!   invalid when two of its slices define a counter set of the same name, or when a device
//!   of the pool (on any node) consumes from a counter set or a counter the pool does not
//!   define.
//! - **Counters available** to an allocation attempt: each counter of the pool's sets, minus
//!   what every device the cluster has allocated (or has in flight) consumes, minus what the
//!   attempt already took. [`CounterIndex`] keeps the allocated devices' consumption per pool
//!   incrementally (it follows the index's allocated-device counts); [`CycleCounters`] adds
//!   the in-flight allocations once per cycle; [`Attempt`] is the attempt's own take.
//!   A device that consumes counters is allocated only when, after adding its consumption,
//!   no counter of its pool is taken beyond what is available (`checkAvailableCounters`: every
//!   counter of the pool is checked, so a pool the cluster has over-allocated admits no
//!   further counter-consuming device). Backtracking gives the counters back
//!   (`deallocateCountersForDevice`). As upstream, a device whose counters were taken but that
//!   a `matchAttribute` constraint then refuses keeps them taken for the rest of the attempt
//!   on that node.
//! - **Per-device node selection**: a slice with `perDeviceNodeSelection: true` belongs to a
//!   node's pools when one of its devices' `nodeName` / `allNodes` / `nodeSelector` matches
//!   the node; a device that does not match is not selectable there (checked after the CEL
//!   selectors, as `isSelectable`). The allocation's node selector is made from the chosen
//!   devices' own node selection.
//!
//! Amounts are compared by thousandths of a unit (`Quantity::milli_value`).

use std::collections::BTreeMap;
use std::sync::Arc;

use ksim_api::resource::{Device, ResourceSlice};
use ksim_api::{Node, NodeSelector};
use rustc_hash::FxHashMap;

use crate::plugins::helper::CompiledNodeSelector;

/// One pool's (driver, pool, generation) counter sets.
#[derive(Debug, Clone, Default)]
struct CounterPool {
    /// Counter set name → counter name → slot.
    slots: BTreeMap<String, BTreeMap<String, u32>>,
    /// Per slot: the counter's value.
    totals: Vec<i128>,
    /// A duplicate counter set, or a device consuming an unknown set or counter.
    invalid: bool,
}

/// What one device takes: its pool and (slot, amount) pairs.
#[derive(Debug, Clone)]
struct Consumption {
    pool: u32,
    take: Vec<(u32, i128)>,
}

/// The counter sets of every pool and the consumption of the devices the cluster has
/// allocated, kept by the plugin's index between cycles.
#[derive(Debug, Default)]
pub struct CounterIndex {
    pool_ids: FxHashMap<(String, String, i64), u32>,
    pools: Vec<CounterPool>,
    /// Per device position that consumes counters.
    by_pos: FxHashMap<u32, Consumption>,
    /// Per dense id: the positions of counter-consuming devices with that id, in order.
    by_id: BTreeMap<u32, Vec<u32>>,
    /// Per pool and slot: consumed by the devices the API has allocated.
    api_consumed: Vec<Vec<i128>>,
}

fn milli(q: &ksim_api::Quantity) -> i128 {
    i128::from(q.milli_value())
}

impl CounterIndex {
    /// Rebuilds from the index's slices (`base[i]`: position of slice `i`'s first device,
    /// `dense[pos]`: the device's dense id). The allocated consumption starts at zero; the
    /// index replays its allocated devices through [`CounterIndex::set_allocated`].
    pub fn rebuild(&mut self, slices: &[Arc<ResourceSlice>], base: &[u32], dense: &[u32]) {
        *self = CounterIndex::default();
        for s in slices {
            if s.spec.shared_counters.is_empty() {
                continue;
            }
            let p = self.pool_of(s);
            let pool = &mut self.pools[p as usize];
            for set in &s.spec.shared_counters {
                if pool.slots.contains_key(&set.name) {
                    pool.invalid = true;
                    continue;
                }
                let mut counters = BTreeMap::new();
                for (name, c) in &set.counters {
                    counters.insert(name.clone(), pool.totals.len() as u32);
                    pool.totals.push(milli(&c.value));
                }
                pool.slots.insert(set.name.clone(), counters);
            }
        }
        for (i, s) in slices.iter().enumerate() {
            for (d, dev) in s.spec.devices.iter().enumerate() {
                if dev.consumes_counters.is_empty() {
                    continue;
                }
                let p = self.pool_of(s);
                let pool = &mut self.pools[p as usize];
                let mut take = Vec::new();
                for c in &dev.consumes_counters {
                    let Some(set) = pool.slots.get(&c.counter_set) else {
                        pool.invalid = true;
                        continue;
                    };
                    for (name, v) in &c.counters {
                        match set.get(name) {
                            Some(&slot) => take.push((slot, milli(&v.value))),
                            None => pool.invalid = true,
                        }
                    }
                }
                let pos = base[i] + d as u32;
                self.by_pos.insert(pos, Consumption { pool: p, take });
                self.by_id.entry(dense[pos as usize]).or_default().push(pos);
            }
        }
        self.api_consumed = self.pools.iter().map(|p| vec![0; p.totals.len()]).collect();
    }

    fn pool_of(&mut self, s: &ResourceSlice) -> u32 {
        let key = (
            s.spec.driver.clone(),
            s.spec.pool.name.clone(),
            s.spec.pool.generation,
        );
        let next = self.pools.len() as u32;
        let id = *self.pool_ids.entry(key).or_insert(next);
        if id == next {
            self.pools.push(CounterPool::default());
        }
        id
    }

    /// Whether some device consumes counters.
    pub fn any(&self) -> bool {
        !self.by_pos.is_empty()
    }

    /// Whether the pool's counter sets are invalid (`getAndValidateCounterSets`,
    /// `validateDeviceCounterConsumption`).
    pub fn pool_invalid(&self, driver: &str, pool: &str, generation: i64) -> bool {
        self.pool_ids
            .get(&(driver.to_string(), pool.to_string(), generation))
            .is_some_and(|&p| self.pools[p as usize].invalid)
    }

    /// Device `id` became allocated in the API (`true`) or stopped being (`false`).
    pub fn set_allocated(&mut self, id: u32, allocated: bool) {
        let Some(positions) = self.by_id.get(&id) else {
            return;
        };
        for pos in positions {
            if let Some(c) = self.by_pos.get(pos) {
                add(&mut self.api_consumed[c.pool as usize], c, allocated);
            }
        }
    }

    /// The counters available in this cycle: `allocated` (per dense id, the cluster's and
    /// the in-flight allocations) where it differs from `api` (the cluster's alone) adjusts
    /// the consumption kept for the cluster.
    pub fn cycle(&self, allocated: &[bool], api: &[bool]) -> CycleCounters {
        let mut consumed = self.api_consumed.clone();
        for (&id, positions) in &self.by_id {
            let now = allocated.get(id as usize).copied().unwrap_or(false);
            if now == api.get(id as usize).copied().unwrap_or(false) {
                continue;
            }
            for pos in positions {
                if let Some(c) = self.by_pos.get(pos) {
                    add(&mut consumed[c.pool as usize], c, now);
                }
            }
        }
        CycleCounters {
            available: self
                .pools
                .iter()
                .zip(consumed)
                .map(|(p, c)| p.totals.iter().zip(c).map(|(t, c)| t - c).collect())
                .collect(),
        }
    }
}

fn add(to: &mut [i128], c: &Consumption, plus: bool) {
    for &(slot, v) in &c.take {
        if plus {
            to[slot as usize] += v;
        } else {
            to[slot as usize] -= v;
        }
    }
}

/// Per pool and slot, what the cluster leaves available in one cycle (may be negative).
#[derive(Debug)]
pub struct CycleCounters {
    available: Vec<Vec<i128>>,
}

/// What one allocation attempt has taken (upstream `allocator.consumedCounters`), per pool
/// it touched (a node sees few pools, so a short list).
#[derive(Debug)]
pub struct Attempt {
    cycle: Arc<CycleCounters>,
    taken: Vec<(u32, Vec<i128>)>,
}

impl Attempt {
    pub fn new(cycle: Arc<CycleCounters>) -> Attempt {
        Attempt {
            cycle,
            taken: Vec::new(),
        }
    }

    fn pool(&mut self, p: u32) -> &mut Vec<i128> {
        let i = match self.taken.iter().position(|(q, _)| *q == p) {
            Some(i) => i,
            None => {
                let n = self.cycle.available[p as usize].len();
                self.taken.push((p, vec![0; n]));
                self.taken.len() - 1
            }
        };
        &mut self.taken[i].1
    }
}

/// `checkAvailableCounters` for the device at `pos` (which consumes counters): takes its
/// consumption when every counter of its pool stays within what is available. With no
/// attempt (DRAPartitionableDevices off) a counter-consuming device is never allocated.
pub fn take(attempt: &mut Option<Attempt>, index: &CounterIndex, pos: u32) -> bool {
    let (Some(a), Some(c)) = (attempt.as_mut(), index.by_pos.get(&pos)) else {
        return false;
    };
    let cycle = a.cycle.clone();
    let taken = a.pool(c.pool);
    add(taken, c, true);
    let fits = cycle.available[c.pool as usize]
        .iter()
        .zip(taken.iter())
        .all(|(avail, taken)| avail >= taken);
    if !fits {
        add(taken, c, false);
    }
    fits
}

/// `deallocateCountersForDevice`: gives back what the device at `pos` took.
pub fn give_back(attempt: &mut Option<Attempt>, index: &CounterIndex, pos: u32) {
    if let (Some(a), Some(c)) = (attempt.as_mut(), index.by_pos.get(&pos)) {
        add(a.pool(c.pool), c, false);
    }
}

/// `NodeMatches` on a device's own node selection.
fn device_matches(d: &Device, node: &Node) -> bool {
    match d.node_name.as_deref() {
        Some(n) if !n.is_empty() => return n == node.metadata.name,
        _ => {}
    }
    if d.all_nodes == Some(true) {
        return true;
    }
    d.node_selector
        .as_ref()
        .is_some_and(|ns| CompiledNodeSelector::new(ns).matches(node))
}

/// `GatherPools`' choice of a slice for `node`: with the gate off, slices with
/// `perDeviceNodeSelection` or `sharedCounters` are left out; with it on, a slice with
/// `sharedCounters` is always in, and a per-device slice is in when one of its devices
/// matches the node.
pub fn slice_visible(s: &ResourceSlice, node: &Node, gate: bool) -> bool {
    let spec = &s.spec;
    if !gate {
        if spec.per_device_node_selection.is_some() || !spec.shared_counters.is_empty() {
            return false;
        }
        return super::allocator::slice_matches_node(s, node);
    }
    if !spec.shared_counters.is_empty() {
        return true;
    }
    if spec.node_name.as_deref().is_some_and(|n| !n.is_empty())
        || spec.all_nodes == Some(true)
        || spec.node_selector.is_some()
    {
        return super::allocator::slice_matches_node(s, node);
    }
    spec.per_device_node_selection == Some(true)
        && spec.devices.iter().any(|d| device_matches(d, node))
}

/// The positions (from `base`) of a per-device slice's devices that `node` does not see.
pub fn hidden_devices(s: &ResourceSlice, base: u32, node: &Node, out: &mut Vec<u32>) {
    if s.spec.per_device_node_selection != Some(true) {
        return;
    }
    for (d, dev) in s.spec.devices.iter().enumerate() {
        if !device_matches(dev, node) {
            out.push(base + d as u32);
        }
    }
}

/// The node selection `createNodeSelector` reads for device `d` of `s`: the device's own
/// with `perDeviceNodeSelection`, else the slice's (node name, selector).
pub fn node_selection(s: &ResourceSlice, d: usize) -> (bool, Option<&NodeSelector>) {
    let (name, selector) = match s.spec.devices.get(d) {
        Some(dev) if s.spec.per_device_node_selection == Some(true) => {
            (dev.node_name.as_deref(), dev.node_selector.as_ref())
        }
        _ => (s.spec.node_name.as_deref(), s.spec.node_selector.as_ref()),
    };
    (name.is_some_and(|n| !n.is_empty()), selector)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use ksim_api::resource::{DeviceClass, ResourceClaim, ResourceSlice};
    use ksim_api::Node;
    use serde_json::{json, Value};

    use super::super::allocator::{Features, NodePicks, Prepared};
    use super::super::cel::CelCache;
    use super::super::index::DraIndex;
    use crate::cluster_objects::DraObjects;

    fn parse<T: serde::de::DeserializeOwned>(v: Value) -> Arc<T> {
        Arc::new(serde_json::from_value(v).expect("test object"))
    }

    fn consuming(name: &str, gi: u32) -> Value {
        json!({"name": name, "consumesCounters": [{"counterSet": "gpu",
            "counters": {"memory": {"value": format!("{gi}Gi")}}}]})
    }

    /// A claim of `default`, allocated to `device` when given.
    fn claim(name: &str, device: Option<&str>) -> Arc<ResourceClaim> {
        let mut c = json!({"metadata": {"name": name, "namespace": "default", "uid": name},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {
                "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1}}]}}});
        if let Some(d) = device {
            c["status"] = json!({"allocation": {"devices": {"results": [{"request": "r",
                "driver": "gpu.example.com", "pool": "node-1", "device": d}]}}});
        }
        parse(c)
    }

    fn objects() -> DraObjects {
        let mut dra = DraObjects::default();
        dra.device_classes.insert(
            "gpu".into(),
            parse::<DeviceClass>(json!({"metadata": {"name": "gpu"}})),
        );
        let pool = json!({"name": "node-1", "generation": 1, "resourceSliceCount": 2});
        dra.resource_slices.insert(
            "a-counters".into(),
            parse::<ResourceSlice>(json!({"metadata": {"name": "a-counters"}, "spec": {
                "driver": "gpu.example.com", "pool": pool, "nodeName": "node-1",
                "sharedCounters": [{"name": "gpu", "counters": {"memory": {"value": "8Gi"}}}]}})),
        );
        dra.resource_slices.insert(
            "b-devices".into(),
            parse::<ResourceSlice>(json!({"metadata": {"name": "b-devices"}, "spec": {
                "driver": "gpu.example.com", "pool": pool, "nodeName": "node-1",
                "devices": [consuming("six", 6), consuming("four", 4), consuming("two", 2)]}})),
        );
        dra
    }

    /// What a new claim gets on node-1, with the cluster's claims in `dra` and `in_flight`
    /// (device names) also taken.
    fn allocate(idx: &mut DraIndex, dra: &DraObjects, in_flight: &[&str]) -> Option<String> {
        idx.sync(dra);
        let mut allocated = idx.api_allocated();
        for d in in_flight {
            let id = idx.intern("gpu.example.com", "node-1", d) as usize;
            allocated.resize(allocated.len().max(id + 1), false);
            allocated[id] = true;
        }
        let features = Features {
            partitionable_devices: true,
            ..Features::default()
        };
        let cel = CelCache::default();
        let p = Prepared::new(
            features,
            &dra.device_classes,
            idx,
            &cel,
            vec![claim("new", None)],
        );
        let node = Arc::new(
            serde_json::from_value::<Node>(json!({"metadata": {"name": "node-1"}})).expect("node"),
        );
        let picks: NodePicks = p.allocate(idx, &allocated, &node).expect("no error")?;
        let a = p.materialize(idx, "node-1", &picks);
        Some(a[0].devices.results[0].device.clone())
    }

    #[test]
    fn allocated_and_in_flight_devices_take_counters_as_claims_change() {
        let mut idx = DraIndex::default();
        let mut dra = objects();
        assert_eq!(allocate(&mut idx, &dra, &[]).as_deref(), Some("six"));
        // A claim in the cluster holds `six`: 2Gi are left.
        dra.resource_claims
            .insert("default/held".into(), claim("held", Some("six")));
        assert_eq!(allocate(&mut idx, &dra, &[]).as_deref(), Some("two"));
        // ... and with `two` in flight, nothing fits.
        assert_eq!(allocate(&mut idx, &dra, &["two"]), None);
        // The claim moves to `four` (an update): 4Gi are left, `six` is free but too big.
        dra.resource_claims
            .insert("default/held".into(), claim("held", Some("four")));
        assert_eq!(allocate(&mut idx, &dra, &[]).as_deref(), Some("two"));
        // Deallocated: all 8Gi are back.
        dra.resource_claims
            .insert("default/held".into(), claim("held", None));
        assert_eq!(allocate(&mut idx, &dra, &[]).as_deref(), Some("six"));
        // Two claims hold `two` and `four`: 2Gi left, nothing free fits.
        dra.resource_claims
            .insert("default/a".into(), claim("a", Some("two")));
        dra.resource_claims
            .insert("default/b".into(), claim("b", Some("four")));
        assert_eq!(allocate(&mut idx, &dra, &[]), None);
        // Deleted: free again.
        dra.resource_claims.remove("default/b");
        assert_eq!(allocate(&mut idx, &dra, &[]).as_deref(), Some("six"));
        // A fresh index agrees with the one kept through the changes.
        let mut fresh = DraIndex::default();
        assert_eq!(allocate(&mut fresh, &dra, &[]).as_deref(), Some("six"));
        assert_eq!(allocate(&mut fresh, &dra, &["six"]).as_deref(), None);
        assert_eq!(allocate(&mut idx, &dra, &["six"]).as_deref(), None);
    }
}
