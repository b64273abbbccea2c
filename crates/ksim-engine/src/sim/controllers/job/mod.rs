//! The Job controller (`pkg/controller/job`, `syncJob` / `manageJob`), as upstream v1.35 runs
//! it. See `docs/jobs.md` for each behaviour beside its upstream function and default.
//!
//! - Pods `<job>-<5 chars>`; Indexed Jobs (`completionMode: Indexed`) `<job>-<index>-<5 chars>`
//!   with the `batch.kubernetes.io/job-completion-index` annotation and label, lowest pending
//!   indexes first (`firstPendingIndexes`).
//! - Active pods wanted (`manageJob`'s `wantActive`): `min(parallelism, completions -
//!   succeeded)`; without `completions`, `parallelism` until the first success, then no new
//!   pod while the running ones finish (the Job completes when one succeeded and none is
//!   active).
//! - Failures: every pod that ends other than succeeded counts as failed (upstream's
//!   `isPodFailed`: pods lost to preemption, node loss or deletion included); with
//!   `podReplacementPolicy: TerminatingOrFailed` (the default without a `podFailurePolicy`)
//!   a preempted pod counts, and is replaced, as soon as it starts terminating.
//!   `podFailurePolicy` rules (`Ignore`, `Count`, `FailJob`, `FailIndex`) match the pod's exit
//!   code (`ksim.io/exit-code`) or conditions (`DisruptionTarget` for preempted and node-lost
//!   pods).
//! - Replacements wait for the pod failure backoff: 10 s doubling per failure since the last
//!   success, capped at 6 min (`DefaultJobPodFailureBackOff`, `MaxJobPodFailureBackOff`), per
//!   index with `backoffLimitPerIndex`.
//! - The Job fails (`BackoffLimitExceeded`) when failures exceed `backoffLimit` (6),
//!   (`DeadlineExceeded`) `activeDeadlineSeconds` after its start, (`PodFailurePolicy`) on a
//!   `FailJob` rule, (`MaxFailedIndexesExceeded`, `FailedIndexes`) with `backoffLimitPerIndex`;
//!   it completes at `completions` successes or when a `successPolicy` rule is met. Its active
//!   pods are then deleted.
//! - `suspend: true`: no pods; active ones are deleted (not counted as failures); the start
//!   time (and so the deadline) restarts at resume.
//! - `ttlSecondsAfterFinished`: the TTL-after-finished controller deletes the finished Job
//!   (and its pods) that long after it finished.
//!
//! - v1.35's two-step finish (`delayTerminalCondition`, with `JobManagedBy` and
//!   `JobPodReplacementPolicy` GA): at its target the Job deletes its active pods (through its
//!   rate-limited client; graceful, each within its `terminationGracePeriodSeconds`), a failing
//!   Job counts them as failed, and the `Complete` / `Failed` condition is set once none of
//!   its pods is terminating (`enactJobFinished`). The condition is reported in
//!   controllers.csv.
//!
//! Simplified: ksim pods have one exit code for all their containers and none when killed.
//! Past `activeDeadlineSeconds` the deleted pods' eviction cause is `deadline`.

mod policy;

use std::collections::{BTreeMap, BTreeSet};

use ksim_api::object::ObjectKind;
use ksim_api::workloads::Workload;
use ksim_scheduler::pod_info::PodInfo;

use super::{ctl_key, NewPod, Simulation};
use crate::record::{Observer, Outcome};
use crate::time::{SimDuration, SimTime};
use policy::{match_pod_failure_policy, remaining_backoff, success_policy_met, Action, FailedPod};

/// Upstream's annotation (and label) of an Indexed Job's pod index.
pub const COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";
/// Upstream's annotation of an index's failures so far (`backoffLimitPerIndex`).
pub const INDEX_FAILURE_COUNT: &str = "batch.kubernetes.io/job-index-failure-count";

/// A Job's state beyond its controller's counts.
#[derive(Debug, Clone, Default)]
pub(crate) struct JobState {
    /// The backoff record: failures since the last success, and the last one's time.
    failures_after_success: i32,
    last_failure: Option<SimTime>,
    /// `status.startTime` (unset while suspended).
    start: Option<SimTime>,
    /// Indexed: succeeded and failed indexes, each index's failures and last failure.
    succeeded_idx: BTreeSet<i32>,
    failed_idx: BTreeSet<i32>,
    idx_failures: BTreeMap<i32, (i32, SimTime)>,
    /// Indexed: the index of each live pod.
    pod_index: BTreeMap<String, i32>,
    /// A `FailJob` rule matched: the message.
    fail_job: Option<String>,
    /// The interim condition it reached (upstream's `SuccessCriteriaMet` when `true`,
    /// `FailureTarget` when `false`): no new pod, its active pods are deleted, and the terminal
    /// condition waits until none of its pods is terminating.
    target: Option<bool>,
    /// Its pods still terminating (deleted by it, or preempted and already replaced):
    /// upstream's `status.terminating`.
    terminating: BTreeSet<String>,
    /// The reason of its (interim, then terminal) condition, and when the terminal condition
    /// (`Complete` / `Failed`) was set.
    pub reason: Option<&'static str>,
    pub finished_at: Option<SimTime>,
}

impl JobState {
    /// The terminal condition, once set.
    pub fn condition(&self) -> Option<crate::record::JobCondition> {
        let at = self.finished_at?;
        Some(crate::record::JobCondition {
            type_: if self.target == Some(true) {
                "Complete"
            } else {
                "Failed"
            }
            .into(),
            reason: self.reason.unwrap_or_default().into(),
            at,
        })
    }
}

/// The name of the CronJob a Job names as its controller, if any.
pub(super) fn cronjob_name(job: &Workload) -> Option<String> {
    job.metadata
        .owner_references
        .iter()
        .find(|o| o.controller == Some(true) && o.kind == "CronJob")
        .map(|o| o.name.clone())
}

/// The controller key of the CronJob a Job names as its controller, if any (a controller's
/// namespace is defaulted when it is inserted).
fn cronjob_of(job: &Workload) -> Option<String> {
    cronjob_name(job).map(|n| ctl_key(ObjectKind::CronJob, &job.metadata.namespace, &n))
}

/// The completion index a pod's annotation gives.
fn index_of(pod: &ksim_api::Pod) -> Option<i32> {
    pod.metadata
        .annotations
        .get(COMPLETION_INDEX)
        .and_then(|s| s.parse().ok())
}

fn indexed(w: &Workload) -> bool {
    w.spec.completion_mode.as_deref() == Some("Indexed")
}

/// Whether a terminating pod already counts as failed (`podReplacementPolicy`).
fn replace_terminating(w: &Workload) -> bool {
    match w.spec.pod_replacement_policy.as_deref() {
        Some(p) => p == "TerminatingOrFailed",
        None => w.spec.pod_failure_policy.is_none(),
    }
}

impl Simulation {
    /// A pod of Job `key` ended (`outcome`, `by` as `PodSlot::ended_by`): counted as upstream
    /// counts it, and the Job syncs.
    pub(super) fn job_pod_gone(&mut self, key: &str, info: &PodInfo, outcome: Outcome, by: &str) {
        let now = self.now;
        let Some(c) = self.controllers.ctls.get_mut(key) else {
            return;
        };
        c.pods.remove(&info.key);
        let st = self.controllers.jobs.entry(key.to_string()).or_default();
        // An adopted pod (a dump's) has its index in its annotation only.
        let idx = st
            .pod_index
            .remove(&info.key)
            .or_else(|| index_of(&info.pod).filter(|_| indexed(&c.obj)));
        if outcome == Outcome::Succeeded {
            match idx {
                Some(i) => {
                    st.succeeded_idx.insert(i);
                    c.succeeded = st.succeeded_idx.len() as i32;
                }
                None => c.succeeded += 1,
            }
            st.failures_after_success = 0;
            st.last_failure = None;
        } else {
            let pod = &info.pod;
            let exit = (by == "completed").then(|| super::super::pods::exit_code(pod));
            let mut conditions: Vec<(&str, &str)> = pod
                .status
                .conditions
                .iter()
                .map(|c| (c.type_.as_str(), c.status.as_str()))
                .collect();
            // Upstream's pod GC and taint manager mark pods lost with their node.
            if by == "node-removed" && !conditions.iter().any(|(t, _)| *t == "DisruptionTarget") {
                conditions.push(("DisruptionTarget", "True"));
            }
            let names: Vec<&str> = pod
                .spec
                .containers
                .iter()
                .map(|c| c.name.as_str())
                .collect();
            let action = c.obj.spec.pod_failure_policy.as_ref().and_then(|p| {
                let failed = FailedPod {
                    containers: &names,
                    exit_code: exit,
                    conditions: &conditions,
                };
                match_pod_failure_policy(p, &failed, &info.key)
            });
            let per_index = c.obj.spec.backoff_limit_per_index;
            match action {
                Some((Action::Ignore, _)) => {}
                Some((Action::FailJob, msg)) => {
                    c.failed += 1;
                    st.fail_job.get_or_insert(msg);
                }
                Some((Action::FailIndex, _)) => {
                    c.failed += 1;
                    if let Some(i) = idx {
                        st.failed_idx.insert(i);
                    }
                }
                Some((Action::Count, _)) | None => {
                    c.failed += 1;
                    match (idx, per_index) {
                        (Some(i), Some(limit)) => {
                            let n = st.idx_failures.get(&i).map_or(0, |f| f.0) + 1;
                            st.idx_failures.insert(i, (n, now));
                            if n > limit {
                                st.failed_idx.insert(i);
                            }
                        }
                        _ => {
                            st.failures_after_success += 1;
                            st.last_failure = Some(now);
                        }
                    }
                }
            }
            c.replaced += 1;
        }
        self.queue_reconcile(key);
    }

    /// A pod starts terminating (a preemption victim): a Job whose `podReplacementPolicy` is
    /// `TerminatingOrFailed` counts it as failed and replaces it now.
    pub(in crate::sim) fn controller_pod_terminating(&mut self, info: &PodInfo) {
        let Some(owner) = self.controllers.owner_of.get(&info.key).cloned() else {
            return;
        };
        let Some(c) = self.controllers.ctls.get(&owner) else {
            return;
        };
        if c.kind != ObjectKind::Job || !replace_terminating(&c.obj) {
            return;
        }
        self.controllers.owner_of.remove(&info.key);
        self.job_pod_gone(&owner, info, Outcome::Preempted, "preemption");
        self.note_job_terminating(&owner, &info.key);
    }

    /// A pod of Job `key` is terminating, no longer counted active: the Job waits for it to
    /// be gone before its terminal condition (`status.terminating`).
    fn note_job_terminating(&mut self, key: &str, pod: &str) {
        if !self.live_contains(pod) {
            return;
        }
        if let Some(st) = self.controllers.jobs.get_mut(key) {
            st.terminating.insert(pod.to_string());
            self.controllers
                .job_terminating
                .insert(pod.to_string(), key.to_string());
        }
    }

    /// A terminating pod of a Job is gone (`true` when it was one): a Job winding down syncs
    /// (its terminal condition may now be set).
    pub(super) fn job_terminating_pod_gone(&mut self, pod: &str) -> bool {
        // Still live: it is only starting to terminate.
        if self.live_contains(pod) {
            return false;
        }
        let Some(key) = self.controllers.job_terminating.remove(pod) else {
            return false;
        };
        if let Some(st) = self.controllers.jobs.get_mut(&key) {
            st.terminating.remove(pod);
            if st.target.is_some() && self.controllers.ctls.contains_key(&key) {
                self.queue_reconcile(&key);
            }
        }
        true
    }

    pub(super) fn reconcile_job(&mut self, key: &str, obs: &mut dyn Observer) {
        let now = self.now;
        let Some(c) = self.controllers.ctls.get_mut(key) else {
            return;
        };
        let st = self.controllers.jobs.entry(key.to_string()).or_default();
        let spec = c.obj.spec.clone();
        if c.finished {
            // The TTL-after-finished controller.
            if let (Some(ttl), Some(done)) = (spec.ttl_seconds_after_finished, st.finished_at) {
                if now >= done + SimDuration::from_secs(i64::from(ttl)) {
                    let (ns, name) = (
                        c.obj.metadata.namespace.clone(),
                        c.obj.metadata.name.clone(),
                    );
                    let _ = self.delete_workload(ObjectKind::Job, &ns, &name, obs);
                    self.controllers.jobs.remove(key);
                }
            }
            return;
        }
        if st.target.is_some() {
            self.wind_down_job(key, obs);
            return;
        }
        let completions = spec.completions;
        let parallelism = spec.parallelism.unwrap_or(1).max(0);
        let is_indexed = indexed(&c.obj);
        c.desired = i64::from(completions.unwrap_or(1));
        if spec.suspend == Some(true) {
            st.start = None;
            let active: Vec<String> = c.pods.keys().cloned().collect();
            for p in active {
                if !self.client_call(key, ObjectKind::Job, false) {
                    break;
                }
                if let Some(st) = self.controllers.jobs.get_mut(key) {
                    st.pod_index.remove(&p);
                }
                self.delete_owned_pod(&p, obs);
            }
            return;
        }
        c.started_at.get_or_insert(now);
        let start = *st.start.get_or_insert(now);
        let backoff_limit =
            spec.backoff_limit
                .unwrap_or(if spec.backoff_limit_per_index.is_some() {
                    i32::MAX
                } else {
                    6
                });
        let n = completions.unwrap_or(0);
        let deadline = spec
            .active_deadline_seconds
            .map(|d| start + SimDuration::from_secs(d));
        let failure: Option<&'static str> = if st.fail_job.is_some() {
            Some("PodFailurePolicy")
        } else if c.failed > backoff_limit {
            Some("BackoffLimitExceeded")
        } else if deadline.is_some_and(|d| now >= d) {
            Some("DeadlineExceeded")
        } else if spec
            .max_failed_indexes
            .is_some_and(|m| st.failed_idx.len() as i32 > m)
        {
            Some("MaxFailedIndexesExceeded")
        } else if spec.backoff_limit_per_index.is_some()
            && !st.failed_idx.is_empty()
            && (st.succeeded_idx.len() + st.failed_idx.len()) as i32 >= n
        {
            Some("FailedIndexes")
        } else {
            None
        };
        let success: Option<&'static str> = if failure.is_some() {
            None
        } else if spec
            .success_policy
            .as_ref()
            .is_some_and(|p| is_indexed && success_policy_met(p, &st.succeeded_idx, n))
        {
            Some("SuccessPolicy")
        } else if completions.is_some_and(|n| c.succeeded >= n)
            || (completions.is_none() && c.succeeded > 0 && c.pods.is_empty())
        {
            Some("CompletionsReached")
        } else {
            None
        };
        if let Some(reason) = failure.or(success) {
            // The interim condition (FailureTarget / SuccessCriteriaMet): on failure every pod
            // not yet terminated counts as failed (`trackJobStatusAndRemoveFinalizers`); the
            // active pods are then deleted.
            st.target = Some(success.is_some());
            st.reason = Some(reason);
            if failure.is_some() {
                c.failed += c.pods.len() as i32;
            }
            self.wind_down_job(key, obs);
            return;
        }
        if let Some(d) = deadline {
            self.queue_reconcile_at(key, d);
        }
        self.manage_job(key, parallelism, obs);
    }

    /// A Job past its interim condition: its active pods are deleted through its client
    /// (`deleteActivePods`, graceful: each keeps its node for its
    /// `terminationGracePeriodSeconds`); once none is terminating, the terminal condition
    /// (`Complete` / `Failed`) is set (`enactJobFinished`), which the CronJob controller and
    /// the TTL-after-finished controller wait for.
    fn wind_down_job(&mut self, key: &str, obs: &mut dyn Observer) {
        let active: Vec<String> = self
            .controllers
            .ctls
            .get(key)
            .map(|c| c.pods.keys().cloned().collect())
            .unwrap_or_default();
        for p in active {
            if !self.client_call(key, ObjectKind::Job, false) {
                // Resumed when the next token is due.
                return;
            }
            let past_deadline = match self.controllers.jobs.get_mut(key) {
                Some(st) => {
                    st.pod_index.remove(&p);
                    st.reason == Some("DeadlineExceeded")
                }
                None => false,
            };
            // Past activeDeadlineSeconds the active pods are deleted because of it: their
            // eviction cause is `deadline`.
            if past_deadline {
                if let Some(&id) = self.live_get(&p) {
                    self.record_eviction(id, "deadline", obs);
                }
            }
            self.delete_owned_pod(&p, obs);
            self.note_job_terminating(key, &p);
        }
        let now = self.now;
        let (Some(c), Some(st)) = (
            self.controllers.ctls.get_mut(key),
            self.controllers.jobs.get_mut(key),
        ) else {
            return;
        };
        if !st.terminating.is_empty() {
            return;
        }
        c.finished = true;
        if st.target == Some(true) {
            c.finished_at = Some(now);
        }
        st.finished_at = Some(now);
        st.pod_index.clear();
        let cronjob = cronjob_of(&c.obj);
        let ttl = c.obj.spec.ttl_seconds_after_finished;
        // The CronJob that created it sees it finish (Forbid, its history limits).
        if let Some(cj) = cronjob {
            self.queue_reconcile(&cj);
        }
        if let Some(ttl) = ttl {
            let at = now + SimDuration::from_secs(i64::from(ttl)) + self.cfg.controller_delay();
            self.queue_reconcile_at(key, at);
        }
    }

    /// `manageJob`: deletes surplus active pods or creates missing ones (after the backoff).
    fn manage_job(&mut self, key: &str, parallelism: i32, obs: &mut dyn Observer) {
        let now = self.now;
        let t = self.cfg.controller_timing.clone();
        let Some(c) = self.controllers.ctls.get(key) else {
            return;
        };
        let Some(st) = self.controllers.jobs.get(key) else {
            return;
        };
        let is_indexed = indexed(&c.obj);
        let active = c.pods.len() as i32;
        let want = match c.obj.spec.completions {
            None if c.succeeded > 0 => active.min(parallelism),
            None => parallelism,
            Some(n) => {
                let done = if is_indexed {
                    (st.succeeded_idx.len() + st.failed_idx.len()) as i32
                } else {
                    c.succeeded
                };
                parallelism.min(n - done).max(0)
            }
        };
        if active > want {
            // Surplus: not yet scheduled first, then the newest.
            let mut ranked: Vec<(bool, std::cmp::Reverse<u64>, String)> = c
                .pods
                .iter()
                .map(|(p, o)| (self.is_scheduled(p), std::cmp::Reverse(o.seq), p.clone()))
                .collect();
            ranked.sort();
            for (.., p) in ranked.into_iter().take((active - want) as usize) {
                if !self.client_call(key, ObjectKind::Job, false) {
                    break;
                }
                if let Some(st) = self.controllers.jobs.get_mut(key) {
                    st.pod_index.remove(&p);
                }
                self.delete_owned_pod(&p, obs);
            }
            return;
        }
        if active >= want {
            return;
        }
        let per_index = c.obj.spec.backoff_limit_per_index.is_some();
        if !per_index {
            let wait = remaining_backoff(
                st.failures_after_success,
                st.last_failure,
                now,
                t.job_pod_failure_backoff,
                t.job_max_pod_failure_backoff,
            );
            if wait.micros() > 0 {
                self.queue_reconcile_at(key, now + wait);
                return;
            }
        }
        let diff = (want - active) as usize;
        // The indexes to create (Indexed), lowest pending first; per-index backoff.
        let mut slots: Vec<Option<i32>> = Vec::new();
        let mut retry = None;
        if is_indexed {
            let n = c.obj.spec.completions.unwrap_or(0);
            let mut busy: BTreeSet<i32> = st.pod_index.values().copied().collect();
            // Adopted pods (a dump's) carry their index in their annotation.
            for p in c.pods.keys().filter(|p| !st.pod_index.contains_key(*p)) {
                if let Some(i) = self
                    .live_get(p)
                    .and_then(|&id| index_of(&self.pods[id as usize].info.pod))
                {
                    busy.insert(i);
                }
            }
            let mut retry_at: Option<SimTime> = None;
            for i in 0..n {
                if slots.len() >= diff {
                    break;
                }
                if busy.contains(&i) || st.succeeded_idx.contains(&i) || st.failed_idx.contains(&i)
                {
                    continue;
                }
                if per_index {
                    if let Some(&(count, last)) = st.idx_failures.get(&i) {
                        let wait = remaining_backoff(
                            count,
                            Some(last),
                            now,
                            t.job_pod_failure_backoff,
                            t.job_max_pod_failure_backoff,
                        );
                        if wait.micros() > 0 {
                            let at = now + wait;
                            retry_at = Some(retry_at.map_or(at, |r: SimTime| r.min(at)));
                            continue;
                        }
                    }
                }
                slots.push(Some(i));
            }
            retry = retry_at;
        } else {
            slots = vec![None; diff];
        }
        let tpl = c.obj.spec.template.clone();
        let name = c.obj.metadata.name.clone();
        let failures: BTreeMap<i32, i32> = st.idx_failures.iter().map(|(i, f)| (*i, f.0)).collect();
        if let Some(at) = retry {
            self.queue_reconcile_at(key, at);
        }
        for slot in slots {
            let prefix = match slot {
                Some(i) => format!("{name}-{i}"),
                None => name.clone(),
            };
            let fails = slot.and_then(|i| failures.get(&i).copied());
            let edit = move |p: &mut ksim_api::Pod| {
                if let Some(i) = slot {
                    p.metadata
                        .annotations
                        .insert(COMPLETION_INDEX.into(), i.to_string());
                    p.metadata
                        .labels
                        .insert(COMPLETION_INDEX.into(), i.to_string());
                    if per_index {
                        p.metadata
                            .annotations
                            .insert(INDEX_FAILURE_COUNT.into(), fails.unwrap_or(0).to_string());
                    }
                }
            };
            let new = NewPod {
                template: &tpl,
                owner_kind: ObjectKind::Job,
                owner_name: name.clone(),
                name: None,
                prefix,
                hash: String::new(),
                ordinal: slot,
                edit: &edit,
            };
            let Some(pod) = self.create_owned_pod(key, new, obs) else {
                break;
            };
            if let (Some(i), Some(st)) = (slot, self.controllers.jobs.get_mut(key)) {
                st.pod_index.insert(pod, i);
            }
        }
    }
}
