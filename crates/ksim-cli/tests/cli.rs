//! The `ksim` binary as a user meets it: a run writes every output and is byte-for-byte
//! reproducible by seed, `ksim conformance` ends with the plain count line, and bad input gets a
//! clear error naming file, line and field with a non-zero exit.

use std::path::{Path, PathBuf};
use std::process::Command;

fn ksim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ksim"))
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const NODES: &str = r#"{"apiVersion":"v1","kind":"List","items":[
 {"kind":"Node","metadata":{"name":"n1","labels":{"topology.kubernetes.io/zone":"a"}},"status":{"allocatable":{"cpu":"4","memory":"16Gi","pods":"110"}}},
 {"kind":"Node","metadata":{"name":"n2","labels":{"topology.kubernetes.io/zone":"b"}},"status":{"allocatable":{"cpu":"4","memory":"16Gi","pods":"110"}}},
 {"kind":"Node","metadata":{"name":"n3","labels":{"topology.kubernetes.io/zone":"a"}},"status":{"allocatable":{"cpu":"8","memory":"32Gi","pods":"110"}}}]}"#;

fn trace(n: usize) -> String {
    let mut s = String::new();
    for i in 0..n {
        let cpu = ["500m", "1", "1500m", "3"][i % 4];
        let prio = if i % 13 == 12 { 1000 } else { 0 };
        s.push_str(&format!(
            "{{\"at\": \"{}s\", \"kind\": \"CreatePod\", \"runFor\": \"{}s\", \"pod\": {{\"metadata\": {{\"name\": \"p{i}\"}}, \"spec\": {{\"priority\": {prio}, \"containers\": [{{\"name\": \"c\", \"resources\": {{\"requests\": {{\"cpu\": \"{cpu}\", \"memory\": \"1Gi\"}}}}}}]}}}}}}\n",
            i * 3,
            30 + (i * 17) % 200
        ));
    }
    s
}

fn run_into(dir: &Path, seed: &str) {
    let out = ksim()
        .args(["run", "--nodes"])
        .arg(dir.join("nodes.json"))
        .arg("--trace")
        .arg(dir.join("trace.jsonl"))
        .args(["--seed", seed, "--until", "20m", "-q", "--out"])
        .arg(dir.join(format!("out-{seed}")))
        .output()
        .expect("run ksim");
    assert!(
        out.status.success(),
        "ksim run failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn run_writes_all_outputs_and_is_reproducible_by_seed() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(d.join("nodes.json"), NODES).unwrap();
    std::fs::write(d.join("trace.jsonl"), trace(200)).unwrap();
    run_into(d, "7");
    let first: Vec<Vec<u8>> = [
        "pods.csv",
        "placements.csv",
        "utilization.csv",
        "summary.json",
    ]
    .iter()
    .map(|f| std::fs::read(d.join("out-7").join(f)).expect(f))
    .collect();
    for f in [
        "report.html",
        "utilization.svg",
        "utilization.png",
        "pending.svg",
        "latency_cdf.svg",
    ] {
        assert!(d.join("out-7").join(f).exists(), "{f} missing");
    }
    std::fs::rename(d.join("out-7"), d.join("first")).unwrap();
    run_into(d, "7");
    for (i, f) in [
        "pods.csv",
        "placements.csv",
        "utilization.csv",
        "summary.json",
    ]
    .iter()
    .enumerate()
    {
        let again = std::fs::read(d.join("out-7").join(f)).unwrap();
        assert!(
            again == first[i],
            "{f} differs between two runs with the same seed"
        );
    }
    // pods.csv accounts for every created pod exactly once, with the documented header.
    let pods = String::from_utf8(first[0].clone()).unwrap();
    let mut lines = pods.lines();
    assert_eq!(
        lines.next(),
        Some("namespace,name,priority,created_s,first_attempt_s,scheduled_s,bound_s,finished_s,attempts,node,outcome,preempted_by,last_reason,owner_kind,owner_name")
    );
    assert_eq!(lines.count(), 200);
}

#[test]
fn conformance_command_reports_plain_counts() {
    let out = ksim()
        .arg("conformance")
        .arg(root().join("tests/conformance/timelines/cases"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.trim_end().ends_with("passed, 0 failed"), "{stdout}");
}

#[test]
fn conformance_command_fails_on_a_wrong_verdict() {
    let tmp = tempfile::tempdir().unwrap();
    let src = root().join("tests/conformance/cases/fit-002.json");
    let mut case: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(src).unwrap()).unwrap();
    case["expected"]["feasibleNodes"] = serde_json::json!(["n1"]);
    std::fs::write(tmp.path().join("bad.json"), case.to_string()).unwrap();
    let out = ksim().arg("conformance").arg(tmp.path()).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(stdout.contains("FAIL bad:"), "{stdout}");
    assert!(stdout.contains("0 passed, 1 failed"), "{stdout}");
}

#[test]
fn malformed_trace_line_names_file_line_and_field() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(d.join("nodes.json"), NODES).unwrap();
    let mut t = trace(3);
    t.push_str("{\"at\": \"20s\", \"kind\": \"CreatePod\", \"pod\": {\"metadata\": {\"name\": \"bad\"}, \"spec\": {\"containers\": [{\"name\": \"c\", \"resources\": {\"requests\": {\"cpu\": \"lots\"}}}]}}}\n");
    std::fs::write(d.join("trace.jsonl"), t).unwrap();
    let out = ksim()
        .args(["run", "-q", "--nodes"])
        .arg(d.join("nodes.json"))
        .arg("--trace")
        .arg(d.join("trace.jsonl"))
        .arg("--out")
        .arg(d.join("out"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("trace.jsonl:4"), "{stderr}");
    assert!(stderr.contains("cpu"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn missing_file_is_a_clear_error() {
    let out = ksim()
        .args(["run", "/no/such/scenario.yaml"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr.contains("/no/such/scenario.yaml"), "{stderr}");
}

#[test]
fn generate_name_pods_get_the_same_names_for_the_same_seed() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(d.join("nodes.json"), NODES).unwrap();
    let mut t = String::new();
    for i in 0..5 {
        t.push_str(&format!(
            "{{\"at\": {i}, \"kind\": \"CreatePod\", \"pod\": {{\"metadata\": {{\"generateName\": \"batch-\", \"labels\": null}}, \"spec\": {{\"priorityClassName\": \"system-cluster-critical\", \"tolerations\": null, \"containers\": [{{\"name\": \"c\", \"resources\": {{\"requests\": {{\"cpu\": \"100m\"}}}}}}]}}}}}}\n"
        ));
    }
    std::fs::write(d.join("trace.jsonl"), t).unwrap();
    run_into(d, "3");
    run_into(d, "4");
    let names = |seed: &str| -> Vec<String> {
        let pods = std::fs::read_to_string(d.join(format!("out-{seed}/pods.csv"))).unwrap();
        pods.lines()
            .skip(1)
            .map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                assert_eq!(f[2], "2000000000", "built-in class priority: {l}");
                f[1].to_string()
            })
            .collect()
    };
    let a = names("3");
    assert_eq!(a.len(), 5);
    assert!(
        a.iter().all(|n| n.starts_with("batch-") && n.len() == 11),
        "{a:?}"
    );
    run_into(d, "3");
    assert_eq!(names("3"), a, "same seed, same names");
    assert_ne!(names("4"), a, "another seed, other names");
}

#[test]
fn a_misspelt_scheduler_config_field_stops_the_run_naming_file_and_path() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(d.join("nodes.json"), NODES).unwrap();
    std::fs::write(d.join("trace.jsonl"), trace(3)).unwrap();
    let cfg = d.join("sched.yaml");
    std::fs::write(
        &cfg,
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: default-scheduler\n  pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStratgy: {type: MostAllocated}}\n",
    )
    .unwrap();
    let out = ksim()
        .args(["run", "--nodes"])
        .arg(d.join("nodes.json"))
        .arg("--trace")
        .arg(d.join("trace.jsonl"))
        .arg("--scheduler-config")
        .arg(&cfg)
        .args(["--until", "1m", "-q", "--out"])
        .arg(d.join("out"))
        .output()
        .expect("run ksim");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "{}: profiles[0].pluginConfig[0].args.scoringStratgy: unknown field (did you mean \"scoringStrategy\"?)",
            cfg.display()
        )),
        "{err}"
    );
}

/// Runs `ksim ARGS` in `dir` and returns (exit code, stderr).
fn run_in(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = ksim().current_dir(dir).args(args).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const SCENARIO: &str = "name: s\ncluster:\n  pools:\n  - name: p\n    count: 1\n    template:\n      status:\n        allocatable: {cpu: '4', memory: 8Gi, pods: '110'}\nworkload:\n  traces: [trace.jsonl]\n";

/// Issue 37: a file in the wrong place is named for what it is, the file first.
#[test]
fn a_file_in_the_wrong_place_says_what_it_is() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(d.join("nodes.json"), NODES).unwrap();
    std::fs::write(d.join("trace.jsonl"), trace(3)).unwrap();
    std::fs::write(d.join("scenario.yaml"), SCENARIO).unwrap();
    let cases: [(&[&str], &str); 5] = [
        (
            &["run", "--nodes", "scenario.yaml", "--trace", "trace.jsonl"],
            "error: scenario.yaml: this looks like a ksim scenario; pass it as the first argument",
        ),
        (
            &["run", "scenario.yaml", "--scheduler-config", "nodes.json"],
            "error: nodes.json: this is a List of Nodes; use --nodes",
        ),
        (
            &["run", "--nodes", "trace.jsonl", "--trace", "trace.jsonl"],
            "error: trace.jsonl: this is a JSON Lines trace; use --trace",
        ),
        (
            &["run", "trace.jsonl"],
            "error: trace.jsonl: this is a JSON Lines trace; use --trace",
        ),
        (
            &["run", "nodes.json"],
            "error: nodes.json: this is a List of Nodes; use --nodes",
        ),
    ];
    for (args, want) in cases {
        let (code, stderr) = run_in(d, args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end(), want, "{args:?}");
    }
}

/// A v1beta1 (or v1alpha1) KubeSchedulerConfiguration is refused for its apiVersion first, not
/// for fields v1 does not have.
#[test]
fn an_old_scheduler_config_is_refused_for_its_api_version_first() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(d.join("trace.jsonl"), trace(3)).unwrap();
    std::fs::write(d.join("scenario.yaml"), SCENARIO).unwrap();
    for v in ["v1beta1", "v1alpha1"] {
        // kube-scheduler-simulator's sample v1beta1 form: fields v1 no longer has.
        let cfg = format!(
            "apiVersion: kubescheduler.config.k8s.io/{v}\nkind: KubeSchedulerConfiguration\n\
             algorithmSource: {{provider: DefaultProvider}}\nprofiles:\n- schedulerName: default-scheduler\n"
        );
        std::fs::write(d.join("cfg.yaml"), cfg).unwrap();
        let (code, stderr) = run_in(
            d,
            &["run", "scenario.yaml", "--scheduler-config", "cfg.yaml"],
        );
        assert_eq!(code, Some(2), "{stderr}");
        assert!(
            stderr.starts_with(&format!(
                "error: cfg.yaml: apiVersion: Unsupported value: \"kubescheduler.config.k8s.io/{v}\""
            )),
            "{stderr}"
        );
        assert!(!stderr.contains("unknown field"), "{stderr}");
    }
}

/// A misspelt scenario key gets the nearest known one; an error about an event names its file
/// first, not "run <command line>".
#[test]
fn scenario_keys_get_did_you_mean_and_errors_start_with_the_file() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(d.join("trace.jsonl"), trace(3)).unwrap();
    std::fs::write(d.join("s.yaml"), format!("{SCENARIO}horizn: 1h\n")).unwrap();
    let (code, stderr) = run_in(d, &["run", "s.yaml"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.starts_with("error: s.yaml: ") && stderr.contains("unknown field `horizn`"),
        "{stderr}"
    );
    assert!(stderr.contains("(did you mean `horizon`?)"), "{stderr}");

    std::fs::write(d.join("nodes.json"), NODES).unwrap();
    let mut t = trace(2);
    t.push_str(
        "{\"at\": \"9s\", \"kind\": \"DeletePod\", \"pod\": {\"metadata\": {\"name\": \"zzz\"}}}\n",
    );
    std::fs::write(d.join("bad.jsonl"), t).unwrap();
    let (code, stderr) = run_in(
        d,
        &[
            "run",
            "-q",
            "--nodes",
            "nodes.json",
            "--trace",
            "bad.jsonl",
            "--out",
            "o",
        ],
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.starts_with("error: bad.jsonl:3: "), "{stderr}");
    assert!(!stderr.contains("<command line>"), "{stderr}");
}

/// `run --objects FILE` adds a List of objects at t=0, its workloads run by their controllers,
/// as a scenario's `cluster.objectsFiles` does.
#[test]
fn run_objects_flag_creates_the_workloads() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(d.join("nodes.json"), NODES).unwrap();
    std::fs::write(d.join("trace.jsonl"), trace(2)).unwrap();
    let objects = r#"{"apiVersion":"v1","kind":"List","items":[
 {"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"default"},
  "spec":{"replicas":3,"selector":{"matchLabels":{"app":"web"}},
   "template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"100m"}}}]}}}}]}"#;
    std::fs::write(d.join("objects.json"), objects).unwrap();
    let (code, stderr) = run_in(
        d,
        &[
            "run",
            "-q",
            "--nodes",
            "nodes.json",
            "--trace",
            "trace.jsonl",
            "--objects",
            "objects.json",
            "--until",
            "2m",
            "--out",
            "o",
        ],
    );
    assert_eq!(code, Some(0), "{stderr}");
    let pods = std::fs::read_to_string(d.join("o/pods.csv")).unwrap();
    let web = pods
        .lines()
        .filter(|l| l.contains(",Deployment,") || l.contains("web-"))
        .count();
    assert_eq!(web, 3, "{pods}");
    let rec = std::fs::read_to_string(d.join("o/scenario.yaml")).unwrap();
    assert!(rec.contains("objects.json"), "{rec}");
}
