//! "Typical pods" and the GPU fragmentation measure of the FGD paper (artifact:
//! `pkg/utils/frag.go`: `GetTypicalPods`, `GetNodePodFrag`, `NodeGpuShareFragAmount`).
//!
//! Typical pods are the distinct request shapes (CPU, GPUs, milli per GPU, allowed models) of
//! the workload, most frequent first, taken until they cover 95% of the pods (popularity
//! threshold 95, step 1, CPU-only pods included), each weighted by its frequency among the
//! chosen ones.
//!
//! A node's fragment for one typical pod: when the pod cannot use the node at all (it needs no
//! GPU, the node lacks CPU or GPU for it, or has the wrong model) every idle GPU milli on the
//! node is fragment; when it fits, only the idle milli of GPUs whose free milli is below the
//! pod's per-GPU milli is. A node's fragment is the frequency-weighted sum over typical pods;
//! the cluster's is the sum over nodes. Memory is ignored, as in the artifact.
//!
//! The frequencies are `weight / Σ weights` of the chosen shapes, so the fragment is kept as the
//! exact integer numerator `Σ weight × milli` ([`FragTable::node_frag`]); dividing by
//! [`TypicalPods::total_weight`] gives milli. Integers keep the running cluster sum exact and
//! the result independent of summation order.

use std::collections::BTreeMap;

use crate::device::{GpuRequest, NodeGpus};

/// A pod's request shape, the artifact's `PodResource` key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PodShape {
    /// Millicores, with a missing request counted as 100m (`GetNonzeroRequests`).
    pub cpu: i64,
    pub gpu: GpuRequest,
}

/// One typical pod and how often its shape occurs in the workload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypicalPod {
    pub shape: PodShape,
    pub weight: u64,
}

/// The typical pods of a workload.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TypicalPods {
    /// Most frequent first (ties: larger CPU, then larger milli, more GPUs, later model list,
    /// as the artifact's reversed sort).
    pub pods: Vec<TypicalPod>,
    /// Σ weight of `pods`: the frequencies' denominator.
    pub total_weight: u64,
    /// Pods in the workload.
    pub workload_pods: u64,
    /// Distinct shapes in the workload.
    pub distinct_shapes: usize,
}

/// The artifact's popularity threshold (percent of pods the typical shapes must cover).
pub const POPULARITY_THRESHOLD_PCT: u64 = 95;

impl TypicalPods {
    /// `GetTypicalPods` with threshold 95, step 1, CPU-only pods included, no GPU weighting.
    pub fn from_shapes<'a>(shapes: impl IntoIterator<Item = &'a PodShape>) -> TypicalPods {
        let mut counts: BTreeMap<&PodShape, u64> = BTreeMap::new();
        let mut total = 0u64;
        for s in shapes {
            *counts.entry(s).or_default() += 1;
            total += 1;
        }
        let distinct = counts.len();
        let mut all: Vec<TypicalPod> = counts
            .into_iter()
            .map(|(s, w)| TypicalPod {
                shape: s.clone(),
                weight: w,
            })
            .collect();
        // sort.Sort(sort.Reverse(pl)) with Less = (percentage, MilliCpu, MilliGpu, GpuNumber,
        // GpuType): everything descending.
        all.sort_by(|a, b| {
            (
                b.weight,
                b.shape.cpu,
                b.shape.gpu.milli,
                b.shape.gpu.count,
                model_key(&b.shape),
            )
                .cmp(&(
                    a.weight,
                    a.shape.cpu,
                    a.shape.gpu.milli,
                    a.shape.gpu.count,
                    model_key(&a.shape),
                ))
        });
        // Take shapes one at a time until they cover the threshold (cum ≥ 95% of pods).
        let mut cum = 0u64;
        let mut take = 0usize;
        while cum * 100 < POPULARITY_THRESHOLD_PCT * total && take < all.len() {
            cum += all[take].weight;
            take += 1;
        }
        all.truncate(take);
        TypicalPods {
            pods: all,
            total_weight: cum,
            workload_pods: total,
            distinct_shapes: distinct,
        }
    }

    /// Fragment milli from a numerator of [`FragTable::node_frag`].
    pub fn milli(&self, numerator: i64) -> f64 {
        if self.total_weight == 0 {
            0.0
        } else {
            numerator as f64 / self.total_weight as f64
        }
    }
}

/// The artifact's `GpuType` string: the allowed models joined by `|`.
fn model_key(s: &PodShape) -> String {
    s.gpu.models.join("|")
}

/// Typical pods of one (milli per GPU, GPUs) group, by CPU.
#[derive(Debug, Clone, Default)]
struct Group {
    milli: u16,
    count: u8,
    /// CPU requests ascending.
    cpus: Vec<i64>,
    /// `cum[k]` = Σ weight of the first k entries of `cpus`.
    cum: Vec<i64>,
}

/// The typical pods as seen from nodes of one GPU model.
#[derive(Debug, Clone, Default)]
struct ModelView {
    /// Σ weight of typical pods for which every idle milli is fragment whatever the node's
    /// state: CPU-only pods and pods that may not use this model.
    always_idle: i64,
    groups: Vec<Group>,
}

/// The fragmentation measure, precomputed per GPU model so that one node costs
/// O(groups × GPUs) instead of O(typical pods × GPUs).
#[derive(Debug, Clone, Default)]
pub struct FragTable {
    /// Per model index of the cluster's model table, then one entry for nodes without a model.
    views: Vec<ModelView>,
}

impl FragTable {
    /// `models` is the cluster's model table (node model index → name).
    pub fn new(typical: &TypicalPods, models: &[String]) -> FragTable {
        let mut views = Vec::with_capacity(models.len() + 1);
        for m in models.iter().map(Some).chain(std::iter::once(None)) {
            let mut v = ModelView::default();
            let mut groups: BTreeMap<(u16, u8), Vec<(i64, i64)>> = BTreeMap::new();
            for t in &typical.pods {
                let w = t.weight as i64;
                let g = &t.shape.gpu;
                if !g.wants_gpu() || !accessible(m.map(String::as_str), &g.models) {
                    v.always_idle += w;
                } else {
                    groups
                        .entry((g.milli, g.count))
                        .or_default()
                        .push((t.shape.cpu, w));
                }
            }
            for ((milli, count), mut pods) in groups {
                pods.sort();
                let mut cum = Vec::with_capacity(pods.len() + 1);
                cum.push(0);
                let mut acc = 0;
                for (_, w) in &pods {
                    acc += w;
                    cum.push(acc);
                }
                v.groups.push(Group {
                    milli,
                    count,
                    cpus: pods.iter().map(|(c, _)| *c).collect(),
                    cum,
                });
            }
            views.push(v);
        }
        FragTable { views }
    }

    /// The node's fragment numerator (divide by [`TypicalPods::total_weight`] for milli):
    /// `Σ_t weight_t × fragment_t(node)`. `cpu_left` is the node's unrequested millicores.
    pub fn node_frag(&self, gpus: &NodeGpus, cpu_left: i64) -> i64 {
        let view = match gpus.model {
            Some(m) if (m as usize) < self.views.len().saturating_sub(1) => &self.views[m as usize],
            _ => match self.views.last() {
                Some(v) => v,
                None => return 0,
            },
        };
        let left = gpus.left();
        let idle: i64 = left.iter().map(|&l| l as i64).sum();
        if idle == 0 {
            return 0;
        }
        let mut f = idle * view.always_idle;
        for g in &view.groups {
            let mut fitting = 0usize;
            let mut small = 0i64;
            for &l in left {
                if l >= g.milli {
                    fitting += 1;
                } else {
                    small += l as i64;
                }
            }
            let total = g.cum[g.cum.len() - 1];
            if fitting >= g.count as usize {
                // Pods whose CPU fits see only the too-small GPUs as fragment (Q3); the others
                // lack CPU (Q4) and see every idle milli.
                let k = g.cpus.partition_point(|&c| c <= cpu_left);
                let w_fit = g.cum[k];
                f += w_fit * small + (total - w_fit) * idle;
            } else {
                f += total * idle;
            }
        }
        f
    }
}

/// `IsNodeAccessibleToPodByType`: a pod without model constraint may use any node; a node
/// without a model serves no constrained pod.
pub fn accessible(node_model: Option<&str>, pod_models: &[String]) -> bool {
    if pod_models.is_empty() {
        return true;
    }
    match node_model {
        None => false,
        Some(m) => pod_models.iter().any(|p| p == m),
    }
}

/// The artifact's per-typical-pod computation, literally (floating-point frequencies): the
/// reference the fast [`FragTable`] is tested against.
pub fn node_frag_reference(
    typical: &TypicalPods,
    node_model: Option<&str>,
    gpus: &NodeGpus,
    cpu_left: i64,
) -> f64 {
    let left = gpus.left();
    let idle: i64 = left.iter().map(|&l| l as i64).sum();
    let mut frag = 0.0;
    for t in &typical.pods {
        let freq = t.weight as f64 / typical.total_weight as f64;
        let g = &t.shape.gpu;
        // GetNodePodFrag
        let satisfied = if g.milli == 0 || !accessible(node_model, &g.models) {
            false
        } else {
            // CanNodeHostPodOnGpuMemory
            let mut need = g.count as i64;
            let mut can = false;
            for &l in left {
                if l >= g.milli {
                    need -= 1;
                    if need <= 0 {
                        can = true;
                        break;
                    }
                }
            }
            can && cpu_left >= t.shape.cpu
        };
        if satisfied {
            let small: i64 = left
                .iter()
                .filter(|&&l| l < g.milli)
                .map(|&l| l as i64)
                .sum();
            frag += freq * small as f64;
        } else {
            frag += freq * idle as f64;
        }
    }
    frag
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn shape(cpu: i64, gpu: GpuRequest) -> PodShape {
        PodShape { cpu, gpu }
    }

    #[test]
    fn typical_pods_cover_95_percent_most_frequent_first() {
        // 100 pods: 60 × A, 30 × B, 6 × C, 4 × D. A+B = 90% < 95%, A+B+C = 96% ≥ 95%.
        let a = shape(4000, GpuRequest::whole(1));
        let b = shape(8000, GpuRequest::share(500));
        let c = shape(2000, GpuRequest::none());
        let d = shape(1000, GpuRequest::whole(8));
        let mut all = Vec::new();
        all.extend(std::iter::repeat_n(a.clone(), 60));
        all.extend(std::iter::repeat_n(d.clone(), 4));
        all.extend(std::iter::repeat_n(b.clone(), 30));
        all.extend(std::iter::repeat_n(c.clone(), 6));
        let t = TypicalPods::from_shapes(&all);
        let got: Vec<(&PodShape, u64)> = t.pods.iter().map(|p| (&p.shape, p.weight)).collect();
        assert_eq!(got, vec![(&a, 60), (&b, 30), (&c, 6)]);
        assert_eq!(t.total_weight, 96);
        assert_eq!(t.workload_pods, 100);
        assert_eq!(t.distinct_shapes, 4);
    }

    #[test]
    fn typical_pod_ties_break_descending_by_resources() {
        let small = shape(1000, GpuRequest::share(200));
        let big = shape(2000, GpuRequest::share(100));
        let t = TypicalPods::from_shapes(&[small.clone(), big.clone()]);
        assert_eq!(t.pods[0].shape, big);
        assert_eq!(t.pods[1].shape, small);
        // Exactly 95% covered stops there: 19 of 20.
        let mut v = vec![small.clone(); 19];
        v.push(big.clone());
        let t = TypicalPods::from_shapes(&v);
        assert_eq!(t.pods.len(), 1);
        assert_eq!(t.total_weight, 19);
    }

    /// Three typical pods with frequencies 1/2, 1/4, 1/4:
    /// - A: 1 whole GPU, 8 CPUs (weight 2)
    /// - B: 500-milli share, 4 CPUs (weight 1)
    /// - C: CPU-only, 2 CPUs (weight 1)
    fn abc() -> TypicalPods {
        let a = shape(8000, GpuRequest::whole(1));
        let b = shape(4000, GpuRequest::share(500));
        let c = shape(2000, GpuRequest::none());
        TypicalPods::from_shapes(&[a.clone(), a, b, c])
    }

    #[test]
    fn hand_computed_node_fragment() {
        let t = abc();
        assert_eq!(t.total_weight, 4);
        let table = FragTable::new(&t, &["T4".to_string()]);
        // Node: 4 GPUs free [1000, 300, 600, 0] = 1900 idle milli, 16 CPUs free.
        //  A fits (GPU 0 idle, CPU ok): fragment = GPUs with < 1000 free = 300 + 600 = 900.
        //  B fits (GPU 0 or 2, CPU ok): fragment = GPUs with < 500 free = 300.
        //  C needs no GPU: all 1900 idle milli.
        //  node = 1/2·900 + 1/4·300 + 1/4·1900 = 450 + 75 + 475 = 1000 milli.
        let n = NodeGpus::with_left(Some(0), &[1000, 300, 600, 0]).unwrap();
        let num = table.node_frag(&n, 16_000);
        assert_eq!(num, 4000);
        assert_eq!(t.milli(num), 1000.0);
        assert_eq!(node_frag_reference(&t, Some("T4"), &n, 16_000), 1000.0);
        // Only 6 CPUs free: A lacks CPU (all 1900), B still fits (300), C 1900:
        // 950 + 75 + 475 = 1500.
        assert_eq!(t.milli(table.node_frag(&n, 6_000)), 1500.0);
        // The same free amounts in another order: the same fragment.
        let n2 = NodeGpus::with_left(Some(0), &[300, 600, 0, 1000]).unwrap();
        assert_eq!(
            t.milli(table.node_frag(&n2, 16_000)),
            1000.0,
            "order of GPUs is irrelevant"
        );
        let n3 = NodeGpus::with_left(Some(0), &[300, 600]).unwrap();
        // A: 900; B fits GPU 1: fragment 300; C: 900 → 450 + 75 + 225 = 750.
        assert_eq!(t.milli(table.node_frag(&n3, 16_000)), 750.0);
        // A fully used node has no fragment.
        let full = NodeGpus::with_left(Some(0), &[0, 0]).unwrap();
        assert_eq!(table.node_frag(&full, 16_000), 0);
    }

    #[test]
    fn model_constraints_make_the_whole_node_fragment() {
        let a = shape(1000, GpuRequest::whole(1).with_models(&["V100M32"]));
        let b = shape(1000, GpuRequest::share(500));
        let t = TypicalPods::from_shapes(&[a, b]);
        let models = vec!["T4".to_string(), "V100M32".to_string()];
        let table = FragTable::new(&t, &models);
        // T4 node, 2 idle GPUs: A may not use it (2000), B fits (no GPU below 500): 0.
        let t4 = NodeGpus::with_left(Some(0), &[1000, 1000]).unwrap();
        assert_eq!(t.milli(table.node_frag(&t4, 8000)), 1000.0);
        let v100 = NodeGpus::with_left(Some(1), &[1000, 1000]).unwrap();
        assert_eq!(table.node_frag(&v100, 8000), 0);
        // A node without a model serves neither constrained pods.
        let none = NodeGpus::with_left(None, &[1000]).unwrap();
        assert_eq!(t.milli(table.node_frag(&none, 8000)), 500.0);
        assert_eq!(node_frag_reference(&t, None, &none, 8000), 500.0);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        #[test]
        fn table_matches_the_artifact_formula(
            shapes in prop::collection::vec((0usize..6, 1000i64..20_000), 1..40),
            left in prop::collection::vec(0u16..=1000, 0..9),
            model in 0u8..3,
            cpu_left in 0i64..40_000,
        ) {
            let kinds = [
                GpuRequest::none(),
                GpuRequest::share(250),
                GpuRequest::share(500),
                GpuRequest::whole(1),
                GpuRequest::whole(2).with_models(&["B"]),
                GpuRequest::share(700).with_models(&["A", "C"]),
            ];
            let shapes: Vec<PodShape> = shapes
                .iter()
                .map(|(k, cpu)| shape(cpu / 1000 * 1000, kinds[*k].clone()))
                .collect();
            let t = TypicalPods::from_shapes(&shapes);
            let models = vec!["A".to_string(), "B".to_string()];
            let (m, name) = match model {
                0 => (Some(0), Some("A")),
                1 => (Some(1), Some("B")),
                _ => (None, None),
            };
            let n = NodeGpus::with_left(m, &left).unwrap();
            let table = FragTable::new(&t, &models);
            let fast = t.milli(table.node_frag(&n, cpu_left));
            let slow = node_frag_reference(&t, name, &n, cpu_left);
            prop_assert!((fast - slow).abs() <= 1e-6 * slow.abs().max(1.0), "{} vs {}", fast, slow);
        }
    }
}
