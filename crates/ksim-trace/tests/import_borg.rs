//! Borg 2011 / 2019 and Alibaba v2018 importers on small synthetic files written in the formats
//! of the schema notes (no raw data of these traces is redistributable).

use ksim_api::Quantity;
use ksim_engine::{InputEvent, TimedEvent};
use ksim_trace::{import, load_nodes, ImportFormat, ImportOptions, MachineShape, NativeReader};

fn opts() -> ImportOptions {
    ImportOptions {
        machine: Some(MachineShape {
            cpu: Quantity::parse("64").unwrap(),
            memory: Quantity::parse("256Gi").unwrap(),
        }),
        ..ImportOptions::default()
    }
}

fn events(p: &std::path::Path) -> Vec<TimedEvent> {
    NativeReader::open(p)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
}

fn summary(evs: &[TimedEvent]) -> Vec<(f64, String)> {
    evs.iter()
        .map(|e| {
            let what = match &e.event {
                InputEvent::CreatePod { pod, run_for } => format!(
                    "create {} {:?}",
                    pod.metadata.name,
                    run_for.map(|d| d.as_secs_f64())
                ),
                InputEvent::DeletePod { name, .. } => format!("delete {name}"),
                InputEvent::AddNode { node } => format!("add {}", node.metadata.name),
                InputEvent::UpdateNode { node } => format!("update {}", node.metadata.name),
                InputEvent::RemoveNode { name } => format!("remove {name}"),
                other => other.kind().to_string(),
            };
            (e.at.as_secs_f64(), what)
        })
        .collect()
}

#[test]
fn borg_2011() {
    let dir = tempfile::tempdir().unwrap();
    let machines = dir.path().join("machine_events-part-00000-of-00001.csv");
    std::fs::write(&machines, "0,1,0,plat,0.5,0.2493\n0,2,0,plat,1,1\n5000000,3,0,plat,0.5,0.5\n7000000,2,2,plat,0.5,0.5\n9000000,3,1,,,\n").unwrap();
    let tasks = dir.path().join("task_events-part-00000-of-00001.csv");
    std::fs::write(
        &tasks,
        "1000000,,77,0,,0,u,2,9,0.125,0.0625,0.001,1\n\
         2000000,,77,0,1,1,u,2,9,0.125,0.0625,0.001,1\n\
         12000000,,77,0,1,4,u,2,9,0.125,0.0625,0.001,1\n\
         3000000,,88,5,,0,u,0,0,0.5,0.5,0,0\n\
         4000000,,88,5,,5,u,0,0,0.5,0.5,0,0\n\
         4500000,,99,1,,0,u,0,11,0.01,0.01,0,0\n\
         6000000,,99,1,,8,u,0,11,0.01,0.01,0,0\n",
    )
    .unwrap();
    let sum = import(
        ImportFormat::Borg2011,
        &[tasks.clone(), machines],
        dir.path(),
        &opts(),
    )
    .unwrap();
    assert_eq!(sum.nodes, 2);
    let nodes = load_nodes(&sum.nodes_file).unwrap();
    assert_eq!(nodes[0].status.capacity["cpu"].milli_value(), 32_000);
    let got = summary(&events(&sum.trace_file));
    assert_eq!(
        got,
        [
            (1.0, "create 77-0-0 Some(10.0)".into()),
            (3.0, "create 88-5-0 None".into()),
            (4.0, "delete 88-5-0".into()),
            (4.5, "create 99-1-0 None".into()),
            (5.0, "add borg-3".into()),
            (7.0, "update borg-2".into()),
            (9.0, "remove borg-3".into()),
        ]
    );
    assert_eq!(sum.skipped["task UPDATE events (not replayed)"], 1);
    let evs = events(&sum.trace_file);
    let InputEvent::CreatePod { pod, .. } = &evs[0].event else {
        panic!()
    };
    assert_eq!(pod.spec.priority, Some(9));
    assert_eq!(
        pod.spec.containers[0].resources.requests["cpu"].milli_value(),
        8000
    );
    assert!(
        pod.spec.affinity.is_some(),
        "different-machines → anti-affinity"
    );

    std::fs::write(&tasks, "1000000,,77,0,,0,u,2,9,lots,0.0625,0.001,1\n").unwrap();
    let err = import(
        ImportFormat::Borg2011,
        std::slice::from_ref(&tasks),
        dir.path(),
        &opts(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with(&format!(
            "{}:1: cpu_request: \"lots\" is not a number",
            tasks.display()
        )),
        "{err}"
    );
    std::fs::write(&tasks, "1000000,,77,0,,0,u,2,9,0.5\n").unwrap();
    let err = import(
        ImportFormat::Borg2011,
        std::slice::from_ref(&tasks),
        dir.path(),
        &opts(),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("10 columns"), "{err}");
}

#[test]
fn borg_2019_json_lines() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("instance_events.json");
    std::fs::write(
        &p,
        r#"{"time": "0", "machine_id": "5", "type": "ADD", "capacity": {"cpus": 0.5, "memory": 0.5}, "platform_id": "abc"}
{"time": "1000000", "type": "SUBMIT", "collection_id": "42", "instance_index": 3, "priority": 200, "scheduling_class": 1, "resource_request": {"cpus": 0.25, "memory": 0.125}}
{"time": "1500000", "type": 3, "collection_id": "42", "instance_index": 3, "machine_id": "5"}
{"time": "4000000", "type": "FINISH", "collection_id": "42", "instance_index": 3}
{"time": "5000000", "type": "REMOVE", "machine_id": "5"}
"#,
    )
    .unwrap();
    let sum = import(
        ImportFormat::Borg2019,
        std::slice::from_ref(&p),
        dir.path(),
        &opts(),
    )
    .unwrap();
    assert_eq!(sum.nodes, 1);
    assert_eq!(
        summary(&events(&sum.trace_file)),
        [
            (1.0, "create 42-3-0 Some(2.5)".into()),
            (5.0, "remove borg-5".into())
        ]
    );
    std::fs::write(
        &p,
        "{\"time\": 5, \"type\": \"EXPLODE\", \"collection_id\": 1}\n",
    )
    .unwrap();
    let err = import(
        ImportFormat::Borg2019,
        std::slice::from_ref(&p),
        dir.path(),
        &opts(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with(&format!(
            "{}:1: type: unknown instance event type",
            p.display()
        )),
        "{err}"
    );
}

#[test]
fn alibaba_2018() {
    let dir = tempfile::tempdir().unwrap();
    let m = dir.path().join("machine_meta.csv");
    std::fs::write(&m, "m_1,0,1,d1,96,50,USING\nm_2,0,1,d2,96,100,USING\nm_1,3600,1,d1,96,50,OFFLINE\nm_3,0,2,d2,96,-1,USING\n").unwrap();
    let c = dir.path().join("container_meta.csv");
    std::fs::write(
        &c,
        "c_1,m_1,10,app_5,started,400,400,3.13\nc_1,m_1,20,app_5,started,400,400,3.13\n",
    )
    .unwrap();
    let b = dir.path().join("batch_task.csv");
    std::fs::write(&b, "M1,3,j_1,1,Terminated,100,160,50,0.39\nR2_1,1,j_1,1,Running,120,0,100,0.5\nM3,1,j_2,1,Failed,100,160,,\n").unwrap();
    let sum = import(
        ImportFormat::AlibabaV2018,
        &[m, c, b.clone()],
        dir.path(),
        &opts(),
    )
    .unwrap();
    assert_eq!(sum.nodes, 2);
    assert_eq!(sum.skipped["invalid normalised value (-1 or 101)"], 1);
    assert_eq!(sum.skipped["repeated container snapshot"], 1);
    assert_eq!(sum.skipped["task without cpu/memory request"], 1);
    let got = summary(&events(&sum.trace_file));
    assert_eq!(
        got,
        [
            (10.0, "create c-1 None".into()),
            (100.0, "create j-1-m1-0 Some(60.0)".into()),
            (100.0, "create j-1-m1-1 Some(60.0)".into()),
            (100.0, "create j-1-m1-2 Some(60.0)".into()),
            (120.0, "create j-1-r2-1-0 None".into()),
            (3600.0, "update m-1".into()),
        ]
    );
    std::fs::write(&b, "M1,three,j_1,1,Terminated,100,160,50,0.39\n").unwrap();
    let err = import(
        ImportFormat::AlibabaV2018,
        std::slice::from_ref(&b),
        dir.path(),
        &opts(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.starts_with(&format!(
            "{}:1: instance_num: \"three\" is not an integer",
            b.display()
        )),
        "{err}"
    );
}
