//! DRAConsumableCapacity's cases of upstream's `TestAllocator`
//! (`allocatortesting/allocator_testing.go`, kubernetes/kubernetes), ported as facts: each test
//! is one upstream case under its upstream name, with the same claims, classes, slices,
//! allocated state (`allocatedDevices`, `allocatedCapacityDevices`), feature gates and expected
//! results. As upstream's runner, every `shareID` compares as "set" (upstream overwrites each
//! with `fixedShareID`; a dedicated result has none) and `consumedCapacity` compares exactly
//! (by value). Every case runs with and without the allocator's shortcuts, which must agree.
//!
//! Upstream helpers as read from the table: `capacityRequests(q)` asks `capacity-0: q`;
//! `withCapacityRequestPolicyRange({c: v})` sets capacity `c` to `v` with the policy
//! `default 2, validRange {min 2, step 2, max 4}`; `withCapacityRequestPolicyValidValues(d,
//! {c: v}, extra)` sets `default d, validValues [d, extra...]`;
//! `classWithAllowMultipleAllocations(name, driver, b)` selects
//! `device.driver == driver && device.allowMultipleAllocations == b`; `device(name,
//! fromCounters, ..).withDeviceCounterConsumption(..)` gives the device a capacity per
//! consumed counter, of the counter's value.
//!
//! The cases from `...-allocation-mode-all-filter-out-no-capacity` on are in
//! `allocator_table_consumable_capacity_more.rs`.

use std::collections::BTreeMap;
use std::sync::Arc;

use ksim_api::resource::{AllocationResult, DeviceClass, ResourceClaim, ResourceSlice};
use ksim_api::{NodeSelector, Quantity};
use serde_json::{json, Value};

use super::allocate_once::{allocate_in_state, AllocatedState};
use super::allocator::{DeviceId, Features};
use super::allocator_table::*;

pub(super) const CC: Features = Features {
    consumable_capacity: true,
    ..NONE
};
pub(super) const CC_PRIO: Features = Features {
    consumable_capacity: true,
    prioritized_list: true,
    ..NONE
};
pub(super) const CC_PRIO_PART: Features = Features {
    consumable_capacity: true,
    prioritized_list: true,
    partitionable_devices: true,
    ..NONE
};

/// `capacity-0`.
pub(super) const C0: &str = "capacity-0";
/// `capacity-1`.
pub(super) const C1: &str = "capacity-1";

/// `device(name, {capacity: value...}, nil)`.
pub(super) fn dev_caps(name: &str, caps: &[(&str, &str)]) -> Value {
    let mut d = json!({"name": name});
    for (c, v) in caps {
        d["capacity"][*c] = json!({"value": v});
    }
    d
}

/// `.withAllowMultipleAllocations()`.
pub(super) fn multi(mut d: Value) -> Value {
    d["allowMultipleAllocations"] = json!(true);
    d
}

/// `.withCapacityRequestPolicyRange({capacity: value})`.
pub(super) fn range(mut d: Value, capacity: &str, value: &str) -> Value {
    d["capacity"][capacity] = json!({"value": value, "requestPolicy": {"default": "2",
        "validRange": {"min": "2", "step": "2", "max": "4"}}});
    d
}

/// `.withCapacityRequestPolicyValidValues(default, {capacity: value}, extra)`.
pub(super) fn valid_values(
    mut d: Value,
    default: &str,
    capacity: &str,
    value: &str,
    extra: &[&str],
) -> Value {
    let mut values = vec![default];
    values.extend_from_slice(extra);
    d["capacity"][capacity] = json!({"value": value,
        "requestPolicy": {"default": default, "validValues": values}});
    d
}

/// `.withAttributes`: string attributes `driver-a/<k>`.
pub(super) fn attrs(mut d: Value, a: Value) -> Value {
    d["attributes"] = a;
    d
}

/// `.withCapacityRequest(q)` on a request or subrequest value.
pub(super) fn cap(mut r: Value, q: &str) -> Value {
    let target = if r.get("exactly").is_some() {
        &mut r["exactly"]
    } else {
        &mut r
    };
    target["capacity"] = json!({"requests": {C0: q}});
    r
}

/// `classWithAllowMultipleAllocations(class-a, driver-a, b)`.
pub(super) fn class_multi(b: bool) -> Value {
    class_expr(
        "class-a",
        &format!("device.driver == \"{A}\" && device.allowMultipleAllocations == {b}"),
    )
}

/// `claim(name).withRequests(...)`.
pub(super) fn claim_r(name: &str, requests: Vec<Value>) -> Value {
    claim(name, json!([]), requests)
}

/// `sliceWithDevices(slice-1, node-1, pool-1, driver-a, ...)`.
pub(super) fn slice1_with(devs: Vec<Value>) -> Vec<Value> {
    vec![slice("slice-1", "node-1", "pool-1", A, devs)]
}

/// One expected device result on pool-1 of driver-a: request, device, and the consumed
/// capacity of a shared result (`None`: a dedicated result, without `shareID`).
pub(super) type Res = (
    &'static str,
    &'static str,
    Option<Vec<(&'static str, &'static str)>>,
);

pub(super) fn shared(
    request: &'static str,
    device: &'static str,
    consumed: &[(&'static str, &'static str)],
) -> Res {
    (request, device, Some(consumed.to_vec()))
}

pub(super) struct Cc {
    pub(super) features: Features,
    pub(super) claims: Vec<Value>,
    pub(super) classes: Vec<Value>,
    pub(super) slices: Vec<Value>,
    pub(super) allocated: Vec<&'static str>,
    /// `allocatedCapacityDevices`: device of pool-1 of driver-a, capacity, amount.
    pub(super) consumed: Vec<(&'static str, &'static str, &'static str)>,
}

impl Cc {
    pub(super) fn new(
        features: Features,
        claims: Vec<Value>,
        class: Value,
        slices: Vec<Value>,
    ) -> Cc {
        Cc {
            features,
            claims,
            classes: vec![class],
            slices,
            allocated: vec![],
            consumed: vec![],
        }
    }
}

fn id(device: &str) -> DeviceId {
    DeviceId {
        driver: A.to_string(),
        pool: "pool-1".to_string(),
        device: device.to_string(),
    }
}

fn q(s: &str) -> Quantity {
    Quantity::parse(s).expect("quantity")
}

fn run(c: &Cc) -> Result<Option<Vec<AllocationResult>>, String> {
    let classes = c
        .classes
        .iter()
        .map(|v| {
            let k: DeviceClass = serde_json::from_value(v.clone()).expect("class");
            (k.metadata.name.clone(), Arc::new(k))
        })
        .collect();
    let mut slices: Vec<Arc<ResourceSlice>> = c
        .slices
        .iter()
        .map(|v| Arc::new(serde_json::from_value(v.clone()).expect("slice")))
        .collect();
    slices.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
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
    let mut state = AllocatedState {
        devices: c.allocated.iter().map(|d| id(d)).collect(),
        ..Default::default()
    };
    for (d, k, v) in &c.consumed {
        state
            .capacity
            .entry(id(d))
            .or_default()
            .insert(k.to_string(), q(v));
    }
    let node = node("node-1", "region-1");
    let fast = allocate_in_state(c.features, &classes, &slices, &state, &claims, &node, true);
    let full = allocate_in_state(c.features, &classes, &slices, &state, &claims, &node, false);
    assert_eq!(fast, full, "shortcut and full search differ");
    fast
}

/// Upstream's `expectResults: []any{}` / `nil` without error: no allocation.
pub(super) fn nothing(c: Cc) {
    assert_eq!(run(&c), Ok(None), "expected no allocation");
}

pub(super) fn error(c: Cc, text: &str) {
    match run(&c) {
        Err(e) => assert!(e.contains(text), "error {e:?} does not contain {text:?}"),
        other => panic!("expected an error containing {text:?}, got {other:?}"),
    }
}

type GotRes = (String, String, String, Option<BTreeMap<String, i64>>);

/// Compares with upstream's `allocationResult(localNodeSelector(node-1), ...)` per claim.
pub(super) fn results(c: Cc, want: Vec<Vec<Res>>) {
    let got = match run(&c) {
        Ok(Some(r)) => r,
        other => panic!("expected {} allocation(s), got {other:?}", want.len()),
    };
    assert_eq!(got.len(), want.len(), "one result per claim: {got:?}");
    let local: NodeSelector = serde_json::from_value(local_sel("node-1")).expect("selector");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let mut gd: Vec<GotRes> = g
            .devices
            .results
            .iter()
            .map(|d| {
                assert_eq!(d.driver, A);
                let consumed = d.share_id.as_ref().map(|_| {
                    d.consumed_capacity
                        .iter()
                        .map(|(k, v)| (k.clone(), v.milli_value()))
                        .collect()
                });
                if d.share_id.is_none() {
                    assert!(d.consumed_capacity.is_empty(), "claim #{i}: {d:?}");
                }
                (
                    d.request.clone(),
                    d.pool.clone(),
                    d.device.clone(),
                    consumed,
                )
            })
            .collect();
        let mut wd: Vec<GotRes> = w
            .into_iter()
            .map(|(r, d, c)| {
                let consumed = c.map(|c| {
                    c.iter()
                        .map(|(k, v)| (k.to_string(), q(v).milli_value()))
                        .collect()
                });
                (r.to_string(), "pool-1".to_string(), d.to_string(), consumed)
            })
            .collect();
        gd.sort();
        wd.sort();
        assert_eq!(gd, wd, "claim #{i}: devices");
        assert_eq!(
            g.node_selector.as_ref(),
            Some(&local),
            "claim #{i}: node selector"
        );
        assert!(g.devices.config.is_empty(), "claim #{i}: config");
    }
}

/// `consumable-capacity-disabled-feature` (upstream turns DRADeviceBindingConditions on only
/// to pick its experimental allocator; ksim has one allocator).
#[test]
fn consumable_capacity_disabled_feature() {
    let c = Cc::new(
        NONE,
        vec![claim_r(
            "claim-0",
            vec![cap(req("req-0", "class-a", 1), "1")],
        )],
        class("class-a", A),
        vec![slice1("slice-1", "node-1", "pool-1", A)],
    );
    error(
        c,
        "claim claim-0, request req-0: has capacity requests, but the DRAConsumableCapacity feature is disabled",
    );
}

/// `consumable-capacity-disabled-feature-with-prioritized-list`.
#[test]
fn consumable_capacity_disabled_feature_with_prioritized_list() {
    let c = Cc::new(
        PRIO,
        vec![claim_r(
            "claim-0",
            vec![first(
                "req-0",
                vec![
                    cap(sub("subReq-0", "class-a", 1), "1"),
                    cap(sub("subReq-1", "class-a", 1), "1"),
                ],
            )],
        )],
        class("class-a", A),
        vec![slice1("slice-1", "node-1", "pool-1", A)],
    );
    error(
        c,
        "claim claim-0, subrequest subReq-0: has capacity requests, but the DRAConsumableCapacity feature is disabled",
    );
}

/// `consumable-capacity-multi-allocatable-device-with-missing-capacity-request`.
#[test]
fn multi_allocatable_device_with_missing_capacity_request() {
    nothing(Cc::new(
        CC,
        vec![claim_r(
            "claim-0",
            vec![cap(req("req-0", "class-a", 1), "1")],
        )],
        class("class-a", A),
        slice1_with(vec![multi(dev_caps("device-1", &[(C1, "1")]))]),
    ));
}

/// `consumable-capacity-multi-allocatable-device-allocation-mode-all-with-missing-capacity-request`.
#[test]
fn multi_allocatable_device_allocation_mode_all_with_missing_capacity_request() {
    nothing(Cc::new(
        CC,
        vec![claim_r(
            "claim-0",
            vec![cap(all_req("req-0", "class-a"), "1")],
        )],
        class_multi(true),
        slice1_with(vec![multi(dev_caps("device-1", &[(C1, "1")]))]),
    ));
}

/// `consumable-capacity-multi-allocatable-device-without-capacity-without-capacity-request`.
#[test]
fn multi_allocatable_device_without_capacity_without_capacity_request() {
    results(
        Cc::new(
            CC,
            vec![
                claim_r("claim-0", vec![req("req-0", "class-a", 1)]),
                claim_r("claim-1", vec![req("req-0", "class-a", 1)]),
            ],
            class_multi(true),
            slice1_with(vec![multi(dev("device-1"))]),
        ),
        vec![
            vec![shared("req-0", "device-1", &[])],
            vec![shared("req-0", "device-1", &[])],
        ],
    );
}

/// `consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request`.
#[test]
fn multi_allocatable_device_without_policy_without_capacity_request() {
    results(
        Cc::new(
            CC,
            vec![
                claim_r("claim-0", vec![req("req-0", "class-a", 1)]),
                claim_r("claim-1", vec![req("req-0", "class-a", 1)]),
            ],
            class_multi(true),
            slice1_with(vec![
                multi(dev_caps("device-1", &[(C0, "1")])),
                multi(dev_caps("device-2", &[(C0, "1")])),
            ]),
        ),
        vec![
            vec![shared("req-0", "device-1", &[(C0, "1")])],
            vec![shared("req-0", "device-2", &[(C0, "1")])],
        ],
    );
}

/// `consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request-block`.
#[test]
fn multi_allocatable_device_without_policy_without_capacity_request_block() {
    nothing(Cc::new(
        CC,
        vec![
            claim_r("claim-0", vec![req("req-0", "class-a", 1)]),
            claim_r("claim-1", vec![req("req-0", "class-a", 1)]),
        ],
        class_multi(true),
        slice1_with(vec![multi(dev_caps("device-1", &[(C0, "2")]))]),
    ));
}

/// `consumable-capacity-multi-allocatable-device-without-policy-with-capacity-request`.
#[test]
fn multi_allocatable_device_without_policy_with_capacity_request() {
    results(
        Cc::new(
            CC,
            vec![
                claim_r("claim-0", vec![cap(req("req-0", "class-a", 1), "1")]),
                claim_r("claim-1", vec![cap(req("req-0", "class-a", 1), "1")]),
            ],
            class_multi(true),
            slice1_with(vec![multi(dev_caps("device-1", &[(C0, "2")]))]),
        ),
        vec![
            vec![shared("req-0", "device-1", &[(C0, "1")])],
            vec![shared("req-0", "device-1", &[(C0, "1")])],
        ],
    );
}

/// `consumable-capacity-multi-allocatable-device-with-policy-without-capacity-request`.
#[test]
fn multi_allocatable_device_with_policy_without_capacity_request() {
    results(
        Cc::new(
            CC,
            vec![
                claim1("claim-0", "req-0", "class-a"),
                claim1("claim-1", "req-0", "class-a"),
            ],
            class_multi(true),
            slice1_with(vec![range(multi(dev("device-1")), C0, "4")]),
        ),
        vec![
            vec![shared("req-0", "device-1", &[(C0, "2")])],
            vec![shared("req-0", "device-1", &[(C0, "2")])],
        ],
    );
}

/// `consumable-capacity-multi-allocatable-device-with-zero-request-policy`.
#[test]
fn multi_allocatable_device_with_zero_request_policy() {
    results(
        Cc::new(
            CC,
            vec![
                claim1("claim-0", "req-0", "class-a"),
                claim1("claim-1", "req-0", "class-a"),
            ],
            class_multi(true),
            slice1_with(vec![valid_values(
                multi(dev("device-1")),
                "0",
                C0,
                "1",
                &[],
            )]),
        ),
        vec![
            vec![shared("req-0", "device-1", &[(C0, "0")])],
            vec![shared("req-0", "device-1", &[(C0, "0")])],
        ],
    );
}

/// `consumable-capacity-multi-allocatable-device-violates-zero-request-policy`.
#[test]
fn multi_allocatable_device_violates_zero_request_policy() {
    nothing(Cc::new(
        CC,
        vec![claim_r(
            "claim-0",
            vec![cap(req("req-0", "class-a", 1), "1")],
        )],
        class_multi(true),
        slice1_with(vec![valid_values(
            multi(dev("device-1")),
            "0",
            C0,
            "1",
            &[],
        )]),
    ));
}

/// `consumable-capacity-multi-allocatable-device-with-range-policy-with-capacity-request`.
#[test]
fn multi_allocatable_device_with_range_policy_with_capacity_request() {
    results(
        Cc::new(
            CC,
            vec![
                claim_r("claim-0", vec![cap(req("req-0", "class-a", 1), "1")]),
                claim_r("claim-1", vec![cap(req("req-0", "class-a", 1), "1")]),
            ],
            class_multi(true),
            slice1_with(vec![range(multi(dev("device-1")), C0, "4")]),
        ),
        vec![
            vec![shared("req-0", "device-1", &[(C0, "2")])],
            vec![shared("req-0", "device-1", &[(C0, "2")])],
        ],
    );
}

/// `consumable-capacity-multi-allocatable-device-with-range-policy-step`.
#[test]
fn multi_allocatable_device_with_range_policy_step() {
    results(
        Cc::new(
            CC,
            vec![claim_r(
                "claim-0",
                vec![cap(req("req-0", "class-a", 1), "3")],
            )],
            class_multi(true),
            slice1_with(vec![range(multi(dev("device-1")), C0, "4")]),
        ),
        vec![vec![shared("req-0", "device-1", &[(C0, "4")])]],
    );
}

/// `consumable-capacity-multi-allocatable-device-with-valid-values-policy`.
#[test]
fn multi_allocatable_device_with_valid_values_policy() {
    results(
        Cc::new(
            CC,
            vec![claim_r(
                "claim-0",
                vec![cap(req("req-0", "class-a", 1), "2")],
            )],
            class_multi(true),
            slice1_with(vec![valid_values(
                multi(dev("device-1")),
                "1",
                C0,
                "4",
                &["2"],
            )]),
        ),
        vec![vec![shared("req-0", "device-1", &[(C0, "2")])]],
    );
}

/// `consumable-capacity-multi-allocatable-device-with-valid-values-policy-round-up`.
#[test]
fn multi_allocatable_device_with_valid_values_policy_round_up() {
    results(
        Cc::new(
            CC,
            vec![claim_r(
                "claim-0",
                vec![cap(req("req-0", "class-a", 1), "2")],
            )],
            class_multi(true),
            slice1_with(vec![valid_values(
                multi(dev("device-1")),
                "1",
                C0,
                "3",
                &["3"],
            )]),
        ),
        vec![vec![shared("req-0", "device-1", &[(C0, "3")])]],
    );
}

/// `consumable-capacity-multi-allocatable-device-with-exceeded-consumable-capacity-request`.
#[test]
fn multi_allocatable_device_with_exceeded_consumable_capacity_request() {
    nothing(Cc::new(
        CC,
        vec![
            claim_r("claim-0", vec![cap(req("req-0", "class-a", 1), "1")]),
            claim_r("claim-1", vec![cap(req("req-0", "class-a", 1), "2")]),
        ],
        class_multi(true),
        slice1_with(vec![range(multi(dev("device-1")), C0, "2")]),
    ));
}

/// `consumable-capacity-multi-allocatable-device-with-request-over-max-sharing-policy`.
#[test]
fn multi_allocatable_device_with_request_over_max_sharing_policy() {
    nothing(Cc::new(
        CC,
        vec![claim_r(
            "claim-0",
            vec![cap(req("req-0", "class-a", 1), "6")],
        )],
        class_multi(true),
        slice1_with(vec![range(multi(dev("device-1")), C0, "10")]),
    ));
}

/// `consumable-capacity-multi-allocatable-device-with-allocated-capacity-use-remaining`.
#[test]
fn multi_allocatable_device_with_allocated_capacity_use_remaining() {
    let mut c = Cc::new(
        CC,
        vec![claim_r(
            "claim-0",
            vec![cap(req("req-0", "class-a", 1), "2")],
        )],
        class_multi(true),
        slice1_with(vec![range(multi(dev("device-1")), C0, "4")]),
    );
    c.consumed = vec![("device-1", C0, "2")];
    results(c, vec![vec![shared("req-0", "device-1", &[(C0, "2")])]]);
}

/// `consumable-capacity-multi-allocatable-device-with-allocated-capacity-next-device`.
#[test]
fn multi_allocatable_device_with_allocated_capacity_next_device() {
    let mut c = Cc::new(
        CC,
        vec![claim_r(
            "claim-0",
            vec![cap(req("req-0", "class-a", 1), "2")],
        )],
        class_multi(true),
        slice1_with(vec![
            range(multi(dev("device-1")), C0, "2"),
            range(multi(dev("device-2")), C0, "2"),
        ]),
    );
    c.consumed = vec![("device-1", C0, "2")];
    results(c, vec![vec![shared("req-0", "device-2", &[(C0, "2")])]]);
}

/// `consumable-capacity-with-multi-allocatable-device-backtrack`.
#[test]
fn with_multi_allocatable_device_backtrack() {
    let s = |v: &str| json!({"stringAttribute": {"string": v}});
    results(
        Cc::new(
            CC,
            vec![
                claim(
                    "claim-0",
                    json!([{"matchAttribute": "driver-a/stringAttribute"}]),
                    vec![
                        cap(req("req-0", "class-a", 1), "2"),
                        cap(req("req-1", "class-a", 1), "2"),
                    ],
                ),
                claim_r("claim-1", vec![cap(req("req-0", "class-a", 1), "2")]),
            ],
            class("class-a", A),
            slice1_with(vec![
                range(
                    multi(attrs(dev("device-2"), s("stringAttributeValue1"))),
                    C0,
                    "2",
                ),
                range(
                    multi(attrs(dev("device-1"), s("stringAttributeValue2"))),
                    C0,
                    "4",
                ),
            ]),
        ),
        vec![
            vec![
                shared("req-0", "device-1", &[(C0, "2")]),
                shared("req-1", "device-1", &[(C0, "2")]),
            ],
            vec![shared("req-0", "device-2", &[(C0, "2")])],
        ],
    );
}

/// `consumable-capacity-multi-allocatable-device-with-subrequest` (two subrequests named
/// subReq-1, as upstream's table has them).
#[test]
fn multi_allocatable_device_with_subrequest() {
    results(
        Cc::new(
            CC_PRIO,
            vec![claim_r(
                "claim-0",
                vec![first(
                    "req-0",
                    vec![
                        cap(sub("subReq-0", "class-a", 1), "4"),
                        cap(sub("subReq-1", "class-a", 1), "2"),
                        sub("subReq-1", "class-a", 1),
                    ],
                )],
            )],
            class_multi(true),
            slice1_with(vec![range(multi(dev("device-1")), C0, "2")]),
        ),
        vec![vec![shared("req-0/subReq-1", "device-1", &[(C0, "2")])]],
    );
}

/// `consumable-capacity-multi-allocatable-device-with-no-available-consumable-capacity`.
#[test]
fn multi_allocatable_device_with_no_available_consumable_capacity() {
    let mut c = Cc::new(
        CC,
        vec![claim_r(
            "claim-0",
            vec![cap(req("req-0", "class-a", 1), "2")],
        )],
        class_multi(true),
        slice1_with(vec![range(multi(dev("device-1")), C0, "2")]),
    );
    c.consumed = vec![("device-1", C0, "2")];
    nothing(c);
}
