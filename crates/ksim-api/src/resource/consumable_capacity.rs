//! DRAConsumableCapacity's API fields and the API server's checks of their content (upstream
//! `pkg/apis/resource/validation`: `validateMultiAllocatableDeviceCapacity`,
//! `validateSingleAllocatableDeviceCapacity`, `validateRequestPolicy`,
//! `validateRequestPolicyValidValues`, `validateRequestPolicyRange`,
//! `validateRequestPolicyRangeStep`, and the `distinctAttribute` constraint's name).
//!
//! Quantities compare by their thousandths (ksim's precision).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Device, DeviceConstraint};
use crate::quantity::Quantity;
use crate::validation::{is_dns1123_subdomain, quote, FieldError, FieldErrors};

/// `CapacityRequestPolicyDiscreteMaxOptions`.
pub const CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS: usize = 10;

/// `CapacityRequirements`: per capacity name, the amount a request consumes on each device.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct CapacityRequirements {
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub requests: BTreeMap<String, Quantity>,
}

/// `CapacityRequestPolicy`: the default amount, and either discrete valid values or a range.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct CapacityRequestPolicy {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<Quantity>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub valid_values: Vec<Quantity>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub valid_range: Option<CapacityRequestPolicyRange>,
}

/// `CapacityRequestPolicyRange`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct CapacityRequestPolicyRange {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min: Option<Quantity>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max: Option<Quantity>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<Quantity>,
}

fn m(q: &Quantity) -> i64 {
    q.milli_value()
}

/// A device's capacities: a `requestPolicy` needs `allowMultipleAllocations: true`
/// (`validateSingleAllocatableDeviceCapacity`) and a consistent content
/// (`validateMultiAllocatableDeviceCapacity`). `f` is the device's path.
pub fn validate_device_consumable_capacity(errs: &mut FieldErrors, f: &str, d: &Device) {
    for (k, c) in &d.capacity {
        let Some(policy) = &c.request_policy else {
            continue;
        };
        let pf = format!("{f}.capacity[{}].requestPolicy", quote(k));
        if d.allow_multiple_allocations != Some(true) {
            errs.push(FieldError::forbidden(
                pf,
                "allowMultipleAllocations must be true",
            ));
            continue;
        }
        let Some(value) = &c.value else {
            continue;
        };
        validate_request_policy(errs, &pf, value, policy);
    }
}

/// `validateRequestPolicy`.
pub fn validate_request_policy(
    errs: &mut FieldErrors,
    f: &str,
    max: &Quantity,
    p: &CapacityRequestPolicy,
) {
    if !p.valid_values.is_empty() && p.valid_range.is_some() {
        errs.push(FieldError::forbidden(
            f,
            "exactly one policy can be specified, cannot specify \"validValues\" and \"validRange\" at the same time",
        ));
        return;
    }
    if !p.valid_values.is_empty() {
        let Some(default) = &p.default else {
            errs.push(FieldError::required(
                format!("{f}.default"),
                "required when validValues is defined",
            ));
            return;
        };
        let vf = format!("{f}.validValues");
        for i in 1..p.valid_values.len() {
            if m(&p.valid_values[i - 1]) > m(&p.valid_values[i]) {
                errs.push(FieldError::invalid(
                    format!("{vf}[{i}]"),
                    quote(p.valid_values[i].as_str()),
                    "values must be sorted in ascending order",
                ));
            }
        }
        if p.valid_values.len() > CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS {
            errs.push(FieldError::new(
                vf,
                format!(
                    "Too many: {}: must have at most {CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS} items",
                    p.valid_values.len()
                ),
            ));
            return;
        }
        let mut found = false;
        let mut seen = std::collections::BTreeSet::new();
        for (i, v) in p.valid_values.iter().enumerate() {
            if m(v) > m(max) {
                errs.push(FieldError::invalid(
                    format!("{vf}[{i}]"),
                    quote(v.as_str()),
                    &format!("option is larger than capacity value: {max}"),
                ));
            }
            if m(v) == m(default) {
                found = true;
            }
            // `quantityKey`: whole units.
            if !seen.insert(v.value()) {
                errs.push(FieldError::duplicate(format!("{vf}[{i}]"), v.as_str()));
            }
        }
        if !found {
            errs.push(FieldError::invalid(
                vf,
                quote(default.as_str()),
                "default value is not valid according to the requestPolicy",
            ));
        }
        return;
    }
    let Some(r) = &p.valid_range else {
        return;
    };
    let Some(default) = &p.default else {
        errs.push(FieldError::required(
            format!("{f}.default"),
            "required when validRange is defined",
        ));
        return;
    };
    let rf = format!("{f}.validRange");
    let Some(min) = &r.min else {
        errs.push(FieldError::required(
            format!("{rf}.min"),
            "required when validRange is defined",
        ));
        return;
    };
    if m(min) > m(max) {
        errs.push(FieldError::invalid(
            format!("{rf}.min"),
            quote(min.as_str()),
            &format!("min is larger than capacity value: {max}"),
        ));
    }
    if m(default) < m(min) {
        errs.push(FieldError::invalid(
            format!("{rf}.min"),
            quote(default.as_str()),
            &format!("default is less than min: {min}"),
        ));
    }
    if let Some(hi) = &r.max {
        if m(min) > m(hi) {
            errs.push(FieldError::invalid(
                format!("{rf}.max"),
                quote(min.as_str()),
                &format!("min is larger than max: {hi}"),
            ));
        }
        if m(hi) > m(max) {
            errs.push(FieldError::invalid(
                format!("{rf}.max"),
                quote(hi.as_str()),
                &format!("max is larger than capacity value: {max}"),
            ));
        }
        if m(default) > m(hi) {
            errs.push(FieldError::invalid(
                format!("{rf}.max"),
                quote(default.as_str()),
                &format!("default is more than max: {hi}"),
            ));
        }
    }
    if let Some(step) = &r.step {
        if m(min).saturating_add(m(step)) > m(max) {
            errs.push(FieldError::invalid(
                format!("{rf}.step"),
                quote(step.as_str()),
                &format!(
                    "one step {} is larger than capacity value: {max}",
                    Quantity::from_milli(m(min).saturating_add(m(step)))
                ),
            ));
        }
        let mut off_step = |v: &Quantity| {
            // `validateRequestPolicyRangeStep` works in whole units.
            let s = step.value();
            if s == 0 || (v.value() - min.value()) % s != 0 {
                errs.push(FieldError::invalid(
                    format!("{rf}.step"),
                    quote(v.as_str()),
                    &format!("value is not a multiple of a given step ({step}) from ({min})"),
                ));
            }
        };
        off_step(default);
        if let Some(hi) = &r.max {
            off_step(hi);
        }
    }
}

/// A request's `capacity.requests`: qualified names, amounts not negative. `f` is the
/// request's path.
pub fn validate_capacity_requirements(
    errs: &mut FieldErrors,
    f: &str,
    c: &Option<CapacityRequirements>,
) {
    let Some(c) = c else {
        return;
    };
    for (k, q) in &c.requests {
        let kf = format!("{f}.capacity.requests[{}]", quote(k));
        super::names::validate_qualified_name(errs, &kf, k);
        if q.milli_value() < 0 {
            errs.push(FieldError::invalid(
                kf,
                quote(q.as_str()),
                "must be greater than or equal to 0",
            ));
        }
    }
}

/// A constraint's `distinctAttribute`: a fully qualified name, and not together with
/// `matchAttribute`. `f` is the constraint's path.
pub fn validate_distinct_attribute(errs: &mut FieldErrors, f: &str, c: &DeviceConstraint) {
    let Some(a) = &c.distinct_attribute else {
        return;
    };
    if c.match_attribute.is_some() {
        errs.push(FieldError::invalid(
            f,
            "{`matchAttribute`, `distinctAttribute`}",
            "exactly one field must be set, not more",
        ));
    }
    let ok = match a.split_once('/') {
        Some((domain, name)) => {
            is_dns1123_subdomain(domain).is_empty()
                && !name.is_empty()
                && name.len() <= 64
                && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                && name.as_bytes()[0].is_ascii_alphabetic()
        }
        None => false,
    };
    if !ok {
        errs.push(FieldError::invalid(
            format!("{f}.distinctAttribute"),
            quote(a),
            "a fully qualified name must be a domain and a name separated by a slash",
        ));
    }
}

#[cfg(test)]
mod tests;
