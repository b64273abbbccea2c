//! Engine settings: seed, horizon, cost models and what happens to pods of removed nodes.

use serde::{Deserialize, Serialize};

pub use crate::sim::AdmissionConfig;
use crate::time::{SimDuration, SimTime};

/// How long a scheduling cycle takes in virtual time: `base + per_node × nodes evaluated`.
/// Defaults: 1 ms + 10 µs per evaluated node (a 5,000-node cluster sampling 500 nodes gives 6 ms,
/// the order of magnitude kube-scheduler's own cycle metrics show at that size).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct CycleCost {
    pub base: SimDuration,
    pub per_node: SimDuration,
}

impl Default for CycleCost {
    fn default() -> Self {
        CycleCost {
            base: SimDuration::from_millis(1),
            per_node: SimDuration(10),
        }
    }
}

impl CycleCost {
    /// The zero-cost model the timeline conformance cases use.
    pub fn zero() -> CycleCost {
        CycleCost {
            base: SimDuration::ZERO,
            per_node: SimDuration::ZERO,
        }
    }
    pub fn of(&self, evaluated_nodes: usize) -> SimDuration {
        SimDuration(self.base.0 + self.per_node.0 * evaluated_nodes as i64)
    }
}

/// Cost models with documented defaults.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct CostModels {
    pub scheduling_cycle: CycleCost,
    /// From the end of the scheduling cycle to the binding being visible (default 50 ms).
    pub bind_latency: SimDuration,
    /// Extra random delay added to each bind, uniformly in [0, jitter] (default 0).
    pub bind_jitter: SimDuration,
    /// From binding to the pod running (its run time starts then; default 0).
    pub pod_startup: SimDuration,
    /// Grace period a preemption victim takes to terminate, overriding the victim's own
    /// `terminationGracePeriodSeconds` (default: none, the pod's own, as upstream's
    /// `DeletePod` of a victim; "0s" ends victims at once, ksim's behaviour before graceful
    /// termination).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub victim_grace: Option<SimDuration>,
    /// Grace period of every other graceful deletion (a trace's `DeletePod`, a controller's
    /// scale-down, an eviction), overriding the pod's `terminationGracePeriodSeconds`
    /// (default: none, the pod's own, API default 30 s; "0s" deletes at once).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub termination_grace: Option<SimDuration>,
    /// How long dynamic provisioning takes: from VolumeBinding's PreBind setting
    /// `volume.kubernetes.io/selected-node` on a WaitForFirstConsumer claim to its PV being
    /// created and bound (default 5 s, the order of a cloud disk's create call). The pod binds
    /// only after that; static PVs bind at once.
    pub provisioning_delay: SimDuration,
}

impl Default for CostModels {
    fn default() -> Self {
        CostModels {
            scheduling_cycle: CycleCost::default(),
            bind_latency: SimDuration::from_millis(50),
            bind_jitter: SimDuration::ZERO,
            pod_startup: SimDuration::ZERO,
            victim_grace: None,
            termination_grace: None,
            provisioning_delay: SimDuration::from_secs(5),
        }
    }
}

impl CostModels {
    /// Zero-cost cycles and binding, and deletions without grace: the timeline conformance
    /// model (the recorded timelines delete pods with grace 0, as upstream's integration
    /// tests do without a kubelet).
    pub fn zero() -> CostModels {
        CostModels {
            scheduling_cycle: CycleCost::zero(),
            bind_latency: SimDuration::ZERO,
            bind_jitter: SimDuration::ZERO,
            pod_startup: SimDuration::ZERO,
            victim_grace: Some(SimDuration::ZERO),
            termination_grace: Some(SimDuration::ZERO),
            provisioning_delay: SimDuration::ZERO,
        }
    }
}

/// What happens to the pods bound to a node that is removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum OnNodeRemoval {
    /// The pods fail; pods owned by a controller are re-created as new pending pods.
    #[default]
    FailAndRecreateOwned,
    /// The pods fail and are not re-created.
    Fail,
    /// The pods stay bound to the missing node (what the API server does until the pod GC
    /// runs; the timeline conformance cases use this).
    KeepBound,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct EngineConfig {
    pub seed: u64,
    /// The run stops after this instant (inclusive); None = when no event is left.
    pub horizon: Option<SimTime>,
    pub costs: CostModels,
    pub on_node_removal: OnNodeRemoval,
    /// Backoff flush period (upstream 1 s) and unschedulable-leftover flush period (30 s).
    pub backoff_flush_period: SimDuration,
    pub leftover_flush_period: SimDuration,
    /// `podMaxInUnschedulablePodsDuration` (upstream 5 min).
    pub max_in_unschedulable: SimDuration,
    /// The optional node-group autoscaler (see [`crate::autoscale`]); None = fixed cluster.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub autoscaler: Option<crate::autoscale::AutoscalerConfig>,
    /// Guards that stop a run that would otherwise go on (almost) forever.
    pub limits: RunLimits,
    /// The old flat reaction delay of the workload controllers: when set, every reaction takes
    /// exactly this long and [`ControllerTiming`]'s rate limits are off (ksim before the timing
    /// model: 1 s). Unset by default. See `sim/controllers`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub controller_delay: Option<SimDuration>,
    /// The controllers' timing model: informer delay, reconcile, client rate limits, burst
    /// and slow-start batches, with kube-controller-manager v1.35's defaults.
    pub controller_timing: ControllerTiming,
    /// Run times of controller pods whose template has no `ksim.io/run-for` annotation.
    #[serde(skip_serializing_if = "ControllerRunTimes::is_empty")]
    pub controller_run_times: ControllerRunTimes,
    /// What-if replica factors of the workload controllers (scenario `workload.controllerScale`,
    /// the sweep's `controllerScale` / `workloadScale` axes); identity by default.
    #[serde(skip_serializing_if = "ControllerScale::is_identity")]
    pub controller_scale: ControllerScale,
    /// The control plane's controllers and their settings (scenario `controlPlane:`).
    #[serde(skip_serializing_if = "crate::control_plane::ControlPlane::is_default")]
    pub control_plane: crate::control_plane::ControlPlane,
}

/// Replica factors of the workload controllers: `spec.replicas` of Deployments, ReplicaSets and
/// StatefulSets and `spec.parallelism` / `spec.completions` of Jobs are multiplied when the
/// object is created and when an `UpdateObject` changes it, rounded up (`ceil`, so a planner
/// never gets fewer pods than the factor asks for; a product within 1e-9 of an integer is that
/// integer, so `10 × 1.1` is 11). DaemonSets (one pod per node) and PriorityClasses are not
/// scaled.
///
/// A controller's factor is fixed when it is created: the entry of `by_name` that names it
/// (`Kind/namespace/name`, `namespace/name` or `name`, the most specific first), else its
/// annotation `ksim.io/scale` (which a scenario's `workload.controllers[].scale` sets), else
/// `all`; that factor is then multiplied by `multiplier` (the sweep's axes).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ControllerScale {
    pub all: f64,
    pub by_name: std::collections::BTreeMap<String, f64>,
    pub multiplier: f64,
}

impl Default for ControllerScale {
    fn default() -> Self {
        ControllerScale {
            all: 1.0,
            by_name: std::collections::BTreeMap::new(),
            multiplier: 1.0,
        }
    }
}

/// The annotation that gives one controller object its replica factor (see [`ControllerScale`]).
pub const SCALE_ANNOTATION: &str = "ksim.io/scale";

/// On an `UpdateObject` of a controller: its counts are final, not multiplied by the
/// controller's factor (`"true"`). A what-if fork's `scale:` sets replicas this way, so a
/// variant's count is the count that runs whatever `controllerScale` says.
pub const UNSCALED_ANNOTATION: &str = "ksim.io/unscaled";

/// The largest factor accepted (a typo guard: 1000 × a Deployment of 1000 is a million pods).
pub const MAX_SCALE: f64 = 1000.0;

/// Checks one factor: finite, in `[0, MAX_SCALE]`.
pub fn check_scale(f: f64) -> Result<(), String> {
    if f.is_finite() && (0.0..=MAX_SCALE).contains(&f) {
        Ok(())
    } else {
        Err(format!("scale factor {f} is not in [0, {MAX_SCALE}]"))
    }
}

impl ControllerScale {
    pub fn is_identity(&self) -> bool {
        self.all == 1.0 && self.by_name.is_empty() && self.multiplier == 1.0
    }

    /// The factor of controller `kind namespace/name` whose own annotation gives `annotated`.
    pub fn factor_of(
        &self,
        kind: &str,
        namespace: &str,
        name: &str,
        annotated: Option<f64>,
    ) -> f64 {
        let keys = [
            format!("{kind}/{namespace}/{name}"),
            format!("{namespace}/{name}"),
            name.to_string(),
        ];
        let own = keys
            .iter()
            .find_map(|k| self.by_name.get(k).copied())
            .or(annotated)
            .unwrap_or(self.all);
        own * self.multiplier
    }
}

/// `ceil(n × f)` with a 1e-9 tolerance (so `10 × 1.1` stays 11), clamped to `0..=i32::MAX`.
pub fn scale_count(n: i32, f: f64) -> i32 {
    if f == 1.0 {
        return n;
    }
    let x = (f64::from(n) * f - 1e-9).ceil();
    x.clamp(0.0, f64::from(i32::MAX)) as i32
}

impl EngineConfig {
    /// The workload controllers' reaction delay: the flat `controller_delay` when set, else
    /// the informer delay plus the reconcile time of [`ControllerTiming`].
    pub fn controller_delay(&self) -> SimDuration {
        self.controller_delay.unwrap_or(SimDuration(
            self.controller_timing.informer_delay.0 + self.controller_timing.reconcile.0,
        ))
    }
}

/// The workload controllers' timing (scenario `controllerTiming:`), as kube-controller-manager
/// v1.35 runs them. See `docs/controller-timing.md`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ControllerTiming {
    /// From an API change to the controller's event handler (the watch and the informer);
    /// no upstream flag: ksim's estimate, default 10 ms.
    pub informer_delay: SimDuration,
    /// From the event handler to the sync's first API call (work queue and sync work); no
    /// upstream flag: default 0.
    pub reconcile: SimDuration,
    /// `--kube-api-qps` (default 20): each controller's client is a token bucket of this rate
    /// (0 or negative: no limit).
    pub kube_api_qps: f64,
    /// `--kube-api-burst` (default 30): the bucket's size.
    pub kube_api_burst: u32,
    /// The ReplicaSet controller's `burstReplicas` (default 500): pods created or deleted per
    /// sync; the next sync waits until the informer has seen them (expectations).
    pub burst_replicas: i32,
    /// The DaemonSet controller's `BurstReplicas` (default 250).
    pub daemonset_burst_replicas: i32,
    /// The Job controller's `MaxPodCreateDeletePerSync` (default 500).
    pub job_max_pod_create_delete_per_sync: i32,
    /// `controller.SlowStartInitialBatchSize` (default 1): creations go in batches of 1, 2,
    /// 4, ...; after a failed creation the rest of its sync is skipped.
    pub slow_start_initial_batch_size: i32,
    /// The Job controller's `DefaultJobPodFailureBackOff` (10 s) and
    /// `MaxJobPodFailureBackOff` (6 min): the delay before a replacement after `n` failures
    /// since the last success is `10 s × 2^(n-1)`, capped.
    pub job_pod_failure_backoff: SimDuration,
    pub job_max_pod_failure_backoff: SimDuration,
}

impl Default for ControllerTiming {
    fn default() -> Self {
        ControllerTiming {
            informer_delay: SimDuration::from_millis(10),
            reconcile: SimDuration::ZERO,
            kube_api_qps: 20.0,
            kube_api_burst: 30,
            burst_replicas: 500,
            daemonset_burst_replicas: 250,
            job_max_pod_create_delete_per_sync: 500,
            slow_start_initial_batch_size: 1,
            job_pod_failure_backoff: SimDuration::from_secs(10),
            job_max_pod_failure_backoff: SimDuration::from_secs(360),
        }
    }
}

impl ControllerTiming {
    /// Checks the settings; errors are `(field, message)`.
    pub fn validate(&self) -> Result<(), (String, String)> {
        let neg = |f: &str, d: SimDuration| {
            if d.micros() < 0 {
                Err((f.to_string(), format!("must not be negative, got {d}")))
            } else {
                Ok(())
            }
        };
        neg("informerDelay", self.informer_delay)?;
        neg("reconcile", self.reconcile)?;
        neg("jobPodFailureBackoff", self.job_pod_failure_backoff)?;
        neg("jobMaxPodFailureBackoff", self.job_max_pod_failure_backoff)?;
        if !self.kube_api_qps.is_finite() {
            return Err(("kubeApiQps".into(), "must be a finite number".into()));
        }
        for (f, v) in [
            ("burstReplicas", self.burst_replicas),
            ("daemonsetBurstReplicas", self.daemonset_burst_replicas),
            (
                "jobMaxPodCreateDeletePerSync",
                self.job_max_pod_create_delete_per_sync,
            ),
            (
                "slowStartInitialBatchSize",
                self.slow_start_initial_batch_size,
            ),
        ] {
            if v < 1 {
                return Err((f.into(), format!("must be at least 1, got {v}")));
            }
        }
        if self.kube_api_qps > 0.0 && self.kube_api_burst < 1 {
            return Err(("kubeApiBurst".into(), "must be at least 1".into()));
        }
        Ok(())
    }
}

/// A run-time distribution of controller pods (`workload.runTimes` entries).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum RunTimeDist {
    Fixed(SimDuration),
    Exponential {
        mean: SimDuration,
    },
    Uniform {
        min: SimDuration,
        max: SimDuration,
    },
    /// exp(N(ln median, sigma²)).
    Lognormal {
        median: SimDuration,
        sigma: f64,
    },
}

impl RunTimeDist {
    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), String> {
        match self {
            RunTimeDist::Fixed(d) | RunTimeDist::Exponential { mean: d } if d.micros() < 0 => {
                Err(format!("the duration must not be negative, got {d}"))
            }
            RunTimeDist::Uniform { min, max } if min.micros() < 0 || min > max => Err(format!(
                "uniform: need 0 <= min <= max, got {min} and {max}"
            )),
            RunTimeDist::Lognormal { median, sigma }
                if median.micros() < 0 || !(sigma.is_finite() && *sigma >= 0.0) =>
            {
                Err(format!(
                    "lognormal: need a non-negative median and sigma, got {median} and {sigma}"
                ))
            }
            _ => Ok(()),
        }
    }

    /// One draw.
    pub fn draw(&self, rng: &mut impl rand::Rng) -> SimDuration {
        let secs = |s: f64| SimDuration((s.clamp(0.0, 1e12) * 1e6).round() as i64);
        match self {
            RunTimeDist::Fixed(d) => *d,
            RunTimeDist::Exponential { mean } => {
                let u: f64 = rng.random();
                secs(-mean.as_secs_f64() * (1.0 - u).ln())
            }
            RunTimeDist::Uniform { min, max } => SimDuration(rng.random_range(min.0..=max.0)),
            RunTimeDist::Lognormal { median, sigma } => {
                let u1 = 1.0 - rng.random::<f64>();
                let u2: f64 = rng.random();
                let z = (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos();
                secs(median.as_secs_f64() * (sigma * z).exp())
            }
        }
    }
}

/// Run times of controller pods by controller (scenario `workload.runTimes`): keys
/// `Kind/namespace/name`, `namespace/name`, `name` (the most specific first) or `*`. A Job a
/// CronJob created is also found under its CronJob's keys. The template's `ksim.io/run-for`
/// annotation wins over any entry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ControllerRunTimes(pub std::collections::BTreeMap<String, RunTimeDist>);

impl ControllerRunTimes {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The entry for controller `kind namespace/name`, if any (not `*`).
    pub fn named(&self, kind: &str, namespace: &str, name: &str) -> Option<&RunTimeDist> {
        [
            format!("{kind}/{namespace}/{name}"),
            format!("{namespace}/{name}"),
            name.to_string(),
        ]
        .iter()
        .find_map(|k| self.0.get(k))
    }

    /// The `*` entry.
    pub fn fallback(&self) -> Option<&RunTimeDist> {
        self.0.get("*")
    }
}

/// Hard guards of every run (scenario `limits:`). A run without a horizon normally ends by
/// itself when it stalls (see the engine's termination rule); these catch what that rule
/// cannot, each with an error naming the setting to raise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct RunLimits {
    /// Failed attempts of one pod in a row with no cluster change in between (the same cluster
    /// each time, so the same answer). Upstream would retry forever.
    pub max_attempts_without_change: u32,
    /// Virtual time a run without a horizon may reach.
    pub max_virtual_time: SimDuration,
    /// Nodes a scenario may build at t=0 (nodes files and pools together). Checked by the
    /// readers before anything is allocated, so a typo such as `count: 100000000` is an
    /// error instead of gigabytes of nodes.
    pub max_nodes: u64,
    /// Pods one generator may create (its `count`).
    pub max_pods_per_generator: u64,
    /// Pods alive at once (created and not yet ended: pending, binding or bound). Each costs
    /// the engine, the queue and the records about a kilobyte or two, so a generator with a
    /// rate or count off by orders of magnitude stops with this limit's error instead of
    /// exhausting memory; the default keeps a run within a few GiB.
    pub max_live_pods: u64,
}

impl Default for RunLimits {
    fn default() -> Self {
        RunLimits {
            // At the 5-minute leftover flush, a month of a quiet cluster; at the 10 s error
            // backoff, more than a day.
            max_attempts_without_change: 10_000,
            max_virtual_time: SimDuration::from_secs(366 * 24 * 3600),
            // Ten times the largest clusters Kubernetes supports (5,000 nodes is the
            // documented limit; large forks run 100k); a month of a busy cluster's pods.
            max_nodes: 1_000_000,
            max_pods_per_generator: 100_000_000,
            // About 3.4 KiB per live pod (measured: 500,000 pending pods peak at 1.6 GiB, see
            // docs/inputs.md), so a run stays under 2 GiB; still 3x the 150,000 pods per
            // cluster Kubernetes documents as its limit.
            max_live_pods: 500_000,
        }
    }
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            seed: 0,
            horizon: None,
            costs: CostModels::default(),
            on_node_removal: OnNodeRemoval::default(),
            backoff_flush_period: SimDuration::from_secs(1),
            leftover_flush_period: SimDuration::from_secs(30),
            max_in_unschedulable: SimDuration::from_secs(300),
            autoscaler: None,
            limits: RunLimits::default(),
            controller_delay: None,
            controller_timing: ControllerTiming::default(),
            controller_run_times: ControllerRunTimes::default(),
            controller_scale: ControllerScale::default(),
            control_plane: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_count_rounds_up_with_tolerance() {
        assert_eq!(scale_count(10, 1.1), 11, "10 × 1.1 is 11, not 12");
        assert_eq!(scale_count(3, 1.5), 5);
        assert_eq!(scale_count(4, 1.1), 5);
        assert_eq!(scale_count(1, 0.5), 1);
        assert_eq!(scale_count(7, 0.0), 0);
        assert_eq!(scale_count(0, 2.0), 0);
        assert_eq!(scale_count(i32::MAX, 1000.0), i32::MAX);
        let s = ControllerScale {
            all: 1.5,
            by_name: [
                ("web".to_string(), 2.0),
                ("Job/batch/nightly".to_string(), 3.0),
            ]
            .into_iter()
            .collect(),
            multiplier: 2.0,
        };
        assert_eq!(s.factor_of("Deployment", "default", "web", Some(5.0)), 4.0);
        assert_eq!(s.factor_of("Job", "batch", "nightly", None), 6.0);
        assert_eq!(s.factor_of("Job", "default", "nightly", Some(5.0)), 10.0);
        assert_eq!(s.factor_of("Job", "default", "other", None), 3.0);
        assert!(check_scale(-1.0).is_err() && check_scale(f64::NAN).is_err());
    }
}
