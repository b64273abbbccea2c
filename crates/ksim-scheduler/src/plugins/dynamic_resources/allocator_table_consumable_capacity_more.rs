//! DRAConsumableCapacity's cases of upstream's `TestAllocator`, continued (the harness and
//! the first cases are in `allocator_table_consumable_capacity.rs`): All-mode requests,
//! dedicated devices, `allowMultipleAllocations` with class selectors and partitionable
//! devices, and `distinctAttribute`.

use serde_json::{json, Value};

use super::allocator_table::*;
use super::allocator_table_consumable_capacity::*;

/// `consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-no-capacity`.
#[test]
fn allocation_mode_all_filter_out_no_capacity() {
    results(
        Cc::new(
            CC,
            vec![claim_r(
                "claim-0",
                vec![cap(all_req("req-0", "class-a"), "2")],
            )],
            class_multi(true),
            slice1_with(vec![
                multi(dev_caps("device-1", &[(C0, "2")])),
                multi(dev("device-2")),
            ]),
        ),
        vec![vec![shared("req-0", "device-1", &[(C0, "2")])]],
    );
}

/// `consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-insufficient-capacity`.
#[test]
fn allocation_mode_all_filter_out_insufficient_capacity() {
    results(
        Cc::new(
            CC,
            vec![claim_r(
                "claim-0",
                vec![cap(all_req("req-0", "class-a"), "2")],
            )],
            class_multi(true),
            slice1_with(vec![
                multi(dev_caps("device-1", &[(C0, "2")])),
                multi(dev_caps("device-2", &[(C0, "1")])),
            ]),
        ),
        vec![vec![shared("req-0", "device-1", &[(C0, "2")])]],
    );
}

/// `consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-sufficient`.
#[test]
fn allocation_mode_all_allocating_sufficient() {
    results(
        Cc::new(
            CC,
            vec![claim_r(
                "claim-0",
                vec![
                    cap(req("req-0", "class-a", 1), "1"),
                    cap(all_req("req-1", "class-a"), "1"),
                ],
            )],
            class("class-a", A),
            slice1_with(vec![
                multi(dev_caps("device-1", &[(C0, "2")])),
                multi(dev_caps("device-2", &[(C0, "1")])),
            ]),
        ),
        vec![vec![
            shared("req-0", "device-1", &[(C0, "1")]),
            shared("req-1", "device-1", &[(C0, "1")]),
            shared("req-1", "device-2", &[(C0, "1")]),
        ]],
    );
}

/// `consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-sufficient`.
#[test]
fn allocation_mode_all_in_use_sufficient() {
    let mut c = Cc::new(
        CC,
        vec![claim_r(
            "claim-0",
            vec![cap(all_req("req-0", "class-a"), "1")],
        )],
        class("class-a", A),
        slice1_with(vec![
            multi(dev_caps("device-1", &[(C0, "2")])),
            multi(dev_caps("device-2", &[(C0, "1")])),
        ]),
    );
    c.consumed = vec![("device-1", C0, "1")];
    results(
        c,
        vec![vec![
            shared("req-0", "device-1", &[(C0, "1")]),
            shared("req-0", "device-2", &[(C0, "1")]),
        ]],
    );
}

/// `consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-insufficient`.
#[test]
fn allocation_mode_all_allocating_insufficient() {
    nothing(Cc::new(
        CC,
        vec![claim_r(
            "claim-0",
            vec![
                cap(req("req-0", "class-a", 1), "1"),
                cap(all_req("req-1", "class-a"), "1"),
            ],
        )],
        class("class-a", A),
        slice1_with(vec![
            multi(dev_caps("device-1", &[(C0, "1")])),
            multi(dev_caps("device-2", &[(C0, "1")])),
        ]),
    ));
}

/// `consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-insufficient`.
#[test]
fn allocation_mode_all_in_use_insufficient() {
    let mut c = Cc::new(
        CC,
        vec![claim_r(
            "claim-0",
            vec![cap(all_req("req-0", "class-a"), "1")],
        )],
        class("class-a", A),
        slice1_with(vec![
            multi(dev_caps("device-1", &[(C0, "1")])),
            multi(dev_caps("device-2", &[(C0, "1")])),
        ]),
    );
    c.consumed = vec![("device-1", C0, "1")];
    results(c, vec![vec![shared("req-0", "device-2", &[(C0, "1")])]]);
}

/// `consumable-capacity-dedicated-device-with-consumable-capacity-request`.
#[test]
fn dedicated_device_with_consumable_capacity_request() {
    results(
        Cc::new(
            CC,
            vec![claim_r(
                "claim-0",
                vec![cap(req("req-0", "class-a", 1), "1")],
            )],
            class_multi(false),
            slice1_with(vec![dev_caps("device-1", &[(C0, "1")])]),
        ),
        vec![vec![("req-0", "device-1", None)]],
    );
}

/// `consumable-capacity-dedicated-device-with-multiple-consumable-capacity-request`.
#[test]
fn dedicated_device_with_multiple_consumable_capacity_request() {
    nothing(Cc::new(
        CC,
        vec![
            claim_r("claim-0", vec![cap(req("req-0", "class-a", 1), "1")]),
            claim_r("claim-1", vec![cap(req("req-0", "class-a", 1), "1")]),
        ],
        class_multi(false),
        slice1_with(vec![range(dev("device-1"), C0, "2")]),
    ));
}

/// `allow-multiple-allocations-exclude-multi-allocatable-device-by-class-selector`.
#[test]
fn allow_multiple_allocations_exclude_multi_allocatable_device_by_class_selector() {
    nothing(Cc::new(
        CC,
        vec![claim_r(
            "claim-0",
            vec![cap(req("req-0", "class-a", 1), "1")],
        )],
        class_multi(false),
        slice1_with(vec![multi(dev_caps("device-1", &[(C0, "1")]))]),
    ));
}

/// `allow-multiple-allocations-not-allocate-multi-allocatable-device-which-already-dedicated`.
#[test]
fn allow_multiple_allocations_not_allocate_multi_allocatable_device_which_already_dedicated() {
    let mut c = Cc::new(
        CC,
        vec![claim_r(
            "claim-0",
            vec![cap(req("req-0", "class-a", 1), "1")],
        )],
        class_multi(true),
        slice1_with(vec![range(multi(dev("device-1")), C0, "2")]),
    );
    c.allocated = vec!["device-1"];
    nothing(c);
}

/// `allow-multiple-allocations-not-allocate-dedicated-device-which-change-from-multi-allocatable`.
#[test]
fn allow_multiple_allocations_not_allocate_dedicated_device_which_change_from_multi_allocatable() {
    let mut c = Cc::new(
        CC,
        vec![claim_r(
            "claim-0",
            vec![cap(req("req-0", "class-a", 1), "1")],
        )],
        class_multi(true),
        slice1_with(vec![range(dev("device-1"), C0, "2")]),
    );
    c.consumed = vec![("device-1", C0, "1")];
    nothing(c);
}

/// A device whose capacities are its counters' values (`device(name, fromCounters, nil)
/// .withDeviceCounterConsumption(...)`), allowing multiple allocations.
fn from_counters(name: &str, consumes: &[(&str, &str, &str)]) -> Value {
    let mut d = multi(json!({"name": name, "consumesCounters": []}));
    for (set, counter, v) in consumes {
        d["consumesCounters"]
            .as_array_mut()
            .expect("array")
            .push(json!({"counterSet": set, "counters": {*counter: {"value": v}}}));
        d["capacity"][*counter] = json!({"value": v});
    }
    d
}

/// `sliceWithCounterSets(slice-2, node-1, resourcePool(pool-1, 2), driver-a, sets...)`.
fn counter_slice(sets: Value) -> Value {
    let mut s = slice_n("slice-2", At::Node("node-1"), "pool-1", 2, A, vec![]);
    s["spec"]["sharedCounters"] = sets;
    s
}

/// `allow-multiple-allocations-with-partitionable-device`.
#[test]
fn allow_multiple_allocations_with_partitionable_device() {
    let mem = |q: &str| {
        cel(&format!(
            "device.capacity[\"{A}\"].memory.compareTo(quantity(\"{q}\")) >= 0"
        ))
    };
    results(
        Cc::new(
            CC_PRIO_PART,
            vec![claim_r(
                "claim-0",
                vec![
                    req("req-0", "class-a", 1),
                    first(
                        "req-1",
                        vec![
                            sub_sel("subReq-0", "class-a", 1, vec![mem("6Gi")]),
                            sub_sel("subReq-1", "class-a", 1, vec![mem("4Gi")]),
                        ],
                    ),
                ],
            )],
            class_multi(true),
            vec![
                slice_n(
                    "slice-1",
                    At::Node("node-1"),
                    "pool-1",
                    2,
                    A,
                    vec![
                        from_counters("device-1", &[("counter-set-1", "memory", "4Gi")]),
                        from_counters("device-2", &[("counter-set-1", "memory", "6Gi")]),
                        from_counters("device-3", &[("counter-set-1", "memory", "4Gi")]),
                    ],
                ),
                counter_slice(
                    json!([{"name": "counter-set-1", "counters": {"memory": {"value": "8Gi"}}}]),
                ),
            ],
        ),
        vec![vec![
            shared("req-0", "device-1", &[("memory", "4Gi")]),
            shared("req-1/subReq-1", "device-3", &[("memory", "4Gi")]),
        ]],
    );
}

/// `consumable-capacity-with-partitionable-device-multiple-capacity-pools`.
#[test]
fn consumable_capacity_with_partitionable_device_multiple_capacity_pools() {
    let at_least = |q: &str| {
        cel(&format!(
            "device.capacity[\"{A}\"][\"{C0}\"].compareTo(quantity(\"{q}\")) >= 0"
        ))
    };
    let d = |name: &str, c0: &str| {
        range(
            from_counters(
                name,
                &[("counter-set-1", C0, c0), ("counter-set-2", C1, "4")],
            ),
            C1,
            "4",
        )
    };
    results(
        Cc::new(
            CC_PRIO_PART,
            vec![claim_r(
                "claim-0",
                vec![
                    cap(req("req-0", "class-a", 1), "1"),
                    cap(req("req-2", "class-a", 1), "2"),
                    first(
                        "req-1",
                        vec![
                            cap(sub_sel("subReq-0", "class-a", 1, vec![at_least("4")]), "1"),
                            cap(sub_sel("subReq-1", "class-a", 1, vec![at_least("2")]), "1"),
                        ],
                    ),
                ],
            )],
            class("class-a", A),
            vec![
                slice_n(
                    "slice-1",
                    At::Node("node-1"),
                    "pool-1",
                    2,
                    A,
                    vec![d("device-1", "2"), d("device-2", "4"), d("device-3", "2")],
                ),
                counter_slice(json!([
                    {"name": "counter-set-1", "counters": {C0: {"value": "4"}}},
                    {"name": "counter-set-2", "counters": {C1: {"value": "8"}}}
                ])),
            ],
        ),
        vec![vec![
            shared("req-0", "device-1", &[(C0, "1"), (C1, "2")]),
            shared("req-2", "device-3", &[(C0, "2"), (C1, "2")]),
            shared("req-1/subReq-1", "device-1", &[(C0, "1"), (C1, "2")]),
        ]],
    );
}

/// `with-distinct-constraints`.
#[test]
fn with_distinct_constraints() {
    let d = |name: &str, version: &str, numa: i64, b: bool| {
        multi(attrs(
            dev(name),
            json!({"driverVersion": {"version": version}, "numa": {"int": numa},
                "boolAttribute": {"bool": b}}),
        ))
    };
    results(
        Cc::new(
            CC,
            vec![claim(
                "claim-0",
                json!([
                    {"distinctAttribute": "driver-a/boolAttribute", "requests": ["req-0", "req-1"]},
                    {"distinctAttribute": "driver-a/driverVersion",
                        "requests": ["req-0", "req-1", "req-2"]},
                    {"distinctAttribute": "driver-a/numa",
                        "requests": ["req-0", "req-1", "req-2", "req-3"]}
                ]),
                vec![
                    req("req-0", "class-a", 1),
                    req("req-1", "class-a", 1),
                    req("req-2", "class-a", 1),
                    req("req-3", "class-a", 1),
                ],
            )],
            class("class-a", A),
            slice1_with(vec![
                d("device-1", "1.0.0", 0, true),
                d("device-2", "1.0.1", 1, false),
                d("device-3", "1.0.2", 2, true),
                d("device-4", "1.0.0", 3, true),
            ]),
        ),
        vec![vec![
            shared("req-0", "device-1", &[]),
            shared("req-1", "device-2", &[]),
            shared("req-2", "device-3", &[]),
            shared("req-3", "device-4", &[]),
        ]],
    );
}

/// `with-distinct-constraints-attribute-not-set`.
#[test]
fn with_distinct_constraints_attribute_not_set() {
    nothing(Cc::new(
        CC,
        vec![claim(
            "claim-0",
            json!([{"distinctAttribute": "driver-a/boolAttribute", "requests": ["req-0"]}]),
            vec![req("req-0", "class-a", 1)],
        )],
        class("class-a", A),
        slice1_with(vec![multi(dev("device-1"))]),
    ));
}

/// `with-distinct-constraints-with-subrequests`.
#[test]
fn with_distinct_constraints_with_subrequests() {
    let prefer = |name: &str| {
        first(
            name,
            vec![
                sub_sel(
                    "subReq-0",
                    "class-a",
                    1,
                    vec![cel(&format!("device.attributes[\"{A}\"].boolAttribute"))],
                ),
                sub("subReq-1", "class-a", 1),
            ],
        )
    };
    results(
        Cc::new(
            CC_PRIO,
            vec![claim(
                "claim-0",
                json!([{"distinctAttribute": "driver-a/boolAttribute",
                    "requests": ["req-0", "req-1"]}]),
                vec![prefer("req-0"), prefer("req-1"), prefer("req-2")],
            )],
            class("class-a", A),
            slice1_with(vec![
                multi(attrs(
                    dev("device-1"),
                    json!({"boolAttribute": {"bool": true}}),
                )),
                multi(attrs(
                    dev("device-2"),
                    json!({"boolAttribute": {"bool": false}}),
                )),
            ]),
        ),
        vec![vec![
            shared("req-0/subReq-0", "device-1", &[]),
            shared("req-1/subReq-1", "device-2", &[]),
            shared("req-2/subReq-0", "device-1", &[]),
        ]],
    );
}

/// `distinct-constraint-one-multi-allocatable-device-with-distinct-constraint`.
#[test]
fn distinct_constraint_one_multi_allocatable_device_with_distinct_constraint() {
    nothing(Cc::new(
        CC,
        vec![claim(
            "claim-0",
            json!([{"distinctAttribute": "driver-a/stringAttribute"}]),
            vec![
                cap(req("req-0", "class-a", 1), "1"),
                cap(req("req-1", "class-a", 1), "1"),
            ],
        )],
        class_multi(true),
        slice1_with(vec![range(
            multi(attrs(
                dev("device-1"),
                json!({"stringAttribute": {"string": "stringAttributeValue"}}),
            )),
            C0,
            "2",
        )]),
    ));
}

/// `distinct-constraint-two-multi-allocatable-devices-with-distinct-constraint` (both slices
/// are named slice-1, as upstream's table has them).
#[test]
fn distinct_constraint_two_multi_allocatable_devices_with_distinct_constraint() {
    let d = |name: &str, v: &str| {
        range(
            multi(attrs(dev(name), json!({"stringAttribute": {"string": v}}))),
            C0,
            "4",
        )
    };
    let s = |d: Value| slice_n("slice-1", At::Node("node-1"), "pool-1", 2, A, vec![d]);
    results(
        Cc::new(
            CC,
            vec![claim(
                "claim-0",
                json!([{"distinctAttribute": "driver-a/stringAttribute"}]),
                vec![
                    cap(req("req-0", "class-a", 1), "2"),
                    cap(req("req-1", "class-a", 1), "2"),
                ],
            )],
            class_multi(true),
            vec![
                s(d("device-1", "stringAttributeValue1")),
                s(d("device-2", "stringAttributeValue2")),
            ],
        ),
        vec![vec![
            shared("req-0", "device-1", &[(C0, "2")]),
            shared("req-1", "device-2", &[(C0, "2")]),
        ]],
    );
}
