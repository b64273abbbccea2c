//! Divide-free versions of the paired scoring paths of `pairs`: the hardware divide is the
//! slowest instruction of those loops (two per node per scorer), so where it is provably
//! unnecessary each lane multiplies by the reciprocal of its capacity, kept in the snapshot's
//! columns (`inv_alloc_cpu`, `inv_alloc_memory`, correctly rounded `1.0 / capacity`), and
//! gives the divide's result bit for bit; elsewhere the pair takes the divides of `pairs`.
//!
//! Notation: `u = 2^-53` (the unit roundoff); `fl(x)` is `x` rounded to the nearest double.
//! A correctly rounded operation on values whose exact result `x` is a normal double's range
//! gives `x·(1 + δ)` with `|δ| ≤ u`.

use super::pairs::{balanced_pair, exact_request, weighted_numerators, weighted_pair};
use super::*;

/// Capacities in `[1, RECIP_CAPACITY_LIMIT)` take the weighted strategies' divide-free
/// quotient ([`weighted_pair_recip`]); above it (nodes of 8 TiB of memory and more) the pair
/// takes the paired divide of [`weighted_pair`].
pub(super) const RECIP_CAPACITY_LIMIT: i64 = 1 << 43;

/// The balanced strategy's guard band: a score computed with reciprocals at least this far
/// from every integer truncates to the integer the divides' score truncates to. The two
/// differ by less than `1110·u ≈ 1.3e-13` (see [`balanced_pair_recip`]): a margin of ~10^4.
pub(super) const GUARD: f64 = 1e-9;

/// [`weighted_pair`] without divides, for lanes whose capacities are in
/// `[1, RECIP_CAPACITY_LIMIT)`; other pairs go to [`weighted_pair`].
///
/// Each lane computes `trunc(n / cap)` for the integer numerator `n` of [`weighted_pair`]
/// (exact there: `0 ≤ n ≤ 100·cap < 100·2^43 < 2^50`) and the integer capacity
/// `1 ≤ cap < 2^43`. Write `n = q·cap + ρ` with `0 ≤ ρ < cap`, `0 ≤ q ≤ 100`: the answer is
/// `q`. The lane computes `x = fl(fl(n + 1/2) · inv)` with `inv = fl(1/cap)`:
/// - `n + 1/2` is exact (a half-integer below 2^50, where doubles step by at most 2^-2);
/// - the exact `y = (n + 1/2)/cap = q + (ρ + 1/2)/cap` lies at least `1/(2·cap) > 2^-44`
///   above `q` and below `q + 1` (`ρ + 1/2 ≥ 1/2`, `cap − ρ − 1/2 ≥ 1/2`);
/// - `x = y·(1 + δ1)(1 + δ2)` (the reciprocal's and the product's rounding), so
///   `|x − y| ≤ y·(2u + u²) < 100.5 · 2.3e-16 < 2.4e-14 < 2^-44 ≈ 5.7e-14`.
///
/// So `q < x < q + 1` and `trunc(x) = q`, below 101 and so in `cvttpd`'s `i32` range. The
/// divide's `trunc(fl(n / cap))` is `q` too ([`int_div`]'s argument), and the lanes' sum and
/// shift are [`weighted_pair`]'s.
#[inline(always)]
pub(super) fn weighted_pair_recip<const MOST: bool>(
    c: &CpuMemoryColumns<'_>,
    k: &PairConstants,
    i: usize,
    j: usize,
) -> Option<[i64; 2]> {
    let (ac, rqc, am, rqm) = c.pair(i, j);
    let (rc, ok_c) = exact_request(rqc, k.pod_cpu, k.zero, k.exact_limit);
    let (rm, ok_m) = exact_request(rqm, k.pod_memory, k.zero, k.exact_limit);
    // Capacities in [1, 2^43): conversion is monotonic and exact at 1 and 2^43.
    let inside = ok_c
        .and(ok_m)
        .and(ac.ge(k.one))
        .and(ac.lt(k.recip_limit))
        .and(am.ge(k.one))
        .and(am.lt(k.recip_limit));
    if !inside.all() {
        return weighted_divide::<MOST>(c, k, i, j);
    }
    let (nc, nm) = weighted_numerators::<MOST>(k, ac, rc, am, rm);
    let (ic, im) = c.inverses(i, j);
    let qc = nc.add(k.half).mul(ic).trunc();
    let qm = nm.add(k.half).mul(im).trunc();
    Some(qc.add(qm).shr1().to_i64())
}

/// [`weighted_pair`], out of line: large capacities are rare, and keeping the divides out of
/// the hot loop keeps it small.
#[cold]
#[inline(never)]
fn weighted_divide<const MOST: bool>(
    c: &CpuMemoryColumns<'_>,
    k: &PairConstants,
    i: usize,
    j: usize,
) -> Option<[i64; 2]> {
    weighted_pair::<MOST>(c, k, i, j)
}

/// [`balanced_pair`] with reciprocals where the result is provably the same: in its bounds
/// (capacities ≥ 1, requests exact and ≥ 0) each lane computes the score `v'` from the
/// fractions `fl(requested · inv)` instead of `fl(requested / capacity)`, and keeps
/// `trunc(v')` when `v'` is more than [`GUARD`] from every integer; otherwise (equal
/// fractions, whose score is exactly 100, and any other score at or next to an integer) the
/// pair takes [`balanced_pair`]'s divides.
///
/// Why `trunc(v') = trunc(v)` for the divides' score `v` there. Let `F = r/cap` (exact). The
/// divide gives `a = F(1 + δ)`, the reciprocal `a' = F(1 + δ1)(1 + δ2)` (no underflow or
/// overflow: `1 ≤ cap < 2^63`, `r` 0 or in `[1, 2^53)`), so `|a − a'| ≤ 3.01u·F`. Capped at
/// 1: if `F > 2` both exceed 1 and both caps give 1; else the cap, 1-Lipschitz, keeps
/// `|min(a, 1) − min(a', 1)| ≤ 6.1u`. Then on fractions `f, g ∈ [0, 1]` each path computes
/// `fl(fl(1 − |fl(f − g)|/2) · 100)` (the halving and `abs` exact), which is within
/// `100(u/2 + u) + 100u = 250u` of the exact `100(1 − |f − g|/2)`; that exact function moves
/// by at most `100·(6.1u + 6.1u)/2 = 610u` between the two paths' fractions. So
/// `|v − v'| ≤ 2·250u + 610u = 1110u < 1.3e-13 < GUARD`: with `t = trunc(v')` and
/// `t + GUARD < v' < t + 1 − GUARD`, `v` lies strictly between `t` and `t + 1` too. The test
/// reads `v' − t` exactly (both in `[49, 101]`, `t ≥ v'/2`: Sterbenz).
#[inline(always)]
pub(super) fn balanced_pair_recip(
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
    let (ic, im) = c.inverses(i, j);
    let (fc, fm) = (rc.mul(ic).min(k.one), rm.mul(im).min(k.one));
    let std = fc.sub(fm).mul(k.half).abs();
    let v = k.one.sub(std).mul(k.max);
    let t = v.trunc();
    let frac = v.sub(t.to_f64());
    if frac.gt(k.guard).and(frac.lt(k.guard_hi)).all() {
        Some(t.to_i64())
    } else {
        balanced_divide(c, k, i, j)
    }
}

/// [`balanced_pair`], out of line (the guard band's fallback; see [`balanced_pair_recip`]).
#[cold]
#[inline(never)]
fn balanced_divide(
    c: &CpuMemoryColumns<'_>,
    k: &PairConstants,
    i: usize,
    j: usize,
) -> Option<[i64; 2]> {
    balanced_pair(c, k, i, j)
}
