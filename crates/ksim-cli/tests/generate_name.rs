//! Initial nodes and objects with `metadata.generateName` and no name (a nodes file, a
//! scenario's objectsFiles) are named as the API server would, from the run seed: the same seed
//! gives the same names, the names are distinct, and another seed gives other names.

use std::path::Path;
use std::process::Command;

const NODES: &str = "apiVersion: v1\nkind: List\nitems:\n\
- metadata: {generateName: gen-}\n  status: {allocatable: {cpu: \"4\", memory: 8Gi, pods: \"110\"}}\n\
- metadata: {generateName: gen-}\n  status: {allocatable: {cpu: \"4\", memory: 8Gi, pods: \"110\"}}\n\
- metadata: {name: gen-fixed}\n  status: {allocatable: {cpu: \"4\", memory: 8Gi, pods: \"110\"}}\n";

const OBJECTS: &str = "apiVersion: v1\nkind: List\nitems:\n\
- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {generateName: web-}\n  spec:\n    replicas: 3\n    \
selector: {matchLabels: {app: web}}\n    template:\n      metadata: {labels: {app: web}}\n      \
spec: {containers: [{name: c, resources: {requests: {cpu: \"3\", memory: 1Gi}}}]}\n\
- apiVersion: v1\n  kind: PersistentVolume\n  metadata: {generateName: pv-}\n  \
spec: {capacity: {storage: 1Gi}, accessModes: [ReadWriteOnce], storageClassName: x, hostPath: {path: /x}}\n";

/// Runs the scenario with `seed`; returns pods.csv.
fn run(dir: &Path, seed: u64, out: &str) -> String {
    std::fs::write(dir.join("nodes.yaml"), NODES).unwrap();
    std::fs::write(dir.join("objects.yaml"), OBJECTS).unwrap();
    std::fs::write(
        dir.join("s.yaml"),
        "name: s\nhorizon: 2m\ncluster: {nodesFiles: [nodes.yaml], objectsFiles: [objects.yaml]}\n",
    )
    .unwrap();
    let out = dir.join(out);
    let o = Command::new(env!("CARGO_BIN_EXE_ksim"))
        .args(["run", dir.join("s.yaml").to_str().unwrap(), "-q"])
        .args(["--seed", &seed.to_string(), "--out", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::read_to_string(out.join("pods.csv")).unwrap()
}

/// (pod name, node) of each pods.csv row.
fn placed(csv: &str) -> Vec<(String, String)> {
    csv.lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[1].to_string(), f[9].to_string())
        })
        .collect()
}

#[test]
fn generate_name_initial_nodes_and_objects_are_named_from_the_seed() {
    let dir = tempfile::tempdir().unwrap();
    let a = run(dir.path(), 7, "a");
    let b = run(dir.path(), 7, "b");
    assert_eq!(a, b, "same seed, same names");
    let rows = placed(&a);
    // Each pod asks 3 of a node's 4 CPUs: the three pods land on the three nodes.
    assert_eq!(rows.len(), 3, "{a}");
    let mut nodes: Vec<&str> = rows.iter().map(|(_, n)| n.as_str()).collect();
    nodes.sort();
    nodes.dedup();
    assert_eq!(nodes.len(), 3, "three distinct nodes: {a}");
    assert!(nodes.contains(&"gen-fixed"), "{a}");
    for n in nodes.iter().filter(|n| **n != "gen-fixed") {
        assert_eq!(n.len(), "gen-".len() + 5, "{n}");
        assert!(
            n["gen-".len()..]
                .bytes()
                .all(|c| b"bcdfghjklmnpqrstvwxz2456789".contains(&c)),
            "{n}"
        );
    }
    // The Deployment was named web-XXXXX; its pods carry that name.
    for (pod, _) in &rows {
        assert!(
            pod.starts_with("web-") && pod.as_bytes()[9] == b'-',
            "{pod}"
        );
    }
    let c = run(dir.path(), 8, "c");
    assert_ne!(placed(&c), rows, "another seed, other names");
}

#[test]
fn an_initial_object_of_a_kind_ksim_cannot_create_still_needs_a_name() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("objects.yaml"),
        "kind: List\nitems:\n- {apiVersion: v1, kind: Namespace, metadata: {generateName: ns-}}\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("s.yaml"),
        "name: s\nhorizon: 1m\ncluster: {objectsFiles: [objects.yaml]}\n",
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_ksim"))
        .args([
            "run",
            dir.path().join("s.yaml").to_str().unwrap(),
            "-q",
            "--out",
        ])
        .arg(dir.path().join("o"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("objects.yaml: items[0]: metadata.name: a Namespace needs a name"),
        "{err}"
    );
}
