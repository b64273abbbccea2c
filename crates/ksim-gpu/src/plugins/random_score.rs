//! `RandomScore` (artifact `pkg/simulator/plugin/random_score.go`): PreScore draws one of the
//! feasible nodes uniformly; Score gives it 100 and every other node 0. The draw comes from the
//! GPU state's seeded `random_score` stream. With this policy `Open-Gpu-Share` uses
//! `gpuSelMethod: random`.

use std::sync::Arc;

use ksim_scheduler::framework::{
    CycleState, FactoryArgs, Plugin, PluginRef, PreScorePlugin, ScorePlugin, Status,
    MAX_NODE_SCORE, MIN_NODE_SCORE,
};
use ksim_scheduler::node_info::{NodeInfo, Snapshot};
use ksim_scheduler::pod_info::PodInfo;
use rand::Rng;

use crate::state::handle;

pub const NAME: &str = "RandomScore";
const CHOSEN_KEY: &str = "PreScore-RandomScorePlugin";

pub struct RandomScore;

pub fn new(_: &FactoryArgs<'_>) -> Result<PluginRef, String> {
    Ok(Arc::new(RandomScore))
}

#[derive(Debug, Clone)]
struct Chosen(String);

impl Plugin for RandomScore {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_pre_score(&self) -> Option<&dyn PreScorePlugin> {
        Some(self)
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
}

impl PreScorePlugin for RandomScore {
    fn pre_score(
        &self,
        state: &mut CycleState,
        _: &PodInfo,
        nodes: &[&NodeInfo],
        _: &Snapshot,
    ) -> Status {
        if nodes.is_empty() {
            return Status::success();
        }
        let i = match handle(state) {
            Ok(h) => h.write().rngs.random_score.random_range(0..nodes.len()),
            Err(s) => return s,
        };
        state.write(CHOSEN_KEY, Chosen(nodes[i].name().to_string()));
        Status::success()
    }
}

impl ScorePlugin for RandomScore {
    fn score(&self, state: &CycleState, _: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        let Some(Chosen(name)) = state.read::<Chosen>(CHOSEN_KEY) else {
            return Err(Status::error(format!(
                "reading {CHOSEN_KEY:?} from cycleState: not found"
            )));
        };
        Ok(if node.name() == name {
            MAX_NODE_SCORE
        } else {
            MIN_NODE_SCORE
        })
    }

    /// [`Self::score`] per node, with the chosen name read once.
    fn score_nodes(
        &self,
        state: &CycleState,
        _: &PodInfo,
        nodes: &[&NodeInfo],
        out: &mut Vec<i64>,
    ) -> Result<(), Status> {
        let Some(Chosen(name)) = state.read::<Chosen>(CHOSEN_KEY) else {
            return Err(Status::error(format!(
                "reading {CHOSEN_KEY:?} from cycleState: not found"
            )));
        };
        out.extend(nodes.iter().map(|n| {
            if n.name() == name {
                MAX_NODE_SCORE
            } else {
                MIN_NODE_SCORE
            }
        }));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::GpuRequest;
    use crate::plugins::testutil::{node, pod, Fixture};

    #[test]
    fn one_feasible_node_gets_100_uniformly() {
        let f = Fixture::new(
            (0..4)
                .map(|i| node(&format!("n{i}"), 8000, 1, "T4"))
                .collect(),
            &[],
        );
        let p = pod("p", 1000, &GpuRequest::share(100));
        let nodes: Vec<&NodeInfo> = f.snapshot.nodes.iter().collect();
        let mut hits = [0u32; 4];
        for _ in 0..400 {
            let mut st = f.state();
            assert!(RandomScore
                .pre_score(&mut st, &p, &nodes, &f.snapshot)
                .is_success());
            let scores: Vec<i64> = nodes
                .iter()
                .map(|n| RandomScore.score(&st, &p, n).unwrap())
                .collect();
            assert_eq!(scores.iter().filter(|&&s| s == 100).count(), 1);
            assert_eq!(scores.iter().filter(|&&s| s == 0).count(), 3);
            hits[scores.iter().position(|&s| s == 100).unwrap()] += 1;
        }
        assert!(hits.iter().all(|&h| h > 60), "{hits:?}");
    }
}
