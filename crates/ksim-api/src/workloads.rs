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
    /// Job: failures tolerated (default 6).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backoff_limit: Option<i32>,
    /// CronJob: a standard 5-field cron schedule (or `@hourly`, `@daily`, ...).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// CronJob: only UTC is modelled (`UTC`, `Etc/UTC` or absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// CronJob: `Allow` (default), `Forbid` or `Replace`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub concurrency_policy: Option<String>,
    /// CronJob: no new Jobs while true. (A Job's own `suspend` is read but not modelled.)
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

/// A parsed CronJob schedule (standard 5 fields, upstream's nicknames), evaluated in UTC.
#[derive(Debug, Clone)]
pub struct CronSchedule(croner::Cron);

impl CronSchedule {
    /// Parses a schedule as upstream's `cron.ParseStandard` accepts it (5 fields or a
    /// `@hourly`-style nickname; no seconds field).
    pub fn parse(text: &str) -> Result<CronSchedule, String> {
        let t = text.trim();
        if t.starts_with("TZ=") || t.starts_with("CRON_TZ=") {
            return Err(format!(
                "{text:?}: a time zone in the schedule is not supported (ksim runs schedules in UTC)"
            ));
        }
        if !t.starts_with('@') && t.split_whitespace().count() != 5 {
            return Err(format!(
                "{text:?}: expected 5 fields (minute hour day-of-month month day-of-week) or a \
                 nickname such as @hourly"
            ));
        }
        croner::parser::CronParser::builder()
            .seconds(croner::parser::Seconds::Disallowed)
            .build()
            .parse(t)
            .map(CronSchedule)
            .map_err(|e| format!("{text:?}: {e}"))
    }

    /// The first scheduled instant strictly after Unix second `after`, in Unix seconds.
    pub fn next_after(&self, after: i64) -> Option<i64> {
        let t = chrono::DateTime::<chrono::Utc>::from_timestamp(after, 0)?;
        self.0
            .find_next_occurrence(&t, false)
            .ok()
            .map(|d| d.timestamp())
    }
}

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

/// A CronJob's fields, and its Job template as a Job.
fn validate_cronjob(w: &Workload) -> Result<(), (String, String)> {
    let s = &w.spec;
    match &s.schedule {
        None => return Err(("spec.schedule".into(), "required".into())),
        Some(t) => {
            CronSchedule::parse(t).map_err(|m| ("spec.schedule".to_string(), m))?;
        }
    }
    if let Some(tz) = &s.time_zone {
        if !matches!(tz.as_str(), "UTC" | "Etc/UTC") {
            return Err((
                "spec.timeZone".into(),
                format!("{tz:?}: only UTC is modelled (virtual time runs in UTC)"),
            ));
        }
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
        for bad in [
            "* * * *",
            "0 0 * * * *",
            "61 * * * *",
            "TZ=Europe/Paris 0 * * * *",
        ] {
            assert!(CronSchedule::parse(bad).is_err(), "{bad}");
        }
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
