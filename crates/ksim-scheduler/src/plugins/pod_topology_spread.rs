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
use ksim_api::meta::{Requirement, SelectorOp};
use ksim_api::{LabelSelector, Labels, Node, Selector, TopologySpreadConstraint};
use rustc_hash::FxHashMap;

use crate::framework::{
    ClusterEventKind, ClusterEventObjects, CycleState, EnqueueExtensions, FactoryArgs,
    FilterPlugin, FilterResult, Plugin, PluginRef, PreFilterPlugin, PreFilterResult,
    PreScorePlugin, QueueingHint, ScorePlugin, Status, MAX_NODE_SCORE,
};
use crate::node_info::{ClusterObjects, LabelColumn, NodeInfo, Snapshot};
use crate::plugins::helper::{find_untolerated_taint, RequiredNodeAffinity};
use crate::pod_info::PodInfo;

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

// ---- constraints (common.go) ---------------------------------------------------------------

/// upstream `topologySpreadConstraint`: a constraint with its selector parsed.
#[derive(Debug, Clone)]
struct Constraint {
    max_skew: i32,
    topology_key: String,
    selector: Selector,
    min_domains: i32,
    /// `nodeAffinityPolicy: Honor` (the default).
    node_affinity_honor: bool,
    /// `nodeTaintsPolicy: Honor` (default Ignore).
    node_taints_honor: bool,
}

impl Constraint {
    /// `matchNodeInclusionPolicies`.
    fn match_node_inclusion_policies(
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
fn node_labels_match(labels: &Labels, constraints: &[Constraint]) -> bool {
    constraints
        .iter()
        .all(|c| labels.contains_key(&c.topology_key))
}

/// `podLabelsMatchSpreadConstraints`.
fn pod_labels_match(constraints: &[Constraint], labels: &Labels) -> bool {
    constraints.iter().any(|c| c.selector.matches(labels))
}

/// `countPodsMatchSelector`: pods of the namespace, not terminating, matching the selector. An
/// empty (match-everything) selector counts nothing, as upstream.
fn count_pods_match_selector(pods: &[Arc<PodInfo>], selector: &Selector, ns: &str) -> i64 {
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

/// `countPodsMatchSelector` for every node at once: node index → matching pods, for the nodes
/// with at least one. The snapshot's pod index hands out only the pods the selector can match.
fn matching_pods_per_node(
    snapshot: &Snapshot,
    selector: &Selector,
    ns: &str,
) -> FxHashMap<usize, i64> {
    let mut counts: FxHashMap<usize, i64> = FxHashMap::default();
    if selector.is_empty() {
        return counts;
    }
    snapshot.pod_index.for_each_candidate(selector, |node, p| {
        if p.pod.metadata.deletion_timestamp.is_none()
            && p.namespace() == ns
            && selector.matches(p.labels())
        {
            *counts.entry(node).or_insert(0) += 1;
        }
    });
    counts
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
    fn constraints_for(
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
fn default_selector(pod: &PodInfo, objects: &ClusterObjects) -> Selector {
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
fn validate_qualified_name(s: &str) -> Result<(), String> {
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

// ---- PreFilter / Filter (filtering.go) -----------------------------------------------------

/// One of the two smallest-count domains of a constraint. `domain == None` is upstream's initial
/// entry, whose topology value is the empty string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CriticalPath {
    domain: Option<usize>,
    match_num: i64,
}

/// upstream `criticalPaths`: `[0]` always holds the minimum match number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct CriticalPaths([CriticalPath; 2]);

impl CriticalPaths {
    fn new() -> CriticalPaths {
        let p = CriticalPath {
            domain: None,
            match_num: MAX_INT32,
        };
        CriticalPaths([p, p])
    }

    /// `criticalPaths.update` for the domain `idx` whose topology value is `value`.
    fn update(&mut self, idx: usize, value: &str, num: i64) {
        let p = &mut self.0;
        let same =
            |c: &CriticalPath| c.domain == Some(idx) || (c.domain.is_none() && value.is_empty());
        let i = if same(&p[0]) {
            Some(0)
        } else if same(&p[1]) {
            Some(1)
        } else {
            None
        };
        match i {
            Some(i) => {
                p[i].match_num = num;
                // Upstream keeps the stored topology value; a matched initial entry stays "".
                if p[0].match_num > p[1].match_num {
                    p.swap(0, 1);
                }
            }
            None => {
                if num < p[0].match_num {
                    p[1] = p[0];
                    p[0] = CriticalPath {
                        domain: Some(idx),
                        match_num: num,
                    };
                } else if num < p[1].match_num {
                    p[1] = CriticalPath {
                        domain: Some(idx),
                        match_num: num,
                    };
                }
            }
        }
    }
}

/// Matching-pod counts per topology value of one constraint, in first-seen order.
#[derive(Debug, Clone, Default)]
struct Domains {
    /// Topology value → index into `counts`; shared between clones until a value is added.
    index: Arc<FxHashMap<String, usize>>,
    counts: Vec<i64>,
}

impl Domains {
    fn get(&self, value: &str) -> i64 {
        self.index.get(value).map_or(0, |&i| self.counts[i])
    }

    fn index_of(&mut self, value: &str) -> usize {
        if let Some(&i) = self.index.get(value) {
            return i;
        }
        let i = self.counts.len();
        Arc::make_mut(&mut self.index).insert(value.to_string(), i);
        self.counts.push(0);
        i
    }

    /// Number of domains (`len(TpValueToMatchNum[i])`).
    fn len(&self) -> usize {
        self.counts.len()
    }
}

/// upstream `preFilterState`.
#[derive(Clone)]
struct PreFilterState {
    constraints: Arc<[Constraint]>,
    /// Whether each constraint's selector matches the incoming pod (`selfMatchNum`).
    self_match: Arc<[bool]>,
    /// The incoming pod's required node affinity (for AddPod/RemovePod).
    required: Arc<RequiredNodeAffinity>,
    domains: Vec<Domains>,
    critical_paths: Vec<CriticalPaths>,
}

impl PreFilterState {
    /// `minMatchNum`: the global minimum, 0 when fewer domains than `minDomains` exist.
    fn min_match_num(&self, i: usize, min_domains: i32) -> i64 {
        if (self.domains[i].len() as i64) < min_domains as i64 {
            return 0;
        }
        self.critical_paths[i].0[0].match_num
    }

    /// `updateWithPod`.
    fn update_with_pod(&mut self, updated: &PodInfo, preemptor: &PodInfo, node: &Node, delta: i64) {
        if updated.namespace() != preemptor.namespace() {
            return;
        }
        if !node_labels_match(&node.metadata.labels, &self.constraints) {
            return;
        }
        for (i, c) in self.constraints.iter().enumerate() {
            if !c.selector.matches(updated.labels()) {
                continue;
            }
            if !c.match_node_inclusion_policies(preemptor, node, &self.required) {
                continue;
            }
            let value = node
                .metadata
                .labels
                .get(&c.topology_key)
                .map_or("", String::as_str);
            let idx = self.domains[i].index_of(value);
            self.domains[i].counts[idx] += delta;
            let num = self.domains[i].counts[idx];
            self.critical_paths[i].update(idx, value, num);
        }
    }
}

fn pre_filter_state_missing() -> Status {
    Status::error(format!(
        "reading {PRE_FILTER_STATE_KEY:?} from cycleState: not found"
    ))
}

impl PreFilterPlugin for PodTopologySpread {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let constraints = match self.constraints_for(pod, DO_NOT_SCHEDULE, Some(&snapshot.objects))
        {
            Ok(c) => c.unwrap_or_default(),
            Err(e) => {
                return (
                    None,
                    Status::error(format!("get constraints from pod: {e}")),
                )
            }
        };
        if constraints.is_empty() {
            return (None, Status::skip());
        }
        let required = RequiredNodeAffinity::of_pod(&pod.pod);
        let ns = pod.namespace();
        let node_counts: Vec<FxHashMap<usize, i64>> = constraints
            .iter()
            .map(|c| matching_pods_per_node(snapshot, &c.selector, ns))
            .collect();
        // Every node is visited, in order, through the snapshot's label columns: a node
        // lacking a constraint's key is skipped (`nodeLabelsMatchSpreadConstraints`), and
        // domains are numbered in order of first appearance, as `Domains::index_of` would.
        let columns: Vec<Arc<LabelColumn>> = constraints
            .iter()
            .map(|c| snapshot.label_column(&c.topology_key))
            .collect();
        // Inclusion policies that admit every node need no per-node check.
        let admits_all: Vec<bool> = constraints
            .iter()
            .map(|c| !c.node_taints_honor && (!c.node_affinity_honor || required.is_empty()))
            .collect();
        let mut domain_of: Vec<Vec<u32>> = columns
            .iter()
            .map(|col| vec![u32::MAX; col.values.len()])
            .collect();
        let mut domain_values: Vec<Vec<u32>> = vec![Vec::new(); constraints.len()];
        let mut counts: Vec<Vec<i64>> = vec![Vec::new(); constraints.len()];
        for (k, n) in snapshot.nodes.iter().enumerate() {
            if columns
                .iter()
                .any(|col| col.ids.get(k).is_none_or(|&v| v == LabelColumn::ABSENT))
            {
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                if !admits_all[i] && !c.match_node_inclusion_policies(pod, &n.node, &required) {
                    continue;
                }
                let v = columns[i].ids[k] as usize;
                let d = match domain_of[i][v] {
                    u32::MAX => {
                        let d = domain_values[i].len();
                        domain_of[i][v] = d as u32;
                        domain_values[i].push(v as u32);
                        counts[i].push(0);
                        d
                    }
                    d => d as usize,
                };
                counts[i][d] += node_counts[i].get(&k).copied().unwrap_or(0);
            }
        }
        let domains: Vec<Domains> = (0..constraints.len())
            .map(|i| Domains {
                index: Arc::new(
                    domain_values[i]
                        .iter()
                        .enumerate()
                        .map(|(d, &v)| (columns[i].values[v as usize].clone(), d))
                        .collect(),
                ),
                counts: std::mem::take(&mut counts[i]),
            })
            .collect();
        let mut critical_paths = Vec::with_capacity(constraints.len());
        for d in &domains {
            let mut p = CriticalPaths::new();
            let mut by_index: Vec<(&str, usize)> =
                d.index.iter().map(|(v, &i)| (v.as_str(), i)).collect();
            // Upstream ranges over a Go map (random order); the minimum does not depend on the
            // order, so a fixed one (first seen) keeps ksim deterministic.
            by_index.sort_unstable_by_key(|&(_, i)| i);
            for (v, i) in by_index {
                p.update(i, v, d.counts[i]);
            }
            critical_paths.push(p);
        }
        let self_match: Arc<[bool]> = constraints
            .iter()
            .map(|c| c.selector.matches(pod.labels()))
            .collect();
        state.write(
            PRE_FILTER_STATE_KEY,
            PreFilterState {
                constraints: constraints.into(),
                self_match,
                required: Arc::new(required),
                domains,
                critical_paths,
            },
        );
        (None, Status::success())
    }

    fn has_extensions(&self) -> bool {
        true
    }

    fn add_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        pod_to_add: &Arc<PodInfo>,
        node: &NodeInfo,
        _snapshot: &Snapshot,
    ) -> Status {
        let Some(s) = state.read_mut::<PreFilterState>(PRE_FILTER_STATE_KEY) else {
            return pre_filter_state_missing();
        };
        s.update_with_pod(pod_to_add, pod, &node.node, 1);
        Status::success()
    }

    fn remove_pod(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        pod_to_remove: &Arc<PodInfo>,
        node: &NodeInfo,
        _snapshot: &Snapshot,
    ) -> Status {
        let Some(s) = state.read_mut::<PreFilterState>(PRE_FILTER_STATE_KEY) else {
            return pre_filter_state_missing();
        };
        s.update_with_pod(pod_to_remove, pod, &node.node, -1);
        Status::success()
    }
}

impl PodTopologySpread {
    /// The Filter verdict as a [`Status`] (the trait method boxes a rejection).
    fn filter_status(&self, state: &CycleState, _pod: &PodInfo, node: &NodeInfo) -> Status {
        let Some(s) = state.read::<PreFilterState>(PRE_FILTER_STATE_KEY) else {
            return pre_filter_state_missing();
        };
        let labels = node.labels();
        for (i, c) in s.constraints.iter().enumerate() {
            let Some(value) = labels.get(&c.topology_key) else {
                return Status::unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH);
            };
            // 'existing matching num' + 'if self-match (1 or 0)' - 'global minimum' <= 'maxSkew'
            let min_match_num = s.min_match_num(i, c.min_domains);
            let self_match_num = i64::from(s.self_match[i]);
            let match_num = s.domains[i].get(value);
            let skew = match_num + self_match_num - min_match_num;
            if skew > i64::from(c.max_skew) {
                return Status::unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH);
            }
        }
        Status::success()
    }
}

impl FilterPlugin for PodTopologySpread {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> FilterResult {
        self.filter_status(state, pod, node).into()
    }
}

// ---- PreScore / Score (scoring.go) ---------------------------------------------------------

/// upstream `preScoreState`.
#[derive(Clone)]
struct PreScoreState {
    constraints: Vec<Constraint>,
    /// Whether nodes must carry every topology key (not with system defaulting).
    require_all_topologies: bool,
    /// By position in the feasible-node list PreScore was given (`IgnoredNodes`).
    ignored: Vec<bool>,
    /// Per constraint: topology value → matching pods (empty for hostname constraints, which
    /// are counted per node in Score).
    topology_value_to_pod_counts: Vec<FxHashMap<String, i64>>,
    topology_normalizing_weight: Vec<f64>,
}

impl PreScoreState {
    fn is_ignored(&self, node: &Node) -> bool {
        self.require_all_topologies && !node_labels_match(&node.metadata.labels, &self.constraints)
    }
}

impl PreScorePlugin for PodTopologySpread {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        snapshot: &Snapshot,
    ) -> Status {
        if snapshot.nodes.is_empty() {
            return Status::skip();
        }
        // Only require every topology label with non-system-default spreading, so that nodes
        // without a zone label still get hostname spreading.
        let require_all =
            !pod.pod.spec.topology_spread_constraints.is_empty() || !self.system_defaulted;
        // `initPreScoreState`.
        let constraints = match self.constraints_for(pod, SCHEDULE_ANYWAY, Some(&snapshot.objects))
        {
            Ok(c) => c.unwrap_or_default(),
            Err(e) => {
                return Status::error(format!("calculating preScoreState: {e}"));
            }
        };
        if constraints.is_empty() {
            return Status::skip();
        }
        let mut counts: Vec<FxHashMap<String, i64>> = vec![FxHashMap::default(); constraints.len()];
        let mut ignored = vec![false; nodes.len()];
        let mut num_ignored = 0usize;
        for (k, n) in nodes.iter().enumerate() {
            let labels = n.labels();
            if require_all && !node_labels_match(labels, &constraints) {
                ignored[k] = true;
                num_ignored += 1;
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                if c.topology_key == LABEL_HOSTNAME {
                    continue;
                }
                // A missing key reads as "" (Go map semantics) and forms a domain of its own.
                let value = labels.get(&c.topology_key).map_or("", String::as_str);
                if !counts[i].contains_key(value) {
                    counts[i].insert(value.to_string(), 0);
                }
            }
        }
        let weights: Vec<f64> = constraints
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let size = if c.topology_key == LABEL_HOSTNAME {
                    nodes.len() - num_ignored
                } else {
                    counts[i].len()
                };
                topology_normalizing_weight(size)
            })
            .collect();

        let required = RequiredNodeAffinity::of_pod(&pod.pod);
        let ns = pod.namespace();
        // Upstream adds countPodsMatchSelector of every eligible node to its value's count; the
        // same sum is taken over the matching pods (from the pod index) whose node is eligible.
        for (i, c) in constraints.iter().enumerate() {
            // Only values of candidate nodes are counted; hostname counts are per node.
            if counts[i].is_empty() {
                continue;
            }
            // In node order, though the sum does not depend on it.
            let mut per_node: Vec<(usize, i64)> = matching_pods_per_node(snapshot, &c.selector, ns)
                .into_iter()
                .collect();
            per_node.sort_unstable();
            for (k, matched) in per_node {
                let Some(n) = snapshot.nodes.get(k) else {
                    continue;
                };
                let node = &n.node;
                if require_all && !node_labels_match(&node.metadata.labels, &constraints) {
                    continue;
                }
                if !c.match_node_inclusion_policies(pod, node, &required) {
                    continue;
                }
                let value = node
                    .metadata
                    .labels
                    .get(&c.topology_key)
                    .map_or("", String::as_str);
                if let Some(cnt) = counts[i].get_mut(value) {
                    *cnt += matched;
                }
            }
        }
        state.write(
            PRE_SCORE_STATE_KEY,
            PreScoreState {
                constraints,
                require_all_topologies: require_all,
                ignored,
                topology_value_to_pod_counts: counts,
                topology_normalizing_weight: weights,
            },
        );
        Status::success()
    }
}

fn pre_score_state_missing() -> Status {
    Status::error(format!(
        "error reading {PRE_SCORE_STATE_KEY:?} from cycleState: not found"
    ))
}

impl ScorePlugin for PodTopologySpread {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let Some(s) = state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) else {
            return Err(pre_score_state_missing());
        };
        if s.is_ignored(&node.node) {
            return Ok(0);
        }
        let labels = node.labels();
        let mut score = 0f64;
        for (i, c) in s.constraints.iter().enumerate() {
            let Some(value) = labels.get(&c.topology_key) else {
                continue;
            };
            let cnt = if c.topology_key == LABEL_HOSTNAME {
                count_pods_match_selector(&node.pods, &c.selector, pod.namespace())
            } else {
                s.topology_value_to_pod_counts[i]
                    .get(value.as_str())
                    .copied()
                    .unwrap_or(0)
            };
            score += score_for_count(cnt, c.max_skew, s.topology_normalizing_weight[i]);
        }
        // Go's math.Round rounds half away from zero, as f64::round does.
        Ok(score.round() as i64)
    }

    fn has_normalize(&self) -> bool {
        true
    }

    fn normalize(&self, state: &CycleState, _pod: &PodInfo, scores: &mut [i64]) -> Status {
        let Some(s) = state.read::<PreScoreState>(PRE_SCORE_STATE_KEY) else {
            return pre_score_state_missing();
        };
        const INVALID_SCORE: i64 = -1;
        let mut min_score = i64::MAX;
        let mut max_score = 0i64;
        for (i, score) in scores.iter_mut().enumerate() {
            if s.ignored.get(i).copied().unwrap_or(false) {
                *score = INVALID_SCORE;
                continue;
            }
            min_score = min_score.min(*score);
            max_score = max_score.max(*score);
        }
        for score in scores.iter_mut() {
            if *score == INVALID_SCORE {
                *score = 0;
                continue;
            }
            if max_score == 0 {
                *score = MAX_NODE_SCORE;
                continue;
            }
            *score = MAX_NODE_SCORE * (max_score + min_score - *score) / max_score;
        }
        Status::success()
    }
}

/// `topologyNormalizingWeight`: `log(size + 2)`.
fn topology_normalizing_weight(size: usize) -> f64 {
    go_log((size + 2) as f64)
}

/// `scoreForCount`: `cnt * weight + (maxSkew - 1)`.
fn score_for_count(cnt: i64, max_skew: i32, weight: f64) -> f64 {
    cnt as f64 * weight + f64::from(max_skew - 1)
}

/// Go's `math.Frexp`.
fn go_frexp(f: f64) -> (f64, i32) {
    if f == 0.0 || f.is_infinite() || f.is_nan() {
        return (f, 0);
    }
    let (f, mut exp) = if f.abs() < f64::MIN_POSITIVE {
        (f * (1u64 << 52) as f64, -52)
    } else {
        (f, 0)
    };
    let mut x = f.to_bits();
    exp += ((x >> 52) & 0x7ff) as i32 - 1023 + 1;
    x &= !(0x7ffu64 << 52);
    x |= 1022u64 << 52;
    (f64::from_bits(x), exp)
}

/// Go's pure-Go `math.Log` (FreeBSD `e_log.c`), operation for operation, so results are
/// bit-identical to upstream's (amd64's assembly version evaluates the same expression).
fn go_log(x: f64) -> f64 {
    // The bit patterns fdlibm and Go's source give next to the decimal literals.
    const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
    const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
    const L1: f64 = f64::from_bits(0x3fe5_5555_5555_5593);
    const L2: f64 = f64::from_bits(0x3fd9_9999_9997_fa04);
    const L3: f64 = f64::from_bits(0x3fd2_4924_9422_9359);
    const L4: f64 = f64::from_bits(0x3fcc_71c5_1d8e_78af);
    const L5: f64 = f64::from_bits(0x3fc7_4664_96cb_03de);
    const L6: f64 = f64::from_bits(0x3fc3_9a09_d078_c69f);
    const L7: f64 = f64::from_bits(0x3fc2_f112_df3e_5244);
    if x.is_nan() || x == f64::INFINITY {
        return x;
    }
    if x < 0.0 {
        return f64::NAN;
    }
    if x == 0.0 {
        return f64::NEG_INFINITY;
    }
    let (mut f1, mut ki) = go_frexp(x);
    if f1 < std::f64::consts::SQRT_2 / 2.0 {
        f1 *= 2.0;
        ki -= 1;
    }
    let f = f1 - 1.0;
    let k = f64::from(ki);
    let s = f / (2.0 + f);
    let s2 = s * s;
    let s4 = s2 * s2;
    let t1 = s2 * (L1 + s4 * (L3 + s4 * (L5 + s4 * L7)));
    let t2 = s4 * (L2 + s4 * (L4 + s4 * L6));
    let r = t1 + t2;
    let hfsq = 0.5 * f * f;
    k * LN2_HI - ((hfsq - (s * (hfsq + r) + k * LN2_LO)) - f)
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

#[cfg(test)]
mod tests {
    use super::*;
    use ksim_api::config::Profile;
    use ksim_api::{Pod, ReplicationController, Service, WorkloadSet};
    use serde_json::json;

    fn node(name: &str, labels: &[(&str, &str)], taints: serde_json::Value) -> Arc<Node> {
        let mut l = serde_json::Map::new();
        l.insert("kubernetes.io/hostname".into(), json!(name));
        for (k, v) in labels {
            l.insert((*k).into(), json!(v));
        }
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"name": name, "labels": l},
                "spec": {"taints": taints},
            }))
            .unwrap(),
        )
    }

    fn zoned(name: &str, zone: &str) -> Arc<Node> {
        node(name, &[("topology.kubernetes.io/zone", zone)], json!([]))
    }

    fn pod(v: serde_json::Value) -> PodInfo {
        let mut p: Pod = serde_json::from_value(v).unwrap();
        if p.metadata.namespace.is_empty() {
            p.metadata.namespace = "default".into();
        }
        p.metadata.uid = format!("uid-{}", p.metadata.name);
        PodInfo::new(p)
    }

    /// A running pod `name` with labels `app: <app>` on `node`.
    fn running(name: &str, app: &str, node: &str) -> Arc<PodInfo> {
        Arc::new(pod(json!({
            "metadata": {"name": name, "labels": {"app": app}},
            "spec": {"nodeName": node},
        })))
    }

    /// The incoming pod `p` (labels app=web) with the given constraints.
    fn incoming(tsc: serde_json::Value, extra_spec: serde_json::Value) -> PodInfo {
        let mut spec = json!({ "topologySpreadConstraints": tsc });
        if let (Some(s), Some(e)) = (spec.as_object_mut(), extra_spec.as_object()) {
            for (k, v) in e {
                s.insert(k.clone(), v.clone());
            }
        }
        pod(json!({"metadata": {"name": "p", "labels": {"app": "web", "rev": "2"}}, "spec": spec}))
    }

    fn plugin(args: Option<serde_json::Value>) -> PluginRef {
        let profile = Profile::default();
        new(&FactoryArgs {
            args: args.as_ref(),
            profile: &profile,
        })
        .unwrap()
    }

    fn snapshot(
        nodes: Vec<Arc<Node>>,
        pods: Vec<Arc<PodInfo>>,
        objects: ClusterObjects,
    ) -> Snapshot {
        Snapshot::build(nodes, pods, Arc::new(objects))
    }

    /// Runs PreFilter then Filter on every node; returns (prefilter code, node → (code, reason)).
    fn filter_all(
        pl: &PluginRef,
        pod: &PodInfo,
        snap: &Snapshot,
    ) -> (crate::framework::Code, Vec<(String, String)>) {
        let mut state = CycleState::new();
        let (_, s) = pl
            .as_pre_filter()
            .unwrap()
            .pre_filter(&mut state, pod, snap);
        if !s.is_success() {
            return (s.code, Vec::new());
        }
        let f = pl.as_filter().unwrap();
        let mut out: Vec<(String, String)> = snap
            .nodes
            .iter()
            .map(|n| {
                let st = f.filter(&state, pod, n).into_status();
                (
                    n.name().to_string(),
                    format!("{} {}", st.code, st.message()),
                )
            })
            .collect();
        out.sort();
        (s.code, out)
    }

    fn zone_constraint(max_skew: i32, extra: serde_json::Value) -> serde_json::Value {
        let mut c = json!({
            "maxSkew": max_skew,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        });
        if let (Some(o), Some(e)) = (c.as_object_mut(), extra.as_object()) {
            for (k, v) in e {
                o.insert(k.clone(), v.clone());
            }
        }
        c
    }

    const OK: &str = "Success ";
    const SKEW: &str = "Unschedulable node(s) didn't match pod topology spread constraints";
    const MISSING: &str = "UnschedulableAndUnresolvable node(s) didn't match pod topology spread constraints (missing required label)";

    #[test]
    fn critical_paths_keep_the_minimum() {
        // (updates as (domain, value, count), expected [min, second])
        type Case<'a> = (&'a [(usize, &'a str, i64)], [i64; 2]);
        let cases: &[Case<'_>] = &[
            (&[(0, "a", 3), (1, "b", 1), (2, "c", 2)], [1, 2]),
            (&[(0, "a", 1), (1, "b", 1), (2, "c", 1)], [1, 1]),
            (&[(0, "a", 5)], [5, MAX_INT32]),
            // An existing path updated upwards is swapped behind the other one.
            (&[(0, "a", 1), (1, "b", 2), (0, "a", 3)], [2, 3]),
            // The empty topology value matches the initial entries, as upstream.
            (&[(0, "", 4), (1, "b", 2)], [2, 4]),
        ];
        for (updates, want) in cases {
            let mut p = CriticalPaths::new();
            for (i, v, n) in *updates {
                p.update(*i, v, *n);
            }
            assert_eq!([p.0[0].match_num, p.0[1].match_num], *want, "{updates:?}");
        }
    }

    #[test]
    fn filter_max_skew_min_domains_and_missing_label() {
        let nodes = || {
            vec![
                zoned("n1", "z1"),
                zoned("n2", "z2"),
                node("n3", &[], json!([])),
            ]
        };
        let pods = || {
            vec![
                running("a", "web", "n1"),
                running("b", "web", "n1"),
                running("c", "web", "n2"),
            ]
        };
        let cases = [
            // z1:2 z2:1 → min 1; n1 2+1-1=2 > 1.
            (zone_constraint(1, json!({})), [SKEW, OK, MISSING]),
            (zone_constraint(2, json!({})), [OK, OK, MISSING]),
            // Two domains < minDomains 3 → global minimum 0: n2 1+1-0=2 > 1.
            (
                zone_constraint(1, json!({"minDomains": 3})),
                [SKEW, SKEW, MISSING],
            ),
            (
                zone_constraint(2, json!({"minDomains": 3})),
                [SKEW, OK, MISSING],
            ),
        ];
        let pl = plugin(None);
        for (c, want) in cases {
            let snap = snapshot(nodes(), pods(), ClusterObjects::default());
            let p = incoming(json!([c]), json!({}));
            let (code, got) = filter_all(&pl, &p, &snap);
            assert_eq!(code, crate::framework::Code::Success);
            let got: Vec<&str> = got.iter().map(|(_, s)| s.as_str()).collect();
            assert_eq!(got, want, "{c}");
        }
    }

    #[test]
    fn counted_pods_exclude_other_namespaces_terminating_and_non_matching() {
        let mut other_ns = pod(json!({
            "metadata": {"name": "x", "namespace": "other", "labels": {"app": "web"}},
            "spec": {"nodeName": "n1"},
        }));
        other_ns.pod.metadata.namespace = "other".into();
        let terminating = pod(json!({
            "metadata": {"name": "t", "labels": {"app": "web"},
                         "deletionTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"nodeName": "n1"},
        }));
        let snap = snapshot(
            vec![zoned("n1", "z1"), zoned("n2", "z2")],
            vec![
                Arc::new(other_ns),
                Arc::new(terminating),
                running("d", "db", "n1"),
            ],
            ClusterObjects::default(),
        );
        let p = incoming(json!([zone_constraint(1, json!({}))]), json!({}));
        let (_, got) = filter_all(&plugin(None), &p, &snap);
        assert_eq!(got[0].1, OK);
        assert_eq!(got[1].1, OK);
    }

    #[test]
    fn node_inclusion_policies() {
        // z1 (n1) has no pod but is excluded by the pod's nodeSelector / by an untolerated
        // taint; z2 (n2) has one matching pod.
        let tainted = json!([{"key": "k", "value": "v", "effect": "NoSchedule"}]);
        let nodes = |taints: &serde_json::Value| {
            vec![
                node(
                    "n1",
                    &[("topology.kubernetes.io/zone", "z1"), ("pool", "a")],
                    taints.clone(),
                ),
                node(
                    "n2",
                    &[("topology.kubernetes.io/zone", "z2"), ("pool", "b")],
                    json!([]),
                ),
            ]
        };
        let sel = json!({"nodeSelector": {"pool": "b"}});
        let tol = json!({"tolerations": [{"key": "k", "operator": "Exists"}]});
        let cases = [
            // Honor (default): z1 not a domain, min = 1 → n2 1+1-1 = 1 passes.
            (zone_constraint(1, json!({})), sel.clone(), json!([]), OK),
            // Ignore: z1 counts with 0 → n2 2 > 1.
            (
                zone_constraint(1, json!({"nodeAffinityPolicy": "Ignore"})),
                sel,
                json!([]),
                SKEW,
            ),
            // Taints ignored by default: z1 counts.
            (
                zone_constraint(1, json!({})),
                json!({}),
                tainted.clone(),
                SKEW,
            ),
            (
                zone_constraint(1, json!({"nodeTaintsPolicy": "Honor"})),
                json!({}),
                tainted.clone(),
                OK,
            ),
            // Honor with a toleration: z1 counts again.
            (
                zone_constraint(1, json!({"nodeTaintsPolicy": "Honor"})),
                tol,
                tainted.clone(),
                SKEW,
            ),
        ];
        for (c, spec, taints, want_n2) in cases {
            let snap = snapshot(
                nodes(&taints),
                vec![running("a", "web", "n2")],
                ClusterObjects::default(),
            );
            let p = incoming(json!([c]), spec);
            let (_, got) = filter_all(&plugin(None), &p, &snap);
            assert_eq!(got[1].1, want_n2, "{c} {taints}");
        }
    }

    #[test]
    fn match_label_keys_narrow_the_selector() {
        let rev = |name: &str, r: &str, node: &str| {
            Arc::new(pod(json!({
                "metadata": {"name": name, "labels": {"app": "web", "rev": r}},
                "spec": {"nodeName": node},
            })))
        };
        let nodes = || vec![zoned("n1", "z1"), zoned("n2", "z2")];
        let pods = || {
            vec![
                rev("a", "1", "n1"),
                rev("b", "1", "n1"),
                rev("c", "2", "n2"),
            ]
        };
        // Without matchLabelKeys z1:2 z2:1 → n1 fails. With rev: only rev=2 counts → z1:0 z2:1,
        // n1 passes and n2 (1+1-0) fails.
        let cases = [
            (zone_constraint(1, json!({})), [SKEW, OK]),
            (
                zone_constraint(1, json!({"matchLabelKeys": ["rev"]})),
                [OK, SKEW],
            ),
        ];
        for (c, want) in cases {
            let snap = snapshot(nodes(), pods(), ClusterObjects::default());
            let p = incoming(json!([c]), json!({}));
            let (_, got) = filter_all(&plugin(None), &p, &snap);
            let got: Vec<&str> = got.iter().map(|(_, s)| s.as_str()).collect();
            assert_eq!(got, want);
        }
    }

    #[test]
    fn invalid_selector_is_an_error_and_no_hard_constraint_skips() {
        let snap = snapshot(vec![zoned("n1", "z1")], vec![], ClusterObjects::default());
        let bad = zone_constraint(
            1,
            json!({"labelSelector": {"matchExpressions": [{"key": "app", "operator": "In"}]}}),
        );
        let (code, _) = filter_all(&plugin(None), &incoming(json!([bad]), json!({})), &snap);
        assert_eq!(code, crate::framework::Code::Error);
        let soft = json!([{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                           "whenUnsatisfiable": "ScheduleAnyway"}]);
        let (code, _) = filter_all(&plugin(None), &incoming(soft, json!({})), &snap);
        assert_eq!(code, crate::framework::Code::Skip);
        // No constraints and nothing selecting the pod: skip as well.
        let (code, _) = filter_all(&plugin(None), &incoming(json!([]), json!({})), &snap);
        assert_eq!(code, crate::framework::Code::Skip);
    }

    #[test]
    fn default_selector_from_services_and_controller() {
        let svc: Service = serde_json::from_value(json!({
            "metadata": {"name": "s", "namespace": "default"}, "spec": {"selector": {"app": "web"}}
        }))
        .unwrap();
        let other_ns: Service = serde_json::from_value(json!({
            "metadata": {"name": "s", "namespace": "x"}, "spec": {"selector": {"app": "web"}}
        }))
        .unwrap();
        let rs: WorkloadSet = serde_json::from_value(json!({
            "metadata": {"name": "rs", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"rev": "2"}}}
        }))
        .unwrap();
        let rc: ReplicationController = serde_json::from_value(json!({
            "metadata": {"name": "rc", "namespace": "default"}, "spec": {"selector": {"tier": "f"}}
        }))
        .unwrap();
        let owned = |api: &str, kind: &str, name: &str| {
            pod(
                json!({"metadata": {"name": "p", "labels": {"app": "web", "rev": "2"},
                "ownerReferences": [{"apiVersion": api, "kind": kind, "name": name,
                                     "uid": "u", "controller": true}]}}),
            )
        };
        let plain = pod(json!({"metadata": {"name": "p", "labels": {"app": "web"}}}));
        let labels = |kv: &[(&str, &str)]| -> Labels {
            kv.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let cases: Vec<(PodInfo, ClusterObjects, Option<Labels>)> = vec![
            (
                plain.clone(),
                ClusterObjects {
                    services: vec![svc.clone()],
                    ..Default::default()
                },
                Some(labels(&[("app", "web")])),
            ),
            // A Service of another namespace and a ReplicaSet that is not the owner: nothing.
            (
                plain,
                ClusterObjects {
                    services: vec![other_ns],
                    replica_sets: vec![rs.clone()],
                    ..Default::default()
                },
                None,
            ),
            (
                owned("apps/v1", "ReplicaSet", "rs"),
                ClusterObjects {
                    replica_sets: vec![rs.clone()],
                    ..Default::default()
                },
                Some(labels(&[("rev", "2")])),
            ),
            // The owner must be apps/v1.
            (
                owned("apps/v1beta2", "ReplicaSet", "rs"),
                ClusterObjects {
                    replica_sets: vec![rs],
                    ..Default::default()
                },
                None,
            ),
            (
                owned("v1", "ReplicationController", "rc"),
                ClusterObjects {
                    services: vec![svc],
                    replication_controllers: vec![rc],
                    ..Default::default()
                },
                Some(labels(&[("app", "web"), ("tier", "f")])),
            ),
        ];
        for (p, objects, want) in cases {
            let sel = default_selector(&p, &objects);
            match want {
                None => assert!(sel.is_empty(), "{sel:?}"),
                Some(l) => {
                    assert!(sel.matches(&l), "{sel:?}");
                    let mut fewer = l.clone();
                    fewer.pop_first();
                    assert!(!sel.matches(&fewer), "{sel:?}");
                }
            }
        }
    }

    #[test]
    fn add_and_remove_pod_adjust_counts() {
        let snap = snapshot(
            vec![zoned("n1", "z1"), zoned("n2", "z2")],
            vec![running("a", "web", "n1")],
            ClusterObjects::default(),
        );
        let pl = plugin(None);
        let pf = pl.as_pre_filter().unwrap();
        let f = pl.as_filter().unwrap();
        let p = incoming(json!([zone_constraint(1, json!({}))]), json!({}));
        let mut state = CycleState::new();
        assert!(pf.pre_filter(&mut state, &p, &snap).1.is_success());
        assert!(pf.has_extensions());
        // z1:1 z2:0 → n1 fails.
        assert_eq!(
            f.filter(&state, &p, &snap.nodes[0]).code(),
            crate::framework::Code::Unschedulable
        );
        let a = snap.nodes[0].pods[0].clone();
        let mut removed = state.clone();
        assert!(pf
            .remove_pod(&mut removed, &p, &a, &snap.nodes[0], &snap)
            .is_success());
        assert!(f.filter(&removed, &p, &snap.nodes[0]).is_success());
        // A pod of another namespace changes nothing.
        let mut other = (*running("o", "web", "n2")).clone();
        other.pod.metadata.namespace = "other".into();
        let mut added = state.clone();
        assert!(pf
            .add_pod(&mut added, &p, &Arc::new(other), &snap.nodes[1], &snap)
            .is_success());
        assert!(f.filter(&added, &p, &snap.nodes[1]).is_success());
        // A matching pod on n2: z1:1 z2:1 → both pass.
        assert!(pf
            .add_pod(
                &mut added,
                &p,
                &running("b", "web", "n2"),
                &snap.nodes[1],
                &snap
            )
            .is_success());
        assert!(f.filter(&added, &p, &snap.nodes[0]).is_success());
        // The original state is untouched.
        assert!(!f.filter(&state, &p, &snap.nodes[0]).is_success());
    }

    /// PreScore + Score + NormalizeScore over every node, as the framework runs them.
    fn scores(pl: &PluginRef, pod: &PodInfo, snap: &Snapshot) -> Option<(Vec<i64>, Vec<i64>)> {
        let mut state = CycleState::new();
        // By name, so that results line up with the test tables (the snapshot interleaves zones).
        let mut nodes: Vec<&NodeInfo> = snap.nodes.iter().collect();
        nodes.sort_by(|a, b| a.name().cmp(b.name()));
        let s = pl
            .as_pre_score()
            .unwrap()
            .pre_score(&mut state, pod, &nodes, snap);
        if s.is_skip() {
            return None;
        }
        assert!(s.is_success(), "{s}");
        let sp = pl.as_score().unwrap();
        let raw: Vec<i64> = nodes
            .iter()
            .map(|n| sp.score(&state, pod, n).unwrap())
            .collect();
        let mut norm = raw.clone();
        assert!(sp.normalize(&state, pod, &mut norm).is_success());
        Some((raw, norm))
    }

    #[test]
    fn scoring_hostname_zone_and_ignored_nodes() {
        let nodes = || {
            vec![
                zoned("n1", "z1"),
                zoned("n2", "z1"),
                zoned("n3", "z2"),
                node("n4", &[], json!([])),
            ]
        };
        let pods = || {
            vec![
                running("a", "web", "n1"),
                running("b", "web", "n1"),
                running("c", "web", "n2"),
            ]
        };
        let soft = |key: &str, skew: i32| {
            json!({"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": "ScheduleAnyway",
                   "labelSelector": {"matchLabels": {"app": "web"}}})
        };
        let w3 = go_log(5.0); // hostname: 3 non-ignored nodes
        let w2 = go_log(4.0); // zone: 2 values
        let r = |x: f64| x.round() as i64;
        let cases = [
            // Hostname only: n4 lacks no key (hostname is always set), 4 nodes → log(6).
            (
                json!([soft("kubernetes.io/hostname", 1)]),
                vec![r(2.0 * go_log(6.0)), r(go_log(6.0)), 0, 0],
            ),
            // Zone: n4 is ignored; z1 has 3 pods, z2 none.
            (
                json!([soft("topology.kubernetes.io/zone", 2)]),
                vec![r(3.0 * w2 + 1.0), r(3.0 * w2 + 1.0), r(1.0), 0],
            ),
            (
                json!([
                    soft("kubernetes.io/hostname", 1),
                    soft("topology.kubernetes.io/zone", 1)
                ]),
                vec![r(2.0 * w3 + 3.0 * w2), r(w3 + 3.0 * w2), 0, 0],
            ),
        ];
        for (tsc, want_raw) in cases {
            let snap = snapshot(nodes(), pods(), ClusterObjects::default());
            let (raw, norm) =
                scores(&plugin(None), &incoming(tsc.clone(), json!({})), &snap).unwrap();
            assert_eq!(raw, want_raw, "{tsc}");
            // 100*(max+min-s)/max over non-ignored nodes; ignored nodes get 0.
            let ignored = tsc.to_string().contains("zone");
            let live: Vec<i64> = if ignored {
                raw[..3].to_vec()
            } else {
                raw.clone()
            };
            let (max, min) = (*live.iter().max().unwrap(), *live.iter().min().unwrap());
            let want_norm: Vec<i64> = raw
                .iter()
                .enumerate()
                .map(|(i, &s)| {
                    if ignored && i == 3 {
                        0
                    } else if max == 0 {
                        100
                    } else {
                        100 * (max + min - s) / max
                    }
                })
                .collect();
            assert_eq!(norm, want_norm, "{tsc}");
        }
    }

    #[test]
    fn system_defaults_score_nodes_without_zone_and_skip_without_selector() {
        let svc: Service = serde_json::from_value(json!({
            "metadata": {"name": "s", "namespace": "default"}, "spec": {"selector": {"app": "web"}}
        }))
        .unwrap();
        let nodes = || vec![zoned("n1", "z1"), node("n2", &[], json!([]))];
        let p = incoming(json!([]), json!({}));
        let snap = snapshot(
            nodes(),
            vec![running("a", "web", "n1")],
            ClusterObjects::default(),
        );
        assert!(scores(&plugin(None), &p, &snap).is_none());
        let objects = ClusterObjects {
            services: vec![svc],
            ..Default::default()
        };
        let snap = snapshot(nodes(), vec![running("a", "web", "n1")], objects);
        let (raw, norm) = scores(&plugin(None), &p, &snap).unwrap();
        // Hostname (maxSkew 3) over 2 nodes, zone (maxSkew 5) over {"z1", ""}: n2 is not
        // ignored (system defaulting) and only gets the hostname term.
        let (wh, wz) = (go_log(4.0), go_log(4.0));
        assert_eq!(raw, vec![(wh + 2.0 + wz + 4.0).round() as i64, 2]);
        assert_eq!(norm[1], 100);
        // Defaults never apply to DoNotSchedule with System defaulting: Filter is skipped.
        let (code, _) = filter_all(&plugin(None), &p, &snap);
        assert_eq!(code, crate::framework::Code::Skip);
    }

    #[test]
    fn list_defaulting_args() {
        let list = json!({"defaultingType": "List", "defaultConstraints": [
            {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule"}]});
        let profile = Profile::default();
        let mk = |v: serde_json::Value| {
            new(&FactoryArgs {
                args: Some(&v),
                profile: &profile,
            })
            .map(|_| ())
        };
        assert!(mk(list.clone()).is_ok());
        assert!(mk(json!({"defaultingType": "List"})).is_ok());
        let mut system = list.clone();
        system["defaultingType"] = json!("System");
        assert!(mk(system).is_err());
        let mut bad = list.clone();
        bad["defaultConstraints"][0]["whenUnsatisfiable"] = json!("Maybe");
        assert!(mk(bad).is_err());
        let mut sel = list.clone();
        sel["defaultConstraints"][0]["labelSelector"] = json!({});
        assert!(mk(sel).is_err());

        let pl = plugin(Some(list));
        let svc: Service = serde_json::from_value(json!({
            "metadata": {"name": "s", "namespace": "default"}, "spec": {"selector": {"app": "web"}}
        }))
        .unwrap();
        let snap = snapshot(
            vec![zoned("n1", "z1"), zoned("n2", "z2")],
            vec![running("a", "web", "n1")],
            ClusterObjects {
                services: vec![svc],
                ..Default::default()
            },
        );
        let (_, got) = filter_all(&pl, &incoming(json!([]), json!({})), &snap);
        assert_eq!(got[0].1, SKEW);
        assert_eq!(got[1].1, OK);
    }

    #[test]
    fn go_log_matches_the_platform_log_on_small_sizes() {
        for n in 2..=5002u32 {
            let x = f64::from(n);
            assert!((go_log(x) - x.ln()).abs() <= f64::EPSILON * 8.0, "{n}");
        }
        assert_eq!(go_log(1.0), 0.0);
        // The bit patterns are Go's decimal constants.
        for (dec, bits) in [
            ("6.93147180369123816490e-01", 0x3fe6_2e42_fee0_0000u64),
            ("1.90821492927058770002e-10", 0x3dea_39ef_3579_3c76),
            ("6.666666666666735130e-01", 0x3fe5_5555_5555_5593),
            ("3.999999999940941908e-01", 0x3fd9_9999_9997_fa04),
            ("2.857142874366239149e-01", 0x3fd2_4924_9422_9359),
            ("2.222219843214978396e-01", 0x3fcc_71c5_1d8e_78af),
            ("1.818357216161805012e-01", 0x3fc7_4664_96cb_03de),
            ("1.531383769920937332e-01", 0x3fc3_9a09_d078_c69f),
            ("1.479819860511658591e-01", 0x3fc2_f112_df3e_5244),
        ] {
            assert_eq!(dec.parse::<f64>().unwrap().to_bits(), bits, "{dec}");
        }
        assert_eq!(go_frexp(8.0), (0.5, 4));
    }

    #[test]
    fn queueing_hints() {
        let pl = plugin(None);
        let ext = pl.as_enqueue_extensions().unwrap();
        let p = incoming(
            json!([zone_constraint(1, json!({"nodeTaintsPolicy": "Honor"}))]),
            json!({}),
        );
        let web = running("a", "web", "n1");
        let db = running("d", "db", "n1");
        let unassigned = pod(json!({"metadata": {"name": "u", "labels": {"app": "web"}}}));
        let pods = |old: Option<&PodInfo>, new: Option<&PodInfo>| {
            ext.hint(
                &p,
                ClusterEventKind::AssignedPodAdd,
                &ClusterEventObjects::Pod { old, new },
            )
        };
        assert_eq!(pods(None, Some(&web)), QueueingHint::Queue);
        assert_eq!(pods(None, Some(&db)), QueueingHint::Skip);
        assert_eq!(pods(Some(&web), None), QueueingHint::Queue);
        assert_eq!(pods(None, Some(&unassigned)), QueueingHint::Skip);
        assert_eq!(pods(Some(&db), Some(&web)), QueueingHint::Queue);
        assert_eq!(pods(Some(&web), Some(&web)), QueueingHint::Skip);
        // The pod itself got a toleration, and a constraint honours taints.
        let mut tolerant = p.clone();
        tolerant.pod.spec.tolerations = vec![Default::default()];
        assert_eq!(pods(Some(&p), Some(&tolerant)), QueueingHint::Queue);

        let n = |labels: &[(&str, &str)], taints: serde_json::Value| node("n", labels, taints);
        let z1 = n(&[("topology.kubernetes.io/zone", "z1")], json!([]));
        let z2 = n(&[("topology.kubernetes.io/zone", "z2")], json!([]));
        let z1x = n(
            &[("topology.kubernetes.io/zone", "z1"), ("x", "y")],
            json!([]),
        );
        let bare = n(&[], json!([]));
        let z1t = n(
            &[("topology.kubernetes.io/zone", "z1")],
            json!([{"key": "k", "effect": "NoSchedule"}]),
        );
        let nodes = |old: Option<&Node>, new: Option<&Node>| {
            ext.hint(
                &p,
                ClusterEventKind::NodeUpdateLabel,
                &ClusterEventObjects::Node { old, new },
            )
        };
        assert_eq!(nodes(None, Some(&z1)), QueueingHint::Queue);
        assert_eq!(nodes(None, Some(&bare)), QueueingHint::Skip);
        assert_eq!(nodes(Some(&z1), None), QueueingHint::Queue);
        assert_eq!(nodes(Some(&z1), Some(&z2)), QueueingHint::Queue);
        assert_eq!(nodes(Some(&z1), Some(&z1x)), QueueingHint::Skip);
        assert_eq!(nodes(Some(&bare), Some(&z1)), QueueingHint::Queue);
        assert_eq!(nodes(Some(&z1), Some(&z1t)), QueueingHint::Queue);
        assert!(ext.events().contains(&ClusterEventKind::NodeUpdateTaint));
    }
}
