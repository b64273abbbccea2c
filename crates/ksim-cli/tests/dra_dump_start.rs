//! A cluster dump whose ResourceClaim is still reserved for a pod that has finished: `ksim
//! import kube-dump` skips the finished pod, and the resource claim controller's start-up
//! sync (upstream `Controller.Run` → `syncClaim` of every claim) frees the claim, so the
//! pending pod of the dump gets the only GPU.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::json;

fn ksim(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ksim"))
        .args(args)
        .current_dir(dir)
        .env("CI", "true")
        .output()
        .unwrap()
}

fn ok(o: &Output) {
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

fn pod(name: &str, claim: &str, phase: &str, node: Option<&str>) -> serde_json::Value {
    let mut p = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
                     "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimName": claim}],
                 "containers": [{"name": "c", "image": "x",
                                 "resources": {"requests": {"cpu": "1"}, "claims": [{"name": "gpu"}]}}]},
        "status": {"phase": phase}});
    if let Some(n) = node {
        p["spec"]["nodeName"] = json!(n);
    }
    p
}

#[test]
fn a_claim_reserved_for_a_finished_pod_of_the_dump_is_freed_and_the_pending_pod_gets_the_gpu() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let claim = |name: &str, reserved_for: Option<&str>| {
        let mut c = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}});
        if let Some(p) = reserved_for {
            c["metadata"]["finalizers"] = json!(["resource.kubernetes.io/delete-protection"]);
            c["status"] = json!({
                "allocation": {"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com",
                                                        "pool": "gpu-node", "device": "gpu-0"}]},
                               "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                                   {"key": "metadata.name", "operator": "In", "values": ["gpu-node"]}]}]}},
                "reservedFor": [{"resource": "pods", "name": p, "uid": format!("uid-{p}")}]});
        }
        c
    };
    let dump = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": "gpu-node", "labels": {"kubernetes.io/hostname": "gpu-node"}},
         "status": {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
                    "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
         "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}}]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "gpu-node-gpu"},
         "spec": {"driver": "gpu.example.com", "nodeName": "gpu-node",
                  "pool": {"name": "gpu-node", "generation": 1, "resourceSliceCount": 1},
                  "devices": [{"name": "gpu-0"}]}},
        claim("old", Some("finished")),
        claim("mine", None),
        pod("finished", "old", "Succeeded", Some("gpu-node")),
        pod("next", "mine", "Pending", None),
    ]});
    std::fs::write(d.join("dump.json"), serde_json::to_string(&dump).unwrap()).unwrap();
    ok(&ksim(
        d,
        &["import", "kube-dump", "dump.json", "--out", "imported"],
    ));
    std::fs::write(
        d.join("imported/scenario.yaml"),
        "name: imported\nseed: 1\nhorizon: 1m\ncluster:\n  nodesFiles: [nodes.yaml]\n  objectsFiles: [objects.yaml]\nworkload:\n  traces: [trace.jsonl]\n",
    )
    .unwrap();
    ok(&ksim(
        d,
        &["run", "imported/scenario.yaml", "--out", "run", "-q"],
    ));
    let pods = std::fs::read_to_string(d.join("run/pods.csv")).unwrap();
    let mut r = csv::Reader::from_reader(pods.as_bytes());
    let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    let col = |n: &str| header.iter().position(|h| h == n).unwrap();
    let next = r
        .records()
        .map(|x| x.unwrap())
        .find(|x| &x[col("name")] == "next")
        .expect("next in pods.csv");
    assert_eq!(&next[col("node")], "gpu-node", "{pods}");
    assert_eq!(
        &next[col("claims")],
        "mine=gpu.example.com/gpu-node/gpu-0",
        "{pods}"
    );
}
