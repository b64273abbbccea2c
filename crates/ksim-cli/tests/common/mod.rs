//! Helpers the CLI's run tests share: the repository root and a run's CSV outputs as rows
//! keyed by column name.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The repository root (scenarios, traces).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A CSV output's rows, each keyed by the header's column names.
pub fn csv(path: &Path) -> Vec<BTreeMap<String, String>> {
    let mut r = csv::Reader::from_path(path).expect("read csv");
    let header: Vec<String> = r
        .headers()
        .expect("csv header")
        .iter()
        .map(str::to_string)
        .collect();
    r.records()
        .map(|rec| {
            let rec = rec.expect("csv record");
            header
                .iter()
                .cloned()
                .zip(rec.iter().map(str::to_string))
                .collect()
        })
        .collect()
}

/// A time column's value in seconds.
pub fn secs(v: &str) -> f64 {
    v.parse().unwrap_or_else(|_| panic!("not a time: {v:?}"))
}
