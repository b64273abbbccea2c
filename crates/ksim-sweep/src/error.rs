//! The crate's error type: bad sweep files and SLO strings name the field; run failures name the
//! run.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    /// A sweep file, axis value, SLO or shard string is wrong; `at` names the file and field.
    #[error("{at}: {message}")]
    Input { at: String, message: String },
    #[error(transparent)]
    Trace(#[from] ksim_trace::TraceError),
    #[error(transparent)]
    Report(#[from] ksim_report::ReportError),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// One run of a sweep or plan failed.
    #[error("run {run}: {message}")]
    Run { run: String, message: String },
    /// A single run failed; the message names the file (and line) it is about first.
    #[error("{0}")]
    Failed(String),
    #[error("plot {name}: {message}")]
    Plot { name: String, message: String },
}

impl SweepError {
    pub fn input(at: impl Into<String>, message: impl Into<String>) -> SweepError {
        SweepError::Input {
            at: at.into(),
            message: message.into(),
        }
    }
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> SweepError {
        SweepError::Io {
            path: path.into(),
            source,
        }
    }
}
