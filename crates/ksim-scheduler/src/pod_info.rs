//! `PodInfo`: a pod compiled once for scheduling, so no plugin re-parses it per node.

use std::collections::BTreeSet;
use std::sync::Arc;

use ksim_api::{Labels, Pod, PodAffinityTerm, Selector};

use crate::resource::{every_container_requests_cpu_and_memory, pod_requests, Resource};

/// `framework.AffinityTerm`. Equality and hashing compare every field, so that equal terms
/// of different pods share one group in the pod index.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct AffinityTerm {
    pub namespaces: BTreeSet<String>,
    pub selector: Selector,
    pub topology_key: String,
    pub namespace_selector: Selector,
}

impl AffinityTerm {
    /// `newAffinityTerm`: the pod's namespace when neither namespaces nor a namespace selector
    /// is given.
    pub fn new(pod: &Pod, term: &PodAffinityTerm) -> AffinityTerm {
        let namespaces = if term.namespaces.is_empty() && term.namespace_selector.is_none() {
            BTreeSet::from([pod.metadata.namespace.clone()])
        } else {
            term.namespaces.iter().cloned().collect()
        };
        AffinityTerm {
            namespaces,
            selector: Selector::from_label_selector(term.label_selector.as_ref()),
            topology_key: term.topology_key.clone(),
            namespace_selector: Selector::from_label_selector(term.namespace_selector.as_ref()),
        }
    }

    /// `AffinityTerm.Matches`: namespace (by name or by its labels), then the label selector.
    pub fn matches(&self, pod: &PodInfo, ns_labels: &Labels) -> bool {
        if self.namespaces.contains(pod.namespace()) || self.namespace_selector.matches(ns_labels) {
            return self.selector.matches(&pod.pod.metadata.labels);
        }
        false
    }
}

#[derive(Debug, Clone)]
pub struct WeightedAffinityTerm {
    pub term: AffinityTerm,
    pub weight: i32,
}

/// A host port a pod binds: (ip, protocol, port) with upstream's sanitising applied.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostPort {
    pub ip: String,
    pub protocol: String,
    pub port: i32,
}

/// A pod as the scheduler sees it. Shared by `Arc` between the queue, the cache and node infos.
///
/// Laid out in declaration order (`repr(C)`): the priority, the requests, the ports and the
/// affinity lists first, beside the `Arc`'s counters, the object last. Adding or removing a pod
/// on a node, and a preemption dry run's scan of hundreds of pods per attempt, read little
/// more than those: a few cache lines at the start instead of lines across the object.
#[derive(Debug, Clone)]
#[repr(C)]
pub struct PodInfo {
    /// `spec.priority` (0 when unset), read once: every object a `PodInfo` is built from or
    /// given ([`PodInfo::with_object`]) sets it, and nothing changes a pod's priority after
    /// admission.
    priority: i32,
    /// A 32-bit hash of `metadata.uid` ([`uid_hash`]), set with every object a `PodInfo` is
    /// built from or given, and by [`PodInfo::set_uid`] (the one way to change a `PodInfo`'s
    /// UID): comparing UIDs ([`PodInfo::same_uid`]) reads the UID strings, elsewhere in
    /// memory, only when the hashes are equal. It fills the padding after `priority`.
    uid_hash: u32,
    /// Sum of requests as `PodRequests` computes them (init containers, sidecars, overhead).
    pub requests: Resource,
    /// Requests with missing container cpu/memory counted as 100m / 200Mi (scoring only).
    pub non_zero_requests: Resource,
    pub host_ports: Vec<HostPort>,
    pub required_affinity: Vec<AffinityTerm>,
    pub required_anti_affinity: Vec<AffinityTerm>,
    pub preferred_affinity: Vec<WeightedAffinityTerm>,
    pub preferred_anti_affinity: Vec<WeightedAffinityTerm>,
    pub pod: Pod,
    /// `namespace/name`.
    pub key: String,
}

impl PodInfo {
    /// The same pod with a new object whose spec (but for `spec.nodeName`), labels, namespace
    /// and name are unchanged — a binding, a status change, a nomination, a deletion mark.
    /// The derived fields depend on none of what may differ, so they are kept rather than
    /// recomputed (requests are parsed once per pod, not once per binding).
    pub fn with_object(&self, pod: Pod) -> PodInfo {
        debug_assert_eq!(pod.key(), self.key);
        PodInfo {
            priority: pod.priority(),
            uid_hash: uid_hash(&pod.metadata.uid),
            pod,
            key: self.key.clone(),
            requests: self.requests.clone(),
            non_zero_requests: self.non_zero_requests.clone(),
            host_ports: self.host_ports.clone(),
            required_affinity: self.required_affinity.clone(),
            required_anti_affinity: self.required_anti_affinity.clone(),
            preferred_affinity: self.preferred_affinity.clone(),
            preferred_anti_affinity: self.preferred_anti_affinity.clone(),
        }
    }

    pub fn new(pod: Pod) -> PodInfo {
        let key = pod.key();
        let requests = pod_requests(&pod, false);
        // The scoring defaults stand in only for a container's missing cpu or memory request:
        // when every container names both (the usual pod), the sums are the same.
        let non_zero_requests = if every_container_requests_cpu_and_memory(&pod) {
            requests.clone()
        } else {
            pod_requests(&pod, true)
        };
        let host_ports = host_ports_of(&pod);
        let (mut ra, mut raa, mut pa, mut paa) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        if let Some(aff) = &pod.spec.affinity {
            if let Some(a) = &aff.pod_affinity {
                ra = a
                    .required
                    .iter()
                    .map(|t| AffinityTerm::new(&pod, t))
                    .collect();
                pa = a
                    .preferred
                    .iter()
                    .map(|w| WeightedAffinityTerm {
                        term: AffinityTerm::new(&pod, &w.pod_affinity_term),
                        weight: w.weight,
                    })
                    .collect();
            }
            if let Some(a) = &aff.pod_anti_affinity {
                raa = a
                    .required
                    .iter()
                    .map(|t| AffinityTerm::new(&pod, t))
                    .collect();
                paa = a
                    .preferred
                    .iter()
                    .map(|w| WeightedAffinityTerm {
                        term: AffinityTerm::new(&pod, &w.pod_affinity_term),
                        weight: w.weight,
                    })
                    .collect();
            }
        }
        PodInfo {
            priority: pod.priority(),
            uid_hash: uid_hash(&pod.metadata.uid),
            pod,
            key,
            requests,
            non_zero_requests,
            host_ports,
            required_affinity: ra,
            required_anti_affinity: raa,
            preferred_affinity: pa,
            preferred_anti_affinity: paa,
        }
    }

    pub fn arc(pod: Pod) -> Arc<PodInfo> {
        Arc::new(PodInfo::new(pod))
    }

    /// The pod as the cache assumes it on `node`: `spec.nodeName` set and
    /// `status.nominatedNodeName` cleared. Nothing compiled from the pod depends on those two
    /// fields, so the compiled parts are copied instead of recomputed (upstream re-runs
    /// `NewPodInfo` on the copy, with the same result).
    pub fn assumed_on(&self, node: &str) -> PodInfo {
        let mut c = self.clone();
        c.pod.spec.node_name = node.to_string();
        c.pod.status.nominated_node_name.clear();
        c
    }

    pub fn name(&self) -> &str {
        &self.pod.metadata.name
    }

    pub fn namespace(&self) -> &str {
        &self.pod.metadata.namespace
    }

    pub fn uid(&self) -> &str {
        &self.pod.metadata.uid
    }

    /// Changes the pod's UID (`metadata.uid`), keeping its hash in step.
    pub fn set_uid(&mut self, uid: String) {
        self.uid_hash = uid_hash(&uid);
        self.pod.metadata.uid = uid;
    }

    /// Whether the two pods have the same UID: `a.uid() == b.uid()`, the strings compared
    /// only when their hashes are equal.
    #[inline]
    pub fn same_uid(&self, other: &PodInfo) -> bool {
        debug_assert_eq!(
            self.uid_hash,
            uid_hash(self.uid()),
            "UID changed without set_uid"
        );
        debug_assert_eq!(
            other.uid_hash,
            uid_hash(other.uid()),
            "UID changed without set_uid"
        );
        self.uid_hash == other.uid_hash && self.uid() == other.uid()
    }

    /// The hash of the pod's UID ([`uid_hash`]): two pods with equal UIDs have equal hashes.
    #[inline]
    pub fn uid_hash(&self) -> u32 {
        self.uid_hash
    }

    #[inline]
    pub fn priority(&self) -> i32 {
        self.priority
    }

    pub fn labels(&self) -> &Labels {
        &self.pod.metadata.labels
    }

    /// Whether the pod has any pod affinity or anti-affinity (NodeInfo.PodsWithAffinity).
    pub fn has_affinity(&self) -> bool {
        !(self.required_affinity.is_empty()
            && self.required_anti_affinity.is_empty()
            && self.preferred_affinity.is_empty()
            && self.preferred_anti_affinity.is_empty())
    }
}

/// The hash [`PodInfo`] keeps of a UID: FxHash's low 32 bits. Equal UIDs hash equal.
pub fn uid_hash(uid: &str) -> u32 {
    use std::hash::{Hash, Hasher};
    let mut h = rustc_hash::FxHasher::default();
    uid.hash(&mut h);
    h.finish() as u32
}

/// Host ports of all containers (and restartable sidecar init containers), sanitised.
fn host_ports_of(pod: &Pod) -> Vec<HostPort> {
    let mut out = Vec::new();
    let sidecars = pod.spec.init_containers.iter().filter(|c| c.is_sidecar());
    for c in pod.spec.containers.iter().chain(sidecars) {
        for p in &c.ports {
            if p.host_port <= 0 {
                continue;
            }
            out.push(HostPort {
                ip: if p.host_ip.is_empty() {
                    "0.0.0.0".into()
                } else {
                    p.host_ip.clone()
                },
                protocol: if p.protocol.is_empty() {
                    "TCP".into()
                } else {
                    p.protocol.clone()
                },
                port: p.host_port,
            });
        }
    }
    out
}
