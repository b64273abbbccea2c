//! Dynamic Resource Allocation in the engine: the resource claim controller (claims generated
//! from templates, `status.resourceClaimStatuses`, `reservedFor` clean-up, deallocation and
//! deletion when pods end), pods waiting outside the queue for a missing claim or template,
//! and the claim events that requeue pods.

mod common;

use common::dra::{claim, class, config, node, slice, template, try_sim};
use ksim_api::object::ApiObject;
use ksim_api::Pod;
use ksim_engine::{
    AttemptResult, InputEvent, Record, SimDuration, SimTime, Simulation, TimedEvent,
};
use ksim_scheduler::framework::Registry;
use serde_json::json;

/// A pod with one claim entry `gpu`: from a template, or naming a claim.
fn pod(name: &str, template: Option<&str>, claim: Option<&str>) -> Pod {
    let mut entry = json!({"name": "gpu"});
    if let Some(t) = template {
        entry["resourceClaimTemplateName"] = json!(t);
    }
    if let Some(c) = claim {
        entry["resourceClaimName"] = json!(c);
    }
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"resourceClaims": [entry],
                 "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"},
                                                            "claims": [{"name": "gpu"}]}}]}
    }))
    .expect("pod")
}

fn at(s: f64, event: InputEvent) -> TimedEvent {
    TimedEvent {
        at: SimTime((s * 1e6).round() as i64),
        event,
    }
}

fn create(p: Pod, run_for: Option<i64>) -> InputEvent {
    InputEvent::CreatePod {
        pod: Box::new(p),
        run_for: run_for.map(SimDuration::from_secs),
    }
}

fn sim(horizon: i64, initial: Vec<ApiObject>, events: Vec<TimedEvent>) -> Simulation {
    try_sim(
        config(Some(horizon), None),
        &Registry::in_tree(),
        vec![node("n1"), node("n2")],
        initial,
        events,
    )
    .expect("simulation")
}

fn run_to(sim: &mut Simulation, secs: f64, records: &mut Vec<Record>) {
    sim.run_to(SimTime((secs * 1e6).round() as i64), &mut |r: &Record| {
        records.push(r.clone())
    })
    .expect("run");
}

fn bound(records: &[Record], name: &str) -> Option<(SimTime, String)> {
    records.iter().find_map(|r| match r {
        Record::PodBound {
            at, name: n, node, ..
        } if n == name => Some((*at, node.clone())),
        _ => None,
    })
}

fn attempts(records: &[Record], name: &str) -> Vec<(SimTime, AttemptResult, String)> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Attempt {
                at,
                name: n,
                result,
                message,
                ..
            } if n == name => Some((*at, *result, message.clone())),
            _ => None,
        })
        .collect()
}

/// A claim as the tests read it: (name, allocated device(s), reservedFor pod names,
/// finalizers).
type ClaimView = (String, Vec<String>, Vec<String>, Vec<String>);

/// The claims in the cluster whose name starts with `prefix`.
fn claims(sim: &Simulation, prefix: &str) -> Vec<ClaimView> {
    sim.snapshot()
        .objects
        .dra
        .resource_claims
        .values()
        .filter(|c| c.metadata.name.starts_with(prefix))
        .map(|c| {
            let devices = c
                .status
                .allocation
                .as_ref()
                .map(|a| {
                    a.devices
                        .results
                        .iter()
                        .map(|r| format!("{}/{}", r.pool, r.device))
                        .collect()
                })
                .unwrap_or_default();
            let rf = c
                .status
                .reserved_for
                .iter()
                .map(|r| r.name.clone())
                .collect();
            (
                c.metadata.name.clone(),
                devices,
                rf,
                c.metadata.finalizers.clone(),
            )
        })
        .collect()
}

#[test]
fn a_generated_claim_is_owned_by_its_pod_deleted_when_it_ends_and_its_device_freed() {
    // One GPU in the cluster (n1); a runs 60 s, b arrives at 1 s and waits for the GPU.
    let mut s = sim(
        300,
        vec![class(), slice("n1", 1), template("one-gpu")],
        vec![
            at(0.0, create(pod("a", Some("one-gpu"), None), Some(60))),
            at(1.0, create(pod("b", Some("one-gpu"), None), None)),
        ],
    );
    let mut rec = Vec::new();
    run_to(&mut s, 30.0, &mut rec);
    let cs = claims(&s, "a-gpu-");
    assert_eq!(cs.len(), 1, "{cs:?}");
    let (a_claim, devices, rf, fin) = &cs[0];
    // <pod>-<entry>-<5 chars of upstream's alphabet>
    assert_eq!(a_claim.len(), "a-gpu-".len() + 5, "{a_claim}");
    assert!(a_claim[6..]
        .bytes()
        .all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b)));
    assert_eq!(devices, &["n1/gpu-0".to_string()]);
    assert_eq!(rf, &["a".to_string()]);
    assert_eq!(
        fin,
        &["resource.kubernetes.io/delete-protection".to_string()]
    );
    let c = &s.snapshot().objects.dra.resource_claims[&format!("default/{a_claim}")];
    let owner = &c.metadata.owner_references[0];
    assert_eq!(
        (owner.kind.as_str(), owner.name.as_str(), owner.controller),
        ("Pod", "a", Some(true))
    );
    assert_eq!(
        c.metadata
            .annotations
            .get("resource.kubernetes.io/pod-claim-name")
            .map(String::as_str),
        Some("gpu")
    );
    assert_eq!(
        c.metadata.labels.get("team").map(String::as_str),
        Some("ml")
    );
    // a got its claim one controller delay (10 ms) after its creation and was scheduled then.
    let (t, n) = bound(&rec, "a").expect("a bound");
    assert_eq!(n, "n1");
    assert!(t < SimTime::from_secs(1), "{t}");
    // b has its own claim, but no device is free.
    let b_claims = claims(&s, "b-gpu-");
    assert_eq!(b_claims.len(), 1);
    assert!(b_claims[0].1.is_empty(), "{b_claims:?}");
    let ab = attempts(&rec, "b");
    assert!(!ab.is_empty());
    assert!(
        ab.iter().all(|(_, r, m)| *r == AttemptResult::Unschedulable
            && m.contains("cannot allocate all claims")),
        "{ab:?}"
    );
    assert!(bound(&rec, "b").is_none());

    // a ends at 60 s (+ startup): its claim is deallocated and deleted, b takes the GPU.
    run_to(&mut s, 120.0, &mut rec);
    assert!(claims(&s, "a-gpu-").is_empty(), "a's claim is deleted");
    let b_claims = claims(&s, "b-gpu-");
    assert_eq!(b_claims[0].1, ["n1/gpu-0".to_string()]);
    assert_eq!(b_claims[0].2, ["b".to_string()]);
    let (tb, nb) = bound(&rec, "b").expect("b bound after a ended");
    assert_eq!(nb, "n1");
    assert!(
        tb > SimTime::from_secs(60) && tb < SimTime::from_secs(75),
        "{tb}"
    );
}

#[test]
fn a_shared_claim_is_deallocated_only_after_its_last_consumer_ends() {
    let mut s = sim(
        400,
        vec![class(), slice("n1", 2), claim("shared")],
        vec![
            at(0.0, create(pod("x", None, Some("shared")), Some(60))),
            at(0.0, create(pod("y", None, Some("shared")), Some(120))),
        ],
    );
    let mut rec = Vec::new();
    run_to(&mut s, 30.0, &mut rec);
    // Both on the node of the claim's device, the claim reserved for both.
    assert_eq!(bound(&rec, "x").map(|b| b.1).as_deref(), Some("n1"));
    assert_eq!(bound(&rec, "y").map(|b| b.1).as_deref(), Some("n1"));
    let c = &claims(&s, "shared")[0];
    assert_eq!(c.1, ["n1/gpu-0".to_string()]);
    assert_eq!(c.2, ["x".to_string(), "y".to_string()]);

    // x ended: y still uses it, so it stays allocated.
    run_to(&mut s, 90.0, &mut rec);
    let c = &claims(&s, "shared")[0];
    assert_eq!(c.1, ["n1/gpu-0".to_string()]);
    assert_eq!(c.2, ["y".to_string()]);

    // y ended: no consumer left, deallocated, finalizer gone; the claim itself stays.
    run_to(&mut s, 150.0, &mut rec);
    let c = &claims(&s, "shared")[0];
    assert!(c.1.is_empty(), "{c:?}");
    assert!(c.2.is_empty(), "{c:?}");
    assert!(c.3.is_empty(), "{c:?}");
}

#[test]
fn a_pod_waits_outside_the_queue_for_a_missing_template_and_goes_on_when_it_appears() {
    let mut s = sim(
        400,
        vec![class(), slice("n1", 1)],
        vec![
            at(0.0, create(pod("w", Some("later"), None), None)),
            at(
                100.0,
                InputEvent::CreateObject {
                    object: Box::new(template("later")),
                },
            ),
        ],
    );
    let mut rec = Vec::new();
    run_to(&mut s, 90.0, &mut rec);
    assert!(
        attempts(&rec, "w").is_empty(),
        "never attempted while gated"
    );
    let waits: Vec<(String, String)> = rec
        .iter()
        .filter_map(|r| match r {
            Record::PodWaiting {
                name, by, message, ..
            } if name == "w" => Some((by.clone(), message.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        waits,
        [
            (
                "DynamicResources".to_string(),
                "pod \"default/w\": ResourceClaim not created yet".to_string()
            ),
            (
                "resourceclaim-controller".to_string(),
                "PodResourceClaim gpu: resource claim template \"later\": \
                 resourceclaimtemplate.resource.k8s.io \"later\" not found"
                    .to_string()
            ),
        ]
    );
    // The template at 100 s: the controller's next retry after it (5 ms doubling from the
    // first failure at 10 ms) creates the claim, the pod passes PreEnqueue and is scheduled.
    run_to(&mut s, 400.0, &mut rec);
    let (t, n) = bound(&rec, "w").expect("w bound");
    assert_eq!(n, "n1");
    assert!(
        t > SimTime::from_secs(100) && t < SimTime::from_secs(200),
        "{t}"
    );
    assert_eq!(attempts(&rec, "w").len(), 1);
}

#[test]
fn postfilter_deallocates_a_claim_allocated_elsewhere_and_the_pod_follows_the_event() {
    // `held` is allocated on n1's GPU with no consumer; the pod must run on n2 (node
    // selector). DynamicResources rejects n2 ("resourceclaim not available on the node"), its
    // PostFilter deallocates the claim, the claim's Update event requeues the pod, and the
    // claim is allocated again, on n2.
    let mut held = claim("held");
    if let ApiObject::ResourceClaim(c) = &mut held {
        c.status = serde_json::from_value(json!({
            "allocation": {
                "devices": {"results": [{"request": "gpu", "driver": "gpu.example.com",
                                         "pool": "n1", "device": "gpu-0"}]},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}
        }))
        .expect("status");
    }
    let mut p = pod("p", None, Some("held"));
    p.spec.node_selector = [("kubernetes.io/hostname".to_string(), "n2".to_string())]
        .into_iter()
        .collect();
    let mut s = sim(
        120,
        vec![class(), slice("n1", 1), slice("n2", 1), held],
        vec![at(1.0, create(p, None))],
    );
    let mut rec = Vec::new();
    run_to(&mut s, 120.0, &mut rec);
    let a = attempts(&rec, "p");
    assert_eq!(a.len(), 2, "{a:?}");
    assert_eq!(a[0].1, AttemptResult::Unschedulable);
    assert!(
        a[0].2.contains("resourceclaim not available on the node")
            && a[0].2.contains("deallocation of ResourceClaim completed"),
        "{}",
        a[0].2
    );
    assert_eq!(a[1].1, AttemptResult::Scheduled);
    assert_eq!(bound(&rec, "p").map(|b| b.1).as_deref(), Some("n2"));
    let c = &claims(&s, "held")[0];
    assert_eq!(c.1, ["n2/gpu-0".to_string()]);
    assert_eq!(c.2, ["p".to_string()]);
}
