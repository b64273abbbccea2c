//! open-simulator's published example manifests (alibaba/open-simulator, `example/`), copied
//! unchanged into `traces/manifests/open-simulator/` (see `traces/manifests/README.md`), run as
//! kube-controller-manager v1.35 would run them.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use ksim_engine::{Record, Simulation};
use ksim_scheduler::framework::Registry;

/// open-simulator's files in the project.
fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces/manifests/open-simulator")
}

/// Runs open-simulator's demo cluster (`example/cluster_example/cluster_demo_1/nodes/`, as
/// published: their allocatable, 8 CPUs and 16Gi, exceeds their capacity, 4 and 8Gi, which the
/// API server accepts) with the given app manifests as `cluster.objectsFiles`, for 5 minutes;
/// returns (pods created, (pod, node) bound).
fn run_demo(apps: &[&str]) -> (Vec<String>, Vec<(String, String)>) {
    let tmp = tempfile::tempdir().unwrap();
    let quoted = |files: Vec<PathBuf>| {
        files
            .iter()
            .map(|f| format!("{:?}", f.display().to_string()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let nodes = quoted(
        ["master-1", "master-2", "worker-1"]
            .iter()
            .map(|n| dir().join(format!("cluster_demo_1/nodes/{n}.yaml")))
            .collect(),
    );
    let objects = quoted(apps.iter().map(|a| dir().join(a)).collect());
    let scenario = format!(
        "name: open-simulator-demo\nseed: 1\nhorizon: 5m\ncluster:\n  nodesFiles: [{nodes}]\n  objectsFiles: [{objects}]\n"
    );
    let path = tmp.path().join("s.yaml");
    std::fs::write(&path, scenario).unwrap();
    let plan = ksim_trace::load_scenario(&path).unwrap();
    let seed = plan.engine.seed;
    let mut sim = Simulation::new(
        plan.engine,
        &plan.scheduler,
        &Registry::in_tree(),
        plan.nodes,
        plan.objects,
    )
    .unwrap();
    let mut events = plan.events;
    events.set_seed(seed);
    sim.add_source(Box::new(events)).unwrap();
    let mut created = Vec::new();
    let mut bound = Vec::new();
    sim.run(&mut |r: &Record| match r {
        Record::PodCreated { name, .. } => created.push(name.clone()),
        Record::PodBound { name, node, .. } => bound.push((name.clone(), node.clone())),
        _ => {}
    })
    .unwrap();
    (created, bound)
}

/// `ds-busybox.yaml` on open-simulator's demo cluster as published (`master-1` tainted
/// `node-role.kubernetes.io/master:NoSchedule`, `master-2` labelled master but untainted,
/// `worker-1`). The template's node affinity (`node-role.kubernetes.io/master` DoesNotExist)
/// leaves only `worker-1`, so upstream's DaemonSet controller makes exactly one pod
/// (`NodeShouldRunDaemonPod`), which runs; ksim used to pin a second one to `master-2`,
/// pending forever.
#[test]
fn ds_busybox_makes_one_pod_as_upstream() {
    let (created, bound) = run_demo(&["ds-busybox.yaml"]);
    assert_eq!(created.len(), 1, "{created:?}");
    assert!(created[0].starts_with("busybox-ds-"), "{created:?}");
    assert_eq!(bound.len(), 1);
    assert_eq!(bound[0].1, "worker-1");
}

/// `deploy-busybox.yaml` (4 replicas of 1500m, tolerating the master taint) with
/// `ds-busybox.yaml` on the published demo nodes: the scheduler fits against allocatable (8
/// CPUs a node), so all five pods run, the Deployment's spread over the three nodes, master-1
/// included (tolerated).
#[test]
fn the_simple_apps_run_on_the_published_demo_cluster() {
    let (created, bound) = run_demo(&["deploy-busybox.yaml", "ds-busybox.yaml"]);
    assert_eq!(created.len(), 5, "{created:?}");
    assert_eq!(bound.len(), 5, "{bound:?}");
    let deploy_nodes: BTreeSet<&str> = bound
        .iter()
        .filter(|(p, _)| p.starts_with("busybox-deploy-"))
        .map(|(_, n)| n.as_str())
        .collect();
    assert_eq!(
        deploy_nodes,
        BTreeSet::from(["master-1", "master-2", "worker-1"]),
        "{bound:?}"
    );
}
