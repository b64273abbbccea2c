//! Adoption: a controller takes the live pods that already name it as their controller
//! `ownerReference` (pods of a kube-dump, created at t=0 before the controllers' first
//! reconcile), so it counts them instead of creating their replicas a second time.
//!
//! Upstream adopts by selector and controller reference uid; ksim matches the reference's kind
//! and name in the controller's namespace (dumped uids are not the engine's): a ReplicaSet,
//! StatefulSet, DaemonSet or Job its own name; a Deployment the pods of its ReplicaSets, i.e. an
//! owner `ReplicaSet <deploy>-<hash>` whose pods carry `pod-template-hash: <hash>` (when no
//! ReplicaSet controller of that name exists). Simplified: adoption happens once, at the
//! controller's first reconcile; a Deployment's adopted pods count as its current template's; an
//! adopted running pod counts as running from its adoption.

use ksim_api::object::ObjectKind;

use super::{Owned, Simulation};
use crate::sim::PodPhase;

impl Simulation {
    /// Adopts the live orphans that name controller `key` (its first reconcile only).
    pub(super) fn adopt_orphans(&mut self, key: &str) {
        let Some(c) = self.controllers.ctls.get_mut(key) else {
            return;
        };
        if c.adopted {
            return;
        }
        c.adopted = true;
        let kind = c.kind;
        let ns = c.obj.metadata.namespace.clone();
        let name = c.obj.metadata.name.clone();
        let hash = c.hash.clone();
        let mut found: Vec<(String, Option<i32>)> = Vec::new();
        for (pod_key, &id) in self.live_iter() {
            if self.controllers.owner_of.contains_key(pod_key) {
                continue;
            }
            let pod = &self.pods[id as usize].info.pod;
            if pod.metadata.namespace != ns {
                continue;
            }
            let Some(owner) = pod
                .metadata
                .owner_references
                .iter()
                .find(|o| o.controller == Some(true))
            else {
                continue;
            };
            let mine = match kind {
                ObjectKind::Deployment => {
                    owner.kind == "ReplicaSet"
                        && owner
                            .name
                            .strip_prefix(&format!("{name}-"))
                            .is_some_and(|h| {
                                pod.metadata
                                    .labels
                                    .get("pod-template-hash")
                                    .map(String::as_str)
                                    == Some(h)
                            })
                        && !self.controllers.ctls.contains_key(&super::ctl_key(
                            ObjectKind::ReplicaSet,
                            &ns,
                            &owner.name,
                        ))
                }
                k => owner.kind == k.as_str() && owner.name == name,
            };
            if !mine {
                continue;
            }
            let ordinal = match kind {
                ObjectKind::StatefulSet => pod
                    .metadata
                    .name
                    .strip_prefix(&format!("{name}-"))
                    .and_then(|i| i.parse::<i32>().ok()),
                _ => None,
            };
            if kind == ObjectKind::StatefulSet && ordinal.is_none() {
                continue;
            }
            found.push((pod_key.clone(), ordinal));
        }
        // The live map's order is not meaningful: adopt in name order.
        found.sort();
        let now = self.now;
        for (pod_key, ordinal) in found {
            let running = self
                .live_get(&pod_key)
                .is_some_and(|&id| self.pods[id as usize].phase == PodPhase::Bound);
            self.controllers.seq += 1;
            let seq = self.controllers.seq;
            if let Some(c) = self.controllers.ctls.get_mut(key) {
                c.pods.insert(
                    pod_key.clone(),
                    Owned {
                        seq,
                        hash: hash.clone(),
                        ordinal,
                        ready_at: running.then_some(now),
                        // Its creation as the controller first sees it.
                        created_at: now,
                        terminating: false,
                    },
                );
            }
            self.controllers.owner_of.insert(pod_key, key.to_string());
        }
    }
}
