//! The resource claim controller's start-up (upstream `Controller.Run` after
//! `cache.WaitForNamedCacheSync`): the claim informer lists every ResourceClaim the cluster
//! holds and its add handler (`enqueueResourceClaim`) queues each for `syncClaim`; the pod
//! informer's add handler (`enqueuePod`) does the same for each pod (ksim's pods present at t=0
//! are created by the t=0 events of the trace, which run `claims_pod_added`).
//!
//! In ksim the claims present at t=0 are those of `cluster.objectsFiles` (a kube-dump's
//! `objects.yaml` among them): each is synced one reaction delay after t=0, after every event
//! of that instant (the workers start once the caches hold every pod present at start). So a
//! `reservedFor` entry of a pod that does not exist, was replaced (another uid) or is done is
//! removed, a claim left without consumer is deallocated, and a generated claim whose pod is
//! gone is deleted — as for a claim that changes during the run.

use super::super::{Ev, Simulation};
use crate::time::SimTime;

impl Simulation {
    /// Queues `syncClaim` for every claim present at t=0 (nothing when there is none: runs
    /// without DRA objects schedule nothing).
    pub(in crate::sim) fn claims_begin(&mut self) {
        let keys: Vec<String> = self
            .snapshot
            .objects
            .dra
            .resource_claims
            .keys()
            .cloned()
            .collect();
        if keys.is_empty() {
            return;
        }
        let at = SimTime::ZERO + self.cfg.controller_delay();
        for k in keys {
            let key = format!("claim:{k}");
            if self.claims.pending.insert((key.clone(), at)) {
                // Class 1: after every source event of the instant (the pods present at
                // start), even with a zero reaction delay.
                self.schedule(at, 1, Ev::ClaimSync(key));
            }
        }
    }
}
