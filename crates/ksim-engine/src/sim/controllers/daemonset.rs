//! The DaemonSet controller: one pod `<ds>-<5 chars>` per eligible node, pinned as upstream's
//! controller pins it (a required node affinity on `metadata.name`, scheduled by the scheduler,
//! with the tolerations the controller adds), created when a node is added. A removed node's
//! pod is not replaced.
//!
//! Simplified: eligibility is the template's node selector and NoSchedule/NoExecute taints
//! (upstream's `NodeShouldRunDaemonPod` without the resource check, so an over-full node gets
//! its pod, which stays pending); template node affinity other than the pin is left to the
//! scheduler; updates of the template do not roll the existing pods.

use std::collections::BTreeSet;

use ksim_api::object::ObjectKind;
use ksim_api::{Pod, Toleration};

use super::{NewPod, Simulation};
use crate::record::Observer;

impl Simulation {
    pub(super) fn reconcile_daemonset(&mut self, key: &str, obs: &mut dyn Observer) {
        let Some(c) = self.controllers.ctls.get(key) else {
            return;
        };
        // Nodes that already have a pod of this DaemonSet (by the pinned node name, or the
        // node an adopted pod is bound to).
        let mut covered = BTreeSet::new();
        for p in c.pods.keys() {
            if let Some(&id) = self.live_get(p) {
                let slot = &self.pods[id as usize];
                match pinned_node(&slot.info.pod) {
                    Some(n) => covered.insert(n),
                    None => covered.insert(slot.node.clone()),
                };
            }
        }
        let template = Pod {
            metadata: c.obj.spec.template.metadata.clone(),
            spec: c.obj.spec.template.spec.clone(),
            ..Default::default()
        };
        let fits: Vec<String> = self
            .snapshot
            .nodes
            .iter()
            .filter(|n| daemon_fits(&template, &n.node))
            .map(|n| n.name().to_string())
            .collect();
        let tpl = c.obj.spec.template.clone();
        let name = c.obj.metadata.name.clone();
        if let Some(c) = self.controllers.ctls.get_mut(key) {
            c.desired = fits.len() as i64;
        }
        for n in fits.into_iter().filter(|n| !covered.contains(n)) {
            let edit = |p: &mut Pod| pin_to_node(p, &n);
            let new = NewPod {
                template: &tpl,
                owner_kind: ObjectKind::DaemonSet,
                owner_name: name.clone(),
                name: None,
                prefix: name.clone(),
                hash: String::new(),
                ordinal: None,
                edit: &edit,
            };
            self.create_owned_pod(key, new, obs);
        }
    }
}

/// The node a DaemonSet pod is pinned to by its required node affinity on `metadata.name`.
fn pinned_node(pod: &Pod) -> Option<String> {
    let aff = pod.spec.affinity.as_ref()?.node_affinity.as_ref()?;
    let req = aff.required.as_ref()?;
    req.node_selector_terms
        .iter()
        .flat_map(|t| t.match_fields.iter())
        .find(|f| f.key == "metadata.name" && f.operator == "In")
        .and_then(|f| f.values.first().cloned())
}

/// Pins a pod to a node as upstream's DaemonSet controller does: a required node affinity term
/// matching the field `metadata.name` (replacing any `matchFields` of the template's terms),
/// and the tolerations the controller adds.
fn pin_to_node(pod: &mut Pod, node: &str) {
    use ksim_api::{NodeAffinity, NodeSelector, NodeSelectorRequirement};
    let field = NodeSelectorRequirement {
        key: "metadata.name".into(),
        operator: "In".into(),
        values: vec![node.to_string()],
    };
    let aff = pod.spec.affinity.get_or_insert_with(Default::default);
    let na = aff.node_affinity.get_or_insert_with(NodeAffinity::default);
    let req = na.required.get_or_insert_with(NodeSelector::default);
    if req.node_selector_terms.is_empty() {
        req.node_selector_terms.push(Default::default());
    }
    for t in &mut req.node_selector_terms {
        t.match_fields = vec![field.clone()];
    }
    for (key, effect) in [
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ] {
        if !pod
            .spec
            .tolerations
            .iter()
            .any(|t| t.key == key && t.effect == effect)
        {
            pod.spec.tolerations.push(Toleration {
                key: key.into(),
                operator: "Exists".into(),
                effect: effect.into(),
                ..Default::default()
            });
        }
    }
}

/// Whether a DaemonSet pod belongs on a node: the template's node selector matches and the
/// node's NoSchedule/NoExecute taints are tolerated (upstream's `NodeShouldRunDaemonPod`,
/// without the resource check: an over-full node gets its pod, which stays pending).
fn daemon_fits(pod: &Pod, node: &ksim_api::Node) -> bool {
    let labels = &node.metadata.labels;
    if !pod
        .spec
        .node_selector
        .iter()
        .all(|(k, v)| labels.get(k) == Some(v))
    {
        return false;
    }
    node.spec.taints.iter().all(|t| {
        t.effect == "PreferNoSchedule" || pod.spec.tolerations.iter().any(|tol| tol.tolerates(t))
    })
}
