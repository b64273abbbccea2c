//! Upstream's `TestAllocator` cases with DRAPartitionableDevices on (see
//! `allocator_table.rs`): counter sets, devices consuming counters, per-device node
//! selection. Each case also runs with the shortcuts off and must answer the same. The cases
//! of invalid counter pools and pools spread over nodes, and ksim's own, are in
//! `allocator_table_partitionable_more.rs`.

use serde_json::{json, Value};

use super::allocator::Features;
use super::allocator_table::*;

pub(super) const PART: Features = Features {
    admin_access: false,
    prioritized_list: false,
    device_taints: false,
    partitionable_devices: true,
    device_binding_conditions: false,
    consumable_capacity: false,
};
pub(super) const PART_PRIO: Features = Features {
    admin_access: false,
    prioritized_list: true,
    device_taints: false,
    partitionable_devices: true,
    device_binding_conditions: false,
    consumable_capacity: false,
};

/// `device(name, fromCounters?, nil).withDeviceCounterConsumption(...)`: `sets` is a list
/// of (counter set, [(counter, quantity)]); with `capacity`, the counters are also the
/// device's capacity (upstream's `fromCounters`).
pub(super) fn dev_c(name: &str, capacity: bool, sets: &[(&str, &[(&str, &str)])]) -> Value {
    let mut d = json!({"name": name, "consumesCounters": sets.iter().map(|(set, cs)| json!({
        "counterSet": set,
        "counters": cs.iter().map(|(n, q)| (n.to_string(), json!({"value": q})))
            .collect::<serde_json::Map<_, _>>(),
    })).collect::<Vec<_>>()});
    if capacity {
        let cap: serde_json::Map<_, _> = sets
            .iter()
            .flat_map(|(_, cs)| cs.iter())
            .map(|(n, q)| (n.to_string(), json!({"value": q})))
            .collect();
        d["capacity"] = Value::Object(cap);
    }
    d
}

/// `.withNodeSelection(...)` on a device.
pub(super) fn on(mut d: Value, at: At) -> Value {
    match at {
        At::Node(n) => d["nodeName"] = json!(n),
        At::Selector(s) => d["nodeSelector"] = s,
        At::All => d["allNodes"] = json!(true),
        At::PerDevice => unreachable!("not a device's node selection"),
    }
    d
}

/// `sliceWithCounterSets(name, at, resourcePool(pool, count), driver, sets...)`.
pub(super) fn counters(
    name: &str,
    at: At,
    pool: &str,
    count: i64,
    driver: &str,
    sets: &[(&str, &[(&str, &str)])],
) -> Value {
    let mut s = slice_n(name, at, pool, count, driver, vec![]);
    s["spec"].as_object_mut().expect("spec").remove("devices");
    s["spec"]["sharedCounters"] = Value::Array(
        sets.iter()
            .map(|(set, cs)| {
                json!({"name": set, "counters": cs.iter()
                    .map(|(n, q)| (n.to_string(), json!({"value": q})))
                    .collect::<serde_json::Map<_, _>>()})
            })
            .collect(),
    );
    s
}

pub(super) fn mem(q: &'static str) -> [(&'static str, &'static str); 1] {
    [("memory", q)]
}

/// The two subrequests of several cases: memory ≥ 6Gi, then ≥ 4Gi.
fn subs_6_4() -> Vec<Value> {
    vec![
        sub_sel("subReq-0", "class-a", 1, vec![mem_at_least("6Gi")]),
        sub_sel("subReq-1", "class-a", 1, vec![mem_at_least("4Gi")]),
    ]
}

/// Devices 1, 2, 3 of `slice-1` consuming 4Gi, 6Gi, 4Gi of `counter-set-1`, and `slice-2`
/// with 8Gi of it, both in `pool-1` of two slices on node-1.
fn four_six_four() -> Vec<Value> {
    vec![
        slice_n(
            "slice-1",
            At::Node("node-1"),
            "pool-1",
            2,
            A,
            vec![
                dev_c("device-1", true, &[("counter-set-1", &mem("4Gi"))]),
                dev_c("device-2", true, &[("counter-set-1", &mem("6Gi"))]),
                dev_c("device-3", true, &[("counter-set-1", &mem("4Gi"))]),
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
    ]
}

/// `partitionable-devices-single-device`
#[test]
fn partitionable_devices_single_device() {
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
                vec![dev_c("device-1", false, &[("counter-set-1", &mem("4Gi"))])],
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
    check(
        c,
        Want::Results(vec![on_node1(vec![(
            "req-0", A, "pool-1", "device-1", false,
        )])]),
    );
}

/// `partitionable-devices-prioritized-list`: device-2 (6Gi) would fit subReq-0, but with
/// device-1's 4Gi taken only 4Gi of the 8Gi are left, so subReq-1 gets device-3.
#[test]
fn partitionable_devices_prioritized_list() {
    let c = Case {
        features: PART_PRIO,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![req("req-0", "class-a", 1), first("req-1", subs_6_4())],
        )],
        slices: four_six_four(),
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![
            ("req-0", A, "pool-1", "device-1", false),
            ("req-1/subReq-1", A, "pool-1", "device-3", false),
        ])]),
    );
}

/// `partitionable-devices-multiple-devices`
#[test]
fn partitionable_devices_multiple_devices() {
    let c = Case {
        features: PART,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![req("req-0", "class-a", 1), req("req-1", "class-a", 1)],
        )],
        slices: four_six_four(),
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![
            ("req-0", A, "pool-1", "device-1", false),
            ("req-1", A, "pool-1", "device-3", false),
        ])]),
    );
}

/// `partitionable-devices-multiple-capacity-pools`
#[test]
fn partitionable_devices_multiple_capacity_pools() {
    let c = Case {
        features: PART_PRIO,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![req("req-0", "class-a", 1), first("req-1", subs_6_4())],
        )],
        slices: vec![
            slice_n(
                "slice-1",
                At::Node("node-1"),
                "pool-1",
                2,
                A,
                vec![
                    dev_c(
                        "device-1",
                        true,
                        &[
                            ("counter-set-1", &mem("4Gi")),
                            ("counter-set-2", &[("cpus", "4")]),
                        ],
                    ),
                    dev_c(
                        "device-2",
                        true,
                        &[
                            ("counter-set-1", &mem("6Gi")),
                            ("counter-set-2", &[("cpus", "6")]),
                        ],
                    ),
                    dev_c(
                        "device-3",
                        true,
                        &[
                            ("counter-set-1", &mem("4Gi")),
                            ("counter-set-2", &[("cpus", "4")]),
                        ],
                    ),
                ],
            ),
            counters(
                "slice-2",
                At::Node("node-1"),
                "pool-1",
                2,
                A,
                &[
                    ("counter-set-1", &mem("18Gi")),
                    ("counter-set-2", &[("cpus", "8")]),
                ],
            ),
        ],
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![
            ("req-0", A, "pool-1", "device-1", false),
            ("req-1/subReq-1", A, "pool-1", "device-3", false),
        ])]),
    );
}

/// `partitionable-devices-multiple-counters`: device-1's 6 cpus leave too few for any other
/// device, so the search backtracks to device-2 and device-3.
#[test]
fn partitionable_devices_multiple_counters() {
    let c = Case {
        features: PART,
        claims: vec![claim(
            "claim-0",
            json!([]),
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
                    dev_c(
                        "device-1",
                        true,
                        &[
                            ("counter-set-1", &[("memory", "4Gi"), ("cpus", "6")]),
                            ("counter-set-2", &[("cpus", "4"), ("memory", "2Gi")]),
                        ],
                    ),
                    dev_c(
                        "device-2",
                        true,
                        &[
                            ("counter-set-1", &[("memory", "6Gi"), ("cpus", "4")]),
                            ("counter-set-2", &[("cpus", "6"), ("memory", "6Gi")]),
                        ],
                    ),
                    dev_c(
                        "device-3",
                        true,
                        &[
                            ("counter-set-1", &[("memory", "4Gi"), ("cpus", "4")]),
                            ("counter-set-2", &[("cpus", "4"), ("memory", "4Gi")]),
                        ],
                    ),
                ],
            ),
            counters(
                "slice-2",
                At::Node("node-1"),
                "pool-1",
                2,
                A,
                &[
                    ("counter-set-1", &[("cpus", "8"), ("memory", "18Gi")]),
                    ("counter-set-2", &[("cpus", "12"), ("memory", "18Gi")]),
                ],
            ),
        ],
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![
            ("req-0", A, "pool-1", "device-2", false),
            ("req-1", A, "pool-1", "device-3", false),
        ])]),
    );
}

/// `partitionable-devices-multiple-pools`: pool-1's allocated devices leave too few cpus,
/// pool-2's device-1 is allocated, so both requests get pool-2's devices 2 and 3.
#[test]
fn partitionable_devices_multiple_pools() {
    let cm = |c: &'static str, m: &'static str| [("cpus", c), ("memory", m)];
    let c = Case {
        features: PART,
        claims: vec![claim(
            "claim-0",
            json!([]),
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
                    dev_c("device-1", true, &[("counter-set-1", &cm("6", "4Gi"))]),
                    dev_c("device-2", true, &[("counter-set-1", &cm("4", "6Gi"))]),
                    dev_c("device-3", true, &[("counter-set-1", &cm("4", "4Gi"))]),
                ],
            ),
            counters(
                "slice-2",
                At::Node("node-1"),
                "pool-1",
                2,
                A,
                &[("counter-set-1", &cm("8", "18Gi"))],
            ),
            slice_n(
                "slice-3",
                At::Node("node-1"),
                "pool-2",
                2,
                A,
                vec![
                    dev_c("device-1", true, &[("counter-set-1", &cm("6", "4Gi"))]),
                    dev_c("device-2", true, &[("counter-set-1", &cm("1", "7Gi"))]),
                    dev_c("device-3", true, &[("counter-set-1", &cm("1", "7Gi"))]),
                ],
            ),
            counters(
                "slice-4",
                At::Node("node-1"),
                "pool-2",
                2,
                A,
                &[("counter-set-1", &cm("8", "18Gi"))],
            ),
        ],
        allocated: vec![
            (A, "pool-1", "device-2"),
            (A, "pool-1", "device-3"),
            (A, "pool-2", "device-1"),
        ],
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![
            ("req-0", A, "pool-2", "device-2", false),
            ("req-1", A, "pool-2", "device-3", false),
        ])]),
    );
}

/// `partitionable-devices-unused-counters-in-counter-set`: a counter no device consumes does
/// not block; device-1 (5Gi) leaves too little for a second device.
#[test]
fn partitionable_devices_unused_counters_in_counter_set() {
    let c = Case {
        features: PART,
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
                    dev_c("device-1", false, &[("counter-set-1", &mem("5Gi"))]),
                    dev_c("device-2", false, &[("counter-set-1", &mem("4Gi"))]),
                    dev_c("device-3", false, &[("counter-set-1", &mem("4Gi"))]),
                ],
            ),
            counters(
                "slice-2",
                At::Node("node-1"),
                "pool-1",
                2,
                A,
                &[("counter-set-1", &[("memory", "8Gi"), ("unused", "1Gi")])],
            ),
        ],
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

/// Devices 1 (4Gi) and 2 (`second`) of `slice-1`, 18Gi in `slice-2`, pool-1 of one slice...
/// as upstream writes it: both slices in a pool whose `resourceSliceCount` is 1.
pub(super) fn one_slice_pool(second: &'static str) -> Vec<Value> {
    vec![
        slice(
            "slice-1",
            "node-1",
            "pool-1",
            A,
            vec![
                dev_c("device-1", true, &[("counter-set-1", &mem("4Gi"))]),
                dev_c("device-2", true, &[("counter-set-1", &mem(second))]),
            ],
        ),
        counters(
            "slice-2",
            At::Node("node-1"),
            "pool-1",
            1,
            A,
            &[("counter-set-1", &mem("18Gi"))],
        ),
    ]
}

/// `partitionable-devices-no-capacity-available`: the allocated device-2 takes 16Gi of 18Gi.
#[test]
fn partitionable_devices_no_capacity_available() {
    let c = Case {
        features: PART,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![req("req-0", "class-a", 1)],
        )],
        slices: one_slice_pool("16Gi"),
        allocated: vec![(A, "pool-1", "device-2")],
        ..Default::default()
    };
    check(c, Want::Nothing);
}

/// `partitionable-devices-overallocated-capacity-pool`: the allocated device-2 takes 20Gi of
/// 18Gi; nothing else fits.
#[test]
fn partitionable_devices_overallocated_capacity_pool() {
    let c = Case {
        features: PART,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![req("req-0", "class-a", 1)],
        )],
        slices: one_slice_pool("20Gi"),
        allocated: vec![(A, "pool-1", "device-2")],
        ..Default::default()
    };
    check(c, Want::Nothing);
}

/// `partitionable-devices-per-device-node-selection-nodename`: device-2 (6Gi) is on node-2,
/// so subReq-0 finds nothing on node-1 and subReq-1 gets device-1.
#[test]
fn partitionable_devices_per_device_node_selection_nodename() {
    let c = Case {
        features: PART_PRIO,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![first("req-0", subs_6_4())],
        )],
        slices: vec![
            slice_n(
                "slice-1",
                At::PerDevice,
                "pool-1",
                2,
                A,
                vec![
                    on(
                        dev_c("device-1", true, &[("counter-set-1", &mem("4Gi"))]),
                        At::Node("node-1"),
                    ),
                    on(
                        dev_c("device-2", true, &[("counter-set-1", &mem("6Gi"))]),
                        At::Node("node-2"),
                    ),
                ],
            ),
            counters(
                "slice-2",
                At::PerDevice,
                "pool-1",
                2,
                A,
                &[("counter-set-1", &mem("18Gi"))],
            ),
        ],
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

/// `partitionable-devices-per-device-node-selection-node-selector`: the allocation's node
/// selector is the device's.
#[test]
fn partitionable_devices_per_device_node_selection_node_selector() {
    let c = Case {
        features: PART_PRIO,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![req("req-0", "class-a", 1)],
        )],
        slices: vec![
            slice_n(
                "slice-1",
                At::PerDevice,
                "pool-1",
                2,
                A,
                vec![on(
                    dev_c("device-1", true, &[("counter-set-1", &mem("4Gi"))]),
                    At::Selector(label_sel("region", &["region-1"])),
                )],
            ),
            counters(
                "slice-2",
                At::PerDevice,
                "pool-1",
                2,
                A,
                &[("counter-set-1", &mem("18Gi"))],
            ),
        ],
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![with_selector(
            Some(label_sel("region", &["region-1"])),
            vec![("req-0", A, "pool-1", "device-1", false)],
        )]),
    );
}

/// `partitionable-devices-per-device-node-selection-node-selector-multiple-devices`: a
/// device with `nodeName` among the picks pins the claim to the node.
#[test]
fn partitionable_devices_per_device_node_selection_node_selector_multiple_devices() {
    let m4 = mem("4Gi");
    let c = Case {
        features: PART_PRIO,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![req("req-0", "class-a", 3), req("req-1", "class-b", 3)],
        )],
        classes: vec![class("class-a", A), class("class-b", B)],
        slices: vec![
            slice_n(
                "slice-1",
                At::PerDevice,
                "pool-1",
                2,
                A,
                vec![
                    on(
                        dev_c("device-1", true, &[("counter-set-1", &m4)]),
                        At::Selector(label_sel("region", &["region-1"])),
                    ),
                    on(
                        dev_c("device-2", true, &[("counter-set-1", &m4)]),
                        At::Node("node-1"),
                    ),
                    on(dev_c("device-3", true, &[("counter-set-1", &m4)]), At::All),
                ],
            ),
            counters(
                "slice-2",
                At::PerDevice,
                "pool-1",
                2,
                A,
                &[("counter-set-1", &mem("18Gi"))],
            ),
            slice_n(
                "slice-3",
                At::Node("node-1"),
                "pool-2",
                2,
                B,
                vec![
                    dev_c("device-1", true, &[("counter-set-2", &m4)]),
                    dev_c("device-2", true, &[("counter-set-2", &m4)]),
                    dev_c("device-3", true, &[("counter-set-2", &m4)]),
                ],
            ),
            counters(
                "slice-4",
                At::Node("node-1"),
                "pool-2",
                2,
                B,
                &[("counter-set-2", &mem("12Gi"))],
            ),
        ],
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![
            ("req-0", A, "pool-1", "device-1", false),
            ("req-0", A, "pool-1", "device-2", false),
            ("req-0", A, "pool-1", "device-3", false),
            ("req-1", B, "pool-2", "device-1", false),
            ("req-1", B, "pool-2", "device-2", false),
            ("req-1", B, "pool-2", "device-3", false),
        ])]),
    );
}

/// `partitionable-devices-with-attribute-selector`: the first two devices for req-0 would
/// leave no `cpu1`... device-1 (the only `special` one) must go to req-1, so req-0 gets 2
/// and 3 after backtracking.
#[test]
fn partitionable_devices_with_attribute_selector() {
    let special = |name: &str, v: bool, cpu: &'static str| {
        let mut d = dev_c(
            name,
            false,
            &[
                ("counter-set-1", &[(cpu, "1")]),
                ("counter-set-2", &[("mem", "10Gi")]),
            ],
        );
        d["attributes"] = json!({"special": {"bool": v}});
        d
    };
    let c = Case {
        features: PART,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![
                req("req-0", "class-a", 2),
                req_sel(
                    "req-1",
                    "class-a",
                    1,
                    vec![cel(&format!("device.attributes[\"{A}\"].special"))],
                ),
            ],
        )],
        slices: vec![
            slice_n(
                "slice-1",
                At::Node("node-1"),
                "pool-1",
                2,
                A,
                vec![
                    special("device-1", true, "cpu1"),
                    special("device-2", false, "cpu2"),
                    special("device-3", false, "cpu3"),
                ],
            ),
            counters(
                "slice-2",
                At::Node("node-1"),
                "pool-1",
                2,
                A,
                &[
                    (
                        "counter-set-1",
                        &[("cpu1", "1"), ("cpu2", "1"), ("cpu3", "1")],
                    ),
                    ("counter-set-2", &[("mem", "30Gi")]),
                ],
            ),
        ],
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![
            ("req-0", A, "pool-1", "device-2", false),
            ("req-0", A, "pool-1", "device-3", false),
            ("req-1", A, "pool-1", "device-1", false),
        ])]),
    );
}
