//! The disruption controller's arithmetic, as pure functions of a PDB, its pods and the scale
//! of their controllers (upstream `pkg/controller/disruption/disruption.go`: `trySync`,
//! `getExpectedPodCount`, `getExpectedScale`, `countHealthyPods`, `buildDisruptedPodMap`,
//! `updatePdbStatus`, `failSafe`; the rounding of `intstr.GetScaledValueFromIntOrPercent`).

use std::collections::BTreeMap;

use ksim_api::PodDisruptionBudget;
use serde_json::Value;

/// What the controller reads of one pod the PDB's selector picks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PdbPod {
    pub name: String,
    /// Its controller (`metav1.GetControllerOf`): (kind, name); `None` for an unmanaged pod.
    pub controller: Option<(String, String)>,
    /// `apipod.IsPodReady`.
    pub ready: bool,
    /// `deletionTimestamp` set.
    pub deleting: bool,
}

/// The scale of a pod's controller (upstream's finders: ReplicaSet, Deployment through its
/// ReplicaSet, StatefulSet, ReplicationController, then any kind with a scale subresource):
/// `Ok(Some(replicas))`, `Ok(None)` when no such controller exists, `Err` when its kind has no
/// scale subresource.
pub trait ScaleLookup {
    fn scale_of(&self, kind: &str, name: &str) -> Result<Option<i32>, String>;
}

impl<F: Fn(&str, &str) -> Result<Option<i32>, String>> ScaleLookup for F {
    fn scale_of(&self, kind: &str, name: &str) -> Result<Option<i32>, String> {
        self(kind, name)
    }
}

/// The outcome of one sync.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Synced {
    pub disruptions_allowed: i32,
    pub current_healthy: i32,
    pub desired_healthy: i32,
    pub expected_pods: i32,
    /// `status.disruptedPods` as kept (`buildDisruptedPodMap`).
    pub disrupted_pods: BTreeMap<String, String>,
    /// Pods without a controller left out of the expected count (upstream's `UnmanagedPods`
    /// event).
    pub unmanaged: Vec<String>,
    /// `Some(message)` when the sync failed and `failSafe` set 0 allowed, the other counts
    /// unchanged (`SyncFailed`).
    pub failed: Option<String>,
}

/// `intstr.GetScaledValueFromIntOrPercent(v, total, roundUp=true)`: an integer as is, a
/// string `"N%"` as `ceil(N × total / 100)`, a string `"N"` as N.
pub fn scaled_value(v: &Value, total: i32) -> Result<i32, String> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .and_then(|i| i32::try_from(i).ok())
            .ok_or_else(|| format!("invalid value for IntOrString: {n}")),
        Value::String(s) => {
            let (digits, percent) = match s.strip_suffix('%') {
                Some(d) => (d, true),
                None => (s.as_str(), false),
            };
            let n: i64 = digits.parse().map_err(|_| {
                format!(
                    "invalid value for IntOrString: invalid value {s:?}: strconv.Atoi: parsing \
                     {digits:?}: invalid syntax"
                )
            })?;
            if !percent {
                return i32::try_from(n).map_err(|_| format!("invalid value {s:?}"));
            }
            let prod = n * i64::from(total);
            // math.Ceil(float64(value) * float64(total) / 100), in integers.
            let v = if prod >= 0 {
                (prod + 99) / 100
            } else {
                -((-prod) / 100)
            };
            i32::try_from(v).map_err(|_| format!("invalid value {s:?}"))
        }
        other => Err(format!("invalid value for IntOrString: {other}")),
    }
}

/// `getExpectedScale`: the sum of the scales of the pods' controllers (each counted once);
/// pods without a controller are listed apart; a pod whose controller is not found fails.
fn expected_scale(pods: &[PdbPod], scales: &dyn ScaleLookup) -> Result<(i32, Vec<String>), String> {
    let mut by_controller: BTreeMap<(String, String), i32> = BTreeMap::new();
    let mut unmanaged = Vec::new();
    for p in pods {
        let Some(c) = &p.controller else {
            unmanaged.push(p.name.clone());
            continue;
        };
        if by_controller.contains_key(c) {
            continue;
        }
        match scales.scale_of(&c.0, &c.1)? {
            Some(n) => {
                by_controller.insert(c.clone(), n);
            }
            None => return Err(format!("found no controllers for pod {:?}", p.name)),
        }
    }
    Ok((by_controller.values().sum(), unmanaged))
}

/// `getExpectedPodCount`: (expectedCount, desiredHealthy, unmanaged pods).
pub fn expected_pod_count(
    pdb: &PodDisruptionBudget,
    pods: &[PdbPod],
    scales: &dyn ScaleLookup,
) -> Result<(i32, i32, Vec<String>), String> {
    if let Some(max) = &pdb.spec.max_unavailable {
        let (expected, unmanaged) = expected_scale(pods, scales)?;
        let max = scaled_value(max, expected)?;
        return Ok((expected, (expected - max).max(0), unmanaged));
    }
    match &pdb.spec.min_available {
        Some(Value::Number(_)) => {
            let min = scaled_value(pdb.spec.min_available.as_ref().unwrap_or(&Value::Null), 0)?;
            Ok((pods.len() as i32, min, Vec::new()))
        }
        Some(min @ Value::String(_)) => {
            let (expected, unmanaged) = expected_scale(pods, scales)?;
            Ok((expected, scaled_value(min, expected)?, unmanaged))
        }
        _ => Ok((0, 0, Vec::new())),
    }
}

/// `countHealthyPods`: ready pods that are neither being deleted nor listed as disrupted.
pub fn count_healthy(pods: &[PdbPod], disrupted: &BTreeMap<String, String>) -> i32 {
    pods.iter()
        .filter(|p| !p.deleting && !disrupted.contains_key(&p.name) && p.ready)
        .count() as i32
}

/// One sync of a PDB (`trySync`, then `updatePdbStatus` or `failSafe`). `disrupted` is
/// `status.disruptedPods` with the entries older than `DeletionTimeout` already dropped;
/// `buildDisruptedPodMap` keeps those whose pod is selected and not being deleted.
pub fn sync(
    pdb: &PodDisruptionBudget,
    pods: &[PdbPod],
    disrupted: &BTreeMap<String, String>,
    scales: &dyn ScaleLookup,
) -> Synced {
    let kept: BTreeMap<String, String> = pods
        .iter()
        .filter(|p| !p.deleting)
        .filter_map(|p| Some((p.name.clone(), disrupted.get(&p.name)?.clone())))
        .collect();
    match expected_pod_count(pdb, pods, scales) {
        Ok((expected, desired, unmanaged)) => {
            let healthy = count_healthy(pods, &kept);
            let mut allowed = healthy - desired;
            if expected <= 0 || allowed <= 0 {
                allowed = 0;
            }
            Synced {
                disruptions_allowed: allowed,
                current_healthy: healthy,
                desired_healthy: desired,
                expected_pods: expected,
                disrupted_pods: kept,
                unmanaged,
                failed: None,
            }
        }
        Err(e) => Synced {
            disruptions_allowed: 0,
            current_healthy: pdb.status.current_healthy,
            desired_healthy: pdb.status.desired_healthy,
            expected_pods: pdb.status.expected_pods,
            disrupted_pods: pdb.status.disrupted_pods.clone(),
            unmanaged: Vec::new(),
            failed: Some(e),
        },
    }
}
