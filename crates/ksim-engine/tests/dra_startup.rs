//! The resource claim controller's start-up sync (upstream `Controller.Run`: every claim the
//! informer lists at start goes through `syncClaim`): claims present at t=0 (objects files, a
//! kube-dump's objects.yaml) lose `reservedFor` entries of pods that do not exist, are
//! deallocated when no consumer is left, and generated claims whose pod is gone are deleted.

mod common;

use common::dra::{claim, class, config, node, object, one_gpu_spec, slice, try_sim};
use ksim_api::object::ApiObject;
use ksim_api::Pod;
use ksim_engine::{InputEvent, Record, SimDuration, SimTime, Simulation, TimedEvent};
use ksim_scheduler::framework::Registry;
use serde_json::{json, Value};

/// A claim as a dump holds it: `gpu-0` allocated on n1, with the scheduler's finalizer, and
/// reserved for `consumers` (name, uid); `owner`: the pod that owns it (generated claim).
fn allocated_claim(
    name: &str,
    consumers: &[(&str, &str)],
    owner: Option<(&str, &str)>,
) -> ApiObject {
    let reserved: Vec<Value> = consumers
        .iter()
        .map(|(n, uid)| json!({"resource": "pods", "name": n, "uid": uid}))
        .collect();
    let mut meta = json!({"name": name, "namespace": "default",
                          "finalizers": ["resource.kubernetes.io/delete-protection"]});
    if let Some((pod, uid)) = owner {
        meta["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "Pod", "name": pod, "uid": uid, "controller": true}]);
        meta["annotations"] = json!({"resource.kubernetes.io/pod-claim-name": "gpu"});
    }
    object(
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": meta, "spec": one_gpu_spec(),
        "status": {"allocation": {
            "devices": {"results": [{"request": "gpu", "driver": "gpu.example.com",
                                     "pool": "n1", "device": "gpu-0"}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}},
            "reservedFor": reserved}}),
    )
}

/// A pod naming claim `claim` as its entry `gpu`; `node`: already bound there.
fn pod(name: &str, claim: &str, node: Option<&str>) -> Pod {
    let mut p = json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimName": claim}],
                 "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"},
                                                            "claims": [{"name": "gpu"}]}}]}
    });
    if let Some(n) = node {
        p["spec"]["nodeName"] = json!(n);
    }
    serde_json::from_value(p).expect("pod")
}

fn create(p: Pod) -> TimedEvent {
    TimedEvent {
        at: SimTime::ZERO,
        event: InputEvent::CreatePod {
            pod: Box::new(p),
            run_for: None,
        },
    }
}

/// The one constructor of this file's simulations: nodes n1 and n2, the objects present at
/// t=0, the trace's events; `delay`: the flat `controllerDelay` (None: upstream's timing).
fn sim(initial: Vec<ApiObject>, events: Vec<TimedEvent>, delay: Option<SimDuration>) -> Simulation {
    try_sim(
        config(Some(60), delay),
        &Registry::in_tree(),
        vec![node("n1"), node("n2")],
        initial,
        events,
    )
    .expect("simulation")
}

fn run(sim: &mut Simulation, secs: i64) -> Vec<Record> {
    let mut records = Vec::new();
    sim.run_to(SimTime::from_secs(secs), &mut |r: &Record| {
        records.push(r.clone())
    })
    .expect("run");
    records
}

fn bound(records: &[Record], name: &str) -> Option<(SimTime, String)> {
    records.iter().find_map(|r| match r {
        Record::PodBound {
            at, name: n, node, ..
        } if n == name => Some((*at, node.clone())),
        _ => None,
    })
}

/// (allocated devices, reservedFor names, finalizers) of claim `name`, None when deleted.
fn claim_state(sim: &Simulation, name: &str) -> Option<(Vec<String>, Vec<String>, Vec<String>)> {
    let c = sim
        .snapshot()
        .objects
        .dra
        .resource_claims
        .get(&format!("default/{name}"))?
        .clone();
    let devices = c
        .status
        .allocation
        .as_ref()
        .map(|a| a.devices.results.iter().map(|r| r.device.clone()).collect())
        .unwrap_or_default();
    let rf = c
        .status
        .reserved_for
        .iter()
        .map(|r| r.name.clone())
        .collect();
    Some((devices, rf, c.metadata.finalizers.clone()))
}

#[test]
fn a_claim_reserved_for_a_pod_that_no_longer_exists_is_freed_at_start_and_a_pending_pod_gets_the_device(
) {
    // A dump's cluster: the only GPU is held by a claim reserved for "gone", which the dump
    // does not have (it finished); "waiting" is pending with its own claim.
    let mut s = sim(
        vec![
            class(),
            slice("n1", 1),
            allocated_claim("old", &[("gone", "uid-default-gone")], None),
            claim("mine"),
        ],
        vec![create(pod("waiting", "mine", None))],
        None,
    );
    let rec = run(&mut s, 30);
    // Synced one reaction delay (10 ms) after t=0: reservation, allocation and finalizer go.
    assert_eq!(claim_state(&s, "old"), Some((vec![], vec![], vec![])));
    let (t, n) = bound(&rec, "waiting").expect("waiting gets the freed GPU");
    assert_eq!(n, "n1");
    assert!(t >= SimTime(10_000) && t < SimTime::from_secs(1), "{t}");
    let (devices, rf, _) = claim_state(&s, "mine").expect("mine");
    assert_eq!(
        (devices, rf),
        (vec!["gpu-0".to_string()], vec!["waiting".to_string()])
    );
}

#[test]
fn a_claim_reserved_for_a_pod_present_at_start_stays_allocated_even_with_no_reaction_delay() {
    // "holder" is in the trace at t=0, bound to n1: its reservation is valid. With a zero
    // controllerDelay the start-up sync runs at t=0, still after every t=0 event.
    for delay in [None, Some(SimDuration(0))] {
        let mut s = sim(
            vec![
                class(),
                slice("n1", 1),
                allocated_claim("held", &[("holder", "uid-default-holder")], None),
                claim("mine"),
            ],
            vec![
                create(pod("holder", "held", Some("n1"))),
                create(pod("waiting", "mine", None)),
            ],
            delay,
        );
        let rec = run(&mut s, 30);
        assert_eq!(
            claim_state(&s, "held"),
            Some((
                vec!["gpu-0".to_string()],
                vec!["holder".to_string()],
                vec!["resource.kubernetes.io/delete-protection".to_string()]
            )),
            "{delay:?}"
        );
        assert!(bound(&rec, "waiting").is_none(), "{delay:?}");
    }
}

#[test]
fn a_reservation_of_a_replaced_pod_is_dropped_and_a_generated_claim_of_a_gone_pod_deleted() {
    // "twin" exists at start, but as another pod (another uid) than the one "twin-claim" was
    // reserved for: the entry is stale. "orphan-gpu-abcde" was generated for pod "orphan",
    // which is gone: it is deallocated and deleted.
    let mut s = sim(
        vec![
            class(),
            slice("n1", 1),
            allocated_claim("twin-claim", &[("twin", "uid-of-the-old-twin")], None),
            allocated_claim(
                "orphan-gpu-abcde",
                &[],
                Some(("orphan", "uid-default-orphan")),
            ),
        ],
        vec![create(pod("twin", "twin-claim", None))],
        None,
    );
    let rec = run(&mut s, 30);
    assert_eq!(claim_state(&s, "orphan-gpu-abcde"), None);
    // twin-claim was freed, then allocated again by the scheduler for the new twin.
    let (devices, rf, _) = claim_state(&s, "twin-claim").expect("twin-claim");
    assert_eq!(
        (devices, rf),
        (vec!["gpu-0".to_string()], vec!["twin".to_string()])
    );
    let (t, n) = bound(&rec, "twin").expect("twin bound");
    assert_eq!(n, "n1");
    assert!(t >= SimTime(10_000), "{t}");
}
