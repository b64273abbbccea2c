//! The paired scoring paths over the snapshot's resource columns: two nodes per SSE2
//! operation ([`F2`]), each lane taking the scalar code's float operations, and node by node
//! where a pair falls outside the exact bounds.

use super::*;

/// The columns a cpu + memory scorer reads, all `n` long: allocatable, and the node's
/// Requested or NonZeroRequested (as floats, see [`NodeColumns`]).
///
/// [`NodeColumns`]: crate::node_columns::NodeColumns
#[derive(Clone, Copy)]
pub(super) struct CpuMemoryColumns<'a> {
    pub(super) alloc_cpu: &'a [f64],
    pub(super) alloc_memory: &'a [f64],
    pub(super) requested_cpu: &'a [f64],
    pub(super) requested_memory: &'a [f64],
    /// Every row of the columns is ordinary ([`NodeColumns::all_ordinary`]): see
    /// [`ordinary_pair`].
    ///
    /// [`NodeColumns::all_ordinary`]: crate::node_columns::NodeColumns::all_ordinary
    pub(super) ordinary: bool,
}

/// Requests and capacities below this are exact as floats, and so is the sum of two of them
/// (below 2^53).
pub(super) const EXACT_SUM_LIMIT: i64 = 1 << 52;

impl CpuMemoryColumns<'_> {
    /// Nodes `i` and `j`, one per lane: allocatable cpu, requested cpu, allocatable memory,
    /// requested memory.
    #[inline(always)]
    pub(super) fn pair(&self, i: usize, j: usize) -> (F2, F2, F2, F2) {
        (
            F2::new(self.alloc_cpu[i], self.alloc_cpu[j]),
            F2::new(self.requested_cpu[i], self.requested_cpu[j]),
            F2::new(self.alloc_memory[i], self.alloc_memory[j]),
            F2::new(self.requested_memory[i], self.requested_memory[j]),
        )
    }
}

/// The lanes of `requested + pod` where the node's requested amount is below
/// [`EXACT_SUM_LIMIT`] (and the caller checked the pod's request is in `[0, EXACT_SUM_LIMIT)`),
/// with the mask of the lanes where that holds and the sum is at least 0. In those lanes the
/// sum is the integer `requested + pod` exactly: both addends are exact (a converted amount
/// below 2^52 came from an integer below 2^52, conversion being monotonic; one at least
/// −pod > −2^52 likewise), so their sum, below 2^53 in magnitude, is too.
#[inline(always)]
pub(super) fn exact_request(requested: F2, pod: F2, zero: F2, limit: F2) -> (F2, F2) {
    let sum = requested.add(pod);
    (sum, requested.lt(limit).and(sum.ge(zero)))
}

/// The per-cycle constants of the packed paths.
pub(super) struct PairConstants {
    zero: F2,
    one: F2,
    half: F2,
    max: F2,
    capacity_limit: F2,
    exact_limit: F2,
    /// The pod's cpu and memory requests.
    pod_cpu: F2,
    pod_memory: F2,
    /// The same, as plain floats.
    pub(super) pod: [f64; 2],
}

impl PairConstants {
    /// `None` when a request of the pod is negative or not below [`EXACT_SUM_LIMIT`].
    pub(super) fn new(pod: [i64; 2]) -> Option<PairConstants> {
        if !pod.iter().all(|q| (0..EXACT_SUM_LIMIT).contains(q)) {
            return None;
        }
        Some(PairConstants {
            zero: F2::splat(0.0),
            one: F2::splat(1.0),
            half: F2::splat(0.5),
            max: F2::splat(MAX_NODE_SCORE as f64),
            capacity_limit: F2::splat(PAIRED_CAPACITY_LIMIT as f64),
            exact_limit: F2::splat(EXACT_SUM_LIMIT as f64),
            pod_cpu: F2::splat(pod[0] as f64),
            pod_memory: F2::splat(pod[1] as f64),
            pod: [pod[0] as f64, pod[1] as f64],
        })
    }
}

/// Nodes `i` and `j` of the weighted strategies with equal weights (`MOST`: MostAllocated,
/// else LeastAllocated), one per lane; `None` when either is outside the paired divide's
/// bounds (capacities in `[1, PAIRED_CAPACITY_LIMIT)`, requests with the pod from 0 and
/// exact, see [`exact_request`]).
///
/// In those bounds each lane computes what [`weighted_cpu_memory`] computes: the capacities
/// (below 2^46) and requests are exact, the numerator `(capacity − min(requested, capacity))
/// × 100` (or `min(requested, capacity) × 100`) is an integer below 2^53 and so exact, the
/// divide is the same IEEE divide, truncating its quotient in `[0, 100]` is the same integer,
/// and `(a·w + b·w) / 2w` is the shift `(a + b) >> 1`, as there.
#[inline(always)]
pub(super) fn weighted_pair<const MOST: bool>(
    c: &CpuMemoryColumns<'_>,
    k: &PairConstants,
    i: usize,
    j: usize,
) -> Option<[i64; 2]> {
    let (ac, rqc, am, rqm) = c.pair(i, j);
    let (rc, ok_c) = exact_request(rqc, k.pod_cpu, k.zero, k.exact_limit);
    let (rm, ok_m) = exact_request(rqm, k.pod_memory, k.zero, k.exact_limit);
    // Capacities in [1, 2^46): conversion is monotonic and exact at 1 and 2^46, so the bounds
    // read the same on the converted values.
    let inside = ok_c
        .and(ok_m)
        .and(ac.ge(k.one))
        .and(ac.lt(k.capacity_limit))
        .and(am.ge(k.one))
        .and(am.lt(k.capacity_limit));
    if !inside.all() {
        return None;
    }
    let (nc, nm) = weighted_numerators::<MOST>(k, ac, rc, am, rm);
    Some(nc.div(ac).trunc().add(nm.div(am).trunc()).shr1().to_i64())
}

/// The numerators of [`weighted_pair`] for cpu and memory: `min(requested, capacity) × 100`
/// (`MOST`) or `(capacity − requested) × 100`, 0 where the request exceeds the capacity.
#[inline(always)]
fn weighted_numerators<const MOST: bool>(
    k: &PairConstants,
    ac: F2,
    rc: F2,
    am: F2,
    rm: F2,
) -> (F2, F2) {
    if MOST {
        (rc.min(ac).mul(k.max), rm.min(am).mul(k.max))
    } else {
        (
            ac.sub(rc).and(rc.le(ac)).mul(k.max),
            am.sub(rm).and(rm.le(am)).mul(k.max),
        )
    }
}

/// Nodes `i` and `j` of the balanced strategy, one per lane; `None` when either lacks a
/// capacity, has a negative capacity or request, or a request that is not exact (see
/// [`exact_request`]). In bounds each lane takes [`balanced_cpu_memory`]'s float operations
/// on the same values (the fractions capped at 1 then lie in `[0, 1]`, so the score is in
/// `[50, 100]` and truncates alike; `x / 2.0` and `x * 0.5` are the same correctly rounded
/// value).
#[inline(always)]
pub(super) fn balanced_pair(
    c: &CpuMemoryColumns<'_>,
    k: &PairConstants,
    i: usize,
    j: usize,
) -> Option<[i64; 2]> {
    let (ac, rqc, am, rqm) = c.pair(i, j);
    let (rc, ok_c) = exact_request(rqc, k.pod_cpu, k.zero, k.exact_limit);
    let (rm, ok_m) = exact_request(rqm, k.pod_memory, k.zero, k.exact_limit);
    let inside = ok_c.and(ok_m).and(ac.ge(k.one)).and(am.ge(k.one));
    if !inside.all() {
        return None;
    }
    let (fc, fm) = (rc.div(ac).min(k.one), rm.div(am).min(k.one));
    let std = fc.sub(fm).mul(k.half).abs();
    Some(k.one.sub(std).mul(k.max).trunc().to_i64())
}

// The ordinary rows' bounds are within the paired paths' (see `ordinary_pair`).
const _: () = assert!(
    crate::node_columns::ORDINARY_CAPACITY_LIMIT <= PAIRED_CAPACITY_LIMIT
        && crate::node_columns::ORDINARY_REQUEST_LIMIT <= EXACT_SUM_LIMIT
);

/// [`weighted_pair`] (`BALANCED` false) or [`balanced_pair`] of nodes `i` and `j` when every
/// row of the columns is ordinary, without their bounds checks, which then hold in every
/// lane: ordinary rows have capacities in `[1, 2^46)` (`PAIRED_CAPACITY_LIMIT`) and
/// requested amounts (both kinds) in `[0, 2^52)` (`EXACT_SUM_LIMIT`), and
/// [`PairConstants::new`] took the pod's requests only in `[0, 2^52)`; so each sum
/// `requested + pod` is at least 0 and exact ([`exact_request`]), and the capacities are in
/// both functions' bounds. The arithmetic is theirs, operation for operation.
#[inline(always)]
pub(super) fn ordinary_pair<const BALANCED: bool, const MOST: bool>(
    c: &CpuMemoryColumns<'_>,
    k: &PairConstants,
    i: usize,
    j: usize,
) -> [i64; 2] {
    let (ac, rqc, am, rqm) = c.pair(i, j);
    let (rc, rm) = (rqc.add(k.pod_cpu), rqm.add(k.pod_memory));
    if BALANCED {
        let (fc, fm) = (rc.div(ac).min(k.one), rm.div(am).min(k.one));
        let std = fc.sub(fm).mul(k.half).abs();
        k.one.sub(std).mul(k.max).trunc().to_i64()
    } else {
        let (nc, nm) = weighted_numerators::<MOST>(k, ac, rc, am, rm);
        nc.div(ac).trunc().add(nm.div(am).trunc()).shr1().to_i64()
    }
}

/// The scores of `feasible`, two nodes at a time by `pair` (`BALANCED`: [`balanced_pair`],
/// else [`weighted_pair`]), a pair it declines (and a lone last node it declines) by
/// `per_node`; when every row is ordinary, by [`ordinary_pair`], written in place (no
/// capacity test or length update per pair).
#[inline(always)]
pub(super) fn score_pairs<const BALANCED: bool, const MOST: bool>(
    c: CpuMemoryColumns<'_>,
    k: &PairConstants,
    feasible: &[usize],
    per_node: impl Fn(usize) -> i64,
    out: &mut Vec<i64>,
) {
    if c.ordinary {
        let start = out.len();
        out.resize(start + feasible.len(), 0);
        let out = &mut out[start..];
        // Four nodes per operation where the CPU has AVX2, the rest (and on other CPUs, all)
        // two at a time.
        #[allow(unused_mut)]
        let mut done = 0;
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked above).
            done =
                unsafe { super::quads::ordinary_quads::<BALANCED, MOST>(&c, k.pod, feasible, out) };
        }
        let (feasible, out) = (&feasible[done..], &mut out[done..]);
        let mut pairs = feasible.chunks_exact(2);
        let mut outs = out.chunks_exact_mut(2);
        for (p, o) in (&mut pairs).zip(&mut outs) {
            o.copy_from_slice(&ordinary_pair::<BALANCED, MOST>(&c, k, p[0], p[1]));
        }
        if let ([i], [o]) = (pairs.remainder(), outs.into_remainder()) {
            *o = ordinary_pair::<BALANCED, MOST>(&c, k, *i, *i)[0];
        }
        return;
    }
    let pair = |i: usize, j: usize| {
        if BALANCED {
            balanced_pair(&c, k, i, j)
        } else {
            weighted_pair::<MOST>(&c, k, i, j)
        }
    };
    out.reserve(feasible.len());
    let mut it = feasible.chunks_exact(2);
    for p in &mut it {
        let (i, j) = (p[0], p[1]);
        match pair(i, j) {
            Some(s) => out.extend_from_slice(&s),
            None => {
                out.push(per_node(i));
                out.push(per_node(j));
            }
        }
    }
    if let [i] = *it.remainder() {
        out.push(match pair(i, i) {
            Some([s, _]) => s,
            None => per_node(i),
        });
    }
}
