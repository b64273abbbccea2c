//! Sweeps, shards and capacity plans, end to end on the shipped scenarios.
//!
//! - a sweep of 3 scheduler configurations × 3 seeds over a real trace (openb) gives a
//!   `sweep.csv` whose rows are exactly the summaries of the same runs made one by one;
//! - the sweep's `sweep.csv` is byte-identical on 1 and 2 threads;
//! - its shards merged give the unsharded `sweep.csv` byte for byte;
//! - `plan` finds the known minimal pool count of a synthetic scenario built so the answer is
//!   known, and reports the curve.

use std::path::{Path, PathBuf};

use ksim_sweep::plan::{parse_slo, plan_capacity, PlanOptions};
use ksim_sweep::{
    find_manifests, load_sweep, merge, run_sweep, write_sweep_outputs, RunTable, Shard,
    SweepOptions,
};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}

/// Runs the whole sweep into `out` on `threads` threads and returns sweep.csv.
fn sweep_csv(sweep: &ksim_sweep::Sweep, out: &Path, threads: usize) -> String {
    let opts = SweepOptions {
        out: out.to_path_buf(),
        shard: Shard::WHOLE,
        event_log: false,
    };
    let m = pool(threads)
        .install(|| run_sweep(sweep, &opts, &()))
        .unwrap();
    let table = RunTable::from_manifests(&[(out.to_path_buf(), m)]).unwrap();
    write_sweep_outputs(&table, out).unwrap();
    std::fs::read_to_string(out.join("sweep.csv")).unwrap()
}

#[test]
fn real_trace_sweep_equals_its_runs_alone_and_is_thread_independent() {
    let sweep = load_sweep(&root().join("scenarios/openb-small-sweep.yaml")).unwrap();
    assert_eq!(sweep.len(), 9, "3 configurations × 3 seeds");
    let tmp = tempfile::tempdir().unwrap();
    let two = tmp.path().join("two");
    let csv2 = sweep_csv(&sweep, &two, 2);
    let csv1 = sweep_csv(&sweep, &tmp.path().join("one"), 1);
    assert_eq!(csv1, csv2, "sweep.csv depends on the thread count");
    for f in [
        "axis-scheduler.svg",
        "axis-seed.png",
        "latency_cdf.svg",
        "sweep.json",
    ] {
        assert!(two.join(f).exists(), "{f} missing");
    }

    // Each run made alone — the base scenario with its seed and configuration file set by hand,
    // planned and run on this thread — gives the same summary.json as in the sweep, and the
    // sweep's row is that summary's figures.
    let base_text = std::fs::read_to_string(root().join("scenarios/openb-small.yaml")).unwrap();
    let configs = [
        None,
        Some("schedulers/most-allocated.yaml"),
        Some("schedulers/most-allocated-gpu.yaml"),
    ];
    let mut expected = vec![];
    let alone = tmp.path().join("alone");
    for (ci, cfg) in configs.iter().enumerate() {
        for seed in 1..=3u64 {
            let mut s = ksim_trace::parse_scenario("openb-small.yaml", &base_text).unwrap();
            s.seed = seed;
            if let Some(f) = cfg {
                s.scheduler = Some(ksim_trace::scenario::SchedulerSpec {
                    config_file: Some(f.to_string()),
                    config: None,
                });
            }
            let plan = s
                .plan("openb-small.yaml", &root().join("scenarios"))
                .unwrap();
            let dir = alone.join(format!("{ci}-{seed}"));
            ksim_sweep::run_plan(plan, &dir, false, &mut |_| {}).unwrap();
            expected.push(dir);
        }
    }
    let table = RunTable::from_dirs(&expected).unwrap();
    let lines: Vec<&str> = csv2.lines().collect();
    assert_eq!(lines.len(), 10);
    let alone_csv = table.to_csv();
    let alone_lines: Vec<&str> = alone_csv.lines().collect();
    let ids: Vec<String> = sweep.points().into_iter().map(|p| p.id).collect();
    for (i, id) in ids.iter().enumerate() {
        let sweep_summary =
            std::fs::read_to_string(two.join("runs").join(id).join("summary.json")).unwrap();
        let alone_summary = std::fs::read_to_string(expected[i].join("summary.json")).unwrap();
        assert_eq!(sweep_summary, alone_summary, "run {id}");
        // Row = run id, two axis columns, then the same figures as the run alone.
        let sweep_fields: Vec<&str> = lines[i + 1].split(',').collect();
        let alone_fields: Vec<&str> = alone_lines[i + 1].split(',').collect();
        assert_eq!(sweep_fields[0], id);
        assert_eq!(&sweep_fields[3..], &alone_fields[1..], "row of {id}");
    }
    // The configurations matter on this trace (the bin-packing runs differ from the default).
    assert_ne!(
        &lines[1].split(',').skip(3).collect::<Vec<_>>(),
        &lines[4].split(',').skip(3).collect::<Vec<_>>()
    );

    // Shards merged = the unsharded sweep, byte for byte; a missing shard is an error.
    let shards = tmp.path().join("shards");
    let mut dirs = vec![];
    for i in 0..3 {
        let dir = shards.join(format!("s{i}"));
        let opts = SweepOptions {
            out: dir.clone(),
            shard: Shard { index: i, count: 3 },
            event_log: false,
        };
        pool(1).install(|| run_sweep(&sweep, &opts, &())).unwrap();
        dirs.push(dir);
    }
    let err = merge(&dirs[..2], &shards.join("partial"))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("3 of 9 runs of sweep \"openb-small-sweep\" are missing"),
        "{err}"
    );
    merge(&dirs, &shards.join("merged")).unwrap();
    let merged = std::fs::read_to_string(shards.join("merged/sweep.csv")).unwrap();
    assert_eq!(merged, csv2);
    assert_eq!(find_manifests(&dirs).unwrap().len(), 3);
}

#[test]
fn plan_finds_the_known_minimal_count() {
    // 100 pods of 1 cpu that never end, on 4-cpu nodes: 25 nodes hold them all, 24 hold 96.
    let path = root().join("scenarios/plan-synthetic.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let scenario = ksim_trace::parse_scenario("plan-synthetic.yaml", &text).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let opts = PlanOptions {
        pool: "workers".into(),
        slo: parse_slo("scheduled>=100%, p99<=30s").unwrap(),
        min: 1,
        max: 64,
        probes: 2,
        out: tmp.path().to_path_buf(),
        keep_runs: false,
    };
    let r = pool(2)
        .install(|| {
            plan_capacity(
                &scenario,
                "plan-synthetic.yaml",
                &root().join("scenarios"),
                &opts,
                &(),
            )
        })
        .unwrap();
    assert_eq!(r.answer, Some(25));
    assert!(r.violations.is_empty(), "{:?}", r.violations);
    let counts: Vec<u32> = r.points.iter().map(|p| p.count).collect();
    assert!(counts.contains(&24) && counts.contains(&25), "{counts:?}");
    for p in &r.points {
        assert_eq!(p.pass, p.count >= 25, "count {}", p.count);
        let share = p.summary.scheduled_share.unwrap();
        let want = (f64::from(p.count.min(25)) * 4.0 / 100.0).min(1.0);
        assert!(
            (share - want).abs() < 1e-9,
            "count {}: {share} vs {want}",
            p.count
        );
    }
    r.write_outputs(tmp.path(), "plan-synthetic.yaml", &opts)
        .unwrap();
    let csv = std::fs::read_to_string(tmp.path().join("plan.csv")).unwrap();
    assert!(
        csv.starts_with("count,meets_slo,pods,scheduled_share,"),
        "{csv}"
    );
    assert_eq!(csv.lines().count(), r.points.len() + 1);
    assert!(csv.contains("\n25,true,100,1,"), "{csv}");
    assert!(csv.contains("\n24,false,100,0.96,"), "{csv}");
    assert!(tmp.path().join("plan.svg").exists() && tmp.path().join("plan.png").exists());
    let table = r.terminal(&opts.slo);
    assert!(table.contains("25 ←"), "{table}");

    // Plain bisection reaches the same answer; the probes only change which counts are run.
    let opts1 = PlanOptions {
        probes: 1,
        out: tmp.path().join("p1"),
        ..opts.clone()
    };
    let r1 = plan_capacity(
        &scenario,
        "plan-synthetic.yaml",
        &root().join("scenarios"),
        &opts1,
        &(),
    )
    .unwrap();
    assert_eq!(r1.answer, Some(25));
}

#[test]
fn plan_reports_a_larger_count_doing_worse() {
    // Hand-made points: 3 meets the SLO, 4 does not.
    let text = std::fs::read_to_string(root().join("scenarios/plan-synthetic.yaml")).unwrap();
    let scenario = ksim_trace::parse_scenario("plan-synthetic.yaml", &text).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    // An SLO that only small clusters meet (scheduled share at most 10%): not monotone in the
    // assumed direction, so the check must flag it.
    let opts = PlanOptions {
        pool: "workers".into(),
        slo: parse_slo("scheduled<=10%").unwrap(),
        min: 1,
        max: 4,
        probes: 2,
        out: tmp.path().to_path_buf(),
        keep_runs: false,
    };
    let r = plan_capacity(
        &scenario,
        "plan-synthetic.yaml",
        &root().join("scenarios"),
        &opts,
        &(),
    )
    .unwrap();
    // 1 and 2 nodes hold 4% and 8%; 4 nodes hold 16%: the largest count fails.
    assert_eq!(r.answer, None);
    assert!(
        r.violations
            .iter()
            .any(|v| v.contains("met the SLO but the larger count 4 did not")),
        "{:?}",
        r.violations
    );
}

/// Records which worker thread finished each run.
struct Threads(std::sync::Mutex<Vec<std::thread::ThreadId>>);

impl ksim_sweep::SweepProgress for Threads {
    fn run_done(&self, _id: &str) {
        if let Ok(mut v) = self.0.lock() {
            v.push(std::thread::current().id());
        }
    }
}

#[test]
fn a_sweep_spreads_its_runs_over_the_pool_threads() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("seeds.yaml");
    std::fs::write(
        &file,
        format!(
            "scenario: {}\naxes: [{{seed: [1, 2, 3, 4, 5, 6]}}]\n",
            root().join("scenarios/plan-synthetic.yaml").display()
        ),
    )
    .unwrap();
    let sweep = load_sweep(&file).unwrap();
    let opts = SweepOptions {
        out: tmp.path().join("out"),
        shard: Shard::WHOLE,
        event_log: false,
    };
    let seen = Threads(std::sync::Mutex::new(Vec::new()));
    pool(2).install(|| run_sweep(&sweep, &opts, &seen)).unwrap();
    let mut ids = seen.0.into_inner().unwrap();
    assert_eq!(ids.len(), 6);
    ids.dedup();
    let mut distinct: Vec<std::thread::ThreadId> = Vec::new();
    for id in ids {
        if !distinct.contains(&id) {
            distinct.push(id);
        }
    }
    assert_eq!(distinct.len(), 2, "both worker threads ran runs");
}

/// Issue 19: latency SLOs count every pod that needed scheduling. With 1 node, 4 pods are
/// scheduled at once and 96 never are: the old p99 (scheduled pods only) was 0 s and the plan
/// answered 1. Now pods pending at the end count as waiting past the end, so `p99<=30s` and
/// `within(30s)>=99%` both need the 25 nodes that hold every pod. Probe runs keep only their
/// summary.json by default.
#[test]
fn plan_latency_slos_count_pending_pods() {
    let path = root().join("scenarios/plan-synthetic.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let scenario = ksim_trace::parse_scenario("plan-synthetic.yaml", &text).unwrap();
    for slo in ["within(30s)>=99%", "p99<=30s"] {
        let tmp = tempfile::tempdir().unwrap();
        let opts = PlanOptions {
            pool: "workers".into(),
            slo: parse_slo(slo).unwrap(),
            min: 1,
            max: 64,
            probes: 2,
            out: tmp.path().to_path_buf(),
            keep_runs: false,
        };
        let r = pool(2)
            .install(|| {
                plan_capacity(
                    &scenario,
                    "plan-synthetic.yaml",
                    &root().join("scenarios"),
                    &opts,
                    &(),
                )
            })
            .unwrap();
        assert_eq!(r.answer, Some(25), "{slo}");
        assert!(r.violations.is_empty(), "{slo}: {:?}", r.violations);
        let one = r.points.iter().find(|p| p.count == 1).unwrap();
        assert!(!one.pass, "{slo}: 1 node must fail");
        let table = r.terminal(&opts.slo);
        if slo.starts_with("p99") {
            assert!(table.contains("> "), "{table}");
        } else {
            assert!(table.contains("4.000% ✗"), "{table}");
        }
        // Only summary.json (and the completion marker) stay in each probe's folder.
        for p in &r.points {
            let mut names: Vec<String> = std::fs::read_dir(&p.dir)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            assert_eq!(names, ["ksim-complete.json", "summary.json"], "{slo}");
        }
        r.write_outputs(tmp.path(), "plan-synthetic.yaml", &opts)
            .unwrap();
        let json = std::fs::read_to_string(tmp.path().join("plan.json")).unwrap();
        assert!(json.contains("\"answer\": 25"), "{json}");
    }
}

#[test]
fn slo_forms_and_their_errors() {
    let c = parse_slo("within(30s)>=99%, pending_end<=3, scheduled>=99%, p99<=30s").unwrap();
    assert_eq!(c.len(), 4);
    assert_eq!(c[0].figure(), "within_30s_share");
    assert!((c[0].threshold - 0.99).abs() < 1e-12);
    assert_eq!(c[1].figure(), "pending_at_end");
    assert_eq!(c[1].threshold, 3.0);
    assert_eq!(c[2].figure(), "scheduled_of_needed_share");
    assert_eq!(c[3].figure(), "latency_all_p99_s");
    for (s, want) in [
        (
            "within(30s>=99%",
            "--slo \"within(30s>=99%\": expected within(DURATION)>=SHARE, e.g. within(30s)>=99%",
        ),
        (
            "within(soon)>=99%",
            "--slo \"within(soon)>=99%\": within(soon): \"soon\" is not a duration",
        ),
        (
            "within(30s)>=99",
            "--slo \"within(30s)>=99\": 99 is more than 1: write a percentage with %, e.g. 99%",
        ),
        (
            "pending_end<=few",
            "--slo \"pending_end<=few\": \"few\" is not a number",
        ),
    ] {
        let e = parse_slo(s).unwrap_err().to_string();
        assert!(e.starts_with(want), "{s}: {e}");
    }
}

/// `controllerScale` sweeps the workload controllers' replicas: the shipped controllers
/// scenario at ×1, ×1.5 and ×2 creates more pods at each step, and at ×2 the `web`
/// Deployment's desired count is twice the scenario's (its own ×1.5 of the trace's 120: 180 →
/// 360).
#[test]
fn a_controller_scale_sweep_gives_more_pods() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep_file = tmp.path().join("cs.yaml");
    std::fs::write(
        &sweep_file,
        format!(
            "name: cs\nscenario: {:?}\naxes:\n  - controllerScale: [1.0, 1.5, 2.0]\n",
            root().join("scenarios/controllers-scaled.yaml")
        ),
    )
    .unwrap();
    let sweep = load_sweep(&sweep_file).unwrap();
    assert_eq!(sweep.axes[0].name, "controller_scale");
    let out = tmp.path().join("out");
    let csv = sweep_csv(&sweep, &out, 2);
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (scale, pods) = (col("controller_scale"), col("pods"));
    let rows: Vec<(String, u64)> = lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[scale].to_string(), f[pods].parse().unwrap())
        })
        .collect();
    assert_eq!(rows.len(), 3, "{csv}");
    assert_eq!(
        rows.iter().map(|(s, _)| s.as_str()).collect::<Vec<_>>(),
        ["1", "1.5", "2"]
    );
    assert!(
        rows[0].1 < rows[1].1 && rows[1].1 < rows[2].1,
        "pods do not grow with the scale: {rows:?}"
    );
    // Each run's controllers.csv: web's desired count at the end.
    let web_desired = |run: &str| -> i64 {
        let text =
            std::fs::read_to_string(out.join("runs").join(run).join("controllers.csv")).unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with("Deployment,default,web,"))
            .unwrap();
        line.split(',').nth(3).unwrap().parse().unwrap()
    };
    assert_eq!(web_desired("000-1"), 180);
    assert_eq!(web_desired("002-2"), 360);
}
