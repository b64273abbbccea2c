//! Upstream's expected costs (`dynamic-resource-allocation/cel/compile_test.go`, `testcases`
//! `expectCost`, the cases of the v1.35 environment: no list-valued attributes) and the
//! validation cases about cost (`validation_*_test.go`, "CEL-cost").

use super::*;
use crate::resource::{
    default_resource_claim, default_resource_claim_template, validate_device_class,
    validate_resource_claim, validate_resource_claim_template, DeviceClass, ResourceClaim,
    ResourceClaimTemplate,
};

/// The expression of upstream's "expensive" case (from the VAP integration test).
pub(crate) const EXPENSIVE: &str = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z2, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z3, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z4, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z5, int('1'.find('[0-9]*')) < 100)))))))";

#[test]
fn compile_test_expect_cost() {
    let all = r#"
device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"].bool &&
device.attributes["dra.example.com"].int > 0 &&
device.attributes["dra.example.com"].string == "fish" &&
device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) &&
device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"]["bool"] &&
device.attributes["dra.example.com"]["int"] > 0 &&
device.attributes["dra.example.com"]["string"] == "fish" &&
device.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))
"#;
    let cases: &[(&str, &str, u64)] = &[
        ("true", "true", 0),
        ("false", "false", 0),
        (
            "runtime-error-lookup-identifier",
            r#"device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))"#,
            6,
        ),
        (
            "runtime-error-lookup-map",
            r#"device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))"#,
            6,
        ),
        (
            "domain-check-negative",
            r#""no-such-domain" in device.attributes"#,
            3,
        ),
        (
            "domain-check-positive",
            r#""dra.example.com" in device.attributes"#,
            3,
        ),
        ("empty-driver-name", r#"device.driver == """#, 2),
        (
            "real-driver-name",
            r#"device.driver == "dra.example.com""#,
            4,
        ),
        (
            "driver-name-qualifier",
            r#"device.attributes["dra.example.com"].name"#,
            4,
        ),
        (
            "driver-name-qualifier-map-lookup",
            r#"device.attributes["dra.example.com"]["name"]"#,
            4,
        ),
        (
            "bind",
            r#"cel.bind(dra, device.attributes["dra.example.com"], dra.name)"#,
            15,
        ),
        (
            "qualified-attribute-name",
            r#"device.attributes["other.example.com"].name"#,
            4,
        ),
        ("bool", r#"device.attributes["dra.example.com"].name"#, 4),
        ("int", r#"device.attributes["dra.example.com"].name > 0"#, 5),
        (
            "string",
            r#"device.attributes["dra.example.com"].name == "fish""#,
            5,
        ),
        (
            "version",
            r#"device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1"))"#,
            6,
        ),
        (
            "version_v",
            r#"device.attributes["dra.example.com"].name.isGreaterThan(semver("v0.0.1", true)) && isSemver("v1.0.0", true)"#,
            7,
        ),
        (
            "quantity",
            r#"device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))"#,
            6,
        ),
        (
            "check-positive",
            r#""name" in device.capacity["dra.example.com"] && device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))"#,
            10,
        ),
        (
            "check-negative",
            r#"!("name" in device.capacity["dra.example.com"]) || device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))"#,
            11,
        ),
        ("all", all, 52),
        (
            "many",
            r#"device.attributes["dra.example.com"].a && device.attributes["dra.example.com"].b && device.attributes["dra.example.com"].c"#,
            12,
        ),
        (
            "check_attribute_domains",
            r#"device.attributes.exists_one(x, x == "dra.example.com")"#,
            164,
        ),
        (
            "check_attribute_ids",
            r#"device.attributes["dra.example.com"].exists_one(x, x == "services")"#,
            133,
        ),
        (
            "split_attribute",
            r#"device.attributes["dra.example.com"].services.split("example").size() >= 2"#,
            19,
        ),
        (
            "regexp_attribute",
            r#"device.attributes["dra.example.com"].services.matches("[^a]?sym")"#,
            18,
        ),
        (
            "check_capacity_domains",
            r#"device.capacity.exists_one(x, x == "dra.example.com")"#,
            164,
        ),
        (
            "check_capacity_ids",
            r#"device.capacity["dra.example.com"].exists_one(x, x == "memory")"#,
            133,
        ),
        ("expensive", EXPENSIVE, 85_555_551),
        (
            "allow_multiple_allocations",
            r#"device.allowMultipleAllocations == true"#,
            3,
        ),
        (
            "allow_multiple_allocations_default",
            r#"device.allowMultipleAllocations == false"#,
            3,
        ),
    ];
    let mut wrong = Vec::new();
    for (name, expr, want) in cases {
        match estimate(expr) {
            Ok(got) if got == *want => {}
            other => wrong.push(format!("{name}: want {want}, got {other:?}")),
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// Costs derived by hand from cel-go's rules for the constructs the table above leaves out
/// (each with the rule it checks).
#[test]
fn derived_costs_of_other_constructs() {
    let cases: &[(&str, u64)] = &[
        // all: range 2 + init 0 + result 1 + 32 domains × (cond 2 + step 4), where the step
        // is accu 1 + (x 1 + == of a domain (63) and 15 characters: ⌈1.5⌉ = 2).
        (
            r#"device.attributes.all(x, x == "gpu.example.com")"#,
            2 + 1 + 32 * (2 + 4),
        ),
        // map over a list literal: range 10 + init [] 10 + result 1 + 3 × (cond 0 + step
        // (add_list 1 + accu 1 + [x * 2] (10 + (1 + 1)))).
        (
            "[1, 2, 3].map(x, x * 2).size() == 3",
            1 + 1 + 10 + 10 + 1 + 3 * 14,
        ),
        // String concatenation: ⌈0.1 × (63 + 1)⌉ = 7, then == against 4 chars: ⌈0.4⌉ = 1.
        (r#"device.driver + "x" == "abcd""#, 2 + 7 + 1),
        // startsWith: the argument's traversal ⌈0.3⌉ = 1.
        (r#"device.driver.startsWith("gpu")"#, 2 + 1),
        // contains: ⌈6.3⌉ × ⌈0.3⌉ = 7.
        (r#"device.driver.contains("gpu")"#, 2 + 7),
        // lowerAscii (k8s library): ⌈6.3⌉ = 7, result sized as the driver (63).
        (
            r#"device.driver.lowerAscii() == device.driver"#,
            2 + 7 + 2 + 7,
        ),
        // in a list literal: its size.
        (r#"device.driver in ["a", "b", "c"]"#, 2 + 10 + 3),
        // Ordering of two attribute values (dynamic): the string overload ⌈6.4⌉ = 7.
        (
            r#"device.attributes["d"].a < device.attributes["d"].b"#,
            4 + 4 + 7,
        ),
        // has(): its operand only (PresenceTestHasCost(false) in the Kubernetes environment).
        (r#"has(device.attributes["d"].a)"#, 3),
        // ?: the condition plus the dearer branch.
        (
            r#"device.driver == "" ? device.attributes["d"].a == 1 : true"#,
            2 + (4 + 1),
        ),
    ];
    let mut wrong = Vec::new();
    for (expr, want) in cases {
        match estimate(expr) {
            Ok(got) if got == *want => {}
            other => wrong.push(format!("{expr}: want {want}, got {other:?}")),
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

#[test]
fn a_traversal_of_unbounded_size_exceeds_the_limit() {
    // The result of quantity() has no size bound; == must traverse it.
    let c = estimate(r#"device.capacity["d"].memory == quantity("1Gi")"#).unwrap();
    assert!(c > MAX_COST, "{c}");
    // Nested comprehensions over the 32 domains × 32 names stay below it.
    let c = estimate(r#"device.attributes.all(d, device.attributes[d].all(n, n.startsWith("x")))"#)
        .unwrap();
    assert!(c < MAX_COST, "{c}");
    assert!(estimate("device.driver ==").is_err());
}

/// Upstream's "CEL-cost" validation cases: the API server refuses a DeviceClass, a
/// ResourceClaim or a ResourceClaimTemplate whose selector is too expensive, naming the field.
#[test]
fn validation_refuses_a_selector_over_the_cost_limit() {
    let sel = |e: &str| serde_json::json!([{"cel": {"expression": e}}]);
    let class = |e: &str| -> DeviceClass {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "gpu"}, "spec": {"selectors": sel(e)}}))
        .unwrap()
    };
    let spec = |e: &str| {
        serde_json::json!({"devices": {"requests": [
            {"name": "a", "exactly": {"deviceClassName": "gpu", "selectors": sel(e)}},
            {"name": "b", "firstAvailable": [
                {"name": "s", "deviceClassName": "gpu", "selectors": sel(e)}]}]}})
    };
    let claim = |e: &str| -> ResourceClaim {
        let mut c: ResourceClaim = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "c", "namespace": "default"}, "spec": spec(e)}))
        .unwrap();
        default_resource_claim(&mut c);
        c
    };
    let template = |e: &str| -> ResourceClaimTemplate {
        let mut t: ResourceClaimTemplate = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "t", "namespace": "default"}, "spec": {"spec": spec(e)}}))
        .unwrap();
        default_resource_claim_template(&mut t);
        t
    };
    let forbidden = "Forbidden: too complex, exceeds cost limit";
    let err = validate_device_class(&class(EXPENSIVE))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        format!("spec.selectors[0].cel.expression: {forbidden}")
    );
    let err = validate_resource_claim(&claim(EXPENSIVE))
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        format!(
            "[spec.devices.requests[0].exactly.selectors[0].cel.expression: {forbidden}, \
             spec.devices.requests[1].firstAvailable[0].selectors[0].cel.expression: {forbidden}]"
        )
    );
    let err = validate_resource_claim_template(&template(EXPENSIVE))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(&format!(
            "spec.spec.devices.requests[0].exactly.selectors[0].cel.expression: {forbidden}"
        )),
        "{err}"
    );
    // Below the limit: accepted. Every name of every domain: the inner `all` costs range 4 +
    // result 1 + 32 × (cond 2 + step 3) = 165, the outer range 2 + result 1 + 32 × (2 + 1 +
    // 165) = 5,379.
    let fine = r#"device.attributes.all(d, device.attributes[d].all(n, n.startsWith("x")))"#;
    assert_eq!(estimate(fine), Ok(5_379));
    assert!(validate_device_class(&class(fine)).is_ok());
    assert!(validate_resource_claim(&claim(fine)).is_ok());
    assert!(validate_resource_claim_template(&template(fine)).is_ok());
    // Two levels less of upstream's expensive expression: each level multiplies by 10.
    let five = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z2, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z3, int('1'.find('[0-9]*')) < 100)))))";
    assert_eq!(estimate(five), Ok(855_551));
    assert!(validate_device_class(&class(five)).is_ok());
}

/// Loading objects (scenario `objectsFiles`, trace `CreateObject`) runs this validation: the
/// error names the file and the field; a slice whose device exceeds the bounds the estimate
/// assumes is refused too.
#[test]
fn loading_names_the_file_and_the_field() {
    let class = serde_json::json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": "true"}}, {"cel": {"expression": EXPENSIVE}}]}});
    let err = crate::object::ApiObject::from_value("objects.yaml", &class)
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("objects.yaml: "), "{err}");
    assert!(
        err.ends_with(
            "spec.selectors[1].cel.expression: Forbidden: too complex, exceeds cost limit"
        ),
        "{err}"
    );
    let slice = |attr: &str, value: &str| {
        serde_json::json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": "s"},
            "spec": {"driver": "gpu.example.com", "nodeName": "n1",
                     "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "gpu-0", "attributes": {attr: {"string": value}}}]}})
    };
    assert!(crate::object::ApiObject::from_value("slices.yaml", &slice("model", "h100")).is_ok());
    let err = crate::object::ApiObject::from_value("slices.yaml", &slice("model", &"x".repeat(65)))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains(
            "spec.devices[0].attributes[\"model\"].string: Too long: may not be more than 64 bytes"
        ),
        "{err}"
    );
    let err = crate::object::ApiObject::from_value("slices.yaml", &slice("model-name", "h100"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("a valid C identifier"), "{err}");
}

/// `validateCELSelector`: an expression that does not compile is refused when it is loaded
/// (`Invalid value: "<expression>": compilation failed: ...`), in classes and claims, before
/// any cost is estimated; the scheduler never sees it.
#[test]
fn an_expression_that_does_not_compile_is_refused() {
    let sel = |e: &str| serde_json::json!([{"cel": {"expression": e}}]);
    let class = |e: &str| -> DeviceClass {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "gpu"}, "spec": {"selectors": sel(e)}}))
        .unwrap()
    };
    let claim = |e: &str| -> ResourceClaim {
        let mut c: ResourceClaim = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "c", "namespace": "default"},
            "spec": {"devices": {"requests": [
                {"name": "a", "exactly": {"deviceClassName": "gpu", "selectors": sel(e)}}]}}}))
        .unwrap();
        default_resource_claim(&mut c);
        c
    };
    let bad = "device.driver == ";
    let prefix = "Invalid value: \"device.driver == \": compilation failed: ";
    let err = validate_device_class(&class(bad)).unwrap_err().to_string();
    assert!(
        err.starts_with(&format!("spec.selectors[0].cel.expression: {prefix}")),
        "{err}"
    );
    let err = validate_resource_claim(&claim(bad))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with(&format!(
            "spec.devices.requests[0].exactly.selectors[0].cel.expression: {prefix}"
        )),
        "{err}"
    );
    assert!(validate_device_class(&class("device.driver == \"gpu.example.com\"")).is_ok());
}
