//! # ksim-gpu
//!
//! GPU sharing modelled per GPU, the scheduling policies of the FGD paper (Weng et al.,
//! "Beware of Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient
//! Descent", USENIX ATC '23) as ksim out-of-tree plugins, and the paper's experiment on the
//! openb traces (`traces/alibaba-gpu-v2023-openb/FGD-EXPERIMENT.md`).
//!
//! - [`device`]: a node's GPUs, a pod's GPU request, per-GPU accounting and GPU choice.
//! - [`frag`]: typical pods and the fragmentation measure.
//! - [`memo`]: scores memoized per pod shape and node state.
//! - [`state`]: the per-GPU state of a cluster, reached by the plugins through the cycle state.
//! - [`plugins`]: `Open-Gpu-Share` (filter/reserve) and the six score plugins, registered by
//!   name with [`register`] on top of `Registry::in_tree()`.
//! - [`experiment`]: one run (workload × policy × seed) through a real ksim framework.
//! - [`matrix`]: the whole matrix in parallel, its CSVs and summary ([`run_fgd`]), and
//!   [`plot`] its plots.
//!
//! **Architecture invariant:** the plugins never read a clock or OS randomness: every random
//! draw comes from a ChaCha stream derived from the run's seed, and the same seeds give
//! byte-identical outputs whatever the thread count.
//!
//! Dependencies: ksim-api, ksim-scheduler (framework), ksim-engine (event types) and ksim-trace
//! (the openb importer); this crate sits beside ksim-trace and ksim-report.

pub mod device;
pub mod error;
pub mod experiment;
pub mod frag;
pub mod matrix;
pub mod memo;
pub mod plot;
pub mod plugins;
pub mod state;

pub use error::FgdError;
pub use experiment::{Policy, RunOutcome, TieBreak, Workload};
pub use matrix::{parse_seeds, run_fgd, run_matrix, FgdOptions, FgdSummary, PAPER_WORKLOADS};
pub use plugins::register;
