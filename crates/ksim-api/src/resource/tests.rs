//! Defaulting and validation facts.
use super::*;

fn claim(json: &str) -> ResourceClaim {
    let mut c: ResourceClaim = serde_json::from_str(json).unwrap();
    default_resource_claim(&mut c);
    c
}

#[test]
fn defaults_mode_and_count() {
    let c = claim(
        r#"{"metadata":{"name":"c"},"spec":{"devices":{"requests":[
          {"name":"a","exactly":{"deviceClassName":"gpu"}},
          {"name":"b","exactly":{"deviceClassName":"gpu","allocationMode":"All"}},
          {"name":"c","firstAvailable":[{"name":"s","deviceClassName":"gpu"}]}]}}}"#,
    );
    let r = &c.spec.devices.requests;
    let a = r[0].exactly.as_ref().unwrap();
    assert_eq!((a.allocation_mode.as_str(), a.count), ("ExactCount", 1));
    let b = r[1].exactly.as_ref().unwrap();
    assert_eq!((b.allocation_mode.as_str(), b.count), ("All", 0));
    assert_eq!(r[2].first_available[0].count, 1);
    assert_eq!(c.metadata.uid, "uid-claim-default-c");
    assert!(validate_resource_claim(&c).is_ok());
}

#[test]
fn claim_validation_errors() {
    let cases = [
        (
            r#"{"metadata":{"name":"c"},"spec":{"devices":{"requests":[{"name":"a"}]}}}"#,
            "spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable` is required",
        ),
        (
            r#"{"metadata":{"name":"c"},"spec":{"devices":{"requests":[{"name":"a","exactly":{"deviceClassName":"g","allocationMode":"Some"}}]}}}"#,
            "spec.devices.requests[0].exactly.allocationMode: Unsupported value: \"Some\"",
        ),
        (
            r#"{"metadata":{"name":"c"},"spec":{"devices":{"requests":[{"name":"a","exactly":{"deviceClassName":"g","allocationMode":"All","count":2}}]}}}"#,
            "spec.devices.requests[0].exactly.count: Invalid value: 2: must not be specified when allocationMode is 'All'",
        ),
        (
            r#"{"metadata":{"name":"c"},"spec":{"devices":{"requests":[{"name":"a","exactly":{"deviceClassName":"g"}}],"constraints":[{"requests":["b"],"matchAttribute":"x.com/m"}]}}}"#,
            "spec.devices.constraints[0].requests[0]: Invalid value: \"b\"",
        ),
        (
            r#"{"metadata":{"name":"c"},"spec":{"devices":{"requests":[{"name":"a","exactly":{"deviceClassName":"g"}}],"constraints":[{"matchAttribute":"model"}]}}}"#,
            "spec.devices.constraints[0].matchAttribute: Invalid value: \"model\"",
        ),
        (
            r#"{"metadata":{"name":"c"},"spec":{"devices":{"requests":[{"name":"a","exactly":{"deviceClassName":"g","tolerations":[{"key":"k"}]}}]}}}"#,
            "spec.devices.requests[0].exactly.tolerations: Forbidden: DRADeviceTaints is not modelled",
        ),
    ];
    for (json, want) in cases {
        let err = validate_resource_claim(&claim(json))
            .unwrap_err()
            .to_string();
        assert!(err.contains(want), "{json}\n got {err}\nwant {want}");
    }
    assert!(serde_json::from_str::<ResourceClaim>(
        r#"{"metadata":{"name":"c"},"spec":{"devices":{"requests":[],"bogus":1}}}"#
    )
    .is_err());
}

#[test]
fn slice_validation_errors() {
    let slice = |spec: &str| -> ResourceSlice {
        serde_json::from_str(&format!(r#"{{"metadata":{{"name":"s"}},"spec":{spec}}}"#)).unwrap()
    };
    let ok = slice(
        r#"{"driver":"gpu.example.com","nodeName":"n1","pool":{"name":"n1","generation":1,"resourceSliceCount":1},
           "devices":[{"name":"gpu-0","attributes":{"model":{"string":"a100"},"v":{"version":"1.2.3"}},"capacity":{"memory":{"value":"40Gi"}}}]}"#,
    );
    assert!(validate_resource_slice(&ok).is_ok());
    let cases = [
        (
            r#"{"driver":"d.com","pool":{"name":"p","resourceSliceCount":1}}"#,
            "spec: Required value: exactly one of",
        ),
        (
            r#"{"driver":"d.com","allNodes":true,"nodeName":"n","pool":{"name":"p","resourceSliceCount":1}}"#,
            "exactly one field must be set, not more",
        ),
        (
            r#"{"driver":"d.com","allNodes":true,"pool":{"name":"p","resourceSliceCount":0}}"#,
            "spec.pool.resourceSliceCount: Invalid value: 0",
        ),
        (
            r#"{"driver":"d.com","allNodes":true,"pool":{"name":"p","resourceSliceCount":1},"devices":[{"name":"a"},{"name":"a"}]}"#,
            "spec.devices[1].name: Duplicate value: \"a\"",
        ),
        (
            r#"{"driver":"d.com","allNodes":true,"pool":{"name":"p","resourceSliceCount":1},"devices":[{"name":"a","attributes":{"v":{"version":"01.2.3"}}}]}"#,
            "semver",
        ),
        (
            r#"{"driver":"d.com","allNodes":true,"pool":{"name":"p","resourceSliceCount":1},"devices":[{"name":"a","taints":[{"key":"k","effect":"NoSchedule"}]}]}"#,
            "spec.devices[0].taints: Forbidden: DRADeviceTaints is not modelled",
        ),
    ];
    for (spec, want) in cases {
        let err = validate_resource_slice(&slice(spec))
            .unwrap_err()
            .to_string();
        assert!(err.contains(want), "{spec}\n got {err}\nwant {want}");
    }
}

#[test]
fn pod_claim_names() {
    let mut pod: crate::core::Pod = serde_json::from_str(
        r#"{"metadata":{"name":"p","namespace":"ns"},"spec":{"resourceClaims":[
          {"name":"gpu","resourceClaimTemplateName":"t"},{"name":"shared","resourceClaimName":"c"}],
          "containers":[{"name":"c","resources":{"claims":[{"name":"gpu"},{"name":"nope"}]}}]}}"#,
    )
    .unwrap();
    let err = validate_pod_claims(&pod).unwrap_err().to_string();
    assert!(err.contains("spec.containers[0].resources.claims[1]: Not found: \"nope\""));
    assert_eq!(
        claim_name_for(&pod, &pod.spec.resource_claims[0]).unwrap_err(),
        "pod \"ns/p\": ResourceClaim not created yet"
    );
    assert_eq!(
        claim_name_for(&pod, &pod.spec.resource_claims[1]).unwrap(),
        Some(("c".to_string(), false))
    );
    pod.status
        .resource_claim_statuses
        .push(PodResourceClaimStatus {
            name: "gpu".into(),
            resource_claim_name: Some("p-gpu-abcde".into()),
        });
    assert_eq!(
        claim_name_for(&pod, &pod.spec.resource_claims[0]).unwrap(),
        Some(("p-gpu-abcde".to_string(), true))
    );
}

/// A gated field loads (it is valid in itself) and is admitted or refused by the run's gates:
/// off → refused with the gate named; on and modelled → admitted; on, not modelled → refused.
#[test]
fn gated_fields_wait_for_the_gates() {
    use crate::object::ApiObject;
    use crate::version::{FeatureGates, KubernetesVersion};
    let v: serde_json::Value = serde_json::from_str(
        r#"{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":"s"},
        "spec":{"driver":"d.com","allNodes":true,"pool":{"name":"p","resourceSliceCount":1},
        "devices":[{"name":"a","taints":[{"key":"k","effect":"NoSchedule"}]}]}}"#,
    )
    .unwrap();
    let obj = ApiObject::from_value("t", &v).expect("a gated field loads");
    let fields = gated_fields(&obj);
    assert_eq!(fields.len(), 1);
    assert_eq!(fields[0].field, "spec.devices[0].taints");
    assert_eq!(fields[0].gate, Some("DRADeviceTaints"));
    let v135 = FeatureGates::new(KubernetesVersion::V1_35);
    let v136 = FeatureGates::new(KubernetesVersion::V1_36);
    let off = check_gates(&obj, &v135, &["DRADeviceTaints"]).unwrap_err();
    assert!(
        off.to_string()
            .contains("the DRADeviceTaints feature gate is off in this run (Kubernetes v1.35)"),
        "{off}"
    );
    assert!(check_gates(&obj, &v136, &["DRADeviceTaints"]).is_ok());
    let unmodelled = check_gates(&obj, &v136, &[]).unwrap_err();
    assert!(
        unmodelled
            .to_string()
            .contains("DRADeviceTaints is not modelled by ksim"),
        "{unmodelled}"
    );
    // A field error that is not gated still refuses the object at load.
    let mut bad = v.clone();
    bad["spec"]["devices"][0]["name"] = serde_json::json!("A_B");
    assert!(ApiObject::from_value("t", &bad).is_err());
}
