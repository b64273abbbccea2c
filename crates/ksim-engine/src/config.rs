//! Engine settings: seed, horizon, cost models and what happens to pods of removed nodes.

use serde::{Deserialize, Serialize};

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
    /// Grace period a preemption victim takes to terminate (default 0: immediate, as upstream's
    /// async preemption with zero grace; set e.g. "30s" to model terminationGracePeriodSeconds).
    pub victim_grace: SimDuration,
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
            victim_grace: SimDuration::ZERO,
            provisioning_delay: SimDuration::from_secs(5),
        }
    }
}

impl CostModels {
    /// Zero-cost cycles and binding: the timeline conformance model.
    pub fn zero() -> CostModels {
        CostModels {
            scheduling_cycle: CycleCost::zero(),
            bind_latency: SimDuration::ZERO,
            bind_jitter: SimDuration::ZERO,
            pod_startup: SimDuration::ZERO,
            victim_grace: SimDuration::ZERO,
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
    /// How long a workload controller takes to react to a change (its object created or
    /// updated, one of its pods gone, a node added); default 1 s. See `sim/controllers`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub controller_delay: Option<SimDuration>,
    /// What-if replica factors of the workload controllers (scenario `workload.controllerScale`,
    /// the sweep's `controllerScale` / `workloadScale` axes); identity by default.
    #[serde(skip_serializing_if = "ControllerScale::is_identity")]
    pub controller_scale: ControllerScale,
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
    /// The workload controllers' reaction delay (default 1 s).
    pub fn controller_delay(&self) -> SimDuration {
        self.controller_delay.unwrap_or(SimDuration::from_secs(1))
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
            max_live_pods: 1_000_000,
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
            controller_scale: ControllerScale::default(),
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
