//! One run of the FGD experiment: a workload, a policy, a seed.
//!
//! Setup (FGD-EXPERIMENT.md, as the artifact implements it):
//! 1. The GPU nodes of `openb_node_list_gpu_node.csv`, converted by ksim's openb importer; no
//!    node is added or removed. Node names get a seeded `NNNN-` prefix and the nodes are
//!    ordered by it (the order only matters for tie-breaks).
//! 2. The pod list's resource columns only: pods never finish.
//! 3. Pods sorted by name, then shuffled with the seed.
//! 4. Inflation to 1.3 × the cluster's GPU capacity: copies of pods drawn uniformly (with
//!    replacement) from the name-sorted list are appended until a draw would overshoot
//!    (`tuneUpPods`; the overshoot test adds the draw's milli *per GPU*, as the artifact does).
//! 5. One pod at a time through a real ksim framework (PreFilter/Filter: NodeResourcesFit,
//!    NodeAffinity, Open-Gpu-Share; Score: the policy's plugin at weight 1000;
//!    percentageOfNodesToScore 100), then Reserve (`Open-Gpu-Share` picks the GPUs) and the
//!    binding into the snapshot. A pod that fits nowhere is recorded and dropped.
//! 6. After every pod: arrived GPU demand, GPU allocation, fragmentation (amount and ratio),
//!    bucketed per 1% of arrived demand as the artifact's `merge_*_discrete.py` do.
//!
//! Random streams, all derived from the run's seed (ChaCha8, one stream per purpose): the
//! workload order and inflation (the same for every policy), the node prefixes, the
//! scheduler's tie-breaks, RandomScore's pick, and the random GPU choice.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use ksim_api::config::KubeSchedulerConfiguration;
use ksim_api::Node;
use ksim_engine::InputEvent;
use ksim_scheduler::framework::{
    build_frameworks, CycleState, Framework, NoNominatedPods, Registry,
};
use ksim_scheduler::node_info::{ClusterObjects, Snapshot};
use ksim_scheduler::pod_info::PodInfo;
use ksim_scheduler::schedule::{Algorithm, ScheduleError};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::device::{GpuRequest, GPU_INDEX, GPU_MILLI};
use crate::error::FgdError;
use crate::frag::{PodShape, TypicalPods};
use crate::plugins::node_name_tie_break::select_host;
use crate::plugins::open_gpu_share::{GpuAssignment, ASSIGNMENT_KEY};
use crate::state::{GpuCluster, GpuClusterHandle, GpuRngs};

/// The node list every FGD experiment uses.
pub const NODE_LIST: &str = "openb_node_list_gpu_node";
/// Inflation target: 130% of the cluster's GPU capacity.
pub const TUNE_PERCENT: i64 = 130;
/// Highest bucket of arrived demand reported (percent of capacity).
pub const MAX_BUCKET: usize = 130;

const STREAM_WORKLOAD: u64 = 1;
const STREAM_NODES: u64 = 2;
const STREAM_TIES: u64 = 3;
const STREAM_RANDOM_SCORE: u64 = 4;
const STREAM_GPU_CHOICE: u64 = 5;

/// How the host is picked among nodes with the same top score.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TieBreak {
    /// The artifact's patched kube-scheduler: the smallest node name (names carry a seeded
    /// random prefix). What the paper's numbers were produced with.
    #[default]
    NodeName,
    /// Upstream kube-scheduler (and ksim): uniformly at random, from the seeded stream.
    Random,
}

impl TieBreak {
    pub fn name(self) -> &'static str {
        match self {
            TieBreak::NodeName => "node-name",
            TieBreak::Random => "random",
        }
    }

    pub fn parse(s: &str) -> Result<TieBreak, FgdError> {
        match s {
            "node-name" => Ok(TieBreak::NodeName),
            "random" => Ok(TieBreak::Random),
            _ => Err(FgdError::Invalid(format!(
                "tie break {s:?}: expected \"node-name\" or \"random\""
            ))),
        }
    }
}

/// The six policies of the paper.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Policy {
    Random,
    DotProd,
    GpuClustering,
    GpuPacking,
    BestFit,
    Fgd,
}

impl Policy {
    pub const ALL: [Policy; 6] = [
        Policy::Random,
        Policy::DotProd,
        Policy::GpuClustering,
        Policy::GpuPacking,
        Policy::BestFit,
        Policy::Fgd,
    ];

    /// The name used on the command line and in the outputs.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Random => "Random",
            Policy::DotProd => "DotProd",
            Policy::GpuClustering => "GpuClustering",
            Policy::GpuPacking => "GpuPacking",
            Policy::BestFit => "BestFit",
            Policy::Fgd => "FGD",
        }
    }

    /// Case-insensitive.
    pub fn parse(s: &str) -> Result<Policy, FgdError> {
        Policy::ALL
            .iter()
            .copied()
            .find(|p| p.name().eq_ignore_ascii_case(s))
            .ok_or_else(|| FgdError::UnknownPolicy(s.to_string()))
    }

    /// The score plugin the policy enables.
    pub fn score_plugin(self) -> &'static str {
        match self {
            Policy::Random => crate::plugins::random_score::NAME,
            Policy::DotProd => crate::plugins::dot_product_score::NAME,
            Policy::GpuClustering => crate::plugins::gpu_clustering_score::NAME,
            Policy::GpuPacking => crate::plugins::gpu_packing_score::NAME,
            Policy::BestFit => crate::plugins::best_fit_score::NAME,
            Policy::Fgd => crate::plugins::fgd_score::NAME,
        }
    }

    /// `Open-Gpu-Share`'s `gpuSelMethod` under this policy, as the artifact's run scripts set
    /// it: Random → random, FGD → its own choice, the others best fit.
    pub fn gpu_sel_method(self) -> &'static str {
        match self {
            Policy::Random => "random",
            Policy::Fgd => "FGDScore",
            _ => "best",
        }
    }

    /// The KubeSchedulerConfiguration of the policy (YAML).
    pub fn scheduler_config(self, tie_break: TieBreak) -> String {
        let score = self.score_plugin();
        let mut pre: Vec<&str> = Vec::new();
        if self == Policy::Random {
            pre.push(score);
        }
        if tie_break == TieBreak::NodeName {
            pre.push(crate::plugins::node_name_tie_break::NAME);
        }
        let pre_score = if pre.is_empty() {
            String::new()
        } else {
            let mut t = String::from("\n    preScore:\n      enabled:");
            for p in pre {
                t.push_str(&format!("\n      - name: {p}"));
            }
            t
        };
        let score_args = if self == Policy::DotProd {
            format!(
                "\n  - name: {score}\n    args:\n      dimExtMethod: merge\n      normMethod: max"
            )
        } else {
            String::new()
        };
        format!(
            "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 100
profiles:
- schedulerName: fgd-{name}
  plugins:
    multiPoint:
      disabled:
      - name: '*'
    queueSort:
      enabled:
      - name: PrioritySort
    preFilter:
      enabled:
      - name: Open-Gpu-Share
      - name: NodeResourcesFit
      - name: NodeAffinity
    filter:
      enabled:
      - name: Open-Gpu-Share
      - name: NodeResourcesFit
      - name: NodeAffinity{pre_score}
    score:
      enabled:
      - name: {score}
        weight: 1000
    reserve:
      enabled:
      - name: Open-Gpu-Share
    bind:
      enabled:
      - name: DefaultBinder
  pluginConfig:
  - name: NodeResourcesFit
    args:
      ignoredResources:
      - alibabacloud.com/gpu-milli
      - alibabacloud.com/gpu-count
  - name: Open-Gpu-Share
    args:
      gpuSelMethod: {sel}{score_args}
",
            name = self.name().to_ascii_lowercase(),
            sel = self.gpu_sel_method(),
        )
    }

    /// The framework of the policy, built through the registry as any profile is.
    pub fn framework(
        self,
        registry: &Registry,
        tie_break: TieBreak,
    ) -> Result<Arc<Framework>, FgdError> {
        let err = |message: String| FgdError::Config {
            policy: self.name().to_string(),
            message,
        };
        let text = self.scheduler_config(tie_break);
        let docs = ksim_api::load::parse_documents("scheduler-config", &text)
            .map_err(|e| err(e.to_string()))?;
        let doc = docs.first().ok_or_else(|| err("empty document".into()))?;
        let cfg: KubeSchedulerConfiguration =
            ksim_api::load::decode("scheduler-config", doc).map_err(|e| err(e.to_string()))?;
        let fws = build_frameworks(registry, &cfg).map_err(|e| err(e.to_string()))?;
        fws.into_iter()
            .next()
            .ok_or_else(|| err("no profile".into()))
    }
}

/// The registry the experiment uses: every in-tree plugin plus this crate's, behaving as
/// Kubernetes 1.35, the version the experiment's reproduction of the paper was checked
/// against (docs/fgd). Its profiles disable every default plugin (`multiPoint: '*'`) and
/// enable none whose behaviour differs between 1.35 and 1.36 (BalancedAllocation,
/// NodeDeclaredFeatures), so its results are the same under either; the pin keeps them so
/// when a later version changes a plugin it does enable.
pub fn registry() -> Registry {
    let mut r = Registry::in_tree_for(ksim_api::version::KubernetesVersion::V1_35);
    crate::plugins::register(&mut r);
    r
}

/// A workload: the cluster and one pod list, read once and shared by all its runs.
#[derive(Debug)]
pub struct Workload {
    pub name: String,
    /// GPU nodes, sorted by name, as the importer converted them.
    pub nodes: Vec<Node>,
    /// Pods sorted by name, not bound.
    pub pods: Vec<Arc<PodInfo>>,
    /// Each pod's GPU request (same order).
    pub requests: Vec<GpuRequest>,
    pub typical: TypicalPods,
    /// Σ GPU milli of the nodes.
    pub capacity_milli: i64,
    /// Σ GPU milli the pods request.
    pub demand_milli: i64,
    /// The pod list file, for messages.
    pub file: String,
}

/// `DIR/stem.csv.gz` or `DIR/stem.csv`, whichever exists.
pub fn find_list(dir: &Path, stem: &str) -> Option<PathBuf> {
    ["csv.gz", "csv"]
        .iter()
        .map(|ext| dir.join(format!("{stem}.{ext}")))
        .find(|p| p.is_file())
}

/// Reads the GPU node list and the pod list `openb_pod_list_<name>` of `dir` through ksim's
/// openb importer, and computes the typical pods.
pub fn load_workload(dir: &Path, name: &str) -> Result<Workload, FgdError> {
    let node_file = find_list(dir, NODE_LIST)
        .ok_or_else(|| FgdError::Invalid(format!("{}: no {NODE_LIST}.csv[.gz]", dir.display())))?;
    let pod_file = find_list(dir, &format!("openb_pod_list_{name}")).ok_or_else(|| {
        FgdError::UnknownWorkload {
            name: name.to_string(),
            dir: dir.display().to_string(),
        }
    })?;
    let file = ksim_trace::io::display_name(&pod_file);
    let tmp = tempfile::tempdir().map_err(|e| FgdError::io(std::env::temp_dir(), e))?;
    let summary = ksim_trace::import(
        ksim_trace::ImportFormat::Openb,
        &[node_file.clone(), pod_file.clone()],
        tmp.path(),
        &ksim_trace::ImportOptions::default(),
    )?;
    let mut nodes = ksim_trace::load_nodes(&summary.nodes_file)?;
    nodes.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let mut pods: Vec<Arc<PodInfo>> = Vec::new();
    let mut reader = ksim_trace::NativeReader::open(&summary.trace_file)?;
    while let Some(ev) = reader.read_event()? {
        if let InputEvent::CreatePod { pod, .. } = ev.event {
            let mut pod = *pod;
            // The FGD setup uses no times: pods never finish.
            pod.metadata.uid = format!("{}/{}", pod.metadata.namespace, pod.metadata.name);
            pods.push(Arc::new(PodInfo::new(pod)));
        }
    }
    drop(tmp);
    pods.sort_by(|a, b| a.name().cmp(b.name()));
    let mut requests = Vec::with_capacity(pods.len());
    let mut demand = 0i64;
    for p in &pods {
        let r = GpuRequest::from_pod(p).map_err(|message| FgdError::BadPod {
            file: file.clone(),
            pod: p.name().to_string(),
            message,
        })?;
        demand += r.total_milli();
        requests.push(r);
    }
    let shapes: Vec<PodShape> = pods
        .iter()
        .zip(&requests)
        .map(|(p, r)| PodShape {
            cpu: p.non_zero_requests.milli_cpu,
            gpu: r.clone(),
        })
        .collect();
    let typical = TypicalPods::from_shapes(&shapes);
    let node_file_name = ksim_trace::io::display_name(&node_file);
    let mut capacity = 0i64;
    for n in &nodes {
        let milli = n
            .status
            .allocatable
            .get(GPU_MILLI)
            .map(|q| q.value())
            .unwrap_or(0);
        if milli % 1000 != 0 || milli < 0 {
            return Err(FgdError::BadNode {
                file: node_file_name.clone(),
                node: n.metadata.name.clone(),
                message: format!("allocatable {GPU_MILLI}: {milli} is not whole GPUs"),
            });
        }
        capacity += milli;
    }
    if capacity == 0 {
        return Err(FgdError::Invalid(format!(
            "{node_file_name}: the nodes have no GPU"
        )));
    }
    if demand == 0 {
        return Err(FgdError::Invalid(format!(
            "{file}: no pod requests a GPU, so there is no GPU demand to inflate"
        )));
    }
    Ok(Workload {
        name: name.to_string(),
        nodes,
        pods,
        requests,
        typical,
        capacity_milli: capacity,
        demand_milli: demand,
        file,
    })
}

/// Where one pod of the run comes from: an index into the workload's pods, and for inflation
/// copies the copy number (`<name>-tuned-<n>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    pub pod: usize,
    pub copy: Option<u32>,
}

/// The pods of a run in arrival order: the name-sorted list shuffled with the seed, then the
/// inflation copies (or, if the list exceeds the target, random pods removed: `tuneDownPods`).
pub fn arrivals(w: &Workload, seed: u64) -> Vec<Arrival> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(STREAM_WORKLOAD);
    let mut order: Vec<Arrival> = (0..w.pods.len())
        .map(|i| Arrival { pod: i, copy: None })
        .collect();
    order.shuffle(&mut rng);
    let target = w.capacity_milli * TUNE_PERCENT / 100;
    let mut total = w.demand_milli;
    if total > target {
        while total > target && !order.is_empty() {
            let i = rng.random_range(0..order.len());
            total -= w.requests[order[i].pod].total_milli();
            order.remove(i);
        }
    } else if total < target && !w.pods.is_empty() {
        let mut n = 0u32;
        loop {
            let i = rng.random_range(0..w.pods.len());
            let r = &w.requests[i];
            // The artifact compares the running total plus the draw's milli per GPU (not its
            // total) with the target.
            if total + r.milli as i64 > target {
                break;
            }
            total += r.total_milli();
            order.push(Arrival {
                pod: i,
                copy: Some(n),
            });
            n += 1;
        }
    }
    order
}

/// The metric curves of one run: column k holds the mean over the pods after which arrived GPU
/// demand rounded to k% of capacity (half to even, as Python's `round`); a bucket without pods
/// takes the pods of buckets k−1 and k+1; `None` when those are empty too.
#[derive(Debug, Clone, PartialEq)]
pub struct Curves {
    /// GPU allocation ratio, % of capacity.
    pub allocation: Vec<Option<f64>>,
    /// Fragment amount, % of capacity.
    pub fragmentation: Vec<Option<f64>>,
    /// Fragment / idle GPU milli, %.
    pub fragmentation_ratio: Vec<Option<f64>>,
}

/// Sums per bucket of arrived demand.
#[derive(Debug, Clone)]
struct Buckets {
    n: Vec<u64>,
    alloc: Vec<f64>,
    frag: Vec<f64>,
    ratio: Vec<f64>,
}

impl Buckets {
    fn new() -> Buckets {
        let len = MAX_BUCKET + 2;
        Buckets {
            n: vec![0; len],
            alloc: vec![0.0; len],
            frag: vec![0.0; len],
            ratio: vec![0.0; len],
        }
    }

    fn add(&mut self, bucket: usize, alloc: f64, frag: f64, ratio: f64) {
        if bucket < self.n.len() {
            self.n[bucket] += 1;
            self.alloc[bucket] += alloc;
            self.frag[bucket] += frag;
            self.ratio[bucket] += ratio;
        }
    }

    fn curves(&self) -> Curves {
        let mean = |sums: &Vec<f64>, k: usize| -> Option<f64> {
            if self.n[k] > 0 {
                return Some(sums[k] / self.n[k] as f64);
            }
            let (mut s, mut c) = (0.0, 0u64);
            for j in [k.wrapping_sub(1), k + 1] {
                if j < self.n.len() {
                    s += sums[j];
                    c += self.n[j];
                }
            }
            (c > 0).then(|| s / c as f64)
        };
        let col = |sums: &Vec<f64>| (0..=MAX_BUCKET).map(|k| mean(sums, k)).collect();
        Curves {
            allocation: col(&self.alloc),
            fragmentation: col(&self.frag),
            fragmentation_ratio: col(&self.ratio),
        }
    }
}

/// Index into [`RunOutcome::failed_by_kind`].
pub fn kind_index(req: &GpuRequest) -> usize {
    match (req.count, req.is_share()) {
        (0, _) => 0,
        (_, true) => 1,
        (1, false) => 2,
        (2, false) => 3,
        (4, false) => 4,
        (8, false) => 5,
        _ => 6,
    }
}

/// `round(arrived / capacity × 100)` with Python's half-to-even, in integers.
pub fn bucket_of(arrived_milli: i64, capacity_milli: i64) -> usize {
    let num = arrived_milli as i128 * 100;
    let den = capacity_milli as i128;
    let q = num / den;
    let r = num % den;
    let rounded = match (2 * r).cmp(&den) {
        std::cmp::Ordering::Less => q,
        std::cmp::Ordering::Greater => q + 1,
        std::cmp::Ordering::Equal => q + (q % 2),
    };
    rounded.max(0) as usize
}

/// What one run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct RunOutcome {
    pub workload: String,
    pub policy: Policy,
    pub seed: u64,
    /// Pods tried (originals plus inflation copies).
    pub pods: usize,
    pub scheduled: usize,
    pub failed: usize,
    /// GPU milli requested by the failed pods.
    pub failed_milli: i64,
    /// Failed pods by kind: [CPU-only, GPU share, 1 GPU, 2 GPUs, 4 GPUs, 8 GPUs, other].
    pub failed_by_kind: [usize; 7],
    /// Arrived GPU demand (% of capacity, unrounded) when the first pod failed.
    pub first_failure_pct: Option<f64>,
    /// Over the scheduled pods that had several feasible nodes: the mean number of feasible
    /// nodes sharing the top score (the scheduler picks one of them at random).
    pub mean_top_ties: f64,
    pub arrived_milli: i64,
    pub capacity_milli: i64,
    /// GPU milli allocated at the end.
    pub allocated_milli: i64,
    pub curves: Curves,
}

/// Settings of a run beyond workload, policy and seed.
#[derive(Debug, Clone, Copy, Default)]
pub struct RunOptions {
    /// Try only the first this many arrivals (smoke tests; the experiment uses all).
    pub max_pods: Option<usize>,
    /// Must match the framework's configuration (`NodeNameTieBreak` enabled or not).
    pub tie_break: TieBreak,
}

/// One run: schedules the workload's arrivals through the policy's framework.
pub fn run_one(
    w: &Workload,
    policy: Policy,
    seed: u64,
    fw: &Framework,
    opts: RunOptions,
) -> Result<RunOutcome, FgdError> {
    let sched_err = |pod: &str, message: String| FgdError::Scheduler {
        workload: w.name.clone(),
        policy: policy.name().to_string(),
        seed,
        pod: pod.to_string(),
        message,
    };
    let mut order = arrivals(w, seed);
    if let Some(m) = opts.max_pods {
        order.truncate(m);
    }

    // Nodes: a seeded NNNN- prefix each (a permutation), ordered by it.
    let mut perm: Vec<usize> = (0..w.nodes.len()).collect();
    let mut node_rng = ChaCha8Rng::seed_from_u64(seed);
    node_rng.set_stream(STREAM_NODES);
    perm.shuffle(&mut node_rng);
    let mut nodes: Vec<Node> = w
        .nodes
        .iter()
        .zip(&perm)
        .map(|(n, p)| {
            let mut n = n.clone();
            n.metadata.name = format!("{p:04}-{}", n.metadata.name);
            n
        })
        .collect();
    nodes.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let mut snapshot = Snapshot::build(
        nodes.into_iter().map(Arc::new),
        std::iter::empty(),
        Arc::new(ClusterObjects::default()),
    );

    let stream = |s: u64| {
        let mut r = ChaCha8Rng::seed_from_u64(seed);
        r.set_stream(s);
        r
    };
    let cluster = GpuCluster::new(
        &snapshot,
        w.typical.clone(),
        GpuRngs {
            random_score: stream(STREAM_RANDOM_SCORE),
            gpu_choice: stream(STREAM_GPU_CHOICE),
        },
    )
    .map_err(|m| FgdError::Invalid(format!("workload {}: {m}", w.name)))?;
    let total_weight = cluster.typical().total_weight;
    let handle = GpuClusterHandle::new(cluster);
    // The fragment numerator of every node, kept in step with the snapshot.
    let mut frag: Vec<i64> = {
        let mut c = handle.write();
        (0..snapshot.nodes.len())
            .map(|i| c.sync_node(i, &snapshot.nodes[i]))
            .collect()
    };
    let mut frag_sum: i64 = frag.iter().sum();
    let capacity = w.capacity_milli;
    let mut alg = Algorithm::new(stream(STREAM_TIES), 100);
    let mut buckets = Buckets::new();
    let (mut arrived, mut used) = (0i64, 0i64);
    let (mut scheduled, mut failed, mut failed_milli) = (0usize, 0usize, 0i64);
    let mut failed_by_kind = [0usize; 7];
    let (mut tie_sum, mut tie_cycles) = (0u64, 0u64);
    let mut first_failure_pct = None;

    for a in &order {
        let req = &w.requests[a.pod];
        let pod: Arc<PodInfo> = match a.copy {
            None => w.pods[a.pod].clone(),
            Some(n) => {
                let mut p = (*w.pods[a.pod]).clone();
                let name = format!("{}-tuned-{n}", p.pod.metadata.name);
                p.set_uid(format!("{}/{name}", p.pod.metadata.namespace));
                p.key = p.pod.metadata.uid.clone();
                p.pod.metadata.name = name;
                Arc::new(p)
            }
        };
        arrived += req.total_milli();
        let mut state = CycleState::new();
        handle.attach(&mut state);
        match alg.schedule_pod(fw, &mut state, &pod, &snapshot, &NoNominatedPods) {
            Ok(r) => {
                if r.feasible_nodes > 1 {
                    let totals = &alg.last_scores().totals;
                    let top = totals.iter().copied().max().unwrap_or(0);
                    tie_sum += totals.iter().filter(|&&t| t == top).count() as u64;
                    tie_cycles += 1;
                }
                let mut idx = r.suggested_host;
                if opts.tie_break == TieBreak::NodeName && r.feasible_nodes > 1 {
                    let c = handle.read();
                    let slot =
                        select_host(&state, &alg.last_scores().totals, &c).ok_or_else(|| {
                            sched_err(&pod.key, "NodeNameTieBreak recorded no scored nodes".into())
                        })?;
                    idx = *snapshot.index.get(c.name(slot)).ok_or_else(|| {
                        sched_err(
                            &pod.key,
                            format!("node {} not in the snapshot", c.name(slot)),
                        )
                    })?;
                }
                let node_name = snapshot.nodes[idx].name().to_string();
                let s = fw.run_reserve(&mut state, &pod, &node_name);
                if !s.is_success() {
                    fw.run_unreserve(&mut state, &pod, &node_name);
                    return Err(sched_err(
                        &pod.key,
                        format!("reserve on {node_name}: {}", s.message()),
                    ));
                }
                let mut bound = (*pod).clone();
                bound.pod.spec.node_name = node_name;
                if let Some(asg) = state.read::<GpuAssignment>(ASSIGNMENT_KEY) {
                    bound
                        .pod
                        .metadata
                        .annotations
                        .insert(GPU_INDEX.into(), asg.gpus.to_string());
                }
                snapshot.add_pod(Arc::new(bound));
                let node = &snapshot.nodes[idx];
                let mut c = handle.write();
                let slot = c.slot(node).ok_or_else(|| {
                    sched_err(
                        &pod.key,
                        format!("node {} not in the GPU state", node.name()),
                    )
                })?;
                let f = c.sync_node(slot, node);
                frag_sum += f - frag[slot];
                frag[slot] = f;
                used += req.total_milli();
                debug_assert_eq!(
                    used,
                    (0..c.len()).map(|i| c.gpus(i).used_milli()).sum::<i64>()
                );
                scheduled += 1;
            }
            Err(ScheduleError::Fit(_)) | Err(ScheduleError::NoNodesAvailable) => {
                failed += 1;
                failed_milli += req.total_milli();
                failed_by_kind[kind_index(req)] += 1;
                if first_failure_pct.is_none() {
                    first_failure_pct = Some(100.0 * arrived as f64 / capacity as f64);
                }
            }
            Err(ScheduleError::Internal(s)) => return Err(sched_err(&pod.key, s.message())),
        }
        let frag_milli = if total_weight == 0 {
            0.0
        } else {
            frag_sum as f64 / total_weight as f64
        };
        let idle = capacity - used;
        let ratio = if idle > 0 {
            100.0 * frag_milli / idle as f64
        } else {
            0.0
        };
        buckets.add(
            bucket_of(arrived, capacity),
            100.0 * used as f64 / capacity as f64,
            100.0 * frag_milli / capacity as f64,
            ratio,
        );
    }
    Ok(RunOutcome {
        workload: w.name.clone(),
        policy,
        seed,
        pods: order.len(),
        scheduled,
        failed,
        failed_milli,
        failed_by_kind,
        first_failure_pct,
        mean_top_ties: if tie_cycles == 0 {
            0.0
        } else {
            tie_sum as f64 / tie_cycles as f64
        },
        arrived_milli: arrived,
        capacity_milli: capacity,
        allocated_milli: used,
        curves: buckets.curves(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_round_half_to_even_like_python() {
        // capacity 1000 milli: 1% = 10 milli.
        assert_eq!(bucket_of(0, 1000), 0);
        assert_eq!(bucket_of(14, 1000), 1);
        assert_eq!(bucket_of(15, 1000), 2); // 1.5 → 2
        assert_eq!(bucket_of(25, 1000), 2); // 2.5 → 2
        assert_eq!(bucket_of(26, 1000), 3);
        assert_eq!(bucket_of(1300, 1000), 130);
        // openb: 6212 GPUs.
        assert_eq!(bucket_of(6_212_000, 6_212_000), 100);
        assert_eq!(bucket_of(3_106_000 + 31_060, 6_212_000), 50); // 50.5 → 50
    }

    #[test]
    fn empty_buckets_borrow_their_neighbours() {
        let mut b = Buckets::new();
        b.add(3, 10.0, 1.0, 5.0);
        b.add(5, 30.0, 3.0, 7.0);
        b.add(5, 50.0, 5.0, 9.0);
        let c = b.curves();
        assert_eq!(c.allocation[3], Some(10.0));
        assert_eq!(c.allocation[5], Some(40.0));
        // 4 is empty: buckets 3 and 5 → (10 + 30 + 50) / 3.
        assert_eq!(c.allocation[4], Some(30.0));
        assert_eq!(c.allocation[2], Some(10.0));
        assert_eq!(c.allocation[0], None);
        assert_eq!(c.allocation[7], None);
        assert_eq!(c.fragmentation_ratio[4], Some(7.0));
    }

    /// One node with 2 T4 GPUs (2000 milli of capacity) and a pod list of two 600-milli shares
    /// (1 CPU each): the only typical pod is that share. Inflation to 130% (2600 milli) appends
    /// copies while the running total plus 600 stays within 2600: 1200 → 1800 → 2400, so four
    /// arrivals. By hand, whatever the policy (both GPUs are alike):
    /// - pod 1 (arrived 600 = 30%): one GPU left with 400, the other idle. The typical share
    ///   fits the idle GPU, so the fragment is the GPU with less than 600 free: 400 milli =
    ///   20% of capacity; idle 1400, ratio 400/1400 = 28.57%; allocation 30%.
    /// - pod 2 (1200 = 60%): GPUs [400, 400]; the share fits nowhere: every idle milli (800)
    ///   is fragment: 40%, ratio 100%; allocation 60%.
    /// - pods 3 and 4 (1800 = 90%, 2400 = 120%) fit nowhere: the metrics stay as after pod 2.
    #[test]
    fn cluster_metrics_of_a_hand_computed_run() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(
            tmp.path().join("openb_node_list_gpu_node.csv"),
            "sn,cpu_milli,memory_mib,gpu,model\nn0,64000,65536,2,T4\n",
        )
        .unwrap();
        let mut pods = String::from(
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n",
        );
        for i in 0..2 {
            pods.push_str(&format!(
                "p{i},1000,1024,1,600,,LS,Running,{i},100000,{i}\n"
            ));
        }
        std::fs::write(tmp.path().join("openb_pod_list_two.csv"), pods).unwrap();
        let w = load_workload(tmp.path(), "two").unwrap();
        assert_eq!((w.capacity_milli, w.demand_milli), (2000, 1200));
        assert_eq!(w.typical.pods.len(), 1);
        assert_eq!(arrivals(&w, 1).len(), 4);
        let reg = registry();
        for p in Policy::ALL {
            let fw = p.framework(&reg, TieBreak::NodeName).unwrap();
            let o = run_one(&w, p, 1, &fw, RunOptions::default()).unwrap();
            let name = p.name();
            assert_eq!((o.pods, o.scheduled, o.failed), (4, 2, 2), "{name}");
            assert_eq!(o.failed_by_kind[1], 2, "{name}: both failures are shares");
            assert_eq!(o.first_failure_pct, Some(90.0), "{name}");
            assert_eq!((o.arrived_milli, o.allocated_milli), (2400, 1200), "{name}");
            let c = &o.curves;
            let at = |k: usize| {
                (
                    c.allocation[k],
                    c.fragmentation[k],
                    c.fragmentation_ratio[k].map(|r| (r * 100.0).round() / 100.0),
                )
            };
            assert_eq!(at(30), (Some(30.0), Some(20.0), Some(28.57)), "{name}");
            for k in [60, 90, 120] {
                assert_eq!(at(k), (Some(60.0), Some(40.0), Some(100.0)), "{name}: {k}");
            }
            // Empty buckets next to a filled one borrow it; others stay empty.
            assert_eq!(at(29), at(30), "{name}");
            assert_eq!(at(61), at(60), "{name}");
            assert_eq!(at(100), (None, None, None), "{name}");
            assert_eq!(at(0), (None, None, None), "{name}");
        }
    }

    #[test]
    fn policies_parse_and_build_frameworks() {
        let r = registry();
        for p in Policy::ALL {
            assert_eq!(Policy::parse(&p.name().to_lowercase()).unwrap(), p);
            let plain = p.framework(&r, TieBreak::Random).unwrap();
            let pre: Vec<&str> = plain.pre_score.iter().map(|x| x.name()).collect();
            assert_eq!(
                pre,
                if p == Policy::Random {
                    vec!["RandomScore"]
                } else {
                    vec![]
                }
            );
            let fw = p.framework(&r, TieBreak::NodeName).unwrap();
            assert!(fw.pre_score.iter().any(|x| x.name() == "NodeNameTieBreak"));
            let names = |v: &Vec<ksim_scheduler::framework::PluginRef>| {
                v.iter().map(|x| x.name()).collect::<Vec<_>>()
            };
            assert_eq!(
                names(&fw.filter),
                vec!["Open-Gpu-Share", "NodeResourcesFit", "NodeAffinity"]
            );
            assert_eq!(fw.score.len(), 1);
            assert_eq!(fw.score[0].plugin.name(), p.score_plugin());
            assert_eq!(fw.score[0].weight, 1000);
            assert_eq!(names(&fw.reserve), vec!["Open-Gpu-Share"]);
            assert_eq!(fw.percentage_of_nodes_to_score, Some(100));
        }
        assert!(Policy::parse("Tetris").is_err());
    }
}
