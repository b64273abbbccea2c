//! A kubectl-style dump of the cluster as the API server would hold it at the current virtual
//! time: `kubectl get nodes,pods,pdb -A -o json`. Bound pods carry `spec.nodeName`, pending pods
//! do not (a nominated pod keeps `status.nominatedNodeName`). Importing it with `ksim import
//! kube-dump` replays an incident from that moment.
//!
//! What a dump cannot carry, as a real one cannot: queue timers (backoff, time in the
//! unschedulable pool) and pods' remaining run times.

use serde_json::{json, Value};

use crate::sim::{PodPhase, Simulation};

/// The cluster at `sim.now()` as a `kind: List` JSON document.
pub fn cluster_dump(sim: &Simulation) -> Value {
    let mut items: Vec<Value> = Vec::new();
    let snapshot = sim.snapshot();
    // Nodes in the order they were added (the snapshot's order is the zone-interleaved tree).
    let mut nodes: Vec<&ksim_api::Node> = snapshot.nodes.iter().map(|n| n.node.as_ref()).collect();
    nodes.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    for n in nodes {
        let mut v = serde_json::to_value(n).unwrap_or(Value::Null);
        v["apiVersion"] = json!("v1");
        v["kind"] = json!("Node");
        items.push(v);
    }
    for slot in sim.pods() {
        let keep = matches!(
            slot.phase,
            PodPhase::Pending | PodPhase::Binding | PodPhase::Bound
        );
        if !keep {
            continue;
        }
        let mut p = slot.info.pod.clone();
        if slot.phase == PodPhase::Pending {
            p.spec.node_name.clear();
            p.status.phase = "Pending".into();
        } else {
            p.spec.node_name = slot.node.clone();
            p.status.phase = "Running".into();
        }
        let mut v = serde_json::to_value(&p).unwrap_or(Value::Null);
        v["apiVersion"] = json!("v1");
        v["kind"] = json!("Pod");
        items.push(v);
    }
    for pdb in &snapshot.objects.pdbs {
        let mut v = serde_json::to_value(pdb).unwrap_or(Value::Null);
        v["apiVersion"] = json!("policy/v1");
        v["kind"] = json!("PodDisruptionBudget");
        items.push(v);
    }
    json!({"apiVersion": "v1", "kind": "List", "items": items})
}
