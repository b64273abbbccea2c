//! # ksim-conformance
//!
//! Runs the recorded kube-scheduler cases against ksim: per-decision cases (filter, scores,
//! choice, FitError, preemption) and, through the engine, timeline cases (when each pod is
//! tried, in which order, with what result). The runner recognises a case by its format.
//! `ksim conformance DIR...` and the workspace tests both call [`run_dir`].
//!
//! Each case runs with the behaviour of the Kubernetes minor that recorded it
//! (`expected.k8sVersion`, see [`case_version`]), unless the caller overrides it
//! ([`run_dir_as`]'s `version`, `ksim conformance --kubernetes-version`).

use std::path::{Path, PathBuf};

use ksim_api::version::KubernetesVersion;
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

/// The version a case runs as: its `expected.k8sVersion` minor (`v1.36.2` → 1.36). A case
/// recorded by a minor older than any ksim models (the `v1.34.1` timeline cases) runs as the
/// oldest supported one, 1.35 (their queue behaviour is the same); a newer or malformed one
/// is refused, naming the supported versions. A case without the field runs as the default.
pub fn case_version(case: &Value) -> Result<KubernetesVersion, CaseError> {
    let Some(text) = case
        .get("expected")
        .and_then(|e| e.get("k8sVersion"))
        .and_then(Value::as_str)
    else {
        return Ok(KubernetesVersion::default());
    };
    match KubernetesVersion::parse(text) {
        Ok(v) => Ok(v),
        Err(e) => {
            let minor_of = |t: &str| -> Option<u32> {
                let t = t.trim().trim_start_matches('v');
                let mut parts = t.split('.');
                (parts.next() == Some("1")).then_some(())?;
                parts.next()?.parse::<u32>().ok()
            };
            let oldest = KubernetesVersion::ALL[0];
            match (minor_of(text), minor_of(oldest.as_str())) {
                (Some(m), Some(o)) if m < o => Ok(oldest),
                _ => Err(CaseError::Format(format!("expected.k8sVersion: {e}"))),
            }
        }
    }
}

/// Runs one parsed case with the behaviour of its recorded version ([`case_version`]).
pub fn run_case(case: &Value) -> Result<Vec<String>, CaseError> {
    run_case_as(case, None)
}

/// Runs one parsed case as `version` (None: its recorded version).
pub fn run_case_as(
    case: &Value,
    version: Option<KubernetesVersion>,
) -> Result<Vec<String>, CaseError> {
    if let Some(obj) = case.as_object() {
        if let Some(k) = obj.keys().find(|k| !CASE_KEYS.contains(&k.as_str())) {
            return Err(CaseError::Format(format!(
                "unknown top-level field `{k}` (the runner compares every recorded field)"
            )));
        }
    }
    let version = match version {
        Some(v) => v,
        None => case_version(case)?,
    };
    match kind_of(case) {
        Some(CaseKind::Decision) => decision::run_as(case, version),
        Some(CaseKind::Timeline) => timeline::run_as(case, version),
        None => Err(CaseError::Format(
            "neither a decision case (input.pod, input.nodes) nor a timeline case (input.events, input.until)".into(),
        )),
    }
}

/// Runs one case file with the behaviour of its recorded version.
pub fn run_file(path: &Path) -> CaseOutcome {
    run_file_as(path, None)
}

/// Runs one case file as `version` (None: its recorded version).
pub fn run_file_as(path: &Path, version: Option<KubernetesVersion>) -> CaseOutcome {
    let name = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let differences = match std::fs::read_to_string(path) {
        Err(e) => vec![CaseError::Io(path.to_path_buf(), e.to_string()).to_string()],
        Ok(text) => match serde_json::from_str::<Value>(&text) {
            Err(e) => vec![format!("{}: not valid JSON: {e}", path.display())],
            Ok(v) => match run_case_as(&v, version) {
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

/// Runs every case file under `dir`, with an optional filter on the case name, each with the
/// behaviour of its recorded version.
pub fn run_dir(dir: &Path, filter: Option<&str>) -> Result<Vec<CaseOutcome>, CaseError> {
    run_dir_as(dir, filter, None)
}

/// [`run_dir`], every case as `version` when given.
pub fn run_dir_as(
    dir: &Path,
    filter: Option<&str>,
    version: Option<KubernetesVersion>,
) -> Result<Vec<CaseOutcome>, CaseError> {
    Ok(case_files(dir)?
        .into_iter()
        .filter(|p| {
            filter.is_none_or(|f| {
                p.file_stem()
                    .is_some_and(|s| s.to_string_lossy().contains(f))
            })
        })
        .map(|p| run_file_as(&p, version))
        .collect())
}
