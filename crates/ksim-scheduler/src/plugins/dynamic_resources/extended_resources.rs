//! DRAExtendedResource (upstream `extendeddynamicresources.go`, v1.36): a pod's container
//! requests of an extended resource that a DeviceClass backs are served by devices of that
//! class on nodes that do not advertise the resource.
//!
//! - **PreFilter** (`preFilterExtendedResources`): when the gate is on and one of the pod's
//!   non-zero requests has a class (`DeviceClassResolver.GetDeviceClass`, [`device_class_for`]),
//!   the pod's claim is the one a former cycle created (annotation
//!   `resource.kubernetes.io/extended-resource-claim: "true"`, the pod as controller owner,
//!   `findExtendedResourceClaim`), else an in-memory claim named `<extended-resources>` with
//!   no requests, `generateName` `<pod>-extended-resources-`, owned by the pod.
//! - **Filter** (`filterExtendedResources`): a claim from a former cycle → `cannot schedule
//!   extended resource claim` (PostFilter deletes it); per request of a DRA extended name: a
//!   class backs it and the node's allocatable has none → DRA serves it; otherwise a node
//!   without the resource at all → `cannot fit resource`. The node's claim gets one request
//!   per container and resource (`createRequestsAndMappings`): `container-<i>-request-<j>`,
//!   `i` the container's index in init containers then containers, `j` the resource's index
//!   among the container's sorted request names, ExactCount of the requested quantity;
//!   non-sidecar init containers reuse the requests of later long-lived containers and share
//!   the largest of their own. The allocator then runs on the node with it.
//! - **Reserve** marks its allocation in flight; **PreBind** hands the claim to the engine,
//!   which creates it (a generated name), and the pod's `status.extendedResourceClaimStatus`
//!   (`patchPodExtendedResourceClaimStatus`); **Unreserve** deletes a created claim.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use ksim_api::resource::extended::{
    is_extended_resource_name, ContainerExtendedResourceRequest,
    EXTENDED_RESOURCE_CLAIM_ANNOTATION, RESOURCE_DEVICE_CLASS_PREFIX,
};
use ksim_api::resource::{DeviceClass, DeviceRequest, ExactDeviceRequest, ResourceClaim};
use ksim_api::{Container, Pod};

use super::allocator::Prepared;
use crate::cluster_objects::DraMap;
use crate::node_info::ClusterObjects;
use crate::pod_info::PodInfo;

/// `specialClaimInMemName`: the in-memory claim's name (not a valid object name).
pub const SPECIAL_CLAIM_NAME: &str = "<extended-resources>";

/// `DeviceClassResolver.GetDeviceClass`: the class that backs the extended resource `name`.
/// The implicit `deviceclass.resource.kubernetes.io/<class>` names its class; an explicit
/// `spec.extendedResourceName` shared by several classes resolves to the newest class, the
/// lowest name among equally old ones (upstream `ExtendedResourceCache`).
pub fn device_class_for<'a>(
    classes: &'a DraMap<DeviceClass>,
    name: &str,
) -> Option<&'a DeviceClass> {
    if let Some(class) = name.strip_prefix(RESOURCE_DEVICE_CLASS_PREFIX) {
        return classes.get(class).map(|c| &**c);
    }
    let mut best: Option<&DeviceClass> = None;
    for c in classes.values() {
        if c.spec.extended_resource_name.as_deref() != Some(name) {
            continue;
        }
        let newer = match best {
            None => true,
            // Iterated by name: an equally old class never replaces a lower name.
            Some(b) => created(c) > created(b),
        };
        if newer {
            best = Some(c);
        }
    }
    best
}

/// A class's creation time, comparable (RFC 3339 in UTC; an unset time is the oldest).
fn created(c: &DeviceClass) -> &str {
    c.metadata.creation_timestamp.as_deref().unwrap_or("")
}

/// `schedutil.IsDRAExtendedResourceName`: an extended resource name, or a class's implicit one.
pub fn is_dra_extended_resource_name(name: &str) -> bool {
    is_extended_resource_name(name) || name.starts_with(RESOURCE_DEVICE_CLASS_PREFIX)
}

/// The pod's extended resources backed by DRA in one cycle (upstream's special claim and
/// `draExtendedResource`).
pub(super) struct Extended {
    /// The in-memory claim, or the one a former cycle created.
    pub claim: Arc<ResourceClaim>,
    /// The claim was found in the cluster (created by a former cycle).
    pub existing: bool,
    /// The pod's non-zero requests of DRA extended resource names: name, quantity, whether a
    /// class backs it.
    resources: Vec<(String, i64, bool)>,
    /// The cluster's classes in this cycle.
    classes: DraMap<DeviceClass>,
    /// Per set of resources DRA serves on a node (indices into `resources`): the node's claim.
    variants: Mutex<BTreeMap<Vec<usize>, Arc<Variant>>>,
    /// The set each node that passed Filter uses (empty: none, the device plugin serves all).
    node_sets: Mutex<BTreeMap<String, Vec<usize>>>,
    /// What PreBind wrote: the claim (its name left to the engine) and the request mappings.
    pub written: Mutex<Option<(ResourceClaim, Vec<ContainerExtendedResourceRequest>)>>,
}

/// The claim one node needs, and the allocator for the pod's claims with it (last).
pub(super) struct Variant {
    pub claim: Arc<ResourceClaim>,
    pub mappings: Vec<ContainerExtendedResourceRequest>,
    pub prepared: Arc<Prepared>,
}

/// `findExtendedResourceClaim`.
pub fn find_claim(pod: &Pod, objects: &ClusterObjects) -> Option<Arc<ResourceClaim>> {
    let ns = &pod.metadata.namespace;
    objects
        .dra
        .resource_claims
        .values()
        .find(|c| {
            c.metadata.namespace == *ns
                && c.metadata
                    .annotations
                    .get(EXTENDED_RESOURCE_CLAIM_ANNOTATION)
                    .is_some_and(|v| v == "true")
                && c.metadata.owner_references.iter().any(|o| {
                    o.name == pod.metadata.name
                        && o.controller == Some(true)
                        && o.uid == pod.metadata.uid
                })
        })
        .cloned()
}

/// `preFilterExtendedResources` (the gate is on): `None` when no request of the pod has a class.
pub(super) fn pre_filter(pod: &PodInfo, objects: &ClusterObjects) -> Option<Extended> {
    let classes = &objects.dra.device_classes;
    if pod.requests.scalar.is_empty() || classes.is_empty() {
        return None;
    }
    let resources: Vec<(String, i64, bool)> = pod
        .requests
        .scalar
        .iter()
        .filter(|(n, q)| *q != 0 && is_dra_extended_resource_name(n))
        .map(|(n, q)| (n.clone(), *q, device_class_for(classes, n).is_some()))
        .collect();
    if !resources.iter().any(|r| r.2) {
        return None;
    }
    let p = &pod.pod;
    let (claim, existing) = match find_claim(p, objects) {
        Some(c) => (c, true),
        None => (Arc::new(special_claim(p)), false),
    };
    Some(Extended {
        claim,
        existing,
        resources,
        classes: classes.clone(),
        variants: Mutex::new(BTreeMap::new()),
        node_sets: Mutex::new(BTreeMap::new()),
        written: Mutex::new(None),
    })
}

/// The in-memory claim of a pod (upstream gives it a random temporary UID; ksim's is derived
/// from the pod's, so runs repeat).
fn special_claim(pod: &Pod) -> ResourceClaim {
    let mut c = ResourceClaim {
        api_version: ksim_api::resource::API_VERSION.into(),
        kind: "ResourceClaim".into(),
        ..Default::default()
    };
    c.metadata.namespace = pod.metadata.namespace.clone();
    c.metadata.name = SPECIAL_CLAIM_NAME.into();
    c.metadata.uid = format!("{SPECIAL_CLAIM_NAME}{}", pod.metadata.uid);
    c.metadata.generate_name = format!("{}-extended-resources-", pod.metadata.name);
    c.metadata.owner_references = vec![ksim_api::meta::OwnerReference {
        api_version: "v1".into(),
        kind: "Pod".into(),
        name: pod.metadata.name.clone(),
        uid: pod.metadata.uid.clone(),
        controller: Some(true),
    }];
    c.metadata
        .annotations
        .insert(EXTENDED_RESOURCE_CLAIM_ANNOTATION.into(), "true".into());
    c
}

/// What Filter decided for one node.
pub(super) enum NodeVerdict {
    /// Rejected with upstream's message.
    Reject(&'static str),
    /// The device plugin serves every request here: no claim for this node.
    NoClaim,
    /// DRA serves these resources (indices into the pod's list).
    Dra(Vec<usize>),
}

impl Extended {
    /// The in-flight key of this pod's claim in Reserve (the in-memory claim has no name of
    /// its own; upstream keys it by its temporary UID).
    pub fn in_flight_key(&self) -> String {
        format!(
            "{}/{}",
            self.claim.metadata.namespace, self.claim.metadata.uid
        )
    }

    /// `filterExtendedResources` for one node.
    pub fn verdict(&self, alloc: &crate::resource::Resource) -> NodeVerdict {
        if self.existing {
            return NodeVerdict::Reject("cannot schedule extended resource claim");
        }
        let mut set = Vec::new();
        for (i, (name, _, backed)) in self.resources.iter().enumerate() {
            let present = alloc.scalar.binary_search_by(|(n, _)| n.as_str().cmp(name));
            let amount = present.as_ref().map_or(0, |&k| alloc.scalar[k].1);
            if *backed && amount == 0 {
                set.push(i);
            } else if present.is_err() {
                return NodeVerdict::Reject("cannot fit resource");
            }
        }
        if set.is_empty() {
            NodeVerdict::NoClaim
        } else {
            NodeVerdict::Dra(set)
        }
    }

    /// The node claim for `set`, built (with its allocator, by `prepare`) on first use.
    pub fn variant(
        &self,
        pod: &Pod,
        set: &[usize],
        prepare: impl FnOnce(Arc<ResourceClaim>, &DraMap<DeviceClass>) -> Prepared,
    ) -> Arc<Variant> {
        if let Some(v) = super::lock(&self.variants).get(set) {
            return v.clone();
        }
        let wanted: Vec<(&str, &str)> = set
            .iter()
            .filter_map(|&i| {
                let name = self.resources[i].0.as_str();
                device_class_for(&self.classes, name).map(|c| (name, c.metadata.name.as_str()))
            })
            .collect();
        let (requests, mappings) = requests_and_mappings(pod, &wanted);
        let mut claim = (*self.claim).clone();
        claim.spec.devices.requests = requests;
        let claim = Arc::new(claim);
        let prepared = Arc::new(prepare(claim.clone(), &self.classes));
        let v = Arc::new(Variant {
            claim,
            mappings,
            prepared,
        });
        super::lock(&self.variants).insert(set.to_vec(), v.clone());
        v
    }

    /// Records the set a node passed Filter with.
    pub fn passed(&self, node: &str, set: Vec<usize>) {
        super::lock(&self.node_sets).insert(node.to_string(), set);
    }

    /// The node claim Reserve and PreBind use on `node` (None: no claim there).
    pub fn variant_for(&self, node: &str) -> Option<Arc<Variant>> {
        let sets = super::lock(&self.node_sets);
        let set = sets.get(node).filter(|s| !s.is_empty())?;
        super::lock(&self.variants).get(set).cloned()
    }
}

/// `createResourceRequestAndMappings` for one container (`index` among init containers then
/// containers) and one resource: the request it needs beyond `reusable` (later long-lived
/// containers' requests), and its mappings.
fn container_request(
    index: usize,
    container: &Container,
    resource: &str,
    class: &str,
    reusable: &[Option<DeviceRequest>],
) -> (Option<DeviceRequest>, Vec<ContainerExtendedResourceRequest>) {
    let mut mappings = Vec::new();
    let reqs = &container.resources.requests;
    let Some(q) = reqs.get(resource) else {
        return (None, mappings);
    };
    // `AsInt64`: a whole quantity only.
    let m = q.milli_value();
    if m % 1000 != 0 || m == 0 {
        return (None, mappings);
    }
    let want = m / 1000;
    let mapping = |request: &str| ContainerExtendedResourceRequest {
        container_name: container.name.clone(),
        resource_name: resource.to_string(),
        request_name: request.to_string(),
    };
    let mut sum = 0;
    for r in reusable.iter().flatten() {
        sum += r.exactly.as_ref().map_or(0, |e| e.count);
        mappings.push(mapping(&r.name));
        if sum >= want {
            return (None, mappings);
        }
    }
    // The resource's index among the container's request names, sorted.
    let j = reqs.keys().position(|k| k == resource).unwrap_or(0);
    let name = format!("container-{index}-request-{j}");
    mappings.push(mapping(&name));
    let request = DeviceRequest {
        name,
        exactly: Some(ExactDeviceRequest {
            device_class_name: class.to_string(),
            allocation_mode: "ExactCount".into(),
            count: want - sum,
            ..Default::default()
        }),
        ..Default::default()
    };
    (Some(request), mappings)
}

/// `createRequestsAndMappings`: the node claim's requests (sorted by name) and the pod's
/// request mappings, for the resources DRA serves (`(resource, class)`, any order).
pub fn requests_and_mappings(
    pod: &Pod,
    resources: &[(&str, &str)],
) -> (Vec<DeviceRequest>, Vec<ContainerExtendedResourceRequest>) {
    let init = pod.spec.init_containers.len();
    let containers: Vec<&Container> = pod
        .spec
        .init_containers
        .iter()
        .chain(pod.spec.containers.iter())
        .collect();
    let short_lived = |i: usize| i < init && !containers[i].is_sidecar();
    let mut sorted: Vec<(&str, &str)> = resources.to_vec();
    sorted.sort();
    let mut requests = Vec::new();
    let mut mappings = Vec::new();
    for (resource, class) in sorted {
        let mut long: Vec<Option<DeviceRequest>> = vec![None; containers.len()];
        let mut long_maps = Vec::new();
        for (i, c) in containers.iter().enumerate() {
            if short_lived(i) {
                continue;
            }
            let (r, m) = container_request(i, c, resource, class, &[]);
            long[i] = r;
            long_maps.extend(m);
        }
        let mut short_max: Option<DeviceRequest> = None;
        let mut short_names: Vec<String> = Vec::new();
        let mut short_maps = Vec::new();
        for (i, c) in containers.iter().enumerate() {
            if !short_lived(i) {
                continue;
            }
            let (r, m) = container_request(i, c, resource, class, &long[i..]);
            if let Some(r) = r {
                short_names.push(r.name.clone());
                let count = |r: &DeviceRequest| r.exactly.as_ref().map_or(0, |e| e.count);
                if short_max.as_ref().is_none_or(|mx| count(mx) < count(&r)) {
                    short_max = Some(r);
                }
            }
            short_maps.extend(m);
        }
        if let Some(mx) = &short_max {
            short_names.sort();
            short_names.dedup();
            if short_names.len() > 1 {
                for m in &mut short_maps {
                    if m.request_name != mx.name && short_names.contains(&m.request_name) {
                        m.request_name = mx.name.clone();
                    }
                }
            }
        }
        requests.extend(short_max);
        requests.extend(long.into_iter().flatten());
        mappings.extend(long_maps);
        mappings.extend(short_maps);
    }
    requests.sort_by(|a, b| a.name.cmp(&b.name));
    (requests, mappings)
}

/// PreBind's part for the extended resource claim (`bindClaim` with
/// `createExtendedResourceClaimInAPI`): the node claim with its allocation, the finalizer
/// and the pod in `reservedFor`, its name left to the engine (`generateName`), and the
/// pod's request mappings.
pub(super) fn pre_bind(
    v: &Variant,
    e: &Extended,
    allocation: Option<&ksim_api::resource::AllocationResult>,
    pod: &PodInfo,
    node: &str,
) -> crate::framework::Status {
    use crate::framework::Status;
    let Some(a) = allocation else {
        return Status::error(format!("extended resource claim not found for node {node}"));
    };
    if v.mappings.is_empty() {
        return Status::error(format!(
            "nil or empty request mappings, no update of pod {}/{} ExtendedResourceClaimStatus",
            pod.namespace(),
            pod.name()
        ));
    }
    let mut c = (*v.claim).clone();
    c.metadata.name = String::new();
    c.metadata.uid = String::new();
    c.metadata.add_finalizer(ksim_api::resource::FINALIZER);
    c.status.allocation = Some(a.clone());
    c.status
        .reserved_for
        .push(ksim_api::resource::ResourceClaimConsumerReference {
            api_group: String::new(),
            resource: "pods".into(),
            name: pod.name().to_string(),
            uid: pod.uid().to_string(),
        });
    *super::lock(&e.written) = Some((c, v.mappings.clone()));
    Status::success()
}
