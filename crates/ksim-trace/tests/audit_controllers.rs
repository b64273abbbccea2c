//! Audit-log import of workload controllers and PriorityClasses (issue 17): the hand-written
//! log `fixtures/audit-controllers.log` (JSON lines as kube-apiserver's log backend writes them)
//! holds a Deployment's create, its controller's ReplicaSet and pods, a scale, a StatefulSet
//! logged at level Metadata, a Job logged at level Request, a DaemonSet, status updates, an
//! update of a Deployment created before the log, a failed scale, a second Deployment whose
//! ReplicaSet's create is logged at level Metadata, and the first Deployment's delete.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

mod common;

use common::audit_line;
use ksim_engine::config::EngineConfig;
use ksim_engine::{InputEvent, Outcome, Record, SimTime, Simulation, TimedEvent, VecSource};
use ksim_scheduler::framework::Registry;
use ksim_scheduler::node_info::ClusterObjects;
use ksim_trace::{import, load_nodes, ImportFormat, ImportOptions, NativeReader};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/audit-controllers.log")
}

fn events(p: &Path) -> Vec<TimedEvent> {
    NativeReader::open(p)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

/// What a user reads off a run: per owner (`kind/name`, "" for plain pods), the pods bound,
/// and how the pods ended.
#[derive(Default, Debug)]
struct Run {
    bound_by_owner: BTreeMap<String, usize>,
    ended: BTreeMap<String, Vec<Outcome>>,
    job_succeeded: u64,
}

fn run(dir: &Path, horizon_secs: i64) -> Run {
    let sum_nodes = load_nodes(&dir.join("nodes.yaml")).unwrap();
    let cfg = EngineConfig {
        seed: 1,
        horizon: Some(SimTime::from_secs(horizon_secs)),
        ..Default::default()
    };
    let mut sim = Simulation::new(
        cfg,
        &Default::default(),
        &Registry::in_tree(),
        sum_nodes,
        ClusterObjects::default(),
    )
    .unwrap();
    sim.add_source(Box::new(VecSource::new(events(&dir.join("trace.jsonl")))))
        .unwrap();
    let mut owner: BTreeMap<String, String> = BTreeMap::new();
    let mut out = Run::default();
    sim.run(&mut |r: &Record| match r {
        Record::PodCreated {
            namespace,
            name,
            owner_kind,
            owner_name,
            ..
        } => {
            let o = if owner_kind.is_empty() {
                String::new()
            } else {
                format!("{owner_kind}/{owner_name}")
            };
            owner.insert(format!("{namespace}/{name}"), o);
        }
        Record::PodBound {
            namespace, name, ..
        } => {
            let o = owner[&format!("{namespace}/{name}")].clone();
            *out.bound_by_owner.entry(o).or_default() += 1;
        }
        Record::PodEnded {
            namespace,
            name,
            outcome,
            ..
        } => {
            let o = owner[&format!("{namespace}/{name}")].clone();
            out.ended.entry(o).or_default().push(*outcome);
        }
        Record::Controller {
            kind, succeeded, ..
        } if kind == "Job" => out.job_succeeded = *succeeded,
        _ => {}
    })
    .unwrap();
    out
}

#[test]
fn audit_log_controllers_become_object_events_and_their_pods_are_not_doubled() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let sum = import(
        ImportFormat::AuditLog,
        &[fixture()],
        &out,
        &ImportOptions::default(),
    )
    .unwrap();
    assert_eq!(sum.nodes, 2, "n1 and n2 existed before the log");
    let evs = events(&sum.trace_file);
    let got: Vec<(f64, String)> = evs
        .iter()
        .map(|e| {
            let what = match &e.event {
                InputEvent::CreateObject { object } | InputEvent::UpdateObject { object } => {
                    format!("{} {} {}", e.event.kind(), object.kind(), object.key())
                }
                InputEvent::DeleteObject {
                    object_kind,
                    namespace,
                    name,
                } => format!("DeleteObject {object_kind} {namespace}/{name}"),
                InputEvent::CreatePod { pod, .. } => format!("CreatePod {}", pod.key()),
                other => other.kind().to_string(),
            };
            (e.at.as_secs_f64(), what)
        })
        .collect();
    let want: Vec<(f64, String)> = [
        (1.0, "CreateObject PriorityClass batch-low"),
        (2.0, "CreateObject Deployment default/web"),
        (10.0, "UpdateObject Deployment default/web"),
        (12.5, "CreatePod default/db-0"),
        (15.0, "CreateObject Job default/pi"),
        (20.0, "CreateObject DaemonSet kube-system/logs"),
        (37.0, "CreateObject Deployment default/api"),
        (50.0, "DeleteObject Deployment default/web"),
    ]
    .into_iter()
    .map(|(t, s)| (t, s.to_string()))
    .collect();
    assert_eq!(got, want);
    // The scale's replicas, on the object created at t=2 s (status and managedFields dropped).
    let InputEvent::UpdateObject { object } = &evs[2].event else {
        panic!("{:?}", evs[2])
    };
    let v = object.to_value();
    assert_eq!(v.pointer("/spec/replicas"), Some(&serde_json::json!(4)));
    assert_eq!(
        v.pointer("/spec/template/spec/containers/0/image"),
        Some(&serde_json::json!("nginx:1.25"))
    );
    assert!(v.pointer("/metadata/managedFields").is_none());

    // Nothing dropped silently: every skipped record is in the import table with its reason.
    let skipped: Vec<(&str, u64)> = sum.skipped.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    for (reason, n) in [
        (
            "statefulsets create without object (audit level Metadata)",
            1,
        ),
        (
            "pod create by an imported controller (ksim's controller creates its own)",
            5,
        ),
        (
            "ReplicaSet create by an imported Deployment (ksim's Deployment creates its own)",
            1,
        ),
        (
            "ReplicaSet update by an imported Deployment (ksim's Deployment manages its own)",
            1,
        ),
        ("binding of a pod of an imported controller", 1),
        (
            "delete of a pod of an imported controller (ksim's controller manages its pods)",
            1,
        ),
        ("deployments update without spec change", 1),
        (
            "deployments/status update (the simulated controller keeps its own status)",
            1,
        ),
        (
            "daemonsets/status update (the simulated controller keeps its own status)",
            1,
        ),
        (
            "update of a Deployment created before the log (its earlier state is unknown)",
            1,
        ),
        ("request failed (non-2xx response)", 1),
        ("read-only verb (get/list/watch)", 1),
    ] {
        assert_eq!(
            sum.skipped.get(reason).copied(),
            Some(n),
            "{reason}: {skipped:?}"
        );
    }

    // Replayed: the Deployment runs 4 pods after the scale, not 4 + the log's 2; the DaemonSet
    // one per node; the StatefulSet's pod (its controller not imported) as a plain pod; the
    // Job its two completions, one at a time.
    let before_delete = run(&out, 45);
    assert_eq!(before_delete.bound_by_owner.get("Deployment/web"), None);
    let web: usize = before_delete
        .bound_by_owner
        .iter()
        .filter(|(o, _)| o.starts_with("ReplicaSet/web-"))
        .map(|(_, n)| n)
        .sum();
    assert_eq!(web, 4, "{before_delete:?}");
    assert_eq!(before_delete.bound_by_owner["DaemonSet/logs"], 2);
    // api: its ReplicaSet's create has no object (level Metadata), its pod is still known as
    // the Deployment's by `api-<pod-template-hash>`: 1 replica, not 2.
    let api: usize = before_delete
        .bound_by_owner
        .iter()
        .filter(|(o, _)| o.starts_with("ReplicaSet/api-"))
        .map(|(_, n)| n)
        .sum();
    assert_eq!(api, 1, "{before_delete:?}");
    assert_eq!(before_delete.bound_by_owner.len(), 5, "{before_delete:?}");
    assert_eq!(before_delete.bound_by_owner["StatefulSet/db"], 1);
    assert_eq!(before_delete.bound_by_owner["Job/pi"], 2);
    assert_eq!(before_delete.job_succeeded, 2);

    // The Deployment's delete at t=50 s takes its pods with it. Deleted pods terminate
    // gracefully (terminationGracePeriodSeconds, 30 s here), so they end at ~80 s: at 70 s
    // they are still terminating and none has ended yet. Run past the grace period.
    let after = run(&out, 90);
    let web_ended: Vec<Outcome> = after
        .ended
        .iter()
        .filter(|(o, _)| o.starts_with("ReplicaSet/web-"))
        .flat_map(|(_, v)| v.iter().copied())
        .collect();
    assert_eq!(web_ended.len(), 4, "{after:?}");
    assert!(
        web_ended.iter().all(|o| *o == Outcome::Deleted),
        "{after:?}"
    );
}

#[test]
fn audit_log_scale_to_a_negative_count_is_an_error_naming_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture()).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    // The failed scale (422) made to look successful: malformed input, not a skip.
    let i = lines
        .iter()
        .position(|l| l.contains("\"replicas\":-1"))
        .unwrap();
    lines[i] = lines[i]
        .replace("\"code\":422", "\"code\":200")
        .replace(
            r#""responseObject":{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Invalid","code":200}"#,
            r#""responseObject":{"kind":"Scale","apiVersion":"autoscaling/v1","spec":{"replicas":-1}}"#,
        );
    let p = dir.path().join("audit.log");
    std::fs::write(&p, lines.join("\n")).unwrap();
    let err = import(
        ImportFormat::AuditLog,
        std::slice::from_ref(&p),
        &dir.path().join("out"),
        &ImportOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with(&format!(
            "{}:{}: responseObject.spec.replicas",
            p.display(),
            i + 1
        )),
        "{err}"
    );
    assert!(err.contains("-1"), "{err}");
}

/// A CronJob in the log: its create becomes the CronJob's CreateObject; the Jobs it created,
/// their pods, bindings, status updates and deletions are skipped (ksim's CronJob creates its
/// own Jobs, and their Job controllers the pods), each under its reason. A Job whose CronJob
/// was created before the log is imported as a Job, as before.
#[test]
fn audit_log_cronjob_imports_and_its_jobs_and_pods_are_not_doubled() {
    let line = |n: u32, verb: &str, resource: &str, sub: &str, name: &str, obj: &str| {
        let ts = format!("2024-05-01T10:00:{n:02}.000Z");
        audit_line(&ts, verb, resource, sub, "default", name, obj)
    };
    let template = r#"{"template":{"metadata":{"annotations":{"ksim.io/run-for":"5s"}},"spec":{"restartPolicy":"Never","containers":[{"name":"c","resources":{"requests":{"cpu":"100m"}}}]}}}"#;
    let cronjob = format!(
        r#"{{"apiVersion":"batch/v1","kind":"CronJob","metadata":{{"name":"nightly","namespace":"default"}},"spec":{{"schedule":"*/5 * * * *","jobTemplate":{{"spec":{template}}}}}}}"#
    );
    let job = |name: &str, owner: &str| {
        format!(
            r#"{{"apiVersion":"batch/v1","kind":"Job","metadata":{{"name":"{name}","namespace":"default","ownerReferences":[{{"apiVersion":"batch/v1","kind":"CronJob","name":"{owner}","uid":"u","controller":true}}]}},"spec":{template}}}"#
        )
    };
    let pod = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"nightly-28585320-abcde","namespace":"default","ownerReferences":[{"apiVersion":"batch/v1","kind":"Job","name":"nightly-28585320","uid":"j","controller":true}]},"spec":{"restartPolicy":"Never","containers":[{"name":"c","resources":{"requests":{"cpu":"100m"}}}]}}"#;
    let binding = r#"{"apiVersion":"v1","kind":"Binding","metadata":{"name":"nightly-28585320-abcde","namespace":"default"},"target":{"kind":"Node","name":"n1"}}"#;
    let nightly = job("nightly-28585320", "nightly");
    let lines = [
        line(1, "create", "cronjobs", "", "nightly", &cronjob),
        line(2, "create", "jobs", "", "nightly-28585320", &nightly),
        line(3, "create", "pods", "", "nightly-28585320-abcde", pod),
        line(
            4,
            "create",
            "pods",
            "binding",
            "nightly-28585320-abcde",
            binding,
        ),
        line(5, "update", "jobs", "status", "nightly-28585320", &nightly),
        line(6, "delete", "jobs", "", "nightly-28585320", &nightly),
        line(
            7,
            "create",
            "jobs",
            "",
            "weekly-1",
            &job("weekly-1", "weekly"),
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("audit.log");
    std::fs::write(&p, lines.join("\n")).unwrap();
    let sum = import(
        ImportFormat::AuditLog,
        std::slice::from_ref(&p),
        &dir.path().join("out"),
        &ImportOptions::default(),
    )
    .unwrap();
    let got: Vec<String> = events(&sum.trace_file)
        .iter()
        .map(|e| match &e.event {
            InputEvent::CreateObject { object } => {
                format!("CreateObject {} {}", object.kind(), object.key())
            }
            other => other.kind().to_string(),
        })
        .collect();
    assert_eq!(
        got,
        [
            "CreateObject CronJob default/nightly",
            "CreateObject Job default/weekly-1"
        ]
    );
    for reason in [
        "Job create by an imported CronJob (ksim's CronJob creates its own)",
        "pod create by an imported controller (ksim's controller creates its own)",
        "binding of a pod of an imported controller",
        "Job delete by an imported CronJob (ksim's CronJob manages its own)",
    ] {
        assert_eq!(
            sum.skipped.get(reason).copied(),
            Some(1),
            "{reason}: {:?}",
            sum.skipped
        );
    }
    assert_eq!(sum.skipped.values().sum::<u64>(), 5, "{:?}", sum.skipped);
}
