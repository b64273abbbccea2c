//! The engine's node-group autoscaler, driven from a scenario: scale-up after the delays,
//! packing by requests, max respected, scale-down to min after the pods leave, determinism.

use std::path::Path;

use ksim_engine::record::VecObserver;
use ksim_engine::{Record, SimTime, Simulation};
use ksim_scheduler::framework::Registry;

const SCENARIO: &str = r#"
name: autoscale
seed: 1
horizon: 2h
cluster:
  pools:
    - name: workers
      count: 1
      template: {status: {capacity: {cpu: "4", memory: 16Gi, pods: "110"}}}
    - name: big
      count: 0
      template:
        metadata: {labels: {size: big}}
        status: {capacity: {cpu: "16", memory: 64Gi, pods: "110"}}
workload:
  generators:
    - name: small
      arrival: {interval: 1s}
      count: 20
      shapes: [{requests: {cpu: "1", memory: 1Gi}}]
      runTime: {fixed: 30m}
    - name: huge
      start: 5s
      arrival: {interval: 1s}
      count: 1
      shapes: [{requests: {cpu: "12", memory: 8Gi}}]
      runTime: {fixed: 30m}
autoscaler:
  scanInterval: 10s
  scaleUpDelay: 10s
  provisioningDelay: 2m
  scaleDownUtilization: 0.5
  scaleDownUnneededTime: 10m
  pools:
    - {pool: workers, min: 1, max: 4}
    - {pool: big, min: 0, max: 2}
"#;

fn run(yaml: &str) -> Vec<Record> {
    let s = ksim_trace::parse_scenario("autoscale.yaml", yaml).unwrap();
    let plan = s.plan("autoscale.yaml", Path::new(".")).unwrap();
    assert!(plan.engine.autoscaler.is_some());
    let mut sim = Simulation::new(
        plan.engine,
        &plan.scheduler,
        &Registry::in_tree(),
        plan.nodes,
        plan.objects,
    )
    .unwrap();
    sim.add_source(Box::new(plan.events)).unwrap();
    let mut obs = VecObserver::default();
    sim.run(&mut obs).unwrap();
    obs.records
}

#[test]
fn scales_up_after_the_delays_and_down_to_min() {
    let records = run(SCENARIO);
    let added: Vec<(i64, String)> = records
        .iter()
        .filter_map(|r| match r {
            Record::NodeAdded { at, node, .. } => Some((at.whole_secs(), node.clone())),
            _ => None,
        })
        .collect();
    let removed: Vec<(i64, String)> = records
        .iter()
        .filter_map(|r| match r {
            Record::NodeRemoved { at, node } => Some((at.whole_secs(), node.clone())),
            _ => None,
        })
        .collect();
    // workers-0 at t=0 holds 4 of the 1-cpu pods. The others fail from t=4 s on. The scan at
    // 10 s first sees pods 4..9 and the 12-cpu pod (which fits only the "big" template); 10 s
    // later (scaleUpDelay) the scan at 20 s orders workers-1, workers-2 (6 pods, packed 4 + 2)
    // and big-0, which join at 140 s (provisioningDelay 2 min). At 30 s all 16 waiting small
    // pods are ready: the two nodes on their way hold 8, and one more (workers-3, joining at
    // 150 s) takes the pool to its max of 4; the last 4 pods wait for the first ones to end.
    assert_eq!(
        added,
        [
            (0, "workers-0".to_string()),
            (140, "workers-1".into()),
            (140, "workers-2".into()),
            (140, "big-0".into()),
            (150, "workers-3".into()),
        ]
    );
    let bound = records
        .iter()
        .filter(|r| matches!(r, Record::PodBound { .. }))
        .count();
    assert_eq!(bound, 21, "every pod ran");
    // After the pods end (by ~62 min), nodes under 50% for 10 min go; workers keeps its min.
    let gone: Vec<&str> = removed.iter().map(|r| r.1.as_str()).collect();
    assert_eq!(gone.len(), 4, "{removed:?}");
    assert!(gone.contains(&"big-0"));
    assert!(removed.iter().all(|r| r.0 > 40 * 60), "{removed:?}");
    let end_nodes = added.len() - removed.len();
    assert_eq!(end_nodes, 1);
    // Deterministic.
    assert_eq!(records, run(SCENARIO));
    let _ = SimTime::ZERO;
}

#[test]
fn bad_autoscaler_settings_name_the_field() {
    let cases = [
        (
            SCENARIO.replace("pool: big, min: 0", "pool: huge, min: 0"),
            "autoscale.yaml: autoscaler.pools[1].pool: no pool named \"huge\"",
        ),
        (
            SCENARIO.replace("min: 1, max: 4", "min: 5, max: 4"),
            "autoscale.yaml: autoscaler.pools[0]: min 5 is more than max 4",
        ),
        (
            SCENARIO.replace("scaleDownUtilization: 0.5", "scaleDownUtilization: 2"),
            "autoscale.yaml: autoscaler.scaleDownUtilization: 2 is not in 0..1",
        ),
    ];
    for (yaml, want) in cases {
        let s = ksim_trace::parse_scenario("autoscale.yaml", &yaml).unwrap();
        let e = s
            .plan("autoscale.yaml", Path::new("."))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with(want), "got {e}\nwant {want}");
    }
    let e = ksim_trace::parse_scenario(
        "autoscale.yaml",
        &SCENARIO.replace("scanInterval: 10s", "scanEvery: 10s"),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with("autoscale.yaml: autoscaler.scanEvery: unknown field"),
        "{e}"
    );
}
