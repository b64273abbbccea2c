//! What the control plane's decisions look like in a run's outputs (issue 34): pod creations
//! refused by admission are counted in summary.json and listed in refused.csv and report.html;
//! pods ended by a deadline (a Job's `activeDeadlineSeconds`, a pod's own) carry the eviction
//! cause `deadline` in pods.csv; runs without either keep their outputs as they were.

use std::path::Path;
use std::process::Command;

fn run(dir: &Path, scenario: &str, files: &[(&str, &str)]) -> std::path::PathBuf {
    for (name, text) in files {
        std::fs::write(dir.join(name), text).unwrap();
    }
    let s = dir.join("s.yaml");
    std::fs::write(&s, scenario).unwrap();
    let out = dir.join("out");
    let o = Command::new(env!("CARGO_BIN_EXE_ksim"))
        .arg("run")
        .arg(&s)
        .args(["-q", "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
    out
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

const POOL: &str = "cluster:\n  pools: [{name: w, count: 1, template: {status: {capacity: {cpu: '4', memory: 16Gi, pods: '110'}}}}]\n";

/// The column `col` of pods.csv's row for the pod whose name starts with `prefix`.
fn pod_column(pods: &str, prefix: &str, col: &str) -> Vec<String> {
    let mut lines = pods.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
    let name = header.iter().position(|h| *h == "name").expect("name");
    let i = header
        .iter()
        .position(|h| *h == col)
        .unwrap_or_else(|| panic!("no column {col}: {header:?}"));
    lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|r| r[name].starts_with(prefix))
        .map(|r| r[i].to_string())
        .collect()
}

#[test]
fn refused_creations_are_counted_and_listed_with_owner_time_and_message() {
    let tmp = tempfile::tempdir().unwrap();
    let apps = "kind: List\nitems:
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: bad}
  spec:
    replicas: 1
    selector: {matchLabels: {app: bad}}
    template:
      metadata: {labels: {app: bad}}
      spec: {priorityClassName: missing, containers: [{name: c, resources: {requests: {cpu: 100m}}}]}
";
    let trace = r#"{"at": "5s", "kind": "CreatePod", "pod": {"metadata": {"name": "lonely"}, "spec": {"priorityClassName": "nope", "containers": [{"name": "c"}]}}}
"#;
    let scenario = format!(
        "name: s\nhorizon: 1m\n{POOL}workload:\n  controllers: [apps.yaml]\n  traces: [t.jsonl]\n"
    );
    let out = run(
        tmp.path(),
        &scenario,
        &[("apps.yaml", apps), ("t.jsonl", trace)],
    );
    let csv = read(&out.join("refused.csv"));
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("time_s,namespace,name,owner,message"));
    let rows: Vec<&str> = lines.collect();
    let lonely: Vec<&&str> = rows.iter().filter(|l| l.contains(",lonely,")).collect();
    assert_eq!(
        lonely,
        [
            &r#"5,default,lonely,,"pods ""lonely"" is forbidden: no PriorityClass with name nope was found""#
        ]
    );
    let bad: Vec<&&str> = rows
        .iter()
        .filter(|l| l.contains(",ReplicaSet/bad-"))
        .collect();
    // The ReplicaSet retries with its work queue's backoff: several refusals in a minute.
    assert!(bad.len() >= 5, "{csv}");
    assert!(
        bad[0].contains(",default,bad-")
            && bad[0].ends_with("no PriorityClass with name missing was found\""),
        "{}",
        bad[0]
    );
    let summary: serde_json::Value =
        serde_json::from_str(&read(&out.join("summary.json"))).unwrap();
    assert_eq!(
        summary["refused_creations"].as_u64(),
        Some(rows.len() as u64)
    );
    let html = read(&out.join("report.html"));
    assert!(
        html.contains("<h2>Refused pod creations</h2>"),
        "no section"
    );
    assert!(html.contains("no PriorityClass with name missing was found"));
    // No refused pod appears in pods.csv: it was never created.
    assert!(!read(&out.join("pods.csv")).contains("lonely"));
}

#[test]
fn a_run_without_refusals_or_evictions_writes_no_refused_csv_nor_cause_column() {
    let tmp = tempfile::tempdir().unwrap();
    let trace = r#"{"at": 0, "kind": "CreatePod", "pod": {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}, "runFor": "10s"}
"#;
    let scenario = format!("name: s\nhorizon: 1m\n{POOL}workload:\n  traces: [t.jsonl]\n");
    let out = run(tmp.path(), &scenario, &[("t.jsonl", trace)]);
    assert!(!out.join("refused.csv").exists());
    assert!(!read(&out.join("pods.csv")).contains("eviction_cause"));
    assert!(!read(&out.join("report.html")).contains("Refused pod creations"));
}

#[test]
fn pods_ended_by_a_deadline_have_eviction_cause_deadline() {
    let tmp = tempfile::tempdir().unwrap();
    // A Job whose deadline (40 s) comes before its pods' run time (5 min): its two pods are
    // deleted at the deadline. A pod with its own activeDeadlineSeconds (20 s) that would run
    // 5 min: the kubelet fails it 20 s after it started. A pod whose run time (10 s) ends
    // before its deadline succeeds.
    let apps = "kind: List\nitems:
- apiVersion: batch/v1
  kind: Job
  metadata: {name: dl}
  spec:
    parallelism: 2
    activeDeadlineSeconds: 40
    template:
      metadata: {annotations: {ksim.io/run-for: 5m}}
      spec: {restartPolicy: Never, containers: [{name: c, resources: {requests: {cpu: 100m}}}]}
";
    let trace = r#"{"at": 0, "kind": "CreatePod", "pod": {"metadata": {"name": "own"}, "spec": {"activeDeadlineSeconds": 20, "containers": [{"name": "c"}]}}, "runFor": "5m"}
{"at": 0, "kind": "CreatePod", "pod": {"metadata": {"name": "quick"}, "spec": {"activeDeadlineSeconds": 20, "containers": [{"name": "c"}]}}, "runFor": "10s"}
"#;
    let scenario = format!(
        "name: s\nhorizon: 10m\n{POOL}workload:\n  controllers: [apps.yaml]\n  traces: [t.jsonl]\n"
    );
    let out = run(
        tmp.path(),
        &scenario,
        &[("apps.yaml", apps), ("t.jsonl", trace)],
    );
    let pods = read(&out.join("pods.csv"));
    assert_eq!(
        pod_column(&pods, "dl-", "eviction_cause"),
        ["deadline", "deadline"],
        "{pods}"
    );
    assert_eq!(
        pod_column(&pods, "own", "eviction_cause"),
        ["deadline"],
        "{pods}"
    );
    assert_eq!(pod_column(&pods, "own", "outcome"), ["failed"], "{pods}");
    assert_eq!(pod_column(&pods, "quick", "eviction_cause"), [""], "{pods}");
    assert_eq!(
        pod_column(&pods, "quick", "outcome"),
        ["succeeded"],
        "{pods}"
    );
    // The pod's deadline counts from its start on the node (bound at once here).
    let fin: f64 = pod_column(&pods, "own", "finished_s")[0].parse().unwrap();
    assert!((20.0..21.0).contains(&fin), "{fin}");
}
