//! The API-server defaulting that scheduling depends on (`SetObjectDefaults_Pod`/`_Node`, the
//! namespace and scheduler-name defaults), applied to every object before the scheduler sees it.

use crate::core::{Container, Node, Pod};

/// Scheduler name a pod gets when it names none.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

/// Applies pod defaulting in place. Idempotent.
pub fn default_pod(pod: &mut Pod) {
    if pod.metadata.namespace.is_empty() {
        pod.metadata.namespace = "default".into();
    }
    if pod.metadata.uid.is_empty() {
        pod.metadata.uid = format!("uid-{}-{}", pod.metadata.namespace, pod.metadata.name);
    }
    if pod.spec.scheduler_name.is_empty() {
        pod.spec.scheduler_name = DEFAULT_SCHEDULER_NAME.into();
    }
    let host_network = pod.spec.host_network;
    for c in pod
        .spec
        .containers
        .iter_mut()
        .chain(pod.spec.init_containers.iter_mut())
    {
        default_container(c, host_network);
    }
    for v in &mut pod.spec.volumes {
        if let Some(rbd) = &mut v.rbd {
            if rbd.pool.is_empty() {
                rbd.pool = "rbd".into();
            }
        }
    }
}

fn default_container(c: &mut Container, host_network: bool) {
    // A limit without a request becomes the request.
    for (name, q) in &c.resources.limits {
        c.resources
            .requests
            .entry(name.clone())
            .or_insert_with(|| q.clone());
    }
    for p in &mut c.ports {
        if p.protocol.is_empty() {
            p.protocol = "TCP".into();
        }
        if host_network && p.host_port == 0 {
            p.host_port = p.container_port;
        }
    }
}

/// Applies node defaulting in place: a node without allocatable gets its capacity.
pub fn default_node(node: &mut Node) {
    if node.status.allocatable.is_empty() {
        node.status.allocatable = node.status.capacity.clone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_become_requests_and_ports_get_tcp() {
        let mut p: Pod = serde_json::from_str(
            r#"{"metadata":{"name":"p"},"spec":{"hostNetwork":true,"containers":[{"name":"c",
            "resources":{"limits":{"cpu":"1"},"requests":{"memory":"1Gi"}},
            "ports":[{"containerPort":80}]}]}}"#,
        )
        .unwrap();
        default_pod(&mut p);
        let c = &p.spec.containers[0];
        assert_eq!(c.resources.requests["cpu"].milli_value(), 1000);
        assert_eq!(c.ports[0].protocol, "TCP");
        assert_eq!(c.ports[0].host_port, 80);
        assert_eq!(p.metadata.namespace, "default");
        assert_eq!(p.metadata.uid, "uid-default-p");
        assert_eq!(p.spec.scheduler_name, "default-scheduler");
    }
}
