//! The DRA feature gates at admission: an object that uses a gated field is refused, naming
//! the object, the field and the gate, whether it is present at t=0 or created by the trace;
//! the message says whether the run's gate is off (v1.35's default for the alpha gates) or on
//! but not modelled by ksim.

mod common;

use common::dra::{class, config, devices, node, object, slice, slice_with, try_sim};
use ksim_api::version::KubernetesVersion;
use ksim_engine::{InputEvent, SimError, SimTime, TimedEvent};
use ksim_scheduler::framework::Registry;
use ksim_scheduler::plugins::dynamic_resources::MODELLED_GATES;
use serde_json::json;

fn tainted_slice() -> ksim_api::object::ApiObject {
    let mut d = devices(1);
    d[0]["taints"] = json!([{"key": "broken", "effect": "NoSchedule"}]);
    slice_with("n1", d)
}

fn refusal(version: KubernetesVersion, at_start: bool) -> String {
    let registry = Registry::in_tree_for(version);
    let (initial, events) = if at_start {
        (vec![class(), tainted_slice()], vec![])
    } else {
        let create = TimedEvent {
            at: SimTime::from_secs(1),
            event: InputEvent::CreateObject {
                object: Box::new(tainted_slice()),
            },
        };
        (vec![class()], vec![create])
    };
    let sim = try_sim(
        config(Some(10), None),
        &registry,
        vec![node("n1")],
        initial,
        events,
    );
    let err = match sim {
        Err(e) => e,
        Ok(mut sim) => sim
            .run_to(SimTime::from_secs(10), &mut |_: &ksim_engine::Record| {})
            .expect_err("the tainted slice is refused"),
    };
    assert!(matches!(err, SimError::Input { .. }), "{err:?}");
    err.to_string()
}

#[test]
fn a_gated_field_is_refused_with_the_gate_named() {
    // The object loads (its fields are valid); the run decides.
    let _ = tainted_slice();
    for at_start in [true, false] {
        let off = refusal(KubernetesVersion::V1_35, at_start);
        assert!(
            off.contains("ResourceSlice n1-gpu")
                && off.contains("spec.devices[0].taints")
                && off.contains(
                    "the DRADeviceTaints feature gate is off in this run (Kubernetes v1.35)"
                ),
            "{off}"
        );
        if !MODELLED_GATES.contains(&"DRADeviceTaints") {
            let on = refusal(KubernetesVersion::V1_36, at_start);
            assert!(
                on.contains("spec.devices[0].taints")
                    && on.contains("DRADeviceTaints is not modelled by ksim"),
                "{on}"
            );
        }
    }
}

#[test]
fn objects_without_gated_fields_are_admitted_in_both_versions() {
    for v in KubernetesVersion::ALL {
        let registry = Registry::in_tree_for(v);
        let initial = vec![class(), slice("n1", 2)];
        let mut sim = try_sim(
            config(Some(5), None),
            &registry,
            vec![node("n1")],
            initial,
            vec![],
        )
        .expect("admitted");
        sim.run_to(SimTime::from_secs(5), &mut |_: &ksim_engine::Record| {})
            .expect("run");
    }
}

#[test]
fn a_gated_claim_field_is_refused_in_a_created_claim() {
    let claim = object(
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu",
            "tolerations": [{"key": "broken", "operator": "Exists"}]}}]}}}),
    );
    let create = TimedEvent {
        at: SimTime::from_secs(1),
        event: InputEvent::CreateObject {
            object: Box::new(claim),
        },
    };
    let registry = Registry::in_tree_for(KubernetesVersion::V1_35);
    let mut sim = try_sim(
        config(Some(5), None),
        &registry,
        vec![node("n1")],
        vec![class()],
        vec![create],
    )
    .expect("simulation");
    let err = sim
        .run_to(SimTime::from_secs(5), &mut |_: &ksim_engine::Record| {})
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("ResourceClaim default/c")
            && msg.contains("spec.devices.requests[0].exactly.tolerations")
            && msg.contains("DRADeviceTaints feature gate is off"),
        "{msg}"
    );
}
