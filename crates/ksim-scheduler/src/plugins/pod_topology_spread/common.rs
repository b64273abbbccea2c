//! Constraints (upstream common.go): parsing a pod's topology spread constraints (or the
//! profile's defaults with a selector deduced from the pod's Services and workloads), node
//! inclusion policies, matching pods per node, and the label-name validation they need.

use std::sync::Arc;

use ksim_api::meta::{Requirement, SelectorOp};
use ksim_api::{LabelSelector, Labels, Node, Selector, TopologySpreadConstraint};

use super::{PodTopologySpread, DO_NOT_SCHEDULE, HONOR};
use crate::node_info::ClusterObjects;
use crate::plugins::helper::{find_untolerated_taint, RequiredNodeAffinity};
use crate::pod_info::PodInfo;

/// upstream `topologySpreadConstraint`: a constraint with its selector parsed.
#[derive(Debug, Clone)]
pub(super) struct Constraint {
    pub(super) max_skew: i32,
    pub(super) topology_key: String,
    pub(super) selector: Selector,
    pub(super) min_domains: i32,
    /// `nodeAffinityPolicy: Honor` (the default).
    pub(super) node_affinity_honor: bool,
    /// `nodeTaintsPolicy: Honor` (default Ignore).
    pub(super) node_taints_honor: bool,
}

impl Constraint {
    /// `matchNodeInclusionPolicies`.
    pub(super) fn match_node_inclusion_policies(
        &self,
        pod: &PodInfo,
        node: &Node,
        required: &RequiredNodeAffinity,
    ) -> bool {
        if self.node_affinity_honor && !required.matches(node) {
            return false;
        }
        if self.node_taints_honor
            && find_untolerated_taint(&node.spec.taints, &pod.pod.spec.tolerations, |t| {
                t.effect == "NoSchedule" || t.effect == "NoExecute"
            })
            .is_some()
        {
            return false;
        }
        true
    }
}

/// `nodeLabelsMatchSpreadConstraints`: the node has every constraint's topology key.
pub(super) fn node_labels_match(labels: &Labels, constraints: &[Constraint]) -> bool {
    constraints
        .iter()
        .all(|c| labels.contains_key(&c.topology_key))
}

/// `podLabelsMatchSpreadConstraints`.
pub(super) fn pod_labels_match(constraints: &[Constraint], labels: &Labels) -> bool {
    constraints.iter().any(|c| c.selector.matches(labels))
}

/// `countPodsMatchSelector`: pods of the namespace, not terminating, matching the selector. An
/// empty (match-everything) selector counts nothing, as upstream.
pub(super) fn count_pods_match_selector(
    pods: &[Arc<PodInfo>],
    selector: &Selector,
    ns: &str,
) -> i64 {
    if selector.is_empty() {
        return 0;
    }
    pods.iter()
        .filter(|p| {
            p.pod.metadata.deletion_timestamp.is_none()
                && p.namespace() == ns
                && selector.matches(p.labels())
        })
        .count() as i64
}

/// `filterTopologySpreadConstraints`: the constraints with the given `whenUnsatisfiable`, their
/// selectors parsed and `matchLabelKeys` merged in.
fn filter_constraints(
    constraints: &[TopologySpreadConstraint],
    pod_labels: &Labels,
    action: &str,
) -> Result<Vec<Constraint>, String> {
    let mut out = Vec::new();
    for c in constraints {
        if c.when_unsatisfiable != action {
            continue;
        }
        let mut selector = label_selector_as_selector(c.label_selector.as_ref())?;
        if !c.match_label_keys.is_empty() {
            // `mergeLabelSetWithSelector`: a nil selector (Nothing) stays as it is.
            let mut match_labels: Labels = Labels::new();
            for k in &c.match_label_keys {
                if let Some(v) = pod_labels.get(k) {
                    match_labels.insert(k.clone(), v.clone());
                }
            }
            if !match_labels.is_empty() {
                if let Selector::Requirements(reqs) = selector {
                    let mut merged: Vec<Requirement> = match_labels
                        .into_iter()
                        .map(|(key, v)| Requirement {
                            key,
                            op: SelectorOp::In,
                            values: vec![v],
                        })
                        .collect();
                    merged.extend(reqs);
                    selector = Selector::Requirements(merged);
                }
            }
        }
        out.push(Constraint {
            max_skew: c.max_skew,
            topology_key: c.topology_key.clone(),
            selector,
            min_domains: c.min_domains.unwrap_or(1),
            node_affinity_honor: c.node_affinity_policy.as_deref().is_none_or(|p| p == HONOR),
            node_taints_honor: c.node_taints_policy.as_deref() == Some(HONOR),
        });
    }
    Ok(out)
}

impl PodTopologySpread {
    /// `getConstraints` for `action`: the pod's own constraints, else the default ones.
    /// `objects` is `None` when the cluster objects are unavailable (queueing hints); then
    /// `Ok(None)` means the default selector could not be deduced.
    pub(super) fn constraints_for(
        &self,
        pod: &PodInfo,
        action: &str,
        objects: Option<&ClusterObjects>,
    ) -> Result<Option<Vec<Constraint>>, String> {
        if !pod.pod.spec.topology_spread_constraints.is_empty() {
            let kind = if action == DO_NOT_SCHEDULE {
                "hard"
            } else {
                "soft"
            };
            return filter_constraints(
                &pod.pod.spec.topology_spread_constraints,
                pod.labels(),
                action,
            )
            .map(Some)
            .map_err(|e| format!("obtaining pod's {kind} topology spread constraints: {e}"));
        }
        // `buildDefaultConstraints`.
        let mut constraints = filter_constraints(&self.default_constraints, pod.labels(), action)
            .map_err(|e| {
            let kind = if action == DO_NOT_SCHEDULE {
                "hard"
            } else {
                "soft"
            };
            format!("setting default {kind} topology spread constraints: {e}")
        })?;
        if constraints.is_empty() {
            return Ok(Some(constraints));
        }
        let Some(objects) = objects else {
            return Ok(None);
        };
        let selector = default_selector(pod, objects);
        if selector.is_empty() {
            return Ok(Some(Vec::new()));
        }
        for c in &mut constraints {
            c.selector = selector.clone();
        }
        Ok(Some(constraints))
    }
}

/// The namespace an object lives in; empty means `default`.
fn object_namespace(ns: &str) -> &str {
    if ns.is_empty() {
        "default"
    } else {
        ns
    }
}

/// `helper.DefaultSelector`: the union of the selectors of the Services in the pod's namespace
/// that select it, plus the selector of its controller (by controller owner reference) when that
/// is a ReplicationController, ReplicaSet or StatefulSet that exists.
pub(super) fn default_selector(pod: &PodInfo, objects: &ClusterObjects) -> Selector {
    let ns = pod.namespace();
    let mut label_set: Labels = Labels::new();
    for svc in &objects.services {
        if object_namespace(&svc.metadata.namespace) != ns {
            continue;
        }
        // A nil and an empty selector both add nothing (nil selects nothing, empty merges no key).
        if svc
            .spec
            .selector
            .iter()
            .all(|(k, v)| pod.labels().get(k) == Some(v))
        {
            for (k, v) in &svc.spec.selector {
                label_set.insert(k.clone(), v.clone());
            }
        }
    }
    let set_selector = |set: &Labels| Selector::from_set(set);
    let selector = set_selector(&label_set);

    // `metav1.GetControllerOfNoCopy`.
    let Some(owner) = pod
        .pod
        .metadata
        .owner_references
        .iter()
        .find(|o| o.controller == Some(true))
    else {
        return selector;
    };
    let Some((group, version)) = parse_group_version(&owner.api_version) else {
        return selector;
    };
    let same_ns_name =
        |m: &ksim_api::ObjectMeta| object_namespace(&m.namespace) == ns && m.name == owner.name;
    match (group, version, owner.kind.as_str()) {
        ("", "v1", "ReplicationController") => {
            if let Some(rc) = objects
                .replication_controllers
                .iter()
                .find(|rc| same_ns_name(&rc.metadata))
            {
                for (k, v) in &rc.spec.selector {
                    label_set.insert(k.clone(), v.clone());
                }
                return set_selector(&label_set);
            }
            selector
        }
        ("apps", "v1", kind @ ("ReplicaSet" | "StatefulSet")) => {
            let list = if kind == "ReplicaSet" {
                &objects.replica_sets
            } else {
                &objects.stateful_sets
            };
            let Some(w) = list.iter().find(|w| same_ns_name(&w.metadata)) else {
                return selector;
            };
            match (
                label_selector_as_selector(w.spec.selector.as_ref()),
                selector,
            ) {
                (Ok(Selector::Requirements(extra)), Selector::Requirements(mut reqs)) => {
                    reqs.extend(extra);
                    Selector::Requirements(reqs)
                }
                (_, selector) => selector,
            }
        }
        _ => selector,
    }
}

/// `schema.ParseGroupVersion`: `""` → empty, `"v1"` → core, `"g/v"`, more slashes → error.
fn parse_group_version(gv: &str) -> Option<(&str, &str)> {
    if gv.is_empty() || gv == "/" {
        return Some(("", ""));
    }
    match gv.matches('/').count() {
        0 => Some(("", gv)),
        1 => gv.split_once('/'),
        _ => None,
    }
}

/// `metav1.LabelSelectorAsSelector` with its errors (invalid operator, wrong number of values,
/// invalid label key or value). `None` → selects nothing, empty → selects everything.
fn label_selector_as_selector(sel: Option<&LabelSelector>) -> Result<Selector, String> {
    let Some(s) = sel else {
        return Ok(Selector::Nothing);
    };
    for (k, v) in &s.match_labels {
        validate_label_key(k)?;
        validate_label_value(k, v)?;
    }
    for e in &s.match_expressions {
        let op = match e.operator.as_str() {
            "In" => SelectorOp::In,
            "NotIn" => SelectorOp::NotIn,
            "Exists" => SelectorOp::Exists,
            "DoesNotExist" => SelectorOp::DoesNotExist,
            other => return Err(format!("{other:?} is not a valid label selector operator")),
        };
        validate_label_key(&e.key)?;
        match op {
            SelectorOp::In | SelectorOp::NotIn if e.values.is_empty() => {
                return Err(
                    "values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty"
                        .to_string(),
                )
            }
            SelectorOp::Exists | SelectorOp::DoesNotExist if !e.values.is_empty() => {
                return Err(
                    "values: Invalid value: for 'exists', 'doesnotexist' operators, values set must be empty"
                        .to_string(),
                )
            }
            _ => {}
        }
        for v in &e.values {
            validate_label_value(&e.key, v)?;
        }
    }
    Ok(Selector::from_label_selector(Some(s)))
}

fn validate_label_key(k: &str) -> Result<(), String> {
    validate_qualified_name(k).map_err(|e| format!("key: Invalid value: {k:?}: {e}"))
}

fn validate_label_value(k: &str, v: &str) -> Result<(), String> {
    if v.len() > 63 || !(v.is_empty() || is_qualified_name_part(v)) {
        return Err(format!(
            "values[0][{k}]: Invalid value: {v:?}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ));
    }
    Ok(())
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`.
fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    let (Some(first), Some(last)) = (b.first(), b.last()) else {
        return false;
    };
    first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// `validation.IsDNS1123Subdomain`.
fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            match (b.first(), b.last()) {
                (Some(f), Some(l)) => {
                    (f.is_ascii_lowercase() || f.is_ascii_digit())
                        && (l.is_ascii_lowercase() || l.is_ascii_digit())
                        && b.iter()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
                }
                _ => false,
            }
        })
}

/// `validation.IsQualifiedName`: `[prefix/]name`.
pub(super) fn validate_qualified_name(s: &str) -> Result<(), String> {
    let name = match s.split_once('/') {
        None => s,
        Some((prefix, name)) => {
            if name.contains('/') {
                return Err("a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character with an optional DNS subdomain prefix and '/'".into());
            }
            if prefix.is_empty() {
                return Err("prefix part must be non-empty".into());
            }
            if !is_dns1123_subdomain(prefix) {
                return Err("prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character".into());
            }
            name
        }
    };
    if name.is_empty() {
        return Err("name part must be non-empty".into());
    }
    if name.len() > 63 {
        return Err("name part must be no more than 63 characters".into());
    }
    if !is_qualified_name_part(name) {
        return Err("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character".into());
    }
    Ok(())
}
