//! The FGD artifact's scheduler plugins as ksim out-of-tree plugins, one file per plugin, each
//! named as the artifact names it, so a KubeSchedulerConfiguration enables them by name:
//!
//! | plugin | extension points | artifact file |
//! |---|---|---|
//! | `Open-Gpu-Share` | PreFilter, Filter, Reserve | `open_gpu_share.go` |
//! | `RandomScore` | PreScore, Score | `random_score.go` |
//! | `DotProductScore` | Score | `dot_product_score.go` |
//! | `GpuClusteringScore` | Score | `gpu_clustering_score.go` |
//! | `GpuPackingScore` | Score | `gpu_packing_score.go` |
//! | `BestFitScore` | Score (+ NormalizeScore) | `best_fit_score.go` |
//! | `FGDScore` | Score | `fgd_score.go` |
//! | `NodeNameTieBreak` | PreScore | the artifact's patched `selectHost` (see the module) |
//!
//! They read the per-GPU state from the cycle state (see [`crate::state`]). Scores are the
//! artifact's: integers 0–100 computed with the same arithmetic (Go's integer division and
//! float-to-int truncation), so ties between nodes arise exactly where they did there.

/// `impl ScorePlugin` for a plugin whose score is a function of one node's [`NodeView`]:
/// `score` reads one node, `score_nodes` a cycle's nodes with the cycle state and the GPU state
/// read once ([`score_each`]). Further trait items (normalization) follow a `;`.
macro_rules! score_by_view {
    ($plugin:ty, $name:expr, $view:path $(; $($extra:item)*)?) => {
        impl ksim_scheduler::framework::ScorePlugin for $plugin {
            fn score(
                &self,
                state: &ksim_scheduler::framework::CycleState,
                pod: &ksim_scheduler::pod_info::PodInfo,
                node: &ksim_scheduler::node_info::NodeInfo,
            ) -> Result<i64, ksim_scheduler::framework::Status> {
                $crate::plugins::with_node($name, state, pod, node, |v| $view(v, pod))
            }

            fn score_nodes(
                &self,
                state: &ksim_scheduler::framework::CycleState,
                pod: &ksim_scheduler::pod_info::PodInfo,
                nodes: &[&ksim_scheduler::node_info::NodeInfo],
                out: &mut Vec<i64>,
            ) -> Result<(), ksim_scheduler::framework::Status> {
                $crate::plugins::score_each($name, state, pod, nodes, out, |v| $view(v, pod))
            }

            $($($extra)*)?
        }
    };
}

pub mod best_fit_score;
pub mod dot_product_score;
pub mod fgd_score;
pub mod gpu_clustering_score;
pub mod gpu_packing_score;
pub mod node_name_tie_break;
pub mod open_gpu_share;
pub mod random_score;

use ksim_scheduler::framework::{CycleState, Registry, Status};
use ksim_scheduler::node_info::NodeInfo;
use ksim_scheduler::pod_info::PodInfo;

use crate::state::{cpu_left, cycle, GpuCluster, PodGpu};

/// Registers every plugin of this crate by its artifact name.
pub fn register(r: &mut Registry) {
    r.register(open_gpu_share::NAME, open_gpu_share::new);
    r.register(random_score::NAME, random_score::new);
    r.register(dot_product_score::NAME, dot_product_score::new);
    r.register(gpu_clustering_score::NAME, gpu_clustering_score::new);
    r.register(gpu_packing_score::NAME, gpu_packing_score::new);
    r.register(best_fit_score::NAME, best_fit_score::new);
    r.register(fgd_score::NAME, fgd_score::new);
    r.register(node_name_tie_break::NAME, node_name_tie_break::new);
}

/// What a Score plugin needs about one node.
pub struct NodeView<'a> {
    pub cluster: &'a GpuCluster,
    pub slot: usize,
    pub pod: &'a PodGpu,
    /// Unrequested millicores of the node.
    pub cpu_left: i64,
    pub node: &'a NodeInfo,
}

/// Runs `f` with the node's GPU state and the pod's request, or returns the error status a
/// plugin reports when the GPU state is missing or does not know the node.
pub fn with_node<R>(
    plugin: &str,
    state: &CycleState,
    pod: &PodInfo,
    node: &NodeInfo,
    f: impl FnOnce(&NodeView<'_>) -> Result<R, Status>,
) -> Result<R, Status> {
    let (h, pg) = cycle(state, pod)?;
    let cluster = h.read();
    let slot = slot_of(&cluster, plugin, node)?;
    f(&NodeView {
        cluster: &cluster,
        slot,
        pod: &pg,
        cpu_left: cpu_left(node),
        node,
    })
}

/// `f` over every node in order, appending to `out` and stopping at the first error: the
/// same as [`with_node`] per node, with the cycle state read and the GPU state locked once.
pub fn score_each(
    plugin: &str,
    state: &CycleState,
    pod: &PodInfo,
    nodes: &[&NodeInfo],
    out: &mut Vec<i64>,
    f: impl Fn(&NodeView<'_>) -> Result<i64, Status>,
) -> Result<(), Status> {
    let (h, pg) = cycle(state, pod)?;
    let cluster = h.read();
    out.reserve(nodes.len());
    for &node in nodes {
        let slot = slot_of(&cluster, plugin, node)?;
        out.push(f(&NodeView {
            cluster: &cluster,
            slot,
            pod: &pg,
            cpu_left: cpu_left(node),
            node,
        })?);
    }
    Ok(())
}

/// The node's slot in the GPU state, or the error a score plugin returns.
pub fn slot_of(cluster: &GpuCluster, plugin: &str, node: &NodeInfo) -> Result<usize, Status> {
    cluster.slot(node).ok_or_else(|| {
        Status::error(format!(
            "{plugin}: node {} is not in the GPU state",
            node.name()
        ))
    })
}

/// `sigmoid` of `plugin_utils.go`.
pub fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// Test helpers: a snapshot of hand-built GPU nodes with a GPU state attached.
#[cfg(test)]
pub(crate) mod testutil {
    use std::sync::Arc;

    use ksim_api::{
        Affinity, Container, Node, NodeAffinity, NodeSelector, NodeSelectorRequirement,
        NodeSelectorTerm, Pod, Quantity, ResourceList,
    };
    use ksim_scheduler::framework::CycleState;
    use ksim_scheduler::node_info::{ClusterObjects, Snapshot};
    use ksim_scheduler::pod_info::PodInfo;
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use crate::device::{GpuRequest, GpuSet, GPU_COUNT, GPU_MILLI, GPU_MODEL};
    use crate::frag::{PodShape, TypicalPods};
    use crate::state::{GpuCluster, GpuClusterHandle, GpuRngs};

    /// A node with `cpu` millicores and `gpus` GPUs of `model`.
    pub fn node(name: &str, cpu: i64, gpus: i64, model: &str) -> Node {
        let mut n = Node::default();
        n.metadata.name = name.into();
        let mut r = ResourceList::new();
        r.insert("cpu".into(), Quantity::from_milli(cpu));
        r.insert("memory".into(), Quantity::from_value(1 << 40));
        r.insert("pods".into(), Quantity::from_value(110));
        if gpus > 0 {
            r.insert(GPU_COUNT.into(), Quantity::from_value(gpus));
            r.insert(GPU_MILLI.into(), Quantity::from_value(gpus * 1000));
            n.metadata.labels.insert(GPU_MODEL.into(), model.into());
        }
        n.status.capacity = r.clone();
        n.status.allocatable = r;
        n
    }

    /// A pod requesting `cpu` millicores and `gpu` (its models as required node affinity, as
    /// the openb importer writes `gpu_spec`).
    pub fn pod(name: &str, cpu: i64, gpu: &GpuRequest) -> PodInfo {
        let mut p = Pod::default();
        p.metadata.name = name.into();
        p.metadata.namespace = "default".into();
        p.metadata.uid = name.into();
        let mut r = ResourceList::new();
        r.insert("cpu".into(), Quantity::from_milli(cpu));
        if gpu.wants_gpu() {
            r.insert(GPU_MILLI.into(), Quantity::from_value(gpu.total_milli()));
            if !gpu.is_share() {
                r.insert(GPU_COUNT.into(), Quantity::from_value(gpu.count as i64));
            }
        }
        p.spec.containers.push(Container {
            name: "main".into(),
            ..Container::default()
        });
        p.spec.containers[0].resources.requests = r;
        if !gpu.models.is_empty() {
            p.spec.affinity = Some(Box::new(Affinity {
                node_affinity: Some(NodeAffinity {
                    required: Some(NodeSelector {
                        node_selector_terms: vec![NodeSelectorTerm {
                            match_expressions: vec![NodeSelectorRequirement {
                                key: GPU_MODEL.into(),
                                operator: "In".into(),
                                values: gpu.models.clone(),
                            }],
                            ..NodeSelectorTerm::default()
                        }],
                    }),
                    ..NodeAffinity::default()
                }),
                ..Affinity::default()
            }));
        }
        PodInfo::new(p)
    }

    /// A cluster of nodes, and its GPU state with the typical pods of `shapes`; GPUs in
    /// `used[i]` = (node index, GPU set, request) are taken first.
    pub struct Fixture {
        pub snapshot: Snapshot,
        pub handle: GpuClusterHandle,
    }

    impl Fixture {
        pub fn new(nodes: Vec<Node>, shapes: &[PodShape]) -> Fixture {
            let snapshot = Snapshot::build(
                nodes.into_iter().map(Arc::new),
                std::iter::empty(),
                Arc::new(ClusterObjects::default()),
            );
            let typical = TypicalPods::from_shapes(shapes);
            let rngs = GpuRngs {
                random_score: ChaCha8Rng::seed_from_u64(1),
                gpu_choice: ChaCha8Rng::seed_from_u64(2),
            };
            let cluster = GpuCluster::new(&snapshot, typical, rngs).unwrap();
            Fixture {
                snapshot,
                handle: GpuClusterHandle::new(cluster),
            }
        }

        /// Takes GPUs on node `i` directly in the state (as an earlier pod's reserve would).
        pub fn take(&self, i: usize, set: GpuSet, req: &GpuRequest) {
            let mut c = self.handle.write();
            c.allocate(i, set, req).unwrap();
        }

        /// Binds a CPU-only pod of `cpu` millicores on node `i` (to use up CPU).
        pub fn use_cpu(&mut self, i: usize, cpu: i64) {
            let mut p = pod(&format!("cpu-{i}-{cpu}"), cpu, &GpuRequest::none());
            p.pod.spec.node_name = self.snapshot.nodes[i].name().to_string();
            self.snapshot.add_pod(Arc::new(p));
            let mut c = self.handle.write();
            c.sync_node(i, &self.snapshot.nodes[i]);
        }

        pub fn state(&self) -> CycleState {
            let mut s = CycleState::new();
            self.handle.attach(&mut s);
            s
        }
    }
}
