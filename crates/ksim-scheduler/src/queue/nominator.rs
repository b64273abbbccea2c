//! The nominator: pods nominated to nodes by preemption, which filters count as occupying
//! capacity for pods of lower or equal priority (`RunFilterPluginsWithNominatedPods`).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::framework::NominatedPods;
use crate::pod_info::PodInfo;

#[derive(Debug, Clone, Default)]
pub struct Nominator {
    by_node: BTreeMap<String, Vec<Arc<PodInfo>>>,
    /// pod UID → node.
    by_pod: BTreeMap<String, String>,
}

impl Nominator {
    /// Nominates (or re-nominates) a pod to a node.
    pub fn add(&mut self, pod: Arc<PodInfo>, node: &str) {
        self.remove(pod.uid());
        self.by_pod.insert(pod.uid().to_string(), node.to_string());
        self.by_node.entry(node.to_string()).or_default().push(pod);
    }

    /// Clears a pod's nomination; returns the node it was nominated to.
    pub fn remove(&mut self, uid: &str) -> Option<String> {
        let node = self.by_pod.remove(uid)?;
        if let Some(v) = self.by_node.get_mut(&node) {
            v.retain(|p| p.uid() != uid);
            if v.is_empty() {
                self.by_node.remove(&node);
            }
        }
        Some(node)
    }

    pub fn node_of(&self, uid: &str) -> Option<&str> {
        self.by_pod.get(uid).map(String::as_str)
    }

    /// Replaces the nominated pod's object (its priority or spec changed).
    pub fn update(&mut self, pod: Arc<PodInfo>) {
        if let Some(node) = self.by_pod.get(pod.uid()).cloned() {
            if let Some(v) = self.by_node.get_mut(&node) {
                for p in v.iter_mut() {
                    if p.uid() == pod.uid() {
                        *p = pod.clone();
                    }
                }
            }
        }
    }
}

impl NominatedPods for Nominator {
    fn nominated_pods_for_node(&self, node: &str) -> &[Arc<PodInfo>] {
        self.by_node.get(node).map(Vec::as_slice).unwrap_or(&[])
    }
    fn is_empty(&self) -> bool {
        self.by_node.is_empty()
    }
}
