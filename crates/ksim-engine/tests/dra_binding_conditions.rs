//! DRADeviceBindingConditions through the engine (beta, on by default in v1.36): a pod whose
//! device has binding conditions stays in PreBind until the conditions are True in the
//! claim's `status.devices` (set by a simulated driver or a trace's UpdateObject), on
//! upstream's 5 s poll grid; a True failure condition or the `bindingTimeout` (600 s, or the
//! profile's DynamicResourcesArgs) fails the binding and sends the pod back to the queue;
//! other pods keep scheduling meanwhile. In v1.35 (gate off) such a slice is refused.

mod common;

use common::dra::{class, config, devices, node, object, slice_with, DRIVER};
use ksim_api::config::KubeSchedulerConfiguration;
use ksim_api::object::ApiObject;
use ksim_api::version::KubernetesVersion;
use ksim_api::Pod;
use ksim_engine::config::EngineConfig;
use ksim_engine::control_plane::{DraBindingOutcome, DraDriverModel};
use ksim_engine::{
    AttemptResult, InputEvent, Record, SimDuration, SimError, SimTime, Simulation, TimedEvent,
    VecSource,
};
use ksim_scheduler::framework::Registry;
use ksim_scheduler::node_info::ClusterObjects;
use serde_json::json;

fn secs(s: i64) -> SimTime {
    SimTime::from_secs(s)
}

/// n1's slice: one GPU with binding conditions `attached` / failure `attach-failed`.
fn bc_slice() -> ApiObject {
    let mut d = devices(1);
    d[0]["bindingConditions"] = json!(["attached"]);
    d[0]["bindingFailureConditions"] = json!(["attach-failed"]);
    slice_with("n1", d)
}

/// Claim `c` (one GPU).
fn claim() -> ApiObject {
    object(
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}),
    )
}

/// Pod `name`, with claim `c` or without claims.
fn pod(name: &str, with_claim: bool) -> Pod {
    let mut p = json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}
    });
    if with_claim {
        p["spec"]["resourceClaims"] = json!([{"name": "gpu", "resourceClaimName": "c"}]);
        p["spec"]["containers"][0]["resources"]["claims"] = json!([{"name": "gpu"}]);
    }
    serde_json::from_value(p).expect("pod")
}

fn create(at: i64, p: Pod) -> TimedEvent {
    TimedEvent {
        at: secs(at),
        event: InputEvent::CreatePod {
            pod: Box::new(p),
            run_for: None,
        },
    }
}

/// The engine configuration with the simulated driver of [`DRIVER`] (if any).
fn engine(horizon: i64, driver: Option<DraDriverModel>) -> EngineConfig {
    let mut cfg = config(Some(horizon), None);
    if let Some(m) = driver {
        cfg.control_plane.dra_drivers.insert(DRIVER.to_string(), m);
    }
    cfg
}

fn driver(delay: i64, outcome: DraBindingOutcome) -> Option<DraDriverModel> {
    Some(DraDriverModel {
        binding_delay: SimDuration::from_secs(delay),
        outcome,
    })
}

/// v1.36, node n1 with the binding-condition GPU, claim `c`, pod `p` at t=1 and `events`.
fn sim(
    cfg: EngineConfig,
    sched: &KubeSchedulerConfiguration,
    events: Vec<TimedEvent>,
) -> Result<Simulation, SimError> {
    let mut objs = ClusterObjects::default();
    for o in [class(), bc_slice(), claim()] {
        objs.put_object(o);
    }
    let registry = Registry::in_tree_for(KubernetesVersion::V1_36);
    let mut s = Simulation::new(cfg, sched, &registry, vec![node("n1")], objs)?;
    let mut all = vec![create(1, pod("p", true))];
    all.extend(events);
    all.sort_by_key(|e| e.at);
    s.add_source(Box::new(VecSource::new(all)))?;
    Ok(s)
}

fn run(s: &mut Simulation, to: i64) -> Vec<Record> {
    let mut out = Vec::new();
    s.run_to(secs(to), &mut |r: &Record| out.push(r.clone()))
        .expect("run");
    out
}

fn bound(records: &[Record], pod: &str) -> Option<SimTime> {
    records.iter().find_map(|r| match r {
        Record::PodBound { at, name, .. } if name == pod => Some(*at),
        _ => None,
    })
}

/// (time, result, message) of pod `p`'s attempts.
fn attempts(records: &[Record]) -> Vec<(SimTime, AttemptResult, String)> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Attempt {
                at,
                name,
                result,
                message,
                ..
            } if name == "p" => Some((*at, *result, message.clone())),
            _ => None,
        })
        .collect()
}

fn first_scheduled(records: &[Record]) -> SimTime {
    attempts(records)
        .into_iter()
        .find(|(_, r, _)| *r == AttemptResult::Scheduled)
        .map(|(at, _, _)| at)
        .expect("p was assumed")
}

const BIND_LATENCY: SimDuration = SimDuration(50_000);

#[test]
fn the_pod_binds_once_the_driver_reports_its_conditions_on_the_poll_grid() {
    // The driver reports 12 s after PreBind; PreBind polls every 5 s from its start, so the
    // pod goes on at the third poll (15 s), then binds after the bind latency.
    let mut s = sim(
        engine(100, driver(12, DraBindingOutcome::Ready)),
        &Default::default(),
        vec![],
    )
    .expect("sim");
    let r = run(&mut s, 100);
    let t0 = first_scheduled(&r);
    assert_eq!(
        bound(&r, "p"),
        Some(t0 + SimDuration::from_secs(15) + BIND_LATENCY)
    );
    let c = &s.snapshot().objects.dra.resource_claims["default/c"];
    let a = c.status.allocation.as_ref().expect("allocated");
    assert_eq!(a.devices.results[0].binding_conditions, ["attached"]);
    assert_eq!(
        a.devices.results[0].binding_failure_conditions,
        ["attach-failed"]
    );
    assert_eq!(c.status.devices[0].conditions[0].type_, "attached");
    assert_eq!(c.status.devices[0].conditions[0].status, "True");
    // A driver that reports at once: the pod binds without waiting.
    let mut s = sim(
        engine(100, driver(0, DraBindingOutcome::Ready)),
        &Default::default(),
        vec![],
    )
    .expect("sim");
    let r = run(&mut s, 100);
    assert_eq!(bound(&r, "p"), Some(first_scheduled(&r) + BIND_LATENCY));
}

#[test]
fn other_pods_bind_while_one_waits_for_its_device() {
    let mut s = sim(
        engine(100, driver(30, DraBindingOutcome::Ready)),
        &Default::default(),
        vec![create(2, pod("q", false))],
    )
    .expect("sim");
    let r = run(&mut s, 100);
    let q = bound(&r, "q").expect("q bound");
    let p = bound(&r, "p").expect("p bound");
    assert!(q < secs(3), "q bound at {q:?}");
    assert_eq!(
        p,
        first_scheduled(&r) + SimDuration::from_secs(30) + BIND_LATENCY
    );
}

#[test]
fn a_failure_condition_fails_the_binding_and_the_pod_goes_back_to_the_queue() {
    let mut s = sim(
        engine(60, driver(7, DraBindingOutcome::Failure)),
        &Default::default(),
        vec![],
    )
    .expect("sim");
    let mut r = run(&mut s, 11);
    // Right after the failure (t0 = 1 s, failed at 11 s): Unreserve took the pod out of
    // the claim's `reservedFor`.
    let c = &s.snapshot().objects.dra.resource_claims["default/c"];
    assert!(
        c.status.reserved_for.is_empty(),
        "{:?}",
        c.status.reserved_for
    );
    r.extend(run(&mut s, 60));
    assert_eq!(bound(&r, "p"), None);
    let a = attempts(&r);
    let t0 = a[0].0;
    assert_eq!(t0, secs(1));
    // Reported at t0+7, seen at the poll of t0+10.
    let (at, result, msg) = &a[1];
    assert_eq!(*result, AttemptResult::Error);
    assert_eq!(*at, t0 + SimDuration::from_secs(10));
    assert_eq!(
        msg,
        "running PreBind plugin \"DynamicResources\": claim c binding failed: reason=Failed, message=\"set by ksim's simulated driver\""
    );
    // The pod is retried (error backoff), and fails the same way again.
    assert!(a.len() > 3, "{a:?}");
    assert!(
        a[2..]
            .iter()
            .any(|(_, r, _)| *r == AttemptResult::Scheduled),
        "{a:?}"
    );
}

#[test]
fn without_a_driver_the_binding_times_out_after_600s() {
    let mut s = sim(engine(700, None), &Default::default(), vec![]).expect("sim");
    let r = run(&mut s, 700);
    assert_eq!(bound(&r, "p"), None);
    let a = attempts(&r);
    let t0 = a[0].0;
    let err = a
        .iter()
        .find(|(_, r, _)| *r == AttemptResult::Error)
        .expect("a binding error");
    assert_eq!(err.0, t0 + SimDuration::from_secs(600));
    assert_eq!(
        err.2,
        "running PreBind plugin \"DynamicResources\": device binding timeout"
    );
    // The next attempt finds the claim unavailable until it is deallocated, then allocates
    // it again.
    assert!(
        a.iter().skip_while(|x| x.1 != AttemptResult::Error).count() > 1,
        "{a:?}"
    );
}

fn with_binding_timeout(t: &str) -> KubeSchedulerConfiguration {
    KubeSchedulerConfiguration::from_value(&json!({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": [
            {"name": "DynamicResources", "args": {"bindingTimeout": t}}]}],
    }))
    .expect("config")
}

#[test]
fn the_binding_timeout_is_the_profiles_dynamic_resources_args() {
    let mut s = sim(engine(200, None), &with_binding_timeout("90s"), vec![]).expect("sim");
    let r = run(&mut s, 200);
    let a = attempts(&r);
    let err = a
        .iter()
        .find(|(_, r, _)| *r == AttemptResult::Error)
        .expect("a binding error");
    assert_eq!(err.0, a[0].0 + SimDuration::from_secs(90));
    // Upstream's validation: at least 1 s.
    let e = sim(engine(10, None), &with_binding_timeout("500ms"), vec![])
        .err()
        .expect("refused");
    assert!(
        e.to_string()
            .contains("bindingTimeout: Invalid value: \"500ms\": must be at least 1 second"),
        "{e}"
    );
}

#[test]
fn a_trace_update_of_the_claim_status_lets_the_pod_bind() {
    let mut s = sim(engine(100, None), &Default::default(), vec![]).expect("sim");
    let mut r = run(&mut s, 21);
    assert_eq!(bound(&r, "p"), None);
    let t0 = first_scheduled(&r);
    // The driver's status write, as a trace records it: the claim as it stands, with the
    // device's condition.
    let mut c = (*s.snapshot().objects.dra.resource_claims["default/c"]).clone();
    let res = &c
        .status
        .allocation
        .as_ref()
        .expect("allocated")
        .devices
        .results[0];
    c.status.devices = vec![serde_json::from_value(json!({
        "driver": res.driver, "pool": res.pool, "device": res.device,
        "conditions": [{"type": "attached", "status": "True", "reason": "Attached"}]}))
    .expect("status")];
    s.inject(
        secs(22),
        vec![InputEvent::UpdateObject {
            object: Box::new(ApiObject::ResourceClaim(c)),
        }],
    )
    .expect("inject");
    r.extend(run(&mut s, 100));
    // t0 = 1 s: the first poll at or after 22 s is at t0 + 25 s.
    assert_eq!(t0, secs(1));
    assert_eq!(
        bound(&r, "p"),
        Some(t0 + SimDuration::from_secs(25) + BIND_LATENCY)
    );
}

#[test]
fn in_v1_35_a_slice_with_binding_conditions_is_refused_naming_the_field_and_gate() {
    let registry = Registry::in_tree_for(KubernetesVersion::V1_35);
    let mut objs = ClusterObjects::default();
    for o in [class(), bc_slice()] {
        objs.put_object(o);
    }
    let err = match Simulation::new(
        config(Some(5), None),
        &Default::default(),
        &registry,
        vec![node("n1")],
        objs,
    ) {
        Err(e) => e,
        Ok(mut s) => s
            .run_to(secs(5), &mut |_: &Record| {})
            .expect_err("refused"),
    };
    let msg = err.to_string();
    assert!(
        msg.contains("ResourceSlice n1-gpu")
            && msg.contains("spec.devices[0].bindingConditions")
            && msg.contains(
                "the DRADeviceBindingConditions feature gate is off in this run (Kubernetes v1.35)"
            ),
        "{msg}"
    );
}

/// With DRAExtendedResource, the claim PreBind creates for a pod's extended resources is
/// waited for too (upstream's `isPodReadyForBinding` reads it with the pod's other claims): a
/// pod asking `example.com/gpu: 1`, served by the binding-condition GPU, binds only once the
/// driver reports.
#[test]
fn the_extended_resource_claim_waits_for_its_binding_conditions() {
    let mut objs = ClusterObjects::default();
    for o in [common::dra::class_for("example.com/gpu"), bc_slice()] {
        objs.put_object(o);
    }
    let registry = Registry::in_tree_for(KubernetesVersion::V1_36);
    let mut s = Simulation::new(
        engine(100, driver(12, DraBindingOutcome::Ready)),
        &Default::default(),
        &registry,
        vec![node("n1")],
        objs,
    )
    .expect("sim");
    let p: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "resources": {
            "requests": {"cpu": "1", "example.com/gpu": "1"},
            "limits": {"example.com/gpu": "1"}}}]}
    }))
    .expect("pod");
    s.add_source(Box::new(VecSource::new(vec![create(1, p)])))
        .expect("source");
    let r = run(&mut s, 100);
    let t0 = first_scheduled(&r);
    assert_eq!(
        bound(&r, "p"),
        Some(t0 + SimDuration::from_secs(15) + BIND_LATENCY)
    );
}
