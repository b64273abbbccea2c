//! The scheduling queue, as upstream's `PriorityQueue` in virtual time: activeQ ordered by
//! PrioritySort, backoffQ ordered by backoff expiry, the error-backoff queue, the unschedulable
//! pool with its maximum stay, gated pods (PreEnqueue), queueing hints deciding which cluster
//! events move which pods back, and the nominator.
//!
//! Time is an argument (`now`, microseconds) and every action carries a sequence number from the
//! caller, so a pod's queue timestamp is the pair (time, sequence): pods of equal priority pop
//! in the order their timestamps were set, exactly as upstream's clock ticks would order them.
//!
//! Upstream v1.35.4 behaviours reproduced here (see tests/conformance/timelines/README.md):
//! - `SchedulerPopFromBackoffQ`: when activeQ is empty, `pop` takes the head of backoffQ even
//!   if its backoff has not expired (never from the error-backoff queue).
//! - Backoff expiry is window-aligned: `E = floor_sec(timestamp) + backoff`, a pod is backing
//!   off at `now` iff `E >= floor_sec(now)`, and the backoff flush at `now` releases `E < now`.
//! - Queueing hints: an event moves a pool pod only if a plugin that rejected it registered the
//!   event and its hint says Queue; a skipped event leaves the timestamp unchanged.
//! - The leftover flush moves pool pods with `now - timestamp > maxStay` (strict); gated pods
//!   are never flushed.
//!
//! Deliberate difference: the queue-sort order is PrioritySort's (the only in-tree QueueSort
//! plugin); a profile naming another QueueSort plugin is rejected by the engine.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::framework::{
    plugin_queueing_hint, ClusterEventKind, ClusterEventObjects, Framework, QueueingHint,
};
use crate::pod_info::PodInfo;

pub mod nominator;

pub use nominator::Nominator;

/// Dense id of a pod in the queue (the engine's pod id).
pub type QPodId = u32;

const MICROS: i64 = 1_000_000;

/// A queue timestamp: (virtual time in µs, action sequence number).
pub type Stamp = (i64, u64);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueConfig {
    /// `podInitialBackoffSeconds`.
    pub initial_backoff_secs: i64,
    /// `podMaxBackoffSeconds`.
    pub max_backoff_secs: i64,
    /// `podMaxInUnschedulablePodsDuration`, µs.
    pub max_in_unschedulable_us: i64,
}

impl Default for QueueConfig {
    fn default() -> Self {
        QueueConfig {
            initial_backoff_secs: 1,
            max_backoff_secs: 10,
            max_in_unschedulable_us: 300 * MICROS,
        }
    }
}

/// Where a pod currently is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    Active,
    Backoff,
    ErrorBackoff,
    Unschedulable,
    /// Blocked by a PreEnqueue plugin (scheduling gates).
    Gated,
    /// Popped and being scheduled.
    InFlight,
}

impl Location {
    pub fn as_str(self) -> &'static str {
        match self {
            Location::Active => "activeQ",
            Location::Backoff => "backoffQ",
            Location::ErrorBackoff => "errorBackoffQ",
            Location::Unschedulable => "unschedulable",
            Location::Gated => "gated",
            Location::InFlight => "inFlight",
        }
    }
}

/// `QueuedPodInfo`.
#[derive(Debug, Clone)]
pub struct QueuedPod {
    pub pod: Arc<PodInfo>,
    pub timestamp: Stamp,
    /// Pops so far.
    pub attempts: u32,
    pub unschedulable_count: u32,
    pub consecutive_errors: u32,
    /// Plugins that rejected the pod in its last attempt (sorted).
    pub unschedulable_plugins: Vec<&'static str>,
    /// Of those, the plugins that answered `Pending` (sorted): a `Queue` hint from one of them
    /// moves the pod to activeQ at once, skipping its backoff.
    pub pending_plugins: Vec<&'static str>,
    /// The PreEnqueue plugin that gates the pod, if any.
    pub gated_by: Option<&'static str>,
    /// Its status message (empty when not gated).
    pub gate_message: String,
    pub location: Location,
}

type ActiveKey = (i64, Stamp, QPodId);
type BackoffKey = (i64, i64, Stamp, QPodId);

/// The priority queue.
#[derive(Debug, Clone, Default)]
pub struct SchedulingQueue {
    cfg: QueueConfig,
    pods: BTreeMap<QPodId, QueuedPod>,
    active: BTreeSet<ActiveKey>,
    backoff: BTreeSet<BackoffKey>,
    error_backoff: BTreeSet<BackoffKey>,
    /// Pool pods by (timestamp, id): the leftover flush scans the oldest first.
    unschedulable: BTreeSet<(Stamp, QPodId)>,
    gated: BTreeSet<QPodId>,
}

/// What happened to a pod when an event was offered to the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moved {
    ToActive,
    ToBackoff,
}

impl SchedulingQueue {
    pub fn new(cfg: QueueConfig) -> SchedulingQueue {
        SchedulingQueue {
            cfg,
            ..Default::default()
        }
    }

    pub fn config(&self) -> &QueueConfig {
        &self.cfg
    }

    pub fn len(&self) -> usize {
        self.pods.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }

    pub fn get(&self, id: QPodId) -> Option<&QueuedPod> {
        self.pods.get(&id)
    }

    /// Every queued pod with its id, in id order.
    pub fn iter(&self) -> impl Iterator<Item = (QPodId, &QueuedPod)> {
        self.pods.iter().map(|(k, v)| (*k, v))
    }

    /// Sizes of (activeQ, backoffQ, errorBackoffQ, unschedulable pool, gated).
    pub fn sizes(&self) -> (usize, usize, usize, usize, usize) {
        (
            self.active.len(),
            self.backoff.len(),
            self.error_backoff.len(),
            self.unschedulable.len(),
            self.gated.len(),
        )
    }

    fn active_key(q: &QueuedPod, id: QPodId) -> ActiveKey {
        (-(q.pod.priority() as i64), q.timestamp, id)
    }

    /// The backoff duration in whole seconds for the pod's failure count.
    pub fn backoff_secs(&self, q: &QueuedPod) -> i64 {
        let count = if q.consecutive_errors > 0 {
            q.consecutive_errors
        } else {
            q.unschedulable_count
        };
        if count == 0 {
            return 0;
        }
        let mut d = self.cfg.initial_backoff_secs;
        for _ in 1..count {
            d = d.saturating_mul(2);
            if d >= self.cfg.max_backoff_secs {
                return self.cfg.max_backoff_secs;
            }
        }
        d.min(self.cfg.max_backoff_secs)
    }

    /// Whole second at which the pod's backoff expires (window-aligned).
    pub fn backoff_expiry_sec(&self, q: &QueuedPod) -> i64 {
        q.timestamp.0.div_euclid(MICROS) + self.backoff_secs(q)
    }

    fn is_backing_off(&self, q: &QueuedPod, now: i64) -> bool {
        q.gated_by.is_none()
            && self.backoff_secs(q) > 0
            && self.backoff_expiry_sec(q) >= now.div_euclid(MICROS)
    }

    fn backoff_key(&self, q: &QueuedPod, id: QPodId) -> BackoffKey {
        (
            self.backoff_expiry_sec(q),
            -(q.pod.priority() as i64),
            q.timestamp,
            id,
        )
    }

    /// Removes the pod from whatever structure holds it (not from `pods`).
    fn unlink(&mut self, id: QPodId) {
        let Some(q) = self.pods.get(&id) else {
            return;
        };
        match q.location {
            Location::Active => {
                let k = Self::active_key(q, id);
                self.active.remove(&k);
            }
            Location::Backoff => {
                let k = self.backoff_key(q, id);
                self.backoff.remove(&k);
            }
            Location::ErrorBackoff => {
                let k = self.backoff_key(q, id);
                self.error_backoff.remove(&k);
            }
            Location::Unschedulable => {
                self.unschedulable.remove(&(q.timestamp, id));
            }
            Location::Gated => {
                self.gated.remove(&id);
            }
            Location::InFlight => {}
        }
    }

    fn place(&mut self, id: QPodId, loc: Location) {
        let Some(q) = self.pods.get_mut(&id) else {
            return;
        };
        q.location = loc;
        let q = q.clone();
        match loc {
            Location::Active => {
                self.active.insert(Self::active_key(&q, id));
            }
            Location::Backoff => {
                let k = self.backoff_key(&q, id);
                self.backoff.insert(k);
            }
            Location::ErrorBackoff => {
                let k = self.backoff_key(&q, id);
                self.error_backoff.insert(k);
            }
            Location::Unschedulable => {
                self.unschedulable.insert((q.timestamp, id));
            }
            Location::Gated => {
                self.gated.insert(id);
            }
            Location::InFlight => {}
        }
    }

    /// A new pod: PreEnqueue decides between activeQ and the gated set.
    pub fn add(
        &mut self,
        id: QPodId,
        pod: Arc<PodInfo>,
        stamp: Stamp,
        fwk: &Framework,
    ) -> Location {
        let gate = fwk.run_pre_enqueue(&pod);
        let q = QueuedPod {
            pod,
            timestamp: stamp,
            attempts: 0,
            unschedulable_count: 0,
            consecutive_errors: 0,
            unschedulable_plugins: Vec::new(),
            pending_plugins: Vec::new(),
            gated_by: if gate.is_success() {
                None
            } else {
                Some(gate.plugin)
            },
            gate_message: if gate.is_success() {
                String::new()
            } else {
                gate.message()
            },
            location: Location::Gated,
        };
        let loc = if q.gated_by.is_some() {
            Location::Gated
        } else {
            Location::Active
        };
        self.pods.insert(id, q);
        self.place(id, loc);
        loc
    }

    /// Whether `pop` would return a pod (activeQ or backoffQ non-empty).
    pub fn has_poppable(&self) -> bool {
        !self.active.is_empty() || !self.backoff.is_empty()
    }

    /// Pops the next pod to schedule: activeQ's head, else backoffQ's head. Returns the pod and
    /// its attempt number (pops so far, including this one).
    pub fn pop(&mut self) -> Option<(QPodId, Arc<PodInfo>, u32)> {
        let id = if let Some(&(_, _, id)) = self.active.iter().next() {
            id
        } else if let Some(&(_, _, _, id)) = self.backoff.iter().next() {
            id
        } else {
            return None;
        };
        self.unlink(id);
        let q = self.pods.get_mut(&id)?;
        q.location = Location::InFlight;
        q.attempts += 1;
        Some((id, q.pod.clone(), q.attempts))
    }

    /// The popped pod failed as Unschedulable (`AddUnschedulableIfNotPresent`): its rejector
    /// sets are replaced by this attempt's, and it goes to the pool with a new timestamp unless
    /// `strategy` (from the events that arrived while it was in flight, see
    /// [`in_flight_strategy`]) requeues it: to backoffQ while backing off, else to activeQ.
    pub fn failed_unschedulable(
        &mut self,
        id: QPodId,
        stamp: Stamp,
        plugins: Vec<&'static str>,
        pending: Vec<&'static str>,
        strategy: QueueingStrategy,
    ) -> Location {
        let now = stamp.0;
        let Some(q) = self.pods.get_mut(&id) else {
            return Location::Unschedulable;
        };
        q.unschedulable_count += 1;
        q.consecutive_errors = 0;
        q.timestamp = stamp;
        q.unschedulable_plugins = plugins;
        q.pending_plugins = pending;
        let q = q.clone();
        let loc = match strategy {
            QueueingStrategy::Skip => Location::Unschedulable,
            QueueingStrategy::AfterBackoff if self.is_backing_off(&q, now) => Location::Backoff,
            QueueingStrategy::AfterBackoff | QueueingStrategy::Immediately => Location::Active,
        };
        self.place(id, loc);
        loc
    }

    /// The popped pod failed with an error (including "no nodes available"): error backoff.
    pub fn failed_error(&mut self, id: QPodId, stamp: Stamp) -> Location {
        let Some(q) = self.pods.get_mut(&id) else {
            return Location::ErrorBackoff;
        };
        q.consecutive_errors += 1;
        q.timestamp = stamp;
        q.unschedulable_plugins.clear();
        q.pending_plugins.clear();
        self.place(id, Location::ErrorBackoff);
        Location::ErrorBackoff
    }

    /// Replaces the pod object of a queued pod without moving it (e.g. its nominated node was
    /// set). The priority must be unchanged.
    pub fn set_pod(&mut self, id: QPodId, pod: Arc<PodInfo>) {
        let Some(loc) = self.pods.get(&id).map(|q| q.location) else {
            return;
        };
        self.unlink(id);
        if let Some(q) = self.pods.get_mut(&id) {
            q.pod = pod;
        }
        self.place(id, loc);
    }

    /// Replaces the object of a popped pod that has not come back yet (in flight) and returns
    /// the one it had; `None`, with nothing replaced, for a pod that is not in flight. An
    /// in-flight pod is in none of the ordered sets, so nothing moves.
    pub fn replace_in_flight(&mut self, id: QPodId, pod: Arc<PodInfo>) -> Option<Arc<PodInfo>> {
        let q = self.pods.get_mut(&id)?;
        if q.location != Location::InFlight {
            return None;
        }
        Some(std::mem::replace(&mut q.pod, pod))
    }

    /// The pod was scheduled (or deleted): it leaves the queue.
    pub fn remove(&mut self, id: QPodId) -> Option<QueuedPod> {
        self.unlink(id);
        self.pods.remove(&id)
    }

    /// The pending pod's object changed (`UpdatePod`). Gated pods are re-checked by PreEnqueue
    /// (ungating keeps the timestamp); pool pods are moved if a rejector's hint says Queue.
    pub fn update(
        &mut self,
        id: QPodId,
        pod: Arc<PodInfo>,
        now: i64,
        fwk: &Framework,
    ) -> Option<Location> {
        let q = self.pods.get(&id)?.clone();
        self.unlink(id);
        let old = q.pod.clone();
        if let Some(e) = self.pods.get_mut(&id) {
            e.pod = pod.clone();
        }
        let loc = match q.location {
            Location::Gated => {
                let gate = fwk.run_pre_enqueue(&pod);
                if gate.is_success() {
                    if let Some(e) = self.pods.get_mut(&id) {
                        e.gated_by = None;
                        e.gate_message.clear();
                    }
                    Location::Active
                } else {
                    if let Some(e) = self.pods.get_mut(&id) {
                        e.gated_by = Some(gate.plugin);
                        e.gate_message = gate.message();
                    }
                    Location::Gated
                }
            }
            Location::Unschedulable => {
                let objs = ClusterEventObjects::Pod {
                    old: Some(&old),
                    new: Some(&pod),
                };
                let e = self.pods.get(&id)?.clone();
                match requeue_strategy(fwk, &e, ClusterEventKind::UnscheduledPodUpdate, &objs) {
                    QueueingStrategy::Skip => Location::Unschedulable,
                    QueueingStrategy::AfterBackoff if self.is_backing_off(&e, now) => {
                        Location::Backoff
                    }
                    QueueingStrategy::AfterBackoff | QueueingStrategy::Immediately => {
                        Location::Active
                    }
                }
            }
            other => other,
        };
        self.place(id, loc);
        Some(loc)
    }

    /// Offers cluster events to every pool pod, one event at a time in the order given (upstream
    /// calls `MoveAllToActiveOrBackoffQueue` once per event that `NodeSchedulingPropertiesChange`
    /// extracts); returns the pods moved, in order.
    pub fn on_event(
        &mut self,
        kinds: &[ClusterEventKind],
        objs: &ClusterEventObjects<'_>,
        now: i64,
        fwk: &Framework,
    ) -> Vec<(QPodId, Moved)> {
        let mut moved = Vec::new();
        for kind in kinds {
            self.move_all_for_event(*kind, objs, now, fwk, &mut moved);
        }
        moved
    }

    /// `MoveAllToActiveOrBackoffQueue` for one event.
    fn move_all_for_event(
        &mut self,
        kind: ClusterEventKind,
        objs: &ClusterEventObjects<'_>,
        now: i64,
        fwk: &Framework,
        moved: &mut Vec<(QPodId, Moved)>,
    ) {
        self.move_gated_for_event(kind, objs, fwk, moved);
        let candidates: Vec<(Stamp, QPodId)> = self.unschedulable.iter().copied().collect();
        for (_, id) in candidates {
            let Some(q) = self.pods.get(&id) else {
                continue;
            };
            let q = q.clone();
            let strategy = requeue_strategy(fwk, &q, kind, objs);
            if strategy == QueueingStrategy::Skip {
                continue;
            }
            self.unlink(id);
            if strategy == QueueingStrategy::AfterBackoff && self.is_backing_off(&q, now) {
                self.place(id, Location::Backoff);
                moved.push((id, Moved::ToBackoff));
            } else {
                self.place(id, Location::Active);
                moved.push((id, Moved::ToActive));
            }
        }
    }

    /// Gated pods and one cluster event (upstream `movePodsToActiveOrBackoffQueue` for a pod
    /// that failed PreEnqueue): an event the gating plugin did not register leaves the pod
    /// alone; otherwise the gating plugin's hint decides, and on `Queue` PreEnqueue runs again
    /// (`moveToActiveQ`): a pod that passes goes to activeQ with its timestamp, one that fails
    /// stays gated. Only gating plugins that register cluster events are concerned (in-tree:
    /// DynamicResources; SchedulingGates registers only the pod's own update).
    fn move_gated_for_event(
        &mut self,
        kind: ClusterEventKind,
        objs: &ClusterEventObjects<'_>,
        fwk: &Framework,
        moved: &mut Vec<(QPodId, Moved)>,
    ) {
        if self.gated.is_empty() {
            return;
        }
        let gated: Vec<QPodId> = self.gated.iter().copied().collect();
        for id in gated {
            let Some(q) = self.pods.get(&id) else {
                continue;
            };
            let Some(plugin) = q.gated_by.and_then(|name| fwk.plugin(name)) else {
                continue;
            };
            let Some(ext) = plugin.as_enqueue_extensions() else {
                continue;
            };
            if !ext.events().iter().any(|e| e.covers(kind)) {
                continue;
            }
            let pod = q.pod.clone();
            if plugin_queueing_hint(Some(ext), &pod, kind, objs) == QueueingHint::Skip {
                continue;
            }
            let gate = fwk.run_pre_enqueue(&pod);
            let Some(e) = self.pods.get_mut(&id) else {
                continue;
            };
            if gate.is_success() {
                e.gated_by = None;
                e.gate_message.clear();
                self.unlink(id);
                self.place(id, Location::Active);
                moved.push((id, Moved::ToActive));
            } else {
                e.gated_by = Some(gate.plugin);
                e.gate_message = gate.message();
            }
        }
    }

    /// `flushBackoffQCompleted`: backoffQ and error-backoff pods whose expiry is before `now`'s
    /// second move to activeQ.
    pub fn flush_backoff_completed(&mut self, now: i64) -> usize {
        let sec = now.div_euclid(MICROS);
        let mut n = 0;
        for set in [0, 1] {
            loop {
                let head = if set == 0 {
                    self.backoff.iter().next().copied()
                } else {
                    self.error_backoff.iter().next().copied()
                };
                let Some((exp, _, _, id)) = head else {
                    break;
                };
                if exp >= sec {
                    break;
                }
                self.unlink(id);
                self.place(id, Location::Active);
                n += 1;
            }
        }
        n
    }

    /// `flushUnschedulablePodsLeftover`: pool pods that stayed longer than the maximum move back
    /// (to backoffQ if still backing off, else activeQ).
    pub fn flush_unschedulable_leftover(&mut self, now: i64) -> Vec<(QPodId, Moved)> {
        let max = self.cfg.max_in_unschedulable_us;
        let expired: Vec<QPodId> = self
            .unschedulable
            .iter()
            .take_while(|((t, _), _)| now - *t > max)
            .map(|(_, id)| *id)
            .collect();
        let mut out = Vec::new();
        for id in expired {
            let Some(q) = self.pods.get(&id).cloned() else {
                continue;
            };
            self.unlink(id);
            if self.is_backing_off(&q, now) {
                self.place(id, Location::Backoff);
                out.push((id, Moved::ToBackoff));
            } else {
                self.place(id, Location::Active);
                out.push((id, Moved::ToActive));
            }
        }
        out
    }

    /// Checks the structural invariants (for tests and debug assertions): every pod is in
    /// exactly the structure its location names.
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut count = 0;
        for (id, q) in &self.pods {
            let present = match q.location {
                Location::Active => self.active.contains(&Self::active_key(q, *id)),
                Location::Backoff => self.backoff.contains(&self.backoff_key(q, *id)),
                Location::ErrorBackoff => self.error_backoff.contains(&self.backoff_key(q, *id)),
                Location::Unschedulable => self.unschedulable.contains(&(q.timestamp, *id)),
                Location::Gated => self.gated.contains(id),
                Location::InFlight => true,
            };
            if !present {
                return Err(format!("pod {id} is not in its {:?} structure", q.location));
            }
            if q.location != Location::InFlight {
                count += 1;
            }
            let b = self.backoff_secs(q);
            if b > self.cfg.max_backoff_secs {
                return Err(format!("pod {id} backoff {b}s exceeds the maximum"));
            }
        }
        let total = self.active.len()
            + self.backoff.len()
            + self.error_backoff.len()
            + self.unschedulable.len()
            + self.gated.len();
        if total != count {
            return Err(format!("{total} structure entries for {count} queued pods"));
        }
        Ok(())
    }
}

/// How an event requeues a rejected pod (upstream `queueingStrategy`), weakest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum QueueingStrategy {
    /// Stays in the unschedulable pool.
    Skip,
    /// To backoffQ while backing off, else activeQ.
    AfterBackoff,
    /// To activeQ at once (a Pending plugin said Queue).
    Immediately,
}

/// `isPodWorthRequeuing`: what an event of `kind` does for a pod in the pool. A pod rejected
/// by no plugin (and the unschedulable-timeout flush, a wildcard event) is requeued after
/// backoff; otherwise each rejecting or pending plugin's hint for the events it registered is
/// asked: `Queue` from a Pending plugin requeues at once, from another plugin after backoff.
pub fn requeue_strategy(
    fwk: &Framework,
    q: &QueuedPod,
    kind: ClusterEventKind,
    objs: &ClusterEventObjects<'_>,
) -> QueueingStrategy {
    if kind == ClusterEventKind::UnschedulableTimeout {
        return QueueingStrategy::AfterBackoff;
    }
    if q.unschedulable_plugins.is_empty() && q.pending_plugins.is_empty() {
        return QueueingStrategy::AfterBackoff;
    }
    let mut strategy = QueueingStrategy::Skip;
    let rejectors = q.unschedulable_plugins.iter().chain(
        q.pending_plugins
            .iter()
            .filter(|p| !q.unschedulable_plugins.contains(p)),
    );
    for name in rejectors {
        let Some(p) = fwk.plugin(name) else {
            continue;
        };
        if plugin_queueing_hint(p.as_enqueue_extensions(), &q.pod, kind, objs) == QueueingHint::Skip
        {
            continue;
        }
        if q.pending_plugins.contains(name) {
            return QueueingStrategy::Immediately;
        }
        if q.pending_plugins.is_empty() {
            return QueueingStrategy::AfterBackoff;
        }
        strategy = QueueingStrategy::AfterBackoff;
    }
    strategy
}

/// `determineSchedulingHintForInFlightPod`: what the events that arrived while the pod was in
/// flight do for it once it failed with these rejectors — after backoff when no plugin rejected
/// it, else the strongest of the events' strategies.
pub fn in_flight_strategy(
    q: &QueuedPod,
    events: impl IntoIterator<Item = QueueingStrategy>,
) -> QueueingStrategy {
    if q.unschedulable_plugins.is_empty() && q.pending_plugins.is_empty() {
        return QueueingStrategy::AfterBackoff;
    }
    events.into_iter().max().unwrap_or(QueueingStrategy::Skip)
}
