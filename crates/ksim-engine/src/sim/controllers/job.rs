//! The Job controller: `parallelism` (default 1), `completions`, `backoffLimit` (default 6);
//! pods `<job>-<5 chars>`. The Job completes when its completions succeed (or, without
//! `completions`, at the first success); its remaining pods are then deleted.
//!
//! Simplified: pods run for the template annotation `ksim.io/run-for` (a Go duration); without
//! it they run until deleted and the Job never completes. Only pods that fail (lost with their
//! node) count against `backoffLimit`; deleted or preempted pods are replaced without counting.
//! No backoff delay between retries, no indexed completion mode.

use ksim_api::object::ObjectKind;
use ksim_api::workloads::Workload;

use super::{ctl_key, NewPod, Simulation};
use crate::record::Observer;

impl Simulation {
    pub(super) fn reconcile_job(&mut self, key: &str, obs: &mut dyn Observer) {
        let now = self.now;
        let Some(c) = self.controllers.ctls.get_mut(key) else {
            return;
        };
        if c.finished {
            return;
        }
        c.started_at.get_or_insert(now);
        let parallelism = c.obj.spec.parallelism.unwrap_or(1).max(0);
        let completions = c.obj.spec.completions;
        let backoff = c.obj.spec.backoff_limit.unwrap_or(6);
        c.desired = i64::from(completions.unwrap_or(1));
        if c.failed > backoff
            || completions.is_some_and(|n| c.succeeded >= n)
            || (completions.is_none() && c.succeeded > 0)
        {
            // Complete (or failed for good): the remaining pods are deleted.
            c.finished = true;
            if c.failed <= backoff {
                c.finished_at = Some(now);
            }
            let rest: Vec<String> = c.pods.keys().cloned().collect();
            let cronjob = cronjob_of(&c.obj);
            for p in rest {
                self.delete_owned_pod(&p, obs);
            }
            // The CronJob that created it sees it finish (its history limits).
            if let Some(cj) = cronjob {
                self.queue_reconcile(&cj);
            }
            return;
        }
        let active = c.pods.len() as i32;
        let want = match completions {
            Some(n) => parallelism.min(n - c.succeeded),
            None => parallelism,
        };
        let tpl = c.obj.spec.template.clone();
        let name = c.obj.metadata.name.clone();
        for _ in active..want {
            let new = NewPod {
                template: &tpl,
                owner_kind: ObjectKind::Job,
                owner_name: name.clone(),
                name: None,
                prefix: name.clone(),
                hash: String::new(),
                ordinal: None,
                edit: &|_| {},
            };
            self.create_owned_pod(key, new, obs);
        }
    }
}

/// The controller key of the CronJob a Job names as its controller, if any (a controller's
/// namespace is defaulted when it is inserted).
fn cronjob_of(job: &Workload) -> Option<String> {
    job.metadata
        .owner_references
        .iter()
        .find(|o| o.controller == Some(true) && o.kind == "CronJob")
        .map(|o| ctl_key(ObjectKind::CronJob, &job.metadata.namespace, &o.name))
}
