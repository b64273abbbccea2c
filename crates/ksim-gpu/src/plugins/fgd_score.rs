//! `FGDScore` (artifact `pkg/simulator/plugin/fgd_score.go`, `calculateGpuShareFragExtendScore`):
//! Fragmentation Gradient Descent. A node scores by how little placing the pod there raises the
//! node's fragmentation (see [`crate::frag`]):
//! `score = ⌊sigmoid((frag_before − frag_after) / 1000) × 100⌋`, frag in milli.
//!
//! For a share, every GPU it fits is tried and the best score wins (the lowest index among
//! equal scores); that GPU is also the one `Open-Gpu-Share` takes with
//! `gpuSelMethod: FGDScore`. For whole GPUs and CPU-only pods the placement is the artifact's
//! `nodeRes.Sub(pod)`: whole GPUs are the lowest-index idle ones.

use std::sync::Arc;

use ksim_scheduler::framework::{
    CycleState, FactoryArgs, Plugin, PluginRef, ScorePlugin, Status, MAX_NODE_SCORE,
};
use ksim_scheduler::node_info::NodeInfo;
use ksim_scheduler::pod_info::PodInfo;

use crate::device::{GpuSet, NodeGpus};
use crate::frag::FragTable;
use crate::plugins::{sigmoid, slot_of, with_node};
use crate::state::{cpu_left, cycle, GpuCluster, PodGpu};

pub const NAME: &str = "FGDScore";

pub struct FgdScore;

/// The artifact passes `dimExtMethod`/`normMethod` to every score plugin; FGD ignores them.
pub fn new(_: &FactoryArgs<'_>) -> Result<PluginRef, String> {
    Ok(Arc::new(FgdScore))
}

impl Plugin for FgdScore {
    fn name(&self) -> &'static str {
        NAME
    }
    fn as_score(&self) -> Option<&dyn ScorePlugin> {
        Some(self)
    }
}

impl ScorePlugin for FgdScore {
    fn score(&self, state: &CycleState, pod: &PodInfo, node: &NodeInfo) -> Result<i64, Status> {
        with_node(NAME, state, pod, node, |v| {
            node_score(v.cluster, v.slot, node, v.cpu_left, v.pod, pod)
        })
    }

    /// The same scores as [`Self::score`] per node, memoized per pod shape and node state
    /// ([`crate::memo`]): a node is evaluated again only after its GPUs or CPU changed.
    fn score_nodes(
        &self,
        state: &CycleState,
        pod: &PodInfo,
        nodes: &[&NodeInfo],
        out: &mut Vec<i64>,
    ) -> Result<(), Status> {
        let (h, pg) = cycle(state, pod)?;
        let mut cluster = h.write();
        let shape = cluster.memo_shape(NAME, &pg);
        out.reserve(nodes.len());
        for &node in nodes {
            let slot = slot_of(&cluster, NAME, node)?;
            let cpu = cpu_left(node);
            let s = cluster.memo_score(shape, slot, cpu, |c| {
                node_score(c, slot, node, cpu, &pg, pod)
            })?;
            out.push(s);
        }
        Ok(())
    }
}

/// FGD's score of one node (an error when the pod may not use the node's GPU model).
fn node_score(
    cluster: &GpuCluster,
    slot: usize,
    node: &NodeInfo,
    cpu_left: i64,
    pg: &PodGpu,
    pod: &PodInfo,
) -> Result<i64, Status> {
    let g = cluster.gpus(slot);
    if !pg.accessible(g.model) {
        return Err(Status::error(format!(
            "node {} does not match the GPU model request of pod {}",
            node.name(),
            pod.key
        )));
    }
    let before = cluster.node_frag(slot, node);
    let (score, _) = evaluate(
        cluster.frag_table(),
        cluster.typical().total_weight,
        g,
        cpu_left,
        before,
        pg,
    );
    Ok(score)
}

/// The score of one hypothetical placement: `frag_before − frag_after` as numerators over
/// `total_weight`.
pub fn placement_score(delta_numerator: i64, total_weight: u64) -> i64 {
    let delta_milli = if total_weight == 0 {
        0.0
    } else {
        delta_numerator as f64 / total_weight as f64
    };
    (sigmoid(delta_milli / 1000.0) * MAX_NODE_SCORE as f64) as i64
}

/// FGD's score for the node and the GPUs it would give the pod.
/// `before` is the node's current fragment numerator.
pub fn evaluate(
    table: &FragTable,
    total_weight: u64,
    gpus: &NodeGpus,
    cpu_left: i64,
    before: i64,
    pod: &PodGpu,
) -> (i64, GpuSet) {
    let cpu_after = cpu_left - pod.cpu;
    let req = &pod.req;
    if req.is_share() {
        let left = gpus.left();
        let mut best: Option<(i64, usize)> = None;
        for (i, &l) in left.iter().enumerate() {
            // GPUs with equal free milli give equal scores, and the earlier index wins ties:
            // only the first GPU of each free amount needs evaluating.
            if l < req.milli || left[..i].contains(&l) {
                continue;
            }
            let after = table.node_frag(&gpus.after(GpuSet::single(i), req.milli), cpu_after);
            let s = placement_score(before - after, total_weight);
            if best.is_none_or(|(b, _)| s > b) {
                best = Some((s, i));
            }
        }
        match best {
            Some((s, i)) => (s, GpuSet::single(i)),
            None => (0, GpuSet::EMPTY),
        }
    } else {
        // Whole GPUs (or none): the artifact's `Sub` takes the GPUs in ascending order of free
        // milli; for whole GPUs that is the lowest-index idle ones.
        let set = gpus.packing_order_take(req).unwrap_or(GpuSet::EMPTY);
        let after = table.node_frag(&gpus.after(set, req.milli), cpu_after);
        (placement_score(before - after, total_weight), set)
    }
}

/// The GPUs FGD gives the pod on a node (`allocateGpuIdBasedOnFGDScore`), from the node's CPU
/// as last synced into the GPU state.
pub fn choose_gpus(cluster: &GpuCluster, slot: usize, pod: &PodGpu) -> Option<GpuSet> {
    let g = cluster.gpus(slot);
    if !g.fits(&pod.req) {
        return None;
    }
    if !pod.req.is_share() {
        return g.exclusive(&pod.req);
    }
    let cpu = cluster.synced_cpu_left(slot);
    let before = cluster.frag_table().node_frag(g, cpu);
    let (_, set) = evaluate(
        cluster.frag_table(),
        cluster.typical().total_weight,
        g,
        cpu,
        before,
        pod,
    );
    (!set.is_empty()).then_some(set)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::GpuRequest;
    use crate::frag::PodShape;
    use crate::plugins::open_gpu_share::{
        GpuAssignment, GpuSelMethod, OpenGpuShare, ASSIGNMENT_KEY,
    };
    use crate::plugins::testutil::{node, pod, Fixture};
    use ksim_scheduler::framework::{PreFilterPlugin, ReservePlugin};

    /// Typical pods: a 500-milli share with 2 CPUs (weight 1) and a whole GPU with 4 CPUs
    /// (weight 1): frequencies 1/2 each.
    fn shapes() -> Vec<PodShape> {
        vec![
            PodShape {
                cpu: 2000,
                gpu: GpuRequest::share(500),
            },
            PodShape {
                cpu: 4000,
                gpu: GpuRequest::whole(1),
            },
        ]
    }

    /// `calculateGpuShareFragExtendScore` written literally over the reference fragment
    /// (floating-point frequencies, per typical pod, `Sub` by sorting): the fast path must give
    /// the same score and GPU.
    fn literal(
        t: &crate::frag::TypicalPods,
        model: Option<&str>,
        g: &NodeGpus,
        cpu_left: i64,
        pod: &PodGpu,
    ) -> (i64, GpuSet) {
        use crate::frag::node_frag_reference as frag;
        let before = frag(t, model, g, cpu_left);
        let score = |after: f64| (sigmoid((before - after) / 1000.0) * 100.0) as i64;
        if pod.req.is_share() {
            let mut best: Option<(i64, usize)> = None;
            for (i, &l) in g.left().iter().enumerate() {
                if l >= pod.req.milli {
                    let s = score(frag(
                        t,
                        model,
                        &g.after(GpuSet::single(i), pod.req.milli),
                        cpu_left - pod.cpu,
                    ));
                    if best.is_none() || s > best.unwrap().0 {
                        best = Some((s, i));
                    }
                }
            }
            best.map(|(s, i)| (s, GpuSet::single(i)))
                .unwrap_or((0, GpuSet::EMPTY))
        } else {
            let mut idx: Vec<usize> = (0..g.count()).collect();
            idx.sort_by_key(|&i| g.left()[i]);
            let mut set = GpuSet::EMPTY;
            let mut need = pod.req.count;
            for i in idx {
                if need > 0 && pod.req.milli <= g.left()[i] {
                    set.insert(i);
                    need -= 1;
                }
            }
            (
                score(frag(
                    t,
                    model,
                    &g.after(set, pod.req.milli),
                    cpu_left - pod.cpu,
                )),
                set,
            )
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
        #[test]
        fn fast_fgd_matches_the_literal_artifact_formula(
            kinds in proptest::collection::vec((0usize..6, 1i64..24), 1..30),
            left in proptest::collection::vec(0u16..=1000, 1..9),
            pod_kind in 0usize..6,
            pod_cpu in 1i64..24,
            cpu_left in 0i64..64,
        ) {
            let reqs = [
                GpuRequest::none(),
                GpuRequest::share(250),
                GpuRequest::share(470),
                GpuRequest::share(810),
                GpuRequest::whole(1),
                GpuRequest::whole(2),
            ];
            let shapes: Vec<PodShape> = kinds
                .iter()
                .map(|(k, c)| PodShape { cpu: c * 1000, gpu: reqs[*k].clone() })
                .collect();
            let t = crate::frag::TypicalPods::from_shapes(&shapes);
            let table = crate::frag::FragTable::new(&t, &["T4".to_string()]);
            let g = NodeGpus::with_left(Some(0), &left).unwrap();
            let pod = PodGpu { req: reqs[pod_kind].clone(), cpu: pod_cpu * 1000, model_mask: u64::MAX };
            proptest::prop_assume!(g.fits(&pod.req) && cpu_left * 1000 >= pod.cpu);
            let before = table.node_frag(&g, cpu_left * 1000);
            let fast = evaluate(&table, t.total_weight, &g, cpu_left * 1000, before, &pod);
            let slow = literal(&t, Some("T4"), &g, cpu_left * 1000, &pod);
            // Scores may differ by one only where the float sums straddle an integer.
            proptest::prop_assert!((fast.0 - slow.0).abs() <= 1, "{:?} vs {:?}", fast, slow);
            if fast.0 == slow.0 {
                proptest::prop_assert_eq!(fast, slow);
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]
        /// The memoized batch scores against every node scored afresh, over random sequences of
        /// GPU allocations and releases, CPU taken on nodes, and pods of a few shapes.
        #[test]
        fn memoized_scores_match_scores_computed_afresh(
            ops in proptest::collection::vec((0u8..4, 0usize..3, 0usize..6, 0usize..16), 1..80),
        ) {
            let reqs = [
                GpuRequest::none(),
                GpuRequest::share(250),
                GpuRequest::share(500),
                GpuRequest::share(810),
                GpuRequest::whole(1),
                GpuRequest::whole(2),
            ];
            let shapes: Vec<PodShape> = reqs
                .iter()
                .enumerate()
                .map(|(i, r)| PodShape { cpu: 1000 * (i as i64 % 3 + 1), gpu: r.clone() })
                .collect();
            let mut f = Fixture::new(
                vec![
                    node("a", 16_000, 4, "T4"),
                    node("b", 32_000, 8, "T4"),
                    node("c", 8_000, 2, "V100M32"),
                ],
                &shapes,
            );
            let mut held: Vec<(usize, GpuSet, GpuRequest)> = Vec::new();
            let mut cpu_pods = 0;
            for (op, n, k, x) in ops {
                match op {
                    0 => {
                        let req = &reqs[k];
                        let set = f.handle.read().gpus(n).best_fit(req);
                        if let Some(set) = set.filter(|s| !s.is_empty()) {
                            f.take(n, set, req);
                            held.push((n, set, req.clone()));
                        }
                    }
                    1 => {
                        if !held.is_empty() {
                            let (n, set, req) = held.remove(x % held.len());
                            f.handle.write().release(n, set, &req).unwrap();
                        }
                    }
                    2 => {
                        if cpu_pods < 6 {
                            f.use_cpu(n, 500 * (x as i64 + 1));
                            cpu_pods += 1;
                        }
                    }
                    _ => {
                        let p = pod("p", 1000 * (x as i64 % 3 + 1), &reqs[k]);
                        let mut st = f.state();
                        OpenGpuShare { method: GpuSelMethod::Fgd }.pre_filter(&mut st, &p, &f.snapshot);
                        let nodes: Vec<&NodeInfo> = f.snapshot.nodes.iter().collect();
                        let mut memo = Vec::new();
                        FgdScore.score_nodes(&st, &p, &nodes, &mut memo).unwrap();
                        let fresh: Vec<i64> =
                            nodes.iter().map(|n| FgdScore.score(&st, &p, n).unwrap()).collect();
                        proptest::prop_assert_eq!(memo, fresh);
                    }
                }
            }
        }
    }

    #[test]
    fn sigmoid_score_of_hand_computed_deltas() {
        assert_eq!(placement_score(0, 2), 50);
        // A fragmentation rise of 500 milli: sigmoid(-0.5) = 0.3775 → 37.
        assert_eq!(placement_score(-1000, 2), 37);
        // A drop of 1000 milli: sigmoid(1) = 0.7311 → 73.
        assert_eq!(placement_score(2000, 2), 73);
        assert_eq!(placement_score(-16_000, 2), 0);
    }

    #[test]
    fn share_goes_where_fragmentation_rises_least() {
        // Node: 2 GPUs free [1000, 700], 32 CPUs. Typical pods S (500 share) and W (1 GPU).
        // Before: S fits (no GPU < 500 free): 0; W fits GPU 0: fragment 700.
        //   frag = (0 + 700)/2 = 350 milli.
        // A 200-milli share on GPU 0 → [800, 700]: S 0; W cannot fit: 1500 → 750. Δ = −400.
        // On GPU 1 → [1000, 500]: S 0; W fits: 500 → 250. Δ = +100 → sigmoid(0.1) = 0.525 → 52.
        let mut f = Fixture::new(vec![node("n", 32_000, 2, "T4")], &shapes());
        f.take(0, GpuSet::single(1), &GpuRequest::share(300));
        f.use_cpu(0, 0);
        let c = f.handle.read();
        let p = c.pod_gpu(&pod("p", 1000, &GpuRequest::share(200))).unwrap();
        let g = c.gpus(0);
        let before = c.frag_table().node_frag(g, 32_000);
        assert_eq!(c.typical().milli(before), 350.0);
        let (score, set) = evaluate(
            c.frag_table(),
            c.typical().total_weight,
            g,
            32_000,
            before,
            &p,
        );
        assert_eq!((score, set), (52, GpuSet::single(1)));
        // Best fit would also pick GPU 1 here; FGD's choice through the plugin path agrees.
        assert_eq!(choose_gpus(&c, 0, &p), Some(GpuSet::single(1)));
    }

    #[test]
    fn fgd_choice_can_differ_from_best_fit() {
        // Node: 3 GPUs free [1000, 600, 450]; typical pods: 500-milli share (weight 3) and
        // 400-milli share (weight 1).
        // A 100 share:
        //  - best fit: GPU 2 (450 → 350).
        //  - FGD on GPU 2 → [1000, 600, 350]: S500 frag = 350, S400 frag = 350 →
        //    (3·350 + 350)/4 = 350; before: S500 frag 450, S400 0 → 1350/4 = 337.5; Δ −12.5.
        //  - FGD on GPU 1 → [1000, 500, 450]: S500 frag 450, S400 0 → 337.5; Δ 0 → 50.
        //  - FGD on GPU 0 → [900, 600, 450]: same as before → 50, and GPU 0 comes first.
        let shapes = vec![
            PodShape {
                cpu: 1000,
                gpu: GpuRequest::share(500),
            },
            PodShape {
                cpu: 1000,
                gpu: GpuRequest::share(500),
            },
            PodShape {
                cpu: 1000,
                gpu: GpuRequest::share(500),
            },
            PodShape {
                cpu: 1000,
                gpu: GpuRequest::share(400),
            },
        ];
        let f = Fixture::new(vec![node("n", 32_000, 3, "T4")], &shapes);
        f.take(0, GpuSet::single(1), &GpuRequest::share(400));
        f.take(0, GpuSet::single(2), &GpuRequest::share(550));
        let c = f.handle.read();
        let p = c.pod_gpu(&pod("p", 1000, &GpuRequest::share(100))).unwrap();
        assert_eq!(c.gpus(0).best_fit(&p.req), Some(GpuSet::single(2)));
        let before = c.frag_table().node_frag(c.gpus(0), 32_000);
        assert_eq!(c.typical().milli(before), 337.5);
        let (score, set) = evaluate(
            c.frag_table(),
            c.typical().total_weight,
            c.gpus(0),
            32_000,
            before,
            &p,
        );
        assert_eq!((score, set), (50, GpuSet::single(0)));
    }

    #[test]
    fn whole_gpu_and_cpu_only_pods() {
        // Node: 2 idle GPUs, 8 CPUs; typical S (share 500, 2 CPUs), W (1 GPU, 4 CPUs).
        // Before: S 0, W 0 → 0. One whole GPU (4 CPUs) → [0, 1000], 4 CPUs left: S 0, W 0 → Δ 0.
        let f = Fixture::new(vec![node("n", 8_000, 2, "T4")], &shapes());
        let c = f.handle.read();
        let w = c.pod_gpu(&pod("w", 4000, &GpuRequest::whole(1))).unwrap();
        assert_eq!(
            evaluate(c.frag_table(), 2, c.gpus(0), 8_000, 0, &w),
            (50, GpuSet::single(0))
        );
        // A CPU-only pod taking 5 CPUs leaves 3: W lacks CPU → its fragment is all 2000 idle
        // milli → 1000 milli; Δ = −1000 → sigmoid(−1) = 0.2689 → 26.
        let cpu = c.pod_gpu(&pod("c", 5000, &GpuRequest::none())).unwrap();
        assert_eq!(
            evaluate(c.frag_table(), 2, c.gpus(0), 8_000, 0, &cpu),
            (26, GpuSet::EMPTY)
        );
    }

    #[test]
    fn score_plugin_and_reserve_agree() {
        let f = Fixture::new(
            vec![node("a", 32_000, 2, "T4"), node("b", 32_000, 2, "T4")],
            &shapes(),
        );
        f.take(1, GpuSet::single(1), &GpuRequest::share(300));
        let mut st = f.state();
        let p = pod("p", 1000, &GpuRequest::share(200));
        let share = OpenGpuShare {
            method: GpuSelMethod::Fgd,
        };
        share.pre_filter(&mut st, &p, &f.snapshot);
        let s = FgdScore;
        // a: [1000, 1000] → 200 share anywhere: [800, 1000]: S 0; W fits GPU 1 → 800 → 400.
        //    before 0 → Δ −400 → sigmoid(−0.4) = 0.401 → 40.
        // b: as in share_goes_where_fragmentation_rises_least → 52.
        assert_eq!(s.score(&st, &p, &f.snapshot.nodes[0]), Ok(40));
        assert_eq!(s.score(&st, &p, &f.snapshot.nodes[1]), Ok(52));
        assert!(share.reserve(&mut st, &p, "b").is_success());
        let a = st.read::<GpuAssignment>(ASSIGNMENT_KEY).unwrap();
        assert_eq!(a.gpus, GpuSet::single(1));
        assert_eq!(f.handle.read().gpus(1).left(), &[1000, 500]);
    }
}
