//! DRADeviceBindingConditions: a device's `bindingConditions`, `bindingFailureConditions` and
//! `bindsToNode` (in a ResourceSlice), their copy in a claim's allocation result, and the
//! per-device status a driver writes into `status.devices` (DRAResourceClaimDeviceStatus,
//! upstream `resourceapi.AllocatedDeviceStatus` with `metav1.Condition`s), with the API
//! server's validation (`validateDeviceBindingParameters`, `BindingConditionsMaxSize`,
//! `BindingFailureConditionsMaxSize` in `pkg/apis/resource/validation`).
//!
//! The fields stay recorded with their gate (`gates::not_modelled`), so a run with the gate
//! off refuses them; the scheduler reads them when it is on.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::validation::{quote, validate_label_name, FieldError, FieldErrors};

use super::{DeviceRequestAllocationResult, ResourceClaim};

/// `BindingConditionsMaxSize`.
pub const BINDING_CONDITIONS_MAX_SIZE: usize = 4;
/// `BindingFailureConditionsMaxSize`.
pub const BINDING_FAILURE_CONDITIONS_MAX_SIZE: usize = 4;
/// `ConditionTrue`.
pub const CONDITION_TRUE: &str = "True";
/// `metav1.ConditionStatus` values, in upstream's order.
const CONDITION_STATUSES: [&str; 3] = ["True", "False", "Unknown"];

/// `resourceapi.AllocatedDeviceStatus`: what a driver reports about one allocated device.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct AllocatedDeviceStatus {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub driver: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub pool: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub device: String,
    #[serde(rename = "shareID", skip_serializing_if = "Option::is_none")]
    pub share_id: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub conditions: Vec<DeviceCondition>,
    /// Driver data: kept, not read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
    /// Network data: kept, not read.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network_data: Option<Value>,
}

/// `metav1.Condition` as a device status holds it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct DeviceCondition {
    #[serde(rename = "type")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub type_: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub status: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub reason: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// `validateDeviceBindingParameters`: at most 4 of each, each a label name, no duplicates,
/// no condition in both lists, and each list only together with the other. `f` is the
/// device's (or allocation result's) path.
pub fn validate_device_binding_parameters(
    errs: &mut FieldErrors,
    f: &str,
    conditions: &[String],
    failure_conditions: &[String],
) {
    for (list, name, max) in [
        (conditions, "bindingConditions", BINDING_CONDITIONS_MAX_SIZE),
        (
            failure_conditions,
            "bindingFailureConditions",
            BINDING_FAILURE_CONDITIONS_MAX_SIZE,
        ),
    ] {
        let lf = format!("{f}.{name}");
        if list.len() > max {
            errs.push(FieldError::new(
                lf.clone(),
                format!("Too many: {}: must have at most {max} items", list.len()),
            ));
        }
        for (i, c) in list.iter().enumerate() {
            errs.0.extend(validate_label_name(c, &format!("{lf}[{i}]")));
            if list[..i].contains(c) {
                errs.push(FieldError::duplicate(format!("{lf}[{i}]"), c));
            }
        }
    }
    for (i, c) in failure_conditions.iter().enumerate() {
        if conditions.contains(c) {
            errs.push(FieldError::invalid(
                format!("{f}.bindingFailureConditions[{i}]"),
                quote(c),
                "bindingFailureConditions must not overlap with bindingConditions",
            ));
        }
    }
    if conditions.is_empty() && !failure_conditions.is_empty() {
        errs.push(FieldError::invalid(
            format!("{f}.bindingConditions"),
            "[]",
            "bindingConditions are required to use bindingFailureConditions",
        ));
    }
    if failure_conditions.is_empty() && !conditions.is_empty() {
        errs.push(FieldError::invalid(
            format!("{f}.bindingFailureConditions"),
            "[]",
            "bindingFailureConditions are required to use bindingConditions",
        ));
    }
}

/// A claim's `status.devices`: driver, pool and device required, each condition with a type
/// (a label name) and a known status.
pub fn validate_device_statuses(errs: &mut FieldErrors, devices: &[AllocatedDeviceStatus]) {
    for (i, d) in devices.iter().enumerate() {
        let f = format!("status.devices[{i}]");
        for (v, n) in [
            (&d.driver, "driver"),
            (&d.pool, "pool"),
            (&d.device, "device"),
        ] {
            if v.is_empty() {
                errs.push(FieldError::required(format!("{f}.{n}"), ""));
            }
        }
        for (j, c) in d.conditions.iter().enumerate() {
            let cf = format!("{f}.conditions[{j}]");
            if c.type_.is_empty() {
                errs.push(FieldError::required(format!("{cf}.type"), ""));
            } else {
                errs.0
                    .extend(validate_label_name(&c.type_, &format!("{cf}.type")));
            }
            if !CONDITION_STATUSES.contains(&c.status.as_str()) {
                errs.push(FieldError::not_supported(
                    format!("{cf}.status"),
                    &c.status,
                    &CONDITION_STATUSES,
                ));
            }
        }
    }
}

/// `getAllocatedDeviceStatus`: the entry of `status.devices` for one allocated device (same
/// driver, pool, device and share id).
pub fn allocated_device_status<'a>(
    claim: &'a ResourceClaim,
    result: &DeviceRequestAllocationResult,
) -> Option<&'a AllocatedDeviceStatus> {
    claim.status.devices.iter().find(|d| {
        d.driver == result.driver
            && d.pool == result.pool
            && d.device == result.device
            && d.share_id == result.share_id
    })
}

/// `meta.FindStatusCondition`.
pub fn find_condition<'a>(
    conditions: &'a [DeviceCondition],
    type_: &str,
) -> Option<&'a DeviceCondition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// `meta.IsStatusConditionTrue`.
pub fn is_condition_true(conditions: &[DeviceCondition], type_: &str) -> bool {
    find_condition(conditions, type_).is_some_and(|c| c.status == CONDITION_TRUE)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errs(c: &[&str], fc: &[&str]) -> Vec<String> {
        let mut e = FieldErrors::default();
        let c: Vec<String> = c.iter().map(|s| s.to_string()).collect();
        let fc: Vec<String> = fc.iter().map(|s| s.to_string()).collect();
        validate_device_binding_parameters(&mut e, "spec.devices[0]", &c, &fc);
        e.0.iter().map(|e| e.to_string()).collect()
    }

    /// Upstream's `TestValidateResourceSlice` rows "valid: at limit binding conditions",
    /// "invalid: too many binding conditions" and the failure-condition twins (4 allowed, 5
    /// `TooMany`).
    #[test]
    fn binding_conditions_limits() {
        let four = ["a", "b", "c", "d"];
        assert!(errs(&four, &["f"]).is_empty());
        assert!(errs(&["x"], &four).is_empty());
        assert_eq!(
            errs(&["a", "b", "c", "d", "e"], &["f"]),
            ["spec.devices[0].bindingConditions: Too many: 5: must have at most 4 items"]
        );
        assert_eq!(
            errs(&["x"], &["a", "b", "c", "d", "e"]),
            ["spec.devices[0].bindingFailureConditions: Too many: 5: must have at most 4 items"]
        );
    }

    #[test]
    fn binding_conditions_go_together_and_do_not_overlap() {
        assert_eq!(
            errs(&["ready"], &[]),
            ["spec.devices[0].bindingFailureConditions: Invalid value: []: bindingFailureConditions are required to use bindingConditions"]
        );
        assert_eq!(
            errs(&[], &["failed"]),
            ["spec.devices[0].bindingConditions: Invalid value: []: bindingConditions are required to use bindingFailureConditions"]
        );
        assert_eq!(
            errs(&["ready", "ready"], &["ready"]),
            [
                "spec.devices[0].bindingConditions[1]: Duplicate value: \"ready\"",
                "spec.devices[0].bindingFailureConditions[0]: Invalid value: \"ready\": bindingFailureConditions must not overlap with bindingConditions",
            ]
        );
        let bad = errs(&["not a label"], &["failed"]);
        assert_eq!(bad.len(), 1, "{bad:?}");
        assert!(bad[0]
            .starts_with("spec.devices[0].bindingConditions[0]: Invalid value: \"not a label\""));
    }

    #[test]
    fn device_status_reads_conditions() {
        let claim: ResourceClaim = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "c"},
            "status": {"devices": [{"driver": "d", "pool": "p", "device": "x",
                "conditions": [{"type": "Ready", "status": "True", "reason": "Attached"}]}]}
        }))
        .unwrap();
        let r = DeviceRequestAllocationResult {
            driver: "d".into(),
            pool: "p".into(),
            device: "x".into(),
            ..Default::default()
        };
        let st = allocated_device_status(&claim, &r).unwrap();
        assert!(is_condition_true(&st.conditions, "Ready"));
        assert!(!is_condition_true(&st.conditions, "Failed"));
        let other = DeviceRequestAllocationResult {
            device: "y".into(),
            ..r
        };
        assert!(allocated_device_status(&claim, &other).is_none());
        let mut e = FieldErrors::default();
        let mut bad = claim.status.devices.clone();
        bad[0].conditions[0].status = "Yes".into();
        bad[0].pool.clear();
        validate_device_statuses(&mut e, &bad);
        let msgs: Vec<String> = e.0.iter().map(|e| e.to_string()).collect();
        assert_eq!(msgs.len(), 2, "{msgs:?}");
        assert_eq!(msgs[0], "status.devices[0].pool: Required value");
        assert!(msgs[1]
            .starts_with("status.devices[0].conditions[0].status: Unsupported value: \"Yes\""));
    }
}
