//! The Kubernetes version a run behaves as (docs/versions.md): the quickstart's placements
//! differ between `--kubernetes-version 1.35` and `1.36`, each run records its version, and an
//! unsupported version or a refused feature gate is an error naming what is supported.

use std::path::{Path, PathBuf};
use std::process::Command;

fn ksim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ksim"))
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn run_quickstart(out: &Path, extra: &[&str]) {
    run_quickstart_until(out, "20m", extra)
}

fn run_quickstart_until(out: &Path, until: &str, extra: &[&str]) {
    let o = ksim()
        .arg("run")
        .arg(root().join("scenarios/quickstart.yaml"))
        .args(["--until", until, "-q", "--out"])
        .arg(out)
        .args(extra)
        .output()
        .expect("run ksim");
    assert!(
        o.status.success(),
        "ksim run {extra:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("json")
}

#[test]
fn quickstart_placements_differ_between_versions_and_each_run_records_its_version() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b, d) = (
        tmp.path().join("v135"),
        tmp.path().join("v136"),
        tmp.path().join("default"),
    );
    run_quickstart(&a, &["--kubernetes-version", "1.35"]);
    run_quickstart(&b, &["--kubernetes-version", "v1.36"]);
    run_quickstart(&d, &[]);
    let pa = std::fs::read(a.join("placements.csv")).unwrap();
    let pb = std::fs::read(b.join("placements.csv")).unwrap();
    let pd = std::fs::read(d.join("placements.csv")).unwrap();
    assert_ne!(pa, pb, "the same placements under 1.35 and 1.36");
    assert_eq!(pb, pd, "1.36 is the default");
    let differing = String::from_utf8_lossy(&pa)
        .lines()
        .zip(String::from_utf8_lossy(&pb).lines())
        .filter(|(x, y)| x != y)
        .count();
    assert!(differing > 0);
    for (dir, v, release) in [
        (&a, "1.35", "v1.35.4"),
        (&b, "1.36", "v1.36.2"),
        (&d, "1.36", "v1.36.2"),
    ] {
        let s = json(&dir.join("summary.json"));
        assert_eq!(s["kubernetes_version"], v, "{}", dir.display());
        let r = json(&dir.join("ksim-run.json"));
        assert_eq!(r["kubernetesVersion"], v);
        assert_eq!(r["kubeScheduler"], release);
        let html = std::fs::read_to_string(dir.join("report.html")).unwrap();
        assert!(
            html.contains(&format!("Kubernetes {v} ·")),
            "{}",
            dir.display()
        );
        let scenario = std::fs::read_to_string(dir.join("scenario.yaml")).unwrap();
        assert!(scenario.contains("kubernetesVersion"), "{scenario}");
    }
    // The recorded scenario re-runs as the same version.
    let again = tmp.path().join("again");
    let o = ksim()
        .arg("run")
        .arg(a.join("scenario.yaml"))
        .args(["-q", "--out"])
        .arg(&again)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(std::fs::read(again.join("placements.csv")).unwrap(), pa);
}

#[test]
fn unsupported_versions_and_refused_gates_are_errors() {
    let quickstart = root().join("scenarios/quickstart.yaml");
    for cmd in [
        vec!["run", quickstart.to_str().unwrap(), "--until", "1m"],
        vec!["bench", "--suite", "x"],
        vec!["conformance", "tests/conformance/cases"],
    ] {
        let o = ksim()
            .args(&cmd)
            .args(["--kubernetes-version", "1.20"])
            .current_dir(root())
            .output()
            .unwrap();
        assert!(!o.status.success(), "{cmd:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("1.35, 1.36"), "{cmd:?}: {err}");
        assert!(err.contains("1.20"), "{cmd:?}: {err}");
    }
    let tmp = tempfile::tempdir().unwrap();
    for (gates, want) in [
        ("NoSuchGate=true", "unrecognized feature gate: NoSuchGate"),
        (
            "DynamicResourceAllocation=false",
            "cannot set feature gate DynamicResourceAllocation to false, feature is locked to true",
        ),
        (
            "NodeDeclaredFeatures",
            "missing bool value for NodeDeclaredFeatures",
        ),
    ] {
        let o = ksim()
            .arg("run")
            .arg(&quickstart)
            .args(["--until", "1m", "-q", "--feature-gates", gates, "--out"])
            .arg(tmp.path().join("x"))
            .output()
            .unwrap();
        assert!(!o.status.success(), "{gates}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(want), "{gates}: {err}");
    }
    // A gate of 1.36 only is unknown to 1.35.
    let o = ksim()
        .arg("run")
        .arg(&quickstart)
        .args([
            "--until",
            "1m",
            "-q",
            "--kubernetes-version",
            "1.35",
            "--feature-gates",
            "StaleControllerConsistencyJob=true",
            "--out",
        ])
        .arg(tmp.path().join("y"))
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("unrecognized feature gate"));
    // In the scenario: the file and the field are named.
    let sc = tmp.path().join("bad.yaml");
    std::fs::write(
        &sc,
        "name: bad\nkubernetesVersion: \"1.20\"\ncluster: {pools: []}\n",
    )
    .unwrap();
    let o = ksim().arg("run").arg(&sc).args(["-q"]).output().unwrap();
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("bad.yaml") && err.contains("1.35, 1.36"),
        "{err}"
    );
}

#[test]
fn a_gate_turned_off_restores_the_profile_without_node_declared_features() {
    // NodeDeclaredFeatures=false under 1.36: the effective configuration's default profile
    // has no NodeDeclaredFeatures; under 1.36's defaults it has.
    let tmp = tempfile::tempdir().unwrap();
    let (on, off) = (tmp.path().join("on"), tmp.path().join("off"));
    run_quickstart_until(&on, "1m", &[]);
    run_quickstart_until(
        &off,
        "1m",
        &["--feature-gates", "NodeDeclaredFeatures=false"],
    );
    let cfg_on = std::fs::read_to_string(on.join("scheduler-config.yaml")).unwrap();
    let cfg_off = std::fs::read_to_string(off.join("scheduler-config.yaml")).unwrap();
    assert!(cfg_on.contains("NodeDeclaredFeatures"), "{cfg_on}");
    assert!(!cfg_off.contains("NodeDeclaredFeatures"), "{cfg_off}");
    let r = json(&off.join("ksim-run.json"));
    assert_eq!(r["featureGates"]["NodeDeclaredFeatures"], false);
}
