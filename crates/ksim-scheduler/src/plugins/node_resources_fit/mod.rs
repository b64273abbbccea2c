//! `NodeResourcesFit` (upstream `noderesources.Fit`): the pod's requests must fit the node's
//! allocatable minus what is requested; scoring by LeastAllocated, MostAllocated or
//! RequestedToCapacityRatio over the configured resources and weights.
//!
//! `pairs` scores two nodes at a time from the snapshot's resource columns with the two-lane
//! values of `lanes` (`quads`: four at a time where the CPU has AVX2); `tests` holds the unit
//! tests.

use std::sync::Arc;

use ksim_api::config::{decode_args, NodeResourcesFitArgs, ResourceSpec};

use crate::framework::{
    ClusterEventKind, ClusterEventObjects, CycleState, EnqueueExtensions, FactoryArgs,
    FilterPlugin, FilterResult, Plugin, PluginRef, PreFilterPlugin, PreFilterResult,
    PreScorePlugin, QueueingHint, Reasons, ScorePlugin, Status, MAX_NODE_SCORE,
};
use crate::node_info::{NodeFlags, NodeInfo, Snapshot};
use crate::pod_info::PodInfo;
use crate::resource::{
    is_extended_resource_name, is_scalar_resource_name, CPU, EPHEMERAL_STORAGE, MEMORY,
};

mod balanced;
mod dra_extended;
mod hints;
mod lanes;
mod pairs;
mod quads;
mod score_state;

pub(crate) use balanced::balanced_improvement;
use balanced::{balanced_cpu_memory, balanced_score};
use lanes::F2;
use pairs::*;
pub(crate) use score_state::PodRequests;

pub const NAME: &str = "NodeResourcesFit";

/// How a node's allocation turns into a score.
#[derive(Debug, Clone)]
pub enum Strategy {
    LeastAllocated,
    MostAllocated,
    /// Broken-line shape: (utilization 0..100, score 0..100).
    RequestedToCapacityRatio(Vec<(i64, i64)>),
    /// NodeResourcesBalancedAllocation's standard-deviation scorer.
    Balanced,
}

/// A configured resource name, resolved once to the field of [`crate::resource::Resource`] it
/// reads, so that scoring a node compares no strings for the core resources.
#[derive(Debug, Clone, PartialEq, Eq)]
enum ResourceKey {
    Cpu,
    Memory,
    EphemeralStorage,
    /// Any other name, read from the scalar resources; `scalar` caches
    /// `is_scalar_resource_name`.
    Other {
        name: String,
        scalar: bool,
    },
}

impl ResourceKey {
    fn of(name: &str) -> ResourceKey {
        match name {
            CPU => ResourceKey::Cpu,
            MEMORY => ResourceKey::Memory,
            EPHEMERAL_STORAGE => ResourceKey::EphemeralStorage,
            other => ResourceKey::Other {
                name: other.to_string(),
                scalar: is_scalar_resource_name(other),
            },
        }
    }
}

/// upstream `resourceAllocationScorer`.
#[derive(Debug, Clone)]
pub struct ResourceAllocationScorer {
    strategy: Strategy,
    resources: Vec<ResourceSpec>,
    /// `resources[i].name` resolved.
    keys: Vec<ResourceKey>,
    /// Use the node's Requested instead of NonZeroRequested, and the pod's plain requests.
    use_requested: bool,
    /// `Strategy::Balanced` only: score the improvement the pod brings (v1.36,
    /// [`balanced_improvement`]) instead of the balance with the pod (v1.35).
    improvement: bool,
}

impl ResourceAllocationScorer {
    pub fn new(
        strategy: Strategy,
        resources: Vec<ResourceSpec>,
        use_requested: bool,
    ) -> ResourceAllocationScorer {
        let keys = resources.iter().map(|r| ResourceKey::of(&r.name)).collect();
        ResourceAllocationScorer {
            strategy,
            resources,
            keys,
            use_requested,
            improvement: false,
        }
    }

    /// With `Strategy::Balanced`: score the improvement the pod brings (v1.36) when
    /// `improvement`, else the balance with the pod (v1.35). No effect on other strategies.
    pub fn with_improvement(mut self, improvement: bool) -> ResourceAllocationScorer {
        self.improvement = improvement && matches!(self.strategy, Strategy::Balanced);
        self
    }

    /// The pod's request for each configured resource (`calculatePodResourceRequestList`).
    pub fn pod_requests(&self, pod: &PodInfo) -> Vec<i64> {
        let r = if self.use_requested {
            &pod.requests
        } else {
            &pod.non_zero_requests
        };
        self.resources.iter().map(|res| r.get(&res.name)).collect()
    }

    /// `resourceAllocationScorer.score`.
    pub fn score(&self, node: &NodeInfo, pod_requests: &[i64]) -> i64 {
        // The weighted strategies need no per-resource arrays: one pass.
        let f: fn(i64, i64) -> i64 = match &self.strategy {
            Strategy::LeastAllocated => least_requested_score,
            Strategy::MostAllocated => most_requested_score,
            Strategy::RequestedToCapacityRatio(_) | Strategy::Balanced => {
                return self.score_from_arrays(node, pod_requests, self.improvement)
            }
        };
        let (mut score, mut weights) = (0i64, 0i64);
        for (i, key) in self.keys.iter().enumerate().take(16) {
            let (alloc, req) = self.allocatable_request(node, key, pod_requests[i]);
            if alloc == 0 {
                continue;
            }
            let w = self.resources[i].weight;
            score += f(req, alloc) * w;
            weights += w;
        }
        if weights == 0 {
            0
        } else {
            int_div(score, weights)
        }
    }

    /// The strategies that read every resource's fraction at once.
    fn score_from_arrays(&self, node: &NodeInfo, pod_requests: &[i64], improvement: bool) -> i64 {
        // At most a handful of resources: stack arrays avoid per-node allocation.
        let mut requested = [0i64; 16];
        let mut allocatable = [0i64; 16];
        for (i, key) in self.keys.iter().enumerate().take(16) {
            let (alloc, req) = self.allocatable_request(node, key, pod_requests[i]);
            if alloc == 0 {
                continue;
            }
            allocatable[i] = alloc;
            requested[i] = req;
        }
        let n = self.resources.len().min(16);
        let (req, alloc) = (&requested[..n], &allocatable[..n]);
        match &self.strategy {
            Strategy::RequestedToCapacityRatio(shape) => self.rtcr(req, alloc, shape),
            // The weighted strategies are scored in one pass by `score`.
            _ if improvement => {
                // The same resources counted, the node's requests without the pod's.
                let mut without = [0i64; 16];
                for i in 0..n {
                    if alloc[i] != 0 {
                        without[i] = req[i] - pod_requests[i];
                    }
                }
                balanced_improvement(
                    balanced_score(req, alloc),
                    balanced_score(&without[..n], alloc),
                )
            }
            _ => balanced_score(req, alloc),
        }
    }

    /// [`score`](Self::score) for many nodes. The configuration is resolved once: for the
    /// common cpu + memory pair (the default of both scorers) each node is two field reads and
    /// the strategy's arithmetic, with no per-resource dispatch. Same results as `score`.
    pub fn score_nodes(&self, nodes: &[&NodeInfo], pod_requests: &[i64], out: &mut Vec<i64>) {
        if self.keys != [ResourceKey::Cpu, ResourceKey::Memory] || pod_requests.len() != 2 {
            out.extend(nodes.iter().map(|n| self.score(n, pod_requests)));
            return;
        }
        let pod = [pod_requests[0], pod_requests[1]];
        let weights = [self.resources[0].weight, self.resources[1].weight];
        match (&self.strategy, self.use_requested) {
            (Strategy::LeastAllocated, true) => weighted_cpu_memory::<true>(
                nodes,
                pod,
                weights,
                least_requested_score,
                least_numerator,
                out,
            ),
            (Strategy::LeastAllocated, false) => weighted_cpu_memory::<false>(
                nodes,
                pod,
                weights,
                least_requested_score,
                least_numerator,
                out,
            ),
            (Strategy::MostAllocated, true) => weighted_cpu_memory::<true>(
                nodes,
                pod,
                weights,
                most_requested_score,
                most_numerator,
                out,
            ),
            (Strategy::MostAllocated, false) => weighted_cpu_memory::<false>(
                nodes,
                pod,
                weights,
                most_requested_score,
                most_numerator,
                out,
            ),
            (Strategy::Balanced, use_requested) => {
                let balanced = if use_requested {
                    balanced_cpu_memory::<true>
                } else {
                    balanced_cpu_memory::<false>
                };
                let start = out.len();
                balanced(nodes, pod, out);
                if self.improvement {
                    let mut without = Vec::with_capacity(nodes.len());
                    balanced(nodes, [0, 0], &mut without);
                    for (o, w) in out[start..].iter_mut().zip(without) {
                        *o = balanced_improvement(*o, w);
                    }
                }
            }
            (Strategy::RequestedToCapacityRatio(_), _) => {
                out.extend(nodes.iter().map(|n| self.score(n, pod_requests)))
            }
        }
    }

    /// [`score_nodes`](Self::score_nodes) of `snapshot.nodes[feasible[k]]`, read from the
    /// snapshot's resource columns: for the cpu + memory pair (equal weights for the weighted
    /// strategies), two nodes at a time, one node per lane of the packed float operations
    /// ([`F2`]), with the scalar loops' operations lane by lane (so the same scores bit for
    /// bit). Returns false, having written nothing, for any other configuration or a pod
    /// request out of the packed paths' bounds: the caller then scores the nodes themselves.
    pub fn score_nodes_in(
        &self,
        snapshot: &Snapshot,
        feasible: &[usize],
        pod_requests: &[i64],
        out: &mut Vec<i64>,
    ) -> bool {
        if self.keys != [ResourceKey::Cpu, ResourceKey::Memory] || pod_requests.len() != 2 {
            return false;
        }
        let c = snapshot.resource_columns();
        if c.len() != snapshot.nodes.len() {
            return false;
        }
        let (requested_cpu, requested_memory) = if self.use_requested {
            (&c.requested_cpu, &c.requested_memory)
        } else {
            (&c.non_zero_cpu, &c.non_zero_memory)
        };
        // All cut to one length, so that one bounds check per node covers every column.
        let n = c.len();
        let cols = CpuMemoryColumns {
            alloc_cpu: &c.alloc_cpu[..n],
            alloc_memory: &c.alloc_memory[..n],
            requested_cpu: &requested_cpu[..n],
            requested_memory: &requested_memory[..n],
            ordinary: c.all_ordinary(),
        };
        let pod = [pod_requests[0], pod_requests[1]];
        // A node outside the packed path's bounds is scored as `score` scores it (every
        // node's columns are checked below in debug builds); with the improvement, the
        // balance with the pod first, then without it.
        let per_node = |i: usize| self.balance_or_score(&snapshot.nodes[i], pod_requests);
        let [w_cpu, w_mem] = [self.resources[0].weight, self.resources[1].weight];
        let equal_weights = w_cpu == w_mem && (1..=1 << 20).contains(&w_cpu);
        match (&self.strategy, PairConstants::new(pod)) {
            // Other weights, or requests the packed paths do not take: `score_nodes`.
            (Strategy::RequestedToCapacityRatio(_), _) | (_, None) => return false,
            (Strategy::LeastAllocated | Strategy::MostAllocated, _) if !equal_weights => {
                return false
            }
            (Strategy::LeastAllocated, Some(k)) => {
                score_pairs::<false, false>(cols, &k, feasible, per_node, out)
            }
            (Strategy::MostAllocated, Some(k)) => {
                score_pairs::<false, true>(cols, &k, feasible, per_node, out)
            }
            (Strategy::Balanced, Some(k)) => {
                let start = out.len();
                score_pairs::<true, false>(cols, &k, feasible, per_node, out);
                if self.improvement {
                    let zero = [0i64; 2];
                    let per_node_without =
                        |i: usize| self.balance_or_score(&snapshot.nodes[i], &zero);
                    let mut without = Vec::with_capacity(feasible.len());
                    match PairConstants::new(zero) {
                        Some(k0) => score_pairs::<true, false>(
                            cols,
                            &k0,
                            feasible,
                            per_node_without,
                            &mut without,
                        ),
                        None => without.extend(feasible.iter().map(|&i| per_node_without(i))),
                    }
                    for (o, w) in out[start..].iter_mut().zip(without) {
                        *o = balanced_improvement(*o, w);
                    }
                }
            }
        }
        if cfg!(debug_assertions) {
            for &i in feasible {
                debug_assert!(
                    c.matches(i, &snapshot.nodes[i]),
                    "resource columns out of step with the nodes"
                );
            }
        }
        true
    }

    /// [`score`](Self::score), except that with the improvement on it is the plain balance
    /// with `pod_requests` (the packed paths' per-node fallback, for each of the two terms).
    fn balance_or_score(&self, node: &NodeInfo, pod_requests: &[i64]) -> i64 {
        if self.improvement {
            self.score_from_arrays(node, pod_requests, false)
        } else {
            self.score(node, pod_requests)
        }
    }

    fn allocatable_request(
        &self,
        node: &NodeInfo,
        key: &ResourceKey,
        pod_request: i64,
    ) -> (i64, i64) {
        let requested = if self.use_requested {
            &node.requested
        } else {
            &node.non_zero_requested
        };
        match key {
            ResourceKey::Cpu => (
                node.allocatable.milli_cpu,
                requested.milli_cpu + pod_request,
            ),
            ResourceKey::Memory => (node.allocatable.memory, requested.memory + pod_request),
            ResourceKey::EphemeralStorage => (
                node.allocatable.ephemeral_storage,
                node.requested.ephemeral_storage + pod_request,
            ),
            ResourceKey::Other { name, scalar } => {
                if pod_request == 0 && *scalar {
                    return (0, 0);
                }
                if node.allocatable.scalar.iter().any(|(n, _)| n == name) {
                    (
                        node.allocatable.scalar(name),
                        node.requested.scalar(name) + pod_request,
                    )
                } else {
                    (0, 0)
                }
            }
        }
    }

    fn rtcr(&self, req: &[i64], alloc: &[i64], shape: &[(i64, i64)]) -> i64 {
        let f = |requested: i64, capacity: i64| -> i64 {
            if capacity == 0 || requested > capacity {
                broken_linear(shape, 100)
            } else {
                broken_linear(shape, requested * 100 / capacity)
            }
        };
        let (mut score, mut weights) = (0i64, 0i64);
        for i in 0..req.len() {
            if alloc[i] == 0 {
                continue;
            }
            let w = self.resources[i].weight;
            let s = f(req[i], alloc[i]);
            if s > 0 {
                score += s * w;
                weights += w;
            }
        }
        if weights == 0 {
            0
        } else {
            (score as f64 / weights as f64).round() as i64
        }
    }
}

/// (allocatable cpu, requested cpu with the pod, allocatable memory, requested memory) of a
/// node: the node's Requested (`USE_REQUESTED`) or NonZeroRequested.
#[inline(always)]
fn cpu_memory<const USE_REQUESTED: bool>(n: &NodeInfo, pod: [i64; 2]) -> (i64, i64, i64, i64) {
    let r = if USE_REQUESTED {
        &n.requested
    } else {
        &n.non_zero_requested
    };
    (
        n.allocatable.milli_cpu,
        r.milli_cpu + pod[0],
        n.allocatable.memory,
        r.memory + pod[1],
    )
}

/// Capacities below this (and requests from 0) keep `requested × MAX_NODE_SCORE` of the
/// weighted strategies' numerators in `[0, 2^53)`, the range where [`int_div`] divides in
/// floating point: there two nodes' resources share one paired divide ([`div2`]).
const PAIRED_CAPACITY_LIMIT: i64 = 1 << 46;

/// The dividend of [`least_requested_score`] for `0 < capacity < PAIRED_CAPACITY_LIMIT` and
/// `requested >= 0` (0 when the request exceeds the capacity: `0 / capacity` is that 0).
#[inline(always)]
fn least_numerator(requested: i64, capacity: i64) -> i64 {
    if requested > capacity {
        0
    } else {
        (capacity - requested) * MAX_NODE_SCORE
    }
}

/// The dividend of [`most_requested_score`], under the same bounds as [`least_numerator`].
#[inline(always)]
fn most_numerator(requested: i64, capacity: i64) -> i64 {
    requested.min(capacity) * MAX_NODE_SCORE
}

/// `[a[0] / b[0], a[1] / b[1]]` in one packed divide where the target has one (SSE2 on
/// x86-64): IEEE division is correctly rounded lane by lane, so the quotients are the scalar
/// ones bit for bit. The divide is the slowest instruction of the scoring loops; pairing a
/// node's cpu and memory fractions halves their count.
#[inline(always)]
fn div2(a: [f64; 2], b: [f64; 2]) -> [f64; 2] {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse2"))]
    // SAFETY: these intrinsics need SSE2 only, which this build targets (the cfg above); they
    // take and return values, no pointers.
    unsafe {
        use std::arch::x86_64::{_mm_cvtsd_f64, _mm_div_pd, _mm_set_pd, _mm_unpackhi_pd};
        let q = _mm_div_pd(_mm_set_pd(a[1], a[0]), _mm_set_pd(b[1], b[0]));
        [_mm_cvtsd_f64(q), _mm_cvtsd_f64(_mm_unpackhi_pd(q, q))]
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse2")))]
    {
        [a[0] / b[0], a[1] / b[1]]
    }
}

/// The weighted strategies over cpu and memory: each resource with allocatable capacity adds
/// `f × weight`, and the node scores the sum over the weights counted. `numerator` is `f`'s
/// dividend under [`PAIRED_CAPACITY_LIMIT`] ([`least_numerator`] or [`most_numerator`]).
#[inline(always)]
fn weighted_cpu_memory<const USE_REQUESTED: bool>(
    nodes: &[&NodeInfo],
    pod: [i64; 2],
    [w_cpu, w_mem]: [i64; 2],
    f: impl Fn(i64, i64) -> i64,
    numerator: impl Fn(i64, i64) -> i64,
    out: &mut Vec<i64>,
) {
    let w_both = w_cpu + w_mem;
    // Equal weights w > 0: (a·w + b·w) / 2w is (a + b) / 2, a shift for the scores' a, b >= 0.
    let equal_weights = w_cpu == w_mem && (1..=1 << 20).contains(&w_cpu);
    // `extend` over the slice writes each score in place, with no capacity test per node.
    out.extend(nodes.iter().map(|n| {
        let (ac, rc, am, rm) = cpu_memory::<USE_REQUESTED>(n, pod);
        if (1..PAIRED_CAPACITY_LIMIT).contains(&ac)
            && (1..PAIRED_CAPACITY_LIMIT).contains(&am)
            && rc >= 0
            && rm >= 0
            && w_both != 0
        {
            // Every real node: both fractions in one divide, `int_div`'s float quotients.
            let [qc, qm] = div2(
                [numerator(rc, ac) as f64, numerator(rm, am) as f64],
                [ac as f64, am as f64],
            );
            let (sc, sm) = (qc as i64, qm as i64);
            if equal_weights {
                (sc + sm) >> 1
            } else {
                int_div(sc * w_cpu + sm * w_mem, w_both)
            }
        } else if ac != 0 && am != 0 && w_both != 0 {
            // Both resources count: no per-resource branches.
            int_div(f(rc, ac) * w_cpu + f(rm, am) * w_mem, w_both)
        } else {
            let (mut score, mut weights) = (0i64, 0i64);
            if ac != 0 {
                score += f(rc, ac) * w_cpu;
                weights += w_cpu;
            }
            if am != 0 {
                score += f(rm, am) * w_mem;
                weights += w_mem;
            }
            if weights == 0 {
                0
            } else {
                int_div(score, weights)
            }
        }
    }));
}

#[inline]
fn least_requested_score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 || requested > capacity {
        return 0;
    }
    int_div((capacity - requested) * MAX_NODE_SCORE, capacity)
}

#[inline]
fn most_requested_score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 {
        return 0;
    }
    int_div(requested.min(capacity) * MAX_NODE_SCORE, capacity)
}

/// `a / b` (b ≠ 0) with Go's and Rust's integer semantics. The integer divide is the slowest
/// instruction of the scoring loop, so operands in `[0, 2^53)` go through a float divide, which
/// is exact there: the true quotient is an integer (then represented exactly) or lies at least
/// `1/b` below the next integer, more than half an ulp of a quotient of `a < 2^53`, so rounding
/// never reaches that integer and truncation gives the integer quotient.
#[inline]
fn int_div(a: i64, b: i64) -> i64 {
    const EXACT: i64 = 1 << 53;
    if (0..EXACT).contains(&a) && (1..EXACT).contains(&b) {
        (a as f64 / b as f64) as i64
    } else {
        a / b
    }
}

/// `helper.BuildBrokenLinearFunction`.
fn broken_linear(shape: &[(i64, i64)], p: i64) -> i64 {
    for i in 0..shape.len() {
        if p <= shape[i].0 {
            if i == 0 {
                return shape[0].1;
            }
            let (u0, s0) = shape[i - 1];
            let (u1, s1) = shape[i];
            // u1 > u0 here, whatever the shape: p <= u0 would have matched at i - 1.
            return s0 + (s1 - s0) * (p - u0) / (u1 - u0);
        }
    }
    shape.last().map(|s| s.1).unwrap_or(0)
}

pub struct Fit {
    ignored_resources: Vec<String>,
    ignored_resource_groups: Vec<String>,
    scorer: ResourceAllocationScorer,
    /// DRAExtendedResource: extended resources a DeviceClass backs are left to
    /// DynamicResources on nodes that do not advertise them ([`dra_extended`]).
    dra_extended: bool,
}

pub fn new(a: &FactoryArgs<'_>) -> Result<PluginRef, String> {
    let args: NodeResourcesFitArgs = decode_args::<NodeResourcesFitArgs>(NAME, a.args)?.defaulted();
    let strategy = match args.scoring_strategy.type_.as_str() {
        "LeastAllocated" => Strategy::LeastAllocated,
        "MostAllocated" => Strategy::MostAllocated,
        "RequestedToCapacityRatio" => {
            let shape = args
                .scoring_strategy
                .requested_to_capacity_ratio
                .as_ref()
                .map(|r| r.shape.clone())
                .unwrap_or_default();
            if shape.is_empty() {
                return Err("scoringStrategy.requestedToCapacityRatio.shape: at least one point is required".into());
            }
            // Shape scores are 0..10 in the config; scale to 0..100.
            Strategy::RequestedToCapacityRatio(
                shape
                    .iter()
                    .map(|p| (p.utilization as i64, p.score as i64 * (MAX_NODE_SCORE / 10)))
                    .collect(),
            )
        }
        other => {
            return Err(format!(
                "scoringStrategy.type: unsupported value {other:?} (LeastAllocated, MostAllocated or RequestedToCapacityRatio)"
            ))
        }
    };
    if args.scoring_strategy.resources.len() > 16 {
        return Err("scoringStrategy.resources: at most 16 resources are supported".into());
    }
    Ok(Arc::new(Fit {
        ignored_resources: args.ignored_resources,
        ignored_resource_groups: args.ignored_resource_groups,
        scorer: ResourceAllocationScorer::new(strategy, args.scoring_strategy.resources, false),
        dra_extended: a.features.enable_dra_extended_resource,
    }))
}

impl Plugin for Fit {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        Some(self)
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
    fn as_enqueue_extensions(&self) -> Option<&dyn EnqueueExtensions> {
        Some(self)
    }
}

impl PreFilterPlugin for Fit {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        // The pod's requests are precomputed in PodInfo. What is stored is whether any of its
        // extended (scalar) requests is checked at all, decided once instead of per node.
        if !pod.requests.scalar.is_empty() {
            let checks_scalar = pod
                .requests
                .scalar
                .iter()
                .any(|(name, q)| *q != 0 && !self.ignored(name));
            let dra_backed = match self.dra_extended {
                true => dra_extended::backed(pod, snapshot),
                false => Vec::new(),
            };
            let s = PreFilterState {
                checks_scalar,
                dra_backed,
            };
            state.write(PRE_FILTER_KEY, s);
        }
        (None, Status::success())
    }
}

/// What Filter needs of PreFilter: whether a scalar request is checked against the nodes
/// (false when every one is zero or ignored by `ignoredResources` / `ignoredResourceGroups`).
#[derive(Clone)]
struct PreFilterState {
    checks_scalar: bool,
    /// DRAExtendedResource: the pod's requests a DeviceClass backs ([`dra_extended::backed`]).
    dra_backed: Vec<String>,
}

const PRE_FILTER_KEY: &str = "PreFilterNodeResourcesFit";

impl Fit {
    fn ignored(&self, name: &str) -> bool {
        if !is_extended_resource_name(name) {
            return false;
        }
        if self.ignored_resources.iter().any(|r| r == name) {
            return true;
        }
        let prefix = name.split('/').next().unwrap_or("");
        self.ignored_resource_groups.iter().any(|g| g == prefix)
    }
}

/// What Filter reads of a node: its allocatable, its requested totals and its pod count. A
/// node's own ([`Totals::of`]), or the totals a preemption dry run would leave on it after
/// removing pods ([`FilterPlugin::passes_with_totals`]): one verdict for both.
#[derive(Clone, Copy)]
struct Totals<'a> {
    alloc: &'a crate::resource::Resource,
    used: &'a crate::resource::Resource,
    pods: usize,
}

impl<'a> Totals<'a> {
    #[inline(always)]
    fn of(node: &'a NodeInfo) -> Totals<'a> {
        Totals {
            alloc: &node.allocatable,
            used: &node.requested,
            pods: node.pods.len(),
        }
    }
}

/// The common verdict of Filter, with nothing to build: room for one more pod and for each
/// core request (the caller checks that the pod requests no extended resource).
#[inline(always)]
fn fits_core(req: &crate::resource::Resource, t: Totals<'_>) -> bool {
    let (alloc, used) = (t.alloc, t.used);
    (t.pods as i64) < alloc.allowed_pod_number
        && (req.milli_cpu <= 0 || req.milli_cpu <= alloc.milli_cpu - used.milli_cpu)
        && (req.memory <= 0 || req.memory <= alloc.memory - used.memory)
        && (req.ephemeral_storage <= 0
            || req.ephemeral_storage <= alloc.ephemeral_storage - used.ephemeral_storage)
}

impl FilterPlugin for Fit {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> FilterResult {
        self.filter_totals(state, pod, Totals::of(node))
    }

    /// Filter reads a node's allocatable, requested totals and pod count, nothing else.
    fn judges_totals(&self) -> bool {
        true
    }

    /// The verdict of [`filter`](FilterPlugin::filter) on the node's totals replaced: the
    /// plugin reads nothing else of a node.
    fn passes_with_totals(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
        requested: &crate::resource::Resource,
        num_pods: usize,
    ) -> Option<bool> {
        let t = Totals {
            alloc: &node.allocatable,
            used: requested,
            pods: num_pods,
        };
        Some(self.passes_totals(state, pod, t))
    }

    fn has_leading_passes(&self) -> bool {
        true
    }

    /// `leading_passes` over the snapshot's resource columns: per node, five comparisons of
    /// plain numbers (flags, room for a pod, free cpu, memory and ephemeral storage) taken
    /// eight nodes at a time with no branch between them.
    fn leading_passes_in(
        &self,
        _: &CycleState,
        pod: &PodInfo,
        snapshot: &Snapshot,
        from: usize,
        to: usize,
        stop: NodeFlags,
        limit: usize,
    ) -> Option<usize> {
        let req = &pod.requests;
        if !req.scalar.is_empty() {
            return Some(0);
        }
        let c = snapshot.resource_columns();
        let to = to.min(c.len()).min(from.saturating_add(limit));
        if from >= to {
            return Some(0);
        }
        // `q <= 0 || q <= free` is `free >= need(q)`.
        let need = |q: i64| if q > 0 { q } else { i64::MIN };
        let (tc, tm, te) = (
            need(req.milli_cpu),
            need(req.memory),
            need(req.ephemeral_storage),
        );
        let flags = &c.flags[from..to];
        let pods = &c.free_pods[from..to];
        let (cpu, mem) = (&c.free_cpu[from..to], &c.free_memory[from..to]);
        let eph = &c.free_ephemeral_storage[from..to];
        // `fits_core` and the stop flags, as non-short-circuit tests.
        #[inline(always)]
        fn passes(
            f: NodeFlags,
            stop: NodeFlags,
            [pods, cpu, mem, eph]: [i64; 4],
            [tc, tm, te]: [i64; 3],
        ) -> bool {
            !f.intersects(stop) & (pods > 0) & (cpu >= tc) & (mem >= tm) & (eph >= te)
        }
        let t = [tc, tm, te];
        // Eight nodes per test, no branch between them.
        const W: usize = 8;
        let mut k = 0;
        for ((((f, p), c), m), e) in flags
            .chunks_exact(W)
            .zip(pods.chunks_exact(W))
            .zip(cpu.chunks_exact(W))
            .zip(mem.chunks_exact(W))
            .zip(eph.chunks_exact(W))
        {
            let mut all = true;
            for j in 0..W {
                all &= passes(f[j], stop, [p[j], c[j], m[j], e[j]], t);
            }
            if !all {
                break;
            }
            k += W;
        }
        while k < flags.len()
            && k < pods.len()
            && k < cpu.len()
            && k < mem.len()
            && k < eph.len()
            && passes(flags[k], stop, [pods[k], cpu[k], mem[k], eph[k]], t)
        {
            k += 1;
        }
        debug_assert!(
            (from..(from + k + 1).min(to)).all(|i| c.matches(i, &snapshot.nodes[i])),
            "resource columns out of step with the nodes"
        );
        Some(k)
    }

    /// The common verdict over a run of nodes: one tight loop, stopping at the first node it
    /// does not pass at once (which `filter` then judges in full).
    fn leading_passes(
        &self,
        _: &CycleState,
        pod: &PodInfo,
        nodes: &[NodeInfo],
        stop: NodeFlags,
        limit: usize,
    ) -> usize {
        let req = &pod.requests;
        if !req.scalar.is_empty() {
            return 0;
        }
        let nodes = &nodes[..limit.min(nodes.len())];
        nodes
            .iter()
            .position(|n| n.flags().intersects(stop) || !fits_core(req, Totals::of(n)))
            .unwrap_or(nodes.len())
    }

    /// The usual rejection over a run of nodes (a full cluster, a pod that must preempt): the
    /// nodes `filter` rejects with the same shared shortage as the first (see
    /// [`Fit::filter_reasons`]), in one tight loop.
    fn leading_rejections(
        &self,
        _: &CycleState,
        pod: &PodInfo,
        nodes: &[NodeInfo],
        stop: NodeFlags,
        limit: usize,
    ) -> (usize, Option<&'static Status>) {
        let req = &pod.requests;
        if !req.scalar.is_empty() {
            return (0, None);
        }
        let nodes = &nodes[..limit.min(nodes.len())];
        let Some(first) = nodes.first() else {
            return (0, None);
        };
        if first.flags().intersects(stop) {
            return (0, None);
        }
        let Some(s) = short_of_one(req, Totals::of(first)) else {
            return (0, None);
        };
        let k = 1 + nodes[1..]
            .iter()
            .position(|n| {
                n.flags().intersects(stop)
                    || !short_of_one(req, Totals::of(n)).is_some_and(|t| std::ptr::eq(t, s))
            })
            .unwrap_or(nodes.len() - 1);
        (k, Some(s))
    }
}

impl Fit {
    /// Filter on a node's totals (its own, or those a dry run would leave).
    #[inline(always)]
    fn filter_totals(&self, state: &CycleState, pod: &PodInfo, t: Totals<'_>) -> FilterResult {
        // The common verdict first; anything else takes the full check below.
        if pod.requests.scalar.is_empty() && fits_core(&pod.requests, t) {
            return FilterResult::PASS;
        }
        self.filter_slow(state, pod, t)
    }

    /// Whether [`filter_totals`](Self::filter_totals) passes, with no status built for the
    /// usual rejection: without extended requests the common verdict is the whole verdict
    /// (`filter_slow` then rejects every node `fits_core` fails).
    #[inline(always)]
    fn passes_totals(&self, state: &CycleState, pod: &PodInfo, t: Totals<'_>) -> bool {
        if pod.requests.scalar.is_empty() {
            return fits_core(&pod.requests, t);
        }
        self.filter_slow(state, pod, t).is_success()
    }

    /// The verdict when the common one did not pass: a pod whose extended requests are all
    /// zero or ignored (PreFilter found none to check) passes on room and core requests alone;
    /// anything else takes the full check.
    #[cold]
    #[inline(never)]
    fn filter_slow(&self, state: &CycleState, pod: &PodInfo, t: Totals<'_>) -> FilterResult {
        let req = &pod.requests;
        let pre = state.read::<PreFilterState>(PRE_FILTER_KEY);
        let no_scalar_check = !req.scalar.is_empty() && pre.is_some_and(|s| !s.checks_scalar);
        if no_scalar_check && fits_core(req, t) {
            return FilterResult::PASS;
        }
        self.filter_reasons(pod, t, pre.map_or(&[][..], |s| &s.dra_backed))
    }

    /// `fitsRequest`: every insufficient resource, in upstream's order.
    #[cold]
    #[inline(never)]
    fn filter_reasons(&self, pod: &PodInfo, t: Totals<'_>, dra: &[String]) -> FilterResult {
        let req = &pod.requests;
        // The usual rejection (a full cluster, a pod that must preempt): room for one more pod,
        // no extended requests, short of exactly one core resource. Its status is one of six
        // built once, so rejecting every node of a cycle allocates nothing.
        if req.scalar.is_empty() {
            if let Some(s) = short_of_one(req, t) {
                return FilterResult::shared(s);
            }
        }
        self.fits_request(pod, t, dra)
    }

    /// `fitsRequest` built reason by reason (what [`Fit::filter_reasons`] shares when only one
    /// core resource is short).
    /// `dra`: the requests a DeviceClass backs, skipped on a node without allocatable of them
    /// (`shouldDelegateResourceToDRA`).
    fn fits_request(&self, pod: &PodInfo, t: Totals<'_>, dra: &[String]) -> FilterResult {
        let req = &pod.requests;
        let (alloc, used) = (t.alloc, t.used);
        // One reason is kept inline: a node short of one resource allocates nothing here.
        let mut reasons = Reasons::new();
        let mut unresolvable = false;
        if t.pods as i64 + 1 > alloc.allowed_pod_number {
            reasons.push("Too many pods".into());
        }
        if req.milli_cpu == 0
            && req.memory == 0
            && req.ephemeral_storage == 0
            && req.scalar.is_empty()
        {
            return finish(reasons, unresolvable);
        }
        if req.milli_cpu > 0 && req.milli_cpu > alloc.milli_cpu - used.milli_cpu {
            reasons.push("Insufficient cpu".into());
            unresolvable |= req.milli_cpu > alloc.milli_cpu;
        }
        if req.memory > 0 && req.memory > alloc.memory - used.memory {
            reasons.push("Insufficient memory".into());
            unresolvable |= req.memory > alloc.memory;
        }
        if req.ephemeral_storage > 0
            && req.ephemeral_storage > alloc.ephemeral_storage - used.ephemeral_storage
        {
            reasons.push("Insufficient ephemeral-storage".into());
            unresolvable |= req.ephemeral_storage > alloc.ephemeral_storage;
        }
        for (name, q) in &req.scalar {
            if *q == 0 || self.ignored(name) {
                continue;
            }
            let a = alloc.scalar(name);
            if a <= 0 && dra.contains(name) {
                continue;
            }
            if *q > a - used.scalar(name) {
                reasons.push(format!("Insufficient {name}").into());
                unresolvable |= *q > a;
            }
        }
        finish(reasons, unresolvable)
    }
}

/// The shared rejection of a node with room for one more pod and short of exactly one core
/// resource for `req` (which must have no extended requests), `None` for any other node.
#[inline(always)]
fn short_of_one(req: &crate::resource::Resource, t: Totals<'_>) -> Option<&'static Status> {
    let (alloc, used) = (t.alloc, t.used);
    if (t.pods as i64) >= alloc.allowed_pod_number {
        return None;
    }
    let cpu = req.milli_cpu > 0 && req.milli_cpu > alloc.milli_cpu - used.milli_cpu;
    let memory = req.memory > 0 && req.memory > alloc.memory - used.memory;
    let storage = req.ephemeral_storage > 0
        && req.ephemeral_storage > alloc.ephemeral_storage - used.ephemeral_storage;
    let (i, unresolvable) = match (cpu, memory, storage) {
        (true, false, false) => (0, req.milli_cpu > alloc.milli_cpu),
        (false, true, false) => (1, req.memory > alloc.memory),
        (false, false, true) => (2, req.ephemeral_storage > alloc.ephemeral_storage),
        _ => return None,
    };
    Some(&SHORT_OF_ONE[i][unresolvable as usize])
}

/// A rejection for one insufficient resource, as `finish` builds it but named by the plugin
/// (the framework names it so anyway), so that it stays shared through the framework.
const fn short_of(reason: &'static str, code: crate::framework::Code) -> Status {
    Status::fixed(code, reason, NAME)
}

/// The statuses of a node short of exactly cpu, memory or ephemeral storage (and nothing
/// else): Unschedulable, or UnschedulableAndUnresolvable when the request exceeds the node's
/// allocatable.
static SHORT_OF_ONE: [[Status; 2]; 3] = {
    use crate::framework::Code::{Unschedulable, UnschedulableAndUnresolvable};
    [
        [
            short_of("Insufficient cpu", Unschedulable),
            short_of("Insufficient cpu", UnschedulableAndUnresolvable),
        ],
        [
            short_of("Insufficient memory", Unschedulable),
            short_of("Insufficient memory", UnschedulableAndUnresolvable),
        ],
        [
            short_of("Insufficient ephemeral-storage", Unschedulable),
            short_of(
                "Insufficient ephemeral-storage",
                UnschedulableAndUnresolvable,
            ),
        ],
    ]
};

fn finish(reasons: Reasons, unresolvable: bool) -> FilterResult {
    if reasons.is_empty() {
        return FilterResult::PASS;
    }
    let code = if unresolvable {
        crate::framework::Code::UnschedulableAndUnresolvable
    } else {
        crate::framework::Code::Unschedulable
    };
    Status {
        code,
        reasons,
        plugin: "",
    }
    .into()
}

const PRE_SCORE_KEY: &str = "PreScoreNodeResourcesFit";

impl PreScorePlugin for Fit {
    fn pre_score(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _: &[&NodeInfo],
        _: &Snapshot,
    ) -> Status {
        state.write(PRE_SCORE_KEY, PodRequests(self.scorer.pod_requests(pod)));
        Status::success()
    }
}

impl ScorePlugin for Fit {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        Ok(self.scorer.score_from(state, PRE_SCORE_KEY, pod, node))
    }

    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        out: &mut Vec<i64>,
    ) -> Result<(), Status> {
        self.scorer
            .score_nodes_from(state, PRE_SCORE_KEY, pod, nodes, out);
        Ok(())
    }

    fn score_nodes_in(
        &self,
        state: &CycleState,
        _: &PodInfo,
        snapshot: &Snapshot,
        feasible: &[usize],
        out: &mut Vec<i64>,
    ) -> Option<Result<(), Status>> {
        self.scorer
            .score_nodes_in_from(state, PRE_SCORE_KEY, snapshot, feasible, out)
    }
}

#[cfg(test)]
mod tests;
