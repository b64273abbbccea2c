//! The names and values of device attributes and capacities in a ResourceSlice (upstream
//! `pkg/apis/resource/validation`: `validateMap` with `attributeAndCapacityMaxKeyLength`,
//! `validateQualifiedName`, `validateCIdentifier`, `validateDriverName`, and the string
//! attribute's `DeviceAttributeMaxValueLength`). They are also the bounds the CEL cost
//! estimate assumes of a device (`cel_cost`).

use crate::validation::{is_dns1123_subdomain, quote, FieldError, FieldErrors};

/// `resource.DeviceMaxIDLength`.
pub const DEVICE_MAX_ID_LENGTH: usize = 32;
/// `resource.DeviceMaxDomainLength` (= `DriverNameMaxLength`).
pub const DEVICE_MAX_DOMAIN_LENGTH: usize = 63;
/// `resource.DeviceAttributeMaxValueLength`.
pub const DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH: usize = 64;
/// `attributeAndCapacityMaxKeyLength`: domain, slash, identifier.
const MAX_KEY_LENGTH: usize = DEVICE_MAX_DOMAIN_LENGTH + 1 + DEVICE_MAX_ID_LENGTH;

/// `field.TooLong`.
fn too_long(field: &str, max: usize) -> FieldError {
    FieldError::new(field, format!("Too long: may not be more than {max} bytes"))
}

/// A key of `attributes` or `capacity` (`validateMap`'s key checks, `validateQualifiedName`).
pub fn validate_qualified_name(errs: &mut FieldErrors, field: &str, name: &str) {
    if name.len() > MAX_KEY_LENGTH {
        errs.push(too_long(field, MAX_KEY_LENGTH));
    }
    if name.is_empty() {
        errs.push(FieldError::required(field, "name required"));
        return;
    }
    let parts: Vec<&str> = name.split('/').collect();
    match parts.as_slice() {
        [id] => validate_c_identifier(errs, field, id),
        [domain, id] => {
            if domain.is_empty() {
                errs.push(FieldError::required(field, "the domain must not be empty"));
            } else {
                if domain.len() > DEVICE_MAX_DOMAIN_LENGTH {
                    errs.push(too_long(field, DEVICE_MAX_DOMAIN_LENGTH));
                }
                for m in is_dns1123_subdomain(&domain.to_lowercase()) {
                    errs.push(FieldError::invalid(field, quote(domain), &m));
                }
            }
            if id.is_empty() {
                errs.push(FieldError::required(field, "the name must not be empty"));
            } else {
                validate_c_identifier(errs, field, id);
            }
        }
        _ => errs.push(FieldError::invalid(
            field,
            quote(name),
            "must be either a C identifier or a domain and a C identifier separated by a slash",
        )),
    }
}

/// `validateCIdentifier` (`IsCIdentifier`).
fn validate_c_identifier(errs: &mut FieldErrors, field: &str, id: &str) {
    if id.len() > DEVICE_MAX_ID_LENGTH {
        errs.push(too_long(field, DEVICE_MAX_ID_LENGTH));
    }
    let ok = id
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if !ok {
        errs.push(FieldError::invalid(
            field,
            quote(id),
            "a valid C identifier must start with alphabetic character or '_', followed by a \
             string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or \
             'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')",
        ));
    }
}

/// `validateDriverName`'s length bound (`DriverNameMaxLength`; the name itself is checked as a
/// DNS subdomain by the caller).
pub fn validate_driver_name_length(errs: &mut FieldErrors, field: &str, driver: &str) {
    if driver.len() > DEVICE_MAX_DOMAIN_LENGTH {
        errs.push(too_long(field, DEVICE_MAX_DOMAIN_LENGTH));
    }
}

/// A string attribute's value (`validateDeviceAttribute`).
pub fn validate_string_value(errs: &mut FieldErrors, field: &str, value: &str) {
    if value.len() > DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH {
        errs.push(too_long(field, DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(name: &str) -> String {
        let mut errs = FieldErrors::default();
        validate_qualified_name(&mut errs, "spec.devices[0].attributes[\"x\"]", name);
        text(&errs)
    }

    fn text(errs: &FieldErrors) -> String {
        if errs.0.is_empty() {
            String::new()
        } else {
            errs.to_string()
        }
    }

    #[test]
    fn qualified_names_as_upstream() {
        for ok in ["model", "_x1", "gpu.example.com/memory", &"a".repeat(32)] {
            assert_eq!(errors(ok), "", "{ok}");
        }
        assert!(errors(&"a".repeat(33)).contains("Too long: may not be more than 32 bytes"));
        assert!(errors("model-name").contains("a valid C identifier must start"));
        assert!(errors("1x").contains("a valid C identifier must start"));
        assert!(errors("/x").contains("Required value: the domain must not be empty"));
        assert!(errors("a.b/").contains("Required value: the name must not be empty"));
        assert!(errors("a/b/c").contains("must be either a C identifier or a domain"));
        assert!(errors("Bad_Domain/x").contains("Invalid value: \"Bad_Domain\""));
        let long_domain = format!("{}.com/x", "d".repeat(61));
        assert!(errors(&long_domain).contains("Too long: may not be more than 63 bytes"));
        let mut errs = FieldErrors::default();
        validate_string_value(&mut errs, "f.string", &"s".repeat(65));
        assert_eq!(
            errs.to_string(),
            "f.string: Too long: may not be more than 64 bytes"
        );
        let mut errs = FieldErrors::default();
        validate_string_value(&mut errs, "f.string", &"s".repeat(64));
        assert_eq!(text(&errs), "");
        let mut errs = FieldErrors::default();
        validate_driver_name_length(&mut errs, "spec.driver", &format!("{}.com", "d".repeat(60)));
        assert_eq!(
            text(&errs),
            "spec.driver: Too long: may not be more than 63 bytes"
        );
    }
}
