//! Upstream's `TestAllocator` cases with DRAPartitionableDevices on, continued (see
//! `allocator_table_partitionable.rs`): invalid counter pools, a counter set shared by devices
//! on several nodes; then ksim's own cases.

use serde_json::{json, Value};

use super::allocator_table::*;
use super::allocator_table_partitionable::*;

/// `partitionable-devices-same-counter-set-name-in-different-resource-slices`: two slices of
/// the pool define `counter-set-1`; the pool is invalid.
#[test]
fn partitionable_devices_same_counter_set_name_in_different_resource_slices() {
    let c = Case {
        features: PART,
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
                4,
                A,
                vec![dev("device-1")],
            ),
            counters(
                "slice-2",
                At::Node("node-1"),
                "pool-1",
                4,
                A,
                &[("counter-set-1", &[])],
            ),
            slice_n(
                "slice-3",
                At::Node("node-1"),
                "pool-1",
                4,
                A,
                vec![dev("device-2")],
            ),
            counters(
                "slice-4",
                At::Node("node-1"),
                "pool-1",
                4,
                A,
                &[("counter-set-1", &[])],
            ),
        ],
        ..Default::default()
    };
    check(c, Want::Error("invalid resource pools were encountered"));
}

/// `partitionable-devices-device-counter-consumption-references-unknown-counter-set`
#[test]
fn partitionable_devices_device_counter_consumption_references_unknown_counter_set() {
    let c = Case {
        features: PART,
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
                vec![dev_c("device-1", false, &[("counter-set-2", &[])])],
            ),
            counters(
                "slice-2",
                At::Node("node-1"),
                "pool-1",
                2,
                A,
                &[("counter-set-1", &[])],
            ),
        ],
        ..Default::default()
    };
    check(c, Want::Error("invalid resource pools were encountered"));
}

/// `partitionable-devices-device-counter-consumption-references-unknown-counter-in-counter-set`
#[test]
fn partitionable_devices_device_counter_consumption_references_unknown_counter_in_counter_set() {
    let c = Case {
        features: PART,
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
                vec![dev_c("device-1", false, &[("counter-set-1", &mem("8Gi"))])],
            ),
            counters(
                "slice-2",
                At::Node("node-1"),
                "pool-1",
                2,
                A,
                &[("counter-set-1", &[("other-memory", "8Gi")])],
            ),
        ],
        ..Default::default()
    };
    check(c, Want::Error("invalid resource pools were encountered"));
}

/// `partitionable-devices-device-counter-consumption-references-counter-set-in-other-pool`
#[test]
fn partitionable_devices_device_counter_consumption_references_counter_set_in_other_pool() {
    let c = Case {
        features: PART,
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
                vec![dev_c("device-1", false, &[("counter-set-1", &mem("8Gi"))])],
            ),
            counters(
                "slice-2",
                At::Node("node-1"),
                "pool-2",
                1,
                A,
                &[("counter-set-1", &mem("8Gi"))],
            ),
        ],
        ..Default::default()
    };
    check(c, Want::Error("invalid resource pools were encountered"));
}

/// The pool of `partitionable-devices-devices-on-different-nodes-consume-same-counter-set`:
/// 8Gi shared by device-1 (6Gi) and device-2 (2Gi) on node-1 and device-3 (6Gi, `third`'s
/// counter set) on node-2.
fn pool_across_nodes(third: &'static str) -> Vec<Value> {
    vec![
        counters(
            "slice-1",
            At::Node("node-1"),
            "pool-1",
            3,
            A,
            &[("counter-set-1", &mem("8Gi"))],
        ),
        slice_n(
            "slice-2",
            At::Node("node-1"),
            "pool-1",
            3,
            A,
            vec![
                dev_c("device-1", true, &[("counter-set-1", &mem("6Gi"))]),
                dev_c("device-2", true, &[("counter-set-1", &mem("2Gi"))]),
            ],
        ),
        slice_n(
            "slice-3",
            At::Node("node-2"),
            "pool-1",
            3,
            A,
            vec![dev_c("device-3", false, &[(third, &mem("6Gi"))])],
        ),
    ]
}

/// `partitionable-devices-devices-on-different-nodes-consume-same-counter-set`: device-3,
/// allocated on node-2, leaves 2Gi of the shared 8Gi for node-1's devices.
#[test]
fn partitionable_devices_devices_on_different_nodes_consume_same_counter_set() {
    let c = Case {
        features: PART_PRIO,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![first(
                "req-0",
                vec![
                    sub_sel("subReq-0", "class-a", 1, vec![mem_at_least("6Gi")]),
                    sub_sel("subReq-1", "class-a", 1, vec![mem_at_least("2Gi")]),
                ],
            )],
        )],
        slices: pool_across_nodes("counter-set-1"),
        allocated: vec![(A, "pool-1", "device-3")],
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![(
            "req-0/subReq-1",
            A,
            "pool-1",
            "device-2",
            false,
        )])]),
    );
}

/// `partitionable-devices-validation-error-on-non-targeting-slice`: a device on node-2
/// consumes from a counter set the pool does not define.
#[test]
fn partitionable_devices_validation_error_on_non_targeting_slice() {
    let c = Case {
        features: PART,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![req("req-0", "class-a", 1)],
        )],
        slices: pool_across_nodes("counter-set-2"),
        ..Default::default()
    };
    check(c, Want::Error("invalid resource pools were encountered"));
}

// ksim's own cases beside upstream's.

/// Upstream's no-capacity and over-allocated cases put two slices in a pool of one, so the
/// pool is incomplete whatever the counters; with the count right, the allocated device-2
/// (16Gi, then 20Gi, of 18Gi) still leaves no room for device-1 (4Gi), and without it
/// device-1 is allocated.
#[test]
fn counters_taken_by_an_allocated_device_in_a_complete_pool() {
    for (second, allocated, want_device) in [
        ("16Gi", true, None),
        ("20Gi", true, None),
        ("14Gi", true, Some("device-1")),
        ("16Gi", false, Some("device-1")),
    ] {
        let mut slices = one_slice_pool(second);
        for s in &mut slices {
            s["spec"]["pool"]["resourceSliceCount"] = json!(2);
        }
        let c = Case {
            features: PART,
            claims: vec![claim(
                "claim-0",
                json!([]),
                vec![req("req-0", "class-a", 1)],
            )],
            slices,
            allocated: if allocated {
                vec![(A, "pool-1", "device-2")]
            } else {
                vec![]
            },
            ..Default::default()
        };
        match want_device {
            None => check(c, Want::Nothing),
            Some(d) => check(
                c,
                Want::Results(vec![on_node1(vec![("req-0", A, "pool-1", d, false)])]),
            ),
        }
    }
}

/// With the gate off, the same pool allocates nothing (every device consumes counters) and
/// per-device slices are not seen; with it on, a per-device slice's device for another node
/// is skipped and the claim's node selector is the chosen device's.
#[test]
fn the_gate_decides() {
    let slices = || {
        vec![
            slice_n(
                "slice-1",
                At::PerDevice,
                "pool-1",
                2,
                A,
                vec![
                    on(
                        dev_c("device-1", false, &[("counter-set-1", &mem("4Gi"))]),
                        At::Node("node-2"),
                    ),
                    on(
                        dev_c("device-2", false, &[("counter-set-1", &mem("4Gi"))]),
                        At::All,
                    ),
                ],
            ),
            counters(
                "slice-2",
                At::Node("node-2"),
                "pool-1",
                2,
                A,
                &[("counter-set-1", &mem("8Gi"))],
            ),
        ]
    };
    let claims = || {
        vec![claim(
            "claim-0",
            json!([]),
            vec![req("req-0", "class-a", 1)],
        )]
    };
    check(
        Case {
            features: NONE,
            claims: claims(),
            slices: slices(),
            ..Default::default()
        },
        Want::Nothing,
    );
    check(
        Case {
            features: PART,
            claims: claims(),
            slices: slices(),
            ..Default::default()
        },
        Want::Results(vec![with_selector(
            None,
            vec![("req-0", A, "pool-1", "device-2", false)],
        )]),
    );
}

/// As upstream's `allocateDevice`, a device whose counters were taken but that a
/// `matchAttribute` constraint refuses keeps them taken for the rest of the attempt: here
/// device-1 (6Gi of 8Gi, wrong model) is refused by the constraint, and device-2 (4Gi) then
/// does not fit, although nothing is allocated.
#[test]
fn counters_of_a_device_a_constraint_refused_stay_taken() {
    let model = |name: &str, m: &str, q: &'static str| {
        let mut d = dev_c(name, false, &[("counter-set-1", &[("memory", q)])]);
        d["attributes"] = json!({"model": {"string": m}});
        d
    };
    let c = |d2_model: &str| Case {
        features: PART,
        claims: vec![claim(
            "claim-0",
            json!([match_attr("model", &[])]),
            vec![req("req-0", "class-a", 1), req("req-1", "class-a", 1)],
        )],
        slices: vec![
            slice_n(
                "slice-1",
                At::Node("node-1"),
                "pool-1",
                2,
                A,
                vec![
                    dev_attrs("device-0", json!({"model": {"string": "x"}})),
                    model("device-1", "y", "6Gi"),
                    model("device-2", d2_model, "4Gi"),
                ],
            ),
            counters(
                "slice-2",
                At::Node("node-1"),
                "pool-1",
                2,
                A,
                &[("counter-set-1", &mem("8Gi"))],
            ),
        ],
        ..Default::default()
    };
    check(c("x"), Want::Nothing);
    // Control: without device-1 in the way (it matches, and then device-2 is not needed).
    let mut ok = c("x");
    ok.slices[0]["spec"]["devices"][1]["attributes"]["model"]["string"] = json!("x");
    check(
        ok,
        Want::Results(vec![on_node1(vec![
            ("req-0", A, "pool-1", "device-0", false),
            ("req-1", A, "pool-1", "device-1", false),
        ])]),
    );
}

/// A per-device slice whose first device is for node-2: one request for one device (the
/// first-fit shortcut's case) gets the second.
#[test]
fn per_device_node_selection_in_first_fit() {
    let c = Case {
        features: PART,
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
            vec![
                on(dev("device-1"), At::Node("node-2")),
                on(dev("device-2"), At::Node("node-1")),
            ],
        )],
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![(
            "req-0", A, "pool-1", "device-2", false,
        )])]),
    );
}
