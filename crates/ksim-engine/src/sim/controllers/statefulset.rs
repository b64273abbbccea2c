//! The StatefulSet controller: pods `<sts>-<ordinal>` with stable names, a lost pod recreated
//! under the same name, and one PersistentVolumeClaim `<template>-<sts>-<ordinal>` per claim
//! template and pod, which the volume-binding model binds as any claim (a WaitForFirstConsumer
//! class is provisioned on the pod's node).
//!
//! - `OrderedReady` (default): ordinals are created one at a time, pod i+1 only once pod i is
//!   running (bound and started, `podStartup`) and, with `minReadySeconds`, available; scale
//!   down deletes the highest ordinal first, one at a time, only while every other pod runs.
//! - `Parallel`: every missing ordinal is created, and every surplus one deleted, at once.
//!
//! As upstream: pods get the labels `statefulset.kubernetes.io/pod-name` and
//! `apps.kubernetes.io/pod-index`; a template volume with a claim template's name is replaced
//! by the claim; claims carry the selector's labels and are kept when their pod goes
//! (`persistentVolumeClaimRetentionPolicy` Retain), so a recreated pod finds its claim.
//! Simplified: no `updateStrategy` (a template change applies to pods created afterwards), no
//! `ordinals.start`, no retention policy other than Retain.

use std::collections::BTreeMap;

use ksim_api::core::{PvcVolumeSource, Volume};
use ksim_api::object::{ApiObject, ObjectKind};
use ksim_api::Pod;

use super::{NewPod, Simulation};
use crate::record::Observer;
use crate::time::SimDuration;

impl Simulation {
    pub(super) fn reconcile_statefulset(&mut self, key: &str, obs: &mut dyn Observer) {
        let now = self.now;
        let Some(c) = self.controllers.ctls.get_mut(key) else {
            return;
        };
        let want = c.obj.replicas().max(0);
        c.desired = i64::from(want);
        let parallel = c.obj.parallel_pods();
        let min_ready =
            SimDuration::from_secs(i64::from(c.obj.spec.min_ready_seconds.unwrap_or(0)));
        let by_ordinal: BTreeMap<i32, (String, bool)> = c
            .pods
            .iter()
            .filter_map(|(p, o)| o.ordinal.map(|i| (i, (p.clone(), o.clone()))))
            .map(|(i, (p, o))| (i, (p, o.available(now, min_ready))))
            .collect();
        // Create the missing ordinals in order; OrderedReady stops at the first pod that is
        // not (yet) running.
        for i in 0..want {
            match by_ordinal.get(&i) {
                Some((_, ready)) => {
                    if !parallel && !ready {
                        return;
                    }
                }
                None => {
                    self.create_stateful_pod(key, i, obs);
                    if !parallel {
                        return;
                    }
                }
            }
        }
        // Scale down from the highest ordinal.
        let condemned: Vec<String> = by_ordinal
            .range(want..)
            .rev()
            .map(|(_, (p, _))| p.clone())
            .collect();
        if condemned.is_empty() {
            return;
        }
        if parallel {
            for p in condemned {
                self.delete_owned_pod(&p, obs);
            }
        } else if by_ordinal.values().all(|(_, ready)| *ready) {
            self.delete_owned_pod(&condemned[0], obs);
            // The deletion's event wakes the controller for the next ordinal.
            self.queue_reconcile(key);
        }
    }

    /// Creates pod `<sts>-<ordinal>` and, first, its claims (those that do not exist yet).
    fn create_stateful_pod(&mut self, key: &str, ordinal: i32, obs: &mut dyn Observer) {
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
        let tpl = c.obj.spec.template.clone();
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
            hash: String::new(),
            ordinal: Some(ordinal),
            edit: &edit,
        };
        self.create_owned_pod(key, new, obs);
    }
}
