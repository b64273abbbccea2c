//! The ReplicaSet controller: keeps `replicas` pods `<rs>-<5 chars>`, replacing pods deleted,
//! preempted, evicted or lost with their node. A Deployment's ReplicaSets use the same pod
//! accounting ([`Simulation::sync_replicas`]) for the pods of one template hash.
//!
//! Scale-down picks victims as upstream's `getPodsToDelete` does: sorted by
//! `ActivePodsWithRanks` (see [`rank`](super::rank)): unassigned, pending, not ready, lower
//! `pod-deletion-cost`, doubled up on a node, ready for less time (logarithmic buckets), newer.
//! ksim pods do not restart, so the restart rule never decides; a pod is Running and Ready from
//! its start (bind + `podStartup`).

use std::collections::BTreeMap;

use ksim_api::object::ObjectKind;
use ksim_api::workloads::PodTemplateSpec;

use super::rank::{compare, deletion_cost, Candidate, Phase};
use super::{NewPod, PodPhase, Simulation};
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
            self.scale_down_ranked(
                key,
                mine.into_iter().map(|(p, ..)| p).collect(),
                have - want,
                obs,
            );
        }
    }

    /// Deletes `n` of `pods` (live pods of controller `key`) in the order of upstream's
    /// `getPodsToDelete`: `ActivePodsWithRanks` ([`rank`](super::rank)), the rank being the
    /// controller's live pods on the same node (every ReplicaSet of a Deployment counted).
    fn scale_down_ranked(
        &mut self,
        key: &str,
        pods: Vec<String>,
        n: usize,
        obs: &mut dyn Observer,
    ) {
        let now = self.now;
        let Some(c) = self.controllers.ctls.get(key) else {
            return;
        };
        let node_of = |p: &str| -> Option<String> {
            self.live_get(p)
                .map(|&id| &self.pods[id as usize])
                .filter(|s| matches!(s.phase, PodPhase::Binding | PodPhase::Bound))
                .map(|s| s.node.clone())
        };
        let mut on_node: BTreeMap<String, usize> = BTreeMap::new();
        for p in c.pods.keys() {
            if let Some(n) = node_of(p) {
                *on_node.entry(n).or_default() += 1;
            }
        }
        let mut ranked: Vec<(Candidate, String)> = pods
            .into_iter()
            .filter_map(|p| {
                let o = c.pods.get(&p)?;
                let &id = self.live_get(&p)?;
                let slot = &self.pods[id as usize];
                let node = node_of(&p);
                let ready = o.ready_at.is_some_and(|t| t <= now);
                let cand = Candidate {
                    assigned: node.is_some(),
                    phase: if ready {
                        Phase::Running
                    } else {
                        Phase::Pending
                    },
                    ready,
                    ready_since: o.ready_at.filter(|_| ready),
                    deletion_cost: deletion_cost(&slot.info.pod.metadata.annotations),
                    rank: node
                        .map(|n| on_node.get(&n).copied().unwrap_or(0))
                        .unwrap_or(0),
                    restarts: 0,
                    created: Some(o.created_at),
                    uid: slot.info.uid().to_string(),
                };
                Some((cand, p))
            })
            .collect();
        // Creation order first, so that pods equal on every rule go newest first.
        ranked.reverse();
        if n < ranked.len() {
            ranked.sort_by(|a, b| compare(&a.0, &b.0, now));
        }
        let kind = self.controllers.ctls.get(key).map(|c| c.kind);
        for (_, p) in ranked.into_iter().take(n) {
            // Each deletion is a call of the ReplicaSet controller's client.
            if kind.is_some_and(|k| !self.client_call(key, k, false)) {
                break;
            }
            self.delete_owned_pod(&p, obs);
        }
    }
}
