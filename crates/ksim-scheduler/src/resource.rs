//! `framework.Resource` and the pod request arithmetic of `resourcehelper.PodRequests`.

use ksim_api::{Pod, ResourceList};
use smallvec::SmallVec;

pub const CPU: &str = "cpu";
pub const MEMORY: &str = "memory";
pub const EPHEMERAL_STORAGE: &str = "ephemeral-storage";
pub const PODS: &str = "pods";

/// Requests a container without a cpu request counts for scoring (`DefaultMilliCPURequest`).
pub const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;
/// Requests a container without a memory request counts for scoring (200 MiB).
pub const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

/// Amounts of the resources the scheduler tracks: cpu in millicores, the rest in units
/// (bytes for memory and storage). Scalar resources are kept sorted by name.
#[derive(Debug, Default, PartialEq, Eq)]
// In declaration order: the counters together, ahead of the scalar list (NodeInfo's hot path).
#[repr(C)]
pub struct Resource {
    pub milli_cpu: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
    pub allowed_pod_number: i64,
    pub scalar: Vec<(String, i64)>,
}

/// Written out for `clone_from`, which reuses the scalar list's allocation (a dry run copies
/// node after node into one scratch `NodeInfo`; the derived one would clone and drop).
impl Clone for Resource {
    fn clone(&self) -> Resource {
        Resource {
            milli_cpu: self.milli_cpu,
            memory: self.memory,
            ephemeral_storage: self.ephemeral_storage,
            allowed_pod_number: self.allowed_pod_number,
            // Most resources have no scalar entries: no call into `Vec::clone` then.
            scalar: if self.scalar.is_empty() {
                Vec::new()
            } else {
                self.scalar.clone()
            },
        }
    }

    fn clone_from(&mut self, src: &Resource) {
        // Destructured so that a new field cannot be forgotten here.
        let Resource {
            milli_cpu,
            memory,
            ephemeral_storage,
            allowed_pod_number,
            scalar,
        } = src;
        self.milli_cpu = *milli_cpu;
        self.memory = *memory;
        self.ephemeral_storage = *ephemeral_storage;
        self.allowed_pod_number = *allowed_pod_number;
        crate::node_info::copy_vec(&mut self.scalar, scalar);
    }
}

impl Resource {
    /// Converts a ResourceList as `Resource.Add` does (cpu via MilliValue, the rest via Value).
    pub fn from_list(list: &ResourceList) -> Resource {
        let mut r = Resource::default();
        for (name, q) in list {
            match name.as_str() {
                CPU => r.milli_cpu += q.milli_value(),
                MEMORY => r.memory += q.value(),
                EPHEMERAL_STORAGE => r.ephemeral_storage += q.value(),
                PODS => r.allowed_pod_number += q.value(),
                other => {
                    if is_scalar_resource_name(other) {
                        r.add_scalar(other, q.value());
                    }
                }
            }
        }
        r
    }

    pub fn scalar(&self, name: &str) -> i64 {
        self.scalar
            .binary_search_by(|(n, _)| n.as_str().cmp(name))
            .map(|i| self.scalar[i].1)
            .unwrap_or(0)
    }

    pub fn add_scalar(&mut self, name: &str, v: i64) {
        match self.scalar.binary_search_by(|(n, _)| n.as_str().cmp(name)) {
            Ok(i) => self.scalar[i].1 += v,
            Err(i) => self.scalar.insert(i, (name.to_string(), v)),
        }
    }

    /// The amount of a resource by name, in the unit the scheduler uses for it.
    pub fn get(&self, name: &str) -> i64 {
        match name {
            CPU => self.milli_cpu,
            MEMORY => self.memory,
            EPHEMERAL_STORAGE => self.ephemeral_storage,
            PODS => self.allowed_pod_number,
            other => self.scalar(other),
        }
    }

    pub fn add(&mut self, o: &Resource) {
        self.milli_cpu += o.milli_cpu;
        self.memory += o.memory;
        self.ephemeral_storage += o.ephemeral_storage;
        self.allowed_pod_number += o.allowed_pod_number;
        for (n, v) in &o.scalar {
            self.add_scalar(n, *v);
        }
    }

    pub fn sub(&mut self, o: &Resource) {
        self.milli_cpu -= o.milli_cpu;
        self.memory -= o.memory;
        self.ephemeral_storage -= o.ephemeral_storage;
        self.allowed_pod_number -= o.allowed_pod_number;
        for (n, v) in &o.scalar {
            self.add_scalar(n, -*v);
        }
    }

    pub fn is_zero(&self) -> bool {
        self.milli_cpu == 0
            && self.memory == 0
            && self.ephemeral_storage == 0
            && self.scalar.iter().all(|(_, v)| *v == 0)
    }
}

/// `schedutil.IsScalarResourceName`: extended resources, hugepages, attachable volumes, and
/// native `kubernetes.io/` resources other than the core ones.
pub fn is_scalar_resource_name(name: &str) -> bool {
    is_extended_resource_name(name)
        || name.starts_with("hugepages-")
        || name.starts_with("attachable-volumes-")
        || name.contains("kubernetes.io/")
}

/// A name with a domain prefix outside `kubernetes.io` (`nvidia.com/gpu`).
pub fn is_extended_resource_name(name: &str) -> bool {
    if is_native_resource(name) || name.starts_with("requests.") {
        return false;
    }
    name.contains('/')
}

/// A name without a domain, or in `kubernetes.io/`.
pub fn is_native_resource(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// Per-resource sums in milli units; converted once at the end so that the sum of fractional
/// quantities rounds as upstream's exact Quantity arithmetic would. Names are borrowed from
/// the pod (or are the default requests' constants): summing allocates no string, and a
/// list of up to four resources (cpu, memory, storage and one more) allocates nothing.
#[derive(Default, Clone)]
struct MilliList<'a>(SmallVec<[(&'a str, i128); 4]>);

impl<'a> MilliList<'a> {
    fn from_list(l: &'a ResourceList) -> MilliList<'a> {
        MilliList(
            l.iter()
                .map(|(k, q)| (k.as_str(), q.milli_value() as i128))
                .collect(),
        )
    }
    fn get_mut(&mut self, k: &str) -> Option<&mut i128> {
        self.0.iter_mut().find(|(n, _)| *n == k).map(|(_, v)| v)
    }
    fn add(&mut self, o: &MilliList<'a>) {
        for &(k, v) in &o.0 {
            match self.get_mut(k) {
                Some(x) => *x += v,
                None => self.0.push((k, v)),
            }
        }
    }
    fn max(&mut self, o: &MilliList<'a>) {
        for &(k, v) in &o.0 {
            match self.get_mut(k) {
                Some(x) => *x = (*x).max(v),
                None => self.0.push((k, v)),
            }
        }
    }
    fn to_resource(&self) -> Resource {
        let mut r = Resource::default();
        for &(k, ref m) in &self.0 {
            let value = (*m as f64 / 1000.0).ceil() as i64;
            let value = if m % 1000 == 0 {
                (m / 1000) as i64
            } else {
                value
            };
            match k {
                CPU => r.milli_cpu += *m as i64,
                MEMORY => r.memory += value,
                EPHEMERAL_STORAGE => r.ephemeral_storage += value,
                PODS => r.allowed_pod_number += value,
                other if is_scalar_resource_name(other) => r.add_scalar(other, value),
                _ => {}
            }
        }
        r
    }
}

/// A container's requests, with the scoring defaults for missing cpu/memory when
/// `non_missing` is set.
fn container_requests(l: &ResourceList, non_missing: bool) -> MilliList<'_> {
    let mut m = MilliList::from_list(l);
    if non_missing {
        if !l.contains_key(CPU) {
            m.0.push((CPU, DEFAULT_MILLI_CPU_REQUEST as i128));
        }
        if !l.contains_key(MEMORY) {
            m.0.push((MEMORY, DEFAULT_MEMORY_REQUEST as i128 * 1000));
        }
    }
    m
}

/// Whether every container and init container of `pod` has a cpu and a memory request (of
/// any amount, zero included): then `pod_requests(pod, true)` equals `pod_requests(pod, false)`,
/// as the defaults replace only missing requests.
pub fn every_container_requests_cpu_and_memory(pod: &Pod) -> bool {
    pod.spec
        .containers
        .iter()
        .chain(&pod.spec.init_containers)
        .all(|c| {
            c.resources.requests.contains_key(CPU) && c.resources.requests.contains_key(MEMORY)
        })
}

/// What `PodRequests` returns, with missing cpu/memory container requests replaced by the
/// scoring defaults when `non_missing` is set.
pub fn pod_requests(pod: &Pod, non_missing: bool) -> Resource {
    let mut reqs = MilliList::default();
    for c in &pod.spec.containers {
        reqs.add(&container_requests(&c.resources.requests, non_missing));
    }
    let mut restartable = MilliList::default();
    let mut init_max = MilliList::default();
    for c in &pod.spec.init_containers {
        let creqs = container_requests(&c.resources.requests, non_missing);
        let effective = if c.is_sidecar() {
            reqs.add(&creqs);
            restartable.add(&creqs);
            restartable.clone()
        } else {
            let mut tmp = creqs;
            tmp.add(&restartable);
            tmp
        };
        init_max.max(&effective);
    }
    reqs.max(&init_max);
    if !pod.spec.overhead.is_empty() {
        reqs.add(&MilliList::from_list(&pod.spec.overhead));
    }
    reqs.to_resource()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(json: &str) -> Pod {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn init_containers_take_the_max_and_sidecars_add() {
        let p = pod(
            r#"{"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"1"}}}],
            "initContainers":[{"name":"i","resources":{"requests":{"cpu":"3"}}},
              {"name":"s","restartPolicy":"Always","resources":{"requests":{"cpu":"500m"}}}],
            "overhead":{"cpu":"100m"}}}"#,
        );
        // containers 1 + sidecar 0.5 = 1.5; init max(3, 0.5) = 3; +overhead 0.1.
        assert_eq!(pod_requests(&p, false).milli_cpu, 3100);
    }

    #[test]
    fn non_missing_defaults_apply_per_container() {
        let p = pod(
            r#"{"spec":{"containers":[{"name":"a"},{"name":"b","resources":{"requests":{"cpu":"0"}}}]}}"#,
        );
        let r = pod_requests(&p, true);
        assert_eq!(r.milli_cpu, 100);
        assert_eq!(r.memory, 2 * DEFAULT_MEMORY_REQUEST);
        assert_eq!(pod_requests(&p, false).milli_cpu, 0);
    }

    #[test]
    fn non_missing_requests_equal_the_plain_sums_when_every_container_names_both() {
        for json in [
            r#"{"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"0","memory":"0"}}}]}}"#,
            r#"{"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"1","memory":"1Gi","nvidia.com/gpu":"1"}}}],
              "initContainers":[{"name":"i","resources":{"requests":{"cpu":"3","memory":"1"}}},
                {"name":"s","restartPolicy":"Always","resources":{"requests":{"cpu":"500m","memory":"2Gi"}}}],
              "overhead":{"cpu":"100m"}}}"#,
        ] {
            let p = pod(json);
            assert!(every_container_requests_cpu_and_memory(&p));
            assert_eq!(pod_requests(&p, true), pod_requests(&p, false));
        }
        for json in [
            r#"{"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"1"}}}]}}"#,
            r#"{"spec":{"containers":[{"name":"a","resources":{"requests":{"cpu":"1","memory":"1"}}}],
              "initContainers":[{"name":"i","resources":{"requests":{"memory":"1"}}}]}}"#,
        ] {
            assert!(!every_container_requests_cpu_and_memory(&pod(json)));
        }
    }

    #[test]
    fn scalar_names() {
        assert!(is_scalar_resource_name("nvidia.com/gpu"));
        assert!(is_scalar_resource_name("hugepages-2Mi"));
        assert!(!is_scalar_resource_name("cpu"));
        assert!(!is_scalar_resource_name("foo"));
    }
}
