//! Upstream's `TestAllocator` cases (see `allocator_table.rs`): one device, All mode, admin
//! access, node-local and network-attached devices.

use serde_json::{json, Value};

use super::allocator_table::*;

/// `empty`
#[test]
fn empty() {
    check(Case::default(), Want::Results(vec![]));
}

/// `simple`
#[test]
fn simple() {
    let c = Case {
        claims: vec![claim1("claim-0", "req-0", "class-a")],
        slices: vec![slice1("slice-1", "node-1", "pool-1", A)],
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![(
            "req-0", A, "pool-1", "device-1", false,
        )])]),
    );
}

/// `other-node`
#[test]
fn other_node() {
    let c = Case {
        claims: vec![claim1("claim-0", "req-0", "class-a")],
        slices: vec![
            slice1("slice-1", "node-1", "pool-1", B),
            slice1("slice-2", "node-2", "pool-2", A),
        ],
        node: node("node-2", "region-2"),
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![with_selector(
            Some(local_sel("node-2")),
            vec![("req-0", A, "pool-2", "device-1", false)],
        )]),
    );
}

fn small_and_large_devices(reversed: bool) -> Vec<Value> {
    let mut d = vec![dev_mem("device-1", "1Gi"), dev_mem("device-2", "2Gi")];
    if reversed {
        d.reverse();
    }
    vec![slice("slice-1", "node-1", "pool-1", A, d)]
}

/// `small-and-large`
#[test]
fn small_and_large() {
    let c = Case {
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![
                req_sel("req-0", "class-a", 1, vec![mem_at_least("1Gi")]),
                req_sel("req-1", "class-a", 1, vec![mem_at_least("2Gi")]),
            ],
        )],
        slices: small_and_large_devices(false),
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![
            ("req-0", A, "pool-1", "device-1", false),
            ("req-1", A, "pool-1", "device-2", false),
        ])]),
    );
}

/// `small-and-large-backtrack-requests`
#[test]
fn small_and_large_backtrack_requests() {
    let c = Case {
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![
                req_sel("req-0", "class-a", 1, vec![mem_at_least("1Gi")]),
                req_sel("req-1", "class-a", 1, vec![mem_at_least("2Gi")]),
            ],
        )],
        slices: small_and_large_devices(true),
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![
            ("req-0", A, "pool-1", "device-1", false),
            ("req-1", A, "pool-1", "device-2", false),
        ])]),
    );
}

/// `small-and-large-backtrack-claims`
#[test]
fn small_and_large_backtrack_claims() {
    let c = Case {
        claims: vec![
            claim(
                "claim-0",
                json!([]),
                vec![req_sel("req-0", "class-a", 1, vec![mem_at_least("1Gi")])],
            ),
            claim(
                "claim-1",
                json!([]),
                vec![req_sel("req-1", "class-a", 1, vec![mem_at_least("2Gi")])],
            ),
        ],
        slices: small_and_large_devices(true),
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![
            on_node1(vec![("req-0", A, "pool-1", "device-1", false)]),
            on_node1(vec![("req-1", A, "pool-1", "device-2", false)]),
        ]),
    );
}

/// `devices-split-across-different-slices`
#[test]
fn devices_split_across_different_slices() {
    let c = Case {
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![req("req-0", "class-a", 2)],
        )],
        slices: vec![
            slice1("slice-1", "node-1", "pool-1", A),
            slice1("slice-2", "node-1", "pool-2", A),
        ],
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![
            ("req-0", A, "pool-1", "device-1", false),
            ("req-0", A, "pool-2", "device-1", false),
        ])]),
    );
}

/// `obsolete-slice`
#[test]
fn obsolete_slice() {
    let c = Case {
        claims: vec![claim1("claim-0", "req-0", "class-a")],
        slices: vec![
            slice_n(
                "slice-1-obsolete",
                At::Node("node-1"),
                "pool-1",
                2,
                A,
                vec![dev("device-1")],
            ),
            slice_gen(
                "slice-1-obsolete",
                At::Node("node-1"),
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

/// `duplicate-slice`
#[test]
fn duplicate_slice() {
    let s = |name: &str| {
        slice_n(
            name,
            At::Node("node-1"),
            "pool-1",
            2,
            A,
            vec![dev("device-1")],
        )
    };
    let c = Case {
        claims: vec![claim1("claim-0", "req-0", "class-a")],
        slices: vec![s("slice-1"), s("slice-1-2")],
        ..Default::default()
    };
    check(c, Want::Error("invalid resource pools were encountered"));
}

/// `no-slices`
#[test]
fn no_slices() {
    let c = Case {
        claims: vec![claim1("claim-0", "req-0", "class-a")],
        ..Default::default()
    };
    check(c, Want::Nothing);
}

/// `not-enough-suitable-devices`
#[test]
fn not_enough_suitable_devices() {
    let c = Case {
        claims: vec![
            claim1("claim-0", "req-0", "class-a"),
            claim1("claim-0", "req-1", "class-a"),
        ],
        slices: vec![slice1("slice-1", "node-1", "pool-1", A)],
        ..Default::default()
    };
    check(c, Want::Nothing);
}

/// `no-classes`
#[test]
fn no_classes() {
    let c = Case {
        claims: vec![claim1("claim-0", "req-0", "class-a")],
        classes: vec![],
        slices: vec![slice1("slice-1", "node-1", "pool-1", A)],
        ..Default::default()
    };
    check(c, Want::Error("could not retrieve device class class-a"));
}

/// `unknown-class`
#[test]
fn unknown_class() {
    let c = Case {
        claims: vec![claim1("claim-0", "req-0", "unknown-class")],
        slices: vec![slice1("slice-1", "node-1", "pool-1", A)],
        ..Default::default()
    };
    check(
        c,
        Want::Error("could not retrieve device class unknown-class"),
    );
}

/// `empty-class`
#[test]
fn empty_class() {
    let c = Case {
        claims: vec![claim1("claim-0", "req-0", "")],
        slices: vec![slice1("slice-1", "node-1", "pool-1", A)],
        ..Default::default()
    };
    check(
        c,
        Want::Error(
            "claim claim-0, request req-0: missing device class name (unsupported request type?)",
        ),
    );
}

/// `no-claims-to-allocate`
#[test]
fn no_claims_to_allocate() {
    let c = Case {
        slices: vec![slice1("slice-1", "node-1", "pool-1", A)],
        ..Default::default()
    };
    check(c, Want::Results(vec![]));
}

fn classes_ab() -> Vec<Value> {
    vec![class("class-a", A), class("class-b", B)]
}

/// `all-devices-single`
#[test]
fn all_devices_single() {
    let c = Case {
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![all_req("req-0", "class-a")],
        )],
        slices: vec![slice1("slice-1", "node-1", "pool-1", A)],
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![(
            "req-0", A, "pool-1", "device-1", false,
        )])]),
    );
}

/// `all-devices-many`
#[test]
fn all_devices_many() {
    let c = Case {
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![all_req("req-0", "class-a")],
        )],
        slices: vec![
            slice1("slice-1", "node-1", "pool-1", A),
            slice1("slice-1", "node-1", "pool-2", A),
        ],
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![
            ("req-0", A, "pool-1", "device-1", false),
            ("req-0", A, "pool-2", "device-1", false),
        ])]),
    );
}

/// `all-devices-of-the-incomplete-pool`
#[test]
fn all_devices_of_the_incomplete_pool() {
    let mut r = all_req("req-0", "class-a");
    r["exactly"]["count"] = json!(1);
    let c = Case {
        claims: vec![claim("claim-0", json!([]), vec![r])],
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
    check(
        c,
        Want::Error(
            "claim claim-0, request req-0: asks for all devices, but resource pool driver-a/pool-1 is currently being updated",
        ),
    );
}

fn all_plus_another(reversed: bool, many: bool) -> (Case, Vec<Alloc>) {
    let mut claims = vec![
        claim("claim-0", json!([]), vec![all_req("req-0", "class-a")]),
        claim("claim-1", json!([]), vec![req("req-0", "class-b", 1)]),
    ];
    let a_devices: Vec<&str> = if many {
        vec!["device-1", "device-2"]
    } else {
        vec!["device-1"]
    };
    let mut want = vec![
        on_node1(
            a_devices
                .iter()
                .map(|d| ("req-0", A, "pool-1", *d, false))
                .collect(),
        ),
        on_node1(vec![("req-0", B, "pool-1", "device-1", false)]),
    ];
    if reversed {
        claims.reverse();
        want.reverse();
    }
    let c = Case {
        claims,
        classes: classes_ab(),
        slices: vec![
            slice(
                "slice-1",
                "node-1",
                "pool-1",
                A,
                a_devices.iter().map(|d| dev(d)).collect(),
            ),
            slice1("slice-1", "node-1", "pool-1", B),
        ],
        ..Default::default()
    };
    (c, want)
}

/// `all-devices-plus-another`
#[test]
fn all_devices_plus_another() {
    let (c, want) = all_plus_another(false, false);
    check(c, Want::Results(want));
}

/// `all-devices-plus-another-reversed`
#[test]
fn all_devices_plus_another_reversed() {
    let (c, want) = all_plus_another(true, false);
    check(c, Want::Results(want));
}

/// `all-devices-many-plus-another`
#[test]
fn all_devices_many_plus_another() {
    let (c, want) = all_plus_another(false, true);
    check(c, Want::Results(want));
}

/// `all-devices-many-plus-another-reversed`
#[test]
fn all_devices_many_plus_another_reversed() {
    let (c, want) = all_plus_another(true, true);
    check(c, Want::Results(want));
}

/// `all-devices-no-solution` and `all-devices-no-solution-reversed`: one device, two claims
/// both trying to allocate it.
#[test]
fn all_devices_no_solution_and_reversed() {
    let mut claims = vec![
        claim("claim-1", json!([]), vec![req("req-0", "class-a", 1)]),
        claim("claim-0", json!([]), vec![all_req("req-0", "class-a")]),
    ];
    for _ in 0..2 {
        let c = Case {
            claims: claims.clone(),
            slices: vec![slice1("slice-1", "node-1", "pool-1", A)],
            ..Default::default()
        };
        check(c, Want::Nothing);
        claims.reverse();
    }
}

/// `all-devices-slice-without-devices`
#[test]
fn all_devices_slice_without_devices() {
    let c = Case {
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![all_req("req-0", "class-a")],
        )],
        slices: vec![slice("slice-1", "node-1", "pool-1", A, vec![])],
        ..Default::default()
    };
    check(c, Want::Nothing);
}

/// `all-devices-no-slices`
#[test]
fn all_devices_no_slices() {
    let c = Case {
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![all_req("req-0", "class-a")],
        )],
        ..Default::default()
    };
    check(c, Want::Nothing);
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

/// `all-devices-some-allocated`
#[test]
fn all_devices_some_allocated() {
    let c = Case {
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![all_req("req-0", "class-a")],
        )],
        allocated: vec![(A, "pool-1", "device-1")],
        slices: two_devices(),
        ..Default::default()
    };
    check(c, Want::Nothing);
}

/// `all-devices-some-allocated-admin-access`
#[test]
fn all_devices_some_allocated_admin_access() {
    let c = Case {
        features: ADMIN,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![admin(all_req("req-0", "class-a"))],
        )],
        allocated: vec![(A, "pool-1", "device-1")],
        slices: two_devices(),
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![
            ("req-0", A, "pool-1", "device-1", true),
            ("req-0", A, "pool-1", "device-2", true),
        ])]),
    );
}

/// `all-devices-some-allocating-admin-access`: the second request (All) cannot be fulfilled
/// because the first request of the same claim takes a device.
#[test]
fn all_devices_some_allocating_admin_access() {
    let c = Case {
        features: ADMIN,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![
                admin(req("req-0", "class-a", 1)),
                admin(all_req("req-1", "class-a")),
            ],
        )],
        slices: two_devices(),
        ..Default::default()
    };
    check(c, Want::Nothing);
}

/// `count-devices-some-allocated-admin-access`
#[test]
fn count_devices_some_allocated_admin_access() {
    let c = Case {
        features: ADMIN,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![admin(req("req-0", "class-a", 2))],
        )],
        allocated: vec![(A, "pool-1", "device-1")],
        slices: two_devices(),
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![
            ("req-0", A, "pool-1", "device-1", true),
            ("req-0", A, "pool-1", "device-2", true),
        ])]),
    );
}

/// `separate-claims-share-device-admin-access`
#[test]
fn separate_claims_share_device_admin_access() {
    let c = Case {
        features: ADMIN,
        claims: vec![
            claim(
                "claim-0",
                json!([]),
                vec![admin(req("req-0", "class-a", 1))],
            ),
            claim(
                "claim-1",
                json!([]),
                vec![admin(req("req-0", "class-a", 1))],
            ),
        ],
        slices: two_devices(),
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![
            on_node1(vec![("req-0", A, "pool-1", "device-1", true)]),
            on_node1(vec![("req-0", A, "pool-1", "device-1", true)]),
        ]),
    );
}

/// `admin-access-claims-device-allocating-for-non-admin-access`
#[test]
fn admin_access_claims_device_allocating_for_non_admin_access() {
    let c = Case {
        features: ADMIN,
        claims: vec![
            claim1("claim-0", "req-0", "class-a"),
            claim(
                "claim-1",
                json!([]),
                vec![admin(req("req-0", "class-a", 1))],
            ),
        ],
        slices: two_devices(),
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![
            on_node1(vec![("req-0", A, "pool-1", "device-1", false)]),
            on_node1(vec![("req-0", A, "pool-1", "device-1", true)]),
        ]),
    );
}

/// A claim whose `req-0` prefers all devices of class-a, else one of class-b.
fn all_a_else_one_b() -> Value {
    claim(
        "claim-0",
        json!([]),
        vec![first(
            "req-0",
            vec![
                sub_all(sub("subReq-0", "class-a", 1)),
                sub("subReq-1", "class-b", 1),
            ],
        )],
    )
}

/// `all-devices-slice-without-devices-prioritized-list`
#[test]
fn all_devices_slice_without_devices_prioritized_list() {
    let c = Case {
        features: PRIO,
        claims: vec![all_a_else_one_b()],
        classes: classes_ab(),
        slices: vec![
            slice("slice-1", "node-1", "pool-1", A, vec![]),
            slice1("slice-2", "node-1", "pool-2", B),
        ],
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![(
            "req-0/subReq-1",
            B,
            "pool-2",
            "device-1",
            false,
        )])]),
    );
}

/// `all-devices-no-slices-prioritized-list`
#[test]
fn all_devices_no_slices_prioritized_list() {
    let c = Case {
        features: PRIO,
        claims: vec![all_a_else_one_b()],
        classes: classes_ab(),
        slices: vec![slice1("slice-2", "node-1", "pool-2", B)],
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![(
            "req-0/subReq-1",
            B,
            "pool-2",
            "device-1",
            false,
        )])]),
    );
}

/// `all-devices-some-allocated-prioritized-list`
#[test]
fn all_devices_some_allocated_prioritized_list() {
    let mut slices = two_devices();
    slices.push(slice1("slice-2", "node-1", "pool-2", B));
    let c = Case {
        features: PRIO,
        claims: vec![all_a_else_one_b()],
        allocated: vec![(A, "pool-1", "device-1")],
        classes: classes_ab(),
        slices,
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![(
            "req-0/subReq-1",
            B,
            "pool-2",
            "device-1",
            false,
        )])]),
    );
}

/// `network-attached-device`
#[test]
fn network_attached_device() {
    let c = Case {
        claims: vec![claim1("claim-0", "req-0", "class-a")],
        slices: vec![slice_n(
            "slice-1",
            At::Selector(label_sel("region", &["region-1"])),
            "pool-1",
            1,
            A,
            vec![dev("device-1")],
        )],
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

/// `unsuccessful-allocation-network-attached-device`: wrong region, no devices available.
#[test]
fn unsuccessful_allocation_network_attached_device() {
    let c = Case {
        claims: vec![claim1("claim-0", "req-0", "class-a")],
        slices: vec![slice_n(
            "slice-1",
            At::Selector(label_sel("region", &["region-1"])),
            "pool-1",
            1,
            A,
            vec![dev("device-1")],
        )],
        node: node("node-2", "region-2"),
        ..Default::default()
    };
    check(c, Want::Nothing);
}

/// `many-network-attached-devices`: the selector is the union of the slices' selectors.
#[test]
fn many_network_attached_devices() {
    let one = |at: At, pool: &str| slice_n("slice-1", at, pool, 1, A, vec![dev("device-1")]);
    let c = Case {
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![req("req-0", "class-a", 4)],
        )],
        slices: vec![
            one(At::Selector(label_sel("region", &["region-1"])), "pool-1"),
            one(At::All, "pool-2"),
            one(At::Selector(label_sel("planet", &["earth"])), "pool-3"),
            one(At::Selector(local_sel("node-1")), "pool-4"),
        ],
        ..Default::default()
    };
    let union = json!({"nodeSelectorTerms": [{
        "matchExpressions": [
            {"key": "region", "operator": "In", "values": ["region-1"]},
            {"key": "planet", "operator": "In", "values": ["earth"]}],
        "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]});
    check(
        c,
        Want::Results(vec![with_selector(
            Some(union),
            vec![
                ("req-0", A, "pool-1", "device-1", false),
                ("req-0", A, "pool-2", "device-1", false),
                ("req-0", A, "pool-3", "device-1", false),
                ("req-0", A, "pool-4", "device-1", false),
            ],
        )]),
    );
}

/// `local-and-network-attached-devices`: once there is a node-local device, the selector is
/// for that node.
#[test]
fn local_and_network_attached_devices() {
    let c = Case {
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![req("req-0", "class-a", 2)],
        )],
        slices: vec![
            slice_n(
                "slice-1",
                At::Selector(label_sel("region", &["region-1"])),
                "pool-1",
                1,
                A,
                vec![dev("device-1")],
            ),
            slice1("slice-1", "node-1", "pool-2", A),
        ],
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![
            ("req-0", A, "pool-1", "device-1", false),
            ("req-0", A, "pool-2", "device-1", false),
        ])]),
    );
}

/// `several-different-drivers`
#[test]
fn several_different_drivers() {
    let c = Case {
        claims: vec![
            claim1("claim-0", "req-0", "class-a"),
            claim1("claim-0", "req-0", "class-b"),
        ],
        classes: classes_ab(),
        slices: vec![
            slice(
                "slice-1",
                "node-1",
                "pool-1",
                A,
                vec![dev("device-1"), dev("device-2")],
            ),
            slice1("slice-1", "node-1", "pool-1", B),
        ],
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![
            on_node1(vec![("req-0", A, "pool-1", "device-1", false)]),
            on_node1(vec![("req-0", B, "pool-1", "device-1", false)]),
        ]),
    );
}

/// `already-allocated-devices`
#[test]
fn already_allocated_devices() {
    let c = Case {
        claims: vec![claim1("claim-0", "req-0", "class-a")],
        allocated: vec![(A, "pool-1", "device-1"), (A, "pool-1", "device-2")],
        slices: vec![slice1("slice-1", "node-1", "pool-1", A)],
        ..Default::default()
    };
    check(c, Want::Nothing);
}

/// `admin-access-disabled`
#[test]
fn admin_access_disabled() {
    let c = Case {
        features: NONE,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![admin(req("req-0", "class-a", 1))],
        )],
        slices: vec![slice1("slice-1", "node-1", "pool-1", A)],
        ..Default::default()
    };
    check(
        c,
        Want::Error(
            "claim claim-0, request req-0: admin access is requested, but the feature is disabled",
        ),
    );
}

/// `admin-access-enabled`
#[test]
fn admin_access_enabled() {
    let c = Case {
        features: ADMIN,
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![admin(req("req-0", "class-a", 1))],
        )],
        allocated: vec![(A, "pool-1", "device-1"), (A, "pool-1", "device-2")],
        slices: vec![slice1("slice-1", "node-1", "pool-1", A)],
        ..Default::default()
    };
    check(
        c,
        Want::Results(vec![on_node1(vec![(
            "req-0", A, "pool-1", "device-1", true,
        )])]),
    );
}
