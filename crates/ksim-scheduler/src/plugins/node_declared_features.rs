//! `NodeDeclaredFeatures` (upstream `pkg/scheduler/framework/plugins/nodedeclaredfeatures`,
//! feature gate NodeDeclaredFeatures: alpha and off in v1.35, beta and on in v1.36, KEP-5328):
//! a pod that needs a node feature runs only on nodes whose `status.declaredFeatures` lists it.
//!
//! - PreFilter infers the pod's requirements (upstream `ndf.Framework.InferForPodScheduling`
//!   over `features.AllFeatures`) and returns Skip when there are none, so Filter never runs
//!   for such a pod (nearly every pod: `skippedFilterPlugins` of the recorded v1.36 cases).
//! - Filter (upstream `MatchNodeFeatureSet`) rejects, UnschedulableAndUnresolvable, a node
//!   that lacks any required feature: `node declared features check failed - unsatisfied
//!   requirements: A, B`.
//! - With the gate off the plugin does nothing (PreFilter Skip, no events), as upstream's
//!   `New` returns an empty plugin.
//!
//! The features of v1.36's registry that a pod can require at scheduling time (the others
//! infer requirements only for in-place updates, which ksim does not model):
//! - `RestartAllContainersOnContainerExits`: a container or init container with a
//!   `restartPolicyRules` entry whose action is `RestartAllContainers`;
//! - `UserNamespacesHostNetworkSupport`: `spec.hostNetwork: true` with `spec.hostUsers: false`.
//!
//! Events (upstream `EventsToRegister`): a node added or its declared features changed
//! (queue unless the list is unchanged), the pod itself updated (queue when its requirements
//! changed).

use std::sync::Arc;

use ksim_api::Pod;

use crate::framework::{
    ClusterEventKind, ClusterEventObjects, Code, CycleState, EnqueueExtensions, FactoryArgs,
    FilterPlugin, FilterResult, Plugin, PluginRef, PreFilterPlugin, PreFilterResult, QueueingHint,
    Status,
};
use crate::node_info::{NodeInfo, Snapshot};
use crate::pod_info::PodInfo;

pub const NAME: &str = "NodeDeclaredFeatures";
const STATE_KEY: &str = "PreFilterNodeDeclaredFeatures";

/// `RestartAllContainersOnContainerExits` (upstream `restartallcontainers.Feature`).
pub const RESTART_ALL_CONTAINERS: &str = "RestartAllContainersOnContainerExits";
/// `UserNamespacesHostNetworkSupport` (upstream `usernamespaceshostnetwork.Feature`).
pub const USER_NAMESPACES_HOST_NETWORK: &str = "UserNamespacesHostNetworkSupport";

pub struct NodeDeclaredFeatures {
    enabled: bool,
}

pub fn new(a: &FactoryArgs<'_>) -> Result<PluginRef, String> {
    Ok(Arc::new(NodeDeclaredFeatures {
        enabled: a.features.enable_node_declared_features,
    }))
}

/// The features `pod` requires at scheduling time, sorted by name (upstream's registry is
/// sorted by name, and so is the feature set it reports).
pub fn infer_for_scheduling(pod: &Pod) -> Vec<&'static str> {
    let mut reqs = Vec::new();
    let restart_all = pod
        .spec
        .containers
        .iter()
        .chain(pod.spec.init_containers.iter())
        .flat_map(|c| c.restart_policy_rules.iter())
        .any(|r| r.action == "RestartAllContainers");
    if restart_all {
        reqs.push(RESTART_ALL_CONTAINERS);
    }
    if pod.spec.host_network && pod.spec.host_users == Some(false) {
        reqs.push(USER_NAMESPACES_HOST_NETWORK);
    }
    reqs.sort_unstable();
    reqs
}

/// upstream `MatchNodeFeatureSet`: the required features the node does not declare, in order.
pub fn unsatisfied<'a>(reqs: &[&'a str], declared: &[String]) -> Vec<&'a str> {
    reqs.iter()
        .copied()
        .filter(|r| !declared.iter().any(|d| d == r))
        .collect()
}

#[derive(Clone)]
struct Requirements(Vec<&'static str>);

impl Plugin for NodeDeclaredFeatures {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
    fn as_enqueue_extensions(&self) -> Option<&dyn EnqueueExtensions> {
        Some(self)
    }
}

impl PreFilterPlugin for NodeDeclaredFeatures {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        if !self.enabled {
            return (None, Status::skip());
        }
        let reqs = infer_for_scheduling(&pod.pod);
        if reqs.is_empty() {
            return (None, Status::skip());
        }
        state.write(STATE_KEY, Requirements(reqs));
        (None, Status::success())
    }
}

impl FilterPlugin for NodeDeclaredFeatures {
    fn filter(&self, state: &CycleState, _: &PodInfo, node: &NodeInfo) -> FilterResult {
        if !self.enabled {
            return FilterResult::PASS;
        }
        let Some(reqs) = state.read::<Requirements>(STATE_KEY) else {
            return Status::new(
                Code::Error,
                format!("error reading {STATE_KEY:?} from cycle-state: not found"),
            )
            .into();
        };
        let missing = unsatisfied(&reqs.0, &node.node.status.declared_features);
        if missing.is_empty() {
            return FilterResult::PASS;
        }
        Status::new(
            Code::UnschedulableAndUnresolvable,
            format!(
                "node declared features check failed - unsatisfied requirements: {}",
                missing.join(", ")
            ),
        )
        .into()
    }

    /// The verdict reads the node object only.
    fn ignores_pods(&self) -> bool {
        true
    }
}

impl EnqueueExtensions for NodeDeclaredFeatures {
    fn events(&self) -> &'static [ClusterEventKind] {
        if !self.enabled {
            return &[];
        }
        &[
            ClusterEventKind::NodeAdd,
            ClusterEventKind::NodeUpdate,
            ClusterEventKind::UnscheduledPodUpdate,
        ]
    }
    fn hint(
        &self,
        pod: &PodInfo,
        _: ClusterEventKind,
        objs: &ClusterEventObjects<'_>,
    ) -> QueueingHint {
        match objs {
            // upstream `isSchedulableAfterNodeChange`.
            ClusterEventObjects::Node {
                old: Some(old),
                new: Some(new),
            } if old.status.declared_features == new.status.declared_features => QueueingHint::Skip,
            ClusterEventObjects::Node { new: Some(_), .. } => QueueingHint::Queue,
            // upstream `isSchedulableAfterPodUpdate`.
            ClusterEventObjects::Pod {
                old: Some(old),
                new: Some(new),
            } => {
                if !new.same_uid(pod) {
                    return QueueingHint::Skip;
                }
                if infer_for_scheduling(&old.pod) == infer_for_scheduling(&new.pod) {
                    QueueingHint::Skip
                } else {
                    QueueingHint::Queue
                }
            }
            _ => QueueingHint::Queue,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Features;
    use ksim_api::version::KubernetesVersion;

    fn pod(json: serde_json::Value) -> Pod {
        serde_json::from_value(json).unwrap()
    }

    fn plugin(v: KubernetesVersion) -> NodeDeclaredFeatures {
        NodeDeclaredFeatures {
            enabled: Features::of(v).enable_node_declared_features,
        }
    }

    // Cases as upstream's nodedeclaredfeatures_test.go tables state them (inputs → outcome),
    // with the features of v1.36's registry that infer at scheduling time.
    #[test]
    fn pre_filter_and_filter_table() {
        let plain = pod(serde_json::json!({"metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c"}]}}));
        let restart_all = pod(serde_json::json!({"metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c",
                "restartPolicyRules": [{"action": "RestartAllContainers",
                    "exitCodes": {"operator": "In", "values": [42]}}]}]}}));
        let restart_all_init = pod(serde_json::json!({"metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c"}], "initContainers": [{"name": "i",
                "restartPolicyRules": [{"action": "RestartAllContainers"}]}]}}));
        let restart_other = pod(serde_json::json!({"metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c",
                "restartPolicyRules": [{"action": "Restart"}]}]}}));
        let userns_hostnet = pod(serde_json::json!({"metadata": {"name": "p"},
            "spec": {"hostNetwork": true, "hostUsers": false, "containers": [{"name": "c"}]}}));
        let hostnet_only = pod(serde_json::json!({"metadata": {"name": "p"},
            "spec": {"hostNetwork": true, "containers": [{"name": "c"}]}}));
        let both = pod(serde_json::json!({"metadata": {"name": "p"},
            "spec": {"hostNetwork": true, "hostUsers": false, "containers": [{"name": "c",
                "restartPolicyRules": [{"action": "RestartAllContainers"}]}]}}));

        assert!(infer_for_scheduling(&plain).is_empty());
        assert!(infer_for_scheduling(&restart_other).is_empty());
        assert!(infer_for_scheduling(&hostnet_only).is_empty());
        assert_eq!(infer_for_scheduling(&restart_all), [RESTART_ALL_CONTAINERS]);
        assert_eq!(
            infer_for_scheduling(&restart_all_init),
            [RESTART_ALL_CONTAINERS]
        );
        assert_eq!(
            infer_for_scheduling(&userns_hostnet),
            [USER_NAMESPACES_HOST_NETWORK]
        );
        assert_eq!(
            infer_for_scheduling(&both),
            [RESTART_ALL_CONTAINERS, USER_NAMESPACES_HOST_NETWORK]
        );

        // (node declares, pod, expected: None = pass, Some(message) = rejected)
        let declared = |f: &[&str]| -> Vec<String> { f.iter().map(|s| s.to_string()).collect() };
        let cases: Vec<(Vec<String>, &Pod, Option<&str>)> = vec![
            (declared(&[RESTART_ALL_CONTAINERS]), &restart_all, None),
            (
                declared(&[]),
                &restart_all,
                Some("node declared features check failed - unsatisfied requirements: RestartAllContainersOnContainerExits"),
            ),
            (
                declared(&[USER_NAMESPACES_HOST_NETWORK]),
                &both,
                Some("node declared features check failed - unsatisfied requirements: RestartAllContainersOnContainerExits"),
            ),
            (
                declared(&["Other"]),
                &both,
                Some("node declared features check failed - unsatisfied requirements: RestartAllContainersOnContainerExits, UserNamespacesHostNetworkSupport"),
            ),
            (
                declared(&[RESTART_ALL_CONTAINERS, USER_NAMESPACES_HOST_NETWORK]),
                &both,
                None,
            ),
        ];
        let pl = plugin(KubernetesVersion::V1_36);
        let snapshot = Snapshot::default();
        for (i, (decl, p, want)) in cases.into_iter().enumerate() {
            let pi = PodInfo::new(p.clone());
            let mut state = CycleState::new();
            let (_, st) = pl.pre_filter(&mut state, &pi, &snapshot);
            assert!(st.is_success(), "case {i}");
            let mut n: ksim_api::Node = serde_json::from_value(serde_json::json!({
                "metadata": {"name": "n"}}))
            .unwrap();
            n.status.declared_features = decl;
            let ni = NodeInfo::new(Arc::new(n));
            let got = pl.filter(&state, &pi, &ni).into_status();
            match want {
                None => assert!(got.is_success(), "case {i}: {got:?}"),
                Some(msg) => {
                    assert_eq!(got.code, Code::UnschedulableAndUnresolvable, "case {i}");
                    assert_eq!(got.message(), msg, "case {i}");
                }
            }
        }
        // A pod needing nothing: PreFilter Skip.
        let mut state = CycleState::new();
        let (_, st) = pl.pre_filter(&mut state, &PodInfo::new(plain), &snapshot);
        assert_eq!(st.code, Code::Skip);
        // Gate off (v1.35's default): Skip even for a pod that needs a feature, no events.
        let off = plugin(KubernetesVersion::V1_35);
        let (_, st) = off.pre_filter(&mut state, &PodInfo::new(restart_all), &snapshot);
        assert_eq!(st.code, Code::Skip);
        assert!(off.events().is_empty());
    }
}
