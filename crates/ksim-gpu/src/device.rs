//! The GPU device model: a node's GPUs, a pod's GPU request, and per-GPU accounting.
//!
//! A node has `count` GPUs of one model: allocatable `alibabacloud.com/gpu-count: N`,
//! `alibabacloud.com/gpu-milli: N × 1000` and the label `alibabacloud.com/gpu-card-model`, as
//! the openb importer in `ksim-trace` writes them. A pod asks for either `k` whole GPUs
//! (requests `gpu-count: k`, `gpu-milli: 1000·k`) or a share of one GPU (`gpu-milli: m`,
//! `m < 1000`, no `gpu-count`), optionally restricted to GPU models by required node affinity
//! on the model label (the importer's form of the trace's `gpu_spec`).
//!
//! Accounting is per GPU, as the FGD artifact's `open-gpu-share` cache does: a share must fit
//! inside one GPU's remaining milli and is never split across GPUs; whole GPUs must be idle
//! (1000 milli left). Reserving and releasing a pod changes exactly the GPUs in its
//! [`GpuSet`].

use std::fmt;

use ksim_scheduler::node_info::NodeInfo;
use ksim_scheduler::pod_info::PodInfo;
use rand::Rng;

/// Extended resource: GPUs (node allocatable; pod request for whole GPUs).
pub const GPU_COUNT: &str = "alibabacloud.com/gpu-count";
/// Extended resource: GPU milli (1000 per GPU on nodes; GPUs × milli per GPU on pods).
pub const GPU_MILLI: &str = "alibabacloud.com/gpu-milli";
/// Node label naming the GPU model.
pub const GPU_MODEL: &str = "alibabacloud.com/gpu-card-model";
/// Pod annotation the reserve step writes: the GPU indices it took, `-`-separated (`0-1`), as
/// the artifact's `alibabacloud.com/gpu-index`.
pub const GPU_INDEX: &str = "alibabacloud.com/gpu-index";
/// Milli of one whole GPU.
pub const MILLI_PER_GPU: u16 = 1000;
/// The most GPUs one node may have (a [`GpuSet`] is a 16-bit mask).
pub const MAX_GPUS_PER_NODE: usize = 16;

/// A set of GPU indices on one node, as a bit mask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct GpuSet(pub u16);

impl GpuSet {
    pub const EMPTY: GpuSet = GpuSet(0);

    pub fn single(i: usize) -> GpuSet {
        GpuSet(1 << i)
    }
    pub fn insert(&mut self, i: usize) {
        self.0 |= 1 << i;
    }
    pub fn contains(self, i: usize) -> bool {
        self.0 & (1 << i) != 0
    }
    pub fn len(self) -> usize {
        self.0.count_ones() as usize
    }
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
    /// The indices, ascending.
    pub fn iter(self) -> impl Iterator<Item = usize> {
        (0..MAX_GPUS_PER_NODE).filter(move |&i| self.contains(i))
    }
}

impl fmt::Display for GpuSet {
    /// The artifact's device-index form: `0-1-2`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for i in self.iter() {
            if !first {
                f.write_str("-")?;
            }
            write!(f, "{i}")?;
            first = false;
        }
        Ok(())
    }
}

/// What a pod asks of GPUs.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct GpuRequest {
    /// GPUs wanted: 0 (none), 1 (a share or one whole GPU) or k whole GPUs.
    pub count: u8,
    /// Milli per GPU: 1..=999 for a share (then `count == 1`), 1000 for whole GPUs, 0 for none.
    pub milli: u16,
    /// Allowed GPU models, sorted and deduplicated; empty = any model.
    pub models: Vec<String>,
}

impl GpuRequest {
    /// No GPU.
    pub fn none() -> GpuRequest {
        GpuRequest::default()
    }

    /// `k` whole GPUs of any model.
    pub fn whole(k: u8) -> GpuRequest {
        GpuRequest {
            count: k,
            milli: MILLI_PER_GPU,
            models: Vec::new(),
        }
    }

    /// A share of one GPU of any model.
    pub fn share(milli: u16) -> GpuRequest {
        GpuRequest {
            count: 1,
            milli,
            models: Vec::new(),
        }
    }

    pub fn with_models(mut self, models: &[&str]) -> GpuRequest {
        let mut m: Vec<String> = models.iter().map(|s| s.to_string()).collect();
        m.sort();
        m.dedup();
        self.models = m;
        self
    }

    pub fn wants_gpu(&self) -> bool {
        self.count > 0
    }

    /// A share of one GPU (the artifact's `IsGpuShare`).
    pub fn is_share(&self) -> bool {
        self.count == 1 && self.milli < MILLI_PER_GPU
    }

    /// Total milli: count × milli per GPU.
    pub fn total_milli(&self) -> i64 {
        self.count as i64 * self.milli as i64
    }

    /// Reads a pod's GPU request from its resource requests and its required node affinity.
    ///
    /// `gpu-count: k` with `gpu-milli: 1000·k` is `k` whole GPUs; `gpu-milli: m < 1000` without
    /// `gpu-count` is a share of one GPU. Anything else (a share spread over several GPUs, more
    /// than a GPU's worth per GPU) is outside the model and an error.
    pub fn from_pod(pod: &PodInfo) -> Result<GpuRequest, String> {
        let milli = pod.requests.scalar(GPU_MILLI);
        let count = pod.requests.scalar(GPU_COUNT);
        let (count, milli) = match (count, milli) {
            (0, 0) => return Ok(GpuRequest::none()),
            (0, m) if (1..MILLI_PER_GPU as i64).contains(&m) => (1u8, m as u16),
            (0, m) => {
                return Err(format!(
                    "requests {GPU_MILLI}: {m} without {GPU_COUNT}: a shared GPU request must be \
                     below 1000 milli (whole GPUs also request {GPU_COUNT})"
                ))
            }
            (k, m) if k > 0 && k <= MAX_GPUS_PER_NODE as i64 && m == k * 1000 => {
                (k as u8, MILLI_PER_GPU)
            }
            (k, m) => {
                return Err(format!(
                    "requests {GPU_COUNT}: {k} and {GPU_MILLI}: {m}: whole GPUs need \
                     {GPU_MILLI} = 1000 × {GPU_COUNT} (1 ≤ {GPU_COUNT} ≤ {MAX_GPUS_PER_NODE})"
                ))
            }
        };
        Ok(GpuRequest {
            count,
            milli,
            models: required_models(pod),
        })
    }
}

/// The GPU models a pod's required node affinity allows: the union over its terms of the
/// values of `In` requirements on the model label. A term without such a requirement allows
/// every model, and so does a pod without required node affinity.
fn required_models(pod: &PodInfo) -> Vec<String> {
    let Some(req) = pod
        .pod
        .spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| na.required.as_ref())
    else {
        return Vec::new();
    };
    let mut models: Vec<String> = Vec::new();
    for term in &req.node_selector_terms {
        let mut found = false;
        for r in &term.match_expressions {
            if r.key == GPU_MODEL && r.operator == "In" {
                found = true;
                models.extend(r.values.iter().cloned());
            }
        }
        if !found {
            return Vec::new();
        }
    }
    models.sort();
    models.dedup();
    models
}

/// One node's GPUs: the model (an index into the cluster's model table) and each GPU's free
/// milli, plus how many GPU pods of each "affinity" class run there (for GpuClustering).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeGpus {
    pub model: Option<u8>,
    count: u8,
    left: [u16; MAX_GPUS_PER_NODE],
    /// Pods per affinity class: `[0]` shared-GPU pods, `[k]` pods of k whole GPUs.
    classes: [u32; MAX_GPUS_PER_NODE + 1],
}

impl NodeGpus {
    /// A node with `count` idle GPUs.
    pub fn new(model: Option<u8>, count: usize) -> Result<NodeGpus, String> {
        if count > MAX_GPUS_PER_NODE {
            return Err(format!(
                "{count} GPUs: at most {MAX_GPUS_PER_NODE} GPUs per node are supported"
            ));
        }
        let mut left = [0u16; MAX_GPUS_PER_NODE];
        left[..count].fill(MILLI_PER_GPU);
        Ok(NodeGpus {
            model,
            count: count as u8,
            left,
            classes: [0; MAX_GPUS_PER_NODE + 1],
        })
    }

    /// A node with the given free milli per GPU (tests, hand-computed examples).
    pub fn with_left(model: Option<u8>, left: &[u16]) -> Result<NodeGpus, String> {
        let mut n = NodeGpus::new(model, left.len())?;
        for (i, &l) in left.iter().enumerate() {
            if l > MILLI_PER_GPU {
                return Err(format!("GPU {i}: {l} milli free is more than a GPU"));
            }
            n.left[i] = l;
        }
        Ok(n)
    }

    /// Reads a node's GPUs from its allocatable resources: `gpu-count` GPUs, and `gpu-milli`
    /// (when present) must be 1000 per GPU. `model` is the node's model-table index.
    pub fn from_node(node: &NodeInfo, model: Option<u8>) -> Result<NodeGpus, String> {
        let count = node.allocatable.scalar(GPU_COUNT);
        let milli = node.allocatable.scalar(GPU_MILLI);
        if count < 0 || count as usize > MAX_GPUS_PER_NODE {
            return Err(format!(
                "allocatable {GPU_COUNT}: {count}: expected 0..={MAX_GPUS_PER_NODE}"
            ));
        }
        if milli != 0 && milli != count * 1000 {
            return Err(format!(
                "allocatable {GPU_MILLI}: {milli} is not 1000 × {GPU_COUNT} ({count})"
            ));
        }
        NodeGpus::new(model, count as usize)
    }

    pub fn count(&self) -> usize {
        self.count as usize
    }

    /// Free milli of each GPU, by index.
    pub fn left(&self) -> &[u16] {
        &self.left[..self.count as usize]
    }

    /// Free milli over all GPUs.
    pub fn total_left(&self) -> i64 {
        self.left().iter().map(|&l| l as i64).sum()
    }

    /// Used milli over all GPUs.
    pub fn used_milli(&self) -> i64 {
        self.count as i64 * MILLI_PER_GPU as i64 - self.total_left()
    }

    /// GPUs with nothing allocated (the artifact's `GetFullyFreeGpuNum`).
    pub fn idle_gpus(&self) -> usize {
        self.left().iter().filter(|&&l| l == MILLI_PER_GPU).count()
    }

    /// GPU pods per affinity class (index 0: shared; k: k whole GPUs).
    pub fn classes(&self) -> &[u32; MAX_GPUS_PER_NODE + 1] {
        &self.classes
    }

    /// Whether the request fits the GPUs (the model is checked by the caller): a share needs
    /// one GPU with enough free milli, `k` whole GPUs need `k` idle GPUs.
    pub fn fits(&self, req: &GpuRequest) -> bool {
        if !req.wants_gpu() {
            return true;
        }
        let n = self.left().iter().filter(|&&l| l >= req.milli).count();
        n >= req.count as usize
    }

    /// Whole GPUs: the lowest-index idle GPUs (the artifact's `AllocateExclusiveGpuId`).
    pub fn exclusive(&self, req: &GpuRequest) -> Option<GpuSet> {
        let mut set = GpuSet::EMPTY;
        for (i, &l) in self.left().iter().enumerate() {
            if set.len() == req.count as usize {
                break;
            }
            if l == MILLI_PER_GPU {
                set.insert(i);
            }
        }
        (set.len() == req.count as usize).then_some(set)
    }

    /// Best fit (`allocateGpuIdBasedOnBestFit`): a share goes to the GPU with the least free
    /// milli that still fits it (lowest index among equals); whole GPUs as [`Self::exclusive`].
    pub fn best_fit(&self, req: &GpuRequest) -> Option<GpuSet> {
        if !req.wants_gpu() {
            return Some(GpuSet::EMPTY);
        }
        if !req.is_share() {
            return self.exclusive(req);
        }
        let mut best: Option<usize> = None;
        for (i, &l) in self.left().iter().enumerate() {
            if l >= req.milli && best.is_none_or(|b| l < self.left[b]) {
                best = Some(i);
            }
        }
        best.map(GpuSet::single)
    }

    /// Random fit (`allocateGpuIdBasedOnRandomFit`): a share goes to a GPU drawn uniformly
    /// among those it fits (reservoir sampling in index order); whole GPUs as
    /// [`Self::exclusive`].
    pub fn random_fit(&self, req: &GpuRequest, rng: &mut impl Rng) -> Option<GpuSet> {
        if !req.wants_gpu() {
            return Some(GpuSet::EMPTY);
        }
        if !req.is_share() {
            return self.exclusive(req);
        }
        let mut chosen = None;
        let mut seen = 0u32;
        for (i, &l) in self.left().iter().enumerate() {
            if l >= req.milli {
                seen += 1;
                if rng.random_range(0..seen) == 0 {
                    chosen = Some(i);
                }
            }
        }
        chosen.map(GpuSet::single)
    }

    /// The GPUs `nodeRes.Sub(pod)` takes in the artifact: the GPUs in ascending order of free
    /// milli (stable by index), each taken when the per-GPU milli fits. For whole GPUs that is
    /// the lowest-index idle GPUs, for a share the best-fit GPU.
    pub fn packing_order_take(&self, req: &GpuRequest) -> Option<GpuSet> {
        if !req.wants_gpu() {
            return Some(GpuSet::EMPTY);
        }
        let mut set = GpuSet::EMPTY;
        for i in self.ascending() {
            if set.len() == req.count as usize {
                break;
            }
            if req.milli <= self.left[i] {
                set.insert(i);
            }
        }
        (set.len() == req.count as usize).then_some(set)
    }

    /// GPU indices by free milli ascending, stable by index (`SortedMilliGpuLeftIndexList(true)`).
    pub fn ascending(&self) -> impl Iterator<Item = usize> + '_ {
        let mut idx = [0u8; MAX_GPUS_PER_NODE];
        let n = self.count as usize;
        for (i, slot) in idx.iter_mut().enumerate().take(n) {
            *slot = i as u8;
        }
        // Insertion sort: at most 16 elements, stable.
        for i in 1..n {
            let mut j = i;
            while j > 0 && self.left[idx[j - 1] as usize] > self.left[idx[j] as usize] {
                idx.swap(j - 1, j);
                j -= 1;
            }
        }
        (0..n).map(move |k| idx[k] as usize)
    }

    /// Takes `milli` from every GPU in `set` and counts the pod in its affinity class.
    pub fn allocate(&mut self, set: GpuSet, req: &GpuRequest) -> Result<(), String> {
        self.check_set(set, req)?;
        for i in set.iter() {
            if self.left[i] < req.milli {
                return Err(format!(
                    "GPU {i} has {} milli free, the pod needs {}",
                    self.left[i], req.milli
                ));
            }
        }
        for i in set.iter() {
            self.left[i] -= req.milli;
        }
        if let Some(c) = class_of(req) {
            self.classes[c] += 1;
        }
        Ok(())
    }

    /// Gives `milli` back to every GPU in `set` (the pod left or its reservation was undone).
    pub fn release(&mut self, set: GpuSet, req: &GpuRequest) -> Result<(), String> {
        self.check_set(set, req)?;
        for i in set.iter() {
            if self.left[i] + req.milli > MILLI_PER_GPU {
                return Err(format!(
                    "GPU {i} has {} milli free; giving back {} would exceed a GPU",
                    self.left[i], req.milli
                ));
            }
        }
        for i in set.iter() {
            self.left[i] += req.milli;
        }
        if let Some(c) = class_of(req) {
            self.classes[c] = self.classes[c].saturating_sub(1);
        }
        Ok(())
    }

    /// A copy with the request taken from `set` (for scoring hypothetical placements).
    pub fn after(&self, set: GpuSet, milli: u16) -> NodeGpus {
        let mut n = self.clone();
        for i in set.iter() {
            n.left[i] = n.left[i].saturating_sub(milli);
        }
        n
    }

    fn check_set(&self, set: GpuSet, req: &GpuRequest) -> Result<(), String> {
        if set.len() != req.count as usize {
            return Err(format!(
                "GPU set {set} has {} GPUs, the pod asks for {}",
                set.len(),
                req.count
            ));
        }
        if let Some(i) = set.iter().find(|&i| i >= self.count as usize) {
            return Err(format!(
                "GPU {i} does not exist (the node has {})",
                self.count
            ));
        }
        Ok(())
    }
}

/// The artifact's `GetGpuAffinityFromPodAnnotation` as an index: shared pods 0, k whole GPUs
/// k, pods without GPU none.
pub fn class_of(req: &GpuRequest) -> Option<usize> {
    if !req.wants_gpu() {
        None
    } else if req.is_share() {
        Some(0)
    } else {
        Some(req.count as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ksim_api::{
        Affinity, Container, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm,
        Pod, Quantity, ResourceList,
    };
    use rand::SeedableRng;

    fn pod(requests: &[(&str, i64)], models: Option<&[&str]>) -> PodInfo {
        let mut p = Pod::default();
        p.metadata.name = "p".into();
        let mut req = ResourceList::new();
        for (k, v) in requests {
            let q = if *k == "cpu" {
                Quantity::from_milli(*v)
            } else {
                Quantity::from_value(*v)
            };
            req.insert(k.to_string(), q);
        }
        p.spec.containers.push(Container {
            name: "main".into(),
            ..Container::default()
        });
        p.spec.containers[0].resources.requests = req;
        if let Some(m) = models {
            p.spec.affinity = Some(Box::new(Affinity {
                node_affinity: Some(NodeAffinity {
                    required: Some(NodeSelector {
                        node_selector_terms: vec![NodeSelectorTerm {
                            match_expressions: vec![NodeSelectorRequirement {
                                key: GPU_MODEL.into(),
                                operator: "In".into(),
                                values: m.iter().map(|s| s.to_string()).collect(),
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

    #[test]
    fn requests_parse_like_the_importer_writes_them() {
        let cases: Vec<(PodInfo, Result<GpuRequest, ()>)> = vec![
            (pod(&[("cpu", 1000)], None), Ok(GpuRequest::none())),
            (pod(&[(GPU_MILLI, 460)], None), Ok(GpuRequest::share(460))),
            (
                pod(&[(GPU_MILLI, 2000), (GPU_COUNT, 2)], None),
                Ok(GpuRequest::whole(2)),
            ),
            (
                pod(
                    &[(GPU_MILLI, 1000), (GPU_COUNT, 1)],
                    Some(&["V100M32", "T4", "T4"]),
                ),
                Ok(GpuRequest::whole(1).with_models(&["T4", "V100M32"])),
            ),
            (pod(&[(GPU_MILLI, 1000)], None), Err(())),
            (pod(&[(GPU_MILLI, 1500), (GPU_COUNT, 2)], None), Err(())),
            (pod(&[(GPU_COUNT, 2)], None), Err(())),
        ];
        for (i, (p, want)) in cases.iter().enumerate() {
            let got = GpuRequest::from_pod(p).map_err(|_| ());
            assert_eq!(&got, want, "case {i}");
        }
    }

    #[test]
    fn resource_names_match_the_openb_importer() {
        assert_eq!(GPU_COUNT, ksim_trace::import::gpu::COUNT);
        assert_eq!(GPU_MILLI, ksim_trace::import::gpu::MILLI);
        assert_eq!(GPU_MODEL, ksim_trace::import::gpu::MODEL);
    }

    #[test]
    fn share_fits_one_gpu_never_split() {
        // Two GPUs with 500 free each: 1000 milli in total, yet a 600-milli share fits neither.
        let n = NodeGpus::with_left(None, &[500, 500]).unwrap();
        assert!(!n.fits(&GpuRequest::share(600)));
        assert!(n.fits(&GpuRequest::share(500)));
        assert!(!n.fits(&GpuRequest::whole(1)));
    }

    #[test]
    fn whole_gpus_must_be_idle() {
        let n = NodeGpus::with_left(None, &[1000, 999, 1000, 0]).unwrap();
        assert!(n.fits(&GpuRequest::whole(2)));
        assert!(!n.fits(&GpuRequest::whole(3)));
        assert_eq!(n.exclusive(&GpuRequest::whole(2)), Some(GpuSet(0b0101)));
        assert_eq!(n.exclusive(&GpuRequest::whole(3)), None);
    }

    #[test]
    fn best_fit_picks_least_free_that_fits_lowest_index_on_ties() {
        // free: [1000, 300, 700, 300, 250]; a 300 share fits GPUs 0..3 (not 4); least free
        // that fits is 300, first at index 1.
        let n = NodeGpus::with_left(None, &[1000, 300, 700, 300, 250]).unwrap();
        assert_eq!(n.best_fit(&GpuRequest::share(300)), Some(GpuSet::single(1)));
        // a 400 share: candidates 1000 (0) and 700 (2) → GPU 2.
        assert_eq!(n.best_fit(&GpuRequest::share(400)), Some(GpuSet::single(2)));
        // a 800 share: only GPU 0.
        assert_eq!(n.best_fit(&GpuRequest::share(800)), Some(GpuSet::single(0)));
        assert_eq!(n.best_fit(&GpuRequest::share(1)), Some(GpuSet::single(4)));
        let full = NodeGpus::with_left(None, &[100, 0]).unwrap();
        assert_eq!(full.best_fit(&GpuRequest::share(200)), None);
        // Whole GPUs: lowest-index idle ones.
        assert_eq!(n.best_fit(&GpuRequest::whole(1)), Some(GpuSet::single(0)));
    }

    #[test]
    fn random_fit_only_picks_fitting_gpus_and_covers_them() {
        let n = NodeGpus::with_left(None, &[1000, 100, 700, 300]).unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let mut seen = [0u32; 4];
        for _ in 0..600 {
            let s = n.random_fit(&GpuRequest::share(300), &mut rng).unwrap();
            assert_eq!(s.len(), 1);
            seen[s.iter().next().unwrap()] += 1;
        }
        assert_eq!(seen[1], 0);
        assert!(seen[0] > 100 && seen[2] > 100 && seen[3] > 100, "{seen:?}");
    }

    #[test]
    fn packing_order_matches_sub() {
        let n = NodeGpus::with_left(None, &[1000, 300, 1000, 600]).unwrap();
        assert_eq!(n.ascending().collect::<Vec<_>>(), vec![1, 3, 0, 2]);
        assert_eq!(
            n.packing_order_take(&GpuRequest::share(300)),
            Some(GpuSet::single(1))
        );
        assert_eq!(
            n.packing_order_take(&GpuRequest::share(500)),
            Some(GpuSet::single(3))
        );
        assert_eq!(
            n.packing_order_take(&GpuRequest::whole(2)),
            Some(GpuSet(0b0101))
        );
    }

    #[test]
    fn allocate_and_release_are_inverse_and_checked() {
        let mut n = NodeGpus::new(Some(0), 4).unwrap();
        let share = GpuRequest::share(250);
        n.allocate(GpuSet::single(2), &share).unwrap();
        n.allocate(GpuSet::single(2), &share).unwrap();
        assert_eq!(n.left(), &[1000, 1000, 500, 1000]);
        assert_eq!(n.classes()[0], 2);
        let two = GpuRequest::whole(2);
        n.allocate(GpuSet(0b0011), &two).unwrap();
        assert_eq!(n.used_milli(), 2500);
        assert_eq!(n.idle_gpus(), 1);
        assert_eq!(n.classes()[2], 1);
        // Not enough on GPU 2 for a whole GPU; wrong set size; a GPU that does not exist.
        assert!(n
            .allocate(GpuSet::single(2), &GpuRequest::whole(1))
            .is_err());
        assert!(n.allocate(GpuSet::single(3), &two).is_err());
        assert!(n.allocate(GpuSet::single(5), &share).is_err());
        n.release(GpuSet(0b0011), &two).unwrap();
        n.release(GpuSet::single(2), &share).unwrap();
        n.release(GpuSet::single(2), &share).unwrap();
        assert_eq!(n, NodeGpus::new(Some(0), 4).unwrap());
        assert!(n.release(GpuSet::single(0), &share).is_err());
    }

    #[test]
    fn gpu_set_prints_as_device_index() {
        assert_eq!(GpuSet(0b1011).to_string(), "0-1-3");
        assert_eq!(GpuSet::EMPTY.to_string(), "");
    }
}
