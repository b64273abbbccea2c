//! Upstream's `TestAllocator` cases (see `allocator_table.rs`): `matchAttribute`
//! constraints, class and claim config, invalid requests and selectors, CEL errors and the
//! limit on devices per claim.

use ksim_api::resource::ALLOCATION_RESULTS_MAX_SIZE;
use serde_json::{json, Value};

use super::allocator_table::*;

fn classes_ab() -> Vec<Value> {
    vec![class("class-a", A), class("class-b", B)]
}

/// The four attributes of upstream's `with-constraint` devices.
fn all_attrs() -> Value {
    json!({"driverVersion": {"version": "1.0.0"}, "numa": {"int": 1},
        "stringAttribute": {"string": "stringAttributeValue"}, "boolAttribute": {"bool": true}})
}

/// A claim of one request for two class-a devices with one constraint, over two devices with
/// the given attributes.
fn two_devices_must_match(constraint: Value, first: Value, second: Value) -> Case {
    Case {
        claims: vec![claim(
            "claim-0",
            json!([constraint]),
            vec![req("req-0", "class-a", 2)],
        )],
        classes: classes_ab(),
        slices: vec![slice(
            "slice-1",
            "node-1",
            "pool-1",
            A,
            vec![dev_attrs("device-1", first), dev_attrs("device-2", second)],
        )],
        ..Default::default()
    }
}

/// `with-constraint`
#[test]
fn with_constraint() {
    let c = Case {
        claims: vec![claim(
            "claim-0",
            json!([
                match_attr("numa", &[]),
                match_attr("driverVersion", &[]),
                match_attr("stringAttribute", &[]),
                match_attr("boolAttribute", &[])
            ]),
            vec![req("req-0", "class-a", 1), req("req-1", "class-a", 1)],
        )],
        slices: vec![slice(
            "slice-1",
            "node-1",
            "pool-1",
            A,
            vec![
                dev_attrs("device-1", all_attrs()),
                dev_attrs("device-2", all_attrs()),
            ],
        )],
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

/// `with-constraint-non-existent-attribute`
#[test]
fn with_constraint_non_existent_attribute() {
    let c = Case {
        claims: vec![claim(
            "claim-0",
            json!([match_attr("NonExistentAttribute", &[])]),
            vec![req("req-0", "class-a", 1)],
        )],
        slices: vec![slice1("slice-1", "node-1", "pool-1", A)],
        ..Default::default()
    };
    check(c, Want::Nothing);
}

/// `with-constraint-not-matching-int-attribute`
#[test]
fn with_constraint_not_matching_int_attribute() {
    let c = two_devices_must_match(
        match_attr("numa", &[]),
        json!({"numa": {"int": 1}}),
        json!({"numa": {"int": 2}}),
    );
    check(c, Want::Nothing);
}

/// `with-constraint-not-matching-int-attribute-all-devices`
#[test]
fn with_constraint_not_matching_int_attribute_all_devices() {
    let mut c = two_devices_must_match(
        match_attr("numa", &[]),
        json!({"numa": {"int": 1}}),
        json!({"numa": {"int": 2}}),
    );
    c.claims = vec![claim(
        "claim-0",
        json!([match_attr("numa", &[])]),
        vec![all_req("req-0", "class-a")],
    )];
    check(
        c,
        Want::Error(
            "claim claim-0, request req-0: cannot add device driver-a/pool-1/device-2 because a claim constraint would not be satisfied",
        ),
    );
}

/// `with-constraint-not-matching-string-attribute`
#[test]
fn with_constraint_not_matching_string_attribute() {
    let c = two_devices_must_match(
        match_attr("stringAttribute", &[]),
        json!({"stringAttribute": {"string": "stringAttributeValue"}}),
        json!({"stringAttribute": {"string": "stringAttributeValue2"}}),
    );
    check(c, Want::Nothing);
}

/// `with-constraint-not-matching-bool-attribute`
#[test]
fn with_constraint_not_matching_bool_attribute() {
    let c = two_devices_must_match(
        match_attr("boolAttribute", &[]),
        json!({"boolAttribute": {"bool": true}}),
        json!({"boolAttribute": {"bool": false}}),
    );
    check(c, Want::Nothing);
}

/// `with-constraint-not-matching-version-attribute`
#[test]
fn with_constraint_not_matching_version_attribute() {
    let c = two_devices_must_match(
        match_attr("driverVersion", &[]),
        json!({"driverVersion": {"version": "1.0.0"}}),
        json!({"driverVersion": {"version": "2.0.0"}}),
    );
    check(c, Want::Nothing);
}

/// `with-constraint-for-request`
#[test]
fn with_constraint_for_request() {
    let mut c = two_devices_must_match(
        match_attr("driverVersion", &["req-0"]),
        json!({"driverVersion": {"version": "1.0.0"}}),
        json!({"driverVersion": {"version": "2.0.0"}}),
    );
    c.claims = vec![claim(
        "claim-0",
        json!([match_attr("driverVersion", &["req-0"])]),
        vec![req("req-0", "class-a", 1), req("req-1", "class-a", 1)],
    )];
    check(
        c,
        Want::Results(vec![on_node1(vec![
            ("req-0", A, "pool-1", "device-1", false),
            ("req-1", A, "pool-1", "device-2", false),
        ])]),
    );
}

/// `with-constraint-for-request-retry`: device-1 does not satisfy the second constraint, so
/// the allocator must backtrack.
#[test]
fn with_constraint_for_request_retry() {
    let d = |name: &str, version: &str, s: &str| {
        dev_attrs(
            name,
            json!({"driverVersion": {"version": version}, "stringAttribute": {"string": s}}),
        )
    };
    let c = Case {
        claims: vec![claim(
            "claim-0",
            json!([
                match_attr("driverVersion", &["req-0"]),
                match_attr("stringAttribute", &[])
            ]),
            vec![req("req-0", "class-a", 1), req("req-1", "class-a", 1)],
        )],
        classes: classes_ab(),
        slices: vec![slice(
            "slice-1",
            "node-1",
            "pool-1",
            A,
            vec![
                d("device-1", "1.0.0", "a"),
                d("device-2", "2.0.0", "b"),
                d("device-3", "3.0.0", "b"),
            ],
        )],
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

/// An allocation config entry as the allocator writes it.
fn config(source: &str, requests: &[&str], driver: &str, attribute: &str) -> Value {
    json!({"source": source, "requests": requests, "opaque": opaque(driver, attribute)})
}

/// `with-class-device-config`
#[test]
fn with_class_device_config() {
    let c = Case {
        claims: vec![claim1("claim-0", "req-0", "class-a")],
        classes: vec![class_with_config("class-a", A, "classAttribute")],
        slices: vec![slice1("slice-1", "node-1", "pool-1", A)],
        ..Default::default()
    };
    let mut want = on_node1(vec![("req-0", A, "pool-1", "device-1", false)]);
    want.config = vec![config("FromClass", &["req-0"], A, "classAttribute")];
    check(c, Want::Results(vec![want]));
}

/// `with-class-device-config-with-multiple-request-and-configs`: a class's config is listed
/// once, for every request of that class.
#[test]
fn with_class_device_config_with_multiple_request_and_configs() {
    let c = Case {
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![
                req("req-0", "class-a", 1),
                req("req-1", "class-a", 1),
                req("req-2", "class-b", 1),
            ],
        )],
        classes: vec![
            class_with_config("class-a", A, "classAttribute-A"),
            class_with_config("class-b", B, "classAttribute-B"),
        ],
        slices: vec![
            slice("slice-1", "node-1", "pool-1", A, devices(2)),
            slice1("slice-2", "node-1", "pool-1", B),
        ],
        ..Default::default()
    };
    let mut want = on_node1(vec![
        ("req-0", A, "pool-1", "device-0", false),
        ("req-1", A, "pool-1", "device-1", false),
        ("req-2", B, "pool-1", "device-1", false),
    ]);
    want.config = vec![
        config("FromClass", &["req-0", "req-1"], A, "classAttribute-A"),
        config("FromClass", &["req-2"], B, "classAttribute-B"),
    ];
    check(c, Want::Results(vec![want]));
}

/// `claim-with-device-config` (`claimWithDeviceConfig`: a config for all requests).
#[test]
fn claim_with_device_config() {
    let mut k = claim1("claim-0", "req-0", "class-a");
    k["spec"]["devices"]["config"] = json!([{"opaque": opaque(A, "deviceAttribute")}]);
    let c = Case {
        claims: vec![k],
        slices: vec![slice1("slice-1", "node-1", "pool-1", A)],
        ..Default::default()
    };
    let mut want = on_node1(vec![("req-0", A, "pool-1", "device-1", false)]);
    want.config = vec![json!({"source": "FromClaim", "opaque": opaque(A, "deviceAttribute")})];
    check(c, Want::Results(vec![want]));
}

/// `unknown-selector`: an empty selector (an unknown future type).
#[test]
fn unknown_selector() {
    let c = Case {
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![req_sel("req-0", "class-a", 1, vec![json!({})])],
        )],
        slices: vec![slice1("slice-1", "node-1", "pool-1", A)],
        ..Default::default()
    };
    check(
        c,
        Want::Error("CEL expression empty (unsupported selector type?)"),
    );
}

/// `unknown-allocation-mode`
#[test]
fn unknown_allocation_mode() {
    let mut r = req("req-0", "class-a", 1);
    r["exactly"]["allocationMode"] = json!("future-mode");
    let c = Case {
        claims: vec![claim("claim-0", json!([]), vec![r])],
        slices: vec![slice1("slice-1", "node-1", "pool-1", A)],
        ..Default::default()
    };
    check(c, Want::Error("unsupported count mode future-mode"));
}

/// `unknown-constraint`: an empty constraint (an unknown future type).
#[test]
fn unknown_constraint() {
    let c = Case {
        claims: vec![claim(
            "claim-0",
            json!([{}]),
            vec![req("req-0", "class-a", 1)],
        )],
        slices: vec![slice1("slice-1", "node-1", "pool-1", A)],
        ..Default::default()
    };
    check(
        c,
        Want::Error("empty constraint (unsupported constraint type?)"),
    );
}

/// `invalid-CEL-one-device`
#[test]
fn invalid_cel_one_device() {
    let c = Case {
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![req_sel("req-0", "class-a", 1, vec![cel("noSuchVar")])],
        )],
        slices: vec![slice1("slice-1", "node-1", "pool-1", A)],
        ..Default::default()
    };
    check(c, Want::Error("undeclared reference"));
}

/// `invalid-CEL-one-device-class`
#[test]
fn invalid_cel_one_device_class() {
    let c = Case {
        claims: vec![claim1("claim-0", "req-0", "class-a")],
        classes: vec![class_expr("class-a", "noSuchVar")],
        slices: vec![slice1("slice-1", "node-1", "pool-1", A)],
        ..Default::default()
    };
    check(c, Want::Error("undeclared reference"));
}

/// `invalid-CEL-all-devices`
#[test]
fn invalid_cel_all_devices() {
    let mut r = all_req("req-0", "class-a");
    r["exactly"]["selectors"] = json!([cel("noSuchVar")]);
    let c = Case {
        claims: vec![claim("claim-0", json!([]), vec![r])],
        slices: vec![slice1("slice-1", "node-1", "pool-1", A)],
        ..Default::default()
    };
    check(c, Want::Error("undeclared reference"));
}

/// `too-many-devices-single-request` and `all-devices-invalid-CEL` (upstream's two cases have
/// the same inputs: one request for 500 devices, no slices).
#[test]
fn too_many_devices_single_request() {
    let c = Case {
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![req("req-0", "class-a", 500)],
        )],
        ..Default::default()
    };
    check(c, Want::Error("exceeds the claim limit"));
}

/// `many-devices-okay`: as many devices as the limit allows, none on the node.
#[test]
fn many_devices_okay() {
    let max = ALLOCATION_RESULTS_MAX_SIZE as i64;
    let c = Case {
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![req("req-0", "class-a", max)],
        )],
        ..Default::default()
    };
    check(c, Want::Nothing);
}

/// `too-many-devices-total`
#[test]
fn too_many_devices_total() {
    let max = ALLOCATION_RESULTS_MAX_SIZE;
    let c = Case {
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![
                req("req-0", "class-a", max as i64),
                req("req-1", "class-a", 1),
            ],
        )],
        slices: vec![slice("slice-1", "node-1", "pool-1", A, devices(max + 1))],
        ..Default::default()
    };
    check(c, Want::Error("exceeds the claim limit"));
}

/// `max-number-devices`
#[test]
fn max_number_devices() {
    let max = ALLOCATION_RESULTS_MAX_SIZE;
    let c = Case {
        claims: vec![claim(
            "claim-0",
            json!([]),
            vec![req("req-0", "class-a", max as i64)],
        )],
        slices: vec![slice("slice-1", "node-1", "pool-1", A, devices(max))],
        ..Default::default()
    };
    let names: Vec<String> = (0..max).map(|i| format!("device-{i}")).collect();
    check(
        c,
        Want::Results(vec![on_node1(
            names
                .iter()
                .map(|n| ("req-0", A, "pool-1", n.as_str(), false))
                .collect(),
        )]),
    );
}
