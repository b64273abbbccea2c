//! Upstream's `TestAllocator` cases (see `allocator_table.rs`): devices of gates that are
//! off (counters, per-device node selection, taints, binding conditions), pools spread over
//! several nodes or generations, invalid and incomplete pools, and the searches upstream
//! counts `allocateOne` calls for (ksim checks their results only).

use serde_json::{json, Value};

use super::allocator_table::*;

fn classes_ab() -> Vec<Value> {
    vec![class("class-a", A), class("class-b", B)]
}

/// A device consuming 4Gi of `counter-set-1`'s memory.
fn dev_counters(name: &str) -> Value {
    json!({"name": name, "consumesCounters": [
        {"counterSet": "counter-set-1", "counters": {"memory": {"value": "4Gi"}}}]})
}

/// A slice with only `sharedCounters` (18Gi of memory in `counter-set-1`).
fn counter_slice(name: &str, count: i64) -> Value {
    let mut s = slice_n(name, At::Node("node-1"), "pool-1", count, A, vec![]);
    s["spec"]["sharedCounters"] =
        json!([{"name": "counter-set-1", "counters": {"memory": {"value": "18Gi"}}}]);
    s
}

/// `partitionable-devices-disabled-device-consumes-counters`
#[test]
fn partitionable_devices_disabled_device_consumes_counters() {
    let c = Case {
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![req("req-0", "class-a", 1)],
        )],
        slices: vec![
            slice(
                "slice-1",
                "node-1",
                "pool-1",
                A,
                vec![dev_counters("device-1")],
            ),
            counter_slice("slice-2", 1),
        ],
        ..Default::default()
    };
    check(c, Want::Nothing);
}

/// `partitionable-devices-disabled-other-device-do-not-consume-counters`: with the gate off,
/// the device that consumes counters is passed over.
#[test]
fn partitionable_devices_disabled_other_device_do_not_consume_counters() {
    let c = Case {
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
                vec![dev_counters("device-1"), dev("device-2")],
            ),
            counter_slice("slice-2", 2),
        ],
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![(
            "req-0", A, "pool-1", "device-2", false,
        )])]),
    );
}

/// `partitionable-devices-disabled-per-device-node-selection`
#[test]
fn partitionable_devices_disabled_per_device_node_selection() {
    let c = Case {
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![req("req-0", "class-a", 1)],
        )],
        slices: vec![slice_n(
            "slice-1",
            At::PerDevice,
            "pool-1",
            1,
            A,
            vec![json!({"name": "device-2", "nodeName": "node-1"})],
        )],
        ..Default::default()
    };
    check(c, Want::Nothing);
}

/// A device with upstream's `taintNoSchedule` (and `taintNoExecute` when `both`).
fn tainted(name: &str, both: bool) -> Value {
    let mut taints = vec![json!({"key": "taint-key", "value": "taint-value",
        "effect": "NoSchedule"})];
    if both {
        taints.push(json!({"key": "taint-key", "value": "taint-value-2",
            "effect": "NoExecute"}));
    }
    json!({"name": name, "taints": taints})
}

/// `tainted-disabled`: with DRADeviceTaints off, taints do not matter.
#[test]
fn tainted_disabled() {
    let c = Case {
        claims: vec![claim1("claim-0", "req-0", "class-a")],
        slices: vec![slice(
            "slice-1",
            "node-1",
            "pool-1",
            A,
            vec![tainted("device-1", true)],
        )],
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![(
            "req-0", A, "pool-1", "device-1", false,
        )])]),
    );
}

/// `tainted-prioritized-list-disabled`
#[test]
fn tainted_prioritized_list_disabled() {
    let c = Case {
        features: PRIO,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![first(
                "req-0",
                vec![sub("subReq-0", "class-b", 1), sub("subReq-1", "class-a", 1)],
            )],
        )],
        classes: classes_ab(),
        slices: vec![slice(
            "slice-1",
            "node-1",
            "pool-1",
            A,
            vec![tainted("device-1", false)],
        )],
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![(
            "req-0/subReq-1",
            A,
            "pool-1",
            "device-1",
            false,
        )])]),
    );
}

/// `tainted-admin-access-disabled`
#[test]
fn tainted_admin_access_disabled() {
    let c = Case {
        features: ADMIN,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![admin(req("req-0", "class-a", 1))],
        )],
        allocated: vec![(A, "pool-1", "device-1"), (A, "pool-1", "device-2")],
        slices: vec![slice(
            "slice-1",
            "node-1",
            "pool-1",
            A,
            vec![tainted("device-1", false)],
        )],
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![(
            "req-0", A, "pool-1", "device-1", true,
        )])]),
    );
}

/// `tainted-all-devices-single-disabled`
#[test]
fn tainted_all_devices_single_disabled() {
    let c = Case {
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
            vec![tainted("device-1", false)],
        )],
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![(
            "req-0", A, "pool-1", "device-1", false,
        )])]),
    );
}

/// `binding-conditions-without-feature-gate`: with DRADeviceBindingConditions off, a device
/// with binding conditions is not selectable.
#[test]
fn binding_conditions_without_feature_gate() {
    let c = Case {
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
            vec![
                json!({"name": "device-1", "bindingConditions": ["IsPrepare"],
                "bindingFailureConditions": ["BindingFailed"]}),
            ],
        )],
        ..Default::default()
    };
    check(c, Want::Nothing);
}

/// `allocation-mode-all-with-multi-host-resource-pool`: All takes the node's devices of a
/// pool that spans nodes.
#[test]
fn allocation_mode_all_with_multi_host_resource_pool() {
    let c = Case {
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![all_req("req-0", "class-a")],
        )],
        slices: vec![
            slice_n(
                "slice-1",
                At::Node("node-1"),
                "pool-1",
                2,
                A,
                vec![dev("device-1")],
            ),
            slice_n(
                "slice-2",
                At::Node("node-2"),
                "pool-1",
                2,
                A,
                vec![dev("device-2")],
            ),
        ],
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![(
            "req-0", A, "pool-1", "device-1", false,
        )])]),
    );
}

/// `multi-host-resource-pool-with-stale-slice-for-current-node`
#[test]
fn multi_host_resource_pool_with_stale_slice_for_current_node() {
    let c = Case {
        claims: vec![claim1("claim-0", "req-0", "class-a")],
        slices: vec![
            slice_gen(
                "slice-1",
                At::Node("node-1"),
                "pool-1",
                2,
                1,
                A,
                vec![dev("device-1")],
            ),
            slice_gen(
                "slice-2",
                At::Node("node-2"),
                "pool-1",
                2,
                2,
                A,
                vec![dev("device-2")],
            ),
        ],
        ..Default::default()
    };
    check(c, Want::Nothing);
}

/// Slices `(name, node, generation, device)` of `pool-1`, two slices per generation.
fn pool_update(parts: &[(&str, &'static str, i64, &str)]) -> Vec<Value> {
    parts
        .iter()
        .map(|(name, node, g, d)| slice_gen(name, At::Node(node), "pool-1", 2, *g, A, vec![dev(d)]))
        .collect()
}

/// `multi-host-resource-pool-complete-update-from-node-1-to-node-2`: upstream allocates from
/// the old generation on node-1 (it ignores the update, as a scheduler that had not yet
/// received it would).
#[test]
fn multi_host_resource_pool_complete_update_from_node_1_to_node_2() {
    let c = Case {
        claims: vec![claim1("claim-0", "req-0", "class-a")],
        slices: pool_update(&[
            ("slice-1", "node-1", 1, "device-1"),
            ("slice-1", "node-1", 1, "device-2"),
            ("slice-2", "node-2", 2, "device-1"),
            ("slice-2", "node-2", 2, "device-2"),
        ]),
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![(
            "req-0", A, "pool-1", "device-1", false,
        )])]),
    );
}

/// `multi-host-resource-pool-complete-update-from-node-2-to-node-1`
#[test]
fn multi_host_resource_pool_complete_update_from_node_2_to_node_1() {
    let c = Case {
        claims: vec![claim1("claim-0", "req-0", "class-a")],
        slices: pool_update(&[
            ("slice-1", "node-2", 1, "device-1"),
            ("slice-1", "node-2", 1, "device-2"),
            ("slice-2", "node-1", 2, "device-1"),
            ("slice-2", "node-1", 2, "device-2"),
        ]),
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![(
            "req-0", A, "pool-1", "device-1", false,
        )])]),
    );
}

/// `multi-host-resource-pool-incomplete-update-from-node-1-to-node-2`
#[test]
fn multi_host_resource_pool_incomplete_update_from_node_1_to_node_2() {
    let c = Case {
        claims: vec![claim1("claim-0", "req-0", "class-a")],
        slices: pool_update(&[
            ("slice-1", "node-1", 1, "device-1"),
            ("slice-1", "node-1", 1, "device-2"),
            ("slice-2", "node-2", 2, "device-1"),
        ]),
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![(
            "req-0", A, "pool-1", "device-1", false,
        )])]),
    );
}

/// `multi-host-resource-pool-incomplete-update-from-node-2-to-node-1`: node-1's generation is
/// incomplete, nothing is allocated.
#[test]
fn multi_host_resource_pool_incomplete_update_from_node_2_to_node_1() {
    let c = Case {
        claims: vec![claim1("claim-0", "req-0", "class-a")],
        slices: pool_update(&[
            ("slice-1", "node-2", 1, "device-1"),
            ("slice-1", "node-2", 1, "device-2"),
            ("slice-2", "node-1", 2, "device-1"),
        ]),
        ..Default::default()
    };
    check(c, Want::Nothing);
}

/// `different-resourceslices-in-pool-can-target-different-nodes`
#[test]
fn different_resourceslices_in_pool_can_target_different_nodes() {
    let c = Case {
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![req("req-0", "class-a", 1)],
        )],
        slices: vec![
            slice_n(
                "slice-1",
                At::Node("node-2"),
                "pool-1",
                2,
                A,
                vec![dev("device-1")],
            ),
            slice_n(
                "slice-2",
                At::Node("node-1"),
                "pool-1",
                2,
                A,
                vec![dev("device-2")],
            ),
        ],
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![(
            "req-0", A, "pool-1", "device-2", false,
        )])]),
    );
}

/// pool-1 is invalid (`device-1` twice), pool-2 has `device-2`.
fn invalid_and_valid_pool() -> Vec<Value> {
    vec![
        slice_n(
            "slice-1",
            At::Node("node-1"),
            "pool-1",
            2,
            A,
            vec![dev("device-1")],
        ),
        slice_n(
            "slice-2",
            At::Node("node-1"),
            "pool-1",
            2,
            A,
            vec![dev("device-1")],
        ),
        slice_n(
            "slice-3",
            At::Node("node-1"),
            "pool-2",
            1,
            A,
            vec![dev("device-2")],
        ),
    ]
}

/// `invalid-pool-is-ok-if-devices-can-be-allocated-from-other`
#[test]
fn invalid_pool_is_ok_if_devices_can_be_allocated_from_other() {
    let c = Case {
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![req("req-0", "class-a", 1)],
        )],
        slices: invalid_and_valid_pool(),
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![(
            "req-0", A, "pool-2", "device-2", false,
        )])]),
    );
}

/// `invalid-pool-is-error-if-no-other-device-can-be-allocated`
#[test]
fn invalid_pool_is_error_if_no_other_device_can_be_allocated() {
    let c = Case {
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![req("req-0", "class-a", 1)],
        )],
        slices: invalid_and_valid_pool(),
        allocated: vec![(A, "pool-2", "device-2")],
        ..Default::default()
    };
    check(c, Want::Error("invalid resource pools were encountered"));
}

/// `no-allocation-from-incomplete-pools`
#[test]
fn no_allocation_from_incomplete_pools() {
    let c = Case {
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![req("req-0", "class-a", 1)],
        )],
        slices: vec![slice_n(
            "slice-1",
            At::Node("node-1"),
            "pool-1",
            2,
            A,
            vec![dev("device-1")],
        )],
        ..Default::default()
    };
    check(c, Want::Nothing);
}

/// The four `check-combinations-within-single-request-*` cases: five devices wanted, four on
/// the node, however they are spread over slices and pools.
#[test]
fn check_combinations_within_single_request() {
    let four = || -> Vec<Value> { (1..=4).map(|i| dev(&format!("device-{i}"))).collect() };
    let d = |i: usize| vec![dev(&format!("device-{i}"))];
    let layouts: Vec<(&str, Vec<Value>)> = vec![
        (
            "single-pool-single-slice",
            vec![slice("slice-1", "node-1", "pool-1", A, four())],
        ),
        (
            "single-pool-multiple-slices",
            vec![
                slice_n(
                    "slice-1",
                    At::Node("node-1"),
                    "pool-1",
                    2,
                    A,
                    four()[..2].to_vec(),
                ),
                slice_n(
                    "slice-2",
                    At::Node("node-1"),
                    "pool-1",
                    2,
                    A,
                    four()[2..].to_vec(),
                ),
            ],
        ),
        (
            "multiple-pools-multiple-slices",
            vec![
                slice_n("slice-1", At::Node("node-1"), "pool-1", 2, A, d(1)),
                slice_n("slice-2", At::Node("node-1"), "pool-1", 2, A, d(2)),
                slice("slice-3", "node-1", "pool-2", A, four()[2..].to_vec()),
            ],
        ),
        (
            "many-pools",
            vec![
                slice("slice-1", "node-1", "pool-1", A, d(1)),
                slice("slice-2", "node-1", "pool-2", A, d(2)),
                slice("slice-3", "node-1", "pool-3", A, d(3)),
                slice("slice-4", "node-1", "pool-4", A, d(4)),
            ],
        ),
    ];
    for (name, slices) in layouts {
        eprintln!("check-combinations-within-single-request-{name}");
        let c = Case {
            claims: vec![claim(
                "claim-0",
                json!([]),
                vec![req("req-0", "class-a", 5)],
            )],
            slices,
            ..Default::default()
        };
        check(c, Want::Nothing);
    }
}

fn typed(name: &str, t: &str) -> Value {
    dev_attrs(name, json!({"type": {"string": t}}))
}

fn type_is(t: &str) -> Value {
    cel(&format!("device.attributes[\"{A}\"].type == \"{t}\""))
}

fn xyy() -> Vec<Value> {
    vec![slice(
        "slice-1",
        "node-1",
        "pool-1",
        A,
        vec![
            typed("device-1", "X"),
            typed("device-2", "Y"),
            typed("device-3", "Y"),
        ],
    )]
}

/// `check-combinations-with-backtracking`: {device-1, device-2} for req-1 fails because req-2
/// needs device-1; the solution is {device-2, device-3} and {device-1}.
#[test]
fn check_combinations_with_backtracking() {
    let c = Case {
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![
                req("req-1", "class-a", 2),
                req_sel("req-2", "class-a", 1, vec![type_is("X")]),
            ],
        )],
        slices: xyy(),
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![
            ("req-1", A, "pool-1", "device-2", false),
            ("req-1", A, "pool-1", "device-3", false),
            ("req-2", A, "pool-1", "device-1", false),
        ])]),
    );
}

/// `check-combinations-with-prioritized-list`
#[test]
fn check_combinations_with_prioritized_list() {
    let c = Case {
        features: PRIO,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![
                first(
                    "req-1",
                    vec![
                        sub_sel("subReq-0", "class-a", 3, vec![type_is("Y")]),
                        sub("subReq-1", "class-a", 2),
                    ],
                ),
                first(
                    "req-2",
                    vec![
                        sub("subReq-0", "class-a", 2),
                        sub_sel("subReq-1", "class-a", 1, vec![type_is("X")]),
                    ],
                ),
            ],
        )],
        slices: xyy(),
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![
            ("req-1/subReq-1", A, "pool-1", "device-2", false),
            ("req-1/subReq-1", A, "pool-1", "device-3", false),
            ("req-2/subReq-1", A, "pool-1", "device-1", false),
        ])]),
    );
}
