//! The DRA feature gates at admission: a field that belongs to a gate is valid in itself (the
//! validation records it with its gate instead of refusing it), and the run decides
//! ([`check_gates`]): refused when the gate is off (upstream's API server would drop it) or
//! when ksim does not model the gate, admitted otherwise.

use super::{
    validate_device_class, validate_resource_claim, validate_resource_claim_template,
    validate_resource_slice,
};
use crate::validation::{FieldError, FieldErrors};

/// A field of a DRA feature gate (`what` starts with the gate's name): recorded, not refused;
/// [`check_gates`] decides once the run's gates are known.
pub(super) fn not_modelled(errs: &mut FieldErrors, field: &str, what: &str) {
    let name = what.split([' ', '(']).next().unwrap_or(what);
    let gate = crate::version::GATES
        .iter()
        .map(|(g, _)| *g)
        .find(|g| *g == name);
    let mut e = FieldError::forbidden(field, &format!("{what} is not modelled by ksim; refused rather than scheduled as if absent (see docs/dra.md)"));
    e.gate = gate;
    errs.push(e);
}

/// The validation errors of a DRA object that refuse it whatever the gates: the gated fields
/// (see [`not_modelled`]) are left to [`check_gates`].
pub fn without_gated(e: FieldErrors) -> Result<(), FieldErrors> {
    FieldErrors(e.0.into_iter().filter(|f| f.gate.is_none()).collect()).into_result()
}

/// The fields of `obj` that belong to a DRA feature gate, as validation found them.
pub fn gated_fields(obj: &crate::object::ApiObject) -> Vec<FieldError> {
    use crate::object::ApiObject;
    let r = match obj {
        ApiObject::DeviceClass(c) => validate_device_class(c),
        ApiObject::ResourceSlice(s) => validate_resource_slice(s),
        ApiObject::ResourceClaim(c) => validate_resource_claim(c),
        ApiObject::ResourceClaimTemplate(t) => validate_resource_claim_template(t),
        _ => Ok(()),
    };
    match r {
        Ok(()) => Vec::new(),
        Err(e) => e.0.into_iter().filter(|f| f.gate.is_some()).collect(),
    }
}

/// Admission of a DRA object's gated fields in a run: a field whose gate is off is refused
/// (upstream's API server drops it on write, `dropDisabledFields`; ksim refuses rather than
/// scheduling as if it were absent), and a field whose gate is on is refused unless ksim
/// models the gate (`modelled`).
pub fn check_gates(
    obj: &crate::object::ApiObject,
    gates: &crate::version::FeatureGates,
    modelled: &[&str],
) -> Result<(), FieldErrors> {
    let mut errs = FieldErrors::default();
    for mut f in gated_fields(obj) {
        let Some(gate) = f.gate else { continue };
        if !gates.enabled(gate) {
            f.body = format!(
                "Forbidden: the {gate} feature gate is off in this run (Kubernetes v{}): upstream's API server would drop this field; remove it or turn the gate on (featureGates)",
                gates.version()
            );
            errs.push(f);
        } else if !modelled.contains(&gate) {
            errs.push(f);
        }
    }
    errs.into_result()
}
