//! DRADeviceTaints: a device's `taints` (in a ResourceSlice) and a request's `tolerations`
//! (in a ResourceClaim's `exactly` request or `firstAvailable` subrequest), upstream
//! `resourceapi.DeviceTaint` / `resourceapi.DeviceToleration`, with the API server's
//! defaulting (the `+default="Equal"` marker on `DeviceToleration.Operator`) and validation
//! (`validateDeviceTaint`, `validateDeviceToleration` in `pkg/apis/resource/validation`).
//!
//! The matching of a toleration to a taint (`resourceclaim.ToleratesTaint`) is here too; the
//! allocator decides which effects prevent an allocation.

use serde::{Deserialize, Serialize};

use crate::validation::{
    is_valid_label_value, quote, validate_label_name, FieldError, FieldErrors,
};

/// `DeviceTaintsMaxLength`: taints per device.
pub const DEVICE_TAINTS_MAX_LENGTH: usize = 16;
/// `DeviceTolerationsMaxLength`: tolerations per request or subrequest.
pub const DEVICE_TOLERATIONS_MAX_LENGTH: usize = 16;
/// `ResourceSliceMaxDevicesWithTaintsOrConsumesCounters`: devices in a slice where a device
/// has taints.
pub const RESOURCE_SLICE_MAX_DEVICES_WITH_TAINTS: usize = 64;

/// `DeviceTaintEffectNoSchedule`: no new allocation of the device unless tolerated.
pub const EFFECT_NO_SCHEDULE: &str = "NoSchedule";
/// `DeviceTaintEffectNoExecute`: as NoSchedule, and the device taint eviction controller
/// deletes the pods using the device.
pub const EFFECT_NO_EXECUTE: &str = "NoExecute";
/// `DeviceTaintEffectNone`: informational, prevents nothing.
pub const EFFECT_NONE: &str = "None";
/// `DeviceTolerationOpEqual`, the default operator.
pub const OP_EQUAL: &str = "Equal";
/// `DeviceTolerationOpExists`.
pub const OP_EXISTS: &str = "Exists";

/// `validDeviceTaintEffects` (v1.36, with `None`), in upstream's sorted order.
const EFFECTS: [&str; 3] = [EFFECT_NO_EXECUTE, EFFECT_NO_SCHEDULE, EFFECT_NONE];
/// `validDeviceTolerationOperators`.
const OPERATORS: [&str; 2] = [OP_EQUAL, OP_EXISTS];

/// `DeviceTaint`: on a device, it has `effect` on every claim that does not tolerate it.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct DeviceTaint {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub key: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub value: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub effect: String,
    /// RFC 3339 on the run's clock; stamped with the time of the write when missing (read by
    /// the device taint eviction controller, `ksim-engine` `sim/devicetainteviction.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_added: Option<String>,
}

/// `DeviceToleration`: a request tolerates the taints it matches.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct DeviceToleration {
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub key: String,
    /// `Equal` (the default) or `Exists`.
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub operator: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub value: String,
    /// Empty: every effect.
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub effect: String,
    /// How long the pod may keep a device tainted `NoExecute` (read by the eviction
    /// controller; none: forever).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub toleration_seconds: Option<i64>,
}

/// `resourceclaim.ToleratesTaint`: the effect matches (an empty one matches all), the key
/// matches (an empty one matches all, with `Exists`), and the value is equal (`Equal` or no
/// operator) or anything (`Exists`); an unknown operator tolerates nothing.
pub fn tolerates_taint(toleration: &DeviceToleration, taint: &DeviceTaint) -> bool {
    if !toleration.effect.is_empty() && toleration.effect != taint.effect {
        return false;
    }
    if !toleration.key.is_empty() && toleration.key != taint.key {
        return false;
    }
    match toleration.operator.as_str() {
        "" | OP_EQUAL => toleration.value == taint.value,
        OP_EXISTS => true,
        _ => false,
    }
}

/// The API server's defaulting (`+default="Equal"` on `DeviceToleration.Operator`): an
/// empty operator becomes `Equal`.
pub fn default_tolerations(tolerations: &mut [DeviceToleration]) {
    for t in tolerations {
        if t.operator.is_empty() {
            t.operator = OP_EQUAL.to_string();
        }
    }
}

/// upstream `validateLabelValue` (there is no `metav1validation.ValidateLabelValue`).
fn validate_label_value(errs: &mut FieldErrors, field: &str, value: &str) {
    for m in is_valid_label_value(value) {
        errs.push(FieldError::invalid(field, quote(value), &m));
    }
}

fn too_many(field: &str, n: usize, max: usize) -> FieldError {
    FieldError::new(
        field,
        format!("Too many: {n}: must have at most {max} items"),
    )
}

/// A device's `taints` at path `f` (`spec.devices[i].taints`): at most 16, each with
/// `validateDeviceTaint` (a key that is a label name, a label value, a known effect).
pub fn validate_device_taints(errs: &mut FieldErrors, f: &str, taints: &[DeviceTaint]) {
    if taints.len() > DEVICE_TAINTS_MAX_LENGTH {
        errs.push(too_many(f, taints.len(), DEVICE_TAINTS_MAX_LENGTH));
    }
    for (i, t) in taints.iter().enumerate() {
        let tf = format!("{f}[{i}]");
        errs.0
            .extend(validate_label_name(&t.key, &format!("{tf}.key")));
        if !t.value.is_empty() {
            validate_label_value(errs, &format!("{tf}.value"), &t.value);
        }
        if t.effect.is_empty() {
            errs.push(FieldError::required(format!("{tf}.effect"), ""));
        } else if !EFFECTS.contains(&t.effect.as_str()) {
            errs.push(FieldError::not_supported(
                format!("{tf}.effect"),
                &t.effect,
                &EFFECTS,
            ));
        }
    }
}

/// `ResourceSliceMaxDevicesWithTaintsOrConsumesCounters` (the taints half): a slice where some
/// device has taints holds at most 64 devices. `f` is `spec.devices`.
pub fn validate_tainted_slice_size(errs: &mut FieldErrors, f: &str, n: usize, tainted: bool) {
    if tainted && n > RESOURCE_SLICE_MAX_DEVICES_WITH_TAINTS {
        errs.push(too_many(f, n, RESOURCE_SLICE_MAX_DEVICES_WITH_TAINTS));
    }
}

/// A request's `tolerations` at path `f` (`…exactly.tolerations`,
/// `…firstAvailable[j].tolerations`), already defaulted: at most 16, each with
/// `validateDeviceToleration`.
pub fn validate_device_tolerations(
    errs: &mut FieldErrors,
    f: &str,
    tolerations: &[DeviceToleration],
) {
    if tolerations.len() > DEVICE_TOLERATIONS_MAX_LENGTH {
        errs.push(too_many(
            f,
            tolerations.len(),
            DEVICE_TOLERATIONS_MAX_LENGTH,
        ));
    }
    for (i, t) in tolerations.iter().enumerate() {
        let tf = format!("{f}[{i}]");
        if !t.key.is_empty() {
            errs.0
                .extend(validate_label_name(&t.key, &format!("{tf}.key")));
        }
        match t.operator.as_str() {
            OP_EXISTS => {
                if !t.value.is_empty() {
                    errs.push(FieldError::invalid(
                        format!("{tf}.value"),
                        quote(&t.value),
                        "must be empty for operator `Exists`",
                    ));
                }
            }
            OP_EQUAL => validate_label_value(errs, &format!("{tf}.value"), &t.value),
            "" => errs.push(FieldError::required(format!("{tf}.operator"), "")),
            other => errs.push(FieldError::not_supported(
                format!("{tf}.operator"),
                other,
                &OPERATORS,
            )),
        }
        if !t.effect.is_empty() && !EFFECTS.contains(&t.effect.as_str()) {
            errs.push(FieldError::not_supported(
                format!("{tf}.effect"),
                &t.effect,
                &EFFECTS,
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taint(key: &str, value: &str, effect: &str) -> DeviceTaint {
        DeviceTaint {
            key: key.into(),
            value: value.into(),
            effect: effect.into(),
            time_added: None,
        }
    }

    fn tol(key: &str, op: &str, value: &str, effect: &str) -> DeviceToleration {
        DeviceToleration {
            key: key.into(),
            operator: op.into(),
            value: value.into(),
            effect: effect.into(),
            toleration_seconds: None,
        }
    }

    fn text(errs: &FieldErrors) -> String {
        errs.0
            .iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// `TestToleratesTaint`'s rules: effect, key, then operator.
    #[test]
    fn toleration_matching_as_upstream() {
        let t = taint("example.com/k", "v", EFFECT_NO_SCHEDULE);
        assert!(tolerates_taint(&tol("example.com/k", "Equal", "v", ""), &t));
        assert!(tolerates_taint(
            &tol("example.com/k", "", "v", "NoSchedule"),
            &t
        ));
        assert!(!tolerates_taint(
            &tol("example.com/k", "Equal", "w", ""),
            &t
        ));
        assert!(!tolerates_taint(
            &tol("example.com/k", "Equal", "v", "NoExecute"),
            &t
        ));
        assert!(tolerates_taint(&tol("example.com/k", "Exists", "", ""), &t));
        assert!(!tolerates_taint(&tol("other", "Exists", "", ""), &t));
        // An empty key with Exists tolerates every taint.
        assert!(tolerates_taint(&tol("", "Exists", "", ""), &t));
        // An unknown operator tolerates nothing.
        assert!(!tolerates_taint(&tol("example.com/k", "Gt", "v", ""), &t));
    }

    #[test]
    fn taints_validated_as_the_api_server() {
        let mut errs = FieldErrors::default();
        validate_device_taints(
            &mut errs,
            "spec.devices[0].taints",
            &[
                taint("example.com/ok", "fine", EFFECT_NONE),
                taint("", "", ""),
                taint("a/b/c", "not a value!", "Evict"),
            ],
        );
        let t = text(&errs);
        assert!(
            t.contains("spec.devices[0].taints[1].key: Invalid value: \"\""),
            "{t}"
        );
        assert!(
            t.contains("spec.devices[0].taints[1].effect: Required value"),
            "{t}"
        );
        assert!(
            t.contains("spec.devices[0].taints[2].key: Invalid value: \"a/b/c\""),
            "{t}"
        );
        assert!(
            t.contains("spec.devices[0].taints[2].value: Invalid value: \"not a value!\""),
            "{t}"
        );
        assert!(
            t.contains("spec.devices[0].taints[2].effect: Unsupported value: \"Evict\": supported values: \"NoExecute\", \"NoSchedule\", \"None\""),
            "{t}"
        );
        assert!(!t.contains("taints[0]"), "{t}");
        let mut errs = FieldErrors::default();
        let many: Vec<DeviceTaint> = (0..17)
            .map(|i| taint(&format!("k{i}"), "", EFFECT_NO_SCHEDULE))
            .collect();
        validate_device_taints(&mut errs, "spec.devices[0].taints", &many);
        assert_eq!(
            text(&errs),
            "spec.devices[0].taints: Too many: 17: must have at most 16 items"
        );
    }

    #[test]
    fn tolerations_validated_as_the_api_server() {
        let mut ts = vec![
            tol("example.com/k", "", "v", ""),
            tol("", "Exists", "", ""),
            tol("k", "Exists", "v", ""),
            tol("k", "Gt", "", "NoSchedule"),
            tol("k", "Equal", "", "Evict"),
        ];
        default_tolerations(&mut ts);
        assert_eq!(ts[0].operator, OP_EQUAL);
        let mut errs = FieldErrors::default();
        validate_device_tolerations(
            &mut errs,
            "spec.devices.requests[0].exactly.tolerations",
            &ts,
        );
        let t = text(&errs);
        let f = "spec.devices.requests[0].exactly.tolerations";
        assert!(!t.contains(&format!("{f}[0]")), "{t}");
        assert!(!t.contains(&format!("{f}[1]")), "{t}");
        assert!(
            t.contains(&format!(
                "{f}[2].value: Invalid value: \"v\": must be empty for operator `Exists`"
            )),
            "{t}"
        );
        assert!(t.contains(&format!("{f}[3].operator: Unsupported value: \"Gt\": supported values: \"Equal\", \"Exists\"")), "{t}");
        assert!(
            t.contains(&format!("{f}[4].effect: Unsupported value: \"Evict\"")),
            "{t}"
        );
        // Without defaulting, a missing operator is required.
        let mut errs = FieldErrors::default();
        validate_device_tolerations(&mut errs, "t", &[tol("k", "", "", "")]);
        assert_eq!(text(&errs), "t[0].operator: Required value");
    }

    #[test]
    fn a_tainted_slice_holds_at_most_64_devices() {
        let mut errs = FieldErrors::default();
        validate_tainted_slice_size(&mut errs, "spec.devices", 65, false);
        assert!(errs.is_empty());
        validate_tainted_slice_size(&mut errs, "spec.devices", 64, true);
        assert!(errs.is_empty());
        validate_tainted_slice_size(&mut errs, "spec.devices", 65, true);
        assert_eq!(
            text(&errs),
            "spec.devices: Too many: 65: must have at most 64 items"
        );
    }
}
