//! ksim-report's tests: golden files of a small hand-made run, determinism, conservation, the
//! HTML page, event-log round trips and comparisons.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use ksim_engine::record::{AttemptResult, Observer, Outcome, Record};
use ksim_engine::time::SimTime;
use ksim_report::{
    render_event_log, summary_table, Comparison, EventLogReader, EventLogWriter, Recorder,
    ReportError, ReportOptions, Summary, PODS_HEADER,
};

const GI: i64 = 1 << 30;
const GPU_TAINT_MSG: &str = "0/3 nodes are available: 2 Insufficient cpu, 1 node(s) had untolerated taint {nvidia.com/gpu: present}. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.";

fn out_dir(name: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "ksim-report-{}-{}-{}",
        name,
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = fs::remove_dir_all(&d);
    d
}

fn t(secs: f64) -> SimTime {
    SimTime((secs * 1e6).round() as i64)
}

fn amounts(a: &[(&str, i64)]) -> Vec<(String, i64)> {
    let mut v: Vec<(String, i64)> = a.iter().map(|(n, v)| (n.to_string(), *v)).collect();
    v.sort();
    v
}

fn node_added(at: f64, node: &str, pool: &str, alloc: &[(&str, i64)]) -> Record {
    Record::NodeAdded {
        at: t(at),
        node: node.into(),
        pool: pool.into(),
        allocatable: amounts(alloc),
    }
}

fn created(at: f64, pod: &str, priority: i32, req: &[(&str, i64)]) -> Record {
    let (ns, name) = pod.split_once('/').unwrap();
    Record::PodCreated {
        at: t(at),
        namespace: ns.into(),
        name: name.into(),
        priority,
        requests: amounts(req),
        owner_kind: String::new(),
        owner_name: String::new(),
    }
}

#[allow(clippy::too_many_arguments)]
fn attempt(
    at: f64,
    pod: &str,
    n: u32,
    result: AttemptResult,
    node: &str,
    nominated: &str,
    message: &str,
    feasible: u32,
    evaluated: u32,
) -> Record {
    let (ns, name) = pod.split_once('/').unwrap();
    Record::Attempt {
        at: t(at),
        namespace: ns.into(),
        name: name.into(),
        attempt: n,
        result,
        node: node.into(),
        nominated_node: nominated.into(),
        message: message.into(),
        feasible_nodes: feasible,
        evaluated_nodes: evaluated,
    }
}

fn scheduled(at: f64, pod: &str, n: u32, node: &str, nodes: u32) -> Record {
    attempt(
        at,
        pod,
        n,
        AttemptResult::Scheduled,
        node,
        "",
        "",
        nodes,
        nodes,
    )
}

fn unschedulable(at: f64, pod: &str, n: u32, nominated: &str, msg: &str, nodes: u32) -> Record {
    attempt(
        at,
        pod,
        n,
        AttemptResult::Unschedulable,
        "",
        nominated,
        msg,
        0,
        nodes,
    )
}

fn bound(at: f64, pod: &str, node: &str) -> Record {
    let (ns, name) = pod.split_once('/').unwrap();
    Record::PodBound {
        at: t(at),
        namespace: ns.into(),
        name: name.into(),
        node: node.into(),
    }
}

fn ended(at: f64, pod: &str, outcome: Outcome, by: &str) -> Record {
    let (ns, name) = pod.split_once('/').unwrap();
    Record::PodEnded {
        at: t(at),
        namespace: ns.into(),
        name: name.into(),
        outcome,
        preempted_by: by.into(),
    }
}

/// A small run touching every record kind: two pools (one with GPUs and a taint), retries,
/// a deletion while pending, a preemption and the victim's re-creation, a cordon, a node added
/// and a node removed with its pod, pods still pending at the horizon.
fn fixture() -> Vec<Record> {
    use AttemptResult::*;
    let node = |cpu, mem| vec![("cpu", cpu), ("memory", mem), ("pods", 110)];
    let batch_msg = "0/4 nodes are available: 1 node(s) had untolerated taint {nvidia.com/gpu: present}, 1 node(s) were unschedulable, 2 Insufficient cpu. preemption: 0/4 nodes are available: 4 No preemption victims found for incoming pod.";
    vec![
        node_added(0.0, "n1", "general", &node(4000, 8 * GI)),
        node_added(0.0, "n2", "general", &node(4000, 8 * GI)),
        node_added(
            0.0,
            "g1",
            "gpu",
            &[
                ("cpu", 8000),
                ("memory", 32 * GI),
                ("nvidia.com/gpu", 2),
                ("pods", 110),
            ],
        ),
        created(1.0, "default/web-1", 0, &[("cpu", 1000), ("memory", GI)]),
        scheduled(1.0005, "default/web-1", 1, "n1", 3),
        bound(1.5, "default/web-1", "n1"),
        created(2.0, "default/big", 0, &[("cpu", 6000), ("memory", 2 * GI)]),
        unschedulable(2.001, "default/big", 1, "", GPU_TAINT_MSG, 3),
        created(
            3.0,
            "ml/train-0",
            100,
            &[("cpu", 2000), ("memory", 4 * GI), ("nvidia.com/gpu", 1)],
        ),
        scheduled(3.001, "ml/train-0", 1, "g1", 1),
        bound(3.5, "ml/train-0", "g1"),
        created(
            4.0,
            "default/batch-1",
            -10,
            &[("cpu", 2500), ("memory", GI)],
        ),
        scheduled(4.001, "default/batch-1", 1, "n2", 2),
        bound(4.4, "default/batch-1", "n2"),
        // A controller's pod: pods.csv names its owner.
        match created(5.0, "default/web-2", 0, &[("cpu", 1000), ("memory", GI)]) {
            Record::PodCreated {
                at,
                namespace,
                name,
                priority,
                requests,
                ..
            } => Record::PodCreated {
                at,
                namespace,
                name,
                priority,
                requests,
                owner_kind: "ReplicaSet".into(),
                owner_name: "web-7f9c4d8b5".into(),
            },
            other => other,
        },
        scheduled(5.001, "default/web-2", 1, "n1", 2),
        bound(5.3, "default/web-2", "n1"),
        unschedulable(12.001, "default/big", 2, "", GPU_TAINT_MSG, 3),
        created(20.0, "default/tmp", 0, &[("cpu", 500)]),
        unschedulable(
            20.001,
            "default/tmp",
            1,
            "",
            "0/3 nodes are available: 3 node(s) didn't match Node selector.",
            3,
        ),
        ended(25.0, "default/tmp", Outcome::Deleted, ""),
        created(30.0, "prod/api", 1000, &[("cpu", 3000), ("memory", 2 * GI)]),
        unschedulable(30.001, "prod/api", 1, "n2", GPU_TAINT_MSG, 3),
        ended(30.002, "default/batch-1", Outcome::Preempted, "prod/api"),
        scheduled(31.001, "prod/api", 2, "n2", 1),
        bound(31.2, "prod/api", "n2"),
        created(
            32.0,
            "default/batch-1",
            -10,
            &[("cpu", 2500), ("memory", GI)],
        ),
        unschedulable(32.001, "default/batch-1", 1, "", GPU_TAINT_MSG, 3),
        ended(40.0, "default/web-1", Outcome::Succeeded, ""),
        Record::NodeUpdated {
            at: t(50.0),
            node: "n1".into(),
            allocatable: amounts(&node(4000, 8 * GI)),
            unschedulable: true,
        },
        node_added(60.0, "n3", "general", &node(8000, 16 * GI)),
        scheduled(60.01, "default/big", 3, "n3", 1),
        bound(60.5, "default/big", "n3"),
        attempt(
            61.001,
            "default/batch-1",
            2,
            Unschedulable,
            "",
            "",
            batch_msg,
            0,
            4,
        ),
        Record::NodeRemoved {
            at: t(70.0),
            node: "g1".into(),
        },
        ended(70.0, "ml/train-0", Outcome::Failed, ""),
        created(80.0, "ml/eval", 0, &[("cpu", 100)]),
        created(85.0, "ml/eval-2", 0, &[("cpu", 1500), ("memory", GI)]),
        attempt(
            85.001,
            "ml/eval-2",
            1,
            Error,
            "",
            "",
            "running PreBind plugin \"VolumeBinding\": binding volumes: timed out",
            0,
            3,
        ),
        Record::Controller {
            at: t(100.0),
            kind: "Deployment".into(),
            namespace: "default".into(),
            name: "web".into(),
            desired: 2,
            created: 1,
            live: 1,
            running: 1,
            time_to_all_running: None,
            max_unavailable: 0,
            replaced: 0,
            succeeded: 0,
            failed: 0,
            completed_at: None,
            condition: None,
        },
        Record::Controller {
            at: t(100.0),
            kind: "Job".into(),
            namespace: "ml".into(),
            name: "train".into(),
            desired: 1,
            created: 1,
            live: 0,
            running: 0,
            time_to_all_running: None,
            max_unavailable: 0,
            replaced: 1,
            succeeded: 0,
            failed: 1,
            completed_at: None,
            condition: Some(ksim_engine::JobCondition {
                type_: "Failed".into(),
                reason: "BackoffLimitExceeded".into(),
                at: t(90.0),
            }),
        },
        Record::RunEnded {
            at: t(100.0),
            stalled: None,
            unserved: Vec::new(),
        },
    ]
}

/// The golden test uses a 10-step grid so the snapshot stays readable.
fn golden_options() -> ReportOptions {
    ReportOptions { max_steps: 10 }
}

fn run_into(records: &[Record], dir: &Path, options: ReportOptions) -> Summary {
    let mut rec = Recorder::to_dir(dir).unwrap().with_options(options);
    for r in records {
        rec.record(r);
    }
    rec.write_outputs(dir).unwrap()
}

fn read(dir: &Path, file: &str) -> String {
    fs::read_to_string(dir.join(file)).unwrap()
}

const DETERMINISTIC: [&str; 5] = [
    "pods.csv",
    "controllers.csv",
    "placements.csv",
    "utilization.csv",
    "summary.json",
];

#[test]
fn golden_outputs_of_a_small_run() {
    let dir = out_dir("golden");
    run_into(&fixture(), &dir, golden_options());
    insta::assert_snapshot!("pods_csv", read(&dir, "pods.csv"));
    insta::assert_snapshot!("controllers_csv", read(&dir, "controllers.csv"));
    insta::assert_snapshot!("placements_csv", read(&dir, "placements.csv"));
    insta::assert_snapshot!("utilization_csv", read(&dir, "utilization.csv"));
    insta::assert_snapshot!("summary_json", read(&dir, "summary.json"));
    let s = Summary::read(&dir).unwrap();
    insta::assert_snapshot!("summary_table", summary_table(&s));
}

/// A cluster dump: 2 of its 5 pods arrived already running (bound at t=0 without a scheduling
/// attempt), 1 was scheduled, 2 are still pending at the end. The summary counts the running
/// ones apart ("2 already running, 1 of 3 scheduled") and the all-pods latency percentiles
/// fall on the censored pending pods.
#[test]
fn golden_summary_of_a_dump_with_running_pods() {
    let node = |cpu: i64| [("cpu", cpu), ("memory", 8 * GI), ("pods", 110)];
    let records = vec![
        node_added(0.0, "n1", "general", &node(2000)),
        created(0.0, "default/old-0", 0, &[("cpu", 500)]),
        bound(0.0, "default/old-0", "n1"),
        created(0.0, "default/old-1", 0, &[("cpu", 500)]),
        bound(0.0, "default/old-1", "n1"),
        created(0.0, "default/new-0", 0, &[("cpu", 500)]),
        scheduled(2.0, "default/new-0", 1, "n1", 1),
        bound(2.0, "default/new-0", "n1"),
        created(0.0, "default/big-0", 0, &[("cpu", 4000)]),
        unschedulable(
            0.001,
            "default/big-0",
            1,
            "",
            "0/1 nodes are available: 1 Insufficient cpu.",
            1,
        ),
        created(5.0, "default/big-1", 0, &[("cpu", 4000)]),
        unschedulable(
            5.001,
            "default/big-1",
            1,
            "",
            "0/1 nodes are available: 1 Insufficient cpu.",
            1,
        ),
        Record::RunEnded {
            at: t(60.0),
            stalled: None,
            unserved: Vec::new(),
        },
    ];
    let dir = out_dir("golden-dump");
    let s = run_into(&records, &dir, golden_options());
    assert_eq!(
        (s.already_bound, s.needed_scheduling, s.scheduled_of_needed),
        (2, 3, 1)
    );
    let l = s.latency_all_s.as_ref().unwrap();
    assert_eq!((l.count, l.censored), (3, 2));
    assert_eq!((l.p50, l.p50_censored), (Some(55.0), true));
    insta::assert_snapshot!("dump_summary_json", read(&dir, "summary.json"));
    let table = summary_table(&Summary::read(&dir).unwrap());
    assert!(
        table.contains("2 already running, 1 of 3 scheduled"),
        "{table}"
    );
    insta::assert_snapshot!("dump_summary_table", table);
    // The page says the same: running pods apart, not "1 of 5 scheduled".
    let html = read(&dir, "report.html");
    assert!(
        html.contains("2 already running, 1 of 3 scheduled"),
        "Scheduled card"
    );
    assert!(!html.contains("1 of 5 pods"));
}

/// A failure names the pool whose nodes could hold the pod when empty but were too full; a
/// pool whose nodes are too small, and failures for other reasons, name none.
#[test]
fn failure_share_names_the_pool_whose_capacity_was_lacking() {
    let node = |cpu: i64| [("cpu", cpu), ("memory", 8 * GI), ("pods", 110)];
    let msg = "0/2 nodes are available: 2 Insufficient cpu.";
    let records = vec![
        node_added(0.0, "s1", "small", &node(1000)),
        node_added(0.0, "b1", "big", &node(4000)),
        created(0.0, "default/filler", 0, &[("cpu", 3500)]),
        scheduled(0.0, "default/filler", 1, "b1", 1),
        bound(0.0, "default/filler", "b1"),
        created(1.0, "default/mid", 0, &[("cpu", 2000)]),
        unschedulable(1.0, "default/mid", 1, "", msg, 2),
        created(2.0, "default/picky", 0, &[("cpu", 100)]),
        unschedulable(
            2.0,
            "default/picky",
            1,
            "",
            "0/2 nodes are available: 2 node(s) didn't match Node selector.",
            2,
        ),
        Record::RunEnded {
            at: t(10.0),
            stalled: None,
            unserved: Vec::new(),
        },
    ];
    let dir = out_dir("failure-share");
    let s = run_into(&records, &dir, golden_options());
    let pools = &s.packing.as_ref().unwrap().pools;
    assert_eq!(
        (pools["big"].failures_naming, pools["big"].failure_share),
        (1, Some(0.5))
    );
    assert_eq!(
        (pools["small"].failures_naming, pools["small"].failure_share),
        (0, Some(0.0))
    );
    assert!(read(&dir, "report.html").contains("failures naming the pool"));
}

/// The latencies SLOs read are the same whether taken from the records or from pods.csv.
#[test]
fn latency_dist_from_records_equals_pods_csv() {
    let dir = out_dir("latency-dist");
    let mut rec = Recorder::to_dir(&dir).unwrap();
    for r in random_run(7, 400) {
        rec.record(&r);
    }
    let from_records = rec.latency_dist();
    let s = rec.write_outputs(&dir).unwrap();
    let from_csv = ksim_report::LatencyDist::from_pods_csv(&dir, s.horizon_s).unwrap();
    assert_eq!(from_records, from_csv);
    assert_eq!(from_csv.len() as u64, s.needed_scheduling);
    // The stored within shares are the distribution's.
    let stored = s.latency_all_s.as_ref().unwrap().within["30"];
    assert_eq!(from_csv.within_share(30.0), Some(stored));
    assert_eq!(
        from_csv.percentile(99).map(|m| (m.secs, m.censored)),
        s.latency_all_percentile(99).map(|m| (m.secs, m.censored))
    );
}

/// Many pools: the per-pool utilization becomes small multiples, one panel per pool.
#[test]
fn many_pools_get_small_multiples() {
    let node = [("cpu", 4000), ("memory", 8 * GI), ("pods", 110)];
    let mut records = Vec::new();
    for p in 0..6 {
        records.push(node_added(
            0.0,
            &format!("n{p}"),
            &format!("pool{p}"),
            &node,
        ));
        let pod = format!("default/w{p}");
        records.push(created(1.0, &pod, 0, &[("cpu", 1000 * (p % 4 + 1))]));
        records.push(scheduled(1.0, &pod, 1, &format!("n{p}"), 6));
        records.push(bound(1.0, &pod, &format!("n{p}")));
    }
    records.push(Record::RunEnded {
        at: t(60.0),
        stalled: None,
        unserved: Vec::new(),
    });
    let dir = out_dir("small-multiples");
    run_into(&records, &dir, golden_options());
    let svg = read(&dir, "pool_utilization.svg");
    assert!(svg.contains("6 pools"), "grid title");
    for p in 0..6 {
        assert!(
            svg.contains(&format!("pool pool{p}\n")) || svg.contains(&format!("pool pool{p}<")),
            "panel of pool{p}"
        );
    }
    // Few pools: one chart, one line per pool and resource.
    let dir = out_dir("one-chart");
    run_into(&fixture(), &dir, golden_options());
    let svg = read(&dir, "pool_utilization.svg");
    assert!(svg.contains("general cpu") && svg.contains("gpu memory"));
    assert!(!svg.contains(" pools, "));
}

/// An slo.json in the run directory is marked on the latency CDF, with whether it is met.
#[test]
fn slo_is_marked_on_the_latency_cdf() {
    let dir = out_dir("slo-cdf");
    fs::create_dir_all(&dir).unwrap();
    let slo = ksim_report::SloFile {
        conditions: vec!["within(30s)>=99%".into(), "pending_end<=0".into()],
        marks: vec![ksim_report::SloMark {
            condition: "within(30s)>=99%".into(),
            within_s: Some(30.0),
            share: 0.99,
        }],
    };
    fs::write(dir.join(ksim_report::SLO_FILE), slo.to_json()).unwrap();
    run_into(&fixture(), &dir, golden_options());
    let svg = read(&dir, "latency_cdf.svg");
    // The fixture leaves pods pending at the end: the SLO is not met, and p99 falls on them.
    assert!(svg.contains("SLO within(30s)&gt;=99% (NOT met)"), "{svg}");
    assert!(svg.contains("pending at the end"));
    assert!(svg.contains("p50 = "));
    assert_eq!(
        ksim_report::SloFile::read_dir(&dir).unwrap(),
        Some(slo),
        "slo.json kept"
    );
}

#[test]
fn same_records_give_the_same_bytes() {
    let records = fixture();
    let a = out_dir("det-a");
    let b = out_dir("det-b");
    run_into(&records, &a, ReportOptions::default());
    // The second run buffers placements in memory instead of streaming them.
    let mut rec = Recorder::in_memory();
    for r in &records {
        rec.record(r);
    }
    rec.write_outputs(&b).unwrap();
    for f in DETERMINISTIC {
        assert_eq!(read(&a, f), read(&b, f), "{f} differs between two runs");
    }
    // The default grid: at most 2,001 samples.
    let samples = read(&a, "utilization.csv")
        .lines()
        .skip(1)
        .filter(|l| l.split(',').nth(1) == Some("*") && l.split(',').nth(2) == Some("cpu"))
        .count();
    assert_eq!(samples, 2001, "100 s at 50 ms steps");
}

#[test]
fn event_log_round_trip_re_renders_the_same_report() {
    let records = fixture();
    let dir = out_dir("log");
    fs::create_dir_all(&dir).unwrap();
    let log = dir.join("events.jsonl");
    let mut w = EventLogWriter::create(&log).unwrap();
    for r in &records {
        w.record(r);
    }
    assert_eq!(w.records(), records.len() as u64);
    w.finish().unwrap();

    let back: Vec<Record> = EventLogReader::open(&log)
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(back, records);

    let direct = out_dir("log-direct");
    run_into(&records, &direct, ReportOptions::default());
    let rendered = dir.join("report");
    render_event_log(&log, &rendered).unwrap();
    for f in DETERMINISTIC {
        assert_eq!(read(&direct, f), read(&rendered, f), "{f}");
    }
}

#[test]
fn a_bad_event_log_line_is_named() {
    let text = "{\"type\":\"RunEnded\",\"at\":5}\n\n{\"type\":\"PodCreated\",\"at\":1}\n";
    let mut it = EventLogReader::new(text.as_bytes(), "run.jsonl");
    assert!(matches!(it.next(), Some(Ok(Record::RunEnded { .. }))));
    match it.next() {
        Some(Err(ReportError::EventLog { line, .. })) => assert_eq!(line, 3),
        other => panic!("expected an error on line 3, got {other:?}"),
    }
    let err = EventLogReader::new(text.as_bytes(), "run.jsonl")
        .nth(1)
        .unwrap()
        .unwrap_err();
    assert!(err.to_string().starts_with("run.jsonl:3: "), "{err}");
}

/// Splits a CSV text into rows (the golden CSVs have no quoted newlines).
fn csv_rows(text: &str) -> Vec<BTreeMap<String, String>> {
    let mut r = csv::Reader::from_reader(text.as_bytes());
    let header: Vec<String> = r.headers().unwrap().iter().map(String::from).collect();
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            header
                .iter()
                .cloned()
                .zip(rec.iter().map(String::from))
                .collect()
        })
        .collect()
}

/// A larger pseudo-random run (fixed LCG, no RNG crate): pods arrive, some are scheduled after
/// retries, some end, some are deleted pending, some are preempted and re-created.
fn random_run(seed: u64, pods: usize) -> Vec<Record> {
    let mut x = seed;
    let mut next = move |m: u64| {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) % m
    };
    let mut recs = vec![
        node_added(0.0, "a", "p1", &[("cpu", 16000), ("memory", 64 * GI)]),
        node_added(0.0, "b", "p2", &[("cpu", 16000), ("memory", 64 * GI)]),
    ];
    let mut now = 0.0;
    for i in 0..pods {
        now += next(1000) as f64 / 100.0;
        let name = format!("ns{}/pod-{}", i % 3, i % 40);
        let cpu = 100 * (1 + next(20) as i64);
        recs.push(created(now, &name, 0, &[("cpu", cpu), ("memory", GI)]));
        let tries = next(4) as u32;
        for k in 1..=tries {
            recs.push(unschedulable(
                now + k as f64 * 0.01,
                &name,
                k,
                "",
                GPU_TAINT_MSG,
                2,
            ));
        }
        match next(5) {
            0 => {
                recs.push(ended(now + 0.5, &name, Outcome::Deleted, ""));
            }
            1 => {} // still pending (until a re-creation under the same name)
            r => {
                let node = if r % 2 == 0 { "a" } else { "b" };
                recs.push(scheduled(now + 0.1, &name, tries + 1, node, 2));
                recs.push(bound(now + 0.2, &name, node));
                if r == 4 {
                    recs.push(ended(now + 3.0, &name, Outcome::Succeeded, ""));
                } else if r == 3 {
                    recs.push(ended(now + 2.0, &name, Outcome::Preempted, "x/y"));
                }
            }
        }
        now += 3.5;
    }
    recs.sort_by_key(|r| r.at());
    recs.push(Record::RunEnded {
        at: t(now + 10.0),
        stalled: None,
        unserved: Vec::new(),
    });
    recs
}

#[test]
fn conservation_every_created_pod_is_one_row_and_counts_agree() {
    for (seed, records) in [
        (0, fixture()),
        (1, random_run(1, 300)),
        (2, random_run(2, 50)),
    ] {
        let dir = out_dir("conservation");
        let s = run_into(&records, &dir, ReportOptions::default());
        let pods_text = read(&dir, "pods.csv");
        assert_eq!(
            pods_text.lines().next().unwrap(),
            PODS_HEADER.join(","),
            "pods.csv header"
        );
        let rows = csv_rows(&pods_text);

        // Every PodCreated is exactly one row, in creation order.
        let created: Vec<(String, String, String)> = records
            .iter()
            .filter_map(|r| match r {
                Record::PodCreated {
                    at,
                    namespace,
                    name,
                    ..
                } => Some((namespace.clone(), name.clone(), at.secs_string())),
                _ => None,
            })
            .collect();
        let got: Vec<(String, String, String)> = rows
            .iter()
            .map(|r| {
                (
                    r["namespace"].clone(),
                    r["name"].clone(),
                    r["created_s"].clone(),
                )
            })
            .collect();
        assert_eq!(got, created, "seed {seed}");

        // The summary's counts are the pods.csv counts.
        let count = |f: &dyn Fn(&BTreeMap<String, String>) -> bool| {
            rows.iter().filter(|r| f(r)).count() as u64
        };
        let p = &s.pods;
        assert_eq!(p.created, rows.len() as u64);
        assert_eq!(p.scheduled, count(&|r| !r["scheduled_s"].is_empty()));
        assert_eq!(p.bound, count(&|r| !r["bound_s"].is_empty()));
        assert_eq!(p.pending_at_end, count(&|r| r["outcome"] == "pending"));
        let o = &p.by_outcome;
        for (name, n) in [
            ("running", o.running),
            ("succeeded", o.succeeded),
            ("deleted", o.deleted),
            ("pending", o.pending),
            ("preempted", o.preempted),
            ("failed", o.failed),
        ] {
            assert_eq!(n, count(&|r| r["outcome"] == name), "seed {seed} {name}");
        }
        assert_eq!(o.total(), p.created);
        assert_eq!(s.latency_s.count, p.scheduled);
        let attempts: u64 = rows
            .iter()
            .map(|r| r["attempts"].parse::<u64>().unwrap())
            .sum();
        assert_eq!(attempts, s.attempts.total);
        let placements = read(&dir, "placements.csv").lines().count() as u64 - 1;
        assert_eq!(placements, s.attempts.total);
        let with_reason = count(&|r| !r["last_reason"].is_empty());
        assert_eq!(
            s.unschedulable_reasons.iter().map(|r| r.pods).sum::<u64>(),
            with_reason
        );
        assert_eq!(s.unmatched_records, 0, "seed {seed}");

        // The time series ends with the pods.csv state.
        let util = csv_rows(&read(&dir, "utilization.csv"));
        let last = util
            .iter()
            .rev()
            .find(|r| r["pool"] == "*" && r["resource"] == "cpu")
            .unwrap();
        assert_eq!(last["pending_pods"], p.pending_at_end.to_string());
        assert_eq!(last["running_pods"], o.running.to_string());
    }
}

#[test]
fn records_about_unknown_pods_are_counted_not_dropped() {
    let records = vec![
        node_added(0.0, "n1", "", &[("cpu", 1000)]),
        scheduled(1.0, "x/ghost", 1, "n1", 1),
        bound(1.1, "x/ghost", "n1"),
        ended(2.0, "x/ghost", Outcome::Succeeded, ""),
        Record::NodeRemoved {
            at: t(3.0),
            node: "nope".into(),
        },
        Record::RunEnded {
            at: t(4.0),
            stalled: None,
            unserved: Vec::new(),
        },
    ];
    let dir = out_dir("unmatched");
    let s = run_into(&records, &dir, ReportOptions::default());
    assert_eq!(s.unmatched_records, 4);
    assert_eq!(s.pods.created, 0);
    // The attempt itself is still listed.
    assert_eq!(read(&dir, "placements.csv").lines().count(), 2);
}

#[test]
fn an_empty_run_still_renders() {
    let dir = out_dir("empty");
    let s = run_into(&[], &dir, ReportOptions::default());
    assert_eq!(s.pods.created, 0);
    assert_eq!(s.scheduled_share, None);
    assert!(read(&dir, "report.html").contains("<svg"));
}

#[test]
fn html_is_self_contained_with_summary_plots_and_tables() {
    let dir = out_dir("html");
    let s = run_into(&fixture(), &dir, ReportOptions::default());
    let html = read(&dir, "report.html");
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert_eq!(html.matches("<svg").count(), 6, "six inline plots");
    for id in [
        "id=\"summary\"",
        "id=\"plot-utilization\"",
        "id=\"plot-pool-utilization\"",
        "id=\"plot-nodes-in-use\"",
        "id=\"plot-running\"",
        "Nodes in use at end",
        "Last failure messages, grouped by their reasons",
        "id=\"plot-pending\"",
        "id=\"plot-latency\"",
        "id=\"reasons\"",
        "id=\"pending\"",
    ] {
        assert!(html.contains(id), "{id}");
    }
    // Headline figures, the reasons and the pending pods are on the page.
    let share = format!("{:.1}%", s.scheduled_share.unwrap() * 100.0);
    assert!(html.contains(&share), "scheduled share {share}");
    assert!(html.contains("Insufficient cpu"));
    assert!(html.contains("default/batch-1"));
    assert!(html.contains("ml/eval-2"));
    // Escaped, not injected.
    assert!(html.contains("&quot;VolumeBinding&quot;"));
    // Nothing fetched from elsewhere.
    for external in ["src=", "href=\"http", "<link", "url("] {
        assert!(!html.contains(external), "{external}");
    }
    // Plots are files too, and the PNGs are real images with drawn text.
    for name in ["utilization", "pending", "latency_cdf"] {
        let png = fs::read(dir.join(format!("{name}.png"))).unwrap();
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "{name}.png");
        assert!(png.len() > 10_000, "{name}.png is {} bytes", png.len());
        assert!(read(&dir, &format!("{name}.svg")).contains("<text"));
    }
}

#[test]
fn summary_reads_back_and_compares() {
    let a = out_dir("cmp-a");
    let b = out_dir("cmp-b");
    let sa = run_into(&fixture(), &a, ReportOptions::default());
    let sb = run_into(&random_run(7, 80), &b, ReportOptions::default());
    assert_eq!(Summary::read(&a).unwrap(), sa);
    assert_eq!(Summary::read(&a.join("summary.json")).unwrap(), sa);

    let cmp = Comparison::from_paths(&[a.clone(), b.clone()]).unwrap();
    let table = cmp.table();
    assert!(table.contains("scheduled_share"));
    assert!(table.contains(" *"));
    let csv = cmp.to_csv();
    assert!(csv.starts_with("run,metric,value,best\n"));
    let rows = csv_rows(&csv);
    assert_eq!(rows.len(), 2 * ksim_report::compare::METRICS.len());
    // Exactly the better scheduled share is marked.
    let share: Vec<&BTreeMap<String, String>> = rows
        .iter()
        .filter(|r| r["metric"] == "scheduled_share")
        .collect();
    let best_is_a = sa.scheduled_share > sb.scheduled_share;
    assert_eq!(share[0]["best"], best_is_a.to_string());
    assert_eq!(share[1]["best"], (!best_is_a).to_string());
    // The pod count is context: never marked.
    assert!(rows
        .iter()
        .filter(|r| r["metric"] == "pods")
        .all(|r| r["best"] == "false"));

    match Summary::read(&out_dir("missing")) {
        Err(ReportError::Io { .. }) => {}
        other => panic!("expected an I/O error, got {other:?}"),
    }
}

/// Scale check, run by hand (heavy in a debug build): `cargo test -p ksim-report --release
/// --test report scale -- --ignored --nocapture`. 200,000 pods, ~500,000 attempts: every pod
/// is one pods.csv row, every attempt one placements.csv row, the summary counts them all, and
/// report.html stays within its embedding caps (timings are printed, not asserted).
#[test]
#[ignore]
fn scale_two_hundred_thousand_pods() {
    let start = std::time::Instant::now();
    let records = random_run(42, 200_000);
    let attempts = records
        .iter()
        .filter(|r| matches!(r, Record::Attempt { .. }))
        .count();
    let made = start.elapsed();
    let dir = out_dir("scale");
    let start = std::time::Instant::now();
    let mut rec = Recorder::to_dir(&dir).unwrap();
    for r in &records {
        rec.record(r);
    }
    let recorded = start.elapsed();
    let s = rec.write_outputs(&dir).unwrap();
    let written = start.elapsed() - recorded;
    eprintln!(
        "{} records ({} pods, {attempts} attempts) made in {made:?}; recorded in {recorded:?}; outputs written in {written:?}; scheduled {:?}",
        records.len(),
        s.pods.created,
        s.scheduled_share
    );
    assert_eq!(s.pods.created, 200_000);
    assert_eq!(s.attempts.total, attempts as u64);
    assert!(attempts > 200_000, "{attempts}");
    let lines = |f: &str| read(&dir, f).lines().count() - 1;
    assert_eq!(lines("pods.csv"), 200_000);
    assert_eq!(lines("placements.csv"), attempts);
    let o = &s.pods.by_outcome;
    assert_eq!(
        o.running
            + o.succeeded
            + o.deleted
            + o.pending
            + o.preempted
            + o.failed
            + o.stalled
            + o.unserved,
        200_000
    );
    let html = fs::metadata(dir.join("report.html")).unwrap().len();
    assert!(html > 0 && html < 64 << 20, "report.html is {html} bytes");
}

/// Sweeps run simulations on several threads, so the recorder must be `Send`.
#[test]
fn recorder_and_log_writer_are_send() {
    fn send<T: Send>() {}
    send::<Recorder>();
    send::<EventLogWriter<std::io::BufWriter<fs::File>>>();
    send::<Summary>();
}

#[test]
fn streamed_placements_are_copied_when_writing_elsewhere() {
    let records = fixture();
    let stream = out_dir("stream");
    let other = out_dir("stream-other");
    let mut rec = Recorder::to_dir(&stream).unwrap();
    for r in &records {
        rec.record(r);
    }
    rec.write_outputs(&other).unwrap();
    assert_eq!(
        read(&stream, "placements.csv"),
        read(&other, "placements.csv")
    );
    assert_eq!(read(&other, "placements.csv").lines().count(), 14);
}

#[test]
fn golden_comparison_table_and_csv() {
    let a = out_dir("golden-cmp-a");
    let b = out_dir("golden-cmp-b");
    let sa = run_into(&fixture(), &a, ReportOptions::default());
    let sb = run_into(&random_run(7, 80), &b, ReportOptions::default());
    let cmp = Comparison::new(vec![("fixture".into(), sa), ("random-7".into(), sb)]);
    insta::assert_snapshot!("comparison_table", cmp.table());
    insta::assert_snapshot!("comparison_csv", cmp.to_csv());
}

/// The pod explorer's data: every pod, its attempts, its explain.jsonl detail, and no pod text
/// able to end the inline script.
#[test]
fn explorer_embeds_every_pod_its_attempts_and_detail() {
    let dir = out_dir("explorer");
    fs::create_dir_all(&dir).unwrap();
    let explain = r#"{"at":"2.001s","atMicros":2001000,"pod":"default/big","attempt":1,"result":"Unschedulable","filter":{"nodes":{"n1":{"code":"Unschedulable","plugin":"NodeResourcesFit","reasons":["Insufficient cpu"]}},"others":null}}"#;
    fs::write(dir.join("explain.jsonl"), format!("{explain}\n")).unwrap();
    let mut records = fixture();
    records.insert(
        records.len() - 1,
        created(40.0, "default/</script><b>x", 0, &[("cpu", 100)]),
    );
    let s = run_into(&records, &dir, golden_options());
    let html = read(&dir, "report.html");
    let start = html
        .find("<script type=\"application/json\" id=\"ksim-pods\">")
        .unwrap();
    let rest = &html[start..];
    let json_text = &rest[rest.find('>').unwrap() + 1..rest.find("</script>").unwrap()];
    let doc: serde_json::Value = serde_json::from_str(json_text).unwrap();
    let pods = doc["pods"].as_array().unwrap();
    assert_eq!(pods.len() as u64, s.pods.created);
    assert!(pods.iter().any(|p| p[0] == "default/</script><b>x"));
    let big = pods.iter().position(|p| p[0] == "default/big").unwrap();
    // Every attempt, from placements.csv, and the explain line.
    let attempts = doc["att"][big.to_string()].as_array().unwrap();
    assert_eq!(Some(attempts.len() as u64), pods[big][7].as_u64());
    assert!(attempts.len() >= 2);
    assert_eq!(
        doc["ex"][big.to_string()][0]["filter"]["nodes"]["n1"]["plugin"],
        "NodeResourcesFit"
    );
    assert!(html.contains("id=\"explorer\""));
}

/// Issue 37: 30 pods created one a second over 29 s on a cluster with no nodes. Each pending
/// pod counts with its own wait, so the percentiles are honest lower bounds: p50 at least 14 s
/// and the max at least 29 s (not the least wait, 0 s, for every percentile); the table, the
/// page and pods.csv say the same.
#[test]
fn no_node_run_reports_each_pending_pods_own_wait() {
    let mut records: Vec<Record> = (0..30)
        .map(|i| created(f64::from(i), &format!("default/p-{i}"), 0, &[("cpu", 100)]))
        .collect();
    records.push(Record::RunEnded {
        at: t(29.0),
        stalled: None,
        unserved: Vec::new(),
    });
    let dir = out_dir("no-nodes-censored");
    let s = run_into(&records, &dir, golden_options());
    let l = s.latency_all_s.as_ref().unwrap();
    assert_eq!((l.count, l.censored), (30, 30));
    assert_eq!((l.p50, l.p50_censored), (Some(14.0), true));
    assert_eq!((l.p90, l.p90_censored), (Some(26.0), true));
    assert_eq!((l.max, l.max_censored), (Some(29.0), true));
    assert!(l.p50.unwrap() >= 14.0 && l.max.unwrap() >= 29.0);
    let from_csv = ksim_report::LatencyDist::from_pods_csv(&dir, s.horizon_s).unwrap();
    assert_eq!(from_csv, rec_dist(&records));
    let table = summary_table(&s);
    assert!(
        table.contains("> 14 s / > 26 s / > 29 s / > 29 s"),
        "{table}"
    );
    assert!(table.contains("a lower bound"), "{table}");
}

fn rec_dist(records: &[Record]) -> ksim_report::LatencyDist {
    let mut rec = Recorder::in_memory();
    for r in records {
        rec.record(r);
    }
    rec.latency_dist()
}
