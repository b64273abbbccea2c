//! `DotProductScore` (artifact `pkg/simulator/plugin/dot_product_score.go`), Tetris-style
//! packing, as the FGD experiment configures it (`dimExtMethod: merge`, `normMethod: max`):
//! the node's free vector `[CPU left, GPU milli left over all GPUs]` and the pod's request
//! `[CPU, GPUs × milli]` are both divided by the largest node spec (128 CPUs, 8 GPUs), their
//! dot product is halved (two dimensions) and `score = ⌊(1 − that) × 100⌋`: the smaller the
//! product, the higher the score. A node without the CPU for the pod scores 0. With this
//! policy `Open-Gpu-Share` uses best fit.

use std::sync::Arc;

use ksim_api::config::decode_args;
use ksim_scheduler::framework::{
    FactoryArgs, Plugin, PluginRef, ScorePlugin, Status, MAX_NODE_SCORE, MIN_NODE_SCORE,
};
use ksim_scheduler::pod_info::PodInfo;
use serde::Deserialize;

use crate::device::NodeGpus;
use crate::plugins::NodeView;
use crate::state::PodGpu;

pub const NAME: &str = "DotProductScore";
/// The artifact's `MaxSpecCpu` (millicores) and `MaxSpecGpu` (milli).
pub const MAX_SPEC_CPU: f64 = 128_000.0;
pub const MAX_SPEC_GPU: f64 = 8_000.0;

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DotProductArgs {
    pub dim_ext_method: Option<String>,
    pub norm_method: Option<String>,
}

pub struct DotProductScore;

/// Only the variant the FGD experiment runs (`merge`, `max`) is implemented; the others are
/// refused rather than silently run as this one.
pub fn new(a: &FactoryArgs<'_>) -> Result<PluginRef, String> {
    let args: DotProductArgs = decode_args(NAME, a.args)?;
    if let Some(d) = args.dim_ext_method.as_deref() {
        if d != "merge" {
            return Err(format!("dimExtMethod {d:?}: only \"merge\" is implemented"));
        }
    }
    if let Some(n) = args.norm_method.as_deref() {
        if n != "max" {
            return Err(format!("normMethod {n:?}: only \"max\" is implemented"));
        }
    }
    Ok(Arc::new(DotProductScore))
}

impl Plugin for DotProductScore {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
}

score_by_view!(DotProductScore, NAME, score_view);

/// The plugin's score of one node.
fn score_view(v: &NodeView<'_>, _pod: &PodInfo) -> Result<i64, Status> {
    Ok(dot_product_score(v.cluster.gpus(v.slot), v.cpu_left, v.pod))
}

/// `calculateDotProductScore` with merged GPU dimension and max-spec normalisation.
pub fn dot_product_score(gpus: &NodeGpus, cpu_left: i64, pod: &PodGpu) -> i64 {
    if cpu_left < pod.cpu {
        // ToVirtualNodeResourceList returns no node vector: no match group, MinNodeScore.
        return MIN_NODE_SCORE;
    }
    let node = [
        cpu_left as f64 / MAX_SPEC_CPU,
        gpus.total_left() as f64 / MAX_SPEC_GPU,
    ];
    let req = [
        pod.cpu as f64 / MAX_SPEC_CPU,
        pod.req.total_milli() as f64 / MAX_SPEC_GPU,
    ];
    let mut dot = 0.0;
    for i in 0..2 {
        dot += node[i] * req[i];
    }
    let score = 1.0 - dot / 2.0;
    (MAX_NODE_SCORE as f64 * score) as i64
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
    fn hand_computed_scores() {
        // Node 64 CPUs and 8 idle GPUs left; pod 32 CPUs + 4 GPUs.
        //   node = [0.5, 1.0], pod = [0.25, 0.5]; dot = 0.125 + 0.5 = 0.625; /2 = 0.3125;
        //   score = ⌊68.75⌋ = 68.
        let g = NodeGpus::new(None, 8).unwrap();
        assert_eq!(
            dot_product_score(&g, 64_000, &pg(32_000, GpuRequest::whole(4))),
            68
        );
        // Node 16 CPUs, GPUs [500, 0]; pod 4 CPUs + 500 share:
        //   node = [0.125, 0.0625], pod = [0.03125, 0.0625]; dot = 0.00390625 + 0.00390625
        //   = 0.0078125; /2 → 0.00390625; score = ⌊99.609⌋ = 99.
        let g = NodeGpus::with_left(None, &[500, 0]).unwrap();
        assert_eq!(
            dot_product_score(&g, 16_000, &pg(4_000, GpuRequest::share(500))),
            99
        );
        // Not enough CPU: 0.
        assert_eq!(
            dot_product_score(&g, 3_000, &pg(4_000, GpuRequest::share(500))),
            0
        );
        // The emptier node scores lower: packing.
        let empty = NodeGpus::new(None, 8).unwrap();
        let used = NodeGpus::with_left(None, &[0, 0, 0, 0, 1000, 1000, 1000, 1000]).unwrap();
        let p = pg(8_000, GpuRequest::whole(1));
        assert!(dot_product_score(&used, 32_000, &p) > dot_product_score(&empty, 96_000, &p));
    }

    #[test]
    fn only_the_experiments_variant_is_accepted() {
        let profile = ksim_api::config::Profile::default();
        let ok = serde_json::json!({"dimExtMethod": "merge", "normMethod": "max"});
        assert!(new(&FactoryArgs {
            args: Some(&ok),
            profile: &profile,
            features: &Default::default(),
        })
        .is_ok());
        let bad = serde_json::json!({"dimExtMethod": "share"});
        assert!(new(&FactoryArgs {
            args: Some(&bad),
            profile: &profile,
            features: &Default::default(),
        })
        .is_err());
    }
}
