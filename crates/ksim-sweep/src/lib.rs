//! # ksim-sweep
//!
//! Comparisons and capacity planning on top of single runs:
//!
//! - [`spec`]: sweep files — a base scenario and axes (scheduler configurations, scoring
//!   strategies, plugin weights, pool counts and shapes, workload scale, seeds); their cross
//!   product is the list of runs, each an ordinary scenario run.
//! - [`run`]: [`run_plan`] (one run, shared with `ksim run`), [`run_sweep`] (a sweep's runs in
//!   parallel with rayon, or one `--shard I/N` slice of them) and the manifests shards leave.
//! - [`table`]: `sweep.csv` and the terminal table, read back from each run's `summary.json`.
//! - [`merge`]: shards (or one whole sweep) → `sweep.csv` and plots.
//! - [`plots`]: each headline figure against each axis; latency CDFs overlaid.
//! - [`plan`]: the smallest pool count meeting an SLO, by bisection over runs.
//! - [`scale`]: how workload scale factors change generators and traces.
//!
//! **Architecture invariant:** a run of a sweep is the same computation as the run alone — one
//! single-threaded simulation of a planned scenario — so outputs never depend on the thread
//! count, the shard split or the order runs finish in. Everything written across runs is
//! ordered by run index.

pub mod error;
pub mod merge;
pub mod plan;
pub mod plots;
pub mod run;
pub mod scale;
pub mod spec;
pub mod table;

pub use error::SweepError;
pub use merge::{find_manifests, merge, write_sweep_outputs};
pub use run::{
    run_plan, run_plan_explain, run_plan_with, run_sweep, Manifest, Shard, SweepOptions,
    SweepProgress,
};
pub use spec::{load_sweep, parse_sweep, Sweep};
pub use table::RunTable;
