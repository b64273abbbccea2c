//! Kubernetes dumps, audit logs and SimKube traces. The dump and the audit log are hand-made
//! (no real production dump is public); the SimKube traces are the upstream examples copied into
//! `traces/simkube-example-traces`.

use std::path::{Path, PathBuf};

mod common;

use common::audit_line;
use ksim_engine::{InputEvent, TimedEvent};
use ksim_trace::{import, load_nodes, validate_trace, ImportFormat, ImportOptions, NativeReader};

fn events(p: &Path) -> Vec<TimedEvent> {
    NativeReader::open(p)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

const DUMP: &str = r#"{"apiVersion": "v1", "kind": "List", "items": [
 {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "labels": {"zone": "a"}}, "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}},
 {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000},
 {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "normal"}, "value": 10, "globalDefault": true},
 {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pending-late", "namespace": "web", "creationTimestamp": "2024-01-01T10:00:00Z"}, "spec": {"priorityClassName": "high", "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}, "status": {"phase": "Pending"}},
 {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pending-early", "namespace": "web", "creationTimestamp": "2024-01-01T09:00:00Z"}, "spec": {"containers": [{"name": "c"}]}, "status": {"phase": "Pending"}},
 {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "running", "namespace": "web"}, "spec": {"nodeName": "n1", "priority": 7, "priorityClassName": "high", "containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}, "status": {"phase": "Running"}},
 {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "done", "namespace": "web"}, "spec": {"nodeName": "n1", "containers": [{"name": "c"}]}, "status": {"phase": "Succeeded"}},
 {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "pdb", "namespace": "web"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "x"}}}},
 {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}}
]}"#;

#[test]
fn kube_dump_binds_running_pods_and_applies_priority_classes() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("dump.json");
    std::fs::write(&p, DUMP).unwrap();
    let out = dir.path().join("out");
    let sum = import(
        ImportFormat::KubeDump,
        &[p],
        &out,
        &ImportOptions::default(),
    )
    .unwrap();
    assert_eq!(sum.nodes, 1);
    assert_eq!(sum.events["CreatePod"], 3);
    assert_eq!(sum.skipped["pod already finished (Succeeded/Failed)"], 1);
    assert_eq!(sum.skipped["kind ConfigMap is not used"], 1);
    assert_eq!(sum.other_files, [out.join("objects.yaml")]);
    // The table says which pods are placed, not scheduled.
    assert_eq!((sum.pods_bound_at_start, sum.pods_bound_later), (1, 0));
    let table = sum.to_string();
    let row = |label: &str| {
        table
            .lines()
            .find(|l| l.starts_with(label))
            .map(|l| l.split_whitespace().last().unwrap_or("").to_string())
    };
    assert_eq!(
        row("  of which already bound: placed at t=0, not scheduled").as_deref(),
        Some("1"),
        "{table}"
    );
    assert_eq!(
        row("  of which to be scheduled").as_deref(),
        Some("2"),
        "{table}"
    );
    let evs = events(&sum.trace_file);
    let pods: Vec<(String, String, Option<i32>)> = evs
        .iter()
        .map(|e| match &e.event {
            InputEvent::CreatePod { pod, .. } => (
                pod.metadata.name.clone(),
                pod.spec.node_name.clone(),
                pod.spec.priority,
            ),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        pods,
        [
            ("running".into(), "n1".into(), Some(7)),
            ("pending-early".into(), "".into(), Some(10)),
            ("pending-late".into(), "".into(), Some(1000)),
        ]
    );
    assert!(evs.iter().all(|e| e.at.micros() == 0));
    // The objects file reads back as cluster objects in a scenario.
    let scen = dir.path().join("s.yaml");
    std::fs::write(&scen, "name: s\ncluster: {nodesFiles: [out/nodes.yaml], objectsFiles: [out/objects.yaml]}\nworkload: {traces: [out/trace.jsonl]}\n").unwrap();
    let plan = ksim_trace::load_scenario(&scen).unwrap();
    assert_eq!(plan.objects.pdbs.len(), 1);
    assert_eq!(plan.nodes.len(), 1);

    std::fs::write(dir.path().join("bad.yaml"), "kind: List\nitems:\n- kind: Node\n  metadata: {name: a}\n  status: {capacity: {cpu: lots}}\n").unwrap();
    let err = import(
        ImportFormat::KubeDump,
        &[dir.path().join("bad.yaml")],
        &out,
        &ImportOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("bad.yaml: items[0]: status.capacity.cpu: quantity \"lots\""),
        "{err}"
    );
}

#[test]
fn audit_log_to_native_events() {
    let node = |taint: bool| {
        let taints = if taint {
            r#", "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}"#
        } else {
            ""
        };
        format!(
            r#"{{"kind": "Node", "metadata": {{"name": "n1", "resourceVersion": "{}"}}{taints}, "status": {{"capacity": {{"cpu": "4"}}}}}}"#,
            taint as u8
        )
    };
    let pod_json = r#"{"kind": "Pod", "metadata": {"name": "p1", "namespace": "ns"}, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}, "status": {"phase": "Pending"}}"#;
    let binding = r#"{"kind": "Binding", "metadata": {"name": "p1"}, "target": {"kind": "Node", "name": "n1"}}"#;
    let lines = [
        audit_line(
            "2024-01-01T00:00:10Z",
            "patch",
            "nodes",
            "status",
            "",
            "n1",
            &node(false),
        ),
        audit_line(
            "2024-01-01T00:00:11Z",
            "create",
            "pods",
            "",
            "ns",
            "p1",
            pod_json,
        ),
        audit_line(
            "2024-01-01T00:00:11.250Z",
            "create",
            "pods",
            "binding",
            "ns",
            "p1",
            binding,
        ),
        audit_line(
            "2024-01-01T00:00:12Z",
            "patch",
            "nodes",
            "status",
            "",
            "n1",
            &node(false),
        ),
        audit_line(
            "2024-01-01T00:00:13Z",
            "update",
            "nodes",
            "",
            "",
            "n1",
            &node(true),
        ),
        audit_line("2024-01-01T00:00:14Z", "get", "pods", "", "ns", "p1", ""),
        audit_line(
            "2024-01-01T00:00:15Z",
            "create",
            "configmaps",
            "",
            "ns",
            "c",
            "",
        ),
        audit_line("2024-01-01T00:00:20Z", "delete", "pods", "", "ns", "p1", ""),
        audit_line(
            "2024-01-01T00:00:21Z",
            "delete",
            "pods",
            "",
            "ns",
            "old",
            "",
        ),
        audit_line("2024-01-01T00:00:30Z", "delete", "nodes", "", "", "n1", ""),
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
    assert_eq!(sum.nodes, 1, "n1 existed before the log: initial node");
    let evs = events(&sum.trace_file);
    let got: Vec<(f64, &str)> = evs
        .iter()
        .map(|e| (e.at.as_secs_f64(), e.event.kind()))
        .collect();
    assert_eq!(
        got,
        [
            (1.0, "CreatePod"),
            (3.0, "UpdateNode"),
            (10.0, "DeletePod"),
            (20.0, "RemoveNode")
        ]
    );
    let InputEvent::CreatePod { pod, .. } = &evs[0].event else {
        panic!()
    };
    assert_eq!(pod.metadata.annotations["ksim.io/observed-node"], "n1");
    assert_eq!(
        pod.metadata.annotations["ksim.io/observed-binding-delay"],
        "0.25s"
    );
    assert_eq!(
        sum.skipped["node update without scheduling-relevant change"],
        1
    );
    assert_eq!(sum.skipped["read-only verb (get/list/watch)"], 1);
    assert_eq!(sum.skipped["resource \"configmaps\" not replayed"], 1);
    assert_eq!(
        sum.skipped["delete of a pod created before the log started"],
        1
    );
    assert!(validate_trace(&sum.trace_file)
        .unwrap()
        .problems
        .iter()
        .all(|p| p.field != "at"));

    std::fs::write(&p, format!("{}\nnot json\n", lines[0])).unwrap();
    let err = import(
        ImportFormat::AuditLog,
        std::slice::from_ref(&p),
        &dir.path().join("out"),
        &ImportOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with(&format!("{}:2: not valid JSON", p.display())),
        "{err}"
    );
    std::fs::write(
        &p,
        audit_line("yesterday", "create", "pods", "", "ns", "p", pod_json),
    )
    .unwrap();
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
            "{}:1: stageTimestamp: \"yesterday\" is not an RFC 3339",
            p.display()
        )),
        "{err}"
    );
}

fn simkube(f: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../traces/simkube-example-traces")
        .join(f)
}

#[test]
fn simkube_bare_pods_cronjob_and_deployments() {
    let dir = tempfile::tempdir().unwrap();
    let sum = import(
        ImportFormat::SimKube,
        &[simkube("bare-pods.sktrace")],
        &dir.path().join("a"),
        &ImportOptions::default(),
    )
    .unwrap();
    let evs = events(&sum.trace_file);
    assert_eq!(sum.events["CreatePod"], 4);
    // bare-pod-1781282449 finished after 12 s (lifecycle [1781282468, 1781282480]); the last
    // one is still running.
    let runs: Vec<Option<i64>> = evs
        .iter()
        .filter_map(|e| match &e.event {
            InputEvent::CreatePod { run_for, .. } => Some(run_for.map(|d| d.micros() / 1_000_000)),
            _ => None,
        })
        .collect();
    assert_eq!(runs, [Some(12), Some(30), Some(30), None]);
    assert_eq!(evs[0].at.micros(), 0);

    let sum = import(
        ImportFormat::SimKube,
        &[simkube("cronjob.sktrace")],
        &dir.path().join("b"),
        &ImportOptions::default(),
    )
    .unwrap();
    let evs = events(&sum.trace_file);
    let got: Vec<(i64, String)> = evs
        .iter()
        .map(|e| match &e.event {
            InputEvent::CreatePod { pod, run_for } => (
                e.at.whole_secs(),
                format!("{} {}", pod.metadata.name, run_for.unwrap()),
            ),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        got,
        [
            (38, "hello-simkube-0 30s".into()),
            (98, "hello-simkube-1 30s".into()),
            (158, "hello-simkube-2 30s".into())
        ]
    );

    let sum = import(
        ImportFormat::SimKube,
        &[simkube("dsb-scaling.sktrace")],
        &dir.path().join("c"),
        &ImportOptions::default(),
    )
    .unwrap();
    // 46 Deployment applies, as the trace README says.
    assert_eq!(sum.read.values().sum::<u64>(), 46, "{sum}");
    assert!(sum.events["CreatePod"] >= 27, "{sum}");
    let rep = validate_trace(&sum.trace_file).unwrap();
    assert!(rep.is_ok(), "{rep}");
    assert_eq!(load_nodes(&sum.nodes_file).unwrap().len(), 0);

    let junk = dir.path().join("junk.sktrace");
    std::fs::write(&junk, b"\x92\x01\x02").unwrap();
    let err = import(
        ImportFormat::SimKube,
        &[junk],
        &dir.path().join("d"),
        &ImportOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("version"), "{err}");
}

const DUMP_WITH_CONTROLLERS: &str = r#"{"apiVersion": "v1", "kind": "List", "items": [
 {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "status": {"capacity": {"cpu": "8", "memory": "8Gi", "pods": "110"}}},
 {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default", "uid": "d1"}, "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}},
 {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web-5d8f7", "namespace": "default", "uid": "r1", "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "d1", "controller": true}]}, "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web", "pod-template-hash": "5d8f7"}}, "template": {"metadata": {"labels": {"app": "web", "pod-template-hash": "5d8f7"}}, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}}},
 {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-5d8f7-abcde", "namespace": "default", "labels": {"app": "web", "pod-template-hash": "5d8f7"}, "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8f7", "uid": "r1", "controller": true}]}, "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}, "status": {"phase": "Running"}},
 {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-5d8f7-fghjk", "namespace": "default", "labels": {"app": "web", "pod-template-hash": "5d8f7"}, "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-5d8f7", "uid": "r1", "controller": true}]}, "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}, "status": {"phase": "Running"}},
 {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "kube-system"}, "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {"priorityClassName": "system-node-critical", "containers": [{"name": "a", "resources": {"requests": {"cpu": "100m"}}}]}}}},
 {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "agent-x7k2p", "namespace": "kube-system", "labels": {"app": "agent"}, "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent", "uid": "a1", "controller": true}]}, "spec": {"nodeName": "n1", "priorityClassName": "system-node-critical", "priority": 2000001000, "containers": [{"name": "a", "resources": {"requests": {"cpu": "100m"}}}]}, "status": {"phase": "Running"}},
 {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "old", "namespace": "default"}, "spec": {"completions": 1, "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "j"}]}}}, "status": {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}},
 {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "batch", "namespace": "default"}, "spec": {"completions": 5, "parallelism": 1, "template": {"metadata": {"labels": {"job": "batch"}}, "spec": {"restartPolicy": "Never", "containers": [{"name": "j", "resources": {"requests": {"cpu": "1"}}}]}}}, "status": {"succeeded": 3, "active": 1}},
 {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "batch-q9z8w", "namespace": "default", "labels": {"job": "batch"}, "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "batch", "uid": "j1", "controller": true}]}, "spec": {"nodeName": "n1", "restartPolicy": "Never", "containers": [{"name": "j", "resources": {"requests": {"cpu": "1"}}}]}, "status": {"phase": "Running"}}
]}"#;

#[test]
fn kube_dump_keeps_controllers_whose_dumped_pods_are_adopted_not_recreated() {
    use ksim_engine::{Record, Simulation};
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("dump.json");
    std::fs::write(&p, DUMP_WITH_CONTROLLERS).unwrap();
    let out = dir.path().join("out");
    let sum = import(
        ImportFormat::KubeDump,
        &[p],
        &out,
        &ImportOptions::default(),
    )
    .unwrap();
    assert_eq!(sum.events["CreatePod"], 4);
    assert_eq!(
        sum.skipped["Job already finished (condition Complete or Failed)"],
        1
    );
    let objects = std::fs::read_to_string(out.join("objects.yaml")).unwrap();
    let scen = dir.path().join("s.yaml");
    std::fs::write(&scen, "name: s\nhorizon: 100s\ncluster: {nodesFiles: [out/nodes.yaml], objectsFiles: [out/objects.yaml]}\nworkload: {traces: [out/trace.jsonl]}\n").unwrap();
    let plan = ksim_trace::load_scenario(&scen).unwrap();
    // The Deployment's ReplicaSet stays only as a selector.
    assert_eq!(plan.objects.replica_sets.len(), 1, "{objects}");
    let mut sim = Simulation::new(
        plan.engine,
        &plan.scheduler,
        &ksim_scheduler::framework::Registry::in_tree(),
        plan.nodes,
        plan.objects,
    )
    .unwrap();
    sim.add_source(Box::new(plan.events)).unwrap();
    let mut records = Vec::new();
    sim.run(&mut |r: &Record| records.push(r.clone())).unwrap();
    // Every dumped pod is its controller's: nothing is created after t=0 (the running Job
    // still has 5 − 3 completions to go, one of them running), and each controller reports it.
    let late: Vec<String> = records
        .iter()
        .filter_map(|r| match r {
            Record::PodCreated { at, name, .. } if at.micros() > 0 => Some(name.clone()),
            _ => None,
        })
        .collect();
    assert!(late.is_empty(), "{late:?}");
    let ctl: Vec<(String, String, i64, u64)> = records
        .iter()
        .filter_map(|r| match r {
            Record::Controller {
                kind,
                name,
                desired,
                live,
                ..
            } => Some((kind.clone(), name.clone(), *desired, *live)),
            _ => None,
        })
        .collect();
    assert_eq!(
        ctl,
        [
            ("DaemonSet".into(), "agent".into(), 1, 1),
            ("Deployment".into(), "web".into(), 2, 2),
            ("Job".into(), "batch".into(), 2, 1),
        ]
    );
}
