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
