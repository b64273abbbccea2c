//! The Deployment controller (`pkg/controller/deployment/`): owns ReplicaSets
//! `<deploy>-<template hash>` by template hash (a template change makes a new ReplicaSet; going
//! back to an old template reuses its ReplicaSet), whose pods `<deploy>-<hash>-<5 chars>` carry
//! the `pod-template-hash` label.
//!
//! Each sync is upstream's `syncDeployment`:
//! - `spec.paused: true`: only `sync` — the ReplicaSets are scaled (below), no new ReplicaSet
//!   is made and nothing rolls (`getAllReplicaSetsAndSyncRevision(createIfNotExisted=false)`).
//! - a scaling event (`isScalingEvent`: an active ReplicaSet's `desired-replicas` annotation
//!   differs from `spec.replicas`): `sync`, which scales (`scale`): a single active (or the
//!   latest) ReplicaSet takes all replicas; a saturated new ReplicaSet makes the old ones 0;
//!   otherwise, with RollingUpdate, the change (`replicas + maxSurge` minus the ReplicaSets'
//!   total) is spread proportionally (`GetReplicaSetProportion`: each ReplicaSet's
//!   `replicas × (replicas + maxSurge) / max-replicas annotation`, rounded, larger ReplicaSets
//!   first — newer first when scaling up, older first when down — the leftover to the first).
//! - otherwise the rollout (`rolloutRolling` / `rolloutRecreate`):
//!   - `RollingUpdate` (default): each sync makes one step. If the new ReplicaSet is short, it
//!     is scaled up as far as `replicas + maxSurge` total ReplicaSet replicas allow; otherwise
//!     old ReplicaSets are scaled down (oldest first): first their unavailable pods, then as
//!     many as keep `replicas − maxUnavailable` pods available. `maxSurge` rounds up,
//!     `maxUnavailable` down, both 0 makes unavailable 1 (`Workload::surge_and_unavailable`).
//!     Available = running (bound and started) for `minReadySeconds`.
//!   - `Recreate`: the old ReplicaSets are scaled to 0 (`scaleDownOldReplicaSetsForRecreate`)
//!     and the sync ends; the next one waits while any old pod exists (`oldPodsRunning`), then
//!     creates the new ReplicaSet and scales it up, one reaction later.
//!
//! Every ReplicaSet the Deployment scales gets the annotations (`desired-replicas`,
//! `max-replicas` = `replicas + maxSurge`), as `scaleReplicaSet` writes them.
//!
//! Simplified: the ReplicaSet controller's own reaction is folded into the Deployment's (a
//! ReplicaSet scaled by a sync creates or deletes its pods in that sync, one reaction delay
//! after the event, not two); no `progressDeadlineSeconds`, rollback or revision history
//! limit.

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
        let min_ready =
            SimDuration::from_secs(i64::from(c.obj.spec.min_ready_seconds.unwrap_or(0)));
        let (surge, unavail) = c.obj.surge_and_unavailable();
        let recreate = c.obj.recreate();
        let paused = c.obj.paused();
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
        // isScalingEvent: an active ReplicaSet annotated with other desired replicas.
        let scaling =
            c.rs.values()
                .any(|r| r.replicas > 0 && r.annotated.is_some_and(|(want, _)| want != d));
        let step = if paused || scaling {
            let live = c.pods.len() as i32;
            let available_new = c
                .pods
                .values()
                .filter(|o| o.hash == new && o.available(self.now, min_ready))
                .count() as i32;
            scale_proportionally(c, &new, &olds, d, surge, live, available_new)
        } else {
            // Recreate makes its new ReplicaSet only once the old ones are gone.
            if !c.rs.contains_key(&new) && (!recreate || olds.is_empty()) {
                self.make_new_replicaset(key);
            }
            self.rollout(key, &new, &olds, d, surge, unavail, min_ready, recreate)
        };
        self.sync_replicasets(key, obs);
        if step {
            // The ReplicaSets' status changes wake the Deployment again (upstream: an RS
            // update event), so a rollout goes on even when no pod changes.
            self.queue_reconcile(key);
        }
    }

    /// Creates the new ReplicaSet (replicas 0, annotated) and lists it for
    /// PodTopologySpread's `DefaultSelector`, with the Deployment's selector plus its
    /// pod-template-hash.
    fn make_new_replicaset(&mut self, key: &str) {
        let Some(c) = self.controllers.ctls.get_mut(key) else {
            return;
        };
        let new = c.hash.clone();
        let next = c.rs.values().map(|r| r.order + 1).max().unwrap_or(0);
        let d = c.obj.replicas().max(0);
        let (surge, _) = c.obj.surge_and_unavailable();
        c.rs.insert(
            new.clone(),
            OwnedRs {
                replicas: 0,
                template: c.obj.spec.template.clone(),
                order: next,
                annotated: Some((d, d + surge)),
            },
        );
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

    /// Whether a pod of one of the Deployment's old ReplicaSets (`<name>-<hash>`, hash not
    /// `new`) is still terminating.
    fn old_pods_terminating(&self, ns: &str, name: &str, new: &str) -> bool {
        let prefix = format!("{name}-");
        let new_rs = format!("{name}-{new}");
        self.pods.iter().any(|slot| {
            slot.terminating
                && !matches!(slot.phase, super::PodPhase::Ended(_))
                && slot.info.namespace() == ns
                && slot.info.pod.metadata.owner_references.iter().any(|o| {
                    o.kind == "ReplicaSet" && o.name.starts_with(&prefix) && o.name != new_rs
                })
        })
    }

    /// One step of `rolloutRolling` or `rolloutRecreate`; whether anything was scaled.
    #[allow(clippy::too_many_arguments)]
    fn rollout(
        &mut self,
        key: &str,
        new: &str,
        olds: &[String],
        d: i32,
        surge: i32,
        unavail: i32,
        min_ready: SimDuration,
        recreate: bool,
    ) -> bool {
        let new = new.to_string();
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
            let Some(c) = self.controllers.ctls.get_mut(key) else {
                return false;
            };
            let annotation = (d, d + surge);
            let mut scaled_down = false;
            for h in olds {
                if let Some(r) = c.rs.get_mut(h) {
                    if r.replicas > 0 {
                        r.replicas = 0;
                        r.annotated = Some(annotation);
                        scaled_down = true;
                    }
                }
            }
            // Wait for the scale-down to take effect and every old pod to be gone: upstream's
            // `oldPodsRunning` counts a terminating pod (still running until its grace ends).
            let old_pods = c.pods.values().any(|o| o.hash != new);
            let (ns, name) = (
                c.obj.metadata.namespace.clone(),
                c.obj.metadata.name.clone(),
            );
            if scaled_down || old_pods || self.old_pods_terminating(&ns, &name, &new) {
                return true;
            }
            let Some(c) = self.controllers.ctls.get_mut(key) else {
                return false;
            };
            if let Some(r) = c.rs.get_mut(&new) {
                if r.replicas != d {
                    r.replicas = d;
                    r.annotated = Some(annotation);
                }
            }
        } else if olds.is_empty() {
            let Some(c) = self.controllers.ctls.get_mut(key) else {
                return false;
            };
            if let Some(r) = c.rs.get_mut(&new) {
                if r.replicas != d {
                    r.replicas = d;
                    r.annotated = Some((d, d + surge));
                }
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
            let Some(c) = self.controllers.ctls.get_mut(key) else {
                return false;
            };
            let snapshot: Vec<(String, i32)> =
                c.rs.iter().map(|(h, r)| (h.clone(), r.replicas)).collect();
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
                    for h in olds {
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
                    for h in olds {
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
            // Every ReplicaSet scaled in this step carries the Deployment's annotations.
            for (h, was) in snapshot {
                if let Some(r) = c.rs.get_mut(&h) {
                    if r.replicas != was {
                        r.annotated = Some((d, d + surge));
                    }
                }
            }
        }
        step
    }

    /// The ReplicaSets' pods follow their replicas (the ReplicaSet controller).
    fn sync_replicasets(&mut self, key: &str, obs: &mut dyn Observer) {
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
    }
}

/// Upstream's `scale` (sync.go) for a paused Deployment or a scaling event; whether any
/// ReplicaSet changed. `live` is the Deployment's pod count (`status.replicas`, the fallback
/// when a ReplicaSet has no max-replicas annotation), `available_new` the new ReplicaSet's
/// available pods (`IsSaturated`).
fn scale_proportionally(
    c: &mut super::Controller,
    new: &str,
    olds: &[String],
    d: i32,
    surge: i32,
    live: i32,
    available_new: i32,
) -> bool {
    let annotation = (d, d + surge);
    let has_new = c.rs.contains_key(new);
    // FindActiveOrLatest: one active ReplicaSet (or none: the newest) takes all replicas.
    let mut active: Vec<String> = olds
        .iter()
        .chain(std::iter::once(&new.to_string()))
        .filter(|h| c.rs.get(*h).is_some_and(|r| r.replicas > 0))
        .cloned()
        .collect();
    active.dedup();
    let latest = if active.len() == 1 {
        Some(active[0].clone())
    } else if active.is_empty() {
        if has_new {
            Some(new.to_string())
        } else {
            olds.last().cloned()
        }
    } else {
        None
    };
    if let Some(h) = latest {
        let Some(r) = c.rs.get_mut(&h) else {
            return false;
        };
        if r.replicas == d {
            return false;
        }
        r.replicas = d;
        r.annotated = Some(annotation);
        return true;
    }
    // IsSaturated: the new ReplicaSet has every replica, annotated so, all available.
    let saturated = c.rs.get(new).is_some_and(|r| {
        r.replicas == d && r.annotated.is_some_and(|(w, _)| w == d) && available_new == d
    });
    let mut changed = false;
    if saturated {
        for h in olds {
            if let Some(r) = c.rs.get_mut(h) {
                if r.replicas > 0 {
                    r.replicas = 0;
                    r.annotated = Some(annotation);
                    changed = true;
                }
            }
        }
        return changed;
    }
    if c.obj.recreate() {
        return false;
    }
    let sets: Vec<(String, u64, i32, Option<i32>)> = active
        .iter()
        .filter_map(|h| {
            c.rs.get(h)
                .map(|r| (h.clone(), r.order, r.replicas, r.annotated.map(|a| a.1)))
        })
        .collect();
    let sizes = spread(sets, d, surge, live);
    for (h, size) in sizes {
        if let Some(r) = c.rs.get_mut(&h) {
            if r.replicas != size || r.annotated != Some(annotation) {
                changed |= r.replicas != size;
                r.replicas = size;
                r.annotated = Some(annotation);
            }
        }
    }
    changed
}

/// The proportional part of `scale`: the new size of each active ReplicaSet
/// (name, creation order, replicas, max-replicas annotation), for `d` replicas.
fn spread(
    mut sets: Vec<(String, u64, i32, Option<i32>)>,
    d: i32,
    surge: i32,
    live: i32,
) -> Vec<(String, i32)> {
    let total: i32 = sets.iter().map(|s| s.2).sum();
    let allowed = if d > 0 { d + surge } else { 0 };
    let to_add = allowed - total;
    // Larger first; equal sizes newer first when adding (ReplicaSetsBySizeNewer), older first
    // when removing (ReplicaSetsBySizeOlder).
    sets.sort_by(|a, b| {
        b.2.cmp(&a.2).then(if to_add > 0 {
            b.1.cmp(&a.1)
        } else {
            a.1.cmp(&b.1)
        })
    });
    let mut added = 0;
    let mut sizes: Vec<(String, i32)> = Vec::new();
    for (h, _, replicas, max) in &sets {
        let size = if to_add != 0 {
            let p = proportion(*replicas, *max, d, surge, live, to_add, added);
            added += p;
            replicas + p
        } else {
            *replicas
        };
        sizes.push((h.clone(), size));
    }
    // The leftover goes to the first (largest).
    if let Some(first) = sizes.first_mut() {
        if to_add != 0 {
            first.1 = (first.1 + to_add - added).max(0);
        }
    }
    sizes
}

/// `GetReplicaSetProportion` with `getReplicaSetFraction`: how many replicas a ReplicaSet of
/// `replicas` (annotated `max_annotation`) gains or loses of `to_add`, `added` already given.
fn proportion(
    replicas: i32,
    max_annotation: Option<i32>,
    d: i32,
    surge: i32,
    live: i32,
    to_add: i32,
    added: i32,
) -> i32 {
    if replicas == 0 || to_add == 0 || to_add == added {
        return 0;
    }
    let fraction = if d == 0 {
        -replicas
    } else {
        let before = match max_annotation {
            Some(m) if m != 0 => m,
            _ => live,
        };
        if before == 0 {
            0
        } else {
            // math.Round(replicas × (d + surge) / before) − replicas; all non-negative.
            let num = i64::from(replicas) * i64::from(d + surge);
            let b = i64::from(before);
            let rounded = (2 * num + b) / (2 * b);
            i32::try_from(rounded).unwrap_or(i32::MAX) - replicas
        }
    };
    let allowed = to_add - added;
    if to_add > 0 {
        fraction.min(allowed)
    } else {
        fraction.max(allowed)
    }
}

#[cfg(test)]
mod tests {
    //! Upstream's `TestScale` (deployment `sync_test.go`) proportional cases as facts: the
    //! ReplicaSets annotated by the Deployment before the change (maxSurge 0).
    use super::spread;

    fn sets(new: i32, old: i32, max: i32) -> Vec<(String, u64, i32, Option<i32>)> {
        vec![
            ("v2".into(), 1, new, Some(max)),
            ("v1".into(), 0, old, Some(max)),
        ]
    }

    fn size(out: &[(String, i32)], h: &str) -> i32 {
        out.iter()
            .find(|(x, _)| x == h)
            .map(|(_, n)| *n)
            .unwrap_or(-1)
    }

    #[test]
    fn proportional_scaling_as_upstream() {
        // "proportional scaling: 5 -> 10": new 2, old 3 -> new 4, old 6.
        let out = spread(sets(2, 3, 5), 10, 0, 5);
        assert_eq!((size(&out, "v2"), size(&out, "v1")), (4, 6));
        // "proportional scaling: 5 -> 3": new 2, old 3 -> new 1, old 2.
        let out = spread(sets(2, 3, 5), 3, 0, 5);
        assert_eq!((size(&out, "v2"), size(&out, "v1")), (1, 2));
        // Scaling to 0: everything goes.
        let out = spread(sets(2, 3, 5), 0, 0, 5);
        assert_eq!((size(&out, "v2"), size(&out, "v1")), (0, 0));
        // The engine test's case: old 8 / new 5 of 10 (+3 surge) scaled to 20 (+5): 15 / 10.
        let out = spread(sets(5, 8, 13), 20, 5, 13);
        assert_eq!((size(&out, "v2"), size(&out, "v1")), (10, 15));
    }
}
