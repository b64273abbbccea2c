//! Upstream's `TestPlugin` rows for DRAExtendedResource (v1.36 `dynamicresources_test.go`;
//! see `plugin_table.rs` for how rows are driven and compared), with upstream's objects:
//! `extendedResourceName` `example.com/gpu` (`…2`: `example.com/gpu2`), the implicit
//! `deviceclass.resource.kubernetes.io/my-resource-class`, pods built with `st.MakePod().Req`
//! (one container `con<i>` per `Req`), and the claims `extendedResourceClaim*`. The created
//! claim is named as upstream's fake API server names it (`my-pod-extended-resources-0`).
//!
//! Not ported: `extended-resource-name-with-resources-fail-patch` and
//! `extended-resource-name-claim-creation-failure` (API write failures, which ksim does not
//! inject), and every `metrics` check.

use ksim_api::resource::{DeviceClass, ResourceClaim};
use ksim_api::Pod;
use serde_json::{json, Value};

use super::extended_resources::SPECIAL_CLAIM_NAME;
use super::plugin_table::{
    check_steps, cmp_all, device_class, node, parse, run, slice, stored_form, worker_node_slice,
    Case, Run, CLASS, POD_UID, W,
};

const GPU: &str = "example.com/gpu";
const GPU2: &str = "example.com/gpu2";
const IMPLICIT: &str = "deviceclass.resource.kubernetes.io/my-resource-class";

/// `deviceClassWithExtendResourceName` / `…2` (`my-resource-class2`, `example.com/gpu2`).
fn class_with(name: &str, resource: &str) -> DeviceClass {
    parse(json!({"metadata": {"name": name}, "spec": {"extendedResourceName": resource}}))
}

/// `st.MakePod()…UID("1234")` with one container per `Req(map)`.
fn pod_req(containers: &[&[(&str, &str)]]) -> Pod {
    let cs: Vec<Value> = containers
        .iter()
        .enumerate()
        .map(|(i, reqs)| {
            let r: serde_json::Map<String, Value> = reqs
                .iter()
                .map(|(k, v)| (k.to_string(), json!(v)))
                .collect();
            json!({"name": format!("con{i}"), "resources": {"requests": r}})
        })
        .collect();
    parse(
        json!({"metadata": {"name": "my-pod", "namespace": "default", "uid": POD_UID},
        "spec": {"containers": cs}}),
    )
}

/// `podWithExtendedResourceName`.
fn pod_gpu() -> Pod {
    pod_req(&[&[(GPU, "1")]])
}

/// `workerNodeWithExtendedResource` (`example.com/gpu: n` allocatable).
fn worker_with_gpu(n: &str) -> ksim_api::Node {
    let mut w = node("worker");
    w.status.allocatable.insert(GPU.into(), parse(json!(n)));
    w
}

/// `largeWorkerNodeSlice`: instance-1..4 on worker.
fn large_worker_node_slice() -> ksim_api::resource::ResourceSlice {
    slice(
        "worker",
        &[
            ("instance-1", None),
            ("instance-2", None),
            ("instance-3", None),
            ("instance-4", None),
        ],
    )
}

/// `extendedResourceClaim*`: `name`, requests `(name, class, count)`, allocated on `pool`
/// (node selector for `node`) with results `(request, device)`.
fn ext_claim(
    name: &str,
    requests: &[(&str, &str, i64)],
    node: &str,
    results: &[(&str, &str)],
) -> ResourceClaim {
    let reqs: Vec<Value> = requests
        .iter()
        .map(|(n, c, k)| {
            json!({"name": n, "exactly": {"deviceClassName": c,
            "allocationMode": "ExactCount", "count": k}})
        })
        .collect();
    let res: Vec<Value> = results
        .iter()
        .map(|(r, d)| json!({"request": r, "driver": "some-driver", "pool": "worker", "device": d}))
        .collect();
    parse(json!({
        "metadata": {"name": name, "namespace": "default",
            "generateName": "my-pod-extended-resources-",
            "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "my-pod",
                "uid": POD_UID, "controller": true}],
            "finalizers": [super::FINALIZER]},
        "spec": {"devices": {"requests": reqs}},
        "status": {"allocation": {"devices": {"results": res}, "nodeSelector": {
            "nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}
    }))
}

/// `reserve(claim, pod)`.
fn reserved(mut c: ResourceClaim) -> ResourceClaim {
    c.status.reserved_for.push(parse(
        json!({"resource": "pods", "name": "my-pod", "uid": POD_UID}),
    ));
    c
}

/// Compared as upstream does, and without the object's type fields (the test objects have
/// none).
fn cmp(cs: &[ResourceClaim]) -> Vec<ResourceClaim> {
    cmp_all(cs)
        .into_iter()
        .map(|mut c| {
            c.api_version.clear();
            c.kind.clear();
            c
        })
        .collect()
}

fn case(pod: Pod, classes: Vec<DeviceClass>) -> Case {
    Case {
        extended_resource: true,
        pod,
        classes,
        ..Case::default()
    }
}

const CREATED: &str = "my-pod-extended-resources-0";

/// The claims stored at the end, compared.
fn stored(r: &Run) -> Vec<ResourceClaim> {
    cmp(&r.stored.values().cloned().collect::<Vec<_>>())
}

/// A row that allocates and creates the claim: Reserve's in-flight claim is the in-memory one,
/// PreBind's the created one, reserved for the pod.
fn check_created(r: &Run, requests: &[(&str, &str, i64)], results: &[(&str, &str)]) {
    check_steps(
        r,
        &[
            ("PreEnqueue", W::Ok),
            ("PreFilter", W::Ok),
            ("Filter/worker", W::Ok),
            ("Reserve", W::Ok),
            ("PreBind", W::Ok),
        ],
    );
    let in_mem = ext_claim(SPECIAL_CLAIM_NAME, requests, "worker", results);
    assert_eq!(cmp(&r.in_flight_after_reserve), cmp(&[in_mem]));
    let created = stored_form(reserved(ext_claim(CREATED, requests, "worker", results)));
    assert_eq!(stored(r), cmp(&[created]));
    // Nothing is left in flight: the claim is the cluster's now.
    assert!(r.after_prebind.0.is_empty() && r.after_prebind.1.is_empty());
}

/// `empty-with-extended-resources-enabled`: as `empty` (PreFilter skips; upstream's loop
/// still calls Filter, which passes, so the pod reaches Reserve and PreBind with nothing to
/// do).
#[test]
fn empty_with_extended_resources_enabled() {
    let r = run(case(
        parse(json!({"metadata": {"name": "foo", "namespace": "default"},
            "spec": {"containers": [{"name": "c"}]}})),
        vec![],
    ));
    check_steps(
        &r,
        &[
            ("PreEnqueue", W::Ok),
            ("PreFilter", W::Skip),
            ("Filter/worker", W::Ok),
            ("Reserve", W::Ok),
            ("PreBind", W::Ok),
        ],
    );
    assert!(r.stored.is_empty() && r.in_flight_after_reserve.is_empty());
}

/// `extended-resource-name-with-node-resource`: the device plugin serves it; nothing to do.
#[test]
fn extended_resource_name_with_node_resource() {
    let mut c = case(pod_gpu(), vec![class_with(CLASS, GPU)]);
    c.nodes = vec![worker_with_gpu("1")];
    let r = run(c);
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
    assert!(r.in_flight_after_reserve.is_empty());
    assert!(r.stored.is_empty(), "no claim created");
}

/// `extended-resource-one-device-plugin-one-dra`: gpu from the device plugin, gpu2 by DRA.
#[test]
fn extended_resource_one_device_plugin_one_dra() {
    let mut c = case(
        pod_req(&[&[(GPU, "1"), (GPU2, "1")]]),
        vec![
            class_with(CLASS, GPU),
            class_with("my-resource-class2", GPU2),
        ],
    );
    c.nodes = vec![worker_with_gpu("1")];
    c.slices = vec![worker_node_slice()];
    let r = run(c);
    check_created(
        &r,
        &[("container-0-request-1", "my-resource-class2", 1)],
        &[("container-0-request-1", "instance-1")],
    );
}

/// `extended-resource-name-with-zero-allocatable`: an advertised 0 is DRA's to serve.
#[test]
fn extended_resource_name_with_zero_allocatable() {
    let mut c = case(pod_gpu(), vec![class_with(CLASS, GPU)]);
    c.nodes = vec![worker_with_gpu("0")];
    c.slices = vec![worker_node_slice()];
    let r = run(c);
    check_created(
        &r,
        &[("container-0-request-0", CLASS, 1)],
        &[("container-0-request-0", "instance-1")],
    );
}

/// `non-DRA-extended-resource-name-with-zero-allocatable`: no class backs it.
#[test]
fn non_dra_extended_resource_name_with_zero_allocatable() {
    let mut c = case(pod_gpu(), vec![device_class()]);
    c.nodes = vec![worker_with_gpu("0")];
    c.slices = vec![worker_node_slice()];
    let r = run(c);
    check_steps(
        &r,
        &[
            ("PreEnqueue", W::Ok),
            ("PreFilter", W::Skip),
            ("Filter/worker", W::Ok),
            ("Reserve", W::Ok),
            ("PreBind", W::Ok),
        ],
    );
    assert!(r.stored.is_empty());
}

/// `extended-resource-name-no-resource`: no device anywhere.
#[test]
fn extended_resource_name_no_resource() {
    let r = run(case(pod_gpu(), vec![class_with(CLASS, GPU)]));
    check_steps(
        &r,
        &[
            ("PreEnqueue", W::Ok),
            ("PreFilter", W::Ok),
            ("Filter/worker", W::Msg("cannot allocate all claims")),
            ("PostFilter", W::Msg("still not schedulable")),
        ],
    );
    assert!(r.stored.is_empty());
}

/// `extended-resource-name-with-resources`.
#[test]
fn extended_resource_name_with_resources() {
    let mut c = case(pod_gpu(), vec![class_with(CLASS, GPU)]);
    c.slices = vec![worker_node_slice()];
    let r = run(c);
    check_created(
        &r,
        &[("container-0-request-0", CLASS, 1)],
        &[("container-0-request-0", "instance-1")],
    );
}

/// `implicit-extended-resource-name-with-resources`: the class's implicit name and its
/// explicit one in one container; one request each, by the sorted request names.
#[test]
fn implicit_extended_resource_name_with_resources() {
    let mut c = case(
        pod_req(&[&[(IMPLICIT, "1"), (GPU, "2")]]),
        vec![class_with(CLASS, GPU)],
    );
    c.slices = vec![large_worker_node_slice()];
    let r = run(c);
    check_created(
        &r,
        &[
            ("container-0-request-0", CLASS, 1),
            ("container-0-request-1", CLASS, 2),
        ],
        &[
            ("container-0-request-0", "instance-1"),
            ("container-0-request-1", "instance-2"),
            ("container-0-request-1", "instance-3"),
        ],
    );
}

/// `implicit-extended-resource-name-two-containers-with-resources`.
#[test]
fn implicit_extended_resource_name_two_containers_with_resources() {
    let mut c = case(
        pod_req(&[&[(IMPLICIT, "1")], &[(GPU, "2")]]),
        vec![class_with(CLASS, GPU)],
    );
    c.slices = vec![large_worker_node_slice()];
    let r = run(c);
    check_created(
        &r,
        &[
            ("container-0-request-0", CLASS, 1),
            ("container-1-request-0", CLASS, 2),
        ],
        &[
            ("container-0-request-0", "instance-1"),
            ("container-1-request-0", "instance-2"),
            ("container-1-request-0", "instance-3"),
        ],
    );
}

/// `extended-resource-name-with-resources-has-claim` / `…-delete-claim`: a claim a former
/// cycle created (allocated on worker, or on worker-2) is deleted by PostFilter.
#[test]
fn extended_resource_name_with_resources_has_or_deletes_claim() {
    for node in ["worker", "worker-2"] {
        let mut c = case(pod_gpu(), vec![class_with(CLASS, GPU)]);
        c.slices = vec![worker_node_slice()];
        c.claims = vec![ext_claim(
            CREATED,
            &[("container-0-request-0", CLASS, 1)],
            node,
            &[("container-0-request-0", "instance-1")],
        )];
        let r = run(c);
        check_steps(
            &r,
            &[
                ("PreEnqueue", W::Ok),
                ("PreFilter", W::Ok),
                (
                    "Filter/worker",
                    W::Msg("cannot schedule extended resource claim"),
                ),
                ("PostFilter", W::Msg("deletion of ResourceClaim completed")),
            ],
        );
        assert!(r.stored.is_empty(), "{node}: the claim is removed");
    }
}

/// `extended-resource-name-bind-failure`: Unreserve deletes the claim PreBind created.
#[test]
fn extended_resource_name_bind_failure() {
    let mut c = case(pod_gpu(), vec![class_with(CLASS, GPU)]);
    c.slices = vec![worker_node_slice()];
    c.unreserve_after_bind_failure = true;
    let r = run(c);
    check_steps(
        &r,
        &[
            ("PreEnqueue", W::Ok),
            ("PreFilter", W::Ok),
            ("Filter/worker", W::Ok),
            ("Reserve", W::Ok),
            ("PreBind", W::Ok),
            ("Unreserve", W::Ok),
        ],
    );
    assert!(r.stored.is_empty(), "the created claim is removed");
    assert!(r.after_unreserve.0.is_empty() && r.after_unreserve.1.is_empty());
}

/// `extended-resource-name-skip-bind`: Unreserve before PreBind drops the in-flight claim;
/// nothing was created.
#[test]
fn extended_resource_name_skip_bind() {
    let mut c = case(pod_gpu(), vec![class_with(CLASS, GPU)]);
    c.slices = vec![worker_node_slice()];
    c.unreserve_before_prebind = true;
    let r = run(c);
    check_steps(
        &r,
        &[
            ("PreEnqueue", W::Ok),
            ("PreFilter", W::Ok),
            ("Filter/worker", W::Ok),
            ("Reserve", W::Ok),
            ("Unreserve", W::Ok),
        ],
    );
    assert_eq!(r.in_flight_after_reserve.len(), 1);
    assert!(r.after_unreserve.0.is_empty());
    assert!(r.stored.is_empty());
}
