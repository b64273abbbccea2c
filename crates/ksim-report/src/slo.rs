//! `slo.json`: the SLO a run was judged against, kept in its run directory, and what of it the
//! latency CDF draws.
//!
//! `ksim run --slo C` and `ksim report --slo C` write it (the conditions are parsed by the same
//! parser as `ksim plan --slo`, in ksim-sweep); [`crate::Recorder::write_outputs`] reads it from
//! the directory it writes and marks each drawable condition on `latency_cdf.{svg,png}`:
//!
//! | condition | mark (the CDF must pass on or above it) |
//! |---|---|
//! | `within(D)>=S` | the point (D, S) |
//! | `pNN<=D` (`max<=D`: p100) | the point (D, NN%) |
//! | `scheduled>=S` | a horizontal line at S (where the CDF must end) |
//!
//! Other conditions (`pending_end<=N`, `cpu>=..`) are kept in the file but not drawn.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::ReportError;

/// The file name in a run directory.
pub const SLO_FILE: &str = "slo.json";

/// `slo.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SloFile {
    /// Every condition, as the user wrote it.
    pub conditions: Vec<String>,
    /// The conditions the latency CDF can show.
    pub marks: Vec<SloMark>,
}

/// One condition drawn on the latency CDF.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SloMark {
    /// As the user wrote it (the legend's text).
    pub condition: String,
    /// The latency bound in seconds; `null` for `scheduled>=S` (by the end).
    pub within_s: Option<f64>,
    /// The share of the pods that needed scheduling that must be within it (0–1).
    pub share: f64,
}

impl SloFile {
    /// The JSON text (pretty, final newline).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|_| "{}".into()) + "\n"
    }

    /// Reads `dir/slo.json`; `None` when the run has none.
    pub fn read_dir(dir: &Path) -> Result<Option<SloFile>, ReportError> {
        let path = dir.join(SLO_FILE);
        if !path.is_file() {
            return Ok(None);
        }
        let text = std::fs::read_to_string(&path).map_err(|e| ReportError::io(&path, e))?;
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|source| ReportError::Json { path, source })
    }
}

/// Each drawable condition with whether the run meets it: `within(D)>=S` and `pNN<=D` when
/// at least the share S (NN%) of the pods that needed scheduling were scheduled within D
/// (a pod pending at the end counts as not within: the verdict never flatters), `scheduled>=S`
/// on the share scheduled by the end.
pub fn mark_verdicts<'a>(
    marks: &'a [SloMark],
    dist: &crate::LatencyDist,
) -> Vec<(&'a SloMark, bool)> {
    let total = dist.len();
    let scheduled = total - dist.censored();
    marks
        .iter()
        .map(|m| {
            let met = match m.within_s {
                Some(d) => dist.within_share(d).is_some_and(|w| w + 1e-9 >= m.share),
                None => total > 0 && (scheduled as f64) / (total as f64) + 1e-9 >= m.share,
            };
            (m, met)
        })
        .collect()
}
