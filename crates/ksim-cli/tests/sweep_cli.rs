//! `ksim sweep`, `ksim merge`, `ksim compare` and `ksim plan` from the command line, on the
//! shipped scenarios (the library tests in ksim-sweep check the figures in depth).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn ksim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ksim"))
        .args(args)
        .current_dir(root())
        .env("CI", "true")
        .output()
        .unwrap()
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn sweep_shards_merge_and_compare() {
    let tmp = tempfile::tempdir().unwrap();
    let whole = tmp.path().join("whole");
    let shared = tmp.path().join("shared");
    let w = whole.to_str().unwrap();
    let s = shared.to_str().unwrap();
    let o = ksim(&[
        "sweep",
        "scenarios/openb-small-sweep.yaml",
        "--out",
        w,
        "--jobs",
        "2",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("9 runs; sweep.csv, plots and runs/ written to"),
        "{}",
        text(&o)
    );
    // Two shards into one shared directory, then merged in place.
    for i in 0..2 {
        let shard = format!("{i}/2");
        let o = ksim(&[
            "sweep",
            "scenarios/openb-small-sweep.yaml",
            "--shard",
            &shard,
            "--out",
            s,
        ]);
        assert!(o.status.success(), "{}", text(&o));
        assert!(text(&o).contains(&format!("shard {i}/2: ")), "{}", text(&o));
    }
    assert!(!shared.join("sweep.csv").exists());
    let o = ksim(&["merge", s]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        std::fs::read(shared.join("sweep.csv")).unwrap(),
        std::fs::read(whole.join("sweep.csv")).unwrap()
    );

    // compare: runs made separately, baseline first; differences shown, best marked.
    let a = whole.join("runs/000-default-1");
    let b = whole.join("runs/003-most_allocated-1");
    let out = tmp.path().join("cmp");
    let o = ksim(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(t.contains("latency_max_s"), "{t}");
    assert!(t.contains(" *"), "{t}");
    assert!(
        t.contains("change from the first run, 000-default-1"),
        "{t}"
    );
    assert!(t.contains("same in every run: pods 400"), "{t}");
    for f in ["compare.csv", "runs.svg", "runs.png", "latency_cdf.svg"] {
        assert!(out.join(f).exists(), "{f}");
    }
}

#[test]
fn plan_prints_the_answer_and_bad_input_names_the_flag() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("plan");
    let o = ksim(&[
        "plan",
        "scenarios/plan-synthetic.yaml",
        "--pool",
        "workers",
        "--slo",
        "scheduled>=100%",
        "--slo",
        "p99<=30s",
        "--max",
        "64",
        "--out",
        out.to_str().unwrap(),
    ]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("smallest count of pool workers meeting scheduled>=100%, p99<=30s: 25"),
        "{t}"
    );
    for f in ["plan.csv", "plan.json", "plan.svg", "plan.png"] {
        assert!(out.join(f).exists(), "{f}");
    }
    // No count in range: exit 1.
    let o = ksim(&[
        "plan",
        "scenarios/plan-synthetic.yaml",
        "--pool",
        "workers",
        "--slo",
        "scheduled>=100%",
        "--max",
        "10",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let o = ksim(&[
        "plan",
        "scenarios/plan-synthetic.yaml",
        "--pool",
        "workers",
        "--slo",
        "speed>=3",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains("--slo \"speed>=3\": unknown figure"),
        "{}",
        text(&o)
    );
    let o = ksim(&[
        "sweep",
        "scenarios/openb-small-sweep.yaml",
        "--shard",
        "2/2",
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains("--shard \"2/2\": I must be less than N"),
        "{}",
        text(&o)
    );
}

/// SLO figures as sweep columns (`columns:` in the sweep file), per-pool failure shares, and
/// `ksim compare --column`: 24 workers leave 4 of the 100 pods pending, 25 schedule all.
#[test]
fn sweep_columns_within_and_failure_share() {
    let tmp = tempfile::tempdir().unwrap();
    let sweep = tmp.path().join("s.yaml");
    let scenario = root().join("scenarios/plan-synthetic.yaml");
    std::fs::write(
        &sweep,
        format!(
            "scenario: {}\naxes:\n  - poolCount: {{pool: workers, counts: [24, 25]}}\ncolumns: [\"within(45s)\", p95, scheduled]\n",
            scenario.display()
        ),
    )
    .unwrap();
    let out = tmp.path().join("out");
    let o = ksim(&[
        "sweep",
        sweep.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let csv = std::fs::read_to_string(out.join("sweep.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("no column {name} in {header:?}"))
    };
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let (w, p95, sched, fail) = (
        col("within_45s_share"),
        col("latency_all_p95_s"),
        col("scheduled_of_needed_share"),
        col("failure_share.workers"),
    );
    // 24 nodes: 96 of 100 scheduled, p95 falls on a scheduled pod, the failures lacked room
    // a workers node could give.
    assert_eq!(rows[0][sched], "0.96", "{csv}");
    assert!(!rows[0][p95].starts_with('>'), "{csv}");
    assert_eq!(rows[0][fail], "1", "{csv}");
    assert_eq!(rows[1][w], "1", "{csv}");
    assert_eq!(rows[1][fail], "", "no failure with 25 nodes: {csv}");
    assert!(rows[0][w].parse::<f64>().unwrap() < 1.0, "{csv}");

    // compare --column reads the same figures from the runs' pods.csv.
    let a = out.join("runs").join(rows[0][0]);
    let b = out.join("runs").join(rows[1][0]);
    let o = ksim(&[
        "compare",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--column",
        "p100",
        "--column",
        "within(45s)",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("latency_all_max_s"), "{t}");
    assert!(t.contains("> "), "a censored max shows as a bound: {t}");
    assert!(t.contains("failure_share.workers"), "{t}");

    // A malformed column names the sweep file's field.
    std::fs::write(
        &sweep,
        format!(
            "scenario: {}\naxes:\n  - seed: [1]\ncolumns: [\"within(45s\"]\n",
            scenario.display()
        ),
    )
    .unwrap();
    let o = ksim(&[
        "sweep",
        sweep.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("columns[0]"), "{}", text(&o));
}

/// `ksim run --slo` checks the SLO, keeps it in slo.json and marks it on the latency CDF;
/// `ksim report` re-renders with it.
#[test]
fn run_and_report_with_an_slo() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let o = ksim(&[
        "run",
        "scenarios/plan-synthetic.yaml",
        "--out",
        out.to_str().unwrap(),
        "--event-log",
        "--slo",
        "within(30s)>=99%",
        "--slo",
        "pending_end<=0",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let t = text(&o);
    assert!(t.contains("SLO within(30s)>=99%: met (100.000%)"), "{t}");
    assert!(t.contains("SLO pending_end<=0: met (0)"), "{t}");
    assert!(out.join("slo.json").is_file());
    let svg = std::fs::read_to_string(out.join("latency_cdf.svg")).unwrap();
    assert!(
        svg.contains("SLO within(30s)&gt;=99% (met)"),
        "marked on the CDF"
    );

    let again = tmp.path().join("again");
    let o = ksim(&[
        "report",
        out.join("events.jsonl").to_str().unwrap(),
        "--out",
        again.to_str().unwrap(),
        "--slo",
        "p99<=30s",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("SLO p99<=30s: met (0 s)"), "{}", text(&o));
    let svg = std::fs::read_to_string(again.join("latency_cdf.svg")).unwrap();
    assert!(svg.contains("SLO p99&lt;=30s (met)"), "{svg}");

    let o = ksim(&[
        "run",
        "scenarios/plan-synthetic.yaml",
        "--slo",
        "within(30s>=99%",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("expected within(DURATION)>=SHARE"),
        "{}",
        text(&o)
    );
}
