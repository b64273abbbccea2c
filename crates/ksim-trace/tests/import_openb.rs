//! The openb importer on the real trace copied into `traces/alibaba-gpu-v2023-openb`, and on a
//! hand-made file with malformed rows.

use std::path::{Path, PathBuf};

use ksim_engine::InputEvent;
use ksim_trace::import::gpu;
use ksim_trace::{import, load_nodes, validate_trace, ImportFormat, ImportOptions, NativeReader};

fn openb(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../traces/alibaba-gpu-v2023-openb")
        .join(file)
}

#[test]
fn default_pod_list_with_gpu_nodes() {
    let out = tempfile::tempdir().unwrap();
    let sum = import(
        ImportFormat::Openb,
        &[
            openb("openb_node_list_gpu_node.csv"),
            openb("openb_pod_list_default.csv.gz"),
        ],
        out.path(),
        &ImportOptions::default(),
    )
    .unwrap();
    assert_eq!(sum.nodes, 1213);
    assert_eq!(sum.events["CreatePod"], 8152);
    // 897 pods were never scheduled: created without runFor and deleted at deletion_time.
    assert_eq!(sum.events["DeletePod"], 897);
    assert!(sum.skipped.is_empty(), "{sum}");

    let nodes = load_nodes(&sum.nodes_file).unwrap();
    let gpus: i64 = nodes
        .iter()
        .map(|n| n.status.capacity[gpu::COUNT].value())
        .sum();
    assert_eq!(gpus, 6212);
    let cpu: i64 = nodes
        .iter()
        .map(|n| n.status.capacity["cpu"].milli_value())
        .sum();
    assert_eq!(cpu, 107_018_000);

    // The CSV conversion gives the trace's own node YAML, resource for resource.
    let yaml = load_nodes(&openb("openb_node_list_gpu_node.yaml.gz")).unwrap();
    assert_eq!(yaml.len(), nodes.len());
    for (a, b) in nodes.iter().zip(&yaml) {
        assert_eq!(a.metadata.name, b.metadata.name);
        assert_eq!(a.metadata.labels, b.metadata.labels);
        let milli = |n: &ksim_api::Node| -> Vec<(String, i64)> {
            n.status
                .allocatable
                .iter()
                .map(|(k, q)| (k.clone(), q.milli_value()))
                .collect()
        };
        assert_eq!(milli(a), milli(b), "{}", a.metadata.name);
    }

    let mut gpu_milli = 0;
    let mut first = None;
    for ev in NativeReader::open(&sum.trace_file).unwrap() {
        let ev = ev.unwrap();
        if let InputEvent::CreatePod { pod, run_for } = ev.event {
            let req = &pod.spec.containers[0].resources.requests;
            gpu_milli += req.get(gpu::MILLI).map(|q| q.value()).unwrap_or(0);
            if pod.metadata.name == "openb-pod-0001" {
                first = Some((ev.at, run_for, pod));
            }
        }
    }
    assert_eq!(gpu_milli, 6_086_800);
    // openb-pod-0001,6000,12288,1,460,,LS,Running,427061,12902960,427061
    let (at, run_for, pod) = first.unwrap();
    assert_eq!(at.whole_secs(), 427_061);
    assert_eq!(
        run_for.unwrap().micros(),
        (12_902_960 - 427_061) * 1_000_000
    );
    assert_eq!(pod.spec.priority, Some(1000));
    assert_eq!(pod.metadata.annotations[gpu::MILLI], "460");
    let req = &pod.spec.containers[0].resources.requests;
    assert_eq!(req["cpu"].milli_value(), 6000);
    assert_eq!(req["memory"].value(), 12288 << 20);
    assert!(
        !req.contains_key(gpu::COUNT),
        "a shared pod takes no whole GPU"
    );

    let rep = validate_trace(&sum.trace_file).unwrap();
    assert!(rep.is_ok(), "{rep}");
}

#[test]
fn gpuspec_becomes_required_node_affinity() {
    let out = tempfile::tempdir().unwrap();
    let sum = import(
        ImportFormat::Openb,
        &[
            openb("openb_node_list_gpu_node.csv"),
            openb("openb_pod_list_gpuspec33.csv.gz"),
        ],
        out.path(),
        &ImportOptions::default(),
    )
    .unwrap();
    let mut constrained = 0;
    for ev in NativeReader::open(&sum.trace_file).unwrap() {
        if let InputEvent::CreatePod { pod, .. } = ev.unwrap().event {
            if let Some(a) = &pod.spec.affinity {
                let terms = &a
                    .node_affinity
                    .as_ref()
                    .unwrap()
                    .required
                    .as_ref()
                    .unwrap()
                    .node_selector_terms;
                let vals = &terms[0].match_expressions[0].values;
                assert!(
                    vals.windows(2).all(|w| w[0] < w[1]),
                    "deduplicated and sorted: {vals:?}"
                );
                constrained += 1;
            }
        }
    }
    assert_eq!(constrained, 2388);
}

#[test]
fn multigpu_five_columns_and_several_lists_get_namespaces() {
    let out = tempfile::tempdir().unwrap();
    let sum = import(
        ImportFormat::Openb,
        &[
            openb("openb_node_list_all_node.csv"),
            openb("openb_pod_list_multigpu50.csv.gz"),
            openb("openb_pod_list_cpu050.csv.gz"),
        ],
        out.path(),
        &ImportOptions {
            max_pods: Some(10_000),
            ..ImportOptions::default()
        },
    )
    .unwrap();
    assert_eq!(sum.nodes, 1523);
    assert_eq!(sum.events["CreatePod"], 10_000);
    let key = openb("openb_pod_list_multigpu50.csv.gz")
        .display()
        .to_string();
    assert_eq!(sum.read[&key], 9061);
    assert!(sum.skipped["past --max-pods"] > 0);
    let mut namespaces = std::collections::BTreeSet::new();
    for ev in NativeReader::open(&sum.trace_file).unwrap() {
        if let InputEvent::CreatePod { pod, .. } = ev.unwrap().event {
            namespaces.insert(pod.metadata.namespace.clone());
        }
    }
    assert_eq!(
        namespaces.into_iter().collect::<Vec<_>>(),
        ["openb-pod-list-cpu050", "openb-pod-list-multigpu50"]
    );
}

#[test]
fn malformed_rows_name_file_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let header = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n";
    let good = "p0,1000,1024,1,500,,LS,Running,0,10,0\n";
    let cases = [
        (
            "p1,lots,1024,0,0,,LS,Running,0,10,0\n",
            ":3: cpu_milli: \"lots\" is not an integer",
        ),
        (
            "p1,1000,1024,0,0,,VIP,Running,0,10,0\n",
            ":3: qos: unknown qos \"VIP\"",
        ),
        (
            "p1,1000,1024,0,0,,LS,Running,10,5,10\n",
            ":3: deletion_time: deletion_time 5 is before",
        ),
        (
            "p1,1000,1024,1,1500,,LS,Running,0,5,0\n",
            ":3: gpu_milli: 1500 is more than one GPU",
        ),
        ("p1,1000,1024\n", ":3: expected 11 fields"),
        (
            "p1,-5,1024,0,0,,LS,Running,0,5,0\n",
            ":3: cpu_milli: -5 is negative",
        ),
        (
            "p1,1000,1024,0,0,,LS,Running,0,5,9\n",
            ":3: scheduled_time: scheduled_time 9 is outside",
        ),
    ];
    for (row, want) in cases {
        let p = dir.path().join("pods.csv");
        std::fs::write(&p, format!("{header}{good}{row}")).unwrap();
        let err = import(
            ImportFormat::Openb,
            std::slice::from_ref(&p),
            &dir.path().join("out"),
            &ImportOptions::default(),
        )
        .unwrap_err()
        .to_string();
        let want = format!("{}{want}", p.display());
        assert!(err.starts_with(&want), "{row}\n got {err}\nwant {want}");
    }
    let p = dir.path().join("other.csv");
    std::fs::write(&p, "a,b\n1,2\n").unwrap();
    let err = import(
        ImportFormat::Openb,
        &[p],
        &dir.path().join("out"),
        &ImportOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("not an openb file"), "{err}");
}
