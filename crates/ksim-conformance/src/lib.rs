//! # ksim-conformance
//!
//! Runs the recorded kube-scheduler cases against ksim: per-decision cases (filter, scores,
//! choice, FitError, preemption) and, through the engine, timeline cases (when each pod is
//! tried, in which order, with what result). The runner recognises a case by its format.
//! `ksim conformance DIR...` and the workspace tests both call [`run_dir`].

use std::path::{Path, PathBuf};

use serde_json::Value;

pub mod decision;
pub mod family;
pub mod timeline;

/// The keys a case file has at its top level; any other key fails the case.
const CASE_KEYS: [&str; 5] = ["name", "family", "description", "input", "expected"];

/// A case file could not be run at all.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CaseError {
    #[error("cannot read {0}: {1}")]
    Io(PathBuf, String),
    #[error("not a conformance case: {0}")]
    Format(String),
}

/// The outcome of one case.
#[derive(Debug, Clone)]
pub struct CaseOutcome {
    pub name: String,
    pub path: PathBuf,
    /// Empty when the case passed; otherwise the differences, first one first.
    pub differences: Vec<String>,
}

impl CaseOutcome {
    pub fn passed(&self) -> bool {
        self.differences.is_empty()
    }
}

/// Which kind of case a JSON document is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CaseKind {
    Decision,
    Timeline,
}

pub fn kind_of(case: &Value) -> Option<CaseKind> {
    let input = case.get("input")?;
    if input.get("events").is_some() && input.get("until").is_some() {
        Some(CaseKind::Timeline)
    } else if input.get("pod").is_some() && input.get("nodes").is_some() {
        Some(CaseKind::Decision)
    } else {
        None
    }
}

/// Runs one parsed case.
pub fn run_case(case: &Value) -> Result<Vec<String>, CaseError> {
    if let Some(obj) = case.as_object() {
        if let Some(k) = obj.keys().find(|k| !CASE_KEYS.contains(&k.as_str())) {
            return Err(CaseError::Format(format!(
                "unknown top-level field `{k}` (the runner compares every recorded field)"
            )));
        }
    }
    match kind_of(case) {
        Some(CaseKind::Decision) => decision::run(case),
        Some(CaseKind::Timeline) => timeline::run(case),
        None => Err(CaseError::Format(
            "neither a decision case (input.pod, input.nodes) nor a timeline case (input.events, input.until)".into(),
        )),
    }
}

/// Runs one case file.
pub fn run_file(path: &Path) -> CaseOutcome {
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let differences = match std::fs::read_to_string(path) {
        Err(e) => vec![CaseError::Io(path.to_path_buf(), e.to_string()).to_string()],
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Err(e) => vec![format!("{}: not valid JSON: {e}", path.display())],
            Ok(v) => match run_case(&v) {
                Ok(d) => d,
                Err(e) => vec![e.to_string()],
            },
        },
    };
    CaseOutcome {
        name,
        path: path.to_path_buf(),
        differences,
    }
}

/// Every `*.json` file under a directory (recursively), sorted by path.
pub fn case_files(dir: &Path) -> Result<Vec<PathBuf>, CaseError> {
    family::json_files(dir).map_err(|e| CaseError::Io(dir.to_path_buf(), e.to_string()))
}

/// Runs every case of one family under `dir` (see [`family::family_of`]).
pub fn run_family(dir: &Path, family: &str) -> Result<Vec<CaseOutcome>, CaseError> {
    Ok(case_files(dir)?
        .into_iter()
        .filter(|p| family::family_of(dir, p) == family)
        .map(|p| run_file(&p))
        .collect())
}

/// Runs every case file under `dir`, with an optional filter on the case name.
pub fn run_dir(dir: &Path, filter: Option<&str>) -> Result<Vec<CaseOutcome>, CaseError> {
    Ok(case_files(dir)?
        .into_iter()
        .filter(|p| {
            filter.is_none_or(|f| {
                p.file_stem()
                    .is_some_and(|s| s.to_string_lossy().contains(f))
            })
        })
        .map(|p| run_file(&p))
        .collect())
}
