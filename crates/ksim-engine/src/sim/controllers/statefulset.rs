//! The StatefulSet controller: pods `<sts>-<ordinal>` with stable names, a lost pod recreated
//! under the same name, and one PersistentVolumeClaim `<template>-<sts>-<ordinal>` per claim
//! template and pod, which the volume-binding model binds as any claim (a WaitForFirstConsumer
//! class is provisioned on the pod's node).
//!
//! Upstream `pkg/controller/statefulset/stateful_set_control.go`, pod management
//! (`podManagementPolicy`):
//! - `OrderedReady` (default): ordinals are created one at a time, pod i+1 only once pod i is
//!   healthy (running: bound and started, `podStartup`, and available after
//!   `minReadySeconds`); the condemned ordinals (≥ replicas) are deleted from the highest, one
//!   at a time, a healthy one only while no other pod is unhealthy, and an unhealthy one only
//!   if it is the *first unhealthy pod* (replicas in ordinal order, then the condemned from
//!   the top): so 3 → 1 with `db-2` pending deletes `db-2` at once, then `db-1`, instead of
//!   stalling.
//! - `Parallel`: every missing ordinal is created, and every surplus one deleted, at once.
//!
//! Template changes (`updateStrategy`), each revision a template hash (upstream's
//! ControllerRevisions):
//! - `RollingUpdate` (default), once every replica exists and is healthy: outdated pods are
//!   deleted from the highest ordinal down to `partition` (default 0), at most
//!   `maxUnavailable` (default 1; percentages of replicas round down, at least 1:
//!   `getStatefulSetMaxUnavailable`; feature gate `MaxUnavailableStatefulSet`, beta and on in
//!   v1.35) unhealthy at once (`updateStatefulSetAfterInvariantEstablished`); each comes back
//!   under its name with the new template. Pods below the partition keep (and are recreated
//!   at) the current revision (`newVersionedStatefulSetPod`), which becomes the new one once
//!   every replica is updated and healthy (`completeRollingUpdate`).
//! - `OnDelete`: nothing is replaced; a pod deleted or lost comes back with the new template.
//!
//! As upstream: pods get the labels `statefulset.kubernetes.io/pod-name` and
//! `apps.kubernetes.io/pod-index`; a template volume with a claim template's name is replaced
//! by the claim; claims carry the selector's labels and are kept when their pod goes
//! (`persistentVolumeClaimRetentionPolicy` Retain), so a recreated pod finds its claim.
//! Simplified: pods carry no `controller-revision-hash` label; no `ordinals.start`, no
//! retention policy other than Retain. Deleted pods terminate gracefully (their
//! `terminationGracePeriodSeconds`); each deletion, as each creation, takes a token from the
//! controller's client (`statefulset-controller`, `--kube-api-qps` / `--kube-api-burst`).

use std::collections::BTreeMap;

use ksim_api::core::{PvcVolumeSource, Volume};
use ksim_api::object::{ApiObject, ObjectKind};
use ksim_api::Pod;

use super::{NewPod, OwnedRs, Simulation};
use crate::record::Observer;
use crate::time::SimDuration;

/// One pod of the set as the reconcile sees it.
#[derive(Debug, Clone)]
struct Sts {
    key: String,
    /// Its revision (the hash of the template it was made from).
    rev: String,
    /// Running and ready for `minReadySeconds` (upstream `isHealthy` / `isRunningAndAvailable`).
    healthy: bool,
    /// Being deleted (upstream `isTerminating`).
    terminating: bool,
}

impl Simulation {
    pub(super) fn reconcile_statefulset(&mut self, key: &str, obs: &mut dyn Observer) {
        let now = self.now;
        let Some(c) = self.controllers.ctls.get_mut(key) else {
            return;
        };
        let want = c.obj.replicas().max(0);
        c.desired = i64::from(want);
        let parallel = c.obj.parallel_pods();
        let on_delete = c.obj.on_delete();
        let (partition, max_unavailable) = c.obj.stateful_partition_and_unavailable();
        let min_ready =
            SimDuration::from_secs(i64::from(c.obj.spec.min_ready_seconds.unwrap_or(0)));
        // The revisions (upstream's ControllerRevisions): the update revision is the current
        // template's hash; the current one is what pods below the partition are made from.
        let update_rev = c.hash.clone();
        let next = c.rs.values().map(|r| r.order + 1).max().unwrap_or(0);
        c.rs.entry(update_rev.clone()).or_insert_with(|| OwnedRs {
            replicas: 0,
            template: c.obj.spec.template.clone(),
            order: next,
            annotated: None,
        });
        if c.revision.is_empty() || !c.rs.contains_key(&c.revision) {
            c.revision = update_rev.clone();
        }
        let current_rev = c.revision.clone();
        let by_ordinal: BTreeMap<i32, Sts> = c
            .pods
            .iter()
            .filter_map(|(p, o)| {
                o.ordinal.map(|i| {
                    (
                        i,
                        Sts {
                            key: p.clone(),
                            rev: o.hash.clone(),
                            healthy: o.available(now, min_ready),
                            terminating: o.terminating,
                        },
                    )
                })
            })
            .collect();
        // newVersionedStatefulSetPod: RollingUpdate pods below the partition keep the current
        // revision; every other pod gets the update revision.
        let rev_for = |i: i32| {
            if !on_delete && i < partition {
                current_rev.clone()
            } else {
                update_rev.clone()
            }
        };
        // The first unhealthy pod: replicas in ordinal order, then the condemned from the top.
        let first_unhealthy: Option<i32> = by_ordinal
            .range(..want)
            .chain(by_ordinal.range(want..).rev())
            .find(|(_, p)| !p.healthy)
            .map(|(i, _)| *i);
        // Replicas: create the missing ordinals in order; OrderedReady stops at the first pod
        // that is not (yet) running and available.
        for i in 0..want {
            match by_ordinal.get(&i) {
                Some(p) => {
                    if !parallel && !p.healthy {
                        return;
                    }
                }
                None => {
                    self.create_stateful_pod(key, i, &rev_for(i), obs);
                    if !parallel {
                        return;
                    }
                }
            }
        }
        // Condemned (ordinals ≥ replicas), from the highest: OrderedReady deletes one at a
        // time and only an unhealthy pod that is the first unhealthy one, so a pending highest
        // ordinal goes first instead of blocking the scale-down.
        let condemned: Vec<(i32, Sts)> = by_ordinal
            .range(want..)
            .rev()
            .map(|(i, p)| (*i, p.clone()))
            .collect();
        // `processCondemned`: a terminating pod is not deleted again; OrderedReady waits for
        // it to be gone (its end wakes the controller). Every deletion goes through the
        // controller's rate-limited client; a call that must wait pauses the sync.
        let mut deleted = false;
        for (i, p) in &condemned {
            if p.terminating {
                if !parallel {
                    return;
                }
                continue;
            }
            if !parallel && !p.healthy && first_unhealthy != Some(*i) {
                return;
            }
            if !self.client_call(key, ObjectKind::StatefulSet, false) {
                return;
            }
            self.delete_owned_pod(&p.key, obs);
            deleted = true;
            if !parallel {
                // The deletion's event wakes the controller for the next ordinal.
                self.queue_reconcile(key);
                return;
            }
        }
        if !condemned.is_empty() {
            if deleted {
                self.queue_reconcile(key);
            }
            return;
        }
        let replicas: Vec<(i32, Sts)> = by_ordinal
            .range(..want)
            .map(|(i, p)| (*i, p.clone()))
            .collect();
        // completeRollingUpdate: every replica updated and healthy makes the update revision
        // current.
        if replicas.len() == want as usize
            && replicas
                .iter()
                .all(|(_, p)| p.rev == update_rev && p.healthy)
        {
            if let Some(c) = self.controllers.ctls.get_mut(key) {
                c.revision = update_rev.clone();
            }
        }
        if on_delete {
            return;
        }
        // RollingUpdate (updateWithMaxUnavailable, MaxUnavailableStatefulSet on by default in
        // v1.35): with fewer than maxUnavailable replicas unhealthy, delete the outdated pods
        // from the highest ordinal down to the partition; they come back at the update
        // revision.
        let unavailable = replicas.iter().filter(|(_, p)| !p.healthy).count() as i32;
        if unavailable >= max_unavailable {
            return;
        }
        let victims: Vec<String> = replicas
            .iter()
            .rev()
            .filter(|(i, p)| *i >= partition && p.rev != update_rev && !p.terminating)
            .take((max_unavailable - unavailable) as usize)
            .map(|(_, p)| p.key.clone())
            .collect();
        for v in &victims {
            if !self.client_call(key, ObjectKind::StatefulSet, false) {
                return;
            }
            self.delete_owned_pod(v, obs);
        }
        if !victims.is_empty() {
            self.queue_reconcile(key);
        }
    }

    /// Creates pod `<sts>-<ordinal>` and, first, its claims (those that do not exist yet).
    fn create_stateful_pod(&mut self, key: &str, ordinal: i32, rev: &str, obs: &mut dyn Observer) {
        let Some(c) = self.controllers.ctls.get(key) else {
            return;
        };
        let sts = c.obj.metadata.name.clone();
        let ns = c.obj.metadata.namespace.clone();
        let name = format!("{sts}-{ordinal}");
        let labels = c
            .obj
            .spec
            .selector
            .as_ref()
            .map(|s| s.match_labels.clone())
            .unwrap_or_default();
        let mut claims = Vec::new();
        let templates = c.obj.spec.volume_claim_templates.clone();
        for t in &templates {
            let claim = format!("{}-{name}", t.metadata.name);
            claims.push((t.metadata.name.clone(), claim.clone()));
            if self
                .snapshot
                .objects
                .get_object(ObjectKind::PersistentVolumeClaim, &ns, &claim)
                .is_some()
            {
                continue;
            }
            let mut pvc = t.clone();
            pvc.api_version = "v1".into();
            pvc.kind = "PersistentVolumeClaim".into();
            pvc.metadata.name = claim;
            pvc.metadata.namespace = ns.clone();
            pvc.metadata.labels.extend(labels.clone());
            pvc.status = Default::default();
            // Cannot clash (checked just above); a failure leaves the pod pending on a
            // missing claim, as upstream's would.
            let _ = self.create_object(ApiObject::PersistentVolumeClaim(pvc), obs);
        }
        let Some(c) = self.controllers.ctls.get(key) else {
            return;
        };
        let tpl =
            c.rs.get(rev)
                .map(|r| r.template.clone())
                .unwrap_or_else(|| c.obj.spec.template.clone());
        let pod_name = name.clone();
        let edit = move |p: &mut Pod| {
            p.metadata.labels.insert(
                "statefulset.kubernetes.io/pod-name".into(),
                pod_name.clone(),
            );
            p.metadata
                .labels
                .insert("apps.kubernetes.io/pod-index".into(), ordinal.to_string());
            for (vol, claim) in &claims {
                p.spec.volumes.retain(|v| &v.name != vol);
                p.spec.volumes.push(Volume {
                    name: vol.clone(),
                    persistent_volume_claim: Some(PvcVolumeSource {
                        claim_name: claim.clone(),
                        read_only: false,
                    }),
                    ..Default::default()
                });
            }
        };
        let new = NewPod {
            template: &tpl,
            owner_kind: ObjectKind::StatefulSet,
            owner_name: sts.clone(),
            name: Some(name),
            prefix: sts,
            hash: rev.to_string(),
            ordinal: Some(ordinal),
            edit: &edit,
        };
        self.create_owned_pod(key, new, obs);
    }
}
