//! # ksim-engine
//!
//! The discrete-event engine. A virtual clock (integer microseconds) and an event heap ordered
//! by (time, insertion sequence) drive the cluster state the API server would hold and the
//! scheduler core from `ksim-scheduler`: pod arrivals, scheduling cycles with their cost,
//! binding after its latency, run times, deletions, node changes, preemption victims, and the
//! queue's periodic flushes as timed events. Everything random comes from ChaCha streams
//! derived from the scenario seed, so the same inputs give the same records.
//!
//! Lifecycle of a run: build a [`Simulation`] from an [`EngineConfig`], a KubeSchedulerConfiguration
//! and the initial nodes; hand it [`input::EventSource`]s; call [`Simulation::run`] with an
//! [`record::Observer`] that receives every [`record::Record`].

pub mod autoscale;
pub mod config;
pub mod control_plane;
pub mod dump;
pub mod explain;
pub mod extender;
pub mod input;
pub mod record;
pub mod sim;
pub mod time;

pub use config::{CostModels, EngineConfig};
pub use input::{EventSource, InputEvent, Prefetch, SourceError, SourcePos, TimedEvent, VecSource};
pub use record::{AttemptResult, JobCondition, Observer, Outcome, Record};
pub use sim::{PodId, PodPhase, SimError, Simulation};
pub use time::{SimDuration, SimTime};
