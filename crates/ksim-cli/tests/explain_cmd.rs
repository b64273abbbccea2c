//! `ksim explain`: the nearest misses of an unschedulable attempt, in the pod's terms, for each
//! Filter plugin that can reject a node (one small cluster per plugin, built so that one node
//! fails that plugin alone), the verdict and score tables, `--json`, and bad input (exit 2).

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{json, Value};

fn ksim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ksim"))
        .args(args)
        .output()
        .expect("run ksim")
}

fn node(name: &str, cpu: &str, labels: Value, spec: Value) -> Value {
    let mut l = labels;
    l["kubernetes.io/hostname"] = json!(name);
    json!({"kind": "Node", "metadata": {"name": name, "labels": l}, "spec": spec,
           "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}})
}

fn pod(name: &str, at: &str, cpu: &str, labels: Value, spec: Value) -> String {
    let mut spec = spec;
    spec["containers"] =
        json!([{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]);
    json!({"at": at, "kind": "CreatePod",
           "pod": {"metadata": {"name": name, "labels": labels}, "spec": spec}})
    .to_string()
}

/// Runs a scenario of `nodes`, `objects` and `pods` with `--explain all` into `dir/out`.
fn run(dir: &Path, nodes: Vec<Value>, objects: Vec<Value>, pods: Vec<String>) {
    std::fs::write(
        dir.join("nodes.json"),
        json!({"apiVersion": "v1", "kind": "List", "items": nodes}).to_string(),
    )
    .unwrap();
    std::fs::write(
        dir.join("objects.json"),
        json!({"apiVersion": "v1", "kind": "List", "items": objects}).to_string(),
    )
    .unwrap();
    std::fs::write(dir.join("trace.jsonl"), pods.join("\n") + "\n").unwrap();
    std::fs::write(
        dir.join("s.yaml"),
        "name: s\nseed: 1\nhorizon: 5m\ncluster: {nodesFiles: [nodes.json], objectsFiles: [objects.json]}\nworkload: {traces: [trace.jsonl]}\n",
    )
    .unwrap();
    let out = dir.join("out");
    let o = ksim(&[
        "run",
        dir.join("s.yaml").to_str().unwrap(),
        "-q",
        "--explain",
        "all",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// `ksim explain` of the pod's last attempt: the text, which must show an unschedulable
/// attempt.
fn explain(dir: &Path, pod: &str) -> String {
    let o = ksim(&["explain", dir.join("out").to_str().unwrap(), pod]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8(o.stdout).unwrap();
    assert!(text.contains("result: Unschedulable"), "{text}");
    text
}

/// The nearest-miss lines of the text.
fn misses(text: &str) -> Vec<&str> {
    text.lines()
        .skip_while(|l| !l.starts_with("Nearest misses"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .map(str::trim)
        .collect()
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[test]
fn resources_short_by_in_the_pods_units() {
    let d = tmp();
    run(
        d.path(),
        vec![node("n17", "2", json!({}), json!({}))],
        vec![],
        vec![
            pod("filler", "0s", "1500m", json!({}), json!({})),
            pod("web", "10s", "1", json!({}), json!({})),
        ],
    );
    let t = explain(d.path(), "web");
    assert_eq!(
        misses(&t),
        ["n17: Insufficient cpu — 500m short  [NodeResourcesFit]"],
        "{t}"
    );
    assert!(
        t.contains("0/1 nodes are available: 1 Insufficient cpu."),
        "{t}"
    );
}

#[test]
fn taints_selectors_cordons_ranked_by_changes() {
    let d = tmp();
    run(
        d.path(),
        vec![
            node(
                "n3",
                "4",
                json!({"zone": "b"}),
                json!({"taints": [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]}),
            ),
            node("n9", "4", json!({"zone": "a"}), json!({})),
            node(
                "n5",
                "4",
                json!({"zone": "b"}),
                json!({"unschedulable": true}),
            ),
            // Fails two plugins: not a near miss.
            node(
                "n7",
                "4",
                json!({"zone": "c"}),
                json!({"taints": [{"key": "gpu", "effect": "NoSchedule"}]}),
            ),
        ],
        vec![],
        vec![pod(
            "api",
            "0s",
            "1",
            json!({}),
            json!({"nodeSelector": {"zone": "b"}}),
        )],
    );
    let t = explain(d.path(), "default/api");
    assert_eq!(
        misses(&t),
        [
            "n3: untolerated taint dedicated=infra:NoSchedule  [TaintToleration]",
            "n5: node is cordoned (spec.unschedulable)  [NodeUnschedulable]",
            "n9: didn't match node selector zone=b (node has zone=a)  [NodeAffinity]",
        ],
        "{t}"
    );
    assert!(t.contains("(1 failed several)"), "{t}");
    // The verdict table: each reason with its node count and nodes.
    // n7 is rejected first by TaintToleration (filter order), so NodeAffinity's row is n9's.
    let row = t
        .lines()
        .find(|l| l.contains("NodeAffinity") && l.contains('│'))
        .unwrap();
    assert!(
        row.contains("didn't match Pod's node affinity/selector"),
        "{t}"
    );
    assert!(row.contains(" 1 ") && row.contains("n9"), "{t}");
    let row = t
        .lines()
        .find(|l| l.contains("TaintToleration") && l.contains('│'))
        .unwrap();
    assert!(row.contains(" 2 ") && row.contains("n3, n7"), "{t}");
}

#[test]
fn required_node_affinity_terms() {
    let d = tmp();
    run(
        d.path(),
        vec![node("n1", "4", json!({"zone": "a"}), json!({}))],
        vec![],
        vec![pod(
            "p",
            "0s",
            "1",
            json!({}),
            json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                {"nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b", "c"]}]}]}}}}),
        )],
    );
    let t = explain(d.path(), "p");
    assert_eq!(
        misses(&t),
        ["n1: didn't match required node affinity zone In [b,c]  [NodeAffinity]"],
        "{t}"
    );
}

#[test]
fn host_ports_in_use() {
    let d = tmp();
    let ports = json!({"containers": [], "hostNetwork": false});
    let with_port = |name: &str, at: &str| {
        let mut p: Value =
            serde_json::from_str(&pod(name, at, "100m", json!({}), ports.clone())).unwrap();
        p["pod"]["spec"]["containers"][0]["ports"] =
            json!([{"containerPort": 8080, "hostPort": 8080, "protocol": "TCP"}]);
        p.to_string()
    };
    run(
        d.path(),
        vec![node("n1", "4", json!({}), json!({}))],
        vec![],
        vec![with_port("a", "0s"), with_port("b", "10s")],
    );
    let t = explain(d.path(), "b");
    assert_eq!(
        misses(&t),
        ["n1: host port 8080/TCP already in use  [NodePorts]"],
        "{t}"
    );
}

#[test]
fn pod_anti_affinity_and_topology_spread() {
    let d = tmp();
    run(
        d.path(),
        vec![
            node("na", "4", json!({"zone": "a"}), json!({})),
            node(
                "nb",
                "4",
                json!({"zone": "b"}),
                json!({"taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]}),
            ),
        ],
        vec![],
        vec![
            pod("first", "0s", "100m", json!({"app": "s"}), json!({})),
            pod(
                "anti",
                "10s",
                "100m",
                json!({}),
                json!({"affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"app": "s"}}, "topologyKey": "kubernetes.io/hostname"}]}}}),
            ),
            pod(
                "spread",
                "20s",
                "100m",
                json!({"app": "s"}),
                json!({"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                    "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "s"}}}]}),
            ),
        ],
    );
    let t = explain(d.path(), "anti");
    let nb = "nb: untolerated taint dedicated=x:NoSchedule  [TaintToleration]";
    assert_eq!(
        misses(&t),
        [
            "na: node(s) didn't match pod anti-affinity rules  [InterPodAffinity]",
            nb
        ],
        "{t}"
    );
    let t = explain(d.path(), "spread");
    assert_eq!(
        misses(&t),
        [
            "na: node(s) didn't match pod topology spread constraints  [PodTopologySpread]",
            nb
        ],
        "{t}"
    );
}

#[test]
fn volume_node_affinity_conflict() {
    let d = tmp();
    let pv = json!({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "disk-n2"},
        "spec": {"capacity": {"storage": "100Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "local",
            "local": {"path": "/mnt/a"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n2"]}]}]}},
            "claimRef": {"kind": "PersistentVolumeClaim", "namespace": "default", "name": "data", "uid": "uid-pvc-default-data"}},
        "status": {"phase": "Bound"}});
    let pvc = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": "default",
            "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "local",
            "resources": {"requests": {"storage": "50Gi"}}, "volumeName": "disk-n2"},
        "status": {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "100Gi"}}});
    let sc = json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "local"},
        "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"});
    run(
        d.path(),
        vec![
            node("n1", "4", json!({}), json!({})),
            // The disk's node is cordoned: the pod can go nowhere.
            node("n2", "4", json!({}), json!({"unschedulable": true})),
        ],
        vec![sc, pv, pvc],
        vec![pod(
            "db",
            "0s",
            "1",
            json!({}),
            json!({"volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}),
        )],
    );
    let t = explain(d.path(), "db");
    let m = misses(&t);
    assert_eq!(
        m,
        [
            "n1: node(s) didn't match PersistentVolume's node affinity  [VolumeBinding]",
            "n2: node is cordoned (spec.unschedulable)  [NodeUnschedulable]",
        ],
        "{t}"
    );
}

#[test]
fn scores_table_json_and_bad_input() {
    let d = tmp();
    run(
        d.path(),
        vec![
            node("n1", "4", json!({}), json!({})),
            node("n2", "4", json!({}), json!({})),
            node("n3", "8", json!({}), json!({})),
        ],
        vec![],
        vec![pod("p", "0s", "1", json!({}), json!({}))],
    );
    let out = d.path().join("out");
    let out_s = out.to_str().unwrap();
    let o = ksim(&["explain", out_s, "p", "--top", "2"]);
    assert!(o.status.success());
    let t = String::from_utf8(o.stdout).unwrap();
    assert!(
        t.contains("result: Scheduled  nodes 3  evaluated 3  feasible 3  pick n3"),
        "{t}"
    );
    assert!(t.contains("Top 2 of 3 scored nodes"), "{t}");
    // The pick row is marked and leads; the plugin columns are the weighted scores.
    let top: Vec<&str> = t
        .lines()
        .skip_while(|l| !l.starts_with("Top 2"))
        .filter(|l| l.starts_with('│'))
        .collect();
    assert_eq!(top.len(), 3, "{t}");
    assert!(
        top[0].contains("NodeResourcesFit") && top[0].contains("total"),
        "{t}"
    );
    assert!(top[1].contains('*') && top[1].contains(" n3 "), "{t}");
    assert!(top[2].contains(" n1 ") || top[2].contains(" n2 "), "{t}");

    let o = ksim(&["explain", out_s, "default/p", "--json"]);
    assert!(o.status.success());
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["pick"], "n3");
    assert_eq!(v["top"][0]["node"], "n3");
    assert_eq!(v["top"][0]["pick"], true);
    let weighted: i64 = v["top"][0]["weighted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_i64().unwrap())
        .sum();
    assert_eq!(weighted, v["top"][0]["total"].as_i64().unwrap());
    assert_eq!(v["verdicts"][0]["reason"], "feasible");
    assert_eq!(v["verdicts"][0]["count"], 3);

    // --at: the attempt at or before the time.
    let o = ksim(&["explain", out_s, "p", "--at", "1m"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let bad = |args: &[&str], needle: &str| {
        let o = ksim(args);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains(needle), "{args:?}: {e}");
    };
    bad(
        &["explain", out_s, "nope"],
        "no recorded attempt of pod default/nope",
    );
    bad(
        &["explain", out_s, "p", "--attempt", "9"],
        "pod default/p has recorded attempts 1",
    );
    bad(&["explain", out_s, "p", "--at", "soon"], "--at");
    // The pod was tried at 0 s; add a later pod to check "before the first attempt".
    let dir2 = tmp();
    run(
        dir2.path(),
        vec![node("n1", "4", json!({}), json!({}))],
        vec![],
        vec![pod("late", "2m", "1", json!({}), json!({}))],
    );
    let out2 = dir2.path().join("out");
    bad(
        &["explain", out2.to_str().unwrap(), "late", "--at", "1m"],
        "before the first recorded attempt",
    );
    // A run without --explain.
    let plain = d.path().join("plain");
    let o = ksim(&[
        "run",
        d.path().join("s.yaml").to_str().unwrap(),
        "-q",
        "--out",
        plain.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    bad(&["explain", plain.to_str().unwrap(), "p"], "--explain");
    bad(
        &["explain", d.path().join("missing").to_str().unwrap(), "p"],
        "no explain.jsonl",
    );
    // A damaged record is named by file and line.
    let damaged = d.path().join("damaged");
    std::fs::create_dir_all(&damaged).unwrap();
    let good = std::fs::read_to_string(out.join("explain.jsonl")).unwrap();
    std::fs::write(
        damaged.join("explain.jsonl"),
        format!("{good}{{\"pod\": 3\n"),
    )
    .unwrap();
    let line = good.lines().count() + 1;
    bad(
        &["explain", damaged.to_str().unwrap(), "p"],
        &format!("explain.jsonl:{line}:"),
    );
}

/// The README walkthrough's scenario: the payments pods wait for zone b to come back, the
/// preempted web pods for cpu, and `ksim explain` says so.
#[test]
fn incident_scenario_walkthrough() {
    let d = tmp();
    let out = d.path().join("inc");
    let scenario =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/incident-zone-loss.yaml");
    let o = ksim(&[
        "run",
        scenario.to_str().unwrap(),
        "-q",
        "--explain",
        "pending",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let pods = std::fs::read_to_string(out.join("pods.csv")).unwrap();
    let pending: Vec<&str> = pods
        .lines()
        .filter(|l| l.split(',').nth(10) == Some("pending"))
        .map(|l| l.split(',').nth(1).unwrap())
        .collect();
    assert_eq!(pending.len(), 4, "{pods}");
    assert!(
        pending.iter().all(|p| p.starts_with("payments-")),
        "{pending:?}"
    );
    // At the last attempt zone a is full again too: every node fails two plugins.
    let t = ksim(&["explain", out.to_str().unwrap(), pending[0]]);
    let t = String::from_utf8(t.stdout).unwrap();
    assert!(
        t.contains("no near miss: every rejected node failed more than one plugin (6)"),
        "{t}"
    );
    let t = ksim(&[
        "explain",
        out.to_str().unwrap(),
        pending[0],
        "--attempt",
        "1",
    ]);
    let t = String::from_utf8(t.stdout).unwrap();
    let m = misses(&t);
    assert_eq!(m.len(), 4, "{t}");
    assert!(
        m.iter().all(|l| l.contains(
            "didn't match node selector topology.kubernetes.io/zone=b (node has topology.kubernetes.io/zone=a)"
        )),
        "{t}"
    );
    // A web pod preempted by a report pod waited for cpu; a toleration would also have done.
    // Its controller re-creates it ~10 ms after the preemption at 900 s, while the victims
    // still terminate (30 s grace): the first attempt finds the victims' cpu still held; the
    // second, once they are gone (930 s), finds zone a 200m short. It binds only at the end
    // of the run (the report pods finish), after four or five attempts.
    let web = pods
        .lines()
        .find(|l| {
            l.starts_with("default,web-")
                && l.split(',').nth(8).and_then(|a| a.parse::<u32>().ok()) >= Some(4)
        })
        .expect("a web pod tried at least four times");
    let web = web.split(',').nth(1).unwrap();
    let t = ksim(&["explain", out.to_str().unwrap(), web, "--attempt", "1"]);
    let t = String::from_utf8(t.stdout).unwrap();
    let m = misses(&t);
    assert!(
        m[0].ends_with("Insufficient cpu — 2200m short  [NodeResourcesFit]"),
        "{t}"
    );
    let t = ksim(&["explain", out.to_str().unwrap(), web, "--attempt", "2"]);
    let t = String::from_utf8(t.stdout).unwrap();
    let m = misses(&t);
    assert!(
        m[0].ends_with("Insufficient cpu — 200m short  [NodeResourcesFit]"),
        "{t}"
    );
    assert!(
        m.last()
            .unwrap()
            .ends_with("untolerated taint dedicated=infra:NoSchedule  [TaintToleration]"),
        "{t}"
    );
}
