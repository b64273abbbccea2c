//! Whole-run throughput of the discrete-event engine: a streamed synthetic trace (pods of a
//! [`Kind`] arriving at a fixed interval, each running for a fixed time) replayed through
//! [`ksim_engine::Simulation`] with the default cost models and a counting observer.
//!
//! The trace is generated as the engine pulls it, so memory follows the live pods and the
//! nodes, never the number of events: a run with ten times more pods at the same arrival rate
//! and run time holds the same number of pods at once.

use std::time::Instant;

use ksim_api::config::KubeSchedulerConfiguration;
use ksim_engine::{
    EngineConfig, EventSource, InputEvent, Observer, Record, SimDuration, SimTime, Simulation,
    SourceError, TimedEvent,
};
use ksim_scheduler::framework::Registry;
use ksim_scheduler::node_info::ClusterObjects;

use crate::gen::{nodes, Kind, PodGen, Spec};
use crate::BenchError;

/// What to replay.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplaySpec {
    pub workload: Spec,
    /// Gap between pod arrivals.
    pub interval: SimDuration,
    /// How long each pod runs once bound.
    pub run_for: SimDuration,
    /// The Kubernetes version and feature gates the scheduler behaves as (default: 1.36).
    pub gates: ksim_api::version::FeatureGates,
}

impl ReplaySpec {
    /// Pods arrive every 10 ms and run for 1,000 s, so at most about 100,000 pods are live at
    /// once (about a third of a 10,000-node reference cluster's cpu).
    pub fn new(kind: Kind, nodes: usize, pods: usize, seed: u64) -> ReplaySpec {
        ReplaySpec {
            workload: Spec::reference(kind, nodes, pods, seed),
            interval: SimDuration::from_millis(10),
            run_for: SimDuration::from_secs(1000),
            gates: Default::default(),
        }
    }
}

/// What a replay measured.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayResult {
    /// Engine events applied (pod creations, cycle ends, bindings, completions, flushes).
    pub events: u64,
    pub secs: f64,
    pub scheduled: u64,
    pub max_live_pods: u64,
    /// FNV-1a 64 over every binding, in the order the engine reports them: its time (the
    /// microseconds as 8 little-endian bytes), then `\t<namespace>/<name>\t<node>\n`. Equal digests mean the same pods bound to the
    /// same nodes at the same times in the same order (a check that a faster engine decides
    /// as before).
    pub bind_digest: u64,
}

impl ReplayResult {
    pub fn events_per_sec(&self) -> f64 {
        if self.secs > 0.0 {
            self.events as f64 / self.secs
        } else {
            0.0
        }
    }
}

/// Pods generated one at a time as the engine asks for them.
struct StreamSource {
    gen: PodGen,
    left: usize,
    next_at: SimTime,
    interval: SimDuration,
    run_for: SimDuration,
}

impl EventSource for StreamSource {
    fn next_event(&mut self) -> Result<Option<TimedEvent>, SourceError> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        let at = self.next_at;
        self.next_at = self.next_at + self.interval;
        Ok(Some(TimedEvent {
            at,
            event: InputEvent::CreatePod {
                pod: Box::new(self.gen.next_pod()),
                run_for: Some(self.run_for),
            },
        }))
    }
}

/// Counts what the engine reports, keeping nothing per pod (the bindings' digest is a
/// running hash).
struct Counter {
    scheduled: u64,
    live: u64,
    max_live: u64,
    bind_digest: u64,
}

impl Default for Counter {
    fn default() -> Self {
        Counter {
            scheduled: 0,
            live: 0,
            max_live: 0,
            bind_digest: crate::FNV_OFFSET,
        }
    }
}

impl Observer for Counter {
    fn record(&mut self, r: &Record) {
        match r {
            Record::PodCreated { .. } => {
                self.live += 1;
                self.max_live = self.max_live.max(self.live);
            }
            Record::PodBound {
                at,
                namespace,
                name,
                node,
            } => {
                self.scheduled += 1;
                let mut h = self.bind_digest;
                h = crate::fnv1a64(&at.micros().to_le_bytes(), h);
                h = crate::fnv1a64(b"\t", h);
                h = crate::fnv1a64(namespace.as_bytes(), h);
                h = crate::fnv1a64(b"/", h);
                h = crate::fnv1a64(name.as_bytes(), h);
                h = crate::fnv1a64(b"\t", h);
                h = crate::fnv1a64(node.as_bytes(), h);
                self.bind_digest = crate::fnv1a64(b"\n", h);
            }
            Record::PodEnded { .. } => self.live = self.live.saturating_sub(1),
            _ => {}
        }
    }
}

/// Replays the trace; only the run is timed (building the nodes is not).
pub fn run(spec: &ReplaySpec) -> Result<ReplayResult, BenchError> {
    let cfg = EngineConfig {
        seed: spec.workload.seed,
        ..Default::default()
    };
    let mut sim = Simulation::new(
        cfg,
        &KubeSchedulerConfiguration::default(),
        &Registry::in_tree_gates(&spec.gates),
        nodes(&spec.workload),
        ClusterObjects::default(),
    )
    .map_err(|e| BenchError::Engine(e.to_string()))?;
    let src = StreamSource {
        gen: PodGen::new(&spec.workload),
        left: spec.workload.pods,
        next_at: SimTime::ZERO,
        interval: spec.interval,
        run_for: spec.run_for,
    };
    // Generated on a second thread, ahead of the engine (the same events in the same order).
    sim.add_source(Box::new(ksim_engine::Prefetch::new(Box::new(src))))
        .map_err(|e| BenchError::Engine(e.to_string()))?;
    let mut obs = Counter::default();
    let start = Instant::now();
    sim.run(&mut obs)
        .map_err(|e| BenchError::Engine(e.to_string()))?;
    Ok(ReplayResult {
        events: sim.events_applied(),
        secs: start.elapsed().as_secs_f64(),
        scheduled: obs.scheduled,
        max_live_pods: obs.max_live,
        bind_digest: obs.bind_digest,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_replay_schedules_every_pod() {
        let spec = ReplaySpec::new(Kind::Plain, 20, 300, 1);
        let r = run(&spec).unwrap();
        assert_eq!(r.scheduled, 300);
        // Each pod: creation, cycle end, binding, completion.
        assert!(r.events >= 1200, "{}", r.events);
    }
}
