//! Workload controllers' objects: `apps/v1` Deployment, ReplicaSet, StatefulSet, DaemonSet and
//! `batch/v1` Job, as the engine's controllers (`ksim-engine/src/sim/controllers/`) read them.
//!
//! One [`Workload`] type holds every kind: the fields the kinds share (replicas, selector, pod
//! template) and the few each kind adds (a Deployment's strategy, a StatefulSet's pod
//! management policy and claim templates, a Job's parallelism, completions and backoff limit).
//! Fields ksim does not model are ignored, so published manifests read as they are.
//!
//! [`validate`] refuses what the API server's validation refuses and the controllers depend on:
//! a negative count, a missing or empty selector (apps/v1), a selector that does not match the
//! template's labels. Errors name the field path.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::core::PodSpec;
use crate::meta::{LabelSelector, ObjectMeta, Selector};
use crate::storage::PersistentVolumeClaim;

/// A Deployment, ReplicaSet, StatefulSet, DaemonSet or Job (the kind is the [`crate::object::ApiObject`]
/// variant holding it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Workload {
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub kind: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub metadata: ObjectMeta,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub spec: WorkloadSpec,
}

/// The union of the modelled spec fields of the five kinds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WorkloadSpec {
    /// Deployment, ReplicaSet, StatefulSet: desired pods (defaults to 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub template: PodTemplateSpec,
    /// Deployment: `RollingUpdate` (default) or `Recreate`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub strategy: Option<DeploymentStrategy>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_ready_seconds: Option<i32>,
    /// Deployment: while true the controller scales but does not roll out a new template.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,
    /// DaemonSet, StatefulSet: `RollingUpdate` (default) or `OnDelete`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub update_strategy: Option<UpdateStrategy>,
    /// StatefulSet: `OrderedReady` (default) or `Parallel`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_management_policy: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub volume_claim_templates: Vec<PersistentVolumeClaim>,
    /// Job: pods running at once (default 1).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<i32>,
    /// Job: successes needed (default: parallelism... upstream: 1 when both unset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completions: Option<i32>,
    /// Job: failures tolerated (default 6; `i32::MAX` with `backoffLimitPerIndex`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backoff_limit: Option<i32>,
    /// Job: seconds from its start after which it fails (`DeadlineExceeded`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active_deadline_seconds: Option<i64>,
    /// Job: `NonIndexed` (default) or `Indexed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_mode: Option<String>,
    /// Job (Indexed): failures tolerated per index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backoff_limit_per_index: Option<i32>,
    /// Job (with `backoffLimitPerIndex`): failed indexes tolerated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_failed_indexes: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_failure_policy: Option<PodFailurePolicy>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub success_policy: Option<SuccessPolicy>,
    /// Job: `TerminatingOrFailed` (default without a `podFailurePolicy`) or `Failed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_replacement_policy: Option<String>,
    /// Job: deleted this long after it finished (the TTL-after-finished controller).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<i32>,
    /// CronJob: a standard 5-field cron schedule (or `@hourly`, `@daily`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// CronJob: the IANA time zone its schedule runs in (default: UTC).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// CronJob: `Allow` (default), `Forbid` or `Replace`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrency_policy: Option<String>,
    /// CronJob: no new Jobs while true. Job: no pods while true (its active pods are deleted).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// CronJob: a run later than this after its scheduled time is skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub starting_deadline_seconds: Option<i64>,
    /// CronJob: finished Jobs kept, the oldest deleted beyond (the API server's defaults: 3
    /// succeeded, 1 failed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub successful_jobs_history_limit: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failed_jobs_history_limit: Option<i32>,
    /// CronJob: the Job each run creates.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job_template: Option<Box<JobTemplateSpec>>,
}

/// A Job's `spec.podFailurePolicy`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodFailurePolicy {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub rules: Vec<PodFailurePolicyRule>,
}

/// One rule: `action` (`FailJob`, `FailIndex`, `Ignore`, `Count`) when the failed pod matches
/// `onExitCodes` or one of `onPodConditions`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodFailurePolicyRule {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub action: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on_exit_codes: Option<OnExitCodes>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub on_pod_conditions: Vec<OnPodCondition>,
}

/// `onExitCodes`: `operator` `In` or `NotIn` over `values`, of `containerName` or any container.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OnExitCodes {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container_name: Option<String>,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub operator: String,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub values: Vec<i32>,
}

/// `onPodConditions[]`: a condition `type` with `status` (default `True`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OnPodCondition {
    #[serde(rename = "type")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub type_: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// A Job's `spec.successPolicy` (Indexed Jobs).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SuccessPolicy {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub rules: Vec<SuccessPolicyRule>,
}

/// One rule: met when the indexes of `succeededIndexes` (`"0-2,5"`; all indexes when absent)
/// have at least `succeededCount` (all of them when absent) succeeded.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SuccessPolicyRule {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub succeeded_indexes: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub succeeded_count: Option<i32>,
}

/// Parses an index set as upstream writes `completedIndexes` / `succeededIndexes`:
/// `"1,3-5,7"`, ascending and not overlapping, each below `completions`.
pub fn parse_index_set(text: &str, completions: i32) -> Result<Vec<(i32, i32)>, String> {
    let mut out: Vec<(i32, i32)> = Vec::new();
    if text.is_empty() {
        return Ok(out);
    }
    for part in text.split(',') {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a, b),
            None => (part, part),
        };
        let num = |s: &str| {
            s.parse::<i32>()
                .ok()
                .filter(|n| *n >= 0)
                .ok_or_else(|| format!("{part:?}: not a non-negative index or range"))
        };
        let (a, b) = (num(a)?, num(b)?);
        if a > b {
            return Err(format!("{part:?}: the first index is larger than the last"));
        }
        if b >= completions {
            return Err(format!(
                "{part:?}: index {b} is not below completions ({completions})"
            ));
        }
        if out.last().is_some_and(|&(_, last)| a <= last) {
            return Err(format!(
                "{part:?}: indexes must be ascending and not overlap"
            ));
        }
        out.push((a, b));
    }
    Ok(out)
}

/// A CronJob's `spec.jobTemplate`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct JobTemplateSpec {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub metadata: ObjectMeta,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub spec: WorkloadSpec,
}

/// Virtual time 0 as wall-clock time for CronJob schedules: 2024-01-01T00:00:00Z (a Monday),
/// in Unix seconds.
pub const CRON_EPOCH_UNIX: i64 = 1_704_067_200;

/// A parsed CronJob schedule: robfig/cron v3's standard parser (see [`crate::cron`]).
pub type CronSchedule = crate::cron::Schedule;

/// `spec.template`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodTemplateSpec {
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub metadata: ObjectMeta,
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub spec: PodSpec,
}

/// A Deployment's `spec.strategy`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DeploymentStrategy {
    #[serde(rename = "type", skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub type_: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rolling_update: Option<RollingUpdate>,
}

/// `maxSurge` / `maxUnavailable`: an integer or a percentage string (defaults 25% / 25%).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RollingUpdate {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_surge: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<Value>,
}

/// A DaemonSet's or StatefulSet's `spec.updateStrategy`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct UpdateStrategy {
    #[serde(rename = "type", skip_serializing_if = "String::is_empty")]
    #[serde(deserialize_with = "crate::nulls::or_default")]
    pub type_: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rolling_update: Option<SetRollingUpdate>,
}

/// `updateStrategy.rollingUpdate`: a DaemonSet's `maxUnavailable` (default 1) and `maxSurge`
/// (default 0); a StatefulSet's `partition` (default 0) and `maxUnavailable` (default 1).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SetRollingUpdate {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_surge: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partition: Option<i32>,
}

/// Resolves an IntOrString against `total` as upstream's `GetScaledValueFromIntOrPercent`
/// (percentages round up when `round_up`, down otherwise). `None` when malformed.
pub fn scaled_value(v: &Value, total: i32, round_up: bool) -> Option<i32> {
    match v {
        Value::Number(n) => n.as_i64().and_then(|n| i32::try_from(n).ok()),
        Value::String(s) => {
            let pct: i64 = s.strip_suffix('%')?.trim().parse().ok()?;
            let prod = pct * i64::from(total);
            let r = if round_up {
                (prod + 99).div_euclid(100)
            } else {
                prod.div_euclid(100)
            };
            i32::try_from(r).ok()
        }
        _ => None,
    }
}

impl Workload {
    /// Desired replicas (`spec.replicas`, default 1).
    pub fn replicas(&self) -> i32 {
        self.spec.replicas.unwrap_or(1)
    }

    /// Deployment: (max surge, max unavailable) for the desired replicas, upstream's
    /// `ResolveFenceposts` (both zero would block progress, so unavailable becomes 1).
    pub fn surge_and_unavailable(&self) -> (i32, i32) {
        let ru = self
            .spec
            .strategy
            .as_ref()
            .and_then(|s| s.rolling_update.clone())
            .unwrap_or_default();
        let quarter = Value::String("25%".into());
        let r = self.replicas();
        let surge = scaled_value(ru.max_surge.as_ref().unwrap_or(&quarter), r, true).unwrap_or(0);
        let unavail =
            scaled_value(ru.max_unavailable.as_ref().unwrap_or(&quarter), r, false).unwrap_or(0);
        if surge == 0 && unavail == 0 {
            (0, 1)
        } else {
            (surge, unavail)
        }
    }

    /// Whether a Deployment uses the `Recreate` strategy.
    pub fn recreate(&self) -> bool {
        self.spec
            .strategy
            .as_ref()
            .is_some_and(|s| s.type_ == "Recreate")
    }

    /// Whether a DaemonSet or StatefulSet replaces its pods only when they are deleted
    /// (`updateStrategy.type: OnDelete`).
    pub fn on_delete(&self) -> bool {
        self.spec
            .update_strategy
            .as_ref()
            .is_some_and(|s| s.type_ == "OnDelete")
    }

    /// DaemonSet: (max surge, max unavailable) out of `desired` nodes, upstream's `SurgeCount`
    /// and `UnavailableCount` (percentages round up; defaults 0 and 1) with `updatedDesiredNodeCounts`'s
    /// rule that both zero makes unavailable 1.
    pub fn daemon_surge_and_unavailable(&self, desired: i32) -> (i32, i32) {
        let ru = self
            .spec
            .update_strategy
            .as_ref()
            .and_then(|s| s.rolling_update.clone())
            .unwrap_or_default();
        let surge = ru
            .max_surge
            .as_ref()
            .and_then(|v| scaled_value(v, desired, true))
            .unwrap_or(0);
        let unavail = ru
            .max_unavailable
            .as_ref()
            .map(|v| scaled_value(v, desired, true).unwrap_or(1))
            .unwrap_or(1);
        if surge == 0 && unavail == 0 {
            (0, 1)
        } else {
            (surge, unavail)
        }
    }

    /// StatefulSet: `updateStrategy.rollingUpdate.partition` (default 0) and
    /// `maxUnavailable` resolved against the replicas (default 1; percentages round down, at
    /// least 1: upstream's `getStatefulSetMaxUnavailable`).
    pub fn stateful_partition_and_unavailable(&self) -> (i32, i32) {
        let ru = self
            .spec
            .update_strategy
            .as_ref()
            .and_then(|s| s.rolling_update.clone())
            .unwrap_or_default();
        let unavail = ru
            .max_unavailable
            .as_ref()
            .and_then(|v| scaled_value(v, self.replicas(), false))
            .unwrap_or(1)
            .max(1);
        (ru.partition.unwrap_or(0).max(0), unavail)
    }

    /// Whether a Deployment is paused (`spec.paused`).
    pub fn paused(&self) -> bool {
        self.spec.paused == Some(true)
    }

    /// Whether a StatefulSet creates its pods in parallel.
    pub fn parallel_pods(&self) -> bool {
        self.spec.pod_management_policy.as_deref() == Some("Parallel")
    }
}

/// Checks what the API server's validation checks and the controllers rely on. `kind` is the
/// Kubernetes kind; errors are `(field path, message)`.
pub fn validate(kind: &str, w: &Workload) -> Result<(), (String, String)> {
    let nonneg = |path: &str, v: Option<i32>| match v {
        Some(n) if n < 0 => Err((
            path.to_string(),
            format!("must be greater than or equal to 0, got {n}"),
        )),
        _ => Ok(()),
    };
    nonneg("spec.replicas", w.spec.replicas)?;
    nonneg("spec.minReadySeconds", w.spec.min_ready_seconds)?;
    nonneg("spec.parallelism", w.spec.parallelism)?;
    nonneg("spec.completions", w.spec.completions)?;
    nonneg("spec.backoffLimit", w.spec.backoff_limit)?;
    if let Some(pmp) = &w.spec.pod_management_policy {
        if pmp != "OrderedReady" && pmp != "Parallel" {
            return Err((
                "spec.podManagementPolicy".into(),
                format!("{pmp:?} is not OrderedReady or Parallel"),
            ));
        }
    }
    if let Some(s) = &w.spec.strategy {
        if !matches!(s.type_.as_str(), "" | "RollingUpdate" | "Recreate") {
            return Err((
                "spec.strategy.type".into(),
                format!("{:?} is not RollingUpdate or Recreate", s.type_),
            ));
        }
        if let Some(ru) = &s.rolling_update {
            for (f, v) in [
                ("maxSurge", &ru.max_surge),
                ("maxUnavailable", &ru.max_unavailable),
            ] {
                if let Some(v) = v {
                    match scaled_value(v, 100, true) {
                        Some(n) if n >= 0 => {}
                        _ => {
                            return Err((
                                format!("spec.strategy.rollingUpdate.{f}"),
                                format!("expected a non-negative integer or percentage, got {v}"),
                            ))
                        }
                    }
                }
            }
        }
    }
    if let Some(s) = &w.spec.update_strategy {
        if !matches!(s.type_.as_str(), "" | "RollingUpdate" | "OnDelete") {
            return Err((
                "spec.updateStrategy.type".into(),
                format!("{:?} is not RollingUpdate or OnDelete", s.type_),
            ));
        }
        if let Some(ru) = &s.rolling_update {
            nonneg("spec.updateStrategy.rollingUpdate.partition", ru.partition)?;
            for (f, v) in [
                ("maxSurge", &ru.max_surge),
                ("maxUnavailable", &ru.max_unavailable),
            ] {
                if let Some(v) = v {
                    match scaled_value(v, 100, true) {
                        Some(n) if n >= 0 => {}
                        _ => {
                            return Err((
                                format!("spec.updateStrategy.rollingUpdate.{f}"),
                                format!("expected a non-negative integer or percentage, got {v}"),
                            ))
                        }
                    }
                }
            }
        }
    }
    if kind == "CronJob" {
        return validate_cronjob(w);
    }
    if kind == "Job" {
        validate_job(w)?;
    }
    // A Job's selector is generated by the API server when absent; apps/v1 requires one.
    match &w.spec.selector {
        None if kind == "Job" => {}
        None => return Err(("spec.selector".into(), format!("a {kind} needs a selector"))),
        Some(sel) => {
            if sel.match_labels.is_empty() && sel.match_expressions.is_empty() && kind != "Job" {
                return Err((
                    "spec.selector".into(),
                    "empty selector is invalid: it would select every pod".into(),
                ));
            }
            if let Selector::Nothing = Selector::from_label_selector(Some(sel)) {
                return Err((
                    "spec.selector.matchExpressions".into(),
                    "invalid operator or values".into(),
                ));
            }
            if !Selector::from_label_selector(Some(sel)).matches(&w.spec.template.metadata.labels) {
                return Err((
                    "spec.template.metadata.labels".into(),
                    "`selector` does not match template `labels`".into(),
                ));
            }
        }
    }
    for (i, c) in w.spec.volume_claim_templates.iter().enumerate() {
        if c.metadata.name.is_empty() {
            return Err((
                format!("spec.volumeClaimTemplates[{i}].metadata.name"),
                "required".into(),
            ));
        }
    }
    Ok(())
}

/// Upstream's `validateTimeZone`: IANA naming rules, not `Local`, and a zone the database has.
fn validate_time_zone(tz: &str) -> Result<(), String> {
    if tz.is_empty() {
        return Err("timeZone must be nil or non-empty string".into());
    }
    let part_ok = |p: &str| {
        p != "."
            && p != ".."
            && !p.starts_with('-')
            && (1..=14).contains(&p.len())
            && p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'+'))
    };
    if !tz.split('/').all(part_ok) {
        return Err(format!("{tz:?}: unknown time zone {tz}"));
    }
    if tz.eq_ignore_ascii_case("Local") {
        return Err(format!(
            "{tz:?}: timeZone must be an explicit time zone as defined in \
             https://www.iana.org/time-zones"
        ));
    }
    crate::cron::load_location(tz)
        .map(|_| ())
        .map_err(|e| format!("{tz:?}: {e}"))
}

/// A Job's own fields (upstream's `validateJobSpec`, the parts the controller depends on).
fn validate_job(w: &Workload) -> Result<(), (String, String)> {
    let s = &w.spec;
    let err = |p: &str, m: String| Err((p.to_string(), m));
    for (path, v) in [
        ("spec.activeDeadlineSeconds", s.active_deadline_seconds),
        (
            "spec.ttlSecondsAfterFinished",
            s.ttl_seconds_after_finished.map(i64::from),
        ),
        (
            "spec.backoffLimitPerIndex",
            s.backoff_limit_per_index.map(i64::from),
        ),
        ("spec.maxFailedIndexes", s.max_failed_indexes.map(i64::from)),
    ] {
        if let Some(n) = v.filter(|n| *n < 0) {
            return err(path, format!("must be greater than or equal to 0, got {n}"));
        }
    }
    let indexed = match s.completion_mode.as_deref() {
        None | Some("NonIndexed") => false,
        Some("Indexed") => true,
        Some(m) => {
            return err(
                "spec.completionMode",
                format!("{m:?}: supported values: \"NonIndexed\", \"Indexed\""),
            )
        }
    };
    if indexed && s.completions.is_none() {
        return err(
            "spec.completions",
            "Required value: when completion mode is Indexed".into(),
        );
    }
    if s.backoff_limit_per_index.is_some() && !indexed {
        return err(
            "spec.backoffLimitPerIndex",
            "requires indexed completion mode".into(),
        );
    }
    if let Some(m) = s.max_failed_indexes {
        if s.backoff_limit_per_index.is_none() {
            return err(
                "spec.maxFailedIndexes",
                "cannot set maxFailedIndexes when backoffLimitPerIndex is not set".into(),
            );
        }
        if s.completions.is_some_and(|c| m > c) {
            return err(
                "spec.maxFailedIndexes",
                "must be less than or equal to completions".into(),
            );
        }
    }
    if let Some(p) = &s.pod_replacement_policy {
        if !matches!(p.as_str(), "TerminatingOrFailed" | "Failed") {
            return err(
                "spec.podReplacementPolicy",
                format!("{p:?}: supported values: \"TerminatingOrFailed\", \"Failed\""),
            );
        }
        if s.pod_failure_policy.is_some() && p != "Failed" {
            return err(
                "spec.podReplacementPolicy",
                "must be Failed when podFailurePolicy is used".into(),
            );
        }
    }
    if let Some(pfp) = &s.pod_failure_policy {
        if s.template.spec.restart_policy != "Never" {
            return err(
                "spec.template.spec.restartPolicy",
                "only \"Never\" is supported when podFailurePolicy is specified".into(),
            );
        }
        for (i, r) in pfp.rules.iter().enumerate() {
            let path = format!("spec.podFailurePolicy.rules[{i}]");
            match r.action.as_str() {
                "FailJob" | "Ignore" | "Count" => {}
                "FailIndex" if s.backoff_limit_per_index.is_some() => {}
                "FailIndex" => {
                    return err(
                        &format!("{path}.action"),
                        "requires the backoffLimitPerIndex to be set".into(),
                    )
                }
                a => {
                    return err(
                        &format!("{path}.action"),
                        format!(
                            "{a:?}: supported values: \"Count\", \"FailIndex\", \"FailJob\", \"Ignore\""
                        ),
                    )
                }
            }
            match (&r.on_exit_codes, r.on_pod_conditions.is_empty()) {
                (Some(_), false) | (None, true) => {
                    return err(
                        &path,
                        "specifying one of OnExitCodes and OnPodConditions is required".into(),
                    )
                }
                (Some(c), true) => {
                    let p = format!("{path}.onExitCodes");
                    if !matches!(c.operator.as_str(), "In" | "NotIn") {
                        return err(
                            &format!("{p}.operator"),
                            format!("{:?}: supported values: \"In\", \"NotIn\"", c.operator),
                        );
                    }
                    if c.values.is_empty() {
                        return err(
                            &format!("{p}.values"),
                            "at least one value is required".into(),
                        );
                    }
                    if c.operator == "In" && c.values.contains(&0) {
                        return err(
                            &format!("{p}.values"),
                            "must not be 0 for the In operator".into(),
                        );
                    }
                    if c.values.windows(2).any(|w| w[0] >= w[1]) {
                        return err(
                            &format!("{p}.values"),
                            "must be ordered and without duplicates".into(),
                        );
                    }
                }
                (None, false) => {}
            }
        }
    }
    if let Some(sp) = &s.success_policy {
        if !indexed {
            return err(
                "spec.successPolicy",
                "requires indexed completion mode".into(),
            );
        }
        let completions = s.completions.unwrap_or(0);
        if sp.rules.is_empty() {
            return err("spec.successPolicy.rules", "Required value".into());
        }
        for (i, r) in sp.rules.iter().enumerate() {
            let path = format!("spec.successPolicy.rules[{i}]");
            if r.succeeded_indexes.is_none() && r.succeeded_count.is_none() {
                return err(
                    &path,
                    "at least one of succeededCount or succeededIndexes must be specified".into(),
                );
            }
            let mut size = completions;
            if let Some(ix) = &r.succeeded_indexes {
                let set = parse_index_set(ix, completions)
                    .map_err(|m| (format!("{path}.succeededIndexes"), m))?;
                size = set.iter().map(|(a, b)| b - a + 1).sum();
            }
            if let Some(c) = r.succeeded_count {
                if c < 0 {
                    return err(
                        &format!("{path}.succeededCount"),
                        format!("must be greater than or equal to 0, got {c}"),
                    );
                }
                if c > size {
                    return err(
                        &format!("{path}.succeededCount"),
                        format!("must be less than or equal to {size} (the number of indexes)"),
                    );
                }
            }
        }
    }
    Ok(())
}

/// A CronJob's fields, and its Job template as a Job.
fn validate_cronjob(w: &Workload) -> Result<(), (String, String)> {
    let s = &w.spec;
    // Upstream's `validateScheduleFormat` (a new object: a zone in the schedule is refused)
    // and `validateTimeZone`.
    match &s.schedule {
        None => return Err(("spec.schedule".into(), "required".into())),
        Some(t) => {
            CronSchedule::parse(t).map_err(|m| ("spec.schedule".to_string(), m))?;
            if t.contains("TZ") {
                return Err((
                    "spec.schedule".into(),
                    format!(
                        "{t:?}: cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
                    ),
                ));
            }
        }
    }
    if let Some(tz) = &s.time_zone {
        validate_time_zone(tz).map_err(|m| ("spec.timeZone".to_string(), m))?;
    }
    if let Some(p) = &s.concurrency_policy {
        if !matches!(p.as_str(), "Allow" | "Forbid" | "Replace") {
            return Err((
                "spec.concurrencyPolicy".into(),
                format!("{p:?} is not Allow, Forbid or Replace"),
            ));
        }
    }
    if let Some(d) = s.starting_deadline_seconds {
        if d < 0 {
            return Err((
                "spec.startingDeadlineSeconds".into(),
                format!("must be greater than or equal to 0, got {d}"),
            ));
        }
    }
    for (field, limit) in [
        (
            "spec.successfulJobsHistoryLimit",
            s.successful_jobs_history_limit,
        ),
        ("spec.failedJobsHistoryLimit", s.failed_jobs_history_limit),
    ] {
        if let Some(n) = limit.filter(|n| *n < 0) {
            return Err((
                field.into(),
                format!("must be greater than or equal to 0, got {n}"),
            ));
        }
    }
    let Some(jt) = &s.job_template else {
        return Err(("spec.jobTemplate".into(), "required".into()));
    };
    let job = Workload {
        metadata: jt.metadata.clone(),
        spec: jt.spec.clone(),
        ..Default::default()
    };
    validate("Job", &job).map_err(|(p, m)| (format!("spec.jobTemplate.{p}"), m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cron_schedules_parse_and_step_in_utc() {
        let s = CronSchedule::parse("*/15 * * * *").unwrap();
        assert_eq!(s.next_after(CRON_EPOCH_UNIX), Some(CRON_EPOCH_UNIX + 900));
        let daily = CronSchedule::parse("@daily").unwrap();
        assert_eq!(
            daily.next_after(CRON_EPOCH_UNIX),
            Some(CRON_EPOCH_UNIX + 86_400)
        );
        // 2024-01-01 is a Monday: "at 06:30 on Tuesdays" is a day and 6.5 hours later.
        let tue = CronSchedule::parse("30 6 * * 2").unwrap();
        assert_eq!(
            tue.next_after(CRON_EPOCH_UNIX),
            Some(CRON_EPOCH_UNIX + 86_400 + 23_400)
        );
        for bad in ["* * * *", "0 0 * * * *", "61 * * * *", "0 0 L * *"] {
            assert!(CronSchedule::parse(bad).is_err(), "{bad}");
        }
        // The API server refuses a zone in a new CronJob's schedule; spec.timeZone is the way.
        let tz = |sched: &str, zone: &str| {
            w(&format!(
                r#"{{"spec":{{"schedule":"{sched}",{zone}"jobTemplate":{{"spec":{{"template":
                {{"spec":{{"containers":[{{"name":"c"}}]}}}}}}}}}}}}"#
            ))
        };
        let e = validate("CronJob", &tz("TZ=Europe/Paris 0 * * * *", "")).unwrap_err();
        assert_eq!(e.0, "spec.schedule");
        assert!(e
            .1
            .contains("cannot use TZ or CRON_TZ in schedule, use timeZone field instead"));
        assert_eq!(
            validate("CronJob", &tz("0 3 * * *", r#""timeZone":"Europe/Paris","#)),
            Ok(())
        );
        let e = validate(
            "CronJob",
            &tz("0 3 * * *", r#""timeZone":"Europe/Pariss","#),
        )
        .unwrap_err();
        assert_eq!(
            e,
            (
                "spec.timeZone".into(),
                "\"Europe/Pariss\": unknown time zone Europe/Pariss".into()
            )
        );
        let e = validate("CronJob", &tz("0 3 * * *", r#""timeZone":"Local","#)).unwrap_err();
        assert_eq!(e.0, "spec.timeZone");
        let cj = w(
            r#"{"spec":{"schedule":"0 * * * *","concurrencyPolicy":"Sometimes",
            "jobTemplate":{"spec":{"template":{"spec":{"containers":[{"name":"c"}]}}}}}}"#,
        );
        assert_eq!(
            validate("CronJob", &cj).unwrap_err().0,
            "spec.concurrencyPolicy"
        );
        let cj =
            w(r#"{"spec":{"schedule":"0 * * * *","jobTemplate":{"spec":{"parallelism":-1}}}}"#);
        assert_eq!(
            validate("CronJob", &cj).unwrap_err().0,
            "spec.jobTemplate.spec.parallelism"
        );
        let cj = w(r#"{"spec":{"schedule":"every hour","jobTemplate":{}}}"#);
        assert_eq!(validate("CronJob", &cj).unwrap_err().0, "spec.schedule");
    }

    fn w(json: &str) -> Workload {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn validates_selector_and_counts() {
        let ok = w(
            r#"{"spec":{"replicas":3,"selector":{"matchLabels":{"app":"a"}},
            "template":{"metadata":{"labels":{"app":"a","x":"y"}},"spec":null}}}"#,
        );
        assert!(validate("Deployment", &ok).is_ok());
        let bad = w(r#"{"spec":{"selector":{"matchLabels":{"app":"a"}},
            "template":{"metadata":{"labels":{"app":"b"}}}}}"#);
        assert_eq!(
            validate("ReplicaSet", &bad).unwrap_err().0,
            "spec.template.metadata.labels"
        );
        let neg = w(r#"{"spec":{"replicas":-1,"selector":{"matchLabels":{"app":"a"}}}}"#);
        assert_eq!(validate("ReplicaSet", &neg).unwrap_err().0, "spec.replicas");
        let none = w(r#"{"spec":{"replicas":1}}"#);
        assert_eq!(
            validate("StatefulSet", &none).unwrap_err().0,
            "spec.selector"
        );
        assert!(validate("Job", &none).is_ok());
        let nulls = w(
            r#"{"metadata":null,"spec":{"replicas":null,"selector":{"matchLabels":{"a":"b"}},
            "template":{"metadata":{"labels":{"a":"b"}}},"volumeClaimTemplates":null}}"#,
        );
        assert_eq!(nulls.replicas(), 1);
    }

    #[test]
    fn cronjob_history_limits_must_not_be_negative() {
        let cj = |limits: &str| {
            w(&format!(
                r#"{{"spec":{{"schedule":"* * * * *",{limits}"jobTemplate":{{"spec":{{"template":
                {{"spec":{{"restartPolicy":"Never","containers":[{{"name":"c"}}]}}}}}}}}}}}}"#
            ))
        };
        assert_eq!(validate("CronJob", &cj("")), Ok(()));
        assert_eq!(
            validate(
                "CronJob",
                &cj(r#""successfulJobsHistoryLimit":0,"failedJobsHistoryLimit":0,"#)
            ),
            Ok(())
        );
        let err = validate("CronJob", &cj(r#""failedJobsHistoryLimit":-1,"#)).unwrap_err();
        assert_eq!(err.0, "spec.failedJobsHistoryLimit");
        assert!(err.1.contains("got -1"), "{err:?}");
        let err = validate("CronJob", &cj(r#""successfulJobsHistoryLimit":-2,"#)).unwrap_err();
        assert_eq!(err.0, "spec.successfulJobsHistoryLimit");
    }

    #[test]
    fn surge_and_unavailable_resolve_as_upstream() {
        let d = w(r#"{"spec":{"replicas":10}}"#);
        assert_eq!(d.surge_and_unavailable(), (3, 2));
        let d = w(
            r#"{"spec":{"replicas":10,"strategy":{"rollingUpdate":{"maxSurge":0,"maxUnavailable":0}}}}"#,
        );
        assert_eq!(d.surge_and_unavailable(), (0, 1));
    }
}
