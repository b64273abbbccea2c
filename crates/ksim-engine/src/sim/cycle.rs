//! Room: scheduling cycles. Owns `busy`, `in_flight`, `pending_outcome` and `cycle_generation`,
//! the scheduling algorithm and the preemption RNG; it is the only room that pops the scheduling
//! queue.
//!
//! Reacts to: the loop starting a cycle (the scheduler is idle, a pod can be popped and no event is
//! left at this instant) and the engine event `CycleEnd`. `start_cycle` decides at once — Filter,
//! Score, Reserve and Permit, or PostFilter (preemption) — records the attempt
//! ([`attempt_record`]) and keeps a [`CycleOutcome`]; `finish_cycle` applies it when the cycle's
//! cost has elapsed: a scheduled pod goes to the binding room, a failed one back to the queue (its
//! requeue decided by the hints room) with PostFilter's nomination and victims handed to the binding
//! room.

use ksim_scheduler::framework::{CycleState, PostFilterContext};
use ksim_scheduler::pod_info::PodInfo;
use ksim_scheduler::queue::Location;
use ksim_scheduler::schedule::ScheduleError;

use super::{Ev, PodId, PodPhase, Simulation};
use crate::record::{AttemptResult, Observer, Record};
use crate::time::SimTime;
/// The outcome of a cycle, applied when the cycle ends.
#[derive(Clone)]
pub(super) enum CycleOutcome {
    Scheduled {
        pod: PodId,
        node: String,
        state: CycleState,
    },
    Unschedulable {
        pod: PodId,
        plugins: Vec<&'static str>,
        /// Of `plugins`, those that answered Pending.
        pending: Vec<&'static str>,
        nominated: Option<String>,
        victims: Vec<PodId>,
        /// Claims DynamicResources' PostFilter deallocated (`namespace/name`).
        deallocate: Vec<String>,
    },
    Error {
        pod: PodId,
    },
}
impl Simulation {
    pub(super) fn start_cycle(&mut self, obs: &mut dyn Observer) {
        let Some((id, info, attempt)) = self.queue.pop() else {
            return;
        };
        self.next_action();
        let fwk = self.framework_for(&info).unwrap_or_else(|| self.fwk0());
        let mut state = CycleState::new();
        // UpdateSnapshot: a cycle sees the node list re-read if nodes were added or removed.
        self.snapshot.update_for_cycle();
        self.cycle_generation = self.cluster_generation;
        let explain_start = match &self.explain {
            Some(sel) if sel.selects(&info) => Some(self.alg.next_start_node_index),
            None | Some(_) => None,
        };
        let res = self
            .alg
            .schedule_pod(&fwk, &mut state, &info, &self.snapshot, &self.nominator);
        let mut explain = explain_start.map(|start| {
            let cx = crate::explain::AttemptContext {
                fwk: &fwk,
                alg: &self.alg,
                snapshot: &self.snapshot,
                nominated: &self.nominator,
                state: &state,
                pod: &info,
                attempt,
                start,
                now: self.now,
            };
            crate::explain::attempt_json(&cx, &res)
        });
        let (outcome, record, evaluated) = match res {
            Ok(r) => {
                let node = self.snapshot.nodes[r.suggested_host].name().to_string();
                // Reserve and Permit run in the scheduling cycle.
                let mut s = fwk.run_reserve(&mut state, &info, &node);
                if s.is_success() {
                    s = fwk.run_permit(&state, &info, &node);
                    if !s.is_success() {
                        fwk.run_unreserve(&mut state, &info, &node);
                    }
                } else {
                    fwk.run_unreserve(&mut state, &info, &node);
                }
                if s.is_success() {
                    let rec = attempt_record(
                        self.now,
                        &info,
                        attempt,
                        AttemptResult::Scheduled,
                        &node,
                        "",
                        String::new(),
                        r.feasible_nodes,
                        r.evaluated_nodes,
                    );
                    (
                        CycleOutcome::Scheduled {
                            pod: id,
                            node,
                            state,
                        },
                        rec,
                        r.evaluated_nodes,
                    )
                } else {
                    if let Some(e) = explain.as_mut() {
                        e["reservePermit"] = crate::explain::status_json(&s);
                    }
                    let msg = format!("0/1 nodes are available: 1 {}.", s.message());
                    let rec = attempt_record(
                        self.now,
                        &info,
                        attempt,
                        AttemptResult::Unschedulable,
                        "",
                        "",
                        msg,
                        0,
                        1,
                    );
                    let mut diagnosis = ksim_scheduler::schedule::Diagnosis::default();
                    diagnosis.add_plugin_status(&s);
                    (
                        CycleOutcome::Unschedulable {
                            pod: id,
                            plugins: diagnosis.unschedulable_plugins,
                            pending: diagnosis.pending_plugins,
                            nominated: None,
                            victims: vec![],
                            deallocate: vec![],
                        },
                        rec,
                        1,
                    )
                }
            }
            Err(ScheduleError::Fit(mut fit)) => {
                let mut nominated = None;
                let mut victims = Vec::new();
                let mut deallocate = Vec::new();
                if fwk.has_post_filter_plugins() {
                    let mut ctx = PostFilterContext {
                        framework: &*fwk,
                        snapshot: &self.snapshot,
                        nominated: &self.nominator,
                        rng: &mut self.preempt_rng,
                        extenders: self.alg.extenders(),
                    };
                    let (r, s) =
                        fwk.run_post_filter(&state, &info, &fit.diagnosis.node_to_status, &mut ctx);
                    if let Some(e) = explain.as_mut() {
                        e["postFilter"] = serde_json::json!({
                            "nominatedNode": r.as_ref().and_then(|r| r.nominated_node.clone()),
                            "victims": r.as_ref().map(|r| r.victims.iter()
                                .map(|v| format!("{}/{}", v.namespace(), v.name()))
                                .collect::<Vec<_>>()).unwrap_or_default(),
                            "status": crate::explain::status_json(&s),
                            "message": s.message(),
                        });
                    }
                    if let Some(r) = r {
                        // Some("") clears an earlier nomination (upstream ModeOverride "").
                        nominated = r.nominated_node;
                        victims = r
                            .victims
                            .iter()
                            .filter_map(|v| self.live_get(&v.key).copied())
                            .collect();
                    }
                    deallocate = self.take_dra_deallocations(&fwk);
                    fit.diagnosis.post_filter_msg = s.message();
                    if s.is_success() {
                        fit.diagnosis.post_filter_msg.clear();
                    }
                }
                let msg = fit.message();
                let evaluated = fit.num_all_nodes;
                let rec = attempt_record(
                    self.now,
                    &info,
                    attempt,
                    AttemptResult::Unschedulable,
                    "",
                    nominated.as_deref().unwrap_or(""),
                    msg,
                    0,
                    evaluated,
                );
                let plugins = fit.diagnosis.unschedulable_plugins.clone();
                let pending = fit.diagnosis.pending_plugins.clone();
                (
                    CycleOutcome::Unschedulable {
                        pod: id,
                        plugins,
                        pending,
                        nominated,
                        victims,
                        deallocate,
                    },
                    rec,
                    evaluated,
                )
            }
            Err(e) => {
                // "no nodes available" and plugin errors: the error-backoff path. Upstream
                // reports "no nodes available" as Unschedulable.
                let result = if matches!(e, ScheduleError::NoNodesAvailable) {
                    AttemptResult::Unschedulable
                } else {
                    AttemptResult::Error
                };
                let rec =
                    attempt_record(self.now, &info, attempt, result, "", "", e.message(), 0, 0);
                (CycleOutcome::Error { pod: id }, rec, 0)
            }
        };
        if let Some(e) = explain {
            let unsched = !matches!(record, Record::Attempt { ref result, .. } if *result == AttemptResult::Scheduled);
            let key = format!("{}/{}", info.namespace(), info.name());
            self.explain_out.push((key, unsched, e.to_string()));
        }
        obs.record(&record);
        self.busy = true;
        self.in_flight = Some(id);
        self.pending_outcome = Some(outcome);
        let cost = self.cfg.costs.scheduling_cycle.of(evaluated);
        if cost.micros() == 0 {
            self.finish_cycle(obs);
        } else {
            let at = self.now + cost;
            self.schedule(at, 0, Ev::CycleEnd);
        }
    }

    pub(super) fn finish_cycle(&mut self, obs: &mut dyn Observer) {
        let Some(outcome) = self.pending_outcome.take() else {
            return;
        };
        self.busy = false;
        self.in_flight = None;
        let events = std::mem::take(&mut self.in_flight_events);
        let stamp = self.next_action();
        match outcome {
            CycleOutcome::Scheduled {
                pod,
                node,
                mut state,
            } => {
                if matches!(self.pods[pod as usize].phase, PodPhase::Ended(_)) {
                    self.unreserve(pod, &node, &mut state);
                    return;
                }
                if self.snapshot.get(&node).is_none() {
                    // The node disappeared during the cycle: the assume fails.
                    self.unreserve(pod, &node, &mut state);
                    self.queue.failed_error(pod, stamp);
                    self.note_failure(pod);
                    return;
                }
                self.assume_and_bind(pod, node, state, obs);
            }
            CycleOutcome::Unschedulable {
                pod,
                plugins,
                pending,
                nominated,
                victims,
                deallocate,
            } => {
                if matches!(self.pods[pod as usize].phase, PodPhase::Ended(_)) {
                    self.apply_dra_deallocations(&deallocate);
                    return;
                }
                let strategy = self.in_flight_requeue(pod, &plugins, &pending, &events);
                self.queue
                    .failed_unschedulable(pod, stamp, plugins, pending, strategy);
                self.note_failure(pod);
                self.nominate_and_evict(pod, nominated, victims, obs);
                // PostFilter's claim writes (their Update events requeue the pod).
                self.apply_dra_deallocations(&deallocate);
            }
            CycleOutcome::Error { pod } => {
                if matches!(self.pods[pod as usize].phase, PodPhase::Ended(_)) {
                    return;
                }
                self.queue.failed_error(pod, stamp);
                self.note_failure(pod);
            }
        }
    }

    /// Where a pending pod is in the queue (for reports and the timeline runner).
    pub fn queue_location(&self, id: PodId) -> Option<Location> {
        self.queue.get(id).map(|q| q.location)
    }
}
#[allow(clippy::too_many_arguments)]
pub(super) fn attempt_record(
    at: SimTime,
    info: &PodInfo,
    attempt: u32,
    result: AttemptResult,
    node: &str,
    nominated: &str,
    message: String,
    feasible: usize,
    evaluated: usize,
) -> Record {
    Record::Attempt {
        at,
        namespace: info.namespace().to_string(),
        name: info.name().to_string(),
        attempt,
        result,
        node: node.to_string(),
        nominated_node: nominated.to_string(),
        message,
        feasible_nodes: feasible as u32,
        evaluated_nodes: evaluated as u32,
    }
}
