//! A ResourceClaim's `status` at validation (`ValidateResourceClaimStatusUpdate`'s checks on
//! what ksim reads): `reservedFor`, the allocation's results (with DRADeviceBindingConditions'
//! copies of the device's conditions, recorded with their gate) and the drivers' per-device
//! `status.devices`.

use crate::validation::{FieldError, FieldErrors};

use super::binding_conditions::{validate_device_binding_parameters, validate_device_statuses};
use super::gates::not_modelled;
use super::{ResourceClaimStatus, ALLOCATION_RESULTS_MAX_SIZE, RESERVED_FOR_MAX_SIZE};

pub(super) fn validate_claim_status(errs: &mut FieldErrors, st: &ResourceClaimStatus) {
    if st.reserved_for.len() > RESERVED_FOR_MAX_SIZE {
        errs.push(FieldError::new(
            "status.reservedFor",
            format!(
                "Too many: {}: must have at most {RESERVED_FOR_MAX_SIZE} items",
                st.reserved_for.len()
            ),
        ));
    }
    for (i, r) in st.reserved_for.iter().enumerate() {
        let f = format!("status.reservedFor[{i}]");
        if r.resource.is_empty() {
            errs.push(FieldError::required(format!("{f}.resource"), ""));
        }
        if r.name.is_empty() {
            errs.push(FieldError::required(format!("{f}.name"), ""));
        }
        if r.uid.is_empty() {
            errs.push(FieldError::required(format!("{f}.uid"), ""));
        }
    }
    if !st.reserved_for.is_empty() && st.allocation.is_none() {
        errs.push(FieldError::forbidden(
            "status.reservedFor",
            "may not be specified when `allocated` is not set",
        ));
    }
    if let Some(a) = &st.allocation {
        if a.devices.results.len() > ALLOCATION_RESULTS_MAX_SIZE {
            errs.push(FieldError::new(
                "status.allocation.devices.results",
                format!(
                    "Too many: {}: must have at most {ALLOCATION_RESULTS_MAX_SIZE} items",
                    a.devices.results.len()
                ),
            ));
        }
        for (i, r) in a.devices.results.iter().enumerate() {
            let f = format!("status.allocation.devices.results[{i}]");
            for (v, n) in [
                (&r.request, "request"),
                (&r.driver, "driver"),
                (&r.pool, "pool"),
                (&r.device, "device"),
            ] {
                if v.is_empty() {
                    errs.push(FieldError::required(format!("{f}.{n}"), ""));
                }
            }
            validate_device_binding_parameters(
                errs,
                &f,
                &r.binding_conditions,
                &r.binding_failure_conditions,
            );
            for (set, field) in [
                (!r.binding_conditions.is_empty(), "bindingConditions"),
                (
                    !r.binding_failure_conditions.is_empty(),
                    "bindingFailureConditions",
                ),
            ] {
                if set {
                    not_modelled(errs, &format!("{f}.{field}"), "DRADeviceBindingConditions");
                }
            }
        }
    }
    validate_device_statuses(errs, &st.devices);
}
