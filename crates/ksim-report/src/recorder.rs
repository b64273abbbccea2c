//! The [`Recorder`]: an engine [`Observer`] that keeps what the outputs need.
//!
//! Memory grows with pods and nodes, not with attempts: one compact row per pod (times, counters,
//! interned resource ids, its last failure message), one state per node plus one entry per node
//! change. Scheduling attempts are the exception the outputs must list one by one
//! (`placements.csv`); they are written to a CSV writer as they arrive, either straight into the
//! output directory ([`Recorder::to_dir`], constant memory) or into an in-memory buffer
//! ([`Recorder::in_memory`], for tests and small runs, grows with attempts).
//!
//! Records that name a pod or node the recorder does not know (a log cut at the start, a second
//! `PodEnded`) change nothing but are counted in `unmatched_records`, so nothing is dropped
//! silently.

use std::fs::{self, File};
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use ksim_engine::record::{Amounts, AttemptResult, Observer, Outcome, Record};
use ksim_engine::time::SimTime;
use rustc_hash::FxHashMap;

use crate::error::ReportError;
use crate::options::ReportOptions;

/// Header of `placements.csv`.
pub const PLACEMENTS_HEADER: [&str; 10] = [
    "time_s",
    "namespace",
    "name",
    "attempt",
    "result",
    "node",
    "nominated_node",
    "feasible_nodes",
    "evaluated_nodes",
    "message",
];

/// Names to dense ids, in first-seen order. Used for lookups only; outputs sort by name.
#[derive(Debug, Default)]
pub(crate) struct Interner {
    pub names: Vec<String>,
    index: FxHashMap<String, u32>,
}

impl Interner {
    pub fn id(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.index.get(name) {
            return i;
        }
        let i = self.names.len() as u32;
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), i);
        i
    }
    pub fn get(&self, name: &str) -> Option<u32> {
        self.index.get(name).copied()
    }
    pub fn len(&self) -> usize {
        self.names.len()
    }
}

/// Adds `sign * sparse` into a dense vector indexed by resource id, growing it as needed.
pub(crate) fn add_dense(dense: &mut Vec<i64>, sparse: &[(u32, i64)], sign: i64) {
    for &(r, v) in sparse {
        let r = r as usize;
        if dense.len() <= r {
            dense.resize(r + 1, 0);
        }
        dense[r] = dense[r].saturating_add(sign.saturating_mul(v));
    }
}

pub(crate) fn dense_get(dense: &[i64], r: u32) -> i64 {
    dense.get(r as usize).copied().unwrap_or(0)
}

#[derive(Debug)]
pub(crate) struct NodeState {
    pub name: String,
    pub pool: u32,
    /// Dense by resource id.
    pub allocatable: Vec<i64>,
    /// Sum of the requests of the pods bound here and not yet ended, dense by resource id.
    pub requested: Vec<i64>,
    /// Number of pods bound here and not yet ended.
    pub pods: i64,
    pub unschedulable: bool,
    pub removed: bool,
}

/// A change of a pool's allocatable, in record order (hence time order).
#[derive(Debug)]
pub(crate) struct NodeEvent {
    pub at: SimTime,
    pub pool: u32,
    pub delta: Vec<(u32, i64)>,
}

#[derive(Debug)]
pub(crate) struct PodRow {
    pub namespace: String,
    pub name: String,
    pub priority: i32,
    pub requests: Box<[(u32, i64)]>,
    pub created: SimTime,
    pub first_attempt: Option<SimTime>,
    /// Time of the last `Scheduled` attempt (the one whose binding stuck when a binding failed
    /// and the pod was scheduled again).
    pub scheduled: Option<SimTime>,
    pub bound: Option<SimTime>,
    /// When the pod left the cluster (succeeded, deleted, preempted, failed).
    pub finished: Option<SimTime>,
    pub attempts: u32,
    /// Node index: the assumed node of the last `Scheduled` attempt, then the bound node.
    pub node: Option<u32>,
    /// Node index whose `requested` currently includes this pod.
    pub holding: Option<u32>,
    /// Node index the pod was bound to (kept after it ended, for the time series).
    pub bound_node: Option<u32>,
    /// Outcome from `PodEnded`, if any.
    pub ended: Option<Outcome>,
    pub preempted_by: String,
    /// Its owner (`kind/name` in [`Recorder::owners`]), if it has one.
    pub owner: Option<u32>,
    /// Message of the last failed attempt (FitError, or the error of an `Error` attempt).
    pub last_reason: Option<String>,
    /// The cause of its `PodEvicted`, if it was evicted (taint, deadline).
    pub evicted_by: Option<Box<str>>,
    /// Its DRA claims as it bound (`PodClaims`), as pods.csv writes them.
    pub claims: Option<Box<str>>,
}

impl PodRow {
    /// Why the pod was evicted: its `PodEvicted` cause (`taint`, `deadline`), else `preemption` for a
    /// preempted pod and `node-lost` for one that failed with its removed node; "" otherwise.
    pub fn eviction_cause(&self) -> &str {
        match (&self.evicted_by, self.ended) {
            (Some(c), _) => c,
            (None, Some(Outcome::Preempted)) => "preemption",
            (None, Some(Outcome::Failed)) => "node-lost",
            _ => "",
        }
    }
}

impl PodRow {
    /// Where the pod stands at the end of the run: the outcome the engine reported, else
    /// running when bound, pending when not.
    pub fn outcome(&self) -> Outcome {
        match self.ended {
            Some(o) => o,
            None if self.bound.is_some() => Outcome::Running,
            None => Outcome::Pending,
        }
    }
}

enum PlacementSink {
    Memory(csv::Writer<Vec<u8>>),
    File {
        path: PathBuf,
        writer: csv::Writer<BufWriter<File>>,
    },
}

/// Accumulates a run's records; [`Recorder::write_outputs`] renders them.
pub struct Recorder {
    pub(crate) resources: Interner,
    pub(crate) pools: Interner,
    pub(crate) nodes: Vec<NodeState>,
    node_index: FxHashMap<String, u32>,
    pub(crate) node_events: Vec<NodeEvent>,
    pub(crate) nodes_added: u64,
    pub(crate) nodes_removed: u64,
    pub(crate) pods: Vec<PodRow>,
    /// Pod owners as `kind/name` (pods of one controller share an id).
    pub(crate) owners: Interner,
    /// The `Controller` records (`controllers.csv`), in record order.
    pub(crate) controllers: Vec<Record>,
    /// namespace → name → the latest pod row created under that name (nested so lookups by
    /// `&str` need no allocation).
    pod_index: FxHashMap<String, FxHashMap<String, u32>>,
    placements: PlacementSink,
    pub(crate) attempts_total: u64,
    pub(crate) nominations: u64,
    pub(crate) unmatched: u64,
    pub(crate) run_ended: Option<SimTime>,
    /// Why a run without a horizon stopped with pods waiting (`RunEnded.stalled`).
    pub(crate) stalled: Option<String>,
    /// `RunEnded.unserved`: schedulerNames no profile serves.
    pub(crate) unserved: Vec<String>,
    /// `PodRefused`: each pod creation the API server's admission refused (`refused.csv`).
    pub(crate) refused: Vec<crate::refused::RefusedRow>,
    pub(crate) last_at: SimTime,
    /// Unschedulable attempts with a FitError ("0/N nodes are available: ...").
    pub(crate) fit_failures: u64,
    /// Per pool id: of those, the attempts that name the pool (see [`Recorder::pools_lacking_room`]).
    pub(crate) pool_failures: Vec<u64>,
    /// `NodeEvent` records (`node_events.csv`, the report's node health), in record order.
    pub(crate) node_health: Vec<crate::node_health::NodeHealthRow>,
    /// `PodEvicted` records seen: with any, pods.csv gets its `eviction_cause` column.
    pub(crate) evictions: u64,
    /// `Devices` records, in record order (`devices.csv`, the report's device plot).
    pub(crate) devices: Vec<crate::devices::DeviceRow>,
    /// `PodClaims` records seen: with any (or any `Devices`), pods.csv gets its `claims`
    /// column.
    pub(crate) pod_claims: u64,
    /// First error met while streaming placements; reported by `write_outputs`.
    stream_error: Option<ReportError>,
    pub(crate) options: ReportOptions,
    /// The Kubernetes version the run behaved as (summary.json, report.html).
    pub(crate) kubernetes_version: Option<String>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("pods", &self.pods.len())
            .field("nodes", &self.nodes.len())
            .field("attempts", &self.attempts_total)
            .finish_non_exhaustive()
    }
}

impl Recorder {
    /// A recorder that buffers `placements.csv` in memory (grows with attempts: tests and small
    /// runs). Use [`Recorder::to_dir`] for long runs.
    pub fn in_memory() -> Recorder {
        let mut w = csv::Writer::from_writer(Vec::new());
        // Writing into a Vec cannot fail.
        let _ = w.write_record(PLACEMENTS_HEADER);
        Recorder::with_sink(PlacementSink::Memory(w))
    }

    /// A recorder that streams `placements.csv` into `dir` (created if missing) as attempts
    /// arrive, so its memory does not grow with attempts. Call
    /// [`write_outputs`](Recorder::write_outputs) with the same `dir` at the end.
    pub fn to_dir(dir: &Path) -> Result<Recorder, ReportError> {
        fs::create_dir_all(dir).map_err(|e| ReportError::io(dir, e))?;
        let path = dir.join("placements.csv");
        let file = File::create(&path).map_err(|e| ReportError::io(&path, e))?;
        let mut writer = csv::Writer::from_writer(BufWriter::new(file));
        writer
            .write_record(PLACEMENTS_HEADER)
            .map_err(|e| ReportError::csv(&path, e))?;
        Ok(Recorder::with_sink(PlacementSink::File { path, writer }))
    }

    fn with_sink(placements: PlacementSink) -> Recorder {
        let mut resources = Interner::default();
        // cpu and memory always exist, so every run reports them, even an empty one.
        resources.id("cpu");
        resources.id("memory");
        Recorder {
            resources,
            pools: Interner::default(),
            nodes: Vec::new(),
            node_index: FxHashMap::default(),
            node_events: Vec::new(),
            nodes_added: 0,
            nodes_removed: 0,
            pods: Vec::new(),
            owners: Interner::default(),
            controllers: Vec::new(),
            pod_index: FxHashMap::default(),
            placements,
            attempts_total: 0,
            nominations: 0,
            unmatched: 0,
            run_ended: None,
            stalled: None,
            unserved: Vec::new(),
            refused: Vec::new(),
            last_at: SimTime::ZERO,
            fit_failures: 0,
            pool_failures: Vec::new(),
            stream_error: None,
            kubernetes_version: None,
            node_health: Vec::new(),
            evictions: 0,
            devices: Vec::new(),
            pod_claims: 0,
            options: ReportOptions::default(),
        }
    }

    /// Replaces the output settings (defaults: [`ReportOptions::default`]).
    /// Records the Kubernetes version the run behaves as (`1.36`), for summary.json and
    /// report.html.
    pub fn set_kubernetes_version(&mut self, version: &str) {
        self.kubernetes_version = Some(version.to_string());
    }

    pub fn with_options(mut self, options: ReportOptions) -> Recorder {
        self.options = options;
        self
    }

    /// Number of pod rows so far (one per `PodCreated`).
    pub fn pod_count(&self) -> usize {
        self.pods.len()
    }

    /// The end of the run: `RunEnded`'s time, else the latest record's time.
    pub fn horizon(&self) -> SimTime {
        self.run_ended.unwrap_or(self.last_at)
    }

    fn intern_amounts(&mut self, a: &Amounts) -> Vec<(u32, i64)> {
        a.iter()
            .map(|(name, v)| (self.resources.id(name), *v))
            .collect()
    }

    fn pod_row(&self, namespace: &str, name: &str) -> Option<usize> {
        let i = *self.pod_index.get(namespace)?.get(name)?;
        Some(i as usize)
    }

    fn pod_mut(&mut self, namespace: &str, name: &str) -> Option<&mut PodRow> {
        let i = self.pod_row(namespace, name)?;
        self.pods.get_mut(i)
    }

    /// Removes a pod's requests from the node it holds (when it ends or is bound elsewhere).
    fn release(nodes: &mut [NodeState], pod: &mut PodRow) {
        if let Some(n) = pod.holding.take() {
            if let Some(node) = nodes.get_mut(n as usize) {
                add_dense(&mut node.requested, &pod.requests, -1);
                node.pods -= 1;
            }
        }
    }

    fn remove_node(&mut self, at: SimTime, name: &str) -> bool {
        let Some(i) = self.node_index.remove(name) else {
            return false;
        };
        let node = &mut self.nodes[i as usize];
        node.removed = true;
        let delta: Vec<(u32, i64)> = node
            .allocatable
            .iter()
            .enumerate()
            .filter(|(_, v)| **v != 0)
            .map(|(r, v)| (r as u32, -v))
            .collect();
        self.node_events.push(NodeEvent {
            at,
            pool: node.pool,
            delta,
        });
        self.nodes_removed += 1;
        true
    }

    fn write_placement(&mut self, fields: [&str; 10]) {
        if self.stream_error.is_some() {
            return;
        }
        let res = match &mut self.placements {
            PlacementSink::Memory(w) => w.write_record(fields).map_err(|e| (None, e)),
            PlacementSink::File { path, writer } => writer
                .write_record(fields)
                .map_err(|e| (Some(path.clone()), e)),
        };
        if let Err((path, e)) = res {
            self.stream_error = Some(ReportError::csv(
                path.unwrap_or_else(|| PathBuf::from("placements.csv")),
                e,
            ));
        }
    }

    /// Flushes the placements stream and makes sure `dir/placements.csv` holds it.
    pub(crate) fn finish_placements(&mut self, dir: &Path) -> Result<(), ReportError> {
        if let Some(e) = self.stream_error.take() {
            return Err(e);
        }
        let target = dir.join("placements.csv");
        match &mut self.placements {
            PlacementSink::Memory(w) => {
                w.flush().map_err(|e| ReportError::io(&target, e))?;
                fs::write(&target, w.get_ref()).map_err(|e| ReportError::io(&target, e))
            }
            PlacementSink::File { path, writer } => {
                writer.flush().map_err(|e| ReportError::io(&*path, e))?;
                let same = match (fs::canonicalize(&*path), fs::canonicalize(&target)) {
                    (Ok(a), Ok(b)) => a == b,
                    _ => false,
                };
                if !same {
                    fs::copy(&*path, &target).map_err(|e| ReportError::io(&target, e))?;
                }
                Ok(())
            }
        }
    }
}

impl Recorder {
    /// Counts a FitError and the pools it names (see `packing::PoolPacking::failure_share`).
    fn note_fit_failure(&mut self, namespace: &str, name: &str, message: &str) {
        self.fit_failures += 1;
        // Only a lack of room is a pool's capacity: taints, selectors and affinity are not.
        if !(message.contains("Insufficient ") || message.contains("Too many pods")) {
            return;
        }
        let Some(i) = self.pod_row(namespace, name) else {
            return;
        };
        let named = self.pools_lacking_room(&self.pods[i].requests);
        if self.pool_failures.len() < named.len() {
            self.pool_failures.resize(named.len(), 0);
        }
        for (p, n) in named.iter().enumerate() {
            self.pool_failures[p] += u64::from(*n);
        }
    }

    /// Per pool id: whether one of its live, schedulable nodes could hold a pod with these
    /// requests when empty (its allocatable covers every request and it takes pods) but has
    /// too little free for it now (free = allocatable − requests of the bound pods).
    fn pools_lacking_room(&self, requests: &[(u32, i64)]) -> Vec<bool> {
        let pods_res = self.resources.get("pods");
        let mut named = vec![false; self.pools.len()];
        for n in self.nodes.iter().filter(|n| !n.removed && !n.unschedulable) {
            if named[n.pool as usize] {
                continue;
            }
            let mut shape_fits = true;
            let mut room = true;
            for &(r, v) in requests {
                if v <= 0 || Some(r) == pods_res {
                    continue;
                }
                let alloc = dense_get(&n.allocatable, r);
                shape_fits &= alloc >= v;
                room &= alloc - dense_get(&n.requested, r) >= v;
            }
            // A node that reports no pod count takes any number of pods.
            if let Some(max) = pods_res.map(|r| dense_get(&n.allocatable, r)) {
                if max > 0 {
                    room &= n.pods < max;
                }
            }
            if shape_fits && !room {
                named[n.pool as usize] = true;
            }
        }
        named
    }
}

/// A time for the CSVs: seconds with up to 6 decimals, empty when it never happened.
pub(crate) fn secs(t: Option<SimTime>) -> String {
    t.map(|t| t.secs_string()).unwrap_or_default()
}

impl Observer for Recorder {
    fn record(&mut self, r: &Record) {
        let at = r.at();
        if at > self.last_at {
            self.last_at = at;
        }
        match r {
            Record::NodeAdded {
                at,
                node,
                pool,
                allocatable,
            } => {
                // A second NodeAdded for a live node replaces it.
                if self.node_index.contains_key(node.as_str()) {
                    self.remove_node(*at, node);
                    self.unmatched += 1;
                }
                let pool = self.pools.id(pool);
                let alloc = self.intern_amounts(allocatable);
                let mut dense = Vec::new();
                add_dense(&mut dense, &alloc, 1);
                let i = self.nodes.len() as u32;
                self.nodes.push(NodeState {
                    name: node.clone(),
                    pool,
                    allocatable: dense,
                    requested: Vec::new(),
                    pods: 0,
                    unschedulable: false,
                    removed: false,
                });
                self.node_index.insert(node.clone(), i);
                self.node_events.push(NodeEvent {
                    at: *at,
                    pool,
                    delta: alloc,
                });
                self.nodes_added += 1;
            }
            Record::NodeUpdated {
                at,
                node,
                allocatable,
                unschedulable,
            } => {
                let alloc = self.intern_amounts(allocatable);
                let Some(&i) = self.node_index.get(node.as_str()) else {
                    self.unmatched += 1;
                    return;
                };
                let state = &mut self.nodes[i as usize];
                let mut new = Vec::new();
                add_dense(&mut new, &alloc, 1);
                let len = new.len().max(state.allocatable.len());
                new.resize(len, 0);
                state.allocatable.resize(len, 0);
                let delta: Vec<(u32, i64)> = (0..len)
                    .filter(|&r| new[r] != state.allocatable[r])
                    .map(|r| (r as u32, new[r] - state.allocatable[r]))
                    .collect();
                state.allocatable = new;
                state.unschedulable = *unschedulable;
                if !delta.is_empty() {
                    self.node_events.push(NodeEvent {
                        at: *at,
                        pool: state.pool,
                        delta,
                    });
                }
            }
            Record::NodeRemoved { at, node } => {
                if !self.remove_node(*at, node) {
                    self.unmatched += 1;
                }
            }
            Record::PodCreated {
                at,
                namespace,
                name,
                priority,
                requests,
                owner_kind,
                owner_name,
            } => {
                let requests = self.intern_amounts(requests).into_boxed_slice();
                let owner = (!owner_kind.is_empty())
                    .then(|| self.owners.id(&format!("{owner_kind}/{owner_name}")));
                let i = self.pods.len() as u32;
                self.pods.push(PodRow {
                    namespace: namespace.clone(),
                    name: name.clone(),
                    priority: *priority,
                    requests,
                    created: *at,
                    first_attempt: None,
                    scheduled: None,
                    bound: None,
                    finished: None,
                    attempts: 0,
                    node: None,
                    holding: None,
                    bound_node: None,
                    ended: None,
                    preempted_by: String::new(),
                    owner,
                    last_reason: None,
                    evicted_by: None,
                    claims: None,
                });
                // A re-created pod (same name after the first ended) is a new row; later
                // records under that name belong to it.
                match self.pod_index.get_mut(namespace.as_str()) {
                    Some(names) => {
                        names.insert(name.clone(), i);
                    }
                    None => {
                        let mut names = FxHashMap::default();
                        names.insert(name.clone(), i);
                        self.pod_index.insert(namespace.clone(), names);
                    }
                }
            }
            Record::Attempt {
                at,
                namespace,
                name,
                attempt,
                result,
                node,
                nominated_node,
                message,
                feasible_nodes,
                evaluated_nodes,
            } => {
                self.attempts_total += 1;
                if !nominated_node.is_empty() {
                    self.nominations += 1;
                }
                let node_idx = if node.is_empty() {
                    None
                } else {
                    self.node_index.get(node.as_str()).copied()
                };
                let time = at.secs_string();
                let attempt_s = attempt.to_string();
                let feasible = feasible_nodes.to_string();
                let evaluated = evaluated_nodes.to_string();
                self.write_placement([
                    &time,
                    namespace,
                    name,
                    &attempt_s,
                    result.as_str(),
                    node,
                    nominated_node,
                    &feasible,
                    &evaluated,
                    message,
                ]);
                let Some(pod) = self.pod_mut(namespace, name) else {
                    self.unmatched += 1;
                    return;
                };
                if pod.attempts == 0 {
                    // Why it waited outside the queue (`PodWaiting`) no longer holds.
                    pod.last_reason = None;
                }
                pod.attempts += 1;
                if pod.first_attempt.is_none() {
                    pod.first_attempt = Some(*at);
                }
                match result {
                    AttemptResult::Scheduled => {
                        pod.scheduled = Some(*at);
                        pod.node = node_idx;
                    }
                    AttemptResult::Unschedulable | AttemptResult::Error => {
                        // A failure after a Scheduled attempt (binding failed, pod requeued)
                        // means the assumed node no longer holds.
                        if pod.bound.is_none() {
                            pod.node = None;
                        }
                        if !message.is_empty() {
                            pod.last_reason = Some(message.clone());
                        }
                        if *result == AttemptResult::Unschedulable && message.starts_with("0/") {
                            self.note_fit_failure(namespace, name, message);
                        }
                    }
                }
            }
            Record::PodBound {
                at,
                namespace,
                name,
                node,
            } => {
                let node_idx = self.node_index.get(node.as_str()).copied();
                let Some(i) = self.pod_row(namespace, name) else {
                    self.unmatched += 1;
                    return;
                };
                let pod = &mut self.pods[i];
                Recorder::release(&mut self.nodes, pod);
                pod.bound = Some(*at);
                pod.node = node_idx;
                pod.bound_node = node_idx;
                match node_idx {
                    Some(n) => {
                        let state = &mut self.nodes[n as usize];
                        add_dense(&mut state.requested, &pod.requests, 1);
                        state.pods += 1;
                        pod.holding = Some(n);
                    }
                    None => self.unmatched += 1,
                }
            }
            Record::PodEnded {
                at,
                namespace,
                name,
                outcome,
                preempted_by,
            } => {
                let Some(i) = self.pod_row(namespace, name) else {
                    self.unmatched += 1;
                    return;
                };
                let pod = &mut self.pods[i];
                if pod.finished.is_some() {
                    // Already left the cluster: a second end changes nothing.
                    self.unmatched += 1;
                    return;
                }
                pod.ended = Some(*outcome);
                if !preempted_by.is_empty() {
                    pod.preempted_by = preempted_by.clone();
                }
                match outcome {
                    // The engine may report where pods stand at the horizon; they stay put.
                    Outcome::Running | Outcome::Pending | Outcome::Stalled | Outcome::Unserved => {}
                    Outcome::Succeeded
                    | Outcome::Deleted
                    | Outcome::Preempted
                    | Outcome::Failed => {
                        pod.finished = Some(*at);
                        Recorder::release(&mut self.nodes, pod);
                    }
                }
            }
            Record::Controller { .. } => self.controllers.push(r.clone()),
            Record::NodeEvent {
                at,
                node,
                zone,
                event,
                detail,
            } => self.node_health.push(crate::node_health::NodeHealthRow {
                at: *at,
                node: node.clone(),
                zone: zone.clone(),
                event: event.clone(),
                detail: detail.clone(),
            }),
            Record::PodEvicted {
                namespace,
                name,
                cause,
                ..
            } => {
                let Some(i) = self.pod_row(namespace, name) else {
                    self.unmatched += 1;
                    return;
                };
                self.pods[i].evicted_by = Some(cause.as_str().into());
                self.evictions += 1;
            }
            Record::PodWaiting {
                namespace,
                name,
                message,
                ..
            } => {
                // Never attempted: its last reason is why it waits outside the queue.
                if let Some(pod) = self.pod_mut(namespace, name) {
                    pod.last_reason = Some(message.clone());
                }
            }
            Record::Devices {
                at,
                driver,
                pool,
                allocated,
                total,
            } => self.devices.push(crate::devices::DeviceRow {
                at: *at,
                driver: driver.clone(),
                pool: pool.clone(),
                allocated: *allocated,
                total: *total,
            }),
            Record::PodClaims {
                namespace,
                name,
                claims,
                ..
            } => {
                let Some(i) = self.pod_row(namespace, name) else {
                    self.unmatched += 1;
                    return;
                };
                self.pods[i].claims = Some(crate::devices::claims_cell(claims).into());
                self.pod_claims += 1;
            }
            Record::PodRefused {
                at,
                namespace,
                name,
                owner_kind,
                owner_name,
                message,
            } => {
                let owner = if owner_kind.is_empty() {
                    String::new()
                } else {
                    format!("{owner_kind}/{owner_name}")
                };
                self.refused.push(crate::refused::RefusedRow {
                    at: *at,
                    namespace: namespace.clone(),
                    name: name.clone(),
                    owner,
                    message: message.clone(),
                });
            }
            Record::RunEnded {
                at,
                stalled,
                unserved,
            } => {
                self.run_ended = Some(*at);
                self.stalled.clone_from(stalled);
                self.unserved.clone_from(unserved);
            }
        }
    }
}
