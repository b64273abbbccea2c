//! The resource scorers' paired paths (`ResourceAllocationScorer::score_nodes_in`: two nodes
//! per SSE2 operation, with per-pair bounds checks, or without them when every row of the
//! snapshot's columns is ordinary, `NodeColumns::all_ordinary`, then four per AVX2 operation
//! where the CPU has it) against the scalar `score`,
//! node by node, for LeastAllocated, MostAllocated and the balanced strategy, over capacities
//! and requests at the edges: capacity 1, requests equal to the capacity, exact ratios (half,
//! whole percentages), equal cpu and memory fractions (a balanced score of exactly 100),
//! capacities about 2^43, 2^46 (the paired divide's limit, and the ordinary rows'), 2^47 and
//! 2^53, requests about 2^52 (the limit of exact sums) and 2^53, and the weighted
//! strategies' worst remainders.

use std::sync::Arc;

use ksim_api::config::ResourceSpec;
use ksim_scheduler::node_info::{NodeInfo, Snapshot};
use ksim_scheduler::plugins::node_resources_fit::{ResourceAllocationScorer, Strategy as Scoring};
use ksim_scheduler::resource::{CPU, MEMORY};
use proptest::prelude::*;

/// A capacity, from the edges and from the ordinary ranges.
fn capacity() -> impl Strategy<Value = i64> {
    prop_oneof![
        1 => Just(1i64),
        2 => 1i64..64,
        3 => 1i64..64_000,
        2 => (1i64..10_000).prop_map(|k| k * 100),
        3 => 1i64..(1 << 40),
        1 => (1i64 << 43) - 3..(1i64 << 43) + 3,
        1 => (1i64 << 46) - 3..(1i64 << 46) + 3,
        // Far above the paired paths' bounds (not so far that the scalar `× 100` overflows).
        1 => prop_oneof![(1i64 << 47) - 3..(1i64 << 47) + 3, (1i64 << 53) - 3..(1i64 << 53) + 3],
        1 => 0i64..1,
    ]
}

/// How the node's request (with the pod's) relates to its capacity `c`.
#[derive(Debug, Clone, Copy)]
enum Load {
    /// `x mod (2c + 1)`.
    Any(i64),
    /// Exactly the capacity.
    Full,
    /// `c / 2`.
    Half,
    /// `c·p / 100` (an exact percentage where 100 divides `c`).
    Percent(i64),
    /// About 2^52 (the limit of exact sums) or 2^53 (of exact amounts).
    Huge(u32, i64),
    /// Over the capacity.
    Over(i64),
}

fn load() -> impl Strategy<Value = Load> {
    prop_oneof![
        4 => any::<i64>().prop_map(Load::Any),
        2 => Just(Load::Full),
        2 => Just(Load::Half),
        3 => (0i64..=100).prop_map(Load::Percent),
        1 => (prop_oneof![Just(52u32), Just(53)], -3i64..3)
            .prop_map(|(e, d)| Load::Huge(e, d)),
        1 => (1i64..1000).prop_map(Load::Over),
    ]
}

/// The total request (node plus pod) `load` asks of capacity `c`.
fn total(load: Load, c: i64) -> i64 {
    match load {
        Load::Any(x) => x.rem_euclid(2 * c.max(1) + 1),
        Load::Full => c,
        Load::Half => c / 2,
        Load::Percent(p) => c / 100 * p + c % 100 * p / 100,
        Load::Huge(e, d) => (1i64 << e) + d,
        Load::Over(k) => c.saturating_add(k),
    }
}

/// (cpu capacity, cpu load, memory capacity, memory load, memory as the cpu fraction scaled
/// by this factor (equal fractions), if some).
type Shape = (i64, Load, i64, Load, Option<i64>);

fn shape() -> impl Strategy<Value = Shape> {
    (
        capacity(),
        load(),
        capacity(),
        load(),
        prop_oneof![3 => Just(None), 1 => (1i64..5_000).prop_map(Some)],
    )
}

/// A node of `shape` scored with a pod requesting `pod`: its requested (and non-zero
/// requested) amounts are the totals less the pod's; `ordinary`: the capacities clamped into
/// `[1, 2^46)` and the requested amounts into `[0, 2^52)` (an ordinary row).
fn node(k: usize, &(ac, lc, am, lm, scale): &Shape, pod: (i64, i64), ordinary: bool) -> NodeInfo {
    let tc = total(lc, ac);
    let (am, tm) = match scale {
        // Memory at the cpu fraction: capacity and total both scaled (kept below 2^53).
        Some(s)
            if ac.checked_mul(s).is_some_and(|x| x < 1 << 53)
                && tc.checked_mul(s).is_some_and(|x| x < 1 << 53) =>
        {
            (ac * s, tc * s)
        }
        _ => (am, total(lm, am)),
    };
    let mut node = ksim_api::Node::default();
    node.metadata.name = format!("n{k}");
    let mut n = NodeInfo::new(Arc::new(node));
    let mut requested = (tc - pod.0, tm - pod.1);
    let (mut ac, mut am) = (ac, am);
    if ordinary {
        let capacity = |x: i64| x.clamp(1, (1 << 46) - 1);
        let request = |x: i64| x.clamp(0, (1 << 52) - 1);
        (ac, am) = (capacity(ac), capacity(am));
        requested = (request(requested.0), request(requested.1));
    }
    (n.allocatable.milli_cpu, n.allocatable.memory) = (ac, am);
    (n.requested.milli_cpu, n.requested.memory) = requested;
    (n.non_zero_requested.milli_cpu, n.non_zero_requested.memory) = requested;
    n
}

/// A snapshot holding exactly `infos`, in that order.
fn snapshot_of(infos: Vec<NodeInfo>) -> Snapshot {
    let mut s = Snapshot::default();
    for info in infos {
        s.add_node(info);
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn packed_scores_are_the_scalar_scores(
        shapes in proptest::collection::vec(shape(), 1..40),
        pod in (prop_oneof![Just(0i64), 1i64..8_000], prop_oneof![Just(0i64), 1i64..(1 << 34)]),
        weight in 1i64..100,
        strategy in 0usize..4,
        use_requested in any::<bool>(),
        rotate in 0usize..40,
        ordinary in any::<bool>(),
    ) {
        // 3: Kubernetes 1.36's BalancedAllocation, scoring the improvement the pod brings.
        let improvement = strategy == 3;
        let strategy = match strategy {
            0 => Scoring::LeastAllocated,
            1 => Scoring::MostAllocated,
            _ => Scoring::Balanced,
        };
        // Equal weights: the weighted strategies' packed paths.
        let resources = vec![
            ResourceSpec { name: CPU.into(), weight },
            ResourceSpec { name: MEMORY.into(), weight },
        ];
        let plain = ResourceAllocationScorer::new(strategy, resources, use_requested);
        let scorer = plain.clone().with_improvement(improvement);
        let snapshot = snapshot_of(
            shapes.iter().enumerate().map(|(k, s)| node(k, s, pod, ordinary)).collect(),
        );
        // Clamped rows are ordinary: the path without checks.
        prop_assert!(!ordinary || snapshot.resource_columns().all_ordinary());
        let n = snapshot.nodes.len();
        // Every order of pairs (a rotated list), and a lone last node when `n` is odd.
        let feasible: Vec<usize> = (0..n).map(|k| (k + rotate) % n).collect();
        let reqs = [pod.0, pod.1];
        let mut got = Vec::new();
        prop_assert!(scorer.score_nodes_in(&snapshot, &feasible, &reqs, &mut got));
        prop_assert_eq!(got.len(), n);
        for (k, &i) in feasible.iter().enumerate() {
            let want = scorer.score(&snapshot.nodes[i], &reqs);
            prop_assert_eq!(got[k], want, "node {} {:?}", i, shapes[i]);
            if improvement {
                // 50 + (50 + withPod − withoutPod) / 2 of the 1.35 balance scores.
                let with = plain.score(&snapshot.nodes[i], &reqs);
                let without = plain.score(&snapshot.nodes[i], &[0, 0]);
                prop_assert_eq!(want, 50 + (50 + with - without) / 2);
            }
        }
        // The batch path of the same nodes.
        let refs: Vec<&NodeInfo> = feasible.iter().map(|&i| &snapshot.nodes[i]).collect();
        let mut batch = Vec::new();
        scorer.score_nodes(&refs, &reqs, &mut batch);
        prop_assert_eq!(batch, got);
    }
}

/// The weighted strategies' worst remainder: a numerator `n = 100·r` (MostAllocated) or
/// `100·(c − r)` (LeastAllocated) equal to `k·c − 1`, one below a multiple of the capacity, so
/// that the true quotient `k − 1/c` is as close below an integer as a capacity allows; for
/// capacities just under 2^43 and about 2^46 (the paired divide's limit), and ordinary ones.
fn worst(k: i64, base: i64, most: bool) -> Option<(i64, i64)> {
    // c ≡ k⁻¹ (mod 100), so that 100 divides k·c − 1.
    let inv = (1..100).find(|x| k * x % 100 == 1)?;
    let c = base - (base - inv).rem_euclid(100);
    let r = (k * c - 1) / 100;
    Some((c, if most { r } else { c - r }))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn packed_scores_at_worst_remainders(
        k in (1i64..=100).prop_filter("coprime to 100", |k| k % 2 != 0 && k % 5 != 0),
        base in prop_oneof![(1i64 << 43) - (1 << 24)..(1i64 << 43) + 200,
                            (1i64 << 46) - (1 << 24)..(1i64 << 46) + 200,
                            1000i64..(1 << 30)],
        most in any::<bool>(),
        other in (1i64..(1 << 40), 0i64..(1 << 40)),
    ) {
        let (c, r) = worst(k, base, most).expect("k is invertible mod 100");
        let strategy = if most { Scoring::MostAllocated } else { Scoring::LeastAllocated };
        let resources = vec![
            ResourceSpec { name: CPU.into(), weight: 1 },
            ResourceSpec { name: MEMORY.into(), weight: 1 },
        ];
        let scorer = ResourceAllocationScorer::new(strategy, resources, true);
        let mut nodes = Vec::new();
        // The worst case in the cpu lane and in the memory lane, of both nodes of a pair.
        for (k, (ac, rc, am, rm)) in [(c, r, other.0, other.1), (other.0, other.1, c, r)].into_iter().enumerate() {
            let mut node = ksim_api::Node::default();
            node.metadata.name = format!("n{k}");
            let mut n = NodeInfo::new(Arc::new(node));
            (n.allocatable.milli_cpu, n.allocatable.memory) = (ac, am);
            (n.requested.milli_cpu, n.requested.memory) = (rc, rm);
            nodes.push(n);
        }
        let snapshot = snapshot_of(nodes);
        // Four entries: the AVX2 path's quad where the CPU has it, else two pairs.
        let mut got = Vec::new();
        prop_assert!(scorer.score_nodes_in(&snapshot, &[0, 1, 1, 0], &[0, 0], &mut got));
        for (k, g) in got.iter().enumerate() {
            let i = [0, 1, 1, 0][k];
            prop_assert_eq!(*g, scorer.score(&snapshot.nodes[i], &[0, 0]), "node {} c {} r {}", i, c, r);
        }
    }
}
