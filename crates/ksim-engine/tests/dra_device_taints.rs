//! DRADeviceTaints through the engine (on by default in v1.36): a device tainted `NoSchedule`
//! or `NoExecute` is not allocated to a claim that does not tolerate it, and the device taint
//! eviction controller deletes the pods whose allocated device gets a `NoExecute` taint their
//! claim does not tolerate: at once, after the smallest `tolerationSeconds`, or never.

mod common;

use common::dra::{class, config, devices, node, object, slice_with, try_sim};
use ksim_api::object::ApiObject;
use ksim_api::version::KubernetesVersion;
use ksim_api::Pod;
use ksim_engine::{InputEvent, Record, SimTime, Simulation, TimedEvent};
use ksim_scheduler::framework::Registry;
use serde_json::{json, Value};

fn secs(s: i64) -> SimTime {
    SimTime::from_secs(s)
}

/// A slice with one device on `node`, with `taints`.
fn gpu_slice(node: &str, taints: Value) -> ApiObject {
    let mut d = devices(1);
    if taints != json!([]) {
        d[0]["taints"] = taints;
    }
    slice_with(node, d)
}

/// Claim `c` asking for one GPU with `tolerations`.
fn claim(tolerations: Value) -> ApiObject {
    object(
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu",
            "tolerations": tolerations}}]}}}),
    )
}

fn pod() -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimName": "c"}],
                 "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"},
                                                            "claims": [{"name": "gpu"}]}}]}
    }))
    .expect("pod")
}

fn at(s: i64, event: InputEvent) -> TimedEvent {
    TimedEvent { at: secs(s), event }
}

/// v1.36, nodes n1 and n2 with one GPU each (`n1`'s with `n1_taints`), the claim, the pod at
/// t=1, and `events`.
fn sim(n1_taints: Value, tolerations: Value, events: Vec<TimedEvent>) -> Simulation {
    // The pod comes at t=1, after the t=0 events.
    let pod_at = at(
        1,
        InputEvent::CreatePod {
            pod: Box::new(pod()),
            run_for: None,
        },
    );
    let (mut all, later): (Vec<_>, Vec<_>) = events.into_iter().partition(|e| e.at < secs(1));
    all.push(pod_at);
    all.extend(later);
    try_sim(
        config(Some(600), None),
        &Registry::in_tree_for(KubernetesVersion::V1_36),
        vec![node("n1"), node("n2")],
        vec![
            class(),
            gpu_slice("n1", n1_taints),
            gpu_slice("n2", json!([])),
            claim(tolerations),
        ],
        all,
    )
    .expect("simulation")
}

fn run(sim: &mut Simulation, s: i64) -> Vec<Record> {
    let mut out = Vec::new();
    sim.run_to(secs(s), &mut |r: &Record| out.push(r.clone()))
        .expect("run");
    out
}

fn bound_node(records: &[Record]) -> Option<String> {
    records.iter().find_map(|r| match r {
        Record::PodBound { name, node, .. } if name == "p" => Some(node.clone()),
        _ => None,
    })
}

fn evicted(records: &[Record]) -> Option<(SimTime, String)> {
    records.iter().find_map(|r| match r {
        Record::PodEvicted {
            at, name, cause, ..
        } if name == "p" => Some((*at, cause.clone())),
        _ => None,
    })
}

/// Taints `n1`'s GPU at `t` (an UpdateObject of its slice).
fn taint_at(t: i64, taints: Value) -> TimedEvent {
    at(
        t,
        InputEvent::UpdateObject {
            object: Box::new(gpu_slice("n1", taints)),
        },
    )
}

fn no_execute() -> Value {
    json!([{"key": "broken", "effect": "NoExecute"}])
}

#[test]
fn a_tainted_device_is_not_allocated_unless_tolerated() {
    // n2's GPU is kept out by a taint no claim here tolerates; n1's is tainted `effect`.
    let block_n2 = || {
        vec![at(
            0,
            InputEvent::UpdateObject {
                object: Box::new(gpu_slice_n2_blocked()),
            },
        )]
    };
    for effect in ["NoSchedule", "NoExecute"] {
        let taints = json!([{"key": "broken", "effect": effect}]);
        let mut s = sim(taints.clone(), json!([]), block_n2());
        assert_eq!(
            bound_node(&run(&mut s, 5)),
            None,
            "{effect}: no device to allocate"
        );
        let mut s = sim(
            taints,
            json!([{"key": "broken", "operator": "Exists"}]),
            block_n2(),
        );
        assert_eq!(
            bound_node(&run(&mut s, 5)).as_deref(),
            Some("n1"),
            "{effect}"
        );
    }
    // `None` is informational.
    let mut s = sim(
        json!([{"key": "info", "effect": "None"}]),
        json!([]),
        block_n2(),
    );
    assert_eq!(bound_node(&run(&mut s, 5)).as_deref(), Some("n1"));
}

/// The pod lands on n1 (n2's GPU is taken by a taint the claim does not tolerate), then n1's
/// GPU gets a NoExecute taint at t=10.
fn evicting(tolerations: Value, events: Vec<TimedEvent>) -> Vec<Record> {
    let mut evs = vec![at(
        0,
        InputEvent::UpdateObject {
            object: Box::new(gpu_slice_n2_blocked()),
        },
    )];
    evs.push(taint_at(10, no_execute()));
    evs.extend(events);
    let mut s = sim(json!([]), tolerations, evs);
    run(&mut s, 600)
}

fn gpu_slice_n2_blocked() -> ApiObject {
    gpu_slice("n2", json!([{"key": "other", "effect": "NoSchedule"}]))
}

#[test]
fn a_no_execute_taint_evicts_the_pods_of_the_device() {
    let r = evicting(json!([]), vec![]);
    assert_eq!(bound_node(&r).as_deref(), Some("n1"));
    assert_eq!(evicted(&r), Some((secs(10), "device-taint".to_string())));
}

#[test]
fn toleration_seconds_delay_the_eviction_and_a_toleration_without_them_prevents_it() {
    let tol = |s: Option<i64>| {
        let mut t = json!({"key": "broken", "operator": "Exists", "effect": "NoExecute"});
        if let Some(s) = s {
            t["tolerationSeconds"] = json!(s);
        }
        json!([t])
    };
    let r = evicting(tol(Some(30)), vec![]);
    assert_eq!(evicted(&r), Some((secs(40), "device-taint".to_string())));
    let r = evicting(tol(Some(-5)), vec![]);
    assert_eq!(evicted(&r), Some((secs(10), "device-taint".to_string())));
    assert_eq!(evicted(&evicting(tol(None), vec![])), None);
    // A toleration without an effect does not count for eviction (upstream counts only
    // `NoExecute` tolerations there), though it lets the device be allocated.
    let any = json!([{"key": "broken", "operator": "Exists", "tolerationSeconds": 30}]);
    assert_eq!(
        evicted(&evicting(any, vec![])),
        Some((secs(10), "device-taint".to_string()))
    );
}

#[test]
fn removing_the_taint_in_time_cancels_the_eviction() {
    let tol = json!([{"key": "broken", "operator": "Exists", "effect": "NoExecute",
                      "tolerationSeconds": 30}]);
    let r = evicting(tol, vec![taint_at(20, json!([]))]);
    assert_eq!(bound_node(&r).as_deref(), Some("n1"));
    assert_eq!(evicted(&r), None);
}

#[test]
fn time_added_counts_on_the_run_clock() {
    // Added at t=5 (1970-01-01T00:00:05Z), tolerated for 30 s, written at t=10: evicted at 35.
    let tol = json!([{"key": "broken", "operator": "Exists", "effect": "NoExecute",
                      "tolerationSeconds": 30}]);
    let taint = json!([{"key": "broken", "effect": "NoExecute",
                        "timeAdded": "1970-01-01T00:00:05Z"}]);
    let mut evs = vec![at(
        0,
        InputEvent::UpdateObject {
            object: Box::new(gpu_slice_n2_blocked()),
        },
    )];
    evs.push(taint_at(10, taint));
    let mut s = sim(json!([]), tol, evs);
    let r = run(&mut s, 600);
    assert_eq!(evicted(&r), Some((secs(35), "device-taint".to_string())));
    // A malformed one is refused, naming the field.
    let bad = json!([{"key": "broken", "effect": "NoExecute", "timeAdded": "yesterday"}]);
    let mut s = sim(json!([]), json!([]), vec![taint_at(10, bad)]);
    let err = s
        .run_to(secs(600), &mut |_: &Record| {})
        .expect_err("malformed timeAdded");
    assert!(
        err.to_string()
            .contains("spec.devices[0].taints[0].timeAdded"),
        "{err}"
    );
}
