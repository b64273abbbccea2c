//! Helpers shared by the controller test files: nodes, workloads and a run that collects the
//! records.
#![allow(dead_code)]

use std::collections::BTreeMap;

use ksim_api::object::ApiObject;
use ksim_api::Node;
use ksim_engine::config::{CostModels, CycleCost, EngineConfig};
use ksim_engine::{InputEvent, Record, SimTime, Simulation, TimedEvent, VecSource};
use ksim_scheduler::framework::Registry;
use serde_json::{json, Value};

pub fn node(name: &str) -> Node {
    node_with(name, json!({}), json!({}))
}

/// A 32-CPU node with extra `spec` fields and labels.
pub fn node_with(name: &str, spec: Value, labels: Value) -> Node {
    let mut l = json!({"kubernetes.io/hostname": name});
    if let (Some(m), Some(extra)) = (l.as_object_mut(), labels.as_object()) {
        for (k, v) in extra {
            m.insert(k.clone(), v.clone());
        }
    }
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": l},
        "spec": spec,
        "status": {"capacity": {"cpu": "32", "memory": "64Gi", "pods": "110"}}
    }))
    .expect("node")
}

pub fn object(v: Value) -> ApiObject {
    ApiObject::from_value("test", &v).expect("object")
}

/// A workload `name` with selector and template label `app: name`, a 100m container, and
/// `spec` merged in (`image` sets the container's image, a template change).
pub fn workload(kind: &str, name: &str, spec: Value) -> ApiObject {
    let mut spec = spec;
    spec["selector"] = json!({"matchLabels": {"app": name}});
    let image = spec.get("image").cloned().unwrap_or(json!("img:1"));
    let tpl_extra = spec.get("podSpec").cloned().unwrap_or(json!({}));
    if let Some(m) = spec.as_object_mut() {
        m.remove("image");
        m.remove("podSpec");
    }
    let mut pod_spec = json!({"containers": [{"name": "c", "image": image,
        "resources": {"requests": {"cpu": "100m"}}}]});
    if let (Some(m), Some(extra)) = (pod_spec.as_object_mut(), tpl_extra.as_object()) {
        for (k, v) in extra {
            m.insert(k.clone(), v.clone());
        }
    }
    spec["template"] = json!({"metadata": {"labels": {"app": name}}, "spec": pod_spec});
    object(json!({"kind": kind, "metadata": {"name": name}, "spec": spec}))
}

pub fn at(s: f64, event: InputEvent) -> TimedEvent {
    TimedEvent {
        at: SimTime((s * 1e6).round() as i64),
        event,
    }
}

pub fn create(o: ApiObject) -> InputEvent {
    InputEvent::CreateObject {
        object: Box::new(o),
    }
}

pub fn update(o: ApiObject) -> InputEvent {
    InputEvent::UpdateObject {
        object: Box::new(o),
    }
}

pub fn cfg(horizon: i64) -> EngineConfig {
    EngineConfig {
        horizon: Some(SimTime::from_secs(horizon)),
        costs: CostModels {
            scheduling_cycle: CycleCost::zero(),
            ..Default::default()
        },
        ..Default::default()
    }
}

pub fn run(cfg: EngineConfig, nodes: Vec<Node>, events: Vec<TimedEvent>) -> Vec<Record> {
    let mut sim = Simulation::new(
        cfg,
        &Default::default(),
        &Registry::in_tree(),
        nodes,
        Default::default(),
    )
    .expect("simulation");
    sim.add_source(Box::new(VecSource::new(events)))
        .expect("source");
    let mut records = Vec::new();
    sim.run(&mut |r: &Record| records.push(r.clone()))
        .expect("run");
    records
}

/// Pods bound and not ended at the end, by name, with their node.
pub fn running(records: &[Record]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for r in records {
        match r {
            Record::PodBound { name, node, .. } => {
                out.insert(name.clone(), node.clone());
            }
            Record::PodEnded { name, .. } => {
                out.remove(name);
            }
            _ => {}
        }
    }
    out
}

/// Pods created and not ended at the end (bound or not), by name.
pub fn alive(records: &[Record]) -> BTreeMap<String, Option<String>> {
    let mut out = BTreeMap::new();
    for r in records {
        match r {
            Record::PodCreated { name, .. } => {
                out.insert(name.clone(), None);
            }
            Record::PodBound { name, node, .. } => {
                out.insert(name.clone(), Some(node.clone()));
            }
            Record::PodEnded { name, .. } => {
                out.remove(name);
            }
            _ => {}
        }
    }
    out
}

pub fn created(records: &[Record]) -> Vec<(SimTime, String)> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::PodCreated { at, name, .. } => Some((*at, name.clone())),
            _ => None,
        })
        .collect()
}

pub fn ended(records: &[Record]) -> Vec<(SimTime, String)> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::PodEnded { at, name, .. } => Some((*at, name.clone())),
            _ => None,
        })
        .collect()
}

pub fn nodes(n: usize) -> Vec<Node> {
    (0..n).map(|i| node(&format!("n{i}"))).collect()
}
pub mod dra;
