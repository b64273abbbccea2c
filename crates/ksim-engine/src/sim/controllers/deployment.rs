//! The Deployment controller: owns ReplicaSets `<deploy>-<template hash>` by template hash
//! (a template change makes a new ReplicaSet; going back to an old template reuses its
//! ReplicaSet), whose pods `<deploy>-<hash>-<5 chars>` carry the `pod-template-hash` label.
//!
//! Strategies, as upstream's `rolloutRolling` / `rolloutRecreate`:
//! - `RollingUpdate` (default): each sync makes one step. If the new ReplicaSet is short, it is
//!   scaled up as far as `replicas + maxSurge` total ReplicaSet replicas allow; otherwise old
//!   ReplicaSets are scaled down (oldest first): first their unavailable pods, then as many as
//!   keep `replicas − maxUnavailable` pods available. `maxSurge` rounds up, `maxUnavailable`
//!   down, both 0 makes unavailable 1 (`Workload::surge_and_unavailable`). Available = running
//!   (bound and started) for `minReadySeconds`.
//! - `Recreate`: every old pod is deleted, then the new ReplicaSet is scaled up.
//!
//! Simplified: the ReplicaSet controller's own reaction is folded into the Deployment's (a
//! ReplicaSet scaled by a sync creates or deletes its pods in that sync, one reaction delay
//! after the event, not two); a replica count changed in the middle of a rollout is not scaled
//! proportionally across the ReplicaSets (the rollout converges to it); no
//! `progressDeadlineSeconds`, pause or revision history.

use ksim_api::object::ObjectKind;

use super::{OwnedRs, Simulation};
use crate::record::Observer;
use crate::time::SimDuration;

impl Simulation {
    pub(super) fn reconcile_deployment(&mut self, key: &str, obs: &mut dyn Observer) {
        let Some(c) = self.controllers.ctls.get_mut(key) else {
            return;
        };
        let d = c.obj.replicas().max(0);
        c.desired = i64::from(d);
        let new = c.hash.clone();
        let next = c.rs.values().map(|r| r.order + 1).max().unwrap_or(0);
        let made = !c.rs.contains_key(&new);
        c.rs.entry(new.clone()).or_insert_with(|| OwnedRs {
            replicas: 0,
            template: c.obj.spec.template.clone(),
            order: next,
        });
        if made {
            // The new ReplicaSet exists from now on: listed for PodTopologySpread's
            // DefaultSelector, with the Deployment's selector plus its pod-template-hash.
            let mut selector = c.obj.spec.selector.clone().unwrap_or_default();
            selector
                .match_labels
                .insert("pod-template-hash".to_string(), new.clone());
            let (ns, name) = (
                c.obj.metadata.namespace.clone(),
                format!("{}-{new}", c.obj.metadata.name),
            );
            self.list_workload_set(false, &ns, &name, Some(selector));
        }
        let Some(c) = self.controllers.ctls.get_mut(key) else {
            return;
        };
        let min_ready =
            SimDuration::from_secs(i64::from(c.obj.spec.min_ready_seconds.unwrap_or(0)));
        let (surge, unavail) = c.obj.surge_and_unavailable();
        let recreate = c.obj.recreate();
        // Old ReplicaSets with pods or replicas, oldest first.
        let mut olds: Vec<(u64, String)> =
            c.rs.iter()
                .filter(|(h, r)| {
                    **h != new && (r.replicas > 0 || c.pods.values().any(|o| o.hash == **h))
                })
                .map(|(h, r)| (r.order, h.clone()))
                .collect();
        olds.sort();
        let olds: Vec<String> = olds.into_iter().map(|(_, h)| h).collect();
        let count = |h: &str| {
            let c = &self.controllers.ctls[key];
            let pods: Vec<_> = c.pods.values().filter(|o| o.hash == h).collect();
            let available = pods
                .iter()
                .filter(|o| o.available(self.now, min_ready))
                .count() as i32;
            available
        };
        let mut step = false;
        if recreate {
            let c = self.controllers.ctls.get_mut(key).expect("checked above");
            for h in &olds {
                if let Some(r) = c.rs.get_mut(h) {
                    r.replicas = 0;
                }
            }
            // ksim deletes at once, so the old pods are gone when the new ones are made.
            if let Some(r) = c.rs.get_mut(&new) {
                r.replicas = d;
            }
        } else if olds.is_empty() {
            let c = self.controllers.ctls.get_mut(key).expect("checked above");
            if let Some(r) = c.rs.get_mut(&new) {
                r.replicas = d;
            }
        } else {
            let available: Vec<(String, i32)> = olds
                .iter()
                .chain(std::iter::once(&new))
                .map(|h| (h.clone(), count(h)))
                .collect();
            let avail_of = |h: &str| {
                available
                    .iter()
                    .find(|(x, _)| x == h)
                    .map(|(_, n)| *n)
                    .unwrap_or(0)
            };
            let c = self.controllers.ctls.get_mut(key).expect("checked above");
            let total: i32 = c.rs.values().map(|r| r.replicas).sum();
            let new_r = c.rs.get(&new).map(|r| r.replicas).unwrap_or(0);
            // reconcileNewReplicaSet.
            if new_r > d {
                if let Some(r) = c.rs.get_mut(&new) {
                    r.replicas = d;
                }
                step = true;
            } else if new_r < d && total < d + surge {
                let up = (d + surge - total).min(d - new_r);
                if let Some(r) = c.rs.get_mut(&new) {
                    r.replicas += up;
                }
                step = true;
            }
            if !step {
                // reconcileOldReplicaSets.
                let min_available = d - unavail;
                let new_unavailable = (new_r - avail_of(&new)).max(0);
                let max_down = total - min_available - new_unavailable;
                if max_down > 0 {
                    // cleanupUnhealthyReplicas: old pods that are not available go first.
                    let mut cleaned = 0;
                    for h in &olds {
                        if cleaned >= max_down {
                            break;
                        }
                        let Some(r) = c.rs.get_mut(h) else { continue };
                        let unhealthy = r.replicas - avail_of(h);
                        if r.replicas == 0 || unhealthy <= 0 {
                            continue;
                        }
                        let k = (max_down - cleaned).min(unhealthy);
                        r.replicas -= k;
                        cleaned += k;
                        step = true;
                    }
                    // scaleDownOldReplicaSetsForRollingUpdate: keep min_available available.
                    let all_available: i32 = available.iter().map(|(_, n)| n).sum();
                    let mut down = (all_available - min_available).max(0);
                    for h in &olds {
                        if down == 0 {
                            break;
                        }
                        let Some(r) = c.rs.get_mut(h) else { continue };
                        let k = r.replicas.min(down);
                        if k > 0 {
                            r.replicas -= k;
                            down -= k;
                            step = true;
                        }
                    }
                }
            }
        }
        // The ReplicaSets' pods follow their replicas (the ReplicaSet controller).
        let Some(c) = self.controllers.ctls.get(key) else {
            return;
        };
        let name = c.obj.metadata.name.clone();
        let sets: Vec<(String, OwnedRs)> =
            c.rs.iter().map(|(h, r)| (h.clone(), r.clone())).collect();
        // Scale-downs before scale-ups, so a step never has more pods than it allows.
        let mut order: Vec<&(String, OwnedRs)> = sets.iter().collect();
        order.sort_by_key(|(h, r)| {
            let have = self.controllers.ctls[key]
                .pods
                .values()
                .filter(|o| o.hash == *h)
                .count() as i32;
            (have <= r.replicas, r.order)
        });
        for (h, r) in order {
            let rs = format!("{name}-{h}");
            self.sync_replicas(
                key,
                Some(h),
                r.replicas,
                &r.template,
                ObjectKind::ReplicaSet,
                &rs,
                obs,
            );
        }
        if step {
            // The ReplicaSets' status changes wake the Deployment again (upstream: an RS
            // update event), so a rollout goes on even when no pod changes.
            self.queue_reconcile(key);
        }
    }
}
