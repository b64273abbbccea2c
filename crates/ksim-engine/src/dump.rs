//! A kubectl-style dump of the cluster as the API server would hold it at the current virtual
//! time: `kubectl get nodes,pods,pdb,namespaces,services,pv,pvc,storageclass,csinode,csidriver,csistoragecapacity,
//! volumeattachment,priorityclass,deploy,rs,sts,ds,job,deviceclass,resourceslice,
//! resourceclaim,resourceclaimtemplate -A -o json`. Bound pods carry
//! `spec.nodeName`, pending pods do not (a nominated pod keeps `status.nominatedNodeName`);
//! controllers' pods keep their `ownerReferences`, and the controllers are written with their
//! status (a Deployment with its ReplicaSets; see the engine's `sim/controllers/dump.rs`), so
//! the replay's controllers adopt the pods. Importing it with `ksim import kube-dump` replays an
//! incident from that moment.
//!
//! What a dump cannot carry, as a real one cannot: queue timers (backoff, time in the
//! unschedulable pool) and the remaining run times of pods without a controller. A running
//! controller pod with a run time (`ksim.io/run-for`) is written with that annotation set to
//! what is left of its run, which the importer reads.

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
        if let Some((k, left)) = sim.controller_pod_run_left(&slot.info.key) {
            p.metadata.annotations.insert(k.to_string(), left);
        }
        let mut v = serde_json::to_value(&p).unwrap_or(Value::Null);
        v["apiVersion"] = json!("v1");
        v["kind"] = json!("Pod");
        items.push(v);
    }
    items.extend(sim.controller_dump_items());
    for pdb in &snapshot.objects.pdbs {
        let mut v = serde_json::to_value(pdb).unwrap_or(Value::Null);
        v["apiVersion"] = json!("policy/v1");
        v["kind"] = json!("PodDisruptionBudget");
        items.push(v);
    }
    for ns in snapshot.objects.namespaces.values() {
        let mut v = serde_json::to_value(ns).unwrap_or(Value::Null);
        v["apiVersion"] = json!("v1");
        v["kind"] = json!("Namespace");
        items.push(v);
    }
    for svc in &snapshot.objects.services {
        let mut v = serde_json::to_value(svc).unwrap_or(Value::Null);
        v["apiVersion"] = json!("v1");
        v["kind"] = json!("Service");
        items.push(v);
    }
    // Storage objects as they stand (claims bound, volumes provisioned), each collection in
    // name order.
    let st = &snapshot.objects.storage;
    fn push<T: serde::Serialize>(items: &mut Vec<Value>, api: &str, kind: &str, o: &T) {
        let mut v = serde_json::to_value(o).unwrap_or(Value::Null);
        v["apiVersion"] = json!(api);
        v["kind"] = json!(kind);
        items.push(v);
    }
    for o in st.storage_classes.values() {
        push(&mut items, "storage.k8s.io/v1", "StorageClass", o.as_ref());
    }
    for o in st.csi_drivers.values() {
        push(&mut items, "storage.k8s.io/v1", "CSIDriver", o.as_ref());
    }
    for o in st.csi_nodes.values() {
        push(&mut items, "storage.k8s.io/v1", "CSINode", o.as_ref());
    }
    for o in st.persistent_volumes.values() {
        push(&mut items, "v1", "PersistentVolume", o.as_ref());
    }
    for o in st.persistent_volume_claims.values() {
        push(&mut items, "v1", "PersistentVolumeClaim", o.as_ref());
    }
    for o in st.csi_storage_capacities.values() {
        push(
            &mut items,
            "storage.k8s.io/v1",
            "CSIStorageCapacity",
            o.as_ref(),
        );
    }
    for o in st.volume_attachments.values() {
        push(
            &mut items,
            "storage.k8s.io/v1",
            "VolumeAttachment",
            o.as_ref(),
        );
    }
    // DRA objects as they stand (claims with their allocation and reservedFor), each
    // collection in name order.
    let dra = &snapshot.objects.dra;
    let api = ksim_api::resource::API_VERSION;
    for o in dra.device_classes.values() {
        push(&mut items, api, "DeviceClass", o.as_ref());
    }
    for o in dra.resource_slices.values() {
        push(&mut items, api, "ResourceSlice", o.as_ref());
    }
    for o in dra.resource_claim_templates.values() {
        push(&mut items, api, "ResourceClaimTemplate", o.as_ref());
    }
    for o in dra.resource_claims.values() {
        push(&mut items, api, "ResourceClaim", o.as_ref());
    }
    json!({"apiVersion": "v1", "kind": "List", "items": items})
}
