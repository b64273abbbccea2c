//! Upstream's `TestPlugin` rows for DRADeviceTaints (see `plugin_table.rs` for how rows are
//! driven and compared): `tainted-device-disabled` and `tainted-device-enabled`, with
//! `taintDevices(workerNodeSlice)` (every device gets upstream's `deviceTaint`:
//! `taint-key=taint-value:NoSchedule`).

use ksim_api::resource::{DeviceTaint, ResourceSlice};

use super::allocator::Features;
use super::plugin_table::{
    allocated, allocated_claim, check_steps, check_stored, cmp_all, device_class, pending_claim,
    reserve, run, stored_form, worker_node_slice, Case, CLAIM, W,
};

/// `taintDevices(slice)`.
fn taint_devices(mut slice: ResourceSlice) -> ResourceSlice {
    for d in &mut slice.spec.devices {
        d.taints.push(DeviceTaint {
            key: "taint-key".into(),
            value: "taint-value".into(),
            effect: "NoSchedule".into(),
            time_added: None,
        });
    }
    slice
}

fn case(device_taints: bool) -> Case {
    let base = Case::default();
    Case {
        features: Features {
            device_taints,
            ..base.features
        },
        claims: vec![pending_claim()],
        classes: vec![device_class()],
        slices: vec![taint_devices(worker_node_slice())],
        ..base
    }
}

/// `tainted-device-disabled`: with the gate off the tainted device is allocated as any other.
#[test]
fn tainted_device_disabled() {
    let r = run(case(false));
    check_steps(
        &r,
        &[
            ("PreEnqueue", W::Ok),
            ("PreFilter", W::Ok),
            ("Filter/worker", W::Ok),
            ("Reserve", W::Ok),
            ("PreBind", W::Ok),
        ],
    );
    assert_eq!(
        cmp_all(&r.in_flight_after_reserve),
        cmp_all(&[stored_form(allocated_claim())])
    );
    check_stored(
        &r,
        &[(CLAIM, |c| reserve(allocated(c, &[("req-1", "instance-1")])))],
    );
}

/// `tainted-device-enabled`: the only device's taint is not tolerated.
#[test]
fn tainted_device_enabled() {
    let r = run(case(true));
    check_steps(
        &r,
        &[
            ("PreEnqueue", W::Ok),
            ("PreFilter", W::Ok),
            ("Filter/worker", W::Msg("cannot allocate all claims")),
            ("PostFilter", W::Msg("still not schedulable")),
        ],
    );
    check_stored(&r, &[]);
}
