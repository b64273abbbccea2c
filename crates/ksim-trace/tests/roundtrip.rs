//! A cluster built in a run, dumped as a kubectl-style List at t = T, re-imported with the
//! kube-dump importer and replayed from that moment with the rest of the trace, places the
//! remaining pods exactly where the uninterrupted run placed them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
    // Trace deletions end the pods at once (`costs.terminationGrace: 0s`). With the default
    // graceful termination (30 s) the pods deleted in the 30 s before the dump are still
    // terminating at the cut: the dump writes them with `deletionTimestamp` set, the kube-dump
    // importer skips such pods (they are being deleted), so the replay frees their resources
    // up to 30 s earlier than the uninterrupted run does and later pods land elsewhere (p081 on
    // n08 instead of n07). A dump cannot carry the rest of a grace period; this test is about
    // the placements a dump carries, so it keeps deletions immediate.
    let mut cfg = EngineConfig {
        seed: 3,
        horizon,
        ..Default::default()
    };
    cfg.costs.termination_grace = Some(ksim_engine::SimDuration::ZERO);
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

/// Workloads as controllers through a dump: a scenario with a Deployment (under a
/// PriorityClass), a StatefulSet with a claim template, a DaemonSet and a Job, dumped at
/// t = 150 s (`set_dump_at`, as `ksim run --dump-at`), imported with the kube-dump importer
/// and replayed with the rest of the trace (a scale-up at 300 s): the replay's controllers
/// adopt the dumped pods (no pod created twice), end with the same desired, live and running
/// counts as the uninterrupted run, and the Job's pods end and its completion come at the
/// same instants.
#[test]
fn controllers_survive_dump_import_replay() {
    use ksim_engine::Outcome;

    const OBJECTS: &str = "kind: List\nitems:
- {apiVersion: scheduling.k8s.io/v1, kind: PriorityClass, metadata: {name: gold}, value: 1000}
- apiVersion: storage.k8s.io/v1
  kind: StorageClass
  metadata: {name: standard}
  provisioner: pd.csi.storage.gke.io
  volumeBindingMode: WaitForFirstConsumer
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: web}
  spec:
    replicas: 6
    selector: {matchLabels: {app: web}}
    template:
      metadata: {labels: {app: web}}
      spec: {priorityClassName: gold, containers: [{name: c, resources: {requests: {cpu: 500m}}}]}
- apiVersion: apps/v1
  kind: StatefulSet
  metadata: {name: db}
  spec:
    replicas: 2
    selector: {matchLabels: {app: db}}
    template:
      metadata: {labels: {app: db}}
      spec: {containers: [{name: c, resources: {requests: {cpu: '1'}}, volumeMounts: [{name: data, mountPath: /d}]}]}
    volumeClaimTemplates:
    - metadata: {name: data}
      spec: {accessModes: [ReadWriteOnce], storageClassName: standard, resources: {requests: {storage: 1Gi}}}
- apiVersion: apps/v1
  kind: DaemonSet
  metadata: {name: agent, namespace: kube-system}
  spec:
    selector: {matchLabels: {app: agent}}
    template:
      metadata: {labels: {app: agent}}
      spec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]}
- apiVersion: batch/v1
  kind: Job
  metadata: {name: batch}
  spec:
    completions: 6
    parallelism: 2
    template:
      metadata: {annotations: {ksim.io/run-for: 100s}}
      spec: {restartPolicy: Never, containers: [{name: c, resources: {requests: {cpu: '1'}}}]}
";
    let scale_up = |at: &str| {
        format!(
            r#"{{"at": "{at}", "kind": "UpdateObject", "object": {{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {{"name": "web"}}, "spec": {{"replicas": 9, "selector": {{"matchLabels": {{"app": "web"}}}}, "template": {{"metadata": {{"labels": {{"app": "web"}}}}, "spec": {{"priorityClassName": "gold", "containers": [{{"name": "c", "resources": {{"requests": {{"cpu": "500m"}}}}}}]}}}}}}}}}}"#
        ) + "\n"
    };

    #[derive(Default, Debug)]
    struct Seen {
        /// Creation times of each controller's pods.
        created: BTreeMap<String, Vec<SimTime>>,
        /// End time of each Job pod that succeeded.
        job_ends: BTreeMap<String, SimTime>,
        /// (desired, live, running, succeeded, completed_at) per controller at the end.
        end: BTreeMap<String, (i64, u64, u64, u64, Option<SimTime>)>,
        /// Each controller's binds: (time, node).
        bound: BTreeMap<String, Vec<(SimTime, String)>>,
    }
    let run = |scenario: &Path, dump_at: Option<SimTime>| -> (Seen, Option<serde_json::Value>) {
        let plan = ksim_trace::load_scenario(scenario).expect("scenario");
        let seed = plan.engine.seed;
        let mut s = Simulation::new(
            plan.engine,
            &plan.scheduler,
            &Registry::in_tree(),
            plan.nodes,
            plan.objects,
        )
        .expect("simulation");
        if let Some(t) = dump_at {
            s.set_dump_at(t);
        }
        let mut events = plan.events;
        events.set_seed(seed);
        s.add_source(Box::new(events)).expect("source");
        let mut seen = Seen::default();
        let mut owner = BTreeMap::new();
        s.run(&mut |r: &Record| match r {
            Record::PodCreated {
                at,
                name,
                owner_kind,
                owner_name,
                ..
            } => {
                let o = match owner_kind.as_str() {
                    "ReplicaSet" => "Deployment/web".to_string(),
                    k => format!("{k}/{owner_name}"),
                };
                owner.insert(name.clone(), o.clone());
                seen.created.entry(o).or_default().push(*at);
            }
            Record::PodBound { at, name, node, .. } => {
                if let Some(o) = owner.get(name) {
                    let o: &String = o;
                    seen.bound
                        .entry(o.clone())
                        .or_default()
                        .push((*at, node.clone()));
                }
            }
            Record::PodEnded {
                at, name, outcome, ..
            } if *outcome == Outcome::Succeeded => {
                seen.job_ends.insert(name.clone(), *at);
            }
            Record::Controller {
                kind,
                name,
                desired,
                live,
                running,
                succeeded,
                completed_at,
                ..
            } => {
                seen.end.insert(
                    format!("{kind}/{name}"),
                    (*desired, *live, *running, *succeeded, *completed_at),
                );
            }
            _ => {}
        })
        .expect("run");
        (seen, s.take_dump())
    };

    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    std::fs::write(d.join("objects.yaml"), OBJECTS).unwrap();
    std::fs::write(d.join("events.jsonl"), scale_up("300s")).unwrap();
    // Nodes of distinct sizes: no scoring tie, so that the placements after the cut do not
    // depend on the tie-break RNG, whose state a dump does not carry.
    let pool = format!(
        "pools: [{}]",
        (0..4)
            .map(|i| format!(
                "{{name: p{i}, count: 1, template: {{status: {{capacity: {{cpu: '{}', memory: 32Gi, pods: '110'}}}}}}}}",
                8 + i
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    std::fs::write(
        d.join("full.yaml"),
        format!("name: full\nseed: 5\nhorizon: 900s\ncluster:\n  {pool}\n  objectsFiles: [objects.yaml]\nworkload: {{traces: [events.jsonl]}}\ncosts: {{podStartup: 5s}}\n"),
    )
    .unwrap();
    let cut = SimTime::from_secs(150);
    let (full, dump) = run(&d.join("full.yaml"), Some(cut));
    let dump = dump.expect("the dump at 150 s");
    let items = dump["items"].as_array().unwrap();
    let kinds: Vec<&str> = items
        .iter()
        .filter_map(|i| i["kind"].as_str())
        .filter(|k| !matches!(*k, "Node" | "Pod"))
        .collect();
    for k in [
        "PriorityClass",
        "Deployment",
        "ReplicaSet",
        "StatefulSet",
        "DaemonSet",
        "Job",
    ] {
        assert!(kinds.contains(&k), "no {k} in the dump: {kinds:?}");
    }
    let job = items.iter().find(|i| i["kind"] == "Job").unwrap();
    assert_eq!(job["status"]["succeeded"], 2, "{job}");
    let dumped_pods = items.iter().filter(|i| i["kind"] == "Pod").count();

    let dump_path = d.join("dump.json");
    std::fs::write(&dump_path, serde_json::to_string_pretty(&dump).unwrap()).unwrap();
    let out = d.join("imported");
    import(
        ImportFormat::KubeDump,
        &[dump_path],
        &out,
        &ImportOptions::default(),
    )
    .expect("import");
    // The rest of the trace, shifted so that the dump's moment is t = 0.
    std::fs::write(d.join("rest.jsonl"), scale_up("150s")).unwrap();
    std::fs::write(
        d.join("replay.yaml"),
        "name: replay\nseed: 5\nhorizon: 750s\ncluster:\n  nodesFiles: [imported/nodes.yaml]\n  objectsFiles: [imported/objects.yaml]\nworkload: {traces: [imported/trace.jsonl, rest.jsonl]}\ncosts: {podStartup: 5s}\n",
    )
    .unwrap();
    let (replay, _) = run(&d.join("replay.yaml"), None);

    // The dumped pods come back at t=0 from the trace; the controllers create nothing then.
    let at_zero: usize = replay
        .created
        .values()
        .map(|v| v.iter().filter(|t| **t == SimTime::ZERO).count())
        .sum();
    assert_eq!(at_zero, dumped_pods);
    let early: Vec<(&String, &SimTime)> = replay
        .created
        .iter()
        .flat_map(|(o, v)| v.iter().map(move |t| (o, t)))
        .filter(|(_, t)| **t > SimTime::ZERO && **t < SimTime::from_secs(40))
        .collect();
    assert!(
        early.is_empty(),
        "pods created again by the replay: {early:?}"
    );
    // What happened after the cut, the same: web's 3 new replicas, the Job's remaining pods.
    let after = |s: &Seen, o: &str, from: SimTime| {
        s.created
            .get(o)
            .map_or(0, |v| v.iter().filter(|t| **t > from).count())
    };
    assert_eq!(after(&replay, "Deployment/web", SimTime::ZERO), 3);
    assert_eq!(
        after(&full, "Job/batch", cut),
        after(&replay, "Job/batch", SimTime::ZERO)
    );
    for (ctl, f) in &full.end {
        let r = replay
            .end
            .get(ctl)
            .unwrap_or_else(|| panic!("{ctl} missing"));
        // A Job's desired count is its completions, which the import lowers by the 2 done.
        let done = if ctl.starts_with("Job/") { 2 } else { 0 };
        let (fd, rd) = (f.0, r.0 + done);
        assert_eq!(
            (fd, f.1, f.2),
            (rd, r.1, r.2),
            "{ctl}: full {f:?}, replay {r:?}"
        );
    }
    let (fj, rj) = (&full.end["Job/batch"], &replay.end["Job/batch"]);
    assert_eq!(fj.3, 6);
    assert_eq!(rj.3, 4, "2 succeeded before the dump");
    assert_eq!(fj.4, rj.4.map(|t| SimTime(t.0 + cut.0)), "completion time");
    // The Job pods running at the cut end when they did in the uninterrupted run.
    let mut compared = 0;
    for (name, t) in &replay.job_ends {
        if let Some(f) = full.job_ends.get(name) {
            assert_eq!(*f, SimTime(t.0 + cut.0), "{name}");
            compared += 1;
        }
    }
    assert_eq!(compared, 2, "{:?}", replay.job_ends);
    // The same placements after the cut: each controller's pods bound at the same instants on
    // the same nodes (pods created after the cut are named from the replay's seed, so they are
    // compared by their controller, not by name). This needs the Deployment's ReplicaSet in the
    // scheduler's listers in both runs: PodTopologySpread's default constraints spread by it.
    let binds_after =
        |s: &Seen, from: SimTime, shift: i64| -> BTreeMap<String, Vec<(i64, String)>> {
            s.bound
                .iter()
                .map(|(o, v)| {
                    let mut b: Vec<(i64, String)> = v
                        .iter()
                        .filter(|(t, _)| *t > from)
                        .map(|(t, n)| (t.0 + shift, n.clone()))
                        .collect();
                    b.sort();
                    (o.clone(), b)
                })
                .filter(|(_, b)| !b.is_empty())
                .collect()
        };
    let (fb, rb) = (
        binds_after(&full, cut, 0),
        binds_after(&replay, SimTime::ZERO, cut.0),
    );
    assert!(fb.values().map(Vec::len).sum::<usize>() >= 5, "{fb:?}");
    assert_eq!(fb, rb, "placements after the cut differ");
}
