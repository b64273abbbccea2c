//! Room: the API server's admission chain for pods, in upstream's plugin order
//! (`pkg/kubeapiserver/options/plugins.go` `AllOrderedPlugins`), run on every pod the engine
//! creates (trace, import, dump or controller):
//!
//! 1. LimitRanger (mutating: `PodMutateLimitFunc`) — the namespace's LimitRanges' `default` and
//!    `defaultRequest`;
//! 2. Priority (`plugin/pkg/admission/priority` `admitPod`) — see `controllers/priorityclass`;
//! 3. DefaultTolerationSeconds (`plugin/pkg/admission/defaulttolerationseconds`);
//! 4. LimitRanger (validating: `PodValidateLimitFunc`) — `min`, `max`, `maxLimitRequestRatio`;
//! 5. ResourceQuota (`plugin/pkg/admission/resourcequota` `CheckRequest`) — the namespace's
//!    quotas, whose usage this room keeps: charged when a pod is admitted, released when its
//!    slot is released (the pod ended), and computed from the live pods when a quota is
//!    created (what the quota controller's `status.used` would say).
//!
//! A refused pod is not created: [`Record::PodRefused`] carries upstream's message
//! (`pods "x" is forbidden: ...`). A controller whose pod is refused stops creating for this
//! sync and retries with its work queue's rate limit (upstream `DefaultControllerRateLimiter`:
//! 5 ms doubling per failure up to 1000 s, reset by a successful creation). Deliberate
//! difference: in a run without a horizon the retries stop once the delay reaches 1000 s
//! (upstream retries forever; the run would never end).
//!
//! Each plugin can be turned off with `controlPlane.admission.disablePlugins` (upstream
//! `--disable-admission-plugins`); the toleration seconds are
//! `controlPlane.admission.defaultNotReadyTolerationSeconds` and
//! `defaultUnreachableTolerationSeconds` (upstream `--default-not-ready-toleration-seconds`,
//! `--default-unreachable-toleration-seconds`, 300 each).

use std::collections::BTreeMap;

use ksim_api::admission::{
    default_toleration_seconds, limit_range_mutate, limit_range_validate, pod_usage, quota_check,
    quota_matches, LimitRange, ResourceQuota, DEFAULT_TOLERATION_SECONDS,
};
use ksim_api::object::ApiObject;
use ksim_api::Pod;
use serde::{Deserialize, Serialize};

use super::{PodId, PodPhase, SimError, Simulation};
use crate::record::{Observer, Record};
use crate::time::{SimDuration, SimTime};

/// The admission plugins ksim runs, by upstream name.
pub const PLUGINS: [&str; 4] = [
    "LimitRanger",
    "Priority",
    "DefaultTolerationSeconds",
    "ResourceQuota",
];

/// `controlPlane.admission` of a scenario.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct AdmissionConfig {
    /// `--default-not-ready-toleration-seconds` (300).
    pub default_not_ready_toleration_seconds: i64,
    /// `--default-unreachable-toleration-seconds` (300).
    pub default_unreachable_toleration_seconds: i64,
    /// `--disable-admission-plugins`: any of [`PLUGINS`].
    pub disable_plugins: Vec<String>,
}

impl Default for AdmissionConfig {
    fn default() -> Self {
        AdmissionConfig {
            default_not_ready_toleration_seconds: DEFAULT_TOLERATION_SECONDS,
            default_unreachable_toleration_seconds: DEFAULT_TOLERATION_SECONDS,
            disable_plugins: Vec::new(),
        }
    }
}

impl AdmissionConfig {
    pub fn is_default(&self) -> bool {
        *self == AdmissionConfig::default()
    }

    /// What the API server refuses in these flags (a negative toleration, an unknown plugin).
    pub fn check(&self) -> Result<(), (String, String)> {
        for (f, v) in [
            (
                "defaultNotReadyTolerationSeconds",
                self.default_not_ready_toleration_seconds,
            ),
            (
                "defaultUnreachableTolerationSeconds",
                self.default_unreachable_toleration_seconds,
            ),
        ] {
            if v < 0 {
                return Err((f.into(), format!("{v} is negative")));
            }
        }
        for (i, p) in self.disable_plugins.iter().enumerate() {
            if !PLUGINS.contains(&p.as_str()) {
                return Err((
                    format!("disablePlugins[{i}]"),
                    format!(
                        "unknown admission plugin {p:?}; ksim runs {}",
                        PLUGINS.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }

    fn on(&self, plugin: &str) -> bool {
        !self.disable_plugins.iter().any(|p| p == plugin)
    }
}

/// What one pod is charged: per quota key, the usage (millis by resource).
pub(crate) type Charges = Vec<(String, BTreeMap<String, i64>)>;

/// One ResourceQuota and the usage it counts (millis by resource name).
#[derive(Debug, Clone)]
pub(crate) struct Quota {
    pub obj: ResourceQuota,
    pub used: BTreeMap<String, i64>,
}

/// The room's state (`Simulation::admission`).
#[derive(Debug, Clone, Default)]
pub(crate) struct State {
    /// LimitRanges by `namespace/name`.
    pub limit_ranges: BTreeMap<String, LimitRange>,
    /// ResourceQuotas by `namespace/name`.
    pub quotas: BTreeMap<String, Quota>,
    /// What each live pod was charged, by pod id and quota key.
    pub charged: BTreeMap<PodId, Charges>,
    /// Pods refused so far.
    pub refused: u64,
    /// Controllers whose last creation was refused: failures in a row, and the instant before
    /// which they create nothing (their rate-limited requeue).
    pub failures: BTreeMap<String, (u32, SimTime)>,
}

/// upstream `workqueue.DefaultControllerRateLimiter`'s per-item part: 5 ms × 2^failures,
/// at most 1000 s.
pub(crate) fn requeue_delay(failures: u32) -> SimDuration {
    let base: i64 = 5_000; // µs
    let cap: i64 = 1_000_000_000;
    let d = if failures >= 40 {
        cap
    } else {
        (base << failures.min(40)).min(cap)
    };
    SimDuration(d)
}

/// `pods "name" is forbidden: msg` (upstream `admission.NewForbidden`; the name is the
/// `generateName` when the name is not yet generated).
fn forbidden(name: &str, msg: &str) -> String {
    format!("pods {name:?} is forbidden: {msg}")
}

impl Simulation {
    /// `CreateObject`/`UpdateObject` of a LimitRange or ResourceQuota.
    pub(in crate::sim) fn put_admission_object(
        &mut self,
        obj: ApiObject,
        create: bool,
    ) -> Result<(), SimError> {
        let mut obj = obj;
        obj.apply_defaults();
        let key = obj.key();
        let kind = obj.kind();
        let exists = match &obj {
            ApiObject::LimitRange(_) => self.admission.limit_ranges.contains_key(&key),
            _ => self.admission.quotas.contains_key(&key),
        };
        let verb = if create {
            "CreateObject"
        } else {
            "UpdateObject"
        };
        if create && exists {
            return Err(self.input_err(format!("{verb}: {kind} {key} already exists")));
        }
        if !create && !exists {
            return Err(self.input_err(format!("{verb}: {kind} {key} does not exist")));
        }
        match obj {
            ApiObject::LimitRange(lr) => {
                self.admission.limit_ranges.insert(key, lr);
            }
            ApiObject::ResourceQuota(rq) => {
                if create {
                    let used = self.quota_usage_of_live_pods(&rq);
                    self.admission.quotas.insert(key, Quota { obj: rq, used });
                } else if let Some(q) = self.admission.quotas.get_mut(&key) {
                    q.obj = rq;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// `DeleteObject` of a LimitRange or ResourceQuota.
    pub(in crate::sim) fn delete_admission_object(
        &mut self,
        kind: ksim_api::object::ObjectKind,
        namespace: &str,
        name: &str,
    ) -> Result<(), SimError> {
        let key = kind.key(
            if namespace.is_empty() {
                "default"
            } else {
                namespace
            },
            name,
        );
        let gone = match kind {
            ksim_api::object::ObjectKind::LimitRange => {
                self.admission.limit_ranges.remove(&key).is_some()
            }
            _ => {
                for c in self.admission.charged.values_mut() {
                    c.retain(|(q, _)| *q != key);
                }
                self.admission.quotas.remove(&key).is_some()
            }
        };
        if !gone {
            return Err(self.input_err(format!("DeleteObject: {kind} {key} does not exist")));
        }
        Ok(())
    }

    /// What the quota controller would count for a new quota: every live pod of its namespace
    /// and scopes (charged from now on, so that their end releases it).
    fn quota_usage_of_live_pods(&mut self, rq: &ResourceQuota) -> BTreeMap<String, i64> {
        let key = format!("{}/{}", rq.metadata.namespace, rq.metadata.name);
        let mut used = BTreeMap::new();
        let mut ids: Vec<PodId> = self
            .live_iter()
            .filter(|(k, _)| {
                k.split_once('/')
                    .is_some_and(|(ns, _)| ns == rq.metadata.namespace)
            })
            .map(|(_, id)| *id)
            .collect();
        ids.sort_unstable();
        for id in ids {
            let slot = &self.pods[id as usize];
            if matches!(slot.phase, PodPhase::Ended(_)) || !quota_matches(rq, &slot.info.pod) {
                continue;
            }
            let usage: BTreeMap<String, i64> = pod_usage(&slot.info.pod)
                .into_iter()
                .filter(|(k, _)| rq.spec.hard.contains_key(k))
                .collect();
            for (k, v) in &usage {
                *used.entry(k.clone()).or_insert(0) += v;
            }
            self.admission
                .charged
                .entry(id)
                .or_default()
                .push((key.clone(), usage));
        }
        used
    }

    /// Runs the admission chain on a new pod (its namespace already defaulted). `Err` is the
    /// refusal message, and `Ok` the quota charges to book once the pod has its id.
    pub(in crate::sim) fn admit_pod(&self, pod: &mut Pod) -> Result<Charges, String> {
        let cfg = &self.cfg.control_plane.admission;
        let ns = pod.metadata.namespace.clone();
        let prefix = format!("{ns}/");
        let in_ns = |k: &&String| k.starts_with(&prefix);
        let ranges: Vec<&LimitRange> =
            if cfg.on("LimitRanger") && !self.admission.limit_ranges.is_empty() {
                self.admission
                    .limit_ranges
                    .range(prefix.clone()..)
                    .take_while(|(k, _)| in_ns(k))
                    .map(|(_, v)| v)
                    .collect()
            } else {
                Vec::new()
            };
        for lr in &ranges {
            limit_range_mutate(lr, pod);
        }
        if cfg.on("Priority") {
            if let Err(e) = self.admit_priority(pod) {
                let shown = if pod.metadata.generate_name.is_empty() {
                    &pod.metadata.name
                } else {
                    &pod.metadata.generate_name
                };
                return Err(forbidden(shown, &e));
            }
        }
        if cfg.on("DefaultTolerationSeconds") {
            default_toleration_seconds(
                pod,
                cfg.default_not_ready_toleration_seconds,
                cfg.default_unreachable_toleration_seconds,
            );
        }
        let mut errs: Vec<String> = Vec::new();
        for lr in &ranges {
            errs.extend(limit_range_validate(lr, pod));
        }
        match errs.len() {
            0 => {}
            1 => return Err(forbidden(&pod.metadata.name, &errs[0])),
            _ => {
                return Err(forbidden(
                    &pod.metadata.name,
                    &format!("[{}]", errs.join(", ")),
                ))
            }
        }
        let mut charges = Vec::new();
        if cfg.on("ResourceQuota") && !self.admission.quotas.is_empty() {
            for (key, q) in self
                .admission
                .quotas
                .range(prefix.clone()..)
                .take_while(|(k, _)| in_ns(k))
            {
                if !quota_matches(&q.obj, pod) {
                    continue;
                }
                let add = quota_check(&q.obj, &q.used, pod)
                    .map_err(|m| forbidden(&pod.metadata.name, &m))?;
                charges.push((key.clone(), add));
            }
        }
        Ok(charges)
    }

    /// Books an admitted pod's quota charges.
    pub(in crate::sim) fn charge_quota(&mut self, id: PodId, charges: Charges) {
        if charges.is_empty() {
            return;
        }
        for (key, add) in &charges {
            if let Some(q) = self.admission.quotas.get_mut(key) {
                for (k, v) in add {
                    *q.used.entry(k.clone()).or_insert(0) += v;
                }
            }
        }
        self.admission.charged.insert(id, charges);
    }

    /// A pod's slot is released (it ended): its quota charges are released.
    pub(in crate::sim) fn release_quota(&mut self, id: PodId) {
        if let Some(charges) = self.admission.charged.remove(&id) {
            for (key, add) in charges {
                if let Some(q) = self.admission.quotas.get_mut(&key) {
                    for (k, v) in add {
                        let e = q.used.entry(k).or_insert(0);
                        *e = (*e - v).max(0);
                    }
                }
            }
        }
    }

    /// Records a refused pod.
    pub(in crate::sim) fn record_refused(
        &mut self,
        pod: &Pod,
        message: String,
        obs: &mut dyn Observer,
    ) {
        self.admission.refused += 1;
        let refs = &pod.metadata.owner_references;
        let owner = refs
            .iter()
            .find(|o| o.controller == Some(true))
            .or(refs.first());
        obs.record(&Record::PodRefused {
            at: self.now,
            namespace: pod.metadata.namespace.clone(),
            name: pod.metadata.name.clone(),
            owner_kind: owner.map(|o| o.kind.clone()).unwrap_or_default(),
            owner_name: owner.map(|o| o.name.clone()).unwrap_or_default(),
            message,
        });
    }

    /// Pods refused by admission so far.
    pub fn refused_pods(&self) -> u64 {
        self.admission.refused
    }

    /// Usage a ResourceQuota counts now (`namespace/name`), in millis by resource (tests,
    /// reports).
    pub fn quota_used(&self, key: &str) -> Option<&BTreeMap<String, i64>> {
        self.admission.quotas.get(key).map(|q| &q.used)
    }

    /// A controller's pod was refused: it creates nothing more until its rate-limited requeue.
    /// Returns the requeue instant and whether the backoff has reached its cap.
    pub(in crate::sim) fn controller_refused(&mut self, key: &str) -> (SimTime, bool) {
        let (n, _) = self
            .admission
            .failures
            .get(key)
            .copied()
            .unwrap_or((0, SimTime::ZERO));
        let delay = requeue_delay(n);
        let at = self.now + delay;
        self.admission
            .failures
            .insert(key.to_string(), (n.saturating_add(1), at));
        (at, delay == requeue_delay(u32::MAX))
    }

    /// Whether a controller is waiting for its requeue after a refusal.
    pub(in crate::sim) fn controller_backing_off(&self, key: &str) -> bool {
        self.admission
            .failures
            .get(key)
            .is_some_and(|(_, until)| *until > self.now)
    }

    /// A controller's pod was admitted: its failure count is forgotten.
    pub(in crate::sim) fn controller_admitted(&mut self, key: &str) {
        self.admission.failures.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requeue_delays_double_to_the_cap() {
        assert_eq!(requeue_delay(0), SimDuration(5_000));
        assert_eq!(requeue_delay(1), SimDuration(10_000));
        assert_eq!(requeue_delay(17), SimDuration(655_360_000));
        assert_eq!(requeue_delay(18), SimDuration(1_000_000_000));
        assert_eq!(requeue_delay(200), SimDuration(1_000_000_000));
    }

    #[test]
    fn config_checks() {
        assert!(AdmissionConfig::default().check().is_ok());
        let c = AdmissionConfig {
            disable_plugins: vec!["Nope".into()],
            ..Default::default()
        };
        assert_eq!(c.check().unwrap_err().0, "disablePlugins[0]");
        let c = AdmissionConfig {
            default_unreachable_toleration_seconds: -1,
            ..Default::default()
        };
        assert!(c.check().is_err());
    }
}
