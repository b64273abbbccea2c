//! Room: when a run without a horizon ends. The termination rule (`stalled`: only flushes and
//! retries are left and every waiting pod already failed against the cluster as it is), the
//! stalled outcome of the pods still waiting (`stall`), and the count of failed attempts per
//! cluster generation behind both the rule and the `maxAttemptsWithoutChange` guard
//! (`note_failure`).
//!
//! Reacts to: the loop about to apply a periodic flush (checks the rule), and every failed attempt
//! (cycle, PreBind).

use ksim_scheduler::queue::Location;

use super::{autoscaler, Ev, PodId, PodPhase, SimError, Simulation};
use crate::record::{Observer, Outcome, Record};
use crate::time::SimTime;
impl Simulation {
    /// The termination rule of a run without a horizon: only periodic flushes (and retries) are
    /// left — no input event, no pod that will finish or bind, no victim, volume or autoscaler
    /// action due — and every pod waiting to be retried (activeQ, backoffQ, error backoff) has
    /// already failed against the cluster as it is now, so its retry would see the same cluster
    /// and fail the same way. Pods in the unschedulable pool wait for an event that cannot
    /// come. Left alone, such a run would retry forever.
    pub(super) fn stalled(&self, next: &Ev) -> bool {
        matches!(
            next,
            Ev::FlushBackoff | Ev::FlushLeftover | Ev::Autoscale(autoscaler::Timer::Scan)
        ) && !self.busy
            && !self.autoscaler_has_work()
            && self.non_flush_pending == 0
            && self.queue.iter().all(|(id, q)| match q.location {
                Location::Active | Location::Backoff | Location::ErrorBackoff => {
                    self.pods.get(id as usize).is_some_and(|slot| {
                        slot.last_failed_generation == Some(self.cluster_generation)
                    })
                }
                _ => true,
            })
    }

    /// Ends a stalled run: every pod still waiting ends as `stalled`, and the run says why.
    pub(super) fn stall(&mut self, obs: &mut dyn Observer) {
        let waiting: Vec<PodId> = (0..self.pods.len() as PodId)
            .filter(|&id| {
                let slot = &self.pods[id as usize];
                (slot.phase == PodPhase::Pending && self.framework_for(&slot.info).is_some())
                    || (slot.phase == PodPhase::Binding
                        && (self.volume_waits.contains_key(&id) || self.in_dra_binding_wait(id)))
            })
            .collect();
        if waiting.is_empty() {
            return;
        }
        for &id in &waiting {
            let info = self.pods[id as usize].info.clone();
            obs.record(&Record::PodEnded {
                at: self.now,
                namespace: info.namespace().to_string(),
                name: info.name().to_string(),
                outcome: Outcome::Stalled,
                preempted_by: String::new(),
            });
            self.pods[id as usize].phase = PodPhase::Ended(Outcome::Stalled);
        }
        self.stall_reason = Some(format!(
            "the run stalled at {}: {} pod(s) still waiting can never be scheduled — no event is \
             left that could change the cluster, and each already failed against it as it is \
             (give a horizon with --until to keep the run going)",
            self.now,
            waiting.len()
        ));
    }

    /// Ends the run's pods that no profile serves (their `schedulerName` is another
    /// scheduler's): each ends as `unserved`; returns their scheduler names, once each.
    pub(super) fn report_unserved(&mut self, at: SimTime, obs: &mut dyn Observer) -> Vec<String> {
        let mut names = std::collections::BTreeSet::new();
        for id in 0..self.pods.len() {
            let slot = &self.pods[id];
            if slot.phase != PodPhase::Pending || self.framework_for(&slot.info).is_some() {
                continue;
            }
            let info = slot.info.clone();
            names.insert(info.pod.spec.scheduler_name.clone());
            obs.record(&Record::PodEnded {
                at,
                namespace: info.namespace().to_string(),
                name: info.name().to_string(),
                outcome: Outcome::Unserved,
                preempted_by: String::new(),
            });
            self.pods[id].phase = PodPhase::Ended(Outcome::Unserved);
        }
        names.into_iter().collect()
    }

    /// Counts a failed attempt of `pod` for the termination rule and the attempts guard.
    pub(super) fn note_failure(&mut self, pod: PodId) {
        let generation = self.cycle_generation;
        let limit = self.cfg.limits.max_attempts_without_change;
        let Some(slot) = self.pods.get_mut(pod as usize) else {
            return;
        };
        if slot.last_failed_generation == Some(generation) {
            slot.failures_without_change = slot.failures_without_change.saturating_add(1);
        } else {
            slot.last_failed_generation = Some(generation);
            slot.failures_without_change = 1;
        }
        if slot.failures_without_change > limit && self.guard_error.is_none() {
            let key = format!("{}/{}", slot.info.namespace(), slot.info.name());
            self.guard_error = Some(SimError::Limit {
                at: self.now,
                message: format!(
                    "pod {key} failed {} attempts in a row with no cluster change in between \
                     (limits.maxAttemptsWithoutChange = {limit}): raise the limit, or shorten \
                     the horizon",
                    slot.failures_without_change
                ),
            });
        }
    }
}
