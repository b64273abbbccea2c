//! Room: the pod garbage collector (kube-controller-manager's `podgc` controller,
//! `pkg/controller/podgc/gc_controller.go`), as far as it changes what the scheduler sees.
//!
//! Upstream's `gc` runs every `gcCheckPeriod` (20 s) from the controller's start; ksim's runs
//! on the same grid (0 s, 20 s, 40 s, ...) but only while it has something to look at, so a
//! run without orphans or out-of-service nodes has no timer at all. Each run does, in
//! upstream's order:
//! - `gcTerminating`: a terminating pod on a node that is not Ready and carries the
//!   `node.kubernetes.io/out-of-service` taint is deleted at once (`markFailedAndDeletePod`,
//!   grace 0), without waiting for its grace period; it ends `failed`;
//! - `gcOrphaned`: a pod bound to a node that no longer exists (`onNodeRemoval: keepBound`
//!   keeps such pods on the node's ghost) puts the node in quarantine (`nodeQueue.AddAfter`,
//!   `quarantineTime` 40 s); at the first run after the quarantine, if the node still does not
//!   exist (`discoverDeletedNodes`), its pods are marked Failed with the DisruptionTarget
//!   condition `DeletionByPodGC` and deleted at once; they end `failed` and their controllers
//!   replace them.
//!
//! Not modelled: `gcTerminated` (`--terminated-pod-gc-threshold`): ksim keeps no object of a
//! pod that has ended (the scheduler's informer never lists terminated pods either), so there
//! is nothing for it to collect; `gcUnscheduledTerminating`: an unscheduled pod is deleted at
//! once when asked (the API server's `CheckGracefulDelete` gives it grace 0), so none is ever
//! left terminating.

use std::collections::BTreeMap;

use super::{Ev, PodId, PodPhase, Simulation};
use crate::record::{Observer, Outcome};
use crate::time::SimTime;

/// The out-of-service taint `gcTerminating` looks for (`v1.TaintNodeOutOfService`).
pub const TAINT_OUT_OF_SERVICE: &str = "node.kubernetes.io/out-of-service";

/// The collector's state (`Simulation::pod_gc`).
#[derive(Debug, Clone, Default)]
pub(crate) struct State {
    /// Whether the next run is in the heap.
    armed: bool,
    /// Nodes in quarantine and when it ends (`nodeQueue`).
    quarantine: BTreeMap<String, SimTime>,
}

impl Simulation {
    /// Something for the collector to look at (a removed node still holding pods, a node
    /// out of service): its next run on the `gcCheckPeriod` grid, unless one is due.
    pub(super) fn pod_gc_wake(&mut self) {
        let cfg = &self.cfg.control_plane.pod_gc;
        if !cfg.enabled || self.pod_gc.armed {
            return;
        }
        let p = cfg.gc_check_period.micros().max(1);
        let k = (self.now.micros() + p - 1).div_euclid(p);
        self.pod_gc.armed = true;
        self.schedule(SimTime(k * p), 0, Ev::PodGc);
    }

    /// One run of the collector (`gc`).
    pub(super) fn pod_gc_run(&mut self, obs: &mut dyn Observer) {
        self.pod_gc.armed = false;
        self.gc_terminating(obs);
        self.gc_orphaned(obs);
        let more = !self.pod_gc.quarantine.is_empty()
            || self.ghosts.values().any(|g| !g.pods.is_empty())
            || self.out_of_service_nodes().next().is_some();
        if more {
            let at = self.now + self.cfg.control_plane.pod_gc.gc_check_period;
            self.pod_gc.armed = true;
            self.schedule(at, 0, Ev::PodGc);
        }
    }

    /// Nodes that are not Ready and carry the out-of-service taint.
    fn out_of_service_nodes(&self) -> impl Iterator<Item = &str> + '_ {
        self.snapshot.nodes.iter().filter_map(|n| {
            let tainted = n
                .node
                .spec
                .taints
                .iter()
                .any(|t| t.key == TAINT_OUT_OF_SERVICE);
            let ready = n
                .node
                .status
                .conditions
                .iter()
                .any(|c| c.type_ == "Ready" && c.status == "True");
            (tainted && !ready).then(|| n.name())
        })
    }

    /// `gcTerminating`.
    fn gc_terminating(&mut self, obs: &mut dyn Observer) {
        let nodes: Vec<String> = self.out_of_service_nodes().map(str::to_string).collect();
        let mut doomed: Vec<(String, PodId)> = Vec::new();
        for n in &nodes {
            let Some(info) = self.snapshot.get(n) else {
                continue;
            };
            for p in &info.pods {
                if let Some(&id) = self.live_get(&p.key) {
                    if self.pods[id as usize].terminating {
                        doomed.push((p.key.clone(), id));
                    }
                }
            }
        }
        doomed.sort();
        for (_, id) in doomed {
            self.end_pod(id, Outcome::Failed, "pod-gc", String::new(), obs);
        }
    }

    /// `gcOrphaned`: quarantine newly seen missing nodes, then delete the pods of those whose
    /// quarantine is over and that still do not exist.
    fn gc_orphaned(&mut self, obs: &mut dyn Observer) {
        let now = self.now;
        let quarantine = self.cfg.control_plane.pod_gc.quarantine_time;
        let missing: Vec<String> = self
            .ghosts
            .iter()
            .filter(|(_, g)| !g.pods.is_empty())
            .map(|(n, _)| n.clone())
            .collect();
        for n in &missing {
            self.pod_gc
                .quarantine
                .entry(n.clone())
                .or_insert(now + quarantine);
        }
        // A node that came back is dropped from the queue (`checkIfNodeExists`).
        let ghosts = &self.ghosts;
        self.pod_gc.quarantine.retain(|n, _| ghosts.contains_key(n));
        let due: Vec<String> = self
            .pod_gc
            .quarantine
            .iter()
            .filter(|(_, t)| **t <= now)
            .map(|(n, _)| n.clone())
            .collect();
        for n in due {
            self.pod_gc.quarantine.remove(&n);
            let mut pods: Vec<(String, PodId)> = self
                .ghosts
                .get(&n)
                .map(|g| {
                    g.pods
                        .iter()
                        .filter_map(|p| Some((p.key.clone(), *self.live_get(&p.key)?)))
                        .collect()
                })
                .unwrap_or_default();
            pods.sort();
            for (_, id) in pods {
                if matches!(self.pods[id as usize].phase, PodPhase::Ended(_)) {
                    continue;
                }
                self.end_pod(id, Outcome::Failed, "pod-gc", String::new(), obs);
            }
        }
    }
}
