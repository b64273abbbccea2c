//! The DaemonSet controller (`pkg/controller/daemon/`): one pod `<ds>-<5 chars>` per node that
//! should run one, pinned as upstream pins it (`ReplaceDaemonSetPodNodeNameNodeAffinity`: a
//! required node affinity on `metadata.name`, scheduled by the scheduler) and given the
//! tolerations the controller adds (`AddOrUpdateDaemonPodTolerations`).
//!
//! Eligibility is upstream's `NodeShouldRunDaemonPod`, evaluated on the template *with the
//! added tolerations*: the template's `nodeName` (if any) and its required node affinity
//! (`nodeSelector` and `requiredDuringSchedulingIgnoredDuringExecution`) must match the node,
//! and every NoSchedule/NoExecute taint must be tolerated (`shouldRun`); a pod already there
//! stays unless a NoExecute taint is untolerated or the affinity no longer matches
//! (`shouldContinueRunning`). The added tolerations are not-ready and unreachable (NoExecute),
//! disk, memory and pid pressure and unschedulable (NoSchedule), and network-unavailable
//! (NoSchedule) for `hostNetwork` pods. So a cordoned or pressure-tainted node gets its pod, a
//! node the affinity excludes gets none, and a node too small for the pod gets one that stays
//! pending (no resource check since upstream moved scheduling to the scheduler).
//!
//! `manage` (upstream `podsShouldBeOnNode`): a node that should run a pod and has none gets
//! one; surplus pods on a node are deleted (the oldest kept, one per template with surge); a
//! node that should not keep its pods loses them; an unscheduled pod pinned to a node that no
//! longer exists is deleted (`getUnscheduledPodsWithoutNode`). Node added, updated or removed
//! wake every DaemonSet.
//!
//! Template changes (`update.go` `rollingUpdate`), `updateStrategy`:
//! - `RollingUpdate` (default), `maxSurge` 0: old pods are deleted, at most `maxUnavailable`
//!   (default 1, percentages of the nodes that should run a pod, rounded up) unavailable at
//!   once (unavailable old pods are replaced at once); `manage` then creates the new pod.
//! - `RollingUpdate` with `maxSurge` > 0: a new pod is created next to the old one on up to
//!   `maxSurge` nodes at once (at once where the old pod is unavailable); the old pod is
//!   deleted when the new one is available (`minReadySeconds`).
//! - `OnDelete`: nothing is replaced until a pod is deleted; its replacement has the new
//!   template.
//!
//! Simplified: the pods carry no `controller-revision-hash` label (the template's hash is kept
//! by the controller); upstream visits nodes in a Go map's order, ksim in the snapshot's node order; the
//! surge path does not move pods off nodes that no longer match before new ones are available
//! elsewhere (they are deleted by `manage`).

use std::collections::{BTreeMap, BTreeSet};

use ksim_api::object::ObjectKind;
use ksim_api::{Pod, Toleration};
use ksim_scheduler::plugins::helper::{find_untolerated_taint, RequiredNodeAffinity};

use super::{NewPod, Simulation};
use crate::record::Observer;
use crate::sim::PodPhase;
use crate::time::SimDuration;

/// One DaemonSet pod as the reconcile sees it.
#[derive(Debug, Clone)]
struct DsPod {
    key: String,
    current: bool,
    available: bool,
    scheduled: bool,
    seq: u64,
}

impl Simulation {
    pub(super) fn reconcile_daemonset(&mut self, key: &str, obs: &mut dyn Observer) {
        let now = self.now;
        let Some(c) = self.controllers.ctls.get(key) else {
            return;
        };
        let min_ready =
            SimDuration::from_secs(i64::from(c.obj.spec.min_ready_seconds.unwrap_or(0)));
        // Pods by the node they are pinned to (or bound to, for an adopted pod).
        let mut by_node: BTreeMap<String, Vec<DsPod>> = BTreeMap::new();
        for (p, o) in &c.pods {
            if let Some(&id) = self.live_get(p) {
                let slot = &self.pods[id as usize];
                let node = pinned_node(&slot.info.pod).unwrap_or_else(|| slot.node.clone());
                by_node.entry(node).or_default().push(DsPod {
                    key: p.clone(),
                    current: o.hash == c.hash,
                    available: o.available(now, min_ready),
                    scheduled: matches!(slot.phase, PodPhase::Binding | PodPhase::Bound),
                    seq: o.seq,
                });
            }
        }
        for pods in by_node.values_mut() {
            pods.sort_by_key(|p| p.seq);
        }
        let template = daemon_pod(&c.obj.spec.template);
        // (node, shouldRun, shouldContinueRunning) in the snapshot's node order.
        let verdicts: Vec<(String, bool, bool)> = self
            .snapshot
            .nodes
            .iter()
            .map(|n| {
                let (run, keep) = node_should_run_daemon_pod(&template, &n.node);
                (n.name().to_string(), run, keep)
            })
            .collect();
        let desired = verdicts.iter().filter(|v| v.1).count();
        let rolling = !c.obj.on_delete();
        let (max_surge, max_unavailable) = c
            .obj
            .daemon_surge_and_unavailable(i32::try_from(desired).unwrap_or(i32::MAX));
        let surge = rolling && max_surge > 0;
        let tpl = c.obj.spec.template.clone();
        let name = c.obj.metadata.name.clone();
        let hash = c.hash.clone();
        if let Some(c) = self.controllers.ctls.get_mut(key) {
            c.desired = desired as i64;
        }

        // manage: podsShouldBeOnNode.
        let mut create: Vec<String> = Vec::new();
        let mut delete: Vec<String> = Vec::new();
        let exists: BTreeSet<&str> = verdicts.iter().map(|v| v.0.as_str()).collect();
        for (node, run, keep) in &verdicts {
            let pods = by_node.get(node).cloned().unwrap_or_default();
            if *run && pods.is_empty() {
                create.push(node.clone());
            } else if *keep && pods.len() > 1 {
                if surge {
                    // Keep the oldest pod of each template (old and new side by side).
                    let mut seen = (false, false);
                    for p in &pods {
                        let slot = if p.current { &mut seen.1 } else { &mut seen.0 };
                        if *slot {
                            delete.push(p.key.clone());
                        }
                        *slot = true;
                    }
                } else {
                    delete.extend(pods.iter().skip(1).map(|p| p.key.clone()));
                }
            } else if !*keep && !pods.is_empty() {
                delete.extend(pods.iter().map(|p| p.key.clone()));
            }
        }
        // Unscheduled pods pinned to a node that no longer exists.
        for (node, pods) in &by_node {
            if !exists.contains(node.as_str()) {
                delete.extend(pods.iter().filter(|p| !p.scheduled).map(|p| p.key.clone()));
            }
        }
        // A sync resumed after the rate limiter paused it in its deletions makes no more
        // creations (`syncNodes` creates first, then deletes).
        if self.sync_deleted(key) {
            create.clear();
        }
        // rollingUpdate, once manage has nothing left to do (upstream: its expectations are
        // satisfied). A pod becoming available wakes the controller (`controller_pod_running`).
        if rolling && delete.is_empty() && create.is_empty() {
            let nodes: Vec<(String, Vec<DsPod>)> = verdicts
                .iter()
                .filter(|v| v.2)
                .filter_map(|v| by_node.get(&v.0).map(|p| (v.0.clone(), p.clone())))
                .collect();
            if surge {
                let (del, new) = surge_update(&nodes, &verdicts, max_surge);
                delete.extend(del);
                create.extend(new);
            } else {
                delete.extend(unavailable_update(&nodes, max_unavailable));
            }
        }
        // syncNodes: the creations (slow start), then the deletions, every call through the
        // controller's rate-limited client; a call that must wait pauses the sync.
        for n in create {
            let edit = |p: &mut Pod| pin_to_node(p, &n);
            let new = NewPod {
                template: &tpl,
                owner_kind: ObjectKind::DaemonSet,
                owner_name: name.clone(),
                name: None,
                prefix: name.clone(),
                hash: hash.clone(),
                ordinal: None,
                edit: &edit,
            };
            self.create_owned_pod(key, new, obs);
        }
        for p in &delete {
            if !self.client_call(key, ObjectKind::DaemonSet, false) {
                return;
            }
            self.delete_owned_pod(p, obs);
        }
        if !delete.is_empty() {
            // The deletions' events wake the controller again.
            self.queue_reconcile(key);
        }
    }
}

/// `rollingUpdate` without surge: the old pods to delete now.
fn unavailable_update(nodes: &[(String, Vec<DsPod>)], max_unavailable: i32) -> Vec<String> {
    let mut unavailable = 0;
    let mut replace = Vec::new();
    let mut candidates = Vec::new();
    for (_, pods) in nodes {
        let old: Vec<&DsPod> = pods.iter().filter(|p| !p.current).collect();
        let new: Vec<&DsPod> = pods.iter().filter(|p| p.current).collect();
        if old.len() > 1 || new.len() > 1 {
            unavailable += 1;
            continue;
        }
        match (old.first(), new.first()) {
            (None, None) | (Some(_), Some(_)) => unavailable += 1,
            (None, Some(n)) => {
                if !n.available {
                    unavailable += 1;
                }
            }
            (Some(o), None) => {
                if !o.available {
                    replace.push(o.key.clone());
                    unavailable += 1;
                } else if unavailable < max_unavailable {
                    candidates.push(o.key.clone());
                }
            }
        }
    }
    let room = (max_unavailable - unavailable).max(0) as usize;
    replace.extend(candidates.into_iter().take(room));
    replace
}

/// `rollingUpdate` with surge: the old pods to delete and the nodes to create a new pod on.
fn surge_update(
    nodes: &[(String, Vec<DsPod>)],
    verdicts: &[(String, bool, bool)],
    max_surge: i32,
) -> (Vec<String>, Vec<String>) {
    let should_run = |n: &str| verdicts.iter().any(|v| v.0 == n && v.1);
    let mut delete = Vec::new();
    let mut allowed = Vec::new();
    let mut candidates = Vec::new();
    let mut surged = 0;
    for (node, pods) in nodes {
        let old: Vec<&DsPod> = pods.iter().filter(|p| !p.current).collect();
        let new: Vec<&DsPod> = pods.iter().filter(|p| p.current).collect();
        if old.len() > 1 || new.len() > 1 {
            surged += 1;
            continue;
        }
        match (old.first(), new.first()) {
            (None, _) => {}
            (Some(o), None) => {
                if !should_run(node) {
                    if !o.available {
                        delete.push(o.key.clone());
                    }
                } else if !o.available {
                    allowed.push(node.clone());
                } else if surged < max_surge {
                    candidates.push(node.clone());
                }
            }
            (Some(o), Some(n)) => {
                if n.available {
                    delete.push(o.key.clone());
                } else {
                    surged += 1;
                }
            }
        }
    }
    let room = (max_surge - surged).max(0) as usize;
    allowed.extend(candidates.into_iter().take(room));
    (delete, allowed)
}

/// The pod the controller would create from a template: the template with the tolerations the
/// controller adds (upstream's `NewPod` + `AddOrUpdateDaemonPodTolerations`).
fn daemon_pod(template: &ksim_api::workloads::PodTemplateSpec) -> Pod {
    let mut pod = Pod {
        metadata: template.metadata.clone(),
        spec: template.spec.clone(),
        ..Default::default()
    };
    add_daemon_tolerations(&mut pod);
    pod
}

/// Upstream's `NodeShouldRunDaemonPod` for the controller's pod `pod` (tolerations added):
/// (shouldRun, shouldContinueRunning).
fn node_should_run_daemon_pod(pod: &Pod, node: &ksim_api::Node) -> (bool, bool) {
    if !pod.spec.node_name.is_empty() && pod.spec.node_name != node.metadata.name {
        return (false, false);
    }
    if !RequiredNodeAffinity::of_pod(pod).matches(node) {
        return (false, false);
    }
    let taints = &node.spec.taints;
    let untolerated = find_untolerated_taint(taints, &pod.spec.tolerations, |t| {
        t.effect == "NoSchedule" || t.effect == "NoExecute"
    });
    if untolerated.is_some() {
        let no_execute =
            find_untolerated_taint(taints, &pod.spec.tolerations, |t| t.effect == "NoExecute");
        return (false, no_execute.is_none());
    }
    (true, true)
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
    add_daemon_tolerations(pod);
}

/// Upstream's `AddOrUpdateDaemonPodTolerations`: a toleration (operator Exists) for each of the
/// node-problem taints, unless the pod already has one for that key and effect.
fn add_daemon_tolerations(pod: &mut Pod) {
    let mut wanted = vec![
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ];
    if pod.spec.host_network {
        wanted.push(("node.kubernetes.io/network-unavailable", "NoSchedule"));
    }
    for (key, effect) in wanted {
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

#[cfg(test)]
mod tests {
    //! Upstream's `NodeShouldRunDaemonPod` cases (`daemon_controller_test.go`
    //! `TestNodeShouldRunDaemonPod` and the taint/affinity tests), ported as facts.
    use super::*;
    use serde_json::json;

    fn node(spec: serde_json::Value, labels: serde_json::Value) -> ksim_api::Node {
        serde_json::from_value(json!({
            "metadata": {"name": "n", "labels": labels},
            "spec": spec,
            "status": {"capacity": {"cpu": "1", "memory": "1Gi", "pods": "110"}}
        }))
        .expect("node")
    }

    fn pod(spec: serde_json::Value) -> Pod {
        let t: ksim_api::workloads::PodTemplateSpec =
            serde_json::from_value(json!({"spec": spec})).expect("template");
        daemon_pod(&t)
    }

    fn taint(key: &str, effect: &str) -> serde_json::Value {
        json!({"taints": [{"key": key, "effect": effect}]})
    }

    #[test]
    fn node_should_run_daemon_pod_as_upstream() {
        let plain = pod(json!({"containers": [{"name": "c"}]}));
        let host = pod(json!({"hostNetwork": true, "containers": [{"name": "c"}]}));
        let cases: Vec<(&str, &Pod, ksim_api::Node, (bool, bool))> = vec![
            (
                "plain node",
                &plain,
                node(json!({}), json!({})),
                (true, true),
            ),
            (
                "memory pressure (tolerated by the controller)",
                &plain,
                node(
                    taint("node.kubernetes.io/memory-pressure", "NoSchedule"),
                    json!({}),
                ),
                (true, true),
            ),
            (
                "cordoned, tainted unschedulable",
                &plain,
                node(
                    json!({"unschedulable": true, "taints": [{"key":
                        "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]}),
                    json!({}),
                ),
                (true, true),
            ),
            (
                "not ready NoExecute (tolerated)",
                &plain,
                node(
                    taint("node.kubernetes.io/not-ready", "NoExecute"),
                    json!({}),
                ),
                (true, true),
            ),
            (
                "network unavailable, not hostNetwork",
                &plain,
                node(
                    taint("node.kubernetes.io/network-unavailable", "NoSchedule"),
                    json!({}),
                ),
                (false, true),
            ),
            (
                "network unavailable, hostNetwork",
                &host,
                node(
                    taint("node.kubernetes.io/network-unavailable", "NoSchedule"),
                    json!({}),
                ),
                (true, true),
            ),
            (
                "untolerated NoSchedule: no new pod, an existing one stays",
                &plain,
                node(taint("dedicated", "NoSchedule"), json!({})),
                (false, true),
            ),
            (
                "untolerated NoExecute: no pod at all",
                &plain,
                node(taint("dedicated", "NoExecute"), json!({})),
                (false, false),
            ),
            (
                "PreferNoSchedule is ignored",
                &plain,
                node(taint("dedicated", "PreferNoSchedule"), json!({})),
                (true, true),
            ),
        ];
        for (what, p, n, want) in cases {
            assert_eq!(node_should_run_daemon_pod(p, &n), want, "{what}");
        }
        // Node selector and required node affinity: both must match.
        let selected = pod(json!({"nodeSelector": {"disk": "ssd"}, "containers": [{"name": "c"}]}));
        assert_eq!(
            node_should_run_daemon_pod(&selected, &node(json!({}), json!({}))),
            (false, false)
        );
        assert_eq!(
            node_should_run_daemon_pod(&selected, &node(json!({}), json!({"disk": "ssd"}))),
            (true, true)
        );
        let affine = pod(json!({"affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "type", "operator": "In", "values": ["gpu"]}]}]}}},
            "containers": [{"name": "c"}]}));
        assert_eq!(
            node_should_run_daemon_pod(&affine, &node(json!({}), json!({"type": "cpu"}))),
            (false, false)
        );
        assert_eq!(
            node_should_run_daemon_pod(&affine, &node(json!({}), json!({"type": "gpu"}))),
            (true, true)
        );
        // The template's nodeName: only that node.
        let named = pod(json!({"nodeName": "other", "containers": [{"name": "c"}]}));
        assert_eq!(
            node_should_run_daemon_pod(&named, &node(json!({}), json!({}))),
            (false, false)
        );
    }

    fn ds(key: &str, current: bool, available: bool, seq: u64) -> DsPod {
        DsPod {
            key: key.into(),
            current,
            available,
            scheduled: true,
            seq,
        }
    }

    #[test]
    fn rolling_update_deletes_at_most_max_unavailable_available_old_pods() {
        let nodes: Vec<(String, Vec<DsPod>)> = (0..5)
            .map(|i| {
                (
                    format!("n{i}"),
                    vec![ds(&format!("p{i}"), false, i != 3, i)],
                )
            })
            .collect();
        // maxUnavailable 2: the unavailable old pod p3 goes at once, plus one more.
        let del = unavailable_update(&nodes, 2);
        assert_eq!(del, vec!["p3".to_string(), "p0".to_string()]);
        // A new pod not yet available counts against maxUnavailable.
        let mut nodes = nodes;
        nodes[0].1 = vec![ds("new0", true, false, 9)];
        nodes[3].1[0].available = true;
        let del = unavailable_update(&nodes, 1);
        assert!(del.is_empty(), "{del:?}");
    }

    #[test]
    fn surge_update_creates_next_to_old_pods_and_deletes_them_once_new_ones_are_available() {
        let verdicts: Vec<(String, bool, bool)> =
            (0..3).map(|i| (format!("n{i}"), true, true)).collect();
        let nodes: Vec<(String, Vec<DsPod>)> = vec![
            (
                "n0".into(),
                vec![ds("old0", false, true, 0), ds("new0", true, true, 5)],
            ),
            ("n1".into(), vec![ds("old1", false, true, 1)]),
            ("n2".into(), vec![ds("old2", false, true, 2)]),
        ];
        let (del, new) = surge_update(&nodes, &verdicts, 1);
        assert_eq!(del, vec!["old0".to_string()]);
        assert_eq!(new, vec!["n1".to_string()]);
    }
}
