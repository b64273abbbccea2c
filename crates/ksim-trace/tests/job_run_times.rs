//! A scenario's `workload.runTimes` and `controllerTiming`, as a user notices them: a Job with
//! no run time is warned about, a run-time entry silences the warning and gives its pods their
//! run time, bad settings are refused with the field.

const JOBS: &str = "kind: List\nitems:
- apiVersion: batch/v1
  kind: Job
  metadata: {name: etl}
  spec:
    template:
      spec: {restartPolicy: Never, containers: [{name: c, resources: {requests: {cpu: 100m}}}]}
- apiVersion: batch/v1
  kind: Job
  metadata: {name: timed}
  spec:
    template:
      metadata: {annotations: {ksim.io/run-for: 5m}}
      spec: {restartPolicy: Never, containers: [{name: c, resources: {requests: {cpu: 100m}}}]}
";

fn plan(extra: &str) -> Result<ksim_trace::ScenarioPlan, String> {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("jobs.yaml"), JOBS).unwrap();
    let path = d.join("s.yaml");
    std::fs::write(
        &path,
        format!("name: s\nhorizon: 1h\nworkload:\n  controllers: [jobs.yaml]\n{extra}"),
    )
    .unwrap();
    ksim_trace::load_scenario(&path).map_err(|e| e.to_string())
}

#[test]
fn a_job_without_a_run_time_is_warned_about() {
    let p = plan("").unwrap();
    let w: Vec<&String> = p
        .warnings
        .iter()
        .filter(|w| w.contains("run time"))
        .collect();
    assert_eq!(w.len(), 1, "{:?}", p.warnings);
    assert!(w[0].contains("Job default/etl"), "{w:?}");
    assert!(w[0].contains("never completes"), "{w:?}");
    let p = plan("  runTimes: {etl: {fixed: 7m}}\n").unwrap();
    assert!(
        !p.warnings.iter().any(|w| w.contains("run time")),
        "{:?}",
        p.warnings
    );
    assert!(p
        .engine
        .controller_run_times
        .named("Job", "default", "etl")
        .is_some());
    let p = plan("  runTimes: {\"*\": {uniform: {min: 1m, max: 5m}}}\n").unwrap();
    assert!(!p.warnings.iter().any(|w| w.contains("run time")));
}

#[test]
fn controller_timing_and_run_times_are_read_and_checked() {
    let p = plan("controllerTiming: {kubeApiQps: 50, kubeApiBurst: 100, informerDelay: 5ms}\n")
        .unwrap();
    let t = &p.engine.controller_timing;
    assert_eq!((t.kube_api_qps, t.kube_api_burst), (50.0, 100));
    assert_eq!(t.burst_replicas, 500, "the rest keep upstream's defaults");
    assert_eq!(p.engine.controller_delay, None);
    for (extra, want) in [
        (
            "controllerTiming: {burstReplicas: 0}\n",
            "controllerTiming.burstReplicas: must be at least 1, got 0",
        ),
        (
            "controllerTiming: {kubeApiQsp: 5}\n",
            "unknown field `kubeApiQsp`",
        ),
        (
            "  runTimes: {etl: {uniform: {min: 5m, max: 1m}}}\n",
            "workload.runTimes[\"etl\"]: uniform: need 0 <= min <= max",
        ),
        (
            "  runTimes: {etl: {sometimes: 1m}}\n",
            "unknown variant `sometimes`",
        ),
    ] {
        let e = plan(extra).map(|_| ()).unwrap_err();
        assert!(e.contains(want), "{extra}: {e}");
    }
}
