//! The admission objects (LimitRange, ResourceQuota) and the pure parts of the admission plugins
//! that change where and whether pods run, as upstream v1.35's `plugin/pkg/admission` does them:
//!
//! - `defaulttolerationseconds` ([`default_toleration_seconds`]): every pod tolerates
//!   `node.kubernetes.io/not-ready` and `node.kubernetes.io/unreachable` (`NoExecute`) for
//!   `--default-not-ready-toleration-seconds` / `--default-unreachable-toleration-seconds`
//!   (300 s each) unless it already tolerates them;
//! - `limitranger` ([`limit_range_mutate`], [`limit_range_validate`]): a namespace's
//!   LimitRanges give containers their `default` limits and `defaultRequest` requests
//!   (`PodMutateLimitFunc`), then refuse pods outside `min`, `max` and `maxLimitRequestRatio`
//!   (`PodValidateLimitFunc`), for `Container` and `Pod` items; LimitRange defaulting is
//!   `SetDefaults_LimitRangeItem`;
//! - `resourcequota` ([`pod_usage`], [`quota_check`]): the pod evaluator's usage
//!   (`pkg/quota/v1/evaluator/core/pods.go` `PodUsageFunc`) and the admission check
//!   (`CheckRequest`): `exceeded quota: ...` and `failed quota: ...: must specify ...`.
//!
//! The engine holds the objects and calls these on every pod it creates.

use serde::{Deserialize, Serialize};

use crate::core::{Pod, ResourceList, Toleration};
use crate::meta::ObjectMeta;
use crate::quantity::Quantity;

/// `v1.LimitRange`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LimitRange {
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub kind: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub metadata: ObjectMeta,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub spec: LimitRangeSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LimitRangeSpec {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub limits: Vec<LimitRangeItem>,
}

/// `v1.LimitRangeItem`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LimitRangeItem {
    /// `Container`, `Pod` or `PersistentVolumeClaim`.
    #[serde(rename = "type")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub type_: String,
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub max: ResourceList,
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub min: ResourceList,
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub default: ResourceList,
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub default_request: ResourceList,
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub max_limit_request_ratio: ResourceList,
}

/// `v1.ResourceQuota`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceQuota {
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub kind: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub metadata: ObjectMeta,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub spec: ResourceQuotaSpec,
    /// Read but not trusted: the engine computes `used` from the pods it has (as the quota
    /// controller would).
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub status: ResourceQuotaStatus,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceQuotaSpec {
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub hard: ResourceList,
    /// `Terminating`, `NotTerminating`, `BestEffort`, `NotBestEffort`,
    /// `CrossNamespacePodAffinity` (`PriorityClass` only in a `scopeSelector`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub scopes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scope_selector: Option<ScopeSelector>,
}

/// A quota's `scopeSelector`: every requirement must match the pod.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ScopeSelector {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub match_expressions: Vec<ScopedResourceSelectorRequirement>,
}

/// One `scopeSelector` requirement: a scope name, an operator (`In`, `NotIn`, `Exists`,
/// `DoesNotExist`) and values.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ScopedResourceSelectorRequirement {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub scope_name: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub operator: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub values: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceQuotaStatus {
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub hard: ResourceList,
    #[serde(skip_serializing_if = "ResourceList::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub used: ResourceList,
}

// ---- DefaultTolerationSeconds ---------------------------------------------------------------

/// The taint the node lifecycle controller puts on a node whose Ready condition is False.
pub const TAINT_NOT_READY: &str = "node.kubernetes.io/not-ready";
/// The taint it puts on a node whose Ready condition is Unknown (the kubelet stopped posting).
pub const TAINT_UNREACHABLE: &str = "node.kubernetes.io/unreachable";
/// `--default-not-ready-toleration-seconds` and `--default-unreachable-toleration-seconds`.
pub const DEFAULT_TOLERATION_SECONDS: i64 = 300;

/// upstream `defaulttolerationseconds` `Admit`: adds `{key, operator: Exists, effect:
/// NoExecute, tolerationSeconds}` for not-ready and unreachable, each unless a toleration
/// already names the key with an empty or `NoExecute` effect.
pub fn default_toleration_seconds(pod: &mut Pod, not_ready_secs: i64, unreachable_secs: i64) {
    let has = |key: &str, tols: &[Toleration]| {
        tols.iter()
            .any(|t| (t.effect.is_empty() || t.effect == "NoExecute") && t.key == key)
    };
    let need_not_ready = !has(TAINT_NOT_READY, &pod.spec.tolerations);
    let need_unreachable = !has(TAINT_UNREACHABLE, &pod.spec.tolerations);
    for (need, key, secs) in [
        (need_not_ready, TAINT_NOT_READY, not_ready_secs),
        (need_unreachable, TAINT_UNREACHABLE, unreachable_secs),
    ] {
        if need {
            pod.spec.tolerations.push(Toleration {
                key: key.to_string(),
                operator: "Exists".into(),
                value: String::new(),
                effect: "NoExecute".into(),
                toleration_seconds: Some(secs),
            });
        }
    }
}

// ---- LimitRanger ----------------------------------------------------------------------------

/// upstream `SetDefaults_LimitRangeItem`: for a `Container` item, a missing `default` takes
/// `max`, a missing `defaultRequest` takes `default`, then `min`. Idempotent.
pub fn default_limit_range_item(item: &mut LimitRangeItem) {
    if item.type_ != "Container" {
        return;
    }
    for (k, v) in item.max.clone() {
        item.default.entry(k).or_insert(v);
    }
    for (k, v) in item.default.clone() {
        item.default_request.entry(k).or_insert(v);
    }
    for (k, v) in item.min.clone() {
        item.default_request.entry(k).or_insert(v);
    }
}

/// The annotation LimitRanger writes on a pod it changed.
pub const LIMIT_RANGER_ANNOTATION: &str = "kubernetes.io/limit-ranger";

/// upstream `PodMutateLimitFunc`: every container and init container gets the `Container`
/// items' `default` limits and `defaultRequest` requests it lacks (a later item of the same
/// LimitRange overrides an earlier one), and the pod is annotated with what was set.
pub fn limit_range_mutate(lr: &LimitRange, pod: &mut Pod) {
    let mut req = ResourceList::new();
    let mut lim = ResourceList::new();
    for item in lr.spec.limits.iter().filter(|i| i.type_ == "Container") {
        for (k, v) in &item.default_request {
            req.insert(k.clone(), v.clone());
        }
        for (k, v) in &item.default {
            lim.insert(k.clone(), v.clone());
        }
    }
    let mut notes: Vec<String> = Vec::new();
    let spec = &mut pod.spec;
    for (prefix, list) in [
        ("container", &mut spec.containers),
        ("init container", &mut spec.init_containers),
    ] {
        for c in list.iter_mut() {
            let mut set_lim: Vec<String> = Vec::new();
            let mut set_req: Vec<String> = Vec::new();
            for (k, v) in &lim {
                if !c.resources.limits.contains_key(k) {
                    c.resources.limits.insert(k.clone(), v.clone());
                    set_lim.push(k.clone());
                }
            }
            for (k, v) in &req {
                if !c.resources.requests.contains_key(k) {
                    c.resources.requests.insert(k.clone(), v.clone());
                    set_req.push(k.clone());
                }
            }
            if !set_req.is_empty() {
                notes.push(format!(
                    "{} request for {prefix} {}",
                    set_req.join(", "),
                    c.name
                ));
            }
            if !set_lim.is_empty() {
                notes.push(format!(
                    "{} limit for {prefix} {}",
                    set_lim.join(", "),
                    c.name
                ));
            }
        }
    }
    if !notes.is_empty() {
        pod.metadata.annotations.insert(
            LIMIT_RANGER_ANNOTATION.into(),
            format!("LimitRanger plugin set: {}", notes.join("; ")),
        );
    }
}

/// `requestLimitEnforcedValues`: milli-values when none overflows, else values.
fn enforced_values(
    req: Option<&Quantity>,
    lim: Option<&Quantity>,
    enf: &Quantity,
) -> (i64, i64, i64) {
    const MAX_MILLI: i64 = i64::MAX / 1000;
    let v = |q: Option<&Quantity>| q.map_or(0, Quantity::value);
    let m = |q: Option<&Quantity>| q.map_or(0, Quantity::milli_value);
    if v(req) <= MAX_MILLI && v(lim) <= MAX_MILLI && enf.value() <= MAX_MILLI {
        (m(req), m(lim), enf.milli_value())
    } else {
        (v(req), v(lim), enf.value())
    }
}

/// A quantity as Go's `Quantity.String()` prints it, for the forms LimitRanges use: a
/// decimal fraction without suffix is canonicalised to millis (`1.5` prints `1500m`); other
/// text is kept as written.
fn canon(q: &Quantity) -> String {
    let t = q.as_str();
    if t.contains('.') && t.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        Quantity::from_milli(q.milli_value()).to_string()
    } else {
        t.to_string()
    }
}

fn min_constraint(
    t: &str,
    r: &str,
    enf: &Quantity,
    req: &ResourceList,
    lim: &ResourceList,
) -> Option<String> {
    let (rq, lq) = (req.get(r), lim.get(r));
    let es = canon(enf);
    let (ov, ol, e) = enforced_values(rq, lq, enf);
    let Some(rq) = rq else {
        return Some(format!(
            "minimum {r} usage per {t} is {es}.  No request is specified"
        ));
    };
    if ov < e {
        return Some(format!(
            "minimum {r} usage per {t} is {es}, but request is {rq}"
        ));
    }
    match lq {
        Some(lq) if ol < e => Some(format!(
            "minimum {r} usage per {t} is {es}, but limit is {lq}"
        )),
        _ => None,
    }
}

fn max_constraint(
    t: &str,
    r: &str,
    enf: &Quantity,
    req: &ResourceList,
    lim: &ResourceList,
) -> Option<String> {
    let (rq, lq) = (req.get(r), lim.get(r));
    let es = canon(enf);
    let (ov, ol, e) = enforced_values(rq, lq, enf);
    let Some(lq) = lq else {
        return Some(format!(
            "maximum {r} usage per {t} is {es}.  No limit is specified"
        ));
    };
    if ol > e {
        return Some(format!(
            "maximum {r} usage per {t} is {es}, but limit is {lq}"
        ));
    }
    match rq {
        Some(rq) if ov > e => Some(format!(
            "maximum {r} usage per {t} is {es}, but request is {rq}"
        )),
        _ => None,
    }
}

fn ratio_constraint(
    t: &str,
    r: &str,
    enf: &Quantity,
    req: &ResourceList,
    lim: &ResourceList,
) -> Option<String> {
    let (rq, lq) = (req.get(r), lim.get(r));
    let es = canon(enf);
    let (ov, ol, _) = enforced_values(rq, lq, enf);
    if rq.is_none() || ov == 0 {
        return Some(format!(
            "{r} max limit to request ratio per {t} is {es}, but no request is specified or request is 0"
        ));
    }
    if lq.is_none() || ol == 0 {
        return Some(format!(
            "{r} max limit to request ratio per {t} is {es}, but no limit is specified or limit is 0"
        ));
    }
    let shown = ol as f64 / ov as f64;
    let (observed, max) = if enf.value() <= i64::MAX / 1000 {
        (shown * 1000.0, enf.milli_value() as f64)
    } else {
        (shown, enf.value() as f64)
    };
    (observed > max).then(|| {
        format!("{r} max limit to request ratio per {t} is {es}, but provided ratio is {shown:.6}")
    })
}

/// Adds `add` into `into` (cpu in millis, others in units, as upstream's `sum`).
fn add_list(into: &mut std::collections::BTreeMap<String, i64>, add: &ResourceList) {
    for (k, v) in add {
        *into.entry(k.clone()).or_insert(0) += if k == "cpu" {
            v.milli_value()
        } else {
            v.value()
        };
    }
}

fn to_list(m: std::collections::BTreeMap<String, i64>) -> ResourceList {
    m.into_iter()
        .map(|(k, v)| {
            let q = if k == "cpu" {
                Quantity::from_milli(v)
            } else {
                Quantity::from_value(v)
            };
            (k, q)
        })
        .collect()
}

/// The pod's requests or limits as the LimitRanger's `podRequests`/`podLimits` compute them:
/// the containers' sum, raised to the largest init container's (sidecar init containers are
/// counted as ordinary init containers: a simplification).
fn pod_total(pod: &Pod, limits: bool) -> ResourceList {
    let pick = |c: &crate::core::Container| {
        if limits {
            c.resources.limits.clone()
        } else {
            c.resources.requests.clone()
        }
    };
    let mut sum = std::collections::BTreeMap::new();
    for c in &pod.spec.containers {
        add_list(&mut sum, &pick(c));
    }
    for c in &pod.spec.init_containers {
        let mut one = std::collections::BTreeMap::new();
        add_list(&mut one, &pick(c));
        for (k, v) in one {
            let e = sum.entry(k).or_insert(0);
            *e = (*e).max(v);
        }
    }
    to_list(sum)
}

/// upstream `PodValidateLimitFunc`: the messages of every constraint the pod breaks (empty
/// when it passes), in the LimitRange's item order, then resource name order.
pub fn limit_range_validate(lr: &LimitRange, pod: &Pod) -> Vec<String> {
    let mut errs = Vec::new();
    for item in &lr.spec.limits {
        let t = item.type_.as_str();
        let mut check = |req: &ResourceList, lim: &ResourceList| {
            for (k, v) in &item.min {
                errs.extend(min_constraint(t, k, v, req, lim));
            }
            for (k, v) in &item.max {
                errs.extend(max_constraint(t, k, v, req, lim));
            }
            for (k, v) in &item.max_limit_request_ratio {
                errs.extend(ratio_constraint(t, k, v, req, lim));
            }
        };
        match t {
            "Container" => {
                for c in pod.spec.containers.iter().chain(&pod.spec.init_containers) {
                    check(&c.resources.requests, &c.resources.limits);
                }
            }
            "Pod" => check(&pod_total(pod, false), &pod_total(pod, true)),
            _ => {}
        }
    }
    errs
}

// ---- ResourceQuota --------------------------------------------------------------------------

/// Whether a pod is `BestEffort` (no container requests or limits cpu or memory).
fn best_effort(pod: &Pod) -> bool {
    pod.spec
        .containers
        .iter()
        .chain(&pod.spec.init_containers)
        .all(|c| {
            ["cpu", "memory"].iter().all(|r| {
                !c.resources.requests.contains_key(*r) && !c.resources.limits.contains_key(*r)
            })
        })
}

/// upstream `isTerminating`: the pod has `activeDeadlineSeconds` >= 0.
fn terminating(pod: &Pod) -> bool {
    pod.spec.active_deadline_seconds.is_some_and(|d| d >= 0)
}

/// upstream `usesCrossNamespacePodAffinity`: an affinity or anti-affinity term, required or
/// preferred, naming `namespaces` or a `namespaceSelector`.
fn uses_cross_namespace_pod_affinity(pod: &Pod) -> bool {
    let Some(a) = &pod.spec.affinity else {
        return false;
    };
    let cross = |t: &crate::core::PodAffinityTerm| {
        !t.namespaces.is_empty() || t.namespace_selector.is_some()
    };
    [&a.pod_affinity, &a.pod_anti_affinity]
        .into_iter()
        .flatten()
        .any(|p| {
            p.required.iter().any(cross) || p.preferred.iter().any(|w| cross(&w.pod_affinity_term))
        })
}

/// upstream `podMatchesScopeFunc`: whether one scope requirement matches the pod. A
/// `PriorityClass` requirement is a label selector on the key `PriorityClass` over the pod's
/// class (no label when it has none); the other scopes ignore operator and values.
pub fn pod_matches_scope(req: &ScopedResourceSelectorRequirement, pod: &Pod) -> bool {
    let class = pod.spec.priority_class_name.as_str();
    match req.scope_name.as_str() {
        "Terminating" => terminating(pod),
        "NotTerminating" => !terminating(pod),
        "BestEffort" => best_effort(pod),
        "NotBestEffort" => !best_effort(pod),
        "CrossNamespacePodAffinity" => uses_cross_namespace_pod_affinity(pod),
        "PriorityClass" => match req.operator.as_str() {
            "In" => !class.is_empty() && req.values.iter().any(|v| v == class),
            "NotIn" => class.is_empty() || !req.values.iter().any(|v| v == class),
            "DoesNotExist" => class.is_empty(),
            // `Exists`, and an empty operator (upstream checks existence first).
            _ => !class.is_empty(),
        },
        _ => false,
    }
}

/// upstream `getScopeSelectorsFromQuota`: `spec.scopes` as `Exists` requirements, then the
/// `scopeSelector`'s.
fn quota_selectors(q: &ResourceQuota) -> Vec<ScopedResourceSelectorRequirement> {
    let mut out: Vec<ScopedResourceSelectorRequirement> = q
        .spec
        .scopes
        .iter()
        .map(|s| ScopedResourceSelectorRequirement {
            scope_name: s.clone(),
            operator: "Exists".into(),
            values: Vec::new(),
        })
        .collect();
    if let Some(sel) = &q.spec.scope_selector {
        out.extend(sel.match_expressions.iter().cloned());
    }
    out
}

/// Whether the quota applies to the pod: every scope requirement matches (upstream
/// `MatchesScope` over `getScopeSelectorsFromQuota`).
pub fn quota_matches(q: &ResourceQuota, pod: &Pod) -> bool {
    quota_selectors(q).iter().all(|r| pod_matches_scope(r, pod))
}

/// upstream's standard ResourceQuota scopes (`IsStandardResourceQuotaScope`).
pub const QUOTA_SCOPES: [&str; 6] = [
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
];

/// The API server's checks of a quota's scopes (`ValidateResourceQuotaSpec`'s scope and
/// scope selector checks, reduced to what reaches pods): `(field, message)`.
pub fn check_quota(q: &ResourceQuota) -> Result<(), (String, String)> {
    for (i, s) in q.spec.scopes.iter().enumerate() {
        if !QUOTA_SCOPES.contains(&s.as_str()) {
            return Err((
                format!("spec.scopes[{i}]"),
                format!(
                    "unsupported scope {s:?} (supported: {})",
                    QUOTA_SCOPES.join(", ")
                ),
            ));
        }
    }
    let Some(sel) = &q.spec.scope_selector else {
        return Ok(());
    };
    for (i, r) in sel.match_expressions.iter().enumerate() {
        let path = format!("spec.scopeSelector.matchExpressions[{i}]");
        if !QUOTA_SCOPES.contains(&r.scope_name.as_str()) {
            return Err((
                format!("{path}.scopeName"),
                format!("unsupported scope {:?}", r.scope_name),
            ));
        }
        if r.scope_name != "PriorityClass" && r.operator != "Exists" {
            return Err((
                format!("{path}.operator"),
                "must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, \
                 ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, \
                 ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"
                    .into(),
            ));
        }
        match r.operator.as_str() {
            "In" | "NotIn" if r.values.is_empty() => {
                return Err((
                    format!("{path}.values"),
                    "must be at least one value when `operator` is 'In' or 'NotIn' for scope \
                     selector"
                        .into(),
                ))
            }
            "Exists" | "DoesNotExist" if !r.values.is_empty() => {
                return Err((
                    format!("{path}.values"),
                    "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope \
                     selector"
                        .into(),
                ))
            }
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => {
                return Err((
                    format!("{path}.operator"),
                    format!(
                        "Unsupported value: {other:?}: supported values: \"DoesNotExist\", \
                         \"Exists\", \"In\", \"NotIn\""
                    ),
                ))
            }
        }
    }
    Ok(())
}

/// upstream `PodUsageFunc` for a pod that is not terminal: `pods` and `count/pods` 1,
/// `requests.*` (and the bare `cpu`, `memory`, `ephemeral-storage`) from the pod's requests,
/// `limits.*` from its limits (containers summed, raised to the largest init container, plus
/// `spec.overhead`), extended resources as `requests.<name>`. Values in millis for every
/// resource (compared as quantities).
pub fn pod_usage(pod: &Pod) -> std::collections::BTreeMap<String, i64> {
    let mut out = std::collections::BTreeMap::new();
    out.insert("pods".to_string(), 1000);
    out.insert("count/pods".to_string(), 1000);
    let milli = |l: &ResourceList| -> std::collections::BTreeMap<String, i64> {
        l.iter()
            .map(|(k, v)| (k.clone(), v.milli_value()))
            .collect()
    };
    let mut req = milli(&pod_total_milli(pod, false));
    let mut lim = milli(&pod_total_milli(pod, true));
    for (k, v) in &pod.spec.overhead {
        *req.entry(k.clone()).or_insert(0) += v.milli_value();
        if lim.contains_key(k) {
            *lim.entry(k.clone()).or_insert(0) += v.milli_value();
        }
    }
    for (k, v) in req {
        if matches!(k.as_str(), "cpu" | "memory" | "ephemeral-storage") {
            out.insert(k.clone(), v);
        }
        out.insert(format!("requests.{k}"), v);
    }
    for (k, v) in lim {
        if matches!(k.as_str(), "cpu" | "memory" | "ephemeral-storage") {
            out.insert(format!("limits.{k}"), v);
        }
    }
    out
}

/// [`pod_total`] with every resource in millis (quota compares memory too at milli precision).
fn pod_total_milli(pod: &Pod, limits: bool) -> ResourceList {
    let mut sum: std::collections::BTreeMap<String, i64> = std::collections::BTreeMap::new();
    let pick = |c: &crate::core::Container| {
        if limits {
            c.resources.limits.clone()
        } else {
            c.resources.requests.clone()
        }
    };
    for c in &pod.spec.containers {
        for (k, v) in &pick(c) {
            *sum.entry(k.clone()).or_insert(0) += v.milli_value();
        }
    }
    for c in &pod.spec.init_containers {
        for (k, v) in &pick(c) {
            let e = sum.entry(k.clone()).or_insert(0);
            *e = (*e).max(v.milli_value());
        }
    }
    sum.into_iter()
        .map(|(k, v)| (k, Quantity::from_milli(v)))
        .collect()
}

/// A milli amount as a quantity prints (`500m`, `2`, `1Gi` stays a plain number of bytes).
fn show(v: i64) -> String {
    Quantity::from_milli(v).to_string()
}

/// One exceeded resource: its name, the pod's usage, the quota's usage, the hard limit.
type Exceeded = (String, i64, i64, Quantity);

/// upstream `CheckRequest` for one quota and one new pod in its namespace and scopes, with
/// `used` the quota's usage before the pod: `Err` with upstream's message (without the
/// `pods "x" is forbidden: ` prefix) when the pod is refused, else the usage to add.
pub fn quota_check(
    q: &ResourceQuota,
    used: &std::collections::BTreeMap<String, i64>,
    pod: &Pod,
) -> Result<std::collections::BTreeMap<String, i64>, String> {
    // Constraints: a container must state what a quota on cpu or memory restricts.
    let restricted: Vec<&str> = [
        "cpu",
        "memory",
        "requests.cpu",
        "requests.memory",
        "limits.cpu",
        "limits.memory",
    ]
    .into_iter()
    .filter(|r| q.spec.hard.contains_key(*r))
    .collect();
    if !restricted.is_empty() {
        let mut missing = std::collections::BTreeSet::new();
        for c in pod.spec.containers.iter().chain(&pod.spec.init_containers) {
            for r in &restricted {
                let (list, name) = match r.split_once('.') {
                    Some(("limits", n)) => (&c.resources.limits, n),
                    Some((_, n)) => (&c.resources.requests, n),
                    None => (&c.resources.requests, *r),
                };
                if !list.contains_key(name) {
                    missing.insert(r.to_string());
                }
            }
        }
        if !missing.is_empty() {
            let m: Vec<String> = missing.into_iter().collect();
            return Err(format!(
                "failed quota: {}: must specify {}",
                q.metadata.name,
                m.join(",")
            ));
        }
    }
    let usage = pod_usage(pod);
    let mut exceeded = Vec::new();
    for (r, hard) in &q.spec.hard {
        let Some(add) = usage.get(r) else { continue };
        let now = used.get(r).copied().unwrap_or(0);
        if now + add > hard.milli_value() {
            exceeded.push((r.clone(), *add, now, hard.clone()));
        }
    }
    if exceeded.is_empty() {
        return Ok(usage
            .into_iter()
            .filter(|(k, _)| q.spec.hard.contains_key(k))
            .collect());
    }
    let list = |f: &dyn Fn(&Exceeded) -> String| {
        exceeded
            .iter()
            .map(|e| format!("{}={}", e.0, f(e)))
            .collect::<Vec<_>>()
            .join(",")
    };
    Err(format!(
        "exceeded quota: {}, requested: {}, used: {}, limited: {}",
        q.metadata.name,
        list(&|e| show(e.1)),
        list(&|e| show(e.2)),
        list(&|e| e.3.to_string()),
    ))
}

#[cfg(test)]
mod tests;
