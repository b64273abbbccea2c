//! # ksim-bench
//!
//! The performance harness of ksim (issue 8): how fast the scheduler core decides, measured the
//! way upstream's in-process scheduler is measured, and proof that speed did not change a
//! decision.
//!
//! - [`gen`]: seeded generators of benchmark workloads (`{"nodes": [...], "pods": [...]}`) of
//!   several kinds (plain; preferred anti-affinity and topology spread; required pod
//!   (anti-)affinity; node affinity and taints) at any size.
//! - [`run`]: the timed scheduling loop. Every pod goes through the same code the engine runs
//!   for a cycle: [`ksim_scheduler::queue::SchedulingQueue`] pop, `Algorithm::schedule_pod`
//!   (PreFilter, Filter with sampling and the round-robin start, PreScore, Score, select),
//!   Reserve, Permit, the assume into the [`ksim_scheduler::Snapshot`], PreBind and Bind, and the
//!   cluster event the binding raises. It reports pods/s, the placement digest and peak memory.
//! - [`scaling`]: the scaling curve (pods/s against node count and pods per node, per kind)
//!   as CSV, Markdown and a plot.
//! - [`replay`]: whole-run throughput of the discrete-event engine on a streamed synthetic
//!   trace (events/s, peak memory).
//!
//! **Architecture invariant:** nothing here special-cases a benchmark: the loop calls the public
//! scheduler API with the default profile, and the digest lets any two implementations (ksim
//! before and after a change, or upstream) be compared for equal decisions.

pub mod gen;
pub mod replay;
pub mod run;
pub mod scaling;
pub mod suite;
pub mod suite_dra;

use std::path::Path;

pub use gen::{Kind, Spec, Workload};
pub use run::{run_once, BenchResult, Options};

/// Why a benchmark could not run.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: not a workload ({{\"nodes\": [...], \"pods\": [...]}}): {source}")]
    Json {
        path: String,
        source: serde_json::Error,
    },
    #[error("scheduler configuration: {0}")]
    Config(String),
    #[error("{0}")]
    Spec(String),
    #[error("engine: {0}")]
    Engine(String),
}

/// Reads a workload file.
pub fn load(path: &Path) -> Result<Workload, BenchError> {
    let file = std::fs::File::open(path).map_err(|source| BenchError::Io {
        path: path.display().to_string(),
        source,
    })?;
    serde_json::from_reader(std::io::BufReader::new(file)).map_err(|source| BenchError::Json {
        path: path.display().to_string(),
        source,
    })
}

/// Writes a workload file (compact JSON).
pub fn save(w: &Workload, path: &Path) -> Result<(), BenchError> {
    let io = |source| BenchError::Io {
        path: path.display().to_string(),
        source,
    };
    let file = std::fs::File::create(path).map_err(io)?;
    let mut out = std::io::BufWriter::new(file);
    serde_json::to_writer(&mut out, w).map_err(|source| BenchError::Json {
        path: path.display().to_string(),
        source,
    })?;
    std::io::Write::flush(&mut out).map_err(io)
}

/// The process's peak resident memory in bytes (`VmHWM` of `/proc/self/status`), when the
/// platform has it.
pub fn peak_memory_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// The process's current resident memory in bytes (`VmRSS`).
pub fn current_memory_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line
        .trim_start_matches("VmRSS:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// FNV-1a 64, the digest's hash (Go's `hash/fnv` New64a gives the same values).
pub fn fnv1a64(bytes: &[u8], mut h: u64) -> u64 {
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

/// FNV-1a 64 offset basis.
pub const FNV_OFFSET: u64 = 0xcbf29ce484222325;

/// The placement digest: FNV-1a 64 over the lines `namespace/name<TAB>node\n` sorted by pod
/// key (bytewise), with an empty node for a pod left pending. Independent of the order in which
/// pods were scheduled, so another implementation can compute it from its own placements.
pub fn digest(placements: &[(String, String)]) -> u64 {
    let mut sorted: Vec<&(String, String)> = placements.iter().collect();
    sorted.sort();
    let mut h = FNV_OFFSET;
    for (k, n) in sorted {
        h = fnv1a64(k.as_bytes(), h);
        h = fnv1a64(b"\t", h);
        h = fnv1a64(n.as_bytes(), h);
        h = fnv1a64(b"\n", h);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_matches_reference_values() {
        // Reference values of FNV-1a 64.
        assert_eq!(fnv1a64(b"", FNV_OFFSET), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a", FNV_OFFSET), 0xaf63dc4c8601ec8c);
    }

    #[test]
    fn digest_ignores_scheduling_order() {
        let a = vec![
            ("d/a".to_string(), "n1".to_string()),
            ("d/b".into(), "n2".into()),
        ];
        let b = vec![a[1].clone(), a[0].clone()];
        assert_eq!(digest(&a), digest(&b));
        let c = vec![
            ("d/a".to_string(), "n2".to_string()),
            ("d/b".into(), "n1".into()),
        ];
        assert_ne!(digest(&a), digest(&c));
    }
}
