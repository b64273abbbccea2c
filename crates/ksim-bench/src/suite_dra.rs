//! The DRA workloads of upstream's scheduler_perf (`test/integration/scheduler_perf/dra/
//! performance-config.yaml`), as [`crate::suite`] runs them.
//!
//! The cluster, as upstream's templates and ops build it:
//! - nodes `scheduler-perf-dra-<i>` (`templates/node-with-dra-test-driver.yaml`: 4 cpu, 32Gi,
//!   110 pods);
//! - `createResourceDriver`: one ResourceSlice per node, named and pooled after the node,
//!   driver `test-driver.cdi.k8s.io`, `maxClaimsPerNode` devices `instance-<k>` with upstream's
//!   attributes (`model` A100, `family` GPU, `driverVersion` 1.2.3, `dra.example.com/numa` k)
//!   and capacity `memory` 1Gi;
//! - DeviceClass `test-class` selecting the driver (`templates/deviceclass.yaml`);
//! - pods as `templates/pod-with-claim-template.yaml` (a pause container without requests, one
//!   claim `resource`).
//!
//! **Claims.** As upstream's, the pods name the ResourceClaimTemplate `test-claim-template`
//! (one request `req-0` of `test-class`). The bench loop has no resource claim controller, so
//! each pod comes with what the controller's `handleClaim` would have made before the
//! scheduler sees it: a claim named `<pod>-resource-<5 characters>` with the template's spec,
//! owned by the pod (controller reference) and annotated with the pod's claim entry, and the
//! pod's `status.resourceClaimStatuses` naming it. DynamicResources thus takes the template
//! path (the claim must be owned by the pod). The controller's API writes are not timed here
//! (upstream's figure includes them).
//!
//! **Steady state** (`SteadyStateClusterResourceClaimTemplate`): upstream creates 10 pods,
//! waits until they are scheduled, deletes them and starts again for `duration`; here a round
//! enqueues 10 pods, drains the queue, then deletes the 10 pods and their claims (as the
//! controller deletes generated claims with their pod), until the measured count is reached;
//! the deletions are timed. Each claim is deallocated (an Update, which requeues the pods the
//! plugin rejected, as upstream's `isSchedulableAfterClaimChange`), then deleted. `allocResourceClaims` allocates the `initClaims` claims before:
//! here claim `k` takes device `instance-<k / nodes>` of node `k mod nodes` (upstream
//! allocates them through the allocator; either way every node holds the same share).

use std::time::Instant;

use ksim_api::object::{ApiObject, ObjectKind};
use ksim_api::Pod;
use ksim_scheduler::node_info::ClusterObjects;
use serde_json::{json, Value};

use crate::run::Loop;
use crate::suite::{node, SuiteResult, SuiteWorkload, Zones};
use crate::{BenchError, Options};

/// The driver of upstream's `createResourceDriver` ops.
pub const DRIVER: &str = "test-driver.cdi.k8s.io";

/// What a DRA workload adds to the nodes.
#[derive(Debug, Clone, PartialEq)]
pub struct DraSetup {
    /// `maxClaimsPerNode`: devices per node's slice.
    pub devices_per_node: usize,
    /// `initClaims`: claims allocated before the measured pods (steady state).
    pub init_claims: usize,
    /// Steady state: pods per round (created, scheduled, deleted); none: pods stay.
    pub steady_batch: Option<usize>,
}

fn object(v: Value) -> Result<ApiObject, BenchError> {
    let mut o = ApiObject::from_value("scheduler-perf DRA workload", &v)
        .map_err(|e| BenchError::Spec(e.to_string()))?;
    o.apply_defaults();
    Ok(o)
}

/// The name of node `i`.
pub fn node_name(i: usize) -> String {
    format!("scheduler-perf-dra-{i}")
}

/// `resourceSlice` of upstream's `createResourceDriver`.
fn slice(node: &str, devices: usize) -> Value {
    let devices: Vec<Value> = (0..devices)
        .map(|k| {
            json!({
                "name": format!("instance-{k}"),
                "attributes": {
                    "model": {"string": "A100"},
                    "family": {"string": "GPU"},
                    "driverVersion": {"version": "1.2.3"},
                    "dra.example.com/numa": {"int": k},
                },
                "capacity": {"memory": {"value": "1Gi"}},
            })
        })
        .collect();
    json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": node},
        "spec": {"driver": DRIVER, "nodeName": node,
                 "pool": {"name": node, "generation": 0, "resourceSliceCount": 1},
                 "devices": devices},
    })
}

/// The spec of `templates/resourceclaimtemplate.yaml`.
fn claim_spec() -> Value {
    json!({"devices": {"requests": [
        {"name": "req-0", "exactly": {"deviceClassName": "test-class"}}
    ]}})
}

/// The ResourceClaimTemplate `test-claim-template` in `namespace`.
fn template(namespace: &str) -> Value {
    json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "test-claim-template", "namespace": namespace},
        "spec": {"spec": claim_spec()},
    })
}

/// A claim with the template's spec, not owned by a pod (the init claims).
fn claim(namespace: &str, name: &str) -> Value {
    json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": claim_spec(),
    })
}

/// The claim the resource claim controller generates for pod `k` (`name`, `uid`) from the
/// template: `generateName` `<pod>-resource-` and a 5-character suffix (upstream's is random;
/// here it spells `k` in the same alphabet).
fn generated_claim(namespace: &str, pod: &str, uid: &str, k: usize) -> (String, Value) {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut n = k;
    let suffix: String = (0..5)
        .map(|_| {
            let c = ALPHABET[n % ALPHABET.len()] as char;
            n /= ALPHABET.len();
            c
        })
        .collect();
    let name = format!("{pod}-resource-{suffix}");
    let v = json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace,
                     "generateName": format!("{pod}-resource-"),
                     "annotations": {"resource.kubernetes.io/pod-claim-name": "resource"},
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod,
                                          "uid": uid, "controller": true}]},
        "spec": claim_spec(),
    });
    (name, v)
}

/// The pod of `templates/pod-with-claim-template.yaml`, its status naming the claim generated
/// for it.
pub fn pod(namespace: &str, name: &str, uid: &str, claim: &str) -> Result<Pod, BenchError> {
    let v = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "uid": uid},
        "spec": {
            "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10.1",
                            "resources": {"claims": [{"name": "resource"}]}}],
            "resourceClaims": [{"name": "resource",
                                "resourceClaimTemplateName": "test-claim-template"}],
        },
        "status": {"resourceClaimStatuses": [{"name": "resource", "resourceClaimName": claim}]},
    });
    let mut p: Pod = serde_json::from_value(v).map_err(|e| BenchError::Spec(e.to_string()))?;
    ksim_api::defaults::default_pod(&mut p);
    Ok(p)
}

/// The cluster objects: class, slices, and the init claims allocated (steady state).
fn objects(nodes: usize, d: &DraSetup) -> Result<ClusterObjects, BenchError> {
    let mut objs = ClusterObjects::default();
    objs.put_object(object(json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": "test-class"},
        "spec": {"selectors": [{"cel": {"expression": format!("device.driver == \"{DRIVER}\"")}}]},
    }))?);
    for i in 0..nodes {
        objs.put_object(object(slice(&node_name(i), d.devices_per_node))?);
    }
    for ns in ["init", "test"] {
        objs.put_object(object(template(ns))?);
    }
    for k in 0..d.init_claims {
        let n = node_name(k % nodes.max(1));
        let mut c = claim("init", &format!("init-claim-{k}"));
        c["status"] = json!({"allocation": {
            "devices": {"results": [{"request": "req-0", "driver": DRIVER, "pool": n,
                                      "device": format!("instance-{}", k / nodes.max(1))}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": [n]}]}]},
        }});
        objs.put_object(object(c)?);
    }
    Ok(objs)
}

/// Runs a DRA workload: nodes, slices and class, init pods (untimed), measured pods (timed).
pub fn run_workload(
    w: &SuiteWorkload,
    d: &DraSetup,
    opts: &Options,
) -> Result<SuiteResult, BenchError> {
    let nodes: Vec<ksim_api::Node> = (0..w.nodes)
        .map(|i| node(node_name(i), Zones::None, i))
        .collect();
    let mut objs = objects(w.nodes, d)?;
    let init_count: usize = w.init.iter().map(|(_, n)| n).sum();
    let measured_count = w.measured.1;
    // One claim per pod, as the controller would have generated it (see the module doc).
    let mut pods: Vec<Pod> = Vec::with_capacity(init_count + measured_count);
    for i in 0..init_count + measured_count {
        let (ns, prefix) = if i < init_count {
            ("init", "init")
        } else {
            ("test", "test-dra")
        };
        let name = format!("{prefix}-{i:06}");
        let uid = format!("uid-{name}");
        let (claim_name, claim) = generated_claim(ns, &name, &uid, i);
        objs.put_object(object(claim)?);
        pods.push(pod(ns, &name, &uid, &claim_name)?);
    }
    let mut lp = Loop::with_objects(&nodes, Vec::new(), objs, opts)?;
    let mut pods = pods.into_iter();
    for p in pods.by_ref().take(init_count) {
        lp.enqueue(p);
    }
    lp.drain();

    let measured: Vec<Pod> = pods.collect();
    let first_measured = lp.placements.len();
    let mut scheduled = 0;
    let start = Instant::now();
    match d.steady_batch {
        None => {
            for p in measured {
                lp.enqueue(p);
                lp.drain();
            }
        }
        Some(batch) => {
            let f = lp.framework0();
            for round in measured.chunks(batch.max(1)) {
                let ids: Vec<u32> = round.iter().map(|p| lp.enqueue(p.clone())).collect();
                lp.drain();
                for (id, p) in ids.into_iter().zip(round) {
                    if lp.delete_placed(id, p) {
                        scheduled += 1;
                    }
                    let claim = p.status.resource_claim_statuses.first();
                    if let Some(c) = claim.and_then(|s| s.resource_claim_name.as_ref()) {
                        // The controller deallocates the claim (an Update that requeues the
                        // pods DynamicResources rejected), then deletes it.
                        let held =
                            lp.snapshot
                                .objects
                                .get_object(ObjectKind::ResourceClaim, "test", c);
                        if let Some(ApiObject::ResourceClaim(mut freed)) = held {
                            freed.status = Default::default();
                            freed.metadata.finalizers.clear();
                            let freed = Some(ApiObject::ResourceClaim(freed));
                            lp.change_object(&f, ObjectKind::ResourceClaim, "test", c, freed);
                        }
                        lp.change_object(&f, ObjectKind::ResourceClaim, "test", c, None);
                    }
                }
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    if d.steady_batch.is_none() {
        scheduled = lp.placements[first_measured..]
            .iter()
            .filter(|(_, n)| !n.is_empty())
            .count();
    }
    Ok(SuiteResult {
        name: w.name,
        source: w.source,
        threshold: w.threshold,
        nodes: w.nodes,
        init_pods: init_count,
        measured_pods: measured_count,
        scheduled,
        churn_pods: 0,
        secs,
        digest: crate::digest(&lp.placements),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::Template;

    fn workload(nodes: usize, measured: usize, d: DraSetup) -> (SuiteWorkload, DraSetup) {
        let w = SuiteWorkload {
            name: "test",
            source: "dra/performance-config.yaml",
            threshold: None,
            nodes,
            zones: Zones::None,
            init: vec![],
            measured: (Template::Default, measured),
            churn: None,
            dra: Some(d.clone()),
        };
        (w, d)
    }

    #[test]
    fn pods_beyond_the_devices_stay_pending() {
        // 2 nodes × 2 devices: 4 of 6 pods get a device, the others nowhere to go.
        let (w, d) = workload(
            2,
            6,
            DraSetup {
                devices_per_node: 2,
                init_claims: 0,
                steady_batch: None,
            },
        );
        let r = run_workload(&w, &d, &Options::default()).unwrap();
        assert_eq!(r.scheduled, 4);
    }

    #[test]
    fn steady_state_frees_devices_round_after_round() {
        // 2 nodes × 2 devices, 3 already allocated: one free device, so one pod a round; the
        // deleted pod's claim frees it for the next round.
        let (w, d) = workload(
            2,
            5,
            DraSetup {
                devices_per_node: 2,
                init_claims: 3,
                steady_batch: Some(1),
            },
        );
        let r = run_workload(&w, &d, &Options::default()).unwrap();
        assert_eq!(r.scheduled, 5);
        // With two pods a round, only one of each round fits.
        let (w, d) = workload(
            2,
            6,
            DraSetup {
                devices_per_node: 2,
                init_claims: 3,
                steady_batch: Some(2),
            },
        );
        let r = run_workload(&w, &d, &Options::default()).unwrap();
        assert_eq!(r.scheduled, 3);
    }
}
