//! Storage objects through the inputs: a kubectl dump's PVs, PVCs, StorageClasses and CSI
//! objects carried into `objects.yaml`, a scenario's objects files loading them at t=0 (with
//! the API server's defaulting), and errors that name the file, item and field.

use ksim_api::object::ObjectKind;
use ksim_trace::{import, load_scenario, ImportFormat, ImportOptions};

const DUMP: &str = r#"apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1, labels: {kubernetes.io/hostname: n1}}
  status: {capacity: {cpu: "4", memory: 8Gi, pods: "110"}}
- apiVersion: storage.k8s.io/v1
  kind: StorageClass
  metadata: {name: local}
  provisioner: kubernetes.io/no-provisioner
  volumeBindingMode: WaitForFirstConsumer
- apiVersion: v1
  kind: PersistentVolume
  metadata: {name: pv-n1}
  spec:
    capacity: {storage: 100Gi}
    accessModes: [ReadWriteOnce]
    storageClassName: local
    local: {path: /mnt/disks/ssd0}
    claimRef: {namespace: db, name: data-db-0, uid: u-0}
    nodeAffinity:
      required:
        nodeSelectorTerms:
        - matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [n1]}]
  status: {phase: Bound}
- apiVersion: v1
  kind: PersistentVolumeClaim
  metadata:
    name: data-db-0
    namespace: db
    uid: u-0
    annotations: {pv.kubernetes.io/bind-completed: "yes"}
  spec:
    accessModes: [ReadWriteOnce]
    storageClassName: local
    volumeName: pv-n1
    resources: {requests: {storage: 50Gi}}
  status: {phase: Bound}
- apiVersion: v1
  kind: PersistentVolumeClaim
  metadata: {name: data-db-1, namespace: db}
  spec:
    storageClassName: local
    resources: {requests: {storage: 50Gi}}
- apiVersion: storage.k8s.io/v1
  kind: CSINode
  metadata: {name: n1}
  spec: {drivers: [{name: ebs.csi.aws.com, nodeID: i-1, allocatable: {count: 25}}]}
- apiVersion: storage.k8s.io/v1
  kind: CSIDriver
  metadata: {name: ebs.csi.aws.com}
  spec: {attachRequired: true}
"#;

#[test]
fn kube_dump_carries_storage_objects_to_the_scenario() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("dump.yaml");
    std::fs::write(&p, DUMP).unwrap();
    let out = dir.path().join("out");
    let sum = import(
        ImportFormat::KubeDump,
        &[p],
        &out,
        &ImportOptions::default(),
    )
    .unwrap();
    assert_eq!(sum.nodes, 1);
    assert_eq!(sum.other_files, [out.join("objects.yaml")]);
    assert!(sum.skipped.is_empty(), "{:?}", sum.skipped);

    let scen = dir.path().join("s.yaml");
    std::fs::write(
        &scen,
        "name: s\ncluster: {nodesFiles: [out/nodes.yaml], objectsFiles: [out/objects.yaml]}\n",
    )
    .unwrap();
    let plan = load_scenario(&scen).unwrap();
    let st = &plan.objects.storage;
    assert_eq!(st.storage_classes.len(), 1);
    assert_eq!(st.persistent_volumes.len(), 1);
    assert_eq!(st.csi_nodes.len(), 1);
    assert_eq!(st.csi_drivers.len(), 1);
    let bound = &st.persistent_volume_claims["db/data-db-0"];
    assert!(bound.is_fully_bound());
    // Defaulting: a claim without a UID gets ksim's convention, a phase and a volume mode.
    let fresh = &st.persistent_volume_claims["db/data-db-1"];
    assert_eq!(fresh.metadata.uid, "uid-pvc-db-data-db-1");
    assert_eq!(fresh.status.phase, "Pending");
    assert_eq!(fresh.volume_mode(), "Filesystem");
    assert!(plan
        .objects
        .get_object(ObjectKind::PersistentVolume, "", "pv-n1")
        .is_some());
}

#[test]
fn bad_storage_objects_name_file_item_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "kind: List\nitems:\n- kind: PersistentVolume\n  metadata: {name: a}\n  spec: {capacity: {storage: lots}}\n",
            "objects.yaml: items[0]: spec.capacity.storage: quantity \"lots\"",
        ),
        (
            "kind: List\nitems:\n- kind: StorageClass\n  metadata: {name: a}\n- kind: StorageClass\n  metadata: {name: a}\n",
            "objects.yaml: items[1]: metadata.name: StorageClass a is listed twice",
        ),
        (
            "kind: List\nitems:\n- kind: CSINode\n  metadata: {}\n",
            "objects.yaml: items[0]: metadata.name: a CSINode needs a name",
        ),
    ];
    for (text, want) in cases {
        std::fs::write(dir.path().join("objects.yaml"), text).unwrap();
        let scen = dir.path().join("s.yaml");
        std::fs::write(&scen, "name: s\ncluster: {objectsFiles: [objects.yaml]}\n").unwrap();
        let err = load_scenario(&scen).unwrap_err().to_string();
        assert!(err.contains(want), "{text}\n got {err}\nwant {want}");
    }
    // The importer checks them too, against the dump.
    let p = dir.path().join("dump.yaml");
    std::fs::write(
        &p,
        "kind: List\nitems:\n- kind: PersistentVolumeClaim\n  metadata: {name: c}\n  spec: {resources: {requests: {storage: -1Gi}}}\n",
    )
    .unwrap();
    let err = import(
        ImportFormat::KubeDump,
        &[p],
        &dir.path().join("out"),
        &ImportOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains(
            "dump.yaml: items[0]: spec.resources.requests.storage: quantity \"-1Gi\" is negative"
        ),
        "{err}"
    );
}

/// The example scenario keeps showing what it is for: the re-created db-1 stranded by its PV's
/// node affinity, db-5 by the lack of a free PV, db-4 bound to the disk added at 5 min, and the
/// cache pods bound `provisioningDelay` after being scheduled.
#[test]
fn stateful_local_pv_scenario_strands_pods_by_volume_node_affinity() {
    use ksim_engine::{AttemptResult, Record, SimDuration, Simulation};
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../scenarios/stateful-local-pv.yaml");
    let plan = load_scenario(&path).unwrap();
    let mut sim = Simulation::new(
        plan.engine.clone(),
        &plan.scheduler,
        &ksim_scheduler::framework::Registry::in_tree(),
        plan.nodes,
        plan.objects,
    )
    .unwrap();
    sim.add_source(Box::new(plan.events)).unwrap();
    let mut records = Vec::new();
    sim.run(&mut |r: &Record| records.push(r.clone())).unwrap();
    let last_message = |pod: &str| {
        records
            .iter()
            .rev()
            .find_map(|r| match r {
                Record::Attempt {
                    name,
                    result: AttemptResult::Unschedulable,
                    message,
                    ..
                } if name == pod => Some(message.clone()),
                _ => None,
            })
            .unwrap_or_default()
    };
    let bound = |pod: &str| {
        records
            .iter()
            .filter_map(|r| match r {
                Record::PodBound { at, name, node, .. } if name == pod => Some((*at, node.clone())),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    assert!(
        last_message("db-1").contains(
            "1 node(s) were unschedulable, 3 node(s) didn't match PersistentVolume's node affinity"
        ),
        "{}",
        last_message("db-1")
    );
    assert!(
        last_message("db-5").contains("didn't find available persistent volumes to bind"),
        "{}",
        last_message("db-5")
    );
    // db-1 ran once (before the drain) and never again.
    assert_eq!(bound("db-1").len(), 1);
    assert_eq!(bound("db-5"), []);
    let db4 = bound("db-4");
    assert_eq!(db4.len(), 1);
    assert_eq!(db4[0].1, "storage-3");
    assert!(db4[0].0 >= ksim_engine::SimTime::from_secs(300));
    let scheduled_at = |pod: &str| {
        records.iter().find_map(|r| match r {
            Record::Attempt {
                at,
                name,
                result: AttemptResult::Scheduled,
                ..
            } if name == pod => Some(*at),
            _ => None,
        })
    };
    for pod in ["cache-0", "cache-1"] {
        let s = scheduled_at(pod).unwrap();
        let b = bound(pod)[0].0;
        assert!(
            b >= s + SimDuration::from_secs(15) && b < s + SimDuration::from_secs(16),
            "{pod}: scheduled {s}, bound {b}"
        );
    }
}
