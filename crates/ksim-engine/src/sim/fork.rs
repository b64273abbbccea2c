//! Room: what-if forks (`ksim run --fork-at TIME --variant FILE...`).
//!
//! A simulation paused by [`Simulation::run_to`] is copied by [`Simulation::fork`]: the clock,
//! the heap (with the cycle in flight, if any), the cluster, the queue, the nominations, the
//! controllers, the autoscaler and every RNG's state are cloned, so a copy continued without
//! change produces, byte for byte, what the original would have. Three parts cannot be a plain
//! copy and are handled here:
//! - the input sources (trace readers, generators) are turned into [`TeeSource`] handles over
//!   one shared reader: each handle replays the same events from the fork on, and an event is
//!   kept in memory only until every handle has read it;
//! - the frameworks' plugin instances are rebuilt from the same configuration and registry,
//!   and the state a plugin keeps between cycles (VolumeBinding's assume cache) is copied into
//!   them, so no two copies share a mutable plugin;
//! - the algorithm (round-robin start index, tie-break RNG) is rebuilt with the same values,
//!   its extenders re-created from the configuration.
//!
//! A variant then changes the copy at the fork instant: [`Simulation::set_scheduler_config`]
//! replaces the profiles, and [`Simulation::inject`] adds input events (nodes added or removed,
//! controllers scaled) at that instant, applied after every event and cycle that the trunk had
//! already run there.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use ksim_api::config::KubeSchedulerConfiguration;
use ksim_api::object::{ApiObject, ObjectKind};
use ksim_api::workloads::Workload;
use ksim_scheduler::framework::{build_frameworks, Framework};
use ksim_scheduler::plugins::volume_binding::VolumeBinding;
use ksim_scheduler::schedule::Algorithm;

use super::{SimError, Simulation};
use crate::input::{EventSource, InputEvent, SourceError, SourcePos, TimedEvent, VecSource};
use crate::time::SimTime;

/// One event a shared source produced, with where it was read.
type Item = (Result<Option<TimedEvent>, SourceError>, Option<SourcePos>);

/// The reader behind every [`TeeSource`] handle of one forked source.
struct Shared {
    src: Box<dyn EventSource + Send>,
    /// Items not yet read by every live handle; `buf[0]` is item number `base`.
    buf: VecDeque<Item>,
    base: u64,
    /// Per handle: the number of the next item it reads (`None` once dropped).
    cursors: Vec<Option<u64>>,
}

impl Shared {
    fn trim(&mut self) {
        let low = self.cursors.iter().flatten().min().copied();
        let low = low.unwrap_or(self.base + self.buf.len() as u64);
        while self.base < low && !self.buf.is_empty() {
            self.buf.pop_front();
            self.base += 1;
        }
    }
}

/// One branch's view of a source shared by the copies of a forked simulation: the same
/// events, in the same order, with the same positions, as the original source would have
/// given. Events are read once from the original and buffered until every handle has passed
/// them.
pub struct TeeSource {
    shared: Arc<Mutex<Shared>>,
    id: usize,
    last: Option<SourcePos>,
}

impl TeeSource {
    /// Wraps a source: the first handle.
    fn wrap(src: Box<dyn EventSource + Send>) -> TeeSource {
        let shared = Shared {
            src,
            buf: VecDeque::new(),
            base: 0,
            cursors: vec![Some(0)],
        };
        TeeSource {
            shared: Arc::new(Mutex::new(shared)),
            id: 0,
            last: None,
        }
    }

    /// Another handle at this handle's position.
    fn split(&self) -> TeeSource {
        let mut g = lock(&self.shared);
        let at = g.cursors[self.id];
        g.cursors.push(at);
        TeeSource {
            shared: self.shared.clone(),
            id: g.cursors.len() - 1,
            last: self.last.clone(),
        }
    }
}

fn lock(m: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    // A poisoned lock means a branch panicked mid-read; the buffer is plain data.
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

impl EventSource for TeeSource {
    fn next_event(&mut self) -> Result<Option<TimedEvent>, SourceError> {
        let mut g = lock(&self.shared);
        let Some(at) = g.cursors[self.id] else {
            return Ok(None);
        };
        let idx = (at - g.base) as usize;
        if idx == g.buf.len() {
            let r = g.src.next_event();
            let pos = g.src.last_position();
            g.buf.push_back((r, pos));
        }
        let (r, pos) = g.buf[idx].clone();
        // After the end (or an error) the handle stays there, as the source would.
        let done = !matches!(r, Ok(Some(_)));
        if !done {
            g.cursors[self.id] = Some(at + 1);
            g.trim();
        }
        self.last = pos;
        r
    }

    fn last_position(&self) -> Option<SourcePos> {
        self.last.clone()
    }
}

impl Drop for TeeSource {
    fn drop(&mut self) {
        let mut g = lock(&self.shared);
        g.cursors[self.id] = None;
        g.trim();
    }
}

impl Simulation {
    /// `n` copies of this simulation that continue independently: same state, same RNG
    /// states, same remaining input (see the module doc). Call it while paused
    /// ([`Simulation::run_to`]); the original is consumed (its readers become the copies').
    pub fn fork(mut self, n: usize) -> Result<Vec<Simulation>, SimError> {
        let tees: Vec<TeeSource> = std::mem::take(&mut self.sources)
            .into_iter()
            .map(TeeSource::wrap)
            .collect();
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let sources = tees
                .iter()
                .map(|t| Box::new(t.split()) as Box<dyn EventSource + Send>)
                .collect();
            out.push(self.copy_with(sources)?);
        }
        Ok(out)
    }

    /// A copy reading `sources`.
    fn copy_with(&self, sources: Vec<Box<dyn EventSource + Send>>) -> Result<Simulation, SimError> {
        let frameworks = self.rebuild_frameworks(&self.sched_cfg.clone())?;
        let mut alg = Algorithm::new(self.alg.rng.clone(), self.alg.percentage_of_nodes_to_score);
        alg.next_start_node_index = self.alg.next_start_node_index;
        // A copy is a run of its own: its extenders warn again, to its own list.
        let extender_warnings = Arc::new(crate::extender::ExtenderWarnings::default());
        alg.set_extenders(
            crate::extender::HttpExtender::all(&self.sched_cfg.extenders, &extender_warnings)
                .map_err(SimError::Config)?,
        );
        Ok(Simulation {
            cfg: self.cfg.clone(),
            frameworks,
            now: self.now,
            seq: self.seq,
            action_seq: self.action_seq,
            instant_first_action: self.instant_first_action,
            heap: self.heap.clone(),
            sources,
            last_source_time: self.last_source_time.clone(),
            snapshot: self.snapshot.clone(),
            node_order: self.node_order.clone(),
            ghosts: self.ghosts.clone(),
            volume_waits: self.volume_waits.clone(),
            devices_stale: self.devices_stale,
            device_counts: self.device_counts.clone(),
            pods: self.pods.clone(),
            free_slots: self.free_slots.clone(),
            freed_in_cycle: self.freed_in_cycle.clone(),
            retain_ended: self.retain_ended,
            released_info: self.released_info.clone(),
            live: self.live.clone(),
            queue: self.queue.clone(),
            nominator: self.nominator.clone(),
            alg,
            preempt_rng: self.preempt_rng.clone(),
            jitter_rng: self.jitter_rng.clone(),
            busy: self.busy,
            cluster_generation: self.cluster_generation,
            cycle_generation: self.cycle_generation,
            guard_error: self.guard_error.clone(),
            extender_warnings,
            stall_reason: self.stall_reason.clone(),
            in_flight: self.in_flight,
            in_flight_events: self.in_flight_events.clone(),
            pending_outcome: self.pending_outcome.clone(),
            flushes_started: self.flushes_started,
            backoff_flush_armed: self.backoff_flush_armed,
            leftover_flush_armed: self.leftover_flush_armed,
            non_flush_pending: self.non_flush_pending,
            recreated: self.recreated,
            autoscaler: self.autoscaler.clone(),
            events_applied: self.events_applied,
            input_origin: self.input_origin.clone(),
            created_keys: self.created_keys.clone(),
            explain: self.explain.clone(),
            explain_out: self.explain_out.clone(),
            dump_at: self.dump_at,
            dump: self.dump.clone(),
            controllers: self.controllers.clone(),
            lifecycle: self.lifecycle.clone(),
            taint_eviction: self.taint_eviction.clone(),
            device_taint_eviction: self.device_taint_eviction.clone(),
            disruption: self.disruption.clone(),
            admission: self.admission.clone(),
            pod_gc: self.pod_gc.clone(),
            claims: self.claims.clone(),
            loop_ended: self.loop_ended,
            registry: self.registry.clone(),
            sched_cfg: self.sched_cfg.clone(),
        })
    }

    /// Frameworks built anew from `cfg`, each plugin that keeps state between cycles holding
    /// a copy of the state of the same profile's plugin in this simulation.
    fn rebuild_frameworks(
        &self,
        cfg: &KubeSchedulerConfiguration,
    ) -> Result<Vec<Arc<Framework>>, SimError> {
        let fresh =
            build_frameworks(&self.registry, cfg).map_err(|e| SimError::Config(e.to_string()))?;
        for f in &fresh {
            if f.queue_sort.first().map(|p| p.name()) != Some("PrioritySort") {
                return Err(SimError::Config(format!(
                    "profile {}: only the PrioritySort queue-sort plugin is supported",
                    f.profile_name
                )));
            }
            let Some(old) = self
                .frameworks
                .iter()
                .find(|o| o.profile_name == f.profile_name)
            else {
                continue;
            };
            for p in &f.plugins {
                let Some(new_vb) = p.as_any().and_then(|a| a.downcast_ref::<VolumeBinding>())
                else {
                    continue;
                };
                let old_vb = old
                    .plugin(p.name())
                    .and_then(|o| o.as_any())
                    .and_then(|a| a.downcast_ref::<VolumeBinding>());
                if let Some(old_vb) = old_vb {
                    new_vb.restore_assume_cache(old_vb.assume_cache());
                }
            }
        }
        Ok(fresh)
    }

    /// Replaces the scheduler configuration from now on: profiles (plugins, weights, args),
    /// `percentageOfNodesToScore` and extenders. Every profile of the running configuration
    /// must still be there (more may be added). Pods keep their place in the queue; the
    /// queue's backoff durations stay those of the first configuration.
    pub fn set_scheduler_config(
        &mut self,
        cfg: &KubeSchedulerConfiguration,
    ) -> Result<(), SimError> {
        let frameworks = self.rebuild_frameworks(cfg)?;
        // Pods already created name their profile; one that vanished would leave them to no
        // scheduler (or worse, to another profile's).
        for old in &self.frameworks {
            if !frameworks
                .iter()
                .any(|f| f.profile_name == old.profile_name)
            {
                return Err(SimError::Config(format!(
                    "the new configuration has no profile {:?}, which the running one has: \
                     keep every schedulerName (change its plugins, weights and args)",
                    old.profile_name
                )));
            }
        }
        self.frameworks = frameworks;
        self.alg.percentage_of_nodes_to_score = cfg.percentage_of_nodes_to_score.unwrap_or(0);
        self.alg.set_extenders(
            crate::extender::HttpExtender::all(&cfg.extenders, &self.extender_warnings)
                .map_err(SimError::Config)?,
        );
        self.sched_cfg = cfg.clone();
        Ok(())
    }

    /// Input events applied at `at` (not before now), after every event and cycle the run has
    /// already applied at that instant, in the given order, as one more input source.
    pub fn inject(&mut self, at: SimTime, events: Vec<InputEvent>) -> Result<(), SimError> {
        if events.is_empty() {
            return Ok(());
        }
        let at = at.max(self.now);
        let events = events
            .into_iter()
            .map(|event| TimedEvent { at, event })
            .collect();
        self.add_source(Box::new(VecSource::new(events)))
    }

    /// Multiplies a workload controller's replica factor by `f` from now on: every later spec
    /// it is given (a trace's `UpdateObject`) is scaled by it too, so a what-if "× 2" stays
    /// twice what the trace asks. `false` when there is no such controller.
    pub fn multiply_controller_scale(
        &mut self,
        kind: ObjectKind,
        namespace: &str,
        name: &str,
        f: f64,
    ) -> bool {
        let key = format!("{kind}/{namespace}/{name}");
        match self.controllers.ctls.get_mut(&key) {
            Some(c) => {
                c.scale *= f;
                true
            }
            None => false,
        }
    }

    /// The run's extender warnings (shared: take them while the run goes, e.g. from its
    /// observer, to print them as they come).
    pub fn extender_warnings(&self) -> Arc<crate::extender::ExtenderWarnings> {
        self.extender_warnings.clone()
    }

    /// Whether `obj` (by kind, namespace and name; an empty namespace is `default`) exists now,
    /// as a `CreateObject` of it would find it: a workload's controller, a PriorityClass, a
    /// LimitRange or ResourceQuota, or another cluster object. What-if variants apply objects
    /// as `kubectl apply` does: an `UpdateObject` when it exists, a `CreateObject` otherwise.
    pub fn object_exists(&self, obj: &ApiObject) -> bool {
        let kind = obj.kind();
        let ns = match (kind.namespaced(), obj.namespace()) {
            (false, _) => "",
            (true, "") => "default",
            (true, ns) => ns,
        };
        let name = obj.name();
        match obj {
            ApiObject::Deployment(_)
            | ApiObject::ReplicaSet(_)
            | ApiObject::StatefulSet(_)
            | ApiObject::DaemonSet(_)
            | ApiObject::Job(_)
            | ApiObject::CronJob(_) => self
                .controllers
                .ctls
                .contains_key(&format!("{kind}/{ns}/{name}")),
            ApiObject::PriorityClass(_) => self.controllers.classes.contains_key(name),
            ApiObject::LimitRange(_) => self
                .admission
                .limit_ranges
                .contains_key(&kind.key(ns, name)),
            ApiObject::ResourceQuota(_) => self.admission.quotas.contains_key(&kind.key(ns, name)),
            _ => self.snapshot.objects.get_object(kind, ns, name).is_some(),
        }
    }

    /// The object of a workload controller (`Deployment`, `ReplicaSet`, ...) as the
    /// controllers currently hold it.
    pub fn controller_object(
        &self,
        kind: ObjectKind,
        namespace: &str,
        name: &str,
    ) -> Option<Workload> {
        let key = format!("{kind}/{namespace}/{name}");
        self.controllers.ctls.get(&key).map(|c| c.obj.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(n: i64) -> Box<dyn EventSource + Send> {
        let events = (0..n)
            .map(|i| TimedEvent {
                at: SimTime(i),
                event: InputEvent::RemoveNode {
                    name: format!("n{i}"),
                },
            })
            .collect();
        Box::new(VecSource::new(events))
    }

    fn buffered(t: &TeeSource) -> usize {
        lock(&t.shared).buf.len()
    }

    #[test]
    fn handles_read_the_same_events_and_the_buffer_keeps_only_what_one_has_not_read() {
        let first = TeeSource::wrap(source(100));
        let mut a = first.split();
        let mut b = first.split();
        drop(first);
        let mut from_a = Vec::new();
        while let Some(e) = a.next_event().unwrap() {
            from_a.push(e);
        }
        assert_eq!(from_a.len(), 100);
        // The end is buffered too (the source is read once).
        assert_eq!(buffered(&b), 101);
        let mut from_b = Vec::new();
        for _ in 0..50 {
            from_b.push(b.next_event().unwrap().unwrap());
        }
        assert_eq!(buffered(&b), 51);
        let c = b.split();
        drop(b);
        assert_eq!(
            buffered(&c),
            51,
            "a split handle keeps its parent's position"
        );
        drop(a);
        drop(c);
        let mut d = TeeSource::wrap(source(3));
        assert!(d.next_event().unwrap().is_some());
        assert_eq!(buffered(&d), 0, "a lone handle buffers nothing");
        assert_eq!(from_b[..], from_a[..50]);
    }
}
