//! `PodTopologySpread` (upstream `pkg/scheduler/framework/plugins/podtopologyspread`: plugin.go,
//! common.go, filtering.go, scoring.go, and `helper.DefaultSelector` from helper/spread.go), as
//! kube-scheduler v1.35.4 behaves with its default feature gates (minDomains, node inclusion
//! policies and `matchLabelKeys` all on, queueing hints on).
//!
//! - **PreFilter** turns the pod's `DoNotSchedule` constraints (or the profile's default
//!   constraints, with a selector deduced from the Services, ReplicationControllers, ReplicaSets
//!   and StatefulSets of the pod) into per-constraint counts of matching pods per topology value
//!   over the eligible nodes, plus the two "critical paths" (smallest counts). Skip when the pod
//!   has no hard constraint.
//! - **Filter** checks `count + selfMatch - globalMin <= maxSkew` per constraint.
//! - **AddPod/RemovePod** adjust the counts for nominated pods and preemption dry runs.
//! - **PreScore/Score/NormalizeScore** weigh the `ScheduleAnyway` constraints with
//!   `log(size+2)` per topology and normalise with `100*(max+min-s)/max`.
//!
//! `matchLabelKeys` are merged into the selector here, by the scheduler: the recorded cases come
//! from a fake client without the API server's admission-time merge, and the scheduler of
//! v1.35.4 still performs the merge itself.
//!
//! Deliberate differences:
//! - `math.Log` is ported from Go (`go_log`) rather than calling the platform `ln`, so the
//!   normalising weight is bit-identical to upstream on every platform.
//! - Objects (Services, workloads) with an empty namespace are treated as being in `default`,
//!   as the case runner does for pods.
//! - The queueing hint has no access to the cluster objects; for a pod without its own
//!   constraints whose *default* constraints include a `DoNotSchedule` one (only possible with
//!   `defaultingType: List`), it cannot deduce the selector and answers Queue.

use std::sync::Arc;

use ksim_api::config::{decode_args, PodTopologySpreadArgs};
use ksim_api::{Node, TopologySpreadConstraint};

use crate::framework::{
    ClusterEventKind, ClusterEventObjects, EnqueueExtensions, FactoryArgs, FilterPlugin, Plugin,
    PluginRef, PreFilterPlugin, PreScorePlugin, QueueingHint, ScorePlugin,
};
use crate::pod_info::PodInfo;
use common::{node_labels_match, pod_labels_match, validate_qualified_name};

mod common;
mod filtering;
mod scoring;
#[cfg(test)]
mod tests;

pub const NAME: &str = "PodTopologySpread";
/// `ErrReasonConstraintsNotMatch`.
pub const ERR_REASON_CONSTRAINTS_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints";
/// `ErrReasonNodeLabelNotMatch`.
pub const ERR_REASON_NODE_LABEL_NOT_MATCH: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";

const PRE_FILTER_STATE_KEY: &str = "PreFilterPodTopologySpread";
const PRE_SCORE_STATE_KEY: &str = "PreScorePodTopologySpread";

const LABEL_HOSTNAME: &str = "kubernetes.io/hostname";
const LABEL_TOPOLOGY_ZONE: &str = "topology.kubernetes.io/zone";
const DO_NOT_SCHEDULE: &str = "DoNotSchedule";
const SCHEDULE_ANYWAY: &str = "ScheduleAnyway";
const HONOR: &str = "Honor";
/// Upstream `math.MaxInt32`, the initial match number of a critical path.
const MAX_INT32: i64 = i32::MAX as i64;

/// upstream `systemDefaultConstraints`: hostname maxSkew 3, zone maxSkew 5, both ScheduleAnyway.
fn system_default_constraints() -> Vec<TopologySpreadConstraint> {
    vec![
        TopologySpreadConstraint {
            topology_key: LABEL_HOSTNAME.into(),
            when_unsatisfiable: SCHEDULE_ANYWAY.into(),
            max_skew: 3,
            ..Default::default()
        },
        TopologySpreadConstraint {
            topology_key: LABEL_TOPOLOGY_ZONE.into(),
            when_unsatisfiable: SCHEDULE_ANYWAY.into(),
            max_skew: 5,
            ..Default::default()
        },
    ]
}

pub struct PodTopologySpread {
    /// `defaultingType: System` (affects whether scoring requires every topology key).
    system_defaulted: bool,
    default_constraints: Vec<TopologySpreadConstraint>,
}

pub fn new(a: &FactoryArgs<'_>) -> Result<PluginRef, String> {
    let args: PodTopologySpreadArgs = decode_args(NAME, a.args)?;
    validate_args(&args)?;
    let system = args.defaulting_type.is_empty() || args.defaulting_type == "System";
    Ok(Arc::new(PodTopologySpread {
        system_defaulted: system,
        default_constraints: if system {
            system_default_constraints()
        } else {
            args.default_constraints
        },
    }))
}

/// upstream `ValidatePodTopologySpreadArgs` (with `SetDefaults`: an empty type is System).
fn validate_args(args: &PodTopologySpreadArgs) -> Result<(), String> {
    let mut errs: Vec<String> = Vec::new();
    match args.defaulting_type.as_str() {
        "" | "System" if !args.default_constraints.is_empty() => errs.push(
            "defaultingType: Invalid value: \"System\": when .defaultConstraints are not empty"
                .into(),
        ),
        "" | "System" | "List" => {}
        other => errs.push(format!(
            "defaultingType: Unsupported value: {other:?}: supported values: \"System\", \"List\""
        )),
    }
    for (i, c) in args.default_constraints.iter().enumerate() {
        let p = format!("defaultConstraints[{i}]");
        if c.max_skew <= 0 {
            errs.push(format!(
                "{p}.maxSkew: Invalid value: {}: not in valid range (0, inf)",
                c.max_skew
            ));
        }
        if c.topology_key.is_empty() {
            errs.push(format!("{p}.topologyKey: Required value: can not be empty"));
        } else if let Err(e) = validate_qualified_name(&c.topology_key) {
            errs.push(format!(
                "{p}.topologyKey: Invalid value: {:?}: {e}",
                c.topology_key
            ));
        }
        match c.when_unsatisfiable.as_str() {
            "" => errs.push(format!(
                "{p}.whenUnsatisfiable: Required value: can not be empty"
            )),
            DO_NOT_SCHEDULE | SCHEDULE_ANYWAY => {}
            other => errs.push(format!(
                "{p}.whenUnsatisfiable: Unsupported value: {other:?}: supported values: \"DoNotSchedule\", \"ScheduleAnyway\""
            )),
        }
        if c.label_selector.is_some() {
            errs.push(format!(
                "{p}.labelSelector: Forbidden: constraint must not define a selector, as they deduced for each pod"
            ));
        }
        if args.default_constraints[..i].iter().any(|o| {
            o.topology_key == c.topology_key && o.when_unsatisfiable == c.when_unsatisfiable
        }) {
            errs.push(format!(
                "defaultConstraints[{i}]: Duplicate value: \"{{{}, {}}}\"",
                c.topology_key, c.when_unsatisfiable
            ));
        }
    }
    if errs.is_empty() {
        Ok(())
    } else if errs.len() == 1 {
        Err(errs.remove(0))
    } else {
        Err(format!("[{}]", errs.join(", ")))
    }
}

impl Plugin for PodTopologySpread {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        Some(self)
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
    fn as_enqueue_extensions(&self) -> Option<&dyn EnqueueExtensions> {
        Some(self)
    }
}

// ---- EnqueueExtensions (plugin.go) ---------------------------------------------------------

impl PodTopologySpread {
    /// `involvedInTopologySpreading`: the pod itself, or an assigned pod of its namespace.
    fn involved(incoming: &PodInfo, with_spreading: &PodInfo) -> bool {
        incoming.uid() == with_spreading.uid()
            || (!incoming.pod.spec.node_name.is_empty()
                && incoming.namespace() == with_spreading.namespace())
    }

    /// `isSchedulableAfterPodChange`.
    fn hint_pod(
        &self,
        pod: &PodInfo,
        old: Option<&PodInfo>,
        new: Option<&PodInfo>,
    ) -> QueueingHint {
        if new.is_some_and(|p| !Self::involved(p, pod))
            || old.is_some_and(|p| !Self::involved(p, pod))
        {
            return QueueingHint::Skip;
        }
        let constraints = match self.constraints_for(pod, DO_NOT_SCHEDULE, None) {
            Ok(Some(c)) => c,
            Ok(None) | Err(_) => return QueueingHint::Queue,
        };
        match (old, new) {
            (Some(old), Some(new)) => {
                if pod.uid() == new.uid()
                    && new.pod.spec.tolerations != old.pod.spec.tolerations
                    && constraints.iter().any(|c| c.node_taints_honor)
                {
                    return QueueingHint::Queue;
                }
                if new.labels() == old.labels() {
                    return QueueingHint::Skip;
                }
                if constraints
                    .iter()
                    .any(|c| c.selector.matches(old.labels()) != c.selector.matches(new.labels()))
                {
                    return QueueingHint::Queue;
                }
                QueueingHint::Skip
            }
            (None, Some(p)) | (Some(p), None) => {
                if pod_labels_match(&constraints, p.labels()) {
                    QueueingHint::Queue
                } else {
                    QueueingHint::Skip
                }
            }
            (None, None) => QueueingHint::Queue,
        }
    }

    /// `isSchedulableAfterNodeChange`.
    fn hint_node(&self, pod: &PodInfo, old: Option<&Node>, new: Option<&Node>) -> QueueingHint {
        let constraints = match self.constraints_for(pod, DO_NOT_SCHEDULE, None) {
            Ok(Some(c)) => c,
            Ok(None) | Err(_) => return QueueingHint::Queue,
        };
        let matching = |n: Option<&Node>| {
            n.is_some_and(|n| node_labels_match(&n.metadata.labels, &constraints))
        };
        let (old_matching, new_matching) = (matching(old), matching(new));
        match (old, new) {
            (Some(old), Some(new)) => {
                if old_matching != new_matching {
                    return QueueingHint::Queue;
                }
                let key_changed = constraints.iter().any(|c| {
                    old.metadata.labels.get(&c.topology_key)
                        != new.metadata.labels.get(&c.topology_key)
                });
                if new_matching && (key_changed || old.spec.taints != new.spec.taints) {
                    return QueueingHint::Queue;
                }
                QueueingHint::Skip
            }
            (None, Some(_)) => {
                if new_matching {
                    QueueingHint::Queue
                } else {
                    QueueingHint::Skip
                }
            }
            (Some(_), None) => {
                if old_matching {
                    QueueingHint::Queue
                } else {
                    QueueingHint::Skip
                }
            }
            (None, None) => QueueingHint::Queue,
        }
    }
}

impl EnqueueExtensions for PodTopologySpread {
    /// Pod Add | UpdatePodLabel | UpdatePodToleration | Delete (the target pod's own updates
    /// included, as QueueingHints are on; other unscheduled pods are never involved), and
    /// Node Add | Delete | UpdateNodeLabel | UpdateNodeTaint. The hints also answer Skip for
    /// updates that change neither labels nor tolerations/taints, as upstream's registration
    /// would filter them out.
    fn events(&self) -> &'static [ClusterEventKind] {
        &[
            ClusterEventKind::AssignedPodAdd,
            ClusterEventKind::AssignedPodUpdate,
            ClusterEventKind::AssignedPodDelete,
            ClusterEventKind::UnscheduledPodUpdate,
            ClusterEventKind::NodeAdd,
            ClusterEventKind::NodeDelete,
            ClusterEventKind::NodeUpdateLabel,
            ClusterEventKind::NodeUpdateTaint,
        ]
    }

    fn hint(
        &self,
        pod: &PodInfo,
        _kind: ClusterEventKind,
        objects: &ClusterEventObjects<'_>,
    ) -> QueueingHint {
        match objects {
            ClusterEventObjects::Pod { old, new } => self.hint_pod(pod, *old, *new),
            ClusterEventObjects::Node { old, new } => self.hint_node(pod, *old, *new),
            ClusterEventObjects::Object { .. } | ClusterEventObjects::None => QueueingHint::Queue,
        }
    }
}
