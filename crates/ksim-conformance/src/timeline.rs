//! Timeline cases: timed cluster events replayed through ksim's engine and queue under the
//! oracle's virtual-time model (zero-cost cycles and binding, flushes at whole seconds, victims
//! terminating at once, pods of removed nodes kept bound), compared attempt by attempt.

use std::collections::BTreeMap;

use ksim_api::config::KubeSchedulerConfiguration;
use ksim_api::Node;
use ksim_engine::config::{CostModels, EngineConfig, OnNodeRemoval};
use ksim_engine::{
    InputEvent, Outcome, PodPhase, Record, SimTime, Simulation, TimedEvent, VecSource,
};
use ksim_scheduler::framework::Registry;
use ksim_scheduler::node_info::ClusterObjects;
use ksim_scheduler::queue::Location;
use serde::Deserialize;
use serde_json::Value;

use crate::CaseError;

// Every recorded field is declared (`deny_unknown_fields`): a field the runner does not know
// makes the case fail instead of being ignored.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Input {
    /// Same as the case name.
    #[allow(dead_code)]
    #[serde(default)]
    name: String,
    /// Same as the case's description.
    #[allow(dead_code)]
    #[serde(default)]
    description: String,
    #[serde(default)]
    nodes: Vec<Node>,
    #[serde(default)]
    events: Vec<RawEvent>,
    until: i64,
    #[serde(default, deserialize_with = "ksim_api::config::strict_option")]
    config: Option<KubeSchedulerConfiguration>,
}

#[derive(Deserialize)]
struct RawEvent {
    at: i64,
    #[serde(flatten)]
    event: InputEvent,
}

#[derive(Deserialize, Default, Debug, PartialEq)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct Attempt {
    at: i64,
    pod: String,
    attempt: u32,
    result: String,
    node: String,
    nominated_node: String,
    fit_error: Option<String>,
}

#[derive(Deserialize, Default, Debug)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct Final {
    node: String,
    state: String,
    deleted_by: String,
    queue: String,
    attempts: Option<u32>,
    unschedulable_plugins: Option<Vec<String>>,
    nominated_node: String,
    backoff_expires_at: Option<i64>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct Expected {
    /// Provenance of the recording (`v1.35.4`, or `v1.34.1` for the later cases).
    #[allow(dead_code)]
    k8s_version: String,
    attempts: Vec<Attempt>,
    #[serde(rename = "final")]
    final_: BTreeMap<String, Final>,
}

/// The control plane of the oracle's runs: none of kube-controller-manager's controllers.
fn no_controllers() -> ksim_engine::control_plane::ControlPlane {
    let mut cp = ksim_engine::control_plane::ControlPlane::default();
    cp.disruption.enabled = false;
    cp.pod_gc.enabled = false;
    cp
}

/// Runs one timeline case as the version that recorded it; returns the differences (empty =
/// pass).
pub fn run(case: &Value) -> Result<Vec<String>, CaseError> {
    run_as(case, crate::case_version(case)?)
}

/// Runs one timeline case as `version` (its default gates); returns the differences.
pub fn run_as(
    case: &Value,
    version: ksim_api::version::KubernetesVersion,
) -> Result<Vec<String>, CaseError> {
    let input: Input = serde_json::from_value(case.get("input").cloned().unwrap_or(Value::Null))
        .map_err(|e| CaseError::Format(format!("input: {e}")))?;
    let expected: Expected =
        serde_json::from_value(case.get("expected").cloned().unwrap_or(Value::Null))
            .map_err(|e| CaseError::Format(format!("expected: {e}")))?;
    let sched_cfg = input.config.unwrap_or_default();
    let cfg = EngineConfig {
        seed: 1,
        horizon: Some(SimTime::from_secs(input.until)),
        costs: CostModels::zero(),
        on_node_removal: OnNodeRemoval::KeepBound,
        // The oracle ran the scheduler on a fake clientset: no kube-controller-manager (no
        // disruption controller, no pod GC) and no kubelet (deletions without grace, which
        // `CostModels::zero` gives).
        control_plane: no_controllers(),
        ..Default::default()
    };
    let mut sim = Simulation::new(
        cfg,
        &sched_cfg,
        &Registry::in_tree_for(version),
        input.nodes,
        ClusterObjects::default(),
    )
    .map_err(|e| CaseError::Format(e.to_string()))?;
    // Final states include pods that ended.
    sim.retain_ended_pods(true);
    // The oracle labels a pod's `deletedBy` with the last DeletePod/CompletePod event naming it,
    // even when the pod was already gone (e.g. preempted earlier): keep those labels.
    let mut late_labels: Vec<(String, i64, &'static str)> = Vec::new();
    for e in &input.events {
        match &e.event {
            InputEvent::DeletePod { namespace, name } => {
                late_labels.push((format!("{namespace}/{name}"), e.at, "trace"))
            }
            InputEvent::CompletePod { namespace, name } => {
                late_labels.push((format!("{namespace}/{name}"), e.at, "completed"))
            }
            _ => {}
        }
    }
    let events: Vec<TimedEvent> = input
        .events
        .into_iter()
        .map(|e| TimedEvent {
            at: SimTime::from_secs(e.at),
            event: e.event,
        })
        .collect();
    sim.add_source(Box::new(VecSource::new(events)))
        .map_err(|e| CaseError::Format(e.to_string()))?;
    let mut got: Vec<Attempt> = Vec::new();
    let mut ended_at: BTreeMap<String, i64> = BTreeMap::new();
    let mut obs = |r: &Record| {
        if let Record::PodEnded {
            at,
            namespace,
            name,
            ..
        } = r
        {
            ended_at.insert(format!("{namespace}/{name}"), at.whole_secs());
        }
        if let Record::Attempt {
            at,
            namespace,
            name,
            attempt,
            result,
            node,
            nominated_node,
            message,
            ..
        } = r
        {
            got.push(Attempt {
                at: at.whole_secs(),
                pod: format!("{namespace}/{name}"),
                attempt: *attempt,
                result: result.as_str().to_string(),
                node: node.clone(),
                nominated_node: nominated_node.clone(),
                fit_error: if message.is_empty() {
                    None
                } else {
                    Some(message.clone())
                },
            });
        }
    };
    let run_result = sim.run(&mut obs);
    let mut diffs = Vec::new();
    if let Err(e) = run_result {
        diffs.push(format!("run failed: {e}"));
    }

    let n = expected.attempts.len().max(got.len());
    for i in 0..n {
        match (expected.attempts.get(i), got.get(i)) {
            (Some(e), Some(g)) => {
                let same = e.at == g.at
                    && e.pod == g.pod
                    && e.attempt == g.attempt
                    && e.result == g.result
                    && e.node == g.node
                    && e.nominated_node == g.nominated_node;
                if !same {
                    diffs.push(format!(
                        "attempt #{i}: expected t={} {} #{} {} {:?} nominated {:?}, got t={} {} #{} {} {:?} nominated {:?}",
                        e.at, e.pod, e.attempt, e.result, e.node, e.nominated_node, g.at, g.pod, g.attempt, g.result, g.node, g.nominated_node
                    ));
                    break;
                }
                // Recorded on every failed attempt and only there.
                if e.fit_error != g.fit_error {
                    diffs.push(format!(
                        "attempt #{i} ({} at t={}) fitError:\n  expected {:?}\n  got      {:?}",
                        e.pod, e.at, e.fit_error, g.fit_error
                    ));
                    break;
                }
            }
            (Some(e), None) => {
                diffs.push(format!(
                    "attempt #{i}: expected t={} {} #{}, got nothing",
                    e.at, e.pod, e.attempt
                ));
                break;
            }
            (None, Some(g)) => {
                diffs.push(format!(
                    "attempt #{i}: unexpected t={} {} #{} {}",
                    g.at, g.pod, g.attempt, g.result
                ));
                break;
            }
            (None, None) => {}
        }
    }

    // Final states: the last pod slot with each key.
    let mut last: BTreeMap<String, usize> = BTreeMap::new();
    for (i, p) in sim.pods().iter().enumerate() {
        last.insert(p.info.key.clone(), i);
    }
    for (key, ef) in &expected.final_ {
        let Some(&i) = last.get(key) else {
            diffs.push(format!("final {key}: pod never created"));
            continue;
        };
        let slot = &sim.pods()[i];
        let mut pending = PendingView::default();
        let (state, node, by, queue, attempts) = match slot.phase {
            PodPhase::Bound | PodPhase::Binding => {
                ("bound", slot.node.clone(), "", String::new(), None)
            }
            PodPhase::Pending => {
                let q = sim.queue().get(i as u32);
                if let Some(q) = q {
                    pending.unschedulable_plugins = q
                        .unschedulable_plugins
                        .iter()
                        .map(|p| p.to_string())
                        .collect();
                    pending.backoff_expires_at =
                        matches!(q.location, Location::Backoff | Location::ErrorBackoff)
                            .then(|| sim.queue().backoff_expiry_sec(q));
                }
                pending.nominated_node = sim
                    .nominator()
                    .node_of(slot.info.uid())
                    .unwrap_or_default()
                    .to_string();
                (
                    "pending",
                    String::new(),
                    "",
                    q.map(|q| q.location.as_str().to_string())
                        .unwrap_or_default(),
                    q.map(|q| q.attempts),
                )
            }
            PodPhase::Ended(o) => {
                let mut by = match o {
                    Outcome::Preempted => "preemption",
                    Outcome::Succeeded => "completed",
                    _ => "trace",
                };
                if let Some(end) = ended_at.get(key) {
                    if let Some((_, _, label)) =
                        late_labels.iter().rfind(|(k, at, _)| k == key && at > end)
                    {
                        by = label;
                    }
                }
                ("deleted", String::new(), by, String::new(), None)
            }
        };
        let mut bad = state != ef.state || node != ef.node || by != ef.deleted_by;
        if state == "pending" {
            bad |= queue != ef.queue || attempts != ef.attempts;
            if let Some(exp) = &ef.unschedulable_plugins {
                let mut exp = exp.clone();
                exp.sort();
                let mut got = pending.unschedulable_plugins.clone();
                got.sort();
                if exp != got {
                    diffs.push(format!(
                        "final {key}: unschedulablePlugins expected {exp:?}, got {got:?}"
                    ));
                }
            }
            if ef.nominated_node != pending.nominated_node {
                diffs.push(format!(
                    "final {key}: nominatedNode expected {:?}, got {:?}",
                    ef.nominated_node, pending.nominated_node
                ));
            }
            if ef.backoff_expires_at != pending.backoff_expires_at {
                diffs.push(format!(
                    "final {key}: backoffExpiresAt expected {:?}, got {:?}",
                    ef.backoff_expires_at, pending.backoff_expires_at
                ));
            }
        } else if ef.unschedulable_plugins.is_some()
            || !ef.nominated_node.is_empty()
            || ef.backoff_expires_at.is_some()
        {
            // Those are recorded for pending pods only; the state mismatch is reported below.
            bad = true;
        }
        if bad {
            diffs.push(format!(
                "final {key}: expected {} node {:?} deletedBy {:?} queue {:?} attempts {:?}, got {state} node {node:?} deletedBy {by:?} queue {queue:?} attempts {attempts:?}",
                ef.state, ef.node, ef.deleted_by, ef.queue, ef.attempts
            ));
        }
    }
    Ok(diffs)
}

/// What the queue and the nominator hold for a pod still pending at the end.
#[derive(Default)]
struct PendingView {
    unschedulable_plugins: Vec<String>,
    nominated_node: String,
    backoff_expires_at: Option<i64>,
}
