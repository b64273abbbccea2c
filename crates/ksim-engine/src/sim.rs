//! The simulation: one event heap ordered by (time, class, sequence), the cluster state the API
//! server would hold, and the scheduler core driven through it.
//!
//! Within one instant, input and internal events come first (in the order they were scheduled),
//! then the queue's periodic flushes, then scheduling cycles: the scheduler is one serial loop
//! that starts a cycle whenever it is idle, a pod can be popped and no event is left at the
//! current instant. A cycle decides at its start; its outcome (assume + binding, or failure and
//! preemption) takes effect when its virtual duration has elapsed, and events that arrive in
//! between are replayed through the failed pod's queueing hints, as upstream's in-flight events.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::sync::Arc;

use ksim_api::config::KubeSchedulerConfiguration;
use ksim_api::defaults::{default_node, default_pod};
use ksim_api::{Node, Pod};
use ksim_scheduler::framework::{
    build_frameworks, ClusterEventKind, ClusterEventObjects, CycleState, Framework,
    PostFilterContext, Registry,
};
use ksim_scheduler::node_info::{initial_node_order, ClusterObjects, NodeInfo, Snapshot};
use ksim_scheduler::pod_info::PodInfo;
use ksim_scheduler::queue::{
    in_flight_strategy, requeue_strategy, Location, Nominator, QueueConfig, QueueingStrategy,
    SchedulingQueue,
};
use ksim_scheduler::schedule::{Algorithm, ScheduleError};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rustc_hash::FxHashMap;

use crate::config::{EngineConfig, OnNodeRemoval};
use crate::input::{EventSource, InputEvent, SourceError, TimedEvent};
use crate::record::{Amounts, AttemptResult, Observer, Outcome, Record};
use crate::time::{SimDuration, SimTime};

mod autoscaler;
mod volumes;

/// Why a simulation could not be built or run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    #[error("scheduler configuration: {0}")]
    Config(String),
    #[error("{0}")]
    Source(#[from] SourceError),
    #[error("at {at}: {message}")]
    Input { at: SimTime, message: String },
    /// A guard of [`crate::config::RunLimits`] stopped the run.
    #[error("at {at}: {message}")]
    Limit { at: SimTime, message: String },
}

/// Dense pod id (index into the pod arena).
pub type PodId = u32;

/// Where a pod is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PodPhase {
    /// In the scheduling queue (any of its parts) or being scheduled.
    Pending,
    /// Assumed on a node; binding in flight.
    Binding,
    /// Bound and running (or starting).
    Bound,
    /// Gone: completed, deleted, preempted or failed.
    Ended(Outcome),
}

/// One pod the API server knows or knew.
#[derive(Debug, Clone)]
pub struct PodSlot {
    pub info: Arc<PodInfo>,
    pub phase: PodPhase,
    pub run_for: Option<SimDuration>,
    /// Bumped whenever the pod's timers become stale (deletion, rebind).
    pub generation: u32,
    pub node: String,
    /// Why it ended ("trace", "completed", "preemption", "node-removed").
    pub ended_by: &'static str,
    pub preempted_by: String,
    /// The pod is terminating (a preemption victim within its grace period).
    pub terminating: bool,
    /// The cluster generation its last failed attempt saw (see the termination rule).
    pub last_failed_generation: Option<u64>,
    /// Failed attempts in a row that all saw the same cluster generation.
    pub failures_without_change: u32,
}

#[derive(Debug, Clone)]
enum Ev {
    Input(usize, InputEvent),
    CycleEnd,
    BindDone {
        pod: PodId,
        generation: u32,
    },
    PodFinish {
        pod: PodId,
        generation: u32,
    },
    VictimGone {
        pod: PodId,
        generation: u32,
        preemptor: String,
    },
    FlushBackoff,
    FlushLeftover,
    /// The node-group autoscaler's scan and node-ready timers (`sim/autoscaler.rs`).
    Autoscale(autoscaler::Timer),
    /// Dynamic provisioning of these claims (annotated for `node`) completes.
    Provision {
        claims: Vec<String>,
        node: String,
    },
    /// A pod's PreBind stops waiting for its claims.
    VolumeBindTimeout {
        pod: PodId,
        generation: u32,
    },
}

/// Heap key: (time, class, sequence). Class 0 = cluster events, 1 = periodic flushes.
type Key = (SimTime, u8, u64);

struct Entry {
    key: Key,
    ev: Ev,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        self.key == o.key
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.key.cmp(&o.key)
    }
}

/// A cluster event as it happened, kept while a cycle is in flight.
enum OwnedEvent {
    Node {
        kinds: Vec<ClusterEventKind>,
        old: Option<Arc<Node>>,
        new: Option<Arc<Node>>,
    },
    Pod {
        kind: ClusterEventKind,
        old: Option<Arc<PodInfo>>,
        new: Option<Arc<PodInfo>>,
    },
    /// A storage object, PDB or Service changed.
    Object {
        kind: ClusterEventKind,
        old: Option<Arc<ksim_api::object::ApiObject>>,
        new: Option<Arc<ksim_api::object::ApiObject>>,
    },
}

/// The outcome of a cycle, applied when the cycle ends.
enum CycleOutcome {
    Scheduled {
        pod: PodId,
        node: String,
        state: CycleState,
    },
    Unschedulable {
        pod: PodId,
        plugins: Vec<&'static str>,
        /// Of `plugins`, those that answered Pending.
        pending: Vec<&'static str>,
        nominated: Option<String>,
        victims: Vec<PodId>,
    },
    Error {
        pod: PodId,
    },
}

/// The discrete-event simulation.
pub struct Simulation {
    cfg: EngineConfig,
    frameworks: Vec<Arc<Framework>>,
    now: SimTime,
    seq: u64,
    /// Sequence of queue actions: every applied event and attempt gets a new one.
    action_seq: u64,
    /// `action_seq` when the clock reached `now`: actions since then are the sub-second order of
    /// this instant (start times keep it, see `set_started`).
    instant_first_action: u64,
    heap: BinaryHeap<Reverse<Entry>>,
    sources: Vec<Box<dyn EventSource + Send>>,
    last_source_time: Vec<SimTime>,
    snapshot: Snapshot,
    /// Node names in order of arrival (the autoscaler's scale-down order; the cycle order is the
    /// snapshot's node tree).
    node_order: Vec<String>,
    /// Nodes removed while pods were still bound to them (restored if re-added).
    ghosts: BTreeMap<String, NodeInfo>,
    /// Pods whose PreBind waits for dynamically provisioned claims (see `volumes`).
    volume_waits: BTreeMap<PodId, volumes::VolumeWait>,
    pods: Vec<PodSlot>,
    /// Slots of ended pods ready for new pods (when ended pods are not retained), so memory
    /// follows the live pods, not the pods ever replayed.
    free_slots: Vec<PodId>,
    /// Slots freed while a cycle was in flight: its outcome may still name them.
    freed_in_cycle: Vec<PodId>,
    /// Keep ended pods' slots (for `pods()` after the run); off by default.
    retain_ended: bool,
    /// What a released slot holds instead of its pod.
    released_info: Arc<PodInfo>,
    live: FxHashMap<String, PodId>,
    queue: SchedulingQueue,
    nominator: Nominator,
    alg: Algorithm,
    preempt_rng: ChaCha8Rng,
    jitter_rng: ChaCha8Rng,
    busy: bool,
    /// Bumped by every cluster change a retry could see (each dispatched cluster event and
    /// each nomination change): a pod that failed at the current generation fails again.
    cluster_generation: u64,
    /// The generation the in-flight cycle started at.
    cycle_generation: u64,
    /// A guard that tripped during the last applied event.
    guard_error: Option<SimError>,
    /// Why the run stopped early with pods waiting (see `stall`).
    stall_reason: Option<String>,
    in_flight: Option<PodId>,
    in_flight_events: Vec<OwnedEvent>,
    pending_outcome: Option<CycleOutcome>,
    flushes_started: bool,
    /// Whether the next backoff / leftover flush is in the heap. A flush with nothing to flush
    /// is a no-op, so the chain sleeps while its queues are empty and wakes on the period grid:
    /// a month-long trace does not pay for millions of empty flushes.
    backoff_flush_armed: bool,
    leftover_flush_armed: bool,
    /// Heap entries other than flushes (inputs included).
    non_flush_pending: usize,
    recreated: u32,
    /// The optional node-group autoscaler (`sim/autoscaler.rs`).
    autoscaler: Option<autoscaler::State>,
    /// Heap events applied so far (throughput measurements).
    events_applied: u64,
}

/// Derives an independent ChaCha stream for one purpose from the scenario seed.
pub fn rng_stream(seed: u64, purpose: u64) -> ChaCha8Rng {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    r.set_stream(purpose);
    r
}

impl Simulation {
    /// Builds a simulation with the initial nodes (present at t=0).
    pub fn new(
        cfg: EngineConfig,
        sched_cfg: &KubeSchedulerConfiguration,
        registry: &Registry,
        nodes: Vec<Node>,
        objects: ClusterObjects,
    ) -> Result<Simulation, SimError> {
        let frameworks =
            build_frameworks(registry, sched_cfg).map_err(|e| SimError::Config(e.to_string()))?;
        for f in &frameworks {
            if f.queue_sort.first().map(|p| p.name()) != Some("PrioritySort") {
                return Err(SimError::Config(format!(
                    "profile {}: only the PrioritySort queue-sort plugin is supported",
                    f.profile_name
                )));
            }
        }
        let qcfg = QueueConfig {
            initial_backoff_secs: sched_cfg.initial_backoff_seconds(),
            max_backoff_secs: sched_cfg.max_backoff_seconds(),
            max_in_unschedulable_us: cfg.max_in_unschedulable.micros(),
        };
        let pct = sched_cfg.percentage_of_nodes_to_score.unwrap_or(0);
        let mut sim = Simulation {
            alg: Algorithm::new(rng_stream(cfg.seed, 1), pct),
            preempt_rng: rng_stream(cfg.seed, 2),
            jitter_rng: rng_stream(cfg.seed, 3),
            cfg,
            frameworks,
            now: SimTime::ZERO,
            seq: 0,
            action_seq: 0,
            instant_first_action: 0,
            heap: BinaryHeap::new(),
            sources: Vec::new(),
            last_source_time: Vec::new(),
            snapshot: Snapshot::build(Vec::new(), Vec::new(), Arc::new(objects)),
            node_order: Vec::new(),
            ghosts: BTreeMap::new(),
            volume_waits: BTreeMap::new(),
            pods: Vec::new(),
            free_slots: Vec::new(),
            freed_in_cycle: Vec::new(),
            retain_ended: false,
            released_info: Arc::new(PodInfo::new(Pod::default())),
            live: FxHashMap::default(),
            queue: SchedulingQueue::new(qcfg),
            nominator: Nominator::default(),
            busy: false,
            cluster_generation: 0,
            cycle_generation: 0,
            guard_error: None,
            stall_reason: None,
            in_flight: None,
            in_flight_events: Vec::new(),
            pending_outcome: None,
            flushes_started: false,
            backoff_flush_armed: false,
            leftover_flush_armed: false,
            non_flush_pending: 0,
            recreated: 0,
            autoscaler: None,
            events_applied: 0,
        };
        sim.autoscaler = sim.cfg.autoscaler.clone().map(autoscaler::State::new);
        let mut initial: Vec<Arc<Node>> = Vec::with_capacity(nodes.len());
        let mut seen: rustc_hash::FxHashSet<String> = rustc_hash::FxHashSet::default();
        // The cache receives the initial nodes as the API server lists them: by name.
        let mut nodes = nodes;
        initial_node_order(&mut nodes);
        for mut n in nodes {
            default_node(&mut n);
            if !seen.insert(n.metadata.name.clone()) {
                return Err(SimError::Input {
                    at: SimTime::ZERO,
                    message: format!("node {:?} is listed twice", n.metadata.name),
                });
            }
            sim.node_order.push(n.metadata.name.clone());
            initial.push(Arc::new(n));
        }
        let objects = sim.snapshot.objects.clone();
        sim.snapshot = Snapshot::build(initial, Vec::new(), objects);
        Ok(sim)
    }

    pub fn now(&self) -> SimTime {
        self.now
    }
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }
    pub fn queue(&self) -> &SchedulingQueue {
        &self.queue
    }
    /// The pod slots by id. Ended pods keep their slot only with
    /// [`retain_ended_pods`](Self::retain_ended_pods); otherwise a slot is reused by a later pod
    /// and an ended pod's slot shows `Ended` with an empty object until then.
    pub fn pods(&self) -> &[PodSlot] {
        &self.pods
    }

    /// Keeps every ended pod's slot and object until the run ends (the timeline runner reads
    /// final states from them). Memory then grows with the pods ever created.
    pub fn retain_ended_pods(&mut self, keep: bool) {
        self.retain_ended = keep;
    }

    /// Frees an ended pod's slot for reuse (unless ended pods are retained).
    fn release_slot(&mut self, id: PodId) {
        if self.retain_ended {
            return;
        }
        if let Some(st) = self.autoscaler.as_mut() {
            st.first_seen.remove(&id);
        }
        if self.busy {
            // The cycle's outcome may still read it (Unreserve of an in-flight pod): cleared
            // once the cycle is over.
            self.freed_in_cycle.push(id);
        } else {
            self.clear_slot(id);
        }
    }

    fn clear_slot(&mut self, id: PodId) {
        let slot = &mut self.pods[id as usize];
        slot.info = self.released_info.clone();
        slot.node = String::new();
        slot.preempted_by = String::new();
        slot.terminating = false;
        self.free_slots.push(id);
    }
    pub fn nominator(&self) -> &Nominator {
        &self.nominator
    }
    /// Events taken from the heap and applied so far (inputs, cycle ends, bindings, finishes,
    /// flushes).
    pub fn events_applied(&self) -> u64 {
        self.events_applied
    }
    /// The live pod with this `namespace/name`, if any.
    pub fn pod_id(&self, key: &str) -> Option<PodId> {
        self.live.get(key).copied()
    }

    /// Adds a time-ordered event source. Events of different sources at the same instant are
    /// applied in the order the sources were added.
    pub fn add_source(&mut self, src: Box<dyn EventSource + Send>) -> Result<(), SimError> {
        let idx = self.sources.len();
        self.sources.push(src);
        self.last_source_time.push(SimTime::ZERO);
        self.pull(idx)
    }

    fn pull(&mut self, idx: usize) -> Result<(), SimError> {
        if let Some(TimedEvent { at, event }) = self.sources[idx].next_event()? {
            if at < self.last_source_time[idx] {
                return Err(SimError::Input {
                    at,
                    message: format!(
                        "events out of order: {} at {at} comes after an event at {}",
                        event.kind(),
                        self.last_source_time[idx]
                    ),
                });
            }
            self.last_source_time[idx] = at;
            // Sources share class 0; the sequence keeps each source's order, and the source
            // index breaks ties between sources at equal times.
            self.seq += 1;
            let key = (at, 0, (idx as u64) << 48 | (self.seq & ((1 << 48) - 1)));
            self.non_flush_pending += 1;
            self.heap.push(Reverse(Entry {
                key,
                ev: Ev::Input(idx, event),
            }));
        }
        Ok(())
    }

    fn schedule(&mut self, at: SimTime, class: u8, ev: Ev) {
        self.seq += 1;
        // Internal events sort after source events scheduled earlier at the same instant.
        let key = (at, class, (u64::MAX >> 16) + self.seq);
        if !matches!(
            ev,
            Ev::FlushBackoff | Ev::FlushLeftover | Ev::Autoscale(autoscaler::Timer::Scan)
        ) {
            self.non_flush_pending += 1;
        }
        self.heap.push(Reverse(Entry { key, ev }));
    }

    fn next_action(&mut self) -> (i64, u64) {
        self.action_seq += 1;
        (self.now.micros(), self.action_seq)
    }

    fn framework_for(&self, pod: &PodInfo) -> Option<Arc<Framework>> {
        self.frameworks
            .iter()
            .find(|f| f.profile_name == pod.pod.spec.scheduler_name)
            .cloned()
    }

    fn fwk0(&self) -> Arc<Framework> {
        self.frameworks[0].clone()
    }

    /// Runs until the horizon (inclusive) or until nothing is left to do.
    pub fn run(&mut self, obs: &mut dyn Observer) -> Result<(), SimError> {
        for n in &self.snapshot.nodes {
            obs.record(&Record::NodeAdded {
                at: SimTime::ZERO,
                node: n.name().to_string(),
                pool: pool_of(&n.node),
                allocatable: amounts(&n.allocatable),
            });
        }
        if !self.flushes_started {
            self.flushes_started = true;
            self.start_autoscaler();
            self.leftover_flush_armed = true;
            self.backoff_flush_armed = true;
            self.schedule(SimTime::ZERO, 1, Ev::FlushLeftover);
            self.schedule(
                SimTime::ZERO + self.cfg.backoff_flush_period,
                1,
                Ev::FlushBackoff,
            );
        }
        let horizon = self.cfg.horizon.unwrap_or(SimTime::MAX);
        loop {
            self.rearm_flushes();
            let next = self.heap.peek().map(|Reverse(e)| e.key.0);
            // Start a cycle when idle and every event of this instant has been applied.
            if !self.busy && self.queue.has_poppable() && next.is_none_or(|t| t > self.now) {
                if self.now > horizon {
                    break;
                }
                self.start_cycle(obs);
                continue;
            }
            let Some(Reverse(entry)) = self.heap.pop() else {
                break;
            };
            let at = entry.key.0;
            if at > horizon {
                break;
            }
            let is_flush = matches!(
                entry.ev,
                Ev::FlushBackoff | Ev::FlushLeftover | Ev::Autoscale(autoscaler::Timer::Scan)
            );
            if !is_flush {
                self.non_flush_pending -= 1;
            }
            if self.cfg.horizon.is_none() {
                if self.stalled(&entry) {
                    self.stall(obs);
                    break;
                }
                let limit = self.cfg.limits.max_virtual_time;
                if at.micros() > limit.micros() {
                    return Err(SimError::Limit {
                        at,
                        message: format!(
                            "the run has no horizon and reached the maximum virtual time of {} \
                             (limits.maxVirtualTime): give a horizon (--until) or raise the limit",
                            limit
                        ),
                    });
                }
            }
            if at != self.now {
                self.instant_first_action = self.action_seq;
            }
            self.now = at;
            self.events_applied += 1;
            self.apply(entry.ev, obs)?;
            if let Some(e) = self.guard_error.take() {
                return Err(e);
            }
        }
        let end = if self.cfg.horizon.is_some() {
            horizon
        } else {
            self.now
        };
        obs.record(&Record::RunEnded {
            at: end,
            stalled: self.stall_reason.clone(),
        });
        Ok(())
    }

    /// The termination rule of a run without a horizon: only periodic flushes (and retries) are
    /// left — no input event, no pod that will finish or bind, no victim, volume or autoscaler
    /// action due — and every pod waiting to be retried (activeQ, backoffQ, error backoff) has
    /// already failed against the cluster as it is now, so its retry would see the same cluster
    /// and fail the same way. Pods in the unschedulable pool wait for an event that cannot
    /// come. Left alone, such a run would retry forever.
    fn stalled(&self, next: &Entry) -> bool {
        matches!(
            next.ev,
            Ev::FlushBackoff | Ev::FlushLeftover | Ev::Autoscale(autoscaler::Timer::Scan)
        ) && !self.busy
            && !self.autoscaler_has_work()
            && self.non_flush_pending == 0
            && self.queue.iter().all(|(id, q)| match q.location {
                Location::Active | Location::Backoff | Location::ErrorBackoff => {
                    self.pods.get(id as usize).is_some_and(|slot| {
                        slot.last_failed_generation == Some(self.cluster_generation)
                    })
                }
                _ => true,
            })
    }

    /// Ends a stalled run: every pod still waiting ends as `stalled`, and the run says why.
    fn stall(&mut self, obs: &mut dyn Observer) {
        let waiting: Vec<PodId> = (0..self.pods.len() as PodId)
            .filter(|&id| {
                let slot = &self.pods[id as usize];
                slot.phase == PodPhase::Pending
                    || (slot.phase == PodPhase::Binding && self.volume_waits.contains_key(&id))
            })
            .collect();
        if waiting.is_empty() {
            return;
        }
        for &id in &waiting {
            let info = self.pods[id as usize].info.clone();
            obs.record(&Record::PodEnded {
                at: self.now,
                namespace: info.namespace().to_string(),
                name: info.name().to_string(),
                outcome: Outcome::Stalled,
                preempted_by: String::new(),
            });
            self.pods[id as usize].phase = PodPhase::Ended(Outcome::Stalled);
        }
        self.stall_reason = Some(format!(
            "the run stalled at {}: {} pod(s) still waiting can never be scheduled — no event is \
             left that could change the cluster, and each already failed against it as it is \
             (give a horizon with --until to keep the run going)",
            self.now,
            waiting.len()
        ));
    }

    /// Counts a failed attempt of `pod` for the termination rule and the attempts guard.
    fn note_failure(&mut self, pod: PodId) {
        let generation = self.cycle_generation;
        let limit = self.cfg.limits.max_attempts_without_change;
        let Some(slot) = self.pods.get_mut(pod as usize) else {
            return;
        };
        if slot.last_failed_generation == Some(generation) {
            slot.failures_without_change = slot.failures_without_change.saturating_add(1);
        } else {
            slot.last_failed_generation = Some(generation);
            slot.failures_without_change = 1;
        }
        if slot.failures_without_change > limit && self.guard_error.is_none() {
            let key = format!("{}/{}", slot.info.namespace(), slot.info.name());
            self.guard_error = Some(SimError::Limit {
                at: self.now,
                message: format!(
                    "pod {key} failed {} attempts in a row with no cluster change in between \
                     (limits.maxAttemptsWithoutChange = {limit}): raise the limit, or shorten \
                     the horizon",
                    slot.failures_without_change
                ),
            });
        }
    }

    /// Wakes a sleeping flush chain when its queues have pods again, at the next instant of
    /// its period grid (backoff: 1 s, 2 s, ...; leftover: 0 s, 30 s, ...). A flush at the current
    /// instant is harmless even if the cycles of this instant already ran: a pod that entered
    /// the queue at this instant is neither expired nor past its maximum stay.
    fn rearm_flushes(&mut self) {
        let (_, backoff, err, pool, _) = self.queue.sizes();
        if !self.backoff_flush_armed && backoff + err > 0 {
            let p = self.cfg.backoff_flush_period.micros().max(1);
            let k = (self.now.micros() + p - 1).div_euclid(p).max(1);
            self.backoff_flush_armed = true;
            self.schedule(SimTime(k * p), 1, Ev::FlushBackoff);
        }
        if !self.leftover_flush_armed && pool > 0 {
            let p = self.cfg.leftover_flush_period.micros().max(1);
            let k = (self.now.micros() + p - 1).div_euclid(p);
            self.leftover_flush_armed = true;
            self.schedule(SimTime(k * p), 1, Ev::FlushLeftover);
        }
    }

    fn apply(&mut self, ev: Ev, obs: &mut dyn Observer) -> Result<(), SimError> {
        match ev {
            Ev::Input(idx, e) => {
                self.pull(idx)?;
                self.apply_input(e, obs)?;
            }
            Ev::CycleEnd => self.finish_cycle(obs),
            Ev::Provision { claims, node } => self.provision(&claims, &node, obs),
            Ev::VolumeBindTimeout { pod, generation } => {
                self.volume_bind_timeout(pod, generation, obs)
            }
            Ev::BindDone { pod, generation } => self.bind_done(pod, generation, obs),
            Ev::PodFinish { pod, generation } => {
                if self.pods[pod as usize].generation == generation
                    && self.pods[pod as usize].phase == PodPhase::Bound
                {
                    self.end_pod(pod, Outcome::Succeeded, "completed", String::new(), obs);
                }
            }
            Ev::VictimGone {
                pod,
                generation,
                preemptor,
            } => {
                if self.pods[pod as usize].generation == generation
                    && !matches!(self.pods[pod as usize].phase, PodPhase::Ended(_))
                {
                    self.end_pod(pod, Outcome::Preempted, "preemption", preemptor, obs);
                }
            }
            Ev::Autoscale(t) => self.on_autoscale(t, obs),
            Ev::FlushBackoff => {
                self.queue.flush_backoff_completed(self.now.micros());
                let (_, backoff, err, _, _) = self.queue.sizes();
                if backoff + err > 0 {
                    let next = self.now + self.cfg.backoff_flush_period;
                    self.schedule(next, 1, Ev::FlushBackoff);
                } else {
                    self.backoff_flush_armed = false;
                }
            }
            Ev::FlushLeftover => {
                self.queue.flush_unschedulable_leftover(self.now.micros());
                let (_, _, _, pool, _) = self.queue.sizes();
                if pool > 0 {
                    let next = self.now + self.cfg.leftover_flush_period;
                    self.schedule(next, 1, Ev::FlushLeftover);
                } else {
                    self.leftover_flush_armed = false;
                }
            }
        }
        Ok(())
    }

    fn input_err(&self, message: String) -> SimError {
        SimError::Input {
            at: self.now,
            message,
        }
    }

    fn apply_input(&mut self, e: InputEvent, obs: &mut dyn Observer) -> Result<(), SimError> {
        self.next_action();
        match e {
            InputEvent::CreatePod { pod, run_for } => self.create_pod(*pod, run_for, obs),
            InputEvent::DeletePod { namespace, name } => {
                self.delete_pod(
                    &format!("{namespace}/{name}"),
                    Outcome::Deleted,
                    "trace",
                    obs,
                );
                Ok(())
            }
            InputEvent::CompletePod { namespace, name } => {
                self.delete_pod(
                    &format!("{namespace}/{name}"),
                    Outcome::Succeeded,
                    "completed",
                    obs,
                );
                Ok(())
            }
            InputEvent::UpdatePod { pod } => self.update_pod(*pod),
            InputEvent::AddNode { node } => self.add_node(*node, obs),
            InputEvent::UpdateNode { node } => self.update_node(*node, obs),
            InputEvent::RemoveNode { name } => {
                self.remove_node(&name, obs);
                Ok(())
            }
            InputEvent::CreateObject { object } => self.create_object(*object, obs),
            InputEvent::UpdateObject { object } => self.update_object(*object, obs),
            InputEvent::DeleteObject {
                object_kind,
                namespace,
                name,
            } => {
                self.delete_object(object_kind, &namespace, &name, obs);
                Ok(())
            }
        }
    }

    fn create_pod(
        &mut self,
        mut pod: Pod,
        run_for: Option<SimDuration>,
        obs: &mut dyn Observer,
    ) -> Result<(), SimError> {
        default_pod(&mut pod);
        let key = pod.key();
        if self.live.contains_key(&key) {
            return Err(self.input_err(format!("CreatePod: pod {key} already exists")));
        }
        let bound_to = pod.spec.node_name.clone();
        let info = Arc::new(PodInfo::new(pod));
        if !self.busy {
            for id in std::mem::take(&mut self.freed_in_cycle) {
                self.clear_slot(id);
            }
        }
        let fresh = PodSlot {
            info: info.clone(),
            phase: PodPhase::Pending,
            run_for,
            generation: 0,
            node: String::new(),
            ended_by: "",
            preempted_by: String::new(),
            terminating: false,
            last_failed_generation: None,
            failures_without_change: 0,
        };
        let id = match self.free_slots.pop() {
            Some(id) => {
                // A later generation than any the slot had: its stale timers stay stale.
                let generation = self.pods[id as usize].generation + 1;
                self.pods[id as usize] = PodSlot {
                    generation,
                    ..fresh
                };
                id
            }
            None => {
                self.pods.push(fresh);
                (self.pods.len() - 1) as PodId
            }
        };
        self.live.insert(key, id);
        obs.record(&Record::PodCreated {
            at: self.now,
            namespace: info.namespace().to_string(),
            name: info.name().to_string(),
            priority: info.priority(),
            requests: amounts(&info.requests),
        });
        if !bound_to.is_empty() {
            // Already running on its node: straight into the cache.
            self.pods[id as usize].node = bound_to.clone();
            self.pods[id as usize].phase = PodPhase::Bound;
            if !self.snapshot.add_pod(info.clone()) {
                if let Some(g) = self.ghosts.get_mut(&bound_to) {
                    g.add_pod(info.clone());
                }
            }
            obs.record(&Record::PodBound {
                at: self.now,
                namespace: info.namespace().to_string(),
                name: info.name().to_string(),
                node: bound_to,
            });
            self.set_started(id);
            self.start_running(id);
            self.dispatch(OwnedEvent::Pod {
                kind: ClusterEventKind::AssignedPodAdd,
                old: None,
                new: Some(info),
            });
            return Ok(());
        }
        if let Some(fwk) = self.framework_for(&info) {
            let stamp = (self.now.micros(), self.action_seq);
            self.queue.add(id, info, stamp, &fwk);
        }
        Ok(())
    }

    /// The kubelet reports the pod running: `status.phase` and `status.startTime` (which
    /// preemption's "latest start time" criterion reads).
    fn set_started(&mut self, id: PodId) {
        let slot = &self.pods[id as usize];
        if slot.info.pod.status.start_time.is_some() {
            return;
        }
        let mut p = slot.info.pod.clone();
        p.status.phase = "Running".into();
        // Pods started in the same instant get distinct start times in the order of the actions
        // that started them, 1 µs apart (the oracle's clock advances 1 µs per action). Preemption
        // reads the order: an earlier start is the more important pod, and a candidate node's
        // latest start time breaks ties between nodes.
        let offset = SimDuration::from_micros((self.action_seq - self.instant_first_action) as i64);
        p.status.start_time = Some(crate::time::rfc3339(
            self.now + self.cfg.costs.pod_startup + offset,
        ));
        let info = Arc::new(slot.info.with_object(p));
        let node = slot.node.clone();
        let old_uid = slot.info.uid().to_string();
        self.pods[id as usize].info = info.clone();
        if self.snapshot.remove_pod(&node, &old_uid) {
            self.snapshot.add_pod(info);
        }
    }

    fn start_running(&mut self, id: PodId) {
        let slot = &self.pods[id as usize];
        if let Some(d) = slot.run_for {
            let at = self.now + self.cfg.costs.pod_startup + d;
            let generation = slot.generation;
            self.schedule(
                at,
                0,
                Ev::PodFinish {
                    pod: id,
                    generation,
                },
            );
        }
    }

    fn delete_pod(
        &mut self,
        key: &str,
        outcome: Outcome,
        by: &'static str,
        obs: &mut dyn Observer,
    ) {
        let Some(&id) = self.live.get(key) else {
            return; // Deleting a pod that no longer exists does nothing.
        };
        self.end_pod(id, outcome, by, String::new(), obs);
    }

    /// Removes a pod from wherever it is and records its end.
    fn end_pod(
        &mut self,
        id: PodId,
        outcome: Outcome,
        by: &'static str,
        preemptor: String,
        obs: &mut dyn Observer,
    ) {
        let slot = self.pods[id as usize].clone();
        self.live.remove(&slot.info.key);
        self.pods[id as usize].generation += 1;
        self.pods[id as usize].phase = PodPhase::Ended(outcome);
        self.pods[id as usize].ended_by = by;
        self.pods[id as usize].preempted_by = preemptor.clone();
        let had_nomination = self.nominator.remove(slot.info.uid()).is_some();
        match slot.phase {
            PodPhase::Pending => {
                if self.in_flight == Some(id) {
                    // Its cycle's outcome is dropped when the cycle ends.
                } else {
                    self.queue.remove(id);
                }
                let kind = ClusterEventKind::UnscheduledPodDelete;
                let mut old = (*slot.info).clone();
                if had_nomination && old.pod.status.nominated_node_name.is_empty() {
                    old.pod.status.nominated_node_name = "nominated".into();
                }
                self.dispatch(OwnedEvent::Pod {
                    kind,
                    old: Some(Arc::new(old)),
                    new: None,
                });
            }
            PodPhase::Binding | PodPhase::Bound => {
                self.drop_volume_wait(id);
                if !self.snapshot.remove_pod(&slot.node, slot.info.uid()) {
                    if let Some(g) = self.ghosts.get_mut(&slot.node) {
                        g.remove_pod(slot.info.uid());
                    }
                }
                self.dispatch(OwnedEvent::Pod {
                    kind: ClusterEventKind::AssignedPodDelete,
                    old: Some(slot.info.clone()),
                    new: None,
                });
            }
            PodPhase::Ended(_) => return,
        }
        obs.record(&Record::PodEnded {
            at: self.now,
            namespace: slot.info.namespace().to_string(),
            name: slot.info.name().to_string(),
            outcome,
            preempted_by: preemptor,
        });
        self.release_slot(id);
    }

    fn update_pod(&mut self, mut pod: Pod) -> Result<(), SimError> {
        default_pod(&mut pod);
        let key = pod.key();
        let Some(&id) = self.live.get(&key) else {
            return Err(self.input_err(format!("UpdatePod: pod {key} does not exist")));
        };
        let old = self.pods[id as usize].info.clone();
        // spec.nodeName and status are kept from the current object.
        pod.spec.node_name = old.pod.spec.node_name.clone();
        pod.status = old.pod.status.clone();
        let info = Arc::new(PodInfo::new(pod));
        self.pods[id as usize].info = info.clone();
        match self.pods[id as usize].phase {
            PodPhase::Pending => {
                if self.in_flight != Some(id) {
                    let fwk = self.framework_for(&info).unwrap_or_else(|| self.fwk0());
                    self.queue.update(id, info.clone(), self.now.micros(), &fwk);
                }
                self.nominator.update(info);
            }
            PodPhase::Binding | PodPhase::Bound => {
                let node = self.pods[id as usize].node.clone();
                self.snapshot.remove_pod(&node, old.uid());
                self.snapshot.add_pod(info.clone());
                self.dispatch(OwnedEvent::Pod {
                    kind: ClusterEventKind::AssignedPodUpdate,
                    old: Some(old),
                    new: Some(info),
                });
            }
            PodPhase::Ended(_) => {}
        }
        Ok(())
    }

    fn add_node(&mut self, mut node: Node, obs: &mut dyn Observer) -> Result<(), SimError> {
        default_node(&mut node);
        let name = node.metadata.name.clone();
        if self.snapshot.index.contains_key(&name) {
            return Err(self.input_err(format!("AddNode: node {name} already exists")));
        }
        let node = Arc::new(node);
        self.node_order.retain(|n| n != &name);
        self.node_order.push(name.clone());
        let info = match self.ghosts.remove(&name) {
            Some(mut g) => {
                g.set_node(node.clone());
                g
            }
            None => NodeInfo::new(node.clone()),
        };
        obs.record(&Record::NodeAdded {
            at: self.now,
            node: name,
            pool: pool_of(&node),
            allocatable: amounts(&info.allocatable),
        });
        self.snapshot.add_node(info);
        self.dispatch(OwnedEvent::Node {
            kinds: vec![ClusterEventKind::NodeAdd],
            old: None,
            new: Some(node),
        });
        Ok(())
    }

    fn update_node(&mut self, mut node: Node, obs: &mut dyn Observer) -> Result<(), SimError> {
        default_node(&mut node);
        let name = node.metadata.name.clone();
        let Some(old) = self.snapshot.get(&name).map(|n| n.node.clone()) else {
            return Err(self.input_err(format!("UpdateNode: node {name} does not exist")));
        };
        let node = Arc::new(node);
        let kinds = node_change_kinds(&old, &node);
        self.snapshot.update_node(node.clone());
        if let Some(n) = self.snapshot.get(&name) {
            obs.record(&Record::NodeUpdated {
                at: self.now,
                node: name,
                allocatable: amounts(&n.allocatable),
                unschedulable: node.spec.unschedulable,
            });
        }
        if !kinds.is_empty() {
            self.dispatch(OwnedEvent::Node {
                kinds,
                old: Some(old),
                new: Some(node),
            });
        }
        Ok(())
    }

    fn remove_node(&mut self, name: &str, obs: &mut dyn Observer) {
        let Some(info) = self.snapshot.remove_node(name) else {
            return;
        };
        self.node_order.retain(|n| n != name);
        obs.record(&Record::NodeRemoved {
            at: self.now,
            node: name.to_string(),
        });
        let old = info.node.clone();
        match self.cfg.on_node_removal {
            OnNodeRemoval::KeepBound => {
                if !info.pods.is_empty() {
                    self.ghosts.insert(name.to_string(), info);
                }
            }
            mode => {
                let victims: Vec<PodId> = info
                    .pods
                    .iter()
                    .filter_map(|p| self.live.get(&p.key).copied())
                    .collect();
                for id in victims {
                    let slot = self.pods[id as usize].clone();
                    self.live.remove(&slot.info.key);
                    self.pods[id as usize].generation += 1;
                    self.pods[id as usize].phase = PodPhase::Ended(Outcome::Failed);
                    self.pods[id as usize].ended_by = "node-removed";
                    obs.record(&Record::PodEnded {
                        at: self.now,
                        namespace: slot.info.namespace().to_string(),
                        name: slot.info.name().to_string(),
                        outcome: Outcome::Failed,
                        preempted_by: String::new(),
                    });
                    self.release_slot(id);
                    let owned = slot
                        .info
                        .pod
                        .metadata
                        .owner_references
                        .iter()
                        .any(|o| o.controller == Some(true));
                    if mode == OnNodeRemoval::FailAndRecreateOwned && owned {
                        self.recreated += 1;
                        let mut p = slot.info.pod.clone();
                        p.metadata.name = format!("{}-r{}", p.metadata.name, self.recreated);
                        p.metadata.uid = String::new();
                        p.spec.node_name = String::new();
                        p.status = Default::default();
                        // A re-created pod is a new pod; the engine cannot fail here because
                        // the name is fresh.
                        let _ = self.create_pod(p, slot.run_for, obs);
                    }
                }
            }
        }
        self.dispatch(OwnedEvent::Node {
            kinds: vec![ClusterEventKind::NodeDelete],
            old: Some(old),
            new: None,
        });
    }

    /// Offers a cluster event to the queue (and remembers it while a cycle is in flight).
    fn dispatch(&mut self, ev: OwnedEvent) {
        self.cluster_generation += 1;
        let now = self.now.micros();
        let fwk = self.fwk0();
        match &ev {
            OwnedEvent::Node { kinds, old, new } => {
                let objs = ClusterEventObjects::Node {
                    old: old.as_deref(),
                    new: new.as_deref(),
                };
                self.queue.on_event(kinds, &objs, now, &fwk);
            }
            OwnedEvent::Pod { kind, old, new } => {
                let objs = ClusterEventObjects::Pod {
                    old: old.as_deref(),
                    new: new.as_deref(),
                };
                self.queue.on_event(&[*kind], &objs, now, &fwk);
            }
            OwnedEvent::Object { kind, old, new } => {
                let objs = ClusterEventObjects::Object {
                    old: old.as_deref(),
                    new: new.as_deref(),
                };
                self.queue.on_event(&[*kind], &objs, now, &fwk);
            }
        }
        if self.busy {
            self.in_flight_events.push(ev);
        }
    }

    // ---- scheduling cycles --------------------------------------------------------------

    fn start_cycle(&mut self, obs: &mut dyn Observer) {
        let Some((id, info, attempt)) = self.queue.pop() else {
            return;
        };
        self.next_action();
        let fwk = self.framework_for(&info).unwrap_or_else(|| self.fwk0());
        let mut state = CycleState::new();
        // UpdateSnapshot: a cycle sees the node list re-read if nodes were added or removed.
        self.snapshot.update_for_cycle();
        self.cycle_generation = self.cluster_generation;
        let res = self
            .alg
            .schedule_pod(&fwk, &mut state, &info, &self.snapshot, &self.nominator);
        let (outcome, record, evaluated) = match res {
            Ok(r) => {
                let node = self.snapshot.nodes[r.suggested_host].name().to_string();
                // Reserve and Permit run in the scheduling cycle.
                let mut s = fwk.run_reserve(&mut state, &info, &node);
                if s.is_success() {
                    s = fwk.run_permit(&state, &info, &node);
                    if !s.is_success() {
                        fwk.run_unreserve(&mut state, &info, &node);
                    }
                } else {
                    fwk.run_unreserve(&mut state, &info, &node);
                }
                if s.is_success() {
                    let rec = attempt_record(
                        self.now,
                        &info,
                        attempt,
                        AttemptResult::Scheduled,
                        &node,
                        "",
                        String::new(),
                        r.feasible_nodes,
                        r.evaluated_nodes,
                    );
                    (
                        CycleOutcome::Scheduled {
                            pod: id,
                            node,
                            state,
                        },
                        rec,
                        r.evaluated_nodes,
                    )
                } else {
                    let msg = format!("0/1 nodes are available: 1 {}.", s.message());
                    let rec = attempt_record(
                        self.now,
                        &info,
                        attempt,
                        AttemptResult::Unschedulable,
                        "",
                        "",
                        msg,
                        0,
                        1,
                    );
                    let mut diagnosis = ksim_scheduler::schedule::Diagnosis::default();
                    diagnosis.add_plugin_status(&s);
                    (
                        CycleOutcome::Unschedulable {
                            pod: id,
                            plugins: diagnosis.unschedulable_plugins,
                            pending: diagnosis.pending_plugins,
                            nominated: None,
                            victims: vec![],
                        },
                        rec,
                        1,
                    )
                }
            }
            Err(ScheduleError::Fit(mut fit)) => {
                let mut nominated = None;
                let mut victims = Vec::new();
                if fwk.has_post_filter_plugins() {
                    let mut ctx = PostFilterContext {
                        framework: &fwk,
                        snapshot: &self.snapshot,
                        nominated: &self.nominator,
                        rng: &mut self.preempt_rng,
                    };
                    let (r, s) =
                        fwk.run_post_filter(&state, &info, &fit.diagnosis.node_to_status, &mut ctx);
                    if let Some(r) = r {
                        // Some("") clears an earlier nomination (upstream ModeOverride "").
                        nominated = r.nominated_node;
                        victims = r
                            .victims
                            .iter()
                            .filter_map(|v| self.live.get(&v.key).copied())
                            .collect();
                    }
                    fit.diagnosis.post_filter_msg = s.message();
                    if s.is_success() {
                        fit.diagnosis.post_filter_msg.clear();
                    }
                }
                let msg = fit.message();
                let evaluated = fit.num_all_nodes;
                let rec = attempt_record(
                    self.now,
                    &info,
                    attempt,
                    AttemptResult::Unschedulable,
                    "",
                    nominated.as_deref().unwrap_or(""),
                    msg,
                    0,
                    evaluated,
                );
                let plugins = fit.diagnosis.unschedulable_plugins.clone();
                let pending = fit.diagnosis.pending_plugins.clone();
                (
                    CycleOutcome::Unschedulable {
                        pod: id,
                        plugins,
                        pending,
                        nominated,
                        victims,
                    },
                    rec,
                    evaluated,
                )
            }
            Err(e) => {
                // "no nodes available" and plugin errors: the error-backoff path. Upstream
                // reports "no nodes available" as Unschedulable.
                let result = if matches!(e, ScheduleError::NoNodesAvailable) {
                    AttemptResult::Unschedulable
                } else {
                    AttemptResult::Error
                };
                let rec =
                    attempt_record(self.now, &info, attempt, result, "", "", e.message(), 0, 0);
                (CycleOutcome::Error { pod: id }, rec, 0)
            }
        };
        obs.record(&record);
        self.busy = true;
        self.in_flight = Some(id);
        self.pending_outcome = Some(outcome);
        let cost = self.cfg.costs.scheduling_cycle.of(evaluated);
        if cost.micros() == 0 {
            self.finish_cycle(obs);
        } else {
            let at = self.now + cost;
            self.schedule(at, 0, Ev::CycleEnd);
        }
    }

    fn finish_cycle(&mut self, obs: &mut dyn Observer) {
        let Some(outcome) = self.pending_outcome.take() else {
            return;
        };
        self.busy = false;
        self.in_flight = None;
        let events = std::mem::take(&mut self.in_flight_events);
        let stamp = self.next_action();
        match outcome {
            CycleOutcome::Scheduled {
                pod,
                node,
                mut state,
            } => {
                if matches!(self.pods[pod as usize].phase, PodPhase::Ended(_)) {
                    self.unreserve(pod, &node, &mut state);
                    return;
                }
                if self.snapshot.get(&node).is_none() {
                    // The node disappeared during the cycle: the assume fails.
                    self.unreserve(pod, &node, &mut state);
                    self.queue.failed_error(pod, stamp);
                    self.note_failure(pod);
                    return;
                }
                self.nominator.remove(self.pods[pod as usize].info.uid());
                let mut p = self.pods[pod as usize].info.pod.clone();
                p.spec.node_name = node.clone();
                p.status.nominated_node_name.clear();
                let info = Arc::new(self.pods[pod as usize].info.with_object(p));
                self.pods[pod as usize].info = info.clone();
                self.pods[pod as usize].node = node.clone();
                self.pods[pod as usize].phase = PodPhase::Binding;
                self.snapshot.add_pod(info.clone());
                let fwk = self.framework_for(&info).unwrap_or_else(|| self.fwk0());
                // A pod waiting for its volumes stays in flight in the queue until they are
                // bound (or PreBind fails and it goes back to the error backoff).
                let Some(state) = self.pre_bind(pod, &node, &fwk, state, obs) else {
                    return;
                };
                self.queue.remove(pod);
                let _ = fwk.run_bind(&state, &info, &node);
                self.schedule_bind_done(pod, obs);
            }
            CycleOutcome::Unschedulable {
                pod,
                plugins,
                pending,
                nominated,
                victims,
            } => {
                if matches!(self.pods[pod as usize].phase, PodPhase::Ended(_)) {
                    return;
                }
                let fwk = self.fwk0();
                // determineSchedulingHintForInFlightPod, with this attempt's rejectors.
                let strategy =
                    self.queue
                        .get(pod)
                        .cloned()
                        .map_or(QueueingStrategy::AfterBackoff, |mut q| {
                            q.unschedulable_plugins = plugins.clone();
                            q.pending_plugins = pending.clone();
                            in_flight_strategy(
                                &q,
                                events.iter().map(|e| event_strategy(&fwk, &q, e)),
                            )
                        });
                self.queue
                    .failed_unschedulable(pod, stamp, plugins, pending, strategy);
                self.note_failure(pod);
                if nominated.as_deref() == Some("") {
                    self.set_nomination(pod, None);
                }
                if let Some(node) = nominated.filter(|n| !n.is_empty()) {
                    // Lower-priority pods nominated to this node lose their nomination.
                    let me = self.pods[pod as usize].info.clone();
                    let lower = ksim_scheduler::preemption::lower_priority_nominated_pods(
                        &self.nominator,
                        &me,
                        &node,
                    );
                    for other in lower {
                        if let Some(&oid) = self.live.get(&other.key) {
                            self.set_nomination(oid, None);
                        }
                    }
                    self.set_nomination(pod, Some(&node));
                    let preemptor = self.pods[pod as usize].info.key.clone();
                    // Victims terminate after their grace period; upstream deletes them in
                    // victim-name order.
                    let mut vs = victims;
                    vs.sort_by(|a, b| {
                        self.pods[*a as usize]
                            .info
                            .name()
                            .cmp(self.pods[*b as usize].info.name())
                    });
                    for v in vs {
                        self.pods[v as usize].terminating = true;
                        if self.cfg.costs.victim_grace.micros() > 0 {
                            self.mark_terminating(v);
                        }
                        let generation = self.pods[v as usize].generation;
                        if self.cfg.costs.victim_grace.micros() == 0 {
                            self.next_action();
                            self.end_pod(
                                v,
                                Outcome::Preempted,
                                "preemption",
                                preemptor.clone(),
                                obs,
                            );
                        } else {
                            let at = self.now + self.cfg.costs.victim_grace;
                            self.schedule(
                                at,
                                0,
                                Ev::VictimGone {
                                    pod: v,
                                    generation,
                                    preemptor: preemptor.clone(),
                                },
                            );
                        }
                    }
                }
            }
            CycleOutcome::Error { pod } => {
                if matches!(self.pods[pod as usize].phase, PodPhase::Ended(_)) {
                    return;
                }
                self.queue.failed_error(pod, stamp);
                self.note_failure(pod);
            }
        }
    }

    /// The binding becomes visible after the bind latency (plus jitter).
    fn schedule_bind_done(&mut self, pod: PodId, obs: &mut dyn Observer) {
        let mut lat = self.cfg.costs.bind_latency;
        if self.cfg.costs.bind_jitter.micros() > 0 {
            lat = SimDuration(
                lat.micros()
                    + self
                        .jitter_rng
                        .random_range(0..=self.cfg.costs.bind_jitter.micros()),
            );
        }
        let generation = self.pods[pod as usize].generation;
        let at = self.now + lat;
        if lat.micros() == 0 {
            self.bind_done(pod, generation, obs);
        } else {
            self.schedule(at, 0, Ev::BindDone { pod, generation });
        }
    }

    fn bind_done(&mut self, pod: PodId, generation: u32, obs: &mut dyn Observer) {
        let slot = &self.pods[pod as usize];
        if slot.generation != generation || slot.phase != PodPhase::Binding {
            return;
        }
        self.next_action();
        self.pods[pod as usize].phase = PodPhase::Bound;
        self.set_started(pod);
        let info = self.pods[pod as usize].info.clone();
        obs.record(&Record::PodBound {
            at: self.now,
            namespace: info.namespace().to_string(),
            name: info.name().to_string(),
            node: self.pods[pod as usize].node.clone(),
        });
        self.start_running(pod);
        self.dispatch(OwnedEvent::Pod {
            kind: ClusterEventKind::AssignedPodAdd,
            old: None,
            new: Some(info),
        });
    }

    /// Sets or clears a pending pod's nominated node (object, queue entry and nominator).
    fn set_nomination(&mut self, id: PodId, node: Option<&str>) {
        let slot = &self.pods[id as usize];
        if slot.phase != PodPhase::Pending {
            return;
        }
        let current = slot.info.pod.status.nominated_node_name.as_str();
        if current == node.unwrap_or("") && self.nominator.node_of(slot.info.uid()) == node {
            return;
        }
        // Nominations change what other pods' filters count on a node.
        self.cluster_generation += 1;
        let mut p = slot.info.pod.clone();
        p.status.nominated_node_name = node.unwrap_or("").to_string();
        let info = Arc::new(slot.info.with_object(p));
        self.pods[id as usize].info = info.clone();
        self.queue.set_pod(id, info.clone());
        match node {
            Some(n) => self.nominator.add(info, n),
            None => {
                self.nominator.remove(info.uid());
            }
        }
    }

    /// A preemption victim starts terminating: its object gets a deletion timestamp and the
    /// DisruptionTarget condition, which filters and preemption read, while it still holds its
    /// resources until its grace period ends.
    fn mark_terminating(&mut self, id: PodId) {
        let slot = self.pods[id as usize].clone();
        let mut p = slot.info.pod.clone();
        p.metadata.deletion_timestamp = Some(crate::time::rfc3339(self.now));
        p.status.conditions.push(ksim_api::Condition {
            type_: "DisruptionTarget".into(),
            status: "True".into(),
            reason: "PreemptionByScheduler".into(),
            message: String::new(),
        });
        let info = Arc::new(slot.info.with_object(p));
        self.pods[id as usize].info = info.clone();
        if matches!(slot.phase, PodPhase::Binding | PodPhase::Bound) {
            self.snapshot.remove_pod(&slot.node, slot.info.uid());
            self.snapshot.add_pod(info);
        }
    }

    /// Where a pending pod is in the queue (for reports and the timeline runner).
    pub fn queue_location(&self, id: PodId) -> Option<Location> {
        self.queue.get(id).map(|q| q.location)
    }
}

/// The strongest requeue strategy of one in-flight event (a node update offers each of its
/// extracted kinds).
fn event_strategy(
    fwk: &Framework,
    q: &ksim_scheduler::queue::QueuedPod,
    e: &OwnedEvent,
) -> QueueingStrategy {
    match e {
        OwnedEvent::Node { kinds, old, new } => {
            let objs = ClusterEventObjects::Node {
                old: old.as_deref(),
                new: new.as_deref(),
            };
            kinds
                .iter()
                .map(|k| requeue_strategy(fwk, q, *k, &objs))
                .max()
                .unwrap_or(QueueingStrategy::Skip)
        }
        OwnedEvent::Pod { kind, old, new } => {
            let objs = ClusterEventObjects::Pod {
                old: old.as_deref(),
                new: new.as_deref(),
            };
            requeue_strategy(fwk, q, *kind, &objs)
        }
        OwnedEvent::Object { kind, old, new } => {
            let objs = ClusterEventObjects::Object {
                old: old.as_deref(),
                new: new.as_deref(),
            };
            requeue_strategy(fwk, q, *kind, &objs)
        }
    }
}

/// The kinds of change between two versions of a node (upstream `NodeSchedulingPropertiesChange`).
pub fn node_change_kinds(old: &Node, new: &Node) -> Vec<ClusterEventKind> {
    // Extractors in upstream's order, each event offered on its own. Only an uncordon counts
    // (as UpdateNodeTaint): a cordon makes no node more schedulable, so it is no event at all.
    let mut k = Vec::new();
    if old.spec.unschedulable && !new.spec.unschedulable {
        k.push(ClusterEventKind::NodeUpdateTaint);
    }
    if old.status.allocatable != new.status.allocatable {
        k.push(ClusterEventKind::NodeUpdateAllocatable);
    }
    if old.metadata.labels != new.metadata.labels {
        k.push(ClusterEventKind::NodeUpdateLabel);
    }
    if old.spec.taints != new.spec.taints {
        k.push(ClusterEventKind::NodeUpdateTaint);
    }
    // Conditions compare as type -> status only (upstream strips reasons and timestamps).
    let conditions = |n: &Node| -> BTreeMap<String, String> {
        n.status
            .conditions
            .iter()
            .map(|c| (c.type_.clone(), c.status.clone()))
            .collect()
    };
    if conditions(old) != conditions(new) {
        k.push(ClusterEventKind::NodeUpdateCondition);
    }
    if old.metadata.annotations != new.metadata.annotations {
        k.push(ClusterEventKind::NodeUpdateAnnotation);
    }
    k
}

#[allow(clippy::too_many_arguments)]
fn attempt_record(
    at: SimTime,
    info: &PodInfo,
    attempt: u32,
    result: AttemptResult,
    node: &str,
    nominated: &str,
    message: String,
    feasible: usize,
    evaluated: usize,
) -> Record {
    Record::Attempt {
        at,
        namespace: info.namespace().to_string(),
        name: info.name().to_string(),
        attempt,
        result,
        node: node.to_string(),
        nominated_node: nominated.to_string(),
        message,
        feasible_nodes: feasible as u32,
        evaluated_nodes: evaluated as u32,
    }
}

/// The node's pool label (`ksim.io/pool`), or "".
pub fn pool_of(node: &Node) -> String {
    node.metadata
        .labels
        .get("ksim.io/pool")
        .cloned()
        .unwrap_or_default()
}

/// A `Resource` as name → amount pairs.
pub fn amounts(r: &ksim_scheduler::resource::Resource) -> Amounts {
    let mut v: Amounts = vec![("cpu".into(), r.milli_cpu), ("memory".into(), r.memory)];
    if r.ephemeral_storage != 0 {
        v.push(("ephemeral-storage".into(), r.ephemeral_storage));
    }
    if r.allowed_pod_number != 0 {
        v.push(("pods".into(), r.allowed_pod_number));
    }
    for (n, a) in &r.scalar {
        v.push((n.clone(), *a));
    }
    v.sort();
    v
}
