//! Criterion benches of the scheduler's hot paths, on a reference-shaped cluster (5,000 nodes of
//! 32 cpu / 128Gi / 110 pods in 10 zones, 5,000 pods already placed by the scheduling loop):
//!
//! - `filter/node`: the cycle's Filter plugins on one node (after PreFilter).
//! - `score/<plugin>`: one Score plugin over 500 feasible nodes (after PreScore), per node.
//! - `cycle/<kind>`: one whole `schedule_pod` (PreFilter .. select) for a plain and a
//!   constrained pod.
//! - `snapshot/add_remove_pod`: assume a pod into the snapshot and take it out again.
//! - `queue/add_pop`: 1,000 pods through the scheduling queue.
//!
//! Sample counts are modest (the machines are 2 shared cores); instruction counts from callgrind
//! (benches/README.md) are the stable comparison. Run with
//! `cargo bench -p ksim-bench --bench hot_paths`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use ksim_api::config::KubeSchedulerConfiguration;
use ksim_bench::gen::{generate, Kind, Spec};
use ksim_bench::run::{run_once, Options};
use ksim_scheduler::framework::{build_frameworks, CycleState, NoNominatedPods, Registry};
use ksim_scheduler::node_info::{ClusterObjects, NodeInfo, Snapshot};
use ksim_scheduler::pod_info::PodInfo;
use ksim_scheduler::queue::{QueueConfig, SchedulingQueue};
use ksim_scheduler::schedule::Algorithm;
use rand::SeedableRng;

const NODES: usize = 5000;
const PLACED: usize = 5000;

/// A snapshot with `PLACED` pods of `kind` already placed by the scheduling loop, and pending
/// pods of the same kind to schedule next.
fn cluster(kind: Kind) -> (Snapshot, Vec<Arc<PodInfo>>) {
    let w = generate(&Spec::reference(kind, NODES, PLACED + 200, 7)).expect("workload");
    let (placed, pending) = w.pods.split_at(PLACED);
    let first = ksim_bench::Workload {
        nodes: w.nodes.clone(),
        pods: placed.to_vec(),
    };
    let r = run_once(&first, &Options::default()).expect("placement");
    let bound = placed
        .iter()
        .zip(&r.placements)
        .filter_map(|(p, (_, node))| {
            let mut p = p.clone();
            ksim_api::defaults::default_pod(&mut p);
            p.spec.node_name = node.clone();
            (!node.is_empty()).then(|| PodInfo::arc(p))
        });
    let nodes = w.nodes.iter().cloned().map(Arc::new);
    let snapshot = Snapshot::build(nodes, bound, Arc::new(ClusterObjects::default()));
    let pending = pending
        .iter()
        .map(|p| {
            let mut p = p.clone();
            ksim_api::defaults::default_pod(&mut p);
            PodInfo::arc(p)
        })
        .collect();
    (snapshot, pending)
}

fn framework() -> Arc<ksim_scheduler::Framework> {
    build_frameworks(&Registry::in_tree(), &KubeSchedulerConfiguration::default())
        .expect("default profile")
        .remove(0)
}

/// A pending pod of the given constraint: the first whose spec matches `want`.
fn pick(pending: &[Arc<PodInfo>], want: impl Fn(&PodInfo) -> bool) -> Arc<PodInfo> {
    pending
        .iter()
        .find(|p| want(p))
        .cloned()
        .unwrap_or_else(|| pending[0].clone())
}

fn benches(c: &mut Criterion) {
    let fwk = framework();
    let (snapshot, pending) = cluster(Kind::Mixed);
    let plain = pick(&pending, |p| {
        p.pod.spec.affinity.is_none() && p.pod.spec.topology_spread_constraints.is_empty()
    });
    let anti = pick(&pending, |p| p.pod.spec.affinity.is_some());
    let spread = pick(&pending, |p| {
        p.pod
            .spec
            .topology_spread_constraints
            .iter()
            .any(|c| c.when_unsatisfiable == "DoNotSchedule")
    });

    // Filter on one node.
    let mut g = c.benchmark_group("filter");
    for (name, pod) in [("plain", &plain), ("spread", &spread)] {
        let mut state = CycleState::new();
        let _ = fwk.run_pre_filter(&mut state, pod, &snapshot);
        let node = &snapshot.nodes[NODES / 2];
        g.bench_function(format!("node/{name}"), |b| {
            b.iter(|| fwk.run_filter(black_box(&state), black_box(pod), black_box(node)))
        });
    }
    g.finish();

    // Score per plugin over 500 feasible nodes.
    let nodes: Vec<&NodeInfo> = snapshot.nodes.iter().take(500).collect();
    let mut g = c.benchmark_group("score");
    g.throughput(Throughput::Elements(nodes.len() as u64));
    for (name, pod) in [("plain", &plain), ("anti", &anti)] {
        let mut state = CycleState::new();
        let _ = fwk.run_pre_filter(&mut state, pod, &snapshot);
        let _ = fwk.run_pre_score(&mut state, pod, &nodes, &snapshot);
        for wp in &fwk.score {
            let p = &wp.plugin;
            if state.skip_score_plugins().contains(&p.name()) {
                continue;
            }
            let Some(sp) = p.as_score() else { continue };
            let mut out = Vec::with_capacity(nodes.len());
            g.bench_function(format!("{}/{name}", p.name()), |b| {
                b.iter(|| {
                    out.clear();
                    let _ = sp.score_nodes(&state, pod, black_box(&nodes), &mut out);
                })
            });
        }
    }
    g.finish();

    // One whole cycle.
    let mut g = c.benchmark_group("cycle");
    for (name, pod) in [("plain", &plain), ("anti", &anti), ("spread", &spread)] {
        let mut alg = Algorithm::new(rand_chacha::ChaCha8Rng::seed_from_u64(1), 0);
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut state = CycleState::new();
                let _ = alg.schedule_pod(&fwk, &mut state, pod, &snapshot, &NoNominatedPods);
            })
        });
    }
    g.finish();

    // Snapshot assume and forget.
    let mut g = c.benchmark_group("snapshot");
    let mut snap = snapshot.clone();
    let node = snap.nodes[17].name().to_string();
    let assumed = Arc::new(anti.assumed_on(&node));
    g.bench_function("add_remove_pod", |b| {
        b.iter(|| {
            snap.add_pod(assumed.clone());
            snap.remove_pod(&node, assumed.uid());
        })
    });
    g.finish();

    // Queue: add then pop.
    let mut g = c.benchmark_group("queue");
    g.throughput(Throughput::Elements(pending.len() as u64));
    g.bench_function("add_pop", |b| {
        b.iter_batched(
            || SchedulingQueue::new(QueueConfig::default()),
            |mut q| {
                for (i, p) in pending.iter().enumerate() {
                    q.add(i as u32, p.clone(), (0, i as u64), &fwk);
                }
                while let Some((id, _, _)) = q.pop() {
                    q.remove(id);
                }
            },
            BatchSize::SmallInput,
        )
    });
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1))
}

criterion_group! {
    name = hot_paths;
    config = config();
    targets = benches
}
criterion_main!(hot_paths);
