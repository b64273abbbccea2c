//! `GpuClusteringScore` (artifact `pkg/simulator/plugin/gpu_clustering_score.go`): keeps pods of
//! the same GPU "affinity" class (shared GPU, 1 GPU, 2 GPUs, …) together. Bands, from best:
//! - (75, 100]: the node runs only pods of the pod's class;
//! - (50, 75]: it runs pods of several classes including the pod's;
//! - (25, 50]: it runs no GPU pod;
//! - (0, 25]: it runs only other classes;
//!
//! within a band the fuller node (less GPU milli free) scores higher:
//! `25 × (8000 − free milli) / 8000` in integer arithmetic. CPU-only pods score 0 everywhere.
//! With this policy `Open-Gpu-Share` uses best fit.

use std::sync::Arc;

use ksim_scheduler::framework::{
    FactoryArgs, Plugin, PluginRef, ScorePlugin, Status, MAX_NODE_SCORE, MIN_NODE_SCORE,
};
use ksim_scheduler::pod_info::PodInfo;

use crate::device::{class_of, NodeGpus};
use crate::plugins::NodeView;
use crate::state::PodGpu;

pub const NAME: &str = "GpuClusteringScore";
/// The artifact's `MaxSpecGpu` in milli.
const MAX_SPEC_GPU: i64 = 8000;

pub struct GpuClusteringScore;

pub fn new(_: &FactoryArgs<'_>) -> Result<PluginRef, String> {
    Ok(Arc::new(GpuClusteringScore))
}

impl Plugin for GpuClusteringScore {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
}

score_by_view!(GpuClusteringScore, NAME, score_view);

/// The plugin's score of one node.
fn score_view(v: &NodeView<'_>, _pod: &PodInfo) -> Result<i64, Status> {
    let g = v.cluster.gpus(v.slot);
    if !v.pod.accessible(g.model) {
        return Err(Status::error("failed to get nodeRes or podRes"));
    }
    Ok(clustering_score(g, v.pod))
}

/// The band and the fullness term, as the artifact computes them.
pub fn clustering_score(gpus: &NodeGpus, pod: &PodGpu) -> i64 {
    let Some(class) = class_of(&pod.req) else {
        return MIN_NODE_SCORE;
    };
    let fullness = MAX_NODE_SCORE / 4 * (MAX_SPEC_GPU - gpus.total_left()) / MAX_SPEC_GPU;
    let classes = gpus.classes();
    let distinct = classes.iter().filter(|&&c| c > 0).count();
    if classes[class] > 0 {
        if distinct == 1 {
            fullness + MAX_NODE_SCORE * 3 / 4
        } else {
            fullness + MAX_NODE_SCORE * 2 / 4
        }
    } else if distinct == 0 {
        fullness + MAX_NODE_SCORE / 4
    } else {
        fullness
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{GpuRequest, GpuSet};

    fn pg(req: GpuRequest) -> PodGpu {
        PodGpu {
            req,
            cpu: 1000,
            model_mask: u64::MAX,
        }
    }

    #[test]
    fn bands_and_fullness_by_hand() {
        let share = GpuRequest::share(250);
        let one = GpuRequest::whole(1);
        // An idle 8-GPU node: no class, fullness 25·0/8000 = 0 → band (25, 50]: 25.
        let idle = NodeGpus::new(None, 8).unwrap();
        assert_eq!(clustering_score(&idle, &pg(share.clone())), 25);
        // Idle 2-GPU node: free 2000 → 25·6000/8000 = 18 (18.75 truncated) → 43.
        let idle2 = NodeGpus::new(None, 2).unwrap();
        assert_eq!(clustering_score(&idle2, &pg(share.clone())), 43);
        // 8-GPU node with two shares on GPU 0 (free 7500): 25·500/8000 = 1 → only its class:
        // 76; for a 1-GPU pod only other classes: 1.
        let mut shared = NodeGpus::new(None, 8).unwrap();
        shared.allocate(GpuSet::single(0), &share).unwrap();
        shared.allocate(GpuSet::single(0), &share).unwrap();
        assert_eq!(clustering_score(&shared, &pg(share.clone())), 76);
        assert_eq!(clustering_score(&shared, &pg(one.clone())), 1);
        // Add a 1-GPU pod (free 6500): 25·1500/8000 = 4 → mixed including the class: 54.
        shared.allocate(GpuSet::single(1), &one).unwrap();
        assert_eq!(clustering_score(&shared, &pg(share.clone())), 54);
        assert_eq!(clustering_score(&shared, &pg(one)), 54);
        // CPU-only pods: 0.
        assert_eq!(clustering_score(&shared, &pg(GpuRequest::none())), 0);
    }
}
