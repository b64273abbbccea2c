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
use ksim_api::object::{ApiObject, ObjectKind};
use ksim_scheduler::framework::{
    build_frameworks, ClusterEventKind, ClusterEventObjects, CycleState, Framework, ObjectAction,
    PostFilterContext, Registry,
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
    /// The Kubernetes version and feature gates the scheduler behaves as (default: 1.36).
    pub gates: ksim_api::version::FeatureGates,
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
    let mut bound = Vec::new();
    let mut pending = Vec::new();
    for p in &w.pods {
        let mut p = p.clone();
        default_pod(&mut p);
        if p.spec.node_name.is_empty() {
            pending.push(p);
        } else {
            bound.push(p);
        }
    }
    let mut lp = Loop::new(&w.nodes, bound, opts)?;
    let n_pending = pending.len();

    // --- timed: queue, cycles, assume ---------------------------------------------------------
    let start = Instant::now();
    for p in pending {
        lp.enqueue(p);
    }
    lp.drain();
    let secs = start.elapsed().as_secs_f64();

    let scheduled = lp.placements.iter().filter(|(_, n)| !n.is_empty()).count();
    Ok(BenchResult {
        pods: n_pending,
        scheduled,
        attempts: lp.attempts,
        preempted: lp.preempted,
        secs,
        digest: crate::digest(&lp.placements),
        placements: lp.placements,
    })
}

/// The scheduling loop's state: profiles, the snapshot (cache), the queue and the nominator.
/// Pods are identified by the order they were enqueued (their index in `placements`).
pub(crate) struct Loop {
    fwks: Vec<Arc<Framework>>,
    pub(crate) snapshot: Snapshot,
    alg: Algorithm,
    preempt_rng: rand_chacha::ChaCha8Rng,
    queue: SchedulingQueue,
    nominator: Nominator,
    seq: u64,
    pub(crate) attempts: u64,
    pub(crate) preempted: usize,
    /// `namespace/name` → node ("" when not placed), in enqueue order.
    pub(crate) placements: Vec<(String, String)>,
    /// `namespace/name` → the first index in `placements` with that key (a preempted victim's
    /// placement is cleared through it, without walking every placement).
    placement_ids: std::collections::HashMap<String, u32>,
}

impl Loop {
    /// A loop over `nodes` (defaulted here) with `bound` pods (defaulted by the caller) in
    /// place.
    pub(crate) fn new(
        nodes: &[ksim_api::Node],
        bound: Vec<ksim_api::Pod>,
        opts: &Options,
    ) -> Result<Loop, BenchError> {
        Loop::with_objects(nodes, bound, ClusterObjects::default(), opts)
    }

    /// As [`Loop::new`], with cluster objects (DRA classes, slices, claims) in place.
    pub(crate) fn with_objects(
        nodes: &[ksim_api::Node],
        bound: Vec<ksim_api::Pod>,
        objects: ClusterObjects,
        opts: &Options,
    ) -> Result<Loop, BenchError> {
        let fwks = build_frameworks(&Registry::in_tree_gates(&opts.gates), &opts.config)
            .map_err(|e| BenchError::Config(e.to_string()))?;
        let mut nodes: Vec<Arc<ksim_api::Node>> = nodes
            .iter()
            .map(|n| {
                let mut n = n.clone();
                default_node(&mut n);
                Arc::new(n)
            })
            .collect();
        let bound: Vec<Arc<PodInfo>> = bound
            .into_iter()
            .map(|p| Arc::new(PodInfo::new(p)))
            .collect();
        // As the engine: the initial nodes in the API server's list order (by name).
        initial_node_order(&mut nodes);
        let snapshot = Snapshot::build(nodes, bound, Arc::new(objects));
        let pct = opts.config.percentage_of_nodes_to_score.unwrap_or(0);
        Ok(Loop {
            fwks,
            snapshot,
            alg: Algorithm::new(ksim_engine::sim::rng_stream(opts.seed, 1), pct),
            preempt_rng: ksim_engine::sim::rng_stream(opts.seed, 2),
            queue: SchedulingQueue::new(QueueConfig::default()),
            nominator: Nominator::default(),
            seq: 0,
            attempts: 0,
            preempted: 0,
            placements: Vec::new(),
            placement_ids: std::collections::HashMap::new(),
        })
    }

    fn framework(&self, info: &PodInfo) -> Arc<Framework> {
        self.fwks
            .iter()
            .find(|f| f.profile_name == info.pod.spec.scheduler_name)
            .unwrap_or(&self.fwks[0])
            .clone()
    }

    /// Adds a pending pod (defaulted by the caller) to the queue; returns its id.
    pub(crate) fn enqueue(&mut self, p: ksim_api::Pod) -> u32 {
        self.seq += 1;
        let id = self.placements.len() as u32;
        let key = p.key();
        self.placement_ids.entry(key.clone()).or_insert(id);
        self.placements.push((key, String::new()));
        let info = Arc::new(PodInfo::new(p));
        let f = self.framework(&info);
        self.queue.add(id, info, (0, self.seq), &f);
        id
    }

    /// Deletes a pod that is still pending (a churn pod): it leaves the queue.
    pub(crate) fn delete_pending(&mut self, id: u32) {
        if let Some(q) = self.queue.remove(id) {
            self.nominator.remove(q.pod.uid());
        }
    }

    /// Adds a node (defaulted here) and offers the NodeAdd event to the queue.
    pub(crate) fn add_node(&mut self, node: &ksim_api::Node) {
        let mut n = node.clone();
        default_node(&mut n);
        let n = Arc::new(n);
        self.snapshot
            .add_node(ksim_scheduler::node_info::NodeInfo::new(n.clone()));
        let f = self.fwks[0].clone();
        self.queue.on_event(
            &[ClusterEventKind::NodeAdd],
            &ClusterEventObjects::Node {
                old: None,
                new: Some(&n),
            },
            0,
            &f,
        );
    }

    /// Replaces (`Some`) or deletes (`None`) a cluster object and offers the event to the
    /// queue, as the engine's `change_objects` does.
    pub(crate) fn change_object(
        &mut self,
        f: &Arc<Framework>,
        kind: ObjectKind,
        namespace: &str,
        name: &str,
        new: Option<ApiObject>,
    ) {
        let old = self.snapshot.objects.get_object(kind, namespace, name);
        let objects = Arc::make_mut(&mut self.snapshot.objects);
        match &new {
            Some(o) => {
                objects.put_object(o.clone());
            }
            None => {
                objects.delete_object(kind, namespace, name);
            }
        }
        let action = match (&old, &new) {
            (None, Some(_)) => ObjectAction::Add,
            (Some(_), Some(_)) => ObjectAction::Update,
            (Some(_), None) => ObjectAction::Delete,
            (None, None) => return,
        };
        self.queue.on_event(
            &[ClusterEventKind::Object(kind, action)],
            &ClusterEventObjects::Object {
                old: old.as_ref(),
                new: new.as_ref(),
            },
            0,
            f,
        );
    }

    /// Deletes a placed pod (its node's cache forgets it) and offers the AssignedPodDelete
    /// event; false when it is not placed.
    pub(crate) fn delete_placed(&mut self, id: u32, pod: &ksim_api::Pod) -> bool {
        let node = self.placements[id as usize].1.clone();
        if node.is_empty() || !self.snapshot.remove_pod(&node, &pod.metadata.uid) {
            return false;
        }
        let mut p = pod.clone();
        p.spec.node_name = node;
        let info = PodInfo::new(p);
        let f = self.fwks[0].clone();
        self.queue.on_event(
            &[ClusterEventKind::AssignedPodDelete],
            &ClusterEventObjects::Pod {
                old: Some(&info),
                new: None,
            },
            0,
            &f,
        );
        true
    }

    /// The first profile's framework.
    pub(crate) fn framework0(&self) -> Arc<Framework> {
        self.fwks[0].clone()
    }

    /// Removes a node (its pods go with it, as the cache forgets them).
    pub(crate) fn remove_node(&mut self, name: &str) {
        self.snapshot.remove_node(name);
    }

    /// Pops and schedules pods until the active queue is empty (pods that failed wait in the
    /// unschedulable pool for a cluster event).
    pub(crate) fn drain(&mut self) {
        while let Some((id, info, _attempt)) = self.queue.pop() {
            self.attempts += 1;
            self.seq += 1;
            let stamp = (0, self.seq);
            let f = self.framework(&info);
            self.cycle(&f, id, info, stamp);
        }
    }

    fn cycle(&mut self, f: &Arc<Framework>, id: u32, info: Arc<PodInfo>, stamp: (i64, u64)) {
        let mut state = CycleState::new();
        match self
            .alg
            .schedule_pod(f, &mut state, &info, &self.snapshot, &self.nominator)
        {
            Ok(r) => {
                let node = self.snapshot.nodes[r.suggested_host].name().to_string();
                let mut s = f.run_reserve(&mut state, &info, &node);
                if s.is_success() {
                    s = f.run_permit(&state, &info, &node);
                }
                if !s.is_success() {
                    f.run_unreserve(&mut state, &info, &node);
                    let mut d = Diagnosis::default();
                    d.add_plugin_status(&s);
                    let strategy = failure_strategy(&d);
                    self.queue.failed_unschedulable(
                        id,
                        stamp,
                        d.unschedulable_plugins,
                        d.pending_plugins,
                        strategy,
                    );
                    return;
                }
                // Assume: the pod with its node set goes into the cache (snapshot).
                self.queue.remove(id);
                self.nominator.remove(info.uid());
                let assumed = Arc::new(info.assumed_on(&node));
                self.snapshot.add_pod(assumed.clone());
                let _ = f.run_pre_bind(&state, &assumed, &node);
                // DynamicResources' PreBind writes its claims, as the engine applies them.
                let claims = ksim_scheduler::plugins::dynamic_resources::prebind_writes(&state);
                for c in claims {
                    let new = ApiObject::ResourceClaim(c);
                    self.change_object(
                        f,
                        new.kind(),
                        new.namespace(),
                        new.name(),
                        Some(new.clone()),
                    );
                }
                let _ = f.run_bind(&state, &assumed, &node);
                self.placements[id as usize].1 = node;
                self.queue.on_event(
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
                        snapshot: &self.snapshot,
                        nominated: &self.nominator,
                        rng: &mut self.preempt_rng,
                        extenders: &[],
                    };
                    let (r, _s) =
                        f.run_post_filter(&state, &info, &fit.diagnosis.node_to_status, &mut ctx);
                    if let Some(r) = r {
                        nominated = r.nominated_node.filter(|n| !n.is_empty());
                        victims = r.victims;
                    }
                }
                self.queue.failed_unschedulable(
                    id,
                    stamp,
                    fit.diagnosis.unschedulable_plugins.clone(),
                    fit.diagnosis.pending_plugins.clone(),
                    failure_strategy(&fit.diagnosis),
                );
                if let Some(node) = nominated {
                    let mut p = info.pod.clone();
                    p.status.nominated_node_name = node.clone();
                    // Only the status changed: the compiled parts are kept.
                    let nominee = Arc::new(info.with_object(p));
                    self.queue.set_pod(id, nominee.clone());
                    self.nominator.add(nominee, &node);
                }
                // Victims go at once (zero grace period); their deletion is a cluster event.
                for v in victims {
                    if self.snapshot.remove_pod(&v.pod.spec.node_name, v.uid()) {
                        self.preempted += 1;
                        if let Some(&i) = self.placement_ids.get(&v.key) {
                            self.placements[i as usize].1.clear();
                        }
                        self.queue.on_event(
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
                self.queue.failed_error(id, stamp);
            }
        }
    }
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
