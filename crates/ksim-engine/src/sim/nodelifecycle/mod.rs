//! Room: the node lifecycle controller (kube-controller-manager's `node-lifecycle-controller`,
//! `pkg/controller/nodelifecycle/node_lifecycle_controller.go`) and the kubelet heartbeat it
//! reads. Owns each failed node's heartbeat (`FailNode` / `RecoverNode`), the zones' states
//! and their rate-limited queues of nodes waiting for a NoExecute taint.
//!
//! Reacts to:
//! - the inputs `FailNode` (the kubelet stops renewing its lease: its last renewal is the
//!   last multiple of `leaseRenewInterval` at or before the failure, first seen by the monitor
//!   pass at or after it) and `RecoverNode` (the kubelet posts its conditions as before);
//! - every node write (`nodes` room: add, update, removal, and this room's own writes):
//!   `doNoScheduleTaintingPass` keeps the NoSchedule taints of the node's conditions
//!   (Ready False → `node.kubernetes.io/not-ready`, Unknown → `node.kubernetes.io/unreachable`,
//!   MemoryPressure / DiskPressure / PIDPressure / NetworkUnavailable True → their taints), and
//!   the change of its Ready status or of those taints is recorded as a `NodeEvent`;
//! - its timers: `monitorNodeHealth` every `--node-monitor-period` on the grid 0, 5 s, ...
//!   (`tryUpdateNodeHealth`: a node whose last heartbeat was seen more than
//!   `--node-monitor-grace-period` ago gets Ready, MemoryPressure, DiskPressure and PIDPressure
//!   Unknown; `processTaintBaseEviction` with the Ready status the pass *observed before* that
//!   update queues the node for its NoExecute taint, swaps not-ready/unreachable at once, or
//!   removes both when Ready; `handleDisruption` computes each zone's state and sets its
//!   tainting rate), and `doNoExecuteTaintingPass` every `NodeEvictionPeriod` (100 ms) that
//!   taints queued nodes as their zone's token bucket allows.
//!
//! The passes only run while something can change (a failed node not yet Unknown, a node whose
//! taint is due or must be removed, a queue with nodes waiting): a pass over healthy nodes
//! changes nothing upstream either, so a run without failures keeps its events and outputs.
//! What the NoExecute taints do to pods is the taint-eviction room's (`sim/tainteviction.rs`).

pub(super) mod zone;

use std::collections::BTreeMap;
use std::sync::Arc;

use ksim_api::{Condition, Node, Taint};

use super::{Ev, SimError, Simulation};
use crate::control_plane::NodeLifecycleConfig;
use crate::record::{Observer, Record};
use crate::time::{SimDuration, SimTime};
use zone::{TaintQueue, ZoneState};

pub const TAINT_NOT_READY: &str = "node.kubernetes.io/not-ready";
pub const TAINT_UNREACHABLE: &str = "node.kubernetes.io/unreachable";
const NO_EXECUTE: &str = "NoExecute";
const NO_SCHEDULE: &str = "NoSchedule";
/// `labelNodeDisruptionExclusion`: nodes with it are left out of zone states.
const EXCLUDE_DISRUPTION: &str = "node.kubernetes.io/exclude-disruption";
/// `scheduler.NodeEvictionPeriod`: the period of the NoExecute tainting pass.
const NODE_EVICTION_PERIOD: SimDuration = SimDuration(100_000);

/// Upstream `nodeConditionToTaintKeyStatusMap`: (condition type, status) → NoSchedule taint key.
const CONDITION_TAINTS: [(&str, &str, &str); 6] = [
    ("Ready", "False", TAINT_NOT_READY),
    ("Ready", "Unknown", TAINT_UNREACHABLE),
    (
        "MemoryPressure",
        "True",
        "node.kubernetes.io/memory-pressure",
    ),
    ("DiskPressure", "True", "node.kubernetes.io/disk-pressure"),
    (
        "NetworkUnavailable",
        "True",
        "node.kubernetes.io/network-unavailable",
    ),
    ("PIDPressure", "True", "node.kubernetes.io/pid-pressure"),
];

/// A failed node's kubelet.
#[derive(Debug, Clone)]
struct Heartbeat {
    /// `probeTimestamp`: when the controller last saw the lease renewed.
    probe: SimTime,
    /// The node's conditions when its kubelet stopped: what it posts again on recovery.
    conditions: Vec<Condition>,
}

/// The controller's state.
#[derive(Debug, Clone)]
pub(super) struct State {
    cfg: NodeLifecycleConfig,
    /// Nodes whose kubelet stopped reporting, by name.
    failed: BTreeMap<String, Heartbeat>,
    /// Zone key → (state, queue of nodes waiting for their NoExecute taint).
    zones: BTreeMap<String, (ZoneState, TaintQueue)>,
    monitor_armed: bool,
    /// When the last monitor pass ran: a pass is armed for a later instant of the grid.
    last_pass: Option<SimTime>,
    taint_pass_armed: bool,
}

impl State {
    pub(super) fn new(cfg: NodeLifecycleConfig) -> State {
        State {
            cfg,
            failed: BTreeMap::new(),
            zones: BTreeMap::new(),
            monitor_armed: false,
            last_pass: None,
            taint_pass_armed: false,
        }
    }

    fn eviction_qps(&self) -> f32 {
        self.cfg.node_eviction_rate as f32
    }

    fn zone_mut(&mut self, key: &str) -> &mut (ZoneState, TaintQueue) {
        let qps = self.eviction_qps();
        self.zones
            .entry(key.to_string())
            .or_insert_with(|| (ZoneState::Initial, TaintQueue::new(qps)))
    }
}

/// The Ready status of a node as the controller reads it: its `Ready` condition, or `True`
/// when it has none (ksim's nodes join with their kubelet reporting Ready).
pub fn ready_status(node: &Node) -> &str {
    node.status
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .map_or("True", |c| c.status.as_str())
}

fn has_taint(node: &Node, key: &str, effect: &str) -> bool {
    node.spec
        .taints
        .iter()
        .any(|t| t.key == key && t.effect == effect)
}

/// Whether this taint key is one the node controller manages for conditions.
fn is_condition_taint(key: &str) -> bool {
    CONDITION_TAINTS.iter().any(|(_, _, k)| *k == key)
}

/// Upstream `doNoScheduleTaintingPass`'s target: the node's taints with the NoSchedule taints
/// of its conditions, or `None` when they already match. Taints to add are appended (as
/// `SwapNodeControllerTaint`), stale condition taints removed. `node.kubernetes.io/unschedulable`
/// (for `spec.unschedulable`) is not managed: the NodeUnschedulable plugin gives its verdict.
pub fn no_schedule_taints(node: &Node) -> Option<Vec<Taint>> {
    let mut wanted: Vec<&str> = Vec::new();
    for c in &node.status.conditions {
        for (ty, status, key) in CONDITION_TAINTS {
            if c.type_ == ty && c.status == status && !wanted.contains(&key) {
                wanted.push(key);
            }
        }
    }
    let have = |key: &str| has_taint(node, key, NO_SCHEDULE);
    let to_add: Vec<&str> = wanted.iter().copied().filter(|k| !have(k)).collect();
    let stale = |t: &Taint| {
        t.effect == NO_SCHEDULE && is_condition_taint(&t.key) && !wanted.contains(&t.key.as_str())
    };
    if to_add.is_empty() && !node.spec.taints.iter().any(stale) {
        return None;
    }
    let mut taints: Vec<Taint> = node
        .spec
        .taints
        .iter()
        .filter(|t| !stale(t))
        .cloned()
        .collect();
    for k in to_add {
        taints.push(Taint {
            key: k.to_string(),
            value: String::new(),
            effect: NO_SCHEDULE.to_string(),
        });
    }
    Some(taints)
}

/// `SwapNodeControllerTaint` of the NoExecute taints: `add` appended (if missing), `remove`
/// taken off; `None` when nothing changes.
fn swap_no_execute(node: &Node, add: Option<&str>, remove: &[&str]) -> Option<Vec<Taint>> {
    let adds = add.is_some_and(|k| !has_taint(node, k, NO_EXECUTE));
    let removes = remove.iter().any(|k| has_taint(node, k, NO_EXECUTE));
    if !adds && !removes {
        return None;
    }
    let mut taints: Vec<Taint> = node
        .spec
        .taints
        .iter()
        .filter(|t| !(t.effect == NO_EXECUTE && remove.contains(&t.key.as_str())))
        .cloned()
        .collect();
    if let Some(k) = add.filter(|_| adds) {
        taints.push(Taint {
            key: k.to_string(),
            value: String::new(),
            effect: NO_EXECUTE.to_string(),
        });
    }
    Some(taints)
}

/// `tryUpdateNodeHealth`'s update of a node whose heartbeat is older than its grace: Ready,
/// MemoryPressure, DiskPressure and PIDPressure become Unknown (appended when the kubelet's
/// object never had them; NetworkUnavailable is left alone).
pub fn mark_unknown(node: &Node) -> Vec<Condition> {
    let mut conds = node.status.conditions.clone();
    for ty in ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"] {
        match conds.iter_mut().find(|c| c.type_ == ty) {
            Some(c) => {
                if c.status != "Unknown" {
                    c.status = "Unknown".into();
                    c.reason = "NodeStatusUnknown".into();
                    c.message = "Kubelet stopped posting node status.".into();
                }
            }
            None => conds.push(Condition {
                type_: ty.into(),
                status: "Unknown".into(),
                reason: "NodeStatusUnknown".into(),
                message: "Kubelet stopped posting node status.".into(),
            }),
        }
    }
    conds
}

impl Simulation {
    fn nl_enabled(&self) -> bool {
        self.lifecycle.cfg.enabled
    }

    fn node_event(&self, obs: &mut dyn Observer, node: &Node, event: &str, detail: String) {
        obs.record(&Record::NodeEvent {
            at: self.now,
            node: node.metadata.name.clone(),
            zone: zone::zone_display(&zone::zone_key(node)),
            event: event.to_string(),
            detail,
        });
    }

    /// Writes a controller's change of a node through the nodes room (record, cache, queue).
    fn write_node(&mut self, node: Node, obs: &mut dyn Observer) {
        // The node exists (the caller just read it): an update cannot fail.
        if self.update_node(node, obs).is_err() {
            debug_assert!(false, "node lifecycle wrote a node that does not exist");
        }
    }

    /// Input `FailNode`: the node's kubelet stops reporting.
    pub(super) fn fail_node(&mut self, name: &str, obs: &mut dyn Observer) -> Result<(), SimError> {
        let Some(node) = self.snapshot.get(name).map(|n| n.node.clone()) else {
            return Err(self.input_err(format!("FailNode of node {name:?}, which does not exist")));
        };
        if self.lifecycle.failed.contains_key(name) {
            return Ok(()); // Already down.
        }
        self.node_event(obs, &node, "KubeletStopped", String::new());
        let cfg = &self.lifecycle.cfg;
        // The last lease renewal at or before now, first seen by the pass at or after it.
        let renew = cfg.lease_renew_interval.micros();
        let period = cfg.node_monitor_period.micros();
        let renewed = self.now.micros().div_euclid(renew) * renew;
        let probe = SimTime((renewed + period - 1).div_euclid(period) * period);
        self.lifecycle.failed.insert(
            name.to_string(),
            Heartbeat {
                probe,
                conditions: node.status.conditions.clone(),
            },
        );
        self.arm_monitor();
        Ok(())
    }

    /// Input `RecoverNode`: the kubelet reports again and posts its conditions as before it
    /// stopped (a node that had not failed posts its conditions unchanged).
    pub(super) fn recover_node(
        &mut self,
        name: &str,
        obs: &mut dyn Observer,
    ) -> Result<(), SimError> {
        let Some(node) = self.snapshot.get(name).map(|n| n.node.clone()) else {
            return Err(self.input_err(format!(
                "RecoverNode of node {name:?}, which does not exist"
            )));
        };
        let Some(hb) = self.lifecycle.failed.remove(name) else {
            return Ok(());
        };
        self.node_event(obs, &node, "KubeletStarted", String::new());
        if node.status.conditions != hb.conditions {
            let mut n = (*node).clone();
            n.status.conditions = hb.conditions;
            self.write_node(n, obs);
        }
        self.arm_monitor();
        Ok(())
    }

    /// Hook of every node write (added: `old` None; removed: `new` None): the NoSchedule
    /// condition taints, the records of Ready and taint changes, and whether the monitor must run.
    pub(super) fn lifecycle_node_written(
        &mut self,
        old: Option<&Arc<Node>>,
        new: Option<&Arc<Node>>,
        obs: &mut dyn Observer,
    ) {
        if !self.nl_enabled() {
            return;
        }
        if new.is_none() {
            if let Some(o) = old {
                let name = o.metadata.name.clone();
                self.lifecycle.failed.remove(&name);
                if let Some((_, q)) = self.lifecycle.zones.get_mut(&zone::zone_key(o)) {
                    q.remove(&name);
                }
                if self.lifecycle_unsettled() {
                    self.arm_monitor();
                }
            }
            return;
        }
        let Some(n) = new else { return };
        let old_ready = old.map_or("True", |o| ready_status(o));
        let new_ready = ready_status(n);
        if old_ready != new_ready {
            let ev = if new_ready == "True" {
                "NodeReady"
            } else {
                "NodeNotReady"
            };
            self.node_event(obs, n, ev, new_ready.to_string());
        }
        for t in &n.spec.taints {
            let was = old.is_some_and(|o| has_taint(o, &t.key, &t.effect));
            if !was && (is_condition_taint(&t.key)) {
                self.node_event(obs, n, "TaintAdded", format!("{}:{}", t.key, t.effect));
            }
        }
        if let Some(o) = old {
            for t in &o.spec.taints {
                if is_condition_taint(&t.key) && !has_taint(n, &t.key, &t.effect) {
                    self.node_event(obs, n, "TaintRemoved", format!("{}:{}", t.key, t.effect));
                }
            }
        }
        let concerns = |x: &Node| {
            ready_status(x) != "True" || x.spec.taints.iter().any(|t| is_condition_taint(&t.key))
        };
        if concerns(n) || old.is_some_and(|o| concerns(o)) || self.lifecycle_unsettled() {
            self.arm_monitor();
        }
        if let Some(taints) = no_schedule_taints(n) {
            let mut updated = (**n).clone();
            updated.spec.taints = taints;
            self.write_node(updated, obs);
        }
    }

    /// Some node is failed or some zone is not Normal: node additions and removals change
    /// zone sizes and states, so the monitor must look.
    fn lifecycle_unsettled(&self) -> bool {
        !self.lifecycle.failed.is_empty()
            || self.lifecycle.zones.values().any(|(s, q)| {
                !matches!(s, ZoneState::Normal | ZoneState::Initial) || q.is_waiting()
            })
    }

    /// The initial nodes as the controller first lists them (its informer's add events).
    pub(super) fn lifecycle_begin(&mut self, obs: &mut dyn Observer) {
        if !self.nl_enabled() {
            return;
        }
        let nodes: Vec<Arc<Node>> = self.snapshot.nodes.iter().map(|n| n.node.clone()).collect();
        for n in nodes {
            if ready_status(&n) != "True" || no_schedule_taints(&n).is_some() {
                self.lifecycle_node_written(None, Some(&n), obs);
            }
        }
    }

    fn arm_monitor(&mut self) {
        if self.lifecycle.monitor_armed || !self.nl_enabled() {
            return;
        }
        let p = self.lifecycle.cfg.node_monitor_period.micros();
        let mut k = (self.now.micros() + p - 1).div_euclid(p);
        if self.lifecycle.last_pass == Some(SimTime(k * p)) {
            k += 1;
        }
        self.lifecycle.monitor_armed = true;
        self.schedule(SimTime(k * p), 0, Ev::NodeMonitor);
    }

    fn arm_taint_pass(&mut self) {
        if self.lifecycle.taint_pass_armed {
            return;
        }
        let now = self.now;
        let next = self
            .lifecycle
            .zones
            .values()
            .filter(|(_, q)| q.is_waiting())
            .filter_map(|(_, q)| q.limiter.next_token(now))
            .min();
        if let Some(t) = next {
            let p = NODE_EVICTION_PERIOD.micros();
            let k = (t.micros() + p - 1).div_euclid(p);
            self.lifecycle.taint_pass_armed = true;
            self.schedule(SimTime(k * p), 0, Ev::NoExecuteTaintPass);
        }
    }

    /// `monitorNodeHealth`: one pass over every node, by name.
    pub(super) fn monitor_node_health(&mut self, obs: &mut dyn Observer) {
        self.lifecycle.monitor_armed = false;
        self.lifecycle.last_pass = Some(self.now);
        let mut names: Vec<String> = self
            .snapshot
            .nodes
            .iter()
            .map(|n| n.name().to_string())
            .collect();
        names.sort();
        let grace = self.lifecycle.cfg.node_monitor_grace_period;
        let mut zone_ready: BTreeMap<String, Vec<bool>> = BTreeMap::new();
        let mut settled = true;
        for name in &names {
            let Some(node) = self.snapshot.get(name).map(|n| n.node.clone()) else {
                continue;
            };
            let key = zone::zone_key(&node);
            self.lifecycle.zone_mut(&key);
            let observed = ready_status(&node).to_string();
            let mut current = observed.clone();
            if let Some(hb) = self.lifecycle.failed.get(name) {
                if self.now > hb.probe + grace {
                    let conds = mark_unknown(&node);
                    if conds != node.status.conditions {
                        let mut n = (*node).clone();
                        n.status.conditions = conds;
                        self.write_node(n, obs);
                    }
                    current = "Unknown".into();
                } else {
                    settled = false;
                }
            }
            let node = self.snapshot.get(name).map_or(node, |n| n.node.clone());
            if !node.metadata.labels.contains_key(EXCLUDE_DISRUPTION) {
                zone_ready
                    .entry(key.clone())
                    .or_default()
                    .push(current == "True");
            }
            settled &= self.process_taint_based_eviction(&node, &key, &observed, obs);
            if observed != current {
                settled = false; // The next pass acts on the new status.
            }
        }
        self.handle_disruption(zone_ready, &names, obs);
        self.arm_taint_pass();
        if !settled {
            self.arm_monitor();
        }
    }

    /// `processTaintBaseEviction` with the Ready status the pass observed. Returns whether
    /// the node is settled (nothing left for a later pass to do).
    fn process_taint_based_eviction(
        &mut self,
        node: &Arc<Node>,
        zone: &str,
        observed: &str,
        obs: &mut dyn Observer,
    ) -> bool {
        let name = node.metadata.name.clone();
        let (taint, opposite) = match observed {
            "False" => (TAINT_NOT_READY, TAINT_UNREACHABLE),
            "Unknown" => (TAINT_UNREACHABLE, TAINT_NOT_READY),
            _ => {
                // markNodeAsReachable.
                if let Some(t) = swap_no_execute(node, None, &[TAINT_UNREACHABLE, TAINT_NOT_READY])
                {
                    let mut n = (**node).clone();
                    n.spec.taints = t;
                    self.write_node(n, obs);
                }
                self.lifecycle.zone_mut(zone).1.remove(&name);
                return true;
            }
        };
        if has_taint(node, opposite, NO_EXECUTE) {
            // Swapped at once, not rate limited.
            if let Some(t) = swap_no_execute(node, Some(taint), &[opposite]) {
                let mut n = (**node).clone();
                n.spec.taints = t;
                self.write_node(n, obs);
            }
            return true;
        }
        // markNodeForTainting.
        let q = &mut self.lifecycle.zone_mut(zone).1;
        if !has_taint(node, taint, NO_EXECUTE) {
            q.remove(&name);
        }
        q.add(&name);
        true
    }

    /// `handleDisruption`: zone states from this pass's Ready statuses, and their rates.
    fn handle_disruption(
        &mut self,
        zone_ready: BTreeMap<String, Vec<bool>>,
        names: &[String],
        obs: &mut dyn Observer,
    ) {
        let cfg = self.lifecycle.cfg.clone();
        let threshold = cfg.unhealthy_zone_threshold as f32;
        let new_states: BTreeMap<String, ZoneState> = zone_ready
            .iter()
            .map(|(k, v)| (k.clone(), zone::compute_zone_state(v, threshold).1))
            .collect();
        let all_are_full = new_states.values().all(|s| *s == ZoneState::FullDisruption);
        // Zones without nodes this pass are forgotten.
        self.lifecycle
            .zones
            .retain(|k, _| zone_ready.contains_key(k));
        let all_were_full = self
            .lifecycle
            .zones
            .values()
            .all(|(s, _)| *s == ZoneState::FullDisruption);
        if all_are_full && all_were_full {
            return;
        }
        let now = self.now;
        let qps_of = |state: ZoneState, size: usize| {
            zone::zone_qps(
                state,
                size,
                cfg.node_eviction_rate as f32,
                cfg.secondary_node_eviction_rate as f32,
                cfg.large_cluster_size_threshold,
            )
        };
        if all_are_full {
            // Every zone is down: the controller blames itself, stops all evictions and takes
            // the NoExecute taints off every node.
            for name in names {
                if let Some(node) = self.snapshot.get(name).map(|n| n.node.clone()) {
                    if let Some(t) =
                        swap_no_execute(&node, None, &[TAINT_UNREACHABLE, TAINT_NOT_READY])
                    {
                        let mut n = (*node).clone();
                        n.spec.taints = t;
                        self.write_node(n, obs);
                    }
                    let key = zone::zone_key(&node);
                    self.lifecycle.zone_mut(&key).1.remove(name);
                }
            }
            let keys: Vec<String> = self.lifecycle.zones.keys().cloned().collect();
            for k in keys {
                let z = self.lifecycle.zone_mut(&k);
                z.1.limiter.swap(0.0, now);
                let changed = z.0 != ZoneState::FullDisruption;
                z.0 = ZoneState::FullDisruption;
                if changed {
                    self.zone_event(obs, &k, ZoneState::FullDisruption);
                }
            }
            return;
        }
        if all_were_full {
            // Leaving the cluster-wide disruption: every heartbeat counts from now.
            for hb in self.lifecycle.failed.values_mut() {
                hb.probe = now;
            }
        }
        for (k, state) in &new_states {
            let size = zone_ready.get(k).map_or(0, Vec::len);
            let z = self.lifecycle.zone_mut(k);
            if z.0 == *state && !all_were_full {
                continue;
            }
            if let Some(q) = qps_of(*state, size) {
                z.1.limiter.swap(q, now);
            }
            let changed = z.0 != *state;
            let was_initial = z.0 == ZoneState::Initial;
            z.0 = *state;
            if changed && !(was_initial && *state == ZoneState::Normal) {
                self.zone_event(obs, k, *state);
            }
        }
    }

    fn zone_event(&self, obs: &mut dyn Observer, key: &str, state: ZoneState) {
        obs.record(&Record::NodeEvent {
            at: self.now,
            node: String::new(),
            zone: zone::zone_display(key),
            event: "ZoneState".into(),
            detail: state.as_str().into(),
        });
    }

    /// `doNoExecuteTaintingPass`: taints the queued nodes each zone's bucket lets through.
    pub(super) fn no_execute_tainting_pass(&mut self, obs: &mut dyn Observer) {
        self.lifecycle.taint_pass_armed = false;
        let now = self.now;
        let keys: Vec<String> = self.lifecycle.zones.keys().cloned().collect();
        for k in keys {
            let ready = self.lifecycle.zone_mut(&k).1.take_ready(now);
            for name in ready {
                let Some(node) = self.snapshot.get(&name).map(|n| n.node.clone()) else {
                    continue;
                };
                let (taint, opposite) = match ready_status(&node) {
                    "False" => (TAINT_NOT_READY, TAINT_UNREACHABLE),
                    "Unknown" => (TAINT_UNREACHABLE, TAINT_NOT_READY),
                    _ => continue, // Ready again: nothing to taint.
                };
                if let Some(t) = swap_no_execute(&node, Some(taint), &[opposite]) {
                    let mut n = (*node).clone();
                    n.spec.taints = t;
                    self.write_node(n, obs);
                }
            }
        }
        self.arm_taint_pass();
    }
}
