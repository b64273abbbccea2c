//! DRAExtendedResource (KEP-5004, beta and on by default in v1.36): a DeviceClass may name an
//! extended resource (`spec.extendedResourceName`), and a pod's container request of that
//! resource, or of the class's implicit `deviceclass.resource.kubernetes.io/<class>`, can be
//! served by DRA devices of the class on nodes that do not advertise it. The scheduler creates
//! one claim for the pod and records it in `status.extendedResourceClaimStatus`.

use serde::{Deserialize, Serialize};

use crate::validation::{FieldError, FieldErrors};

/// `resourceapi.ResourceDeviceClassPrefix`: the implicit extended resource name of a class is
/// this prefix and the class name.
pub const RESOURCE_DEVICE_CLASS_PREFIX: &str = "deviceclass.resource.kubernetes.io/";

/// `resourceapi.ExtendedResourceClaimAnnotation`: set to `"true"` on the claim the scheduler
/// creates for a pod's extended resources.
pub const EXTENDED_RESOURCE_CLAIM_ANNOTATION: &str =
    "resource.kubernetes.io/extended-resource-claim";

/// `v1.PodExtendedResourceClaimStatus`: the claim that serves a pod's extended resources, and
/// which container's request of which resource maps to which device request of it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodExtendedResourceClaimStatus {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub request_mappings: Vec<ContainerExtendedResourceRequest>,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub resource_claim_name: String,
}

/// `v1.ContainerExtendedResourceRequest`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ContainerExtendedResourceRequest {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub container_name: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub resource_name: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub request_name: String,
}

/// `v1helper.IsExtendedResourceName`: not native (it has a `/` and is outside
/// `kubernetes.io/`), not prefixed `requests.`, and `requests.<name>` is a qualified name.
pub fn is_extended_resource_name(name: &str) -> bool {
    let native = !name.contains('/') || name.contains("kubernetes.io/");
    if native || name.starts_with("requests.") {
        return false;
    }
    crate::validation::is_qualified_name(&format!("requests.{name}")).is_empty()
}

/// `validateDeviceClassSpec`'s check of `extendedResourceName` (upstream does not require it
/// to be unique across classes: the scheduler prefers the newest class, then the lowest name).
pub(super) fn validate_extended_resource_name(errs: &mut FieldErrors, field: &str, name: &str) {
    if !is_extended_resource_name(name) {
        errs.push(FieldError::invalid(
            field,
            name,
            "must be a valid extended resource name",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extended_resource_names_as_upstream() {
        // `v1helper.IsExtendedResourceName` (helpers_test.go `TestIsExtendedResourceName`
        // kinds of input): domain-prefixed names outside kubernetes.io pass.
        assert!(is_extended_resource_name("example.com/gpu"));
        assert!(is_extended_resource_name("nvidia.com/gpu"));
        for bad in [
            "gpu",
            "cpu",
            "kubernetes.io/gpu",
            "deviceclass.resource.kubernetes.io/gpu",
            "requests.example.com/gpu",
            "example.com/",
            "example.com/-gpu",
            "/gpu",
        ] {
            assert!(!is_extended_resource_name(bad), "{bad}");
        }
    }

    #[test]
    fn the_pod_status_reads_and_writes_upstream_json() {
        let s: PodExtendedResourceClaimStatus = serde_json::from_str(
            r#"{"resourceClaimName":"p-extended-resources-x2b4c","requestMappings":[{"containerName":"c","resourceName":"example.com/gpu","requestName":"container-0-request-0"}]}"#,
        )
        .unwrap();
        assert_eq!(s.request_mappings[0].request_name, "container-0-request-0");
        let back = serde_json::to_string(&s).unwrap();
        assert!(back.contains("\"resourceClaimName\":\"p-extended-resources-x2b4c\""));
    }
}
