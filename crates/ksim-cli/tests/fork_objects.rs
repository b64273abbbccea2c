//! What-if variants with `objects:` (Kubernetes objects applied at the fork instant as
//! `kubectl apply` would): a branch equals a run whose trace has the same `CreateObject` /
//! `UpdateObject` at that instant; on the shipped incident (zone b's kubelets stop at 10 min),
//! a shorter toleration rolled out before the failure brings the evictions forward, and a
//! PodDisruptionBudget changes nothing (taint-based eviction does not go through the Eviction
//! API, so no budget holds it back).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "ksim failed: {}\n{}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// `ksim run SCENARIO -q --out OUT [--fork-at T --variant V...]`.
fn run(scenario: &Path, out: &Path, fork: Option<(&str, &[PathBuf])>) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ksim"));
    c.arg("run").arg(scenario).args(["-q", "--out"]).arg(out);
    if let Some((t, variants)) = fork {
        c.args(["--fork-at", t]);
        for v in variants {
            c.arg("--variant").arg(v);
        }
    }
    ok(&c.output().expect("run ksim"));
}

/// The incident scenario written into `dir`, its files named by absolute path, with `extra`
/// trace lines (if any) in a second trace.
fn incident_with(dir: &Path, name: &str, extra: &[String]) -> PathBuf {
    let src = root().join("scenarios");
    let mut text = read(&src.join("incident-node-failure.yaml")).replace(
        "incident-node-failure/",
        &format!("{}/incident-node-failure/", src.display()),
    );
    if !extra.is_empty() {
        let t = dir.join(format!("{name}.jsonl"));
        std::fs::write(&t, extra.join("\n") + "\n").unwrap();
        text = text.replace("events.jsonl]", &format!("events.jsonl, {}]", t.display()));
        assert!(text.contains(&t.display().to_string()), "{text}");
    }
    let p = dir.join(format!("{name}.yaml"));
    std::fs::write(&p, text).unwrap();
    p
}

/// pods.csv rows as (name, finished_s, outcome, eviction_cause).
fn pods(csv: &str) -> Vec<(String, f64, String, String)> {
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
    let col = |n: &str| header.iter().position(|h| *h == n).expect(n);
    let (name, fin, out, cause) = (
        col("name"),
        col("finished_s"),
        col("outcome"),
        col("eviction_cause"),
    );
    lines
        .map(|l| {
            let r: Vec<&str> = l.split(',').collect();
            (
                r[name].to_string(),
                r[fin].parse().unwrap_or(f64::INFINITY),
                r[out].to_string(),
                r[cause].to_string(),
            )
        })
        .collect()
}

const WEB_30S: &str = r#"{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"}, "spec": {"replicas": 12, "selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": {"matchLabels": {"app": "web"}}}], "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}, {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}], "containers": [{"name": "web", "resources": {"requests": {"cpu": "1", "memory": "2Gi"}}}]}}}}"#;

const PDB: &str = r#"{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "web-pdb"}, "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "web"}}}}"#;

#[test]
fn objects_variants_act_as_a_traces_update_and_create_object() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    // JSON is YAML: the variant carries the very objects the traces carry.
    let variants = [("roll-web", WEB_30S), ("add-pdb", PDB)];
    let mut files = Vec::new();
    for (name, obj) in variants {
        let v = d.join(format!("{name}.yaml"));
        std::fs::write(&v, format!("{{\"objects\": [{obj}]}}\n")).unwrap();
        files.push(v);
    }
    // Between the monitor passes (every 5 s), as a trace's event at that instant would be.
    let at = "302.5s";
    run(
        &incident_with(d, "base", &[]),
        &d.join("forked"),
        Some((at, &files)),
    );
    for ((name, obj), kind) in variants.iter().zip(["UpdateObject", "CreateObject"]) {
        let line = format!("{{\"at\": \"{at}\", \"kind\": \"{kind}\", \"object\": {obj}}}");
        let traced = d.join(format!("traced-{name}"));
        run(&incident_with(d, name, &[line]), &traced, None);
        let branch = d.join("forked/branches").join(name);
        for f in [
            "pods.csv",
            "placements.csv",
            "utilization.csv",
            "node_events.csv",
            "controllers.csv",
        ] {
            assert!(
                read(&branch.join(f)) == read(&traced.join(f)),
                "{name}: {f}: the variant's objects differ from the trace's {kind}"
            );
        }
    }
    // The Deployment rolled: its new pods replaced the old ones from the fork on.
    let rolled = read(&d.join("forked/branches/roll-web/pods.csv"));
    assert_ne!(rolled, read(&d.join("forked/pods.csv")));
}

#[test]
fn on_the_incident_a_shorter_toleration_brings_evictions_forward_and_a_pdb_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("fork");
    let v = root().join("scenarios/variants");
    let variants = [v.join("web-toleration-30s.yaml"), v.join("web-pdb.yaml")];
    run(
        &root().join("scenarios/incident-node-failure.yaml"),
        &out,
        Some(("5m", &variants)),
    );
    let evicted_web = |csv: &str| -> Vec<f64> {
        pods(csv)
            .into_iter()
            .filter(|p| p.0.starts_with("web-") && p.3 == "taint")
            .map(|p| p.1)
            .collect()
    };
    // Base: zone b's four web pods are evicted 300 s after their node's NoExecute taint
    // (660-690 s) and finish their 30 s termination grace (990-1020 s).
    let base_csv = read(&out.join("pods.csv"));
    let base = evicted_web(&base_csv);
    assert_eq!(base.len(), 4, "{base:?}");
    assert!(
        base.iter().all(|t| (990.0..=1020.0).contains(t)),
        "{base:?}"
    );
    // The README's timeline: Unknown and NoSchedule at 655 s, NoExecute one node per 10 s
    // from 660 s; checkout's pods (30 s) evicted at 700 and 710 s, gone after their grace.
    let events = read(&out.join("node_events.csv"));
    for row in [
        "655,zone-b-0,b,NodeNotReady,Unknown",
        "655,zone-b-0,b,TaintAdded,node.kubernetes.io/unreachable:NoSchedule",
        "660,zone-b-0,b,TaintAdded,node.kubernetes.io/unreachable:NoExecute",
        "690,zone-b-3,b,TaintAdded,node.kubernetes.io/unreachable:NoExecute",
    ] {
        assert!(events.lines().any(|l| l == row), "{row}\n{events}");
    }
    let mut checkout: Vec<f64> = pods(&base_csv)
        .into_iter()
        .filter(|p| p.0.starts_with("checkout-") && p.3 == "taint")
        .map(|p| p.1)
        .collect();
    checkout.sort_by(f64::total_cmp);
    assert_eq!(checkout, [730.0, 740.0]);
    // Rolled out to 30 s before the failure: evicted 30 s after the taint instead.
    let short = evicted_web(&read(&out.join("branches/web-toleration-30s/pods.csv")));
    assert!(!short.is_empty(), "no web pod evicted");
    assert!(
        short.iter().all(|t| (720.0..=750.0).contains(t)),
        "{short:?}"
    );
    // The budget allows no disruption, yet the taint evicts exactly as without it.
    assert_eq!(read(&out.join("branches/web-pdb/pods.csv")), base_csv);
}

#[test]
fn bad_objects_variants_exit_2_naming_file_line_and_field() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let pdb = "  - {apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: p}, spec: {maxUnavailable: 0}}\n";
    let cases: [(&str, String, &[&str]); 4] = [
        (
            "map.yaml",
            "objects: {kind: PodDisruptionBudget}\n".into(),
            &["map.yaml:1", "objects", "expected a list"],
        ),
        (
            "typo.yaml",
            "name: t\nobjects:\n  - {apiVersion: policy/v1, kind: PodDisruptionBudget, metadata: {name: p}, spec: {maxUnavailabel: 0}}\n".into(),
            &["typo.yaml", "objects[0]", "maxUnavailabel"],
        ),
        (
            "twice.yaml",
            format!("objects:\n{pdb}{pdb}"),
            &["twice.yaml:3", "objects[1]", "PodDisruptionBudget default/p is given twice"],
        ),
        (
            "scaled.yaml",
            "scale: {deployment/web: 3}\nobjects:\n  - {apiVersion: apps/v1, kind: Deployment, metadata: {name: web}, spec: {replicas: 2, selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: {containers: [{name: c}]}}}}\n".into(),
            &["scaled.yaml:3", "objects[0]", "also scaled by scale.deployment/web"],
        ),
    ];
    let scenario = root().join("scenarios/incident-node-failure.yaml");
    for (file, text, want) in cases {
        let p = d.join(file);
        std::fs::write(&p, text).unwrap();
        let o = Command::new(env!("CARGO_BIN_EXE_ksim"))
            .arg("run")
            .arg(&scenario)
            .args(["-q", "--fork-at", "5m", "--variant"])
            .arg(&p)
            .arg("--out")
            .arg(d.join("out"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{file}: {err}");
        for w in want {
            assert!(err.contains(w), "{file}: {w:?} not in {err}");
        }
        assert!(!d.join("out").exists(), "{file}: output left behind");
    }
}
