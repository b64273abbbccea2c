//! The API-server defaulting that scheduling depends on (`SetObjectDefaults_Pod`/`_Node`, the
//! namespace and scheduler-name defaults), applied to every object before the scheduler sees it.

use crate::core::{Container, Namespace, Node, Pod};

/// The label the API server gives every namespace, its own name as value (GA since v1.22;
/// upstream `pkg/registry/core/namespace/strategy.go` `PrepareForCreate`/`PrepareForUpdate`),
/// so that `namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: other}}` names a
/// namespace.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// Namespace defaulting: sets [`NAMESPACE_NAME_LABEL`] to the namespace's name (overwriting a
/// different value, as the API server does). Idempotent.
pub fn default_namespace(ns: &mut Namespace) {
    let name = ns.metadata.name.clone();
    ns.metadata
        .labels
        .insert(NAMESPACE_NAME_LABEL.to_string(), name);
}

/// Scheduler name a pod gets when it names none.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

/// The PriorityClasses every cluster has (`scheduling.k8s.io` `SystemPriorityClasses`): the
/// Priority admission plugin resolves a pod's `priorityClassName` against them even when no
/// PriorityClass object was loaded.
pub const BUILTIN_PRIORITY_CLASSES: [(&str, i32); 2] = [
    ("system-node-critical", 2_000_001_000),
    ("system-cluster-critical", 2_000_000_000),
];

/// The value of a built-in PriorityClass.
pub fn builtin_priority(class: &str) -> Option<i32> {
    BUILTIN_PRIORITY_CLASSES
        .iter()
        .find(|(n, _)| *n == class)
        .map(|(_, v)| *v)
}

/// Applies pod defaulting in place. Idempotent.
pub fn default_pod(pod: &mut Pod) {
    if pod.spec.priority.is_none() {
        pod.spec.priority = builtin_priority(&pod.spec.priority_class_name);
    }
    if pod.metadata.namespace.is_empty() {
        pod.metadata.namespace = "default".into();
    }
    // A pod named by generateName gets its uid when it is named.
    if pod.metadata.uid.is_empty() && !pod.metadata.name.is_empty() {
        pod.metadata.uid =
            crate::meta::concat(&["uid-", &pod.metadata.namespace, "-", &pod.metadata.name]);
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

    #[test]
    fn namespaces_get_their_name_label() {
        let mut ns: Namespace = serde_json::from_str(
            r#"{"metadata":{"name":"other","labels":{"team":"a","kubernetes.io/metadata.name":"x"}}}"#,
        )
        .unwrap();
        default_namespace(&mut ns);
        assert_eq!(ns.metadata.labels[NAMESPACE_NAME_LABEL], "other");
        assert_eq!(ns.metadata.labels["team"], "a");
    }

    #[test]
    fn builtin_priority_classes_resolve() {
        let mut p: Pod = serde_json::from_str(
            r#"{"metadata":{"name":"p"},"spec":{"priorityClassName":"system-node-critical"}}"#,
        )
        .unwrap();
        default_pod(&mut p);
        assert_eq!(p.spec.priority, Some(2_000_001_000));
        let mut p: Pod = serde_json::from_str(
            r#"{"metadata":{"name":"p"},"spec":{"priorityClassName":"system-cluster-critical"}}"#,
        )
        .unwrap();
        default_pod(&mut p);
        assert_eq!(p.priority(), 2_000_000_000);
        // An explicit priority is kept; an unknown class is left to the loader.
        let mut p: Pod = serde_json::from_str(
            r#"{"metadata":{"name":"p"},"spec":{"priority":5,"priorityClassName":"system-node-critical"}}"#,
        )
        .unwrap();
        default_pod(&mut p);
        assert_eq!(p.spec.priority, Some(5));
    }
}
