//! Issue 16's inputs, each with the exact behaviour a user sees: runs that used to hang end,
//! the importer panic is an error with file and line, garbage is refused with file, line and
//! field, and an interrupted run never leaves a folder that mixes old and new files.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn ksim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ksim"))
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs ksim and expects exit code 2 (an input error) with `want` in stderr and no panic.
fn refused(args: &[&str], dir: &Path, want: &str) {
    let out = ksim().args(args).current_dir(dir).output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(want), "{args:?}: expected {want:?} in:\n{err}");
    assert!(!err.contains("panicked"), "{err}");
}

const NODE: &str = r#"{"kind":"Node","metadata":{"name":"n1"},"status":{"allocatable":{"cpu":"4","memory":"16Gi","pods":"110"}}}"#;

/// Writes `nodes.json`: a List of the one node [`NODE`].
fn write_one_node(dir: &Path) {
    std::fs::write(
        dir.join("nodes.json"),
        format!(r#"{{"kind":"List","items":[{NODE}]}}"#),
    )
    .unwrap();
}

fn pod_line(at: &str, name: &str) -> String {
    format!(
        r#"{{"at":"{at}","kind":"CreatePod","pod":{{"metadata":{{"name":"{name}"}},"spec":{{"containers":[{{"name":"c","resources":{{"requests":{{"cpu":"1"}}}}}}]}}}}}}"#
    )
}

#[test]
fn an_openb_import_without_the_node_list_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let pods = root().join("traces/openb-small/openb_pod_list_default_day148_first400.csv");
    let out = tmp.path().join("imp");
    refused(
        &[
            "import",
            "alibaba-openb",
            pods.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        tmp.path(),
        "0 nodes written: the inputs hold no node; pass the node list too (openb_node_list_*.csv)",
    );
    assert!(
        !out.join("trace.jsonl").exists(),
        "nothing a run could hang on"
    );
    // Issue 37: and no empty output folder either.
    assert!(!out.exists(), "the failed import left {}", out.display());
    // A folder that existed keeps what it had.
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("keep.txt"), "mine").unwrap();
    refused(
        &[
            "import",
            "alibaba-openb",
            pods.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        tmp.path(),
        "0 nodes written",
    );
    assert_eq!(
        std::fs::read_to_string(out.join("keep.txt")).unwrap(),
        "mine"
    );
}

#[test]
fn an_audit_log_zone_with_a_multibyte_character_is_an_error_not_a_panic() {
    let tmp = tempfile::tempdir().unwrap();
    let line = r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"a","stage":"ResponseComplete","verb":"create","objectRef":{"resource":"pods","namespace":"ns","name":"p"},"stageTimestamp":"2024-01-01T00:00:00+0é:00"}"#;
    std::fs::write(tmp.path().join("audit.log"), format!("{line}\n")).unwrap();
    refused(
        &["import", "audit-log", "audit.log", "--out", "imp"],
        tmp.path(),
        "audit.log:1: stageTimestamp: \"2024-01-01T00:00:00+0é:00\" is not an RFC 3339 timestamp",
    );
}

#[test]
fn a_file_that_is_not_an_audit_log_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("pods.jsonl"),
        "{\"kind\":\"Pod\",\"apiVersion\":\"v1\"}\n",
    )
    .unwrap();
    refused(
        &["import", "audit-log", "pods.jsonl", "--out", "imp"],
        tmp.path(),
        "pods.jsonl: not a Kubernetes audit log: none of its 1 lines is an audit.k8s.io Event",
    );
}

/// A nodes file with one bad node, run with a one-pod trace.
fn run_with_node(node: &str, want: &str) {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("nodes.json"),
        format!(r#"{{"kind":"List","items":[{NODE},{node}]}}"#),
    )
    .unwrap();
    std::fs::write(tmp.path().join("t.jsonl"), pod_line("0s", "p") + "\n").unwrap();
    refused(
        &[
            "run",
            "--nodes",
            "nodes.json",
            "--trace",
            "t.jsonl",
            "--until",
            "1m",
            "-q",
            "--out",
            "out",
        ],
        tmp.path(),
        want,
    );
}

#[test]
fn garbage_nodes_are_refused_with_item_and_field() {
    // An allocatable above capacity and a node without status are accepted, as the API
    // server accepts them (crates/ksim-trace/tests/admission.rs runs such nodes).
    run_with_node(
        r#"{"metadata":{"name":"n2"},"spec":{"taints":[{"key":"a","effect":"Explode"}]},"status":{"allocatable":{"cpu":"1"}}}"#,
        "nodes.json: items[1] (node \"n2\"): spec.taints[0].effect: unsupported value \"Explode\"",
    );
    run_with_node(
        r#"{"metadata":{"name":"n2"},"status":{"allocatable":{"memory":"-1Gi"}}}"#,
        "status.allocatable.memory: quantity \"-1Gi\" is negative",
    );
}

#[test]
fn duplicate_json_keys_are_refused_in_traces_and_nodes_files() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    write_one_node(d);
    let dup = pod_line("1s", "q").replacen(r#""at":"1s""#, r#""at":"1s","at":"999h""#, 1);
    std::fs::write(
        d.join("t.jsonl"),
        format!("{}\n{dup}\n", pod_line("0s", "p")),
    )
    .unwrap();
    let args = [
        "run",
        "--nodes",
        "nodes.json",
        "--trace",
        "t.jsonl",
        "--until",
        "1m",
        "-q",
        "--out",
        "out",
    ];
    refused(
        &args,
        d,
        "t.jsonl:2: not valid JSON: duplicate key \"at\" in one object",
    );
    let v = ksim()
        .args(["validate", "t.jsonl"])
        .current_dir(d)
        .output()
        .unwrap();
    assert_eq!(v.status.code(), Some(1));
    let text = String::from_utf8_lossy(&v.stdout);
    assert!(
        text.contains("t.jsonl:2: not valid JSON: duplicate key \"at\""),
        "{text}"
    );
    std::fs::write(
        d.join("nodes.json"),
        r#"{"kind":"List","kind":"List","items":[]}"#,
    )
    .unwrap();
    std::fs::write(d.join("t.jsonl"), pod_line("0s", "p") + "\n").unwrap();
    refused(
        &args,
        d,
        "nodes.json: not valid JSON: duplicate key \"kind\"",
    );
}

#[test]
fn a_byte_order_mark_is_accepted() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(
        d.join("nodes.json"),
        format!("\u{feff}{{\"kind\":\"List\",\"items\":[{NODE}]}}"),
    )
    .unwrap();
    std::fs::write(
        d.join("t.jsonl"),
        format!("\u{feff}{}\n", pod_line("0s", "p")),
    )
    .unwrap();
    let out = ksim()
        .args([
            "run",
            "--nodes",
            "nodes.json",
            "--trace",
            "t.jsonl",
            "--until",
            "1m",
            "-q",
            "--out",
            "out",
        ])
        .current_dir(d)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let pods = std::fs::read_to_string(d.join("out/pods.csv")).unwrap();
    assert!(pods.contains("default,p,0,0,"), "{pods}");
}

#[test]
fn a_pool_of_a_hundred_million_nodes_is_refused_before_anything_is_built() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("s.yaml"),
        "name: big\ncluster:\n  pools:\n    - {name: p, count: 100000000, template: {status: {allocatable: {cpu: '1'}}}}\n",
    )
    .unwrap();
    let started = Instant::now();
    refused(
        &["run", "s.yaml", "--until", "1m", "--out", "out"],
        tmp.path(),
        "s.yaml: cluster.pools[0].count: 100000000 nodes is more than the limit of 1000000 nodes (raise it with limits.maxNodes in the scenario)",
    );
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn a_missing_file_is_named_once() {
    let tmp = tempfile::tempdir().unwrap();
    let out = ksim()
        .args(["run", "nope.yaml"])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");
}

#[test]
fn plan_and_import_flags_out_of_range_are_refused() {
    let r = root();
    let scenario = r.join("scenarios/plan-synthetic.yaml");
    let s = scenario.to_str().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let plan = |extra: &[&str], want: &str| {
        let mut args = vec!["plan", s, "--pool", "workers", "--out", "pl"];
        args.extend_from_slice(extra);
        refused(&args, d, want);
    };
    plan(
        &["--slo", "p99<=30s", "--probes", "0"],
        "0 is not in 1..=64",
    );
    plan(
        &["--slo", "p99<=30s", "--max", "4000000000"],
        "--max 4000000000: more than the limit of 1000000 nodes",
    );
    plan(
        &["--slo", "scheduled>=200%"],
        "200% is not a share: a percentage is between 0% and 100%",
    );
    std::fs::write(d.join("m.csv"), "").unwrap();
    refused(
        &[
            "import",
            "borg-2011",
            "m.csv",
            "--machine",
            "0,-1",
            "--out",
            "imp",
        ],
        d,
        "--machine cpu \"0\": must be more than 0",
    );
}

#[test]
fn an_empty_nodes_file_or_trace_ends_with_a_warning_instead_of_hanging() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    std::fs::write(d.join("nodes.yaml"), "items: []\n").unwrap();
    std::fs::write(d.join("t.jsonl"), pod_line("0s", "p") + "\n").unwrap();
    std::fs::write(d.join("empty.jsonl"), "").unwrap();
    let out = ksim()
        .args([
            "run",
            "--nodes",
            "nodes.yaml",
            "--trace",
            "t.jsonl",
            "--trace",
            "empty.jsonl",
            "-q",
            "--out",
            "out",
        ])
        .current_dir(d)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("warning: empty.jsonl: the trace has no event"),
        "{err}"
    );
    assert!(err.contains("the cluster has no nodes at t=0"), "{err}");
    assert!(err.contains("note: the run stalled at "), "{err}");
    let pods = std::fs::read_to_string(d.join("out/pods.csv")).unwrap();
    assert!(pods.contains(",stalled,"), "{pods}");
}

#[test]
fn report_and_compare_refuse_what_an_interrupted_run_left() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    write_one_node(d);
    let trace: String = (0..20)
        .map(|i| pod_line(&format!("{i}s"), &format!("p{i}")) + "\n")
        .collect();
    std::fs::write(d.join("t.jsonl"), trace).unwrap();
    let out = ksim()
        .args([
            "run",
            "--nodes",
            "nodes.json",
            "--trace",
            "t.jsonl",
            "--until",
            "1m",
            "-q",
            "--event-log",
            "--out",
            "run",
        ])
        .current_dir(d)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    // A log cut at a line boundary parses, but lacks the run's last record.
    let log = std::fs::read_to_string(d.join("run/events.jsonl")).unwrap();
    let lines: Vec<&str> = log.lines().collect();
    std::fs::write(
        d.join("cut.jsonl"),
        lines[..lines.len() / 2].join("\n") + "\n",
    )
    .unwrap();
    refused(
        &["report", "cut.jsonl", "--out", "again"],
        d,
        "do not end with the run's RunEnded record",
    );
    assert!(!d.join("again").exists());
    // The whole log re-renders, in the run's own folder too, keeping the log.
    let out = ksim()
        .args(["report", "run/events.jsonl", "--out", "run"])
        .current_dir(d)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(d.join("run/events.jsonl").exists());
    assert!(ksim()
        .args(["compare", "run", "run"])
        .current_dir(d)
        .output()
        .unwrap()
        .status
        .success());
    // A folder without the completion marker is refused.
    std::fs::remove_file(d.join("run/ksim-complete.json")).unwrap();
    refused(
        &["compare", "run", "run"],
        d,
        "run: not a complete ksim run: ksim-complete.json is missing",
    );
    // A folder of the user's own is never overwritten.
    std::fs::create_dir(d.join("mine")).unwrap();
    std::fs::write(d.join("mine/notes.txt"), "mine").unwrap();
    refused(
        &[
            "run",
            "--nodes",
            "nodes.json",
            "--trace",
            "t.jsonl",
            "--until",
            "1m",
            "-q",
            "--out",
            "mine",
        ],
        d,
        "mine: exists and holds files ksim did not write (notes.txt)",
    );
}

fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn a_run_killed_mid_write_leaves_the_previous_output_untouched() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let scenario = root().join("scenarios/quickstart.yaml");
    let s = scenario.to_str().unwrap();
    let first = ksim()
        .args(["run", s, "--until", "2m", "-q", "--out", "out"])
        .current_dir(d)
        .output()
        .unwrap();
    assert!(first.status.success(), "{}", stderr(&first));
    let before = snapshot(&d.join("out"));
    // The second run, over the whole two hours, is killed once it has started writing.
    let mut child = ksim()
        .args(["run", s, "-q", "--event-log", "--out", "out"])
        .current_dir(d)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let staging = |d: &Path| {
        std::fs::read_dir(d).unwrap().flatten().find(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(".out.ksim-partial-")
        })
    };
    loop {
        if let Some(e) = staging(d) {
            if std::fs::metadata(e.path().join("events.jsonl")).is_ok_and(|m| m.len() > 0) {
                break;
            }
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "the second run never started writing"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "finished before the kill"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(snapshot(&d.join("out")), before, "the old output changed");
    assert!(ksim()
        .args(["compare", "out", "out"])
        .current_dir(d)
        .output()
        .unwrap()
        .status
        .success());
    // The next run cleans the abandoned staging folder up and replaces the output whole.
    let third = ksim()
        .args(["run", s, "--until", "1m", "-q", "--out", "out"])
        .current_dir(d)
        .output()
        .unwrap();
    assert!(third.status.success(), "{}", stderr(&third));
    assert!(staging(d).is_none(), "the killed run's folder is gone");
    assert_ne!(snapshot(&d.join("out")), before);
}

/// Runs a one-node cluster with `trace` and returns stderr; the run must be refused.
fn run_error(trace: &str) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    write_one_node(d);
    std::fs::write(d.join("t.jsonl"), trace).unwrap();
    let out = ksim()
        .args([
            "run",
            "--nodes",
            "nodes.json",
            "--trace",
            "t.jsonl",
            "--until",
            "1m",
            "-q",
            "--out",
            "out",
        ])
        .current_dir(d)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!d.join("out").exists(), "a refused run leaves no output");
    err
}

#[test]
fn errors_raised_during_a_run_name_the_file_and_line_of_their_event() {
    let p = pod_line("0s", "p");
    let cases = [
        (
            format!("{p}\n{{\"at\":\"1s\",\"kind\":\"DeletePod\",\"namespace\":\"default\",\"name\":\"zzz\"}}\n"),
            "t.jsonl:2: at 1s: DeletePod of pod default/zzz, which was never created",
        ),
        (
            format!("{p}\n{{\"at\":\"1s\",\"kind\":\"CompletePod\",\"namespace\":\"x\",\"name\":\"p\"}}\n"),
            "t.jsonl:2: at 1s: CompletePod of pod x/p, which was never created",
        ),
        (
            format!("{p}\n{{\"at\":\"2s\",\"kind\":\"RemoveNode\",\"name\":\"nope\"}}\n"),
            "t.jsonl:2: at 2s: RemoveNode of node \"nope\", which does not exist",
        ),
        (
            format!("{p}\n\n# a comment\n{}\n", pod_line("5s", "p")),
            "t.jsonl:4: at 5s: CreatePod: pod default/p already exists",
        ),
        (
            format!("{{\"at\":\"0s\",\"kind\":\"AddNode\",\"node\":{NODE}}}\n"),
            "t.jsonl:1: at 0s: AddNode: node n1 already exists",
        ),
        (
            "{\"at\":\"3s\",\"kind\":\"UpdatePod\",\"pod\":{\"metadata\":{\"name\":\"q\"},\"spec\":{\"containers\":[{\"name\":\"c\"}]}}}\n".to_string(),
            "t.jsonl:1: at 3s: ",
        ),
        (
            "{\"at\":\"3s\",\"kind\":\"DeleteObject\",\"objectKind\":\"PodDisruptionBudget\",\"namespace\":\"default\",\"name\":\"pdb\"}\n".to_string(),
            "t.jsonl:1: at 3s: DeleteObject: PodDisruptionBudget default/pdb does not exist",
        ),
        (
            "{\"at\":\"0s\",\"kind\":\"CreatePod\",\"pod\":{\"metadata\":{\"name\":\"a\"},\"spec\":{\"nodeName\":\"ghost\",\"containers\":[{\"name\":\"c\"}]}}}\n".to_string(),
            "t.jsonl:1: at 0s: CreatePod: pod default/a is bound to node \"ghost\", which does not exist",
        ),
    ];
    for (trace, want) in cases {
        let err = run_error(&trace);
        assert!(err.contains(want), "expected {want:?} in {err}");
        // `ksim validate` refuses the same event, at the same line.
        let line = want.split(": at").next().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        write_one_node(d);
        std::fs::write(d.join("t.jsonl"), &trace).unwrap();
        let v = ksim()
            .args(["validate", "--nodes", "nodes.json", "t.jsonl"])
            .current_dir(d)
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&v.stdout);
        assert_eq!(v.status.code(), Some(1), "validate accepted {trace}: {out}");
        assert!(
            out.contains(&format!("{line}: ")),
            "expected {line} in {out}"
        );
    }
    // A pod that ended may be deleted later: not an error.
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    write_one_node(d);
    std::fs::write(
        d.join("t.jsonl"),
        format!(
            "{p}\n{{\"at\":\"1s\",\"kind\":\"DeletePod\",\"namespace\":\"default\",\"name\":\"p\"}}\n{{\"at\":\"2s\",\"kind\":\"DeletePod\",\"namespace\":\"default\",\"name\":\"p\"}}\n"
        ),
    )
    .unwrap();
    let out = ksim()
        .args([
            "run",
            "--nodes",
            "nodes.json",
            "--trace",
            "t.jsonl",
            "--until",
            "1m",
            "-q",
            "--out",
            "out",
        ])
        .current_dir(d)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn pods_of_another_scheduler_are_counted_and_warned_about_once() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    write_one_node(d);
    let other =
        pod_line("0s", "q").replace(r#""spec":{"#, r#""spec":{"schedulerName":"gpu-scheduler","#);
    std::fs::write(
        d.join("t.jsonl"),
        format!(
            "{}\n{other}\n{}\n",
            pod_line("0s", "p"),
            other.replace("\"q\"", "\"r\"")
        ),
    )
    .unwrap();
    let out = ksim()
        .args([
            "run",
            "--nodes",
            "nodes.json",
            "--trace",
            "t.jsonl",
            "--until",
            "1m",
            "-q",
            "--out",
            "out",
        ])
        .current_dir(d)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert_eq!(
        err.matches("schedulerName no profile serves").count(),
        1,
        "{err}"
    );
    assert!(
        err.contains("warning: 2 pod(s) name a schedulerName no profile serves (gpu-scheduler)"),
        "{err}"
    );
    let pods = std::fs::read_to_string(d.join("out/pods.csv")).unwrap();
    assert_eq!(pods.matches(",unserved,").count(), 2, "{pods}");
    let summary = std::fs::read_to_string(d.join("out/summary.json")).unwrap();
    assert!(summary.contains("\"unserved\": 2"), "{summary}");
}

#[test]
fn a_file_given_by_mistake_is_never_echoed_in_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let secret = "root:x:0:0:s3cretvalue:/root:/bin/bash\nsecond line s3cretvalue\n";
    for f in ["pw", "pw.csv", "pw.yaml"] {
        std::fs::write(d.join(f), secret).unwrap();
    }
    write_one_node(d);
    std::fs::write(d.join("t.jsonl"), pod_line("0s", "p") + "\n").unwrap();
    let runs: &[&[&str]] = &[
        &["validate", "pw"],
        &["validate", "pw.csv"],
        &["run", "--nodes", "pw", "--trace", "t.jsonl"],
        &["run", "--nodes", "nodes.json", "--trace", "pw"],
        &["run", "--nodes", "nodes.json", "--trace", "pw.csv"],
        &["run", "pw.yaml"],
        &[
            "run",
            "--nodes",
            "nodes.json",
            "--trace",
            "t.jsonl",
            "--scheduler-config",
            "pw",
        ],
        &["sweep", "pw.yaml"],
        &["import", "kube-dump", "pw"],
        &["import", "alibaba-openb", "pw"],
        &["import", "audit-log", "pw"],
        &["import", "borg-2011", "pw", "--machine", "64,256Gi"],
        &["import", "borg-2019", "pw", "--machine", "64,256Gi"],
        &["import", "alibaba-v2018", "pw", "--machine", "64,256Gi"],
        &["import", "simkube", "pw"],
    ];
    for args in runs {
        let mut all: Vec<&str> = args.to_vec();
        if args[0] != "validate" {
            all.extend(["--out", "out"]);
        }
        if args[0] == "run" {
            all.extend(["--until", "1s", "-q"]);
        }
        let out = ksim().args(&all).current_dir(d).output().unwrap();
        let text = format!("{}{}", stderr(&out), String::from_utf8_lossy(&out.stdout));
        assert!(
            !out.status.success(),
            "{args:?} accepted a text file: {text}"
        );
        assert!(!text.contains("s3cret"), "{args:?} echoed the file: {text}");
        assert!(
            text.contains("pw"),
            "{args:?} does not name the file: {text}"
        );
    }
}
