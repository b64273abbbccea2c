//! A scenario's `workload.controllers` files and `controllerScale`, as a user notices them:
//! controllers created at their file's `at`, replicas multiplied (rounded up) at creation and
//! on a trace's `UpdateObject`, a per-file factor, a per-name factor beating `"*"`; and bad
//! input refused with file, item and field.

use std::collections::BTreeMap;
use std::path::Path;

use ksim_engine::{Record, SimTime, Simulation};
use ksim_scheduler::framework::Registry;

const APPS: &str = "kind: List\nitems:
- apiVersion: scheduling.k8s.io/v1
  kind: PriorityClass
  metadata: {name: gold}
  value: 1000
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: web}
  spec:
    replicas: 4
    selector: {matchLabels: {app: web}}
    template:
      metadata: {labels: {app: web}}
      spec: {priorityClassName: gold, containers: [{name: c, resources: {requests: {cpu: 100m}}}]}
- apiVersion: apps/v1
  kind: StatefulSet
  metadata: {name: db}
  spec:
    replicas: 3
    podManagementPolicy: Parallel
    selector: {matchLabels: {app: db}}
    template:
      metadata: {labels: {app: db}}
      spec: {containers: [{name: c, resources: {requests: {cpu: 100m}}}]}
";

const BATCH: &str = "- apiVersion: batch/v1
  kind: Job
  metadata: {name: batch}
  spec:
    completions: 4
    parallelism: 2
    template:
      metadata: {annotations: {ksim.io/run-for: 20s}}
      spec: {restartPolicy: Never, containers: [{name: c, resources: {requests: {cpu: 100m}}}]}
";

/// Loads the scenario at `path` and runs it to its horizon, each record to `on`.
fn run_scenario(path: &Path, on: &mut dyn FnMut(&Record)) {
    let plan = ksim_trace::load_scenario(path).unwrap();
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
    sim.run(&mut |r: &Record| on(r)).unwrap();
}

/// (desired, created, succeeded) per controller, and the first creation time of each
/// controller's pods.
type Outcome = (BTreeMap<String, (i64, u64, u64)>, BTreeMap<String, SimTime>);

fn run(dir: &Path, workload: &str) -> Outcome {
    std::fs::write(dir.join("apps.yaml"), APPS).unwrap();
    std::fs::write(dir.join("batch.yaml"), BATCH).unwrap();
    std::fs::write(
        dir.join("events.jsonl"),
        r#"{"at": "60s", "kind": "UpdateObject", "object": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 10, "selector": {"matchLabels": {"app": "web"}}, "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"priorityClassName": "gold", "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]}}}}}
"#,
    )
    .unwrap();
    let scenario = format!(
        "name: s\nseed: 3\nhorizon: 5m\ncluster:\n  pools: [{{name: p, count: 4, template: {{status: {{capacity: {{cpu: '16', memory: 64Gi, pods: '110'}}}}}}}}]\nworkload:\n  traces: [events.jsonl]\n{workload}"
    );
    let path = dir.join("s.yaml");
    std::fs::write(&path, scenario).unwrap();
    let mut ctl = BTreeMap::new();
    let mut first = BTreeMap::new();
    run_scenario(&path, &mut |r: &Record| match r {
        Record::PodCreated {
            at,
            owner_kind,
            owner_name,
            ..
        } => {
            let owner = if owner_kind == "ReplicaSet" {
                "Deployment/web".to_string()
            } else {
                format!("{owner_kind}/{owner_name}")
            };
            first.entry(owner).or_insert(*at);
        }
        Record::Controller {
            kind,
            name,
            desired,
            created,
            succeeded,
            ..
        } => {
            ctl.insert(format!("{kind}/{name}"), (*desired, *created, *succeeded));
        }
        _ => {}
    });
    (ctl, first)
}

#[test]
fn controllers_files_are_created_at_their_time_and_unscaled_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let (ctl, first) = run(
        dir.path(),
        "  controllers: [apps.yaml, {file: batch.yaml, at: 30s}]\n",
    );
    assert_eq!(ctl["Deployment/web"], (10, 10, 0), "{ctl:?}");
    assert_eq!(ctl["StatefulSet/db"], (3, 3, 0), "{ctl:?}");
    assert_eq!(ctl["Job/batch"], (4, 4, 4), "{ctl:?}");
    // Created at t=0 and t=30s; the controllers react one informer delay (10 ms) later.
    assert_eq!(first["Deployment/web"], SimTime(10_000));
    assert_eq!(first["Job/batch"], SimTime(30_010_000));
}

#[test]
fn controller_scale_multiplies_replicas_at_creation_and_on_updates() {
    let dir = tempfile::tempdir().unwrap();
    // web x1.5: 4 → 6, then the trace's 10 → 15; db keeps its name factor 1 over "*";
    // the batch file's factor 2 (its annotation) beats "*": parallelism 4, completions 8.
    let (ctl, _) = run(
        dir.path(),
        "  controllers: [apps.yaml, {file: batch.yaml, at: 30s, scale: 2}]\n  controllerScale: {\"*\": 1.5, db: 1}\n",
    );
    assert_eq!(ctl["Deployment/web"], (15, 15, 0), "{ctl:?}");
    assert_eq!(ctl["StatefulSet/db"], (3, 3, 0), "{ctl:?}");
    assert_eq!(ctl["Job/batch"], (8, 8, 8), "{ctl:?}");
    // One factor for all, rounded up: 4 × 1.1 = 4.4 → 5, 10 × 1.1 = 11 (not 12), 3 × 1.1 → 4.
    let (ctl, _) = run(
        dir.path(),
        "  controllers: [apps.yaml, batch.yaml]\n  controllerScale: 1.1\n",
    );
    assert_eq!(ctl["Deployment/web"].0, 11, "{ctl:?}");
    assert_eq!(ctl["StatefulSet/db"], (4, 4, 0), "{ctl:?}");
    assert_eq!(ctl["Job/batch"], (5, 5, 5), "{ctl:?}");
    // Factor 0 is "without this controller".
    let (ctl, _) = run(
        dir.path(),
        "  controllers: [apps.yaml]\n  controllerScale: {default/db: 0}\n",
    );
    assert_eq!(ctl["StatefulSet/db"], (0, 0, 0), "{ctl:?}");
}

#[test]
fn bad_controllers_entries_name_file_item_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(d.join("apps.yaml"), APPS).unwrap();
    std::fs::write(
        d.join("svc.yaml"),
        "kind: List\nitems:\n- apiVersion: v1\n  kind: Service\n  metadata: {name: s}\n",
    )
    .unwrap();
    std::fs::write(
        d.join("rs.yaml"),
        "kind: List\nitems:\n- apiVersion: apps/v1\n  kind: ReplicaSet\n  metadata: {name: r}\n  spec: {selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: b}}}}\n",
    )
    .unwrap();
    std::fs::write(
        d.join("neg.yaml"),
        "kind: List\nitems:\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: d}\n  spec: {replicas: -2, selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c}]}}}\n",
    )
    .unwrap();
    let cases = [
        ("controllers: [svc.yaml]", "svc.yaml: items[0]: kind: \"Service\" is not a controller"),
        ("controllers: [rs.yaml]", "rs.yaml: items[0]: spec.template.spec.containers: a ReplicaSet in a controllers file needs a pod template with containers"),
        ("controllers: [neg.yaml]", "neg.yaml: items[0]: spec.replicas: must be greater than or equal to 0, got -2"),
        ("controllers: [missing.yaml]", "missing.yaml"),
        ("controllers: [{file: apps.yaml, at: soon}]", "s.yaml: workload.controllers[0]: at: invalid duration"),
        ("controllers: [{file: apps.yaml, scale: -1}]", "s.yaml: workload.controllers[0]: scale: scale factor -1 is not in [0, 1000]"),
        ("controllers: [{fle: apps.yaml}]", "s.yaml: workload.controllers[0]: fle: unknown field `fle`"),
        ("controllers: [3]", "s.yaml: workload.controllers[0]: expected a file name or {file, at, scale}"),
        ("controllerScale: -1", "s.yaml: workload.controllerScale: scale factor -1 is not in [0, 1000]"),
        ("controllerScale: {web: lots}", "s.yaml: workload.controllerScale: web: expected a number"),
        ("controllerScale: {a/b/c/d: 2}", "s.yaml: workload.controllerScale: \"a/b/c/d\": expected name"),
        ("controllers: [apps.yaml, apps.yaml]", "apps.yaml: items[0]: metadata.name: PriorityClass gold is listed twice"),
    ];
    for (w, want) in cases {
        let path = d.join("s.yaml");
        std::fs::write(&path, format!("name: s\nworkload: {{{w}}}\n")).unwrap();
        let err = match ksim_trace::load_scenario(&path) {
            Ok(_) => panic!("{w}: accepted"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains(want), "{w}\n got {err}\nwant {want}");
    }
    // A name in controllerScale that no file's controller has is worth a warning.
    let path = d.join("s.yaml");
    std::fs::write(
        &path,
        "name: s\nworkload: {controllers: [apps.yaml], controllerScale: {wbe: 2}}\n",
    )
    .unwrap();
    let plan = ksim_trace::load_scenario(&path).unwrap();
    assert!(
        plan.warnings.iter().any(|w| w.contains("\"wbe\"")),
        "{:?}",
        plan.warnings
    );
}

/// A CronJob every 5 minutes whose Jobs run 7 minutes: `Allow` starts one at every scheduled
/// time, `Forbid` leaves the times when the last one still runs unmet and runs the most recent when it ends, `Replace` deletes it and starts
/// the new one. Jobs are named `<cronjob>-<minutes since the Unix epoch>` (virtual t=0 is
/// 2024-01-01T00:00:00Z, 28401120 minutes); `suspend` stops the runs.
/// Pod creations (time, owner) and (created, succeeded) per controller.
type CronOutcome = (Vec<(SimTime, String)>, BTreeMap<String, (u64, u64)>);

#[test]
fn cronjob_runs_on_schedule_with_its_concurrency_policy() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = |policy: &str, suspend: bool| -> CronOutcome {
        std::fs::write(
            d.join("cron.yaml"),
            format!(
                "kind: List\nitems:
- apiVersion: batch/v1
  kind: CronJob
  metadata: {{name: report}}
  spec:
    schedule: '*/5 * * * *'
    concurrencyPolicy: {policy}
    suspend: {suspend}
    jobTemplate:
      spec:
        template:
          metadata: {{annotations: {{ksim.io/run-for: 7m}}}}
          spec: {{restartPolicy: Never, containers: [{{name: c, resources: {{requests: {{cpu: 100m}}}}}}]}}
"
            ),
        )
        .unwrap();
        let path = d.join("s.yaml");
        std::fs::write(
            &path,
            "name: s\nhorizon: 27m\ncluster:\n  pools: [{name: p, count: 2, template: {status: {capacity: {cpu: '8', memory: 8Gi, pods: '110'}}}}]\nworkload: {controllers: [cron.yaml]}\n",
        )
        .unwrap();
        let mut created = Vec::new();
        let mut ctl = BTreeMap::new();
        run_scenario(&path, &mut |r: &Record| match r {
            Record::PodCreated { at, owner_name, .. } => created.push((*at, owner_name.clone())),
            Record::Controller {
                kind,
                name,
                created,
                succeeded,
                ..
            } => {
                ctl.insert(format!("{kind}/{name}"), (*created, *succeeded));
            }
            _ => {}
        });
        (created, ctl)
    };
    let minute = |m: i64| format!("report-{}", 28_401_120 + m);
    let (pods, ctl) = run("Allow", false);
    let owners: Vec<String> = pods.iter().map(|(_, o)| o.clone()).collect();
    assert_eq!(
        owners,
        [minute(5), minute(10), minute(15), minute(20), minute(25)]
    );
    // The CronJob wakes 100 ms after the scheduled instant (upstream's nextScheduleDelta);
    // the Job's controller reacts one informer delay (10 ms) later.
    assert_eq!(pods[0].0, SimTime(300_110_000));
    assert_eq!(ctl["CronJob/report"].0, 5);
    assert_eq!(ctl[&format!("Job/{}", minute(5))], (1, 1), "{ctl:?}");
    let (pods, ctl) = run("Forbid", false);
    let owners: Vec<String> = pods.iter().map(|(_, o)| o.clone()).collect();
    // Forbid leaves a time unmet while a Job runs; the sync after that Job ends runs it
    // (upstream's mostRecentScheduleTime): 10 at ~12 min, 15 at ~19 min, then 25 at ~26 min.
    assert_eq!(owners, [minute(5), minute(10), minute(15), minute(25)]);
    assert_eq!(ctl[&format!("Job/{}", minute(15))], (1, 1), "{ctl:?}");
    let (pods, ctl) = run("Replace", false);
    assert_eq!(pods.len(), 5);
    // Each Job was replaced before its pod finished (5 min < 7 min); the last still runs.
    assert!(!ctl.contains_key(&format!("Job/{}", minute(5))), "{ctl:?}");
    assert_eq!(ctl[&format!("Job/{}", minute(25))], (1, 0), "{ctl:?}");
    let (pods, ctl) = run("Allow", true);
    assert!(pods.is_empty(), "{pods:?}");
    assert_eq!(ctl["CronJob/report"].0, 0);
}

/// A CronJob every minute whose Jobs run 20 seconds keeps only its newest finished Jobs: three
/// by default (the API server's `successfulJobsHistoryLimit`), as many as the limit says
/// otherwise; the deleted ones leave no row in the controllers' records. Job names at minute
/// `m` are `report-<28401120 + m>`.
#[test]
fn cronjob_keeps_its_newest_finished_jobs() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let run = |limit: &str| -> Vec<String> {
        std::fs::write(
            d.join("cron.yaml"),
            format!(
                "kind: List\nitems:
- apiVersion: batch/v1
  kind: CronJob
  metadata: {{name: report}}
  spec:
    schedule: '* * * * *'
    {limit}
    jobTemplate:
      spec:
        template:
          metadata: {{annotations: {{ksim.io/run-for: 20s}}}}
          spec: {{restartPolicy: Never, containers: [{{name: c, resources: {{requests: {{cpu: 100m}}}}}}]}}
"
            ),
        )
        .unwrap();
        let path = d.join("s.yaml");
        std::fs::write(
            &path,
            "name: s\nhorizon: 8m30s\ncluster:\n  pools: [{name: p, count: 1, template: {status: {capacity: {cpu: '8', memory: 8Gi, pods: '110'}}}}]\nworkload: {controllers: [cron.yaml]}\n",
        )
        .unwrap();
        let mut jobs = Vec::new();
        run_scenario(&path, &mut |r: &Record| {
            if let Record::Controller { kind, name, .. } = r {
                if kind == "Job" {
                    jobs.push(name.clone());
                }
            }
        });
        jobs
    };
    let minute = |m: i64| format!("report-{}", 28_401_120 + m);
    // Jobs of minutes 1 to 8, each done 20 s after its pod started: all eight finished by
    // 8m30s, the newest three kept.
    assert_eq!(run(""), [minute(6), minute(7), minute(8)]);
    assert_eq!(run("successfulJobsHistoryLimit: 1"), [minute(8)]);
    assert_eq!(run("successfulJobsHistoryLimit: 0"), Vec::<String>::new());
    let all: Vec<String> = (1..=8).map(minute).collect();
    assert_eq!(run("successfulJobsHistoryLimit: 10"), all);
}
