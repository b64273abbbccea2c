use super::*;
use crate::resource::{validate_resource_slice, ResourceSlice};

fn errors(f: impl FnOnce(&mut FieldErrors)) -> Vec<String> {
    let mut errs = FieldErrors::default();
    f(&mut errs);
    errs.0.iter().map(|e| e.to_string()).collect()
}

fn policy(v: serde_json::Value) -> CapacityRequestPolicy {
    serde_json::from_value(v).expect("policy")
}

fn q(s: &str) -> Quantity {
    Quantity::parse(s).expect("quantity")
}

#[test]
fn request_policy_content_is_checked_as_the_api_server_does() {
    let ok = [
        serde_json::json!({"default": "2", "validValues": ["1", "2", "4"]}),
        serde_json::json!({"default": "2", "validRange": {"min": "1", "max": "9", "step": "1"}}),
        serde_json::json!({"default": "10", "validRange": {"min": "10", "step": "10"}}),
        serde_json::json!({"default": "3"}),
    ];
    for p in ok {
        let e = errors(|errs| validate_request_policy(errs, "p", &q("100"), &policy(p.clone())));
        assert!(e.is_empty(), "{p}: {e:?}");
    }
    let bad = [
        (
            serde_json::json!({"default": "1", "validValues": ["1"], "validRange": {"min": "1"}}),
            "cannot specify \"validValues\" and \"validRange\" at the same time",
        ),
        (
            serde_json::json!({"validValues": ["1"]}),
            "p.default: Required value: required when validValues is defined",
        ),
        (
            serde_json::json!({"default": "1", "validValues": ["2", "1"]}),
            "values must be sorted in ascending order",
        ),
        (
            serde_json::json!({"default": "3", "validValues": ["1", "2"]}),
            "default value is not valid according to the requestPolicy",
        ),
        (
            serde_json::json!({"default": "1", "validValues": ["1", "200"]}),
            "option is larger than capacity value: 100",
        ),
        (
            serde_json::json!({"default": "1", "validRange": {}}),
            "p.validRange.min: Required value",
        ),
        (
            serde_json::json!({"default": "1", "validRange": {"min": "2"}}),
            "default is less than min: 2",
        ),
        (
            serde_json::json!({"default": "5", "validRange": {"min": "1", "max": "200"}}),
            "max is larger than capacity value: 100",
        ),
        (
            serde_json::json!({"default": "4", "validRange": {"min": "1", "step": "2"}}),
            "value is not a multiple of a given step (2) from (1)",
        ),
        (
            serde_json::json!({"default": "10", "validRange": {"min": "10", "step": "95"}}),
            "one step 105 is larger than capacity value: 100",
        ),
    ];
    for (p, want) in bad {
        let e = errors(|errs| validate_request_policy(errs, "p", &q("100"), &policy(p.clone())));
        assert!(e.iter().any(|m| m.contains(want)), "{p}: {e:?}");
    }
}

#[test]
fn request_policy_needs_a_shared_device_and_slices_name_the_field() {
    let slice: ResourceSlice = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "s"},
        "spec": {"driver": "d.example.com", "pool": {"name": "p", "resourceSliceCount": 1},
            "nodeName": "n", "devices": [
                {"name": "a", "capacity": {"mem": {"value": "8Gi",
                    "requestPolicy": {"default": "1Gi"}}}},
                {"name": "b", "allowMultipleAllocations": true, "capacity": {"mem": {"value": "8Gi",
                    "requestPolicy": {"default": "1Gi", "validValues": ["2Gi"]}}}}]}
    }))
    .expect("slice");
    let e: Vec<String> = validate_resource_slice(&slice)
        .expect_err("refused")
        .0
        .iter()
        .map(|e| e.to_string())
        .collect();
    assert!(
        e.iter().any(|m| m.contains(
            "spec.devices[0].capacity[\"mem\"].requestPolicy: Forbidden: allowMultipleAllocations must be true"
        )),
        "{e:?}"
    );
    assert!(
        e.iter().any(|m| m.contains(
            "spec.devices[1].capacity[\"mem\"].requestPolicy.validValues: Invalid value: \"1Gi\": default value is not valid"
        )),
        "{e:?}"
    );
}

#[test]
fn capacity_requests_and_distinct_attribute_names() {
    let c: Option<CapacityRequirements> = Some(
        serde_json::from_value(serde_json::json!({"requests": {"bad name": "1", "mem": "-1"}}))
            .expect("requirements"),
    );
    let e = errors(|errs| validate_capacity_requirements(errs, "r", &c));
    assert!(
        e.iter()
            .any(|m| m.contains("r.capacity.requests[\"bad name\"]")),
        "{e:?}"
    );
    assert!(
        e.iter()
            .any(|m| m.contains("must be greater than or equal to 0")),
        "{e:?}"
    );
    let con = |v: serde_json::Value| -> DeviceConstraint { serde_json::from_value(v).expect("c") };
    let ok = con(serde_json::json!({"distinctAttribute": "d.example.com/numa"}));
    assert!(errors(|errs| validate_distinct_attribute(errs, "c", &ok)).is_empty());
    let e = errors(|errs| {
        validate_distinct_attribute(
            errs,
            "c",
            &con(serde_json::json!({"distinctAttribute": "numa"})),
        )
    });
    assert!(
        e.iter()
            .any(|m| m.contains("c.distinctAttribute: Invalid value: \"numa\"")),
        "{e:?}"
    );
    let both = con(
        serde_json::json!({"distinctAttribute": "d.example.com/numa",
        "matchAttribute": "d.example.com/numa"}),
    );
    let e = errors(|errs| validate_distinct_attribute(errs, "c", &both));
    assert!(
        e.iter()
            .any(|m| m.contains("exactly one field must be set")),
        "{e:?}"
    );
}

#[test]
fn allocation_results_carry_share_id_and_consumed_capacity() {
    let r: crate::resource::DeviceRequestAllocationResult =
        serde_json::from_value(serde_json::json!({
        "request": "r", "driver": "d", "pool": "p", "device": "x",
        "shareID": "0d1f0b6a-1111-4c2e-8f00-000000000001",
        "consumedCapacity": {"mem": "2Gi"}}))
        .expect("result");
    assert_eq!(
        r.share_id.as_deref(),
        Some("0d1f0b6a-1111-4c2e-8f00-000000000001")
    );
    assert_eq!(r.consumed_capacity["mem"].value(), 2 << 30);
    let back = serde_json::to_value(&r).expect("json");
    assert_eq!(back["shareID"], "0d1f0b6a-1111-4c2e-8f00-000000000001");
    assert_eq!(back["consumedCapacity"]["mem"], "2Gi");
}
