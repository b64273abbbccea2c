//! DRAExtendedResource in NodeResourcesFit (upstream `fit.go` `shouldDelegateResourceToDRA`,
//! v1.36): a request of an extended resource that a DeviceClass backs (its
//! `spec.extendedResourceName`, or the implicit `deviceclass.resource.kubernetes.io/<class>`)
//! is not checked on a node whose allocatable has none of it; DynamicResources allocates it
//! from the class's devices there. A node that advertises the resource keeps the device
//! plugin's check.

use crate::node_info::Snapshot;
use crate::plugins::dynamic_resources::extended_resources::device_class_for;
use crate::pod_info::PodInfo;

/// The pod's non-zero scalar requests that a DeviceClass backs (upstream asks the
/// `DeviceClassResolver` per request and node; the classes do not change within a cycle).
pub(super) fn backed(pod: &PodInfo, snapshot: &Snapshot) -> Vec<String> {
    let classes = &snapshot.objects.dra.device_classes;
    if classes.is_empty() {
        return Vec::new();
    }
    pod.requests
        .scalar
        .iter()
        .filter(|(name, q)| *q != 0 && device_class_for(classes, name).is_some())
        .map(|(name, _)| name.clone())
        .collect()
}

/// Upstream `fit_test.go` `TestEnoughRequests` rows for DRAExtendedResource, as facts: the
/// node's allocatable is `makeAllocatableResources(10, 20, 32, 5, 20, 5)` (cpu 10m, memory 20,
/// 32 pods, `example.com/aaa` 5, ephemeral storage 20, `hugepages-2Mi` 5), the class
/// `device-class-name` backs `extended.resource.dra.io/something`. Not ported: `extended
/// resource backed by DRA, nil draManager` (the kubelet's path; the scheduler always has
/// its classes).
#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use crate::framework::{Code, CycleState, FactoryArgs, Features};
    use crate::node_info::{ClusterObjects, Snapshot};
    use crate::pod_info::PodInfo;

    const DRA: &str = "extended.resource.dra.io/something";

    fn pod(name: &str, node: &str, requests: serde_json::Value) -> PodInfo {
        PodInfo::new(
            serde_json::from_value(json!({
                "metadata": {"name": name, "namespace": "default", "uid": name},
                "spec": {"nodeName": node, "containers": [{"name": "c", "resources": {"requests": requests}}]}
            }))
            .expect("pod"),
        )
    }

    /// Filter's status for `requests` on the node (which runs a pod requesting `existing`).
    fn filter(
        gate: bool,
        requests: serde_json::Value,
        existing: serde_json::Value,
    ) -> (Code, String) {
        let node: ksim_api::Node = serde_json::from_value(json!({
            "metadata": {"name": "n"},
            "status": {"allocatable": {"cpu": "10m", "memory": "20", "pods": "32",
                "example.com/aaa": "5", "ephemeral-storage": "20", "hugepages-2Mi": "5"}}
        }))
        .expect("node");
        let mut objects = ClusterObjects::default();
        let class: ksim_api::resource::DeviceClass = serde_json::from_value(json!({
            "metadata": {"name": "device-class-name"},
            "spec": {"extendedResourceName": DRA}
        }))
        .expect("class");
        objects
            .dra
            .device_classes
            .insert("device-class-name".into(), Arc::new(class));
        let snapshot = Snapshot::build(
            [Arc::new(node)],
            [Arc::new(pod("existing", "n", existing))],
            Arc::new(objects),
        );
        let features = Features {
            enable_dra_extended_resource: gate,
            ..Features::default()
        };
        let profile = ksim_api::config::Profile::default();
        let p = super::super::new(&FactoryArgs {
            args: None,
            profile: &profile,
            features: &features,
        })
        .expect("plugin");
        let pod = pod("p", "", requests);
        let mut state = CycleState::new();
        let (_, st) = p
            .as_pre_filter()
            .expect("prefilter")
            .pre_filter(&mut state, &pod, &snapshot);
        assert!(st.is_success(), "{st}");
        let st = p
            .as_filter()
            .expect("filter")
            .filter(&state, &pod, &snapshot.nodes[0])
            .into_status();
        (st.code, st.message())
    }

    #[test]
    fn extended_resource_backed_by_device_plugin() {
        let (code, _) = filter(true, json!({"example.com/aaa": "1"}), json!({}));
        assert_eq!(code, Code::Success);
    }

    #[test]
    fn extended_resource_backed_by_dra() {
        let (code, m) = filter(
            true,
            json!({"cpu": "1m", "memory": "1", DRA: "1"}),
            json!({}),
        );
        assert_eq!(code, Code::Success, "{m}");
    }

    #[test]
    fn extended_resource_backed_by_dra_not_enabled() {
        let (code, m) = filter(
            false,
            json!({"cpu": "1m", "memory": "1", DRA: "1"}),
            json!({}),
        );
        assert_eq!(code, Code::UnschedulableAndUnresolvable);
        assert_eq!(m, format!("Insufficient {DRA}"));
    }

    #[test]
    fn extended_resource_not_backed_by_dra() {
        let (code, m) = filter(
            true,
            json!({"cpu": "1m", "memory": "1", "example.com/bbb": "1"}),
            json!({}),
        );
        assert_eq!(code, Code::UnschedulableAndUnresolvable);
        assert_eq!(m, "Insufficient example.com/bbb");
    }

    #[test]
    fn extended_resource_was_backed_by_device_plugin_allocatable_0() {
        let (code, m) = filter(true, json!({DRA: "1"}), json!({DRA: "0"}));
        assert_eq!(code, Code::Success, "{m}");
    }

    #[test]
    fn extended_resource_was_backed_by_device_plugin_allocatable_0_global_cache() {
        let (code, m) = filter(
            true,
            json!({"example.com/aaa": "1"}),
            json!({"example.com/aaa": "0"}),
        );
        assert_eq!(code, Code::Success, "{m}");
    }

    /// A node that advertises the resource keeps the device plugin's check (ksim's own row:
    /// `shouldDelegateResourceToDRA` answers false when allocatable is above zero).
    #[test]
    fn a_node_advertising_the_resource_keeps_the_device_plugin_check() {
        let (code, m) = filter(true, json!({"example.com/aaa": "6"}), json!({}));
        assert_eq!(code, Code::UnschedulableAndUnresolvable);
        assert_eq!(m, "Insufficient example.com/aaa");
    }
}
