//! `summary.json`: the headline figures of a run, and the struct it is read back into.
//!
//! Definitions:
//! - **latency** = `scheduled_s − created_s` over the pods that were scheduled (a pod re-created
//!   under the same name is a new pod). Percentiles use the **nearest-rank** method: the p-th
//!   percentile of n sorted values is the value at 1-based rank ⌈p·n/100⌉, always one of the
//!   observed values.
//! - **utilization** of a resource = requested/allocatable cluster-wide, where requested is the
//!   sum of the requests of bound, not yet ended pods. `mean` is its time-weighted mean over the
//!   time the cluster had some of that resource allocatable; `peak` is its highest value after
//!   any instant's records, `peak_at_s` the first time it was reached.
//! - **fragmentation** (at the horizon): take the pods still pending, sort them by (cpu, memory)
//!   request and pick the nearest-rank median one; `share` = free cpu on schedulable (not cordoned,
//!   not removed) nodes where that pod does not fit by resources (each requested resource, and the
//!   pod count when the node reports one) ÷ free cpu on all schedulable nodes. Taints, affinity
//!   and ports are not considered, so this measures resource fragmentation only. `null` when
//!   nothing is pending at the end; `share` is `null` when there is no free cpu.
//! - **unschedulable reasons**: each pod counted once, by its last failure message
//!   (`unschedulable_reasons`, the full FitError text), and once per distinct filter reason in that
//!   message with the node counts taken out (`unschedulable_reason_parts`, e.g. "Insufficient
//!   cpu"). Sorted by pods, most first; past [`MAX_REASONS`] entries the rest are folded into one
//!   "(N other reasons)" entry, so the counts still add up.
//!
//! Floating-point figures are rounded to 6 decimals; every map is ordered, so the same records
//! always give the same bytes.

use std::collections::BTreeMap;
use std::path::Path;

use ksim_engine::record::Outcome;
use ksim_engine::time::{SimTime, MICROS_PER_SECOND};
use serde::{Deserialize, Serialize};

use crate::error::ReportError;
use crate::recorder::{dense_get, Recorder};
use crate::utilization::Sweep;

/// Histogram entries kept in `summary.json` before the rest are folded into one.
pub const MAX_REASONS: usize = 50;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// End of the run in seconds (`RunEnded`, else the last record's time).
    pub horizon_s: f64,
    /// Step of the `utilization.csv` grid in seconds.
    pub grid_step_s: f64,
    pub pods: PodTotals,
    /// scheduled / created; `null` when no pod was created.
    pub scheduled_share: Option<f64>,
    pub latency_s: Latency,
    pub attempts: Attempts,
    pub preemptions: Preemptions,
    /// Per resource name (cpu, memory, extended resources).
    pub utilization: BTreeMap<String, Utilization>,
    pub pending_pods: PodCount,
    pub running_pods: PodCount,
    pub nodes: NodeTotals,
    pub fragmentation: Option<Fragmentation>,
    pub unschedulable_reasons: Vec<ReasonCount>,
    pub unschedulable_reason_parts: Vec<ReasonCount>,
    /// Records naming a pod or node the report did not know (or a pod that had already ended).
    pub unmatched_records: u64,
    /// Why a run without a horizon stopped early with pods waiting (see `Outcome::Stalled`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stalled: Option<String>,
    /// The schedulerNames of pods no profile serves (see `Outcome::Unserved`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unserved_schedulers: Vec<String>,
    /// Pod creations the API server's admission refused (`PodRefused`: an unknown
    /// PriorityClass, a LimitRange's min/max, a ResourceQuota), absent when none was.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub refused_creations: u64,
    /// Their reasons (upstream's message after `pods "x" is forbidden: `), most first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused_reasons: Vec<ReasonCount>,
    /// Nodes in use, per-pool fill and stranded capacity (see the `packing` module); absent in
    /// summaries written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packing: Option<crate::packing::Packing>,
    // --- Latency over every pod that needed scheduling (issue 19; one block, kept together) ---
    /// Pods that arrived already bound (a `nodeName` at creation, e.g. running pods of a
    /// cluster dump): never scheduled by the run, so left out of `needed_scheduling` and
    /// `latency_all_s`. The `pods`/`scheduled_share`/`latency_s` figures above keep their
    /// meaning (they count such pods as created, not as scheduled).
    #[serde(default)]
    pub already_bound: u64,
    /// Pods that needed scheduling: created − already_bound.
    #[serde(default)]
    pub needed_scheduling: u64,
    /// Of those, pods scheduled by the end.
    #[serde(default)]
    pub scheduled_of_needed: u64,
    /// Latency over every pod that needed scheduling, pending pods included as censored
    /// (see [`CensoredLatency`]); absent in summaries written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_all_s: Option<CensoredLatency>,
    // --- end of the issue-19 latency block ---
    /// The Kubernetes version the run behaved as (`1.36`; scenario `kubernetesVersion`,
    /// `--kubernetes-version`); absent when the recorder was not told (summaries written
    /// before it existed, reports rebuilt from an event log).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubernetes_version: Option<String>,
}

/// Scheduling latency over every pod that needed scheduling. A pod still waiting at the end is
/// *censored*: its latency is more than its own wait (`end − created`), and it counts with that
/// wait, so every percentile is an honest lower bound. A percentile that pending pods could
/// still move has `<p>_censored: true` ("more than N s"; see [`crate::LatencyDist::percentile`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CensoredLatency {
    /// Always "nearest-rank".
    pub method: String,
    /// Pods counted (= needed_scheduling).
    pub count: u64,
    /// Of which still waiting at the end.
    pub censored: u64,
    pub p50: Option<f64>,
    pub p50_censored: bool,
    pub p90: Option<f64>,
    pub p90_censored: bool,
    pub p99: Option<f64>,
    pub p99_censored: bool,
    pub max: Option<f64>,
    pub max_censored: bool,
    /// The least time a censored pod had waited at the end (`null` when none is censored).
    pub min_censored_wait: Option<f64>,
    /// Share of the counted pods scheduled within 1 s, 10 s, 30 s, 60 s and 300 s of creation
    /// (keys in seconds); `within(D)` SLOs compute any D from the run itself.
    pub within: BTreeMap<String, f64>,
}

/// A latency that may be censored: `censored` means "more than `secs`".
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MaybeCensored {
    pub secs: f64,
    pub censored: bool,
}

impl Summary {
    /// The stored percentile `p` (50, 90, 99, or 100 for the max) over every pod that needed
    /// scheduling; other percentiles need the run's [`LatencyDist`](crate::LatencyDist).
    /// `None` when no pod needed scheduling or the summary predates the field.
    pub fn latency_all_percentile(&self, p: u32) -> Option<MaybeCensored> {
        let l = self.latency_all_s.as_ref()?;
        let (v, c) = match p {
            50 => (l.p50, l.p50_censored),
            90 => (l.p90, l.p90_censored),
            99 => (l.p99, l.p99_censored),
            100 => (l.max, l.max_censored),
            _ => return None,
        };
        v.map(|secs| MaybeCensored { secs, censored: c })
    }

    /// The stored share of the pods that needed scheduling scheduled within `secs` of creation
    /// (kept for [`WITHIN_KEYS_S`]; other durations need the run's
    /// [`LatencyDist`](crate::LatencyDist)).
    pub fn within_share(&self, secs: f64) -> Option<f64> {
        if self.needed_scheduling == 0 {
            return None;
        }
        let l = self.latency_all_s.as_ref()?;
        l.within.get(&format!("{secs}")).copied()
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodTotals {
    pub created: u64,
    /// Pods with a successful scheduling attempt.
    pub scheduled: u64,
    pub bound: u64,
    pub pending_at_end: u64,
    pub by_outcome: OutcomeCounts,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutcomeCounts {
    pub running: u64,
    pub succeeded: u64,
    pub deleted: u64,
    pub pending: u64,
    pub preempted: u64,
    pub failed: u64,
    /// Still waiting when a run without a horizon stalled (absent when none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub stalled: u64,
    /// Never scheduled: their schedulerName names no profile (absent when none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unserved: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl OutcomeCounts {
    pub fn add(&mut self, o: Outcome) {
        match o {
            Outcome::Running => self.running += 1,
            Outcome::Succeeded => self.succeeded += 1,
            Outcome::Deleted => self.deleted += 1,
            Outcome::Pending => self.pending += 1,
            Outcome::Preempted => self.preempted += 1,
            Outcome::Failed => self.failed += 1,
            Outcome::Stalled => self.stalled += 1,
            Outcome::Unserved => self.unserved += 1,
        }
    }
    pub fn total(&self) -> u64 {
        self.running
            + self.succeeded
            + self.deleted
            + self.pending
            + self.preempted
            + self.failed
            + self.stalled
            + self.unserved
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Always "nearest-rank".
    pub method: String,
    pub count: u64,
    pub p50: Option<f64>,
    pub p90: Option<f64>,
    pub p99: Option<f64>,
    pub max: Option<f64>,
    pub mean: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attempts {
    pub total: u64,
    /// total / pods created.
    pub mean_per_pod: Option<f64>,
    pub max_per_pod: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preemptions {
    /// Pods that ended preempted (victims).
    pub preempted_pods: u64,
    /// Attempts that nominated a node for their pod by preemption.
    pub nominations: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Utilization {
    pub mean: Option<f64>,
    pub peak: Option<f64>,
    pub peak_at_s: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PodCount {
    /// Time-weighted mean over the run.
    pub mean: Option<f64>,
    pub peak: i64,
    pub peak_at_s: f64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NodeTotals {
    pub added: u64,
    pub removed: u64,
    pub at_end: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fragmentation {
    /// `namespace/name` of the median pending pod.
    pub median_pending_pod: String,
    pub median_pending_requests: BTreeMap<String, i64>,
    /// Free cpu (millicores) on schedulable nodes.
    pub free_cpu_millis: i64,
    /// Of which on nodes where the median pending pod does not fit.
    pub stranded_cpu_millis: i64,
    pub share: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReasonCount {
    pub reason: String,
    pub pods: u64,
}

/// Rounds to 6 decimals, so the JSON does not carry float noise.
pub(crate) fn r6(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

pub(crate) fn micros_to_secs(us: i64) -> f64 {
    us as f64 / MICROS_PER_SECOND as f64
}

/// Nearest-rank percentile of sorted values: the value at 1-based rank ⌈p·n/100⌉.
pub fn nearest_rank(sorted: &[i64], p: u32) -> Option<i64> {
    sorted.get(nearest_rank_index(sorted.len(), p)?).copied()
}

/// The index of the nearest-rank percentile `p` among `n` sorted values (`None` when `n` is 0).
pub fn nearest_rank_index(n: usize, p: u32) -> Option<usize> {
    if n == 0 {
        return None;
    }
    let n = n as u64;
    let rank = (u64::from(p) * n).div_ceil(100).clamp(1, n);
    Some((rank - 1) as usize)
}

/// The filter reasons of a FitError message, with node counts removed:
/// "0/5 nodes are available: 3 Insufficient cpu, 2 node(s) had untolerated taint {a: b}.
/// preemption: …" gives ["Insufficient cpu", "node(s) had untolerated taint {a: b}"]. A message
/// of another shape is its own single reason.
pub fn reason_parts(message: &str) -> Vec<String> {
    let parsed = (|| {
        let rest = message.strip_prefix("0/")?;
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let rest = rest[digits..].strip_prefix(" nodes are available:")?;
        let rest = rest.trim_start();
        // The histogram ends at the first ". " (a post-filter message follows) or the final ".".
        let end = rest.find(". ").unwrap_or(rest.len());
        let hist = rest[..end].trim_end_matches('.');
        let parts: Vec<String> = hist
            .split(", ")
            .map(|p| {
                let d = p.bytes().take_while(u8::is_ascii_digit).count();
                if d > 0 && p[d..].starts_with(' ') {
                    p[d + 1..].to_string()
                } else {
                    p.to_string()
                }
            })
            .filter(|p| !p.is_empty())
            .collect();
        (!parts.is_empty()).then_some(parts)
    })();
    parsed.unwrap_or_else(|| vec![message.to_string()])
}

fn histogram<'a>(items: impl Iterator<Item = &'a str>) -> Vec<ReasonCount> {
    let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
    for r in items {
        *counts.entry(r).or_default() += 1;
    }
    let mut v: Vec<ReasonCount> = counts
        .into_iter()
        .map(|(reason, pods)| ReasonCount {
            reason: reason.to_string(),
            pods,
        })
        .collect();
    // Most pods first, then by text, so equal counts keep a fixed order.
    v.sort_by(|a, b| b.pods.cmp(&a.pods).then_with(|| a.reason.cmp(&b.reason)));
    if v.len() > MAX_REASONS {
        let rest = v.split_off(MAX_REASONS - 1);
        v.push(ReasonCount {
            reason: format!("({} other reasons)", rest.len()),
            pods: rest.iter().map(|r| r.pods).sum(),
        });
    }
    v
}

pub(crate) fn latencies(rec: &Recorder) -> Vec<i64> {
    let mut v: Vec<i64> = rec
        .pods
        .iter()
        .filter_map(|p| Some(p.scheduled?.micros() - p.created.micros()))
        .collect();
    v.sort_unstable();
    v
}

/// Whether a pod arrived already bound: bound without ever going through a scheduling attempt.
pub(crate) fn arrived_bound(p: &crate::recorder::PodRow) -> bool {
    p.bound.is_some() && p.attempts == 0 && p.scheduled.is_none()
}

/// The latencies of every pod that needed scheduling, unsorted (a censored pod at its own wait),
/// the least wait of a censored pod, and the count of already-bound pods. A pod that ended
/// without being scheduled (deleted while pending, unserved) is censored too: it never got a
/// node, and its wait ends when it ended.
fn latencies_all(rec: &Recorder) -> (Vec<crate::latency::PodLatency>, Option<i64>, u64) {
    use crate::latency::PodLatency;
    let horizon = rec.horizon();
    let mut v = Vec::with_capacity(rec.pods.len());
    let mut min_wait: Option<i64> = None;
    let mut already = 0u64;
    for p in &rec.pods {
        if arrived_bound(p) {
            already += 1;
            continue;
        }
        match p.scheduled {
            Some(t) => v.push(PodLatency {
                micros: t.micros() - p.created.micros(),
                censored: false,
            }),
            None => {
                let end = p.finished.unwrap_or(horizon);
                let w = waited(p.created, end).micros();
                min_wait = Some(min_wait.map_or(w, |m| m.min(w)));
                v.push(PodLatency {
                    micros: w,
                    censored: true,
                });
            }
        }
    }
    (v, min_wait, already)
}

/// Seconds at which `latency_all_s.within` is stored.
pub const WITHIN_KEYS_S: [f64; 5] = [1.0, 10.0, 30.0, 60.0, 300.0];

pub(crate) fn compute(rec: &Recorder, sweep: &Sweep) -> Summary {
    let mut pods = PodTotals::default();
    let mut max_attempts = 0u32;
    for p in &rec.pods {
        pods.created += 1;
        pods.scheduled += u64::from(p.scheduled.is_some());
        pods.bound += u64::from(p.bound.is_some());
        let o = p.outcome();
        pods.by_outcome.add(o);
        max_attempts = max_attempts.max(p.attempts);
    }
    pods.pending_at_end = pods.by_outcome.pending + pods.by_outcome.stalled;
    let created = pods.created;
    let ratio = |a: u64, b: u64| (b > 0).then(|| r6(a as f64 / b as f64));

    let lat = latencies(rec);
    let pct = |p| nearest_rank(&lat, p).map(micros_to_secs);
    let latency = Latency {
        method: "nearest-rank".to_string(),
        count: lat.len() as u64,
        p50: pct(50),
        p90: pct(90),
        p99: pct(99),
        max: lat.last().copied().map(micros_to_secs),
        mean: (!lat.is_empty()).then(|| {
            let sum: i128 = lat.iter().map(|&v| i128::from(v)).sum();
            r6(sum as f64 / lat.len() as f64 / MICROS_PER_SECOND as f64)
        }),
    };

    let utilization = sweep
        .resources
        .iter()
        .zip(&sweep.util)
        .map(|(name, u)| {
            (
                name.clone(),
                Utilization {
                    mean: u.mean.map(r6),
                    peak: u.peak.map(r6),
                    peak_at_s: u.peak_at.map(|t| micros_to_secs(t.micros())),
                },
            )
        })
        .collect();

    let reasons: Vec<&str> = rec
        .pods
        .iter()
        .filter_map(|p| p.last_reason.as_deref())
        .collect();
    let parts: Vec<Vec<String>> = reasons
        .iter()
        .map(|m| {
            let mut ps = reason_parts(m);
            ps.sort();
            ps.dedup();
            ps
        })
        .collect();

    let mut summary = Summary {
        horizon_s: micros_to_secs(rec.horizon().micros()),
        grid_step_s: micros_to_secs(sweep.step),
        scheduled_share: ratio(pods.scheduled, created),
        latency_s: latency,
        attempts: Attempts {
            total: rec.attempts_total,
            mean_per_pod: ratio(rec.attempts_total, created),
            max_per_pod: max_attempts,
        },
        preemptions: Preemptions {
            preempted_pods: pods.by_outcome.preempted,
            nominations: rec.nominations,
        },
        utilization,
        pending_pods: PodCount {
            mean: sweep.pending.mean.map(r6),
            peak: sweep.pending.peak,
            peak_at_s: micros_to_secs(sweep.pending.peak_at.micros()),
        },
        running_pods: PodCount {
            mean: sweep.running.mean.map(r6),
            peak: sweep.running.peak,
            peak_at_s: micros_to_secs(sweep.running.peak_at.micros()),
        },
        nodes: NodeTotals {
            added: rec.nodes_added,
            removed: rec.nodes_removed,
            at_end: rec.nodes.iter().filter(|n| !n.removed).count() as u64,
        },
        fragmentation: fragmentation(rec),
        unschedulable_reasons: histogram(reasons.iter().copied()),
        unschedulable_reason_parts: histogram(parts.iter().flatten().map(String::as_str)),
        pods,
        unmatched_records: rec.unmatched,
        stalled: rec.stalled.clone(),
        unserved_schedulers: rec.unserved.clone(),
        refused_creations: rec.refused.len() as u64,
        refused_reasons: histogram(rec.refused.iter().map(|r| r.reason())),
        packing: Some(crate::packing::compute(rec)),
        already_bound: 0,
        needed_scheduling: 0,
        scheduled_of_needed: 0,
        latency_all_s: None,
        kubernetes_version: rec.kubernetes_version.clone(),
    };
    fill_latency_all(&mut summary, rec);
    summary
}

fn fill_latency_all(s: &mut Summary, rec: &Recorder) {
    let (all, min_wait, already) = latencies_all(rec);
    let dist = crate::latency::LatencyDist::new(all);
    let censored = dist.censored() as u64;
    s.already_bound = already;
    s.needed_scheduling = dist.len() as u64;
    s.scheduled_of_needed = s.needed_scheduling - censored;
    s.latency_all_s = Some(CensoredLatency {
        method: "nearest-rank".to_string(),
        count: s.needed_scheduling,
        censored,
        p50: None,
        p50_censored: false,
        p90: None,
        p90_censored: false,
        p99: None,
        p99_censored: false,
        max: None,
        max_censored: false,
        min_censored_wait: min_wait.map(micros_to_secs),
        within: BTreeMap::new(),
    });
    let get = |p| dist.percentile(p);
    let (p50, p90, p99, max) = (get(50), get(90), get(99), get(100));
    let within: BTreeMap<String, f64> = WITHIN_KEYS_S
        .iter()
        .filter_map(|&k| Some((format!("{k}"), dist.within_share(k)?)))
        .collect();
    if let Some(l) = s.latency_all_s.as_mut() {
        (l.p50, l.p50_censored) = split(p50);
        (l.p90, l.p90_censored) = split(p90);
        (l.p99, l.p99_censored) = split(p99);
        (l.max, l.max_censored) = split(max);
        l.within = within;
    }
}

/// The latencies of every pod that needed scheduling (see [`crate::LatencyDist`]).
pub(crate) fn latency_dist(rec: &Recorder) -> crate::latency::LatencyDist {
    crate::latency::LatencyDist::new(latencies_all(rec).0)
}

fn split(v: Option<MaybeCensored>) -> (Option<f64>, bool) {
    match v {
        Some(m) => (Some(m.secs), m.censored),
        None => (None, false),
    }
}

fn fragmentation(rec: &Recorder) -> Option<Fragmentation> {
    let cpu = rec.resources.get("cpu")?;
    let mem = rec.resources.get("memory");
    let get = |reqs: &[(u32, i64)], r: Option<u32>| -> i64 {
        r.and_then(|r| reqs.iter().find(|(id, _)| *id == r).map(|(_, v)| *v))
            .unwrap_or(0)
    };
    let mut pending: Vec<(i64, i64, usize)> = rec
        .pods
        .iter()
        .enumerate()
        .filter(|(_, p)| p.outcome().is_waiting())
        .map(|(i, p)| (get(&p.requests, Some(cpu)), get(&p.requests, mem), i))
        .collect();
    if pending.is_empty() {
        return None;
    }
    pending.sort_unstable();
    let rank = pending.len().div_ceil(2);
    let (_, _, idx) = pending[rank - 1];
    let pod = &rec.pods[idx];
    let pods_res = rec.resources.get("pods");

    let mut free_total = 0i64;
    let mut stranded = 0i64;
    for n in rec.nodes.iter().filter(|n| !n.removed && !n.unschedulable) {
        let free_cpu = (dense_get(&n.allocatable, cpu) - dense_get(&n.requested, cpu)).max(0);
        free_total += free_cpu;
        let fits_resources = pod.requests.iter().all(|&(r, v)| {
            Some(r) == pods_res
                || v <= 0
                || dense_get(&n.allocatable, r) - dense_get(&n.requested, r) >= v
        });
        let fits_count = match pods_res.map(|r| dense_get(&n.allocatable, r)) {
            Some(max) if max > 0 => n.pods < max,
            _ => true,
        };
        if !(fits_resources && fits_count) {
            stranded += free_cpu;
        }
    }
    Some(Fragmentation {
        median_pending_pod: format!("{}/{}", pod.namespace, pod.name),
        median_pending_requests: pod
            .requests
            .iter()
            .map(|&(r, v)| (rec.resources.names[r as usize].clone(), v))
            .collect(),
        free_cpu_millis: free_total,
        stranded_cpu_millis: stranded,
        share: (free_total > 0).then(|| r6(stranded as f64 / free_total as f64)),
    })
}

impl Summary {
    /// Reads a `summary.json` back; `path` may be the file or the run directory holding it.
    pub fn read(path: &Path) -> Result<Summary, ReportError> {
        let file = if path.is_dir() {
            path.join("summary.json")
        } else {
            path.to_path_buf()
        };
        let text = std::fs::read_to_string(&file).map_err(|e| ReportError::io(&file, e))?;
        serde_json::from_str(&text).map_err(|source| ReportError::Json { path: file, source })
    }

    /// Reads the `summary.json` of a complete run directory (`path` may be the directory or
    /// the file): a folder without the completion marker is refused.
    pub fn read_run(path: &Path) -> Result<Summary, ReportError> {
        let dir = if path.is_dir() {
            path
        } else {
            path.parent().unwrap_or(Path::new("."))
        };
        crate::staging::check_complete(dir)?;
        Summary::read(path)
    }

    /// The JSON text written to `summary.json` (pretty, with a final newline).
    pub fn to_json(&self) -> String {
        // Serialising plain structs, ordered maps and finite floats cannot fail; fall back to
        // an empty object rather than panic if that ever changes.
        let mut s = serde_json::to_string_pretty(self).unwrap_or_else(|_| "{}".to_string());
        s.push('\n');
        s
    }
}

/// The time a pod had waited at the horizon (for the pending-pods table).
pub(crate) fn waited(created: SimTime, horizon: SimTime) -> SimTime {
    SimTime((horizon.micros() - created.micros()).max(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<i64> = (1..=10).collect();
        assert_eq!(nearest_rank(&v, 50), Some(5));
        assert_eq!(nearest_rank(&v, 90), Some(9));
        assert_eq!(nearest_rank(&v, 99), Some(10));
        assert_eq!(nearest_rank(&v, 100), Some(10));
        assert_eq!(nearest_rank(&v, 0), Some(1));
        assert_eq!(nearest_rank(&[7], 50), Some(7));
        assert_eq!(nearest_rank(&[], 50), None);
        // The classic example: 15, 20, 35, 40, 50 → p30 = 20, p40 = 20, p50 = 35.
        let w = [15, 20, 35, 40, 50];
        assert_eq!(nearest_rank(&w, 30), Some(20));
        assert_eq!(nearest_rank(&w, 40), Some(20));
        assert_eq!(nearest_rank(&w, 50), Some(35));
    }

    #[test]
    fn fit_error_reason_parts() {
        for (msg, want) in [
            (
                "0/5 nodes are available: 3 Insufficient cpu, 2 node(s) had untolerated taint {a: b}. preemption: 0/5 nodes are available: 5 No preemption victims found for incoming pod.",
                vec!["Insufficient cpu", "node(s) had untolerated taint {a: b}"],
            ),
            ("0/1 nodes are available: 1 Insufficient memory.", vec!["Insufficient memory"]),
            (
                "0/3 nodes are available: node(s) didn't match Node selector.",
                vec!["node(s) didn't match Node selector"],
            ),
            ("binding rejected: timeout", vec!["binding rejected: timeout"]),
            ("0/0 nodes are available: ", vec!["0/0 nodes are available: "]),
        ] {
            assert_eq!(reason_parts(msg), want, "{msg}");
        }
    }

    #[test]
    fn long_histograms_fold_the_tail() {
        let names: Vec<String> = (0..MAX_REASONS + 5).map(|i| format!("r{i:03}")).collect();
        let h = histogram(names.iter().map(String::as_str));
        assert_eq!(h.len(), MAX_REASONS);
        assert_eq!(h.iter().map(|r| r.pods).sum::<u64>(), names.len() as u64);
        assert_eq!(h[MAX_REASONS - 1].reason, "(6 other reasons)");
    }
}
