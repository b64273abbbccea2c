//! `GpuPackingScore` (artifact `pkg/simulator/plugin/gpu_packing_score.go`): prefer already
//! shared GPUs, then partly used nodes, last fully idle nodes. From high to low:
//! 1. the pod fits on GPUs already in use: `100 − Σ(free% of those GPUs)/10`, at least 50;
//! 2. it needs idle GPUs of a partly used node: `50 − idle GPUs used`, at least 33;
//! 3. the node is entirely idle: `33 − its GPUs`, at least (its GPUs).
//!
//! GPUs are taken in ascending order of free milli (stable by index), as the artifact does.
//! CPU-only pods score 0 everywhere. With this policy `Open-Gpu-Share` uses best fit.

use std::sync::Arc;

use ksim_scheduler::framework::{
    FactoryArgs, Plugin, PluginRef, ScorePlugin, Status, MAX_NODE_SCORE, MIN_NODE_SCORE,
};
use ksim_scheduler::pod_info::PodInfo;

use crate::device::{NodeGpus, MILLI_PER_GPU};
use crate::plugins::NodeView;
use crate::state::PodGpu;

pub const NAME: &str = "GpuPackingScore";

pub struct GpuPackingScore;

pub fn new(_: &FactoryArgs<'_>) -> Result<PluginRef, String> {
    Ok(Arc::new(GpuPackingScore))
}

impl Plugin for GpuPackingScore {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
}

score_by_view!(GpuPackingScore, NAME, score_view);

/// The plugin's score of one node.
fn score_view(v: &NodeView<'_>, pod: &PodInfo) -> Result<i64, Status> {
    let node = v.node;
    if !v.pod.req.wants_gpu() {
        return Ok(MIN_NODE_SCORE);
    }
    let g = v.cluster.gpus(v.slot);
    if !v.pod.accessible(g.model) {
        return Err(Status::error(format!(
            "node {} does not match the GPU model request of pod {}",
            node.name(),
            pod.key
        )));
    }
    packing_score(g, v.pod).ok_or_else(|| {
        Status::error(format!(
            "failed to schedule pod {} on node {}",
            pod.key,
            node.name()
        ))
    })
}

/// `getPackingScore`; `None` when the pod does not fit (the artifact's error).
pub fn packing_score(gpus: &NodeGpus, pod: &PodGpu) -> Option<i64> {
    let idle = gpus.idle_gpus() as i64;
    // Case 3: every GPU of the node is idle.
    if idle == gpus.count() as i64 {
        return Some((MAX_NODE_SCORE / 3 - idle).max(idle));
    }
    let mut need = pod.req.count as usize;
    let mut idle_used = 0i64;
    let mut free_pct_on_used = 0i64;
    for i in gpus.ascending() {
        if need == 0 {
            break;
        }
        let l = gpus.left()[i];
        if pod.req.milli <= l {
            need -= 1;
            free_pct_on_used += l as i64 * 100 / MILLI_PER_GPU as i64;
            if l == MILLI_PER_GPU {
                idle_used += 1;
            }
        }
    }
    if need != 0 {
        return None;
    }
    // Case 2: idle GPUs of a partly used node.
    if idle_used > 0 {
        return Some((MAX_NODE_SCORE / 2 - idle_used).max(MAX_NODE_SCORE / 3));
    }
    // Case 1: GPUs already shared.
    Some((MAX_NODE_SCORE - free_pct_on_used / 10).max(MAX_NODE_SCORE / 2))
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
    fn three_cases_by_hand() {
        // Case 3: an idle 8-GPU node: max(33 − 8, 8) = 25; idle 2-GPU node: 31.
        assert_eq!(
            packing_score(
                &NodeGpus::new(None, 8).unwrap(),
                &pg(GpuRequest::share(100))
            ),
            Some(25)
        );
        assert_eq!(
            packing_score(&NodeGpus::new(None, 2).unwrap(), &pg(GpuRequest::whole(1))),
            Some(31)
        );
        // Node [1000, 300, 1000, 600]:
        let n = NodeGpus::with_left(None, &[1000, 300, 1000, 600]).unwrap();
        // Case 1: a 250 share goes to GPU 1 (300 free = 30%): 100 − 30/10 = 97.
        assert_eq!(packing_score(&n, &pg(GpuRequest::share(250))), Some(97));
        // a 500 share: ascending order 300, 600, …: GPU 3 (60%): 100 − 6 = 94.
        assert_eq!(packing_score(&n, &pg(GpuRequest::share(500))), Some(94));
        // a 700 share must use an idle GPU: case 2: 50 − 1 = 49.
        assert_eq!(packing_score(&n, &pg(GpuRequest::share(700))), Some(49));
        // 2 whole GPUs: 50 − 2 = 48; 3 do not fit.
        assert_eq!(packing_score(&n, &pg(GpuRequest::whole(2))), Some(48));
        assert_eq!(packing_score(&n, &pg(GpuRequest::whole(3))), None);
        // Case 2 floor: 8-GPU node with one GPU used, 7 whole GPUs: max(50 − 7, 33) = 43;
        let mut big = NodeGpus::new(None, 8).unwrap();
        big.allocate(GpuSet::single(0), &GpuRequest::share(10))
            .unwrap();
        assert_eq!(packing_score(&big, &pg(GpuRequest::whole(7))), Some(43));
        // Case 1 floor: a share on a nearly free shared GPU: 990 free = 99% → 100 − 9 = 91.
        assert_eq!(packing_score(&big, &pg(GpuRequest::share(900))), Some(91));
    }
}
