//! DRADeviceBindingConditions (KEP-5007, beta and on by default in v1.36): devices whose
//! ResourceSlice entry lists `bindingConditions` are allocated like any other (upstream
//! `isSelectable` only refuses them with the gate off), their conditions are copied into the
//! allocation result, `bindsToNode` pins the allocation to the node (`createNodeSelector`),
//! and PreBind then waits until the driver reports every binding condition True in the
//! claim's `status.devices[].conditions` (`isClaimReadyForBinding`, `isPodReadyForBinding`),
//! fails when a binding failure condition is True, and gives up after `bindingTimeout`
//! (DynamicResourcesArgs, default 600 s). The wait itself is asynchronous in the engine
//! (`ksim_engine::sim::dra_binding`), as upstream's `wait.PollUntilContextTimeout` in PreBind
//! runs in the binding goroutine.
//!
//! Upstream gates the behaviour on DRADeviceBindingConditions *and*
//! DRAResourceClaimDeviceStatus (`AllocatorFeatures`: `DeviceBindingAndStatus`); so does ksim
//! ([`super::allocator_features`], [`binding_timeout`]).

use std::time::Duration;

use ksim_api::resource::binding_conditions::{
    allocated_device_status, find_condition, is_condition_true, CONDITION_TRUE,
};
use ksim_api::resource::{DeviceRequestAllocationResult, ResourceClaim, ResourceSlice};

use super::index::DraIndex;

/// `DynamicResourcesBindingTimeoutDefault`.
pub const BINDING_TIMEOUT_DEFAULT: Duration = Duration::from_secs(600);
/// PreBind's poll interval (`wait.PollUntilContextTimeout(ctx, 5*time.Second, ...)`).
pub const BINDING_POLL_INTERVAL: Duration = Duration::from_secs(5);
/// PreBind's error when the timeout passes first (upstream turns `context.DeadlineExceeded`
/// into this text).
pub const BINDING_TIMEOUT_MESSAGE: &str = "device binding timeout";

/// The allocation result's copy of the chosen device's binding conditions (only with the gate
/// on, as upstream's `Allocate` copies them only then).
pub(super) fn result_conditions(
    index: &DraIndex,
    slice: &ResourceSlice,
    device: u32,
) -> DeviceRequestAllocationResult {
    match slice.spec.devices.get(device as usize) {
        Some(d) if index.binding_conditions => DeviceRequestAllocationResult {
            binding_conditions: d.binding_conditions.clone(),
            binding_failure_conditions: d.binding_failure_conditions.clone(),
            ..Default::default()
        },
        _ => DeviceRequestAllocationResult::default(),
    }
}

/// `createNodeSelector`: a device with `bindsToNode: true` restricts the allocation to the
/// node it was allocated for, as a node-local slice does.
pub(super) fn binds_to_node(slice: &ResourceSlice, device: usize) -> bool {
    slice
        .spec
        .devices
        .get(device)
        .is_some_and(|d| d.binds_to_node == Some(true))
}

/// `hasBindingConditions` for one claim: some allocated device has binding conditions.
pub fn has_binding_conditions(claim: &ResourceClaim) -> bool {
    claim.status.allocation.as_ref().is_some_and(|a| {
        a.devices
            .results
            .iter()
            .any(|r| !r.binding_conditions.is_empty())
    })
}

/// `isClaimReadyForBinding`: `Ok(true)` when every allocated device's binding conditions are
/// True in `status.devices` (a claim without binding conditions is ready), `Ok(false)` while
/// some is not (or the device has no status yet), `Err` with upstream's text when a binding
/// failure condition is True. An unallocated claim is not ready.
pub fn is_claim_ready_for_binding(claim: &ResourceClaim) -> Result<bool, String> {
    let Some(a) = &claim.status.allocation else {
        return Ok(false);
    };
    for r in &a.devices.results {
        if r.binding_conditions.is_empty() {
            continue;
        }
        let Some(st) = allocated_device_status(claim, r) else {
            return Ok(false);
        };
        for c in &r.binding_failure_conditions {
            if let Some(f) = find_condition(&st.conditions, c) {
                if f.status == CONDITION_TRUE {
                    return Err(format!(
                        "claim {} binding failed: reason={}, message={}",
                        claim.metadata.name,
                        f.reason,
                        go_quote(&f.message)
                    ));
                }
            }
        }
        if !r
            .binding_conditions
            .iter()
            .all(|c| is_condition_true(&st.conditions, c))
        {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Filter's check of an allocated claim (upstream `Filter`, with both gates on): its binding
/// failed (a failure condition is True), or it is not ready and PreBind's wait for it timed
/// out (`isClaimTimeout`). Such a claim is unavailable on every node, so that PostFilter
/// deallocates it and the pod can try other devices.
pub(super) fn binding_blocked(
    claim: &ResourceClaim,
    timed_out: &std::collections::BTreeSet<String>,
) -> bool {
    match is_claim_ready_for_binding(claim) {
        Err(_) => true,
        Ok(false) => timed_out.contains(&claim.key()),
        Ok(true) => false,
    }
}

/// What PreBind's poll (`isPodReadyForBinding`) finds for the pod's claims.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// Every claim is ready: the pod goes on to Bind.
    Ready,
    /// Some claim is not ready yet: poll again.
    Waiting,
    /// A claim is gone or a binding failure condition is True: PreBind fails with this text.
    Failed(String),
}

/// `isPodReadyForBinding` over the pod's claims as the cluster holds them now (`None`: the
/// claim is gone, upstream's lister error).
pub fn pod_readiness<'a>(
    claims: impl IntoIterator<Item = (&'a str, Option<&'a ResourceClaim>)>,
) -> Readiness {
    for (key, claim) in claims {
        let Some(claim) = claim else {
            let name = key.rsplit('/').next().unwrap_or(key);
            return Readiness::Failed(format!(
                "resourceclaim.resource.k8s.io {} not found",
                go_quote(name)
            ));
        };
        match is_claim_ready_for_binding(claim) {
            Err(e) => return Readiness::Failed(e),
            Ok(false) => return Readiness::Waiting,
            Ok(true) => {}
        }
    }
    Readiness::Ready
}

/// `bindingTimeout` of the profile's DynamicResourcesArgs, as upstream's
/// `ValidateDynamicResourcesArgs` and defaulting take it: at least 1 s when
/// DRADeviceBindingConditions and DRAResourceClaimDeviceStatus are on (default 600 s),
/// forbidden when either is off (`None` then: no wait).
pub fn binding_timeout(
    args: Option<&serde_json::Value>,
    gates_on: bool,
) -> Result<Option<Duration>, String> {
    let raw = args
        .and_then(|a| a.get("bindingTimeout"))
        .filter(|v| !v.is_null());
    if !gates_on {
        return match raw {
            Some(_) => Err("bindingTimeout: Forbidden: DRADeviceBindingConditions or DRAResourceClaimDeviceStatus feature gate is disabled".into()),
            None => Ok(None),
        };
    }
    let Some(v) = raw else {
        return Ok(Some(BINDING_TIMEOUT_DEFAULT));
    };
    let text = v.as_str().ok_or_else(|| {
        format!("bindingTimeout: Invalid value: {v}: must be a duration string such as \"600s\"")
    })?;
    let d = ksim_api::config::parse_go_duration(text).ok_or_else(|| {
        format!(
            "bindingTimeout: Invalid value: {text:?}: must be a duration string such as \"600s\""
        )
    })?;
    if d < Duration::from_secs(1) {
        return Err(format!(
            "bindingTimeout: Invalid value: {text:?}: must be at least 1 second"
        ));
    }
    Ok(Some(d))
}

/// Go's `%q` for the texts upstream formats with it (printable ASCII kept, `"` and `\`
/// escaped).
fn go_quote(s: &str) -> String {
    format!("{s:?}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn claim(results: serde_json::Value, devices: serde_json::Value) -> ResourceClaim {
        serde_json::from_value(json!({
            "metadata": {"name": "claim-0", "namespace": "default"},
            "status": {"allocation": {"devices": {"results": results}}, "devices": devices},
        }))
        .unwrap()
    }

    fn result(conds: &[&str], failure: &[&str]) -> serde_json::Value {
        json!({"request": "req-0", "driver": "driver-a", "pool": "pool-1", "device": "dev-1",
            "bindingConditions": conds, "bindingFailureConditions": failure})
    }

    fn status(conds: serde_json::Value) -> serde_json::Value {
        json!([{"driver": "driver-a", "pool": "pool-1", "device": "dev-1", "conditions": conds}])
    }

    /// `isClaimReadyForBinding`: no conditions → ready; no device status → not ready; all
    /// True → ready; one not True → not ready; a failure condition True → upstream's error.
    #[test]
    fn claim_readiness() {
        let none = claim(json!([result(&[], &[])]), json!([]));
        assert_eq!(is_claim_ready_for_binding(&none), Ok(true));
        let waiting = claim(json!([result(&["attached"], &["failed"])]), json!([]));
        assert_eq!(is_claim_ready_for_binding(&waiting), Ok(false));
        let ready = claim(
            json!([result(&["attached"], &["failed"])]),
            status(json!([{"type": "attached", "status": "True"}])),
        );
        assert_eq!(is_claim_ready_for_binding(&ready), Ok(true));
        let half = claim(
            json!([result(&["attached", "ready"], &["failed"])]),
            status(
                json!([{"type": "attached", "status": "True"}, {"type": "ready", "status": "False"}]),
            ),
        );
        assert_eq!(is_claim_ready_for_binding(&half), Ok(false));
        let failed = claim(
            json!([result(&["attached"], &["failed"])]),
            status(
                json!([{"type": "failed", "status": "True", "reason": "NoFabric", "message": "no \"path\""}]),
            ),
        );
        assert_eq!(
            is_claim_ready_for_binding(&failed),
            Err(r#"claim claim-0 binding failed: reason=NoFabric, message="no \"path\"""#.into())
        );
        let mut unallocated = ready.clone();
        unallocated.status.allocation = None;
        assert_eq!(is_claim_ready_for_binding(&unallocated), Ok(false));
        assert!(has_binding_conditions(&ready));
        assert!(!has_binding_conditions(&none));
    }

    #[test]
    fn pod_readiness_stops_at_the_first_claim_not_ready() {
        let ready = claim(
            json!([result(&["attached"], &["failed"])]),
            status(json!([{"type": "attached", "status": "True"}])),
        );
        let waiting = claim(json!([result(&["attached"], &["failed"])]), json!([]));
        assert_eq!(
            pod_readiness([("default/a", Some(&ready)), ("default/b", Some(&ready))]),
            Readiness::Ready
        );
        assert_eq!(
            pod_readiness([("default/a", Some(&ready)), ("default/b", Some(&waiting))]),
            Readiness::Waiting
        );
        assert_eq!(
            pod_readiness([("default/a", None), ("default/b", Some(&ready))]),
            Readiness::Failed("resourceclaim.resource.k8s.io \"a\" not found".into())
        );
    }

    /// `ValidateDynamicResourcesArgs` on `bindingTimeout`, and its default.
    #[test]
    fn binding_timeout_args() {
        assert_eq!(
            binding_timeout(None, true),
            Ok(Some(Duration::from_secs(600)))
        );
        assert_eq!(
            binding_timeout(Some(&json!({"bindingTimeout": "90s"})), true),
            Ok(Some(Duration::from_secs(90)))
        );
        assert_eq!(
            binding_timeout(Some(&json!({"bindingTimeout": "500ms"})), true),
            Err("bindingTimeout: Invalid value: \"500ms\": must be at least 1 second".into())
        );
        assert_eq!(binding_timeout(None, false), Ok(None));
        assert!(
            binding_timeout(Some(&json!({"bindingTimeout": "60s"})), false)
                .unwrap_err()
                .contains("feature gate is disabled")
        );
    }
}
