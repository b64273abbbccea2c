//! `BestFitScore` (artifact `pkg/simulator/plugin/best_fit_score.go`): minimise what is left
//! after placement, `0.5 × (CPU left − CPU)/128 cores + 0.5 × (GPU milli left − GPU milli)/8
//! GPUs` (memory ignored); raw score `⌊(1 − that) × 100⌋`, then NormalizeScore maps the
//! feasible nodes' scores linearly onto 0–100 (all 0 when they are equal). With this policy
//! `Open-Gpu-Share` uses best fit inside the node.

use std::sync::Arc;

use ksim_scheduler::framework::{
    CycleState, FactoryArgs, Plugin, PluginRef, ScorePlugin, Status, MAX_NODE_SCORE, MIN_NODE_SCORE,
};
use ksim_scheduler::pod_info::PodInfo;

use crate::device::NodeGpus;
use crate::plugins::dot_product_score::{MAX_SPEC_CPU, MAX_SPEC_GPU};
use crate::plugins::NodeView;
use crate::state::PodGpu;

pub const NAME: &str = "BestFitScore";

pub struct BestFitScore;

pub fn new(_: &FactoryArgs<'_>) -> Result<PluginRef, String> {
    Ok(Arc::new(BestFitScore))
}

impl Plugin for BestFitScore {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
}

score_by_view! {
    BestFitScore, NAME, score_view;

    fn has_normalize(&self) -> bool {
        true
    }

    fn normalize(&self, _: &CycleState, _: &PodInfo, scores: &mut [i64]) -> Status {
        normalize(scores);
        Status::success()
    }
}

/// The plugin's score of one node.
fn score_view(v: &NodeView<'_>, pod: &PodInfo) -> Result<i64, Status> {
    let node = v.node;
    let g = v.cluster.gpus(v.slot);
    if !v.pod.accessible(g.model) {
        return Err(Status::error(format!(
            "node {} does not match the GPU model request of pod {}",
            node.name(),
            pod.key
        )));
    }
    best_fit_score(g, v.cpu_left, v.pod).ok_or_else(|| {
        Status::error(format!(
            "the score between node {} and pod {} is negative, should not happen",
            node.name(),
            pod.key
        ))
    })
}

/// `getBestFitScore`; `None` when the node lacks CPU or GPU milli for the pod.
pub fn best_fit_score(gpus: &NodeGpus, cpu_left: i64, pod: &PodGpu) -> Option<i64> {
    let free = [cpu_left as f64, gpus.total_left() as f64];
    let req = [pod.cpu as f64, pod.req.total_milli() as f64];
    let max_spec = [MAX_SPEC_CPU, MAX_SPEC_GPU];
    let weights = [0.5, 0.5];
    let mut score = 0.0;
    for i in 0..2 {
        if free[i] < req[i] {
            return None;
        }
        score += (free[i] - req[i]) / max_spec[i] * weights[i];
    }
    Some(((1.0 - score) * MAX_NODE_SCORE as f64) as i64)
}

/// The artifact's `NormalizeScore`: min–max onto 0–100 in integers; all 0 when equal.
pub fn normalize(scores: &mut [i64]) {
    let (Some(&hi), Some(&lo)) = (scores.iter().max(), scores.iter().min()) else {
        return;
    };
    let range = hi - lo;
    let new_range = MAX_NODE_SCORE - MIN_NODE_SCORE;
    for s in scores.iter_mut() {
        *s = if range == 0 {
            MIN_NODE_SCORE
        } else {
            (*s - lo) * new_range / range + MIN_NODE_SCORE
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::GpuRequest;

    fn pg(cpu: i64, req: GpuRequest) -> PodGpu {
        PodGpu {
            req,
            cpu,
            model_mask: u64::MAX,
        }
    }

    #[test]
    fn hand_computed_scores_and_normalisation() {
        // Node 64 CPUs, 8 idle GPUs; pod 32 CPUs + 4 GPUs:
        //   0.5·32/128 + 0.5·4000/8000 = 0.125 + 0.25 = 0.375 → ⌊62.5⌋ = 62.
        let g = NodeGpus::new(None, 8).unwrap();
        assert_eq!(
            best_fit_score(&g, 64_000, &pg(32_000, GpuRequest::whole(4))),
            Some(62)
        );
        // Exact fit: 100.
        let g2 = NodeGpus::with_left(None, &[500]).unwrap();
        assert_eq!(
            best_fit_score(&g2, 4_000, &pg(4_000, GpuRequest::share(500))),
            Some(100)
        );
        // Lacking CPU: the artifact's −1 (an error).
        assert_eq!(
            best_fit_score(&g2, 3_000, &pg(4_000, GpuRequest::share(500))),
            None
        );
        // A node with more than 128 free CPUs goes below 0 before normalisation.
        let g3 = NodeGpus::new(None, 8).unwrap();
        assert_eq!(
            best_fit_score(&g3, 300_000, &pg(1_000, GpuRequest::none())),
            Some(-66)
        );
        let mut s = vec![62, 100, -66, 62];
        normalize(&mut s);
        // (62+66)·100/166 = 77 (77.1), 100, 0.
        assert_eq!(s, vec![77, 100, 0, 77]);
        let mut same = vec![40, 40];
        normalize(&mut same);
        assert_eq!(same, vec![0, 0]);
    }
}
