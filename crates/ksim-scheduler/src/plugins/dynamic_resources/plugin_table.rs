//! Upstream's `TestPlugin` table (`pkg/scheduler/framework/plugins/dynamicresources/
//! dynamicresources_test.go`, the `resource.k8s.io/v1` version with `fwk`, v1.34+) ported as
//! facts: the same pod, claims, classes, slices and nodes, driven through the extension points
//! in the order upstream's test loop drives them, with the same expected statuses, claims
//! written, in-flight and assumed claims. The prioritized-list rows are in
//! `plugin_table_scoring.rs`, the DRADeviceTaints rows in `plugin_table_device_taints.rs`, the
//! other rows in `plugin_table_cases.rs`; the queueing-hint, `computeScore` and `NormalizeScore` tables in
//! `plugin_table_hints.rs`.
//!
//! How upstream compares (its `verify`), kept here: a status that is an error or a rejection
//! is compared by its message containing the expected text (the code is not compared: the
//! table itself names different codes for the same path); a Skip or Success must be exactly
//! that. Stored claims are compared without UIDs, allocation timestamps and device names
//! ("it does not matter which specific device is allocated").
//!
//! Cases not ported, by name:
//! - gates ksim keeps off and refuses at load time (see docs/dra.md "Refused"):
//!   DRAExtendedResource: `empty-with-extended-resources-enabled`,
//!   `extended-resource-name-with-node-resource`, `extended-resource-one-device-plugin-one-dra`,
//!   `extended-resource-name-with-zero-allocatable`,
//!   `non-DRA-extended-resource-name-with-zero-allocatable`, `extended-resource-name-no-resource`,
//!   `extended-resource-name-with-resources`, `implicit-extended-resource-name-with-resources`,
//!   `implicit-extended-resource-name-two-containers-with-resources`,
//!   `extended-resource-name-with-resources-fail-patch`,
//!   `extended-resource-name-with-resources-has-claim`,
//!   `extended-resource-name-with-resources-delete-claim`, `extended-resource-name-bind-failure`,
//!   `extended-resource-name-skip-bind`, `extended-resource-name-claim-creation-failure`;
//!   DRADeviceBindingConditions: `bound-claim-with-succeeded-binding-conditions`,
//!   `bound-claim-with-failed-binding`, `bound-claim-with-timed-out-binding`,
//!   `prebind-fail-with-binding-timeout`, `bound-claim-with-mixed-binding-conditions`,
//!   `bound-claim-without-binding-conditions`, `multi-claims-binding-conditions-all-success`,
//!   `multi-claims-binding-conditions-one-fail`.
//! - upstream plumbing with no ksim counterpart: `DRA-disabled` (DynamicResourceAllocation is
//!   GA and locked on in v1.35; ksim has no "plugin disabled" mode inside the plugin),
//!   `canceled`, `timeout`, `timeout_disabled`, `timeout_zero` (`filterTimeout` and a
//!   cancelled context bound the allocator's wall-clock time; ksim's allocator runs in virtual
//!   time and has no `DynamicResourcesArgs`; the last two are `with-resources` otherwise),
//!   every `prebindPreFlight` expectation (ksim's framework has no PreBindPreFlight), the
//!   `postbind` expectations (upstream's loop never checks them) and the `metrics` checks.
//!
//! The plugin is built in one place, [`plugin`]; its in-flight and assumed claims are read in
//! one place, [`claims_in_flight`].

use std::collections::BTreeMap;
use std::sync::Arc;

use ksim_api::config::{KubeSchedulerConfiguration, Profile};
use ksim_api::resource::{DeviceClass, ResourceClaim, ResourceSlice};
use ksim_api::{Node, Pod};
use rand::SeedableRng;
use serde_json::{json, Value};

use super::allocator::Features;
use super::{prebind_writes, DynamicResources};
use crate::framework::{
    build_framework, Code, CycleState, FilterPlugin, NoNominatedPods, NodeToStatus,
    PostFilterContext, PostFilterPlugin, PreBindPlugin, PreEnqueuePlugin, PreFilterPlugin,
    Registry, ReservePlugin, ScorePlugin, Status,
};
use crate::node_info::{ClusterObjects, Snapshot};
use crate::pod_info::PodInfo;

// ---- the one constructor and the one look into the plugin's internals ----------------------

/// The plugin under test, with the table's gates.
pub(super) fn plugin(features: Features) -> DynamicResources {
    DynamicResources::with_features(features)
}

/// The claims the plugin holds in flight (Reserve → PreBind, upstream `inFlightAllocations`)
/// and assumed (written by PreBind, upstream's assume cache), each sorted by key.
pub(super) fn claims_in_flight(p: &DynamicResources) -> (Vec<ResourceClaim>, Vec<ResourceClaim>) {
    let inf = super::lock(&p.in_flight);
    let mut pending = Vec::new();
    let mut assumed = Vec::new();
    for (assumed_copy, c) in inf.values() {
        if *assumed_copy {
            assumed.push((**c).clone());
        } else {
            pending.push((**c).clone());
        }
    }
    (pending, assumed)
}

// ---- upstream's test objects -----------------------------------------------------------------

pub(super) const POD_UID: &str = "1234";
pub(super) const CLAIM: &str = "my-pod-my-resource";
pub(super) const CLAIM2: &str = "my-pod-my-resource-2";
pub(super) const CLASS: &str = "my-resource-class";
const DRIVER: &str = "some-driver";

pub(super) fn parse<T: serde::de::DeserializeOwned>(v: Value) -> T {
    serde_json::from_value(v).expect("test object")
}

/// `st.MakePod().Name("my-pod").Namespace("default").UID("1234")` with `PodResourceClaims`:
/// `(entry name, claim name or None, template name or None)`.
fn pod_with(entries: &[(&str, Option<&str>, Option<&str>)], statuses: &[(&str, &str)]) -> Pod {
    let claims: Vec<Value> = entries
        .iter()
        .map(|(n, c, t)| {
            let mut e = json!({"name": n});
            if let Some(c) = c {
                e["resourceClaimName"] = json!(c);
            }
            if let Some(t) = t {
                e["resourceClaimTemplateName"] = json!(t);
            }
            e
        })
        .collect();
    let statuses: Vec<Value> = statuses
        .iter()
        .map(|(n, c)| json!({"name": n, "resourceClaimName": c}))
        .collect();
    parse(json!({
        "metadata": {"name": "my-pod", "namespace": "default", "uid": POD_UID},
        "spec": {"containers": [{"name": "c"}], "resourceClaims": claims},
        "status": {"resourceClaimStatuses": statuses}
    }))
}

/// `podWithClaimName`.
pub(super) fn pod_with_claim_name() -> Pod {
    pod_with(&[("my-resource", Some(CLAIM), None)], &[])
}

/// `podWithClaimTemplate` (status not set).
pub(super) fn pod_with_claim_template() -> Pod {
    pod_with(&[("my-resource", None, Some(CLAIM))], &[])
}

/// `podWithClaimTemplateInStatus`.
pub(super) fn pod_with_claim_template_in_status() -> Pod {
    pod_with(
        &[("my-resource", None, Some(CLAIM))],
        &[("my-resource", CLAIM)],
    )
}

/// `podWithTwoClaimNames`.
pub(super) fn pod_with_two_claim_names() -> Pod {
    pod_with(
        &[
            ("my-resource", Some(CLAIM), None),
            ("my-resource-2", Some(CLAIM2), None),
        ],
        &[],
    )
}

/// `podWithTwoClaimTemplates`.
pub(super) fn pod_with_two_claim_templates() -> Pod {
    pod_with(
        &[
            ("my-resource", None, Some(CLAIM)),
            ("my-resource-2", None, Some(CLAIM)),
        ],
        &[],
    )
}

/// `st.MakeNode().Name(n).Label("kubernetes.io/hostname", n)`.
pub(super) fn node(name: &str) -> Node {
    parse(json!({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}}))
}

/// `st.MakeResourceSlice(node, "some-driver")` with devices `(name, healthy attribute)`.
pub(super) fn slice(node: &str, devices: &[(&str, Option<bool>)]) -> ResourceSlice {
    let devices: Vec<Value> = devices
        .iter()
        .map(|(n, healthy)| match healthy {
            Some(b) => json!({"name": n, "attributes": {"healthy": {"bool": b}}}),
            None => json!({"name": n}),
        })
        .collect();
    parse(
        json!({"metadata": {"name": format!("{node}-{DRIVER}")}, "spec": {
        "driver": DRIVER, "nodeName": node,
        "pool": {"name": node, "generation": 0, "resourceSliceCount": 1},
        "devices": devices}}),
    )
}

/// `workerNodeSlice`: instance-1 on worker, without attributes.
pub(super) fn worker_node_slice() -> ResourceSlice {
    slice("worker", &[("instance-1", None)])
}

/// `deviceClass`: no selectors.
pub(super) fn device_class() -> DeviceClass {
    parse(json!({"metadata": {"name": CLASS}}))
}

/// `brokenSelector`: an attribute worker's device does not have.
pub(super) const BROKEN: &str = "device.attributes[\"some-driver\"].healthy";

/// `breakCELInClass`.
pub(super) fn break_cel_in_class(mut c: DeviceClass) -> DeviceClass {
    c.spec.selectors = vec![parse(json!({"cel": {"expression": BROKEN}}))];
    c
}

/// `Request(class)`: `req-<n>`, ExactCount 1.
pub(super) fn req(n: usize, class: &str) -> Value {
    json!({"name": format!("req-{n}"), "exactly": {"deviceClassName": class,
        "allocationMode": "ExactCount", "count": 1}})
}

/// `RequestWithPrioritizedList(subrequests...)`: `req-<n>` with `firstAvailable`.
pub(super) fn prioritized(n: usize, subs: Vec<Value>) -> Value {
    json!({"name": format!("req-{n}"), "firstAvailable": subs})
}

/// `st.SubRequest(name, class, count)`.
pub(super) fn sub(name: &str, count: i64) -> Value {
    json!({"name": name, "deviceClassName": CLASS, "allocationMode": "ExactCount", "count": count})
}

/// `st.SubRequestWithSelector(name, class, expression)`.
pub(super) fn sub_with_selector(name: &str, expr: &str) -> Value {
    json!({"name": name, "deviceClassName": CLASS, "allocationMode": "ExactCount",
        "count": 1, "selectors": [{"cel": {"expression": expr}}]})
}

/// `st.MakeResourceClaim().Name(name).Namespace("default")` with requests.
pub(super) fn claim(name: &str, requests: Vec<Value>) -> ResourceClaim {
    parse(json!({"metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": requests}}}))
}

/// `OwnerReference(podName, podUID, podKind)`: the pod as controller.
pub(super) fn owned(mut c: ResourceClaim) -> ResourceClaim {
    c.metadata.owner_references = vec![parse(json!({"apiVersion": "v1", "kind": "Pod",
        "name": "my-pod", "uid": POD_UID, "controller": true}))];
    c
}

/// `pendingClaim`.
pub(super) fn pending_claim() -> ResourceClaim {
    owned(claim(CLAIM, vec![req(1, CLASS)]))
}

/// `otherClaim`.
pub(super) fn other_claim() -> ResourceClaim {
    claim("not-my-claim", vec![req(1, CLASS)])
}

/// `Allocation(result)`: the allocation (results `(request, device)` of some-driver in pool
/// worker, node selector `metadata.name In [worker]`) and the finalizer.
pub(super) fn allocated(c: ResourceClaim, results: &[(&str, &str)]) -> ResourceClaim {
    let results: Vec<Value> = results
        .iter()
        .map(|(r, d)| json!({"request": r, "driver": DRIVER, "pool": "worker", "device": d}))
        .collect();
    with_allocation(
        c,
        json!({"devices": {"results": results}, "nodeSelector": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["worker"]}]}]}}),
    )
}

pub(super) fn with_allocation(mut c: ResourceClaim, allocation: Value) -> ResourceClaim {
    c.status.allocation = Some(parse(allocation));
    if !c.metadata.finalizers.iter().any(|f| f == super::FINALIZER) {
        c.metadata.finalizers.push(super::FINALIZER.into());
    }
    c
}

/// `allocatedClaim`: `pendingClaim` with `allocationResult` (req-1 → instance-1 on worker).
pub(super) fn allocated_claim() -> ResourceClaim {
    allocated(pending_claim(), &[("req-1", "instance-1")])
}

/// `otherAllocatedClaim`.
pub(super) fn other_allocated_claim() -> ResourceClaim {
    allocated(other_claim(), &[("req-1", "instance-1")])
}

/// `allocatedClaimWithWrongTopology` / `...GoodTopology`: an allocation of no device whose
/// node selector is a label expression.
pub(super) fn allocated_with_topology(key: &str, value: &str) -> ResourceClaim {
    with_allocation(
        pending_claim(),
        json!({"nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
            {"key": key, "operator": "In", "values": [value]}]}]}}),
    )
}

/// `reserve(claim, pod)`: the pod appended to `reservedFor`.
pub(super) fn reserve(mut c: ResourceClaim) -> ResourceClaim {
    c.status.reserved_for.push(parse(
        json!({"resource": "pods", "name": "my-pod", "uid": POD_UID}),
    ));
    c
}

/// `adminAccess(claim)`: every request and every result with admin access.
pub(super) fn admin_access(mut c: ResourceClaim) -> ResourceClaim {
    for r in &mut c.spec.devices.requests {
        if let Some(e) = &mut r.exactly {
            e.admin_access = Some(true);
        }
    }
    if let Some(a) = &mut c.status.allocation {
        for r in &mut a.devices.results {
            r.admin_access = Some(true);
        }
    }
    c
}

/// `breakCELInClaim`.
pub(super) fn break_cel_in_claim(mut c: ResourceClaim) -> ResourceClaim {
    for r in &mut c.spec.devices.requests {
        if let Some(e) = &mut r.exactly {
            e.selectors = vec![parse(json!({"cel": {"expression": BROKEN}}))];
        }
    }
    c
}

/// `updateDeviceClassName`.
pub(super) fn with_class(mut c: ResourceClaim, class: &str) -> ResourceClaim {
    for r in &mut c.spec.devices.requests {
        if let Some(e) = &mut r.exactly {
            e.device_class_name = class.into();
        }
        for s in &mut r.first_available {
            s.device_class_name = class.into();
        }
    }
    c
}

/// `claimWithPrioritzedList` (not owned).
pub(super) fn claim_with_prioritized_list() -> ResourceClaim {
    claim(CLAIM, vec![prioritized(1, vec![sub("subreq-1", 1)])])
}

// ---- the test loop ---------------------------------------------------------------------------

/// One row of the table.
pub(super) struct Case {
    pub(super) features: Features,
    /// `nil` in upstream: `[workerNode]`.
    pub(super) nodes: Vec<Node>,
    pub(super) pod: Pod,
    pub(super) claims: Vec<ResourceClaim>,
    pub(super) classes: Vec<DeviceClass>,
    pub(super) slices: Vec<ResourceSlice>,
    /// `prepare.prebind`: a change of the stored claims before PreBind.
    pub(super) prepare_prebind: Option<fn(&mut ResourceClaim)>,
    pub(super) unreserve_before_prebind: bool,
    pub(super) unreserve_after_bind_failure: bool,
}

impl Default for Case {
    /// The table's defaults: every optional gate off (`enableDRAAdminAccess`,
    /// `enableDRAPrioritizedList` false), the worker node, nothing stored.
    fn default() -> Self {
        Case {
            features: Features {
                admin_access: false,
                prioritized_list: false,
                ..Features::default()
            },
            nodes: vec![node("worker")],
            pod: pod_with_claim_name(),
            claims: vec![],
            classes: vec![],
            slices: vec![],
            prepare_prebind: None,
            unreserve_before_prebind: false,
            unreserve_after_bind_failure: false,
        }
    }
}

/// What the loop saw.
#[derive(Default)]
pub(super) struct Run {
    /// Each extension point that ran, with its status (`Filter/<node>`, `Score/<node>`).
    pub(super) steps: Vec<(String, Status)>,
    pub(super) scores: Vec<(String, i64)>,
    pub(super) normalized: Vec<(String, i64)>,
    /// In-flight claims right after Reserve.
    pub(super) in_flight_after_reserve: Vec<ResourceClaim>,
    /// In-flight and assumed claims right after PreBind.
    pub(super) after_prebind: (Vec<ResourceClaim>, Vec<ResourceClaim>),
    /// In-flight and assumed claims right after an Unreserve.
    pub(super) after_unreserve: (Vec<ResourceClaim>, Vec<ResourceClaim>),
    /// The stored claims before the loop (as the API server defaulted them) and at its end.
    pub(super) initial: BTreeMap<String, ResourceClaim>,
    pub(super) stored: BTreeMap<String, ResourceClaim>,
}

fn objects_of(
    api: &BTreeMap<String, ResourceClaim>,
    classes: &[DeviceClass],
    slices: &[ResourceSlice],
) -> Arc<ClusterObjects> {
    let mut o = ClusterObjects::default();
    for (k, c) in api {
        o.dra.resource_claims.insert(k.clone(), Arc::new(c.clone()));
    }
    for c in classes {
        o.dra
            .device_classes
            .insert(c.metadata.name.clone(), Arc::new(c.clone()));
    }
    for s in slices {
        o.dra
            .resource_slices
            .insert(s.metadata.name.clone(), Arc::new(s.clone()));
    }
    Arc::new(o)
}

/// Upstream `testPlugin`'s loop for one case.
pub(super) fn run(case: Case) -> Run {
    let p = plugin(case.features);
    let mut r = Run::default();
    // `setup`: the claims are created through the API (uid `UID-<n>` in order, defaulted).
    let mut api = BTreeMap::new();
    for (i, c) in case.claims.iter().enumerate() {
        let mut c = c.clone();
        c.metadata.uid = format!("UID-{i}");
        ksim_api::resource::default_resource_claim(&mut c);
        api.insert(c.key(), c);
    }
    r.initial = api.clone();
    let objects = objects_of(&api, &case.classes, &case.slices);
    p.set_objects(objects.clone());
    let pod = PodInfo::new(case.pod.clone());
    let snapshot = Snapshot::build(
        case.nodes.iter().cloned().map(Arc::new),
        Vec::<Arc<PodInfo>>::new(),
        objects,
    );
    let done = |mut r: Run, api: BTreeMap<String, ResourceClaim>| {
        r.stored = api;
        r
    };

    let st = p.pre_enqueue(&pod);
    r.steps.push(("PreEnqueue".into(), st.clone()));
    if !st.is_success() {
        return done(r, api);
    }
    let mut state = CycleState::new();
    let (_, st) = p.pre_filter(&mut state, &pod, &snapshot);
    let mut unschedulable = st.is_rejected();
    r.steps.push(("PreFilter".into(), st));

    let mut potential: Vec<String> = Vec::new();
    if !unschedulable {
        for n in &case.nodes {
            let name = n.metadata.name.as_str();
            let info = &snapshot.nodes[snapshot.index[name]];
            let st = p.filter(&state, &pod, info).into_status();
            let code = st.code;
            r.steps.push((format!("Filter/{name}"), st));
            if code == Code::Success {
                potential.push(name.to_string());
            }
            if code == Code::Error {
                // An error aborts scheduling.
                return done(r, api);
            }
        }
        if potential.is_empty() {
            unschedulable = true;
        }
    }

    if !unschedulable && potential.len() > 1 {
        let mut scores = Vec::new();
        for name in &potential {
            let info = &snapshot.nodes[snapshot.index[name.as_str()]];
            let (score, st) = match p.score(&state, &pod, info) {
                Ok(s) => (s, Status::success()),
                Err(st) => (0, st),
            };
            r.steps.push((format!("Score/{name}"), st));
            r.scores.push((name.clone(), score));
            scores.push(score);
        }
        let st = p.normalize(&state, &pod, &mut scores);
        r.steps.push(("NormalizeScore".into(), st));
        r.normalized = potential.iter().cloned().zip(scores).collect();
    }

    let mut selected = String::new();
    if !unschedulable && !potential.is_empty() {
        selected = potential[0].clone();
        let mut best = i64::MIN;
        for (n, s) in &r.normalized {
            if *s > best {
                best = *s;
                selected = n.clone();
            }
        }
        let st = p.reserve(&mut state, &pod, &selected);
        if !st.is_success() {
            unschedulable = true;
        }
        r.steps.push(("Reserve".into(), st));
        r.in_flight_after_reserve = claims_in_flight(&p).0;
    }

    if !selected.is_empty() {
        if unschedulable || case.unreserve_before_prebind {
            p.unreserve(&mut state, &pod, &selected);
            r.steps.push(("Unreserve".into(), Status::success()));
            r.after_unreserve = claims_in_flight(&p);
            return done(r, api);
        }
        if let Some(change) = case.prepare_prebind {
            for c in api.values_mut() {
                change(c);
            }
            p.set_objects(objects_of(&api, &case.classes, &case.slices));
        }
        let st = p.pre_bind(&state, &pod, &selected);
        r.steps.push(("PreBind".into(), st));
        r.after_prebind = claims_in_flight(&p);
        // What the engine does with PreBind's writes: store them, then the plugin drops its
        // assumed copies.
        let written = prebind_writes(&state);
        let keys: Vec<String> = written.iter().map(|c| c.key()).collect();
        for c in written {
            api.insert(c.key(), c);
        }
        p.writes_applied(&keys);
        if case.unreserve_after_bind_failure {
            p.unreserve(&mut state, &pod, &selected);
            r.steps.push(("Unreserve".into(), Status::success()));
            r.after_unreserve = claims_in_flight(&p);
            // What the engine does with Unreserve's writes: the pod leaves `reservedFor`.
            for (key, uid) in p.take_unreservations() {
                if let Some(c) = api.get_mut(&key) {
                    c.status.reserved_for.retain(|x| x.uid != uid);
                }
            }
        }
    } else if potential.is_empty() {
        let cfg = KubeSchedulerConfiguration::default();
        let fwk = build_framework(&Registry::in_tree(), &cfg, &Profile::default())
            .expect("default framework");
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let mut ctx = PostFilterContext {
            framework: &fwk,
            snapshot: &snapshot,
            nominated: &NoNominatedPods,
            rng: &mut rng,
            extenders: &[],
        };
        let statuses = NodeToStatus::new(snapshot.nodes.len());
        let (_, st) = p.post_filter(&state, &pod, &statuses, &mut ctx);
        r.steps.push(("PostFilter".into(), st));
        // What the engine does with PostFilter's deallocations.
        for key in p.take_deallocations() {
            if let Some(c) = api.get_mut(&key) {
                c.status.allocation = None;
                c.status.reserved_for.clear();
                c.status.devices.clear();
            }
        }
    }
    done(r, api)
}

// ---- upstream's `verify` -----------------------------------------------------------------------

/// An expected status.
#[derive(Debug, Clone, Copy)]
pub(super) enum W {
    /// `nil`: success.
    Ok,
    /// `fwk.NewStatus(fwk.Skip)`.
    Skip,
    /// An error or rejection whose message contains the text.
    Msg(&'static str),
}

pub(super) fn check_steps(r: &Run, want: &[(&str, W)]) {
    let got: Vec<&str> = r.steps.iter().map(|(n, _)| n.as_str()).collect();
    let names: Vec<&str> = want.iter().map(|(n, _)| *n).collect();
    assert_eq!(got, names, "extension points run");
    for ((name, st), (_, w)) in r.steps.iter().zip(want) {
        match w {
            W::Ok => assert!(st.is_success(), "{name}: want success, got {st}"),
            W::Skip => assert_eq!(st.code, Code::Skip, "{name}: want Skip, got {st}"),
            W::Msg(m) => {
                assert!(
                    !st.is_success() && !st.is_skip() && st.code != Code::Wait,
                    "{name}: want an error containing {m:?}, got {st}"
                );
                assert!(
                    st.message().contains(m),
                    "{name}: want a message containing {m:?}, got {:?}",
                    st.message()
                );
            }
        }
    }
}

/// A claim as upstream compares it: no UID, no allocation timestamp, no device names.
fn cmp_form(c: &ResourceClaim) -> ResourceClaim {
    let mut c = c.clone();
    c.metadata.uid.clear();
    if let Some(a) = &mut c.status.allocation {
        a.allocation_timestamp = None;
        for d in &mut a.devices.results {
            d.device.clear();
        }
    }
    c
}

pub(super) fn cmp_all(cs: &[ResourceClaim]) -> Vec<ResourceClaim> {
    cs.iter().map(cmp_form).collect()
}

/// How a step changes a stored claim.
pub(super) type Change = fn(ResourceClaim) -> ResourceClaim;

/// The stored claims: the initial ones with `changes` applied to those named.
pub(super) fn check_stored(r: &Run, changes: &[(&str, Change)]) {
    let mut want = r.initial.clone();
    for (name, f) in changes {
        let key = format!("default/{name}");
        let c = want.remove(&key).expect("changed claim exists");
        want.insert(key, f(c));
    }
    let want: Vec<ResourceClaim> = want.values().map(cmp_form).collect();
    let got: Vec<ResourceClaim> = r.stored.values().map(cmp_form).collect();
    assert_eq!(got, want, "stored claims");
}

/// Defaulted as the API server stores it (the expectations are built from the inputs).
pub(super) fn stored_form(mut c: ResourceClaim) -> ResourceClaim {
    ksim_api::resource::default_resource_claim(&mut c);
    c
}
