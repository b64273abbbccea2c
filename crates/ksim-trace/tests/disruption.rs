//! The disruption controller as a user meets it (issue 34): PodDisruptionBudgets whose status
//! is computed from the pods and their controllers' scale, read by preemption, whether the
//! PDB comes from `cluster.objectsFiles` or a trace's `CreateObject`.
//!
//! The repro: two 1-cpu nodes; a bare pod `b1` bound to n2; ReplicaSet `a` (1 replica, 1 cpu)
//! whose pod lands on n1; a PDB over `app=a`; at 30 s a priority-100 pod asking 1 cpu must
//! preempt one of them.

use std::path::Path;

use ksim_engine::{Outcome, Record, Simulation};
use ksim_scheduler::framework::Registry;

const NODES: &str = "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Node, metadata: {name: n1}, status: {capacity: {cpu: '1', memory: 4Gi, pods: '110'}}}\n- {apiVersion: v1, kind: Node, metadata: {name: n2}, status: {capacity: {cpu: '1', memory: 4Gi, pods: '110'}}}\n";

const RS: &str = r#"{"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "a"}, "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "a"}}, "template": {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}}"#;

const B1: &str = r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b1", "labels": {"app": "b"}}, "spec": {"nodeName": "n2", "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}"#;

const HIGH: &str = r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "high"}, "spec": {"priority": 100, "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}"#;

/// The PDB's Kubernetes JSON: `budget` is its spec's budget field, `status` its status (or
/// none).
fn pdb(budget: &str, status: &str) -> String {
    format!(
        r#"{{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {{"name": "pdb-a"}}, "spec": {{{budget}, "selector": {{"matchLabels": {{"app": "a"}}}}}}{status}}}"#
    )
}

/// Where the PDB is given.
#[derive(Clone, Copy)]
enum PdbFrom {
    ObjectsFile,
    Trace,
}

/// Runs the repro and returns the preempted pods' names (in order), and the controlPlane
/// section given.
fn preempted(dir: &Path, pdb_json: &str, from: PdbFrom, control_plane: &str) -> Vec<String> {
    std::fs::write(dir.join("nodes.yaml"), NODES).unwrap();
    let mut trace = format!(
        "{{\"at\": \"0s\", \"kind\": \"CreatePod\", \"pod\": {B1}}}\n{{\"at\": \"0s\", \"kind\": \"CreateObject\", \"object\": {RS}}}\n"
    );
    let mut cluster = "cluster: {nodesFiles: [nodes.yaml]}\n".to_string();
    match from {
        PdbFrom::ObjectsFile => {
            std::fs::write(
                dir.join("objects.yaml"),
                format!("{{\"apiVersion\": \"v1\", \"kind\": \"List\", \"items\": [{pdb_json}]}}"),
            )
            .unwrap();
            cluster = "cluster: {nodesFiles: [nodes.yaml], objectsFiles: [objects.yaml]}\n".into();
        }
        PdbFrom::Trace => {
            trace.push_str(&format!(
                "{{\"at\": \"0s\", \"kind\": \"CreateObject\", \"object\": {pdb_json}}}\n"
            ));
        }
    }
    trace.push_str(&format!(
        "{{\"at\": \"30s\", \"kind\": \"CreatePod\", \"pod\": {HIGH}}}\n"
    ));
    std::fs::write(dir.join("events.jsonl"), trace).unwrap();
    let path = dir.join("s.yaml");
    std::fs::write(
        &path,
        format!("name: s\nseed: 1\nhorizon: 2m\n{cluster}workload: {{traces: [events.jsonl]}}\n{control_plane}"),
    )
    .unwrap();
    let plan = ksim_trace::load_scenario(&path).unwrap();
    let seed = plan.engine.seed;
    let mut sim = Simulation::new(
        plan.engine,
        &plan.scheduler,
        &Registry::in_tree(),
        plan.nodes,
        plan.objects,
    )
    .unwrap();
    let mut events = plan.events;
    events.set_seed(seed);
    sim.add_source(Box::new(events)).unwrap();
    let mut out = Vec::new();
    sim.run(&mut |r: &Record| {
        if let Record::PodEnded {
            name,
            outcome: Outcome::Preempted,
            ..
        } = r
        {
            out.push(name.clone());
        }
    })
    .unwrap();
    out
}

/// The ReplicaSet's pod (named `a-<5 chars>`).
fn is_rs_pod(name: &str) -> bool {
    name.starts_with("a-") && name.len() == 7
}

/// Issue 34's bug: a PDB from `cluster.objectsFiles` (no namespace, as a dump of `default`
/// or a hand-written file has it) stopped protecting pods once a controller created a
/// ReplicaSet in the run; given by a trace's `CreateObject` it protected them.
#[test]
fn objects_files_pdb_protects_replica_set_pods_created_in_the_run() {
    for from in [PdbFrom::ObjectsFile, PdbFrom::Trace] {
        let dir = tempfile::tempdir().unwrap();
        let p = pdb(
            r#""minAvailable": 1"#,
            r#", "status": {"disruptionsAllowed": 0}"#,
        );
        // With the controller off, the file's status (0 allowed) is what protects.
        let off = "controlPlane: {disruption: {enabled: false}}\n";
        assert_eq!(preempted(dir.path(), &p, from, off), vec!["b1".to_string()]);
        assert_eq!(preempted(dir.path(), &p, from, ""), vec!["b1".to_string()]);
    }
}

/// Computed status, `maxUnavailable: 1` over the 1-replica ReplicaSet: expected 1, desired 0,
/// healthy 1, so 1 disruption is allowed and the preemptor takes the ReplicaSet's pod (the
/// victim with the latest start time).
#[test]
fn computed_max_unavailable_one_lets_preemption_take_the_replica_set_pod() {
    for from in [PdbFrom::ObjectsFile, PdbFrom::Trace] {
        let dir = tempfile::tempdir().unwrap();
        let got = preempted(dir.path(), &pdb(r#""maxUnavailable": 1"#, ""), from, "");
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(is_rs_pod(&got[0]), "{got:?}");
    }
}

/// Computed status, `minAvailable: 1`: 1 healthy, 1 desired, none allowed: the preemptor
/// takes the unprotected bare pod on the other node.
#[test]
fn computed_min_available_one_protects_and_the_bare_pod_is_taken() {
    for from in [PdbFrom::ObjectsFile, PdbFrom::Trace] {
        let dir = tempfile::tempdir().unwrap();
        let got = preempted(dir.path(), &pdb(r#""minAvailable": 1"#, ""), from, "");
        assert_eq!(got, vec!["b1".to_string()]);
    }
}

/// Percentages: `maxUnavailable: "100%"` of 1 is 1 (allowed), `minAvailable: "100%"` is 1
/// (none allowed).
#[test]
fn computed_percentages() {
    let dir = tempfile::tempdir().unwrap();
    let got = preempted(
        dir.path(),
        &pdb(r#""maxUnavailable": "100%""#, ""),
        PdbFrom::Trace,
        "",
    );
    assert!(got.len() == 1 && is_rs_pod(&got[0]), "{got:?}");
    let got = preempted(
        dir.path(),
        &pdb(r#""minAvailable": "100%""#, ""),
        PdbFrom::Trace,
        "",
    );
    assert_eq!(got, vec!["b1".to_string()]);
}

/// With the controller off, a PDB without status allows 0 (the old behaviour, still
/// settable): `maxUnavailable: 1` then protects.
#[test]
fn controller_off_keeps_the_file_status() {
    let dir = tempfile::tempdir().unwrap();
    let off = "controlPlane: {disruption: {enabled: false}}\n";
    let got = preempted(
        dir.path(),
        &pdb(r#""maxUnavailable": 1"#, ""),
        PdbFrom::Trace,
        off,
    );
    assert_eq!(got, vec!["b1".to_string()]);
}
