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

/// What one allocation attempt has taken (upstream `allocator.consumedCounters`).
#[derive(Debug)]
pub struct Attempt {
    cycle: Arc<CycleCounters>,
    taken: Vec<Vec<i128>>,
}

impl Attempt {
    pub fn new(cycle: Arc<CycleCounters>) -> Attempt {
        let taken = cycle.available.iter().map(|a| vec![0; a.len()]).collect();
        Attempt { cycle, taken }
    }
}

/// `checkAvailableCounters` for the device at `pos` (which consumes counters): takes its
/// consumption when every counter of its pool stays within what is available. With no
/// attempt (DRAPartitionableDevices off) a counter-consuming device is never allocated.
pub fn take(attempt: &mut Option<Attempt>, index: &CounterIndex, pos: u32) -> bool {
    let (Some(a), Some(c)) = (attempt.as_mut(), index.by_pos.get(&pos)) else {
        return false;
    };
    let p = c.pool as usize;
    add(&mut a.taken[p], c, true);
    let fits = a.cycle.available[p]
        .iter()
        .zip(&a.taken[p])
        .all(|(avail, taken)| avail >= taken);
    if !fits {
        add(&mut a.taken[p], c, false);
    }
    fits
}

/// `deallocateCountersForDevice`: gives back what the device at `pos` took.
pub fn give_back(attempt: &mut Option<Attempt>, index: &CounterIndex, pos: u32) {
    if let (Some(a), Some(c)) = (attempt.as_mut(), index.by_pos.get(&pos)) {
        add(&mut a.taken[c.pool as usize], c, false);
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
