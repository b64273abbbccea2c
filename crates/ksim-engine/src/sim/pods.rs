//! Room: the pod lifecycle. Owns the pod arena ([`PodSlot`]s by [`PodId`]), the `live` map from
//! `namespace/name` to id, slot reuse (`free_slots`, `freed_in_cycle`) and the pods bound to removed
//! nodes' ghosts.
//!
//! Reacts to: the inputs `CreatePod`, `UpdatePod`, `DeletePod` and `CompletePod`; the engine events
//! `PodFinish` (a bound pod's run time is over) and `VictimGone` (a victim's grace period is over);
//! and, from the nodes room, a pod failing with its removed node. A new pending pod goes to the
//! scheduling queue; a pod that ends leaves the queue or the snapshot, drops its nomination, is
//! dispatched as a cluster event (through the hints room) and has its slot released.

use std::sync::Arc;

use ksim_api::defaults::default_pod;
use ksim_api::Pod;
use ksim_scheduler::framework::ClusterEventKind;
use ksim_scheduler::pod_info::PodInfo;

use super::hints::OwnedEvent;
use super::{amounts, Ev, SimError, Simulation};
use crate::config::OnNodeRemoval;
use crate::record::{Observer, Outcome, Record};
use crate::time::SimDuration;

/// The API server's default `terminationGracePeriodSeconds` (`DefaultTerminationGracePeriodSeconds`).
pub const DEFAULT_TERMINATION_GRACE_SECS: i64 = 30;

/// Dense pod id (index into the pod arena).
pub type PodId = u32;

/// Where a pod is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodPhase {
    /// In the scheduling queue (any of its parts) or being scheduled.
    Pending,
    /// Assumed on a node; binding in flight.
    Binding,
    /// Bound and running (or starting).
    Bound,
    /// Gone: completed, deleted, preempted or failed.
    Ended(Outcome),
}

/// One pod the API server knows or knew.
#[derive(Debug, Clone)]
pub struct PodSlot {
    pub info: Arc<PodInfo>,
    pub phase: PodPhase,
    pub run_for: Option<SimDuration>,
    /// Bumped whenever the pod's timers become stale (deletion, rebind).
    pub generation: u32,
    pub node: String,
    /// Why it ended ("trace", "completed", "preemption", "node-removed").
    pub ended_by: &'static str,
    pub preempted_by: String,
    /// The pod is terminating (a preemption victim within its grace period).
    pub terminating: bool,
    /// The cluster generation its last failed attempt saw (see the termination rule).
    pub last_failed_generation: Option<u64>,
    /// Failed attempts in a row that all saw the same cluster generation.
    pub failures_without_change: u32,
    /// When the pod runs (ready): bind plus the `podStartup` cost; `None` until bound.
    pub started_at: Option<crate::time::SimTime>,
}

impl Simulation {
    /// The pod slots by id. Ended pods keep their slot only with
    /// [`retain_ended_pods`](Self::retain_ended_pods); otherwise a slot is reused by a later pod
    /// and an ended pod's slot shows `Ended` with an empty object until then.
    pub fn pods(&self) -> &[PodSlot] {
        &self.pods
    }

    /// Keeps every ended pod's slot and object until the run ends (the timeline runner reads
    /// final states from them). Memory then grows with the pods ever created.
    pub fn retain_ended_pods(&mut self, keep: bool) {
        self.retain_ended = keep;
    }

    /// Frees an ended pod's slot for reuse (unless ended pods are retained).
    pub(super) fn release_slot(&mut self, id: PodId) {
        self.release_quota(id);
        if self.retain_ended {
            return;
        }
        if let Some(st) = self.autoscaler.as_mut() {
            st.first_seen.remove(&id);
        }
        if self.busy {
            // The cycle's outcome may still read it (Unreserve of an in-flight pod): cleared
            // once the cycle is over.
            self.freed_in_cycle.push(id);
        } else {
            self.clear_slot(id);
        }
    }

    fn clear_slot(&mut self, id: PodId) {
        let slot = &mut self.pods[id as usize];
        slot.info = self.released_info.clone();
        slot.node = String::new();
        slot.preempted_by = String::new();
        slot.terminating = false;
        slot.started_at = None;
        self.free_slots.push(id);
    }
    /// The live pod with this `namespace/name`, if any.
    pub fn pod_id(&self, key: &str) -> Option<PodId> {
        self.live_get(key).copied()
    }

    /// The slot of the live pod with this `namespace/name`, as a map by key answers.
    pub(super) fn live_get(&self, key: &str) -> Option<&PodId> {
        let pods = &self.pods;
        self.live.get(key_hash(key), key, |id| {
            pods.get(id as usize).map_or("", |s| s.info.key.as_str())
        })
    }

    /// Whether a live pod has this `namespace/name`.
    pub(super) fn live_contains(&self, key: &str) -> bool {
        self.live_get(key).is_some()
    }

    /// Every live pod's key and slot (in no meaningful order).
    pub(super) fn live_iter(&self) -> impl Iterator<Item = (&String, &PodId)> + '_ {
        self.live
            .ids()
            .filter_map(|id| Some((&self.pods.get(*id as usize)?.info.key, id)))
    }

    /// Takes pod `id` (live under `key`) out of the live pods. By slot, not by comparing
    /// keys: the slot is the one filed under the key.
    fn live_remove(&mut self, key: &str, id: PodId) {
        let h = key_hash(key);
        if !self.live.remove(h, id) {
            // Not filed under this slot (cannot happen: every caller found the slot as the
            // key's): what a removal by key does.
            if let Some(&other) = self.live_get(key) {
                self.live.remove(h, other);
            }
        }
    }

    /// Pods alive now: slots in use (created and not ended), pending ones included.
    pub(super) fn live_pods(&self) -> u64 {
        (self.pods.len() - self.free_slots.len() - self.freed_in_cycle.len()) as u64
    }

    /// `limits.maxLivePods`: one more pod would pass the limit. The run stops with an error
    /// naming the limit, before memory runs out.
    fn check_live_pods(&self, key: &str) -> Result<(), SimError> {
        let limit = self.cfg.limits.max_live_pods;
        let live = self.live_pods();
        if live < limit {
            return Ok(());
        }
        let pending = self
            .pods
            .iter()
            .filter(|s| s.phase == PodPhase::Pending)
            .count();
        Err(SimError::Limit {
            at: self.now,
            message: format!(
                "creating pod {key} would make {} pods alive at once ({pending} of them pending), \
                 more than limits.maxLivePods = {limit}: a workload this large (check a \
                 generator's rate and count, or a trace's deletions) needs more memory than a \
                 run is allowed by default; raise limits.maxLivePods in the scenario to go on",
                live + 1
            ),
        })
    }

    pub(super) fn create_pod(
        &mut self,
        mut pod: Pod,
        run_for: Option<SimDuration>,
        obs: &mut dyn Observer,
    ) -> Result<(), SimError> {
        if pod.metadata.namespace.is_empty() {
            pod.metadata.namespace = "default".into();
        }
        let key = pod.key();
        if self.live_contains(&key) {
            return Err(self.input_err(format!("CreatePod: pod {key} already exists")));
        }
        // The admission chain (`sim/admission`): a refused pod is recorded, not created, and
        // the run goes on.
        let charges = match self.admit_pod(&mut pod) {
            Ok(c) => c,
            Err(message) => {
                self.record_refused(&pod, message, obs);
                return Ok(());
            }
        };
        default_pod(&mut pod);
        let h = key_hash(&key);
        // A pod bound to a node the cluster never had is refused, as `ksim validate` refuses it;
        // one bound to a removed node that still had pods joins its ghost, and with an
        // autoscaler the node may be one it added.
        let node = &pod.spec.node_name;
        if !node.is_empty()
            && self.snapshot.get(node).is_none()
            && !self.ghosts.contains_key(node)
            && self.autoscaler.is_none()
        {
            return Err(self.input_err(format!(
                "CreatePod: pod {key} is bound to node {node:?}, which does not exist"
            )));
        }
        self.check_live_pods(&key)?;
        self.created_keys.insert(h);
        let bound_to = pod.spec.node_name.clone();
        let info = Arc::new(PodInfo::new(pod));
        if !self.busy {
            for id in std::mem::take(&mut self.freed_in_cycle) {
                self.clear_slot(id);
            }
        }
        let fresh = PodSlot {
            info: info.clone(),
            phase: PodPhase::Pending,
            run_for,
            generation: 0,
            node: String::new(),
            ended_by: "",
            preempted_by: String::new(),
            terminating: false,
            last_failed_generation: None,
            failures_without_change: 0,
            started_at: None,
        };
        let id = match self.free_slots.pop() {
            Some(id) => {
                // A later generation than any the slot had: its stale timers stay stale.
                let generation = self.pods[id as usize].generation + 1;
                self.pods[id as usize] = PodSlot {
                    generation,
                    ..fresh
                };
                id
            }
            None => {
                self.pods.push(fresh);
                (self.pods.len() - 1) as PodId
            }
        };
        self.live.insert(h, id);
        self.disruption_pod_changed(&info, self.now);
        self.charge_quota(id, charges);
        // The controller owner (pods.csv `owner_kind,owner_name`), else the first owner.
        let refs = &info.pod.metadata.owner_references;
        let owner = refs
            .iter()
            .find(|o| o.controller == Some(true))
            .or(refs.first());
        obs.record(&Record::PodCreated {
            at: self.now,
            namespace: info.namespace().to_string(),
            name: info.name().to_string(),
            priority: info.priority(),
            requests: amounts(&info.requests),
            owner_kind: owner.map(|o| o.kind.clone()).unwrap_or_default(),
            owner_name: owner.map(|o| o.name.clone()).unwrap_or_default(),
        });
        self.claims_pod_added(&info);
        if !bound_to.is_empty() {
            // Already running on its node: straight into the cache.
            self.pods[id as usize].node = bound_to.clone();
            self.pods[id as usize].phase = PodPhase::Bound;
            if !self.snapshot.add_pod(info.clone()) {
                if let Some(g) = self.ghosts.get_mut(&bound_to) {
                    g.add_pod(info.clone());
                }
            }
            if let Some(r) = self.pod_claims_record(id) {
                obs.record(&r);
            }
            obs.record(&Record::PodBound {
                at: self.now,
                namespace: info.namespace().to_string(),
                name: info.name().to_string(),
                node: bound_to,
            });
            self.set_started(id);
            self.start_running(id);
            self.dispatch(OwnedEvent::Pod {
                kind: ClusterEventKind::AssignedPodAdd,
                old: None,
                new: Some(info),
            });
            self.taint_eviction_pod_bound(id);
            return Ok(());
        }
        if let Some(fwk) = self.framework_for(&info) {
            let stamp = (self.now.micros(), self.action_seq);
            self.refresh_dra_objects(!info.pod.spec.resource_claims.is_empty());
            self.queue.add(id, info, stamp, &fwk);
            self.record_dra_gate(id, obs);
        }
        Ok(())
    }

    /// The kubelet reports the pod running: `status.phase` and `status.startTime` (which
    /// preemption's "latest start time" criterion reads).
    pub(super) fn set_started(&mut self, id: PodId) {
        let slot = &self.pods[id as usize];
        if slot.info.pod.status.start_time.is_some() {
            // Started before the run (a dump's pod): ready now.
            self.pods[id as usize].started_at = Some(self.now);
            let info = self.pods[id as usize].info.clone();
            self.disruption_pod_changed(&info, self.now);
            return;
        }
        // Pods started in the same instant get distinct start times in the order of the actions
        // that started them, 1 µs apart (the oracle's clock advances 1 µs per action). Preemption
        // reads the order: an earlier start is the more important pod, and a candidate node's
        // latest start time breaks ties between nodes.
        let offset = SimDuration::from_micros((self.action_seq - self.instant_first_action) as i64);
        let started_at = self.now + self.cfg.costs.pod_startup + offset;
        let start_time = crate::time::rfc3339(started_at);
        // The cache lets go of its copy first, so that the slot's is usually the only one left
        // and gets the new status in place: the pod object is copied only while something else
        // (a queue entry, an in-flight event) still holds the old one, which then keeps it.
        // The cache's removal and addition of the pod, without recounting what a status
        // change leaves as it was (`Snapshot::update_pod_status`).
        let slot = &mut self.pods[id as usize];
        self.snapshot
            .update_pod_status(&slot.node, &mut slot.info, |status| {
                status.phase = "Running".into();
                status.start_time = Some(start_time);
            });
        slot.started_at = Some(started_at);
        let info = slot.info.clone();
        self.disruption_pod_changed(&info, started_at);
    }

    pub(super) fn start_running(&mut self, id: PodId) {
        self.controller_pod_running(id);
        let slot = &self.pods[id as usize];
        let generation = slot.generation;
        let deadline = slot.info.pod.spec.active_deadline_seconds;
        if let Some(d) = slot.run_for {
            let at = self.now + self.cfg.costs.pod_startup + d;
            self.schedule(
                at,
                0,
                Ev::PodFinish {
                    pod: id,
                    generation,
                },
            );
        }
        // The kubelet's activeDeadlineHandler counts from the pod's start on its node.
        if let Some(secs) = deadline.filter(|s| *s > 0) {
            let at = self.now + self.cfg.costs.pod_startup + SimDuration::from_secs(secs);
            self.schedule(
                at,
                0,
                Ev::PodDeadline {
                    pod: id,
                    generation,
                },
            );
        }
    }

    /// `PodDeadline`: the kubelet's `activeDeadlineHandler` (`pkg/kubelet/active_deadline.go`)
    /// fails a pod running longer than its `spec.activeDeadlineSeconds` (phase Failed, reason
    /// `DeadlineExceeded`), recorded as an eviction with cause `deadline`. A stale timer, or a
    /// pod already ended or terminating, does nothing.
    pub(super) fn pod_deadline(&mut self, pod: PodId, generation: u32, obs: &mut dyn Observer) {
        let slot = &self.pods[pod as usize];
        if slot.generation != generation || slot.phase != PodPhase::Bound || slot.terminating {
            return;
        }
        self.record_eviction(pod, "deadline", obs);
        self.end_pod(pod, Outcome::Failed, "deadline", String::new(), obs);
    }

    /// Records why a pod is being evicted (`PodEvicted`, just before it ends or starts
    /// terminating); `false` (nothing recorded) for a pod already ended or terminating.
    pub(super) fn record_eviction(
        &mut self,
        id: PodId,
        cause: &str,
        obs: &mut dyn Observer,
    ) -> bool {
        let slot = &self.pods[id as usize];
        if matches!(slot.phase, PodPhase::Ended(_)) || slot.terminating {
            return false;
        }
        obs.record(&Record::PodEvicted {
            at: self.now,
            namespace: slot.info.namespace().to_string(),
            name: slot.info.name().to_string(),
            node: slot.node.clone(),
            cause: cause.to_string(),
        });
        true
    }

    pub(super) fn delete_pod(
        &mut self,
        key: &str,
        outcome: Outcome,
        by: &'static str,
        obs: &mut dyn Observer,
    ) {
        let Some(&id) = self.live_get(key) else {
            return; // Deleting a pod that no longer exists does nothing.
        };
        self.end_pod(id, outcome, by, String::new(), obs);
    }

    /// Removes a pod from wherever it is and records its end.
    pub(super) fn end_pod(
        &mut self,
        id: PodId,
        outcome: Outcome,
        by: &'static str,
        preemptor: String,
        obs: &mut dyn Observer,
    ) {
        // The object and the phase it had (not a copy of the whole slot: its strings).
        let slot = &self.pods[id as usize];
        let (info, phase, was_terminating) = (slot.info.clone(), slot.phase, slot.terminating);
        self.live_remove(&info.key, id);
        self.pods[id as usize].generation += 1;
        self.pods[id as usize].phase = PodPhase::Ended(outcome);
        self.pods[id as usize].ended_by = by;
        self.pods[id as usize].preempted_by = preemptor.clone();
        let had_nomination = self.nominator.remove(info.uid()).is_some();
        match phase {
            PodPhase::Pending => {
                if self.in_flight == Some(id) {
                    // Its cycle's outcome is dropped when the cycle ends.
                } else {
                    self.queue.remove(id);
                }
                let kind = ClusterEventKind::UnscheduledPodDelete;
                let mut old = (*info).clone();
                if had_nomination && old.pod.status.nominated_node_name.is_empty() {
                    old.pod.status.nominated_node_name = "nominated".into();
                }
                self.dispatch(OwnedEvent::Pod {
                    kind,
                    old: Some(Arc::new(old)),
                    new: None,
                });
            }
            PodPhase::Binding | PodPhase::Bound => {
                self.drop_volume_wait(id);
                self.drop_dra_binding_wait(id);
                let node = &self.pods[id as usize].node;
                if !self.snapshot.remove_pod(node, info.uid()) {
                    if let Some(g) = self.ghosts.get_mut(node) {
                        g.remove_pod(info.uid());
                    }
                }
                self.dispatch(OwnedEvent::Pod {
                    kind: ClusterEventKind::AssignedPodDelete,
                    old: Some(info.clone()),
                    new: None,
                });
            }
            PodPhase::Ended(_) => return,
        }
        obs.record(&Record::PodEnded {
            at: self.now,
            namespace: info.namespace().to_string(),
            name: info.name().to_string(),
            outcome,
            preempted_by: preemptor,
        });
        self.release_slot(id);
        self.controller_pod_gone(&info, outcome, by);
        self.claims_pod_gone(&info);
        if was_terminating {
            self.controller_stateful_pod_gone(&info);
        }
        self.disruption_pod_changed(&info, self.now);
    }

    pub(super) fn update_pod(&mut self, mut pod: Pod) -> Result<(), SimError> {
        default_pod(&mut pod);
        let key = pod.key();
        let Some(&id) = self.live_get(&key) else {
            return Err(self.input_err(format!("UpdatePod: pod {key} does not exist")));
        };
        let old = self.pods[id as usize].info.clone();
        // spec.nodeName and status are kept from the current object.
        pod.spec.node_name = old.pod.spec.node_name.clone();
        pod.status = old.pod.status.clone();
        let info = Arc::new(PodInfo::new(pod));
        self.pods[id as usize].info = info.clone();
        // Its labels may have moved it into or out of a PDB.
        self.disruption_pod_changed(&old, self.now);
        self.disruption_pod_changed(&info, self.now);
        match self.pods[id as usize].phase {
            PodPhase::Pending => {
                if self.in_flight != Some(id) {
                    let fwk = self.framework_for(&info).unwrap_or_else(|| self.fwk0());
                    self.refresh_dra_objects(!info.pod.spec.resource_claims.is_empty());
                    self.queue.update(id, info.clone(), self.now.micros(), &fwk);
                }
                self.nominator.update(info.clone());
                self.claims_pod_changed(&info);
            }
            PodPhase::Binding | PodPhase::Bound => {
                let node = self.pods[id as usize].node.clone();
                self.snapshot.remove_pod(&node, old.uid());
                self.snapshot.add_pod(info.clone());
                self.dispatch(OwnedEvent::Pod {
                    kind: ClusterEventKind::AssignedPodUpdate,
                    old: Some(old),
                    new: Some(info),
                });
                if self.pods[id as usize].phase == PodPhase::Bound {
                    self.taint_eviction_pod_bound(id);
                }
                let info = self.pods[id as usize].info.clone();
                self.claims_pod_changed(&info);
            }
            PodPhase::Ended(_) => {}
        }
        Ok(())
    }

    /// A pod starts terminating: its object gets a deletion timestamp (and, when `reason` is
    /// given, the DisruptionTarget condition with that reason), which filters and preemption
    /// read, while it still holds its resources until its grace period ends.
    pub(super) fn mark_terminating(&mut self, id: PodId, reason: Option<&str>) {
        let slot = self.pods[id as usize].clone();
        let mut p = slot.info.pod.clone();
        p.metadata.deletion_timestamp = Some(crate::time::rfc3339(self.now));
        if let Some(reason) = reason {
            p.status.conditions.push(ksim_api::Condition {
                type_: "DisruptionTarget".into(),
                status: "True".into(),
                reason: reason.into(),
                message: String::new(),
            });
        }
        let info = Arc::new(slot.info.with_object(p));
        self.pods[id as usize].info = info.clone();
        self.disruption_pod_changed(&info, self.now);
        if matches!(slot.phase, PodPhase::Binding | PodPhase::Bound) {
            self.snapshot.remove_pod(&slot.node, slot.info.uid());
            self.snapshot.add_pod(info.clone());
        }
        self.controller_pod_terminating(&info);
    }

    /// `PodFinish`: a bound pod's run time is over (a stale timer does nothing).
    pub(super) fn pod_finished(&mut self, pod: PodId, generation: u32, obs: &mut dyn Observer) {
        if self.pods[pod as usize].generation == generation
            && self.pods[pod as usize].phase == PodPhase::Bound
        {
            // A pod whose containers exit non-zero (`ksim.io/exit-code`) ends Failed.
            let failed = exit_code(&self.pods[pod as usize].info.pod) != 0;
            let outcome = if failed {
                Outcome::Failed
            } else {
                Outcome::Succeeded
            };
            self.end_pod(pod, outcome, "completed", String::new(), obs);
        }
    }

    /// The pod's `terminationGracePeriodSeconds` (API default 30 s; negative reads as 0).
    pub(super) fn pod_grace(&self, id: PodId) -> SimDuration {
        let secs = self.pods[id as usize]
            .info
            .pod
            .spec
            .termination_grace_period_seconds
            .unwrap_or(DEFAULT_TERMINATION_GRACE_SECS);
        SimDuration::from_secs(secs.max(0))
    }

    /// A graceful `DeletePod` (a trace's, a controller's): the pod's own grace period unless
    /// `costs.terminationGrace` overrides it.
    pub(super) fn delete_pod_gracefully(
        &mut self,
        key: &str,
        by: &'static str,
        obs: &mut dyn Observer,
    ) {
        let Some(&id) = self.live_get(key) else {
            return; // Deleting a pod that no longer exists does nothing.
        };
        let grace = self
            .cfg
            .costs
            .termination_grace
            .unwrap_or_else(|| self.pod_grace(id));
        self.terminate_pod(id, Outcome::Deleted, by, String::new(), grace, None, obs);
    }

    /// Graceful deletion (the API server's `CheckGracefulDelete`, the kubelet's termination):
    /// a pod bound to a node gets its `deletionTimestamp` (and the DisruptionTarget condition with
    /// `reason`), keeps its resources on the node, as upstream's NodeInfo counts a
    /// terminating pod, and ends `grace` later. A pod not on a node, or with no grace, ends
    /// at once. A pod already terminating is left as it is (a second deletion changes
    /// nothing). Its controller sees it inactive at once (upstream's `FilterActivePods`), and
    /// the disruption controller sees it not healthy; a StatefulSet, whose replacement has
    /// the same name, reacts once it is gone.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn terminate_pod(
        &mut self,
        id: PodId,
        outcome: Outcome,
        by: &'static str,
        preemptor: String,
        grace: SimDuration,
        reason: Option<&str>,
        obs: &mut dyn Observer,
    ) {
        let slot = &self.pods[id as usize];
        if slot.terminating && slot.phase == PodPhase::Bound {
            return;
        }
        // Not bound yet (pending, or assumed with its binding or PreBind in flight): the API
        // server's pod has no `nodeName`, so `CheckGracefulDelete` gives it grace 0.
        if grace.micros() <= 0 || slot.phase != PodPhase::Bound {
            self.end_pod(id, outcome, by, preemptor, obs);
            return;
        }
        self.pods[id as usize].terminating = true;
        self.mark_terminating(id, reason);
        let key = self.pods[id as usize].info.key.clone();
        if self.owned_by_stateful_set(&key) {
            self.stateful_pod_terminating(&key);
        } else {
            let info = self.pods[id as usize].info.clone();
            self.controller_pod_gone(&info, outcome, by);
        }
        let generation = self.pods[id as usize].generation;
        self.schedule(
            self.now + grace,
            0,
            Ev::TerminationDone {
                pod: id,
                generation,
                outcome,
                by,
                preemptor,
            },
        );
    }

    /// `TerminationDone`: a terminating pod's grace period is over; it ends (a stale timer,
    /// of a pod that ended otherwise, does nothing).
    pub(super) fn termination_done(
        &mut self,
        pod: PodId,
        generation: u32,
        outcome: Outcome,
        by: &'static str,
        preemptor: String,
        obs: &mut dyn Observer,
    ) {
        if self.pods[pod as usize].generation == generation
            && !matches!(self.pods[pod as usize].phase, PodPhase::Ended(_))
        {
            self.end_pod(pod, outcome, by, preemptor, obs);
        }
    }

    /// A pod bound to a removed node fails (`onNodeRemoval` other than `keepBound`); with
    /// `failAndRecreateOwned` a controller-owned pod is re-created as a new pending pod.
    pub(super) fn fail_on_node_removal(
        &mut self,
        id: PodId,
        mode: OnNodeRemoval,
        obs: &mut dyn Observer,
    ) {
        let slot = self.pods[id as usize].clone();
        self.live_remove(&slot.info.key, id);
        self.pods[id as usize].generation += 1;
        self.pods[id as usize].phase = PodPhase::Ended(Outcome::Failed);
        self.pods[id as usize].ended_by = "node-removed";
        obs.record(&Record::PodEnded {
            at: self.now,
            namespace: slot.info.namespace().to_string(),
            name: slot.info.name().to_string(),
            outcome: Outcome::Failed,
            preempted_by: String::new(),
        });
        self.release_slot(id);
        self.disruption_pod_changed(&slot.info, self.now);
        self.claims_pod_gone(&slot.info);
        if self.controller_owns(&slot.info.key) {
            // Its controller replaces it (after its reaction delay).
            self.controller_pod_gone(&slot.info, Outcome::Failed, "node-removed");
            return;
        }
        if slot.terminating {
            // It was being deleted: nothing re-creates it (its controller, if any, already
            // replaced it when it started terminating). A Job waiting for it sees it gone.
            self.controller_pod_gone(&slot.info, Outcome::Failed, "node-removed");
            return;
        }
        let owned = slot
            .info
            .pod
            .metadata
            .owner_references
            .iter()
            .any(|o| o.controller == Some(true));
        if mode == OnNodeRemoval::FailAndRecreateOwned && owned {
            self.recreated += 1;
            let mut p = slot.info.pod.clone();
            p.metadata.name = format!("{}-r{}", p.metadata.name, self.recreated);
            p.metadata.uid = String::new();
            p.spec.node_name = String::new();
            p.status = Default::default();
            // A re-created pod is a new pod; the engine cannot fail here because
            // the name is fresh.
            let _ = self.create_pod(p, slot.run_for, obs);
        }
    }
}

/// The hashes of every pod key ever created. A creation appends its hash to a list (a write
/// to the end of an array, not a miss in a set as large as every pod ever created); a lookup,
/// which only a deletion of a pod that is no longer live makes, first moves the list into the
/// set. The answers are those of a set filled at each creation.
#[derive(Debug, Clone, Default)]
pub(super) struct CreatedKeys {
    set: rustc_hash::FxHashSet<u64>,
    recent: Vec<u64>,
}

impl CreatedKeys {
    pub(super) fn insert(&mut self, h: u64) {
        self.recent.push(h);
    }

    pub(super) fn contains(&mut self, h: u64) -> bool {
        if !self.recent.is_empty() {
            self.set.extend(self.recent.drain(..));
        }
        self.set.contains(&h)
    }
}

/// The exit code of a pod's containers when its run time is over (`ksim.io/exit-code`, 0 when
/// absent or not an integer).
pub(super) fn exit_code(pod: &ksim_api::Pod) -> i32 {
    pod.metadata
        .annotations
        .get(super::controllers::EXIT_CODE_ANNOTATION)
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

/// The hash kept per created pod key ([`Simulation::check_pod_existed`]'s memory of pods).
pub(super) fn key_hash(key: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    key.hash(&mut h);
    h.finish()
}
