//! The ReplicaSet controller: keeps `replicas` pods `<rs>-<5 chars>`, replacing pods deleted,
//! preempted, evicted or lost with their node. A Deployment's ReplicaSets use the same pod
//! accounting ([`Simulation::sync_replicas`]) for the pods of one template hash.
//!
//! Scale-down picks victims as upstream's `ActivePods` ranking does, in the parts that matter
//! in ksim: unscheduled before scheduled, not yet running before running, running for less time
//! before running longer, then the newest first. Simplified: upstream also compares restarts and
//! pods per node (ksim pods do not restart; co-location ranking is not modelled).

use std::cmp::Reverse;

use ksim_api::object::ObjectKind;
use ksim_api::workloads::PodTemplateSpec;

use super::{NewPod, Simulation};
use crate::record::Observer;
use crate::time::SimTime;

impl Simulation {
    pub(super) fn reconcile_replicaset(&mut self, key: &str, obs: &mut dyn Observer) {
        let Some(c) = self.controllers.ctls.get_mut(key) else {
            return;
        };
        let want = c.obj.replicas().max(0);
        c.desired = i64::from(want);
        // A ReplicaSet's template change does not touch its existing pods (upstream), so its
        // pods are counted whatever template they were made from.
        let template = c.obj.spec.template.clone();
        let name = c.obj.metadata.name.clone();
        self.sync_replicas(
            key,
            None,
            want,
            &template,
            ObjectKind::ReplicaSet,
            &name,
            obs,
        );
    }

    /// Creates or deletes pods until `want` live pods of the controller (of template hash
    /// `hash` when given) exist. New pods come from `template`, owned by `owner_kind/owner`
    /// and named `<owner>-<5 chars>`.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn sync_replicas(
        &mut self,
        key: &str,
        hash: Option<&str>,
        want: i32,
        template: &PodTemplateSpec,
        owner_kind: ObjectKind,
        owner: &str,
        obs: &mut dyn Observer,
    ) {
        let Some(c) = self.controllers.ctls.get(key) else {
            return;
        };
        let mine: Vec<(String, u64, Option<SimTime>)> = c
            .pods
            .iter()
            .filter(|(_, o)| hash.is_none_or(|h| o.hash == h))
            .map(|(p, o)| (p.clone(), o.seq, o.ready_at))
            .collect();
        let want = want.max(0) as usize;
        let have = mine.len();
        if have < want {
            let label = hash.map(str::to_string);
            let edit = move |p: &mut ksim_api::Pod| {
                if let Some(h) = &label {
                    p.metadata
                        .labels
                        .insert("pod-template-hash".into(), h.clone());
                }
            };
            for _ in have..want {
                let new = NewPod {
                    template,
                    owner_kind,
                    owner_name: owner.to_string(),
                    name: None,
                    prefix: owner.to_string(),
                    hash: hash.unwrap_or_default().to_string(),
                    ordinal: None,
                    edit: &edit,
                };
                self.create_owned_pod(key, new, obs);
            }
        } else if have > want {
            let now = self.now;
            // Upstream's ActivePods order: the first are deleted first.
            let mut ranked: Vec<_> = mine
                .into_iter()
                .map(|(p, seq, ready)| {
                    let running = ready.is_some_and(|t| t <= now);
                    (
                        self.is_scheduled(&p),
                        running,
                        Reverse(ready.filter(|_| running)),
                        Reverse(seq),
                        p,
                    )
                })
                .collect();
            ranked.sort();
            let kind = self.controllers.ctls.get(key).map(|c| c.kind);
            for (.., p) in ranked.into_iter().take(have - want) {
                // Each deletion is a call of the ReplicaSet controller's client.
                if kind.is_some_and(|k| !self.client_call(key, k, false)) {
                    break;
                }
                self.delete_owned_pod(&p, obs);
            }
        }
    }
}
