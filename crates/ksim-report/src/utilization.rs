//! `utilization.csv` and the time-weighted figures of `summary.json`, from one sweep over the
//! run's change points (pod created / bound / ended, node allocatable changes).
//!
//! **Sampling rule.** Rows are written on a regular grid `0, step, 2·step, …` with the horizon
//! itself as the last sample (so the end state is always there). `step` is the smallest value of
//! the ladder 1, 2, 5, 10, 20, 50, 100, 200, 500 ms, 1, 2, 5, 10, 15, 30 s, 1, 2, 5, 10, 15, 30 min,
//! 1, 2, 3, 6, 12 h, 1, 2, 7, 14 d (then whole weeks) that gives at most 2,000 steps
//! ([`ReportOptions::max_steps`]), hence at most 2,001 samples. A sample at time `t` shows the state after every record at or before `t`. Change
//! points between samples are not lost: the `*_peak` columns give the highest value reached in
//! `(previous sample, t]` (the state left by each instant's records; transient states inside one
//! instant do not count), and the summary's means and peaks are computed exactly over every
//! change point, not from the grid.
//!
//! **Resources reported.** cpu (millicores) and memory (bytes) always; other resources when a pod
//! requests them or when their name is domain-prefixed like an extended resource
//! (`nvidia.com/gpu`); the pod count (`pods`) never (`running_pods` covers it).
//!
//! **Scopes.** One row per resource for the whole cluster (`pool` = `*`, a character label values
//! cannot contain) and one per node pool (pools sorted by name; `""` is the nodes without the pool
//! label). A pod's requests count in the pool of the node it was bound to, from `PodBound` to
//! `PodEnded`. `pending_pods` (created, not yet bound, not ended) is cluster-wide only.

use std::io::Write;

use ksim_engine::time::{SimTime, MICROS_PER_SECOND};

pub use crate::options::{ReportOptions, MAX_STEPS};
use crate::recorder::Recorder;

/// Header of `utilization.csv`.
pub const UTILIZATION_HEADER: [&str; 9] = [
    "time_s",
    "pool",
    "resource",
    "requested",
    "allocatable",
    "requested_peak",
    "running_pods",
    "pending_pods",
    "pending_pods_peak",
];

const MS: i64 = 1_000;
const S: i64 = MICROS_PER_SECOND;
const STEP_LADDER: [i64; 30] = [
    MS,
    2 * MS,
    5 * MS,
    10 * MS,
    20 * MS,
    50 * MS,
    100 * MS,
    200 * MS,
    500 * MS,
    S,
    2 * S,
    5 * S,
    10 * S,
    15 * S,
    30 * S,
    60 * S,
    120 * S,
    300 * S,
    600 * S,
    900 * S,
    1800 * S,
    3600 * S,
    7200 * S,
    3 * 3600 * S,
    6 * 3600 * S,
    12 * 3600 * S,
    86_400 * S,
    2 * 86_400 * S,
    7 * 86_400 * S,
    14 * 86_400 * S,
];

/// The grid step for a horizon, in microseconds (see the module doc): the smallest ladder step
/// giving at most `max_steps` steps.
pub fn grid_step(horizon: SimTime, max_steps: i64) -> i64 {
    let h = horizon.micros().max(0);
    let max_steps = max_steps.max(1);
    for step in STEP_LADDER {
        if ceil_div(h, step) <= max_steps {
            return step;
        }
    }
    let week = 7 * 86_400 * S;
    ceil_div(ceil_div(h, max_steps), week) * week
}

fn ceil_div(a: i64, b: i64) -> i64 {
    (a + b - 1) / b
}

/// The cluster-wide state at one grid sample (for plots).
#[derive(Debug, Clone)]
pub(crate) struct ClusterSample {
    pub at: SimTime,
    pub pending: i64,
    pub pending_peak: i64,
    pub running: i64,
    /// Per reported resource, in `Sweep::resources` order.
    pub requested: Vec<i64>,
    pub allocatable: Vec<i64>,
}

/// Time-weighted mean and peak of requested/allocatable for one resource, cluster-wide.
#[derive(Debug, Clone, Default)]
pub(crate) struct UtilStat {
    /// Mean of requested/allocatable over the time the cluster had some allocatable.
    pub mean: Option<f64>,
    pub peak: Option<f64>,
    pub peak_at: Option<SimTime>,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct CountStat {
    pub mean: Option<f64>,
    pub peak: i64,
    pub peak_at: SimTime,
}

#[derive(Debug, Clone)]
pub(crate) struct Sweep {
    pub step: i64,
    /// Reported resource names, in output order.
    pub resources: Vec<String>,
    pub samples: Vec<ClusterSample>,
    pub util: Vec<UtilStat>,
    pub pending: CountStat,
    pub running: CountStat,
}

#[derive(Clone, Copy)]
enum Ev {
    Node(u32),
    Create,
    Bind(u32),
    End(u32),
}

/// Runs the sweep; writes `utilization.csv` rows into `out` when given.
pub(crate) fn sweep<W: Write>(
    rec: &Recorder,
    mut out: Option<&mut csv::Writer<W>>,
) -> Result<Sweep, csv::Error> {
    let horizon = rec.horizon().micros().max(0);

    // Reported resources: cpu, memory, then the others by name.
    let mut requested_ids = vec![false; rec.resources.len()];
    for pod in &rec.pods {
        for &(r, v) in pod.requests.iter() {
            if v != 0 {
                requested_ids[r as usize] = true;
            }
        }
    }
    let mut others: Vec<(&str, u32)> = rec
        .resources
        .names
        .iter()
        .enumerate()
        .filter(|(i, n)| {
            let n = n.as_str();
            n != "cpu" && n != "memory" && n != "pods" && (requested_ids[*i] || n.contains('/'))
        })
        .map(|(i, n)| (n.as_str(), i as u32))
        .collect();
    others.sort();
    let mut res_ids: Vec<u32> = Vec::new();
    let mut resources: Vec<String> = Vec::new();
    for name in ["cpu", "memory"] {
        if let Some(id) = rec.resources.get(name) {
            res_ids.push(id);
            resources.push(name.to_string());
        }
    }
    for (name, id) in others {
        res_ids.push(id);
        resources.push(name.to_string());
    }
    let nres = res_ids.len();
    // resource id -> reported column
    let mut col_of: Vec<Option<usize>> = vec![None; rec.resources.len()];
    for (c, &id) in res_ids.iter().enumerate() {
        col_of[id as usize] = Some(c);
    }

    // Scopes: 0 = cluster, then pools by name.
    let mut pool_order: Vec<(&str, u32)> = rec
        .pools
        .names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i as u32))
        .collect();
    pool_order.sort();
    let mut scope_of_pool = vec![0usize; rec.pools.len()];
    let mut scope_labels: Vec<&str> = vec!["*"];
    for (s, (name, id)) in pool_order.iter().enumerate() {
        scope_of_pool[*id as usize] = s + 1;
        scope_labels.push(name);
    }
    let nscopes = scope_labels.len();

    // Change points, in time order (a stable sort keeps record order within an instant, though
    // only the state after a whole instant is ever looked at).
    let mut evs: Vec<(i64, Ev)> = Vec::with_capacity(rec.node_events.len() + 3 * rec.pods.len());
    for (i, e) in rec.node_events.iter().enumerate() {
        evs.push((e.at.micros(), Ev::Node(i as u32)));
    }
    for (i, p) in rec.pods.iter().enumerate() {
        let i = i as u32;
        evs.push((p.created.micros(), Ev::Create));
        if let Some(b) = p.bound {
            evs.push((b.micros(), Ev::Bind(i)));
        }
        if let Some(f) = p.finished {
            evs.push((f.micros(), Ev::End(i)));
        }
    }
    evs.sort_by_key(|e| e.0);

    let mut req = vec![0i64; nscopes * nres];
    let mut alloc = vec![0i64; nscopes * nres];
    let mut running = vec![0i64; nscopes];
    let mut pending = 0i64;
    let mut req_peak = req.clone();
    let mut pending_peak = 0i64;

    let step = grid_step(SimTime(horizon), rec.options.max_steps);
    let nsamples = ceil_div(horizon, step);
    let sample_time = |k: i64| (k * step).min(horizon);
    let mut k = 0i64;

    let mut samples = Vec::new();
    let mut util = vec![UtilStat::default(); nres];
    let mut ratio_integral = vec![0f64; nres];
    let mut covered = vec![0i64; nres];
    let mut pending_integral = 0f64;
    let mut running_integral = 0f64;
    let mut pending_stat = CountStat::default();
    let mut running_stat = CountStat::default();

    let pool_scope = |node: Option<u32>| -> Option<usize> {
        let n = rec.nodes.get(node? as usize)?;
        scope_of_pool.get(n.pool as usize).copied()
    };

    let mut emit = |k: i64,
                    req: &[i64],
                    alloc: &[i64],
                    running: &[i64],
                    pending: i64,
                    req_peak: &mut Vec<i64>,
                    pending_peak: &mut i64,
                    samples: &mut Vec<ClusterSample>|
     -> Result<(), csv::Error> {
        let at = SimTime(sample_time(k));
        if let Some(w) = out.as_deref_mut() {
            let time = at.secs_string();
            for s in 0..nscopes {
                for (c, resource) in resources.iter().enumerate() {
                    let i = s * nres + c;
                    let (pend, pend_peak) = if s == 0 {
                        (pending.to_string(), (*pending_peak).to_string())
                    } else {
                        (String::new(), String::new())
                    };
                    w.write_record([
                        time.as_str(),
                        scope_labels[s],
                        resource.as_str(),
                        &req[i].to_string(),
                        &alloc[i].to_string(),
                        &req_peak[i].to_string(),
                        &running[s].to_string(),
                        &pend,
                        &pend_peak,
                    ])?;
                }
            }
        }
        samples.push(ClusterSample {
            at,
            pending,
            pending_peak: *pending_peak,
            running: running[0],
            requested: req[..nres].to_vec(),
            allocatable: alloc[..nres].to_vec(),
        });
        // The state at this sample holds into the next interval, so it starts the next peak.
        req_peak.copy_from_slice(req);
        *pending_peak = pending;
        Ok(())
    };

    let mut integrate =
        |from: i64, to: i64, req: &[i64], alloc: &[i64], running: &[i64], pending: i64| {
            if to <= from {
                return;
            }
            let dt = to - from;
            for c in 0..nres {
                if alloc[c] > 0 {
                    ratio_integral[c] += req[c] as f64 / alloc[c] as f64 * dt as f64;
                    covered[c] += dt;
                }
            }
            pending_integral += pending as f64 * dt as f64;
            running_integral += running[0] as f64 * dt as f64;
        };

    let mut prev_t = 0i64;
    let mut i = 0;
    while i < evs.len() {
        let t = evs[i].0;
        if t > horizon {
            break;
        }
        while k <= nsamples && sample_time(k) < t {
            emit(
                k,
                &req,
                &alloc,
                &running,
                pending,
                &mut req_peak,
                &mut pending_peak,
                &mut samples,
            )?;
            k += 1;
        }
        integrate(prev_t, t, &req, &alloc, &running, pending);
        // Apply every change at this instant.
        while i < evs.len() && evs[i].0 == t {
            match evs[i].1 {
                Ev::Node(e) => {
                    let e = &rec.node_events[e as usize];
                    let s = scope_of_pool.get(e.pool as usize).copied().unwrap_or(0);
                    for &(r, v) in &e.delta {
                        if let Some(c) = col_of.get(r as usize).copied().flatten() {
                            alloc[c] += v;
                            if s != 0 {
                                alloc[s * nres + c] += v;
                            }
                        }
                    }
                }
                Ev::Create => pending += 1,
                Ev::Bind(p) | Ev::End(p) => {
                    let pod = &rec.pods[p as usize];
                    let ending = matches!(evs[i].1, Ev::End(_));
                    if pod.bound.is_none() {
                        // Ended while pending.
                        pending -= 1;
                    } else {
                        let sign = if ending { -1 } else { 1 };
                        if !ending {
                            pending -= 1;
                        }
                        let scope = pool_scope(pod.bound_node);
                        running[0] += sign;
                        if let Some(s) = scope.filter(|&s| s != 0) {
                            running[s] += sign;
                        }
                        for &(r, v) in pod.requests.iter() {
                            if let Some(c) = col_of.get(r as usize).copied().flatten() {
                                req[c] += sign * v;
                                if let Some(s) = scope.filter(|&s| s != 0) {
                                    req[s * nres + c] += sign * v;
                                }
                            }
                        }
                    }
                }
            }
            i += 1;
        }
        for (p, v) in req_peak.iter_mut().zip(&req) {
            *p = (*p).max(*v);
        }
        pending_peak = pending_peak.max(pending);
        for c in 0..nres {
            if alloc[c] > 0 {
                let ratio = req[c] as f64 / alloc[c] as f64;
                if util[c].peak.is_none_or(|p| ratio > p) {
                    util[c].peak = Some(ratio);
                    util[c].peak_at = Some(SimTime(t));
                }
            }
        }
        if pending > pending_stat.peak {
            pending_stat.peak = pending;
            pending_stat.peak_at = SimTime(t);
        }
        if running[0] > running_stat.peak {
            running_stat.peak = running[0];
            running_stat.peak_at = SimTime(t);
        }
        prev_t = prev_t.max(t);
    }
    while k <= nsamples {
        emit(
            k,
            &req,
            &alloc,
            &running,
            pending,
            &mut req_peak,
            &mut pending_peak,
            &mut samples,
        )?;
        k += 1;
    }
    integrate(prev_t, horizon, &req, &alloc, &running, pending);

    for c in 0..nres {
        if covered[c] > 0 {
            util[c].mean = Some(ratio_integral[c] / covered[c] as f64);
        }
    }
    if horizon > 0 {
        pending_stat.mean = Some(pending_integral / horizon as f64);
        running_stat.mean = Some(running_integral / horizon as f64);
    }
    Ok(Sweep {
        step,
        resources,
        samples,
        util,
        pending: pending_stat,
        running: running_stat,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_step_keeps_samples_bounded() {
        for (h, want) in [
            (0, MS),
            (1, MS),
            (2 * S, MS),
            (3 * S, 2 * MS),
            (2000 * S, S),
            (2001 * S, 2 * S),
            (7 * 86_400 * S, 600 * S),
            (365 * 86_400 * S, 6 * 3600 * S),
        ] {
            assert_eq!(grid_step(SimTime(h), MAX_STEPS), want, "horizon {h}");
        }
        // Beyond the ladder: whole weeks, still at most MAX_STEPS steps.
        let h = 100 * 365 * 86_400 * S;
        let step = grid_step(SimTime(h), MAX_STEPS);
        assert_eq!(step % (7 * 86_400 * S), 0);
        assert!(ceil_div(h, step) <= MAX_STEPS);
    }
}
