//! The allocator's shortcuts (`Prepared::quick_reject`, `Prepared::first_fit`) give the same
//! answer as the full backtracking search on random clusters: the same devices, the same
//! node selectors, the same error texts (CEL runtime errors, invalid pools included), also
//! with DRAPartitionableDevices on: devices consuming counters of their pool's counter set
//! (so that first fit would miss what backtracking finds) and per-device node selection; and
//! with DRADeviceTaints on or off (tainted devices, tolerating requests); and with
//! DRADeviceBindingConditions on or off (devices with binding conditions, some binding to
//! the node); and with
//! DRAConsumableCapacity on or off (devices with `allowMultipleAllocations` and a `mem`
//! capacity, some with a `requestPolicy`; dedicated devices with capacity; requests asking
//! for `mem` or not).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use ksim_api::resource::{DeviceClass, ResourceClaim, ResourceSlice};
use ksim_api::Node;
use proptest::prelude::*;
use serde_json::{json, Value};

use super::allocator::{allocate_once_with, DeviceId, Features};

/// One slice of node `node-1`'s pools: (pool, generation, resourceSliceCount, devices), each
/// device (name index, model: 0 none, 1 "a", 2 "b", counters taken: 0 none, else that many
/// units of its pool's `mem`; taint: 0 none, 1 NoSchedule, 2 NoExecute, 3 None).
type SliceSpec = (u8, u8, u8, Vec<(u8, u8, u8, u8)>);

/// `shared`: every other slice has `allNodes`; `per_device`: every other slice (from the first) has
/// `perDeviceNodeSelection`, its devices on node-2, node-1 or all nodes in turn; `counters`:
/// devices take counters, and each pool has a counter slice with 4 units; `binding`: devices
/// with an odd name index have binding conditions, those with a name index divisible by 3
/// `bindsToNode: true`; `capacity`: each device has a `mem` capacity of (name index mod 3 + 1) Gi, devices with an even name index
/// allow multiple allocations, `dev-0` and `dev-4` with a policy (default 1Gi, range from 1Gi
/// in steps of 1Gi).
fn slices(
    specs: &[SliceSpec],
    shared: bool,
    per_device: bool,
    counters: bool,
    binding: bool,
    capacity: bool,
) -> Vec<Arc<ResourceSlice>> {
    let mut out: Vec<Arc<ResourceSlice>> = specs
        .iter()
        .enumerate()
        .map(|(i, (pool, generation, count, devices))| {
            let devices: Vec<Value> = devices
                .iter()
                .enumerate()
                .map(|(k, (name, model, take, taint))| {
                    let mut d = json!({"name": format!("dev-{name}")});
                    if *model > 0 {
                        let m = if *model == 1 { "a" } else { "b" };
                        d["attributes"] = json!({"model": {"string": m}});
                    }
                    if *taint > 0 {
                        let e = ["NoSchedule", "NoExecute", "None"][*taint as usize - 1];
                        d["taints"] = json!([{"key": "k", "value": "v", "effect": e}]);
                    }
                    if binding && name % 2 == 1 {
                        d["bindingConditions"] = json!(["ready"]);
                        d["bindingFailureConditions"] = json!(["failed"]);
                    }
                    if binding && name % 3 == 0 {
                        d["bindsToNode"] = json!(true);
                    }
                    if capacity {
                        let mut mem = json!({"value": format!("{}Gi", name % 3 + 1)});
                        if name % 2 == 0 {
                            d["allowMultipleAllocations"] = json!(true);
                            if name % 4 == 0 {
                                mem["requestPolicy"] = json!({"default": "1Gi",
                                    "validRange": {"min": "1Gi", "step": "1Gi"}});
                            }
                        }
                        d["capacity"] = json!({"mem": mem});
                    }
                    if counters && *take > 0 {
                        d["consumesCounters"] = json!([{"counterSet": "set",
                            "counters": {"mem": {"value": take.to_string()}}}]);
                    }
                    if per_device && i % 2 == 0 {
                        match k % 3 {
                            0 => d["nodeName"] = json!("node-2"),
                            1 => d["nodeName"] = json!("node-1"),
                            _ => d["allNodes"] = json!(true),
                        }
                    }
                    d
                })
                .collect();
            let mut spec = json!({"driver": "driver-a",
                "pool": {"name": format!("pool-{pool}"), "generation": generation,
                         "resourceSliceCount": count},
                "devices": devices});
            if per_device && i % 2 == 0 {
                spec["perDeviceNodeSelection"] = json!(true);
            } else if shared && i % 2 == 1 {
                spec["allNodes"] = json!(true);
            } else {
                spec["nodeName"] = json!("node-1");
            }
            let v = json!({"metadata": {"name": format!("slice-{i}")}, "spec": spec});
            Arc::new(serde_json::from_value::<ResourceSlice>(v).unwrap())
        })
        .collect();
    if counters {
        for p in 0..3 {
            let v = json!({"metadata": {"name": format!("slice-counters-{p}")}, "spec": {
                "driver": "driver-a", "nodeName": "node-2",
                "pool": {"name": format!("pool-{p}"), "generation": 1, "resourceSliceCount": 2},
                "sharedCounters": [{"name": "set", "counters": {"mem": {"value": "4"}}}]}});
            out.push(Arc::new(
                serde_json::from_value::<ResourceSlice>(v).unwrap(),
            ));
        }
    }
    out.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    out
}

/// `mem`: 0 asks no capacity, else `mem` of (mem − 1) × 512Mi (0, 512Mi, 1Gi).
fn claim(count: u8, selector: u8, toleration: u8, mem: u8) -> Arc<ResourceClaim> {
    let mut exactly = json!({"deviceClassName": "class-a", "allocationMode": "ExactCount",
                             "count": count});
    // 1: a selector that fails with a runtime error on devices without a model.
    if selector == 1 {
        exactly["selectors"] =
            json!([{"cel": {"expression": "device.attributes[\"driver-a\"].model == \"a\""}}]);
    }
    if selector == 2 {
        exactly["selectors"] = json!([{"cel": {"expression":
            "!(\"model\" in device.attributes[\"driver-a\"]) || device.attributes[\"driver-a\"].model != \"b\""}}]);
    }
    // 1: tolerates NoSchedule taints of key `k`; 2: tolerates every taint.
    if toleration == 1 {
        exactly["tolerations"] =
            json!([{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]);
    }
    if toleration == 2 {
        exactly["tolerations"] = json!([{"operator": "Exists"}]);
    }
    if mem > 0 {
        exactly["capacity"] =
            json!({"requests": {"mem": format!("{}Mi", (u32::from(mem) - 1) * 512)}});
    }
    let mut c: ResourceClaim = serde_json::from_value(json!({
        "metadata": {"name": "claim-0", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "req-0", "exactly": exactly}]}}}))
    .unwrap();
    ksim_api::resource::default_claim_spec(&mut c.spec);
    Arc::new(c)
}

fn slice_spec() -> impl Strategy<Value = SliceSpec> {
    (
        0u8..3,
        1u8..3,
        1u8..3,
        prop::collection::vec((0u8..6, 0u8..3, 0u8..4, 0u8..4), 0..5),
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn shortcuts_answer_as_the_full_search(
        specs in prop::collection::vec(slice_spec(), 0..5),
        shared in any::<bool>(),
        allocated in prop::collection::vec((0u8..3, 0u8..6), 0..8),
        count in 1u8..4,
        selector in 0u8..3,
        partitionable in any::<bool>(),
        per_device in any::<bool>(),
        takes in any::<bool>(),
        toleration in 0u8..3,
        device_taints in any::<bool>(),
        binding in any::<bool>(),
        binding_on in any::<bool>(),
        consumable in any::<bool>(),
        capacity in any::<bool>(),
        mem in 0u8..4,
    ) {
        let slices = slices(
            &specs,
            shared,
            partitionable && per_device,
            partitionable && takes,
            binding,
            capacity,
        );
        let class: Arc<DeviceClass> = Arc::new(serde_json::from_value(json!({
            "metadata": {"name": "class-a"}, "spec": {"selectors": [
                {"cel": {"expression": "device.driver == \"driver-a\""}}]}})).unwrap());
        let classes: BTreeMap<String, Arc<DeviceClass>> =
            [("class-a".to_string(), class)].into_iter().collect();
        let allocated: BTreeSet<DeviceId> = allocated
            .iter()
            .map(|(p, d)| DeviceId {
                driver: "driver-a".into(),
                pool: format!("pool-{p}"),
                device: format!("dev-{d}"),
            })
            .collect();
        let node: Node = serde_json::from_value(json!({"metadata": {"name": "node-1"}})).unwrap();
        let claims = [claim(count, selector, toleration, mem)];
        let f = Features {
            partitionable_devices: partitionable,
            device_binding_conditions: binding_on,
            device_taints,
            consumable_capacity: consumable,
            ..Features::default()
        };
        let fast = allocate_once_with(f, &classes, &slices, &allocated, &claims, &node, true);
        let full = allocate_once_with(f, &classes, &slices, &allocated, &claims, &node, false);
        prop_assert_eq!(fast, full);
    }
}

/// The proptest's setting at one point: a per-device slice whose first device is for node-2.
#[test]
fn per_device_slice_first_device_elsewhere() {
    let slices = slices(
        &[(0, 1, 1, vec![(0, 0, 0, 0), (1, 0, 0, 0)])],
        false,
        true,
        false,
        false,
        false,
    );
    let class: Arc<DeviceClass> = Arc::new(
        serde_json::from_value(json!({"metadata": {"name": "class-a"}, "spec": {}})).unwrap(),
    );
    let classes: BTreeMap<String, Arc<DeviceClass>> =
        [("class-a".to_string(), class)].into_iter().collect();
    let node: Node = serde_json::from_value(json!({"metadata": {"name": "node-1"}})).unwrap();
    let claims = [claim(1, 0, 0, 0)];
    let f = Features {
        partitionable_devices: true,
        device_binding_conditions: false,
        ..Features::default()
    };
    let none = BTreeSet::new();
    let fast = allocate_once_with(f, &classes, &slices, &none, &claims, &node, true);
    let full = allocate_once_with(f, &classes, &slices, &none, &claims, &node, false);
    assert_eq!(fast, full);
    let got = fast.unwrap().unwrap();
    assert_eq!(got[0].devices.results[0].device, "dev-1");
}
