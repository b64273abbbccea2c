//! The timed scheduling loop: pods are added to the scheduler's own queue and scheduled one
//! after another, each assumed onto its node before the next is tried, as kube-scheduler's
//! `scheduleOne` loop does in-process (no API server). The code path is the engine's cycle:
//! queue pop, `Algorithm::schedule_pod`, Reserve, Permit, assume into the snapshot, PreBind,
//! Bind, and the `AssignedPodAdd` event offered to the queue; a pod that fits nowhere goes
//! through PostFilter (preemption) and into the unschedulable pool.
//!
//! Only the loop is timed: parsing the workload, building the profile and the snapshot of the
//! nodes are not (upstream's yardstick does not time them either). Building each pending pod's
//! `PodInfo` and adding it to the queue is timed.

use std::sync::Arc;
use std::time::Instant;

use ksim_api::config::KubeSchedulerConfiguration;
use ksim_api::defaults::{default_node, default_pod};
use ksim_scheduler::framework::{
    build_frameworks, ClusterEventKind, ClusterEventObjects, CycleState, PostFilterContext,
    Registry,
};
use ksim_scheduler::node_info::{initial_node_order, ClusterObjects, Snapshot};
use ksim_scheduler::pod_info::PodInfo;
use ksim_scheduler::queue::{Nominator, QueueConfig, QueueingStrategy, SchedulingQueue};
use ksim_scheduler::schedule::{Algorithm, Diagnosis, ScheduleError};

use crate::{BenchError, Workload};

/// How to run the loop.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Seeds the tie-break RNG (the engine's stream 1 of this seed) and preemption's (stream 2).
    pub seed: u64,
    /// The scheduler configuration (default: the default profile, adaptive
    /// percentageOfNodesToScore).
    pub config: KubeSchedulerConfiguration,
}

/// What one run of the loop measured.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchResult {
    /// Pending pods in the workload.
    pub pods: usize,
    /// Pods placed (assumed) at the end.
    pub scheduled: usize,
    /// Scheduling attempts (pops), including retries after a cluster event.
    pub attempts: u64,
    /// Pods preempted by a higher-priority pod.
    pub preempted: usize,
    /// Seconds spent in the loop.
    pub secs: f64,
    /// Placement digest (see [`crate::digest`]).
    pub digest: u64,
    /// `namespace/name` → node ("" when not placed), in workload order.
    pub placements: Vec<(String, String)>,
}

impl BenchResult {
    /// Pending pods divided by loop seconds.
    pub fn pods_per_sec(&self) -> f64 {
        if self.secs > 0.0 {
            self.pods as f64 / self.secs
        } else {
            0.0
        }
    }
}

/// Runs the loop once over a fresh copy of the workload's cluster.
pub fn run_once(w: &Workload, opts: &Options) -> Result<BenchResult, BenchError> {
    // --- untimed setup: defaulting, profile, snapshot of nodes and already-bound pods ---------
    let fwks = build_frameworks(&Registry::in_tree(), &opts.config)
        .map_err(|e| BenchError::Config(e.to_string()))?;
    let fwk = fwks[0].clone();
    let nodes: Vec<Arc<ksim_api::Node>> = w
        .nodes
        .iter()
        .map(|n| {
            let mut n = n.clone();
            default_node(&mut n);
            Arc::new(n)
        })
        .collect();
    let mut bound = Vec::new();
    let mut pending = Vec::new();
    for p in &w.pods {
        let mut p = p.clone();
        default_pod(&mut p);
        if p.spec.node_name.is_empty() {
            pending.push(p);
        } else {
            bound.push(Arc::new(PodInfo::new(p)));
        }
    }
    // As the engine: the initial nodes in the API server's list order (by name).
    let mut nodes = nodes;
    initial_node_order(&mut nodes);
    let mut snapshot = Snapshot::build(nodes, bound, Arc::new(ClusterObjects::default()));
    let pct = opts.config.percentage_of_nodes_to_score.unwrap_or(0);
    let mut alg = Algorithm::new(ksim_engine::sim::rng_stream(opts.seed, 1), pct);
    let mut preempt_rng = ksim_engine::sim::rng_stream(opts.seed, 2);
    let mut queue = SchedulingQueue::new(QueueConfig::default());
    let mut nominator = Nominator::default();
    let mut placements: Vec<(String, String)> =
        pending.iter().map(|p| (p.key(), String::new())).collect();
    let n_pending = pending.len();
    let mut seq: u64 = 0;
    let mut attempts: u64 = 0;
    let mut preempted = 0;

    // --- timed: queue, cycles, assume ---------------------------------------------------------
    let start = Instant::now();
    for (i, p) in pending.into_iter().enumerate() {
        seq += 1;
        let info = Arc::new(PodInfo::new(p));
        let f = fwks
            .iter()
            .find(|f| f.profile_name == info.pod.spec.scheduler_name)
            .unwrap_or(&fwk);
        queue.add(i as u32, info, (0, seq), f);
    }
    while let Some((id, info, _attempt)) = queue.pop() {
        attempts += 1;
        seq += 1;
        let stamp = (0, seq);
        let f = fwks
            .iter()
            .find(|f| f.profile_name == info.pod.spec.scheduler_name)
            .unwrap_or(&fwk);
        let mut state = CycleState::new();
        match alg.schedule_pod(f, &mut state, &info, &snapshot, &nominator) {
            Ok(r) => {
                let node = snapshot.nodes[r.suggested_host].name().to_string();
                let mut s = f.run_reserve(&mut state, &info, &node);
                if s.is_success() {
                    s = f.run_permit(&state, &info, &node);
                }
                if !s.is_success() {
                    f.run_unreserve(&mut state, &info, &node);
                    let mut d = Diagnosis::default();
                    d.add_plugin_status(&s);
                    let strategy = failure_strategy(&d);
                    queue.failed_unschedulable(
                        id,
                        stamp,
                        d.unschedulable_plugins,
                        d.pending_plugins,
                        strategy,
                    );
                    continue;
                }
                // Assume: the pod with its node set goes into the cache (snapshot).
                queue.remove(id);
                nominator.remove(info.uid());
                let assumed = Arc::new(info.assumed_on(&node));
                snapshot.add_pod(assumed.clone());
                let _ = f.run_pre_bind(&state, &assumed, &node);
                let _ = f.run_bind(&state, &assumed, &node);
                placements[id as usize].1 = node;
                queue.on_event(
                    &[ClusterEventKind::AssignedPodAdd],
                    &ClusterEventObjects::Pod {
                        old: None,
                        new: Some(&assumed),
                    },
                    0,
                    f,
                );
            }
            Err(ScheduleError::Fit(fit)) => {
                let mut nominated = None;
                let mut victims = Vec::new();
                if f.has_post_filter_plugins() {
                    let mut ctx = PostFilterContext {
                        framework: &**f,
                        snapshot: &snapshot,
                        nominated: &nominator,
                        rng: &mut preempt_rng,
                        extenders: &[],
                    };
                    let (r, _s) =
                        f.run_post_filter(&state, &info, &fit.diagnosis.node_to_status, &mut ctx);
                    if let Some(r) = r {
                        nominated = r.nominated_node.filter(|n| !n.is_empty());
                        victims = r.victims;
                    }
                }
                queue.failed_unschedulable(
                    id,
                    stamp,
                    fit.diagnosis.unschedulable_plugins.clone(),
                    fit.diagnosis.pending_plugins.clone(),
                    failure_strategy(&fit.diagnosis),
                );
                if let Some(node) = nominated {
                    let mut p = info.pod.clone();
                    p.status.nominated_node_name = node.clone();
                    let nominee = Arc::new(PodInfo::new(p));
                    queue.set_pod(id, nominee.clone());
                    nominator.add(nominee, &node);
                }
                // Victims go at once (zero grace period); their deletion is a cluster event.
                for v in victims {
                    if snapshot.remove_pod(&v.pod.spec.node_name, v.uid()) {
                        preempted += 1;
                        if let Some(slot) = placements.iter_mut().find(|(k, _)| *k == v.key) {
                            slot.1.clear();
                        }
                        queue.on_event(
                            &[ClusterEventKind::AssignedPodDelete],
                            &ClusterEventObjects::Pod {
                                old: Some(&v),
                                new: None,
                            },
                            0,
                            f,
                        );
                    }
                }
            }
            Err(_) => {
                queue.failed_error(id, stamp);
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();

    let scheduled = placements.iter().filter(|(_, n)| !n.is_empty()).count();
    Ok(BenchResult {
        pods: n_pending,
        scheduled,
        attempts,
        preempted,
        secs,
        digest: crate::digest(&placements),
        placements,
    })
}

/// The loop has no in-flight events (nothing happens while a pod is scheduled): a failed pod
/// stays in the pool unless no plugin rejected it (`determineSchedulingHintForInFlightPod`).
fn failure_strategy(d: &Diagnosis) -> QueueingStrategy {
    if d.unschedulable_plugins.is_empty() && d.pending_plugins.is_empty() {
        QueueingStrategy::AfterBackoff
    } else {
        QueueingStrategy::Skip
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen::{generate, Kind, Spec};

    #[test]
    fn every_kind_runs_and_is_deterministic() {
        for kind in Kind::ALL {
            let w = generate(&Spec::reference(kind, 30, 120, 5)).unwrap();
            let a = run_once(&w, &Options::default()).unwrap();
            let b = run_once(&w, &Options::default()).unwrap();
            assert_eq!(a.digest, b.digest, "{kind:?}");
            assert_eq!(a.placements, b.placements);
            assert_eq!(a.pods, 120);
            assert!(a.scheduled > 100, "{kind:?}: {}", a.scheduled);
        }
    }

    #[test]
    fn a_full_cluster_leaves_pods_pending() {
        let mut spec = Spec::reference(Kind::Plain, 2, 40, 1);
        spec.node_cpu = 4;
        let w = generate(&spec).unwrap();
        let r = run_once(&w, &Options::default()).unwrap();
        assert!(r.scheduled < 40);
        assert!(r.scheduled > 0);
    }
}
