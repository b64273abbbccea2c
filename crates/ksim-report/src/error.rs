//! The crate's error type: every failure names the file it concerns.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {source}", path.display())]
    Csv {
        path: PathBuf,
        #[source]
        source: csv::Error,
    },
    #[error("{}: {source}", path.display())]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// A line of an event log that is not a record.
    #[error("{}:{line}: not a ksim record: {source}", path.display())]
    EventLog {
        path: PathBuf,
        line: u64,
        #[source]
        source: serde_json::Error,
    },
    #[error("plot {name}: {message}")]
    Plot { name: String, message: String },
    /// `summary.json` parsed but was not something a comparison can use.
    #[error("{}: {message}", path.display())]
    Invalid { path: PathBuf, message: String },
}

impl ReportError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> ReportError {
        ReportError::Io {
            path: path.into(),
            source,
        }
    }
    pub(crate) fn csv(path: impl Into<PathBuf>, source: csv::Error) -> ReportError {
        ReportError::Csv {
            path: path.into(),
            source,
        }
    }
}
