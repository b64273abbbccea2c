//! The Job and CronJob controllers and the controllers' timing model, asserted as a user would
//! notice them (issue 35's "Done when" points): which pods a Job creates, named how, when its
//! replacements come, when it fails; when a Forbid CronJob runs; how long a large scale-up
//! takes under the client rate limits.

use std::collections::BTreeMap;

use ksim_api::object::ApiObject;
use ksim_api::Node;
use ksim_engine::config::RunTimeDist;
use ksim_engine::{InputEvent, Outcome, Record, SimDuration, SimTime};
use serde_json::{json, Value};

mod common;
use common::{at, cfg, create, created, object, run};

fn node(name: &str, cpu: &str) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": {"cpu": cpu, "memory": "64Gi", "pods": "110"}}
    }))
    .expect("node")
}

/// A Job whose pods request `cpu`, run for `run_for` (if any), with extra `spec` fields.
fn job(name: &str, cpu: &str, run_for: Option<&str>, spec: Value) -> ApiObject {
    let mut ann = json!({});
    if let Some(r) = run_for {
        ann["ksim.io/run-for"] = json!(r);
    }
    let mut s = spec;
    let extra_ann = s
        .as_object_mut()
        .and_then(|m| m.remove("podAnnotations"))
        .unwrap_or(json!({}));
    if let (Some(a), Some(e)) = (ann.as_object_mut(), extra_ann.as_object()) {
        a.extend(e.clone());
    }
    let class = s
        .as_object_mut()
        .and_then(|m| m.remove("priorityClassName"));
    let mut pod = json!({
        "restartPolicy": "Never",
        "containers": [{"name": "main", "resources": {"requests": {"cpu": cpu}}}]
    });
    if let Some(c) = class {
        pod["priorityClassName"] = c;
    }
    s["template"] = json!({"metadata": {"annotations": ann}, "spec": pod});
    object(json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": s}))
}

fn ended(records: &[Record]) -> Vec<(SimTime, String, Outcome)> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::PodEnded {
                at, name, outcome, ..
            } => Some((*at, name.clone(), *outcome)),
            _ => None,
        })
        .collect()
}

/// The Record::Controller row of `name`: (succeeded, failed, completed_at).
fn row(records: &[Record], name: &str) -> Option<(u64, u64, Option<SimTime>)> {
    records.iter().find_map(|r| match r {
        Record::Controller {
            name: n,
            succeeded,
            failed,
            completed_at,
            ..
        } if n == name => Some((*succeeded, *failed, *completed_at)),
        _ => None,
    })
}

fn secs(t: SimTime) -> f64 {
    t.as_secs_f64()
}

/// The Job `name`'s terminal condition in its Record::Controller: (type, reason, seconds).
fn condition(records: &[Record], name: &str) -> Option<(String, String, f64)> {
    records.iter().find_map(|r| match r {
        Record::Controller {
            name: n,
            condition: Some(c),
            ..
        } if n == name => Some((c.type_.clone(), c.reason.clone(), secs(c.at))),
        _ => None,
    })
}

/// When pod `name` was bound.
fn bound_at(records: &[Record], name: &str) -> Option<SimTime> {
    records.iter().find_map(|r| match r {
        Record::PodBound { at, name: n, .. } if n == name => Some(*at),
        _ => None,
    })
}

#[test]
fn a_suspended_job_creates_no_pod() {
    let r = run(
        cfg(300),
        vec![node("n0", "8")],
        vec![at(
            0.0,
            create(job(
                "batch",
                "1",
                Some("10s"),
                json!({"parallelism": 3, "completions": 3, "suspend": true}),
            )),
        )],
    );
    assert!(created(&r).is_empty(), "{:?}", created(&r));
    assert_eq!(row(&r, "batch"), Some((0, 0, None)));
}

#[test]
fn an_indexed_jobs_pods_are_named_job_index_suffix() {
    let r = run(
        cfg(300),
        vec![node("n0", "8")],
        vec![at(
            0.0,
            create(job(
                "idx",
                "1",
                Some("10s"),
                json!({"completionMode": "Indexed", "completions": 5, "parallelism": 2}),
            )),
        )],
    );
    let names: Vec<String> = created(&r).into_iter().map(|(_, n)| n).collect();
    assert_eq!(names.len(), 5, "{names:?}");
    for (i, n) in names.iter().enumerate() {
        let parts: Vec<&str> = n.split('-').collect();
        assert_eq!(parts.len(), 3, "{n}");
        assert_eq!(parts[0], "idx");
        assert_eq!(
            parts[1],
            i.to_string(),
            "lowest pending index first: {names:?}"
        );
        assert_eq!(parts[2].len(), 5);
    }
    let (succeeded, failed, done) = row(&r, "idx").expect("row");
    assert_eq!((succeeded, failed), (5, 0));
    let (kind, reason, at) = condition(&r, "idx").expect("condition");
    assert_eq!(
        (kind.as_str(), reason.as_str()),
        ("Complete", "CompletionsReached")
    );
    assert_eq!(
        Some(at),
        done.map(secs),
        "completed_s is the Complete condition's time"
    );
    // Two at a time, 10 s each: three rounds.
    assert!(
        done.is_some_and(|t| secs(t) > 30.0 && secs(t) < 31.0),
        "{done:?}"
    );
}

fn class(name: &str, value: i32) -> ApiObject {
    object(json!({
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": name}, "value": value
    }))
}

fn pod(name: &str, cpu: &str, class: &str) -> InputEvent {
    InputEvent::CreatePod {
        pod: Box::new(
            serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": "default"},
                "spec": {"priorityClassName": class,
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
            }))
            .expect("pod"),
        ),
        run_for: None,
    }
}

#[test]
fn a_backoff_limit_0_job_whose_pod_is_preempted_fails_with_no_replacement() {
    let r = run(
        cfg(300),
        vec![node("n0", "4")],
        vec![
            at(0.0, create(class("low", 10))),
            at(0.0, create(class("high", 1000))),
            at(
                0.0,
                create(job(
                    "b0",
                    "3",
                    Some("1h"),
                    json!({"backoffLimit": 0, "priorityClassName": "low"}),
                )),
            ),
            at(30.0, pod("urgent", "3", "high")),
        ],
    );
    let jobs: Vec<_> = created(&r)
        .into_iter()
        .filter(|(_, n)| n.starts_with("b0-"))
        .collect();
    assert_eq!(jobs.len(), 1, "no replacement: {jobs:?}");
    let e = ended(&r);
    assert!(
        e.iter()
            .any(|(_, n, o)| n == &jobs[0].1 && *o == Outcome::Preempted),
        "{e:?}"
    );
    let (succeeded, failed, done) = row(&r, "b0").expect("row");
    assert_eq!(
        (succeeded, failed, done),
        (0, 1, None),
        "failed, not completed"
    );
    let (kind, reason, at) = condition(&r, "b0").expect("condition");
    assert_eq!(
        (kind.as_str(), reason.as_str()),
        ("Failed", "BackoffLimitExceeded")
    );
    // Set once the preempted pod, counted failed as soon as it started terminating, is gone.
    let victim_end = e
        .iter()
        .find(|(_, n, _)| n == &jobs[0].1)
        .map(|x| secs(x.0));
    assert!(
        victim_end.is_some_and(|v| at > v && at < v + 0.1),
        "{at} {victim_end:?}"
    );
}

/// activeDeadlineSeconds: 60. The deadline counts from the Job's start (its first sync, one
/// informer delay in: 0.01 s); at 60.01 s the Job reaches its FailureTarget, counts its two
/// running pods as failed and deletes them; each keeps its node for its 30 s grace period (a
/// 2-cpu pod created at 61 s binds only when they are gone, at 90.01 s); the `Failed`
/// condition (`DeadlineExceeded`) is set one informer delay after the last is gone.
#[test]
fn active_deadline_seconds_ends_the_pods_and_fails_the_job() {
    let r = run(
        cfg(600),
        vec![node("n0", "2")],
        vec![
            at(
                0.0,
                create(job(
                    "dl",
                    "1",
                    None,
                    json!({"parallelism": 2, "activeDeadlineSeconds": 60}),
                )),
            ),
            at(61.0, pod("next", "2", "")),
        ],
    );
    let c = created(&r);
    assert_eq!(c.iter().filter(|(_, n)| n.starts_with("dl-")).count(), 2);
    let e = ended(&r);
    assert_eq!(e.len(), 2, "{e:?}");
    for (t, _, o) in &e {
        assert_eq!(*o, Outcome::Deleted);
        assert!(
            (secs(*t) - 90.01).abs() < 1e-6,
            "60.01 s + 30 s grace: {t:?}"
        );
    }
    let next = bound_at(&r, "next").expect("next binds");
    assert!(
        (90.01..90.1).contains(&secs(next)),
        "the deleted pods hold the node until their grace ends: {next:?}"
    );
    assert_eq!(
        row(&r, "dl"),
        Some((0, 2, None)),
        "both killed pods count as failed"
    );
    assert_eq!(
        condition(&r, "dl"),
        Some(("Failed".into(), "DeadlineExceeded".into(), 90.02))
    );
    // Each was deleted because of the deadline: its eviction cause (pods.csv) is `deadline`,
    // recorded when its deletion starts.
    let evicted: Vec<(f64, String)> = r
        .iter()
        .filter_map(|x| match x {
            Record::PodEvicted { at, cause, .. } => Some((secs(*at), cause.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(evicted.len(), 2, "{evicted:?}");
    for (t, cause) in &evicted {
        assert_eq!(cause, "deadline");
        assert!(*t >= 60.0 && *t <= 61.0, "{t}");
    }
    // Nothing after the failure.
    assert!(c
        .iter()
        .filter(|(_, n)| n.starts_with("dl-"))
        .all(|(t, _)| secs(*t) < 1.0));
}

#[test]
fn replacements_after_a_node_loss_wait_for_the_failure_backoff() {
    // One pod per node; n0 goes at 30 s with its pod.
    let r = run(
        cfg(600),
        vec![node("n0", "8"), node("n1", "8"), node("n2", "8")],
        vec![
            at(
                0.0,
                create(job(
                    "lost",
                    "5",
                    Some("1h"),
                    json!({"parallelism": 3, "completions": 3}),
                )),
            ),
            at(30.0, InputEvent::RemoveNode { name: "n0".into() }),
        ],
    );
    let c = created(&r);
    let later: Vec<_> = c.iter().filter(|(t, _)| secs(*t) > 1.0).collect();
    assert_eq!(later.len(), 1, "{c:?}");
    let t = secs(later[0].0);
    assert!(
        (40.0..41.0).contains(&t),
        "no sooner than 10 s after the loss: {t}"
    );
    let (_, failed, _) = row(&r, "lost").expect("row");
    assert_eq!(failed, 1, "the lost pod counts as a failure");
}

#[test]
fn failures_back_off_10s_doubling() {
    // Every pod fails 5 s after it starts (exit code 1).
    let r = run(
        cfg(600),
        vec![node("n0", "8")],
        vec![at(
            0.0,
            create(job(
                "flaky",
                "1",
                Some("5s"),
                json!({"backoffLimit": 3, "podAnnotations": {"ksim.io/exit-code": "1"}}),
            )),
        )],
    );
    let c: Vec<f64> = created(&r).iter().map(|(t, _)| secs(*t)).collect();
    assert_eq!(c.len(), 4, "{c:?}");
    // Failures at c+5: replacements 10, 20, 40 s after each.
    let gaps: Vec<f64> = c.windows(2).map(|w| w[1] - (w[0] + 5.0)).collect();
    for (g, want) in gaps.iter().zip([10.0, 20.0, 40.0]) {
        assert!((g - want).abs() < 0.2, "{gaps:?}");
    }
    assert_eq!(row(&r, "flaky"), Some((0, 4, None)));
}

#[test]
fn a_job_without_completions_lets_its_third_pod_run() {
    // Two pods fit at once; the third waits, then runs after the first success.
    let r = run(
        cfg(600),
        vec![node("n0", "4")],
        vec![at(
            0.0,
            create(job("wq", "2", Some("60s"), json!({"parallelism": 3}))),
        )],
    );
    let c = created(&r);
    assert_eq!(c.len(), 3, "{c:?}");
    let e = ended(&r);
    assert_eq!(e.len(), 3, "{e:?}");
    assert!(e.iter().all(|(_, _, o)| *o == Outcome::Succeeded), "{e:?}");
    let (succeeded, failed, done) = row(&r, "wq").expect("row");
    assert_eq!((succeeded, failed), (3, 0));
    assert!(done.is_some_and(|t| secs(t) > 120.0), "{done:?}");
}

#[test]
fn pod_failure_policy_fail_job_and_ignore() {
    let policy = |action: &str| {
        json!({"backoffLimit": 6, "podReplacementPolicy": "Failed",
            "podAnnotations": {"ksim.io/exit-code": "42"},
            "podFailurePolicy": {"rules": [{"action": action,
                "onExitCodes": {"operator": "In", "values": [42]}}]}})
    };
    let r = run(
        cfg(120),
        vec![node("n0", "8")],
        vec![
            at(0.0, create(job("fj", "1", Some("5s"), policy("FailJob")))),
            at(0.0, create(job("ig", "1", Some("5s"), policy("Ignore")))),
        ],
    );
    let c = created(&r);
    assert_eq!(c.iter().filter(|(_, n)| n.starts_with("fj-")).count(), 1);
    assert_eq!(row(&r, "fj"), Some((0, 1, None)));
    assert_eq!(
        condition(&r, "fj").map(|c| c.1),
        Some("PodFailurePolicy".to_string())
    );
    assert_eq!(condition(&r, "ig"), None, "still running");
    // Ignored failures are not counted and wait for no backoff: a pod every ~5 s.
    let ig = c.iter().filter(|(_, n)| n.starts_with("ig-")).count();
    assert!(ig >= 20, "{ig}");
    assert_eq!(row(&r, "ig").map(|x| x.1), Some(0));
}

#[test]
fn ttl_after_finished_deletes_the_job() {
    let r = run(
        cfg(300),
        vec![node("n0", "8")],
        vec![
            at(
                0.0,
                create(job(
                    "ttl",
                    "1",
                    Some("10s"),
                    json!({"ttlSecondsAfterFinished": 30}),
                )),
            ),
            at(0.0, create(job("keep", "1", Some("10s"), json!({})))),
        ],
    );
    assert!(row(&r, "ttl").is_none(), "deleted 30 s after it completed");
    assert!(row(&r, "keep").is_some_and(|x| x.2.is_some()));
}

#[test]
fn run_times_come_from_the_scenario_distribution_when_the_template_has_none() {
    let mut c = cfg(600);
    c.controller_run_times.0.insert(
        "Job/default/etl".into(),
        RunTimeDist::Fixed(SimDuration::from_secs(42)),
    );
    let r = run(
        c,
        vec![node("n0", "8")],
        vec![at(
            0.0,
            create(job(
                "etl",
                "1",
                None,
                json!({"completions": 2, "parallelism": 2}),
            )),
        )],
    );
    let e = ended(&r);
    assert_eq!(e.len(), 2);
    for (t, _, o) in &e {
        assert_eq!(*o, Outcome::Succeeded);
        assert!((secs(*t) - 42.0).abs() < 0.2, "{t:?}");
    }
}

fn cronjob(name: &str, schedule: &str, policy: &str, run_for: &str) -> ApiObject {
    object(json!({
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name},
        "spec": {"schedule": schedule, "concurrencyPolicy": policy,
            "jobTemplate": {"spec": {"template": {
                "metadata": {"annotations": {"ksim.io/run-for": run_for}},
                "spec": {"restartPolicy": "Never",
                    "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}}}
    }))
}

#[test]
fn a_forbid_cronjob_runs_the_missed_slot_when_the_previous_job_ends() {
    let r = run(
        cfg(29 * 60),
        vec![node("n0", "8")],
        vec![at(
            0.0,
            create(cronjob("every5", "*/5 * * * *", "Forbid", "7m")),
        )],
    );
    let starts: Vec<f64> = created(&r).iter().map(|(t, _)| secs(*t) / 60.0).collect();
    assert_eq!(starts.len(), 4, "{starts:?}");
    for (s, want) in starts.iter().zip([5.0, 12.0, 19.0, 26.0]) {
        assert!(*s >= want && *s < want + 0.05, "{starts:?}");
    }
}

#[test]
fn cronjobs_run_in_their_time_zone_and_at_every() {
    // 2024-01-01 00:00 UTC is 01:00 in Paris: "0 2 * * *" there is 01:00 UTC.
    let mut paris = cronjob("paris", "0 2 * * *", "Allow", "1m");
    if let ApiObject::CronJob(w) = &mut paris {
        w.spec.time_zone = Some("Europe/Paris".into());
    }
    let r = run(
        cfg(4 * 3600),
        vec![node("n0", "8")],
        vec![
            at(0.0, create(paris)),
            at(0.0, create(cronjob("every", "@every 90m", "Allow", "1m"))),
        ],
    );
    let c = created(&r);
    let times = |p: &str| -> Vec<f64> {
        c.iter()
            .filter(|(_, n)| n.starts_with(p))
            .map(|(t, _)| secs(*t) / 60.0)
            .collect()
    };
    let p = times("paris-");
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(p[0] >= 60.0 && p[0] < 60.05, "{p:?}");
    let e = times("every-");
    assert_eq!(e.len(), 2, "{e:?}");
    assert!(
        e[0] >= 90.0 && e[0] < 90.05 && e[1] >= 180.0 && e[1] < 180.05,
        "{e:?}"
    );
}

#[test]
fn a_600_replica_scale_up_takes_about_30_s() {
    let rs = object(json!({
        "kind": "ReplicaSet", "metadata": {"name": "big"},
        "spec": {"replicas": 600, "selector": {"matchLabels": {"app": "big"}},
            "template": {"metadata": {"labels": {"app": "big"}},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "10m"}}}]}}}
    }));
    let nodes: Vec<Node> = (0..20).map(|i| node(&format!("n{i}"), "32")).collect();
    let r = run(cfg(120), nodes, vec![at(0.0, create(rs))]);
    let c = created(&r);
    assert_eq!(c.len(), 600);
    let first = secs(c[0].0);
    let last = secs(c[599].0);
    // kube-api-burst 30 at once, then 20 per second (kube-api-qps): 30 + 570/20 = 28.5 s.
    assert!(first < 0.1, "{first}");
    assert!((27.0..=31.0).contains(&last), "{last}");
    let by_second: BTreeMap<i64, usize> = c.iter().fold(BTreeMap::new(), |mut m, (t, _)| {
        *m.entry(t.whole_secs()).or_default() += 1;
        m
    });
    assert_eq!(by_second[&0], 30 + 20 - 1, "the burst, then 20 per second");
    assert!(
        by_second.values().skip(1).all(|n| *n <= 20),
        "{by_second:?}"
    );
    // The old flat delay, when asked for: all at once, 1 s in.
    let mut flat = cfg(120);
    flat.controller_delay = Some(SimDuration::from_secs(1));
    let rs = object(json!({
        "kind": "ReplicaSet", "metadata": {"name": "big"},
        "spec": {"replicas": 600, "selector": {"matchLabels": {"app": "big"}},
            "template": {"metadata": {"labels": {"app": "big"}},
                "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "10m"}}}]}}}
    }));
    let nodes: Vec<Node> = (0..20).map(|i| node(&format!("n{i}"), "32")).collect();
    let r = run(flat, nodes, vec![at(0.0, create(rs))]);
    assert!(created(&r).iter().all(|(t, _)| *t == SimTime::from_secs(1)));
}
