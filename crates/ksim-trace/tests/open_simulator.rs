//! open-simulator's published example manifests (alibaba/open-simulator, `example/`), copied
//! unchanged into `traces/manifests/open-simulator/` (see `traces/manifests/README.md`), run as
//! kube-controller-manager v1.35 would run them.

use std::path::Path;

use ksim_engine::{Record, Simulation};
use ksim_scheduler::framework::Registry;

/// `ds-busybox.yaml` on open-simulator's three example nodes (`example/cluster_example/
/// cluster_demo_1/nodes/`: `master-1` tainted `node-role.kubernetes.io/master:NoSchedule`,
/// `master-2` labelled master but untainted, `worker-1`), written here with their labels and
/// taint: the published node files declare allocatable (8 CPUs) above capacity (4), which ksim's
/// node check refuses. The template's node affinity (`node-role.kubernetes.io/master`
/// DoesNotExist) leaves only `worker-1`, so upstream's DaemonSet controller makes exactly one
/// pod (`NodeShouldRunDaemonPod`), which runs; ksim used to pin a second one to `master-2`,
/// pending forever.
#[test]
fn ds_busybox_makes_one_pod_as_upstream() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces/manifests/open-simulator");
    let tmp = tempfile::tempdir().unwrap();
    let node = |name: &str, role: &str, taint: bool| {
        format!(
            "- apiVersion: v1\n  kind: Node\n  metadata:\n    name: {name}\n    labels:\n      \
             beta.kubernetes.io/os: linux\n      kubernetes.io/hostname: {name}\n      \
             kubernetes.io/os: linux\n      node-role.kubernetes.io/{role}: \"\"\n  spec:\n    \
             taints: {}\n  status:\n    capacity: {{cpu: \"4\", memory: 8Gi, pods: \"110\"}}\n",
            if taint {
                "[{key: node-role.kubernetes.io/master, effect: NoSchedule}]"
            } else {
                "[]"
            }
        )
    };
    std::fs::write(
        tmp.path().join("nodes.yaml"),
        format!(
            "apiVersion: v1\nkind: List\nitems:\n{}{}{}",
            node("master-1", "master", true),
            node("master-2", "master", false),
            node("worker-1", "worker", false)
        ),
    )
    .unwrap();
    let scenario = format!(
        "name: ds-busybox\nseed: 1\nhorizon: 5m\ncluster:\n  nodesFiles: [nodes.yaml]\n  objectsFiles: [{:?}]\n",
        dir.join("ds-busybox.yaml").display().to_string()
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
    assert_eq!(created.len(), 1, "{created:?}");
    assert!(created[0].starts_with("busybox-ds-"), "{created:?}");
    assert_eq!(bound.len(), 1);
    assert_eq!(bound[0].1, "worker-1");
}
