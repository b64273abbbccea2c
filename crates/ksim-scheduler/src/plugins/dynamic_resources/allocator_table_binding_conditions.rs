//! Upstream's `TestAllocator` cases with DRADeviceBindingConditions on (upstream's
//! `DeviceBindingAndStatus` feature; see `allocator_table.rs` for the harness), with
//! `withBindingConditions` / `withBindsToNode` devices, and the six that combine it with
//! DRAPartitionableDevices (and DRADeviceTaints). Besides the devices and node selector that
//! `check` compares, each result's `bindingConditions` / `bindingFailureConditions` (upstream's
//! `deviceRequestAllocationResultWithBindingConditions`) are compared per device. The gate-off
//! case (`binding-conditions-without-feature-gate`) is in `allocator_table_pools.rs`.

use serde_json::{json, Value};

use super::allocator::Features;
use super::allocator_table::*;
use super::allocator_table_partitionable::{counters, dev_c, mem};

/// `Features{DeviceBindingAndStatus: true}`.
const BC: Features = Features {
    device_binding_conditions: true,
    ..NONE
};
/// DRAPartitionableDevices and DRADeviceBindingConditions on.
const PART_BC: Features = Features {
    partitionable_devices: true,
    device_binding_conditions: true,
    ..NONE
};
/// DRAPartitionableDevices, DRADeviceBindingConditions and DRADeviceTaints on.
const PART_BC_TAINTS: Features = Features {
    partitionable_devices: true,
    device_binding_conditions: true,
    device_taints: true,
    ..NONE
};

/// `.withBindingConditions(conditions, failureConditions)` on a device.
fn bc(mut d: Value, conditions: &[&str], failure: &[&str]) -> Value {
    d["bindingConditions"] = json!(conditions);
    d["bindingFailureConditions"] = json!(failure);
    d
}

/// A device's expected `(bindingConditions, bindingFailureConditions)` in the result.
type Conds = (
    &'static str,
    &'static [&'static str],
    &'static [&'static str],
);

/// Runs the case as `check` does, then compares each device result's binding conditions
/// (a device not listed has none).
fn check_bc(make: impl Fn() -> Case, want: Want, conds: &[Conds]) {
    check(make(), want);
    let Ok(Some(results)) = allocate(&make()) else {
        assert!(
            conds.is_empty(),
            "no allocation to carry binding conditions"
        );
        return;
    };
    for r in results.iter().flat_map(|a| &a.devices.results) {
        let (c, f) = conds
            .iter()
            .find(|(d, _, _)| *d == r.device)
            .map(|(_, c, f)| (c.to_vec(), f.to_vec()))
            .unwrap_or_default();
        assert_eq!(r.binding_conditions, c, "{}: bindingConditions", r.device);
        assert_eq!(
            r.binding_failure_conditions, f,
            "{}: bindingFailureConditions",
            r.device
        );
    }
}

/// `device-binding-conditions`: a device with binding conditions is allocated, its
/// conditions copied into the result.
#[test]
fn device_binding_conditions() {
    let make = || Case {
        features: BC,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![req("req-0", "class-a", 1)],
        )],
        slices: vec![slice(
            "slice-1",
            "node-1",
            "pool-1",
            A,
            vec![bc(dev("device-1"), &["IsPrepare"], &["BindingFailed"])],
        )],
        ..Default::default()
    };
    check_bc(
        make,
        Want::Results(vec![on_node1(vec![(
            "req-0", A, "pool-1", "device-1", false,
        )])]),
        &[("device-1", &["IsPrepare"], &["BindingFailed"])],
    );
}

/// `binding-conditions-multiple-devices`: each device's own conditions.
#[test]
fn binding_conditions_multiple_devices() {
    let make = || Case {
        features: BC,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![req("req-0", "class-a", 2), req("req-1", "class-a", 1)],
        )],
        slices: vec![slice(
            "slice-1",
            "node-1",
            "pool-1",
            A,
            vec![
                bc(dev("device-1"), &["IsPrepare"], &["BindingFailed"]),
                bc(dev("device-2"), &["IsPrepare2"], &["BindingFailed2"]),
                bc(dev("device-3"), &["IsPrepare3"], &["BindingFailed3"]),
            ],
        )],
        ..Default::default()
    };
    check_bc(
        make,
        Want::Results(vec![on_node1(vec![
            ("req-0", A, "pool-1", "device-1", false),
            ("req-0", A, "pool-1", "device-2", false),
            ("req-1", A, "pool-1", "device-3", false),
        ])]),
        &[
            ("device-1", &["IsPrepare"], &["BindingFailed"]),
            ("device-2", &["IsPrepare2"], &["BindingFailed2"]),
            ("device-3", &["IsPrepare3"], &["BindingFailed3"]),
        ],
    );
}

/// `binding-conditions-with-and-without`: no preference either way, the devices in order.
#[test]
fn binding_conditions_with_and_without() {
    let make = || Case {
        features: BC,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![req("req-0", "class-a", 1), req("req-1", "class-a", 1)],
        )],
        slices: vec![slice(
            "slice-1",
            "node-1",
            "pool-1",
            A,
            vec![
                dev("device-1"),
                bc(dev("device-2"), &["IsPrepare"], &["BindingFailed"]),
            ],
        )],
        ..Default::default()
    };
    check_bc(
        make,
        Want::Results(vec![on_node1(vec![
            ("req-0", A, "pool-1", "device-1", false),
            ("req-1", A, "pool-1", "device-2", false),
        ])]),
        &[("device-2", &["IsPrepare"], &["BindingFailed"])],
    );
}

/// `node-restriction`: a device with `bindsToNode: true` in a slice selected by label pins
/// the allocation to the node it was made for.
#[test]
fn node_restriction() {
    let make = || Case {
        features: BC,
        claims: vec![claim1("claim-0", "req-0", "class-a")],
        slices: vec![slice_n(
            "slice-1",
            At::Selector(label_sel("planet", &["earth"])),
            "pool-1",
            1,
            A,
            vec![json!({"name": "device-1", "bindsToNode": true})],
        )],
        ..Default::default()
    };
    check_bc(
        make,
        Want::Results(vec![on_node1(vec![(
            "req-0", A, "pool-1", "device-1", false,
        )])]),
        &[],
    );
}

/// The counter set of 8Gi memory in `slice-2` of `pool-1` (two slices) on node-1.
fn counters_8gi(name: &str, set: &str, count: i64) -> Value {
    counters(
        name,
        At::Node("node-1"),
        "pool-1",
        count,
        A,
        &[(set, &mem("8Gi"))],
    )
}

/// `partitionable-devices-with-binding-conditions`.
#[test]
fn partitionable_devices_with_binding_conditions() {
    let make = || Case {
        features: PART_BC,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![req("req-0", "class-a", 1)],
        )],
        slices: vec![
            slice_n(
                "slice-1",
                At::Node("node-1"),
                "pool-1",
                2,
                A,
                vec![bc(
                    dev_c("device-1", true, &[("counter-set-1", &mem("4Gi"))]),
                    &["IsPrepare"],
                    &["BindingFailed"],
                )],
            ),
            counters_8gi("slice-2", "counter-set-1", 2),
        ],
        ..Default::default()
    };
    check_bc(
        make,
        Want::Results(vec![on_node1(vec![(
            "req-0", A, "pool-1", "device-1", false,
        )])]),
        &[("device-1", &["IsPrepare"], &["BindingFailed"])],
    );
}

/// `partitionable-devices-with-binding-conditions-multiple`.
#[test]
fn partitionable_devices_with_binding_conditions_multiple() {
    let make = || Case {
        features: PART_BC,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![req("req-0", "class-a", 2)],
        )],
        slices: vec![
            slice_n(
                "slice-1",
                At::Node("node-1"),
                "pool-1",
                2,
                A,
                vec![
                    bc(
                        dev_c("device-1", true, &[("counter-set-1", &mem("4Gi"))]),
                        &["IsPrepare"],
                        &["BindingFailed"],
                    ),
                    bc(
                        dev_c("device-2", true, &[("counter-set-1", &mem("4Gi"))]),
                        &["IsPrepare2"],
                        &["BindingFailed2"],
                    ),
                ],
            ),
            counters_8gi("slice-2", "counter-set-1", 2),
        ],
        ..Default::default()
    };
    check_bc(
        make,
        Want::Results(vec![on_node1(vec![
            ("req-0", A, "pool-1", "device-1", false),
            ("req-0", A, "pool-1", "device-2", false),
        ])]),
        &[
            ("device-1", &["IsPrepare"], &["BindingFailed"]),
            ("device-2", &["IsPrepare2"], &["BindingFailed2"]),
        ],
    );
}

/// `partitionable-devices-with-binding-conditions-some-devices-no-conditions`.
#[test]
fn partitionable_devices_with_binding_conditions_some_devices_no_conditions() {
    let make = || Case {
        features: PART_BC,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![req("req-0", "class-a", 3)],
        )],
        slices: vec![
            slice_n(
                "slice-1",
                At::Node("node-1"),
                "pool-1",
                2,
                A,
                vec![
                    bc(
                        dev_c("device-1", true, &[("counter-set-1", &mem("2Gi"))]),
                        &["IsPrepare"],
                        &["BindingFailed"],
                    ),
                    dev_c("device-2", true, &[("counter-set-1", &mem("2Gi"))]),
                    bc(
                        dev_c("device-3", true, &[("counter-set-1", &mem("4Gi"))]),
                        &["IsReady"],
                        &["BindingTimeout"],
                    ),
                ],
            ),
            counters_8gi("slice-2", "counter-set-1", 2),
        ],
        ..Default::default()
    };
    check_bc(
        make,
        Want::Results(vec![on_node1(vec![
            ("req-0", A, "pool-1", "device-1", false),
            ("req-0", A, "pool-1", "device-2", false),
            ("req-0", A, "pool-1", "device-3", false),
        ])]),
        &[
            ("device-1", &["IsPrepare"], &["BindingFailed"]),
            ("device-3", &["IsReady"], &["BindingTimeout"]),
        ],
    );
}

/// `partitionable-devices-with-binding-conditions-multi-slices`: four slices, two counter
/// sets.
#[test]
fn partitionable_devices_with_binding_conditions_multi_slices() {
    let make = || Case {
        features: PART_BC,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![req("req-0", "class-a", 2)],
        )],
        slices: vec![
            slice_n(
                "slice-4",
                At::Node("node-1"),
                "pool-1",
                4,
                A,
                vec![bc(
                    dev_c("device-1", true, &[("counter-set-1", &mem("4Gi"))]),
                    &["IsPrepare"],
                    &["BindingFailed"],
                )],
            ),
            counters_8gi("slice-3", "counter-set-1", 4),
            slice_n(
                "slice-2",
                At::Node("node-1"),
                "pool-1",
                4,
                A,
                vec![dev_c("device-2", true, &[("counter-set-2", &mem("4Gi"))])],
            ),
            counters_8gi("slice-1", "counter-set-2", 4),
        ],
        ..Default::default()
    };
    check_bc(
        make,
        Want::Results(vec![on_node1(vec![
            ("req-0", A, "pool-1", "device-2", false),
            ("req-0", A, "pool-1", "device-1", false),
        ])]),
        &[("device-1", &["IsPrepare"], &["BindingFailed"])],
    );
}

/// `key1=value1:NoSchedule`, the taint of the two taint cases.
fn taint_key1() -> Value {
    json!([{"key": "key1", "value": "value1", "effect": "NoSchedule"}])
}

/// `partitionable-devices-with-binding-conditions-and-taints`: the tainted device is not
/// tolerated (and the two single-slice "pools" of `pool-1` make it incomplete): nothing.
#[test]
fn partitionable_devices_with_binding_conditions_and_taints() {
    let make = || {
        let mut d1 = bc(
            dev_c("device-1", true, &[("counter-set-1", &mem("4Gi"))]),
            &["IsPrepare"],
            &["BindingFailed"],
        );
        d1["taints"] = taint_key1();
        Case {
            features: PART_BC_TAINTS,
            claims: vec![claim(
                "claim-0",
                json!([]),
                vec![req("req-0", "class-a", 2)],
            )],
            slices: vec![
                slice(
                    "slice-1",
                    "node-1",
                    "pool-1",
                    A,
                    vec![
                        d1,
                        dev_c("device-2", true, &[("counter-set-1", &mem("4Gi"))]),
                    ],
                ),
                counters_8gi("slice-2", "counter-set-1", 1),
            ],
            ..Default::default()
        }
    };
    check_bc(make, Want::Nothing, &[]);
}

/// `partitionable-devices-with-binding-conditions-and-taints-tolerated`: with
/// `tolerationNoScheduleKey1` (Exists, key1, NoSchedule) both devices are allocated, each
/// result with the request's toleration.
#[test]
fn partitionable_devices_with_binding_conditions_and_taints_tolerated() {
    let toleration = json!({"operator": "Exists", "key": "key1", "effect": "NoSchedule"});
    let make = || {
        let mut d1 = bc(
            dev_c("device-1", true, &[("counter-set-1", &mem("4Gi"))]),
            &["IsPrepare"],
            &["BindingFailed"],
        );
        d1["taints"] = taint_key1();
        let mut r = req("req-0", "class-a", 2);
        r["exactly"]["tolerations"] = json!([toleration]);
        Case {
            features: PART_BC_TAINTS,
            claims: vec![claim("claim-0", json!([]), vec![r])],
            slices: vec![
                slice_n(
                    "slice-1",
                    At::Node("node-1"),
                    "pool-1",
                    2,
                    A,
                    vec![
                        d1,
                        dev_c("device-2", true, &[("counter-set-1", &mem("4Gi"))]),
                    ],
                ),
                counters_8gi("slice-2", "counter-set-1", 2),
            ],
            ..Default::default()
        }
    };
    let mut want = on_node1(vec![
        ("req-0", A, "pool-1", "device-1", false),
        ("req-0", A, "pool-1", "device-2", false),
    ]);
    want.tolerations = vec![toleration.clone()];
    check_bc(
        make,
        Want::Results(vec![want]),
        &[("device-1", &["IsPrepare"], &["BindingFailed"])],
    );
}

/// ksim's own: with the gate on and a device without binding conditions after one with
/// them, the search takes the first in order (upstream has no preference), and `All` takes
/// both, each with its own conditions.
#[test]
fn all_mode_copies_each_devices_conditions() {
    let make = || Case {
        features: BC,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![all_req("req-0", "class-a")],
        )],
        slices: vec![slice(
            "slice-1",
            "node-1",
            "pool-1",
            A,
            vec![
                bc(dev("device-1"), &["IsPrepare"], &["BindingFailed"]),
                dev("device-2"),
            ],
        )],
        ..Default::default()
    };
    check_bc(
        make,
        Want::Results(vec![on_node1(vec![
            ("req-0", A, "pool-1", "device-1", false),
            ("req-0", A, "pool-1", "device-2", false),
        ])]),
        &[("device-1", &["IsPrepare"], &["BindingFailed"])],
    );
}
