//! DRAExtendedResource (v1.36, beta, on by default): a pod's container request of an extended
//! resource (`example.com/gpu: 1`) is served by the device plugin on a node that advertises
//! it and by DRA devices of the DeviceClass whose `extendedResourceName` names it on nodes
//! that do not. The scheduler creates the pod's claim (`<pod>-extended-resources-<5 chars>`,
//! owned by the pod, annotated), the pod's `status.extendedResourceClaimStatus` names it, and
//! the resource claim controller deletes it when the pod ends. In v1.35 the gate is off and the
//! class is refused.

mod common;

use common::dra::{class_for, config, node, node_with, slice, try_sim};
use ksim_api::object::ApiObject;
use ksim_api::version::KubernetesVersion;
use ksim_api::Pod;
use ksim_engine::{
    AttemptResult, InputEvent, Record, SimDuration, SimError, SimTime, Simulation, TimedEvent,
};
use ksim_scheduler::framework::Registry;
use serde_json::json;

const GPU: &str = "example.com/gpu";

/// A pod whose container `c` asks for `gpus` of [`GPU`] (requests and limits).
fn pod(name: &str, gpus: u32) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "resources": {
            "requests": {"cpu": "1", GPU: gpus.to_string()},
            "limits": {GPU: gpus.to_string()}}}]}
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

/// n1 and n2 have 2 GPUs each as ResourceSlices; n3's device plugin advertises 2.
fn sim(version: KubernetesVersion, events: Vec<TimedEvent>) -> Result<Simulation, SimError> {
    let initial: Vec<ApiObject> = vec![class_for(GPU), slice("n1", 2), slice("n2", 2)];
    try_sim(
        config(Some(600), None),
        &Registry::in_tree_for(version),
        vec![node("n1"), node("n2"), node_with("n3", GPU, 2)],
        initial,
        events,
    )
}

fn run_to(sim: &mut Simulation, secs: f64, records: &mut Vec<Record>) {
    sim.run_to(SimTime((secs * 1e6).round() as i64), &mut |r: &Record| {
        records.push(r.clone())
    })
    .expect("run");
}

fn bound_node(records: &[Record], name: &str) -> Option<String> {
    records.iter().find_map(|r| match r {
        Record::PodBound { name: n, node, .. } if n == name => Some(node.clone()),
        _ => None,
    })
}

fn last_attempt(records: &[Record], name: &str) -> Option<(AttemptResult, String)> {
    records.iter().rev().find_map(|r| match r {
        Record::Attempt {
            name: n,
            result,
            message,
            ..
        } if n == name => Some((*result, message.clone())),
        _ => None,
    })
}

/// The extended resource claims in the cluster: (name, owner pod, devices, reservedFor).
fn ext_claims(sim: &Simulation) -> Vec<(String, String, Vec<String>, Vec<String>)> {
    sim.snapshot()
        .objects
        .dra
        .resource_claims
        .values()
        .filter(|c| {
            c.metadata
                .annotations
                .get("resource.kubernetes.io/extended-resource-claim")
                .is_some_and(|v| v == "true")
        })
        .map(|c| {
            let owner = c
                .metadata
                .owner_references
                .iter()
                .find(|o| o.kind == "Pod" && o.controller == Some(true))
                .map(|o| o.name.clone())
                .unwrap_or_default();
            let devices = c
                .status
                .allocation
                .as_ref()
                .map(|a| {
                    a.devices
                        .results
                        .iter()
                        .map(|r| format!("{}/{}/{}", r.pool, r.device, r.request))
                        .collect()
                })
                .unwrap_or_default();
            let rf = c
                .status
                .reserved_for
                .iter()
                .map(|r| r.name.clone())
                .collect();
            (c.metadata.name.clone(), owner, devices, rf)
        })
        .collect()
}

/// A request mapping: (container, resource, request).
type Mapping = (String, String, String);

/// The bound pod `name`'s `status.extendedResourceClaimStatus`: claim name and mappings
/// (container, resource, request).
fn ext_status(sim: &Simulation, name: &str) -> Option<(String, Vec<Mapping>)> {
    sim.snapshot()
        .nodes
        .iter()
        .flat_map(|n| n.pods.iter())
        .find(|p| p.pod.metadata.name == name)
        .and_then(|p| p.pod.status.extended_resource_claim_status.clone())
        .map(|s| {
            let m = s
                .request_mappings
                .iter()
                .map(|m| {
                    (
                        m.container_name.clone(),
                        m.resource_name.clone(),
                        m.request_name.clone(),
                    )
                })
                .collect();
            (s.resource_claim_name, m)
        })
}

#[test]
fn extended_resources_are_served_by_the_device_plugin_and_by_dra_devices() {
    // Six one-GPU pods fill the six GPUs (two per node); p0 ends at 60 s.
    let mut events: Vec<TimedEvent> = (0..6)
        .map(|i| {
            let run_for = if i == 0 { Some(60) } else { None };
            at(i as f64 * 0.1, create(pod(&format!("p{i}"), 1), run_for))
        })
        .collect();
    // A seventh waits for a GPU; a pod asking for 3 fits no node.
    events.push(at(5.0, create(pod("waits", 1), None)));
    events.push(at(5.0, create(pod("three", 3), None)));
    let mut s = sim(KubernetesVersion::V1_36, events).expect("simulation");
    let mut rec = Vec::new();
    run_to(&mut s, 30.0, &mut rec);

    let mut per_node = std::collections::BTreeMap::<String, Vec<String>>::new();
    for i in 0..6 {
        let p = format!("p{i}");
        let n = bound_node(&rec, &p).unwrap_or_else(|| panic!("{p} bound: {rec:?}"));
        per_node.entry(n).or_default().push(p);
    }
    assert_eq!(
        per_node.values().map(Vec::len).collect::<Vec<_>>(),
        [2, 2, 2],
        "{per_node:?}"
    );
    let claims = ext_claims(&s);
    // One claim per pod on n1 and n2 (DRA), none for n3's pods (device plugin).
    assert_eq!(claims.len(), 4, "{claims:?}");
    for p in &per_node["n3"] {
        assert!(ext_status(&s, p).is_none(), "{p} on n3 has no claim");
        assert!(claims.iter().all(|c| &c.1 != p));
    }
    let mut devices = Vec::new();
    for node in ["n1", "n2"] {
        for p in &per_node[node] {
            let c = claims.iter().find(|c| &c.1 == p).expect("the pod's claim");
            // generateName `<pod>-extended-resources-` and 5 characters of upstream's alphabet.
            let base = format!("{p}-extended-resources-");
            assert!(
                c.0.starts_with(&base) && c.0.len() == base.len() + 5,
                "{c:?}"
            );
            assert!(c.0[base.len()..]
                .bytes()
                .all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b)));
            // One device of the node's pool, for request `container-0-request-1` (the
            // container's requests sorted: cpu, example.com/gpu).
            assert_eq!(c.2.len(), 1, "{c:?}");
            assert!(c.2[0].starts_with(&format!("{node}/gpu-")), "{c:?}");
            assert!(c.2[0].ends_with("/container-0-request-1"), "{c:?}");
            assert_eq!(c.3, std::slice::from_ref(p));
            devices.push(c.2[0].clone());
            let (name, mappings) = ext_status(&s, p).expect("status");
            assert_eq!(name, c.0);
            assert_eq!(
                mappings,
                [(
                    "c".to_string(),
                    GPU.to_string(),
                    "container-0-request-1".to_string()
                )]
            );
        }
    }
    devices.sort();
    devices.dedup();
    assert_eq!(devices.len(), 4, "each device allocated once: {devices:?}");

    // No GPU is free: DynamicResources and NodeResourcesFit each name theirs.
    for name in ["waits", "three"] {
        assert!(bound_node(&rec, name).is_none());
        let (r, m) = last_attempt(&rec, name).expect("attempted");
        assert_eq!(r, AttemptResult::Unschedulable, "{m}");
        assert!(
            m.starts_with("0/3 nodes are available:")
                && m.contains("1 Insufficient example.com/gpu")
                && m.contains("2 cannot allocate all claims"),
            "{m}"
        );
    }

    // p0 ends: its claim (if it had one) is deleted, and `waits` gets its GPU.
    run_to(&mut s, 120.0, &mut rec);
    assert!(
        ext_claims(&s).iter().all(|c| c.1 != "p0"),
        "p0's claim is deleted with it"
    );
    let n = bound_node(&rec, "waits").expect("waits bound after p0 ended");
    let p0_node = per_node
        .iter()
        .find(|(_, ps)| ps.contains(&"p0".to_string()))
        .map(|(n, _)| n.clone())
        .expect("p0's node");
    assert_eq!(n, p0_node);
    assert_eq!(ext_status(&s, "waits").is_some(), n != "n3");
    assert!(bound_node(&rec, "three").is_none(), "3 GPUs fit no node");
    assert_eq!(ext_claims(&s).len(), 4);
}

#[test]
fn with_the_gate_off_the_class_is_refused_naming_the_field_and_the_gate() {
    let err = match sim(KubernetesVersion::V1_35, vec![]) {
        Err(e) => e,
        Ok(_) => panic!("v1.35 admits extendedResourceName"),
    };
    let msg = err.to_string();
    assert!(
        msg.contains("DeviceClass gpu")
            && msg.contains("spec.extendedResourceName")
            && msg.contains(
                "the DRAExtendedResource feature gate is off in this run (Kubernetes v1.35)"
            ),
        "{msg}"
    );
}

#[test]
fn without_a_backing_class_an_unadvertised_extended_resource_stays_unschedulable() {
    // The class names another resource: example.com/gpu is nobody's, as before the gate.
    let initial: Vec<ApiObject> = vec![class_for("example.com/other"), slice("n1", 2)];
    let mut s = try_sim(
        config(Some(60), None),
        &Registry::in_tree_for(KubernetesVersion::V1_36),
        vec![node("n1")],
        initial,
        vec![at(0.0, create(pod("p", 1), None))],
    )
    .expect("simulation");
    let mut rec = Vec::new();
    run_to(&mut s, 10.0, &mut rec);
    let (r, m) = last_attempt(&rec, "p").expect("attempted");
    assert_eq!(r, AttemptResult::Unschedulable);
    assert!(m.contains("1 Insufficient example.com/gpu"), "{m}");
    assert!(ext_claims(&s).is_empty());
}

#[test]
fn a_class_created_later_requeues_the_pod_node_resources_fit_rejected() {
    // No class at first: NodeResourcesFit rejects the pod (`Insufficient example.com/gpu`).
    // The class's creation at 5 s is an event its DeviceClass hint queues the pod for
    // (`isSchedulableAfterDeviceClassEvent`), well before the unschedulable pool's 5 min.
    let create_class = at(
        5.0,
        InputEvent::CreateObject {
            object: Box::new(class_for(GPU)),
        },
    );
    let mut s = try_sim(
        config(Some(600), None),
        &Registry::in_tree_for(KubernetesVersion::V1_36),
        vec![node("n1")],
        vec![slice("n1", 2)],
        vec![at(0.0, create(pod("p", 1), None)), create_class],
    )
    .expect("simulation");
    let mut rec = Vec::new();
    run_to(&mut s, 4.0, &mut rec);
    let (r, m) = last_attempt(&rec, "p").expect("attempted");
    assert_eq!(r, AttemptResult::Unschedulable);
    assert!(m.contains("1 Insufficient example.com/gpu"), "{m}");
    run_to(&mut s, 30.0, &mut rec);
    let bound_at = rec.iter().find_map(|r| match r {
        Record::PodBound { at, name, .. } if name == "p" => Some(*at),
        _ => None,
    });
    let t = bound_at.expect("p bound after the class appeared");
    assert!(
        t >= SimTime::from_secs(5) && t < SimTime::from_secs(20),
        "{t}"
    );
    assert_eq!(ext_claims(&s).len(), 1);
}
