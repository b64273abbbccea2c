//! Published Kubernetes example manifests, copied unchanged into `traces/manifests/` (see its
//! README), load as a scenario's `cluster.objectsFiles` and run as documented: the
//! nginx-deployment's 3 replicas, the `web` StatefulSet's 2 ordinals each with its own claim
//! from the `www` volumeClaimTemplate (the cluster's default StorageClass, given by the test in
//! a multi-document file, provisions them),
//! the fluentd DaemonSet's one pod per node, and the `pi` Job's one pod (the manifest gives no
//! run time, so in ksim it runs until the horizon: see the Job controller's documentation).

use std::collections::BTreeMap;
use std::path::Path;

use ksim_engine::{Outcome, Record, Simulation};
use ksim_scheduler::framework::Registry;

#[test]
fn published_example_manifests_run_as_they_are() {
    let manifests = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../traces/manifests");
    let dir = tempfile::tempdir().unwrap();
    // The cluster's own part: a default StorageClass, as every managed cluster has one.
    std::fs::write(
        dir.path().join("storage.yaml"),
        "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: standard\n  annotations:\n    storageclass.kubernetes.io/is-default-class: \"true\"\nprovisioner: pd.csi.storage.gke.io\nvolumeBindingMode: WaitForFirstConsumer\n---\napiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: scratch\nspec:\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: 1Gi\n",
    )
    .unwrap();
    let files: Vec<String> = [
        "nginx-deployment.yaml",
        "web.yaml",
        "daemonset.yaml",
        "job.yaml",
    ]
    .iter()
    .map(|f| manifests.join(f).display().to_string())
    .collect();
    let scenario = format!(
        "name: manifests\nseed: 1\nhorizon: 10m\ncluster:\n  pools:\n    - name: general\n      count: 3\n      template:\n        status:\n          capacity: {{cpu: \"4\", memory: 16Gi, pods: \"110\"}}\n  objectsFiles: [storage.yaml, {}]\n",
        files
            .iter()
            .map(|f| format!("{f:?}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let path = dir.path().join("s.yaml");
    std::fs::write(&path, scenario).unwrap();
    let plan = ksim_trace::load_scenario(&path).unwrap();
    assert_eq!(
        plan.objects.services.len(),
        1,
        "web.yaml's headless Service"
    );

    // A claim present at t=0 without a class gets the default one too.
    assert_eq!(
        plan.objects.storage.persistent_volume_claims["default/scratch"]
            .spec
            .storage_class_name
            .as_deref(),
        Some("standard")
    );
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

    let mut owner: BTreeMap<String, String> = BTreeMap::new();
    let mut bound: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let mut ended: BTreeMap<String, Outcome> = BTreeMap::new();
    let mut controllers: BTreeMap<String, (i64, u64, Option<ksim_engine::SimTime>)> =
        BTreeMap::new();
    sim.run(&mut |r: &Record| match r {
        Record::PodCreated {
            namespace,
            name,
            owner_kind,
            owner_name,
            ..
        } => {
            owner.insert(
                format!("{namespace}/{name}"),
                format!("{owner_kind}/{owner_name}"),
            );
        }
        Record::PodBound {
            namespace,
            name,
            node,
            ..
        } => {
            let o = owner[&format!("{namespace}/{name}")].clone();
            bound
                .entry(o)
                .or_default()
                .push((name.clone(), node.clone()));
        }
        Record::PodEnded {
            namespace,
            name,
            outcome,
            ..
        } => {
            ended.insert(format!("{namespace}/{name}"), *outcome);
        }
        Record::Controller {
            kind,
            namespace,
            name,
            desired,
            running,
            completed_at,
            ..
        } => {
            controllers.insert(
                format!("{kind} {namespace}/{name}"),
                (*desired, *running, *completed_at),
            );
        }
        _ => {}
    })
    .unwrap();

    // nginx-deployment: 3 replicas running (its pods belong to its ReplicaSet).
    assert_eq!(
        controllers["Deployment default/nginx-deployment"],
        (3, 3, None),
        "{controllers:?}"
    );
    let nginx: usize = bound
        .iter()
        .filter(|(o, _)| o.starts_with("ReplicaSet/nginx-deployment-"))
        .map(|(_, v)| v.len())
        .sum();
    assert_eq!(nginx, 3, "{bound:?}");
    // web: web-0 and web-1, each bound, each with its claim www-web-<i>.
    let mut web: Vec<String> = bound["StatefulSet/web"]
        .iter()
        .map(|(n, _)| n.clone())
        .collect();
    web.sort();
    assert_eq!(web, ["web-0", "web-1"]);
    assert_eq!(controllers["StatefulSet default/web"], (2, 2, None));
    // Each claim took the default class and was provisioned (bound to a volume).
    let claims = &sim.snapshot().objects.storage.persistent_volume_claims;
    let got: Vec<(String, Option<String>, bool)> = claims
        .iter()
        .filter(|(k, _)| k.starts_with("default/www-"))
        .map(|(k, c)| {
            (
                k.clone(),
                c.spec.storage_class_name.clone(),
                !c.spec.volume_name.is_empty(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                "default/www-web-0".to_string(),
                Some("standard".into()),
                true
            ),
            (
                "default/www-web-1".to_string(),
                Some("standard".into()),
                true
            ),
        ]
    );
    // The DaemonSet: one pod per node, on three different nodes.
    let mut ds_nodes: Vec<String> = bound["DaemonSet/fluentd-elasticsearch"]
        .iter()
        .map(|(_, n)| n.clone())
        .collect();
    ds_nodes.sort();
    ds_nodes.dedup();
    assert_eq!(ds_nodes.len(), 3, "{bound:?}");
    assert_eq!(
        controllers["DaemonSet kube-system/fluentd-elasticsearch"],
        (3, 3, None)
    );
    // The Job: one pod, running at the horizon, not completed.
    assert_eq!(bound["Job/pi"].len(), 1);
    assert_eq!(controllers["Job default/pi"].2, None);
    // Nothing failed, was deleted or replaced on the way.
    assert!(ended.is_empty(), "{ended:?}");
}
