//! Upstream's `TestAllocator` cases for DRADeviceTaints on (see `allocator_table.rs`; the
//! gate-off `tainted-*-disabled` cases are in `allocator_table_pools.rs`), with upstream's
//! `taintNone`, `taintNoSchedule`, `taintNoExecute`, `tolerationNoSchedule` and
//! `tolerationNoExecute`. An allocated device's result carries the request's tolerations
//! (`deviceAllocationResult(..., tolerations...)`). The last cases are ksim's own, for the
//! first-fit shortcut and All mode.

use serde_json::{json, Value};

use super::allocator::Features;
use super::allocator_table::*;

/// DRADeviceTaints and DRAPrioritizedList on.
const TAINTS_PRIO: Features = Features {
    device_taints: true,
    prioritized_list: true,
    ..NONE
};
/// DRADeviceTaints and DRAAdminAccess on.
const TAINTS_ADMIN: Features = Features {
    device_taints: true,
    admin_access: true,
    ..NONE
};

fn taint_none() -> Value {
    json!({"key": "taint-key", "value": "taint-value", "effect": "None"})
}

fn taint_no_schedule() -> Value {
    json!({"key": "taint-key", "value": "taint-value", "effect": "NoSchedule"})
}

fn taint_no_execute() -> Value {
    json!({"key": "taint-key", "value": "taint-value-2", "effect": "NoExecute"})
}

fn toleration_no_schedule() -> Value {
    json!({"operator": "Exists", "key": "taint-key", "effect": "NoSchedule"})
}

fn toleration_no_execute() -> Value {
    json!({"operator": "Equal", "key": "taint-key", "value": "taint-value-2",
        "effect": "NoExecute"})
}

/// `device(name, nil, nil).withTaints(taints...)`.
fn dev_taints(name: &str, taints: Vec<Value>) -> Value {
    json!({"name": name, "taints": taints})
}

/// `claim.withTolerations(tolerations...)`: on every `exactly` request.
fn with_tolerations(mut claim: Value, tolerations: Vec<Value>) -> Value {
    if let Some(requests) = claim["spec"]["devices"]["requests"].as_array_mut() {
        for r in requests {
            r["exactly"]["tolerations"] = Value::Array(tolerations.clone());
        }
    }
    claim
}

fn slice1_devices(devices: Vec<Value>) -> Vec<Value> {
    vec![slice("slice-1", "node-1", "pool-1", A, devices)]
}

/// An expected allocation on node-1 whose results carry `tolerations`.
fn on_node1_tolerating(
    devices: Vec<(&'static str, &'static str, &'static str, &str, bool)>,
    tolerations: Vec<Value>,
) -> Alloc {
    let mut a = on_node1(devices);
    a.tolerations = tolerations;
    a
}

/// `tainted-two-devices`: neither taint is tolerated.
#[test]
fn tainted_two_devices() {
    let c = Case {
        features: TAINTS,
        claims: vec![claim1("claim-0", "req-0", "class-a")],
        slices: slice1_devices(vec![
            dev_taints("device-1", vec![taint_no_schedule()]),
            dev_taints("device-2", vec![taint_no_execute()]),
        ]),
        ..Default::default()
    };
    check(c, Want::Nothing);
}

/// `tainted-one-device-two-taints`
#[test]
fn tainted_one_device_two_taints() {
    let c = Case {
        features: TAINTS,
        claims: vec![claim1("claim-0", "req-0", "class-a")],
        slices: slice1_devices(vec![dev_taints(
            "device-1",
            vec![taint_no_schedule(), taint_no_execute()],
        )]),
        ..Default::default()
    };
    check(c, Want::Nothing);
}

/// `tainted-two-devices-tolerated`: only the second device's taint is tolerated.
#[test]
fn tainted_two_devices_tolerated() {
    let c = Case {
        features: TAINTS,
        claims: vec![with_tolerations(
            claim1("claim-0", "req-0", "class-a"),
            vec![toleration_no_execute()],
        )],
        slices: slice1_devices(vec![
            dev_taints("device-1", vec![taint_no_schedule()]),
            dev_taints("device-2", vec![taint_no_execute()]),
        ]),
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1_tolerating(
            vec![("req-0", A, "pool-1", "device-2", false)],
            vec![toleration_no_execute()],
        )]),
    );
}

/// `tainted-two-devices-prioritized-list-tolerated`: the first subrequest tolerates nothing,
/// the second tolerates the second device's taint.
#[test]
fn tainted_two_devices_prioritized_list_tolerated() {
    let mut tolerating = sub("subReq-1", "class-a", 1);
    tolerating["tolerations"] = json!([toleration_no_execute()]);
    let c = Case {
        features: TAINTS_PRIO,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![first(
                "req-0",
                vec![sub("subReq-0", "class-a", 1), tolerating],
            )],
        )],
        slices: slice1_devices(vec![
            dev_taints("device-1", vec![taint_no_schedule()]),
            dev_taints("device-2", vec![taint_no_execute()]),
        ]),
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1_tolerating(
            vec![("req-0/subReq-1", A, "pool-1", "device-2", false)],
            vec![toleration_no_execute()],
        )]),
    );
}

/// `tainted-no-effect`: a taint with effect `None` prevents nothing.
#[test]
fn tainted_no_effect() {
    let c = Case {
        features: TAINTS,
        claims: vec![claim1("claim-0", "req-0", "class-a")],
        slices: slice1_devices(vec![dev_taints("device-1", vec![taint_none()])]),
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![(
            "req-0", A, "pool-1", "device-1", false,
        )])]),
    );
}

/// `tainted-one-device-two-taints-both-tolerated`
#[test]
fn tainted_one_device_two_taints_both_tolerated() {
    let c = Case {
        features: TAINTS,
        claims: vec![with_tolerations(
            claim1("claim-0", "req-0", "class-a"),
            vec![toleration_no_schedule(), toleration_no_execute()],
        )],
        slices: slice1_devices(vec![dev_taints(
            "device-1",
            vec![taint_no_schedule(), taint_no_execute()],
        )]),
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1_tolerating(
            vec![("req-0", A, "pool-1", "device-1", false)],
            vec![toleration_no_schedule(), toleration_no_execute()],
        )]),
    );
}

/// `tainted-prioritized-list`: the first subrequest's class has no device, the second's only
/// device is tainted.
#[test]
fn tainted_prioritized_list() {
    let c = Case {
        features: TAINTS_PRIO,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![first(
                "req-0",
                vec![sub("subReq-0", "class-b", 1), sub("subReq-1", "class-a", 1)],
            )],
        )],
        classes: vec![class("class-a", A), class("class-b", B)],
        slices: slice1_devices(vec![dev_taints("device-1", vec![taint_no_schedule()])]),
        ..Default::default()
    };
    check(c, Want::Nothing);
}

/// `tainted-admin-access`: admin access does not bypass taints.
#[test]
fn tainted_admin_access() {
    let c = Case {
        features: TAINTS_ADMIN,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![admin(req("req-0", "class-a", 1))],
        )],
        allocated: vec![(A, "pool-1", "device-1"), (A, "pool-1", "device-2")],
        slices: slice1_devices(vec![dev_taints("device-1", vec![taint_no_schedule()])]),
        ..Default::default()
    };
    check(c, Want::Nothing);
}

/// `tainted-all-devices-single`: All mode fails when one of its devices is tainted.
#[test]
fn tainted_all_devices_single() {
    let c = Case {
        features: TAINTS,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![all_req("req-0", "class-a")],
        )],
        slices: slice1_devices(vec![dev_taints("device-1", vec![taint_no_schedule()])]),
        ..Default::default()
    };
    check(c, Want::Nothing);
}

// ---- ksim's own cases ----------------------------------------------------------------------

/// One request for two devices, first device tainted (the first-fit shortcut's path): the
/// untainted ones are picked.
#[test]
fn tainted_device_skipped_by_first_fit() {
    let c = Case {
        features: TAINTS,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![req("req-0", "class-a", 2)],
        )],
        slices: slice1_devices(vec![
            dev_taints("device-1", vec![taint_no_execute()]),
            dev("device-2"),
            dev_taints("device-3", vec![taint_none()]),
        ]),
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![
            ("req-0", A, "pool-1", "device-2", false),
            ("req-0", A, "pool-1", "device-3", false),
        ])]),
    );
}

/// All mode with every taint tolerated (`Exists` without a key tolerates all): every device,
/// each result with the tolerations.
#[test]
fn tainted_all_devices_tolerated() {
    let everything = json!({"operator": "Exists"});
    let c = Case {
        features: TAINTS,
        claims: vec![with_tolerations(
            claim("claim-0", json!([]), vec![all_req("req-0", "class-a")]),
            vec![everything.clone()],
        )],
        slices: slice1_devices(vec![
            dev_taints("device-1", vec![taint_no_schedule()]),
            dev_taints("device-2", vec![taint_no_execute()]),
        ]),
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1_tolerating(
            vec![
                ("req-0", A, "pool-1", "device-1", false),
                ("req-0", A, "pool-1", "device-2", false),
            ],
            vec![json!({"operator": "Exists"})],
        )]),
    );
}

/// A toleration with another effect or value does not tolerate the taint; with the gate off
/// the same claim gets the device (and its result carries the tolerations, as upstream's
/// allocator copies them whatever the gate).
#[test]
fn toleration_must_match_effect_and_value() {
    let tolerations = vec![
        json!({"operator": "Equal", "key": "taint-key", "value": "taint-value-2",
            "effect": "NoSchedule"}),
        json!({"operator": "Equal", "key": "taint-key", "value": "other",
            "effect": "NoExecute"}),
    ];
    let claims = vec![with_tolerations(
        claim1("claim-0", "req-0", "class-a"),
        tolerations.clone(),
    )];
    let slices = slice1_devices(vec![dev_taints("device-1", vec![taint_no_execute()])]);
    let on = Case {
        features: TAINTS,
        claims: claims.clone(),
        slices: slices.clone(),
        ..Default::default()
    };
    check(on, Want::Nothing);
    let off = Case {
        claims,
        slices,
        ..Default::default()
    };
    check(
        off,
        Want::Results(vec![on_node1_tolerating(
            vec![("req-0", A, "pool-1", "device-1", false)],
            tolerations,
        )]),
    );
}
