//! Room: the taint-eviction controller (`pkg/controller/tainteviction/taint_eviction.go`, the
//! `taint-eviction-controller` of kube-controller-manager). Owns the NoExecute taints it last
//! saw per node (`taintedNodes`) and the scheduled evictions (`taintEvictionQueue`), by pod.
//!
//! Reacts to:
//! - every node write (`nodes` room, any source: a trace's `UpdateNode`, the node lifecycle
//!   controller's taints): `handleNodeUpdate` when the node's NoExecute taints changed: no
//!   NoExecute taint left cancels every scheduled eviction of its pods; otherwise each pod
//!   bound there goes through `processPodOnNode`;
//! - a pod bound to a tainted node or updated there (`handlePodUpdate`);
//! - its timer `TaintEvict`: the pod is evicted through [`Simulation::evict_pod`] (cause
//!   `taint`).
//!
//! `processPodOnNode`: a pod that does not tolerate every NoExecute taint of its node
//! (`GetMatchingTolerations`) is evicted at once; one that tolerates them all is evicted after
//! the smallest `tolerationSeconds` of the tolerations used (`getMinTolerationTime`: none set =
//! forever, never evicted; ≤ 0 = at once), counted from when the controller saw it; an
//! eviction already scheduled earlier keeps its time.

use std::collections::BTreeMap;

use ksim_api::{Taint, Toleration};

use super::{Ev, PodId, PodPhase, Simulation};
use crate::record::{Observer, Outcome};
use crate::time::{SimDuration, SimTime};

/// One scheduled eviction (upstream `TimedWorker`).
#[derive(Debug, Clone)]
struct Work {
    uid: String,
    created: SimTime,
    fire: SimTime,
    token: u64,
}

#[derive(Debug, Clone, Default)]
pub(super) struct State {
    /// Node → its NoExecute taints, for nodes that have some.
    tainted: BTreeMap<String, Vec<Taint>>,
    /// Pod key → its scheduled eviction.
    works: BTreeMap<String, Work>,
    next_token: u64,
}

/// The NoExecute taints among `taints` (upstream `getNoExecuteTaints`).
pub fn no_execute_taints(taints: &[Taint]) -> Vec<Taint> {
    taints
        .iter()
        .filter(|t| t.effect == "NoExecute")
        .cloned()
        .collect()
}

/// Upstream `v1helper.GetMatchingTolerations`: whether every taint is tolerated, and for each
/// taint the first toleration that tolerates it.
pub fn matching_tolerations<'a>(
    taints: &[Taint],
    tolerations: &'a [Toleration],
) -> (bool, Vec<&'a Toleration>) {
    let mut used = Vec::new();
    for t in taints {
        match tolerations.iter().find(|tol| tol.tolerates(t)) {
            Some(tol) => used.push(tol),
            None => return (false, Vec::new()),
        }
    }
    (true, used)
}

/// Upstream `getMinTolerationTime`: `None` = tolerated forever; zero = at once (no toleration
/// used, or one with `tolerationSeconds` ≤ 0); else the smallest `tolerationSeconds`.
pub fn min_toleration_time(used: &[&Toleration]) -> Option<SimDuration> {
    if used.is_empty() {
        return Some(SimDuration::ZERO);
    }
    let mut min: Option<i64> = None;
    for t in used {
        if let Some(s) = t.toleration_seconds {
            if s <= 0 {
                return Some(SimDuration::ZERO);
            }
            min = Some(min.map_or(s, |m: i64| m.min(s)));
        }
    }
    min.map(|s| SimDuration::from_secs(s.min(i64::MAX / 1_000_000)))
}

impl Simulation {
    fn te_enabled(&self) -> bool {
        self.cfg.control_plane.node_lifecycle.enabled
    }

    /// Hook of every node write (`handleNodeUpdate` when its NoExecute taints changed). Reads
    /// the node as it is now, so nested writes are seen once each.
    pub(super) fn taint_eviction_node_written(&mut self, name: &str) {
        if !self.te_enabled() {
            return;
        }
        let taints = self
            .snapshot
            .get(name)
            .map(|n| no_execute_taints(&n.node.spec.taints))
            .unwrap_or_default();
        let before = self.taint_eviction.tainted.get(name);
        if before.map_or(taints.is_empty(), |b| *b == taints) {
            return;
        }
        if taints.is_empty() {
            self.taint_eviction.tainted.remove(name);
        } else {
            self.taint_eviction
                .tainted
                .insert(name.to_string(), taints.clone());
        }
        for (key, id) in self.bound_pods_of(name) {
            if taints.is_empty() {
                self.taint_eviction.works.remove(&key);
            } else {
                self.process_pod_on_node(id, &taints);
            }
        }
    }

    /// The pods bound to `node` (not those still binding), with their keys, in the cache's order.
    fn bound_pods_of(&self, node: &str) -> Vec<(String, PodId)> {
        let Some(info) = self.snapshot.get(node) else {
            return Vec::new();
        };
        info.pods
            .iter()
            .filter_map(|p| {
                let id = *self.live_get(&p.key)?;
                (self.pods[id as usize].phase == PodPhase::Bound).then(|| (p.key.clone(), id))
            })
            .collect()
    }

    /// Hook of a pod bound to its node or updated while bound (`handlePodUpdate`).
    pub(super) fn taint_eviction_pod_bound(&mut self, id: PodId) {
        self.device_taint_pod_bound(id);
        if !self.te_enabled() || self.taint_eviction.tainted.is_empty() {
            return;
        }
        let node = &self.pods[id as usize].node;
        if let Some(taints) = self.taint_eviction.tainted.get(node).cloned() {
            self.process_pod_on_node(id, &taints);
        }
    }

    /// `processPodOnNode`.
    fn process_pod_on_node(&mut self, id: PodId, taints: &[Taint]) {
        let info = self.pods[id as usize].info.clone();
        let key = info.key.clone();
        let (all, used) = matching_tolerations(taints, &info.pod.spec.tolerations);
        let now = self.now;
        let (created, fire) = if !all {
            (now, now)
        } else {
            match min_toleration_time(&used) {
                None => {
                    self.taint_eviction.works.remove(&key);
                    return;
                }
                Some(d) => {
                    let mut created = now;
                    if let Some(w) = self.taint_eviction.works.get(&key) {
                        if w.uid == info.uid() {
                            created = w.created;
                            if created + d < now + d {
                                return; // Scheduled earlier: it keeps its time.
                            }
                        }
                    }
                    (created, created + d)
                }
            }
        };
        self.taint_eviction.next_token += 1;
        let token = self.taint_eviction.next_token;
        self.taint_eviction.works.insert(
            key.clone(),
            Work {
                uid: info.uid().to_string(),
                created,
                fire,
                token,
            },
        );
        self.schedule(fire.max(now), 0, Ev::TaintEvict { key, token });
    }

    /// `TaintEvict`: a scheduled eviction is due (a cancelled or replaced one does nothing).
    pub(super) fn taint_evict(&mut self, key: &str, token: u64, obs: &mut dyn Observer) {
        let Some(w) = self.taint_eviction.works.get(key) else {
            return;
        };
        if w.token != token {
            return;
        }
        let uid = w.uid.clone();
        debug_assert!(w.fire <= self.now);
        self.taint_eviction.works.remove(key);
        let Some(&id) = self.live_get(key) else {
            return;
        };
        let slot = &self.pods[id as usize];
        if slot.info.uid() != uid || slot.phase != PodPhase::Bound {
            return;
        }
        self.evict_pod(id, "taint", obs);
    }

    /// Evicts a pod: records why (`PodEvicted`) and deletes it as the deletion path does
    /// (outcome `failed`; its controller replaces it). The one entry point of every eviction
    /// this room and the node lifecycle make; graceful termination belongs to the deletion path.
    pub(super) fn evict_pod(&mut self, id: PodId, cause: &str, obs: &mut dyn Observer) {
        self.evict_pod_as(id, cause, "DeletionByTaintManager", obs);
    }

    /// [`Simulation::evict_pod`] with the `DisruptionTarget` reason of the evicting controller.
    pub(super) fn evict_pod_as(
        &mut self,
        id: PodId,
        cause: &str,
        reason: &str,
        obs: &mut dyn Observer,
    ) {
        // An ended pod, or one already terminating (deleting it again changes nothing).
        if !self.record_eviction(id, cause, obs) {
            return;
        }
        // Upstream's taint managers delete the pod through the API (with the
        // DisruptionTarget condition, reason `reason`): a graceful deletion.
        let grace = self
            .cfg
            .costs
            .termination_grace
            .unwrap_or_else(|| self.pod_grace(id));
        self.terminate_pod(
            id,
            Outcome::Failed,
            "eviction",
            String::new(),
            grace,
            Some(reason),
            obs,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taint(key: &str, value: &str) -> Taint {
        Taint {
            key: key.into(),
            value: value.into(),
            effect: "NoExecute".into(),
        }
    }

    fn tol(key: &str, value: &str, secs: Option<i64>) -> Toleration {
        Toleration {
            key: key.into(),
            operator: "Equal".into(),
            value: value.into(),
            effect: "NoExecute".into(),
            toleration_seconds: secs,
        }
    }

    /// Upstream `TestGetMinTolerationTime`, as facts.
    #[test]
    fn get_min_toleration_time_table() {
        let one = tol("", "", Some(1));
        let two = tol("", "", Some(2));
        let none = tol("", "", None);
        let neg = tol("", "", Some(-1));
        let zero = tol("", "", Some(0));
        let cases: Vec<(Vec<&Toleration>, Option<SimDuration>)> = vec![
            (vec![], Some(SimDuration::ZERO)),
            (vec![&one, &two], Some(SimDuration::from_secs(1))),
            (vec![&none, &two], Some(SimDuration::from_secs(2))),
            (vec![&none], None),
            (vec![&neg, &two], Some(SimDuration::ZERO)),
            (vec![&zero, &two], Some(SimDuration::ZERO)),
        ];
        for (used, want) in cases {
            assert_eq!(min_toleration_time(&used), want, "{used:?}");
        }
    }

    /// `GetMatchingTolerations`: every taint needs a toleration; the first match is used.
    #[test]
    fn matching_tolerations_table() {
        let taints = vec![taint("testTaint1", "test1"), taint("testTaint2", "test2")];
        let t1 = tol("testTaint1", "test1", Some(100));
        let t2 = tol("testTaint2", "test2", Some(200));
        let all = [t1.clone(), t2.clone()];
        let (ok, used) = matching_tolerations(&taints, &all);
        assert!(ok);
        assert_eq!(
            min_toleration_time(&used),
            Some(SimDuration::from_secs(100))
        );
        let (ok, _) = matching_tolerations(&taints, std::slice::from_ref(&t1));
        assert!(!ok, "testTaint2 is not tolerated");
        // No taints: trivially tolerated with nothing used.
        assert_eq!(matching_tolerations(&[], &all), (true, vec![]));
        assert_eq!(
            no_execute_taints(&[
                taint("a", ""),
                Taint {
                    key: "b".into(),
                    value: String::new(),
                    effect: "NoSchedule".into()
                }
            ]),
            vec![taint("a", "")]
        );
    }
}
