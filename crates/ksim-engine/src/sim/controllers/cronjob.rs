//! The CronJob controller (`pkg/controller/cronjob`, `syncCronJob`), as upstream v1.35 runs
//! it: at each time its `schedule` names, a Job from its `jobTemplate`, named as upstream names
//! it, `<cronjob>-<scheduled time in minutes since the Unix epoch>`, with a controller
//! `ownerReference` to the CronJob; the Job controller then runs it. See `docs/jobs.md`.
//!
//! Virtual time 0 is 2024-01-01T00:00:00Z (a Monday; `ksim_api::workloads::CRON_EPOCH_UNIX`).
//! Schedules are robfig/cron v3's standard parser ([`ksim_api::cron`]), in `spec.timeZone`
//! (an IANA zone; default UTC) as upstream's `formatSchedule` prefixes it. The controller
//! wakes `nextScheduleDelta` (100 ms) after each scheduled time (`nextScheduleTimeDuration`),
//! and after each change of one of its Jobs (one reaction delay). A CronJob needs a run
//! horizon (it would fire forever).
//!
//! - Each sync takes the most recent unmet scheduled time (`mostRecentScheduleTime`: since
//!   the last scheduled time, or the creation; more than 100 missed is upstream's
//!   `TooManyMissedTimes` warning, counted in `CronState::too_many_missed`, and the most
//!   recent still runs). `startingDeadlineSeconds`: times older than that are not considered,
//!   and a time more than that in the past is skipped (`MissSchedule`).
//! - `concurrencyPolicy`: `Allow` (default) creates the Job whatever runs; `Forbid` leaves the
//!   time unmet while a Job of the CronJob is unfinished, so the sync after that Job finishes
//!   runs the missed time (every 5 min with 7-min Jobs: 5, ~12, ~19, ~26 min); `Replace`
//!   deletes the unfinished Jobs (and their pods) and creates the new one.
//! - `suspend: true`: no Job; the times missed meanwhile stay unmet (the most recent runs at
//!   resume, unless too late).
//! - `successfulJobsHistoryLimit` (default 3) and `failedJobsHistoryLimit` (default 1): at each
//!   reconcile, the oldest finished Jobs beyond them are deleted (upstream's
//!   `cleanupFinishedJobs`: succeeded and failed Jobs apart, oldest by `status.startTime`,
//!   a Job without one last, ties by name). A deleted Job leaves no row in controllers.csv.
//!
//! Simplified: the CronJob's own row counts the Jobs it created; a replay of a dump restarts
//! the clock at the epoch (the dumped Jobs that name the CronJob as their controller count as
//! its Jobs for `Forbid` / `Replace` and its history, started when ksim's Job controller first
//! runs them); Kubernetes events (`MissSchedule`, `TooManyMissedTimes`) are not emitted.

use std::collections::BTreeSet;

use ksim_api::meta::OwnerReference;
use ksim_api::object::ObjectKind;
use ksim_api::workloads::{CronSchedule, Workload, CRON_EPOCH_UNIX};

use super::Simulation;
use crate::record::Observer;
use crate::time::{SimDuration, SimTime};

/// A CronJob's schedule state (`State::cron`).
#[derive(Debug, Clone, Default)]
pub(crate) struct CronState {
    /// When it was created; schedules count from then.
    pub created: SimTime,
    /// The last scheduled time it considered (ran or skipped).
    pub last: Option<SimTime>,
    /// Its Jobs' controller keys.
    pub jobs: BTreeSet<String>,
    /// Syncs that found more than 100 missed times (upstream's `TooManyMissedTimes` event).
    pub too_many_missed: u64,
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

/// The schedule a CronJob runs: upstream's `formatSchedule` (`TZ=<timeZone> <schedule>` when
/// `spec.timeZone` is set and the schedule names no zone itself).
pub(super) fn schedule_of(cj: &Workload) -> Option<CronSchedule> {
    let text = cj.spec.schedule.as_deref()?;
    let full = match &cj.spec.time_zone {
        Some(tz) if !text.contains("TZ") => format!("TZ={tz} {text}"),
        _ => text.to_string(),
    };
    CronSchedule::parse(&full).ok()
}

/// How many scheduled times were missed (`missedSchedulesType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Missed {
    None,
    Few,
    Many,
}

/// Upstream's `mostRecentScheduleTime` in Unix seconds: the earliest time considered (the last
/// scheduled time or the creation, raised to `now - startingDeadlineSeconds` when `deadline`
/// is given), the most recent scheduled time in `(earliest, now]`, and how many were missed
/// (estimated from the first two intervals, as upstream does). `Err` when two consecutive
/// times are less than a second apart.
pub(crate) fn most_recent_schedule_time(
    sched: &CronSchedule,
    earliest: i64,
    now: i64,
    deadline: Option<i64>,
) -> Result<(i64, Option<i64>, Missed), String> {
    let mut earliest = earliest;
    if let Some(d) = deadline {
        earliest = earliest.max(now - d);
    }
    let Some(t1) = sched.next(earliest) else {
        return Ok((earliest, None, Missed::None));
    };
    if now < t1 {
        return Ok((earliest, None, Missed::None));
    }
    let Some(t2) = sched.next(t1) else {
        return Ok((earliest, Some(t1), Missed::None));
    };
    if now < t2 {
        return Ok((earliest, Some(t1), Missed::None));
    }
    let between = t2 - t1;
    if between < 1 {
        return Err("time difference between two schedules is less than 1 second".into());
    }
    let missed = (now - t1) / between + 1;
    let potential_earliest = t1 + (missed - 2) * between;
    let mut most_recent = None;
    let mut t = sched.next(potential_earliest);
    while let Some(x) = t.filter(|x| *x <= now) {
        most_recent = Some(x);
        t = sched.next(x);
    }
    let kind = if missed > 100 {
        Missed::Many
    } else if missed > 1 {
        Missed::Few
    } else {
        Missed::None
    };
    Ok((earliest, most_recent, kind))
}

/// Upstream's `nextScheduleDelta`: the controller wakes this long after a scheduled time.
const NEXT_SCHEDULE_DELTA: i64 = 100_000;

impl Simulation {
    /// `syncCronJob`.
    pub(super) fn reconcile_cronjob(&mut self, key: &str, obs: &mut dyn Observer) {
        let now = self.now;
        let Some(c) = self.controllers.ctls.get(key) else {
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
        self.cleanup_finished_jobs(key, &cj, obs);
        if cj.spec.suspend == Some(true) {
            return;
        }
        let Some(sched) = schedule_of(&cj) else {
            return;
        };
        let Some(st) = self.controllers.cron.get(key) else {
            return;
        };
        let earliest = to_unix(st.last.unwrap_or(st.created));
        let last = st.last;
        let now_unix = to_unix(now);
        // `nextScheduleTime`: the most recent unmet time, within the starting deadline.
        let Ok((_, scheduled, missed)) = most_recent_schedule_time(
            &sched,
            earliest,
            now_unix,
            cj.spec.starting_deadline_seconds,
        ) else {
            return;
        };
        if missed == Missed::Many {
            if let Some(st) = self.controllers.cron.get_mut(key) {
                st.too_many_missed += 1;
            }
        }
        if let Some(s) = scheduled {
            let at = from_unix(s);
            let too_late = cj
                .spec
                .starting_deadline_seconds
                .is_some_and(|d| s + d < now_unix);
            if !too_late && last != Some(at) {
                self.run_cronjob(key, &cj, s, obs);
            }
        }
        // `nextScheduleTimeDuration`: the next time after the most recent (without the
        // deadline), plus `nextScheduleDelta`.
        let Some(st) = self.controllers.cron.get(key) else {
            return;
        };
        let earliest = to_unix(st.last.unwrap_or(st.created));
        let base = match most_recent_schedule_time(&sched, earliest, now_unix, None) {
            Ok((e, recent, _)) => recent.unwrap_or(e),
            Err(_) => return,
        };
        if let Some(next) = sched.next(base).map(from_unix) {
            let next = next + SimDuration::from_micros(NEXT_SCHEDULE_DELTA);
            if self.cfg.horizon.is_none_or(|h| next <= h) {
                self.queue_reconcile_at(key, next);
            }
        }
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
            // The scheduled time stays unmet: the sync after the active Job ends runs it.
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
        if let Some(st) = self.controllers.cron.get_mut(key) {
            st.last = Some(from_unix(s));
        }
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

/// `utils_test.go` `TestMostRecentScheduleTime` rows, as facts (times in Unix seconds from
/// the rows' wall clock).
#[cfg(test)]
mod missed_tests {
    use super::*;

    fn at(h: i64, m: i64) -> i64 {
        // 2016-05-19 (the upstream table's day) at h:m UTC.
        1_463_616_000 + h * 3600 + m * 60
    }

    #[test]
    fn most_recent_schedule_time_matches_upstream_table() {
        let hourly = CronSchedule::parse("0 * * * *").unwrap();
        let every10 = CronSchedule::parse("*/10 * * * *").unwrap();
        // Not past the first schedule yet.
        assert_eq!(
            most_recent_schedule_time(&hourly, at(10, 0), at(10, 30), None),
            Ok((at(10, 0), None, Missed::None))
        );
        // One schedule passed.
        assert_eq!(
            most_recent_schedule_time(&hourly, at(10, 0), at(11, 1), None),
            Ok((at(10, 0), Some(at(11, 0)), Missed::None))
        );
        // Several missed: the most recent, "few".
        assert_eq!(
            most_recent_schedule_time(&hourly, at(10, 0), at(13, 30), None),
            Ok((at(10, 0), Some(at(13, 0)), Missed::Few))
        );
        // More than 100 missed: "many", the most recent still given.
        let (_, recent, missed) =
            most_recent_schedule_time(&every10, at(0, 0), at(0, 0) + 86_400, None).unwrap();
        assert_eq!((recent, missed), (Some(at(0, 0) + 86_400), Missed::Many));
        // A starting deadline raises the earliest time considered.
        assert_eq!(
            most_recent_schedule_time(&hourly, at(10, 0), at(13, 30), Some(600)),
            Ok((at(13, 20), None, Missed::None))
        );
        assert_eq!(
            most_recent_schedule_time(&hourly, at(10, 0), at(13, 5), Some(600)),
            Ok((at(12, 55), Some(at(13, 0)), Missed::None))
        );
        // @every: rough count, exact most recent time.
        let every = CronSchedule::parse("@every 1h").unwrap();
        assert_eq!(
            most_recent_schedule_time(&every, at(10, 0), at(15, 10), None),
            Ok((at(10, 0), Some(at(15, 0)), Missed::Few))
        );
        // A schedule that never fires (31 Feb): nothing, no error.
        let never = CronSchedule::parse("59 23 31 2 *").unwrap();
        assert_eq!(
            most_recent_schedule_time(&never, at(10, 0), at(15, 10), None),
            Ok((at(10, 0), None, Missed::None))
        );
    }
}
