//! DRADeviceBindingConditions in the binding cycle: DynamicResources' PreBind waits for the
//! binding conditions of the pod's allocated devices (upstream `PreBind`:
//! `wait.PollUntilContextTimeout(ctx, 5*time.Second, pl.bindingTimeout, true,
//! isPodReadyForBinding)`), asynchronously, as the volume wait of `volumes.rs`: the pod stays
//! assumed on its node (phase `Binding`, resources held) while other pods keep scheduling.
//!
//! 1. After PreBind wrote the claims, a pod whose claims have devices with binding conditions
//!    (`hasBindingConditions`) is checked at once (the poll is immediate), then on upstream's
//!    5 s poll grid from that instant, each time a claim of the pod changes (a trace's
//!    `UpdateObject` of the claim status, the simulated driver's write).
//! 2. Ready (`isPodReadyForBinding`: every binding condition True in
//!    `status.devices[].conditions`) → the pod goes on (volumes, then Bind).
//! 3. A binding failure condition True → PreBind fails with upstream's text
//!    (`claim <name> binding failed: reason=<reason>, message="<message>"`); after
//!    `bindingTimeout` (DynamicResourcesArgs, default 600 s) it fails with `device binding
//!    timeout`. The failure is handled as any binding failure (`handleBindingCycleError`):
//!    Unreserve takes the pod out of the claims' `reservedFor`, the pod goes to the error
//!    backoff, and its next attempt finds the claim unavailable (Filter) until PostFilter or
//!    the resource claim controller deallocates it.
//! 4. The simulated drivers (`controlPlane.draDrivers`, `crate::control_plane::dra_drivers`)
//!    write the conditions of their devices `bindingDelay` after PreBind wrote the
//!    allocation.

use std::collections::BTreeSet;

use ksim_api::object::{ApiObject, ObjectKind};
use ksim_api::resource::binding_conditions::DeviceCondition;
use ksim_api::resource::AllocatedDeviceStatus;
use ksim_scheduler::framework::{CycleState, Framework};
use ksim_scheduler::plugins::dynamic_resources::binding_conditions::{
    has_binding_conditions, pod_readiness, Readiness, BINDING_POLL_INTERVAL,
    BINDING_TIMEOUT_MESSAGE,
};
use ksim_scheduler::plugins::dynamic_resources::{DynamicResources, NAME as DRA};

use super::{Ev, PodId, PodPhase, Simulation};
use crate::control_plane::DraBindingOutcome;
use crate::record::Observer;
use crate::time::{SimDuration, SimTime};

/// A pod assumed on its node whose PreBind waits for its devices' binding conditions.
#[derive(Clone)]
pub(super) struct DraBindingWait {
    generation: u32,
    node: String,
    /// `namespace/name` of the pod's claims.
    claims: Vec<String>,
    /// When the wait began (the poll grid's origin).
    started: SimTime,
    /// When PreBind gives up (`bindingTimeout` after `started`).
    deadline: SimTime,
    /// The next poll already scheduled, if any.
    poll_at: Option<SimTime>,
    state: CycleState,
}

fn micros(d: std::time::Duration) -> SimDuration {
    SimDuration(i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
}

fn split(key: &str) -> (String, String) {
    match key.split_once('/') {
        Some((ns, n)) => (ns.to_string(), n.to_string()),
        None => (String::new(), key.to_string()),
    }
}

impl Simulation {
    /// PreBind's binding-condition wait, after the claims were written. Returns the state when
    /// the pod can go on now; `None` when it waits (it goes on when ready) or failed.
    pub(super) fn dra_binding_begin(
        &mut self,
        pod: PodId,
        node: &str,
        fwk: &Framework,
        state: CycleState,
        obs: &mut dyn Observer,
    ) -> Option<CycleState> {
        let timeout = fwk
            .plugin(DRA)
            .and_then(|p| p.as_any())
            .and_then(|a| a.downcast_ref::<DynamicResources>())
            .and_then(DynamicResources::binding_timeout);
        let Some(timeout) = timeout else {
            return Some(state);
        };
        let info = self.pods[pod as usize].info.clone();
        // The pod's claims and, with DRAExtendedResource, the claim PreBind just created for
        // its extended resources (upstream's `isPodReadyForBinding` reads every claim of the
        // cycle state, that one included).
        let mut claims = super::resourceclaim::claim_keys(&info.pod);
        if let Some(x) = &info.pod.status.extended_resource_claim_status {
            claims.push(format!(
                "{}/{}",
                info.pod.metadata.namespace, x.resource_claim_name
            ));
        }
        let objects = &self.snapshot.objects.dra.resource_claims;
        let waiting: Vec<&String> = claims
            .iter()
            .filter(|k| objects.get(*k).is_some_and(|c| has_binding_conditions(c)))
            .collect();
        if waiting.is_empty() {
            return Some(state);
        }
        self.schedule_driver_reports(&claims);
        match self.dra_readiness(&claims) {
            Readiness::Ready => return Some(state),
            Readiness::Failed(e) => {
                let msg = format!("running PreBind plugin \"{DRA}\": {e}");
                self.binding_failed(pod, node, state, msg, obs);
                return None;
            }
            Readiness::Waiting => {}
        }
        let generation = self.pods[pod as usize].generation;
        let deadline = self.now + micros(timeout);
        self.dra_binding_waits.insert(
            pod,
            DraBindingWait {
                generation,
                node: node.to_string(),
                claims,
                started: self.now,
                deadline,
                poll_at: None,
                state,
            },
        );
        self.schedule(deadline, 0, Ev::DraBindingTimeout { pod, generation });
        None
    }

    /// `isPodReadyForBinding` on the cluster's claims now.
    fn dra_readiness(&self, claims: &[String]) -> Readiness {
        let objects = &self.snapshot.objects.dra.resource_claims;
        pod_readiness(
            claims
                .iter()
                .map(|k| (k.as_str(), objects.get(k).map(|c| &**c))),
        )
    }

    /// The simulated drivers of the claims' devices with binding conditions report after
    /// their `bindingDelay`.
    fn schedule_driver_reports(&mut self, claims: &[String]) {
        let drivers = &self.cfg.control_plane.dra_drivers;
        if drivers.is_empty() {
            return;
        }
        let mut reports = Vec::new();
        for key in claims {
            let Some(c) = self.snapshot.objects.dra.resource_claims.get(key) else {
                continue;
            };
            let Some(a) = &c.status.allocation else {
                continue;
            };
            let mut seen = BTreeSet::new();
            for r in &a.devices.results {
                if r.binding_conditions.is_empty() || !seen.insert(r.driver.clone()) {
                    continue;
                }
                if let Some(m) = drivers.get(&r.driver) {
                    reports.push((
                        self.now + SimDuration(m.binding_delay.0.max(0)),
                        Ev::DraDriverReport {
                            claim: key.clone(),
                            uid: c.metadata.uid.clone(),
                            driver: r.driver.clone(),
                        },
                    ));
                }
            }
        }
        for (at, ev) in reports {
            self.schedule(at, 0, ev);
        }
    }

    /// A simulated driver writes its devices' conditions into the claim's `status.devices`
    /// (all binding conditions True, or the first failure condition True).
    pub(super) fn dra_driver_report(&mut self, key: &str, uid: &str, driver: &str) {
        let Some(model) = self.cfg.control_plane.dra_drivers.get(driver).cloned() else {
            return;
        };
        let Some(claim) = self.snapshot.objects.dra.resource_claims.get(key).cloned() else {
            return;
        };
        if claim.metadata.uid != uid {
            return;
        }
        let Some(a) = &claim.status.allocation else {
            return;
        };
        let mut c = (*claim).clone();
        for r in a.devices.results.iter().filter(|r| r.driver == driver) {
            let conditions: Vec<DeviceCondition> = match model.outcome {
                DraBindingOutcome::Ready => r
                    .binding_conditions
                    .iter()
                    .map(|t| condition(t, "Ready", "set by ksim's simulated driver"))
                    .collect(),
                DraBindingOutcome::Failure => r
                    .binding_failure_conditions
                    .first()
                    .map(|t| condition(t, "Failed", "set by ksim's simulated driver"))
                    .into_iter()
                    .collect(),
            };
            if conditions.is_empty() {
                continue;
            }
            let pos = c.status.devices.iter().position(|d| {
                d.driver == r.driver
                    && d.pool == r.pool
                    && d.device == r.device
                    && d.share_id == r.share_id
            });
            let entry = match pos {
                Some(i) => &mut c.status.devices[i],
                None => {
                    c.status.devices.push(AllocatedDeviceStatus {
                        driver: r.driver.clone(),
                        pool: r.pool.clone(),
                        device: r.device.clone(),
                        share_id: r.share_id.clone(),
                        ..Default::default()
                    });
                    let last = c.status.devices.len() - 1;
                    &mut c.status.devices[last]
                }
            };
            for cond in conditions {
                entry.conditions.retain(|e| e.type_ != cond.type_);
                entry.conditions.push(cond);
            }
        }
        let (ns, name) = split(key);
        let watch = [(ObjectKind::ResourceClaim, ns, name)];
        self.change_objects(&watch, |objs| {
            objs.put_object(ApiObject::ResourceClaim(c));
        });
    }

    /// A ResourceClaim changed: the waits that read it poll at their next 5 s tick.
    pub(super) fn dra_binding_claim_changed(&mut self, key: &str) {
        let now = self.now;
        let mut polls = Vec::new();
        for (&id, w) in self.dra_binding_waits.iter_mut() {
            if w.poll_at.is_some() || !w.claims.iter().any(|k| k == key) {
                continue;
            }
            let step = micros(BINDING_POLL_INTERVAL).0.max(1);
            let since = now.since(w.started).0.max(0);
            let ticks = (since + step - 1) / step;
            let at = w.started + SimDuration(ticks * step);
            if at >= w.deadline {
                continue;
            }
            w.poll_at = Some(at);
            polls.push((at, id, w.generation));
        }
        for (at, pod, generation) in polls {
            self.schedule(at, 0, Ev::DraBindingPoll { pod, generation });
        }
    }

    /// PreBind's poll: bind when ready, fail on a failure condition or a claim gone.
    pub(super) fn dra_binding_poll(&mut self, pod: PodId, generation: u32, obs: &mut dyn Observer) {
        let Some(w) = self.dra_binding_waits.get_mut(&pod) else {
            return;
        };
        if w.generation != generation {
            return;
        }
        w.poll_at = None;
        let slot = &self.pods[pod as usize];
        if slot.generation != generation || slot.phase != PodPhase::Binding {
            self.drop_dra_binding_wait(pod);
            return;
        }
        let claims = w.claims.clone();
        match self.dra_readiness(&claims) {
            Readiness::Waiting => {}
            Readiness::Failed(e) => {
                if let Some(w) = self.dra_binding_waits.remove(&pod) {
                    let msg = format!("running PreBind plugin \"{DRA}\": {e}");
                    self.binding_failed(pod, &w.node, w.state, msg, obs);
                }
            }
            Readiness::Ready => {
                if let Some(w) = self.dra_binding_waits.remove(&pod) {
                    let info = self.pods[pod as usize].info.clone();
                    let fwk = self.framework_for(&info).unwrap_or_else(|| self.fwk0());
                    if let Some(state) = self.pre_bind_volumes(pod, &w.node, w.state, obs) {
                        self.bind(pod, &w.node, &fwk, state, obs);
                    }
                }
            }
        }
    }

    /// `bindingTimeout` passed: PreBind fails with `device binding timeout`; the claims not
    /// ready count as timed out for Filter (`isClaimTimeout`).
    pub(super) fn dra_binding_timeout(
        &mut self,
        pod: PodId,
        generation: u32,
        obs: &mut dyn Observer,
    ) {
        if self
            .dra_binding_waits
            .get(&pod)
            .is_none_or(|w| w.generation != generation)
        {
            return;
        }
        let slot = &self.pods[pod as usize];
        if slot.generation != generation || slot.phase != PodPhase::Binding {
            // The pod ended another way meanwhile.
            self.drop_dra_binding_wait(pod);
            return;
        }
        let Some(w) = self.dra_binding_waits.remove(&pod) else {
            return;
        };
        let info = self.pods[pod as usize].info.clone();
        let fwk = self.framework_for(&info).unwrap_or_else(|| self.fwk0());
        if let Some(dr) = fwk
            .plugin(DRA)
            .and_then(|p| p.as_any())
            .and_then(|a| a.downcast_ref::<DynamicResources>())
        {
            for k in &w.claims {
                let ready = self
                    .snapshot
                    .objects
                    .dra
                    .resource_claims
                    .get(k)
                    .is_some_and(|c| {
                        ksim_scheduler::plugins::dynamic_resources::binding_conditions::is_claim_ready_for_binding(c)
                            == Ok(true)
                    });
                if !ready {
                    dr.binding_timed_out(k);
                }
            }
        }
        let msg = format!("running PreBind plugin \"{DRA}\": {BINDING_TIMEOUT_MESSAGE}");
        self.binding_failed(pod, &w.node, w.state, msg, obs);
    }

    /// A waiting pod ended another way (deleted, preempted, its node gone): Unreserve, and
    /// drop it from the queue where it stayed in flight.
    pub(super) fn drop_dra_binding_wait(&mut self, id: PodId) {
        let Some(mut w) = self.dra_binding_waits.remove(&id) else {
            return;
        };
        let info = self.pods[id as usize].info.clone();
        let fwk = self.framework_for(&info).unwrap_or_else(|| self.fwk0());
        fwk.run_unreserve(&mut w.state, &info, &w.node);
        self.apply_dra_unreservations(&fwk);
        self.queue.remove(id);
    }

    /// Whether the pod waits in PreBind for binding conditions.
    pub(super) fn in_dra_binding_wait(&self, id: PodId) -> bool {
        self.dra_binding_waits.contains_key(&id)
    }
}

/// A condition as the simulated driver writes it.
fn condition(type_: &str, reason: &str, message: &str) -> DeviceCondition {
    DeviceCondition {
        type_: type_.to_string(),
        status: "True".into(),
        reason: reason.to_string(),
        message: message.to_string(),
        ..Default::default()
    }
}
