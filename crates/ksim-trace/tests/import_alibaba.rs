//! The Alibaba v2017, v2025 DLRM, v2020 machine and v2026 spot-node importers on the real
//! excerpts in `traces/`, and hand-made malformed rows.

use std::path::{Path, PathBuf};

use ksim_api::Quantity;
use ksim_engine::InputEvent;
use ksim_trace::import::gpu;
use ksim_trace::scenario::NodePool;
use ksim_trace::{
    import, load_nodes, validate_trace, validate_trace_with, ImportFormat, ImportOptions,
    MachineShape, NativeReader, ValidateOptions,
};

fn tr(dir: &str, file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../traces")
        .join(dir)
        .join(file)
}

fn shape() -> MachineShape {
    MachineShape {
        cpu: Quantity::parse("64").unwrap(),
        memory: Quantity::parse("256Gi").unwrap(),
    }
}

#[test]
fn v2017_servers_and_tasks() {
    let out = tempfile::tempdir().unwrap();
    let opts = ImportOptions {
        machine: Some(shape()),
        max_instances_per_task: Some(5),
        ..ImportOptions::default()
    };
    let sum = import(
        ImportFormat::AlibabaV2017,
        &[
            tr("alibaba-v2017", "server_event.csv"),
            tr("alibaba-v2017", "batch_task_head2000.csv"),
        ],
        out.path(),
        &opts,
    )
    .unwrap();
    assert_eq!(sum.nodes, 1313);
    assert_eq!(sum.events["UpdateNode"], 39);
    assert_eq!(sum.events["CreatePod"], 6738);
    assert_eq!(
        sum.skipped["task without cpu/memory request (Waiting rows)"],
        95
    );
    assert_eq!(sum.skipped["task ends before it starts"], 4);
    let nodes = load_nodes(&sum.nodes_file).unwrap();
    // memory 0.69 of a 256 GiB machine.
    let m = nodes[0].status.capacity["memory"].value() as f64 / (256u64 << 30) as f64;
    assert!((m - 0.69).abs() < 0.01, "{m}");
    let known = nodes.iter().map(|n| n.metadata.name.clone()).collect();
    let rep = validate_trace_with(
        &sum.trace_file,
        &ValidateOptions {
            known_nodes: known,
            ..ValidateOptions::default()
        },
    )
    .unwrap();
    assert!(rep.is_ok(), "{rep}");
    let first = NativeReader::open(&sum.trace_file)
        .unwrap()
        .find_map(|e| match e.unwrap().event {
            InputEvent::CreatePod { pod, .. } => Some(pod),
            _ => None,
        });
    // cpu 50 = half a core.
    assert!(first.unwrap().spec.containers[0].resources.requests["cpu"].milli_value() % 10 == 0);

    let err = import(
        ImportFormat::AlibabaV2017,
        &[tr("alibaba-v2017", "server_event.csv")],
        out.path(),
        &ImportOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("machine shape"), "{err}");
    let bad = out.path().join("server_event.csv");
    std::fs::write(&bad, "0,1,add,,64,0.69,1\n0,2,add,,sixty,0.69,1\n").unwrap();
    let err = import(
        ImportFormat::AlibabaV2017,
        std::slice::from_ref(&bad),
        &out.path().join("o"),
        &opts,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with(&format!(
            "{}:2: cpus: \"sixty\" is not an integer",
            bad.display()
        )),
        "{err}"
    );
    std::fs::write(&bad, "0,1,add,,64,0.69,1\n5,1,reboot,,0,0,0\n").unwrap();
    let err = import(
        ImportFormat::AlibabaV2017,
        std::slice::from_ref(&bad),
        &out.path().join("o"),
        &opts,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with(&format!(
            "{}:2: event_type: unknown event_type \"reboot\"",
            bad.display()
        )),
        "{err}"
    );
}

#[test]
fn v2025_dlrm_with_a_node_pool() {
    let out = tempfile::tempdir().unwrap();
    let template: serde_json::Value = serde_json::json!({"status": {"capacity": {
        "cpu": "96", "memory": "768Gi", "alibabacloud.com/gpu-count": "8", "alibabacloud.com/gpu-milli": "8000", "ksim.io/rdma": "100"}}});
    let opts = ImportOptions {
        node_pools: vec![NodePool {
            name: "hn".into(),
            count: 4,
            template,
        }],
        ..ImportOptions::default()
    };
    let sum = import(
        ImportFormat::AlibabaV2025Dlrm,
        &[tr("alibaba-gpu-v2025-dlrm", "dlrm_head3000.csv")],
        out.path(),
        &opts,
    )
    .unwrap();
    assert_eq!(sum.nodes, 4);
    assert_eq!(sum.events["CreatePod"], 3000);
    let mut spread = 0;
    for e in NativeReader::open(&sum.trace_file).unwrap() {
        if let InputEvent::CreatePod { pod, .. } = e.unwrap().event {
            if let Some(c) = pod.spec.topology_spread_constraints.first() {
                assert_eq!(
                    c.max_skew.to_string(),
                    pod.metadata.annotations["ksim.io/max-instances-per-node"]
                );
                spread += 1;
            }
        }
    }
    assert_eq!(spread, 1859);
    let rep = validate_trace(&sum.trace_file).unwrap();
    assert!(rep.is_ok(), "{rep}");
    let bad = out.path().join("d.csv");
    let header = std::fs::read_to_string(tr("alibaba-gpu-v2025-dlrm", "dlrm_head3000.csv"))
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_string();
    std::fs::write(
        &bad,
        format!("{header}\ni0,HN,app_0,12,12,1,1,25,25,120.0,120.0,640.0,800.0,8,10,5,4\n"),
    )
    .unwrap();
    let err = import(
        ImportFormat::AlibabaV2025Dlrm,
        std::slice::from_ref(&bad),
        &out.path().join("o"),
        &opts,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with(&format!(
            "{}:2: deletion_time: deletion_time is before scheduled_time",
            bad.display()
        )),
        "{err}"
    );
}

#[test]
fn node_inventories() {
    let out = tempfile::tempdir().unwrap();
    let sum = import(
        ImportFormat::AlibabaV2020Machines,
        &[tr("alibaba-gpu-v2020", "pai_machine_spec.csv")],
        out.path(),
        &ImportOptions::default(),
    )
    .unwrap();
    assert_eq!(sum.nodes, 1897);
    let nodes = load_nodes(&sum.nodes_file).unwrap();
    let gpus: i64 = nodes
        .iter()
        .filter_map(|n| n.status.capacity.get(gpu::COUNT))
        .map(Quantity::value)
        .sum();
    assert_eq!(gpus, 6742);
    assert_eq!(
        nodes
            .iter()
            .filter(|n| n.metadata.labels.get(gpu::MODEL).is_some_and(|m| m == "T4"))
            .count(),
        497
    );

    let opts = ImportOptions {
        machine: Some(shape()),
        ..ImportOptions::default()
    };
    let sum = import(
        ImportFormat::AlibabaV2026SpotNodes,
        &[tr("alibaba-v2026-spot-gpu-nodes", "node_info_df.csv")],
        &out.path().join("b"),
        &opts,
    )
    .unwrap();
    assert_eq!(sum.nodes, 4278);
    let nodes = load_nodes(&sum.nodes_file).unwrap();
    let gpus: i64 = nodes
        .iter()
        .filter_map(|n| n.status.capacity.get(gpu::COUNT))
        .map(Quantity::value)
        .sum();
    assert_eq!(gpus, 10_412);
    let err = import(
        ImportFormat::AlibabaV2026SpotNodes,
        &[tr("alibaba-v2026-spot-gpu-nodes", "node_info_df.csv")],
        &out.path().join("c"),
        &ImportOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("no memory column"), "{err}");
}
