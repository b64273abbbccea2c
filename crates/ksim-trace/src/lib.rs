//! # ksim-trace
//!
//! Everything that goes into a simulation run: the native trace (JSON Lines, [`native`]) and its
//! compact CSV form ([`csv_trace`]), nodes files ([`nodes`]), scenario files ([`scenario`]) that
//! combine node pools, traces and seeded synthetic generators ([`generator`]) into one
//! time-ordered event stream ([`merge`]), trace validation ([`validate`]) and importers of public
//! traces, kubectl dumps, audit logs and SimKube traces ([`import`]).
//!
//! **Architecture invariant:** readers stream. A trace is read one line (one row) at a time and
//! handed to the engine through [`ksim_engine::EventSource`]; nothing loads a whole trace.
//! Bad input is an error naming file, line and field, never a panic or a silent drop.
pub mod check;
pub mod csv_trace;
pub mod error;
pub mod generator;
pub mod import;
pub mod io;
pub mod merge;
pub mod native;
pub mod nodes;
pub mod scenario;
pub mod sniff;
pub mod validate;

pub use error::{Location, TraceError};
pub use import::{import, ImportFormat, ImportOptions, ImportSummary, MachineShape};
pub use merge::{BoxedSource, MergedSource};
pub use native::{NativeReader, NativeWriter};
pub use nodes::{load_nodes, write_nodes};
pub use scenario::{load_scenario, open_trace, parse_scenario, Scenario, ScenarioPlan};
pub use validate::{validate_trace, validate_trace_with, ValidateOptions, ValidationReport};
