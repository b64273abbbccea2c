//! DRA objects and a small simulation for the DRA test files.
#![allow(dead_code)]

use ksim_api::object::ApiObject;
use ksim_api::Node;
use ksim_engine::config::{CostModels, CycleCost, EngineConfig};
use ksim_engine::{SimDuration, SimError, SimTime, Simulation, TimedEvent, VecSource};
use ksim_scheduler::framework::Registry;
use ksim_scheduler::node_info::ClusterObjects;
use serde_json::{json, Value};

/// The driver of [`class`] and [`slice`].
pub const DRIVER: &str = "gpu.example.com";

/// An 8-CPU node labelled with its hostname.
pub fn node(name: &str) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"}}
    }))
    .expect("node")
}

/// An object as a scenario would load it (validated and defaulted).
pub fn object(v: Value) -> ApiObject {
    let mut o = ApiObject::from_value("test", &v).expect("object");
    o.apply_defaults();
    o
}

/// DeviceClass `gpu`, selecting [`DRIVER`].
pub fn class() -> ApiObject {
    object(
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}}]}}),
    )
}

/// The devices `gpu-0..n` of [`slice`].
pub fn devices(n: usize) -> Vec<Value> {
    (0..n)
        .map(|i| json!({"name": format!("gpu-{i}"), "attributes": {"model": {"string": "h100"}}}))
        .collect()
}

/// A slice `<node>-gpu` on `node` (its own pool) with `devices`.
pub fn slice_with(node: &str, devices: Vec<Value>) -> ApiObject {
    object(
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": format!("{node}-gpu")},
        "spec": {"driver": DRIVER, "nodeName": node,
                 "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                 "devices": devices}}),
    )
}

/// A slice on `node` with `n` devices `gpu-0..`.
pub fn slice(node: &str, n: usize) -> ApiObject {
    slice_with(node, devices(n))
}

/// A claim spec asking for one device of class `gpu`.
pub fn one_gpu_spec() -> Value {
    json!({"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}})
}

/// ResourceClaimTemplate `name` in `default` (one GPU).
pub fn template(name: &str) -> ApiObject {
    object(
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"metadata": {"labels": {"team": "ml"}}, "spec": one_gpu_spec()}}),
    )
}

/// ResourceClaim `name` in `default` (one GPU, not allocated).
pub fn claim(name: &str) -> ApiObject {
    object(
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"}, "spec": one_gpu_spec()}),
    )
}

/// The engine configuration of the DRA tests: free scheduling cycles, an optional horizon
/// and controller delay.
pub fn config(horizon: Option<i64>, delay: Option<SimDuration>) -> EngineConfig {
    EngineConfig {
        horizon: horizon.map(SimTime::from_secs),
        controller_delay: delay,
        costs: CostModels {
            scheduling_cycle: CycleCost::zero(),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// A simulation of `nodes` with `initial` objects and `events`, built with `registry`.
pub fn try_sim(
    cfg: EngineConfig,
    registry: &Registry,
    nodes: Vec<Node>,
    initial: Vec<ApiObject>,
    events: Vec<TimedEvent>,
) -> Result<Simulation, SimError> {
    let mut objs = ClusterObjects::default();
    for o in initial {
        objs.put_object(o);
    }
    let mut sim = Simulation::new(cfg, &Default::default(), registry, nodes, objs)?;
    sim.add_source(Box::new(VecSource::new(events)))?;
    Ok(sim)
}

/// DeviceClass `gpu` (selecting [`DRIVER`]) backing the extended resource `resource`
/// (DRAExtendedResource's `spec.extendedResourceName`).
pub fn class_for(resource: &str) -> ApiObject {
    object(
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}}],
                 "extendedResourceName": resource}}),
    )
}

/// [`node`] whose device plugin advertises `n` of the extended resource `resource`.
pub fn node_with(name: &str, resource: &str, n: u32) -> Node {
    let mut node = node(name);
    node.status.capacity.insert(
        resource.to_string(),
        ksim_api::Quantity::from_value(i64::from(n)),
    );
    node
}

/// DRAConsumableCapacity: a slice `<node>-nic` on `node` with one device `nic-0` that allows
/// multiple allocations and has a `memory` capacity of `memory` (no request policy).
pub fn shared_slice(node: &str, memory: &str) -> ApiObject {
    object(
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": format!("{node}-nic")},
        "spec": {"driver": DRIVER, "nodeName": node,
                 "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                 "devices": [{"name": "nic-0", "allowMultipleAllocations": true,
                              "capacity": {"memory": {"value": memory}}}]}}),
    )
}

/// ResourceClaim `name` in `default` asking for one device of class `gpu` with `memory` of
/// its `memory` capacity (DRAConsumableCapacity's `capacity.requests`).
pub fn capacity_claim(name: &str, memory: &str) -> ApiObject {
    object(
        json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu",
            "capacity": {"requests": {"memory": memory}}}}]}}}),
    )
}
