//! The crate's error type.

use std::path::PathBuf;

use ksim_trace::TraceError;

/// Why the FGD experiment could not run. Unschedulable pods are not errors: they are recorded
/// in the results.
#[derive(Debug, thiserror::Error)]
pub enum FgdError {
    /// A trace file is missing, unreadable or malformed (file, line and field named).
    #[error(transparent)]
    Trace(#[from] TraceError),
    #[error("unknown workload {name:?}: no {dir}/openb_pod_list_{name}.csv[.gz]")]
    UnknownWorkload { name: String, dir: String },
    #[error("unknown policy {0:?}: expected one of Random, DotProd, GpuClustering, GpuPacking, BestFit, FGD")]
    UnknownPolicy(String),
    #[error("bad seeds {0:?}: expected a number, a list (42,43) or a range (42..51, inclusive)")]
    BadSeeds(String),
    #[error("{file}: node {node}: {message}")]
    BadNode {
        file: String,
        node: String,
        message: String,
    },
    #[error("{file}: pod {pod}: {message}")]
    BadPod {
        file: String,
        pod: String,
        message: String,
    },
    /// The generated KubeSchedulerConfiguration did not build (a bug, or a plugin missing
    /// from the registry).
    #[error("scheduler configuration of policy {policy}: {message}")]
    Config { policy: String, message: String },
    /// A plugin returned an error status (not an unschedulable verdict).
    #[error("{workload}/{policy}/seed {seed}: pod {pod}: {message}")]
    Scheduler {
        workload: String,
        policy: String,
        seed: u64,
        pod: String,
        message: String,
    },
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("plot {}: {message}", path.display())]
    Plot { path: PathBuf, message: String },
    #[error("{0}")]
    Invalid(String),
}

impl FgdError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> FgdError {
        FgdError::Io {
            path: path.into(),
            source,
        }
    }
}
