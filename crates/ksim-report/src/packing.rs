//! Packing figures (`summary.json` → `packing`): how many nodes the run actually used, how full
//! each node pool was, and how much free capacity is stranded.
//!
//! Definitions:
//! - A node is **in use** while at least one pod is bound to it and not yet ended (ksim has no
//!   DaemonSet pods, so every pod counts). `nodes_in_use.at_end` is the count at the horizon,
//!   `mean` its time-weighted mean over `[0, horizon]`, `peak` its highest value after any
//!   instant's records (`peak_at_s` the first time). `nodes_ever_used` counts the nodes that
//!   hosted a pod at any time.
//! - **Pools** are the nodes' pool label, as in `utilization.csv` (`""` = nodes without the
//!   label). Per pool: live nodes and nodes in use at the end, allocatable and requested per
//!   resource at the end, and per resource the time-weighted mean and the peak of
//!   requested/allocatable (mean over the time the pool had some of it allocatable).
//! - **Failures naming a pool** (`failures_naming`, `failure_share`): a *failure* is an
//!   unschedulable attempt with a FitError ("0/N nodes are available: ..."). Upstream's message
//!   counts nodes per reason but names none, and every node of the cluster rejected the pod, so
//!   a failure *names* pool P when it is P's capacity the pod lacked: the message reports a lack
//!   of room ("Insufficient <resource>" or "Too many pods") and, at the attempt's instant, at
//!   least one live, schedulable node of P could hold the pod when empty (its allocatable covers
//!   every request) but has too little free for it (free = allocatable − the requests of pods
//!   bound there; pods still binding are not counted). Pools whose nodes are too small for the
//!   pod, or that reject it only for taints, selectors or affinity, are not named.
//!   `failure_share` = failures naming P ÷ all failures (`null` when there were none); one
//!   failure may name several pools, so the shares need not add up to 1. Cost: one pass over
//!   the nodes per failure whose message reports a lack of room.
//! - **Stranded** capacity at the end, over live schedulable nodes: free cpu (millicores) on
//!   nodes whose free memory is below the smallest memory request of any pod (no pod could use
//!   that cpu), and free memory (bytes) on nodes whose free cpu is below the smallest cpu
//!   request. `null` when no pod requests that resource.
//!
//! Everything is computed from the recorder's pod rows and node events after the run, so a
//! saved event log gives the same figures.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::recorder::{dense_get, Recorder};
use crate::summary::{micros_to_secs, r6};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Packing {
    pub nodes_in_use: NodesInUse,
    pub nodes_ever_used: u64,
    /// Per pool name (`""` = nodes without the pool label).
    pub pools: BTreeMap<String, PoolPacking>,
    pub stranded: Stranded,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NodesInUse {
    pub at_end: u64,
    pub mean: Option<f64>,
    pub peak: u64,
    pub peak_at_s: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoolPacking {
    pub nodes_at_end: u64,
    pub nodes_in_use_at_end: u64,
    /// Per resource, at the end.
    pub allocatable: BTreeMap<String, i64>,
    pub requested: BTreeMap<String, i64>,
    /// Per resource: requested/allocatable over time.
    pub utilization: BTreeMap<String, PoolUtil>,
    /// Unschedulable attempts whose failure names this pool (see the module doc).
    #[serde(default)]
    pub failures_naming: u64,
    /// failures_naming ÷ unschedulable attempts with a FitError; `null` when there were none.
    #[serde(default)]
    pub failure_share: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PoolUtil {
    pub mean: Option<f64>,
    pub peak: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stranded {
    /// Free cpu (millicores) on nodes without room for the smallest memory request.
    pub cpu_millis: Option<i64>,
    /// Free memory (bytes) on nodes without room for the smallest cpu request.
    pub memory_bytes: Option<i64>,
}

/// One change, in time order: node events and pod binds/ends.
enum Ev<'a> {
    Alloc { pool: u32, delta: &'a [(u32, i64)] },
    Bind { node: u32, reqs: &'a [(u32, i64)] },
    End { node: u32, reqs: &'a [(u32, i64)] },
}

/// Time-weighted accumulator of a ratio per (pool, resource).
#[derive(Default, Clone)]
struct Acc {
    weighted: f64,
    time: i64,
    peak: Option<f64>,
}

pub(crate) fn compute(rec: &Recorder) -> Packing {
    let horizon = rec.horizon().micros().max(0);
    let mut evs: Vec<(i64, u8, usize, Ev)> = Vec::new();
    for (i, e) in rec.node_events.iter().enumerate() {
        evs.push((
            e.at.micros(),
            0,
            i,
            Ev::Alloc {
                pool: e.pool,
                delta: &e.delta,
            },
        ));
    }
    for (i, p) in rec.pods.iter().enumerate() {
        let (Some(b), Some(n)) = (p.bound, p.bound_node) else {
            continue;
        };
        evs.push((
            b.micros(),
            2,
            i,
            Ev::Bind {
                node: n,
                reqs: &p.requests,
            },
        ));
        if let Some(f) = p.finished {
            evs.push((
                f.micros(),
                1,
                i,
                Ev::End {
                    node: n,
                    reqs: &p.requests,
                },
            ));
        }
    }
    // Same instant: capacity first, then ends, then binds; ties by input order.
    evs.sort_by_key(|(t, k, i, _)| (*t, *k, *i));

    let npools = rec.pools.len();
    let nres = rec.resources.len();
    let mut pool_alloc = vec![vec![0i64; nres]; npools];
    let mut pool_req = vec![vec![0i64; nres]; npools];
    let mut acc = vec![vec![Acc::default(); nres]; npools];
    let mut node_pods = vec![0i64; rec.nodes.len()];
    let mut ever = vec![false; rec.nodes.len()];
    let mut in_use = 0u64;
    let (mut in_use_area, mut peak, mut peak_at) = (0f64, 0u64, 0i64);
    let mut last = 0i64;

    let mut idx = 0;
    loop {
        // Times are clamped into [last, horizon] so a stray record cannot move time back.
        let lo = last;
        let at = move |t: i64| t.clamp(lo, horizon.max(lo));
        let now = evs.get(idx).map_or(horizon.max(last), |e| at(e.0));
        // The state held over [last, now).
        let dt = now - last;
        if dt > 0 {
            in_use_area += in_use as f64 * dt as f64;
            for p in 0..npools {
                for r in 0..nres {
                    if pool_alloc[p][r] > 0 {
                        let a = &mut acc[p][r];
                        a.weighted += pool_req[p][r] as f64 / pool_alloc[p][r] as f64 * dt as f64;
                        a.time += dt;
                    }
                }
            }
        }
        last = now;
        if idx >= evs.len() {
            break;
        }
        while let Some((t, _, _, e)) = evs.get(idx) {
            if at(*t) != now {
                break;
            }
            idx += 1;
            match e {
                Ev::Alloc { pool, delta } => {
                    for &(r, v) in delta.iter() {
                        pool_alloc[*pool as usize][r as usize] += v;
                    }
                }
                Ev::Bind { node, reqs } | Ev::End { node, reqs } => {
                    let sign = if matches!(e, Ev::Bind { .. }) { 1 } else { -1 };
                    let n = *node as usize;
                    let pool = rec.nodes[n].pool as usize;
                    for &(r, v) in reqs.iter() {
                        pool_req[pool][r as usize] += sign * v;
                    }
                    let before = node_pods[n];
                    node_pods[n] += sign;
                    if before == 0 && node_pods[n] > 0 {
                        in_use += 1;
                        ever[n] = true;
                    } else if before > 0 && node_pods[n] == 0 {
                        in_use -= 1;
                    }
                }
            }
        }
        if in_use > peak {
            peak = in_use;
            peak_at = now;
        }
        for p in 0..npools {
            for r in 0..nres {
                if pool_alloc[p][r] > 0 {
                    let u = pool_req[p][r] as f64 / pool_alloc[p][r] as f64;
                    let a = &mut acc[p][r];
                    if a.peak.is_none_or(|pk| u > pk) {
                        a.peak = Some(u);
                    }
                }
            }
        }
    }

    // Reported resources: those some pod requests, plus cpu and memory.
    let mut requested_res = vec![false; nres];
    for name in ["cpu", "memory"] {
        if let Some(id) = rec.resources.get(name) {
            requested_res[id as usize] = true;
        }
    }
    for p in &rec.pods {
        for &(r, v) in p.requests.iter() {
            if v != 0 && rec.resources.names[r as usize] != "pods" {
                requested_res[r as usize] = true;
            }
        }
    }

    let mut pools = BTreeMap::new();
    for (p, name) in rec.pools.names.iter().enumerate() {
        let live = rec
            .nodes
            .iter()
            .filter(|n| n.pool as usize == p && !n.removed);
        let mut alloc = BTreeMap::new();
        let mut req = BTreeMap::new();
        let mut util = BTreeMap::new();
        for r in (0..nres).filter(|&r| requested_res[r]) {
            let rname = rec.resources.names[r].clone();
            alloc.insert(rname.clone(), pool_alloc[p][r]);
            req.insert(rname.clone(), pool_req[p][r]);
            let a = &acc[p][r];
            util.insert(
                rname,
                PoolUtil {
                    mean: (a.time > 0).then(|| r6(a.weighted / a.time as f64)),
                    peak: a.peak.map(r6),
                },
            );
        }
        pools.insert(
            name.clone(),
            PoolPacking {
                nodes_at_end: live.clone().count() as u64,
                nodes_in_use_at_end: rec
                    .nodes
                    .iter()
                    .enumerate()
                    .filter(|(i, n)| n.pool as usize == p && !n.removed && node_pods[*i] > 0)
                    .count() as u64,
                allocatable: alloc,
                requested: req,
                utilization: util,
                failures_naming: rec.pool_failures.get(p).copied().unwrap_or(0),
                failure_share: (rec.fit_failures > 0).then(|| {
                    r6(rec.pool_failures.get(p).copied().unwrap_or(0) as f64
                        / rec.fit_failures as f64)
                }),
            },
        );
    }

    Packing {
        nodes_in_use: NodesInUse {
            at_end: in_use,
            mean: (horizon > 0).then(|| r6(in_use_area / horizon as f64)),
            peak,
            peak_at_s: micros_to_secs(peak_at),
        },
        nodes_ever_used: ever.iter().filter(|e| **e).count() as u64,
        pools,
        stranded: stranded(rec),
    }
}

fn stranded(rec: &Recorder) -> Stranded {
    let cpu = rec.resources.get("cpu");
    let mem = rec.resources.get("memory");
    let smallest = |res: Option<u32>| -> Option<i64> {
        let res = res?;
        rec.pods
            .iter()
            .filter_map(|p| p.requests.iter().find(|(r, v)| *r == res && *v > 0))
            .map(|(_, v)| *v)
            .min()
    };
    let (min_cpu, min_mem) = (smallest(cpu), smallest(mem));
    let (mut s_cpu, mut s_mem) = (0i64, 0i64);
    for n in rec.nodes.iter().filter(|n| !n.removed && !n.unschedulable) {
        let free = |r: Option<u32>| {
            r.map_or(0, |r| {
                (dense_get(&n.allocatable, r) - dense_get(&n.requested, r)).max(0)
            })
        };
        let (fc, fm) = (free(cpu), free(mem));
        if min_mem.is_some_and(|m| fm < m) {
            s_cpu += fc;
        }
        if min_cpu.is_some_and(|c| fc < c) {
            s_mem += fm;
        }
    }
    Stranded {
        cpu_millis: (min_cpu.is_some() && min_mem.is_some()).then_some(s_cpu),
        memory_bytes: (min_cpu.is_some() && min_mem.is_some()).then_some(s_mem),
    }
}

/// Nodes in use at each grid sample (x in `unit` seconds), for the report's plot.
pub(crate) fn in_use_series(
    rec: &Recorder,
    samples: &[crate::utilization::ClusterSample],
    unit: f64,
) -> Vec<(f64, f64)> {
    // +1/-1 per node-pod interval, then a running count of pods per node.
    let mut evs: Vec<(i64, i64, u32)> = Vec::new();
    for p in &rec.pods {
        let (Some(b), Some(n)) = (p.bound, p.bound_node) else {
            continue;
        };
        evs.push((b.micros(), 1, n));
        if let Some(f) = p.finished {
            evs.push((f.micros(), -1, n));
        }
    }
    evs.sort_unstable();
    let mut pods = vec![0i64; rec.nodes.len()];
    let mut in_use = 0i64;
    let mut i = 0;
    let mut out = Vec::with_capacity(samples.len());
    for s in samples {
        while let Some(&(t, d, n)) = evs.get(i) {
            if t > s.at.micros() {
                break;
            }
            i += 1;
            let slot = &mut pods[n as usize];
            let before = *slot;
            *slot += d;
            if before == 0 && *slot > 0 {
                in_use += 1;
            } else if before > 0 && *slot == 0 {
                in_use -= 1;
            }
        }
        out.push((s.at.as_secs_f64() / unit, in_use as f64));
    }
    out
}

/// One line of the per-pool utilization plot: pool, resource, (time, percent) points.
pub(crate) type PoolSeries = (String, String, Vec<(f64, f64)>);

/// requested/allocatable (percent) of cpu and memory per pool at each grid sample, for the
/// report's per-pool utilization plot: `(pool, resource, points)`, pools by name.
pub(crate) fn pool_util_series(
    rec: &Recorder,
    samples: &[crate::utilization::ClusterSample],
    unit: f64,
) -> Vec<PoolSeries> {
    let res: Vec<(u32, &str)> = ["cpu", "memory"]
        .iter()
        .filter_map(|n| rec.resources.get(n).map(|id| (id, *n)))
        .collect();
    // (time, kind: 0 capacity, 1 end, 2 bind, pool, index into pods or node events)
    let mut evs: Vec<(i64, u8, usize)> = Vec::new();
    for (i, e) in rec.node_events.iter().enumerate() {
        evs.push((e.at.micros(), 0, i));
    }
    for (i, p) in rec.pods.iter().enumerate() {
        if let (Some(b), Some(_)) = (p.bound, p.bound_node) {
            evs.push((b.micros(), 2, i));
            if let Some(f) = p.finished {
                evs.push((f.micros(), 1, i));
            }
        }
    }
    evs.sort_unstable();
    let npools = rec.pools.len();
    let mut alloc = vec![vec![0i64; res.len()]; npools];
    let mut req = vec![vec![0i64; res.len()]; npools];
    let mut pts: Vec<Vec<Vec<(f64, f64)>>> = vec![vec![Vec::new(); res.len()]; npools];
    let mut i = 0;
    for s in samples {
        while let Some(&(t, kind, idx)) = evs.get(i) {
            if t > s.at.micros() {
                break;
            }
            i += 1;
            if kind == 0 {
                let e = &rec.node_events[idx];
                for &(r, v) in &e.delta {
                    if let Some(c) = res.iter().position(|(id, _)| *id == r) {
                        alloc[e.pool as usize][c] += v;
                    }
                }
            } else {
                let p = &rec.pods[idx];
                let Some(n) = p.bound_node else { continue };
                let pool = rec.nodes[n as usize].pool as usize;
                let sign = if kind == 2 { 1 } else { -1 };
                for &(r, v) in p.requests.iter() {
                    if let Some(c) = res.iter().position(|(id, _)| *id == r) {
                        req[pool][c] += sign * v;
                    }
                }
            }
        }
        for p in 0..npools {
            for c in 0..res.len() {
                if alloc[p][c] > 0 {
                    pts[p][c].push((
                        s.at.as_secs_f64() / unit,
                        100.0 * req[p][c] as f64 / alloc[p][c] as f64,
                    ));
                }
            }
        }
    }
    let mut order: Vec<usize> = (0..npools).collect();
    order.sort_by(|a, b| rec.pools.names[*a].cmp(&rec.pools.names[*b]));
    let mut out = Vec::new();
    for p in order {
        for (c, (_, name)) in res.iter().enumerate() {
            let v = std::mem::take(&mut pts[p][c]);
            if !v.is_empty() {
                let pool = &rec.pools.names[p];
                let pool = if pool.is_empty() { "(no pool)" } else { pool };
                out.push((pool.to_string(), name.to_string(), v));
            }
        }
    }
    out
}
