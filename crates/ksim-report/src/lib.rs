//! # ksim-report
//!
//! The outputs of a run, rendered from the engine's [`Record`](ksim_engine::Record)s alone, so a
//! saved event log re-renders without re-running.
//!
//! Lifecycle: make a [`Recorder`] ([`Recorder::to_dir`] streams `placements.csv` as attempts
//! come; [`Recorder::in_memory`] buffers it), hand it to the engine as its observer (optionally
//! beside an [`EventLogWriter`]), then call [`Recorder::write_outputs`] with the run directory:
//!
//! | file | what |
//! |---|---|
//! | `pods.csv` | one row per `PodCreated`, in creation order (see [`PODS_HEADER`]) |
//! | `controllers.csv` | one row per workload controller at the end of the run ([`CONTROLLERS_HEADER`]) |
//! | `placements.csv` | every scheduling attempt, in order ([`PLACEMENTS_HEADER`]) |
//! | `utilization.csv` | requested/allocatable per resource, per pool and cluster-wide, running and pending pods, on a grid of at most 2,001 samples ([`utilization`] module doc has the rule) |
//! | `summary.json` | headline figures ([`Summary`]; its module doc has every definition) |
//! | `utilization.{svg,png}`, `pool_utilization.{svg,png}`, `pending.{svg,png}`, `running.{svg,png}`, `nodes_in_use.{svg,png}`, `latency_cdf.{svg,png}` (log time axis, p50/p90/p99 marked) | plots |
//! | `report.html` | one self-contained page: summary, plots, reasons, pending pods, the pod explorer ([`explorer`]) |
//!
//! A `slo.json` already in the directory ([`SloFile`], written by `ksim run --slo`) is marked on
//! the latency CDF.
//!
//! [`summary_table`] is the terminal table printed after a run; [`render_event_log`] re-renders
//! a run directory from an event log; [`compare`] reads several runs' `summary.json` back into a
//! comparison table.
//!
//! **Architecture invariant:** the same records give byte-identical `pods.csv`, `controllers.csv`,
//! `placements.csv`, `utilization.csv` and `summary.json`: times are integer microseconds printed
//! as decimal seconds, floats are rounded to 6 decimals, and every map is ordered.

pub mod compare;
mod devices;
mod error;
pub mod eventlog;
pub mod explain_view;
pub mod explorer;
mod fmt;
mod html;
pub mod latency;
mod node_health;
mod options;
mod outputs;
pub mod packing;
mod plots;
mod recorder;
mod refused;
pub mod slo;
pub mod staging;
pub mod summary;
mod table;
pub mod utilization;

pub use compare::Comparison;
pub use error::ReportError;
pub use eventlog::{render_event_log, render_event_log_with, EventLogReader, EventLogWriter};
pub use latency::{LatencyDist, PodLatency};
pub use node_health::NODE_EVENTS_HEADER;
pub use options::ReportOptions;
pub use outputs::{CONTROLLERS_HEADER, EVICTION_CAUSE_COLUMN, OUTPUT_FILES, PODS_HEADER};
pub use plots::{ensure_plot_font, PlotFontError};
pub use recorder::{Recorder, PLACEMENTS_HEADER};
pub use slo::{SloFile, SloMark, SLO_FILE};
pub use staging::{check_complete, StagedDir, COMPLETE_MARKER};
pub use summary::Summary;
pub use table::summary_table;
pub use utilization::UTILIZATION_HEADER;
