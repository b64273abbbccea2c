//! Audit-log import of DRA objects (`resource.k8s.io`): classes, slices and templates become
//! object events, claims the users create come along without status, the scheduler's status
//! writes and the claims generated for pods are skipped; the imported trace runs.

use std::path::Path;

mod common;

use common::audit_line;
use ksim_engine::config::EngineConfig;
use ksim_engine::{InputEvent, Record, SimTime, Simulation, TimedEvent, VecSource};
use ksim_scheduler::framework::Registry;
use ksim_scheduler::node_info::ClusterObjects;
use ksim_trace::{import, load_nodes, ImportFormat, ImportOptions, NativeReader};

fn events(p: &Path) -> Vec<TimedEvent> {
    NativeReader::open(p)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn slice(devices: usize) -> String {
    let devs: Vec<String> = (0..devices)
        .map(|i| format!(r#"{{"name": "gpu-{i}"}}"#))
        .collect();
    format!(
        r#"{{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {{"name": "n1-gpu", "resourceVersion": "{devices}"}}, "spec": {{"driver": "gpu.example.com", "nodeName": "n1", "pool": {{"name": "n1", "generation": {devices}, "resourceSliceCount": 1}}, "devices": [{}]}}}}"#,
        devs.join(", ")
    )
}

const CLASS: &str = r#"{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"}, "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}}]}}"#;

fn claim(name: &str, owner: &str, status: &str) -> String {
    format!(
        r#"{{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {{"name": "{name}", "namespace": "default"{owner}}}, "spec": {{"devices": {{"requests": [{{"name": "gpu", "exactly": {{"deviceClassName": "gpu", "count": 2}}}}]}}}}{status}}}"#
    )
}

const POD: &str = r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "trainer", "namespace": "default"}, "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimName": "train"}], "containers": [{"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}, "claims": [{"name": "gpu"}]}}]}}"#;

const NODE: &str = r#"{"kind": "Node", "apiVersion": "v1", "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}}, "status": {"capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"}, "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}}}"#;

#[test]
fn audit_log_dra_objects_become_object_events() {
    let ts = |s: u32| format!("2024-05-01T10:00:{s:02}.000Z");
    let allocated = r#", "status": {"allocation": {"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "gpu-0"}]}}}"#;
    let generated = r#", "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u", "controller": true}]"#;
    let lines = [
        audit_line(&ts(0), "update", "nodes", "status", "", "n1", NODE),
        audit_line(&ts(1), "create", "deviceclasses", "", "", "gpu", CLASS),
        // One device at first: the claim asks for two.
        audit_line(
            &ts(2),
            "create",
            "resourceslices",
            "",
            "",
            "n1-gpu",
            &slice(1),
        ),
        audit_line(
            &ts(3),
            "create",
            "resourceclaims",
            "",
            "default",
            "train",
            &claim("train", "", allocated),
        ),
        audit_line(&ts(4), "create", "pods", "", "default", "trainer", POD),
        // The real scheduler's allocation: the simulated one writes its own.
        audit_line(
            &ts(5),
            "update",
            "resourceclaims",
            "status",
            "default",
            "train",
            &claim("train", "", allocated),
        ),
        // A claim the resource claim controller generated for a pod.
        audit_line(
            &ts(6),
            "create",
            "resourceclaims",
            "",
            "default",
            "p-gpu-abcde",
            &claim("p-gpu-abcde", generated, ""),
        ),
        audit_line(
            &ts(7),
            "delete",
            "resourceclaims",
            "",
            "default",
            "p-gpu-abcde",
            "",
        ),
        // The driver publishes a second device: the pod fits.
        audit_line(
            &ts(8),
            "update",
            "resourceslices",
            "",
            "",
            "n1-gpu",
            &slice(2),
        ),
        audit_line(&ts(9), "update", "deviceclasses", "", "", "gpu", CLASS),
        audit_line(&ts(10), "delete", "resourceslices", "", "", "old-slice", ""),
    ];
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("audit.log");
    std::fs::write(&p, lines.join("\n")).unwrap();
    let out = dir.path().join("out");
    let sum = import(
        ImportFormat::AuditLog,
        std::slice::from_ref(&p),
        &out,
        &ImportOptions::default(),
    )
    .unwrap();
    let evs = events(&sum.trace_file);
    let got: Vec<(i64, String)> = evs
        .iter()
        .map(|e| {
            let what = match &e.event {
                InputEvent::CreateObject { object } => format!("create {}", object.key()),
                InputEvent::UpdateObject { object } => format!("update {}", object.key()),
                InputEvent::DeleteObject {
                    object_kind, name, ..
                } => format!("delete {object_kind} {name}"),
                InputEvent::CreatePod { pod, .. } => format!("pod {}", pod.key()),
                other => format!("{other:?}"),
            };
            (e.at.micros() / 1_000_000, what)
        })
        .collect();
    let want: Vec<(i64, String)> = [
        (1, "create gpu"),
        (2, "create n1-gpu"),
        (3, "create default/train"),
        (4, "pod default/trainer"),
        (8, "update n1-gpu"),
    ]
    .iter()
    .map(|(t, s)| (*t, s.to_string()))
    .collect();
    assert_eq!(got, want);
    // The created claim carries no status (the simulation allocates it).
    let claim = evs
        .iter()
        .find_map(|e| match &e.event {
            InputEvent::CreateObject { object } if object.name() == "train" => {
                Some(serde_json::to_value(object).unwrap())
            }
            _ => None,
        })
        .unwrap();
    assert!(claim.pointer("/status/allocation").is_none(), "{claim}");
    let skipped = |reason: &str| {
        sum.skipped
            .iter()
            .any(|(r, n)| r.contains(reason) && *n == 1)
    };
    assert!(skipped("resourceclaims/status update"), "{:?}", sum.skipped);
    assert!(
        skipped("generated for a pod from a template"),
        "{:?}",
        sum.skipped
    );
    assert!(
        skipped("delete of a ResourceClaim generated from a template"),
        "{:?}",
        sum.skipped
    );
    assert!(
        skipped("deviceclasses update without change"),
        "{:?}",
        sum.skipped
    );
    assert!(
        skipped("delete of a ResourceSlice created before the log"),
        "{:?}",
        sum.skipped
    );

    // The run: the pod waits for the second device, then takes both.
    let cfg = EngineConfig {
        seed: 1,
        horizon: Some(SimTime::from_secs(60)),
        ..Default::default()
    };
    let mut sim = Simulation::new(
        cfg,
        &Default::default(),
        &Registry::in_tree(),
        load_nodes(&out.join("nodes.yaml")).unwrap(),
        ClusterObjects::default(),
    )
    .unwrap();
    sim.add_source(Box::new(VecSource::new(evs))).unwrap();
    let mut bound = None;
    let mut devices = Vec::new();
    sim.run(&mut |r: &Record| match r {
        Record::PodBound { at, node, .. } => bound = Some((at.micros() / 1_000_000, node.clone())),
        Record::Devices {
            at,
            allocated,
            total,
            ..
        } => devices.push((at.micros() / 1_000_000, *allocated, *total)),
        _ => {}
    })
    .unwrap();
    assert_eq!(bound, Some((8, "n1".to_string())));
    assert_eq!(devices, [(2, 0, 1), (8, 0, 2), (8, 2, 2)]);
}
