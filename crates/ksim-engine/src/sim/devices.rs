//! Device allocation as the outputs report it: per DRA pool (driver, pool) the devices that
//! claims hold and the devices the pool publishes ([`Record::Devices`]), and the claims of each
//! pod as it binds ([`Record::PodClaims`]).
//!
//! Counts are taken from the cluster objects (what the API server holds), never from the
//! scheduler's in-flight allocations: a claim counts from the instant PreBind wrote its
//! `status.allocation` until the allocation is removed or the claim deleted.
//!
//! - `total`: the distinct device names of the pool's slices of its highest generation (upstream
//!   `GatherPools` keeps only those); an incomplete pool counts what it has.
//! - `allocated`: the distinct devices (driver, pool, device) named by the allocation results
//!   of every allocated claim, admin-access results excepted (upstream
//!   `GatherAllocatedState`). A device whose slice is gone still counts while a claim holds it.
//!
//! Any change of a ResourceClaim or ResourceSlice marks the counts stale; the event loop
//! recomputes them after each event and cycle and records the pools whose counts changed, in
//! (driver, pool) order. A run whose objects never held a slice or an allocated claim records
//! nothing, so its outputs are those of a run without DRA.

use std::collections::{BTreeMap, BTreeSet};

use ksim_api::resource::claim_name_for;
use ksim_scheduler::node_info::ClusterObjects;

use super::{PodId, Simulation};
use crate::record::{Observer, PodClaim, Record};

/// (driver, pool) → (allocated, total).
pub(super) type DeviceCounts = BTreeMap<(String, String), (u64, u64)>;

/// The device counts of every pool that has slices or allocated devices.
pub(super) fn device_counts(objs: &ClusterObjects) -> DeviceCounts {
    let dra = &objs.dra;
    // (driver, pool) → (generation, device names).
    let mut published: BTreeMap<(&str, &str), (i64, BTreeSet<&str>)> = BTreeMap::new();
    for s in dra.resource_slices.values() {
        let key = (s.spec.driver.as_str(), s.spec.pool.name.as_str());
        let g = s.spec.pool.generation;
        let entry = published.entry(key).or_insert_with(|| (g, BTreeSet::new()));
        if g < entry.0 {
            continue;
        }
        if g > entry.0 {
            *entry = (g, BTreeSet::new());
        }
        entry
            .1
            .extend(s.spec.devices.iter().map(|d| d.name.as_str()));
    }
    let mut used: BTreeSet<(&str, &str, &str)> = BTreeSet::new();
    for c in dra.resource_claims.values() {
        let Some(alloc) = c.status.allocation.as_ref() else {
            continue;
        };
        for r in &alloc.devices.results {
            if r.admin_access == Some(true) {
                continue;
            }
            used.insert((r.driver.as_str(), r.pool.as_str(), r.device.as_str()));
        }
    }
    let mut out = DeviceCounts::new();
    for ((driver, pool), (_, names)) in &published {
        out.insert(
            (driver.to_string(), pool.to_string()),
            (0, names.len() as u64),
        );
    }
    for (driver, pool, _) in used {
        out.entry((driver.to_string(), pool.to_string()))
            .or_insert((0, 0))
            .0 += 1;
    }
    out
}

impl Simulation {
    /// Records the pools whose device counts changed since the last call (see the module doc).
    pub(super) fn flush_device_counts(&mut self, obs: &mut dyn Observer) {
        if !self.devices_stale {
            return;
        }
        self.devices_stale = false;
        let now = device_counts(&self.snapshot.objects);
        for (key, &(allocated, total)) in &now {
            if self.device_counts.get(key) != Some(&(allocated, total)) {
                obs.record(&Record::Devices {
                    at: self.now,
                    driver: key.0.clone(),
                    pool: key.1.clone(),
                    allocated,
                    total,
                });
            }
        }
        for key in self.device_counts.keys() {
            if !now.contains_key(key) {
                obs.record(&Record::Devices {
                    at: self.now,
                    driver: key.0.clone(),
                    pool: key.1.clone(),
                    allocated: 0,
                    total: 0,
                });
            }
        }
        self.device_counts = now;
    }

    /// The pod's claims as they stand in the cluster objects, for [`Record::PodClaims`]; None
    /// for a pod without `spec.resourceClaims` nor an extended resource claim.
    pub(super) fn pod_claims_record(&self, pod: PodId) -> Option<Record> {
        let info = &self.pods[pod as usize].info;
        let p = &info.pod;
        let extended = p.status.extended_resource_claim_status.as_ref();
        if p.spec.resource_claims.is_empty() && extended.is_none() {
            return None;
        }
        let ns = info.namespace();
        let claims = p
            .spec
            .resource_claims
            .iter()
            .map(|entry| match claim_name_for(p, entry) {
                Ok(Some((n, _))) => n,
                _ => String::new(),
            })
            // DRAExtendedResource: the claim the scheduler created, after the pod's own.
            .chain(extended.map(|x| x.resource_claim_name.clone()))
            .map(|name| {
                let devices = self
                    .snapshot
                    .objects
                    .dra
                    .resource_claims
                    .get(&format!("{ns}/{name}"))
                    .and_then(|c| c.status.allocation.as_ref())
                    .map(|a| {
                        a.devices
                            .results
                            .iter()
                            .map(|r| format!("{}/{}/{}", r.driver, r.pool, r.device))
                            .collect()
                    })
                    .unwrap_or_default();
                PodClaim { name, devices }
            })
            .collect();
        Some(Record::PodClaims {
            at: self.now,
            namespace: ns.to_string(),
            name: info.name().to_string(),
            claims,
        })
    }
}
