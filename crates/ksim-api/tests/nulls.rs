//! Explicit `null` in Kubernetes objects means empty, as in Kubernetes (Go's decoding leaves
//! the zero value): `labels: null`, `tolerations: null`, a `spec:` with only a comment under
//! it, `affinity: null`, `nodeSelector: null`, a container's `resources: null`, ...

use ksim_api::object::ApiObject;
use ksim_api::{Node, Pod};
use serde_json::Value;

fn yaml(text: &str) -> Value {
    serde_saphyr::from_str(text).expect("test YAML")
}

#[test]
fn null_fields_of_a_pod_are_empty() {
    let v = yaml(
        "apiVersion: v1
kind: Pod
metadata:
  name: web
  namespace: null
  labels: null
  annotations: null
  ownerReferences: null
spec:
  nodeSelector: null
  affinity: null
  tolerations: null
  topologySpreadConstraints: null
  schedulingGates: null
  volumes: null
  initContainers: null
  overhead: null
  priorityClassName: null
  containers:
  - name: c
    image: null
    ports: null
    resources: null
  - name: d
    resources:
      requests: null
      limits: {cpu: 500m}
status: null
",
    );
    let pod: Pod = ksim_api::load::decode("pod.yaml", &v).expect("nulls accepted");
    assert!(pod.metadata.labels.is_empty());
    assert!(pod.spec.tolerations.is_empty());
    assert!(pod.spec.affinity.is_none());
    assert!(pod.spec.node_selector.is_empty());
    assert_eq!(pod.spec.containers.len(), 2);
    assert!(pod.spec.containers[0].resources.requests.is_empty());
    assert!(pod.spec.containers[1].resources.requests.is_empty());
    assert_eq!(pod.spec.containers[1].resources.limits.len(), 1);
}

#[test]
fn a_spec_with_only_a_comment_is_empty() {
    let v = yaml("kind: Node\nmetadata:\n  name: n1\nspec:\n  # nothing yet\nstatus:\n  capacity: {cpu: \"4\"}\n");
    assert!(v["spec"].is_null());
    let node: Node = ksim_api::load::decode("nodes.yaml", &v).expect("null spec accepted");
    assert!(node.spec.taints.is_empty());
    assert!(!node.spec.unschedulable);
    let v = yaml("kind: Node\nmetadata:\n  name: n2\n  labels: null\nspec:\n  taints: null\n  unschedulable: null\nstatus:\n  allocatable: null\n  capacity: {cpu: \"4\"}\n");
    let node: Node = ksim_api::load::decode("nodes.yaml", &v).expect("nulls accepted");
    assert!(node.status.allocatable.is_empty());
}

#[test]
fn null_fields_of_storage_objects_and_pdbs_are_empty() {
    for text in [
        "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv, labels: null}\nspec:\n  capacity: {storage: 1Gi}\n  accessModes: null\n  nodeAffinity: null\n  mountOptions: null\n",
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: c}\nspec:\n  accessModes: null\n  selector: null\n  resources: null\n",
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: sc}\nprovisioner: x\nallowedTopologies: null\nparameters: null\n",
        "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: p}\nspec:\n  selector: null\nstatus: null\n",
        "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec:\n  selector: null\n",
    ] {
        if let Err(e) = ApiObject::from_value("objects.yaml", &yaml(text)) {
            panic!("{e}\n{text}");
        }
    }
}
