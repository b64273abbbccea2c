//! Upstream's `TestAllocator` cases (see `allocator_table.rs`): prioritized lists
//! (`firstAvailable`), with selectors, constraints, config, All mode and the limit on devices
//! per claim.

use ksim_api::resource::ALLOCATION_RESULTS_MAX_SIZE;
use serde_json::{json, Value};

use super::allocator_table::*;

fn classes_ab() -> Vec<Value> {
    vec![class("class-a", A), class("class-b", B)]
}

/// `prioritized-list-first-unavailable`
#[test]
fn prioritized_list_first_unavailable() {
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
        slices: vec![slice1("slice-1", "node-1", "pool-1", A)],
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

/// `prioritized-list-non-available`
#[test]
fn prioritized_list_non_available() {
    let c = Case {
        features: PRIO,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![first(
                "req-0",
                vec![sub("subReq-0", "class-b", 2), sub("subReq-1", "class-a", 2)],
            )],
        )],
        classes: classes_ab(),
        slices: vec![
            slice1("slice-1", "node-1", "pool-1", A),
            slice1("slice-2", "node-1", "pool-2", B),
        ],
        ..Default::default()
    };
    check(c, Want::Nothing);
}

/// `prioritized-list-device-config`: only the claim config for the chosen subrequest.
#[test]
fn prioritized_list_device_config() {
    let mut k = claim(
        "claim-0",
        json!([]),
        vec![first(
            "req-0",
            vec![sub("subReq-0", "class-a", 1), sub("subReq-1", "class-b", 2)],
        )],
    );
    k["spec"]["devices"]["config"] = json!([
        {"requests": ["req-0/subReq-0"], "opaque": opaque(A, "foo")},
        {"requests": ["req-0/subReq-1"], "opaque": opaque(B, "bar")}
    ]);
    let c = Case {
        features: PRIO,
        claims: vec![k],
        classes: classes_ab(),
        slices: vec![slice(
            "slice-1",
            "node-1",
            "pool-1",
            B,
            vec![
                dev_attrs("device-1", json!({})),
                dev_attrs("device-2", json!({})),
            ],
        )],
        ..Default::default()
    };
    let mut want = on_node1(vec![
        ("req-0/subReq-1", B, "pool-1", "device-1", false),
        ("req-0/subReq-1", B, "pool-1", "device-2", false),
    ]);
    want.config = vec![
        json!({"source": "FromClaim", "requests": ["req-0/subReq-1"],
        "opaque": opaque(B, "bar")}),
    ];
    check(c, Want::Results(vec![want]));
}

/// `prioritized-list-class-config`: only the config of the chosen subrequest's class.
#[test]
fn prioritized_list_class_config() {
    let c = Case {
        features: PRIO,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![first(
                "req-0",
                vec![sub("subReq-0", "class-a", 2), sub("subReq-1", "class-b", 2)],
            )],
        )],
        classes: vec![
            class_with_config("class-a", A, "foo"),
            class_with_config("class-b", B, "bar"),
        ],
        slices: vec![
            slice(
                "slice-1",
                "node-1",
                "pool-1",
                B,
                vec![dev("device-1"), dev("device-2")],
            ),
            slice("slice-2", "node-1", "pool-2", A, vec![dev("device-3")]),
        ],
        ..Default::default()
    };
    let mut want = on_node1(vec![
        ("req-0/subReq-1", B, "pool-1", "device-1", false),
        ("req-0/subReq-1", B, "pool-1", "device-2", false),
    ]);
    want.config = vec![
        json!({"source": "FromClass", "requests": ["req-0/subReq-1"],
        "opaque": opaque(B, "bar")}),
    ];
    check(c, Want::Results(vec![want]));
}

/// `prioritized-list-subrequests-with-expressions`
#[test]
fn prioritized_list_subrequests_with_expressions() {
    let c = Case {
        features: PRIO,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![
                req_sel("req-0", "class-a", 1, vec![mem_at_least("1Gi")]),
                first(
                    "req-1",
                    vec![
                        sub_sel("subReq-0", "class-a", 1, vec![mem_at_least("4Gi")]),
                        sub_sel("subReq-1", "class-a", 2, vec![mem_at_least("2Gi")]),
                    ],
                ),
            ],
        )],
        slices: vec![slice(
            "slice-1",
            "node-1",
            "pool-1",
            A,
            vec![
                dev_mem("device-1", "2Gi"),
                dev_mem("device-2", "2Gi"),
                dev_mem("device-3", "1Gi"),
            ],
        )],
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![
            ("req-0", A, "pool-1", "device-3", false),
            ("req-1/subReq-1", A, "pool-1", "device-1", false),
            ("req-1/subReq-1", A, "pool-1", "device-2", false),
        ])]),
    );
}

/// A device with `memory` capacity and a `driverVersion` attribute.
fn dev_mem_version(name: &str, q: &str, version: &str) -> Value {
    json!({"name": name, "capacity": {"memory": {"value": q}},
        "attributes": {"driverVersion": {"version": version}}})
}

/// The claim of the two `prioritized-list-subrequests-with-constraints-*` cases.
fn constrained_claim(constraint_requests: &[&str]) -> Value {
    claim(
        "claim-0",
        json!([match_attr("driverVersion", constraint_requests)]),
        vec![
            req_sel("req-0", "class-a", 1, vec![mem_at_least("8Gi")]),
            first(
                "req-1",
                vec![
                    sub_sel("subReq-0", "class-a", 1, vec![mem_at_least("2Gi")]),
                    sub_sel("subReq-1", "class-a", 1, vec![mem_at_least("1Gi")]),
                ],
            ),
        ],
    )
}

/// `prioritized-list-subrequests-with-constraints-ref-parent-request`
#[test]
fn prioritized_list_subrequests_with_constraints_ref_parent_request() {
    let c = Case {
        features: PRIO,
        claims: vec![constrained_claim(&["req-0", "req-1"])],
        slices: vec![
            slice(
                "slice-1",
                "node-1",
                "pool-1",
                A,
                vec![dev_mem_version("device-1", "8Gi", "1.0.0")],
            ),
            slice(
                "slice-2",
                "node-1",
                "pool-2",
                A,
                vec![
                    dev_mem_version("device-2", "2Gi", "2.0.0"),
                    dev_mem_version("device-3", "1Gi", "1.0.0"),
                ],
            ),
        ],
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![
            ("req-0", A, "pool-1", "device-1", false),
            ("req-1/subReq-1", A, "pool-2", "device-3", false),
        ])]),
    );
}

/// `prioritized-list-subrequests-with-constraints-ref-sub-request`
#[test]
fn prioritized_list_subrequests_with_constraints_ref_sub_request() {
    let c = Case {
        features: PRIO,
        claims: vec![constrained_claim(&["req-0", "req-1/subReq-0"])],
        slices: vec![
            slice(
                "slice-1",
                "node-1",
                "pool-1",
                A,
                vec![dev_mem_version("device-1", "8Gi", "1.0.0")],
            ),
            slice(
                "slice-2",
                "node-1",
                "pool-2",
                A,
                vec![dev_mem_version("device-2", "2Gi", "2.0.0")],
            ),
        ],
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![
            ("req-0", A, "pool-1", "device-1", false),
            ("req-1/subReq-1", A, "pool-2", "device-2", false),
        ])]),
    );
}

fn two_devices() -> Vec<Value> {
    vec![slice(
        "slice-1",
        "node-1",
        "pool-1",
        A,
        vec![dev("device-1"), dev("device-2")],
    )]
}

/// `prioritized-list-subrequests-with-allocation-mode-all`
#[test]
fn prioritized_list_subrequests_with_allocation_mode_all() {
    let c = Case {
        features: PRIO,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![first(
                "req-0",
                vec![
                    sub_all(sub("subReq-0", "class-a", 1)),
                    sub("subReq-1", "class-a", 1),
                ],
            )],
        )],
        slices: two_devices(),
        allocated: vec![(A, "pool-1", "device-1")],
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

/// `prioritized-list-allocation-mode-all-multiple-requests`
#[test]
fn prioritized_list_allocation_mode_all_multiple_requests() {
    let c = Case {
        features: PRIO,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![
                req("req-0", "class-a", 1),
                first(
                    "req-1",
                    vec![
                        sub_all(sub("subReq-0", "class-a", 0)),
                        sub("subReq-1", "class-a", 1),
                    ],
                ),
            ],
        )],
        slices: two_devices(),
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![
            ("req-0", A, "pool-1", "device-1", false),
            ("req-1/subReq-1", A, "pool-1", "device-2", false),
        ])]),
    );
}

/// `prioritized-list-disabled`
#[test]
fn prioritized_list_disabled() {
    let c = Case {
        features: NONE,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![first("req-0", vec![sub("subReq-0", "class-a", 1)])],
        )],
        slices: vec![slice1("slice-1", "node-1", "pool-1", A)],
        ..Default::default()
    };
    check(
        c,
        Want::Error(
            "claim claim-0, request req-0: has subrequests, but the DRAPrioritizedList feature is disabled",
        ),
    );
}

/// The slices of `prioritized-list-multi-request` and `prioritized-list-with-backtracking`.
fn eight_and_four() -> Vec<Value> {
    vec![
        slice(
            "slice-1",
            "node-1",
            "pool-1",
            A,
            vec![dev_mem("device-1", "8Gi")],
        ),
        slice(
            "slice-2",
            "node-1",
            "pool-2",
            A,
            vec![dev_mem("device-2", "4Gi")],
        ),
    ]
}

fn eight_else_four(name: &str) -> Value {
    first(
        name,
        vec![
            sub_sel("subReq-0", "class-a", 1, vec![mem_at_least("8Gi")]),
            sub_sel("subReq-1", "class-a", 1, vec![mem_at_least("4Gi")]),
        ],
    )
}

/// `prioritized-list-multi-request`
#[test]
fn prioritized_list_multi_request() {
    let c = Case {
        features: PRIO,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![
                req_sel("req-1", "class-a", 1, vec![mem_at_least("8Gi")]),
                eight_else_four("req-0"),
            ],
        )],
        slices: eight_and_four(),
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![
            ("req-1", A, "pool-1", "device-1", false),
            ("req-0/subReq-1", A, "pool-2", "device-2", false),
        ])]),
    );
}

/// `prioritized-list-with-backtracking`
#[test]
fn prioritized_list_with_backtracking() {
    let c = Case {
        features: PRIO,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![
                eight_else_four("req-0"),
                req_sel("req-1", "class-a", 1, vec![mem_at_least("8Gi")]),
            ],
        )],
        slices: eight_and_four(),
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![
            ("req-0/subReq-1", A, "pool-2", "device-2", false),
            ("req-1", A, "pool-1", "device-1", false),
        ])]),
    );
}

/// `prioritized-list-too-many-in-first-subrequest`
#[test]
fn prioritized_list_too_many_in_first_subrequest() {
    let c = Case {
        features: PRIO,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![first(
                "req-0",
                vec![
                    sub("subReq-0", "class-b", 500),
                    sub("subReq-1", "class-a", 1),
                ],
            )],
        )],
        classes: classes_ab(),
        slices: vec![slice1("slice-1", "node-1", "pool-1", A)],
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

/// `prioritized-list-allocation-mode-all`
#[test]
fn prioritized_list_allocation_mode_all() {
    let c = Case {
        features: PRIO,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![first(
                "req-0",
                vec![
                    sub_all(sub("subReq-0", "class-a", 0)),
                    sub("subReq-1", "class-a", 1),
                ],
            )],
        )],
        slices: two_devices(),
        allocated: vec![(A, "pool-1", "device-2")],
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

fn generation(g: &str) -> Value {
    cel(&format!("device.attributes[\"{A}\"].generation == \"{g}\""))
}

/// A claim preferring all v6 devices, else all v5 devices.
fn all_v6_else_all_v5() -> Value {
    claim(
        "claim-0",
        json!([]),
        vec![first(
            "req-0",
            vec![
                sub_all(sub_sel("subReq-0", "class-a", 0, vec![generation("v6")])),
                sub_all(sub_sel("subReq-1", "class-a", 0, vec![generation("v5")])),
            ],
        )],
    )
}

fn gen_dev(name: &str, g: &str) -> Value {
    dev_attrs(name, json!({"generation": {"string": g}}))
}

/// `prioritized-list-allocation-mode-all-with-selectors`: with All, at least one device must
/// be allocated, else the next subrequest is tried.
#[test]
fn prioritized_list_allocation_mode_all_with_selectors() {
    let c = Case {
        features: PRIO,
        claims: vec![all_v6_else_all_v5()],
        slices: vec![slice(
            "slice-1",
            "node-1",
            "pool-1",
            A,
            vec![gen_dev("device-1", "v5")],
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

/// `prioritized-list-allocation-mode-all-with-selectors-multiple-pools`
#[test]
fn prioritized_list_allocation_mode_all_with_selectors_multiple_pools() {
    let c = Case {
        features: PRIO,
        claims: vec![all_v6_else_all_v5()],
        slices: vec![
            slice(
                "slice-1",
                "node-1",
                "pool-1",
                A,
                vec![gen_dev("device-1", "v5")],
            ),
            slice(
                "slice-2",
                "node-1",
                "pool-2",
                A,
                vec![gen_dev("device-1", "v5")],
            ),
        ],
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![
            ("req-0/subReq-1", A, "pool-1", "device-1", false),
            ("req-0/subReq-1", A, "pool-2", "device-1", false),
        ])]),
    );
}

/// `prioritized-list-allocation-mode-all-with-selectors-multiple-pools-across-nodes`
#[test]
fn prioritized_list_allocation_mode_all_with_selectors_multiple_pools_across_nodes() {
    let c = Case {
        features: PRIO,
        claims: vec![all_v6_else_all_v5()],
        slices: vec![
            slice(
                "slice-1",
                "node-1",
                "pool-1",
                A,
                vec![gen_dev("device-1", "v5")],
            ),
            slice(
                "slice-2",
                "node-2",
                "pool-2",
                A,
                vec![gen_dev("device-1", "v5"), gen_dev("device-2", "v6")],
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

/// `prioritized-list-allocation-mode-all-with-selectors-deviceclass-subset`: only the devices
/// the class selects count.
#[test]
fn prioritized_list_allocation_mode_all_with_selectors_deviceclass_subset() {
    let d = |name: &str, g: &str, selected: bool| {
        dev_attrs(
            name,
            json!({"generation": {"string": g}, "selected": {"bool": selected}}),
        )
    };
    let c = Case {
        features: PRIO,
        claims: vec![all_v6_else_all_v5()],
        classes: vec![class_expr(
            "class-a",
            &format!("device.driver == \"{A}\" && device.attributes[\"{A}\"].selected"),
        )],
        slices: vec![slice(
            "slice-1",
            "node-1",
            "pool-1",
            A,
            vec![
                d("device-1", "v6", false),
                d("device-2", "v5", false),
                d("device-3", "v5", true),
            ],
        )],
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![(
            "req-0/subReq-1",
            A,
            "pool-1",
            "device-3",
            false,
        )])]),
    );
}

/// `prioritized-list-max-allocation-limit-request`
#[test]
fn prioritized_list_max_allocation_limit_request() {
    let max = ALLOCATION_RESULTS_MAX_SIZE;
    let both = |name: &str| {
        first(
            name,
            vec![
                sub("subReq-0", "class-a", max as i64),
                sub("subReq-1", "class-a", (max / 2) as i64),
            ],
        )
    };
    let c = Case {
        features: PRIO,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![both("req-0"), both("req-1")],
        )],
        slices: vec![slice("slice-1", "node-1", "pool-1", A, devices(max * 2))],
        ..Default::default()
    };
    let names: Vec<String> = (0..max).map(|i| format!("device-{i}")).collect();
    let want: Vec<_> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let r = if i < max / 2 {
                "req-0/subReq-1"
            } else {
                "req-1/subReq-1"
            };
            (r, A, "pool-1", n.as_str(), false)
        })
        .collect();
    check(c, Want::Results(vec![on_node1(want)]));
}

/// `prioritized-list-max-allocation-allocation-mode-all`
#[test]
fn prioritized_list_max_allocation_allocation_mode_all() {
    let max = ALLOCATION_RESULTS_MAX_SIZE;
    let c = Case {
        features: PRIO,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![
                first(
                    "req-0",
                    vec![
                        sub_all(sub("subReq-0", "class-a", 0)),
                        sub("subReq-1", "class-a", 2),
                    ],
                ),
                req("req-1", "class-b", 2),
            ],
        )],
        classes: classes_ab(),
        slices: vec![
            slice("slice-1", "node-1", "pool-1", A, devices(max - 1)),
            slice("slice-2", "node-1", "pool-2", B, devices(2)),
        ],
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![
            ("req-0/subReq-1", A, "pool-1", "device-0", false),
            ("req-0/subReq-1", A, "pool-1", "device-1", false),
            ("req-1", B, "pool-2", "device-0", false),
            ("req-1", B, "pool-2", "device-1", false),
        ])]),
    );
}
