//! Upstream's structured-allocator test table (`allocatortesting.TestAllocator`) ported as
//! facts: the same inputs (claims, classes, slices, allocated devices, node) and the same
//! results or error texts; then facts of the plugin's extension points.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use ksim_api::resource::{AllocationResult, DeviceClass, ResourceClaim, ResourceSlice};
use ksim_api::Node;
use serde_json::{json, Value};

use super::allocator::{allocate_once, DeviceId, Features};

fn node(name: &str, region: &str) -> Node {
    serde_json::from_value(json!({"metadata": {"name": name,
        "labels": {"region": region, "planet": "earth"}}}))
    .unwrap()
}

fn class(name: &str, driver: &str) -> Arc<DeviceClass> {
    Arc::new(
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": {"selectors": [
            {"cel": {"expression": format!("device.driver == \"{driver}\"")}}]}}))
        .unwrap(),
    )
}

fn req(name: &str, class: &str, count: i64) -> Value {
    json!({"name": name, "exactly": {"deviceClassName": class,
        "allocationMode": "ExactCount", "count": count}})
}

fn all_req(name: &str, class: &str) -> Value {
    json!({"name": name, "exactly": {"deviceClassName": class, "allocationMode": "All"}})
}

fn claim(name: &str, requests: Vec<Value>, constraints: Value) -> Arc<ResourceClaim> {
    Arc::new(
        serde_json::from_value(json!({"metadata": {"name": name},
            "spec": {"devices": {"requests": requests, "constraints": constraints}}}))
        .unwrap(),
    )
}

/// `sliceWithDevices(name, node, pool, driver, devices...)`: node-local, generation 1, one slice.
fn slice(name: &str, node: &str, pool: &str, driver: &str, devices: Value) -> Value {
    json!({"metadata": {"name": name}, "spec": {"driver": driver, "nodeName": node,
        "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1}, "devices": devices}})
}

fn one_device(name: &str, node: &str, pool: &str, driver: &str) -> Value {
    slice(name, node, pool, driver, json!([{"name": "device-1"}]))
}

struct Case {
    features: Features,
    claims: Vec<Arc<ResourceClaim>>,
    classes: Vec<Arc<DeviceClass>>,
    slices: Vec<Value>,
    allocated: Vec<(&'static str, &'static str, &'static str)>,
    node: Node,
}

impl Default for Case {
    fn default() -> Self {
        Case {
            features: Features::default(),
            claims: vec![],
            classes: vec![class("class-a", "driver-a")],
            slices: vec![],
            allocated: vec![],
            node: node("node-1", "region-1"),
        }
    }
}

fn run(c: &Case) -> Result<Option<Vec<AllocationResult>>, String> {
    let classes: BTreeMap<String, Arc<DeviceClass>> = c
        .classes
        .iter()
        .map(|k| (k.metadata.name.clone(), k.clone()))
        .collect();
    // The cluster's slices in name order (ties: as listed).
    let mut slices: Vec<Arc<ResourceSlice>> = c
        .slices
        .iter()
        .map(|s| Arc::new(serde_json::from_value(s.clone()).unwrap()))
        .collect();
    slices.sort_by(|a: &Arc<ResourceSlice>, b| a.metadata.name.cmp(&b.metadata.name));
    let allocated: BTreeSet<DeviceId> = c
        .allocated
        .iter()
        .map(|(d, p, n)| DeviceId {
            driver: d.to_string(),
            pool: p.to_string(),
            device: n.to_string(),
        })
        .collect();
    let mut claims: Vec<Arc<ResourceClaim>> = Vec::new();
    for k in &c.claims {
        let mut k = (**k).clone();
        ksim_api::resource::default_claim_spec(&mut k.spec);
        claims.push(Arc::new(k));
    }
    allocate_once(c.features, &classes, &slices, &allocated, &claims, &c.node)
}

/// `(request, driver, pool, device, adminAccess)` per claim, and whether it is pinned to the
/// node (`localNodeSelector`).
/// `(request, driver, pool, device, adminAccess)`.
type Dev = (String, String, String, String, bool);

fn results(r: &[AllocationResult]) -> Vec<Vec<Dev>> {
    r.iter()
        .map(|a| {
            a.devices
                .results
                .iter()
                .map(|d| {
                    (
                        d.request.clone(),
                        d.driver.clone(),
                        d.pool.clone(),
                        d.device.clone(),
                        d.admin_access == Some(true),
                    )
                })
                .collect()
        })
        .collect()
}

fn dev(
    req: &str,
    driver: &str,
    pool: &str,
    device: &str,
    admin: bool,
) -> (String, String, String, String, bool) {
    (req.into(), driver.into(), pool.into(), device.into(), admin)
}

fn local_selector(a: &AllocationResult, node: &str) -> bool {
    a.node_selector.as_ref().is_some_and(|ns| {
        ns.node_selector_terms.len() == 1
            && ns.node_selector_terms[0].match_fields.len() == 1
            && ns.node_selector_terms[0].match_fields[0].key == "metadata.name"
            && ns.node_selector_terms[0].match_fields[0].values == vec![node.to_string()]
    })
}

#[test]
fn simple() {
    let c = Case {
        claims: vec![claim(
            "claim-0",
            vec![req("req-0", "class-a", 1)],
            json!([]),
        )],
        slices: vec![one_device("slice-1", "node-1", "pool-1", "driver-a")],
        ..Default::default()
    };
    let r = run(&c).unwrap().unwrap();
    assert_eq!(
        results(&r),
        vec![vec![dev("req-0", "driver-a", "pool-1", "device-1", false)]]
    );
    assert!(local_selector(&r[0], "node-1"));
}

#[test]
fn no_slices_and_not_enough_devices() {
    let mut c = Case {
        claims: vec![claim(
            "claim-0",
            vec![req("req-0", "class-a", 1)],
            json!([]),
        )],
        ..Default::default()
    };
    assert_eq!(run(&c), Ok(None), "no-slices");
    c.claims = vec![
        claim("claim-0", vec![req("req-0", "class-a", 1)], json!([])),
        claim("claim-0", vec![req("req-1", "class-a", 1)], json!([])),
    ];
    c.slices = vec![one_device("slice-1", "node-1", "pool-1", "driver-a")];
    assert_eq!(run(&c), Ok(None), "not-enough-suitable-devices");
    // The other node's slice is not visible.
    c.claims.truncate(1);
    c.node = node("node-2", "region-1");
    assert_eq!(run(&c), Ok(None), "other node");
}

#[test]
fn missing_classes_are_errors() {
    let mut c = Case {
        claims: vec![claim(
            "claim-0",
            vec![req("req-0", "class-a", 1)],
            json!([]),
        )],
        classes: vec![],
        slices: vec![one_device("slice-1", "node-1", "pool-1", "driver-a")],
        ..Default::default()
    };
    assert!(run(&c)
        .unwrap_err()
        .contains("could not retrieve device class class-a"));
    c.classes = vec![class("class-a", "driver-a")];
    c.claims = vec![claim(
        "claim-0",
        vec![req("req-0", "unknown-class", 1)],
        json!([]),
    )];
    assert!(run(&c)
        .unwrap_err()
        .contains("could not retrieve device class unknown-class"));
}

#[test]
fn all_devices() {
    let mut c = Case {
        claims: vec![claim(
            "claim-0",
            vec![all_req("req-0", "class-a")],
            json!([]),
        )],
        slices: vec![one_device("slice-1", "node-1", "pool-1", "driver-a")],
        ..Default::default()
    };
    let r = run(&c).unwrap().unwrap();
    assert_eq!(
        results(&r),
        vec![vec![dev("req-0", "driver-a", "pool-1", "device-1", false)]],
        "all-devices-single"
    );

    c.slices = vec![
        one_device("slice-1", "node-1", "pool-1", "driver-a"),
        one_device("slice-1b", "node-1", "pool-2", "driver-a"),
    ];
    let r = run(&c).unwrap().unwrap();
    assert_eq!(
        results(&r),
        vec![vec![
            dev("req-0", "driver-a", "pool-1", "device-1", false),
            dev("req-0", "driver-a", "pool-2", "device-1", false)
        ]],
        "all-devices-many"
    );

    let mut incomplete = one_device("slice-1", "node-1", "pool-1", "driver-a");
    incomplete["spec"]["pool"]["resourceSliceCount"] = json!(2);
    c.slices = vec![incomplete];
    assert_eq!(
        run(&c).unwrap_err(),
        "claim claim-0, request req-0: asks for all devices, but resource pool driver-a/pool-1 is currently being updated",
        "all-devices-of-the-incomplete-pool"
    );

    c.slices = vec![slice("slice-1", "node-1", "pool-1", "driver-a", json!([]))];
    assert_eq!(run(&c), Ok(None), "all-devices-slice-without-devices");
    c.slices = vec![];
    assert_eq!(run(&c), Ok(None), "all-devices-no-slices");

    c.slices = vec![slice(
        "slice-1",
        "node-1",
        "pool-1",
        "driver-a",
        json!([{"name": "device-1"}, {"name": "device-2"}]),
    )];
    c.allocated = vec![("driver-a", "pool-1", "device-1")];
    assert_eq!(run(&c), Ok(None), "all-devices-some-allocated");
}

#[test]
fn all_devices_plus_another_in_either_order() {
    let classes = vec![class("class-a", "driver-a"), class("class-b", "driver-b")];
    let slices = vec![
        slice(
            "slice-1",
            "node-1",
            "pool-1",
            "driver-a",
            json!([{"name": "device-1"}, {"name": "device-2"}]),
        ),
        one_device("slice-1b", "node-1", "pool-1", "driver-b"),
    ];
    let all = claim("claim-0", vec![all_req("req-0", "class-a")], json!([]));
    let one = claim("claim-1", vec![req("req-0", "class-b", 1)], json!([]));
    let c = Case {
        claims: vec![all.clone(), one.clone()],
        classes: classes.clone(),
        slices: slices.clone(),
        ..Default::default()
    };
    assert_eq!(
        results(&run(&c).unwrap().unwrap()),
        vec![
            vec![
                dev("req-0", "driver-a", "pool-1", "device-1", false),
                dev("req-0", "driver-a", "pool-1", "device-2", false)
            ],
            vec![dev("req-0", "driver-b", "pool-1", "device-1", false)]
        ],
        "all-devices-many-plus-another"
    );
    let c = Case {
        claims: vec![one, all],
        classes,
        slices,
        ..Default::default()
    };
    assert_eq!(
        results(&run(&c).unwrap().unwrap()),
        vec![
            vec![dev("req-0", "driver-b", "pool-1", "device-1", false)],
            vec![
                dev("req-0", "driver-a", "pool-1", "device-1", false),
                dev("req-0", "driver-a", "pool-1", "device-2", false)
            ]
        ],
        "all-devices-many-plus-another-reversed"
    );
}

#[test]
fn all_devices_no_solution_either_order() {
    let one = claim("claim-1", vec![req("req-0", "class-a", 1)], json!([]));
    let all = claim("claim-0", vec![all_req("req-0", "class-a")], json!([]));
    for claims in [vec![one.clone(), all.clone()], vec![all, one]] {
        let c = Case {
            claims,
            slices: vec![one_device("slice-1", "node-1", "pool-1", "driver-a")],
            ..Default::default()
        };
        assert_eq!(run(&c), Ok(None));
    }
}

fn admin(mut c: Value, mode: &str, count: i64) -> Value {
    c["exactly"]["adminAccess"] = json!(true);
    c["exactly"]["allocationMode"] = json!(mode);
    c["exactly"]["count"] = json!(count);
    c
}

#[test]
fn admin_access() {
    let two = slice(
        "slice-1",
        "node-1",
        "pool-1",
        "driver-a",
        json!([{"name": "device-1"}, {"name": "device-2"}]),
    );
    // all-devices-some-allocated-admin-access
    let c = Case {
        claims: vec![claim(
            "claim-0",
            vec![admin(req("req-0", "class-a", 1), "All", 0)],
            json!([]),
        )],
        slices: vec![two.clone()],
        allocated: vec![("driver-a", "pool-1", "device-1")],
        ..Default::default()
    };
    assert_eq!(
        results(&run(&c).unwrap().unwrap()),
        vec![vec![
            dev("req-0", "driver-a", "pool-1", "device-1", true),
            dev("req-0", "driver-a", "pool-1", "device-2", true)
        ]]
    );
    // all-devices-some-allocating-admin-access: the second request's "All" cannot take the
    // device the first request of the same claim took.
    let c = Case {
        claims: vec![claim(
            "claim-0",
            vec![
                admin(req("req-0", "class-a", 1), "ExactCount", 1),
                admin(req("req-1", "class-a", 1), "All", 0),
            ],
            json!([]),
        )],
        slices: vec![two.clone()],
        ..Default::default()
    };
    assert_eq!(run(&c), Ok(None));
    // count-devices-some-allocated-admin-access
    let c = Case {
        claims: vec![claim(
            "claim-0",
            vec![admin(req("req-0", "class-a", 1), "ExactCount", 2)],
            json!([]),
        )],
        slices: vec![two.clone()],
        allocated: vec![("driver-a", "pool-1", "device-1")],
        ..Default::default()
    };
    assert_eq!(
        results(&run(&c).unwrap().unwrap()),
        vec![vec![
            dev("req-0", "driver-a", "pool-1", "device-1", true),
            dev("req-0", "driver-a", "pool-1", "device-2", true)
        ]]
    );
    // separate-claims-share-device-admin-access
    let a = admin(req("req-0", "class-a", 1), "ExactCount", 1);
    let c = Case {
        claims: vec![
            claim("claim-0", vec![a.clone()], json!([])),
            claim("claim-1", vec![a], json!([])),
        ],
        slices: vec![two.clone()],
        ..Default::default()
    };
    assert_eq!(
        results(&run(&c).unwrap().unwrap()),
        vec![
            vec![dev("req-0", "driver-a", "pool-1", "device-1", true)],
            vec![dev("req-0", "driver-a", "pool-1", "device-1", true)]
        ]
    );
    // With the gate off the request is an error.
    let c = Case {
        features: Features {
            admin_access: false,
            ..Features::default()
        },
        claims: vec![claim(
            "claim-0",
            vec![admin(req("req-0", "class-a", 1), "ExactCount", 1)],
            json!([]),
        )],
        slices: vec![two],
        ..Default::default()
    };
    assert_eq!(
        run(&c).unwrap_err(),
        "claim claim-0, request req-0: admin access is requested, but the feature is disabled"
    );
}

#[test]
fn match_attribute_backtracks_across_requests() {
    // device-1 has model a, device-2 and device-3 model b: req-0 takes device-1 first, req-1
    // cannot match it, so the search backtracks and gives req-0 device-2, req-1 device-3.
    let devices = json!([
        {"name": "device-1", "attributes": {"model": {"string": "a"}}},
        {"name": "device-2", "attributes": {"model": {"string": "b"}}},
        {"name": "device-3", "attributes": {"model": {"string": "b"}}}
    ]);
    let mut c = Case {
        claims: vec![claim(
            "claim-0",
            vec![
                req("req-0", "class-a", 1),
                json!({"name": "req-1", "exactly": {"deviceClassName": "class-a",
                "selectors": [{"cel": {"expression": "device.attributes[\"driver-a\"].model == \"b\""}}]}}),
            ],
            json!([{"matchAttribute": "driver-a/model"}]),
        )],
        slices: vec![slice("slice-1", "node-1", "pool-1", "driver-a", devices)],
        ..Default::default()
    };
    assert_eq!(
        results(&run(&c).unwrap().unwrap()),
        vec![vec![
            dev("req-0", "driver-a", "pool-1", "device-2", false),
            dev("req-1", "driver-a", "pool-1", "device-3", false)
        ]]
    );
    // A device without the attribute never satisfies the constraint.
    c.claims = vec![claim(
        "claim-0",
        vec![req("req-0", "class-a", 1)],
        json!([{"matchAttribute": "driver-a/missing"}]),
    )];
    assert_eq!(run(&c), Ok(None));
}

#[test]
fn first_available_takes_the_first_subrequest_that_fits() {
    let c = Case {
        claims: vec![claim(
            "claim-0",
            vec![json!({"name": "req-0", "firstAvailable": [
                {"name": "subReq-0", "deviceClassName": "class-a", "allocationMode": "ExactCount", "count": 2},
                {"name": "subReq-1", "deviceClassName": "class-a", "allocationMode": "ExactCount", "count": 1}]})],
            json!([]),
        )],
        slices: vec![one_device("slice-1", "node-1", "pool-1", "driver-a")],
        ..Default::default()
    };
    assert_eq!(
        results(&run(&c).unwrap().unwrap()),
        vec![vec![dev(
            "req-0/subReq-1",
            "driver-a",
            "pool-1",
            "device-1",
            false
        )]]
    );
    let off = Case {
        features: Features {
            prioritized_list: false,
            ..Features::default()
        },
        claims: c.claims.clone(),
        slices: c.slices.clone(),
        ..Default::default()
    };
    assert_eq!(
        run(&off).unwrap_err(),
        "claim claim-0, request req-0: has subrequests, but the DRAPrioritizedList feature is disabled"
    );
}

#[test]
fn incomplete_pools_are_skipped_and_network_devices_selected() {
    let mut incomplete = one_device("slice-1", "node-1", "pool-1", "driver-a");
    incomplete["spec"]["pool"]["resourceSliceCount"] = json!(2);
    let network = json!({"metadata": {"name": "slice-2"}, "spec": {"driver": "driver-a",
        "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": "region", "operator": "In", "values": ["region-1"]}]}]},
        "pool": {"name": "pool-2", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "device-1"}]}});
    let c = Case {
        claims: vec![claim(
            "claim-0",
            vec![req("req-0", "class-a", 1)],
            json!([]),
        )],
        slices: vec![incomplete, network.clone()],
        ..Default::default()
    };
    let r = run(&c).unwrap().unwrap();
    assert_eq!(
        results(&r),
        vec![vec![dev("req-0", "driver-a", "pool-2", "device-1", false)]]
    );
    // The network slice's selector is written, not the node's name.
    let ns = r[0].node_selector.as_ref().unwrap();
    assert_eq!(ns.node_selector_terms[0].match_expressions[0].key, "region");
    assert!(ns.node_selector_terms[0].match_fields.is_empty());
    // A node outside the region does not see it.
    let c = Case {
        node: node("node-1", "region-2"),
        claims: c.claims.clone(),
        slices: vec![network],
        ..Default::default()
    };
    assert_eq!(run(&c), Ok(None));
    // allNodes: no node selector at all.
    let all_nodes = json!({"metadata": {"name": "slice-3"}, "spec": {"driver": "driver-a",
        "allNodes": true, "pool": {"name": "pool-3", "generation": 1, "resourceSliceCount": 1},
        "devices": [{"name": "device-1"}]}});
    let c = Case {
        claims: c.claims.clone(),
        slices: vec![all_nodes],
        ..Default::default()
    };
    assert_eq!(run(&c).unwrap().unwrap()[0].node_selector, None);
}

#[test]
fn newer_generation_replaces_older_slices() {
    let mut old = one_device("slice-1", "node-1", "pool-1", "driver-a");
    old["spec"]["devices"] = json!([{"name": "old-device"}]);
    let mut new = one_device("slice-2", "node-1", "pool-1", "driver-a");
    new["spec"]["pool"]["generation"] = json!(2);
    let c = Case {
        claims: vec![claim(
            "claim-0",
            vec![req("req-0", "class-a", 1)],
            json!([]),
        )],
        slices: vec![old, new],
        ..Default::default()
    };
    assert_eq!(
        results(&run(&c).unwrap().unwrap()),
        vec![vec![dev("req-0", "driver-a", "pool-1", "device-1", false)]]
    );
}

/// A class selector that reads only `device.driver` is evaluated once per driver; the
/// verdict (and a runtime error) must still be each driver's own.
#[test]
fn driver_only_selectors_give_each_driver_its_verdict() {
    let two = json!([{"name": "device-1"}, {"name": "device-2"}]);
    let mut c = Case {
        claims: vec![claim(
            "claim-0",
            vec![all_req("req-0", "class-a")],
            json!([]),
        )],
        slices: vec![
            slice("slice-a", "node-1", "pool-a", "driver-a", two.clone()),
            slice("slice-b", "node-1", "pool-b", "driver-b", two.clone()),
            slice("slice-c", "node-1", "pool-c", "driver-a", two.clone()),
        ],
        ..Default::default()
    };
    let r = run(&c).unwrap().unwrap();
    assert_eq!(
        results(&r),
        vec![vec![
            dev("req-0", "driver-a", "pool-a", "device-1", false),
            dev("req-0", "driver-a", "pool-a", "device-2", false),
            dev("req-0", "driver-a", "pool-c", "device-1", false),
            dev("req-0", "driver-a", "pool-c", "device-2", false),
        ]]
    );

    // driver-b's devices fail at runtime; driver-a's match. Two devices are found in pool-a
    // before the walk reaches driver-b.
    let failing: Arc<DeviceClass> = Arc::new(
        serde_json::from_value(
            json!({"metadata": {"name": "class-a"}, "spec": {"selectors": [
            {"cel": {"expression": "device.driver == \"driver-a\" || 1 / 0 == 1"}}]}}),
        )
        .unwrap(),
    );
    c.classes = vec![failing];
    c.claims = vec![claim(
        "claim-0",
        vec![req("req-0", "class-a", 2)],
        json!([]),
    )];
    let r = run(&c).unwrap().unwrap();
    assert_eq!(
        results(&r),
        vec![vec![
            dev("req-0", "driver-a", "pool-a", "device-1", false),
            dev("req-0", "driver-a", "pool-a", "device-2", false),
        ]]
    );
    // Pools go in (driver, pool) order: five devices take the walk past driver-a's four to
    // driver-b's pool, whose first device errors.
    c.claims = vec![claim(
        "claim-0",
        vec![req("req-0", "class-a", 5)],
        json!([]),
    )];
    let err = run(&c).unwrap_err();
    assert!(err.contains("CEL runtime error"), "{err}");
}

/// The plugin reads the run's gates: DRAPrioritizedList and DRAAdminAccess turned off in a
/// scenario's `featureGates` reach the allocator.
#[test]
fn the_run_gates_reach_the_allocator() {
    use ksim_api::version::{FeatureGates, KubernetesVersion};
    let mut gates = FeatureGates::new(KubernetesVersion::V1_35);
    let on = super::allocator_features(&crate::framework::Features::from_gates(&gates));
    assert_eq!(on, Features::default());
    let off: BTreeMap<String, bool> = [
        ("DRAPrioritizedList".to_string(), false),
        ("DRAAdminAccess".to_string(), false),
    ]
    .into();
    gates.set_from_map(&off).unwrap();
    let f = super::allocator_features(&crate::framework::Features::from_gates(&gates));
    assert!(!f.prioritized_list && !f.admin_access);
    let c = Case {
        features: f,
        claims: vec![claim(
            "claim-0",
            vec![json!({"name": "req-0", "firstAvailable": [
                {"name": "sub-0", "deviceClassName": "class-a", "allocationMode": "ExactCount", "count": 1}]})],
            json!([]),
        )],
        slices: vec![one_device("slice-1", "node-1", "pool-1", "driver-a")],
        ..Default::default()
    };
    assert_eq!(
        run(&c).unwrap_err(),
        "claim claim-0, request req-0: has subrequests, but the DRAPrioritizedList feature is disabled"
    );
}
