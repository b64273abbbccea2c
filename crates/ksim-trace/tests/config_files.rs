//! Configuration and object files as a run reads them: every shipped configuration loads; a
//! refused KubeSchedulerConfiguration names the file and the field path (a config file, a
//! scenario's inline config, a ConfigMap by mistake); pods, nodes and objects named by
//! `generateName` get seeded names; built-in PriorityClasses resolve.

use std::path::{Path, PathBuf};

use ksim_engine::{EventSource, InputEvent};
use ksim_trace::scenario::load_scheduler_config;
use ksim_trace::{load_scenario, MergedSource};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn every_shipped_configuration_and_scenario_loads() {
    let mut configs = 0;
    for e in std::fs::read_dir(repo().join("scenarios/schedulers")).unwrap() {
        let p = e.unwrap().path();
        load_scheduler_config(&p).unwrap_or_else(|e| panic!("{e}"));
        configs += 1;
    }
    assert!(configs >= 2);
    let mut scenarios = 0;
    for e in std::fs::read_dir(repo().join("scenarios")).unwrap() {
        let p = e.unwrap().path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if !name.ends_with(".yaml") || name.ends_with("-sweep.yaml") {
            continue;
        }
        // Scenarios over large traces not present in a checkout are skipped.
        match load_scenario(&p) {
            Ok(_) => scenarios += 1,
            Err(ksim_trace::TraceError::Io { .. }) => {}
            Err(e) => panic!("{e}"),
        }
    }
    assert!(scenarios >= 3, "{scenarios}");
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn a_misspelt_field_names_the_file_and_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "sched.yaml",
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: default-scheduler\n  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStratgy: {type: MostAllocated}\n",
    );
    let e = load_scheduler_config(&p).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "{}: profiles[0].pluginConfig[0].args.scoringStratgy: unknown field (did you mean \"scoringStrategy\"?)",
            p.display()
        )
    );
    let p = write(
        dir.path(),
        "weights.yaml",
        "profiles:\n- schedulerName: a\n  pluginConfig:\n  - name: NodeResourcesBalancedAllocation\n    args: {resources: [{name: cpu, weight: 3}]}\n",
    );
    assert_eq!(
        load_scheduler_config(&p).unwrap_err().to_string(),
        format!(
            "{}: profiles[0].pluginConfig[0].args.resources[0].weight: Invalid value: 3: must be 1",
            p.display()
        )
    );
}

#[test]
fn an_inline_config_names_the_scenario_and_the_full_path() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "scenario.yaml",
        "name: s\nscheduler:\n  config:\n    profile:\n    - schedulerName: x\n",
    );
    assert_eq!(
        load_scenario(&p).unwrap_err().to_string(),
        format!(
            "{}: scheduler.config.profile: unknown field (did you mean \"profiles\"?)",
            p.display()
        )
    );
    let p = write(
        dir.path(),
        "scenario2.yaml",
        "name: s\nscheduler:\n  config:\n    profiles:\n    - schedulerName: a\n    - schedulerName: a\n",
    );
    assert_eq!(
        load_scenario(&p).unwrap_err().to_string(),
        format!(
            "{}: scheduler.config.profiles[1].schedulerName: Duplicate value: \"a\"",
            p.display()
        )
    );
}

#[test]
fn a_configmap_says_how_to_extract_the_configuration() {
    let dir = tempfile::tempdir().unwrap();
    let p = write(
        dir.path(),
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: my-scheduler-config, namespace: kube-system}\ndata:\n  config.yaml: |\n    apiVersion: kubescheduler.config.k8s.io/v1\n    kind: KubeSchedulerConfiguration\n",
    );
    assert_eq!(
        load_scheduler_config(&p).unwrap_err().to_string(),
        format!(
            "{}: kind: this is a ConfigMap, not a KubeSchedulerConfiguration; its data key \"config.yaml\" holds the configuration. Extract it with: kubectl get cm my-scheduler-config -o jsonpath='{{.data.config\\.yaml}}' > scheduler-config.yaml",
            p.display()
        )
    );
}

/// The names the run gives the trace's pods, in event order.
fn pod_names(trace: &Path, seed: u64) -> Vec<(String, String, Option<i32>)> {
    let mut m = MergedSource::new(vec![ksim_trace::open_trace(trace).unwrap()]);
    m.set_seed(seed);
    let mut out = Vec::new();
    while let Some(ev) = m.next_event().unwrap() {
        if let InputEvent::CreatePod { pod, .. } = ev.event {
            out.push((
                pod.metadata.name.clone(),
                pod.metadata.uid.clone(),
                pod.spec.priority,
            ));
        }
    }
    out
}

#[test]
fn generate_name_draws_seeded_names_and_builtin_classes_resolve() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write(
        dir.path(),
        "trace.jsonl",
        concat!(
            r#"{"at": 0, "kind": "CreatePod", "pod": {"metadata": {"generateName": "job-"}, "spec": {"containers": null}}}"#,
            "\n",
            r#"{"at": 1, "kind": "CreatePod", "pod": {"metadata": {"generateName": "job-", "labels": null}, "spec": {"priorityClassName": "system-node-critical"}}}"#,
            "\n",
            r#"{"at": 2, "kind": "CreatePod", "pod": {"metadata": {"name": "fixed", "generateName": "job-"}, "spec": {"priorityClassName": "system-cluster-critical"}}}"#,
            "\n",
        ),
    );
    let a = pod_names(&trace, 7);
    let b = pod_names(&trace, 7);
    let c = pod_names(&trace, 8);
    assert_eq!(a, b, "same seed, same names");
    assert_ne!(a[0].0, c[0].0, "another seed, other names");
    for (name, uid, _) in &a[..2] {
        let suffix = name.strip_prefix("job-").expect("prefix kept");
        assert_eq!(suffix.len(), 5, "{name}");
        assert!(
            suffix
                .bytes()
                .all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b)),
            "{name}"
        );
        assert_eq!(uid, &format!("uid-default-{name}"));
    }
    assert_ne!(a[0].0, a[1].0);
    assert_eq!(a[2].0, "fixed", "a name wins over generateName");
    assert_eq!(a[1].2, Some(2_000_001_000));
    assert_eq!(a[2].2, Some(2_000_000_000));
    assert_eq!(a[0].2, None);
}

#[test]
fn generate_name_names_added_nodes_and_created_objects_too() {
    let dir = tempfile::tempdir().unwrap();
    let node = r#"{"metadata": {"generateName": "pool-a-"}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}"#;
    let pvc = r#"{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"generateName": "data-"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}"#;
    let trace = write(
        dir.path(),
        "trace.jsonl",
        &format!(
            "{{\"at\": 0, \"kind\": \"AddNode\", \"node\": {node}}}\n{{\"at\": 1, \"kind\": \"AddNode\", \"node\": {node}}}\n{{\"at\": 2, \"kind\": \"CreateObject\", \"object\": {pvc}}}\n"
        ),
    );
    let names = |seed: u64| {
        let mut m = MergedSource::new(vec![ksim_trace::open_trace(&trace).unwrap()]);
        m.set_seed(seed);
        let mut out = Vec::new();
        while let Some(ev) = m.next_event().unwrap() {
            match ev.event {
                InputEvent::AddNode { node } => {
                    out.push((node.metadata.name.clone(), String::new()))
                }
                InputEvent::CreateObject { object } => {
                    let uid = object.metadata().uid.clone();
                    out.push((object.key(), uid));
                }
                _ => {}
            }
        }
        out
    };
    let a = names(3);
    assert_eq!(a, names(3), "same seed, same names");
    assert_ne!(a, names(4), "another seed, other names");
    assert_eq!(a.len(), 3);
    for (name, _) in &a[..2] {
        let suffix = name.strip_prefix("pool-a-").expect("prefix kept");
        assert_eq!(suffix.len(), 5, "{name}");
    }
    assert_ne!(a[0].0, a[1].0, "two nodes, two names");
    let claim = a[2]
        .0
        .strip_prefix("default/data-")
        .expect("namespaced, prefix kept");
    assert_eq!(claim.len(), 5);
    // The claim's uid derives from its generated name, as a named claim's does.
    assert_eq!(a[2].1, format!("uid-pvc-default-data-{claim}"));

    // Neither a name nor generateName: refused, naming the field.
    let bad = write(
        dir.path(),
        "bad.jsonl",
        r#"{"at": 0, "kind": "AddNode", "node": {"metadata": {}, "status": {"allocatable": {"cpu": "1"}}}}"#,
    );
    let mut m = MergedSource::new(vec![ksim_trace::open_trace(&bad).unwrap()]);
    let e = m.next_event().unwrap_err().to_string();
    assert!(e.contains("node.metadata.name: a node needs a name"), "{e}");
}
