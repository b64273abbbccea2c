//! ksim's own DRAConsumableCapacity allocator cases, NOT upstream's: their inputs were written
//! from the incubating allocator's rules (`consumable_capacity.go`, `allocator_incubating.go`),
//! not read from upstream's `TestAllocator` table, so they are not facts from upstream; the
//! port of upstream's cases is still to do (see `allocator_table.rs`). Beyond `check`'s
//! comparison of devices, each shared result's `shareID` and `consumedCapacity` are checked,
//! and every case runs with and without the shortcuts.

use std::collections::BTreeSet;
use std::sync::Arc;

use ksim_api::resource::{AllocationResult, DeviceClass, ResourceClaim, ResourceSlice};
use serde_json::{json, Value};

use super::allocator::{allocate_once_with, Features};
use super::allocator_table::*;

const CC: Features = Features {
    admin_access: false,
    prioritized_list: true,
    consumable_capacity: true,
    ..NONE
};

/// A multi-allocatable device with capacity `mem` of `value` and an optional policy.
fn shared_dev(name: &str, value: &str, policy: Option<Value>) -> Value {
    let mut cap = json!({"value": value});
    if let Some(p) = policy {
        cap["requestPolicy"] = p;
    }
    json!({"name": name, "allowMultipleAllocations": true, "capacity": {"mem": cap}})
}

/// A request for `count` class-a devices consuming `mem` (none: no capacity request).
fn cap_req(name: &str, count: i64, mem: Option<&str>) -> Value {
    let mut r = req(name, "class-a", count);
    if let Some(m) = mem {
        r["exactly"]["capacity"] = json!({"requests": {"mem": m}});
    }
    r
}

fn one_slice(devs: Vec<Value>) -> Vec<Value> {
    vec![slice("slice-1", "node-1", "pool-1", A, devs)]
}

/// Runs `c` (both ways) and returns the allocations.
fn run(c: &Case) -> Result<Option<Vec<AllocationResult>>, String> {
    let classes = c
        .classes
        .iter()
        .map(|v| {
            let k: DeviceClass = serde_json::from_value(v.clone()).expect("class");
            (k.metadata.name.clone(), Arc::new(k))
        })
        .collect();
    let slices: Vec<Arc<ResourceSlice>> = c
        .slices
        .iter()
        .map(|v| Arc::new(serde_json::from_value(v.clone()).expect("slice")))
        .collect();
    let claims: Vec<Arc<ResourceClaim>> = c
        .claims
        .iter()
        .map(|v| {
            let mut k: ResourceClaim = serde_json::from_value(v.clone()).expect("claim");
            k.metadata.uid = format!("uid-{}", k.metadata.name);
            ksim_api::resource::default_claim_spec(&mut k.spec);
            Arc::new(k)
        })
        .collect();
    let none = BTreeSet::new();
    let fast = allocate_once_with(c.features, &classes, &slices, &none, &claims, &c.node, true);
    let full = allocate_once_with(
        c.features, &classes, &slices, &none, &claims, &c.node, false,
    );
    assert_eq!(fast, full, "shortcut and full search differ");
    fast
}

/// The devices and consumed `mem` (whole units; `None`: not shared) of claim `i`'s results.
fn shares(r: &[AllocationResult], i: usize) -> Vec<(String, Option<i64>)> {
    r[i].devices
        .results
        .iter()
        .map(|d| {
            (
                d.device.clone(),
                d.share_id
                    .as_ref()
                    .map(|_| d.consumed_capacity.get("mem").map_or(0, |q| q.value())),
            )
        })
        .collect()
}

fn case(claims: Vec<Value>, devs: Vec<Value>) -> Case {
    Case {
        features: CC,
        claims,
        slices: one_slice(devs),
        ..Default::default()
    }
}

fn s(d: &str, mem: i64) -> (String, Option<i64>) {
    (d.to_string(), Some(mem))
}

/// `consumable-capacity-multi-allocatable-device-without-policy-with-capacity-request`: two
/// claims share one device, each consuming what it asks.
#[test]
fn multi_allocatable_device_without_policy_with_capacity_request() {
    let c = case(
        vec![
            claim("claim-0", json!([]), vec![cap_req("req-0", 1, Some("4"))]),
            claim("claim-1", json!([]), vec![cap_req("req-0", 1, Some("4"))]),
        ],
        vec![shared_dev("device-1", "8", None)],
    );
    let r = run(&c).expect("no error").expect("allocated");
    assert_eq!(shares(&r, 0), vec![s("device-1", 4)]);
    assert_eq!(shares(&r, 1), vec![s("device-1", 4)]);
    let (a, b) = (&r[0].devices.results[0], &r[1].devices.results[0]);
    assert_ne!(a.share_id, b.share_id, "each allocation its own share id");
}

/// `consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request`:
/// without a request the whole capacity is consumed, so a second claim needs another device.
#[test]
fn multi_allocatable_device_without_policy_without_capacity_request() {
    let c = case(
        vec![
            claim("claim-0", json!([]), vec![cap_req("req-0", 1, None)]),
            claim("claim-1", json!([]), vec![cap_req("req-0", 1, None)]),
        ],
        vec![
            shared_dev("device-1", "8", None),
            shared_dev("device-2", "8", None),
        ],
    );
    let r = run(&c).expect("no error").expect("allocated");
    assert_eq!(shares(&r, 0), vec![s("device-1", 8)]);
    assert_eq!(shares(&r, 1), vec![s("device-2", 8)]);
}

/// `consumable-capacity-multi-allocatable-device-with-policy-without-capacity-request`: the
/// policy's default is consumed.
#[test]
fn multi_allocatable_device_with_policy_without_capacity_request() {
    let p = json!({"default": "2", "validRange": {"min": "1"}});
    let c = case(
        vec![claim("claim-0", json!([]), vec![cap_req("req-0", 1, None)])],
        vec![shared_dev("device-1", "8", Some(p))],
    );
    let r = run(&c).expect("no error").expect("allocated");
    assert_eq!(shares(&r, 0), vec![s("device-1", 2)]);
}

/// `consumable-capacity-multi-allocatable-device-with-range-policy-step`: a request is
/// rounded up to `min` plus a multiple of `step`.
#[test]
fn multi_allocatable_device_with_range_policy_step() {
    let p = json!({"default": "2", "validRange": {"min": "2", "max": "8", "step": "2"}});
    let c = case(
        vec![claim(
            "claim-0",
            json!([]),
            vec![cap_req("req-0", 1, Some("3"))],
        )],
        vec![shared_dev("device-1", "8", Some(p))],
    );
    let r = run(&c).expect("no error").expect("allocated");
    assert_eq!(shares(&r, 0), vec![s("device-1", 4)]);
}

/// `consumable-capacity-multi-allocatable-device-with-valid-values-policy-round-up`.
#[test]
fn multi_allocatable_device_with_valid_values_policy_round_up() {
    let p = json!({"default": "1", "validValues": ["1", "5", "8"]});
    let c = case(
        vec![claim(
            "claim-0",
            json!([]),
            vec![cap_req("req-0", 1, Some("2"))],
        )],
        vec![shared_dev("device-1", "8", Some(p))],
    );
    let r = run(&c).expect("no error").expect("allocated");
    assert_eq!(shares(&r, 0), vec![s("device-1", 5)]);
}

/// `consumable-capacity-multi-allocatable-device-with-request-over-max-sharing-policy`: a
/// request above the range's `max` violates the policy: nothing fits.
#[test]
fn multi_allocatable_device_with_request_over_max_policy() {
    let p = json!({"default": "1", "validRange": {"min": "1", "max": "4"}});
    let c = case(
        vec![claim(
            "claim-0",
            json!([]),
            vec![cap_req("req-0", 1, Some("6"))],
        )],
        vec![shared_dev("device-1", "8", Some(p))],
    );
    assert_eq!(run(&c), Ok(None));
}

/// `consumable-capacity-multi-allocatable-device-with-exceeded-consumable-capacity-request`
/// and `...-with-no-available-consumable-capacity`: the sum may not pass the value.
#[test]
fn multi_allocatable_device_with_exceeded_consumable_capacity_request() {
    let c = case(
        vec![claim(
            "claim-0",
            json!([]),
            vec![cap_req("req-0", 1, Some("9"))],
        )],
        vec![shared_dev("device-1", "8", None)],
    );
    assert_eq!(run(&c), Ok(None));
    let c = case(
        vec![
            claim("claim-0", json!([]), vec![cap_req("req-0", 1, Some("5"))]),
            claim("claim-1", json!([]), vec![cap_req("req-0", 1, Some("5"))]),
        ],
        vec![shared_dev("device-1", "8", None)],
    );
    assert_eq!(run(&c), Ok(None));
}

/// `consumable-capacity-with-multi-allocatable-device-backtrack`: the first claim moves to
/// the second device when the second claim cannot fit beside it on the first.
#[test]
fn with_multi_allocatable_device_backtrack() {
    let c = case(
        vec![
            claim("claim-0", json!([]), vec![cap_req("req-0", 1, Some("4"))]),
            claim(
                "claim-1",
                json!([]),
                vec![req_sel(
                    "req-0",
                    "class-a",
                    1,
                    vec![cel(
                        "device.capacity[\"driver-a\"].mem.compareTo(quantity(\"8\")) >= 0",
                    )],
                )],
            ),
        ],
        vec![
            shared_dev("device-1", "8", None),
            shared_dev("device-2", "4", None),
        ],
    );
    let r = run(&c).expect("no error").expect("allocated");
    assert_eq!(shares(&r, 0), vec![s("device-2", 4)]);
    assert_eq!(shares(&r, 1), vec![s("device-1", 8)]);
}

/// `consumable-capacity-dedicated-device-with-consumable-capacity-request`: a dedicated
/// device is checked against the request but gets no share id.
#[test]
fn dedicated_device_with_consumable_capacity_request() {
    let dedicated = |n: &str| json!({"name": n, "capacity": {"mem": {"value": "8"}}});
    let c = case(
        vec![claim(
            "claim-0",
            json!([]),
            vec![cap_req("req-0", 1, Some("9"))],
        )],
        vec![dedicated("device-1")],
    );
    assert_eq!(run(&c), Ok(None));
    let c = case(
        vec![
            claim("claim-0", json!([]), vec![cap_req("req-0", 1, Some("4"))]),
            claim("claim-1", json!([]), vec![cap_req("req-0", 1, Some("4"))]),
        ],
        vec![dedicated("device-1"), dedicated("device-2")],
    );
    let r = run(&c).expect("no error").expect("allocated");
    assert_eq!(shares(&r, 0), vec![("device-1".to_string(), None)]);
    assert_eq!(shares(&r, 1), vec![("device-2".to_string(), None)]);
}

/// `consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-insufficient-capacity`:
/// All mode takes the devices with room for the request.
#[test]
fn allocation_mode_all_filter_out_insufficient_capacity() {
    let mut r = all_req("req-0", "class-a");
    r["exactly"]["capacity"] = json!({"requests": {"mem": "6"}});
    let c = case(
        vec![claim("claim-0", json!([]), vec![r])],
        vec![
            shared_dev("device-1", "8", None),
            shared_dev("device-2", "4", None),
        ],
    );
    let got = run(&c).expect("no error").expect("allocated");
    assert_eq!(shares(&got, 0), vec![s("device-1", 6)]);
}

/// `consumable-capacity-disabled-feature`: with the gate off a capacity request is refused.
#[test]
fn consumable_capacity_disabled_feature() {
    let mut c = case(
        vec![claim(
            "claim-0",
            json!([]),
            vec![cap_req("req-0", 1, Some("1"))],
        )],
        vec![shared_dev("device-1", "8", None)],
    );
    c.features = PRIO;
    let e = run(&c).expect_err("refused");
    assert!(
        e.contains("claim claim-0, request req-0: has capacity requests, but the DRAConsumableCapacity feature is disabled"),
        "{e}"
    );
}

/// `distinct-constraint-two-multi-allocatable-devices-with-distinct-constraint` and
/// `with-distinct-constraints`: two requests must land on devices with different values.
#[test]
fn with_distinct_constraints() {
    let dev = |n: &str, numa: i64| {
        json!({"name": n, "allowMultipleAllocations": true,
            "attributes": {"numa": {"int": numa}}, "capacity": {"mem": {"value": "8"}}})
    };
    let c = case(
        vec![claim(
            "claim-0",
            json!([{"distinctAttribute": "driver-a/numa"}]),
            vec![
                cap_req("req-0", 1, Some("1")),
                cap_req("req-1", 1, Some("1")),
            ],
        )],
        vec![dev("device-1", 0), dev("device-2", 0), dev("device-3", 1)],
    );
    let r = run(&c).expect("no error").expect("allocated");
    assert_eq!(shares(&r, 0), vec![s("device-1", 1), s("device-3", 1)]);
    // Without the constraint both requests share device-1.
    let mut c = c;
    c.claims = vec![claim(
        "claim-0",
        json!([]),
        vec![
            cap_req("req-0", 1, Some("1")),
            cap_req("req-1", 1, Some("1")),
        ],
    )];
    let r = run(&c).expect("no error").expect("allocated");
    assert_eq!(shares(&r, 0), vec![s("device-1", 1), s("device-1", 1)]);
    // Not set on a device: that device is never taken for a constrained request.
    let c = case(
        vec![claim(
            "claim-0",
            json!([{"distinctAttribute": "driver-a/numa"}]),
            vec![cap_req("req-0", 1, None)],
        )],
        vec![shared_dev("device-1", "8", None)],
    );
    assert_eq!(run(&c), Ok(None));
}
