//! DynamicResources' Unreserve after a failed binding (upstream `Unreserve`, its `TestPlugin`
//! row `bind-failure`): the pod PreBind reserved a claim for leaves the claim's
//! `reservedFor` again, so the claim does not stay held by a pod that is not bound.

use ksim_api::object::ApiObject;
use ksim_api::Pod;
use ksim_engine::config::{CostModels, CycleCost, EngineConfig};
use ksim_engine::{
    AttemptResult, InputEvent, Record, SimDuration, SimTime, Simulation, TimedEvent, VecSource,
};
use ksim_scheduler::framework::Registry;
use ksim_scheduler::node_info::ClusterObjects;
use serde_json::{json, Value};

fn object(v: Value) -> ApiObject {
    let mut o = ApiObject::from_value("test", &v).expect("object");
    o.apply_defaults();
    o
}

fn secs(s: f64) -> SimTime {
    SimTime((s * 1e6).round() as i64)
}

/// n1 with one GPU and a CSI driver whose provisioning (700 s) outlasts VolumeBinding's bind
/// timeout (600 s); a claim `gpu` and a PVC `data` (WaitForFirstConsumer), both for pod `app`.
fn simulation() -> Simulation {
    let node = serde_json::from_value(json!({
        "metadata": {"name": "n1", "labels": {"kubernetes.io/hostname": "n1"}},
        "status": {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}}
    }))
    .expect("node");
    let gpu =
        json!({"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}});
    let objects = [
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu"},
            "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}}]}}),
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": "n1-gpu"},
            "spec": {"driver": "gpu.example.com", "nodeName": "n1",
                     "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "gpu-0"}]}}),
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "gpu", "namespace": "default"}, "spec": gpu}),
        json!({"kind": "StorageClass", "metadata": {"name": "csi"},
            "provisioner": "csi.example.com", "volumeBindingMode": "WaitForFirstConsumer"}),
        json!({"kind": "CSINode", "metadata": {"name": "n1"},
            "spec": {"drivers": [{"name": "csi.example.com", "nodeID": "n1",
                                  "topologyKeys": ["kubernetes.io/hostname"]}]}}),
        json!({"kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "default"},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "csi",
                     "resources": {"requests": {"storage": "5Gi"}}}}),
    ];
    let mut objs = ClusterObjects::default();
    for o in objects {
        objs.put_object(object(o));
    }
    let mut costs = CostModels {
        scheduling_cycle: CycleCost::zero(),
        ..Default::default()
    };
    costs.provisioning_delay = SimDuration::from_secs(700);
    let cfg = EngineConfig {
        horizon: Some(SimTime::from_secs(1500)),
        costs,
        ..Default::default()
    };
    let mut sim = Simulation::new(
        cfg,
        &Default::default(),
        &Registry::in_tree(),
        vec![node],
        objs,
    )
    .expect("simulation");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "app", "namespace": "default"},
        "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu"}],
                 "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"},
                                                            "claims": [{"name": "gpu"}]}}],
                 "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]}
    }))
    .expect("pod");
    let events = vec![TimedEvent {
        at: secs(1.0),
        event: InputEvent::CreatePod {
            pod: Box::new(pod),
            run_for: None,
        },
    }];
    sim.add_source(Box::new(VecSource::new(events)))
        .expect("source");
    sim
}

/// The pods the claim `gpu` is reserved for.
fn reserved_for(sim: &Simulation) -> Vec<String> {
    sim.snapshot().objects.dra.resource_claims["default/gpu"]
        .status
        .reserved_for
        .iter()
        .map(|r| r.name.clone())
        .collect()
}

#[test]
fn a_failed_binding_takes_the_pod_back_out_of_the_claims_reserved_for() {
    let mut sim = simulation();
    let mut records: Vec<Record> = Vec::new();
    // PreBind reserved the claim; VolumeBinding then waits for the provisioner.
    sim.run_to(secs(300.0), &mut |r: &Record| records.push(r.clone()))
        .expect("run");
    assert_eq!(reserved_for(&sim), vec!["app".to_string()]);
    // The wait times out at 600 s after the first attempt: the binding fails, Unreserve takes
    // the pod out of reservedFor.
    sim.run_to(secs(601.5), &mut |r: &Record| records.push(r.clone()))
        .expect("run");
    let failed = records.iter().any(|r| {
        matches!(r, Record::Attempt { name, result: AttemptResult::Error, message, .. }
            if name == "app" && message.ends_with("context deadline exceeded"))
    });
    assert!(failed, "the binding failed");
    assert!(
        reserved_for(&sim).is_empty(),
        "reservedFor after the failed binding: {:?}",
        reserved_for(&sim)
    );
    // The retry binds once the volume is provisioned, and the claim is reserved again.
    sim.run_to(secs(1500.0), &mut |r: &Record| records.push(r.clone()))
        .expect("run");
    let bound = records
        .iter()
        .any(|r| matches!(r, Record::PodBound { name, .. } if name == "app"));
    assert!(bound, "app binds in the end");
    assert_eq!(reserved_for(&sim), vec!["app".to_string()]);
}
