//! DRADeviceTaints in the allocator (upstream: the incubating allocator's
//! `taintPreventsAllocation` and `taintTolerated`, called from `allocateDevice`, and
//! `resourceclaim.ToleratesTaint`): a device cannot be allocated for a request unless the
//! request tolerates every taint of the device whose effect is `NoSchedule` or `NoExecute`.
//! Other effects (`None`, and any future one) prevent nothing. There is no exception for admin
//! access. The check is made only with the gate on ([`super::allocator::Features`]).

use ksim_api::resource::taints::{tolerates_taint, EFFECT_NO_EXECUTE, EFFECT_NO_SCHEDULE};
use ksim_api::resource::{Device, DeviceTaint, DeviceToleration};

use super::index::{DraIndex, HAS_TAINTS};

/// `taintTolerated`: some toleration of the request tolerates `taint`.
fn taint_tolerated(taint: &DeviceTaint, tolerations: &[DeviceToleration]) -> bool {
    tolerations.iter().any(|t| tolerates_taint(t, taint))
}

/// `taintPreventsAllocation`: a NoSchedule or NoExecute taint of `device` that no toleration
/// of the request tolerates.
pub(super) fn taint_prevents_allocation(device: &Device, tolerations: &[DeviceToleration]) -> bool {
    device.taints.iter().any(|taint| {
        matches!(
            taint.effect.as_str(),
            EFFECT_NO_SCHEDULE | EFFECT_NO_EXECUTE
        ) && !taint_tolerated(taint, tolerations)
    })
}

/// [`taint_prevents_allocation`] for device `d` of the index's slice `s`.
pub(super) fn untolerated(
    index: &DraIndex,
    s: u32,
    d: usize,
    tolerations: &[DeviceToleration],
) -> bool {
    // Most devices have no taint: the per-position flag spares reading the device.
    let pos = index.position(s, d) as usize;
    if index.flags.get(pos).is_some_and(|f| f & HAS_TAINTS == 0) {
        return false;
    }
    index.slices[s as usize]
        .spec
        .devices
        .get(d)
        .is_some_and(|device| taint_prevents_allocation(device, tolerations))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(taints: &[(&str, &str, &str)]) -> Device {
        Device {
            name: "d".into(),
            taints: taints
                .iter()
                .map(|(k, v, e)| DeviceTaint {
                    key: k.to_string(),
                    value: v.to_string(),
                    effect: e.to_string(),
                    time_added: None,
                })
                .collect(),
            ..Default::default()
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

    #[test]
    fn only_no_schedule_and_no_execute_prevent_allocation() {
        assert!(!taint_prevents_allocation(&device(&[]), &[]));
        assert!(taint_prevents_allocation(
            &device(&[("k", "v", "NoSchedule")]),
            &[]
        ));
        assert!(taint_prevents_allocation(
            &device(&[("k", "v", "NoExecute")]),
            &[]
        ));
        assert!(!taint_prevents_allocation(
            &device(&[("k", "v", "None")]),
            &[]
        ));
        assert!(!taint_prevents_allocation(
            &device(&[("k", "v", "Future")]),
            &[]
        ));
    }

    #[test]
    fn every_preventing_taint_must_be_tolerated() {
        let d = device(&[
            ("k", "a", "NoSchedule"),
            ("k", "b", "NoExecute"),
            ("x", "", "None"),
        ]);
        let ns = tol("k", "Equal", "a", "NoSchedule");
        let ne = tol("k", "Equal", "b", "NoExecute");
        assert!(taint_prevents_allocation(&d, std::slice::from_ref(&ns)));
        assert!(taint_prevents_allocation(&d, std::slice::from_ref(&ne)));
        assert!(!taint_prevents_allocation(&d, &[ns, ne]));
        assert!(!taint_prevents_allocation(
            &d,
            &[tol("k", "Exists", "", "")]
        ));
        assert!(!taint_prevents_allocation(&d, &[tol("", "Exists", "", "")]));
    }
}
