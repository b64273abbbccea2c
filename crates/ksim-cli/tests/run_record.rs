//! Every run records what it ran (`scenario.yaml` after overrides, the effective
//! `scheduler-config.yaml`, `ksim-run.json`), and `ksim run` of the recorded scenario
//! reproduces the run's outputs byte for byte.

use std::path::Path;
use std::process::{Command, Output};

fn ksim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ksim"))
        .args(args)
        .output()
        .expect("run ksim")
}

const NODES: &str = r#"{"apiVersion":"v1","kind":"List","items":[
 {"kind":"Node","metadata":{"name":"a1","labels":{"zone":"a"}},"status":{"allocatable":{"cpu":"4","memory":"16Gi","pods":"110"}}},
 {"kind":"Node","metadata":{"name":"a2","labels":{"zone":"a"}},"status":{"allocatable":{"cpu":"4","memory":"16Gi","pods":"110"}}},
 {"kind":"Node","metadata":{"name":"b1","labels":{"zone":"b"}},"status":{"allocatable":{"cpu":"8","memory":"32Gi","pods":"110"}}}]}"#;

const CONFIG: &str = "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
";

fn write_inputs(d: &Path) {
    std::fs::write(d.join("nodes.json"), NODES).unwrap();
    let mut trace = String::new();
    for i in 0..60 {
        let cpu = ["500m", "1", "2", "3"][i % 4];
        trace.push_str(&format!(
            "{{\"at\": \"{}s\", \"kind\": \"CreatePod\", \"runFor\": \"{}s\", \"pod\": {{\"metadata\": {{\"name\": \"p{i}\"}}, \"spec\": {{\"containers\": [{{\"name\": \"c\", \"resources\": {{\"requests\": {{\"cpu\": \"{cpu}\", \"memory\": \"1Gi\"}}}}}}]}}}}}}\n",
            i * 5,
            100 + (i * 37) % 400
        ));
    }
    std::fs::write(d.join("trace.jsonl"), trace).unwrap();
    std::fs::write(d.join("sched.yaml"), CONFIG).unwrap();
    // A generator too, so the seed matters.
    std::fs::write(
        d.join("s.yaml"),
        "name: rec\nseed: 1\nhorizon: 1h\ncluster: {nodesFiles: [nodes.json]}\n\
         workload:\n  traces: [trace.jsonl]\n  generators:\n  - name: g\n    arrival: {poisson: {rate: 0.2}}\n    count: 40\n    \
         shapes: [{name: s, requests: {cpu: 700m, memory: 1Gi}}]\n    runTime: {exponential: {mean: 3m}}\n\
         output: somewhere-else\n",
    )
    .unwrap();
}

const OUTPUTS: [&str; 4] = [
    "pods.csv",
    "placements.csv",
    "utilization.csv",
    "summary.json",
];

fn same_outputs(a: &Path, b: &Path) {
    for f in OUTPUTS {
        let x = std::fs::read(a.join(f)).unwrap();
        let y = std::fs::read(b.join(f)).unwrap();
        assert!(
            x == y,
            "{f} differs between {} and {}",
            a.display(),
            b.display()
        );
    }
}

#[test]
fn recorded_scenario_and_config_reproduce_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    write_inputs(d);
    let first = d.join("first");
    // Overrides: seed, horizon and scheduler configuration from the command line.
    let o = ksim(&[
        "run",
        d.join("s.yaml").to_str().unwrap(),
        "--seed",
        "9",
        "--until",
        "40m",
        "--scheduler-config",
        d.join("sched.yaml").to_str().unwrap(),
        "-q",
        "--out",
        first.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let run: serde_json::Value =
        serde_json::from_slice(&std::fs::read(first.join("ksim-run.json")).unwrap()).unwrap();
    assert_eq!(run["seed"], 9);
    assert_eq!(run["ksimVersion"], env!("CARGO_PKG_VERSION"));
    assert_eq!(run["horizon"], "2400s");
    let scenario = std::fs::read_to_string(first.join("scenario.yaml")).unwrap();
    assert!(scenario.contains("seed: 9"), "{scenario}");
    assert!(scenario.contains("horizon: 40m"), "{scenario}");
    assert!(
        scenario.contains("configFile: scheduler-config.yaml"),
        "{scenario}"
    );
    assert!(!scenario.contains("somewhere-else"), "{scenario}");
    let config = std::fs::read_to_string(first.join("scheduler-config.yaml")).unwrap();
    // Effective: the override's strategy, upstream's defaults written out.
    for want in [
        "type: MostAllocated",
        "multiPoint:",
        "name: TaintToleration",
        "weight: 3",
        "podMaxBackoffSeconds: 10",
        "hardPodAffinityWeight: 1",
    ] {
        assert!(config.contains(want), "{want} missing in\n{config}");
    }

    // The recorded scenario, run from another folder, gives the same outputs.
    let again = d.join("again");
    let copy = d.join("elsewhere");
    std::fs::create_dir_all(&copy).unwrap();
    for f in ["scenario.yaml", "scheduler-config.yaml"] {
        std::fs::copy(first.join(f), copy.join(f)).unwrap();
    }
    let o = ksim(&[
        "run",
        copy.join("scenario.yaml").to_str().unwrap(),
        "-q",
        "--out",
        again.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    same_outputs(&first, &again);
    // And records the same again.
    for f in ["scenario.yaml", "scheduler-config.yaml"] {
        assert_eq!(
            std::fs::read_to_string(first.join(f)).unwrap(),
            std::fs::read_to_string(again.join(f)).unwrap(),
            "{f}"
        );
    }

    // Without the overrides the run differs (the check above can fail).
    let plain = d.join("plain");
    let o = ksim(&[
        "run",
        d.join("s.yaml").to_str().unwrap(),
        "-q",
        "--out",
        plain.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    assert_ne!(
        std::fs::read(first.join("pods.csv")).unwrap(),
        std::fs::read(plain.join("pods.csv")).unwrap()
    );
}

#[test]
fn nodes_and_traces_without_a_scenario_are_recorded_too() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    write_inputs(d);
    let first = d.join("first");
    let o = ksim(&[
        "run",
        "--nodes",
        d.join("nodes.json").to_str().unwrap(),
        "--trace",
        d.join("trace.jsonl").to_str().unwrap(),
        "--until",
        "30m",
        "-q",
        "--out",
        first.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let again = d.join("again");
    let o = ksim(&[
        "run",
        first.join("scenario.yaml").to_str().unwrap(),
        "-q",
        "--out",
        again.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    same_outputs(&first, &again);
}

/// `--dump-at`: the cluster at that instant as a List that `ksim import kube-dump` reads back;
/// no other output changes; a time past the horizon is refused.
#[test]
fn dump_at_writes_a_cluster_that_import_reads_back() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let scenario = root.join("scenarios/incident-zone-loss.yaml");
    let s = scenario.to_str().unwrap();
    let (plain, dumped) = (d.join("plain"), d.join("dumped"));
    assert!(ksim(&["run", s, "-q", "--out", plain.to_str().unwrap()])
        .status
        .success());
    let o = ksim(&[
        "run",
        s,
        "-q",
        "--dump-at",
        "16m",
        "--out",
        dumped.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    same_outputs(&plain, &dumped);
    let dump: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dumped.join("cluster-dump.json")).unwrap()).unwrap();
    assert_eq!(dump["kind"], "List");
    let items = dump["items"].as_array().unwrap();
    let nodes: Vec<&str> = items
        .iter()
        .filter(|i| i["kind"] == "Node")
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    // Zone b was lost at 10 min.
    assert_eq!(nodes.len(), 6, "{nodes:?}");
    assert!(nodes.iter().all(|n| !n.starts_with("zone-b")));
    let pods: Vec<&serde_json::Value> = items.iter().filter(|i| i["kind"] == "Pod").collect();
    let bound = pods
        .iter()
        .filter(|p| {
            p["spec"]["nodeName"]
                .as_str()
                .is_some_and(|n| !n.is_empty())
        })
        .count();
    // At 16 min: 4 report pods, 20 web pods, 4 node agents run; 8 web and 4 payments wait.
    assert_eq!((bound, pods.len() - bound), (28, 12));
    let imported = d.join("imported");
    let o = ksim(&[
        "import",
        "kube-dump",
        dumped.join("cluster-dump.json").to_str().unwrap(),
        "--out",
        imported.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let trace = std::fs::read_to_string(imported.join("trace.jsonl")).unwrap();
    assert_eq!(
        trace
            .lines()
            .filter(|l| l.contains("\"CreatePod\""))
            .count(),
        40
    );

    // Storage objects come along, as they stand (claims bound by then).
    let pv = d.join("pv");
    let o = ksim(&[
        "run",
        root.join("scenarios/stateful-local-pv.yaml")
            .to_str()
            .unwrap(),
        "-q",
        "--dump-at",
        "6m",
        "--out",
        pv.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let dump: serde_json::Value =
        serde_json::from_slice(&std::fs::read(pv.join("cluster-dump.json")).unwrap()).unwrap();
    let bound_pvs = dump["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == "PersistentVolume" && i["spec"]["claimRef"]["name"].is_string())
        .count();
    assert_eq!(bound_pvs, 7);
    let o = ksim(&[
        "import",
        "kube-dump",
        pv.join("cluster-dump.json").to_str().unwrap(),
        "--out",
        d.join("pv-imported").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(d.join("pv-imported/objects.yaml").is_file());

    let o = ksim(&[
        "run",
        s,
        "-q",
        "--dump-at",
        "31m",
        "--out",
        d.join("x").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("past the run's horizon"));
}
