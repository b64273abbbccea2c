//! DRAConsumableCapacity through the engine (on by default in v1.36): one device with
//! `allowMultipleAllocations` and 40Gi of `memory` is shared by claims asking 10Gi each, four
//! at a time; the fifth waits until one pod ends and its claim is freed. In v1.35 (gate off)
//! the slice is refused at admission, naming the field and the gate.

mod common;

use common::dra::{capacity_claim, class, config, node, shared_slice, try_sim};
use ksim_api::version::KubernetesVersion;
use ksim_api::Pod;
use ksim_engine::{InputEvent, Record, SimDuration, SimTime, Simulation, TimedEvent};
use ksim_scheduler::framework::Registry;
use serde_json::json;

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

/// Runs v`version` for 120 s with n1's shared device (40Gi), claims `c0..c4` (10Gi each) and
/// pods `p0..p4` created at t = 0..4, `p0` running for 30 s: the records and the simulation.
fn run(version: KubernetesVersion) -> Result<(Vec<Record>, Simulation), String> {
    let mut initial = vec![class(), shared_slice("n1", "40Gi")];
    initial.extend((0..5).map(|i| capacity_claim(&format!("c{i}"), "10Gi")));
    let events = (0..5)
        .map(|i| {
            create(
                i,
                &format!("p{i}"),
                &format!("c{i}"),
                (i == 0).then_some(30),
            )
        })
        .collect();
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
    Ok((records, sim))
}

fn bound_at(records: &[Record], name: &str) -> Option<SimTime> {
    records.iter().find_map(|r| match r {
        Record::PodBound { at, name: n, .. } if n == name => Some(*at),
        _ => None,
    })
}

#[test]
fn four_claims_share_the_device_the_fifth_waits() {
    let (r, sim) = run(KubernetesVersion::V1_36).expect("run");
    for i in 0..4 {
        let t = bound_at(&r, &format!("p{i}")).unwrap_or_else(|| panic!("p{i} bound"));
        assert!(t < SimTime::from_secs(5), "p{i} at {t:?}");
    }
    let t = bound_at(&r, "p4").expect("p4 bound once p0 ends");
    assert!(t >= SimTime::from_secs(30), "p4 at {t:?}");

    // Each allocation is a share of nic-0 consuming 10Gi, with its own shareID.
    let snap = sim.snapshot();
    let mut ids = std::collections::BTreeSet::new();
    for i in 1..5 {
        let c = &snap.objects.dra.resource_claims[&format!("default/c{i}")];
        let a = c.status.allocation.as_ref().expect("allocated");
        let res = &a.devices.results[0];
        assert_eq!(res.device, "nic-0");
        let q = &res.consumed_capacity["memory"];
        assert_eq!(q.to_string(), "10Gi");
        ids.insert(res.share_id.clone().expect("shareID"));
    }
    assert_eq!(ids.len(), 4, "{ids:?}");
}

#[test]
fn v1_35_refuses_shared_devices() {
    let err = run(KubernetesVersion::V1_35)
        .map(|_| ())
        .expect_err("refused");
    assert!(
        err.contains("ResourceSlice n1-nic")
            && err.contains("allowMultipleAllocations")
            && err.contains("DRAConsumableCapacity feature gate is off"),
        "{err}"
    );
}
