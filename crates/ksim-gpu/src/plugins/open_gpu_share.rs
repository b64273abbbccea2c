//! `Open-Gpu-Share` (artifact `pkg/simulator/plugin/open_gpu_share.go`): the GPU-sharing
//! filter and the reserve step that picks the pod's GPUs on the chosen node.
//!
//! Filter: a pod without GPU request passes; otherwise the node must have GPUs, of a model the
//! pod allows, and room on single GPUs (a share inside one GPU's free milli; whole GPUs idle).
//! Reserve picks the GPUs with the configured `gpuSelMethod` and takes them in the GPU state:
//! - `best` (default): the share goes to the GPU with the least free milli that fits it;
//! - `random`: to a GPU drawn uniformly among those it fits;
//! - `FGDScore`: to the GPU whose use raises the node's fragmentation least (the FGD policy);
//!
//! whole GPUs are always the lowest-index idle ones (`AllocateExclusiveGpuId`). Unreserve gives
//! them back.
//!
//! Difference from the artifact: a PreFilter resolves the pod's GPU request once per cycle
//! (the artifact re-reads annotations per node) and returns Skip for pods without GPUs, so
//! their Filter is not run — the same verdicts with less work.

use std::sync::Arc;

use ksim_api::config::decode_args;
use ksim_scheduler::framework::{
    CycleState, FactoryArgs, FilterPlugin, FilterResult, Plugin, PluginRef, PreFilterPlugin,
    PreFilterResult, ReservePlugin, Status,
};
use ksim_scheduler::node_info::{NodeInfo, Snapshot};
use ksim_scheduler::pod_info::PodInfo;
use serde::Deserialize;

use crate::device::{GpuRequest, GpuSet};
use crate::plugins::fgd_score;
use crate::state::{cycle, handle, GpuCycle, Verdict, POD_GPU_KEY};

pub const NAME: &str = "Open-Gpu-Share";
/// The cycle-state key of the [`GpuAssignment`] Reserve made.
pub const ASSIGNMENT_KEY: &str = "Open-Gpu-Share/Assignment";

/// How Reserve picks a share's GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuSelMethod {
    Best,
    Random,
    Fgd,
}

impl GpuSelMethod {
    pub fn parse(s: &str) -> Result<GpuSelMethod, String> {
        match s {
            "best" => Ok(GpuSelMethod::Best),
            "random" => Ok(GpuSelMethod::Random),
            "FGDScore" => Ok(GpuSelMethod::Fgd),
            _ => Err(format!(
                "gpuSelMethod {s:?}: expected \"best\", \"random\" or \"FGDScore\""
            )),
        }
    }
}

/// The plugin's args. `dimExtMethod` and `normMethod` are accepted because the artifact's
/// generated configuration passes them to this plugin too; they do not change it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OpenGpuShareArgs {
    pub gpu_sel_method: Option<String>,
    pub dim_ext_method: Option<String>,
    pub norm_method: Option<String>,
}

pub struct OpenGpuShare {
    pub method: GpuSelMethod,
}

pub fn new(a: &FactoryArgs<'_>) -> Result<PluginRef, String> {
    let args: OpenGpuShareArgs = decode_args(NAME, a.args)?;
    let method = match &args.gpu_sel_method {
        None => GpuSelMethod::Best,
        Some(s) => GpuSelMethod::parse(s)?,
    };
    Ok(Arc::new(OpenGpuShare { method }))
}

/// The GPUs Reserve took for the pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuAssignment {
    pub node: String,
    pub slot: usize,
    pub gpus: GpuSet,
    pub req: GpuRequest,
}

impl Plugin for OpenGpuShare {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_pre_filter(&self) -> Option<&dyn PreFilterPlugin> {
        Some(self)
    }
    fn as_filter(&self) -> Option<&dyn FilterPlugin> {
        Some(self)
    }
    fn as_reserve(&self) -> Option<&dyn ReservePlugin> {
        Some(self)
    }
}

impl PreFilterPlugin for OpenGpuShare {
    fn pre_filter(
        &self,
        state: &mut CycleState,
        pod: &PodInfo,
        _: &Snapshot,
    ) -> (Option<PreFilterResult>, Status) {
        let (h, pg) = match handle(state) {
            Ok(h) => (h.clone(), h.read().pod_gpu(pod)),
            Err(s) => return (None, s),
        };
        match pg {
            Ok(pg) => {
                let wants = pg.req.wants_gpu();
                let (index, verdicts) = {
                    let c = h.read();
                    let verdicts: Arc<[Verdict]> = if wants {
                        (0..c.len()).map(|slot| c.verdict(slot, &pg)).collect()
                    } else {
                        Arc::from(Vec::new())
                    };
                    (c.index().clone(), verdicts)
                };
                state.write(
                    POD_GPU_KEY,
                    GpuCycle {
                        handle: h,
                        pod: pg,
                        index,
                        verdicts,
                    },
                );
                if wants {
                    (None, Status::success())
                } else {
                    (None, Status::skip())
                }
            }
            Err(e) => (None, Status::error(format!("pod {}: {e}", pod.key))),
        }
    }
}

impl OpenGpuShare {
    /// The Filter verdict as a [`Status`] (the trait method boxes a rejection).
    fn filter_status(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Status {
        let (h, pg) = match cycle(state, pod) {
            Ok(c) => c,
            Err(s) => return s,
        };
        if !pg.req.wants_gpu() {
            return Status::success();
        }
        let cluster = h.read();
        match cluster.slot(node) {
            None => verdict_status(Verdict::NoGpu),
            Some(slot) => verdict_status(cluster.verdict(slot, &pg)),
        }
    }
}

/// The Filter status of a verdict.
fn verdict_status(v: Verdict) -> Status {
    match v {
        Verdict::Fits => Status::success(),
        Verdict::NoGpu => Status::unschedulable("node has no GPU"),
        Verdict::WrongModel => Status::unschedulable("node's GPU model is not one the pod allows"),
        Verdict::NoRoomOnOneGpu => Status::unschedulable("no single GPU has enough free GPU milli"),
        Verdict::NotEnoughIdle => Status::unschedulable("not enough idle GPUs"),
    }
}

impl FilterPlugin for OpenGpuShare {
    fn filter(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> FilterResult {
        // The verdicts PreFilter took for this cycle; without them (no PreFilter ran), from
        // the GPU state.
        if let Some(c) = state.read::<GpuCycle>(POD_GPU_KEY) {
            if !c.pod.req.wants_gpu() {
                return FilterResult::PASS;
            }
            let v = match c.index.slot(node) {
                None => Some(Verdict::NoGpu),
                Some(slot) => c.verdicts.get(slot).copied(),
            };
            match v {
                Some(Verdict::Fits) => return FilterResult::PASS,
                Some(v) => return verdict_status(v).into(),
                None => {}
            }
        }
        self.filter_status(state, pod, node).into()
    }
}

impl ReservePlugin for OpenGpuShare {
    fn reserve(&self, state: &mut CycleState, pod: &PodInfo, node: &str) -> Status {
        let (h, pg) = match cycle(state, pod) {
            Ok((h, pg)) => (h.clone(), pg.into_owned()),
            Err(s) => return s,
        };
        if !pg.req.wants_gpu() {
            return Status::success();
        }
        let mut cluster = h.write();
        let Some(slot) = cluster.slot_by_name(node) else {
            return Status::error(format!("node {node} is not in the GPU state"));
        };
        let set = match self.method {
            GpuSelMethod::Best => cluster.gpus(slot).best_fit(&pg.req),
            GpuSelMethod::Random => cluster.choose_random(slot, &pg.req),
            GpuSelMethod::Fgd => fgd_score::choose_gpus(&cluster, slot, &pg),
        };
        let Some(set) = set else {
            return Status::error(format!(
                "failed to allocate GPUs to pod {} on node {node}",
                pod.key
            ));
        };
        if let Err(e) = cluster.allocate(slot, set, &pg.req) {
            return Status::error(format!("pod {} on node {node}: {e}", pod.key));
        }
        drop(cluster);
        state.write(
            ASSIGNMENT_KEY,
            GpuAssignment {
                node: node.to_string(),
                slot,
                gpus: set,
                req: pg.req,
            },
        );
        Status::success()
    }

    fn unreserve(&self, state: &mut CycleState, _pod: &PodInfo, node: &str) {
        let Some(a) = state.read::<GpuAssignment>(ASSIGNMENT_KEY).cloned() else {
            return;
        };
        if a.node != node {
            return;
        }
        if let Ok(h) = handle(state) {
            // The GPUs were taken by this cycle's Reserve, so giving them back cannot fail.
            let _ = h.write().release(a.slot, a.gpus, &a.req);
        }
        state.write(ASSIGNMENT_KEY, ());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::GpuRequest;
    use crate::plugins::testutil::{node, pod, Fixture};
    use ksim_scheduler::framework::Code;

    fn plugin(method: GpuSelMethod) -> OpenGpuShare {
        OpenGpuShare { method }
    }

    #[test]
    fn filter_checks_gpus_model_and_single_gpu_room() {
        let f = Fixture::new(
            vec![
                node("cpu-only", 32_000, 0, ""),
                node("t4", 32_000, 2, "T4"),
                node("v100", 32_000, 4, "V100M32"),
            ],
            &[],
        );
        // t4: GPU 0 has 400 free, GPU 1 has 500 free.
        f.take(1, GpuSet::single(0), &GpuRequest::share(600));
        f.take(1, GpuSet::single(1), &GpuRequest::share(500));
        let p = plugin(GpuSelMethod::Best);
        let run = |req: GpuRequest, i: usize| {
            let pod = pod("p", 1000, &req);
            let mut st = f.state();
            let (_, s) = p.pre_filter(&mut st, &pod, &f.snapshot);
            if s.is_skip() {
                return Code::Success;
            }
            p.filter(&st, &pod, &f.snapshot.nodes[i]).code()
        };
        use Code::*;
        let cases: Vec<(GpuRequest, [Code; 3])> = vec![
            (GpuRequest::none(), [Success, Success, Success]),
            (GpuRequest::share(500), [Unschedulable, Success, Success]),
            // 900 milli free on t4 in total, but no single GPU has 600.
            (
                GpuRequest::share(600),
                [Unschedulable, Unschedulable, Success],
            ),
            (
                GpuRequest::whole(1),
                [Unschedulable, Unschedulable, Success],
            ),
            (
                GpuRequest::whole(4),
                [Unschedulable, Unschedulable, Success],
            ),
            (
                GpuRequest::whole(8),
                [Unschedulable, Unschedulable, Unschedulable],
            ),
            (
                GpuRequest::share(100).with_models(&["T4"]),
                [Unschedulable, Success, Unschedulable],
            ),
            (
                GpuRequest::share(100).with_models(&["A100"]),
                [Unschedulable, Unschedulable, Unschedulable],
            ),
        ];
        for (req, want) in cases {
            let got = [
                run(req.clone(), 0),
                run(req.clone(), 1),
                run(req.clone(), 2),
            ];
            assert_eq!(got, want, "{req:?}");
        }
    }

    #[test]
    fn reserve_takes_best_fit_gpu_and_unreserve_gives_it_back() {
        let f = Fixture::new(vec![node("n", 32_000, 4, "T4")], &[]);
        f.take(0, GpuSet::single(1), &GpuRequest::share(300)); // 700 free
        f.take(0, GpuSet::single(3), &GpuRequest::share(500)); // 500 free
        let p = plugin(GpuSelMethod::Best);
        let share = pod("p", 1000, &GpuRequest::share(450));
        let mut st = f.state();
        p.pre_filter(&mut st, &share, &f.snapshot);
        assert!(p.reserve(&mut st, &share, "n").is_success());
        let a = st.read::<GpuAssignment>(ASSIGNMENT_KEY).cloned().unwrap();
        assert_eq!(
            a.gpus,
            GpuSet::single(3),
            "least free GPU that fits 450 is GPU 3 (500)"
        );
        assert_eq!(f.handle.read().gpus(0).left(), &[1000, 700, 1000, 50]);
        p.unreserve(&mut st, &share, "n");
        assert_eq!(f.handle.read().gpus(0).left(), &[1000, 700, 1000, 500]);
        // Whole GPUs: lowest-index idle ones.
        let two = pod("q", 1000, &GpuRequest::whole(2));
        let mut st = f.state();
        p.pre_filter(&mut st, &two, &f.snapshot);
        assert!(p.reserve(&mut st, &two, "n").is_success());
        assert_eq!(f.handle.read().gpus(0).left(), &[0, 700, 0, 500]);
        // Nothing fits any more: reserve fails with an error status.
        let three = pod("r", 1000, &GpuRequest::whole(3));
        let mut st = f.state();
        p.pre_filter(&mut st, &three, &f.snapshot);
        assert_eq!(p.reserve(&mut st, &three, "n").code, Code::Error);
    }

    #[test]
    fn gpu_sel_method_args() {
        assert_eq!(GpuSelMethod::parse("random"), Ok(GpuSelMethod::Random));
        assert!(GpuSelMethod::parse("worst").is_err());
        let v = serde_json::json!({"gpuSelMethod": "FGDScore", "dimExtMethod": "share", "normMethod": "max"});
        let a: OpenGpuShareArgs = decode_args(NAME, Some(&v)).unwrap();
        assert_eq!(a.gpu_sel_method.as_deref(), Some("FGDScore"));
        let bad = serde_json::json!({"gpuSelMethods": "best"});
        assert!(decode_args::<OpenGpuShareArgs>(NAME, Some(&bad)).is_err());
    }

    #[test]
    fn without_gpu_state_plugins_report_an_error() {
        let f = Fixture::new(vec![node("n", 32_000, 1, "T4")], &[]);
        let p = plugin(GpuSelMethod::Best);
        let pod = pod("p", 1000, &GpuRequest::share(100));
        let st = CycleState::new();
        assert_eq!(
            p.filter(&st, &pod, &f.snapshot.nodes[0]).code(),
            Code::Error
        );
    }
}
