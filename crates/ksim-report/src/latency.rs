//! [`LatencyDist`]: every scheduling latency of a run's pods that needed scheduling, sorted —
//! what SLOs at any percentile or `within(D)` read. It is not part of `summary.json` (which
//! stores p50/p90/p99/max and `within` at a few fixed durations); it is built from a run's
//! records ([`crate::Recorder::latency_dist`]) or read back from the run's `pods.csv`
//! ([`LatencyDist::from_pods_csv`]), and both give the same values.
//!
//! A pod counts when it needed scheduling (it did not arrive already bound: bound with no
//! attempt and no `scheduled_s`). Its latency is `scheduled_s − created_s`. A pod never
//! scheduled is *censored*: its latency is more than its own wait, `end − created_s` (`end` is
//! its `finished_s` when it was deleted while pending, else the end of the run), and that wait
//! is what it counts with: each pending pod is its own lower bound. Every value is then at most
//! the pod's true latency, so every order statistic (p50, p90, p99, max) of these values is a
//! lower bound of the true one; it is exact when enough pods at or below it were scheduled
//! (see [`LatencyDist::percentile`]), else it is flagged censored and shown as "> N s".

use std::path::Path;

use ksim_engine::time::MICROS_PER_SECOND;

use crate::error::ReportError;
use crate::summary::{micros_to_secs, nearest_rank_index, r6, MaybeCensored};

/// One pod's latency in microseconds; `censored` when it is only the pod's wait at the end (a
/// lower bound: the pod was never scheduled).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct PodLatency {
    /// The latency, or the wait at the end for a censored pod.
    pub micros: i64,
    pub censored: bool,
}

/// Latencies sorted by value (a scheduled pod before a censored one at the same value).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LatencyDist {
    sorted: Vec<PodLatency>,
    censored: usize,
}

impl LatencyDist {
    /// From latencies in any order.
    pub fn new(mut latencies: Vec<PodLatency>) -> LatencyDist {
        latencies.sort_unstable();
        let censored = latencies.iter().filter(|l| l.censored).count();
        LatencyDist {
            sorted: latencies,
            censored,
        }
    }

    /// Pods counted (= `needed_scheduling` of the summary).
    pub fn len(&self) -> usize {
        self.sorted.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sorted.is_empty()
    }

    /// Every pod's value, sorted (censored pods at their own wait).
    pub fn values(&self) -> &[PodLatency] {
        &self.sorted
    }

    /// The latencies of the scheduled pods, sorted (microseconds).
    pub fn scheduled(&self) -> Vec<i64> {
        self.sorted
            .iter()
            .filter(|l| !l.censored)
            .map(|l| l.micros)
            .collect()
    }

    /// Pods never scheduled.
    pub fn censored(&self) -> usize {
        self.censored
    }

    /// Nearest-rank percentile `p` (0–100, 100 = the max) of every counted pod, each pending
    /// pod at its own wait. The value `v` at rank `k` is always a lower bound of the true
    /// percentile; it is exact (`censored: false`) when at least `k` scheduled pods have a
    /// latency of at most `v` (no pending pod could then move it), else it is censored: "more
    /// than `v`".
    pub fn percentile(&self, p: u32) -> Option<MaybeCensored> {
        let rank = nearest_rank_index(self.sorted.len(), p)?;
        let v = self.sorted[rank];
        let upto = self.sorted.partition_point(|l| l.micros <= v.micros);
        let scheduled_upto = self.sorted[..upto].iter().filter(|l| !l.censored).count();
        Some(MaybeCensored {
            secs: micros_to_secs(v.micros),
            censored: scheduled_upto < rank + 1,
        })
    }

    /// Share of the counted pods scheduled within `secs` of creation (rounded to 6 decimals);
    /// `None` when no pod needed scheduling. A pod pending at the end counts as not within,
    /// even when it had waited less than `secs`: the share is then a lower bound.
    pub fn within_share(&self, secs: f64) -> Option<f64> {
        if self.sorted.is_empty() {
            return None;
        }
        let limit = (secs * MICROS_PER_SECOND as f64).floor() as i64;
        let upto = self.sorted.partition_point(|l| l.micros <= limit);
        let n = self.sorted[..upto].iter().filter(|l| !l.censored).count();
        Some(r6(n as f64 / self.sorted.len() as f64))
    }

    /// Reads a run's `pods.csv` (`path` may be the file or the run directory); `end_s` is the
    /// end of the run (summary.json's `horizon_s`), from which a pod pending at the end counts
    /// its wait. Columns are found by name, so added columns do not matter.
    pub fn from_pods_csv(path: &Path, end_s: f64) -> Result<LatencyDist, ReportError> {
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
        let (created, scheduled, bound, attempts, finished) = (
            col("created_s")?,
            col("scheduled_s")?,
            col("bound_s")?,
            col("attempts")?,
            col("finished_s")?,
        );
        let end = (end_s * MICROS_PER_SECOND as f64).round() as i64;
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
            let c = parse_micros(field(created)).ok_or_else(|| bad("created_s", field(created)))?;
            if sched.is_empty() {
                let fin = field(finished);
                let until = if fin.is_empty() {
                    end
                } else {
                    parse_micros(fin).ok_or_else(|| bad("finished_s", fin))?
                };
                v.push(PodLatency {
                    micros: (until - c).max(0),
                    censored: true,
                });
                continue;
            }
            let s = parse_micros(sched).ok_or_else(|| bad("scheduled_s", sched))?;
            v.push(PodLatency {
                micros: s - c,
                censored: false,
            });
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

    fn sched(micros: i64) -> PodLatency {
        PodLatency {
            micros,
            censored: false,
        }
    }

    fn pending(micros: i64) -> PodLatency {
        PodLatency {
            micros,
            censored: true,
        }
    }

    #[test]
    fn within_and_censored() {
        let d = LatencyDist::new(vec![
            pending(100),
            sched(2_000_000),
            sched(500_000),
            pending(9),
        ]);
        assert_eq!(d.censored(), 2);
        // A pending pod that had waited less than 1 s is not counted as within 1 s.
        assert_eq!(d.within_share(1.0), Some(0.25));
        assert_eq!(d.within_share(2.0), Some(0.5));
        assert_eq!(LatencyDist::default().within_share(1.0), None);
    }

    /// The issue-37 case: 30 pods created one a second (0..29 s) on a cluster with no nodes,
    /// the run ending at 29 s. Each waits its own time, so p50 is 14 s and the max 29 s, both
    /// lower bounds (not the least wait, 0 s, for every percentile).
    #[test]
    fn each_pending_pod_is_its_own_lower_bound() {
        let end = 29_000_000;
        let d = LatencyDist::new((0..30).map(|i| pending(end - i * 1_000_000)).collect());
        let p = |p| d.percentile(p).map(|m| (m.secs, m.censored));
        assert_eq!(p(50), Some((14.0, true)));
        assert_eq!(p(90), Some((26.0, true)));
        assert_eq!(p(99), Some((29.0, true)));
        assert_eq!(p(100), Some((29.0, true)));
    }

    /// A percentile is exact when enough scheduled pods lie at or below it, a lower bound when
    /// a pending pod below could still end up above it.
    #[test]
    fn exact_or_lower_bound() {
        let d = LatencyDist::new(vec![sched(1_000_000), sched(2_000_000), pending(500_000)]);
        let p = |p| d.percentile(p).map(|m| (m.secs, m.censored));
        // Rank 1 is the pending pod's 0.5 s: a lower bound.
        assert_eq!(p(10), Some((0.5, true)));
        // Rank 2 is 1 s, but only one scheduled pod is at or below it: the pending pod may
        // still take more than 1 s, so p50 is at least 1 s.
        assert_eq!(p(50), Some((1.0, true)));
        assert_eq!(p(100), Some((2.0, true)));
        let d = LatencyDist::new(vec![sched(1_000_000), sched(2_000_000), pending(5_000_000)]);
        let p = |p| d.percentile(p).map(|m| (m.secs, m.censored));
        assert_eq!(p(50), Some((2.0, false)));
        assert_eq!(p(66), Some((2.0, false)));
        assert_eq!(p(100), Some((5.0, true)));
        // A tie between a scheduled and a pending pod: the scheduled one first, exact.
        let d = LatencyDist::new(vec![pending(1_000_000), sched(1_000_000)]);
        assert_eq!(d.percentile(50).map(|m| m.censored), Some(false));
        assert_eq!(d.percentile(100).map(|m| m.censored), Some(true));
    }
}
