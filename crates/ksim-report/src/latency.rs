//! [`LatencyDist`]: every scheduling latency of a run's pods that needed scheduling, sorted —
//! what SLOs at any percentile or `within(D)` read. It is not part of `summary.json` (which
//! stores p50/p90/p99/max and `within` at a few fixed durations); it is built from a run's
//! records ([`crate::Recorder::latency_dist`]) or read back from the run's `pods.csv`
//! ([`LatencyDist::from_pods_csv`]), and both give the same values.
//!
//! A pod counts when it needed scheduling (it did not arrive already bound: bound with no
//! attempt and no `scheduled_s`). Its latency is `scheduled_s − created_s`; a pod never
//! scheduled is *censored* (more than any bound) and stored as `i64::MAX`, so it sorts last.

use std::path::Path;

use ksim_engine::time::MICROS_PER_SECOND;

use crate::error::ReportError;
use crate::summary::{micros_to_secs, nearest_rank, r6, MaybeCensored, Summary};

/// Sorted latencies in microseconds, censored pods last as `i64::MAX`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LatencyDist {
    sorted: Vec<i64>,
}

impl LatencyDist {
    /// From latencies in any order (`i64::MAX` = censored).
    pub fn new(mut latencies: Vec<i64>) -> LatencyDist {
        latencies.sort_unstable();
        LatencyDist { sorted: latencies }
    }

    /// Pods counted (= `needed_scheduling` of the summary).
    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    /// The sorted values (microseconds; `i64::MAX` = censored).
    pub fn values(&self) -> &[i64] {
        &self.sorted
    }

    /// Pods never scheduled.
    pub fn censored(&self) -> usize {
        self.sorted.len() - self.sorted.partition_point(|&v| v != i64::MAX)
    }

    /// Nearest-rank percentile `p` (0–100); a censored value reads as "more than" the least
    /// wait of a censored pod, which the summary stores (`min_censored_wait`), else the horizon.
    pub fn percentile(&self, p: u32, s: &Summary) -> Option<MaybeCensored> {
        let v = nearest_rank(&self.sorted, p)?;
        Some(if v == i64::MAX {
            MaybeCensored {
                secs: s
                    .latency_all_s
                    .as_ref()
                    .and_then(|l| l.min_censored_wait)
                    .unwrap_or(s.horizon_s),
                censored: true,
            }
        } else {
            MaybeCensored {
                secs: micros_to_secs(v),
                censored: false,
            }
        })
    }

    /// Share of the counted pods scheduled within `secs` of creation (rounded to 6 decimals);
    /// `None` when no pod needed scheduling.
    pub fn within_share(&self, secs: f64) -> Option<f64> {
        if self.sorted.is_empty() {
            return None;
        }
        let limit = (secs * MICROS_PER_SECOND as f64).floor() as i64;
        let n = self.sorted.partition_point(|&v| v <= limit);
        Some(r6(n as f64 / self.sorted.len() as f64))
    }

    /// Reads a run's `pods.csv` (`path` may be the file or the run directory). Columns are
    /// found by name, so added columns do not matter.
    pub fn from_pods_csv(path: &Path) -> Result<LatencyDist, ReportError> {
        let file = if path.is_dir() {
            path.join("pods.csv")
        } else {
            path.to_path_buf()
        };
        let mut r = csv::Reader::from_path(&file).map_err(|e| ReportError::csv(&file, e))?;
        let headers = r.headers().map_err(|e| ReportError::csv(&file, e))?.clone();
        let col = |name: &str| {
            headers
                .iter()
                .position(|h| h == name)
                .ok_or_else(|| ReportError::Invalid {
                    path: file.clone(),
                    message: format!("no {name} column"),
                })
        };
        let (created, scheduled, bound, attempts) = (
            col("created_s")?,
            col("scheduled_s")?,
            col("bound_s")?,
            col("attempts")?,
        );
        let mut v = Vec::new();
        for (i, rec) in r.records().enumerate() {
            let rec = rec.map_err(|e| ReportError::csv(&file, e))?;
            let line = i + 2;
            let field = |c: usize| rec.get(c).unwrap_or("");
            let bad = |name: &str, text: &str| ReportError::Invalid {
                path: file.clone(),
                message: format!("line {line}: {name} {text:?} is not a time in seconds"),
            };
            let sched = field(scheduled);
            let arrived_bound =
                !field(bound).is_empty() && field(attempts) == "0" && sched.is_empty();
            if arrived_bound {
                continue;
            }
            if sched.is_empty() {
                v.push(i64::MAX);
                continue;
            }
            let c = parse_micros(field(created)).ok_or_else(|| bad("created_s", field(created)))?;
            let s = parse_micros(sched).ok_or_else(|| bad("scheduled_s", sched))?;
            v.push(s - c);
        }
        Ok(LatencyDist::new(v))
    }
}

/// Seconds with up to 6 decimals (as the CSVs write them) to microseconds, exactly.
fn parse_micros(s: &str) -> Option<i64> {
    let (neg, s) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s),
    };
    let (int, frac) = s.split_once('.').unwrap_or((s, ""));
    if int.is_empty()
        || frac.len() > 6
        || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let whole: i64 = int.parse().ok()?;
    let frac_us: i64 = if frac.is_empty() {
        0
    } else {
        format!("{frac:0<6}").parse().ok()?
    };
    let v = whole.checked_mul(MICROS_PER_SECOND)?.checked_add(frac_us)?;
    Some(if neg { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_seconds_parse_exactly() {
        assert_eq!(parse_micros("1.5"), Some(1_500_000));
        assert_eq!(parse_micros("0.000001"), Some(1));
        assert_eq!(parse_micros("12"), Some(12_000_000));
        assert_eq!(parse_micros("-0.25"), Some(-250_000));
        assert_eq!(parse_micros("1.2345678"), None);
        assert_eq!(parse_micros("x"), None);
        assert_eq!(parse_micros(""), None);
    }

    #[test]
    fn within_and_censored() {
        let d = LatencyDist::new(vec![i64::MAX, 2_000_000, 500_000, i64::MAX]);
        assert_eq!(d.censored(), 2);
        assert_eq!(d.within_share(1.0), Some(0.25));
        assert_eq!(d.within_share(2.0), Some(0.5));
        assert_eq!(LatencyDist::default().within_share(1.0), None);
    }
}
