//! NodeResourcesFit's queueing hints (`EventsToRegister`, `isSchedulableAfterPodEvent`,
//! `isSchedulableAfterNodeChange`, and with DRAExtendedResource
//! `isSchedulableAfterDeviceClassEvent`).

use super::*;

impl EnqueueExtensions for Fit {
    fn events(&self) -> &'static [ClusterEventKind] {
        use ksim_api::object::ObjectKind::DeviceClass;
        use ClusterEventKind::{
            AssignedPodDelete, NodeAdd, NodeUpdateAllocatable, Object, UnscheduledPodDelete,
        };
        // With queueing hints on, upstream registers pod deletion (and scale-down) and node
        // add / allocatable change only; with DRAExtendedResource, DeviceClass add / update
        // too (a pod may wait for a class to back its extended resource).
        const ADD: crate::framework::ObjectAction = crate::framework::ObjectAction::Add;
        const UPDATE: crate::framework::ObjectAction = crate::framework::ObjectAction::Update;
        if self.dra_extended {
            return &[
                AssignedPodDelete,
                UnscheduledPodDelete,
                NodeAdd,
                NodeUpdateAllocatable,
                Object(DeviceClass, ADD),
                Object(DeviceClass, UPDATE),
            ];
        }
        &[
            AssignedPodDelete,
            UnscheduledPodDelete,
            NodeAdd,
            NodeUpdateAllocatable,
        ]
    }

    fn hint(
        &self,
        pod: &PodInfo,
        kind: ClusterEventKind,
        objs: &ClusterEventObjects<'_>,
    ) -> QueueingHint {
        match (kind, objs) {
            (
                ClusterEventKind::AssignedPodDelete | ClusterEventKind::UnscheduledPodDelete,
                ClusterEventObjects::Pod { old: Some(old), .. },
            ) => {
                if old.pod.spec.node_name.is_empty()
                    && old.pod.status.nominated_node_name.is_empty()
                {
                    QueueingHint::Skip
                } else {
                    QueueingHint::Queue
                }
            }
            (
                _,
                ClusterEventObjects::Node {
                    old,
                    new: Some(new),
                },
            ) => {
                if !self.fits_empty_node(pod, new) {
                    return QueueingHint::Skip;
                }
                match old {
                    None => QueueingHint::Queue,
                    Some(old) if requested_resources_increased(pod, old, new) => {
                        QueueingHint::Queue
                    }
                    Some(_) => QueueingHint::Skip,
                }
            }
            (
                ClusterEventKind::Object(ksim_api::object::ObjectKind::DeviceClass, _),
                ClusterEventObjects::Object {
                    old,
                    new: Some(ksim_api::object::ApiObject::DeviceClass(new)),
                },
            ) => {
                let old = match old {
                    Some(ksim_api::object::ApiObject::DeviceClass(o)) => Some(o),
                    _ => None,
                };
                device_class_hint(pod, old, new)
            }
            _ => QueueingHint::Queue,
        }
    }
}

/// `isSchedulableAfterDeviceClassEvent`: a class that now backs one of the pod's requests
/// (its `extendedResourceName`, or for a new class its implicit name) may make it fit.
fn device_class_hint(
    pod: &PodInfo,
    old: Option<&ksim_api::resource::DeviceClass>,
    new: &ksim_api::resource::DeviceClass,
) -> QueueingHint {
    let requests = |name: &str| pod.requests.scalar.iter().any(|(n, _)| n == name);
    match old {
        Some(o) if o.spec.extended_resource_name == new.spec.extended_resource_name => {
            return QueueingHint::Skip
        }
        Some(_) => {}
        None => {
            let implicit = format!(
                "{}{}",
                ksim_api::resource::extended::RESOURCE_DEVICE_CLASS_PREFIX,
                new.metadata.name
            );
            if requests(&implicit) {
                return QueueingHint::Queue;
            }
        }
    }
    match &new.spec.extended_resource_name {
        Some(r) if requests(r) => QueueingHint::Queue,
        _ => QueueingHint::Skip,
    }
}

impl Fit {
    /// upstream `isFit`: the pod fits the node's allocatable with no other pod on it.
    fn fits_empty_node(&self, pod: &PodInfo, node: &ksim_api::Node) -> bool {
        let info = NodeInfo::new(std::sync::Arc::new(node.clone()));
        self.filter(&CycleState::new(), pod, &info).is_success()
    }
}

/// upstream `haveAnyRequestedResourcesIncreased`.
fn requested_resources_increased(
    pod: &PodInfo,
    old: &ksim_api::Node,
    new: &ksim_api::Node,
) -> bool {
    let o = crate::resource::Resource::from_list(&old.status.allocatable);
    let n = crate::resource::Resource::from_list(&new.status.allocatable);
    if n.allowed_pod_number > o.allowed_pod_number {
        return true;
    }
    let r = &pod.requests;
    if r.milli_cpu == 0 && r.memory == 0 && r.ephemeral_storage == 0 && r.scalar.is_empty() {
        return false;
    }
    if (r.milli_cpu > 0 && n.milli_cpu > o.milli_cpu)
        || (r.memory > 0 && n.memory > o.memory)
        || (r.ephemeral_storage > 0 && n.ephemeral_storage > o.ephemeral_storage)
    {
        return true;
    }
    r.scalar
        .iter()
        .any(|(name, q)| *q != 0 && n.scalar(name) > o.scalar(name))
}

/// Upstream `fit_test.go` `Test_isSchedulableAfterDeviceClassChange`, as facts (the two rows
/// that pass objects of the wrong Go type have no counterpart).
#[cfg(test)]
mod device_class_hint_tests {
    use super::{device_class_hint, QueueingHint};
    use crate::pod_info::PodInfo;
    use serde_json::json;

    /// `newResourcePod(framework.Resource{...})`: one container with these requests.
    fn pod(requests: serde_json::Value) -> PodInfo {
        PodInfo::new(
            serde_json::from_value(json!({"metadata": {"name": "p"},
                "spec": {"containers": [{"name": "c", "resources": {"requests": requests}}]}}))
            .expect("pod"),
        )
    }

    fn class(name: &str, resource: Option<&str>) -> ksim_api::resource::DeviceClass {
        let mut v = json!({"metadata": {"name": name}});
        if let Some(r) = resource {
            v["spec"] = json!({"extendedResourceName": r});
        }
        serde_json::from_value(v).expect("class")
    }

    #[test]
    fn is_schedulable_after_device_class_change() {
        use QueueingHint::{Queue, Skip};
        let memory = pod(json!({"memory": "2"}));
        let implicit = pod(json!({"deviceclass.resource.kubernetes.io/gpuclass": "1"}));
        let gpu = pod(json!({"example.com/gpu": "1"}));
        let other = pod(json!({"example.com/othergpu": "1"}));
        let g = Some("example.com/gpu");
        let rows: Vec<(&str, &PodInfo, Option<_>, _, QueueingHint)> = vec![
            (
                "skip-queue-on-class-nil-extended-resource-name-pointer",
                &memory,
                Some(class("", None)),
                class("", None),
                Skip,
            ),
            (
                "skip-queue-on-class-same-extended-resource-name-pointer",
                &memory,
                Some(class("", g)),
                class("", g),
                Skip,
            ),
            (
                "skip-queue-on-class-same-extended-resource-name",
                &memory,
                Some(class("", g)),
                class("", g),
                Skip,
            ),
            (
                "queue-on-class-add-with-implicit-extended-resource-name",
                &implicit,
                None,
                class("gpuclass", g),
                Queue,
            ),
            (
                "skip-on-class-add-with-implicit-extended-resource-name-not-matching",
                &implicit,
                None,
                class("myclass", g),
                Skip,
            ),
            (
                "skip-on-class-add-with-explicit-extended-resource-name-not-matching",
                &other,
                None,
                class("myclass", g),
                Skip,
            ),
            (
                "skip-on-class-update-with-implicit-extended-resource-name",
                &implicit,
                Some(class("gpuclass", None)),
                class("gpuclass", g),
                Skip,
            ),
            (
                "queue-on-class-add-with-extended-resource-name",
                &gpu,
                None,
                class("", g),
                Queue,
            ),
            (
                "queue-on-class-update-with-extended-resource-name",
                &gpu,
                Some(class("", Some("example.com/gpu1"))),
                class("", g),
                Queue,
            ),
        ];
        for (name, pod, old, new, want) in rows {
            assert_eq!(device_class_hint(pod, old.as_ref(), &new), want, "{name}");
        }
    }
}
