//! The controllers' timing model ([`crate::config::ControllerTiming`]): what limits how fast a
//! kube-controller-manager controller writes pods, as upstream v1.35 runs them.
//!
//! - **Reaction**: a controller syncs `informerDelay + reconcile` after the change it reacts
//!   to (the watch event reaching its informer, then its work queue). Changes due at the same
//!   instant coalesce into one sync, as the work queue does.
//! - **Client rate limit**: every pod creation and deletion of a sync is an API call through
//!   the controller's client, a token bucket of `--kube-api-qps` (20) and `--kube-api-burst`
//!   (30) (client-go's `flowcontrol.NewTokenBucketRateLimiter`; kube-controller-manager builds
//!   one client per controller, so each controller kind has its own bucket; a Deployment's
//!   pods are the ReplicaSet controller's calls). A call that must wait pauses the sync, which
//!   resumes when the next token is due (client-go's `Wait`).
//! - **Burst per sync**: the ReplicaSet controller creates or deletes at most `burstReplicas`
//!   (500) pods per sync, the DaemonSet controller `BurstReplicas` (250), the Job controller
//!   `MaxPodCreateDeletePerSync` (500); the next sync waits until the informer has seen them
//!   (the controllers' expectations), one informer delay after the last call.
//! - **Slow start** (`controller.slowStartBatch`, `SlowStartInitialBatchSize` 1): creations go
//!   in batches of 1, 2, 4, ...; when a creation fails (the API server refuses the pod), the
//!   calls of its batch are made and the rest of the sync is skipped; the sync is retried
//!   after the work queue's per-item backoff (`DefaultControllerRateLimiter`: 5 ms doubling,
//!   capped at 1000 s; reset by a sync without failure).
//!
//! When the scenario sets the old flat `controllerDelay`, reactions take exactly that and no
//! limit applies (ksim before this model).

use std::collections::BTreeMap;

use ksim_api::object::ObjectKind;

use super::Simulation;
use crate::time::{SimDuration, SimTime};

/// A token bucket with integer-microsecond times (GCRA form of client-go's token bucket,
/// which starts full): `tat` is the theoretical arrival time of the next call.
#[derive(Debug, Clone, Default)]
pub(crate) struct Bucket {
    tat: SimTime,
}

impl Bucket {
    /// Takes a token at `now`, or tells when the next is due.
    pub fn take(&mut self, now: SimTime, qps: f64, burst: u32) -> Result<(), SimTime> {
        if qps <= 0.0 {
            return Ok(());
        }
        let interval = ((1e6 / qps).round() as i64).max(1);
        let tau = interval * i64::from(burst.max(1) - 1);
        let allowed_at = SimTime(self.tat.0 - tau);
        if now < allowed_at {
            return Err(allowed_at);
        }
        self.tat = SimTime(self.tat.0.max(now.0) + interval);
        Ok(())
    }
}

/// One controller's sync in progress.
#[derive(Debug, Clone, Default)]
pub(crate) struct Sync {
    /// Paused on the rate limiter: the next reconcile resumes this sync.
    paused: bool,
    /// Pod creations and deletions made in this sync.
    calls: i32,
    /// Creations attempted in this sync (the slow-start batches).
    creates: i32,
    /// After a failed creation: the creations its batch allows, then no more.
    stop_after: Option<i32>,
    /// Consecutive failed syncs (the work queue's per-item backoff).
    failures: u32,
}

/// The timing state of all controllers (`State::timing`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Timing {
    pub syncs: BTreeMap<String, Sync>,
    pub buckets: BTreeMap<&'static str, Bucket>,
}

/// The client a controller kind's pod calls go through.
fn client_of(kind: ObjectKind) -> &'static str {
    match kind {
        ObjectKind::Deployment | ObjectKind::ReplicaSet => "replicaset-controller",
        ObjectKind::StatefulSet => "statefulset-controller",
        ObjectKind::DaemonSet => "daemon-set-controller",
        ObjectKind::Job => "job-controller",
        ObjectKind::CronJob => "cronjob-controller",
        _ => "kube-controller-manager",
    }
}

/// The end (exclusive count) of the slow-start batch holding creation number `i` (0-based):
/// batches `b, 2b, 4b, ...`.
pub(crate) fn batch_end(i: i32, initial: i32) -> i32 {
    let mut end = 0i64;
    let mut size = i64::from(initial.max(1));
    while end <= i64::from(i) {
        end += size;
        size *= 2;
    }
    end.min(i64::from(i32::MAX)) as i32
}

impl Simulation {
    fn flat_timing(&self) -> bool {
        self.cfg.controller_delay.is_some()
    }

    /// The start of a reconcile of `key`: a new sync unless one paused on the rate limiter.
    pub(super) fn begin_sync(&mut self, key: &str) {
        if self.flat_timing() {
            return;
        }
        let s = self
            .controllers
            .timing
            .syncs
            .entry(key.to_string())
            .or_default();
        if !s.paused {
            s.calls = 0;
            s.creates = 0;
            s.stop_after = None;
        }
        s.paused = false;
    }

    /// The end of a reconcile: a sync that had a failed creation is retried after the work
    /// queue's backoff; one without is forgotten.
    pub(super) fn end_sync(&mut self, key: &str) {
        if self.flat_timing() {
            return;
        }
        let now = self.now;
        let Some(s) = self.controllers.timing.syncs.get_mut(key) else {
            return;
        };
        if s.paused {
            return;
        }
        if s.stop_after.is_some() {
            let exp = s.failures.min(40);
            s.failures += 1;
            let delay = (5_000i64 << exp.min(20)).min(1_000_000_000);
            self.queue_reconcile_at(key, now + SimDuration::from_micros(delay));
        } else {
            s.failures = 0;
            if s.calls == 0 {
                self.controllers.timing.syncs.remove(key);
            }
        }
    }

    /// Whether the controller `key` (of `kind`) may make one pod call (a creation when
    /// `create`) now. When it may not, its reconcile is queued for when it can go on.
    pub(super) fn client_call(&mut self, key: &str, kind: ObjectKind, create: bool) -> bool {
        if self.flat_timing() {
            return true;
        }
        let t = self.cfg.controller_timing.clone();
        let now = self.now;
        let cap = match kind {
            ObjectKind::Deployment | ObjectKind::ReplicaSet => Some(t.burst_replicas),
            ObjectKind::DaemonSet => Some(t.daemonset_burst_replicas),
            ObjectKind::Job => Some(t.job_max_pod_create_delete_per_sync),
            _ => None,
        };
        let s = self
            .controllers
            .timing
            .syncs
            .entry(key.to_string())
            .or_default();
        if create && s.stop_after.is_some_and(|n| s.creates >= n) {
            return false;
        }
        // The cap counts creations and deletions apart (the DaemonSet controller's
        // `syncNodes` caps each at `burstReplicas`; the others make one kind per sync).
        let made = if create {
            s.creates
        } else {
            s.calls - s.creates
        };
        if cap.is_some_and(|c| made >= c) {
            // Expectations: the next sync once the informer has seen this one's calls.
            let at = now + self.cfg.controller_delay();
            self.queue_reconcile_at(key, at);
            return false;
        }
        let bucket = self
            .controllers
            .timing
            .buckets
            .entry(client_of(kind))
            .or_default();
        if let Err(at) = bucket.take(now, t.kube_api_qps, t.kube_api_burst) {
            if let Some(s) = self.controllers.timing.syncs.get_mut(key) {
                s.paused = true;
            }
            self.queue_reconcile_at(key, at);
            return false;
        }
        if let Some(s) = self.controllers.timing.syncs.get_mut(key) {
            s.calls += 1;
            if create {
                s.creates += 1;
            }
        }
        true
    }

    /// Whether the current sync of `key` has deleted a pod (the DaemonSet controller's
    /// `syncNodes` makes its creations first: a sync resumed in its deletions makes none).
    pub(super) fn sync_deleted(&self, key: &str) -> bool {
        self.controllers
            .timing
            .syncs
            .get(key)
            .is_some_and(|s| s.calls > s.creates)
    }

    /// A creation of the current sync of `key` failed: its slow-start batch ends the sync.
    pub(super) fn client_create_failed(&mut self, key: &str) {
        if self.flat_timing() {
            return;
        }
        let initial = self.cfg.controller_timing.slow_start_initial_batch_size;
        if let Some(s) = self.controllers.timing.syncs.get_mut(key) {
            if s.stop_after.is_none() {
                s.stop_after = Some(batch_end(s.creates - 1, initial));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bucket_gives_the_burst_then_one_token_per_interval() {
        let mut b = Bucket::default();
        let t0 = SimTime::from_secs(5);
        for _ in 0..30 {
            assert_eq!(b.take(t0, 20.0, 30), Ok(()));
        }
        assert_eq!(b.take(t0, 20.0, 30), Err(t0 + SimDuration::from_millis(50)));
        let t1 = t0 + SimDuration::from_millis(50);
        assert_eq!(b.take(t1, 20.0, 30), Ok(()));
        assert_eq!(
            b.take(t1, 20.0, 30),
            Err(t0 + SimDuration::from_millis(100))
        );
        // Idle for a while: the bucket refills to its burst, no more.
        let t2 = t0 + SimDuration::from_secs(100);
        for _ in 0..30 {
            assert_eq!(b.take(t2, 20.0, 30), Ok(()));
        }
        assert!(b.take(t2, 20.0, 30).is_err());
        assert_eq!(b.take(t2, 0.0, 30), Ok(()), "no limit");
    }

    #[test]
    fn slow_start_batches_are_one_two_four() {
        // Creations 0 | 1 2 | 3 4 5 6 | 7 ..14 | ...
        let ends: Vec<i32> = (0..16).map(|i| batch_end(i, 1)).collect();
        assert_eq!(
            ends,
            [1, 3, 3, 7, 7, 7, 7, 15, 15, 15, 15, 15, 15, 15, 15, 31]
        );
        assert_eq!(batch_end(0, 4), 4);
        assert_eq!(batch_end(4, 4), 12);
    }
}
