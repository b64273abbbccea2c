//! The per-GPU state of a cluster, which the plugins read (Filter, Score) and change (Reserve).
//!
//! The state is owned by whoever drives the scheduler (the FGD experiment driver) and reaches
//! the plugins through the cycle state: the driver writes a [`GpuClusterHandle`] under
//! [`GPU_STATE_KEY`] into each fresh `CycleState` before `schedule_pod`. Plugin factories are
//! plain functions, so a plugin instance holds no per-run data; one framework can serve any
//! number of independent runs.
//!
//! Nodes are found by the address of their `Arc<Node>` (one hash of a word). The state holds a
//! reference to every node object it indexed, so no other node can ever appear at one of those
//! addresses; a node object it does not know (an updated node) is looked up by name.

use std::borrow::Cow;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use ksim_api::Node;
use ksim_scheduler::framework::{CycleState, Status};
use ksim_scheduler::node_info::{NodeInfo, Snapshot};
use ksim_scheduler::pod_info::PodInfo;
use rand_chacha::ChaCha8Rng;
use rustc_hash::FxHashMap;

use crate::device::{GpuRequest, GpuSet, NodeGpus, GPU_MODEL};
use crate::frag::{FragTable, TypicalPods};
use crate::memo::{ScoreMemo, ShapeKey};

/// The cycle-state key of the [`GpuClusterHandle`]. A `static`, so that every use is the same
/// address and the cycle state finds the entry by its first (address) comparison.
pub static GPU_STATE_KEY: &str = "ksim-gpu/GpuCluster";
/// The cycle-state key of [`GpuCycle`], written by `Open-Gpu-Share`'s PreFilter.
pub static POD_GPU_KEY: &str = "Open-Gpu-Share/PodGpu";

/// A pod's GPU request resolved against the cluster's model table, computed once per cycle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodGpu {
    pub req: GpuRequest,
    /// Millicores with a missing request counted as 100m (the artifact's `GetPodResource`).
    pub cpu: i64,
    /// Bit `m` set when the pod may use model `m`; all bits when it has no model constraint.
    pub model_mask: u64,
}

impl PodGpu {
    /// `IsNodeAccessibleToPod`.
    pub fn accessible(&self, model: Option<u8>) -> bool {
        if self.req.models.is_empty() {
            return true;
        }
        match model {
            None => false,
            Some(m) => self.model_mask & (1 << m) != 0,
        }
    }
}

/// The random streams the plugins draw from (seeded by the driver).
#[derive(Debug, Clone)]
pub struct GpuRngs {
    /// `RandomScore`'s PreScore: which feasible node gets the top score.
    pub random_score: ChaCha8Rng,
    /// `Open-Gpu-Share` with `gpuSelMethod: random`: which fitting GPU a share takes.
    pub gpu_choice: ChaCha8Rng,
}

/// Which slot of the GPU state a node is: fixed when the state is built, so it is shared
/// (outside the state's lock) with every cycle's [`GpuCycle`].
#[derive(Debug, Default)]
pub struct NodeIndex {
    /// The node objects indexed by address, kept alive so their addresses stay theirs.
    node_refs: Vec<Arc<Node>>,
    by_ptr: FxHashMap<usize, u32>,
    by_name: FxHashMap<String, u32>,
}

impl NodeIndex {
    /// The node's slot: by the address of its node object, else by name.
    #[inline]
    pub fn slot(&self, node: &NodeInfo) -> Option<usize> {
        match self.by_ptr.get(&(Arc::as_ptr(&node.node) as usize)) {
            Some(&i) => Some(i as usize),
            None => self.slot_by_name(node.name()),
        }
    }

    pub fn slot_by_name(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).map(|&i| i as usize)
    }
}

/// The GPUs of every node of a snapshot, the typical pods and the fragmentation measure.
#[derive(Debug)]
pub struct GpuCluster {
    index: Arc<NodeIndex>,
    names: Vec<String>,
    nodes: Vec<NodeGpus>,
    models: Vec<String>,
    typical: TypicalPods,
    frag: FragTable,
    /// Per node: unrequested millicores as of the last [`GpuCluster::sync_node`] (Reserve gets
    /// only the node's name, and FGD's GPU choice depends on the CPU left).
    cpu_left: Vec<i64>,
    /// Per node: (NodeInfo generation, fragment numerator) when last computed from the node's
    /// current GPUs; cleared whenever its GPUs change.
    frag_cache: Vec<Option<(u64, i64)>>,
    /// Per node: bumped on every change of its GPUs (starts at 1), so that memoized scores
    /// can tell whether the GPUs they were computed from are still there.
    gpu_version: Vec<u64>,
    /// Memoized scores, per score plugin (see [`crate::memo`]).
    memos: Vec<(&'static str, ScoreMemo)>,
    pub rngs: GpuRngs,
}

/// A plugin's memo table for one pod shape ([`GpuCluster::memo_shape`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoShape {
    memo: usize,
    table: u32,
}

/// The handle the driver puts into the cycle state.
#[derive(Debug, Clone)]
pub struct GpuClusterHandle(pub Arc<RwLock<GpuCluster>>);

impl GpuClusterHandle {
    pub fn new(cluster: GpuCluster) -> GpuClusterHandle {
        GpuClusterHandle(Arc::new(RwLock::new(cluster)))
    }

    /// Read access; a poisoned lock (a panic elsewhere) still yields the data, which is only
    /// ever changed under complete operations.
    pub fn read(&self) -> RwLockReadGuard<'_, GpuCluster> {
        self.0.read().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn write(&self) -> RwLockWriteGuard<'_, GpuCluster> {
        self.0.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Puts the handle into a fresh cycle state.
    pub fn attach(&self, state: &mut CycleState) {
        state.write(GPU_STATE_KEY, self.clone());
    }
}

/// The handle from a cycle state, or the error a plugin returns without it.
pub fn handle(state: &CycleState) -> Result<&GpuClusterHandle, Status> {
    state
        .read::<GpuClusterHandle>(GPU_STATE_KEY)
        .ok_or_else(|| {
            Status::error(
                "ksim-gpu: the cycle state carries no GPU state; schedule through a driver that \
             attaches a GpuClusterHandle (ksim_gpu::experiment)",
            )
        })
}

impl GpuCluster {
    /// Reads every node's GPUs from a snapshot (allocatable `gpu-count`/`gpu-milli`, label
    /// `gpu-card-model`). Pods already bound in the snapshot are not accounted: the experiment
    /// starts from an empty cluster.
    pub fn new(
        snapshot: &Snapshot,
        typical: TypicalPods,
        rngs: GpuRngs,
    ) -> Result<GpuCluster, String> {
        let mut models: Vec<String> = snapshot
            .nodes
            .iter()
            .filter_map(|n| n.labels().get(GPU_MODEL).cloned())
            .collect();
        models.sort();
        models.dedup();
        if models.len() > 63 {
            return Err(format!(
                "{} GPU models: at most 63 distinct models are supported",
                models.len()
            ));
        }
        let mut nodes = Vec::with_capacity(snapshot.nodes.len());
        let mut names = Vec::with_capacity(snapshot.nodes.len());
        let mut by_ptr = FxHashMap::default();
        let mut by_name = FxHashMap::default();
        let mut cpu = Vec::with_capacity(snapshot.nodes.len());
        let mut node_refs = Vec::with_capacity(snapshot.nodes.len());
        for (i, n) in snapshot.nodes.iter().enumerate() {
            cpu.push(cpu_left(n));
            let model = n
                .labels()
                .get(GPU_MODEL)
                .and_then(|m| models.iter().position(|x| x == m))
                .map(|p| p as u8);
            let g = NodeGpus::from_node(n, model).map_err(|e| format!("node {}: {e}", n.name()))?;
            nodes.push(g);
            names.push(n.name().to_string());
            by_ptr.insert(Arc::as_ptr(&n.node) as usize, i as u32);
            node_refs.push(n.node.clone());
            by_name.insert(n.name().to_string(), i as u32);
        }
        let frag = FragTable::new(&typical, &models);
        let len = nodes.len();
        Ok(GpuCluster {
            index: Arc::new(NodeIndex {
                node_refs,
                by_ptr,
                by_name,
            }),
            names,
            nodes,
            models,
            typical,
            frag,
            cpu_left: cpu,
            frag_cache: vec![None; len],
            gpu_version: vec![1; len],
            memos: Vec::new(),
            rngs,
        })
    }

    /// The node's index in this state.
    pub fn slot(&self, node: &NodeInfo) -> Option<usize> {
        self.index.slot(node)
    }

    pub fn slot_by_name(&self, name: &str) -> Option<usize> {
        self.index.slot_by_name(name)
    }

    /// The node index (shared, immutable).
    pub fn index(&self) -> &Arc<NodeIndex> {
        &self.index
    }

    pub fn len(&self) -> usize {
        debug_assert_eq!(self.index.node_refs.len(), self.nodes.len());
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    pub fn gpus(&self, slot: usize) -> &NodeGpus {
        &self.nodes[slot]
    }

    pub fn name(&self, slot: usize) -> &str {
        &self.names[slot]
    }

    pub fn models(&self) -> &[String] {
        &self.models
    }

    pub fn typical(&self) -> &TypicalPods {
        &self.typical
    }

    pub fn frag_table(&self) -> &FragTable {
        &self.frag
    }

    /// GPUs in the cluster.
    pub fn total_gpus(&self) -> i64 {
        self.nodes.iter().map(|n| n.count() as i64).sum()
    }

    /// Resolves a pod's GPU request against the model table.
    pub fn pod_gpu(&self, pod: &PodInfo) -> Result<PodGpu, String> {
        let req = GpuRequest::from_pod(pod)?;
        let mut mask = 0u64;
        if req.models.is_empty() {
            mask = u64::MAX;
        } else {
            for m in &req.models {
                if let Some(p) = self.models.iter().position(|x| x == m) {
                    mask |= 1 << p;
                }
            }
        }
        Ok(PodGpu {
            req,
            cpu: pod.non_zero_requests.milli_cpu,
            model_mask: mask,
        })
    }

    /// Takes the pod's GPUs on a node.
    pub fn allocate(&mut self, slot: usize, set: GpuSet, req: &GpuRequest) -> Result<(), String> {
        self.nodes[slot].allocate(set, req)?;
        self.frag_cache[slot] = None;
        self.gpu_version[slot] += 1;
        Ok(())
    }

    /// A share's GPU drawn uniformly among those it fits on the node (whole GPUs: the
    /// lowest-index idle ones), from the `gpu_choice` stream.
    pub fn choose_random(&mut self, slot: usize, req: &GpuRequest) -> Option<GpuSet> {
        self.nodes[slot].random_fit(req, &mut self.rngs.gpu_choice)
    }

    /// Gives the pod's GPUs back.
    pub fn release(&mut self, slot: usize, set: GpuSet, req: &GpuRequest) -> Result<(), String> {
        self.nodes[slot].release(set, req)?;
        self.frag_cache[slot] = None;
        self.gpu_version[slot] += 1;
        Ok(())
    }

    /// The node's fragment numerator for its current GPUs and CPU (cached per NodeInfo
    /// generation when the driver refreshed it).
    pub fn node_frag(&self, slot: usize, node: &NodeInfo) -> i64 {
        if let Some((generation, f)) = self.frag_cache[slot] {
            if generation == node.generation {
                return f;
            }
        }
        self.frag.node_frag(&self.nodes[slot], cpu_left(node))
    }

    /// The version of the node's GPUs: changes whenever they do.
    pub fn gpu_version(&self, slot: usize) -> u64 {
        self.gpu_version[slot]
    }

    /// `plugin`'s memo table for the pod's shape (CPU, GPUs, milli per GPU), `None` when the
    /// memo is full. The plugin's score must depend on nothing but that shape, the node's GPUs
    /// and its unrequested CPU.
    pub fn memo_shape(&mut self, plugin: &'static str, pod: &PodGpu) -> Option<MemoShape> {
        let key = ShapeKey {
            cpu: pod.cpu,
            count: pod.req.count,
            milli: pod.req.milli,
        };
        let i = match self.memos.iter().position(|(p, _)| *p == plugin) {
            Some(i) => i,
            None => {
                self.memos.push((plugin, ScoreMemo::new(self.nodes.len())));
                self.memos.len() - 1
            }
        };
        self.memos[i]
            .1
            .shape(key)
            .map(|table| MemoShape { memo: i, table })
    }

    /// `plugin`'s score of the node for the shape of [`Self::memo_shape`]: the memoized one
    /// while the node's GPUs and `cpu_left` are those it was computed for, else `compute`'s
    /// (an error is not memoized).
    pub fn memo_score<E>(
        &mut self,
        shape: Option<MemoShape>,
        slot: usize,
        cpu_left: i64,
        compute: impl FnOnce(&GpuCluster) -> Result<i64, E>,
    ) -> Result<i64, E> {
        let Some(shape) = shape else {
            return compute(self);
        };
        let version = self.gpu_version[slot];
        if let Some(s) = self.memos[shape.memo]
            .1
            .get(shape.table, slot, version, cpu_left)
        {
            return Ok(s);
        }
        let s = compute(self)?;
        self.memos[shape.memo]
            .1
            .put(shape.table, slot, version, cpu_left, s);
        Ok(s)
    }

    /// Unrequested millicores of a node as of the last [`Self::sync_node`].
    pub fn synced_cpu_left(&self, slot: usize) -> i64 {
        self.cpu_left[slot]
    }

    /// Takes the node's CPU from its NodeInfo after a pod was bound (or removed) there and
    /// recomputes its fragment numerator, which it returns. A driver calls this after every
    /// change of the snapshot, so Reserve (which gets only a node name) sees the CPU left.
    pub fn sync_node(&mut self, slot: usize, node: &NodeInfo) -> i64 {
        let cpu = cpu_left(node);
        self.cpu_left[slot] = cpu;
        let f = self.frag.node_frag(&self.nodes[slot], cpu);
        self.frag_cache[slot] = Some((node.generation, f));
        f
    }
}

/// Unrequested millicores of a node (`allocatable − requested`, as the artifact's
/// `GetNodeResourceViaNodeInfo`).
pub fn cpu_left(node: &NodeInfo) -> i64 {
    node.allocatable.milli_cpu - node.requested.milli_cpu
}

/// What `Open-Gpu-Share`'s PreFilter stores for the cycle: the handle and the pod's resolved
/// request, so that a Filter or Score call reads one cycle-state entry; and for a pod that
/// wants GPUs, the Filter verdict of every node, taken from the GPU state once per cycle
/// (nothing changes the GPU state between PreFilter and Filter: only Reserve and Unreserve
/// do), so that Filter neither locks the state nor walks a node's GPUs.
#[derive(Debug, Clone)]
pub struct GpuCycle {
    pub handle: GpuClusterHandle,
    pub pod: PodGpu,
    pub index: Arc<NodeIndex>,
    /// Per slot: the [`Verdict`] of the pod on the node (empty when the pod wants no GPU).
    pub verdicts: Arc<[Verdict]>,
}

/// `Open-Gpu-Share`'s Filter verdict of a pod on a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Fits,
    NoGpu,
    WrongModel,
    /// A share: no single GPU has the milli.
    NoRoomOnOneGpu,
    /// Whole GPUs: not enough idle ones.
    NotEnoughIdle,
}

impl GpuCluster {
    /// The verdict of `pod` on the node in `slot` (the pod wants GPUs).
    pub fn verdict(&self, slot: usize, pod: &PodGpu) -> Verdict {
        let gpus = &self.nodes[slot];
        if gpus.count() == 0 {
            Verdict::NoGpu
        } else if !pod.accessible(gpus.model) {
            Verdict::WrongModel
        } else if !gpus.fits(&pod.req) {
            if pod.req.is_share() {
                Verdict::NoRoomOnOneGpu
            } else {
                Verdict::NotEnoughIdle
            }
        } else {
            Verdict::Fits
        }
    }
}

/// The GPU state and the pod's resolved request for this cycle: PreFilter's [`GpuCycle`] when
/// present, else the driver's handle with the request resolved now.
pub fn cycle<'a>(
    state: &'a CycleState,
    pod: &PodInfo,
) -> Result<(&'a GpuClusterHandle, Cow<'a, PodGpu>), Status> {
    if let Some(c) = state.read::<GpuCycle>(POD_GPU_KEY) {
        return Ok((&c.handle, Cow::Borrowed(&c.pod)));
    }
    let h = handle(state)?;
    let pg = h
        .read()
        .pod_gpu(pod)
        .map_err(|e| Status::error(format!("pod {}: {e}", pod.key)))?;
    Ok((h, Cow::Owned(pg)))
}
