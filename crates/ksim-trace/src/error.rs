//! The crate's error type. Every input problem names the file, the line (or item) when there is
//! one, and the field path, so a user can go straight to the offending spot:
//! `trace.jsonl:17: pod.spec.containers[0].resources.requests.cpu: quantity "lots" is ...`.

use std::fmt;
use std::path::Path;

use ksim_engine::SourceError;

/// Where in an input a problem is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file as the user named it (or a stand-in such as `<inline>`).
    pub file: String,
    /// 1-based line, or `None` for whole-file documents (YAML lists name the item in `field`).
    pub line: Option<u64>,
    /// Field path inside the line or document (`pod.spec.containers[0].name`), or empty.
    pub field: String,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.file)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        if !self.field.is_empty() {
            write!(f, ": {}", self.field)?;
        }
        Ok(())
    }
}

/// An error from reading, converting or writing inputs.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The input is malformed or out of range.
    #[error("{at}: {message}")]
    Input { at: Location, message: String },
    /// The file could not be opened, read or written.
    #[error("{file}: {source}")]
    Io {
        file: String,
        #[source]
        source: std::io::Error,
    },
}

impl TraceError {
    /// A problem at `file:line: field`.
    pub fn at_line(
        file: &str,
        line: u64,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> TraceError {
        TraceError::Input {
            at: Location {
                file: file.to_string(),
                line: Some(line),
                field: field.into(),
            },
            message: message.into(),
        }
    }

    /// A problem in a whole-file document at a field path.
    pub fn at_field(
        file: &str,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> TraceError {
        TraceError::Input {
            at: Location {
                file: file.to_string(),
                line: None,
                field: field.into(),
            },
            message: message.into(),
        }
    }

    pub fn io(path: &Path, source: std::io::Error) -> TraceError {
        TraceError::Io {
            file: path.display().to_string(),
            source,
        }
    }

    /// The 1-based line, when the problem has one.
    pub fn line(&self) -> Option<u64> {
        match self {
            TraceError::Input { at, .. } => at.line,
            TraceError::Io { .. } => None,
        }
    }
}

impl From<TraceError> for SourceError {
    fn from(e: TraceError) -> SourceError {
        SourceError {
            message: e.to_string(),
        }
    }
}

/// Joins a parent field path and a child (`pod` + `spec.x` → `pod.spec.x`; `items[2]` + `[0]`).
pub(crate) fn join_path(parent: &str, child: &str) -> String {
    match (parent.is_empty(), child.is_empty() || child == ".") {
        (true, _) => child.trim_start_matches('.').to_string(),
        (false, true) => parent.to_string(),
        (false, false) if child.starts_with('[') => format!("{parent}{child}"),
        (false, false) => format!("{parent}.{}", child.trim_start_matches('.')),
    }
}
