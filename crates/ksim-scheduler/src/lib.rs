//! # ksim-scheduler
//!
//! The kube-scheduler core, re-implemented to decide exactly as upstream v1.35.4 does, and usable
//! on its own. It never reads a clock, spawns a thread or touches a file: time is an argument
//! and randomness comes from a seeded ChaCha RNG the caller hands in.
//!
//! - [`framework`]: extension-point traits, `Status`, `CycleState`, the registry and profiles.
//! - [`plugins`]: one module per in-tree plugin, named as upstream names it.
//! - [`schedule`]: one scheduling decision (`SchedulePod`) and the FitError text.
//! - [`node_info`] / [`pod_info`] / [`resource`]: the dense per-node and per-pod forms the
//!   plugins read, precomputed once so a cycle allocates nothing per node.

pub mod cluster_objects;
pub mod extender;
pub mod framework;
pub mod node_columns;
pub mod node_info;
pub mod node_tree;
pub mod plugins;
pub mod pod_index;
pub mod pod_info;
pub mod preemption;
pub mod queue;
pub mod resource;
pub mod schedule;
pub mod spread_index;
pub mod volume;

pub use framework::{Framework, Registry, Status};
pub use node_info::{ClusterObjects, NodeInfo, Snapshot};
pub use pod_info::PodInfo;
pub use schedule::{Algorithm, FitError, ScheduleError, ScheduleResult};
