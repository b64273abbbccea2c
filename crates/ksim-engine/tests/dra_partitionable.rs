//! DRAPartitionableDevices through the engine (on by default in v1.36): partitions of one GPU
//! draw on the counters their pool shares, so a partition is allocated only while its counters
//! last, and the whole GPU only when no partition holds any; in v1.35 (gate off) such slices
//! are refused at admission.

mod common;

use common::dra::{class, config, node, object, try_sim};
use ksim_api::object::ApiObject;
use ksim_api::version::KubernetesVersion;
use ksim_api::Pod;
use ksim_engine::{InputEvent, Record, SimDuration, SimTime, TimedEvent};
use ksim_scheduler::framework::Registry;
use serde_json::json;

/// n1's GPU pool: a counter slice (40Gi of `memory` in set `gpu-0`) and a device slice with
/// the whole GPU (40Gi) and two halves (20Gi each).
fn pool() -> Vec<ApiObject> {
    let counters = object(
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": "n1-counters"},
        "spec": {"driver": "gpu.example.com", "nodeName": "n1",
                 "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 2},
                 "sharedCounters": [{"name": "gpu-0", "counters": {"memory": {"value": "40Gi"}}}]}}),
    );
    let part = |name: &str, mem: &str, kind: &str| {
        json!({"name": name, "attributes": {"kind": {"string": kind}},
               "consumesCounters": [{"counterSet": "gpu-0",
                                     "counters": {"memory": {"value": mem}}}]})
    };
    let devices = object(
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": "n1-devices"},
        "spec": {"driver": "gpu.example.com", "nodeName": "n1",
                 "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 2},
                 "devices": [part("whole", "40Gi", "whole"), part("half-0", "20Gi", "half"),
                             part("half-1", "20Gi", "half")]}}),
    );
    vec![counters, devices]
}

/// Claim `name` for one device of `kind` (`whole` or `half`).
fn claim(name: &str, kind: &str) -> ApiObject {
    object(
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu",
            "selectors": [{"cel": {"expression":
                format!("device.attributes[\"gpu.example.com\"].kind == \"{kind}\"")}}]}}]}}}),
    )
}

fn pod(name: &str, claim: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimName": claim}],
                 "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"},
                                                            "claims": [{"name": "gpu"}]}}]}
    }))
    .expect("pod")
}

fn create(s: i64, name: &str, claim: &str, run_for: Option<i64>) -> TimedEvent {
    TimedEvent {
        at: SimTime::from_secs(s),
        event: InputEvent::CreatePod {
            pod: Box::new(pod(name, claim)),
            run_for: run_for.map(SimDuration::from_secs),
        },
    }
}

/// Runs v`version` with n1's pool and the claims for 120 s: the records.
fn run(version: KubernetesVersion, events: Vec<TimedEvent>) -> Result<Vec<Record>, String> {
    let mut initial = vec![class()];
    initial.extend(pool());
    initial.extend([claim("a", "half"), claim("b", "half"), claim("w", "whole")]);
    let mut sim = try_sim(
        config(Some(120), None),
        &Registry::in_tree_for(version),
        vec![node("n1")],
        initial,
        events,
    )
    .map_err(|e| e.to_string())?;
    let mut records = Vec::new();
    sim.run_to(SimTime::from_secs(120), &mut |r: &Record| {
        records.push(r.clone())
    })
    .map_err(|e| e.to_string())?;
    Ok(records)
}

fn bound_at(records: &[Record], name: &str) -> Option<SimTime> {
    records.iter().find_map(|r| match r {
        Record::PodBound { at, name: n, .. } if n == name => Some(*at),
        _ => None,
    })
}

#[test]
fn partitions_share_the_counters_of_their_gpu() {
    // Two halves fit; the whole GPU waits until both have ended (t=30 and t=60).
    let events = vec![
        create(0, "pa", "a", Some(30)),
        create(1, "pb", "b", Some(60)),
        create(2, "pw", "w", None),
    ];
    let r = run(KubernetesVersion::V1_36, events).expect("run");
    assert!(bound_at(&r, "pa").is_some() && bound_at(&r, "pb").is_some());
    let w = bound_at(&r, "pw").expect("the whole GPU is allocated once the halves are freed");
    assert!(w >= SimTime::from_secs(60), "{w:?}");

    // The whole GPU first: no half fits while it holds the counters.
    let events = vec![create(0, "pw", "w", Some(30)), create(1, "pa", "a", None)];
    let r = run(KubernetesVersion::V1_36, events).expect("run");
    assert!(bound_at(&r, "pw").is_some_and(|t| t < SimTime::from_secs(1)));
    let a = bound_at(&r, "pa").expect("a half after the whole GPU ends");
    assert!(a >= SimTime::from_secs(30), "{a:?}");
}

#[test]
fn v1_35_refuses_counter_slices() {
    let err = run(KubernetesVersion::V1_35, vec![]).expect_err("refused");
    assert!(
        err.contains("ResourceSlice n1-counters")
            && err.contains("spec.sharedCounters")
            && err.contains("DRAPartitionableDevices feature gate is off"),
        "{err}"
    );
}
