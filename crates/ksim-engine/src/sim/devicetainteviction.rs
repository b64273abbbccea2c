//! Room: the device taint eviction controller of DRADeviceTaints
//! (`pkg/controller/devicetainteviction/device_taint_eviction.go`, kube-controller-manager's
//! `device-taint-eviction-controller`, run when the gate is on). It deletes the pods that use an
//! allocated device with a `NoExecute` taint their claim does not tolerate.
//!
//! - **Tainted devices** (`pool.getTaintedDevices`): the `NoExecute` taints of the devices in
//!   each pool's newest generation, rebuilt when the slices change (`handleSliceChange`).
//! - **A claim's eviction time** (`claimEvictionTime`): over its allocated devices' `NoExecute`
//!   taints, the earliest `timeAdded`; a taint that a toleration of the allocation result
//!   (copied from the request at allocation) with effect `NoExecute` matches
//!   (`resourceclaim.ToleratesTaint`) counts from `timeAdded + tolerationSeconds` (the smallest
//!   of them, a negative one as 0), or not at all when a matching toleration has no
//!   `tolerationSeconds`.
//! - **A pod's eviction time** (`podEvictionTime`): a bound pod, over the claims it references
//!   (`resourceclaim.Name`) that are allocated, owned by it when generated, and reserved for it:
//!   the earliest of their eviction times. Recomputed for the pods of a claim when the claim
//!   changes (`handleClaimChange` → `handlePods`), for a pod when it is bound
//!   (`handlePodChange`), for every bound pod with claims when the slices change.
//! - **Eviction** (`maybeDeletePod`): at that time (at once when it is past), the pod is deleted
//!   through [`Simulation::evict_pod_as`] with the `DisruptionTarget` reason
//!   `DeletionByDeviceTaintManager` (record `PodEvicted`, cause `device-taint`). A time that
//!   moves reschedules it; one that disappears cancels it.
//!
//! The API server stamps a taint's `timeAdded` when it is written without one
//! (`SetDefaults_DeviceTaint`): ksim stamps it with the virtual time of the write
//! ([`stamp_taint_times`]); a given `timeAdded` is read as RFC 3339 on the same clock as every
//! other timestamp of the run (virtual time counts from 1970-01-01T00:00:00Z).
//!
//! Not modelled: DeviceTaintRule objects (DRADeviceTaintRules, alpha, off by default) and
//! their status conditions; the controller's informer and API latency (evictions happen at
//! their time, as ksim's node taint eviction does); workload (PodGroup) consumers.

use std::collections::{BTreeMap, BTreeSet};

use ksim_api::object::ApiObject;
use ksim_api::resource::taints::{tolerates_taint, DeviceTaint, EFFECT_NO_EXECUTE};
use ksim_api::resource::{claim_name_for, ResourceClaim, ResourceSlice};
use ksim_scheduler::cluster_objects::DraMap;
use ksim_scheduler::preemption::parse_rfc3339_nanos;

use super::{Ev, PodId, PodPhase, SimError, Simulation};
use crate::record::Observer;
use crate::time::{rfc3339, SimTime};

/// The gate that starts the controller upstream.
const GATE: &str = "DRADeviceTaints";

/// `(driver, pool, device)`.
type DeviceKey = (String, String, String);

#[derive(Debug, Clone, Default)]
pub(super) struct State {
    /// The slice map `tainted` was built from.
    slices_seen: Option<DraMap<ResourceSlice>>,
    /// `NoExecute` taints of the devices in each pool's newest generation, with the virtual
    /// time each was added.
    tainted: BTreeMap<DeviceKey, Vec<(DeviceTaint, SimTime)>>,
    /// Pod key → (uid, eviction time, token) of its scheduled eviction.
    works: BTreeMap<String, (String, SimTime, u64)>,
    next_token: u64,
}

/// The virtual time of an RFC 3339 `timeAdded` (`None` when malformed).
fn time_added(t: &DeviceTaint) -> Option<SimTime> {
    let s = t.time_added.as_deref()?;
    let nanos = parse_rfc3339_nanos(s)?;
    i64::try_from(nanos.div_euclid(1000)).ok().map(SimTime)
}

/// The API server's `timeAdded` default: every taint of a written slice without one gets the
/// time of the write. A malformed one is refused, naming the field.
pub(super) fn stamp_taint_times(obj: &mut ApiObject, now: SimTime) -> Result<(), String> {
    let ApiObject::ResourceSlice(s) = obj else {
        return Ok(());
    };
    for (i, d) in s.spec.devices.iter_mut().enumerate() {
        for (j, t) in d.taints.iter_mut().enumerate() {
            match &t.time_added {
                None => t.time_added = Some(rfc3339(now)),
                Some(v) if parse_rfc3339_nanos(v).is_none() => {
                    return Err(format!(
                        "ResourceSlice {}: spec.devices[{i}].taints[{j}].timeAdded: Invalid value: {v:?}: not an RFC 3339 time",
                        s.metadata.name
                    ))
                }
                Some(_) => {}
            }
        }
    }
    Ok(())
}

/// `getTaintedDevices` over every pool: the newest generation's `NoExecute` taints.
fn tainted_devices(
    slices: &DraMap<ResourceSlice>,
) -> BTreeMap<DeviceKey, Vec<(DeviceTaint, SimTime)>> {
    let mut newest: BTreeMap<(&str, &str), i64> = BTreeMap::new();
    for s in slices.values() {
        let g = newest
            .entry((s.spec.driver.as_str(), s.spec.pool.name.as_str()))
            .or_insert(i64::MIN);
        *g = (*g).max(s.spec.pool.generation);
    }
    let mut out: BTreeMap<DeviceKey, Vec<(DeviceTaint, SimTime)>> = BTreeMap::new();
    for s in slices.values() {
        let pool = (s.spec.driver.as_str(), s.spec.pool.name.as_str());
        if newest.get(&pool) != Some(&s.spec.pool.generation) {
            continue;
        }
        for d in &s.spec.devices {
            for t in d.taints.iter().filter(|t| t.effect == EFFECT_NO_EXECUTE) {
                let key = (
                    s.spec.driver.clone(),
                    s.spec.pool.name.clone(),
                    d.name.clone(),
                );
                let at = time_added(t).unwrap_or(SimTime::ZERO);
                out.entry(key).or_default().push((t.clone(), at));
            }
        }
    }
    out
}

impl State {
    /// `claimEvictionTime`: when the pods of `claim` must go, `None` when never.
    fn claim_eviction(&self, claim: &ResourceClaim) -> Option<SimTime> {
        let alloc = claim.status.allocation.as_ref()?;
        let mut when: Option<SimTime> = None;
        for r in &alloc.devices.results {
            let key = (r.driver.clone(), r.pool.clone(), r.device.clone());
            let Some(taints) = self.tainted.get(&key) else {
                continue;
            };
            'taint: for (taint, added) in taints {
                let mut seconds: Option<i64> = None;
                for tol in &r.tolerations {
                    if tol.effect == EFFECT_NO_EXECUTE && tolerates_taint(tol, taint) {
                        match tol.toleration_seconds {
                            None => continue 'taint, // Tolerated forever.
                            Some(s) => {
                                let s = s.max(0);
                                seconds = Some(seconds.map_or(s, |m| m.min(s)));
                            }
                        }
                    }
                }
                let at = match seconds {
                    Some(s) => {
                        *added + crate::time::SimDuration::from_secs(s.min(i64::MAX / 1_000_000))
                    }
                    None => *added,
                };
                when = Some(when.map_or(at, |w| w.min(at)));
            }
        }
        when
    }
}

impl Simulation {
    fn dte_enabled(&self) -> bool {
        self.feature_gates().enabled(GATE)
    }

    /// Rebuilds the tainted devices when the slices changed; whether any device is tainted.
    fn dte_sync_slices(&mut self) -> bool {
        let slices = &self.snapshot.objects.dra.resource_slices;
        let seen = self.device_taint_eviction.slices_seen.as_ref();
        if !seen.is_some_and(|s| s.ptr_eq(slices)) {
            self.device_taint_eviction.tainted = tainted_devices(slices);
            self.device_taint_eviction.slices_seen = Some(slices.clone());
            return true;
        }
        false
    }

    /// `podEvictionTime` of a live pod.
    fn dte_pod_eviction(&self, id: PodId) -> Option<SimTime> {
        let slot = &self.pods[id as usize];
        if slot.phase != PodPhase::Bound {
            return None;
        }
        let pod = &slot.info.pod;
        let mut when: Option<SimTime> = None;
        for entry in &pod.spec.resource_claims {
            let Ok(Some((name, must_check_owner))) = claim_name_for(pod, entry) else {
                continue;
            };
            let key = format!("{}/{}", pod.metadata.namespace, name);
            let Some(claim) = self.snapshot.objects.dra.resource_claims.get(&key) else {
                continue;
            };
            if must_check_owner
                && !claim
                    .metadata
                    .owner_references
                    .iter()
                    .any(|o| o.controller == Some(true) && o.uid == slot.info.uid())
            {
                continue;
            }
            if !claim
                .status
                .reserved_for
                .iter()
                .any(|c| c.resource == "pods" && c.uid == slot.info.uid())
            {
                continue;
            }
            if let Some(at) = self.device_taint_eviction.claim_eviction(claim) {
                when = Some(when.map_or(at, |w| w.min(at)));
            }
        }
        when
    }

    /// `handlePod`: schedules, moves or cancels the pod's eviction.
    fn dte_handle_pod(&mut self, key: &str) {
        let Some(&id) = self.live_get(key) else {
            self.device_taint_eviction.works.remove(key);
            return;
        };
        let uid = self.pods[id as usize].info.uid().to_string();
        let Some(at) = self.dte_pod_eviction(id) else {
            self.device_taint_eviction.works.remove(key);
            return;
        };
        let st = &mut self.device_taint_eviction;
        if st
            .works
            .get(key)
            .is_some_and(|(u, w, _)| *u == uid && *w == at)
        {
            return;
        }
        st.next_token += 1;
        let token = st.next_token;
        st.works.insert(key.to_string(), (uid, at, token));
        let fire = at.max(self.now);
        self.schedule(
            fire,
            0,
            Ev::DeviceTaintEvict {
                key: key.to_string(),
                token,
            },
        );
    }

    /// Hook of a pod bound to its node (`handlePodChange`).
    pub(super) fn device_taint_pod_bound(&mut self, id: PodId) {
        if !self.dte_enabled() {
            return;
        }
        self.dte_sync_slices();
        if self.device_taint_eviction.tainted.is_empty() {
            return;
        }
        let key = self.pods[id as usize].info.key.clone();
        self.dte_handle_pod(&key);
    }

    /// Hook of a ResourceSlice write (`handleSliceChange`): every bound pod with claims is
    /// checked again when the tainted devices changed.
    pub(super) fn device_taint_slices_changed(&mut self) {
        if !self.dte_enabled() {
            return;
        }
        let before = self.device_taint_eviction.tainted.clone();
        if !self.dte_sync_slices() || before == self.device_taint_eviction.tainted {
            return;
        }
        let mut keys: BTreeSet<String> = self.device_taint_eviction.works.keys().cloned().collect();
        for slot in &self.pods {
            if slot.phase == PodPhase::Bound && !slot.info.pod.spec.resource_claims.is_empty() {
                keys.insert(slot.info.key.clone());
            }
        }
        for k in keys {
            self.dte_handle_pod(&k);
        }
    }

    /// Hook of a ResourceClaim write (`handleClaimChange` → `handlePods`): the pods it is or
    /// was reserved for.
    pub(super) fn device_taint_claim_changed(
        &mut self,
        old: Option<&ApiObject>,
        new: Option<&ApiObject>,
    ) {
        if !self.dte_enabled() {
            return;
        }
        self.dte_sync_slices();
        if self.device_taint_eviction.tainted.is_empty()
            && self.device_taint_eviction.works.is_empty()
        {
            return;
        }
        let mut keys = BTreeSet::new();
        for o in [old, new].into_iter().flatten() {
            if let ApiObject::ResourceClaim(c) = o {
                for r in c
                    .status
                    .reserved_for
                    .iter()
                    .filter(|r| r.resource == "pods")
                {
                    keys.insert(format!("{}/{}", c.metadata.namespace, r.name));
                }
            }
        }
        for k in keys {
            self.dte_handle_pod(&k);
        }
    }

    /// `DeviceTaintEvict`: a scheduled eviction is due (`maybeDeletePod`).
    pub(super) fn device_taint_evict(&mut self, key: &str, token: u64, obs: &mut dyn Observer) {
        let Some((uid, _, t)) = self.device_taint_eviction.works.get(key) else {
            return;
        };
        if *t != token {
            return;
        }
        let uid = uid.clone();
        self.device_taint_eviction.works.remove(key);
        let Some(&id) = self.live_get(key) else {
            return;
        };
        let slot = &self.pods[id as usize];
        if slot.info.uid() != uid || slot.phase != PodPhase::Bound {
            return;
        }
        self.evict_pod_as(id, "device-taint", "DeletionByDeviceTaintManager", obs);
    }

    /// The slices present at t=0, stamped as written then.
    pub(super) fn stamp_initial_device_taints(
        &self,
        objects: &mut std::sync::Arc<ksim_scheduler::node_info::ClusterObjects>,
    ) -> Result<(), SimError> {
        if !self.dte_enabled() {
            return Ok(());
        }
        let tainted: Vec<ResourceSlice> = objects
            .dra
            .resource_slices
            .values()
            .filter(|s| s.spec.devices.iter().any(|d| !d.taints.is_empty()))
            .map(|s| (**s).clone())
            .collect();
        for s in tainted {
            let mut obj = ApiObject::ResourceSlice(s);
            self.stamp_device_taints(&mut obj)?;
            std::sync::Arc::make_mut(objects).put_object(obj);
        }
        Ok(())
    }

    /// Stamps `timeAdded` on the taints of a slice written now ([`stamp_taint_times`]).
    pub(super) fn stamp_device_taints(&self, obj: &mut ApiObject) -> Result<(), SimError> {
        if !self.dte_enabled() {
            return Ok(());
        }
        stamp_taint_times(obj, self.now).map_err(|m| self.input_err(m))
    }
}
