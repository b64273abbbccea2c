//! Room: the disruption controller (kube-controller-manager's `disruption` controller,
//! `pkg/controller/disruption/disruption.go`). It keeps every PodDisruptionBudget's status
//! current: `expectedPods`, `currentHealthy`, `desiredHealthy`, `disruptionsAllowed` and
//! `disruptedPods`, which DefaultPreemption reads (`filterPodsWithPDBViolation`).
//!
//! Reacts to (each after `controlPlane.disruption.reactionDelay`, coalesced per instant as
//! upstream's work queue coalesces keys): a PDB created or updated (`addDb`, `updateDb`) and
//! every PDB at the start of the run (the informer's initial list); a pod the PDB selects
//! created, becoming ready, terminating or gone (`addPod`, `updatePod`, `deletePod`); a
//! workload controller created, scaled or deleted in the PDB's namespace (upstream reads the
//! scale at each sync). The arithmetic is in [`status`].
//!
//! A pod is ready (`IsPodReady`) once bound and started (bind plus the `podStartup` cost) and
//! until it terminates. The status the file gives a PDB stands until the first sync (one
//! reaction delay after t=0), as a real PDB's does until the controller reaches it.

use std::collections::{BTreeMap, BTreeSet};

use ksim_api::meta::Selector;
use ksim_api::object::{ApiObject, ObjectKind};
use ksim_api::PodDisruptionBudget;
use ksim_scheduler::pod_info::PodInfo;

use super::{Ev, PodPhase, Simulation};
use crate::time::SimTime;

pub mod status;

use status::{PdbPod, Synced};

/// The controller's state (`Simulation::disruption`).
#[derive(Debug, Clone, Default)]
pub(crate) struct State {
    /// PDBs (`namespace/name`) due for a sync.
    dirty: BTreeSet<String>,
    /// Instants with a sync in the heap.
    scheduled: BTreeSet<SimTime>,
    /// The last sync's unmanaged pods and failure, by PDB (tests, explain).
    pub last: BTreeMap<String, Synced>,
}

fn pdb_key(p: &PodDisruptionBudget) -> String {
    format!(
        "{}/{}",
        namespace_of(&p.metadata.namespace),
        p.metadata.name
    )
}

/// A PDB's namespace as the API server defaults it.
fn namespace_of(ns: &str) -> &str {
    if ns.is_empty() {
        "default"
    } else {
        ns
    }
}

/// Whether the PDB's selector picks the pod (`getPodsForPdb`: same namespace, and a nil or
/// empty selector picks nothing).
fn selects(pdb: &PodDisruptionBudget, sel: &Selector, pod: &PodInfo) -> bool {
    namespace_of(&pdb.metadata.namespace) == pod.namespace()
        && !sel.is_empty()
        && sel.matches(pod.labels())
}

impl Simulation {
    fn disruption_on(&self) -> bool {
        self.cfg.control_plane.disruption.enabled && !self.snapshot.objects.pdbs.is_empty()
    }

    /// Marks PDBs for a sync one reaction delay after `at`.
    fn pdb_queue(&mut self, keys: impl IntoIterator<Item = String>, at: SimTime) {
        let mut any = false;
        for k in keys {
            any = true;
            self.disruption.dirty.insert(k);
        }
        if !any {
            return;
        }
        let at = at.max(self.now) + self.cfg.control_plane.disruption.reaction_delay;
        if self.disruption.scheduled.insert(at) {
            self.schedule(at, 0, Ev::PdbSync);
        }
    }

    /// The start of the run: every PDB is synced once (the informer's initial list).
    pub(super) fn disruption_start(&mut self) {
        if !self.disruption_on() {
            return;
        }
        let keys: Vec<String> = self.snapshot.objects.pdbs.iter().map(pdb_key).collect();
        self.pdb_queue(keys, SimTime::ZERO);
        // Entries of `disruptedPods` expire `DeletionTimeout` after they were written; the
        // file's stamps are read as t=0 (`buildDisruptedPodMap`'s recheck).
        let expiry = SimTime::ZERO + self.cfg.control_plane.disruption.deletion_timeout;
        let with_disrupted: Vec<String> = self
            .snapshot
            .objects
            .pdbs
            .iter()
            .filter(|p| !p.status.disrupted_pods.is_empty())
            .map(pdb_key)
            .collect();
        if !with_disrupted.is_empty() {
            let delay = self.cfg.control_plane.disruption.reaction_delay;
            let at = SimTime((expiry.micros() + 1 - delay.micros()).max(0));
            self.pdb_queue(with_disrupted, at);
        }
    }

    /// A pod was created, became ready (at `ready_at`), started terminating or is gone: the
    /// PDBs selecting it sync (`addPod`, `updatePod`, `deletePod`).
    pub(super) fn disruption_pod_changed(&mut self, pod: &PodInfo, at: SimTime) {
        if !self.disruption_on() {
            return;
        }
        let keys: Vec<String> = self
            .snapshot
            .objects
            .pdbs
            .iter()
            .filter(|p| {
                let sel = Selector::from_label_selector(p.spec.selector.as_ref());
                selects(p, &sel, pod)
            })
            .map(pdb_key)
            .collect();
        self.pdb_queue(keys, at);
    }

    /// A PDB was created or updated (`addDb`, `updateDb`).
    pub(super) fn disruption_pdb_changed(&mut self, namespace: &str, name: &str) {
        if !self.disruption_on() {
            return;
        }
        let key = format!("{}/{name}", namespace_of(namespace));
        self.pdb_queue([key], self.now);
    }

    /// A workload controller in `namespace` was created, scaled or deleted: the scale the
    /// namespace's PDBs read may have changed.
    pub(super) fn disruption_scale_changed(&mut self, namespace: &str) {
        if !self.disruption_on() {
            return;
        }
        let ns = namespace_of(namespace).to_string();
        let keys: Vec<String> = self
            .snapshot
            .objects
            .pdbs
            .iter()
            .filter(|p| namespace_of(&p.metadata.namespace) == ns)
            .map(pdb_key)
            .collect();
        self.pdb_queue(keys, self.now);
    }

    /// `PdbSync`: the due PDBs are synced and their new status written (only when it changed,
    /// as `updatePdbStatus` skips an identical one).
    pub(super) fn pdb_sync(&mut self) {
        self.disruption.scheduled.remove(&self.now);
        let now = self.now;
        let due: Vec<String> = std::mem::take(&mut self.disruption.dirty)
            .into_iter()
            .collect();
        for key in due {
            let Some((ns, name)) = key.split_once('/') else {
                continue;
            };
            let (ns, name) = (ns.to_string(), name.to_string());
            let Some(pdb) = self
                .snapshot
                .objects
                .pdbs
                .iter()
                .find(|p| namespace_of(&p.metadata.namespace) == ns && p.metadata.name == name)
                .cloned()
            else {
                continue;
            };
            let pods = self.pdb_pods(&pdb, now);
            let expired =
                now.micros() >= self.cfg.control_plane.disruption.deletion_timeout.micros();
            let disrupted = if expired {
                BTreeMap::new()
            } else {
                pdb.status.disrupted_pods.clone()
            };
            let synced = status::sync(&pdb, &pods, &disrupted, &|kind: &str, owner: &str| {
                self.controller_scale_of(&ns, kind, owner)
            });
            let mut new = pdb.clone();
            new.status.disruptions_allowed = synced.disruptions_allowed;
            new.status.current_healthy = synced.current_healthy;
            new.status.desired_healthy = synced.desired_healthy;
            new.status.expected_pods = synced.expected_pods;
            new.status.disrupted_pods = synced.disrupted_pods.clone();
            self.disruption.last.insert(key.clone(), synced);
            if new != pdb {
                let watch = [(ObjectKind::PodDisruptionBudget, ns.clone(), name.clone())];
                self.change_objects(&watch, |o| {
                    o.put_object(ApiObject::PodDisruptionBudget(new))
                });
            }
        }
    }

    /// The pods a PDB selects (`getPodsForPdb`), in name order, as the controller reads them.
    fn pdb_pods(&self, pdb: &PodDisruptionBudget, now: SimTime) -> Vec<PdbPod> {
        let sel = Selector::from_label_selector(pdb.spec.selector.as_ref());
        let mut out: Vec<PdbPod> = self
            .live_iter()
            .filter_map(|(_, &id)| {
                let slot = &self.pods[id as usize];
                let info = &slot.info;
                if !selects(pdb, &sel, info) {
                    return None;
                }
                let deleting = slot.terminating || info.pod.metadata.deletion_timestamp.is_some();
                let ready = slot.phase == PodPhase::Bound
                    && !deleting
                    && slot.started_at.is_some_and(|t| t <= now);
                let refs = &info.pod.metadata.owner_references;
                let controller = refs
                    .iter()
                    .find(|o| o.controller == Some(true))
                    .map(|o| (o.kind.clone(), o.name.clone()));
                Some(PdbPod {
                    name: info.name().to_string(),
                    controller,
                    ready,
                    deleting,
                })
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// The scale subresource of a pod's controller `kind/name` in `ns` (upstream's finders:
    /// `getPodReplicaSet`, `getPodDeployment`, `getPodStatefulSet`, `getScaleController`).
    fn controller_scale_of(&self, ns: &str, kind: &str, name: &str) -> Result<Option<i32>, String> {
        let ctl = |k: ObjectKind, n: &str| {
            self.controllers
                .ctls
                .get(&format!("{k}/{ns}/{n}"))
                .map(|c| c.obj.spec.replicas.unwrap_or(1))
        };
        let objects = &self.snapshot.objects;
        let listed = |list: &[ksim_api::WorkloadSet]| {
            list.iter()
                .find(|w| namespace_of(&w.metadata.namespace) == ns && w.metadata.name == name)
                .map(|w| w.spec.replicas.unwrap_or(1))
        };
        match kind {
            "ReplicaSet" => {
                if let Some(n) = ctl(ObjectKind::ReplicaSet, name) {
                    return Ok(Some(n));
                }
                // A Deployment's ReplicaSet `<deployment>-<template hash>`: the Deployment's
                // scale (`getPodDeployment`).
                let dep = self.controllers.ctls.values().find(|c| {
                    c.kind == ObjectKind::Deployment
                        && c.obj.metadata.namespace == ns
                        && c.rs
                            .keys()
                            .any(|h| name == format!("{}-{h}", c.obj.metadata.name))
                });
                if let Some(d) = dep {
                    return Ok(Some(d.obj.spec.replicas.unwrap_or(1)));
                }
                Ok(listed(&objects.replica_sets))
            }
            "StatefulSet" => {
                Ok(ctl(ObjectKind::StatefulSet, name).or(listed(&objects.stateful_sets)))
            }
            "Deployment" => Ok(ctl(ObjectKind::Deployment, name)),
            "DaemonSet" => Err("daemonsets.apps does not implement the scale subresource".into()),
            "Job" => Err("jobs.batch does not implement the scale subresource".into()),
            "CronJob" => Err("cronjobs.batch does not implement the scale subresource".into()),
            // ReplicationControllers are listed without their replica count, and other kinds'
            // scale subresources are not modelled: the controller is not found.
            _ => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests;
