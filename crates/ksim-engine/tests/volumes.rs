//! Volume binding in the engine: WaitForFirstConsumer claims bound to the PV of the chosen node
//! at PreBind, pods waiting for a PV a later trace event creates, dynamic provisioning that
//! holds the pod's binding for `costs.provisioningDelay`, and PreBind failures.

use ksim_api::object::{ApiObject, ObjectKind};
use ksim_api::storage::ANN_SELECTED_NODE;
use ksim_api::{Node, Pod};
use ksim_engine::config::{CostModels, CycleCost, EngineConfig};
use ksim_engine::{
    AttemptResult, InputEvent, Record, SimDuration, SimTime, Simulation, TimedEvent, VecSource,
};
use ksim_scheduler::framework::Registry;
use ksim_scheduler::node_info::ClusterObjects;
use serde_json::json;

fn node(name: &str) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"}}
    }))
    .expect("node")
}

fn object(v: serde_json::Value) -> ApiObject {
    let mut o = ApiObject::from_value("test", &v).expect("object");
    o.apply_defaults();
    o
}

fn local_class() -> ApiObject {
    object(
        json!({"kind": "StorageClass", "metadata": {"name": "local"},
        "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"}),
    )
}

fn csi_class() -> ApiObject {
    object(json!({"kind": "StorageClass", "metadata": {"name": "csi"},
        "provisioner": "csi.example.com", "volumeBindingMode": "WaitForFirstConsumer"}))
}

fn csi_node(name: &str) -> ApiObject {
    object(json!({"kind": "CSINode", "metadata": {"name": name},
        "spec": {"drivers": [{"name": "csi.example.com", "nodeID": name,
                              "topologyKeys": ["kubernetes.io/hostname"]}]}}))
}

fn local_pv(name: &str, host: &str) -> ApiObject {
    object(
        json!({"kind": "PersistentVolume", "metadata": {"name": name},
        "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"],
                 "storageClassName": "local", "local": {"path": "/mnt/disk"},
                 "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                     {"key": "kubernetes.io/hostname", "operator": "In", "values": [host]}]}]}}},
        "status": {"phase": "Available"}}),
    )
}

fn claim(name: &str, class: &str) -> ApiObject {
    object(
        json!({"kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": "default"},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": class,
                 "resources": {"requests": {"storage": "5Gi"}}}}),
    )
}

fn pod(name: &str, claim: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}],
                 "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]}
    }))
    .expect("pod")
}

fn at(s: f64, event: InputEvent) -> TimedEvent {
    TimedEvent {
        at: SimTime((s * 1e6).round() as i64),
        event,
    }
}

fn create(p: Pod) -> InputEvent {
    InputEvent::CreatePod {
        pod: Box::new(p),
        run_for: None,
    }
}

fn objects(list: Vec<ApiObject>) -> ClusterObjects {
    let mut o = ClusterObjects::default();
    for x in list {
        o.put_object(x);
    }
    o
}

struct Run {
    sim: Simulation,
    records: Vec<Record>,
}

fn run(
    cfg: EngineConfig,
    nodes: Vec<Node>,
    initial: Vec<ApiObject>,
    events: Vec<TimedEvent>,
) -> Run {
    let mut sim = Simulation::new(
        cfg,
        &Default::default(),
        &Registry::in_tree(),
        nodes,
        objects(initial),
    )
    .expect("simulation");
    sim.add_source(Box::new(VecSource::new(events)))
        .expect("source");
    let mut records = Vec::new();
    sim.run(&mut |r: &Record| records.push(r.clone()))
        .expect("run");
    Run { sim, records }
}

fn bound(records: &[Record], name: &str) -> Option<(SimTime, String)> {
    records.iter().find_map(|r| match r {
        Record::PodBound {
            at, name: n, node, ..
        } if n == name => Some((*at, node.clone())),
        _ => None,
    })
}

/// (time, result, node, message) of each attempt of a pod.
fn attempts(records: &[Record], name: &str) -> Vec<(SimTime, AttemptResult, String, String)> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Attempt {
                at,
                name: n,
                result,
                node,
                message,
                ..
            } if n == name => Some((*at, *result, node.clone(), message.clone())),
            _ => None,
        })
        .collect()
}

/// Default costs except instant scheduling cycles, so that a cycle's outcome applies at the
/// time its attempt is recorded (bind latency stays 50 ms).
fn cfg(horizon: i64) -> EngineConfig {
    EngineConfig {
        horizon: Some(SimTime::from_secs(horizon)),
        costs: CostModels {
            scheduling_cycle: CycleCost::zero(),
            ..Default::default()
        },
        ..Default::default()
    }
}

#[test]
fn wffc_claim_is_bound_to_the_pv_on_the_chosen_node() {
    let r = run(
        cfg(60),
        vec![node("n1"), node("n2"), node("n3")],
        vec![
            local_class(),
            local_pv("pv-n2", "n2"),
            claim("data", "local"),
        ],
        vec![at(1.0, create(pod("app", "data")))],
    );
    // Only n2 has a PV for the claim; the pod binds after the cycle and the bind latency.
    let (t, n) = bound(&r.records, "app").expect("bound");
    assert_eq!(n, "n2");
    let a = attempts(&r.records, "app");
    assert_eq!(a.len(), 1, "{a:?}");
    assert_eq!(a[0].1, AttemptResult::Scheduled);
    assert_eq!(t, a[0].0 + SimDuration::from_millis(50));

    let st = &r.sim.snapshot().objects.storage;
    let pv = &st.persistent_volumes["pv-n2"];
    let cr = pv.spec.claim_ref.as_ref().expect("claimRef");
    assert_eq!(
        (cr.namespace.as_str(), cr.name.as_str()),
        ("default", "data")
    );
    assert_eq!(pv.status.phase, "Bound");
    let pvc = &st.persistent_volume_claims["default/data"];
    assert_eq!(pvc.spec.volume_name, "pv-n2");
    assert!(pvc.is_fully_bound());
    assert_eq!(pvc.status.phase, "Bound");
}

#[test]
fn a_second_claim_finds_the_first_pv_taken() {
    // Two claims, one PV: the second pod is stranded with VolumeBinding's bind conflict.
    let r = run(
        cfg(60),
        vec![node("n1"), node("n2")],
        vec![
            local_class(),
            local_pv("pv-n1", "n1"),
            claim("a", "local"),
            claim("b", "local"),
        ],
        vec![
            at(1.0, create(pod("pa", "a"))),
            at(2.0, create(pod("pb", "b"))),
        ],
    );
    assert_eq!(bound(&r.records, "pa").map(|b| b.1), Some("n1".into()));
    assert_eq!(bound(&r.records, "pb"), None);
    let a = attempts(&r.records, "pb");
    assert_eq!(
        a[0].3,
        "0/2 nodes are available: 2 node(s) didn't find available persistent volumes to bind. no new claims to deallocate, preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    );
}

#[test]
fn pod_waits_until_a_matching_pv_is_created_by_a_later_event() {
    let r = run(
        cfg(200),
        vec![node("n1"), node("n2")],
        vec![local_class(), claim("data", "local")],
        vec![
            at(0.0, create(pod("app", "data"))),
            at(
                100.0,
                InputEvent::CreateObject {
                    object: Box::new(local_pv("pv-n1", "n1")),
                },
            ),
        ],
    );
    let a = attempts(&r.records, "app");
    // Rejected at once, then nothing until the PV's Add event moves it back at 100 s.
    assert_eq!(a.len(), 2, "{a:?}");
    assert_eq!(a[0].1, AttemptResult::Unschedulable);
    assert!(
        a[0].3
            .contains("2 node(s) didn't find available persistent volumes to bind"),
        "{}",
        a[0].3
    );
    assert_eq!(a[1].0, SimTime::from_secs(100));
    assert_eq!(a[1].1, AttemptResult::Scheduled);
    let (t, n) = bound(&r.records, "app").expect("bound");
    assert_eq!(n, "n1");
    assert_eq!(t, SimTime::from_secs(100) + SimDuration::from_millis(50));
    let pvc = &r.sim.snapshot().objects.storage.persistent_volume_claims["default/data"];
    assert_eq!(pvc.spec.volume_name, "pv-n1");
}

#[test]
fn dynamic_provisioning_holds_the_binding_for_the_delay() {
    let mut c = cfg(300);
    c.costs.provisioning_delay = SimDuration::from_secs(30);
    let r = run(
        c,
        vec![node("n1"), node("n2")],
        vec![
            csi_class(),
            csi_node("n1"),
            csi_node("n2"),
            claim("data", "csi"),
        ],
        vec![at(1.0, create(pod("app", "data")))],
    );
    let a = attempts(&r.records, "app");
    assert_eq!(a.len(), 1, "{a:?}");
    assert_eq!(a[0].1, AttemptResult::Scheduled);
    let chosen = a[0].2.clone();
    let scheduled = a[0].0;
    let (t, n) = bound(&r.records, "app").expect("bound");
    assert_eq!(n, chosen);
    // Provisioning (30 s) first, then the bind latency (50 ms).
    assert_eq!(
        t,
        scheduled + SimDuration::from_secs(30) + SimDuration::from_millis(50)
    );

    let st = &r.sim.snapshot().objects.storage;
    let pvc = &st.persistent_volume_claims["default/data"];
    assert!(pvc.is_fully_bound());
    assert_eq!(pvc.metadata.annotations[ANN_SELECTED_NODE], chosen);
    let pv = &st.persistent_volumes[&pvc.spec.volume_name];
    assert_eq!(
        pv.spec.csi.as_ref().map(|c| c.driver.as_str()),
        Some("csi.example.com")
    );
    let term = &pv
        .spec
        .node_affinity
        .as_ref()
        .and_then(|a| a.required.as_ref())
        .expect("provisioned PV has node affinity")
        .node_selector_terms[0];
    assert_eq!(term.match_expressions[0].values, vec![chosen]);
}

#[test]
fn provisioning_pod_holds_its_node_while_it_waits() {
    // app takes 3 of n1's 4 cpus while its claim is provisioned; big (2 cpu), created during
    // the wait, must not fit on n1.
    let mut c = cfg(300);
    c.costs.provisioning_delay = SimDuration::from_secs(30);
    let mut app = pod("app", "data");
    app.spec.containers[0]
        .resources
        .requests
        .insert("cpu".into(), ksim_api::Quantity::parse("3").expect("q"));
    let mut big: Pod = serde_json::from_value(json!({
        "metadata": {"name": "big", "namespace": "default"},
        "spec": {"nodeSelector": {"kubernetes.io/hostname": "n1"},
                 "containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}
    }))
    .expect("pod");
    big.metadata.namespace = "default".into();
    let r = run(
        c,
        vec![node("n1")],
        vec![csi_class(), csi_node("n1"), claim("data", "csi")],
        vec![at(1.0, create(app)), at(10.0, create(big))],
    );
    let a = attempts(&r.records, "big");
    assert_eq!(a[0].1, AttemptResult::Unschedulable, "{a:?}");
    assert!(a[0].3.contains("Insufficient cpu"), "{}", a[0].3);
    assert!(bound(&r.records, "app").is_some());
}

#[test]
fn deleting_the_claim_during_provisioning_fails_prebind() {
    let mut c = cfg(120);
    c.costs.provisioning_delay = SimDuration::from_secs(30);
    let r = run(
        c,
        vec![node("n1")],
        vec![csi_class(), csi_node("n1"), claim("data", "csi")],
        vec![
            at(1.0, create(pod("app", "data"))),
            at(
                10.0,
                InputEvent::DeleteObject {
                    object_kind: ObjectKind::PersistentVolumeClaim,
                    namespace: "default".into(),
                    name: "data".into(),
                },
            ),
        ],
    );
    assert_eq!(bound(&r.records, "app"), None);
    let a = attempts(&r.records, "app");
    assert_eq!(a[0].1, AttemptResult::Scheduled, "{a:?}");
    assert_eq!(a[1].0, SimTime::from_secs(10));
    assert_eq!(a[1].1, AttemptResult::Error);
    assert_eq!(
        a[1].3,
        "running PreBind plugin \"VolumeBinding\": binding volumes: failed to check provisioning pvc: could not find v1.PersistentVolumeClaim \"default/data\""
    );
    // Retried after the error backoff: now the claim is missing.
    assert_eq!(a[2].1, AttemptResult::Unschedulable);
    assert!(
        a[2].3.contains("persistentvolumeclaim \"data\" not found"),
        "{}",
        a[2].3
    );
    // The assumed pod was forgotten: n1 holds nothing.
    assert!(r.sim.snapshot().nodes[0].pods.is_empty());
}

#[test]
fn provisioning_slower_than_the_bind_timeout_fails_then_the_retry_binds() {
    let mut c = cfg(1200);
    c.costs.provisioning_delay = SimDuration::from_secs(700);
    let r = run(
        c,
        vec![node("n1"), node("n2")],
        vec![
            csi_class(),
            csi_node("n1"),
            csi_node("n2"),
            claim("data", "csi"),
        ],
        vec![at(1.0, create(pod("app", "data")))],
    );
    let a = attempts(&r.records, "app");
    let first = a[0].clone();
    assert_eq!(first.1, AttemptResult::Scheduled, "{a:?}");
    assert_eq!(a[1].1, AttemptResult::Error);
    assert_eq!(a[1].0, first.0 + SimDuration::from_secs(600));
    assert!(a[1].3.ends_with("context deadline exceeded"), "{}", a[1].3);
    // The claim keeps its selected node; the provisioner finishes at +700 s and the retried
    // pod (its claim now bound there) goes to that node.
    let (t, n) = bound(&r.records, "app").expect("bound");
    assert_eq!(n, first.2);
    assert!(t >= first.0 + SimDuration::from_secs(700), "{t}");
}

#[test]
fn storage_events_do_not_disturb_pods_without_claims() {
    // A PV event moves only pods a volume plugin rejected.
    let plain: Pod = serde_json::from_value(json!({
        "metadata": {"name": "plain", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "8"}}}]}
    }))
    .expect("pod");
    let r = run(
        cfg(100),
        vec![node("n1")],
        vec![local_class()],
        vec![
            at(0.0, create(plain)),
            at(
                50.0,
                InputEvent::CreateObject {
                    object: Box::new(local_pv("pv-n1", "n1")),
                },
            ),
        ],
    );
    let a = attempts(&r.records, "plain");
    assert_eq!(a.len(), 1, "{a:?}");
    let objs = &r.sim.snapshot().objects;
    assert!(objs
        .get_object(ObjectKind::PersistentVolume, "", "pv-n1")
        .is_some());
}

#[test]
fn zero_cost_model_binds_static_claims_at_once() {
    let c = EngineConfig {
        horizon: Some(SimTime::from_secs(10)),
        costs: CostModels::zero(),
        ..Default::default()
    };
    let r = run(
        c,
        vec![node("n1")],
        vec![csi_class(), csi_node("n1"), claim("data", "csi")],
        vec![at(1.0, create(pod("app", "data")))],
    );
    assert_eq!(
        bound(&r.records, "app"),
        Some((SimTime::from_secs(1), "n1".to_string()))
    );
}

#[test]
fn a_pod_deleted_while_its_claim_is_provisioned_leaves_nothing_behind() {
    // The provisioner still finishes (the claim keeps its selected node), and a later pod using
    // the claim goes to that node.
    let mut c = cfg(200);
    c.costs.provisioning_delay = SimDuration::from_secs(30);
    let r = run(
        c,
        vec![node("n1"), node("n2")],
        vec![
            csi_class(),
            csi_node("n1"),
            csi_node("n2"),
            claim("data", "csi"),
        ],
        vec![
            at(1.0, create(pod("first", "data"))),
            at(
                10.0,
                InputEvent::DeletePod {
                    namespace: "default".into(),
                    name: "first".into(),
                },
            ),
            at(100.0, create(pod("second", "data"))),
        ],
    );
    let first = attempts(&r.records, "first");
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(bound(&r.records, "first"), None);
    let (_, n) = bound(&r.records, "second").expect("second bound");
    assert_eq!(n, first[0].2);
    // Nothing is left in the queue and only `second` is on a node.
    assert_eq!(r.sim.queue().len(), 0);
    let placed: usize = r.sim.snapshot().nodes.iter().map(|n| n.pods.len()).sum();
    assert_eq!(placed, 1);
    let pvc = &r.sim.snapshot().objects.storage.persistent_volume_claims["default/data"];
    assert!(pvc.is_fully_bound());
}
