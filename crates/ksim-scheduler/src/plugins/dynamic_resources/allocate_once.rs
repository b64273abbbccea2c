//! One allocation from scratch, outside the plugin (the allocator's tests and upstream's
//! `TestAllocator` table): a cluster built from the given slices and classes, the allocated
//! state of upstream's `AllocatedState` (`AllocatedDevices`, and DRAConsumableCapacity's
//! `AggregatedCapacity`), and one [`Prepared::allocate`] on the node.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use ksim_api::resource::{AllocationResult, DeviceClass, ResourceClaim, ResourceSlice};
use ksim_api::{Node, Quantity};

use super::allocator::{DeviceId, Features, Prepared};
use super::cel::CelCache;
use super::index::DraIndex;

/// Upstream `AllocatedState`: the devices other claims hold exclusively, and what they
/// consume of shared devices (`AggregatedCapacity`, by the device's capacity name).
#[derive(Debug, Default, Clone)]
pub struct AllocatedState {
    pub devices: BTreeSet<DeviceId>,
    pub capacity: BTreeMap<DeviceId, BTreeMap<String, Quantity>>,
}

/// The cluster's `slices`, the devices `allocated` to other claims, and `claims` to allocate
/// on `node`.
pub fn allocate_once(
    features: Features,
    classes: &BTreeMap<String, Arc<DeviceClass>>,
    slices: &[Arc<ResourceSlice>],
    allocated: &BTreeSet<DeviceId>,
    claims: &[Arc<ResourceClaim>],
    node: &Node,
) -> Result<Option<Vec<AllocationResult>>, String> {
    allocate_once_with(features, classes, slices, allocated, claims, node, true)
}

/// [`allocate_once`], with or without the shortcuts of [`Prepared`] (`quick_reject`,
/// `first_fit`), which must not change any answer.
#[doc(hidden)]
pub fn allocate_once_with(
    features: Features,
    classes: &BTreeMap<String, Arc<DeviceClass>>,
    slices: &[Arc<ResourceSlice>],
    allocated: &BTreeSet<DeviceId>,
    claims: &[Arc<ResourceClaim>],
    node: &Node,
    shortcuts: bool,
) -> Result<Option<Vec<AllocationResult>>, String> {
    let state = AllocatedState {
        devices: allocated.clone(),
        capacity: BTreeMap::new(),
    };
    allocate_in_state(features, classes, slices, &state, claims, node, shortcuts)
}

/// [`allocate_once_with`] with the full `AllocatedState`.
#[doc(hidden)]
pub fn allocate_in_state(
    features: Features,
    classes: &BTreeMap<String, Arc<DeviceClass>>,
    slices: &[Arc<ResourceSlice>],
    state: &AllocatedState,
    claims: &[Arc<ResourceClaim>],
    node: &Node,
    shortcuts: bool,
) -> Result<Option<Vec<AllocationResult>>, String> {
    let mut dra = crate::cluster_objects::DraObjects::default();
    for c in classes.values() {
        dra.device_classes
            .insert(c.metadata.name.clone(), c.clone());
    }
    // The index takes slices in name order; equal names keep their given order.
    for (i, s) in slices.iter().enumerate() {
        dra.resource_slices
            .insert(format!("{}\u{0}{i:08}", s.metadata.name), s.clone());
    }
    let mut index = DraIndex::with_consumable_capacity(features.consumable_capacity);
    index.sync(&dra);
    let ids: Vec<u32> = state
        .devices
        .iter()
        .map(|d| index.intern(&d.driver, &d.pool, &d.device))
        .collect();
    for (d, consumed) in &state.capacity {
        let id = index.intern(&d.driver, &d.pool, &d.device);
        let milli = consumed
            .iter()
            .map(|(k, q)| (k.clone(), q.milli_value()))
            .collect();
        index.shared.add_consumed(id, &milli);
    }
    let mut in_use = vec![false; index.id_count()];
    for id in ids {
        in_use[id as usize] = true;
    }
    let cel = CelCache::default();
    let mut p = Prepared::new(
        features,
        &dra.device_classes,
        &mut index,
        &cel,
        claims.to_vec(),
    );
    if !shortcuts {
        p.without_shortcuts();
    }
    Ok(p.allocate(&mut index, &in_use, &Arc::new(node.clone()))?
        .map(|picks| p.materialize(&index, &node.metadata.name, &picks)))
}
