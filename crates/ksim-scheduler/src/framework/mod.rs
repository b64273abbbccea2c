//! The scheduling framework: extension-point traits, `Status`, `CycleState`, the registry of
//! plugins by name, profiles built from a KubeSchedulerConfiguration, and the runtime that runs
//! each extension point in upstream's order.

pub mod cycle_state;
pub mod features;
pub mod interface;
pub mod registry;
pub mod runtime;
pub mod score_table;
pub mod status;

pub use cycle_state::CycleState;
pub use features::Features;
pub use interface::*;
pub use registry::{
    build_framework, build_frameworks, Factory, FactoryArgs, ProfileError, Registry,
};
pub use runtime::{Framework, ScoreTable};
pub use status::{Code, FilterResult, Reason, Reasons, Status};
