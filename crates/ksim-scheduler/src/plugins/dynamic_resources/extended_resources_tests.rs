//! Upstream's `extendeddynamicresources_test.go` (v1.36) tables for `createRequestsAndMappings`
//! (`Test_createRequestsAndMappings_requests`, `…_mappings`), as facts, and the class
//! resolution of `ExtendedResourceCache` (newest class, then lowest name). Pods as upstream's
//! `st.MakePod()` builds them: `Res` adds a container `con<i>`, `InitReq` an init container
//! `init-con<i>`, `SidecarReq` an init container `sidecar-con<i>` with `restartPolicy: Always`
//! (`i` counts the list it is added to).

use std::sync::Arc;

use ksim_api::resource::DeviceClass;
use ksim_api::Pod;
use serde_json::{json, Value};

use super::extended_resources::{device_class_for, requests_and_mappings};
use crate::cluster_objects::DraMap;

const GPU: &str = "example.com/gpu";
const GPU1: &str = "example.com/gpu1";
const INIT: &str = "example.com/gpuinit";
const IMPLICIT_INIT: &str = "deviceclass.resource.kubernetes.io/classInit";

enum C<'a> {
    Res(&'a [(&'a str, &'a str)]),
    Init(&'a [(&'a str, &'a str)]),
    Sidecar(&'a [(&'a str, &'a str)]),
}

fn pod(cs: &[C<'_>]) -> Pod {
    let (mut containers, mut init) = (Vec::<Value>::new(), Vec::<Value>::new());
    let reqs = |r: &[(&str, &str)]| -> Value {
        Value::Object(r.iter().map(|(k, v)| (k.to_string(), json!(v))).collect())
    };
    for c in cs {
        match c {
            C::Res(r) => {
                let name = format!("con{}", containers.len());
                containers.push(json!({"name": name, "resources": {"requests": reqs(r)}}));
            }
            C::Init(r) => {
                let name = format!("init-con{}", init.len());
                init.push(json!({"name": name, "resources": {"requests": reqs(r)}}));
            }
            C::Sidecar(r) => {
                let name = format!("sidecar-con{}", init.len());
                init.push(json!({"name": name, "restartPolicy": "Always",
                    "resources": {"requests": reqs(r)}}));
            }
        }
    }
    serde_json::from_value(
        json!({"metadata": {"name": "my-pod", "namespace": "default"},
        "spec": {"containers": containers, "initContainers": init}}),
    )
    .expect("pod")
}

/// `(name, class, count)` of each request, sorted by name.
fn requests(p: &Pod, resources: &[(&str, &str)]) -> Vec<(String, String, i64)> {
    let (reqs, _) = requests_and_mappings(p, resources);
    reqs.iter()
        .map(|r| {
            let e = r.exactly.as_ref().expect("exactly");
            assert_eq!(e.allocation_mode, "ExactCount");
            (r.name.clone(), e.device_class_name.clone(), e.count)
        })
        .collect()
}

/// `(request, container, resource)` of each mapping, sorted as upstream's test sorts them.
fn mappings(p: &Pod, resources: &[(&str, &str)]) -> Vec<(String, String, String)> {
    let (_, maps) = requests_and_mappings(p, resources);
    let mut m: Vec<(String, String, String)> = maps
        .into_iter()
        .map(|m| (m.request_name, m.container_name, m.resource_name))
        .collect();
    m.sort();
    m
}

fn r(name: &str, class: &str, count: i64) -> (String, String, i64) {
    (name.into(), class.into(), count)
}

fn m(request: &str, container: &str, resource: &str) -> (String, String, String) {
    (request.into(), container.into(), resource.into())
}

fn pod1() -> Pod {
    pod(&[C::Res(&[(GPU, "1"), (GPU1, "2")])])
}
fn pod2() -> Pod {
    pod(&[C::Res(&[(GPU, "1")]), C::Res(&[(GPU1, "2")])])
}
fn pod_init() -> Pod {
    pod(&[C::Res(&[(GPU, "1")]), C::Init(&[(INIT, "2")])])
}
fn pod_init2() -> Pod {
    pod(&[
        C::Res(&[(GPU, "1")]),
        C::Init(&[(INIT, "1")]),
        C::Init(&[(INIT, "2")]),
    ])
}
fn pod_init3() -> Pod {
    pod(&[
        C::Res(&[(GPU, "1")]),
        C::Init(&[(INIT, "1")]),
        C::Sidecar(&[(INIT, "1")]),
        C::Init(&[(INIT, "2")]),
    ])
}

#[test]
fn create_requests_and_mappings_requests() {
    // "nil": no extended resource to serve.
    assert!(requests(&pod1(), &[]).is_empty());
    // "one resource match", "one resource match, one resource not match" (only the mapped
    // resource is given a class).
    assert_eq!(
        requests(&pod1(), &[(GPU, "class")]),
        [r("container-0-request-0", "class", 1)]
    );
    // "two resources match".
    assert_eq!(
        requests(&pod1(), &[(GPU, "class"), (GPU1, "class1")]),
        [
            r("container-0-request-0", "class", 1),
            r("container-0-request-1", "class1", 2)
        ]
    );
    // "two containers match".
    assert_eq!(
        requests(&pod2(), &[(GPU, "class"), (GPU1, "class1")]),
        [
            r("container-0-request-0", "class", 1),
            r("container-1-request-0", "class1", 2)
        ]
    );
    let init = [(GPU, "class"), (INIT, "classInit")];
    // "one init container, one regular container".
    assert_eq!(
        requests(&pod_init(), &init),
        [
            r("container-0-request-0", "classInit", 2),
            r("container-1-request-0", "class", 1)
        ]
    );
    // "two init containers, one regular container": the larger init request serves both.
    assert_eq!(
        requests(&pod_init2(), &init),
        [
            r("container-1-request-0", "classInit", 2),
            r("container-2-request-0", "class", 1)
        ]
    );
    // "three init containers, one sidecar, one regular container": the first init container
    // reuses the sidecar's request.
    assert_eq!(
        requests(&pod_init3(), &init),
        [
            r("container-1-request-0", "classInit", 1),
            r("container-2-request-0", "classInit", 2),
            r("container-3-request-0", "class", 1)
        ]
    );
}

#[test]
fn create_requests_and_mappings_mappings() {
    // "one container, two requests".
    assert_eq!(
        mappings(&pod1(), &[(GPU, "class"), (GPU1, "class1")]),
        [
            m("container-0-request-0", "con0", GPU),
            m("container-0-request-1", "con0", GPU1)
        ]
    );
    // "one container, one explicit and one implicit request".
    let implicit = [
        (GPU, "class"),
        (INIT, "classInit"),
        (IMPLICIT_INIT, "classInit"),
    ];
    let p = pod(&[C::Init(&[(INIT, "1"), (IMPLICIT_INIT, "2")])]);
    assert_eq!(
        mappings(&p, &implicit),
        [
            m("container-0-request-0", "init-con0", IMPLICIT_INIT),
            m("container-0-request-1", "init-con0", INIT)
        ]
    );
    // "two containers, two requests".
    assert_eq!(
        mappings(&pod2(), &[(GPU, "class"), (GPU1, "class1")]),
        [
            m("container-0-request-0", "con0", GPU),
            m("container-1-request-0", "con1", GPU1)
        ]
    );
    let init = [(GPU, "class"), (INIT, "classInit")];
    // "one init container, one regular container, one request".
    assert_eq!(
        mappings(&pod_init(), &init),
        [
            m("container-0-request-0", "init-con0", INIT),
            m("container-1-request-0", "con0", GPU)
        ]
    );
    // "three containers (two are init container), two requests".
    assert_eq!(
        mappings(&pod_init2(), &init),
        [
            m("container-1-request-0", "init-con0", INIT),
            m("container-1-request-0", "init-con1", INIT),
            m("container-2-request-0", "con0", GPU)
        ]
    );
    // "three containers (two are init container), both explicit and implicit resources".
    let p = pod(&[
        C::Res(&[(GPU, "1")]),
        C::Init(&[(INIT, "1")]),
        C::Init(&[(IMPLICIT_INIT, "2")]),
    ]);
    assert_eq!(
        mappings(&p, &implicit),
        [
            m("container-0-request-0", "init-con0", INIT),
            m("container-1-request-0", "init-con1", IMPLICIT_INIT),
            m("container-2-request-0", "con0", GPU)
        ]
    );
    // "four containers (two are init container, one sidecar), three requests".
    assert_eq!(
        mappings(&pod_init3(), &init),
        [
            m("container-1-request-0", "init-con0", INIT),
            m("container-1-request-0", "sidecar-con1", INIT),
            m("container-2-request-0", "init-con2", INIT),
            m("container-3-request-0", "con0", GPU)
        ]
    );
}

fn class(name: &str, resource: Option<&str>, created: &str) -> (String, Arc<DeviceClass>) {
    let mut v = json!({"metadata": {"name": name, "creationTimestamp": created}});
    if let Some(r) = resource {
        v["spec"] = json!({"extendedResourceName": r});
    }
    (
        name.into(),
        Arc::new(serde_json::from_value(v).expect("class")),
    )
}

/// `ExtendedResourceCache.updateResourceName2class`: among classes naming the same resource,
/// the newest wins, the lowest name among equally old ones; the implicit name is the class's.
#[test]
fn clashing_extended_resource_names_resolve_to_the_newest_class() {
    let classes: DraMap<DeviceClass> = [
        class("a", Some(GPU), "2026-01-01T00:00:00Z"),
        class("b", Some(GPU), "2026-02-01T00:00:00Z"),
        class("c", Some(GPU), "2026-02-01T00:00:00Z"),
        class("d", None, "2026-03-01T00:00:00Z"),
    ]
    .into_iter()
    .collect();
    let name = |r: &str| device_class_for(&classes, r).map(|c| c.metadata.name.clone());
    assert_eq!(name(GPU).as_deref(), Some("b"));
    assert_eq!(
        name("deviceclass.resource.kubernetes.io/a").as_deref(),
        Some("a")
    );
    assert_eq!(
        name("deviceclass.resource.kubernetes.io/d").as_deref(),
        Some("d")
    );
    assert_eq!(name("deviceclass.resource.kubernetes.io/x"), None);
    assert_eq!(name(GPU1), None);
}
