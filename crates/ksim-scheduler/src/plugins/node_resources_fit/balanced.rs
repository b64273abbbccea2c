//! NodeResourcesBalancedAllocation's scorer (upstream `balancedResourceScorer`): the balance
//! of the requested fractions with the pod (v1.35), over any resources and over the common
//! cpu + memory pair, and v1.36's improvement score built from two of them.

use super::{cpu_memory, div2};
use crate::framework::MAX_NODE_SCORE;
use crate::node_info::NodeInfo;

/// v1.36 BalancedAllocation: `50 + (50 + withPod − withoutPod) / 2`, Go's integer division
/// (truncating toward zero), where each term is the v1.35 balance score of the node with and
/// without the pod.
#[inline(always)]
pub(crate) fn balanced_improvement(with_pod: i64, without_pod: i64) -> i64 {
    MAX_NODE_SCORE / 2 + (MAX_NODE_SCORE / 2 + with_pod - without_pod) / 2
}

/// The balanced strategy over cpu and memory.
pub(super) fn balanced_cpu_memory<const USE_REQUESTED: bool>(
    nodes: &[&NodeInfo],
    pod: [i64; 2],
    out: &mut Vec<i64>,
) {
    out.extend(nodes.iter().map(|n| {
        let (ac, rc, am, rm) = cpu_memory::<USE_REQUESTED>(n, pod);
        if ac != 0 && am != 0 {
            // `balanced_score` of two fractions, with the same float operations (the two
            // quotients in one paired divide).
            let [fc, fm] = div2([rc as f64, rm as f64], [ac as f64, am as f64]);
            let (fc, fm) = (fc.min(1.0), fm.min(1.0));
            let std = ((fc - fm) / 2.0).abs();
            ((1.0 - std) * MAX_NODE_SCORE as f64) as i64
        } else {
            balanced_score(&[rc, rm], &[ac, am])
        }
    }));
}

/// `balancedResourceScorer`: 100 × (1 − standard deviation of the requested fractions).
#[inline]
pub(super) fn balanced_score(req: &[i64], alloc: &[i64]) -> i64 {
    // Each fraction is recomputed where upstream reads it back from its slice: the same float
    // operations in the same order, with no bound on how many resources are configured.
    let fraction = |i: usize| (req[i] as f64 / alloc[i] as f64).min(1.0);
    let counted = || (0..req.len()).filter(|&i| alloc[i] != 0);
    let mut n = 0usize;
    let mut total = 0.0;
    let (mut first, mut second) = (0.0, 0.0);
    for i in counted() {
        let f = fraction(i);
        total += f;
        match n {
            0 => first = f,
            1 => second = f,
            _ => {}
        }
        n += 1;
    }
    let std = if n == 2 {
        ((first - second) / 2.0).abs()
    } else if n > 2 {
        let mean = total / n as f64;
        let mut sum = 0.0;
        for i in counted() {
            let f = fraction(i);
            sum += (f - mean) * (f - mean);
        }
        (sum / n as f64).sqrt()
    } else {
        0.0
    };
    ((1.0 - std) * MAX_NODE_SCORE as f64) as i64
}
