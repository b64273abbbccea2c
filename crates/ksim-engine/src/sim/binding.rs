//! Room: assume, bind and nominations. Assumes a scheduled pod on its node (clears its
//! nomination, sets `spec.nodeName`, adds it to the snapshot), runs PreBind (the volumes room may
//! hold the pod there) and Bind, and binds after the bind latency plus jitter (the jitter RNG is this
//! room's). Sets and clears nominations (`set_nomination`, every change bumps the cluster
//! generation) and evicts preemption victims, at once or through `VictimGone` after their grace
//! period.
//!
//! Binding goes to the first interested binder extender when one is configured (see [`Simulation::bind`]).
//!
//! Reacts to: a scheduled cycle's outcome, a failed cycle's PostFilter result, and the engine event
//! `BindDone` (`Binding` → `Bound`, the pod starts running and is dispatched as `AssignedPodAdd`).

use std::sync::Arc;

use ksim_scheduler::framework::{ClusterEventKind, CycleState, Framework};
use rand::Rng;

use super::hints::OwnedEvent;
use super::{Ev, PodId, PodPhase, Simulation};
use crate::record::{Observer, Outcome, Record};
use crate::time::SimDuration;
impl Simulation {
    /// The binding becomes visible after the bind latency (plus jitter).
    pub(super) fn schedule_bind_done(&mut self, pod: PodId, obs: &mut dyn Observer) {
        let mut lat = self.cfg.costs.bind_latency;
        if self.cfg.costs.bind_jitter.micros() > 0 {
            lat = SimDuration(
                lat.micros()
                    + self
                        .jitter_rng
                        .random_range(0..=self.cfg.costs.bind_jitter.micros()),
            );
        }
        let generation = self.pods[pod as usize].generation;
        let at = self.now + lat;
        if lat.micros() == 0 {
            self.bind_done(pod, generation, obs);
        } else {
            self.schedule(at, 0, Ev::BindDone { pod, generation });
        }
    }

    pub(super) fn bind_done(&mut self, pod: PodId, generation: u32, obs: &mut dyn Observer) {
        let slot = &self.pods[pod as usize];
        if slot.generation != generation || slot.phase != PodPhase::Binding {
            return;
        }
        self.next_action();
        self.pods[pod as usize].phase = PodPhase::Bound;
        self.set_started(pod);
        let info = self.pods[pod as usize].info.clone();
        if let Some(r) = self.pod_claims_record(pod) {
            obs.record(&r);
        }
        obs.record(&Record::PodBound {
            at: self.now,
            namespace: info.namespace().to_string(),
            name: info.name().to_string(),
            node: self.pods[pod as usize].node.clone(),
        });
        self.start_running(pod);
        self.dispatch(OwnedEvent::Pod {
            kind: ClusterEventKind::AssignedPodAdd,
            old: None,
            new: Some(info),
        });
        self.taint_eviction_pod_bound(pod);
    }

    /// Sets or clears a pending pod's nominated node (object, queue entry and nominator).
    fn set_nomination(&mut self, id: PodId, node: Option<&str>) {
        let slot = &self.pods[id as usize];
        if slot.phase != PodPhase::Pending {
            return;
        }
        let current = slot.info.pod.status.nominated_node_name.as_str();
        if current == node.unwrap_or("") && self.nominator.node_of(slot.info.uid()) == node {
            return;
        }
        // Nominations change what other pods' filters count on a node.
        self.cluster_generation += 1;
        let mut p = slot.info.pod.clone();
        p.status.nominated_node_name = node.unwrap_or("").to_string();
        let info = Arc::new(slot.info.with_object(p));
        self.pods[id as usize].info = info.clone();
        self.queue.set_pod(id, info.clone());
        match node {
            Some(n) => self.nominator.add(info, n),
            None => {
                self.nominator.remove(info.uid());
            }
        }
    }

    /// A scheduled pod is assumed on its node (nomination cleared, `spec.nodeName` set, added to
    /// the snapshot), runs PreBind (which may wait for its volumes) and Bind, and binds after
    /// the bind latency.
    pub(super) fn assume_and_bind(
        &mut self,
        pod: PodId,
        node: String,
        state: CycleState,
        obs: &mut dyn Observer,
    ) {
        self.nominator.remove(self.pods[pod as usize].info.uid());
        // The queue's in-flight entry lets go of its reference while the pod is assumed, so
        // that the slot's is usually the only one left and the object takes its node in place
        // (`Arc::make_mut`) instead of being copied whole, the old copy freed at the binding.
        // The entry gets its object back below if the pod stays in the queue.
        let placeholder = self.released_info.clone();
        let queued = self.queue.replace_in_flight(pod, placeholder.clone());
        let slot = &mut self.pods[pod as usize];
        // The entry's object is the slot's unless the pod was updated during its cycle.
        let queued = queued.filter(|q| !Arc::ptr_eq(q, &slot.info));
        let p = &mut Arc::make_mut(&mut slot.info).pod;
        let node_before = std::mem::replace(&mut p.spec.node_name, node.clone());
        let nominated_before = std::mem::take(&mut p.status.nominated_node_name);
        slot.node = node.clone();
        slot.phase = PodPhase::Binding;
        let info = slot.info.clone();
        self.snapshot.add_pod(info.clone());
        let fwk = self.framework_for(&info).unwrap_or_else(|| self.fwk0());
        // A pod waiting for its volumes stays in flight in the queue until they are
        // bound (or PreBind fails and it goes back to the error backoff).
        let state = self.pre_bind(pod, &node, &fwk, state, obs);
        // PreBind waits for the volumes and the entry still has the placeholder (a failure
        // replaced it, a binding removed it): its own object again, as before the assume.
        if state.is_none()
            && self
                .queue
                .get(pod)
                .is_some_and(|q| Arc::ptr_eq(&q.pod, &placeholder))
        {
            let before = queued.unwrap_or_else(|| {
                let mut p = info.pod.clone();
                p.spec.node_name = node_before;
                p.status.nominated_node_name = nominated_before;
                Arc::new(info.with_object(p))
            });
            self.queue.replace_in_flight(pod, before);
        }
        let Some(state) = state else {
            return;
        };
        self.bind(pod, &node, &fwk, state, obs);
    }

    /// Upstream `bind`: the first interested extender with a bind verb binds the pod
    /// (`extendersBinding`; an ignorable one that fails is skipped), else the Bind plugins. An
    /// extender's error fails the binding cycle (Unreserve, forget, error backoff) with that
    /// error's text, as upstream's `handleBindingCycleError`. The call takes no virtual time;
    /// the binding becomes visible after the bind latency either way.
    pub(super) fn bind(
        &mut self,
        pod: PodId,
        node: &str,
        fwk: &Framework,
        state: CycleState,
        obs: &mut dyn Observer,
    ) {
        let info = self.pods[pod as usize].info.clone();
        // Ok(true): an extender bound it; Ok(false): none is a binder for this pod.
        let mut outcome: Result<bool, String> = Ok(false);
        for ext in self.alg.extenders() {
            if !ext.is_binder() || !ext.is_interested(&info) {
                continue;
            }
            match ext.bind(&info, node) {
                Err(_) if ext.is_ignorable() => continue,
                r => {
                    outcome = r.map(|()| true);
                    break;
                }
            }
        }
        let by_extender = match outcome {
            Ok(b) => b,
            Err(msg) => {
                self.binding_failed(pod, node, state, msg, obs);
                return;
            }
        };
        self.queue.remove(pod);
        if !by_extender {
            let _ = fwk.run_bind(&state, &info, node);
        }
        self.schedule_bind_done(pod, obs);
    }

    /// PostFilter's outcome for a pod that failed: `Some("")` clears its nomination; a node
    /// nominates it there, clears the nominations of lower-priority pods nominated to that node,
    /// and evicts the victims (at once, or after their grace period through `TerminationDone`).
    pub(super) fn nominate_and_evict(
        &mut self,
        pod: PodId,
        nominated: Option<String>,
        victims: Vec<PodId>,
        obs: &mut dyn Observer,
    ) {
        if nominated.as_deref() == Some("") {
            self.set_nomination(pod, None);
        }
        if let Some(node) = nominated.filter(|n| !n.is_empty()) {
            // Lower-priority pods nominated to this node lose their nomination.
            let me = self.pods[pod as usize].info.clone();
            let lower = ksim_scheduler::preemption::lower_priority_nominated_pods(
                &self.nominator,
                &me,
                &node,
            );
            for other in lower {
                if let Some(&oid) = self.live_get(&other.key) {
                    self.set_nomination(oid, None);
                }
            }
            self.set_nomination(pod, Some(&node));
            let preemptor = self.pods[pod as usize].info.key.clone();
            // Victims terminate after their grace period; upstream deletes them in
            // victim-name order.
            let mut vs = victims;
            vs.sort_by(|a, b| {
                self.pods[*a as usize]
                    .info
                    .name()
                    .cmp(self.pods[*b as usize].info.name())
            });
            for v in vs {
                // `DeletePod` of the victim: its own grace period unless `costs.victimGrace`
                // overrides it.
                let grace = self
                    .cfg
                    .costs
                    .victim_grace
                    .unwrap_or_else(|| self.pod_grace(v));
                if grace.micros() == 0 {
                    self.pods[v as usize].terminating = true;
                    self.next_action();
                    self.end_pod(v, Outcome::Preempted, "preemption", preemptor.clone(), obs);
                } else {
                    self.terminate_pod(
                        v,
                        Outcome::Preempted,
                        "preemption",
                        preemptor.clone(),
                        grace,
                        Some("PreemptionByScheduler"),
                        obs,
                    );
                }
            }
        }
    }
}
