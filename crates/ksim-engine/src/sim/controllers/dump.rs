//! The controllers as `ksim run --dump-at` writes them (see [`crate::dump`]): every live
//! controller object as the API server would hold it, so `ksim import kube-dump` reads them
//! back and the replay's controllers adopt the dumped pods instead of creating them again.
//!
//! - PriorityClasses first (the workloads' pods are admitted against them), then the
//!   controllers in `Kind/namespace/name` order.
//! - A Deployment is followed by its ReplicaSets `<deploy>-<hash>` that have pods or replicas,
//!   each with a controller `ownerReference` to the Deployment, the `pod-template-hash` label
//!   and selector term, and its replicas.
//! - A Job carries `status.succeeded` / `status.failed` and, once finished, the condition
//!   `Complete` (or `Failed`), which the importer reads (a finished Job is skipped, a running
//!   one runs only its remaining completions).
//! - Specs are as the controllers run them: with a `controllerScale` already applied.
//! - A controller's pod that is bound with a run time (`ksim.io/run-for`) is dumped with the
//!   annotation set to what is left of it (less `podStartup`, which the replay charges a pod
//!   created bound), so a replay with the same costs ends it when the original run would.

use ksim_api::object::ObjectKind;
use serde_json::{json, Value};

use super::{Simulation, RUN_FOR_ANNOTATION};
use crate::time::{SimDuration, SimTime};

impl Simulation {
    /// The instant a dump shows: the `--dump-at` time (the dump is taken when the run is about
    /// to pass it, so the last event may be earlier), else the horizon the run stopped at.
    fn dump_instant(&self) -> SimTime {
        self.dump_at
            .or(self.cfg.horizon)
            .map_or(self.now, |t| t.max(self.now))
    }

    /// The live controller objects and PriorityClasses as kubectl would dump them.
    pub(crate) fn controller_dump_items(&self) -> Vec<Value> {
        let now = self.dump_instant();
        let mut items = Vec::new();
        for pc in self.controllers.classes.values() {
            let mut v = serde_json::to_value(pc).unwrap_or(Value::Null);
            v["apiVersion"] = json!("scheduling.k8s.io/v1");
            v["kind"] = json!("PriorityClass");
            items.push(v);
        }
        for c in self.controllers.ctls.values() {
            let mut v = serde_json::to_value(&c.obj).unwrap_or(Value::Null);
            v["apiVersion"] = json!(c.kind.api_version());
            v["kind"] = json!(c.kind.as_str());
            let live = c.pods.len() as i64;
            let ready = c
                .pods
                .values()
                .filter(|o| o.ready_at.is_some_and(|t| t <= now))
                .count() as i64;
            match c.kind {
                ObjectKind::Job => {
                    let mut status =
                        json!({"active": live, "succeeded": c.succeeded, "failed": c.failed});
                    let key =
                        super::ctl_key(c.kind, &c.obj.metadata.namespace, &c.obj.metadata.name);
                    if let Some(cond) = self
                        .controllers
                        .jobs
                        .get(&key)
                        .and_then(super::job::JobState::condition)
                    {
                        status["conditions"] = json!([{"type": cond.type_, "status": "True",
                            "reason": cond.reason,
                            "lastTransitionTime": crate::time::rfc3339(cond.at)}]);
                    } else if c.finished {
                        let t = if c.finished_at.is_some() {
                            "Complete"
                        } else {
                            "Failed"
                        };
                        status["conditions"] = json!([{"type": t, "status": "True"}]);
                    }
                    v["status"] = status;
                }
                ObjectKind::CronJob => v["status"] = json!({}),
                ObjectKind::DaemonSet => {
                    v["status"] = json!({"desiredNumberScheduled": c.desired,
                        "currentNumberScheduled": live, "numberReady": ready});
                }
                _ => v["status"] = json!({"replicas": live, "readyReplicas": ready}),
            }
            items.push(v);
            if c.kind != ObjectKind::Deployment {
                continue;
            }
            let name = &c.obj.metadata.name;
            for (h, r) in &c.rs {
                let pods = c.pods.values().filter(|o| o.hash == *h).count() as i64;
                if pods == 0 && r.replicas == 0 {
                    continue;
                }
                let mut template = r.template.clone();
                template
                    .metadata
                    .labels
                    .insert("pod-template-hash".into(), h.clone());
                let mut selector = c.obj.spec.selector.clone().unwrap_or_default();
                selector
                    .match_labels
                    .insert("pod-template-hash".into(), h.clone());
                let mut labels = template.metadata.labels.clone();
                labels.insert("pod-template-hash".into(), h.clone());
                items.push(json!({
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "metadata": {
                        "name": format!("{name}-{h}"),
                        "namespace": c.obj.metadata.namespace,
                        "labels": labels,
                        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                            "name": name, "uid": c.obj.metadata.uid, "controller": true}],
                    },
                    "spec": {"replicas": r.replicas, "selector": selector, "template": template},
                    "status": {"replicas": pods},
                }));
            }
        }
        items
    }

    /// The run-time annotation a dumped controller pod `key` (`namespace/name`) carries: what
    /// is left of its run at `now`, when it is running with one.
    pub(crate) fn controller_pod_run_left(&self, key: &str) -> Option<(&'static str, String)> {
        self.run_left(key)
            .map(|d| (RUN_FOR_ANNOTATION, SimDuration::to_string(&d)))
    }

    fn run_left(&self, key: &str) -> Option<SimDuration> {
        let owner = self.controllers.owner_of.get(key)?;
        let o = self.controllers.ctls.get(owner)?.pods.get(key)?;
        let ready = o.ready_at?;
        let id = *self.live_get(key)?;
        let run_for = self.pods[id as usize].run_for?;
        // The replay creates the pod bound at t=0 and charges `podStartup` before its run
        // starts (as for any pod created bound): that much less is left to run.
        let now = self.dump_instant() + self.cfg.costs.pod_startup;
        Some(SimDuration(
            (ready + run_for).0.saturating_sub(now.0).max(0),
        ))
    }
}
