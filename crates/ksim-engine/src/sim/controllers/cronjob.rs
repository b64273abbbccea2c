//! The CronJob controller (`batch/v1`): at each time its `schedule` names, a Job from its
//! `jobTemplate`, named as upstream names it, `<cronjob>-<scheduled time in minutes since the
//! Unix epoch>`, with a controller `ownerReference` to the CronJob; the Job controller then runs
//! it.
//!
//! Virtual time 0 is 2024-01-01T00:00:00Z (a Monday; `ksim_api::workloads::CRON_EPOCH_UNIX`),
//! and schedules are evaluated in UTC (standard 5 fields or `@hourly`-style nicknames, parsed by
//! the `croner` crate as upstream's `cron.ParseStandard` reads them; `timeZone` other than UTC
//! is refused). The controller wakes at each scheduled instant (not one reaction delay later:
//! upstream requeues itself for the next schedule time); the Job's own controller reacts after
//! the delay. A CronJob needs a run horizon (it would fire forever).
//!
//! - `concurrencyPolicy`: `Allow` (default) creates the Job whatever runs; `Forbid` skips the
//!   run while a Job of the CronJob is unfinished; `Replace` deletes the unfinished Jobs (and
//!   their pods) and creates the new one.
//! - `suspend: true`: scheduled times pass without a Job.
//! - `startingDeadlineSeconds`: a run whose scheduled time is more than that in the past when the
//!   controller sees it is skipped (in ksim only after an update or a suspension, as the
//!   controller is otherwise woken at the scheduled instant).
//!
//! - `successfulJobsHistoryLimit` (default 3) and `failedJobsHistoryLimit` (default 1): at each
//!   reconcile, the oldest finished Jobs beyond them are deleted (upstream's
//!   `cleanupFinishedJobs`: succeeded and failed Jobs apart, oldest by `status.startTime`,
//!   a Job without one last, ties by name). The CronJob reconciles one reaction delay after one
//!   of its Jobs finishes, as upstream's sync follows its Jobs' updates. A deleted Job leaves
//!   no row in controllers.csv.
//!
//! Simplified: of the scheduled times missed while the controller was not woken (an update
//! with a new schedule, a suspension), only the most recent is considered, as upstream's
//! `mostRecentScheduleTime`, and a `Forbid` run skipped is not retried; the CronJob's own row
//! counts the Jobs it created; a replay of a dump restarts the clock at the epoch (the dumped
//! Jobs that name the CronJob as their controller count as its Jobs for `Forbid` / `Replace`
//! and its history, started when ksim's Job controller first runs them).

use std::collections::BTreeSet;

use ksim_api::meta::OwnerReference;
use ksim_api::object::ObjectKind;
use ksim_api::workloads::{CronSchedule, Workload, CRON_EPOCH_UNIX};

use super::Simulation;
use crate::record::Observer;
use crate::time::SimTime;

/// A CronJob's schedule state (`State::cron`).
#[derive(Debug, Clone, Default)]
pub(crate) struct CronState {
    /// When it was created; schedules count from then.
    pub created: SimTime,
    /// The last scheduled time it considered (ran or skipped).
    pub last: Option<SimTime>,
    /// Its Jobs' controller keys.
    pub jobs: BTreeSet<String>,
}

const MICROS: i64 = 1_000_000;

fn to_unix(t: SimTime) -> i64 {
    CRON_EPOCH_UNIX + t.0.div_euclid(MICROS)
}

fn from_unix(s: i64) -> SimTime {
    SimTime((s - CRON_EPOCH_UNIX) * MICROS)
}

/// The Job a CronJob's template makes (its pod template admitted as a Job's).
pub(super) fn job_of(cj: &Workload) -> Workload {
    let jt = cj.spec.job_template.clone().unwrap_or_default();
    Workload {
        api_version: "batch/v1".into(),
        kind: "Job".into(),
        metadata: jt.metadata,
        spec: jt.spec,
    }
}

impl Simulation {
    pub(super) fn reconcile_cronjob(&mut self, key: &str, obs: &mut dyn Observer) {
        let now = self.now;
        let Some(c) = self.controllers.ctls.get(key) else {
            return;
        };
        let Some(sched) = c
            .obj
            .spec
            .schedule
            .as_deref()
            .and_then(|s| CronSchedule::parse(s).ok())
        else {
            return;
        };
        let cj = c.obj.clone();
        // Its Jobs include those that name it as their controller (a dump's, created at t=0).
        let owned: Vec<String> = self
            .controllers
            .ctls
            .iter()
            .filter(|(_, j)| {
                j.kind == ObjectKind::Job
                    && j.obj.metadata.namespace == cj.metadata.namespace
                    && j.obj.metadata.owner_references.iter().any(|o| {
                        o.controller == Some(true)
                            && o.kind == "CronJob"
                            && o.name == cj.metadata.name
                    })
            })
            .map(|(k, _)| k.clone())
            .collect();
        let st = self.controllers.cron.entry(key.to_string()).or_default();
        st.jobs.extend(owned);
        let since = st.last.unwrap_or(st.created);
        // The most recent scheduled time in (since, now].
        let mut latest = None;
        let mut t = sched.next_after(to_unix(since));
        while let Some(s) = t.filter(|s| *s <= to_unix(now)) {
            latest = Some(s);
            t = sched.next_after(s);
        }
        if let Some(s) = latest {
            let at = from_unix(s);
            st.last = Some(at);
            let late = now.since(at).0 / MICROS;
            let in_time = cj.spec.starting_deadline_seconds.is_none_or(|d| late <= d);
            if cj.spec.suspend != Some(true) && in_time {
                self.run_cronjob(key, &cj, s, obs);
            }
        }
        if let Some(next) = t.map(from_unix) {
            if self.cfg.horizon.is_none_or(|h| next <= h) {
                self.queue_reconcile_at(key, next);
            }
        }
        self.cleanup_finished_jobs(key, &cj, obs);
    }

    /// Upstream's `cleanupFinishedJobs`: deletes the CronJob's oldest finished Jobs beyond its
    /// history limits.
    fn cleanup_finished_jobs(&mut self, key: &str, cj: &Workload, obs: &mut dyn Observer) {
        let Some(st) = self.controllers.cron.get(key) else {
            return;
        };
        let finished: Vec<FinishedJob> = st
            .jobs
            .iter()
            .filter_map(|k| {
                let j = self.controllers.ctls.get(k)?;
                j.finished.then(|| FinishedJob {
                    name: j.obj.metadata.name.clone(),
                    started_at: j.started_at,
                    succeeded: j.finished_at.is_some(),
                })
            })
            .collect();
        let doomed = oldest_beyond_limits(
            finished,
            cj.spec.successful_jobs_history_limit.unwrap_or(3),
            cj.spec.failed_jobs_history_limit.unwrap_or(1),
        );
        let ns = cj.metadata.namespace.clone();
        for name in doomed {
            let job_key = super::ctl_key(ObjectKind::Job, &ns, &name);
            if let Some(st) = self.controllers.cron.get_mut(key) {
                st.jobs.remove(&job_key);
            }
            let _ = self.delete_workload(ObjectKind::Job, &ns, &name, obs);
        }
    }

    /// One run of a CronJob at scheduled Unix second `s`.
    fn run_cronjob(&mut self, key: &str, cj: &Workload, s: i64, obs: &mut dyn Observer) {
        let ns = cj.metadata.namespace.clone();
        let jobs: Vec<String> = self
            .controllers
            .cron
            .get(key)
            .map(|st| st.jobs.iter().cloned().collect())
            .unwrap_or_default();
        let active: Vec<String> = jobs
            .into_iter()
            .filter(|k| self.controllers.ctls.get(k).is_some_and(|j| !j.finished))
            .collect();
        match cj.spec.concurrency_policy.as_deref() {
            Some("Forbid") if !active.is_empty() => return,
            Some("Replace") => {
                for k in &active {
                    if let Some(name) = self
                        .controllers
                        .ctls
                        .get(k)
                        .map(|j| j.obj.metadata.name.clone())
                    {
                        let _ = self.delete_workload(ObjectKind::Job, &ns, &name, obs);
                    }
                }
            }
            _ => {}
        }
        let mut job = job_of(cj);
        job.metadata.name = format!("{}-{}", cj.metadata.name, s.div_euclid(60));
        job.metadata.generate_name.clear();
        job.metadata.namespace = ns.clone();
        job.metadata.owner_references = vec![OwnerReference {
            api_version: "batch/v1".into(),
            kind: "CronJob".into(),
            name: cj.metadata.name.clone(),
            uid: cj.metadata.uid.clone(),
            controller: Some(true),
        }];
        let job_key = super::ctl_key(ObjectKind::Job, &ns, &job.metadata.name);
        if self.controllers.ctls.contains_key(&job_key) {
            return;
        }
        // The CronJob's factor is already in its template: the Job is not scaled again.
        if self
            .insert_workload(ObjectKind::Job, job, Some(1.0))
            .is_ok()
        {
            if let Some(st) = self.controllers.cron.get_mut(key) {
                st.jobs.insert(job_key);
            }
            if let Some(c) = self.controllers.ctls.get_mut(key) {
                c.created += 1;
            }
        }
    }
}

/// A finished Job of a CronJob, as its history clean-up sees it.
#[derive(Debug, Clone)]
struct FinishedJob {
    name: String,
    started_at: Option<SimTime>,
    /// Completed (else failed).
    succeeded: bool,
}

/// The names of the Jobs to delete: of the succeeded and of the failed Jobs apart, the oldest
/// beyond `keep_succeeded` and `keep_failed`, oldest first by start time (upstream's
/// `byJobStartTime`: a Job without a start time after those with one; equal times by name).
fn oldest_beyond_limits(
    jobs: Vec<FinishedJob>,
    keep_succeeded: i32,
    keep_failed: i32,
) -> Vec<String> {
    let (mut succeeded, mut failed): (Vec<FinishedJob>, Vec<FinishedJob>) =
        jobs.into_iter().partition(|j| j.succeeded);
    let mut doomed = Vec::new();
    for (list, keep) in [(&mut succeeded, keep_succeeded), (&mut failed, keep_failed)] {
        let excess = list.len().saturating_sub(keep.max(0) as usize);
        if excess == 0 {
            continue;
        }
        list.sort_by(|a, b| {
            (a.started_at.is_none(), a.started_at, &a.name).cmp(&(
                b.started_at.is_none(),
                b.started_at,
                &b.name,
            ))
        });
        doomed.extend(list.drain(..excess).map(|j| j.name));
    }
    doomed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(name: &str, started: Option<i64>, succeeded: bool) -> FinishedJob {
        FinishedJob {
            name: name.into(),
            started_at: started.map(SimTime::from_secs),
            succeeded,
        }
    }

    #[test]
    fn the_oldest_finished_jobs_beyond_each_limit_go() {
        let jobs = vec![
            job("d", Some(40), true),
            job("a", Some(10), true),
            job("c", Some(30), true),
            job("b", Some(20), true),
            job("f1", Some(15), false),
            job("f2", Some(25), false),
        ];
        assert_eq!(oldest_beyond_limits(jobs.clone(), 3, 1), ["a", "f1"]);
        assert_eq!(
            oldest_beyond_limits(jobs.clone(), 0, 0),
            ["a", "b", "c", "d", "f1", "f2"]
        );
        assert!(oldest_beyond_limits(jobs, 4, 2).is_empty());
    }

    #[test]
    fn jobs_without_a_start_time_go_last_and_ties_go_by_name() {
        let jobs = vec![
            job("z", None, true),
            job("y", Some(10), true),
            job("x", Some(10), true),
            job("w", None, true),
        ];
        assert_eq!(oldest_beyond_limits(jobs, 1, 1), ["x", "y", "w"]);
    }
}
