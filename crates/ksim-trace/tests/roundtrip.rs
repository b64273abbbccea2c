//! A cluster built in a run, dumped as a kubectl-style List at t = T, re-imported with the
//! kube-dump importer and replayed from that moment with the rest of the trace, places the
//! remaining pods exactly where the uninterrupted run placed them.

use std::collections::BTreeMap;
use std::path::PathBuf;

use ksim_api::{Node, Pod};
use ksim_engine::config::EngineConfig;
use ksim_engine::dump::cluster_dump;
use ksim_engine::{EventSource, InputEvent, Record, SimTime, Simulation, TimedEvent, VecSource};
use ksim_scheduler::framework::Registry;
use ksim_scheduler::node_info::ClusterObjects;
use ksim_trace::{import, load_nodes, ImportFormat, ImportOptions, NativeReader};

/// The scheduler scores by preferred node affinity only, and every pod prefers node `n<i>`
/// with weight `i + 1`: a strict ranking with no ties, so the seeded tie-break (whose stream a
/// dump cannot carry) never decides, while where each pod lands still depends on the capacity
/// left by everything before it.
fn sched_cfg() -> ksim_api::config::KubeSchedulerConfiguration {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler", "plugins": {"score": {
            "disabled": [{"name": "*"}],
            "enabled": [{"name": "NodeAffinity", "weight": 1}]}}}]
    }))
    .unwrap()
}

fn node(i: usize) -> Node {
    let cpu = 8 + i;
    let mem = 24 + 3 * i;
    serde_json::from_value(serde_json::json!({
                "metadata": {"name": format!("n{i:02}"), "labels": {"kubernetes.io/hostname": format!("n{i:02}"), "rank": i.to_string()}},
        "status": {"capacity": {"cpu": cpu.to_string(), "memory": format!("{mem}Gi"), "pods": "110"},
                   "allocatable": {"cpu": cpu.to_string(), "memory": format!("{mem}Gi"), "pods": "110"}}
    }))
    .unwrap()
}

fn trace() -> Vec<TimedEvent> {
    let mut ev = Vec::new();
    for i in 0..160usize {
        let cpu = ["300m", "700m", "1100m", "1900m", "2300m"][(i * 7) % 5];
        let mem = ["512Mi", "1Gi", "3Gi", "5Gi"][(i * 3) % 4];
        let preferences: Vec<serde_json::Value> = (0..12)
            .map(|r| {
                serde_json::json!({"weight": r + 1, "preference": {"matchExpressions": [
                {"key": "rank", "operator": "In", "values": [r.to_string()]}]}})
            })
            .collect();
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": format!("p{i:03}"), "namespace": "default", "labels": {"app": format!("a{}", i % 4)}},
                        "spec": {
                "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": preferences}},
                "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": mem}}}]}
        }))
        .unwrap();
        let t = (i * 5) as i64;
        ev.push(TimedEvent {
            at: SimTime::from_secs(t),
            event: InputEvent::CreatePod {
                pod: Box::new(pod),
                run_for: None,
            },
        });
        if i % 3 == 0 {
            ev.push(TimedEvent {
                at: SimTime::from_secs(t + 137),
                event: InputEvent::DeletePod {
                    namespace: "default".into(),
                    name: format!("p{i:03}"),
                },
            });
        }
    }
    ev.sort_by_key(|e| e.at);
    ev
}

fn placements(sim: &mut Simulation) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    sim.run(&mut |r: &Record| {
        if let Record::PodBound { name, node, .. } = r {
            out.insert(name.clone(), node.clone());
        }
    })
    .expect("run");
    out
}

fn sim(
    horizon: Option<SimTime>,
    nodes: Vec<Node>,
    sources: Vec<Box<dyn EventSource + Send>>,
) -> Simulation {
    let cfg = EngineConfig {
        seed: 3,
        horizon,
        ..Default::default()
    };
    let mut s = Simulation::new(
        cfg,
        &sched_cfg(),
        &Registry::in_tree(),
        nodes,
        ClusterObjects::default(),
    )
    .expect("simulation");
    for src in sources {
        s.add_source(src).expect("source");
    }
    s
}

#[test]
fn dump_reimport_replay_gives_the_same_placements() {
    let nodes: Vec<Node> = (0..12).map(node).collect();
    let cut = SimTime::from_secs(400);

    let mut full = sim(None, nodes.clone(), vec![Box::new(VecSource::new(trace()))]);
    let expected = placements(&mut full);

    let mut first = sim(
        Some(cut),
        nodes.clone(),
        vec![Box::new(VecSource::new(trace()))],
    );
    let _ = placements(&mut first);
    let dump = cluster_dump(&first);
    let dir = tempfile::tempdir().expect("tempdir");
    let dump_path: PathBuf = dir.path().join("dump.json");
    std::fs::write(&dump_path, serde_json::to_string_pretty(&dump).unwrap()).unwrap();
    let out = dir.path().join("imported");
    let summary = import(
        ImportFormat::KubeDump,
        &[dump_path],
        &out,
        &ImportOptions::default(),
    )
    .expect("import");
    assert_eq!(summary.nodes, 12);

    // The rest of the trace, shifted so that the dump's moment is t = 0.
    let rest: Vec<TimedEvent> = trace()
        .into_iter()
        .filter(|e| e.at > cut)
        .map(|e| TimedEvent {
            at: SimTime(e.at.0 - cut.0),
            event: e.event,
        })
        .collect();
    let imported_nodes = load_nodes(&out.join("nodes.yaml")).expect("nodes");
    let imported = NativeReader::open(&out.join("trace.jsonl")).expect("trace");
    let mut replay = sim(
        None,
        imported_nodes,
        vec![Box::new(imported), Box::new(VecSource::new(rest.clone()))],
    );
    let got = placements(&mut replay);

    let mut compared = 0;
    for e in &rest {
        if let InputEvent::CreatePod { pod, .. } = &e.event {
            let name = &pod.metadata.name;
            assert_eq!(
                got.get(name),
                expected.get(name),
                "pod {name} placed differently after the replay"
            );
            compared += 1;
        }
    }
    assert!(compared > 50, "only {compared} pods after the cut");
}
