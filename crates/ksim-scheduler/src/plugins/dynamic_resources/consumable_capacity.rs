//! DRAConsumableCapacity in the allocator (upstream
//! `structured/internal/incubating/consumable_capacity.go` and the capacity parts of
//! `allocator_incubating.go`; `GatherAllocatedState` for the cluster's share):
//!
//! - A device with `allowMultipleAllocations: true` is never "in use": any number of claims
//!   and requests may get it while its capacity lasts. Each allocation consumes, per capacity
//!   of the device, the amount [`calculate_consumed`] gives (`calculateConsumedCapacity`): the
//!   request's amount rounded up by the capacity's `requestPolicy` (`validRange` from `min` by
//!   `step`, or the next of `validValues`), the policy's `default` when the request names no
//!   amount, else the whole capacity. It fits (`CmpRequestOverCapacity`) when no amount
//!   violates the policy (`violatesPolicy`) and what the cluster's allocated claims consume
//!   (`AggregatedCapacity`), plus this attempt's other picks (`allocatingCapacity`), plus the
//!   new amount stays within the capacity's `value`. A request naming a capacity the device
//!   does not have does not fit.
//! - Dedicated devices are checked the same way (a request for more than a capacity's value
//!   does not fit), and stay exclusive.
//! - The result of a shared allocation carries a `shareID` and its `consumedCapacity`;
//!   upstream draws a random UUID, ksim derives a UUID-shaped id from the claim's uid,
//!   the result's position and the device, so runs stay byte-identical.
//! - The cluster's share ([`SharedState`]): results with a `shareID` count as consumed
//!   capacity of their device, not as a dedicated allocation, kept per dense id as claims
//!   change (the index's diff), with the in-flight claims' copies as an overlay per cycle.
//!
//! Quantities are summed and compared in thousandths (ksim's precision).

use std::collections::BTreeMap;
use std::sync::Arc;

use ksim_api::resource::{
    AllocationResult, CapacityRequirements, Device, DeviceCapacity, DeviceRequest,
    DeviceRequestAllocationResult, ResourceClaim,
};
use ksim_api::Quantity;
use rustc_hash::FxHashMap;

use super::allocator::Features;
use super::index::DraIndex;
use crate::cluster_objects::DraObjects;

/// Consumed amounts (thousandths) by the device's capacity name.
pub(super) type Consumed = BTreeMap<String, i64>;

/// The cluster's consumed capacity of shared devices, by dense id.
#[derive(Default)]
pub(super) struct SharedState {
    /// The gate: results with a `shareID` are shares (on) or dedicated allocations (off).
    pub(super) enabled: bool,
    /// From the API's claims.
    api: FxHashMap<u32, Consumed>,
    /// Per cycle: the in-flight copies minus the API versions they stand in for.
    overlay: FxHashMap<u32, Consumed>,
}

impl SharedState {
    pub(super) fn with_gate(enabled: bool) -> SharedState {
        SharedState {
            enabled,
            ..Default::default()
        }
    }

    /// Forgets every count (the dense ids are renumbered).
    pub(super) fn clear(&mut self) {
        self.api.clear();
        self.overlay.clear();
    }

    /// Adds (`delta` 1) or removes (-1) what `ids`' shared results consume.
    pub(super) fn count(&mut self, a: &AllocationResult, ids: &[u32], delta: i64) {
        add_shares(&mut self.api, a, ids, delta);
    }

    /// What the cluster (and the in-flight claims) consume on device `id`, per capacity.
    pub(super) fn consumed(&self, id: u32) -> Option<Consumed> {
        let base = self.api.get(&id);
        let over = self.overlay.get(&id);
        match (base, over) {
            (None, None) => None,
            (Some(b), None) => Some(b.clone()),
            (b, Some(o)) => {
                let mut out = b.cloned().unwrap_or_default();
                for (k, v) in o {
                    *out.entry(k.clone()).or_default() += v;
                }
                Some(out)
            }
        }
    }

    /// Adds what other claims consume of device `id` (upstream `AggregatedCapacity`).
    pub(super) fn add_consumed(&mut self, id: u32, consumed: &Consumed) {
        let e = self.api.entry(id).or_default();
        for (k, v) in consumed {
            *e.entry(k.clone()).or_default() += v;
        }
    }

    pub(super) fn set_overlay(&mut self, overlay: FxHashMap<u32, Consumed>) {
        self.overlay = overlay;
    }
}

fn add_shares(map: &mut FxHashMap<u32, Consumed>, a: &AllocationResult, ids: &[u32], delta: i64) {
    for (r, &id) in a.devices.results.iter().zip(ids) {
        if r.admin_access == Some(true) || r.share_id.is_none() {
            continue;
        }
        let e = map.entry(id).or_default();
        for (k, q) in &r.consumed_capacity {
            *e.entry(k.clone()).or_default() += delta * q.milli_value();
        }
    }
}

/// Whether a result is a share (not a dedicated allocation) under the gate.
pub(super) fn is_share(enabled: bool, r: &DeviceRequestAllocationResult) -> bool {
    enabled && r.share_id.is_some()
}

/// Sets the index's per-cycle overlay from the in-flight claims (`namespace/name`, copy): each
/// copy's shares stand in for those of the API's claim of the same name.
pub(super) fn set_in_flight<'a>(
    idx: &mut DraIndex,
    dra: &DraObjects,
    inf: impl Iterator<Item = (&'a String, &'a Arc<ResourceClaim>)>,
) {
    if !idx.shared.enabled {
        return;
    }
    let pairs: Vec<_> = inf
        .map(|(key, c)| {
            let api = dra.resource_claims.get(key).cloned();
            (api, c.clone())
        })
        .collect();
    let overlay = in_flight_overlay(
        pairs.iter().map(|(api, c)| {
            (
                api.as_ref().and_then(|a| a.status.allocation.as_ref()),
                c.status.allocation.as_ref(),
            )
        }),
        |d, p, n| idx.intern(d, p, n),
    );
    idx.shared.set_overlay(overlay);
}

/// The per-cycle overlay of in-flight claims: for each, its API version's allocation (if
/// any) and its copy's. `intern` gives a result's dense id.
fn in_flight_overlay<'a>(
    pairs: impl Iterator<Item = (Option<&'a AllocationResult>, Option<&'a AllocationResult>)>,
    mut intern: impl FnMut(&str, &str, &str) -> u32,
) -> FxHashMap<u32, Consumed> {
    let mut out = FxHashMap::default();
    for (api, copy) in pairs {
        for (a, delta) in [(api, -1), (copy, 1)] {
            let Some(a) = a else { continue };
            let ids: Vec<u32> = a
                .devices
                .results
                .iter()
                .map(|r| intern(&r.driver, &r.pool, &r.device))
                .collect();
            add_shares(&mut out, a, &ids, delta);
        }
    }
    out
}

/// `allowMultipleAllocations`.
pub(super) fn multi(d: &Device) -> bool {
    d.allow_multiple_allocations == Some(true)
}

fn fq(driver: &str, name: &str) -> String {
    if name.contains('/') {
        name.to_string()
    } else {
        format!("{driver}/{name}")
    }
}

/// `resolveDeviceCapacity`: the device's capacities by fully qualified name; an entry
/// qualified with the driver's own domain wins over the bare one.
fn device_capacities<'d>(
    driver: &str,
    d: &'d Device,
) -> BTreeMap<String, (&'d str, &'d DeviceCapacity)> {
    let mut out = BTreeMap::new();
    for (k, c) in &d.capacity {
        let name = fq(driver, k);
        let explicit = k.contains('/');
        match out.get(&name) {
            Some((prev, _)) if !explicit && prev != k => continue,
            _ => {}
        }
        out.insert(name, (k.as_str(), c));
    }
    out
}

/// `resolveCapacityRequests`: the requested amounts by fully qualified name; `None` when
/// the device lacks a requested capacity or the request names one capacity twice.
fn resolve_requests<'r>(
    req: Option<&'r CapacityRequirements>,
    driver: &str,
    d: &Device,
) -> Option<BTreeMap<String, &'r Quantity>> {
    let mut out = BTreeMap::new();
    let Some(req) = req else {
        return Some(out);
    };
    for (name, q) in &req.requests {
        let key = if d.capacity.contains_key(name) {
            fq(driver, name)
        } else {
            match name.split_once('/') {
                Some((dom, id)) if dom == driver && d.capacity.contains_key(id) => name.clone(),
                Some(_) => return None,
                None if d.capacity.contains_key(&format!("{driver}/{name}")) => fq(driver, name),
                None => return None,
            }
        };
        if out.insert(key, q).is_some() {
            return None;
        }
    }
    Some(out)
}

fn value_of(c: &DeviceCapacity) -> Quantity {
    c.value.clone().unwrap_or_else(|| Quantity::from_value(0))
}

/// `calculateConsumedCapacity`.
pub(super) fn calculate_consumed(requested: Option<&Quantity>, c: &DeviceCapacity) -> Quantity {
    let policy = c.request_policy.as_ref();
    let Some(req) = requested else {
        // `fillEmptyRequest`.
        return match policy.and_then(|p| p.default.as_ref()) {
            Some(d) => d.clone(),
            None => value_of(c),
        };
    };
    let Some(p) = policy else {
        return req.clone();
    };
    if let Some(min) = p.valid_range.as_ref().and_then(|r| r.min.as_ref()) {
        // `roundUpRange`.
        if req.milli_value() < min.milli_value() {
            return min.clone();
        }
        let Some(step) = p.valid_range.as_ref().and_then(|r| r.step.as_ref()) else {
            return req.clone();
        };
        let (r, mn, st) = (req.milli_value(), min.milli_value(), step.milli_value());
        if st <= 0 {
            return req.clone();
        }
        let n = (r - mn + st - 1) / st;
        let v = mn.saturating_add(n.saturating_mul(st));
        return if v == r {
            req.clone()
        } else {
            Quantity::from_milli(v)
        };
    }
    if !p.valid_values.is_empty() {
        // `roundUpValidValues`.
        return p
            .valid_values
            .iter()
            .find(|v| req.milli_value() <= v.milli_value())
            .unwrap_or(req)
            .clone();
    }
    req.clone()
}

/// `violatesPolicy`.
fn violates_policy(consumed: i64, c: &DeviceCapacity) -> bool {
    let Some(p) = &c.request_policy else {
        return false;
    };
    if p.default
        .as_ref()
        .is_some_and(|d| d.milli_value() == consumed)
    {
        return false;
    }
    if let Some(r) = &p.valid_range {
        if r.max.as_ref().is_some_and(|m| consumed > m.milli_value()) {
            return true;
        }
        if let Some(step) = &r.step {
            let min = r.min.as_ref().map_or(0, Quantity::milli_value);
            let st = step.milli_value();
            return st <= 0 || (consumed - min) % st != 0;
        }
        return false;
    }
    if !p.valid_values.is_empty() {
        return !p.valid_values.iter().any(|v| v.milli_value() == consumed);
    }
    false
}

/// `CmpRequestOverCapacity` and `GetConsumedCapacityFromRequest` in one: what allocating
/// the device for `req` consumes (by the device's capacity names), or `None` when it does
/// not fit beside `current` (the cluster's) and `allocating` (this attempt's) consumption.
pub(super) fn fit(
    req: Option<&CapacityRequirements>,
    driver: &str,
    d: &Device,
    current: Option<&Consumed>,
    allocating: &Consumed,
) -> Option<BTreeMap<String, Quantity>> {
    let requested = resolve_requests(req, driver, d)?;
    let mut out = BTreeMap::new();
    for (name, (key, c)) in device_capacities(driver, d) {
        let consumed = calculate_consumed(requested.get(&name).copied(), c);
        let m = consumed.milli_value();
        if m < 0 || violates_policy(m, c) {
            return None;
        }
        let total = m
            .saturating_add(current.and_then(|x| x.get(key)).copied().unwrap_or(0))
            .saturating_add(allocating.get(key).copied().unwrap_or(0));
        if total > value_of(c).milli_value() {
            return None;
        }
        out.insert(key.to_string(), consumed);
    }
    Some(out)
}

/// `Allocate`'s refusal of capacity requests while the gate is off (after the
/// prioritized-list refusal, which comes first).
pub(super) fn gate_off_error(f: Features, cref: &str, r: &DeviceRequest) -> Option<String> {
    if f.consumable_capacity || (!f.prioritized_list && !r.first_available.is_empty()) {
        return None;
    }
    if r.exactly.as_ref().is_some_and(|e| e.capacity.is_some()) {
        return Some(format!(
            "claim {cref}, request {}: has capacity requests, but the DRAConsumableCapacity feature is disabled",
            r.name
        ));
    }
    r.first_available.iter().find(|s| s.capacity.is_some()).map(|s| {
        format!(
            "claim {cref}, subrequest {}: has capacity requests, but the DRAConsumableCapacity feature is disabled",
            s.name
        )
    })
}

/// The search's capacity check of device `d` of slice `s` for a request asking `req`, beside
/// the cluster's consumption and this attempt's (`allocating`): `None` when it does not fit,
/// `Some(Some(amounts))` for a shared device (what the pick consumes), `Some(None)` for a
/// dedicated one.
pub(super) fn search_fit(
    idx: &DraIndex,
    s: u32,
    d: usize,
    req: Option<&CapacityRequirements>,
    allocating: &[(u32, Consumed)],
) -> Option<Option<Consumed>> {
    let slice = &idx.slices[s as usize];
    let device = &slice.spec.devices[d];
    let id = idx.dense_id(s, d);
    let mut sum = Consumed::new();
    for (_, c) in allocating.iter().filter(|(x, _)| *x == id) {
        for (k, v) in c {
            *sum.entry(k.clone()).or_default() += v;
        }
    }
    let current = idx.shared.consumed(id);
    let got = fit(req, &slice.spec.driver, device, current.as_ref(), &sum)?;
    Some(multi(device).then(|| {
        got.iter()
            .map(|(k, q)| (k.clone(), q.milli_value()))
            .collect()
    }))
}

/// `allocateDevice`'s `skipCounterCheck` (`deviceCapacityInUse`): a device allowing multiple
/// allocations whose capacity is already in use — by the cluster's claims (some consumed
/// amount) or by a pick of this attempt (`allocating`) — has taken its counters once; later
/// picks neither check nor take them again (and undoing a pick gives them back only when no
/// other pick of the attempt holds the device).
pub(super) fn counters_held(
    idx: &DraIndex,
    s: u32,
    d: usize,
    allocating: &[(u32, Consumed)],
) -> bool {
    if !idx.shared.enabled || !multi(&idx.slices[s as usize].spec.devices[d]) {
        return false;
    }
    let id = idx.dense_id(s, d);
    allocating.iter().any(|(x, _)| *x == id)
        || idx
            .shared
            .consumed(id)
            .is_some_and(|c| c.values().any(|v| *v != 0))
}

/// The `shareID` and `consumedCapacity` of a result on a shared device (gate on).
pub(super) fn share(
    on: bool,
    claim: &ResourceClaim,
    req: Option<&CapacityRequirements>,
    device: &Device,
    r: &mut DeviceRequestAllocationResult,
) {
    if !on || !multi(device) {
        return;
    }
    // `GetConsumedCapacityFromRequest`.
    if let Some(requested) = resolve_requests(req, &r.driver, device) {
        for (name, (key, c)) in device_capacities(&r.driver, device) {
            let q = calculate_consumed(requested.get(&name).copied(), c);
            r.consumed_capacity.insert(key.to_string(), q);
        }
    }
    let id = format!("{}/{}/{}", r.driver, r.pool, r.device);
    r.share_id = Some(share_id(&claim.metadata.uid, &r.request, &id));
}

/// A deterministic, UUID-shaped share id (upstream `GenerateShareID` draws a random one):
/// unique per claim, request and device, as one request never picks a device twice.
pub(super) fn share_id(claim_uid: &str, request: &str, device: &str) -> String {
    let mut h: [u64; 2] = [0xcbf29ce484222325, 0x84222325cbf29ce4];
    for (i, part) in [claim_uid, request, device].iter().enumerate() {
        for b in part.bytes().chain(std::iter::once(i as u8)) {
            for x in h.iter_mut() {
                *x ^= u64::from(b);
                *x = x.wrapping_mul(0x100000001b3);
            }
            h[1] = h[1].rotate_left(5);
        }
    }
    let hex = format!("{:016x}{:016x}", h[0], h[1]);
    // Version 4 and RFC 4122 variant nibbles, as a random UUID has.
    format!(
        "{}-{}-4{}-8{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[13..16],
        &hex[17..20],
        &hex[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(v: serde_json::Value) -> Device {
        serde_json::from_value(v).expect("device")
    }

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).expect("quantity")
    }

    /// Upstream `consumable_capacity_test.go`'s rounding facts.
    #[test]
    fn consumed_capacity_is_rounded_and_defaulted_by_the_policy() {
        let cap = |p: serde_json::Value| -> DeviceCapacity {
            serde_json::from_value(serde_json::json!({"value": "10", "requestPolicy": p}))
                .expect("capacity")
        };
        let range = cap(
            serde_json::json!({"default": "2", "validRange": {"min": "2", "max": "8", "step": "2"}}),
        );
        assert_eq!(calculate_consumed(Some(&q("3")), &range).value(), 4);
        assert_eq!(calculate_consumed(Some(&q("1")), &range).value(), 2);
        assert_eq!(calculate_consumed(Some(&q("4")), &range).as_str(), "4");
        assert_eq!(calculate_consumed(None, &range).value(), 2);
        let values = cap(serde_json::json!({"default": "1", "validValues": ["1", "5", "7"]}));
        assert_eq!(calculate_consumed(Some(&q("2")), &values).value(), 5);
        assert_eq!(calculate_consumed(Some(&q("9")), &values).value(), 9);
        assert!(violates_policy(9000, &values));
        assert!(!violates_policy(7000, &values));
        let plain: DeviceCapacity =
            serde_json::from_value(serde_json::json!({"value": "10"})).expect("c");
        assert_eq!(calculate_consumed(None, &plain).value(), 10);
        assert_eq!(calculate_consumed(Some(&q("3")), &plain).value(), 3);
        assert!(violates_policy(10_000, &range));
        assert!(violates_policy(3_000, &range));
    }

    #[test]
    fn fit_sums_cluster_attempt_and_new_amounts() {
        let d = device(
            serde_json::json!({"name": "x", "allowMultipleAllocations": true,
            "capacity": {"mem": {"value": "8"}, "driver-a/bw": {"value": "4"}}}),
        );
        let req: CapacityRequirements =
            serde_json::from_value(serde_json::json!({"requests": {"mem": "3", "bw": "1"}}))
                .expect("r");
        let got = fit(Some(&req), "driver-a", &d, None, &Consumed::new()).expect("fits");
        assert_eq!(got["mem"].value(), 3);
        assert_eq!(got["driver-a/bw"].value(), 1);
        let current: Consumed = [("mem".to_string(), 4000)].into();
        let allocating: Consumed = [("mem".to_string(), 1001)].into();
        assert!(fit(Some(&req), "driver-a", &d, Some(&current), &allocating).is_none());
        assert!(fit(Some(&req), "driver-a", &d, Some(&current), &Consumed::new()).is_some());
        // A capacity the device lacks: no fit.
        let other: CapacityRequirements =
            serde_json::from_value(serde_json::json!({"requests": {"gpu": "1"}})).expect("r");
        assert!(fit(Some(&other), "driver-a", &d, None, &Consumed::new()).is_none());
        // No request: the whole capacity.
        let all = fit(None, "driver-a", &d, None, &Consumed::new()).expect("fits");
        assert_eq!(all["mem"].value(), 8);
    }

    #[test]
    fn share_ids_are_stable_and_distinct() {
        let a = share_id("uid-1", "req-0", "driver/pool/dev");
        assert_eq!(a, share_id("uid-1", "req-0", "driver/pool/dev"));
        assert_ne!(a, share_id("uid-1", "req-1", "driver/pool/dev"));
        assert_ne!(a, share_id("uid-2", "req-0", "driver/pool/dev"));
        assert_eq!(a.len(), 36);
        assert_eq!(a.as_bytes()[14], b'4');
    }
}
