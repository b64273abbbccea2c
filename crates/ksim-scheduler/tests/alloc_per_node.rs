//! Scoring a pod allocates nothing per node that could be precomputed once per cycle.
//!
//! A counting allocator measures the allocations of whole scheduling cycles (every node filtered
//! and scored: percentageOfNodesToScore 100) on clusters of 1,000 and 5,000 nodes. Per-cycle
//! buffers are allowed; an allocation per node per cycle would show up as thousands more on the
//! larger cluster. This counts allocations, it does not time anything.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ksim_api::{Node, Pod};
use ksim_scheduler::framework::{build_framework, CycleState, NoNominatedPods, Registry};
use ksim_scheduler::node_info::{ClusterObjects, Snapshot};
use ksim_scheduler::pod_info::PodInfo;
use ksim_scheduler::schedule::Algorithm;
use rand::SeedableRng;

struct Counting;

static ALLOCS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn node(i: usize) -> Arc<Node> {
    Arc::new(
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": format!("node-{i}"), "labels": {
                "kubernetes.io/hostname": format!("node-{i}"),
                "topology.kubernetes.io/zone": format!("zone-{}", i % 10)}},
            "spec": {"taints": if i.is_multiple_of(7) {
                serde_json::json!([{"key": "k", "value": "v", "effect": "PreferNoSchedule"}]) } else { serde_json::json!([]) }},
            "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"},
                       "images": [{"names": ["registry.k8s.io/pause:3.10"], "sizeBytes": 700000}]}
        }))
        .unwrap(),
    )
}

fn pod(i: usize) -> PodInfo {
    let cpu = ["250m", "500m", "1", "2"][i % 4];
    let p: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": format!("p{i}"), "namespace": "default", "uid": format!("u{i}"),
                     "labels": {"app": format!("app-{}", i % 50)}},
        "spec": {"schedulerName": "default-scheduler",
                 "containers": [{"name": "c", "image": "nginx",
                    "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}
    }))
    .unwrap();
    PodInfo::new(p)
}

/// Allocations of `cycles` scheduling cycles on `n` nodes (after a warm-up cycle).
fn allocations(n: usize, cycles: usize) -> u64 {
    let cfg = Default::default();
    let fwk = build_framework(&Registry::in_tree(), &cfg, &Default::default()).unwrap();
    let mut snap = Snapshot::build(
        (0..n).map(node),
        Vec::new(),
        Arc::new(ClusterObjects::default()),
    );
    let mut alg = Algorithm::new(rand_chacha::ChaCha8Rng::seed_from_u64(1), 100);
    let pods: Vec<PodInfo> = (0..=cycles).map(pod).collect();
    let mut total = 0;
    for (k, p) in pods.iter().enumerate() {
        let before = ALLOCS.load(Ordering::Relaxed);
        let mut state = CycleState::new();
        let r = alg
            .schedule_pod(&fwk, &mut state, p, &snap, &NoNominatedPods)
            .expect("fits");
        let after = ALLOCS.load(Ordering::Relaxed);
        if k > 0 {
            total += after - before;
        }
        // Assume the pod on its node, as the scheduler does before the next cycle.
        let mut placed = p.pod.clone();
        placed.spec.node_name = snap.nodes[r.suggested_host].name().to_string();
        snap.add_pod(Arc::new(PodInfo::new(placed)));
    }
    total
}

#[test]
fn scheduling_cycle_allocations_do_not_grow_with_nodes() {
    let cycles = 20;
    let small = allocations(1000, cycles);
    let large = allocations(5000, cycles);
    let per_cycle_extra = (large.saturating_sub(small)) as f64 / cycles as f64;
    eprintln!("allocations over {cycles} cycles: {small} on 1000 nodes, {large} on 5000 nodes");
    // 4,000 more nodes per cycle: one allocation per node would add ~4,000 per cycle. Growing
    // per-cycle buffers (a Vec of feasible nodes, score vectors) add a few reallocations.
    assert!(
        per_cycle_extra < 100.0,
        "allocations per cycle grow with the node count: {small} on 1000 nodes, {large} on 5000 nodes over {cycles} cycles"
    );
}
