//! The simulation: one event heap ordered by (time, class, sequence), the cluster state the API
//! server would hold, and the scheduler core driven through it.
//!
//! Within one instant, input and internal events come first (in the order they were scheduled),
//! then the queue's periodic flushes, then scheduling cycles: the scheduler is one serial loop
//! that starts a cycle whenever it is idle, a pod can be popped and no event is left at the
//! current instant. A cycle decides at its start; its outcome (assume + binding, or failure and
//! preemption) takes effect when its virtual duration has elapsed, and events that arrive in
//! between are replayed through the failed pod's queueing hints, as upstream's in-flight events.
//!
//! This file holds the [`Simulation`] state, its constructor and the event loop: the heap, the
//! clock, the ordering of an instant, the event sources and the periodic flushes. It pops the
//! heap and hands each event to the room that owns it:
//! - `pods` — pod lifecycle (create, start, finish, update, delete, slots, ghosts' pods);
//! - `nodes` — node lifecycle (add, update, remove, node-change kinds);
//! - `cycle` — scheduling cycles (start, finish, attempt records);
//! - `binding` — assume, bind, nominations and preemption victims;
//! - `hints` — cluster events offered to the queue and in-flight events' queueing hints;
//! - `termination` — the stall rule and the attempts guard of a run without a horizon;
//! - `volumes` — volume binding (PreBind, provisioning) and storage objects;
//! - `autoscaler` — the node-group autoscaler's scans and node provisioning;
//! - `controllers` — workload controllers (ReplicaSet, Deployment, StatefulSet, DaemonSet, Job).
//! - `disruption` — the disruption controller: PodDisruptionBudget status.
//! - `podgc` — the pod garbage collector: orphaned pods, terminating pods out of service.
//! - `resourceclaim` — the resource claim controller (DRA) and the DRA objects' hand-over to
//!   the scheduler's `DynamicResources`; DRA gated fields at admission (`resourceclaim/gates`).
//! - `devicetainteviction` — DRADeviceTaints' eviction of pods on `NoExecute`-tainted devices.
//! - `fork` — what-if forks: copies of a paused simulation, and the changes a variant makes.
//!
//! Rooms share the simulation's state and talk through it and through engine events
//! (`schedule`); only this loop pops the heap and moves the clock.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::sync::Arc;

use ksim_api::config::KubeSchedulerConfiguration;
use ksim_api::defaults::default_node;
use ksim_api::{Node, Pod};
use ksim_scheduler::framework::{build_frameworks, Framework, Registry};
use ksim_scheduler::node_info::{initial_node_order, ClusterObjects, NodeInfo, Snapshot};
use ksim_scheduler::pod_info::PodInfo;
use ksim_scheduler::queue::{Nominator, QueueConfig, SchedulingQueue};
use ksim_scheduler::schedule::Algorithm;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::config::EngineConfig;
use crate::input::{EventSource, InputEvent, SourceError, SourcePos, TimedEvent};
use crate::record::{Observer, Outcome, Record};
use crate::time::SimTime;

mod admission;
mod autoscaler;
mod binding;
mod controllers;
mod cycle;
mod devices;
mod devicetainteviction;
mod disruption;
mod fork;
mod hints;
mod live;
mod nodelifecycle;
mod nodes;
mod podgc;
mod pods;
mod resourceclaim;
mod tainteviction;
mod termination;
mod volumes;

pub use admission::AdmissionConfig;
pub use volumes::default_storage_class;

pub use nodelifecycle::zone::{compute_zone_state, zone_key, zone_qps, ZoneState};
pub use nodelifecycle::{no_schedule_taints, ready_status};
pub use tainteviction::{matching_tolerations, min_toleration_time};

pub use nodes::{amounts, node_change_kinds, pool_of};
pub use pods::{PodId, PodPhase, PodSlot};

use cycle::CycleOutcome;
use hints::OwnedEvent;
/// Why a simulation could not be built or run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    #[error("scheduler configuration: {0}")]
    Config(String),
    #[error("{0}")]
    Source(#[from] SourceError),
    /// An input event that cannot apply to the cluster as it is (a duplicate pod, an update
    /// or deletion of something that never existed), with the file and line it came from.
    #[error("{}at {at}: {message}", origin.as_ref().map(|o| format!("{o}: ")).unwrap_or_default())]
    Input {
        at: SimTime,
        message: String,
        origin: Option<SourcePos>,
    },
    /// A guard of [`crate::config::RunLimits`] stopped the run.
    #[error("at {at}: {message}")]
    Limit { at: SimTime, message: String },
}
#[derive(Debug, Clone)]
enum Ev {
    /// An input event, its source, and where the source read it.
    Input(usize, InputEvent, Option<SourcePos>),
    CycleEnd,
    BindDone {
        pod: PodId,
        generation: u32,
    },
    PodFinish {
        pod: PodId,
        generation: u32,
    },
    /// A bound pod's `spec.activeDeadlineSeconds` ran out (`sim/pods.rs`).
    PodDeadline {
        pod: PodId,
        generation: u32,
    },
    /// A terminating pod's grace period is over (`sim/pods.rs`, `terminate_pod`).
    TerminationDone {
        pod: PodId,
        generation: u32,
        outcome: Outcome,
        by: &'static str,
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
    /// A workload controller's delayed reconcile (`sim/controllers`), by controller key.
    Reconcile(String),
    /// A pod's PreBind stops waiting for its claims.
    VolumeBindTimeout {
        pod: PodId,
        generation: u32,
    },
    /// The node lifecycle controller's `monitorNodeHealth` pass (`sim/nodelifecycle`).
    NodeMonitor,
    /// The node lifecycle controller's `doNoExecuteTaintingPass`.
    NoExecuteTaintPass,
    /// A scheduled taint-based eviction of a pod (`sim/tainteviction.rs`), by pod key.
    TaintEvict {
        key: String,
        token: u64,
    },
    /// The disruption controller syncs its due PDBs (`sim/disruption`).
    PdbSync,
    /// The pod garbage collector runs (`sim/podgc.rs`).
    PodGc,
    /// The resource claim controller syncs a pod or a claim (`sim/resourceclaim.rs`), by key.
    ClaimSync(String),
    /// A scheduled device-taint eviction of a pod (`sim/devicetainteviction.rs`), by pod key.
    DeviceTaintEvict {
        key: String,
        token: u64,
    },
}

/// Heap key: (time, class, sequence). Class 0 = cluster events, 1 = periodic flushes.
type Key = (SimTime, u8, u64);

/// The pending events in key order. The heap orders (key, slot) pairs of 32 bytes; the events
/// themselves wait in a slab of reused slots. A run keeps about one event per live pod (its
/// completion), so the heap's sift moves and cache misses are those of small pairs, not of
/// whole events. Keys are unique (the sequence), so the slot never decides the order: events
/// come out exactly as a heap of the events by key would give them.
///
/// A pair whose key comes after every pair of `run` (and `run` is empty or holds the last such)
/// is appended to `run` instead of the heap: `run` stays in key order, so the next event is the
/// smaller of the heap's top and `run`'s front. Completions are pushed in the order of their
/// times (a fixed run time after bindings in time order), so the many far-off ones wait in
/// `run` at the cost of an append and a pop from the front, and the heap keeps the few near
/// events (bindings, cycle ends, the next input).
#[derive(Clone, Default)]
struct EventHeap {
    heap: BinaryHeap<Reverse<(Key, u32)>>,
    run: VecDeque<(Key, u32)>,
    slab: Vec<Option<Ev>>,
    free: Vec<u32>,
}

impl EventHeap {
    fn push(&mut self, key: Key, ev: Ev) {
        let slot = match self.free.pop() {
            Some(i) => {
                self.slab[i as usize] = Some(ev);
                i
            }
            None => {
                self.slab.push(Some(ev));
                (self.slab.len() - 1) as u32
            }
        };
        self.push_pair(key, slot);
    }

    fn push_pair(&mut self, key: Key, slot: u32) {
        if self.run.back().is_none_or(|&(last, _)| key > last) {
            self.run.push_back((key, slot));
        } else {
            self.heap.push(Reverse((key, slot)));
        }
    }

    /// The smallest pair: the heap's top or `run`'s front, and whether it is `run`'s.
    fn first(&self) -> Option<((Key, u32), bool)> {
        match (self.heap.peek(), self.run.front()) {
            (Some(&Reverse(h)), Some(&r)) => Some(if r < h { (r, true) } else { (h, false) }),
            (Some(&Reverse(h)), None) => Some((h, false)),
            (None, Some(&r)) => Some((r, true)),
            (None, None) => None,
        }
    }

    /// The time of the next event.
    fn peek_time(&self) -> Option<SimTime> {
        self.first().map(|((k, _), _)| k.0)
    }

    fn pop_pair(&mut self) -> Option<(Key, u32)> {
        let (_, from_run) = self.first()?;
        if from_run {
            self.run.pop_front()
        } else {
            self.heap.pop().map(|Reverse(p)| p)
        }
    }

    fn pop(&mut self) -> Option<(Key, Ev)> {
        let (key, slot) = self.pop_pair()?;
        let ev = self.slab[slot as usize].take()?;
        self.free.push(slot);
        Some((key, ev))
    }
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
    heap: EventHeap,
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
    /// A ResourceClaim or ResourceSlice changed since the device counts were last recorded
    /// (see `devices`).
    devices_stale: bool,
    /// The device counts last recorded, per (driver, pool).
    device_counts: devices::DeviceCounts,
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
    live: live::LiveMap,
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
    /// Warnings of this run's extenders (one per unreachable extender).
    extender_warnings: Arc<crate::extender::ExtenderWarnings>,
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
    /// Where the input event being applied was read, for its errors.
    input_origin: Option<SourcePos>,
    /// Hashes of every pod key ever created, so that deleting a pod that never existed is an
    /// error (a collision could only let such a deletion pass silently, as before).
    created_keys: pods::CreatedKeys,
    /// `--explain`: whose attempts are recorded, and the records (pod key, unschedulable, line).
    explain: Option<crate::explain::ExplainSelector>,
    explain_out: Vec<(String, bool, String)>,
    /// `--dump-at`: the instant whose cluster is dumped, and the dump once taken.
    dump_at: Option<SimTime>,
    dump: Option<serde_json::Value>,
    /// The workload controllers (`sim/controllers`).
    controllers: controllers::State,
    /// The node lifecycle controller (`sim/nodelifecycle`).
    lifecycle: nodelifecycle::State,
    /// The taint-eviction controller (`sim/tainteviction.rs`).
    taint_eviction: tainteviction::State,
    device_taint_eviction: devicetainteviction::State,
    /// The disruption controller (`sim/disruption`).
    disruption: disruption::State,
    /// The admission chain's objects and quota usage (`sim/admission`).
    admission: admission::State,
    /// The pod garbage collector (`sim/podgc.rs`).
    pod_gc: podgc::State,
    /// The resource claim controller (`sim/resourceclaim.rs`).
    claims: resourceclaim::State,
    /// The event loop is over (the run ended); see [`Simulation::run_to`].
    loop_ended: bool,
    /// What the frameworks were built from, for [`Simulation::fork`] and scheduler-config
    /// variants (`sim/fork.rs`).
    registry: Registry,
    sched_cfg: KubeSchedulerConfiguration,
}

/// Derives an independent ChaCha stream for one purpose from the scenario seed.
pub fn rng_stream(seed: u64, purpose: u64) -> ChaCha8Rng {
    let mut r = ChaCha8Rng::seed_from_u64(seed);
    r.set_stream(purpose);
    r
}
impl Simulation {
    /// The Kubernetes version and feature gates the run behaves as: those of the registry the
    /// simulation was built with (`Registry::in_tree_gates`). The rooms read gates here, as
    /// the plugins read the registry's `Features` (docs/versions.md).
    pub fn feature_gates(&self) -> &ksim_api::version::FeatureGates {
        &self.registry.features().gates
    }

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
        cfg.control_plane
            .node_lifecycle
            .validate()
            .map_err(SimError::Config)?;
        let pct = sched_cfg.percentage_of_nodes_to_score.unwrap_or(0);
        let cfg_seed = cfg.seed;
        let lifecycle_cfg = cfg.control_plane.node_lifecycle.clone();
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
            heap: EventHeap::default(),
            sources: Vec::new(),
            last_source_time: Vec::new(),
            snapshot: Snapshot::build(Vec::new(), Vec::new(), Arc::new(objects)),
            node_order: Vec::new(),
            ghosts: BTreeMap::new(),
            volume_waits: BTreeMap::new(),
            devices_stale: false,
            device_counts: BTreeMap::new(),
            pods: Vec::new(),
            free_slots: Vec::new(),
            freed_in_cycle: Vec::new(),
            retain_ended: false,
            explain: None,
            explain_out: Vec::new(),
            dump_at: None,
            dump: None,
            released_info: Arc::new(PodInfo::new(Pod::default())),
            live: live::LiveMap::default(),
            queue: SchedulingQueue::new(qcfg),
            nominator: Nominator::default(),
            busy: false,
            cluster_generation: 0,
            cycle_generation: 0,
            guard_error: None,
            extender_warnings: Default::default(),
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
            input_origin: None,
            created_keys: Default::default(),
            controllers: controllers::State::new(cfg_seed),
            lifecycle: nodelifecycle::State::new(lifecycle_cfg),
            taint_eviction: Default::default(),
            device_taint_eviction: Default::default(),
            disruption: Default::default(),
            admission: admission::State::default(),
            pod_gc: Default::default(),
            claims: resourceclaim::State::new(cfg_seed),
            loop_ended: false,
            registry: registry.clone(),
            sched_cfg: sched_cfg.clone(),
        };
        sim.alg.set_extenders(
            crate::extender::HttpExtender::all(&sched_cfg.extenders, &sim.extender_warnings)
                .map_err(SimError::Config)?,
        );
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
                    origin: None,
                });
            }
            sim.node_order.push(n.metadata.name.clone());
            initial.push(Arc::new(n));
        }
        let mut objects = sim.snapshot.objects.clone();
        sim.check_initial_dra_gates(&objects.dra)?;
        sim.stamp_initial_device_taints(&mut objects)?;
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
    pub fn nominator(&self) -> &Nominator {
        &self.nominator
    }
    /// Events taken from the heap and applied so far (inputs, cycle ends, bindings, finishes,
    /// flushes).
    pub fn events_applied(&self) -> u64 {
        self.events_applied
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
                    origin: self.sources[idx].last_position(),
                });
            }
            self.last_source_time[idx] = at;
            // Sources share class 0; the sequence keeps each source's order, and the source
            // index breaks ties between sources at equal times.
            self.seq += 1;
            let key = (at, 0, (idx as u64) << 48 | (self.seq & ((1 << 48) - 1)));
            self.non_flush_pending += 1;
            let pos = self.sources[idx].last_position();
            self.heap.push(key, Ev::Input(idx, event, pos));
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
        self.heap.push(key, ev);
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

    /// Records the scheduling detail of the selected pods' attempts (`--explain`).
    pub fn set_explain(&mut self, sel: crate::explain::ExplainSelector) {
        self.explain = Some(sel);
    }

    /// Dumps the cluster as it stands at `at` ([`crate::dump::cluster_dump`]: after every
    /// event and cycle of instants up to `at`, before anything later), taken during
    /// [`Simulation::run`] without changing it.
    pub fn set_dump_at(&mut self, at: SimTime) {
        self.dump_at = Some(at);
    }

    /// The dump [`Simulation::set_dump_at`] asked for, once the run has passed its instant
    /// (or ended before it: the cluster no longer changes).
    pub fn take_dump(&mut self) -> Option<serde_json::Value> {
        self.dump.take()
    }

    /// Takes the `--dump-at` dump when the run is about to move past its instant.
    fn dump_if_passing(&mut self, next: SimTime) {
        if self.dump.is_none() && self.dump_at.is_some_and(|t| next > t) {
            self.dump = Some(crate::dump::cluster_dump(self));
        }
    }

    /// The recorded attempts as JSON lines, in attempt order (for `pending`, only pods with an
    /// unschedulable attempt).
    pub fn take_explain(&mut self) -> Vec<String> {
        let out = std::mem::take(&mut self.explain_out);
        if self.explain == Some(crate::explain::ExplainSelector::Pending) {
            let waited: std::collections::BTreeSet<String> =
                out.iter().filter(|e| e.1).map(|e| e.0.clone()).collect();
            out.into_iter()
                .filter(|e| waited.contains(&e.0))
                .map(|e| e.2)
                .collect()
        } else {
            out.into_iter().map(|e| e.2).collect()
        }
    }

    /// Runs until the horizon (inclusive) or until nothing is left to do, then records the
    /// end of the run. After [`Simulation::run_to`] it continues from where that paused.
    pub fn run(&mut self, obs: &mut dyn Observer) -> Result<(), SimError> {
        self.begin(obs);
        if !self.loop_ended {
            self.event_loop(None, obs)?;
        }
        self.finish_run(obs);
        Ok(())
    }

    /// Runs every event and cycle of the instants up to `at` (as `--dump-at` sees the cluster)
    /// and pauses before anything later; [`Simulation::run`] continues exactly as if it had
    /// never paused. `Ok(false)` when the run ended before `at` (it stalled, or a run without a
    /// horizon had nothing left that could change): nothing is left to continue.
    pub fn run_to(&mut self, at: SimTime, obs: &mut dyn Observer) -> Result<bool, SimError> {
        self.begin(obs);
        if self.loop_ended {
            return Ok(false);
        }
        self.event_loop(Some(at), obs)?;
        Ok(!self.loop_ended)
    }

    /// The start of a run: the initial nodes' records and the periodic flushes (once).
    fn begin(&mut self, obs: &mut dyn Observer) {
        if self.flushes_started {
            return;
        }
        for n in &self.snapshot.nodes {
            obs.record(&Record::NodeAdded {
                at: SimTime::ZERO,
                node: n.name().to_string(),
                pool: pool_of(&n.node),
                allocatable: amounts(&n.allocatable),
            });
        }
        self.flushes_started = true;
        self.devices_stale = !self.snapshot.objects.dra.is_empty();
        self.flush_device_counts(obs);
        self.lifecycle_begin(obs);
        self.start_autoscaler();
        self.disruption_start();
        self.claims_begin();
        self.leftover_flush_armed = true;
        self.backoff_flush_armed = true;
        self.schedule(SimTime::ZERO, 1, Ev::FlushLeftover);
        self.schedule(
            SimTime::ZERO + self.cfg.backoff_flush_period,
            1,
            Ev::FlushBackoff,
        );
    }

    /// The event loop; with `pause`, returns (without ending the run) when the next thing to
    /// do is an event after `pause`. Sets `loop_ended` when the run is over.
    fn event_loop(
        &mut self,
        pause: Option<SimTime>,
        obs: &mut dyn Observer,
    ) -> Result<(), SimError> {
        let horizon = self.cfg.horizon.unwrap_or(SimTime::MAX);
        loop {
            self.rearm_flushes();
            let next = self.heap.peek_time();
            // Start a cycle when idle and every event of this instant has been applied.
            if !self.busy && self.queue.has_poppable() && next.is_none_or(|t| t > self.now) {
                if self.now > horizon {
                    break;
                }
                self.start_cycle(obs);
                self.flush_device_counts(obs);
                continue;
            }
            if pause.is_some_and(|p| next.is_none_or(|t| t > p)) {
                return Ok(());
            }
            let Some((key, ev)) = self.heap.pop() else {
                break;
            };
            let at = key.0;
            self.dump_if_passing(at);
            if at > horizon {
                break;
            }
            let is_flush = matches!(
                ev,
                Ev::FlushBackoff | Ev::FlushLeftover | Ev::Autoscale(autoscaler::Timer::Scan)
            );
            if !is_flush {
                self.non_flush_pending -= 1;
            }
            if self.cfg.horizon.is_none() {
                if self.stalled(&ev) {
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
            self.apply(ev, obs)?;
            self.flush_device_counts(obs);
            if let Some(e) = self.guard_error.take() {
                return Err(e);
            }
        }
        self.loop_ended = true;
        Ok(())
    }

    /// The end of a run: the last dump, unserved pods, controllers, `RunEnded`.
    fn finish_run(&mut self, obs: &mut dyn Observer) {
        let horizon = self.cfg.horizon.unwrap_or(SimTime::MAX);
        self.dump_if_passing(SimTime::MAX);
        let end = if self.cfg.horizon.is_some() {
            horizon
        } else {
            self.now
        };
        let unserved = self.report_unserved(end, obs);
        self.report_controllers(end, obs);
        obs.record(&Record::RunEnded {
            at: end,
            stalled: self.stall_reason.clone(),
            unserved,
        });
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
            Ev::Input(idx, e, origin) => {
                self.pull(idx)?;
                self.input_origin = origin;
                let applied = self.apply_input(e, obs);
                self.input_origin = None;
                applied?;
            }
            Ev::CycleEnd => self.finish_cycle(obs),
            Ev::Provision { claims, node } => self.provision(&claims, &node, obs),
            Ev::VolumeBindTimeout { pod, generation } => {
                self.volume_bind_timeout(pod, generation, obs)
            }
            Ev::BindDone { pod, generation } => self.bind_done(pod, generation, obs),
            Ev::PodFinish { pod, generation } => self.pod_finished(pod, generation, obs),
            Ev::PodDeadline { pod, generation } => self.pod_deadline(pod, generation, obs),
            Ev::TerminationDone {
                pod,
                generation,
                outcome,
                by,
                preemptor,
            } => self.termination_done(pod, generation, outcome, by, preemptor, obs),
            Ev::Autoscale(t) => self.on_autoscale(t, obs),
            Ev::Reconcile(key) => self.reconcile(&key, obs),
            Ev::NodeMonitor => self.monitor_node_health(obs),
            Ev::NoExecuteTaintPass => self.no_execute_tainting_pass(obs),
            Ev::TaintEvict { key, token } => self.taint_evict(&key, token, obs),
            Ev::DeviceTaintEvict { key, token } => self.device_taint_evict(&key, token, obs),
            Ev::PdbSync => self.pdb_sync(),
            Ev::PodGc => self.pod_gc_run(obs),
            Ev::ClaimSync(key) => self.claim_sync(&key, obs),
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
            origin: self.input_origin.clone(),
        }
    }

    /// A pod that ended (finished, deleted, preempted) may be deleted again, as `ksim validate`
    /// accepts; one that was never created is an error, as the API server's 404.
    fn check_pod_existed(&mut self, what: &str, key: &str) -> Result<(), SimError> {
        if self.live_contains(key) || self.created_keys.contains(pods::key_hash(key)) {
            return Ok(());
        }
        Err(self.input_err(format!("{what} of pod {key}, which was never created")))
    }

    fn apply_input(&mut self, e: InputEvent, obs: &mut dyn Observer) -> Result<(), SimError> {
        self.next_action();
        match e {
            InputEvent::CreatePod { pod, run_for } => self.create_pod(*pod, run_for, obs),
            InputEvent::DeletePod { namespace, name } => {
                let key = format!("{namespace}/{name}");
                self.check_pod_existed("DeletePod", &key)?;
                self.delete_pod_gracefully(&key, "trace", obs);
                Ok(())
            }
            InputEvent::CompletePod { namespace, name } => {
                let key = format!("{namespace}/{name}");
                self.check_pod_existed("CompletePod", &key)?;
                self.delete_pod(&key, Outcome::Succeeded, "completed", obs);
                Ok(())
            }
            InputEvent::UpdatePod { pod } => self.update_pod(*pod),
            InputEvent::AddNode { node } => self.add_node(*node, obs),
            InputEvent::UpdateNode { node } => self.update_node(*node, obs),
            InputEvent::RemoveNode { name } => {
                // With an autoscaler, the node may already have been scaled down.
                if !self.remove_node(&name, obs) && self.autoscaler.is_none() {
                    return Err(self
                        .input_err(format!("RemoveNode of node {name:?}, which does not exist")));
                }
                Ok(())
            }
            InputEvent::FailNode { name } => self.fail_node(&name, obs),
            InputEvent::RecoverNode { name } => self.recover_node(&name, obs),
            InputEvent::CreateObject { object } => self.create_any(object, obs),
            InputEvent::UpdateObject { object } => self.update_any(object, obs),
            InputEvent::DeleteObject {
                object_kind,
                namespace,
                name,
            } if object_kind.is_workload() => {
                self.delete_workload(object_kind, &namespace, &name, obs)
            }
            InputEvent::DeleteObject {
                object_kind: ksim_api::object::ObjectKind::PriorityClass,
                name,
                ..
            } => self.delete_priority_class(&name),
            InputEvent::DeleteObject {
                object_kind:
                    k @ (ksim_api::object::ObjectKind::LimitRange
                    | ksim_api::object::ObjectKind::ResourceQuota),
                namespace,
                name,
            } => self.delete_admission_object(k, &namespace, &name),
            InputEvent::DeleteObject {
                object_kind,
                namespace,
                name,
            } => self.delete_object(object_kind, &namespace, &name, obs),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The heap with its in-order run pops exactly what a plain binary heap of the same
        /// pairs pops, for any interleaving of pushes (unique keys, mostly increasing times as
        /// a run's, some earlier) and pops.
        #[test]
        fn event_heap_pops_as_a_binary_heap(
            ops in proptest::collection::vec((0u8..4, 0i64..50, 0u8..2), 1..300)
        ) {
            let mut ours = EventHeap::default();
            let mut plain: BinaryHeap<Reverse<(Key, u32)>> = BinaryHeap::new();
            let (mut seq, mut now) = (0u64, 0i64);
            for (op, dt, class) in ops {
                if op == 0 {
                    let a = ours.pop_pair();
                    let b = plain.pop().map(|Reverse(p)| p);
                    prop_assert_eq!(a, b);
                    if let Some(((t, _, _), _)) = a {
                        now = t.micros();
                    }
                } else {
                    seq += 1;
                    // Mostly far ahead and increasing (completions), sometimes near (bindings).
                    let at = if op == 3 { now + dt } else { now + 1000 + seq as i64 + dt };
                    let key = (SimTime(at), class, seq);
                    ours.push_pair(key, seq as u32);
                    plain.push(Reverse((key, seq as u32)));
                }
                prop_assert_eq!(ours.peek_time(), plain.peek().map(|Reverse(p)| p.0 .0));
            }
            while let Some(b) = plain.pop() {
                prop_assert_eq!(ours.pop_pair(), Some(b.0));
            }
            prop_assert_eq!(ours.pop_pair(), None);
        }
    }
}
