//! NodeResourcesFit unit tests: integer division, scorers, Filter reasons and batch paths.

use super::*;
use proptest::prelude::*;

proptest! {
    /// The float path of `int_div` is integer division wherever it is taken.
    #[test]
    fn int_div_is_integer_division(a in 0i64..(1 << 53), b in 1i64..(1 << 53)) {
        prop_assert_eq!(int_div(a, b), a / b);
        // Exact multiples and their neighbours, where rounding could cross an integer.
        let m = (a / b).max(1).min(((1i64 << 53) - 1) / b);
        for x in [m * b - 1, m * b, m * b + 1] {
            if (0..(1 << 53)).contains(&x) {
                prop_assert_eq!(int_div(x, b), x / b);
            }
        }
    }

    /// Outside `[0, 2^53)` it is plain integer division (truncation toward zero).
    #[test]
    fn int_div_outside_the_exact_range(a in i64::MIN..0, b in 1i64..1000) {
        prop_assert_eq!(int_div(a, b), a / b);
        prop_assert_eq!(int_div(i64::MAX - b, b), (i64::MAX - b) / b);
    }
}

fn scorer_node(alloc: (i64, i64), requested: (i64, i64), non_zero: (i64, i64)) -> NodeInfo {
    let mut n = NodeInfo::new(std::sync::Arc::new(ksim_api::Node::default()));
    (n.allocatable.milli_cpu, n.allocatable.memory) = alloc;
    (n.requested.milli_cpu, n.requested.memory) = requested;
    (n.non_zero_requested.milli_cpu, n.non_zero_requested.memory) = non_zero;
    n
}

proptest! {
    /// The cpu + memory loops of `score_nodes` give every node what `score` gives it, for
    /// every strategy, both request kinds, equal and unequal weights, nodes lacking a resource,
    /// capacities about the paired divide's limit, and negative requests; and from the
    /// snapshot's columns (`score_nodes_in`), with requests about the limit of exact sums.
    #[test]
    fn score_nodes_is_score_per_node(
        nodes in proptest::collection::vec(
            (prop_oneof![Just(0i64), 1i64..64_000, (1i64 << 46) - 2..(1i64 << 46) + 2],
             prop_oneof![Just(0i64), 1i64..(1 << 40), (1i64 << 46) - 2..(1i64 << 46) + 2],
             prop_oneof![0i64..64_000, -64_000i64..0],
             prop_oneof![0i64..(1 << 40), (1i64 << 52) - 3..(1i64 << 52) + 3],
             0i64..64_000,
             prop_oneof![0i64..(1 << 40), -(1i64 << 40)..0, (1i64 << 52) - 3..(1i64 << 52) + 3]),
            1..24),
        pod in (0i64..8_000, 0i64..(1 << 34)),
        weights in (1i64..100, 1i64..100),
        equal_weights in any::<bool>(),
        strategy in 0usize..4,
        use_requested in any::<bool>(),
        rotate in 0usize..24,
        skip in 0u8..2,
    ) {
        // Equal weights take a shift instead of the weighted divide.
        let weights = if equal_weights { (weights.0, weights.0) } else { weights };
        let strategy = match strategy {
            0 => super::Strategy::LeastAllocated,
            1 => super::Strategy::MostAllocated,
            2 => super::Strategy::Balanced,
            _ => super::Strategy::RequestedToCapacityRatio(vec![(0, 0), (50, 70), (100, 100)]),
        };
        let resources = vec![
            ResourceSpec { name: CPU.into(), weight: weights.0 },
            ResourceSpec { name: MEMORY.into(), weight: weights.1 },
        ];
        let scorer = ResourceAllocationScorer::new(strategy, resources, use_requested);
        let infos: Vec<NodeInfo> = nodes
            .iter()
            .map(|&(ac, am, rc, rm, zc, zm)| scorer_node((ac, am), (rc, rm), (zc, zm)))
            .collect();
        let refs: Vec<&NodeInfo> = infos.iter().collect();
        let mut out = Vec::new();
        scorer.score_nodes(&refs, &[pod.0, pod.1], &mut out);
        let each: Vec<i64> = refs.iter().map(|n| scorer.score(n, &[pod.0, pod.1])).collect();
        prop_assert_eq!(&out, &each);
        // From the snapshot's resource columns, in a rotated order with a node left out
        // (the feasible list of a sampled cycle), pairs and a lone last node alike.
        let snapshot = snapshot_of(infos);
        let n = snapshot.nodes.len();
        let feasible: Vec<usize> = (0..n).map(|k| (k + rotate) % n).skip(skip as usize).collect();
        let mut got = Vec::new();
        let columns = scorer.score_nodes_in(&snapshot, &feasible, &[pod.0, pod.1], &mut got);
        // The packed paths take the balanced strategy, and the weighted ones with equal
        // weights; the rest is left to `score_nodes`.
        let packed = match scorer.strategy {
            super::Strategy::Balanced => true,
            super::Strategy::RequestedToCapacityRatio(_) => false,
            _ => weights.0 == weights.1,
        };
        prop_assert_eq!(columns, packed);
        if columns {
            let want: Vec<i64> = feasible
                .iter()
                .map(|&i| scorer.score(&snapshot.nodes[i], &[pod.0, pod.1]))
                .collect();
            prop_assert_eq!(got, want);
        } else {
            prop_assert!(got.is_empty());
        }
    }
}

/// A snapshot holding exactly `infos` (named apart), in that order.
fn snapshot_of(infos: Vec<NodeInfo>) -> Snapshot {
    let mut s = Snapshot::default();
    for (k, mut info) in infos.into_iter().enumerate() {
        let mut node = ksim_api::Node::default();
        node.metadata.name = format!("n{k}");
        let (allocatable, flags) = (info.allocatable.clone(), info.flags());
        info.set_node(std::sync::Arc::new(node));
        // `set_node` reads the allocatable of the (empty) object: the test's stays.
        info.allocatable = allocatable;
        assert_eq!(info.flags(), flags);
        s.add_node(info);
    }
    s
}

proptest! {
    /// A rejection shared from `SHORT_OF_ONE` is the status `fits_request` builds reason
    /// by reason, once the framework has named the plugin, for random requests against
    /// random free and allocatable amounts (zero, short, exceeding, fitting; full nodes;
    /// extended requests).
    #[test]
    fn shared_rejections_are_the_built_ones(
        req in (0i64..5, 0i64..5, 0i64..5),
        alloc in (0i64..5, 0i64..5, 0i64..5, 0i64..3),
        used in (0i64..5, 0i64..5, 0i64..5),
        pods in 0usize..3,
        gpu in 0i64..2,
    ) {
        let fit = Fit {
            ignored_resources: Vec::new(),
            ignored_resource_groups: Vec::new(),
            scorer: ResourceAllocationScorer::new(super::Strategy::LeastAllocated, Vec::new(), false),
            dra_extended: false,
        };
        let mut pod = PodInfo::new(ksim_api::Pod::default());
        (pod.requests.milli_cpu, pod.requests.memory, pod.requests.ephemeral_storage) = req;
        if gpu > 0 {
            pod.requests.scalar.push(("example.com/gpu".into(), gpu));
        }
        let mut node = NodeInfo::new(std::sync::Arc::new(ksim_api::Node::default()));
        let a = &mut node.allocatable;
        (a.milli_cpu, a.memory, a.ephemeral_storage, a.allowed_pod_number) = alloc;
        let u = &mut node.requested;
        (u.milli_cpu, u.memory, u.ephemeral_storage) = used;
        for k in 0..pods {
            let mut p = ksim_api::Pod::default();
            p.metadata.uid = format!("u{k}");
            node.pods.push(std::sync::Arc::new(PodInfo::new(p)));
        }
        // The verdict without a status is the status' verdict.
        let state = CycleState::new();
        prop_assert_eq!(
            fit.passes_totals(&state, &pod, Totals::of(&node)),
            fit.filter(&state, &pod, &node).is_success()
        );
        let named = |r: FilterResult| r.map_rejection(|s| s.with_plugin(NAME));
        let got = named(fit.filter_reasons(&pod, Totals::of(&node), &[]));
        let want = named(fit.fits_request(&pod, Totals::of(&node), &[]));
        prop_assert_eq!(got, want);
    }
}

#[test]
fn int_div_edges() {
    let max = (1i64 << 53) - 1;
    assert_eq!(int_div(max, 1), max);
    assert_eq!(int_div(max, max), 1);
    assert_eq!(int_div(max - 1, max), 0);
    assert_eq!(int_div(0, 7), 0);
    // 128Gi of memory, nearly all free: the score the reference workloads see.
    let cap = 128 * 1024 * 1024 * 1024i64;
    assert_eq!(least_requested_score(1, cap), (cap - 1) * 100 / cap);
    assert_eq!(least_requested_score(cap / 100, cap), 99);
}

#[test]
fn broken_line() {
    let shape = [(0, 0), (100, 100)];
    assert_eq!(broken_linear(&shape, 50), 50);
    let shape = [(0, 100), (100, 0)];
    assert_eq!(broken_linear(&shape, 25), 75);
    assert_eq!(broken_linear(&shape, 100), 0);
}

#[test]
fn least_and_most() {
    assert_eq!(least_requested_score(25, 100), 75);
    assert_eq!(most_requested_score(25, 100), 25);
    assert_eq!(most_requested_score(250, 100), 100);
    assert_eq!(least_requested_score(250, 100), 0);
}

#[test]
fn balanced() {
    assert_eq!(balanced_score(&[6, 1], &[8, 4]), 75);
    assert_eq!(balanced_score(&[1, 1], &[2, 2]), 100);
    // Three fractions 0.5, 0.25, 1 (capped): mean 7/12, population std ≈ 0.3118 → 68.
    assert_eq!(balanced_score(&[2, 1, 9], &[4, 4, 8]), 68);
    // Resources without allocatable do not count.
    assert_eq!(balanced_score(&[6, 5, 1], &[8, 0, 4]), 75);
    // Any number of configured resources (a config may list more than a fixed buffer holds).
    let req: Vec<i64> = (1..=20).collect();
    let alloc = vec![40i64; 20];
    let s = balanced_score(&req, &alloc);
    assert!((0..=100).contains(&s), "{s}");
}

#[test]
fn broken_linear_with_a_repeated_point_takes_the_first() {
    assert_eq!(broken_linear(&[(0, 0), (50, 7), (50, 9)], 50), 7);
    assert_eq!(broken_linear(&[(0, 0), (50, 7), (50, 9)], 60), 9);
    assert_eq!(broken_linear(&[(0, 0), (100, 10)], 50), 5);
}
