//! Upstream's `TestPlugin` rows for DRADeviceBindingConditions (with
//! DRAResourceClaimDeviceStatus; see `plugin_table.rs` for how rows are driven and compared),
//! with upstream's fixtures: `bindingConditions = ["condition"]`,
//! `bindingFailureConditions = ["failed"]`, `allocationResultWithBindingConditions` (req-1 →
//! instance-1 of some-driver on worker, node selector `metadata.name In [worker]`) and its
//! `...2` twin (req-2 → instance-2 of the second driver), `boundClaim` (device status
//! `condition` True, `failed` False), `failedBindingClaim` (`condition` False, `failed` True).
//!
//! ksim's PreBind writes the claims; the wait for the conditions runs in the engine
//! (`ksim_engine::sim::dra_binding`, tested by `crates/ksim-engine/tests/
//! dra_binding_conditions.rs`), so these rows check what the plugin decides: PreBind of a
//! claim whose conditions are met, Filter refusing a claim whose binding failed, PostFilter
//! deallocating it. Upstream's timed-out rows (`bound-claim-with-timed-out-binding`,
//! `bound-claim-with-mixed-binding-conditions`) stamp the allocation 10 minutes ago, past the
//! 600 s `bindingTimeout` (`isClaimTimeout`); ksim does not write allocation timestamps and
//! learns of a timeout from the engine's timer, so these rows tell the plugin the claim timed
//! out (`Case::binding_timed_out`). `prebind-fail-with-binding-timeout` (PreBind polling until
//! the timestamp expires) is the engine's wait in ksim (engine test
//! `without_a_driver_the_binding_times_out_after_600s`), not ported here. The second
//! driver's name is not read by any row (its claim is only compared with itself); ksim calls
//! it `some-driver-2`.

use ksim_api::resource::ResourceClaim;
use serde_json::json;

use super::allocator::Features;
use super::plugin_table::{
    allocated_claim, check_steps, check_stored, claim, device_class, node, other_claim, owned,
    pending_claim, pod_with_claim_name, pod_with_claim_template_in_status,
    pod_with_two_claim_names, req, reserve, run, slice, with_allocation, worker_node_slice, Case,
    CLAIM, CLAIM2, W,
};

/// DRADeviceBindingConditions and DRAResourceClaimDeviceStatus on.
fn features() -> Features {
    Features {
        device_binding_conditions: true,
        ..Case::default().features
    }
}

/// `allocationResultWithBindingConditions` (`second`: the `...2` twin).
fn with_binding_allocation(c: ResourceClaim, second: bool) -> ResourceClaim {
    let (driver, device, request) = if second {
        ("some-driver-2", "instance-2", "req-2")
    } else {
        ("some-driver", "instance-1", "req-1")
    };
    with_allocation(
        c,
        json!({"devices": {"results": [{"request": request, "driver": driver, "pool": "worker",
            "device": device, "bindingConditions": ["condition"],
            "bindingFailureConditions": ["failed"]}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["worker"]}]}]}}),
    )
}

/// The device status with `condition` and `failed` as given.
fn with_status(mut c: ResourceClaim, second: bool, condition: bool, failed: bool) -> ResourceClaim {
    let (driver, device) = if second {
        ("some-driver-2", "instance-2")
    } else {
        ("some-driver", "instance-1")
    };
    let s = |b: bool| if b { "True" } else { "False" };
    c.status.devices = vec![serde_json::from_value(json!({
        "driver": driver, "pool": "worker", "device": device,
        "conditions": [{"type": "condition", "status": s(condition)},
                       {"type": "failed", "status": s(failed)}]}))
    .expect("device status")];
    c
}

/// `allocatedClaim2`'s claim: `pendingClaim2` (owned by the pod).
fn pending_claim2() -> ResourceClaim {
    owned(claim(CLAIM2, vec![req(2, "my-resource-class")]))
}

fn bound_claim() -> ResourceClaim {
    with_status(
        with_binding_allocation(pending_claim(), false),
        false,
        true,
        false,
    )
}

fn bound_claim2() -> ResourceClaim {
    with_status(
        with_binding_allocation(pending_claim2(), true),
        true,
        true,
        false,
    )
}

fn failed_binding_claim() -> ResourceClaim {
    with_status(
        with_binding_allocation(pending_claim(), false),
        false,
        false,
        true,
    )
}

fn failed_binding_claim2() -> ResourceClaim {
    with_status(
        with_binding_allocation(pending_claim2(), true),
        true,
        false,
        true,
    )
}

/// `fabricSlice`, `fabricSlice2`: worker's devices binding to the node with the conditions
/// (not read by these rows, whose claims are allocated).
fn fabric_slices() -> Vec<ksim_api::resource::ResourceSlice> {
    let mut a = slice("worker", &[("instance-1", None)]);
    let mut b = slice("worker", &[("instance-2", None)]);
    b.metadata.name = "worker-some-driver-2".into();
    b.spec.driver = "some-driver-2".into();
    for s in [&mut a, &mut b] {
        for d in &mut s.spec.devices {
            d.binds_to_node = Some(true);
            d.binding_conditions = vec!["condition".into()];
            d.binding_failure_conditions = vec!["failed".into()];
        }
    }
    vec![a, b]
}

fn dealloc(mut c: ResourceClaim) -> ResourceClaim {
    c.status.allocation = None;
    c.status.devices.clear();
    c
}

/// `bound-claim-with-succeeded-binding-conditions`: the conditions are met, PreBind reserves.
#[test]
fn bound_claim_with_succeeded_binding_conditions() {
    let r = run(Case {
        features: features(),
        pod: pod_with_claim_name(),
        claims: vec![bound_claim()],
        ..Case::default()
    });
    check_steps(
        &r,
        &[
            ("PreEnqueue", W::Ok),
            ("PreFilter", W::Ok),
            ("Filter/worker", W::Ok),
            ("Reserve", W::Ok),
            ("PreBind", W::Ok),
        ],
    );
    check_stored(&r, &[(CLAIM, reserve)]);
}

/// `bound-claim-with-failed-binding`: a failure condition is True: the claim is unavailable
/// on the node and PostFilter deallocates it (allocation and device statuses cleared).
#[test]
fn bound_claim_with_failed_binding() {
    let r = run(Case {
        features: features(),
        pod: pod_with_claim_name(),
        claims: vec![failed_binding_claim()],
        slices: vec![worker_node_slice()],
        ..Case::default()
    });
    check_steps(
        &r,
        &[
            ("PreEnqueue", W::Ok),
            ("PreFilter", W::Ok),
            (
                "Filter/worker",
                W::Msg("resourceclaim not available on the node"),
            ),
            (
                "PostFilter",
                W::Msg("deallocation of ResourceClaim completed"),
            ),
        ],
    );
    check_stored(&r, &[(CLAIM, dealloc)]);
}

/// The same claim with the gate off: the binding conditions are not read, the claim is
/// used as allocated (ksim's own row: upstream's rows all turn the gate on).
#[test]
fn failed_binding_is_not_read_with_the_gate_off() {
    let r = run(Case {
        pod: pod_with_claim_name(),
        claims: vec![failed_binding_claim()],
        slices: vec![worker_node_slice()],
        ..Case::default()
    });
    check_steps(
        &r,
        &[
            ("PreEnqueue", W::Ok),
            ("PreFilter", W::Ok),
            ("Filter/worker", W::Ok),
            ("Reserve", W::Ok),
            ("PreBind", W::Ok),
        ],
    );
    check_stored(&r, &[(CLAIM, reserve)]);
}

/// `bound-claim-without-binding-conditions`: with the gates on, a claim without binding
/// conditions proceeds as if they were met.
#[test]
fn bound_claim_without_binding_conditions() {
    let r = run(Case {
        features: features(),
        pod: pod_with_claim_template_in_status(),
        claims: vec![allocated_claim(), other_claim()],
        ..Case::default()
    });
    check_steps(
        &r,
        &[
            ("PreEnqueue", W::Ok),
            ("PreFilter", W::Ok),
            ("Filter/worker", W::Ok),
            ("Reserve", W::Ok),
            ("PreBind", W::Ok),
        ],
    );
    check_stored(&r, &[(CLAIM, reserve)]);
}

/// `multi-claims-binding-conditions-all-success`.
#[test]
fn multi_claims_binding_conditions_all_success() {
    let r = run(Case {
        features: features(),
        pod: pod_with_two_claim_names(),
        claims: vec![bound_claim(), bound_claim2()],
        classes: vec![device_class()],
        nodes: vec![node("worker")],
        slices: fabric_slices(),
        ..Case::default()
    });
    check_steps(
        &r,
        &[
            ("PreEnqueue", W::Ok),
            ("PreFilter", W::Ok),
            ("Filter/worker", W::Ok),
            ("Reserve", W::Ok),
            ("PreBind", W::Ok),
        ],
    );
    check_stored(&r, &[(CLAIM, reserve), (CLAIM2, reserve)]);
}

/// `multi-claims-binding-conditions-one-fail`: the second claim's binding failed; PostFilter
/// deallocates it and leaves the first.
#[test]
fn multi_claims_binding_conditions_one_fail() {
    let r = run(Case {
        features: features(),
        pod: pod_with_two_claim_names(),
        claims: vec![bound_claim(), failed_binding_claim2()],
        classes: vec![device_class()],
        nodes: vec![node("worker")],
        slices: fabric_slices(),
        ..Case::default()
    });
    check_steps(
        &r,
        &[
            ("PreEnqueue", W::Ok),
            ("PreFilter", W::Ok),
            (
                "Filter/worker",
                W::Msg("resourceclaim not available on the node"),
            ),
            (
                "PostFilter",
                W::Msg("deallocation of ResourceClaim completed"),
            ),
        ],
    );
    check_stored(&r, &[(CLAIM2, dealloc)]);
}

/// `bound-claim-with-timed-out-binding`: the device has a status without conditions and the
/// binding timed out: unavailable, deallocated by PostFilter.
#[test]
fn bound_claim_with_timed_out_binding() {
    let mut c = with_binding_allocation(pending_claim(), false);
    c.status.devices = vec![serde_json::from_value(json!({
        "driver": "some-driver", "pool": "worker", "device": "instance-1"}))
    .expect("device status")];
    let r = run(Case {
        features: features(),
        pod: pod_with_claim_name(),
        claims: vec![c],
        binding_timed_out: vec![CLAIM],
        ..Case::default()
    });
    check_steps(
        &r,
        &[
            ("PreEnqueue", W::Ok),
            ("PreFilter", W::Ok),
            (
                "Filter/worker",
                W::Msg("resourceclaim not available on the node"),
            ),
            (
                "PostFilter",
                W::Msg("deallocation of ResourceClaim completed"),
            ),
        ],
    );
    check_stored(&r, &[(CLAIM, dealloc)]);
}

/// `bound-claim-with-mixed-binding-conditions`: conditions other than the device's binding
/// condition are set (`condition1` True, `condition2` False), so it is not ready, and it
/// timed out.
#[test]
fn bound_claim_with_mixed_binding_conditions() {
    let mut c = with_binding_allocation(pending_claim(), false);
    c.status.devices = vec![serde_json::from_value(json!({
        "driver": "some-driver", "pool": "worker", "device": "instance-1",
        "conditions": [{"type": "condition1", "status": "True"},
                       {"type": "condition2", "status": "False"}]}))
    .expect("device status")];
    let r = run(Case {
        features: features(),
        pod: pod_with_claim_name(),
        claims: vec![c],
        binding_timed_out: vec![CLAIM],
        ..Case::default()
    });
    check_steps(
        &r,
        &[
            ("PreEnqueue", W::Ok),
            ("PreFilter", W::Ok),
            (
                "Filter/worker",
                W::Msg("resourceclaim not available on the node"),
            ),
            (
                "PostFilter",
                W::Msg("deallocation of ResourceClaim completed"),
            ),
        ],
    );
    check_stored(&r, &[(CLAIM, dealloc)]);
}

/// ksim's own: the same claim before its timeout waits (Filter passes; PreBind, whose wait
/// is the engine's, reserves it).
#[test]
fn a_claim_not_ready_and_not_timed_out_is_available() {
    let r = run(Case {
        features: features(),
        pod: pod_with_claim_name(),
        claims: vec![with_binding_allocation(pending_claim(), false)],
        ..Case::default()
    });
    check_steps(
        &r,
        &[
            ("PreEnqueue", W::Ok),
            ("PreFilter", W::Ok),
            ("Filter/worker", W::Ok),
            ("Reserve", W::Ok),
            ("PreBind", W::Ok),
        ],
    );
    check_stored(&r, &[(CLAIM, reserve)]);
}
